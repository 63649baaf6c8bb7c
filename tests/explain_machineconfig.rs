//! `explain --machineconfig`: every MCO kubelet.service template rendered
//! into a MachineConfig, alone and merged with our example MachineConfigs
//! (machineconfigs/), must explain to the same argv as `explain --root` on
//! the equivalent node tree (files written directly, kubelet present).

use crate::support::{mco, run_cli, scratch_dir, skipped, stderr};

use std::path::Path;

use kubelet_labeler::cli::render::layout;
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
            kubelet_labeler::node::contract::GENERATOR_PATH.trim_start_matches('/'),
            kubelet_labeler::cli::render::dropins::generator(
                kubelet_labeler::node::kubelet::Profile::OpenShift,
                "kubelet.service",
                &[kubelet_labeler::cli::render::arch::Arch::X86_64],
            )
            .as_bytes(),
        );
        // Executable, as the MachineConfig writes it: systemd runs it.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            root.join(kubelet_labeler::node::contract::GENERATOR_PATH.trim_start_matches('/')),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let additions = kubelet_labeler::node::kubelet::Additions {
            labels: vec![("node.kubernetes.io/worker-gpu".into(), String::new())],
            taints: vec![],
        };
        std::fs::write(
            dropins.join(kubelet_labeler::node::contract::ENV_DROPIN_NAME),
            kubelet_labeler::cli::render::dropins::env_dropin(&additions),
        )
        .unwrap();
        // The day-2 sync's units and the drop-in that pulls them in.
        for (path, text) in kubelet_labeler::cli::render::sync_units::files(
            kubelet_labeler::node::kubelet::Profile::OpenShift,
            "kubelet.service",
            None,
        ) {
            w(path.trim_start_matches('/'), text.as_bytes());
        }
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
            let scratch = scratch_dir();
            let mc = scratch.path().join("01-worker-kubelet.yaml");
            std::fs::write(
                &mc,
                kubelet_labeler::cli::render::machineconfig::to_yaml(&mco::mco_machineconfig(
                    &unit,
                ))
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
    let scratch = scratch_dir();
    let mut mc = mco::mco_machineconfig(&unit);
    let bad = "[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=node-role.kubernetes.io/gpu-worker=\"\n";
    mc["spec"]["config"]["systemd"]["units"][0]["dropins"] =
        json!([{ "name": "90-kubelet-labeler-env.conf", "contents": bad }]);
    let path = scratch.path().join("mc.yaml");
    std::fs::write(
        &path,
        kubelet_labeler::cli::render::machineconfig::to_yaml(&mc).unwrap(),
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
        kubelet_labeler::cli::render::machineconfig::to_yaml(&mc).unwrap(),
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
    let scratch = scratch_dir();
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
            "cluster-wide",
            "kustomization.yaml",
        ],
        "no MachineConfigPool for a built-in role"
    );
    let mut mc = mco::mco_machineconfig(&unit);
    mc["metadata"]["name"] = json!("01-master-kubelet");
    mc["metadata"]["labels"][layout::ROLE_LABEL] = json!("master");
    let mc_path = scratch.path().join("01-master-kubelet.yaml");
    std::fs::write(
        &mc_path,
        kubelet_labeler::cli::render::machineconfig::to_yaml(&mc).unwrap(),
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

/// A MachineConfig named `name` with `config` (Ignition) as its config.
fn hostile_mc(name: &str, mut config: Value) -> String {
    // A version the MCO reads: without one the MachineConfig is refused
    // before its paths and names are.
    config["ignition"] = json!({ "version": "3.4.0" });
    kubelet_labeler::cli::render::machineconfig::to_yaml(&json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": { "name": name },
        "spec": { "config": config },
    }))
    .unwrap()
}

