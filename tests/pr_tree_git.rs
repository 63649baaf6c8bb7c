//! `plan`'s git mode on a hostile repository (review 26 r26b): a revision
//! resolved exactly as git resolves it there, or refused naming what plan
//! cannot reproduce; never another commit.

use crate::pr_tree::{MOTD, committed_render, git, refused};
use crate::support::{bin, repo, scratch_dir, skipped, stderr};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// What git says `rev` is in `top`.
pub(crate) fn rev_parse(top: &Path, rev: &str) -> String {
    let o = Command::new("git")
        .current_dir(top)
        .args(["rev-parse", "--verify", rev])
        .output()
        .unwrap();
    assert!(o.status.success(), "git rev-parse {rev}: {}", stderr(&o));
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// A repository (see `committed_render`) with two commits: "base", and
/// "pr" adding a MachineConfig of the pool (a reboot) under gitops/; its
/// top, base and pr.
pub(crate) fn base_and_pr(dir: &Path) -> (PathBuf, String, String) {
    let top = committed_render(dir);
    let base = rev_parse(&top, "HEAD");
    let pool = top.join("gitops/worker-gpu");
    std::fs::write(pool.join("99-motd.yaml"), MOTD).unwrap();
    let k = pool.join("kustomization.yaml");
    let listed = std::fs::read_to_string(&k).unwrap() + "- 99-motd.yaml\n";
    std::fs::write(&k, listed).unwrap();
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-q", "-m", "pr"]);
    let pr = rev_parse(&top, "HEAD");
    (top, base, pr)
}

/// `plan --from FROM --to TO --fail-on reboot` in `dir`.
pub(crate) fn plan_in(dir: &Path, from: &str, to: &str) -> Output {
    bin()
        .current_dir(dir)
        .args(["plan", "--from", from, "--to", to, "--fail-on", "reboot"])
        .arg("--fleet")
        .arg(repo().join("examples/fleet/fleet.json"))
        .output()
        .unwrap()
}

/// Review 26 r26b F1: what plan's scratch repository cannot hold as the
/// repository has it (a ref that is a link, a replace ref, grafts) is
/// refused naming it; a top-level pseudo-ref (`FETCH_HEAD`) is read as
/// git reads it, not a tag planted under the same name. Each of these
/// planned the base (no reboot) where git resolves the pull request.
#[test]
fn a_revision_is_resolved_as_git_does_or_refused() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, pr) = base_and_pr(tmp.path());
    let git_dir = top.join(".git");
    let from = format!("{base}:gitops");
    // The control: the pull request's reboot.
    let o = plan_in(&top, &from, "HEAD:gitops");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));

    // main a link to a file holding the pull request, packed as the base.
    git(&top, &["pack-refs", "--all"]);
    git(&top, &["update-ref", "refs/heads/main", &base]);
    git(&top, &["pack-refs", "--all"]);
    git(&top, &["symbolic-ref", "HEAD", "refs/heads/main"]);
    std::fs::write(tmp.path().join("held"), format!("{pr}\n")).unwrap();
    let main = git_dir.join("refs/heads/main");
    std::os::unix::fs::symlink(tmp.path().join("held"), &main).unwrap();
    assert_eq!(rev_parse(&top, "HEAD"), pr);
    refused(
        &plan_in(&top, &from, "HEAD:gitops"),
        &[
            "refs/heads/main: a ref that is a symbolic link",
            "or a fresh clone",
        ],
    );
    std::fs::remove_file(&main).unwrap();
    assert_eq!(rev_parse(&top, "HEAD"), base);

    // A replace ref: git shows the pull request's content for the base.
    git(&top, &["replace", &base, &pr]);
    assert_eq!(
        rev_parse(&top, "HEAD:gitops"),
        rev_parse(&top, &format!("{pr}:gitops"))
    );
    refused(
        &plan_in(&top, &from, "HEAD:gitops"),
        &[&format!("refs/replace/{base} is a replace ref")],
    );
    git(&top, &["replace", "-d", &base]);

    // FETCH_HEAD of the git directory (the base), a tag of that name (the
    // pull request): git reads the first.
    git(&top, &["update-ref", "refs/heads/main", &pr]);
    std::fs::write(
        git_dir.join("FETCH_HEAD"),
        format!("{base}\t\tbranch 'main' of x\n"),
    )
    .unwrap();
    git(&top, &["tag", "FETCH_HEAD", &pr]);
    assert_eq!(rev_parse(&top, "FETCH_HEAD"), base);
    let o = plan_in(&top, "FETCH_HEAD:gitops", "HEAD:gitops");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = plan_in(&top, "refs/tags/FETCH_HEAD:gitops", "HEAD:gitops");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // shallow: git knows no parent of the pull request, nor does plan.
    std::fs::write(git_dir.join("shallow"), format!("{pr}\n")).unwrap();
    let o = Command::new("git")
        .current_dir(&top)
        .args(["rev-parse", "--verify", "--quiet", "HEAD~1"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    refused(
        &plan_in(&top, "HEAD~1:gitops", "HEAD:gitops"),
        &["\"HEAD~1\" is no git revision"],
    );
    std::fs::remove_file(git_dir.join("shallow")).unwrap();

    // A linked worktree's HEAD naming a ref of its own (refs/worktree/x)
    // that only the main worktree holds: no commit to git, nor to plan.
    let wt = tmp.path().join("wt");
    git(
        &top,
        &["worktree", "add", "-q", "--detach", wt.to_str().unwrap()],
    );
    git(&top, &["update-ref", "refs/worktree/x", &base]);
    let private = git_dir.join("worktrees/wt");
    std::fs::write(private.join("HEAD"), "ref: refs/worktree/x\n").unwrap();
    let o = Command::new("git")
        .current_dir(&wt)
        .args(["rev-parse", "--verify", "--quiet", "HEAD"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    refused(
        &plan_in(&wt, &from, "HEAD:gitops"),
        &["\"HEAD\" is no git revision"],
    );
    std::fs::write(private.join("HEAD"), format!("{pr}\n")).unwrap();
    let o = plan_in(&wt, &from, "HEAD:gitops");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));

    // Grafts: HEAD~1 is the base to git, whatever the commit says.
    git(&top, &["commit", "-q", "--allow-empty", "-m", "c"]);
    let c = rev_parse(&top, "HEAD");
    std::fs::create_dir_all(git_dir.join("info")).unwrap();
    std::fs::write(git_dir.join("info/grafts"), format!("{c} {base}\n")).unwrap();
    assert_eq!(rev_parse(&top, "HEAD~1"), base);
    refused(
        &plan_in(&top, "HEAD~1:gitops", "HEAD:gitops"),
        &["info/grafts: grafts give commits other parents"],
    );
}

/// Review 26 r26b F2: where plan cannot tell whether `REV` of a spec that
/// is also a path is a revision (a ref store it refuses, git stopped at its
/// deadline), the spec is refused, never read as the path (a decoy
/// directory `HEAD:gitops` was planned in place of the revision); the path
/// spelt `./HEAD:gitops` is read as a path.
#[test]
fn a_spec_plan_cannot_resolve_is_never_read_as_a_path() {
    if !skipped::need("git") || !skipped::need("mkfifo") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, _) = base_and_pr(tmp.path());
    let from = format!("{base}:gitops");
    // The decoy: the base's files as a directory named like the revision.
    let decoy = top.join("HEAD:gitops");
    std::fs::create_dir(&decoy).unwrap();
    let copied = Command::new("cp")
        .arg("-r")
        .arg(top.join("gitops/worker-gpu"))
        .arg(&decoy)
        .status()
        .unwrap();
    assert!(copied.success());
    std::fs::remove_file(decoy.join("worker-gpu/99-motd.yaml")).unwrap();
    let k = decoy.join("worker-gpu/kustomization.yaml");
    let kept = std::fs::read_to_string(&k)
        .unwrap()
        .replace("- 99-motd.yaml\n", "");
    std::fs::write(&k, kept).unwrap();
    refused(&plan_in(&top, &from, "HEAD:gitops"), &["ambiguous"]);
    // The path, spelt as one: planned (nothing changes).
    let o = plan_in(&top, &from, "./HEAD:gitops");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // An unrelated oversized ref: no revision resolves.
    let junk = top.join(".git/refs/tags/junk");
    std::fs::write(&junk, "0".repeat(5000)).unwrap();
    refused(
        &plan_in(&top, "./HEAD:gitops", "HEAD:gitops"),
        &[
            "HEAD:gitops: a path of the working directory, and maybe",
            "which plan cannot resolve",
            "refs/tags/junk is larger than 4096 bytes",
        ],
    );
    let o = plan_in(&top, "./HEAD:gitops", "./HEAD:gitops");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::remove_file(&junk).unwrap();

    // git stopped at its deadline (HEAD's commit object a FIFO, which git
    // opens), lowered for the test.
    let head = rev_parse(&top, "HEAD");
    let object = top.join(".git/objects").join(&head[..2]).join(&head[2..]);
    std::fs::remove_file(&object).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(&object)
            .status()
            .unwrap()
            .success()
    );
    let o = bin()
        .current_dir(&top)
        .env("KUBELET_LABELER_TEST_CHILD_DEADLINE_MS", "1500")
        .args(["plan", "--from", "./HEAD:gitops", "--to", "HEAD:gitops"])
        .arg("--fleet")
        .arg(repo().join("examples/fleet/fleet.json"))
        .output()
        .unwrap();
    refused(
        &o,
        &[
            "HEAD:gitops: a path of the working directory, and maybe",
            "was stopped",
        ],
    );
}

