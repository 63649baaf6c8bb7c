//! plan's day-2 sync lines where the node rules fail as a whole (a pod
//! filled features.d past the rules' budget), against the real sync's own
//! computation on the same node: its `derive` on a tree of the render's
//! files and facts, and `reconcile` on the same Node. Label-only rules keep
//! the labels they gave (nothing removed); rules that may taint fence the
//! node, and the sync still adds the static labels a change brings (so
//! the node's pool follows them).

use crate::plan::{json, node_tree, plan, render};
use crate::support::run_cli::stand_in_wrapper;
use crate::support::{bin, repo, scratch_dir, stderr};

use std::path::Path;

use kubelet_labeler::cli::plan::sync_labels::sync_line;
use kubelet_labeler::node::kubelet::Profile;
use kubelet_labeler::node::sync::reconcile;
use kubelet_labeler::node::sync::run::{self, SyncOptions};
use serde_json::{Value, json};

const NODE: &str = "gpu-a100-01";

/// `rules` label-only rules of `terms` `matchName` terms on local.label
/// (each gives `example.com/lN=1`), and a taint rule when asked.
fn rules(path: &Path, rules: usize, terms: usize, taint: bool) {
    let term = "        - feature: local.label\n          matchName: {op: Exists}\n";
    let mut text = String::from(
        "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\n\
         metadata: {name: many}\nspec:\n  rules:\n",
    );
    for r in 0..rules {
        text += &format!(
            "    - name: l{r}\n      labels: {{example.com/l{r}: \"1\"}}\n      matchFeatures:\n{}",
            term.repeat(terms)
        );
    }
    if taint {
        text += "    - name: taint\n      taints: [{key: example.com/t, value: \"1\", effect: NoSchedule}]\n\
                 \x20     matchFeatures:\n        - feature: local.label\n\
                 \x20         matchExpressions: {gpu: {op: Exists}}\n";
    }
    crate::support::write(path, &text);
}

