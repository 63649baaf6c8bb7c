//! The whole chain with real programs: a real `systemd --user` runs a node
//! tree's `kubelet.service` (OpenShift's, or kubeadm's) with our
//! generator and drop-ins as `render dropins` writes them; the wrapper execs
//! the real kubelet (OpenShift's 1.36), which registers with a real
//! kube-apiserver (Node authorization, NodeRestriction). For each case the
//! Node as the API server stored it must carry exactly the labels and taints
//! `explain` predicts on the same tree, and the wrapper's journal line must
//! say what it added. One cluster serves the whole binary.

use crate::support::{mco, realcluster, repo, run_cli, systemd_oracle, write};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use kubelet_labeler::node::kubelet::Profile;
use realcluster::{ChainRun, Cluster, KubeletSetup, run_chain};

/// Every node name these tests register (each gets a client certificate).
pub const NODES: [&str; 9] = [
    "rc-static",
    "rc-taints",
    "rc-rules",
    "rc-nfd",
    "rc-kubeadm",
    "rc-guard",
    "rc-apirefuse",
    "rc-restart",
    "rc-port",
];

/// Taints that neither kubelet's flags nor its config give: the API
/// server's `TaintNodesByCondition` adds not-ready on create (no controller
/// runs here to lift it), and kubelet with `--cloud-provider=external` (the
/// OpenShift unit's, as the template is filled) registers uninitialized.
const NOT_READY: &str = "node.kubernetes.io/not-ready=:NoSchedule";
const UNINITIALIZED: &str = "node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule";

pub(crate) fn cluster() -> Option<&'static Cluster> {
    if systemd_oracle::unavailable().is_some() || realcluster::unavailable().is_some() {
        return None;
    }
    Some(realcluster::cluster())
}

/// The files every node tree needs: the manager's base targets, a CRI (the
/// fake one, standing in for CRI-O at its socket), kubelet at /usr/bin, and
/// the unit's output to a file (no journald here) with quick restarts.
fn base_tree(tree: &Path, scratch: &Path, cluster: &Cluster) {
    let sys = tree.join("etc/systemd/system");
    for t in [
        "default",
        "basic",
        "shutdown",
        "sockets",
        "timers",
        "paths",
        "exit",
        "kubelet-dependencies",
    ] {
        write(
            &sys.join(format!("{t}.target")),
            "[Unit]\nDescription=test\n",
        );
    }
    write(
        &sys.join("crio.service"),
        &format!(
            "[Unit]\nBefore=kubelet.service\n[Service]\nType=simple\n\
             ExecStartPre=/bin/mkdir -p /run/crio\n\
             ExecStart={} --socket /run/crio/crio.sock --fs-dir /run/fakecri-images\n\
             ExecStartPost=/bin/sh -c 'for i in $(seq 200); do [ -S /run/crio/crio.sock ] && exit 0; sleep 0.05; done; exit 1'\n",
            cluster.bin.join("fakecri").display()
        ),
    );
    let log = scratch.join("kubelet.journal");
    write(
        &sys.join("kubelet.service.d/50-test-journal.conf"),
        &format!(
            "# The test's journal, restarts quicker than the unit's own, and the\n\
             # container runtime up (kubeadm's unit does not ask for it).\n\
             [Service]\nStandardOutput=append:{l}\nStandardError=append:{l}\nRestartSec=300ms\n\
             [Unit]\nStartLimitIntervalSec=0\nWants=crio.service\nAfter=crio.service\n",
            l = log.display()
        ),
    );
    std::fs::create_dir_all(tree.join("usr/bin")).unwrap();
    std::os::unix::fs::symlink(cluster.bin.join("kubelet"), tree.join("usr/bin/kubelet")).unwrap();
}

