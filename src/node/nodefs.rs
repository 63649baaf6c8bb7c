//! The node's files as the boot path reads them, with fewer syscalls than
//! std over musl: every `open` through libc costs an extra `fcntl` (musl
//! sets FD_CLOEXEC again for kernels that ignored O_CLOEXEC), `fs::read`
//! an `fstat`, `read_to_string` on a `Take` a ladder of 32-byte reads, and
//! `read_dir` goes through `opendir`, which allocates with libc's malloc:
//! its only caller left in the wrapper, so with this the payload carries no
//! malloc of musl's. std only; raw syscalls on x86_64 and aarch64 Linux,
//! std's calls elsewhere.
//!
//! Every open is non-blocking (a FIFO or a device where a file was
//! expected opens at once, and a read of it fails instead of waiting) and
//! never makes a terminal ours. [`Dir`] reads a directory a pod may write
//! (features.d): its files opened relative to it, through no link, regular
//! files only.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read};
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod sys {
    use std::ffi::{CString, c_int, c_long};
    use std::fs::File;
    use std::io;
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    #[cfg(target_arch = "x86_64")]
    pub const SYS_OPENAT: c_long = 257;
    #[cfg(target_arch = "x86_64")]
    pub const SYS_GETDENTS64: c_long = 217;
    #[cfg(target_arch = "aarch64")]
    pub const SYS_OPENAT: c_long = 56;
    #[cfg(target_arch = "aarch64")]
    pub const SYS_GETDENTS64: c_long = 61;
    pub const O_RDONLY: c_int = 0;
    pub use super::flags::*;
    pub const AT_FDCWD: c_int = -100;

    unsafe extern "C" {
        pub fn syscall(number: c_long, ...) -> c_long;
    }

    /// openat(2) itself, close-on-exec, without libc's extra fcntl.
    pub fn open(path: &Path, flags: c_int) -> io::Result<File> {
        open_at(AT_FDCWD, path, flags)
    }

    /// openat(2) relative to the directory `dirfd`.
    pub fn open_at(dirfd: c_int, path: &Path, flags: c_int) -> io::Result<File> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        loop {
            // SAFETY: a NUL-terminated path; the kernel returns a new fd
            // that nothing else owns.
            let fd = unsafe {
                syscall(
                    SYS_OPENAT,
                    dirfd as c_long,
                    c.as_ptr(),
                    (flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) as c_long,
                    0o666 as c_long,
                )
            };
            if fd >= 0 {
                // SAFETY: see above.
                return Ok(unsafe { File::from_raw_fd(fd as c_int) });
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// open(2) flags of the architectures the node side is built for (the
/// generic values; arm64 and powerpc have their own for two of them).
pub mod flags {
    use std::ffi::c_int;

    #[cfg(any(target_arch = "aarch64", target_arch = "powerpc64"))]
    pub const O_DIRECTORY: c_int = 0o40000;
    #[cfg(any(target_arch = "aarch64", target_arch = "powerpc64"))]
    pub const O_NOFOLLOW: c_int = 0o100000;
    #[cfg(not(any(target_arch = "aarch64", target_arch = "powerpc64")))]
    pub const O_DIRECTORY: c_int = 0o200000;
    #[cfg(not(any(target_arch = "aarch64", target_arch = "powerpc64")))]
    pub const O_NOFOLLOW: c_int = 0o400000;
    pub const O_NONBLOCK: c_int = 0o4000;
    pub const O_NOCTTY: c_int = 0o400;
    pub const O_WRONLY: c_int = 1;
    pub const O_CREAT: c_int = 0o100;
    pub const O_EXCL: c_int = 0o200;
    /// The same on every architecture the node side is built for.
    pub const O_PATH: c_int = 0o10000000;
    pub const O_CLOEXEC: c_int = 0o2000000;
}

/// std's open with our flags (non-blocking, no controlling terminal).
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn std_open(path: &Path, extra: std::ffi::c_int) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags::O_NONBLOCK | flags::O_NOCTTY | extra)
        .open(path)
}

/// A file opened for reading, without blocking (a FIFO, a device).
pub fn open(path: &Path) -> io::Result<File> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    return sys::open(path, sys::O_RDONLY);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    std_open(path, 0)
}

