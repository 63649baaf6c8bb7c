//! `explain` as a preflight: it exits 1 when at boot our labels/taints
//! would not reach kubelet (no wrapper, a drop-in that takes `ExecStart=`
//! back, a word exec would refuse), names what it warns about, and refuses
//! roots that do not exist. The drop-in verdicts are checked against a real
//! systemd; the exec limit against the real kernel; the wrapper's own
//! fallback by running it.

use crate::support::wrapper_run::{recorder_root, run_wrapper};
use crate::support::{run_cli, scratch_dir, stderr, systemd_oracle, write};

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use kubelet_labeler::node::contract::{LABELS_VAR, TAINTS_VAR, WRAPPER_DROPIN_NAME, WRAPPER_PATH};
use kubelet_labeler::node::kubelet::arg_limit::MAX_ARG_STRLEN;
use run_cli::{cli, example_wrapper, json_of, machineconfig_example, stand_in_wrapper};
use serde_json::{Value, json};
use systemd_oracle::UserRun;

fn example(name: &str) -> String {
    machineconfig_example(name).display().to_string()
}

/// `explain [--json]` with each of `files` as a `--machineconfig`.
fn explain_mcs(json: bool, files: &[&str]) -> std::process::Output {
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
fn kubelet_mc(dir: &Path, dropins: &[(&str, &str)]) -> String {
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
    std::fs::copy(
        machineconfig_example("kustomization.yaml"),
        other.join("kustomization.yaml"),
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
}

/// A kubeadm host: its kubelet.service and kubelet.
fn kubeadm_tree(root: &Path) {
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

/// Issue 33 item 12: a kubeadm root (an upstream kubelet 1.33 from
/// Debian's package database) rendered with `--profile openshift`: the
/// wrapper lets OpenShift's `node-role.kubernetes.io/worker` through, and
/// the node's kubelet refuses it. The kubelet the node runs decides:
/// explain exits 1 naming both and the fix, render (which sees the package)
/// refuses the same and writes nothing; re-rendered with `--profile
/// upstream`, it passes.
#[test]
fn a_kubeadm_root_rendered_for_openshift_is_an_error() {
    let dir = scratch_dir();
    let root = dir.path();
    let r = root.to_str().unwrap();
    kubeadm_tree(root);
    let render = |profile: &str, label: &str| {
        cli(&[
            "render",
            "dropins",
            "--root",
            r,
            "--force",
            "--arch",
            "x86_64",
            "--profile",
            profile,
            "--label",
            label,
        ])
    };
    // Rendered before the kubelet package was installed (nothing told).
    let out = render("openshift", "node-role.kubernetes.io/worker=");
    assert!(out.status.success(), "{}", stderr(&out));
    write(
        &root.join("var/lib/dpkg/status"),
        "Package: kubelet\nStatus: install ok installed\nVersion: 1.33.2-1.1\n\n",
    );
    let out = cli(&["explain", "--root", r]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("this node runs an upstream kubelet (the kubelet package 1.33.2-1.1")
            && err.contains("rendered with --profile openshift")
            && err.contains("re-render with --profile upstream"),
        "{err}"
    );
    // The label itself, judged as the node's kubelet judges it.
    assert!(
        err.contains("kubelet exits at every start on this command line")
            && err.contains("node-role.kubernetes.io/worker"),
        "{err}"
    );
    let env = root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf");
    let before = std::fs::read_to_string(&env).unwrap();
    let out = render("openshift", "node-role.kubernetes.io/worker=");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("this node runs an upstream kubelet (the kubelet package 1.33.2-1.1")
            && err.contains("but --profile openshift")
            && err.contains("render with --profile upstream"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&env).unwrap(), before);
    let out = render("upstream", "node.kubernetes.io/worker=");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cli(&["explain", "--root", r]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The other way round: an OpenShift node (its release in os-release)
    // with a wrapper rendered for upstream.
    write(
        &root.join("etc/os-release"),
        "ID=rhel\nOPENSHIFT_VERSION=\"4.19\"\n",
    );
    let out = cli(&["explain", "--root", r]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("this node runs OpenShift's kubelet (OpenShift 4.19")
            && err.contains("--profile openshift"),
        "{err}"
    );
}

/// Issue 22 item 7 on a kubeadm root: the kubelet package's version
/// (Debian's package database) is the kubelet the flags are judged for.
#[test]
fn a_kubeadm_root_judges_flags_for_its_kubelet_package() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_tree(root);
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        "[Service]\nExecStart=/usr/bin/kubelet --pod-infra-container-image=registry.k8s.io/pause:3.9\n",
    );
    let explain = || {
        json_of(&cli(&[
            "explain",
            "--json",
            "--root",
            root.to_str().unwrap(),
        ]))
    };
    let e = explain();
    assert!(
        e["kubelet_version"]
            .as_str()
            .unwrap()
            .starts_with("unknown"),
        "{e}"
    );
    assert!(
        e["warnings"]
            .to_string()
            .contains("only kubelets before 1.35 take it"),
        "{e}"
    );
    let status = |v: &str| {
        format!(
            "Package: kubelet\nStatus: install ok installed\nArchitecture: arm64\nVersion: {v}\n\n"
        )
    };
    write(&root.join("var/lib/dpkg/status"), &status("1.30.4-1.1"));
    let e = explain();
    assert!(
        e["kubelet_version"]
            .as_str()
            .unwrap()
            .starts_with("1.30 (the kubelet package 1.30.4-1.1")
            && !e["warnings"].to_string().contains("pod-infra"),
        "{e}"
    );
    write(&root.join("var/lib/dpkg/status"), &status("1.35.0-1.1"));
    let e = explain();
    assert!(
        e["warnings"]
            .to_string()
            .contains("kubelet 1.35 has no such flag (removed in 1.35)"),
        "{e}"
    );
}

/// Every file (not directory) under `root`, as paths relative to it.
fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.symlink_metadata().unwrap().is_dir() {
                dirs.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Issue 22 item 10: `render dropins --remove` takes out what render wrote
/// (and what the generator and the wrapper made of it), nothing else, all
/// or nothing; `explain` then shows kubelet as before.
#[test]
fn render_dropins_remove_takes_out_exactly_what_render_wrote() {
    let dir = scratch_dir();
    let root = dir.path();
    let r = root.to_str().unwrap();
    kubeadm_tree(root);
    write(
        &root.join("etc/systemd/system/kubelet.service.d/10-mine.conf"),
        "[Service]\nEnvironment=MINE=1\n",
    );
    write(&root.join("usr/local/bin/my-tool"), "mine\n");
    let before = files_under(root);
    let explain = || json_of(&cli(&["explain", "--json", "--root", r]));
    let unchanged = explain();
    let out = cli(&[
        "render",
        "dropins",
        "--root",
        r,
        "--arch",
        "x86_64",
        "--label",
        "node.kubernetes.io/gpu=",
        "--taint",
        "nvidia.com/gpu=true:NoSchedule",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // What boot makes of it: the generator's drop-in, the wrapper's state.
    let generated = root.join("run/systemd/generator/kubelet.service.d/zz-kubelet-labeler.conf");
    write(
        &generated,
        &kubelet_labeler::cli::render::dropins::wrapper_dropin(
            kubelet_labeler::node::kubelet::Profile::Upstream,
        ),
    );
    write(
        &root.join("run/kubelet-labeler/kubelet.service.state"),
        "x\n",
    );
    assert_eq!(explain()["wrapper_installed"], json!(true));
    let rendered = files_under(root);

    // An env drop-in with a line of the user's: refused, nothing removed.
    let env = root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf");
    let ours = std::fs::read_to_string(&env).unwrap();
    write(
        &env,
        &format!("{ours}Environment=\"KUBELET_EXTRA_ARGS=--v=4\"\n"),
    );
    let out = cli(&["render", "dropins", "--remove", "--root", r]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "holds lines render did not write (Environment=\"KUBELET_EXTRA_ARGS=--v=4\")"
        ) && stderr(&out).contains("pass --force")
            && stderr(&out).contains("nothing was removed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(files_under(root), rendered);
    // Without it (or with --force): everything of ours goes, nothing else.
    write(&env, &ours);
    let out = cli(&["render", "dropins", "--remove", "--root", r]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("systemctl daemon-reload"),
        "{}",
        stderr(&out)
    );
    // Issue 33 item 25: the Node keeps the sync's labels and annotations;
    // the exact commands that take them off (the labels the tree derived,
    // read before its files went; kubelet's certificate names the Node).
    for want in [
        "kubectl label node NODE node.kubernetes.io/gpu-\n",
        "kubectl annotate node NODE kubelet-labeler.io/owned-labels- \
         kubelet-labeler.io/pool-labels- kubelet-labeler.io/derived-taints- \
         kubelet-labeler.io/taint-drift-\n",
        "(NODE: the node's name",
    ] {
        assert!(
            stderr(&out).contains(want),
            "{want:?} not in {}",
            stderr(&out)
        );
    }
    assert_eq!(files_under(root), before);
    let after = explain();
    for key in [
        "argv",
        "original_argv",
        "wrapper_installed",
        "errors",
        "added_labels",
        "taints",
    ] {
        assert_eq!(after[key], unchanged[key], "{key}");
    }
    let out = cli(&["render", "dropins", "--remove", "--root", r]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("nothing of kubelet-labeler's for kubelet.service"),
        "{}",
        stderr(&out)
    );
    // --force takes an edited one too.
    let out = cli(&[
        "render", "dropins", "--root", r, "--arch", "x86_64", "--label", "a=",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    write(&env, "[Service]\nExecStartPre=/bin/true\n");
    let out = cli(&["render", "dropins", "--remove", "--force", "--root", r]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(files_under(root), before);
    // Only for removing: no labels with it.
    let out = cli(&[
        "render", "dropins", "--remove", "--root", r, "--label", "a=",
    ]);
    assert_eq!(out.status.code(), Some(2));
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

/// `n` distinct labels of about 40 bytes each.
fn many_labels(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("example.com/label-{i:06}=value-{i:012}"))
        .collect()
}

/// Item 4: a `--node-labels=` word over MAX_ARG_STRLEN is refused at
/// render, by validate and by explain, with the limit and the size.
#[test]
fn over_long_labels_are_refused_everywhere() {
    let dir = scratch_dir();
    let labels = many_labels(4000);
    let mut args = vec![
        "render".to_string(),
        "dropins".into(),
        "--create-root".into(),
    ];
    args.extend(["--wrapper".into(), stand_in_wrapper().display().to_string()]);
    args.extend(["--root".into(), dir.path().join("t").display().to_string()]);
    for l in &labels {
        args.extend(["--label".to_string(), l.clone()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli(&args);
    assert_eq!(out.status.code(), Some(1));
    let e = stderr(&out);
    assert!(
        e.contains(&format!("{LABELS_VAR} (4000 labels) is "))
            && e.contains("more than the 131072")
            && e.contains("MAX_ARG_STRLEN"),
        "{e}"
    );
    assert!(!dir.path().join("t").exists());
    let static_wrapper = example_wrapper(dir.path());
    let static_wrapper = static_wrapper.to_str().unwrap();
    let mut args = vec!["render", "machineconfig", "--pool", "worker-big", "-o", "-"];
    args.extend(["--wrapper", static_wrapper]);
    for l in &labels {
        args.extend(["--label", l]);
    }
    let out = cli(&args);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("MAX_ARG_STRLEN"), "{}", stderr(&out));

    // validate: such a word cannot even reach it on this kernel (its own
    // exec fails; `validate`'s check is for 64 KiB-page hosts, tested
    // beside it); one that fits passes.
    let short = format!("--node-labels={}", labels[..100].join(","));
    assert!(cli(&["validate", "--", &short]).status.success());

    // explain: an env drop-in with more labels than fit (written by hand:
    // render refuses it). systemd could not even exec the service.
    let env = format!(
        "[Service]\nEnvironment=\"{LABELS_VAR}={}\"\n",
        labels.join(",")
    );
    let rendered = kubelet_mc(dir.path(), &[("90-kubelet-labeler-env.conf", &env)]);
    let wrapper = example("50-worker-gpu-kubelet-labeler-wrapper.yaml");
    let out = explain_mcs(true, &[&rendered, &wrapper]);
    assert_eq!(out.status.code(), Some(1));
    let e = json_of(&out);
    let errors = e["errors"].to_string();
    assert!(
        errors.contains(&format!(
            "systemd cannot start kubelet.service: the environment variable {LABELS_VAR} is"
        )) && errors.contains("MAX_ARG_STRLEN"),
        "{errors}"
    );
    let left_out = e["left_out"].as_str().unwrap_or_default();
    assert!(
        left_out.contains("the --node-labels= word is") && left_out.contains("131072"),
        "{e}"
    );
}

/// The limit is the kernel's: 32 pages. On 4 KiB-page kernels a word of
/// MAX_ARG_STRLEN - 1 bytes execs and one byte more fails with E2BIG; larger
/// pages (a property of the host, not a missing tool) raise the kernel's
/// limit, and there a word one byte over ours execs: ours stays safe.
#[test]
fn max_arg_strlen_is_the_kernels() {
    let run = |len: usize| Command::new("/bin/true").arg("x".repeat(len)).status();
    // "E=" and the NUL count.
    let run_env = |len: usize| {
        Command::new("/bin/true")
            .env("E", "v".repeat(len - 2))
            .status()
    };
    assert!(run(MAX_ARG_STRLEN - 1).unwrap().success());
    assert!(run_env(MAX_ARG_STRLEN - 1).unwrap().success());
    let page = Command::new("getconf").arg("PAGESIZE").output().unwrap();
    let page: usize = String::from_utf8_lossy(&page.stdout)
        .trim()
        .parse()
        .expect("getconf PAGESIZE prints a number");
    if page == 4096 {
        let err = run(MAX_ARG_STRLEN).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(7), "{err}");
        // The same for an environment string.
        let err = run_env(MAX_ARG_STRLEN).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(7), "{err}");
    } else {
        assert!(32 * page > MAX_ARG_STRLEN, "a page of {page} bytes");
        assert!(run(MAX_ARG_STRLEN).unwrap().success());
        assert!(run_env(MAX_ARG_STRLEN).unwrap().success());
    }
    assert_eq!(
        kubelet_labeler::node::kubelet::arg_limit::too_long("w", MAX_ARG_STRLEN - 1),
        None
    );
    assert!(kubelet_labeler::node::kubelet::arg_limit::too_long("w", MAX_ARG_STRLEN).is_some());
}

/// Item 4 at boot: the wrapper never builds a word exec would refuse. Our
/// taints fit the environment variable, but merged with the kubelet
/// config's they make a `--register-with-taints=` word over the limit:
/// kubelet starts with its own argv and the journal line says why. And when
/// the whole argv with ours is over the stack-derived total, the exec's
/// E2BIG starts kubelet unchanged too.
#[test]
fn the_wrapper_starts_kubelet_without_a_word_exec_would_refuse() {
    let dir = scratch_dir();
    let root = dir.path();
    let unit = "[Service]\nExecStart=/usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf\n";
    let Some(records) = recorder_root(root, unit) else {
        return;
    };
    let config_taints: String = (0..8)
        .map(|i| {
            format!(
                "- key: example.com/from-config-{i}\n  value: {}\n  effect: NoSchedule\n",
                "v".repeat(60)
            )
        })
        .collect();
    write(
        &root.join("etc/kubernetes/kubelet.conf"),
        &format!(
            "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nregisterWithTaints:\n{config_taints}"
        ),
    );
    // As long as the environment string allows.
    let mut taints = String::new();
    let mut i = 0;
    loop {
        let next = format!("example.com/t{i:06}=x:NoSchedule");
        if TAINTS_VAR.len() + 1 + taints.len() + 1 + next.len() + 1 > MAX_ARG_STRLEN {
            break;
        }
        if !taints.is_empty() {
            taints.push(',');
        }
        taints += &next;
        i += 1;
    }
    let original = ["/usr/bin/kubelet", "--config=/etc/kubernetes/kubelet.conf"];
    let (err, argv) = run_wrapper(root, &records, &[(TAINTS_VAR, taints.clone())], "");
    assert_eq!(argv[1..], original[1..], "{err}");
    assert!(
        err.contains(
            "starting kubelet without our labels/taints: the --register-with-taints= word is"
        ) && err.contains("MAX_ARG_STRLEN"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // Fewer taints fit: they are added.
    let few: String = taints.split(',').take(10).collect::<Vec<_>>().join(",");
    let (err, argv) = run_wrapper(root, &records, &[(TAINTS_VAR, few)], "");
    assert!(
        argv.last().unwrap().starts_with("--register-with-taints="),
        "{err}"
    );

    // Each word fits, the total does not: a 1 MiB stack allows 256 KiB of
    // argv and environment. 100 KB of labels and 150 KB of other variables
    // let the wrapper start, but not kubelet with the labels on top.
    let labels: Vec<String> = (0..4800).map(|i| format!("example.com/l{i:06}=")).collect();
    let labels = labels.join(",");
    assert!((90_000..110_000).contains(&labels.len()));
    let env = [
        (LABELS_VAR, labels),
        ("FILLER_A", "f".repeat(75_000)),
        ("FILLER_B", "f".repeat(75_000)),
        ("INVOCATION_ID", "e2big".to_string()),
    ];
    let (err, argv) = run_wrapper(root, &records, &env, "ulimit -s 1024");
    assert_eq!(argv[1..], original[1..], "{err}");
    // One journal line, and the guard records a start without ours.
    assert!(
        err.contains(
            "starting kubelet without our labels/taints: its argv and environment with them are"
        ) && err.contains("a stack limit of 1024 KiB"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let state = std::fs::read_to_string(root.join("state/kubelet.service.state")).unwrap();
    assert!(
        state.contains("invocation_id=e2big\nphase=exec\n") && state.contains("with_additions=0\n"),
        "{state}"
    );
}

/// What the count before exec cannot see, the kernel's own answer does:
/// environment strings without `=` (the wrapper's environment has none of
/// them; the kernel counts them) make kubelet's argv with our labels too
/// big for a 1 MiB stack, though under the limit as counted. Kubelet starts
/// unchanged and ONE journal line says so (two before: a line for the start
/// with our labels, then one for the E2BIG fallback).
#[test]
fn an_e2big_the_count_cannot_see_gives_one_line() {
    let dir = scratch_dir();
    let root = dir.path();
    let unit = "[Service]\nExecStart=/usr/bin/kubelet --v=2\n";
    let Some(records) = recorder_root(root, unit) else {
        return;
    };
    let bare_env = root.join("bare_env");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/bare_env.c");
    let st = Command::new("cc")
        .arg("-o")
        .arg(&bare_env)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "compiling bare_env.c");
    // ~100 KB of labels, in the environment and then in argv: ~200 KB of
    // the 256 KiB a 1 MiB stack allows, and 70 KB more the count misses.
    let labels: Vec<String> = (0..4800).map(|i| format!("example.com/l{i:06}=")).collect();
    let env = [
        (LABELS_VAR, labels.join(",")),
        ("INVOCATION_ID", "unseen".to_string()),
    ];
    let shell = format!(
        "ulimit -s 1024\nexec {} 2 35000 \"$0\" \"$@\"",
        bare_env.display()
    );
    let (err, argv) = run_wrapper(root, &records, &env, &shell);
    assert_eq!(argv[1..], ["--v=2"], "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "kubelet-labeler: starting kubelet without our labels/taints: exec refuses"
        ) && err.contains("a stack limit of 1024 KiB"),
        "{err}"
    );
    let state = std::fs::read_to_string(root.join("state/kubelet.service.state")).unwrap();
    assert!(state.contains("with_additions=0\n"), "{state}");
}

/// A file for a case: (directory index, name in the unit's drop-in
/// directory or, with a '/', in the search directory, contents or
/// "/dev/null").
type Placed<'a> = (usize, &'a str, &'a str);

/// One user-manager run over `cases` (unit name suffix, files): per unit,
/// what systemd ran and what `explain` said, and whether they agree.
fn verdicts(scratch: &Path, kubelet: &Path, cases: &[(&str, &[Placed])]) -> Vec<(bool, String)> {
    let k = kubelet.display();
    // As /etc/systemd/system, /run/systemd/system, /run/systemd/generator
    // and /usr/lib/systemd/system rank.
    let dirs: Vec<PathBuf> = ["etc", "run", "generator", "usr"]
        .iter()
        .map(|n| scratch.join(n))
        .collect();
    // The wrapper's stand-in: the recorder too, as another file (the
    // wrapper knows itself by its file).
    let wrapper = scratch.join("fake-wrapper");
    std::fs::create_dir_all(scratch).unwrap();
    std::fs::copy(kubelet, &wrapper).unwrap();
    let ours = format!(
        "[Service]\nExecStart=\nExecStart={} wrapper\n",
        wrapper.display()
    );
    let env = format!("[Service]\nEnvironment=\"{LABELS_VAR}=example.com/a=b\"\n");
    let mut units = Vec::new();
    for (name, files) in cases {
        let unit = format!("kl{name}.service");
        let dropin = |d: usize, file: &str| dirs[d].join(format!("{unit}.d/{file}"));
        write(
            &dirs[3].join(&unit),
            &format!("[Service]\nExecStart={k} original\n"),
        );
        write(&dropin(2, WRAPPER_DROPIN_NAME), &ours);
        write(&dropin(1, "90-kubelet-labeler-env.conf"), &env);
        for (d, file, text) in *files {
            let path = match file.contains('/') {
                true => dirs[*d].join(file),
                false => dropin(*d, file),
            };
            if *text == "/dev/null" {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink("/dev/null", &path).unwrap();
            } else {
                write(&path, text);
            }
        }
        units.push(unit);
    }
    let run = UserRun::new(dirs.clone(), units.clone());
    let search_path = systemd_oracle::search_path(&run, scratch);
    let outcomes = systemd_oracle::run_user_manager(&run, scratch);
    let mut table = Vec::new();
    for unit in &units {
        let o = &outcomes[unit];
        let ran = o.records.first().map(|r| r.argv_lossy()[1].clone());
        let systemd_runs_wrapper = ran.as_deref() == Some("wrapper");
        let out = cli(&[
            "explain",
            "--json",
            "--root",
            "/",
            "--unit-path",
            &search_path,
            "--unit",
            unit,
        ]);
        let explained = serde_json::from_slice::<Value>(&out.stdout).ok();
        let we_say_wrapper = out.status.success()
            && explained
                .as_ref()
                .is_some_and(|e| e["wrapper_installed"] == json!(true) && e["errors"] == json!([]));
        table.push((
            systemd_runs_wrapper == we_say_wrapper,
            format!(
                "{unit}: systemd ran {ran:?} ({}), explain exit {:?}: {}",
                o.prop("LoadState"),
                out.status.code(),
                stderr(&out).trim()
            ),
        ));
    }
    table
}

/// The drop-in verdicts against a real systemd (a user manager with the
/// search path in systemd's priority order, the generator's directory
/// among them): for each arrangement, whether the command of the wrapper's
/// drop-in is what systemd runs must be what `explain` concludes.
#[test]
fn wrapper_verdicts_match_systemd() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = scratch_dir();
    let kubelet = systemd_oracle::build_fake_kubelet(dir.path());
    let k = kubelet.display();
    let reset = format!("[Service]\nExecStart=\nExecStart={k} debug\n");
    let more = format!("[Service]\nExecStart={k} more\n");
    let log = "[Service]\nEnvironment=X=1\n";
    let cases: &[(&str, &[Placed])] = &[
        ("plain", &[]),
        ("etcafter", &[(0, "zzz-debug.conf", &reset)]),
        ("usrafter", &[(3, "zzz-debug.conf", &reset)]),
        ("before", &[(0, "00-debug.conf", &reset)]),
        ("harmless", &[(1, "zzz-log.conf", log)]),
        ("maskedetc", &[(0, WRAPPER_DROPIN_NAME, "/dev/null")]),
        ("maskedusr", &[(3, WRAPPER_DROPIN_NAME, "/dev/null")]),
        ("emptyetc", &[(0, WRAPPER_DROPIN_NAME, "")]),
        ("appends", &[(1, "zzz-more.conf", &more)]),
        (
            "resetonly",
            &[(0, "zzz-none.conf", "[Service]\nExecStart=\n")],
        ),
    ];
    let mut table = verdicts(&dir.path().join("units"), &kubelet, cases);
    // The type-level directory (`service.d`) applies to every service: one
    // run each.
    for (i, name) in ["zzz-all.conf", "00-all.conf"].iter().enumerate() {
        let file = format!("service.d/{name}");
        let case: &[(&str, &[Placed])] = &[("typelevel", &[(0, &file, &reset)])];
        table.extend(verdicts(
            &dir.path().join(format!("type{i}")),
            &kubelet,
            case,
        ));
    }
    let text: Vec<&str> = table.iter().map(|(_, l)| l.as_str()).collect();
    assert!(table.iter().all(|(agree, _)| *agree), "{}", text.join("\n"));
    // The arrangements do cover both verdicts.
    let runs = text
        .iter()
        .filter(|l| l.contains("Some(\"wrapper\")"))
        .count();
    assert!(runs >= 3 && runs < table.len() - 3, "{}", text.join("\n"));
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
