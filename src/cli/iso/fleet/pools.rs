//! What each `--pool` source gives the fleet: its pointer config (or the
//! Secret holding it), its MachineConfigPool's nodeSelector as requirements,
//! and the env drop-ins its MachineConfigs give the node, merged as the MCO
//! merges them; and the checks of pool names and devices. `super::build`
//! turns these into the pool table and the live config.

use std::path::Path;

use anyhow::{Context, Result, bail};
use base64::Engine;
use serde_json::{Value, json};

use super::inputs::{Judged, KUBELET_ENV_FILES, Read, check_inputs, clean_path, storage_entries};
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
    /// Every MachineConfig of the pool's sources: (role, "" without one,
    /// MachineConfig, source). The MCO gives one to every pool selecting
    /// its role, whichever directory it came in.
    pub(super) machine_configs: Vec<(String, Value, String)>,
    /// The roles the pool's MachineConfigPool selects MachineConfigs by.
    pub(super) roles: Option<Vec<String>>,
    /// The MachineConfigs the pool's nodes get (its roles'), for
    /// `check_wrapper_runs`.
    pub(super) configs: Vec<Value>,
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
    let own = |f: &Found| {
        f.machine_configs
            .iter()
            .filter(|(role, _, _)| role == name || role == "worker")
            .count()
    };
    let before = (f.pointer.is_some(), f.node_selector.is_some(), own(f));
    let mut each = |text: String, label: String| -> Result<()> {
        let docs: Vec<Value> = match serde_json::from_str::<Value>(&text) {
            Ok(v) => vec![v],
            Err(_) => crate::cli::yaml::kube_yaml_docs(&text)
                .with_context(|| format!("reading {label} as YAML or JSON (--pool {name})"))?,
        };
        drop(text);
        // What kubectl applies of the file: a `kind: List`'s items (`oc get
        // mc -o yaml`) are read as the objects they are.
        let objects = crate::cli::render::applied::applied_objects(&docs, &label)
            .with_context(|| format!("--pool {name}"))?;
        for doc in objects {
            read_document(name, doc.clone(), &label, f)?;
        }
        Ok(())
    };
    // A directory's files are read inside it, each read as it comes (one
    // raw text held at a time): a link there (a pull request's) is
    // refused, never followed; a FIFO never waited on.
    if source.is_dir() {
        let count = manifest_texts(
            source,
            &["yaml", "yml", "json", "ign"],
            FLEET_POOL,
            &mut each,
        )
        .with_context(|| format!("--pool {name}"))?;
        if count == 0 {
            bail!(
                "--pool {name}={}: the directory holds no YAML or Ignition files",
                source.display()
            );
        }
    } else {
        let (text, label) =
            read_text(source, FLEET_POOL).with_context(|| format!("--pool {name}"))?;
        each(text, label)?;
    }
    if (f.pointer.is_some(), f.node_selector.is_some(), own(f)) == before {
        bail!(
            "--pool {name}={}: found no pointer config, {name}-user-data-managed Secret, \
             MachineConfigPool {name} or MachineConfig for role {name} there",
            source.display()
        );
    }
    Ok(())
}

