//! The bounds of plan's git children: how long each may run, and how
//! much of a repository git may hold at once (review 30 r30b F6): git reads a commit or a tree whole into memory, whatever its
//! size, and a commit of 1 GiB is 1 MiB on disk (every git child plan ran
//! on it took 45 s and 1 GB). Their sizes are asked first
//! (`cat-file --batch-check` reads an object's header only) and refused
//! past a bound no GitOps repository comes near; and every git child is
//! told the most it may allocate at once (`GIT_ALLOC_LIMIT`, which git
//! checks before each allocation), for what plan does not ask about.

use std::path::Path;

use anyhow::{Context, Result};

use super::git_run::{Exited, git_output};

/// The largest commit or tag git may read for plan (a message and its
/// headers are a few KiB; a merge of a thousand parents 41 KiB).
const COMMIT_MAX_BYTES: u64 = 1 << 20;
/// The largest tree on the way to the path planned (one directory of
/// about 300,000 entries).
const TREE_MAX_BYTES: u64 = 16 << 20;
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
