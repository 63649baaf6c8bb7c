//! `render dropins --root DIR` on a tree that is a node's root filesystem
//! (a mounted image, a chroot): its symlinks mean paths inside it, as on
//! the node, so nothing is written outside it; and a refusal, of ours or
//! of the filesystem's, changes nothing in it. Also `--output-dir FILE`.

use crate::support::{BIN, elf, is_root, scratch_dir, skipped, stderr};

use std::collections::BTreeMap;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The node paths `render dropins --wrapper <x86_64> --label …` writes.
const WRAPPER: &str = "usr/local/bin/kubelet-labeler-wrapper.x86_64";
const GENERATOR: &str = "etc/systemd/system-generators/kubelet-labeler";
const ENV_DROPIN: &str = "etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf";

/// What a path is, without following a link there: a file's mode and
/// bytes, a directory's mode, a link's target.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    File(u32, Vec<u8>),
    Dir(u32),
    Link(PathBuf),
}

/// Every path under `dir` (itself included, as ""), links not followed.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let mode = meta.permissions().mode() & 0o7777;
        let entry = if meta.file_type().is_symlink() {
            Entry::Link(std::fs::read_link(&p).unwrap())
        } else if meta.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                todo.push(e.unwrap().path());
            }
            Entry::Dir(mode)
        } else {
            Entry::File(mode, std::fs::read(&p).unwrap())
        };
        out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), entry);
    }
    out
}

/// The arguments of `render dropins --root ROOT` with the stand-in
/// wrapper in `dir` and one label, plus `extra`.
fn dropins_args(dir: &Path, root: &Path, extra: &[&str]) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = ["render", "dropins", "--root"]
        .iter()
        .map(Into::into)
        .collect();
    args.push(root.into());
    args.push("--wrapper".into());
    args.push(dir.join("wrapper").into());
    args.extend(["--label", "example.com/a=b"].iter().map(Into::into));
    args.extend(extra.iter().map(Into::into));
    args
}

/// `render dropins` (see [`dropins_args`]) in `dir`.
fn render(dir: &Path, root: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(dropins_args(dir, root, extra))
        .current_dir(dir)
        .stdin(Stdio::null());
    c
}

