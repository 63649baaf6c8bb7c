//! What the MCO renders into a pool's config that plan does not render,
//! refused where a change reaches it: plan would show the pool's nodes
//! unchanged while they reboot and register with other taints.
//!
//! - A `KubeletConfig` or `ContainerRuntimeConfig` added, removed or
//!   changed between the renders, or one (changed or not) that selects
//!   other pools after the change than before: the MCO's controllers select
//!   pools by the pools' labels (`machineConfigPoolSelector`), so a pool's
//!   labels changed under an unchanged KubeletConfig give its nodes the
//!   KubeletConfig's `99-<pool>-generated-kubelet` (a reboot, its
//!   `registerWithTaints`) or take it away.
//! - kubelet's config files (`--config`, and from 4.21 `--config-dir`'s
//!   drop-ins) changed in a pool's MachineConfigs: the node's wrapper
//!   registers the config's `registerWithTaints` with ours, and the
//!   config is the one the MCO generates from the pool's KubeletConfigs,
//!   which plan does not render.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};
use serde_json::Value;

use super::identity::{self, Identity};
use super::inputs::Render;
use super::kube::{Pool, Selector};

/// kubelet's `--config` in every MCO kubelet.service template.
pub const KUBELET_CONFIG: &str = "/etc/kubernetes/kubelet.conf";
/// kubelet's `--config-dir` in the MCO's kubelet.service from 4.21.
pub const KUBELET_CONFIG_DIR: &str = "/etc/openshift/kubelet.conf.d";

/// Refuse a change of an object plan does not lay out: its pools' nodes
/// change in ways plan would not show (a KubeletConfig's
/// `registerWithTaints` taints every node registering after it). Objects
/// are compared whole ([`super::identity::compared`]). A Namespace or
/// ServiceAccount added with nothing but its name passes, and so does one
/// removed when the apply does not `prune` (it stays as it is).
pub fn check_objects(base: &Render, proposed: &Render, prune: bool) -> Result<()> {
    if let Some(node) = proposed.nodes.first() {
        bail!(
            "{}: a Node manifest ({node:?}): applied, it replaces the Node's taints (kubectl \
             applies the list whole, and the node cannot put them back) and sets its labels, \
             which may move it into another pool, outside kubelet-labeler and the MCO; remove \
             it from the render",
            proposed.name
        );
    }
    // On both sides: which copy the cluster holds is the applier's order.
    for render in [base, proposed] {
        if let Some(twice) = render.twice.first() {
            bail!(
                "{}: {twice} is given twice, otherwise each time: which one is applied is the \
                 applier's choice; keep one",
                render.name
            );
        }
    }
    // Review 22 r22b F1: one given without a namespace (not of a kind known
    // cluster-scoped) is in the applier's default namespace, which plan does
    // not know: the same object as the other side's in a namespace, or not.
    for (side, other) in [(base, proposed), (proposed, base)] {
        let in_a_namespace: BTreeSet<(&str, &str)> = (other.unpriced.keys())
            .filter_map(|(k, n)| Some((k.as_str(), n.rsplit_once('/')?.1)))
            .collect();
        for ((kind, name), v) in &side.unpriced {
            let id = Identity::of(v);
            if id.spelt.is_none()
                && id.scope != identity::Scope::Cluster
                && in_a_namespace.contains(&(kind.as_str(), name.as_str()))
            {
                bail!(
                    "{kind} {name:?} is given without a namespace in {} and in a namespace in \
                     {}: which object it is depends on the applier's default namespace, which \
                     plan does not know; give its namespace on both sides",
                    side.name,
                    other.name
                );
            }
        }
    }
    for key in base.unpriced.keys().chain(proposed.unpriced.keys()) {
        let (before, after) = (base.unpriced.get(key), proposed.unpriced.get(key));
        if before == after {
            continue;
        }
        // Review 21 r21b F3: no kind passes by kind alone; a Namespace or
        // ServiceAccount only there reaches no node.
        let inert = |v: &Value| Identity::of(v).existence_inert();
        let how = match (before, after) {
            (None, Some(a)) if inert(a) && identity::bare(a) => continue,
            (Some(b), None) if inert(b) && !prune => continue,
            (None, _) => "is added",
            (_, None) if prune => "is removed (and --prune deletes it)",
            (_, None) => "is removed",
            _ => "changes",
        };
        let why = match key.0.as_str() {
            "ServiceAccount (v1)" => {
                "its token automount and pull secrets decide whether its pods, nfd-worker's \
                 among them, reach the API server and pull their image"
            }
            "Namespace (v1)" => {
                "its labels and annotations decide which pods it admits and where they run, \
                 and deleted, every object in it is deleted (nfd-worker's DaemonSet too)"
            }
            _ => {
                "it may change nodes' config, labels or taints, or reboot them, outside the \
                 MachineConfigs plan renders"
            }
        };
        bail!(
            "{} {:?} {how} from {} to {}: plan cannot price a change of this kind ({why}); \
             plan the change without it, and review that object by eye",
            key.0,
            key.1,
            base.name,
            proposed.name
        );
    }
    let keys: BTreeSet<&(String, String)> = base
        .not_laid_out
        .keys()
        .chain(proposed.not_laid_out.keys())
        .collect();
    for key in keys {
        let (before, after) = (base.not_laid_out.get(key), proposed.not_laid_out.get(key));
        if before != after {
            let how = match (before, after) {
                (None, _) => "is added",
                (_, None) => "is removed",
                _ => "changes",
            };
            bail!(
                "{} {:?} {how} from {} to {}: plan does not render {} objects (the MCO renders \
                 them into the MachineConfigs of the pools they select: kubelet's config, its \
                 registerWithTaints among it, and a reboot), so it cannot show what the change \
                 does to nodes; plan the change without it, and review that object by eye",
                key.0,
                key.1,
                base.name,
                proposed.name,
                key.0
            );
        }
    }
    Ok(())
}

