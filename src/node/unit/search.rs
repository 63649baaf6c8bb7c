//! Which files make up a unit: the fragment from the search path, the
//! drop-in directories, and which `.conf` files apply in which order.
//! See systemd.unit(5) "Unit File Load Path" and "Description" (drop-ins).

use std::path::{Path, PathBuf};

use crate::node::sorted::SortedMap;

/// The system manager's search path of systemd 252 on Debian, highest
/// priority first (`systemd-analyze unit-paths`).
pub const SYSTEM_UNIT_PATH: &[&str] = &[
    "/etc/systemd/system.control",
    "/run/systemd/system.control",
    "/run/systemd/transient",
    "/run/systemd/generator.early",
    "/etc/systemd/system",
    "/etc/systemd/system.attached",
    "/run/systemd/system",
    "/run/systemd/system.attached",
    "/run/systemd/generator",
    "/usr/local/lib/systemd/system",
    "/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/run/systemd/generator.late",
];

/// A node path under `root`.
pub fn under(root: &Path, node: &Path) -> PathBuf {
    root.join(node.strip_prefix("/").unwrap_or(node))
}

/// Follow symlinks of a node path inside `root` (absolute targets are
/// node paths). Returns the final node path, or None for a dangling link.
pub fn resolve(root: &Path, node: &Path) -> Option<PathBuf> {
    let mut current = node.to_path_buf();
    for _ in 0..32 {
        let entry = contained_entry(root, &current).ok()?;
        let meta = match std::fs::symlink_metadata(&entry) {
            Ok(meta) => meta,
            Err(_) if node_device(root, &current) => return Some(current),
            Err(_) => return None,
        };
        if !meta.file_type().is_symlink() {
            return Some(current);
        }
        let target = std::fs::read_link(&entry).ok()?;
        current = if target.is_absolute() {
            target
        } else {
            current.parent()?.join(target)
        };
        if current == Path::new("/dev/null") {
            return Some(current);
        }
    }
    None
}

/// The node path `node` really is, with every symlink along it followed
/// inside `root`.
pub fn canonical(root: &Path, node: &Path) -> PathBuf {
    canonical_with(root, node, &mut Vec::new()).0
}

/// Whether the kernel may resolve node paths under `root` as they are:
/// at this machine's `/` it resolves them as the node does. So does the
/// wrapper's build (no `cli` feature) under any root: it runs at boot on
/// `/`, and on test trees that are ours, so the boot path gets no syscall
/// or byte for containment (the benches' `--root` trees included).
fn is_host_root(root: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    #[cfg(not(feature = "cli"))]
    if !CONTAIN.load(std::sync::atomic::Ordering::Relaxed) {
        return true;
    }
    root.as_os_str().as_bytes() == b"/"
}

