//! The day-2 sync against the real chain: a real kubelet registers a Node
//! with the labels and taints `explain` predicts for a node tree (what the
//! wrapper adds at boot); then the tree's labels change and
//! `kubelet-labeler sync` reconciles the Node with the node's own
//! certificate through a real kube-apiserver with Node authorization and
//! NodeRestriction. The stored Node must match the prediction: ours
//! changed, others' keys, NFD's keys, the pool label and forbidden keys
//! untouched, taint drift reported and not attempted.

use crate::support::{realcluster, scratch_dir, write};

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use realcluster::{Cluster, labels_and_taints};

pub const NODES: [&str; 7] = [
    "rs-sync",
    "rs-down",
    "rs-drift",
    "rs-size",
    "rs-pool",
    "rs-explain",
    "rs-big",
];

fn cluster() -> Option<&'static Cluster> {
    if realcluster::unavailable().is_some() {
        return None;
    }
    Some(realcluster::cluster())
}

/// A kubeadm-like node tree whose env drop-in carries `labels`/`taints`.
pub fn tree(dir: &Path, labels: &str, taints: &str) {
    let sys = dir.join("etc/systemd/system");
    write(
        &sys.join("kubelet.service"),
        "[Service]\nExecStart=/usr/bin/kubelet --kubeconfig=/etc/kubernetes/kubelet.conf\n",
    );
    env(dir, labels, taints);
    // The wrapper installed as render installs it (its generator): what
    // `explain` predicts is what the wrapper adds at boot.
    use kubelet_labeler::cli::render::{arch::Arch, dropins};
    use kubelet_labeler::node::kubelet::Profile;
    let generator =
        dir.join(kubelet_labeler::node::contract::GENERATOR_PATH.trim_start_matches('/'));
    write(
        &generator,
        &dropins::generator(Profile::OpenShift, "kubelet.service", &[Arch::X86_64]),
    );
    // An x86_64 program, as the generator checks at boot.
    let wrapper = dir.join("usr/local/bin/kubelet-labeler-wrapper.x86_64");
    std::fs::create_dir_all(wrapper.parent().unwrap()).unwrap();
    std::fs::write(&wrapper, crate::support::elf::static_elf(Arch::X86_64)).unwrap();
    for exe in [&generator, &wrapper] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let kubelet = dir.join("usr/bin/kubelet");
    write(&kubelet, "#!/bin/sh\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&kubelet, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn env(dir: &Path, labels: &str, taints: &str) {
    write(
        &dir.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf"),
        &format!(
            "[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS={labels}\"\n\
             Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS={taints}\"\n"
        ),
    );
}

fn sync(tree: &Path, kubeconfig: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["sync", "--profile", "openshift", "--root"])
        .arg(tree)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--pool-label", "node.kubernetes.io/pool"])
        .args(extra)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The stored Node: labels, taints, annotations, resourceVersion.
fn stored(
    cluster: &Cluster,
    node: &str,
) -> (
    BTreeMap<String, String>,
    Vec<String>,
    serde_json::Value,
    String,
) {
    let n = cluster.node(node).expect("the Node");
    let (labels, taints) = labels_and_taints(&n);
    (
        labels,
        taints,
        n["metadata"]["annotations"].clone(),
        n["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

/// `explain`'s added labels and taints on the tree: what the wrapper adds.
fn predicted(tree: &Path) -> (Vec<String>, Vec<String>) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["explain", "--json", "--profile", "openshift", "--root"])
        .arg(tree)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("explain: {e}: {}", text(&out.stderr)));
    let strings = |k: &str| -> Vec<String> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    (strings("added_labels"), strings("taints"))
}

/// PATCH as the cluster admin (another owner, NFD).
fn admin_patch(cluster: &Cluster, node: &str, body: &str) {
    let (code, answer) = cluster.request(
        "PATCH",
        &format!("/api/v1/nodes/{node}"),
        "application/merge-patch+json",
        body,
    );
    assert_eq!(code, 200, "{answer}");
}

/// Register through the real kubelet with the wrapper's flags for `tree`.
fn register(cluster: &Cluster, node: &str, tree: &Path) {
    let _serial = realcluster::one_kubelet_at_a_time();
    let (labels, taints) = predicted(tree);
    cluster.delete_node(node);
    let out = Command::new("bash")
        .arg(realcluster::tools_dir().join("register.sh"))
        .arg(format!("--node-labels={}", labels.join(",")))
        .arg(format!("--register-with-taints={}", taints.join(",")))
        .env("RC_DIR", &cluster.dir)
        .env("NODE_NAME", node)
        .env("SETTLE", "0")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "register.sh: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn labels_follow_the_tree_and_nothing_else_is_touched() {
    let Some(cluster) = cluster() else { return };
    let node = "rs-sync";
    let dir = scratch_dir();
    let root = dir.path().join("root");
    let kubeconfig = cluster.dir.join(format!("node-{node}.kubeconfig"));
    tree(
        &root,
        "example.com/tier=gold,example.com/gone=1,node.kubernetes.io/pool=,example.com/foreign=x",
        "example.com/t=1:NoSchedule",
    );
    register(cluster, node, &root);
    // Another owner takes example.com/foreign; NFD owns one key.
    admin_patch(
        cluster,
        node,
        r#"{"metadata":{"labels":{"example.com/foreign":"theirs","feature.node.kubernetes.io/nfd-key":"1"},
            "annotations":{"nfd.node.kubernetes.io/feature-labels":"nfd-key"}}}"#,
    );

    // The first sync adopts what registration set (same values).
    let out = sync(&root, &kubeconfig, &[]);
    let (before, _, ann, _) = stored(cluster, node);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("adopted"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        ann["kubelet-labeler.io/owned-labels"], "example.com/{gone,tier},node.kubernetes.io/pool",
        "{ann}"
    );

    // The configuration changes: a label changes, one goes, one comes; a
    // key NFD owns, another owner's key, the pool label and a key
    // NodeRestriction forbids are derived too; the taint changes.
    env(
        &root,
        "example.com/tier=silver,example.com/new=1,feature.node.kubernetes.io/nfd-key=2,\
         example.com/foreign=mine,node.kubernetes.io/pool=other,node-role.kubernetes.io/worker=",
        "example.com/t=2:NoSchedule",
    );
    let (_, taints_before, _, rv) = stored(cluster, node);
    let dry = sync(&root, &kubeconfig, &["--dry-run"]);
    let lines = text(&dry.stdout);
    assert_eq!(dry.status.code(), Some(1), "{}", text(&dry.stderr));
    for want in [
        "change example.com/tier=gold -> silver (ours, derived value changed)",
        "remove example.com/gone=1 (ours, no longer derived)",
        "add    example.com/new=1 (derived, absent)",
        "leave  example.com/foreign=theirs (derived: mine) (another owner's value)",
        "leave  feature.node.kubernetes.io/nfd-key=1 (derived: 2) (NFD owns it",
        "leave  node-role.kubernetes.io/worker=<absent> (derived: ) (NodeRestriction forbids",
        "leave  node.kubernetes.io/pool= (derived: other) (it selects the node's pool",
        "drift  taint example.com/t=1:NoSchedule should be example.com/t=2:NoSchedule",
    ] {
        assert!(lines.contains(want), "{want:?} not in:\n{lines}");
    }
    assert_eq!(stored(cluster, node).3, rv, "--dry-run wrote");
    // Its lines into a full disk: an error, as for every command.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["sync", "--profile", "openshift", "--dry-run", "--root"])
        .arg(&root)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--pool-label", "node.kubernetes.io/pool"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("writing to stdout: No space left on device"),
        "{}",
        text(&out.stderr)
    );

    let out = sync(&root, &kubeconfig, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let (labels, taints, ann, rv) = stored(cluster, node);
    let mut want = before.clone();
    want.insert("example.com/tier".into(), "silver".into());
    want.insert("example.com/new".into(), "1".into());
    want.remove("example.com/gone");
    assert_eq!(labels, want, "{}", text(&out.stderr));
    assert_eq!(taints, taints_before, "taints are never sent");
    assert_eq!(
        ann["kubelet-labeler.io/owned-labels"],
        "example.com/{new,tier},node.kubernetes.io/pool"
    );
    // The label the sync added is managed by it (its field manager), not
    // by curl.
    let node_now = cluster.node(node).expect("the Node");
    let managers: Vec<&str> = node_now["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["fieldsV1"].to_string().contains("f:example.com/new"))
        .map(|m| m["manager"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(managers, ["kubelet-labeler"], "{node_now}");

    // A second run sends no write.
    let again = sync(&root, &kubeconfig, &[]);
    assert!(
        text(&again.stderr).contains("up to date"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(stored(cluster, node).3, rv, "a second run wrote");

    // With the pool label allowed, it follows too (it is ours: registered).
    let out = sync(&root, &kubeconfig, &["--allow-pool-label"]);
    assert_eq!(
        stored(cluster, node).0["node.kubernetes.io/pool"],
        "other",
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn api_server_down_bad_inputs_and_other_identities() {
    let Some(cluster) = cluster() else { return };
    let node = "rs-down";
    let dir = scratch_dir();
    let root = dir.path().join("root");
    tree(&root, "example.com/a=1", "");
    register(cluster, node, &root);
    // The first sync after registration adopts what it set.
    let kubeconfig = cluster.dir.join(format!("node-{node}.kubeconfig"));
    let out = sync(&root, &kubeconfig, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    env(&root, "example.com/a=2", "");
    let rv = stored(cluster, node).3;

    // The API server unreachable: bounded retries, one line, nothing changed.
    let down = dir.path().join("down.kubeconfig");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    write(
        &down,
        &std::fs::read_to_string(&kubeconfig)
            .unwrap()
            .replace(&cluster.api, &format!("https://127.0.0.1:{port}")),
    );
    let t = std::time::Instant::now();
    let out = sync(&root, &down, &["--max-wait", "3"]);
    let err = text(&out.stderr);
    // 75: the service starts it again a minute later.
    assert_eq!(
        out.status.code(),
        Some(kubelet_labeler::node::sync::run::EXIT_RETRY_LATER),
        "{err}"
    );
    assert!(
        err.contains("nothing changed") && err.contains("unreachable"),
        "{err}"
    );
    assert!(t.elapsed().as_secs() < 20);
    assert_eq!(err.lines().count(), 1, "{err}");

    // Bad inputs: one line naming the input, exit 2, nothing changed.
    let missing = dir.path().join("nope.kubeconfig");
    let admin = cluster.dir.join("admin.kubeconfig");
    let other = cluster.dir.join("node-rs-sync.kubeconfig");
    let bad_ca = dir.path().join("bad-ca.kubeconfig");
    write(
        &bad_ca,
        &std::fs::read_to_string(&kubeconfig)
            .unwrap()
            .replace("pki/ca.crt", "pki/admin.crt"),
    );
    for (k, code, says) in [
        (&missing, 2, format!("kubeconfig {}", missing.display())),
        (
            &admin,
            2,
            "not a node's (CN=system:node:<name>)".to_string(),
        ),
        (&bad_ca, 1, "CA does not verify".to_string()),
    ] {
        let out = sync(&root, k, &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{k:?}: {err}");
        assert!(err.contains(&says), "{k:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // Another node's kubeconfig for a tree whose kubelet registers as this
    // node: refused before any request.
    write(
        &root.join("etc/systemd/system/kubelet.service"),
        &format!(
            "[Service]\nExecStart=/usr/bin/kubelet --kubeconfig=/etc/kubernetes/kubelet.conf --hostname-override={node}\n"
        ),
    );
    let out = sync(&root, &other, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("its certificate is node rs-sync's, but kubelet registers as rs-down"),
        "{err}"
    );
    assert_eq!(stored(cluster, node).3, rv, "a failed run wrote");
    // And back: the same run succeeds.
    let out = sync(&root, &kubeconfig, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(stored(cluster, node).0["example.com/a"], "2");

    // The client certificate replaced between runs (as kubelet rotates
    // it, key and certificate in one file): the next run reads the new one.
    let pki = cluster.dir.join("pki");
    let pem = dir.path().join("kubelet-client-current.pem");
    let (key, csr, crt) = (
        dir.path().join("k.pem"),
        dir.path().join("r.csr"),
        dir.path().join("c.pem"),
    );
    let openssl = |args: &[&std::ffi::OsStr]| {
        let o = Command::new("openssl").args(args).output().unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
    };
    openssl(&[
        "req".as_ref(),
        "-new".as_ref(),
        "-newkey".as_ref(),
        "ec".as_ref(),
        "-pkeyopt".as_ref(),
        "ec_paramgen_curve:P-256".as_ref(),
        "-nodes".as_ref(),
        "-keyout".as_ref(),
        key.as_os_str(),
        "-out".as_ref(),
        csr.as_os_str(),
        "-subj".as_ref(),
        format!("/O=system:nodes/CN=system:node:{node}").as_ref(),
    ]);
    openssl(&[
        "x509".as_ref(),
        "-req".as_ref(),
        "-in".as_ref(),
        csr.as_os_str(),
        "-CA".as_ref(),
        pki.join("ca.crt").as_os_str(),
        "-CAkey".as_ref(),
        pki.join("ca.key").as_os_str(),
        "-CAcreateserial".as_ref(),
        "-days".as_ref(),
        "1".as_ref(),
        "-out".as_ref(),
        crt.as_os_str(),
    ]);
    let mut both = std::fs::read(&crt).unwrap();
    both.extend(std::fs::read(&key).unwrap());
    std::fs::write(&pem, both).unwrap();
    let rotated = dir.path().join("rotated.kubeconfig");
    let text_k = std::fs::read_to_string(&kubeconfig).unwrap();
    let rotated_text: String = text_k
        .lines()
        .map(|l| {
            let t = l.trim_start();
            let indent = &l[..l.len() - t.len()];
            if t.starts_with("client-certificate:") {
                format!("{indent}client-certificate: {}", pem.display())
            } else if t.starts_with("client-key:") {
                format!("{indent}client-key: {}", pem.display())
            } else {
                l.to_string()
            }
        })
        .map(|l| l + "\n")
        .collect();
    write(&rotated, &rotated_text);
    env(&root, "example.com/a=3", "");
    let out = sync(&root, &rotated, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(stored(cluster, node).0["example.com/a"], "3");
}

/// The env drop-in with the pool label as `render machineconfig` names it
/// (`contract::POOL_LABEL_VAR`): what the sync holds.
fn pool_env(dir: &Path, labels: &str, pool: &str) {
    write(
        &dir.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf"),
        &format!(
            "[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS={labels}\"\n\
             Environment=\"{}={pool}\"\n",
            kubelet_labeler::node::contract::POOL_LABEL_VAR
        ),
    );
}

/// The sync as the node runs it: the pool label from the env drop-in.
fn sync_as_node(tree: &Path, kubeconfig: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["sync", "--profile", "openshift", "--root"])
        .arg(tree)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .output()
        .unwrap()
}

/// Issue 33 item 9: `--pool-label` changes from pool-a to pool-b and the
/// new env drop-in reaches the node before the pools' new `nodeSelector`s.
/// The real API server's Node keeps pool-a at every run (its pool still
/// selects the node by it) until it is taken off cluster-side; then the
/// sync forgets it, and follows pool-b once the Node has it.
#[test]
fn a_pool_label_change_never_takes_the_node_out_of_its_pool() {
    let Some(cluster) = cluster() else { return };
    let node = "rs-pool";
    let dir = scratch_dir();
    let root = dir.path().join("root");
    let kubeconfig = cluster.dir.join(format!("node-{node}.kubeconfig"));
    let (a, b) = ("node.kubernetes.io/pool-a", "node.kubernetes.io/pool-b");
    tree(&root, "", "");
    pool_env(&root, &format!("example.com/x=1,{a}="), a);
    register(cluster, node, &root);
    let out = sync_as_node(&root, &kubeconfig);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (_, _, ann, _) = stored(cluster, node);
    assert_eq!(ann["kubelet-labeler.io/pool-labels"], a, "{ann}");

    pool_env(&root, &format!("example.com/x=1,{b}="), b);
    let mut rv = String::new();
    for run in 1..=3 {
        let out = sync_as_node(&root, &kubeconfig);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "run {run}: {err}");
        assert!(
            err.contains(&format!("(left {a}=: it was the node's pool label")),
            "run {run}: {err}"
        );
        let (labels, _, ann, now) = stored(cluster, node);
        assert_eq!(labels.get(a).map(String::as_str), Some(""), "run {run}");
        assert!(!labels.contains_key(b), "run {run}: pool-b is held too");
        assert_eq!(
            ann["kubelet-labeler.io/pool-labels"],
            format!("node.kubernetes.io/{{pool-a,pool-b}}"),
            "run {run}"
        );
        if run > 1 {
            assert_eq!(now, rv, "run {run} wrote");
        }
        rv = now;
    }
    // The pools moved: the admin labels the node for pool-b and takes
    // pool-a off. The sync adopts pool-b and forgets pool-a.
    admin_patch(
        cluster,
        node,
        &format!(r#"{{"metadata":{{"labels":{{"{a}":null,"{b}":""}}}}}}"#),
    );
    let out = sync_as_node(&root, &kubeconfig);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (labels, _, ann, _) = stored(cluster, node);
    assert_eq!(labels.get(b).map(String::as_str), Some(""));
    assert_eq!(ann["kubelet-labeler.io/pool-labels"], b, "{ann}");
    assert_eq!(
        ann["kubelet-labeler.io/owned-labels"],
        format!("example.com/x,{b}"),
        "{ann}"
    );
}

/// The TaintDrift Events posted about `node`.
fn drift_events(cluster: &Cluster, node: &str) -> usize {
    let (code, body) = cluster.get(&format!(
        "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name={node},reason=TaintDrift"
    ));
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["items"].as_array().map_or(0, Vec::len)
}

/// Issue 32 item 13: a taint the configuration no longer derives is
/// reported at every run (exit 1, the journal line) until the Node loses
/// it, not once; its Event is posted once; gone, the runs say up to date.
#[test]
fn taint_drift_is_reported_until_it_is_gone_and_told_once() {
    let Some(cluster) = cluster() else { return };
    let node = "rs-drift";
    let dir = scratch_dir();
    let root = dir.path().join("root");
    let kubeconfig = cluster.dir.join(format!("node-{node}.kubeconfig"));
    tree(&root, "example.com/a=1", "nvidia.com/gpu=true:NoSchedule");
    register(cluster, node, &root);
    let out = sync(&root, &kubeconfig, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The GPUs left the machine: the taint is no longer derived.
    env(&root, "example.com/a=1", "");
    let mut rv = String::new();
    for run in 1..=3 {
        let out = sync(&root, &kubeconfig, &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "run {run}: {err}");
        assert!(
            err.contains("taint nvidia.com/gpu=true:NoSchedule is no longer derived"),
            "run {run}: {err}"
        );
        assert_eq!(drift_events(cluster, node), 1, "run {run}: one Event");
        let (_, taints, _, now) = stored(cluster, node);
        assert!(taints.contains(&"nvidia.com/gpu=true:NoSchedule".to_string()));
        if run > 1 {
            assert_eq!(now, rv, "run {run} wrote");
        }
        rv = now;
    }
    // Lifted cluster-side: the next run says so and forgets the drift.
    admin_patch(cluster, node, r#"{"spec":{"taints":null}}"#);
    let out = sync(&root, &kubeconfig, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (_, _, ann, _) = stored(cluster, node);
    assert!(ann.get("kubelet-labeler.io/taint-drift").is_none(), "{ann}");
    let out = sync(&root, &kubeconfig, &[]);
    assert!(
        text(&out.stderr).ends_with("up to date\n"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 32 item 12: what the first sync adds to a Node (sent to every
/// watcher of Nodes at each write) with NFD's label set of the DGX fixture
/// and three static labels, 89 keys: measured on the Node as stored.
#[test]
fn the_first_sync_adds_little_to_the_node() {
    let Some(cluster) = cluster() else { return };
    let node = "rs-size";
    let dir = scratch_dir();
    let root = dir.path().join("root");
    let kubeconfig = cluster.dir.join(format!("node-{node}.kubeconfig"));
    tree(
        &root,
        "example.com/tier=gold,example.com/rack=r1,node.kubernetes.io/worker-gpu=",
        "",
    );
    let env_path = root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf");
    let mut text_env = std::fs::read_to_string(&env_path).unwrap();
    text_env += "Environment=KUBELET_LABELER_NFD_LABELS=openshift\n";
    write(&env_path, &text_env);
    let facts = crate::support::repo().join("tests/fixtures/nodes/dgx");
    // `explain` predicts with these facts what the wrapper registers.
    let facts_arg = ["--facts-root", facts.to_str().unwrap()];
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["explain", "--json", "--profile", "openshift", "--root"])
        .arg(&root)
        .args(facts_arg)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("explain: {e}: {}", text(&out.stderr)));
    let labels: Vec<String> = v["added_labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    assert_eq!(labels.len(), 89, "{labels:?}");
    {
        let _serial = realcluster::one_kubelet_at_a_time();
        cluster.delete_node(node);
        let out = Command::new("bash")
            .arg(realcluster::tools_dir().join("register.sh"))
            .arg(format!("--node-labels={}", labels.join(",")))
            .env("RC_DIR", &cluster.dir)
            .env("NODE_NAME", node)
            .env("SETTLE", "0")
            .output()
            .unwrap();
        assert!(out.status.success(), "register.sh: {}", text(&out.stderr));
    }
    let size = || cluster.get(&format!("/api/v1/nodes/{node}")).1.len();
    let before = size();
    let out = sync(&root, &kubeconfig, &facts_arg);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("adopted"),
        "{}",
        text(&out.stderr)
    );
    let after = size();
    let (_, _, ann, _) = stored(cluster, node);
    let owned = ann["kubelet-labeler.io/owned-labels"].as_str().unwrap();
    eprintln!(
        "rs-size: Node {before} bytes registered, {after} after the first sync; owned-labels {} bytes for 89 keys",
        owned.len()
    );
    // Earlier releases: the plain list, 4,069 bytes, and the Node 4.2 KB
    // bigger.
    assert!(owned.len() < 1000, "{owned}");
    assert!(after - before < 1500, "{before} -> {after}");
}

/// Issue 33 item 11: `explain`'s `sync:` section against what the real
/// sync does. A Node registered without our labels; the sync, run as the
/// node runs it (the service's own arguments, the pool label from the env
/// drop-in), sets exactly the labels explain says it writes, and none of
/// those explain says it only reports (the pool label, a key
/// NodeRestriction forbids a node to change), which stay absent.
#[test]
fn explain_says_what_the_sync_writes() {
    let Some(cluster) = cluster() else { return };
    let node = "rs-explain";
    let dir = scratch_dir();
    let root = dir.path().join("root");
    let kubeconfig = cluster.dir.join(format!("node-{node}.kubeconfig"));
    let pool = "node.kubernetes.io/explain-pool";
    tree(&root, "", "");
    pool_env(
        &root,
        &format!("example.com/a=1,example.com/b=2,node-role.kubernetes.io/worker=,{pool}="),
        pool,
    );
    use kubelet_labeler::cli::render::sync_units;
    use kubelet_labeler::node::kubelet::Profile;
    write(
        &root
            .join("etc/systemd/system")
            .join(sync_units::SYNC_SERVICE),
        &sync_units::sync_service(Profile::OpenShift, "kubelet.service", Some(pool)),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["explain", "--json", "--profile", "openshift", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("explain: {e}: {}", text(&out.stderr)));
    let sync = &v["sync"];
    let writes: Vec<String> = sync["labels"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    let reported: Vec<String> = sync["reported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(writes, ["example.com/a=1", "example.com/b=2"], "{sync}");
    assert_eq!(
        reported,
        [
            "node-role.kubernetes.io/worker=".to_string(),
            format!("{pool}=")
        ],
        "{sync}"
    );
    {
        let _serial = realcluster::one_kubelet_at_a_time();
        cluster.delete_node(node);
        let out = Command::new("bash")
            .arg(realcluster::tools_dir().join("register.sh"))
            .arg("--node-labels=")
            .env("RC_DIR", &cluster.dir)
            .env("NODE_NAME", node)
            .env("SETTLE", "0")
            .output()
            .unwrap();
        assert!(out.status.success(), "register.sh: {}", text(&out.stderr));
    }
    let (before, ..) = stored(cluster, node);
    // The service's own arguments, as the node runs it.
    let args: Vec<String> =
        sync_units::sync_service(Profile::OpenShift, "kubelet.service", Some(pool))
            .lines()
            .find_map(|l| l.strip_prefix("ExecStart="))
            .and_then(|c| c.split(" sync ").nth(1))
            .unwrap()
            .trim_end_matches('\'')
            .split_whitespace()
            .map(String::from)
            .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .arg("sync")
        .args(&args)
        .arg("--root")
        .arg(&root)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .output()
        .unwrap();
    // Drift remains (the labels it may not send).
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let (after, ..) = stored(cluster, node);
    let gained: Vec<String> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    assert_eq!(gained, writes, "explain's writes against the stored Node");
    for r in &reported {
        let key = r.split_once('=').unwrap().0;
        assert!(!after.contains_key(key), "{key} was sent: {after:?}");
    }
}

/// A PATCH body past an argument's 128 KiB: 6,000 labels, within what
/// `--node-labels` takes (one word under 128 KiB), are some 180 KB as JSON
/// with the owned-labels annotation; the body reaches the real API server
/// whole (it went to curl as one argument, and exec refused it: E2BIG).
#[test]
fn a_patch_past_an_arguments_limit_is_synced() {
    let Some(cluster) = cluster() else { return };
    let node = "rs-big";
    let dir = scratch_dir();
    let root = dir.path().join("root");
    let kubeconfig = cluster.dir.join(format!("node-{node}.kubeconfig"));
    tree(&root, "example.com/tier=gold", "");
    register(cluster, node, &root);
    let labels: Vec<String> = (0..6000).map(|i| format!("example.com/l{i:05}=")).collect();
    let labels = labels.join(",");
    assert!(labels.len() < 128 << 10);
    env(&root, &labels, "");
    let out = sync(&root, &kubeconfig, &[]);
    let err = text(&out.stderr);
    let head = &err[..err.len().min(400)];
    assert_eq!(out.status.code(), Some(0), "{head}");
    let (stored, _, _, _) = stored(cluster, node);
    let ours = stored
        .keys()
        .filter(|k| k.starts_with("example.com/l"))
        .count();
    assert_eq!(ours, 6000, "{head}");
}
