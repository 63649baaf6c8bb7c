//! Where the repository of a work tree is, found without git (review 25
//! r25a F3): git run in an input repository reads its config and the
//! files it includes (`include.path = /proc/self/fd/1` made git wait
//! forever on its own standard output), so plan never points git there.
//! It looks for `.git` as git does (up from a directory; a gitfile
//! `gitdir: PATH` of a linked worktree or a submodule; `commondir`), and
//! gives plan's scratch repository what git needs of it: its refs (to
//! resolve a revision) and where its objects are.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::node::nodefs;

/// The most a gitfile, `commondir` or `HEAD` holds: a path or a ref.
const SMALL: u64 = 4096;
/// The most `packed-refs` may hold: about a million refs.
const PACKED_REFS_MAX: u64 = 256 << 20;
/// The longest line of `packed-refs` plan reads: an object ID, a blank
/// and a ref's name (a path of the repository's, as its loose refs are).
const PACKED_REF_LINE_MAX: u64 = 8 << 10;
/// The most loose refs copied: past it, `git pack-refs` is the fix.
const LOOSE_REFS_MAX: usize = 100_000;
/// The most bytes of loose refs copied: 100,000 refs as git writes them
/// take 6.5 MB.
const LOOSE_REFS_BYTES: u64 = 16 << 20;
/// The most a repository's own config is read for its object format.
const CONFIG_MAX: u64 = 1 << 20;

/// A work tree's repository: the work tree's top, its git directory
/// (a linked worktree's own, holding `HEAD` and `index`) and the common
/// one (objects, refs, `info/`), each a canonical path.
#[derive(Debug, PartialEq, Eq)]
pub struct Repo {
    pub top: PathBuf,
    pub git_dir: PathBuf,
    pub common: PathBuf,
}

/// The repository whose work tree holds `start`, found as git finds it
/// (setup.c, review 29 r29b F3), or None where git finds none. From the
/// physical path up, on `start`'s filesystem only (git stops at a mount
/// point), each directory's `.git`:
/// - a gitfile (`gitdir: PATH`, relative to the directory holding it)
///   must name a git directory: anything else is an error, as to git;
/// - a directory is the git directory when git's `is_git_directory` says
///   so, and passed over when it says not (a `.git` without `refs`);
/// - a link is refused, never followed: git follows it, plan does not
///   read a repository through links.
///
/// A directory that is itself a git directory (a bare repository, which
/// git takes before going up) is refused. Wherever plan cannot tell what
/// git would decide (a `HEAD` or `refs` that is a link, a FIFO, an
/// executable file), it refuses and names it: plan's repository is git's,
/// or there is none.
pub fn discover(start: &Path) -> Result<Option<Repo>> {
    use std::os::unix::fs::MetadataExt;
    let start = std::fs::canonicalize(start)
        .with_context(|| format!("finding the git repository of {}", start.display()))?;
    let device = std::fs::metadata(&start)
        .with_context(|| format!("finding the git repository of {}", start.display()))?
        .dev();
    for dir in start.ancestors() {
        match std::fs::metadata(dir) {
            Ok(meta) if meta.dev() == device => {}
            _ => return Ok(None),
        }
        let dot = dir.join(".git");
        match std::fs::symlink_metadata(&dot) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", dot.display())),
            Ok(meta) if meta.is_file() => {
                let named = gitfile(dir)?;
                return match is_git_directory(&named)? {
                    Some(_) => repo_at(dir, &named, Some(&dot)).map(Some),
                    None => Err(not_a_repo(
                        &named,
                        dir,
                        "is not a git directory (git stops there: fatal)",
                    )),
                };
            }
            Ok(meta) if meta.is_dir() => {
                if is_git_directory(&dot)?.is_some() {
                    return repo_at(dir, &dot, None).map(Some);
                }
            }
            Ok(meta) if meta.is_symlink() => bail!(
                "{}: a .git that is a symbolic link is not followed (plan reads a repository \
                 only through its own directories); make it a gitfile (`gitdir: PATH`), or \
                 plan a copy of the tree without .git",
                dot.display()
            ),
            Ok(_) => bail!(
                "{}: a .git that is neither a directory nor a gitfile; remove it, or plan a \
                 copy of the tree without .git",
                dot.display()
            ),
        }
        if is_git_directory(dir)?.is_some() {
            bail!(
                "{}: git takes this directory as a bare repository before going up; plan \
                 reads only a work tree's repository: plan a checkout of the revision",
                dir.display()
            );
        }
    }
    Ok(None)
}

