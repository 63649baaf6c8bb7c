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

use std::ffi::{CString, c_char, c_int};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// `__O_TMPFILE | O_DIRECTORY` (asm-generic/fcntl.h; arm64's O_DIRECTORY
/// differs).
#[cfg(target_arch = "aarch64")]
const O_TMPFILE: c_int = 0o20_000_000 | 0o40_000;
#[cfg(not(target_arch = "aarch64"))]
const O_TMPFILE: c_int = 0o20_000_000 | 0o200_000;
const AT_FDCWD: c_int = -100;
const AT_SYMLINK_FOLLOW: c_int = 0x400;
const AT_EMPTY_PATH: c_int = 0x1000;
const SIG_BLOCK: c_int = 0;
const SIG_SETMASK: c_int = 2;

unsafe extern "C" {
    fn linkat(
        olddirfd: c_int,
        oldpath: *const c_char,
        newdirfd: c_int,
        newpath: *const c_char,
        flags: c_int,
    ) -> c_int;
    fn sigprocmask(how: c_int, set: *const u64, old: *mut u64) -> c_int;
}

/// An unnamed file in `dir`, readable and writable, mode 0600; None where
/// the filesystem (or the kernel) has none.
pub fn create(dir: &Path) -> io::Result<Option<File>> {
    match OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(O_TMPFILE)
        .open(dir)
    {
        Ok(f) => Ok(Some(f)),
        // EOPNOTSUPP: the filesystem has none; EISDIR/EINVAL: the kernel
        // (before 3.11) took the flag for O_DIRECTORY or refused it.
        Err(e) if matches!(e.raw_os_error(), Some(95 | 21 | 22)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn c_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::other("a NUL in a path"))
}

/// Give `file` (from [`create`], in `dir`) the name `path`: over a file
/// there only when `replace` (then through a temp name in `dir` and a
/// rename, with SIGINT, SIGTERM, SIGHUP and SIGQUIT held back for those two
/// calls, so that no interruption leaves the temp name).
pub fn publish(file: &File, dir: &Path, path: &Path, replace: bool) -> io::Result<()> {
    let link = |to: &Path| -> io::Result<()> {
        let to = c_path(to)?;
        let proc = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|_| io::Error::other("a NUL in a path"))?;
        // SAFETY: NUL-terminated paths; linkat reads them only.
        if unsafe {
            linkat(
                AT_FDCWD,
                proc.as_ptr(),
                AT_FDCWD,
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
                AT_FDCWD,
                to.as_ptr(),
                AT_EMPTY_PATH,
            )
        };
        if rc == 0 { Ok(()) } else { Err(first) }
    };
    if !replace {
        return link(path);
    }
    // SIGHUP 1, SIGINT 2, SIGQUIT 3, SIGTERM 15.
    let set: [u64; 16] = [
        (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14),
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ];
    let mut old = [0u64; 16];
    // SAFETY: 128-byte sets, as libc's sigset_t.
    unsafe { sigprocmask(SIG_BLOCK, set.as_ptr(), old.as_mut_ptr()) };
    let mut result = Err(io::Error::other("no free temp name"));
    for n in 0..100u32 {
        let tmp = dir.join(format!(".kubelet-labeler-iso-{}-{n}", std::process::id()));
        result = match link(&tmp) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => Err(e),
            Ok(()) => std::fs::rename(&tmp, path).inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            }),
        };
        break;
    }
    // SAFETY: the mask saved above.
    unsafe { sigprocmask(SIG_SETMASK, old.as_ptr(), std::ptr::null_mut()) };
    result
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
        let Some(mut f) = create(dir.path()).unwrap() else {
            crate::skipped::skipped("O_TMPFILE: not on this filesystem");
            return;
        };
        f.write_all(b"image").unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let out = dir.path().join("out.iso");
        publish(&f, dir.path(), &out, false).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"image");
        let mut g = create(dir.path()).unwrap().unwrap();
        g.write_all(b"other").unwrap();
        let e = publish(&g, dir.path(), &out, false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        publish(&g, dir.path(), &out, true).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"other");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }
}
