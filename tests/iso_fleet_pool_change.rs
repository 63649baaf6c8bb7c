//! Review 14 r14c F2: a machine `iso fleet`'s live system installs into
//! `worker`, and at boot, before kubelet's first start, a unit of a worker
//! MachineConfig writes the `features.d` file a rule reads: the node would
//! register with the label that places it in `worker-special`, without that
//! pool's registration-only taint. The record `iso fleet` writes into the
//! destination config now names every pool, and the built wrapper, run on
//! the installed node's root with it, registers fenced (`pool-changed`);
//! `explain` on that root says the same.

use crate::iso_fleet::{base_iso, ok};
use crate::iso_fleet_cli::{config_file, fleet_args_with, iso_show, said};
use crate::support::wrapper_run::{recorder_root, try_wrapper};
use crate::support::{bin, elf, scratch_dir, write};

use kubelet_labeler::node::fleet::{INSTALLED_POOL_PATH, TABLE_PATH, Table};

use serde_json::Value;
use std::path::Path;

/// A `local.feature` rule (NFD's feature files), as in the report.
const RULES: &str = "apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: special
spec:
  rules:
  - name: special
    labels:
      special: \"true\"
    matchFeatures:
    - feature: local.feature
      matchExpressions:
        special: {op: Exists}
";
const FEATURE_FILE: &str = "etc/kubernetes/node-feature-discovery/features.d/special";
const UNIT: &str = "[Service]\nExecStart=/usr/bin/kubelet --v=2 \
--node-labels=node-role.kubernetes.io/worker\n";
const FENCE: &str = "kubelet-labeler.io/fenced=pool-changed:NoSchedule";

#[test]
fn a_node_whose_boot_changes_its_pool_registers_fenced() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    let Some(iso) = base_iso(dir) else { return };
    let rules = dir.join("rules.yaml");
    write(&rules, RULES);
    let wrapper = dir.join("stand-in-wrapper");
    std::fs::write(
        &wrapper,
        elf::static_elf(kubelet_labeler::cli::render::arch::Arch::X86_64),
    )
    .unwrap();
    let special = dir.join("gitops-special");
    ok(bin()
        .args(["render", "machineconfig", "--pool", "worker-special"])
        .args(["--pool-label", "feature.node.kubernetes.io/special=true"])
        .args(["--taint", "example.com/special=true:NoSchedule"])
        .arg("--rules")
        .arg(&rules)
        .args(["--nfd-labels", "openshift", "--wrapper"])
        .arg(&wrapper)
        .arg("--output-dir")
        .arg(&special)
        .output()
        .unwrap());
    let out = dir.join("fleet.iso");
    let o = fleet_args_with(dir, &rules)
        .args(["--dest-device", "/dev/sda", "-o"])
        .arg(&out)
        .arg(&iso)
        .arg(format!("--pool=worker-special={}", special.display()))
        .arg("--pool=worker")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", said(&o));
    // The worker pool's destination config, as the live system installs it.
    let live = iso_show(&out);
    let table = Table::parse(&config_file(&live, TABLE_PATH)).unwrap();
    let worker_ign = format!("{}/worker.ign", TABLE_PATH.rsplit_once('/').unwrap().0);
    let dest: Value = serde_json::from_str(&config_file(&live, &worker_ign)).unwrap();
    let record = config_file(&dest, INSTALLED_POOL_PATH);
    let names: Vec<String> = Table::parse(&record)
        .unwrap()
        .pools
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["worker", "worker-special"], "{record}");

    // The installed node: kubelet's unit, the record, our drop-ins (for
    // `explain`; the wrapper gets their variables, the table's, from
    // systemd).
    let root = dir.join("node");
    let Some(records) = recorder_root(&root, UNIT) else {
        return;
    };
    write(
        &root.join(INSTALLED_POOL_PATH.trim_start_matches('/')),
        &record,
    );
    ok(bin()
        .args(["render", "dropins", "--profile", "openshift", "--root"])
        .arg(&root)
        .arg("--rules")
        .arg(&rules)
        .args(["--nfd-labels", "openshift", "--wrapper"])
        .arg(&wrapper)
        .output()
        .unwrap());
    let env: Vec<(&str, String)> = table
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    // As the live system saw the machine: no feature file, worker.
    let facts = dir.join("facts");
    std::fs::create_dir_all(facts.join("etc")).unwrap();
    let start = |id: &str| {
        let mut env = env.clone();
        env.push(("INVOCATION_ID", id.to_string()));
        let args = ["--facts-root", facts.to_str().unwrap()];
        let (err, argv) = try_wrapper(&root, &records, &env, "", &args);
        (
            err.clone(),
            argv.unwrap_or_else(|| panic!("kubelet did not start: {err}")),
        )
    };
    let (err, argv) = start("first");
    assert!(
        !argv
            .iter()
            .any(|w| w.starts_with("--register-with-taints=")),
        "{err}\n{argv:?}"
    );
    // A unit wrote the feature file before kubelet's first start.
    write(&facts.join(FEATURE_FILE), "special\n");
    let (err, argv) = start("second");
    assert!(
        argv.contains(&format!("--register-with-taints={FENCE}")),
        "{err}\n{argv:?}"
    );
    assert!(
        argv.iter()
            .any(|w| w.contains("feature.node.kubernetes.io/special=true")),
        "{argv:?}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    for part in [
        "installed into pool worker (/etc/kubelet-labeler/installed-pool), but the labels it \
         registers with (feature.node.kubernetes.io/special=true,node-role.kubernetes.io/worker=) \
         select pool worker-special",
        "delete the Node so kubelet registers it again",
        "registering fenced with kubelet-labeler.io/fenced=pool-changed:NoSchedule",
    ] {
        assert!(err.contains(part), "{part}\n{err}");
    }
    // explain on that root: the same plan.
    let o = ok(bin()
        .args(["explain", "--json", "--profile", "openshift", "--root"])
        .arg(&root)
        .arg("--facts-root")
        .arg(&facts)
        .output()
        .unwrap());
    let e: Value = serde_json::from_slice(&o.stdout).unwrap();
    let argv: Vec<String> = serde_json::from_value(e["argv"].clone()).unwrap();
    assert!(
        argv.contains(&format!("--register-with-taints={FENCE}")),
        "{e}"
    );
    assert!(e.to_string().contains("select pool worker-special"), "{e}");
    // And that a fallback (a crash, the crash-loop guard) is checked too.
    assert!(
        e.to_string()
            .contains("installed from a fleet ISO into pool worker (/etc/kubelet-labeler/installed-pool): a fallback"),
        "{e}"
    );
}