/// Set by the day-2 sync: its reads under a `--root` are contained in the
/// wrapper's build too (it may be given a tree it does not own).
#[cfg(not(feature = "cli"))]
static CONTAIN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on node paths under a root other than `/` are contained in
/// every build (see [`contained`]); the CLI's build always contains them.
pub fn contain_from_now() {
    #[cfg(not(feature = "cli"))]
    CONTAIN.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn too_many_links(root: &Path, node: &Path) -> std::io::Error {
    std::io::Error::other(format!(
        "{}: too many levels of symbolic links in the tree at {}",
        node.display(),
        root.display()
    ))
}

/// Where node path `node` of the tree at `root` is on this machine, every
/// symlink on the way (the last component's too) followed inside `root`:
/// an absolute target starts at `root`, `..` stops there. What is opened
/// at the answer is what the node would open, and never a file outside the
/// tree (a `..` or an absolute link in an untrusted `--root` or in a tree
/// laid out from MachineConfigs reads the tree's file, not the host's). At
/// `/` it is [`under`]'s answer, without a syscall.
pub fn contained(root: &Path, node: &Path) -> std::io::Result<PathBuf> {
    if is_host_root(root) {
        return Ok(under(root, node));
    }
    contained_in_any_build(root, node)
}

/// [`contained`] in every build, the wrapper's too: for what must never
/// be read from outside a tree it is given (the sync's credentials under
/// `--root`). At `/`, [`under`]'s answer.
pub fn contained_in_any_build(root: &Path, node: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    if root.as_os_str().as_bytes() == b"/" {
        return Ok(under(root, node));
    }
    match canonical_with(root, node, &mut Vec::new()) {
        (c, true) => Ok(under(root, &c)),
        (_, false) => Err(too_many_links(root, node)),
    }
}

/// [`contained`] for the directory `node` is in, the last component kept:
/// for `lstat` and `readlink` of the entry itself.
pub fn contained_entry(root: &Path, node: &Path) -> std::io::Result<PathBuf> {
    if is_host_root(root) {
        return Ok(under(root, node));
    }
    // `..` and `.` name no entry; canonical takes them as a walk.
    let name = match node.components().next_back() {
        Some(std::path::Component::Normal(name)) => name,
        _ => return contained(root, node),
    };
    let dir = node.parent().unwrap_or(Path::new("/"));
    Ok(contained(root, dir)?.join(name))
}

/// What readlink said of a node path (under the root, as the kernel
/// resolves it).
#[derive(Debug, Clone)]
enum Link {
    To(PathBuf),
    /// There, or unreadable: not a link.
    Plain,
    /// ENOENT or ENOTDIR: nothing below it exists either.
    Missing,
}

/// readlink results by node path, shared by the calls for one unit: the
/// search path's directories share prefixes (`/etc`, `/run/systemd`, ...),
/// and the wrapper would otherwise ask the kernel about each one again.
type LinkCache = Vec<(PathBuf, Link)>;

/// Whether `node` (or a directory above it) is known to be missing under
/// the root: then so is everything below it, no syscall needed.
fn known_missing(cache: &LinkCache, node: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let n = node.as_os_str().as_bytes();
    cache.iter().any(|(p, link)| {
        let p = p.as_os_str().as_bytes();
        matches!(link, Link::Missing)
            && n.starts_with(p)
            && (n.len() == p.len() || n[p.len()] == b'/')
    })
}

/// (the canonical node path, whether every link on it was followed: false
/// when it stopped after 32, where the kernel would go on).
fn canonical_with(root: &Path, node: &Path, cache: &mut LinkCache) -> (PathBuf, bool) {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    // On bytes, not `Path`: this runs for each search directory at every
    // kubelet start, and `Path::join`/`components` cost ten times as much.
    // Names split as `Path::components` would: no empty parts, no `.`;
    // `..` kept, in `node` as in link targets: it goes up from what is
    // resolved so far, and never above the root.
    fn names(path: &[u8]) -> impl DoubleEndedIterator<Item = &[u8]> {
        path.split(|&b| b == b'/')
            .filter(move |n| !n.is_empty() && *n != b".")
    }
    let mut out: Vec<u8> = b"/".to_vec();
    let mut pending: Vec<Vec<u8>> = names(node.as_os_str().as_bytes())
        .rev()
        .map(<[u8]>::to_vec)
        .collect();
    let mut hops = 0;
    let mut complete = true;
    while let Some(part) = pending.pop() {
        if part == b".." {
            // `out` has no links left in it: its parent is lexical.
            // PathBuf::pop: drop the last name; "/" stays "/".
            let cut = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
            out.truncate(cut.max(1));
            continue;
        }
        let mut next = out.clone();
        if next.last() != Some(&b'/') {
            next.push(b'/');
        }
        next.extend_from_slice(&part);
        let next = PathBuf::from(std::ffi::OsString::from_vec(next));
        let known = cache
            .iter()
            .find(|(p, _)| p.as_os_str() == next.as_os_str());
        let link = match known {
            Some((_, link)) => link.clone(),
            None if known_missing(cache, &next) => Link::Missing,
            None => {
                let link = match std::fs::read_link(under(root, &next)) {
                    Ok(target) => Link::To(target),
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                        ) =>
                    {
                        Link::Missing
                    }
                    Err(_) => Link::Plain,
                };
                cache.push((next.clone(), link.clone()));
                link
            }
        };
        match link {
            Link::To(target) if hops < 32 => {
                hops += 1;
                let target = target.as_os_str().as_bytes();
                if target.starts_with(b"/") {
                    out.truncate(1);
                }
                pending.extend(names(target).rev().map(<[u8]>::to_vec));
            }
            Link::To(_) => {
                complete = false;
                out = next.into_os_string().into_vec();
            }
            _ => out = next.into_os_string().into_vec(),
        }
    }
    (PathBuf::from(std::ffi::OsString::from_vec(out)), complete)
}