/// Review 26 r26b F4: `REV:./PATH` is read from the current directory's
/// place in the work tree, as git reads it (`clusters/gitops` run in
/// `clusters/`), `REV:PATH` from the top; plan read `./gitops` as the
/// top-level `gitops`, unchanged, where git's changes.
#[test]
fn a_dot_slash_revision_path_is_read_as_git_reads_it() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let top = committed_render(tmp.path());
    let clusters = top.join("clusters");
    std::fs::create_dir(&clusters).unwrap();
    let copied = Command::new("cp")
        .arg("-r")
        .arg(top.join("gitops"))
        .arg(&clusters)
        .status()
        .unwrap();
    assert!(copied.success());
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-q", "-m", "two"]);
    git(&top, &["tag", "base"]);
    let pool = clusters.join("gitops/worker-gpu");
    std::fs::write(pool.join("99-motd.yaml"), MOTD).unwrap();
    let k = pool.join("kustomization.yaml");
    let listed = std::fs::read_to_string(&k).unwrap() + "- 99-motd.yaml\n";
    std::fs::write(&k, listed).unwrap();
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-q", "-m", "pr"]);
    assert_eq!(
        rev_parse(&clusters, "HEAD:./gitops"),
        rev_parse(&top, "HEAD:clusters/gitops")
    );
    // Run in clusters/: ./gitops is clusters/gitops (a reboot), gitops the
    // top-level one (unchanged).
    let o = plan_in(&clusters, "base:./gitops", "HEAD:./gitops");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = plan_in(
        &clusters,
        "base:../clusters/gitops/",
        "HEAD:clusters/gitops",
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = plan_in(&clusters, "base:gitops", "HEAD:gitops");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    refused(
        &plan_in(&clusters, "base:../../gitops", "HEAD:gitops"),
        &["outside the repository"],
    );
}

