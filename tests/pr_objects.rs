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

/// Review 23 r23b F2: a copy of the labels MachineConfig for another role
/// (or none) replaced the pool's own under `oc apply -R` and Argo CD (the
/// last applied wins; a real API server showed the labels gone), while
/// plan compared names within one pool's configs only and said "0 nodes
/// change". One identity over the whole render, of every kind: an object
/// of one kind, group and name given twice is refused, whatever pool or
/// role, alike or not.
#[test]
fn an_object_given_twice_anywhere_in_a_render_is_refused() {
    let motd = "    storage:\n      files:\n      - path: /etc/motd\n        mode: 420\n        \
                contents:\n          source: data:,hi\n";
    let labels = "50-worker-gpu-kubelet-labeler-labels";
    let infra = machineconfig(V1, labels, "infra", motd);
    let no_role = infra.replace(
        "  labels:\n    machineconfiguration.openshift.io/role: infra\n",
        "",
    );
    assert!(!no_role.contains("role"), "{no_role}");
    for (what, copy) in [("another role", &infra), ("no role", &no_role)] {
        let o = plan_with("zz-motd.yaml", copy);
        refused(
            &o,
            &[
                &format!(
                    "zz-motd.yaml: MachineConfig (machineconfiguration.openshift.io) \"{labels}\" is given twice"
                ),
                "give it once",
            ],
        );
        assert!(stderr(&o).contains("whatever pool or role"), "{what}");
    }
    // Any kind, alike or not: a ConfigMap in one namespace, a pool.
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: a\n";
    refused(
        &plan_with("cm.yaml", &format!("{cm}---\n{cm}")),
        &["ConfigMap (v1) \"a/c\" is given twice"],
    );
    let pool = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\n\
                metadata:\n  name: worker-gpu\nspec:\n  machineConfigSelector:\n    \
                matchExpressions:\n    - key: machineconfiguration.openshift.io/role\n      \
                operator: In\n      values: [worker, worker-gpu]\n";
    refused(
        &plan_with("zz-pool.yaml", pool),
        &["MachineConfigPool (machineconfiguration.openshift.io) \"worker-gpu\" is given twice"],
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

/// Review 12 F16: both renders hold the same KubeletConfig, which selects
/// no pool; the pull request labels the GPU pool as its selector asks.
/// The cluster then renders its `99-worker-gpu-generated-kubelet` (every
/// GPU node reboots and registers with its NoExecute taint); plan said "0
/// reboot" and no such taint. Taking the label away is the same change
/// back; the same labels on both sides plan as before.
#[test]
fn a_pool_label_change_under_an_unchanged_kubeletconfig_is_refused() {
    let kc = format!(
        "apiVersion: {V1}\nkind: KubeletConfig\nmetadata:\n  name: gpu-taints\nspec:\n  \
         machineConfigPoolSelector:\n    matchLabels:\n      custom-kubelet: gpu-taints\n  \
         kubeletConfig:\n    registerWithTaints:\n    - key: example.com/gpu\n      \
         value: \"true\"\n      effect: NoExecute\n"
    );
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    let label_pool = |dir: &Path| {
        let pool = dir.join("machineconfigpool-worker-gpu.yaml");
        let text = std::fs::read_to_string(&pool).unwrap();
        let labelled = text.replacen(
            "  name: worker-gpu\n",
            "  name: worker-gpu\n  labels:\n    custom-kubelet: gpu-taints\n",
            1,
        );
        assert_ne!(text, labelled);
        std::fs::write(&pool, labelled).unwrap();
    };
    for dir in [&base, &pr] {
        render(dir, &[]);
        add(dir, "kubeletconfig.yaml", &kc);
    }
    label_pool(&pr);
    let fleet = repo().join("examples/fleet/fleet.json");
    let o = plan(&base, &pr, &fleet, &[]);
    refused(
        &o,
        &[
            "KubeletConfig \"gpu-taints\" selects other pools",
            "pools gaining it: worker-gpu; losing it: none",
        ],
    );
    let o = plan(&pr, &base, &fleet, &[]);
    refused(&o, &["pools gaining it: none; losing it: worker-gpu"]);
    for same in [&base, &pr] {
        let o = plan(same, same, &fleet, &[]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    // The cluster's KubeletConfig, in neither render: given with the
    // fleet, judged the same; not given, the plan says what it could not
    // judge.
    let (base, pr) = (tmp.path().join("base2"), tmp.path().join("pr2"));
    render(&base, &[]);
    render(&pr, &[]);
    label_pool(&pr);
    let cluster = tmp.path().join("kubeletconfigs.yaml");
    std::fs::write(&cluster, &kc).unwrap();
    let o = plan(&base, &pr, &fleet, &["--fleet", cluster.to_str().unwrap()]);
    refused(&o, &["pools gaining it: worker-gpu"]);
    let o = plan(&base, &pr, &fleet, &["--format", "json"]);
    let p = crate::plan::json(&o);
    assert!(
        p["not_judged"].to_string().contains(
            "pool labels change (worker-gpu) and no KubeletConfig or ContainerRuntimeConfig"
        ),
        "{p:#}"
    );
}

/// Review 12 F9: a MachineConfig writing kubelet's config (named after the
/// MCO's generated ones, so the cluster serves it): the node registers
/// with its registerWithTaints, which plan does not render; refused as a
/// KubeletConfig is. (The `--config-dir` drop-in of 4.21, against the MCO
/// and explain: `plan_cluster_unit`.)
#[test]
fn a_machineconfig_writing_kubelet_s_config_is_refused() {
    let file = "    storage:\n      files:\n      - path: /etc/kubernetes/kubelet.conf\n        \
                mode: 420\n        contents:\n          source: \"data:,registerWithTaints%3A%20\
                %5B%7Bkey%3A%20example.com%2Fgpu%2C%20effect%3A%20NoExecute%7D%5D%0A\"\n";
    let mc = machineconfig(V1, "99-worker-gpu-zz-kubelet", "worker-gpu", file);
    let o = plan_with("kubelet-conf.yaml", &mc);
    refused(
        &o,
        &[
            "pool worker-gpu: /etc/kubernetes/kubelet.conf changes",
            "set kubelet's config with a KubeletConfig",
        ],
    );
}

/// Review 17 r17b F2: plan passed over every kind it did not know. A core
/// Node manifest (applied, it replaced the Node's taints and added another
/// pool's label), an MTU migration (every node reboots) and an image policy
/// (rendered into every pool) were priced as nothing. Now a Node is refused
/// outright, any other kind plan does not price is refused when it changes,
/// and the kinds that never reach a node pass.
#[test]
fn kinds_plan_cannot_price_are_refused_when_they_change() {
    let node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-a100-01\n  labels:\n    \
                node.kubernetes.io/worker-infra: \"\"\nspec: {}\n";
    refused(
        &plan_with("node.yaml", node),
        &[
            "a Node manifest (\"gpu-a100-01\")",
            "remove it from the render",
        ],
    );
    let network = "apiVersion: operator.openshift.io/v1\nkind: Network\nmetadata:\n  name: cluster\n\
                   spec:\n  migration:\n    mtu:\n      network: {from: 1400, to: 9000}\n      \
                   machine: {to: 9100}\n";
    let policy = "apiVersion: config.openshift.io/v1\nkind: ClusterImagePolicy\nmetadata:\n  \
                  name: p\nspec:\n  scopes: [quay.io/a]\n";
    let flux = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  \
                name: apps\nspec:\n  path: ./apps\n";
    for (text, says) in [
        (
            network,
            "Network (operator.openshift.io) \"cluster\" is added",
        ),
        (
            policy,
            "ClusterImagePolicy (config.openshift.io) \"p\" is added",
        ),
        (
            flux,
            "Kustomization (kustomize.toolkit.fluxcd.io) \"apps\" is added",
        ),
    ] {
        refused(
            &plan_with("extra.yaml", text),
            &[says, "plan cannot price a change of this kind"],
        );
    }
    // What never reaches a node passes.
    let neutral = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n---\n\
                   apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: s\n  \
                   namespace: team\n";
    let o = plan_with("neutral.yaml", neutral);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // Review 20 r20b F9: unless it decides which pods a namespace admits
    // (Pod Security's `restricted` refused nfd-worker's pods) or where
    // they run.
    for key in [
        "labels:\n    pod-security.kubernetes.io/enforce: restricted",
        "annotations:\n    openshift.io/node-selector: a=b",
    ] {
        let ns = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: nfd\n  {key}\n");
        refused(
            &plan_with("ns.yaml", &ns),
            &["Namespace (v1) \"nfd\" is added"],
        );
    }
}

/// Review 19 r19b F7: RBAC decides who may write what reaches nodes:
/// cluster-admin bound to `system:nodes` let every node's credential write
/// MachineConfigs (the real API server said yes), priced as nothing.
#[test]
fn an_rbac_change_is_refused_as_unpriced() {
    let binding = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n\
                   metadata:\n  name: node-helper\nroleRef:\n  apiGroup: \
                   rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\n\
                   subjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: Group\n  \
                   name: system:nodes\n";
    refused(
        &plan_with("rbac.yaml", binding),
        &[
            "ClusterRoleBinding (rbac.authorization.k8s.io) \"node-helper\" is added",
            "plan cannot price a change of this kind",
        ],
    );
}

/// Review 19 r19b F4, F5: which copy of an object given twice the cluster
/// keeps is the applier's order, not plan's. A cluster-scoped object given
/// with and without a namespace is one object to the API server (a swap of
/// the two files changed the Network's MTU migration, priced as nothing);
/// a KubeletConfig given twice (plan kept the copy it read last, equal to
/// the base's, while the applier kept the other) is refused, on either side.
#[test]
fn an_object_given_twice_is_refused_however_spelt() {
    let network = |ns: &str, to: u32| {
        format!(
            "apiVersion: operator.openshift.io/v1\nkind: Network\nmetadata:\n  name: cluster\n\
             {ns}spec:\n  migration:\n    mtu:\n      network: {{from: 1400, to: {to}}}\n"
        )
    };
    let (a, b) = (network("", 1400), network("  namespace: default\n", 9000));
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &[]);
    add(&base, "10-network.yaml", &a);
    add(&base, "20-network.yaml", &b);
    add(&pr, "10-network.yaml", &b);
    add(&pr, "20-network.yaml", &a);
    let fleet = repo().join("examples/fleet/fleet.json");
    refused(
        &plan(&base, &pr, &fleet, &[]),
        &[
            "base: Network (operator.openshift.io) \"cluster\" (given in more than one namespace, or with and without one) is given twice",
        ],
    );
    // Review 20 r20b F3: in two namespaces, a kind not known to be
    // namespaced is the same (operator.openshift.io's Network is
    // cluster-scoped); a known namespaced kind is two objects.
    let in_ns = |ns: &str, to: u32| network(&format!("  namespace: {ns}\n"), to);
    refused(
        &plan_with(
            "network.yaml",
            &format!("{}---\n{}", in_ns("a", 1400), in_ns("b", 9000)),
        ),
        &["Network (operator.openshift.io) \"cluster\" (given in more than one namespace"],
    );
    let cm = |ns: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: {ns}\n")
    };
    let o = plan_with("cm.yaml", &format!("{}---\n{}", cm("a"), cm("b")));
    refused(&o, &["ConfigMap (v1) \"a/c\" is added"]);
    // Review 20 r20b F4: a Tuned moved into the Node Tuning Operator's
    // namespace takes effect there (kernel arguments, a reboot): another
    // object, not the same spec unchanged.
    let tuned = |ns: &str| {
        format!(
            "apiVersion: tuned.openshift.io/v1\nkind: Tuned\nmetadata:\n  name: t\n  \
             namespace: {ns}\nspec:\n  profile: [{{name: t, data: \"[bootloader]\\ncmdline=nosmt\"}}]\n"
        )
    };
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &[]);
    add(&base, "tuned.yaml", &tuned("team"));
    add(
        &pr,
        "tuned.yaml",
        &tuned("openshift-cluster-node-tuning-operator"),
    );
    refused(
        &plan(&base, &pr, &fleet, &[]),
        &["Tuned \"openshift-cluster-node-tuning-operator/t\" is added"],
    );
    // Another version of the group is the same object.
    let beta =
        network("", 9000).replace("operator.openshift.io/v1", "operator.openshift.io/v1beta1");
    refused(
        &plan_with("network.yaml", &format!("{a}---\n{beta}")),
        &["Network (operator.openshift.io) \"cluster\" is given twice"],
    );

    let kc = |max: u32| {
        format!(
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: KubeletConfig\nmetadata:\n  \
             name: gpu-kubelet\nspec:\n  machineConfigPoolSelector:\n    matchLabels:\n      \
             pools.operator.machineconfiguration.openshift.io/worker-gpu: \"\"\n  \
             kubeletConfig:\n    maxPods: {max}\n"
        )
    };
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &[]);
    add(&base, "kc.yaml", &kc(250));
    // Read first, so that plan's last copy is the base's.
    add(&pr, "a-kc.yaml", &kc(500));
    add(&pr, "kc.yaml", &kc(250));
    refused(
        &plan(&base, &pr, &fleet, &[]),
        &[
            "pr/kc.yaml: KubeletConfig (machineconfiguration.openshift.io) \"gpu-kubelet\" is given twice",
        ],
    );
}