/// One object `kubectl apply` applies from pool `name`'s sources. What
/// the fleet reads: the pointer (a pointer Ignition file or the pool's
/// Secret), the pool's MachineConfigPool and every MachineConfig (checked
/// in `pool_configs` for each pool selecting its role, and when none does).
/// Refused: a MachineConfigPool of another pool (kubectl applies it over
/// that pool's own, the last applied wins, and its selectors are then what
/// the fleet did not read) and a Node (kubelet sets its labels and taints
/// only on a Node it creates: a machine registering under an applied
/// Node's name keeps that object's). Taken without effect on the fleet:
/// `KubeletConfig` (the MCO renders kubelet's config file and a log-level
/// drop-in from it: `registerWithTaints` there only adds taints, which the
/// wrapper merges into its flag), `ContainerRuntimeConfig` (CRI-O's
/// configuration) and the few kinds that change no fact; every other kind
/// is refused, as operators render some into the pool's MachineConfigs.
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
        "MachineConfigPool" if meta_name != Some(name) => {
            let other = meta_name.unwrap_or_default();
            bail!(
                "{source}: MachineConfigPool {other:?} in pool {name}'s sources: applying them \
                 replaces pool {other:?}'s own (whichever is applied last is the cluster's, and \
                 it may select other MachineConfigs and nodes), while the fleet reads each pool \
                 only from its own sources; remove it, and its kustomization entry, here: a \
                 pool's MachineConfigPool belongs in its own directory (--pool {other}=DIR)"
            )
        }
        "Node" => bail!(
            "{source}: Node {:?} in pool {name}'s sources: kubectl applies it (creating it \
             when no machine registered under its name yet), and a machine registering under \
             that name keeps its labels and taints, never those of its pool's rules (kubelet \
             sets them only on a Node it creates); remove it",
            meta_name.unwrap_or_default()
        ),
        "MachineConfigPool" => {
            if f.node_selector.is_some() {
                bail!("{source}: a second MachineConfigPool {name}");
            }
            // The Machine Config Server serves a joining machine of a paused
            // pool the config rendered before the pause, not these sources.
            if doc.pointer("/spec/paused").and_then(Value::as_bool) == Some(true) {
                bail!(
                    "{source}: MachineConfigPool {name} is paused (spec.paused: true): the \
                     Machine Config Server serves machines joining it the config rendered \
                     before the pause, not what its sources say; build the fleet ISO once the \
                     pool is unpaused"
                );
            }
            let sel = doc
                .pointer("/spec/nodeSelector")
                .cloned()
                .unwrap_or(Value::Null);
            f.roles = Some(config_roles(name, &doc, source)?);
            f.node_selector = Some((sel, source.to_string()));
            Ok(())
        }
        "MachineConfig" => {
            crate::cli::render::api_objects::check_not_mco_s_own(
                meta_name.unwrap_or_default(),
                source,
            )?;
            // Without a role label: "" (no pool selects it).
            let role = doc
                .pointer("/metadata/labels/machineconfiguration.openshift.io~1role")
                .and_then(Value::as_str)
                .unwrap_or_default();
            f.machine_configs
                .push((role.to_string(), doc.clone(), source.to_string()));
            Ok(())
        }
        // What changes no fact the install reads: kubelet's and CRI-O's
        // configuration, the disruption policy, NFD's rules (the same the
        // pools carry), kustomize's own files and plain config objects.
        // By API group too: Flux's `Kustomization` applies a path of its own.
        "" => Ok(()),
        k if TAKEN_KINDS.iter().any(|(kind, group)| {
            *kind == k
                && doc
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.rsplit_once('/').map_or("", |(g, _)| g) == *group)
        }) =>
        {
            Ok(())
        }
        other => bail!(
            "{source}: {other} {:?} ({}) in pool {name}'s sources: the fleet does not know what it \
             changes on the pool's nodes (the MCO and operators render kinds such as \
             MachineOSConfig, PerformanceProfile and Tuned into the pool's config: an OS \
             image, kernel arguments), so a machine could register on other facts than the \
             install chose its pool by; leave it out of the pool's sources and apply it once \
             the nodes have joined",
            meta_name.unwrap_or_default(),
            doc.get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("no apiVersion")
        ),
    }
}

/// The other kinds the fleet takes, by kind and API group ("": core).
const TAKEN_KINDS: [(&str, &str); 8] = [
    ("KubeletConfig", "machineconfiguration.openshift.io"),
    (
        "ContainerRuntimeConfig",
        "machineconfiguration.openshift.io",
    ),
    ("MachineConfiguration", "operator.openshift.io"),
    ("NodeFeatureRule", "nfd.k8s-sigs.io"),
    ("Kustomization", "kustomize.config.k8s.io"),
    ("Component", "kustomize.config.k8s.io"),
    ("ConfigMap", ""),
    ("Namespace", ""),
];

