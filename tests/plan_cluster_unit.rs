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
const FENCE: &str = "kubelet-labeler.io/fenced=environment-overridden:NoSchedule";

/// The taints plan says the GPU pool's nodes register with after `to`, and
/// what the day-2 sync does on them.
fn gpu_taints_after(base: &std::path::Path, to: &std::path::Path) -> (Vec<String>, Vec<String>) {
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
    let sync = groups[0]["outcome"]["sync"].as_array().unwrap();
    let sync = sync.iter().map(|l| l.as_str().unwrap().to_string());
    (taints, sync.collect())
}

/// The review's pull request (a file at /etc/kubernetes/kubelet-workaround
/// emptying our taints: the MCO serves it, plan said tainted), and the
/// same at every file any MCO template of kubelet.service reads, each
/// release's: the wrapper takes our variables from our drop-ins and
/// registers fenced (`environment-overridden`), the sync changes no label
/// (`wrapper::own_env`); plan shows that (it showed the taint gone). The
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
    // Files the cluster's kubelet.service reads on every platform and
    // cluster of a release: a base template's, not under a condition
    // (`{{if .Proxy}}`) but the IP family's.
    let mut everywhere: Vec<String> = Vec::new();
    for (name, key, value) in &directives {
        if key == "EnvironmentFile" {
            let path = value.trim_start_matches('-').to_string();
            assert!(read.contains(&path.as_str()), "{name}: {path} not read");
            let platform = name.split("__units__").next().unwrap_or_default();
            let base = platform.rsplit("__").next().unwrap_or_default();
            let text = std::fs::read_to_string(fixtures.join(name)).unwrap();
            let condition = text
                .lines()
                .any(|l| l.contains("{{") && l.contains("if ") && !l.contains(".IPFamilies"));
            if base.trim_start_matches('_') == "base" && !condition && !everywhere.contains(&path) {
                everywhere.push(path.clone());
            }
            if !files.contains(&path) {
                files.push(path);
            }
        }
    }
    // The rest (AWS's and OpenStack's node.env, a proxy's env, Alibaba's):
    // nothing reads them on other platforms, and plan does not know the
    // cluster's.
    let somewhere: Vec<String> = files
        .iter()
        .filter(|f| !everywhere.contains(f))
        .cloned()
        .collect();
    assert!(
        somewhere.iter().any(|f| f == "/etc/kubernetes/node.env")
            && somewhere.iter().any(|f| f == "/etc/mco/proxy.env"),
        "{somewhere:?}"
    );
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
        // A file read on some platforms or clusters only is refused too
        // (review 12 F14: a taint there was planned, and no node off AWS
        // registered it).
        // /etc/os-release is the OS's identity (review 43 r43a F1).
        let owned = ["/etc/node-sizing.env", "/etc/os-release"];
        if path.starts_with("/run/") || owned.contains(&path.as_str()) || somewhere.contains(path) {
            let fleet = repo().join("examples/fleet/fleet.json");
            let o = plan(&base, &pr, &fleet, &[]);
            assert_eq!(o.status.code(), Some(2), "{path}: {}", stderr(&o));
            assert!(stderr(&o).contains(path.as_str()), "{}", stderr(&o));
            continue;
        }
        let (taints, sync) = gpu_taints_after(&base, &pr);
        let unread = path == "/etc/kubernetes/not-read";
        assert!(taints.iter().any(|t| t == TAINT), "{path}: {taints:?}");
        assert_eq!(
            taints.iter().any(|t| t == FENCE),
            !unread,
            "{path}: {taints:?}"
        );
        // The sync changes no label: its one line says it refuses.
        let refuses = "the sync refuses: our variables set otherwise";
        let named = format!("{TAINTS_VAR} (by EnvironmentFile= {path})");
        match unread {
            true => assert!(sync.iter().all(|l| !l.contains(refuses)), "{sync:?}"),
            false => assert!(
                sync.len() == 1 && sync[0].contains(refuses) && sync[0].contains(&named),
                "{path}: {sync:?}"
            ),
        }
    }
}

/// The units and drop-ins of kubelet.service the MCO serves a node
/// (`node-root` of the oracle's work directory), their text.
fn served_kubelet_units(work: &std::path::Path) -> String {
    let units = work.join("node-root/etc/systemd/system");
    let mut text = std::fs::read_to_string(units.join("kubelet.service")).unwrap();
    for e in std::fs::read_dir(units.join("kubelet.service.d")).unwrap() {
        text += &std::fs::read_to_string(e.unwrap().path()).unwrap_or_default();
    }
    text
}