/// What git writes to its standard output in `top`, `input` given.
fn git_out(top: &Path, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("git")
        .current_dir(top)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "git {args:?}");
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// Review 26 r26b F5: git is given only what plan has measured of a
/// revision (the listing under the path planned, the `.gitattributes`
/// above it), never the whole commit: a tree DAG beside the path (22
/// objects, 2^21 paths) made `read-tree` of the commit take minutes; it
/// now plans in the control's time, under a deadline lowered to 30 s.
#[test]
fn a_tree_bomb_beside_the_planned_path_is_never_expanded() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, _) = base_and_pr(tmp.path());
    let blob = git_out(&top, &["hash-object", "-w", "--stdin"], "x\n");
    let mut tree = git_out(&top, &["mktree"], &format!("100644 blob {blob}\tf\n"));
    for _ in 0..21 {
        let two = format!("040000 tree {tree}\ta\n040000 tree {tree}\tb\n");
        tree = git_out(&top, &["mktree"], &two);
    }
    let mut entries = git_out(&top, &["ls-tree", "HEAD"], "");
    entries.push_str(&format!("\n040000 tree {tree}\tbomb\n"));
    let with = git_out(&top, &["mktree"], &entries);
    let commit = git_out(
        &top,
        &["commit-tree", "-p", "HEAD", "-m", "bomb", &with],
        "",
    );
    // Expanded, it would pass the 30 s deadline: exit 2, not 1.
    let o = bin()
        .current_dir(&top)
        .env("KUBELET_LABELER_TEST_CHILD_DEADLINE_MS", "30000")
        .args(["plan", "--from", &format!("{base}:gitops")])
        .args(["--to", &format!("{commit}:gitops"), "--fail-on", "reboot"])
        .arg("--fleet")
        .arg(repo().join("examples/fleet/fleet.json"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// Review 43 r43b F1: a PR's tree of paths 70 directories deep on the
/// planned path (git stores the chain once; 200 such files made 377,000
/// inodes of scratch) is refused before its checkout, naming the path.
#[test]
fn a_deep_tree_on_the_planned_path_is_refused_before_its_checkout() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, _) = base_and_pr(tmp.path());
    let blob = git_out(&top, &["hash-object", "-w", "--stdin"], "");
    let mut tree = git_out(&top, &["mktree"], &format!("100644 blob {blob}\tx.yaml\n"));
    for _ in 0..70 {
        tree = git_out(&top, &["mktree"], &format!("040000 tree {tree}\ta\n"));
    }
    let gitops = git_out(&top, &["rev-parse", "HEAD:gitops"], "");
    let mut entries = git_out(&top, &["ls-tree", &gitops], "");
    entries.push_str(&format!("\n040000 tree {tree}\tdeep\n"));
    let gitops = git_out(&top, &["mktree"], &entries);
    let entries: Vec<String> = git_out(&top, &["ls-tree", "HEAD"], "")
        .lines()
        .map(|l| match l.ends_with("\tgitops") {
            true => format!("040000 tree {gitops}\tgitops"),
            false => l.to_string(),
        })
        .collect();
    let with = git_out(&top, &["mktree"], &(entries.join("\n") + "\n"));
    let commit = git_out(
        &top,
        &["commit-tree", "-p", "HEAD", "-m", "deep", &with],
        "",
    );
    let o = plan_in(&top, &format!("{base}:gitops"), &format!("{commit}:gitops"));
    refused(
        &o,
        &["gitops/deep/a/a/a", "72 directories deep, past the 64"],
    );
}

