//! `iso fleet`: one live ISO for every pool of a fleet. The live Ignition
//! config carries the install-time selector (`crate::node::fleet`), the pool
//! table, each pool's destination config, and coreos-installer's own
//! install configuration (`/etc/coreos/installer.d`), whose `ignition-file`
//! only the selector writes: without its choice there is nothing to install.
//! The pools' sources are read in `pools`.

mod cluster_pools;
mod inputs;
pub mod no_proxy;
mod pools;
mod preview;
mod trust;
pub use preview::preview;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::cli::render::encoding::data_url;
use crate::cli::render::pointer;
use crate::cli::render::sync_units;
use crate::node::contract::{
    LABELS_VAR, NFD_LABELS_VAR, ROLE_LABELS_VAR, ROLE_NFD_LABELS_VAR, ROLE_RULES_VAR, RULES_VAR,
};
use crate::node::fleet::{
    DEST_PATH, INSTALLED_POOL_PATH, Pool, PoolKind, Requirement, SELECT_PATH, TABLE_PATH, Table,
    WORKER_ROLE_LABEL, installed_record_with,
};
use pools::{
    Found, check_device, check_pool_name, check_wrapper_runs, merge_source, pool_configs, pool_env,
    read_source, requirements,
};

/// The live config's spec: what `coreos-installer iso customize` writes,
/// read by every live ISO of OpenShift 4.14+.
pub const LIVE_VERSION: &str = "3.3.0";
/// The selector's unit, ordered as `iso customize --pre-install` orders one.
pub const UNIT_NAME: &str = "kubelet-labeler-fleet.service";
pub const INSTALLER_CONFIG_PATH: &str = "/etc/coreos/installer.d/0000-kubelet-labeler-fleet.yaml";
/// The env drop-in as MachineConfigs carry it.
fn env_dropin_path() -> String {
    sync_units::env_dropin_path("kubelet.service")
}
/// The role's env drop-in (`render machineconfig --role`): every node of a
/// custom pool takes worker's, and the wrapper adds its labels, taints and
/// rules to the pool's.
fn role_env_dropin_path() -> String {
    sync_units::role_env_dropin_path("kubelet.service")
}

pub struct FleetOptions {
    /// `--pool NAME[=SOURCE]`, in order given.
    pub pools: Vec<(String, Option<PathBuf>)>,
    /// `--cluster-pools FILE`: the cluster's MachineConfigPools, recorded
    /// in each installed-pool record to judge by (never installed into).
    pub cluster_pools: Option<PathBuf>,
    /// `--dest-device`: every pool's destination device but those in
    /// `pool_devices`.
    pub dest_device: Option<String>,
    /// `--pool-dest-device NAME=PATH`: a pool's own destination device.
    pub pool_devices: Vec<(String, String)>,
    /// The compact rules `--rules` compiled to, if given.
    pub rules: Option<String>,
    /// `upstream` or `openshift`, if given.
    pub nfd_labels: Option<String>,
    /// `--mcs-url` (`https://api-int.<cluster>.<domain>:22623`) and the CA:
    /// pointer configs for pools given without one.
    pub mcs_url: Option<String>,
    pub ca_pem: Option<Vec<u8>>,
    /// The static selector program.
    pub selector: Vec<u8>,
}

pub struct Fleet {
    /// The live Ignition config to embed.
    pub config: Vec<u8>,
    pub table: Table,
    /// Each pool's destination config (pointer + the installed-pool record).
    pub dest: BTreeMap<String, Vec<u8>>,
    /// Each pool's merge URL: where its machines fetch their config (and
    /// the pointer's proxy, when it has one).
    pub merge_urls: BTreeMap<String, String>,
    /// Whom each pool's machines trust for it: `CA SHA-256 AB:CD:...`.
    pub trusts: BTreeMap<String, String>,
}

/// The fleet's live config from `o`, every file of the pools' sources it
/// unpacks (each pool's, each check's) drawn from one budget
/// (`RUN_BUDGET`): past it the sources are refused, before anything is
/// written.
pub fn build(o: &FleetOptions) -> Result<Fleet> {
    use crate::cli::render::layout::{RUN_BUDGET, with_run_budget};
    with_run_budget(
        RUN_BUDGET,
        "iso fleet reads the MachineConfigs of every pool (worker's for each pool) and writes \
         nothing past it: give fewer pools, or MachineConfigs with fewer or smaller gzip'ed \
         files",
        || build_in_budget(o),
    )
}

