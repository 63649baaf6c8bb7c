//! `plan` on renders `render machineconfig` makes and the example fleet
//! export: what each group of nodes gets, the exit status and its gates,
//! git revisions as inputs, and bad input refused with exit 2.

use crate::support::run_cli::stand_in_wrapper;
use crate::support::{bin, repo, scratch_dir, stderr, stdout};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use kubelet_labeler::node::kubelet::Profile;
use serde_json::Value;

pub(crate) fn render(dir: &Path, extra: &[&str]) {
    let o = bin()
        .args(["render", "machineconfig", "--pool", "worker-gpu"])
        .args(["--label", "node.kubernetes.io/worker-gpu="])
        .args(extra)
        .arg("--wrapper")
        .arg(stand_in_wrapper())
        .arg("--output-dir")
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}

fn fleet() -> PathBuf {
    repo().join("examples/fleet/fleet.json")
}

fn gpu_rules() -> String {
    repo()
        .join("examples/rules/openshift-gpu.yaml")
        .display()
        .to_string()
}

/// `plan` of `from` to `to`. The stand-in wrapper [`render`] ships is this
/// test world's release: plan vouches for it unless `extra` names another.
pub(crate) fn plan(from: &Path, to: &Path, fleet: &Path, extra: &[&str]) -> Output {
    let mut c = bin();
    c.arg("plan")
        .arg("--from")
        .arg(from)
        .arg("--to")
        .arg(to)
        .arg("--fleet")
        .arg(fleet)
        .args(extra);
    if !extra.contains(&"--wrapper") {
        c.arg("--wrapper").arg(stand_in_wrapper());
    }
    c.output().unwrap()
}

pub(crate) fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(o), stderr(o)))
}

