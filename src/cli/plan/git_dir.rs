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
/// The most loose refs copied: past it, `git pack-refs` is the fix.
const LOOSE_REFS_MAX: usize = 100_000;
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

/// The repository whose work tree holds `start` (itself or a directory
/// above it with a `.git`, from the physical path), or None without any
/// `.git` up to `/`. A `.git` directory (or a link to one, which git
/// follows too) is the git directory; a `.git` file is a gitfile
/// (`gitdir: PATH`, relative to the directory holding it). What it names
/// must look like a git directory (`HEAD`, `objects`): anything else is
/// an error naming it, never a pass.
pub fn discover(start: &Path) -> Result<Option<Repo>> {
    let start = std::fs::canonicalize(start)
        .with_context(|| format!("finding the git repository of {}", start.display()))?;
    for dir in start.ancestors() {
        let dot = dir.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot) else {
            continue;
        };
        let git_dir = if meta.is_file() { gitfile(dir)? } else { dot };
        return repo_at(dir, &git_dir).map(Some);
    }
    Ok(None)
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

fn repo_at(top: &Path, named: &Path) -> Result<Repo> {
    let not_a_repo = |what: &str| {
        anyhow::anyhow!(
            "{}: the git directory of {} {what}; repair it, or plan a copy of the tree without \
             .git",
            named.display(),
            top.display()
        )
    };
    let git_dir = std::fs::canonicalize(named).map_err(|e| not_a_repo(&e.to_string()))?;
    if !git_dir.is_dir() {
        return Err(not_a_repo("is not a directory"));
    }
    let common = match read_in(&git_dir, "commondir", SMALL)? {
        Some(text) => {
            let text = String::from_utf8(text).unwrap_or_default();
            let path = text.trim_end_matches(['\n', '\r']);
            if path.is_empty() {
                return Err(not_a_repo("has an empty commondir"));
            }
            std::fs::canonicalize(git_dir.join(path))
                .map_err(|e| not_a_repo(&format!("names a commondir {path:?}: {e}")))?
        }
        None => git_dir.clone(),
    };
    if read_in(&git_dir, "HEAD", SMALL)?.is_none() || !common.join("objects").is_dir() {
        return Err(not_a_repo("has no HEAD or objects"));
    }
    Ok(Repo {
        top: top.to_path_buf(),
        git_dir,
        common,
    })
}

