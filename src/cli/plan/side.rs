//! One render as plan reads it: each pool's MachineConfigs laid out as
//! the MCO merges them (computed once per pool), and what plan judges
//! there (kubelet's environment and command line, render's own files).

use std::collections::BTreeMap;
use std::ffi::OsString;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::kube::Pool;
use super::policy::Changed;
use super::{
    Against, Registration, cluster_unit, formats, inputs, kubelet_start, kubelet_unit, pool_tree,
    render_files, rendered_diff,
};
use crate::node::contract::POOL_LABEL_VAR;
use crate::node::sorted::SortedSet;
use crate::node::sync::reconcile::Desired;
use crate::node::wrapper::{derived, own_env, plan as wplan};

/// One side's env and files for one pool.
pub(super) struct PoolRender {
    pub(super) env: Vec<(OsString, OsString)>,
    /// Each file, unit and `passwd` as the MCO's daemon compares them
    /// (a digest: every pool holds worker's).
    pub(super) changes: BTreeMap<Changed, rendered_diff::Digest>,
    /// Each path's hash of what is written there (kubelet's config files
    /// told apart; empty: the pool's MachineConfigs write nothing).
    pub(super) files: BTreeMap<String, u64>,
    /// What kubelet.service reads there (`kubelet_unit`).
    pub(super) kubelet: kubelet_unit::Reads,
    /// Unit files of other units naming kubelet's start
    /// (`kubelet_start::dependents`).
    pub(super) start_dependents: kubelet_start::Dependents,
    /// Render's policy files there, judged (`render_files`).
    pub(super) ours: render_files::Files,
    pub(super) pool_label: Option<String>,
    /// The node formats of our files in the pool's MachineConfigs.
    pub(super) formats: formats::Formats,
    /// The render's MachineConfigs of the pool (their indices in
    /// `Render::machineconfigs`: the render holds them once, whatever the
    /// number of pools), for what the MCO judges beyond the files
    /// (`reconcilable`).
    pub(super) configs: Vec<usize>,
    /// Why the wrapper never runs on the pool's nodes though our drop-in
    /// is there (as `explain` judges it: the generator missing or not
    /// executable, our drop-in hidden or taken back by a later one): they
    /// register with nothing of ours.
    pub(super) wrapper_off: Option<String>,
    /// Our variables set otherwise than our drop-ins set them (an
    /// `EnvironmentFile=` of kubelet's), the note naming them: the nodes
    /// register with ours, fenced, and the sync changes no label.
    pub(super) overridden: Option<String>,
}

/// One render and what it gives each pool (computed once per pool).
pub(super) struct Side {
    pub(super) render: inputs::Render,
    pub(super) pools: Vec<Pool>,
    pub(super) cache: BTreeMap<String, std::rc::Rc<PoolRender>>,
    /// The same by the MachineConfigs a pool takes: pools taking the same
    /// ones share one layout (review 44 r44b F1: 10 pools of one 608 KB
    /// MachineConfig were 10 layouts, 103 s).
    by_configs: std::collections::HashMap<Vec<usize>, std::rc::Rc<PoolRender>>,
    /// The files and directories laid out for this side's pools, in all.
    laid_out: usize,
    /// The digests of `render`'s JSON the pools compare, each taken once
    /// (`render` stays as it is while the side lives).
    pub(super) memo: rendered_diff::Memo,
    /// (pool, feature set) → registration: each distinct feature set of a
    /// pool is evaluated once.
    pub(super) registrations:
        std::collections::HashMap<(String, Option<usize>), (Registration, Option<Desired>)>,
    /// (pool before, pool after) → the MCO's refusal of the change and the
    /// OS changes it reboots for (kept on the proposed side).
    pub(super) against: std::collections::HashMap<(String, String), Against>,
    pub(super) vouched: std::rc::Rc<render_files::Vouched>,
    /// The team's own unit name prefixes (`--own-unit-prefix`).
    pub(super) own_units: std::rc::Rc<[String]>,
}

