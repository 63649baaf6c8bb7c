//! Unit tests of tree.rs (a sibling: tree.rs is near 1,000 lines).

use super::git_run::{Stopped, run_child};
use super::*;
use std::process::Command;
use std::time::{Duration, Instant};

/// Each blob as a checkout writes it (review 21 r21b F8), told apart
/// from the next whatever it holds: a line like the one closing a blob,
/// a name with a space or a newline, a size changed by the conversion.
#[test]
fn blobs_are_read_as_checked_out() {
    let repo = tempfile::tempdir().unwrap();
    let top = repo.path().to_str().unwrap();
    let git = |args: &[&str]| {
        let mut all = vec!["-C", top, "-c", "user.name=t", "-c", "user.email=t@t"];
        all.extend_from_slice(args);
        git_output(&all, None, 1 << 20).unwrap()
    };
    git(&["init", "-q"]);
    let files = [
        ("a b.yaml", "k: \"$Id$\"\nv: 1\n"),
        (
            "x\ny.yaml",
            "k: $Id$\nkubelet-labeler.end.00 missing\n\nz: 2\n",
        ),
        ("sub/c.yaml", "k: 2\n"),
    ];
    for (name, text) in files {
        let path = repo.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::write(
        repo.path().join(".gitattributes"),
        "*.yaml ident\nsub/*.yaml eol=crlf\n",
    )
    .unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "x"]);
    let blobs: Vec<(String, String, u64)> = files
        .iter()
        .map(|(name, _)| {
            let object = git(&["rev-parse", &format!("HEAD:{name}")]);
            let object = String::from_utf8(object).unwrap().trim().to_string();
            (name.to_string(), object, 0)
        })
        .collect();
    let git_dir = format!("--git-dir={top}/.git");
    let mut index = Vec::new();
    let attributes = git(&["rev-parse", "HEAD:.gitattributes"]);
    let attributes = String::from_utf8(attributes).unwrap();
    index_entry(
        &mut index,
        &format!("100644 blob {}", attributes.trim()),
        ".gitattributes",
    );
    for (name, object, _) in &blobs {
        index_entry(&mut index, &format!("100644 blob {object}"), name);
    }
    let out = checked_out(&git_dir, index, "HEAD", blobs, "HEAD:").unwrap();
    // What a checkout wrote, read back from a fresh one.
    let co = tempfile::tempdir().unwrap();
    let at = co.path().join("co");
    git(&["worktree", "add", "-q", at.to_str().unwrap(), "HEAD"]);
    for (f, (name, text)) in out.iter().zip(files) {
        let written = std::fs::read_to_string(at.join(name)).unwrap();
        assert_eq!(f.text, written, "{name}");
        assert_ne!(f.text, text, "{name}: converted");
    }
}

/// What a checkout may write, from `git check-attr -z` (review 22
/// r22b F2): `ident` counts 18 times, anything else twice; a filter
/// driver or an encoding other than UTF-8 refused; `set`/`unset`
/// values name no driver or encoding (git ignores them).
#[test]
fn a_checkout_is_bounded_by_its_attributes() {
    let blobs = [("a.yaml", 10), ("b.yaml", 5)]
        .map(|(n, size)| (n.to_string(), String::new(), size))
        .to_vec();
    let said = |triples: &[(&str, &str, &str)]| {
        let mut out = Vec::new();
        for (n, a, v) in triples {
            for f in [n, a, v] {
                out.extend_from_slice(f.as_bytes());
                out.push(0);
            }
        }
        out
    };
    let plain = said(&[("a.yaml", "ident", "unset"), ("b.yaml", "filter", "set")]);
    assert!(checkout_fits(&plain, &blobs, 30, "r").is_ok());
    assert!(checkout_fits(&plain, &blobs, 29, "r").is_err());
    let ident = said(&[("a.yaml", "ident", "set")]);
    assert!(checkout_fits(&ident, &blobs, 190, "r").is_ok());
    let err = checkout_fits(&ident, &blobs, 189, "r").unwrap_err();
    assert!(format!("{err}").contains("ident"), "{err}");
    for (attribute, value, says) in [
        ("filter", "lfs", "through the filter \"lfs\""),
        ("working-tree-encoding", "UTF-16", "as UTF-16"),
        ("working-tree-encoding", "set", "as set"),
    ] {
        let one = said(&[("b.yaml", attribute, value)]);
        let err = checkout_fits(&one, &blobs, 1 << 20, "r").unwrap_err();
        assert!(format!("{err}").contains(says), "{err}");
    }
    let utf8 = said(&[("b.yaml", "working-tree-encoding", "utf-8")]);
    assert!(checkout_fits(&utf8, &blobs, 30, "r").is_ok());
    let other = said(&[("c.yaml", "ident", "set")]);
    assert!(checkout_fits(&other, &blobs, 1 << 20, "r").is_err());
}

