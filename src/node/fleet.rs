//! One live ISO for a fleet: at install time, in the live system, pick the
//! MachineConfigPool a machine belongs to from its own hardware, as the MCO
//! would place the node once it registers. std only: the selector
//! (`src/bin/kubelet-labeler-select.rs`) is a static program in the ISO.
//!
//! The labels come from `wrapper::plan::collect`, the function the wrapper
//! calls at every kubelet start, on the same compact rules and the same
//! facts reader, so the pool chosen at install and the labels the node
//! registers with come from one evaluation.
//!
//! The pool table (written by `iso fleet`, read here) is line-based text;
//! label keys and values hold no whitespace, so words split on spaces:
//!
//! ```text
//! kubelet-labeler-fleet 1
//! env KUBELET_LABELER_NODE_RULES=<compact rules>
//! pool worker-gpu custom worker-gpu.ign
//! in feature.node.kubernetes.io/gpu true
//! static node.kubernetes.io/worker-gpu=
//! device /dev/nvme0n1
//! pool worker worker worker.ign
//! in node-role.kubernetes.io/worker ""
//! ```
//!
//! A pool's `in`/`notin`/`exists`/`absent` lines are its `nodeSelector`
//! (matchLabels become `in` with one value); `static` lines are labels the
//! pool's own MachineConfigs register every node with; `device` is the pool's
//! own destination disk (coreos-installer's `dest-device`), when it has one.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::node::kubelet::Profile;
use crate::node::wrapper::plan;

/// First line of a pool table.
pub const TABLE_MAGIC: &str = "kubelet-labeler-fleet 1";
/// Where the installed system records the pool it was installed into: a
/// pool table whose first pool is that one, then every other pool of the
/// fleet ([`installed_record`]; records of releases before this one hold
/// the installed pool alone). The wrapper reads it at every kubelet start
/// and registers fenced when the labels select another pool
/// ([`pool_change`]); `explain` says the same.
pub const INSTALLED_POOL_PATH: &str = "/etc/kubelet-labeler/installed-pool";
/// The live system's paths (`iso fleet` writes them, the selector reads them).
pub const SELECT_PATH: &str = "/usr/local/bin/kubelet-labeler-select";
pub const TABLE_PATH: &str = "/etc/kubelet-labeler/fleet/pools";
/// The destination config coreos-installer's `ignition-file` names: only
/// the selector writes it, so an install without a choice finds no config.
pub const DEST_PATH: &str = "/run/kubelet-labeler-fleet/dest.ign";
/// coreos-installer's install configuration the selector writes when the
/// pools have their own destination devices: `iso fleet`'s own (`0000-…`)
/// then names none (coreos-installer refuses a second `dest-device`).
pub const DEVICE_CONFIG_PATH: &str =
    "/etc/coreos/installer.d/0001-kubelet-labeler-fleet-device.yaml";
/// The role label every OpenShift worker's kubelet registers with.
pub const WORKER_ROLE_LABEL: &str = "node-role.kubernetes.io/worker";

