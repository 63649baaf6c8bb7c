//! What each `--pool` source gives the fleet: its pointer config (or the
//! Secret holding it), its MachineConfigPool's nodeSelector as requirements,
//! and the env drop-ins its MachineConfigs give the node, merged as the MCO
//! merges them; and the checks of pool names and devices. `super::build`
//! turns these into the pool table and the live config.

use std::path::Path;

use anyhow::{Context, Result, bail};
use base64::Engine;
use serde_json::{Value, json};

use super::{env_dropin_path, role_env_dropin_path};
use crate::cli::render::pointer;
use crate::node::contract::ENV_DROPIN_NAME;
use crate::node::fleet::Requirement;

/// What the sources of one pool gave.
#[derive(Default)]
pub(super) struct Found {
    pub(super) pointer: Option<(Value, String)>,
    pub(super) node_selector: Option<(Value, String)>,
    /// The env drop-in entries of the pool's MachineConfigs (its role's and
    /// worker's), each as a MachineConfig holding only that file, with the
    /// file it came from.
    pub(super) env_configs: Vec<(Value, String)>,
    /// The env drop-in the node gets: (variable, value, source).
    pub(super) env: Vec<(String, String, String)>,
    /// The role's env drop-in the node gets, the same way.
    pub(super) role_env: Vec<(String, String, String)>,
}

pub(super) fn check_pool_name(name: &str) -> Result<()> {
    if matches!(name, "master" | "arbiter") {
        bail!(
            "--pool {name}: a fleet ISO installs workers; control-plane pools are not chosen by hardware"
        );
    }
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && !name.starts_with(['-', '.'])
        && !name.ends_with(['-', '.']);
    if !ok {
        bail!(
            "--pool {name:?}: not a MachineConfigPool name (lower case letters, digits, '-', '.')"
        );
    }
    Ok(())
}

pub(super) fn check_device(dev: &str, flag: &str) -> Result<()> {
    let bad = |c: char| c.is_whitespace() || c.is_control() || c == '"' || c == '\\';
    if !dev.starts_with('/') || dev.len() < 2 || dev.chars().any(bad) {
        bail!(
            "{flag}{}{dev:?}: give the install disk's path, e.g. /dev/nvme0n1 or /dev/disk/by-path/...",
            if flag.ends_with('=') { "" } else { " " }
        );
    }
    Ok(())
}

/// Every document of a source: a directory's *.yaml, *.yml, *.json and
/// *.ign files (sorted), or one file.
pub(super) fn read_source(name: &str, source: &Path, f: &mut Found) -> Result<()> {
    use crate::cli::render::input::{FLEET_POOL, manifest_texts, read_text};
    // A directory's files are read inside it: a link there (a pull
    // request's) is refused, never followed; a FIFO never waited on.
    let texts: Vec<(String, String)> = if source.is_dir() {
        let v = manifest_texts(source, &["yaml", "yml", "json", "ign"], FLEET_POOL)
            .with_context(|| format!("--pool {name}"))?;
        if v.is_empty() {
            bail!(
                "--pool {name}={}: the directory holds no YAML or Ignition files",
                source.display()
            );
        }
        v
    } else {
        vec![read_text(source, FLEET_POOL).with_context(|| format!("--pool {name}"))?]
    };
    let before = (
        f.pointer.is_some(),
        f.node_selector.is_some(),
        f.env_configs.len(),
    );
    for (text, label) in &texts {
        let docs: Vec<Value> = match serde_json::from_str::<Value>(text) {
            Ok(v) => vec![v],
            Err(_) => crate::cli::yaml::kube_yaml_docs(text)
                .with_context(|| format!("reading {label} as YAML or JSON (--pool {name})"))?,
        };
        crate::cli::render::applied::check_documents(&docs, label)
            .with_context(|| format!("--pool {name}"))?;
        for doc in docs {
            read_document(name, doc, label, f)?;
        }
    }
    if (
        f.pointer.is_some(),
        f.node_selector.is_some(),
        f.env_configs.len(),
    ) == before
    {
        bail!(
            "--pool {name}={}: found no pointer config, {name}-user-data-managed Secret, \
             MachineConfigPool {name} or MachineConfig for role {name} there",
            source.display()
        );
    }
    Ok(())
}