/// A scratch dir with the stand-in wrapper, and what a render writes into
/// a tree without links (the three files by node path, with their modes).
fn setup() -> (tempfile::TempDir, BTreeMap<&'static str, Entry>) {
    let tmp = scratch_dir();
    let dir = tmp.path();
    std::fs::write(dir.join("wrapper"), elf::static_x86_64_with_body()).unwrap();
    let plain = dir.join("plain");
    let out = render(dir, &plain, &["--create-root"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mut files = snapshot(&plain);
    let expected = [WRAPPER, GENERATOR, ENV_DROPIN]
        .into_iter()
        .map(|node| (node, files.remove(Path::new(node)).unwrap()))
        .collect::<BTreeMap<_, _>>();
    assert!(matches!(expected[WRAPPER], Entry::File(0o755, _)));
    assert!(matches!(expected[ENV_DROPIN], Entry::File(0o644, _)));
    (tmp, expected)
}

/// Links in the tree resolve inside it, as on the node: an absolute
/// target starts at the root, `..` stops at it. Files land where the node
/// would see them; outside the root nothing changes, byte for byte. A link
/// at one of render's own file paths is refused (not written through, not
/// even to a file inside the root), as is a chain of links longer than
/// systemd and we follow.
#[test]
fn links_in_the_root_resolve_inside_it() {
    let (tmp, expected) = setup();
    let dir = tmp.path().canonicalize().unwrap();
    // A directory outside every root, with a victim file in it.
    let outside = dir.join("outside");
    std::fs::create_dir_all(outside.join("units")).unwrap();
    std::fs::create_dir_all(outside.join("sd")).unwrap();
    std::fs::create_dir_all(outside.join("deep")).unwrap();
    std::fs::write(outside.join("victim"), "root:x:0:0::/root:/bin/sh\n").unwrap();
    let inside = |p: &Path| PathBuf::from(p.strip_prefix("/").unwrap());
    let climb = format!(
        "{}{}",
        "../".repeat(64),
        inside(&outside.join("sd")).display()
    );

    // (case, links to make: (node path, target), where each node path's
    // file is expected then, or None for a refusal with that message)
    type Case<'a> = (
        &'a str,
        Vec<(&'a str, String)>,
        Result<Vec<PathBuf>, &'a str>,
    );
    let under_outside = |sub: &str, rest: &str| inside(&outside.join(sub)).join(rest);
    // Relative links, so that the kernel (40 links at most) would follow
    // them all, to outside.
    let mut chain: Vec<(&str, String)> = vec![("etc/systemd", "l0".into())];
    let names: Vec<String> = (0..36).map(|i| format!("etc/l{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        let to = if i + 1 < names.len() {
            format!("l{}", i + 1)
        } else {
            outside.join("deep").display().to_string()
        };
        chain.push((name.as_str(), to));
    }
    let cases: Vec<Case> = vec![
        (
            "an absolute link to a directory",
            vec![(
                "etc/systemd/system",
                outside.join("units").display().to_string(),
            )],
            Ok(vec![
                WRAPPER.into(),
                GENERATOR.into(),
                under_outside("units", "kubelet.service.d/90-kubelet-labeler-env.conf"),
            ]),
        ),
        (
            "a link climbing above the root with ..",
            vec![("etc/systemd", climb.clone())],
            Ok(vec![
                WRAPPER.into(),
                under_outside("sd", "system-generators/kubelet-labeler"),
                under_outside("sd", "system/kubelet.service.d/90-kubelet-labeler-env.conf"),
            ]),
        ),
        (
            "RHCOS's relative /usr/local link",
            vec![("usr/local", "../var/usrlocal".into())],
            Ok(vec![
                "var/usrlocal/bin/kubelet-labeler-wrapper.x86_64".into(),
                GENERATOR.into(),
                ENV_DROPIN.into(),
            ]),
        ),
        (
            "an absolute link to a file at the wrapper's path",
            vec![(WRAPPER, outside.join("victim").display().to_string())],
            Err("is a symlink (to"),
        ),
        (
            // (Its target exists inside the root and, as the victim, outside.)
            "a link to a file inside the root at the env drop-in's path",
            vec![(ENV_DROPIN, outside.join("victim").display().to_string())],
            Err("remove the link and render again"),
        ),
        (
            "a chain of 37 links",
            chain,
            Err("too many levels of symbolic links"),
        ),
    ];
    let mut failed = Vec::new();
    for (n, (case, links, want)) in cases.into_iter().enumerate() {
        let root = dir.join(format!("root{n}"));
        std::fs::create_dir_all(root.join("var/usrlocal")).unwrap();
        std::fs::create_dir_all(root.join("etc")).unwrap();
        // The victim's path inside the root holds a file too.
        let in_root_victim = root.join(inside(&outside.join("victim")));
        std::fs::create_dir_all(in_root_victim.parent().unwrap()).unwrap();
        std::fs::write(&in_root_victim, "the image's own\n").unwrap();
        for (node, target) in &links {
            let at = root.join(node);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            symlink(target, &at).unwrap();
        }
        // Each case runs to its end: a failure names every case that fails.
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let outside_before = snapshot(&outside);
            let root_before = snapshot(&root);
            let out = render(&dir, &root, &["--force"]).output().unwrap();
            let err = stderr(&out);
            assert_eq!(
                snapshot(&outside),
                outside_before,
                "{case}: wrote outside the root: {err}"
            );
            match want {
                Ok(paths) => {
                    assert!(out.status.success(), "{case}: {err}");
                    for (path, node) in paths.iter().zip([WRAPPER, GENERATOR, ENV_DROPIN]) {
                        let got = snapshot(&root.join(path)).remove(Path::new(""));
                        assert_eq!(
                            got.as_ref(),
                            Some(&expected[node]),
                            "{case}: {}",
                            path.display()
                        );
                        assert!(
                            err.contains(&format!("wrote {}", root.join(path).display())),
                            "{case}: {err}"
                        );
                    }
                    // The links stay links.
                    for (node, target) in &links {
                        let got = std::fs::read_link(root.join(node)).unwrap();
                        assert_eq!(got, Path::new(target), "{case}");
                    }
                }
                Err(says) => {
                    assert_eq!(out.status.code(), Some(1), "{case}: {err}");
                    assert!(err.contains(says), "{case}: {err}");
                    assert_eq!(snapshot(&root), root_before, "{case}: the root changed");
                }
            }
        }));
        if checked.is_err() {
            failed.push(case);
        }
    }
    assert!(failed.is_empty(), "failed: {failed:?}");
}

/// `program` as nobody when we are root (root writes anywhere), else as
/// we are; None (skipped) without setpriv.
fn unprivileged(program: &Path) -> Option<Command> {
    if !is_root() {
        return Some(Command::new(program));
    }
    let mut c = Command::new(skipped::tool("setpriv")?);
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(program);
    Some(c)
}

/// `d` with `mode`, owned by whoever runs the program ([`unprivileged`]):
/// render writes into no directory another user owns or may write.
fn writable_by_it(d: &Path, mode: u32) {
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode)).unwrap();
    if is_root() {
        std::os::unix::fs::chown(d, Some(65534), Some(65534)).unwrap();
    }
}

