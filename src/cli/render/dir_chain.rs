//! The directories an output lands in, and every one above them, are
//! safe to write into: each is root's or ours, and no other user can
//! write it (not world-writable, nor writable by a group other than ours,
//! unless sticky). Otherwise whoever owns or may write one of them can
//! rename what we wrote away and put their own in its place (a manifest
//! without its taints, another ISO) before it is applied or flashed, or
//! rename a directory on the way and put one of theirs there. As
//! OpenSSH's `StrictModes` checks a user's `~/.ssh` up to `/`.
//!
//! A sticky directory (`/tmp`) of root's or ours is safe: there nobody
//! renames or removes what another owns. A group-writable directory of our
//! own group is too: RHEL's umask 002 makes every directory of a user so,
//! for the user's own private group. A link on the way is followed when
//! root or we own it; another user's is refused, as at `-o` itself.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};

unsafe extern "C" {
    fn geteuid() -> std::ffi::c_uint;
    fn getegid() -> std::ffi::c_uint;
    fn getxattr(
        path: *const std::ffi::c_char,
        name: *const std::ffi::c_char,
        value: *mut std::ffi::c_void,
        size: usize,
    ) -> isize;
    fn fgetxattr(
        fd: std::ffi::c_int,
        name: *const std::ffi::c_char,
        value: *mut std::ffi::c_void,
        size: usize,
    ) -> isize;
}

/// The user we run as.
pub fn euid() -> u32 {
    // SAFETY: geteuid(2) takes nothing and cannot fail.
    unsafe { geteuid() }
}

fn egid() -> u32 {
    // SAFETY: getegid(2) takes nothing and cannot fail.
    unsafe { getegid() }
}

/// Refuse to write `path` when the directory it lands in, or one above
/// it, is another user's or writable by others (see the module's notes).
/// What does not exist yet is made by us, so ours: the check stops there.
pub(super) fn check(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = if dir.is_absolute() {
        dir
    } else {
        std::env::current_dir()
            .context("reading the current directory")?
            .join(dir)
    };
    let mut todo = steps(&dir);
    let mut at = PathBuf::from("/");
    safe(path, &at, &fs::metadata(&at).context("reading /")?)?;
    let mut links = 0;
    while let Some(step) = todo.pop() {
        let name = match step {
            Step::Root => {
                at = PathBuf::from("/");
                continue;
            }
            Step::Parent => {
                at.pop();
                continue;
            }
            Step::Name(name) => name,
        };
        let next = at.join(name);
        let meta = match fs::symlink_metadata(&next) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            other => other.with_context(|| format!("reading {}", next.display()))?,
        };
        if meta.file_type().is_symlink() {
            links += 1;
            judge_link(path, &next, links, &meta)?;
            let to = fs::read_link(&next).with_context(|| format!("reading {}", next.display()))?;
            // Read from the link's directory (`at`), or from `/`.
            todo.extend(steps(&to));
            continue;
        }
        if !meta.is_dir() {
            // Not a directory: the write fails there on its own.
            return Ok(());
        }
        safe(path, &next, &meta)?;
        at = next;
    }
    Ok(())
}

/// A link met on the way to `path` at `next` (the `links`th): followed only
/// when root or we own it, and at most 40 of them.
pub(super) fn judge_link(path: &Path, next: &Path, links: u32, meta: &fs::Metadata) -> Result<()> {
    if links > 40 {
        bail!(
            "{}: more than 40 symlinks on the way; not writing there",
            path.display()
        );
    }
    let (me, owner) = (euid(), meta.uid());
    if owner != me && owner != 0 {
        bail!(
            "{}: {} on the way is a symlink owned by another user (uid {owner}), who \
             can point it anywhere; not writing there: give the path it leads to, in a \
             directory that you (uid {me}) or root own",
            path.display(),
            next.display()
        );
    }
    Ok(())
}

pub(super) enum Step {
    Root,
    Parent,
    Name(std::ffi::OsString),
}

