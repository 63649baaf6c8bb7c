//! The node format of the wrapper a node runs, against the proposed
//! render's. A node keeps what its installed MachineConfigs give (wrapper,
//! drop-ins, rules in their compact form) until the pool's new rendered
//! config lands on it; when the two are of different node formats, what it
//! does until then is the old release's.
//!
//! A Node records no node format of ours. What it does carry is the MCO's
//! `currentConfig` annotation: the rendered MachineConfig it runs. When
//! the fleet holds that rendered config (`oc get mc NAME -o json`), its
//! files say; else the node is taken to run the base render of its pool.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;
use serde_json::Value;

use anyhow::Result;

use super::kube::Pool;
use super::{Outcome, Side};
use crate::cli::render::layout::Layout;
use crate::cli::render::node_format;
use crate::node::contract::NODE_FORMAT;
use crate::node::sync::reconcile::NodeState;

/// The MCO's annotation naming the rendered config a node runs.
pub const CURRENT_CONFIG: &str = "machineconfiguration.openshift.io/currentConfig";

/// The node formats of our files among some MachineConfigs: each known
/// format, `None` for ours of a release that did not stamp it. Empty: no
/// file of ours.
pub type Formats = BTreeSet<Option<String>>;

/// Our files' node formats in `configs` (each file as the MachineConfig
/// writes it; a file that cannot be read tells nothing).
pub fn of_configs<'a>(configs: impl IntoIterator<Item = &'a Value>) -> Formats {
    let mut out = Formats::new();
    for mc in configs {
        let name = mc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(config) = mc.pointer("/spec/config") else {
            continue;
        };
        let Ok(writes) = Layout::writes_of(name, config) else {
            continue;
        };
        out.extend(writes.values().filter_map(|b| node_format::of_file(b)));
    }
    out
}

/// In words: `node format 5`, `an earlier release (...)`, or several.
pub fn describe(f: &Formats) -> String {
    if f.is_empty() {
        return "none of ours".into();
    }
    f.iter()
        .map(|n| node_format::describe(n.as_deref(), true))
        .collect::<Vec<_>>()
        .join(" and ")
}

/// A node whose installed files are of another node format than the
/// proposed render's.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct FormatChange {
    /// The node format of what the node runs now, in words.
    pub installed: String,
    /// Where that was read: the Node's rendered config, or the base render.
    pub installed_from: String,
    pub proposed: String,
    /// What the node does until the proposed MachineConfigs land on it.
    pub until_then: String,
}

/// The change of node format on a node, if any: `installed` what it runs,
/// `proposed` the proposed render's for its pool. Both must have files of
/// ours (a first install or a removal is no change of format).
pub fn change(installed: &Formats, from: String, proposed: &Formats) -> Option<FormatChange> {
    if installed.is_empty() || proposed.is_empty() || installed == proposed {
        return None;
    }
    let ours = Some(NODE_FORMAT.to_string());
    let until_then = if installed.len() == 1 && installed.contains(&ours) {
        "it keeps the old behaviour until the new MachineConfigs land: it registers as \
         \"before\" says (node format of this CLI, so judged)"
            .to_string()
    } else {
        format!(
            "it keeps the old behaviour until the new MachineConfigs land; what that is \
             cannot be judged: this CLI reads node format {NODE_FORMAT} (run `plan` with the \
             CLI of the installed release to see it)"
        )
    };
    Some(FormatChange {
        installed: describe(installed),
        installed_from: from,
        proposed: describe(proposed),
        until_then,
    })
}

/// The node format of the files the node runs against the proposed
/// render's for its pool, and a note when either side's is not this CLI's
/// (its registration is read as this CLI's node format reads it).
pub(super) fn judge(
    o: &mut Outcome,
    node: Option<&NodeState>,
    rendered: &HashMap<String, Formats>,
    sides: &mut [Side; 2],
    pool: &Pool,
    proposed_pool: &Pool,
) -> Result<()> {
    let base = sides[0].pool(pool)?.formats.clone();
    let proposed = sides[1].pool(proposed_pool)?.formats.clone();
    let current = node
        .and_then(|s| s.annotations.iter().find(|(k, _)| k == CURRENT_CONFIG))
        .map(|(_, v)| v.as_str());
    let (installed, from) = match current.and_then(|c| Some((c, rendered.get(c)?))) {
        Some((c, f)) => (f.clone(), format!("{c}, the Node's current config")),
        None => (
            base.clone(),
            match current {
                Some(c) => format!(
                    "the base render of pool {} ({c}, the Node's current config, not given: oc get mc {c} -o json)",
                    pool.name
                ),
                None => format!("the base render of pool {}", pool.name),
            },
        ),
    };
    o.wrapper_format = change(&installed, from, &proposed);
    let ours = Some(crate::node::contract::NODE_FORMAT.to_string());
    for (side, f) in [("base", &base), ("proposed", &proposed)] {
        if f.iter().any(|x| *x != ours) {
            o.not_judged.push(format!(
                "the {side} render's files for pool {} are of {}; this CLI reads node format {}: its registration is read as this CLI would do it",
                pool.name,
                describe(f),
                crate::node::contract::NODE_FORMAT
            ));
        }
    }
    Ok(())
}

/// Why the wrapper adds nothing to the command kubelet's unit runs without
/// it (the pool's drop-ins may set it: `/bin/sh -c "exec kubelet …"` is no
/// command the wrapper can add flags to), as the wrapper judges it at boot.
pub fn command_off(
    svc: &crate::node::unit::LoadedService,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    root: &std::path::Path,
) -> Option<String> {
    let command =
        match crate::node::wrapper::plan::original_command_offline(svc, env, root, &mut Vec::new())
        {
            Ok(c) => c,
            Err(e) => return Some(format!("the wrapper finds no command to run: {e:#}")),
        };
    let words: Vec<String> = command
        .argv
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    crate::node::kubelet::flags::kubelet_args_start(&command.executable.to_string_lossy(), &words)
        .err()
        .map(|why| format!("the wrapper starts kubelet's command without ours: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(f: &[Option<&str>]) -> Formats {
        f.iter().map(|x| x.map(str::to_string)).collect()
    }

    #[test]
    fn a_change_only_between_two_formats_of_ours() {
        let now = set(&[Some(NODE_FORMAT)]);
        assert_eq!(change(&set(&[]), "x".into(), &now), None);
        assert_eq!(change(&now, "x".into(), &set(&[])), None);
        assert_eq!(change(&now, "x".into(), &now), None);
        let c = change(&set(&[None]), "x".into(), &now).unwrap();
        assert_eq!(
            c.installed,
            "an earlier release (its node format is not stamped)"
        );
        assert!(c.until_then.contains("cannot be judged"), "{c:?}");
        let c = change(&now, "x".into(), &set(&[Some("99")])).unwrap();
        assert_eq!(c.proposed, "node format 99");
        assert!(c.until_then.contains("so judged"), "{c:?}");
    }
}
