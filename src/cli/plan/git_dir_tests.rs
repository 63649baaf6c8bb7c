//! Unit tests of git_dir.rs (a sibling: git_dir.rs is near 1,000 lines).

use super::*;

fn git_dir_at(dir: &Path) {
    std::fs::create_dir_all(dir.join("objects")).unwrap();
    std::fs::create_dir_all(dir.join("refs/heads")).unwrap();
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
}

/// `.git` found up from a directory; a gitfile (relative or absolute)
/// and a worktree's `commondir` followed as git does; without `.git`,
/// None; a broken `.git` (a gitfile naming nothing, a FIFO for HEAD)
/// an error naming it, never a pass.
#[test]
fn a_repository_is_found_as_git_finds_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let main = root.join("main");
    git_dir_at(&main.join(".git"));
    std::fs::create_dir_all(main.join("gitops/pool")).unwrap();
    let found = discover(&main.join("gitops/pool")).unwrap().unwrap();
    assert_eq!(
        found,
        Repo {
            top: main.clone(),
            git_dir: main.join(".git"),
            common: main.join(".git"),
        }
    );

    // A linked worktree: a gitfile to `.git/worktrees/wt`, whose
    // commondir is `../..`.
    let private = main.join(".git/worktrees/wt");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(private.join("HEAD"), format!("{}\n", "0".repeat(40))).unwrap();
    std::fs::write(private.join("commondir"), "../..\n").unwrap();
    let wt = root.join("wt");
    std::fs::create_dir_all(wt.join("sub")).unwrap();
    std::fs::write(wt.join(".git"), format!("gitdir: {}\n", private.display())).unwrap();
    let found = discover(&wt.join("sub")).unwrap().unwrap();
    assert_eq!((found.top, found.git_dir), (wt.clone(), private.clone()));
    assert_eq!(found.common, main.join(".git"));

    // A submodule: a relative gitfile.
    let modules = main.join(".git/modules/sm");
    git_dir_at(&modules);
    let sm = main.join("gitops/sm");
    std::fs::create_dir_all(&sm).unwrap();
    std::fs::write(sm.join(".git"), "gitdir: ../../.git/modules/sm\r\n").unwrap();
    let found = discover(&sm).unwrap().unwrap();
    assert_eq!((found.git_dir, found.common), (modules.clone(), modules));

    // No `.git` up to `/` (none in the temporary directory's parents
    // is assumed of the test machine).
    let plain = root.join("plain");
    std::fs::create_dir(&plain).unwrap();
    if !root.ancestors().any(|d| d.join(".git").exists()) {
        assert_eq!(discover(&plain).unwrap(), None);
    }

    // Broken: an error naming the `.git`.
    std::fs::write(wt.join(".git"), "gitdir: /nonexistent/x\n").unwrap();
    let err = format!("{:#}", discover(&wt).unwrap_err());
    assert!(err.contains("/nonexistent/x"), "{err}");
    std::fs::write(wt.join(".git"), "not a gitfile\n").unwrap();
    let err = format!("{:#}", discover(&wt).unwrap_err());
    assert!(err.contains("not a gitfile"), "{err}");
    std::fs::write(wt.join(".git"), "gitdir: x".repeat(1000)).unwrap();
    let err = format!("{:#}", discover(&wt).unwrap_err());
    assert!(err.contains("larger than"), "{err}");
    let head = main.join(".git/HEAD");
    std::fs::remove_file(&head).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&head).status();
    if made.is_ok_and(|s| s.success()) {
        let err = format!("{:#}", discover(&main).unwrap_err());
        assert!(err.contains("not a regular file"), "{err}");
    }
}

