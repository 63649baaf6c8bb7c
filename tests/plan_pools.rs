//! A pull request's MachineConfigPools (review 23 r23b): a pool, or any
//! other object plan takes from the fleet where the renders have none,
//! pruned from the tree is deleted, not the fleet's copy (F3); a pool's
//! spec fields plan does not price are refused when they change (F7).

use crate::plan::{json, plan, render};
use crate::support::{add_file_machineconfig, relist_kustomization, repo, scratch_dir};
use crate::support::{stderr, stdout};

use std::path::{Path, PathBuf};
use std::process::Output;

pub(crate) const POOL: &str = "machineconfigpool-worker-gpu.yaml";

/// The example fleet: two GPU nodes in pool worker-gpu, its
/// MachineConfigPool among the objects (as `oc get ... machineconfigpools`).
fn fleet() -> PathBuf {
    repo().join("examples/fleet/fleet.json")
}

fn refused(o: &Output, says: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{}\n{err}", stdout(o));
    for s in says {
        assert!(err.contains(s), "{s:?} not in: {err}");
    }
}

fn drop_pool(dir: &Path) {
    std::fs::remove_file(dir.join(POOL)).unwrap();
    relist_kustomization(dir, &[], &[POOL]);
}

/// The pool file of render's `dir` with `spec` lines added under `spec:`.
pub(crate) fn edit_pool(dir: &Path, lines: &str) {
    let path = dir.join(POOL);
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replacen("spec:\n", &format!("spec:\n{lines}"), 1);
    assert_ne!(text, edited, "{text}");
    std::fs::write(&path, edited).unwrap();
}

fn add(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
    relist_kustomization(dir, &[name], &[]);
}

