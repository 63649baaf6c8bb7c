//! A re-render into the place an earlier render wrote (issue 33 items 15
//! and 26): `render dropins` updates its own files without `--force` and
//! says, per file, `wrote` / `updated` / `unchanged` as `render
//! machineconfig` does; a file not ours still needs `--force`. `-o` to a
//! stream (`/dev/null`, a pipe) claims no "wrote".

use crate::support::elf;
use crate::support::{bin, repo, scratch_dir, stderr, write};

use kubelet_labeler::cli::render::arch::Arch;
use std::path::Path;

/// The shell words of the `render dropins --root ./node-files` blocks of
/// docs/kubeadm.md, in order: the first render and the day-2 one.
fn kubeadm_doc_renders() -> Vec<Vec<String>> {
    let md = std::fs::read_to_string(repo().join("docs/kubeadm.md")).unwrap();
    let joined = md.replace("\\\n", " ");
    joined
        .lines()
        .filter(|l| l.starts_with("kubelet-labeler render dropins --root ./node-files"))
        .map(|l| {
            let l = l.split(" #").next().unwrap();
            l.split_whitespace().skip(1).map(str::to_string).collect()
        })
        .collect()
}

/// Run `args` in `dir` (where `examples` is the repository's), with the
/// stand-in wrappers for both architectures.
fn run_in(dir: &Path, args: &[String]) -> std::process::Output {
    let mut c = bin();
    c.current_dir(dir).args(args);
    for arch in [Arch::X86_64, Arch::Aarch64] {
        let w = dir.join(format!("wrapper-{arch}"));
        if !w.exists() {
            std::fs::write(&w, elf::static_elf(arch)).unwrap();
        }
        c.arg("--wrapper").arg(w);
    }
    c.output().unwrap()
}

/// Issue 33 item 15: docs/kubeadm.md's day-2 step, as written, after its
/// first render: no `--force`, the env drop-in `updated`, the rest
/// `unchanged` (not rewritten). A file not ours, or our env drop-in with a
/// line of the user's, is still refused without `--force`, unchanged.
#[test]
fn the_kubeadm_docs_rerender_updates_our_files_without_force() {
    let renders = kubeadm_doc_renders();
    assert_eq!(renders.len(), 2, "docs/kubeadm.md: {renders:?}");
    let dir = scratch_dir();
    let d = dir.path();
    std::os::unix::fs::symlink(repo().join("examples"), d.join("examples")).unwrap();
    let first = run_in(d, &renders[0]);
    assert!(first.status.success(), "{}", stderr(&first));
    // As stderr names them: under --root as given.
    let root = Path::new("./node-files");
    let env = root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf");
    let generator = root.join("etc/systemd/system-generators/kubelet-labeler");
    let wrapper = root.join("usr/local/bin/kubelet-labeler-wrapper.aarch64");
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&d.join(p).metadata().unwrap());
    let read = |p: &Path| std::fs::read_to_string(d.join(p)).unwrap();
    let old_env = read(&env);
    let generator_inode = inode(&generator);

    let again = run_in(d, &renders[1]);
    let err = stderr(&again);
    assert!(again.status.success(), "the docs' day-2 step: {err}");
    let new_env = read(&env);
    assert!(
        new_env.contains("example.com/site=lab") && new_env != old_env,
        "{new_env}"
    );
    assert!(err.contains(&format!("updated {}", env.display())), "{err}");
    for same in [&generator, &wrapper] {
        assert!(
            err.contains(&format!("unchanged {}", same.display())),
            "{err}"
        );
    }
    assert!(!err.contains("wrote "), "{err}");
    // Unchanged is not rewritten.
    assert_eq!(inode(&generator), generator_inode);

    // Not ours: refused without --force, nothing changed.
    let plain = "[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=a=b\"\n";
    for (text, says) in [
        (
            plain.to_string(),
            "not written by kubelet-labeler".to_string(),
        ),
        (
            format!("{new_env}Environment=\"KUBELET_EXTRA_ARGS=--v=4\"\n"),
            "holds lines render did not write (Environment=\"KUBELET_EXTRA_ARGS=--v=4\")"
                .to_string(),
        ),
    ] {
        write(&d.join(&env), &text);
        let refused = run_in(d, &renders[0]);
        let err = stderr(&refused);
        assert_eq!(refused.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&env.display().to_string())
                && err.contains(&says)
                && err.contains("--force"),
            "{err}"
        );
        assert_eq!(read(&env), text);
        assert_eq!(inode(&generator), generator_inode);
    }
    let forced = run_in(d, &[&renders[0][..], &["--force".to_string()]].concat());
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(read(&env), old_env);
    assert!(stderr(&forced).contains(&format!("updated {}", env.display())));
}

/// Issue 33 item 26: `-o /dev/null` (or any stream: a pipe, /dev/stdout)
/// is written as stdout is, with no "wrote" line; a file still gets one.
#[test]
fn a_stream_output_claims_no_wrote() {
    let dir = scratch_dir();
    let w = dir.path().join("wrapper");
    std::fs::write(&w, elf::static_elf(Arch::X86_64)).unwrap();
    for sub in ["ignition", "machineconfig"] {
        for out in ["/dev/null", "/dev/stdout"] {
            let o = bin()
                .args(["render", sub, "--pool", "worker-gpu", "--wrapper"])
                .arg(&w)
                .args(["-o", out])
                .output()
                .unwrap();
            let err = stderr(&o);
            assert!(o.status.success(), "{sub} {out}: {err}");
            assert!(!err.contains("wrote"), "{sub} -o {out}: {err}");
        }
        let file = dir.path().join(format!("{sub}.out"));
        let o = bin()
            .args(["render", sub, "--pool", "worker-gpu", "--wrapper"])
            .arg(&w)
            .arg("-o")
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            stderr(&o).starts_with(&format!("wrote {}\n", file.display())),
            "{}",
            stderr(&o)
        );
    }
}
