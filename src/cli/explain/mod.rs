//! `explain`: what the unit files on a node's tree give, and what the
//! wrapper would exec there. Uses the same plan as the wrapper at boot.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

pub mod command;
mod formats;
mod human;
pub mod pool;
pub mod reach;
pub mod release;
mod sync;
mod tree;
use crate::node::contract::{GENERATOR_PATH, WRAPPER_DROPIN_NAME};
use crate::node::kubelet::Profile;
use crate::node::kubelet::version::KubeletVersion;
use crate::node::unit::{self, LoadOptions, UnitPaths};
use crate::node::wrapper::fail_closed;
use crate::node::wrapper::plan::{self, Plan};
pub use human::render_human;
use reach::{reach, wrapper_program};
pub use sync::{ReportedLabel, SyncPreview};

pub struct ExplainOptions {
    pub root: PathBuf,
    pub unit: String,
    pub profile: Profile,
    /// The service manager's environment (lowest precedence, as in systemd).
    pub manager_env: Vec<(String, String)>,
    pub unit_path: Option<String>,
    /// Set over the unit's own environment (as if the env drop-in said so):
    /// how `--rules` and `--nfd-labels` preview rules on this tree.
    pub override_env: Vec<(String, String)>,
    /// With `--rules`: the rules `--leave-to-nfd` left to the cluster's
    /// NFD (`OBJECT/RULE`), in place of the env drop-in's record.
    pub left_to_nfd: Option<Vec<String>>,
    /// Where the node's facts are read [default: `root`].
    pub facts_root: Option<PathBuf>,
    /// The node's facts given whole (NFD's NodeFeature, `facts --json`),
    /// with the input's name: read instead of `facts_root`.
    pub facts: Option<(crate::node::facts::Features, String)>,
    /// `root` is laid out from MachineConfigs, not a whole node: a missing
    /// kubelet binary or `--config-dir` is a warning, not an error.
    pub offline: bool,
    /// The node's kubelet, the unit's flags are judged for [default: as
    /// the tree under `root` tells, else unknown].
    pub kubelet_version: Option<KubeletVersion>,
}

