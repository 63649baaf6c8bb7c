//! What runs at every kubelet start: systemd execs the wrapper in place of
//! the original `ExecStart`; the wrapper execs kubelet in its own PID, so
//! `Type=notify`, the watchdog, `Restart=` and `KillMode=` see kubelet.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::node::error::{Context, Result};
use crate::node_bail as bail;

use super::crash;
use super::derived;
use super::exec;
use super::fail_closed;
use super::fence::{self, Failure, Reason};
use super::guard::{Guard, Verdict, may_be_refused, uptime_ms};
use super::plan::{self, Plan};
use super::pool_change::Gate;
use crate::node::contract::WRAPPER_DROPIN_NAME;
use crate::node::kubelet::Profile;
use crate::node::unit::{self, LoadOptions, UnitPaths};

/// systemd's exit status for "could not exec" (203/EXEC).
pub const EXIT_EXEC: i32 = 203;
/// "Argument list too long" (asm-generic/errno-base.h, every architecture).
const E2BIG: i32 = 7;

#[derive(Debug, Clone)]
pub struct BootOptions {
    pub unit: String,
    pub root: PathBuf,
    /// `$SYSTEMD_UNIT_PATH`-style search path; None = the system manager's.
    pub unit_path: Option<String>,
    /// Basename of the wrapper's own drop-in, left out when resolving.
    pub own_dropin: String,
    pub profile: Profile,
    pub state_dir: PathBuf,
    pub stop_post: bool,
    /// Where node facts are read for rules; None = `root`.
    pub facts_root: Option<PathBuf>,
}

impl Default for BootOptions {
    fn default() -> Self {
        BootOptions {
            unit: "kubelet.service".into(),
            root: PathBuf::from("/"),
            unit_path: None,
            own_dropin: WRAPPER_DROPIN_NAME.into(),
            profile: Profile::Upstream,
            state_dir: PathBuf::from("/run/kubelet-labeler"),
            stop_post: false,
            facts_root: None,
        }
    }
}

/// Ends with the node format and a `.`: in the binary the next string
/// literal follows at once, and one starting with a digit would read as
/// part of the number (`render` read node format 4 as 47).
pub const USAGE: &str = concat!(
    "usage: kubelet-labeler-wrapper [--unit NAME] [--profile upstream|openshift] \
[--own-dropin NAME] [--root DIR] [--facts-root DIR] [--unit-path DIRS] [--state-dir DIR] [--stop-post]\
; node format ",
    crate::node_format!(),
    "."
);

/// Parse the wrapper's own arguments (no clap: the wrapper stays small).
pub fn parse_args(args: &[OsString]) -> Result<BootOptions> {
    let mut opts = BootOptions::default();
    let mut it = args.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if name == "--stop-post" {
            opts.stop_post = true;
            continue;
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next())
                .with_context(|| format!("{name} needs a value; {USAGE}"))
        };
        match name.as_str() {
            "--unit" => opts.unit = value()?,
            "--root" => opts.root = PathBuf::from(value()?),
            "--facts-root" => opts.facts_root = Some(PathBuf::from(value()?)),
            "--unit-path" => opts.unit_path = Some(value()?),
            "--own-dropin" => opts.own_dropin = value()?,
            "--state-dir" => opts.state_dir = PathBuf::from(value()?),
            "--profile" => {
                opts.profile = match value()?.as_str() {
                    "upstream" => Profile::Upstream,
                    "openshift" => Profile::OpenShift,
                    other => bail!("unknown profile {other:?}; {USAGE}"),
                }
            }
            _ => bail!("unknown argument {arg:?}; {USAGE}"),
        }
    }
    Ok(opts)
}

/// Read a node path, under `root`.
pub fn under_root(root: &Path, node_path: &Path) -> PathBuf {
    match node_path.strip_prefix("/") {
        Ok(rel) => root.join(rel),
        Err(_) => root.join(node_path),
    }
}

