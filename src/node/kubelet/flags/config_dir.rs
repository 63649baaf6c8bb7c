//! kubelet's `--config-dir` walk: the drop-ins it merges, found as its
//! filepath.WalkDir finds them, within bounds.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use super::NodeFs;
use crate::node::nodefs::{MAX_CONFIG_ENTRIES, MAX_DIR_BYTES};

/// The `*.conf` files under kubelet's `--config-dir`, in the order kubelet
/// merges them: Go's filepath.WalkDir, lexical per directory, depth first,
/// and into no link: the `--config-dir` itself `lstat`ed (a link there is
/// walked only written with a `/` at its end; one named `*.conf` is read
/// as a drop-in, as a file there is), a link inside it never descended
/// (one named `*.conf` is read through). Walking a linked directory read
/// drop-ins kubelet never reads: one clearing `registerWithTaints` dropped
/// the `--config`'s taints from the `--register-with-taints` we pass.
///
/// Each entry is named as Go's filepath.Join names it, cleaned lexically:
/// under `--config-dir=dd/..` (`dd` a link) kubelet lists the parent of
/// dd's target but reads `x.conf` for its `x.conf`, and lists its
/// subdirectories there too (review 10 F3).
///
/// At most `MAX_CONFIG_ENTRIES` entries in all, subdirectories included
/// (`left`: how many more), and `MAX_DIR_BYTES` of directories in all
/// (`bytes`, charged by `list`): past them what kubelet registers with is
/// unknown: the error says why, and the start is fenced
/// (`MergeError::config_unreadable`).
pub(super) fn dropin_files(
    fs: &dyn NodeFs,
    dir: &Path,
    out: &mut Vec<PathBuf>,
) -> Result<(), String> {
    match fs.is_dir(dir) {
        Ok(true) => {
            let (mut left, mut bytes) = (MAX_CONFIG_ENTRIES, MAX_DIR_BYTES);
            walk_dropins(fs, dir, out, &mut left, &mut bytes)
        }
        Ok(false) => {
            if is_dropin_name(dir) {
                out.push(dir.to_path_buf());
            }
            Ok(())
        }
        Err(e) => Err(format!(
            "reading --config-dir {}: {e} (kubelet refuses to start without it)",
            dir.display()
        )),
    }
}

/// Go's filepath.Ext(name) == ".conf": `.conf` itself too.
fn is_dropin_name(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.as_encoded_bytes().ends_with(b".conf"))
}

/// Go's filepath.Join(dir, name) for an entry `name` of `dir`: the joined
/// path cleaned lexically as filepath.Clean cleans it (`dd/../x.conf` is
/// `x.conf`, whatever `dd` leads to; `/..` is `/`; a relative path keeps
/// the `..` it cannot go up from).
fn go_join(dir: &Path, name: &std::ffi::OsStr) -> PathBuf {
    let path = dir.as_os_str().as_encoded_bytes();
    let rooted = path.first() == Some(&b'/');
    let mut out: Vec<u8> = Vec::with_capacity(path.len() + name.len() + 1);
    // What a `..` cannot take back: the root, or the leading `..`s.
    let mut dotdot = 0;
    if rooted {
        out.push(b'/');
        dotdot = 1;
    }
    let parts = path.split(|&b| b == b'/');
    for part in parts.chain([name.as_encoded_bytes()]) {
        match part {
            b"" | b"." => {}
            b".." if out.len() > dotdot => {
                let mut w = out.len() - 1;
                while w > dotdot && out[w] != b'/' {
                    w -= 1;
                }
                out.truncate(w);
            }
            b".." if rooted => {}
            b".." => {
                if !out.is_empty() {
                    out.push(b'/');
                }
                out.extend_from_slice(b"..");
                dotdot = out.len();
            }
            _ => {
                if out.len() > usize::from(rooted) {
                    out.push(b'/');
                }
                out.extend_from_slice(part);
            }
        }
    }
    if out.is_empty() {
        out.push(b'.');
    }
    PathBuf::from(<OsString as std::os::unix::ffi::OsStringExt>::from_vec(out))
}

/// [`dropin_files`] below the directory `dir`.
fn walk_dropins(
    fs: &dyn NodeFs,
    dir: &Path,
    out: &mut Vec<PathBuf>,
    left: &mut usize,
    bytes: &mut u64,
) -> Result<(), String> {
    let mut entries = fs
        .list(dir, bytes)
        .and_then(|e| {
            *left = left.checked_sub(e.len()).ok_or_else(|| {
                io::Error::new(io::ErrorKind::FileTooLarge, "more than 1024 entries in all")
            })?;
            Ok(e)
        })
        .map_err(|e| {
            let why = match e.kind() {
                io::ErrorKind::FileTooLarge => "",
                _ => " (kubelet refuses to start without it)",
            };
            format!("reading --config-dir {}: {e}{why}", dir.display())
        })?;
    entries.sort();
    for (name, is_dir) in entries {
        if is_dir {
            walk_dropins(fs, &go_join(dir, &name), out, left, bytes)?;
        } else if name.as_encoded_bytes().ends_with(b".conf") {
            out.push(go_join(dir, &name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's filepath.Join(dir, "x.conf"), as go1.26 prints it.
    #[test]
    fn entries_are_named_as_go_joins_them() {
        for (dir, want) in [
            ("/etc/kubernetes/dd/..", "/etc/kubernetes/x.conf"),
            ("dd/..", "x.conf"),
            ("..", "../x.conf"),
            ("../..", "../../x.conf"),
            ("a/../..", "../x.conf"),
            ("/..", "/x.conf"),
            ("/", "/x.conf"),
            ("dd/", "dd/x.conf"),
            ("dd/.", "dd/x.conf"),
            ("./dd//e/", "dd/e/x.conf"),
            (".", "x.conf"),
            ("a/b/../../..", "../x.conf"),
            ("/a/b/../../..", "/x.conf"),
            ("a/./b/", "a/b/x.conf"),
            ("//a//", "/a/x.conf"),
        ] {
            assert_eq!(
                go_join(Path::new(dir), "x.conf".as_ref()),
                Path::new(want),
                "{dir}"
            );
        }
    }
}
