//! Which files of a render `plan` reads, as the appliers it stands for
//! apply them (`oc apply -R`, Argo CD's directory walk): every manifest of
//! a directory or of a git revision's tree, or a refusal naming the file
//! (a link, a submodule, a builder's or an applier's settings), never a
//! silent pass.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::ffi::OsStringExt as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::cli::render::input;

// A sibling file (plan's module list is not this file's to change).
#[path = "git_alternates.rs"]
mod git_alternates;
#[path = "git_bounds.rs"]
mod git_bounds;
#[path = "git_dir.rs"]
mod git_dir;
#[path = "git_index.rs"]
mod git_index;
#[path = "git_run.rs"]
mod git_run;
#[path = "repo_format.rs"]
mod repo_format;

use git_run::{BORROWED, Exited, Stopped, git_command, git_output, run_git};

/// The most one render (all its files) may hold: a pool's MachineConfigs
/// with four architectures' wrappers are about 1 MiB.
const RENDER_MAX_BYTES: u64 = 128 << 20;
/// The most a revision's checkout may write into plan's scratch directory
/// (review 22 r22b F2): what its attributes may make of the blobs, known
/// before git writes any.
const CHECKOUT_MAX_BYTES: u64 = 2 * RENDER_MAX_BYTES;
/// What `ident` may make of a blob at most: `$Id$` (4 bytes) becomes
/// `$Id: <object> $`, 47 bytes with SHA-1, 71 with SHA-256.
const IDENT_GROWTH: u64 = 18;
/// The most `git ls-tree` may list under a render's path: about 200,000
/// files.
const LISTING_MAX_BYTES: u64 = 32 << 20;
/// The most manifest files one render may hold (a pool's render is a
/// handful; a GitOps tree of many clusters a few thousand): past it the
/// walk stops, whatever their sizes (review 20 r20b F7).
const MAX_MANIFESTS: usize = 50_000;

fn too_many(spec: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{spec}: more than {MAX_MANIFESTS} manifest files; give plan the directory of the pools \
         the change touches"
    )
}

/// One manifest file of a render: its name as shown, the directory it is
/// in and its own name (told apart when read, not from the shown name: a
/// file name may hold `:` or `/`-free text that looks like another's).
pub struct ManifestFile {
    pub name: String,
    pub dir: String,
    pub file: String,
    pub text: String,
}

/// The YAML and JSON files of a directory (recursively, hidden ones read
/// as `oc apply -R` reads them, `.git` apart)
/// or one file, at most `RENDER_MAX_BYTES` in all. A directory's files are
/// read inside it (`input::read_entry`): a link is refused, never followed
/// nor skipped (`oc apply -f` would apply what it names).
pub fn local_texts(path: &Path, spec: &str) -> Result<Vec<ManifestFile>> {
    use crate::cli::render::input::Limit;
    let mut files = Vec::new();
    if !path.is_dir() {
        let mut text = String::new();
        std::fs::File::open(path)
            .with_context(|| format!("{spec}: opening {}", path.display()))?
            .take(RENDER_MAX_BYTES + 1)
            .read_to_string(&mut text)
            .with_context(|| format!("{spec}: reading {} as UTF-8 text", path.display()))?;
        if text.len() as u64 > RENDER_MAX_BYTES {
            bail!(
                "{spec}: more than {} MiB of manifests",
                RENDER_MAX_BYTES >> 20
            );
        }
        return Ok(vec![local_file(path, text)]);
    }
    let mut repos = Vec::new();
    walk(path, &mut files, &mut repos, spec)?;
    unchecked_out_submodules(path, &repos, spec)?;
    files.sort();
    let mut total = 0u64;
    let mut out = Vec::new();
    let mut opened: Option<(PathBuf, crate::node::nodefs::Dir)> = None;
    for f in files {
        let (Some(dir), Some(name)) = (f.parent(), f.file_name()) else {
            continue;
        };
        if opened.as_ref().is_none_or(|(d, _)| d != dir) {
            let at = input::open_dir(dir).with_context(|| spec.to_string())?;
            opened = Some((dir.to_path_buf(), at));
        }
        let Some((_, at)) = &opened else { continue };
        let limit = Limit {
            flag: "plan",
            bytes: RENDER_MAX_BYTES - total,
        };
        let bytes = input::read_entry(at, &f, name, limit).map_err(|e| {
            if format!("{e:#}").contains(" is larger than ") {
                anyhow::anyhow!(
                    "{spec}: more than {} MiB of manifests; give the directory of the pools to plan",
                    RENDER_MAX_BYTES >> 20
                )
            } else {
                e.context(spec.to_string())
            }
        })?;
        total += bytes.len() as u64;
        let text = String::from_utf8(bytes).map_err(|_| {
            anyhow::anyhow!("{spec}: reading {} as UTF-8 text: not UTF-8", f.display())
        })?;
        out.push(local_file(&f, text));
    }
    Ok(out)
}