/// One `nodeSelector` requirement (Kubernetes label selector semantics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    fn matches(&self, labels: &[(String, String)]) -> bool {
        let get = |k: &str| labels.iter().rev().find(|(l, _)| l == k).map(|(_, v)| v);
        match self {
            Requirement::In(k, vs) => get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
        }
    }

    /// `key=value`, `key in (a,b)`, ... for messages.
    pub fn describe(&self) -> String {
        match self {
            Requirement::In(k, vs) if vs.len() == 1 => format!("{k}={}", vs[0]),
            Requirement::In(k, vs) => format!("{k} in ({})", vs.join(",")),
            Requirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
            Requirement::Exists(k) => k.clone(),
            Requirement::DoesNotExist(k) => format!("!{k}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolKind {
    /// The built-in `worker` pool: loses to one custom pool.
    Worker,
    Custom,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pool {
    pub name: String,
    pub kind: PoolKind,
    /// The destination config's file name, beside the table.
    pub config: String,
    pub selector: Vec<Requirement>,
    /// Labels the pool's MachineConfigs register every node with.
    pub static_labels: Vec<(String, String)>,
    /// The pool's own destination device; None: the ISO's `--dest-device`.
    pub device: Option<String>,
}

impl Pool {
    /// MCO: "a pool with a nil or empty selector ... should match nothing".
    pub fn matches(&self, labels: &[(String, String)]) -> bool {
        !self.selector.is_empty() && self.selector.iter().all(|r| r.matches(labels))
    }

    pub fn describe_selector(&self) -> String {
        let words: Vec<String> = self.selector.iter().map(Requirement::describe).collect();
        words.join(",")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// The wrapper's variables (rules, NFD label set, static labels).
    pub env: Vec<(String, String)>,
    pub pools: Vec<Pool>,
}

/// A label value as the table writes it: `""` for the empty value.
fn word(v: &str) -> &str {
    if v.is_empty() { "\"\"" } else { v }
}

fn unword(w: &str) -> String {
    if w == "\"\"" {
        String::new()
    } else {
        w.to_string()
    }
}

impl Table {
    pub fn to_text(&self) -> String {
        let mut out = format!("{TABLE_MAGIC}\n");
        for (k, v) in &self.env {
            out += &format!("env {k}={v}\n");
        }
        for p in &self.pools {
            out += &pool_text(p);
        }
        out
    }

    /// The table in `text`; the error names the line and what is wrong
    /// with it. std only, without anyhow, one message format: the wrapper
    /// reads the installed-pool record with it at every kubelet start.
    pub fn parse(text: &str) -> Result<Table, String> {
        let mut lines = text.lines();
        if lines.next() != Some(TABLE_MAGIC) {
            return Err(format!(
                "not a pool table (the first line is not {TABLE_MAGIC:?})"
            ));
        }
        let mut table = Table::default();
        for (n, line) in lines.enumerate() {
            if let Err(what) = table.parse_line(line) {
                return Err(format!("line {}: {what}: {line:?}", n + 2));
            }
        }
        Ok(table)
    }

    /// One line of a table into `self`.
    fn parse_line(&mut self, line: &str) -> Result<(), &'static str> {
        let mut words = line.split(' ').filter(|w| !w.is_empty());
        let Some(first) = words.next() else {
            return Ok(());
        };
        let rest: Vec<&str> = words.collect();
        let pool = self.pools.last_mut();
        match (first, pool) {
            ("env", _) => {
                let (k, v) = line
                    .trim_start_matches(' ')
                    .strip_prefix("env ")
                    .and_then(|l| l.split_once('='))
                    .ok_or("env without NAME=VALUE")?;
                self.env.push((k.to_string(), v.to_string()));
            }
            ("pool", _) => {
                let [name, kind, config] = rest[..] else {
                    return Err("not pool NAME worker|custom CONFIG");
                };
                let kind = match kind {
                    "worker" => PoolKind::Worker,
                    "custom" => PoolKind::Custom,
                    _ => return Err("a pool kind neither worker nor custom"),
                };
                if config.contains('/') {
                    return Err("a pool's config must be a name, not a path");
                }
                self.pools.push(Pool {
                    name: name.to_string(),
                    kind,
                    config: config.to_string(),
                    selector: Vec::new(),
                    static_labels: Vec::new(),
                    device: None,
                });
            }
            ("device", Some(p)) => match rest[..] {
                [dev] if dev.starts_with('/') && p.device.is_none() => {
                    p.device = Some(dev.to_string())
                }
                _ => return Err("not one device PATH per pool"),
            },
            ("static", Some(p)) => {
                let [kv] = rest[..] else {
                    return Err("not static KEY=VALUE");
                };
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                p.static_labels.push((k.to_string(), v.to_string()));
            }
            (op, Some(p)) => {
                let (key, values) = rest.split_first().ok_or("without a label key")?;
                let key = key.to_string();
                let values: Vec<String> = values.iter().map(|w| unword(w)).collect();
                p.selector.push(match op {
                    "in" => Requirement::In(key, values),
                    "notin" => Requirement::NotIn(key, values),
                    "exists" => Requirement::Exists(key),
                    "absent" => Requirement::DoesNotExist(key),
                    _ => return Err("an unknown word"),
                });
            }
            (_, None) => return Err("before any pool line"),
        }
        Ok(())
    }
}

/// One pool's lines of a table.
pub fn pool_text(p: &Pool) -> String {
    let kind = match p.kind {
        PoolKind::Worker => "worker",
        PoolKind::Custom => "custom",
    };
    let mut out = format!("pool {} {kind} {}\n", p.name, p.config);
    for r in &p.selector {
        let line = match r {
            Requirement::In(k, vs) | Requirement::NotIn(k, vs) => {
                let op = if matches!(r, Requirement::In(..)) {
                    "in"
                } else {
                    "notin"
                };
                let vs: Vec<&str> = vs.iter().map(|v| word(v)).collect();
                format!("{op} {k} {}", vs.join(" "))
            }
            Requirement::Exists(k) => format!("exists {k}"),
            Requirement::DoesNotExist(k) => format!("absent {k}"),
        };
        out += line.trim_end();
        out.push('\n');
    }
    for (k, v) in &p.static_labels {
        out += &format!("static {k}={v}\n");
    }
    if let Some(dev) = &p.device {
        out += &format!("device {dev}\n");
    }
    out
}

/// The control-plane pool: the MCO tells it by its name (`ListPools`), as
/// it tells `worker`. It is never an install target; the record lists it
/// (`iso fleet --cluster-pools`) as `custom`, so a reader of an earlier
/// release parses it and still sees a move into it.
pub const MASTER_POOL: &str = "master";

/// The pool the MCO would make primary for a node with `labels`
/// (`GetPoolsForNode`, pools told apart by `ListPools`: `master` by its
/// name, `worker` by its kind, every other one custom): two custom pools is
/// an error; else `master` beats one custom pool (the MCO logs that the
/// custom pool's config is not applied), which beats `worker`; no pool is
/// an error.
pub fn choose<'a>(pools: &'a [Pool], labels: &[(String, String)]) -> Result<&'a Pool, String> {
    let matching: Vec<&Pool> = pools.iter().filter(|p| p.matches(labels)).collect();
    let master = matching.iter().find(|p| p.name == MASTER_POOL);
    let custom: Vec<&&Pool> = matching
        .iter()
        .filter(|p| p.kind == PoolKind::Custom && p.name != MASTER_POOL)
        .collect();
    let worker = matching.iter().find(|p| p.kind == PoolKind::Worker);
    match (custom.as_slice(), master, worker) {
        ([_, _, ..], _, _) => Err(format!(
            "this machine's labels ({}) match {} custom pools ({}); the MCO refuses a node in two custom pools",
            describe_labels(&selected_labels(pools, labels)),
            custom.len(),
            custom
                .iter()
                .map(|p| format!("{} ({})", p.name, p.describe_selector()))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        (_, Some(master), _) => Ok(master),
        ([one], None, _) => Ok(one),
        ([], None, Some(worker)) => Ok(worker),
        ([], None, None) => Err(format!(
            "no pool's nodeSelector matches this machine's labels ({} of {} selected on); pools: {}",
            describe_labels(&selected_labels(pools, labels)),
            labels.len(),
            pools
                .iter()
                .map(|p| format!("{} ({})", p.name, p.describe_selector()))
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}

/// The installed-pool record of a machine installed into `installed`, one
/// of `pools` (the fleet's table): that pool first, then the others, so a
/// reader of the one-pool records before it (the first pool is the
/// installed one) reads it unchanged. Without the table's variables: the
/// node has its own.
pub fn installed_record(installed: &Pool, pools: &[Pool]) -> Table {
    installed_record_with(installed, pools, &[])
}

/// The `config` of a pool the record lists only to judge by (`iso fleet
/// --cluster-pools`): one of the cluster's pools not on the ISO, never an
/// install target (the live table, which the selector installs from, does
/// not hold it).
pub const CLUSTER_POOL_CONFIG: &str = "-";

/// [`installed_record`], then each pool of `cluster` (the cluster's
/// MachineConfigPools) not among `pools`, with [`CLUSTER_POOL_CONFIG`]:
/// the wrapper's fence and the sync's guard choose among them too, so a
/// label change selecting a pool left off the ISO is seen.
pub fn installed_record_with(installed: &Pool, pools: &[Pool], cluster: &[Pool]) -> Table {
    let mut all = vec![installed.clone()];
    all.extend(pools.iter().filter(|p| p.name != installed.name).cloned());
    for p in cluster {
        if !all.iter().any(|a| a.name == p.name) {
            all.push(Pool {
                config: CLUSTER_POOL_CONFIG.to_string(),
                static_labels: Vec::new(),
                device: None,
                ..p.clone()
            });
        }
    }
    Table {
        env: Vec::new(),
        pools: all,
    }
}

/// Why a node whose installed-pool record is `record` must not register
/// with `labels` unfenced: they select another pool than the one it was
/// installed into (the record's first), or none, or two custom pools.
/// None when they select it. With a record of one pool (an earlier
/// release's, or a fleet of one pool) that is: they no longer match its
/// nodeSelector.
pub fn pool_change(record: &Table, labels: &[(String, String)]) -> Option<String> {
    let Some(installed) = record.pools.first() else {
        return Some(format!("{INSTALLED_POOL_PATH} names no pool"));
    };
    let head = format!(
        "installed into pool {} ({INSTALLED_POOL_PATH}), but",
        installed.name
    );
    match choose(&record.pools, labels) {
        Ok(p) if p.name == installed.name => None,
        Ok(p) => Some(format!(
            "{head} the labels it registers with ({}) select pool {} (nodeSelector {})",
            describe_labels(&selected_labels(&record.pools, labels)),
            p.name,
            p.describe_selector()
        )),
        Err(why) => Some(format!("{head} {why}")),
    }
}

/// The labels any pool selects on, for messages (a node has dozens).
pub fn selected_labels(pools: &[Pool], labels: &[(String, String)]) -> Vec<(String, String)> {
    let key = |r: &Requirement| match r {
        Requirement::In(k, _)
        | Requirement::NotIn(k, _)
        | Requirement::Exists(k)
        | Requirement::DoesNotExist(k) => k.clone(),
    };
    let keys: Vec<String> = pools
        .iter()
        .flat_map(|p| p.selector.iter().map(key))
        .collect();
    labels
        .iter()
        .filter(|(k, _)| keys.contains(k))
        .cloned()
        .collect()
}

pub fn describe_labels(labels: &[(String, String)]) -> String {
    let words: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    words.join(",")
}

/// Kubernetes' name for this machine's architecture (`kubernetes.io/arch`).
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// The labels a worker registers with before ours: the role label of the
/// MCO's kubelet command and the ones kubelet sets itself (the beta pair
/// too: kubelet still sets it, and older pools select on it).
pub fn base_labels() -> Vec<(String, String)> {
    vec![
        ("beta.kubernetes.io/arch".into(), go_arch().into()),
        ("beta.kubernetes.io/os".into(), "linux".into()),
        ("kubernetes.io/arch".into(), go_arch().into()),
        ("kubernetes.io/os".into(), "linux".into()),
        (WORKER_ROLE_LABEL.into(), String::new()),
    ]
}

/// The MCO's worker kubelet command registers with
/// `node.openshift.io/os_id=${ID}`, `ID` from `EnvironmentFile=/etc/os-release`
/// (empty when unset); the live ISO's os-release is the installed system's.
pub fn os_id_label(root: &Path) -> (String, String) {
    // (One longer than the wrapper reads: no ID known, as unreadable.)
    let id = crate::node::facts::system::osrelease(root)
        .ok()
        .flatten()
        .and_then(|m| m.get("ID").cloned())
        .unwrap_or_default();
    ("node.openshift.io/os_id".into(), id)
}

/// The labels this machine registers with under `env` (the wrapper's
/// variables): the base labels, then what the wrapper adds. Err when the
/// wrapper would start kubelet without its additions, or left a rule or a
/// source out: the install must not guess.
pub fn registration_labels(
    env: &[(String, String)],
    facts_root: &Path,
) -> Result<Vec<(String, String)>, String> {
    let env: Vec<(OsString, OsString)> = env.iter().map(|(k, v)| (k.into(), v.into())).collect();
    let collected = plan::collect(
        &env,
        &[],
        facts_root,
        Profile::OpenShift,
        plan::FactsScope::Used,
    );
    let additions = collected
        .additions
        .map_err(|e| format!("the node rules cannot be used: {e:#}"))?;
    let left_out: Vec<&String> = collected
        .notes
        .iter()
        // Benign: the same happens at registration (a static label wins,
        // NFD drops what it never applies).
        .filter(|n| !n.contains(" wins over ") && !n.starts_with("NFD would not apply"))
        .collect();
    if let Some(first) = left_out.first() {
        return Err(format!(
            "the wrapper would not register all the rules' labels: {first}"
        ));
    }
    let mut labels = base_labels();
    labels.push(os_id_label(facts_root));
    for (k, v) in additions.map(|a| a.labels).unwrap_or_default() {
        labels.retain(|(l, _)| *l != k);
        labels.push((k, v));
    }
    labels.sort();
    Ok(labels)
}

/// A pool and the labels it was chosen by.
pub type Decision<'a> = (&'a Pool, Vec<(String, String)>);

/// The whole install-time decision: the pool, and the labels it was chosen by.
pub fn decide<'a>(table: &'a Table, facts_root: &Path) -> Result<Decision<'a>, String> {
    let labels = registration_labels(&table.env, facts_root)?;
    let pool = choose(&table.pools, &labels)?;
    // The pool's own MachineConfigs may add labels: with them the node must
    // still land in this pool.
    if !pool.static_labels.is_empty() {
        let mut with = labels.clone();
        with.extend(pool.static_labels.iter().cloned());
        match choose(&table.pools, &with) {
            Ok(p) if p.name == pool.name => {}
            Ok(p) => {
                return Err(format!(
                    "pool {}'s MachineConfigs add labels ({}) that place the node in pool {}",
                    pool.name,
                    describe_labels(&pool.static_labels),
                    p.name
                ));
            }
            Err(e) => return Err(format!("with pool {}'s own labels: {e}", pool.name)),
        }
    }
    Ok((pool, labels))
}

const USAGE: &str = "usage: kubelet-labeler-select [--table FILE] [--dest FILE] \
     [--device-config FILE] [--facts-root DIR] [--dry-run]";

struct SelectOptions {
    table: PathBuf,
    dest: PathBuf,
    device_config: PathBuf,
    facts_root: PathBuf,
    dry_run: bool,
}

fn parse_args(args: &[OsString]) -> Result<SelectOptions> {
    let mut o = SelectOptions {
        table: TABLE_PATH.into(),
        dest: DEST_PATH.into(),
        device_config: DEVICE_CONFIG_PATH.into(),
        facts_root: "/".into(),
        dry_run: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || -> Result<PathBuf> {
            Ok(PathBuf::from(it.next().with_context(|| {
                format!("{} needs a value; {USAGE}", a.to_string_lossy())
            })?))
        };
        match a.to_str() {
            Some("--table") => o.table = value()?,
            Some("--dest") => o.dest = value()?,
            Some("--device-config") => o.device_config = value()?,
            Some("--facts-root") => o.facts_root = value()?,
            Some("--dry-run") => o.dry_run = true,
            _ => bail!("unknown argument {a:?}; {USAGE}"),
        }
    }
    Ok(o)
}

/// Copy the chosen pool's config to `dest`, and its own device, if it has
/// one, to `device_config`.
fn install_config(o: &SelectOptions, pool: &Pool) -> Result<()> {
    let dir = o.table.parent().unwrap_or(Path::new("."));
    let src = dir.join(&pool.config);
    let bytes = std::fs::read(&src).with_context(|| format!("reading {}", src.display()))?;
    if let Some(dev) = &pool.device {
        let text = format!(
            "# kubelet-labeler: pool {}'s destination device\ndest-device: \"{dev}\"\n",
            pool.name
        );
        write_file(&o.device_config, text.as_bytes())?;
    }
    write_file(&o.dest, &bytes)
}

/// Write `bytes` to `dest` (temp file, then rename).
fn write_file(dest: &Path, bytes: &[u8]) -> Result<()> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let tmp = dest.with_extension("tmp");
    {
        let mut f =
            std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        f.write_all(bytes)
            .and_then(|_| f.sync_all())
            .with_context(|| format!("writing {}", tmp.display()))?;
    }
    std::fs::rename(&tmp, dest).with_context(|| format!("renaming into {}", dest.display()))
}

/// The selector's main: 0 when the destination config is in place, 1 when
/// the install must not proceed (the reason on stderr, one line), 2 usage.
pub fn run(args: &[OsString]) -> i32 {
    let say = |line: String| {
        let _ = std::io::stderr().write_all(format!("kubelet-labeler: {line}\n").as_bytes());
    };
    let o = match parse_args(args) {
        Ok(o) => o,
        Err(e) => {
            say(format!("{e:#}"));
            return 2;
        }
    };
    // A destination config or device left from before must not be used.
    if !o.dry_run {
        let _ = std::fs::remove_file(&o.dest);
        let _ = std::fs::remove_file(&o.device_config);
    }
    let table = match std::fs::read_to_string(&o.table)
        .map_err(|e| e.to_string())
        .and_then(|t| Table::parse(&t))
    {
        Ok(t) => t,
        Err(e) => {
            say(format!(
                "not installing: reading the pool table {}: {e:#}",
                o.table.display()
            ));
            return 1;
        }
    };
    let (pool, labels) = match decide(&table, &o.facts_root) {
        Ok(d) => d,
        Err(why) => {
            say(format!("not installing: {why}"));
            return 1;
        }
    };
    if !o.dry_run
        && let Err(e) = install_config(&o, pool)
    {
        say(format!(
            "not installing: writing pool {}'s config: {e:#}",
            pool.name
        ));
        return 1;
    }
    let device = match &pool.device {
        Some(dev) => format!("; coreos-installer writes {dev}"),
        None => String::new(),
    };
    say(format!(
        "{} pool {}: this machine's labels ({}) match its nodeSelector ({}){device}",
        if o.dry_run {
            "would install into"
        } else {
            "installing into"
        },
        pool.name,
        describe_labels(&selected_labels(&table.pools, &labels)),
        pool.describe_selector()
    ));
    0
}

/// A pool selecting `key=value`, for tests of the pool checks.
#[cfg(test)]
pub(crate) fn tests_pool(name: &str, kind: PoolKind, key: &str, value: &str) -> Pool {
    Pool {
        name: name.into(),
        kind,
        config: format!("{name}.ign"),
        selector: vec![Requirement::In(key.into(), vec![value.into()])],
        static_labels: Vec::new(),
        device: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `iso fleet` recognises the selector by its usage line.
    #[test]
    fn usage_starts_with_the_head_iso_fleet_looks_for() {
        assert!(USAGE.starts_with(crate::node::contract::SELECTOR_USAGE_HEAD));
    }

    fn l(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn pool(name: &str, kind: PoolKind, sel: Vec<Requirement>) -> Pool {
        Pool {
            name: name.into(),
            kind,
            config: format!("{name}.ign"),
            selector: sel,
            static_labels: Vec::new(),
            device: None,
        }
    }

    fn is(k: &str, v: &str) -> Requirement {
        Requirement::In(k.into(), vec![v.into()])
    }

    fn pools() -> Vec<Pool> {
        vec![
            pool("worker", PoolKind::Worker, vec![is(WORKER_ROLE_LABEL, "")]),
            pool("gpu", PoolKind::Custom, vec![is("example.com/gpu", "true")]),
            pool(
                "arm",
                PoolKind::Custom,
                vec![Requirement::Exists("example.com/arm".into())],
            ),
        ]
    }

    #[test]
    fn mco_precedence() {
        let p = pools();
        let worker = l(&[(WORKER_ROLE_LABEL, "")]);
        assert_eq!(choose(&p, &worker).unwrap().name, "worker");
        let gpu = l(&[(WORKER_ROLE_LABEL, ""), ("example.com/gpu", "true")]);
        assert_eq!(choose(&p, &gpu).unwrap().name, "gpu");
        let both = l(&[
            (WORKER_ROLE_LABEL, ""),
            ("example.com/gpu", "true"),
            ("example.com/arm", ""),
        ]);
        let e = choose(&p, &both).unwrap_err();
        assert!(
            e.contains("2 custom pools") && e.contains("gpu") && e.contains("arm"),
            "{e}"
        );
        let none = l(&[("example.com/gpu", "false"), ("other", "x")]);
        let e = choose(&p, &none).unwrap_err();
        assert!(
            e.contains("no pool") && e.contains("(example.com/gpu=false of 2"),
            "{e}"
        );
        // An empty selector matches nothing (MCO), not everything (k8s).
        let empty = vec![pool("any", PoolKind::Custom, vec![])];
        assert!(choose(&empty, &worker).is_err());
    }

    /// The MCO's `GetPoolsForNode` with `master` (told by its name, as
    /// the record writes it: `custom`, so earlier readers parse it): two
    /// custom pools are an error even with master; else master beats one
    /// custom pool, and worker (r19c F6).
    #[test]
    fn master_beats_one_custom_pool_as_the_mco_has_it() {
        let mut p = pools();
        p.push(pool(
            MASTER_POOL,
            PoolKind::Custom,
            vec![is("node-role.kubernetes.io/master", "")],
        ));
        let t = Table {
            env: Vec::new(),
            pools: p,
        };
        let p = Table::parse(&t.to_text()).unwrap().pools;
        let m = ("node-role.kubernetes.io/master", "");
        let w = (WORKER_ROLE_LABEL, "");
        let gpu = ("example.com/gpu", "true");
        assert_eq!(choose(&p, &l(&[w, m])).unwrap().name, "master");
        assert_eq!(choose(&p, &l(&[m])).unwrap().name, "master");
        assert_eq!(choose(&p, &l(&[w, gpu, m])).unwrap().name, "master");
        let e = choose(&p, &l(&[w, gpu, ("example.com/arm", ""), m])).unwrap_err();
        assert!(e.contains("2 custom pools"), "{e}");
        // A worker of pool gpu whose labels gain the master role: a move.
        let record = installed_record(&p[1], &p);
        let why = pool_change(&record, &l(&[w, gpu, m])).unwrap();
        assert!(why.contains("select pool master"), "{why}");
        assert_eq!(pool_change(&record, &l(&[w, gpu])), None);
    }

    #[test]
    fn selector_operators() {
        let labels = l(&[("a", "1"), ("b", "")]);
        assert!(Requirement::In("a".into(), vec!["1".into(), "2".into()]).matches(&labels));
        assert!(!Requirement::In("c".into(), vec!["".into()]).matches(&labels));
        assert!(Requirement::NotIn("a".into(), vec!["2".into()]).matches(&labels));
        assert!(Requirement::NotIn("c".into(), vec!["2".into()]).matches(&labels));
        assert!(!Requirement::NotIn("a".into(), vec!["1".into()]).matches(&labels));
        assert!(Requirement::Exists("b".into()).matches(&labels));
        assert!(Requirement::DoesNotExist("c".into()).matches(&labels));
        assert!(!Requirement::DoesNotExist("a".into()).matches(&labels));
    }

    #[test]
    fn table_round_trips() {
        let mut p = pools();
        p[1].static_labels = l(&[("example.com/gpu", "true")]);
        p[1].device = Some("/dev/nvme0n1".into());
        p[2].selector
            .push(Requirement::NotIn("x".into(), vec!["".into(), "y".into()]));
        p[2].selector.push(Requirement::DoesNotExist("z".into()));
        let t = Table {
            env: l(&[("KUBELET_LABELER_NODE_RULES", "KLR2:abc=d")]),
            pools: p,
        };
        let text = t.to_text();
        assert_eq!(Table::parse(&text).unwrap(), t, "{text}");
        for bad in [
            "",
            "kubelet-labeler-fleet 2\n",
            "kubelet-labeler-fleet 1\nin a b\n",
            "kubelet-labeler-fleet 1\npool a other a.ign\n",
            "kubelet-labeler-fleet 1\npool a custom ../a.ign\n",
            "kubelet-labeler-fleet 1\npool a custom a.ign\nmaybe a\n",
            "kubelet-labeler-fleet 1\nenv\n",
            "kubelet-labeler-fleet 1\n env\n",
        ] {
            assert!(Table::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn unreadable_rules_stop_the_install() {
        let dir = tempfile::tempdir().unwrap();
        for (var, value) in [
            (crate::node::contract::RULES_VAR, "KLR2,garbage"),
            (crate::node::contract::NFD_LABELS_VAR, "sideways"),
        ] {
            let t = Table {
                env: l(&[(var, value)]),
                pools: pools(),
            };
            let e = decide(&t, dir.path()).unwrap_err();
            assert!(e.contains(var), "{e}");
        }
    }

    /// Pools may select on any label the node registers with: kubelet's
    /// beta arch label and the MCO's os_id count at install as at
    /// registration.
    #[test]
    fn kubelet_and_mco_labels_count() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::write(
            dir.path().join("etc/os-release"),
            "NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhcos\"\n",
        )
        .unwrap();
        for sel in [
            is("node.openshift.io/os_id", "rhcos"),
            is("beta.kubernetes.io/arch", go_arch()),
        ] {
            let mut t = Table {
                env: Vec::new(),
                pools: pools(),
            };
            t.pools
                .push(pool("special", PoolKind::Custom, vec![sel.clone()]));
            assert_eq!(decide(&t, dir.path()).unwrap().0.name, "special", "{sel:?}");
        }
        // No os-release: systemd expands ${ID} to nothing.
        let none = tempfile::tempdir().unwrap();
        assert_eq!(os_id_label(none.path()).1, "");
    }

    #[test]
    fn static_labels_must_keep_the_node_in_its_pool() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Table {
            env: Vec::new(),
            pools: pools(),
        };
        // No rules: a worker, whose config adds the gpu label: it would
        // register into gpu.
        t.pools[0].static_labels = l(&[("example.com/gpu", "true")]);
        let e = decide(&t, dir.path()).unwrap_err();
        assert!(e.contains("place the node in pool gpu"), "{e}");
        t.pools[0].static_labels.clear();
        assert_eq!(decide(&t, dir.path()).unwrap().0.name, "worker");
    }

    /// A pool with its own device: the selector writes coreos-installer's
    /// override beside the destination config; a pool without one leaves
    /// none, not even one from an earlier run; `--dry-run` writes nothing.
    #[test]
    fn a_pools_own_device_is_written_for_coreos_installer() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let facts = d.join("facts");
        std::fs::create_dir_all(&facts).unwrap();
        let mut t = Table {
            env: Vec::new(),
            pools: vec![pool(
                "worker",
                PoolKind::Worker,
                vec![is(WORKER_ROLE_LABEL, "")],
            )],
        };
        let (table, dest, dev) = (d.join("pools"), d.join("run/dest.ign"), d.join("0001.yaml"));
        std::fs::write(d.join("worker.ign"), "{}").unwrap();
        let args = |extra: &[&str]| -> Vec<OsString> {
            let mut v: Vec<OsString> = vec![
                "--table".into(),
                table.clone().into(),
                "--dest".into(),
                dest.clone().into(),
                "--device-config".into(),
                dev.clone().into(),
                "--facts-root".into(),
                facts.clone().into(),
            ];
            v.extend(extra.iter().map(OsString::from));
            v
        };
        t.pools[0].device = Some("/dev/disk/by-path/pci-0000:00:17.0-ata-1".into());
        std::fs::write(&table, t.to_text()).unwrap();
        assert_eq!(run(&args(&["--dry-run"])), 0);
        assert!(!dest.exists() && !dev.exists());
        assert_eq!(run(&args(&[])), 0);
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "{}");
        assert_eq!(
            std::fs::read_to_string(&dev).unwrap(),
            "# kubelet-labeler: pool worker's destination device\n\
             dest-device: \"/dev/disk/by-path/pci-0000:00:17.0-ata-1\"\n"
        );
        t.pools[0].device = None;
        std::fs::write(&table, t.to_text()).unwrap();
        assert_eq!(run(&args(&[])), 0);
        assert!(dest.exists() && !dev.exists());
    }
}
