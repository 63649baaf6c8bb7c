//! Renders of two releases on one pool's nodes: a custom pool's nodes take
//! the worker role's MachineConfigs and the pool's, and the MCO gives them
//! one file per path. An earlier release wrote the role's env drop-in at
//! the path a pool's goes to; today's pool render replaces it, and every
//! node of the pool loses the role's taints. `explain --machineconfig` and
//! `render` into the shared directory refuse that, naming both
//! MachineConfigs; the MCO oracle shows what the node receives.

use crate::iso_fleet_cli;
use crate::support::{bin, mco, run_cli, scratch_dir, stderr};

use std::path::Path;
use std::process::Output;

use kubelet_labeler::cli::render::encoding::percent_encode;
use kubelet_labeler::cli::render::machineconfig::to_yaml;
use serde_json::{Value, json};

const ENV_PATH: &str = "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf";

/// The worker role's env drop-in as releases before the role layer wrote
/// it (`render machineconfig --role worker` of commit de7ea69): at the
/// pool's path, in the pool's variables, no version in its first line; the
/// NVIDIA taint rule in the compact form of that release.
fn earlier_role_dropin() -> String {
    "# kubelet-labeler: labels and taints this node registers with. kubelet\n\
     # applies them only when it creates the Node object (first registration).\n\
     [Service]\n\
     Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=example.com/role=worker:NoSchedule\"\n\
     # Node rules (NodeFeatureRule), evaluated on this node's hardware at each\n\
     # kubelet start: gpu-taint/nvidia-gpu-taint\n\
     Environment=\"KUBELET_LABELER_NODE_RULES=KLR2,1,nvidia-gpu-taint,0,0,1,nvidia.com/gpu,true,NoSchedule\"\n"
        .into()
}

fn machineconfig(name: &str, labels: Value, files: &[(&str, &str)]) -> Value {
    let files: Vec<Value> = files
        .iter()
        .map(|(path, text)| {
            json!({"path": path, "mode": 420, "overwrite": true, "contents": {
                "source": format!("data:,{}", percent_encode(text.as_bytes()))}})
        })
        .collect();
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name, "labels": labels},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": files}}}
    })
}

/// The earlier release's `--role worker` labels MachineConfig, unmarked.
fn earlier_role() -> Value {
    machineconfig(
        "50-worker-kubelet-labeler-labels",
        json!({"machineconfiguration.openshift.io/role": "worker"}),
        &[(ENV_PATH, &earlier_role_dropin())],
    )
}

/// The worker pool's rendered config holding it (and a kubelet.service),
/// as `oc get mc rendered-worker-… -o yaml` prints it: no labels.
fn rendered_worker() -> Value {
    let mut mc = machineconfig(
        "rendered-worker-5d41402abc4b2a76",
        json!({}),
        &[(ENV_PATH, &earlier_role_dropin())],
    );
    mc["spec"]["config"]["systemd"] = json!({"units": [{"name": "kubelet.service",
        "enabled": true, "contents": "[Unit]\nDescription=Kubelet\n[Service]\n\
        ExecStart=/usr/bin/kubelet --node-labels=node-role.kubernetes.io/worker,node.openshift.io/os_id=rhcos\n"}]});
    mc
}

pub(crate) fn write_yaml(path: &Path, obj: &Value) {
    std::fs::write(path, to_yaml(obj).unwrap()).unwrap();
}

pub(crate) fn render_pool(out: &Path, force: bool) -> Output {
    let mut c = bin();
    c.args(["render", "machineconfig", "--pool", "worker-gpu"])
        .args(["--taint", "example.com/pool=gpu:NoSchedule", "--wrapper"])
        .arg(run_cli::stand_in_wrapper())
        .arg("--output-dir")
        .arg(out);
    if force {
        c.arg("--force");
    }
    c.output().unwrap()
}

fn explain(mcs: &[&Path]) -> (Output, Value) {
    let mut c = bin();
    c.args(["explain", "--json"]);
    for m in mcs {
        c.arg("--machineconfig").arg(m);
    }
    let o = c.output().unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    (o, v)
}