fn set_pointer(name: &str, pointer: Value, source: &str, f: &mut Found) -> Result<()> {
    let bytes = serde_json::to_vec(&pointer)?;
    crate::cli::iso::check_ignition(&bytes, source)?;
    // Ignition's Go reader matches keys case-insensitively, the later one
    // winning: a `Source` beside `source` would be the URL fetched.
    crate::cli::render::ignition_keys::check_named(&pointer, "pointer")
        .with_context(|| format!("{source}: pool {name}'s pointer config"))?;
    check_pointer_only(&pointer).with_context(|| {
        format!(
            "{source}: pool {name}'s pointer config carries more than a pointer; \
             the install writes it as the machine's first config, where Ignition applies \
             it whole and the MCO never undoes it. Give a pointer with one \
             ignition.config.merge source and its CA (as `oc get secret -n \
             openshift-machine-api {name}-user-data-managed` or `render ignition` give), \
             and put the rest in the pool's MachineConfigs"
        )
    })?;
    let merge = merge_source(&pointer).with_context(|| {
        format!("{source}: not a pointer config (no ignition.config.merge source)")
    })?;
    pointer::check_pool_url(merge, name, &format!("{source}: pool {name}'s merge URL"))?;
    if let Some((_, first)) = &f.pointer {
        bail!("pool {name}: two pointer configs ({first} and {source}); give one");
    }
    f.pointer = Some((pointer, source.to_string()));
    Ok(())
}

/// The URL a pointer config merges (or replaces) its config from.
pub(super) fn merge_source(pointer: &Value) -> Option<&str> {
    pointer
        .pointer("/ignition/config/merge/0/source")
        .or_else(|| pointer.pointer("/ignition/config/replace/source"))
        .and_then(Value::as_str)
}

/// A pointer config as the MCO and `render ignition` write it: only
/// `ignition` (version, one merge source or a replace, the CA, timeouts,
/// proxy). Anything else (files, units, users, a second merge) Ignition
/// applies at first boot, unseen by the fleet and never undone by the MCO.
fn check_pointer_only(pointer: &Value) -> Result<()> {
    let keys = |v: &Value, at: &str, allowed: &[&str]| -> Result<()> {
        let Some(obj) = v.as_object() else {
            bail!("{} is not an object", at.trim_end_matches('.'));
        };
        // Go's encoding/json writes empty structs (`"storage":{}`).
        if let Some(k) = obj
            .iter()
            .find(|(k, v)| !allowed.contains(&k.as_str()) && !is_empty(v))
            .map(|(k, _)| k)
        {
            bail!("it has {at}{k}");
        }
        Ok(())
    };
    keys(pointer, "", &["ignition"])?;
    let ign = &pointer["ignition"];
    keys(
        ign,
        "ignition.",
        &["version", "config", "security", "timeouts", "proxy"],
    )?;
    if let Some(config) = ign.get("config") {
        keys(config, "ignition.config.", &["merge", "replace"])?;
        let merges = config
            .get("merge")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let replace = config
            .get("replace")
            .is_some_and(|r| r.get("source").is_some_and(|s| !s.is_null()));
        if merges + usize::from(replace) != 1 {
            bail!(
                "it has {merges} ignition.config.merge entries{}: Ignition applies every one, \
                 a later one's files over the earlier's",
                if replace { " and a replace" } else { "" }
            );
        }
        // Ignition's replace drops the config it is in, and with it the
        // record of the pool the install chose (the node's pool check).
        if replace {
            bail!(
                "it fetches the pool's config with ignition.config.replace, which drops the \
                 destination config's own files (the record of the pool the machine was \
                 installed for); use ignition.config.merge, as the MCO's pointer configs do"
            );
        }
    }
    if let Some(sec) = ign.get("security") {
        keys(sec, "ignition.security.", &["tls"])?;
        if let Some(tls) = sec.get("tls") {
            keys(tls, "ignition.security.tls.", &["certificateAuthorities"])?;
        }
    }
    Ok(())
}

