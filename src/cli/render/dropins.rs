//! The two drop-ins every target gets: the wrapper's `ExecStart` swap and the
//! environment that carries the labels and taints.

use crate::node::kubelet::Additions;

use super::RENDERED_BY;
use super::arch::Arch;
pub use super::generator::{generator, wrapper_dropin, wrapper_dropin_at};
pub use crate::node::contract::{
    ENV_DROPIN_NAME, GENERATOR_PATH, LABELS_VAR, NFD_LABELS_VAR, RULES_VAR, TAINTS_VAR,
    WRAPPER_DROPIN_NAME, WRAPPER_PATH,
};
use crate::node::facts::NfdFlavour;
use crate::node::rules::shown_name;

/// Where the wrapper for `arch` lives on a node.
pub fn wrapper_path(arch: Arch) -> String {
    format!("{WRAPPER_PATH}.{}", arch.name())
}

/// What the node derives labels/taints from, as the env drop-in carries it.
#[derive(Debug, Clone, Default)]
pub struct NodeRules {
    /// Rule names, for a readable comment in the drop-in (as
    /// [`shown_name`] shows them: NFD takes any string).
    pub names: Vec<String>,
    /// `rules::compact` form (its charset needs no escaping in quotes).
    pub compact: Option<String>,
    pub nfd_labels: Option<NfdFlavour>,
    /// `OBJECT/RULE` of the rules left to the cluster's NFD
    /// (`--leave-to-nfd`), recorded in a comment line each
    /// ([`LEFT_TO_NFD_MARK`]) so that `explain` of the rendered tree (and
    /// of the MCO's rendered config, which keeps file contents) shows them.
    pub left_to_nfd: Vec<String>,
}

pub use super::LEFT_TO_NFD_MARK;

impl NodeRules {
    pub fn is_empty(&self) -> bool {
        self.compact.is_none() && self.nfd_labels.is_none()
    }
}

/// The drop-in that carries the labels and taints.
pub fn env_dropin(additions: &Additions) -> String {
    env_dropin_with_rules(additions, &NodeRules::default())
        .expect("labels and taints validated by the caller")
}

/// Refuse what would not survive an `Environment="..."` line unchanged:
/// kubelet's label and taint syntax allows none of `"`, `\`, `%`, `$`, space.
fn check_for_environment(additions: &Additions, rules: &NodeRules) -> anyhow::Result<()> {
    for (k, v) in &additions.labels {
        let mut errs = crate::node::kubelet::labels::label_key_errors(k);
        errs.extend(crate::node::kubelet::labels::label_value_errors(v));
        if let Some(e) = errs.first() {
            anyhow::bail!("label {k}={v}: {e}");
        }
    }
    for t in &additions.taints {
        if crate::node::kubelet::parse_taints(&t.to_string()).as_deref()
            != Ok(std::slice::from_ref(t))
        {
            anyhow::bail!("taint {t}: kubelet would not read it back unchanged");
        }
    }
    // systemd execs the service with these variables, and the wrapper
    // turns them into one flag word each: both under the kernel's limit.
    let (labels, taints) = words(additions);
    for (var, items, what) in [
        (LABELS_VAR, labels, "labels"),
        (TAINTS_VAR, taints, "taints"),
    ] {
        let len = var.len() + 1 + items.iter().map(|i| i.len() + 1).sum::<usize>();
        let name = format!("{var} ({} {what})", items.len());
        if let Some(why) = crate::node::kubelet::arg_limit::too_long(&name, len.saturating_sub(1)) {
            anyhow::bail!("{why}; give fewer or shorter {what}");
        }
    }
    // systemd stops reading a unit file at a line of 1 MiB or more (what
    // follows, the NFD label set's line included, is silently not set): the
    // record of the left rules stays as small as the rules' own line.
    let record: usize = rules
        .left_to_nfd
        .iter()
        .map(|id| LEFT_TO_NFD_MARK.len() + shown_name(id).len() + 1)
        .sum();
    if record > super::node_rules::MAX_COMPACT {
        anyhow::bail!(
            "--leave-to-nfd: the names of the rules left to the cluster's NFD take {record} \
             bytes in the env drop-in's record, over {} bytes; shorten the rule names",
            super::node_rules::MAX_COMPACT
        );
    }
    let unsafe_char =
        |c: char| !c.is_ascii_graphic() || matches!(c, '"' | '\\' | '%' | '$' | '\'' | ';');
    if let Some(c) = rules.compact.as_deref().filter(|c| c.contains(unsafe_char)) {
        anyhow::bail!(
            "the compact rules hold a character an Environment= line would change ({c:.40}...)"
        );
    }
    Ok(())
}