fn build_in_budget(o: &FleetOptions) -> Result<Fleet> {
    if o.pools.is_empty() {
        bail!("no pools: give each with --pool NAME=SOURCE");
    }
    if let Some(dev) = &o.dest_device {
        check_device(dev, "--dest-device")?;
    }
    for (name, dev) in &o.pool_devices {
        check_device(dev, &format!("--pool-dest-device {name}="))?;
        if !o.pools.iter().any(|(n, _)| n == name) {
            bail!("--pool-dest-device {name}={dev}: no --pool {name}; give the pool too");
        }
        if o.pool_devices.iter().filter(|(n, _)| n == name).count() > 1 {
            bail!("--pool-dest-device {name}: given twice; give one device per pool");
        }
    }
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for (name, source) in &o.pools {
        check_pool_name(name)?;
        if !order.contains(name) {
            order.push(name.clone());
        }
        let f = found.entry(name.clone()).or_default();
        if let Some(source) = source {
            read_source(name, source, f)?;
        }
    }
    pool_configs(&mut found)?;
    for (name, f) in found.iter_mut() {
        // The node gets one env drop-in per path: renders of two node
        // formats may replace the role's with the pool's.
        let mcs: Vec<Value> = f.env_configs.iter().map(|(mc, _)| mc.clone()).collect();
        let clashes = crate::cli::render::compose::clashes(&mcs);
        if let Some(c) = clashes.with_context(|| format!("pool {name}"))?.first() {
            bail!("pool {name}: {c}");
        }
        let env =
            |path: &str| pool_env(&f.env_configs, path).with_context(|| format!("pool {name}"));
        f.env = env(&env_dropin_path())?;
        f.role_env = env(&role_env_dropin_path())?;
    }
    // Then the pool's whole tree, as plan judges it: the wrapper runs.
    for (name, f) in found.iter_mut() {
        check_wrapper_runs(name, std::mem::take(&mut f.configs))?;
    }
    let (env, rules_from) = fleet_env(o, &found)?;
    let mut table = Table {
        env,
        pools: Vec::new(),
    };
    let mut dest = BTreeMap::new();
    // Every pointer's server is --mcs-url's, when given.
    let mcs = o
        .mcs_url
        .as_deref()
        .map(pointer::parse_mcs_server)
        .transpose()?;
    let mut merge_urls = BTreeMap::new();
    let mut trusts = BTreeMap::new();
    // --ca-file's certificates: every pointer must trust exactly them.
    let ca_file = o
        .ca_pem
        .as_deref()
        .map(|pem| pointer::pem_certificates(pem, "--ca-file"))
        .transpose()?;
    let mut given: Vec<(String, String, trust::Trust, String)> = Vec::new();
    let mut pointers = Vec::new();
    for name in &order {
        let f = &found[name];
        let kind = if name == "worker" {
            PoolKind::Worker
        } else {
            PoolKind::Custom
        };
        let selector = match &f.node_selector {
            Some((sel, source)) => {
                let r = requirements(sel)
                    .with_context(|| format!("pool {name}: the nodeSelector in {source}"))?;
                inputs::check_selector_keys(name, &r, source)?;
                r
            }
            None if kind == PoolKind::Worker => {
                vec![Requirement::In(
                    WORKER_ROLE_LABEL.into(),
                    vec![String::new()],
                )]
            }
            None => bail!(
                "pool {name}: no MachineConfigPool named {name} in its sources; give the \
                 gitops directory (or the MachineConfigPool YAML) with --pool {name}=DIR, \
                 so the install can match its nodeSelector"
            ),
        };
        // A pool whose env drop-in leaves out what the install evaluates
        // registers its nodes without those labels.
        if let Some((_, _, source)) = f.env.first() {
            for var in [RULES_VAR, NFD_LABELS_VAR] {
                if table_env(&table.env, var).is_some() && !f.env.iter().any(|(v, _, _)| v == var) {
                    bail!(
                        "pool {name}: {source} sets no {var}, so its nodes would register without \
                         the labels the install chooses by; render the pool with the same --rules \
                         and --nfd-labels"
                    );
                }
            }
        }
        let mut static_labels = Vec::new();
        // The role's rules and NFD label set are the fleet's (the selector
        // evaluates them as the wrapper does, under the pool's): a pool
        // whose nodes get others would register outside what was chosen.
        for (var, value, source) in &f.role_env {
            if var == ROLE_LABELS_VAR {
                static_labels.extend(crate::node::kubelet::parse_node_labels(value));
            } else if (var == ROLE_RULES_VAR || var == ROLE_NFD_LABELS_VAR)
                && Some(value) != table_env(&table.env, var)
            {
                bail!(
                    "pool {name}: {source} sets other {var} than the other pools' role \
                     MachineConfigs; the install chooses by one set. Render the role once \
                     (render machineconfig --role worker) and give it with every pool"
                );
            }
        }
        for (var, value, source) in &f.env {
            if var == LABELS_VAR {
                static_labels.extend(crate::node::kubelet::parse_node_labels(value));
            } else if var == RULES_VAR && Some(value) != table_env(&table.env, RULES_VAR) {
                bail!(
                    "pool {name}: {source} carries other node rules than {rules_from}; the node \
                     would register with labels the install did not choose by. Render every \
                     pool from the same rule files and give them with --rules"
                );
            } else if var == NFD_LABELS_VAR && Some(value) != table_env(&table.env, NFD_LABELS_VAR)
            {
                bail!(
                    "pool {name}: {source} sets {NFD_LABELS_VAR}={value}; give the same --nfd-labels"
                );
            }
        }
        // coreos-installer takes one dest-device (a second, from another
        // config file, is refused): when a pool has its own, the selector
        // writes every pool's, and the ISO's own configuration names none.
        let device = o
            .pool_devices
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d.clone())
            .or_else(|| {
                (!o.pool_devices.is_empty())
                    .then(|| o.dest_device.clone())
                    .flatten()
            });
        if device.is_none() && o.dest_device.is_none() {
            bail!(
                "pool {name}: no destination device; give --dest-device PATH (every pool's) or \
                 --pool-dest-device {name}=PATH"
            );
        }
        let pool = Pool {
            name: name.clone(),
            kind,
            config: format!("{name}.ign"),
            selector,
            static_labels,
            device,
        };
        let pointer = match &f.pointer {
            Some((p, source)) => {
                let url = merge_source(p).unwrap_or_default();
                let what = format!("{source}: pool {name}'s merge URL");
                let read = pointer::check_pool_url(url, name, &what)?;
                if let Some(mcs) = &mcs {
                    pointer::check_same_server(&read, mcs, &format!("{what} {url:?}"))?;
                }
                // Whom its machines trust, through whom: what the operator
                // gave, never what the source says.
                let t = trust::read(p, source, name)?;
                trust::check(&t, &read, url, ca_file.as_deref(), source, name)?;
                merge_urls.insert(name.clone(), format!("{url}{}", proxy_note(p)));
                trusts.insert(name.clone(), trust::describe_cas(&t.cas));
                given.push((name.clone(), source.clone(), t, read.server()));
                p.clone()
            }
            None => match (&o.mcs_url, &ca_file) {
                (Some(url), Some(ca)) => {
                    let url = format!("{}/config/{name}", url.trim_end_matches('/'));
                    merge_urls.insert(name.clone(), url.clone());
                    trusts.insert(name.clone(), trust::describe_cas(ca));
                    serde_json::from_slice(&pointer::pointer_ignition(
                        &url,
                        o.ca_pem.as_deref().unwrap_or_default(),
                    )?)?
                }
                _ => bail!(
                    "pool {name}: no pointer config; give its Secret \
                     (oc get secret -n openshift-machine-api {name}-user-data-managed -o yaml) \
                     or pointer config with --pool {name}=FILE, or --mcs-url and --ca-file"
                ),
            },
        };
        pointers.push(pointer);
        table.pools.push(pool);
    }
    // Each pool's record names every pool: the node checks its registration
    // against the whole table (`wrapper::pool_change`).
    // With --cluster-pools, the cluster's other pools too (r18a F2).
    let cluster = match &o.cluster_pools {
        Some(path) => cluster_pools::read(path)?,
        None => Vec::new(),
    };
    for (pool, pointer) in table.pools.iter().zip(pointers) {
        let name = &pool.name;
        let record = installed_record_with(pool, &table.pools, &cluster);
        let config = dest_config(pointer, &record)?;
        crate::cli::iso::check_ignition(&config, &format!("pool {name}'s destination config"))?;
        dest.insert(name.clone(), config);
    }
    if ca_file.is_none() {
        trust::agree(&given)?;
    }
    crate::cli::iso::reach::check(&table, crate::cli::render::arch::Arch::of_elf(&o.selector))?;
    let config = live_config(o, &table, &dest)?;
    crate::cli::iso::check_ignition(&config, "the fleet's live config")?;
    Ok(Fleet {
        config,
        table,
        dest,
        merge_urls,
        trusts,
    })
}