/// null, or an object or array of nothing but empty values.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(o) => o.values().all(is_empty),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// The roles a MachineConfigPool takes MachineConfigs of: its
/// machineConfigSelector must select its own role (and at most worker's
/// besides), as `render machineconfig` writes it; any other the fleet
/// cannot read as the MCO does.
fn config_roles(name: &str, mcp: &Value, source: &str) -> Result<Vec<String>> {
    const ROLE: &str = "machineconfiguration.openshift.io/role";
    let sel = mcp.pointer("/spec/machineConfigSelector");
    let roles: Option<Vec<String>> = sel.and_then(|sel| {
        let obj = sel.as_object()?;
        let labels = obj.get("matchLabels").and_then(Value::as_object);
        let exprs = obj.get("matchExpressions").and_then(Value::as_array);
        let known = obj
            .keys()
            .all(|k| k == "matchLabels" || k == "matchExpressions");
        let labels = labels.filter(|l| !l.is_empty());
        let exprs = exprs.filter(|e| !e.is_empty());
        match (labels, exprs) {
            (Some(l), None) if known && l.len() == 1 => {
                Some(vec![l.get(ROLE)?.as_str()?.to_string()])
            }
            (None, Some(e)) if known && e.len() == 1 => {
                let e = e[0].as_object()?;
                let plain = e
                    .keys()
                    .all(|k| ["key", "operator", "values"].contains(&k.as_str()));
                if !plain || e.get("key")?.as_str()? != ROLE || e.get("operator")?.as_str()? != "In"
                {
                    return None;
                }
                e.get("values")?
                    .as_array()?
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect()
            }
            _ => None,
        }
    });
    match roles {
        Some(r) if r.iter().any(|r| r == name) && r.iter().all(|r| r == name || r == "worker") => {
            Ok(r)
        }
        _ => bail!(
            "{source}: MachineConfigPool {name}'s machineConfigSelector {} does not select \
             the MachineConfigs of role {name} (and at most worker's besides), so the fleet cannot tell \
             which reach its nodes; select them as `render machineconfig --pool {name}` \
             writes it: matchExpressions [{{key: {ROLE}, operator: In, values: [worker, {name}]}}]",
            sel.map_or_else(|| "(none)".to_string(), Value::to_string)
        ),
    }
}

/// Each pool's MachineConfigs from every source (the MCO gives a
/// MachineConfig to every pool selecting its role, whichever directory it
/// came in): kubelet units and drop-ins other than ours are refused, and
/// the env drop-ins kept for `pool_env`.
pub(super) fn pool_configs(found: &mut std::collections::BTreeMap<String, Found>) -> Result<()> {
    let mut all: Vec<(String, Value, String)> = Vec::new();
    // Each name's entry in `all`: one lookup a MachineConfig, not a scan.
    let mut by_name: std::collections::BTreeMap<Option<String>, usize> = Default::default();
    for f in found.values() {
        for (role, mc, source) in &f.machine_configs {
            let mc_name = mc.pointer("/metadata/name").and_then(Value::as_str);
            match by_name.get(&mc_name.map(str::to_string)).map(|&i| &all[i]) {
                Some((_, m, _)) if m == mc => {}
                Some((_, _, first)) => bail!(
                    "{first} and {source} both hold MachineConfig {} and they differ; the \
                     cluster holds one: give it once",
                    mc_name.unwrap_or("")
                ),
                None => {
                    by_name.insert(mc_name.map(str::to_string), all.len());
                    all.push((role.clone(), mc.clone(), source.clone()));
                }
            }
        }
    }
    let mut selected: Vec<String> = Vec::new();
    // What the checks read of each MachineConfig's files, read once.
    let judged = Judged::default();
    for (name, f) in found.iter_mut() {
        let roles = f.roles.clone().unwrap_or_else(|| {
            let mut r = vec!["worker".to_string()];
            if name != "worker" {
                r.push(name.clone());
            }
            r
        });
        for (role, mc, source) in &all {
            if roles.contains(role) {
                check_kubelet_files(mc, source, Reach::Pool(name), &judged)?;
                check_inputs(mc, source, name, &judged)?;
                keep_env_file(mc, source, f);
                f.configs.push(mc.clone());
            }
        }
        selected.extend(roles);
    }
    // A MachineConfig no given pool selects reaches the nodes of whatever
    // pool selects its role in the cluster (a MachineConfigPool applied
    // from elsewhere, or changed later): one that changes kubelet's unit
    // or variables, or writes our env drop-ins, would make nodes register
    // otherwise than the fleet shows.
    for (role, mc, source) in &all {
        if !selected.contains(role) {
            check_kubelet_files(mc, source, Reach::Unselected(role), &judged)?;
        }
    }
    Ok(())
}