/// Review 18 r18a F2: a pool of the cluster left off the ISO, given with
/// `--cluster-pools` (`oc get machineconfigpools -o yaml`), is in every
/// pool's installed-pool record by its nodeSelector, never in the live
/// table (no machine installs into it); without the option, a warning
/// naming it.
#[test]
fn cluster_pools_off_the_iso_are_in_the_record() {
    use crate::iso_fleet_cli::fleet_args;
    let tmp = scratch_dir();
    let dir = tmp.path();
    let Some(iso) = base_iso(dir) else { return };
    let gpu = crate::support::iso::gpu_pool(dir);
    let mcps = dir.join("mcp.yaml");
    write(
        &mcps,
        "apiVersion: v1\nkind: List\nitems:\n\
         - apiVersion: machineconfiguration.openshift.io/v1\n  kind: MachineConfigPool\n  \
         metadata: {name: worker}\n  spec:\n    machineConfigSelector:\n      matchExpressions:\n      - {key: machineconfiguration.openshift.io/role, operator: In, values: [worker, worker]}\n    nodeSelector:\n      matchLabels:\n        \
         node-role.kubernetes.io/worker: \"\"\n\
         - apiVersion: machineconfiguration.openshift.io/v1\n  kind: MachineConfigPool\n  \
         metadata: {name: worker-big}\n  spec:\n    machineConfigSelector:\n      matchExpressions:\n      - {key: machineconfiguration.openshift.io/role, operator: In, values: [worker, worker-big]}\n    nodeSelector:\n      matchLabels:\n        \
         example.com/big: \"true\"\n",
    );
    let build = |cluster: bool| {
        let out = dir.join(format!("fleet-{cluster}.iso"));
        let mut c = fleet_args(dir);
        c.args(["--dest-device", "/dev/sda", "-o"])
            .arg(&out)
            .arg(&iso)
            .arg(format!("--pool=worker-gpu={}", gpu.display()))
            .arg("--pool=worker");
        if cluster {
            c.arg("--cluster-pools").arg(&mcps);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", said(&o));
        (out, said(&o))
    };
    let (_, told) = build(false);
    assert!(told.contains("warning: without --cluster-pools"), "{told}");
    let (out, told) = build(true);
    assert!(!told.contains("--cluster-pools"), "{told}");
    let live = iso_show(&out);
    let table = Table::parse(&config_file(&live, TABLE_PATH)).unwrap();
    let names: Vec<&str> = table.pools.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["worker-gpu", "worker"]);
    for pool in ["worker", "worker-gpu"] {
        let ign = format!("{}/{pool}.ign", TABLE_PATH.rsplit_once('/').unwrap().0);
        let dest: Value = serde_json::from_str(&config_file(&live, &ign)).unwrap();
        let text = config_file(&dest, INSTALLED_POOL_PATH);
        let record = Table::parse(&text).unwrap();
        let names: Vec<&str> = record.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names.len(), 3, "{text}");
        assert_eq!(names[0], pool, "{text}");
        assert!(
            text.contains("pool worker-big custom -\nin example.com/big true\n"),
            "{text}"
        );
    }
}

