//! A MachineConfigPool compared whole (review 23 r23b F7): plan prices a
//! pool's selectors, labels and `paused`; any other field of its spec that
//! changes (`osImageStream`: an OS update, a drain and reboot of every node
//! of the pool; `pinnedImageSets`; `configuration`; whatever the MCO adds)
//! is refused, since plan cannot price it.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};
use serde_json::Value;

use super::inputs::Render;

/// The fields of the MCO's `MachineConfigPoolSpec` plan reads or that
/// change no node: the selectors (which MachineConfigs and nodes the pool
/// takes: pool moves and rendered configs), `paused` (no rollout; a change
/// that unpauses a pool is priced in `paused`), and
/// `maxUnavailable` (how many nodes update at a time, not what they get).
pub const PRICED: [&str; 4] = [
    "machineConfigSelector",
    "nodeSelector",
    "paused",
    "maxUnavailable",
];

fn name(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A pool's spec fields outside [`PRICED`], as the MCO decodes them: an
/// empty value (null, `{}`, `[]`) is the field not given.
fn unpriced(pool: &Value) -> BTreeMap<&str, &Value> {
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    match pool.get("spec") {
        Some(Value::Object(m)) => m
            .iter()
            .filter(|(k, v)| !PRICED.contains(&k.as_str()) && !empty(v))
            .map(|(k, v)| (k.as_str(), v))
            .collect(),
        _ => BTreeMap::new(),
    }
}

fn why(field: &str) -> &'static str {
    match field {
        "osImageStream" => {
            "it switches the pool's OS image: an OS update, a drain and reboot of every node of \
             the pool"
        }
        "pinnedImageSets" => "it pulls and pins images on every node of the pool",
        "configuration" => "the MCO's render controller sets it: the pool's rendered config",
        _ => "a field of the MCO's that plan does not read",
    }
}

/// Refuse a change of a pool's spec field outside [`PRICED`] from `base`
/// to `proposed` (after `keep_removed`: a pool the proposed render leaves
/// is deleted or kept as the apply does). A pool of the proposed render
/// that the base render does not hold is compared with the cluster's
/// (`cluster`, the fleet's, by name) where given, field by field as the
/// render gives them (an apply leaves a field it does not give), and with
/// none otherwise.
pub fn check(base: &Render, proposed: &Render, cluster: &BTreeMap<String, Value>) -> Result<()> {
    for after in &proposed.pools {
        let pool = name(after);
        let after_fields = unpriced(after);
        let (before_fields, against) = match base.pools.iter().find(|p| name(p) == pool) {
            Some(b) => (unpriced(b), base.name.clone()),
            None => match cluster.get(pool) {
                Some(c) => {
                    let mut fields = unpriced(c);
                    fields.retain(|k, _| after_fields.contains_key(k));
                    (fields, "the fleet's MachineConfigPool".to_string())
                }
                None => (BTreeMap::new(), base.name.clone()),
            },
        };
        let keys: BTreeSet<&str> = after_fields
            .keys()
            .chain(before_fields.keys())
            .copied()
            .collect();
        for field in keys {
            let (b, a) = (before_fields.get(field), after_fields.get(field));
            if b == a {
                continue;
            }
            let show = |v: Option<&&Value>| match v {
                Some(v) => v.to_string(),
                None => "not given".to_string(),
            };
            bail!(
                "MachineConfigPool {pool:?} spec.{field} changes from {against} ({}) to {} ({}): \
                 plan cannot price it ({}); it prices only a pool's {} and labels. Plan the \
                 change without it, and review that pool by eye",
                show(b),
                proposed.name,
                show(a),
                why(field),
                PRICED
                    .iter()
                    .map(|f| format!("spec.{f}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(name: &str, pools: Vec<Value>) -> Render {
        Render {
            name: name.into(),
            pools,
            ..Default::default()
        }
    }

    fn pool(spec: Value) -> Value {
        json!({"kind": "MachineConfigPool", "metadata": {"name": "worker-gpu"}, "spec": spec})
    }

    #[test]
    fn a_spec_field_outside_the_priced_ones_is_refused_when_it_changes() {
        let plain = pool(json!({"paused": false, "nodeSelector": {}}));
        let stream = pool(json!({"osImageStream": {"name": "rhel-10"}}));
        let none = BTreeMap::new();
        let base = render("base", vec![plain.clone()]);
        let pr = render("pr", vec![stream.clone()]);
        let e = check(&base, &pr, &none).unwrap_err().to_string();
        assert!(
            e.contains("MachineConfigPool \"worker-gpu\" spec.osImageStream changes")
                && e.contains("plan cannot price it"),
            "{e}"
        );
        assert!(check(&pr, &base, &none).is_err());
        assert!(check(&pr, &pr, &none).is_ok());
        // Priced fields and empty values pass.
        let paused = pool(json!({"paused": true, "maxUnavailable": 2, "pinnedImageSets": []}));
        assert!(check(&base, &render("pr", vec![paused]), &none).is_ok());
        // A new pool: against the cluster's, as far as the render gives it.
        let cluster: BTreeMap<String, Value> = [(
            "worker-gpu".to_string(),
            pool(json!({"configuration": {"name": "rendered-worker-gpu-1"},
                        "osImageStream": {"name": "rhel-9"}})),
        )]
        .into();
        let empty = render("base", vec![]);
        assert!(check(&empty, &base, &cluster).is_ok());
        let e = check(&empty, &pr, &cluster).unwrap_err().to_string();
        assert!(e.contains("from the fleet's MachineConfigPool"), "{e}");
        assert!(check(&empty, &pr, &BTreeMap::new()).is_err());
    }
}
