//! Whether kubelet starts at boot, judged as the node does (review 25
//! r25a F4): plan prices a change by the disruption policy, which says
//! what the MCO does to apply it, never whether kubelet comes up after.
//! A change that can keep kubelet.service from starting (the node goes
//! NotReady with nothing of ours running) is refused, whatever the policy
//! says:
//!
//! - the enablement (`enabled:`) or mask of a unit of [`NEEDED`]: the MCO's
//!   kubelet.service (`enabled: true`, `WantedBy=multi-user.target` in
//!   every template, 4.14..main), what it `Requires=` (crio.service,
//!   kubelet-dependencies.target) and what those require, the boot target
//!   that pulls it in, and the units its start waits on (a start that
//!   fails or hangs holds kubelet back);
//! - a unit file, drop-in or dependency directory of one of them in any
//!   unit directory (`N.d`, `N.wants`, `N.requires`; the prefix drop-ins
//!   `a-.service.d`; the type-level `target.d`), and the files
//!   kubelet-auto-node-size.service (which kubelet-dependencies.target
//!   requires) runs or reads; kubelet.service's own unit, drop-ins and
//!   `service.d` are `kubelet_unit`'s (it prices a drop-in of our
//!   variables only);
//! - a kernel argument that changes which units start, runs something
//!   else as root at boot, or that plan does not know to leave the boot as
//!   it is ([`boot_changing`]: keys and values of an allow-list; the huge
//!   pages the pool reserves in all, [`hugepages_over`]).

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde_json::Value;

use super::Side;
use super::kargs::{boot_changing, hugepages_over, split_kargs};
use super::kubelet_unit;
// systemd's unit directories: the system manager's search path, as the
// wrapper reads it.
use crate::cli::render::merge_inputs::node_path;
use crate::node::unit::search::SYSTEM_UNIT_PATH as UNIT_DIRS;

pub use super::start_units::NEEDED;

/// Files a unit of [`NEEDED`] runs or reads (kubelet-auto-node-size's
/// script and its `EnvironmentFile=`, which has no `-`).
const NEEDED_FILES: [&str; 2] = [
    "/usr/local/sbin/dynamic-system-reserved-calc.sh",
    "/etc/node-sizing-enabled.env",
];

/// What kubelet reads at its start besides its command line and its
/// config file (review 33 r33a F1: the real kubelet exited on a PR's
/// `kubelet-ca.crt`, and under a PR's `/etc/hostname` NodeRestriction
/// refused the node's credentials the new Node), each with what is under
/// it. Not the pull secret, `/var/lib/kubelet/config.json`, which the
/// MCO's own policy prices (crio reloads it).
const KUBELET_READS: [(&str, &str); 4] = [
    (
        "/etc/kubernetes/kubelet-ca.crt",
        "kubelet.conf's clientCAFile: kubelet exits at its start when it holds no valid certificate",
    ),
    (
        "/etc/hostname",
        "the node's name: kubelet registers under the hostname, and NodeRestriction refuses the node's credentials any other Node",
    ),
    (
        "/var/lib/kubelet",
        "kubelet's root directory: its certificates, checkpoints and plugins' state, read at its start",
    ),
    (
        "/etc/kubernetes/kubelet-plugins",
        "kubelet's volumePluginDir: it runs each FlexVolume driver found there at its start",
    ),
];

/// The pull secret under kubelet's root directory, priced by the MCO's
/// policy.
const PULL_SECRET: &str = "/var/lib/kubelet/config.json";

/// What of a pool's render decides kubelet's start.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Start {
    /// Each path of [`needed_path`] with what is written there.
    paths: BTreeMap<String, u64>,
    /// Each unit the MachineConfigs name: its merged `enabled` (None:
    /// left as it is) and `mask` (judged for [`NEEDED`] and `dependents`).
    units: BTreeMap<String, (Option<bool>, bool)>,
    /// The unit files and drop-ins of other units whose dependencies name
    /// one of [`NEEDED`] ([`dependents`]): what is written there, and why.
    dependents: Dependents,
    /// The kernel arguments of [`boot_changing`] and [`hugepages_over`]
    /// (`LABEL ARG`, as given), and why.
    kargs: BTreeMap<String, String>,
}

/// Unit files and drop-ins (node path → what is written there, and the
/// line that names a unit of [`NEEDED`]).
pub type Dependents = BTreeMap<String, (u64, String)>;

/// Targets a service may pull in (`Wants=`) without reaching kubelet's
/// start: the boot target and the usual synchronization points.
const PLAIN_TARGETS: [&str; 8] = [
    "multi-user.target",
    "default.target",
    "network-online.target",
    "network.target",
    "nss-lookup.target",
    "time-sync.target",
    "remote-fs.target",
    "local-fs.target",
];