/// Search directories with duplicates dropped (`/lib` is `/usr/lib` on a
/// merged-usr system): systemd keeps the first, so units there are reported
/// under the first name.
pub fn dedup_dirs(root: &Path, dirs: &[PathBuf]) -> Vec<PathBuf> {
    dedup_dirs_with(root, dirs, &mut LinkCache::new())
}

fn dedup_dirs_with(root: &Path, dirs: &[PathBuf], cache: &mut LinkCache) -> Vec<PathBuf> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for d in dirs {
        let c = canonical_with(root, d, cache).0;
        // Canonical paths are normalized: bytes compare as `Path`'s
        // component-wise `==` would, at a fraction of the cost (every start).
        if !seen
            .iter()
            .any(|s: &PathBuf| s.as_os_str() == c.as_os_str())
        {
            seen.push(c);
            out.push(d.clone());
        }
    }
    out
}

/// Empty file, or a link to /dev/null or another character device: masks
/// a unit or a drop-in (systemd's null_or_empty: a fragment linked to
/// /dev/zero is masked; a drop-in so linked systemd reads to its end, which
/// /dev/zero never has, and /dev/urandom's garbage it drops at the first
/// bad line: nothing, as masked).
pub fn is_masked(root: &Path, node: &Path) -> bool {
    match resolve(root, node) {
        Some(p) if p == Path::new("/dev/null") => true,
        Some(p) => match contained(root, &p).and_then(std::fs::metadata) {
            Ok(m) => null_or_empty(&m),
            Err(_) => node_device(root, &p),
        },
        None => false,
    }
}

/// A path under /dev that a tree other than `/` does not hold: a device of
/// the node's (its /dev is devtmpfs at boot, not the tree's), which
/// [`is_masked`] takes as the character device it is there.
fn node_device(root: &Path, node: &Path) -> bool {
    !is_host_root(root) && node.starts_with("/dev/")
}

/// systemd's null_or_empty: an empty regular file or a character device.
pub fn null_or_empty(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    (m.is_file() && m.len() == 0) || m.file_type().is_char_device()
}

/// (prefix, instance, suffix): `foo@bar.service` → (`foo`, Some(`bar`), `service`).
pub fn split_name(name: &str) -> Option<(&str, Option<&str>, &str)> {
    let (stem, suffix) = name.rsplit_once('.')?;
    Some(match stem.split_once('@') {
        Some((p, i)) => (p, Some(i), suffix),
        None => (stem, None, suffix),
    })
}

fn template_of(name: &str) -> Option<String> {
    let (prefix, instance, suffix) = split_name(name)?;
    instance
        .filter(|i| !i.is_empty())
        .map(|_| format!("{prefix}@.{suffix}"))
}

/// The directories to look for drop-ins of `name` in one search dir, in
/// systemd's order: `name.d`, the template's, then dash prefixes.
fn dropin_dir_names(name: &str, out: &mut Vec<String>) {
    out.push(format!("{name}.d"));
    if let Some(t) = template_of(name) {
        dropin_dir_names(&t, out);
    }
    let Some((prefix, instance, suffix)) = split_name(name) else {
        return;
    };
    // "foo-bar-baz" → "foo-bar-", and recursively "foo-"; a trailing dash
    // is chopped once first.
    let mut p = prefix.to_string();
    let mut chopped = false;
    loop {
        let Some(dash) = p.rfind('-') else { return };
        if dash == 0 {
            return;
        }
        if dash + 1 < p.len() || chopped {
            p.truncate(dash + 1);
            break;
        }
        p.truncate(dash);
        chopped = true;
    }
    // A template's own prefixes are looked up without the '@'.
    let built = match instance.filter(|i| !i.is_empty()) {
        Some(i) => format!("{p}@{i}.{suffix}"),
        None => format!("{p}.{suffix}"),
    };
    dropin_dir_names(&built, out);
}

/// The most entries of a search directory listed for aliases: real ones
/// hold a few hundred units.
pub const MAX_SEARCH_DIR_ENTRIES: usize = 16384;

