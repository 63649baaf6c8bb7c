//! The node disruption policy `render machineconfig` writes, judged by the
//! MCO's own daemon code (../shared/oracles/mco: `-prev-manifests` and
//! `-policy` give the machine-config-daemon's verdict for moving a pool's
//! nodes from one render to the next): a change of labels, taints or rules
//! restarts only the sync (no drain, no reboot, no kubelet restart) and a
//! new wrapper needs nothing, where the MCO's defaults reboot.

use crate::support::{elf, scratch_dir, skipped};

use std::path::{Path, PathBuf};
use std::process::Command;

/// The oracle binary and its MCO tree, when they can run here.
pub(crate) fn oracle() -> Option<(PathBuf, PathBuf)> {
    let unpack = skipped::shared("oracles/mco/unpack.sh")?;
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    if !is_root {
        skipped::skipped("the MCO oracle needs root (it chroots)");
        return None;
    }
    let out = Command::new("bash").arg(unpack).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    Some((lines.next()?.into(), lines.next()?.into()))
}

pub(crate) fn wrapper(dir: &Path, marker: &[u8]) -> PathBuf {
    let mut bytes = elf::static_elf(kubelet_labeler::cli::render::arch::Arch::X86_64);
    bytes.extend_from_slice(marker);
    let p = dir.join(format!("wrapper-{}", String::from_utf8_lossy(marker)));
    std::fs::write(&p, bytes).unwrap();
    p
}

/// `render machineconfig ARGS --output-dir out`.
pub(crate) fn render_to(out: &Path, args: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["render", "machineconfig"])
        .args(args)
        .arg("--output-dir")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `render machineconfig` into `out`; the policy file moves to `policy`
/// (it is applied once, cluster-wide, not with the pool's manifests).
pub(crate) fn render(out: &Path, wrapper: &Path, args: &[&str], policy: &Path) {
    let w = wrapper.to_str().unwrap();
    render_to(
        out,
        &[&["--pool", "worker-gpu", "--wrapper", w], args].concat(),
    );
    std::fs::rename(
        out.join("cluster-wide/machineconfiguration-worker-gpu.yaml"),
        policy,
    )
    .unwrap();
    std::fs::remove_dir(out.join("cluster-wide")).unwrap();
}

/// The daemon's verdict for moving worker-gpu nodes from `before` to `after`.
fn verdict(before: &Path, after: &Path, policy: &Path) -> serde_json::Value {
    oracle_report(before, after, policy)["changeFromPrevManifests"][0].clone()
}

/// The oracle's whole report on moving from `before` to `after`.
fn oracle_report(before: &Path, after: &Path, policy: &Path) -> serde_json::Value {
    let v = oracle_json(before, after, policy);
    assert_eq!(v["summary"]["ok"], true, "{}", v["summary"]);
    v
}

/// The oracle's report on moving from `before` to `after`, whatever it
/// finds.
pub(crate) fn oracle_json(before: &Path, after: &Path, policy: &Path) -> serde_json::Value {
    let (bin, root) = oracle().unwrap();
    let out = Command::new(bin)
        .arg("-mco-root")
        .arg(root)
        .arg("-manifests")
        .arg(after)
        .arg("-prev-manifests")
        .arg(before)
        .arg("-policy")
        .arg(policy)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// The daemon's cost in `plan`'s words (its worst action with the given
/// policy), and the actions behind it.
pub(crate) fn daemon_cost(v: &serde_json::Value) -> (&'static str, Vec<String>) {
    let given = &v["withGivenPolicy"];
    let actions: Vec<String> = serde_json::from_value(given["NodeDisruptionActions"].clone())
        .unwrap_or_else(|e| panic!("{e}: {v}"));
    let worst = actions
        .iter()
        .map(|a| match a.split(' ').next().unwrap_or_default() {
            "None" => 0,
            "DaemonReload" => 1,
            "Reload" | "Special" => 2,
            "Restart" => 3,
            "Drain" => 4,
            _ => 5,
        })
        .max()
        .unwrap_or(5);
    // A drain without a reboot (an unsafe registries.conf change).
    let worst = if worst < 4 && given["DrainNodeDisruption"] == true {
        4
    } else {
        worst
    };
    let cost = [
        "nothing",
        "daemon-reload",
        "reload",
        "restart",
        "drain",
        "drain-and-reboot",
    ][worst];
    (cost, actions)
}

/// The oracle's verdict for worker-gpu's nodes among the pools it moves.
pub(crate) fn gpu_change(report: &serde_json::Value) -> &serde_json::Value {
    let changes = &report["changeFromPrevManifests"];
    changes
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| {
            c["what"]
                .as_str()
                .is_some_and(|w| w.starts_with("worker-gpu nodes"))
        })
        .unwrap_or_else(|| panic!("{changes:#}"))
}

