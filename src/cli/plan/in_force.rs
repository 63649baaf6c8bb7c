//! The node disruption policy in force when a node takes the change
//! (review 21 r21b F6). The MCO's daemon reads the cluster's
//! `MachineConfiguration` as it is when the node updates, so a render's is
//! priced only where it is applied, and never more leniently than the
//! policy in force before it:
//!
//! - before: the cluster's (the fleet's `MachineConfiguration`); without
//!   one, the MCO's defaults with the `--from` tree's applied
//!   MachineConfigurations and render's own policy files (which render
//!   says to apply, server-side, before anything).
//! - after: that with the `--to` tree's applied MachineConfigurations laid
//!   over it as server-side apply merges them (`policy::applied`).
//!
//! A MachineConfiguration a kustomization leaves out (render's
//! `cluster-wide/`, where `oc apply -k` and Argo CD never reach) is not
//! applied with the tree: it counts only through the cluster's export, or,
//! without one, when it is exactly render's own. Which of before and after
//! a node meets is not known (the apply does not wait for the operator to
//! take a new policy, nor for the order of objects), so each change is
//! priced by the stricter of the two.

use anyhow::Result;
use serde_json::Value;

use super::inputs::Render;
use super::policy::{self, Changed, Disruption, DisruptionPolicy, PolicyFile};

/// The policies a change may meet, and what plan says about them.
pub struct InForce {
    pub before: DisruptionPolicy,
    pub after: DisruptionPolicy,
    pub notes: Vec<String>,
}

