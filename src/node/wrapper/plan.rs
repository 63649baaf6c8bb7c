//! From a loaded service and an environment to the argv to exec.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::node::error::{Context, Result};
use crate::node_bail as bail;

use super::derived::{self, RuleReport};
use super::fence::{self, Failure};
use crate::node::contract::{LABELS_VAR, TAINTS_VAR};
use crate::node::kubelet::{self, Additions, NodeFs, Profile, Taint};
use crate::node::unit::{self, LoadedService};

/// What the wrapper will exec.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The executable to exec (resolved like systemd does).
    pub executable: PathBuf,
    /// argv systemd would have exec'd without the wrapper.
    pub original_argv: Vec<OsString>,
    /// argv the wrapper execs: the original, or the original plus ours.
    pub argv: Vec<OsString>,
    pub added_labels: Vec<(String, String)>,
    pub taints: Vec<Taint>,
    /// Ours among `taints` (the fence too, when there is one).
    pub added_taints: Vec<Taint>,
    pub warnings: Vec<String>,
    /// Why our additions were left out, when they were.
    pub left_out: Option<String>,
    /// What each node rule gave here and what became of it.
    pub rules: Vec<RuleReport>,
    /// Derived output that was dropped or overridden, one note each.
    pub notes: Vec<String>,
}

/// Read the labels and taints from the environment systemd built.
/// `Ok(None)` when neither variable has content.
pub fn additions_from_env(env: &[(OsString, OsString)]) -> Result<Option<Additions>> {
    let get = |name: &str| {
        env.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    };
    let labels = get(LABELS_VAR).unwrap_or_default();
    let taints = get(TAINTS_VAR).unwrap_or_default();
    if labels.trim().is_empty() && taints.is_empty() {
        return Ok(None);
    }
    let labels = kubelet::parse_node_labels(&labels);
    let taints = if taints.is_empty() {
        Vec::new()
    } else {
        kubelet::parse_taints(&taints).with_context(|| TAINTS_VAR.to_string())?
    };
    Ok(Some(Additions { labels, taints }))
}

/// Our additions for one start: the static labels/taints of the env
/// drop-in, merged over what the node's rules and NFD label set derive from
/// its facts (read under `facts_root` only when there is something to derive).
pub struct Collected {
    pub additions: Result<Option<Additions>>,
    pub rules: Vec<RuleReport>,
    pub notes: Vec<String>,
    /// Set when taints the rules may give could not be derived: the
    /// wrapper then registers fenced (`fence`); `additions` lacks the
    /// fence itself.
    pub fence: Option<Failure>,
    /// Why the rules' evaluation failed as a whole, tainting or not: the
    /// sync then removes nothing they may give.
    pub failed: Option<String>,
}

/// How much of the facts `collect` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactsScope {
    /// What the sources look at (the wrapper, at every start, and the
    /// sync); the rules' matched elements are not kept.
    Used,
    /// The features they look at with every attribute of their elements,
    /// and each rule's matched elements kept (`explain` shows them whole).
    WholeElements,
}

/// A built-in role's labels, taints and rules (`contract::ROLE_LAYER`) and
/// a custom pool's (or a kubeadm host's) are collected each on its own and
/// merged, the pool's winning on a key (a taint's key and effect).
pub fn collect(
    env: &[(OsString, OsString)],
    original_argv: &[OsString],
    facts_root: &Path,
    profile: Profile,
    scope: FactsScope,
) -> Collected {
    let nodename = hostname_override(original_argv);
    let mut read = root_reader(facts_root, &nodename, scope);
    #[cfg(feature = "cli")]
    {
        // A tree without a CPUID recording: say what rules on those
        // features see (the wrapper reads `/`, where the CPU answers).
        use crate::node::facts;
        let mut asked = false;
        let mut c = collect_layers(env, profile, scope, &mut |only, attributes| {
            asked |= facts::CPUID_FEATURES.iter().any(|f| only.contains(*f));
            read(only, attributes)
        });
        if asked && facts::cpuid_unknown(facts_root) {
            c.notes.push(format!(
                "{} has no {}: nfd-worker reads cpu.rdt, cpu.sst and cpu.security's sgx.* and \
                 tdx.protected with the CPUID instruction, so rules see them absent here; record \
                 the node's with `kubelet-labeler facts --record-cpuid` on it",
                facts_root.display(),
                facts::CPUID_RECORDING
            ));
        }
        c
    }
    #[cfg(not(feature = "cli"))]
    collect_layers(env, profile, scope, &mut read)
}