/// A directory whose files are read without leaving it: opened through no
/// link at its last component, each file opened relative to it
/// ([`Dir::open_file`]).
pub struct Dir {
    file: File,
    /// Where it was opened (listed by path off x86_64 and aarch64).
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    path: std::path::PathBuf,
}

impl Dir {
    /// The directory `path`; an error when it is anything else, a link
    /// among them (ELOOP).
    pub fn open(path: &Path) -> io::Result<Dir> {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        return Ok(Dir {
            file: sys::open(path, sys::O_RDONLY | sys::O_DIRECTORY | sys::O_NOFOLLOW)?,
        });
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        Ok(Dir {
            file: std_open(path, flags::O_DIRECTORY | flags::O_NOFOLLOW)?,
            path: path.to_path_buf(),
        })
    }

    /// Its size as the filesystem gives it (`fstat`'s `st_size`): what
    /// listing it costs, however few names it holds now (see
    /// [`MAX_DIR_BYTES`]).
    pub fn size(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    /// Its metadata (`fstat` of the directory opened, not of a path).
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        self.file.metadata()
    }

    /// Its names except `.` and `..`, at most `limit` (as [`names`]).
    pub fn names(&self, limit: usize) -> io::Result<Vec<OsString>> {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        return Ok(names_of(&self.file, limit)?
            .into_iter()
            .map(|(n, _)| n)
            .collect());
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        names(&self.path, limit)
    }

    /// The regular file `name` in it, opened relative to it: not a link
    /// (ELOOP), not a path elsewhere (a name with `/` is refused), never
    /// blocking; anything but a regular file (a FIFO, a device, a
    /// directory) is an error, and never opened: the name is looked at
    /// first through an `O_PATH` handle, which no driver sees (opening a
    /// watchdog device arms it, a serial line's raises DTR, a tape's
    /// rewinds it, a FIFO's wakes its writer), and a regular file is then
    /// opened through that handle (`/proc/self/fd`), so a name swapped in
    /// meanwhile is never what is opened. With its size; a regular file
    /// that could not be opened so is an error of kind `Other`.
    pub fn open_file(&self, name: &std::ffi::OsStr) -> io::Result<(File, u64)> {
        use std::os::fd::AsRawFd;
        use std::os::unix::ffi::OsStrExt;
        if name.as_bytes().contains(&b'/') || name == "." || name == ".." {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let handle = open_at(
            self.file.as_raw_fd(),
            name,
            flags::O_PATH | flags::O_NOFOLLOW,
        )?;
        regular(&handle)
    }
}

impl std::os::fd::AsRawFd for Dir {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.file.as_raw_fd()
    }
}

/// The regular file `handle` (an `O_PATH` descriptor) names, opened for
/// reading through it, with its size; a link is ELOOP, anything else but
/// a regular file InvalidInput (see [`Dir::open_file`]).
fn regular(handle: &File) -> io::Result<(File, u64)> {
    use std::os::fd::AsRawFd;
    let meta = handle.metadata()?;
    if meta.file_type().is_symlink() {
        return Err(io::Error::from_raw_os_error(40));
    }
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let at = format!("/proc/self/fd/{}", handle.as_raw_fd());
    let file = open(Path::new(&at)).map_err(|e| io::Error::other(format!("{at}: {e}")))?;
    Ok((file, meta.len()))
}

/// openat(2) of `name` in the directory `dirfd` with `extra` flags, never
/// blocking, close-on-exec, no controlling terminal.
fn open_at(
    dirfd: std::ffi::c_int,
    name: &std::ffi::OsStr,
    extra: std::ffi::c_int,
) -> io::Result<File> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    return sys::open_at(dirfd, Path::new(name), sys::O_RDONLY | extra);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        use std::os::fd::FromRawFd;
        use std::os::unix::ffi::OsStrExt;
        unsafe extern "C" {
            fn openat(
                dirfd: std::ffi::c_int,
                path: *const std::ffi::c_char,
                flags: std::ffi::c_int,
                ...
            ) -> std::ffi::c_int;
        }
        let c = std::ffi::CString::new(name.as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let flags = extra | flags::O_NONBLOCK | flags::O_NOCTTY | flags::O_CLOEXEC;
        // SAFETY: a NUL-terminated name; a new fd nothing else owns.
        let got = unsafe { openat(dirfd, c.as_ptr(), flags) };
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: see above.
        Ok(unsafe { File::from_raw_fd(got) })
    }
}

