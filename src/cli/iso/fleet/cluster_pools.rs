//! `iso fleet --cluster-pools FILE`: the cluster's MachineConfigPools (`oc
//! get machineconfigpools -o yaml`, or `-o json`), each recorded in the
//! installed-pool record by its name, kind and nodeSelector, never as an
//! install target (`fleet::installed_record_with`). The wrapper's
//! `pool-changed` fence and the sync's pool guard then see a label change
//! that selects a pool left off the ISO, too.
//!
//! Pools recorded to judge by are not pools installed into: `master` and
//! `arbiter` are recorded (the node tells `master` by its name and gives it
//! the MCO's precedence, `fleet::choose`), and so is any name the API
//! server accepts; a pool selecting on `kubernetes.io/hostname` (which
//! kubelet sets itself, and the node's judges never see) is left out with a
//! warning, never the whole file refused.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::pools::{HOSTNAME_LABEL, selector_requirements, selects_on_hostname};
use crate::cli::output::say;
use crate::node::fleet::{CLUSTER_POOL_CONFIG, Pool, PoolKind, Requirement};

/// The pools of `path`, in the order given. A pool without a nodeSelector,
/// or with an empty one, matches no node (the MCO's rule): left out. A
/// hostname term that only keeps hosts out is taken as met; a pool that
/// takes hosts by name: left out, one warning naming them.
pub fn read(path: &Path) -> Result<Vec<Pool>> {
    let (pools, skipped) = read_pools(path)?;
    if !skipped.is_empty() {
        say!(
            "warning: --cluster-pools: {} select{} nodes by their names ({HOSTNAME_LABEL} In \
             or DoesNotExist), which kubelet sets itself and the installed nodes do not judge \
             by: left out of the installed-pool record, so a node that moves into {} is not \
             fenced",
            skipped.join(", "),
            if skipped.len() == 1 { "s" } else { "" },
            if skipped.len() == 1 { "it" } else { "them" }
        );
    }
    Ok(pools)
}

