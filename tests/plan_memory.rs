//! `plan`'s memory is the renders' size and a small constant a pool, not
//! pools times the MachineConfigs each pool selects (review 14 r14b F7:
//! 30 custom pools over a 9.7 MB worker MachineConfig took 706 MB).

use std::path::Path;

use serde_json::json;

use crate::plan::{plan, render};
use crate::support::{BIN, peak_rss, relist_kustomization, repo, scratch_dir, stderr};

/// The render of `plan.rs`, with a worker MachineConfig of `keys` SSH
/// keys of core's (about 1 KB each: never unpacked, compared whole by
/// every pool) and `pools` custom pools taking worker's MachineConfigs.
fn with_pools(dir: &Path, keys: usize, pools: usize) -> u64 {
    render(dir, &[]);
    let keys: Vec<String> = (0..keys)
        .map(|i| {
            format!(
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{i:08}{} user{i}@example.com",
                "A".repeat(900)
            )
        })
        .collect();
    let mc = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": "99-worker-team-keys",
                     "labels": {"machineconfiguration.openshift.io/role": "worker"}},
        "spec": {"config": {"ignition": {"version": "3.4.0"},
                 "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": keys}]}}}
    })
    .to_string();
    std::fs::write(dir.join("99-worker-team-keys.json"), &mc).unwrap();
    let mut names = vec!["99-worker-team-keys.json".to_string()];
    for i in 0..pools {
        let p = format!("team{i:02}");
        let pool = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
            "metadata": {"name": p},
            "spec": {"machineConfigSelector": {"matchExpressions": [{
                        "key": "machineconfiguration.openshift.io/role", "operator": "In",
                        "values": ["worker", p]}]},
                     "nodeSelector": {"matchLabels": {format!("node-role.kubernetes.io/{p}"): ""}}}
        });
        let name = format!("pool-{p}.json");
        std::fs::write(dir.join(&name), pool.to_string()).unwrap();
        names.push(name);
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    relist_kustomization(dir, &names, &[]);
    mc.len() as u64
}

/// The peak resident memory (KiB) of `plan` from the plain render to one
/// with the large MachineConfig and `pools` custom pools, and its size.
/// None (skipped) without GNU time.
fn peak(base: &Path, pools: usize) -> Option<(u64, u64)> {
    let tmp = scratch_dir();
    let to = tmp.path().join("to");
    let size = with_pools(&to, 4000, pools);
    let fleet = repo().join("examples/fleet/fleet.json");
    let args = [
        "plan".as_ref(),
        "--from".as_ref(),
        base.as_os_str(),
        "--to".as_ref(),
        to.as_os_str(),
        "--fleet".as_ref(),
        fleet.as_os_str(),
    ];
    let (o, kib) = peak_rss(Path::new(BIN), &args)?;
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    Some((kib, size))
}

/// Review 14 r14b F7: 30 custom pools over a 4 MB worker MachineConfig
/// cost less than its size more than one pool does (each pool held two
/// copies of it: about 250 MB more).
#[test]
fn pools_share_the_machineconfigs_they_select() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &[]);
    let (Some((one, size)), Some((many, _))) = (peak(&base, 1), peak(&base, 30)) else {
        return;
    };
    eprintln!("peak resident memory: 1 pool {one} KiB, 30 pools {many} KiB; input {size} bytes");
    assert!(
        many.saturating_sub(one) * 1024 < size,
        "29 more pools took {} KiB more (1 pool: {one} KiB, 30 pools: {many} KiB), more than \
         the {} KiB MachineConfig they share",
        many.saturating_sub(one),
        size / 1024
    );
}

/// Review 23 r23b F5: what YAML aliases build is bounded over the run, not
/// per file: two ConfigMaps of 64 KB whose aliases repeat a 64 KiB string
/// 310 times (19 MiB each, each within the reader's bound of one file)
/// are refused at the second, naming it and the bound. On 7bd5710 plan
/// built and kept every file's expansion (40 files of 360 bytes: 835 MB)
/// and refused only later, for the ConfigMaps it cannot price.
#[test]
fn alias_expansion_is_bounded_over_the_run() {
    let tmp = scratch_dir();
    let (base, to) = (tmp.path().join("base"), tmp.path().join("to"));
    render(&base, &[]);
    render(&to, &[]);
    let big = "x".repeat(64 << 10);
    let (ten, thirty) = (["*s"; 10].join(", "), ["*t"; 30].join(", "));
    let names = ["cm0.yaml", "cm1.yaml"];
    for (i, name) in names.iter().enumerate() {
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x{i}\n  namespace: ns1\n\
             s: &s {big}\nt: &t [{ten}]\nd: [{thirty}]\n"
        );
        std::fs::write(to.join(name), text).unwrap();
    }
    relist_kustomization(&to, &names, &[]);
    let fleet = repo().join("examples/fleet/fleet.json");
    let o = plan(&base, &to, &fleet, &[]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("cm1.yaml as YAML: its aliases (`*name`) expand to at least ")
            && e.contains("past the run's bound of 33554432 bytes of strings built from aliases"),
        "{e}"
    );
}
