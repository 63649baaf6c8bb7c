//! Output of `kubelet-labeler facts` (not on the boot path): one line per
//! attribute, or NFD's `NodeFeature` `spec.features` JSON.

use serde_json::{Map, Value, json};

use crate::node::facts::Features;
use crate::node::sorted::SortedMap;

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
    // A value (a firmware's DMI string, a file of a tree given) may hold a
    // newline: escaped, it forges no line of its own.
    use crate::cli::output::one_line as esc;
    let mut lines = Vec::new();
    for (name, set) in &f.flags {
        lines.extend(set.iter().map(|flag| format!("{name} {}", esc(flag))));
    }
    for (name, attrs) in &f.attributes {
        lines.extend(
            attrs
                .iter()
                .map(|(k, v)| format!("{name} {}={}", esc(k), esc(v))),
        );
    }
    for (name, elems) in &f.instances {
        for e in elems {
            let attrs: Vec<String> = e
                .iter()
                .map(|(k, v)| format!("{}={}", esc(k), esc(v)))
                .collect();
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

/// Facts given as NFD gives them: a `NodeFeature` object (`oc get
/// nodefeature -n NS NODE -o yaml`; its `spec.features`), a list holding
/// one, or the bare `spec.features` that `facts --json` prints. `source`
/// names the input in errors.
pub fn from_nfd(doc: &Value, source: &str) -> Result<Features, String> {
    let kind = doc.get("kind").and_then(Value::as_str);
    let features = match kind {
        Some("NodeFeature") => doc
            .pointer("/spec/features")
            .ok_or_else(|| format!("{source}: a NodeFeature without spec.features"))?,
        Some(k) if k.ends_with("List") => {
            let items = doc.get("items").and_then(Value::as_array);
            match items.map(Vec::as_slice).unwrap_or_default() {
                [one] => return from_nfd(one, source),
                items => {
                    return Err(format!(
                        "{source}: a list of {} objects; give one node's NodeFeature (oc get nodefeature -n NAMESPACE NODE -o yaml)",
                        items.len()
                    ));
                }
            }
        }
        Some(k) => {
            return Err(format!(
                "{source}: a {k}, not a NodeFeature; give `oc get nodefeature -n NAMESPACE NODE -o yaml` or `kubelet-labeler facts --json` output"
            ));
        }
        None if ["flags", "attributes", "instances"]
            .iter()
            .any(|k| doc.get(k).is_some()) =>
        {
            doc
        }
        None => {
            return Err(format!(
                "{source}: neither a NodeFeature nor `facts --json` output (no kind, no flags/attributes/instances)"
            ));
        }
    };
    let mut f = Features::default();
    // `elements` of one feature: a map (flags, attributes) or a list.
    let elements = |v: &Value| v.get("elements").filter(|e| !e.is_null()).cloned();
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let group = |key: &str| -> Result<Vec<(String, Value)>, String> {
        match features.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(m)) => Ok(m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
            Some(_) => Err(format!("{source}: {key} is not a map of features")),
        }
    };
    for (name, v) in group("flags")? {
        let mut set = crate::node::sorted::SortedSet::default();
        match elements(&v) {
            None => {}
            Some(Value::Object(m)) => m.keys().for_each(|k| {
                set.insert(k.clone());
            }),
            Some(_) => return Err(format!("{source}: flags.{name}.elements is not a map")),
        }
        f.flags.insert(name, set);
    }
    for (name, v) in group("attributes")? {
        let mut attrs = SortedMap::default();
        match elements(&v) {
            None => {}
            Some(Value::Object(m)) => {
                for (k, val) in &m {
                    let val = text(val).ok_or_else(|| {
                        format!("{source}: attributes.{name}.elements.{k} is not a string")
                    })?;
                    attrs.insert(k.clone(), val);
                }
            }
            Some(_) => return Err(format!("{source}: attributes.{name}.elements is not a map")),
        }
        f.attributes.insert(name, attrs);
    }
    for (name, v) in group("instances")? {
        let mut list = Vec::new();
        match elements(&v) {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let mut attrs = SortedMap::default();
                    match item.get("attributes") {
                        None | Some(Value::Null) => {}
                        Some(Value::Object(m)) => {
                            for (k, val) in m {
                                let val = text(val).ok_or_else(|| {
                                    format!("{source}: instances.{name}.elements[{i}].attributes.{k} is not a string")
                                })?;
                                attrs.insert(k.clone(), val);
                            }
                        }
                        Some(_) => {
                            return Err(format!(
                                "{source}: instances.{name}.elements[{i}].attributes is not a map"
                            ));
                        }
                    }
                    list.push(attrs);
                }
            }
            Some(_) => return Err(format!("{source}: instances.{name}.elements is not a list")),
        }
        f.instances.insert(name, list);
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DMI string with a newline (nfd-worker trims only its ends) forges
    /// no line of `facts`' text output.
    #[test]
    fn a_value_s_newline_forges_no_line() {
        let mut f = Features::default();
        f.attributes
            .entry("system.dmiid".into())
            .or_default()
            .insert(
                "product_name".into(),
                "Evil\npci.device vendor=10de class=0302".into(),
            );
        let text = human(&f);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("Evil\\npci.device"), "{text}");
    }

    /// A NodeFeature as nfd-worker writes it (trimmed), and `facts --json`
    /// output: the same features.
    #[test]
    fn nodefeature_and_facts_json_read_alike() {
        let nf = json!({
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
            "kind": "NodeFeature",
            "metadata": { "name": "worker-0", "namespace": "openshift-nfd",
                          "labels": { "nfd.node.kubernetes.io/node-name": "worker-0" } },
            "spec": { "features": {
                "flags": { "cpu.cpuid": { "elements": { "AVX512F": {}, "AVX2": {} } },
                           "kernel.loadedmodule": { "elements": null } },
                "attributes": { "kernel.version": { "elements": { "major": "5", "minor": "14" } },
                                "cpu.model": { "elements": { "family": 6 } } },
                "instances": { "pci.device": { "elements": [
                    { "attributes": { "class": "0302", "vendor": "10de", "device": "20b5" } } ] } }
            }, "labels": {} }
        });
        let f = from_nfd(&nf, "nf.yaml").unwrap();
        assert!(f.flags.get("cpu.cpuid").unwrap().contains("AVX512F"));
        assert!(f.flags.get("kernel.loadedmodule").unwrap().is_empty());
        assert_eq!(
            f.attributes
                .get("cpu.model")
                .unwrap()
                .get("family")
                .map(String::as_str),
            Some("6")
        );
        assert_eq!(f.instances.get("pci.device").unwrap().len(), 1);
        // Round trip through `facts --json`.
        assert_eq!(from_nfd(&nfd_json(&f), "facts.json").unwrap(), f);
        let list = json!({ "kind": "List", "items": [nf.clone()] });
        assert_eq!(from_nfd(&list, "l").unwrap(), f);
        let two = json!({ "kind": "NodeFeatureList", "items": [nf.clone(), nf] });
        assert!(
            from_nfd(&two, "l")
                .unwrap_err()
                .contains("a list of 2 objects")
        );
        let rule = json!({ "kind": "NodeFeatureRule", "spec": {} });
        assert!(
            from_nfd(&rule, "r.yaml")
                .unwrap_err()
                .contains("a NodeFeatureRule, not a NodeFeature")
        );
        let bad = json!({ "attributes": { "x.y": { "elements": { "k": [1] } } } });
        assert!(
            from_nfd(&bad, "b")
                .unwrap_err()
                .contains("attributes.x.y.elements.k is not a string")
        );
    }
}
