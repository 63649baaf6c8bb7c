//! `validate`: would this kubelet accept the `--node-labels` and
//! `--register-with-taints` in these arguments?

pub mod command;

use serde::Serialize;

use crate::node::kubelet::flags::scan;
use crate::node::kubelet::labels::{effective_labels, parse_node_labels, validate_labels};
use crate::node::kubelet::taints::parse_taints;
use crate::node::kubelet::{Profile, version};
use crate::node::unit::warnings::Warnings;

#[derive(Debug, Serialize)]
pub struct ValidationReport {
    pub valid: bool,
    pub profile: &'static str,
    /// Leading words that are not flags, taken as the command (a pasted
    /// `/usr/bin/kubelet` or wrapper chain) and not checked.
    pub command: Vec<String>,
    /// Labels kubelet would register with, `key=value`, one per key (a
    /// later value of a key replaces an earlier one).
    pub labels: Vec<String>,
    /// Taints of the effective (last) `--register-with-taints`.
    pub taints: Vec<String>,
    /// Each problem, naming the flag, key or taint and the rule it breaks.
    pub errors: Vec<String>,
    /// Flags only older kubelets take: the reference kubelet exits on them.
    pub warnings: Vec<String>,
}

/// `args` are kubelet's arguments; leading words that are not flags (a
/// pasted `/usr/bin/kubelet` or wrapper chain) are skipped.
pub fn validate_kubelet_args(args: &[String], profile: Profile) -> ValidationReport {
    let mut argv = vec![String::new()];
    argv.extend(args.iter().cloned());
    let scan = scan(&argv);
    // Review 41 r41b F5: an error per word of 2,000,000 an environment
    // file expanded was 594 MB: the first ones are said, the rest counted.
    let mut errors = Warnings::default();
    let mut labels = Vec::new();
    let mut taints = Vec::new();

    let end = scan.terminator.unwrap_or(argv.len());
    let mut consumed = vec![false; argv.len()];
    for f in &scan.flags {
        for c in &mut consumed[f.index..f.index + f.words] {
            *c = true;
        }
    }
    for (i, why) in &scan.refused {
        consumed[*i] = true;
        let word = &argv[*i];
        let hint = match word.strip_prefix('-') {
            Some(rest) if !rest.starts_with('-') && rest.len() > 1 => {
                format!("; a single dash starts shorthand flags, write -{word}")
            }
            _ => String::new(),
        };
        errors.push_with(|| format!("{word:?}: kubelet refuses it: {why}{hint}"));
    }
    // pflag collects positional words and kubelet refuses the first one.
    let positional = (scan.start..end)
        .filter(|&i| !consumed[i])
        .chain(end + 1..argv.len())
        .next();
    if let Some(i) = positional {
        let word = &argv[i];
        let why = if i > end {
            "after '--' every word is positional, and kubelet takes none; put flags before '--'"
        } else {
            "kubelet takes no positional arguments; is a flag before it missing its value or a '='?"
        };
        errors.push(format!("{word:?}: unknown command ({why})"));
    }

    // exec refuses a longer word before kubelet could look at it.
    for (i, word) in args.iter().enumerate() {
        let flag = word.split_once('=').map_or(word.as_str(), |(f, _)| f);
        let what = || format!("argument {} ({:.40})", i + 1, flag);
        if crate::node::kubelet::arg_limit::too_long("", word.len()).is_some() {
            errors.push_with(|| {
                crate::node::kubelet::arg_limit::too_long(&what(), word.len()).unwrap_or_default()
            });
        }
    }
    let (unknown, older) = unknown_flags(&argv, &scan, None);
    errors.append(&unknown);
    for f in &scan.flags {
        match f.name.as_str() {
            "node-labels" => match &f.value {
                Some(v) => labels.extend(parse_node_labels(v)),
                None => errors.push("flag needs an argument: --node-labels".to_string()),
            },
            "register-with-taints" => match &f.value {
                // Each occurrence must parse; the last one is the list.
                Some(v) => match parse_taints(v) {
                    Ok(t) => taints = t,
                    Err(e) => errors.push(format!(
                        "invalid argument {v:?} for \"--register-with-taints\" flag: {e}"
                    )),
                },
                None => errors.push("flag needs an argument: --register-with-taints".to_string()),
            },
            _ => {}
        }
    }
    for e in validate_labels(&labels, profile) {
        errors.push_with(|| e.to_string());
    }
    let errors: Vec<String> = errors.into();
    ValidationReport {
        valid: errors.is_empty(),
        profile: match profile {
            Profile::Upstream => "upstream",
            Profile::OpenShift => "openshift",
        },
        command: argv[1..scan.start.max(1)].to_vec(),
        labels: effective_labels(&labels)
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
        taints: taints.iter().map(|t| t.to_string()).collect(),
        errors,
        warnings: older.into(),
    }
}

