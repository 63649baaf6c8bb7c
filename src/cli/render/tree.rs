//! `render dropins`: the wrappers, the generator that writes the wrapper's
//! drop-in at boot, and the env drop-in, written into a filesystem tree (a
//! kubeadm-style host's `/`, or a test root).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::arch::Arch;
use super::checked_dir::{CheckedDir, MadeDirs, Removal, Temp};
use super::dropins::{
    ENV_DROPIN_NAME, GENERATOR_PATH, NodeRules, WRAPPER_DROPIN_NAME, env_dropin_with_rules,
    generator, wrapper_path,
};
use crate::node::kubelet::{Additions, Profile};
use crate::node::unit::search;

pub struct TreeOptions {
    pub root: PathBuf,
    pub unit: String,
    pub additions: Additions,
    pub profile: Profile,
    /// The static wrapper binaries, one per architecture, as
    /// `arch::one_per_arch` sorts them.
    pub wrappers: Vec<(Arch, Vec<u8>)>,
    pub force: bool,
    pub node_rules: NodeRules,
}

/// What goes where (node paths) and with which mode.
pub fn planned_files(opts: &TreeOptions) -> Result<Vec<(PathBuf, Vec<u8>, u32)>> {
    check_unit_name(&opts.unit)?;
    let dropin_dir = PathBuf::from("/etc/systemd/system").join(format!("{}.d", opts.unit));
    let arches: Vec<Arch> = opts.wrappers.iter().map(|(a, _)| *a).collect();
    let mut files: Vec<(PathBuf, Vec<u8>, u32)> = opts
        .wrappers
        .iter()
        .map(|(a, bytes)| (PathBuf::from(wrapper_path(*a)), bytes.clone(), 0o755))
        .collect();
    files.push((
        PathBuf::from(GENERATOR_PATH),
        generator(opts.profile, &opts.unit, &arches).into_bytes(),
        0o755,
    ));
    // The day-2 label sync's units (`sync_units`).
    files.extend(
        super::sync_units::files(opts.profile, &opts.unit, None)
            .into_iter()
            .map(|(p, text)| (PathBuf::from(p), text.into_bytes(), 0o644)),
    );
    if !opts.additions.labels.is_empty()
        || !opts.additions.taints.is_empty()
        || !opts.node_rules.is_empty()
    {
        files.push((
            dropin_dir.join(ENV_DROPIN_NAME),
            env_dropin_with_rules(&opts.additions, &opts.node_rules)?.into_bytes(),
            0o644,
        ));
    }
    Ok(files)
}

/// Unit names as systemd allows them, so the generator can quote them.
pub(crate) fn check_unit_name(unit: &str) -> Result<()> {
    let ok = !unit.is_empty()
        && unit.len() <= 255
        && unit.contains('.')
        && unit
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"@._-:".contains(&c));
    if !ok {
        bail!(
            "--unit {unit:?}: not a unit name (letters, digits, \"@._-:\", e.g. kubelet.service)"
        );
    }
    Ok(())
}

/// Where node path `node` of the tree at `root` is on this machine. The
/// tree is a node's root filesystem (a mounted image, a chroot, `/`): each
/// symlink among its directories is followed as on the node, inside the
/// root (an absolute target starts at the root, `..` stops there; the
/// resolution `explain --root` uses), so the result never leaves the tree.
/// RHCOS's `/usr/local -> ../var/usrlocal` lands in the root's
/// `var/usrlocal`. The last component is not followed.
pub fn in_root(root: &Path, node: &Path) -> Result<PathBuf> {
    let name = node.file_name().context("a node path with no file name")?;
    let dir = search::canonical(root, node.parent().unwrap_or(Path::new("/")));
    // canonical stops after 32 links, where the kernel would follow on: a
    // link left in its answer is refused.
    let mut at = root.to_path_buf();
    for part in dir.components().skip(1) {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => bail!(
                "{}: too many levels of symbolic links in --root {} (at {}); not writing there",
                search::under(root, node).display(),
                root.display(),
                at.display()
            ),
            Ok(_) => {}
            // Missing (or not a directory): no link below it.
            Err(_) => break,
        }
    }
    Ok(search::under(root, &dir).join(name))
}

/// `path` (see [`in_root`]) when a regular file is there: only that can be
/// one an earlier render wrote.
fn regular_file(path: PathBuf) -> Option<PathBuf> {
    path.symlink_metadata()
        .is_ok_and(|m| m.file_type().is_file())
        .then_some(path)
}