fn read_document(name: &str, doc: Value, source: &str, f: &mut Found) -> Result<()> {
    if doc.get("ignition").is_some() {
        return set_pointer(name, doc, source, f);
    }
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    let meta_name = doc.pointer("/metadata/name").and_then(Value::as_str);
    match kind {
        "Secret" => {
            let user_data = match (
                doc.pointer("/data/userData").and_then(Value::as_str),
                doc.pointer("/stringData/userData").and_then(Value::as_str),
            ) {
                (_, Some(s)) => s.as_bytes().to_vec(),
                (Some(b64), None) => base64::engine::general_purpose::STANDARD
                    .decode(b64.trim())
                    .with_context(|| format!("{source}: data.userData is not base64"))?,
                (None, None) => bail!("{source}: the Secret has no userData"),
            };
            let wanted = format!("{name}-user-data-managed");
            if meta_name.is_some_and(|n| n != wanted && n != format!("{name}-user-data")) {
                bail!(
                    "{source}: Secret {} is not pool {name}'s ({wanted})",
                    meta_name.unwrap_or("")
                );
            }
            let pointer: Value = serde_json::from_slice(&user_data)
                .with_context(|| format!("{source}: userData is not an Ignition config"))?;
            set_pointer(name, pointer, source, f)
        }
        "MachineConfigPool" if meta_name == Some(name) => {
            if f.node_selector.is_some() {
                bail!("{source}: a second MachineConfigPool {name}");
            }
            let sel = doc
                .pointer("/spec/nodeSelector")
                .cloned()
                .unwrap_or(Value::Null);
            f.node_selector = Some((sel, source.to_string()));
            Ok(())
        }
        "MachineConfig" => {
            let role = doc
                .pointer("/metadata/labels/machineconfiguration.openshift.io~1role")
                .and_then(Value::as_str);
            if role == Some(name) || role == Some("worker") {
                keep_env_file(&doc, source, f);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn set_pointer(name: &str, pointer: Value, source: &str, f: &mut Found) -> Result<()> {
    let bytes = serde_json::to_vec(&pointer)?;
    crate::cli::iso::check_ignition(&bytes, source)?;
    let merge = pointer
        .pointer("/ignition/config/merge/0/source")
        .or_else(|| pointer.pointer("/ignition/config/replace/source"))
        .and_then(Value::as_str)
        .with_context(|| {
            format!("{source}: not a pointer config (no ignition.config.merge source)")
        })?;
    pointer::check_merge_url_pool(merge, name).with_context(|| source.to_string())?;
    if let Some((_, first)) = &f.pointer {
        bail!("pool {name}: two pointer configs ({first} and {source}); give one");
    }
    f.pointer = Some((pointer, source.to_string()));
    Ok(())
}

/// Keep a MachineConfig's env drop-in entries (the pool's and the
/// role's), if it writes any, for `pool_env`.
fn keep_env_file(mc: &Value, source: &str, f: &mut Found) {
    let files = mc
        .pointer("/spec/config/storage/files")
        .and_then(Value::as_array);
    let (env, role_env) = (env_dropin_path(), role_env_dropin_path());
    let entries: Vec<&Value> = files
        .into_iter()
        .flatten()
        .filter(|file| {
            let path = file.get("path").and_then(Value::as_str);
            path == Some(env.as_str()) || path == Some(role_env.as_str())
        })
        .collect();
    if entries.is_empty() {
        return;
    }
    // Name and labels: the MCO merges by role, then name.
    let only_env = json!({
        "metadata": {
            "name": mc.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
            "labels": mc.pointer("/metadata/labels").cloned().unwrap_or(Value::Null),
        },
        "spec": { "config": { "storage": { "files": entries } } }
    });
    f.env_configs.push((only_env, source.to_string()));
}

/// The env drop-in's variables as the node gets them: the MCO merges a
/// pool's MachineConfigs (worker's by name, then the pool's by name) and a
/// later one's file replaces an earlier one's whole, as `explain
/// --machineconfig` lays them out.
pub(super) fn pool_env(
    configs: &[(Value, String)],
    path: &str,
) -> Result<Vec<(String, String, String)>> {
    let name = path.rsplit('/').next().unwrap_or(ENV_DROPIN_NAME);
    let mcs: Vec<Value> = configs.iter().map(|(mc, _)| mc.clone()).collect();
    let order = crate::cli::render::layout::merge_order(&mcs)
        .with_context(|| format!("merging the MachineConfigs' {name}"))?;
    // The file of the last MachineConfig that writes `path` (it wins), for
    // messages.
    let writes = |i: &usize| {
        mcs[*i]
            .pointer("/spec/config/storage/files")
            .and_then(Value::as_array)
            .is_some_and(|fs| {
                fs.iter()
                    .any(|f| f.get("path").and_then(Value::as_str) == Some(path))
            })
    };
    let Some(last) = order.iter().rev().find(|i| writes(i)) else {
        return Ok(Vec::new());
    };
    let source = &configs[*last].1;
    let layout = crate::cli::render::layout::Layout::merge(mcs)
        .with_context(|| format!("decoding the MachineConfigs' {name}"))?;
    let Some(file) = layout
        .file(path)
        .with_context(|| format!("decoding the MachineConfigs' {name}"))?
    else {
        return Ok(Vec::new());
    };
    let mut env: Vec<(String, (String, String))> = Vec::new();
    for line in String::from_utf8_lossy(&file.contents).lines() {
        let Some(v) = line
            .strip_prefix("Environment=\"")
            .and_then(|l| l.strip_suffix('"'))
        else {
            continue;
        };
        if let Some((k, v)) = v.split_once('=') {
            env.push((k.to_string(), (v.to_string(), source.clone())));
        }
    }
    // A repeated name: its last value, in one sort (not a scan per line).
    crate::node::unit::env::keep_last(&mut env);
    Ok(env.into_iter().map(|(k, (v, s))| (k, v, s)).collect())
}

/// A `metav1.LabelSelector` as requirements.
pub(super) fn requirements(sel: &Value) -> Result<Vec<Requirement>> {
    let mut out = Vec::new();
    let Some(obj) = sel.as_object() else {
        bail!("no nodeSelector (the MCO matches no node with it)");
    };
    for (k, v) in obj
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let v = match v {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => bail!(
                "matchLabels {k}: {other} is not a string (the API server refuses it); quote it"
            ),
        };
        check_label_words(k, std::slice::from_ref(&v))?;
        out.push(Requirement::In(k.clone(), vec![v]));
    }
    for e in obj
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e
            .get("key")
            .and_then(Value::as_str)
            .context("a matchExpression without key")?
            .to_string();
        let values: Vec<String> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| {
                v.as_str().map(str::to_string).with_context(|| {
                    format!(
                        "matchExpression on {key}: the value {v} is not a string (the API server refuses it); quote it"
                    )
                })
            })
            .collect::<Result<_>>()?;
        check_label_words(&key, &values)?;
        let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
        out.push(match op {
            "In" if !values.is_empty() => Requirement::In(key, values),
            "NotIn" if !values.is_empty() => Requirement::NotIn(key, values),
            "Exists" if values.is_empty() => Requirement::Exists(key),
            "DoesNotExist" if values.is_empty() => Requirement::DoesNotExist(key),
            _ => bail!("matchExpression on {key}: operator {op:?} with {} values is not a valid label selector", values.len()),
        });
    }
    if out.is_empty() {
        bail!("an empty nodeSelector (the MCO matches no node with it)");
    }
    if out.iter().any(|r| {
        matches!(r, Requirement::In(k, _) | Requirement::NotIn(k, _) | Requirement::Exists(k) | Requirement::DoesNotExist(k) if k == "kubernetes.io/hostname")
    }) {
        bail!("it selects on kubernetes.io/hostname, which the install cannot know");
    }
    Ok(out)
}

fn check_label_words(key: &str, values: &[String]) -> Result<()> {
    let bad = |s: &str| s.chars().any(|c| c.is_whitespace() || c.is_control()) || s == "\"\"";
    if key.is_empty() || bad(key) || values.iter().any(|v| bad(v)) {
        bail!("{key:?} {values:?} is not a label key and values Kubernetes accepts");
    }
    Ok(())
}
