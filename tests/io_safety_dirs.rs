//! Outputs are never written into a directory another user owns or may
//! write, nor below one (review 14 r14c F3): whoever could would rename
//! what was written away and put their own manifests or ISO in its place
//! before they are applied or flashed. Every command that writes files
//! (`--output-dir`, `-o`, `man --output-dir`, `iso embed/fleet -o`):
//! refused naming the directory, its owner or mode, and what to do;
//! nothing written there. Root only: `chown` to another user.

use std::os::unix::fs::{PermissionsExt, chown, lchown, symlink};
use std::path::Path;

use crate::io_safety::{
    FLEET, GITOPS_REACHABLE, MERGE, RENDER_IGN, RENDER_MC, command, dropins, inputs, ok, run,
};
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

/// Review 17 r17c F3, F4: every writer, with directories still to make
/// below the place it is given, and `render dropins --remove`: a place
/// through another user's link, in another user's directory, in a
/// world-writable one (not sticky) or in one an ACL lets another user
/// write is refused before anything is made, written or removed. Before,
/// `render dropins --root` wrote a first render there (and `--remove`
/// removed through the link), and `man`/`render machineconfig
/// --output-dir` made their directories under the link's target before
/// they refused.
#[test]
fn no_writer_makes_writes_or_removes_anything_in_a_hostile_directory() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    inputs(dir);
    let mkdir = |name: &str, mode: u32| {
        let p = dir.join(name);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    };
    let theirs = mkdir("theirs", 0o755);
    if chown(&theirs, Some(65534), Some(65534)).is_err() {
        skipped::skipped("a directory of another user: chown needs root");
        return;
    }
    let open = mkdir("open", 0o777);
    let fine = mkdir("fine", 0o755);
    symlink(&fine, dir.join("link")).unwrap();
    lchown(dir.join("link"), Some(65534), Some(65534)).unwrap();
    let mut hostile = vec![
        (
            "link",
            fine.clone(),
            "link on the way is a symlink owned by another user (uid 65534)",
        ),
        (
            "theirs",
            theirs,
            "theirs is owned by another user (uid 65534)",
        ),
        (
            "open",
            open,
            "open is writable by every user (mode 0777) and not sticky",
        ),
    ];
    if let Some(setfacl) = skipped::tool("setfacl") {
        let acl = mkdir("acl", 0o755);
        let set = std::process::Command::new(setfacl)
            .args(["-m", "u:65534:rwx"])
            .arg(&acl)
            .output()
            .unwrap();
        if set.status.success() {
            hostile.push(("acl", acl, "acl has an access ACL (see getfacl)"));
        } else {
            skipped::skipped(&format!(
                "an ACL: the scratch directory's file system takes none ({})",
                stderr(&set).trim()
            ));
        }
    }
    let writers = |d: &str| -> Vec<Vec<String>> {
        let with = |args: &[&str], tail: &[&str]| -> Vec<String> {
            args.iter().chain(tail).map(|s| s.to_string()).collect()
        };
        vec![
            with(
                &dropins(&format!("{d}/new/root")),
                &["--create-root", "--label", "a=b"],
            ),
            with(
                &["render", "dropins", "--remove", "--root"],
                &[&format!("{d}/tree")],
            ),
            with(&["man", "--output-dir"], &[&format!("{d}/share/man/man1")]),
            with(&RENDER_MC, &["--output-dir", &format!("{d}/gitops/gpu")]),
            with(&RENDER_MC, &["-o", &format!("{d}/out/mc.yaml")]),
            with(&RENDER_IGN, &["-o", &format!("{d}/out/gpu.ign")]),
        ]
    };
    // Every case and writer is run; the ones that fail are listed at once.
    let mut failed = Vec::new();
    for (d, at, says) in &hostile {
        // A tree rendered before (elsewhere, then moved in), for --remove.
        ok(
            dir,
            &[dropins("staged"), vec!["--create-root", "--label", "a=b"]].concat(),
        );
        std::fs::rename(dir.join("staged"), at.join("tree")).unwrap();
        let before = listing(at);
        assert!(
            before.iter().any(|p| p.ends_with("kubelet-labeler")),
            "{before:?}"
        );
        for args in writers(d) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = run(dir, &args);
            let err = stderr(&o);
            if o.status.success()
                || !err.contains(says)
                || !err.contains("not writing there:")
                || !err.contains("that you (uid 0) or root own")
            {
                failed.push(format!("{args:?}: not refused as {says:?}: {err}"));
            }
            let after = listing(at);
            if after != before {
                let new: Vec<_> = after.iter().filter(|p| !before.contains(p)).collect();
                let gone: Vec<_> = before.iter().filter(|p| !after.contains(p)).collect();
                failed.push(format!(
                    "{args:?} changed {d}: made {new:?}, removed {gone:?}"
                ));
                // Back to the case's state, `at` itself as it was.
                for p in new.iter().map(Path::new).chain([at.join("tree").as_path()]) {
                    let _ = std::fs::remove_dir_all(p);
                    let _ = std::fs::remove_file(p);
                }
                let _ = std::fs::remove_dir_all(dir.join("staged"));
                ok(
                    dir,
                    &[dropins("staged"), vec!["--create-root", "--label", "a=b"]].concat(),
                );
                std::fs::rename(dir.join("staged"), at.join("tree")).unwrap();
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    // The same writers in a sticky directory of root's: its missing
    // directories made, written; the tree removed.
    let sticky = mkdir("sticky", 0o1777);
    ok(dir, &[dropins("staged"), vec!["--create-root"]].concat());
    std::fs::rename(dir.join("staged"), sticky.join("tree")).unwrap();
    for args in writers("sticky") {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(dir, &args);
    }
    for made in [
        "new/root/etc/systemd/system-generators/kubelet-labeler",
        "share/man/man1/kubelet-labeler.1",
        "gitops/gpu/kustomization.yaml",
        "out/mc.yaml",
        "out/gpu.ign",
    ] {
        assert!(sticky.join(made).is_file(), "{made}");
    }
    assert!(
        !sticky
            .join("tree/etc/systemd/system-generators/kubelet-labeler")
            .exists()
    );
}

/// Review 18 r18c F2: a link another user puts at the first missing name
/// of an output directory (here in a 1770 directory of root's whose group
/// they are in), right after the gate's check by path found nothing there,
/// is never followed: the gate walks from `/` on descriptors and meets it.
/// No race: an LD_PRELOAD shim (`support/link_after_miss.c`) makes the
/// link when that lookup finds the name missing. Every writer (the ISO
/// writers too: review 19 r19c F1) refuses it and writes nothing where it
/// leads (a 0700 directory of root's).
#[test]
fn a_link_put_at_a_missing_name_after_the_check_is_not_followed() {
    let tmp = scratch_dir();
    let dir = tmp.path().canonicalize().unwrap();
    inputs(&dir);
    let shared = dir.join("shared");
    std::fs::create_dir(&shared).unwrap();
    if chown(&shared, Some(0), Some(4242)).is_err() {
        skipped::skipped("another user's link: chown needs root");
        return;
    }
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1770)).unwrap();
    let private = dir.join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let Some(cc) = skipped::tool("cc") else {
        return;
    };
    let so = dir.join("link_after_miss.so");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/link_after_miss.c");
    let st = std::process::Command::new(cc)
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&so)
        .arg(&src)
        .arg("-ldl")
        .status()
        .unwrap();
    assert!(st.success(), "compiling the shim");
    // The ISO writers too (review 19 r19c F1: they resolved the directory
    // by path again after the check).
    let iso = test_iso(&dir).is_some();
    if iso {
        ok(&dir, &[&RENDER_MC[..], &GITOPS_REACHABLE].concat());
    }
    let new = shared.join("new");
    for args in writers("shared/new", iso) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // Each lookup that finds the name missing in turn, until none is
        // left (the run then writes into a directory of its own there).
        for skip in 0.. {
            assert!(
                skip < 20,
                "{args:?}: the shim never stopped making the link"
            );
            let _ = std::fs::remove_file(&new);
            let _ = std::fs::remove_dir_all(&new);
            let o = command(&dir, &args)
                .env("LD_PRELOAD", &so)
                .env("LINK_AT", &new)
                .env("LINK_TO", &private)
                .env("LINK_UID", "65534")
                .env("LINK_SKIP", skip.to_string())
                .output()
                .unwrap();
            let err = stderr(&o);
            assert_eq!(
                listing(&private),
                Vec::<String>::new(),
                "{args:?} (lookup {skip}) wrote through the link: {err}"
            );
            if !std::fs::symlink_metadata(&new).is_ok_and(|m| m.file_type().is_symlink()) {
                assert!(o.status.success() && new.is_dir(), "{args:?}: {err}");
                break;
            }
            assert!(
                !o.status.success()
                    && err
                        .contains("new on the way is a symlink owned by another user (uid 65534)"),
                "{args:?} (lookup {skip}): {err}"
            );
        }
    }
}