/// Paths and names that climb out of the scratch tree (issue 26 item 1):
/// refused with the MachineConfig, the field and the fix, before anything
/// is written; everything around the scratch tree stays byte-identical,
/// a file there that a mask names included. The scratch tree is put where
/// each climb lands inside the test's own directory (TMPDIR four levels
/// down), so a regression writes there, never into the host's /etc.
#[test]
fn climbing_paths_and_names_are_refused_and_write_nothing_outside() {
    let tmp = scratch_dir();
    let d = tmp.path();
    let scratch_parent = d.join("a/b/tmp");
    std::fs::create_dir_all(&scratch_parent).unwrap();
    std::fs::write(
        d.join("a/b/victim.service"),
        "[Service]\nExecStart=/bin/true\n",
    )
    .unwrap();
    std::fs::create_dir_all(d.join("a/etc/cron.d")).unwrap();
    std::fs::write(d.join("a/etc/cron.d/keep"), "* * * * * root true\n").unwrap();
    let file = |path: &str| {
        json!({ "storage": { "files": [
            { "path": "/etc/ok", "contents": { "source": "data:,ok" } },
            { "path": path, "mode": 0o755, "contents": { "source": "data:,pwned" } } ] } })
    };
    let unit = |u: Value| json!({ "systemd": { "units": [ { "name": "ok.service", "contents": "" }, u ] } });
    let cases: Vec<(Value, &str)> = vec![
        (
            file("/usr/../../../../etc/cron.d/x"),
            "spec.config.storage.files[1].path",
        ),
        (file("/usr/../../../x"), "spec.config.storage.files[1].path"),
        (file("../../../x"), "spec.config.storage.files[1].path"),
        (file("/etc//x"), "spec.config.storage.files[1].path"),
        (file("/etc/./x"), "spec.config.storage.files[1].path"),
        (file("/etc/x/"), "spec.config.storage.files[1].path"),
        (
            unit(json!({ "name": "../../../../../x.service", "contents": "pwned" })),
            "spec.config.systemd.units[1].name",
        ),
        (
            unit(json!({ "name": "../../../../../victim.service", "mask": true })),
            "spec.config.systemd.units[1].name",
        ),
        (
            unit(json!({ "name": "a/b.service", "mask": true })),
            "spec.config.systemd.units[1].name",
        ),
        (
            unit(json!({ "name": "k.service", "dropins": [
                { "name": "10-ok.conf", "contents": "" },
                { "name": "a/../../../../../../b.conf", "contents": "pwned" } ] })),
            "spec.config.systemd.units[1].dropins[1].name",
        ),
        (
            unit(json!({ "name": "k.service", "dropins": [
                { "name": "../../../../../../b.conf", "contents": "pwned" } ] })),
            "spec.config.systemd.units[1].dropins[0].name",
        ),
    ];
    for (config, field) in cases {
        let mc = d.join("a/b/mc.yaml");
        std::fs::write(&mc, hostile_mc("99-hostile", config.clone())).unwrap();
        let before = run_cli::snapshot(d);
        let out = run_cli::cli_with_tmpdir(
            &scratch_parent,
            &["explain", "--machineconfig", mc.to_str().unwrap()],
        );
        let err = stderr(&out);
        assert_eq!(run_cli::snapshot(d), before, "{config}: {err}");
        // The field as named, or by its JSON path as Ignition names it.
        let json_path = field
            .replacen("spec.config", "spec.config $", 1)
            .replace('[', ".")
            .replace(']', "");
        assert!(
            !out.status.success()
                && err.contains("MachineConfig \"99-hostile\"")
                && (err.contains(field) || err.contains(&json_path))
                && (err.contains("Ignition refuses it") || err.contains("name the")),
            "{config}: {err}"
        );
    }
    // The fix the message gives is the path Ignition means.
    std::fs::write(
        d.join("a/b/mc.yaml"),
        hostile_mc("99-hostile", file("/usr/../../../../etc/cron.d/x")),
    )
    .unwrap();
    let err = stderr(&cli(&[
        "explain",
        "--machineconfig",
        d.join("a/b/mc.yaml").to_str().unwrap(),
    ]));
    assert!(err.contains("write it as /etc/cron.d/x"), "{err}");
}

/// Modes keep their permission bits only in the scratch tree; a file below
/// a masked unit's link is refused, not written through it.
#[test]
fn the_scratch_tree_holds_no_setuid_file_and_follows_no_link() {
    use std::os::unix::fs::PermissionsExt;
    let mc = |config: Value| {
        layout::Layout::merge(
            layout::machineconfigs_from_yaml(&hostile_mc("50-x", config), "mc.yaml").unwrap(),
        )
        .unwrap()
    };
    let dir = scratch_dir();
    let root = dir.path().join("tree");
    let written = mc(json!({ "storage": { "files": [
        { "path": "/usr/local/bin/x", "mode": 0o7755, "contents": { "source": "data:,x" } } ] } }))
    .write(&root)
    .unwrap();
    assert_eq!(written, [root.join("usr/local/bin/x")]);
    let mode = std::fs::metadata(&written[0]).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o755);
    // A tree that is not new is refused.
    let e = mc(json!({})).write(&root).unwrap_err();
    assert!(e.to_string().contains("is not empty"), "{e}");
    let root = dir.path().join("tree2");
    let e = mc(json!({
        "storage": { "files": [ { "path": "/etc/systemd/system/m.service/x",
                                  "contents": { "source": "data:,x" } } ] },
        "systemd": { "units": [ { "name": "m.service", "mask": true } ] } }))
    .write(&root)
    .unwrap_err();
    assert!(
        format!("{e:#}").contains("/etc/systemd/system/m.service is not a directory"),
        "{e:#}"
    );
    assert!(!Path::new("/dev/null/x").exists());
}

