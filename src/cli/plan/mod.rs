//! `plan`: what a change of rendered manifests does to every node of a
//! fleet, before it is merged. Each node's registration (labels and taints
//! a node joining now gets), what the day-2 sync then changes on its
//! running Node, the taint changes only the cluster can make, pool moves,
//! what applying the change costs under the disruption policy, and the
//! DaemonSets a taint change lets on or keeps off. Nodes with the same
//! outcome form one group. The wrapper's, the sync's and the MCO's own
//! rules compute it: `wrapper::plan::collect_given` on each node's
//! NodeFeature, `sync::reconcile` on its Node, the MCO's pool choice.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;

mod boot_files;
pub mod cluster_unit;
pub mod command;
mod crio_registries;
mod crio_start;
mod fact_files;
mod fleet;
pub mod formats;
mod identity;
mod in_force;
mod inputs;
mod kargs;
pub mod kube;
mod kubelet_start;
mod kubelet_unit;
mod paused;
mod policy;
mod pool_spec;
pub mod pool_tree;
mod reconcilable;
mod registries;
mod render_files;
mod rendered_diff;
mod report;
mod side;
mod start_bound;
mod start_units;
pub mod sync_labels;
mod tree;
mod unrendered;

pub use report::{Format, render};

use crate::node::facts::Features;
use crate::node::kubelet::{Profile, Taint, TaintEffect};
use crate::node::sorted::SortedSet;
use crate::node::sync::reconcile::{self, Desired, Policy};
use crate::node::wrapper::{derived, fence, plan as wplan};
use fleet::{Fleet, FleetNode};
use in_force::NodePolicy;
use kube::Pool;
use policy::{Changed, Disruption};
use side::{Side, features_read};

pub struct PlanOptions {
    pub from: String,
    pub to: String,
    pub fleet: Vec<PathBuf>,
    /// The apply deletes what the change removes.
    pub prune: bool,
    pub profile: Profile,
    /// The wrappers a changed wrapper file must be (`render_files`).
    pub wrappers: Vec<PathBuf>,
    /// Name prefixes of the team's own units, which no unit of the OS or
    /// of an operator names (`kubelet_start`'s `outside_own`).
    pub own_unit_prefixes: Vec<String>,
}

/// Where a command names the node: each node of the group in turn.
pub const NODE: &str = "<node>";

/// One node's outcome, without its name: nodes with equal outcomes group.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Outcome {
    pub pool_before: Option<String>,
    pub pool_after: Option<String>,
    /// A node joining now: labels and taints before and after the change
    /// (`KEY=VALUE`, `KEY=VALUE:EFFECT`), or why the wrapper adds none.
    pub register_before: Registration,
    pub register_after: Registration,
    /// What the day-2 sync does on the running Node (`add KEY=V (why)`).
    pub sync: Vec<String>,
    /// Commands only the cluster can run (a node may not change its
    /// taints), for each node of the group in place of [`NODE`].
    pub taint_commands: Vec<String>,
    /// Pods on the node a NoExecute taint added by those commands evicts
    /// at once (none of their tolerations matches it).
    pub evicted_pods: Option<usize>,
    /// Pods that tolerate it for a while (`tolerationSeconds`), then are
    /// evicted as well, unless the taint is taken off before.
    pub evicted_later: Option<DelayedEviction>,
    pub disruption: Disruption,
    /// The changed files behind it, each with its policy's actions.
    pub disruption_because: Vec<String>,
    /// `NAMESPACE/NAME: starts|stops being schedulable (why)`, NFD's worker
    /// and the GPU Operator's operands first.
    pub daemonsets: Vec<String>,
    /// A DaemonSet of NFD or the GPU Operator stops being schedulable.
    pub lockout: bool,
    /// The node runs files of ours of another node format than the
    /// proposed render's: it keeps the old behaviour until they land.
    pub wrapper_format: Option<formats::FormatChange>,
    /// Why the MCO refuses the change of the node's pool on running nodes
    /// (`IsRenderedConfigReconcilable`): nothing of it rolls out, and
    /// nothing else is shown changing.
    pub refused: Option<String>,
    /// The change unpauses the node's pool, which rolls out what plan
    /// cannot see (`paused`): counted as a possible taint change.
    pub unseen_rollout: bool,
    pub not_judged: Vec<String>,
}