/// Facts read from `root`, as [`ReadFacts`] asks for them.
fn root_reader<'a>(
    root: &'a Path,
    nodename: &'a Option<String>,
    scope: FactsScope,
) -> impl FnMut(
    &crate::node::sorted::SortedSet<String>,
    Option<&crate::node::sorted::SortedSet<String>>,
) -> crate::node::facts::Features
+ 'a {
    move |only, used_attributes| {
        crate::node::facts::read(&crate::node::facts::FactsOptions {
            root,
            nodename: nodename.as_deref(),
            only: Some(only),
            attributes: match scope {
                FactsScope::Used => used_attributes,
                FactsScope::WholeElements => None,
            },
        })
    }
}

/// [`collect`] on facts given whole (`explain --facts`: NFD's NodeFeature
/// of the node, or `facts --json` output) instead of read from a root.
pub fn collect_given(
    env: &[(OsString, OsString)],
    features: &crate::node::facts::Features,
    profile: Profile,
) -> Collected {
    collect_layers(env, profile, FactsScope::WholeElements, &mut |only, _| {
        features.only(only)
    })
}

/// `read(features, attributes)`: the node's facts of those features (and
/// optional attributes), read only when there is something to derive.
type ReadFacts<'a> = dyn FnMut(
        &crate::node::sorted::SortedSet<String>,
        Option<&crate::node::sorted::SortedSet<String>>,
    ) -> crate::node::facts::Features
    + 'a;

/// The role's layer and the pool's, each evaluated, the pool's over the role's.
fn collect_layers(
    env: &[(OsString, OsString)],
    profile: Profile,
    scope: FactsScope,
    read: &mut ReadFacts,
) -> Collected {
    let Some((role, pool)) = split_layers(env) else {
        return collect_with(env, profile, scope, read);
    };
    // When both layers derive, one read of the node's facts serves both:
    // the features and attributes either looks at. A layer sees the
    // features it asked for (an optional attribute only the other asked
    // for may come along; no rule or label set looks at one it did not
    // name). Reads beyond these (`derived::derive` asking for more) go to
    // the node.
    let used: Vec<derived::FactsUsed> = [&role, &pool]
        .into_iter()
        .map(|layer| derived::sources_from_env(layer))
        .filter(|sources| !sources.is_empty())
        .map(|sources| derived::facts_used(&sources))
        .collect();
    let shared = match &used[..] {
        [a, b] => {
            let mut features = a.features.clone();
            features.extend(b.features.iter().cloned());
            let attributes = match (&a.attributes, &b.attributes) {
                (Some(x), Some(y)) => {
                    let mut both = x.clone();
                    both.extend(y.iter().cloned());
                    Some(both)
                }
                _ => None,
            };
            let facts = read(&features, attributes.as_ref());
            Some((features, attributes, facts))
        }
        _ => None,
    };
    let mut layer_read =
        |only: &crate::node::sorted::SortedSet<String>,
         attributes: Option<&crate::node::sorted::SortedSet<String>>| {
            match &shared {
                Some((features, read_attributes, facts))
                    if only.iter().all(|f| features.contains(f))
                        && match (read_attributes, attributes) {
                            (None, _) => true,
                            (Some(have), Some(want)) => want.iter().all(|a| have.contains(a)),
                            (Some(_), None) => false,
                        } =>
                {
                    facts.only(only)
                }
                _ => read(only, attributes),
            }
        };
    let role = collect_with(&role, profile, scope, &mut layer_read);
    let pool = collect_with(&pool, profile, scope, &mut layer_read);
    let mut rules = role.rules;
    rules.extend(pool.rules);
    let mut notes = role.notes;
    notes.extend(pool.notes);
    let additions = match (role.additions, pool.additions) {
        (Err(e), _) => Err(crate::node_error!(
            "the role's labels, taints or rules: {e:#}"
        )),
        (_, Err(e)) => Err(e),
        (Ok(r), Ok(p)) => Ok(pool_over_role(r, p, &mut notes)),
    };
    Collected {
        additions,
        rules,
        notes,
        fence: role.fence.or(pool.fence),
        failed: role.failed.or(pool.failed),
    }
}