/// Refuse a submodule under `dir` that is not checked out (review 20
/// r20b F2): it reads as an empty directory, while Argo CD checks it out
/// (recursively) and applies what it holds. Every repository the walk
/// entered is asked, not only the first (review 21 r21b F4): `repos` holds
/// each directory under `dir` with a `.git` of its own (a checked-out
/// submodule, whose own submodules its parent's index does not list), and
/// `dir` itself is asked when it or a directory above it holds a `.git`.
/// Where a `.git` is, its index must be read: a failure (git missing, a
/// broken `.git`) is an error naming the repository, never a pass.
/// Without any `.git` (a tarball, `git archive`) there is nothing to tell.
fn unchecked_out_submodules(dir: &Path, repos: &[PathBuf], spec: &str) -> Result<()> {
    let cannot = |repo: &Path, e: anyhow::Error| {
        // A `Stopped` git child (plan's budget of git's time spent,
        // perhaps by another repository) is no broken repository (review
        // 36 r36b F2).
        if e.is::<git_index::Sparse>() || e.is::<Stopped>() {
            return e.context(spec.to_string());
        }
        anyhow::anyhow!(
            "{spec}: git cannot read the repository of {} ({e:#}): plan cannot tell which \
             of its submodules are not checked out (Argo CD checks them out and applies \
             them); repair it, or plan a copy without .git",
            repo.display()
        )
    };
    let mut asked: Vec<(&Path, git_dir::Repo)> = Vec::new();
    if !repos.iter().any(|r| r == dir) {
        match git_dir::discover(dir) {
            Ok(Some(found)) => asked.push((dir, found)),
            Ok(None) => {}
            Err(e) => return Err(cannot(dir, e)),
        }
    }
    for repo in repos {
        match git_dir::discover(repo) {
            Ok(Some(found)) => asked.push((repo, found)),
            Ok(None) => return Err(cannot(repo, anyhow::anyhow!("its .git is gone"))),
            Err(e) => return Err(cannot(repo, e)),
        }
    }
    for (repo, found) in asked {
        let listing = index_listing(&found, repo, spec).map_err(|e| cannot(repo, e))?;
        for entry in listing.split(|&b| b == 0).filter(|e| !e.is_empty()) {
            let entry = String::from_utf8_lossy(entry);
            let Some((meta, name)) = entry.split_once('\t') else {
                continue;
            };
            if meta.starts_with("160000 ") && !has_git(&repo.join(name)) {
                let shown = repo.join(name);
                let shown = shown.strip_prefix(dir).unwrap_or(&shown);
                bail!(
                    "{spec}: {} is a git submodule that is not checked out: Argo CD checks it \
                     out and applies its manifests, which plan cannot see here; run `git \
                     submodule update --init --recursive` first, or remove it",
                    shown.display()
                );
            }
        }
    }
    Ok(())
}

/// Whether `dir` holds a `.git` (a directory, or the file of a linked
/// worktree or a submodule), whatever it is: its repository is then read.
fn has_git(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(".git")).is_ok()
}

/// What the index of `repo` lists at and under `dir` (`git ls-files
/// --stage -z`, names relative to `dir`), read by git in a scratch
/// repository borrowing its objects (a sparse index is expanded from
/// them) with `GIT_INDEX_FILE` naming its index (a split index's shared
/// one is found beside it): none of `repo`'s config is read (review 25
/// r25a F3). No index (a repository without a commit): nothing listed.
fn index_listing(repo: &git_dir::Repo, dir: &Path, spec: &str) -> Result<Vec<u8>> {
    let index = repo.git_dir.join("index");
    match std::fs::symlink_metadata(&index) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", index.display())),
        Ok(m) if !m.is_file() => bail!(
            "{} is not a regular file (a link, a FIFO, a device), not read",
            index.display()
        ),
        Ok(_) => {}
    }
    let at = std::fs::canonicalize(dir).with_context(|| format!("reading {}", dir.display()))?;
    let most = git_index::checked(repo, &index)?;
    let scratch = borrowed_repo(repo, false, spec)?;
    let mut git = git_command();
    git.current_dir(&at)
        .env("GIT_INDEX_FILE", &index)
        .env("GIT_ALLOC_LIMIT", most.to_string())
        .arg(format!("--git-dir={}", scratch.path().display()))
        .arg(format!("--work-tree={}", repo.top.display()))
        .args(["ls-files", "--stage", "-z", "--", "."]);
    run_git(&mut git, None, LISTING_MAX_BYTES)
}