/// Review 26 r26b F3: the input's `objects/info/alternates` is read by
/// plan first, bounded: a link to /dev/zero (git read it whole, without
/// bound) is refused at once, naming it; a `git clone --shared` (an
/// alternates file of its own) is planned.
#[test]
fn alternates_are_read_bounded_before_git() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, _) = base_and_pr(tmp.path());
    let shared = tmp.path().join("shared");
    git(
        tmp.path(),
        &["clone", "-q", "--shared", top.to_str().unwrap(), "shared"],
    );
    let from = format!("{base}:gitops");
    let o = plan_in(&shared, &from, "HEAD:gitops");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let alternates = top.join(".git/objects/info/alternates");
    std::os::unix::fs::symlink("/dev/zero", &alternates).unwrap();
    for dir in [&top, &shared] {
        // Under a memory bound: git reading /dev/zero (a regression)
        // would otherwise take the machine's memory.
        let o = Command::new("sh")
            .current_dir(dir)
            .args(["-c", "ulimit -v 2097152; exec \"$0\" \"$@\""])
            .arg(bin().get_program())
            .args(["plan", "--from", &from, "--to", "HEAD:gitops", "--fleet"])
            .arg(repo().join("examples/fleet/fleet.json"))
            .output()
            .unwrap();
        refused(&o, &["objects/info/alternates", "symbolic link"]);
    }
}

/// BASE's `gitops` laid out at `dir`/`name` (a directory named as a
/// spec, which plan must never read in place of a revision it could not
/// resolve as git does).
fn decoy(top: &Path, base: &str, dir: &Path, name: &str) {
    let at = dir.join(name);
    std::fs::create_dir_all(&at).unwrap();
    let archive = Command::new("git")
        .current_dir(top)
        .args(["archive", base, "gitops"])
        .output()
        .unwrap();
    assert!(archive.status.success(), "{}", stderr(&archive));
    let mut tar = Command::new("tar")
        .args(["-x", "--strip-components=1", "-C"])
        .arg(&at)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    tar.stdin
        .take()
        .unwrap()
        .write_all(&archive.stdout)
        .unwrap();
    assert!(tar.wait().unwrap().success());
}

/// Review 30 r30b F1, F2, F5: a symbolic ref that leads out of `refs/`
/// (to `main-worktree/HEAD`, to a stray `.git/foo` however `ref:` is
/// spelt, reached by `@` too) is refused, whatever the directory named
/// like the spec holds; so is a `packed-refs` line in another shape than
/// git writes (a tab before `refs/replace/X`). Before, each planned the
/// base or the decoy (0 nodes change) where git resolves the pull
/// request, or a replace ref git honours went unseen.
#[test]
fn symbolic_refs_out_of_refs_and_odd_packed_refs_are_refused() {
    if !skipped::need("git") || !skipped::need("tar") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, pr) = base_and_pr(tmp.path());
    let git_dir = top.join(".git");
    std::fs::write(git_dir.join("foo"), format!("{pr}\n")).unwrap();
    for (i, spelling) in ["ref:foo\n", "ref:\tfoo\n", "ref:  foo\n", "ref: foo\n"]
        .iter()
        .enumerate()
    {
        let name = format!("f{i}");
        let ref_file = git_dir.join("refs/heads").join(&name);
        std::fs::write(&ref_file, spelling).unwrap();
        assert_eq!(rev_parse(&top, &name), pr, "git follows {spelling:?}");
        decoy(&top, &base, &top, &format!("{name}:gitops"));
        let o = plan_in(&top, &format!("{base}:gitops"), &format!("{name}:gitops"));
        refused(&o, &["a symbolic ref to \"foo\""]);
        std::fs::remove_file(&ref_file).unwrap();
    }

    // `@` is HEAD, whose branch leads to `foo`.
    let head = std::fs::read_to_string(git_dir.join("HEAD")).unwrap();
    let branch = git_dir.join(head.strip_prefix("ref: ").unwrap().trim());
    std::fs::write(&branch, "ref: foo\n").unwrap();
    assert_eq!(rev_parse(&top, "@"), pr);
    decoy(&top, &base, &top, "@:gitops");
    refused(
        &plan_in(&top, &format!("{base}:gitops"), "@:gitops"),
        &["a symbolic ref to \"foo\""],
    );
    std::fs::write(&branch, format!("{pr}\n")).unwrap();
    std::fs::remove_file(git_dir.join("foo")).unwrap();

    // A symbolic ref to the main worktree's HEAD (the base), read from a
    // linked worktree at the pull request.
    std::fs::write(git_dir.join("HEAD"), format!("{base}\n")).unwrap();
    let wt = tmp.path().join("wt");
    git(&top, &["worktree", "add", "-q", wt.to_str().unwrap(), &pr]);
    std::fs::write(git_dir.join("refs/heads/base"), "ref: main-worktree/HEAD\n").unwrap();
    assert_eq!(rev_parse(&wt, "base"), base);
    refused(
        &plan_in(&wt, "base:gitops", "HEAD:gitops"),
        &["a symbolic ref to \"main-worktree/HEAD\""],
    );
    std::fs::remove_file(git_dir.join("refs/heads/base")).unwrap();
    std::fs::write(git_dir.join("HEAD"), &head).unwrap();

    // packed-refs: a tab where git writes a space.
    let packed = git_dir.join("packed-refs");
    let before = std::fs::read_to_string(&packed).unwrap_or_default();
    std::fs::write(&packed, format!("{before}{pr}\trefs/replace/{base}\n")).unwrap();
    refused(
        &plan_in(&top, &format!("{base}:gitops"), "HEAD:gitops"),
        &["packed-refs", "a line plan cannot read as git writes it"],
    );
}

