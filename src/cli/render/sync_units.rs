//! The units that run the day-2 sync on a node (`crate::node::sync`), and on
//! OpenShift the node disruption policy that makes a change of labels,
//! taints or rules restart only the sync.
//!
//! The sync is the wrapper binary's `sync` mode (one binary per
//! architecture, picked with `uname -m` as the generator does). It is
//! pulled in by every start of kubelet.service (a `Wants=` drop-in) and
//! ordered after it: kubelet's start job never waits for it, and a slow or failing
//! sync leaves kubelet as it is. A path unit runs it again when the env
//! drop-ins (labels, taints and rules) change.

use serde_json::{Value, json};

use crate::node::contract::{ENV_DROPIN_NAME, GENERATOR_PATH, ROLE_ENV_DROPIN_NAME, WRAPPER_PATH};
use crate::node::kubelet::Profile;

use super::RENDERED_BY;

pub const SYNC_SERVICE: &str = "kubelet-labeler-sync.service";
pub const SYNC_PATH: &str = "kubelet-labeler-sync.path";

/// Where the env drop-in of `unit` lives on a node.
pub fn env_dropin_path(unit: &str) -> String {
    format!("/etc/systemd/system/{unit}.d/{ENV_DROPIN_NAME}")
}

/// Where the built-in role's env drop-in of `unit` lives on a node
/// (`render machineconfig --role`): a custom pool's nodes read both.
pub fn role_env_dropin_path(unit: &str) -> String {
    format!("/etc/systemd/system/{unit}.d/{ROLE_ENV_DROPIN_NAME}")
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
        "# {RENDERED_BY}: bring this Node's labels up to date with what the\n\
         # wrapper derives, as kubelet's own identity (kubelet-labeler sync).\n\
         [Unit]\n\
         Description=kubelet-labeler: sync this Node's labels\n\
         After={unit}\n\
         [Service]\n\
         Type=oneshot\n\
         # 1: drift a node may not fix (taints, others' values); the line says which.\n\
         SuccessExitStatus=1\n\
         # 75: the API server stayed unreachable or busy past the run's wait\n\
         # (5 min): start again a minute later, until the Node is current;\n\
         # never after a usage error (2). (systemd refuses\n\
         # RestartForceExitStatus= in a oneshot service.)\n\
         Restart=on-failure\n\
         RestartPreventExitStatus=2\n\
         RestartSec=1min\n\
         TimeoutStartSec=6min\n\
         MemoryMax=128M\n\
         Nice=10\n\
         ExecStart=/bin/sh -c 'exec {WRAPPER_PATH}.$$(uname -m) {args}'\n"
    )
}

/// The directory of `unit`'s drop-ins in /etc, where both env drop-ins live.
pub fn dropin_dir(unit: &str) -> String {
    format!("/etc/systemd/system/{unit}.d")
}

/// `kubelet-labeler-sync.path`: the sync again when the env drop-ins change.
///
/// It watches their directory, not the files: systemd (252 measured) then
/// sees every way a file in it changes, written in place, replaced by
/// rename (how the MCO's daemon and `render dropins` write), created or
/// removed. A file watch misses a rename whenever another `PathChanged=`
/// of the unit names a file absent in that directory (the role's drop-in,
/// usually): that one's watch of the directory sees the rename first, and
/// systemd re-arms every watch of the unit, dropping the other's pending
/// event (0 of 14 renames ran the sync). The cost: a change of another
/// drop-in of `unit` runs the sync too, which then finds nothing to write
/// (one GET).
pub fn sync_path(unit: &str) -> String {
    format!(
        "# {RENDERED_BY}: the sync again when our env drop-ins change\n\
         # ({ENV_DROPIN_NAME}, {ROLE_ENV_DROPIN_NAME}): their directory is\n\
         # watched, so a file replaced by rename counts too.\n\
         [Unit]\n\
         Description=kubelet-labeler: sync this Node's labels when their configuration changes\n\
         [Path]\n\
         PathChanged={}\n\
         Unit={SYNC_SERVICE}\n",
        dropin_dir(unit)
    )
}

/// The drop-in that makes every start of `unit` pull in the sync (and its
/// path unit): `Wants=` from kubelet, `After=` on the sync's side, so
/// nothing needs enabling and kubelet never waits for it.
pub const WANTS_DROPIN_NAME: &str = "91-kubelet-labeler-sync.conf";