/// `plan --format json` from `before` to `after` for the fleet and policy.
fn plan_json(before: &Path, after: &Path, fleet: &Path, policy: &Path) -> serde_json::Value {
    let o = plan_run(before, after, fleet, policy);
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)))
}

/// `plan --format json` from `before` to `after`, as it ran.
pub(crate) fn plan_run(
    before: &Path,
    after: &Path,
    fleet: &Path,
    policy: &Path,
) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"));
    c.args(["plan", "--format", "json", "--from"])
        .arg(before)
        .arg("--to")
        .arg(after)
        .arg("--fleet")
        .arg(fleet)
        .arg("--fleet")
        .arg(policy)
        .args(["--own-unit-prefix", "acme-"]);
    // The wrappers these renders ship are the release's here (what a
    // changed wrapper must be is `plan_render_files`'s).
    let vouched = tempfile::tempdir_in(after.parent().unwrap()).unwrap();
    for (i, bytes) in wrappers_of(after).into_iter().enumerate() {
        let w = vouched.path().join(format!("wrapper-{i}"));
        std::fs::write(&w, bytes).unwrap();
        c.arg("--wrapper").arg(w);
    }
    c.output().unwrap()
}

/// The wrapper binaries the MachineConfigs under `dir` write, one per
/// architecture.
fn wrappers_of(dir: &Path) -> Vec<Vec<u8>> {
    use kubelet_labeler::cli::render::layout;
    use kubelet_labeler::node::contract::WRAPPER_PATH;
    let mut out = std::collections::BTreeMap::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            for mc in layout::machineconfigs_from_yaml(&text, "mc").unwrap_or_default() {
                let files = mc.pointer("/spec/config/storage/files").cloned();
                for f in files
                    .and_then(|f| f.as_array().cloned())
                    .unwrap_or_default()
                {
                    let path = f["path"].as_str().unwrap_or_default();
                    if let Some(arch) = path.strip_prefix(&format!("{WRAPPER_PATH}.")) {
                        let source = f["contents"]["source"].as_str().unwrap_or_default();
                        let compression = f["contents"]["compression"].as_str();
                        if let Ok(bytes) = layout::decode_data_url(source, compression) {
                            out.insert(arch.to_string(), bytes);
                        }
                    }
                }
            }
        }
    }
    out.into_values().collect()
}