/// The multi-pack-index at `path` with the offsets of the objects `a`
/// and `b` (hex) swapped (its OOFF chunk): each read through it is the
/// other's content.
fn swap_in_midx(path: &Path, a: &str, b: &str) {
    let mut d = std::fs::read(path).unwrap();
    assert_eq!(&d[..4], b"MIDX");
    let hash = if d[5] == 1 { 20 } else { 32 };
    let be = |at: usize, n: usize| d[at..at + n].iter().fold(0u64, |v, &x| v << 8 | x as u64);
    let chunk = |id: &[u8]| {
        (0..=d[6] as usize)
            .map(|i| 12 + 12 * i)
            .find(|&at| &d[at..at + 4] == id)
            .map(|at| be(at + 4, 8) as usize)
            .unwrap()
    };
    let (oidf, oidl, ooff) = (chunk(b"OIDF"), chunk(b"OIDL"), chunk(b"OOFF"));
    let n = be(oidf + 255 * 4, 4) as usize;
    let index = |hex: &str| {
        (0..n)
            .find(|i| {
                let oid = &d[oidl + i * hash..oidl + (i + 1) * hash];
                oid.iter().map(|b| format!("{b:02x}")).collect::<String>() == hex
            })
            .unwrap()
    };
    let (i, j) = (ooff + 8 * index(a), ooff + 8 * index(b));
    for k in 0..8 {
        d.swap(i + k, j + k);
    }
    std::fs::write(path, d).unwrap();
}

/// Review 30 r30b F3: git in the repository reads its objects through
/// the packs' indexes or a multi-pack-index as its config says
/// (`core.multiPackIndex`), which plan does not read: one crafted to give
/// the pull request's MachineConfig another blob's content (and turned
/// off in the repository's config) made plan see no reboot. A
/// multi-pack-index (a file or the directory of an incremental one) of
/// the input or of an alternate is refused, naming it and the fix.
#[test]
fn a_multi_pack_index_of_the_input_is_refused() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, _) = base_and_pr(tmp.path());
    std::fs::write(top.join("notes.txt"), "# notes\n").unwrap();
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-q", "--amend", "-m", "pr"]);
    let motd = rev_parse(&top, "HEAD:gitops/worker-gpu/99-motd.yaml");
    let notes = rev_parse(&top, "HEAD:notes.txt");
    git(&top, &["repack", "-adq"]);
    git(&top, &["multi-pack-index", "write"]);
    let midx = top.join(".git/objects/pack/multi-pack-index");
    swap_in_midx(&midx, &motd, &notes);
    git(&top, &["config", "core.multiPackIndex", "false"]);
    let shown = |multi: &str| {
        let c = format!("core.multiPackIndex={multi}");
        let args = ["-c", &c, "cat-file", "blob", &motd];
        let o = Command::new("git").current_dir(&top).args(args).output();
        String::from_utf8_lossy(&o.unwrap().stdout).into_owned()
    };
    assert_eq!(shown("false"), MOTD);
    assert_eq!(shown("true"), "# notes\n");
    let from = format!("{base}:gitops");
    let says = [
        "objects/pack/multi-pack-index",
        "core.multiPackIndex",
        "plan a fresh clone",
    ];
    refused(&plan_in(&top, &from, "HEAD:gitops"), &says);
    let shared = tmp.path().join("shared");
    git(
        tmp.path(),
        &["clone", "-q", "--shared", top.to_str().unwrap(), "shared"],
    );
    refused(&plan_in(&shared, &from, "HEAD:gitops"), &says);
    std::fs::remove_file(&midx).unwrap();
    std::fs::create_dir(midx.with_extension("d")).unwrap();
    refused(
        &plan_in(&top, &from, "HEAD:gitops"),
        &["objects/pack/multi-pack-index.d", "core.multiPackIndex"],
    );
    std::fs::remove_dir(midx.with_extension("d")).unwrap();
    let o = plan_in(&top, &from, "HEAD:gitops");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// The loose objects of the git directory `from` copied into `to`'s.
