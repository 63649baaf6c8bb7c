//! Node rules under a real systemd: the env drop-in `render dropins --rules`
//! writes, the shipped wrapper drop-in, and fixture node trees as the facts
//! the wrapper reads (`--facts-root`). The recorder standing in for kubelet
//! must get the GPU labels and taint on GPU nodes, and its argv unchanged on
//! the Raspberry Pi.

use crate::support::{elf, repo, scratch_dir, systemd_oracle, write};

use std::path::{Path, PathBuf};
use std::process::Command;

use systemd_oracle::UserRun;

/// A file with a static x86_64 program's ELF header.
fn static_elf_header(scratch: &Path) -> PathBuf {
    let path = scratch.join("static-elf-header");
    std::fs::write(
        &path,
        elf::static_elf(kubelet_labeler::cli::render::arch::Arch::X86_64),
    )
    .unwrap();
    path
}

/// The env drop-in render writes for these rule files.
fn rendered_env_dropin(scratch: &Path, name: &str, extra: &[&str]) -> String {
    let root = scratch.join(format!("render-{name}"));
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args([
            "render",
            "dropins",
            "--profile",
            "openshift",
            "--create-root",
        ])
        .arg("--root")
        .arg(&root)
        // Only the env drop-in is read: a static ELF header stands in for the
        // wrapper (render refuses the dynamic cargo build).
        .arg("--wrapper")
        .arg(static_elf_header(scratch))
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(
        root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf"),
    )
    .unwrap()
}

/// `name.service` under `units`: the recorder as kubelet, run through the
/// wrapper (the shipped drop-in) on the fixture `node`, with `env` as its env
/// drop-in and its stderr appended to `name.log` in `scratch`.
fn install_unit(
    scratch: &Path,
    units: &Path,
    name: &str,
    node: &str,
    env: &str,
    recorder: &Path,
    search_path: &str,
) {
    let unit = format!("{name}.service");
    write(
        &units.join(&unit),
        &format!(
            "[Service]\nType=simple\nExecStart={} --v=2\n",
            recorder.display()
        ),
    );
    let d = units.join(format!("{unit}.d"));
    write(&d.join("90-kubelet-labeler-env.conf"), env);
    let own = format!(
        "--unit %n --profile openshift --unit-path {search_path} --state-dir {} --facts-root {}",
        scratch.join("state").display(),
        repo().join("tests/fixtures/nodes").join(node).display()
    );
    let shipped = kubelet_labeler::cli::render::dropins::wrapper_dropin(
        kubelet_labeler::node::kubelet::Profile::OpenShift,
    )
    .replace(
        kubelet_labeler::node::contract::WRAPPER_PATH,
        env!("CARGO_BIN_EXE_kubelet-labeler-wrapper"),
    )
    .replace("--unit %n --profile openshift", &own);
    write(&d.join("zz-kubelet-labeler.conf"), &shipped);
    let log = scratch.join(format!("{name}.log"));
    write(
        &d.join("50-test-log.conf"),
        &format!("[Service]\nStandardError=append:{}\n", log.display()),
    );
}

