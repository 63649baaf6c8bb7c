//! `plan`'s git mode finds the repository git finds (review 29 r29b F3,
//! F5): the same `.git` up from the current directory, or a refusal.

use crate::pr_tree::{git, refused};
use crate::pr_tree_git::{base_and_pr, plan_in};
use crate::support::{is_root, scratch_dir, skipped, stderr};

use std::path::Path;
use std::process::Command;

/// What git says in `dir`: its git directory and HEAD, or None when it
/// finds no repository there (or dies).
fn gits_repository(dir: &Path) -> Option<(String, String)> {
    let ask = |args: &[&str]| {
        let o = Command::new("git")
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap();
        o.status
            .success()
            .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    Some((
        ask(&["rev-parse", "--absolute-git-dir"])?,
        ask(&["rev-parse", "--verify", "HEAD"])?,
    ))
}

/// Review 29 r29b F3: the repository plan reads is the one git finds
/// (setup.c's `is_git_directory` on each `.git` up from the directory),
/// or plan refuses: a `commondir` of "." without refs, a `.git` link, a
/// `refs` that is an executable file, a gitfile naming a directory
/// without refs, a bare repository on the way up. Each case is asked of
/// git here too: plan's answer is git's repository's (a reboot where
/// git's HEAD is the pull request, none where it is the base), or a
/// refusal; never the other repository's. Before, plan took the inner
/// repository in the first, second and fourth case (0 nodes change where
/// git's HEAD is the pull request) and the outer one in the third.
#[test]
fn the_repository_is_the_one_git_finds_or_refused() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, pr) = base_and_pr(tmp.path());
    let gitops = top.join("gitops");
    let head = std::fs::read_to_string(top.join(".git/HEAD")).unwrap();
    let branch = head.strip_prefix("ref: ").unwrap().trim().to_string();
    // A copy of the repository at `at` whose main is the base, its refs
    // packed and `refs/` gone.
    let inner = |at: &Path| {
        let o = Command::new("cp")
            .arg("-a")
            .arg(top.join(".git"))
            .arg(at)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let gd = format!("--git-dir={}", at.display());
        git(&top, &[&gd, "update-ref", &branch, &base]);
        git(&top, &[&gd, "pack-refs", "--all"]);
        std::fs::remove_dir_all(at.join("refs")).unwrap();
    };
    let clear = || {
        for name in [".git", ".gitdir", "HEAD", "objects", "refs"] {
            let p = gitops.join(name);
            let _ = std::fs::remove_file(&p);
            let _ = std::fs::remove_dir_all(&p);
        }
        std::fs::write(top.join(".git/HEAD"), &head).unwrap();
    };
    type Layout<'a> = (&'a str, Box<dyn Fn() + 'a>, Option<i32>);
    let layouts: Vec<Layout> = vec![
        (
            "a .git without HEAD (passed over, as git does)",
            Box::new(|| std::fs::create_dir_all(gitops.join(".git/objects")).unwrap()),
            Some(1),
        ),
        (
            "a commondir of \".\" without refs",
            Box::new(|| {
                inner(&gitops.join(".git"));
                std::fs::write(gitops.join(".git/commondir"), ".\n").unwrap();
            }),
            None,
        ),
        (
            "a .git link to a directory without refs",
            Box::new(|| {
                inner(&gitops.join(".gitdir"));
                std::os::unix::fs::symlink(".gitdir", gitops.join(".git")).unwrap();
            }),
            Some(2),
        ),
        (
            "refs an executable file",
            Box::new(|| {
                use std::os::unix::fs::PermissionsExt;
                inner(&gitops.join(".git"));
                let refs = gitops.join(".git/refs");
                std::fs::write(&refs, "").unwrap();
                std::fs::set_permissions(&refs, std::fs::Permissions::from_mode(0o755)).unwrap();
                std::fs::write(gitops.join(".git/HEAD"), format!("{pr}\n")).unwrap();
                std::fs::write(top.join(".git/HEAD"), format!("{base}\n")).unwrap();
            }),
            Some(2),
        ),
        (
            "a gitfile naming a directory without refs",
            Box::new(|| {
                inner(&gitops.join(".gitdir"));
                std::fs::write(gitops.join(".git"), "gitdir: .gitdir\n").unwrap();
            }),
            Some(2),
        ),
        (
            "a bare repository on the way up",
            Box::new(|| {
                for name in ["objects", "refs"] {
                    std::fs::create_dir_all(gitops.join(name)).unwrap();
                }
                std::fs::write(gitops.join("HEAD"), "ref: refs/heads/main\n").unwrap();
            }),
            Some(2),
        ),
    ];
    for (what, lay_out, expected) in layouts {
        clear();
        lay_out();
        let o = plan_in(&gitops, &format!("{base}:gitops"), "HEAD:gitops");
        let code = o.status.code();
        let gits = match gits_repository(&gitops) {
            Some((_, head)) if head == pr => Some(1),
            Some((_, head)) if head == base => Some(0),
            _ => None,
        };
        assert!(
            code == Some(2) || code == gits,
            "{what}: plan exit {code:?}, git's repository says {gits:?}: {}",
            stderr(&o)
        );
        if let Some(expected) = expected {
            assert_eq!(code, Some(expected), "{what}: {}", stderr(&o));
        }
    }
    clear();

    // Review 29 r29b F5: git refuses a repository reached through a work
    // tree or a gitfile another user owns (dubious ownership); so does
    // plan, not only for the git directory.
    if !is_root() {
        skipped::skipped("root (to give a gitfile to another user)");
        return;
    }
    let wt = tmp.path().join("wt");
    std::fs::create_dir_all(wt.join("gitops")).unwrap();
    std::fs::write(
        wt.join(".git"),
        format!("gitdir: {}\n", top.join(".git").display()),
    )
    .unwrap();
    let chown = |path: &Path| {
        let o = Command::new("chown")
            .args(["-h", "65534"])
            .arg(path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    };
    for owned in [wt.join(".git"), wt.clone()] {
        chown(&owned);
        let o = plan_in(&wt.join("gitops"), &format!("{base}:gitops"), "HEAD:gitops");
        refused(&o, &["owned by user 65534", "dubious ownership"]);
        assert!(gits_repository(&wt.join("gitops")).is_none(), "git took it");
        let o = Command::new("chown")
            .args(["-h", "0"])
            .arg(&owned)
            .output()
            .unwrap();
        assert!(o.status.success());
    }
}