/// The refs copied (HEAD, the pseudo-refs beside it, packed-refs,
/// `shallow`, loose ones at any depth, a worktree's own from its own
/// directory only); the object format read from the config as text.
#[test]
fn refs_are_copied_as_git_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let common = root.join("repo/.git");
    git_dir_at(&common);
    std::fs::create_dir_all(common.join("refs/remotes/origin")).unwrap();
    std::fs::create_dir_all(common.join("refs/worktree")).unwrap();
    std::fs::write(common.join("refs/remotes/origin/main"), "1\n").unwrap();
    std::fs::write(common.join("refs/worktree/x"), "5\n").unwrap();
    std::fs::write(
        common.join("packed-refs"),
        format!("{} refs/tags/v1\n", "2".repeat(40)),
    )
    .unwrap();
    std::fs::write(common.join("shallow"), "6\n").unwrap();
    let private = common.join("worktrees/wt");
    std::fs::create_dir_all(private.join("refs/bisect")).unwrap();
    std::fs::create_dir_all(private.join("refs/heads")).unwrap();
    std::fs::write(private.join("HEAD"), "3\n").unwrap();
    std::fs::write(private.join("FETCH_HEAD"), "7\t\tbranch 'main'\n").unwrap();
    std::fs::write(private.join("COMMIT-x"), "8\n").unwrap();
    std::fs::write(private.join("refs/bisect/bad"), "4\n").unwrap();
    std::fs::write(private.join("refs/heads/own"), "9\n").unwrap();
    let repo = Repo {
        top: root.join("wt"),
        git_dir: private.clone(),
        common: common.clone(),
    };
    let to = root.join("scratch");
    std::fs::create_dir(&to).unwrap();
    copy_refs(&repo, &to).unwrap();
    let read = |p: &str| std::fs::read_to_string(to.join(p)).unwrap();
    assert_eq!(read("HEAD"), "3\n");
    assert_eq!(read("FETCH_HEAD"), "7\t\tbranch 'main'\n");
    assert_eq!(
        read("packed-refs"),
        format!("{} refs/tags/v1\n", "2".repeat(40))
    );
    assert_eq!(read("shallow"), "6\n");
    assert_eq!(read("refs/remotes/origin/main"), "1\n");
    assert_eq!(read("refs/bisect/bad"), "4\n");
    // The main worktree's own, and what git never reads of a linked one.
    assert!(!to.join("refs/worktree/x").exists());
    assert!(!to.join("refs/heads/own").exists());
    assert!(!to.join("COMMIT-x").exists());
}

