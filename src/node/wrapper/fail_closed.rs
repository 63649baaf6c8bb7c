//! Fail closed, the plans: a start fenced for a failure of ours, and a
//! merge that keeps every taint when our labels cannot go in (a label
//! kubelet refuses, a `--node-labels` word over the kernel's limit). The
//! fence itself (its reasons and taint) is `super::fence`.

use std::ffi::OsString;

use super::fence::{Failure, Reason, fenced, is_fence, note, push_replaced};
use super::plan::{self, OriginalCommand, Plan};
use crate::node::contract::{ROLE_RULES_VAR, ROLE_TAINTS_VAR, RULES_VAR, TAINTS_VAR};
use crate::node::kubelet::{Additions, NodeFs, Profile, Taint};

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

/// `plan` planned again, fenced for `failure`, with the labels and taints
/// it added: its notes first, then the fence's. A plan fenced already
/// keeps its fence; one whose fenced merge leaves something out (merged
/// once already, it merges again: never seen) stays as it is.
pub fn refenced(mut plan: Plan, failure: &Failure, profile: Profile, fs: &dyn NodeFs) -> Plan {
    if plan.taints.iter().any(is_fence) {
        return plan;
    }
    let original = OriginalCommand {
        executable: plan.executable.clone(),
        argv: plan.original_argv.clone(),
    };
    let additions = Additions {
        labels: plan.added_labels.clone(),
        taints: plan.added_taints.clone(),
    };
    let mut fenced = plan_fenced(original, Some(additions), &[], Some(failure), profile, fs);
    if fenced.left_out.is_some() {
        return plan;
    }
    plan.notes.append(&mut fenced.notes);
    fenced.notes = plan.notes;
    fenced.rules = plan.rules;
    fenced
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
    if plan.taints.is_empty() {
        return None;
    }
    without_labels_word(plan)
}