/// The static labels and taints of `env` (the pool label among them), both
/// layers merged: what every fallback keeps when the node rules fail.
pub fn static_additions(env: &[(OsString, OsString)]) -> Result<Option<Additions>> {
    let Some((role, pool)) = split_layers(env) else {
        return additions_from_env(env);
    };
    let role = additions_from_env(&role)
        .map_err(|e| crate::node_error!("the role's labels or taints: {e:#}"))?;
    Ok(pool_over_role(
        role,
        additions_from_env(&pool)?,
        &mut Vec::new(),
    ))
}

pub type Env = Vec<(OsString, OsString)>;

/// The role layer, under the pool layer's names, and the rest; `None`
/// when no role variable has content.
pub fn split_layers(env: &[(OsString, OsString)]) -> Option<(Env, Env)> {
    let role_var = |k: &OsString| {
        crate::node::contract::ROLE_LAYER
            .iter()
            .find(|(r, _)| k == r)
    };
    if !env
        .iter()
        .any(|(k, v)| role_var(k).is_some() && !v.is_empty())
    {
        return None;
    }
    let mut role = Vec::new();
    let mut pool = Vec::new();
    for (k, v) in env {
        match role_var(k) {
            Some((_, as_pool)) => role.push((OsString::from(as_pool), v.clone())),
            None => pool.push((k.clone(), v.clone())),
        }
    }
    Some((role, pool))
}

/// The pool's additions over the role's: same label key or taint key and
/// effect, the pool's wins, and a note says so.
fn pool_over_role(
    role: Option<Additions>,
    pool: Option<Additions>,
    notes: &mut Vec<String>,
) -> Option<Additions> {
    let (mut merged, pool) = match (role, pool) {
        (r, None) => return r,
        (None, p) => return p,
        (Some(r), Some(p)) => (r, p),
    };
    crate::node::retain(&mut merged.labels, &mut |(k, v)| match pool
        .labels
        .iter()
        .rfind(|(pk, _)| pk == k)
    {
        Some((_, pv)) => {
            if pv != v {
                notes.push(format!(
                    "the pool's label {k}={pv} wins over the role's {k}={v}"
                ));
            }
            false
        }
        None => true,
    });
    merged.labels.extend(pool.labels);
    crate::node::retain(&mut merged.taints, &mut |t| match pool
        .taints
        .iter()
        .find(|p| p.key == t.key && p.effect == t.effect)
    {
        Some(p) => {
            if p != t {
                notes.push(format!("the pool's taint {p} wins over the role's {t}"));
            }
            false
        }
        None => true,
    });
    merged.taints.extend(pool.taints);
    Some(merged)
}

/// Whether either layer of `env` has node rules or an NFD label set.
pub fn rules_in_env(env: &[(OsString, OsString)]) -> bool {
    match split_layers(env) {
        None => derived::sources_in_env(env),
        Some((role, pool)) => derived::sources_in_env(&role) || derived::sources_in_env(&pool),
    }
}

fn collect_with(
    env: &[(OsString, OsString)],
    profile: Profile,
    scope: FactsScope,
    read: &mut ReadFacts,
) -> Collected {
    match additions_from_env(env) {
        Ok(static_) => derive_over(env, static_, profile, scope, read, None),
        Err(e) => Collected {
            additions: Err(e),
            rules: Vec::new(),
            notes: Vec::new(),
            fence: None,
            failed: None,
        },
    }
}

/// The head of the note `static_only` writes when the rules may taint.
pub const RULES_LEFT_OUT_NOTE: &str = "rule-derived labels and taints left out: ";

/// What the rules leave when their evaluation fails as a whole (a budget,
/// a panic): the static part, and a note that says why; fenced when the
/// rules may give a taint (`may_taint`, `fence::rules_may_taint`).
pub fn static_only(static_: Option<Additions>, failure: Failure, may_taint: bool) -> Collected {
    let why = derived::escape_controls(&failure.why).into_owned();
    Collected {
        additions: Ok(static_),
        rules: Vec::new(),
        notes: vec![match may_taint {
            true => format!("{RULES_LEFT_OUT_NOTE}{why}"),
            false => fence::no_fence_note(&why),
        }],
        fence: may_taint.then_some(failure),
        failed: Some(why),
    }
}