/// The common directory of `dir` when git's `is_git_directory` (setup.c)
/// says it is a git directory, None when it says not: `HEAD` a valid
/// symbolic ref (`ref: refs/...`) or object name, then `objects` and
/// `refs` searchable in the common directory (the one `commondir` names,
/// if any). Where plan cannot tell as git would (links, special files, an
/// executable file for `refs`), an error naming it: never a guess.
fn is_git_directory(dir: &Path) -> Result<Option<PathBuf>> {
    let unsure = |path: &Path, what: &str| {
        anyhow::anyhow!(
            "{}: {what}, so plan cannot tell whether git takes {} as a git directory; make it \
             a plain one, or plan a copy of the tree without .git",
            path.display(),
            dir.display()
        )
    };
    let head = dir.join("HEAD");
    match std::fs::symlink_metadata(&head) {
        Err(e) if is_absent(&e) => return Ok(None),
        Err(e) => return Err(unsure(&head, &e.to_string())),
        Ok(meta) if meta.is_dir() => return Ok(None),
        Ok(meta) if meta.is_symlink() => return Err(unsure(&head, "a symbolic link")),
        Ok(meta) if !meta.is_file() => return Err(unsure(&head, "not a regular file")),
        Ok(_) => {}
    }
    let text = read_in(dir, "HEAD", SMALL)?.unwrap_or_default();
    if !is_valid_head(&text[..text.len().min(255)]) {
        return Ok(None);
    }
    let common = match std::fs::symlink_metadata(dir.join("commondir")) {
        Err(e) if is_absent(&e) => dir.to_path_buf(),
        Err(e) => return Err(unsure(&dir.join("commondir"), &e.to_string())),
        Ok(meta) if meta.is_symlink() => {
            return Err(unsure(&dir.join("commondir"), "a symbolic link"));
        }
        Ok(_) => {
            let text = read_in(dir, "commondir", SMALL)?.unwrap_or_default();
            let text =
                String::from_utf8(text).map_err(|_| unsure(&dir.join("commondir"), "not UTF-8"))?;
            let path = text.trim_end_matches(['\n', '\r']);
            if path.is_empty() {
                return Err(not_a_repo(
                    dir,
                    dir,
                    "has an empty commondir (git stops: fatal)",
                ));
            }
            std::fs::canonicalize(dir.join(path)).map_err(|e| {
                not_a_repo(
                    dir,
                    dir,
                    &format!("names a commondir {path:?}: {e} (git: fatal)"),
                )
            })?
        }
    };
    for name in ["objects", "refs"] {
        let path = common.join(name);
        match std::fs::symlink_metadata(&path) {
            Err(e) if is_absent(&e) => return Ok(None),
            Err(e) => return Err(unsure(&path, &e.to_string())),
            Ok(meta) if meta.is_dir() => {}
            Ok(meta) if meta.is_symlink() => return Err(unsure(&path, "a symbolic link")),
            Ok(_) => return Err(unsure(&path, "not a directory")),
        }
        // git asks access(X_OK): a directory plan may not search is not
        // git's either (stat of `DIR/.` needs exactly that permission).
        match std::fs::symlink_metadata(path.join(".")) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Ok(None),
            Err(e) => return Err(unsure(&path, &e.to_string())),
        }
    }
    Ok(Some(common))
}

/// git's `validate_headref` of a regular `HEAD`'s first bytes: `ref:`,
/// blanks, then `refs/`; or an object name (40 hex digits lead a SHA-1
/// and a SHA-256 name alike; what follows them is not read).
fn is_valid_head(text: &[u8]) -> bool {
    if let Some(rest) = text.strip_prefix(b"ref:") {
        let at = rest
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            .unwrap_or(rest.len());
        if rest[at..].starts_with(b"refs/") {
            return true;
        }
    }
    text.len() >= 40 && text[..40].iter().all(u8::is_ascii_hexdigit)
}

/// A path that is not there, as git's lstat/stat sees it (a component
/// that is a file: ENOTDIR).
pub(super) fn is_absent(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(20)
}

fn not_a_repo(named: &Path, top: &Path, what: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: the git directory of {} {what}; repair it, or plan a copy of the tree without .git",
        named.display(),
        top.display()
    )
}

