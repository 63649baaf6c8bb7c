//! The order the MCO merges a pool's MachineConfigs in
//! (`MergeMachineConfigs`): `worker`'s by name, then all others by name;
//! a rendered config, what a pool already merged, as the base.

use std::borrow::Borrow;
use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde_json::Value;

/// The label a MachineConfigPool selects its MachineConfigs by.
pub const ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";

/// Roles whose pools select their own role's MachineConfigs only, not
/// `worker`'s as a custom pool does.
const OWN_ROLE_ONLY: [&str; 2] = ["master", "arbiter"];

pub fn mc_name(mc: &Value) -> &str {
    mc.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// A MachineConfig's role label, if it has one.
pub fn role(mc: &Value) -> Result<Option<&str>> {
    match mc
        .pointer("/metadata/labels")
        .and_then(|l| l.get(ROLE_LABEL))
    {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(r)) => Ok(Some(r)),
        Some(other) => bail!(
            "MachineConfig {:?}: label {ROLE_LABEL} is {other}, not a string; quote it",
            mc_name(mc)
        ),
    }
}

/// The pool a rendered config was rendered for: the MachineConfigPool
/// that owns it (`ownerReferences`), else the pool in its name
/// (`rendered-<pool>-<hash>`, as the MCO names it); never one with labels.
pub fn rendered_pool(mc: &Value) -> Option<&str> {
    // The MCO labels no rendered config; one with labels is a config the
    // pools select by them, whatever its name or owner says.
    if mc
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .is_some_and(|l| !l.is_empty())
    {
        return None;
    }
    let owner = mc
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|o| o.get("kind").and_then(Value::as_str) == Some("MachineConfigPool"))
        .and_then(|o| o.get("name").and_then(Value::as_str))
        .filter(|n| !n.is_empty());
    owner.or_else(|| {
        let (pool, hash) = mc_name(mc).strip_prefix("rendered-")?.rsplit_once('-')?;
        let is_hash = !hash.is_empty() && hash.bytes().all(|b| b.is_ascii_hexdigit());
        (is_hash && !pool.is_empty()).then_some(pool)
    })
}

/// Where `configs[i]` goes in the merge: the indices in merge order.
///
/// The MCO merges a pool's `worker`-role MachineConfigs first (by name),
/// then all others (by name): a custom pool's own configs override
/// worker's, whatever the names. It refuses a MachineConfig without
/// labels, but the input here is often a rendered config (`oc get mc
/// rendered-worker-...`), which carries none: what the pool already merged.
/// So a rendered config (or one without labels, a base given as a file)
/// goes first, as the base the others change; one with labels but no role
/// goes with the pool's own, as the MCO's "other" configs.
///
/// A node is in one pool: configs of two pools' roles are refused, and a
/// rendered config counts as its pool's (rendered-worker stands for
/// worker's configs, which a custom pool takes too).
pub fn merge_order<V: Borrow<Value>>(configs: &[V]) -> Result<Vec<usize>> {
    // A pool's configs: by role label, and rendered for it.
    let mut roles: BTreeMap<&str, [Vec<&str>; 2]> = BTreeMap::new();
    let mut rank = Vec::with_capacity(configs.len());
    for mc in configs {
        let mc = mc.borrow();
        let role = role(mc)?;
        if let Some(r) = role {
            roles.entry(r).or_default()[0].push(mc_name(mc));
        }
        if let Some(p) = rendered_pool(mc).filter(|p| role != Some(*p)) {
            roles.entry(p).or_default()[1].push(mc_name(mc));
        }
        // A rendered config, or one without labels (which the MCO
        // refuses: a base given as a file of its own), is the base; one
        // with labels but no role is among the MCO's "other" configs,
        // merged after worker's by name.
        let unlabelled = mc.pointer("/metadata/labels").is_none_or(Value::is_null);
        rank.push(match role {
            None if unlabelled || rendered_pool(mc).is_some() => 0,
            Some("worker") => 1,
            _ => 2,
        });
    }
    let pools: Vec<&str> = roles.keys().copied().filter(|r| *r != "worker").collect();
    let mixed = pools.len() > 1
        || (roles.contains_key("worker") && pools.iter().any(|r| OWN_ROLE_ONLY.contains(r)));
    if mixed {
        let named: Vec<String> = roles
            .iter()
            .flat_map(|(r, [labelled, rendered])| {
                [(labelled, "role"), (rendered, "rendered for pool")]
                    .into_iter()
                    .filter(|(names, _)| !names.is_empty())
                    .map(move |(names, how)| {
                        let names: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
                        format!("{} ({how} {r})", names.join(", "))
                    })
            })
            .collect();
        let why = match pools.as_slice() {
            [own] if OWN_ROLE_ONLY.contains(own) => {
                format!("the {own} pool takes no worker MachineConfigs")
            }
            _ => format!("a node is in one pool, not {}", pools.join(" and ")),
        };
        bail!(
            "MachineConfigs of more than one pool ({why}): {}; give the MachineConfigs of one \
             pool: its role's (and, for a custom pool, worker's) or its rendered config",
            named.join("; ")
        );
    }
    let mut order: Vec<usize> = (0..configs.len()).collect();
    // Stable: configs of one name keep the order given.
    order.sort_by(|&a, &b| {
        (rank[a], mc_name(configs[a].borrow())).cmp(&(rank[b], mc_name(configs[b].borrow())))
    });
    Ok(order)
}