/// Pods a NoExecute taint evicts once their `tolerationSeconds` pass.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct DelayedEviction {
    pub pods: usize,
    pub soonest_seconds: i64,
    pub latest_seconds: i64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Registration {
    pub labels: Vec<String>,
    pub taints: Vec<String>,
    pub left_out: Option<String>,
}

impl Outcome {
    pub fn changes(&self) -> bool {
        self.register_before != self.register_after
            || !self.sync.is_empty()
            || !self.taint_commands.is_empty()
            || self.pool_before != self.pool_after
            || self.disruption != Disruption::Nothing
            || !self.daemonsets.is_empty()
    }
    pub fn reboots(&self) -> bool {
        self.disruption == Disruption::DrainAndReboot
    }
}

/// Nodes of one outcome.
#[derive(Debug, Serialize)]
pub struct Group {
    pub nodes: Vec<String>,
    pub outcome: Outcome,
}

#[derive(Debug, Serialize)]
pub struct Plan {
    pub from: String,
    pub to: String,
    pub nodes: usize,
    pub changed: usize,
    pub reboot: usize,
    pub lockout: usize,
    pub taint_changes: usize,
    /// Nodes whose pool's change the MCO refuses (plan exits 2).
    pub refused: usize,
    /// Changed groups first, largest first.
    pub groups: Vec<Group>,
    /// What could not be judged for lack of an input, fleet-wide.
    pub not_judged: Vec<String>,
}

pub fn plan(opts: &PlanOptions) -> Result<Plan> {
    // One budget for all the pools plan lays out, of both renders.
    crate::cli::render::layout::with_run_budget(
        crate::cli::render::layout::RUN_BUDGET,
        "plan lays out the MachineConfigs of every pool of both renders: give the \
         MachineConfigs of fewer pools, or fewer large gzip'ed files",
        || plan_in_budget(opts),
    )
}

