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
