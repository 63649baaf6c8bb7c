//! Manifests that `kubectl apply` (`-f`, `-k`), kustomize, Argo CD, Flux or
//! the MCO read otherwise than `plan` and `explain --machineconfig` lay
//! them out: refused, naming what differs and the fix. A pull request's
//! MachineConfigs are untrusted input: what these two show must be what
//! the nodes get, or an error.
//!
//! - An object with a top-level `items` is a list to kubectl, which
//!   applies its items and nothing of the object itself.
//! - Annotations that make kustomize, Argo CD or Flux leave an object out
//!   of what they apply.
//! - A MachineConfig the MCO refuses (its pool is then rendered from
//!   nothing of the change: it goes Degraded, its nodes keep the config
//!   before): an Ignition version it does not read, a `kernelType` or an
//!   extension it does not know, one path or unit twice, a file mode past
//!   0777; and one whose `spec.config` the MCO reads otherwise (a key
//!   matched case-insensitively, `ignition_keys`), or that makes Ignition
//!   fetch and merge another config at first boot (`ignition.config`).

use std::collections::BTreeSet;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::ignition_keys;

/// The Ignition spec versions the MCO reads as spec 3 (it converts 3.0.0
/// to 3.4.0 to 3.5.0).
pub const IGNITION_VERSIONS: [&str; 6] = ["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"];

/// `spec.kernelType` values the MCO takes (`ValidateMachineConfig`).
const KERNEL_TYPES: [&str; 4] = ["", "default", "realtime", "64k-pages"];

/// Refuse the documents of one manifest file (`source`) that kubectl,
/// kustomize, Argo CD, Flux or the MCO read otherwise than plan and
/// explain; `kind: List` items are checked as kubectl flattens them.
pub fn check_documents(docs: &[Value], source: &str) -> Result<()> {
    applied_objects(docs, source).map(drop)
}

/// The objects kubectl (`apply -f`, `-k`: kustomize inlines them the
/// same) applies of one manifest file's documents, each checked as
/// `check_documents` checks it: a `*List`'s items in its place, nested
/// lists flattened too, and nothing of the list itself (`items: null`: no
/// object). Documents that are not objects (an empty `---`) give none.
pub fn applied_objects<'a>(docs: &'a [Value], source: &str) -> Result<Vec<&'a Value>> {
    let mut out = Vec::new();
    for doc in docs {
        check_object(doc, source, &mut out)?;
    }
    Ok(out)
}

fn check_object<'a>(doc: &'a Value, source: &str, out: &mut Vec<&'a Value>) -> Result<()> {
    let Some(object) = doc.as_object() else {
        return Ok(());
    };
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = doc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let what = if kind.is_empty() {
        "an object without kind".to_string()
    } else {
        format!("{kind} {name:?}")
    };
    // kubectl's unstructured decoding: an object with `items` is a list.
    let items = object.keys().find(|k| ignition_keys::fold(k) == "ITEMS");
    if let Some(key) = items {
        if kind.ends_with("List") && key == "items" {
            return match &object[key] {
                Value::Array(items) => items.iter().try_for_each(|i| {
                    // kubectl gives an item without kind and apiVersion the
                    // list's (a MachineConfigList's item is a MachineConfig);
                    // a kind that is null, "" or not a string is none to it.
                    let kindless = |o: &serde_json::Map<String, Value>| {
                        o.get("kind")
                            .and_then(Value::as_str)
                            .is_none_or(str::is_empty)
                    };
                    if i.as_object().is_some_and(kindless) {
                        bail!(
                            "{source}: an item of {what} has no kind: kubectl applies it as a {}, \
                             which plan and explain would skip; give it its kind and apiVersion",
                            kind.strip_suffix("List")
                                .filter(|k| !k.is_empty())
                                .unwrap_or("List")
                        );
                    }
                    check_object(i, source, out)
                }),
                Value::Null => Ok(()),
                other => bail!(
                    "{source}: {what}: `items` is {other:.40}, not a list of objects; kubectl \
                     refuses it: give a list"
                ),
            };
        }
        bail!(
            "{source}: {what} has a top-level `{key}`: kubectl (`oc apply -f`, `-k`, and Argo \
             CD, Flux) reads any object with `items` as a list and applies its items, none of \
             the object itself, while plan and explain read the {kind}; remove `{key}`"
        );
    }
    // The kinds these readers read; `plan` reads every kind, and checks
    // each object with [`check_left_out`].
    if matches!(
        kind,
        "MachineConfig" | "MachineConfigPool" | "MachineConfiguration"
    ) {
        check_annotations(doc, source, &what)?;
    }
    if kind == "MachineConfig" {
        check_machineconfig(doc).with_context(|| format!("{source}: MachineConfig {name:?}"))?;
    }
    super::api_objects::check(doc, source)?;
    out.push(doc);
    Ok(())
}

