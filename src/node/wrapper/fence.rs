//! Fail closed. Taints are a security control: when something of ours
//! fails and the taints the node rules would have given cannot be known
//! (the previous start died before exec'ing kubelet, the rules failed or
//! ran out of budget, an input they read was past its bounds, kubelet's
//! config could not be read), the node registers *fenced*: with every
//! static taint and a taint of ours, `contract::FENCE_TAINT_KEY` with the
//! reason as its value, which no workload tolerates. A node cannot remove
//! its own taints (NodeRestriction): an admin lifts the fence once the
//! cause is fixed. Rules that provably give no taint (no rule has one:
//! taints are never templated) need no fence; the journal line says so.
//!
//! The last derived taints are not kept across starts: kubelet applies
//! `--register-with-taints` only when it creates its Node, so the start
//! that matters is the first of a node's life, which has no earlier
//! derivation to keep (and `/run` does not outlive a reboot).

use std::ffi::OsString;

use super::derived::Sources;
use super::plan::{self, OriginalCommand, Plan};
use crate::node::contract::{
    FENCE_FEATURES_UNREADABLE, FENCE_KUBELET_CONFIG_UNREADABLE, FENCE_RULES_FAILED,
    FENCE_TAINT_KEY, FENCE_TAINTS_UNREADABLE, FENCE_WRAPPER_DIED,
};
use crate::node::kubelet::{Additions, NodeFs, Profile, Taint, TaintEffect};

/// Why a node registers fenced: the fence taint's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The previous start died before exec'ing kubelet (crash-loop guard).
    WrapperDied,
    /// The rules failed as a whole (budget, a crash, undecodable rules).
    RulesFailed,
    /// An input the rules read could not be read within its bounds.
    FeaturesUnreadable,
    /// kubelet's `--config` (or `--config-dir`, or its own
    /// `--register-with-taints`) could not be read to merge ours with.
    KubeletConfigUnreadable,
    /// The env drop-in's static taints could not be parsed.
    TaintsUnreadable,
}

impl Reason {
    pub fn value(self) -> &'static str {
        match self {
            Reason::WrapperDied => FENCE_WRAPPER_DIED,
            Reason::RulesFailed => FENCE_RULES_FAILED,
            Reason::FeaturesUnreadable => FENCE_FEATURES_UNREADABLE,
            Reason::KubeletConfigUnreadable => FENCE_KUBELET_CONFIG_UNREADABLE,
            Reason::TaintsUnreadable => FENCE_TAINTS_UNREADABLE,
        }
    }

    /// `kubelet-labeler.io/fenced=<reason>:NoSchedule`.
    pub fn taint(self) -> Taint {
        Taint {
            key: FENCE_TAINT_KEY.into(),
            value: self.value().into(),
            effect: TaintEffect::NoSchedule,
        }
    }
}

/// Why the taints the rules would have given are unknown at this start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: Reason,
    pub why: String,
}

impl Failure {
    pub fn new(reason: Reason, why: impl Into<String>) -> Failure {
        Failure {
            reason,
            why: why.into(),
        }
    }
}

/// An evaluation error, as the rules give it: [`Reason::RulesFailed`]. An
/// input the node could not read is [`Failure::new`] with
/// [`Reason::FeaturesUnreadable`].
impl From<String> for Failure {
    fn from(why: String) -> Failure {
        Failure::new(Reason::RulesFailed, why)
    }
}

/// How to lift the fence, in the journal line and in `explain`.
pub const LIFT: &str = "lift it once the cause is fixed with `kubectl taint node <node> \
kubelet-labeler.io/fenced-` (a node cannot remove its own taints)";

impl Reason {
    /// What is unknown, so fenced (the detail is in the note before).
    fn unknown(self) -> &'static str {
        match self {
            Reason::WrapperDied | Reason::RulesFailed | Reason::FeaturesUnreadable => {
                "the node rules' taints"
            }
            Reason::KubeletConfigUnreadable => "kubelet's own taints",
            Reason::TaintsUnreadable => "the static taints",
        }
    }
}

