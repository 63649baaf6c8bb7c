//! A pull request's objects that the cluster reads otherwise than a layout
//! of them can (review 11): `plan` refuses each with exit 2, naming the
//! object and the fix, where it showed a taint the nodes never get.
//! Each case: the labels MachineConfig re-rendered with a new taint, plus
//! one more file in the pull request's directory.

use crate::plan::{plan, render};
use crate::support::{repo, scratch_dir, stderr, stdout};

use std::path::Path;

const V1: &str = "machineconfiguration.openshift.io/v1";

/// The base render and the pull request's (a new static taint), with
/// `extra` written to `name` in the pull request's directory and listed in
/// its kustomization; plan's output.
fn plan_with(name: &str, extra: &str) -> std::process::Output {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &["--taint", "example.com/gpu=true:NoSchedule"]);
    add(&pr, name, extra);
    plan(
        &base,
        &pr,
        &repo().join("examples/fleet/fleet.json"),
        &["--format", "json"],
    )
}

fn add(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
    crate::support::relist_kustomization(dir, &[name], &[]);
}

fn machineconfig(api: &str, name: &str, role: &str, config: &str) -> String {
    format!(
        "apiVersion: {api}\nkind: MachineConfig\nmetadata:\n  name: {name}\n  labels:\n    \
         machineconfiguration.openshift.io/role: {role}\nspec:\n  config:\n    ignition:\n      \
         version: 3.4.0\n{config}"
    )
}

fn refused(o: &std::process::Output, says: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{}\n{err}", stdout(o));
    for s in says {
        assert!(err.contains(s), "{s:?} not in: {err}");
    }
}

/// The MCO's template kubelet.service (`01-worker-kubelet`) merges after a
/// worker config named before it, and wins: plan showed the unit of the
/// pull request's `00-` config, which read a file with the taint.
#[test]
fn a_worker_config_named_before_the_templates_may_not_write_kubelet_s_unit() {
    let unit = "    systemd:\n      units:\n      - name: kubelet.service\n        contents: |\n          \
                [Service]\n          EnvironmentFile=/etc/kubernetes/gpu-taints.env\n          \
                ExecStart=/usr/bin/kubelet\n";
    let o = plan_with(
        "00-kubelet.yaml",
        &machineconfig(V1, "00-kubelet", "worker", unit),
    );
    refused(&o, &["\"00-kubelet\"", "01-worker-kubelet"]);
}

/// kubectl keeps one object per name (the last applied, whole): plan merged
/// both, and showed the first one's taint.
#[test]
fn a_machineconfig_given_twice_is_refused() {
    let o = plan_with(
        "zz-dup.yaml",
        &machineconfig(V1, "50-worker-gpu-kubelet-labeler-labels", "worker-gpu", ""),
    );
    refused(
        &o,
        &["\"50-worker-gpu-kubelet-labeler-labels\" is given twice"],
    );
}

/// The API server refuses these objects: `oc apply` leaves the cluster's.
#[test]
fn objects_the_api_server_refuses_are_refused() {
    let o = plan_with(
        "60-a.yaml",
        &machineconfig(
            "machineconfiguration.openshift.io/v1beta1",
            "60-a",
            "worker-gpu",
            "",
        ),
    );
    refused(&o, &["apiVersion", "v1beta1"]);
    let o = plan_with(
        "60-b.yaml",
        &machineconfig(V1, "60-Upper", "worker-gpu", ""),
    );
    refused(&o, &["metadata.name", "60-Upper"]);
}

/// Ignition writes /run before the switch to the node's root, whose /run
/// covers it: kubelet never reads a drop-in there at registration.
#[test]
fn a_file_under_run_is_refused() {
    let files = "    storage:\n      files:\n      - path: \
                 /run/systemd/system/kubelet.service.d/95-gpu-taint.conf\n        mode: 420\n        \
                 contents:\n          source: data:,x\n";
    let o = plan_with(
        "60-run.yaml",
        &machineconfig(V1, "60-run", "worker-gpu", files),
    );
    refused(
        &o,
        &["/run/systemd/system/kubelet.service.d/95-gpu-taint.conf"],
    );
}

/// A KubeletConfig's `registerWithTaints` taints the pool's nodes: plan
/// does not render KubeletConfigs, and said "0 nodes change".
#[test]
fn a_kubeletconfig_change_is_refused_not_skipped() {
    let kc = format!(
        "apiVersion: {V1}\nkind: KubeletConfig\nmetadata:\n  name: gpu-taints\nspec:\n  \
         machineConfigPoolSelector:\n    matchLabels:\n      pools.operator.machineconfiguration.openshift.io/worker-gpu: \"\"\n  \
         kubeletConfig:\n    registerWithTaints:\n    - key: example.com/dedicated\n      \
         value: gpu\n      effect: NoExecute\n"
    );
    let o = plan_with("kubeletconfig.yaml", &kc);
    refused(&o, &["KubeletConfig \"gpu-taints\" is added"]);
}

/// kustomize refuses a build that lists one file twice: nothing applies.
#[test]
fn a_kustomization_listing_a_file_twice_is_refused() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &["--taint", "example.com/gpu=true:NoSchedule"]);
    crate::support::relist_kustomization(&pr, &["50-worker-gpu-kubelet-labeler-labels.yaml"], &[]);
    let o = plan(&base, &pr, &repo().join("examples/fleet/fleet.json"), &[]);
    refused(&o, &["listed twice"]);
}
