//! The one gate for every directory the CLI writes a file into or removes
//! one from (`-o`, `--output-dir`, `man --output-dir`, `render dropins
//! --root` and its `--remove`; review 17 r17c F3, F4). The walk to it is
//! the check (review 18 r18c F2): from `/`, one name at a time with
//! `openat(O_PATH|O_NOFOLLOW)` below the descriptor held, each directory
//! judged ([`super::dir_chain`]) on its descriptor before the walk goes
//! below it, a link (root's or ours) read from its own descriptor and
//! walked on from where it sits; no path is resolved twice. Each missing
//! directory below is made (`mkdirat`) and opened (`O_NOFOLLOW|O_DIRECTORY`)
//! the same way. Temp files, renames, removals and the undoing of what was
//! made all go through the held descriptor: a link swapped in after the
//! checks is never followed. Inside a git work tree, and at or below the
//! current directory, no link is followed, whoever owns it: a checkout or
//! an unpacked tree makes links as its content says.

use std::ffi::{CString, OsStr, c_char, c_int, c_uint};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::node::nodefs::flags::{
    O_CLOEXEC, O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_PATH, O_WRONLY,
};

unsafe extern "C" {
    fn openat(dirfd: c_int, path: *const c_char, flags: c_int, ...) -> c_int;
    fn mkdirat(dirfd: c_int, path: *const c_char, mode: c_uint) -> c_int;
    fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    fn readlinkat(dirfd: c_int, path: *const c_char, buf: *mut c_char, size: usize) -> isize;
    fn renameat(olddirfd: c_int, old: *const c_char, newdirfd: c_int, new: *const c_char) -> c_int;
}

const AT_REMOVEDIR: c_int = 0x200;
const ELOOP: i32 = 40;
const ENOTDIR: i32 = 20;
const EEXIST: i32 = 17;
const ENOENT: i32 = 2;
const AT_FDCWD: c_int = -100;

/// The target of the link held (`O_PATH|O_NOFOLLOW`) at `fd`.
fn read_link(fd: &File) -> std::io::Result<PathBuf> {
    let mut buf = vec![0u8; 4097];
    // SAFETY: a held descriptor, an empty NUL-terminated name (the link
    // itself) and a buffer of `buf.len()` bytes.
    let n = unsafe {
        readlinkat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let n = usize::try_from(n).map_err(|_| std::io::Error::last_os_error())?;
    if n >= buf.len() {
        return Err(std::io::Error::other("its target is too long"));
    }
    buf.truncate(n);
    Ok(PathBuf::from(std::ffi::OsString::from_vec(buf)))
}

/// Whether the directory held at `fd` is a git work tree's top: it holds
/// `.git` (a directory, or the file of a linked worktree or submodule).
fn holds_git(fd: &File) -> bool {
    // SAFETY: a held descriptor and a NUL-terminated name.
    let r = unsafe {
        openat(
            fd.as_raw_fd(),
            c".git".as_ptr(),
            O_PATH | O_NOFOLLOW | O_CLOEXEC,
        )
    };
    if r < 0 {
        return false;
    }
    // SAFETY: a descriptor just opened, owned by nothing else: closed here.
    drop(unsafe { File::from_raw_fd(r) });
    true
}

/// Whether the directory held at `fd` is the one `dir` describes.
fn is_same_dir(fd: &File, dir: Option<&std::fs::Metadata>) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (dir, fd.metadata()) {
        (Some(dir), Ok(m)) => m.dev() == dir.dev() && m.ino() == dir.ino(),
        _ => false,
    }
}

