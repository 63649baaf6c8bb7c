//! The node disruption policy `render machineconfig` writes, applied as the
//! docs say (server-side, a field manager per pool) to a real kube-apiserver
//! holding the cluster's one `MachineConfiguration`: it merges with the
//! user's own policies and with other pools' instead of replacing them.
//!
//! The API server is real (../shared/tools/realcluster); the
//! `MachineConfiguration` type is a CRD written here with only what decides
//! the merge, as openshift/api declares it for `operator.openshift.io/v1`
//! (`spec.nodeDisruptionPolicy.files` a map list keyed by `path`, `units`
//! keyed by `name`, at most 50 each; `actions` atomic lists).

use crate::support::{bin, elf, realcluster, scratch_dir};

use std::path::Path;
use std::time::{Duration, Instant};

use realcluster::Cluster;
use serde_json::{Value, json};

const OBJECT: &str = "/apis/operator.openshift.io/v1/machineconfigurations/cluster";

fn cluster() -> Option<&'static Cluster> {
    if realcluster::unavailable().is_some() {
        return None;
    }
    Some(realcluster::cluster())
}

/// openshift/api's list semantics for the fields a policy sets.
fn crd() -> Value {
    let keyed = |key: &str| {
        json!({
            "type": "array",
            "maxItems": 50,
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": [key],
            "items": {
                "type": "object",
                "required": [key, "actions"],
                "properties": {
                    key: {"type": "string"},
                    "actions": {
                        "type": "array",
                        "maxItems": 10,
                        "x-kubernetes-list-type": "atomic",
                        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }
                }
            }
        })
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "machineconfigurations.operator.openshift.io"},
        "spec": {
            "group": "operator.openshift.io",
            "scope": "Cluster",
            "names": {
                "plural": "machineconfigurations",
                "singular": "machineconfiguration",
                "kind": "MachineConfiguration",
                "listKind": "MachineConfigurationList"
            },
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": true,
                            "properties": {
                                "nodeDisruptionPolicy": {
                                    "type": "object",
                                    "properties": {
                                        "files": keyed("path"),
                                        "units": keyed("name"),
                                        "sshkey": {
                                            "type": "object",
                                            "x-kubernetes-preserve-unknown-fields": true
                                        }
                                    }
                                }
                            }
                        }
                    }
                }}
            }]
        }
    })
}

