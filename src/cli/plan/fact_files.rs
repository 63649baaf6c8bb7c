//! The node files the wrapper reads its facts from at kubelet's start
//! (review 41 r41a F2): NFD's features.d, where the local source's
//! `local.label` and `local.feature` come from. Plan evaluates a pool's
//! rules on the fleet's facts as they were gathered, never on what a pull
//! request writes there: a MachineConfig writing features.d can turn a
//! rule's taint off on every node that registers after it, while "a node
//! registering now" shows the taint. Where the pool's rules read those
//! features (either side), a change there is refused whatever the policy
//! says. The node's other fact files are the OS's (`/etc/os-release` is
//! kubelet's `EnvironmentFile=`, `kubelet_unit`'s).

use std::collections::BTreeMap;
use std::ffi::OsString;

use anyhow::{Result, bail};

use super::Side;
use crate::cli::render::merge_inputs::{above, at_or_in, node_path};
use crate::node::contract::{ROLE_RULES_VAR, RULES_VAR};
use crate::node::facts::FEATURES_DIR;
use crate::node::rules::budget::LOCAL_FEATURES;

/// Whether `path` (in any spelling) is features.d, in it, or above it.
fn fact_path(path: &str) -> bool {
    let path = node_path(path);
    let path = path.as_str();
    at_or_in(path, FEATURES_DIR) || above(path, FEATURES_DIR)
}

/// The first rule of `env`'s (the pool's and the role's) that reads a
/// feature of features.d; a rule set that cannot be read counts as one.
fn local_reader(env: &[(OsString, OsString)]) -> Option<String> {
    for var in [ROLE_RULES_VAR, RULES_VAR] {
        let Some((_, text)) = env.iter().rfind(|(k, _)| k == var) else {
            continue;
        };
        let rules = match crate::node::rules::compact::decode(&text.to_string_lossy()) {
            Ok(rules) => rules,
            Err(_) => return Some(format!("the rules of {var}")),
        };
        let found = rules.iter().find(|r| {
            (r.match_features.iter())
                .chain(r.match_any.iter().flatten())
                .any(|t| LOCAL_FEATURES.contains(&t.feature.as_str()))
        });
        if let Some(r) = found {
            return Some(format!(
                "rule {:?}",
                crate::cli::output::shortened(&r.name, 200, 40)
            ));
        }
    }
    None
}

pub fn check((from, to): (&Side, &Side), pool: &str) -> Result<()> {
    let (before, after) = (&from.cache[pool], &to.cache[pool]);
    judge(
        (&from.render.name, &to.render.name),
        pool,
        (&before.files, &after.files),
        local_reader(&after.env).or_else(|| local_reader(&before.env)),
    )
}

fn judge(
    (from, to): (&str, &str),
    pool: &str,
    (before, after): (&BTreeMap<String, u64>, &BTreeMap<String, u64>),
    reader: Option<String>,
) -> Result<()> {
    let Some(reader) = reader else {
        return Ok(());
    };
    let changed = (before.keys().chain(after.keys()))
        .find(|p| fact_path(p) && before.get(*p) != after.get(*p));
    if let Some(path) = changed {
        bail!(
            "pool {pool}: {path} changes from {from} to {to}, and {reader} reads what the wrapper \
             finds in {FEATURES_DIR} at kubelet's start (local.label, local.feature): the labels \
             and taints of a node registering after the change follow that file, which plan \
             does not evaluate (it evaluates the fleet's facts); write the label with the \
             pool's --label or rules instead, or plan the change without it and review it by \
             hand"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_d_and_above_are_fact_paths() {
        for (path, is) in [
            ("/etc/kubernetes/node-feature-discovery/features.d", true),
            (
                "/etc/kubernetes/node-feature-discovery/features.d/acme",
                true,
            ),
            ("/etc/kubernetes/node-feature-discovery", true),
            ("/etc/kubernetes", true),
            ("/etc/kubernetes/node-feature-discovery/features.dx", false),
            ("/etc/kubernetes/kubelet.conf", false),
            ("/", false),
        ] {
            assert_eq!(fact_path(path), is, "{path}");
        }
    }

    /// Review 41 r41a F2: a change in features.d is refused where a rule
    /// reads local features, and left to the policy where none does.
    #[test]
    fn a_change_in_features_d_is_refused_where_a_rule_reads_it() {
        let before = BTreeMap::new();
        let path = format!("{FEATURES_DIR}/acme");
        let after = BTreeMap::from([(path.clone(), 1)]);
        let err = judge(
            ("base", "pr"),
            "gpu",
            (&before, &after),
            Some("rule \"q\"".into()),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(&path) && err.contains("rule \"q\" reads"),
            "{err}"
        );
        judge(("base", "pr"), "gpu", (&before, &after), None).unwrap();
        judge(("base", "pr"), "gpu", (&after, &after), Some("r".into())).unwrap();
    }
}
