//! What of a GitOps tree `plan` reads: every file an applier applies
//! (`oc apply -R`, Argo CD's directory walk), or a refusal naming it,
//! never a silent pass (review 19 r19b F1, F2, F6).

use crate::plan::{json, plan, render};
use crate::support::{bin, repo, scratch_dir, skipped, stderr};

use std::path::Path;
use std::process::{Command, Output};

/// A MachineConfig of the pool writing a new file under `/etc`: a reboot.
pub(crate) const MOTD: &str = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n\
                    metadata:\n  name: 99-worker-gpu-motd\n  labels:\n    \
                    machineconfiguration.openshift.io/role: worker-gpu\nspec:\n  config:\n    \
                    ignition:\n      version: 3.4.0\n    storage:\n      files:\n      - path: \
                    /etc/motd-gpu\n        mode: 420\n        contents:\n          source: \
                    data:,hello\n";

fn disruptions(o: &Output) -> Vec<String> {
    json(o)["groups"]
        .as_array()
        .unwrap_or_else(|| panic!("no groups: {}", stderr(o)))
        .iter()
        .map(|g| g["outcome"]["disruption"].to_string())
        .collect()
}

pub(crate) fn refused(o: &Output, says: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for s in says {
        assert!(err.contains(s), "{s:?} not in: {err}");
    }
}

/// A repository at `dir`/repo whose one commit ("base") holds render's
/// pool worker-gpu under gitops/: its top.
pub(crate) fn committed_render(dir: &Path) -> std::path::PathBuf {
    let top = dir.join("repo");
    render(&top.join("gitops/worker-gpu"), &[]);
    git(&top, &["init", "-q"]);
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-q", "-m", "base"]);
    top
}

/// git in `dir`, as a test's user; it must succeed.
pub(crate) fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
}

