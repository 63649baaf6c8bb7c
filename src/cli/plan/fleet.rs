//! The fleet as `--fleet` gives it: Nodes, NodeFeatures (or `facts --json`
//! output), pools, rendered configs, the disruption policy, DaemonSets and
//! Pods, read once and reduced to what the rules look at.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;
use serde_json::Value;

use super::{formats, inputs, kube};
use crate::node::facts::Features;
use crate::node::sorted::SortedSet;
use crate::node::sync::reconcile::NodeState;
use kube::{Placement, Pool};

/// A node of the fleet as the inputs give it.
#[derive(Default)]
pub struct FleetNode {
    pub node: Option<NodeState>,
    pub kubelet_minor: Option<u32>,
    pub features: Option<usize>,
    pub pods: Vec<Placement>,
}

#[derive(Default)]
pub struct Fleet {
    pub nodes: BTreeMap<String, FleetNode>,
    /// Distinct feature sets, reduced to what the rules read.
    pub features: Vec<Features>,
    pub feature_index: std::collections::HashMap<String, usize>,
    pub pools: Vec<Pool>,
    /// The cluster's MachineConfigPools whole, by name: what a render's
    /// pool is compared with where the base render has none
    /// (`pool_spec`).
    pub pool_objects: BTreeMap<String, Value>,
    pub policy: Option<Value>,
    /// The node formats of our files in each rendered config given
    /// (`oc get mc -o json`), by name.
    pub rendered: std::collections::HashMap<String, formats::Formats>,
    pub daemonsets: Vec<(String, Placement)>,
    pub pods_given: bool,
    pub ignored: BTreeMap<String, usize>,
    /// The cluster's KubeletConfigs and ContainerRuntimeConfigs
    /// (`inputs::NOT_LAID_OUT`), by kind and name: whole.
    pub not_laid_out: BTreeMap<(String, String), Value>,
}

pub fn read_fleet(files: &[PathBuf], used: &SortedSet<String>) -> Result<Fleet> {
    let mut fleet = Fleet::default();
    let mut node_features: BTreeMap<String, Features> = BTreeMap::new();
    let mut pods: Vec<(String, Placement)> = Vec::new();
    for path in files {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let source = path.display().to_string();
        inputs::read_fleet_file(path, Some(used), &mut |obj| {
            add_object(
                obj,
                &stem,
                &source,
                used,
                &mut fleet,
                &mut node_features,
                &mut pods,
            )
        })?;
    }
    // NodeFeatures of one node (nfd-worker's, and others') merge.
    for (name, f) in node_features {
        let key = crate::cli::facts_json::nfd_json(&f).to_string();
        let next = fleet.features.len();
        let i = *fleet.feature_index.entry(key).or_insert(next);
        if i == next {
            fleet.features.push(f);
        }
        fleet.nodes.entry(name).or_default().features = Some(i);
    }
    for (node, p) in pods {
        if let Some(n) = fleet.nodes.get_mut(&node) {
            n.pods.push(p);
        }
    }
    let with_node = fleet.nodes.values().filter(|n| n.node.is_some()).count();
    let with_features = fleet
        .nodes
        .values()
        .filter(|n| n.features.is_some())
        .count();
    let both = fleet
        .nodes
        .values()
        .filter(|n| n.node.is_some() && n.features.is_some())
        .count();
    let named = files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if with_node > 0 && with_features > 0 && both == 0 {
        anyhow::bail!(
            "--fleet {named}: the {with_node} Nodes and the {with_features} NodeFeatures share no node name: are they exports of the same cluster?"
        );
    }
    if fleet.nodes.is_empty() {
        anyhow::bail!(
            "--fleet: no Node, NodeFeature or `facts --json` output in {} file(s); give `oc get nodes,nodefeatures -A -o json`",
            files.len()
        );
    }
    Ok(fleet)
}

