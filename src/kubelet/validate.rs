//! `validate`: would this kubelet accept the `--node-labels` and
//! `--register-with-taints` in these arguments?

use serde::Serialize;

use super::Profile;
use super::flags::scan;
use super::labels::{parse_node_labels, validate_labels};
use super::taints::parse_taints;

#[derive(Debug, Serialize)]
pub struct ValidationReport {
    pub valid: bool,
    pub profile: &'static str,
    /// Labels kubelet would register with, in order (a later key wins).
    pub labels: Vec<String>,
    /// Taints of the effective (last) `--register-with-taints`.
    pub taints: Vec<String>,
    /// Each problem, naming the flag, key or taint and the rule it breaks.
    pub errors: Vec<String>,
}

/// `args` are kubelet's arguments; leading words that are not flags (a
/// pasted `/usr/bin/kubelet` or wrapper chain) are skipped.
pub fn validate_kubelet_args(args: &[String], profile: Profile) -> ValidationReport {
    let mut argv = vec![String::new()];
    argv.extend(args.iter().cloned());
    let scan = scan(&argv);
    let mut errors = Vec::new();
    let mut labels = Vec::new();
    let mut taints = Vec::new();

    let consumed: Vec<usize> = scan
        .flags
        .iter()
        .flat_map(|f| f.index..f.index + f.words)
        .collect();
    let end = scan.terminator.unwrap_or(argv.len());
    for (i, word) in argv.iter().enumerate().take(end).skip(scan.start) {
        if consumed.contains(&i) {
            continue;
        }
        if let Some(rest) = word.strip_prefix('-').filter(|r| !r.starts_with('-')) {
            if rest.starts_with("node-labels") || rest.starts_with("register-with-taints") {
                errors.push(format!(
                    "{word:?}: a single dash is a shorthand flag to kubelet; write --{rest}"
                ));
            }
        } else if !word.starts_with('-') {
            errors.push(format!(
                "{word:?}: kubelet takes no positional arguments (unknown command); \
                 is a flag before it missing its value or a '='?"
            ));
        }
    }
    for word in argv.iter().skip(end + 1) {
        if word.starts_with("--node-labels") || word.starts_with("--register-with-taints") {
            errors.push(format!(
                "{word:?} comes after '--', where kubelet takes it as an unknown command"
            ));
        }
    }

    for f in &scan.flags {
        match f.name.as_str() {
            "node-labels" => match &f.value {
                Some(v) => labels.extend(parse_node_labels(v)),
                None => errors.push("flag needs an argument: --node-labels".to_string()),
            },
            "register-with-taints" => match &f.value {
                Some(v) => match parse_taints(v) {
                    Ok(t) => taints = t,
                    Err(e) => {
                        errors.push(format!("invalid argument for --register-with-taints: {e}"))
                    }
                },
                None => errors.push("flag needs an argument: --register-with-taints".to_string()),
            },
            _ => {}
        }
    }
    errors.extend(
        validate_labels(&labels, profile)
            .iter()
            .map(|e| e.to_string()),
    );
    ValidationReport {
        valid: errors.is_empty(),
        profile: match profile {
            Profile::Upstream => "upstream",
            Profile::OpenShift => "openshift",
        },
        labels: labels.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        taints: taints.iter().map(|t| t.to_string()).collect(),
        errors,
    }
}

impl ValidationReport {
    pub fn to_human(&self) -> String {
        if self.valid {
            let mut out = format!("valid for the {} kubelet\n", self.profile);
            for l in &self.labels {
                out += &format!("label: {l}\n");
            }
            for t in &self.taints {
                out += &format!("taint: {t}\n");
            }
            out
        } else {
            self.errors
                .iter()
                .map(|e| format!("invalid: {e}\n"))
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(args: &str, profile: Profile) -> ValidationReport {
        let v: Vec<String> = args.split(' ').map(String::from).collect();
        validate_kubelet_args(&v, profile)
    }

    #[test]
    fn accepts_valid_flags() {
        let r = check(
            "--node-labels=node-role.kubernetes.io/worker,node.kubernetes.io/gpu= --register-with-taints=a=b:NoSchedule",
            Profile::OpenShift,
        );
        assert!(r.valid, "{:?}", r.errors);
        assert_eq!(
            r.labels,
            vec!["node-role.kubernetes.io/worker=", "node.kubernetes.io/gpu="]
        );
        assert_eq!(r.taints, vec!["a=b:NoSchedule"]);
    }

    #[test]
    fn names_what_is_wrong() {
        let r = check(
            "--node-labels=node-role.kubernetes.io/worker",
            Profile::Upstream,
        );
        assert!(!r.valid);
        assert!(r.errors[0].contains("node-role.kubernetes.io/worker"));
        let r = check("--register-with-taints=a:noschedule", Profile::Upstream);
        assert!(r.errors[0].contains("a:noschedule"), "{:?}", r.errors);
        let r = check("--node-labels", Profile::Upstream);
        assert!(r.errors[0].contains("needs an argument"));
        let r = check("--v=2 -- --node-labels=a=b", Profile::Upstream);
        assert!(r.errors[0].contains("after '--'"));
        let r = check("-node-labels=a=b", Profile::Upstream);
        assert!(r.errors[0].contains("single dash"));
        let r = check("--node-labels a b", Profile::Upstream);
        assert!(r.errors[0].contains("positional"));
    }

    #[test]
    fn value_word_may_start_with_dashes() {
        // pflag takes the next word as the value: a label key "--register-with-taints=x"
        let r = check(
            "--node-labels --register-with-taints=x:NoSchedule",
            Profile::Upstream,
        );
        assert!(!r.valid);
        assert!(r.taints.is_empty());
    }

    #[test]
    fn last_taint_flag_wins_but_each_must_parse() {
        let r = check(
            "--register-with-taints=a:NoSchedule --register-with-taints=b:NoExecute",
            Profile::Upstream,
        );
        assert_eq!(r.taints, vec!["b=:NoExecute"]);
        let r = check(
            "--register-with-taints=bad --register-with-taints=b:NoExecute",
            Profile::Upstream,
        );
        assert!(!r.valid);
    }
}
