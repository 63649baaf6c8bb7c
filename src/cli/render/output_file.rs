//! One output file: where a write lands (a regular file, or the one a
//! symlink names), streams written as stdout would be (a FIFO, a character
//! device, a descriptor of ours), and a temp file beside the target renamed
//! into place, so a reader never sees half a file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Where a write to `path` lands: `path` when it does not exist or is a
/// regular file; when it is a symlink of yours (or root's), the regular file
/// it leads to (the link stays, its target gets the new contents). A device,
/// FIFO, socket or directory, or a link to one or to nothing, is refused:
/// the temp-file-and-rename write would replace it with a regular file. So
/// is a link another user owns (see [`follow_own_links`]), and a place
/// in a directory another user owns or may write, or below one
/// ([`super::dir_chain`]).
pub fn write_target(path: &Path) -> Result<PathBuf> {
    let (target, meta) = follow_own_links(path)?;
    let Some(meta) = meta else {
        if target == path {
            super::dir_chain::check(&target)?;
            return Ok(target);
        }
        bail!(
            "{} is a symlink to nothing; not writing through it (remove it or point it at a regular file)",
            path.display()
        );
    };
    if meta.is_file() {
        super::dir_chain::check(&target)?;
        return Ok(target);
    }
    if target == path {
        bail!(
            "{} is {}, not a regular file; not replacing it (write to a file path, or -o - for stdout)",
            path.display(),
            kind(&meta)
        );
    }
    bail!(
        "{} is a symlink to {}, which is {}, not a regular file; not replacing it (write to a file path, or -o - for stdout)",
        path.display(),
        target.display(),
        kind(&meta)
    )
}

/// `path` with the symlinks at its end followed, and what is there (None:
/// nothing). Each link on the way must be owned by the user we run as, or
/// by root: a link another user owns is refused, wherever it is, since
/// whoever can write its directory (`/tmp`: anyone) can point it at any
/// file we may write (as root: `/etc/shadow`). The kernel's
/// `fs.protected_symlinks` refuses such a link in a sticky directory, but
/// only when it follows the link itself; a user-space `realpath` and a
/// rename onto its result would not be asked. Links within the directories
/// on the way are the kernel's to follow (and to refuse) when the file is
/// written, never resolved here.
fn follow_own_links(path: &Path) -> Result<(PathBuf, Option<fs::Metadata>)> {
    use std::os::unix::fs::MetadataExt;
    let me = super::dir_chain::euid();
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        let meta = match fs::symlink_metadata(&at) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((at, None)),
            other => other.with_context(|| format!("reading {}", at.display()))?,
        };
        if !meta.file_type().is_symlink() {
            return Ok((at, Some(meta)));
        }
        let to = fs::read_link(&at).with_context(|| format!("reading {}", at.display()))?;
        let next = at.parent().map_or_else(|| to.clone(), |dir| dir.join(&to));
        if meta.uid() != me && meta.uid() != 0 {
            bail!(
                "{} is a symlink to {} owned by another user (uid {}); not writing through it \
                 (whoever can write its directory can point it at any file): give -o {} if \
                 that is the file you mean, or remove the link",
                at.display(),
                next.display(),
                meta.uid(),
                next.display()
            );
        }
        at = next;
    }
    bail!(
        "{} is a chain of more than 40 symlinks; not writing through it",
        path.display()
    )
}

/// A FIFO or character device at `-o` is written into only when it is the
/// caller's or root's (`/dev/null`, a FIFO of your own): another user's
/// FIFO, planted where the output is expected, would hand them the output
/// (the kernel's `protected_fifos` guards only opens that may create).
fn stream_owned_by_us(path: &Path, meta: &fs::Metadata) -> Result<()> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let me = super::dir_chain::euid();
    let stream = meta.file_type().is_fifo() || meta.file_type().is_char_device();
    if !stream || (meta.uid() != me && meta.uid() != 0) {
        bail!(
            "{} is {} owned by another user (uid {}); not writing into it (whoever owns it \
             reads what is written): remove it, or give -o a path of your own",
            path.display(),
            kind(meta),
            meta.uid()
        );
    }
    Ok(())
}