/// The steps of `path`, last first (a stack).
pub(super) fn steps(path: &Path) -> Vec<Step> {
    (path.components().rev())
        .filter_map(|c| match c {
            Component::RootDir | Component::Prefix(_) => Some(Step::Root),
            Component::CurDir => None,
            Component::ParentDir => Some(Step::Parent),
            Component::Normal(n) => Some(Step::Name(n.to_os_string())),
        })
        .collect()
}

/// Whether `dir` carries an access ACL beyond its mode bits.
fn has_access_acl(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: both strings are NUL-terminated; a size of 0 asks the size
    // only, nothing is written.
    let n = unsafe {
        getxattr(
            c.as_ptr(),
            c"system.posix_acl_access".as_ptr(),
            std::ptr::null_mut(),
            0,
        )
    };
    n > 0
}

/// Whether the directory open at `dir` carries an access ACL beyond its
/// mode bits. An `O_PATH` descriptor (the gate's walk) is read through
/// `/proc/self/fd`, which names the inode held; when that cannot be read
/// either, it is taken to carry one.
fn fd_has_access_acl(dir: &fs::File) -> bool {
    use std::os::fd::AsRawFd;
    const EBADF: i32 = 9;
    const ENODATA: i32 = 61;
    const EOPNOTSUPP: i32 = 95;
    // SAFETY: a held descriptor, a NUL-terminated name; a size of 0 asks
    // the size only, nothing is written.
    let n = unsafe {
        fgetxattr(
            dir.as_raw_fd(),
            c"system.posix_acl_access".as_ptr(),
            std::ptr::null_mut(),
            0,
        )
    };
    if n >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(EBADF) {
        return n > 0;
    }
    let Ok(c) = std::ffi::CString::new(format!("/proc/self/fd/{}", dir.as_raw_fd())) else {
        return true;
    };
    // SAFETY: both strings are NUL-terminated; a size of 0 asks the size
    // only, nothing is written.
    let n = unsafe {
        getxattr(
            c.as_ptr(),
            c"system.posix_acl_access".as_ptr(),
            std::ptr::null_mut(),
            0,
        )
    };
    n > 0
        || (n < 0
            && !matches!(
                std::io::Error::last_os_error().raw_os_error(),
                Some(ENODATA | EOPNOTSUPP)
            ))
}

/// [`check`]'s judgement of one directory, on the descriptor `fd` open at
/// `dir` (on the way to `path`): what was opened, not what was looked at.
pub fn judge_fd(path: &Path, dir: &Path, fd: &fs::File) -> Result<()> {
    let meta = fd
        .metadata()
        .with_context(|| format!("reading {}", dir.display()))?;
    judge(path, dir, &meta, || fd_has_access_acl(fd))
}

/// Refuse `dir` (on the way to `path`) when another user owns it, or
/// others may write it and it is not sticky.
fn safe(path: &Path, dir: &Path, meta: &fs::Metadata) -> Result<()> {
    judge(path, dir, meta, || has_access_acl(dir))
}