/// ` (through proxy P, noProxy N)` when the pointer sets Ignition's proxy:
/// Ignition fetches the merge URL through it, and the pointer's CA decides
/// whom it trusts there.
fn proxy_note(pointer: &Value) -> String {
    let get = |k: &str| {
        pointer
            .pointer(&format!("/ignition/proxy/{k}"))
            .map(|v| match v {
                Value::String(s) => s.clone(),
                Value::Array(a) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(","),
                _ => String::new(),
            })
            .unwrap_or_default()
    };
    let proxies: Vec<String> = ["httpsProxy", "httpProxy"]
        .into_iter()
        .map(get)
        .filter(|p| !p.is_empty())
        .collect();
    if proxies.is_empty() {
        return String::new();
    }
    let no = get("noProxy");
    let no = if no.is_empty() {
        String::new()
    } else {
        format!(", noProxy {no}")
    };
    format!(" (through proxy {}{no})", proxies.join(" / "))
}

/// The device coreos-installer wipes for `pool`.
pub fn pool_device<'a>(pool: &'a Pool, default: Option<&'a str>) -> &'a str {
    pool.device.as_deref().or(default).unwrap_or("no device")
}

/// What the install wipes, for messages: `/dev/nvme0n1 (pool worker-gpu),
/// /dev/sda (every other pool)`.
pub fn devices(table: &Table, default: Option<&str>) -> String {
    let own = |p: &&Pool| p.device.as_deref().is_some_and(|d| Some(d) != default);
    let mut out: Vec<String> = table
        .pools
        .iter()
        .filter(own)
        .map(|p| format!("{} (pool {})", pool_device(p, default), p.name))
        .collect();
    if let Some(d) = default
        && table.pools.iter().any(|p| !own(&p))
    {
        let rest = if out.is_empty() {
            "every pool"
        } else {
            "every other pool"
        };
        out.push(format!("{d} ({rest})"));
    }
    out.join(", ")
}

