//! What the MCO's daemon compares between a pool's two rendered configs
//! (`CalculateConfigFileDiffs`, `GetChangedConfigUnitsByType`, the
//! `passwd` diff): each file and each unit whole, as `MergeMachineConfigs`
//! merges them. A file whose owner, `overwrite` or `verification` alone
//! changes, or a unit whose `enabled` alone changes, is a change: without
//! a policy entry for it, a reboot.

use std::collections::BTreeMap;

use anyhow::Result;
use serde_json::{Map, Value};

use super::policy::Changed;
use crate::cli::render::layout::merge_order;

/// Each file, unit and `passwd` of the pool's rendered config as the MCO
/// merges its MachineConfigs (Ignition's merge, in the MCO's order, with
/// its compression and `overwrite` defaults), by what the daemon compares.
pub fn identities(configs: &[Value]) -> Result<BTreeMap<Changed, Value>> {
    let mut files: Vec<(String, Value)> = Vec::new();
    let mut units: Vec<(String, Value)> = Vec::new();
    let mut passwd: Vec<Value> = Vec::new();
    for (k, i) in merge_order(configs)?.into_iter().enumerate() {
        let Some(config) = configs[i].pointer("/spec/config").filter(|c| !c.is_null()) else {
            continue;
        };
        let list = |path: &str| {
            config
                .pointer(path)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        };
        // Files, directories and links share one key, the path: a later
        // link or directory takes an earlier file's place (Ignition's
        // merge), and taken away, the file is back.
        for e in list("/storage/links").chain(list("/storage/directories")) {
            if let Some(p) = e.get("path").and_then(Value::as_str) {
                files.retain(|(q, _)| q != p);
            }
        }
        for f in list("/storage/files") {
            let mut f = without_nulls(f);
            // Every file of a later config sets compression (unset: ""),
            // so a later source never keeps an earlier compression.
            if k > 0
                && let Some(o) = f.as_object_mut()
            {
                let contents = o
                    .entry("contents")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Some(c) = contents.as_object_mut() {
                    c.entry("compression").or_insert_with(|| "".into());
                }
            }
            merge_keyed(&mut files, "path", f);
        }
        if k > 0 {
            for (_, f) in &mut files {
                let c = f.pointer_mut("/contents").and_then(Value::as_object_mut);
                if let Some(c) = c
                    && c.get("compression").and_then(Value::as_str) == Some("")
                {
                    c.remove("compression");
                }
            }
        }
        for u in list("/systemd/units") {
            merge_keyed(&mut units, "name", without_nulls(u));
        }
        if let Some(p) = config.get("passwd").filter(|p| !p.is_null()) {
            passwd.push(without_nulls(p));
        }
    }
    let mut out = BTreeMap::new();
    for (path, mut f) in files {
        if let Some(o) = f.as_object_mut() {
            o.entry("overwrite").or_insert(Value::Bool(true));
        }
        out.insert(Changed::File(path), f);
    }
    for (name, u) in units {
        out.insert(Changed::Unit(name), u);
    }
    // Every `passwd` section as written: a change of any is judged as an
    // SSH key change (the only one the MCO makes on running nodes; the
    // others are refused as not reconcilable).
    if !passwd.is_empty() {
        out.insert(Changed::SshKeys, Value::Array(passwd));
    }
    Ok(out)
}

/// What changed between two sides' identities: removed, added or not the
/// same.
pub fn changed<'a>(
    old: &'a BTreeMap<Changed, Value>,
    new: &'a BTreeMap<Changed, Value>,
) -> Vec<&'a Changed> {
    let mut out: Vec<&Changed> = old
        .keys()
        .chain(new.keys())
        .filter(|k| old.get(*k) != new.get(*k))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A JSON value with every `null` member left out: Go's decoder leaves
/// the field unset, as if it were absent.
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// An entry merged into a list keyed by `key` (Ignition's merge: the
/// entry of the same key is merged field by field, a new one appended).
fn merge_keyed(list: &mut Vec<(String, Value)>, key: &str, entry: Value) {
    let k = entry
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    match list.iter_mut().find(|(n, _)| *n == k) {
        Some((_, was)) => merge(was, entry),
        None => list.push((k, entry)),
    }
}

/// The key of the keyed lists inside a file or unit (`httpHeaders` by
/// name, `append` by source, drop-ins by name).
fn list_key(field: &str) -> Option<&'static str> {
    match field {
        "httpHeaders" | "dropins" => Some("name"),
        "append" => Some("source"),
        _ => None,
    }
}