/// [`collect`] given the static part (read first, by
/// [`static_additions`]: what every fallback keeps), with the rule-derived
/// part merged under it; `sources`, when given, are `env`'s (decoded once
/// for the boot path's fence decision, not twice).
pub fn collect_derived(
    env: &[(OsString, OsString)],
    static_: Option<Additions>,
    original_argv: &[OsString],
    facts_root: &Path,
    profile: Profile,
    scope: FactsScope,
    sources: Option<derived::Sources>,
) -> Collected {
    if split_layers(env).is_some() {
        // Each layer's rules over its own static part.
        return collect(env, original_argv, facts_root, profile, scope);
    }
    let nodename = hostname_override(original_argv);
    derive_over(
        env,
        static_,
        profile,
        scope,
        &mut root_reader(facts_root, &nodename, scope),
        sources,
    )
}

/// The rule-derived part of `env` merged under `static_`; an evaluation
/// that fails as a whole leaves the static part.
fn derive_over(
    env: &[(OsString, OsString)],
    static_: Option<Additions>,
    profile: Profile,
    scope: FactsScope,
    read: &mut ReadFacts,
    sources: Option<derived::Sources>,
) -> Collected {
    let sources = sources.unwrap_or_else(|| derived::sources_from_env(env));
    if sources.is_empty() {
        return Collected {
            additions: Ok(static_),
            rules: Vec::new(),
            notes: Vec::new(),
            fence: None,
            failed: None,
        };
    }
    let may_taint = derived::sources_may_taint(&sources);
    // Read only what the rules and NFD's label set look at.
    let used = derived::facts_used(&sources);
    let attributes = used.attributes.as_ref();
    let mut features = read(&used.features, attributes);
    let keep_matched = matches!(scope, FactsScope::WholeElements);
    let derived = match derived::derive(
        &sources,
        &mut features,
        profile,
        &mut |more| read(more, attributes),
        keep_matched,
    ) {
        Ok(d) => d,
        Err(failure) => return static_only(static_, failure, may_taint),
    };
    let (merged, mut notes) = derived::merge(static_.as_ref(), &derived);
    notes.splice(0..0, derived.problems.iter().cloned());
    notes.extend(derived.rules.iter().filter_map(|r| {
        r.left_out.as_ref().map(|why| {
            format!(
                "rule {} left out: {}",
                crate::node::rules::shown_name(&r.name),
                derived::escape_controls(why)
            )
        })
    }));
    let empty = merged.labels.is_empty() && merged.taints.is_empty();
    Collected {
        additions: Ok((!empty).then_some(merged)),
        rules: derived.rules,
        notes,
        // Rules that could not be decoded may have had taints.
        fence: match &sources.rules {
            Some(Err(e)) => Some(Failure::new(fence::Reason::RulesFailed, e.clone())),
            _ => None,
        },
        failed: match &sources.rules {
            Some(Err(e)) => Some(derived::escape_controls(e).into_owned()),
            _ => None,
        },
    }
}

/// Leave out the labels a kubelet that disagrees with our checks may refuse
/// (the crash-loop guard's fallback after a quick failure); every taint and
/// the other labels, the pool label among them, stay. Returns the keys
/// left out.
pub fn drop_refusable(additions: &mut Additions) -> Vec<String> {
    let mut gone = Vec::new();
    crate::node::retain(&mut additions.labels, &mut |(k, _)| {
        let refusable = super::guard::may_be_refused(k);
        if refusable {
            gone.push(k.clone());
        }
        !refusable
    });
    gone
}