/// The unit files and drop-ins of `root` (a pool's laid-out tree, `files`
/// its layout's identities) of units other than [`NEEDED`] that can reach
/// kubelet's start ([`reaches_start`]). What cannot be read as a unit
/// counts as reaching it.
pub fn dependents(root: &std::path::Path, files: &BTreeMap<String, u64>) -> Dependents {
    let mut out = Dependents::new();
    let defined = defined_units(files);
    let mut dropins = Vec::new();
    for (path, id) in files {
        let canon = node_path(path);
        let Some(rest) = UNIT_DIRS.iter().find_map(|d| {
            canon
                .strip_prefix(d)
                .and_then(|r| r.strip_prefix('/'))
                .filter(|r| !r.is_empty())
        }) else {
            continue;
        };
        let unit = match rest.split_once('/') {
            None => rest,
            Some((dir, name)) if !name.contains('/') && name.ends_with(".conf") => {
                match dir.strip_suffix(".d") {
                    Some(unit) => unit,
                    None => continue,
                }
            }
            Some(_) => continue,
        };
        // Review 33 r33c F1, F3: `wait-for-br-.service.d/` is a drop-in of
        // every unit whose name (or alias) starts `wait-for-br-`: the MCO's
        // wait-for-br-ex-up.service, crio's alias cri-o.service. A unit
        // file the pool writes at that name changes nothing of that.
        if rest.contains('/') && unit.rsplit_once('.').is_some_and(|(b, _)| b.ends_with('-')) {
            let why = format!(
                "unit {unit}: a prefix drop-in directory, which systemd applies to every unit \
                 whose name or alias starts with {:?}, the OS's and the MCO's too; give the \
                 drop-in a unit of the pool's own by its full name",
                unit.rsplit_once('.').map_or(unit, |(b, _)| b)
            );
            out.insert(path.clone(), (*id, why));
            continue;
        }
        // kubelet.service is `kubelet_unit`'s, our sync units
        // `render_files`' (held to what render writes).
        if NEEDED.iter().any(|(n, _)| *n == unit)
            || unit == "service"
            || super::render_files::is_policy_path(path)
        {
            continue;
        }
        // Review 30 r30a F1: a unit file at a name the OS or the MCO
        // ships replaces their unit; its drop-ins go with it.
        let shipped = (!rest.contains('/')).then(|| super::start_units::shipped(unit));
        let why = match (kubelet_unit::regular(root, path), shipped.flatten()) {
            (Err(why), _) | (Ok(_), Some(why)) => Some(why),
            (Ok(bytes), None) => reaches_start(&bytes, unit, &defined),
        };
        match why {
            Some(why) => {
                out.insert(path.clone(), (*id, format!("unit {unit}: {why}")));
            }
            None if rest.contains('/') => dropins.push((path, *id, unit.to_string())),
            None => {}
        }
    }
    // A drop-in is judged with its unit (review 29 r29a F1: a service
    // ordered before kubelet by its own file, a drop-in adding
    // `ExecStartPre=/bin/sleep infinity`): one of a unit plan does not
    // judge, or whose file the pool does not write (the OS's, a prefix
    // drop-in such as `gpu-.service.d`), is not judged either.
    // Review 33 r33c F2: a start of the pool's own service, its drop-ins
    // with it, that may never end (or end late) is refused: plan cannot
    // list every name the OS's units on kubelet's path wait on.
    for (path, id) in files {
        let canon = node_path(path);
        let Some(name) = canon
            .strip_prefix(POOL_UNIT_DIR)
            .filter(|n| n.ends_with(".service"))
        else {
            continue;
        };
        if name.contains('/') || out.contains_key(path) || !defined.contains(name) {
            continue;
        }
        let mut texts: Vec<(&str, &String)> = (dropins.iter())
            .filter(|(_, _, u)| u == name)
            .map(|(p, _, _)| (p.rsplit('/').next().unwrap_or(p), *p))
            .collect();
        texts.sort();
        let mut assignments = Vec::new();
        for p in std::iter::once(path).chain(texts.into_iter().map(|(_, p)| p)) {
            if let Ok(bytes) = kubelet_unit::regular(root, p) {
                assignments.extend(crate::node::unit::syntax::parse(&bytes, name).assignments);
            }
        }
        if let Some(why) = super::start_bound::unbounded(&assignments) {
            out.insert(path.clone(), (*id, format!("unit {name}: {why}")));
        }
    }
    for (path, id, unit) in dropins {
        let unit_not_judged = (out.values()).any(|(_, w)| w.starts_with(&format!("unit {unit}: ")));
        let why = if unit_not_judged {
            "a drop-in of a unit plan does not judge"
        } else if !defined.contains(&unit) {
            "a drop-in of a unit no MachineConfig of the pool writes (the OS's, or every unit of a prefix): plan cannot read what it changes"
        } else {
            continue;
        };
        out.insert(path.clone(), (id, format!("unit {unit}: {why}")));
    }
    out
}

/// Keys of `[Unit]` a service may hold and still be judged not to reach
/// kubelet's start (review 28 r28a: a deny-list of keys missed what
/// systemd adds by default or by a unit's type). `Wants=` is judged by
/// what it names.
const UNIT_KEYS: [&str; 10] = [
    "Description",
    "Documentation",
    "After",
    "Wants",
    "StartLimitIntervalSec",
    "StartLimitBurst",
    "RefuseManualStart",
    "RefuseManualStop",
    "CollectMode",
    "SourcePath",
];

/// Where the MCO writes a MachineConfig's units (`systemd.units`): a unit
/// file elsewhere (`/usr/lib/systemd/system`, read-only on CoreOS; below
/// the OS's own in systemd's order) is not the pool's unit (review 33
/// r33c: its `/etc` drop-ins were taken as the pool's).
const POOL_UNIT_DIR: &str = "/etc/systemd/system/";