/// The largest size a file's metadata may give [`read_up_to`] to size its
/// buffer at once; a file claiming more is read by doubling.
const SIZE_HINT_MAX: u64 = 16 << 20;

/// Up to `limit` bytes of `file`, read to its end (`fstat` for a size only
/// past the first 4 KiB: node files are small, and /proc reports none).
pub fn read_up_to(mut file: File, limit: usize) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut len = 0;
    let mut sized = false;
    loop {
        if len == buf.len() {
            if len >= limit {
                break;
            }
            let mut grow = buf.len().max(4096);
            // Past its first 4 KiB, a file's size (where it has one: /proc
            // files say 0) saves the doublings' zeroing and copies. Only a
            // plausible one: /proc/kcore says 128 TiB.
            if len > 0 && !sized {
                sized = true;
                if let Ok(size) = file.metadata().map(|m| m.len())
                    && size < SIZE_HINT_MAX
                {
                    grow = grow.max((size as usize).saturating_sub(len) + 1);
                }
            }
            let grow = grow.min(limit - len);
            // vec! zeroes with memset; `resize` is a byte loop at opt-level z.
            let mut bigger = vec![0u8; len + grow];
            bigger[..len].copy_from_slice(&buf[..len]);
            buf = bigger;
        }
        match file.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Opened non-blocking: a FIFO or device with nothing to read now.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::Error::new(
                    e.kind(),
                    "a FIFO or device with nothing to read now, never waited for",
                ));
            }
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    Ok(buf)
}

/// The most [`read`] takes: far above any unit file, drop-in or environment
/// file (kubelet's config: [`MAX_CONFIG_BYTES`] in all), so a file past it (a link to /dev/zero, a log)
/// fails to read instead of taking memory without end, at boot as in the
/// CLI (`explain --root`).
pub const READ_LIMIT: usize = 16 << 20;

/// The whole file (as `std::fs::read`), refused past [`READ_LIMIT`].
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    read_within(
        path,
        READ_LIMIT,
        "larger than 16 MiB, the most a node file is read",
    )
}

/// The whole file, refused past `limit` bytes (`FileTooLarge`, `why`)
/// after at most `limit + 1` are read.
pub fn read_within(path: &Path, limit: usize, why: &'static str) -> io::Result<Vec<u8>> {
    let buf = read_up_to(open(path)?, limit.saturating_add(1))?;
    if buf.len() > limit {
        return Err(io::Error::new(io::ErrorKind::FileTooLarge, why));
    }
    Ok(buf)
}

/// The regular file `path` (links followed; callers contain the path),
/// at most `limit` bytes, None past it: a FIFO, a device or a directory
/// is an error, looked at before it is opened (as [`Dir::open_file`]: no
/// device or FIFO of a tree the CLI was given is ever opened, nothing
/// there makes it wait).
pub fn read_regular(path: &Path, limit: usize) -> io::Result<Option<Vec<u8>>> {
    const AT_FDCWD: std::ffi::c_int = -100;
    let (file, _) = regular(&open_at(AT_FDCWD, path.as_os_str(), flags::O_PATH)?)?;
    let buf = read_up_to(file, limit.saturating_add(1))?;
    Ok((buf.len() <= limit).then_some(buf))
}

/// The whole file as UTF-8 (as `std::fs::read_to_string`).
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))
}

/// The most entries read from a directory of configuration (kubelet's
/// `--config-dir` and its subdirectories, a unit's drop-in directories,
/// an `EnvironmentFile=` glob's): real ones hold a few.
pub const MAX_CONFIG_ENTRIES: usize = 1024;
const _: () = assert!(MAX_CONFIG_ENTRIES == 1024, "the message says 1024");

/// The largest size (`st_size`) of a directory the node lists, and of
/// all the directories of kubelet's `--config-dir` together. A
/// directory never shrinks on ext4: one that once held millions of names
/// (a pod creating and deleting files) stays millions of entries long,
/// and listing it cold takes seconds at every start however few names it
/// holds; a thousand directories each just under this bound take as long
/// (review 10). 1024 names of 255 bytes take about 270 KB of ext4 blocks; what
/// a node's provisioning writes takes one 4 KiB block (tmpfs: 20 bytes a
/// name; btrfs and XFS a few dozen). Past this, what it holds is not read
/// and is unknown, as past [`MAX_CONFIG_ENTRIES`].
pub const MAX_DIR_BYTES: u64 = 512 << 10;
const _: () = assert!(MAX_DIR_BYTES == 512 << 10, "messages say 512 KiB");

