//! The output image, written so that an interrupted run (Ctrl-C, a kill,
//! even SIGKILL or a crash) leaves nothing behind: an unnamed file in the
//! output's directory (`O_TMPFILE`), which the kernel frees when the
//! process ends, given its name only once complete. A temp file beside the
//! output, removed on drop, would stay on SIGINT (drop never runs), and a
//! signal handler that removes it would not cover SIGKILL.
//!
//! Where the filesystem has no `O_TMPFILE` (NFS, overlayfs before Linux
//! 6.6) the caller falls back to a named temp file, which an interrupted
//! run leaves (`.kubelet-labeler-iso-*`).

use std::ffi::{CStr, CString, OsStr, c_char, c_int, c_uint};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
#[cfg(not(feature = "cli"))]
use std::path::Path;

/// `__O_TMPFILE | O_DIRECTORY` (asm-generic/fcntl.h; arm64's O_DIRECTORY
/// differs).
#[cfg(target_arch = "aarch64")]
const O_TMPFILE: c_int = 0o20_000_000 | 0o40_000;
#[cfg(not(target_arch = "aarch64"))]
const O_TMPFILE: c_int = 0o20_000_000 | 0o200_000;
const O_RDWR: c_int = 0o2;
use crate::node::nodefs::flags::{O_CLOEXEC, O_CREAT, O_EXCL, O_NOFOLLOW};
const AT_FDCWD: c_int = -100;
const AT_SYMLINK_FOLLOW: c_int = 0x400;
const AT_EMPTY_PATH: c_int = 0x1000;
const SIG_BLOCK: c_int = 0;
const SIG_SETMASK: c_int = 2;

unsafe extern "C" {
    fn openat(dirfd: c_int, path: *const c_char, flags: c_int, ...) -> c_int;
    fn linkat(
        olddirfd: c_int,
        oldpath: *const c_char,
        newdirfd: c_int,
        newpath: *const c_char,
        flags: c_int,
    ) -> c_int;
    fn renameat(olddirfd: c_int, old: *const c_char, newdirfd: c_int, new: *const c_char) -> c_int;
    fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    fn sigprocmask(how: c_int, set: *const u64, old: *mut u64) -> c_int;
}

fn cvt(ret: c_int) -> io::Result<c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// One plain file name (no `/`, not `.` or `..`).
pub fn c_name(name: &OsStr) -> io::Result<CString> {
    let b = name.as_bytes();
    if b.is_empty() || b.contains(&b'/') || b == b"." || b == b".." {
        return Err(io::Error::other(format!(
            "{}: not a plain file name",
            name.to_string_lossy()
        )));
    }
    CString::new(b).map_err(|_| io::Error::other("a NUL in a file name"))
}