/// [`read`]'s pools, and the names of those left out for their hostname
/// selector.
fn read_pools(path: &Path) -> Result<(Vec<Pool>, Vec<String>)> {
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
    let mut skipped: Vec<String> = Vec::new();
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
        check_recorded_name(name).with_context(|| format!("--cluster-pools {label}"))?;
        if out.iter().any(|p| p.name == name) || skipped.iter().any(|s| s == name) {
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
        let selector = selector_requirements(sel).with_context(|| {
            format!("--cluster-pools {label}: MachineConfigPool {name}'s nodeSelector")
        })?;
        // Review 21 r21c F4: a hostname term that only keeps hosts out
        // (`NotIn`, or `Exists`, which every node meets) is taken as met:
        // the pool is judged by its other terms, toward the fence. One
        // that names the hosts it takes (`In`, `DoesNotExist`, which no
        // node meets) leaves the pool to those hosts: left out.
        let mut selector: Vec<Requirement> = selector
            .into_iter()
            .filter(|r| {
                !matches!(r, Requirement::NotIn(k, _) | Requirement::Exists(k) if k == HOSTNAME_LABEL)
            })
            .collect();
        if selector.is_empty() {
            // Review 23 r23c F1: such terms alone take every node but the
            // hosts they name (the MCO: the selector as given is not
            // empty), spelt as a term every node meets.
            selector.push(Requirement::Exists("kubernetes.io/os".into()));
        }
        if selects_on_hostname(&selector) {
            skipped.push(name.to_string());
            continue;
        }
        out.push(Pool {
            name: name.to_string(),
            // As the MCO's ListPools tells them; `master` by its name
            // (`fleet::MASTER_POOL`), `arbiter` is a custom pool to it.
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
            "--cluster-pools {label}: no MachineConfigPool with a nodeSelector the installed \
             nodes can judge by; give the cluster's pools (oc get machineconfigpools -o yaml)"
        );
    }
    Ok((out, skipped))
}

/// A pool recorded to judge by: any name the API server accepts for a
/// MachineConfigPool (a DNS subdomain), which is one word of the record.
/// Unlike `--pool`'s, `master` and `arbiter` are fine: never installed
/// into, they are where a node must not move unfenced.
fn check_recorded_name(name: &str) -> Result<()> {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.bytes().all(|b| alnum(b) || b == b'-' || b == b'.')
        && name.bytes().next().is_some_and(alnum)
        && name.bytes().last().is_some_and(alnum);
    if !ok {
        bail!(
            "MachineConfigPool {name:?}: not a name the API server accepts (lower case \
             letters, digits, '-', '.'); give the cluster's pools as oc prints them"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `oc get machineconfigpools -o yaml` prints on a cluster (every
    /// field, status too): `master` and `arbiter` recorded, as is a custom
    /// pool; a pool selecting one host by name left out, named, and the
    /// rest of the file read (r19c F6: `master` refused the whole file).
    #[test]
    fn a_clusters_own_export_is_read_whole() {
        let p = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/cluster-pools/oc-get-mcp.yaml"
        ));
        let (got, skipped) = read_pools(p).unwrap();
        let names: Vec<(&str, PoolKind)> = got.iter().map(|p| (p.name.as_str(), p.kind)).collect();
        assert_eq!(
            names,
            [
                ("arbiter", PoolKind::Custom),
                ("master", PoolKind::Custom),
                ("worker", PoolKind::Worker),
                ("worker-big", PoolKind::Custom)
            ]
        );
        assert_eq!(skipped, ["infra-node7"]);
        let role = |r: &str| {
            vec![Requirement::In(
                format!("node-role.kubernetes.io/{r}"),
                vec![String::new()],
            )]
        };
        for (pool, r) in got
            .iter()
            .zip(["arbiter", "master", "worker", "worker-big"])
        {
            assert_eq!(pool.selector, role(r), "{}", pool.name);
            assert_eq!(pool.config, CLUSTER_POOL_CONFIG);
        }
        // Names the API server refuses are refused, naming them.
        for bad in ["", "Master", "-a", "a b", "a/b"] {
            assert!(check_recorded_name(bad).is_err(), "{bad:?}");
        }
    }

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

    /// Review 21 r21c F4: a pool keeping hosts out by name (`NotIn`) is
    /// judged by its other terms (it was left out whole: a node labelled
    /// into it registered unfenced); one taking hosts by name (`In`) is
    /// left out. Review 23 r23c F1: with such terms alone it takes every
    /// node but the hosts named (it was left out: every machine the ISO
    /// installed into `worker` moved into it unfenced), so every node meets
    /// it and a worker installed is fenced, as the MCO moves it.
    #[test]
    fn a_hostname_term_that_keeps_hosts_out_is_taken_as_met() {
        use crate::node::fleet::{Pool, base_labels, installed_record_with, pool_change};
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mcp.yaml");
        let pool = |name: &str, exprs: &str| {
            format!(
                "- apiVersion: machineconfiguration.openshift.io/v1\n  kind: MachineConfigPool\n  \
                 metadata: {{name: {name}}}\n  spec:\n    machineConfigSelector:\n      \
                 matchExpressions:\n      - {{key: machineconfiguration.openshift.io/role, \
                 operator: In, values: [worker, {name}]}}\n    nodeSelector:\n      \
                 matchExpressions: [{exprs}]\n"
            )
        };
        let host =
            |op: &str| format!("{{key: kubernetes.io/hostname, operator: {op}, values: [old-1]}}");
        let any_host = "{key: kubernetes.io/hostname, operator: Exists}";
        let infra = "{key: example.com/infra, operator: Exists}";
        let text = format!(
            "apiVersion: v1\nkind: List\nitems:\n{}{}{}{}{}",
            pool("infra", &format!("{infra}, {}", host("NotIn"))),
            pool("named", &format!("{infra}, {}", host("In"))),
            pool("only-out", &host("NotIn")),
            pool("any-host", &format!("{infra}, {any_host}")),
            pool("only-any-host", any_host),
        );
        std::fs::write(&p, text).unwrap();
        let (got, skipped) = read_pools(&p).unwrap();
        let named: Vec<(&str, &[Requirement])> = got
            .iter()
            .map(|p| (p.name.as_str(), p.selector.as_slice()))
            .collect();
        let infra = [Requirement::Exists("example.com/infra".into())];
        let every = [Requirement::Exists("kubernetes.io/os".into())];
        assert_eq!(
            named,
            [
                ("infra", &infra[..]),
                ("only-out", &every[..]),
                ("any-host", &infra[..]),
                ("only-any-host", &every[..]),
            ]
        );
        assert_eq!(skipped, ["named"]);
        // A worker installed, with the labels every worker registers with.
        let worker = Pool {
            name: "worker".into(),
            kind: PoolKind::Worker,
            config: "worker.ign".into(),
            selector: vec![Requirement::Exists("node-role.kubernetes.io/worker".into())],
            static_labels: Vec::new(),
            device: None,
        };
        let record = installed_record_with(&worker, &[], &got[1..2]);
        let why = pool_change(&record, &base_labels()).unwrap_or_default();
        assert!(why.contains("select pool only-out"), "{why}");
    }
}
