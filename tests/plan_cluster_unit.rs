//! plan lays a pool out with a stand-in for the cluster's kubelet.service
//! (no render holds it): it reads what every MCO template of the unit and
//! of its drop-ins reads, so a pull request's file there is planned as the
//! node gets it. systemd gives an `EnvironmentFile=` variable precedence
//! over our drop-ins' `Environment=`.

use crate::plan::{json, plan, render};
use crate::support::{add_file_machineconfig, mco, repo, scratch_dir, stderr};
use kubelet_labeler::cli::plan::cluster_unit;
use kubelet_labeler::node::contract::TAINTS_VAR;

const TAINT: &str = "nvidia.com/gpu=present:NoSchedule";

/// The taints plan says the GPU pool's nodes register with after `to`.
fn gpu_taints_after(base: &std::path::Path, to: &std::path::Path) -> Vec<String> {
    let fleet = repo().join("examples/fleet/fleet.json");
    let o = plan(base, to, &fleet, &["--format", "json"]);
    let p = json(&o);
    let groups: Vec<&serde_json::Value> = p["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["outcome"]["pool_after"] == "worker-gpu")
        .collect();
    assert!(!groups.is_empty(), "{p:#}\n{}", stderr(&o));
    let taints: Vec<String> = groups[0]["outcome"]["register_after"]["taints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    taints
}

/// The review's pull request (a file at /etc/kubernetes/kubelet-workaround
/// emptying our taints: the MCO serves it, the node registers untainted,
/// plan said tainted), and the same at every file any MCO template of
/// kubelet.service reads, each release's: plan shows the taint gone. The
/// templates set nothing else that changes kubelet's environment.
#[test]
fn a_file_the_cluster_s_kubelet_service_reads_is_planned_as_the_node_reads_it() {
    let Some(fixtures) = mco::require_fixtures() else {
        return;
    };
    let directives = mco::kubelet_service_directives(&fixtures);
    // What can change the environment or the command kubelet.service starts
    // with (UnsetEnvironment=, PassEnvironment=, ...) would be a directive
    // the stand-in does not model: none but these in any template.
    let modelled = [
        "Description",
        "Requires",
        "After",
        "Wants",
        "Before",
        "Type",
        "ExecStartPre",
        "ExecCondition",
        "Environment",
        "EnvironmentFile",
        "ExecStart",
        "Restart",
        "RestartSec",
        "WantedBy",
    ];
    for (name, key, value) in &directives {
        assert!(modelled.contains(&key.as_str()), "{name}: {key}={value}");
        if key == "Environment" {
            let var = value.trim_matches('"').split('=').next().unwrap();
            assert!(
                !var.starts_with("FIRST_BOOT_ONLY_") && !var.starts_with("KUBELET_LABELER_"),
                "{name}: {value}"
            );
        }
    }
    let read = cluster_unit::env_files();
    let mut files: Vec<String> = Vec::new();
    for (name, key, value) in &directives {
        if key == "EnvironmentFile" {
            let path = value.trim_start_matches('-').to_string();
            assert!(read.contains(&path.as_str()), "{name}: {path} not read");
            if !files.contains(&path) {
                files.push(path);
            }
        }
    }
    assert!(
        files
            .iter()
            .any(|f| f == "/etc/kubernetes/kubelet-workaround"),
        "{files:?}"
    );

    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &["--taint", TAINT]);
    // A file no template reads changes nothing (the pull request's taint
    // reset only where the unit reads it).
    files.push("/etc/kubernetes/not-read".to_string());
    for (i, path) in files.iter().enumerate() {
        let pr = tmp.path().join(format!("pr{i}"));
        render(&pr, &["--taint", TAINT]);
        add_file_machineconfig(
            &pr,
            "60-worker-gpu-envfile",
            Some("worker-gpu"),
            path,
            &format!("{TAINTS_VAR}=\n"),
        );
        // /run is tmpfs on the node: what a MachineConfig writes there is
        // gone at registration; node sizing's file is written anew before
        // every kubelet start, the proxy's env is the MCO's: plan refuses
        // them.
        let owned = ["/etc/node-sizing.env", "/etc/mco/proxy.env"];
        if path.starts_with("/run/") || owned.contains(&path.as_str()) {
            let fleet = repo().join("examples/fleet/fleet.json");
            let o = plan(&base, &pr, &fleet, &[]);
            assert_eq!(o.status.code(), Some(2), "{path}: {}", stderr(&o));
            assert!(stderr(&o).contains(path.as_str()), "{}", stderr(&o));
            continue;
        }
        let taints = gpu_taints_after(&base, &pr);
        let unread = path == "/etc/kubernetes/not-read";
        assert_eq!(
            taints.iter().any(|t| t == TAINT),
            unread,
            "{path}: {taints:?}"
        );
    }
}
