//! `explain --machineconfig`: every MCO kubelet.service template rendered
//! into a MachineConfig, alone and merged with our example MachineConfigs
//! (machineconfigs/), must explain to the same argv as `explain --root` on
//! the equivalent node tree (files written directly, kubelet present).

#[path = "support/elf.rs"]
mod elf;
#[path = "support/mco.rs"]
mod mco;
#[path = "support/run_cli.rs"]
mod run_cli;
#[path = "support/skipped.rs"]
mod skipped;

use std::path::Path;

use kubelet_labeler::render::layout;
use run_cli::{cli, example_wrapper, json_of, machineconfig_example as example};
use serde_json::{Value, json};

/// The same node as a tree: the unit, the config, our example's drop-ins,
/// and what the OS image and ExecStartPre= provide at boot.
fn equivalent_tree(root: &Path, unit: &str, ours: bool) {
    let w = |rel: &str, text: &[u8]| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("etc/systemd/system/kubelet.service", unit.as_bytes());
    w("etc/kubernetes/kubelet.conf", mco::KUBELET_CONF.as_bytes());
    w("etc/os-release", b"ID=rhel\nVERSION_ID=9.6\n");
    w(
        "etc/node-sizing.env",
        b"SYSTEM_RESERVED_MEMORY=1Gi\nSYSTEM_RESERVED_CPU=500m\n",
    );
    for exe in ["usr/bin/kubelet", "usr/local/bin/kubenswrapper"] {
        w(exe, b"#!/bin/sh\n");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.join(exe), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // What boot makes: ExecStartPre='s config dirs, a platform's env file.
    for dir in [
        "etc/kubernetes/kubelet.conf.d",
        "etc/openshift/kubelet.conf.d",
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    w("run/kubelet-alibaba.env", b"");
    if ours {
        // Laid out by Ignition from the example MachineConfigs; here by our
        // own layout code would prove nothing, so take the drop-ins as render
        // makes them.
        let dropins = root.join("etc/systemd/system/kubelet.service.d");
        std::fs::create_dir_all(&dropins).unwrap();
        // The generator writes the wrapper's drop-in at boot; it is what
        // the tree holds.
        w(
            kubelet_labeler::contract::GENERATOR_PATH.trim_start_matches('/'),
            kubelet_labeler::render::dropins::generator(
                kubelet_labeler::kubelet::Profile::OpenShift,
                "kubelet.service",
                &[kubelet_labeler::render::arch::Arch::X86_64],
            )
            .as_bytes(),
        );
        let additions = kubelet_labeler::kubelet::Additions {
            labels: vec![("node.kubernetes.io/worker-gpu".into(), String::new())],
            taints: vec![],
        };
        std::fs::write(
            dropins.join(kubelet_labeler::contract::ENV_DROPIN_NAME),
            kubelet_labeler::render::dropins::env_dropin(&additions),
        )
        .unwrap();
    }
}

#[test]
fn machineconfigs_explain_like_the_tree_they_write() {
    let Some(dir) = mco::require_fixtures() else {
        return;
    };
    let units = mco::kubelet_units(&dir);
    assert!(units.len() >= 40, "only {} templates", units.len());
    for (name, unit) in units {
        for ours in [false, true] {
            let scratch = tempfile::tempdir().unwrap();
            let mc = scratch.path().join("01-worker-kubelet.yaml");
            std::fs::write(
                &mc,
                kubelet_labeler::render::machineconfig::to_yaml(&mco::mco_machineconfig(&unit))
                    .unwrap(),
            )
            .unwrap();
            let mc = mc.to_str().unwrap().to_string();
            let base = example("50-worker-gpu-kubelet-labeler-wrapper.yaml");
            let pool = example("50-worker-gpu-kubelet-labeler-labels.yaml");
            let mut args = vec!["explain", "--json", "--profile", "openshift"];
            args.extend(["--machineconfig", &mc]);
            if ours {
                args.extend(["--machineconfig", base.to_str().unwrap()]);
                args.extend(["--machineconfig", pool.to_str().unwrap()]);
            }
            let out = cli(&args);
            let from_mc = json_of(&out);
            assert!(out.status.success(), "{name}: {from_mc}");

            let tree = scratch.path().join("tree");
            equivalent_tree(&tree, &unit, ours);
            let from_tree = json_of(&cli(&[
                "explain",
                "--json",
                "--profile",
                "openshift",
                "--root",
                tree.to_str().unwrap(),
            ]));
            for key in [
                "original_argv",
                "argv",
                "added_labels",
                "taints",
                "left_out",
            ] {
                assert_eq!(from_mc[key], from_tree[key], "{name} (ours: {ours}): {key}");
            }
            let node_paths = |v: &Value| -> Vec<String> {
                v["dropins"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| {
                        let d = d.as_str().unwrap();
                        d.strip_prefix(tree.to_str().unwrap())
                            .unwrap_or(d)
                            .to_string()
                    })
                    .collect()
            };
            assert_eq!(node_paths(&from_mc), node_paths(&from_tree), "{name}");
            assert_eq!(from_mc["wrapper_installed"], json!(ours), "{name}");
            if ours {
                assert!(
                    from_mc["added_labels"]
                        .as_array()
                        .unwrap()
                        .contains(&json!("node.kubernetes.io/worker-gpu=")),
                    "{name}: {from_mc}"
                );
                // Offline, the kubelet binary is not in the tree: a warning.
                let warnings = from_mc["warnings"].to_string();
                assert!(warnings.contains("not in this tree"), "{name}: {warnings}");
            }
        }
    }
}

#[test]
fn falling_back_exits_1_with_the_reason() {
    let Some(dir) = mco::require_fixtures() else {
        return;
    };
    let (_, unit) = mco::kubelet_units(&dir).pop().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mut mc = mco::mco_machineconfig(&unit);
    let bad = "[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=node-role.kubernetes.io/gpu-worker=\"\n";
    mc["spec"]["config"]["systemd"]["units"][0]["dropins"] =
        json!([{ "name": "90-kubelet-labeler-env.conf", "contents": bad }]);
    let path = scratch.path().join("mc.yaml");
    std::fs::write(
        &path,
        kubelet_labeler::render::machineconfig::to_yaml(&mc).unwrap(),
    )
    .unwrap();
    let base = example("50-worker-gpu-kubelet-labeler-wrapper.yaml");
    let out = cli(&[
        "explain",
        "--machineconfig",
        path.to_str().unwrap(),
        "--machineconfig",
        base.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("without our additions")
            && stderr.contains("node-role.kubernetes.io/gpu-worker"),
        "{stderr}"
    );
    // kubelet behind `sh -c`: words appended would reach the shell.
    let shell =
        "[Service]\nExecStart=\nExecStart=/bin/sh -c 'exec /usr/bin/kubelet --v=2 \"$$@\"' sh\n";
    let good = "[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=node.kubernetes.io/gpu=\"\n";
    mc["spec"]["config"]["systemd"]["units"][0]["dropins"] = json!([
        { "name": "20-shell.conf", "contents": shell },
        { "name": "90-kubelet-labeler-env.conf", "contents": good },
    ]);
    std::fs::write(
        &path,
        kubelet_labeler::render::machineconfig::to_yaml(&mc).unwrap(),
    )
    .unwrap();
    let out = cli(&[
        "explain",
        "--machineconfig",
        path.to_str().unwrap(),
        "--machineconfig",
        base.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("without our additions: the original ExecStart= runs /bin/sh"),
        "{stderr}"
    );
    // A MachineConfigPool alone is not something to explain.
    let pool = example("machineconfigpool-worker-gpu.yaml");
    let out = cli(&["explain", "--machineconfig", pool.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no MachineConfig"));
}

/// Every control-plane node tainted at registration, with no
/// custom pool; the platform's own master taint is kept beside ours.
#[test]
fn role_machineconfigs_taint_every_master_next_to_the_platform_taint() {
    let Some(dir) = mco::require_fixtures() else {
        return;
    };
    let (name, unit) = mco::kubelet_units(&dir)
        .into_iter()
        .find(|(n, _)| n.starts_with("release-4.20__templates__master") && n.contains("_base"))
        .expect("4.20 master template");
    let scratch = tempfile::tempdir().unwrap();
    let out_dir = scratch.path().join("openshift");
    let wrapper = example_wrapper(scratch.path());
    let rendered = cli(&[
        "render",
        "machineconfig",
        "--role",
        "master",
        "--taint",
        "dedicated=control-plane:NoSchedule",
        "--wrapper",
        wrapper.to_str().unwrap(),
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let mut files: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "50-master-kubelet-labeler-labels.yaml",
            "50-master-kubelet-labeler-wrapper.yaml",
            "kustomization.yaml",
            "machineconfiguration-cluster.yaml"
        ],
        "no MachineConfigPool for a built-in role"
    );
    let mut mc = mco::mco_machineconfig(&unit);
    mc["metadata"]["name"] = json!("01-master-kubelet");
    mc["metadata"]["labels"][layout::ROLE_LABEL] = json!("master");
    let mc_path = scratch.path().join("01-master-kubelet.yaml");
    std::fs::write(
        &mc_path,
        kubelet_labeler::render::machineconfig::to_yaml(&mc).unwrap(),
    )
    .unwrap();
    let mut args = vec![
        "explain".to_string(),
        "--json".into(),
        "--profile".into(),
        "openshift".into(),
        "--machineconfig".into(),
        mc_path.display().to_string(),
    ];
    for f in &files[..2] {
        args.push("--machineconfig".into());
        args.push(out_dir.join(f).display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = cli(&args);
    let e = json_of(&out);
    assert!(out.status.success(), "{name}: {e}");
    let taints: Vec<&str> = e["taints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        taints.contains(&"dedicated=control-plane:NoSchedule")
            && taints
                .iter()
                .any(|t| t.starts_with("node-role.kubernetes.io/master")),
        "{name}: {taints:?}"
    );
}