#[test]
fn a_label_change_restarts_only_the_sync_and_a_new_wrapper_nothing() {
    if oracle().is_none() {
        return;
    }
    let dir = scratch_dir();
    let d = dir.path();
    let w1 = wrapper(d, b"1");
    let w2 = wrapper(d, b"2");
    let policy = d.join("policy.yaml");
    render(
        &d.join("before"),
        &w1,
        &["--label", "example.com/tier=gold"],
        &policy,
    );
    render(
        &d.join("labels"),
        &w1,
        &[
            "--label",
            "example.com/tier=silver",
            "--taint",
            "nvidia.com/gpu=true:NoSchedule",
        ],
        &d.join("policy-2.yaml"),
    );
    render(
        &d.join("wrapper"),
        &w2,
        &["--label", "example.com/tier=gold"],
        &d.join("policy-3.yaml"),
    );
    // The policy does not depend on the labels.
    assert_eq!(
        std::fs::read(&policy).unwrap(),
        std::fs::read(d.join("policy-2.yaml")).unwrap()
    );

    let v = verdict(&d.join("before"), &d.join("labels"), &policy);
    let default = &v["defaultNodeDisruptionPolicy"];
    let given = &v["withGivenPolicy"];
    assert_eq!(
        default["NodeDisruptionActions"],
        serde_json::json!(["Reboot"]),
        "{v}"
    );
    assert_eq!(
        given["NodeDisruptionActions"],
        serde_json::json!(["DaemonReload", "Restart kubelet-labeler-sync.service"]),
        "{v}"
    );
    assert_eq!(given["DrainNodeDisruption"], false, "{v}");

    let v = verdict(&d.join("before"), &d.join("wrapper"), &policy);
    assert_eq!(
        v["withGivenPolicy"]["NodeDisruptionActions"],
        serde_json::json!(["None"]),
        "{v}"
    );
    assert_eq!(v["withGivenPolicy"]["DrainNodeDisruption"], false, "{v}");
}

/// The version annotation is the manifests' only mark of the release that
/// rendered them: the MCO leaves it out of the pool's rendered config, so a
/// re-render whose files are the same changes nothing on any node.
#[test]
fn the_version_annotation_alone_changes_no_node() {
    if oracle().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let w1 = wrapper(d, b"1");
    let policy = d.join("policy.yaml");
    render(
        &d.join("before"),
        &w1,
        &["--label", "example.com/tier=gold"],
        &policy,
    );
    let after = d.join("after");
    std::fs::create_dir(&after).unwrap();
    let ours = format!(
        "kubelet-labeler/rendered-by: {}",
        kubelet_labeler::cli::render::RENDERED_BY
    );
    let mut marked = 0;
    for e in std::fs::read_dir(d.join("before")).unwrap() {
        let e = e.unwrap();
        let text = std::fs::read_to_string(e.path()).unwrap();
        marked += text.matches(&ours).count();
        let bumped = text.replace(&ours, "kubelet-labeler/rendered-by: kubelet-labeler 99.0.0");
        std::fs::write(after.join(e.file_name()), bumped).unwrap();
    }
    assert!(marked >= 3, "each manifest carries {ours}");
    let v = oracle_report(&d.join("before"), &after, &policy);
    // The oracle lists a transition for each pool whose rendered config
    // changed (a label change does: the test above); none here.
    assert!(
        v["renderedConfigs"]["worker-gpu"].is_string(),
        "{}",
        v["renderedConfigs"]
    );
    assert_eq!(
        v["changeFromPrevManifests"],
        serde_json::Value::Null,
        "{v:#}"
    );
}

/// A re-render that leaves one more rule to the cluster's NFD
/// (`--leave-to-nfd`) changes the env drop-in (its rules and its record of
/// the rules left) and nothing else: the MCO restarts only the sync.
#[test]
fn leaving_one_more_rule_to_nfd_restarts_only_the_sync() {
    if oracle().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let w1 = wrapper(d, b"1");
    let rules = d.join("cpu.yaml");
    std::fs::write(
        &rules,
        "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {name: cpu}\n\
         spec:\n  rules:\n  - name: sgx\n    extendedResources: {example.com/sgx: \"1\"}\n\
         \x20   matchFeatures: [{feature: cpu.cpuid, matchExpressions: {SSE2: {op: Exists}}}]\n\
         \x20 - name: kernel\n    labels: {example.com/kernel: \"true\"}\n\
         \x20   matchFeatures: [{feature: kernel.version, matchExpressions: {major: {op: Exists}}}]\n\
         \x20 - name: model\n    labels: {example.com/cpu: \"known\"}\n\
         \x20   matchFeatures: [{feature: cpu.model, matchExpressions: {vendor_id: {op: Exists}}}]\n",
    )
    .unwrap();
    let r = rules.to_str().unwrap();
    let policy = d.join("policy.yaml");
    render(
        &d.join("before"),
        &w1,
        &["--rules", r, "--leave-to-nfd", "sgx"],
        &policy,
    );
    render(
        &d.join("after"),
        &w1,
        &[
            "--rules",
            r,
            "--leave-to-nfd",
            "sgx",
            "--leave-to-nfd",
            "cpu/model",
        ],
        &d.join("policy-2.yaml"),
    );
    let env = |dir: &str| {
        std::fs::read_to_string(
            d.join(dir)
                .join("50-worker-gpu-kubelet-labeler-labels.yaml"),
        )
        .unwrap()
    };
    assert_ne!(env("before"), env("after"));
    let v = verdict(&d.join("before"), &d.join("after"), &policy);
    assert_eq!(
        v["withGivenPolicy"]["NodeDisruptionActions"],
        serde_json::json!(["DaemonReload", "Restart kubelet-labeler-sync.service"]),
        "{v}"
    );
    assert_eq!(v["withGivenPolicy"]["DrainNodeDisruption"], false, "{v}");
}