#[test]
fn rules_register_gpu_nodes_classified_and_leave_the_pi_alone() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = scratch_dir();
    let scratch = dir.path();
    let units = scratch.join("units");
    std::fs::create_dir_all(&units).unwrap();
    let recorder = systemd_oracle::build_fake_kubelet(scratch);
    let search_path =
        systemd_oracle::search_path(&UserRun::new(vec![units.clone()], vec![]), scratch);
    let gpu_classes = repo().join("examples/rules/gpu-classes.yaml");
    let openshift_gpu = repo().join("examples/rules/openshift-gpu.yaml");
    // (unit, fixture node, render arguments)
    let cases: Vec<(&str, &str, Vec<String>)> = vec![
        (
            "dgx",
            "dgx",
            vec![
                "--rules".into(),
                openshift_gpu.display().to_string(),
                "--nfd-labels".into(),
                "openshift".into(),
            ],
        ),
        (
            "desktop",
            "desktop-2gpu",
            vec!["--rules".into(), gpu_classes.display().to_string()],
        ),
        (
            "pi",
            "rpi4",
            vec!["--rules".into(), openshift_gpu.display().to_string()],
        ),
    ];
    for (name, node, args) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env = rendered_env_dropin(scratch, name, &args);
        install_unit(scratch, &units, name, node, &env, &recorder, &search_path);
    }
    let run = UserRun::new(
        vec![units.clone()],
        cases
            .iter()
            .map(|(n, _, _)| format!("{n}.service"))
            .collect(),
    );
    let outcomes = systemd_oracle::run_user_manager(&run, scratch);
    let argv = |n: &str| outcomes[&format!("{n}.service")].records[0].argv_lossy();
    let journal = |n: &str| std::fs::read_to_string(scratch.join(format!("{n}.log"))).unwrap();
    let original = vec![recorder.display().to_string(), "--v=2".to_string()];

    // DGX: tainted by its hardware, with the NFD labels the GPU Operator reads.
    let dgx = argv("dgx");
    assert!(
        dgx.contains(&"--register-with-taints=nvidia.com/gpu=true:NoSchedule".to_string()),
        "{dgx:?}\n{}",
        journal("dgx")
    );
    let labels = dgx
        .iter()
        .find(|w| w.starts_with("--node-labels="))
        .expect("labels");
    for want in [
        "feature.node.kubernetes.io/pci-10de.present=true",
        "feature.node.kubernetes.io/kernel-version.full=5.14.0-570.25.1.el9_6.x86_64",
        "feature.node.kubernetes.io/system-os_release.ID=rhel",
        "feature.node.kubernetes.io/system-os_release.OSTREE_VERSION=9.6.20250701-0",
    ] {
        assert!(labels.contains(want), "{want} not in {labels}");
    }
    assert!(
        journal("dgx").contains("rules matched: nvidia-gpu-taint"),
        "{}",
        journal("dgx")
    );

    // Desktop with two GeForce cards: the GPU-classes example's classification.
    let desktop = argv("desktop");
    let labels = desktop
        .iter()
        .find(|w| w.starts_with("--node-labels="))
        .expect("labels");
    for want in [
        "nvidia.com/gpu=true",
        "feature.node.kubernetes.io/gpu.count=2",
        "feature.node.kubernetes.io/gpu.rtx5070=true",
        "feature.node.kubernetes.io/gpu.rtx3050=true",
        "feature.node.kubernetes.io/hardware.tier=dual-gpu",
    ] {
        assert!(labels.contains(want), "{want} not in {labels}");
    }
    assert!(
        !desktop
            .iter()
            .any(|w| w.starts_with("--register-with-taints")),
        "{desktop:?}"
    );

    // The Pi matches nothing: kubelet starts exactly as it would without us.
    assert_eq!(argv("pi"), original);
    assert!(
        journal("pi").contains("no labels or taints to add; starting kubelet unchanged"),
        "{}",
        journal("pi")
    );
}