/// Whether `rev` names a commit of the git repository of the working
/// directory (where `git_texts` reads `REV:PATH`): true only when it
/// does. Where plan cannot tell (see `revision`), false here, and
/// `check_no_link` refuses the path: the answer is never read as a no.
pub fn is_revision(rev: &str) -> bool {
    matches!(revision(rev), Ok(Some(_)))
}

/// What `rev` is in the git repository of the working directory, resolved
/// as `git_texts` does, in a scratch repository: its commit, None when it
/// names none (outside a repository, not a revision plan takes, or git
/// says it names no commit), or an error when plan cannot tell (review 26
/// r26b F2: a ref store plan refuses, git stopped at its deadline, any
/// other failure of git's, were read as "not a revision", and a directory
/// named like `HEAD:gitops` planned in place of the revision). Asked once
/// per revision and working directory (a deadline is paid once).
fn revision(rev: &str) -> Result<Option<String>> {
    use std::sync::Mutex;
    type Answers = Vec<((PathBuf, String), Result<Option<String>, String>)>;
    static ANSWERS: Mutex<Answers> = Mutex::new(Vec::new());
    let key = (std::env::current_dir().unwrap_or_default(), rev.to_string());
    let known = ANSWERS.lock().ok().and_then(|a| {
        a.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, answer)| answer.clone())
    });
    let answer = match known {
        Some(answer) => answer,
        None => {
            let answer = resolve(rev).map_err(|e| format!("{e:#}"));
            if let Ok(mut all) = ANSWERS.lock() {
                all.push((key, answer.clone()));
            }
            answer
        }
    };
    answer.map_err(|e| anyhow::anyhow!(e))
}

fn resolve(rev: &str) -> Result<Option<String>> {
    // A path's spelling (`./HEAD:gitops`, the ambiguity's advice): no ref
    // name starts with `.` or `/`, so it is no revision to git.
    if rev.is_empty() || rev.starts_with(['-', '.', '/']) {
        return Ok(None);
    }
    let Some(repo) = git_dir::discover(Path::new("."))? else {
        return Ok(None);
    };
    let scratch = borrowed_repo(&repo, true, rev)?;
    commit_in(&repo, scratch.path(), rev)
}

/// The commit `rev` names in `repo`, resolved in plan's copy `scratch` of
/// its refs, refused where git would read what plan did not copy (review
/// 29 r29b F1: git mode skipped these checks).
fn commit_in(repo: &git_dir::Repo, scratch: &Path, rev: &str) -> Result<Option<String>> {
    git_dir::revision_plan_reads(rev)?;
    git_dir::lookups_copied(repo, scratch, rev)?;
    git_bounds::check_revision(scratch, rev)?;
    commit_of(scratch, rev)
}

/// The commit `rev` names in the scratch repository `git_dir` (which holds
/// the refs of the repository it borrows from: `git_dir::copy_refs`), or
/// None when git says it names no commit (`rev-parse --verify --quiet`
/// exits 1: unknown, or not a commit); any other failure (an ambiguous
/// abbreviation, git stopped, a fatal error) is an error.
fn commit_of(git_dir: &Path, rev: &str) -> Result<Option<String>> {
    let commit = format!("{rev}^{{commit}}");
    let git_dir = format!("--git-dir={}", git_dir.display());
    let out = git_output(
        &[&git_dir, "rev-parse", "--verify", "--quiet", &commit],
        None,
        1 << 16,
    );
    match out {
        Ok(out) => Ok(Some(String::from_utf8_lossy(&out).trim().to_string())),
        Err(e) => match e.downcast_ref::<Exited>() {
            Some(Exited(Some(1), said)) if !said.contains("ambiguous") => Ok(None),
            _ => Err(e.context(format!("git rev-parse {rev}"))),
        },
    }
}

/// Refuse a spec given as a path that may also be `REV:PATH` where plan
/// cannot tell whether REV is a revision (see `revision`): which is meant
/// is never guessed (review 23 r23b F4; review 26 r26b F2).
fn check_no_untold_revision(spec: &str) -> Result<()> {
    let Some((rev, sub)) = spec.split_once(':') else {
        return Ok(());
    };
    if let Err(e) = revision(rev) {
        bail!(
            "{spec}: a path of the working directory, and maybe {sub:?} of git revision \
             {rev:?}, which plan cannot resolve ({e:#}); plan does not guess which is meant: \
             give `./{spec}` for the path, or move or rename the path and repair the repository \
             to read the revision"
        );
    }
    Ok(())
}