/// Resolve the original command and decide what to exec; `verdict` is
/// what the crash-loop guard leaves out of this start.
///
/// The static labels and taints (the env drop-in's, validated at render,
/// the pool label among them) are merged into the command first, before
/// any node rule runs, and armed as the crash fallback: a crash, a panic or
/// an evaluation error while the rules run costs the rule-derived part
/// only, and so does an OOM kill or a start timeout, at the next start.
/// Where the rules may give a taint, every such fallback fails closed: it
/// registers fenced (`fence`).
pub fn prepare(
    opts: &BootOptions,
    env: &[(OsString, OsString)],
    verdict: &Verdict,
) -> Result<Plan> {
    prepare_gated(opts, env, verdict, false).map(|(plan, _, _)| plan)
}

/// [`prepare`], and the final check every later rewrite of its argv
/// passes (the exec-limit fallbacks), with the record read for it, and
/// the fault hook's value as our drop-ins give it. `boot`: the wrapper's
/// start, where the fault hook may crash it at once.
fn prepare_gated(
    opts: &BootOptions,
    env: &[(OsString, OsString)],
    verdict: &Verdict,
    boot: bool,
) -> Result<(Plan, Gate, Option<String>)> {
    let paths = match &opts.unit_path {
        Some(list) => UnitPaths::from_list(&opts.root, list),
        None => UnitPaths::system(&opts.root),
    };
    // A second drop-in that runs the wrapper (an earlier render's under
    // another name, a hand copy) is ours too: standing in for it would exec
    // the wrapper again, in a loop, and never kubelet.
    let load = LoadOptions {
        skip_dropin: Some(opts.own_dropin.clone()),
        skip_running: unit::Program::this_process("the wrapper"),
        ..Default::default()
    };
    let svc = unit::load_service(&paths, &opts.unit, &load)
        .with_context(|| format!("loading {}", opts.unit))?;
    // Our variables as our drop-ins set them; set otherwise, the start
    // registers fenced with ours (`own_env`).
    let own = super::own_env::check(&svc, &opts.root, env);
    let overridden = own.overridden;
    let env = own.env.as_slice();
    if boot && *verdict == Verdict::Full {
        // Stands for a crash in the work for our additions.
        fault_hook(env);
    }
    let fault_value = fault(env).map(str::to_string);
    let original = plan::original_command(&svc, env, &opts.root)?;
    // From here on, a crash or panic of ours starts kubelet (see `crash`):
    // unchanged, or fenced where static taints or node rules are configured
    // (what they give is unknown until merged), then, once the static part
    // is merged, with that part.
    let executable = under_root(&opts.root, &original.executable);
    // Installed from a fleet ISO: every fallback too lands in the pool it
    // was installed into, or fenced (the record is read once a start).
    let record = super::pool_change::read_record(&opts.root);
    match fail_closed::fenced_before_merge(&original, env, record.is_some(), opts.profile) {
        Some(p) => crash::arm(&executable, &p.argv, FENCED_HEAD, fence_tail(&p)),
        None => crash::arm(&executable, &original.argv, crash::UNCHANGED, String::new()),
    };
    // `=abort-early`, `=stack-overflow-early`: a crash before the static
    // part is merged.
    if *verdict == Verdict::Full
        && let Some(f) = fault(env).and_then(|f| f.strip_suffix("-early"))
    {
        crash_now(f);
    }
    let fs = plan::RootFs::of_unit(&opts.root, &svc);
    let gate = |record, fs| Gate {
        record,
        profile: opts.profile,
        fs,
        overridden: overridden.clone(),
    };
    let finish = |plan, record: &_, fs: &_| {
        let plan = super::pool_change::check(plan, record, opts.profile, fs);
        super::own_env::fence(plan, &overridden, opts.profile, fs)
    };
    let mut static_ = match plan::static_additions(env) {
        Ok(s) => s,
        // The static taints do not parse (a hand edit: render validates
        // them): what they meant is unknown, so the fence goes in alone.
        Err(e) => {
            let plan = fail_closed::statics_unreadable(original, &e, opts.profile, &fs);
            let plan = super::own_env::fence(plan, &overridden, opts.profile, &fs);
            return Ok((plan, gate(record, fs), fault_value));
        }
    };
    let mut refusable_gone = Vec::new();
    if let (Verdict::DropRefusable(_), Some(a)) = (verdict, static_.as_mut()) {
        refusable_gone = plan::drop_refusable(a);
    }
    let with_rules = plan::rules_in_env(env);
    // Whether the rules may give a taint: then a start without what they
    // give registers fenced. (Decoded once, for both, without role layer.)
    let mut sources = (with_rules && plan::split_layers(env).is_none())
        .then(|| super::derived::sources_from_env(env));
    let may_taint = with_rules
        && match &sources {
            Some(s) => super::derived::sources_may_taint(s),
            None => plan::rules_may_taint(env),
        };
    let fallback = match verdict {
        Verdict::SkipRules(why) => Failure::new(Reason::WrapperDied, why.clone()),
        _ => Failure::new(Reason::RulesFailed, "a crash while the node rules ran"),
    };
    let static_plan = fail_closed::plan_fenced(
        original.clone(),
        static_.clone(),
        &[],
        may_taint.then_some(&fallback),
        opts.profile,
        &fs,
    );
    // A static label kubelet refuses: the taints went in without the
    // labels; so they do with the rules.
    let mut labels_note = None;
    if let Some(a) = static_.as_mut().filter(|a| !a.labels.is_empty())
        && static_plan.left_out.is_none()
        && static_plan.added_labels.is_empty()
    {
        a.labels.clear();
        labels_note = static_plan
            .notes
            .iter()
            .find(|n| n.starts_with("our labels left out"))
            .cloned();
    }
    let armed = finish(static_plan.clone(), &record, &fs);
    // (Also where the static plan adds nothing: it replaces the fence.)
    let (head, tail) = static_line(&armed);
    crash::arm_static(&executable, &armed.argv, head, tail);
    // `=panic`, `=abort-late`, `=stack-overflow-late`: a crash after the
    // static part is known, where the rules run (the crash fallback).
    let late_fault = || {
        if *verdict == Verdict::Full {
            match fault(env) {
                Some("panic") => panic!("injected fault (KUBELET_LABELER_FAULT=panic)"),
                Some(f) => crash_now(f.strip_suffix("-late").unwrap_or("")),
                None => {}
            }
        }
    };
    let evaluate =
        static_plan.left_out.is_none() && !matches!(verdict, Verdict::SkipRules(_)) && with_rules;
    if !evaluate {
        // Nothing derived to add: the static plan is the plan (fenced
        // when the guard left out rules that may give a taint).
        late_fault();
        let mut plan = static_plan;
        if let Verdict::SkipRules(why) = verdict {
            plan.notes.insert(
                0,
                match (with_rules, may_taint) {
                    (true, false) => fence::no_fence_note(why),
                    (true, true) => format!("rule-derived labels and taints left out: {why}"),
                    (false, _) => {
                        format!("rule-derived labels and taints, if any, left out: {why}")
                    }
                },
            );
        }
        plan.notes.extend(refusable_note(verdict, &refusable_gone));
        let plan = finish(plan, &record, &fs);
        return Ok((plan, gate(record, fs), fault_value));
    }
    let collected = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        late_fault();
        if *verdict == Verdict::Full && fault(env) == Some("rules-error") {
            // Stands for an evaluation that fails as a whole (its budget).
            return plan::static_only(
                static_.clone(),
                Failure::from(
                    "injected evaluation error (KUBELET_LABELER_FAULT=rules-error)".to_string(),
                ),
                may_taint,
            );
        }
        let facts_root = opts.facts_root.as_deref().unwrap_or(&opts.root);
        plan::collect_derived(
            env,
            static_.clone(),
            &original.argv,
            facts_root,
            opts.profile,
            plan::FactsScope::Used,
            sources.take(),
        )
    }))
    .unwrap_or_else(|_| {
        plan::static_only(
            static_.clone(),
            Failure::from(
                "internal error while evaluating the node rules (a bug; please report)".to_string(),
            ),
            may_taint,
        )
    });
    let mut additions = collected.additions;
    if let (Verdict::DropRefusable(_), Ok(Some(a))) = (verdict, additions.as_mut()) {
        for key in plan::drop_refusable(a) {
            if !refusable_gone.contains(&key) {
                refusable_gone.push(key);
            }
        }
    }
    let static_labels = static_.map(|a| a.labels).unwrap_or_default();
    let full = additions.map(|a| {
        fail_closed::plan_fenced(
            original,
            a,
            &static_labels,
            collected.fence.as_ref(),
            opts.profile,
            &fs,
        )
    });
    let mut notes = collected.notes;
    let mut plan = match full {
        Ok(mut p) if p.left_out.is_none() => {
            // (The static plan's own notes say it where it is the plan.)
            notes.splice(0..0, labels_note);
            notes.append(&mut p.notes);
            p.notes = notes;
            p
        }
        // The static part merges where the whole does not: keep it
        // (fenced where the rules may give a taint).
        failed => {
            let why = match failed {
                Ok(p) => p.left_out.unwrap_or_default(),
                Err(e) => format!("{e:#}"),
            };
            let mut p = static_plan;
            notes.push(format!("rule-derived labels and taints left out: {why}"));
            notes.append(&mut p.notes);
            p.notes = notes;
            p
        }
    };
    plan.rules = collected.rules;
    plan.notes.extend(refusable_note(verdict, &refusable_gone));
    // Installed from a fleet ISO: in the pool it was installed into, or fenced.
    let plan = finish(plan, &record, &fs);
    Ok((plan, gate(record, fs), fault_value))
}

