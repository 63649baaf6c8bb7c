//! Review 30 r30a F2: crio's configuration is judged by whether crio
//! starts with it, not priced by its path. A registries.conf crio's start
//! refuses (containers/image's checks: cri-o exits with "invalid
//! registries", the MCO's `reload crio` only logs it) used to be "a
//! service reload", exit 0, under `--fail-on reboot --fail-on taint`; a
//! crio.conf.d drop-in "1 reboot" or, with a Reload entry, "a service
//! reload". kubelet `Requires=crio.service`: both keep it from starting at
//! the node's next boot.

use std::path::Path;

use serde_json::json;

use crate::plan::render;
use crate::plan_kubelet_command::planned;
use crate::support::{relist_kustomization, scratch_dir, stderr, stdout};

const TAINT: &str = "example.com/gpu=true:NoSchedule";

/// The disconnected cluster's registries.conf of the reproducer.
const BASE: &str = "unqualified-search-registries = [\"registry.access.redhat.com\", \"docker.io\"]
short-name-mode = \"enforcing\"

[[registry]]
prefix = \"quay.io/team\"
location = \"quay.io/team\"

[[registry.mirror]]
location = \"mirror.example.com/team\"
pull-from-mirror = \"digest-only\"
";

/// A registry for quay.io/gpu, `head` in its table, its mirror `mirror`.
fn gpu(head: &str, mirror: &str) -> String {
    format!(
        "{BASE}\n[[registry]]\nprefix = \"quay.io/gpu\"\nlocation = \"quay.io/gpu\"\n{head}\n\
         [[registry.mirror]]\nlocation = \"{mirror}\"\npull-from-mirror = \"digest-only\"\n"
    )
}

/// A render of pool worker-gpu whose MachineConfig writes `path` with
/// `text`.
fn render_writing(dir: &Path, path: &str, text: &str) {
    render(dir, &["--taint", TAINT]);
    let source = format!(
        "data:,{}",
        kubelet_labeler::cli::render::encoding::percent_encode(text.as_bytes())
    );
    let mc = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": { "name": "60-worker-gpu-crio",
            "labels": { "machineconfiguration.openshift.io/role": "worker-gpu" } },
        "spec": { "config": { "ignition": { "version": "3.4.0" },
            "storage": { "files": [{ "path": path, "mode": 420, "overwrite": true,
                "contents": { "source": source } }] } } },
    });
    std::fs::write(dir.join("60-worker-gpu-crio.yaml"), mc.to_string()).unwrap();
    relist_kustomization(dir, &["60-worker-gpu-crio.yaml"], &[]);
}

#[test]
fn a_registries_conf_crio_refuses_at_its_start_is_refused() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    const AT: &str = "/etc/containers/registries.conf";
    render_writing(&base, AT, BASE);
    let cases = [
        ("ctl", gpu("", "mirror.example.com/gpu"), None),
        (
            "a",
            BASE.replace("\"enforcing\"", "\"enforced\""),
            Some("short-name-mode \"enforced\""),
        ),
        (
            "b",
            gpu("", "https://mirror.example.com/gpu"),
            Some("has a URI scheme"),
        ),
        (
            "c",
            format!("{BASE}\n[aliases]\n\"ubi9\" = \"ubi9\"\n"),
            Some("alias \"ubi9\" = \"ubi9\""),
        ),
        (
            "d",
            gpu("mirror-by-digest-only = true", "mirror.example.com/gpu"),
            Some("sets mirror-by-digest-only"),
        ),
    ];
    for (name, text, says) in cases {
        let pr = tmp.path().join(name);
        render_writing(&pr, AT, &text);
        let o = planned(&base, &pr);
        let (out, err) = (stdout(&o), stderr(&o));
        match says {
            None => {
                // Priced (the fleet's nodes get the render's taint).
                assert_ne!(o.status.code(), Some(2), "{name}: {out}{err}");
                assert!(
                    out.contains("the MCO judges the change safe (no drain)")
                        && !err.contains("kubelet may not start"),
                    "{name}: {out}{err}"
                );
            }
            Some(says) => {
                assert_eq!(o.status.code(), Some(2), "{name}: {out}{err}");
                assert!(
                    err.contains(&format!("kubelet may not start: {AT} of {}", pr.display()))
                        || err.contains(&format!("kubelet may not start: {AT} of ")),
                    "{name}: {err}"
                );
                assert!(
                    err.contains(says) && err.contains("crio refuses it at its start"),
                    "{name}: {err}"
                );
            }
        }
    }
}

#[test]
fn crio_s_own_configuration_files_are_refused() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &["--taint", TAINT]);
    for (i, path) in [
        "/etc/crio/crio.conf.d/99-nvidia.conf",
        "/etc/containers/registries.conf.d/50-gpu.conf",
    ]
    .into_iter()
    .enumerate()
    {
        let pr = tmp.path().join(format!("pr{i}"));
        render_writing(&pr, path, "[crio.runtime]\ndefault_runtime = \"nvidia\"\n");
        let o = planned(&base, &pr);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{path}: {}{err}", stdout(&o));
        assert!(
            err.contains(&format!("kubelet may not start: {path} changes from"))
                && err.contains("crio reads it at its start"),
            "{path}: {err}"
        );
    }
}