fn judge(path: &Path, dir: &Path, meta: &fs::Metadata, acl: impl Fn() -> bool) -> Result<()> {
    let (me, owner, mode) = (euid(), meta.uid(), meta.mode());
    let sticky = mode & 0o1000 != 0;
    let fix = format!(
        "choose a directory that you (uid {me}) or root own and no other user can write, with \
         none above it another user's"
    );
    if owner != me && owner != 0 {
        bail!(
            "{}: {} is owned by another user (uid {owner}), who can replace what is written \
             there before it is used; not writing there: {fix}",
            path.display(),
            dir.display()
        );
    }
    if sticky {
        return Ok(());
    }
    if mode & 0o002 != 0 {
        bail!(
            "{}: {} is writable by every user (mode {:04o}) and not sticky: anyone can replace \
             what is written there before it is used; not writing there: {fix} (or chmod o-w \
             {})",
            path.display(),
            dir.display(),
            mode & 0o7777,
            dir.display()
        );
    }
    // With an access ACL the group bits are its mask: a named user or
    // group entry may let another user write (review 16 r16c F2).
    if mode & 0o020 != 0 && acl() {
        bail!(
            "{}: {} has an access ACL (see getfacl) whose mask lets its entries write: \
             another user may replace what is written there before it is used; not writing \
             there: {fix} (or setfacl -b {})",
            path.display(),
            dir.display(),
            dir.display()
        );
    }
    if mode & 0o020 != 0 && meta.gid() != egid() {
        bail!(
            "{}: {} is writable by group {} (mode {:04o}) and not sticky: its members can \
             replace what is written there before it is used; not writing there: {fix} (or \
             chmod g-w {})",
            path.display(),
            dir.display(),
            meta.gid(),
            mode & 0o7777,
            dir.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Without root: a directory of ours writable by every user, on the
    /// way or where the file lands, is refused, through a link of ours
    /// too; sticky, or not writable by others, it is not.
    #[test]
    fn a_directory_others_may_write_is_refused_unless_sticky() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let mode =
            |p: &Path, m: u32| fs::set_permissions(p, fs::Permissions::from_mode(m)).unwrap();
        fs::create_dir_all(d.join("open/below")).unwrap();
        fs::create_dir_all(d.join("sticky/below")).unwrap();
        mode(&d.join("open"), 0o777);
        mode(&d.join("sticky"), 0o1777);
        std::os::unix::fs::symlink(d.join("open/below"), d.join("link")).unwrap();
        for bad in [
            "open/x",
            "open/below/x",
            "open/missing/x",
            "link/x",
            "sticky/../open/x",
        ] {
            let e = format!("{:#}", check(&d.join(bad)).unwrap_err());
            assert!(
                e.contains(&format!(
                    "{}: {} is writable by every user (mode 0777) and not sticky",
                    d.join(bad).display(),
                    d.join("open").display()
                )),
                "{bad}: {e}"
            );
        }
        for fine in ["x", "sticky/x", "sticky/below/x", "missing/more/x"] {
            check(&d.join(fine)).unwrap_or_else(|e| panic!("{fine}: {e:#}"));
        }
    }

    /// Review 16 r16c F2: a directory of our own group, group-writable as
    /// a umask of 002 leaves it, is taken; with an access ACL giving user
    /// 65534 write (the group bits are then its mask), it is not.
    #[test]
    fn a_directory_an_acl_lets_others_write_is_refused() {
        unsafe extern "C" {
            fn setxattr(
                path: *const std::ffi::c_char,
                name: *const std::ffi::c_char,
                value: *const std::ffi::c_void,
                size: usize,
                flags: std::ffi::c_int,
            ) -> std::ffi::c_int;
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("acl");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o775)).unwrap();
        check(&dir.join("x")).unwrap();
        // POSIX ACL xattr: version 2, then (tag, perm, id) entries:
        // user::rwx user:65534:rwx group::r-x mask::rwx other::r-x.
        let mut acl = 2u32.to_le_bytes().to_vec();
        for (tag, perm, id) in [
            (1u16, 7u16, u32::MAX),
            (2, 7, 65534),
            (4, 5, u32::MAX),
            (0x10, 7, u32::MAX),
            (0x20, 5, u32::MAX),
        ] {
            acl.extend(tag.to_le_bytes());
            acl.extend(perm.to_le_bytes());
            acl.extend(id.to_le_bytes());
        }
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: NUL-terminated strings and a buffer of `acl.len()` bytes.
        let rc = unsafe {
            setxattr(
                c.as_ptr(),
                c"system.posix_acl_access".as_ptr(),
                acl.as_ptr().cast(),
                acl.len(),
                0,
            )
        };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            // A file system without POSIX ACLs cannot carry one either.
            assert_eq!(e.raw_os_error(), Some(95), "setxattr: {e}");
            eprintln!("skipped: the temporary directory's file system has no POSIX ACLs");
            return;
        }
        let e = format!("{:#}", check(&dir.join("x")).unwrap_err());
        assert!(e.contains("has an access ACL"), "{e}");
    }
}