/// The regular file `name` of the directory `dir`, at most `limit` bytes,
/// or None when there is none: a link there is refused, not followed, and
/// anything else but a regular file (a FIFO, a device) is refused, never
/// opened (`nodefs::Dir::open_file`).
fn read_in(dir: &Path, name: &str, limit: u64) -> Result<Option<Vec<u8>>> {
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

/// The regular file `name` of `dir` copied to `to`, at most `limit`
/// bytes (as `read_in`); false when there is none.
fn copy_in(dir: &Path, name: &str, to: &Path, limit: u64) -> Result<bool> {
    use std::io::Read;
    let Some(file) = open_in(dir, name)? else {
        return Ok(false);
    };
    let path = dir.join(name);
    let mut out = std::fs::File::create(to).with_context(|| format!("writing {}", to.display()))?;
    let copied = std::io::copy(&mut file.take(limit + 1), &mut out)
        .with_context(|| format!("copying {}", path.display()))?;
    if copied > limit {
        bail!(
            "{} is larger than {} MiB; plan reads at most that much of it",
            path.display(),
            limit >> 20
        );
    }
    Ok(true)
}

/// The refs of `repo` given to the scratch git directory `to`, so that git
/// resolves a revision there as in `repo` (`HEAD~1`, a branch, a tag,
/// `origin/main`, a commit) with none of `repo`'s config read: its `HEAD`
/// (the work tree's own), `packed-refs` and every loose ref, each a
/// regular file (a link or a FIFO among the refs is left out: never
/// followed nor opened). `@{upstream}` and reflogs (`HEAD@{1}`) need its
/// config and logs: not given.
pub fn copy_refs(repo: &Repo, to: &Path) -> Result<()> {
    if let Some(head) = read_in(&repo.git_dir, "HEAD", SMALL)? {
        std::fs::write(to.join("HEAD"), head)
            .with_context(|| format!("writing {}", to.join("HEAD").display()))?;
    }
    copy_in(
        &repo.common,
        "packed-refs",
        &to.join("packed-refs"),
        PACKED_REFS_MAX,
    )?;
    let mut count = 0;
    copy_refs_under(&repo.common.join("refs"), &to.join("refs"), &mut count, 0)?;
    if repo.git_dir != repo.common {
        // A linked worktree's own (`refs/bisect`, `refs/worktree`).
        let own = repo.git_dir.join("refs");
        copy_refs_under(&own, &to.join("refs"), &mut count, 0)?;
    }
    Ok(())
}

fn copy_refs_under(from: &Path, to: &Path, count: &mut usize, depth: usize) -> Result<()> {
    if depth > 64 || !std::fs::symlink_metadata(from).is_ok_and(|m| m.is_dir()) {
        return Ok(());
    }
    std::fs::create_dir_all(to).with_context(|| format!("making {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry.with_context(|| format!("reading {}", from.display()))?;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        if kind.is_dir() {
            copy_refs_under(&entry.path(), &to.join(&name), count, depth + 1)?;
        } else if kind.is_file() && !name.to_string_lossy().ends_with(".lock") {
            *count += 1;
            if *count > LOOSE_REFS_MAX {
                bail!(
                    "{}: more than {LOOSE_REFS_MAX} loose refs; run `git pack-refs --all` there \
                     first",
                    from.display()
                );
            }
            let Some(name) = name.to_str() else { continue };
            copy_in(from, name, &to.join(name), SMALL)?;
        }
    }
    Ok(())
}

/// The object format `repo` was made with (`extensions.objectFormat` of
/// its own config, read here as text, never by git: no include is
/// followed), so the scratch repository borrowing its objects is made
/// alike; None for SHA-1, git's default.
pub fn object_format(repo: &Repo) -> Option<&'static str> {
    let text = read_in(&repo.common, "config", CONFIG_MAX).ok()??;
    let text = String::from_utf8(text).ok()?;
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix('[') {
            section = rest.split(']').next().unwrap_or("").trim().to_lowercase();
        } else if section == "extensions"
            && let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("objectformat")
            && value
                .trim()
                .trim_matches('"')
                .eq_ignore_ascii_case("sha256")
        {
            return Some("sha256");
        }
    }
    None
}

#[cfg(test)]
mod tests {
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
        std::fs::write(private.join("HEAD"), "0123\n").unwrap();
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

    /// The refs copied (HEAD, packed-refs, loose ones at any depth, a
    /// worktree's own), a link among them left out; the object format
    /// read from the config as text.
    #[test]
    fn refs_are_copied_and_links_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let common = root.join("repo/.git");
        git_dir_at(&common);
        std::fs::create_dir_all(common.join("refs/remotes/origin")).unwrap();
        std::fs::write(common.join("refs/remotes/origin/main"), "1\n").unwrap();
        std::fs::write(common.join("packed-refs"), "2 refs/tags/v1\n").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", common.join("refs/heads/evil")).unwrap();
        let private = common.join("worktrees/wt");
        std::fs::create_dir_all(private.join("refs/bisect")).unwrap();
        std::fs::write(private.join("HEAD"), "3\n").unwrap();
        std::fs::write(private.join("refs/bisect/bad"), "4\n").unwrap();
        let repo = Repo {
            top: root.join("wt"),
            git_dir: private,
            common: common.clone(),
        };
        let to = root.join("scratch");
        std::fs::create_dir(&to).unwrap();
        copy_refs(&repo, &to).unwrap();
        let read = |p: &str| std::fs::read_to_string(to.join(p)).unwrap();
        assert_eq!(read("HEAD"), "3\n");
        assert_eq!(read("packed-refs"), "2 refs/tags/v1\n");
        assert_eq!(read("refs/remotes/origin/main"), "1\n");
        assert_eq!(read("refs/bisect/bad"), "4\n");
        assert!(!to.join("refs/heads/evil").exists());

        assert_eq!(object_format(&repo), None);
        std::fs::write(
            common.join("config"),
            "[core]\n\tbare = false\n[extensions]\n\tobjectFormat = sha256\n",
        )
        .unwrap();
        assert_eq!(object_format(&repo), Some("sha256"));
    }
}
