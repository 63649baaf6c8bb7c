//! The units that run the day-2 sync on a node (`crate::sync`), and on
//! OpenShift the node disruption policy that makes a change of labels,
//! taints or rules restart only the sync.
//!
//! The sync is the wrapper binary's `sync` mode (one binary per
//! architecture, picked with `uname -m` as the generator does). It is
//! pulled in by every start of kubelet.service (`WantedBy=`) and ordered
//! after it: kubelet's start job never waits for it, and a slow or failing
//! sync leaves kubelet as it is. A path unit runs it again when the env
//! drop-in (labels, taints and rules) changes.

use serde_json::{Value, json};

use crate::contract::{ENV_DROPIN_NAME, GENERATOR_PATH, WRAPPER_PATH};
use crate::kubelet::Profile;

pub const SYNC_SERVICE: &str = "kubelet-labeler-sync.service";
pub const SYNC_PATH: &str = "kubelet-labeler-sync.path";

/// Where the env drop-in of `unit` lives on a node.
pub fn env_dropin_path(unit: &str) -> String {
    format!("/etc/systemd/system/{unit}.d/{ENV_DROPIN_NAME}")
}

/// `kubelet-labeler-sync.service`; `pool_label` is the key the node's
/// pool selects it by (held back unless the sync is told otherwise).
pub fn sync_service(profile: Profile, unit: &str, pool_label: Option<&str>) -> String {
    let mut args = format!("sync --unit {unit}");
    if profile == Profile::OpenShift {
        args += " --profile openshift";
    }
    if let Some(k) = pool_label {
        args += &format!(" --pool-label {k}");
    }
    format!(
        "# kubelet-labeler: bring this Node's labels up to date with what the\n\
         # wrapper derives, as kubelet's own identity (kubelet-labeler sync).\n\
         [Unit]\n\
         Description=kubelet-labeler: sync this Node's labels\n\
         After={unit}\n\
         [Service]\n\
         Type=oneshot\n\
         # 1: drift a node may not fix (taints, others' values); the line says which.\n\
         SuccessExitStatus=1\n\
         TimeoutStartSec=6min\n\
         Nice=10\n\
         ExecStart=/bin/sh -c 'exec {WRAPPER_PATH}.$$(uname -m) {args}'\n\
         [Install]\n\
         WantedBy={unit}\n"
    )
}

/// `kubelet-labeler-sync.path`: the sync again when the env drop-in changes.
pub fn sync_path(unit: &str) -> String {
    format!(
        "[Unit]\n\
         Description=kubelet-labeler: sync this Node's labels when their configuration changes\n\
         [Path]\n\
         PathChanged={}\n\
         Unit={SYNC_SERVICE}\n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        env_dropin_path(unit)
    )
}

/// The `MachineConfiguration` (operator.openshift.io/v1, name `cluster`)
/// entries for our files and units: a new env drop-in restarts only the
/// sync (after a daemon-reload, so kubelet's next start reads it too); a
/// new wrapper needs nothing (it runs at kubelet's next start); the
/// generator and our units a daemon-reload. Server-side apply merges these
/// entries into a user's own policies by path and name (`oc apply
/// --server-side --field-manager=kubelet-labeler`); a client-side apply
/// would replace the lists.
pub fn disruption_policy(arches: &[&str]) -> Value {
    let restart_sync = json!([
        { "type": "DaemonReload" },
        { "type": "Restart", "restart": { "serviceName": SYNC_SERVICE } }
    ]);
    let mut files: Vec<Value> = arches
        .iter()
        .map(|a| json!({ "path": format!("{WRAPPER_PATH}.{a}"), "actions": [{ "type": "None" }] }))
        .collect();
    files.push(json!({ "path": GENERATOR_PATH, "actions": [{ "type": "DaemonReload" }] }));
    files.push(json!({ "path": env_dropin_path("kubelet.service"), "actions": restart_sync }));
    let units = [SYNC_SERVICE, SYNC_PATH]
        .iter()
        .map(|u| json!({ "name": u, "actions": [{ "type": "DaemonReload" }] }))
        .collect::<Vec<_>>();
    json!({
        "apiVersion": "operator.openshift.io/v1",
        "kind": "MachineConfiguration",
        "metadata": { "name": "cluster" },
        "spec": { "nodeDisruptionPolicy": { "files": files, "units": units } }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_parse_as_systemd_reads_them() {
        let svc = sync_service(
            Profile::OpenShift,
            "kubelet.service",
            Some("node.kubernetes.io/worker-gpu"),
        );
        let parsed = crate::unit::syntax::parse(svc.as_bytes(), SYNC_SERVICE);
        let get = |k: &str| {
            parsed
                .assignments
                .iter()
                .find(|a| a.key == k)
                .map(|a| a.value.clone())
        };
        assert_eq!(get("After").as_deref(), Some("kubelet.service"));
        assert_eq!(get("WantedBy").as_deref(), Some("kubelet.service"));
        assert_eq!(get("Type").as_deref(), Some("oneshot"));
        // `$$` is systemd's escape for a literal `$`: the shell sees $(uname -m).
        let exec = get("ExecStart").unwrap();
        assert!(exec.contains("kubelet-labeler-wrapper.$$(uname -m) sync --unit kubelet.service --profile openshift --pool-label node.kubernetes.io/worker-gpu"), "{exec}");
        // Nothing orders kubelet after the sync, nothing makes it wait.
        for k in ["Before", "RequiredBy", "Requires", "BindsTo"] {
            assert!(get(k).is_none(), "{k}");
        }
        let path = sync_path("kubelet.service");
        assert!(path.contains(
            "PathChanged=/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf"
        ));
    }

    #[test]
    fn the_policy_is_keyed_entries_only() {
        let p = disruption_policy(&["x86_64", "aarch64"]);
        let files = p["spec"]["nodeDisruptionPolicy"]["files"].as_array().unwrap();
        assert_eq!(files.len(), 4);
        let env = files
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(ENV_DROPIN_NAME))
            .unwrap();
        assert_eq!(env["actions"][1]["restart"]["serviceName"], SYNC_SERVICE);
        // Never kubelet.service: a user's kubelet changes keep their own policy.
        assert!(!p.to_string().contains("\"name\":\"kubelet.service\""));
    }
}
