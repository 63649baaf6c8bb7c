//! Labels and taints derived from the node itself: NFD's built-in label set
//! and the user's NodeFeatureRules, evaluated on the node's facts. The
//! wrapper and `explain` both call this, so they agree.

use std::collections::BTreeMap;
use std::ffi::OsString;

use crate::contract::{NFD_LABELS_VAR, RULES_VAR};
use crate::facts::{Features, NfdFlavour};
use crate::kubelet::{self, Additions, Profile, Taint};
use crate::rules::{self, Element, Rule};

/// What the environment asks us to derive from the node.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Decoded rules, or why they could not be read.
    pub rules: Option<Result<Vec<Rule>, String>>,
    pub nfd_labels: Option<Result<NfdFlavour, String>>,
}

impl Sources {
    /// Nothing to derive: the node's facts need not be read at all.
    pub fn is_empty(&self) -> bool {
        self.rules.is_none() && self.nfd_labels.is_none()
    }
}

/// What one rule gave on this node, and what became of it.
#[derive(Debug, Clone, Default)]
pub struct RuleReport {
    pub name: String,
    pub matched: bool,
    /// `<domain>.<feature>` → the elements the rule matched.
    pub matched_features: BTreeMap<String, Vec<Element>>,
    pub labels: Vec<(String, String)>,
    pub taints: Vec<Taint>,
    /// Why this rule's output is not registered (evaluation error, or a
    /// label/taint kubelet would refuse).
    pub left_out: Option<String>,
}

/// Everything derived from the node, before the static labels/taints.
#[derive(Debug, Clone, Default)]
pub struct Derived {
    /// NFD built-in labels first, then each rule's in order (a later key wins).
    pub additions: Additions,
    pub rules: Vec<RuleReport>,
    /// Problems that dropped a whole source (undecodable rules, ...).
    pub problems: Vec<String>,
}

fn env_value(env: &[(OsString, OsString)], name: &str) -> Option<String> {
    env.iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.to_string_lossy().into_owned())
        .filter(|v| !v.trim().is_empty())
}

/// Read the rules and the NFD flavour from the environment systemd built.
pub fn sources_from_env(env: &[(OsString, OsString)]) -> Sources {
    Sources {
        rules: env_value(env, RULES_VAR)
            .map(|text| rules::compact::decode(&text).map_err(|e| format!("{RULES_VAR}: {e}"))),
        nfd_labels: env_value(env, NFD_LABELS_VAR).map(|v| match v.trim() {
            "upstream" => Ok(NfdFlavour::Upstream),
            "openshift" => Ok(NfdFlavour::OpenShift),
            other => Err(format!(
                "{NFD_LABELS_VAR}={other:?} is neither upstream nor openshift"
            )),
        }),
    }
}

/// Why kubelet would refuse this rule output, if it would.
fn refusal(labels: &[(String, String)], taints: &[Taint], profile: Profile) -> Option<String> {
    if let Some(e) = kubelet::validate_labels(labels, profile).first() {
        return Some(e.to_string());
    }
    // A taint must survive the trip through --register-with-taints unchanged.
    taints
        .iter()
        .find(|t| kubelet::parse_taints(&t.to_string()).as_deref() != Ok(std::slice::from_ref(*t)))
        .map(|t| format!("taint {t}: kubelet would refuse it"))
}

