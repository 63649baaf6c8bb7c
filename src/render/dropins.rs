//! The two drop-ins every target gets: the wrapper's `ExecStart` swap and the
//! environment that carries the labels and taints.

use crate::kubelet::{Additions, Profile};

pub use crate::contract::{
    ENV_DROPIN_NAME, LABELS_VAR, NFD_LABELS_VAR, RULES_VAR, TAINTS_VAR, WRAPPER_DROPIN_NAME,
    WRAPPER_PATH,
};
use crate::facts::NfdFlavour;

/// The drop-in that makes systemd run the wrapper instead of the original
/// command. `restorecon` gives the wrapper its SELinux label before it runs,
/// as MCO does for kubenswrapper; `-` skips it where it does not exist.
/// `profile` picks the kubelet label rules the wrapper validates against.
pub fn wrapper_dropin(profile: Profile) -> String {
    let args = match profile {
        Profile::Upstream => "--unit %n",
        Profile::OpenShift => "--unit %n --profile openshift",
    };
    format!(
        "# kubelet-labeler: run kubelet through the wrapper, which finds the original\n\
         # ExecStart, adds the labels and taints from {LABELS_VAR}\n\
         # and {TAINTS_VAR}, and execs it in place.\n\
         [Service]\n\
         SyslogIdentifier=kubelet\n\
         ExecStartPre=-/usr/sbin/restorecon {WRAPPER_PATH}\n\
         ExecStart=\n\
         ExecStart={WRAPPER_PATH} {args}\n\
         ExecStopPost=-{WRAPPER_PATH} {args} --stop-post\n"
    )
}

/// What the node derives labels/taints from, as the env drop-in carries it.
#[derive(Debug, Clone, Default)]
pub struct NodeRules {
    /// Rule names, for a readable comment in the drop-in.
    pub names: Vec<String>,
    /// `rules::compact` form (its charset needs no escaping in quotes).
    pub compact: Option<String>,
    pub nfd_labels: Option<NfdFlavour>,
}

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
        let mut errs = crate::kubelet::labels::label_key_errors(k);
        errs.extend(crate::kubelet::labels::label_value_errors(v));
        if let Some(e) = errs.first() {
            anyhow::bail!("label {k}={v}: {e}");
        }
    }
    for t in &additions.taints {
        if crate::kubelet::parse_taints(&t.to_string()).as_deref() != Ok(std::slice::from_ref(t)) {
            anyhow::bail!("taint {t}: kubelet would not read it back unchanged");
        }
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

/// The env drop-in with node rules and the NFD label flavour too. Every
/// value is checked here, so no caller can write a line systemd would read
/// differently.
pub fn env_dropin_with_rules(additions: &Additions, rules: &NodeRules) -> anyhow::Result<String> {
    check_for_environment(additions, rules)?;
    let labels: Vec<String> = additions
        .labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let taints: Vec<String> = additions.taints.iter().map(|t| t.to_string()).collect();
    let mut out = String::from(
        "# kubelet-labeler: labels and taints this node registers with. kubelet\n\
         # applies them only when it creates the Node object (first registration).\n\
         [Service]\n",
    );
    if !labels.is_empty() {
        out += &format!("Environment=\"{LABELS_VAR}={}\"\n", labels.join(","));
    }
    if !taints.is_empty() {
        out += &format!("Environment=\"{TAINTS_VAR}={}\"\n", taints.join(","));
    }
    if let Some(compact) = &rules.compact {
        out += "# Node rules (NodeFeatureRule), evaluated on this node's hardware at each\n";
        out += &format!("# kubelet start: {}\n", rules.names.join(", "));
        out += &format!("Environment=\"{RULES_VAR}={compact}\"\n");
    }
    if let Some(f) = rules.nfd_labels {
        let name = match f {
            NfdFlavour::Upstream => "upstream",
            NfdFlavour::OpenShift => "openshift",
        };
        out += &format!("# The labels NFD's built-in sources ({name}) would write.\n");
        out += &format!("Environment=\"{NFD_LABELS_VAR}={name}\"\n");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet::{Taint, TaintEffect};
    use std::path::PathBuf;

    fn example_additions() -> Additions {
        Additions {
            labels: vec![("node.kubernetes.io/worker-rwn".into(), String::new())],
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
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("units/kubelet.service.d");
        let expected = [
            (
                WRAPPER_DROPIN_NAME.to_string(),
                wrapper_dropin(Profile::Upstream),
            ),
            (
                format!("{ENV_DROPIN_NAME}.example"),
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

    #[test]
    fn wrapper_dropin_resets_execstart_before_setting_it() {
        let text = wrapper_dropin(Profile::OpenShift);
        assert!(text.contains("--profile openshift --stop-post"));
        let reset = text.find("ExecStart=\n").unwrap();
        let set = text.find(&format!("ExecStart={WRAPPER_PATH}")).unwrap();
        assert!(reset < set);
        assert!(text.contains("SyslogIdentifier=kubelet\n"));
    }
}