/// The git directory the gitfile `dir/.git` names.
fn gitfile(dir: &Path) -> Result<PathBuf> {
    let dot = dir.join(".git");
    let text = read_in(dir, ".git", SMALL)?.unwrap_or_default();
    let text = String::from_utf8(text).unwrap_or_default();
    // As git reads it: the line ends stripped, nothing else.
    let path = text
        .strip_prefix("gitdir: ")
        .map(|p| p.trim_end_matches(['\n', '\r']))
        .filter(|p| !p.is_empty());
    let Some(path) = path else {
        bail!(
            "{}: not a gitfile (`gitdir: PATH`) nor a git directory; remove it, or plan a copy \
             of the tree without it",
            dot.display()
        );
    };
    Ok(dir.join(path))
}

/// The repository at `top` whose git directory is `named` (a `.git`
/// directory, or what the gitfile `gitfile` names), already found a git
/// directory by `is_git_directory`. git refuses a repository another user
/// owns (review 28 r28b F4, "dubious ownership"), looking at the work
/// tree's top, the gitfile and the git directory (review 29 r29b F5): so
/// does plan, which reads no `safe.directory`.
fn repo_at(top: &Path, named: &Path, gitfile: Option<&Path>) -> Result<Repo> {
    let git_dir =
        std::fs::canonicalize(named).map_err(|e| not_a_repo(named, top, &e.to_string()))?;
    let common = is_git_directory(&git_dir)?
        .ok_or_else(|| not_a_repo(named, top, "is not a git directory"))?;
    let me = current_user()?;
    for path in [Some(top), gitfile, Some(git_dir.as_path())]
        .into_iter()
        .flatten()
    {
        use std::os::unix::fs::MetadataExt;
        let owner = std::fs::symlink_metadata(path)
            .with_context(|| format!("reading {}", path.display()))?
            .uid();
        if !me.owns(owner) {
            return Err(not_a_repo(
                named,
                top,
                &format!(
                    "is reached through {}, owned by user {owner}, not by you ({}): git \
                     refuses it (dubious ownership)",
                    path.display(),
                    me.uid
                ),
            ));
        }
    }
    Ok(Repo {
        top: top.to_path_buf(),
        git_dir,
        common,
    })
}

/// Who git takes to be running it: the effective user, or under sudo
/// (root with `SUDO_UID`) also the user who ran sudo, as git 2.39 does.
struct CurrentUser {
    uid: u32,
    sudo_uid: Option<u32>,
}

impl CurrentUser {
    fn owns(&self, owner: u32) -> bool {
        owner == self.uid || self.sudo_uid == Some(owner)
    }
}

fn current_user() -> Result<CurrentUser> {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the effective user.
    let uid = std::fs::metadata("/proc/self")
        .context("reading /proc/self for the current user")?
        .uid();
    let sudo_uid = (uid == 0)
        .then(|| std::env::var("SUDO_UID").ok()?.parse().ok())
        .flatten();
    Ok(CurrentUser { uid, sudo_uid })
}

/// The regular file `name` of the directory `dir`, at most `limit` bytes,
/// or None when there is none: a link there is refused, not followed, and
/// anything else but a regular file (a FIFO, a device) is refused, never
/// opened (`nodefs::Dir::open_file`).
pub(super) fn read_in(dir: &Path, name: &str, limit: u64) -> Result<Option<Vec<u8>>> {
    let Some(file) = open_in(dir, name)? else {
        return Ok(None);
    };
    let path = dir.join(name);
    let bytes = nodefs::read_up_to(file, limit as usize + 1)
        .with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() as u64 > limit {
        bail!(
            "{} is larger than {limit} bytes, more than git writes there",
            path.display()
        );
    }
    Ok(Some(bytes))
}