fn plan_in_budget(opts: &PlanOptions) -> Result<Plan> {
    for prefix in &opts.own_unit_prefixes {
        start_units::own_prefix(prefix)?;
    }
    let base = inputs::read_render(&opts.from)?;
    let mut proposed = inputs::read_render(&opts.to)?;
    unrendered::check_objects(&base, &proposed, opts.prune)?;
    let kept = if opts.prune {
        Vec::new()
    } else {
        inputs::keep_removed(&base, &mut proposed)
    };
    let vouched = std::rc::Rc::new(render_files::Vouched::new(
        opts.wrappers.clone(),
        opts.profile,
    ));
    let own: std::rc::Rc<[String]> = opts.own_unit_prefixes.clone().into();
    let mut sides = [
        Side::new(base, &vouched, &own),
        Side::new(proposed, &vouched, &own),
    ];
    // The features any pool's rules read, on either side: each node's
    // NodeFeature is reduced to them as it streams in.
    let mut used = SortedSet::new();
    for side in &mut sides {
        side.all_envs()?;
        for r in side.cache.values() {
            used.extend(features_read(&r.env));
        }
    }
    let fleet = fleet::read_fleet(&opts.fleet, &used)?;
    pool_spec::check(&sides[0].render, &sides[1].render, &fleet.pool_objects)?;
    // Review 23 r23b F3: the proposed side is the cluster less what the
    // apply deletes, plus what it applies: under --prune, a pool of the base
    // render that the proposed one leaves is deleted, not the fleet's.
    let pruned: Vec<String> = (sides[0].pools.iter())
        .filter(|p| opts.prune && !sides[1].pools.iter().any(|q| q.name == p.name))
        .map(|p| p.name.clone())
        .collect();
    let pools_of = |side: &Side, deleted: &[String]| {
        let mut pools = fleet.pools.clone();
        pools.retain(|q| !deleted.contains(&q.name));
        for p in &side.pools {
            pools.retain(|q| q.name != p.name);
            pools.push(p.clone());
        }
        for role in ["master", "worker"] {
            if !pools.iter().any(|p| p.name == role) {
                pools.push(Pool::builtin(role));
            }
        }
        pools
    };
    let base_pools = pools_of(&sides[0], &[]);
    let proposed_pools = pools_of(&sides[1], &pruned);
    unrendered::check_selection(
        (&sides[0].render, &sides[1].render),
        &fleet.not_laid_out,
        opts.prune,
        &base_pools,
        &proposed_pools,
    )?;
    // kubelet's config files of every pool, whether nodes are given or not.
    let names: std::collections::BTreeSet<&str> = base_pools
        .iter()
        .chain(&proposed_pools)
        .map(|p| p.name.as_str())
        .collect();
    for name in names {
        let find = |pools: &[Pool]| pools.iter().find(|p| p.name == name).cloned();
        let (Some(pool), Some(proposed)) = (
            find(&base_pools).or_else(|| find(&proposed_pools)),
            find(&proposed_pools).or_else(|| find(&base_pools)),
        ) else {
            continue;
        };
        let [base, after] = &mut sides;
        base.pool(&pool)?;
        after.pool(&proposed)?;
        unrendered::check_kubelet_config(
            (&base.render.name, &after.render.name),
            name,
            &base.cache[name].files,
            &after.cache[name].files,
        )?;
        kubelet_unit::check(
            (&base.render.name, &after.render.name),
            name,
            &base.cache[name].kubelet,
            &after.cache[name].kubelet,
        )?;
        render_files::check(
            (&base.render.name, &after.render.name),
            name,
            &base.cache[name].ours,
            &after.cache[name].ours,
        )?;
        kubelet_start::check((base, after), name)?;
        boot_files::check((base, after), name)?;
        crio_start::check((base, after), name)?;
        fact_files::check((base, after), name)?;
    }
    let policy = in_force::in_force(
        fleet.policy.as_ref(),
        &sides[0].render,
        &sides[1].render,
        opts.prune,
    )?;
    let mut fleet_notes = Vec::new();
    for what in kept {
        fleet_notes.push(format!(
            "{what} is removed from {} but planned as staying in the cluster: `oc apply -f`, \
             `oc apply -k` and Argo CD's default sync leave it; give --prune if your apply \
             deletes it",
            opts.to
        ));
    }
    if fleet.nodes.values().all(|n| n.node.is_none()) {
        fleet_notes.push("no Node objects given (oc get nodes -o json): the day-2 sync, pool moves and taint commands are not judged".into());
    }
    if fleet.nodes.values().all(|n| n.features.is_none()) && !used.is_empty() {
        fleet_notes.push("no NodeFeature objects given (oc get nodefeatures -A -o json): rules are not evaluated".into());
    }
    if fleet.daemonsets.is_empty() {
        fleet_notes.push("no DaemonSets given (oc get ds -A -o json): which DaemonSets a taint keeps off is not judged".into());
    }
    if fleet.policy.is_none() {
        fleet_notes.push("no MachineConfiguration given (oc get machineconfiguration cluster -o json): only the MCO's default and the render's own disruption policy entries are known".into());
    }
    fleet_notes.extend(policy.notes.iter().cloned());
    let relabelled = unrendered::relabelled(&base_pools, &proposed_pools);
    if !relabelled.is_empty() && fleet.not_laid_out.is_empty() {
        fleet_notes.push(format!(
            "pool labels change ({}) and no KubeletConfig or ContainerRuntimeConfig of the \
             cluster's is given (oc get kubeletconfigs,containerruntimeconfigs -o json): one \
             outside the renders that selects a pool by them is not judged",
            relabelled.join(", ")
        ));
    }
    for (kind, n) in &fleet.ignored {
        fleet_notes.push(format!("{n} object(s) of kind {kind} ignored"));
    }
    // The policy each release's daemon applies: the MCO's defaults of
    // that release under the cluster's and the render's entries.
    let policies: BTreeMap<Option<u32>, NodePolicy> = fleet
        .nodes
        .values()
        .map(|n| (n.kubelet_minor, NodePolicy::new(n.kubelet_minor, &policy)))
        .collect();
    // Grouped as judged, by a digest of the outcome: one outcome kept per
    // group, not one per node (review 44 r44b F2: each node's copy of its
    // pool's priced files, 950 MB for a 3 MB MachineConfig and 300 nodes).
    let mut groups: Vec<Group> = Vec::new();
    let mut index: std::collections::HashMap<[u8; 32], usize> = Default::default();
    let mut prices = Prices::new();
    for (name, n) in &fleet.nodes {
        let o = judge(
            name,
            n,
            &fleet,
            &mut sides,
            (&base_pools, &proposed_pools),
            (&policies[&n.kubelet_minor], &mut prices),
            opts.profile,
        )?;
        let json = serde_json::to_vec(&o).context("grouping outcomes")?;
        let key = crate::cli::sha256::sha256(&json);
        match index.get(&key) {
            Some(&i) => groups[i].nodes.push(name.clone()),
            None => {
                index.insert(key, groups.len());
                groups.push(Group {
                    nodes: vec![name.clone()],
                    outcome: o,
                });
            }
        }
    }
    groups.sort_by(|a, b| {
        (b.outcome.changes(), b.nodes.len()).cmp(&(a.outcome.changes(), a.nodes.len()))
    });
    let count = |f: &dyn Fn(&Outcome) -> bool| -> usize {
        groups
            .iter()
            .filter(|g| f(&g.outcome))
            .map(|g| g.nodes.len())
            .sum()
    };
    Ok(Plan {
        from: opts.from.clone(),
        to: opts.to.clone(),
        nodes: fleet.nodes.len(),
        changed: count(&|o| o.changes()),
        reboot: count(&|o| o.reboots()),
        lockout: count(&|o| o.lockout),
        taint_changes: count(&|o| {
            o.register_before.taints != o.register_after.taints
                || !o.taint_commands.is_empty()
                || o.unseen_rollout
        }),
        refused: count(&|o| o.refused.is_some()),
        groups,
        not_judged: fleet_notes,
    })
}