fn table_env<'a>(env: &'a [(String, String)], var: &str) -> Option<&'a String> {
    env.iter().find(|(k, _)| k == var).map(|(_, v)| v)
}

/// The rules and NFD label set the selector evaluates: `--rules` and
/// `--nfd-labels`, or else the ones the pools' MachineConfigs carry.
fn fleet_env(
    o: &FleetOptions,
    found: &BTreeMap<String, Found>,
) -> Result<(Vec<(String, String)>, String)> {
    let carried = |var: &str| {
        found
            .values()
            .flat_map(|f| f.env.iter())
            .find(|(v, _, _)| v == var)
            .map(|(_, value, source)| (value.clone(), source.clone()))
    };
    let mut env = Vec::new();
    let mut from = "--rules".to_string();
    match (&o.rules, carried(RULES_VAR)) {
        (Some(r), _) => env.push((RULES_VAR.to_string(), r.clone())),
        (None, Some((r, source))) => {
            from = source;
            env.push((RULES_VAR.to_string(), r))
        }
        (None, None) => {}
    }
    match (&o.nfd_labels, carried(NFD_LABELS_VAR)) {
        (Some(f), _) => env.push((NFD_LABELS_VAR.to_string(), f.clone())),
        (None, Some((f, _))) => env.push((NFD_LABELS_VAR.to_string(), f)),
        (None, None) => {}
    }
    // The role layer's rules and NFD label set, as the role's env drop-in
    // carries them (there are no flags for them).
    for var in [ROLE_RULES_VAR, ROLE_NFD_LABELS_VAR] {
        if let Some((value, _)) = found
            .values()
            .flat_map(|f| f.role_env.iter())
            .find(|(v, _, _)| v == var)
            .map(|(_, value, source)| (value.clone(), source.clone()))
        {
            env.push((var.to_string(), value));
        }
    }
    if env.is_empty() {
        bail!(
            "no node rules: give --rules FILE (the rule files the pools were rendered from) \
             and/or --nfd-labels; without them every machine is a plain worker"
        );
    }
    Ok((env, from))
}