/// The labels (`key=value`) and taints as the variables list them.
fn words(additions: &Additions) -> (Vec<String>, Vec<String>) {
    let labels = additions
        .labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let taints = additions.taints.iter().map(|t| t.to_string()).collect();
    (labels, taints)
}

/// The env drop-in with node rules and the NFD label flavour too. Every
/// value is checked here, so no caller can write a line systemd would read
/// differently.
pub fn env_dropin_with_rules(additions: &Additions, rules: &NodeRules) -> anyhow::Result<String> {
    env_dropin_in(
        additions,
        rules,
        [LABELS_VAR, TAINTS_VAR, RULES_VAR, NFD_LABELS_VAR],
    )
}

/// The env drop-in of a built-in role's MachineConfigs: the same lines in
/// the role layer's variables (`contract::ROLE_LAYER`), so that a custom
/// pool's drop-in adds to them.
pub fn role_env_dropin(additions: &Additions, rules: &NodeRules) -> anyhow::Result<String> {
    use crate::node::contract::ROLE_LAYER;
    env_dropin_in(additions, rules, ROLE_LAYER.map(|(role, _)| role))
}

/// The env drop-in with its variables named `[labels, taints, rules, NFD
/// label set]`.
fn env_dropin_in(
    additions: &Additions,
    rules: &NodeRules,
    [labels_var, taints_var, rules_var, nfd_var]: [&str; 4],
) -> anyhow::Result<String> {
    check_for_environment(additions, rules)?;
    let (labels, taints) = words(additions);
    let mut out = format!(
        "# {RENDERED_BY}: labels and taints this node registers with. kubelet\n\
         # applies them only when it creates the Node object (first registration).\n\
         [Service]\n",
    );
    if !labels.is_empty() {
        out += &format!("Environment=\"{labels_var}={}\"\n", labels.join(","));
    }
    if !taints.is_empty() {
        out += &format!("Environment=\"{taints_var}={}\"\n", taints.join(","));
    }
    if let Some(compact) = &rules.compact {
        out += "# Node rules (NodeFeatureRule), evaluated on this node's hardware at each\n";
        let names: Vec<_> = rules.names.iter().map(|n| shown_name(n)).collect();
        out += &format!("# kubelet start: {}\n", names.join(", "));
        out += &format!("Environment=\"{rules_var}={compact}\"\n");
        for id in &rules.left_to_nfd {
            out += &format!("{LEFT_TO_NFD_MARK}{}\n", shown_name(id));
        }
    }
    if let Some(f) = rules.nfd_labels {
        let name = match f {
            NfdFlavour::Upstream => "upstream",
            NfdFlavour::OpenShift => "openshift",
        };
        out += &format!("# The labels NFD's built-in sources ({name}) would write.\n");
        out += &format!("Environment=\"{nfd_var}={name}\"\n");
    }
    Ok(out)
}