fn shown_taint(t: &Taint) -> String {
    if t.value.is_empty() {
        format!("{}:{}", t.key, t.effect.as_str())
    } else {
        format!("{}={}:{}", t.key, t.value, t.effect.as_str())
    }
}

/// What the wrapper adds on this node (its pool, its features) on one side,
/// and what the day-2 sync then syncs the running Node to (None: no sync
/// plan can tell: the wrapper off, our static part unparsable, the rules
/// without the node's facts).
fn registration(
    side: &mut Side,
    pool: &Pool,
    features: Option<usize>,
    fleet: &Fleet,
    profile: Profile,
) -> Result<(Registration, Option<Desired>)> {
    let key = (pool.name.clone(), features);
    if let Some(r) = side.registrations.get(&key) {
        return Ok(r.clone());
    }
    if let Some(why) = side.pool(pool)?.wrapper_off.clone() {
        let off = (
            Registration {
                left_out: Some(why),
                ..Default::default()
            },
            None,
        );
        side.registrations.insert(key, off.clone());
        return Ok(off);
    }
    let env = side.pool(pool)?.env.clone();
    let has_sources = derived::sources_in_env(&env) || wplan::split_layers(&env).is_some();
    let empty = Features::default();
    let f = match features {
        Some(i) => &fleet.features[i],
        None => &empty,
    };
    let collected = wplan::collect_given(&env, f, profile);
    let fence = collected.fence.clone();
    // The sync's own: what it syncs to from this evaluation, its rules
    // failed as a whole or not (fenced or label-only: it still adds and
    // changes what it knows, and removes nothing they may give).
    let failed = collected.failed.as_deref();
    let (mut reg, desired) = match collected.additions {
        Ok(Some(a)) => {
            let unevaluated = features.is_none() && has_sources && wplan::rules_in_env(&env);
            (
                Registration {
                    labels: a.labels.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                    taints: a.taints.iter().map(shown_taint).collect(),
                    left_out: unevaluated
                        .then(|| "rules not evaluated: no NodeFeature for this node".into()),
                },
                (!unevaluated)
                    .then(|| Desired::evaluated((a.labels, a.taints), failed, None, &env)),
            )
        }
        Ok(None) => (
            Registration::default(),
            Some(Desired::evaluated(Default::default(), failed, None, &env)),
        ),
        // As boot: the static part does not parse, so the fence alone
        // (the sync derives nothing and leaves the Node as it is).
        Err(e) => (
            Registration {
                taints: vec![shown_taint(&fence::Reason::TaintsUnreadable.taint())],
                left_out: Some(format!(
                    "our labels and taints do not parse, so it registers fenced: {e:#}"
                )),
                ..Default::default()
            },
            None,
        ),
    };
    if let Some(f) = fence {
        // The wrapper registers fenced (fail closed); the sync still syncs
        // the static part (`desired`, its rules unknown).
        reg.taints.push(shown_taint(&f.reason.taint()));
        reg.left_out = Some(format!(
            "the node rules could not be evaluated, so it registers fenced: {}",
            f.why
        ));
    }
    // As boot (`own_env::fence`): our drop-ins' values, fenced (a start
    // fenced already keeps its fence); the sync changes no label.
    let (reg, desired) = match side.pool(pool)?.overridden.clone() {
        Some(note) => (environment_overridden(reg, &note), None),
        None => (reg, desired),
    };
    side.registrations
        .insert(key, (reg.clone(), desired.clone()));
    Ok((reg, desired))
}