/// The pool's pointer config plus the file that records the pool (the
/// record's first) among the fleet's.
fn dest_config(mut pointer: Value, record: &Table) -> Result<Vec<u8>> {
    let pool = record.pools.first().context("a record names its pool")?;
    let text = record.to_text();
    // Review 21 r21c F3: what the node reads of it, at most (past it, every
    // boot registers fenced, pointing at the wrong cause).
    let max = crate::node::wrapper::pool_change::RECORD_MAX;
    if text.len() > max {
        bail!(
            "the installed-pool record of pool {} is {} bytes, more than the {max} the node \
             reads: give fewer pools (--pool, --cluster-pools) or shorter selectors",
            pool.name,
            text.len()
        );
    }
    let record = data_url(text.as_bytes());
    let mut contents = json!({ "source": record.source });
    if let Some(c) = record.compression {
        contents["compression"] = json!(c);
    }
    let file = json!({
        "path": INSTALLED_POOL_PATH,
        "mode": 0o644,
        "overwrite": true,
        "contents": contents
    });
    let root = pointer
        .as_object_mut()
        .context("the pointer config is not a JSON object")?;
    let storage = root.entry("storage").or_insert_with(|| json!({}));
    let files = storage
        .as_object_mut()
        .context("the pointer config's storage is not an object")?
        .entry("files")
        .or_insert_with(|| json!([]));
    let files = files
        .as_array_mut()
        .context("the pointer config's storage.files is not a list")?;
    if files
        .iter()
        .any(|f| f.get("path").and_then(Value::as_str) == Some(INSTALLED_POOL_PATH))
    {
        bail!(
            "pool {}: the pointer config already writes {INSTALLED_POOL_PATH}",
            pool.name
        );
    }
    files.push(file);
    Ok(serde_json::to_vec(&pointer)?)
}

fn file_entry(path: &str, mode: u32, bytes: &[u8]) -> Value {
    let url = data_url(bytes);
    let mut contents = json!({ "source": url.source });
    if let Some(c) = url.compression {
        contents["compression"] = json!(c);
    }
    json!({ "path": path, "mode": mode, "overwrite": true, "contents": contents })
}

/// The selector's unit: before coreos-installer.service, after its
/// preparation target; a failure stops the live system in emergency mode
/// with the reason on the console, as coreos-installer.service's does.
pub fn unit_text() -> String {
    format!(
        "[Unit]\n\
         Description=Choose this machine's MachineConfigPool for coreos-installer (kubelet-labeler)\n\
         After=coreos-installer-pre.target\n\
         Before=coreos-installer.service\n\
         OnFailure=emergency.target\n\
         OnFailureJobMode=replace-irreversibly\n\
         \n\
         [Service]\n\
         Type=oneshot\n\
         RemainAfterExit=yes\n\
         ExecStart={SELECT_PATH}\n\
         StandardOutput=journal+console\n\
         StandardError=journal+console\n"
    )
}

/// coreos-installer.service runs only after the selector succeeded.
pub fn installer_dropin() -> String {
    format!("[Unit]\nRequires={UNIT_NAME}\nAfter={UNIT_NAME}\n")
}