/// The note for a start that registers fenced.
pub fn note(reason: Reason) -> String {
    format!(
        "registering fenced with {}, which no workload tolerates ({} are unknown); {LIFT}",
        reason.taint(),
        reason.unknown()
    )
}

/// The note for a start whose rule-derived part is left out while no
/// rule can give a taint.
pub fn no_fence_note(why: &str) -> String {
    format!(
        "rule-derived labels left out: {why}; no fence: no node rule gives a taint (the static \
         taints kept)"
    )
}

/// Whether these sources could give a taint on some node: a rule with a
/// taint (NFD never templates taints; its built-in label set gives none),
/// or rules that could not be decoded (then nobody can tell).
pub fn sources_may_taint(sources: &Sources) -> bool {
    match &sources.rules {
        None => false,
        Some(Ok(rules)) => rules.iter().any(|r| !r.taints.is_empty()),
        Some(Err(_)) => true,
    }
}

/// [`sources_may_taint`] for either layer of `env` (the role's and the
/// pool's rules).
pub fn rules_may_taint(env: &[(OsString, OsString)]) -> bool {
    let may = |layer: &[(OsString, OsString)]| {
        sources_may_taint(&super::derived::sources_from_env(layer))
    };
    match plan::split_layers(env) {
        None => may(env),
        Some((role, pool)) => may(&role) || may(&pool),
    }
}

/// `additions` with the fence taint of `reason` (one fence: the first
/// reason stays).
pub fn fenced(additions: Option<Additions>, reason: Reason) -> Additions {
    let mut a = additions.unwrap_or_default();
    if !a.taints.iter().any(is_fence) {
        a.taints.push(reason.taint());
    }
    a
}

/// Whether `t` is our fence (any reason).
pub fn is_fence(t: &Taint) -> bool {
    t.key == FENCE_TAINT_KEY && t.effect == TaintEffect::NoSchedule
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::contract::{FENCE_TAINT_EFFECT, RULES_VAR};
    use crate::node::kubelet::parse_taints;

    #[test]
    fn the_fence_is_a_taint_kubelet_takes() {
        for r in [
            Reason::WrapperDied,
            Reason::RulesFailed,
            Reason::FeaturesUnreadable,
            Reason::KubeletConfigUnreadable,
            Reason::TaintsUnreadable,
        ] {
            let t = r.taint();
            assert_eq!(
                parse_taints(&t.to_string()).unwrap(),
                std::slice::from_ref(&t),
                "{t}: through --register-with-taints unchanged"
            );
            assert!(is_fence(&t));
            assert_eq!(t.effect.as_str(), FENCE_TAINT_EFFECT);
            assert!(t.to_string().starts_with("kubelet-labeler.io/fenced="));
        }
    }

    fn env(rules: &str) -> Vec<(OsString, OsString)> {
        vec![(RULES_VAR.into(), rules.into())]
    }

    /// Only a rule with a taint (or rules nobody can read) may taint.
    #[test]
    fn which_rules_may_taint() {
        use crate::node::rules::{Rule, compact::encode};
        let labels_only = Rule {
            name: "l".into(),
            labels: vec![("example.com/a".into(), "1".into())],
            labels_template: Some("{{ range .pci.device }}x=y{{ end }}".into()),
            ..Default::default()
        };
        let tainting = Rule {
            name: "t".into(),
            taints: parse_taints("nvidia.com/gpu=true:NoSchedule").unwrap(),
            ..Default::default()
        };
        assert!(!rules_may_taint(&[]));
        assert!(!rules_may_taint(&env(&encode(std::slice::from_ref(
            &labels_only
        )))));
        assert!(rules_may_taint(&env(&encode(&[labels_only, tainting]))));
        assert!(rules_may_taint(&env("KLR0,garbage")));
        // The role's layer counts too.
        let role = vec![(
            crate::node::contract::ROLE_RULES_VAR.into(),
            OsString::from("KLR0,garbage"),
        )];
        assert!(rules_may_taint(&role));
    }

    #[test]
    fn one_fence_the_first_reason() {
        let a = fenced(None, Reason::WrapperDied);
        let a = fenced(Some(a), Reason::RulesFailed);
        assert_eq!(a.taints, [Reason::WrapperDied.taint()]);
    }
}