/// `reg` as the wrapper registers it where our variables are set
/// otherwise than our drop-ins set them (`note` names them).
fn environment_overridden(mut reg: Registration, note: &str) -> Registration {
    let fence_key = format!("{}=", crate::node::contract::FENCE_TAINT_KEY);
    if !reg.taints.iter().any(|t| t.starts_with(&fence_key)) {
        reg.taints
            .push(shown_taint(&fence::Reason::EnvironmentOverridden.taint()));
    }
    reg.left_out = Some(match reg.left_out {
        Some(why) => format!("{note}; {why}"),
        None => format!("it registers fenced: {note}"),
    });
    reg
}

/// What applying a pool's change costs a node that stays in it, by (pool
/// before, pool after, kubelet minor: the policy in force): the same for
/// every such node, priced once (review 43 r43b F3: priced per node, 15,000
/// files and 100 nodes took 235 s).
type Prices = std::collections::HashMap<(String, String, Option<u32>), (Disruption, Vec<String>)>;

fn judge(
    name: &str,
    n: &FleetNode,
    fleet: &Fleet,
    sides: &mut [Side; 2],
    (base_pools, proposed_pools): (&[Pool], &[Pool]),
    (policy, prices): (&NodePolicy, &mut Prices),
    profile: Profile,
) -> Result<Outcome> {
    let mut o = Outcome::default();
    let labels_now: Vec<(String, String)> = n
        .node
        .as_ref()
        .map(|s| s.labels.clone())
        .unwrap_or_else(|| vec![("node-role.kubernetes.io/worker".into(), String::new())]);
    if n.node.is_none() {
        o.not_judged.push("no Node: judged as a new worker".into());
    }
    let pool_before = match kube::choose_pool(base_pools, &labels_now) {
        Ok(p) => p.cloned(),
        Err(e) => {
            o.not_judged.push(format!("pool: {e}"));
            None
        }
    };
    o.pool_before = pool_before.as_ref().map(|p| p.name.clone());
    let Some(pool) = pool_before else {
        return Ok(o);
    };
    // The same pool on the proposed side (its definition may change).
    let proposed_pool = proposed_pools
        .iter()
        .find(|p| p.name == pool.name)
        .cloned()
        .unwrap_or_else(|| pool.clone());
    let stays = proposed_pools.iter().any(|p| p.name == pool.name);
    let renders = (&sides[0].render, &sides[1].render);
    let unseen = paused::judge(&mut o, n.node.as_ref(), fleet, renders, &pool.name, stays);
    let (before, _) = registration(&mut sides[0], &pool, n.features, fleet, profile)?;
    let (refused, os_changes, extensions) = against(sides, &pool, &proposed_pool)?;
    // OpenShift 4.N runs Kubernetes 1.(N+13).
    let release = n.kubelet_minor.map(|m| m.saturating_sub(13));
    let extension_refused =
        crate::cli::render::extensions::refused(extensions.iter().map(String::as_str), release);
    if let Some(why) = refused {
        // Nothing of the change reaches the pool's nodes, new ones
        // included (since 4.16 the render is refused).
        let before_416 = release.is_some_and(|r| r < 16);
        o.refused = Some(format!(
            "the MCO refuses this change on running nodes: nothing rolls out (pool {} goes \
             Degraded: {why}){}",
            proposed_pool.name,
            if before_416 {
                "; OpenShift before 4.16 renders it all the same: nodes joining the pool boot \
                 it, while its running nodes' daemons refuse it"
            } else {
                ""
            }
        ));
    } else if let Some(why) = extension_refused {
        o.refused = Some(format!(
            "{}: pool {} goes Degraded, and nothing of the change reaches its nodes, new ones \
             included ({why})",
            if release.is_some() {
                "the MCO refuses this change: nothing rolls out"
            } else {
                "the MCO may refuse this change: nothing is shown rolling out"
            },
            proposed_pool.name
        ));
    }
    if o.refused.is_none() && release.is_some() {
        o.not_judged.extend(crate::cli::render::extensions::partial(
            extensions.iter().map(String::as_str),
        ));
    }
    if o.refused.is_some() {
        o.pool_after = o.pool_before.clone();
        o.register_after = before.clone();
        o.register_before = before;
        return Ok(o);
    }
    let (after, desired) = registration(&mut sides[1], &proposed_pool, n.features, fleet, profile)?;
    o.register_before = before.clone();
    o.register_after = after.clone();
    formats::judge(
        &mut o,
        n.node.as_ref(),
        &fleet.rendered,
        sides,
        &pool,
        &proposed_pool,
    )?;
    let mut labels_after = labels_now.clone();
    let mut node_taints_after: Vec<Taint> = n
        .node
        .as_ref()
        .map(|s| s.taints.clone())
        .unwrap_or_default();
    if let Some(state) = &n.node {
        // The sync refuses (exits 2) where our variables are overridden: a
        // change of the plan where the change brings it.
        if let Some(note) = sides[1].pool(&proposed_pool)?.overridden.clone() {
            let line = format!("change no label: the sync refuses: {note}");
            match sides[0].pool(&pool)?.overridden.is_some() {
                true => o.not_judged.push(line),
                false => o.sync.push(line),
            }
        }
        let ours_after = match desired {
            Some(d) if !sides[1].pool(&proposed_pool)?.files.is_empty() => Some(d),
            _ => None,
        };
        if let Some(desired) = ours_after {
            let pol = Policy {
                pool_label: sides[1].pool(&proposed_pool)?.pool_label.clone(),
                allow_pool_label: false,
                // On the node, not among the inputs: see the note below.
                installed: None,
            };
            let r = match reconcile::reconcile(&desired, state, &pol) {
                Ok(r) => r,
                Err(e) => {
                    o.not_judged.push(format!("the day-2 sync: {e}"));
                    reconcile::Reconciled::default()
                }
            };
            o.sync
                .extend(r.keys.iter().filter_map(sync_labels::sync_line));
            sync_labels::patch_labels(&mut labels_after, &r.patch);
        }
        // Taints: the node cannot change its own (NodeRestriction); the
        // cluster makes the registration's change on the running Node.
        let before_taints = taints_of(&before);
        let after_taints = taints_of(&after);
        for t in &after_taints {
            if !state
                .taints
                .iter()
                .any(|s| s.key == t.key && s.effect == t.effect && s.value == t.value)
            {
                o.taint_commands.push(format!(
                    "kubectl taint node {NODE} {} --overwrite",
                    shown_taint(t)
                ));
                node_taints_after.retain(|s| !(s.key == t.key && s.effect == t.effect));
                node_taints_after.push(t.clone());
            }
        }
        for t in &before_taints {
            let still = after_taints
                .iter()
                .any(|a| a.key == t.key && a.effect == t.effect);
            if !still
                && state
                    .taints
                    .iter()
                    .any(|s| s.key == t.key && s.effect == t.effect)
            {
                o.taint_commands.push(format!(
                    "kubectl taint node {NODE} {}:{}-",
                    t.key,
                    t.effect.as_str()
                ));
                node_taints_after.retain(|s| !(s.key == t.key && s.effect == t.effect));
            }
        }
        let added_noexecute: Vec<&Taint> = node_taints_after
            .iter()
            .filter(|t| t.effect == TaintEffect::NoExecute && !state.taints.contains(t))
            .collect();
        if !added_noexecute.is_empty() {
            if fleet.pods_given {
                let (now, later) = kube::evictions(&n.pods, &state.taints, &node_taints_after);
                o.evicted_pods = Some(now);
                o.evicted_later = later;
            } else {
                o.not_judged.push(
                    "pods a NoExecute taint evicts: no Pods given (oc get pods -A -o json)".into(),
                );
            }
        }
        // The pool after the sync's labels, by the proposed pools.
        match kube::choose_pool(proposed_pools, &labels_after) {
            Ok(p) => o.pool_after = p.map(|p| p.name.clone()),
            Err(e) => o.not_judged.push(format!("pool after the change: {e}")),
        }
    } else {
        o.pool_after = o.pool_before.clone();
        node_taints_after = taints_of(&after);
    }
    // What applying the change costs the node.
    if o.pool_after != o.pool_before {
        o.disruption = Disruption::DrainAndReboot;
        o.disruption_because.push(format!(
            "the node moves from pool {} to {}",
            o.pool_before.as_deref().unwrap_or("none"),
            o.pool_after.as_deref().unwrap_or("none")
        ));
        if labels_after != labels_now {
            o.not_judged
                .push(sync_labels::fleet_sync_note(o.pool_after.as_deref()));
        }
    } else {
        sides[0].pool(&pool)?;
        sides[1].pool(&proposed_pool)?;
        let key = (
            pool.name.clone(),
            proposed_pool.name.clone(),
            n.kubelet_minor,
        );
        let (d, because) = prices
            .entry(key)
            .or_insert_with(|| price(sides, (&pool.name, &proposed_pool.name), n, policy));
        o.disruption = o.disruption.max(*d);
        o.disruption_because.extend(because.iter().cloned());
        for why in os_changes {
            o.disruption = Disruption::DrainAndReboot;
            o.disruption_because.push(why);
        }
        paused::price(&mut o, unseen);
    }
    // DaemonSets whose pods the change lets on or keeps off the node.
    let taints_before: Vec<Taint> = match &n.node {
        Some(s) => s.taints.clone(),
        None => taints_of(&before),
    };
    let mut ds_lines: Vec<(bool, String)> = Vec::new();
    for (ds, p) in &fleet.daemonsets {
        let on = |labels: &[(String, String)], taints: &[Taint]| {
            p.selects(name, labels) && kube::untolerated(taints, &p.tolerations).is_empty()
        };
        let (was, will) = (
            on(&labels_now, &taints_before),
            on(&labels_after, &node_taints_after),
        );
        if was == will {
            continue;
        }
        // The first few (review 46 r46b F1: each of 42 DaemonSets listed
        // all 400 taints of a rule, on each of 100 nodes: 243 MB).
        let untolerated = kube::untolerated(&node_taints_after, &p.tolerations);
        let mut why: Vec<String> = (untolerated.iter().take(DS_TAINTS_SHOWN))
            .map(|t| shown_taint(t))
            .collect();
        if untolerated.len() > DS_TAINTS_SHOWN {
            why.push(format!("{} more", untolerated.len() - DS_TAINTS_SHOWN));
        }
        let line = if will {
            format!("{ds}: starts being schedulable")
        } else if why.is_empty() {
            format!("{ds}: stops being schedulable (its node selector no longer matches)")
        } else {
            format!(
                "{ds}: stops being schedulable (does not tolerate {})",
                why.join(", ")
            )
        };
        let key = is_lockout_daemonset(ds);
        if key && !will {
            o.lockout = true;
        }
        ds_lines.push((!key, line));
    }
    ds_lines.sort();
    o.daemonsets = ds_lines.into_iter().map(|(_, l)| l).collect();
    Ok(o)
}

