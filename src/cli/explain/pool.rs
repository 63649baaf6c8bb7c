//! `explain --machineconfig DIR --pool NAME`: one pool's MachineConfigs
//! out of inputs several pools share (a GitOps directory), chosen as the
//! MCO chooses them: a MachineConfig belongs to a pool when the pool's
//! `machineConfigSelector` matches its labels (the role label,
//! `machineconfiguration.openshift.io/role`). A custom pool's selector
//! takes `worker`'s role too, so its nodes get worker's MachineConfigs
//! with its own.

use std::collections::BTreeSet;

use anyhow::{Result, bail};
use serde_json::Value;

use crate::cli::plan::kube::Selector;
use crate::cli::render::layout::{ROLE_LABEL, rendered_pool, role};

/// The MachineConfigPool objects among YAML documents (and `kind: List`
/// items), as `--machineconfig` files may hold them beside the
/// MachineConfigs (`machineconfigpool-<pool>.yaml` in a render's
/// directory). Unreadable text holds none (reading it as MachineConfigs
/// says why).
pub fn pools_from_yaml(text: &str) -> Vec<Value> {
    fn collect(doc: Value, out: &mut Vec<Value>) {
        match doc.get("kind").and_then(Value::as_str) {
            Some("MachineConfigPool") => out.push(doc),
            Some(k) if k.ends_with("List") => {
                if let Some(Value::Array(items)) = doc.get("items") {
                    for item in items {
                        collect(item.clone(), out);
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for doc in crate::cli::yaml::kube_yaml_docs(text).unwrap_or_default() {
        collect(doc, &mut out);
    }
    out
}

fn pool_name(pool: &Value) -> &str {
    pool.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The pools the inputs name: the MachineConfigs' roles, the pools their
/// rendered configs are for, and the MachineConfigPools given; sorted.
pub fn pools_found(configs: &[Value], pools: &[Value]) -> Vec<String> {
    let mut found = BTreeSet::new();
    for mc in configs {
        if let Ok(Some(r)) = role(mc) {
            found.insert(r.to_string());
        }
        if let Some(p) = rendered_pool(mc) {
            found.insert(p.to_string());
        }
    }
    found.extend(pools.iter().map(pool_name).map(str::to_string));
    found.remove("");
    found.into_iter().collect()
}

/// The `machineConfigSelector` of pool `name`: its MachineConfigPool's when
/// one is given; else the built-in pool's (its own role), or a custom
/// pool's as `render machineconfig` and the MCO's docs write it (roles
/// `worker` and `name`). With where it came from, for messages.
fn selector_of(pools: &[Value], name: &str) -> Result<(Selector, String)> {
    let given: Vec<&Value> = pools.iter().filter(|p| pool_name(p) == name).collect();
    if let Some(pool) = given.last() {
        let selector = Selector::from_label_selector(pool.pointer("/spec/machineConfigSelector"))
            .filter(|s| !s.is_empty());
        let Some(selector) = selector else {
            bail!(
                "--pool {name}: its MachineConfigPool has no spec.machineConfigSelector, so the \
                 MCO renders no config for it"
            );
        };
        if let Some(e) = &selector.error {
            bail!("--pool {name}: its MachineConfigPool's spec.machineConfigSelector: {e}");
        }
        return Ok((
            selector,
            format!("MachineConfigPool {name}'s machineConfigSelector"),
        ));
    }
    let roles: Vec<String> = match name {
        "worker" | "master" | "arbiter" => vec![name.to_string()],
        _ => vec!["worker".to_string(), name.to_string()],
    };
    let what = format!("role {}", roles.join(" or "));
    let selector = Selector {
        expressions: vec![(ROLE_LABEL.to_string(), "In".to_string(), roles)],
        ..Default::default()
    };
    Ok((selector, what))
}

/// A MachineConfig's labels, as the selector matches them.
fn labels(mc: &Value) -> Vec<(String, String)> {
    mc.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect()
}

/// The MachineConfigs of pool `name` among `configs`, and a base given as
/// a file of its own (no role, no rendered config). A rendered config (no labels: what a pool already
/// merged) counts as its pool's role, so `rendered-worker-…` stands for
/// worker's MachineConfigs, which a custom pool takes too.
pub fn choose(configs: Vec<Value>, pools: &[Value], name: &str) -> Result<Vec<Value>> {
    let found = pools_found(&configs, pools);
    if !found.iter().any(|f| f == name) {
        bail!(
            "--pool {name}: no MachineConfig, rendered config or MachineConfigPool of pool {name} \
             among the inputs (pools found: {})",
            found.join(", ")
        );
    }
    let (selector, what) = selector_of(pools, name)?;
    let mut chosen = Vec::new();
    for mc in configs {
        // A config without a role that is no rendered one is a base given
        // as a file of its own ([`check_selected`] refuses a directory's).
        if effective_role(&mc)?.is_none() || selector.matches(&selected_labels(&mc)?) {
            chosen.push(mc);
        }
    }
    if chosen.is_empty() {
        bail!(
            "--pool {name}: no MachineConfig of the inputs is selected by {what} (pools found: {})",
            found.join(", ")
        );
    }
    Ok(chosen)
}

/// Every MachineConfig and MachineConfigPool read (of every `--machineconfig`
/// given) once by name, whatever pool or role it names (review 23 r23b F2):
/// the cluster holds one object per kind and name, and `oc apply -R` or
/// Argo CD keep the last one applied, so a copy for another role replaces
/// the pool's own, which a pool's layout alone never compares.
pub fn check_given_once(configs: &[Value], pools: &[Value]) -> Result<()> {
    for (kind, objects) in [("MachineConfig", configs), ("MachineConfigPool", pools)] {
        let mut seen = std::collections::BTreeSet::new();
        for o in objects {
            let name = o.pointer("/metadata/name").and_then(Value::as_str);
            if !seen.insert(name) {
                bail!(
                    "--machineconfig: {kind} {:?} is given twice: the cluster holds one object \
                     per kind and name (`oc apply -R` and Argo CD keep the last one applied, \
                     whole, whatever pool or role it names; kustomize refuses the build), \
                     while explain would read both; give it once",
                    name.unwrap_or_default()
                );
            }
        }
    }
    Ok(())
}

/// Without `--pool`: MachineConfigs of more than one pool that the MCO
/// would not give one node are refused, naming the pools found and the
/// flag that picks one. A custom pool's with worker's is one node's (the
/// custom pool's), as before.
pub fn check_one_pool(configs: &[Value], pools: &[Value]) -> Result<()> {
    if let Err(e) = crate::cli::render::layout::merge_order(configs) {
        let found = pools_found(configs, pools);
        if found.len() > 1 {
            bail!(
                "--machineconfig: MachineConfigs of several pools ({}); pick one with --pool NAME \
                 (a custom pool takes worker's MachineConfigs too, as the MCO gives them): {e:#}",
                found.join(", ")
            );
        }
        return Err(e);
    }
    Ok(())
}

/// The role a MachineConfig is given as: its role label, or a rendered
/// config's pool (what that pool already merged); `None` for neither (an
/// empty role is none).
fn effective_role(mc: &Value) -> Result<Option<&str>> {
    Ok(role(mc)?
        .filter(|r| !r.is_empty())
        .or_else(|| rendered_pool(mc)))
}

/// A MachineConfig's labels with its [`effective_role`], as a pool's
/// selector matches it.
fn selected_labels(mc: &Value) -> Result<Vec<(String, String)>> {
    let mut l = labels(mc);
    if role(mc)?.is_none()
        && let Some(p) = rendered_pool(mc)
    {
        l.push((ROLE_LABEL.to_string(), p.to_string()));
    }
    Ok(l)
}

/// Whether a MachineConfigPool given selects `mc`.
fn given_pool_selects(pools: &[Value], mc: &Value) -> Result<bool> {
    let l = selected_labels(mc)?;
    Ok(pools.iter().any(|p| {
        Selector::from_label_selector(p.pointer("/spec/machineConfigSelector"))
            .filter(|s| !s.is_empty() && s.error.is_none())
            .is_some_and(|s| s.matches(&l))
    }))
}

/// A directory's MachineConfigs (`from_dir`) the MCO gives no node: one
/// without a role label that is no rendered config (the MCO's pools
/// select by the role label) and that no MachineConfigPool given selects.
/// Refused, naming it: laid out as a base, it showed what no node gets. A
/// config given as a file of its own is a base (`oc get mc NAME -o
/// yaml` of a rendered one under any name).
pub fn check_selected(from_dir: &[Value], pools: &[Value]) -> Result<()> {
    for mc in from_dir {
        let rendered = role(mc)?.is_none() && rendered_pool(mc).is_some();
        if rendered {
            bail!(
                "--machineconfig: MachineConfig {:?} of a directory is named or owned as a \
                 rendered config, but the cluster's pools select a directory's MachineConfigs by \
                 their labels, and it has none: no pool selects it (the MCO refuses one \
                 selected); give a pool's rendered config as a file of its own",
                crate::cli::render::layout::mc_name(mc)
            );
        }
        if effective_role(mc)?.is_none() && !given_pool_selects(pools, mc)? {
            bail!(
                "--machineconfig: MachineConfig {:?} has no {ROLE_LABEL} label and is no rendered \
                 config: no pool selects it, so the MCO gives it to no node; label it with its \
                 pool's role (or give a rendered config as a file of its own)",
                crate::cli::render::layout::mc_name(mc)
            );
        }
    }
    Ok(())
}

/// Without `--pool`, inputs holding exactly one MachineConfigPool: that
/// pool, as `--pool NAME` chooses its MachineConfigs. One that neither it
/// nor a built-in pool (worker, master, arbiter: their role) selects is
/// refused, naming it: the MCO gives it to no node. `None` for inputs with
/// no pool or several.
pub fn choose_the_given_pool(configs: Vec<Value>, pools: &[Value]) -> Result<Option<Vec<Value>>> {
    let names: BTreeSet<&str> = pools.iter().map(pool_name).collect();
    let [name] = names.into_iter().collect::<Vec<_>>()[..] else {
        return Ok(None);
    };
    let (selector, what) = selector_of(pools, name)?;
    for mc in &configs {
        let builtin_or_base = matches!(
            effective_role(mc)?,
            None | Some("worker" | "master" | "arbiter")
        );
        if !builtin_or_base && !selector.matches(&selected_labels(mc)?) {
            bail!(
                "--machineconfig: MachineConfig {:?} ({ROLE_LABEL} {:?}) is selected by no pool: \
                 not by {what}, the pool the inputs give, nor by a built-in pool; the MCO gives \
                 it to no node (give its pool's MachineConfigPool, or label it with a role {name} \
                 selects)",
                crate::cli::render::layout::mc_name(mc),
                role(mc)?.unwrap_or_default()
            );
        }
    }
    choose(configs, pools, name).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::render::layout::mc_name;
    use serde_json::json;

    fn mc(name: &str, role: Option<&str>) -> Value {
        let mut v = json!({"kind": "MachineConfig", "metadata": {"name": name}});
        if let Some(r) = role {
            v["metadata"]["labels"] = json!({ ROLE_LABEL: r });
        }
        v
    }

    /// Review 23 r23b F2: a copy of a pool's MachineConfig for another
    /// role (or none) replaces it in the cluster: refused, as one of the
    /// same role is by the merge.
    #[test]
    fn a_machineconfig_given_twice_for_any_role_is_refused() {
        let own = mc("50-gpu-labels", Some("worker-gpu"));
        for other in [Some("infra"), None, Some("worker-gpu")] {
            let e = check_given_once(&[own.clone(), mc("50-gpu-labels", other)], &[])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("MachineConfig \"50-gpu-labels\" is given twice"),
                "{e}"
            );
        }
        let pool = json!({"kind": "MachineConfigPool", "metadata": {"name": "gpu"}});
        assert!(check_given_once(std::slice::from_ref(&own), &[pool.clone(), pool]).is_err());
        assert!(check_given_once(&[own, mc("50-other", Some("infra"))], &[]).is_ok());
    }

    fn names(v: &[Value]) -> Vec<&str> {
        v.iter().map(mc_name).collect()
    }

    #[test]
    fn a_custom_pool_takes_worker_s_and_its_own() {
        let configs = vec![
            mc("50-worker-x", Some("worker")),
            mc("50-gpu-x", Some("gpu")),
            mc("50-infra-x", Some("infra")),
            mc("00-master", Some("master")),
            mc("rendered-worker-0123abcd", None),
            mc("rendered-gpu-0123abcd", None),
        ];
        let gpu = choose(configs.clone(), &[], "gpu").unwrap();
        assert_eq!(
            names(&gpu),
            [
                "50-worker-x",
                "50-gpu-x",
                "rendered-worker-0123abcd",
                "rendered-gpu-0123abcd"
            ]
        );
        let worker = choose(configs.clone(), &[], "worker").unwrap();
        assert_eq!(names(&worker), ["50-worker-x", "rendered-worker-0123abcd"]);
        let master = choose(configs.clone(), &[], "master").unwrap();
        assert_eq!(names(&master), ["00-master"]);
        let e = choose(configs, &[], "storage").unwrap_err().to_string();
        assert!(e.contains("pools found: gpu, infra, master, worker"), "{e}");
    }

    #[test]
    fn the_pools_own_selector_decides_when_given() {
        let configs = vec![
            mc("50-worker-x", Some("worker")),
            mc("50-gpu-x", Some("gpu")),
        ];
        // A pool that selects only its own role takes no worker config.
        let pool = json!({"kind": "MachineConfigPool", "metadata": {"name": "gpu"},
            "spec": {"machineConfigSelector": {"matchLabels": { ROLE_LABEL: "gpu" }}}});
        let gpu = choose(configs.clone(), &[pool], "gpu").unwrap();
        assert_eq!(names(&gpu), ["50-gpu-x"]);
        let empty = json!({"kind": "MachineConfigPool", "metadata": {"name": "gpu"},
            "spec": {"machineConfigSelector": {}}});
        assert!(choose(configs, &[empty], "gpu").is_err());
    }

    /// A base given as a file (no role, no rendered name) goes with any
    /// pool; a directory's such config is refused, and, the inputs' one
    /// pool deciding, so is a role it does not select.
    #[test]
    fn bases_and_configs_no_pool_selects() {
        let pool = json!({"kind": "MachineConfigPool", "metadata": {"name": "gpu"},
            "spec": {"machineConfigSelector": {"matchExpressions": [
                {"key": ROLE_LABEL, "operator": "In", "values": ["worker", "gpu-v2"]}]}}});
        let base = mc("my-base", None);
        let chosen = choose(
            vec![base.clone(), mc("50-gpu-x", Some("gpu-v2"))],
            &[],
            "gpu-v2",
        );
        assert_eq!(names(&chosen.unwrap()), ["my-base", "50-gpu-x"]);
        let e = check_selected(&[base], &[]).unwrap_err().to_string();
        assert!(
            e.contains("\"my-base\"") && e.contains("no pool selects it"),
            "{e}"
        );
        // A rendered config is given as a file of its own: in a
        // directory (a pull request's) it is a config no pool selects.
        assert!(check_selected(&[mc("rendered-gpu-0a1b", None)], &[]).is_err());
        let configs = vec![
            mc("50-worker-x", Some("worker")),
            mc("50-gpu-x", Some("gpu")),
        ];
        let e = choose_the_given_pool(configs, std::slice::from_ref(&pool))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"50-gpu-x\"") && e.contains("selected by no pool"),
            "{e}"
        );
        let ok = vec![
            mc("50-worker-x", Some("worker")),
            mc("50-gpu-x", Some("gpu-v2")),
        ];
        let chosen = choose_the_given_pool(ok, &[pool]).unwrap().unwrap();
        assert_eq!(names(&chosen), ["50-worker-x", "50-gpu-x"]);
        assert!(choose_the_given_pool(vec![], &[]).unwrap().is_none());
    }

    #[test]
    fn pools_are_read_beside_machineconfigs() {
        let text = "kind: MachineConfigPool\nmetadata: {name: gpu}\n---\nkind: List\nitems:\n- \
                    {kind: MachineConfigPool, metadata: {name: infra}}\n- {kind: MachineConfig}\n";
        let pools = pools_from_yaml(text);
        assert_eq!(
            pools.iter().map(pool_name).collect::<Vec<_>>(),
            ["gpu", "infra"]
        );
    }
}