/// Refuse a link on the way to a render given as a path (the spec itself,
/// or a directory of it) where the tree plan reads makes its links: in a
/// git work tree, or at or below the current directory (a checkout, an
/// unpacked tree). Where it points is the tree's content, which a pull
/// request can set (review 23 r23b F4: a committed `HEAD:gitops` link to
/// any directory was read), as the writers refuse one
/// (`render::checked_dir`). A link elsewhere (`/tmp` on some systems) is
/// the machine's, and followed.
pub fn check_no_link(spec: &str) -> Result<()> {
    check_no_untold_revision(spec)?;
    let trimmed = spec.trim_end_matches('/');
    let cwd = std::fs::canonicalize(".").ok();
    for at in Path::new(trimmed).ancestors() {
        if at.as_os_str().is_empty()
            || !std::fs::symlink_metadata(at).is_ok_and(|m| m.file_type().is_symlink())
        {
            continue;
        }
        let parent = at.parent().filter(|p| !p.as_os_str().is_empty());
        let parent = parent.unwrap_or(Path::new("."));
        let real = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
        let place = if let Some(tree) = real.ancestors().find(|d| has_git(d)) {
            format!("in the git work tree {}", tree.display())
        } else if let Some(cwd) = cwd.as_ref().filter(|c| real.starts_with(c)) {
            format!("below the current directory {}", cwd.display())
        } else {
            continue;
        };
        bail!(
            "{spec}: {} is a symlink {place}: where it points is the tree's content, which a \
             pull request can set; not following it: give the directory it leads to",
            at.display()
        );
    }
    Ok(())
}

fn local_file(path: &Path, text: String) -> ManifestFile {
    ManifestFile {
        name: path.display().to_string(),
        dir: path.parent().unwrap_or(Path::new("")).display().to_string(),
        file: path
            .file_name()
            .map_or(String::new(), |f| f.to_string_lossy().into_owned()),
        text,
    }
}

/// The manifests under `dir` into `out`, and each directory holding a
/// `.git` (a repository of its own: see `unchecked_out_submodules`) into
/// `repos`.
fn walk(dir: &Path, out: &mut Vec<PathBuf>, repos: &mut Vec<PathBuf>, spec: &str) -> Result<()> {
    for entry in
        std::fs::read_dir(dir).with_context(|| format!("{spec}: reading {}", dir.display()))?
    {
        let entry = entry.with_context(|| format!("{spec}: reading {}", dir.display()))?;
        let p = entry.path();
        let meta =
            std::fs::symlink_metadata(&p).with_context(|| format!("{spec}: {}", p.display()))?;
        if entry.file_name() == ".git" {
            // Git's own (never in a tree, so never a PR's): its repository
            // is asked about its submodules. Hidden directories are
            // applied as any (`oc apply -R`, Argo CD's directory walk;
            // review 19).
            repos.push(dir.to_path_buf());
        } else if meta.is_dir() {
            walk(&p, out, repos, spec)?;
        } else if let Some(what) = other_builder(&p) {
            bail!("{spec}: {}: {what}", p.display());
        } else if is_manifest(&p) {
            // Whatever it is (a link, a FIFO): read_entry says.
            if out.len() >= MAX_MANIFESTS {
                return Err(too_many(spec));
            }
            out.push(p);
        }
    }
    Ok(())
}

/// Why a file makes Argo CD apply other than the manifests plan reads: a
/// Helm chart's `Chart.yaml` (only its rendered templates are applied),
/// Jsonnet (run, its output applied).
fn other_builder(p: &Path) -> Option<&'static str> {
    let name = p.file_name()?.to_str()?;
    // Argo CD takes a directory holding a name ending so for a chart.
    if name.ends_with("Chart.yaml") || name.ends_with("Chart.yml") {
        return Some(
            "a Helm chart: Argo CD applies the chart's rendered templates, not the manifests \
             plan reads; give plan `helm template` output instead",
        );
    }
    // Argo CD merges these into the Application's source before it builds
    // (a directory's include and exclude, kustomize's patches, Helm's
    // values): what it applies is no longer the tree (review 19).
    if name == ".argocd-source.yaml"
        || (name.starts_with(".argocd-source-") && name.ends_with(".yaml"))
    {
        return Some(
            "Argo CD's parameter overrides, merged into the Application's source (what it \
             includes, excludes, patches): it applies other than the manifests plan reads; \
             set them in the Application and plan what it then applies",
        );
    }
    input::has_extension(p.file_name()?, &["jsonnet", "libsonnet"]).then_some(
        "Jsonnet, which Argo CD runs and applies the output of; give plan that output \
         (`jsonnet` on it) instead",
    )
}

/// A manifest's name, or a kustomization's (checked, see
/// `input::check_kustomization`).
fn is_manifest(p: &Path) -> bool {
    p.file_name().is_some_and(|n| {
        input::KUSTOMIZATION_NAMES.iter().any(|k| n == *k)
            || input::has_extension(n, &input::KUBECTL_EXTENSIONS)
    })
}