/// Why an annotation makes a GitOps tool leave the object out of what it
/// applies, if it does.
fn left_out_by(key: &str, value: &str) -> Option<&'static str> {
    match key {
        "config.kubernetes.io/local-config" if value != "false" => Some(
            "kustomize (`kubectl apply -k`, Argo CD, Flux) leaves a resource annotated so out \
             of its build",
        ),
        "argocd.argoproj.io/hook" | "helm.sh/hook" => Some(
            "Argo CD runs it as a sync hook (with `Skip`, never applies it; hooks may be \
             deleted after the sync), not as a resource of the application",
        ),
        "kustomize.toolkit.fluxcd.io/reconcile" if value != "enabled" => {
            Some("Flux leaves the object as it is in the cluster, whatever the manifest says")
        }
        "kustomize.toolkit.fluxcd.io/ssa"
            if value.eq_ignore_ascii_case("IfNotPresent")
                || value.eq_ignore_ascii_case("Ignore") =>
        {
            Some(
                "Flux applies it only where the object does not exist yet (IfNotPresent), or \
                 never (Ignore): a change to it does not reach the cluster",
            )
        }
        _ => None,
    }
}

/// Refuse an object of any kind that a GitOps tool leaves out of what it
/// applies (its annotations), where plan reads it as applied: `plan` asks
/// this of every object it reads (review 21 r21b F1: a KubeletConfig
/// annotated `config.kubernetes.io/local-config` dropped out of the build,
/// and Argo CD's prune deleted it, while plan compared its spec alone).
pub fn check_left_out(doc: &Value, source: &str) -> Result<()> {
    let s = |p: &str| doc.pointer(p).and_then(Value::as_str).unwrap_or("");
    let what = match s("/kind") {
        "" => "an object without kind".to_string(),
        kind => format!("{kind} {:?}", s("/metadata/name")),
    };
    check_annotations(doc, source, &what)
}

fn check_annotations(doc: &Value, source: &str, what: &str) -> Result<()> {
    let annotations = doc
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    for (key, value) in annotations.into_iter().flatten() {
        let text = value.as_str().unwrap_or("");
        if let Some(why) = left_out_by(key, text) {
            bail!(
                "{source}: {what} is annotated {key}: {value}: {why}, while plan and explain \
                 read it as applied; remove the annotation (or the file, and it from the \
                 kustomization)"
            );
        }
    }
    Ok(())
}

