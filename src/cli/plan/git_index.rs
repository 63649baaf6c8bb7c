//! A work tree's index looked at before git reads it (review 30 r30b F8):
//! a sparse index (`git sparse-checkout --sparse-index`) holds whole
//! directories as one entry each, which git expands from their trees
//! before it lists anything (plan's scratch repository, holding none of
//! the input's sparse-checkout config, makes every git there expand it):
//! a 997-byte index of one tree DAG took 24 s and 618 MB to list. Its
//! entries are walked here as git's index format lays them out
//! (`gitformat-index`, versions 2 to 4), without reading any object.

use std::io::{BufRead, Read};
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::node::nodefs;

/// A refusal of a sparse index, told apart from an index git cannot read.
#[derive(Debug)]
pub struct Sparse(String);

impl std::fmt::Display for Sparse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Sparse {}

/// The longest entry name read (git checks none out past `PATH_MAX`).
const NAME_MAX: u64 = 64 << 10;

/// Refuse the index `index` of `repo` when git would expand it: a
/// sparse-directory entry (a directory outside the sparse checkout, held
/// as its tree), in it or in the shared index of a split index beside it
/// (a sparse index without one, its cone holding every directory, is read
/// as any), or one whose entries git would hold as more than
/// [`INDEX_HELD_MAX`]. Otherwise the most git may allocate at once to read
/// it (`GIT_ALLOC_LIMIT`): what it holds of its entries, past the default
/// bound (not the file's size, which an extension git ignores pads).
pub fn checked(repo: &super::git_dir::Repo, index: &Path) -> Result<u64> {
    let hash_len = if super::repo_format::object_format(repo)? == "sha256" {
        32
    } else {
        20
    };
    let held = refuse_sparse(index, hash_len, true)?;
    Ok(super::git_run::CHILD_ALLOC_MAX.saturating_add(held))
}

/// What git holds of one entry besides its name (`struct cache_entry`,
/// with room to spare).
const ENTRY_HELD: u64 = 128;

/// The most git may hold of an index's entries (review 34 r34b F1: a
/// version-4 index names each entry by what it keeps of the previous
/// name, so 88,000 entries of 267 MB on disk were 3.87 GB of names in
/// git; padding of an extension git ignores had raised plan's bound of
/// git with the file's size): a million entries of 100-byte paths.
const INDEX_HELD_MAX: u64 = 256 << 20;

/// The largest index (or a split index's shared one) plan lets git read.
const INDEX_MAX: u64 = 256 << 20;

