//! What the sync reads and decides, as data: the Node as read, what the
//! configuration derives, the plan per key and the one patch, and our
//! annotations' names. `super::reconcile` computes them; `super::taints`
//! reports taint drift on them.

use crate::node::kubelet::Taint;

/// The label keys we own on a Node, sorted, each shared prefix written
/// once (`super::owned`; a plain comma-separated list, the form of NFD's
/// `feature-labels`, reads too). A key is ours once we set it or adopted it
/// (same value as derived); only keys listed here are ever changed or
/// removed.
pub const OWNED_ANNOTATION: &str = "kubelet-labeler.io/owned-labels";
/// The taints we derive, and those we derived before that the Node still
/// has, `key=value:Effect`, sorted, comma-separated: how a taint dropped
/// from the config is told from one a user or controller set (we report
/// it at every run until it is gone; we never remove it).
pub const TAINTS_ANNOTATION: &str = "kubelet-labeler.io/derived-taints";
/// The taint drift the last `TaintDrift` Event told (`+taint` the Node
/// lacks, `-taint` it should lose; sorted, comma-separated), absent when
/// there is none: an Event is posted when the drift differs from it, so
/// once per drift however many runs report it.
pub const DRIFT_ANNOTATION: &str = "kubelet-labeler.io/taint-drift";
/// Every key that was the node's pool label (`--pool-label`, the env
/// drop-in's `contract::POOL_LABEL_VAR`) while the Node has it, written as
/// `OWNED_ANNOTATION` is. A MachineConfigPool selects by a label the node
/// cannot see, so a key that selected its pool once is held as the pool
/// label is: after a `--pool-label` change the old key stays until it is
/// taken off cluster-side, whichever of the drop-in and the pool's new
/// `nodeSelector` reaches the node first.
pub const POOL_ANNOTATION: &str = "kubelet-labeler.io/pool-labels";
/// How `sync --dry-run` and the journal line show a label the Node lacks
/// (no label value has `<`).
pub const ABSENT: &str = "<absent>";
/// The Node as read: what reconcile looks at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeState {
    pub name: String,
    pub resource_version: String,
    /// Sorted by key, each key once (both).
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
    pub taints: Vec<Taint>,
}

impl NodeState {
    // Both maps are sorted by key (`json::Value::string_map`): looked up
    // by bisection, as the Node is network text of any size.
    pub(super) fn label(&self, key: &str) -> Option<&str> {
        lookup_sorted(&self.labels, key)
    }
    pub(super) fn annotation(&self, key: &str) -> Option<&str> {
        lookup_sorted(&self.annotations, key)
    }
}

fn lookup_sorted<'a>(map: &'a [(String, String)], key: &str) -> Option<&'a str> {
    let i = map.binary_search_by(|(k, _)| k.as_str().cmp(key)).ok()?;
    Some(map[i].1.as_str())
}

/// Whether the sorted list `list` holds `key`.
pub(super) fn has(list: &[String], key: &str) -> bool {
    list.binary_search_by(|k| k.as_str().cmp(key)).is_ok()
}

pub(super) fn lookup<'a>(map: &'a [(String, String)], key: &str) -> Option<&'a str> {
    map.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// What the node's configuration derives (the wrapper's own computation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Desired {
    pub labels: Vec<(String, String)>,
    pub taints: Vec<Taint>,
    /// Every taint the configuration's rules give a node they match,
    /// matched here or not: one of these on the Node and not derived is
    /// ours and stale, whatever our annotations say.
    pub rule_taints: Vec<Taint>,
    /// Why the rule-derived part is unknown (the rules' features fenced: a
    /// link in features.d, past its bounds): `labels` and `taints` are then
    /// what is known without the rules (static, kubelet's own), and no
    /// label or taint is removed or reported stale (a rule may still give
    /// it: fail closed).
    pub unknown: Option<String>,
}

