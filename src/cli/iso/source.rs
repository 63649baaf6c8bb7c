//! The input image, opened once (review 17 r17c F2): the area, the kernel
//! arguments and the walk before the area are read from one descriptor,
//! and the copy is made from it. A path opened again could name another
//! file by then (its owner renames one over it).
//!
//! An in-place write puts the config (secrets, often) into the input
//! itself (r17c F1), so the input must be a file only we (or root) may
//! write: another user's file, or one others may write, is refused. One
//! others may read gets a 0600 copy renamed over it instead, so the config
//! never lands in a file they can read (nor in an inode one of them has
//! open from before).

use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

unsafe extern "C" {
    fn geteuid() -> std::ffi::c_uint;
    fn getegid() -> std::ffi::c_uint;
}

/// The input image and how an in-place write goes.
pub struct Input {
    /// As given (for messages).
    pub path: PathBuf,
    pub file: File,
    /// In place: the regular file written (the input, or the one a link of
    /// ours leads to), and whether others may read it (then a 0600 copy is
    /// renamed over it).
    pub in_place: Option<InPlace>,
}

pub struct InPlace {
    pub target: PathBuf,
    pub copy: bool,
    /// The target's directory, held (through the CLI's gate), and its name
    /// there: the 0600 copy is made and renamed on this descriptor.
    pub dir: File,
    pub name: std::ffi::OsString,
}

impl Input {
    /// `path`, opened once: read-only, or for an in-place write read-write,
    /// through no link at its end (the links of ours before it followed by
    /// `-o`'s rules), and refused unless it is only ours to write.
    pub fn open(path: &Path, in_place: bool) -> Result<Input> {
        if !in_place {
            let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
            return Ok(Input {
                path: path.to_path_buf(),
                file,
                in_place: None,
            });
        }
        // `-o`'s rules for where a write lands: a link another user owns
        // is never written through (review 15 r15c F8), nor a directory on
        // the way theirs or writable by others.
        // Review 19 r19c F1: its directory through the gate (walked and
        // judged on descriptors), the file opened on that descriptor
        // through no link; never its path again.
        #[cfg(feature = "cli")]
        let (target, dir, name) = {
            let target = crate::cli::render::output_file::write_target(path)?;
            let (dir, name) = target.open_dir(path, None)?;
            let file = dir
                .open_file(&name, 0o2)
                .with_context(|| format!("opening {} for writing", path.display()))?;
            let held = dir
                .fd()
                .try_clone()
                .with_context(|| format!("opening {}", dir.path().display()))?;
            (target.path().to_path_buf(), (held, file), name)
        };
        #[cfg(not(feature = "cli"))]
        let (target, dir, name) = {
            let target = path.to_path_buf();
            let parent = match target.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let held = super::unnamed::open_dir(parent)
                .with_context(|| format!("opening {}", parent.display()))?;
            let name = target
                .file_name()
                .context("a path with no file name")?
                .to_os_string();
            use std::os::unix::fs::OpenOptionsExt;
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(crate::node::nodefs::flags::O_NOFOLLOW)
                .open(&target)
                .with_context(|| format!("opening {} for writing", path.display()))?;
            (target, (held, file), name)
        };
        let (dir, file) = dir;
        // What was opened, not what a path named before.
        let meta = file
            .metadata()
            .with_context(|| format!("reading {}", path.display()))?;
        let copy = in_place_copy(path, &meta)?;
        Ok(Input {
            path: path.to_path_buf(),
            file,
            in_place: Some(InPlace {
                target,
                copy,
                dir,
                name,
            }),
        })
    }

    /// Refuse to stream the image (stdout, a FIFO) from a file another
    /// user may change: a stream has no end to check before it is used.
    pub fn refuse_stream_from_shared(&self) -> Result<()> {
        let meta = self
            .file
            .metadata()
            .with_context(|| format!("reading {}", self.path.display()))?;
        if let Some(who) = others_may_write(&meta) {
            bail!(
                "{} {who}: they could change it while it is streamed, after its checks, and a \
                 stream is not read back before it is used; give -o FILE (a copy checked \
                 before it is named), or copy the ISO to a file of your own first",
                self.path.display()
            );
        }
        Ok(())
    }
}

/// Who but us (and root) may write a file: its owner when that is another
/// user, or others by its mode (a group's write bit counts unless the
/// group is ours, as `dir_chain` counts directories).
fn others_may_write(meta: &Metadata) -> Option<String> {
    let me = euid();
    // SAFETY: getegid(2) takes nothing and cannot fail.
    let my_group = unsafe { getegid() };
    let mode = meta.mode() & 0o7777;
    if meta.uid() != me && meta.uid() != 0 {
        return Some(format!("is owned by another user (uid {})", meta.uid()));
    }
    if mode & 0o002 != 0 {
        return Some(format!("is writable by every user (mode {mode:04o})"));
    }
    if mode & 0o020 != 0 && meta.gid() != my_group {
        return Some(format!(
            "is writable by group {} (mode {mode:04o})",
            meta.gid()
        ));
    }
    None
}

/// Whether an in-place write into `meta`'s file goes through a 0600 copy
/// renamed over it (others may read it); refused when it is not only ours
/// to write.
fn in_place_copy(path: &Path, meta: &Metadata) -> Result<bool> {
    if !meta.is_file() {
        bail!(
            "{} is not a regular file; not writing an ISO image into it",
            path.display()
        );
    }
    if let Some(who) = others_may_write(meta) {
        bail!(
            "{} {who}: an in-place write would put the config (secrets, often) where they \
             read it, and they could change the image after it is checked; give -o FILE for \
             a copy of your own (mode 0600){}",
            path.display(),
            if meta.uid() == euid() || meta.uid() == 0 {
                format!(", or chmod go-w {} first", path.display())
            } else {
                String::new()
            }
        );
    }
    Ok(meta.mode() & 0o077 != 0)
}

fn euid() -> u32 {
    // SAFETY: geteuid(2) takes nothing and cannot fail.
    unsafe { geteuid() }
}
