//! A pull request whose pool change the MCO cannot make on running nodes
//! (review 10 F5): the render controller refuses the new rendered config
//! (`IsRenderedConfigReconcilable`), the pool goes Degraded and nothing
//! rolls out, so plan shows no change for the pool's nodes, says why, and
//! exits 2. A change it takes costs what its daemon says, an OS change
//! (kernelType, kernelArguments, extensions) a reboot. The MCO oracle
//! (`-prev-manifests`, `-policy`) judges each case.

use std::path::Path;

use serde_json::Value;

use crate::mco_disruption::{
    daemon_cost, gpu_change, oracle, oracle_json, plan_run, render, wrapper,
};
use crate::support::scratch_dir;

const TAINT: &str = "example.com/t=1:NoSchedule";
const IGN: &str = "  config:\n    ignition: {version: 3.4.0}\n";

/// The proposed render with one more MachineConfig for the pool, its
/// `spec` being `spec` (YAML indented by 2), listed in the kustomization.
pub(crate) fn with_extra(dir: &Path, spec: &str) {
    let mc = format!(
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  \
         name: 99-worker-gpu-extra\n  labels:\n    machineconfiguration.openshift.io/role: \
         worker-gpu\nspec:\n{spec}"
    );
    std::fs::write(dir.join("99-worker-gpu-extra.yaml"), mc).unwrap();
    let k = dir.join("kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    std::fs::write(
        &k,
        text.replacen(
            "resources:\n",
            "resources:\n- 99-worker-gpu-extra.yaml\n",
            1,
        ),
    )
    .unwrap();
}