/// For `explain`: the flags of a unit's own kubelet command that kubelet
/// exits on (not ours to fix, and the wrapper passes them on as they are).
/// Nothing when `program` is not kubelet or a launcher of it.
///
/// `minor`: the node's kubelet (1.x), when known: a flag its release still
/// takes is no warning.
pub fn command_flag_warnings(program: &str, argv: &[String], minor: Option<u32>) -> Vec<String> {
    if crate::node::kubelet::flags::kubelet_args_start(program, argv).is_err() {
        return Vec::new();
    }
    let (unknown, older) = unknown_flags(argv, &scan(argv), minor);
    unknown
        .iter()
        .chain(older.iter())
        .map(|w| format!("kubelet's own command line: {w}"))
        .collect()
}

/// For `explain`: what kubelet refuses in the whole command line the node
/// would run (`argv`: the unit's own words, which the wrapper passes on as
/// they are, and ours), as `validate` judges it: kubelet exits at every
/// start on each. Unknown flags are [`command_flag_warnings`]'. With the
/// upstream profile (a guess when nothing says which kubelet), a unit whose
/// own labels only OpenShift's kubelet takes is judged as OpenShift's.
pub fn command_line_errors(
    program: &str,
    argv: &[String],
    profile: Profile,
    kubelet_known: bool,
) -> Vec<String> {
    let Ok(start) = crate::node::kubelet::flags::kubelet_args_start(program, argv) else {
        return Vec::new();
    };
    let args = &argv[start..];
    let mut report = validate_kubelet_args(args, profile);
    // Whose kubelet runs is unknown: OpenShift's, when that explains more.
    if !kubelet_known && profile == Profile::Upstream && !report.valid {
        let openshift = validate_kubelet_args(args, Profile::OpenShift);
        if openshift.errors.len() < report.errors.len() {
            report = openshift;
        }
    }
    report
        .errors
        .into_iter()
        .filter(|e| !e.starts_with("unknown flag:"))
        .map(|e| match crate::node::unit::warnings::counts_the_rest(&e) {
            true => format!("kubelet's command line: {e}"),
            false => format!(
                "kubelet exits at every start on this command line: {e} (the unit's own words \
                 are passed on as they are: fix the unit, or the file that sets the variable \
                 it expands, e.g. CUSTOM_KUBELET_LABELS in /etc/kubernetes/kubelet-env)"
            ),
        })
        .collect()
}