/// A plain unit name of type `suffix` (unit-name.c's characters; no `@`:
/// instances and templates keep their own names here).
fn plain_unit_name(name: &[u8], suffix: &str) -> bool {
    let Some(prefix) = name
        .strip_suffix(suffix.as_bytes())
        .and_then(|p| p.strip_suffix(b"."))
    else {
        return false;
    };
    name.len() < 256
        && !prefix.is_empty()
        && prefix
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || b":-_.\\".contains(&c))
}

/// The names systemd 252 knows the plain unit `name` by (unit-file.c's
/// name map): first the unit's own (the name its symlinks lead to, when
/// `name` is itself an alias), then every other name whose symlink in the
/// search path leads to it (`Alias=`, an admin's link), in byte order.
/// Each name's drop-in directories apply to the unit. A symlink to a file
/// outside the search path is a linked unit of its own name, not an alias;
/// the first entry of a name in search order decides, as for fragments.
/// Err: a search directory past [`MAX_SEARCH_DIR_ENTRIES`].
fn unit_names(
    root: &Path,
    all_dirs: &[PathBuf],
    dirs: &[PathBuf],
    name: &str,
    cache: &mut LinkCache,
) -> Result<Vec<String>, String> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let Some((_, None, suffix)) = split_name(name) else {
        return Ok(vec![name.to_string()]);
    };
    // Each name: None for a unit file (or a linked one), else the name of
    // the unit it is an alias of.
    let mut ids: SortedMap<Vec<u8>, Option<Vec<u8>>> = SortedMap::new();
    let present: Vec<&PathBuf> = dirs.iter().filter(|d| !known_missing(cache, d)).collect();
    for dir in present {
        let Ok(at) = contained(root, dir) else {
            continue;
        };
        let Ok(entries) = crate::node::nodefs::entries(&at, MAX_SEARCH_DIR_ENTRIES + 1) else {
            continue;
        };
        if entries.len() > MAX_SEARCH_DIR_ENTRIES {
            return Err(format!(
                "{}: more than {MAX_SEARCH_DIR_ENTRIES} entries",
                dir.display()
            ));
        }
        for (entry, link) in entries {
            let n = entry.as_bytes();
            if !plain_unit_name(n, suffix) || ids.contains_key(n) {
                continue;
            }
            if !link {
                ids.insert(n.to_vec(), None);
                continue;
            }
            let Ok(target) = std::fs::read_link(at.join(&entry)) else {
                continue;
            };
            let target = dir.join(target);
            let (Some(parent), Some(base)) = (target.parent(), target.file_name()) else {
                continue;
            };
            let parent = canonical_with(root, parent, cache).0;
            if !all_dirs.iter().any(|d| parent.starts_with(d)) {
                ids.insert(n.to_vec(), None);
                continue;
            }
            let base = base.as_bytes();
            // A link to its own name is no alias; one to a unit of another
            // type or a template is refused.
            if base != n && plain_unit_name(base, suffix) {
                ids.insert(n.to_vec(), Some(base.to_vec()));
            }
        }
    }
    let main_of = |n: &[u8]| {
        let mut id = n.to_vec();
        for _ in 0..32 {
            match ids.get(&id)? {
                None => return Some(id),
                Some(next) => id = next.clone(),
            }
        }
        None
    };
    let main = main_of(name.as_bytes()).unwrap_or_else(|| name.as_bytes().to_vec());
    let mut names = vec![main.clone()];
    for n in ids.keys() {
        if *n != main && main_of(n).as_ref() == Some(&main) {
            names.push(n.clone());
        }
    }
    if !names.iter().any(|n| n == name.as_bytes()) {
        names.push(name.as_bytes().to_vec());
    }
    Ok(names
        .into_iter()
        .map(|n| {
            std::ffi::OsString::from_vec(n)
                .to_string_lossy()
                .into_owned()
        })
        .collect())
}

/// The unit's files: (fragment node path, masked, drop-ins in order).
pub struct UnitFiles {
    /// The unit's names, its own (its id, `%n`) first, then its aliases.
    pub names: Vec<String>,
    pub fragment: Option<PathBuf>,
    pub masked: bool,
    pub dropins: Vec<PathBuf>,
    /// A drop-in directory past its bound (`nodefs::MAX_CONFIG_ENTRIES`):
    /// the unit cannot be known.
    pub refused: Option<String>,
}