fn open_in(dir: &Path, name: &str) -> Result<Option<std::fs::File>> {
    let path = dir.join(name);
    let at = match nodefs::Dir::open(dir) {
        Ok(at) => at,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    match at.open_file(OsStr::new(name)) {
        Ok((file, _)) => Ok(Some(file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.raw_os_error() == Some(40) => bail!(
            "{} is a symbolic link, not followed: plan reads a repository's own files only as \
             regular files; make it one, or plan a copy of the tree without .git",
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => bail!(
            "{} is not a regular file (a FIFO, a device), not read; plan a copy of the tree \
             without .git",
            path.display()
        ),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// The most the pseudo-refs at the git directory's top (`FETCH_HEAD` of a
/// fetch of many branches, `ORIG_HEAD`), all together, and `shallow` may
/// hold (review 30 r30b F7: each file was bounded, not their total).
const PSEUDO_MAX: u64 = 16 << 20;
/// The most files named like pseudo-refs copied (git writes a dozen).
const PSEUDO_COUNT_MAX: usize = 1000;
/// The deepest a loose ref may be under `refs/`.
const REFS_DEPTH_MAX: usize = 64;
/// Refs each linked worktree has of its own (git reads them from its git
/// directory, never from the common one).
const PER_WORKTREE: [&str; 3] = ["refs/bisect/", "refs/worktree/", "refs/rewritten/"];
/// What to do when plan cannot resolve a revision as git would.
pub(super) const COPY_FIX: &str =
    "plan a checkout of the revision as a directory, or a fresh clone";

/// A refusal: `path` holds what plan cannot give its scratch repository
/// as it is, so git there could resolve a revision to another commit than
/// git in the repository (review 26 r26b F1): never left out silently.
pub(super) fn cannot_copy(path: &Path, what: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: {what}; plan resolves a revision exactly as git would, or not at all: {COPY_FIX}",
        path.display()
    )
}

/// The regular file `name` of `dir` copied to `to`, at most `limit`
/// bytes (as `read_in`), its size checked before any is written; false
/// when there is none.
fn copy_in(dir: &Path, name: &str, to: &Path, limit: u64) -> Result<bool> {
    use std::io::{Read, Write};
    let Some(file) = open_in(dir, name)? else {
        return Ok(false);
    };
    let path = dir.join(name);
    let size = file
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    if size > limit {
        bail!(
            "{} is larger than {limit} bytes; plan reads at most that much of it: {COPY_FIX}",
            path.display(),
        );
    }
    let mut file = file.take(limit + 1);
    // Its first bytes tell a symbolic ref (none is longer than this).
    let mut head = Vec::new();
    (&mut file)
        .take(SMALL)
        .read_to_end(&mut head)
        .with_context(|| format!("copying {}", path.display()))?;
    refuse_symref_out_of_refs(&path, &head)?;
    let mut out = std::fs::File::create(to).with_context(|| format!("writing {}", to.display()))?;
    out.write_all(&head)
        .with_context(|| format!("writing {}", to.display()))?;
    let copied = head.len() as u64
        + std::io::copy(&mut file, &mut out)
            .with_context(|| format!("copying {}", path.display()))?;
    if copied > limit {
        bail!(
            "{} is larger than {limit} bytes; plan reads at most that much of it: {COPY_FIX}",
            path.display(),
        );
    }
    Ok(true)
}

/// The refs of `repo` given to the scratch git directory `to`, so that git
/// resolves a revision there exactly as in `repo` (`HEAD~1`, a branch, a
/// tag, `origin/main`, `FETCH_HEAD`, a commit) with none of `repo`'s config
/// read by git: its `HEAD` (the work tree's own), the pseudo-refs beside it
/// (`FETCH_HEAD`, `ORIG_HEAD`: names of `A-Z` and `_`), `packed-refs`,
/// every loose ref (a linked worktree's own `refs/bisect`, `refs/worktree`,
/// `refs/rewritten` from its own directory) and `shallow`, each a regular
/// file, bounded. Whatever would make git resolve other than here is
/// refused, naming it, never left out (review 26 r26b F1): a link or a
/// special file among the refs, a name plan cannot copy (not UTF-8, too
/// deep), a replace ref (plan turns replace objects off), `info/grafts`,
/// a ref store other than files (reftable). `@{upstream}` and reflogs
/// (`HEAD@{1}`) need its config and logs: not given.
pub fn copy_refs(repo: &Repo, to: &Path) -> Result<()> {
    ref_storage_is_files(repo)?;
    let grafts = repo.common.join("info/grafts");
    if std::fs::symlink_metadata(&grafts).is_ok() {
        return Err(cannot_copy(
            &grafts,
            "grafts give commits other parents than their own (git still reads them)",
        ));
    }
    let head = read_in(&repo.git_dir, "HEAD", SMALL)?
        .ok_or_else(|| cannot_copy(&repo.git_dir.join("HEAD"), "no HEAD"))?;
    refuse_symref_out_of_refs(&repo.git_dir.join("HEAD"), &head)?;
    std::fs::write(to.join("HEAD"), head)
        .with_context(|| format!("writing {}", to.join("HEAD").display()))?;
    copy_pseudo_refs(&repo.git_dir, to)?;
    copy_in(&repo.common, "shallow", &to.join("shallow"), PSEUDO_MAX)?;
    let linked = repo.git_dir != repo.common;
    copy_packed_refs(&repo.common, &to.join("packed-refs"), linked)?;
    let (mut count, mut bytes) = (0, 0);
    let skip: &[&str] = if linked { &PER_WORKTREE } else { &[] };
    let mut copy = Copy {
        count: &mut count,
        bytes: &mut bytes,
        skip,
    };
    copy.under(&repo.common.join("refs"), &to.join("refs"), "refs/", 0)?;
    if linked {
        for own in PER_WORKTREE {
            let own = own.trim_end_matches('/');
            let from = repo.git_dir.join(own);
            copy.skip = &[];
            copy.under(&from, &to.join(own), &format!("{own}/"), 1)?;
        }
    }
    Ok(())
}

/// The files at the top of the git directory `dir` named as git names its
/// pseudo-refs (`A-Z` and `_` only: `FETCH_HEAD`, `ORIG_HEAD`,
/// `MERGE_HEAD`), which `rev-parse` reads before any ref of `refs/`
/// (review 26 r26b F1: a tag `refs/tags/FETCH_HEAD` won where git reads
/// `$GIT_DIR/FETCH_HEAD`). A link or a special file so named is refused;
/// a directory is no ref to git either, left out. At most
/// `PSEUDO_COUNT_MAX` of them, `PSEUDO_MAX` bytes in all.
fn copy_pseudo_refs(dir: &Path, to: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let (mut names, mut total) = (Vec::new(), 0u64);
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let pseudo = !name.is_empty()
            && name != "HEAD"
            && name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
        if !pseudo {
            continue;
        }
        let kind = entry
            .file_type()
            .with_context(|| format!("reading {}", entry.path().display()))?;
        if kind.is_dir() {
            continue;
        }
        if !kind.is_file() {
            return Err(cannot_copy(
                &entry.path(),
                "a pseudo-ref that is a link or a special file, not a regular file",
            ));
        }
        let size = entry
            .metadata()
            .with_context(|| format!("reading {}", entry.path().display()))?
            .len();
        total = total.saturating_add(size);
        names.push(name.to_string());
        if names.len() > PSEUDO_COUNT_MAX || total > PSEUDO_MAX {
            bail!(
                "{}: its files named like pseudo-refs (`A-Z` and `_` only, as FETCH_HEAD) are \
                 more than {PSEUDO_COUNT_MAX} or hold more than {} MiB together, which plan \
                 copies to resolve a revision: remove those git did not write, or {COPY_FIX}",
                dir.display(),
                PSEUDO_MAX >> 20
            );
        }
    }
    // Each copied once all are measured, within what is left of the
    // bound (a file grown meanwhile is refused).
    let mut left = PSEUDO_MAX;
    for name in names {
        let copy = to.join(&name);
        copy_in(dir, &name, &copy, left)?;
        let copied = std::fs::metadata(&copy).map_or(left, |m| m.len());
        left = left.saturating_sub(copied);
    }
    Ok(())
}

/// `packed-refs` of `common` copied to `to` (bounded), refusing a replace
/// ref and, for a linked worktree, a ref of a worktree's own (git would
/// not read it from there).
fn copy_packed_refs(common: &Path, to: &Path, linked: bool) -> Result<()> {
    use std::io::{BufRead, Write};
    let Some(file) = open_in(common, "packed-refs")? else {
        return Ok(());
    };
    let path = common.join("packed-refs");
    let mut lines = std::io::BufReader::new(std::io::Read::take(file, PACKED_REFS_MAX + 1));
    let mut out = std::fs::File::create(to).with_context(|| format!("writing {}", to.display()))?;
    let mut line = Vec::new();
    let mut total = 0u64;
    loop {
        line.clear();
        // Review 37 r37b F3: one line of 256 MiB (a sparse file of NULs)
        // took 1.6 GB, and went whole into the error.
        let n = std::io::Read::take(&mut lines, PACKED_REF_LINE_MAX + 1)
            .read_until(b'\n', &mut line)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        if n as u64 > PACKED_REF_LINE_MAX {
            return Err(cannot_copy(
                &path,
                &format!(
                    "a line longer than {PACKED_REF_LINE_MAX} bytes, which no ref of git's is"
                ),
            ));
        }
        total += n as u64;
        if total > PACKED_REFS_MAX {
            bail!(
                "{} is larger than {PACKED_REFS_MAX} bytes; plan reads at most that much of it: \
                 {COPY_FIX}",
                path.display()
            );
        }
        let Some(name) = packed_ref_name(&line, total == n as u64) else {
            return Err(cannot_copy(
                &path,
                &format!(
                    "a line plan cannot read as git writes it ({:?}; git reads any blank as the \
                     separator, plan only what `git pack-refs` writes)",
                    String::from_utf8_lossy(&line[..line.len().min(200)]).trim_end()
                ),
            ));
        };
        refuse_ref(&path, name)?;
        if linked && PER_WORKTREE.iter().any(|p| name.starts_with(p)) {
            return Err(cannot_copy(
                &path,
                &format!(
                    "{} packed, a ref each worktree has of its own",
                    name.trim_end()
                ),
            ));
        }
        out.write_all(&line)
            .with_context(|| format!("writing {}", to.display()))?;
    }
    Ok(())
}

/// The ref a line of `packed-refs` names, None for the header (the first
/// line only) and a peeled line (`^ID`); a line in any other shape than
/// `git pack-refs` writes (`ID SP NAME LF`, a name of printable ASCII
/// without blanks) is refused by the caller (review 30 r30b F5: `ID TAB
/// refs/replace/X` is a replace ref to git, and was none to plan).
fn packed_ref_name(line: &[u8], first: bool) -> Option<&str> {
    let line = line.strip_suffix(b"\n")?;
    if first && line.starts_with(b"# pack-refs with:") {
        return Some("");
    }
    let is_id =
        |id: &[u8]| (id.len() == 40 || id.len() == 64) && id.iter().all(u8::is_ascii_hexdigit);
    if let Some(id) = line.strip_prefix(b"^") {
        return is_id(id).then_some("");
    }
    let (id, name) = line.split_at(line.iter().position(|&b| b == b' ')?);
    let name = &name[1..];
    let plain = !name.is_empty() && name.iter().all(|b| (0x21..0x7f).contains(b));
    (is_id(id) && plain)
        .then(|| std::str::from_utf8(name).ok())
        .flatten()
}

/// Refuse a symbolic ref (`ref:` and, as git reads it, any blanks, then
/// the name it leads to, trailing blanks dropped) that leads anywhere but
/// under `refs/` (review 30 r30b F1, F2): git reads `main-worktree/HEAD`,
/// `worktrees/ID/HEAD`, a pseudo-ref or a stray `.git/foo` from places
/// whose layout plan's scratch repository does not reproduce. Under
/// `refs/` git reads the same names in the scratch, where the refs are
/// copied byte for byte.
fn refuse_symref_out_of_refs(path: &Path, text: &[u8]) -> Result<()> {
    let Some(rest) = text.strip_prefix(b"ref:") else {
        return Ok(());
    };
    let target = String::from_utf8_lossy(rest);
    let target = target.trim_matches([' ', '\t', '\n', '\r']);
    if target.starts_with("refs/") {
        return Ok(());
    }
    Err(cannot_copy(
        path,
        &format!(
            "a symbolic ref to {target:?}, which git reads from where plan's copy of the refs \
             has no such layout"
        ),
    ))
}

/// A ref plan cannot give git as it is: a replace ref (git in the
/// repository shows the replacement's content for the object it names;
/// plan turns replace objects off).
fn refuse_ref(path: &Path, name: &str) -> Result<()> {
    if name.starts_with("refs/replace/") {
        return Err(cannot_copy(
            path,
            &format!(
                "{name} is a replace ref: git there shows another object's content for the one \
                 it names, plan does not"
            ),
        ));
    }
    Ok(())
}

/// Loose refs copied, counted, leaving out those under `skip`.
struct Copy<'a> {
    count: &'a mut usize,
    bytes: &'a mut u64,
    skip: &'a [&'a str],
}

impl Copy<'_> {
    /// The loose refs of the directory `from` (named `rel`, ending in `/`,
    /// as a ref) copied to `to`; nothing when there is no `from`.
    fn under(&mut self, from: &Path, to: &Path, rel: &str, depth: usize) -> Result<()> {
        let meta = match std::fs::symlink_metadata(from) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", from.display())),
            Ok(meta) => meta,
        };
        if meta.file_type().is_symlink() {
            return Err(cannot_copy(
                from,
                "a symbolic link among the refs (git reads the refs it leads to; plan does not \
                 follow it)",
            ));
        }
        if !meta.is_dir() {
            return Err(cannot_copy(from, "not a directory of refs"));
        }
        if depth > REFS_DEPTH_MAX {
            return Err(cannot_copy(
                from,
                &format!("refs nested deeper than {REFS_DEPTH_MAX} directories"),
            ));
        }
        std::fs::create_dir_all(to).with_context(|| format!("making {}", to.display()))?;
        let entries =
            std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", from.display()))?;
            let path = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                return Err(cannot_copy(&path, "a ref whose name is not UTF-8"));
            };
            let full = format!("{rel}{name}");
            let kind = entry
                .file_type()
                .with_context(|| format!("reading {}", path.display()))?;
            if self.skip.iter().any(|s| format!("{full}/").starts_with(s)) {
                continue;
            }
            if kind.is_dir() {
                self.under(&path, &to.join(&name), &format!("{full}/"), depth + 1)?;
            } else if kind.is_symlink() {
                return Err(cannot_copy(
                    &path,
                    "a ref that is a symbolic link (git reads what it leads to; plan does not \
                     follow it)",
                ));
            } else if !kind.is_file() {
                return Err(cannot_copy(&path, "a ref that is not a regular file"));
            } else if !name.ends_with(".lock") {
                // (A `.lock` is no ref name: git reads none.)
                refuse_ref(&path, &full)?;
                *self.count += 1;
                // Their bytes too (review 31 r31a F2: 100,000 sparse refs of
                // 4 KiB wrote 837 MiB a run): git writes 41 or 65 a ref.
                *self.bytes += entry
                    .metadata()
                    .with_context(|| format!("reading {}", path.display()))?
                    .len();
                if *self.count > LOOSE_REFS_MAX || *self.bytes > LOOSE_REFS_BYTES {
                    bail!(
                        "{}: more than {LOOSE_REFS_MAX} loose refs or {LOOSE_REFS_BYTES} bytes \
                         of them; run `git pack-refs --all` there first",
                        from.display()
                    );
                }
                copy_in(from, &name, &to.join(&name), SMALL)?;
            }
        }
        Ok(())
    }
}