/// Whatever plan cannot give its scratch as it is, is refused naming
/// it (review 26 r26b F1): never left out for the packed value or the
/// next rule of git's to win. Each case alone, undone after.
#[test]
fn what_cannot_be_copied_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let common = root.join("repo/.git");
    git_dir_at(&common);
    let repo = Repo {
        top: root.join("repo"),
        git_dir: common.clone(),
        common: common.clone(),
    };
    let at = |p: &str| common.join(p);
    let deep = format!("refs/heads/{}", "d/".repeat(70));
    type Step = Box<dyn Fn()>;
    let (a, b, c, d) = (at("refs/heads/x"), at("refs/heads"), at(&deep), at("info"));
    let (e, f) = (at("refs/replace"), at("packed-refs"));
    let (h, i) = (at("reftable"), at("refs/tags/big"));
    let cases: Vec<(Step, Step, &str)> = vec![
        (
            Box::new({
                let a = a.clone();
                move || std::os::unix::fs::symlink("/etc/hostname", &a).unwrap()
            }),
            Box::new({
                let a = a.clone();
                move || std::fs::remove_file(&a).unwrap()
            }),
            "refs/heads/x: a ref that is a symbolic link",
        ),
        (
            Box::new({
                let (b, root) = (b.clone(), root.clone());
                move || {
                    std::fs::rename(&b, root.join("heads")).unwrap();
                    std::os::unix::fs::symlink(root.join("heads"), &b).unwrap();
                }
            }),
            Box::new({
                let (b, root) = (b.clone(), root.clone());
                move || {
                    std::fs::remove_file(&b).unwrap();
                    std::fs::rename(root.join("heads"), &b).unwrap();
                }
            }),
            "refs/heads: a ref that is a symbolic link",
        ),
        (
            Box::new({
                let c = c.clone();
                move || {
                    std::fs::create_dir_all(&c).unwrap();
                    std::fs::write(c.join("m"), "1\n").unwrap();
                }
            }),
            Box::new({
                let b = at("refs/heads/d");
                move || std::fs::remove_dir_all(&b).unwrap()
            }),
            "refs nested deeper than 64",
        ),
        (
            Box::new({
                let b = b.clone();
                move || {
                    use std::os::unix::ffi::OsStrExt;
                    let name = OsStr::from_bytes(b"ma\xffin");
                    std::fs::write(b.join(name), "1\n").unwrap();
                }
            }),
            Box::new({
                let b = b.clone();
                move || {
                    use std::os::unix::ffi::OsStrExt;
                    std::fs::remove_file(b.join(OsStr::from_bytes(b"ma\xffin"))).unwrap();
                }
            }),
            "a ref whose name is not UTF-8",
        ),
        (
            Box::new({
                let d = d.clone();
                move || {
                    std::fs::create_dir_all(&d).unwrap();
                    std::fs::write(d.join("grafts"), "1 2\n").unwrap();
                }
            }),
            Box::new({
                let d = d.clone();
                move || std::fs::remove_dir_all(&d).unwrap()
            }),
            "info/grafts: grafts give commits other parents",
        ),
        (
            Box::new({
                let e = e.clone();
                move || {
                    std::fs::create_dir_all(&e).unwrap();
                    std::fs::write(e.join("abc"), "1\n").unwrap();
                }
            }),
            Box::new({
                let e = e.clone();
                move || std::fs::remove_dir_all(&e).unwrap()
            }),
            "refs/replace/abc is a replace ref",
        ),
        (
            Box::new({
                let f = f.clone();
                move || {
                    let line = format!(
                        "# pack-refs with: peeled\n{} refs/replace/abc\n",
                        "1".repeat(40)
                    );
                    std::fs::write(&f, line).unwrap()
                }
            }),
            Box::new({
                let f = f.clone();
                move || std::fs::remove_file(&f).unwrap()
            }),
            "refs/replace/abc is a replace ref",
        ),
        (
            Box::new({
                let h = h.clone();
                move || std::fs::create_dir(&h).unwrap()
            }),
            Box::new({
                let h = h.clone();
                move || std::fs::remove_dir(&h).unwrap()
            }),
            "reftable: a reftable ref store",
        ),
        (
            Box::new({
                let i = i.clone();
                move || {
                    std::fs::create_dir_all(i.parent().unwrap()).unwrap();
                    std::fs::write(&i, "0".repeat(5000)).unwrap();
                }
            }),
            Box::new({
                let i = i.clone();
                move || std::fs::remove_file(&i).unwrap()
            }),
            "refs/tags/big is larger than 4096 bytes",
        ),
        (
            Box::new({
                let j = at("ORIG_HEAD");
                move || std::os::unix::fs::symlink("/etc/hostname", &j).unwrap()
            }),
            Box::new({
                let j = at("ORIG_HEAD");
                move || std::fs::remove_file(&j).unwrap()
            }),
            "ORIG_HEAD: a pseudo-ref that is a link",
        ),
        (
            Box::new({
                let j = at("HEAD");
                move || std::fs::remove_file(&j).unwrap()
            }),
            Box::new({
                let j = at("HEAD");
                move || std::fs::write(&j, "ref: refs/heads/main\n").unwrap()
            }),
            "HEAD: no HEAD",
        ),
    ];
    for (make, undo, says) in cases {
        make();
        let to = tempfile::tempdir().unwrap();
        let err = format!("{:#}", copy_refs(&repo, to.path()).unwrap_err());
        assert!(err.contains(says), "{says:?} not in {err}");
        assert!(err.contains("or a fresh clone"), "{err}");
        undo();
        let to = tempfile::tempdir().unwrap();
        copy_refs(&repo, to.path()).unwrap_or_else(|e| panic!("after {says}: {e:#}"));
    }
}