/// [`without_our_labels`], whatever the taints.
fn without_labels_word(plan: &Plan) -> Option<Vec<OsString>> {
    if plan.added_labels.is_empty() {
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

/// `plan`'s argv without our labels and without kubelet's own taints: our
/// taints and the fence (`kubelet-taints-too-long`, unless ours hold a
/// fence) replace the `--register-with-taints=` word we merged; and those
/// taints. None where `plan` carries no taint of kubelet's own.
pub fn our_taints_alone(plan: &Plan) -> Option<(Vec<OsString>, Vec<Taint>)> {
    if plan.taints.len() <= plan.added_taints.len() {
        return None;
    }
    fenced_taints(plan)
}

/// `plan`'s argv without our labels, its `--register-with-taints=` word
/// holding our taints and the fence alone; and those taints. None where
/// we add no taint.
fn fenced_taints(plan: &Plan) -> Option<(Vec<OsString>, Vec<Taint>)> {
    let ours = &plan.added_taints;
    if ours.is_empty() {
        return None;
    }
    let mut taints = ours.clone();
    if !taints.iter().any(is_fence) {
        taints.push(Reason::KubeletTaintsTooLong.taint());
    }
    let word = |taints: &[Taint]| {
        let words: Vec<String> = taints.iter().map(|t| t.to_string()).collect();
        OsString::from(format!("--register-with-taints={}", words.join(",")))
    };
    let mut argv = without_our_labels(plan).unwrap_or_else(|| plan.argv.clone());
    let merged = word(&plan.taints);
    let at = argv.iter().rposition(|w| *w == merged)?;
    argv[at] = word(&taints);
    Some((argv, taints))
}

/// The smaller plans to exec when `plan` is over exec's limit (`why`):
/// without our labels (every taint kept), then our taints and the fence
/// alone (kubelet's own replaced, as when they do not fit one word). Each
/// passes `gate` (the final check, the installed pool's among them) after
/// it is made: our labels may be what chose the pool it was installed
/// into.
pub fn smaller(plan: &Plan, why: &str, gate: &dyn Fn(Plan) -> Plan) -> [Option<Plan>; 2] {
    let labels_out = without_our_labels(plan).map(|argv| {
        let mut p = plan.clone();
        p.argv = argv;
        p.added_labels.clear();
        p.notes
            .push(format!("our labels left out: {why}; every taint kept"));
        gate(p)
    });
    let taints_alone = our_taints_alone(plan).map(|found| fenced_alone(plan, found, why, gate));
    [labels_out, taints_alone]
}

/// `plan` with `argv` and `taints` (ours and the fence alone), through
/// `gate`.
fn fenced_alone(
    plan: &Plan,
    (argv, taints): (Vec<OsString>, Vec<Taint>),
    why: &str,
    gate: &dyn Fn(Plan) -> Plan,
) -> Plan {
    let mut p = plan.clone();
    p.argv = argv;
    p.added_labels.clear();
    p.taints = taints.clone();
    p.added_taints = taints;
    let why = format!("{why}; our labels left out too");
    push_replaced(&mut p.notes, Reason::KubeletTaintsTooLong, &why);
    gate(p)
}

/// `plan` made to fit exec's limit (`over`: why an argv is past it, None
/// when it is not), failing closed: the first of [`smaller`] (each through
/// `gate`) that fits, else, past the limit even so, kubelet's original
/// command, `left_out` saying so; returned then: our taints and the fence
/// alone, for the caller to make room for in the environment (review 21
/// r21a F1: whoever writes an `EnvironmentFile=` of kubelet's chooses how
/// much room is left).
pub fn fit_exec_limit(
    plan: &mut Plan,
    over: &dyn Fn(&[OsString]) -> Option<String>,
    gate: &dyn Fn(Plan) -> Plan,
) -> Option<Plan> {
    let why = over(&plan.argv)?;
    if let Some(p) = smaller(plan, &why, gate)
        .into_iter()
        .flatten()
        .find(|p| over(&p.argv).is_none())
    {
        *plan = p;
        return None;
    }
    // Without kubelet's own taints to replace, ours and the fence alone;
    // without taints of ours, our labels left out where the gate fences
    // that (review 22 r22a F1: a fleet node whose labels chose its pool).
    let alone = fenced_taints(plan)
        .map(|found| fenced_alone(plan, found, &why, gate))
        .or_else(|| {
            let mut p = plan.clone();
            p.argv = without_labels_word(plan)?;
            p.added_labels.clear();
            Some(gate(p)).filter(|p| p.taints.iter().any(is_fence))
        });
    plan.argv = plan.original_argv.clone();
    plan.left_out = Some(match plan.added_taints.is_empty() {
        true => why,
        false => format!(
            "{why}; so is it with our taints and the fence alone (without our labels and \
             kubelet's own taints)"
        ),
    });
    alone
}

/// The crash fallback before the static part is merged, where `env` has
/// static taints or node rules (either layer), or the node was installed
/// from a fleet ISO (`fleet_installed`: without our labels it may land in
/// another pool): what they give is unknown then, so `original` with the
/// fence alone, merged without reading a node file (kubelet's own taints,
/// in its config, are unknown too: the fence replaces them, as when its
/// config is unreadable). None: nothing to fence, or flags cannot reach
/// kubelet (it starts unchanged).
pub fn fenced_before_merge(
    original: &OriginalCommand,
    env: &[(OsString, OsString)],
    fleet_installed: bool,
    profile: Profile,
) -> Option<Plan> {
    let vars = [TAINTS_VAR, ROLE_TAINTS_VAR, RULES_VAR, ROLE_RULES_VAR];
    if !fleet_installed
        && !env
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
    fn read(&self, _: &std::path::Path, _: usize) -> std::io::Result<Vec<u8>> {
        Err(std::io::ErrorKind::Other.into())
    }

    fn list(&self, _: &std::path::Path, _: &mut u64) -> std::io::Result<Vec<(OsString, bool)>> {
        Err(std::io::ErrorKind::Other.into())
    }

    fn is_dir(&self, _: &std::path::Path) -> std::io::Result<bool> {
        Err(std::io::ErrorKind::Other.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::kubelet::parse_taints;

    const OURS: &str = "example.com/dedicated=gpu:NoSchedule";
    const TOO_LONG: &str = "kubelet-labeler.io/fenced=kubelet-taints-too-long:NoSchedule";

    /// kubelet with its own taints on its command line (`own` of them, of
    /// 68 bytes each), ours merged in (and `failure`'s fence).
    fn planned(own: usize, failure: Option<&Failure>) -> Plan {
        let own: Vec<String> = (0..own)
            .map(|i| format!("{}{i:05}=:NoSchedule", "k".repeat(50)))
            .collect();
        let original = OriginalCommand {
            executable: "/usr/bin/kubelet".into(),
            argv: ["/usr/bin/kubelet", "--v=2"]
                .into_iter()
                .map(String::from)
                .chain([format!("--register-with-taints={}", own.join(","))])
                .map(OsString::from)
                .collect(),
        };
        let additions = Additions {
            labels: vec![("example.com/gpu".into(), "true".into())],
            taints: parse_taints(OURS).unwrap(),
        };
        plan_fenced(
            original,
            Some(additions),
            &[],
            failure,
            Profile::Upstream,
            &Unread,
        )
    }

    fn taints(p: &Plan) -> String {
        let t: Vec<String> = p.taints.iter().map(|t| t.to_string()).collect();
        t.join(",")
    }

    /// Review 11, F2: kubelet's own taints that with ours pass the kernel's
    /// limit on one word: ours, our labels and the fence go in, kubelet's
    /// own are left out, and the one line says why and how to lift it. It
    /// started kubelet's original command, without ours and unfenced.
    #[test]
    fn kubelets_own_taints_past_the_word_limit_leave_ours_fenced() {
        // 1927 fit kubelet's own word (131,058 bytes), not with ours.
        let p = planned(1927, None);
        assert_eq!((p.left_out.as_deref(), p.taints.len()), (None, 2));
        assert_eq!(taints(&p), format!("{OURS},{TOO_LONG}"));
        assert_eq!(p.added_labels.len(), 1);
        let line = plan::summary(&p);
        for part in [
            "kubelet's own taints left out (its --register-with-taints replaced by ours): the \
             --register-with-taints= word with kubelet's own 1927 taints is 131096 bytes",
            "registering fenced with kubelet-labeler.io/fenced=kubelet-taints-too-long:NoSchedule",
            "kubelet's own taints are too many to pass with ours",
        ] {
            assert!(line.contains(part), "{part}\n{line}");
        }
        // Under the limit: kept beside ours, no fence.
        let p = planned(1926, None);
        assert_eq!((p.taints.len(), p.added_taints.len()), (1927, 1));
    }

    /// The whole command over exec's limit: our labels go first, then
    /// kubelet's own taints (ours and the fence stay), and only past the
    /// limit even so the original command, the line saying so.
    #[test]
    fn over_the_exec_limit_our_taints_go_last() {
        let size = |argv: &[OsString]| argv.iter().map(|w| w.len() + 1).sum::<usize>();
        let fit = |p: &mut Plan, limit: usize| {
            let over = |argv: &[OsString]| (size(argv) > limit).then(|| "over".to_string());
            let _ = fit_exec_limit(p, &over, &|p| p);
        };
        let full = planned(3, None);
        let no_labels = size(&without_our_labels(&full).unwrap());
        let (alone, fenced) = our_taints_alone(&full).unwrap();
        assert_eq!(
            taints(&Plan {
                taints: fenced,
                ..full.clone()
            }),
            format!("{OURS},{TOO_LONG}")
        );
        let mut p = full.clone();
        fit(&mut p, size(&full.argv));
        assert_eq!((p.argv == full.argv, p.notes.len()), (true, 0));
        fit(&mut p, no_labels);
        assert_eq!((p.added_labels.len(), p.taints.len()), (0, 4));
        assert!(p.notes[0].starts_with("our labels left out: over"));
        let mut p = full.clone();
        fit(&mut p, size(&alone));
        assert_eq!(
            (p.argv == alone, taints(&p)),
            (true, format!("{OURS},{TOO_LONG}"))
        );
        let line = plan::summary(&p);
        assert!(line.contains("kubelet's own taints left out (its --register-with-taints replaced by ours): over; our labels left out too") && line.contains("kubelet-taints-too-long"), "{line}");
        let mut p = full.clone();
        fit(&mut p, size(&alone) - 1);
        assert_eq!(p.argv, p.original_argv);
        let line = plan::summary(&p);
        assert!(line.ends_with("without our labels/taints: over; so is it with our taints and the fence alone (without our labels and kubelet's own taints)"), "{line}");
        // Ours fenced already: that fence stays, alone.
        let failure = Failure::new(Reason::RulesFailed, "x");
        let (_, fenced) = our_taints_alone(&planned(3, Some(&failure))).unwrap();
        assert_eq!(
            fenced,
            [
                parse_taints(OURS).unwrap()[0].clone(),
                Reason::RulesFailed.taint()
            ]
        );
        // Nothing of kubelet's own to leave out.
        assert!(our_taints_alone(&planned(0, None)).is_none());
    }
}