/// The pools (by name) `object` selects, as the MCO's controllers do
/// (`getPoolsForKubeletConfig`): by the pools' labels; an empty or absent
/// selector, or one Kubernetes refuses, selects none.
fn selected<'a>(object: &Value, pools: &'a [Pool]) -> BTreeSet<&'a str> {
    let selector = Selector::from_label_selector(object.pointer("/spec/machineConfigPoolSelector"));
    let Some(selector) = selector.filter(|s| !s.is_empty()) else {
        return BTreeSet::new();
    };
    pools
        .iter()
        .filter(|p| selector.matches(&p.labels))
        .map(|p| p.name.as_str())
        .collect()
}

/// Refuse a change of the pools an unchanged object selects (after
/// [`check_objects`]: the renders' objects are the same on both sides;
/// `cluster`'s, from the fleet, stand where the renders have none of the
/// name): the pools before the change (the cluster's, under the base
/// render's) against those after it. Under `prune`, one of the base render
/// that the proposed one leaves is deleted (review 23 r23b F3), not the
/// cluster's.
pub fn check_selection(
    (base, proposed): (&Render, &Render),
    cluster: &BTreeMap<(String, String), Value>,
    prune: bool,
    base_pools: &[Pool],
    proposed_pools: &[Pool],
) -> Result<()> {
    let keys: BTreeSet<&(String, String)> =
        base.not_laid_out.keys().chain(cluster.keys()).collect();
    for key in keys {
        let object_before = base.not_laid_out.get(key).or_else(|| cluster.get(key));
        let deleted = prune && base.not_laid_out.contains_key(key);
        let object_after =
            (proposed.not_laid_out.get(key)).or_else(|| cluster.get(key).filter(|_| !deleted));
        let before = object_before.map(|o| selected(o, base_pools));
        let after = object_after.map(|o| selected(o, proposed_pools));
        let (before, after) = (before.unwrap_or_default(), after.unwrap_or_default());
        if before == after {
            continue;
        }
        let list = |s: BTreeSet<&str>| {
            if s.is_empty() {
                "none".to_string()
            } else {
                s.into_iter().collect::<Vec<_>>().join(", ")
            }
        };
        let gained: BTreeSet<&str> = after.difference(&before).copied().collect();
        let lost: BTreeSet<&str> = before.difference(&after).copied().collect();
        let (kind, name) = key;
        bail!(
            "{kind} {name:?} selects other pools from {} to {} (by the pools' labels, its \
             machineConfigPoolSelector): pools gaining it: {}; losing it: {}. The MCO renders it \
             into their MachineConfigs (kubelet's config, its registerWithTaints among it, and a \
             reboot of every node), which plan does not render, so it cannot show what the \
             change does to nodes; change the pools' labels apart from what plan judges, and \
             review that {kind} by eye",
            base.name,
            proposed.name,
            list(gained),
            list(lost),
        );
    }
    Ok(())
}

