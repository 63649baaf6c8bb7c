//! The MachineConfig merge behind `explain --machineconfig`, `plan` and
//! `iso fleet`, against the MCO's own (the MCO oracle renders the pool's
//! config with `MergeMachineConfigs`, Ignition's merge): storage files,
//! links and directories are one list by path, and `append` entries are
//! concatenated, repeats kept.

use crate::compose::{render_pool, write_yaml};
use crate::support::{mco, scratch_dir, stderr};

use kubelet_labeler::cli::render::layout::{Layout, machineconfigs_from_yaml};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const ENV: &str = "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf";
const TUNING: &str = "/etc/systemd/system/kubelet.service.d/95-gpu-tuning.conf";

fn later(name: &str, storage: Value) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {"name": name,
                     "labels": {"machineconfiguration.openshift.io/role": "worker-gpu"}},
        "spec": {"config": {"ignition": {"version": "3.4.0"}, "storage": storage}}
    })
}

fn append(name: &str, lines: &[&str]) -> Value {
    let a: Vec<Value> = lines
        .iter()
        .map(|l| json!({"source": format!("data:,Environment%3D%22FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS%3D{l}%22%0A")}))
        .collect();
    later(name, json!({"files": [{"path": ENV, "append": a}]}))
}

/// The reviewer's cases: a later link of the env drop-in to /dev/null, a
/// directory there, a linked drop-in to a new file, appends repeated.
fn cases() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "link",
            vec![later(
                "99-worker-gpu-link",
                json!({"links": [{"path": ENV, "target": "/dev/null", "overwrite": true}]}),
            )],
        ),
        (
            "directory",
            vec![later(
                "99-worker-gpu-dir",
                json!({"directories": [{"path": ENV, "overwrite": true}]}),
            )],
        ),
        (
            "linked-dropin",
            vec![later(
                "99-worker-gpu-extra",
                json!({"files": [{"path": "/etc/kubernetes/gpu-tuning.conf", "mode": 420,
                    "contents": {"source": "data:,%5BService%5D%0AEnvironment=%22FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=%22%0A"}}],
                       "links": [{"path": TUNING, "target": "/etc/kubernetes/gpu-tuning.conf"}]}),
            )],
        ),
        (
            "appends",
            vec![
                append("60-worker-gpu-x", &[""]),
                append("70-worker-gpu-y", &["example.com/y%3D1%3ANoSchedule", ""]),
            ],
        ),
    ]
}

/// What the MCO's merged config holds at `path`, read as the node reads
/// it: a file's contents (with its appends), a link's target file's, or
/// nothing (a directory, nothing); a link out of the config is `Err`.
fn mcos(rendered: &Layout, config: &Value, path: &str) -> Result<Option<Vec<u8>>, ()> {
    let list = |name: &str| -> Vec<Value> {
        config["storage"][name]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let at = |name: &str| list(name).into_iter().find(|e| e["path"] == path);
    let read = |p: &str| rendered.file(p).unwrap().map(|f| f.contents);
    if at("files").is_some() {
        return Ok(read(path));
    }
    if let Some(link) = at("links") {
        let target = link["target"].as_str().unwrap();
        let is_file = list("files").iter().any(|f| f["path"] == target);
        return if is_file { Ok(read(target)) } else { Err(()) };
    }
    Ok(None)
}

/// Each case rendered by the MCO oracle (the pool's config as the
/// bootstrap MCC renders it): at the env drop-in and the
/// linked drop-in, the laid-out MachineConfigs read what the MCO's own
/// merged config gives the node. Before: the link and the directory were
/// ignored (the env drop-in's taint read where the node gets none), the
/// linked drop-in was missing, and the repeated append was merged away
/// (the taint of `70-worker-gpu-y` read where the node's file ends with
/// none).
#[test]
fn the_merge_is_the_mcos_for_links_directories_and_appends() {
    let Some((oracle, mco_root)) = mco::oracle_as_root() else {
        return;
    };
    let dir = scratch_dir();
    let runs: Vec<_> = cases()
        .into_iter()
        .map(|(case, extra)| {
            let out = dir.path().join(case).join("gitops");
            let o = render_pool(&out, false);
            assert!(o.status.success(), "{}", stderr(&o));
            std::fs::remove_dir_all(out.join("cluster-wide")).unwrap();
            for mc in &extra {
                let name = mc["metadata"]["name"].as_str().unwrap();
                write_yaml(&out.join(format!("{name}.yaml")), mc);
            }
            let work = dir.path().join(case).join("work");
            let child = Command::new(&oracle)
                .arg("-mco-root")
                .arg(&mco_root)
                .arg("-manifests")
                .arg(&out)
                .args(["-boot-pool", "worker-gpu", "-work"])
                .arg(&work)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (case, out, work, child)
        })
        .collect();
    for (case, out, work, child) in runs {
        let o = child.wait_with_output().unwrap();
        // The install-time render of the pool (the bootstrap MCC's merge):
        // the running cluster's goes to the node's pool, which a lost env
        // drop-in changes.
        let renders = work.join("install/out/machine-configs");
        let rendered = std::fs::read_dir(&renders)
            .unwrap_or_else(|e| panic!("{case}: {e}: {}", stderr(&o)))
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains("rendered-worker-gpu-"))
            .unwrap_or_else(|| panic!("{case}: no render of the pool: {}", stderr(&o)));
        let text = std::fs::read_to_string(&rendered).unwrap();
        let mc = machineconfigs_from_yaml(&text, "the render")
            .unwrap()
            .remove(0);
        let config = mc["spec"]["config"].clone();
        let rendered = Layout::merge(vec![mc]).unwrap();
        let ours = Layout::merge(source(&out)).unwrap();
        for path in [ENV, TUNING] {
            let want = mcos(&rendered, &config, path);
            let got = ours.file(path).map(|f| f.map(|f| f.contents));
            let show = |r: Result<Option<Vec<u8>>, ()>| match r {
                Ok(c) => format!("{:?}", c.map(|b| String::from_utf8_lossy(&b).into_owned())),
                Err(()) => "an error (a link out of the config)".to_string(),
            };
            assert_eq!(
                show(got.map_err(|_| ())),
                show(want),
                "{case}: {path}: ours (left), the MCO's (right)"
            );
        }
    }
}

/// The MachineConfigs of the directory the oracle was given.
fn source(out: &Path) -> Vec<Value> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(out).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "yaml") {
            let text = std::fs::read_to_string(&p).unwrap();
            all.extend(machineconfigs_from_yaml(&text, "x").unwrap_or_default());
        }
    }
    all
}