/// Refuse a MachineConfig the MCO refuses, or whose `spec.config` it
/// reads otherwise than explain and plan.
pub fn check_machineconfig(mc: &Value) -> Result<()> {
    let degraded = "the MCO renders no config for the pool with it (the pool goes Degraded and \
                    its nodes keep, new nodes boot, the config before the change)";
    match mc.pointer("/spec/kernelType") {
        None | Some(Value::Null) => {}
        Some(Value::String(k)) if KERNEL_TYPES.contains(&k.as_str()) => {}
        Some(other) => bail!(
            "spec.kernelType {other} is no kernel type the MCO knows: {degraded}; give default, \
             realtime or 64k-pages, or leave it out"
        ),
    }
    let extensions = mc.pointer("/spec/extensions").and_then(Value::as_array);
    for e in extensions.into_iter().flatten() {
        // One only some releases know is judged by the node's (plan).
        if !e.as_str().is_some_and(super::extensions::known) {
            bail!(
                "spec.extensions: {e} is no extension the MCO knows, in any release: {degraded}; \
                 give one of {}",
                super::extensions::names().join(", ")
            );
        }
    }
    let config = match mc.pointer("/spec/config") {
        None | Some(Value::Null) => return Ok(()),
        Some(c @ Value::Object(_)) => c,
        Some(other) => bail!("spec.config is {other:.40}, not an Ignition config object"),
    };
    let version = config.pointer("/ignition/version");
    if version.is_none() {
        // A key spelt otherwise (`Ignition`, `VERSION`) says more.
        ignition_keys::check(config)?;
    }
    match version {
        Some(Value::String(v)) if IGNITION_VERSIONS.contains(&v.as_str()) => {}
        Some(Value::String(v)) if v.starts_with("2.") => bail!(
            "spec.config.ignition.version {v:?}: the MCO converts spec 2 configs to spec 3 \
             (a file's `append: true`, `filesystem`...), which explain and plan do not model; \
             write it as spec 3 ({})",
            IGNITION_VERSIONS.join(", ")
        ),
        other => bail!(
            "spec.config.ignition.version {}: no Ignition version the MCO reads ({}): {degraded}; \
             give one of those",
            other.map_or("is missing".to_string(), Value::to_string),
            IGNITION_VERSIONS.join(", ")
        ),
    }
    ignition_keys::check(config)?;
    let merge = config.pointer("/ignition/config/merge");
    let merges = merge
        .and_then(Value::as_array)
        .is_some_and(|m| !m.is_empty());
    let replaces = config
        .pointer("/ignition/config/replace/source")
        .is_some_and(|s| !s.is_null());
    if merges || replaces {
        let key = if merges { "merge" } else { "replace" };
        bail!(
            "spec.config.ignition.config.{key}: the MCO serves it as it is, and Ignition fetches \
             the config it names at a new node's first boot and {} this one with it: files and \
             units explain and plan never see; write what it holds into this MachineConfig's \
             storage and systemd, and leave ignition.config out",
            if merges { "merges" } else { "replaces" }
        );
    }
    let version = version.and_then(Value::as_str).unwrap_or("");
    super::ignition_rules::check(config, version)?;
    once_each(config)
}