#[test]
fn plan_says_what_the_mco_refuses_on_running_nodes() {
    if oracle().is_none() {
        return;
    }
    let dir = scratch_dir();
    let d = dir.path();
    let w = wrapper(d, b"1");
    let label: &[&str] = &["--label", "node.kubernetes.io/worker-gpu="];
    let policy = d.join("policy.yaml");
    let before = d.join("before");
    render(&before, &w, label, &policy);
    let fleet = d.join("fleet.json");
    let node = serde_json::json!({"kind": "List", "items": [{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "gpu-1", "labels": {
            "node-role.kubernetes.io/worker": "", "node.kubernetes.io/worker-gpu": ""}},
        "status": {"nodeInfo": {"kubeletVersion": "v1.33.5"}}}]});
    std::fs::write(&fleet, node.to_string()).unwrap();
    let ign = |section: &str| format!("{IGN}    {section}\n");
    let cases: Vec<(&str, String)> = vec![
        ("fips", "  fips: true\n".into()),
        ("non-core user", ign("passwd: {users: [{name: bob}]}")),
        (
            "core's shell",
            ign("passwd: {users: [{name: core, shell: /bin/sh}]}"),
        ),
        ("a group", ign("passwd: {groups: [{name: g1}]}")),
        (
            "disks",
            ign("storage: {disks: [{device: /dev/sdb, wipeTable: true}]}"),
        ),
        (
            "raid",
            ign("storage: {raid: [{name: md0, level: raid1, devices: [/dev/sdb, /dev/sdc]}]}"),
        ),
        (
            "filesystems",
            ign("storage: {filesystems: [{device: /dev/sdb, format: xfs, path: /var/lib/x}]}"),
        ),
        (
            "directories",
            ign("storage: {directories: [{path: /etc/xdir}]}"),
        ),
        (
            "links",
            ign("storage: {links: [{path: /etc/xlink, target: /etc/hosts}]}"),
        ),
        (
            "Ignition kernelArguments",
            ign("kernelArguments: {shouldExist: [nosmt]}"),
        ),
        ("kernelType realtime", "  kernelType: realtime\n".into()),
        ("kernelType 64k-pages", "  kernelType: 64k-pages\n".into()),
        (
            "spec.kernelArguments",
            "  kernelArguments: [nosmt]\n".into(),
        ),
        ("an extension", "  extensions: [usbguard]\n".into()),
        // Controls: changes the MCO makes in place.
        (
            "core's SSH keys",
            ign(
                "passwd: {users: [{name: core, sshAuthorizedKeys: [\"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx x@y\"]}]}",
            ),
        ),
        (
            "luks",
            ign("storage: {luks: [{name: data, device: /dev/sdb}]}"),
        ),
        ("kernelType default", "  kernelType: default\n".into()),
    ];
    let mut failures = Vec::new();
    for (i, (name, spec)) in cases.iter().enumerate() {
        let after = d.join(format!("case-{i}"));
        let mut args = label.to_vec();
        args.extend(["--taint", TAINT]);
        render(&after, &w, &args, &d.join(format!("policy-{i}.yaml")));
        with_extra(&after, spec);
        let report = oracle_json(&before, &after, &policy);
        let change = gpu_change(&report);
        let refused = change["withGivenPolicy"]["ReconcileError"]
            .as_str()
            .filter(|e| !e.is_empty());
        let o = plan_run(&before, &after, &fleet, &policy);
        // Fields plan does not judge (disks, filesystems, raid, luks) are
        // refused before any plan: the safe side, whatever the MCO says.
        let not_judged = String::from_utf8_lossy(&o.stderr).contains("plan cannot judge");
        if o.status.code() == Some(2) && o.stdout.is_empty() && not_judged {
            continue;
        }
        let p: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&o.stderr)));
        let outcome = &p["groups"][0]["outcome"];
        let taints_after = outcome["register_after"]["taints"].to_string();
        let ok = match refused {
            Some(_) => {
                o.status.code() == Some(2)
                    && outcome["refused"]
                        .as_str()
                        .is_some_and(|r| r.contains("the MCO refuses this change"))
                    && !taints_after.contains(TAINT)
                    && outcome["taint_commands"] == serde_json::json!([])
                    && outcome["disruption"] == "nothing"
            }
            None => {
                let (want, _) = daemon_cost(change);
                o.status.code() == Some(1)
                    && outcome["refused"].is_null()
                    && taints_after.contains(TAINT)
                    && outcome["disruption"] == want
            }
        };
        if !ok {
            failures.push(format!(
                "{name}: the MCO: {}; plan (exit {:?}): {outcome:#}",
                refused.unwrap_or("takes it"),
                o.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Review 10 F4: `spec.extensions` by the node's release. `wasm` is known
/// to the MCO of OpenShift 4.14 to 4.21, `two-node-ha` from 4.19 on (the
/// allowlists at each release branch, cited in
/// src/cli/render/extensions.rs); a name no release knows is refused as
/// bad input. On the oracle's MCO (main, 4.23) `wasm` is refused.
#[test]
fn extensions_are_judged_by_the_nodes_release() {
    use crate::plan::{json, plan, render};
    let tmp = scratch_dir();
    let d = tmp.path();
    let base = d.join("base");
    render(&base, &[]);
    let fleet = |name: &str, kubelet: Option<&str>| {
        let mut node = serde_json::json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "gpu-1", "labels": {
                "node-role.kubernetes.io/worker": "", "node.kubernetes.io/worker-gpu": ""}}});
        if let Some(v) = kubelet {
            node["status"] = serde_json::json!({"nodeInfo": {"kubeletVersion": v}});
        }
        let p = d.join(name);
        std::fs::write(
            &p,
            serde_json::json!({"kind": "List", "items": [node]}).to_string(),
        )
        .unwrap();
        p
    };
    let (v420, v418, v423, unknown) = (
        fleet("420.json", Some("v1.33.5")),
        fleet("418.json", Some("v1.31.2")),
        fleet("423.json", Some("v1.36.1")),
        fleet("unknown.json", None),
    );
    let proposed = |name: &str, ext: &str| {
        let p = d.join(name);
        render(&p, &["--taint", TAINT]);
        // With a config: the MCO validates the extensions of such a
        // MachineConfig when it renders (`ValidateMachineConfig`), of one
        // without only on the node.
        with_extra(&p, &format!("{IGN}  extensions: [{ext}]\n"));
        p
    };
    let wasm = proposed("wasm", "wasm");
    let ha = proposed("ha", "two-node-ha");
    let bogus = proposed("bogus", "bogus-ext");
    let outcome = |to: &Path, fleet: &Path| {
        let o = plan(&base, to, fleet, &["--format", "json"]);
        let p = json(&o);
        (o.status.code(), p["groups"][0]["outcome"].clone())
    };
    // Taken, with the note: the taint as planned.
    let (code, o) = outcome(&wasm, &v420);
    assert_eq!(code, Some(1), "{o:#}");
    assert!(
        o["register_after"]["taints"].to_string().contains(TAINT),
        "{o:#}"
    );
    assert!(
        o["not_judged"]
            .to_string()
            .contains("known to the MCO of OpenShift 4.14 to 4.21 only"),
        "{o:#}"
    );
    // Refused on 4.23 and 4.18, and where the release is unknown: no
    // change shown, exit 2.
    for (to, fleet, says) in [
        (&wasm, &v423, "not to this node's 4.23"),
        (
            &ha,
            &v418,
            "OpenShift 4.19 and later only, not to this node's 4.18",
        ),
        (&wasm, &unknown, "may refuse"),
    ] {
        let (code, o) = outcome(to, fleet);
        assert_eq!(code, Some(2), "{o:#}");
        assert!(
            o["refused"].as_str().is_some_and(|r| r.contains(says)),
            "{says}: {o:#}"
        );
        assert!(
            !o["register_after"]["taints"].to_string().contains(TAINT),
            "{o:#}"
        );
    }
    let (code, o) = outcome(&ha, &v420);
    assert_eq!(code, Some(1), "{o:#}");
    assert!(o["refused"].is_null(), "{o:#}");
    // No release knows it: bad input.
    let o = plan(&base, &bogus, &v420, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("is no extension the MCO knows, in any release"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The oracle's MCO (main) refuses wasm, as plan says for 4.23.
    let Some((bin, root)) = crate::support::mco::oracle() else {
        return;
    };
    let out = std::process::Command::new(bin)
        .arg("-mco-root")
        .arg(root)
        .arg("-manifests")
        .arg(&wasm)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["mcoErrors"]
            .to_string()
            .contains("invalid extensions found: [wasm]"),
        "{}",
        report["mcoErrors"]
    );
}