/// The journal line's note for the crash-loop guard's fallback after a
/// quick failure: what it left out, and that the rest stays.
fn refusable_note(verdict: &Verdict, gone: &[String]) -> Option<String> {
    let Verdict::DropRefusable(why) = verdict else {
        return None;
    };
    Some(if gone.is_empty() {
        format!("{why}; no label of ours that a kubelet may refuse, all kept")
    } else {
        format!(
            "labels a kubelet of another version may refuse left out: {}: {why}; the taints \
             and the other labels (the pool label among them) kept",
            gone.join(", ")
        )
    })
}

/// The E2BIG fallback's line for [`fail_closed::our_taints_alone`].
const FENCED_ALONE: &str = "our taints and the fence alone (kubelet-labeler.io/fenced=\
kubelet-taints-too-long:NoSchedule unless ours hold a fence), without our labels and kubelet's \
own taints";

/// The crash handler's journal line for the fenced original command.
const FENCED_HEAD: &str =
    "kubelet-labeler: starting kubelet fenced, without our labels/taints (not merged yet)";

/// The crash handler's journal line for the static part, up to the reason,
/// and after it (when fenced, the fence and how to lift it).
fn static_line(static_plan: &Plan) -> (String, String) {
    if static_plan.argv == static_plan.original_argv {
        return (crash::UNCHANGED.into(), String::new());
    }
    let line = plan::summary(static_plan);
    let flags = line
        .strip_prefix("kubelet-labeler: starting kubelet with ")
        .and_then(|l| l.split(" (").next())
        .unwrap_or("");
    let flags = derived::cut_middle(flags, derived::MAX_LINE / 2);
    let head = format!(
        "kubelet-labeler: starting kubelet with our static labels/taints only ({flags}), \
         without the rule-derived ones"
    );
    (head, fence_tail(static_plan))
}