/// The manifests under `sub` at git revision `rev` of the repository the
/// working directory is in (`git show REV:PATH` spelling), read with git
/// itself: nothing is checked out or written.
pub fn git_texts(rev: &str, sub: &str, spec: &str) -> Result<Vec<ManifestFile>> {
    let git = |args: &[&str], input: Option<Vec<u8>>, cap: u64| -> Result<Vec<u8>> {
        git_output(args, input, cap).with_context(|| format!("{spec}: git {}", args.join(" ")))
    };
    // The repository found without git, and the revision resolved in a
    // scratch repository given its refs: git never reads its config
    // (review 25 r25a F3: an include of `/proc/self/fd/1` hung plan).
    let repo = git_dir::discover(Path::new("."))
        .with_context(|| format!("{spec}: finding the git repository of the working directory"))?
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{spec}: not a file, and the working directory is in no git repository for REV:PATH"
            )
        })?;
    let top = repo.top.display().to_string();
    if rev.is_empty() || rev.starts_with('-') {
        bail!("{spec}: {rev:?} is no git revision; give a branch, tag or commit");
    }
    let borrowed = borrowed_repo(&repo, true, spec)?;
    let commit = match commit_in(&repo, borrowed.path(), rev) {
        Ok(Some(commit)) => commit,
        Err(e) => return Err(e.context(spec.to_string())),
        Ok(None) => bail!(
            "{spec}: {rev:?} is no git revision of {top}; give a branch, tag or commit (git fetch \
             first for origin/...; plan reads none of the repository's config, so \
             `@{{upstream}}` is unknown to it: name the remote branch)"
        ),
    };
    let cwd = std::fs::canonicalize(".")
        .with_context(|| format!("{spec}: finding the current directory"))?;
    let sub = git_dir::tree_path(&repo, &cwd, sub).with_context(|| spec.to_string())?;
    let sub = sub.as_str();
    let git_dir = format!("--git-dir={}", borrowed.path().display());
    git_bounds::check_tree_path(&git_dir, &commit, sub).with_context(|| spec.to_string())?;
    // With each blob's size (`<mode> <type> <object> <size>\t<name>`): the
    // total is known before any blob is read (a blob git stores in a few
    // MiB may hold gigabytes of zeros, and git hands it over whole). The
    // listing itself is bounded: a tree of millions of files is refused.
    let listing = git(
        &[
            &git_dir, "ls-tree", "-r", "-z", "--long", &commit, "--", sub,
        ],
        None,
        LISTING_MAX_BYTES,
    )?;
    let mut blobs = Vec::new();
    let mut total = 0u64;
    // The scratch index of the checkout: what the listing holds (the
    // manifests, the `.gitattributes` under `sub`) and the `.gitattributes`
    // above it, never the whole commit (review 26 r26b F5: a tree DAG of
    // 2^20 paths beside `sub`, 40 objects, was expanded by `read-tree`).
    let (mut index, mut attributes) = attributes_above(&git_dir, &commit, sub, spec)?;
    for entry in listing.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        let Some((meta, name)) = entry.split_once('\t') else {
            continue;
        };
        // Every entry read or refused (review 19): a submodule is checked
        // out and applied by Argo CD, its manifests are not in this tree.
        if meta.split_whitespace().nth(1) == Some("commit") {
            bail!(
                "{spec}: {name} is a git submodule: Argo CD checks it out and applies its \
                 manifests, which are not at this revision of this repository; plan a checkout \
                 with its submodules (a directory), or remove it"
            );
        }
        if let Some(what) = other_builder(Path::new(name)) {
            bail!("{spec}: {name}: {what}");
        }
        if is_attributes(name) {
            index_entry(&mut index, meta, name);
            attributes = attributes.saturating_add(long_size(meta));
        }
        if !is_manifest(Path::new(name)) {
            continue;
        }
        if meta.split_whitespace().next() == Some("120000") {
            bail!(
                "{spec}: {name} is a symbolic link, not followed: `oc apply -f` on the directory \
                 would apply what it names, which may be outside it; make it a regular file"
            );
        }
        let mut fields = meta.split_whitespace().skip(1);
        let (Some("blob"), Some(object), Some(size)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        // A size git cannot tell (`BAD`): the object is not in the
        // repository, a partial clone's, which plan does not fetch.
        let Ok(size) = size.parse::<u64>() else {
            bail!(
                "{spec}: {name} ({object}) is not in this repository (a partial clone?); plan \
                 fetches nothing: fetch the revision's files first (`git fetch` without \
                 --filter), or plan a checkout of it as a directory"
            );
        };
        total = total.saturating_add(size);
        if blobs.len() >= MAX_MANIFESTS {
            return Err(too_many(spec));
        }
        index_entry(&mut index, meta, name);
        blobs.push((name.to_string(), object.to_string(), size));
    }
    if total > RENDER_MAX_BYTES {
        bail!(
            "{spec}: more than {} MiB of manifests",
            RENDER_MAX_BYTES >> 20
        );
    }
    if attributes > ATTRIBUTES_MAX_BYTES {
        bail!(
            "{spec}: more than {} KiB of .gitattributes on the planned path, which git holds as \
             rules many times their size for the checkout; a GitOps repository's are a few \
             lines: shorten them, or plan a checkout of the revision as a directory",
            ATTRIBUTES_MAX_BYTES >> 10
        );
    }
    // Review 43 r43b F1: 200 listed empty files 1,900 directories deep
    // (150 bytes of pack each) were 377,000 inodes of scratch.
    crate::cli::render::check_tree_shape(blobs.iter().map(|(n, _, _)| n.as_str()))
        .with_context(|| spec.to_string())?;
    let out = checked_out(&git_dir, index, rev, blobs, spec)?;
    if out.is_empty() {
        bail!("{spec}: no *.yaml, *.yml or *.json file under {sub:?} at {rev}");
    }
    Ok(out)
}