/// A hidden directory is applied by `oc apply -R` and Argo CD (no filter
/// on hidden names), so plan prices a reboot in it as in any directory,
/// from a directory and from a git revision (it priced nothing); a
/// submodule, whose manifests a revision does not hold, is refused.
#[test]
fn hidden_directories_are_planned_and_submodules_refused() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("gitops-base"), tmp.path().join("gitops"));
    render(&base.join("worker-gpu"), &[]);
    render(&pr.join("worker-gpu"), &[]);
    let fleet = repo().join("examples/fleet/fleet.json");
    let mut seen = Vec::new();
    for dir in ["extra", ".extra"] {
        std::fs::create_dir(pr.join(dir)).unwrap();
        std::fs::write(pr.join(dir).join("99-motd.yaml"), MOTD).unwrap();
        let o = plan(&base, &pr, &fleet, &["--format", "json"]);
        assert_eq!(o.status.code(), Some(1), "{dir}: {}", stderr(&o));
        seen.push(disruptions(&o));
        std::fs::remove_dir_all(pr.join(dir)).unwrap();
    }
    assert!(
        seen[0].iter().any(|d| d.contains("reboot")),
        "{:?}",
        seen[0]
    );
    assert_eq!(seen[0], seen[1], "a hidden directory is planned as any");

    if !skipped::need("git") {
        return;
    }
    git(tmp.path(), &["init", "-q"]);
    git(tmp.path(), &["add", "gitops"]);
    git(tmp.path(), &["commit", "-q", "-m", "base"]);
    std::fs::create_dir(pr.join(".extra")).unwrap();
    std::fs::write(pr.join(".extra/99-motd.yaml"), MOTD).unwrap();
    git(tmp.path(), &["add", "gitops"]);
    git(tmp.path(), &["commit", "-q", "-m", "pr"]);
    let at = |to: &str| {
        bin()
            .current_dir(tmp.path())
            .args([
                "plan",
                "--format",
                "json",
                "--from",
                "HEAD~1:gitops/",
                "--to",
                to,
            ])
            .arg("--fleet")
            .arg(&fleet)
            .output()
            .unwrap()
    };
    let o = at("HEAD:gitops/");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(disruptions(&o), seen[1]);
    // A gitlink, as `git submodule add` records one.
    let head = String::from_utf8(
        Command::new("git")
            .current_dir(tmp.path())
            .args(["rev-parse", "HEAD"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    git(
        tmp.path(),
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{},gitops/vendor", head.trim()),
        ],
    );
    git(tmp.path(), &["commit", "-q", "-m", "submodule"]);
    refused(&at("HEAD:gitops/"), &["gitops/vendor is a git submodule"]);
    // The checkout, planned as a directory (review 20 r20b F2): the
    // submodule not checked out read as an empty directory, a reboot in it
    // unseen; checked out, its files are read as any.
    refused(
        &plan(&base, &pr, &fleet, &["--format", "json"]),
        &["vendor is a git submodule that is not checked out"],
    );
    std::fs::remove_dir_all(pr.join(".extra")).unwrap();
    std::fs::create_dir(pr.join("vendor")).unwrap();
    std::fs::write(pr.join("vendor/99-motd.yaml"), MOTD).unwrap();
    // A `.git` git cannot read is an error naming it, not a pass (review
    // 21 r21b F4).
    std::fs::write(pr.join("vendor/.git"), "gitdir: ../.git/modules/vendor\n").unwrap();
    refused(
        &plan(&base, &pr, &fleet, &["--format", "json"]),
        &["git cannot read the repository of", "vendor ("],
    );
    std::fs::remove_file(pr.join("vendor/.git")).unwrap();
    git(&pr.join("vendor"), &["init", "-q"]);
    let o = plan(&base, &pr, &fleet, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// Review 21 r21b F4: a submodule inside a checked-out submodule (CI checks
/// submodules out one level, Argo CD recursively) is judged by its own
/// repository's index: not checked out, refused (it read as an empty
/// directory, a reboot in it planned as none); checked out, planned. A
/// repository git refuses to read ("dubious ownership") is refused, not
/// passed.
#[test]
fn a_submodule_in_a_submodule_not_checked_out_is_refused() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let g = |dir: &Path, args: &[&str]| {
        let mut all = vec!["-c", "protocol.file.allow=always"];
        all.extend_from_slice(args);
        git(dir, &all);
    };
    let (inner, outer, origin) = (
        tmp.path().join("inner"),
        tmp.path().join("outer"),
        tmp.path().join("origin"),
    );
    for d in [&inner, &outer, &origin] {
        std::fs::create_dir(d).unwrap();
        g(d, &["init", "-q"]);
    }
    std::fs::write(inner.join("99-motd.yaml"), MOTD).unwrap();
    g(&inner, &["add", "-A"]);
    g(&inner, &["commit", "-q", "-m", "mc"]);
    std::fs::write(outer.join("README.md"), "dashboards\n").unwrap();
    g(&outer, &["add", "-A"]);
    g(&outer, &["commit", "-q", "-m", "readme"]);
    g(
        &outer,
        &["submodule", "add", "-q", inner.to_str().unwrap(), "deep"],
    );
    g(&outer, &["commit", "-q", "-m", "deep"]);
    let base = tmp.path().join("base");
    render(&base.join("worker-gpu"), &[]);
    render(&origin.join("gitops/worker-gpu"), &[]);
    g(&origin, &["add", "-A"]);
    g(&origin, &["commit", "-q", "-m", "base"]);
    g(
        &origin,
        &[
            "submodule",
            "add",
            "-q",
            outer.to_str().unwrap(),
            "gitops/vendor",
        ],
    );
    g(&origin, &["commit", "-q", "-m", "pr"]);
    let ci = tmp.path().join("ci");
    g(
        tmp.path(),
        &[
            "clone",
            "-q",
            origin.to_str().unwrap(),
            ci.to_str().unwrap(),
        ],
    );
    g(&ci, &["submodule", "update", "-q", "--init"]);
    let fleet = repo().join("examples/fleet/fleet.json");
    let to = ci.join("gitops");
    refused(
        &plan(&base, &to, &fleet, &[]),
        &["vendor/deep is a git submodule that is not checked out"],
    );
    // The top one planned itself: the same.
    refused(
        &plan(&base, &to.join("vendor"), &fleet, &[]),
        &["deep is a git submodule that is not checked out"],
    );
    // Git refusing the repository: an error naming it.
    let o = bin()
        .env("GIT_CONFIG_PARAMETERS", "'broken")
        .arg("plan")
        .arg("--from")
        .arg(&base)
        .arg("--to")
        .arg(&to)
        .arg("--fleet")
        .arg(&fleet)
        .output()
        .unwrap();
    refused(&o, &["git cannot read the repository of"]);
    g(&ci, &["submodule", "update", "-q", "--init", "--recursive"]);
    let o = plan(&base, &to, &fleet, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        disruptions(&o).iter().any(|d| d.contains("reboot")),
        "{:?}",
        disruptions(&o)
    );
}

/// Files an applier reads as its settings, not as manifests: Argo CD's
/// parameter overrides (an `exclude` there pruned the pool's labels
/// MachineConfig, priced as nothing), a Helm chart by any name Argo CD
/// takes for one, and any document without a kind.
#[test]
fn an_applier_s_settings_in_the_tree_are_refused() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base.join("worker-gpu"), &[]);
    render(&pr.join("worker-gpu"), &[]);
    let fleet = repo().join("examples/fleet/fleet.json");
    let o = plan(&base, &pr, &fleet, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let exclude = "directory:\n  recurse: true\n  exclude: \
                   'worker-gpu/50-worker-gpu-kubelet-labeler-labels.yaml'\n";
    for (file, text, says) in [
        (
            ".argocd-source.yaml",
            exclude,
            "Argo CD's parameter overrides",
        ),
        (
            ".argocd-source-gpu.yaml",
            exclude,
            "Argo CD's parameter overrides",
        ),
        ("gpuChart.yaml", "name: gpu\n", "a Helm chart"),
        (
            "settings.yaml",
            "a: b\n",
            "a YAML document without a `kind`",
        ),
    ] {
        std::fs::write(pr.join(file), text).unwrap();
        refused(&plan(&base, &pr, &fleet, &[]), &[file, says]);
        std::fs::remove_file(pr.join(file)).unwrap();
    }
    // An empty document is nothing to apply.
    std::fs::write(pr.join("empty.yaml"), "---\n# nothing\n---\n").unwrap();
    let o = plan(&base, &pr, &fleet, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Review 20 r20b F7: the walk counts the manifests it takes (200,000
/// empty files took seconds and memory before any was judged).
#[test]
fn a_tree_of_too_many_manifests_is_refused() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base.join("worker-gpu"), &[]);
    render(&pr.join("worker-gpu"), &[]);
    let many = pr.join("many");
    std::fs::create_dir(&many).unwrap();
    for i in 0..50_001 {
        std::fs::write(many.join(format!("{i}.yaml")), "").unwrap();
    }
    let fleet = repo().join("examples/fleet/fleet.json");
    refused(
        &plan(&base, &pr, &fleet, &[]),
        &["more than 50000 manifest files"],
    );
}

/// A MachineConfig of the pool whose unit's text holds git's `$Id$`
/// keyword, as an earlier change committed it (a kernel argument may not
/// hold `$`, which the node's GRUB expands).
const AUDIT: &str = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n\
                     metadata:\n  name: 99-worker-gpu-audit\n  labels:\n    \
                     machineconfiguration.openshift.io/role: worker-gpu\nspec:\n  \
                     config:\n    ignition:\n      version: 3.4.0\n    systemd:\n      \
                     units:\n      - name: gpu-audit.service\n        \
                     contents: \"[Unit]\\nDescription=build $Id$\\n\"\n";

/// Review 21 r21b F8: a revision (`REV:PATH`) is read as its checkout
/// writes it, the attributes of that revision (a `.gitattributes` above the
/// path too) and of the repository (`$GIT_DIR/info/attributes`) applied:
/// a PR adding only `*.yaml ident` changes the unit of a MachineConfig it
/// does not touch (a reboot), planned as no change from
/// the blobs. Each revision planned agrees with its checkout planned as a
/// directory.
#[test]
fn a_revision_is_read_as_its_checkout_writes_it() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let top = tmp.path().join("repo");
    let pool = top.join("gitops/worker-gpu");
    render(&pool, &[]);
    std::fs::write(pool.join("99-worker-gpu-audit.yaml"), AUDIT).unwrap();
    let k = pool.join("kustomization.yaml");
    let listed = std::fs::read_to_string(&k).unwrap().replace(
        "- machineconfigpool-worker-gpu.yaml\n",
        "- machineconfigpool-worker-gpu.yaml\n- 99-worker-gpu-audit.yaml\n",
    );
    assert!(listed.contains("99-worker-gpu-audit.yaml"), "{listed}");
    std::fs::write(&k, listed).unwrap();
    git(&top, &["init", "-q"]);
    let commit = |what: &str| {
        git(&top, &["add", "-A"]);
        git(&top, &["commit", "-q", "-m", what]);
    };
    commit("base");
    let fleet = repo().join("examples/fleet/fleet.json");
    let mut checkouts = 0;
    // The plan of HEAD~1 to HEAD, in git mode and on the two checkouts:
    // the same outcome.
    let mut both = |says: &str| -> Output {
        let o = bin()
            .current_dir(&top)
            .args(["plan", "--format", "json"])
            .args(["--from", "HEAD~1:gitops", "--to", "HEAD:gitops", "--fleet"])
            .arg(&fleet)
            .args(["--own-unit-prefix", "gpu-"])
            .output()
            .unwrap();
        let mut dirs = Vec::new();
        for rev in ["HEAD~1", "HEAD"] {
            checkouts += 1;
            let at = tmp.path().join(format!("checkout-{checkouts}"));
            git(
                &top,
                &[
                    "worktree",
                    "add",
                    "-q",
                    "--detach",
                    at.to_str().unwrap(),
                    rev,
                ],
            );
            dirs.push(at.join("gitops"));
        }
        let own = ["--format", "json", "--own-unit-prefix", "gpu-"];
        let d = plan(&dirs[0], &dirs[1], &fleet, &own);
        assert_eq!(
            o.status.code(),
            d.status.code(),
            "{says}: {}{}",
            stderr(&o),
            stderr(&d)
        );
        if o.status.code() != Some(2) {
            assert_eq!(disruptions(&o), disruptions(&d), "{says}");
        }
        o
    };

    // A .gitattributes at the top, above the path planned.
    std::fs::write(top.join(".gitattributes"), "*.yaml ident\n").unwrap();
    commit("ident");
    let o = both("ident by .gitattributes");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        disruptions(&o).iter().any(|d| d.contains("reboot")),
        "{:?}",
        disruptions(&o)
    );

    // The repository's own attributes: each later edit of the file (a
    // comment) changes its blob, so its expanded `$Id$`.
    std::fs::remove_file(top.join(".gitattributes")).unwrap();
    commit("no attributes");
    let info = String::from_utf8(
        Command::new("git")
            .current_dir(&top)
            .args(["rev-parse", "--git-path", "info/attributes"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let info = top.join(info.trim());
    std::fs::create_dir_all(info.parent().unwrap()).unwrap();
    std::fs::write(&info, "*.yaml ident\n").unwrap();
    let audit = pool.join("99-worker-gpu-audit.yaml");
    std::fs::write(&audit, format!("{AUDIT}# reviewed\n")).unwrap();
    commit("a comment");
    let o = both("ident by info/attributes");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    std::fs::remove_file(&info).unwrap();

    // An encoding a checkout writes: not UTF-8, refused either way.
    std::fs::write(
        top.join(".gitattributes"),
        "*-audit.yaml working-tree-encoding=UTF-16LE-BOM\n",
    )
    .unwrap();
    // Only the attributes: the blob stays the UTF-8 committed.
    git(&top, &["add", ".gitattributes"]);
    git(&top, &["commit", "-q", "-m", "utf-16"]);
    refused(&both("working-tree-encoding"), &["not UTF-8 text"]);
}

/// Review 22 r22b F2: what a revision's checkout may write is bounded before
/// git writes it. A pull request's `.gitattributes` made git expand 4 MiB
/// of `$Id$` lines into 120 MB in `$TMPDIR` (x47 at worst), up to about
/// 6 GB a side under the 128 MiB bound, before any size was checked; and a
/// `filter` ran the user's filter program on the revision's bytes, writing
/// what it likes. Both are refused before git writes anything.
#[test]
fn what_a_revisions_checkout_may_write_is_bounded_before_it_writes() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let top = tmp.path().join("repo");
    let pool = top.join("gitops/worker-gpu");
    render(&pool, &[]);
    git(&top, &["init", "-q"]);
    let commit = |what: &str| {
        git(&top, &["add", "-A"]);
        git(&top, &["commit", "-q", "-m", what]);
    };
    commit("base");
    let fleet = repo().join("examples/fleet/fleet.json");
    let scratch = tmp.path().join("scratch");
    let plan_revisions = |from: &str| {
        std::fs::create_dir_all(&scratch).unwrap();
        bin()
            .current_dir(&top)
            .env("TMPDIR", &scratch)
            .args(["plan", "--from", from, "--to", "HEAD:gitops", "--fleet"])
            .arg(&fleet)
            .output()
            .unwrap()
    };

    // 16 MiB of 64-byte lines, each with a `$Id$`: `ident` may make them
    // 18 times as large (a line of `$Id$` alone, 47 bytes for 4), past the
    // bound of what a checkout may write, wherever its attributes say so.
    std::fs::create_dir(top.join("gitops/notes")).unwrap();
    let notes = top.join("gitops/notes/zz-notes.yaml");
    let line = format!("# $Id$ {}\n", "-".repeat(56));
    assert_eq!(line.len(), 64);
    std::fs::write(&notes, line.repeat(16 << 20 >> 6)).unwrap();
    std::fs::write(top.join(".gitattributes"), "zz-*.yaml ident\n").unwrap();
    commit("ident");
    refused(
        &plan_revisions("HEAD~1:gitops"),
        &["HEAD:gitops", "may write more than 256 MiB", "ident"],
    );
    // The same bytes without the attribute: planned (the control).
    std::fs::remove_file(top.join(".gitattributes")).unwrap();
    commit("no ident");
    let o = plan_revisions("HEAD~2:gitops");
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
    std::fs::remove_file(&notes).unwrap();
    commit("no notes");

    // A filter of the user's config: never run on a revision's bytes.
    let ran = tmp.path().join("ran");
    git(
        &top,
        &[
            "config",
            "filter.pr.smudge",
            &format!("touch '{}'; cat", ran.display()),
        ],
    );
    std::fs::write(top.join(".gitattributes"), "*.yaml filter=pr\n").unwrap();
    commit("filter");
    refused(
        &plan_revisions("HEAD~1:gitops"),
        &["is checked out through the filter \"pr\"", "as a directory"],
    );
    assert!(!ran.exists(), "plan ran the filter on a revision");
    // Review 24 r24a F1: a driver named as check-attr says "no filter"
    // (`unspecified`, `unset`, `set`): the repository's config is never
    // read at a revision, so no driver of it runs.
    for name in ["unspecified", "unset", "set"] {
        git(
            &top,
            &[
                "config",
                &format!("filter.{name}.smudge"),
                &format!("touch '{}'; cat", ran.display()),
            ],
        );
        std::fs::write(
            top.join(".gitattributes"),
            format!("*.yaml filter={name}\n"),
        )
        .unwrap();
        commit(name);
        let o = plan_revisions("HEAD~1:gitops");
        assert!(!ran.exists(), "{name}: plan ran the filter: {}", stderr(&o));
    }
    // The control: git runs it where it checks a manifest out.
    let k = pool.join("kustomization.yaml");
    std::fs::remove_file(&k).unwrap();
    git(&top, &["checkout", "HEAD", "--", k.to_str().unwrap()]);
    assert!(ran.exists(), "git ran no filter: the test proves nothing");
}

/// Review 21 r21c F2: a directory planned that holds a `.git` of its own
/// (an extracted archive, a copied checkout) is an input like its files:
/// the program its config names for git to run (`core.fsmonitor`) never
/// runs, in directory mode or at a revision. It ran as the user planning.
#[test]
fn a_repositorys_own_config_runs_nothing() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("in/a"), tmp.path().join("in/b"));
    render(&base.join("worker-gpu"), &[]);
    render(&pr.join("worker-gpu"), &[]);
    let top = tmp.path().join("in");
    git(&top, &["init", "-q"]);
    git(&top, &["add", "."]);
    git(&top, &["commit", "-q", "-m", "x"]);
    let ran = tmp.path().join("ran");
    let hook = top.join(".git/hook.sh");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", ran.display())).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    git(&top, &["config", "core.fsmonitor", hook.to_str().unwrap()]);
    // The hook runs where git asks it (the control).
    git(&top, &["status", "--porcelain"]);
    assert!(
        ran.exists(),
        "git ran no fsmonitor: the test proves nothing"
    );
    std::fs::remove_file(&ran).unwrap();
    let fleet = repo().join("examples/fleet/fleet.json");
    let o = plan(&base, &pr, &fleet, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        !ran.exists(),
        "plan of a directory ran the repository's program"
    );
    let o = bin()
        .current_dir(&top)
        .args(["plan", "--from", "HEAD:a/", "--to", "HEAD:b/", "--fleet"])
        .arg(&fleet)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        !ran.exists(),
        "plan of a revision ran the repository's program"
    );
}

