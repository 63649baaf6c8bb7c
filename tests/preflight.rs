//! `explain` as a preflight: it exits 1 when at boot our labels/taints
//! would not reach kubelet (no wrapper, a drop-in that takes `ExecStart=`
//! back, a word exec would refuse), names what it warns about, and refuses
//! roots that do not exist. On a kubeadm root: preflight_kubeadm.rs; the
//! drop-in verdicts against a real systemd: preflight_systemd.rs; the exec
//! limit against the real kernel and the wrapper's own fallback by running
//! it: preflight_arg_limit.rs.

use crate::support::{run_cli, scratch_dir, stderr, write};

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use kubelet_labeler::node::contract::{LABELS_VAR, WRAPPER_PATH};
use kubelet_labeler::node::kubelet::arg_limit::MAX_ARG_STRLEN;
use run_cli::{cli, example_wrapper, json_of, machineconfig_example, stand_in_wrapper};
use serde_json::{Value, json};

pub(crate) fn example(name: &str) -> String {
    machineconfig_example(name).display().to_string()
}

/// `explain [--json]` with each of `files` as a `--machineconfig`.
pub(crate) fn explain_mcs(json: bool, files: &[&str]) -> std::process::Output {
    let mut args = vec!["explain"];
    if json {
        args.push("--json");
    }
    for f in files {
        args.extend(["--machineconfig", f]);
    }
    cli(&args)
}

/// A rendered config's kubelet part, as a MachineConfig: the unit and
/// `dropins` (name, contents).
pub(crate) fn kubelet_mc(dir: &Path, dropins: &[(&str, &str)]) -> String {
    let dropins: Vec<Value> = dropins
        .iter()
        .map(|(n, c)| json!({ "name": n, "contents": c }))
        .collect();
    let mc = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": { "name": "rendered-worker-0123",
                      "labels": { "machineconfiguration.openshift.io/role": "worker" } },
        "spec": { "config": {
            "ignition": { "version": "3.4.0" },
            "systemd": { "units": [ { "name": "kubelet.service", "enabled": true,
                "contents": "[Service]\nExecStart=/usr/bin/kubelet --v=2\n",
                "dropins": dropins } ] }
        } }
    });
    let path = dir.join("rendered.yaml");
    std::fs::write(
        &path,
        kubelet_labeler::cli::render::machineconfig::to_yaml(&mc).unwrap(),
    )
    .unwrap();
    path.display().to_string()
}