/// Evaluate `sources` on `features`. Rules whose output kubelet would refuse
/// are left out one by one; the rest is kept.
pub fn derive(sources: &Sources, features: &Features, profile: Profile) -> Derived {
    let mut out = Derived::default();
    match &sources.nfd_labels {
        Some(Ok(flavour)) => {
            let labels = crate::facts::nfd_labels(features, *flavour);
            match refusal(&labels, &[], profile) {
                None => out.additions.labels.extend(labels),
                Some(why) => out
                    .problems
                    .push(format!("NFD built-in labels left out: {why}")),
            }
        }
        Some(Err(e)) => out.problems.push(e.clone()),
        None => {}
    }
    match &sources.rules {
        Some(Ok(rules)) => {
            for result in rules::evaluate(rules, features) {
                let left_out = match &result.error {
                    Some(e) => Some(e.clone()),
                    None if result.matched => refusal(&result.labels, &result.taints, profile),
                    None => None,
                };
                if result.matched && left_out.is_none() {
                    out.additions.labels.extend(result.labels.iter().cloned());
                    for t in &result.taints {
                        out.additions
                            .taints
                            .retain(|o| !(o.key == t.key && o.effect == t.effect));
                        out.additions.taints.push(t.clone());
                    }
                }
                out.rules.push(RuleReport {
                    name: result.name,
                    matched: result.matched,
                    matched_features: result.matched_features,
                    labels: result.labels,
                    taints: result.taints,
                    left_out,
                });
            }
        }
        Some(Err(e)) => out.problems.push(e.clone()),
        None => {}
    }
    out
}

/// Static labels/taints win over derived ones on the same key (taints: key
/// and effect). Returns the merged additions and a note per override.
pub fn merge(static_: Option<&Additions>, derived: &Derived) -> (Additions, Vec<String>) {
    let empty = Additions::default();
    let static_ = static_.unwrap_or(&empty);
    let mut notes = Vec::new();
    let mut merged = Additions::default();
    for (k, v) in &derived.additions.labels {
        match static_.labels.iter().rev().find(|(sk, _)| sk == k) {
            Some((_, sv)) if sv != v => {
                notes.push(format!("static label {k}={sv} wins over derived {k}={v}"));
            }
            Some(_) => {}
            None => merged.labels.push((k.clone(), v.clone())),
        }
    }
    merged.labels.extend(static_.labels.iter().cloned());
    for t in &derived.additions.taints {
        match static_
            .taints
            .iter()
            .find(|s| s.key == t.key && s.effect == t.effect)
        {
            Some(s) if s != t => notes.push(format!("static taint {s} wins over derived {t}")),
            Some(_) => {}
            None => merged.taints.push(t.clone()),
        }
    }
    merged.taints.extend(static_.taints.iter().cloned());
    (merged, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet::TaintEffect;

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.into(), v.into())
    }

    fn taint(k: &str, v: &str) -> Taint {
        Taint {
            key: k.into(),
            value: v.into(),
            effect: TaintEffect::NoSchedule,
        }
    }

    #[test]
    fn static_wins_and_says_so() {
        let derived = Derived {
            additions: Additions {
                labels: vec![kv("a", "1"), kv("b", "2")],
                taints: vec![taint("gpu", "true"), taint("x", "1")],
            },
            ..Default::default()
        };
        let static_ = Additions {
            labels: vec![kv("a", "9")],
            taints: vec![taint("gpu", "false")],
        };
        let (merged, notes) = merge(Some(&static_), &derived);
        assert_eq!(merged.labels, vec![kv("b", "2"), kv("a", "9")]);
        assert_eq!(merged.taints, vec![taint("x", "1"), taint("gpu", "false")]);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("a=9") && notes[0].contains("a=1"));
    }

    #[test]
    fn refused_output_is_named() {
        let why = refusal(
            &[kv("node-role.kubernetes.io/gpu-worker", "true")],
            &[],
            Profile::Upstream,
        )
        .unwrap();
        assert!(why.contains("node-role.kubernetes.io/gpu-worker"), "{why}");
        assert!(refusal(&[kv("nvidia.com/gpu", "true")], &[], Profile::Upstream).is_none());
        assert!(refusal(&[], &[taint("a,b", "c")], Profile::Upstream).is_some());
    }

    #[test]
    fn bad_environment_is_a_problem_not_a_panic() {
        let env = vec![
            (NFD_LABELS_VAR.into(), "rhel".into()),
            (RULES_VAR.into(), " ".into()),
        ];
        let s = sources_from_env(&env);
        assert!(s.rules.is_none());
        let d = derive(&s, &Features::default(), Profile::Upstream);
        assert_eq!(d.problems.len(), 1);
        assert!(d.problems[0].contains("rhel"));
    }
}