/// `plan`'s cost for a pool's nodes is the daemon's own verdict (the MCO's
/// `calculatePostConfigChangeNodeDisruptionAction` with the policy given),
/// on the transitions `render machineconfig` makes: labels and taints
/// changed, a new wrapper, a file no policy entry names, and the cluster's own
/// files, which only the MCO's default entries name.
#[test]
fn plan_predicts_the_daemons_verdict() {
    if oracle().is_none() {
        return;
    }
    let dir = scratch_dir();
    let d = dir.path();
    let (w1, w2) = (wrapper(d, b"1"), wrapper(d, b"2"));
    let policy = d.join("policy.yaml");
    render(
        &d.join("before"),
        &w1,
        &["--label", "example.com/tier=gold"],
        &policy,
    );
    let changes: [(&str, &Path, &[&str]); 4] = [
        (
            "labels",
            &w1,
            &[
                "--label",
                "example.com/tier=silver",
                "--taint",
                "nvidia.com/gpu=true:NoSchedule",
            ],
        ),
        ("wrapper", &w2, &["--label", "example.com/tier=gold"]),
        ("arch", &w1, &["--label", "example.com/tier=gold"]),
        ("cluster-files", &w1, &["--label", "example.com/tier=gold"]),
    ];
    let fleet = d.join("fleet.json");
    let node = serde_json::json!({"kind": "List", "items": [{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "gpu-1", "labels": {
            "node-role.kubernetes.io/worker": "", "node.kubernetes.io/worker-gpu": ""}},
        "status": {"nodeInfo": {"kubeletVersion": "v1.33.5"}}}]});
    std::fs::write(&fleet, node.to_string()).unwrap();
    for (name, w, args) in changes {
        let after = d.join(name);
        render(&after, w, args, &d.join(format!("policy-{name}.yaml")));
        // "arch": a file of the pool's that no policy entry names;
        // "cluster-files": files only the MCO's default entries name (the
        // image policy reloads crio, the kubelet's pull secret needs
        // nothing), no entry of the cluster's or ours.
        let extra: &[&str] = match name {
            "arch" => &["/etc/example.conf"],
            "cluster-files" => &[
                "/etc/containers/policy.json",
                "/var/lib/kubelet/config.json",
            ],
            _ => &[],
        };
        if !extra.is_empty() {
            let mc = after.join("50-worker-gpu-kubelet-labeler-labels.yaml");
            let mut text = std::fs::read_to_string(&mc).unwrap();
            for path in extra {
                let file = format!(
                    "      - path: {path}\n        mode: 420\n        overwrite: true\n        contents:\n          source: data:,x\n"
                );
                text = text.replacen("      files:\n", &format!("      files:\n{file}"), 1);
                assert!(text.contains(path), "{text}");
            }
            std::fs::write(&mc, text).unwrap();
        }
        let v = verdict(&d.join("before"), &after, &policy);
        let (want, actions) = daemon_cost(&v);
        if name == "cluster-files" {
            // The MCO's defaults decide: crio reloads, no drain, no reboot.
            assert_eq!(actions, ["Reload crio.service"], "{v}");
        }
        let p = plan_json(&d.join("before"), &after, &fleet, &policy);
        if name == "cluster-files" {
            let because = p["groups"][0]["outcome"]["disruption_because"].to_string();
            assert!(
                because.contains(
                    "/etc/containers/policy.json: Reload crio.service (the MCO's default)"
                ),
                "{because}"
            );
        }
        assert_eq!(
            p["groups"][0]["outcome"]["disruption"], want,
            "{name}: the daemon says {actions:?}; plan says {:#}",
            p["groups"][0]["outcome"]
        );
    }
}

