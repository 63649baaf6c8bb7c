//! Our own files written inside a directory the CLI was given
//! (`render machineconfig --output-dir`, `man --output-dir`, `render dropins
//! --root`): never through a link, so never out of it. A name of ours with a
//! symlink there (whatever it points to: a pull request can add one) is
//! refused, as is one whose directory below the given one is a link; the
//! file goes in as a temp file beside its place renamed onto it, and a
//! rename replaces a link that appears in the meantime, never writes
//! through it.

use std::fs;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Refuse our file at `path` when a symlink is there (whatever it points
/// to) or anything [`super::output_file::write_target`] refuses (a directory, a
/// FIFO, a device, a socket). `who` is the command, for the message.
pub fn check_own_file(path: &Path, who: &str) -> Result<()> {
    let meta = match fs::symlink_metadata(path) {
        // A new file is refused where an existing one would be (review 17
        // r17c F3); the gate ([`super::checked_dir`]) judges again where
        // it is made.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return super::dir_chain::check(path);
        }
        other => other.with_context(|| format!("reading {}", path.display()))?,
    };
    if meta.file_type().is_symlink() {
        let to = fs::read_link(path).with_context(|| format!("reading {}", path.display()))?;
        bail!(
            "{} is a symlink (to {}); {who} writes a regular file there, not through a link: \
             remove the link and {}",
            path.display(),
            to.display(),
            if who.starts_with("render") {
                "render again"
            } else {
                "run it again"
            }
        );
    }
    super::output_file::write_target(path)?;
    Ok(())
}

/// Where our file `rel` (plain names joined by `/`) goes below `dir`: each
/// directory on the way below `dir` is a directory or missing, never a
/// link, and the file passes [`check_own_file`]. `dir` itself is the
/// user's: a link there is followed.
pub fn own_path(dir: &Path, rel: &str, who: &str) -> Result<PathBuf> {
    let rel = Path::new(rel);
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        bail!("{}: not a plain relative name", rel.display());
    }
    let mut at = dir.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    let (last, dirs) = parts.split_last().context("an empty name")?;
    for part in dirs {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => bail!(
                "{} is a symlink; {who} writes its files in a directory of {} there, not \
                 through a link: remove the link and {}",
                at.display(),
                dir.display(),
                if who.starts_with("render") {
                    "render again"
                } else {
                    "run it again"
                }
            ),
            Ok(m) if !m.is_dir() => bail!(
                "{} is not a directory; {who} writes its files in a directory there: move it \
                 away",
                at.display()
            ),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", at.display())),
        }
    }
    at.push(last);
    check_own_file(&at, who)?;
    Ok(at)
}

/// Our file staged below the output directory: a temp file in the
/// directory it goes to, held open from the directory given through the
/// gate ([`super::checked_dir`]), no name below it a link, so that neither
/// the temp file nor the rename goes through a link swapped in after the
/// checks ([`own_path`]).
pub struct StagedOwn {
    tmp: super::checked_dir::Temp,
    /// Where the file goes, as shown.
    pub path: PathBuf,
}

impl StagedOwn {
    /// Rename the temp file onto its place; the place as shown.
    pub fn persist(self) -> Result<PathBuf> {
        self.tmp
            .persist()
            .with_context(|| format!("renaming into {}", self.path.display()))?;
        Ok(self.path)
    }
}

/// `bytes` (permission bits of `mode`) in a temp file beside our file
/// `rel` below `dir` ([`own_path`]), to be renamed onto it with
/// [`StagedOwn::persist`]. Missing directories, `dir` and above it too,
/// are made one at a time by the gate ([`super::checked_dir`]) after the
/// directory chain is checked; the ones made are pushed to `made`, for the
/// caller to remove on a refusal.
pub fn stage_own(
    dir: &Path,
    rel: &str,
    bytes: &[u8],
    mode: u32,
    who: &str,
    made: &mut super::checked_dir::MadeDirs,
) -> Result<StagedOwn> {
    let path = own_path(dir, rel, who)?;
    let parts: Vec<Component> = Path::new(rel).components().collect();
    let (name, dirs) = parts.split_last().context("an empty name")?;
    let mut at = super::checked_dir::CheckedDir::open(dir, &path, Some(made))?;
    for part in dirs {
        at = at
            .child(part.as_os_str(), &path, made)
            .map_err(|e| changed_below(e, who))?;
    }
    let tmp = at
        .temp_copy(name.as_os_str(), &path, bytes, mode)
        .with_context(|| format!("writing in {}", at.path().display()))?;
    Ok(StagedOwn { tmp, path })
}