/// Every file path, unit name and drop-in name real Ignition refuses
/// (`ignition-validate`), `explain --machineconfig` refuses too; the clean
/// absolute paths Ignition takes, it takes.
#[test]
fn names_and_paths_ignition_refuses_are_refused() {
    if !skipped::need("ignition-validate") {
        return;
    }
    let validates = |config: &Value| {
        let f = tempfile::NamedTempFile::new().unwrap();
        let mut config = config.clone();
        config["ignition"] = json!({ "version": "3.4.0-experimental" });
        std::fs::write(f.path(), serde_json::to_vec(&config).unwrap()).unwrap();
        std::process::Command::new("ignition-validate")
            .arg(f.path())
            .output()
            .unwrap()
            .status
            .success()
    };
    let ours = |config: &Value| {
        layout::Layout::merge(
            layout::machineconfigs_from_yaml(&hostile_mc("50-x", config.clone()), "mc.yaml")
                .unwrap(),
        )
        .is_ok()
    };
    let mut configs = Vec::new();
    for p in [
        "/etc/x",
        "/usr/local/bin/k",
        "/a b",
        "/usr/../x",
        "/..",
        "/.",
        "etc/x",
        "./x",
        "/etc//x",
        "/etc/./x",
        "/etc/x/",
        "/etc/x/.",
        "/etc/x/..",
        "",
        "x",
        "/etc/\u{0}x",
    ] {
        // (With a source: one without is the MCO's merge's refusal.)
        configs.push(json!({ "storage": { "files": [ { "path": p,
            "contents": { "source": "data:," } } ] } }));
    }
    for n in [
        "k.service",
        "k@.service",
        "k@i.service",
        "k.timer",
        "x.foo",
        "../../x.service",
        "a/b.service",
        "",
        ".service",
        "k.service/",
        "x",
    ] {
        configs.push(json!({ "systemd": { "units": [ { "name": n } ] } }));
    }
    for n in [
        "10-a.conf",
        "a.conf.d",
        "../x.conf",
        "a/b.conf",
        "",
        "x",
        ".conf",
    ] {
        configs.push(
            json!({ "systemd": { "units": [ { "name": "k.service", "dropins": [ { "name": n } ] } ] } }),
        );
    }
    for config in &configs {
        let ignition = validates(config);
        if !ignition {
            assert!(!ours(config), "Ignition refuses, we take: {config}");
        } else if let Some(path) = config.pointer("/storage/files/0/path") {
            // A NUL byte Ignition passes on to a write that fails.
            if !path.as_str().unwrap().contains('\0') {
                assert!(ours(config), "Ignition takes, we refuse: {config}");
            }
        }
    }
}

