//! `explain`'s `sync:` section: the day-2 sync's units as the tree has
//! them, and what a run would do with what the wrapper derives, decided
//! by the sync's own reconcile (`node::sync::reconcile`) on a Node that
//! lacks every derived label: what it writes, and what it only reports.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Explanation, display};
use crate::node::kubelet::Taint;
use crate::node::sync::reconcile::{self, Action, Desired, NodeState};
use crate::node::sync::run;
use crate::node::unit::{self, UnitPaths};

/// The day-2 sync's units (`render::sync_units`) as the tree has them, and
/// what a run would do with what the wrapper derives.
#[derive(Debug, Serialize)]
pub struct SyncPreview {
    /// Its service's unit file.
    pub service: String,
    /// Its `ExecStart=`.
    pub command: String,
    /// What starts it.
    pub triggers: Vec<String>,
    /// The labels it writes: sets on the Node when the Node lacks them or
    /// has another value of its own (as kubelet's own identity).
    pub labels: Vec<String>,
    /// Labels the wrapper registers that the sync never sends, and why
    /// (the pool label, keys NodeRestriction forbids a node to change,
    /// kubelet's own): it only reports their drift.
    pub reported: Vec<ReportedLabel>,
    /// The taints it compares with the Node's, never sends.
    pub taints: Vec<String>,
    /// Why a run would change nothing, if it would not.
    pub nothing: Option<String>,
}

/// A label the sync only reports.
#[derive(Debug, Serialize)]
pub struct ReportedLabel {
    pub label: String,
    pub why: String,
}

/// What the wrapper derives on this tree, as the sync derives it.
pub struct Derived<'a> {
    pub labels: &'a [(String, String)],
    pub taints: &'a [Taint],
    /// The unit's environment (the env drop-ins' variables).
    pub env: &'a [(OsString, OsString)],
    /// Our variables set otherwise than our drop-ins set them, the note
    /// naming them (`wrapper::own_env`): the sync changes no label.
    pub refused: Option<String>,
}

/// The sync's service and path units' names (`render::sync_units`).
const SYNC_SERVICE: &str = crate::cli::render::sync_units::SYNC_SERVICE;
const SYNC_PATH: &str = crate::cli::render::sync_units::SYNC_PATH;