pub fn wants_dropin() -> String {
    format!(
        "# {RENDERED_BY}: run the day-2 label sync after every kubelet start.\n\
         [Unit]\n\
         Wants={SYNC_SERVICE} {SYNC_PATH}\n"
    )
}

/// Every file the sync needs on a node: (node path, contents), mode 0644.
pub fn files(profile: Profile, unit: &str, pool_label: Option<&str>) -> Vec<(String, String)> {
    vec![
        (
            format!("/etc/systemd/system/{SYNC_SERVICE}"),
            sync_service(profile, unit, pool_label),
        ),
        (format!("/etc/systemd/system/{SYNC_PATH}"), sync_path(unit)),
        (
            format!("/etc/systemd/system/{unit}.d/{WANTS_DROPIN_NAME}"),
            wants_dropin(),
        ),
    ]
}

/// The file `render machineconfig --output-dir` writes the policy of pool
/// (or role) `owner` to: one per render, so pools sharing a directory each
/// keep theirs, in [`CLUSTER_WIDE_DIR`]. The policy is the cluster's one
/// `MachineConfiguration`: applied client-side (a plain `oc apply -f` on
/// the pool's directory, the kustomization, `-o -`) it would replace the
/// cluster's lists with ours and drop other teams' entries, so it is kept
/// where none of them reaches it; applied server-side with a field manager
/// per pool ([`apply_command`]), the entries of every pool and those the
/// user applies server-side with a field manager of their own merge by
/// path. Entries applied client-side do not ([`CLIENT_SIDE_ENTRIES`]).
pub fn policy_file(owner: &str) -> String {
    format!("{CLUSTER_WIDE_DIR}/{POLICY_FILE_PREFIX}{owner}.yaml")
}

/// The subdirectory of `--output-dir` for what is cluster-wide: `oc apply
/// -f DIR` reads DIR's own `.yaml`, `.yml` and `.json` files, not a
/// subdirectory's (only with `-R`), and no kustomization of ours lists it.
pub const CLUSTER_WIDE_DIR: &str = "cluster-wide";

/// What every policy file's name starts with (`policy_file`); earlier
/// versions wrote it in the output directory itself.
pub const POLICY_FILE_PREFIX: &str = "machineconfiguration-";

/// What becomes of entries of the cluster's MachineConfiguration applied
/// client-side (review 23 r23b F6, run on a real kube-apiserver with
/// kubectl 1.32): `kubectl apply --server-side` on an object carrying
/// `last-applied-configuration` hands the fields of the client-side
/// apply's field manager to its own, whose apply drops what it does not
/// give; without the annotation they stay until the next client-side
/// apply, which sets each list whole and drops ours.
pub const CLIENT_SIDE_ENTRIES: &str = "entries applied client-side (`oc apply -f`/`-k`, Argo CD's \
     default sync; field manager kubectl-client-side-apply) are taken over by this apply and \
     dropped, and their next client-side apply drops ours; to keep both, apply those entries \
     server-side with a field manager of their own (`oc apply --server-side \
     --field-manager=<team>`, Argo CD's ServerSideApply=true) before this command, and check \
     with `oc get machineconfiguration cluster -o yaml --show-managed-fields` that no \
     kubectl-client-side-apply manager is left";

/// The command that applies `owner`'s policy file at `path`: server-side,
/// with the field manager of that pool.
pub fn apply_command(owner: &str, path: &std::path::Path) -> String {
    format!(
        "oc apply --server-side --field-manager=kubelet-labeler-{owner} -f {}",
        path.display()
    )
}