/// What git holds of the entries of `index` (and of its shared index),
/// or why plan refuses it.
fn refuse_sparse(index: &Path, hash_len: usize, may_split: bool) -> Result<u64> {
    let refuse = |what: &str| {
        Sparse(format!(
            "{}: a sparse index ({what}): git expands each sparse directory from the \
             repository's trees before it lists the index, which plan cannot bound; make the \
             index full (`git sparse-checkout disable`, or `git sparse-checkout init \
             --no-sparse-index`), or plan the revision (`REV:PATH`)",
            index.display()
        ))
    };
    let (Some(dir), Some(name)) = (index.parent(), index.file_name()) else {
        bail!("{}: not a file name", index.display());
    };
    let (file, size) = nodefs::Dir::open(dir)
        .and_then(|d| d.open_file(name))
        .with_context(|| format!("reading {}", index.display()))?;
    // git reads an index whole (review 32 r32b F3: a sparse file of 1 GiB
    // took 3 GB): a work tree's index of a million files is about 100 MiB.
    if size > INDEX_MAX {
        bail!(
            "{}: an index of {size} bytes, more than plan lets git read ({INDEX_MAX}); plan \
             the revision (`REV:PATH`), or a copy of the tree without .git",
            index.display()
        );
    }
    let mut r = std::io::BufReader::new(file.take(size));
    let bad = |what: &str| anyhow::anyhow!("{}: {what}, not an index git reads", index.display());
    let held_past = |what: &str| {
        anyhow::anyhow!(
            "{}: an index whose {what} git holds as more than {} MiB (their names in full), \
             more than plan lets git read; plan the revision (`REV:PATH`), or a copy of the \
             tree without .git",
            index.display(),
            INDEX_HELD_MAX >> 20
        )
    };
    let mut header = [0u8; 12];
    r.read_exact(&mut header)
        .map_err(|_| bad("shorter than its header"))?;
    let version = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    if &header[..4] != b"DIRC" || !(2..=4).contains(&version) {
        return Err(bad("no `DIRC` header of version 2, 3 or 4"));
    }
    let entries = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
    let mut at = 12u64;
    let mut held = 0u64;
    let mut name = Vec::new();
    // ctime, mtime, dev, ino, mode, uid, gid, size; the object; flags.
    let mut fixed = vec![0u8; 40 + hash_len + 2];
    for _ in 0..entries {
        r.read_exact(&mut fixed)
            .map_err(|_| bad("ends within an entry"))?;
        let mode = u32::from_be_bytes([fixed[24], fixed[25], fixed[26], fixed[27]]);
        let flags = u16::from_be_bytes([fixed[40 + hash_len], fixed[41 + hash_len]]);
        let mut head = fixed.len() as u64;
        if flags & 0x4000 != 0 {
            r.read_exact(&mut [0u8; 2])
                .map_err(|_| bad("ends within an entry"))?;
            head += 2;
        }
        let len = u64::from(flags & 0x0fff);
        if version == 4 {
            // The length of the previous name to drop (a varint), then the
            // rest of this one, NUL-terminated.
            let (strip, used) = varint(&mut r).map_err(|_| bad("ends within an entry"))?;
            let keep = usize::try_from(strip)
                .ok()
                .and_then(|s| name.len().checked_sub(s))
                .ok_or_else(|| bad("an entry drops more of the previous name than it has"))?;
            name.truncate(keep);
            let suffix = until_nul(&mut r).map_err(|_| bad("an entry name without its end"))?;
            at += head + used + suffix.len() as u64 + 1;
            name.extend_from_slice(&suffix);
        } else {
            name = if len < 0x0fff {
                let mut n = vec![0u8; len as usize];
                r.read_exact(&mut n)
                    .map_err(|_| bad("ends within an entry"))?;
                n
            } else {
                // (Its NUL, read too, is the first byte of the padding.)
                until_nul(&mut r).map_err(|_| bad("an entry name without its end"))?
            };
            let read = head + name.len() as u64 + u64::from(len >= 0x0fff);
            // Entries are padded with NULs to a multiple of 8 bytes.
            let padded = (head + name.len() as u64 + 8) & !7;
            std::io::copy(&mut (&mut r).take(padded - read), &mut std::io::sink())
                .with_context(|| format!("reading {}", index.display()))?;
            at += padded;
        }
        held = held.saturating_add(ENTRY_HELD + name.len() as u64);
        if held > INDEX_HELD_MAX {
            return Err(held_past("entries"));
        }
        if mode & 0o170000 == 0o040000 {
            let shown = String::from_utf8_lossy(&name).into_owned();
            return Err(refuse(&format!("a sparse-directory entry {shown}")).into());
        }
    }
    // Extensions (a 4-byte signature, a 4-byte size) up to the checksum.
    let mut linked = false;
    while at + 8 + hash_len as u64 <= size {
        let mut ext = [0u8; 8];
        r.read_exact(&mut ext)
            .map_err(|_| bad("ends within an extension"))?;
        let len = u64::from(u32::from_be_bytes([ext[4], ext[5], ext[6], ext[7]]));
        match &ext[..4] {
            // git reads the last `link` only (review 35 r35b F1, F2: each
            // of 300 made plan read the shared index again).
            b"link" if linked => {
                bail!(
                    "{}: an index with more than one `link` extension, not one git writes; \
                     remove it (`git update-index --no-split-index`), or plan the revision \
                     (`REV:PATH`)",
                    index.display()
                );
            }
            b"link" if may_split && len >= hash_len as u64 => {
                linked = true;
                let mut shared = vec![0u8; hash_len];
                r.read_exact(&mut shared)
                    .map_err(|_| bad("ends within an extension"))?;
                let hex: String = shared.iter().map(|b| format!("{b:02x}")).collect();
                let path = index.with_file_name(format!("sharedindex.{hex}"));
                if hex.bytes().any(|b| b != b'0') && std::fs::symlink_metadata(&path).is_ok() {
                    held = held.saturating_add(refuse_sparse(&path, hash_len, false)?);
                    if held > INDEX_HELD_MAX {
                        return Err(held_past("entries and its shared index's"));
                    }
                }
                std::io::copy(
                    &mut (&mut r).take(len - hash_len as u64),
                    &mut std::io::sink(),
                )
                .with_context(|| format!("reading {}", index.display()))?;
            }
            _ => {
                std::io::copy(&mut (&mut r).take(len), &mut std::io::sink())
                    .with_context(|| format!("reading {}", index.display()))?;
            }
        }
        at = at.saturating_add(8 + len);
    }
    Ok(held)
}

