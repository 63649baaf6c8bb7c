//! Node rules under a real systemd: the env drop-in `render dropins --rules`
//! writes, the shipped wrapper drop-in, and fixture node trees as the facts
//! the wrapper reads (`--facts-root`). The recorder standing in for kubelet
//! must get the GPU labels and taint on GPU nodes, and its argv unchanged on
//! the Raspberry Pi.

#[path = "support/elf.rs"]
mod elf;
#[path = "support/skipped.rs"]
mod skipped;
#[path = "support/systemd_oracle.rs"]
mod systemd_oracle;

use std::path::{Path, PathBuf};
use std::process::Command;

use systemd_oracle::{UserRun, write};

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A file with a static x86_64 program's ELF header.
fn static_elf_header(scratch: &Path) -> PathBuf {
    let path = scratch.join("static-elf-header");
    std::fs::write(
        &path,
        elf::static_elf(kubelet_labeler::render::arch::Arch::X86_64),
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

#[test]
fn rules_register_gpu_nodes_classified_and_leave_the_pi_alone() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path();
    let units = scratch.join("units");
    std::fs::create_dir_all(&units).unwrap();
    let recorder = systemd_oracle::build_fake_kubelet(scratch);
    let search_path =
        systemd_oracle::search_path(&UserRun::new(vec![units.clone()], vec![]), scratch);
    let gpu_classes = repo("examples/rules/gpu-classes.yaml");
    let openshift_gpu = repo("examples/rules/openshift-gpu.yaml");
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
        let unit = format!("{name}.service");
        write(
            &units.join(&unit),
            &format!(
                "[Service]\nType=simple\nExecStart={} --v=2\n",
                recorder.display()
            ),
        );
        let d = units.join(format!("{unit}.d"));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        write(
            &d.join("90-kubelet-labeler-env.conf"),
            &rendered_env_dropin(scratch, name, &args),
        );
        let own = format!(
            "--unit %n --profile openshift --unit-path {search_path} --state-dir {} --facts-root {}",
            scratch.join("state").display(),
            repo("tests/fixtures/nodes").join(node).display()
        );
        let shipped = kubelet_labeler::render::dropins::wrapper_dropin(
            kubelet_labeler::kubelet::Profile::OpenShift,
        )
        .replace(
            kubelet_labeler::contract::WRAPPER_PATH,
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
