//! How `plan` tells a directory from a git revision (review 23 r23b F4):
//! never from what the working directory holds. A pull request's checkout
//! may add a directory named like the revision (`HEAD:gitops`,
//! `origin/main:gitops/`), or a link, which plan read in the revision's
//! place ("0 nodes change" where the pull request rebooted the pool).

use crate::plan::render;
use crate::pr_tree::{committed_render, git, refused};
use crate::support::{bin, repo, scratch_dir, skipped, stderr};

use std::path::Path;
use std::process::Output;

/// `plan --from FROM --to TO` run in `dir`, with the example fleet.
fn plan_in(dir: &Path, from: &str, to: &str) -> Output {
    bin()
        .current_dir(dir)
        .args(["plan", "--from", from, "--to", to, "--fleet"])
        .arg(repo().join("examples/fleet/fleet.json"))
        .output()
        .unwrap()
}

/// A repository whose HEAD~1 holds the base render under gitops/ and whose
/// HEAD the pull request's (a new taint: a change, exit 1), plus the base
/// tree again under `HEAD:gitops`, then `HEAD~1:gitops/`: each spec that is
/// both a path and a revision's is refused as ambiguous, naming the fix;
/// `./` reads the path, and without the decoy the revision is read.
#[test]
fn a_spec_both_a_path_and_a_revision_is_refused() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let top = committed_render(tmp.path());
    let copy = |to: &Path| {
        std::fs::create_dir_all(to).unwrap();
        render(&to.join("worker-gpu"), &[]);
    };
    copy(&top.join("HEAD:gitops"));
    std::fs::remove_dir_all(top.join("gitops/worker-gpu")).unwrap();
    render(
        &top.join("gitops/worker-gpu"),
        &["--taint", "example.com/gpu=true:NoSchedule"],
    );
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-q", "-m", "pr"]);

    // Git mode: the decoy named like `--to`.
    refused(
        &plan_in(&top, "HEAD~1:gitops", "HEAD:gitops"),
        &[
            "HEAD:gitops: ambiguous",
            "revision \"HEAD\"",
            "give `./HEAD:gitops` for the path",
        ],
    );
    // `./` names the path: the base tree again, no change.
    let o = plan_in(&top, "HEAD~1:gitops", "./HEAD:gitops");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Mixed mode: the decoy named like `--from`, with a trailing slash.
    std::fs::remove_dir_all(top.join("HEAD:gitops")).unwrap();
    copy(&top.join("HEAD~1:gitops"));
    refused(
        &plan_in(&top, "HEAD~1:gitops/", "gitops"),
        &["HEAD~1:gitops/: ambiguous", "`./HEAD~1:gitops/`"],
    );
    // Without the decoys, the revisions: the taint is a change.
    std::fs::remove_dir_all(top.join("HEAD~1:gitops")).unwrap();
    let o = plan_in(&top, "HEAD~1:gitops", "HEAD:gitops");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = plan_in(&top, "HEAD~1:gitops/", "gitops");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // A dangling link of the revision's name is a path too.
    std::os::unix::fs::symlink(tmp.path().join("none"), top.join("HEAD:gitops")).unwrap();
    refused(
        &plan_in(&top, "HEAD~1:gitops", "HEAD:gitops"),
        &["HEAD:gitops: ambiguous"],
    );
    // Outside a repository a name with `:` is a plain path.
    let plain = tmp.path().join("plain");
    copy(&plain.join("HEAD:gitops"));
    copy(&plain.join("base"));
    let o = plan_in(&plain, "base", "HEAD:gitops");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A link given as the render (or on the way to it) in a git work tree or
/// below the current directory is the tree's content, which a pull request
/// sets (a committed `HEAD:gitops -> /any/dir` was followed): refused, as
/// the writers refuse one. A link elsewhere is the machine's: followed.
#[test]
fn a_link_given_as_the_render_in_the_tree_is_refused() {
    let tmp = scratch_dir();
    let outside = tmp.path().join("outside");
    render(&outside.join("worker-gpu"), &[]);
    let top = tmp.path().join("tree");
    render(&top.join("gitops/worker-gpu"), &[]);
    std::os::unix::fs::symlink(&outside, top.join("linked")).unwrap();
    std::os::unix::fs::symlink(&outside, top.join("gitops/sub")).unwrap();
    // Below the current directory (no git).
    for (spec, link) in [
        ("linked", "linked"),
        ("linked/", "linked"),
        ("linked/worker-gpu", "linked"),
        ("gitops/sub", "gitops/sub"),
    ] {
        refused(
            &plan_in(&top, "gitops", spec),
            &[&format!(
                "{spec}: {link} is a symlink below the current directory"
            )],
        );
    }
    // From elsewhere, the same link (not in a work tree, not below the
    // current directory) is followed.
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let (gitops, linked) = (top.join("gitops"), top.join("linked"));
    let o = plan_in(
        &elsewhere,
        gitops.to_str().unwrap(),
        linked.to_str().unwrap(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    if !skipped::need("git") {
        return;
    }
    // In a git work tree, from anywhere.
    git(&top, &["init", "-q"]);
    let o = plan_in(
        &elsewhere,
        gitops.to_str().unwrap(),
        linked.to_str().unwrap(),
    );
    refused(&o, &["is a symlink in the git work tree"]);
}
