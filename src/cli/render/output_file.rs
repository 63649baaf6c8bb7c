//! One output file: where a write lands (a regular file, or the one a
//! symlink names), streams written as stdout would be (a FIFO, a character
//! device, a descriptor of ours), and a temp file beside the target renamed
//! into place, so a reader never sees half a file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::checked_dir::{CheckedDir, MadeDirs};

/// Where a write to `path` lands: `path` when it does not exist or is a
/// regular file; when it is a symlink of yours (or root's), the regular file
/// it leads to (the link stays, its target gets the new contents). A device,
/// FIFO, socket or directory, or a link to one or to nothing, is refused:
/// the temp-file-and-rename write would replace it with a regular file. So
/// is a link another user owns (see [`follow_own_links`]), and a place
/// in a directory another user owns or may write, or below one
/// ([`super::dir_chain`]).
///
/// What it gives is only a place to write through the gate: its
/// directory is opened with [`Target::open_dir`] ([`CheckedDir`]), never
/// resolved again by path (review 19 r19c F1).
pub fn write_target(path: &Path) -> Result<Target> {
    let (target, meta) = follow_own_links(path)?;
    let Some(meta) = meta else {
        if target == path {
            super::dir_chain::check(&target)?;
            return Ok(Target(target));
        }
        bail!(
            "{} is a symlink to nothing; not writing through it (remove it or point it at a regular file)",
            path.display()
        );
    };
    if meta.is_file() {
        super::dir_chain::check(&target)?;
        return Ok(Target(target));
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

/// A regular file's place judged by [`write_target`]: written only
/// through [`Target::open_dir`], on the directory's held descriptor.
pub struct Target(PathBuf);

impl Target {
    /// Where it is (the link of ours at `-o` followed), for messages.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Its directory through the gate (walked on descriptors and judged,
    /// each missing one made into `made` when it is Some) and its name:
    /// every step after is `*at` on that descriptor.
    pub fn open_dir(
        &self,
        shown: &Path,
        made: Option<&mut MadeDirs>,
    ) -> Result<(CheckedDir, std::ffi::OsString)> {
        let dir = match self.0.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = self.0.file_name().context("a path with no file name")?;
        Ok((CheckedDir::open(dir, shown, made)?, name.to_os_string()))
    }
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
        if let Some(tree) = git_work_tree_of(&at) {
            // Review 20 r20b F1: as the gate does for the directories on
            // the way, a link in a checkout is the repository's content.
            bail!(
                "{} is a symlink to {} in the git work tree {}: where it points is the \
                 repository's content, which a pull request can set; not writing through it: \
                 give -o {} if that is the file you mean",
                at.display(),
                next.display(),
                tree.display(),
                next.display()
            );
        }
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
        if let Some(cwd) = current_dir_above(&at) {
            // Review 20 r20b F6: a tree without `.git` (`git archive`, a
            // tarball checkout) is where the run started, or below.
            bail!(
                "{} is a symlink to {} below the current directory {}: a checkout or unpacked \
                 tree makes its links as its content says, which a pull request can set; not \
                 writing through it: give -o {} if that is the file you mean",
                at.display(),
                next.display(),
                cwd.display(),
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

/// The top of the git work tree `path` is in (a directory above it holding
/// `.git`), if any.
fn git_work_tree_of(path: &Path) -> Option<PathBuf> {
    directories_above(path).find(|d| fs::symlink_metadata(d.join(".git")).is_ok())
}

/// The directories `path` is in, as spelt and as they are (review 23 r23c
/// F2: `~/prod`, the user's link to `checkout/clusters/prod`, spells no
/// directory of the checkout; where it leads is one), innermost first.
fn directories_above(path: &Path) -> impl Iterator<Item = PathBuf> {
    let spelt = absolute(path);
    let physical = spelt
        .as_deref()
        .and_then(Path::parent)
        .and_then(|d| fs::canonicalize(d).ok());
    let above = |p: Option<PathBuf>, skip: usize| {
        p.map(|p| {
            p.ancestors()
                .skip(skip)
                .map(Path::to_path_buf)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
    };
    above(spelt, 1).into_iter().chain(above(physical, 0))
}

/// `path` from `/` (a relative one from the current directory).
fn absolute(path: &Path) -> Option<PathBuf> {
    match path.is_absolute() {
        true => Some(path.to_path_buf()),
        false => Some(std::env::current_dir().ok()?.join(path)),
    }
}

/// The directory the run started in, when it is one above `path`.
fn current_dir_above(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let cwd = fs::metadata(".").ok()?;
    directories_above(path)
        .find(|d| fs::metadata(d).is_ok_and(|m| m.dev() == cwd.dev() && m.ino() == cwd.ino()))
}

/// A FIFO at `-o` is written into only when it is the caller's or root's:
/// another user's FIFO, planted where the output is expected, would hand
/// them the output (the kernel's `protected_fifos` guards only opens that
/// may create). Of character devices only the null device is taken
/// (review 19 r19c F3): any other (`/dev/kmsg`, `/dev/port`, a serial
/// line, `/dev/mem`) is no output file whoever owns it, and root owns
/// them all; a terminal or another device is written with `-o -` and the
/// shell's redirection, which the user spells out.
fn stream_owned_by_us(path: &Path, meta: &fs::Metadata) -> Result<()> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let me = super::dir_chain::euid();
    if meta.file_type().is_char_device() {
        let rdev = meta.rdev();
        let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
        let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
        if (major, minor) != (1, 3) {
            bail!(
                "{} is a character device other than the null device; not writing into it \
                 (only /dev/null is taken as a device output): give -o FILE, or -o - and \
                 redirect stdout where you mean",
                path.display()
            );
        }
        return Ok(());
    }
    let stream = meta.file_type().is_fifo();
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
    Replace(Target),
    /// Open for writing, never replaced: a FIFO or the null device, or
    /// (`own`) a file this process has open (`/dev/stdout`, `/dev/fd/N`, a
    /// shell's `>(cmd)`), written as stdout would be.
    Stream { file: fs::File, own: bool },
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
        return Ok(OutputFile::Stream {
            file: file.into(),
            own: true,
        });
    }
    match follow_own_links(path)? {
        (at, Some(m)) if m.file_type().is_fifo() || m.file_type().is_char_device() => {
            stream_owned_by_us(path, &m)?;
            open_stream(&at, path).map(|file| OutputFile::Stream { file, own: false })
        }
        _ => Ok(OutputFile::Replace(write_target(path)?)),
    }
}

/// The FIFO or null device at `at` (for `-o path`), through the gate
/// (review 19 r19c F3): its directory walked and judged on descriptors as
/// a regular file's is (a FIFO in a directory another user may write is
/// refused: they could swap it), what is there looked at on that
/// descriptor, opened there with `O_NOFOLLOW` (a link swapped in is never
/// followed), and what was opened must be what was looked at.
fn open_stream(at: &Path, path: &Path) -> Result<fs::File> {
    use std::os::unix::fs::MetadataExt;
    let dir = match at.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = at.file_name().context("a path with no file name")?;
    let dir = CheckedDir::open(dir, path, None)?;
    let Some(seen) = dir.stat(name)? else {
        bail!("{} is gone; not writing there", path.display());
    };
    stream_owned_by_us(path, &seen)?;
    let file = dir
        .open_file(name, crate::node::nodefs::flags::O_WRONLY)
        .map_err(|e| match e.raw_os_error() {
            Some(40) => anyhow::anyhow!(
                "{} became a symlink after it was looked at; not writing through it",
                path.display()
            ),
            _ => anyhow::Error::new(e).context(format!("opening {}", path.display())),
        })?;
    let opened = file
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?;
    if (opened.dev(), opened.ino()) != (seen.dev(), seen.ino()) {
        bail!(
            "{} changed while it was opened; not writing into it",
            path.display()
        );
    }
    stream_owned_by_us(path, &opened)?;
    Ok(file)
}

/// The descriptor `path` names when a symlink on its way is one of this
/// process's `/proc/<pid>/fd/N` (`/dev/stdout`, `/dev/fd/N`): one `lstat`
/// for a path with no link. Only as spelt, below `/dev` or `/proc`
/// (review 21 r21b F5): a link elsewhere to one (a checkout's
/// `out/x.yaml -> /dev/stderr`) is a link like any other. Only the names
/// of a descriptor themselves (`/dev/stdout`, `/dev/stderr`, `/dev/fd/N`,
/// `/proc/self/fd/N`, `/proc/<pid>/fd/N`; review 22 r22a F2: `/dev/shm`
/// is anyone's, and `..` leads anywhere).
fn own_fd(path: &Path) -> Option<std::os::fd::RawFd> {
    if !names_a_descriptor(path) {
        return None;
    }
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

/// Whether `path` is spelt as the name of one of this process's
/// descriptors.
fn names_a_descriptor(path: &Path) -> bool {
    let Some(p) = path.to_str() else {
        return false;
    };
    let number = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    let proc_fd = p.strip_prefix("/proc/").and_then(|r| r.split_once("/fd/"));
    matches!(p, "/dev/stdout" | "/dev/stderr")
        || p.strip_prefix("/dev/fd/").is_some_and(number)
        || proc_fd.is_some_and(|(pid, n)| (pid == "self" || number(pid)) && number(n))
}

/// Write `bytes` into `file` (a [`OutputFile::Stream`]) for `path`. A
/// descriptor of ours (`own`: `/dev/stdout`) is written as stdout is (a
/// reader that stops early ends the run quietly); a FIFO's reader that
/// stops early leaves the output incomplete: an error (review 19 r19c F2).
pub fn write_stream(mut file: fs::File, own: bool, path: &Path, bytes: &[u8]) -> Result<()> {
    if own {
        return file
            .write_all(bytes)
            .and_then(|()| file.flush())
            .map_err(|e| {
                crate::cli::output::stdout_error(e, &format!("writing {}", path.display()))
            });
    }
    crate::cli::iso::stream::copy_to_stream(&mut &bytes[..], &mut file, "the output")
        .with_context(|| format!("writing {}", path.display()))
}

/// `-o FILE`: write `bytes` (mode 0644), replacing an existing regular file
/// only when `force`; into a FIFO, a character device or an open file of
/// ours as is (see [`output_file`]). Whether a file was written: a stream
/// (`/dev/null`, a pipe, `/dev/stdout`) is written as stdout is, and a
/// caller says "wrote" only for a file.
pub fn write_output(path: &Path, bytes: &[u8], force: bool) -> Result<bool> {
    match output_file(path)? {
        OutputFile::Stream { file, own } => write_stream(file, own, path, bytes).map(|()| false),
        OutputFile::Replace(target) => {
            if target.path().exists() && !force {
                bail!("{} exists; pass --force to replace it", path.display());
            }
            write_to(&target, bytes, 0o644).map(|()| true)
        }
    }
}

/// Write `bytes` to `path` (see [`write_target`]) through a temp file in the
/// same directory, so a reader never sees half a file.
/// Missing directories are made by the gate ([`super::checked_dir`]),
/// after the directory chain is checked, and removed again on a failure.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    write_to(&write_target(path)?, bytes, mode)
}

fn write_to(target: &Target, bytes: &[u8], mode: u32) -> Result<()> {
    let path = target.path();
    let mut made = MadeDirs::default();
    let written = target
        .open_dir(path, Some(&mut made))
        .and_then(|(at, name)| at.temp_copy(&name, path, bytes, mode))
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
        assert_eq!(write_target(&d.join("new")).unwrap().path(), d.join("new"));
        assert_eq!(
            write_target(&d.join("file")).unwrap().path(),
            d.join("file")
        );
        assert_eq!(
            write_target(&d.join("to-file")).unwrap().path(),
            d.join("file")
        );
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
            let e = format!("{:#}", write_target(&d.join(name)).err().unwrap());
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

    /// Review 22 r22a F2: only a descriptor's own name reaches one of
    /// ours; `/dev/shm` (anyone's) or `..` lead to a link like any other.
    #[test]
    fn a_descriptor_is_reached_only_by_its_own_name() {
        for p in [
            "/dev/stdout",
            "/dev/stderr",
            "/dev/fd/1",
            "/dev/fd/63",
            "/proc/self/fd/2",
            "/proc/42/fd/1",
        ] {
            assert!(names_a_descriptor(Path::new(p)), "{p}");
        }
        for p in [
            "/dev/shm/node.iso",
            "/dev/../tmp/x",
            "/dev/fd/../../tmp/x",
            "/proc/self/cwd/own.ign",
            "/proc/self/fd/2/x",
            "/proc/self/fd/",
            "/dev/stdout/",
            "out/x.yaml",
        ] {
            assert!(!names_a_descriptor(Path::new(p)), "{p}");
        }
    }
}
