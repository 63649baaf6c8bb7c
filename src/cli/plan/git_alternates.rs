//! The alternates of the input's object directory, read by plan before
//! git reads them: bounded, as deep as git follows them, and refused where
//! git would read them otherwise than plan (review 26 r26b F3, review 30
//! r30b F3, review 32 r32b F1, F2).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::git_dir::{COPY_FIX, cannot_copy, read_in};

/// The most one `objects/info/alternates` may hold (a few paths).
const ALTERNATES_MAX: u64 = 64 << 10;
/// How deep git follows alternates of alternates (it reads the file of
/// the sixth level, then stops), counted from the input's own objects.
const ALTERNATES_DEPTH: usize = 6;

/// Check what git will read of the alternates of the object directory
/// `objects` (the input's, which plan's scratch borrows) before it reads
/// them whole (review 26 r26b F3: a link to /dev/zero, or a sparse 64 GiB
/// file, grew every git child without bound): each `info/alternates` of
/// the chain, as far as git follows it, a regular file of at most 64 KiB
/// (`read_in`), or an error naming it. Nor does any of these object
/// directories (those the sixth file names too) hold a multi-pack-index
/// (review 30 r30b F3): git in the repository uses it or not as its
/// config says (`core.multiPackIndex`), which plan does not read, and a
/// crafted one gives a blob another's content; plan's git never uses one.
pub fn check_alternates(objects: &Path) -> Result<()> {
    let mut seen = Seen::default();
    alternates_under(objects, 1, &mut seen)
}

/// The most object directories plan visits along the alternates' chain,
/// in all (review 37 r37b F1: 800 stores naming each other, each
/// resolved by every other, took 44 s of plan's own work before git ran,
/// which no git deadline bounds): far past any honest repository's few.
const ALTERNATES_VISITS_MAX: usize = 256;

/// The object directories visited, and how many visits in all.
#[derive(Default)]
struct Seen {
    dirs: std::collections::BTreeSet<PathBuf>,
    visits: usize,
}