pub fn find(root: &Path, dirs: &[PathBuf], name: &str) -> UnitFiles {
    // The readlinks that canonicalize the search path also tell which of
    // its directories are missing: nothing is looked up below those.
    let mut cache = LinkCache::new();
    let all_dirs = dirs;
    let dirs = &dedup_dirs_with(root, dirs, &mut cache);
    let mut names = vec![name.to_string()];
    if let Some(t) = template_of(name) {
        names.push(t);
    }
    let mut fragment = None;
    let mut masked = false;
    'outer: for n in &names {
        for dir in dirs {
            if known_missing(&cache, dir) {
                continue;
            }
            let candidate = dir.join(n);
            if let Ok(meta) = contained_entry(root, &candidate).and_then(std::fs::symlink_metadata)
            {
                if !meta.file_type().is_symlink() {
                    // What is_masked and resolve would say, from this lstat.
                    masked = null_or_empty(&meta);
                    if !masked {
                        fragment = Some(candidate);
                    }
                } else if is_masked(root, &candidate) {
                    masked = true;
                } else {
                    fragment = resolve(root, &candidate);
                }
                break 'outer;
            }
        }
    }

    // The unit's own name's directories in every search directory, then
    // each alias's (systemd's unit_file_find_dropin_paths).
    let mut refused = None;
    let unit_names = match unit_names(root, all_dirs, dirs, name, &mut cache) {
        Ok(n) => n,
        Err(why) => {
            refused = Some(why);
            vec![name.to_string()]
        }
    };
    let mut dropin_dirs: Vec<PathBuf> = Vec::new();
    for n in &unit_names {
        let mut dir_names = Vec::new();
        dropin_dir_names(n, &mut dir_names);
        for dir in dirs.iter().filter(|d| !known_missing(&cache, d)) {
            for d in &dir_names {
                dropin_dirs.push(dir.join(d));
            }
        }
    }
    // The type-level directory (`service.d`) comes last, being most generic.
    if let Some((_, _, suffix)) = split_name(name) {
        for dir in dirs.iter().filter(|d| !known_missing(&cache, d)) {
            dropin_dirs.push(dir.join(format!("{suffix}.d")));
        }
    }
    // First occurrence of a basename wins; then byte order of basenames.
    let mut winners: SortedMap<Vec<u8>, PathBuf> = SortedMap::new();
    for d in &dropin_dirs {
        // systemd chases symlinks in a drop-in directory's path and names
        // its files by the result (on Debian /lib/... shows as /usr/lib/...).
        let mut names = match contained(root, d).and_then(|d| crate::node::nodefs::config_names(&d))
        {
            Ok(n) => n,
            // Past its bound: what it holds is unknown, the unit with it too.
            Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                refused.get_or_insert_with(|| format!("{}: {e}", d.display()));
                continue;
            }
            Err(_) => continue,
        };
        // Only for directories that exist: the wrapper runs at every start.
        if !in_path_cache(root, d) {
            continue;
        }
        let d = &canonical_with(root, d, &mut cache).0;
        names.sort();
        for fname in names {
            use std::os::unix::ffi::OsStrExt;
            let b = fname.as_bytes();
            if b.starts_with(b".") || !b.ends_with(b".conf") || winners.contains_key(b) {
                continue;
            }
            winners.insert(b.to_vec(), d.join(&fname));
        }
    }
    UnitFiles {
        names: unit_names,
        fragment,
        masked,
        dropins: winners.into_values().collect(),
        refused,
    }
}

