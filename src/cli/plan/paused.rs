//! A MachineConfigPool's `spec.paused` on both sides of a change (review
//! 25 r25a F5). While a pool is paused the MCO still renders its new
//! MachineConfigs into the pool's `spec.configuration`, but rolls none of
//! them out: its nodes keep the rendered config they ran when it was
//! paused. The base render is then not what those nodes run, and a change
//! that unpauses the pool rolls out everything merged while it was paused,
//! which the two renders do not show. Such a node is priced as a drain and
//! reboot and a possible taint change, unless the fleet shows it has
//! nothing pending (its `currentConfig` is the fleet's pool's
//! `spec.configuration`).
//!
//! Which side is paused, as an apply leaves the field: a render's pool
//! that gives `spec.paused` sets it; one that leaves it out after a render
//! that gave it removes it (not paused); one that never gave it leaves the
//! cluster's (the fleet's pool, where given).

use serde_json::Value;

use super::Outcome;
use super::fleet::Fleet;
use super::formats::CURRENT_CONFIG;
use super::inputs::Render;
use super::policy::Disruption;
use crate::node::sync::reconcile::NodeState;

/// `spec.paused` as `object` gives it (None: not given).
fn given(object: &Value) -> Option<bool> {
    object.pointer("/spec/paused").and_then(Value::as_bool)
}

fn find<'a>(render: &'a Render, pool: &str) -> Option<&'a Value> {
    let name = |v: &&Value| v.pointer("/metadata/name").and_then(Value::as_str) == Some(pool);
    render.pools.iter().find(name)
}

/// Where the pool is paused on the base side (its nodes may run an older
/// rendered config than the base render's), if it is.
fn paused_before(fleet: &Fleet, base: &Render, pool: &str) -> Option<String> {
    if find(base, pool).and_then(given) == Some(true) {
        Some(base.name.clone())
    } else if fleet.pool_objects.get(pool).and_then(given) == Some(true) {
        Some("the fleet's MachineConfigPool".into())
    } else {
        None
    }
}

/// Whether the pool is paused once the proposed render is applied
/// (`stays`: the pool still exists then).
fn paused_after(
    fleet: &Fleet,
    (base, proposed): (&Render, &Render),
    pool: &str,
    stays: bool,
) -> bool {
    let cluster = || fleet.pool_objects.get(pool).and_then(given) == Some(true);
    match find(proposed, pool) {
        _ if !stays => false,
        Some(p) => match given(p) {
            Some(paused) => paused,
            // The apply removes the field its last render set.
            None if find(base, pool).and_then(given).is_some() => false,
            None => cluster(),
        },
        None => cluster(),
    }
}

/// The pool's notes on `o`, and why the node is priced as a drain and
/// reboot it cannot see from the renders (the change unpauses the pool
/// and the node may have MachineConfigs pending): see [`price`].
pub(super) fn judge(
    o: &mut Outcome,
    node: Option<&NodeState>,
    fleet: &Fleet,
    renders: (&Render, &Render),
    pool: &str,
    stays: bool,
) -> Option<String> {
    let before = paused_before(fleet, renders.0, pool);
    if paused_after(fleet, renders, pool, stays) {
        let mut note = format!(
            "pool {pool} is paused (spec.paused): the MCO rolls none of this out to its nodes, \
             and nodes joining it boot its current rendered config, until it is unpaused; what \
             is shown is what unpausing does"
        );
        if let Some(w) = &before {
            note.push_str(&format!(
                " over the base render (paused in {w} already: what was merged before this \
                 change is not shown)"
            ));
        }
        o.not_judged.push(note);
        return None;
    }
    let where_paused = before.filter(|_| stays)?;
    // The node runs the pool's latest rendered config: nothing pending.
    let current = node
        .and_then(|s| s.annotations.iter().find(|(k, _)| k == CURRENT_CONFIG))
        .map(|(_, v)| v.as_str());
    let latest = (fleet.pool_objects.get(pool))
        .and_then(|p| p.pointer("/spec/configuration/name"))
        .and_then(Value::as_str);
    if current.is_some() && current == latest {
        return None;
    }
    Some(format!(
        "unpausing pool {pool} (paused in {where_paused}) rolls out every MachineConfig merged \
         while it was paused; plan cannot see them from the renders: a drain and reboot, and \
         possibly a taint change (unless the Node's currentConfig is the pool's \
         spec.configuration: give oc get nodes,mcp -o json)"
    ))
}

/// A rollout plan cannot see (`why`, from [`judge`]): a drain and reboot,
/// counted as a possible taint change.
pub(super) fn price(o: &mut Outcome, why: Option<String>) {
    if let Some(why) = why {
        o.disruption = Disruption::DrainAndReboot;
        o.disruption_because.push(why);
        o.unseen_rollout = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(name: &str, paused: Option<bool>) -> Render {
        let mut pool =
            json!({"kind": "MachineConfigPool", "metadata": {"name": "gpu"}, "spec": {}});
        if let Some(p) = paused {
            pool["spec"]["paused"] = json!(p);
        }
        Render {
            name: name.into(),
            pools: vec![pool],
            ..Default::default()
        }
    }

    fn fleet(paused: Option<bool>) -> Fleet {
        let mut f = Fleet::default();
        if let Some(p) = paused {
            let pool = json!({"metadata": {"name": "gpu"}, "spec": {"paused": p}});
            f.pool_objects.insert("gpu".into(), pool);
        }
        f
    }

    #[test]
    fn paused_as_an_apply_leaves_the_field() {
        let (t, f, none) = (Some(true), Some(false), None);
        // (base render, proposed render, fleet) -> (paused before, after)
        for (b, p, c, before, after) in [
            (t, f, none, Some("base"), false),
            (t, none, none, Some("base"), false), // the apply removes it
            (t, t, none, Some("base"), true),
            (none, none, t, Some("the fleet's MachineConfigPool"), true), // left as is
            (none, f, t, Some("the fleet's MachineConfigPool"), false),
            (f, f, t, Some("the fleet's MachineConfigPool"), false),
            (none, t, none, None, true),
            (none, none, none, None, false),
        ] {
            let (base, proposed, cluster) = (render("base", b), render("pr", p), fleet(c));
            let got = (
                paused_before(&cluster, &base, "gpu"),
                paused_after(&cluster, (&base, &proposed), "gpu", true),
            );
            assert_eq!(
                got,
                (before.map(str::to_string), after),
                "{b:?} {p:?} {c:?}"
            );
            // A pool that stops existing is paused on no side after.
            assert!(!paused_after(&cluster, (&base, &proposed), "gpu", false));
        }
    }
}