/// OpenShift's worker kubelet.service (as MCO renders it) and its logging
/// drop-in, with the files it reads: MCO main's, the commit the kubelet was
/// built from. (4.20's passes `--pod-infra-container-image`, which kubelet
/// 1.36 no longer knows: it exits at once.)
fn mco_tree(tree: &Path, scratch: &Path, cluster: &Cluster, node: &str, config_extra: &str) {
    base_tree(tree, scratch, cluster);
    let fixtures = mco::fixtures_dir();
    let (_, unit) = mco::kubelet_units(&fixtures)
        .into_iter()
        .find(|(n, _)| {
            n == "main__templates__worker__01-worker-kubelet___base__units__kubelet.service.yaml"
        })
        .expect("the main worker kubelet.service");
    let sys = tree.join("etc/systemd/system");
    write(&sys.join("kubelet.service"), &unit);
    let logging = std::fs::read_to_string(
        fixtures.join("main__templates__common___base__files__kubelet-log-level.yaml"),
    )
    .unwrap();
    let body: Vec<&str> = logging
        .lines()
        .skip_while(|l| l.trim() != "inline: |")
        .skip(1)
        .map(|l| l.trim_start())
        .collect();
    write(
        &sys.join("kubelet.service.d/20-logging.conf"),
        &(body.join("\n") + "\n"),
    );
    let etc = tree.join("etc");
    write(
        &etc.join("os-release"),
        "NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhcos\"\nVERSION_ID=\"4.22\"\n",
    );
    write(
        &etc.join("node-sizing.env"),
        "SYSTEM_RESERVED_MEMORY=1Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n",
    );
    write(
        &etc.join("kubernetes/kubelet-env"),
        &format!("KUBELET_NODE_NAME={node}\n"),
    );
    let ks = KubeletSetup::new();
    write(
        &etc.join("kubernetes/kubelet.conf"),
        &ks.config("/var/run/crio/crio.sock", config_extra),
    );
    let kubeconfig = cluster.kubeconfig(node);
    write(&etc.join("kubernetes/kubeconfig"), &kubeconfig);
    write(&tree.join("var/lib/kubelet/kubeconfig"), &kubeconfig);
    // The image credential provider the filled template names (AWS's).
    write(
        &etc.join("kubernetes/credential-providers/ecr-credential-provider.yaml"),
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n\
         - name: ecr-credential-provider\n  matchImages: [\"*.dkr.ecr.*.amazonaws.com\"]\n\
         \x20 defaultCacheDuration: 12h\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n",
    );
    let ecr =
        tree.join("usr/libexec/kubelet-image-credential-provider-plugins/ecr-credential-provider");
    write(&ecr, "#!/bin/sh\nexit 1\n");
    chmod_x(&ecr);
    // RHCOS's kubenswrapper enters kubelet's mount namespace when
    // kubens.service made one; without it, it runs its arguments.
    let kubens = tree.join("usr/local/bin/kubenswrapper");
    write(&kubens, "#!/bin/sh\nexec \"$@\"\n");
    // What the unit's ExecStartPre= makes before the wrapper runs.
    std::fs::create_dir_all(etc.join("openshift/kubelet.conf.d")).unwrap();
    chmod_x(&kubens);
}

/// kubeadm's kubelet.service and 10-kubeadm.conf; `joined`: the files
/// `kubeadm join` writes are there (else `join_files` returns them).
fn kubeadm_tree(tree: &Path, scratch: &Path, cluster: &Cluster, node: &str, extra_args: &str) {
    base_tree(tree, scratch, cluster);
    let sys = tree.join("etc/systemd/system");
    write(
        &sys.join("kubelet.service"),
        "[Unit]\nDescription=kubelet: The Kubernetes Node Agent\nWants=network-online.target\n\
         [Service]\nExecStart=/usr/bin/kubelet\nRestart=always\nStartLimitInterval=0\nRestartSec=10\n\
         [Install]\nWantedBy=multi-user.target\n",
    );
    write(
        &sys.join("kubelet.service.d/10-kubeadm.conf"),
        "[Service]\n\
         Environment=\"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf\"\n\
         Environment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\"\n\
         EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n\
         EnvironmentFile=-/etc/default/kubelet\n\
         ExecStart=\n\
         ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n",
    );
    write(
        &tree.join("var/lib/kubelet/kubeadm-flags.env"),
        &format!(
            "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///run/crio/crio.sock --hostname-override={node}\"\n"
        ),
    );
    write(
        &tree.join("etc/default/kubelet"),
        &format!("KUBELET_EXTRA_ARGS=--v=2 {extra_args}\n"),
    );
}

/// What `kubeadm join` writes: kubelet's config, its bootstrap kubeconfig
/// and (here at once, with no CSR signer running) the kubeconfig kubelet's
/// TLS bootstrap would write.
fn join_files(cluster: &Cluster, node: &str, config_extra: &str) -> [(String, String); 3] {
    let ks = KubeletSetup::new();
    [
        (
            "/var/lib/kubelet/config.yaml".into(),
            ks.config("/run/crio/crio.sock", config_extra),
        ),
        (
            "/etc/kubernetes/bootstrap-kubelet.conf".into(),
            cluster.kubeconfig(node),
        ),
        (
            "/etc/kubernetes/kubelet.conf".into(),
            cluster.kubeconfig(node),
        ),
    ]
}

fn chmod_x(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn cli(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubelet-labeler {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `render dropins` into the tree: the wrapper, the generator, the env drop-in.
fn render(tree: &Path, profile: &str, args: &[&str]) {
    let root = tree.display().to_string();
    let mut a = vec![
        "render",
        "dropins",
        "--root",
        &root,
        "--profile",
        profile,
        "--wrapper",
        run_cli::stand_in_wrapper().to_str().unwrap(),
    ];
    a.extend(args);
    cli(&a);
    // render takes only a static wrapper and the cargo-built one is dynamic:
    // the stand-in gets the rendered tree, then the built wrapper runs in it.
    let installed = tree.join(format!(
        "{}.{}",
        kubelet_labeler::node::contract::WRAPPER_PATH.trim_start_matches('/'),
        std::env::consts::ARCH
    ));
    std::fs::copy(env!("CARGO_BIN_EXE_kubelet-labeler-wrapper"), &installed).unwrap();
}

/// `explain --json` on the tree.
/// (It exits 1, still printing its answer, when the wrapper would leave
/// our additions out.)
fn explain(tree: &Path, profile: &str, extra: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["explain", "--json", "--root"])
        .arg(tree)
        .args(["--profile", profile])
        .args(extra)
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("explain: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    let left_out = !json["left_out"].is_null();
    assert_eq!(
        out.status.code(),
        Some(i32::from(left_out)),
        "explain's status: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// The labels kubelet registers with for `argv` (every `--node-labels`,
/// a later key winning, over its own default labels) and the taints of its
/// flag (`None`: no flag; the config's list applies).
fn registered_by(
    argv: &[String],
    profile: Profile,
    node: &str,
) -> (BTreeMap<String, String>, Option<Vec<String>>) {
    let report = kubelet_labeler::cli::validate::validate_kubelet_args(&argv[1..], profile);
    assert!(
        report.valid,
        "explain's argv is invalid: {:?}",
        report.errors
    );
    let mut labels: BTreeMap<String, String> = [
        ("kubernetes.io/hostname", node),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", "amd64"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for kv in &report.labels {
        let (k, v) = kv.split_once('=').unwrap();
        labels.insert(k.to_string(), v.to_string());
    }
    let has_flag = argv.iter().any(|w| w.starts_with("--register-with-taints"));
    (labels, has_flag.then_some(report.taints))
}

/// The case's Node as stored must be what explain predicted: its labels
/// exactly, its taints exactly besides the API server's and the cloud
/// provider's. `config_taints`: kubelet's config list, when no flag is set.
fn assert_node_as_explained(
    cluster: &Cluster,
    node: &str,
    ex: &serde_json::Value,
    profile: Profile,
    config_taints: &[&str],
    run: &ChainRun,
) {
    let stored = cluster
        .node(node)
        .unwrap_or_else(|| panic!("{node}: no Node stored\n{}\n{}", run.journal, run.output));
    let (labels, mut taints) = realcluster::labels_and_taints(&stored);
    let argv = strings(&ex["argv"]);
    let (want_labels, flag_taints) = registered_by(&argv, profile, node);
    assert_eq!(
        labels,
        want_labels,
        "{node}: labels as stored vs explain's argv {argv:?}\n{}",
        run.summary()
    );
    let mut want_taints: Vec<String> = match flag_taints {
        Some(t) => t,
        None => config_taints.iter().map(|s| s.to_string()).collect(),
    };
    if !strings(&ex["taints"]).is_empty() {
        assert_eq!(
            strings(&ex["taints"]),
            want_taints,
            "{node}: explain's taints are its flag's"
        );
    }
    want_taints.push(NOT_READY.into());
    if argv.iter().any(|w| w == "--cloud-provider=external") {
        want_taints.push(UNINITIALIZED.into());
    }
    want_taints.sort();
    taints.sort();
    assert_eq!(
        taints,
        want_taints,
        "{node}: taints as stored\n{}",
        run.summary()
    );
}

/// The wrapper's line of a start that added `ex`'s labels and taints.
fn assert_line_says_added(line: &str, ex: &serde_json::Value) {
    let labels = strings(&ex["added_labels"]);
    let taints = strings(&ex["taints"]);
    let mut want = String::from("kubelet-labeler: starting kubelet with");
    if !labels.is_empty() {
        want += &format!(" --node-labels={}", labels.join(","));
    }
    if !taints.is_empty() {
        want += &format!(" --register-with-taints={}", taints.join(","));
    }
    assert!(
        line.starts_with(&want),
        "journal line\n  {line}\nwant start\n  {want}"
    );
}

/// Shell steps: start kubelet, wait for its registration, print how long.
pub(crate) const START_AND_REGISTER: &str = "t0=$(date +%s%N)\n\
    systemctl --user start --no-block kubelet.service\n\
    wait_log 'Successfully registered node' 60 && echo registered_ms=$(( ($(date +%s%N) - t0) / 1000000 ))\n";

fn timing(case: &str, run: &ChainRun) {
    let reg = run
        .output
        .lines()
        .find_map(|l| l.strip_prefix("registered_ms="))
        .unwrap_or("-");
    eprintln!(
        "TIMING {case}: whole run {:.2} s, kubelet start to registered {reg} ms",
        run.secs
    );
}

fn scratch_for(case: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(&format!("real-chain-{case}-"))
        .tempdir()
        .unwrap();
    let scratch = dir.path().to_path_buf();
    let tree = scratch.join("root");
    (dir, scratch, tree)
}

/// A case on OpenShift's unit: its scratch dir (kept while the guard
/// lives), the node tree, and `render dropins` with `args` into it.
pub(crate) fn openshift_case(
    cluster: &Cluster,
    node: &str,
    args: &[&str],
) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (d, scratch, tree) = scratch_for(node);
    mco_tree(&tree, &scratch, cluster, node, "");
    render(&tree, "openshift", args);
    (d, scratch, tree)
}

/// Runs `steps` on the tree with the case's Node deleted first, printing
/// its timing.
pub(crate) fn start(
    cluster: &Cluster,
    node: &str,
    scratch: &Path,
    tree: &Path,
    steps: &str,
) -> ChainRun {
    cluster.delete_node(node);
    let run = run_chain(cluster, scratch, tree, node, steps);
    timing(node, &run);
    run
}

/// Starts kubelet once on the OpenShift tree: the Node must be as `ex`
/// predicts and the wrapper's one line must say what it added.
fn start_once_as_explained(
    cluster: &Cluster,
    node: &str,
    scratch: &Path,
    tree: &Path,
    ex: &serde_json::Value,
) -> ChainRun {
    let run = start(cluster, node, scratch, tree, START_AND_REGISTER);
    assert_node_as_explained(cluster, node, ex, Profile::OpenShift, &[], &run);
    let lines = run.wrapper_lines();
    assert_eq!(lines.len(), 1, "{}", run.summary());
    assert_line_says_added(lines[0], ex);
    run
}

/// explain on the tree with a fixture machine's facts, as the wrapper
/// reads them there (see `facts_root_dropin`).
fn explain_on_fixture(tree: &Path, fixture: &str) -> serde_json::Value {
    facts_root_dropin(tree, fixture);
    let facts = repo().join("tests/fixtures/nodes").join(fixture);
    explain(
        tree,
        "openshift",
        &["--facts-root", facts.to_str().unwrap()],
    )
}

/// Static labels through OpenShift's unit.
#[test]
fn static_labels_on_openshift() {
    let Some(cluster) = cluster() else { return };
    let node = "rc-static";
    let (_d, scratch, tree) = openshift_case(
        cluster,
        node,
        &[
            "--label",
            "node.kubernetes.io/worker-gpu=",
            "--label",
            "example.com/tier=gold",
        ],
    );
    let ex = explain(&tree, "openshift", &[]);
    assert_eq!(
        strings(&ex["added_labels"]),
        ["node.kubernetes.io/worker-gpu=", "example.com/tier=gold"]
    );
    let run = start_once_as_explained(cluster, node, &scratch, &tree, &ex);
    // The drop-in came from our generator.
    assert!(
        run.prop("DropInPaths")
            .contains("generator/kubelet.service.d/zz-kubelet-labeler.conf"),
        "{:?}",
        run.props
    );
}

/// Our taint merged with the config file's and a `--config-dir` drop-in's
/// `registerWithTaints` (OpenShift's unit has `--config-dir
/// /etc/openshift/kubelet.conf.d`): the drop-in's list replaces the file's,
/// and our flag, which replaces both, carries it with ours.
#[test]
fn taints_merge_with_config_and_config_dir() {
    let Some(cluster) = cluster() else { return };
    let node = "rc-taints";
    let (_d, scratch, tree) = scratch_for(node);
    mco_tree(
        &tree,
        &scratch,
        cluster,
        node,
        "registerWithTaints:\n- {key: example.com/from-config, effect: NoExecute}\n",
    );
    write(
        &tree.join("etc/openshift/kubelet.conf.d/10-taints.conf"),
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
         registerWithTaints:\n- key: example.com/from-dropin\n  value: \"yes\"\n  effect: PreferNoSchedule\n",
    );
    render(
        &tree,
        "openshift",
        &[
            "--label",
            "node.kubernetes.io/gpu=",
            "--taint",
            "nvidia.com/gpu=true:NoSchedule",
        ],
    );
    let ex = explain(&tree, "openshift", &[]);
    assert_eq!(
        strings(&ex["taints"]),
        [
            "example.com/from-dropin=yes:PreferNoSchedule",
            "nvidia.com/gpu=true:NoSchedule"
        ]
    );
    start_once_as_explained(cluster, node, &scratch, &tree, &ex);
}

/// Node rules on a fixture machine (a DGX-like node: NVIDIA GPUs): seed
/// 002's rule taints it, read from the fixture's /sys and /proc.
#[test]
fn node_rules_taint_a_gpu_node() {
    let Some(cluster) = cluster() else { return };
    let node = "rc-rules";
    let rules = repo().join("examples/rules/openshift-gpu.yaml");
    let (_d, scratch, tree) = openshift_case(
        cluster,
        node,
        &[
            "--label",
            "node.kubernetes.io/worker-gpu=",
            "--rules",
            rules.to_str().unwrap(),
        ],
    );
    let ex = explain_on_fixture(&tree, "dgx");
    assert!(
        strings(&ex["taints"]).contains(&"nvidia.com/gpu=true:NoSchedule".to_string()),
        "{ex}"
    );
    let run = start_once_as_explained(cluster, node, &scratch, &tree, &ex);
    let lines = run.wrapper_lines();
    assert!(
        lines[0].contains("rules matched: nvidia-gpu-taint"),
        "{}",
        lines[0]
    );
}

/// NFD's openshift label set from the fixture DGX's hardware.
#[test]
fn nfd_labels_openshift() {
    let Some(cluster) = cluster() else { return };
    let node = "rc-nfd";
    let (_d, scratch, tree) = openshift_case(cluster, node, &["--nfd-labels", "openshift"]);
    let ex = explain_on_fixture(&tree, "dgx");
    let added = strings(&ex["added_labels"]);
    assert!(
        added.contains(&"feature.node.kubernetes.io/pci-10de.present=true".to_string()),
        "{added:?}"
    );
    start_once_as_explained(cluster, node, &scratch, &tree, &ex);
    eprintln!("{node}: {} NFD labels registered", added.len());
}

/// The facts of a fixture machine instead of this host's: an admin's
/// static drop-in of our name in /etc (it masks the generator's) with
/// `--facts-root`, and the same for the day-2 sync that kubelet's start
/// pulls in (else, when it runs before the Node is read, it adds this
/// host's labels).
fn facts_root_dropin(tree: &Path, fixture: &str) {
    let exe = format!(
        "{}.{}",
        kubelet_labeler::node::contract::WRAPPER_PATH,
        std::env::consts::ARCH
    );
    let facts = repo().join("tests/fixtures/nodes").join(fixture);
    let text = kubelet_labeler::cli::render::dropins::wrapper_dropin_at(Profile::OpenShift, &exe)
        .replace(
            "--profile openshift",
            &format!("--profile openshift --facts-root {}", facts.display()),
        );
    write(
        &tree.join("etc/systemd/system/kubelet.service.d/zz-kubelet-labeler.conf"),
        &text,
    );
    let sync =
        std::fs::read_to_string(tree.join("etc/systemd/system/kubelet-labeler-sync.service"))
            .expect("the rendered sync service");
    let exec = sync
        .lines()
        .find(|l| l.starts_with("ExecStart="))
        .and_then(|l| l.strip_suffix('\''))
        .expect("the sync's ExecStart=, a quoted sh -c");
    write(
        &tree.join("etc/systemd/system/kubelet-labeler-sync.service.d/zz-facts-root.conf"),
        &format!(
            "[Service]\nExecStart=\n{exec} --facts-root {}'\n",
            facts.display()
        ),
    );
}

/// kubeadm before `join`: no config and no kubeconfig, kubelet exits at
/// every start (crash loop); the starts are not blamed on our labels, and
/// the first start after the join registers the Node labeled.
#[test]
fn kubeadm_crash_loop_then_join() {
    let Some(cluster) = cluster() else { return };
    let node = "rc-kubeadm";
    let (_d, scratch, tree) = scratch_for(node);
    kubeadm_tree(&tree, &scratch, cluster, node, "");
    render(
        &tree,
        "upstream",
        &[
            "--label",
            "node.kubernetes.io/worker-gpu=",
            "--label",
            "example.com/pool=a",
        ],
    );
    // What `kubeadm join` will write, staged outside the tree.
    let staged = scratch.join("join");
    let mut copy = String::new();
    // The kubeconfig first and kubelet's config last: the crash loop goes
    // on while they land, and a start that saw the bootstrap kubeconfig
    // without the other would ask for a certificate no signer here issues.
    for (path, text) in join_files(cluster, node, "").into_iter().rev() {
        let from = staged.join(path.trim_start_matches('/'));
        write(&from, &text);
        copy += &format!("install -D -m 600 {} {path}\n", from.display());
    }
    let steps = format!(
        "systemctl --user start --no-block kubelet.service\n\
         end=$(( $(date +%s) + 60 )); until [ \"$(restarts)\" -ge 3 ] || [ $(date +%s) -ge $end ]; do sleep 0.05; done\n\
         echo failed_starts_before_join=$(restarts) node_before_join=$(node_code)\n\
         {copy}t0=$(date +%s%N)\n\
         wait_log 'Successfully registered node' 60 && echo registered_ms=$(( ($(date +%s%N) - t0) / 1000000 ))\n"
    );
    let run = start(cluster, node, &scratch, &tree, &steps);
    assert!(
        run.output.contains("node_before_join=404"),
        "{}",
        run.summary()
    );
    // The tree as joined (the copies landed in it through the overlay).
    assert!(tree.join("var/lib/kubelet/config.yaml").is_file());
    let ex = explain(&tree, "upstream", &[]);
    assert_node_as_explained(cluster, node, &ex, Profile::Upstream, &[], &run);
    let lines = run.wrapper_lines();
    assert!(lines.len() >= 4, "{}", run.summary());
    for l in &lines {
        assert_line_says_added(l, &ex);
    }
}

/// A label the real kubelet refuses (carried in by the fault hook
/// `KUBELET_LABELER_FAULT=refused-label`, standing for a label our
/// validation missed, in kubelet's policed namespace): that start fails,
/// the crash-loop guard leaves such labels out of the next, and kubelet
/// registers the Node with the rest of ours.
#[test]
fn refused_label_costs_one_start() {
    let Some(cluster) = cluster() else { return };
    let node = "rc-guard";
    let (_d, scratch, tree) = openshift_case(cluster, node, &["--label", "example.com/tier=gold"]);
    write(
        &tree.join("etc/systemd/system/kubelet.service.d/60-fault.conf"),
        "[Service]\nEnvironment=KUBELET_LABELER_FAULT=refused-label\n",
    );
    let run = start(cluster, node, &scratch, &tree, START_AND_REGISTER);
    let lines = run.wrapper_lines();
    assert_eq!(lines.len(), 2, "{}", run.summary());
    assert!(
        lines[0].starts_with(
            "kubelet-labeler: starting kubelet with --node-labels=example.com/tier=gold,kubernetes.io/refused-by-kubelet="
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with(
            "kubelet-labeler: starting kubelet with --node-labels=example.com/tier=gold "
        ) && lines[1]
            .contains("the previous start with our additions failed within 10s (crash-loop guard"),
        "{}",
        lines[1]
    );
    assert!(
        run.journal
            .contains("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels"),
        "kubelet's own refusal: {}",
        run.summary()
    );
    assert_eq!(run.prop("NRestarts"), "1", "{}", run.summary());
    // The Node is what explain predicts (without the fault's label).
    let ex = explain(&tree, "openshift", &[]);
    assert_node_as_explained(cluster, node, &ex, Profile::OpenShift, &[], &run);
    let (labels, _) = realcluster::labels_and_taints(&cluster.node(node).unwrap());
    assert_eq!(labels["example.com/tier"], "gold", "{labels:?}");
}

/// Another process holds kubelet's port when it starts: the real kubelet
/// exits at once ("address already in use"), a quick failure that is no
/// refusal of our flags. The next start, the port free again, carries the
/// taint and the pool label (without them the node would register
/// untainted, and outside its pool).
#[test]
fn held_port_keeps_taints_and_pool_label() {
    let Some(cluster) = cluster() else { return };
    let node = "rc-port";
    let (_d, scratch, tree) = openshift_case(
        cluster,
        node,
        &[
            "--label",
            "node.kubernetes.io/worker-gpu=",
            "--label",
            "example.com/tier=gold",
            "--taint",
            "example.com/dedicated=gpu:NoSchedule",
        ],
    );
    let conf = std::fs::read_to_string(tree.join("etc/kubernetes/kubelet.conf")).unwrap();
    let port: u16 = conf
        .lines()
        .find_map(|l| l.strip_prefix("port: "))
        .and_then(|p| p.trim().parse().ok())
        .expect("the kubelet config's port");
    // Time to delete a Node the failed start might have made, and to free
    // the port, before the restart.
    write(
        &tree.join("etc/systemd/system/kubelet.service.d/70-restart.conf"),
        "[Service]\nRestartSec=3\n",
    );
    let ex = explain(&tree, "openshift", &[]);
    let held = scratch.join("held");
    let steps = format!(
        "/usr/bin/python3 -c 'import socket,sys,time\n\
         s=socket.socket(); s.bind((\"127.0.0.1\", {port})); s.listen()\n\
         open(sys.argv[1], \"w\").close(); time.sleep(120)' {held} &\n\
         holder=$!\n\
         for i in $(seq 100); do [ -e {held} ] && break; sleep 0.05; done\n\
         systemctl --user start --no-block kubelet.service\n\
         wait_log 'address already in use' 30\n\
         for i in $(seq 100); do [ \"$(restarts)\" -ge 1 ] && break; \
         [ \"$(systemctl --user show -p SubState --value kubelet.service)\" = auto-restart ] && break; \
         sleep 0.05; done\n\
         curl_admin -X DELETE \"$API/api/v1/nodes/$NODE\" >/dev/null 2>&1\n\
         kill $holder; wait $holder 2>/dev/null\n\
         wait_node 60 && wait_log 'Successfully registered node' 30\n",
        held = held.display()
    );
    let run = start(cluster, node, &scratch, &tree, &steps);
    assert!(
        run.journal.contains("address already in use"),
        "kubelet's own failure: {}",
        run.summary()
    );
    let lines = run.wrapper_lines();
    assert_eq!(lines.len(), 2, "{}", run.summary());
    for l in &lines {
        assert!(
            !l.contains("without our labels/taints"),
            "{}",
            run.summary()
        );
        assert_line_says_added(l, &ex);
    }
    assert_eq!(run.prop("NRestarts"), "1", "{}", run.summary());
    assert_node_as_explained(cluster, node, &ex, Profile::OpenShift, &[], &run);
    let (labels, taints) = realcluster::labels_and_taints(&cluster.node(node).unwrap());
    assert!(
        labels.contains_key("node.kubernetes.io/worker-gpu"),
        "{labels:?}"
    );
    assert!(
        taints
            .iter()
            .any(|t| t == "example.com/dedicated=gpu:NoSchedule"),
        "{taints:?}"
    );
}

/// The day-2 sync's units in a case's tree.
const SYNC_UNITS: [&str; 3] = [
    "etc/systemd/system/kubelet.service.d/91-kubelet-labeler-sync.conf",
    "etc/systemd/system/kubelet-labeler-sync.service",
    "etc/systemd/system/kubelet-labeler-sync.path",
];

/// `node-role.kubernetes.io/master=-bad`: OpenShift's kubelet skips every
/// check of its five role labels and would start with it, and the API
/// server would refuse the Node (422) at every retry: the node would never
/// register. The wrapper checks role values as the API server does, starts
/// kubelet without our additions, and the Node registers; the journal line
/// names the label and the rule. (The env drop-in is hand-written: render
/// refuses the label.)
#[test]
fn label_the_api_server_refuses_is_left_out() {
    let Some(cluster) = cluster() else { return };
    let node = "rc-apirefuse";
    let (_d, scratch, tree) = openshift_case(cluster, node, &["--label", "example.com/tier=gold"]);
    write(
        &tree.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf"),
        "[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=example.com/tier=gold,node-role.kubernetes.io/master=-bad\"\n",
    );
    // Registration alone: the day-2 sync, started with kubelet, adds the
    // valid labels the wrapper left out, racing the check below (a run
    // of CI saw it win); the sync has its own tests.
    for unit in SYNC_UNITS {
        std::fs::remove_file(tree.join(unit)).unwrap();
    }
    let ex = explain(&tree, "openshift", &[]);
    assert!(
        ex["left_out"]
            .as_str()
            .is_some_and(|w| w.contains("node-role.kubernetes.io/master")),
        "{ex}"
    );
    let run = start(cluster, node, &scratch, &tree, START_AND_REGISTER);
    let lines = run.wrapper_lines();
    assert_eq!(lines.len(), 1, "{}", run.summary());
    assert_eq!(
        lines[0],
        format!(
            "kubelet-labeler: starting kubelet without our labels/taints: {}",
            ex["left_out"].as_str().unwrap()
        )
    );
    assert!(
        lines[0].contains("has an invalid value \"-bad\""),
        "{}",
        lines[0]
    );
    assert_node_as_explained(cluster, node, &ex, Profile::OpenShift, &[], &run);
}

/// A restart after registration: kubelet finds its Node (409 on create)
/// and applies none of the new labels or taints; the Node keeps what it
/// registered with, and the second start's line says so.
#[test]
fn restart_after_registration_keeps_the_node() {
    let Some(cluster) = cluster() else { return };
    let node = "rc-restart";
    let (_d, scratch, tree) = openshift_case(cluster, node, &["--label", "example.com/tier=gold"]);
    // kubelet's own behaviour on a restart, without the day-2 sync: its
    // path unit would otherwise update the Node when the env drop-in
    // changes, racing the check below (the sync has its own test).
    for unit in SYNC_UNITS {
        std::fs::remove_file(tree.join(unit)).unwrap();
    }
    let ex = explain(&tree, "openshift", &[]);
    // Then the labels change (a new MachineConfig) and kubelet restarts.
    let changed = scratch.join("changed-env.conf");
    write(
        &changed,
        "[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=example.com/tier=silver,example.com/new=1\"\n\
         Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=example.com/new=1:NoSchedule\"\n",
    );
    let steps = format!(
        "{START_AND_REGISTER}\
         cp {} /etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf\n\
         systemctl --user daemon-reload\n\
         : > \"$LOG.before-restart\"; cp \"$LOG\" \"$LOG.before-restart\"\n\
         systemctl --user restart kubelet.service\n\
         wait_log 'Node was previously registered' 60 && echo re_registered=1\n\
         sleep 1\n",
        changed.display()
    );
    let run = start(cluster, node, &scratch, &tree, &steps);
    assert!(run.output.contains("re_registered=1"), "{}", run.summary());
    let lines = run.wrapper_lines();
    assert_eq!(lines.len(), 2, "{}", run.summary());
    assert_line_says_added(lines[0], &ex);
    assert!(
        lines[1].starts_with(
            "kubelet-labeler: starting kubelet with --node-labels=example.com/tier=silver,example.com/new=1"
        ) && lines[1].ends_with(
            "(applied only when kubelet registers a new Node; an existing Node keeps its labels and taints)"
        ),
        "{}",
        lines[1]
    );
    // As first registered: the first tree's prediction, not the second's.
    assert_node_as_explained(cluster, node, &ex, Profile::OpenShift, &[], &run);
}