/// `REV:./PATH` and `REV:../PATH` from the current directory's place in
/// the work tree, as git reads them (review 26 r26b F4); other paths from
/// the top; above the top, or from outside the work tree, refused.
#[test]
fn a_dot_slash_path_is_read_from_the_current_directory() {
    let repo = Repo {
        top: PathBuf::from("/r"),
        git_dir: PathBuf::from("/nonexistent/.git"),
        common: PathBuf::from("/nonexistent/.git"),
    };
    let at =
        |cwd: &str, sub: &str| tree_path(&repo, Path::new(cwd), sub).map_err(|e| e.to_string());
    assert_eq!(at("/r/clusters", "gitops").unwrap(), "gitops");
    assert_eq!(at("/r/clusters", "./gitops").unwrap(), "clusters/gitops");
    assert_eq!(at("/r/clusters", "./gitops/").unwrap(), "clusters/gitops");
    assert_eq!(at("/r/a/b", "../x/./y").unwrap(), "a/x/y");
    assert_eq!(at("/r/a", "./").unwrap(), "a");
    assert_eq!(at("/r/a", "../").unwrap(), ".");
    assert_eq!(at("/r", "./gitops").unwrap(), "gitops");
    assert!(
        at("/r/a", "../../x")
            .unwrap_err()
            .contains("outside the repository")
    );
    assert!(at("/r/a", ".\\x").unwrap_err().contains("repository's top"));
    assert!(
        at("/elsewhere", "./x")
            .unwrap_err()
            .contains("from the repository's top")
    );
}

/// Review 28 r28b F1, F2, F6: what git reads from where plan copies
/// nothing is refused, never resolved otherwise or read as "no".
#[test]
fn lookups_plan_does_not_copy_are_refused() {
    for rev in [
        "HEAD@{1}",
        "main@{u}",
        "@{-1}",
        "main-worktree/HEAD",
        "worktrees/wt/HEAD",
    ] {
        assert!(revision_plan_reads(rev).is_err(), "{rev}");
    }
    for rev in ["HEAD", "HEAD~1", "origin/main", "v1.0^{commit}", "@"] {
        revision_plan_reads(rev).unwrap();
    }
    let input = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let repo = Repo {
        top: input.path().to_path_buf(),
        git_dir: input.path().to_path_buf(),
        common: input.path().to_path_buf(),
    };
    std::fs::create_dir_all(input.path().join("refs/heads")).unwrap();
    std::fs::write(input.path().join("refs/heads/main"), "x\n").unwrap();
    std::fs::create_dir_all(scratch.path().join("refs/heads")).unwrap();
    std::fs::write(scratch.path().join("refs/heads/main"), "x\n").unwrap();
    lookups_copied(&repo, scratch.path(), "main~1").unwrap();
    // A stray `.git/main`, which git reads before refs/heads/main.
    std::fs::write(input.path().join("main"), "y\n").unwrap();
    let e = lookups_copied(&repo, scratch.path(), "main~1").unwrap_err();
    assert!(e.to_string().contains("git reads main of"), "{e}");
    lookups_copied(&repo, scratch.path(), "HEAD").unwrap();
}

/// Review 29 r29b F4: a symbolic ref is followed to a name plan did not
/// copy, as git follows it: refused, never a dangling "no".
#[test]
fn a_symbolic_ref_to_what_plan_did_not_copy_is_refused() {
    let input = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let repo = Repo {
        top: input.path().to_path_buf(),
        git_dir: input.path().to_path_buf(),
        common: input.path().to_path_buf(),
    };
    for d in [input.path(), scratch.path()] {
        std::fs::create_dir_all(d.join("refs/heads")).unwrap();
        std::fs::write(d.join("refs/heads/feature"), "ref: foo\n").unwrap();
    }
    lookups_copied(&repo, scratch.path(), "feature").unwrap();
    std::fs::write(input.path().join("foo"), "0000\n").unwrap();
    let e = lookups_copied(&repo, scratch.path(), "feature").unwrap_err();
    assert!(
        e.to_string()
            .contains("git follows refs/heads/feature to foo"),
        "{e}"
    );
}

