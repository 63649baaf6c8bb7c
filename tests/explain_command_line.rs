//! Issue 33 item 6: the preflight judges the whole command line kubelet
//! gets, not only our additions. On 4.19+ every worker template ends its
//! `--node-labels=` in `${CUSTOM_KUBELET_LABELS}`, read from
//! `/etc/kubernetes/kubelet-env`; a site MachineConfig that sets it to a
//! label kubelet refuses makes kubelet exit at every start. `explain`
//! exits 1 on it, as `validate` judges the same words, on MachineConfigs
//! (the MCO's own 4.19 template) and on a node tree.

use crate::support::{mco, run_cli, scratch_dir, stderr, write};

use kubelet_labeler::cli::render::encoding::percent_encode;
use kubelet_labeler::cli::render::machineconfig::to_yaml;
use run_cli::{cli, json_of, machineconfig_example as example};
use serde_json::json;

const REFUSED: &str = "node-role.kubernetes.io/gpu=";

/// The site's MachineConfig setting `CUSTOM_KUBELET_LABELS`.
fn kubelet_env(labels: &str) -> serde_json::Value {
    let text = format!("CUSTOM_KUBELET_LABELS={labels}\n");
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": "50-worker-gpu-kubelet-env",
            "labels": {"machineconfiguration.openshift.io/role": "worker-gpu"}},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": [
            {"path": "/etc/kubernetes/kubelet-env", "mode": 420,
             "contents": {"source": format!("data:,{}", percent_encode(text.as_bytes()))}}]}}}
    })
}

#[test]
fn a_refused_label_the_unit_itself_expands_exits_1_as_validate_says() {
    let Some(dir) = mco::require_fixtures() else {
        return;
    };
    let (_, unit) = mco::kubelet_units(&dir)
        .into_iter()
        .find(|(n, _)| n.starts_with("release-4.19__templates__worker") && n.contains("_base"))
        .expect("4.19 worker template");
    assert!(unit.contains("${CUSTOM_KUBELET_LABELS}"));
    let scratch = scratch_dir();
    let path = |name: &str| scratch.path().join(name).to_str().unwrap().to_string();
    std::fs::write(
        path("kubelet.yaml"),
        to_yaml(&mco::mco_machineconfig(&unit)).unwrap(),
    )
    .unwrap();
    let wrapper = example("50-worker-gpu-kubelet-labeler-wrapper.yaml");
    let labels = example("50-worker-gpu-kubelet-labeler-labels.yaml");
    for (custom, refused) in [(REFUSED, true), ("example.com/site=a", false)] {
        std::fs::write(path("env.yaml"), to_yaml(&kubelet_env(custom)).unwrap()).unwrap();
        let out = cli(&[
            "explain",
            "--json",
            "--machineconfig",
            &path("kubelet.yaml"),
            "--machineconfig",
            &path("env.yaml"),
            "--machineconfig",
            wrapper.to_str().unwrap(),
            "--machineconfig",
            labels.to_str().unwrap(),
        ]);
        let e = json_of(&out);
        assert_eq!(
            out.status.code(),
            Some(if refused { 1 } else { 0 }),
            "{custom}: {}",
            stderr(&out)
        );
        // `validate` on the very words explain says kubelet gets.
        let argv: Vec<String> = e["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_string())
            .collect();
        assert!(argv.iter().any(|w| w.contains(custom)), "{argv:?}");
        let mut args = vec!["validate", "--profile", "openshift", "--"];
        args.extend(argv.iter().map(String::as_str));
        let v = cli(&args);
        assert_eq!(v.status.success(), !refused, "{}", stderr(&v));
        if refused {
            let said = e["errors"].to_string();
            assert!(
                said.contains("kubelet exits at every start on this command line")
                    && said.contains("node-role.kubernetes.io/gpu")
                    && said.contains("CUSTOM_KUBELET_LABELS"),
                "{said}"
            );
        }
    }
}

/// The same on a node's tree (`--root`), without the wrapper installed:
/// kubelet's own command line still decides whether it starts.
#[test]
fn a_node_tree_whose_own_labels_kubelet_refuses_exits_1() {
    let dir = scratch_dir();
    let root = dir.path();
    write(
        &root.join("etc/systemd/system/kubelet.service"),
        "[Service]\nEnvironmentFile=-/etc/kubernetes/kubelet-env\n\
         ExecStart=/usr/bin/kubelet --node-labels=node-role.kubernetes.io/worker,${CUSTOM_KUBELET_LABELS}\n",
    );
    write(&root.join("usr/bin/kubelet"), "#!/bin/sh\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        root.join("usr/bin/kubelet"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let explain = || {
        cli(&[
            "explain",
            "--profile",
            "openshift",
            "--root",
            root.to_str().unwrap(),
        ])
    };
    write(
        &root.join("etc/kubernetes/kubelet-env"),
        "CUSTOM_KUBELET_LABELS=example.com/site=a\n",
    );
    let o = explain();
    assert!(o.status.success(), "{}", stderr(&o));
    write(
        &root.join("etc/kubernetes/kubelet-env"),
        &format!("CUSTOM_KUBELET_LABELS={REFUSED}\n"),
    );
    let o = explain();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("kubelet exits at every start on this command line")
            && err.contains("node-role.kubernetes.io/gpu"),
        "{err}"
    );
}