/// F3: the PR deletes the pool's MachineConfigPool. Under --prune the apply
/// deletes it: the GPU nodes move to worker (a drain and reboot), though the
/// fleet's export holds the pool as the base applied it (plan took that
/// copy for the proposed side: "no change"). Without --prune it stays.
#[test]
fn a_pool_pruned_from_the_tree_is_deleted_not_taken_from_the_fleet() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &[]);
    drop_pool(&pr);
    let o = plan(&base, &pr, &fleet(), &["--prune", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let p = json(&o);
    assert_eq!(p["reboot"], 2, "{p:#}");
    let gpu = &p["groups"][0];
    assert_eq!(
        gpu["nodes"],
        serde_json::json!(["gpu-a100-01", "gpu-a100-02"])
    );
    assert_eq!(gpu["outcome"]["pool_before"], "worker-gpu");
    assert_eq!(gpu["outcome"]["pool_after"], "worker");
    // Without --prune: kept, and said so.
    let o = plan(&base, &pr, &fleet(), &["--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let p = json(&o);
    assert_eq!(
        (p["changed"].as_u64(), p["reboot"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(
        p["not_judged"]
            .to_string()
            .contains("MachineConfigPool \\\"worker-gpu\\\" is removed from"),
        "{p:#}"
    );
}

/// F3, the KubeletConfig plan takes from the fleet in its selection check:
/// one the base tree applies and the PR removes is refused, with the
/// cluster's copy given or not, with --prune or not.
#[test]
fn a_kubeletconfig_removed_from_the_tree_is_refused_with_the_fleet_s_copy() {
    let kc = "apiVersion: machineconfiguration.openshift.io/v1\nkind: KubeletConfig\nmetadata:\n  \
              name: gpu-taints\nspec:\n  machineConfigPoolSelector:\n    matchLabels:\n      \
              pools.operator.machineconfiguration.openshift.io/worker-gpu: \"\"\n  \
              kubeletConfig:\n    maxPods: 300\n";
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &[]);
    add(&base, "kubeletconfig.yaml", kc);
    let cluster = tmp.path().join("kubeletconfigs.yaml");
    std::fs::write(&cluster, kc).unwrap();
    let cluster = cluster.to_str().unwrap();
    for extra in [&[][..], &["--prune"]] {
        for fleet_extra in [&[][..], &["--fleet", cluster]] {
            let args: Vec<&str> = extra.iter().chain(fleet_extra).copied().collect();
            refused(
                &plan(&base, &pr, &fleet(), &args),
                &["KubeletConfig \"gpu-taints\" is removed"],
            );
        }
    }
}

/// F3, the policy: the base tree lists a MachineConfiguration; the PR
/// removes it and writes a file another team's entry of the cluster's
/// policy (`None`) covers. Under --prune the object `cluster` is deleted,
/// every entry with it: the file's change is the MCO's default, a drain and
/// reboot. Without --prune the cluster's entry stays: no reboot.
#[test]
fn a_policy_pruned_from_the_tree_takes_the_cluster_s_entries_with_it() {
    let entry =
        |path: &str| format!("      - path: {path}\n        actions:\n        - type: None\n");
    let policy = |entries: &str| {
        format!(
            "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata:\n  \
             name: cluster\nspec:\n  nodeDisruptionPolicy:\n    files:\n{entries}"
        )
    };
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &[]);
    add(&base, "gpu-policy.yaml", &policy(&entry("/etc/gpu.conf")));
    add_file_machineconfig(
        &pr,
        "60-worker-gpu-other",
        Some("worker-gpu"),
        "/etc/other.conf",
        "x\n",
    );
    let cluster = tmp.path().join("machineconfiguration.yaml");
    let both = format!("{}{}", entry("/etc/gpu.conf"), entry("/etc/other.conf"));
    std::fs::write(&cluster, policy(&both)).unwrap();
    let cluster = cluster.to_str().unwrap();
    let run = |extra: &[&str]| {
        let args: Vec<&str> = ["--fleet", cluster, "--format", "json"]
            .iter()
            .chain(extra)
            .copied()
            .collect();
        let o = plan(&base, &pr, &fleet(), &args);
        assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
        json(&o)
    };
    let p = run(&[]);
    let gpu = &p["groups"][0]["outcome"];
    assert_eq!(p["reboot"], 0, "{p:#}");
    assert_eq!(
        gpu["disruption_because"],
        serde_json::json!(["/etc/other.conf: None"])
    );
    let p = run(&["--prune"]);
    assert_eq!(p["reboot"], 2, "{p:#}");
    assert_eq!(p["groups"][0]["nodes"][0], "gpu-a100-01", "{p:#}");
}

/// F7: a pool's `spec.osImageStream` (an OS update of every node of the
/// pool) was not read: planned "0 reboot". Every spec field outside the
/// ones plan prices is refused when it changes, either way; the priced
/// ones pass.
#[test]
fn a_pool_s_spec_fields_plan_does_not_price_are_refused() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &[]);
    for (field, lines) in [
        ("osImageStream", "  osImageStream:\n    name: rhel-10\n"),
        (
            "pinnedImageSets",
            "  pinnedImageSets:\n  - name: gpu-images\n",
        ),
        (
            "configuration",
            "  configuration:\n    name: rendered-worker-gpu-0123\n",
        ),
        ("futureField", "  futureField: 1\n"),
    ] {
        let pr = tmp.path().join(field);
        render(&pr, &[]);
        edit_pool(&pr, lines);
        let says = format!("MachineConfigPool \"worker-gpu\" spec.{field} changes");
        for extra in [&[][..], &["--prune"]] {
            refused(
                &plan(&base, &pr, &fleet(), extra),
                &[&says, "plan cannot price it"],
            );
            refused(&plan(&pr, &base, &fleet(), extra), &[&says]);
        }
        let o = plan(&pr, &pr, &fleet(), &[]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let os = "it switches the pool's OS image";
    let pr = tmp.path().join("osImageStream");
    refused(&plan(&base, &pr, &fleet(), &[]), &[os]);
    // The priced fields pass.
    let pr = tmp.path().join("priced");
    render(&pr, &[]);
    edit_pool(&pr, "  maxUnavailable: 2\n");
    let o = plan(&base, &pr, &fleet(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// F7, the fleet's pool as the stand-in: the base tree holds no pool file;
/// the PR adds one. Compared with the cluster's as far as the PR gives it
/// (the cluster's `configuration`, which the MCO sets, is not the PR's).
#[test]
fn a_pool_added_over_the_fleet_s_is_compared_with_it() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &[]);
    drop_pool(&base);
    // The example fleet with its pool as the cluster holds it.
    let cluster = tmp.path().join("fleet.json");
    let mut f: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fleet()).unwrap()).unwrap();
    let items = f["items"].as_array_mut().unwrap();
    let pool = items
        .iter_mut()
        .find(|i| i["kind"] == "MachineConfigPool")
        .unwrap();
    pool["spec"]["configuration"] = serde_json::json!({ "name": "rendered-worker-gpu-1" });
    pool["spec"]["osImageStream"] = serde_json::json!({ "name": "rhel-9" });
    std::fs::write(&cluster, f.to_string()).unwrap();
    let o = plan(&base, &pr, &cluster, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    edit_pool(&pr, "  osImageStream:\n    name: rhel-10\n");
    refused(
        &plan(&base, &pr, &cluster, &[]),
        &["spec.osImageStream changes from the fleet's MachineConfigPool ({\"name\":\"rhel-9\"})"],
    );
    // Without the cluster's pool: against none.
    let bare = tmp.path().join("nodes.json");
    f["items"]
        .as_array_mut()
        .unwrap()
        .retain(|i| i["kind"] != "MachineConfigPool");
    std::fs::write(&bare, f.to_string()).unwrap();
    refused(&plan(&base, &pr, &bare, &[]), &["(not given)"]);
}

/// A MachineConfig of role `{tag}` of `files` files, each 60
/// directories deep in a directory of its own (about 61 directories a file).
fn deep_machineconfig(tag: &str, files: usize) -> String {
    let deep: String = (0..60).map(|i| format!("/{i}")).collect();
    let files: Vec<serde_json::Value> = (0..files)
        .map(|j| serde_json::json!({"path": format!("/etc/{tag}/{j}{deep}/f"), "contents": {"source": "data:,"}}))
        .collect();
    serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": format!("60-{tag}"), "labels": {"machineconfiguration.openshift.io/role": tag}},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": files}}}
    })
    .to_string()
}