/// The most bytes of `.gitattributes` a checkout of a revision may apply
/// (review 33 r33b F5: git held 20 MiB of them as 475 MB of rules, once
/// per directory they apply to; a few KiB packed; review 34 r34b F2: 1 MiB
/// of them made a plan of 5,000 manifests take 43 s, not 7 s). A GitOps
/// repository's are a few lines.
const ATTRIBUTES_MAX_BYTES: u64 = 64 << 10;

/// The size of `ls-tree --long`'s `<mode> <type> <object> <size>`; a size
/// git cannot tell counts as past any bound.
fn long_size(meta: &str) -> u64 {
    (meta.split_whitespace().nth(3))
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX)
}

fn is_attributes(name: &str) -> bool {
    name == ".gitattributes" || name.ends_with("/.gitattributes")
}

/// `<mode> <object>\t<name>` (of `ls-tree`'s `<mode> <type> <object>`)
/// added to `index` as `git update-index -z --index-info` reads it.
fn index_entry(index: &mut Vec<u8>, meta: &str, name: &str) {
    let mut fields = meta.split_whitespace();
    let (Some(mode), Some(object)) = (fields.next(), fields.nth(1)) else {
        return;
    };
    index.extend_from_slice(format!("{mode} {object}\t{name}").as_bytes());
    index.push(0);
}

/// The index entries (as `index_entry`) of the `.gitattributes` of each
/// directory above `sub` at `commit` (the top's, `a/`'s for `a/b`), which
/// a checkout of `sub` applies: asked of git by name, one entry each;
/// and their size in all.
fn attributes_above(git_dir: &str, commit: &str, sub: &str, spec: &str) -> Result<(Vec<u8>, u64)> {
    let parts: Vec<&str> = sub
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let mut asked = Vec::new();
    for depth in 0..parts.len() {
        let mut dir = parts[..depth].join("/");
        if !dir.is_empty() {
            dir.push('/');
        }
        asked.push(format!("{dir}.gitattributes"));
    }
    let (mut index, mut size) = (Vec::new(), 0u64);
    if asked.is_empty() {
        return Ok((index, size));
    }
    let mut args = vec![git_dir, "ls-tree", "-z", "--long", commit, "--"];
    args.extend(asked.iter().map(String::as_str));
    let listing = git_output(&args, None, 1 << 20)
        .with_context(|| format!("{spec}: git {}", args.join(" ")))?;
    for entry in listing.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        if let Some((meta, name)) = entry.split_once('\t')
            && asked.iter().any(|a| a == name)
        {
            index_entry(&mut index, meta, name);
            size = size.saturating_add(long_size(meta));
        }
    }
    Ok((index, size))
}