fn add_object(
    obj: Value,
    stem: &str,
    source: &str,
    used: &SortedSet<String>,
    fleet: &mut Fleet,
    node_features: &mut BTreeMap<String, Features>,
    pods: &mut Vec<(String, Placement)>,
) -> Result<(), String> {
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let api = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match kind.as_str() {
        "Node" => {
            let body = obj.to_string();
            let state = crate::node::sync::run::node_state(&body)
                .map_err(|e| format!("Node {name}: {e}"))?;
            let minor = obj
                .pointer("/status/nodeInfo/kubeletVersion")
                .and_then(Value::as_str)
                .and_then(|v| v.trim_start_matches('v').split('.').nth(1)?.parse().ok());
            let n = fleet.nodes.entry(name).or_default();
            n.node = Some(state);
            n.kubelet_minor = minor;
        }
        "NodeFeature" => {
            if !api.starts_with("nfd.k8s-sigs.io/v1alpha1") {
                return Err(format!(
                    "NodeFeature {name} is of apiVersion {api:?}; plan reads nfd.k8s-sigs.io/v1alpha1 (NFD 0.14 and later)"
                ));
            }
            let node = obj
                .pointer("/metadata/labels/nfd.node.kubernetes.io~1node-name")
                .and_then(Value::as_str)
                .unwrap_or(&name)
                .to_string();
            let mut obj = obj;
            if let Some(features) = obj.pointer_mut("/spec/features") {
                prune_features(features, used);
            }
            let f = crate::cli::facts_json::from_nfd(&obj, source)?.only(used);
            merge_features(node_features.entry(node).or_default(), f);
        }
        "MachineConfigPool" => {
            fleet.pools.extend(Pool::from_object(&obj));
            fleet.pool_objects.insert(name, obj);
        }
        // A pool's rendered config, which a Node's currentConfig names.
        "MachineConfig" if name.starts_with("rendered-") => {
            let f = formats::of_configs([&obj]);
            fleet.rendered.insert(name, f);
        }
        "MachineConfiguration" => fleet.policy = Some(obj),
        k if inputs::NOT_LAID_OUT.contains(&k) => {
            // Keyed as the renders' (review 21 r21b F2), whole.
            let id = super::identity::Identity::of(&obj);
            fleet
                .not_laid_out
                .insert((k.to_string(), id.key_name()), obj);
        }
        "DaemonSet" => {
            let ns = obj
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let mut p = Placement::from_pod_spec(obj.pointer("/spec/template/spec"));
            p.tolerations.extend(kube::daemonset_default_tolerations());
            fleet.daemonsets.push((format!("{ns}/{name}"), p));
        }
        "Pod" => {
            fleet.pods_given = true;
            // A pod that has finished runs nothing a taint could evict.
            let phase = obj.pointer("/status/phase").and_then(Value::as_str);
            if matches!(phase, Some("Succeeded" | "Failed")) {
                return Ok(());
            }
            if let Some(node) = obj.pointer("/spec/nodeName").and_then(Value::as_str) {
                pods.push((node.to_string(), Placement::from_pod_spec(obj.get("spec"))));
            }
        }
        "" if ["flags", "attributes", "instances"]
            .iter()
            .any(|k| obj.get(k).is_some()) =>
        {
            // `facts --json` output: the node is named by the file.
            let f = crate::cli::facts_json::from_nfd(&obj, source)?.only(used);
            merge_features(node_features.entry(stem.to_string()).or_default(), f);
        }
        "" => return Err("an object without kind: is this `oc get ... -o json` output?".into()),
        other => *fleet.ignored.entry(other.to_string()).or_default() += 1,
    }
    Ok(())
}

/// Drop the features no rule reads before they are converted: a
/// NodeFeature's kernel config alone is thousands of attributes.
fn prune_features(features: &mut Value, used: &SortedSet<String>) {
    for kind in ["flags", "attributes", "instances"] {
        if let Some(Value::Object(m)) = features.get_mut(kind) {
            m.retain(|name, _| used.contains(name.as_str()));
        }
    }
}

fn merge_features(into: &mut Features, f: Features) {
    for (k, v) in f.flags.iter() {
        into.flags
            .entry(k.clone())
            .or_default()
            .extend(v.iter().cloned());
    }
    for (k, v) in f.attributes.iter() {
        into.attributes
            .entry(k.clone())
            .or_default()
            .extend(v.iter().map(|(a, b)| (a.clone(), b.clone())));
    }
    for (k, v) in f.instances.iter() {
        into.instances
            .entry(k.clone())
            .or_default()
            .extend(v.iter().cloned());
    }
}