/// Whether systemd 252 looks in the drop-in directory `d` (a name in a
/// search directory, listed as a directory) at all: its unit path cache
/// (unit-file.c's unit_file_build_name_map) holds a directory there, or a
/// link whose target, as written, is a directory, a relative one taken from
/// the manager's working directory, `/`, not from the link's. So a relative
/// link to a directory beside it is ignored (`kubelet.service.d ->
/// ../shared.d` counts only where `/shared.d` is a directory), an absolute
/// one followed; then the link is followed as any path. Following every
/// link applied drop-ins systemd never reads: another command than its.
fn in_path_cache(root: &Path, d: &Path) -> bool {
    let Ok(entry) = contained_entry(root, d) else {
        return false;
    };
    match std::fs::read_link(entry) {
        Ok(target) => contained(root, &Path::new("/").join(target))
            .and_then(std::fs::metadata)
            .is_ok_and(|m| m.is_dir()),
        // Not a link: the directory it was listed as.
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relative links (with `..`, chains, a link to a link's parent) resolve
    /// as the kernel resolves them: realpath under the root is the answer.
    /// (Node paths themselves are normalized: systemd's search directories.)
    #[test]
    fn canonical_agrees_with_realpath() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["usr/lib/systemd/system", "etc/x/y", "run/a"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        symlink("usr/lib", root.join("lib")).unwrap();
        symlink("../../usr/lib/systemd", root.join("etc/x/sd")).unwrap();
        symlink("sd/system", root.join("etc/x/units")).unwrap();
        symlink("./y/../../x/./y", root.join("etc/x/self")).unwrap();
        symlink("../../lib/systemd/system", root.join("run/a/via-link")).unwrap();
        for node in [
            "/lib/systemd/system",
            "/etc/x/units",
            "/etc/x/self",
            "/run/a/via-link",
            "/usr/lib/systemd/system",
        ] {
            let real = root.join(&node[1..]).canonicalize().unwrap();
            let want = Path::new("/").join(real.strip_prefix(&root).unwrap());
            assert_eq!(canonical(&root, Path::new(node)), want, "{node}");
        }
        // An absolute target is a node path; a loop ends after 32 hops.
        symlink("/usr/lib", root.join("run/a/abs")).unwrap();
        assert_eq!(
            canonical(&root, Path::new("/run/a/abs/systemd")),
            Path::new("/usr/lib/systemd")
        );
        symlink("loop", root.join("run/a/loop")).unwrap();
        assert_eq!(
            canonical(&root, Path::new("/run/a/loop")),
            Path::new("/run/a/loop")
        );
        // Missing parts are kept as written.
        assert_eq!(
            canonical(&root, Path::new("/lib/nothing/here")),
            Path::new("/usr/lib/nothing/here")
        );
    }

    /// Absolute links and `..` stay in the root; a loop is an error, not
    /// the kernel's walk out of it; `/` is left to the kernel.
    #[test]
    fn contained_paths_never_leave_the_root() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let host = dir.path().join("host");
        std::fs::create_dir_all(root.join("etc/real")).unwrap();
        std::fs::create_dir_all(&host).unwrap();
        std::fs::write(host.join("secret"), "host").unwrap();
        symlink("/etc/real", root.join("etc/abs")).unwrap();
        symlink(host.join("secret"), root.join("etc/out")).unwrap();
        symlink("../../../../../..", root.join("etc/up")).unwrap();
        symlink("loop", root.join("etc/loop")).unwrap();
        let c = |node: &str| contained(&root, Path::new(node));
        assert_eq!(c("/etc/abs/f").unwrap(), root.join("etc/real/f"));
        assert_eq!(
            c("/etc/out").unwrap(),
            under(&root, &host.join("secret")),
            "the host path, inside the root"
        );
        assert!(std::fs::read(c("/etc/out").unwrap()).is_err());
        assert_eq!(c("/etc/../../../x").unwrap(), root.join("x"));
        assert_eq!(c("/etc/up/etc/out").unwrap(), c("/etc/out").unwrap());
        assert!(c("/etc/loop/x").is_err());
        // The entry itself: its directory resolved, the link kept.
        assert_eq!(
            contained_entry(&root, Path::new("/etc/abs/../out")).unwrap(),
            root.join("etc/out")
        );
        assert_eq!(
            contained(Path::new("/"), Path::new("/etc/../x")).unwrap(),
            Path::new("/etc/../x")
        );
    }

    #[test]
    fn dash_prefix_and_template_dirs() {
        let mut v = Vec::new();
        dropin_dir_names("foo-bar-baz.service", &mut v);
        assert_eq!(
            v,
            [
                "foo-bar-baz.service.d",
                "foo-bar-.service.d",
                "foo-.service.d"
            ]
        );
        let mut v = Vec::new();
        dropin_dir_names("tpl@x.service", &mut v);
        assert_eq!(v, ["tpl@x.service.d", "tpl@.service.d"]);
        let mut v = Vec::new();
        dropin_dir_names("a-b@x.service", &mut v);
        assert_eq!(
            v,
            [
                "a-b@x.service.d",
                "a-b@.service.d",
                "a-.service.d",
                "a-@x.service.d",
                "a-@.service.d"
            ]
        );
    }

    /// `text` at the node path `p` under `root`, its directories made.
    fn write_under(root: &Path, p: &str, text: &str) {
        let p = under(root, Path::new(p));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn shadowing_masking_and_byte_order() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let mk = |p: &str, text: &str| write_under(r, p, text);
        mk("/usr/lib/systemd/system/k.service", "[Service]\n");
        mk("/etc/systemd/system/k.service.d/10-a.conf", "x");
        mk("/usr/lib/systemd/system/k.service.d/10-a.conf", "low");
        mk("/usr/lib/systemd/system/k.service.d/9-b.conf", "x");
        mk("/usr/lib/systemd/system/service.d/99-all.conf", "x");
        mk("/run/systemd/system/k.service.d/B.conf", "x");
        mk("/run/systemd/system/k.service.d/a.conf", "x");
        mk("/run/systemd/system/k.service.d/.hidden.conf", "x");
        mk("/run/systemd/system/k.service.d/x.txt", "x");
        let dirs: Vec<PathBuf> = SYSTEM_UNIT_PATH.iter().map(PathBuf::from).collect();
        let f = find(r, &dirs, "k.service");
        assert_eq!(
            f.fragment.unwrap(),
            PathBuf::from("/usr/lib/systemd/system/k.service")
        );
        let names: Vec<String> = f.dropins.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            names,
            [
                "/etc/systemd/system/k.service.d/10-a.conf",
                "/usr/lib/systemd/system/k.service.d/9-b.conf",
                "/usr/lib/systemd/system/service.d/99-all.conf",
                "/run/systemd/system/k.service.d/B.conf",
                "/run/systemd/system/k.service.d/a.conf",
            ]
        );
        std::os::unix::fs::symlink(
            "/dev/null",
            under(r, Path::new("/etc/systemd/system/k.service")),
        )
        .unwrap();
        assert!(find(r, &dirs, "k.service").masked);
    }

    /// Drop-ins of the unit's aliases apply, after its own name's, as in
    /// systemd 252 (`systemd --test` of this tree: DropInPaths
    /// `/run/.../kubelet.service.d/10-x.conf`, `/etc/.../k9s.service.d/20-y.conf`).
    /// They were left out: a drop-in of `Alias=k8s.service` that set
    /// `ExecStart=` (with kubelet's `--register-with-taints`) was not the
    /// command the wrapper stood in for.
    #[test]
    fn aliases_drop_ins_apply() {
        use std::os::unix::fs::symlink;
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let mk = |p: &str, text: &str| write_under(r, p, text);
        let ln = |target: &str, p: &str| symlink(target, under(r, Path::new(p))).unwrap();
        let etc = "/etc/systemd/system";
        mk(&format!("{etc}/kubelet.service"), "[Service]\n");
        ln("kubelet.service", &format!("{etc}/k8s.service"));
        // An alias of the alias, by absolute path.
        ln(&format!("{etc}/k8s.service"), &format!("{etc}/k9s.service"));
        mk(&format!("{etc}/k8s.service.d/10-x.conf"), "x");
        mk(&format!("{etc}/k9s.service.d/20-y.conf"), "x");
        mk("/run/systemd/system/kubelet.service.d/10-x.conf", "x");
        // Not aliases: a link to a file outside the search path (a linked
        // unit), one to a unit of another type, one to its own name.
        mk("/opt/units/other.service", "[Service]\n");
        ln("/opt/units/other.service", &format!("{etc}/linked.service"));
        mk(&format!("{etc}/linked.service.d/1.conf"), "x");
        mk(&format!("{etc}/kubelet.socket"), "");
        ln("kubelet.socket", &format!("{etc}/sock.service"));
        mk(&format!("{etc}/sock.service.d/2.conf"), "x");
        let dirs: Vec<PathBuf> = SYSTEM_UNIT_PATH.iter().map(PathBuf::from).collect();
        let f = find(r, &dirs, "kubelet.service");
        assert_eq!(f.names, ["kubelet.service", "k8s.service", "k9s.service"]);
        let names: Vec<String> = f.dropins.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            names,
            [
                "/run/systemd/system/kubelet.service.d/10-x.conf",
                "/etc/systemd/system/k9s.service.d/20-y.conf",
            ]
        );
        // Asked by an alias's name: the same unit, its own name first.
        let f = find(r, &dirs, "k9s.service");
        assert_eq!(f.names, ["kubelet.service", "k8s.service", "k9s.service"]);
        assert_eq!(f.dropins.len(), 2);
        // The unit itself a link to a unit of another name in the search
        // path: it is that unit, and both names' drop-ins apply.
        mk(
            "/usr/lib/systemd/system/kubelet-real.service",
            "[Service]\n",
        );
        mk(
            "/usr/lib/systemd/system/kubelet-real.service.d/30.conf",
            "x",
        );
        std::fs::remove_file(under(r, Path::new(&format!("{etc}/kubelet.service")))).unwrap();
        ln(
            "/usr/lib/systemd/system/kubelet-real.service",
            &format!("{etc}/kubelet.service"),
        );
        let f = find(r, &dirs, "kubelet.service");
        assert_eq!(f.names[0], "kubelet-real.service");
        assert!(
            f.dropins
                .iter()
                .any(|d| d.ends_with("kubelet-real.service.d/30.conf"))
        );
        assert!(
            f.dropins
                .iter()
                .any(|d| d.ends_with("k9s.service.d/20-y.conf"))
        );
    }

    /// A drop-in directory that is a relative link counts only where its
    /// target, taken from `/`, is a directory (systemd 252's path cache,
    /// `in_path_cache`); an absolute link is followed; a relative link to a
    /// drop-in file is read. Review 9 F7: the relative link was followed,
    /// and its drop-in's `ExecStart=` was not the command systemd runs.
    /// (Against the real systemd: tests/unit_systemd_diff.rs.)
    #[test]
    fn a_linked_dropin_directory_counts_as_systemd_252_counts_it() {
        use std::os::unix::fs::symlink;
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let mk = |p: &str, text: &str| write_under(r, p, text);
        let ln = |target: &str, p: &str| symlink(target, under(r, Path::new(p))).unwrap();
        let dirs: Vec<PathBuf> = SYSTEM_UNIT_PATH.iter().map(PathBuf::from).collect();
        let dropins = || -> Vec<String> {
            find(r, &dirs, "k.service")
                .dropins
                .iter()
                .map(|p| p.display().to_string())
                .collect()
        };
        mk("/etc/systemd/system/k.service", "[Service]\n");
        mk("/etc/systemd/shared.d/10-x.conf", "x");
        ln("../shared.d", "/etc/systemd/system/k.service.d");
        assert!(dropins().is_empty(), "{:?}", dropins());
        // An absolute link is followed, its drop-ins named by where they are.
        mk("/opt/abs.d/20-y.conf", "x");
        std::fs::create_dir_all(under(r, Path::new("/run/systemd/system"))).unwrap();
        ln("/opt/abs.d", "/run/systemd/system/k.service.d");
        assert_eq!(dropins(), ["/opt/abs.d/20-y.conf"]);
        // `/shared.d` a directory: the relative link counts, followed from
        // where it is.
        mk("/shared.d/unrelated", "x");
        assert_eq!(
            dropins(),
            ["/etc/systemd/shared.d/10-x.conf", "/opt/abs.d/20-y.conf"]
        );
        // A relative link to a drop-in file in a directory that is one.
        mk("/usr/lib/systemd/system/k.service.d/05-real.conf", "x");
        mk("/usr/lib/systemd/files/30-z.conf", "x");
        ln(
            "../files/30-z.conf",
            "/usr/lib/systemd/system/k.service.d/30-z.conf",
        );
        assert_eq!(
            dropins(),
            [
                "/usr/lib/systemd/system/k.service.d/05-real.conf",
                "/etc/systemd/shared.d/10-x.conf",
                "/opt/abs.d/20-y.conf",
                "/usr/lib/systemd/system/k.service.d/30-z.conf",
            ]
        );
    }

    /// A search directory past its bound is not listed whole: the unit is
    /// refused (what aliases it has is unknown).
    #[test]
    fn a_search_directory_past_its_bound_refuses_the_unit() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("u");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("k.service"), "[Service]\n").unwrap();
        for i in 0..MAX_SEARCH_DIR_ENTRIES {
            std::fs::write(dir.join(format!("{i}")), "").unwrap();
        }
        let f = find(root.path(), &[PathBuf::from("/u")], "k.service");
        assert!(f.refused.unwrap().contains("more than 16384 entries"));
    }
}