/// The same kind unchanged on both sides is no change.
#[test]
fn an_unchanged_object_plan_cannot_price_passes() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &["--taint", "example.com/gpu=true:NoSchedule"]);
    let cm =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: team\ndata: {a: b}\n";
    add(&base, "cm.yaml", cm);
    add(&pr, "cm.yaml", cm);
    let o = plan(
        &base,
        &pr,
        &repo().join("examples/fleet/fleet.json"),
        &["--format", "json"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    std::fs::write(pr.join("cm.yaml"), cm.replace("a: b", "a: c")).unwrap();
    let o = plan(
        &base,
        &pr,
        &repo().join("examples/fleet/fleet.json"),
        &["--format", "json"],
    );
    refused(&o, &["ConfigMap (v1) \"team/c\" changes"]);
}

/// Review 18 r18b F1, F3: what Argo CD or `kubectl apply -k` builds beyond
/// the files plan reads. A kustomization away from the MachineConfigs (it
/// applied a Node from a `.txt` file, or patched the pools' configs into
/// every worker's) is checked as the one beside them, and a subdirectory
/// left out of its parent's resources is refused; a Helm chart or Jsonnet
/// in the tree is refused. A root listing the pool's directory passes.
#[test]
fn every_kustomization_and_builder_of_the_tree_is_judged() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    for (root, extra) in [
        (&base, &[][..]),
        (&pr, &["--taint", "example.com/gpu=true:NoSchedule"][..]),
    ] {
        render(&root.join("worker-gpu"), extra);
        std::fs::write(root.join("kustomization.yaml"), "resources: [worker-gpu]\n").unwrap();
    }
    let fleet = repo().join("examples/fleet/fleet.json");
    let o = plan(&base, &pr, &fleet, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    // An app directory applying a Node out of a file plan does not read.
    let extra = pr.join("extra");
    std::fs::create_dir(&extra).unwrap();
    std::fs::write(extra.join("kustomization.yaml"), "resources: [node.txt]\n").unwrap();
    std::fs::write(
        extra.join("node.txt"),
        "apiVersion: v1\nkind: Node\nmetadata: {name: gpu-a100-01}\nspec: {}\n",
    )
    .unwrap();
    refused(
        &plan(&base, &pr, &fleet, &[]),
        &[
            "extra/kustomization.yaml",
            "node.txt",
            "not a manifest file of its directory",
        ],
    );
    // A subdirectory its parent does not list: read here, not applied.
    std::fs::write(extra.join("kustomization.yaml"), "resources: [ns.yaml]\n").unwrap();
    std::fs::remove_file(extra.join("node.txt")).unwrap();
    std::fs::write(
        extra.join("ns.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n",
    )
    .unwrap();
    refused(
        &plan(&base, &pr, &fleet, &[]),
        &["directory extra left out of its resources"],
    );
    std::fs::write(
        pr.join("kustomization.yaml"),
        "resources: [worker-gpu, extra]\n",
    )
    .unwrap();
    let o = plan(&base, &pr, &fleet, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    std::fs::remove_dir_all(&extra).unwrap();
    std::fs::write(pr.join("kustomization.yaml"), "resources: [worker-gpu]\n").unwrap();
    // A patch in the root's kustomization.
    std::fs::write(
        pr.join("kustomization.yaml"),
        "resources: [worker-gpu]\npatches:\n- target: {kind: MachineConfig}\n  patch: |\n    \
         - op: replace\n      path: /metadata/labels/machineconfiguration.openshift.io~1role\n      \
         value: worker\n",
    )
    .unwrap();
    refused(
        &plan(&base, &pr, &fleet, &[]),
        &["kustomization.yaml", "patches"],
    );
    std::fs::write(pr.join("kustomization.yaml"), "resources: [worker-gpu]\n").unwrap();
    for (file, says) in [("Chart.yaml", "a Helm chart"), ("x.jsonnet", "Jsonnet")] {
        std::fs::write(pr.join(file), "{}\n").unwrap();
        refused(&plan(&base, &pr, &fleet, &[]), &[file, says]);
        std::fs::remove_file(pr.join(file)).unwrap();
    }
}

/// Review 18 r18b F2, F4: an object is its kind, namespace and name (one
/// added in another namespace hid behind an unchanged one), and a `...List`
/// without items is an object, not a list.
#[test]
fn unpriced_objects_are_told_apart_by_namespace_and_lists_by_items() {
    let cm = |ns: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: user-ca-bundle\n  \
             namespace: {ns}\ndata: {{a: b}}\n"
        )
    };
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &["--taint", "example.com/gpu=true:NoSchedule"]);
    add(&base, "cm.yaml", &cm("team"));
    add(
        &pr,
        "cm.yaml",
        &format!("{}---\n{}", cm("team"), cm("openshift-config")),
    );
    let fleet = repo().join("examples/fleet/fleet.json");
    refused(
        &plan(&base, &pr, &fleet, &[]),
        &["ConfigMap (v1) \"openshift-config/user-ca-bundle\" is added"],
    );
    let list = "apiVersion: example.com/v1\nkind: PolicyList\nmetadata: {name: p}\nspec: {x: 1}\n";
    refused(
        &plan_with("list.yaml", list),
        &["PolicyList (example.com) \"p\" is added"],
    );
}