/// plan's `sync` lines for the node after a change that adds the static
/// label `example.com/team=ml` to the node's pool, asserted to be the real
/// sync's on the same Node (its reconcile's keys in plan's words); with
/// why the sync's rules are unknown, and plan's group of the node.
/// `role`: the render is the built-in worker role's and the fleet has a
/// pool `worker-ml` selecting that label (else the render is pool
/// worker-gpu's, the example fleet's).
/// The last: what the same sync does on a node installed from a fleet ISO
/// (its record: worker and worker-ml, installed into each in turn; role
/// only), why it leaves the label change out or None.
fn both(taint: bool, role: bool) -> (Vec<String>, Option<String>, Value, Vec<Option<String>>) {
    let tmp = scratch_dir();
    let d = tmp.path();
    let file = d.join("rules.yaml");
    rules(&file, 300, 3, taint);
    let (base, proposed) = (d.join("base"), d.join("proposed"));
    let r = file.to_str().unwrap();
    let render = |dir: &Path, extra: &[&str]| match role {
        false => render(dir, extra),
        true => {
            let o = bin()
                .args(["render", "machineconfig", "--role", "worker", "--wrapper"])
                .arg(stand_in_wrapper())
                .arg("--output-dir")
                .arg(dir)
                .args(extra)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", stderr(&o));
        }
    };
    render(&base, &["--rules", r]);
    render(&proposed, &["--rules", r, "--label", "example.com/team=ml"]);
    // The node's facts: a pod's feature file of 1,022 keys.
    let facts_root = d.join("facts");
    let pod: String = (0..1022)
        .map(|k| format!("k{k:04}{}\n", "a".repeat(50)))
        .collect();
    crate::support::write(
        &facts_root.join("etc/kubernetes/node-feature-discovery/features.d/pod"),
        &pod,
    );
    let facts = bin()
        .args(["facts", "--json", "--root"])
        .arg(&facts_root)
        .output()
        .unwrap();
    assert!(facts.status.success(), "{}", stderr(&facts));
    // The Node: an earlier sync set and owns two rule labels.
    let mut node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "resourceVersion": "5",
            "labels": {"kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux",
                "node-role.kubernetes.io/worker": "",
                "example.com/l0": "1", "example.com/l1": "1"},
            "annotations": {"kubelet-labeler.io/owned-labels": "example.com/l0,example.com/l1"}}});
    if !role {
        let meta = &mut node["metadata"];
        meta["labels"]["node.kubernetes.io/worker-gpu"] = json!("");
        meta["annotations"]["kubelet-labeler.io/pool-labels"] =
            json!("node.kubernetes.io/worker-gpu");
    }
    let example: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("examples/fleet/fleet.json")).unwrap(),
    )
    .unwrap();
    let mut items: Vec<Value> = example["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| !matches!(i["kind"].as_str(), Some("Node" | "NodeFeature")))
        .cloned()
        .collect();
    items.push(node.clone());
    if role {
        items.push(json!({"apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool", "metadata": {"name": "worker-ml"},
            "spec": {"machineConfigSelector": {"matchExpressions": [
                    {"key": "machineconfiguration.openshift.io/role", "operator": "In",
                     "values": ["worker", "worker-ml"]}]},
                "nodeSelector": {"matchLabels": {"example.com/team": "ml"}}}}));
    }
    items.push(
        json!({"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
        "metadata": {"name": NODE, "labels": {"nfd.node.kubernetes.io/node-name": NODE}},
        "spec": {"features": json(&facts)}}),
    );
    let fleet = d.join("fleet.json");
    std::fs::write(&fleet, json!({"kind": "List", "items": items}).to_string()).unwrap();
    let o = plan(&base, &proposed, &fleet, &["--format", "json"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let p = json(&o);
    let group = p["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g.to_string().contains(NODE))
        .cloned()
        .unwrap_or_else(|| panic!("no group of {NODE}: {p:#}"));
    let planned: Vec<String> = group["outcome"]["sync"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    // The real sync on that node: the proposed render's files, the same facts.
    let tree = d.join("tree");
    node_tree(&proposed, &tree);
    let derivation = run::derive(&SyncOptions {
        root: tree,
        facts_root: Some(facts_root),
        profile: Some(Profile::OpenShift),
        ..Default::default()
    })
    .unwrap();
    let state = run::node_state(&node.to_string()).unwrap();
    let policy = run::effective_policy(&Default::default(), &derivation.pool_label);
    let r = reconcile::reconcile(&derivation.desired, &state, &policy).unwrap();
    // plan's formatter, on the real sync's keys.
    let synced: Vec<String> = r.keys.iter().filter_map(sync_line).collect();
    let told = format!(
        "plan: {planned:#?}\nsync: {synced:#?}\nunknown: {:?}",
        derivation.desired.unknown
    );
    assert_eq!(planned, synced, "{told}");
    let mut held = Vec::new();
    if role {
        use kubelet_labeler::node::fleet::{
            Pool, PoolKind, Requirement, WORKER_ROLE_LABEL, installed_record,
        };
        let pool = |name: &str, kind, key: &str, value: &str| Pool {
            name: name.into(),
            kind,
            config: format!("{name}.ign"),
            selector: vec![Requirement::In(key.into(), vec![value.into()])],
            static_labels: Vec::new(),
            device: None,
        };
        let pools = [
            pool("worker", PoolKind::Worker, WORKER_ROLE_LABEL, ""),
            pool("worker-ml", PoolKind::Custom, "example.com/team", "ml"),
        ];
        for installed in &pools {
            let policy = reconcile::Policy {
                installed: Some(Ok(installed_record(installed, &pools))),
                ..policy.clone()
            };
            let r = reconcile::reconcile(&derivation.desired, &state, &policy).unwrap();
            held.push(r.pool_move);
        }
    }
    (planned, derivation.desired.unknown, group, held)
}

/// Label-only rules run out of their budget on the node: the sync keeps the
/// rule labels it owns (their value unknown) and adds the static one; plan
/// says the same, and no removal.
#[test]
fn label_only_rules_failing_whole_keep_their_labels_in_plan() {
    let (planned, unknown, _, _) = both(false, false);
    let unknown = unknown.unwrap_or_default();
    assert!(unknown.contains("budget"), "{unknown}");
    assert!(
        planned
            .iter()
            .any(|l| l.starts_with("add example.com/team: <absent> -> ml")),
        "{planned:?}"
    );
    assert!(
        !planned.iter().any(|l| l.starts_with("remove")),
        "{planned:?}"
    );
}

/// Rules that may taint fail as a whole: the node registers fenced, and the
/// running Node's sync still adds the static label the change brings,
/// which plan shows (and follows in the node's labels after).
#[test]
fn a_fenced_nodes_sync_still_adds_the_static_labels_in_plan() {
    let (planned, unknown, group, held) = both(true, true);
    assert!(unknown.is_some_and(|u| u.contains("budget")));
    assert!(
        planned
            .iter()
            .any(|l| l.starts_with("add example.com/team: <absent> -> ml")),
        "{planned:?}"
    );
    assert!(
        !planned.iter().any(|l| l.starts_with("remove")),
        "{planned:?}"
    );
    let outcome = &group["outcome"];
    let fenced = outcome["register_after"]["left_out"]
        .as_str()
        .unwrap_or_default();
    assert!(fenced.contains("registers fenced"), "{group:#}");
    // The label moves the node to the pool selecting it (a drain and reboot).
    assert_eq!(outcome["pool_after"], "worker-ml", "{group:#}");
    // Review 16 r16a F3: unless it was installed from a fleet ISO into
    // another pool, whose record plan cannot read: its sync then leaves the
    // change out, as plan says.
    let said = outcome["not_judged"].to_string();
    assert!(
        said.contains(
            "a node installed from a fleet ISO into another pool than worker-ml \
             (/etc/kubelet-labeler/installed-pool, on the node, not among the inputs) keeps \
             its labels: its sync leaves this label change out"
        ),
        "{group:#}"
    );
    let into_worker = held[0].as_deref().unwrap_or_default();
    assert!(into_worker.contains("select pool worker-ml"), "{held:?}");
    assert_eq!(held[1], None, "installed into worker-ml: the move goes");
}