/// Lines of our env drop-in that render did not write: comments, the
/// section and our four variables are ours; anything else is a user's edit.
pub(crate) fn foreign_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && *l != "[Service]")
        .filter(|l| {
            // One quoted assignment of ours, as render writes it.
            let assignment = l
                .strip_prefix("Environment=\"")
                .and_then(|v| v.strip_suffix('"'))
                .filter(|v| !v.contains('"'));
            !assignment.is_some_and(|a| {
                [
                    crate::node::contract::LABELS_VAR,
                    crate::node::contract::TAINTS_VAR,
                    crate::node::contract::RULES_VAR,
                    crate::node::contract::NFD_LABELS_VAR,
                    crate::node::contract::POOL_LABEL_VAR,
                ]
                .iter()
                .any(|var| a.strip_prefix(var).is_some_and(|r| r.starts_with('=')))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::kubelet::{Profile, Taint, TaintEffect};
    use std::path::PathBuf;

    /// A GitOps diff shows which release rendered each file a node gets.
    #[test]
    fn every_rendered_file_names_the_version_first() {
        let mark = format!("# {}: ", super::super::RENDERED_BY);
        let mut files = vec![
            wrapper_dropin(Profile::OpenShift),
            env_dropin(&example_additions()),
            role_env_dropin(&example_additions(), &NodeRules::default()).unwrap(),
        ];
        let generator = generator(Profile::Upstream, "kubelet.service", &[Arch::X86_64]);
        files.push(generator.strip_prefix("#!/bin/sh\n").unwrap().to_string());
        for (_, text) in
            super::super::sync_units::files(Profile::OpenShift, "kubelet.service", None)
        {
            files.push(text);
        }
        for text in files {
            assert!(text.starts_with(&mark), "{text}");
            // With the node format, as compose and explain read it back.
            assert_eq!(
                super::super::node_format::of_file(text.as_bytes()),
                Some(Some(crate::node::contract::NODE_FORMAT.to_string()))
            );
        }
    }

    fn example_additions() -> Additions {
        Additions {
            labels: vec![("node.kubernetes.io/worker-gpu".into(), String::new())],
            taints: vec![Taint {
                key: "example.com/gpu".into(),
                value: "true".into(),
                effect: TaintEffect::NoSchedule,
            }],
        }
    }

    /// `units/` ships these drop-ins as files; they must match what we render.
    /// `UPDATE_UNITS=1 cargo test` rewrites them.
    #[test]
    fn units_dir_is_current() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("units");
        let expected = [
            (
                "system-generators/kubelet-labeler".to_string(),
                generator(
                    Profile::Upstream,
                    "kubelet.service",
                    &[Arch::X86_64, Arch::Aarch64],
                ),
            ),
            (
                format!("kubelet.service.d/{ENV_DROPIN_NAME}.example"),
                env_dropin(&example_additions()),
            ),
        ];
        for (name, text) in expected {
            let path = dir.join(&name);
            if std::env::var_os("UPDATE_UNITS").is_some() {
                std::fs::write(&path, &text).unwrap();
            }
            let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
            assert_eq!(
                on_disk,
                text,
                "{} is stale; run UPDATE_UNITS=1 cargo test",
                path.display()
            );
        }
    }

    /// A rule name long enough to end systemd's reading of the drop-in
    /// (a line of 1 MiB or more) is refused, not recorded.
    #[test]
    fn a_huge_left_rule_name_is_refused() {
        let rules = |name: String| NodeRules {
            names: vec!["kept".into()],
            compact: Some("KLR5,0".into()),
            nfd_labels: Some(NfdFlavour::OpenShift),
            left_to_nfd: vec![format!("obj/{name}")],
        };
        let e = env_dropin_with_rules(&example_additions(), &rules("x".repeat(2 << 20)))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--leave-to-nfd") && e.contains("shorten"), "{e}");
        let text = env_dropin_with_rules(&example_additions(), &rules("x".repeat(1000))).unwrap();
        assert!(text.contains(&"x".repeat(1000)), "{text}");
    }

    /// NFD takes any string as a rule name; the comment that lists them
    /// must stay one comment line whatever they hold (the real systemd's
    /// view is tests/rules_systemd_e2e.rs).
    #[test]
    fn rule_names_stay_inside_their_comment() {
        let hostile = [
            "gpu\nExecStart=/bin/evil",
            "trailing\n",
            "x\ny\\",
            "cr\rEnvironment=A=b",
            "nul\0[Unit]",
            "ls\u{2028}x",
            "a, b",
            "back\\",
            " ",
            "",
            "plain-name",
            "my sample rule",
        ];
        let rules = NodeRules {
            names: hostile.iter().map(|s| s.to_string()).collect(),
            compact: Some("KLR5,0".into()),
            nfd_labels: None,
            left_to_nfd: hostile.iter().map(|s| format!("obj/{s}")).collect(),
        };
        let text = env_dropin_with_rules(&example_additions(), &rules).unwrap();
        let comment = text
            .lines()
            .find(|l| l.starts_with("# kubelet start: "))
            .unwrap();
        assert_eq!(
            comment,
            "# kubelet start: \"gpu\\nExecStart=/bin/evil\", \"trailing\\n\", \"x\\ny\\\\\", \
             \"cr\\rEnvironment=A=b\", \"nul\\0[Unit]\", \"ls\\u{2028}x\", \"a, b\", \"back\\\\\", \
             \" \", \"\", plain-name, my sample rule"
        );
        let parsed = crate::node::unit::syntax::parse(text.as_bytes(), "env.conf");
        let got: Vec<(&str, &str)> = parsed
            .assignments
            .iter()
            .map(|a| (a.key.as_str(), a.value.as_str()))
            .collect();
        assert_eq!(got.len(), 3, "{got:?}");
        // The record of the rules left to NFD: one comment line each.
        let left: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix(LEFT_TO_NFD_MARK))
            .collect();
        assert_eq!(left.len(), hostile.len(), "{text}");
        assert_eq!(left[10], "obj/plain-name");
        assert_eq!(left[0], "\"obj/gpu\\nExecStart=/bin/evil\"");
        assert!(got.iter().all(|(k, _)| *k == "Environment"), "{got:?}");
        assert_eq!(got[2].1, format!("\"{RULES_VAR}=KLR5,0\""));
        assert!(parsed.fatal.is_none() && parsed.warnings.is_empty());
    }

    #[test]
    fn env_dropin_leaves_out_empty_variables() {
        let only_labels = Additions {
            labels: vec![("a".into(), "b".into())],
            taints: vec![],
        };
        let text = env_dropin(&only_labels);
        assert!(text.contains(&format!("Environment=\"{LABELS_VAR}=a=b\"\n")));
        assert!(!text.contains(TAINTS_VAR));
    }
}