/// A child past its deadline is killed and the error says so (review
/// 25 r25a F3: git waited for ever on a repository's config include).
#[test]
fn a_child_past_its_deadline_is_stopped() {
    let started = Instant::now();
    let mut sleep = Command::new("sh");
    sleep.args(["-c", "exec sleep 30"]);
    let err = run_child(&mut sleep, None, 1 << 10, Duration::from_millis(300)).unwrap_err();
    assert!(err.downcast_ref::<Stopped>().is_some(), "{err:#}");
    assert!(
        format!("{err}").contains("did not finish within 0.3 s"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// git's output is read up to a bound, then refused (a listing of
/// millions of files was read whole); input reaches it meanwhile.
#[test]
fn what_git_writes_is_bounded() {
    let err = git_output(&["--version"], None, 4).unwrap_err();
    assert!(format!("{err:#}").contains("more than"), "{err:#}");
    assert!(git_output(&["--version"], None, 1 << 10).is_ok());
    // 1.2 MiB in and out through both pipes at once: no deadlock.
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path().to_str().unwrap();
    git_output(&["init", "-q", dir], None, 1 << 16).unwrap();
    let line = format!("{}\n", "0".repeat(40));
    let out = git_output(
        &["-C", dir, "cat-file", "--batch-check"],
        Some(line.repeat(25_000).into_bytes()),
        4 << 20,
    )
    .unwrap();
    assert_eq!(
        out,
        format!("{} missing\n", "0".repeat(40))
            .repeat(25_000)
            .into_bytes()
    );
}

/// git's answer in three (review 26 r26b F2): a commit, "names no commit"
/// (rev-parse's exit 1), or an error for anything else, never a no.
#[test]
fn a_revision_is_yes_no_or_cannot_tell() {
    let repo = tempfile::tempdir().unwrap();
    let top = repo.path().to_str().unwrap();
    let git = |args: &[&str]| {
        let mut all = vec!["-C", top, "-c", "user.name=t", "-c", "user.email=t@t"];
        all.extend_from_slice(args);
        git_output(&all, None, 1 << 20).unwrap()
    };
    git(&["init", "-q"]);
    git(&["commit", "-q", "--allow-empty", "-m", "x"]);
    let head = String::from_utf8(git(&["rev-parse", "HEAD"])).unwrap();
    let dot_git = repo.path().join(".git");
    assert_eq!(
        commit_of(&dot_git, "HEAD").unwrap().as_deref(),
        Some(head.trim())
    );
    assert_eq!(commit_of(&dot_git, "nope").unwrap(), None);
    assert_eq!(commit_of(&dot_git, "HEAD^{tree}").unwrap(), None);
    // Not a repository: git fails otherwise than with "no".
    let none = tempfile::tempdir().unwrap();
    let err = commit_of(&none.path().join("x"), "HEAD").unwrap_err();
    assert!(format!("{err:#}").contains("git rev-parse HEAD"), "{err:#}");
}