/// Ignition's refusal of one config writing a path twice (files, links
/// and directories are one list by path), of a unit listed twice and of a
/// unit's drop-in listed twice; and the MCO's of a file mode past 0777.
fn once_each(config: &Value) -> Result<()> {
    let refused = "Ignition refuses the config, so the MCO renders no config for the pool with \
                   it";
    let mut paths = BTreeSet::new();
    for list in ["files", "links", "directories"] {
        let entries = config.pointer(&format!("/storage/{list}"));
        for (i, f) in entries
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = format!("spec.config.storage.{list}[{i}]");
            if let Some(path) = f.get("path").and_then(Value::as_str)
                && !paths.insert(path)
            {
                bail!(
                    "{at}.path {path}: a second entry for one path in one MachineConfig \
                     ({refused}); keep one entry for it"
                );
            }
            // Ignition validates every data URL, of files explain reads
            // or not.
            let sources = f.pointer("/contents/source").into_iter().chain(
                (f.get("append")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten())
                .filter_map(|a| a.get("source")),
            );
            for s in sources.filter_map(Value::as_str) {
                if s.starts_with("data:") {
                    super::unpack::data_url_bytes(s, None).with_context(|| at.clone())?;
                }
            }
            if list == "files"
                && let Some(mode) = f.get("mode").and_then(Value::as_u64)
                && mode > 0o777
            {
                bail!(
                    "{at}.mode {mode:#o}: the MCO refuses setuid, setgid and sticky bits \
                     (a mode past 0777); give the mode without them"
                );
            }
        }
    }
    let mut units = BTreeSet::new();
    let list = config.pointer("/systemd/units").and_then(Value::as_array);
    for (i, u) in list.into_iter().flatten().enumerate() {
        let Some(name) = u.get("name").and_then(Value::as_str) else {
            continue;
        };
        if !units.insert(name) {
            bail!(
                "spec.config.systemd.units[{i}].name {name}: listed twice in one MachineConfig \
                 ({refused}); put its drop-ins in one entry"
            );
        }
        let mut dropins = BTreeSet::new();
        let list = u.get("dropins").and_then(Value::as_array);
        for (j, d) in list.into_iter().flatten().enumerate() {
            if let Some(d) = d.get("name").and_then(Value::as_str)
                && !dropins.insert(d)
            {
                bail!(
                    "spec.config.systemd.units[{i}].dropins[{j}].name {d}: listed twice for \
                     {name} ({refused}); keep one"
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(spec: Value) -> Value {
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
               "metadata": {"name": "51-worker-gpu-taints",
                            "labels": {"machineconfiguration.openshift.io/role": "worker-gpu"}},
               "spec": spec})
    }

    fn env_config() -> Value {
        json!({"ignition": {"version": "3.4.0"},
               "storage": {"files": [{"path": "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf",
                   "mode": 420, "contents": {"source": "data:,x"}}]}})
    }

    fn err(doc: Value) -> String {
        format!("{:#}", check_documents(&[doc], "pr/x.yaml").unwrap_err())
    }

    #[test]
    fn ours_pass() {
        let list = json!({"kind": "List", "items": [mc(json!({"config": env_config()}))]});
        check_documents(
            &[mc(json!({"config": env_config()})), list, Value::Null],
            "x",
        )
        .unwrap();
        check_documents(
            &[mc(
                json!({"kernelType": "realtime", "extensions": ["usbguard"]}),
            )],
            "x",
        )
        .unwrap();
    }

    /// kubectl's and kustomize's flattening (review 10 r10c F4): a
    /// `*List`'s items, nested lists too, in order; nothing of the list;
    /// a `*List` kind without `items` is an object.
    #[test]
    fn lists_give_their_items() {
        let a = mc(json!({"config": env_config()}));
        let mut b = a.clone();
        b["metadata"]["name"] = json!("b");
        let pool = json!({"apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool", "metadata": {"name": "p"},
            "spec": {"machineConfigSelector": {"matchLabels":
                {"machineconfiguration.openshift.io/role": "worker"}}}});
        // Review 14 r14b F1: an item without kind is the list's kind.
        let kindless = json!({"kind": "MachineConfigList", "apiVersion": "machineconfiguration.openshift.io/v1",
            "items": [{"metadata": {"name": "60-x"}, "spec": {}}]});
        assert!(applied_objects(std::slice::from_ref(&kindless), "f.yaml").is_err());
        // Review 15 r15b F3: a null, empty or non-string kind is none.
        for kind in [Value::Null, json!(""), json!(0)] {
            let item = json!({"kind": kind, "metadata": {"name": "60-x"}, "spec": {}});
            let list = json!({"kind": "MachineConfigList", "apiVersion": "machineconfiguration.openshift.io/v1",
                "items": [item]});
            assert!(
                applied_objects(std::slice::from_ref(&list), "f.yaml").is_err(),
                "{kind}"
            );
        }
        let no_items = json!({"kind": "FooList", "metadata": {"name": "f"}});
        let docs = [
            json!({"kind": "List", "items": [a, {"kind": "MachineConfigList", "items": [b]}]}),
            json!({"kind": "List", "items": null}),
            Value::Null,
            pool.clone(),
            no_items.clone(),
        ];
        let got = applied_objects(&docs, "x").unwrap();
        assert_eq!(got, [&docs[0]["items"][0], &b, &pool, &no_items]);
    }

    /// Review 9, F4: `items: []` (or `items:` alone) on a MachineConfig:
    /// `kubectl apply -f`/`-k` applied nothing of it (exit 0) while plan
    /// counted its taint.
    #[test]
    fn a_top_level_items_is_a_list_to_kubectl() {
        for items in [json!([]), Value::Null, json!([{"kind": "MachineConfig"}])] {
            let mut doc = mc(json!({"config": env_config()}));
            doc["items"] = items;
            let e = err(doc);
            assert!(
                e.starts_with(
                    "pr/x.yaml: MachineConfig \"51-worker-gpu-taints\" has a top-level `items`"
                ) && e.ends_with("remove `items`"),
                "{e}"
            );
        }
        let mut doc = json!({"kind": "MachineConfigPool", "metadata": {"name": "p"}});
        doc["Items"] = json!([]);
        assert!(err(doc).contains("top-level `Items`"));
        // Inside a list, as kubectl flattens nested lists.
        let mut inner = mc(json!({}));
        inner["items"] = json!([]);
        let e = err(json!({"kind": "List", "items": [inner]}));
        assert!(e.contains("has a top-level `items`"), "{e}");
    }

    /// Review 9, F6: kustomize drops `local-config` resources (checked
    /// with `kubectl kustomize`); Argo CD hooks and Flux's disabled
    /// reconciliation the same class.
    #[test]
    fn annotations_that_leave_an_object_unapplied() {
        for (key, value, says) in [
            ("config.kubernetes.io/local-config", "true", "kustomize"),
            ("argocd.argoproj.io/hook", "Skip", "Argo CD"),
            ("argocd.argoproj.io/hook", "PreSync", "Argo CD"),
            ("helm.sh/hook", "pre-install", "Argo CD"),
            ("kustomize.toolkit.fluxcd.io/reconcile", "disabled", "Flux"),
            ("kustomize.toolkit.fluxcd.io/ssa", "IfNotPresent", "Flux"),
        ] {
            for kind in ["MachineConfig", "MachineConfigPool"] {
                let mut doc = mc(json!({"config": env_config()}));
                doc["kind"] = json!(kind);
                doc["metadata"]["annotations"] = json!({ key: value });
                let e = err(doc);
                assert!(
                    e.contains(&format!(
                        "{kind} \"51-worker-gpu-taints\" is annotated {key}: \"{value}\""
                    )) && e.contains(says)
                        && e.contains("remove the annotation"),
                    "{e}"
                );
            }
        }
        let mut doc = mc(json!({}));
        doc["metadata"]["annotations"] = json!({"kustomize.toolkit.fluxcd.io/reconcile": "enabled",
            "kustomize.toolkit.fluxcd.io/ssa": "Merge", "kubelet-labeler/rendered-by": "x"});
        check_documents(&[doc], "x").unwrap();
    }

    /// Review 9, F5: `ignition.config.merge` was served by the MCO and
    /// merged by real Ignition at first boot (a drop-in emptying the
    /// taints); explain and plan never read it.
    #[test]
    fn a_config_ignition_merges_or_replaces_is_refused() {
        for (key, value) in [
            ("merge", json!([{"source": "data:,%7B%7D"}])),
            ("replace", json!({"source": "https://example.com/x.ign"})),
        ] {
            let mut config = env_config();
            config["ignition"]["config"] = json!({ key: value });
            let e = err(mc(json!({ "config": config })));
            assert!(
                e.contains(&format!(
                    "spec.config.ignition.config.{key}: the MCO serves it"
                )) && e.contains("leave ignition.config out"),
                "{e}"
            );
        }
        let mut config = env_config();
        config["ignition"]["config"] = json!({"merge": [], "replace": {"source": null}});
        check_documents(&[mc(json!({ "config": config }))], "x").unwrap();
    }

    /// Review 9, F8: what the MCO oracle refused ("unknown version",
    /// "kernelType=bogus is invalid", "invalid extensions found", a
    /// duplicate entry) while plan showed the taint.
    #[test]
    fn what_the_mco_refuses_is_refused() {
        let with_version = |v: Value| {
            let mut c = env_config();
            c["ignition"]["version"] = v;
            mc(json!({ "config": c }))
        };
        for (doc, needle) in [
            (
                with_version(json!("3.9.0")),
                "version \"3.9.0\": no Ignition version the MCO reads",
            ),
            (with_version(json!(3)), "version 3: no Ignition version"),
            (with_version(json!("2.2.0")), "spec 2"),
            (mc(json!({"config": {"storage": {}}})), "version is missing"),
            (
                mc(json!({"kernelType": "bogus"})),
                "spec.kernelType \"bogus\" is no kernel type",
            ),
            (
                mc(json!({"extensions": ["bogus-ext"]})),
                "spec.extensions: \"bogus-ext\" is no extension",
            ),
        ] {
            let e = err(doc);
            assert!(e.contains(needle), "{e}");
        }
        let mut twice = env_config();
        let file = twice["storage"]["files"][0].clone();
        twice["storage"]["files"].as_array_mut().unwrap().push(file);
        assert!(err(mc(json!({ "config": twice }))).contains("files[1].path"));
        let mut link = env_config();
        link["storage"]["links"] = json!([{"path": "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf", "target": "/dev/null"}]);
        assert!(err(mc(json!({ "config": link }))).contains("links[0].path"));
        let mut units = env_config();
        units["systemd"] = json!({"units": [{"name": "k.service", "dropins": [{"name": "a.conf"}, {"name": "a.conf"}]}]});
        assert!(err(mc(json!({ "config": units }))).contains("dropins[1].name a.conf"));
        units["systemd"] = json!({"units": [{"name": "k.service"}, {"name": "k.service"}]});
        assert!(err(mc(json!({ "config": units }))).contains("units[1].name k.service"));
        let mut setuid = env_config();
        setuid["storage"]["files"][0]["mode"] = json!(0o4755);
        assert!(err(mc(json!({ "config": setuid }))).contains("mode 0o4755"));
        // A key spelt otherwise is named, before any version complaint.
        let e = err(mc(json!({"config": {"Ignition": {"version": "3.4.0"}}})));
        assert!(e.contains("\"Ignition\": the MCO"), "{e}");
    }
}