/// A directory render cannot write (mode 0555, or as nobody): the refusal
/// comes before anything changes. Before, the wrapper was written (or
/// replaced) and its directories made, then the generator's directory
/// failed. The error says what to do.
#[test]
fn a_directory_it_cannot_write_changes_nothing() {
    let (tmp, _) = setup();
    let dir = tmp.path();
    // Readable by nobody: the scratch dir, a copy of the program, its input.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::copy(BIN, dir.join("kubelet-labeler")).unwrap();
    std::fs::set_permissions(dir.join("wrapper"), std::fs::Permissions::from_mode(0o644)).unwrap();
    // root0: an earlier wrapper to replace; root1: nothing yet under usr.
    for (n, earlier) in [(0, true), (1, false)] {
        let root = dir.join(format!("root{n}"));
        std::fs::create_dir_all(root.join("etc/systemd")).unwrap();
        if earlier {
            std::fs::create_dir_all(root.join("usr/local/bin")).unwrap();
            std::fs::write(root.join(WRAPPER), "an earlier wrapper\n").unwrap();
            for d in ["usr", "usr/local", "usr/local/bin"] {
                writable_by_it(&root.join(d), 0o755);
            }
            std::fs::set_permissions(root.join(WRAPPER), std::fs::Permissions::from_mode(0o666))
                .unwrap();
        }
        for (d, mode) in [("", 0o755), ("etc", 0o755), ("etc/systemd", 0o555)] {
            writable_by_it(&root.join(d), mode);
        }
        let Some(mut c) = unprivileged(&dir.join("kubelet-labeler")) else {
            return;
        };
        c.args(dropins_args(dir, &root, &["--force"]))
            .current_dir(dir)
            .stdin(Stdio::null());
        let before = snapshot(&root);
        let out = c.output().unwrap();
        let err = stderr(&out);
        std::fs::set_permissions(
            root.join("etc/systemd"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!(
                "creating {}",
                root.join("etc/systemd/system-generators").display()
            )) && err.contains("nothing was written (run as root, or render into a scratch tree"),
            "{err}"
        );
        let mut after = snapshot(&root);
        after.insert("etc/systemd".into(), Entry::Dir(0o555));
        assert_eq!(after, before, "root{n} changed");
    }
}

/// A read-only filesystem in the tree (its etc/systemd bind-mounted
/// read-only, in a mount namespace of the run's own): refused before
/// anything changes, saying what to do.
#[test]
fn a_read_only_filesystem_changes_nothing() {
    if !is_root() {
        skipped::skipped("a read-only bind mount: unshare --mount needs root");
        return;
    }
    let Some(unshare) = skipped::tool("unshare") else {
        return;
    };
    let (tmp, _) = setup();
    let dir = tmp.path();
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("etc/systemd")).unwrap();
    std::fs::create_dir_all(root.join("usr/local/bin")).unwrap();
    std::fs::write(root.join(WRAPPER), "an earlier wrapper\n").unwrap();
    let before = snapshot(&root);
    let out = Command::new(unshare)
        .args(["--mount", "sh", "-c"])
        .arg(r#"mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 99; shift; exec "$@""#)
        .arg("sh")
        .arg(root.join("etc/systemd"))
        .arg(BIN)
        .args(dropins_args(dir, &root, &["--force"]))
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    if out.status.code() == Some(99) {
        skipped::skipped(&format!("a read-only bind mount: {}", err.trim()));
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("Read-only file system")
            && err.contains(
                "nothing was written (a read-only filesystem: render into a scratch tree"
            ),
        "{err}"
    );
    assert_eq!(snapshot(&root), before);
}

/// `--output-dir` naming a file says so and leaves the file as it was.
#[test]
fn output_dir_naming_a_file_says_so() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    std::fs::write(dir.join("wrapper"), elf::static_x86_64_with_body()).unwrap();
    std::fs::write(dir.join("out"), "kept\n").unwrap();
    for (given, says) in [
        ("out", "--output-dir out is a file; give a directory"),
        (
            "out/gpu",
            "--output-dir out/gpu has a file where a directory should be",
        ),
    ] {
        for force in [false, true] {
            let mut c = Command::new(BIN);
            c.args([
                "render",
                "machineconfig",
                "--pool",
                "gpu",
                "--wrapper",
                "wrapper",
            ])
            .args(["--output-dir", given])
            .current_dir(dir);
            if force {
                c.arg("--force");
            }
            let out = c.output().unwrap();
            assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
            assert!(stderr(&out).contains(says), "{}", stderr(&out));
            assert_eq!(std::fs::read(dir.join("out")).unwrap(), b"kept\n");
        }
    }
}