/// git's `validate_headref`: a symbolic ref under `refs/` after `ref:`
/// and blanks, or 40 hex digits first; anything else is no HEAD.
#[test]
fn a_head_is_valid_as_git_validates_it() {
    for good in [
        &b"ref: refs/heads/main\n"[..],
        b"ref:\t\n refs/x",
        b"0123456789abcdef0123456789ABCDEF01234567",
        b"0123456789abcdef0123456789abcdef01234567 trailing",
    ] {
        assert!(is_valid_head(good), "{:?}", String::from_utf8_lossy(good));
    }
    for bad in [
        &b""[..],
        b"ref: heads/main",
        b"ref:\x0brefs/x",
        b"ref: \0refs/x",
        b"0123",
        b"0123456789abcdef0123456789abcdef0123456g",
    ] {
        assert!(!is_valid_head(bad), "{:?}", String::from_utf8_lossy(bad));
    }
}

/// git's `is_git_directory`, or an error where plan cannot tell what git
/// would decide (review 29 r29b F3): never a guess either way.
#[test]
fn a_git_directory_is_told_as_git_tells_it_or_refused() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap().join("g");
    git_dir_at(&dir);
    assert_eq!(is_git_directory(&dir).unwrap(), Some(dir.clone()));
    // Not one: passed over.
    std::fs::write(dir.join("HEAD"), "ref: heads/main\n").unwrap();
    assert_eq!(is_git_directory(&dir).unwrap(), None);
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::remove_dir(dir.join("refs/heads")).unwrap();
    std::fs::remove_dir(dir.join("refs")).unwrap();
    assert_eq!(is_git_directory(&dir).unwrap(), None);
    // A commondir of "." is still this directory, without refs: not one.
    std::fs::write(dir.join("commondir"), ".\n").unwrap();
    assert_eq!(is_git_directory(&dir).unwrap(), None);
    std::fs::remove_file(dir.join("commondir")).unwrap();
    // What git might take and plan cannot tell: refused, naming it.
    std::fs::write(dir.join("refs"), "").unwrap();
    std::fs::set_permissions(dir.join("refs"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = format!("{:#}", is_git_directory(&dir).unwrap_err());
    assert!(err.contains("refs: not a directory"), "{err}");
    std::fs::remove_file(dir.join("refs")).unwrap();
    std::os::unix::fs::symlink("objects", dir.join("refs")).unwrap();
    let err = format!("{:#}", is_git_directory(&dir).unwrap_err());
    assert!(err.contains("refs: a symbolic link"), "{err}");
    std::fs::remove_file(dir.join("refs")).unwrap();
    std::fs::create_dir(dir.join("refs")).unwrap();
    std::fs::remove_file(dir.join("HEAD")).unwrap();
    std::os::unix::fs::symlink("refs/heads/main", dir.join("HEAD")).unwrap();
    let err = format!("{:#}", is_git_directory(&dir).unwrap_err());
    assert!(err.contains("HEAD: a symbolic link"), "{err}");
}

/// packed-refs lines as `git pack-refs` writes them, and nothing else
/// (review 30 r30b F5); `@` is HEAD among the names git looks up.
#[test]
fn packed_refs_lines_and_at_are_read_as_git_writes_them() {
    let id = "0123456789abcdef0123456789abcdef01234567";
    let named = |line: &str, first| packed_ref_name(line.as_bytes(), first).map(str::to_string);
    assert_eq!(
        named("# pack-refs with: peeled fully-peeled sorted \n", true),
        Some(String::new())
    );
    assert_eq!(named("# pack-refs with: peeled\n", false), None);
    assert_eq!(
        named(&format!("{id} refs/heads/main\n"), false),
        Some("refs/heads/main".into())
    );
    assert_eq!(named(&format!("^{id}\n"), false), Some(String::new()));
    for bad in [
        format!("{id}\trefs/replace/x\n"),
        format!("{id}  refs/heads/x\n"),
        format!("{id} refs/heads/x"),
        format!("{id} refs/heads/a b\n"),
        format!("{} refs/heads/x\n", &id[..39]),
        "\n".to_string(),
    ] {
        assert_eq!(named(&bad, false), None, "{bad:?}");
    }
    assert_eq!(candidates("@")[0], "HEAD");
    assert_eq!(candidates("@~1")[0], "HEAD");
    assert_eq!(candidates("main@")[0], "main");
}
/// Review 30 r30b F7: the files named like pseudo-refs are copied within
/// one bound, 16 MiB together and 1,000 files (64 sparse files of 16 MiB
/// each made plan write 1 GiB per scratch repository); a file past its
/// bound is refused before any of it is written.
#[test]
fn pseudo_refs_are_copied_within_one_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let (from, to) = (tmp.path().join("from"), tmp.path().join("to"));
    std::fs::create_dir_all(&from).unwrap();
    std::fs::create_dir_all(&to).unwrap();
    let sparse = |name: &str, len: u64| {
        let f = std::fs::File::create(from.join(name)).unwrap();
        f.set_len(len).unwrap();
    };
    sparse("FETCH_HEAD", 8 << 20);
    sparse("ORIG_HEAD", (8 << 20) - 1);
    copy_pseudo_refs(&from, &to).unwrap();
    sparse("X_A", 2);
    let e = format!("{:#}", copy_pseudo_refs(&from, &to).unwrap_err());
    assert!(e.contains("more than 16 MiB together"), "{e}");
    for name in ["FETCH_HEAD", "ORIG_HEAD", "X_A"] {
        std::fs::remove_file(from.join(name)).unwrap();
    }
    for i in 0..=PSEUDO_COUNT_MAX {
        let name: String = format!("X_{i:04}")
            .chars()
            .map(|c| match c {
                '0'..='9' => (b'A' + c as u8 - b'0') as char,
                c => c,
            })
            .collect();
        sparse(&name, 0);
    }
    let e = format!("{:#}", copy_pseudo_refs(&from, &to).unwrap_err());
    assert!(e.contains("more than 1000"), "{e}");

    // One file past its own bound: nothing written.
    sparse("shallow", 17 << 20);
    let out = to.join("shallow");
    let e = format!(
        "{:#}",
        copy_in(&from, "shallow", &out, PSEUDO_MAX).unwrap_err()
    );
    assert!(e.contains("is larger than 16777216 bytes"), "{e}");
    assert!(!out.exists());
}