/// A MachineConfigPool `name` taking worker's MachineConfigs and role `{tag}`'s.
fn layout_pool(name: &str, tag: &str) -> String {
    format!(
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  \
         name: {name}\nspec:\n  machineConfigSelector:\n    matchExpressions:\n    - key: \
         machineconfiguration.openshift.io/role\n      operator: In\n      values: [worker, \
         {tag}]\n  nodeSelector:\n    matchLabels:\n      \
         example.com/{name}: \"\"\n"
    )
}

/// Review 44 r44b F1: each pool taking other MachineConfigs is a layout of
/// its own on disk. Six pools of six MachineConfigs of 9,000 directories
/// each (54,000, each layout within its own bound) are refused before any
/// is laid out; ten pools taking the same one are one layout, not refused.
#[test]
fn pools_laying_out_more_than_a_side_s_directories_are_refused() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &[]);
    for i in 0..6 {
        let tag = format!("l{i}");
        add(
            &pr,
            &format!("mc-{tag}.yaml"),
            &deep_machineconfig(&tag, 148),
        );
        add(
            &pr,
            &format!("pool-{tag}.yaml"),
            &layout_pool(&format!("p{i}"), &tag),
        );
    }
    refused(
        &plan(&base, &pr, &fleet(), &[]),
        &["the 50000 files and directories plan lays out for one side"],
    );

    let shared = tmp.path().join("shared");
    render(&shared, &[]);
    add(&shared, "mc-l0.yaml", &deep_machineconfig("l0", 148));
    for i in 0..10 {
        add(
            &shared,
            &format!("pool-p{i}.yaml"),
            &layout_pool(&format!("p{i}"), "l0"),
        );
    }
    let o = plan(&base, &shared, &fleet(), &[]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
}
