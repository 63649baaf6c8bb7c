//! The bounds of plan's git children: how long each may run, and how
//! much of a repository git may hold at once (review 30 r30b F6): git reads a commit or a tree whole into memory, whatever its
//! size, and a commit of 1 GiB is 1 MiB on disk (every git child plan ran
//! on it took 45 s and 1 GB). Their sizes are asked first
//! (`cat-file --batch-check` reads an object's header only) and refused
//! past a bound no GitOps repository comes near; and every git child is
//! told the most it may allocate at once (`GIT_ALLOC_LIMIT`, which git
//! checks before each allocation), for what plan does not ask about.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use super::git_run::{Exited, git_output};

/// The largest commit or tag git may read for plan (a message and its
/// headers are a few KiB; a merge of a thousand parents 41 KiB).
const COMMIT_MAX_BYTES: u64 = 1 << 20;
/// The largest tree on the way to the path planned (one directory of
/// about 300,000 entries).
const TREE_MAX_BYTES: u64 = 16 << 20;
/// The most a git child of plan may allocate at once, unless told more
/// (a checkout of its blobs, a large index): past any commit or tree plan
/// lets git read, and past git's own tables of a long history.
pub const CHILD_ALLOC_MAX: u64 = 64 << 20;

/// How long one child process of plan (git) may run before it is killed:
/// the slowest plan asks of git on a large repository (`ls-tree -r` of
/// 200,000 files, a checkout of 256 MiB, `ls-files` of a million-entry
/// index) takes seconds, so two minutes is far past any honest run, while
/// a repository that makes git wait (a FIFO where git reads a file, a
/// config including `/proc/self/fd/1`: review 25 r25a F3) no longer stops
/// plan for ever. Per child: plan runs about ten per side.
const CHILD_DEADLINE: Duration = Duration::from_secs(120);