/// The pool's MachineConfigs laid out as the MCO merges them, judged as
/// `plan` and `explain` judge a pool: where our drop-ins give its nodes
/// labels, taints or rules and the sources carry the wrapper (or the
/// generator), the wrapper must run at kubelet's start. A
/// later MachineConfig that leaves the wrapper without its exec bits, puts
/// another file or a link in its place, or replaces, edits or hides the
/// generator (or the drop-in it writes) makes the installed machine's
/// kubelet register without the pool's labels and taints, unfenced.
pub(super) fn check_wrapper_runs(name: &str, configs: Vec<Value>) -> Result<()> {
    if configs.is_empty() {
        return Ok(());
    }
    let tree = crate::cli::plan::pool_tree::lay_out(configs)
        .with_context(|| format!("pool {name}: its MachineConfigs as the MCO merges them"))?;
    // Sources without the wrapper's MachineConfig (applied from elsewhere)
    // say nothing of it; what they carry of it must run.
    if !tree.ships_wrapper() {
        return Ok(());
    }
    if let Some(why) = tree.wrapper_off() {
        bail!(
            "pool {name}: {why} (its MachineConfigs merged as the MCO merges them, as \
             explain --machineconfig lays them out): a machine installed into it would \
             register without the pool's labels and taints, unfenced; leave the \
             MachineConfig that changes the wrapper or the generator out of the pool's \
             sources, or render the pool again"
        );
    }
    Ok(())
}

/// Whose nodes a MachineConfig reaches, for `check_kubelet_files`.
#[derive(Clone, Copy)]
enum Reach<'a> {
    /// A pool given to the fleet selects its role.
    Pool(&'a str),
    /// No pool given selects its role (""; no role label).
    Unselected(&'a str),
}

/// Refuse a file, link or unit of a MachineConfig that changes kubelet's
/// unit other than our drop-ins: systemd applies it, the fleet's reading of
/// the env drop-ins would not.
fn check_kubelet_files(mc: &Value, source: &str, reach: Reach, judged: &Judged) -> Result<()> {
    use crate::node::contract::ROLE_ENV_DROPIN_NAME;
    let mc_name = mc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ours = [
        ENV_DROPIN_NAME,
        ROLE_ENV_DROPIN_NAME,
        crate::cli::render::sync_units::WANTS_DROPIN_NAME,
    ]
    .map(|n| format!("/etc/systemd/system/kubelet.service.d/{n}"));
    let refuse = |what: &str| -> Result<()> {
        match reach {
            Reach::Pool(pool) => bail!(
                "{source}: MachineConfig {mc_name} (reaching pool {pool}'s nodes) {what}: \
                 systemd applies it to kubelet, and the fleet cannot evaluate the labels and \
                 taints the node registers with as it will; move its settings into the pool's \
                 rendered drop-ins (render machineconfig --pool {pool}) or leave it out of the \
                 pool's sources"
            ),
            Reach::Unselected(role) => bail!(
                "{source}: MachineConfig {mc_name} ({}) {what}: kubectl applies it with the \
                 pool's sources, and the MCO gives it to the nodes of every pool selecting it, \
                 pools the fleet did not read, whose nodes then register otherwise than the \
                 fleet shows; leave it out of the pool's sources (apply it from a directory of \
                 its own), or give the pool it is for with --pool NAME=DIR",
                if role.is_empty() {
                    "no machineconfiguration.openshift.io/role label, which the pools given \
                     select by"
                        .to_string()
                } else {
                    format!("role {role}, which no --pool given selects")
                },
            ),
        }
    };
    for (kind, path) in storage_entries(mc) {
        let clean = clean_path(path);
        if clean == ours[2]
            && kind == "files"
            && !wants_only(mc, &clean, judged).context(source.to_string())?
        {
            refuse(&format!(
                "writes {path} with more than the sync's Wants= render writes"
            ))?;
        }
        if ours[..2].contains(&clean) && matches!(reach, Reach::Unselected(_)) {
            refuse(&format!("writes {path}, kubelet-labeler's env drop-in"))?;
        }
        if ours.contains(&clean) && kind == "files" {
            continue;
        }
        if kind == "links" && moves_unit_dir(&clean) {
            refuse(&format!("links {path}, a systemd directory, elsewhere"))?;
        }
        if KUBELET_ENV_FILES.contains(&clean.as_str())
            && (kind == "links"
                || sets_our_variables(mc, &clean, judged).context(source.to_string())?)
        {
            refuse(&format!(
                "writes {path}, which kubelet.service reads with EnvironmentFile= (it \
                     overrides the drop-ins' Environment=), {}",
                if kind == "links" {
                    "as a link"
                } else {
                    "with variables of ours"
                }
            ))?;
        }
        if touches_kubelet_unit(&clean) {
            refuse(&format!(
                "writes {path}, another kubelet.service unit or drop-in"
            ))?;
        }
    }
    for unit in mc
        .pointer("/spec/config/systemd/units")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let unit_name = unit.get("name").and_then(Value::as_str).unwrap_or("");
        if unit_name == "kubelet.service" || unit_name == "service.d" {
            refuse(&format!(
                "has systemd unit {unit_name} (its contents or drop-ins)"
            ))?;
        }
    }
    Ok(())
}