/// The units whose unit files the layout writes (not drop-ins), where the
/// MCO writes them.
pub fn defined_units(files: &BTreeMap<String, u64>) -> std::collections::BTreeSet<String> {
    (files.keys())
        .filter_map(|p| {
            let rest = node_path(p).strip_prefix(POOL_UNIT_DIR)?.to_string();
            (!rest.contains('/') && rest.contains('.')).then_some(rest)
        })
        .collect()
}

/// The first line of a unit's text by which it can keep kubelet from
/// starting, or why the unit is not one plan judges: only a service is
/// (a socket, path, timer, mount, slice... acts on others by its type:
/// `Before=sockets.target`, `Unit=`, a mount over our files, kubelet's
/// slice), holding in `[Unit]` only [`UNIT_KEYS`], conditions and
/// assertions, `Wants=` of plain targets or of services the pool's
/// MachineConfigs define (`defined`), in `[Install]` only `WantedBy=` of
/// the boot target, and in `[Service]` anything (what its commands do is
/// any MachineConfig's power, which the MCO's policy prices).
fn reaches_start(
    bytes: &[u8],
    name: &str,
    defined: &std::collections::BTreeSet<String>,
) -> Option<String> {
    let kind = name.rsplit_once('.').map_or("", |(_, k)| k);
    if kind != "service" {
        return Some(format!(
            "it is a {} unit, which acts on other units by its type: plan judges services only",
            if kind.is_empty() { name } else { kind }
        ));
    }
    let parsed = crate::node::unit::syntax::parse(bytes, name);
    if let Some(fatal) = parsed.fatal {
        return Some(format!("systemd stops reading it: {fatal}"));
    }
    let wanted = |w: &str| {
        PLAIN_TARGETS.contains(&w)
            || (w.ends_with(".service")
                && defined.contains(w)
                && !NEEDED.iter().any(|(n, _)| *n == w))
    };
    parsed.assignments.iter().find_map(|a| {
        let (section, key) = (a.section.as_str(), a.key.as_str());
        let judged = match section {
            // Actions on the whole manager, read in `[Service]` too
            // (review 29 r29a F2).
            "Service" => !matches!(
                key,
                "FailureAction"
                    | "SuccessAction"
                    | "StartLimitAction"
                    | "RebootArgument"
                    | "FailureActionExitStatus"
                    | "SuccessActionExitStatus"
            ),
            "Unit" if key == "Wants" => a.value.split_whitespace().all(wanted),
            "Unit" => {
                UNIT_KEYS.contains(&key)
                    || key.starts_with("Condition")
                    || key.starts_with("Assert")
            }
            "Install" => {
                key == "WantedBy"
                    && (a.value.split_whitespace())
                        .all(|w| matches!(w, "multi-user.target" | "default.target"))
            }
            _ => false,
        };
        (!judged).then(|| {
            format!(
                "line {}: {}={} (in [{}])",
                a.line, a.key, a.value, a.section
            )
        })
    })
}

/// Why a path of a layout (in any spelling, [`node_path`]) is one
/// kubelet's start reads (None: it is not, or it is `kubelet_unit`'s).
fn needed_path(path: &str) -> Option<String> {
    let path = node_path(path);
    let path = path.as_str();
    if kubelet_unit::unit_path(path) {
        return None;
    }
    if NEEDED_FILES.contains(&path) {
        return Some("kubelet-auto-node-size.service runs or reads it".into());
    }
    if path != PULL_SECRET {
        let reads = KUBELET_READS.iter().find_map(|(dir, why)| {
            if path == *dir || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/')) {
                Some(format!("kubelet reads it at its start ({why})"))
            } else {
                // A directory or link above points kubelet elsewhere.
                (path != "/" && dir.strip_prefix(path).is_some_and(|r| r.starts_with('/')))
                    .then(|| format!("it is above {dir}, which kubelet reads at its start ({why})"))
            }
        });
        if reads.is_some() {
            return reads;
        }
    }
    let under = |dir: &str| path.strip_prefix(dir).filter(|r| r.starts_with('/'));
    if UNIT_DIRS
        .iter()
        .any(|d| d.strip_prefix(path).is_some_and(|r| r.starts_with('/')))
    {
        return Some("it is a directory above systemd's unit directories".into());
    }
    let rest = UNIT_DIRS.iter().find_map(|d| under(d))?;
    let components: Vec<&str> = rest.split('/').filter(|c| !c.is_empty()).collect();
    NEEDED.iter().find_map(|(unit, why)| {
        let (base, kind) = unit.rsplit_once('.')?;
        // A boot target's `.wants` enables any unit: the policy's.
        let boot = matches!(*unit, "multi-user.target" | "default.target");
        let hit = components.iter().any(|c| {
            *c == *unit
                || (c.strip_prefix(unit).and_then(|r| r.strip_prefix('.')))
                    .is_some_and(|r| !(boot && r == "wants"))
                || *c == format!("{kind}.d")
                || base
                    .match_indices('-')
                    .any(|(i, _)| *c == format!("{}-.{kind}.d", &base[..i]))
        });
        hit.then(|| format!("it is a unit file or drop-in of {unit} ({why})"))
    })
}