/// What the change of a node's pool (its render `before`, then `after`)
/// costs it under `policy`, each changed file or unit said: [`Prices`]'.
fn price(
    sides: &mut [Side; 2],
    (before, after): (&str, &str),
    n: &FleetNode,
    policy: &NodePolicy,
) -> (Disruption, Vec<String>) {
    let (mut disruption, mut because) = (Disruption::Nothing, Vec::new());
    let old = &sides[0].cache[before].changes;
    let new = &sides[1].cache[after].changes;
    let before_policies = n
        .kubelet_minor
        .is_some_and(|m| m < policy::FIRST_KUBELET_MINOR);
    for change in rendered_diff::changed(old, new) {
        let (mut d, actions) = match change {
            // Written in place on every release.
            Changed::SshKeys if before_policies => (Disruption::Nothing, vec!["None".into()]),
            _ if before_policies => (
                Disruption::DrainAndReboot,
                vec!["OpenShift before 4.17 has no node disruption policy".into()],
            ),
            _ => policy.cost(change),
        };
        // `Special`: the daemon judges the registries.conf change.
        let judged = match change {
            Changed::File(_) if actions.iter().any(|a| a == "Special") => {
                let verdict = registries::judge_entries(
                    old.get(change).map(|d| sides[0].memo.read_file(d)),
                    new.get(change).map(|d| sides[1].memo.read_file(d)),
                );
                match verdict {
                    registries::Verdict::Safe => {
                        ": the MCO judges the change safe (no drain)".to_string()
                    }
                    registries::Verdict::Drain(why) => {
                        d = d.max(Disruption::Drain);
                        format!(": a drain ({why})")
                    }
                }
            }
            _ => String::new(),
        };
        let default = !before_policies && policy.is_default(change);
        disruption = disruption.max(d);
        let what = match change {
            Changed::File(path) => path.clone(),
            Changed::Unit(name) => format!("unit {name}"),
            Changed::SshKeys => "core's SSH keys".into(),
        };
        because.push((
            d,
            format!(
                "{what}: {}{}{judged}",
                actions.join(", "),
                if default { " (the MCO's default)" } else { "" }
            ),
        ));
    }
    (disruption, shown_because(because))
}

