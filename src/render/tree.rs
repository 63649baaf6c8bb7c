//! `render dropins`: the wrappers, the generator that writes the wrapper's
//! drop-in at boot, and the env drop-in, written into a filesystem tree (a
//! kubeadm-style host's `/`, or a test root).

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::arch::Arch;
use super::dropins::{
    ENV_DROPIN_NAME, GENERATOR_PATH, NodeRules, WRAPPER_DROPIN_NAME, env_dropin_with_rules,
    generator, wrapper_path,
};
use crate::kubelet::{Additions, Profile};

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

/// Write `bytes` to `path` through a temp file in the same directory, so a
/// reader never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let dir = path.parent().context("a path with no parent")?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a temp file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    tmp.as_file()
        .set_permissions(fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("renaming into {}", path.display()))?;
    Ok(())
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
fn check_unit_name(unit: &str) -> Result<()> {
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

/// The static drop-in an earlier version wrote: in /etc it would shadow
/// the generator's (same name, higher priority) and run a wrapper path that
/// no longer exists.
pub fn stale_static_dropin(opts: &TreeOptions) -> PathBuf {
    let node = PathBuf::from("/etc/systemd/system")
        .join(format!("{}.d", opts.unit))
        .join(WRAPPER_DROPIN_NAME);
    opts.root.join(node.strip_prefix("/").unwrap_or(&node))
}

pub fn render_tree(opts: &TreeOptions) -> Result<Vec<PathBuf>> {
    let files = planned_files(opts)?;
    let stale = stale_static_dropin(opts);
    if stale.exists() && !opts.force {
        bail!(
            "{} is the static drop-in of an earlier version; pass --force to remove it (the generator writes it now)",
            stale.display()
        );
    }
    // Refuse before writing anything, so nothing is half done.
    for (node, bytes, _) in &files {
        let path = opts.root.join(node.strip_prefix("/").unwrap_or(node));
        if let Ok(existing) = fs::read(&path)
            && existing != *bytes
            && !opts.force
        {
            bail!(
                "{} exists with other contents; pass --force to replace it",
                path.display()
            );
        }
    }
    let mut written = Vec::new();
    if stale.exists() {
        fs::remove_file(&stale).with_context(|| format!("removing {}", stale.display()))?;
    }
    for (node, bytes, mode) in files {
        let path = opts.root.join(node.strip_prefix("/").unwrap_or(&node));
        write_atomic(&path, &bytes, mode)?;
        written.push(path);
    }
    Ok(written)
}
