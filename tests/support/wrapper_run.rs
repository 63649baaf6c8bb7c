//! The built wrapper run on a scratch node root, without systemd: the
//! recorder (`recorder.c`) stands in for kubelet at `root/usr/bin/kubelet`,
//! and the argv it got is read back.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{stderr, systemd_oracle, write};

/// The recorder as `root/usr/bin/kubelet`, kubelet's unit `unit`, and where
/// the recorder writes; None (said once) where the recorder cannot be built.
pub fn recorder_root(root: &Path, unit: &str) -> Option<PathBuf> {
    if systemd_oracle::unavailable().is_some() {
        return None;
    }
    let kubelet = systemd_oracle::build_fake_kubelet(root);
    let exe = root.join("usr/bin/kubelet");
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    std::fs::rename(kubelet, &exe).unwrap();
    write(&root.join("usr/lib/systemd/system/kubelet.service"), unit);
    let records = root.join("records");
    std::fs::create_dir_all(&records).unwrap();
    Some(records)
}

/// Run the built wrapper on `root` with `env` as systemd would give it,
/// under `sh` with `shell` run first (a `ulimit`); returns its stderr and
/// the argv the recorder (kubelet) got.
pub fn run_wrapper(
    root: &Path,
    records: &Path,
    env: &[(&str, String)],
    shell: &str,
) -> (String, Vec<String>) {
    let (err, argv) = try_wrapper(root, records, env, shell, &[]);
    (
        err.clone(),
        argv.unwrap_or_else(|| panic!("kubelet did not start: {err}")),
    )
}

/// [`run_wrapper`] with more wrapper arguments (`--facts-root DIR`), for a
/// start that may die before exec'ing kubelet: then no argv.
pub fn try_wrapper(
    root: &Path,
    records: &Path,
    env: &[(&str, String)],
    shell: &str,
    args: &[&str],
) -> (String, Option<Vec<String>>) {
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{shell}\nexec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_kubelet-labeler-wrapper"))
        .args([
            "--root",
            root.to_str().unwrap(),
            "--unit",
            "kubelet.service",
        ])
        .args(["--state-dir", root.join("state").to_str().unwrap()])
        .args(args)
        .env_clear()
        .env("RECORD_DIR", records)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    let err = stderr(&out);
    let Some(file) = std::fs::read_dir(records).unwrap().next() else {
        return (err, None);
    };
    let file = file.unwrap().path();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_file(file).unwrap();
    let mut lines = text.lines();
    let argc: usize = lines.next().unwrap()["argc ".len()..].parse().unwrap();
    let argv = lines
        .take(argc)
        .map(|h| {
            let bytes: Vec<u8> = (0..h.len() / 2)
                .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            String::from_utf8(bytes).unwrap()
        })
        .collect();
    (err, Some(argv))
}
