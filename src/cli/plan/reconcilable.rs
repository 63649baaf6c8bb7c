//! What the MCO does with a pool's change on its running nodes beyond the
//! files: whether it takes the change at all, and whether it reboots for
//! it whatever the disruption policy says.
//!
//! The render controller checks a pool's newly rendered config against the
//! one its nodes run (`generateAndValidateRenderedMachineConfig`,
//! `ctrlcommon.IsRenderedConfigReconcilable`, openshift/machine-config-operator
//! `pkg/controller/common/reconcile.go` since release-4.16 7327bb2359dd; the
//! same checks in the daemon's `reconcilable()`, `pkg/daemon/update.go`, at
//! release-4.14 00b2e0b1cc83 and release-4.15 1ffa8341fb18, and still there
//! at main 7ff337a4ffac): a change it cannot make in place is refused, the
//! pool goes Degraded and nothing of it rolls out. The checks, in its order:
//! `passwd` (groups unchanged; users only `core`, and of `core` only
//! `sshAuthorizedKeys` and `passwordHash`), Ignition's `kernelArguments`,
//! `storage.disks`, `filesystems`, `raid`, `directories`, `links` (added),
//! a file with `append` or at the daemon's force file, and `spec.fips`.
//! `storage.luks` is not among them.
//!
//! The cluster's own MachineConfigs of the pool are the same on both sides
//! of a pull request, so the render's MachineConfigs merged on each side
//! (in the MCO's order, Ignition's merge: lists by their key, a child's
//! fields over its parent's) differ exactly where the cluster's would.

use std::borrow::Borrow;

use serde_json::{Map, Value};

/// The daemon's force file (`constants.MachineConfigDaemonForceFile`).
const FORCE_FILE: &str = "/run/machine-config-daemon-force";
const CORE: &str = "core";

/// The sections the MCO compares, each with the key Ignition merges its
/// entries by (`None`: an object of lists).
const SECTIONS: [(&str, Option<&str>); 9] = [
    ("/passwd/groups", Some("name")),
    ("/passwd/users", Some("name")),
    ("/kernelArguments", None),
    ("/storage/disks", Some("device")),
    ("/storage/filesystems", Some("device")),
    ("/storage/raid", Some("name")),
    ("/storage/directories", Some("path")),
    ("/storage/links", Some("path")),
    ("/storage/files", Some("path")),
];

/// One side's pool, merged as far as the checks read it.
struct Merged {
    sections: Vec<Value>,
    fips: bool,
    kernel_type: &'static str,
    kernel_arguments: Vec<Value>,
    extensions: Vec<Value>,
    os_image_url: String,
}