fn cvt(ret: c_int) -> std::io::Result<c_int> {
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// One plain name (no `/`, not `.` or `..`).
fn c_name(name: &OsStr) -> Result<CString> {
    let b = name.as_bytes();
    if b.is_empty() || b.contains(&b'/') || b == b"." || b == b".." {
        bail!("{}: not a plain file name", name.to_string_lossy());
    }
    CString::new(b).with_context(|| format!("{}: a NUL in the name", name.to_string_lossy()))
}

/// A directory opened through the gate: every directory from it up to `/`
/// passed [`super::dir_chain`], judged on the descriptor held here.
pub struct CheckedDir {
    fd: File,
    /// Where it is, as shown.
    path: PathBuf,
}

/// The directories the gate made, to be removed (through the descriptor of
/// the one above each) when what they were made for is refused.
#[derive(Default)]
pub struct MadeDirs(Vec<(File, CString, PathBuf)>);

impl MadeDirs {
    /// Remove them, the last made first; a directory no longer empty (or
    /// gone) is left.
    pub fn remove_all(&mut self) {
        while let Some((parent, name, _)) = self.0.pop() {
            // SAFETY: a held descriptor and a NUL-terminated name.
            let _ = unsafe { unlinkat(parent.as_raw_fd(), name.as_ptr(), AT_REMOVEDIR) };
        }
    }
}

impl CheckedDir {
    /// The directory `dir`, for writing `shown` (a file in or below it,
    /// named in errors): walked to from `/` on descriptors (see the
    /// module's notes), then each missing one made (pushed to `made`) and
    /// opened below the last that exists.
    /// With `made` None nothing is made: a missing directory is an error.
    pub fn open(dir: &Path, shown: &Path, made: Option<&mut MadeDirs>) -> Result<CheckedDir> {
        use super::dir_chain::{Step, judge_fd, judge_link, steps};
        // By path first, for its messages; what counts is the walk below.
        super::dir_chain::check(shown)?;
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let abs = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            std::env::current_dir()
                .context("reading the current directory")?
                .join(dir)
        };
        // Review 18 r18c F2: from `/` on held descriptors, one name at a
        // time, never following a link by path: each directory is judged
        // on what was opened before the walk goes below it, and a link
        // (root's or ours only) is read from its descriptor and walked on
        // from the directory it sits in. No path is resolved twice.
        // SAFETY: a NUL-terminated path.
        let root =
            cvt(unsafe { openat(AT_FDCWD, c"/".as_ptr(), O_PATH | O_DIRECTORY | O_CLOEXEC) })
                .context("opening /")?;
        // SAFETY: a descriptor just opened, owned by nothing else.
        let root = CheckedDir {
            fd: unsafe { File::from_raw_fd(root) },
            path: PathBuf::from("/"),
        };
        judge_fd(shown, &root.path, &root.fd)?;
        // The directory the run was started in, as device and inode (none
        // when it is gone): no link at or below it is followed.
        let cwd = std::fs::metadata(".").ok();
        let mut held = vec![root];
        let mut todo = steps(&abs);
        let mut links = 0;
        while let Some(step) = todo.pop() {
            let name = match step {
                Step::Root => {
                    held.truncate(1);
                    continue;
                }
                Step::Parent => {
                    if held.len() > 1 {
                        held.pop();
                    }
                    continue;
                }
                Step::Name(name) => name,
            };
            let Some(at) = held.last() else {
                bail!("{}: no directory of it exists", shown.display());
            };
            let c = c_name(&name)?;
            let next = at.path.join(&name);
            // SAFETY: a held descriptor and a NUL-terminated name.
            let fd = cvt(unsafe {
                openat(
                    at.fd.as_raw_fd(),
                    c.as_ptr(),
                    O_PATH | O_NOFOLLOW | O_CLOEXEC,
                )
            });
            let fd = match fd {
                Ok(fd) => fd,
                Err(e) if e.raw_os_error() == Some(ENOENT) => {
                    todo.push(Step::Name(name));
                    break;
                }
                Err(e) => return Err(e).with_context(|| format!("opening {}", next.display())),
            };
            // SAFETY: a descriptor just opened, owned by nothing else.
            let fd = unsafe { File::from_raw_fd(fd) };
            let meta = fd
                .metadata()
                .with_context(|| format!("reading {}", next.display()))?;
            if meta.file_type().is_symlink() {
                links += 1;
                judge_link(shown, &next, links, &meta)?;
                // Review 19 r19b F3: in a git work tree a link is the
                // repository's content, wherever its owner: `git checkout`
                // of a pull request makes it, pointing where the pull
                // request says (another checkout's kustomization).
                if let Some(tree) = held.iter().rev().find(|d| holds_git(&d.fd)) {
                    bail!(
                        "{}: {} on the way is a symlink in the git work tree {}: where it \
                         points is the repository's content, which a pull request can set; \
                         not writing through it: give the directory it leads to",
                        shown.display(),
                        next.display(),
                        tree.path.display()
                    );
                }
                // Review 20 r20b F6: the same tree without `.git` (`git
                // archive`, a tarball checkout, CI artifacts) is where the
                // run was started, or below: a link there is the tree's
                // content too, made by whoever made the tree.
                if let Some(cwd) = held.iter().rev().find(|d| is_same_dir(&d.fd, cwd.as_ref())) {
                    bail!(
                        "{}: {} on the way is a symlink below the current directory {}: a \
                         checkout or unpacked tree makes its links as its content says, which \
                         a pull request can set; not writing through it: give the directory \
                         it leads to",
                        shown.display(),
                        next.display(),
                        cwd.path.display()
                    );
                }
                let to = read_link(&fd).with_context(|| format!("reading {}", next.display()))?;
                // Walked on from the link's directory (held), or from `/`.
                todo.extend(steps(&to));
                continue;
            }
            if !meta.is_dir() {
                bail!(
                    "{}: {} is not a directory; not writing there: move it away or choose \
                     another path",
                    shown.display(),
                    next.display()
                );
            }
            let d = CheckedDir { fd, path: next };
            judge_fd(shown, &d.path, &d.fd)?;
            held.push(d);
        }
        let Some(mut at) = held.pop() else {
            bail!("{}: no directory of it exists", shown.display());
        };
        // Shown as given when no link was followed.
        if links == 0 {
            let mut base = dir;
            for _ in 0..todo.len() {
                base = match base.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => Path::new("."),
                };
            }
            at.path = base.to_path_buf();
        }
        let mut made = made;
        while let Some(step) = todo.pop() {
            let name = match step {
                Step::Name(n) => n,
                Step::Root | Step::Parent => bail!(
                    "{}: {} does not exist; give a path without `..` below a missing directory",
                    shown.display(),
                    at.path.join("..").display()
                ),
            };
            at = match made.as_deref_mut() {
                Some(made) => at.child(&name, shown, made)?,
                None => bail!(
                    "{}: {} does not exist",
                    shown.display(),
                    at.path.join(&name).display()
                ),
            };
        }
        Ok(at)
    }

    /// Where it is, as shown.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its descriptor, for a step of its own on it (`openat`, `linkat`,
    /// `renameat` with it as the directory: never its path).
    pub fn fd(&self) -> &File {
        &self.fd
    }

    /// What is at `name` here, a link not followed (None: nothing).
    pub fn stat(&self, name: &OsStr) -> Result<Option<std::fs::Metadata>> {
        let c = c_name(name)?;
        // SAFETY: a held descriptor and a NUL-terminated name.
        let fd = cvt(unsafe {
            openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                O_PATH | O_NOFOLLOW | O_CLOEXEC,
            )
        });
        let fd = match fd {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(ENOENT) => return Ok(None),
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("reading {}", self.path.join(name).display()));
            }
        };
        // SAFETY: a descriptor just opened, owned by nothing else.
        let fd = unsafe { File::from_raw_fd(fd) };
        fd.metadata()
            .map(Some)
            .with_context(|| format!("reading {}", self.path.join(name).display()))
    }

    /// The file `name` here opened with `flags` (`O_NOFOLLOW` added: a
    /// link there is an error, never followed).
    pub fn open_file(&self, name: &OsStr, flags: c_int) -> std::io::Result<File> {
        let c = c_name(name).map_err(std::io::Error::other)?;
        // SAFETY: a held descriptor and a NUL-terminated name.
        let fd = cvt(unsafe {
            openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                flags | O_NOFOLLOW | O_CLOEXEC,
            )
        })?;
        // SAFETY: a descriptor just opened, owned by nothing else.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Its directory `name`, made (pushed to `made`) when missing, opened
    /// through no link and judged on its descriptor, for writing `shown`.
    pub fn child(&self, name: &OsStr, shown: &Path, made: &mut MadeDirs) -> Result<CheckedDir> {
        let c = c_name(name)?;
        let path = self.path.join(name);
        // SAFETY: a held descriptor and a NUL-terminated name.
        match cvt(unsafe { mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) }) {
            Ok(_) => {
                let parent = self
                    .fd
                    .try_clone()
                    .with_context(|| format!("opening {}", self.path.display()))?;
                made.0.push((parent, c.clone(), path.clone()));
            }
            Err(e) if e.raw_os_error() == Some(EEXIST) => {}
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
        self.open_child(&c, &path, shown)
    }

    /// Its directory `name` (existing), opened through no link and judged
    /// on its descriptor.
    pub fn existing_child(&self, name: &OsStr, shown: &Path) -> Result<CheckedDir> {
        let c = c_name(name)?;
        let path = self.path.join(name);
        self.open_child(&c, &path, shown)
    }

    fn open_child(&self, c: &CString, path: &Path, shown: &Path) -> Result<CheckedDir> {
        // SAFETY: a held descriptor and a NUL-terminated name.
        let fd = cvt(unsafe {
            openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
            )
        });
        let fd = match fd {
            Ok(fd) => fd,
            Err(e) if matches!(e.raw_os_error(), Some(ELOOP | ENOTDIR)) => bail!(
                "{}: {} is a symlink or not a directory; not writing through it: remove it, \
                 or choose a directory that you (uid {}) or root own",
                shown.display(),
                path.display(),
                super::dir_chain::euid()
            ),
            Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
        };
        // SAFETY: a descriptor just opened, owned by nothing else.
        let fd = unsafe { File::from_raw_fd(fd) };
        let dir = CheckedDir {
            fd,
            path: path.to_path_buf(),
        };
        super::dir_chain::judge_fd(shown, &dir.path, &dir.fd)?;
        Ok(dir)
    }

    /// `bytes` (permission bits of `mode`) in a new temp file here, to be
    /// renamed onto `name` ([`Temp::persist`]); `shown` names it in errors.
    pub fn temp_copy(&self, name: &OsStr, shown: &Path, bytes: &[u8], mode: u32) -> Result<Temp> {
        let mut tmp = self.temp(name)?;
        tmp.file
            .write_all(bytes)
            .with_context(|| format!("writing {}", shown.display()))?;
        tmp.file
            .set_permissions(std::fs::Permissions::from_mode(mode & 0o777))
            .with_context(|| format!("setting the mode of {}", shown.display()))?;
        Ok(tmp)
    }

    /// A new, empty temp file here (mode 0600), for `name`.
    pub fn temp(&self, name: &OsStr) -> Result<Temp> {
        let target = c_name(name)?;
        let pid = std::process::id();
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        for n in 0u32..100 {
            let tmp = CString::new(format!(".tmp{pid:x}{:x}", seed.wrapping_add(n)))
                .context("a temp file name")?;
            // SAFETY: a held descriptor, a NUL-terminated name, a mode.
            let fd = cvt(unsafe {
                openat(
                    self.fd.as_raw_fd(),
                    tmp.as_ptr(),
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0o600 as c_uint,
                )
            });
            match fd {
                Ok(fd) => {
                    return Ok(Temp {
                        // SAFETY: a descriptor just opened, owned by nothing else.
                        file: unsafe { File::from_raw_fd(fd) },
                        dir: self
                            .fd
                            .try_clone()
                            .with_context(|| format!("opening {}", self.path.display()))?,
                        name: Some(tmp),
                        target,
                    });
                }
                Err(e) if e.raw_os_error() == Some(EEXIST) => continue,
                Err(e) => {
                    // Why only, without the temp file's random name.
                    let e = match e.kind() {
                        k @ (std::io::ErrorKind::PermissionDenied
                        | std::io::ErrorKind::ReadOnlyFilesystem
                        | std::io::ErrorKind::NotFound) => std::io::Error::from(k),
                        _ => e,
                    };
                    return Err(e).with_context(|| {
                        format!("creating a temp file in {}", self.path.display())
                    });
                }
            }
        }
        bail!(
            "creating a temp file in {}: 100 names taken",
            self.path.display()
        )
    }

    /// Remove the file `name` here (never a directory; a link is removed,
    /// not followed).
    pub fn remove(&self, name: &OsStr) -> Result<()> {
        let c = c_name(name)?;
        // SAFETY: a held descriptor and a NUL-terminated name.
        cvt(unsafe { unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) })
            .with_context(|| format!("removing {}", self.path.join(name).display()))?;
        Ok(())
    }
}