/// Ignition's struct merge: a field the child sets replaces the parent's,
/// objects merge field by field, keyed lists by key; other lists append.
fn merge(parent: &mut Value, child: Value) {
    let (Some(p), Value::Object(c)) = (parent.as_object_mut(), child) else {
        return;
    };
    for (field, value) in c {
        match (p.get_mut(&field), value) {
            (Some(was @ Value::Object(_)), v @ Value::Object(_)) => merge(was, v),
            (Some(Value::Array(was)), Value::Array(items)) => match list_key(&field) {
                Some(key) => {
                    let mut keyed: Vec<(String, Value)> = was
                        .drain(..)
                        .map(|e| {
                            let k = e.get(key).and_then(Value::as_str).unwrap_or_default();
                            (k.to_string(), e)
                        })
                        .collect();
                    for item in items {
                        merge_keyed(&mut keyed, key, item);
                    }
                    was.extend(keyed.into_iter().map(|(_, e)| e));
                }
                None => was.extend(items),
            },
            (_, v) => {
                p.insert(field, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(name: &str, config: Value) -> Value {
        json!({"metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": "worker"}},
               "spec": {"config": config}})
    }

    #[test]
    fn a_file_is_compared_whole_after_the_mcos_defaults() {
        let file = |extra: Value| {
            let mut f = json!({"path": "/etc/a", "contents": {"source": "data:,a"}, "mode": 420});
            merge(&mut f, extra);
            mc(
                "50-a",
                json!({"ignition": {"version": "3.4.0"}, "storage": {"files": [f]}}),
            )
        };
        let base = identities(&[mc("00-base", json!({})), file(json!({}))]).unwrap();
        let same =
            identities(&[mc("00-base", json!({})), file(json!({"overwrite": true}))]).unwrap();
        assert!(changed(&base, &same).is_empty(), "overwrite unset is true");
        for extra in [
            json!({"user": {"name": "chrony"}}),
            json!({"overwrite": false}),
            json!({"contents": {"verification": {"hash": "sha512-00"}}}),
            json!({"mode": 384}),
        ] {
            let other = identities(&[mc("00-base", json!({})), file(extra.clone())]).unwrap();
            assert_eq!(
                changed(&base, &other),
                [&Changed::File("/etc/a".into())],
                "{extra}"
            );
        }
    }

    /// Review 14 r14b F5: a link over a file hides it; taken away, the
    /// file is back, a change.
    #[test]
    fn a_link_over_a_file_hides_it() {
        let file = mc(
            "10-a",
            json!({"storage": {"files": [{"path": "/etc/a", "contents": {"source": "data:,x"}}]}}),
        );
        let link = mc(
            "20-a",
            json!({"storage": {"links": [{"path": "/etc/a", "target": "/etc/b"}]}}),
        );
        let hidden = identities(&[file.clone(), link]).unwrap();
        let shown = identities(&[file]).unwrap();
        assert_eq!(changed(&hidden, &shown), [&Changed::File("/etc/a".into())]);
    }

    #[test]
    fn a_later_entry_resets_compression() {
        let gz = mc(
            "10-a",
            json!({"storage": {"files": [{"path": "/etc/a", "contents": {"source": "data:;base64,H4sI", "compression": "gzip"}}]}}),
        );
        let plain = mc(
            "20-a",
            json!({"storage": {"files": [{"path": "/etc/a", "contents": {"source": "data:,x"}}]}}),
        );
        let ids = identities(&[gz, plain]).unwrap();
        assert_eq!(
            ids[&Changed::File("/etc/a".into())],
            json!({"path": "/etc/a", "contents": {"source": "data:,x"}, "overwrite": true})
        );
    }

    #[test]
    fn a_unit_is_compared_whole() {
        let unit = |u: Value| mc("50-u", json!({"systemd": {"units": [u]}}));
        let base = identities(&[unit(json!({"name": "kdump.service"}))]).unwrap();
        let enabled =
            identities(&[unit(json!({"name": "kdump.service", "enabled": true}))]).unwrap();
        assert_eq!(
            changed(&base, &enabled),
            [&Changed::Unit("kdump.service".into())]
        );
        let dropin = |t: &str| {
            unit(
                json!({"name": "kubelet.service", "dropins": [{"name": "90-x.conf", "contents": t}]}),
            )
        };
        let a = identities(&[dropin("[Service]\n")]).unwrap();
        let b = identities(&[dropin("[Service]\nEnvironment=A=1\n")]).unwrap();
        assert_eq!(changed(&a, &b), [&Changed::Unit("kubelet.service".into())]);
        // A drop-in without contents keeps the earlier one's.
        let later = mc(
            "60-u",
            json!({"systemd": {"units": [{"name": "kubelet.service", "dropins": [{"name": "90-x.conf"}]}]}}),
        );
        let c = identities(&[dropin("[Service]\n"), later]).unwrap();
        assert!(changed(&a, &c).is_empty());
    }
}