/// After the crash line's reason, when `plan` is fenced: the fence and how
/// to lift it.
fn fence_tail(plan: &Plan) -> String {
    plan.taints
        .iter()
        .find(|t| fence::is_fence(t))
        .map(|t| {
            // A pool change: the check's note says which pools, and how.
            let lift = (t.value == fence::Reason::PoolChanged.value())
                .then(|| {
                    plan.notes
                        .iter()
                        .find(|n| n.ends_with(super::pool_change::POOL_LIFT))
                })
                .flatten()
                .map_or(fence::LIFT, String::as_str);
            format!("; registering fenced with {t}, which no workload tolerates; {lift}")
        })
        .unwrap_or_default()
}

/// Builds that unwind on panic (tests, `explain` in the CLI) get the same
/// fallback as the shipped wrapper's crash handler (`crash`), with the
/// panic's message in the journal line.
pub fn install_panic_fallback() {
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str))
            .unwrap_or("panic");
        if crash::armed() {
            eprintln!(
                "{}: internal error ({what}; a bug, please report){}",
                crash::fallback_line(),
                crash::fallback_tail()
            );
            crash::exec_fallback();
        } else {
            eprintln!(
                "kubelet-labeler: internal error before the kubelet command was known ({what}; a bug, please report)"
            );
        }
    }));
}