/// `CHILD_DEADLINE`, or less for tests only: the variable
/// `KUBELET_LABELER_TEST_CHILD_DEADLINE_MS` (milliseconds) is read so a
/// test of the deadline need not wait two minutes; it can only lower it,
/// and nothing but tests sets it.
pub fn child_deadline() -> Duration {
    std::env::var("KUBELET_LABELER_TEST_CHILD_DEADLINE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .filter(|d| *d < CHILD_DEADLINE)
        .unwrap_or(CHILD_DEADLINE)
}

/// `git`, told the most it may allocate at once: `CHILD_ALLOC_MAX`, unless
/// its caller set more.
pub fn bounded(git: &mut Command) -> &mut Command {
    if !git.get_envs().any(|(k, _)| k == "GIT_ALLOC_LIMIT") {
        git.env("GIT_ALLOC_LIMIT", CHILD_ALLOC_MAX.to_string());
    }
    git
}

/// A git child stopped at its allocation bound, said so.
pub fn explained(e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<Exited>() {
        Some(Exited(code, said)) if said.contains("attempting to allocate") => Exited(
            *code,
            format!(
                "{said} (git stopped: something of the repository is larger than plan lets git \
                 hold at once, more than any GitOps repository holds; find it with `git \
                 cat-file --batch-all-objects --batch-check`, or plan a copy of the files \
                 without .git)"
            ),
        )
        .into(),
        _ => e,
    }
}

/// `name`'s object, type and size in the scratch repository `git_dir`
/// (`--git-dir=...`), as `cat-file --batch-check` tells them (reading no
/// more than the objects on the way to it); None when it names none.
fn object(git_dir: &str, name: &str) -> Result<Option<(String, String, u64)>> {
    let out = git_output(
        &[git_dir, "cat-file", "--batch-check"],
        Some(format!("{name}\n").into_bytes()),
        1 << 16,
    )?;
    let out = String::from_utf8_lossy(&out);
    let mut fields = out.split_whitespace();
    Ok(match (fields.next(), fields.next(), fields.next()) {
        (Some(object), Some(kind), Some(size)) => size
            .parse()
            .ok()
            .map(|size| (object.to_string(), kind.to_string(), size)),
        _ => None,
    })
}

fn too_large(rev: &str, kind: &str, object: &str, size: u64, max: u64) -> anyhow::Error {
    anyhow::anyhow!(
        "{rev}: {kind} {object} is {size} bytes, more than the {} MiB plan lets git read of a \
         {kind} (git holds it whole in memory, in each of its children); look at it (`git \
         cat-file -s {object}`), or plan a copy of the files without .git",
        max >> 20
    )
}

/// Refuse `rev` when git would read a commit or tag past its bound to
/// resolve it in the scratch repository `git_dir`: the object its name
/// leads to (`main` of `main~2`: git reads it whole to go further) and the
/// one `rev` names, each with the tags it leads through. Asked before git
/// reads them (`rev-parse --verify` of a name reads no object); where git
/// says nothing, `commit_of` has git answer. The commits between (`~2`'s
/// first) are bounded by `CHILD_ALLOC_MAX` only.
pub fn check_revision(git_dir: &Path, rev: &str) -> Result<()> {
    let git_dir = format!("--git-dir={}", git_dir.display());
    let mut names = Vec::new();
    if let Some(at) = rev.find(['~', '^']).filter(|at| *at > 0) {
        names.push(&rev[..at]);
    }
    names.push(rev);
    for name in names {
        let resolved = git_output(
            &[&git_dir, "rev-parse", "--verify", "--quiet", name],
            None,
            1 << 16,
        );
        let mut object = match resolved {
            Ok(out) => String::from_utf8_lossy(&out).trim().to_string(),
            Err(e) if matches!(e.downcast_ref::<Exited>(), Some(Exited(Some(1), _))) => {
                continue;
            }
            Err(e) => return Err(e.context(format!("git rev-parse {name}"))),
        };
        // A tag is read here (bounded) for the object it names: git
        // would read that one whole to peel it.
        for _ in 0..16 {
            match object_checked(&git_dir, name, &object)? {
                Some(target) => object = target,
                None => break,
            }
        }
    }
    Ok(())
}

/// Refuse `object` (what `name` leads to) past its type's bound; the
/// object a tag names.
fn object_checked(git_dir: &str, name: &str, object: &str) -> Result<Option<String>> {
    let asked = self::object(git_dir, object);
    let asked = asked.with_context(|| format!("git cat-file --batch-check {name}"))?;
    let Some((object, kind, size)) = asked else {
        return Ok(None);
    };
    if !matches!(kind.as_str(), "commit" | "tag") {
        return Ok(None);
    }
    if size > COMMIT_MAX_BYTES {
        return Err(too_large(name, &kind, &object, size, COMMIT_MAX_BYTES));
    }
    if kind == "commit" {
        return Ok(None);
    }
    let args = [git_dir, "cat-file", "tag", &object];
    let text = git_output(&args, None, COMMIT_MAX_BYTES)
        .with_context(|| format!("git cat-file tag {name}"))?;
    let text = String::from_utf8_lossy(&text);
    Ok(text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("object "))
        .map(str::to_string))
}

/// Refuse the trees git reads on the way to `sub` at `commit` past their
/// bound: the root's, then each directory's, each asked before git reads
/// it (one `cat-file` each, in order); and `commit` itself (checked by
/// `check_revision` unless its name was an abbreviation git resolves only
/// as a commit).
pub fn check_tree_path(git_dir: &str, commit: &str, sub: &str) -> Result<()> {
    object_checked(git_dir, commit, commit)?;
    let mut names = vec![format!("{commit}^{{tree}}")];
    let mut path = String::new();
    for part in sub.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if !path.is_empty() {
            path.push('/');
        }
        path.push_str(part);
        names.push(format!("{commit}:{path}"));
    }
    for name in names {
        match object(git_dir, &name)? {
            Some((object, kind, size)) if kind == "tree" => {
                if size > TREE_MAX_BYTES {
                    let at = name.split_once(':').map_or("/", |(_, p)| p);
                    return Err(too_large(at, "tree", &object, size, TREE_MAX_BYTES));
                }
            }
            _ => return Ok(()),
        }
    }
    Ok(())
}