/// What the fallbacks would keep of `plan` (for `explain`): the static part
/// when the node rules fail, and what the crash-loop guard leaves out after
/// a quick failure of kubelet.
pub fn fallbacks(plan: &Plan, env: &[(OsString, OsString)]) -> Vec<String> {
    if plan.left_out.is_some() || plan.argv == plan.original_argv {
        return Vec::new();
    }
    let mut out = Vec::new();
    let static_ = static_additions(env).ok().flatten().unwrap_or_default();
    if rules_in_env(env) {
        let labels: Vec<String> = static_
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let taints: Vec<String> = static_.taints.iter().map(|t| t.to_string()).collect();
        let fenced = match rules_may_taint(env) {
            true => format!(
                ", and registers fenced with {} (or wrapper-died, after an OOM kill or a start \
                 timeout); {}",
                fence::Reason::RulesFailed.taint(),
                fence::LIFT
            ),
            false => " (no fence: no node rule gives a taint)".into(),
        };
        out.push(format!(
            "if the node rules fail (an error, a crash, an OOM kill, a start timeout), kubelet \
             starts with the static part only: labels [{}], taints [{}]{fenced}",
            labels.join(","),
            taints.join(",")
        ));
    }
    let refusable: Vec<&str> = plan
        .added_labels
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| super::guard::may_be_refused(k))
        .collect();
    out.push(if refusable.is_empty() {
        format!(
            "if kubelet fails within {}s of a start, the crash-loop guard leaves nothing out: \
             every kubelet takes these labels and taints",
            super::guard::QUICK_FAILURE_SECS
        )
    } else {
        format!(
            "if kubelet fails within {}s of a start, the crash-loop guard leaves out {} at the \
             next (a kubelet of another version may refuse them) and keeps the taints and the \
             other labels",
            super::guard::QUICK_FAILURE_SECS,
            refusable.join(", ")
        )
    });
    out
}

/// The node name kubelet registers with when `--hostname-override` is set
/// (kubelet trims and lower-cases it); NFD's `system.name` follows it.
fn hostname_override(argv: &[OsString]) -> Option<String> {
    let words: Vec<String> = argv
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    kubelet::flags::scan(&words)
        .last_value("hostname-override")
        .map(|h| crate::node::rules::go_lower_ascii(h.trim()))
        .filter(|h| !h.is_empty())
}

/// The one command the wrapper stands in for, with `$VAR`s expanded.
#[derive(Debug, Clone)]
pub struct OriginalCommand {
    pub executable: PathBuf,
    pub argv: Vec<OsString>,
}

/// Expand and resolve the service's single `ExecStart=` command.
pub fn original_command(
    svc: &LoadedService,
    env: &[(OsString, OsString)],
    root: &Path,
) -> Result<OriginalCommand> {
    let cmd = match svc.exec_start.as_slice() {
        [cmd] => cmd,
        [] => bail!("the unit has no ExecStart= besides the wrapper's own"),
        _ => bail!(
            "the unit has {} ExecStart= commands; the wrapper can stand in for one",
            svc.exec_start.len()
        ),
    };
    let argv: Vec<OsString> = unit::expand_argv(cmd, env)
        .map_err(|e| crate::node_error!("ExecStart=: {e}"))?
        .into_iter()
        .map(OsString::from_vec)
        .collect();
    if argv.is_empty() {
        bail!("ExecStart= expands to an empty argv");
    }
    let executable = unit::resolve_executable(
        OsStr::from_bytes(&cmd.path),
        svc.exec_search_path.as_deref(),
        root,
    )
    .with_context(|| format!("finding {}", String::from_utf8_lossy(&cmd.path)))?;
    Ok(OriginalCommand { executable, argv })
}

/// [`original_command`] on a tree that is not a whole node (laid out from
/// MachineConfigs): an absolute executable missing from the tree is taken
/// as is, with a warning, since boot execs it from the OS image.
pub fn original_command_offline(
    svc: &LoadedService,
    env: &[(OsString, OsString)],
    root: &Path,
    warnings: &mut Vec<String>,
) -> Result<OriginalCommand> {
    match original_command(svc, env, root) {
        Ok(c) => Ok(c),
        Err(e) => {
            let [cmd] = svc.exec_start.as_slice() else {
                return Err(e);
            };
            let path = PathBuf::from(OsStr::from_bytes(&cmd.path));
            let Ok(argv) = unit::expand_argv(cmd, env) else {
                return Err(e);
            };
            let argv: Vec<OsString> = argv.into_iter().map(OsString::from_vec).collect();
            if !path.is_absolute() || argv.is_empty() {
                return Err(e);
            }
            warnings.push(format!(
                "{} is not in this tree (offline: at boot it comes from the OS image)",
                path.display()
            ));
            Ok(OriginalCommand {
                executable: path,
                argv,
            })
        }
    }
}

