//! Output of `kubelet-labeler facts` (not on the boot path): one line per
//! attribute, or NFD's `NodeFeature` `spec.features` JSON.

use serde_json::{Map, Value, json};

use super::Features;
use crate::sorted::SortedMap;

/// An attribute map as a JSON object, keys in order.
fn object(attrs: &SortedMap<String, String>) -> Value {
    let map: Map<String, Value> = attrs
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
        .collect();
    Value::Object(map)
}

/// `feature attr=value` lines (flags as `feature NAME`), sorted.
pub fn human(f: &Features) -> String {
    let mut lines = Vec::new();
    for (name, set) in &f.flags {
        lines.extend(set.iter().map(|flag| format!("{name} {flag}")));
    }
    for (name, attrs) in &f.attributes {
        lines.extend(attrs.iter().map(|(k, v)| format!("{name} {k}={v}")));
    }
    for (name, elems) in &f.instances {
        for e in elems {
            let attrs: Vec<String> = e.iter().map(|(k, v)| format!("{k}={v}")).collect();
            lines.push(format!("{name} {}", attrs.join(" ")));
        }
    }
    lines.sort();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// `{"flags":{..:{"elements":{NAME:{}}}},"attributes":{..:{"elements":{K:V}}},
/// "instances":{..:{"elements":[{"attributes":{K:V}}]}}}`
pub fn nfd_json(f: &Features) -> Value {
    let flags: Map<String, Value> = f
        .flags
        .iter()
        .map(|(n, set)| {
            let el: Map<String, Value> = set.iter().map(|s| (s.clone(), json!({}))).collect();
            (n.clone(), json!({ "elements": el }))
        })
        .collect();
    let attributes: Map<String, Value> = f
        .attributes
        .iter()
        .map(|(n, a)| (n.clone(), json!({ "elements": object(a) })))
        .collect();
    let instances: Map<String, Value> = f
        .instances
        .iter()
        .map(|(n, els)| {
            let el: Vec<Value> = els
                .iter()
                .map(|a| json!({ "attributes": object(a) }))
                .collect();
            (n.clone(), json!({ "elements": el }))
        })
        .collect();
    json!({ "flags": flags, "attributes": attributes, "instances": instances })
}
