//! What a change costs the pool's running nodes, as the MCO's daemon
//! decides it (review 13): a file and a unit are compared whole (a unit's
//! `enabled`, a file's owner or `overwrite` alone is a change), a unit is
//! priced by the policy's `units` entry of its name, a file by its closest
//! `files` entry as the MCO matches paths, `Drain` and an unsafe
//! registries.conf change drain. The MCO oracle (`-prev-manifests`,
//! `-policy`) judges each case; plan must say the same cost.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::mco_disruption::{
    daemon_cost, gpu_change, oracle, oracle_json, plan_run, render, render_to, wrapper,
};
use crate::plan_reconcilable::with_extra;
use crate::support::scratch_dir;

const IGN: &str = "  config:\n    ignition: {version: 3.4.0}\n";

fn storage(files: &str) -> String {
    format!("{IGN}    storage: {{files: [{files}]}}\n")
}

fn units(units: &str) -> String {
    format!("{IGN}    systemd: {{units: [{units}]}}\n")
}

const CHRONY: &str =
    "{path: /etc/chrony.d/gpu.conf, mode: 420, contents: {source: \"data:,server%20a\"}";

fn registries(mirror: bool) -> String {
    let toml = if mirror {
        "[[registry]]\nlocation = \"quay.io/a\"\n[[registry.mirror]]\nlocation = \"m.example.com/a\"\n"
    } else {
        "[[registry]]\nlocation = \"quay.io/a\"\n"
    };
    let url = format!(
        "data:,{}",
        toml.bytes()
            .map(|b| format!("%{b:02X}"))
            .collect::<String>()
    );
    storage(&format!(
        "{{path: /etc/containers/registries.conf, mode: 420, overwrite: true, contents: {{source: \"{url}\"}}}}"
    ))
}

/// `d/fleet.json`: one node, gpu-1, in pool worker-gpu.
fn gpu_fleet(d: &Path) -> PathBuf {
    let fleet = d.join("fleet.json");
    let node = serde_json::json!({"kind": "List", "items": [{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "gpu-1", "labels": {
            "node-role.kubernetes.io/worker": "", "node.kubernetes.io/worker-gpu": ""}},
        "status": {"nodeInfo": {"kubeletVersion": "v1.33.5"}}}]});
    std::fs::write(&fleet, node.to_string()).unwrap();
    fleet
}