/// The static drop-in an earlier version wrote, when it is there: in /etc
/// it would shadow the generator's (same name, higher priority) and run a
/// wrapper path that no longer exists.
pub fn stale_static_dropin(opts: &TreeOptions) -> Result<Option<PathBuf>> {
    let node = PathBuf::from("/etc/systemd/system")
        .join(format!("{}.d", opts.unit))
        .join(WRAPPER_DROPIN_NAME);
    Ok(regular_file(in_root(&opts.root, &node)?))
}

/// Files of ours an earlier render left that this one does not write: the
/// wrapper of an architecture no longer shipped, and the env drop-in when
/// this render has no labels, taints or rules (left, it would still add the
/// earlier ones).
pub fn earlier_files(
    opts: &TreeOptions,
    planned: &[(PathBuf, Vec<u8>, u32)],
) -> Result<Vec<PathBuf>> {
    let env = PathBuf::from("/etc/systemd/system")
        .join(format!("{}.d", opts.unit))
        .join(ENV_DROPIN_NAME);
    let mut found = Vec::new();
    for node in Arch::ALL
        .iter()
        .map(|a| PathBuf::from(wrapper_path(*a)))
        .chain([env])
        .filter(|node| !planned.iter().any(|(p, _, _)| p == node))
    {
        found.extend(regular_file(in_root(&opts.root, &node)?));
    }
    Ok(found)
}

/// What a write does to a file already at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing was there.
    Created,
    /// A file of ours (an earlier render's, see [`ours`]) or, with
    /// `force`, any file: replaced.
    Updated,
    /// The same bytes and mode: left as it is (not rewritten, so nothing
    /// watching it runs for nothing).
    Unchanged,
}

impl Change {
    /// The word stderr says before the path, as `render machineconfig`
    /// says it for its manifests.
    pub fn word(self) -> &'static str {
        match self {
            Change::Created => "wrote",
            Change::Updated => "updated",
            Change::Unchanged => "unchanged",
        }
    }
}

/// The most of an existing file read to compare it (a wrapper is well
/// under 1 MiB; a larger file is not one render wrote).
const COMPARE_CAP: u64 = 64 << 20;

/// Why the file `existing` at `path` is not one an earlier render wrote
/// and left as it was: `None` when it is ours (our first line, or our
/// wrapper's usage line: [`super::node_format::of_file`]) and, for the env
/// drop-in, holds no line render does not write.
fn not_ours(path: &Path, existing: &[u8]) -> Option<String> {
    if super::node_format::of_file(existing).is_none() {
        return Some("not written by kubelet-labeler".into());
    }
    if path.file_name() == Some(std::ffi::OsStr::new(ENV_DROPIN_NAME)) {
        let text = String::from_utf8_lossy(existing);
        let foreign = super::dropins::foreign_lines(&text);
        if !foreign.is_empty() {
            return Some(format!(
                "it holds lines render did not write ({}), which replacing it would drop: move \
                 them into a drop-in of your own",
                foreign.join("; ")
            ));
        }
    }
    None
}

/// What writing `bytes` with `mode` at `path` changes. A file that is not
/// ours is refused without `force`: a re-render replaces only what an
/// earlier render wrote.
fn change_at(path: &Path, bytes: &[u8], mode: u32, force: bool) -> Result<Change> {
    let meta = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Change::Created),
        other => other.with_context(|| format!("reading {}", path.display()))?,
    };
    // Not a regular file: refused by `check_own_file` before; with
    // `force`, replaced.
    let existing = if meta.is_file() && meta.len() <= COMPARE_CAP {
        Some(fs::read(path).with_context(|| format!("reading {}", path.display()))?)
    } else {
        None
    };
    if existing.as_deref() == Some(bytes) && meta.permissions().mode() & 0o7777 == mode & 0o777 {
        return Ok(Change::Unchanged);
    }
    let why = match &existing {
        Some(existing) => not_ours(path, existing),
        None => Some("not a file render writes".into()),
    };
    match why {
        Some(why) if !force => bail!(
            "{} exists with other contents, {why}; pass --force to replace it",
            path.display()
        ),
        _ => Ok(Change::Updated),
    }
}

/// Every output as a temp file in its directory before anything is
/// replaced or removed, so a directory that cannot be written is found
/// while nothing has changed; then the temp files go, and the directories
/// made for them. Every directory is opened (and the missing ones made)
/// through the gate ([`super::checked_dir`]): the chain up to `/` checked
/// before anything is made (review 17 r17c F3).
#[derive(Default)]
struct Staged {
    made_dirs: MadeDirs,
    files: Vec<(Temp, PathBuf)>,
}

impl Staged {
    fn file(&mut self, path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
        let dir = path.parent().context("a path with no parent")?;
        let name = path.file_name().context("a path with no file name")?;
        let at = CheckedDir::open(dir, path, Some(&mut self.made_dirs))?;
        let tmp = at.temp_copy(name, path, bytes, mode)?;
        self.files.push((tmp, path.to_path_buf()));
        Ok(())
    }

