//! `iso fleet` unpacks the pools' files within one budget for the whole
//! run (review 16 r16c F5): many gzip'ed files, each under the per-file cap
//! and each pool's layout under the per-layout one, read for every pool
//! that takes their MachineConfig, no longer multiply into gigabytes of
//! unpacking. Past the budget the sources are refused, naming the
//! MachineConfig, its file and the fix, and nothing is written.

use crate::iso_fleet::{MCS, PEM, base_iso};
use crate::iso_fleet_cli::{fleet_args, said};
use crate::support::iso::{gpu_and_numa_pools, stand_in_selector};
use crate::support::scratch_dir;

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

/// The files kubelet.service reads with `EnvironmentFile=` that a
/// MachineConfig may write: the checks read them.
const ENV_FILES: [&str; 2] = [
    "/etc/kubernetes/kubelet-workaround",
    "/etc/kubernetes/kubelet-env",
];

/// `mib` MiB of empty lines (an environment file that sets nothing),
/// gzip'ed (15 KiB for 15 MiB), as a data URL.
fn gzip_blank_lines(mib: usize) -> String {
    use base64::Engine;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let blank = vec![b'\n'; 1 << 20];
    for _ in 0..mib {
        gz.write_all(&blank).unwrap();
    }
    let b64 = base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap());
    format!("data:;base64,{b64}")
}

/// A MachineConfig of `role` writing kubelet's env files, each as
/// `source`, gzip'ed.
fn env_files(name: &str, role: &str, source: &str) -> Value {
    let files: Vec<Value> = ENV_FILES
        .iter()
        .map(|p| {
            json!({ "path": p, "mode": 420,
                    "contents": { "compression": "gzip", "source": source } })
        })
        .collect();
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": { "name": name,
                      "labels": { "machineconfiguration.openshift.io/role": role } },
        "spec": { "config": { "ignition": { "version": "3.2.0" },
                              "storage": { "files": files } } }
    })
}

/// `v` written into the gitops directory `dir` and its kustomization.
fn add(dir: &Path, name: &str, v: &Value) {
    std::fs::write(dir.join(name), v.to_string()).unwrap();
    let k = dir.join("kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    let line = "- machineconfigpool-";
    assert!(text.contains(line), "{text}");
    std::fs::write(&k, text.replacen(line, &format!("- {name}\n{line}"), 1)).unwrap();
}

/// Nine MachineConfigs in a pool's sources, of a role no pool given
/// selects (the MCO gives them to the cluster's infra pool), each writing
/// kubelet's two env files as 15 MiB of zeros (15 KiB gzip'ed): each file
/// is under the 16 MiB a file may unpack to, all of them (270 MiB, read to
/// tell whether they set our variables) past the 256 MiB of the run's
/// budget. Refused, naming a MachineConfig, its file and the fix; no ISO
/// written. Before, every one was unpacked (as many as the sources hold,
/// each again for every pool taking it) and the ISO written.
#[test]
fn gzip_files_past_the_run_budget_are_refused() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    let (gpu, numa) = gpu_and_numa_pools(dir);
    let source = gzip_blank_lines(15);
    for i in 1..=9 {
        let name = format!("5{i}-infra-env-files");
        add(
            &gpu,
            &format!("{name}.json"),
            &env_files(&name, "infra", &source),
        );
    }
    let out = dir.join("fleet.iso");
    let mut cmd = fleet_args(dir);
    cmd.args(["--dest-device", "/dev/sda"])
        .arg(format!("--pool=worker-gpu={}", gpu.display()))
        .arg(format!("--pool=worker-numa={}", numa.display()))
        .arg("--pool=worker");
    let base = base_iso(dir);
    let before = base.as_ref().map(|b| std::fs::read(b).unwrap());
    match &base {
        Some(b) => cmd.arg("-o").arg(&out).arg(b),
        None => cmd.arg("--dry-run"),
    };
    let o = cmd.output().unwrap();
    let e = said(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    for needle in [
        "-infra-env-files\": /etc/kubernetes/kubelet-",
        "come to more than the run's budget of 256 MiB",
        "iso fleet reads the MachineConfigs of every pool",
        "give fewer pools, or MachineConfigs with fewer or smaller gzip'ed files",
    ] {
        assert!(e.contains(needle), "{needle:?} in {e}");
    }
    assert!(!out.exists(), "a refused fleet wrote {}", out.display());
    if let (Some(b), Some(before)) = (&base, before) {
        assert!(std::fs::read(b).unwrap() == before, "the base ISO changed");
    }
}

/// Three pools taking four worker MachineConfigs, each writing kubelet's
/// env files as 1 MiB of zeros: each file is read for every pool (before,
/// once a pool and check: 48 MiB; now once a MachineConfig and check),
/// all of it drawn from the run's budget, here an 8 MiB one around the
/// build (a run's budget bounds one set within it). Refused past it,
/// naming a MachineConfig, its file, the budget and the fix.
#[test]
fn every_pool_draws_from_one_budget() {
    use kubelet_labeler::cli::iso::fleet;
    use kubelet_labeler::cli::render::layout::with_run_budget;
    let tmp = scratch_dir();
    let dir = tmp.path();
    let (gpu, numa) = gpu_and_numa_pools(dir);
    let sel = stand_in_selector(dir);
    let options = || fleet::FleetOptions {
        pools: vec![
            ("worker-gpu".into(), Some(gpu.clone())),
            ("worker-numa".into(), Some(numa.clone())),
            ("worker".into(), None),
        ],
        cluster_pools: None,
        dest_device: Some("/dev/sda".into()),
        pool_devices: Vec::new(),
        rules: None,
        nfd_labels: None,
        mcs_url: Some(MCS.into()),
        ca_pem: Some(PEM.as_bytes().to_vec()),
        selector: std::fs::read(&sel).unwrap(),
    };
    let build = || with_run_budget(8 << 20, "", || fleet::build(&options()).map(|_| ()));
    build().expect("the pools within the budget");
    let source = gzip_blank_lines(1);
    for i in 1..=4 {
        let name = format!("5{i}-worker-env-files");
        add(
            &gpu,
            &format!("{name}.json"),
            &env_files(&name, "worker", &source),
        );
    }
    let e = format!("{:#}", build().unwrap_err());
    for needle in [
        "-worker-env-files\": /etc/kubernetes/kubelet-",
        "come to more than the run's budget of 8 MiB",
        "give fewer pools, or MachineConfigs with fewer or smaller gzip'ed files",
    ] {
        assert!(e.contains(needle), "{needle:?} in {e}");
    }
}