/// `explain --machineconfig rendered-worker.yaml workers/ gpu/`: the
/// pool's drop-in replaces the earlier role's; exit 1 naming both
/// MachineConfigs, the path and the page that says what to re-render.
/// Without the role's MachineConfigs, the rendered config is named.
#[test]
fn explain_refuses_a_pool_render_over_an_earlier_roles_dropin() {
    let dir = scratch_dir();
    let gpu = dir.path().join("gpu");
    let o = render_pool(&gpu, false);
    assert!(o.status.success(), "{}", stderr(&o));
    let workers = dir.path().join("workers");
    std::fs::create_dir(&workers).unwrap();
    write_yaml(
        &workers.join("50-worker-kubelet-labeler-labels.yaml"),
        &earlier_role(),
    );
    let rendered = dir.path().join("rendered-worker.yaml");
    write_yaml(&rendered, &rendered_worker());

    for (given, replaced) in [
        (
            vec![rendered.as_path(), &workers, &gpu],
            "50-worker-kubelet-labeler-labels",
        ),
        (
            vec![rendered.as_path(), &gpu],
            "rendered-worker-5d41402abc4b2a76",
        ),
    ] {
        let (o, e) = explain(&given);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        let named = format!(
            "MachineConfig \"50-worker-gpu-kubelet-labeler-labels\" (rendered for worker-gpu, node \
             format {}) replaces {ENV_PATH} of MachineConfig \"{replaced}\"",
            kubelet_labeler::node::contract::NODE_FORMAT
        );
        assert!(
            err.contains(&named) && err.contains("docs/upgrading.md"),
            "{err}"
        );
        assert!(
            e["errors"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m.as_str().unwrap().contains(&named)),
            "{e}"
        );
    }

    // The role's and the pool's renders of one release compose.
    let same = dir.path().join("same");
    let o = bin()
        .args(["render", "machineconfig", "--role", "worker", "--taint"])
        .args(["example.com/role=worker:NoSchedule", "--wrapper"])
        .arg(run_cli::stand_in_wrapper())
        .arg("--output-dir")
        .arg(&same)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = render_pool(&same, false);
    assert!(o.status.success(), "{}", stderr(&o));
    let (o, e) = explain(&[&rendered_worker_unit_only(dir.path()), &same]);
    assert!(o.status.success(), "{}: {e}", stderr(&o));
    let mut taints: Vec<String> = e["taints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    taints.sort();
    assert_eq!(
        taints,
        [
            "example.com/pool=gpu:NoSchedule",
            "example.com/role=worker:NoSchedule"
        ]
    );
}

/// A rendered worker config with kubelet.service only.
fn rendered_worker_unit_only(dir: &Path) -> std::path::PathBuf {
    let mut mc = rendered_worker();
    mc["spec"]["config"]["storage"] = json!({});
    let path = dir.join("rendered-worker-unit.yaml");
    write_yaml(&path, &mc);
    path
}

/// `render machineconfig --pool` into a directory it shares with the
/// earlier role's MachineConfig: refused, nothing written; `--force`
/// writes and warns. A `--role worker` render into a directory holding a
/// pool's earlier wrapper MachineConfig is refused the same way.
#[test]
fn render_refuses_to_compose_with_an_earlier_release_in_its_directory() {
    let dir = scratch_dir();
    let out = dir.path().join("gitops");
    std::fs::create_dir(&out).unwrap();
    write_yaml(
        &out.join("50-worker-kubelet-labeler-labels.yaml"),
        &earlier_role(),
    );
    let o = render_pool(&out, false);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("\"50-worker-gpu-kubelet-labeler-labels\"")
            && err.contains(&format!(
                "replaces {ENV_PATH} of MachineConfig \"50-worker-kubelet-labeler-labels\""
            ))
            && err.contains("docs/upgrading.md"),
        "{err}"
    );
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&out), ["50-worker-kubelet-labeler-labels.yaml"]);
    let o = render_pool(&out, true);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning (--force): MachineConfig"),
        "{}",
        stderr(&o)
    );

    // A pool's wrapper MachineConfig of an earlier release (its sync unit
    // unstamped) would replace the role's shared files.
    let pool_dir = dir.path().join("pool");
    std::fs::create_dir(&pool_dir).unwrap();
    write_yaml(
        &pool_dir.join("50-worker-gpu-kubelet-labeler-wrapper.yaml"),
        &machineconfig(
            "50-worker-gpu-kubelet-labeler-wrapper",
            json!({"machineconfiguration.openshift.io/role": "worker-gpu"}),
            &[(
                "/etc/systemd/system/kubelet-labeler-sync.service",
                "# kubelet-labeler 0.1.0: bring this Node's labels up to date\n[Service]\n",
            )],
        ),
    );
    let o = bin()
        .args(["render", "machineconfig", "--role", "worker", "--wrapper"])
        .arg(run_cli::stand_in_wrapper())
        .arg("--output-dir")
        .arg(&pool_dir)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("MachineConfig \"50-worker-gpu-kubelet-labeler-wrapper\" (role worker-gpu, an earlier release (its node format is not stamped)) replaces /etc/systemd/system/kubelet-labeler-sync.service of MachineConfig \"50-worker-kubelet-labeler-wrapper\""),
        "{err}"
    );
    assert_eq!(
        names(&pool_dir),
        ["50-worker-gpu-kubelet-labeler-wrapper.yaml"]
    );
}