/// An unnamed file in the directory held at `dir` (review 19 r19c F1: on
/// its descriptor, never its path), readable and writable, mode 0600; None
/// where the filesystem (or the kernel) has none.
pub fn create(dir: &File) -> io::Result<Option<File>> {
    // SAFETY: a held descriptor, a NUL-terminated name, a mode.
    match cvt(unsafe {
        openat(
            dir.as_raw_fd(),
            c".".as_ptr(),
            O_TMPFILE | O_RDWR | O_CLOEXEC,
            0o600 as c_uint,
        )
    }) {
        // SAFETY: a descriptor just opened, owned by nothing else.
        Ok(fd) => Ok(Some(unsafe { File::from_raw_fd(fd) })),
        // EOPNOTSUPP: the filesystem has none; EISDIR/EINVAL: the kernel
        // (before 3.11) took the flag for O_DIRECTORY or refused it.
        Err(e) if matches!(e.raw_os_error(), Some(95 | 21 | 22)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A named temp file in the directory held at `dir` (mode 0600, made with
/// `O_CREAT|O_EXCL|O_NOFOLLOW` on its descriptor), where it has no
/// unnamed ones; removed on drop unless persisted.
pub struct Named {
    pub file: File,
    dir: File,
    name: Option<CString>,
}

impl Named {
    pub fn new(dir: &File) -> io::Result<Named> {
        let pid = std::process::id();
        for n in 0u32..100 {
            let name = CString::new(format!(".kubelet-labeler-iso-{pid}-{n}"))
                .map_err(|_| io::Error::other("a NUL in a file name"))?;
            // SAFETY: a held descriptor, a NUL-terminated name, a mode.
            let fd = cvt(unsafe {
                openat(
                    dir.as_raw_fd(),
                    name.as_ptr(),
                    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0o600 as c_uint,
                )
            });
            match fd {
                Ok(fd) => {
                    return Ok(Named {
                        // SAFETY: a descriptor just opened, owned by nothing else.
                        file: unsafe { File::from_raw_fd(fd) },
                        dir: dir.try_clone()?,
                        name: Some(name),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("100 temp names taken"))
    }

    /// Give it the name `to` in its directory: over a file there only
    /// when `replace` (`renameat`), else a link (`linkat`, which never
    /// replaces) and the temp name removed.
    pub fn persist(mut self, to: &CStr, replace: bool) -> io::Result<()> {
        let Some(name) = self.name.take() else {
            return Ok(());
        };
        let fd = self.dir.as_raw_fd();
        // SAFETY: a held descriptor and NUL-terminated names.
        let r = cvt(unsafe {
            if replace {
                renameat(fd, name.as_ptr(), fd, to.as_ptr())
            } else {
                linkat(fd, name.as_ptr(), fd, to.as_ptr(), 0)
            }
        });
        if r.is_err() || !replace {
            self.name = Some(name);
        }
        r.map(|_| ())
    }
}

impl Drop for Named {
    fn drop(&mut self) {
        if let Some(name) = &self.name {
            // SAFETY: a held descriptor and a NUL-terminated name.
            let _ = unsafe { unlinkat(self.dir.as_raw_fd(), name.as_ptr(), 0) };
        }
    }
}

/// Give `file` (from [`create`]) the name `name` in the directory held at
/// `dir`: over a file there only when `replace` (then through a temp name
/// there and a `renameat`, with SIGINT, SIGTERM, SIGHUP and SIGQUIT held
/// back for those two calls, so that no interruption leaves the temp
/// name). Every step on the directory's descriptor (review 19 r19c F1).
pub fn publish(file: &File, dir: &File, name: &CStr, replace: bool) -> io::Result<()> {
    let dirfd = dir.as_raw_fd();
    let link = |to: &CStr| -> io::Result<()> {
        let proc = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|_| io::Error::other("a NUL in a path"))?;
        // SAFETY: NUL-terminated paths and a held descriptor; linkat reads
        // them only.
        if unsafe {
            linkat(
                AT_FDCWD,
                proc.as_ptr(),
                dirfd,
                to.as_ptr(),
                AT_SYMLINK_FOLLOW,
            )
        } == 0
        {
            return Ok(());
        }
        let first = io::Error::last_os_error();
        if first.kind() == io::ErrorKind::AlreadyExists {
            return Err(first);
        }
        // No /proc: the descriptor itself (CAP_DAC_READ_SEARCH).
        // SAFETY: as above; "" with AT_EMPTY_PATH names the descriptor.
        let rc = unsafe {
            linkat(
                file.as_raw_fd(),
                c"".as_ptr(),
                dirfd,
                to.as_ptr(),
                AT_EMPTY_PATH,
            )
        };
        if rc == 0 { Ok(()) } else { Err(first) }
    };
    if !replace {
        return link(name);
    }
    // SIGHUP 1, SIGINT 2, SIGQUIT 3, SIGTERM 15.
    let mut set = [0u64; 16];
    set[0] = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14);
    let mut old = [0u64; 16];
    // SAFETY: 128-byte sets, as libc's sigset_t.
    unsafe { sigprocmask(SIG_BLOCK, set.as_ptr(), old.as_mut_ptr()) };
    let mut result = Err(io::Error::other("no free temp name"));
    for n in 0..100u32 {
        let tmp = CString::new(format!(".kubelet-labeler-iso-{}-{n}", std::process::id()))
            .map_err(|_| io::Error::other("a NUL in a path"))?;
        result = match link(&tmp) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => Err(e),
            // SAFETY: a held descriptor and NUL-terminated names.
            Ok(()) => cvt(unsafe { renameat(dirfd, tmp.as_ptr(), dirfd, name.as_ptr()) })
                .map(|_| ())
                .inspect_err(|_| {
                    // SAFETY: as above.
                    let _ = unsafe { unlinkat(dirfd, tmp.as_ptr(), 0) };
                }),
        };
        break;
    }
    // SAFETY: the mask saved above.
    unsafe { sigprocmask(SIG_SETMASK, old.as_ptr(), std::ptr::null_mut()) };
    result
}

/// The directory `dir` held open, for a build without the CLI's gate (the
/// fuzz targets'): opened once, each step after on its descriptor.
#[cfg(not(feature = "cli"))]
pub fn open_dir(dir: &Path) -> io::Result<File> {
    use crate::node::nodefs::flags::O_DIRECTORY;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_DIRECTORY | O_CLOEXEC)
        .open(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing in the directory until published; published, the file is
    /// there with what was written; without `replace` an existing file
    /// stays.
    #[test]
    fn an_unnamed_file_has_a_name_only_once_published() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let held = File::open(dir.path()).unwrap();
        let Some(mut f) = create(&held).unwrap() else {
            crate::skipped::skipped("O_TMPFILE: not on this filesystem");
            return;
        };
        f.write_all(b"image").unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let out = dir.path().join("out.iso");
        publish(&f, &held, c"out.iso", false).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"image");
        let mut g = create(&held).unwrap().unwrap();
        g.write_all(b"other").unwrap();
        let e = publish(&g, &held, c"out.iso", false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        publish(&g, &held, c"out.iso", true).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"other");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }
}