/// The wrapper's main. Returns only when it could not exec.
pub fn run(args: &[OsString]) -> i32 {
    crash::install();
    install_panic_fallback();
    let opts = match parse_args(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("kubelet-labeler: {e:#}");
            return 2;
        }
    };
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let invocation = env
        .iter()
        .find(|(k, _)| k == "INVOCATION_ID")
        .map(|(_, v)| v.to_string_lossy().into_owned());
    let guard = Guard::new(&opts.state_dir, &opts.unit);

    if opts.stop_post {
        let result = std::env::var("SERVICE_RESULT").unwrap_or_default();
        if let (Some(id), Some(now)) = (invocation, uptime_ms()) {
            let _ = guard.record_stop(&id, now, &result);
        }
        return 0;
    }

    // Before any work that could crash: judge the previous start and record
    // this one as an attempt, so a crash that is no panic (stack overflow,
    // abort, OOM kill) costs the next start our additions, not kubelet.
    let mut guard_off = None;
    let verdict = match invocation.as_deref() {
        Some(id) => {
            let verdict = guard.verdict(id);
            let full = verdict == Verdict::Full;
            if let Err(e) = guard.record_attempt(id, uptime_ms().unwrap_or(0), full) {
                // A full or read-only /run: kubelet starts all the same,
                // without the guard's protection, and the journal line says so.
                guard_off = Some(format!(
                    "crash-loop guard off for this start: writing {}: {e}",
                    guard.path().display()
                ));
            }
            verdict
        }
        None => Verdict::Full,
    };
    let prepared = std::panic::catch_unwind(|| prepare_gated(&opts, &env, &verdict, true))
        .unwrap_or_else(|_| {
            Err(crate::node_error!(
                "internal error while reading the unit files (a bug; please report)"
            ))
        });
    let (mut plan, gate) = match prepared {
        Ok((mut p, gate, fault)) => {
            p.warnings.extend(guard_off);
            if verdict == Verdict::Full && fault.as_deref() == Some("refused-label") {
                refused_label_fault(&mut p);
            }
            (p, gate)
        }
        Err(e) => {
            // Without the original command there is nothing to start.
            // Unit files' names and words may hold control characters or
            // line ends: one journal line, escaped as the others.
            let why = format!("{e:#}");
            let mut line = String::from("kubelet-labeler: cannot find the command to run: ");
            plan::push_cut(
                &mut line,
                &super::derived::escape_controls(&why),
                plan::LINE_MAX,
            );
            eprintln!("{line}");
            return EXIT_EXEC;
        }
    };
    // Each word fits MAX_ARG_STRLEN; the total must fit the stack-derived
    // limit too, or exec fails with E2BIG after the journal line is out:
    // known before it, the one line says what goes in: every taint without
    // our labels (the bulk of the bytes) where that fits, else ours and the
    // fence without kubelet's own, else those with the environment's
    // largest strings left out, else (kubelet's own argv past the limit)
    // nothing.
    // Our variables are the wrapper's alone (kubelet never reads them):
    // kubelet gets the environment without them, so their room pays for
    // the flags made of them (review 21 r21a F1: a static label or taint
    // takes fewer bytes as a flag than as our variable).
    let env = without_our_vars(env);
    if plan.left_out.is_none() && plan.argv != plan.original_argv {
        let path = under_root(&opts.root, &plan.executable);
        let over = |argv: &[OsString]| over_exec_limit(&path, argv, &env);
        // Past the limit even with our taints and the fence alone: what
        // an `EnvironmentFile=` padded to it chose. Its largest strings
        // go, never our taints.
        let alone = fail_closed::fit_exec_limit(&mut plan, &over, &|p| gate.check(p));
        if let Some((mut p, room)) = alone.and_then(|p| {
            let room = room_in_env(&path, &p.argv, &env, launcher_room(&path))?;
            Some((p, room))
        }) {
            p.notes.push(room);
            plan = p;
        }
    }
    // One line, in one write; stderr is the journal under systemd.
    let mut line = derived::journal_line(&plan::summary(&plan)).into_owned();
    line.push('\n');
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let (Some(id), Some(now)) = (invocation.as_deref(), uptime_ms()) {
        let with = plan.left_out.is_none() && plan.argv != plan.original_argv;
        let refusable = with && plan.added_labels.iter().any(|(k, _)| may_be_refused(k));
        let _ = guard.record_start(id, now, with, refusable, can_register(&opts.root, &plan));
    }
    let mut err = exec(&opts.root, &plan.executable, &plan.argv);
    // E2BIG that `over_exec_limit` did not foresee (a launcher past its
    // room): the taints without our labels, ours and the fence alone, more
    // room in the environment, then kubelet as it would have been,
    // recorded so, at the cost of a line each.
    // Each passes the final check (the installed pool's) after it is made.
    // (Made only then: a start whose exec fails otherwise pays nothing.)
    let smaller = match err.raw_os_error() == Some(E2BIG) {
        true => fail_closed::smaller(&plan, "E2BIG", &|p| gate.check(p)),
        false => [None, None],
    };
    let whats = ["every taint, without our labels", FENCED_ALONE];
    for (p, what) in smaller.into_iter().zip(whats) {
        let Some(p) = p.filter(|_| err.raw_os_error() == Some(E2BIG)) else {
            continue;
        };
        let pool = p
            .notes
            .iter()
            .find(|n| n.ends_with(super::pool_change::POOL_LIFT));
        let pool = pool.map(|n| format!("; fenced: {n}")).unwrap_or_default();
        let line = format!(
            "kubelet-labeler: starting kubelet with {what}{pool}: executing it failed: {err}"
        );
        eprintln!("{}", derived::journal_line(&line));
        err = exec(&opts.root, &plan.executable, &p.argv);
    }
    // Still E2BIG: what the count could not foresee is bytes the kernel
    // copies besides; more of the environment left out, twice the room
    // each time, before kubelet's own command (review 23 r23a F1).
    let path = under_root(&opts.root, &plan.executable);
    let mut reserve = launcher_room(&path);
    let ours = plan.left_out.is_none() && plan.argv != plan.original_argv;
    for _ in 0..12 {
        if err.raw_os_error() != Some(E2BIG) || !ours {
            break;
        }
        reserve = 2 * reserve + 4096;
        let Some(room) = room_in_env(&path, &plan.argv, &env, reserve) else {
            break;
        };
        eprintln!(
            "kubelet-labeler: {}: executing it failed: {err}",
            derived::journal_line(&room)
        );
        err = exec(&opts.root, &plan.executable, &plan.argv);
    }
    if err.raw_os_error() == Some(E2BIG) && plan.argv != plan.original_argv {
        eprintln!(
            "kubelet-labeler: starting kubelet without our labels/taints: executing it with them failed: {err}"
        );
        if let (Some(id), Some(now)) = (invocation.as_deref(), uptime_ms()) {
            let _ = guard.record_start(id, now, false, false, can_register(&opts.root, &plan));
        }
        err = exec(&opts.root, &plan.executable, &plan.original_argv);
    }
    let exe = plan.executable.display().to_string();
    eprintln!(
        "kubelet-labeler: executing {}: {err}",
        super::derived::escape_controls(&exe)
    );
    EXIT_EXEC
}