/// A GPU taint rule added to the pool: the GPU nodes (one group of two)
/// register tainted, need the cluster's `kubectl taint`, and lose NFD's
/// worker; the CPU workers do not change. Exit 1; the gates decide.
#[test]
fn a_gpu_taint_rule_locks_nfd_out_of_the_gpu_nodes() {
    let tmp = scratch_dir();
    let (base, proposed) = (tmp.path().join("base"), tmp.path().join("proposed"));
    render(&base, &[]);
    render(&proposed, &["--rules", &gpu_rules()]);
    let o = plan(&base, &proposed, &fleet(), &["--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let p = json(&o);
    assert_eq!(
        (p["nodes"].as_u64(), p["changed"].as_u64()),
        (Some(4), Some(2)),
        "{p:#}"
    );
    assert_eq!(p["lockout"], 2);
    assert_eq!(p["reboot"], 0);
    let gpu = &p["groups"][0];
    assert_eq!(
        gpu["nodes"],
        serde_json::json!(["gpu-a100-01", "gpu-a100-02"])
    );
    let o_ = &gpu["outcome"];
    assert_eq!(o_["pool_before"], "worker-gpu");
    assert_eq!(o_["pool_after"], "worker-gpu");
    assert!(
        o_["register_before"]["taints"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        o_["register_after"]["taints"],
        serde_json::json!(["nvidia.com/gpu=true:NoSchedule"])
    );
    assert_eq!(
        o_["taint_commands"],
        serde_json::json!(["kubectl taint node <node> nvidia.com/gpu=true:NoSchedule --overwrite"])
    );
    assert_eq!(
        o_["daemonsets"],
        serde_json::json!([
            "openshift-nfd/nfd-worker: stops being schedulable (does not tolerate nvidia.com/gpu=true:NoSchedule)"
        ])
    );
    // The env drop-in changed: its policy entry restarts the sync, no reboot.
    assert_eq!(o_["disruption"], "restart");
    let workers = &p["groups"][1];
    assert_eq!(
        workers["nodes"],
        serde_json::json!(["worker-01", "worker-02"])
    );
    assert_eq!(workers["outcome"]["pool_before"], "worker");
    // Gates: no reboot passes, the lockout fails.
    assert_eq!(
        plan(&base, &proposed, &fleet(), &["--fail-on", "reboot"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        plan(&base, &proposed, &fleet(), &["--fail-on", "reboot,lockout"])
            .status
            .code(),
        Some(1)
    );
    // Markdown: totals first, the command for each node.
    let md = plan(&base, &proposed, &fleet(), &["--format", "markdown"]);
    let md = stdout(&md);
    assert!(
        md.starts_with("### kubelet-labeler plan\n\n**2 of 4 nodes change;"),
        "{md}"
    );
    assert!(
        md.contains("kubectl taint node \\<node\\> nvidia.com/gpu=true:NoSchedule"),
        "{md}"
    );
    // The same render on both sides: nothing changes, exit 0.
    let same = plan(&base, &base, &fleet(), &[]);
    assert_eq!(same.status.code(), Some(0), "{}", stdout(&same));
    assert!(
        stdout(&same).contains(": 0 of 4 nodes change;"),
        "{}",
        stdout(&same)
    );
}

/// `REV:PATH` reads a render at a git revision with git itself.
#[test]
fn a_git_revision_is_a_render() {
    if !crate::support::skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let repo_dir = tmp.path();
    let git = |args: &[&str]| git_in(repo_dir, args);
    git(&["init", "-q"]);
    render(&repo_dir.join("gitops/worker-gpu"), &[]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "base"]);
    std::fs::remove_dir_all(repo_dir.join("gitops/worker-gpu")).unwrap();
    render(
        &repo_dir.join("gitops/worker-gpu"),
        &["--rules", &gpu_rules()],
    );
    let o = bin()
        .current_dir(repo_dir)
        .args([
            "plan",
            "--from",
            "HEAD:gitops/",
            "--to",
            "gitops/",
            "--format",
            "json",
            "--fleet",
        ])
        .arg(fleet())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(json(&o)["changed"], 2);
    let o = bin()
        .current_dir(repo_dir)
        .args([
            "plan",
            "--from",
            "no-such-branch:gitops/",
            "--to",
            "gitops/",
            "--fleet",
        ])
        .arg(fleet())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("\"no-such-branch\" is no git revision"),
        "{}",
        stderr(&o)
    );
}

/// git `args` in `dir`, which must succeed: its stdout.
fn git_in(dir: &Path, args: &[&str]) -> String {
    let o = std::process::Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// A manifest git stores in a few hundred KiB that holds 200 MiB (zeros
/// compress a thousandfold): refused from git's listing of sizes, never
/// read into memory (the old read took it whole before counting, past
/// the 128 MiB of address space the run is given here).
#[test]
fn a_git_revisions_manifests_are_measured_before_they_are_read() {
    if !crate::support::skipped::need("git") {
        return;
    }
    let tmp = scratch_dir();
    let dir = tmp.path();
    git_in(dir, &["init", "-q"]);
    render(&dir.join("gitops/worker-gpu"), &[]);
    let zeros = dir.join("zeros");
    std::fs::write(&zeros, vec![0u8; 200 << 20]).unwrap();
    let blob = git_in(dir, &["hash-object", "-w", "zeros"]);
    std::fs::remove_file(&zeros).unwrap();
    let info = format!("100644,{},gitops/worker-gpu/zz.yaml", blob.trim());
    git_in(dir, &["add", "gitops"]);
    git_in(dir, &["update-index", "--add", "--cacheinfo", &info]);
    git_in(dir, &["commit", "-q", "-m", "bomb"]);
    let o = std::process::Command::new("sh")
        .args(["-c", "ulimit -v 131072 && exec \"$@\"", "sh"])
        .arg(crate::support::BIN)
        .args([
            "plan",
            "--from",
            "HEAD:gitops/",
            "--to",
            "HEAD:gitops/",
            "--fleet",
        ])
        .arg(fleet())
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("HEAD:gitops/: more than 128 MiB of manifests"),
        "{}",
        stderr(&o)
    );
}

/// Bad input: one error naming it, exit 2, nothing on stdout.
#[test]
fn bad_fleet_input_is_refused() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &[]);
    let full = std::fs::read_to_string(fleet()).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "truncated.json",
            full[..full.len() / 2].to_string(),
            "truncated",
        ),
        (
            "other-api.json",
            full.replace("nfd.k8s-sigs.io/v1alpha1", "nfd.k8s-sigs.io/v1beta9"),
            "plan reads nfd.k8s-sigs.io/v1alpha1",
        ),
        (
            "other-cluster.json",
            full.replace(
                "\"nfd.node.kubernetes.io/node-name\": \"",
                "\"nfd.node.kubernetes.io/node-name\": \"x-",
            )
            .replace("\"name\": \"gpu-a100", "\"name\": \"y-gpu-a100")
            .replace("\"name\": \"worker-0", "\"name\": \"y-worker-0"),
            "share no node name",
        ),
        ("garbage.json", "{\"kind\": [1,2".into(), "--fleet"),
        (
            "no-kind.yaml",
            "metadata: {name: a}\n".into(),
            "without kind",
        ),
    ];
    for (name, text, want) in cases {
        let f = tmp.path().join(name);
        std::fs::write(&f, text).unwrap();
        let o = plan(&base, &base, &f, &[]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{name}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        assert!(stderr(&o).contains(want), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(name), "{name}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{name}");
    }
    let o = plan(&tmp.path().join("missing"), &base, &fleet(), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("missing: no such file or directory"),
        "{}",
        stderr(&o)
    );
}