fn merged<V: Borrow<Value>>(configs: &[V]) -> Merged {
    let order: Vec<usize> = crate::cli::render::layout::merge_order(configs)
        .unwrap_or_else(|_| (0..configs.len()).collect());
    let mut m = Merged {
        sections: vec![Value::Null; SECTIONS.len()],
        fips: false,
        kernel_type: "default",
        kernel_arguments: Vec::new(),
        extensions: Vec::new(),
        os_image_url: String::new(),
    };
    for &i in &order {
        let mc = configs[i].borrow();
        let config = mc.pointer("/spec/config").unwrap_or(&Value::Null);
        for (j, (at, _)) in SECTIONS.iter().enumerate() {
            let Some(v) = config.pointer(at).filter(|v| !v.is_null()) else {
                continue;
            };
            // Of files only what the checks read (not their contents);
            // of directories and links what the MCO serves (no spec 2
            // `filesystem`).
            let reduced;
            let v = if *at == "/storage/directories" || *at == "/storage/links" {
                reduced = Value::Array(
                    v.as_array()
                        .map_or(&[][..], Vec::as_slice)
                        .iter()
                        .map(without_spec2_filesystem)
                        .collect(),
                );
                &reduced
            } else if *at == "/storage/files" {
                reduced = Value::Array(
                    v.as_array()
                        .map_or(&[][..], Vec::as_slice)
                        .iter()
                        .map(|f| json_pick(f, &["path", "append"]))
                        .collect(),
                );
                &reduced
            } else {
                v
            };
            if m.sections[j].is_null() {
                m.sections[j] = empty_like(v);
            }
            merge_value(&mut m.sections[j], v);
        }
        let spec = mc.get("spec").unwrap_or(&Value::Null);
        m.fips |= spec.get("fips").and_then(Value::as_bool) == Some(true);
        // `MergeMachineConfigs`: the last non-default kernel type wins.
        match spec.get("kernelType").and_then(Value::as_str) {
            Some("realtime") => m.kernel_type = "realtime",
            Some("64k-pages") => m.kernel_type = "64k-pages",
            _ => {}
        }
        let list = |k: &str| {
            spec.get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        m.kernel_arguments.extend(list("kernelArguments"));
        m.extensions.extend(list("extensions"));
        if let Some(url) = spec.get("osImageURL").and_then(Value::as_str)
            && !url.is_empty()
        {
            m.os_image_url = url.to_string();
        }
    }
    for s in &mut m.sections {
        normalize(s);
    }
    // A `core` entry with nothing but its name changes nothing of the
    // cluster's `core` (it has its SSH keys from the installer).
    if let Some(Value::Array(users)) = m.sections.get_mut(1) {
        users.retain(|u| {
            !(u.get("name").and_then(Value::as_str) == Some(CORE)
                && u.as_object().is_some_and(|o| o.len() == 1))
        });
        if users.is_empty() {
            m.sections[1] = Value::Null;
        }
    }
    m
}

/// A storage node as the MCO serves it: without spec 2's `filesystem`.
fn without_spec2_filesystem(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("filesystem");
    }
    v
}

fn json_pick(v: &Value, keys: &[&str]) -> Value {
    Value::Object(
        keys.iter()
            .filter_map(|k| Some((k.to_string(), v.get(*k)?.clone())))
            .collect(),
    )
}

fn empty_like(v: &Value) -> Value {
    match v {
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Object(_) => Value::Object(Map::new()),
        _ => Value::Null,
    }
}