/// The blobs `(name, object, size)` as a checkout of `commit` writes them
/// (review 21 r21b F8): the attributes of that revision's `.gitattributes`
/// (at any level, above the path planned too) and of the repository's own
/// (`$GIT_DIR/info/attributes`, `core.attributesFile`) applied with its
/// configuration (`ident`, `text`/`eol`; a `filter` or another encoding
/// refused, see `checkout_fits`), so a revision planned reads as its checkout
/// planned as a directory. Git itself checks them out: from a scratch
/// index made of `index` (`update-index --index-info`: the blobs and the
/// revision's `.gitattributes` that apply to them, nothing else of the
/// revision) into a scratch work tree, removed after, with any git
/// (`--attr-source` needs 2.40).
fn checked_out(
    git_dir: &str,
    index_info: Vec<u8>,
    rev: &str,
    blobs: Vec<(String, String, u64)>,
    spec: &str,
) -> Result<Vec<ManifestFile>> {
    let scratch =
        tempfile::tempdir().with_context(|| format!("{spec}: making a scratch directory"))?;
    let index = scratch.path().join("index");
    let work = scratch.path().join("work");
    std::fs::create_dir(&work).with_context(|| format!("{spec}: making {}", work.display()))?;
    let with_index = |args: &[&str], input: Option<Vec<u8>>, cap: u64| -> Result<Vec<u8>> {
        let mut git = git_command();
        // Blobs of `CHECKOUT_MAX_BYTES` at most, each held while converted.
        git.env("GIT_INDEX_FILE", &index)
            .env("GIT_ALLOC_LIMIT", (2 * CHECKOUT_MAX_BYTES).to_string())
            .arg(git_dir)
            .args(args);
        run_git(&mut git, input, cap).with_context(|| format!("{spec}: git {}", args.join(" ")))
    };
    with_index(
        &["update-index", "-z", "--index-info"],
        Some(index_info),
        1 << 20,
    )?;
    let mut names = Vec::new();
    for (name, _, _) in &blobs {
        names.extend_from_slice(name.as_bytes());
        names.push(0);
    }
    // Each name three times, with the attribute and its value.
    let cap = 3 * names.len() as u64 + 256 * blobs.len() as u64 + (1 << 20);
    let attributes = with_index(
        &[
            "check-attr",
            "--cached",
            "-z",
            "--stdin",
            "ident",
            "filter",
            "working-tree-encoding",
        ],
        Some(names.clone()),
        cap,
    )?;
    checkout_fits(&attributes, &blobs, CHECKOUT_MAX_BYTES, spec)?;
    let work_tree = format!("--work-tree={}", work.display());
    with_index(
        &[&work_tree, "checkout-index", "-z", "--stdin"],
        Some(names),
        1 << 20,
    )?;
    let mut out = Vec::new();
    let mut total = 0u64;
    for (name, _, _) in blobs {
        let path = work.join(&name);
        let meta = std::fs::symlink_metadata(&path)
            .with_context(|| format!("{spec}: {name} as checked out"))?;
        total += meta.len();
        if !meta.is_file() || total > RENDER_MAX_BYTES {
            bail!(
                "{spec}: {name}: not a regular file of at most {} MiB of manifests as checked out",
                RENDER_MAX_BYTES >> 20
            );
        }
        let bytes = std::fs::read(&path).with_context(|| format!("{spec}: reading {name}"))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| anyhow::anyhow!("{spec}: {name} is not UTF-8 text as checked out"))?;
        let (dir, file) = name.rsplit_once('/').unwrap_or(("", &name));
        out.push(ManifestFile {
            name: format!("{rev}:{name}"),
            dir: format!("{rev}:{dir}"),
            file: file.to_string(),
            text,
        });
    }
    Ok(out)
}

/// Whether the checkout of `blobs` writes at most `max` bytes, from what
/// `git check-attr -z` says of them (review 22 r22b F2: a revision's own
/// `.gitattributes` made git write 47 times its blobs into `$TMPDIR`
/// before any size was checked). Known before git writes: `ident` grows a
/// blob at most `IDENT_GROWTH` times, line ends made CRLF (by attributes or
/// the user's `core.autocrlf`) twice. A `filter` runs a program of the
/// user's config on the revision's bytes, writing what it likes, and a
/// `working-tree-encoding` writes no UTF-8 text plan could read: both are
/// refused before any write.
fn checkout_fits(
    attributes: &[u8],
    blobs: &[(String, String, u64)],
    max: u64,
    spec: &str,
) -> Result<()> {
    let sizes: HashMap<&str, u64> = blobs
        .iter()
        .map(|(name, _, size)| (name.as_str(), *size))
        .collect();
    let mut growth: HashMap<&str, u64> = HashMap::new();
    let fields: Vec<&[u8]> = attributes.split(|&b| b == 0).collect();
    for triple in fields.chunks_exact(3) {
        let [name, attribute, value] =
            [triple[0], triple[1], triple[2]].map(|f| std::str::from_utf8(f).unwrap_or("\u{fffd}"));
        let Some((&name, _)) = sizes.get_key_value(name) else {
            bail!("{spec}: git check-attr named {name:?}, which plan did not ask about");
        };
        let given = !matches!(value, "unspecified" | "unset");
        match attribute {
            "ident" if value == "set" => {
                growth.insert(name, IDENT_GROWTH);
            }
            "filter" if given && value != "set" => bail!(
                "{spec}: {name} is checked out through the filter {value:?} (a `filter` \
                 attribute), a program plan does not run on a revision; plan a checkout of it \
                 as a directory"
            ),
            "working-tree-encoding" if given && !value.eq_ignore_ascii_case("UTF-8") => bail!(
                "{spec}: {name} is checked out as {value} (a `working-tree-encoding` \
                 attribute), not UTF-8 text; plan reads manifests as UTF-8: remove the \
                 attribute"
            ),
            _ => {}
        }
    }
    let most = sizes.iter().fold(0u64, |all, (name, size)| {
        all.saturating_add(size.saturating_mul(growth.get(name).copied().unwrap_or(2)))
    });
    if most > max {
        bail!(
            "{spec}: its checkout may write more than {} MiB of manifests (`$Id$` expanded by \
             an `ident` attribute, line ends made CRLF); plan a checkout of it as a directory",
            max >> 20
        );
    }
    Ok(())
}