/// The pools whose labels differ between `base_pools` and
/// `proposed_pools` (one missing on a side: no labels there).
pub fn relabelled<'a>(base_pools: &'a [Pool], proposed_pools: &'a [Pool]) -> Vec<&'a str> {
    let labels = |pools: &'a [Pool], name: &str| {
        let mut l = pools
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.labels.clone())
            .unwrap_or_default();
        l.sort();
        l
    };
    let names: BTreeSet<&str> = base_pools
        .iter()
        .chain(proposed_pools)
        .map(|p| p.name.as_str())
        .collect();
    names
        .into_iter()
        .filter(|n| labels(base_pools, n) != labels(proposed_pools, n))
        .collect()
}

/// Whether `path` is kubelet's config, under its config directory, or a
/// directory above them (a link there points kubelet elsewhere).
fn kubelet_config(path: &str) -> bool {
    let above = |p: &str| p.strip_prefix(path).is_some_and(|r| r.starts_with('/'));
    path == KUBELET_CONFIG
        || above(KUBELET_CONFIG)
        || above(KUBELET_CONFIG_DIR)
        || path
            .strip_prefix(KUBELET_CONFIG_DIR)
            .is_some_and(|r| r.is_empty() || r.starts_with('/'))
}

/// Refuse a change of kubelet's config files in `pool`'s layout (path →
/// identity, before and after).
pub fn check_kubelet_config(
    (from, to): (&str, &str),
    pool: &str,
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> Result<()> {
    let changed = before
        .keys()
        .chain(after.keys())
        .filter(|p| kubelet_config(p))
        .find(|p| before.get(*p) != after.get(*p));
    if let Some(path) = changed {
        bail!(
            "pool {pool}: {path} changes from {from} to {to}: kubelet registers with the \
             registerWithTaints of its config ({KUBELET_CONFIG}, and from OpenShift 4.21 the \
             drop-ins under {KUBELET_CONFIG_DIR}/), which the MCO generates from the pool's \
             KubeletConfigs and plan does not render, so it cannot show what the change does to \
             nodes; set kubelet's config with a KubeletConfig, plan the change without it, and \
             review it by eye"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(name: &str, kc: Option<Value>) -> Render {
        let mut r = Render {
            name: name.into(),
            ..Default::default()
        };
        if let Some(spec) = kc {
            r.not_laid_out.insert(
                ("KubeletConfig".into(), "gpu-taints".into()),
                json!({ "spec": spec }),
            );
        }
        r
    }

    fn pool(name: &str, labels: Value) -> Pool {
        Pool::from_object(&json!({ "metadata": { "name": name, "labels": labels } })).unwrap()
    }

    /// Review 12 F16: the pull request labels the pool an unchanged
    /// KubeletConfig selects by; taking the label away, too. The built-in
    /// pools carry the MCO's own labels.
    #[test]
    fn a_pool_label_change_under_an_unchanged_kubeletconfig_is_refused() {
        let spec = json!({ "machineConfigPoolSelector": {
                               "matchLabels": { "custom-kubelet": "gpu-taints" } },
                           "kubeletConfig": { "registerWithTaints": [
                               { "key": "example.com/gpu", "value": "true",
                                 "effect": "NoExecute" } ] } });
        let (base, pr) = (render("base", Some(spec.clone())), render("pr", Some(spec)));
        let plain = [Pool::builtin("worker"), pool("worker-gpu", json!({}))];
        let labelled = [
            Pool::builtin("worker"),
            pool("worker-gpu", json!({ "custom-kubelet": "gpu-taints" })),
        ];
        let err = check_selection((&base, &pr), &BTreeMap::new(), false, &plain, &labelled)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("pools gaining it: worker-gpu; losing it: none"),
            "{err}"
        );
        assert!(check_selection((&base, &pr), &BTreeMap::new(), false, &labelled, &plain).is_err());
        assert!(
            check_selection((&base, &pr), &BTreeMap::new(), false, &labelled, &labelled).is_ok()
        );
        assert!(check_selection((&base, &pr), &BTreeMap::new(), false, &plain, &plain).is_ok());
        // The worker pool's own labels, as installed.
        let builtin = json!({ "machineConfigPoolSelector": { "matchLabels": {
            "pools.operator.machineconfiguration.openshift.io/worker": "" } } });
        let (base, pr) = (
            render("base", Some(builtin.clone())),
            render("pr", Some(builtin)),
        );
        assert_eq!(
            selected(&base.not_laid_out.values().next().unwrap().clone(), &plain),
            BTreeSet::from(["worker"])
        );
        assert!(
            check_selection((&base, &pr), &BTreeMap::new(), false, &plain, &plain[..1]).is_ok()
        );
        assert!(
            check_selection((&base, &pr), &BTreeMap::new(), false, &plain, &plain[1..]).is_err()
        );
    }

    /// A KubeletConfig of the cluster's (from the fleet), in neither
    /// render: judged the same; the pools relabelled are named.
    #[test]
    fn the_cluster_s_kubeletconfigs_are_judged_too() {
        let spec = json!({ "machineConfigPoolSelector": {
                               "matchLabels": { "custom-kubelet": "gpu-taints" } } });
        let cluster = BTreeMap::from([(
            ("KubeletConfig".into(), "gpu-taints".into()),
            json!({ "spec": spec }),
        )]);
        let (base, pr) = (render("base", None), render("pr", None));
        let plain = [Pool::builtin("worker"), pool("worker-gpu", json!({}))];
        let labelled = [
            Pool::builtin("worker"),
            pool("worker-gpu", json!({ "custom-kubelet": "gpu-taints" })),
        ];
        assert!(check_selection((&base, &pr), &cluster, false, &plain, &labelled).is_err());
        assert!(check_selection((&base, &pr), &cluster, false, &plain, &plain).is_ok());
        assert_eq!(relabelled(&plain, &labelled), ["worker-gpu"]);
        assert_eq!(relabelled(&labelled, &labelled[..1]), ["worker-gpu"]);
        assert!(relabelled(&labelled, &labelled).is_empty());
        // Review 23 r23b F3: the base render's, left by the proposed one,
        // is deleted under --prune: the cluster's copy no longer stands.
        let base = render("base", Some(spec));
        let labelled = &labelled[..];
        assert!(check_selection((&base, &pr), &cluster, false, labelled, labelled).is_ok());
        let err = check_selection((&base, &pr), &cluster, true, labelled, labelled)
            .unwrap_err()
            .to_string();
        assert!(err.contains("losing it: worker-gpu"), "{err}");
    }

    /// An empty or absent selector, or one Kubernetes refuses, selects no
    /// pool (the MCO: "could not find any MachineConfigPool").
    #[test]
    fn an_empty_or_invalid_selector_selects_no_pool() {
        let pools = [
            Pool::builtin("worker"),
            pool("worker-gpu", json!({"a": "b"})),
        ];
        for spec in [
            json!({}),
            json!({ "machineConfigPoolSelector": {} }),
            json!({ "machineConfigPoolSelector": { "matchExpressions": [
                { "key": "a", "operator": "In", "values": [] } ] } }),
        ] {
            assert!(
                selected(&json!({ "spec": spec }), &pools).is_empty(),
                "{spec}"
            );
        }
    }

    #[test]
    fn kubelet_s_config_files() {
        let m = |p: &str, id: u64| BTreeMap::from([(p.to_string(), id)]);
        let ends = ("base", "pr");
        for (path, refused) in [
            ("/etc/kubernetes/kubelet.conf", true),
            ("/etc/openshift/kubelet.conf.d/90-gpu-taints.conf", true),
            ("/etc/openshift/kubelet.conf.d", true),
            ("/etc/openshift", true),
            ("/etc/kubernetes", true),
            ("/etc/kubernetes/x.env", false),
            ("/etc/openshift/other", false),
            ("/etc/openshift/kubelet.conf.dx", false),
            ("/etc/kubernetes/kubelet.conf.bak", false),
        ] {
            let before = BTreeMap::new();
            let after = m(path, 1);
            let r = check_kubelet_config(ends, "worker-gpu", &before, &after);
            assert_eq!(r.is_err(), refused, "{path}");
            assert!(check_kubelet_config(ends, "worker-gpu", &after, &after).is_ok());
            let r = check_kubelet_config(ends, "worker-gpu", &after, &m(path, 2));
            assert_eq!(r.is_err(), refused, "{path}");
        }
    }
}