/// Long flags of `argv` kubelet does not know, as kubelet refuses them
/// (`unknown flag: --x`, exit 1), with the flag likely meant; and those only
/// older kubelets know, for a warning: for the kubelet 1.`minor` when
/// known, else for the newest. Each name once.
pub fn unknown_flags(
    argv: &[String],
    scan: &crate::node::kubelet::flags::FlagScan,
    minor: Option<u32>,
) -> (Warnings, Warnings) {
    use crate::node::kubelet::known_flags::{Known, closest, known, removed_in};
    use crate::node::kubelet::version::REFERENCE_MINOR;
    // Bounded, as kubelet's other errors are (review 41 r41b F5).
    let mut unknown = Warnings::default();
    let mut older = Warnings::default();
    let mut seen = std::collections::HashSet::new();
    for f in &scan.flags {
        // Shorthands (-v, -h) are known; a long flag as written, before `=`.
        let Some(raw) = argv[f.index].strip_prefix("--") else {
            continue;
        };
        let raw = raw.split_once('=').map_or(raw, |(n, _)| n);
        if !seen.insert(raw) {
            continue;
        }
        match known(&f.name) {
            Known::Current => {}
            Known::Older => match (minor, removed_in(&f.name)) {
                (Some(m), Some(r)) if m < r => {}
                (Some(m), Some(r)) => older.push(format!(
                    "--{raw}: kubelet 1.{m} has no such flag (removed in 1.{r}) and exits on it (unknown flag)"
                )),
                (None, Some(r)) => older.push(format!(
                    "--{raw}: kubelet 1.{REFERENCE_MINOR} has no such flag and exits on it (unknown flag); only kubelets before 1.{r} take it"
                )),
                (_, None) => older.push(format!(
                    "--{raw}: kubelet 1.{REFERENCE_MINOR} has no such flag and exits on it (unknown flag); only older kubelets take it"
                )),
            },
            // The name meant is looked for only while there is room.
            Known::Unknown => unknown.push_with(|| {
                format!(
                    "unknown flag: --{raw}: kubelet exits on it{}",
                    closest(&f.name).map_or(String::new(), |c| format!("; did you mean --{c}?"))
                )
            }),
        }
    }
    (unknown, older)
}

impl ValidationReport {
    /// One JSON object: valid, profile, command, labels, taints, errors.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    pub fn to_human(&self) -> String {
        let mut out = if self.valid {
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
        };
        for w in &self.warnings {
            out += &format!("warning: {w}\n");
        }
        out
    }
}

