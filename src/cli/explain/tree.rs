//! What `explain` says about a tree that is not all there: no kubelet unit,
//! no kubelet binary (a staging tree), no kubelet `--config` (kubeadm before
//! `join`). Each is a fact about the node, not a failure of ours.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::node::unit::{self, UnitPaths};
use crate::node::wrapper::plan::{self, Plan};

/// Whether `unit` has no fragment in the tree (systemd: not-found).
pub(super) fn unit_missing(paths: &UnitPaths, unit: &str) -> bool {
    unit::search::split_name(unit).is_some()
        && unit::search::find(&paths.root, &paths.dirs, unit)
            .fragment
            .is_none()
}

/// What to do when the unit is not in the tree.
pub(super) fn not_found_fix(unit: &str, root: &Path, offline: bool) -> String {
    if offline {
        format!(
            "the MachineConfigs given write no {unit}: give the pool's rendered MachineConfig \
             (or its 01-<role>-kubelet one) too, or name the kubelet unit with --unit"
        )
    } else {
        format!(
            "is --root {} a node's whole root (/ on the node itself, or the node's disk mounted)? \
             If the node's kubelet unit has another name, give it with --unit; \
             for a cluster's MachineConfigs use --machineconfig",
            root.display()
        )
    }
}

/// The unit's command on a node's root (`--root`). One missing from the
/// tree is a warning, as for MachineConfigs: kubelet cannot start without
/// it, with or without the wrapper, which is not ours to fix.
pub(super) fn command_on_root(
    original: &unit::LoadedService,
    env: &[(OsString, OsString)],
    root: &Path,
    unit: &str,
    warnings: &mut Vec<String>,
) -> Result<plan::OriginalCommand> {
    use std::os::unix::ffi::OsStrExt;
    let e = match plan::original_command(original, env, root) {
        Ok(c) => return Ok(c),
        Err(e) => e,
    };
    let path = match original.exec_start.as_slice() {
        [cmd] => PathBuf::from(std::ffi::OsStr::from_bytes(&cmd.path)),
        _ => return Err(e.into()),
    };
    let in_tree = unit::search::contained(root, &path).is_ok_and(|p| p.exists());
    if !path.is_absolute() || in_tree {
        anyhow::bail!(
            "{e:#} (under --root {}): systemd could not run it either; make it executable or fix the unit's ExecStart=",
            root.display()
        );
    }
    let mut ignored = Vec::new();
    let command = plan::original_command_offline(original, env, root, &mut ignored)?;
    warnings.push(format!(
        "{} (the unit's ExecStart=) is not in the tree under --root {}: systemd cannot start {unit} \
         without it (203/EXEC), with or without the wrapper. --root is meant to be a node's whole \
         root; for a staging tree, the image it goes into must provide it",
        path.display(),
        root.display(),
    ));
    Ok(command)
}

/// kubelet's `--config` file, when it is missing: kubelet exits without it
/// (kubeadm before `join`), not a failure of ours.
pub(super) fn missing_config(plan: &Plan, fs: &plan::RootFs, offline: bool) -> Option<String> {
    use crate::node::kubelet::NodeFs;
    let words: Vec<String> = plan
        .original_argv
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let scan = crate::node::kubelet::flags::scan(&words);
    let config = scan.last_value("config").filter(|c| !c.is_empty())?;
    // Whether it is there: at most one byte read.
    let absent =
        matches!(fs.read(Path::new(config), 0), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    if !absent {
        return None;
    }
    Some(if offline {
        format!(
            "{config} (kubelet's --config) is not in this tree (offline: read as having no registerWithTaints)"
        )
    } else {
        format!(
            "kubelet cannot start yet: its --config {config} does not exist, and kubelet exits without it. \
             On a kubeadm node before `kubeadm join` that is expected: the join writes it, and from kubelet's \
             next start the wrapper adds our labels and taints (merged with the file's registerWithTaints)"
        )
    })
}