/// A temp file in a [`CheckedDir`], removed unless persisted.
pub struct Temp {
    pub file: File,
    dir: File,
    name: Option<CString>,
    target: CString,
}

impl Temp {
    /// Rename it onto its name (replacing what is there, a link too, never
    /// following it).
    pub fn persist(mut self) -> std::io::Result<()> {
        let Some(name) = self.name.take() else {
            return Ok(());
        };
        let fd = self.dir.as_raw_fd();
        // SAFETY: a held descriptor and NUL-terminated names.
        let r = cvt(unsafe { renameat(fd, name.as_ptr(), fd, self.target.as_ptr()) });
        if r.is_err() {
            self.name = Some(name);
        }
        r.map(|_| ())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if let Some(name) = &self.name {
            // SAFETY: a held descriptor and a NUL-terminated name.
            let _ = unsafe { unlinkat(self.dir.as_raw_fd(), name.as_ptr(), 0) };
        }
    }
}

/// The file at `path` to be removed: its directory opened through the gate
/// (nothing made) and shown to take a change (a temp file made and
/// removed), so that a refusal comes before anything is removed.
pub struct Removal {
    dir: CheckedDir,
    name: std::ffi::OsString,
    pub path: PathBuf,
}

impl Removal {
    pub fn new(path: &Path) -> Result<Removal> {
        let name = path.file_name().context("a path with no file name")?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let dir = CheckedDir::open(dir, path, None)?;
        dir.temp(name)
            .with_context(|| format!("removing {}", path.display()))?;
        Ok(Removal {
            dir,
            name: name.to_os_string(),
            path: path.to_path_buf(),
        })
    }