/// What the refusal guards against, as the MCO merges: its own render and
/// Machine Config Server (the MCO oracle) give a node of the pool the
/// pool's env drop-in only; the earlier role's taints are on no file it
/// receives.
#[test]
fn the_mco_gives_the_pools_node_only_the_later_dropin() {
    let Some((oracle, mco_root)) = mco::oracle_as_root() else {
        return;
    };
    let dir = scratch_dir();
    let out = dir.path().join("gitops");
    let o = render_pool(&out, false);
    assert!(o.status.success(), "{}", stderr(&o));
    // The cluster-wide policy is not the pool's to serve.
    std::fs::remove_dir_all(out.join("cluster-wide")).unwrap();
    write_yaml(
        &out.join("50-worker-kubelet-labeler-labels.yaml"),
        &earlier_role(),
    );
    crate::support::relist_kustomization(&out, &["50-worker-kubelet-labeler-labels.yaml"], &[]);
    let work = dir.path().join("work");
    let o = mco::boot_render((&oracle, &mco_root), &out, "worker-gpu", &work);
    let report: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    // The MCO's rendered config for the pool lacks the role's drop-in as
    // that MachineConfig wrote it: the oracle says so, and fails on it.
    assert_eq!(o.status.code(), Some(1), "{}", report["summary"]);
    let summary = &report["summary"];
    assert_eq!(summary["renderedConfigCarriesOurFiles"], false, "{summary}");
    assert_eq!(summary["mcoValidationErrors"], 0, "{summary}");
    let pool_carry = report["carry"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["pool"] == "worker-gpu" && c["render"] == "running cluster")
        .unwrap_or_else(|| panic!("{report}"));
    let problems = pool_carry["problems"].to_string();
    assert!(
        problems.contains(&format!("{ENV_PATH}: contents differ")),
        "{problems}"
    );
    let root = work.join("node-root");
    let served = std::fs::read_to_string(root.join(ENV_PATH.trim_start_matches('/'))).unwrap();
    assert!(
        served.contains("example.com/pool=gpu:NoSchedule") && !served.contains("example.com/role"),
        "{served}"
    );
    let dropins = root.join("etc/systemd/system/kubelet.service.d");
    for e in std::fs::read_dir(&dropins).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap_or_default();
        assert!(
            !text.contains("example.com/role") && !text.contains("nvidia-gpu-taint"),
            "{text}"
        );
    }
    // And `explain` of the same MachineConfigs refuses them.
    let (o, _) = explain(&[&rendered_worker_unit_only(dir.path()), &out]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// An earlier release's wrapper: its usage line without the node format.
fn earlier_wrapper() -> Vec<u8> {
    let mut elf =
        crate::support::elf::foreign_static_elf(kubelet_labeler::cli::render::arch::Arch::X86_64);
    elf.extend_from_slice(
        format!(
            "{}--unit NAME] [--profile upstream|openshift] [--stop-post]",
            kubelet_labeler::node::contract::WRAPPER_USAGE_HEAD
        )
        .as_bytes(),
    );
    elf
}

fn explain_root(root: &Path) -> (Output, Value) {
    let o = bin()
        .args(["explain", "--json", "--root"])
        .arg(root)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    (o, v)
}

/// `explain --root` on a node whose wrapper, or whose env drop-in, an
/// earlier release installed: this CLI would preview the rules with its
/// own compact form (KLR5) and mispredict; it exits 1 saying the preview
/// is not what that node will do, naming the file and its format. The
/// real wrapper carries this release's node format.
#[test]
fn explain_root_refuses_a_node_of_another_node_format() {
    let dir = scratch_dir();
    let root = dir.path().join("node");
    crate::cli::kubeadm_root(&root);
    let rules = dir.path().join("gpu.yaml");
    std::fs::write(
        &rules,
        "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {name: gpu-taint}\n\
         spec:\n  rules:\n  - name: nvidia-gpu-taint\n    taints: [{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}]\n\
         \x20   matchFeatures:\n    - feature: pci.device\n      matchExpressions:\n        vendor: {op: In, value: [\"10de\"]}\n",
    )
    .unwrap();
    let o = bin()
        .args(["render", "dropins", "--rules"])
        .arg(&rules)
        .args(["--taint", "example.com/d=x:NoSchedule", "--wrapper"])
        .arg(run_cli::stand_in_wrapper())
        .arg("--root")
        .arg(&root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let (o, e) = explain_root(&root);
    assert!(o.status.success(), "{}: {e}", stderr(&o));

    let wrapper = root.join(format!(
        "usr/local/bin/kubelet-labeler-wrapper.{}",
        kubelet_labeler::cli::render::arch::Arch::X86_64.name()
    ));
    let ours = std::fs::read(&wrapper).unwrap();
    std::fs::write(&wrapper, earlier_wrapper()).unwrap();
    let (o, e) = explain_root(&root);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("this preview is not what that node will do")
            && err.contains(
                "/usr/local/bin/kubelet-labeler-wrapper.x86_64 (an earlier release (its node format is not stamped))"
            ),
        "{err}"
    );
    assert!(
        e["errors"].to_string().contains("this preview is not"),
        "{e}"
    );

    // The wrapper of this release, the env drop-in of an earlier one.
    std::fs::write(&wrapper, ours).unwrap();
    let env = root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf");
    let text = std::fs::read_to_string(&env).unwrap();
    let earlier = text
        .replacen(
            kubelet_labeler::cli::render::RENDERED_BY,
            "kubelet-labeler 0.1.0",
            1,
        )
        .replace("KLR5,", "KLR2,");
    assert_ne!(earlier, text);
    std::fs::write(&env, earlier).unwrap();
    let (o, _) = explain_root(&root);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf (an earlier release"
        ),
        "{err}"
    );

    let real = std::fs::read(env!("CARGO_BIN_EXE_kubelet-labeler-wrapper")).unwrap();
    assert_eq!(
        kubelet_labeler::cli::render::node_format::wrapper_format(&real),
        Some(Some(
            kubelet_labeler::node::contract::NODE_FORMAT.to_string()
        ))
    );
}

