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
    )?;
    // Review 46 r46a F2: `nosmt` takes the sibling threads' topology away,
    // and with it `cpu.topology`: a rule on `socket_count` gave no taint on
    // nodes registering after the change, while plan showed it kept.
    let mut read = super::side::features_read(&after.env);
    read.extend(super::side::features_read(&before.env));
    let (was, is) = (kargs(from, &before.configs), kargs(to, &after.configs));
    let changed =
        (was.iter().filter(|a| !is.contains(a))).chain(is.iter().filter(|a| !was.contains(a)));
    for arg in changed {
        if let Some(f) = karg_features(arg).iter().find(|f| read.contains(**f)) {
            bail!(
                "pool {pool}: kernel argument {arg} is in one of {} and {} only, and it changes \
                 what the node reads of {f}, which the pool's rules or NFD labels read: the \
                 labels and taints of a node registering after the change follow the new \
                 facts, which plan does not evaluate (it evaluates the fleet's); plan the change \
                 without it, and review it by hand",
                from.render.name,
                to.render.name
            );
        }
    }
    Ok(())
}

/// The kernel arguments the render's MachineConfigs `configs` give.
fn kargs(side: &Side, configs: &[usize]) -> Vec<String> {
    let mut out = Vec::new();
    for mc in configs.iter().map(|&i| &side.render.machineconfigs[i]) {
        for at in [
            "/spec/kernelArguments",
            "/spec/config/kernelArguments/shouldExist",
        ] {
            let list = mc.pointer(at).and_then(serde_json::Value::as_array);
            (list.into_iter().flatten())
                .filter_map(serde_json::Value::as_str)
                .for_each(|e| out.extend(super::kargs::split_kargs(e)));
        }
    }
    out
}

/// The features (NFD's names) a kernel argument plan takes changes on the
/// node: the threads it brings up, the drivers it picks, what it reserves.
fn karg_features(arg: &str) -> &'static [&'static str] {
    let arg = arg.replace('"', "");
    let key = arg.split('=').next().unwrap_or_default().replace('-', "_");
    match key.as_str() {
        "nosmt" | "mitigations" | "maxcpus" | "nr_cpus" | "possible_cpus" => &["cpu.topology"],
        "hugepages" | "hugepagesz" | "default_hugepagesz" => &["memory.hugepages"],
        "idle" | "intel_idle.max_cstate" | "processor.max_cstate" => &["cpu.cstate"],
        "intel_pstate" | "amd_pstate" => &["cpu.pstate"],
        "intel_iommu" | "amd_iommu" | "iommu" | "pci" => &["pci.device"],
        "selinux" | "enforcing" => &["kernel.selinux"],
        "tsx" => &["cpu.cpuid"],
        _ => &[],
    }
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

    #[test]
    fn kernel_arguments_name_the_features_they_change() {
        for (arg, f) in [
            ("nosmt", "cpu.topology"),
            ("\"nosmt=force\"", "cpu.topology"),
            ("mitigations=auto,nosmt", "cpu.topology"),
            ("hugepages=16", "memory.hugepages"),
            ("intel_pstate=disable", "cpu.pstate"),
            ("intel_iommu=on", "pci.device"),
            ("selinux=0", "kernel.selinux"),
            ("tsx=off", "cpu.cpuid"),
        ] {
            assert_eq!(karg_features(arg), [f], "{arg}");
        }
        assert!(karg_features("nohz_full=2-5").is_empty());
    }
}