/// A KubeletConfig of the worker-gpu pool (`meta`: more lines of its
/// `metadata`), tainting its nodes at registration.
fn kubeletconfig(meta: &str) -> String {
    format!(
        "apiVersion: {V1}\nkind: KubeletConfig\nmetadata:\n  name: gpu-taints\n{meta}spec:\n  \
         machineConfigPoolSelector:\n    matchLabels:\n      \
         pools.operator.machineconfiguration.openshift.io/worker-gpu: \"\"\n  kubeletConfig:\n    \
         registerWithTaints:\n    - {{key: example.com/gpu-only, value: \"true\", effect: NoExecute}}\n"
    )
}

/// The base render and the pull request's (a new static taint), with
/// `before` and `after` written to `name` in each and listed; plan's
/// output with `extra`.
fn plan_between(name: &str, before: &str, after: &str, extra: &[&str]) -> std::process::Output {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &[]);
    render(&pr, &["--taint", "example.com/gpu=true:NoSchedule"]);
    if !before.is_empty() {
        add(&base, name, before);
    }
    if !after.is_empty() {
        add(&pr, name, after);
    }
    plan(&base, &pr, &repo().join("examples/fleet/fleet.json"), extra)
}

/// Review 21 r21b F1: the annotations that make kustomize or Argo CD
/// leave an object out were refused on a MachineConfig, pool or
/// MachineConfiguration only, and a KubeletConfig was compared by its
/// spec: one annotated `local-config` dropped out of the build (Argo CD's
/// prune deleted it: a reboot, its registration taint gone), planned as no
/// change; taking the annotation away applied it. Now every object plan
/// reads, of any kind, is refused so annotated, and one plan does not
/// render is compared whole (its labels and annotations too).
#[test]
fn an_object_of_any_kind_an_applier_leaves_out_is_refused_and_compared_whole() {
    let plain = kubeletconfig("");
    let local = kubeletconfig("  annotations:\n    config.kubernetes.io/local-config: \"true\"\n");
    let skip = kubeletconfig("  annotations:\n    argocd.argoproj.io/hook: Skip\n");
    let says = "KubeletConfig \"gpu-taints\" is annotated config.kubernetes.io/local-config";
    for extra in [&[][..], &["--prune"]] {
        refused(&plan_between("kc.yaml", &plain, &local, extra), &[says]);
    }
    refused(&plan_between("kc.yaml", &local, &plain, &[]), &[says]);
    refused(
        &plan_between("kc.yaml", &plain, &skip, &["--prune"]),
        &["KubeletConfig \"gpu-taints\" is annotated argocd.argoproj.io/hook"],
    );
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: team\n  \
              annotations:\n    helm.sh/hook: pre-install\n";
    refused(
        &plan_between("cm.yaml", cm, cm, &[]),
        &["ConfigMap \"c\" is annotated helm.sh/hook"],
    );
    // Its labels and other annotations are compared too.
    for meta in [
        "  labels:\n    team: gpu\n",
        "  annotations:\n    example.com/owner: gpu\n",
    ] {
        refused(
            &plan_between("kc.yaml", &plain, &kubeletconfig(meta), &[]),
            &["KubeletConfig \"gpu-taints\" changes"],
        );
    }
    // Unchanged, or a description only: no change.
    let described = kubeletconfig("  annotations:\n    openshift.io/description: GPU taints\n");
    for after in [&plain, &described] {
        let o = plan_between("kc.yaml", &plain, after, &[]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    }
}

/// Review 21 r21b F2: KubeletConfigs (and the other kinds the MCO renders
/// from) were keyed by namespace, but they are cluster-scoped: one in
/// namespaces `a` and `b` (or `a` and none) was two objects to plan and
/// one to the API server, the last applied; a rename that changed which
/// one is applied last was planned as no change. Now one identity for
/// every kind: a cluster-scoped kind in two namespaces, or with and
/// without one, is given twice; moved to another namespace, unchanged, it
/// is the same object.
#[test]
fn a_cluster_scoped_object_in_two_namespaces_is_given_twice() {
    let in_ns = |ns: &str| kubeletconfig(&format!("  namespace: {ns}\n"));
    let other = |ns: &str| in_ns(ns).replace("example.com/gpu-only", "example.com/other");
    for (a, b) in [(in_ns("a"), other("b")), (kubeletconfig(""), other("b"))] {
        let two = format!("{a}---\n{b}");
        refused(
            &plan_between("kc.yaml", &two, &two, &[]),
            &[
                "KubeletConfig (machineconfiguration.openshift.io) \"gpu-taints\" (given in \
                 more than one namespace, or with and without one) is given twice",
            ],
        );
    }
    // One object: its namespace spelt otherwise is no change.
    let o = plan_between("kc.yaml", &in_ns("a"), &in_ns("b"), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = plan_between("kc.yaml", &kubeletconfig(""), &in_ns("b"), &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// Review 21 r21b F3: ServiceAccount passed by its kind alone
/// (`automountServiceAccountToken: false`, or its pull secrets taken
/// away: nfd-worker's pods get no API token or cannot pull their image, as
/// the real API server showed), and removing NFD's Namespace under
/// `--prune` (every object in it deleted) was never seen. Now a Namespace
/// or ServiceAccount counts unless it is only there: added with nothing
/// but its name, or removed from a tree applied without prune.
#[test]
fn a_serviceaccount_or_namespace_change_is_priced() {
    let sa = |rest: &str| {
        format!(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: nfd-worker\n  \
             namespace: node-feature-discovery\n{rest}"
        )
    };
    let secrets = sa("imagePullSecrets:\n- name: registry-creds\n");
    for after in [sa("automountServiceAccountToken: false\n"), sa("")] {
        refused(
            &plan_between("sa.yaml", &secrets, &after, &[]),
            &[
                "ServiceAccount (v1) \"node-feature-discovery/nfd-worker\" changes",
                "token automount and pull secrets",
            ],
        );
    }
    refused(
        &plan_between("sa.yaml", "", &secrets, &[]),
        &["ServiceAccount (v1) \"node-feature-discovery/nfd-worker\" is added"],
    );
    let ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: node-feature-discovery\n";
    refused(
        &plan_between("ns.yaml", ns, "", &["--prune"]),
        &["Namespace (v1) \"node-feature-discovery\" is removed (and --prune deletes it)"],
    );
    refused(
        &plan_between("sa.yaml", &sa(""), "", &["--prune"]),
        &["ServiceAccount (v1) \"node-feature-discovery/nfd-worker\" is removed"],
    );
    // Review 22 r22b F1: written without its namespace on one side, it
    // may be the same object (the applier's default namespace): refused,
    // either way round (it read as one removed and another added bare).
    let bare_sa = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: nfd-worker\n";
    for (before, after) in [(&secrets[..], bare_sa), (bare_sa, &secrets[..])] {
        refused(
            &plan_between("sa.yaml", before, after, &[]),
            &["ServiceAccount (v1) \"nfd-worker\" is given without a namespace in"],
        );
    }
    // Only there: added bare, removed without prune, described.
    for (before, after, extra) in [
        ("", ns, &[][..]),
        (ns, "", &[]),
        (
            ns,
            &format!("{ns}  annotations:\n    openshift.io/display-name: NFD\n")[..],
            &["--prune"],
        ),
        (&secrets[..], "", &[]),
    ] {
        let o = plan_between("x.yaml", before, after, extra);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{before}->{after}: {}",
            stderr(&o)
        );
    }
}