/// The least of exec's limit for its strings, whatever the stack limit.
const ARG_MAX: u64 = 131_072;

/// What the kernel copies after the strings counted when `path` is a `#!`
/// script (review 23 r23a F1: OpenShift's kubenswrapper is `#!/bin/sh`):
/// at each of its at most 5 levels the interpreter and its argument (a
/// line of at most 256 bytes) and the script's name in argv[0]'s place.
/// Counted as room kept free, so what fits by the count fits the exec.
fn launcher_room(path: &Path) -> usize {
    5 * 2 * 256 + path.as_os_str().len()
}

/// Why exec of `argv` with `env` would fail with E2BIG: the strings and
/// their pointers over the kernel's limit for them (fs/exec.c: a quarter of
/// the stack limit, at most 6 MiB, at least ARG_MAX). The usual start is far
/// below ARG_MAX and costs one pass over the lengths. Past ARG_MAX but under
/// the limit as counted here, the kernel is asked ([`exec::probe`]): it
/// counts what this count cannot see (environment strings without `=`) and
/// may count otherwise.
fn over_exec_limit(path: &Path, argv: &[OsString], env: &[(OsString, OsString)]) -> Option<String> {
    let words = argv.len().max(1) + env.len();
    let strings: usize = argv.iter().map(|a| a.len() + 1).sum::<usize>()
        + env
            .iter()
            .map(|(k, v)| k.len() + v.len() + 2)
            .sum::<usize>()
        + path.as_os_str().len()
        + 1;
    let total = (strings + words * std::mem::size_of::<usize>() + launcher_room(path)) as u64;
    if total <= ARG_MAX {
        return None;
    }
    let stack = stack_limit();
    let limit = exec_limit(stack);
    let stack = match stack {
        Some(u64::MAX) => "infinity".to_string(),
        Some(s) => format!("{} KiB", s >> 10),
        None => "unknown".to_string(),
    };
    if let Some(limit) = limit.filter(|&l| total > l) {
        return Some(format!(
            "its argv and environment with them are {total} bytes, over the {limit} bytes exec \
             allows with a stack limit of {stack} (raise LimitSTACK= or add fewer)"
        ));
    }
    let refused =
        exec::prepare(path, argv).is_some_and(|p| exec::probe(&p).raw_os_error() == Some(E2BIG));
    refused.then(|| {
        format!(
            "exec refuses its argv and environment with them (E2BIG; {total} bytes as counted \
             here, with a stack limit of {stack}): raise LimitSTACK= or add fewer"
        )
    })
}

