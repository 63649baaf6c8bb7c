//! Outputs are never written into a directory another user owns or may
//! write, nor below one (review 14 r14c F3): whoever could would rename
//! what was written away and put their own manifests or ISO in its place
//! before they are applied or flashed. Every command that writes files
//! (`--output-dir`, `-o`, `man --output-dir`, `iso embed/fleet -o`):
//! refused naming the directory, its owner or mode, and what to do;
//! nothing written there. Root only: `chown` to another user.

use std::os::unix::fs::{PermissionsExt, chown, lchown, symlink};
use std::path::Path;

use crate::io_safety::{FLEET, GITOPS_REACHABLE, MERGE, RENDER_IGN, RENDER_MC, inputs, ok, run};
use crate::support::{scratch_dir, skipped, stderr, test_iso};

/// Every command with an output in directory `d` (relative to the
/// scratch directory): its arguments.
fn writers(d: &str, iso: bool) -> Vec<Vec<String>> {
    let with = |args: &[&str], tail: &[&str]| -> Vec<String> {
        args.iter().chain(tail).map(|s| s.to_string()).collect()
    };
    let mut out = vec![
        with(&RENDER_MC, &["--output-dir", d]),
        with(&RENDER_MC, &["-o", &format!("{d}/mc.yaml")]),
        with(&RENDER_IGN, &["-o", &format!("{d}/gpu.ign")]),
        with(&["man", "--output-dir"], &[d]),
    ];
    if iso {
        let embed = [&["iso", "embed"][..], &MERGE, &["ca.pem", "base.iso", "-o"]].concat();
        out.push(with(&embed, &[&format!("{d}/with.iso")]));
        out.push(with(&FLEET, &["base.iso", "-o", &format!("{d}/fleet.iso")]));
        // -f changes only whether a file there is replaced (review 17
        // r17c F5): a new one, and one written above.
        let forced = [
            &["iso", "embed", "-f"][..],
            &MERGE,
            &["ca.pem", "base.iso", "-o"],
        ]
        .concat();
        for (iso, fleet) in [("forced", "forced-fleet"), ("with", "fleet")] {
            out.push(with(&forced, &[&format!("{d}/{iso}.iso")]));
            let fleet = format!("{d}/{fleet}.iso");
            out.push(with(&FLEET, &["base.iso", "-f", "-o", &fleet]));
        }
    }
    out
}

fn listing(d: &Path) -> Vec<String> {
    let mut names: Vec<String> = walk(d);
    names.sort();
    names
}

fn walk(d: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        out.push(e.path().display().to_string());
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

#[test]
fn outputs_go_only_into_directories_no_other_user_can_change() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    inputs(dir);
    let mkdir = |name: &str, mode: u32| {
        let p = dir.join(name);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    };
    // nobody's (65534), as made beforehand under a predictable name in /tmp.
    let theirs = mkdir("theirs", 0o755);
    let below = mkdir("theirs/ours", 0o755);
    if chown(&theirs, Some(65534), Some(65534)).is_err() {
        skipped::skipped("a directory of another user: chown needs root");
        return;
    }
    let open = mkdir("open", 0o777);
    let group = mkdir("group", 0o775);
    chown(&group, None, Some(65534)).unwrap();
    let fine = mkdir("fine", 0o755);
    symlink(&fine, dir.join("link")).unwrap();
    lchown(dir.join("link"), Some(65534), Some(65534)).unwrap();
    // Sticky (as /tmp), and writable by our own group only: written.
    let sticky = mkdir("sticky", 0o1777);
    let own_group = mkdir("own-group", 0o775);
    let iso = test_iso(dir).is_some();
    if iso {
        ok(dir, &[&RENDER_MC[..], &GITOPS_REACHABLE].concat());
    }
    let refused = [
        (
            "theirs",
            &theirs,
            "theirs is owned by another user (uid 65534)".to_string(),
        ),
        (
            "theirs/ours",
            &below,
            "theirs is owned by another user (uid 65534)".into(),
        ),
        (
            "open",
            &open,
            "open is writable by every user (mode 0777) and not sticky".into(),
        ),
        (
            "group",
            &group,
            "group is writable by group 65534 (mode 0775) and not sticky".into(),
        ),
        (
            "link",
            &fine,
            "link on the way is a symlink owned by another user (uid 65534)".into(),
        ),
    ];
    for (d, at, says) in &refused {
        let before = listing(at);
        for args in writers(d, iso) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = run(dir, &args);
            let err = stderr(&o);
            assert!(
                !o.status.success()
                    && err.contains(says.as_str())
                    && err.contains("not writing there:")
                    && err.contains("that you (uid 0) or root own"),
                "{args:?}: {err}"
            );
            assert_eq!(listing(at), before, "{args:?} wrote in {d}");
        }
    }
    for d in [&sticky, &own_group] {
        let name = d.file_name().unwrap().to_str().unwrap();
        for args in writers(name, iso) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            ok(dir, &args);
        }
        assert!(d.join("mc.yaml").is_file() && d.join("gpu.ign").is_file());
    }
}