fn alternates_under(objects: &Path, depth: usize, seen: &mut Seen) -> Result<()> {
    seen.visits += 1;
    if seen.visits > ALTERNATES_VISITS_MAX {
        return Err(cannot_copy(
            objects,
            &format!(
                "more than {ALTERNATES_VISITS_MAX} alternates along the chain of the \
                 repository's object directories, which plan reads no further"
            ),
        ));
    }
    // Where it leads, not how it is spelt (review 32 r32b F2: lines
    // `dK/..` made plan visit N^5 spellings of one directory).
    // git resolves a link's target in the path with `..` taken lexically,
    // past a file (review 33 r33b F1: `lnk -> ../f/..`, `f` a file, led
    // git to `alt` and the kernel nowhere): where the kernel cannot tell
    // (not a directory, a loop), plan cannot either. A directory missing
    // for the kernel is missing for git too.
    let here = match std::fs::canonicalize(objects) {
        Ok(here) => here,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(cannot_copy(
                objects,
                &format!(
                    "an object directory of the alternates' chain that plan cannot resolve as \
                     git does ({e})"
                ),
            ));
        }
    };
    if seen.dirs.contains(&here) {
        return Ok(());
    }
    for name in ["multi-pack-index", "multi-pack-index.d"] {
        let path = here.join("pack").join(name);
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            _ => bail!(
                "{}: a multi-pack-index, which git in the repository reads or not as its \
                 config says (core.multiPackIndex); plan reads no such index of an input: \
                 remove it (`rm -r {}`; `git multi-pack-index write` makes it again), or \
                 plan a fresh clone",
                path.display(),
                path.display()
            ),
        }
    }
    if depth > ALTERNATES_DEPTH {
        return Ok(());
    }
    seen.dirs.insert(here.clone());
    let info = objects.join("info");
    let text = read_in(&info, "alternates", ALTERNATES_MAX).map_err(|e| {
        e.context(format!(
            "{}: git reads it to find objects; plan reads it first, bounded: {COPY_FIX}",
            info.join("alternates").display()
        ))
    })?;
    let Some(text) = text else {
        return Ok(());
    };
    for line in text.split(|&b| b == b'\n') {
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        if line.starts_with(b"\"") {
            return Err(cannot_copy(
                &info.join("alternates"),
                "a quoted alternate, which plan does not read",
            ));
        }
        let path = Path::new(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(line));
        // git resolves `.` and `..` inside a path by its own rules, past a
        // file (`f/../alt`), where the kernel stops (review 32 r32b F1):
        // only leading `..` of a relative path is read alike.
        let mut past_leading = path.is_absolute();
        for c in line.split(|&b| b == b'/').filter(|c| !c.is_empty()) {
            match c {
                b".." if !past_leading => {}
                b".." | b"." => {
                    return Err(cannot_copy(
                        &info.join("alternates"),
                        &format!(
                            "an alternate {:?} with `.` or `..` inside its path, which git \
                             resolves otherwise than plan",
                            path.display()
                        ),
                    ));
                }
                _ => past_leading = true,
            }
        }
        let next = if path.is_absolute() {
            path.to_path_buf()
        } else {
            here.join(path)
        };
        alternates_under(&next, depth + 1, seen)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each alternates file of the chain git follows is read first,
    /// bounded, a regular file (review 26 r26b F3); a sane chain (a
    /// relative and an absolute path, a comment, a cycle) passes.
    #[test]
    fn alternates_are_read_bounded_before_git() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let objects = |name: &str| {
            let o = root.join(name).join("objects");
            std::fs::create_dir_all(o.join("info")).unwrap();
            o
        };
        let (a, b, c) = (objects("a"), objects("b"), objects("c"));
        let alt = |o: &Path| o.join("info/alternates");
        std::fs::write(alt(&a), "# shared\n../../b/objects\n").unwrap();
        std::fs::write(alt(&b), format!("{}\n", c.display())).unwrap();
        std::fs::write(alt(&c), format!("{}\n", a.display())).unwrap();
        check_alternates(&a).unwrap();
        // Deep in the chain: a link, an oversized file, a FIFO.
        std::fs::remove_file(alt(&c)).unwrap();
        std::os::unix::fs::symlink("/dev/zero", alt(&c)).unwrap();
        let err = format!("{:#}", check_alternates(&a).unwrap_err());
        assert!(err.contains("c/objects/info/alternates"), "{err}");
        assert!(err.contains("symbolic link"), "{err}");
        std::fs::remove_file(alt(&c)).unwrap();
        let big = std::fs::File::create(alt(&c)).unwrap();
        big.set_len(64 << 30).unwrap();
        let err = format!("{:#}", check_alternates(&a).unwrap_err());
        assert!(err.contains("larger than 65536 bytes"), "{err}");
        std::fs::remove_file(alt(&c)).unwrap();
        if std::process::Command::new("mkfifo")
            .arg(alt(&c))
            .status()
            .is_ok_and(|s| s.success())
        {
            let err = format!("{:#}", check_alternates(&a).unwrap_err());
            assert!(err.contains("not a regular file"), "{err}");
        }
    }

    /// Review 30 r30b F3: a multi-pack-index (a file, a directory, a link)
    /// in any object directory git reads the input's objects from (the
    /// input's own, each alternate as deep as git goes: the seventh, named
    /// by the sixth file, too) is refused naming it; one past git's depth
    /// is not read.
    #[test]
    fn a_multi_pack_index_of_the_input_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let dirs: Vec<PathBuf> = (0..8)
            .map(|i| {
                let o = root.join(format!("r{i}/objects"));
                std::fs::create_dir_all(o.join("info")).unwrap();
                std::fs::create_dir_all(o.join("pack")).unwrap();
                o
            })
            .collect();
        for pair in dirs.windows(2) {
            let next = format!("{}\n", pair[1].display());
            std::fs::write(pair[0].join("info/alternates"), next).unwrap();
        }
        check_alternates(&dirs[0]).unwrap();
        let midx = |i: usize, name: &str| dirs[i].join("pack").join(name);
        std::fs::write(midx(7, "multi-pack-index"), "").unwrap();
        check_alternates(&dirs[0]).unwrap();
        for (i, name) in [(0, "multi-pack-index"), (6, "multi-pack-index")] {
            std::fs::write(midx(i, name), "MIDX").unwrap();
            let err = format!("{:#}", check_alternates(&dirs[0]).unwrap_err());
            assert!(err.contains(&midx(i, name).display().to_string()), "{err}");
            assert!(err.contains("core.multiPackIndex"), "{err}");
            assert!(err.contains("or plan a fresh clone"), "{err}");
            std::fs::remove_file(midx(i, name)).unwrap();
        }
        std::fs::create_dir(midx(3, "multi-pack-index.d")).unwrap();
        let err = format!("{:#}", check_alternates(&dirs[0]).unwrap_err());
        assert!(err.contains("r3/objects/pack/multi-pack-index.d"), "{err}");
        std::fs::remove_dir(midx(3, "multi-pack-index.d")).unwrap();
        std::os::unix::fs::symlink("/nowhere", midx(5, "multi-pack-index")).unwrap();
        let err = format!("{:#}", check_alternates(&dirs[0]).unwrap_err());
        assert!(err.contains("r5/objects/pack/multi-pack-index"), "{err}");
    }

    /// Review 32 r32b F1, F2: an alternate with `.` or `..` inside its path
    /// (git resolves `f/../alt` past the file `f`, the kernel does not) is
    /// refused; leading `..` is read; spellings of one directory are visited
    /// once (lines `dK/..` made plan visit N^5 of them).
    #[test]
    fn alternates_with_dots_inside_are_refused_and_visited_once() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let a = root.join("a/objects");
        std::fs::create_dir_all(a.join("info")).unwrap();
        std::fs::create_dir_all(root.join("b/objects/info")).unwrap();
        let alternates = a.join("info/alternates");
        std::fs::write(&alternates, "../../b/objects\n").unwrap();
        check_alternates(&a).unwrap();
        for inside in ["../f/../alt", "./x", "../../b/./objects", "x/.."] {
            std::fs::write(&alternates, format!("{inside}\n")).unwrap();
            let err = format!("{:#}", check_alternates(&a).unwrap_err());
            assert!(
                err.contains("`.` or `..` inside its path"),
                "{inside}: {err}"
            );
        }
        // Links to one directory, many lines each: one visit a directory.
        let mut lines = String::new();
        for k in 0..8 {
            std::os::unix::fs::symlink(".", a.join(format!("d{k}"))).unwrap();
            lines.push_str(&format!("d{k}\n"));
        }
        std::fs::write(&alternates, lines).unwrap();
        let mut seen = Seen::default();
        alternates_under(&a, 0, &mut seen).unwrap();
        assert_eq!(seen.dirs.into_iter().collect::<Vec<_>>(), vec![a]);
        assert_eq!(seen.visits, 9);
    }

    /// Review 33 r33b F1: an alternate through a link whose target passes
    /// a file (`lnk -> ../f/..`) leads git to a store the kernel does not
    /// reach; plan refused `f/..` in the alternate's text only, and read
    /// "not a directory" as nothing there.
    #[test]
    fn an_alternate_the_kernel_cannot_resolve_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let objects = std::fs::canonicalize(tmp.path()).unwrap().join("objects");
        for dir in ["info", "a/info", "alt/pack"] {
            std::fs::create_dir_all(objects.join(dir)).unwrap();
        }
        std::fs::write(objects.join("f"), "").unwrap();
        std::fs::write(objects.join("alt/pack/multi-pack-index"), "MIDX").unwrap();
        std::fs::write(objects.join("info/alternates"), "a\n").unwrap();
        std::fs::write(objects.join("a/info/alternates"), "lnk/alt\n").unwrap();
        std::os::unix::fs::symlink("../f/..", objects.join("a/lnk")).unwrap();
        let err = format!("{:#}", check_alternates(&objects).unwrap_err());
        assert!(err.contains("a/lnk/alt"), "{err}");
        assert!(err.contains("cannot resolve as git does"), "{err}");
        // A missing alternate is missing for git too.
        std::fs::write(objects.join("a/info/alternates"), "gone\n").unwrap();
        check_alternates(&objects).unwrap();
    }

    /// Review 37 r37b F1: stores that all name each other are visited
    /// within a bound in all (800 of them took 44 s of plan's own work,
    /// before git ran), then refused.
    #[test]
    fn alternates_are_visited_within_a_bound_in_all() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let stores: Vec<PathBuf> = (0..24)
            .map(|i| {
                let o = root.join(format!("s{i}/objects"));
                std::fs::create_dir_all(o.join("info")).unwrap();
                o
            })
            .collect();
        let all: String = stores
            .iter()
            .map(|s| format!("{}\n", s.display()))
            .collect();
        for s in &stores {
            std::fs::write(s.join("info/alternates"), &all).unwrap();
        }
        let err = format!("{:#}", check_alternates(&stores[0]).unwrap_err());
        assert!(err.contains("more than 256 alternates"), "{err}");
    }
}