/// Whether `mc`'s file at `path` names one of the variables the wrapper
/// reads (or cannot be read to tell).
fn sets_our_variables(mc: &Value, path: &str, judged: &Judged) -> Result<bool> {
    judged.file(mc, path, "our variables", |read| match read {
        Read::Nothing => false,
        Read::Unreadable => true,
        Read::Contents(c) => {
            let text = String::from_utf8_lossy(&c);
            text.contains("KUBELET_LABELER_") || text.contains("FIRST_BOOT_ONLY_KUBELET_NODE_")
        }
    })
}

/// Whether the sync's kubelet drop-in in `mc` is as render writes it (its
/// comment aside): `[Unit]` and the sync's `Wants=` only.
fn wants_only(mc: &Value, path: &str, judged: &Judged) -> Result<bool> {
    use crate::cli::render::sync_units::{SYNC_PATH, SYNC_SERVICE};
    let wants = format!("Wants={SYNC_SERVICE} {SYNC_PATH}");
    judged.file(mc, path, "wants only", |read| {
        let Read::Contents(c) = read else {
            return false;
        };
        std::str::from_utf8(&c).is_ok_and(|text| {
            text.split('\n').all(|l| {
                l.is_empty()
                    || l == "[Unit]"
                    || l == wants
                    || (l.starts_with('#') && !l.ends_with('\\') && !l.contains('\r'))
            })
        })
    })
}

/// Whether a node path is kubelet.service's unit file, drop-in directory or
/// one of its drop-ins, or a drop-in of every service, in a systemd unit
/// directory, or the manager's own configuration (DefaultEnvironment=).
fn touches_kubelet_unit(path: &str) -> bool {
    if crate::cli::render::merge_inputs::manager_config_path(path).is_some() {
        return true;
    }
    crate::node::unit::search::SYSTEM_UNIT_PATH
        .iter()
        .any(|dir| {
            path.strip_prefix(dir)
                .and_then(|r| r.strip_prefix('/'))
                .is_some_and(|rest| {
                    rest.starts_with("kubelet.service") || rest.starts_with("service.d")
                })
        })
}

