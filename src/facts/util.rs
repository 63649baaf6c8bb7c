//! Bounded file reads shared by the sources.

use std::io::Read;
use std::path::{Path, PathBuf};

/// sysfs attributes and os-release are small; /proc/cpuinfo on a large
/// machine is the biggest input (about 2 KiB per logical CPU).
pub const SMALL_FILE_CAP: u64 = 4096;
pub const CPUINFO_CAP: u64 = 4 << 20;
/// More directory entries than any real node has (CPUs, PCI functions,
/// block devices, interfaces); past it the rest is ignored.
pub const MAX_ENTRIES: usize = 8192;

/// The file's text, at most `cap` bytes; None when missing or unreadable.
pub fn read_capped(path: &Path, cap: u64) -> Option<String> {
    let buf = crate::nodefs::read_up_to(crate::nodefs::open(path).ok()?, cap as usize).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// A small file's contents with surrounding whitespace trimmed. One read:
/// a sysfs attribute or an os-release file comes whole in one, and the
/// wrapper reads a hundred of them per start (open, read, close each).
pub fn read_trimmed(path: &Path) -> Option<String> {
    let mut file = crate::nodefs::open(path).ok()?;
    let mut buf = [0u8; SMALL_FILE_CAP as usize];
    let n = file.read(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).trim().to_string())
}

/// Names in a directory, sorted, at most MAX_ENTRIES; None when unreadable.
pub fn list_dir(dir: &Path) -> Option<Vec<String>> {
    let mut names: Vec<String> = crate::nodefs::names(dir, MAX_ENTRIES)
        .ok()?
        .into_iter()
        .filter_map(|n| n.into_string().ok())
        .collect();
    names.sort();
    Some(names)
}

/// `root` joined with a path written as if absolute (`/sys/...`).
pub fn under(root: &Path, abs: &str) -> PathBuf {
    root.join(abs.trim_start_matches('/'))
}