    /// Remove it; the path removed.
    pub fn remove(self) -> Result<PathBuf> {
        self.dir.remove(&self.name)?;
        Ok(self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A directory on the way made one name at a time below the one
    /// checked: a link there (even ours) is refused, never followed, and
    /// what was made before it is removed on request.
    #[test]
    fn missing_directories_are_made_below_the_checked_one_and_links_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        fs::create_dir(d.join("outside")).unwrap();
        std::os::unix::fs::symlink(d.join("outside"), d.join("link")).unwrap();
        let mut made = MadeDirs::default();
        let at = CheckedDir::open(&d.join("a/b"), &d.join("a/b/x"), Some(&mut made)).unwrap();
        assert_eq!(at.path(), d.join("a/b"));
        at.temp_copy(OsStr::new("x"), &d.join("a/b/x"), b"ours", 0o640)
            .unwrap()
            .persist()
            .unwrap();
        assert_eq!(fs::read(d.join("a/b/x")).unwrap(), b"ours");
        let top = CheckedDir::open(d, &d.join("x"), None).unwrap();
        let e = format!(
            "{:#}",
            top.child(OsStr::new("link"), &d.join("link/x"), &mut made)
                .err()
                .unwrap()
        );
        assert!(e.contains("link is a symlink or not a directory"), "{e}");
        let mut more = MadeDirs::default();
        CheckedDir::open(&d.join("c/d"), &d.join("c/d/x"), Some(&mut more)).unwrap();
        assert!(d.join("c/d").is_dir());
        more.remove_all();
        assert!(!d.join("c").exists());
        let e = CheckedDir::open(&d.join("e"), &d.join("e/x"), None).err();
        assert!(format!("{:#}", e.unwrap()).contains("does not exist"));
        assert_eq!(fs::read_dir(d.join("outside")).unwrap().count(), 0);
    }
}
