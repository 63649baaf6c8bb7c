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

/// `key=value:Effect`, `key=:Effect`, `key:Effect` or `key`; effect may be
/// absent here (the caller requires it).
fn parse_one(spec: &str) -> Result<(String, String, Option<TaintEffect>), TaintError> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (kv, effect) = match parts.as_slice() {
        // Without an effect kubelet takes the whole item as the key.
        [key] => {
            let errs = label_key_errors(key);
            if !errs.is_empty() {
                return Err(err(spec, format!("invalid taint key: {}", errs.join("; "))));
            }
            return Ok((key.to_string(), String::new(), None));
        }
        [kv, effect] => match TaintEffect::parse(effect) {
            Some(e) => (*kv, Some(e)),
            None => {
                return Err(err(
                    spec,
                    format!(
                        "invalid taint effect {effect:?}: must be NoSchedule, PreferNoSchedule \
                         or NoExecute (case-sensitive)"
                    ),
                ));
            }
        },
        _ => return Err(err(spec, "invalid taint spec: more than one ':'")),
    };
    let kv_parts: Vec<&str> = kv.split('=').collect();
    let (key, value) = match kv_parts.as_slice() {
        [key] => (*key, ""),
        [key, value] => {
            let errs = label_value_errors(value);
            if !errs.is_empty() {
                return Err(err(
                    spec,
                    format!("invalid taint value: {}", errs.join("; ")),
                ));
            }
            (*key, *value)
        }
        _ => return Err(err(spec, "invalid taint spec: more than one '='")),
    };
    let errs = label_key_errors(key);
    if !errs.is_empty() {
        return Err(err(spec, format!("invalid taint key: {}", errs.join("; "))));
    }
    Ok((key.to_string(), value.to_string(), effect))
}

/// Parse a `--register-with-taints` value as kubelet does. An empty value
/// is no taints; items ending in `-` are removals, which kubelet drops.
pub fn parse_taints(value: &str) -> Result<Vec<Taint>, TaintError> {
    let mut taints: Vec<Taint> = Vec::new();
    if value.is_empty() {
        return Ok(taints);
    }
    for spec in value.split(',') {
        if let Some(removal) = spec.strip_suffix('-') {
            parse_one(removal)?;
            continue;
        }
        let (key, value, effect) = parse_one(spec)?;
        let Some(effect) = effect else {
            return Err(err(
                spec,
                "invalid taint spec: an effect (:NoSchedule, :PreferNoSchedule or :NoExecute) is required",
            ));
        };
        if taints.iter().any(|t| t.key == key && t.effect == effect) {
            return Err(err(
                spec,
                format!(
                    "duplicated taints with the same key and effect ({key}, {})",
                    effect.as_str()
                ),
            ));
        }
        taints.push(Taint { key, value, effect });
    }
    Ok(taints)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::kubelet::taint as t;

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
}