/// The taints a DaemonSet's line names that it does not tolerate.
const DS_TAINTS_SHOWN: usize = 3;

/// The most of a price's lines a node's outcome holds: each node of the
/// pool pair copies them, and each group prints them (review 45 r45b F1,
/// F3: a per-node label made 100 groups of a 3 MB list, 946 MB and
/// 304 MB of output).
const BECAUSE_SHOWN_BYTES: usize = 16 << 10;

/// `because` within [`BECAUSE_SHOWN_BYTES`]: past it, the costliest
/// changes first, then one line counting the rest.
fn shown_because(mut because: Vec<(Disruption, String)>) -> Vec<String> {
    let mut bytes = because.iter().map(|(_, l)| l.len());
    if bytes
        .try_fold(0usize, |n, b| {
            Some(n + b).filter(|&n| n <= BECAUSE_SHOWN_BYTES)
        })
        .is_some()
    {
        return because.into_iter().map(|(_, l)| l).collect();
    }
    because.sort_by_key(|b| std::cmp::Reverse(b.0));
    let (mut out, mut bytes) = (Vec::new(), 0);
    for (_, l) in &because {
        if bytes + l.len() > BECAUSE_SHOWN_BYTES {
            break;
        }
        bytes += l.len();
        out.push(l.clone());
    }
    out.push(format!(
        "and {} more changed files and units, not shown (a node's list stops at {} KiB)",
        because.len() - out.len(),
        BECAUSE_SHOWN_BYTES >> 10
    ));
    out
}