/// Issue 33 item 1 in the fleet ISO: the selector decides by the env
/// drop-ins the node would get, and an earlier release's worker role
/// drop-in under today's pool's is lost on it. Refused, naming both.
#[test]
fn iso_fleet_refuses_an_earlier_roles_dropin_under_the_pools() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    let gpu = crate::support::iso::gpu_pool(dir);
    let text = "# kubelet-labeler: labels and taints\n[Service]\n\
        Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=example.com/role=worker:NoSchedule\"\n";
    let role = serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": "50-worker-kubelet-labeler-labels",
            "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": {"files": [{
            "path": "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf",
            "contents": {"source": format!("data:,{}",
                kubelet_labeler::cli::render::encoding::percent_encode(text.as_bytes()))}}]}}}
    });
    std::fs::write(
        gpu.join("50-worker-kubelet-labeler-labels.yaml"),
        kubelet_labeler::cli::render::machineconfig::to_yaml(&role).unwrap(),
    )
    .unwrap();
    crate::support::relist_kustomization(&gpu, &["50-worker-kubelet-labeler-labels.yaml"], &[]);
    let o = iso_fleet_cli::fleet_args(dir)
        .args(["--dry-run", "--arch", "x86_64", "--dest-device", "/dev/sda"])
        .arg(format!("--pool=worker-gpu={}", gpu.display()))
        .arg("--pool=worker")
        .output()
        .unwrap();
    let e = iso_fleet_cli::said(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("pool worker-gpu: MachineConfig \"50-worker-gpu-kubelet-labeler-labels\"")
            && e.contains("of MachineConfig \"50-worker-kubelet-labeler-labels\""),
        "{e}"
    );
}