    fn undo(mut self) {
        drop(std::mem::take(&mut self.files));
        self.made_dirs.remove_all();
    }
}

/// `path` to be removed: its directory passes the gate and takes a change
/// ([`Removal`]); nothing is removed yet.
pub(crate) fn removable(path: &Path) -> Result<Removal> {
    Removal::new(path)
}

/// A failure while staging: it says that nothing changed, and what to do.
fn nothing_written(e: anyhow::Error) -> anyhow::Error {
    let kind = e
        .chain()
        .find_map(|c| c.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    let fix = match kind {
        Some(std::io::ErrorKind::PermissionDenied) => {
            " (run as root, or render into a scratch tree with --root DIR --create-root and copy it over)"
        }
        Some(std::io::ErrorKind::ReadOnlyFilesystem) => {
            " (a read-only filesystem: render into a scratch tree with --root DIR --create-root and copy it over)"
        }
        _ => "",
    };
    anyhow::anyhow!("{e:#}; nothing was written{fix}")
}

/// What [`render_tree`] did.
#[derive(Debug, Default)]
pub struct TreeWritten {
    /// Each file this render writes, and what it did there.
    pub written: Vec<(PathBuf, Change)>,
    /// An earlier render's files this one does not write (with `force`).
    pub removed: Vec<PathBuf>,
}

/// Write the files into the tree at `opts.root`, every path resolved inside
/// it ([`in_root`]). Everything that could refuse is checked, and every
/// file staged, before the first file is replaced or removed: a refusal
/// changes nothing.
pub fn render_tree(opts: &TreeOptions) -> Result<TreeWritten> {
    // The kubelet the node runs decides which labels it takes; the wrapper
    // validates with the profile rendered here.
    if let Some(k) = crate::node::kubelet::version::from_root(&opts.root)
        && let Some(theirs) = k.profile.filter(|p| *p != opts.profile)
    {
        use crate::cli::explain::{kubelet_name, profile_name};
        bail!(
            "--root {}: this node runs {} ({}), but --profile {}: the wrapper would let \
             through labels by the other kubelet's rules, and kubelet refuses what its own do \
             not allow (it exits at every start); render with --profile {}",
            opts.root.display(),
            kubelet_name(theirs),
            k.source,
            profile_name(opts.profile),
            profile_name(theirs)
        );
    }
    let planned = planned_files(opts)?;
    let mut files = Vec::new();
    for (node, bytes, mode) in &planned {
        let path = in_root(&opts.root, node)?;
        super::contained::check_own_file(&path, "render dropins")?;
        files.push((path, bytes, *mode));
    }
    let stale = stale_static_dropin(opts)?;
    if let Some(stale) = stale.as_ref().filter(|_| !opts.force) {
        bail!(
            "{} is the static drop-in of an earlier version; pass --force to remove it (the generator writes it now)",
            stale.display()
        );
    }
    let earlier = earlier_files(opts, &planned)?;
    if !earlier.is_empty() && !opts.force {
        let names: Vec<String> = earlier.iter().map(|p| p.display().to_string()).collect();
        bail!(
            "{} {} from an earlier render and this one does not write {}; pass --force to remove {}",
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
            if names.len() == 1 { "it" } else { "them" },
            if names.len() == 1 { "it" } else { "them" },
        );
    }
    let mut changes = Vec::with_capacity(files.len());
    for (path, bytes, mode) in &files {
        changes.push(change_at(path, bytes, *mode, opts.force)?);
    }
    let mut staged = Staged::default();
    let staging = files
        .iter()
        .zip(&changes)
        .filter(|(_, change)| **change != Change::Unchanged)
        .try_for_each(|((path, bytes, mode), _)| staged.file(path, bytes, *mode))
        .and_then(|()| {
            let stale = stale.as_deref().map(removable).transpose()?;
            let earlier = earlier
                .iter()
                .map(|p| removable(p))
                .collect::<Result<Vec<_>>>()?;
            Ok((stale, earlier))
        });
    let (stale, earlier) = match staging {
        Ok(removals) => removals,
        Err(e) => {
            staged.undo();
            return Err(nothing_written(e));
        }
    };
    let mut done = TreeWritten::default();
    if let Some(stale) = stale {
        done.removed.push(stale.remove()?);
    }
    for (tmp, path) in std::mem::take(&mut staged.files) {
        tmp.persist()
            .with_context(|| format!("renaming into {}", path.display()))?;
    }
    done.written = files
        .into_iter()
        .zip(changes)
        .map(|((path, _, _), change)| (path, change))
        .collect();
    for removal in earlier {
        done.removed.push(removal.remove()?);
    }
    Ok(done)
}
