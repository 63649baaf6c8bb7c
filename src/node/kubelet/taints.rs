//! `--register-with-taints`: kubelet's RegisterWithTaintsVar.Set, i.e. a
//! comma split (no trimming) and taints.parseTaint on each item, 1.23+ rules.

use super::labels::{label_key_errors, label_value_errors};
use super::{Taint, TaintEffect};

impl TaintEffect {
    pub fn parse(s: &str) -> Option<TaintEffect> {
        match s {
            "NoSchedule" => Some(TaintEffect::NoSchedule),
            "PreferNoSchedule" => Some(TaintEffect::PreferNoSchedule),
            "NoExecute" => Some(TaintEffect::NoExecute),
            _ => None,
        }
    }
}

/// One item kubelet would refuse, with kubelet's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaintError {
    pub spec: String,
    pub reason: String,
}

impl std::fmt::Display for TaintError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "taint {:?}: {}", self.spec, self.reason)
    }
}

impl std::error::Error for TaintError {}

fn err(spec: &str, reason: impl Into<String>) -> TaintError {
    TaintError {
        spec: spec.to_string(),
        reason: reason.into(),
    }
}

const EFFECTS_HINT: &str =
    "the effect is NoSchedule, PreferNoSchedule or NoExecute (case-sensitive)";

/// `invalid taint spec: <spec>, <why>` as kubelet words it.
fn spec_err(spec: &str, errs: &[String]) -> TaintError {
    err(
        spec,
        format!("invalid taint spec: {spec}, {}", errs.join("; ")),
    )
}

/// `key=value:Effect`, `key=:Effect`, `key:Effect` or `key`; effect may be
/// absent here (the caller requires it). Checks in kubelet's order: effect,
/// shape, value, key.
fn parse_one(spec: &str) -> Result<(String, String, Option<TaintEffect>), TaintError> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (kv, effect) = match parts.as_slice() {
        // Without an effect kubelet takes the whole item as the key.
        [key] => {
            let errs = label_key_errors(key);
            if !errs.is_empty() {
                return Err(spec_err(spec, &errs));
            }
            return Ok((key.to_string(), String::new(), None));
        }
        [kv, effect] => match TaintEffect::parse(effect) {
            Some(e) => (*kv, Some(e)),
            None => {
                return Err(err(
                    spec,
                    format!(
                        "invalid taint effect: {effect}, unsupported taint effect ({EFFECTS_HINT})"
                    ),
                ));
            }
        },
        _ => {
            return Err(err(
                spec,
                format!("invalid taint spec: {spec} (more than one ':')"),
            ));
        }
    };
    let kv_parts: Vec<&str> = kv.split('=').collect();
    let (key, value) = match kv_parts.as_slice() {
        [key] => (*key, ""),
        [key, value] => {
            let errs = label_value_errors(value);
            if !errs.is_empty() {
                return Err(spec_err(spec, &errs));
            }
            (*key, *value)
        }
        _ => {
            return Err(err(
                spec,
                format!("invalid taint spec: {spec} (more than one '=')"),
            ));
        }
    };
    let errs = label_key_errors(key);
    if !errs.is_empty() {
        return Err(spec_err(spec, &errs));
    }
    Ok((key.to_string(), value.to_string(), effect))
}