/// git's varint (`decode_varint`): its value and how many bytes it took.
fn varint(r: &mut impl Read) -> std::io::Result<(u64, u64)> {
    let mut byte = [0u8; 1];
    r.read_exact(&mut byte)?;
    let mut value = u64::from(byte[0] & 0x7f);
    let mut used = 1;
    while byte[0] & 0x80 != 0 {
        r.read_exact(&mut byte)?;
        used += 1;
        value = value
            .checked_add(1)
            .and_then(|v| v.checked_mul(128))
            .map(|v| v | u64::from(byte[0] & 0x7f))
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidData))?;
    }
    Ok((value, used))
}

/// The bytes up to the next NUL (read, not kept), at most `NAME_MAX`.
fn until_nul(r: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut name = Vec::new();
    r.take(NAME_MAX + 1).read_until(0, &mut name)?;
    if name.pop() != Some(0) {
        return Err(std::io::Error::from(std::io::ErrorKind::InvalidData));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(top: &Path, args: &[&str]) -> String {
        let o = std::process::Command::new("git")
            .current_dir(top)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {o:?}");
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    }

    /// Review 30 r30b F8: an index git writes is walked to its end, in
    /// each version (names past 4 KiB, extended flags, a split index); a
    /// sparse index (its sparse-directory entries) is refused, naming it.
    #[test]
    fn an_index_past_its_bound_is_refused_unread() {
        let tmp = tempfile::tempdir().unwrap();
        let index = tmp.path().join("index");
        let f = std::fs::File::create(&index).unwrap();
        f.set_len(INDEX_MAX + 1).unwrap();
        let err = format!("{:#}", refuse_sparse(&index, 20, true).unwrap_err());
        assert!(err.contains("more than plan lets git read"), "{err}");
    }

    #[test]
    fn a_sparse_index_is_refused_before_git_expands_it() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path();
        git(top, &["init", "-q"]);
        for dir in ["a", "gitops", "z"] {
            std::fs::create_dir(top.join(dir)).unwrap();
            std::fs::write(top.join(dir).join("f.yaml"), "k: v\n").unwrap();
        }
        git(top, &["add", "-A"]);
        let blob = git(top, &["rev-parse", ":a/f.yaml"]);
        // A name past the 12 bits of its length field, then another.
        let long = format!("{}y.yaml", "d/".repeat(2100));
        let info = format!("100644,{blob},{long}");
        git(top, &["update-index", "--add", "--cacheinfo", &info]);
        git(top, &["commit", "-q", "-m", "x"]);
        std::fs::write(top.join("new.yaml"), "k: v\n").unwrap();
        git(top, &["add", "-N", "new.yaml"]);
        let index = top.join(".git/index");
        for version in ["3", "4", "2"] {
            if version == "2" {
                git(top, &["reset", "-q"]);
            }
            git(top, &["update-index", "--index-version", version]);
            // Each entry and its name in full (review 34 r34b F1).
            let names = git(top, &["ls-files", "-z"]);
            let names: Vec<&str> = names.split('\0').filter(|n| !n.is_empty()).collect();
            let held: u64 = names.iter().map(|n| ENTRY_HELD + n.len() as u64).sum();
            assert_eq!(refuse_sparse(&index, 20, true).unwrap(), held, "{version}");
        }
        git(top, &["update-index", "--split-index"]);
        refuse_sparse(&index, 20, true).unwrap();
        // Review 35 r35b F1, F2: git reads the last `link` only; plan
        // read the shared index once for each.
        let split = std::fs::read(&index).unwrap();
        let at = split.windows(4).position(|w| w == b"link").unwrap();
        let len = u32::from_be_bytes(split[at + 4..at + 8].try_into().unwrap()) as usize;
        let mut twice = split[..split.len() - 20].to_vec();
        twice.extend_from_slice(&split[at..at + 8 + len]);
        twice.extend_from_slice(&split[split.len() - 20..]);
        std::fs::write(&index, &twice).unwrap();
        let e = format!("{:#}", refuse_sparse(&index, 20, true).unwrap_err());
        assert!(e.contains("more than one `link` extension"), "{e}");
        std::fs::write(&index, &split).unwrap();
        git(top, &["update-index", "--no-split-index"]);

        git(
            top,
            &["sparse-checkout", "init", "--cone", "--sparse-index"],
        );
        git(top, &["sparse-checkout", "set", "gitops"]);
        for version in ["4", "2"] {
            git(top, &["update-index", "--index-version", version]);
            let e = format!("{:#}", refuse_sparse(&index, 20, true).unwrap_err());
            assert!(
                e.contains("a sparse index (a sparse-directory entry a/)"),
                "{e}"
            );
            assert!(e.contains("git sparse-checkout disable"), "{e}");
        }
        // Every directory in the cone: no sparse-directory entry to expand.
        git(top, &["sparse-checkout", "set", "a", "d", "gitops", "z"]);
        refuse_sparse(&index, 20, true).unwrap();
        git(top, &["sparse-checkout", "set", "gitops"]);
        // A sparse checkout with a full index: read as any.
        git(
            top,
            &["sparse-checkout", "init", "--cone", "--no-sparse-index"],
        );
        refuse_sparse(&index, 20, true).unwrap();

        // Not an index: an error, never a pass.
        std::fs::write(&index, b"DIRC\0\0\0\x02\0\0\0\x05").unwrap();
        let e = format!("{:#}", refuse_sparse(&index, 20, true).unwrap_err());
        assert!(e.contains("not an index git reads"), "{e}");
    }

    /// Review 34 r34b F1: a version-4 index of 30,000 entries, each keeping
    /// the whole previous name and adding a byte (450 MB of names in git,
    /// 2 MB on disk), is refused before git reads it.
    #[test]
    fn what_git_holds_of_an_index_is_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        let index = tmp.path().join("index");
        let n: u32 = 30_000;
        let mut bytes = b"DIRC\0\0\0\x04".to_vec();
        bytes.extend_from_slice(&n.to_be_bytes());
        for _ in 0..n {
            let mut entry = vec![0u8; 40 + 20];
            entry[24..28].copy_from_slice(&0o100644u32.to_be_bytes());
            bytes.extend_from_slice(&entry);
            bytes.extend_from_slice(&0x0fffu16.to_be_bytes());
            bytes.extend_from_slice(b"\0a\0");
        }
        bytes.extend_from_slice(&[0u8; 20]);
        std::fs::write(&index, &bytes).unwrap();
        let e = format!("{:#}", refuse_sparse(&index, 20, true).unwrap_err());
        assert!(e.contains("git holds as more than 256 MiB"), "{e}");
    }
}
