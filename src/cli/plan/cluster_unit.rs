//! The cluster's kubelet.service, which no GitOps render holds (the MCO
//! renders it from its templates), stood in for when plan lays a pool out.
//!
//! What matters is what the unit and the MCO's drop-ins of it read: every
//! `EnvironmentFile=` of every MCO kubelet.service template and drop-in
//! template (`templates/*/01-*-kubelet/*/units/kubelet.service.yaml`,
//! `templates/common/*/units/kubelet*.yaml`), in the order systemd reads
//! them (the unit's, then the drop-ins' by name). systemd gives a variable
//! of an `EnvironmentFile=` precedence over any `Environment=`, so a
//! pull request's file at one of these paths setting one of our variables
//! makes the node register fenced with our drop-ins' values
//! (`wrapper::own_env`); the stand-in makes plan see it as the node does.
//!
//! Every file is read when present (`-`): the node's own ones (its
//! os-release, its node sizing) are not in a render and set nothing of
//! ours; ones the cluster reads on some platforms or clusters only (AWS's
//! and OpenStack's node.env, a proxy's env, Alibaba's under /run) are
//! refused where a render writes them (`merge_inputs`: plan cannot tell
//! whether the cluster it plans for reads them), so what the stand-in
//! reads of a render is what every node reads; a test proves it against
//! the templates of every release in ../shared/fixtures.

use std::borrow::Borrow;

use serde_json::{Value, json};

use crate::cli::render::merge_order::{ROLE_LABEL, mc_name, rendered_pool, role};

fn role_of(mc: &Value) -> Option<&str> {
    role(mc).ok().flatten()
}

/// The unit's own `EnvironmentFile=` lines, in the templates' order, and an
/// `ExecStart=` for our drop-ins' environment to start.
pub const UNIT: &str = "[Service]\n\
EnvironmentFile=-/etc/os-release\n\
EnvironmentFile=-/etc/kubernetes/kubelet-workaround\n\
EnvironmentFile=-/etc/kubernetes/kubelet-env\n\
EnvironmentFile=-/etc/node-sizing.env\n\
EnvironmentFile=-/run/kubelet-alibaba.env\n\
ExecStart=/usr/bin/kubelet\n";

/// The MCO's drop-ins of kubelet.service that read a file, by their names
/// (a pull request's file of the same path replaces one, as the MCO's
/// merge does).
pub const DROPINS: [(&str, &str); 3] = [
    (
        "01-kubens.conf",
        "[Service]\nEnvironmentFile=-/run/kubens/env\n",
    ),
    (
        "10-mco-default-env.conf",
        "[Service]\nEnvironmentFile=-/etc/mco/proxy.env\n",
    ),
    (
        "20-node-env.conf",
        "[Service]\nEnvironmentFile=-/etc/kubernetes/node.env\n",
    ),
];

/// Every file the stand-in reads, in its order (the unit's, then the
/// drop-ins').
pub fn env_files() -> Vec<&'static str> {
    UNIT.lines()
        .chain(DROPINS.iter().flat_map(|(_, text)| text.lines()))
        .filter_map(|l| l.strip_prefix("EnvironmentFile=-"))
        .collect()
}

/// The stand-in as the MachineConfig of the MCO's templates that writes
/// kubelet.service (`01-<role>-kubelet`), so the render's MachineConfigs
/// change it as they change the MCO's (a drop-in of the same name replaces
/// one, a kubelet.service of the render's replaces the unit), in the MCO's
/// order. A drop-in the render writes as a file (`written`) is the
/// render's alone.
fn machineconfig(written: &[&str], role: &str) -> Value {
    let dropins: Vec<Value> = DROPINS
        .iter()
        .filter(|(name, _)| !written.contains(&format!("{UNIT_PATH}.d/{name}").as_str()))
        .map(|(name, text)| json!({ "name": name, "contents": text }))
        .collect();
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {
            "name": format!("01-{role}-kubelet"),
            "labels": { ROLE_LABEL: role },
        },
        "spec": { "config": {
            "ignition": { "version": "3.4.0" },
            "systemd": { "units": [
                { "name": "kubelet.service", "contents": UNIT, "dropins": dropins }
            ] }
        } }
    })
}

/// `configs` with the stand-in, unless one of them writes kubelet.service
/// as a file, or holds the MCO's own unit already (its template
/// MachineConfig, or a rendered config, which merged it).
pub fn with_stand_in(mut configs: Vec<Value>) -> Vec<Value> {
    if let Some(s) = stand_in(&configs) {
        configs.insert(0, s);
    }
    configs
}

/// The stand-in `configs` take (see [`with_stand_in`]), if any.
pub fn stand_in<V: Borrow<Value>>(configs: &[V]) -> Option<Value> {
    let configs = || configs.iter().map(Borrow::borrow);
    // A master or arbiter pool takes its own role's configs only; any
    // other pool, worker's.
    let role = configs()
        .filter_map(|mc| role(mc).ok().flatten())
        .find(|r| matches!(*r, "master" | "arbiter"))
        .unwrap_or("worker")
        .to_string();
    let template = format!("01-{role}-kubelet");
    let has_unit = configs().any(|mc| {
        mc_name(mc) == template || (rendered_pool(mc).is_some() && role_of(mc).is_none())
    });
    if has_unit {
        return None;
    }
    let written: Vec<&str> = configs()
        .flat_map(|mc| {
            mc.pointer("/spec/config/storage/files")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|f| f.get("path").and_then(Value::as_str))
        })
        .collect();
    (!written.contains(&UNIT_PATH)).then(|| machineconfig(&written, &role))
}

const UNIT_PATH: &str = "/etc/systemd/system/kubelet.service";

#[cfg(test)]
mod tests {
    use super::*;

    /// A drop-in of the MCO's name the render writes as a file is the
    /// render's (no unit drop-in at a file's path); a unit file of the
    /// render's leaves no stand-in.
    #[test]
    fn the_render_s_files_replace_the_stand_in_s() {
        let file =
            |path: &str| json!({"spec": {"config": {"storage": {"files": [{"path": path}]}}}});
        let configs = with_stand_in(vec![file(&format!("{UNIT_PATH}.d/20-node-env.conf"))]);
        let dropins = configs[0]
            .pointer("/spec/config/systemd/units/0/dropins")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect::<Vec<_>>();
        assert_eq!(dropins, ["01-kubens.conf", "10-mco-default-env.conf"]);
        assert_eq!(with_stand_in(vec![file(UNIT_PATH)]).len(), 1);
    }

    #[test]
    fn the_stand_in_reads_the_files_in_systemd_s_order() {
        assert_eq!(
            env_files(),
            [
                "/etc/os-release",
                "/etc/kubernetes/kubelet-workaround",
                "/etc/kubernetes/kubelet-env",
                "/etc/node-sizing.env",
                "/run/kubelet-alibaba.env",
                "/run/kubens/env",
                "/etc/mco/proxy.env",
                "/etc/kubernetes/node.env",
            ]
        );
    }
}
