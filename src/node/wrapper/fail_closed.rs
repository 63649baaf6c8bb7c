//! Fail closed, the plans: a start fenced for a failure of ours, and a
//! merge that keeps every taint when our labels cannot go in (a label
//! kubelet refuses, a `--node-labels` word over the kernel's limit). The
//! fence itself (its reasons and taint) is `super::fence`.

use std::ffi::OsString;

use super::fence::{Failure, Reason, fenced, note};
use super::plan::{self, OriginalCommand, Plan};
use crate::node::contract::{ROLE_RULES_VAR, ROLE_TAINTS_VAR, RULES_VAR, TAINTS_VAR};
use crate::node::kubelet::{Additions, NodeFs, Profile};

/// [`plan::plan_closed`] of `additions` (see [`plan_keeping_taints`]),
/// fenced for `failure` when there is one; a note says so, and how to lift
/// it.
pub fn plan_fenced(
    original: OriginalCommand,
    additions: Option<Additions>,
    keep_labels: &[(String, String)],
    failure: Option<&Failure>,
    profile: Profile,
    fs: &dyn NodeFs,
) -> Plan {
    let Some(f) = failure else {
        return plan_keeping_taints(original, additions, keep_labels, profile, fs);
    };
    let additions = Some(fenced(additions, f.reason));
    let mut p = plan_keeping_taints(original, additions, keep_labels, profile, fs);
    if p.left_out.is_none() {
        p.notes.push(note(f.reason));
    }
    p
}

/// The plan where the static labels and taints do not parse (a hand edit:
/// render validates them): what they meant is unknown, so `original` with
/// the fence alone. `explain` and `plan` show what boot registers.
pub fn statics_unreadable(
    original: OriginalCommand,
    error: &crate::node::error::Error,
    profile: Profile,
    fs: &dyn NodeFs,
) -> Plan {
    let failure = Failure::new(Reason::TaintsUnreadable, format!("{error:#}"));
    let mut p = plan_fenced(original, None, &[], Some(&failure), profile, fs);
    p.notes
        .insert(0, format!("our labels and taints left out: {error:#}"));
    p
}

/// Merge `additions`, failing closed: when the merge fails with our
/// labels in it (a label kubelet refuses, a `--node-labels` word over the
/// kernel's limit), the taints go in with `keep_labels` (the static ones),
/// else alone, and a note says which labels were left out and why.
pub fn plan_keeping_taints(
    original: OriginalCommand,
    additions: Option<Additions>,
    keep_labels: &[(String, String)],
    profile: Profile,
    fs: &dyn NodeFs,
) -> Plan {
    // Only the taints are kept for a second try (labels may be hundreds).
    let taints = additions
        .as_ref()
        .filter(|a| !a.labels.is_empty())
        .map(|a| a.taints.clone())
        .unwrap_or_default();
    let p = plan::plan_closed(original, Ok(additions), profile, fs);
    let Some(why) = &p.left_out else {
        return p;
    };
    if taints.is_empty() {
        return p;
    }
    let mut tries: Vec<(&[(String, String)], &str)> = Vec::new();
    if !keep_labels.is_empty() {
        tries.push((keep_labels, "rule-derived labels left out"));
    }
    tries.push((&[], "our labels left out"));
    for (labels, which) in tries {
        let original = OriginalCommand {
            executable: p.executable.clone(),
            argv: p.original_argv.clone(),
        };
        let fewer = Additions {
            labels: labels.to_vec(),
            taints: taints.clone(),
        };
        let mut q = plan::plan_closed(original, Ok(Some(fewer)), profile, fs);
        if q.left_out.is_none() {
            q.notes.push(format!("{which}: {why}; every taint kept"));
            return q;
        }
    }
    p
}

/// `plan`'s argv without the `--node-labels=` word we added (the last one
/// equal to it): what is left to exec when ours do not fit exec's limit.
pub fn without_our_labels(plan: &Plan) -> Option<Vec<OsString>> {
    if plan.added_labels.is_empty() || plan.taints.is_empty() {
        return None;
    }
    let words: Vec<String> = plan
        .added_labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let ours = OsString::from(format!("--node-labels={}", words.join(",")));
    let at = plan.argv.iter().rposition(|w| *w == ours)?;
    let mut argv = plan.argv.clone();
    argv.remove(at);
    Some(argv)
}

/// The crash fallback before the static part is merged, where `env` has
/// static taints or node rules (either layer): what they give is unknown
/// then, so `original` with the fence alone, merged without reading a
/// node file (kubelet's own taints, in its config, are unknown too: the
/// fence replaces them, as when its config is unreadable). None: nothing
/// to fence, or flags cannot reach kubelet (it starts unchanged).
pub fn fenced_before_merge(
    original: &OriginalCommand,
    env: &[(OsString, OsString)],
    profile: Profile,
) -> Option<Plan> {
    let vars = [TAINTS_VAR, ROLE_TAINTS_VAR, RULES_VAR, ROLE_RULES_VAR];
    if !env
        .iter()
        .any(|(k, v)| !v.is_empty() && vars.iter().any(|n| k == n))
    {
        return None;
    }
    let failure = Failure::new(Reason::WrapperDied, "");
    let p = plan_fenced(
        original.clone(),
        None,
        &[],
        Some(&failure),
        profile,
        &Unread,
    );
    p.left_out.is_none().then_some(p)
}

/// No node file can be read: [`fenced_before_merge`] reads none.
struct Unread;

impl NodeFs for Unread {
    fn read(&self, _: &std::path::Path) -> std::io::Result<Vec<u8>> {
        Err(std::io::ErrorKind::Other.into())
    }

    fn list(&self, _: &std::path::Path, _: &mut u64) -> std::io::Result<Vec<(OsString, bool)>> {
        Err(std::io::ErrorKind::Other.into())
    }

    fn is_dir(&self, _: &std::path::Path) -> std::io::Result<bool> {
        Err(std::io::ErrorKind::Other.into())
    }
}