/// Issue 22 items 4 and 7: a rendered config names its pool and its
/// OpenShift release. The unit's flags are judged for that release's
/// kubelet (4.20: 1.33, which takes --pod-infra-container-image), and the
/// output says which; another pool's MachineConfigs beside it are refused.
#[test]
fn a_rendered_config_names_its_release_and_its_pool() {
    let Some(dir) = mco::require_fixtures() else {
        return;
    };
    let (_, unit) = mco::kubelet_units(&dir)
        .into_iter()
        .find(|(n, _)| n.starts_with("release-4.20__templates__worker") && n.contains("_base"))
        .expect("4.20 worker template");
    assert!(unit.contains("--pod-infra-container-image"));
    let scratch = scratch_dir();
    let write = |name: &str, release: Option<&str>| {
        let mut mc = mco::mco_machineconfig(&unit);
        mc["metadata"] = json!({ "name": name });
        if let Some(r) = release {
            mc["metadata"]["annotations"] = json!({
                "machineconfiguration.openshift.io/release-image-version": r });
        }
        let path = scratch.path().join(format!("{name}.yaml"));
        std::fs::write(
            &path,
            kubelet_labeler::cli::render::machineconfig::to_yaml(&mc).unwrap(),
        )
        .unwrap();
        path.display().to_string()
    };
    let hash = "5d0e7f6c3b1a29d8e4f7c6b5a3928170";
    let worker = write(&format!("rendered-worker-{hash}"), Some("4.20.3"));
    let explain = |extra: &[&str]| {
        let mut args = vec!["explain", "--json", "--machineconfig", &worker];
        args.extend(extra);
        let out = cli(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json_of(&out)
    };
    let e = explain(&[]);
    assert!(
        !e["warnings"]
            .to_string()
            .contains("pod-infra-container-image"),
        "{}",
        e["warnings"]
    );
    assert!(
        e["kubelet_version"].as_str().unwrap().starts_with(&format!(
            "1.33 (OpenShift 4.20.3, the release rendered-worker-{hash} was rendered by"
        )),
        "{}",
        e["kubelet_version"]
    );
    let human = cli(&["explain", "--machineconfig", &worker]);
    assert!(
        String::from_utf8_lossy(&human.stdout).contains("kubelet version: 1.33 (OpenShift 4.20.3"),
        "{}",
        String::from_utf8_lossy(&human.stdout)
    );
    // An explicit version wins; from 1.35 kubelet exits on the flag.
    let e = explain(&["--kubelet-version", "1.35"]);
    assert!(
        e["warnings"].to_string().contains(
            "--pod-infra-container-image: kubelet 1.35 has no such flag (removed in 1.35) and exits on it"
        ),
        "{}",
        e["warnings"]
    );
    assert_eq!(e["kubelet_version"], json!("1.35 (--kubelet-version)"));
    // No release named: unknown, said, and the flag judged for every kubelet.
    let unnamed = write("00-unnamed", None);
    let out = cli(&["explain", "--json", "--machineconfig", &unnamed]);
    let e = json_of(&out);
    assert!(
        e["kubelet_version"]
            .as_str()
            .unwrap()
            .starts_with("unknown")
            && e["kubelet_version"]
                .to_string()
                .contains("--kubelet-version")
            && e["warnings"]
                .to_string()
                .contains("only kubelets before 1.35 take it"),
        "{e}"
    );
    let out = cli(&[
        "explain",
        "--kubelet-version",
        "130",
        "--machineconfig",
        &unnamed,
    ]);
    assert_eq!(out.status.code(), Some(2));

    // Master's rendered config with a custom worker pool's: refused.
    let master = write(&format!("rendered-master-{hash}"), Some("4.20.3"));
    let pool = example("50-worker-gpu-kubelet-labeler-labels.yaml");
    let out = cli(&[
        "explain",
        "--machineconfig",
        &master,
        "--machineconfig",
        pool.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a node is in one pool, not master and worker-gpu")
            && err.contains("(rendered for pool master)"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

/// Issue 33 item 5: what the release decides is judged against the release
/// the rendered config names. A 3.5.0 MachineConfig with a 4.18 rendered
/// config: the MCO of 4.14-4.18 parses up to 3.4.0 and degrades the pool
/// (docs/commands.md), so exit 1 naming both and the fix; with 4.19, 3.5.0
/// is read, exit 0.
#[test]
fn the_ignition_version_is_judged_by_the_named_release() {
    let scratch = scratch_dir();
    let unit =
        "[Service]\nExecStart=/usr/bin/kubelet --node-labels=node-role.kubernetes.io/worker\n";
    let mut pool = layout::machineconfigs_from_yaml(
        &std::fs::read_to_string(example("50-worker-gpu-kubelet-labeler-labels.yaml")).unwrap(),
        "example",
    )
    .unwrap()
    .remove(0);
    pool["spec"]["config"]["ignition"]["version"] = json!("3.5.0");
    let pool_path = scratch.path().join("pool.yaml");
    std::fs::write(
        &pool_path,
        kubelet_labeler::cli::render::machineconfig::to_yaml(&pool).unwrap(),
    )
    .unwrap();
    for (release, code) in [("4.18.7", 1), ("4.14.0", 1), ("4.19.2", 0)] {
        let rendered = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": {"name": "rendered-worker-gpu-0a1b2c", "annotations": {
                "machineconfiguration.openshift.io/release-image-version": release}},
            "spec": {"config": {"ignition": {"version": "3.4.0"},
                "systemd": {"units": [{"name": "kubelet.service", "contents": unit}]}}}
        });
        let path = scratch.path().join(format!("rendered-{release}.yaml"));
        std::fs::write(
            &path,
            kubelet_labeler::cli::render::machineconfig::to_yaml(&rendered).unwrap(),
        )
        .unwrap();
        let out = cli(&[
            "explain",
            "--machineconfig",
            path.to_str().unwrap(),
            "--machineconfig",
            pool_path.to_str().unwrap(),
            "--machineconfig",
            example("50-worker-gpu-kubelet-labeler-wrapper.yaml")
                .to_str()
                .unwrap(),
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{release}: {err}");
        let said = format!(
            "MachineConfig \"50-worker-gpu-kubelet-labeler-labels\" is Ignition 3.5.0: the MCO of \
             OpenShift {release} (the release rendered-worker-gpu-0a1b2c was rendered by) parses \
             MachineConfigs up to Ignition 3.4.0 and degrades the pool on it; render it with \
             --ignition-version 3.4.0"
        );
        assert_eq!(err.contains(&said), code == 1, "{release}: {err}");
    }
}