/// What `configs` (a pool's MachineConfigs of one render) and `files`
/// (their layout's identities) give kubelet's start.
pub fn of(configs: &[&Value], files: &BTreeMap<String, u64>) -> Start {
    let mut start = Start {
        paths: (files.iter())
            .filter(|(p, _)| needed_path(p).is_some())
            .map(|(p, id)| (p.clone(), *id))
            .collect(),
        ..Start::default()
    };
    let order = crate::cli::render::layout::merge_order(configs)
        .unwrap_or_else(|_| (0..configs.len()).collect());
    let strings = |v: Option<&Value>| -> Vec<String> {
        (v.and_then(Value::as_array).into_iter().flatten())
            .filter_map(Value::as_str)
            .flat_map(split_kargs)
            .collect()
    };
    // The arguments the pool's nodes are given, in the MCO's order.
    let mut given: Vec<(&str, String)> = Vec::new();
    for i in order {
        let Some(mc) = configs.get(i) else { continue };
        let units = mc.pointer("/spec/config/systemd/units");
        for u in units.and_then(Value::as_array).into_iter().flatten() {
            let name = u.get("name").and_then(Value::as_str).unwrap_or_default();
            let at = start.units.entry(name.to_string()).or_default();
            if let Some(e) = u.get("enabled").and_then(Value::as_bool) {
                at.0 = Some(e);
            }
            if let Some(m) = u.get("mask").and_then(Value::as_bool) {
                at.1 = m;
            }
        }
        for (label, at) in [
            ("spec.kernelArguments", "/spec/kernelArguments"),
            (
                "Ignition kernelArguments.shouldExist",
                "/spec/config/kernelArguments/shouldExist",
            ),
            (
                "Ignition kernelArguments.shouldNotExist",
                "/spec/config/kernelArguments/shouldNotExist",
            ),
        ] {
            let mut to_init = false;
            for arg in strings(mc.pointer(at)) {
                // After `--`, every word is init's (systemd's argv).
                to_init |= arg == "--";
                let why = boot_changing(&arg).or(to_init.then(|| {
                    "after `--`, the kernel hands it to systemd (init) as an argument".into()
                }));
                if let Some(why) = why {
                    start.kargs.insert(format!("{label} {arg}"), why);
                }
                if !label.ends_with("shouldNotExist") {
                    given.push((label, arg));
                }
            }
        }
    }
    // The huge pages of all the pool's arguments together.
    if let Some(why) = hugepages_over(given.iter().map(|(_, a)| a.as_str())) {
        for (label, arg) in &given {
            let arg_ = arg.replace('"', "").replace('-', "_");
            let key = arg_.split('=').next().unwrap_or_default();
            if matches!(key, "hugepages" | "hugepagesz" | "default_hugepagesz") {
                (start.kargs.entry(format!("{label} {arg}"))).or_insert_with(|| why.clone());
            }
        }
    }
    start
}

/// What pool `pool` of `side` gives kubelet's start.
fn of_side(side: &Side, pool: &str) -> Start {
    let Some(r) = side.cache.get(pool) else {
        return Start::default();
    };
    let configs: Vec<&Value> = (r.configs.iter())
        .filter_map(|&i| side.render.machineconfigs.get(i))
        .collect();
    let mut start = of(&configs, &r.files);
    start.dependents = r.start_dependents.clone();
    start
}

/// Refuse, in pool `pool`, a change between the two renders of what
/// decides kubelet's start.
pub fn check((from, to): (&Side, &Side), pool: &str) -> Result<()> {
    let (before, after) = (of_side(from, pool), of_side(to, pool));
    judge((&from.render.name, &to.render.name), pool, &before, &after)
}

