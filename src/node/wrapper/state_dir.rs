//! The wrapper's state directory (`/run/kubelet-labeler`), which a pod
//! with a hostPath on `/run` can write into while kubelet runs: whatever
//! it plants there (a symbolic link or a hard link to any file of the
//! node, a FIFO, a device, another directory) is never written through
//! nor opened, and root never writes outside the directory.
//!
//! - the directory is opened through no link (`O_DIRECTORY|O_NOFOLLOW`),
//!   made mode 0700 when missing, and used only when it is ours: owned by
//!   the wrapper's user (root) and writable by no one else;
//! - a file is written to a new name (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode
//!   0600, a leftover there unlinked first, never opened) and renamed over
//!   the file, both relative to the directory: a link at either name is
//!   replaced, never followed;
//! - a file is read through no link, a regular file only (looked at
//!   before it is opened, see [`Dir::open_file`]), bounded, and taken only
//!   when written as the wrapper writes it: owned by its user, writable
//!   by no one else, one link.

use std::ffi::{CString, c_char, c_int, c_uint};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

use crate::node::nodefs::{self, Dir, flags};

unsafe extern "C" {
    fn openat(dirfd: c_int, path: *const c_char, flags: c_int, ...) -> c_int;
    fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    fn renameat(olddirfd: c_int, old: *const c_char, newdirfd: c_int, new: *const c_char) -> c_int;
    fn geteuid() -> c_uint;
}

/// The state directory, opened (see the module's text).
pub struct StateDir {
    dir: Dir,
}

/// The user the wrapper runs as (root on a node).
fn euid() -> u32 {
    // SAFETY: geteuid(2) takes nothing and cannot fail.
    unsafe { geteuid() }
}

/// Whether `meta` is what only the wrapper's user wrote: its owner, and
/// writable by no group and no other user.
fn ours(meta: &std::fs::Metadata) -> bool {
    meta.uid() == euid() && meta.mode() & 0o022 == 0
}

fn c_name(name: &str) -> io::Result<CString> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn check(ret: c_int) -> io::Result<c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

impl StateDir {
    /// The directory `path`, made (mode 0700) when missing and `create`;
    /// an error that says why when it is a link, not a directory, or not
    /// ours (the caller's journal line gives it).
    pub fn open(path: &Path, create: bool) -> io::Result<StateDir> {
        let dir = match Dir::open(path) {
            Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(path)?;
                Dir::open(path)
            }
            other => other,
        };
        let dir = dir.map_err(|e| {
            let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            if link {
                io::Error::new(
                    e.kind(),
                    format!(
                        "{} is a symbolic link: never followed (remove it)",
                        path.display()
                    ),
                )
            } else {
                e
            }
        })?;
        let meta = dir.metadata()?;
        if !ours(&meta) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is owned by uid {} with mode {:o}: not used, only a directory of uid {} \
                     writable by it alone is (remove it)",
                    path.display(),
                    meta.uid(),
                    meta.mode() & 0o7777,
                    euid()
                ),
            ));
        }
        Ok(StateDir { dir })
    }

    /// The file `name`, at most `limit` bytes; None when it is missing,
    /// past `limit`, or anything but a regular file the wrapper's user
    /// wrote alone with one link (see the module's text).
    pub fn read(&self, name: &str, limit: usize) -> Option<Vec<u8>> {
        let (file, _) = self.dir.open_file(name.as_ref()).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || !ours(&meta) || meta.nlink() != 1 {
            return None;
        }
        let bytes = nodefs::read_up_to(file, limit.saturating_add(1)).ok()?;
        (bytes.len() <= limit).then_some(bytes)
    }

    /// Replace the file `name` by `bytes`, written to `tmp` first (see the
    /// module's text).
    pub fn replace(&self, name: &str, tmp: &str, bytes: &[u8]) -> io::Result<()> {
        let (name, tmp) = (c_name(name)?, c_name(tmp)?);
        let fd = self.dir.as_raw_fd();
        // A leftover (a death between write and rename) or anything
        // planted there: gone, never opened.
        // SAFETY: a NUL-terminated name relative to an open directory.
        if let Err(e) = check(unsafe { unlinkat(fd, tmp.as_ptr(), 0) })
            && e.kind() != io::ErrorKind::NotFound
        {
            return Err(e);
        }
        let file_flags = flags::O_WRONLY
            | flags::O_CREAT
            | flags::O_EXCL
            | flags::O_NOFOLLOW
            | flags::O_NONBLOCK
            | flags::O_NOCTTY
            | flags::O_CLOEXEC;
        let new = loop {
            // SAFETY: as above; the kernel returns a new fd nothing owns.
            match check(unsafe { openat(fd, tmp.as_ptr(), file_flags, 0o600 as c_uint) }) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => break other?,
            }
        };
        // SAFETY: see above.
        let mut file = unsafe { File::from_raw_fd(new) };
        file.write_all(bytes)?;
        drop(file);
        // SAFETY: NUL-terminated names relative to one open directory.
        check(unsafe { renameat(fd, tmp.as_ptr(), fd, name.as_ptr()) }).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    /// Review 12 F5: the directory itself through a link, or one another
    /// user could write into, is not used, and the error says so; nothing
    /// is written where the link points.
    #[test]
    fn a_linked_or_shared_directory_is_refused() {
        let top = tempfile::tempdir().unwrap();
        let real = top.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = top.path().join("state");
        symlink(&real, &link).unwrap();
        let err = StateDir::open(&link, true).err().unwrap();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = StateDir::open(&real, true).err().unwrap();
        assert!(err.to_string().contains("mode 777: not used"), "{err}");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(StateDir::open(&real, false).is_ok());
    }

    /// Made when missing, mode 0700, and the file written mode 0600; a
    /// FIFO or a directory planted at the temporary name is never opened.
    #[test]
    fn made_private_and_written_through_nothing_planted() {
        let top = tempfile::tempdir().unwrap();
        let path = top.path().join("run/kubelet-labeler");
        assert!(StateDir::open(&path, false).is_err());
        let dir = StateDir::open(&path, true).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o700);
        let fifo = CString::new(path.join("s.tmp").as_os_str().as_encoded_bytes()).unwrap();
        unsafe extern "C" {
            fn mkfifo(path: *const c_char, mode: c_uint) -> c_int;
        }
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { mkfifo(fifo.as_ptr(), 0o600) }, 0);
        dir.replace("s", "s.tmp", b"one").unwrap();
        assert_eq!(mode(&path.join("s")), 0o600);
        assert_eq!(dir.read("s", 3).unwrap(), b"one");
        assert_eq!(dir.read("s", 2), None);
        std::fs::create_dir(path.join("s.tmp")).unwrap();
        assert!(dir.replace("s", "s.tmp", b"two").is_err());
        assert_eq!(dir.read("s", 3).unwrap(), b"one");
        for bad in ["", ".", "..", "a/b"] {
            assert!(dir.replace(bad, "t", b"").is_err(), "{bad}");
            assert!(dir.read(bad, 3).is_none(), "{bad}");
        }
    }
}