/// A directory below the given one that became a link or a file after
/// [`own_path`] looked: say so, and what to do.
fn changed_below(e: anyhow::Error, who: &str) -> anyhow::Error {
    if !format!("{e:#}").contains("is a symlink or not a directory") {
        return e;
    }
    anyhow::anyhow!(
        "{e:#} (a link or a file appeared there while {who} wrote); nothing was written \
         through it: {} again",
        if who.starts_with("render") {
            "render"
        } else {
            "run it"
        }
    )
}

/// Write our file `rel` below `dir` at once ([`stage_own`], then the
/// rename); on a refusal the directories made for it are removed.
pub fn write_own(dir: &Path, rel: &str, bytes: &[u8], mode: u32, who: &str) -> Result<PathBuf> {
    let mut made = super::checked_dir::MadeDirs::default();
    let staged = stage_own(dir, rel, bytes, mode, who, &mut made);
    let written = staged.and_then(StagedOwn::persist);
    if written.is_err() {
        made.remove_all();
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_at_or_on_the_way_to_our_names_are_refused_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let outside = d.join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("victim.yaml"), "theirs").unwrap();
        let out = d.join("out");
        fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(outside.join("victim.yaml"), out.join("k.yaml")).unwrap();
        std::os::unix::fs::symlink(&outside, out.join("sub")).unwrap();
        let e = format!(
            "{:#}",
            write_own(&out, "k.yaml", b"ours", 0o644, "man").unwrap_err()
        );
        assert!(
            e.contains("k.yaml is a symlink (to") && e.contains("remove the link and run it again"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            write_own(&out, "sub/x.yaml", b"ours", 0o644, "render machineconfig").unwrap_err()
        );
        assert!(
            e.contains("sub is a symlink") && e.contains("remove the link and render again"),
            "{e}"
        );
        assert_eq!(fs::read(outside.join("victim.yaml")).unwrap(), b"theirs");
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 1);
        // A new name in a new directory: made, written, a regular file.
        let p = write_own(&out, "new/x.yaml", b"ours", 0o644, "man").unwrap();
        assert_eq!(p, out.join("new/x.yaml"));
        assert_eq!(fs::read(&p).unwrap(), b"ours");
        assert!(own_path(&out, "../x", "man").is_err());
        assert!(own_path(&out, "/etc/x", "man").is_err());
    }

    /// A directory on the way swapped for a link after the checks (another
    /// user of a shared output directory, at the wrong moment): the staged
    /// file still lands in the directory that was checked, never through
    /// the link; a swap before staging is refused.
    #[test]
    fn a_link_swapped_in_after_the_checks_is_not_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let outside = d.join("outside");
        fs::create_dir(&outside).unwrap();
        let out = d.join("out");
        fs::create_dir_all(out.join("sub")).unwrap();
        let mut made = crate::cli::render::checked_dir::MadeDirs::default();
        let staged = stage_own(&out, "sub/x.yaml", b"ours", 0o644, "man", &mut made).unwrap();
        fs::rename(out.join("sub"), out.join("checked")).unwrap();
        std::os::unix::fs::symlink(&outside, out.join("sub")).unwrap();
        assert_eq!(staged.persist().unwrap(), out.join("sub/x.yaml"));
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
        assert_eq!(fs::read(out.join("checked/x.yaml")).unwrap(), b"ours");
        // Swapped between the checks and the staging.
        let at = crate::cli::render::checked_dir::CheckedDir::open(&out, &out.join("x"), None);
        let e = at
            .unwrap()
            .child("sub".as_ref(), &out.join("sub/x.yaml"), &mut made)
            .err()
            .map(|e| format!("{:#}", changed_below(e, "man")))
            .unwrap();
        assert!(
            e.contains("sub is a symlink or not a directory") && e.contains("appeared there"),
            "{e}"
        );
    }
}
