//! Labels and taints from the command line, checked at render time so a bad
//! one is an error here and never a refused flag at boot.

use anyhow::{Result, bail};

use crate::node::kubelet::{Additions, Profile, parse_node_labels, parse_taints, validate_labels};

/// `--label K=V` / `--label K` and `--taint K=V:EFFECT` values.
pub fn from_cli(labels: &[String], taints: &[String], profile: Profile) -> Result<Additions> {
    let mut additions = Additions::default();
    for arg in labels {
        if arg.contains(',') {
            bail!("--label {arg:?}: give one label per --label (no commas)");
        }
        let parsed = parse_node_labels(arg);
        if parsed.is_empty() {
            bail!("--label {arg:?} is empty; write KEY=VALUE or KEY");
        }
        if let Some(e) = validate_labels(&parsed, profile).first() {
            bail!("--label {arg:?}: {e}");
        }
        if let Some(why) = parsed.iter().find_map(|(k, _)| per_node_key(k)) {
            bail!("--label {arg:?}: {why}");
        }
        for (k, v) in parsed {
            additions.labels.retain(|(old, _)| *old != k);
            additions.labels.push((k, v));
        }
    }
    for arg in taints {
        if arg.contains(',') {
            bail!("--taint {arg:?}: give one taint per --taint (no commas)");
        }
        let parsed = parse_taints(arg).map_err(|e| {
            anyhow::anyhow!("--taint {arg:?}: {e}; write KEY=VALUE:EFFECT or KEY:EFFECT")
        })?;
        if parsed.is_empty() {
            bail!("--taint {arg:?} is a removal (ends in '-'); kubelet would ignore it");
        }
        for t in parsed {
            if additions
                .taints
                .iter()
                .any(|o| o.key == t.key && o.effect == t.effect)
            {
                bail!(
                    "--taint {arg:?}: a taint with key {:?} and effect {} is given twice",
                    t.key,
                    t.effect.as_str()
                );
            }
            additions.taints.push(t);
        }
    }
    Ok(additions)
}

/// Why a label of this key cannot be given to every node alike: kubelet
/// registers each node with its own value, and takes a `--node-labels`
/// value instead of it (the real kubelet stored the flag's), so a pool
/// sharing one would break what selects on it. None for other keys.
pub fn per_node_key(key: &str) -> Option<String> {
    (key == "kubernetes.io/hostname").then(|| {
        format!(
            "{key} must name each node: kubelet sets it to the node's own hostname, and a \
             value given here would replace that on every node alike (anti-affinity, topology \
             spread and local volumes select on it); leave it out"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn accepts_and_normalises() {
        let a = from_cli(
            &s(&["node.kubernetes.io/gpu", "a=1", "a=2"]),
            &s(&["x=y:NoSchedule"]),
            Profile::Upstream,
        )
        .unwrap();
        assert_eq!(
            a.labels,
            vec![
                ("node.kubernetes.io/gpu".into(), "".into()),
                ("a".into(), "2".into())
            ]
        );
        assert_eq!(a.taints.len(), 1);
    }

    /// kubelet takes a `--node-labels` value of kubernetes.io/hostname over
    /// the node's own name (the real kubelet stored the flag's): a value
    /// given to a whole pool is refused; a key kubelet sets alike on the
    /// pool's nodes is not.
    #[test]
    fn a_label_that_must_differ_per_node_is_refused() {
        for profile in [Profile::Upstream, Profile::OpenShift] {
            let e = from_cli(&s(&["kubernetes.io/hostname=node-a"]), &[], profile).unwrap_err();
            assert!(
                e.to_string().starts_with("--label \"kubernetes.io/hostname=node-a\": kubernetes.io/hostname must name each node")
                    && e.to_string().contains("leave it out"),
                "{e}"
            );
        }
        assert!(from_cli(&s(&["kubernetes.io/os=linux"]), &[], Profile::Upstream).is_ok());
    }

    #[test]
    fn errors_name_the_input_and_the_fix() {
        let e = from_cli(
            &s(&["node-role.kubernetes.io/infra="]),
            &[],
            Profile::OpenShift,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("node-role.kubernetes.io/infra")
                && e.to_string().contains("node.kubernetes.io/")
        );
        let e = from_cli(&[], &s(&["gpu"]), Profile::Upstream).unwrap_err();
        assert!(e.to_string().contains("KEY=VALUE:EFFECT"), "{e}");
        assert!(from_cli(&s(&["a=1,b=2"]), &[], Profile::Upstream).is_err());
        assert!(
            from_cli(
                &[],
                &s(&["a:NoSchedule", "a=x:NoSchedule"]),
                Profile::Upstream
            )
            .is_err()
        );
    }
}