fn copy_loose_objects(from: &Path, to: &Path) {
    for dir in std::fs::read_dir(from.join("objects")).unwrap() {
        let dir = dir.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if name.len() != 2 {
            continue;
        }
        let into = to.join("objects").join(&name);
        std::fs::create_dir_all(&into).unwrap();
        for object in std::fs::read_dir(&dir).unwrap() {
            let object = object.unwrap().path();
            std::fs::copy(&object, into.join(object.file_name().unwrap())).unwrap();
        }
    }
}

/// Review 30 r30b F4: the object format is read as git reads it: a
/// SHA-256 repository whose config says `sha"256"` (or continues the
/// value on a next line), a SHA-1 one whose config says objectFormat
/// twice (the last wins), each with the other format's commit of the base
/// and refs named like the repository's commits beside them, were planned
/// in a scratch of the other format, where those refs resolved (no
/// reboot); and a SHA-1 repository in a scratch made SHA-256 by the
/// user's `GIT_DEFAULT_HASH`. Each is the pull request's reboot now.
#[test]
fn the_object_format_is_read_as_git_reads_it() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (one, base1, pr1) = base_and_pr(tmp.path());
    // The same two commits in a SHA-256 repository.
    let two = tmp.path().join("two");
    std::fs::create_dir(&two).unwrap();
    git(&two, &["init", "-q", "--object-format=sha256"]);
    let in_two = |args: &[&str]| {
        let work = format!("--work-tree={}", one.display());
        let mut all = vec!["--git-dir=.git", work.as_str()];
        all.extend_from_slice(args);
        git(&two, &all);
    };
    git(&one, &["checkout", "-q", &base1]);
    in_two(&["add", "-A"]);
    in_two(&["commit", "-q", "-m", "base"]);
    git(&one, &["checkout", "-q", "-"]);
    in_two(&["add", "-A"]);
    in_two(&["commit", "-q", "-m", "pr"]);
    let (base2, pr2) = (rev_parse(&two, "HEAD~1"), rev_parse(&two, "HEAD"));
    // Each repository also holds the other's base commit, and refs named
    // like its own commits holding it (git there takes them for broken).
    let (git1, git2) = (one.join(".git"), two.join(".git"));
    copy_loose_objects(&git1, &git2);
    copy_loose_objects(&git2, &git1);
    for (dir, other_base, names) in [
        (&git1, &base2, [&base1, &pr1]),
        (&git2, &base1, [&base2, &pr2]),
    ] {
        for name in names {
            std::fs::write(dir.join("refs").join(name), format!("{other_base}\n")).unwrap();
        }
    }
    let reboot = |top: &Path, base: &str, pr: &str, env: Option<(&str, &str)>| {
        let mut c = bin();
        c.current_dir(top)
            .args(["plan", "--from", &format!("{base}:gitops")])
            .args(["--to", &format!("{pr}:gitops"), "--fail-on", "reboot"])
            .arg("--fleet")
            .arg(repo().join("examples/fleet/fleet.json"));
        if let Some((k, v)) = env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    };
    reboot(&two, &base2, &pr2, None);
    let config = git2.join("config");
    let plain = std::fs::read_to_string(&config).unwrap();
    assert!(plain.contains("objectformat = sha256"), "{plain}");
    for spelt in ["sha\"256\"", "sha\\\n256", "\"sha\"256"] {
        let text = plain.replace("objectformat = sha256", &format!("objectformat = {spelt}"));
        std::fs::write(&config, text).unwrap();
        reboot(&two, &base2, &pr2, None);
    }
    git(&one, &["config", "core.repositoryformatversion", "1"]);
    let mut text = std::fs::read_to_string(git1.join("config")).unwrap();
    text.push_str("[extensions]\n\tobjectformat = sha256\n\tobjectformat = sha1\n");
    std::fs::write(git1.join("config"), text).unwrap();
    assert_eq!(rev_parse(&one, "HEAD"), pr1);
    reboot(&one, &base1, &pr1, None);
    git(&one, &["config", "--remove-section", "extensions"]);
    git(&one, &["config", "core.repositoryformatversion", "0"]);
    reboot(&one, &base1, &pr1, Some(("GIT_DEFAULT_HASH", "sha256")));
}