/// From MachineConfigs: the release a rendered config names.
pub fn version_from_machineconfigs(
    configs: &[serde_json::Value],
) -> Option<version::KubeletVersion> {
    configs.iter().find_map(|mc| {
        let release = mc
            .pointer("/metadata/annotations")?
            .get(version::RELEASE_ANNOTATION)?
            .as_str()?;
        let name = mc
            .pointer("/metadata/name")
            .and_then(|n| n.as_str())
            .unwrap_or("");
        Some(version::KubeletVersion {
            minor: Some(version::openshift_to_kubernetes(release)?),
            source: format!("OpenShift {release}, the release {name} was rendered by"),
            profile: Some(Profile::OpenShift),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pflag: `--flag false` after a bool leaves "false" as a positional
    /// word, which kubelet refuses (`unknown command "false"`).
    #[test]
    fn a_bool_leaves_its_spaced_value_as_a_command() {
        let r = crate::cli::validate::validate_kubelet_args(
            &["--cpu-cfs-quota".into(), "false".into()],
            Profile::Upstream,
        );
        assert!(
            r.errors
                .iter()
                .any(|e| e.starts_with("\"false\": unknown command")),
            "{:?}",
            r.errors
        );
    }

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

    fn errors(args: &str) -> Vec<String> {
        check(args, Profile::Upstream).errors
    }

    /// kubelet.md §5, the harness table.
    #[test]
    fn pflag_forms() {
        let r = check("--node-labels=a=1,b=2", Profile::Upstream);
        assert!(r.valid);
        assert_eq!(r.labels, vec!["a=1", "b=2"]);
        let r = check("--node-labels a=1,b=2", Profile::Upstream);
        assert!(r.valid);
        assert_eq!(r.labels, vec!["a=1", "b=2"]);
        // the key "--register-with-taints" and the value "x:NoSchedule"
        let e = errors("--node-labels --register-with-taints=x:NoSchedule");
        assert_eq!(e.len(), 2);
        assert!(
            e[0].contains("label key \"--register-with-taints\" is invalid"),
            "{e:?}"
        );
        assert_eq!(
            errors("--v=2 --node-labels"),
            vec!["flag needs an argument: --node-labels"]
        );
        let e = errors("-node-labels=a=1");
        assert!(
            e[0].contains("unknown shorthand flag: 'n' in -node-labels=a=1")
                && e[0].contains("write --node-labels=a=1"),
            "{e:?}"
        );
        let r = check("--node_labels=a=1", Profile::Upstream);
        assert!(r.valid && r.labels == vec!["a=1"]);
        let e = errors("--v=2 -- --node-labels=b=2");
        assert!(
            e[0].contains("\"--node-labels=b=2\": unknown command"),
            "{e:?}"
        );
        assert!(check("--v=2 --", Profile::Upstream).valid);
        let e = errors("--v=2 extra --node-labels=a=1");
        assert!(e[0].contains("\"extra\": unknown command"), "{e:?}");
        // -v takes the next word
        assert!(check("-v 4 --node-labels=a=1", Profile::Upstream).valid);
        assert!(check("--v 4 --node-labels=a=1", Profile::Upstream).valid);
    }

    #[test]
    fn repeated_label_flags_accumulate() {
        let r = check(
            "--node-labels=a=1 --node-labels=b=2 --node-labels=a=3",
            Profile::Upstream,
        );
        assert!(r.valid);
        assert_eq!(r.labels, vec!["a=3", "b=2"]);
        let r = check("--node-labels= --node-labels ", Profile::Upstream);
        assert!(r.valid && r.labels.is_empty(), "{r:?}");
        // the OpenShift unit's empty ${CUSTOM_KUBELET_LABELS}
        let r = check(
            "--node-labels=node-role.kubernetes.io/worker,node.openshift.io/os_id=rhcos,",
            Profile::OpenShift,
        );
        assert!(r.valid, "{:?}", r.errors);
        assert_eq!(r.labels.len(), 2);
    }

    #[test]
    fn taint_flag_errors_per_occurrence() {
        let e = errors("--register-with-taints=a:nope --register-with-taints=b=x=y:NoSchedule");
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(
            e[0].starts_with("invalid argument \"a:nope\" for \"--register-with-taints\" flag: ")
        );
        assert!(e[0].contains("invalid taint effect: nope"));
        assert!(e[1].contains("b=x=y:NoSchedule"));
        assert_eq!(
            errors("--register-with-taints"),
            vec!["flag needs an argument: --register-with-taints"]
        );
        // an empty flag clears; removals are dropped
        let r = check(
            "--register-with-taints=a:NoSchedule --register-with-taints=",
            Profile::Upstream,
        );
        assert!(r.valid && r.taints.is_empty());
        let r = check("--register-with-taints=a:NoSchedule-", Profile::Upstream);
        assert!(r.valid && r.taints.is_empty());
    }

    #[test]
    fn leading_command_words_are_reported_not_checked() {
        let r = check(
            "/usr/local/bin/kubenswrapper /usr/bin/kubelet --node-labels=a=1",
            Profile::Upstream,
        );
        assert!(r.valid);
        assert_eq!(
            r.command,
            vec!["/usr/local/bin/kubenswrapper", "/usr/bin/kubelet"]
        );
        let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(json["labels"][0], "a=1");
        assert_eq!(json["valid"], true);
    }

    /// A word exec would refuse (it reaches us on hosts with larger pages,
    /// whose limit is larger).
    #[test]
    fn a_word_over_max_arg_strlen() {
        let labels: Vec<String> = (0..7000)
            .map(|i| format!("example.com/l{i:05}=v"))
            .collect();
        let word = format!("--node-labels={}", labels.join(","));
        let r = validate_kubelet_args(&["--v=2".into(), word.clone()], Profile::Upstream);
        assert!(!r.valid);
        assert_eq!(
            r.errors,
            [format!(
                "argument 2 (--node-labels) is {} bytes with its terminating NUL, more than the \
                 131072 Linux allows one argument or environment string (MAX_ARG_STRLEN): exec \
                 would fail with E2BIG",
                word.len() + 1
            )]
        );
        let fits = format!("--node-labels={}", labels[..100].join(","));
        assert!(validate_kubelet_args(&[fits], Profile::Upstream).valid);
    }

    #[test]
    fn human_rendering() {
        let ok = check(
            "--node-labels=a=1 --register-with-taints=t:NoExecute",
            Profile::Upstream,
        );
        assert_eq!(
            ok.to_human(),
            "valid for the upstream kubelet\nlabel: a=1\ntaint: t=:NoExecute\n"
        );
        let bad = check("--node-labels=k8s.io/a", Profile::OpenShift);
        let text = bad.to_human();
        assert!(
            text.starts_with("invalid: label \"k8s.io/a\": unknown"),
            "{text}"
        );
    }
}
