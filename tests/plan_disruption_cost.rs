//! What a change costs the pool's running nodes, as the MCO's daemon
//! decides it (review 13): a file and a unit are compared whole (a unit's
//! `enabled`, a file's owner or `overwrite` alone is a change), a unit is
//! priced by the policy's `units` entry of its name, a file by its closest
//! `files` entry as the MCO matches paths, `Drain` and an unsafe
//! registries.conf change drain. The MCO oracle (`-prev-manifests`,
//! `-policy`) judges each case; plan must say the same cost.

use serde_json::Value;

use crate::mco_disruption::{
    daemon_cost, gpu_change, oracle, oracle_json, plan_run, render, wrapper,
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

#[test]
fn plan_prices_a_change_as_the_mcos_daemon() {
    if oracle().is_none() {
        return;
    }
    let dir = scratch_dir();
    let d = dir.path();
    let w = wrapper(d, b"1");
    let label: &[&str] = &["--label", "node.kubernetes.io/worker-gpu="];
    let fleet = d.join("fleet.json");
    let node = serde_json::json!({"kind": "List", "items": [{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "gpu-1", "labels": {
            "node-role.kubernetes.io/worker": "", "node.kubernetes.io/worker-gpu": ""}},
        "status": {"nodeInfo": {"kubeletVersion": "v1.33.5"}}}]});
    std::fs::write(&fleet, node.to_string()).unwrap();
    let kdump_restart = "    units:\n    - name: kdump.service\n      actions:\n      - type: Restart\n        restart:\n          serviceName: kdump.service\n";
    let file_entry =
        |path: &str, ty: &str| format!("    - path: {path}\n      actions:\n      - type: {ty}\n");
    // (name, before's extra MachineConfig spec, after's, policy files
    // entries added, policy text appended)
    let cases: Vec<(&str, String, String, String, &str)> = vec![
        (
            "a unit enabled, nothing else",
            String::new(),
            units("{name: kdump.service, enabled: true}"),
            String::new(),
            "",
        ),
        (
            "enabled flipped on a unit with contents",
            units("{name: x.service, enabled: false, contents: \"[Unit]\\nDescription=x\\n\"}"),
            units("{name: x.service, enabled: true, contents: \"[Unit]\\nDescription=x\\n\"}"),
            String::new(),
            "",
        ),
        (
            "a kubelet.service drop-in through systemd.units",
            String::new(),
            units(
                "{name: kubelet.service, dropins: [{name: 95-x.conf, contents: \"[Service]\\nEnvironment=A=1\\n\"}]}",
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
            units("{name: kdump.service, enabled: true}"),
            String::new(),
            kdump_restart,
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