impl Side {
    pub(super) fn new(
        render: inputs::Render,
        vouched: &std::rc::Rc<render_files::Vouched>,
        own_units: &std::rc::Rc<[String]>,
    ) -> Side {
        let pools = render.pools.iter().filter_map(Pool::from_object).collect();
        Side {
            memo: rendered_diff::Memo::new(&render.machineconfigs),
            render,
            pools,
            cache: BTreeMap::new(),
            by_configs: Default::default(),
            laid_out: 0,
            registrations: Default::default(),
            against: Default::default(),
            vouched: vouched.clone(),
            own_units: own_units.clone(),
        }
    }

    /// Every pool's env this render gives (its pools', and worker's).
    pub(super) fn all_envs(&mut self) -> Result<()> {
        let mut names: Vec<Pool> = self.pools.clone();
        names.push(Pool::builtin("worker"));
        names.push(Pool::builtin("master"));
        // Bounded before any is laid out: every distinct set of
        // MachineConfigs is a layout of its own.
        let mut sets: std::collections::HashSet<Vec<usize>> = Default::default();
        let mut entries = 0;
        for p in &names {
            let own = takes(&self.render, p);
            if !self.by_configs.contains_key(&own) && sets.insert(own.clone()) {
                entries += entries_of(&self.render, &own)?;
                self.check_laid_out(entries, p)?;
            }
        }
        for p in names {
            self.pool(&p)?;
        }
        Ok(())
    }

    pub(super) fn pool(&mut self, pool: &Pool) -> Result<&PoolRender> {
        if !self.cache.contains_key(&pool.name) {
            let own = takes(&self.render, pool);
            let r = match self.by_configs.get(&own) {
                Some(r) => r.clone(),
                None => {
                    self.laid_out += entries_of(&self.render, &own)?;
                    self.check_laid_out(self.laid_out, pool)?;
                    let r = lay_out(
                        &self.render,
                        pool,
                        own.clone(),
                        &mut self.memo,
                        (&self.vouched, &self.own_units),
                    )?;
                    let r = std::rc::Rc::new(r);
                    self.by_configs.insert(own, r.clone());
                    r
                }
            };
            self.cache.insert(pool.name.clone(), r);
        }
        Ok(&self.cache[&pool.name])
    }

    fn check_laid_out(&self, entries: usize, pool: &Pool) -> Result<()> {
        if entries > LAID_OUT_MAX {
            bail!(
                "{}: pool {}: the pools' MachineConfigs come to more than the {LAID_OUT_MAX} \
                 files and directories plan lays out for one side (each pool taking other \
                 MachineConfigs is laid out anew); give fewer pools, or MachineConfigs with \
                 fewer files",
                self.render.name,
                pool.name
            );
        }
        Ok(())
    }
}

/// The files and directories the render's MachineConfigs `own` make when
/// laid out (review 45 r45b F2: 30,000 files in one directory counted as
/// two directories, laid out anew for each pool), the directories bounded
/// as a layout's are (`check_tree_shape`).
fn entries_of(render: &inputs::Render, own: &[usize]) -> Result<usize> {
    let mut paths: Vec<String> = Vec::new();
    for mc in own.iter().map(|&i| &render.machineconfigs[i]) {
        let list =
            |p: &str| (mc.pointer(p).and_then(Value::as_array).into_iter()).flat_map(|a| a.iter());
        for kind in ["files", "directories", "links"] {
            for e in list(&format!("/spec/config/storage/{kind}")) {
                paths.extend(e.get("path").and_then(Value::as_str).map(str::to_string));
            }
        }
        for u in list("/spec/config/systemd/units") {
            let name = u.get("name").and_then(Value::as_str).unwrap_or_default();
            paths.push(format!("/etc/systemd/system/{name}"));
            for d in (u.get("dropins").and_then(Value::as_array).into_iter()).flatten() {
                let d = d.get("name").and_then(Value::as_str).unwrap_or_default();
                paths.push(format!("/etc/systemd/system/{name}.d/{d}"));
            }
        }
    }
    let dirs = crate::cli::render::check_tree_shape(paths.iter().map(String::as_str))
        .with_context(|| format!("{}: a pool's MachineConfigs", render.name))?;
    Ok(dirs + paths.len())
}