/// Merge `additions` into the original command; on any problem with them the
/// plan is the original command unchanged and `left_out` says why.
pub fn plan(
    original: OriginalCommand,
    additions: Result<Option<Additions>>,
    profile: Profile,
    fs: &dyn NodeFs,
) -> Plan {
    plan_with(original, additions, profile, fs, false)
}

/// [`plan`], failing closed where kubelet's own taints cannot be read (its
/// `--config` unreadable, say) or passed (with ours, over the kernel's
/// limit on one word): ours go in with the fence
/// (`fence::Reason::KubeletConfigUnreadable`, `KubeletTaintsTooLong`)
/// instead of being left out. What the wrapper and `explain` do.
pub fn plan_closed(
    original: OriginalCommand,
    additions: Result<Option<Additions>>,
    profile: Profile,
    fs: &dyn NodeFs,
) -> Plan {
    plan_with(original, additions, profile, fs, true)
}

fn plan_with(
    original: OriginalCommand,
    additions: Result<Option<Additions>>,
    profile: Profile,
    fs: &dyn NodeFs,
    fence_unreadable: bool,
) -> Plan {
    let mut plan = Plan {
        executable: original.executable,
        argv: original.argv.clone(),
        original_argv: original.argv,
        added_labels: Vec::new(),
        taints: Vec::new(),
        added_taints: Vec::new(),
        warnings: Vec::new(),
        left_out: None,
        rules: Vec::new(),
        notes: Vec::new(),
    };
    let additions = match additions {
        Ok(Some(a)) => a,
        Ok(None) => return plan,
        Err(e) => {
            plan.left_out = Some(format!("{e:#}"));
            return plan;
        }
    };
    // Flags reach kubelet only when we can tell how it gets its argv: the
    // executable is kubelet, or a launcher that passes argv on unchanged.
    let words: Vec<String> = plan
        .original_argv
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    if let Err(why) = kubelet::flags::kubelet_args_start(&plan.executable.to_string_lossy(), &words)
    {
        plan.left_out = Some(why);
        return plan;
    }
    // A bug of ours must not keep kubelet from starting: a panic in the
    // merge is one more reason to start it unchanged.
    let applied = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        match fence_unreadable {
            true => kubelet::flags::apply_fencing(
                &plan.original_argv,
                &additions,
                profile,
                fs,
                &|why| fence::Reason::from(why).taint(),
            ),
            false => kubelet::apply(&plan.original_argv, &additions, profile, fs),
        }
        .map_err(|e| crate::node::error::Error::msg(e.to_string()))
    }))
    .unwrap_or_else(|_| {
        Err(crate::node_error!(
            "internal error while merging (a bug; please report)"
        ))
    });
    match applied {
        Ok(applied) => {
            plan.argv = applied.argv;
            plan.added_labels = applied.added_labels;
            plan.taints = applied.taints;
            plan.added_taints = applied.added_taints;
            plan.warnings = applied.warnings;
            if let Some((replaced, why)) = applied.fenced {
                fence::push_replaced(&mut plan.notes, fence::Reason::from(replaced), &why);
            }
        }
        Err(e) => plan.left_out = Some(format!("{e:#}")),
    }
    plan
}

/// The one journal line that says what the wrapper did.
pub fn summary(plan: &Plan) -> String {
    if let Some(why) = &plan.left_out {
        let mut out = String::from("kubelet-labeler: starting kubelet without our labels/taints: ");
        push_cut(&mut out, &derived::escape_controls(why), LINE_MAX);
        return out;
    }
    if plan.argv == plan.original_argv {
        let mut out =
            String::from("kubelet-labeler: no labels or taints to add; starting kubelet unchanged");
        push_notes(&mut out, plan, "");
        return out;
    }
    let labels: Vec<String> = plan
        .added_labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let taints: Vec<String> = plan.taints.iter().map(|t| t.to_string()).collect();
    let mut out = String::from("kubelet-labeler: starting kubelet with");
    if !labels.is_empty() {
        out += &format!(" --node-labels={}", labels.join(","));
    }
    if !taints.is_empty() {
        out += &format!(" --register-with-taints={}", taints.join(","));
    }
    for w in &plan.warnings {
        out += &format!(" (warning: {w})");
    }
    // A restart of a registered node looks the same from here: say it.
    push_notes(&mut out, plan, REGISTRATION_ONLY);
    out
}

