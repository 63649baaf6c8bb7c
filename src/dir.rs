//! Directory listing straight from the kernel (`getdents64`), for the boot
//! path. `std::fs::read_dir` goes through libc's `opendir`, which allocates
//! with libc's malloc: the only caller of it left in the wrapper, so with
//! this the payload carries no malloc of musl's (and no malloc start-up
//! syscalls at boot). std only; Linux only, as the wrapper is.

use std::ffi::OsString;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

#[cfg(target_arch = "x86_64")]
const SYS_GETDENTS64: std::ffi::c_long = 217;
#[cfg(target_arch = "x86_64")]
const O_DIRECTORY: i32 = 0o200000;
#[cfg(target_arch = "aarch64")]
const SYS_GETDENTS64: std::ffi::c_long = 61;
#[cfg(target_arch = "aarch64")]
const O_DIRECTORY: i32 = 0o40000;

unsafe extern "C" {
    fn syscall(number: std::ffi::c_long, ...) -> std::ffi::c_long;
}

/// Offsets in `struct linux_dirent64`: d_ino u64, d_off i64, d_reclen u16,
/// d_type u8, then the NUL-terminated name.
const RECLEN_AT: usize = 16;
const NAME_AT: usize = 19;

/// The names in `dir` except `.` and `..`, in the order the kernel gives
/// them (callers sort), at most `limit` of them.
pub fn names(dir: &Path, limit: usize) -> io::Result<Vec<OsString>> {
    // O_DIRECTORY: anything else fails here (a FIFO would block in open).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_DIRECTORY)
        .open(dir)?;
    let mut out = Vec::new();
    // Not zeroed: the kernel writes what `filled` covers.
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    loop {
        // SAFETY: the buffer is valid for its capacity; the kernel writes
        // at most that many bytes and returns how many.
        let n = unsafe {
            syscall(
                SYS_GETDENTS64,
                file.as_raw_fd() as std::ffi::c_long,
                buf.as_mut_ptr(),
                buf.capacity(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Ok(out);
        }
        // SAFETY: the kernel initialised the first n bytes (n <= capacity).
        unsafe { buf.set_len((n as usize).min(buf.capacity())) };
        let filled = &buf[..];
        let mut at = 0;
        while at + NAME_AT < filled.len() {
            let reclen = u16::from_ne_bytes([filled[at + RECLEN_AT], filled[at + RECLEN_AT + 1]]);
            let end = (at + reclen as usize).min(filled.len());
            if reclen == 0 || end <= at + NAME_AT {
                // Not what the kernel writes; stop rather than loop.
                return Ok(out);
            }
            let field = &filled[at + NAME_AT..end];
            let name = &field[..field.iter().position(|&b| b == 0).unwrap_or(field.len())];
            if name != b"." && name != b".." {
                if out.len() == limit {
                    return Ok(out);
                }
                out.push(OsString::from_vec(name.to_vec()));
            }
            at = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_names_as_read_dir() {
        let dir = tempfile::tempdir().unwrap();
        let mut want: Vec<OsString> = Vec::new();
        // Enough entries, with long names, to take several getdents calls.
        for i in 0..400 {
            let name = format!("{i:03}-{}", "x".repeat(i % 200));
            std::fs::write(dir.path().join(&name), "").unwrap();
            want.push(name.into());
        }
        std::fs::create_dir(dir.path().join(".hidden")).unwrap();
        want.push(".hidden".into());
        want.sort();
        let mut got = names(dir.path(), usize::MAX).unwrap();
        got.sort();
        assert_eq!(got, want);
        let mut std_names: Vec<OsString> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        std_names.sort();
        assert_eq!(got, std_names);
        assert_eq!(names(dir.path(), 7).unwrap().len(), 7);
    }

    #[test]
    fn errors_like_read_dir() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            names(&dir.path().join("missing"), 10).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            names(&file, 10).unwrap_err().kind(),
            io::ErrorKind::NotADirectory
        );
        assert!(names(dir.path(), 10).unwrap().len() == 1);
    }
}