/// The MCO's judgement of moving the pool's running nodes from the base
/// render to the proposed one: its refusal, and the OS changes it reboots
/// for (computed once per pair of pools).
/// The MCO's refusal of a pool's change on running nodes, the OS changes
/// it reboots for, and the proposed pool's extensions.
type Against = (Option<String>, Vec<String>, Vec<String>);

fn against(sides: &mut [Side; 2], pool: &Pool, proposed: &Pool) -> Result<Against> {
    let key = (pool.name.clone(), proposed.name.clone());
    if let Some(r) = sides[1].against.get(&key) {
        return Ok(r.clone());
    }
    sides[0].pool(pool)?;
    sides[1].pool(proposed)?;
    fn of<'a>(side: &'a Side, pool: &Pool) -> Vec<&'a Value> {
        (side.cache[&pool.name].configs.iter())
            .map(|&i| &side.render.machineconfigs[i])
            .collect()
    }
    let (old, new) = (&of(&sides[0], pool), &of(&sides[1], proposed));
    let r = (
        reconcilable::refusal(old, new),
        reconcilable::os_changes(old, new),
        reconcilable::extensions(new),
    );
    sides[1].against.insert(key, r.clone());
    Ok(r)
}

/// NFD's worker and the GPU Operator's operands: a taint keeping them off
/// a GPU node means the GPU stack never comes up there.
fn is_lockout_daemonset(ds: &str) -> bool {
    let (ns, name) = ds.split_once('/').unwrap_or(("", ds));
    name.contains("nfd-worker") || ns.contains("gpu-operator") || name.starts_with("nvidia-")
}

fn taints_of(r: &Registration) -> Vec<Taint> {
    r.taints
        .iter()
        .filter_map(|t| crate::node::kubelet::parse_taints(t).ok())
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Review 45 r45b F1, F3: a price past its bound keeps the costliest
    /// changes and counts the rest; one within it is kept as it is.
    #[test]
    fn a_price_s_lines_are_bounded_costliest_first() {
        let few = vec![(Disruption::Nothing, "/etc/a: None".to_string())];
        assert_eq!(shown_because(few), ["/etc/a: None"]);
        let mut many: Vec<(Disruption, String)> = (0..1000)
            .map(|i| (Disruption::Nothing, format!("/etc/{i:0>100}: None")))
            .collect();
        many.push((Disruption::DrainAndReboot, "/etc/z: Reboot".into()));
        let shown = shown_because(many);
        assert_eq!(shown[0], "/etc/z: Reboot");
        assert!(shown.iter().map(String::len).sum::<usize>() < BECAUSE_SHOWN_BYTES + 200);
        let last = shown.last().unwrap();
        let counted = 1001 - (shown.len() - 1);
        assert_eq!(
            *last,
            format!(
                "and {counted} more changed files and units, not shown (a node's list stops at 16 KiB)"
            )
        );
    }
}