/// The files and directories one side's pools may lay out in all (real clusters:
/// a few pools of a few hundred).
const LAID_OUT_MAX: usize = 50_000;

/// The render's MachineConfigs `pool` takes (their indices).
fn takes(render: &inputs::Render, pool: &Pool) -> Vec<usize> {
    (render.machineconfigs.iter().enumerate())
        .filter(|(_, mc)| pool.takes(&string_map(mc.pointer("/metadata/labels"))))
        .map(|(i, _)| i)
        .collect()
}

/// The pool's MachineConfigs of this render (`own`), laid out as the MCO
/// merges them, and the kubelet environment our drop-ins give there.
fn lay_out(
    render: &inputs::Render,
    pool: &Pool,
    own: Vec<usize>,
    memo: &mut rendered_diff::Memo,
    (vouched, own_units): (&render_files::Vouched, &[String]),
) -> Result<PoolRender> {
    let configs: Vec<&Value> = own.iter().map(|&i| &render.machineconfigs[i]).collect();
    // The MCO's merge refuses a MachineConfig without labels (which a
    // `NotIn` selector takes): the pool renders nothing of the change.
    let unlabelled = configs
        .iter()
        .find(|mc| mc.pointer("/metadata/labels").is_none_or(Value::is_null));
    if let Some(mc) = unlabelled {
        bail!(
            "{}: pool {} selects MachineConfig {:?}, which has no labels: the MCO refuses to \
             render the pool (\"cannot find label in MachineConfig\"), so nothing of the change \
             reaches its nodes; label it with its pool's role",
            render.name,
            pool.name,
            crate::cli::render::layout::mc_name(mc)
        );
    }
    let formats = formats::of_configs(configs.iter().copied());
    // What the MCO's daemon compares, over the same stand-in for the
    // cluster's kubelet.service that the layout takes: digests, each of
    // the render's JSON taken once (`memo`).
    let stand_in = cluster_unit::stand_in(&configs);
    let configs: Vec<&Value> = stand_in.iter().chain(configs).collect();
    let changes = rendered_diff::identities(&configs, memo)
        .with_context(|| format!("{}: pool {}", render.name, pool.name))?;
    // A copy of them while the pool is laid out.
    let owners = render_files::owners(&configs);
    let tree = pool_tree::lay_out_with_stand_in(configs.into_iter().cloned().collect())
        .with_context(|| format!("{}: pool {}", render.name, pool.name))?;
    let files = tree.layout.identities();
    let kubelet = kubelet_unit::reads(&tree.root, &files, &tree.svc.environment_files);
    let ours = render_files::judge(&tree.root, &files, &owners, vouched);
    let start_dependents = kubelet_start::dependents(&tree.root, &files, own_units);
    let pool_label = tree
        .env
        .iter()
        .rfind(|(k, _)| k == POOL_LABEL_VAR)
        .map(|(_, v)| v.to_string_lossy().trim().to_string())
        .filter(|v| !v.is_empty());
    let wrapper_off = tree.wrapper_off();
    let overridden = (!tree.overridden.is_empty()).then(|| own_env::note(&tree.overridden));
    let env = tree.env;
    Ok(PoolRender {
        env,
        changes,
        files,
        kubelet,
        ours,
        start_dependents,
        pool_label,
        formats,
        configs: own,
        wrapper_off,
        overridden,
    })
}

/// The features the rules and NFD label sets of an env (both layers) read.
pub(super) fn features_read(env: &[(OsString, OsString)]) -> SortedSet<String> {
    let used = |env: &[(OsString, OsString)]| {
        derived::facts_used(&derived::sources_from_env(env)).features
    };
    match wplan::split_layers(env) {
        Some((role, pool)) => {
            let mut out = used(&pool);
            out.extend(used(&role));
            out
        }
        None => used(env),
    }
}

fn string_map(v: Option<&Value>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = match v {
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect(),
        _ => Vec::new(),
    };
    out.sort();
    out
}