/// The CRD, served: the API server answers for the type only once it is
/// Established.
fn install_crd(c: &Cluster) {
    let (code, body) = c.request(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        &crd().to_string(),
    );
    assert!(code == 201 || code == 409, "{code} {body}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, _) = c.get("/apis/operator.openshift.io/v1/machineconfigurations");
        if code == 200 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the CRD was never served ({code})"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The tests here change the cluster's one object: one at a time.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// `render machineconfig --pool POOL --output-dir DIR/POOL`: the
/// directory and what the render said on stderr.
fn render_pool(dir: &Path, pool: &str) -> (std::path::PathBuf, String) {
    let wrapper = dir.join("wrapper");
    std::fs::write(
        &wrapper,
        elf::static_elf(kubelet_labeler::cli::render::arch::Arch::X86_64),
    )
    .unwrap();
    let out = dir.join(pool);
    let o = bin()
        .args(["render", "machineconfig", "--pool", pool, "--wrapper"])
        .arg(&wrapper)
        .arg("--output-dir")
        .arg(&out)
        .args(["--label", "example.com/tier=gold"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    (out, err)
}

/// `render machineconfig --pool POOL`'s policy file.
fn rendered_policy(dir: &Path, pool: &str) -> String {
    let (out, _) = render_pool(dir, pool);
    std::fs::read_to_string(out.join(format!("cluster-wide/machineconfiguration-{pool}.yaml")))
        .unwrap()
}

/// `oc apply --server-side --field-manager=MANAGER -f -` of `yaml`.
fn apply(c: &Cluster, manager: &str, yaml: &str) -> (u16, String) {
    c.request(
        "PATCH",
        &format!("{OBJECT}?fieldManager={manager}"),
        "application/apply-patch+yaml",
        yaml,
    )
}

fn stored(c: &Cluster) -> Value {
    let (code, body) = c.get(OBJECT);
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn keys(obj: &Value, list: &str, key: &str) -> Vec<String> {
    obj["spec"]["nodeDisruptionPolicy"][list]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e[key].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

const USERS: &str = "apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata:
  name: cluster
spec:
  managementState: Managed
  nodeDisruptionPolicy:
    files:
    - path: /etc/chrony.conf
      actions:
      - type: Restart
        restart:
          serviceName: chronyd.service
    units:
    - name: user-agent.service
      actions:
      - type: None
";

#[test]
fn the_policy_merges_with_the_users_and_other_pools() {
    let Some(c) = cluster() else { return };
    let _one = one_at_a_time();
    install_crd(c);
    let dir = scratch_dir();
    let gpu = rendered_policy(dir.path(), "worker-gpu");
    let pi = rendered_policy(dir.path(), "worker-pi");

    // The cluster's object as the operator and the user left it.
    let (code, body) = apply(c, "user", USERS);
    assert!(code == 200 || code == 201, "{code} {body}");

    for (manager, yaml) in [
        ("kubelet-labeler-worker-gpu", &gpu),
        ("kubelet-labeler-worker-pi", &pi),
        // A re-render applied again changes nothing and conflicts with nobody.
        ("kubelet-labeler-worker-gpu", &gpu),
    ] {
        let (code, body) = apply(c, manager, yaml);
        assert_eq!(code, 200, "applying {manager}'s policy: {body}");
    }
    let obj = stored(c);
    let files = keys(&obj, "files", "path");
    assert!(files.contains(&"/etc/chrony.conf".to_string()), "{files:?}");
    assert!(
        files.contains(
            &"/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf".to_string()
        ),
        "{files:?}"
    );
    assert!(
        keys(&obj, "units", "name").contains(&"user-agent.service".to_string()),
        "{obj:#}"
    );
    assert_eq!(obj["spec"]["managementState"], "Managed");
    // Every entry of ours is there once, whichever pool applied it.
    let ours: Value = serde_saphyr::from_str(&gpu).unwrap();
    for e in ours["spec"]["nodeDisruptionPolicy"]["files"]
        .as_array()
        .unwrap()
    {
        let p = e["path"].as_str().unwrap();
        assert_eq!(
            files.iter().filter(|f| *f == p).count(),
            1,
            "{p}: {files:?}"
        );
    }

    // The control: a client-side apply (a JSON merge patch, as for any
    // custom resource) replaces the lists, and the user's entry is gone.
    let (code, body) = c.request(
        "PATCH",
        OBJECT,
        "application/merge-patch+json",
        &serde_json::to_string(&ours).unwrap(),
    );
    assert_eq!(code, 200, "{body}");
    let files = keys(&stored(c), "files", "path");
    assert!(
        !files.contains(&"/etc/chrony.conf".to_string()),
        "{files:?}"
    );
}

/// Issue 33 item 2: `oc apply -f` on a pool's directory (the most common
/// habit) applies every document of its own files client-side, a custom
/// resource as a JSON merge patch. It used to carry the cluster-wide
/// policy and replace the cluster's lists: another team's entry vanished.
/// Now that apply leaves the policy alone, and the command stderr gives
/// (server-side, the pool's field manager, the file in `cluster-wide/`)
/// merges ours with the team's.
#[test]
fn a_plain_apply_of_the_pool_directory_keeps_other_teams_entries() {
    let Some(c) = cluster() else { return };
    let _one = one_at_a_time();
    install_crd(c);
    let dir = scratch_dir();
    let (out, err) = render_pool(dir.path(), "worker-edge");
    let (code, body) = apply(c, "user", USERS);
    assert!(code == 200 || code == 201, "{code} {body}");

    for doc in crate::render_policy::plain_apply(&out) {
        if doc["kind"] != "MachineConfiguration" {
            // No MachineConfig type here: what decides is the policy's fate.
            continue;
        }
        let (code, body) = c.request(
            "PATCH",
            OBJECT,
            "application/merge-patch+json",
            &doc.to_string(),
        );
        assert_eq!(code, 200, "{body}");
    }
    let files = keys(&stored(c), "files", "path");
    assert!(
        files.contains(&"/etc/chrony.conf".to_string()),
        "a plain apply of the pool's directory dropped the team's entry: {files:?}"
    );

    // The command render gave, as given.
    let command = err
        .lines()
        .find_map(|l| l.split_once(": oc apply --server-side ").map(|(_, c)| c))
        .unwrap_or_else(|| panic!("no apply command on stderr: {err}"));
    let (manager, path) = command
        .strip_prefix("--field-manager=")
        .and_then(|c| c.split_once(" -f "))
        .unwrap_or_else(|| panic!("{command}"));
    assert_eq!(manager, "kubelet-labeler-worker-edge");
    let (code, body) = apply(c, manager, &std::fs::read_to_string(path).unwrap());
    assert_eq!(code, 200, "{body}");
    let files = keys(&stored(c), "files", "path");
    for p in [
        "/etc/chrony.conf",
        "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf",
    ] {
        assert!(files.contains(&p.to_string()), "{p}: {files:?}");
    }
}

/// Review 23 r23b F6: render's printed command, run as printed with a real
/// kubectl of 1.26 or later (1.32 was run by hand: CI's Debian has 1.20,
/// which predates the takeover), takes over an entry another team applied
/// client-side (its `kubectl-client-side-apply` fields) and drops it; the
/// team applying server-side with a field manager of its own first keeps
/// both. Render says so where it prints the command.
#[test]
fn the_printed_apply_says_it_drops_client_side_entries() {
    let dir = scratch_dir();
    let (_, err) = render_pool(dir.path(), "worker-gpu");
    let command = err
        .lines()
        .find_map(|l| l.split_once(": oc apply --server-side ").map(|(_, c)| c))
        .unwrap_or_else(|| panic!("no apply command on stderr: {err}"));
    assert!(
        command.starts_with("--field-manager=kubelet-labeler-worker-gpu -f "),
        "{command}"
    );
    assert!(
        err.contains("taken over by this apply and dropped"),
        "render does not say what its apply does to entries applied client-side: {err}"
    );
}
