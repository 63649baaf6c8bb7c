//! `plan` on fleets built for the case: the pods a NoExecute taint evicts,
//! and nodes whose installed files are of another node format than the
//! proposed render's.

use crate::plan::{json, plan, render};
use crate::support::{scratch_dir, stderr, stdout};

use serde_json::Value;

/// A NoExecute taint added to the pool: the node's pods are evicted as
/// Kubernetes' taint eviction controller evicts them. At once: a pod with
/// no toleration, one whose toleration's value or effect differs, a
/// DaemonSet pod (the DaemonSet controller's tolerations are for the node
/// conditions only), one whose first matching toleration has
/// `tolerationSeconds: 0`. Later: one tolerating it for 300 s, one for
/// 60 s. Never: one tolerating the key, one tolerating everything, and a
/// pod that has finished or runs on another node. A pod already on its way
/// out (an earlier NoExecute taint it does not tolerate) is not counted.
#[test]
fn a_noexecute_taint_evicts_the_pods_kubernetes_evicts() {
    let tmp = scratch_dir();
    let (base, proposed) = (tmp.path().join("base"), tmp.path().join("proposed"));
    render(&base, &[]);
    render(&proposed, &["--taint", "example.com/drain=true:NoExecute"]);
    let tol = |key: &str, op: &str, value: &str, effect: &str, secs: Option<i64>| {
        let mut t = serde_json::json!({"key": key, "operator": op, "effect": effect});
        if !value.is_empty() {
            t["value"] = value.into();
        }
        if let Some(s) = secs {
            t["tolerationSeconds"] = s.into();
        }
        t
    };
    let ds_defaults = vec![
        tol(
            "node.kubernetes.io/not-ready",
            "Exists",
            "",
            "NoExecute",
            None,
        ),
        tol(
            "node.kubernetes.io/unreachable",
            "Exists",
            "",
            "NoExecute",
            None,
        ),
        tol(
            "node.kubernetes.io/disk-pressure",
            "Exists",
            "",
            "NoSchedule",
            None,
        ),
    ];
    // (name, node, phase, tolerations)
    let pods: Vec<(&str, &str, &str, Vec<Value>)> = vec![
        ("bare", "gpu-1", "Running", vec![]),
        (
            "other-value",
            "gpu-1",
            "Running",
            vec![tol(
                "example.com/drain",
                "Equal",
                "false",
                "NoExecute",
                None,
            )],
        ),
        (
            "noschedule-only",
            "gpu-1",
            "Running",
            vec![tol("example.com/drain", "Exists", "", "NoSchedule", None)],
        ),
        ("daemonset-pod", "gpu-1", "Running", ds_defaults),
        (
            "zero-seconds",
            "gpu-1",
            "Running",
            vec![
                tol("example.com/drain", "Exists", "", "NoExecute", Some(0)),
                tol("", "Exists", "", "", None),
            ],
        ),
        (
            "five-minutes",
            "gpu-1",
            "Running",
            vec![tol(
                "example.com/drain",
                "Equal",
                "true",
                "NoExecute",
                Some(300),
            )],
        ),
        (
            "one-minute",
            "gpu-1",
            "Pending",
            vec![tol("example.com/drain", "Exists", "", "", Some(60))],
        ),
        (
            "tolerates-key",
            "gpu-1",
            "Running",
            vec![tol("example.com/drain", "Exists", "", "NoExecute", None)],
        ),
        (
            "tolerates-all",
            "gpu-1",
            "Running",
            vec![tol("", "Exists", "", "", None)],
        ),
        ("finished", "gpu-1", "Succeeded", vec![]),
        ("elsewhere", "gpu-2", "Running", vec![]),
        (
            "leaving-anyway",
            "gpu-3",
            "Running",
            vec![tol("example.com/old", "Exists", "", "NoExecute", Some(30))],
        ),
        (
            "tolerates-the-old-only",
            "gpu-3",
            "Running",
            vec![tol("example.com/old", "Exists", "", "NoExecute", None)],
        ),
    ];
    let node = |name: &str, taints: Value| {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "node-role.kubernetes.io/worker": "", "node.kubernetes.io/worker-gpu": ""}},
            "spec": {"taints": taints},
            "status": {"nodeInfo": {"kubeletVersion": "v1.33.5"}}})
    };
    let mut items = vec![
        node("gpu-1", serde_json::json!([])),
        node("gpu-2", serde_json::json!([])),
        node(
            "gpu-3",
            serde_json::json!([{"key": "example.com/old", "effect": "NoExecute"}]),
        ),
    ];
    for (name, on, phase, tolerations) in &pods {
        items.push(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "apps"},
            "spec": {"nodeName": on, "tolerations": tolerations},
            "status": {"phase": phase}}));
    }
    let fleet = tmp.path().join("fleet.json");
    std::fs::write(
        &fleet,
        serde_json::json!({"kind": "List", "items": items}).to_string(),
    )
    .unwrap();
    let o = plan(&base, &proposed, &fleet, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let p = json(&o);
    let group = |node: &str| {
        p["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["nodes"].as_array().unwrap().iter().any(|n| n == node))
            .unwrap_or_else(|| panic!("no group has {node}: {p:#}"))["outcome"]
            .clone()
    };
    let gpu1 = group("gpu-1");
    assert_eq!(
        gpu1["taint_commands"],
        serde_json::json!([
            "kubectl taint node <node> example.com/drain=true:NoExecute --overwrite"
        ]),
        "{gpu1:#}"
    );
    // bare, other-value, noschedule-only, daemonset-pod, zero-seconds.
    assert_eq!(gpu1["evicted_pods"], 5, "{gpu1:#}");
    assert_eq!(
        gpu1["evicted_later"],
        serde_json::json!({"pods": 2, "soonest_seconds": 60, "latest_seconds": 300}),
        "{gpu1:#}"
    );
    assert_eq!(group("gpu-2")["evicted_pods"], 1);
    assert_eq!(group("gpu-2")["evicted_later"], Value::Null);
    assert_eq!(group("gpu-3")["evicted_pods"], 1, "{:#}", group("gpu-3"));
    let text = stdout(&plan(&base, &proposed, &fleet, &[]));
    assert!(
        text.contains("evicts 5 pod(s) running there at once")
            && text.contains("and 2 more between 60 s and 300 s"),
        "{text}"
    );
}

/// A PR that re-renders a pool with a release of another node format:
/// the base render (what the nodes run) is of node format 3, the proposed
/// of this release's. A node whose rendered config is not given is taken
/// to run the base render: it keeps node format 3's behaviour until the new
/// MachineConfigs land, which this CLI cannot judge. A node whose current
/// rendered config is given and already carries this release's files has
/// no change of format.
#[test]
fn a_node_of_another_node_format_keeps_its_old_behaviour() {
    use kubelet_labeler::cli::render::layout;
    use kubelet_labeler::node::contract::NODE_FORMAT;
    let tmp = scratch_dir();
    let (base, proposed) = (tmp.path().join("base"), tmp.path().join("proposed"));
    render(&base, &["--label", "example.com/tier=gold"]);
    render(&proposed, &["--label", "example.com/tier=silver"]);
    // The base as the release of node format 3 rendered it.
    crate::support::node_format::as_node_format_3(&base, true);
    let mut rendered_new = Vec::new();
    // The rendered config of a node already updated: the proposed files.
    for e in std::fs::read_dir(&proposed).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "yaml") {
            let text = std::fs::read_to_string(&p).unwrap();
            rendered_new.extend(layout::machineconfigs_from_yaml(&text, "mc").unwrap_or_default());
        }
    }
    let mut files = Vec::new();
    for mc in &rendered_new {
        let c = &mc["spec"]["config"];
        files.extend(
            c["storage"]["files"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
    }
    assert!(!files.is_empty());
    let node = |name: &str, current: &str| {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                "labels": {"node-role.kubernetes.io/worker": "", "node.kubernetes.io/worker-gpu": ""},
                "annotations": {"machineconfiguration.openshift.io/currentConfig": current}},
            "status": {"nodeInfo": {"kubeletVersion": "v1.33.5"}}})
    };
    let fleet = tmp.path().join("fleet.json");
    std::fs::write(
        &fleet,
        serde_json::json!({"kind": "List", "items": [
            node("gpu-old", "rendered-worker-gpu-aaa"),
            node("gpu-new", "rendered-worker-gpu-bbb"),
            {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
             "metadata": {"name": "rendered-worker-gpu-bbb"},
             "spec": {"config": {"ignition": {"version": "3.5.0"},
                "storage": {"files": files}}}},
        ]})
        .to_string(),
    )
    .unwrap();
    let o = plan(&base, &proposed, &fleet, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let p = json(&o);
    let group = |node: &str| {
        p["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["nodes"].as_array().unwrap().iter().any(|n| n == node))
            .unwrap_or_else(|| panic!("no group has {node}: {p:#}"))["outcome"]
            .clone()
    };
    let old = group("gpu-old");
    let f = &old["wrapper_format"];
    assert_eq!(f["installed"], "node format 3", "{old:#}");
    assert_eq!(
        f["proposed"],
        format!("node format {NODE_FORMAT}"),
        "{old:#}"
    );
    assert!(
        f["installed_from"]
            .as_str()
            .unwrap()
            .starts_with("the base render of pool worker-gpu (rendered-worker-gpu-aaa"),
        "{old:#}"
    );
    assert!(
        f["until_then"]
            .as_str()
            .unwrap()
            .contains("cannot be judged"),
        "{old:#}"
    );
    assert!(
        old["not_judged"]
            .to_string()
            .contains("the base render's files for pool worker-gpu are of node format 3"),
        "{old:#}"
    );
    assert_eq!(group("gpu-new")["wrapper_format"], Value::Null);
    let text = stdout(&plan(&base, &proposed, &fleet, &[]));
    assert!(
        text.contains("wrapper: installed node format 3 (from the base render of pool worker-gpu")
            && text.contains("it keeps the old behaviour until the new MachineConfigs land"),
        "{text}"
    );
    let md = stdout(&plan(&base, &proposed, &fleet, &["--format", "markdown"]));
    assert!(
        md.contains("old behaviour until the new MachineConfigs land (node format 3 installed"),
        "{md}"
    );
}

/// Review 46 r46b F1: a DaemonSet's line named every taint it does not
/// tolerate (400 of a rule, on each node's line: 243 MB for 100 nodes); it
/// names the first three and counts the rest.
#[test]
fn a_daemonset_s_line_names_a_few_taints_and_counts_the_rest() {
    let taints: String = (0..5)
        .map(|i| {
            format!("    - key: example.com/t{i}\n      value: \"x\"\n      effect: NoSchedule\n")
        })
        .collect();
    let rules = format!(
        "apiVersion: nfd.openshift.io/v1alpha1\nkind: NodeFeatureRule\nmetadata:\n  name: many\n\
         spec:\n  rules:\n  - name: many-taints\n    taints:\n{taints}    matchFeatures:\n    \
         - feature: pci.device\n      matchExpressions:\n        vendor: {{op: In, value: [\"10de\"]}}\n"
    );
    let tmp = scratch_dir();
    let file = tmp.path().join("rules.yaml");
    std::fs::write(&file, rules).unwrap();
    let (base, proposed) = (tmp.path().join("base"), tmp.path().join("proposed"));
    render(&base, &[]);
    render(&proposed, &["--rules", file.to_str().unwrap()]);
    let fleet = crate::support::repo().join("examples/fleet/fleet.json");
    let o = plan(&base, &proposed, &fleet, &["--format", "json"]);
    let p = json(&o);
    assert_eq!(
        p["groups"][0]["outcome"]["daemonsets"],
        serde_json::json!([
            "openshift-nfd/nfd-worker: stops being schedulable (does not tolerate \
             example.com/t0=x:NoSchedule, example.com/t1=x:NoSchedule, \
             example.com/t2=x:NoSchedule, 2 more)"
        ]),
        "{p:#}"
    );
}