/// Review 23 r23c F4: what render reads of the directory it writes into is
/// bounded in all, not only a file at a time: hard links to one 16 MiB file
/// (16 MiB of disk) took 33 MiB of memory and a second each, without end;
/// 16 MiB in all (review 24 r24a F3: small YAML nodes cost seconds a MiB).
#[test]
fn an_output_directory_is_read_within_one_budget() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    inputs(dir);
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    let big = format!("a: {}\n", "x".repeat((6 << 20) - 8));
    std::fs::write(out.join("team-0.yaml"), &big).unwrap();
    for i in 1..3 {
        std::fs::hard_link(out.join("team-0.yaml"), out.join(format!("team-{i}.yaml"))).unwrap();
    }
    let o = run(dir, &[&RENDER_MC[..], &["--output-dir", "out"]].concat());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("or 16 MiB of them"), "{err}");
    assert!(err.contains("a directory of the pool's own"), "{err}");
    // Within it, the same files are read (and kept, not render's).
    for i in 1..3 {
        std::fs::remove_file(out.join(format!("team-{i}.yaml"))).unwrap();
    }
    ok(dir, &[&RENDER_MC[..], &["--output-dir", "out"]].concat());
    assert!(out.join("team-0.yaml").exists());
}

/// Review 23 r23c F2: a tree's link at the `-o` name is judged by where the
/// tree is, not by how the path is spelt: reached through the user's own
/// link into a checkout's subdirectory (`prod -> repo/clusters/prod`), the
/// pull request's link there wrote the render (or an ISO) over a file
/// outside the tree; so did a tree without `.git` run from.
#[test]
fn a_tree_reached_through_a_link_of_ours_keeps_its_own_links_unfollowed() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    inputs(&elsewhere);
    std::fs::create_dir_all(dir.join("repo/.git")).unwrap();
    std::fs::create_dir_all(dir.join("repo/clusters/prod")).unwrap();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let victim = dir.join("home/victim.conf");
    std::fs::write(&victim, "mine\n").unwrap();
    symlink(
        "../../../home/victim.conf",
        dir.join("repo/clusters/prod/50-worker.yaml"),
    )
    .unwrap();
    symlink(dir.join("repo/clusters/prod"), dir.join("prod")).unwrap();
    let out = dir.join("prod/50-worker.yaml");
    let out = out.to_str().unwrap();
    let o = run(
        &elsewhere,
        &[&RENDER_MC[..], &["-o", out, "--force"]].concat(),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("in the git work tree"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
    // No `.git`: the tree is where the run starts.
    std::fs::remove_dir(dir.join("repo/.git")).unwrap();
    let repo = dir.join("repo");
    inputs(&repo);
    let o = run(&repo, &[&RENDER_MC[..], &["-o", out, "--force"]].concat());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("below the current directory"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
    // The control: from elsewhere, the link is the user's own to follow.
    ok(
        &elsewhere,
        &[&RENDER_MC[..], &["-o", out, "--force"]].concat(),
    );
    assert_ne!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
}

/// Review 19 r19b F3: in a git work tree a link is the repository's
/// content: a pull request's `gitops/worker-gpu -> ../../other/prod`, made
/// by the CI user's checkout (so "ours"), had `render --output-dir` merge
/// our manifests into another checkout's kustomization. A link at the
/// output directory or above it, inside the tree, is refused; outside a
/// work tree a link of ours is followed, as before.
#[test]
fn a_link_in_a_git_work_tree_is_not_followed() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    inputs(dir);
    let other = dir.join("other/prod");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("kustomization.yaml"), "resources:\n- ../base\n").unwrap();
    std::fs::create_dir_all(dir.join("repo/.git")).unwrap();
    std::fs::create_dir_all(dir.join("repo/gitops")).unwrap();
    symlink("../../other/prod", dir.join("repo/gitops/worker-gpu")).unwrap();
    symlink("../other", dir.join("repo/up")).unwrap();
    let before = listing(&dir.join("other"));
    for out in ["repo/gitops/worker-gpu", "repo/up/prod"] {
        let o = run(dir, &[&RENDER_MC[..], &["--output-dir", out]].concat());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{out}: {err}");
        assert!(err.contains("symlink in the git work tree"), "{out}: {err}");
        assert_eq!(listing(&dir.join("other")), before, "{out}");
        assert_eq!(
            std::fs::read_to_string(other.join("kustomization.yaml")).unwrap(),
            "resources:\n- ../base\n"
        );
    }
    // Review 20 r20b F1: a link at the `-o` name itself, in the tree.
    symlink(
        "../../other/prod/kustomization.yaml",
        dir.join("repo/gitops/x.yaml"),
    )
    .unwrap();
    let o = run(
        dir,
        &[&RENDER_MC[..], &["-o", "repo/gitops/x.yaml", "--force"]].concat(),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("symlink to"), "{err}");
    assert!(err.contains("in the git work tree"), "{err}");
    assert_eq!(
        std::fs::read_to_string(other.join("kustomization.yaml")).unwrap(),
        "resources:\n- ../base\n"
    );
    std::fs::remove_file(dir.join("repo/gitops/x.yaml")).unwrap();
    // Review 21 r21b F5: nor a link there to one of the process's own
    // descriptors (the output went to the job's log, the file unwritten).
    for to in ["/dev/stderr", "/proc/self/fd/1", "/dev/fd/2"] {
        let link = dir.join("repo/gitops/own.yaml");
        let _ = std::fs::remove_file(&link);
        symlink(to, &link).unwrap();
        let o = run(
            dir,
            &[&RENDER_MC[..], &["-o", "repo/gitops/own.yaml", "--force"]].concat(),
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{to}: {err}");
        assert!(err.contains("in the git work tree"), "{to}: {err}");
        assert!(!err.contains("kind: MachineConfig"), "{to}: {err}");
        assert!(o.stdout.is_empty(), "{to}");
        std::fs::remove_file(&link).unwrap();
    }
    // A worktree's or submodule's `.git` is a file: the same.
    std::fs::remove_dir(dir.join("repo/.git")).unwrap();
    std::fs::write(dir.join("repo/.git"), "gitdir: /elsewhere\n").unwrap();
    let o = run(
        dir,
        &[&RENDER_MC[..], &["--output-dir", "repo/gitops/worker-gpu"]].concat(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // Review 20 r20b F6: the same tree without `.git` (`git archive`, a
    // tarball checkout) below the directory the run starts in: refused.
    std::fs::remove_file(dir.join("repo/.git")).unwrap();
    for args in [
        &["--output-dir", "repo/gitops/worker-gpu"][..],
        &["--output-dir", "repo/up/prod"],
        &["-o", "repo/gitops/worker-gpu/x.yaml"],
    ] {
        let o = run(dir, &[&RENDER_MC[..], args].concat());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("below the current directory"), "{err}");
        assert_eq!(listing(&dir.join("other")), before, "{args:?}");
    }
    symlink(
        "../../other/prod/kustomization.yaml",
        dir.join("repo/gitops/x.yaml"),
    )
    .unwrap();
    let o = run(
        dir,
        &[&RENDER_MC[..], &["-o", "repo/gitops/x.yaml", "--force"]].concat(),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("below the current directory"), "{err}");
    assert_eq!(
        std::fs::read_to_string(other.join("kustomization.yaml")).unwrap(),
        "resources:\n- ../base\n"
    );
    // A link of ours above the directory the run starts in is followed.
    let work = dir.join("repo/gitops/work");
    std::fs::create_dir(&work).unwrap();
    std::fs::copy(dir.join("wrapper"), work.join("wrapper")).unwrap();
    ok(
        &work,
        &[&RENDER_MC[..], &["--output-dir", "../worker-gpu"]].concat(),
    );
    assert!(other.join("machineconfigpool-gpu.yaml").exists());
}

fn mkfifo(path: &Path) {
    let st = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(st.success(), "mkfifo {path:?}");
}

/// What is in the FIFO held open (read and write) at `f`, without
/// blocking: a marker written after it ends the read.
fn drain(f: &mut std::fs::File) -> Vec<u8> {
    use std::io::{Read, Write};
    const END: &[u8] = b"\n--end of the test's read--\n";
    f.write_all(END).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while !got.ends_with(END) {
        let n = f.read(&mut buf).unwrap();
        got.extend_from_slice(&buf[..n]);
    }
    got.truncate(got.len() - END.len());
    got
}

/// Review 19 r19c F3: `-o FIFO` goes through the gate: a FIFO in a
/// directory another user may write is refused as a file there is, and
/// the FIFO is opened on the checked directory's descriptor, never
/// through a link: swapped for another user's link to a FIFO of root's
/// right after it was looked at (an LD_PRELOAD shim,
/// `support/swap_after_stat.c`, does it inside that lookup: no race),
/// nothing reaches that FIFO.
#[test]
fn a_stream_output_is_opened_in_the_checked_directory_never_through_a_link() {
    let tmp = scratch_dir();
    let dir = tmp.path().canonicalize().unwrap();
    inputs(&dir);
    let shared = dir.join("shared");
    std::fs::create_dir(&shared).unwrap();
    if chown(&shared, Some(0), Some(4242)).is_err() {
        skipped::skipped("another user's link: chown needs root");
        return;
    }
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o770)).unwrap();
    let Some(cc) = skipped::tool("cc") else {
        return;
    };
    let fifo_in = |d: &Path| {
        let f = d.join("out.fifo");
        mkfifo(&f);
        let held = std::fs::File::options()
            .read(true)
            .write(true)
            .open(&f)
            .unwrap();
        (f, held)
    };
    let (out, _held) = fifo_in(&shared);
    let args = [&RENDER_IGN[..], &["-o", out.to_str().unwrap()]].concat();
    let o = run(&dir, &args);
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("shared is writable by group 4242"),
        "{err}"
    );
    let private = dir.join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (roots, mut roots_held) = fifo_in(&private);
    let mine = dir.join("mine");
    std::fs::create_dir(&mine).unwrap();
    let (out, mut out_held) = fifo_in(&mine);
    let so = dir.join("swap_after_stat.so");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/swap_after_stat.c");
    let st = std::process::Command::new(cc)
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&so)
        .arg(&src)
        .arg("-ldl")
        .status()
        .unwrap();
    assert!(st.success(), "compiling the shim");
    let moved = mine.join("out.fifo.moved");
    let args = [&RENDER_IGN[..], &["-o", out.to_str().unwrap()]].concat();
    for skip in 0.. {
        assert!(skip < 20, "the shim never stopped swapping");
        if std::fs::symlink_metadata(&out).is_ok_and(|m| m.file_type().is_symlink()) {
            std::fs::remove_file(&out).unwrap();
            std::fs::rename(&moved, &out).unwrap();
        }
        let o = command(&dir, &args)
            .env("LD_PRELOAD", &so)
            .env("SWAP_AT", &out)
            .env("SWAP_TO", &roots)
            .env("SWAP_UID", "65534")
            .env("SWAP_SKIP", skip.to_string())
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(
            drain(&mut roots_held),
            b"",
            "lookup {skip}: written through the link: {err}"
        );
        let ours = drain(&mut out_held);
        if !std::fs::symlink_metadata(&out).is_ok_and(|m| m.file_type().is_symlink()) {
            assert!(o.status.success() && !ours.is_empty(), "{err}");
            break;
        }
        assert!(!o.status.success(), "lookup {skip}: {err}");
    }
}

/// Review 19 r19c F3: a character device at `-o` is written into only
/// when it is the null device; another (`/dev/zero` here, `/dev/kmsg` or
/// `/dev/port` where it counts) is refused, whoever owns it.
#[test]
fn only_the_null_device_is_a_stream_output_among_devices() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    inputs(dir);
    ok(dir, &[&RENDER_IGN[..], &["-o", "/dev/null"]].concat());
    let o = run(dir, &[&RENDER_IGN[..], &["-o", "/dev/zero"]].concat());
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("/dev/zero is a character device"),
        "{err}"
    );
}
