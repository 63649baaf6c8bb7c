//! `explain --machineconfig DIR --pool NAME` (issue 33 item 18): from a
//! directory several pools' renders share, one pool's node is explained
//! with the MachineConfigs the MCO gives it (its machineConfigSelector on
//! their role label; a custom pool takes worker's too), exactly as the
//! same renders in directories of their own explain.

use crate::support::{bin, run_cli, scratch_dir, stderr};

use std::path::Path;
use std::process::Output;

/// The worker pool's rendered config with a kubelet.service only, as `oc
/// get mc rendered-worker-… -o yaml` prints it (no labels).
const RENDERED_WORKER: &str = "\
apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: rendered-worker-5d41402abc4b2a76
spec:
  config:
    ignition: {version: 3.4.0}
    systemd:
      units:
      - name: kubelet.service
        enabled: true
        contents: |
          [Unit]
          Description=Kubelet
          [Service]
          ExecStart=/usr/bin/kubelet --node-labels=node-role.kubernetes.io/worker,node.openshift.io/os_id=rhcos
";

fn render(out: &Path, which: &[&str]) {
    let o = bin()
        .args(["render", "machineconfig"])
        .args(which)
        .arg("--wrapper")
        .arg(run_cli::stand_in_wrapper())
        .arg("--output-dir")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{which:?}: {}", stderr(&o));
}

fn explain(inputs: &[&Path], extra: &[&str]) -> Output {
    let mut c = bin();
    c.args(["explain", "--json"]).args(extra);
    for i in inputs {
        c.arg("--machineconfig").arg(i);
    }
    c.output().unwrap()
}