impl Desired {
    /// What the sync syncs a Node to, from one evaluation of the node's
    /// configuration: `labels` and `taints` as the wrapper passes them
    /// (kubelet's own taints merged in where they were read), the rules'
    /// failure as a whole (`wrapper::plan::Collected::failed`), why
    /// kubelet's own taints could not be read, and the unit's environment
    /// (the taints its rules may give). The sync's `derive` and `plan` both
    /// build their `Desired` here, so what an evaluation that failed keeps
    /// (every derived key still added or changed; nothing the rules may give
    /// removed or reported stale) is said once.
    pub fn evaluated(
        (labels, taints): (Vec<(String, String)>, Vec<Taint>),
        rules_failed: Option<&str>,
        kubelet_taints_unread: Option<&str>,
        env: &[(std::ffi::OsString, std::ffi::OsString)],
    ) -> Desired {
        use crate::node::wrapper::derived;
        let rules =
            rules_failed.map(|why| format!("the node rules could not be evaluated ({why})"));
        let kubelet = kubelet_taints_unread.map(|why| {
            format!(
                "kubelet's own taints could not be read ({})",
                derived::escape_controls(why)
            )
        });
        let unknown = match (rules, kubelet) {
            (Some(rules), Some(why)) => Some(format!("{rules}; {why}")),
            (rules, why) => rules.or(why),
        };
        Desired {
            labels,
            taints,
            rule_taints: derived::rule_taints(env),
            unknown,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The label the node's MachineConfigPool selects it by.
    pub pool_label: Option<String>,
    /// Let the sync write or remove it (moves the node to another pool).
    pub allow_pool_label: bool,
    /// The installed-pool record under the sync's root
    /// (`wrapper::pool_change::read_record`: None when there is none, else
    /// the table or why it is unreadable). With one, a label change that
    /// moves the node out of the pool it was installed into is left out
    /// (`super::pool_guard`), whatever `allow_pool_label` says.
    pub installed: Option<Result<crate::node::fleet::Table, String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Add,
    Change,
    Remove,
    Adopt,
    Leave,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Add => "add",
            Action::Change => "change",
            Action::Remove => "remove",
            Action::Adopt => "adopt",
            Action::Leave => "leave",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPlan {
    pub key: String,
    pub action: Action,
    /// The Node's value now, and the derived one.
    pub node: Option<String>,
    pub derived: Option<String>,
    pub why: &'static str,
    /// Left as it is though it differs from what is derived.
    pub drift: bool,
}

/// The one write: labels to set and remove, and our annotations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Patch {
    pub set: Vec<(String, String)>,
    pub remove: Vec<String>,
    /// Sorted by key.
    pub annotations: Vec<(String, String)>,
    pub remove_annotations: Vec<String>,
}

impl Patch {
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
            && self.remove.is_empty()
            && self.annotations.is_empty()
            && self.remove_annotations.is_empty()
    }

    /// A JSON merge patch with `resourceVersion` as its precondition (the
    /// API server answers 409 when the Node changed since it was read).
    pub fn to_json(&self, resource_version: &str) -> String {
        use super::json::quote;
        let mut labels: Vec<String> = self
            .set
            .iter()
            .map(|(k, v)| format!("{}:{}", quote(k), quote(v)))
            .collect();
        labels.extend(self.remove.iter().map(|k| format!("{}:null", quote(k))));
        let mut annotations: Vec<String> = self
            .annotations
            .iter()
            .map(|(k, v)| format!("{}:{}", quote(k), quote(v)))
            .collect();
        annotations.extend(
            self.remove_annotations
                .iter()
                .map(|k| format!("{}:null", quote(k))),
        );
        let mut meta = vec![format!("\"resourceVersion\":{}", quote(resource_version))];
        if !labels.is_empty() {
            meta.push(format!("\"labels\":{{{}}}", labels.join(",")));
        }
        if !annotations.is_empty() {
            meta.push(format!("\"annotations\":{{{}}}", annotations.join(",")));
        }
        format!("{{\"metadata\":{{{}}}}}", meta.join(","))
    }
}

#[derive(Debug, Clone, Default)]
pub struct Reconciled {
    /// Every derived or owned key, sorted.
    pub keys: Vec<KeyPlan>,
    pub patch: Patch,
    /// Taints that differ, one line each (reported, never sent).
    pub taint_drift: Vec<String>,
    /// This drift is new (not what `DRIFT_ANNOTATION` says was told): post
    /// a `TaintDrift` Event once the patch, which records it, is written.
    pub post_event: bool,
    /// `Desired::unknown`: the rule-derived part could not be judged.
    pub unknown: Option<String>,
    /// Why the label changes were left out (`super::pool_guard`): they
    /// would move a node installed from a fleet ISO out of its pool.
    pub pool_move: Option<String>,
}

impl Reconciled {
    /// Drift we may not fix remains after the patch.
    pub fn drift_remains(&self) -> bool {
        !self.taint_drift.is_empty()
            || self.keys.iter().any(|k| k.drift)
            || self.unknown.is_some()
            || self.pool_move.is_some()
    }
}