/// The most bytes of kubelet's config read at a start: its `--config` file
/// and all its `--config-dir` drop-ins together, each charged as it is
/// read. Real ones take a few KiB (OpenShift's kubelet.conf about 3 KiB, a
/// drop-in a few hundred bytes): 1 MiB is hundreds of times that, and its
/// parse takes a few MiB of memory and milliseconds. A pod that can write
/// the `--config-dir` (a shared directory) must not make every start read
/// 1,024 files of 16 MiB ([`READ_LIMIT`]) and take gigabytes (review 12):
/// past this, what kubelet registers with is unknown, as past
/// [`MAX_CONFIG_ENTRIES`].
pub const MAX_CONFIG_BYTES: usize = 1 << 20;
const _: () = assert!(MAX_CONFIG_BYTES == 1 << 20, "messages say 1 MiB");

/// [`names`] of a directory of configuration, refused past
/// [`MAX_CONFIG_ENTRIES`] (what it holds is then unknown).
pub fn config_names(dir: &Path) -> io::Result<Vec<OsString>> {
    Ok(config_entries(dir)?.into_iter().map(|(n, _)| n).collect())
}

/// [`config_names`], each with whether it is a directory itself: a link
/// to one is not (the entry's type as `lstat` gives it, as Go's
/// `os.ReadDir` and `filepath.WalkDir` see it).
pub fn config_entries(dir: &Path) -> io::Result<Vec<(OsString, bool)>> {
    sized_config_entries(dir, false, None)
}

/// [`config_entries`] of kubelet's `--config-dir` or a directory in it,
/// its size charged to `bytes_left` (what is left of [`MAX_DIR_BYTES`]
/// for the whole walk) and refused past it, before it is listed: a pod
/// that can write there (a shared directory) must not make every start
/// take seconds, with one directory or a thousand. (Not a unit's drop-in
/// directories: past their bounds kubelet does not start.) `nofollow`: a
/// link at `dir`'s end is not followed (not a directory).
pub fn config_dir_entries(
    dir: &Path,
    nofollow: bool,
    bytes_left: &mut u64,
) -> io::Result<Vec<(OsString, bool)>> {
    sized_config_entries(dir, nofollow, Some(bytes_left))
}

fn sized_config_entries(
    dir: &Path,
    nofollow: bool,
    bytes_left: Option<&mut u64>,
) -> io::Result<Vec<(OsString, bool)>> {
    let entries = typed_entries(dir, MAX_CONFIG_ENTRIES + 1, nofollow, bytes_left)?;
    if entries.len() > MAX_CONFIG_ENTRIES {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            "more than 1024 entries",
        ));
    }
    Ok(entries
        .into_iter()
        .map(|(n, kind)| (n, kind == Kind::Dir))
        .collect())
}

/// Offsets in `struct linux_dirent64`: d_ino u64, d_off i64, d_reclen u16,
/// d_type u8, then the NUL-terminated name.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const RECLEN_AT: usize = 16;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const NAME_AT: usize = 19;

/// The names in `dir` except `.` and `..`, in the order the kernel gives
/// them (callers sort), at most `limit` of them.
pub fn names(dir: &Path, limit: usize) -> io::Result<Vec<OsString>> {
    Ok(entries(dir, limit)?.into_iter().map(|(n, _)| n).collect())
}

/// [`names`], each with whether it is a symbolic link (the entry's type
/// as the directory gives it; `lstat` where it gives none).
pub fn entries(dir: &Path, limit: usize) -> io::Result<Vec<(OsString, bool)>> {
    Ok(typed_entries(dir, limit, false, None)?
        .into_iter()
        .map(|(n, kind)| (n, kind == Kind::Link))
        .collect())
}

/// [`entries`], refused (`FileTooLarge`) when the directory's size is past
/// `max_size`, before it is listed.
#[cfg(test)]
fn entries_of_size(dir: &Path, limit: usize, max_size: u64) -> io::Result<Vec<(OsString, bool)>> {
    Ok(typed_entries(dir, limit, false, Some(&mut { max_size }))?
        .into_iter()
        .map(|(n, kind)| (n, kind == Kind::Link))
        .collect())
}