/// `env` without our variables, which leave the process's environment too
/// (so kubelet's).
fn without_our_vars(env: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
    let (ours, kept): (Vec<_>, Vec<_>) = env
        .into_iter()
        .partition(|(k, _)| super::own_env::OUR_VARS.iter().any(|v| k == v));
    for (k, _) in ours {
        // SAFETY: the wrapper runs one thread; nothing reads the
        // environment while it changes.
        unsafe { std::env::remove_var(k) };
    }
    kept
}

/// Room for `argv` in exec's limit made by leaving the largest strings of
/// `env` out of the process's environment: the note saying which, or None,
/// nothing left out (`argv` past the limit without any environment, or
/// the limit unknown).
fn room_in_env(
    path: &Path,
    argv: &[OsString],
    env: &[(OsString, OsString)],
    reserve: usize,
) -> Option<String> {
    let size = |(k, v): &(OsString, OsString)| k.len() + v.len() + 2 + size_of::<usize>();
    let limit = exec_limit(stack_limit())? as usize;
    let argv_bytes: usize = argv
        .iter()
        .map(|a| a.len() + 1 + size_of::<usize>())
        .sum::<usize>()
        + path.as_os_str().len()
        + 1
        + reserve;
    // Whether it fits with the strings under `t` bytes alone: the largest
    // such `t` is found in as many passes as a size has bits (no sort).
    let fits = |t: usize| {
        let kept: usize = env.iter().map(size).filter(|&s| s < t).sum();
        argv_bytes + kept <= limit
    };
    let (mut lo, mut hi) = (1, env.iter().map(size).max()? + 1);
    if !fits(lo) {
        return None;
    }
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        match fits(mid) {
            true => lo = mid,
            false => hi = mid,
        }
    }
    let mut names = String::new();
    for kv in env.iter().filter(|kv| size(kv) >= lo) {
        // SAFETY: as in `without_our_vars`.
        unsafe { std::env::remove_var(&kv.0) };
        names.push_str(if names.is_empty() { "" } else { ", " });
        names.push_str(&kv.0.to_string_lossy());
    }
    Some(format!(
        "kubelet's largest environment variables left out, so that exec takes our taints and the \
         fence: {names}"
    ))
}

/// Exec's limit for its strings with a stack limit of `stack`: a quarter
/// of it, at most 6 MiB, at least ARG_MAX (fs/exec.c).
fn exec_limit(stack: Option<u64>) -> Option<u64> {
    stack.map(|s| (s / 4).clamp(ARG_MAX, 6 << 20))
}

