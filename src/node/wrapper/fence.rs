//! Fail closed. Taints are a security control: when something of ours
//! fails and the taints the node rules would have given cannot be known
//! (the previous start died before exec'ing kubelet, the rules failed or
//! ran out of budget, an input they read was past its bounds, kubelet's
//! config could not be read, or kubelet's own taints are too many to pass
//! with ours; or a node installed from a fleet ISO would land in another
//! pool, `super::pool_change`), the node registers *fenced*: with every
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

use crate::node::contract::{
    FENCE_ENVIRONMENT_OVERRIDDEN, FENCE_FEATURES_UNREADABLE, FENCE_KUBELET_CONFIG_UNREADABLE,
    FENCE_KUBELET_TAINTS_TOO_LONG, FENCE_POOL_CHANGED, FENCE_RULES_FAILED, FENCE_TAINT_KEY,
    FENCE_TAINTS_UNREADABLE, FENCE_WRAPPER_DIED,
};
use crate::node::kubelet::{Additions, Replaced, Taint, TaintEffect};

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
    /// kubelet's own taints with ours pass what one exec may carry (the
    /// `--register-with-taints=` word over MAX_ARG_STRLEN, or the whole
    /// command over exec's limit): ours go in without them.
    KubeletTaintsTooLong,
    /// The env drop-in's static taints could not be parsed.
    TaintsUnreadable,
    /// Installed from a fleet ISO into one pool, its labels select another
    /// (or none, or two), or the record of the pool cannot be read
    /// (`super::pool_change`).
    PoolChanged,
    /// One of our variables set otherwise than our env drop-ins set it
    /// (`super::own_env`).
    EnvironmentOverridden,
}

impl Reason {
    pub fn value(self) -> &'static str {
        match self {
            Reason::WrapperDied => FENCE_WRAPPER_DIED,
            Reason::RulesFailed => FENCE_RULES_FAILED,
            Reason::FeaturesUnreadable => FENCE_FEATURES_UNREADABLE,
            Reason::KubeletConfigUnreadable => FENCE_KUBELET_CONFIG_UNREADABLE,
            Reason::KubeletTaintsTooLong => FENCE_KUBELET_TAINTS_TOO_LONG,
            Reason::TaintsUnreadable => FENCE_TAINTS_UNREADABLE,
            Reason::PoolChanged => FENCE_POOL_CHANGED,
            Reason::EnvironmentOverridden => FENCE_ENVIRONMENT_OVERRIDDEN,
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

/// Why kubelet's own taints were replaced by ours and the fence.
impl From<Replaced> for Reason {
    fn from(why: Replaced) -> Reason {
        match why {
            Replaced::Unreadable => Reason::KubeletConfigUnreadable,
            Replaced::TooLong => Reason::KubeletTaintsTooLong,
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
    /// What is left out, so fenced (the detail is in the note before).
    fn left_out(self) -> &'static str {
        match self {
            Reason::WrapperDied | Reason::RulesFailed | Reason::FeaturesUnreadable => {
                "the node rules' taints are unknown"
            }
            Reason::KubeletConfigUnreadable => "kubelet's own taints are unknown",
            Reason::KubeletTaintsTooLong => "kubelet's own taints are too many to pass with ours",
            Reason::TaintsUnreadable => "the static taints are unknown",
            Reason::PoolChanged => {
                "the pool it lands in gives taints only at registration, which it would lack"
            }
            Reason::EnvironmentOverridden => {
                "something other than our drop-ins wrote our configuration"
            }
        }
    }
}

/// The note for a start that registers fenced.
pub fn note(reason: Reason) -> String {
    format!(
        "registering fenced with {}, which no workload tolerates ({}); {LIFT}",
        reason.taint(),
        reason.left_out()
    )
}

/// The notes for a start whose kubelet's own taints were replaced by ours
/// and the fence of `reason`, `why`.
pub fn push_replaced(notes: &mut Vec<String>, reason: Reason, why: &str) {
    notes.push(format!(
        "kubelet's own taints left out (its --register-with-taints replaced by ours): {why}"
    ));
    notes.push(note(reason));
}

/// The note for a start whose rule-derived part is left out while no
/// rule can give a taint.
/// The head of [`no_fence_note`].
pub const LABELS_LEFT_OUT_NOTE: &str = "rule-derived labels left out: ";

pub fn no_fence_note(why: &str) -> String {
    format!(
        "{LABELS_LEFT_OUT_NOTE}{why}; no fence: no node rule gives a taint (the static taints \
         kept)"
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::contract::FENCE_TAINT_EFFECT;
    use crate::node::kubelet::parse_taints;

    #[test]
    fn the_fence_is_a_taint_kubelet_takes() {
        for r in [
            Reason::WrapperDied,
            Reason::RulesFailed,
            Reason::FeaturesUnreadable,
            Reason::KubeletConfigUnreadable,
            Reason::KubeletTaintsTooLong,
            Reason::TaintsUnreadable,
            Reason::PoolChanged,
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

    #[test]
    fn one_fence_the_first_reason() {
        let a = fenced(None, Reason::WrapperDied);
        let a = fenced(Some(a), Reason::RulesFailed);
        assert_eq!(a.taints, [Reason::WrapperDied.taint()]);
    }
}