/// The base render with our static taint, and a pull request adding the
/// MachineConfig `name` that writes `path` with `text`.
fn base_and_pr(
    tmp: &std::path::Path,
    name: &str,
    path: &str,
    text: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let (base, pr) = (tmp.join("base"), tmp.join("pr"));
    render(&base, &["--taint", TAINT]);
    render(&pr, &["--taint", TAINT]);
    add_file_machineconfig(&pr, name, Some("worker-gpu"), path, text);
    (base, pr)
}

/// Review 12 F14: a pull request's `/etc/kubernetes/node.env` adding a
/// NoExecute taint. The MCO serves the file, but off AWS and OpenStack no
/// unit or drop-in of kubelet reads it (the oracle renders a cluster of
/// platform None): plan showed the taint for every GPU node; now it
/// refuses, naming the file.
#[test]
fn a_file_kubelet_reads_on_some_platforms_only_is_refused() {
    let tmp = scratch_dir();
    let node_env = "/etc/kubernetes/node.env";
    let (base, pr) = base_and_pr(
        tmp.path(),
        "60-worker-gpu-node-env",
        node_env,
        &format!("{TAINTS_VAR}=example.com/gpu=true:NoExecute\n"),
    );
    let o = plan(&base, &pr, &repo().join("examples/fleet/fleet.json"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "writes {node_env}, read by kubelet on AWS and OpenStack only"
        )),
        "{}",
        stderr(&o)
    );
    let Some((oracle, root)) = mco::oracle_as_root() else {
        return;
    };
    let work = tmp.path().join("mco");
    let o = mco::boot_render((&oracle, &root), &pr, "worker-gpu", &work);
    assert!(o.status.success(), "{}", stderr(&o));
    let served = std::fs::read_to_string(work.join("node-root/etc/kubernetes/node.env")).unwrap();
    assert!(
        served.contains("example.com/gpu=true:NoExecute"),
        "{served}"
    );
    let units = served_kubelet_units(&work);
    assert!(!units.contains("node.env"), "{units}");
}

/// Review 12 F9: a pull request's kubelet config drop-in (kubelet's
/// `--config-dir` of the MCO's unit from 4.21) with `registerWithTaints`.
/// The MCO serves it and its kubelet.service reads the directory; explain
/// on the MCO's rendered config of the base with the pull request shows
/// the node registering its NoExecute taint. plan showed no taint change;
/// now it refuses, as it refuses a KubeletConfig.
#[test]
fn a_kubelet_config_drop_in_is_refused_as_a_kubeletconfig() {
    let tmp = scratch_dir();
    let dropin = "/etc/openshift/kubelet.conf.d/90-gpu-taints.conf";
    let (base, pr) = base_and_pr(
        tmp.path(),
        "60-worker-gpu-kubelet-dropin",
        dropin,
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n\
         registerWithTaints:\n- key: example.com/gpu\n  value: \"true\"\n  effect: NoExecute\n",
    );
    let o = plan(&base, &pr, &repo().join("examples/fleet/fleet.json"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("pool worker-gpu: {dropin} changes")),
        "{}",
        stderr(&o)
    );
    let Some((oracle, root)) = mco::oracle_as_root() else {
        return;
    };
    let work = tmp.path().join("mco");
    let o = mco::boot_render((&oracle, &root), &base, "worker-gpu", &work);
    assert!(o.status.success(), "{}", stderr(&o));
    let units = served_kubelet_units(&work);
    assert!(
        units.contains("--config-dir=/etc/openshift/kubelet.conf.d"),
        "{units}"
    );
    let mut rendered: serde_json::Value =
        serde_json::from_slice(&std::fs::read(work.join("desired-mc.json")).unwrap()).unwrap();
    rendered["apiVersion"] = "machineconfiguration.openshift.io/v1".into();
    rendered["kind"] = "MachineConfig".into();
    let rendered_file = tmp.path().join("rendered.json");
    std::fs::write(&rendered_file, rendered.to_string()).unwrap();
    let o = crate::support::bin()
        .arg("explain")
        .arg("--machineconfig")
        .arg(&rendered_file)
        .arg("--machineconfig")
        .arg(&pr)
        .args(["--pool", "worker-gpu"])
        .output()
        .unwrap();
    let out = crate::support::stdout(&o);
    let registers = out
        .lines()
        .find(|l| l.contains("--register-with-taints="))
        .unwrap_or_else(|| panic!("{out}\n{}", stderr(&o)));
    assert!(
        registers.contains("example.com/gpu=true:NoExecute") && registers.contains(TAINT),
        "{registers}"
    );
}