/// Whether a link at `path` would move a systemd unit directory (or the
/// manager's configuration) elsewhere.
fn moves_unit_dir(path: &str) -> bool {
    crate::node::unit::search::SYSTEM_UNIT_PATH
        .iter()
        .chain(&["/etc/systemd/system.conf"])
        .any(|dir| *dir == path || dir.starts_with(&format!("{path}/")))
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
    // What plan and explain refuse as merged otherwise by the MCO (a name
    // twice, a worker config before the templates, /run paths).
    crate::cli::render::merge_inputs::check(&mcs)
        .with_context(|| format!("merging the MachineConfigs' {name}"))?;
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
    let text = std::str::from_utf8(&file.contents)
        .ok()
        .with_context(|| format!("{source}: {path} is not UTF-8 text; render it again"))?;
    let mut env: Vec<(String, (String, String))> = Vec::new();
    for (n, line) in text.split('\n').enumerate() {
        match canonical_line(line) {
            Some(Some((k, v))) => env.push((k.to_string(), (v.to_string(), source.clone()))),
            Some(None) => {}
            None => bail!(
                "{source}: line {} of {path} ({line:?}) is not in the form `render \
                 machineconfig` writes (`[Service]`, `# ...` or `Environment=\"NAME=value\"` \
                 without quotes, backslashes or % in the value): systemd may read it otherwise \
                 than the fleet; render the pool again instead of editing the drop-in",
                n + 1
            ),
        }
    }
    // A repeated name: its last value, in one sort (not a scan per line).
    crate::node::unit::env::keep_last(&mut env);
    Ok(env.into_iter().map(|(k, (v, s))| (k, v, s)).collect())
}

/// A line of an env drop-in as `render machineconfig` writes it: None when
/// it is not one, Some(None) for a blank, comment or `[Service]` line,
/// Some(Some((name, value))) for `Environment="NAME=value"`, read the same
/// by systemd (no escapes, specifiers, continuation or second assignment).
fn canonical_line(line: &str) -> Option<Option<(&str, &str)>> {
    if line.chars().any(|c| c.is_control() && c != '\t') || line.ends_with('\\') {
        return None;
    }
    if line.is_empty() || line == "[Service]" || line.starts_with('#') {
        return Some(None);
    }
    let (k, v) = line
        .strip_prefix("Environment=\"")?
        .strip_suffix('"')?
        .split_once('=')?;
    let name_ok = !k.is_empty()
        && !k.starts_with(|c: char| c.is_ascii_digit())
        && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let value_ok = !v.contains(['"', '\\', '%', '\t']);
    // And systemd's reading (the node's unit model) is the same one
    // assignment, without a warning.
    let keep = |w: &[u8]| Ok(w.to_vec());
    let (systemd, warnings) =
        crate::node::unit::env::parse_environment_line(&line["Environment=".len()..], &keep);
    let same = warnings.is_empty()
        && systemd.len() == 1
        && systemd[0].0 == k
        && systemd[0].1 == v.as_bytes();
    (name_ok && value_ok && same).then_some(Some((k, v)))
}

/// A `metav1.LabelSelector` as requirements, for a pool the fleet installs
/// into: one selecting on `kubernetes.io/hostname` is refused (the install
/// cannot know the name kubelet registers with).
pub(super) fn requirements(sel: &Value) -> Result<Vec<Requirement>> {
    let out = selector_requirements(sel)?;
    if selects_on_hostname(&out) {
        bail!("it selects on kubernetes.io/hostname, which the install cannot know");
    }
    Ok(out)
}

/// The label kubelet sets itself at registration (the node's name), never
/// among the labels the wrapper and the selector judge by.
pub(super) const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Whether requirements `sel` read the node's hostname label.
pub(super) fn selects_on_hostname(sel: &[Requirement]) -> bool {
    sel.iter().any(|r| {
        matches!(r, Requirement::In(k, _) | Requirement::NotIn(k, _) | Requirement::Exists(k) | Requirement::DoesNotExist(k) if k == HOSTNAME_LABEL)
    })
}

/// A `metav1.LabelSelector` as requirements, whatever labels it reads.
pub(super) fn selector_requirements(sel: &Value) -> Result<Vec<Requirement>> {
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
    Ok(out)
}

fn check_label_words(key: &str, values: &[String]) -> Result<()> {
    let bad = |s: &str| s.chars().any(|c| c.is_whitespace() || c.is_control()) || s == "\"\"";
    if key.is_empty() || bad(key) || values.iter().any(|v| bad(v)) {
        bail!("{key:?} {values:?} is not a label key and values Kubernetes accepts");
    }
    Ok(())
}

#[cfg(test)]
#[path = "pools_tests.rs"]
mod tests;