/// Item 1a: the labels MachineConfig without the wrapper's never reaches
/// kubelet on a node.
#[test]
fn machineconfigs_without_the_wrapper_exit_1() {
    let dir = scratch_dir();
    let rendered = kubelet_mc(dir.path(), &[]);
    let labels = example("50-worker-gpu-kubelet-labeler-labels.yaml");
    let out = explain_mcs(false, &[&rendered, &labels]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the wrapper is not installed")
            && stderr(&out).contains("give the wrapper MachineConfig"),
        "{}",
        stderr(&out)
    );
    let wrapper = example("50-worker-gpu-kubelet-labeler-wrapper.yaml");
    let out = explain_mcs(true, &[&rendered, &labels, &wrapper]);
    assert!(out.status.success(), "{}", stderr(&out));
    let e = json_of(&out);
    assert_eq!(e["errors"], json!([]));
    assert_eq!(e["wrapper_installed"], json!(true));
    // Item 2: only the generator, no drop-in after ours: no such warning.
    assert!(
        !e["warnings"].to_string().contains("sort"),
        "{}",
        e["warnings"]
    );
    // Nothing of ours at all: nothing to lose.
    let out = cli(&["explain", "--machineconfig", &rendered]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Item 1b and 2: a drop-in after ours that resets `ExecStart=` bypasses
/// the wrapper (exit 1, named); one that sets no `ExecStart=` is a warning
/// naming it.
#[test]
fn a_later_dropin_that_resets_execstart_exits_1() {
    let dir = scratch_dir();
    let debug = "[Service]\nExecStart=\nExecStart=/usr/bin/kubelet --v=8\n";
    let log = "[Service]\nEnvironment=GODEBUG=x=1\n";
    let labels = example("50-worker-gpu-kubelet-labeler-labels.yaml");
    let wrapper = example("50-worker-gpu-kubelet-labeler-wrapper.yaml");
    let explain = |dropins: &[(&str, &str)]| {
        let rendered = kubelet_mc(dir.path(), dropins);
        explain_mcs(true, &[&rendered, &labels, &wrapper])
    };
    let out = explain(&[("zzz-debug.conf", debug), ("zzz-log.conf", log)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let e = json_of(&out);
    let errors = e["errors"].to_string();
    assert!(
        errors.contains("kubelet.service.d/zzz-debug.conf sorts after zz-kubelet-labeler.conf and resets ExecStart= to /usr/bin/kubelet --v=8"),
        "{errors}"
    );
    assert!(stderr(&out).contains("zzz-debug.conf"), "{}", stderr(&out));
    let warnings = e["warnings"].to_string();
    assert!(
        warnings
            .contains("zzz-log.conf sorts after zz-kubelet-labeler.conf; it sets no ExecStart=")
            && !warnings.contains("zzz-debug"),
        "{warnings}"
    );
    // Sorting before ours, the same file is wrapped.
    let out = explain(&[("20-debug.conf", debug)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let e = json_of(&out);
    assert_eq!(e["original_argv"], json!(["/usr/bin/kubelet", "--v=8"]));
    assert!(!e["warnings"].to_string().contains("sort"));
    // An ExecStart= added without a reset: two commands, systemd refuses.
    let out = explain(&[("zzz-more.conf", "[Service]\nExecStart=/usr/bin/kubelet\n")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("zzz-more.conf sorts after zz-kubelet-labeler.conf and adds an ExecStart= without resetting it"),
        "{}",
        stderr(&out)
    );
}

/// Issue 22 item 8: a bypassed wrapper shows what systemd runs instead
/// (not our flags), and says the error once, on stderr.
#[test]
fn a_bypassed_wrapper_shows_what_really_runs_and_the_error_once() {
    let dir = scratch_dir();
    let debug = "[Service]\nExecStart=\nExecStart=/usr/bin/kubelet --v=8\n";
    let rendered = kubelet_mc(dir.path(), &[("zzz-debug.conf", debug)]);
    let labels = example("50-worker-gpu-kubelet-labeler-labels.yaml");
    let wrapper = example("50-worker-gpu-kubelet-labeler-wrapper.yaml");
    let out = explain_mcs(false, &[&rendered, &labels, &wrapper]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "argv systemd would exec, without the wrapper:\n    [1] /usr/bin/kubelet\n    [2] "
        ) && text.contains("--v=8")
            && !text.contains("--node-labels")
            && !text.contains("wrapper would exec"),
        "{text}"
    );
    let both = format!("{text}{}", stderr(&out));
    assert_eq!(
        both.matches("resets ExecStart= to /usr/bin/kubelet --v=8")
            .count(),
        1,
        "{both}"
    );
    let e = json_of(&explain_mcs(true, &[&rendered, &labels, &wrapper]));
    assert_eq!(e["wrapper_installed"], json!(true));
    assert_eq!(e["wrapper_runs"], json!(false));
    assert_eq!(e["argv"], json!(["/usr/bin/kubelet", "--v=8"]));
    assert_eq!(
        (e["added_labels"].clone(), e["taints"].clone()),
        (json!([]), json!([]))
    );
    // Not bypassed: the wrapper runs, with our labels.
    let rendered = kubelet_mc(dir.path(), &[]);
    let e = json_of(&explain_mcs(true, &[&rendered, &labels, &wrapper]));
    assert_eq!(e["wrapper_runs"], json!(true));
    assert!(
        e["argv"].to_string().contains("--node-labels"),
        "{}",
        e["argv"]
    );
}

/// Issue 22 item 17: a directory (a gitops one `render machineconfig`
/// wrote) explains as its MachineConfig files; its pool and kustomization
/// are skipped. One with no MachineConfig is refused, naming it.
#[test]
fn a_machineconfig_directory_explains_as_its_files() {
    let dir = scratch_dir();
    let rendered = kubelet_mc(dir.path(), &[]);
    let labels = example("50-worker-gpu-kubelet-labeler-labels.yaml");
    let wrapper = example("50-worker-gpu-kubelet-labeler-wrapper.yaml");
    let files = json_of(&explain_mcs(true, &[&rendered, &labels, &wrapper]));
    let gitops = example("");
    let out = explain_mcs(true, &[&rendered, &gitops]);
    assert!(out.status.success(), "{}", stderr(&out));
    let from_dir = json_of(&out);
    assert_eq!(from_dir, files);
    assert_eq!(
        from_dir["added_labels"],
        json!(["node.kubernetes.io/worker-gpu="])
    );
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let out = explain_mcs(false, &[&rendered, other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("holds no *.yaml, *.yml or *.json file"),
        "{}",
        stderr(&out)
    );
    // The example's kustomization alone: it lists files that are not
    // there (kustomize fails on it), which is said.
    std::fs::copy(
        machineconfig_example("kustomization.yaml"),
        other.join("kustomization.yaml"),
    )
    .unwrap();
    let out = explain_mcs(false, &[&rendered, other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "resource \"50-worker-gpu-kubelet-labeler-wrapper.yaml\" (not a manifest file of its directory)"
        ),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        other.join("kustomization.yaml"),
        "kind: Kustomization\nresources: []\n",
    )
    .unwrap();
    let out = explain_mcs(false, &[&rendered, other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!(
            "--machineconfig {}: no MachineConfig in its 1 file(s)",
            other.display()
        )),
        "{}",
        stderr(&out)
    );
}

/// Issue 22 item 6: rules previewed without facts say so (not "no
/// match"), and NFD's NodeFeature of the node is facts input: it explains
/// as the node's own tree does.
#[test]
fn rules_without_facts_say_so_and_a_nodefeature_gives_them() {
    let dir = scratch_dir();
    let rendered = kubelet_mc(dir.path(), &[]);
    let gitops = example("");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rules = repo.join("examples/rules/openshift-gpu.yaml");
    let dgx = repo.join("tests/fixtures/nodes/dgx");
    let explain = |json: bool, extra: &[&str]| {
        let mut args = vec![
            "explain",
            "--machineconfig",
            &rendered,
            "--machineconfig",
            &gitops,
        ];
        args.extend(["--rules", rules.to_str().unwrap()]);
        if json {
            args.push("--json");
        }
        args.extend(extra);
        cli(&args)
    };
    let out = explain(false, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "facts: none read: MachineConfigs hold no node's hardware; give --facts-root DIR"
        ) && text.contains("--facts FILE (`oc get nodefeature -n NAMESPACE NODE -o yaml`")
            && text.contains("not evaluated (no facts were read)")
            && !text.contains("no match"),
        "{text}"
    );
    // The node's tree, and its NodeFeature as nfd-worker publishes it.
    let from_root = json_of(&explain(true, &["--facts-root", dgx.to_str().unwrap()]));
    assert_eq!(from_root["facts_read"], json!(true));
    assert!(
        from_root["rules"].to_string().contains("\"matched\":true"),
        "{from_root}"
    );
    let features = json_of(&cli(&["facts", "--json", "--root", dgx.to_str().unwrap()]));
    let nodefeature = json!({
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeature",
        "metadata": {
            "name": "dgx-0", "namespace": "openshift-nfd",
            "labels": { "nfd.node.kubernetes.io/node-name": "dgx-0" },
            "ownerReferences": [{ "apiVersion": "v1", "kind": "Pod", "name": "nfd-worker-x", "uid": "u" }]
        },
        "spec": { "features": features, "labels": {} }
    });
    let nf = dir.path().join("nodefeature.yaml");
    std::fs::write(
        &nf,
        kubelet_labeler::cli::render::machineconfig::to_yaml(&nodefeature).unwrap(),
    )
    .unwrap();
    let from_nf = json_of(&explain(true, &["--facts", nf.to_str().unwrap()]));
    for key in ["argv", "added_labels", "taints", "rules", "facts_read"] {
        assert_eq!(from_nf[key], from_root[key], "{key}");
    }
    assert_eq!(from_nf["facts"], json!(format!("from {}", nf.display())));
    // Something else than a NodeFeature: named, with the fix.
    let out = explain(false, &["--facts", rules.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not a NodeFeature"),
        "{}",
        stderr(&out)
    );
    // Review 41 r41b F3: a file that is not YAML (a link a pull request
    // committed to a credentials file) is named by line, never quoted.
    let secret = dir.path().join("credentials");
    std::fs::write(
        &secret,
        "[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = s3cr3t\n",
    )
    .unwrap();
    let out = explain(false, &["--facts", secret.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("(--facts)") && err.contains("line 2") && !err.contains("AKIAEXAMPLE"),
        "{err}"
    );
}

/// A kubeadm host: its kubelet.service and kubelet.
pub(crate) fn kubeadm_tree(root: &Path) {
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        "[Service]\nExecStart=/usr/bin/kubelet --v=2\n",
    );
    write(&root.join("usr/bin/kubelet"), "#!/bin/sh\n");
    std::fs::set_permissions(
        root.join("usr/bin/kubelet"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
}

/// A kubeadm host with our files rendered into it.
fn kubeadm_root(root: &Path) {
    kubeadm_tree(root);
    let out = cli(&[
        "render",
        "dropins",
        "--label",
        "node.kubernetes.io/gpu=",
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Items 1 and 2 on a node tree (`explain --root`), where the drop-in may
/// be in any directory of the search path, and `render dropins` warns.
#[test]
fn explain_root_sees_the_wrapper_bypassed() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_root(root);
    let r = root.to_str().unwrap();
    let out = cli(&["explain", "--root", r]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("sort"), "{text}");
    // In /run/systemd/system, a lower-priority directory than /etc, it
    // still applies after ours: order is by name across directories.
    write(
        &root.join("run/systemd/system/kubelet.service.d/zzz-debug.conf"),
        "[Service]\nExecStart=\nExecStart=/usr/bin/kubelet --v=8\n",
    );
    let out = cli(&["explain", "--root", r]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "/run/systemd/system/kubelet.service.d/zzz-debug.conf sorts after zz-kubelet-labeler.conf and resets ExecStart="
        ),
        "{}",
        stderr(&out)
    );
    let out = cli(&[
        "render",
        "dropins",
        "--force",
        "--label",
        "node.kubernetes.io/gpu=",
        "--root",
        r,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: at the next kubelet start")
            && stderr(&out).contains("zzz-debug.conf"),
        "{}",
        stderr(&out)
    );
    // The generator made not executable: systemd does not run it.
    std::fs::remove_file(root.join("run/systemd/system/kubelet.service.d/zzz-debug.conf")).unwrap();
    let generator = root.join("etc/systemd/system-generators/kubelet-labeler");
    std::fs::set_permissions(&generator, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = cli(&["explain", "--root", r]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("the wrapper is not installed")
            && String::from_utf8_lossy(&out.stdout).contains("is not executable"),
        "{}",
        stderr(&out)
    );
}

/// A later drop-in explain cannot read is an error naming it, not an empty
/// file; one that runs the wrapper again is not said to bypass it: the
/// wrapper leaves it out like its own and stands in for kubelet.
#[test]
fn explain_root_names_unreadable_and_wrapper_dropins() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_root(root);
    let r = root.to_str().unwrap();
    let dropins = root.join("etc/systemd/system/kubelet.service.d");
    std::fs::create_dir_all(&dropins).unwrap();
    // Larger than explain reads a node file: unreadable even as root.
    let big = dropins.join("zzz-big.conf");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(17 << 20)
        .unwrap();
    let out = cli(&["explain", "--root", r]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("zzz-big.conf: cannot read it"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(&big).unwrap();
    write(
        &dropins.join("zzz-again.conf"),
        &format!("[Service]\nExecStart=\nExecStart={WRAPPER_PATH}.x86_64 --unit kubelet.service\n"),
    );
    let out = cli(&["explain", "--root", r]);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("zzz-again.conf runs the wrapper too: the wrapper leaves it out")
            && !said.contains("instead of the wrapper")
            && said.contains("executable: /usr/bin/kubelet\n"),
        "{said}"
    );
}

/// `explain` numbers the words of a command as `validate` does: from 1,
/// the program being word 1.
#[test]
fn explain_and_validate_number_words_alike() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_tree(root);
    let long = format!("--v={}", "2".repeat(MAX_ARG_STRLEN));
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        &format!("[Service]\nExecStart=/usr/bin/kubelet --cgroups-per-qos=true {long}\n"),
    );
    let out = cli(&["explain", "--root", root.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[1] /usr/bin/kubelet\n"), "{text}");
    assert!(
        stderr(&out).contains("word 3 of the original ExecStart="),
        "{}",
        stderr(&out)
    );
    // A word exec refuses cannot reach the validate command; its library.
    let args = ["/usr/bin/kubelet", "--cgroups-per-qos=true", &long].map(String::from);
    let report = kubelet_labeler::cli::validate::validate_kubelet_args(
        &args,
        kubelet_labeler::node::kubelet::Profile::Upstream,
    );
    assert!(
        report.errors.iter().any(|e| e.contains("argument 3 (--v)")),
        "{:?}",
        report.errors
    );
}

/// Item 3: MachineConfigs are OpenShift's; its node-role labels pass.
#[test]
fn machineconfig_input_defaults_to_the_openshift_profile() {
    let dir = scratch_dir();
    let env = format!("[Service]\nEnvironment=\"{LABELS_VAR}=node-role.kubernetes.io/worker=\"\n");
    let rendered = kubelet_mc(dir.path(), &[("90-kubelet-labeler-env.conf", &env)]);
    let wrapper = example("50-worker-gpu-kubelet-labeler-wrapper.yaml");
    let args = [
        "explain",
        "--machineconfig",
        &rendered,
        "--machineconfig",
        &wrapper,
    ];
    let out = cli(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut upstream = args.to_vec();
    upstream.extend(["--profile", "upstream"]);
    let out = cli(&upstream);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("node-role.kubernetes.io/worker"));
}

/// `render machineconfig` into `dir/out`: the files it wrote, by name.
fn render_mcs(dir: &Path, out: &str, args: &[&str]) -> Vec<String> {
    let wrapper = example_wrapper(dir);
    let out = dir.join(out);
    let mut all = vec!["render", "machineconfig"];
    all.extend(args);
    all.extend(["--wrapper", wrapper.to_str().unwrap()]);
    all.extend(["--output-dir", out.to_str().unwrap()]);
    let rendered = cli(&all);
    assert!(rendered.status.success(), "{}", stderr(&rendered));
    let mut files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.contains("kubelet-labeler-"))
        .collect();
    files.sort();
    files
}

/// All workers labeled by `--role worker`, the GPU pool by its own: a
/// node of the pool gets both env drop-ins (the role's has its own name
/// and variables) and registers with both sets of labels.
/// MachineConfigs of two pools are refused, changing nothing.
#[test]
fn a_pools_machineconfigs_override_workers_as_on_a_node() {
    let dir = scratch_dir();
    let rendered = kubelet_mc(dir.path(), &[]);
    let worker = render_mcs(
        dir.path(),
        "worker",
        &["--role", "worker", "--label", "node.kubernetes.io/general="],
    );
    assert!(
        worker[0].ends_with("/50-worker-kubelet-labeler-labels.yaml"),
        "{worker:?}"
    );
    let gpu = [
        example("50-worker-gpu-kubelet-labeler-labels.yaml"),
        example("50-worker-gpu-kubelet-labeler-wrapper.yaml"),
    ];
    let mut files: Vec<&str> = vec![&rendered];
    files.extend(worker.iter().map(String::as_str));
    files.extend(gpu.iter().map(String::as_str));
    let out = explain_mcs(true, &files);
    assert!(out.status.success(), "{}", stderr(&out));
    let e = json_of(&out);
    assert_eq!(
        e["added_labels"],
        json!([
            "node.kubernetes.io/general=",
            "node.kubernetes.io/worker-gpu="
        ])
    );
    // The worker's alone: its labels.
    files.truncate(1 + worker.len());
    let e = json_of(&explain_mcs(true, &files));
    assert_eq!(e["added_labels"], json!(["node.kubernetes.io/general="]));

    let infra = render_mcs(
        dir.path(),
        "worker-infra",
        &[
            "--pool",
            "worker-infra",
            "--label",
            "node.kubernetes.io/infra=",
        ],
    );
    let mut files: Vec<&str> = vec![&rendered];
    files.extend(gpu.iter().map(String::as_str));
    files.extend(infra.iter().map(String::as_str));
    let out = explain_mcs(false, &files);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let e = stderr(&out);
    assert!(
        e.contains("MachineConfigs of more than one pool")
            && e.contains(
                "\"50-worker-gpu-kubelet-labeler-labels\", \
                 \"50-worker-gpu-kubelet-labeler-wrapper\" (role worker-gpu)"
            )
            && e.contains("(role worker-infra)")
            && e.contains("give the MachineConfigs of one pool"),
        "{e}"
    );
}

/// Without --profile, explain validates as the installed wrapper will.
#[test]
fn explain_root_takes_the_installed_wrappers_profile() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_tree(root);
    let r = root.to_str().unwrap();
    let out = cli(&[
        "render",
        "dropins",
        "--profile",
        "openshift",
        "--label",
        "node-role.kubernetes.io/worker=",
        "--root",
        r,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli(&["explain", "--root", r]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli(&["explain", "--root", r, "--profile", "upstream"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

/// Item 13: a root that does not exist is an error naming it.
#[test]
fn missing_roots_are_errors() {
    let dir = scratch_dir();
    let typo = dir.path().join("nod");
    let t = typo.to_str().unwrap();
    for args in [
        vec!["facts", "--root", t],
        vec!["explain", "--root", t],
        vec!["explain", "--root", "/", "--facts-root", t],
        vec!["render", "dropins", "--label", "a=b", "--root", t],
    ] {
        let out = cli(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains(&format!("root {t}: No such file or directory")),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!typo.exists(), "{args:?} created {t}");
    }
    let out = cli(&["render", "dropins", "--label", "a=b", "--root", t]);
    assert!(stderr(&out).contains("--create-root"), "{}", stderr(&out));
    let out = cli(&[
        "render",
        "dropins",
        "--create-root",
        "--wrapper",
        stand_in_wrapper().to_str().unwrap(),
        "--label",
        "a=b",
        "--root",
        t,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        typo.join("etc/systemd/system-generators/kubelet-labeler")
            .is_file()
    );
}

/// A tree that is not a node's whole root: no kubelet.service says how to
/// point explain at one; a staging tree with our files and the unit but no
/// kubelet binary explains with a warning (systemd cannot start kubelet
/// there, wrapper or not), as MachineConfigs do; a kubelet that is there
/// but not executable stays an error, with the fix.
#[test]
fn explain_on_a_partial_tree_says_what_is_missing() {
    let dir = scratch_dir();
    let root = dir.path();
    let r = root.to_str().unwrap();
    let out = cli(&["explain", "--root", r]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("kubelet.service not found in")
            && stderr(&out).contains(&format!("is --root {r} a node's whole root"))
            && stderr(&out).contains("--unit"),
        "{}",
        stderr(&out)
    );
    let out = cli(&[
        "explain",
        "--machineconfig",
        &example("50-worker-gpu-kubelet-labeler-labels.yaml"),
    ]);
    assert!(
        stderr(&out).contains("the MachineConfigs given write no kubelet.service"),
        "{}",
        stderr(&out)
    );

    let out = cli(&[
        "render",
        "dropins",
        "--wrapper",
        stand_in_wrapper().to_str().unwrap(),
        "--label",
        "a=b",
        "--root",
        r,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        "[Service]\nExecStart=/usr/bin/kubelet --v=2\n",
    );
    let out = cli(&["explain", "--root", r]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("+ [3] '--node-labels=a=b'")
            && text.contains(&format!(
                "warning: /usr/bin/kubelet (the unit's ExecStart=) is not in the tree under --root {r}: systemd cannot start kubelet.service without it"
            )),
        "{text}"
    );
    write(&root.join("usr/bin/kubelet"), "#!/bin/sh\n");
    let out = cli(&["explain", "--root", r]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!(
            "/usr/bin/kubelet is not an executable file (under --root {r}): systemd could not run it either; make it executable"
        )),
        "{}",
        stderr(&out)
    );
}

/// An untrusted `--root` (a node's disk, an image) cannot make explain
/// print the host's files (issue 26 item 2): its absolute links resolve in
/// the root, `..` stops at it, and an `EnvironmentFile=` with `..` is
/// refused as systemd refuses it. Every host file here holds "hunter2";
/// explain prints no line of any.
#[test]
fn explain_never_prints_a_file_outside_the_root() {
    use std::os::unix::fs::symlink;
    let dir = scratch_dir();
    let d = dir.path();
    let host = d.join("host");
    write(&host.join("secret.env"), "SECRET=hunter2-link\n");
    write(&host.join("climb.env"), "CLIMB=hunter2-climb\n");
    write(&host.join("machine-id"), "hunter2-machine-id\n");
    write(&host.join("os-release"), "ID=hunter2-os\n");
    write(
        &host.join("dropins/90-leak.conf"),
        "[Service]\nEnvironment=LEAK=hunter2-dropin\n",
    );
    write(
        &host.join("units/kubelet.service"),
        "[Service]\nExecStart=/usr/bin/kubelet --hunter2-unit\n",
    );
    write(
        &host.join("kubelet-config.yaml"),
        "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nregisterWithTaints:\n- key: hunter2-config\n  effect: NoSchedule\n",
    );
    let root = d.join("root");
    kubeadm_tree(&root);
    let climb = format!(
        "/etc{}{}",
        "/..".repeat(12),
        host.join("climb.env").display()
    );
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        &format!(
            "[Service]\nEnvironmentFile=-/etc/kubernetes/kubelet.env\nEnvironmentFile=-{climb}\n\
             ExecStart=/usr/bin/kubelet --config /etc/kubernetes/kubelet.conf \
             --a=${{SECRET}} --b=${{CLIMB}} --c=${{LEAK}}\n"
        ),
    );
    std::fs::create_dir_all(root.join("etc/kubernetes")).unwrap();
    symlink(
        host.join("secret.env"),
        root.join("etc/kubernetes/kubelet.env"),
    )
    .unwrap();
    symlink(
        host.join("kubelet-config.yaml"),
        root.join("etc/kubernetes/kubelet.conf"),
    )
    .unwrap();
    symlink(host.join("machine-id"), root.join("etc/machine-id")).unwrap();
    symlink(host.join("os-release"), root.join("etc/os-release")).unwrap();
    let r = root.to_str().unwrap();
    let explained_without_host_files = |stage: &str| {
        for json in [false, true] {
            let mut args = vec!["explain", "--root", r];
            if json {
                args.push("--json");
            }
            let out = cli(&args);
            let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
            assert!(!all.contains("hunter2"), "{stage}: {all}");
            // Still explained: the tree's own unit, the climb refused as
            // systemd refuses it.
            assert!(all.contains("--a="), "{stage}: {all}");
            assert!(
                all.contains("EnvironmentFile= path is not normalized, ignoring"),
                "{stage}: {all}"
            );
        }
    };
    explained_without_host_files("environment files and kubelet's config");
    // Unit lookups: a drop-in directory and the /etc unit directory as
    // absolute links to the host's.
    std::fs::create_dir_all(root.join("etc/systemd")).unwrap();
    symlink(host.join("units"), root.join("etc/systemd/system")).unwrap();
    std::fs::create_dir_all(root.join("run/systemd/system")).unwrap();
    symlink(
        host.join("dropins"),
        root.join("run/systemd/system/kubelet.service.d"),
    )
    .unwrap();
    explained_without_host_files("unit directories");
    // Specifiers read the tree's /etc (here: links to nothing in it).
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        "[Service]\nExecStart=/usr/bin/kubelet --m=%m --o=%o\n",
    );
    let out = cli(&["explain", "--root", r]);
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(!all.contains("hunter2"), "{all}");
}

/// The day-2 sync's units, when the rendered config ships them: explain
/// names them, what starts them (each kubelet start, a change of the env
/// drop-ins) and the labels a run keeps on the Node; without them, nothing.
#[test]
fn explain_shows_the_sync_units_and_what_they_would_do() {
    let dir = tempfile::tempdir().unwrap();
    let rendered = kubelet_mc(dir.path(), &[]);
    let labels = example("50-worker-gpu-kubelet-labeler-labels.yaml");
    let wrapper = example("50-worker-gpu-kubelet-labeler-wrapper.yaml");
    let out = explain_mcs(true, &[&rendered, &labels, &wrapper]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sync = &json_of(&out)["sync"];
    assert_eq!(
        sync["service"],
        "/etc/systemd/system/kubelet-labeler-sync.service"
    );
    assert!(
        sync["command"]
            .as_str()
            .unwrap()
            .contains("kubelet-labeler-wrapper.$$(uname -m) sync --unit kubelet.service"),
        "{sync}"
    );
    let triggers = sync["triggers"].to_string();
    for t in [
        "every start of kubelet.service (Wants= in /etc/systemd/system/kubelet.service.d/91-kubelet-labeler-sync.conf)",
        "a change in /etc/systemd/system/kubelet.service.d (kubelet-labeler-sync.path)",
    ] {
        assert!(triggers.contains(t), "{t}: {triggers}");
    }
    // Issue 33 item 11: the pool label is registered by the wrapper but
    // never sent by the sync (it holds the key its pool selects by): it is
    // only reported, with the sync's own reason.
    assert_eq!(sync["labels"], json!([]), "{sync}");
    assert_eq!(
        sync["reported"][0]["label"], "node.kubernetes.io/worker-gpu=",
        "{sync}"
    );
    assert!(
        sync["reported"][0]["why"]
            .as_str()
            .unwrap()
            .contains("selects the node's pool"),
        "{sync}"
    );
    assert_eq!(sync["nothing"], Value::Null);
    let human = explain_mcs(false, &[&rendered, &labels, &wrapper]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("sync: /etc/systemd/system/kubelet-labeler-sync.service\n")
            && text.contains("  writes no label\n")
            && text.contains("  only reports (never sends) a difference in:\n    label node.kubernetes.io/worker-gpu= (it selects the node's pool"),
        "{text}"
    );
    // Without the wrapper's MachineConfig, which carries the sync's units.
    let out = explain_mcs(true, &[&rendered, &labels]);
    assert_eq!(json_of(&out)["sync"], Value::Null);
}

/// Review 41 r41b F6: a word of kubelet's command line is shown on stdout
/// escaped as on stderr: a U+202E in it never turns its line around.
#[test]
fn explain_shows_command_words_escaped() {
    let dir = scratch_dir();
    let dropin =
        "[Service]\nExecStart=\nExecStart=/usr/bin/kubelet \"--node-labels=a=\u{202e}gnp.exe\"\n";
    let rendered = kubelet_mc(dir.path(), &[("10-x.conf", dropin)]);
    let out = explain_mcs(false, &[&rendered, &example("")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\\u{202e}gnp.exe") && !text.contains('\u{202e}'),
        "{text}"
    );
}
