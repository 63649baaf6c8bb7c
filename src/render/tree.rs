//! `render dropins`: the two drop-ins and the wrapper, written into a
//! filesystem tree (a kubeadm-style host's `/`, or a test root).

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::dropins::{
    ENV_DROPIN_NAME, NodeRules, WRAPPER_DROPIN_NAME, WRAPPER_PATH, env_dropin_with_rules,
    wrapper_dropin,
};
use crate::kubelet::{Additions, Profile};

pub struct TreeOptions {
    pub root: PathBuf,
    pub unit: String,
    pub additions: Additions,
    pub profile: Profile,
    pub wrapper: PathBuf,
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
    let wrapper = fs::read(&opts.wrapper).with_context(|| {
        format!(
            "reading the wrapper {}; build it (cargo build --bin kubelet-labeler-wrapper) or pass --wrapper",
            opts.wrapper.display()
        )
    })?;
    let dropin_dir = PathBuf::from("/etc/systemd/system").join(format!("{}.d", opts.unit));
    let mut files = vec![
        (PathBuf::from(WRAPPER_PATH), wrapper, 0o755),
        (
            dropin_dir.join(WRAPPER_DROPIN_NAME),
            wrapper_dropin(opts.profile).into_bytes(),
            0o644,
        ),
    ];
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

pub fn render_tree(opts: &TreeOptions) -> Result<Vec<PathBuf>> {
    let files = planned_files(opts)?;
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
    for (node, bytes, mode) in files {
        let path = opts.root.join(node.strip_prefix("/").unwrap_or(&node));
        write_atomic(&path, &bytes, mode)?;
        written.push(path);
    }
    Ok(written)
}