/// The soft RLIMIT_STACK (u64::MAX: unlimited); None when unknown.
fn stack_limit() -> Option<u64> {
    #[repr(C)]
    struct Rlimit {
        cur: u64,
        max: u64,
    }
    unsafe extern "C" {
        fn getrlimit(resource: i32, rlim: *mut Rlimit) -> i32;
    }
    /// RLIMIT_STACK on every Linux architecture but alpha/sparc/mips.
    const RLIMIT_STACK: i32 = 3;
    let mut r = Rlimit { cur: 0, max: 0 };
    // SAFETY: getrlimit writes one struct rlimit (two 64-bit words on
    // 64-bit Linux) into `r`.
    let rc = unsafe { getrlimit(RLIMIT_STACK, &mut r) };
    (rc == 0).then_some(r.cur)
}

/// Whether kubelet, started with this plan, could have refused our flags:
/// kubeadm's kubelet before `join` has no config file or kubeconfig and
/// fails (or runs unregistered) whatever its labels.
fn can_register(root: &Path, plan: &Plan) -> bool {
    let argv: Vec<String> = plan
        .original_argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // At `/` a relative path is the process's: systemd started it in the
    // unit's WorkingDirectory=, which kubelet keeps.
    let exists = |p: &Path| match p.is_relative() && root == Path::new("/") {
        true => p.exists(),
        false => under_root(root, p).exists(),
    };
    crate::node::kubelet::flags::can_register(&argv, &exists)
}

/// Test hook for the fault-injection tests: `KUBELET_LABELER_FAULT=abort`
/// or `=stack-overflow` kills the wrapper after it recorded its attempt,
/// on a start that tries our additions, as a crash that is no panic would.
/// Harmless in production: only an admin who puts it into kubelet.service's
/// `Environment=` (or the service manager's environment) gets it, never an
/// `EnvironmentFile=` (`own_env`: that start is fenced, the hook not
/// honoured), and what it does is what the guard is there for (kubelet
/// still starts, on the next start).
fn fault(env: &[(OsString, OsString)]) -> Option<&str> {
    env.iter()
        .find(|(k, _)| k == "KUBELET_LABELER_FAULT")
        .and_then(|(_, v)| v.to_str())
}

/// `=refused-label`: a label kubelet refuses rides along with ours, as if
/// our validation had missed it (what the crash-loop guard is for), so the
/// guard can be watched against a real kubelet.
fn refused_label_fault(plan: &mut Plan) {
    if plan.left_out.is_none() && !plan.added_labels.is_empty() {
        let (key, value) = ("kubernetes.io/refused-by-kubelet", "");
        plan.argv
            .push(format!("--node-labels={key}={value}").into());
        plan.added_labels.push((key.into(), value.into()));
    }
}

/// `=panic` panics later, in the work for our additions (`prepare`).
fn fault_hook(env: &[(OsString, OsString)]) {
    if let Some(f) = fault(env) {
        crash_now(f);
    }
}

fn crash_now(how: &str) {
    match how {
        "abort" => std::process::abort(),
        // What an OOM kill or systemd's start timeout does: no handler runs.
        "kill" => {
            unsafe extern "C" {
                fn raise(sig: i32) -> i32;
            }
            // SAFETY: raise has no preconditions; SIGKILL ends the process.
            unsafe { raise(9) };
        }
        // Unbounded recursion: std's guard page turns it into SIGSEGV.
        "stack-overflow" => {
            #[allow(unconditional_recursion)]
            fn deep(n: u64) -> u64 {
                let pad = [n; 512];
                std::hint::black_box(&pad);
                deep(n + 1) + pad[0]
            }
            std::hint::black_box(deep(0));
        }
        _ => {}
    }
}

/// execve in place: same PID, same environment, same fds, and the signal
/// state systemd gave us.
fn exec(root: &Path, executable: &Path, argv: &[OsString]) -> std::io::Error {
    let path = under_root(root, executable);
    let argv0 = [path.clone().into_os_string()];
    let argv = if argv.is_empty() { &argv0[..] } else { argv };
    match exec::prepare(&path, argv) {
        Some(p) => exec::exec(&p),
        None => std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a NUL byte in the command",
        ),
    }
}

#[cfg(test)]
#[path = "boot_tests.rs"]
mod tests;