/// The sync's units under `paths`, or None when its service is not there.
pub fn preview(
    paths: &UnitPaths,
    unit_name: &str,
    dropins: &[PathBuf],
    e: &Explanation,
    derived: &Derived,
) -> Option<SyncPreview> {
    let root = &paths.root;
    let read = |p: &Path| {
        unit::read_node(paths, p)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    let service = unit::search::find(root, &paths.dirs, SYNC_SERVICE).fragment?;
    let text = read(&service)?;
    let command = text
        .lines()
        .rfind(|l| l.starts_with("ExecStart="))
        .map_or("(no ExecStart=)", |l| &l["ExecStart=".len()..])
        .to_string();
    let mut triggers = Vec::new();
    for d in dropins {
        let pulls = read(d).is_some_and(|t| {
            t.lines().any(|l| {
                l.strip_prefix("Wants=")
                    .is_some_and(|w| w.split_whitespace().any(|u| u == SYNC_SERVICE))
            })
        });
        if pulls {
            triggers.push(format!(
                "every start of {unit_name} (Wants= in {})",
                display(d)
            ));
        }
    }
    if let Some(path_unit) = unit::search::find(root, &paths.dirs, SYNC_PATH).fragment
        && let Some(t) = read(&path_unit)
    {
        for watched in t.lines().filter_map(|l| l.strip_prefix("PathChanged=")) {
            // The drop-in directory (a file, before this release).
            triggers.push(format!("a change in {watched} ({SYNC_PATH})"));
        }
    }
    let mut nothing = if !e.wrapper_runs {
        Some("the wrapper does not run, so nothing is derived".to_string())
    } else {
        e.left_out
            .as_ref()
            .map(|why| format!("the wrapper would leave our labels/taints out: {why}"))
    };
    if nothing.is_none()
        && let Some(note) = &derived.refused
    {
        // As the sync's own `derive`: it exits 2 and changes nothing.
        nothing = Some(format!("refusing to change labels: {note}"));
    }
    let (mut labels, mut reported) = (Vec::new(), Vec::new());
    if nothing.is_none() {
        match decide(&command, derived) {
            Ok((l, r)) => (labels, reported) = (l, r),
            Err(why) => nothing = Some(why),
        }
    }
    Some(SyncPreview {
        service: display(&service),
        command,
        triggers,
        labels,
        reported,
        taints: derived.taints.iter().map(|t| t.to_string()).collect(),
        nothing,
    })
}

/// The sync's own decision on a Node that has none of the derived labels:
/// what it sets (Add) and what it leaves, with its reason. Its policy is
/// its command line's (`--pool-label`, `--allow-pool-label`), the pool
/// label from the env drop-in where that gives none, as a run takes it.
fn decide(command: &str, derived: &Derived) -> Result<(Vec<String>, Vec<ReportedLabel>), String> {
    let args = sync_args(command)
        .ok_or_else(|| format!("its command does not run the wrapper's sync mode ({command})"))?;
    let opts = run::parse_node_args(&args).map_err(|e| format!("its command: {e}"))?;
    let policy = run::effective_policy(&opts.policy, &run::pool_label(derived.env));
    let desired = Desired {
        labels: derived.labels.to_vec(),
        taints: derived.taints.to_vec(),
        rule_taints: crate::node::wrapper::derived::rule_taints(derived.env),
        unknown: None,
    };
    let plan = reconcile::reconcile(&desired, &NodeState::default(), &policy)?;
    let (mut labels, mut reported) = (Vec::new(), Vec::new());
    for k in plan.keys {
        let label = format!("{}={}", k.key, k.derived.as_deref().unwrap_or(""));
        match k.action {
            Action::Add | Action::Change => labels.push(label),
            _ => reported.push(ReportedLabel {
                label,
                why: k.why.to_string(),
            }),
        }
    }
    Ok((labels, reported))
}

/// The words after `sync` in the service's `ExecStart=` (`/bin/sh -c 'exec
/// WRAPPER sync ARGS'` as render writes it, or the wrapper run directly).
fn sync_args(command: &str) -> Option<Vec<OsString>> {
    let command = command.trim_start_matches(['@', '-', ':', '+', '!']);
    let mut words = shell_words::split(command).ok()?;
    if words.len() == 3 && words[1] == "-c" {
        words = shell_words::split(&words[2]).ok()?;
    }
    let at = words.iter().position(|w| w == "sync")?;
    Some(words[at + 1..].iter().map(OsString::from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sync_args_are_read_from_its_command() {
        let args = |c: &str| {
            sync_args(c).map(|a| {
                a.iter()
                    .map(|w| w.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            args("/bin/sh -c 'exec /usr/local/bin/kubelet-labeler-wrapper.$$(uname -m) sync --unit kubelet.service --pool-label node.kubernetes.io/gpu'").unwrap(),
            ["--unit", "kubelet.service", "--pool-label", "node.kubernetes.io/gpu"]
        );
        assert_eq!(args("/usr/bin/true"), None);
    }

    /// What explain says the sync writes is what the sync's reconcile sets
    /// on a Node without the labels; the rest it leaves, with its reason.
    #[test]
    fn writes_are_the_reconciles_and_the_pool_label_is_only_reported() {
        let labels = vec![
            ("example.com/a".to_string(), "1".to_string()),
            ("node.kubernetes.io/gpu".to_string(), String::new()),
            ("node-role.kubernetes.io/worker".to_string(), String::new()),
            ("kubernetes.io/hostname".to_string(), "x".to_string()),
        ];
        let env = vec![(
            OsString::from(crate::node::contract::POOL_LABEL_VAR),
            OsString::from("node.kubernetes.io/gpu"),
        )];
        let d = Derived {
            labels: &labels,
            taints: &[],
            env: &env,
            refused: None,
        };
        let cmd = "/bin/sh -c 'exec /w.$$(uname -m) sync --unit kubelet.service'";
        let (writes, reported) = decide(cmd, &d).unwrap();
        assert_eq!(writes, ["example.com/a=1"]);
        let reported: Vec<(&str, &str)> = reported
            .iter()
            .map(|r| (r.label.as_str(), r.why.as_str()))
            .collect();
        assert_eq!(reported.len(), 3, "{reported:?}");
        assert!(
            reported
                .iter()
                .any(|(l, w)| *l == "node.kubernetes.io/gpu="
                    && w.contains("selects the node's pool"))
        );
        assert!(
            reported
                .iter()
                .any(|(l, w)| *l == "node-role.kubernetes.io/worker="
                    && w.contains("NodeRestriction"))
        );
        // The sync told to own the pool label writes it.
        let cmd = "/bin/sh -c 'exec /w sync --allow-pool-label'";
        let (writes, _) = decide(cmd, &d).unwrap();
        assert!(writes.contains(&"node.kubernetes.io/gpu=".to_string()));
    }
}