/// Refuse a revision whose spelling git reads from what plan never copies
/// (review 28 r28b F2, F6): reflogs and the repository's config
/// (`HEAD@{1}`, `@{u}`, `@{-1}`), another worktree's refs
/// (`main-worktree/HEAD`, `worktrees/<id>/HEAD`). An error, never "not a
/// revision": a directory of that name is not planned in its place.
pub fn revision_plan_reads(rev: &str) -> Result<()> {
    if rev.contains("@{") {
        bail!(
            "{rev:?}: git reads `@{{...}}` from the repository's reflogs or config, which plan \
             does not read; name the branch, tag or commit"
        );
    }
    if rev.starts_with("main-worktree/") || rev.starts_with("worktrees/") {
        bail!(
            "{rev:?}: another worktree's ref, which plan does not read; name the branch, tag or \
             commit"
        );
    }
    Ok(())
}

/// The names git looks `rev`'s ref up at, in order (`git help revisions`).
fn candidates(rev: &str) -> Vec<String> {
    let name = rev.split(['~', '^', ':']).next().unwrap_or(rev);
    // `@` alone is git's HEAD (review 30 r30b F2 V5: `@` had no names).
    let name = if name == "@" {
        "HEAD"
    } else {
        name.trim_end_matches('@')
    };
    if name.is_empty() || name.contains("..") || name.starts_with('/') {
        return Vec::new();
    }
    vec![
        name.to_string(),
        format!("refs/{name}"),
        format!("refs/tags/{name}"),
        format!("refs/heads/{name}"),
        format!("refs/remotes/{name}"),
        format!("refs/remotes/{name}/HEAD"),
    ]
}