/// `repo`'s `info/attributes` copied into the scratch repository `to`: a
/// regular file (through links, as git opens it) of at most
/// [`ATTRIBUTES_MAX_BYTES`], or an error naming it.
fn copy_info_attributes(repo: &git_dir::Repo, to: &Path, spec: &str) -> Result<()> {
    let attributes = repo.common.join("info/attributes");
    let text = match crate::node::nodefs::read_regular(&attributes, ATTRIBUTES_MAX_BYTES as usize) {
        Ok(Some(text)) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) if e.kind() != std::io::ErrorKind::InvalidInput => {
            return Err(e).with_context(|| format!("{spec}: reading {}", attributes.display()));
        }
        // Past the bound, or not a regular file (a FIFO, a directory).
        Ok(None) | Err(_) => bail!(
            "{spec}: {}: git applies it to every checkout of a revision, and plan reads it only \
             as a regular file of at most {} KiB: shorten it, or plan a checkout of the \
             revision as a directory",
            attributes.display(),
            ATTRIBUTES_MAX_BYTES >> 10
        ),
    };
    let info = to.join("info");
    std::fs::create_dir_all(&info)
        .and_then(|()| std::fs::write(info.join("attributes"), &text))
        .with_context(|| format!("{spec}: writing {}", info.join("attributes").display()))
}

/// A scratch repository of plan's own that borrows the objects of `repo`
/// (as its object directory: [`borrow_objects`]), removed after: git reads a revision there,
/// so none of `repo`'s own config is read (review 24 r24a F1, F4: a filter
/// driver named like "no filter" in check-attr's answer, an `attr.tree`
/// that checkout-index reads and check-attr does not; r23c F3: a promisor
/// remote's transport; review 25 r25a F3: its includes), and git is never
/// pointed at `repo` itself. With `refs`, its refs copied
/// (`git_dir::copy_refs`) to resolve a revision there, and its attributes
/// file (`info/attributes`, which a checkout there applies) copied; a
/// filter it names has no driver here.
fn borrowed_repo(repo: &git_dir::Repo, refs: bool, spec: &str) -> Result<tempfile::TempDir> {
    let scratch =
        tempfile::tempdir().with_context(|| format!("{spec}: making a scratch repository"))?;
    let dir = scratch.path().to_string_lossy().into_owned();
    // Always named: the user's `init.defaultObjectFormat` is not the input's.
    let format = repo_format::object_format(repo).with_context(|| spec.to_string())?;
    let format = format!("--object-format={format}");
    // No template: a file of git's templates (`description`) is no stand-in
    // for the input's file of that name, which git reads as a ref (review
    // 31 r31a F3: a branch `description`).
    let init = ["init", "-q", "--bare", "--template=", &format, &dir];
    // Charged to the input, not to "git" (review 37 r37b F2).
    git_run::run_git_for(&repo.top, git_command().args(init), None, 1 << 16)
        .with_context(|| format!("{spec}: git init --bare {dir}"))?;
    git_alternates::check_alternates(&repo.common.join("objects"))
        .with_context(|| format!("{spec}: reading the objects of {}", repo.top.display()))?;
    let borrowed = scratch.path().join(BORROWED);
    std::fs::write(
        &borrowed,
        repo.common.join("objects").into_os_string().into_vec(),
    )
    .with_context(|| format!("{spec}: writing {}", borrowed.display()))?;
    // git applies it to every checkout of a revision: read as the
    // revision's own `.gitattributes` are bounded (review 35 r35b F4: 1 MiB
    // of it made a plan of 3,000 manifests take 30 s), never dropped
    // unsaid; through a link, as git reads it. Not for a directory's
    // listing, which applies no attribute (review 36 r36b F1).
    if refs {
        copy_info_attributes(repo, scratch.path(), spec)?;
    }
    if refs {
        git_dir::copy_refs(repo, scratch.path())
            .with_context(|| format!("{spec}: reading the refs of {}", repo.top.display()))?;
    }
    Ok(scratch)
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