/// Review 23 r23c F3: git fetches nothing for plan, so no transport program
/// a repository's config names runs: a partial clone's missing object was
/// fetched through its `core.sshCommand`, by `ls-tree --long` at a revision
/// and by `ls-files` expanding a sparse index in a directory. A revision's
/// missing file is an error saying so.
#[test]
fn a_repositorys_transport_runs_nothing() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let top = tmp.path().join("in");
    let (base, pr) = (top.join("a"), top.join("b"));
    render(&base.join("worker-gpu"), &[]);
    render(&pr.join("worker-gpu"), &[]);
    render(&top.join("c/keep"), &[]);
    std::fs::create_dir_all(top.join("c/other")).unwrap();
    std::fs::write(top.join("c/other/x.yaml"), "x: 1\n").unwrap();
    git(&top, &["init", "-q"]);
    git(&top, &["add", "."]);
    git(&top, &["commit", "-q", "-m", "x"]);
    let object = |spec: &str| {
        let o = Command::new("git")
            .current_dir(&top)
            .args(["rev-parse", spec])
            .output()
            .unwrap();
        let id = String::from_utf8(o.stdout).unwrap().trim().to_string();
        top.join(".git/objects").join(&id[..2]).join(&id[2..])
    };
    // A sparse index leaving `c/other` out, whose tree is then missing.
    git(
        &top,
        &["sparse-checkout", "init", "--cone", "--sparse-index"],
    );
    git(&top, &["sparse-checkout", "set", "a", "b", "c/keep"]);
    git(&top, &["config", "index.sparse", "true"]);
    std::fs::remove_file(object("HEAD:c/other")).unwrap();
    let blob = std::fs::read_dir(pr.join("worker-gpu"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.ends_with(".yaml"))
        .unwrap();
    std::fs::remove_file(object(&format!("HEAD:b/worker-gpu/{blob}"))).unwrap();
    let ran = tmp.path().join("ran");
    for (k, v) in [
        ("core.repositoryformatversion", "1"),
        ("extensions.partialClone", "origin"),
        ("remote.origin.url", "ssh://example.invalid/x"),
        ("remote.origin.promisor", "true"),
        // Review 24 r24a F2: beats `protocol.allow=never` given to git.
        ("protocol.ssh.allow", "always"),
        (
            "core.sshCommand",
            &format!("sh -c 'touch {}; exit 1' --", ran.display()),
        ),
    ] {
        git(&top, &["config", k, v]);
    }
    let fleet = repo().join("examples/fleet/fleet.json");
    let o = bin()
        .current_dir(&top)
        .args(["plan", "--from", "HEAD:a/", "--to", "HEAD:b/", "--fleet"])
        .arg(&fleet)
        .output()
        .unwrap();
    refused(&o, &["is not in this repository (a partial clone?)"]);
    assert!(!ran.exists(), "plan of a revision ran the ssh program");
    let o = plan(&top.join("c"), &top.join("c"), &fleet, &[]);
    assert!(
        !ran.exists(),
        "plan of a directory ran the ssh program: {}",
        stderr(&o)
    );
    // The control: git itself fetches through it.
    let o = Command::new("git")
        .current_dir(&top)
        .args(["ls-files", "--stage"])
        .output()
        .unwrap();
    assert!(ran.exists(), "git ran no ssh program: {}", stderr(&o));
}