fn is_ref(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() || m.file_type().is_symlink())
}

/// Refuse when a name git would look `rev` up at in the repository (its
/// git directory and common directory: `NAME`, `refs/NAME`,
/// `refs/tags/NAME`, `refs/heads/NAME`, `refs/remotes/NAME`,
/// `refs/remotes/NAME/HEAD`) is there but not in plan's copy `scratch`
/// (review 28 r28b F1: a stray `.git/main` git reads before
/// `refs/heads/main`, which plan did not copy): plan then resolves what
/// git does, or nothing.
pub fn lookups_copied(repo: &Repo, scratch: &Path, rev: &str) -> Result<()> {
    for c in &candidates(rev) {
        let there = [&repo.git_dir, &repo.common]
            .iter()
            .any(|d| is_ref(&d.join(c)));
        // A symbolic ref (`ref: NAME`) is followed as git follows it
        // (review 29 r29b F4: its target at the top, not copied).
        let mut name = c.clone();
        for _ in 0..5 {
            let Some(text) = [&repo.git_dir, &repo.common].iter().find_map(|d| {
                let at = d.join(&name);
                let (dir, file) = (at.parent()?, at.file_name()?.to_str()?);
                read_in(dir, file, SMALL).ok().flatten()
            }) else {
                break;
            };
            let Some(target) = String::from_utf8_lossy(&text)
                .strip_prefix("ref: ")
                .map(|t| t.trim_end().to_string())
            else {
                break;
            };
            // Where git reads it: a worktree's own refs and the names at
            // the top from its git directory, the rest from the common one.
            let own =
                !target.starts_with("refs/") || PER_WORKTREE.iter().any(|p| target.starts_with(p));
            let dir = if own { &repo.git_dir } else { &repo.common };
            if is_ref(&dir.join(&target)) && !is_ref(&scratch.join(&target)) {
                bail!(
                    "{rev:?}: git follows {name} to {target} of {}, which plan does not copy; \
                     {COPY_FIX}",
                    repo.git_dir.display()
                );
            }
            name = target;
        }
        if there && !is_ref(&scratch.join(c)) {
            bail!(
                "{rev:?}: git reads {c} of {}, which plan does not copy; {COPY_FIX}",
                repo.git_dir.display()
            );
        }
    }
    Ok(())
}