/// Review 31 r31a F1, F3: plan's git reads the input's objects as git
/// there reads them (its own object directory: the same depth of
/// alternates, its own packs first) and its scratch repository has no
/// file of git's templates to stand in for the input's. A blob packed six
/// alternates deep, with other bytes loose in the repository under the
/// same id, is the MachineConfig to git there and was "# notes" to plan
/// (0 nodes change); a branch `description` was read from the scratch's
/// own `description` where git reads the repository's.
#[test]
fn objects_and_top_level_names_are_read_as_git_reads_them() {
    use std::io::Write;
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, pr) = base_and_pr(tmp.path());
    let git_dir = top.join(".git");
    let blob = rev_parse(&top, "HEAD:gitops/worker-gpu/99-motd.yaml");
    let mut prev = git_dir.join("objects");
    for i in 1..=6 {
        let objects = git_dir.join(format!("alt/{i}/objects"));
        std::fs::create_dir_all(objects.join("info")).unwrap();
        std::fs::create_dir_all(objects.join("pack")).unwrap();
        let to = if i == 1 {
            "../alt/1/objects".to_string()
        } else {
            format!("../../{i}/objects")
        };
        std::fs::write(prev.join("info/alternates"), format!("{to}\n")).unwrap();
        prev = objects;
    }
    let pack = git_dir.join("alt/6/objects/pack/pack");
    let mut packing = Command::new("git")
        .current_dir(&top)
        .args(["pack-objects", "-q"])
        .arg(&pack)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    writeln!(packing.stdin.take().unwrap(), "{blob}").unwrap();
    assert!(packing.wait().unwrap().success());
    let loose = git_dir.join("objects").join(&blob[..2]).join(&blob[2..]);
    let _ = std::fs::remove_file(&loose);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(b"blob 8\0# notes\n").unwrap();
    std::fs::write(&loose, z.finish().unwrap()).unwrap();
    let shown = git_out(&top, &["cat-file", "-p", &blob], "");
    assert!(shown.contains("MachineConfig"), "git there: {shown}");
    let o = plan_in(&top, &format!("{base}:gitops"), "HEAD:gitops");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));

    // A branch named like a file of git's templates.
    git(&top, &["branch", "description", &base]);
    std::fs::write(git_dir.join("description"), format!("{pr}\n")).unwrap();
    let o = plan_in(&top, &format!("{base}:gitops"), "description:gitops");
    assert!(
        matches!(o.status.code(), Some(1 | 2)),
        "git reads description as the pull request: {}",
        stderr(&o)
    );
}

/// Review 30 r30b F6: git reads a commit, a tag or a tree whole, whatever
/// its size (a commit of 1 GiB, 1 MiB on disk, took each git child 45 s
/// and 1 GB): their sizes are asked first and refused past a bound (a
/// commit or tag of 1 MiB, a tree on the path of 16 MiB), before git
/// reads them; a commit between the name and the revision (`~2`'s first)
/// stops git at its allocation bound (64 MiB), said so. Each of these
/// was planned (the pull request's reboot) before.
#[test]
fn a_giant_commit_or_tree_is_refused_before_git_reads_it() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, pr) = base_and_pr(tmp.path());
    let from = format!("{base}:gitops");
    let tree = rev_parse(&top, "HEAD^{tree}");
    let commit = |parent: &str, tree: &str, bytes: usize| {
        let message = tmp.path().join("message");
        std::fs::write(&message, "x".repeat(bytes)).unwrap();
        let args = [
            "commit-tree",
            "-p",
            parent,
            "-F",
            message.to_str().unwrap(),
            tree,
        ];
        git_out(&top, &args, "")
    };
    let big = commit(&pr, &tree, 1 << 20);
    let huge = "more than the 1 MiB plan lets git read of a commit";
    refused(&plan_in(&top, &from, &format!("{big}:gitops")), &[huge]);
    // Through a tag (git reads the commit to peel it), as a branch's
    // parent (git reads the branch's commit to go on), as the parent.
    git(&top, &["tag", "-a", "-m", "t", "big", &big]);
    refused(&plan_in(&top, &from, "big:gitops"), &[huge]);
    let child = commit(&big, &tree, 1);
    git(&top, &["branch", "child", &child]);
    refused(&plan_in(&top, &from, "child~1:gitops"), &[huge]);
    let grandchild = commit(&child, &tree, 1);
    git(&top, &["update-ref", "refs/heads/child", &grandchild]);
    git(&top, &["update-ref", "refs/heads/big", &big]);
    refused(&plan_in(&top, &from, "big~1:gitops"), &[huge]);
    // Just under the bound: planned.
    let under = commit(&pr, &tree, (1 << 20) - 1024);
    let o = plan_in(&top, &from, &format!("{under}:gitops"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));

    // A commit of 65 MiB git reads on the way (`~2`).
    let between = commit(&pr, &tree, 65 << 20);
    let after = commit(&between, &tree, 1);
    refused(
        &plan_in(&top, &from, &format!("{after}~1~1:gitops")),
        &["attempting to allocate", "larger than plan lets git hold"],
    );

    // A root tree of more than 16 MiB: 62,000 names of 250 bytes.
    let blob = git_out(&top, &["hash-object", "-w", "--stdin"], "x\n");
    let mut entries = git_out(&top, &["ls-tree", "HEAD"], "");
    for i in 0..62_000 {
        entries.push_str(&format!("\n100644 blob {blob}\tz{i:0>249}"));
    }
    let wide = git_out(&top, &["mktree"], &entries);
    let wide = commit(&pr, &wide, 1);
    refused(
        &plan_in(&top, &from, &format!("{wide}:gitops")),
        &[
            "/: tree",
            "more than the 16 MiB plan lets git read of a tree",
        ],
    );
}