/// Review 21 r21b F7: a kustomization may leave out only what holds the
/// cluster's MachineConfiguration alone (render's `cluster-wide/`), told by
/// what it holds, not by its name: our labels MachineConfig renamed
/// `machineconfiguration-labels.yaml`, or moved into `cluster-wide/`, and
/// dropped from the list is no longer applied (Argo CD prunes it: every node
/// registers without our taints), and was planned "no change".
#[test]
fn only_a_policy_may_be_left_out_of_a_kustomization_whatever_its_name() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base.join("worker-gpu"), &[]);
    let fleet = repo().join("examples/fleet/fleet.json");
    let labels = "50-worker-gpu-kubelet-labeler-labels.yaml";
    for (i, (to, says)) in [
        (
            "machineconfiguration-labels.yaml",
            "machineconfiguration-labels.yaml left out of its resources",
        ),
        (
            "cluster-wide/50-labels.yaml",
            "directory cluster-wide left out of its resources",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let pr = tmp.path().join(format!("pr-{i}"));
        let gpu = pr.join("worker-gpu");
        render(&gpu, &[]);
        std::fs::rename(gpu.join(labels), gpu.join(to)).unwrap();
        crate::support::relist_kustomization(&gpu, &[], &[labels]);
        let o = plan(&base, &pr, &fleet, &["--prune", "--fail-on", "taint"]);
        refused(
            &o,
            &[says, "holding the MachineConfiguration `cluster` alone"],
        );
    }
    // Control: a file of any name holding the cluster's policy alone may
    // be left out (applied server-side apart), as render's own is.
    let pr = tmp.path().join("pr");
    render(&pr.join("worker-gpu"), &[]);
    std::fs::write(
        pr.join("worker-gpu/cluster-wide/team-policy.yaml"),
        "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata:\n  \
         name: cluster\nspec:\n  nodeDisruptionPolicy:\n    files:\n    - path: /etc/x\n      \
         actions:\n      - type: None\n",
    )
    .unwrap();
    let o = plan(&base, &pr, &fleet, &["--prune", "--fail-on", "taint"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `cmd` run to its end, or killed past `secs` and the test failed: a
/// plan that hangs fails the test instead of hanging CI.
fn output_within(cmd: &mut Command, secs: u64, what: &str) -> Output {
    use std::process::Stdio;
    let dir = scratch_dir();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed().as_secs() >= secs {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "{what}: still running after {secs} s, killed: {}",
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: std::fs::read(&out).unwrap(),
        stderr: std::fs::read(&err).unwrap(),
    }
}

/// Review 25 r25a F3: plan never points git at the repository it reads
/// (in git mode nor in directory mode), so nothing of its config is read:
/// `include.path = /proc/self/fd/1` made git wait for ever on its own
/// standard output, and plan with it. The revisions people write (`HEAD`,
/// `HEAD~1`, a branch, a packed tag, a remote branch, full and abbreviated
/// commits) resolve as before, in the repository and in a linked worktree
/// of it.
#[test]
fn a_repositorys_config_include_is_never_read() {
    if !skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let top = committed_render(tmp.path());
    git(&top, &["tag", "base"]);
    git(&top, &["pack-refs", "--all"]);
    std::fs::remove_dir_all(top.join("gitops/worker-gpu")).unwrap();
    render(
        &top.join("gitops/worker-gpu"),
        &["--taint", "example.com/gpu=true:NoSchedule"],
    );
    git(&top, &["add", "-A"]);
    git(&top, &["commit", "-q", "-m", "pr"]);
    git(&top, &["branch", "pr"]);
    git(&top, &["update-ref", "refs/remotes/origin/main", "HEAD~1"]);
    let wt = tmp.path().join("wt");
    git(
        &top,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            wt.to_str().unwrap(),
            "base",
        ],
    );
    let head = Command::new("git")
        .current_dir(&top)
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    let head = String::from_utf8(head.stdout).unwrap().trim().to_string();
    let fleet = repo().join("examples/fleet/fleet.json");
    let abbrev = format!("{}:gitops", &head[..10]);
    let full = format!("{head}:gitops/");
    let cases = [
        (&top, "HEAD~1:gitops", "HEAD:gitops"),
        (&top, "base:gitops", "pr:gitops"),
        (&top, "origin/main:gitops/", abbrev.as_str()),
        (&top, full.as_str(), "origin/main:gitops"),
        // Directory mode in that work tree, and against a revision.
        (&top, "gitops", "gitops/"),
        (&top, "base:gitops", "gitops"),
        // A linked worktree (a gitfile, its commondir): its HEAD is base.
        (&wt, "HEAD:gitops", "pr:gitops"),
        (&wt, "gitops", "HEAD:gitops"),
    ];
    let plans = || -> Vec<(String, Output)> {
        cases
            .iter()
            .map(|(dir, from, to)| {
                let mut cmd = bin();
                cmd.current_dir(dir)
                    .args(["plan", "--from", from, "--to", to, "--fleet"])
                    .arg(&fleet);
                let what = format!("plan {from} -> {to} in {}", dir.display());
                let o = output_within(&mut cmd, 60, &what);
                (what, o)
            })
            .collect()
    };
    // The control: each planned (the pull request's taint a change).
    let before = plans();
    for (what, o) in &before {
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{what}: {}",
            stderr(o)
        );
    }
    assert!(before.iter().any(|(_, o)| o.status.code() == Some(1)));
    // From here git itself hangs in the repository, its standard output a
    // pipe (the control, bounded).
    git(&top, &["config", "include.path", "/proc/self/fd/1"]);
    let mut control = Command::new("timeout");
    control
        .args(["5", "sh", "-c", "git rev-parse --show-toplevel | cat"])
        .current_dir(&top);
    let o = output_within(&mut control, 30, "git itself");
    assert_eq!(
        o.status.code(),
        Some(124),
        "git did not hang: {}",
        stderr(&o)
    );
    // Planned as before, within the test's bound.
    for ((what, o), (_, was)) in plans().iter().zip(&before) {
        assert_eq!(o.status.code(), was.status.code(), "{what}: {}", stderr(o));
        assert_eq!(o.stdout, was.stdout, "{what}");
    }
}

/// Every git plan runs has a deadline: a repository where git waits for
/// ever (here a FIFO in place of the commit's object, which git opens) is
/// refused once it has passed, naming the input and what to do. The
/// deadline (two minutes) is lowered for the test.
#[test]
fn git_waiting_for_ever_is_stopped() {
    if !skipped::need("git") || !skipped::need("mkfifo") {
        return;
    }
    let tmp = scratch_dir();
    let top = committed_render(tmp.path());
    let head = Command::new("git")
        .current_dir(&top)
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    let head = String::from_utf8(head.stdout).unwrap().trim().to_string();
    let object = top.join(".git/objects").join(&head[..2]).join(&head[2..]);
    std::fs::remove_file(&object).unwrap();
    let made = Command::new("mkfifo").arg(&object).status().unwrap();
    assert!(made.success());
    let mut cmd = bin();
    cmd.current_dir(&top)
        .env("KUBELET_LABELER_TEST_CHILD_DEADLINE_MS", "2000")
        .args([
            "plan",
            "--from",
            "HEAD:gitops",
            "--to",
            "HEAD:gitops",
            "--fleet",
        ])
        .arg(repo().join("examples/fleet/fleet.json"));
    let o = output_within(&mut cmd, 60, "plan of a FIFO object");
    refused(
        &o,
        &[
            "HEAD:gitops: git cat-file --batch-check HEAD",
            "did not finish within 2 s and was stopped",
            "plan a copy of the files without .git",
        ],
    );
}