/// What plan predicts for a node registering now is what NFD's own
/// evaluator (../shared/oracles/nfd) gives on the node's NodeFeature: for
/// the example rule files and the NFD-sample-like ones on every fixture
/// tree, as `facts --json` (and, for nfd-worker's trees, as the real
/// nfd-worker wrote it), each wrapped as a NodeFeature of a worker-gpu
/// Node; NFD's answer less what kubelet refuses, plan's `register_after`
/// less the pool's static labels (`register_before`: no rules).
#[test]
fn registering_now_is_what_nfd_gives() {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nfd-oracle-plan");
    std::fs::create_dir_all(&out_dir).unwrap();
    let Some(oracle) = crate::support::nfd_oracle::build(&out_dir) else {
        return;
    };
    let tmp = scratch_dir();
    // (node name, features)
    let mut nodes: Vec<(String, Value)> = Vec::new();
    for fixtures in ["tests/fixtures/nodes", "tests/fixtures/nfd-worker"] {
        let mut roots: Vec<PathBuf> = std::fs::read_dir(repo().join(fixtures))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("proc").is_dir())
            .collect();
        roots.sort();
        for root in roots {
            let name = root.file_name().unwrap().to_string_lossy().into_owned();
            let o = bin()
                .args(["facts", "--json", "--root"])
                .arg(&root)
                .output()
                .unwrap();
            assert!(o.status.success(), "facts on {name}: {}", stderr(&o));
            nodes.push((name.clone(), json(&o)));
            let golden = root.with_extension("nfd.json");
            if golden.is_file() {
                let text = std::fs::read_to_string(&golden).unwrap();
                nodes.push((
                    format!("{name}-nfd-worker"),
                    serde_json::from_str(&text).unwrap(),
                ));
            }
        }
    }
    assert!(nodes.len() >= 14, "fixture trees missing: {}", nodes.len());
    let items: Vec<Value> = nodes
        .iter()
        .flat_map(|(name, features)| {
            [
                serde_json::json!({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": {
                        "node-role.kubernetes.io/worker": "",
                        "node.kubernetes.io/worker-gpu": ""}},
                    "status": {"nodeInfo": {"kubeletVersion": "v1.33.5"}}}),
                serde_json::json!({"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
                    "metadata": {"name": name, "namespace": "node-feature-discovery",
                        "labels": {"nfd.node.kubernetes.io/node-name": name}},
                    "spec": {"features": features}}),
            ]
        })
        .collect();
    let fleet = tmp.path().join("fleet.json");
    std::fs::write(
        &fleet,
        serde_json::json!({"kind": "List", "items": items}).to_string(),
    )
    .unwrap();
    let base = tmp.path().join("base");
    render(&base, &[]);
    let mut files: Vec<PathBuf> = ["examples/rules", "tests/fixtures/nfd-worker/rules"]
        .iter()
        .flat_map(|d| std::fs::read_dir(repo().join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "rule files missing");
    let (mut failures, mut compared) = (Vec::new(), (0, 0));
    for (i, file) in files.iter().enumerate() {
        let proposed = tmp.path().join(format!("proposed-{i}"));
        render(&proposed, &["--rules", &file.display().to_string()]);
        let o = plan(&base, &proposed, &fleet, &["--format", "json"]);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{}: {}",
            file.display(),
            stderr(&o)
        );
        let p = json(&o);
        let doc: Value = serde_saphyr::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let objects = vec![
            serde_json::json!({"name": doc["metadata"]["name"], "rules": doc["spec"]["rules"]}),
        ];
        let inputs: Vec<Value> = nodes
            .iter()
            .map(|(_, f)| serde_json::json!({"features": f, "objects": objects}))
            .collect();
        let answers = crate::support::nfd_oracle::run(&oracle, &inputs);
        for ((name, _), answer) in nodes.iter().zip(&answers) {
            let Some(group) = p["groups"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["nodes"].as_array().unwrap().iter().any(|n| n == name))
            else {
                failures.push(format!("{}: no group has {name}", file.display()));
                continue;
            };
            let o = &group["outcome"];
            let strings = |v: &Value| -> BTreeSet<String> {
                v.as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            };
            let static_labels = strings(&o["register_before"]["labels"]);
            let ours = (
                &strings(&o["register_after"]["labels"]) - &static_labels,
                strings(&o["register_after"]["taints"]),
            );
            let candidates: Vec<(BTreeSet<String>, BTreeSet<String>)> =
                crate::support::nfd_oracle::outcomes(answer)
                    .into_iter()
                    .map(|a| {
                        let (labels, taints) =
                            crate::support::nfd_oracle::kubelet_accepted(a, Profile::OpenShift);
                        (
                            labels.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                            taints
                                .iter()
                                .map(|(k, v, e)| match v.as_str() {
                                    "" => format!("{k}:{e}"),
                                    v => format!("{k}={v}:{e}"),
                                })
                                .collect(),
                        )
                    })
                    .collect();
            compared.0 += ours.0.len();
            compared.1 += ours.1.len();
            if !candidates.contains(&ours) || !o["register_after"]["left_out"].is_null() {
                failures.push(format!(
                    "{} on {name}: plan {ours:?} (left out: {}), NFD {candidates:?}",
                    file.display(),
                    o["register_after"]["left_out"]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The files must give output on these nodes, not only agree on nothing.
    assert!(
        compared.0 > 200 && compared.1 >= 10,
        "only {compared:?} labels and taints compared"
    );
}

/// Nodes of the real cluster (../shared/tools/realcluster) this area uses.
pub const NODES: [&str; 1] = ["plan-sync"];

/// `plan`'s day-2 sync lines are what the real sync then writes: a Node
/// created with the node's own certificate as a first boot of the base
/// render registers it (NFD's label and the role added by the cluster
/// admin), exported with its NodeFeature. Twice: the first sync on the base
/// render (it adopts what the node registered), then a change (a static
/// label changed, one added, a rule file's added). Each time the real
/// `sync` runs on the node's tree (the render's files laid out; the DGX
/// fixture's hardware) through the real API server, and the Node's labels
/// must be, key by key, plan's lines applied to the exported ones.
#[test]
fn plans_sync_lines_are_what_the_real_sync_writes() {
    use crate::support::realcluster;
    if realcluster::unavailable().is_some() {
        return;
    }
    let cluster = realcluster::cluster();
    let name = NODES[0];
    let tmp = scratch_dir();
    let d = tmp.path();
    let (base, proposed) = (d.join("base"), d.join("proposed"));
    render(&base, &["--label", "example.com/tier=gold"]);
    let rules = repo().join("examples/rules/gpu-classes.yaml");
    render(
        &proposed,
        &[
            "--label",
            "example.com/tier=silver",
            "--label",
            "example.com/zone=a",
            "--rules",
            rules.to_str().unwrap(),
        ],
    );
    // The Node as the base render's first boot registers it.
    cluster.delete_node(name);
    let node = serde_json::json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "example.com/tier": "gold", "node.kubernetes.io/worker-gpu": ""}}});
    let (code, body) = cluster.post_node_as_node(name, &node, false);
    assert_eq!(code, 201, "{body}");
    let (code, body) = cluster.request(
        "PATCH",
        &format!("/api/v1/nodes/{name}"),
        "application/merge-patch+json",
        r#"{"metadata":{"labels":{"node-role.kubernetes.io/worker":"","feature.node.kubernetes.io/nfd":"true"}}}"#,
    );
    assert_eq!(code, 200, "{body}");
    // Adopting what the node registered changes no label: no line.
    sync_as_planned(cluster, name, &base, &base, &d.join("first"));
    let change = sync_as_planned(cluster, name, &base, &proposed, &d.join("change"));
    for want in [
        "change example.com/tier",
        "add example.com/zone",
        "add nvidia.com/gpu",
    ] {
        assert!(
            change.iter().any(|l| l.starts_with(want)),
            "{want}: {change:?}"
        );
    }
}