fn judge((from, to): (&str, &str), pool: &str, before: &Start, after: &Start) -> Result<()> {
    let refuse = |what: String| -> Result<()> {
        bail!(
            "pool {pool}: kubelet may not start: {what}; plan cannot price it, whatever the \
             disruption policy says (the policy says how the MCO applies a change, not whether \
             kubelet starts after it); plan the change without it, and review it by eye"
        )
    };
    let shown = |e: Option<bool>| e.map_or("unset".to_string(), |e| e.to_string());
    // Units whose dependencies name kubelet's start, on either side.
    let dependent_units: Vec<(String, String)> = (before.dependents.iter())
        .chain(&after.dependents)
        .map(|(path, (_, why))| {
            let unit = why.strip_prefix("unit ").unwrap_or(why);
            let unit = unit.split(':').next().unwrap_or(unit).to_string();
            let said = why.split_once(": ").map_or(why.as_str(), |(_, w)| w);
            (unit, format!("{path}: {said}"))
        })
        .collect();
    let needed = NEEDED.iter().map(|(u, w)| (u.to_string(), w.to_string()));
    // A template's instances, enabled by name (`a@x.service` of `a@.service`).
    let instances: Vec<(String, String)> = (dependent_units.iter())
        .filter_map(|(u, why)| {
            let (head, kind) = u.split_once("@.")?;
            let of = |s: &Start| {
                (s.units.keys())
                    .filter(|n| {
                        n.starts_with(&format!("{head}@")) && n.ends_with(&format!(".{kind}"))
                    })
                    .cloned()
                    .collect::<Vec<_>>()
            };
            Some((of(before), of(after), why.clone()))
        })
        .flat_map(|(a, b, why)| a.into_iter().chain(b).map(move |n| (n, why.clone())))
        .collect();
    for (unit, why) in needed.chain(dependent_units).chain(instances) {
        let unit = unit.as_str();
        // The MCO's kubelet.service is `enabled: true`.
        let dflt = (unit == "kubelet.service").then_some(true);
        let get = |s: &Start| {
            let (e, m) = s.units.get(unit).copied().unwrap_or_default();
            (e.or(dflt), m)
        };
        let ((eb, mb), (ea, ma)) = (get(before), get(after));
        if eb != ea {
            return refuse(format!(
                "unit {unit} ({why}): enabled is {} in {from} and {} in {to}",
                shown(eb),
                shown(ea)
            ));
        }
        if mb != ma {
            return refuse(format!(
                "unit {unit} ({why}): mask is {mb} in {from} and {ma} in {to}"
            ));
        }
    }
    for path in before.dependents.keys().chain(after.dependents.keys()) {
        let id = |s: &Start| s.dependents.get(path).map(|(id, _)| *id);
        if id(before) != id(after) {
            let why = (after.dependents.get(path))
                .or(before.dependents.get(path))
                .map(|(_, w)| w.as_str())
                .unwrap_or_default();
            return refuse(format!("{path} changes from {from} to {to} ({why})"));
        }
    }
    for path in before.paths.keys().chain(after.paths.keys()) {
        if before.paths.get(path) != after.paths.get(path) {
            let why = needed_path(path).unwrap_or_default();
            return refuse(format!("{path} changes from {from} to {to} ({why})"));
        }
    }
    fn changed<'a>(a: &'a Start, b: &Start) -> Option<(&'a String, &'a String)> {
        (a.kargs.iter()).find(|(k, why)| b.kargs.get(*k) != Some(why))
    }
    let new = changed(after, before).map(|k| (k, to));
    if let Some(((k, why), side)) = new.or(changed(before, after).map(|k| (k, from))) {
        if before.kargs.contains_key(k) && after.kargs.contains_key(k) {
            return refuse(format!(
                "kernel argument {k} is in both {from} and {to}, with another reading in \
                 {to} ({why})"
            ));
        }
        return refuse(format!("kernel argument {k} is in {side} only ({why})"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mc(spec: Value) -> Value {
        json!({"metadata": {"name": "60-x",
               "labels": {"machineconfiguration.openshift.io/role": "worker-gpu"}},
               "spec": spec})
    }
    fn units(u: Value) -> Value {
        mc(json!({"config": {"ignition": {"version": "3.4.0"}, "systemd": {"units": [u]}}}))
    }
    fn judged(before: &[Value], after: &[Value]) -> Result<()> {
        let start = |c: &[Value]| of(&c.iter().collect::<Vec<_>>(), &BTreeMap::new());
        judge(("base", "pr"), "worker-gpu", &start(before), &start(after))
    }

    #[test]
    fn kubelet_disabled_or_a_needed_unit_masked_is_refused() {
        let off = units(json!({"name": "kubelet.service", "enabled": false}));
        let err = judged(&[], &[off]).unwrap_err().to_string();
        assert!(
            err.contains("kubelet may not start: unit kubelet.service")
                && err.contains("enabled is true in base and false in pr"),
            "{err}"
        );
        // kubelet.service enabled as the MCO has it is no change.
        let on = units(json!({"name": "kubelet.service", "enabled": true}));
        judged(&[], &[on]).unwrap();
        for u in [
            json!({"name": "crio.service", "mask": true}),
            json!({"name": "crio.service", "enabled": false}),
            json!({"name": "kubelet-dependencies.target", "enabled": true}),
            json!({"name": "kubelet-auto-node-size.service", "enabled": false}),
        ] {
            let err = judged(&[], &[units(u.clone())]).unwrap_err().to_string();
            assert!(err.contains("kubelet may not start"), "{u}: {err}");
        }
        // A later MachineConfig's field wins (the merge by unit name).
        let mut back = units(json!({"name": "kubelet.service", "enabled": true}));
        back["metadata"]["name"] = "61-x".into();
        let off = units(json!({"name": "kubelet.service", "enabled": false}));
        judged(&[], &[off, back]).unwrap();
        // An unrelated unit is the policy's (the OS's kdump.service, say).
        let x = units(json!({"name": "x.service", "enabled": false}));
        judged(&[], &[x]).unwrap();
    }

    #[test]
    fn unit_files_and_drop_ins_of_needed_units() {
        for (path, needed) in [
            ("/etc/systemd/system/crio.service.d/zz.conf", true),
            ("/etc/systemd/system/crio.service", true),
            ("/run/systemd/system/crio.service.d/zz.conf", true),
            (
                "/etc/systemd/system/kubelet-dependencies.target.d/zz.conf",
                true,
            ),
            ("/etc/systemd/system/kubelet-.target.d/zz.conf", true),
            ("/etc/systemd/system/target.d/zz.conf", true),
            (
                "/etc/systemd/system/NetworkManager-wait-.service.d/zz.conf",
                true,
            ),
            (
                "/etc/systemd/system/kubelet.service.requires/x.service",
                true,
            ),
            ("/etc/systemd/system/multi-user.target.d/zz.conf", true),
            ("/etc/systemd/system/default.target", true),
            ("/etc/node-sizing-enabled.env", true),
            // Review 29 r29a F3: CoreOS's /var/usrlocal is /usr/local.
            ("/usr/local/sbin/dynamic-system-reserved-calc.sh", true),
            ("/var/usrlocal/sbin/dynamic-system-reserved-calc.sh", true),
            (
                "/var/usrlocal/lib/systemd/system/crio.service.d/zz.conf",
                true,
            ),
            ("/run/systemd", true),
            // kubelet_unit's: kubelet.service, its drop-ins, service.d.
            ("/etc/systemd/system/kubelet.service", false),
            ("/etc/systemd/system/kubelet.service.d/zz.conf", false),
            ("/etc/systemd/system/service.d/zz.conf", false),
            ("/etc/systemd/system", false),
            // Not a unit directory, not a needed unit.
            ("/etc/crio.service.d/zz.conf", false),
            ("/etc/systemd/system/x.service.d/zz.conf", false),
            (
                "/etc/systemd/system/multi-user.target.wants/x.service",
                false,
            ),
            (
                "/etc/systemd/system/multi-user.target.wants/kubelet.service",
                false,
            ),
            ("/etc/systemd/system/crio-x.service", false),
            // Review 33 r33a F1: what kubelet reads at its start; not the
            // pull secret, which the MCO's policy prices.
            ("/etc/kubernetes/kubelet-ca.crt", true),
            ("/etc/hostname", true),
            ("/var/lib/kubelet/cpu_manager_state", true),
            ("/var/lib/kubelet/pki/kubelet-client-current.pem", true),
            ("/etc/kubernetes/kubelet-plugins/volume/exec/x~y/y", true),
            ("/var/lib/kubelet/config.json", false),
            ("/etc/kubernetes/kubelet-ca.crt.bak", false),
            ("/etc/hostname.d", false),
        ] {
            assert_eq!(needed_path(path).is_some(), needed, "{path}");
        }
        let files = |text: u64| {
            BTreeMap::from([(
                "/etc/systemd/system/crio.service.d/zz.conf".to_string(),
                text,
            )])
        };
        let (before, after) = (of(&[], &BTreeMap::new()), of(&[], &files(1)));
        let err = judge(("base", "pr"), "p", &before, &after)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("crio.service.d/zz.conf changes from base to pr"),
            "{err}"
        );
        judge(
            ("base", "pr"),
            "p",
            &of(&[], &files(1)),
            &of(&[], &files(1)),
        )
        .unwrap();
    }

    #[test]
    fn kernel_arguments_that_change_what_starts() {
        for arg in [
            "systemd.mask=kubelet.service",
            "systemd.unit=rescue.target",
            "rd.systemd.unit=emergency.target",
            "systemd.wants=debug-shell.service",
            "systemd.run=/bin/sh",
            "systemd.debug-shell",
            "systemd.debug_shell=1",
            "\"systemd.mask=crio.service\"",
            "emergency",
            "single",
            "S",
            "1",
            "-b",
            "init=/bin/sh",
            "rd.break",
            "systemd.setenv=LD_PRELOAD=/x.so",
            "systemd.mount-extra=/x:/usr/bin",
            "ignition.firstboot",
            "systemd.unified_cgroup_hierarchy=0",
        ] {
            assert!(boot_changing(arg).is_some(), "{arg}");
        }
        for arg in [
            "nosmt",
            "hugepages=32",
            "systemd.log_level=debug",
            "systemd.default_standard_output=kmsg",
            "selinux=1",
            "i915.enable_guc=0",
            "isolcpus=1-3",
            "intel_iommu=on",
        ] {
            assert_eq!(boot_changing(arg), None, "{arg}");
        }
        assert_eq!(
            split_kargs(" a=\"b c\"  systemd.mask=kubelet.service"),
            ["a=\"b c\"", "systemd.mask=kubelet.service"]
        );
        let k = |args: Value| mc(json!({"kernelArguments": args}));
        let err = judged(&[], &[k(json!(["nosmt systemd.mask=kubelet.service"]))])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "kernel argument spec.kernelArguments systemd.mask=kubelet.service is in pr only"
            ),
            "{err}"
        );
        // Taken away is a change too; other arguments are the policy's.
        assert!(judged(&[k(json!(["systemd.unit=rescue.target"]))], &[]).is_err());
        judged(&[], &[k(json!(["nosmt", "hugepages=32"]))]).unwrap();
        let ign = mc(json!({"config": {"ignition": {"version": "3.4.0"},
            "kernelArguments": {"shouldExist": ["systemd.unit=rescue.target"]}}}));
        assert!(judged(&[], &[ign]).is_err());
    }

    /// Review 29 r29a F4: the huge pages a pool's MachineConfigs reserve
    /// together, a size in one and a count in another.
    #[test]
    fn huge_pages_of_the_pool_in_all() {
        let k = |name: &str, args: Value| {
            let mut m = mc(json!({"kernelArguments": args}));
            m["metadata"]["name"] = name.into();
            m
        };
        let size = |s: &str| k("50-size", json!([format!("hugepagesz={s}")]));
        let count = k("60-count", json!(["hugepages=100"]));
        let err = judged(&[], &[size("1G"), count.clone()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("kernel argument spec.kernelArguments hugepages=100 is in pr only")
                && err.contains("reserve 100 GiB in all"),
            "{err}"
        );
        // The count as it was, of pages of another size.
        let err = judged(&[size("2M"), count.clone()], &[size("1G"), count.clone()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("reserve 100 GiB in all"), "{err}");
        judged(&[], &[size("2M"), count.clone()]).unwrap();
        // Already in force on both sides: no change of it.
        judged(&[size("1G"), count.clone()], &[size("1G"), count]).unwrap();
        // The same words in another order: more in all (the count after
        // the size counts pages of its size).
        let (a, b) = (
            k("50-a", json!(["hugepages=100"])),
            k("60-b", json!(["hugepagesz=1G hugepages=64"])),
        );
        let (c, d) = (
            k("50-a", json!(["hugepagesz=1G hugepages=64"])),
            k("60-b", json!(["hugepages=100"])),
        );
        let err = judged(&[a, b], &[c, d]).unwrap_err().to_string();
        assert!(
            err.contains("hugepages=100 is in both base and pr, with another reading in pr")
                && err.contains("reserve 164 GiB in all"),
            "{err}"
        );
        let ign = mc(json!({"config": {"ignition": {"version": "3.4.0"},
            "kernelArguments": {"shouldExist": ["hugepagesz=1G hugepages=65"]}}}));
        assert!(judged(&[], &[ign]).is_err());
    }

    /// Review 33 r33c: a prefix drop-in directory (`wait-for-br-.service.d`,
    /// `cri-.service.d`) is refused whatever unit file the pool writes at
    /// its name; a unit file outside /etc/systemd/system does not make a
    /// unit the pool's (`modprobe@.service` under /usr/lib); a service of
    /// the pool's own whose start may never end is refused, its drop-ins
    /// read with it.
    #[test]
    fn prefix_drop_ins_other_fragments_and_unbounded_starts() {
        let root = tempfile::tempdir().unwrap();
        let sleep = "[Service]\nExecStartPre=/bin/sleep infinity\n";
        let bounded = "[Service]\nType=oneshot\nTimeoutStartSec=2min\nExecStart=/bin/true\n";
        let files: Vec<(&str, &str)> = vec![
            ("/etc/systemd/system/wait-for-br-.service", bounded),
            (
                "/etc/systemd/system/wait-for-br-.service.d/10-wait.conf",
                sleep,
            ),
            ("/etc/systemd/system/cri-.service.d/10-wait.conf", sleep),
            ("/usr/lib/systemd/system/modprobe@.service", bounded),
            (
                "/etc/systemd/system/modprobe@.service.d/10-wait.conf",
                sleep,
            ),
            (
                "/etc/systemd/system/auth-rpcgss-module.service",
                "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sleep infinity\n",
            ),
            ("/etc/systemd/system/gpu-a.service", bounded),
            (
                "/etc/systemd/system/gpu-a.service.d/10-x.conf",
                "[Service]\nTimeoutStartSec=infinity\n",
            ),
            ("/etc/systemd/system/gpu-b.service", bounded),
            ("/etc/systemd/system/gpu-b.service.d/10-x.conf", sleep),
        ];
        for (path, text) in &files {
            let at = root.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        }
        let ids: BTreeMap<String, u64> = files.iter().map(|(p, _)| (p.to_string(), 1)).collect();
        let d = dependents(root.path(), &ids);
        let judged: Vec<&str> = d.keys().map(String::as_str).collect();
        assert_eq!(
            judged,
            [
                "/etc/systemd/system/auth-rpcgss-module.service",
                "/etc/systemd/system/cri-.service.d/10-wait.conf",
                "/etc/systemd/system/gpu-a.service",
                "/etc/systemd/system/gpu-a.service.d/10-x.conf",
                "/etc/systemd/system/modprobe@.service.d/10-wait.conf",
                "/etc/systemd/system/wait-for-br-.service.d/10-wait.conf",
            ]
        );
        let why = |p: &str| d[p].1.clone();
        assert!(why("/etc/systemd/system/cri-.service.d/10-wait.conf").contains("prefix drop-in"));
        assert!(
            why("/etc/systemd/system/auth-rpcgss-module.service")
                .contains("a oneshot service has no start timeout")
        );
        assert!(why("/etc/systemd/system/gpu-a.service").contains("TimeoutStartSec=infinity"));
    }

    /// Review 29 r29a F1: a drop-in is judged with its unit: one of a unit
    /// plan does not judge, or of a unit the pool does not write, is not
    /// judged either.
    #[test]
    fn drop_ins_are_judged_with_their_unit() {
        let root = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let at = root.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        };
        let sleep = "[Service]\nExecStartPre=/bin/sleep infinity\n";
        write(
            "/etc/systemd/system/team.service",
            "[Unit]\nBefore=kubelet.service\n",
        );
        write("/etc/systemd/system/team.service.d/x.conf", sleep);
        // Its start bounded (review 33 r33c F2), the drop-in's sleep too.
        write(
            "/etc/systemd/system/ok.service",
            "[Unit]\nDescription=ok\n[Service]\nType=oneshot\nTimeoutStartSec=5min\n",
        );
        write("/etc/systemd/system/ok.service.d/x.conf", sleep);
        write("/etc/systemd/system/gpu-.service.d/x.conf", sleep);
        write(
            "/etc/systemd/system/systemd-tmpfiles-setup.service.d/x.conf",
            sleep,
        );
        let files: BTreeMap<String, u64> = [
            "/etc/systemd/system/team.service",
            "/etc/systemd/system/team.service.d/x.conf",
            "/etc/systemd/system/ok.service",
            "/etc/systemd/system/ok.service.d/x.conf",
            "/etc/systemd/system/gpu-.service.d/x.conf",
            "/etc/systemd/system/systemd-tmpfiles-setup.service.d/x.conf",
        ]
        .into_iter()
        .map(|p| (p.to_string(), 1))
        .collect();
        let d = dependents(root.path(), &files);
        let judged: Vec<&str> = d.keys().map(String::as_str).collect();
        assert_eq!(
            judged,
            [
                "/etc/systemd/system/gpu-.service.d/x.conf",
                "/etc/systemd/system/systemd-tmpfiles-setup.service.d/x.conf",
                "/etc/systemd/system/team.service",
                "/etc/systemd/system/team.service.d/x.conf",
            ]
        );
    }

    /// Review 26 r26a F2: a unit of another name whose dependencies name
    /// kubelet's start (its `[Install] RequiredBy=` makes the refused
    /// `kubelet.service.requires/` link when enabled), and init's argv.
    #[test]
    fn other_units_naming_kubelet_s_start_and_init_s_arguments() {
        let defined = std::collections::BTreeSet::from(["x.service".to_string()]);
        let unit = |text: &str| reaches_start(text.as_bytes(), "x.service", &defined);
        for text in [
            "[Unit]\nBefore=kubelet.service\n[Service]\nExecStart=/bin/false\n[Install]\nRequiredBy=kubelet.service\n",
            "[Unit]\nConflicts=crio.service\n",
            "[Unit]\nRequires=x.service kubelet-dependencies.target\n",
            "[Install]\nWantedBy=\"kubelet.service\"\n",
            "[Unit]\nBefore=network-online.target\n",
            "[Unit]\nConflicts=multi-user.target\n",
            // Review 27 r27a F1: other names, specifiers, quotes, actions.
            "[Install]\nRequiredBy=%j.service\n",
            "[Unit]\nBefore=local-fs.target\n",
            "[Unit]\nBefore=multi-user.target\n",
            "[Install]\nRequiredBy=kube\"let.serv\"ice\n",
            "[Unit]\nOnSuccess=rescue.target\nOnSuccessJobMode=isolate\n",
            "[Unit]\nSuccessAction=reboot-force\n",
            "[Unit]\nWants=rescue.target\n",
            "[Unit]\nDefaultDependencies=no\n",
            "[Install]\nWantedBy=%j.service\n",
            // Review 28 r28a: what a deny-list of keys missed.
            "[Unit]\nWants=systemd-reboot.service\n",
            "[Unit]\nWants=emergency.target\n",
            "[Service]\nFailureAction=exit-force\n",
            "[Service]\nStartLimitAction=reboot-force\n",
        ] {
            assert!(unit(text).is_some(), "{text}");
        }
        for text in [
            "[Unit]\nAfter=kubelet.service\n[Install]\nWantedBy=multi-user.target\n",
            "[Unit]\nDescription=kubelet.service\n",
            "[Unit]\nWants=network-online.target x.service\nAfter=network-online.target\n",
        ] {
            assert_eq!(unit(text), None, "{text}");
        }
        for other in [
            "x.socket",
            "x.path",
            "x.timer",
            "usr-local-bin.mount",
            "system.slice",
            "slice",
        ] {
            let why = reaches_start(b"[Unit]\nDescription=x\n", other, &defined).unwrap();
            assert!(why.contains("plan judges services only"), "{other}: {why}");
        }
        let why = unit("[Install]\nRequiredBy=kubelet.service\n").unwrap();
        assert_eq!(why, "line 2: RequiredBy=kubelet.service (in [Install])");
        // What the kernel hands init: an option word, and all after `--`.
        for arg in [
            "--unit=rescue.target",
            "--crash-shell",
            "systemd.machine_id=x",
            "systemd.crash_action=reboot",
            "nosmt\u{120}rdinit=/bin/sh",
            "module_blacklist=ice",
            "root=/dev/sdb1",
            "cgroup_disable=memory",
            "noinitrd",
            "rd.driver.blacklist=overlay",
            "rd.cmdline=ask",
            "modprobe.blacklist=ice",
        ] {
            assert!(boot_changing(arg).is_some(), "{arg}");
        }
        let k = |args: Value| mc(json!({"kernelArguments": args}));
        let err = judged(&[], &[k(json!(["nosmt -- rescue2"]))])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("kernel argument spec.kernelArguments -- is in pr only"),
            "{err}"
        );
        assert!(judged(&[], &[k(json!(["nosmt", "--", "x"]))]).is_err());
        judged(
            &[],
            &[k(json!([
                "systemd.log_level=debug",
                "systemd.show-status=0"
            ]))],
        )
        .unwrap();
    }
}