/// Parse a `--register-with-taints` value as kubelet does. An empty value
/// is no taints; items ending in `-` are removals, which kubelet drops.
pub fn parse_taints(value: &str) -> Result<Vec<Taint>, TaintError> {
    let mut taints: Vec<Taint> = Vec::new();
    // The spec of each taint, for a duplicate's error.
    let mut specs: Vec<&str> = Vec::new();
    if value.is_empty() {
        return Ok(taints);
    }
    let mut failed = None;
    for spec in value.split(',') {
        let parsed = match spec.strip_suffix('-') {
            Some(removal) => parse_one(removal).map(|_| None),
            None => parse_one(spec).and_then(|(key, value, effect)| match effect {
                Some(effect) => Ok(Some(Taint { key, value, effect })),
                None => Err(err(
                    spec,
                    format!(
                        "invalid taint spec: {spec} (an effect is required: key=value:Effect, key=:Effect or key:Effect; {EFFECTS_HINT})"
                    ),
                )),
            }),
        };
        match parsed {
            Ok(Some(t)) => {
                taints.push(t);
                specs.push(spec);
            }
            Ok(None) => {}
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    // kubelet refuses the first taint whose key and effect an earlier one
    // has (before any error after it): found by one sort, not a scan per
    // taint (a drop-in a pod writes may hold many thousands).
    let mut order: Vec<usize> = (0..taints.len()).collect();
    order.sort_by(|&a, &b| {
        (taints[a].key.as_str(), taints[a].effect, a).cmp(&(
            taints[b].key.as_str(),
            taints[b].effect,
            b,
        ))
    });
    let same =
        |a: usize, b: usize| taints[a].key == taints[b].key && taints[a].effect == taints[b].effect;
    let duplicate = order
        .windows(2)
        .filter(|w| same(w[0], w[1]))
        .map(|w| w[1])
        .min();
    if let Some(i) = duplicate {
        let t = &taints[i];
        return Err(err(
            specs[i],
            format!(
                "duplicated taints with the same key and effect: {}:{}",
                t.key,
                t.effect.as_str()
            ),
        ));
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(taints),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::node::kubelet::taint as t;

    /// The first duplicate in order is named, before a later error; many
    /// taints are one sort.
    #[test]
    fn the_first_duplicate_is_refused() {
        let e =
            parse_taints("a:NoSchedule,b:NoExecute,b=x:NoExecute,a=y:NoSchedule,bad").unwrap_err();
        assert_eq!(e.spec, "b=x:NoExecute");
        let e = parse_taints("a:NoSchedule,bad,a:NoSchedule").unwrap_err();
        assert_ne!(e.spec, "a:NoSchedule");
        let many: Vec<String> = (0..50_000).map(|i| format!("k{i}:NoSchedule")).collect();
        assert_eq!(parse_taints(&many.join(",")).unwrap().len(), 50_000);
        assert!(parse_taints(&format!("{},k7:NoSchedule", many.join(","))).is_err());
    }

    #[test]
    fn accepted_forms() {
        use TaintEffect::*;
        assert_eq!(
            parse_taints("a=b:NoSchedule,c=:PreferNoSchedule,d:NoExecute").unwrap(),
            vec![
                t("a", "b", NoSchedule),
                t("c", "", PreferNoSchedule),
                t("d", "", NoExecute)
            ]
        );
        assert_eq!(parse_taints("").unwrap(), vec![]);
        // same key, other effect: fine
        assert_eq!(parse_taints("a:NoSchedule,a:NoExecute").unwrap().len(), 2);
        // removals are dropped silently
        assert_eq!(
            parse_taints("a:NoSchedule-,b:NoSchedule").unwrap(),
            vec![t("b", "", NoSchedule)]
        );
        assert_eq!(
            parse_taints("node-role.kubernetes.io/master=:NoSchedule").unwrap(),
            vec![t("node-role.kubernetes.io/master", "", NoSchedule)]
        );
    }

    #[test]
    fn refused_forms() {
        for bad in [
            "key",                        // effect required
            "a=b",                        // key "a=b"? no: effect required first
            "a:noschedule",               // case-sensitive
            "a:NoSchedule, b:NoSchedule", // no trimming
            "a=b=c:NoSchedule",
            "a:b:NoSchedule",
            "a=-x:NoSchedule",
            "Bad.Prefix/a:NoSchedule",
            "a:NoSchedule,a=x:NoSchedule", // duplicate <key,effect>
            ",",
            "a:NoSchedule,",
        ] {
            assert!(parse_taints(bad).is_err(), "{bad}");
        }
        let e = parse_taints("a:NoSchedule,a=x:NoSchedule").unwrap_err();
        assert!(e.to_string().contains("duplicated"), "{e}");
        assert!(
            parse_taints("a:noschedule")
                .unwrap_err()
                .to_string()
                .contains("effect")
        );
    }

    #[test]
    fn display_round_trips() {
        for taint in parse_taints("a=b:NoSchedule,c:NoExecute").unwrap() {
            assert_eq!(parse_taints(&taint.to_string()).unwrap(), vec![taint]);
        }
    }

    fn why(spec: &str) -> String {
        parse_taints(spec).unwrap_err().reason
    }

    #[test]
    fn kubelet_messages_for_each_rule() {
        // no trimming: the space belongs to the key
        assert!(
            why("a:NoSchedule, b:NoSchedule")
                .starts_with("invalid taint spec:  b:NoSchedule, name part must consist"),
            "{}",
            why("a:NoSchedule, b:NoSchedule")
        );
        assert!(
            why("a:noschedule")
                .starts_with("invalid taint effect: noschedule, unsupported taint effect")
        );
        assert!(why("a:").starts_with("invalid taint effect: , unsupported"));
        assert!(why("key").starts_with("invalid taint spec: key (an effect is required"));
        // without ':' the whole item is the key
        assert!(why("a=b").starts_with("invalid taint spec: a=b, name part must consist"));
        assert!(why("a=b=c:NoSchedule").starts_with("invalid taint spec: a=b=c:NoSchedule"));
        assert!(why("a:b:NoSchedule").starts_with("invalid taint spec: a:b:NoSchedule"));
        assert!(why("a=-x:NoSchedule").contains("a valid label must be an empty string"));
        assert!(why("Bad.Prefix/a:NoSchedule").contains("prefix part a lowercase RFC 1123"));
        assert_eq!(
            why("a=1:NoSchedule,a=2:NoSchedule"),
            "duplicated taints with the same key and effect: a:NoSchedule"
        );
        // the effect is checked before the value and the key
        assert!(why("Bad_=-x:nope").starts_with("invalid taint effect: nope"));
        // the value before the key
        assert!(why("Bad_=-x:NoSchedule").contains("a valid label must be"));
        let e = parse_taints("ok:NoSchedule,a=b").unwrap_err();
        assert_eq!(e.spec, "a=b");
        assert!(
            e.to_string()
                .starts_with("taint \"a=b\": invalid taint spec")
        );
    }

    #[test]
    fn value_and_key_limits() {
        use TaintEffect::*;
        let v63 = "v".repeat(63);
        assert_eq!(
            parse_taints(&format!("a={v63}:NoExecute")).unwrap(),
            vec![t("a", &v63, NoExecute)]
        );
        assert!(why(&format!("a={v63}v:NoExecute")).contains("must be no more than 63 bytes"));
        let k = format!("example.com/{}", "k".repeat(63));
        assert!(parse_taints(&format!("{k}:NoSchedule")).is_ok());
        assert!(
            why(&format!("{k}k:NoSchedule")).contains("name part must be no more than 63 bytes")
        );
        // taint keys are not policed like labels: any qualified name
        assert!(parse_taints("node-role.kubernetes.io/infra=:NoSchedule,node-restriction.kubernetes.io/x:NoExecute").is_ok());
    }

    #[test]
    fn removals_are_parsed_then_dropped() {
        use TaintEffect::*;
        assert_eq!(parse_taints("a:NoSchedule-").unwrap(), vec![]);
        assert_eq!(parse_taints("a-").unwrap(), vec![]);
        assert_eq!(
            parse_taints("a=b:NoExecute-,a=b:NoExecute").unwrap(),
            vec![t("a", "b", NoExecute)]
        );
        // a removal must still parse
        assert!(why("a:Nope-").starts_with("invalid taint effect: Nope"));
        assert!(why("Bad_:NoSchedule-").starts_with("invalid taint spec: Bad_:NoSchedule"));
        // a duplicate removal is no duplicate taint
        assert!(parse_taints("a:NoSchedule-,a:NoSchedule-").is_ok());
    }

    #[test]
    fn empty_items_are_errors_unlike_labels() {
        assert!(why(",").contains("name part must be non-empty"));
        assert!(why("a:NoSchedule,").contains("name part must be non-empty"));
        assert!(why(",a:NoSchedule").contains("name part must be non-empty"));
    }
}