/// What a directory entry is, as `lstat` says: a link is a link, whatever
/// it leads to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Dir,
    Link,
    Other,
}

/// A directory of `size` bytes charged to `left` (of [`MAX_DIR_BYTES`]):
/// refused (`FileTooLarge`) past it.
fn charge(left: &mut u64, size: u64) -> io::Result<()> {
    *left = left.checked_sub(size).ok_or_else(|| {
        let why = match MAX_DIR_BYTES.saturating_sub(*left) {
            0 => format!("a directory of {size} bytes, past 512 KiB (recreate it)"),
            spent => format!(
                "a directory of {size} bytes, past 512 KiB in all with the {spent} bytes \
                 of those listed before it (recreate the large ones)"
            ),
        };
        io::Error::new(io::ErrorKind::FileTooLarge, why)
    })?;
    Ok(())
}

/// [`names`], each with its [`Kind`] (the entry's type as the directory
/// gives it; `lstat` where it gives none); the directory's size charged
/// to `bytes_left` ([`charge`]), before it is listed.
fn typed_entries(
    dir: &Path,
    limit: usize,
    nofollow: bool,
    bytes_left: Option<&mut u64>,
) -> io::Result<Vec<(OsString, Kind)>> {
    let kind = |t: std::fs::FileType| {
        if t.is_symlink() {
            Kind::Link
        } else if t.is_dir() {
            Kind::Dir
        } else {
            Kind::Other
        }
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let meta = match nofollow {
            true => std::fs::symlink_metadata(dir)?,
            false => std::fs::metadata(dir)?,
        };
        if meta.file_type().is_symlink() {
            return Err(io::ErrorKind::NotADirectory.into()); // as O_NOFOLLOW|O_DIRECTORY
        }
        if let Some(left) = bytes_left.filter(|_| meta.is_dir()) {
            charge(left, meta.len())?;
        }
        return std::fs::read_dir(dir)?
            .take(limit)
            .map(|e| e.and_then(|e| Ok((e.file_name(), kind(e.file_type()?)))))
            .collect();
    }
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        // O_DIRECTORY: anything else fails here.
        let nofollow = if nofollow { sys::O_NOFOLLOW } else { 0 };
        let file = sys::open(dir, sys::O_RDONLY | sys::O_DIRECTORY | nofollow)?;
        if let Some(left) = bytes_left {
            charge(left, file.metadata()?.len())?;
        }
        let out = names_of(&file, limit)?;
        Ok(out
            .into_iter()
            .map(|(name, t)| {
                let k = match t {
                    Some(DT_LNK) => Kind::Link,
                    Some(DT_DIR) => Kind::Dir,
                    // DT_UNKNOWN (0): a filesystem that does not say.
                    Some(0) | None => match std::fs::symlink_metadata(dir.join(&name)) {
                        Ok(m) => kind(m.file_type()),
                        Err(_) => Kind::Other,
                    },
                    Some(_) => Kind::Other,
                };
                (name, k)
            })
            .collect())
    }
}

/// A symbolic link's and a directory's `d_type`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const DT_LNK: u8 = 10;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const DT_DIR: u8 = 4;

/// [`names`] of the directory open as `file`, each with its `d_type`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn names_of(file: &File, limit: usize) -> io::Result<Vec<(OsString, Option<u8>)>> {
    use std::os::fd::AsRawFd;
    let mut out = Vec::new();
    // Not zeroed: the kernel writes what `filled` covers.
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    loop {
        // SAFETY: the buffer is valid for its capacity; the kernel
        // writes at most that many bytes and returns how many.
        let n = unsafe {
            sys::syscall(
                sys::SYS_GETDENTS64,
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
                out.push((
                    OsString::from_vec(name.to_vec()),
                    Some(filled[at + NAME_AT - 1]),
                ));
            }
            at = end;
        }
    }
}