/// Export the Node and its NodeFeature, `plan --from --to`, run the real
/// sync on a tree of `to`'s files, and compare the Node's labels with
/// plan's lines applied: the lines that changed something (action key).
fn sync_as_planned(
    cluster: &crate::support::realcluster::Cluster,
    name: &str,
    from: &Path,
    to: &Path,
    d: &Path,
) -> Vec<String> {
    use crate::support::realcluster::labels_and_taints;
    std::fs::create_dir_all(d).unwrap();
    let tree = d.join("tree");
    let hardware = repo().join("tests/fixtures/nodes/dgx");
    node_tree(to, &tree);
    let kubeconfig = d.join("kubeconfig");
    std::fs::write(&kubeconfig, cluster.kubeconfig(name)).unwrap();
    // The export plan reads: the Node and the node's NodeFeature.
    let exported = cluster.node(name).expect("the Node");
    let facts = bin()
        .args(["facts", "--json", "--root"])
        .arg(&hardware)
        .output()
        .unwrap();
    assert!(facts.status.success(), "{}", stderr(&facts));
    let fleet = d.join("fleet.json");
    std::fs::write(
        &fleet,
        serde_json::json!({"kind": "List", "items": [exported,
            {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
             "metadata": {"name": name, "labels": {"nfd.node.kubernetes.io/node-name": name}},
             "spec": {"features": json(&facts)}}]})
        .to_string(),
    )
    .unwrap();
    let o = plan(from, to, &fleet, &["--format", "json"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let p = json(&o);
    let outcome = &p["groups"][0]["outcome"];
    // Plan's lines applied to the exported labels.
    let (mut predicted, _) = labels_and_taints(&exported);
    let mut acted = Vec::new();
    for line in outcome["sync"].as_array().unwrap() {
        let line = line.as_str().unwrap();
        let (action, rest) = line.split_once(' ').unwrap();
        if action == "leave" {
            continue;
        }
        let (key, rest) = rest.split_once(": ").unwrap();
        let (_, rest) = rest.split_once(" -> ").unwrap();
        let (value, _) = rest.split_once(" (").unwrap();
        match action {
            "add" | "change" | "adopt" => predicted.insert(key.to_string(), value.to_string()),
            "remove" => predicted.remove(key),
            other => panic!("{other} in {line}"),
        };
        acted.push(format!("{action} {key}"));
    }
    let s = bin()
        .args(["sync", "--profile", "openshift", "--root"])
        .arg(&tree)
        .arg("--facts-root")
        .arg(&hardware)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .output()
        .unwrap();
    // 1: something is left to report (another owner's value).
    assert!(
        matches!(s.status.code(), Some(0 | 1)),
        "sync: {:?} {}{}",
        s.status,
        stdout(&s),
        stderr(&s)
    );
    let (stored, _) = labels_and_taints(&cluster.node(name).unwrap());
    let keys: BTreeSet<&String> = stored.keys().chain(predicted.keys()).collect();
    let differ: Vec<String> = keys
        .into_iter()
        .filter(|k| stored.get(*k) != predicted.get(*k))
        .map(|k| {
            format!(
                "{k}: stored {:?}, plan {:?}",
                stored.get(k),
                predicted.get(k)
            )
        })
        .collect();
    assert!(
        differ.is_empty(),
        "{}\nplan: {outcome:#}\nsync: {}{}",
        differ.join("\n"),
        stdout(&s),
        stderr(&s)
    );
    acted
}

/// The node's tree of a render (`layout`: its MachineConfigs' files
/// merged), with a kubelet unit and executable where the render has none.
pub(crate) fn node_tree(to: &Path, tree: &Path) {
    use kubelet_labeler::cli::render::layout;
    let mut configs = Vec::new();
    for e in std::fs::read_dir(to).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            continue; // cluster-wide/: the disruption policy
        }
        let text = std::fs::read_to_string(&p).unwrap();
        if !text.lines().any(|l| l == "kind: MachineConfig") {
            continue; // the pool, the disruption policy
        }
        configs.extend(layout::machineconfigs_from_yaml(&text, &p.display().to_string()).unwrap());
    }
    layout::Layout::merge(configs).unwrap().write(tree).unwrap();
    let unit = tree.join("etc/systemd/system/kubelet.service");
    if !unit.exists() {
        crate::support::write(&unit, "[Service]\nExecStart=/usr/bin/kubelet\n");
    }
    let kubelet = tree.join("usr/bin/kubelet");
    crate::support::write(&kubelet, "#!/bin/sh\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&kubelet, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Label selectors against Kubernetes' own code: the real API server
/// lists Nodes by a `labelSelector` (apimachinery's `labels.Parse`, whose
/// requirements are `NewRequirement`'s and match by `Requirement.Matches`,
/// as node affinity's do). On 24 Nodes of random labels, for 1,000 seeded
/// random selectors (every operator, missing keys, non-numbers for Gt/Lt,
/// values and keys Kubernetes refuses), the Nodes the API server lists are
/// the ones plan's `Selector` matches (none when the server refuses it).
#[test]
fn selectors_match_as_the_api_server_selects_nodes() {
    use crate::support::realcluster;
    use kubelet_labeler::cli::plan::kube::Selector;
    if realcluster::unavailable().is_some() {
        return;
    }
    let cluster = realcluster::cluster();
    let mut seed: u64 = 0x504C_414E_5345_4C21;
    let mut rnd = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    const KEYS: &[&str] = &["a", "b", "n", "example.com/tier"];
    const VALUES: &[&str] = &["", "1", "2", "10", "x", "007"];
    let mut nodes: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for i in 0..24 {
        let name = format!("plan-sel-{i}");
        let mut labels: Vec<(String, String)> = Vec::new();
        for k in KEYS {
            if rnd(3) != 0 {
                labels.push((k.to_string(), VALUES[rnd(VALUES.len())].to_string()));
            }
        }
        let map: serde_json::Map<String, Value> = labels
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        let (code, body) = cluster.request(
            "DELETE",
            &format!("/api/v1/nodes/{name}"),
            "application/json",
            "",
        );
        assert!(matches!(code, 200 | 404), "{body}");
        let node = serde_json::json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": map}});
        let (code, body) = cluster.request(
            "POST",
            "/api/v1/nodes",
            "application/json",
            &node.to_string(),
        );
        assert_eq!(code, 201, "{body}");
        nodes.push((name, labels));
    }
    let keys: Vec<&str> = KEYS.iter().copied().chain(["z", "-a", "a/b/c"]).collect();
    let values: Vec<&str> = VALUES.iter().copied().chain(["-1", "a b"]).collect();
    let (mut refused, mut selected, mut failures) = (0, 0, Vec::new());
    for _ in 0..1000 {
        let mut text = Vec::new();
        let mut exprs = Vec::new();
        for _ in 0..1 + rnd(2) {
            let key = keys[rnd(keys.len())];
            let mut vals: Vec<&str> = (0..rnd(3)).map(|_| values[rnd(values.len())]).collect();
            let op = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "="][rnd(7)];
            let s = match op {
                "In" | "NotIn" => {
                    vals.retain(|v| !v.is_empty());
                    let word = if op == "In" { "in" } else { "notin" };
                    let s = format!("{key} {word} ({})", vals.join(","));
                    if vals.is_empty() {
                        // labels.Parse reads `()` as the one empty value.
                        vals.push("");
                    }
                    s
                }
                "Exists" => {
                    vals.clear();
                    key.to_string()
                }
                "DoesNotExist" => {
                    vals.clear();
                    format!("!{key}")
                }
                _ => {
                    vals.truncate(1);
                    if vals.is_empty() {
                        vals.push("3");
                    }
                    let sign = match op {
                        "Gt" => ">",
                        "Lt" => "<",
                        _ => "=",
                    };
                    format!("{key}{sign}{}", vals[0])
                }
            };
            let op = if op == "=" { "In" } else { op };
            exprs.push(serde_json::json!({"key": key, "operator": op, "values": vals}));
            text.push(s);
        }
        let text = text.join(",");
        let ours =
            Selector::from_node_selector_term(&serde_json::json!({"matchExpressions": exprs}));
        let encoded: String = text
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (code, body) = cluster.get(&format!("/api/v1/nodes?labelSelector={encoded}"));
        let listed: BTreeSet<String> = match code {
            200 => {
                let v: Value = serde_json::from_str(&body).unwrap();
                v["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|n| n["metadata"]["name"].as_str())
                    .filter(|n| n.starts_with("plan-sel-"))
                    .map(String::from)
                    .collect()
            }
            400 => {
                refused += 1;
                if ours.error.is_none() {
                    failures.push(format!(
                        "{text}: the API server refuses it ({body}), plan does not"
                    ));
                }
                continue;
            }
            _ => panic!("{text}: {code} {body}"),
        };
        if let Some(e) = &ours.error {
            failures.push(format!(
                "{text}: plan refuses it ({e}), the API server does not"
            ));
            continue;
        }
        let matched: BTreeSet<String> = nodes
            .iter()
            .filter(|(_, labels)| ours.matches(labels))
            .map(|(n, _)| n.clone())
            .collect();
        selected += matched.len();
        if matched != listed {
            failures.push(format!("{text}: API server {listed:?}, plan {matched:?}"));
        }
    }
    for (name, _) in &nodes {
        cluster.request(
            "DELETE",
            &format!("/api/v1/nodes/{name}"),
            "application/json",
            "",
        );
    }
    assert!(
        failures.is_empty(),
        "{}",
        failures[..failures.len().min(20)].join("\n")
    );
    assert!(
        refused > 50 && selected > 2000,
        "{refused} refused, {selected} selected"
    );
}

/// A paused pool (the pull request pauses it, or it is paused): the MCO
/// rolls nothing out to its nodes, and the MCS serves new ones the current
/// rendered config, until it is unpaused. plan says so beside what
/// unpausing does.
#[test]
fn a_paused_pool_is_said_to_roll_nothing_out() {
    let tmp = scratch_dir();
    let (base, proposed) = (tmp.path().join("base"), tmp.path().join("proposed"));
    render(&base, &[]);
    render(&proposed, &["--rules", &gpu_rules()]);
    let pool = proposed.join("machineconfigpool-worker-gpu.yaml");
    let text = std::fs::read_to_string(&pool).unwrap();
    std::fs::write(
        &pool,
        text.replacen("spec:\n", "spec:\n  paused: true\n", 1),
    )
    .unwrap();
    let o = plan(&base, &proposed, &fleet(), &["--format", "json"]);
    let shown = json(&o).to_string();
    assert!(
        shown.contains("pool worker-gpu is paused (spec.paused): the MCO rolls none of this out"),
        "{shown}"
    );
    // Unpaused: not said.
    std::fs::write(&pool, text).unwrap();
    let o = plan(&base, &proposed, &fleet(), &["--format", "json"]);
    assert!(!json(&o).to_string().contains("is paused"));
}