/// Issue 33 item 19: render names an earlier version's unmarked
/// `50-worker-kubelet-labeler-wrapper.yaml` with what removing it costs
/// (worker and every custom pool roll; worker's nodes reboot without the
/// policy) and the cheaper order; the MCO's own daemon agrees: a worker
/// node reboots by default and only reloads with the policy, a custom
/// pool's node (which keeps its own render's files) does nothing.
#[test]
fn removing_the_old_worker_wrapper_costs_what_render_says() {
    use kubelet_labeler::cli::render::machineconfig::{RENDERED_FOR, to_yaml};
    let dir = scratch_dir();
    let d = dir.path();
    let w = wrapper(d, b"1");
    // The earlier version's worker wrapper MachineConfig, unmarked.
    let old = d.join("old");
    let o = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["render", "machineconfig", "--role", "worker", "--wrapper"])
        .arg(&w)
        .arg("--output-dir")
        .arg(&old)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let name = "50-worker-kubelet-labeler-wrapper.yaml";
    let mut mc: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(old.join(name)).unwrap()).unwrap();
    mc["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove(RENDERED_FOR);
    let before = d.join("before");
    std::fs::create_dir(&before).unwrap();
    std::fs::write(before.join(name), to_yaml(&mc).unwrap()).unwrap();

    let o = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args([
            "render",
            "machineconfig",
            "--pool",
            "worker-gpu",
            "--wrapper",
        ])
        .arg(&w)
        .arg("--output-dir")
        .arg(&before)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with(&format!("left {}", before.join(name).display())))
        .unwrap_or_else(|| panic!("{err}"));
    for says in [
        "changes the rendered config of worker and of every custom pool",
        "A custom pool's node keeps the files its own render writes at the same paths",
        "drained and rebooted for that before OpenShift 4.17, or until the cluster-wide node \
         disruption policy is applied (with it, a daemon-reload and a restart of the sync)",
        "remove it in the same change as this render, with the pools paused, so that each pool \
         rolls once, and apply the policy first",
    ] {
        assert!(line.contains(says), "{says}: {line}");
    }

    if oracle().is_none() {
        return;
    }
    let policy = d.join("policy.yaml");
    std::fs::rename(
        before.join("cluster-wide/machineconfiguration-worker-gpu.yaml"),
        &policy,
    )
    .unwrap();
    std::fs::remove_dir(before.join("cluster-wide")).unwrap();
    let after = d.join("after");
    std::fs::create_dir(&after).unwrap();
    for e in std::fs::read_dir(&before).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().unwrap() != name {
            std::fs::copy(&p, after.join(p.file_name().unwrap())).unwrap();
        }
    }
    let report = oracle_report(&before, &after, &policy);
    let verdicts: Vec<(String, String)> = report["changeFromPrevManifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["what"].as_str().unwrap().to_string(),
                c["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // Both pools roll (a new rendered config each) ...
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    for (what, verdict) in &verdicts {
        if what.starts_with("worker nodes") {
            // ... worker's nodes reboot by default, reload with the policy;
            let (default, given) = verdict.split_once("; with the given policy: ").unwrap();
            assert_eq!(default, "default: Reboot", "{verdict}");
            assert!(
                given.starts_with("DaemonReload") && !given.contains("Reboot"),
                "{verdict}"
            );
        } else {
            // ... a custom pool's node keeps its own render's files.
            assert!(what.starts_with("worker-gpu nodes"), "{what}");
            assert_eq!(verdict, "default: none; with the given policy: none");
        }
    }
}

/// The same proof on the changes this project has met: a role's and a
/// pool's renders composing (a gpu node is in both), an architecture
/// added (a real re-render), the pool's label changed (plan's pool move
/// against the MCO's own pool choice) and a version upgrade (a base of node
/// format 3), each against the daemon's verdict.
#[test]
fn plan_predicts_the_daemons_verdict_on_the_changes_met() {
    if oracle().is_none() {
        return;
    }
    let dir = scratch_dir();
    let d = dir.path();
    let w1 = wrapper(d, b"1");
    let w1 = w1.to_str().unwrap();
    let arm = d.join("wrapper-arm");
    std::fs::write(
        &arm,
        elf::static_elf(kubelet_labeler::cli::render::arch::Arch::Aarch64),
    )
    .unwrap();
    let arm = arm.to_str().unwrap();
    let gold = ["--label", "example.com/tier=gold"];
    let gpu = |name: &str, labels: serde_json::Value| {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {"nodeInfo": {"kubeletVersion": "v1.33.5"}}})
    };
    let fleet_of = |nodes: Vec<serde_json::Value>| {
        let f = d.join("fleet.json");
        std::fs::write(
            &f,
            serde_json::json!({"kind": "List", "items": nodes}).to_string(),
        )
        .unwrap();
        f
    };
    let group_of = |p: &serde_json::Value, node: &str| {
        p["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|g| {
                g["nodes"]
                    .as_array()
                    .is_some_and(|n| n.iter().any(|n| n == node))
            })
            .map(|g| g["outcome"].clone())
            .unwrap_or_else(|| panic!("{node} in no group: {p:#}"))
    };
    let ours = || {
        serde_json::json!({
            "node-role.kubernetes.io/worker": "", "node.kubernetes.io/worker-gpu": ""})
    };
    // The pool's render with its policy taken out to `policy`.
    let pool = |out: &Path, args: &[&str], policy: &Path| {
        render_to(out, &[&["--pool", "worker-gpu"], args].concat());
        std::fs::rename(
            out.join("cluster-wide/machineconfiguration-worker-gpu.yaml"),
            policy,
        )
        .unwrap();
        std::fs::remove_dir_all(out.join("cluster-wide")).unwrap();
    };

    // (1) worker's render and worker-gpu's in the same inputs; worker's
    // labels change: the gpu node gets worker's files too.
    let policy = d.join("policy-role.yaml");
    for (side, tier) in [("role-before", "a"), ("role-after", "b")] {
        let out = d.join(side);
        let label = format!("example.com/role-tier={tier}");
        render_to(
            &out,
            &["--role", "worker", "--wrapper", w1, "--label", &label],
        );
        pool(&out, &[&["--wrapper", w1], &gold[..]].concat(), &policy);
    }
    let report = oracle_report(&d.join("role-before"), &d.join("role-after"), &policy);
    let v = gpu_change(&report);
    let (want, actions) = daemon_cost(v);
    let fleet = fleet_of(vec![gpu("gpu-1", ours())]);
    let p = plan_json(
        &d.join("role-before"),
        &d.join("role-after"),
        &fleet,
        &policy,
    );
    let o = group_of(&p, "gpu-1");
    assert_eq!(
        o["disruption"], want,
        "role+pool: the daemon says {actions:?}; plan says {o:#}"
    );

    // (2) aarch64 added by a re-render; its policy (naming the new
    // wrapper) is applied first, as render says.
    let policy = d.join("policy-arch.yaml");
    pool(
        &d.join("arch-before"),
        &[&["--arch", "x86_64", "--wrapper", w1], &gold[..]].concat(),
        &d.join("policy-x86.yaml"),
    );
    pool(
        &d.join("arch-after"),
        &[
            &[
                "--arch",
                "x86_64",
                "--arch",
                "aarch64",
                "--wrapper",
                w1,
                "--wrapper",
                arm,
            ],
            &gold[..],
        ]
        .concat(),
        &policy,
    );
    let v = verdict(&d.join("arch-before"), &d.join("arch-after"), &policy);
    let (want, actions) = daemon_cost(&v);
    let p = plan_json(
        &d.join("arch-before"),
        &d.join("arch-after"),
        &fleet,
        &policy,
    );
    let o = group_of(&p, "gpu-1");
    assert_eq!(
        o["disruption"], want,
        "arch: the daemon says {actions:?}; plan says {o:#}"
    );

    // (3) the pool's label changed: a node registering from the new
    // render lands where the MCO puts it; a running node with the old
    // label only is selected by no custom pool any more, as the oracle's
    // node without our labels.
    let policy = d.join("policy-label.yaml");
    pool(
        &d.join("label-before"),
        &[&["--wrapper", w1], &gold[..]].concat(),
        &policy,
    );
    pool(
        &d.join("label-after"),
        &[
            &["--wrapper", w1, "--pool-label", "example.com/gpu=true"],
            &gold[..],
        ]
        .concat(),
        &d.join("policy-label-2.yaml"),
    );
    let report = oracle_report(&d.join("label-before"), &d.join("label-after"), &policy);
    let labels_of = |choice: &serde_json::Value| {
        let mut m = serde_json::Map::new();
        for kv in choice["labels"].as_str().unwrap_or_default().split(',') {
            if let Some((k, v)) = kv.split_once('=') {
                m.insert(k.into(), v.into());
            }
        }
        serde_json::Value::Object(m)
    };
    let chosen = &report["poolSelection"];
    let bare = &report["poolSelectionControls"]["withoutOurLabels"];
    let fleet = fleet_of(vec![
        gpu("gpu-new", labels_of(chosen)),
        gpu("gpu-old", ours()),
        gpu("gpu-both", {
            let mut l = ours();
            l["example.com/gpu"] = "true".into();
            l
        }),
    ]);
    let p = plan_json(
        &d.join("label-before"),
        &d.join("label-after"),
        &fleet,
        &policy,
    );
    let (new, old) = (group_of(&p, "gpu-new"), group_of(&p, "gpu-old"));
    // A node carrying both labels stays in the pool: the daemon's verdict
    // for the pool's nodes is its cost.
    let both = group_of(&p, "gpu-both");
    assert_eq!(both["pool_before"], "worker-gpu", "{both:#}");
    assert_eq!(both["pool_after"], "worker-gpu", "{both:#}");
    assert_eq!(
        new["pool_after"], chosen["primary"],
        "{chosen}; plan: {new:#}"
    );
    assert_eq!(old["pool_before"], "worker-gpu", "{old:#}");
    assert_eq!(old["pool_after"], bare["primary"], "{bare}; plan: {old:#}");
    let (want, actions) = daemon_cost(gpu_change(&report));
    assert_eq!(
        both["disruption"], want,
        "pool label: the daemon says {actions:?}; plan says {both:#}"
    );

    // (4) a version upgrade: the base as node format 3's release rendered
    // it (its files stamped, its wrapper of that format), the same options
    // re-rendered by this one.
    let policy = d.join("policy-upgrade.yaml");
    pool(
        &d.join("upgrade-before"),
        &[&["--wrapper", w1], &gold[..]].concat(),
        &d.join("policy-format-3.yaml"),
    );
    crate::support::node_format::as_node_format_3(&d.join("upgrade-before"), false);
    pool(
        &d.join("upgrade-after"),
        &[&["--wrapper", w1], &gold[..]].concat(),
        &policy,
    );
    let v = verdict(&d.join("upgrade-before"), &d.join("upgrade-after"), &policy);
    let (want, actions) = daemon_cost(&v);
    let fleet = fleet_of(vec![gpu("gpu-1", ours())]);
    let p = plan_json(
        &d.join("upgrade-before"),
        &d.join("upgrade-after"),
        &fleet,
        &policy,
    );
    let o = group_of(&p, "gpu-1");
    assert_eq!(
        o["disruption"], want,
        "upgrade: the daemon says {actions:?}; plan says {o:#}"
    );
}