#[test]
fn one_flag_picks_a_pool_from_a_shared_directory() {
    let dir = scratch_dir();
    let d = dir.path();
    let base = d.join("rendered-worker.yaml");
    std::fs::write(&base, RENDERED_WORKER).unwrap();
    let renders: [(&str, &[&str]); 3] = [
        (
            "worker",
            &["--role", "worker", "--label", "example.com/tier=general"],
        ),
        (
            "gpu",
            &[
                "--pool",
                "gpu",
                "--label",
                "example.com/gpu=yes",
                "--taint",
                "example.com/pool=gpu:NoSchedule",
            ],
        ),
        (
            "infra",
            &["--pool", "infra", "--label", "example.com/infra=yes"],
        ),
    ];
    let shared = d.join("gitops");
    for (name, args) in renders {
        render(&shared, args);
        render(&d.join(name), args);
    }

    // Without the flag: the pools found, and the flag that picks one.
    let o = explain(&[&base, &shared], &[]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("several pools (gpu, infra, worker)") && err.contains("--pool NAME"),
        "{err}"
    );

    // With it: what the pool's own directories (and worker's) explain to.
    for (pool, alone) in [
        ("gpu", vec!["worker", "gpu"]),
        ("infra", vec!["worker", "infra"]),
        ("worker", vec!["worker"]),
    ] {
        let picked = explain(&[&base, &shared], &["--pool", pool]);
        let dirs: Vec<_> = alone.iter().map(|n| d.join(n)).collect();
        let mut inputs: Vec<&Path> = vec![&base];
        inputs.extend(dirs.iter().map(|p| p.as_path()));
        let expected = explain(&inputs, &[]);
        assert_eq!(
            picked.status.code(),
            expected.status.code(),
            "{pool}: {}",
            stderr(&picked)
        );
        assert_eq!(
            String::from_utf8_lossy(&picked.stdout),
            String::from_utf8_lossy(&expected.stdout),
            "{pool}"
        );
        let v: serde_json::Value = serde_json::from_slice(&picked.stdout).unwrap();
        let text = v.to_string();
        assert!(text.contains("example.com/tier"), "{pool}: {text}");
        assert_eq!(text.contains("example.com/gpu"), pool == "gpu", "{pool}");
        assert_eq!(
            text.contains("example.com/infra"),
            pool == "infra",
            "{pool}"
        );
    }

    // A pool the inputs do not have: named, with the pools found.
    let o = explain(&[&shared], &["--pool", "storage"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("pools found: gpu, infra, worker"), "{err}");
}

/// The MCO's answer for pool `pool` of the manifests in `dir` (the
/// cluster-wide policy is not the pool's to serve): its errors, and the
/// drop-ins it serves the pool's node. `None`: skipped (no oracle, not root).
fn mco_serves(dir: &Path, pool: &str) -> Option<(String, Vec<String>)> {
    let (oracle, mco_root) = crate::support::mco::oracle_as_root()?;
    let manifests = dir.parent().unwrap().join("manifests");
    let o = std::process::Command::new("cp")
        .arg("-r")
        .arg(dir)
        .arg(&manifests)
        .output()
        .unwrap();
    assert!(o.status.success());
    let _ = std::fs::remove_dir_all(manifests.join("cluster-wide"));
    let work = dir.parent().unwrap().join("mco-work");
    let o = crate::support::mco::boot_render((&oracle, &mco_root), &manifests, pool, &work);
    let report: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    let dropins = std::fs::read_dir(work.join("node-root/etc/systemd/system/kubelet.service.d"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    Some((report["mcoErrors"].to_string(), dropins))
}

/// A MachineConfig without a role label in a pull request's directory (a
/// taint drop-in): no pool selects it, the MCO serves it to no node, and
/// explain laid it out as a base (the node "registered" tainted). Refused,
/// naming it; the same config as a file of its own is a base still (a
/// rendered config saved under any name). The MCO oracle agrees.
#[test]
fn an_unlabelled_machineconfig_of_a_directory_is_refused_naming_it() {
    let dir = scratch_dir();
    let d = dir.path();
    let base = d.join("rendered-worker.yaml");
    std::fs::write(&base, RENDERED_WORKER).unwrap();
    let pr = d.join("pr");
    crate::plan::render(&pr, &[]);
    let taints = kubelet_labeler::node::contract::TAINTS_VAR;
    crate::support::add_file_machineconfig(
        &pr,
        "51-worker-gpu-taints",
        None,
        "/etc/systemd/system/kubelet.service.d/95-taints.conf",
        &format!("[Service]\nEnvironment={taints}=nvidia.com/gpu=present:NoSchedule\n"),
    );
    let o = explain(&[&base, &pr], &[]);
    let e = stderr(&o);
    assert!(
        !o.status.success(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        e.contains("\"51-worker-gpu-taints\"") && e.contains("no pool selects it"),
        "{e}"
    );
    // Given as a file: a base, as before.
    let o = explain(&[&pr.join("51-worker-gpu-taints.yaml"), &base], &[]);
    assert!(!stderr(&o).contains("no pool selects it"), "{}", stderr(&o));

    if let Some((errors, dropins)) = mco_serves(&pr, "worker-gpu") {
        assert!(
            errors.contains("51-worker-gpu-taints is selected by no pool"),
            "{errors}"
        );
        assert!(
            !dropins.iter().any(|n| n == "95-taints.conf"),
            "{dropins:?}"
        );
    }
}

/// Without `--pool`, a directory's one MachineConfigPool decides as `--pool`
/// does: a pool whose selector no longer takes our role (a pull request's
/// edit) leaves our MachineConfigs on no node; explain showed their taint.
/// Refused, naming them; the pool as rendered explains as `--pool` does.
/// The MCO oracle agrees.
#[test]
fn the_directory_s_one_pool_decides_without_the_flag() {
    let dir = scratch_dir();
    let d = dir.path();
    let base = d.join("rendered-worker.yaml");
    std::fs::write(&base, RENDERED_WORKER).unwrap();
    let pr = d.join("pr");
    crate::plan::render(&pr, &["--taint", "nvidia.com/gpu=present:NoSchedule"]);
    let same = explain(&[&base, &pr], &[]);
    let picked = explain(&[&base, &pr], &["--pool", "worker-gpu"]);
    assert_eq!(same.stdout, picked.stdout, "{}", stderr(&same));
    assert!(String::from_utf8_lossy(&same.stdout).contains("nvidia.com/gpu=present:NoSchedule"));

    let pool = pr.join("machineconfigpool-worker-gpu.yaml");
    let text = std::fs::read_to_string(&pool).unwrap();
    std::fs::write(&pool, text.replace("- worker-gpu\n", "- worker-gpu-v2\n")).unwrap();
    let o = explain(&[&base, &pr], &[]);
    let e = stderr(&o);
    assert!(
        !o.status.success(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        e.contains("\"50-worker-gpu-kubelet-labeler-labels\"") && e.contains("selected by no pool"),
        "{e}"
    );

    if let Some((errors, dropins)) = mco_serves(&pr, "worker-gpu") {
        assert!(
            errors.contains("50-worker-gpu-kubelet-labeler-labels is selected by no pool"),
            "{errors}"
        );
        assert!(
            !dropins.iter().any(|n| n.contains("kubelet-labeler")),
            "{dropins:?}"
        );
    }
}

/// Review 23 r23b F2: a copy of the pool's labels MachineConfig for
/// another role, in a file of its own, replaces the pool's under `oc apply
/// -R` (the last applied wins); the pool's layout alone never saw it
/// beside the first, and explain showed the labels the nodes lose.
/// Refused, whatever role; without the copy, as before.
#[test]
fn a_machineconfig_given_twice_for_another_role_is_refused() {
    let dir = scratch_dir();
    let d = dir.path();
    let base = d.join("rendered-worker.yaml");
    std::fs::write(&base, RENDERED_WORKER).unwrap();
    let pr = d.join("pr");
    crate::plan::render(&pr, &[]);
    let o = explain(&[&base, &pr], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let copy = d.join("copy");
    std::fs::create_dir(&copy).unwrap();
    std::fs::write(copy.join("kustomization.yaml"), "resources: []\n").unwrap();
    let labels = "50-worker-gpu-kubelet-labeler-labels";
    crate::support::add_file_machineconfig(&copy, labels, Some("infra"), "/etc/motd", "hi\n");
    let file = copy.join(format!("{labels}.yaml"));
    assert!(file.exists());
    for extra in [&["--pool", "worker-gpu"][..], &[]] {
        let o = explain(&[&base, &pr, &file], extra);
        assert!(
            !o.status.success(),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
        assert!(
            stderr(&o).contains(&format!("MachineConfig \"{labels}\" is given twice")),
            "{extra:?}: {}",
            stderr(&o)
        );
    }
}
