//! `facts --json`: NFD's `NodeFeature` `spec.features` shape, to compare with
//! `kubectl get nodefeature -o json` for the same node. Not on the boot path.

use serde_json::{Map, Value, json};

use super::Features;

pub fn to_json(f: &Features) -> Value {
    let flags: Map<String, Value> = f
        .flags
        .iter()
        .map(|(name, set)| {
            let elements: Map<String, Value> = set.iter().map(|e| (e.clone(), json!({}))).collect();
            (name.clone(), json!({ "elements": elements }))
        })
        .collect();
    let attributes: Map<String, Value> = f
        .attributes
        .iter()
        .map(|(name, attrs)| (name.clone(), json!({ "elements": attrs })))
        .collect();
    let instances: Map<String, Value> = f
        .instances
        .iter()
        .map(|(name, list)| {
            let elements: Vec<Value> = list.iter().map(|a| json!({ "attributes": a })).collect();
            (name.clone(), json!({ "elements": elements }))
        })
        .collect();
    json!({ "flags": flags, "attributes": attributes, "instances": instances })
}

/// One `feature name=value` line per fact, sorted.
pub fn to_text(f: &Features) -> String {
    let mut out = String::new();
    for (name, set) in &f.flags {
        for e in set {
            out += &format!("{name} {e}\n");
        }
    }
    for (name, attrs) in &f.attributes {
        for (k, v) in attrs {
            out += &format!("{name} {k}={v}\n");
        }
    }
    for (name, list) in &f.instances {
        for a in list {
            let parts: Vec<String> = a.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out += &format!("{name} {}\n", parts.join(" "));
        }
    }
    out
}