/// The policy in force before the change (`cluster`: the fleet's
/// `MachineConfiguration`) and once `proposed` is applied over `base`;
/// under `prune`, a `MachineConfiguration` the base tree applies and the
/// proposed one no longer does is deleted (review 23 r23b F3: the object
/// `cluster`, every entry of it, the cluster's and render's own).
pub fn in_force(
    cluster: Option<&Value>,
    base: &Render,
    proposed: &Render,
    prune: bool,
) -> Result<InForce> {
    // Without the cluster's export, render's own left-out policy stands for
    // what the user applied by hand; with it, the export says.
    let known = |r: &Render| -> Vec<PolicyFile> {
        let mut v = r.policies.clone();
        if cluster.is_none() {
            v.extend(
                r.policies_left_out
                    .iter()
                    .filter(|p| renders_own(p))
                    .cloned(),
            );
        }
        v
    };
    let (base_known, proposed_known) = (known(base), known(proposed));
    let before = match cluster {
        Some(_) => policy::applied(cluster, &[], &[])?,
        // A base policy the API server would refuse never landed: the
        // MCO's defaults alone, the strictest known.
        None => policy::applied(None, &[], &base_known).unwrap_or_default(),
    };
    let deleted = prune && !base.policies.is_empty() && proposed.policies.is_empty();
    let mut after = policy::applied(cluster, &base_known, &proposed_known)?;
    let mut notes = Vec::new();
    // Under --prune, the object `cluster` leaving the tree is deleted, with
    // every entry of it, whoever set them (review 23 r23b F1).
    if deleted {
        after = DisruptionPolicy::default();
        notes.push(format!(
            "{}: MachineConfiguration cluster removed from the tree: under --prune the apply \
             deletes the object, every node disruption policy entry with it (render's and \
             other teams'), so each change is priced by the MCO's defaults; keep a \
             MachineConfiguration in the tree, or leave it out of the prune",
            (base.policies.iter())
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let unpriced: Vec<&str> = (proposed.policies_left_out.iter())
        .filter(|p| !proposed_known.iter().any(|k| k.name == p.name))
        .filter(|p| !in_force_already(p, &before))
        .map(|p| p.name.as_str())
        .collect();
    if !unpriced.is_empty() {
        notes.push(format!(
            "{}: MachineConfiguration left out of its kustomization, so `oc apply -k` and Argo \
             CD do not apply it: its node disruption policy entries are not priced; apply it \
             server-side before the MachineConfigs (as render says) and give plan the \
             cluster's MachineConfiguration (oc get machineconfiguration cluster -o json) again",
            unpriced.join(", ")
        ));
    }
    if after != before {
        notes.push(
            "the proposed tree changes the node disruption policy: each change is priced by \
             the stricter of the policy before and after it, since the MCO's daemon applies \
             the one in force when its node updates, which the apply does not order; apply \
             the policy first and plan again to price with it alone"
                .into(),
        );
    }
    Ok(InForce {
        before,
        after,
        notes,
    })
}

/// Whether every entry of policy file `p` is in force already.
fn in_force_already(p: &PolicyFile, before: &DisruptionPolicy) -> bool {
    DisruptionPolicy::of_machineconfiguration(&p.doc, &p.name).is_ok_and(|p| {
        p.files.iter().all(|e| before.files.contains(e))
            && p.units.iter().all(|e| before.units.contains(e))
            && (p.sshkey.is_empty() || p.sshkey == before.sshkey)
    })
}

/// Whether `p` is render's own policy file: named as render names it
/// (its field manager known) and holding only entries render writes, each
/// with render's actions (of any architectures' wrappers), nothing else.
fn renders_own(p: &PolicyFile) -> bool {
    use crate::cli::render::arch::Arch;
    let arches: Vec<&str> = Arch::ALL.iter().map(|a| a.name()).collect();
    let ours = crate::cli::render::sync_units::disruption_policy(&arches, "kubelet.service");
    let ours = ours
        .pointer("/spec/nodeDisruptionPolicy/files")
        .and_then(Value::as_array);
    let files = p
        .doc
        .pointer("/spec/nodeDisruptionPolicy/files")
        .and_then(Value::as_array);
    let shape = serde_json::json!({
        "apiVersion": "operator.openshift.io/v1",
        "kind": "MachineConfiguration",
        "metadata": { "name": "cluster" },
        "spec": { "nodeDisruptionPolicy": { "files": files } },
    });
    p.manager.is_some()
        && p.doc == shape
        && files
            .zip(ours)
            .is_some_and(|(f, o)| f.iter().all(|e| o.contains(e)))
}

/// A node's two policies (the MCO's defaults of its release under each),
/// with the paths whose entry is the MCO's default.
pub struct NodePolicy {
    before: (DisruptionPolicy, Vec<String>),
    after: (DisruptionPolicy, Vec<String>),
}

impl NodePolicy {
    pub fn new(kubelet_minor: Option<u32>, p: &InForce) -> NodePolicy {
        NodePolicy {
            before: policy::with_defaults(kubelet_minor, &p.before),
            after: policy::with_defaults(kubelet_minor, &p.after),
        }
    }

    /// The policy that prices `change`: the stricter; of two as strict, the
    /// one whose actions leave the daemon to judge the file (`Special`:
    /// registries.conf may drain), else the one in force now.
    fn pick(&self, change: &Changed) -> &(DisruptionPolicy, Vec<String>) {
        let (b, a) = (self.before.0.cost(change), self.after.0.cost(change));
        let special = |c: &(Disruption, Vec<String>)| c.1.iter().any(|x| x == "Special");
        if a.0 > b.0 || (a.0 == b.0 && special(&a) && !special(&b)) {
            &self.after
        } else {
            &self.before
        }
    }

    /// What `change` costs, and the actions behind it.
    pub fn cost(&self, change: &Changed) -> (Disruption, Vec<String>) {
        self.pick(change).0.cost(change)
    }

    /// Whether the entry pricing `change` is the MCO's default.
    pub fn is_default(&self, change: &Changed) -> bool {
        let (p, defaults) = self.pick(change);
        p.is_default(change, defaults)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, manager: Option<&str>, entries: Value) -> PolicyFile {
        PolicyFile {
            name: name.into(),
            manager: manager.map(str::to_string),
            doc: serde_json::json!({
                "apiVersion": "operator.openshift.io/v1",
                "kind": "MachineConfiguration",
                "metadata": { "name": "cluster" },
                "spec": { "nodeDisruptionPolicy": { "files": entries } },
            }),
        }
    }

    fn none_for(path: &str) -> Value {
        serde_json::json!([{ "path": path, "actions": [{ "type": "None" }] }])
    }

    /// A policy file nothing applies prices nothing; one applied with the
    /// change prices it no more leniently than the cluster's before it.
    #[test]
    fn a_policy_of_the_change_never_prices_it_more_leniently() {
        let change = Changed::File("/etc/gpu.conf".into());
        let cluster = serde_json::json!({
            "apiVersion": "operator.openshift.io/v1",
            "kind": "MachineConfiguration",
            "metadata": { "name": "cluster" },
        });
        let base = Render::default();
        let left_out = Render {
            policies_left_out: vec![file("x.yaml", None, none_for("/etc/gpu.conf"))],
            ..Default::default()
        };
        let applied = Render {
            policies: vec![file("x.yaml", None, none_for("/etc/gpu.conf"))],
            ..Default::default()
        };
        for (cluster, to) in [
            (Some(&cluster), &left_out),
            (None, &left_out),
            (Some(&cluster), &applied),
            (None, &applied),
        ] {
            let p = in_force(cluster, &base, to, false).unwrap();
            let cost = NodePolicy::new(Some(31), &p).cost(&change);
            assert_eq!(cost.0, Disruption::DrainAndReboot, "{cost:?}");
        }
        // In force before (the cluster's, or the base's applied): priced by it.
        let p = in_force(None, &applied, &applied, false).unwrap();
        assert_eq!(
            NodePolicy::new(Some(31), &p).cost(&change).0,
            Disruption::Nothing
        );
    }

    /// Review 23 r23b F3: under --prune, the tree's MachineConfiguration
    /// removed is deleted, the cluster's entries with it; without, they
    /// stay (only the file's own are taken out).
    #[test]
    fn a_policy_pruned_from_the_tree_takes_the_cluster_s_entries_with_it() {
        let other = Changed::File("/etc/other.conf".into());
        let cluster = serde_json::json!({
            "apiVersion": "operator.openshift.io/v1",
            "kind": "MachineConfiguration",
            "metadata": { "name": "cluster" },
            "spec": { "nodeDisruptionPolicy": { "files": none_for("/etc/other.conf") } },
        });
        let base = Render {
            policies: vec![file("x.yaml", None, none_for("/etc/gpu.conf"))],
            ..Default::default()
        };
        let cost = |prune| {
            let p = in_force(Some(&cluster), &base, &Render::default(), prune).unwrap();
            NodePolicy::new(Some(31), &p).cost(&other).0
        };
        assert_eq!(cost(false), Disruption::Nothing);
        assert_eq!(cost(true), Disruption::DrainAndReboot);
    }

    /// Review 23 r23b F1 variant C: under --prune, the tree's last
    /// MachineConfiguration leaving it deletes the object `cluster`, every
    /// entry with it (render's too); only the file's own were taken out.
    #[test]
    fn a_policy_pruned_from_the_tree_deletes_every_entry() {
        let mut cluster = serde_json::json!({
            "apiVersion": "operator.openshift.io/v1",
            "kind": "MachineConfiguration",
            "metadata": { "name": "cluster" },
            "spec": { "nodeDisruptionPolicy": { "files": [
                { "path": "/etc/gpu.conf", "actions": [{ "type": "None" }] },
                { "path": "/etc/kubelet-labeler/a", "actions": [{ "type": "None" }] },
            ] } },
        });
        cluster["metadata"]["managedFields"] = serde_json::json!([]);
        let base = Render {
            policies: vec![file("gpu-policy.yaml", None, none_for("/etc/gpu.conf"))],
            ..Default::default()
        };
        let change = Changed::File("/etc/kubelet-labeler/a".into());
        let cost = |prune| {
            let p = in_force(Some(&cluster), &base, &Render::default(), prune).unwrap();
            NodePolicy::new(Some(31), &p).cost(&change).0
        };
        assert_eq!(cost(true), Disruption::DrainAndReboot);
        assert_eq!(cost(false), Disruption::Nothing);
    }

    /// Render's own file is told by what it holds: an entry render never
    /// writes makes it another file, whatever its name.
    #[test]
    fn renders_own_policy_is_told_by_its_entries() {
        let ours =
            crate::cli::render::sync_units::disruption_policy(&["x86_64"], "kubelet.service");
        let entries = ours["spec"]["nodeDisruptionPolicy"]["files"].clone();
        let mgr = Some("kubelet-labeler-worker-gpu");
        assert!(renders_own(&file("a.yaml", mgr, entries.clone())));
        assert!(!renders_own(&file("a.yaml", None, entries.clone())));
        let mut more = entries.as_array().unwrap().clone();
        more.extend(none_for("/etc/gpu.conf").as_array().unwrap().clone());
        assert!(!renders_own(&file("a.yaml", mgr, Value::Array(more))));
    }
}