/// Review 31 r31a F2: loose refs are copied within a byte bound too
/// (sparse refs of 4 KiB each made one run write 837 MiB).
#[test]
fn loose_refs_are_copied_within_a_byte_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let common = std::fs::canonicalize(tmp.path()).unwrap().join("repo/.git");
    git_dir_at(&common);
    let heads = common.join("refs/heads");
    for i in 0..=(LOOSE_REFS_BYTES / SMALL) {
        let f = std::fs::File::create(heads.join(format!("r{i}"))).unwrap();
        f.set_len(SMALL).unwrap();
    }
    let repo = Repo {
        top: common.parent().unwrap().to_path_buf(),
        git_dir: common.clone(),
        common,
    };
    let to = tempfile::tempdir().unwrap();
    let err = format!("{:#}", copy_refs(&repo, to.path()).unwrap_err());
    assert!(err.contains("bytes of them"), "{err}");
}

/// Review 37 r37b F3: a line of `packed-refs` is read within 8 KiB (one
/// of 256 MiB, a sparse file of NULs, took 1.6 GB and went whole into the
/// error); a line plan refuses is shown shortened.
#[test]
fn a_packed_refs_line_is_read_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let common = tmp.path().join("common");
    std::fs::create_dir_all(&common).unwrap();
    let to = tmp.path().join("packed-refs");
    let f = std::fs::File::create(common.join("packed-refs")).unwrap();
    f.set_len(64 << 20).unwrap();
    let e = format!("{:#}", copy_packed_refs(&common, &to, false).unwrap_err());
    assert!(e.contains("a line longer than 8192 bytes"), "{e}");
    assert!(e.len() < 1024, "{} bytes of error", e.len());
    let id = "0123456789abcdef0123456789abcdef01234567";
    let long = format!("{id} refs/heads/{}\tx\n", "a".repeat(4000));
    std::fs::write(common.join("packed-refs"), long).unwrap();
    let e = format!("{:#}", copy_packed_refs(&common, &to, false).unwrap_err());
    assert!(
        e.contains("a line plan cannot read as git writes it"),
        "{e}"
    );
    assert!(e.len() < 1024, "{} bytes of error", e.len());
}
