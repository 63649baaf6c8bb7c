//! `plan`'s budget of git's time (review 36 r36b F2): only the time git
//! children run counts, and once it is spent the error names the place
//! that used it, never the next (honest) repository, and is not read as a
//! broken repository ("repair it").

use crate::pr_tree::{committed_render, git, refused};
use crate::pr_tree_git::rev_parse;
use crate::support::{bin, repo, scratch_dir, skipped};

use std::path::Path;
use std::process::{Command, Output};

/// `plan --from DIR --to DIR` in `top` with the git budget lowered to
/// `ms` milliseconds.
fn plan_budget(top: &Path, from: &str, to: &str, ms: u64) -> Output {
    bin()
        .current_dir(top)
        .env("KUBELET_LABELER_TEST_CHILDREN_DEADLINE_MS", ms.to_string())
        .args(["plan", "--from", from, "--to", to])
        .arg("--fleet")
        .arg(repo().join("examples/fleet/fleet.json"))
        .output()
        .unwrap()
}

/// An index (version 2) of one entry naming `blob`, whose REUC
/// (resolve-undo) extension lists `n` names in reverse order: git inserts
/// each into a sorted list, moving the whole list each time (review 35
/// r35b F3), so it is slow to list, within plan's bounds.
fn slow_index(blob: &str, n: usize) -> Vec<u8> {
    let blob: Vec<u8> = (0..20)
        .map(|i| u8::from_str_radix(&blob[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let name = b"gitops/a.yaml";
    let mut entry = vec![0u8; 24];
    entry.extend(0o100644u32.to_be_bytes());
    entry.extend([0u8; 12]);
    entry.extend(&blob);
    entry.extend((name.len() as u16).to_be_bytes());
    entry.extend(name);
    entry.resize(entry.len() + 8 - entry.len() % 8, 0);
    let mut body = b"DIRC".to_vec();
    body.extend(2u32.to_be_bytes());
    body.extend(1u32.to_be_bytes());
    body.extend(entry);
    let mut reuc = Vec::new();
    for i in 0..n - 1 {
        reuc.extend(format!("{:08}\0", n - i).bytes());
        // Three modes (0: no stage) and no object.
        reuc.extend(b"0\x000\x000\x00");
    }
    // The last names a stage-1 blob (git wants bytes after the last mode).
    reuc.extend(b"00000000\x00100644\x000\x000\x00");
    reuc.extend(&blob);
    body.extend(b"REUC");
    body.extend((reuc.len() as u32).to_be_bytes());
    body.extend(reuc);
    let mut sum = Command::new("sha1sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = sum.stdin.take().unwrap();
    let written = body.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(&written).unwrap();
    });
    let out = sum.wait_with_output().unwrap();
    writer.join().unwrap();
    let hex = String::from_utf8(out.stdout).unwrap();
    body.extend((0..20).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()));
    body
}

/// Review 36 r36b F2 (b): nested repositories of a directory whose index
/// is slow to list use up the (lowered) budget; the error named the
/// honest enclosing repository the clock ran out on, "within 0 s", and
/// told it to repair its config. It names a slow one now, and its time.
#[test]
fn a_spent_git_budget_names_the_slow_repository() {
    if !skipped::need("git") || !skipped::need("sha1sum") {
        return;
    }
    let tmp = scratch_dir();
    let top = committed_render(tmp.path());
    let gitops = top.join("gitops");
    let blob = rev_parse(&top, "HEAD:gitops/worker-gpu/kustomization.yaml");
    let index = slow_index(&blob, 40_000);
    for s in ["s0", "s1", "s2", "s3", "s9"] {
        let nested = gitops.join(s);
        std::fs::create_dir(&nested).unwrap();
        git(&nested, &["init", "-q"]);
        if s != "s9" {
            std::fs::write(nested.join(".git/index"), &index).unwrap();
        }
    }
    let dir = gitops.display().to_string();
    let o = plan_budget(&top, &dir, &dir, 1500);
    refused(
        &o,
        &["plan's git children have used the 1.5 s plan gives them in all"],
    );
    let err = crate::support::stderr(&o);
    let named = ["s0", "s1", "s2", "s3"]
        .iter()
        .any(|s| err.contains(&format!("s) in {}: the input", gitops.join(s).display())));
    assert!(named, "no slow repository named: {err}");
    assert!(
        !err.contains("repair it") && !err.contains("within 0 s"),
        "{err}"
    );
}

/// Review 36 r36b F2 (a): plan's own work between git children (the YAML
/// of `--from`, read whole before `--to`'s first child) is not charged to
/// git's budget: a revision holding YAML slow to read plans within it.
#[test]
fn plans_own_work_does_not_use_the_git_budget() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let top = committed_render(tmp.path());
    let other = top.join("gitops/other");
    std::fs::create_dir(&other).unwrap();
    let list = vec!["[]"; 120_000].join(",");
    for i in 0..2 {
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big{i}\ndata:\n  k: [{list}]\n"
        );
        std::fs::write(other.join(format!("big{i}.yaml")), text).unwrap();
    }
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-q", "-m", "big"]);
    let started = std::time::Instant::now();
    let o = plan_budget(&top, "HEAD:gitops", "HEAD:gitops", 1500);
    let took = started.elapsed();
    let err = crate::support::stderr(&o);
    assert_eq!(o.status.code(), Some(0), "after {took:?}: {err}");
}