/// The key Ignition merges a list's entry by: an object's first key
/// field, a plain value itself.
fn entry_key(v: &Value) -> Option<String> {
    match v {
        Value::Object(o) => ["name", "path", "device", "number", "label", "source"]
            .iter()
            .find_map(|k| o.get(*k).filter(|v| !v.is_null()))
            .map(|v| v.to_string()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Ignition's merge of a child config's value over its parent's.
fn merge_value(parent: &mut Value, child: &Value) {
    match (parent, child) {
        (Value::Object(p), Value::Object(c)) => {
            for (k, v) in c {
                if v.is_null() {
                    continue;
                }
                match p.get_mut(k) {
                    Some(pv) if !pv.is_null() => merge_value(pv, v),
                    _ => {
                        p.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (Value::Array(p), Value::Array(c)) => {
            // The first entry of each key, looked up (review 42 r42b F1: a
            // scan per entry made 10,000 files minutes).
            let index = |p: &[Value]| {
                let mut at = std::collections::HashMap::new();
                for (i, e) in p.iter().enumerate() {
                    if let Some(k) = entry_key(e) {
                        at.entry(k).or_insert(i);
                    }
                }
                at
            };
            let mut at = index(p);
            for item in c {
                let Some(key) = entry_key(item) else {
                    p.push(item.clone());
                    continue;
                };
                match at.get(&key).copied() {
                    Some(i) => {
                        merge_value(&mut p[i], item);
                        // A merge that changes the entry's key: look again.
                        if entry_key(&p[i]).as_ref() != Some(&key) {
                            at = index(p);
                        }
                    }
                    None => {
                        at.insert(key, p.len());
                        p.push(item.clone());
                    }
                }
            }
        }
        (p, c) => *p = c.clone(),
    }
}

/// Absent, `null` and empty read alike (Go's zero values).
fn normalize(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for x in o.values_mut() {
                normalize(x);
            }
            o.retain(|_, x| !x.is_null());
            if o.is_empty() {
                *v = Value::Null;
            }
        }
        Value::Array(a) => {
            for x in a.iter_mut() {
                normalize(x);
            }
            if a.is_empty() {
                *v = Value::Null;
            }
        }
        _ => {}
    }
}

/// Why the MCO refuses to move a pool's running nodes from the render
/// `old` to `new` (each: the pool's MachineConfigs of that render), in its
/// words; `None` when it takes the change.
pub fn refusal<V: Borrow<Value>>(old: &[V], new: &[V]) -> Option<String> {
    let (o, n) = (merged(old), merged(new));
    let section = |m: &Merged, at: &str| {
        let i = SECTIONS.iter().position(|(p, _)| *p == at).unwrap_or(0);
        m.sections[i].clone()
    };
    let changed = |at: &str| section(&o, at) != section(&n, at);
    if changed("/passwd/groups") {
        return Some(
            "invalid passwd change(s): ignition Passwd Groups section contains changes".into(),
        );
    }
    if changed("/passwd/users") {
        let users = section(&n, "/passwd/users");
        let users = users.as_array().map_or(&[][..], Vec::as_slice);
        if users
            .iter()
            .any(|u| u.get("name").and_then(Value::as_str) != Some(CORE))
        {
            return Some(
                "invalid passwd change(s): ignition passwd user section contains unsupported \
                 changes: non-core user"
                    .into(),
            );
        }
        if let Some(Value::Object(core)) = users.last()
            && core
                .keys()
                .any(|k| !matches!(k.as_str(), "name" | "sshAuthorizedKeys" | "passwordHash"))
        {
            return Some(
                "invalid passwd change(s): SSH keys and password hash are not reconcilable (of \
                 user core only sshAuthorizedKeys and passwordHash change in place)"
                    .into(),
            );
        }
    }
    if changed("/kernelArguments") {
        return Some("ignition kargs section contains changes".into());
    }
    for (at, what) in [
        ("/storage/disks", "disks"),
        ("/storage/filesystems", "filesystems"),
        ("/storage/raid", "raid"),
        ("/storage/directories", "directories"),
    ] {
        if changed(at) {
            return Some(format!("ignition {what} section contains changes"));
        }
    }
    if changed("/storage/links") && !section(&n, "/storage/links").is_null() {
        return Some("ignition links section contains changes".into());
    }
    if let Value::Array(files) = section(&n, "/storage/files") {
        for f in &files {
            let path = f.get("path").and_then(Value::as_str).unwrap_or_default();
            if f.get("append").is_some_and(|a| !a.is_null()) {
                return Some(format!("ignition file {path} includes append"));
            }
            if path == FORCE_FILE {
                return Some(format!("cannot create {path} via Ignition"));
            }
        }
    }
    if o.fips != n.fips {
        return Some(
            "detected change to FIPS flag; refusing to modify FIPS on a running cluster".into(),
        );
    }
    None
}

/// The extensions of the pool's merged config (`MergeMachineConfigs`).
pub fn extensions<V: Borrow<Value>>(configs: &[V]) -> Vec<String> {
    merged(configs)
        .extensions
        .iter()
        .map(|e| e.as_str().unwrap_or_default().to_string())
        .collect()
}

/// The OS-level changes the daemon reboots for whatever the disruption
/// policy says (`newMachineConfigDiff`: osUpdate, kargs, kernelType,
/// extensions; `calculatePostConfigChangeNodeDisruptionAction`).
pub fn os_changes<V: Borrow<Value>>(old: &[V], new: &[V]) -> Vec<String> {
    let (o, n) = (merged(old), merged(new));
    let mut out = Vec::new();
    if o.kernel_type != n.kernel_type {
        out.push(format!(
            "spec.kernelType: {} -> {} (the MCO reboots for an OS change)",
            o.kernel_type, n.kernel_type
        ));
    }
    let both_empty = |a: &[Value], b: &[Value]| a.is_empty() && b.is_empty();
    if !both_empty(&o.kernel_arguments, &n.kernel_arguments)
        && o.kernel_arguments != n.kernel_arguments
    {
        out.push("spec.kernelArguments change (the MCO reboots for an OS change)".into());
    }
    if !both_empty(&o.extensions, &n.extensions) && o.extensions != n.extensions {
        out.push("spec.extensions change (the MCO reboots for an OS change)".into());
    }
    if o.os_image_url != n.os_image_url {
        out.push("spec.osImageURL changes (the MCO reboots for an OS change)".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name,
               "labels": {"machineconfiguration.openshift.io/role": "worker-gpu"}},
               "spec": spec})
    }
    fn cfg(config: Value) -> Value {
        let mut c = json!({"ignition": {"version": "3.4.0"}});
        if let (Some(o), Value::Object(add)) = (c.as_object_mut(), config) {
            o.extend(add);
        }
        json!({"config": c})
    }

    /// Review 12 (r12b) F12: a spec 2 `filesystem` left on a directory or
    /// link is not served by the MCO: adding it changes nothing (on
    /// 810045b, "directories section contains changes").
    #[test]
    fn a_spec2_filesystem_key_is_no_change() {
        let old = [mc(
            "99-x",
            cfg(
                json!({"storage": {"directories": [{"path": "/etc/d", "mode": 493}],
                "links": [{"path": "/etc/l", "target": "/x"}]}}),
            ),
        )];
        let new = [mc(
            "99-x",
            cfg(json!({"storage": {
                "directories": [{"path": "/etc/d", "mode": 493, "filesystem": "root"}],
                "links": [{"path": "/etc/l", "target": "/x", "filesystem": "root"}]}})),
        )];
        assert_eq!(refusal(&old, &new), None);
    }

    #[test]
    fn the_mcos_checks_in_its_words() {
        let base = vec![mc("50-a", cfg(json!({})))];
        let with = |spec: Value| {
            let mut v = base.clone();
            v.push(mc("99-x", spec));
            v
        };
        let refused = |spec: Value| refusal(&base, &with(spec));
        let user = |u: Value| cfg(json!({"passwd": {"users": [u]}}));
        assert!(refused(json!({"fips": true})).unwrap().contains("FIPS"));
        assert!(
            refused(user(json!({"name": "bob"})))
                .unwrap()
                .contains("non-core user")
        );
        assert!(refused(user(json!({"name": "core", "shell": "/bin/sh"}))).is_some());
        assert_eq!(
            refused(user(json!({"name": "core", "sshAuthorizedKeys": ["k"]}))),
            None
        );
        assert_eq!(refused(user(json!({"name": "core"}))), None);
        let storage = |k: &str, v: Value| cfg(json!({"storage": {k: v}}));
        for (k, v, says) in [
            ("disks", json!([{"device": "/dev/sdb"}]), "disks"),
            ("raid", json!([{"name": "md0"}]), "raid"),
            (
                "filesystems",
                json!([{"device": "/dev/sdb"}]),
                "filesystems",
            ),
            ("directories", json!([{"path": "/etc/d"}]), "directories"),
            (
                "links",
                json!([{"path": "/etc/l", "target": "/a"}]),
                "links",
            ),
        ] {
            assert!(refused(storage(k, v)).unwrap().contains(says), "{k}");
        }
        assert_eq!(refused(storage("luks", json!([{"name": "d"}]))), None);
        assert!(
            refused(storage(
                "files",
                json!([{"path": "/etc/a", "append": [{"source": "data:,x"}]}])
            ))
            .unwrap()
            .contains("append")
        );
        assert_eq!(refused(json!({"kernelType": "realtime"})), None);
        // The same entry moved to another MachineConfig changes nothing.
        let disk = storage("disks", json!([{"device": "/dev/sdb"}]));
        let a = vec![mc("50-a", disk.clone())];
        let b = vec![mc("50-a", cfg(json!({}))), mc("60-b", disk)];
        assert_eq!(refusal(&a, &b), None);
    }

    #[test]
    fn os_changes_reboot() {
        let base = vec![mc("50-a", json!({}))];
        let rt = vec![mc("50-a", json!({"kernelType": "realtime"}))];
        assert_eq!(os_changes(&base, &base), Vec::<String>::new());
        assert!(os_changes(&base, &rt)[0].contains("default -> realtime"));
        let dflt = vec![mc("50-a", json!({"kernelType": "default"}))];
        assert!(os_changes(&base, &dflt).is_empty());
        let ext = vec![mc("50-a", json!({"extensions": ["usbguard"]}))];
        assert_eq!(os_changes(&base, &ext).len(), 1);
    }
}