/// NFD takes any string as a rule name. Names holding a unit-file line
/// (`ExecStart=`), a trailing newline, a backslash that would continue a
/// line, a carriage return, NUL and U+2028 must leave the env drop-in as
/// meant, in `render dropins` and inside `render machineconfig`'s
/// MachineConfig: real systemd runs one command (the wrapper's), the
/// wrapper reads every name back exactly, and its journal line stays one
/// line.
#[test]
fn hostile_rule_names_change_nothing_systemd_reads() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = scratch_dir();
    let scratch = dir.path();
    let names = [
        "gpu\nExecStart=/bin/evil",
        "trailing\n",
        "a\nb\\",
        "cr\rEnvironment=KUBELET_LABELER_NODE_RULES=",
        "nul\0[Unit]",
        "ls\u{2028}x",
        "back\\",
        "",
        "my sample rule",
    ];
    // JSON is YAML; every rule matches (no matchFeatures) and adds one label.
    let rules: Vec<serde_json::Value> = names
        .iter()
        .enumerate()
        .map(|(i, n)| serde_json::json!({ "name": n, "labels": { format!("n{i}"): "true" } }))
        .collect();
    let object = serde_json::json!({
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": { "name": "hostile" },
        "spec": { "rules": rules }
    });
    let rules_file = scratch.join("hostile.yaml");
    // The line breaks of YAML 1.1 written escaped, as a rules file must
    // hold them (raw, kubectl would read other text than render).
    let text = object
        .to_string()
        .replace('\u{85}', "\\u0085")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029");
    std::fs::write(&rules_file, text).unwrap();
    let rules_arg = rules_file.display().to_string();
    let env = rendered_env_dropin(scratch, "hostile", &["--rules", &rules_arg]);

    // render machineconfig carries the same drop-in in its data URL; a
    // built-in role's in the role layer's name and variables.
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["render", "machineconfig", "--role", "worker", "-o", "-"])
        .args(["--rules", &rules_arg, "--wrapper"])
        .arg(static_elf_header(scratch))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let source = docs
        .iter()
        .flat_map(|d| {
            d.pointer("/spec/config/storage/files")
                .and_then(|f| f.as_array())
        })
        .flatten()
        .find(|f| {
            f["path"]
                .as_str()
                .unwrap()
                .ends_with(kubelet_labeler::node::contract::ROLE_ENV_DROPIN_NAME)
        })
        .expect("the env drop-in in a MachineConfig")["contents"]["source"]
        .as_str()
        .unwrap()
        .to_string();
    let url = kubelet_labeler::cli::render::encoding::DataUrl {
        source,
        compression: None,
    };
    let in_mc = kubelet_labeler::cli::render::encoding::decode(&url).unwrap();
    let as_role = kubelet_labeler::node::contract::ROLE_LAYER.iter().fold(
        env.clone(),
        |text, (role, var)| {
            text.replace(
                &format!("Environment=\"{var}="),
                &format!("Environment=\"{role}="),
            )
        },
    );
    assert_eq!(String::from_utf8(in_mc).unwrap(), as_role);

    let units = scratch.join("units");
    std::fs::create_dir_all(&units).unwrap();
    let recorder = systemd_oracle::build_fake_kubelet(scratch);
    let search_path =
        systemd_oracle::search_path(&UserRun::new(vec![units.clone()], vec![]), scratch);
    install_unit(
        scratch,
        &units,
        "hostile",
        "dgx",
        &env,
        &recorder,
        &search_path,
    );
    // The same environment without the wrapper: what systemd read of it
    // (kubelet gets no variable of ours).
    write(
        &units.join("hostile-raw.service"),
        &format!(
            "[Service]\nType=simple\nExecStart={} --v=2\n",
            recorder.display()
        ),
    );
    write(
        &units.join("hostile-raw.service.d/90-kubelet-labeler-env.conf"),
        &env,
    );
    let run = UserRun::new(
        vec![units.clone()],
        vec!["hostile.service".into(), "hostile-raw.service".into()],
    );
    let outcomes = systemd_oracle::run_user_manager(&run, scratch);
    let outcome = &outcomes["hostile.service"];
    let journal = std::fs::read_to_string(scratch.join("hostile.log")).unwrap_or_default();
    let manager = systemd_oracle::manager_log(scratch);
    assert!(outcome.loaded(), "{outcome:?}\n{manager}");
    // One process: the wrapper exec'ing kubelet; no /bin/evil ran or was refused.
    assert_eq!(
        outcome.records.len(),
        1,
        "{outcome:?}\n{journal}\n{manager}"
    );
    let rec = &outcome.records[0];
    let rules_var = kubelet_labeler::node::contract::RULES_VAR;
    assert_eq!(rec.env_get(rules_var), None, "kubelet got our variable");
    let raw = &outcomes["hostile-raw.service"];
    assert_eq!(raw.records.len(), 1, "{raw:?}\n{manager}");
    let compact = raw.records[0]
        .env_get(rules_var)
        .expect("the rules variable reached the unit's environment");
    let read_back = kubelet_labeler::node::rules::compact::decode(&compact).unwrap();
    let read_names: Vec<&str> = read_back.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(read_names, names);
    let argv = rec.argv_lossy();
    let labels = argv
        .iter()
        .find(|w| w.starts_with("--node-labels="))
        .unwrap_or_else(|| panic!("no labels in {argv:?}\n{journal}"));
    for i in 0..names.len() {
        let want = format!("feature.node.kubernetes.io/n{i}=true");
        assert!(labels.contains(&want), "{want} not in {labels}");
    }
    assert!(!manager.contains("evil"), "{manager}");
    let matched: Vec<&str> = journal
        .lines()
        .filter(|l| l.contains("rules matched"))
        .collect();
    assert_eq!(matched.len(), 1, "{journal}");
    assert!(
        matched[0].contains(r#"rules matched: "gpu\nExecStart=/bin/evil", "trailing\n""#),
        "{journal}"
    );
    assert!(
        journal.lines().all(|l| !l.starts_with("ExecStart")),
        "{journal}"
    );
}
