//! `iso fleet --cluster-pools FILE`: the cluster's MachineConfigPools (`oc
//! get machineconfigpools -o yaml`, or `-o json`), each recorded in the
//! installed-pool record by its name, kind and nodeSelector, never as an
//! install target (`fleet::installed_record_with`). The wrapper's
//! `pool-changed` fence and the sync's pool guard then see a label change
//! that selects a pool left off the ISO, too.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::pools::requirements;
use crate::node::fleet::{CLUSTER_POOL_CONFIG, Pool, PoolKind};

/// The pools of `path`, in the order given. A pool without a nodeSelector,
/// or with an empty one, matches no node (the MCO's rule): left out.
pub fn read(path: &Path) -> Result<Vec<Pool>> {
    use crate::cli::render::input::{FLEET_CLUSTER_POOLS, read_text};
    let (text, label) = read_text(path, FLEET_CLUSTER_POOLS).context("--cluster-pools")?;
    let docs: Vec<Value> = match serde_json::from_str::<Value>(&text) {
        Ok(v) => vec![v],
        Err(_) => crate::cli::yaml::kube_yaml_docs(&text)
            .with_context(|| format!("reading {label} as YAML or JSON (--cluster-pools)"))?,
    };
    let objects =
        crate::cli::render::applied::applied_objects(&docs, &label).context("--cluster-pools")?;
    let mut out: Vec<Pool> = Vec::new();
    for doc in objects {
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != "MachineConfigPool" {
            bail!(
                "--cluster-pools {label}: a {kind:?} object; give the cluster's pools alone \
                 (oc get machineconfigpools -o yaml)"
            );
        }
        let Some(name) = doc.pointer("/metadata/name").and_then(Value::as_str) else {
            bail!("--cluster-pools {label}: a MachineConfigPool without metadata.name");
        };
        super::check_pool_name(name).with_context(|| format!("--cluster-pools {label}"))?;
        if out.iter().any(|p| p.name == name) {
            bail!("--cluster-pools {label}: MachineConfigPool {name} twice; give each pool once");
        }
        let sel = doc.pointer("/spec/nodeSelector").unwrap_or(&Value::Null);
        let empty = sel.as_object().is_none_or(|o| {
            ["matchLabels", "matchExpressions"].iter().all(|k| {
                o.get(*k).is_none_or(|v| {
                    v.is_null()
                        || v.as_object().is_some_and(|m| m.is_empty())
                        || v.as_array().is_some_and(|a| a.is_empty())
                })
            })
        });
        if empty {
            continue;
        }
        let selector = requirements(sel).with_context(|| {
            format!("--cluster-pools {label}: MachineConfigPool {name}'s nodeSelector")
        })?;
        out.push(Pool {
            name: name.to_string(),
            kind: if name == "worker" {
                PoolKind::Worker
            } else {
                PoolKind::Custom
            },
            config: CLUSTER_POOL_CONFIG.to_string(),
            selector,
            static_labels: Vec::new(),
            device: None,
        });
    }
    if out.is_empty() {
        bail!(
            "--cluster-pools {label}: no MachineConfigPool with a nodeSelector; give the \
             cluster's pools (oc get machineconfigpools -o yaml)"
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::fleet::Requirement;

    /// An `oc get mcp -o yaml` List: each pool by name, kind and selector;
    /// one without a selector left out; another kind refused.
    #[test]
    fn an_oc_export_becomes_judged_pools() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mcp.yaml");
        std::fs::write(
            &p,
            "apiVersion: v1\nkind: List\nitems:\n\
             - apiVersion: machineconfiguration.openshift.io/v1\n  kind: MachineConfigPool\n  \
             metadata: {name: worker}\n  spec:\n    machineConfigSelector:\n      matchExpressions:\n      - {key: machineconfiguration.openshift.io/role, operator: In, values: [worker, worker]}\n    nodeSelector:\n      matchLabels:\n        \
             node-role.kubernetes.io/worker: \"\"\n\
             - apiVersion: machineconfiguration.openshift.io/v1\n  kind: MachineConfigPool\n  \
             metadata: {name: worker-big}\n  spec:\n    machineConfigSelector:\n      matchExpressions:\n      - {key: machineconfiguration.openshift.io/role, operator: In, values: [worker, worker-big]}\n    nodeSelector:\n      matchLabels:\n        \
             example.com/big: \"true\"\n\
             - apiVersion: machineconfiguration.openshift.io/v1\n  kind: MachineConfigPool\n  \
             metadata: {name: none}\n  spec:\n    machineConfigSelector:\n      matchExpressions:\n      - {key: machineconfiguration.openshift.io/role, operator: In, values: [worker, none]}\n",
        )
        .unwrap();
        let got = read(&p).unwrap();
        let names: Vec<(&str, PoolKind)> = got.iter().map(|p| (p.name.as_str(), p.kind)).collect();
        assert_eq!(
            names,
            [
                ("worker", PoolKind::Worker),
                ("worker-big", PoolKind::Custom)
            ]
        );
        assert_eq!(
            got[1].selector,
            [Requirement::In(
                "example.com/big".into(),
                vec!["true".into()]
            )]
        );
        assert_eq!(got[1].config, CLUSTER_POOL_CONFIG);
        std::fs::write(&p, "apiVersion: v1\nkind: Node\nmetadata: {name: node1}\n").unwrap();
        let e = format!("{:#}", read(&p).unwrap_err());
        assert!(e.contains("oc get machineconfigpools"), "{e}");
    }
}