fn live_config(
    o: &FleetOptions,
    table: &Table,
    dest: &BTreeMap<String, Vec<u8>>,
) -> Result<Vec<u8>> {
    let dir = Path::new(TABLE_PATH)
        .parent()
        .context("the table path has a directory")?;
    let device = match &o.dest_device {
        Some(dev) if table.pools.iter().all(|p| p.device.is_none()) => {
            format!("dest-device: {}\n", serde_json::to_string(dev)?)
        }
        // A pool has its own: the selector writes each pool's.
        _ => String::new(),
    };
    let installer = format!(
        "# kubelet-labeler: the pool's config is chosen at install by {UNIT_NAME}\n\
         {device}ignition-file: {DEST_PATH}\n"
    );
    let mut files = vec![
        file_entry(SELECT_PATH, 0o755, &o.selector),
        file_entry(TABLE_PATH, 0o644, table.to_text().as_bytes()),
        file_entry(INSTALLER_CONFIG_PATH, 0o644, installer.as_bytes()),
    ];
    for pool in &table.pools {
        let path = dir.join(&pool.config);
        files.push(file_entry(
            &path.to_string_lossy(),
            0o600,
            &dest[&pool.name],
        ));
    }
    let config = json!({
        "ignition": { "version": LIVE_VERSION },
        "storage": { "files": files },
        "systemd": { "units": [
            { "name": UNIT_NAME, "contents": unit_text() },
            { "name": "coreos-installer.service", "dropins": [
                { "name": "50-kubelet-labeler-fleet.conf", "contents": installer_dropin() }
            ] }
        ] }
    });
    Ok(serde_json::to_vec(&config)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Review 21 r21c F3: a record past what the node reads is refused
    /// (every boot of such a node registered fenced, for a wrong cause).
    #[test]
    fn a_record_the_node_cannot_read_whole_is_refused() {
        use crate::node::fleet::{Pool, PoolKind, Requirement, Table};
        let pool = |name: &str, n: usize| Pool {
            name: name.into(),
            kind: PoolKind::Custom,
            config: format!("{name}.ign"),
            selector: vec![Requirement::In(
                "example.com/k".into(),
                (0..n).map(|i| format!("v{i:05}")).collect(),
            )],
            static_labels: Vec::new(),
            device: None,
        };
        let record = |n| Table {
            env: Vec::new(),
            pools: vec![pool("gpu", 10), pool("other", n)],
        };
        assert!(dest_config(json!({}), &record(100)).is_ok());
        let e = format!("{:#}", dest_config(json!({}), &record(12_000)).unwrap_err());
        assert!(
            e.contains("the installed-pool record of pool gpu is ")
                && e.contains("more than the 65536 the node reads"),
            "{e}"
        );
    }

    #[test]
    fn label_selectors_become_requirements() {
        let sel = json!({
            "matchLabels": {"a/b": "", "c": "d"},
            "matchExpressions": [
                {"key": "e", "operator": "In", "values": ["1", "2"]},
                {"key": "f", "operator": "DoesNotExist"}
            ]
        });
        let r = requirements(&sel).unwrap();
        assert_eq!(r.len(), 4);
        assert_eq!(r[0], Requirement::In("a/b".into(), vec![String::new()]));
        assert_eq!(r[3], Requirement::DoesNotExist("f".into()));
        for bad in [
            json!({}),
            json!(null),
            json!({"matchExpressions": [{"key": "e", "operator": "In"}]}),
            json!({"matchExpressions": [{"key": "e", "operator": "Gt", "values": ["1"]}]}),
            json!({"matchLabels": {"kubernetes.io/hostname": "n1"}}),
            json!({"matchLabels": {"a b": ""}}),
            json!({"matchLabels": {"gpu": true}}),
            json!({"matchExpressions": [{"key": "e", "operator": "In", "values": [1]}]}),
        ] {
            assert!(requirements(&bad).is_err(), "{bad}");
        }
    }

    /// A custom pool whose MachineConfigs carry static labels but not the
    /// rules the install chooses by: its nodes would register without the
    /// rules' labels, outside the pool.
    #[test]
    fn a_pool_without_the_rules_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mcp = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool",
            "metadata": { "name": "worker-p" },
            "spec": {
                "machineConfigSelector": { "matchExpressions": [ {
                    "key": "machineconfiguration.openshift.io/role",
                    "operator": "In", "values": ["worker", "worker-p"] } ] },
                "nodeSelector": { "matchLabels": {
                    "example.com/p": "true", "feature.node.kubernetes.io/gpu": "true" } }
            }
        });
        let dropin = format!("[Service]\nEnvironment=\"{LABELS_VAR}=example.com/p=true\"\n");
        let mc = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfig",
            "metadata": { "name": "50-worker-p",
                          "labels": { "machineconfiguration.openshift.io/role": "worker-p" } },
            "spec": { "config": { "ignition": { "version": "3.2.0" }, "storage": { "files": [
                { "path": env_dropin_path(), "contents": { "source": data_url(dropin.as_bytes()).source } }
            ] } } }
        });
        std::fs::write(dir.path().join("mcp.json"), mcp.to_string()).unwrap();
        std::fs::write(dir.path().join("mc.json"), mc.to_string()).unwrap();
        let o = |rules: Option<&str>| FleetOptions {
            nfd_labels: Some("openshift".into()),
            ..options(
                vec![("worker-p".into(), Some(dir.path().to_path_buf()))],
                rules,
            )
        };
        let e = format!("{:#}", build(&o(Some("KLR2,0"))).err().unwrap());
        assert!(
            e.contains("pool worker-p:") && e.contains(&format!("sets no {RULES_VAR}")),
            "{e}"
        );
    }

    /// A MachineConfig's env drop-in of 100,000 lines (a hostile directory
    /// given to `iso fleet`) is read in one sort, the last value of a name
    /// winning: a scan of the lines read per line was quadratic.
    #[test]
    fn a_long_env_dropin_is_read_in_one_sort() {
        let mut dropin = String::from("[Service]\n");
        for i in 0..100_000 {
            dropin += &format!("Environment=\"K{}=v{i}\"\n", i % 50_000);
        }
        let mc = env_mc("50-worker-p", "worker-p", &env_dropin_path(), &dropin);
        let env = pool_env(&[(mc, "mc.json".into())], &env_dropin_path()).unwrap();
        assert_eq!(env.len(), 50_000);
        assert_eq!(env[0], ("K0".into(), "v50000".into(), "mc.json".into()));
    }

    /// A custom pool `worker-p` selecting `example.com/p=true`.
    fn pool_p() -> Value {
        json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool",
            "metadata": { "name": "worker-p" },
            "spec": {
                "machineConfigSelector": { "matchExpressions": [ {
                    "key": "machineconfiguration.openshift.io/role",
                    "operator": "In",
                    "values": ["worker", "worker-p"]
                } ] },
                "nodeSelector": { "matchLabels": { "example.com/p": "true" } }
            }
        })
    }

    /// A MachineConfig of `role` writing `dropin` at `path`.
    /// The file's `compression` always set (`""` for none): the MCO merges
    /// a same-path entry field by field, so one left unset keeps an
    /// earlier entry's gzip (see `layout`).
    fn env_mc(name: &str, role: &str, path: &str, dropin: &str) -> Value {
        let mut url = data_url(dropin.as_bytes());
        url.compression = Some(url.compression.unwrap_or(""));
        json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfig",
            "metadata": { "name": name,
                          "labels": { "machineconfiguration.openshift.io/role": role } },
            "spec": { "config": { "ignition": { "version": "3.2.0" }, "storage": { "files": [
                { "path": path,
                  "contents": { "source": url.source, "compression": url.compression } }
            ] } } }
        })
    }

    /// Compact rules of one rule `name` giving `example.com/p=true`.
    fn rules_giving_p(name: &str) -> String {
        crate::node::rules::compact::encode(&[crate::node::rules::Rule {
            name: name.into(),
            labels: vec![("example.com/p".into(), "true".into())],
            ..Default::default()
        }])
    }

    /// Options building `pools` with the test pointer config.
    fn options(pools: Vec<(String, Option<PathBuf>)>, rules: Option<&str>) -> FleetOptions {
        FleetOptions {
            pools,
            cluster_pools: None,
            dest_device: Some("/dev/sda".into()),
            pool_devices: Vec::new(),
            rules: rules.map(str::to_string),
            nfd_labels: None,
            mcs_url: Some("https://api-int.example.com:22623".into()),
            ca_pem: Some(
                b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".to_vec(),
            ),
            selector: b"\x7fELF".to_vec(),
        }
    }

    /// The MCO keeps one whole env drop-in per path, the one of the
    /// MachineConfig it merges last: the pool's role's after worker's,
    /// whatever the names. A pool-role file that sets only static labels
    /// replaces the worker-role one with the rules, not adds to it.
    #[test]
    fn the_env_dropin_is_the_last_machineconfigs_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mcp = pool_p();
        let mc =
            |name: &str, role: &str, dropin: &str| env_mc(name, role, &env_dropin_path(), dropin);
        // The rules give the pool's label: some machine reaches it.
        let rules = rules_giving_p("p");
        let worker = format!(
            "[Service]\nEnvironment=\"{RULES_VAR}={rules}\"\nEnvironment=\"{LABELS_VAR}=example.com/w=true\"\n"
        );
        let pool = format!("[Service]\nEnvironment=\"{LABELS_VAR}=example.com/p=true\"\n");
        std::fs::write(dir.path().join("mcp.json"), mcp.to_string()).unwrap();
        let o = options(
            vec![("worker-p".into(), Some(dir.path().to_path_buf()))],
            None,
        );
        std::fs::write(
            dir.path().join("a.json"),
            mc("50-worker-env", "worker", &worker).to_string(),
        )
        .unwrap();
        // The pool's file is merged last, whether its name sorts after
        // the worker's or before: the node gets no rules at all.
        for name in ["60-worker-p-env", "40-worker-p-env"] {
            std::fs::write(
                dir.path().join("b.json"),
                mc(name, "worker-p", &pool).to_string(),
            )
            .unwrap();
            let e = format!("{:#}", build(&o).err().unwrap());
            assert!(e.contains("no node rules"), "{name}: {e}");
            // Given the rules, the file named is the pool's.
            let with_rules = options(o.pools.clone(), Some("KLR2,0"));
            let e = format!("{:#}", build(&with_rules).err().unwrap());
            assert!(
                e.contains(&format!("b.json sets no {RULES_VAR}")),
                "{name}: {e}"
            );
        }
        // Without it, the worker's, rules and labels.
        std::fs::remove_file(dir.path().join("b.json")).unwrap();
        let fleet = build(&o).unwrap();
        let p = &fleet.table.pools[0];
        assert_eq!(
            p.static_labels,
            [("example.com/w".to_string(), "true".to_string())]
        );
    }

    /// `render machineconfig --role worker --rules ...` puts the role's
    /// rules and labels in the role's env drop-in, which every custom
    /// pool's nodes get too: the install chooses by them as the wrapper
    /// derives them (before, it read only the pool's drop-in: no rules).
    #[test]
    fn the_roles_env_dropin_counts() {
        let dir = tempfile::tempdir().unwrap();
        let mcp = pool_p();
        let rules = rules_giving_p("p");
        let role = format!(
            "[Service]\nEnvironment=\"{ROLE_RULES_VAR}={rules}\"\nEnvironment=\"{ROLE_LABELS_VAR}=example.com/w=true\"\n"
        );
        let pool = format!("[Service]\nEnvironment=\"{LABELS_VAR}=example.com/p=true\"\n");
        std::fs::write(dir.path().join("mcp.json"), mcp.to_string()).unwrap();
        std::fs::write(
            dir.path().join("a.json"),
            env_mc(
                "50-worker-role-env",
                "worker",
                &role_env_dropin_path(),
                &role,
            )
            .to_string(),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("b.json"),
            env_mc("50-worker-p-env", "worker-p", &env_dropin_path(), &pool).to_string(),
        )
        .unwrap();
        let o = |rules: Option<&str>| {
            options(
                vec![("worker-p".into(), Some(dir.path().to_path_buf()))],
                rules,
            )
        };
        let fleet = build(&o(None)).unwrap();
        assert_eq!(table_env(&fleet.table.env, ROLE_RULES_VAR), Some(&rules));
        assert_eq!(
            fleet.table.pools[0].static_labels,
            [
                ("example.com/w".to_string(), "true".to_string()),
                ("example.com/p".to_string(), "true".to_string())
            ]
        );
        // A pool whose role drop-in carries other rules than another
        // pool's is refused, named: the install chooses by one set.
        let other = rules_giving_p("q");
        let other = format!("[Service]\nEnvironment=\"{ROLE_RULES_VAR}={other}\"\n");
        std::fs::write(
            dir.path().join("c.json"),
            env_mc(
                "51-worker-p-role-env",
                "worker-p",
                &role_env_dropin_path(),
                &other,
            )
            .to_string(),
        )
        .unwrap();
        let worker = tempfile::tempdir().unwrap();
        std::fs::copy(dir.path().join("a.json"), worker.path().join("a.json")).unwrap();
        let two = FleetOptions {
            pools: vec![
                ("worker-p".into(), Some(dir.path().to_path_buf())),
                ("worker".into(), Some(worker.path().to_path_buf())),
            ],
            ..o(None)
        };
        let e = format!("{:#}", build(&two).err().unwrap());
        assert!(
            e.contains("pool worker-p:")
                && e.contains("c.json")
                && e.contains(&format!("other {ROLE_RULES_VAR}")),
            "{e}"
        );
    }

    #[test]
    fn names_and_devices_are_checked() {
        assert!(check_pool_name("worker-gpu").is_ok());
        for bad in ["master", "arbiter", "", "Worker", "a/b", "-x"] {
            assert!(check_pool_name(bad).is_err(), "{bad}");
        }
        assert!(check_device("/dev/nvme0n1", "--dest-device").is_ok());
        for bad in ["sda", "/dev/sd a", "/", "/dev/\"x", ""] {
            assert!(check_device(bad, "--dest-device").is_err(), "{bad}");
        }
    }
}