/// Review 19 r19c F6: the file the docs say to give, `oc get
/// machineconfigpools -o yaml` as a cluster prints it (master, arbiter,
/// worker, a custom pool and one selecting a host by name), is taken: every
/// pool but the hostname one is in each record, and the node judges a move
/// into `master` as the MCO places it (master over a custom pool); the
/// hostname pool is named in one warning line.
#[test]
fn a_clusters_own_pool_export_is_recorded_with_master() {
    use crate::iso_fleet_cli::fleet_args;
    use kubelet_labeler::node::fleet::{Requirement, pool_change};
    let tmp = scratch_dir();
    let dir = tmp.path();
    let Some(iso) = base_iso(dir) else { return };
    let gpu = crate::support::iso::gpu_pool(dir);
    let mcps =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cluster-pools/oc-get-mcp.yaml");
    let out = dir.join("fleet.iso");
    let o = fleet_args(dir)
        .args(["--dest-device", "/dev/sda", "-o"])
        .arg(&out)
        .arg(&iso)
        .arg(format!("--pool=worker-gpu={}", gpu.display()))
        .arg("--pool=worker")
        .arg("--cluster-pools")
        .arg(&mcps)
        .output()
        .unwrap();
    let told = said(&o);
    assert!(o.status.success(), "{told}");
    let warned: Vec<&str> = told
        .lines()
        .filter(|l| l.contains("--cluster-pools"))
        .collect();
    assert_eq!(warned.len(), 1, "{told}");
    assert!(
        warned[0].starts_with("warning: --cluster-pools: infra-node7 selects nodes by their names"),
        "{told}"
    );
    let live = iso_show(&out);
    for pool in ["worker", "worker-gpu"] {
        let ign = format!("{}/{pool}.ign", TABLE_PATH.rsplit_once('/').unwrap().0);
        let dest: Value = serde_json::from_str(&config_file(&live, &ign)).unwrap();
        let text = config_file(&dest, INSTALLED_POOL_PATH);
        let record = Table::parse(&text).unwrap();
        let mut names: Vec<&str> = record.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names.remove(0), pool, "{text}");
        names.sort();
        assert_eq!(
            names,
            [&["arbiter", "master", "worker", "worker-big", "worker-gpu"][..]]
                .concat()
                .into_iter()
                .filter(|n| *n != pool)
                .collect::<Vec<_>>(),
            "{text}"
        );
        assert!(
            text.contains("pool master custom -\nin node-role.kubernetes.io/master \"\"\n"),
            "{text}"
        );
        // The labels that place a node in its pool, then with the master
        // role: the MCO makes master its pool, and the node says so.
        let mut labels = vec![("node-role.kubernetes.io/worker".to_string(), String::new())];
        for r in &record.pools[0].selector {
            if let Requirement::In(k, v) = r {
                labels.push((k.clone(), v[0].clone()));
            }
        }
        assert_eq!(pool_change(&record, &labels), None, "{text}");
        labels.push(("node-role.kubernetes.io/master".into(), String::new()));
        let why = pool_change(&record, &labels).unwrap();
        assert!(why.contains("select pool master"), "{why}");
    }
}