/// The common directory's `config` of `repo` (where git reads the
/// repository's format, without includes) copied to `to`, bounded, a
/// regular file only (`copy_in`), for git to read there (`repo_format`,
/// review 30 r30b F4); false when there is none.
pub fn copy_config(repo: &Repo, to: &Path) -> Result<bool> {
    copy_in(&repo.common, "config", to, CONFIG_MAX)
}

/// Refuse a ref store other than git's files (reftable, git 2.45): plan
/// copies loose and packed refs, which git then ignores (review 26 r26b
/// F1: a stale `refs/heads/main` beside the reftable was planned).
/// `extensions.refStorage` is read as git reads it, with the repository's
/// format (`repo_format`, before any copy).
fn ref_storage_is_files(repo: &Repo) -> Result<()> {
    let reftable = repo.common.join("reftable");
    if std::fs::symlink_metadata(&reftable).is_ok() {
        return Err(cannot_copy(
            &reftable,
            "a reftable ref store, which plan cannot copy",
        ));
    }
    Ok(())
}

/// The path of the tree `sub` names in `REV:PATH`, as git reads it (review
/// 26 r26b F4): from the repository's top, but `./` and `../` from the
/// current directory's place in the work tree `top` (`HEAD:./gitops` run
/// in `clusters/` is `clusters/gitops`; `cwd`, canonical); one above the
/// top is refused, as git refuses it. The whole tree is `.`.
pub fn tree_path(repo: &Repo, cwd: &Path, sub: &str) -> Result<String> {
    let top = repo.top.as_path();
    // git takes `.\` and `..\` for relative too, on any system.
    if sub.starts_with(".\\") || sub.starts_with("..\\") {
        bail!(
            "{sub:?}: git reads it from the current directory; write the path from the repository's top"
        );
    }
    if !(sub.starts_with("./") || sub.starts_with("../")) {
        return Ok(sub.to_string());
    }
    // In `config` (however spelt: a value continued over lines, a section
    // written otherwise) or `config.worktree` (review 29 r29b F2).
    let mentions = |name: &str| -> Result<bool> {
        Ok(read_in(&repo.common, name, CONFIG_MAX)?
            .or(read_in(&repo.git_dir, name, CONFIG_MAX)?)
            .is_some_and(|t| {
                String::from_utf8_lossy(&t)
                    .to_lowercase()
                    .contains("worktree")
            }))
    };
    if mentions("config")? || mentions("config.worktree")? {
        bail!(
            "{sub:?}: git reads it from the current directory's place in the work tree its \
             config names (core.worktree), which plan does not read; write the path from the \
             repository's top"
        );
    }
    let prefix = cwd.strip_prefix(top).with_context(|| {
        format!(
            "{sub:?} is read from the current directory, which is not in the work tree {}: \
             write the path from the repository's top",
            top.display()
        )
    })?;
    let Some(prefix) = prefix.to_str() else {
        bail!(
            "{sub:?} is read from the current directory, whose path in the work tree is not \
             UTF-8: write the path from the repository's top"
        );
    };
    let mut parts: Vec<&str> = prefix.split('/').filter(|p| !p.is_empty()).collect();
    for part in sub.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    bail!(
                        "{sub:?} is outside the repository {} (read from the current \
                         directory, as git reads it)",
                        top.display()
                    );
                }
            }
            _ => parts.push(part),
        }
    }
    Ok(if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    })
}

#[cfg(test)]
#[path = "git_dir_tests.rs"]
mod tests;