/// One node rule as `explain` shows it.
#[derive(Debug, Serialize)]
pub struct RuleExplanation {
    pub name: String,
    pub matched: bool,
    /// `<domain>.<feature>` → the elements (attribute maps) it matched.
    pub matched_features:
        std::collections::BTreeMap<String, Vec<std::collections::BTreeMap<String, String>>>,
    /// What the rule gives; registered unless `left_out` says why not.
    pub labels: Vec<String>,
    pub taints: Vec<String>,
    pub left_out: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Explanation {
    pub unit: String,
    /// Fragment and drop-ins as systemd loads them (the wrapper's included).
    pub fragment: Option<String>,
    pub dropins: Vec<String>,
    /// Whether the wrapper's drop-in is installed.
    pub wrapper_installed: bool,
    /// Whether systemd runs the wrapper at boot: installed, and no later
    /// drop-in takes `ExecStart=` back.
    pub wrapper_runs: bool,
    pub executable: String,
    /// The kubelet release the unit's flags were judged for, and why.
    pub kubelet_version: String,
    /// What systemd would exec without the wrapper.
    pub original_argv: Vec<String>,
    /// What will run: what the wrapper would exec, or, when systemd does
    /// not run the wrapper, `original_argv`.
    pub argv: Vec<String>,
    pub added_labels: Vec<String>,
    pub taints: Vec<String>,
    /// Why our additions would be left out, if they would.
    pub left_out: Option<String>,
    /// Why at boot kubelet would start without the wrapper, or not at all
    /// (the wrapper missing or bypassed, a string exec would refuse).
    pub errors: Vec<String>,
    /// Node rules in order, with what each matched and gave.
    pub rules: Vec<RuleExplanation>,
    /// Rules left to the cluster's NFD (`OBJECT/RULE`): not evaluated at
    /// boot, applied by NFD after the node joins.
    pub left_to_nfd: Vec<String>,
    /// Where the facts the rules (and NFD's label set) were evaluated on
    /// came from; None when nothing derives from facts.
    pub facts: Option<String>,
    /// False when no facts were read: the rules' "no match" says nothing.
    pub facts_read: bool,
    /// Derived output that was dropped or overridden (static wins on a key).
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    /// The day-2 sync, when its units are in the tree.
    pub sync: Option<SyncPreview>,
}

impl Explanation {
    /// Show paths as node paths: `root` is a scratch tree, not the node.
    pub fn strip_root(&mut self, root: &Path) {
        let strip = |p: &mut String| {
            if let Ok(rel) = Path::new(p.as_str()).strip_prefix(root) {
                *p = format!("/{}", rel.display());
            }
        };
        if let Some(f) = self.fragment.as_mut() {
            strip(f);
        }
        if let Some(sync) = self.sync.as_mut() {
            strip(&mut sync.service);
            let root_text = root.display().to_string();
            for t in &mut sync.triggers {
                *t = t.replace(&root_text, "");
            }
        }
        self.dropins.iter_mut().for_each(strip);
        strip(&mut self.executable);
        let root_text = root.display().to_string();
        for w in self
            .warnings
            .iter_mut()
            .chain(self.left_out.iter_mut())
            .chain(self.errors.iter_mut())
        {
            *w = w.replace(&root_text, "");
        }
    }
}

fn lossy(v: &[OsString]) -> Vec<String> {
    v.iter().map(|s| s.to_string_lossy().into_owned()).collect()
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// How to give `explain` the node's facts.
const FACTS_FIX: &str = "give --facts-root DIR (the node's root: / on the node, or its disk \
    mounted) or --facts FILE (`oc get nodefeature -n NAMESPACE NODE -o yaml`, or \
    `kubelet-labeler facts --json` run on the node)";

/// Whether the service's environment carries anything of ours.
fn configured(env: &[(OsString, OsString)]) -> bool {
    use crate::node::contract::{LABELS_VAR, NFD_LABELS_VAR, RULES_VAR, TAINTS_VAR};
    env.iter().any(|(k, v)| {
        [LABELS_VAR, TAINTS_VAR, RULES_VAR, NFD_LABELS_VAR]
            .iter()
            .chain(
                crate::node::contract::ROLE_LAYER
                    .iter()
                    .map(|(role, _)| role),
            )
            .any(|n| k == n)
            && !v.is_empty()
    })
}

/// One `KEY=VALUE` the service manager's environment takes (as
/// `systemctl set-environment` does): a key before the first `=`.
pub fn manager_env_assignment(kv: &str) -> Result<(String, String), String> {
    match kv.split_once('=') {
        Some(("", _)) => Err("the name before '=' is empty; write KEY=VALUE".into()),
        Some((k, v)) => Ok((k.to_string(), v.to_string())),
        None => Err(format!(
            "no '='; write KEY=VALUE (KEY= for an empty value), e.g. {kv}="
        )),
    }
}

pub fn explain(opts: &ExplainOptions) -> Result<Explanation> {
    let paths = match &opts.unit_path {
        Some(list) => UnitPaths::from_list(&opts.root, list),
        None => UnitPaths::system(&opts.root),
    };
    let wrapper = wrapper_program(&paths, &opts.unit);
    let reach = reach(&paths, &opts.unit, &wrapper);
    let as_loaded = match unit::load_service(&paths, &opts.unit, &LoadOptions::default()) {
        Ok(s) => s,
        // A drop-in after ours that adds a second ExecStart=, say.
        Err(e) if !reach.errors.is_empty() => {
            anyhow::bail!("loading {}: {e:#}; {}", opts.unit, reach.errors.join("; "))
        }
        Err(e) => {
            let e = Err(e).with_context(|| format!("loading {}", opts.unit));
            if tree::unit_missing(&paths, &opts.unit) {
                return e.map_err(|e| {
                    anyhow::anyhow!(
                        "{e:#}; {}",
                        tree::not_found_fix(&opts.unit, &opts.root, opts.offline)
                    )
                });
            }
            return e;
        }
    };
    let original = unit::load_service(
        &paths,
        &opts.unit,
        &LoadOptions {
            skip_dropin: Some(WRAPPER_DROPIN_NAME.into()),
            skip_running: Some(wrapper),
            ..Default::default()
        },
    )
    .with_context(|| format!("loading {} without {WRAPPER_DROPIN_NAME}", opts.unit))?;

    let manager_env: Vec<(OsString, OsString)> = opts
        .manager_env
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    let mut warnings: Vec<String> = as_loaded.warnings.to_vec();
    for d in &original.skipped {
        if d.file_name().is_some_and(|n| n != WRAPPER_DROPIN_NAME) {
            warnings.push(format!(
                "{} runs the wrapper too: the wrapper leaves it out like {WRAPPER_DROPIN_NAME} and stands in for the command beneath both; remove it",
                d.display()
            ));
        }
    }
    let mut for_env = original.clone();
    if opts.offline {
        // Files the OS image provides (/etc/os-release) are not in a tree
        // laid out from MachineConfigs: read as absent, with a warning.
        // Each pattern looked up and said once, the first 32 of them (review
        // 42 r42b F4: 880,000 lines of one pattern made 90 MB of output).
        let mut absent: std::collections::HashMap<String, bool> = Default::default();
        let mut said = unit::warnings::Warnings::default();
        for (pattern, optional) in for_env.environment_files.iter_mut() {
            if *optional {
                continue;
            }
            let is_new = !absent.contains_key(pattern.as_str());
            let missing = *absent.entry(pattern.clone()).or_insert_with(|| {
                unit::env::glob(&opts.root, pattern).is_ok_and(|m| m.is_empty())
            });
            if missing {
                *optional = true;
                if is_new {
                    said.push_with(|| format!(
                        "EnvironmentFile={pattern} is not in this tree (offline: read as empty; at boot the OS provides it)"
                    ));
                }
            }
        }
        warnings.extend(said);
    }
    let env = unit::offline_environment(&for_env, &opts.root, &manager_env)
        .context("building the service environment")?;
    // As boot: our variables as our drop-ins set them; set otherwise (an
    // `EnvironmentFile=` of kubelet's), it registers fenced with ours.
    let own = crate::node::wrapper::own_env::check(&for_env, &opts.root, &env);
    let overridden = own.overridden;
    let mut env = own.env;
    for (k, v) in &opts.override_env {
        env.retain(|(ek, _)| ek != k.as_str());
        env.push((k.into(), v.into()));
    }
    let command = if opts.offline {
        plan::original_command_offline(&original, &env, &opts.root, &mut warnings)?
    } else {
        tree::command_on_root(&original, &env, &opts.root, &opts.unit, &mut warnings)?
    };
    let fs = plan::OfflineFs {
        inner: plan::RootFs::of_unit(&opts.root, &original),
        warnings: Default::default(),
    };
    let facts_root = opts.facts_root.as_deref().unwrap_or(&opts.root);
    let derives = !crate::node::wrapper::derived::sources_from_env(&env).is_empty();
    let (collected, facts, facts_read) = match &opts.facts {
        Some((features, name)) => (
            plan::collect_given(&env, features, opts.profile),
            format!("from {name}"),
            !features.is_empty(),
        ),
        None => {
            // A tree laid out from MachineConfigs has no /sys or /proc.
            let read = !(opts.offline && opts.facts_root.is_none())
                && derives
                && !crate::node::facts::read(&crate::node::facts::FactsOptions {
                    root: facts_root,
                    nodename: None,
                    only: None,
                    attributes: None,
                })
                .is_empty();
            let collected = plan::collect(
                &env,
                &command.argv,
                facts_root,
                opts.profile,
                plan::FactsScope::WholeElements,
            );
            let facts = match (read, opts.offline && opts.facts_root.is_none()) {
                (true, _) => format!("read under {}", facts_root.display()),
                (false, true) => {
                    format!("none read: MachineConfigs hold no node's hardware; {FACTS_FIX}")
                }
                (false, false) => format!(
                    "none read: {} has no /sys, /proc or os-release facts; {FACTS_FIX}",
                    facts_root.display()
                ),
            };
            (collected, facts, read)
        }
    };
    // As the wrapper plans: failing closed (the fence where the rules'
    // taints are unknown, the taints without our labels where those do not
    // go in).
    let nodefs: &dyn crate::node::kubelet::NodeFs = match opts.offline {
        true => &fs,
        false => &fs.inner,
    };
    let mut plan: Plan = match collected.additions {
        Ok(additions) => {
            let static_labels = plan::static_additions(&env)
                .ok()
                .flatten()
                .map(|a| a.labels)
                .unwrap_or_default();
            fail_closed::plan_fenced(
                command,
                additions,
                &static_labels,
                collected.fence.as_ref(),
                opts.profile,
                nodefs,
            )
        }
        // As boot: the fence alone, where the static part does not parse.
        Err(e) => fail_closed::statics_unreadable(command, &e, opts.profile, nodefs),
    };
    plan.rules = collected.rules;
    let mut notes = collected.notes;
    notes.append(&mut plan.notes);
    plan.notes = notes;
    // As boot: a node installed from a fleet ISO whose labels select
    // another pool than it was installed into registers fenced.
    let record = crate::node::wrapper::pool_change::read_record(&opts.root);
    let plan = crate::node::wrapper::pool_change::check(plan, &record, opts.profile, nodefs);
    let mut plan = crate::node::wrapper::own_env::fence(plan, &overridden, opts.profile, nodefs);
    plan.notes.extend(plan::fallbacks(&plan, &env));
    if let Some(Ok(table)) = &record
        && let Some(installed) = table.pools.first()
    {
        plan.notes.push(format!(
            "installed from a fleet ISO into pool {} ({}): a fallback above whose labels select \
             another pool registers fenced with {} instead",
            installed.name,
            crate::node::fleet::INSTALLED_POOL_PATH,
            crate::node::wrapper::fence::Reason::PoolChanged.taint()
        ));
    }
    warnings.extend(fs.warnings.into_inner());
    warnings.extend(plan.warnings.iter().cloned());
    warnings.extend(tree::missing_config(&plan, &fs.inner, opts.offline));
    let kubelet_version = opts
        .kubelet_version
        .clone()
        .or_else(|| match opts.offline {
            false => crate::node::kubelet::version::from_root(&opts.root),
            true => None,
        })
        .unwrap_or_else(KubeletVersion::unknown);
    warnings.extend(crate::cli::validate::command_flag_warnings(
        &plan.executable.to_string_lossy(),
        &lossy(&plan.original_argv),
        kubelet_version.minor,
    ));
    warnings.extend(installed_pool_check(&opts.root, &env, facts_root));
    warnings.extend(value_form_warnings(&env));
    // Whose kubelet the node runs decides which labels it takes.
    let kubelet = kubelet_flavour(opts, &kubelet_version);
    let profile_error = kubelet
        .as_ref()
        .and_then(|k| profile_mismatch(opts, k, configured(&env)));
    // The node's own wrapper reads its own node format.
    let format_error = formats::preview_error(&paths, &as_loaded.dropins);
    let wrapper_installed = reach.installed;
    let wrapper_runs = reach.installed && !reach.bypassed;
    warnings.extend(reach.warnings);
    let mut errors = reach.errors;
    errors.extend(format_error);
    errors.extend(profile_error);
    // The whole command line kubelet gets, not only our additions, as the
    // node's kubelet judges it.
    errors.extend(crate::cli::validate::command_line_errors(
        &plan.executable.to_string_lossy(),
        &lossy(if wrapper_runs {
            &plan.argv
        } else {
            &plan.original_argv
        }),
        kubelet.as_ref().map_or(opts.profile, |k| k.0),
        kubelet.is_some(),
    ));
    // (A masked drop-in has said why already.)
    if !wrapper_installed && configured(&env) && errors.is_empty() {
        errors.push(format!(
            "the wrapper is not installed (neither {GENERATOR_PATH}, which writes {WRAPPER_DROPIN_NAME} at boot, nor that drop-in is here): systemd runs kubelet's own ExecStart=, without our labels/taints; {}",
            if opts.offline {
                "give the wrapper MachineConfig `render machineconfig` wrote too"
            } else {
                "install it with `kubelet-labeler render dropins`"
            }
        ));
    }
    // What exec would refuse: a string over the kernel's limit. systemd
    // execs the service (the wrapper) with this environment; the wrapper
    // execs kubelet with the argv.
    for (k, v) in &env {
        let what = format!("the environment variable {}", k.to_string_lossy());
        let len = k.len() + 1 + v.len();
        if let Some(why) = crate::node::kubelet::arg_limit::too_long(&what, len) {
            errors.push(format!("systemd cannot start {}: {why}", opts.unit));
        }
    }
    for (i, w) in plan.original_argv.iter().enumerate() {
        // Counted from 1, the program being 1, as `validate` counts.
        let what = format!("word {} of the original ExecStart=", i + 1);
        if let Some(why) = crate::node::kubelet::arg_limit::too_long(&what, w.len()) {
            errors.push(format!("kubelet cannot start: {why}"));
        }
    }
    if let [cmd] = original.exec_start.as_slice()
        && let Some(p) = &cmd.privilege_prefix
    {
        warnings.push(format!(
            "the original ExecStart= has the {p:?} prefix; the wrapper's drop-in must carry it too"
        ));
    }

    let mut explained = Explanation {
        unit: opts.unit.clone(),
        fragment: as_loaded.fragment.as_deref().map(display),
        dropins: as_loaded.dropins.iter().map(|d| display(d)).collect(),
        wrapper_installed,
        wrapper_runs,
        executable: display(&plan.executable),
        kubelet_version: kubelet_version.describe(),
        original_argv: lossy(&plan.original_argv),
        // Without the wrapper, what systemd runs is the original command.
        argv: lossy(if wrapper_runs {
            &plan.argv
        } else {
            &plan.original_argv
        }),
        added_labels: match wrapper_runs {
            true => plan
                .added_labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
            false => Vec::new(),
        },
        taints: match wrapper_runs {
            true => plan.taints.iter().map(|t| t.to_string()).collect(),
            false => Vec::new(),
        },
        left_out: plan.left_out.clone().filter(|_| wrapper_runs),
        errors,
        rules: plan
            .rules
            .iter()
            .map(|r| RuleExplanation {
                name: r.name.clone(),
                matched: r.matched,
                matched_features: r
                    .matched_features
                    .iter()
                    .map(|(feature, elements)| {
                        let elements = elements
                            .iter()
                            .map(|e| e.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
                        (feature.clone(), elements.collect())
                    })
                    .collect(),
                labels: r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                taints: r.taints.iter().map(|t| t.to_string()).collect(),
                left_out: r.left_out.clone(),
            })
            .collect(),
        left_to_nfd: left_to_nfd(&opts.root, &as_loaded.dropins, opts.left_to_nfd.as_deref()),
        notes: plan.notes.clone(),
        facts: derives.then_some(facts),
        facts_read,
        warnings,
        sync: None,
    };
    explained.sync = sync::preview(
        &paths,
        &opts.unit,
        &as_loaded.dropins,
        &explained,
        &sync::Derived {
            labels: &plan.added_labels,
            taints: &plan.taints,
            env: &env,
            refused: (!overridden.is_empty())
                .then(|| crate::node::wrapper::own_env::note(&overridden)),
        },
    );
    Ok(explained)
}

/// Values of the node rules (the pool's and the role's) in a form the node
/// never reads (`render::value_forms`).
fn value_form_warnings(env: &[(OsString, OsString)]) -> Vec<String> {
    use crate::node::contract::{ROLE_RULES_VAR, RULES_VAR};
    let mut warned = crate::cli::render::value_forms::Warned::default();
    for var in [ROLE_RULES_VAR, RULES_VAR] {
        let Some((_, text)) = env.iter().rfind(|(k, _)| k == var) else {
            continue;
        };
        let Ok(rules) = crate::node::rules::compact::decode(&text.to_string_lossy()) else {
            continue;
        };
        for r in &rules {
            warned.add(r, || format!("rule {:?}", r.name));
        }
    }
    warned.into_lines()
}

/// Whose kubelet the node runs, and what says so: OpenShift's where its
/// release is named (os-release, a rendered config's annotation);
/// upstream's where a distribution's kubelet package is installed. None
/// when nothing tells.
fn kubelet_flavour(opts: &ExplainOptions, given: &KubeletVersion) -> Option<(Profile, String)> {
    if let Some(p) = given.profile {
        return Some((p, given.source.clone()));
    }
    let found = crate::node::kubelet::version::from_root(&opts.root)?;
    Some((found.profile?, found.source))
}

pub fn profile_name(p: Profile) -> &'static str {
    match p {
        Profile::Upstream => "upstream",
        Profile::OpenShift => "openshift",
    }
}

/// Whose kubelet, in words.
pub fn kubelet_name(p: Profile) -> &'static str {
    match p {
        Profile::OpenShift => "OpenShift's kubelet",
        Profile::Upstream => "an upstream kubelet",
    }
}

/// The wrapper validates labels with the profile it was rendered with; a
/// node whose kubelet is the other one's refuses what that profile lets
/// through (OpenShift's node-role keys on an upstream kubelet), or is
/// judged by rules it does not have. An error naming both, and the fix.
/// None when they agree, or when there is nothing of ours to judge.
fn profile_mismatch(
    opts: &ExplainOptions,
    (kubelet, source): &(Profile, String),
    configured: bool,
) -> Option<String> {
    if *kubelet == opts.profile {
        return None;
    }
    let installed = crate::node::wrapper::installed::wrapper_profile(
        &opts.root,
        &opts.unit,
        opts.unit_path.as_deref(),
    );
    let ours = match installed {
        Some(p) if p == opts.profile => format!(
            "the wrapper here was rendered with --profile {} (its drop-in says so)",
            profile_name(p)
        ),
        // Not installed: nothing is judged with a profile at boot yet.
        _ if !configured => return None,
        _ => format!("explain was given --profile {}", profile_name(opts.profile)),
    };
    let theirs = kubelet_name(*kubelet);
    let fix = format!(
        "re-render with --profile {} (`render dropins` on a kubeadm node; `render \
         machineconfig`, where it is the default, for an OpenShift pool)",
        profile_name(*kubelet)
    );
    Some(format!(
        "this node runs {theirs} ({source}), but {ours}: the wrapper lets through labels by \
         the other kubelet's rules, and kubelet refuses what its own rules do not allow (it \
         exits at every start); {fix}"
    ))
}

/// The rules the env drop-ins record as left to the cluster's NFD
/// (`render::dropins::LEFT_TO_NFD_MARK`, in the shown form); `flags`
/// stands in for the pool layer's record when `--rules` replaces its rules.
fn left_to_nfd(root: &Path, dropins: &[PathBuf], flags: Option<&[String]>) -> Vec<String> {
    use crate::cli::render::dropins::LEFT_TO_NFD_MARK;
    use crate::node::contract::{ENV_DROPIN_NAME, ROLE_ENV_DROPIN_NAME};
    let mut out = Vec::new();
    for d in dropins {
        let Some(name) = d.file_name() else { continue };
        let pool = name == ENV_DROPIN_NAME;
        if !(pool || name == ROLE_ENV_DROPIN_NAME) || (pool && flags.is_some()) {
            continue;
        }
        // The node's file inside the tree (links followed inside it); a
        // regular file, as systemd has read it.
        let read = unit::search::contained(root, d)
            .and_then(|p| crate::node::nodefs::read_regular(&p, 1 << 20));
        if let Ok(Some(bytes)) = read {
            let text = String::from_utf8_lossy(&bytes);
            let ids = text
                .lines()
                .filter_map(|l| l.strip_prefix(LEFT_TO_NFD_MARK));
            out.extend(ids.map(str::to_string));
        }
    }
    if let Some(ids) = flags {
        out.extend(
            ids.iter()
                .map(|id| crate::node::rules::shown_name(id).into_owned()),
        );
    }
    out
}

/// A node installed from a fleet ISO records the pool it was installed
/// into (`crate::node::fleet::INSTALLED_POOL_PATH`). Where the labels
/// kubelet would register with select another pool, the plan is fenced
/// (`wrapper::pool_change`, as at boot). This says when the hardware alone
/// no longer selects it (new hardware, changed rules): the pool's own
/// static labels keep the node there, but a reinstall would choose
/// otherwise.
pub fn installed_pool_check(
    root: &Path,
    env: &[(OsString, OsString)],
    facts_root: &Path,
) -> Option<String> {
    use crate::node::contract::{NFD_LABELS_VAR, RULES_VAR};
    use crate::node::fleet::{describe_labels, registration_labels, selected_labels};
    // Unreadable: the fence's note says so.
    let table = crate::node::wrapper::pool_change::read_record(root)?.ok()?;
    let pool = table.pools.first()?;
    // Evaluated as the install did (the rules and NFD label set alone),
    // the hardware must still select the pool.
    let sources: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| k == RULES_VAR || k == NFD_LABELS_VAR)
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let hardware = match registration_labels(&sources, facts_root) {
        Ok(l) => l,
        Err(why) => {
            return Some(format!(
                "installed for pool {}, but this node's rules no longer evaluate: {why}",
                pool.name
            ));
        }
    };
    if pool.matches(&hardware) {
        return None;
    }
    Some(format!(
        "installed for pool {} (nodeSelector {}), but this node's hardware no longer matches it: by its rules alone, without the pool's own labels, its labels are ({})",
        pool.name,
        pool.describe_selector(),
        describe_labels(&selected_labels(&table.pools, &hardware))
    ))
}

/// Why the wrapper would start kubelet without our additions on the tree
/// under `root` (an `ExecStart=` through `sh -c`, say), for `render
/// dropins` to warn right away; None when it would add them, or when the
/// tree has no unit to tell from.
pub fn left_out_at_next_start(root: &Path, unit: &str, profile: Profile) -> Option<String> {
    explain(&ExplainOptions {
        root: root.to_path_buf(),
        unit: unit.to_string(),
        profile,
        manager_env: Vec::new(),
        unit_path: None,
        override_env: Vec::new(),
        left_to_nfd: None,
        facts_root: None,
        facts: None,
        offline: true,
        kubelet_version: None,
    })
    .ok()
    .and_then(|e| e.left_out.or_else(|| e.errors.into_iter().next()))
}