/// The `MachineConfiguration` (operator.openshift.io/v1, name `cluster`)
/// entries for our files: a new env drop-in (labels, taints, rules)
/// restarts only the sync, after a daemon-reload so kubelet's next start
/// reads it too; a new wrapper needs nothing (it runs at kubelet's next
/// start); the generator, our units and the Wants= drop-in a
/// daemon-reload (the units also a restart of themselves). Its lists are
/// keyed by path (at most 50 entries): server-side apply merges these
/// into a user's own (`oc apply --server-side
/// --field-manager=kubelet-labeler`).
pub fn disruption_policy(arches: &[&str], unit: &str) -> Value {
    let reload_and_restart = |what: &str| {
        json!([
            { "type": "DaemonReload" },
            { "type": "Restart", "restart": { "serviceName": what } }
        ])
    };
    let reload = json!([{ "type": "DaemonReload" }]);
    let mut files: Vec<Value> = arches
        .iter()
        .map(|a| json!({ "path": format!("{WRAPPER_PATH}.{a}"), "actions": [{ "type": "None" }] }))
        .collect();
    files.push(json!({ "path": GENERATOR_PATH, "actions": reload }));
    for path in [env_dropin_path(unit), role_env_dropin_path(unit)] {
        files.push(json!({ "path": path, "actions": reload_and_restart(SYNC_SERVICE) }));
    }
    files.push(json!({
        "path": format!("/etc/systemd/system/{SYNC_SERVICE}"),
        "actions": reload_and_restart(SYNC_SERVICE)
    }));
    files.push(json!({
        "path": format!("/etc/systemd/system/{SYNC_PATH}"),
        "actions": reload_and_restart(SYNC_PATH)
    }));
    files.push(json!({
        "path": format!("/etc/systemd/system/{unit}.d/{WANTS_DROPIN_NAME}"),
        "actions": reload
    }));
    json!({
        "apiVersion": "operator.openshift.io/v1",
        "kind": "MachineConfiguration",
        "metadata": { "name": "cluster" },
        "spec": { "nodeDisruptionPolicy": { "files": files } }
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
        let parsed = crate::node::unit::syntax::parse(svc.as_bytes(), SYNC_SERVICE);
        let get = |k: &str| {
            parsed
                .assignments
                .iter()
                .find(|a| a.key == k)
                .map(|a| a.value.clone())
        };
        assert_eq!(get("After").as_deref(), Some("kubelet.service"));
        assert_eq!(get("Type").as_deref(), Some("oneshot"));
        // A run that gave up on an unreachable or busy API server starts again.
        use crate::node::sync::run::{EXIT_DRIFT, EXIT_USAGE};
        assert_eq!(get("Restart").as_deref(), Some("on-failure"));
        assert_eq!(
            get("RestartPreventExitStatus"),
            Some(EXIT_USAGE.to_string())
        );
        assert_eq!(get("SuccessExitStatus"), Some(EXIT_DRIFT.to_string()));
        // `$$` is systemd's escape for a literal `$`: the shell sees $(uname -m).
        let exec = get("ExecStart").unwrap();
        assert!(exec.contains("kubelet-labeler-wrapper.$$(uname -m) sync --unit kubelet.service --profile openshift --pool-label node.kubernetes.io/worker-gpu"), "{exec}");
        // Nothing orders kubelet after the sync, nothing makes it wait.
        for k in ["Before", "RequiredBy", "Requires", "BindsTo"] {
            assert!(get(k).is_none(), "{k}");
        }
        let path = sync_path("kubelet.service");
        // One watch, of the directory both env drop-ins are in.
        let watched: Vec<&str> = path
            .lines()
            .filter_map(|l| l.strip_prefix("PathChanged="))
            .collect();
        assert_eq!(watched, ["/etc/systemd/system/kubelet.service.d"]);
        for p in [
            env_dropin_path("kubelet.service"),
            role_env_dropin_path("kubelet.service"),
        ] {
            assert_eq!(
                std::path::Path::new(&p).parent(),
                Some(std::path::Path::new(watched[0]))
            );
        }
        assert!(
            wants_dropin().contains("Wants=kubelet-labeler-sync.service kubelet-labeler-sync.path")
        );
    }

    #[test]
    fn the_policy_is_keyed_entries_only() {
        let p = disruption_policy(&["x86_64", "aarch64"], "kubelet.service");
        let files = p["spec"]["nodeDisruptionPolicy"]["files"]
            .as_array()
            .unwrap();
        assert_eq!(files.len(), 8);
        // Every file the sync ships has its entry.
        for (path, _) in super::files(Profile::OpenShift, "kubelet.service", None) {
            assert!(files.iter().any(|f| f["path"] == path.as_str()), "{path}");
        }
        let env = files
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(ENV_DROPIN_NAME))
            .unwrap();
        assert_eq!(env["actions"][1]["restart"]["serviceName"], SYNC_SERVICE);
        // The role's drop-in (`--role worker` on a custom pool's node) too.
        let role = files
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(ROLE_ENV_DROPIN_NAME))
            .unwrap();
        assert_eq!(role["actions"], env["actions"]);
        // No unit entry: a user's own kubelet.service changes keep their
        // own policy (or the MCO's default).
        assert!(p["spec"]["nodeDisruptionPolicy"].get("units").is_none());
    }
}