/// What every line that adds flags ends with: kubelet applies
/// `--node-labels` and `--register-with-taints` only when it creates the
/// Node; against an existing Node (a restart, a reboot) it patches only its
/// own default labels.
pub const REGISTRATION_ONLY: &str = " (applied only when kubelet registers a new Node; an existing Node keeps its labels and taints)";

/// The most bytes of the journal line ([`derived::MAX_LINE`]): text from a
/// node (a pod's feature file, made into notes a hundred times its size)
/// must not push it past journald's `LineMax=`. Notes are cut here, where
/// what they are is known; `boot` cuts the whole line last.
pub const LINE_MAX: usize = derived::MAX_LINE;
/// The most bytes of one note (a refused value is quoted whole in it).
const NOTE_MAX: usize = 4 << 10;

/// `text`, cut on a character boundary so that `out` stays within `max`
/// bytes, the cut marked.
pub fn push_cut(out: &mut String, text: &str, max: usize) {
    const MARK: &str = "...(cut)";
    if out.len() + text.len() <= max {
        out.push_str(text);
        return;
    }
    let mut end = max.saturating_sub(out.len() + MARK.len()).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&text[..end]);
    out.push_str(MARK);
}

/// Which rules matched and what was dropped, for the one journal line,
/// then `tail`; notes cut short, and left out past [`LINE_MAX`].
fn push_notes(out: &mut String, plan: &Plan, tail: &str) {
    const MORE: &str = " (and more notes; `kubelet-labeler explain --root /` shows them)";
    let budget = LINE_MAX - tail.len() - MORE.len();
    let mut rules = String::new();
    let matched = plan
        .rules
        .iter()
        .filter(|r| r.matched && r.left_out.is_none());
    for (i, r) in matched.enumerate() {
        rules += if i == 0 { " (rules matched: " } else { ", " };
        rules += &crate::node::rules::shown_name(&r.name);
    }
    if !rules.is_empty() {
        rules += ")";
    }
    let mut notes = vec![rules];
    for n in &plan.notes {
        let mut note = String::from(" (");
        push_cut(&mut note, &derived::escape_controls(n), NOTE_MAX);
        note.push(')');
        notes.push(note);
    }
    let mut more = false;
    for note in notes.iter().filter(|n| !n.is_empty()) {
        if out.len() + note.len() > budget {
            more = true;
            continue;
        }
        out.push_str(note);
    }
    if more {
        out.push_str(MORE);
    }
    // Ours and short, kept whole: a line its labels alone make too long
    // is cut in its middle when written (`derived::journal_line`).
    out.push_str(tail);
}

/// The node's files under a root directory (`/` at boot), as kubelet's
/// command sees them: a relative path starts at `cwd`.
pub struct RootFs {
    pub root: PathBuf,
    /// The node path kubelet runs in (its unit's `WorkingDirectory=`):
    /// `--config=config.yaml` is read there, as kubelet reads it.
    pub cwd: PathBuf,
    /// The directories [`NodeFs::list`] listed above the one it lists now
    /// (kubelet's walk is depth first), each as named and where it is on
    /// this machine: a directory in one is opened from there (its name
    /// not followed), not resolved name by name again at each depth (1023
    /// nested directories took 14 s, review 10 F2).
    listed: std::cell::RefCell<Vec<(PathBuf, PathBuf)>>,
    /// How many directories `list` resolved from the root.
    #[cfg(test)]
    resolved: std::cell::Cell<usize>,
}

impl RootFs {
    /// The files of the tree at `root` for a command run in `cwd`.
    pub fn new(root: &Path, cwd: &Path) -> RootFs {
        RootFs {
            root: root.to_path_buf(),
            cwd: cwd.to_path_buf(),
            listed: Default::default(),
            #[cfg(test)]
            resolved: Default::default(),
        }
    }

    /// The files of `root` as the command of `svc` sees them.
    pub fn of_unit(root: &Path, svc: &LoadedService) -> RootFs {
        let cwd = svc.working_directory.as_deref();
        RootFs::new(root, cwd.unwrap_or(Path::new("/")))
    }