fn kind(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Where `-o PATH` writes.
pub enum OutputFile {
    /// A new path, or a regular file (see [`write_target`]): a temp file is
    /// renamed onto it.
    Replace(PathBuf),
    /// Open for writing, never replaced: a FIFO or a character device
    /// (`/dev/null`, a named pipe), or a file this process has open
    /// (`/dev/stdout`, `/dev/fd/N`, a shell's `>(cmd)`), written as stdout
    /// would be.
    Stream(fs::File),
}

/// Where `-o PATH` writes (see [`OutputFile`]); a directory, socket, block
/// device or dangling link is refused.
pub fn output_file(path: &Path) -> Result<OutputFile> {
    use std::os::unix::fs::FileTypeExt;
    if let Some(fd) = own_fd(path) {
        // SAFETY: `fd` is open in this process (/proc lists it), and is
        // only borrowed to duplicate it.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let file = borrowed
            .try_clone_to_owned()
            .with_context(|| format!("opening {}", path.display()))?;
        return Ok(OutputFile::Stream(file.into()));
    }
    match follow_own_links(path)? {
        (at, Some(m)) if m.file_type().is_fifo() || m.file_type().is_char_device() => {
            stream_owned_by_us(path, &m)?;
            let file = fs::OpenOptions::new()
                .write(true)
                .open(&at)
                .with_context(|| format!("opening {}", path.display()))?;
            // What was opened, not what was looked at: a FIFO swapped in
            // between gets nothing.
            let opened = file
                .metadata()
                .with_context(|| format!("reading {}", path.display()))?;
            stream_owned_by_us(path, &opened)?;
            Ok(OutputFile::Stream(file))
        }
        _ => Ok(OutputFile::Replace(write_target(path)?)),
    }
}

/// The descriptor `path` names when a symlink on its way is one of this
/// process's `/proc/<pid>/fd/N` (`/dev/stdout`, `/dev/fd/N`): one `lstat`
/// for a path with no link.
fn own_fd(path: &Path) -> Option<std::os::fd::RawFd> {
    let mut own = None;
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        if !fs::symlink_metadata(&at).ok()?.file_type().is_symlink() {
            return None;
        }
        let dir = match at.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let dir = fs::canonicalize(dir).ok()?;
        let own = own.get_or_insert_with(|| fs::canonicalize("/proc/self/fd").ok());
        if own.as_deref() == Some(dir.as_path()) {
            return at.file_name()?.to_str()?.parse().ok();
        }
        let target = fs::read_link(&at).ok()?;
        at = dir.join(target);
    }
    None
}

/// Write `bytes` into `file` (a [`OutputFile::Stream`]) for `path`.
pub fn write_stream(mut file: fs::File, path: &Path, bytes: &[u8]) -> Result<()> {
    file.write_all(bytes)
        .and_then(|()| file.flush())
        .with_context(|| format!("writing {}", path.display()))
}

/// `-o FILE`: write `bytes` (mode 0644), replacing an existing regular file
/// only when `force`; into a FIFO, a character device or an open file of
/// ours as is (see [`output_file`]). Whether a file was written: a stream
/// (`/dev/null`, a pipe, `/dev/stdout`) is written as stdout is, and a
/// caller says "wrote" only for a file.
pub fn write_output(path: &Path, bytes: &[u8], force: bool) -> Result<bool> {
    match output_file(path)? {
        OutputFile::Stream(file) => write_stream(file, path, bytes).map(|()| false),
        OutputFile::Replace(target) => {
            if target.exists() && !force {
                bail!("{} exists; pass --force to replace it", path.display());
            }
            write_atomic(&target, bytes, 0o644).map(|()| true)
        }
    }
}

/// Write `bytes` to `path` (see [`write_target`]) through a temp file in the
/// same directory, so a reader never sees half a file.
/// Missing directories are made by the gate ([`super::checked_dir`]),
/// after the directory chain is checked, and removed again on a failure.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let path = &write_target(path)?;
    let dir = path.parent().context("a path with no parent")?;
    let name = path.file_name().context("a path with no file name")?;
    let mut made = super::checked_dir::MadeDirs::default();
    let written = super::checked_dir::CheckedDir::open(dir, path, Some(&mut made))
        .and_then(|at| at.temp_copy(name, path, bytes, mode))
        .and_then(|tmp| {
            tmp.persist()
                .with_context(|| format!("renaming into {}", path.display()))
        });
    if written.is_err() {
        made.remove_all();
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_target_follows_links_to_files_and_refuses_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        fs::write(d.join("file"), "x").unwrap();
        fs::create_dir(d.join("dir")).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(d.join("socket")).unwrap();
        std::os::unix::fs::symlink(d.join("file"), d.join("to-file")).unwrap();
        std::os::unix::fs::symlink(d.join("dir"), d.join("to-dir")).unwrap();
        std::os::unix::fs::symlink(d.join("nothing"), d.join("dangling")).unwrap();
        assert_eq!(write_target(&d.join("new")).unwrap(), d.join("new"));
        assert_eq!(write_target(&d.join("file")).unwrap(), d.join("file"));
        assert_eq!(write_target(&d.join("to-file")).unwrap(), d.join("file"));
        for (name, says) in [
            (
                "dir",
                "dir is a directory, not a regular file; not replacing it",
            ),
            (
                "socket",
                "socket is a socket, not a regular file; not replacing it",
            ),
            (
                "to-dir",
                "which is a directory, not a regular file; not replacing it",
            ),
            (
                "dangling",
                "dangling is a symlink to nothing; not writing through it",
            ),
        ] {
            let e = format!("{:#}", write_target(&d.join(name)).unwrap_err());
            assert!(e.contains(says), "{name}: {e}");
        }
        // Written through the link: the target changes, the link stays.
        write_atomic(&d.join("to-file"), b"new", 0o644).unwrap();
        assert_eq!(fs::read(d.join("file")).unwrap(), b"new");
        assert!(
            fs::symlink_metadata(d.join("to-file"))
                .unwrap()
                .is_symlink()
        );
    }
}
