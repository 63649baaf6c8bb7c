//! Running the built `kubelet-labeler` and reading what it printed.

#![allow(dead_code)]

use std::process::{Command, Output};

use serde_json::Value;

pub fn cli(args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"));
    c.args(args);
    // render refuses the dynamic cargo-built wrapper; these trees are only
    // explained, so a static program's ELF header stands in for it.
    if args.starts_with(&["render", "dropins"])
        && !args.contains(&"--wrapper")
        && !args.contains(&"--remove")
    {
        c.arg("--wrapper").arg(stand_in_wrapper());
    }
    c.output().expect("running kubelet-labeler")
}

/// A file with a static x86_64 program's ELF header: all render and
/// explain look at.
pub fn stand_in_wrapper() -> &'static std::path::Path {
    static FILE: std::sync::OnceLock<tempfile::TempPath> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        let elf = super::elf::static_elf(kubelet_labeler::cli::render::arch::Arch::X86_64);
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, &elf).unwrap();
        f.into_temp_path()
    })
}

/// One of the example MachineConfigs in machineconfigs/.
pub fn machineconfig_example(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("machineconfigs")
        .join(name)
}

/// The static wrapper the committed example MachineConfig carries, laid
/// out from it under `dir`.
pub fn example_wrapper(dir: &std::path::Path) -> std::path::PathBuf {
    use kubelet_labeler::cli::render::layout;
    let example_tree = dir.join("example");
    let wrapper = example_tree.join("usr/local/bin/kubelet-labeler-wrapper.x86_64");
    // Laid out once: the layout writes only into a new directory.
    if wrapper.exists() {
        return wrapper;
    }
    let text = std::fs::read_to_string(machineconfig_example(
        "50-worker-gpu-kubelet-labeler-wrapper.yaml",
    ))
    .unwrap();
    let configs = layout::machineconfigs_from_yaml(&text, "example").unwrap();
    layout::Layout::merge(configs)
        .unwrap()
        .write(&example_tree)
        .unwrap();
    wrapper
}

/// Its stdout as JSON; else a failure showing both streams.
pub fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// [`cli`] with `TMPDIR` set: where its scratch trees go.
pub fn cli_with_tmpdir(tmpdir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(args)
        .env("TMPDIR", tmpdir)
        .output()
        .expect("running kubelet-labeler")
}

/// Every entry under `dir` (relative path, type, mode, contents or link
/// target): equal before and after means nothing there changed.
pub fn snapshot(dir: &std::path::Path) -> Vec<(String, String)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let what = if m.is_symlink() {
                format!("link {}", std::fs::read_link(&p).unwrap().display())
            } else if m.is_dir() {
                pending.push(p.clone());
                format!("dir {:o}", m.mode())
            } else if m.is_file() {
                let bytes = std::fs::read(&p).unwrap();
                format!("file {:o} {}", m.mode(), String::from_utf8_lossy(&bytes))
            } else {
                format!("other {:o}", m.mode())
            };
            out.push((p.strip_prefix(dir).unwrap().display().to_string(), what));
        }
    }
    out.sort();
    out
}