/// A FIFO at `path` (tests: what a pod may leave where the node reads).
#[cfg(test)]
pub(crate) fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    unsafe extern "C" {
        fn mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
    }
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { mkfifo(c.as_ptr(), 0o644) }, 0, "{path:?}");
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

    /// `entries` says which names are links, as `lstat` would.
    #[test]
    fn entries_tell_links() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "").unwrap();
        std::fs::create_dir(dir.path().join("dir")).unwrap();
        std::os::unix::fs::symlink("file", dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink("nowhere", dir.path().join("dangling")).unwrap();
        let mut got = entries(dir.path(), usize::MAX).unwrap();
        got.sort();
        let want: Vec<(OsString, bool)> = [
            ("dangling", true),
            ("dir", false),
            ("file", false),
            ("link", true),
        ]
        .iter()
        .map(|(n, l)| (OsString::from(n), *l))
        .collect();
        assert_eq!(got, want);
        // Which are directories themselves: a link to one is not.
        std::os::unix::fs::symlink("dir", dir.path().join("to-dir")).unwrap();
        let mut got = config_entries(dir.path()).unwrap();
        got.sort();
        let dirs: Vec<&str> = got
            .iter()
            .filter(|(_, d)| *d)
            .map(|(n, _)| n.to_str().unwrap())
            .collect();
        assert_eq!((got.len(), dirs), (5, vec!["dir"]));
    }

    #[test]
    fn reads_and_creates_like_std() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        let big: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        std::io::Write::write_all(&mut std::fs::File::create(&f).unwrap(), &big).unwrap();
        assert_eq!(read(&f).unwrap(), big);
        assert_eq!(read_up_to(open(&f).unwrap(), 5000).unwrap(), big[..5000]);
        // Sized from its length past 4 KiB: every limit around it holds.
        for limit in [4096, 4097, 19_999, 20_000, 20_001, usize::MAX] {
            let got = read_up_to(open(&f).unwrap(), limit).unwrap();
            assert_eq!(got, big[..limit.min(big.len())], "{limit}");
        }
        // Read from past its start and grown since: its size is only a hint.
        let mut grown = open(&f).unwrap();
        let mut first = [0u8; 10];
        std::io::Read::read_exact(&mut grown, &mut first).unwrap();
        std::io::Write::write_all(
            &mut std::fs::OpenOptions::new().append(true).open(&f).unwrap(),
            &big,
        )
        .unwrap();
        assert_eq!(
            read_up_to(grown, usize::MAX).unwrap().len(),
            2 * big.len() - 10
        );
        // A /proc file says 0 bytes and holds more than 4 KiB.
        if let Ok(f) = open(Path::new("/proc/self/smaps")) {
            assert!(read_up_to(f, usize::MAX).unwrap().len() > 4096);
        }
        std::io::Write::write_all(&mut std::fs::File::create(&f).unwrap(), b"short").unwrap();
        assert_eq!(read_to_string(&f).unwrap(), "short", "create truncates");
        assert_eq!(
            read(&dir.path().join("missing")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            read(Path::new("/dev/zero")).unwrap_err().to_string(),
            "larger than 16 MiB, the most a node file is read"
        );
        assert!(
            read_to_string(Path::new("/proc/self/status"))
                .unwrap()
                .contains("Pid:")
        );
    }

    /// `open` on another thread: an open or read that blocks fails the
    /// test after a minute instead of hanging it (a guard, not a timing
    /// check).
    fn guarded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(f()));
        rx.recv_timeout(std::time::Duration::from_secs(60))
            .expect("a read blocked")
    }

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// A FIFO where a file was expected neither blocks the open (which
    /// waits for a writer without O_NONBLOCK) nor the read.
    #[test]
    fn a_fifo_never_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let f = fifo.clone();
        assert_eq!(
            guarded(move || read(&f).map_err(|e| e.kind())),
            Ok(Vec::new())
        );
        // With a writer that writes nothing (O_RDWR: its open does not
        // wait): refused at once, saying why.
        let _writer = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .unwrap();
        let f = fifo.clone();
        let e = guarded(move || read(&f).unwrap_err().to_string());
        assert_eq!(
            e,
            "a FIFO or device with nothing to read now, never waited for"
        );
        let d = Dir::open(dir.path()).unwrap();
        assert!(guarded(move || d.open_file("fifo".as_ref()).is_err()));
    }

    /// A FIFO, a device: never opened, only looked at (an open is what a
    /// driver acts on: a watchdog device arms, a tape rewinds). Seen here
    /// on a FIFO, whose writer waiting in open(2) wakes when it is opened
    /// for reading: it stays waiting through `open_file` and
    /// `read_regular`.
    #[test]
    fn what_is_not_a_regular_file_is_never_opened() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let woke = Arc::new(AtomicBool::new(false));
        let (w, f) = (woke.clone(), fifo.clone());
        let writer = std::thread::spawn(move || {
            // Blocks until someone opens the FIFO for reading.
            let _f = std::fs::OpenOptions::new().write(true).open(&f);
            w.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        let d = Dir::open(dir.path()).unwrap();
        let e = d.open_file("fifo".as_ref()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        let e = read_regular(&fifo, 10).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!woke.load(Ordering::SeqCst), "the FIFO was opened");
        // Release the writer (a non-blocking open for reading never waits).
        {
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(flags::O_NONBLOCK)
                .open(&fifo);
        }
        writer.join().unwrap();
        // A link is still ELOOP, a regular file still read.
        std::os::unix::fs::symlink("fifo", dir.path().join("link")).unwrap();
        std::fs::write(dir.path().join("file"), "abc").unwrap();
        let e = d.open_file("link".as_ref()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(40), "{e}");
        let (file, size) = d.open_file("file".as_ref()).unwrap();
        assert_eq!((read_up_to(file, 10).unwrap(), size), (b"abc".to_vec(), 3));
        assert_eq!(
            read_regular(&dir.path().join("file"), 10).unwrap().unwrap(),
            b"abc"
        );
    }

    /// A directory's files opened relative to it: regular files only,
    /// through no link (to a file beside them or out of the directory),
    /// and never a path elsewhere; the directory itself not through a link.
    #[test]
    fn dir_opens_its_regular_files_only() {
        use std::os::unix::fs::symlink;
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(top.path().join("secret"), "s").unwrap();
        std::fs::write(dir.join("file"), "abc").unwrap();
        symlink("file", dir.join("near")).unwrap();
        symlink(top.path().join("secret"), dir.join("far")).unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        let d = Dir::open(&dir).unwrap();
        let mut got = d.names(10).unwrap();
        got.sort();
        assert_eq!(got, ["far", "file", "near", "sub"]);
        let (file, size) = d.open_file("file".as_ref()).unwrap();
        assert_eq!((read_up_to(file, 10).unwrap(), size), (b"abc".to_vec(), 3));
        for name in ["near", "far", "sub", "../secret", "missing", "", ".", ".."] {
            assert!(d.open_file(name.as_ref()).is_err(), "{name}");
        }
        symlink(&dir, top.path().join("link")).unwrap();
        assert!(Dir::open(&top.path().join("link")).is_err());
        assert!(Dir::open(&dir.join("file")).is_err());
    }

    /// Review 9 (rboot) F5, for kubelet's --config-dir: a directory past
    /// its size (a directory
    /// emptied of millions of names keeps it) is refused as one past its
    /// entries, before it is listed; a file is still "not a directory".
    #[test]
    fn a_config_directory_past_its_size_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("10.conf"), "").unwrap();
        let size = std::fs::metadata(dir.path()).unwrap().len();
        let err = entries_of_size(dir.path(), 10, size - 1).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge, "{err}");
        assert!(err.to_string().contains(&format!("{size} bytes")), "{err}");
        assert_eq!(entries_of_size(dir.path(), 10, size).unwrap().len(), 1);
        let file = dir.path().join("10.conf");
        let mut left = MAX_DIR_BYTES;
        assert_eq!(
            config_dir_entries(&file, false, &mut left)
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotADirectory
        );
        assert_eq!(
            config_dir_entries(dir.path(), false, &mut left)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(left, MAX_DIR_BYTES - size);
    }

    /// Review 10 F1: one budget for a whole walk: each directory's size is
    /// charged, and the one past what is left is refused (before it is
    /// listed), whatever its own size; `nofollow` refuses a link.
    #[test]
    fn config_directories_share_one_budget() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("10.conf"), "").unwrap();
        let size = std::fs::metadata(dir.path()).unwrap().len();
        let mut left = 2 * size;
        for _ in 0..2 {
            assert_eq!(
                config_dir_entries(dir.path(), true, &mut left)
                    .unwrap()
                    .len(),
                1
            );
        }
        assert_eq!(left, 0);
        let err = config_dir_entries(dir.path(), false, &mut left).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge, "{err}");
        assert!(err.to_string().contains("past 512 KiB in all"), "{err}");
        let mut left = MAX_DIR_BYTES;
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(".", &link).unwrap();
        assert_eq!(
            config_dir_entries(&link, false, &mut left).unwrap().len(),
            2
        );
        let err = config_dir_entries(&link, true, &mut left).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotADirectory, "{err}");
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