#[test]
fn plan_prices_a_change_as_the_mcos_daemon() {
    if oracle().is_none() {
        return;
    }
    let dir = scratch_dir();
    let d = dir.path();
    let w = wrapper(d, b"1");
    let label: &[&str] = &["--label", "node.kubernetes.io/worker-gpu="];
    let fleet = gpu_fleet(d);
    let iscsid_restart = "    units:\n    - name: iscsid.service\n      actions:\n      - type: Restart\n        restart:\n          serviceName: iscsid.service\n";
    let file_entry =
        |path: &str, ty: &str| format!("    - path: {path}\n      actions:\n      - type: {ty}\n");
    // (name, before's extra MachineConfig spec, after's, policy files
    // entries added, policy text appended)
    let cases: Vec<(&str, String, String, String, &str)> = vec![
        (
            "a unit enabled, nothing else",
            String::new(),
            units("{name: iscsid.service, enabled: true}"),
            String::new(),
            "",
        ),
        (
            "enabled flipped on a unit with contents",
            units(
                "{name: acme-x.service, enabled: false, contents: \"[Unit]\\nDescription=x\\n\"}",
            ),
            units("{name: acme-x.service, enabled: true, contents: \"[Unit]\\nDescription=x\\n\"}"),
            String::new(),
            "",
        ),
        (
            // Our variable only: another would be refused (review 23 r23b F8).
            "a kubelet.service drop-in through systemd.units",
            String::new(),
            units(
                "{name: kubelet.service, dropins: [{name: 95-x.conf, contents: \"[Service]\\nEnvironment=FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=node.kubernetes.io/worker-gpu=\\n\"}]}",
            ),
            String::new(),
            "",
        ),
        (
            "a file's owner alone",
            storage(&format!("{CHRONY}}}")),
            storage(&format!(
                "{CHRONY}, user: {{name: root}}, group: {{name: root}}}}"
            )),
            String::new(),
            "",
        ),
        (
            "a file's overwrite alone",
            storage(&format!("{CHRONY}}}")),
            storage(&format!("{CHRONY}, overwrite: false}}")),
            String::new(),
            "",
        ),
        (
            "a policy entry for /",
            String::new(),
            storage(&format!("{CHRONY}}}")),
            file_entry("/", "None"),
            "",
        ),
        (
            "a unit with a units entry",
            String::new(),
            units("{name: iscsid.service, enabled: true}"),
            String::new(),
            iscsid_restart,
        ),
        (
            "a Drain entry",
            String::new(),
            storage(&format!("{CHRONY}}}")),
            file_entry("/etc/chrony.d", "Drain"),
            "",
        ),
        (
            "a registries.conf mirror removed",
            registries(true),
            registries(false),
            String::new(),
            "",
        ),
        // Control: a file under a None directory entry.
        (
            "a file under a None entry",
            String::new(),
            storage(&format!("{CHRONY}}}")),
            file_entry("/etc/chrony.d", "None"),
            "",
        ),
    ];
    let mut failures = Vec::new();
    for (i, (name, before_spec, after_spec, files, appended)) in cases.iter().enumerate() {
        let before = d.join(format!("before-{i}"));
        let after = d.join(format!("after-{i}"));
        let policy = d.join(format!("policy-{i}.yaml"));
        render(&before, &w, label, &policy);
        render(&after, &w, label, &d.join(format!("unused-{i}.yaml")));
        if !before_spec.is_empty() {
            with_extra(&before, before_spec);
        }
        with_extra(&after, after_spec);
        let text = std::fs::read_to_string(&policy).unwrap();
        assert!(
            text.contains("\n    files:\n") && !text.contains("units:"),
            "{text}"
        );
        let text = text.replacen("\n    files:\n", &format!("\n    files:\n{files}"), 1);
        std::fs::write(&policy, format!("{text}{appended}")).unwrap();
        let report = oracle_json(&before, &after, &policy);
        let change = gpu_change(&report);
        let (want, _) = daemon_cost(change);
        let o = plan_run(&before, &after, &fleet, &policy);
        let p: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&o.stderr)));
        let outcome = &p["groups"][0]["outcome"];
        if outcome["disruption"] != want {
            failures.push(format!(
                "{name}: the MCO's daemon: {want} ({change}); plan: {outcome:#}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Review 21 r21b F6: the change's own node disruption policy. Left out
/// of the kustomization (`oc apply -k` and Argo CD never apply it) it
/// prices nothing; listed (applied with the change) it prices the change
/// no more leniently than the cluster's policy before it, since the MCO's
/// daemon reads the one in force when its node updates. A MachineConfig
/// writing `/etc/gpu.conf` beside a policy making it `None` was planned as
/// nothing; the MCO's daemon with the cluster's policy reboots.
#[test]
fn a_policy_of_the_change_prices_it_no_more_leniently_than_the_cluster_s() {
    let dir = scratch_dir();
    let d = dir.path();
    let w = wrapper(d, b"1");
    let label: &[&str] = &["--label", "node.kubernetes.io/worker-gpu="];
    let fleet = gpu_fleet(d);
    let (before, policy) = (d.join("before"), d.join("policy.yaml"));
    render(&before, &w, label, &policy);
    let entry = "    - path: /etc/gpu.conf\n      actions:\n      - type: None\n";
    let own = "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata:\n  \
               name: cluster\nspec:\n  nodeDisruptionPolicy:\n    files:\n";
    let gpu_conf = storage("{path: /etc/gpu.conf, mode: 420, contents: {source: \"data:,fast\"}}");
    let cost = |after: &std::path::Path, policy: &std::path::Path| {
        let o = plan_run(&before, after, &fleet, policy);
        let p: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
        (
            p["groups"][0]["outcome"]["disruption"].clone(),
            p["not_judged"].to_string(),
        )
    };
    let mut failures = Vec::new();
    for (i, (file, listed, says)) in [
        (
            "cluster-wide/machineconfiguration-extra.yaml",
            false,
            "left out of its kustomization",
        ),
        (
            "machineconfiguration-extra.yaml",
            false,
            "left out of its kustomization",
        ),
        (
            "extra-policy.yaml",
            true,
            "the stricter of the policy before and after",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let after = d.join(format!("after-{i}"));
        render(&after, &w, label, &d.join(format!("unused-{i}.yaml")));
        with_extra(&after, &gpu_conf);
        std::fs::create_dir_all(after.join("cluster-wide")).unwrap();
        std::fs::write(after.join(file), format!("{own}{entry}")).unwrap();
        if listed {
            crate::support::relist_kustomization(&after, &[file], &[]);
        }
        let (got, notes) = cost(&after, &policy);
        if got != "drain-and-reboot" || !notes.contains(says) {
            failures.push(format!("{file}: {got} ({notes})"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Control: the entry in force in the cluster prices the change as none.
    let after = d.join("after-0");
    let merged = d.join("merged.yaml");
    let text = std::fs::read_to_string(&policy).unwrap();
    std::fs::write(
        &merged,
        text.replacen("\n    files:\n", &format!("\n    files:\n{entry}"), 1),
    )
    .unwrap();
    assert_eq!(cost(&after, &merged).0, "nothing");
    // The MCO's daemon agrees: with the cluster's policy a reboot, with the
    // entry in force none.
    if oracle().is_none() {
        return;
    }
    for (p, want) in [(&policy, "drain-and-reboot"), (&merged, "nothing")] {
        let report = oracle_json(&before, &after, p);
        let (cost, _) = daemon_cost(gpu_change(&report));
        assert_eq!(cost, want, "{report:#}");
    }
}

/// Review 25 r25a F1: how a policy file is applied follows from how the
/// tree is applied, not from its name. A MachineConfiguration listed in
/// the kustomization is applied client-side by `oc apply -k` and Argo CD
/// whatever its file is called (kubectl never reads a file's name): its
/// list replaces the cluster's, render's server-side entries go, and a
/// taint change (our env drop-in) reboots. Named like render's policy
/// file, it was priced as a server-side merge: "a service restart",
/// `--fail-on reboot` exit 0. Listed by the PR, or by the base tree
/// already (the PR only adds the taint), each name prices the same.
#[test]
fn a_listed_policy_is_applied_client_side_whatever_its_name() {
    let dir = scratch_dir();
    let d = dir.path();
    let w = wrapper(d, b"1");
    let w = w.to_str().unwrap();
    let fleet = gpu_fleet(d);
    let args = ["--pool", "worker-gpu", "--wrapper", w];
    let label = ["--label", "node.kubernetes.io/worker-gpu="];
    let taint = ["--taint", "example.com/gpu=true:NoSchedule"];
    let render_in = |out: &Path, tainted: bool| {
        let extra: &[&str] = if tainted { &taint } else { &[] };
        render_to(out, &[&args[..], &label, extra].concat());
    };
    // The cluster's: render's policy applied server-side as render says.
    let base = d.join("base");
    render_in(&base, false);
    let ours = base.join("cluster-wide/machineconfiguration-worker-gpu.yaml");
    let mut cluster: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(&ours).unwrap()).unwrap();
    let owned: serde_json::Map<String, Value> = (cluster["spec"]["nodeDisruptionPolicy"]["files"]
        .as_array()
        .unwrap())
    .iter()
    .map(|e| {
        let key = serde_json::json!({ "path": e["path"] }).to_string();
        (
            format!("k:{key}"),
            serde_json::json!({".": {}, "f:actions": {}, "f:path": {}}),
        )
    })
    .collect();
    cluster["metadata"]["managedFields"] = serde_json::json!([{
        "manager": "kubelet-labeler-worker-gpu", "operation": "Apply",
        "apiVersion": "operator.openshift.io/v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:nodeDisruptionPolicy": {"f:files": owned}}}}]);
    let cluster_at = d.join("cluster-mc.json");
    std::fs::write(&cluster_at, cluster.to_string()).unwrap();
    // The team's policy, as the client-side apply leaves the cluster's.
    let team = "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata:\n  \
                name: cluster\nspec:\n  nodeDisruptionPolicy:\n    files:\n    - path: \
                /etc/gpu.conf\n      actions:\n      - type: None\n";
    let with_team = |out: &Path, name: &str, tainted: bool| {
        render_in(out, tainted);
        std::fs::write(out.join(name), team).unwrap();
        crate::support::relist_kustomization(out, &[name], &[]);
    };
    let plan = |from: &Path, to: &Path| {
        let o = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
            .args(["plan", "--format", "json", "--fail-on", "reboot", "--from"])
            .arg(from)
            .arg("--to")
            .arg(to)
            .args(["--fleet"])
            .arg(&fleet)
            .arg("--fleet")
            .arg(&cluster_at)
            .output()
            .unwrap();
        let p: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
        (
            p["groups"][0]["outcome"]["disruption"].clone(),
            o.status.code(),
        )
    };
    let names = [
        "gpu-policy.yaml",
        "machineconfiguration-gpu.yaml",
        "machineconfiguration-worker-gpu.yaml",
    ];
    let mut failures = Vec::new();
    for (i, name) in names.into_iter().enumerate() {
        // Listed by the PR.
        let after = d.join(format!("after-{i}"));
        with_team(&after, name, true);
        let got = plan(&base, &after);
        if got != (Value::from("drain-and-reboot"), Some(1)) {
            failures.push(format!("{name} listed by the PR: {got:?}"));
        }
        // Variant B: listed by the base tree already.
        let listed = d.join(format!("listed-{i}"));
        with_team(&listed, name, false);
        let got = plan(&listed, &after);
        if got != (Value::from("drain-and-reboot"), Some(1)) {
            failures.push(format!("{name} listed by the base tree: {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The MCO's daemon agrees: with the cluster's policy as the client-side
    // apply leaves it a reboot; with render's (the control) a restart.
    if oracle().is_none() {
        return;
    }
    let team_at = d.join("team.yaml");
    std::fs::write(&team_at, team).unwrap();
    let after = d.join("after-0");
    for (p, want) in [(&team_at, "drain-and-reboot"), (&ours, "restart")] {
        let report = oracle_json(&base, &after, p);
        let (cost, _) = daemon_cost(gpu_change(&report));
        assert_eq!(cost, want, "{report:#}");
    }
}