/// Review 30 r30b F8: a sparse index holds a directory outside the sparse
/// checkout as one entry, which git expands from the trees before it lists
/// the index (directory mode asks it for submodules): a 997-byte index of
/// a tree DAG took 24 s and 618 MB. It is refused before git reads it,
/// naming the fix; the same sparse checkout with a full index is planned.
#[test]
fn a_sparse_index_is_refused_in_directory_mode() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, _) = base_and_pr(tmp.path());
    std::fs::create_dir(top.join("other")).unwrap();
    std::fs::write(top.join("other/f.yaml"), "k: v\n").unwrap();
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-q", "-m", "other"]);
    let from = format!("{base}:gitops");
    git(
        &top,
        &["sparse-checkout", "init", "--cone", "--sparse-index"],
    );
    git(&top, &["sparse-checkout", "set", "gitops"]);
    refused(
        &plan_in(&top, &from, "gitops"),
        &[
            ".git/index: a sparse index (a sparse-directory entry other/)",
            "git sparse-checkout disable",
        ],
    );
    git(
        &top,
        &["sparse-checkout", "init", "--cone", "--no-sparse-index"],
    );
    let o = plan_in(&top, &from, "gitops");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// Review 33 r33b F5: one `.gitattributes` of 20 MiB (`a x` lines, a few
/// KiB packed) under the planned path, or above it: git held its rules,
/// about 475 MB, past any bound of one allocation, and plan went on. The
/// attributes a checkout applies are bounded in all; a few lines pass.
#[test]
fn gitattributes_are_bounded_in_all() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, _) = base_and_pr(tmp.path());
    let from = format!("{base}:gitops");
    let says = ["more than 64 KiB of .gitattributes on the planned path"];
    for at in ["gitops/.gitattributes", ".gitattributes"] {
        std::fs::write(top.join(at), "a x\n".repeat(5 << 20)).unwrap();
        git(&top, &["add", "-A"]);
        git(&top, &["commit", "-q", "-m", "attributes"]);
        refused(&plan_in(&top, &from, "HEAD:gitops"), &says);
        std::fs::write(top.join(at), "*.yaml text\n").unwrap();
        git(&top, &["commit", "-q", "-am", "attributes"]);
        let o = plan_in(&top, &from, "HEAD:gitops");
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    }
    // Review 35 r35b F4: the repository's own attributes, which git applies
    // to every checkout, bounded alike (they were copied up to 1 MiB, and
    // dropped unsaid past it).
    let info = top.join(".git/info/attributes");
    std::fs::create_dir_all(info.parent().unwrap()).unwrap();
    std::fs::write(&info, "a x\n".repeat(20 << 10)).unwrap();
    refused(
        &plan_in(&top, &from, "HEAD:gitops"),
        &["info/attributes: git applies it to every checkout"],
    );
    // A directory's listing applies no attribute (review 36 r36b F1: it
    // was refused there too).
    let o = plan_in(&top, "gitops", "gitops");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Through a link, as git reads it.
    let kept = tmp.path().join("attributes");
    std::fs::write(&kept, "*.yaml text\n").unwrap();
    std::fs::remove_file(&info).unwrap();
    std::os::unix::fs::symlink(&kept, &info).unwrap();
    let o = plan_in(&top, &from, "HEAD:gitops");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// Review 35 r35b F3: each git child had its own deadline, and directory
/// mode runs one for each nested repository: hours in all. All of plan's
/// children share one deadline (10 minutes; a test lowers it).
#[test]
fn git_children_share_one_deadline() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (top, base, _) = base_and_pr(tmp.path());
    let o = bin()
        .current_dir(&top)
        .env("KUBELET_LABELER_TEST_CHILDREN_DEADLINE_MS", "1")
        .args([
            "plan",
            "--from",
            &format!("{base}:gitops"),
            "--to",
            "HEAD:gitops",
        ])
        .arg("--fleet")
        .arg(repo().join("examples/fleet/fleet.json"))
        .output()
        .unwrap();
    refused(
        &o,
        &["plan's git children have used the 0.001 s plan gives them in all"],
    );
    // Review 36 r36b F2: not read as the repository's broken format.
    let err = stderr(&o);
    assert!(
        !err.contains("repair it") && !err.contains("within 0 s"),
        "{err}"
    );
}
