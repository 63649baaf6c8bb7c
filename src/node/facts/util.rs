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

// The root facts are read from, when it is a tree the CLI was given
// (`facts --root`, `explain --root`, possibly untrusted): reads then follow
// links only inside it, as the CLI's unit reads do
// (`unit::search::contained`). The wrapper reads `/` and has none of this.
#[cfg(feature = "cli")]
thread_local! {
    static CONTAINED_IN: std::cell::RefCell<Option<PathBuf>> = const { std::cell::RefCell::new(None) };
}

/// `f()` with every read below contained in `root`.
#[cfg(feature = "cli")]
pub fn contained_in<T>(root: &Path, f: impl FnOnce() -> T) -> T {
    let before = CONTAINED_IN.with(|c| c.replace(Some(root.to_path_buf())));
    let out = f();
    CONTAINED_IN.with(|c| *c.borrow_mut() = before);
    out
}

#[cfg(not(feature = "cli"))]
pub fn contained_in<T>(_root: &Path, f: impl FnOnce() -> T) -> T {
    f()
}

/// Where to open `path` (a path under the root): inside the root, every
/// link followed there; None when it would leave it.
#[cfg(feature = "cli")]
pub fn inside(path: &Path) -> Option<std::borrow::Cow<'_, Path>> {
    use std::borrow::Cow;
    let Some(root) = CONTAINED_IN.with(|c| c.borrow().clone()) else {
        return Some(Cow::Borrowed(path));
    };
    let node = Path::new("/").join(path.strip_prefix(&root).ok()?);
    crate::node::unit::search::contained(&root, &node)
        .ok()
        .map(Cow::Owned)
}

#[cfg(not(feature = "cli"))]
#[inline(always)]
pub fn inside(path: &Path) -> Option<&Path> {
    Some(path)
}

/// The file's text, at most `cap` bytes (each byte that is not UTF-8 one
/// U+FFFD, as NFD's rules see it); None when missing or unreadable.
pub fn read_capped(path: &Path, cap: u64) -> Option<String> {
    let path = inside(path)?;
    let buf = crate::node::nodefs::read_up_to(crate::node::nodefs::open(&path).ok()?, cap as usize)
        .ok()?;
    Some(go_string(&buf))
}

/// A small file's contents with surrounding whitespace trimmed (bytes
/// that are not UTF-8 as [`go_string`] makes them). One read:
/// a sysfs attribute or an os-release file comes whole in one, and the
/// wrapper reads a hundred of them per start (open, read, close each).
pub fn read_trimmed(path: &Path) -> Option<String> {
    let path = inside(path)?;
    let mut file = crate::node::nodefs::open(&path).ok()?;
    let mut buf = [0u8; SMALL_FILE_CAP as usize];
    let n = file.read(&mut buf).ok()?;
    Some(go_string(&buf[..n]).trim().to_string())
}

/// Names in a directory, sorted, at most MAX_ENTRIES; None when unreadable.
pub fn list_dir(dir: &Path) -> Option<Vec<String>> {
    let dir = inside(dir)?;
    let mut names: Vec<String> = crate::node::nodefs::names(&dir, MAX_ENTRIES)
        .ok()?
        .into_iter()
        .filter_map(|n| n.into_string().ok())
        .collect();
    names.sort();
    Some(names)
}

/// Bytes as Go's strings are seen by its regexp and its encoding/json
/// (NFD's rules, a NodeFeature's JSON): UTF-8, each byte that is not part
/// of a whole sequence one U+FFFD (Rust's lossy decoding makes one of a
/// cut sequence: "\xe2\x82" is two runes to Go, one to it).
pub fn go_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for _ in chunk.invalid() {
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
    out
}

/// `root` joined with a path written as if absolute (`/sys/...`).
pub fn under(root: &Path, abs: &str) -> PathBuf {
    root.join(abs.trim_start_matches('/'))
}

/// Whether `path` exists, following links (Go's `os.Stat`): Some(false)
/// when it does not, None when that cannot be told (another error, or a
/// link leaving a tree the CLI was given).
pub fn exists(path: &Path) -> Option<bool> {
    let path = inside(path)?;
    match std::fs::metadata(&*path) {
        Ok(_) => Some(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
        Err(_) => None,
    }
}

/// The file's bytes, at most `cap`; None when missing or unreadable.
pub fn read_bytes(path: &Path, cap: u64) -> Option<Vec<u8>> {
    let path = inside(path)?;
    crate::node::nodefs::read_up_to(crate::node::nodefs::open(&path).ok()?, cap as usize).ok()
}