    /// Resolved inside the root (an untrusted tree's links stay in it).
    pub fn path(&self, node_path: &Path) -> std::io::Result<PathBuf> {
        crate::node::unit::search::contained(&self.root, &self.cwd.join(node_path))
    }
}

impl NodeFs for RootFs {
    /// Regular files only (review 45 r45c F2: kubelet waits on a FIFO and
    /// takes what is fed, which read here without waiting was empty).
    fn read(&self, path: &Path, limit: usize) -> std::io::Result<Vec<u8>> {
        use crate::node::nodefs::{READ_LIMIT, read_regular};
        match read_regular(&self.path(path)?, limit.min(READ_LIMIT))? {
            Some(bytes) => Ok(bytes),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                "larger than the most read",
            )),
        }
    }

    fn list(&self, dir: &Path, bytes_left: &mut u64) -> std::io::Result<Vec<(OsString, bool)>> {
        let mut listed = self.listed.borrow_mut();
        let d = dir.as_os_str().as_bytes();
        // `dir`'s name in the last directory above it (listed a directory).
        let mut name = None;
        while let Some((node, at)) = listed.last() {
            let n = node.as_os_str().as_bytes();
            if let Some(rest) = d.strip_prefix(n).and_then(|r| r.strip_prefix(b"/")) {
                name = (!rest.is_empty() && !rest.contains(&b'/'))
                    .then(|| at.join(OsStr::from_bytes(rest)));
                break;
            }
            listed.pop();
        }
        let (at, nofollow) = match name {
            Some(at) => (at, true),
            None => {
                #[cfg(test)]
                self.resolved.set(self.resolved.get() + 1);
                (self.path(dir)?, false)
            }
        };
        let entries = crate::node::nodefs::config_dir_entries(&at, nofollow, bytes_left)?;
        listed.push((dir.to_path_buf(), at));
        Ok(entries)
    }

    fn is_dir(&self, path: &Path) -> std::io::Result<bool> {
        use std::os::unix::ffi::OsStrExt;
        // lstat(2) of the path as written: `dd/`, `dd/.` follow `dd`.
        let last = path.as_os_str().as_bytes().rsplit(|&b| b == b'/').next();
        let meta = if matches!(last, Some(b"" | b"." | b"..")) {
            std::fs::metadata(self.path(path)?)?
        } else {
            let node = self.cwd.join(path);
            std::fs::symlink_metadata(crate::node::unit::search::contained_entry(
                &self.root, &node,
            )?)?
        };
        Ok(meta.is_dir())
    }
}

/// [`RootFs`] for a tree laid out from MachineConfigs: a directory boot makes
/// with `ExecStartPre=` (kubelet's `--config-dir`) reads as empty, with a
/// warning, instead of leaving our additions out.
pub struct OfflineFs {
    pub inner: RootFs,
    pub warnings: std::cell::RefCell<Vec<String>>,
}

impl NodeFs for OfflineFs {
    fn read(&self, path: &Path, limit: usize) -> std::io::Result<Vec<u8>> {
        self.inner.read(path, limit)
    }

    fn is_dir(&self, path: &Path) -> std::io::Result<bool> {
        match self.inner.is_dir(path) {
            // Read as an empty directory by `list`, with its warning.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
            other => other,
        }
    }

    fn list(&self, dir: &Path, bytes_left: &mut u64) -> std::io::Result<Vec<(OsString, bool)>> {
        match self.inner.list(dir, bytes_left) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.warnings.borrow_mut().push(format!(
                    "{} is not in this tree (offline: read as empty; at boot an ExecStartPre= or the OS makes it)",
                    dir.display()
                ));
                Ok(Vec::new())
            }
            other => other,
        }
    }
}

/// [`derived::sources_may_taint`] for either layer of `env` (the role's and the
/// pool's rules).
pub fn rules_may_taint(env: &[(OsString, OsString)]) -> bool {
    let may = |layer: &[(OsString, OsString)]| {
        derived::sources_may_taint(&derived::sources_from_env(layer))
    };
    match split_layers(env) {
        None => may(env),
        Some((role, pool)) => may(&role) || may(&pool),
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
