//! Which pools of a fleet ISO some machine can install into. The selector
//! chooses by the labels a machine has before it is in any pool: kubelet's
//! and the MCO's (arch, os, the worker role, os_id), the rules' and NFD's
//! built-in ones. A pool's own static labels come only once a node is in
//! the pool, so they never choose it. A pool whose nodeSelector no such
//! label set matches is never chosen: every machine meant for it installs
//! elsewhere (or nowhere), which `iso fleet` refuses up front.
//!
//! Values not known before the machine is seen (a rule's `@feature` value,
//! a labelsTemplate, a CPU model) count as any value: such a pool may be
//! reachable, and is not refused.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};

use crate::cli::render::arch::Arch;
use crate::node::fleet::{Pool, PoolKind, Requirement, Table, WORKER_ROLE_LABEL};

/// A label's possible values.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Values {
    Any,
    Only(BTreeSet<String>),
}

/// Where a label can come from, with its values.
#[derive(Debug, Clone)]
struct Source {
    values: Values,
    /// On every machine (kubelet's and the MCO's labels).
    always: bool,
    /// For messages: `rule "gpu-box"`, `kubelet`, ...
    from: String,
}

/// The labels a machine can have when the selector runs.
struct Possible {
    keys: BTreeMap<String, Vec<Source>>,
    /// Rules whose labelsTemplate may give any label NFD allows.
    templates: Vec<String>,
    /// `--nfd-labels` is set: NFD's built-in labels count.
    nfd: bool,
    /// Rule labels NFD drops (never on a node), with why, by key.
    dropped: BTreeMap<String, String>,
}

/// Kubernetes' name for an architecture (`kubernetes.io/arch`).
fn go_arch(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "amd64",
        Arch::Aarch64 => "arm64",
        Arch::Ppc64le => "ppc64le",
        Arch::S390x => "s390x",
    }
}

/// NFD's default namespace rules for a label key (see `rules::evaluate_node`):
/// None when nfd-master keeps it, else why it drops it.
pub(crate) fn nfd_refuses(key: &str) -> Option<String> {
    let errs = crate::node::kubelet::labels::label_key_errors(key);
    if !errs.is_empty() {
        return Some(format!("not a valid label key ({})", errs.join("; ")));
    }
    let Some((ns, _)) = key.split_once('/') else {
        return Some("NFD refuses label keys without a prefix".into());
    };
    let kube = ns == "kubernetes.io" || ns.ends_with(".kubernetes.io");
    let allowed = ["feature.node.kubernetes.io", "profile.node.kubernetes.io"]
        .iter()
        .any(|a| ns == *a || ns.strip_suffix(a).is_some_and(|p| p.ends_with('.')));
    (kube && !allowed).then(|| format!("NFD refuses labels in the namespace {ns}"))
}

/// A rule's label key as NFD writes it (`addNsToMapKeys`).
pub(crate) fn prefixed(key: &str) -> String {
    let ns = crate::node::rules::DEFAULT_LABEL_PREFIX.trim_end_matches('/');
    if key.contains('/') {
        return key.to_string();
    }
    match key {
        "" | "." => ns.to_string(),
        ".." => ".".to_string(),
        _ => format!("{ns}/{key}"),
    }
}

impl Possible {
    fn of(table: &Table, arch: Option<Arch>) -> Result<Possible> {
        let mut p = Possible {
            keys: BTreeMap::new(),
            templates: Vec::new(),
            nfd: false,
            dropped: BTreeMap::new(),
        };
        let fixed = |v: &str| Values::Only([v.to_string()].into());
        let arch_values = arch.map_or(Values::Any, |a| fixed(go_arch(a)));
        for (key, values) in [
            ("kubernetes.io/arch", arch_values.clone()),
            ("beta.kubernetes.io/arch", arch_values),
            ("kubernetes.io/os", fixed("linux")),
            ("beta.kubernetes.io/os", fixed("linux")),
            (WORKER_ROLE_LABEL, fixed("")),
            // ${ID} of the live ISO's os-release.
            ("node.openshift.io/os_id", Values::Any),
        ] {
            p.add(key, values, true, "kubelet and the MCO");
        }
        for (var, value) in &table.env {
            // The role's layer counts as the pool's: the wrapper derives both.
            use crate::node::contract::{
                NFD_LABELS_VAR, ROLE_NFD_LABELS_VAR, ROLE_RULES_VAR, RULES_VAR,
            };
            if var == NFD_LABELS_VAR || var == ROLE_NFD_LABELS_VAR {
                p.nfd = true;
            } else if var == RULES_VAR || var == ROLE_RULES_VAR {
                let rules = match crate::node::rules::compact::decode(value) {
                    Ok(r) => r,
                    Err(e) => bail!("the node rules cannot be read: {e}"),
                };
                for rule in rules {
                    let from = format!("rule {:?}", rule.name);
                    for (k, v) in &rule.labels {
                        let key = prefixed(k);
                        if let Some(why) = nfd_refuses(&key) {
                            p.dropped.insert(key, format!("{from} gives it, but {why}"));
                            continue;
                        }
                        let values = if v.starts_with('@') {
                            Values::Any
                        } else if crate::node::kubelet::labels::label_value_errors(v).is_empty() {
                            fixed(v)
                        } else {
                            continue;
                        };
                        p.add(&key, values, false, &from);
                    }
                    if rule.labels_template.is_some() {
                        p.templates.push(from);
                    }
                }
            }
        }
        Ok(p)
    }

    fn add(&mut self, key: &str, values: Values, always: bool, from: &str) {
        self.keys.entry(key.to_string()).or_default().push(Source {
            values,
            always,
            from: from.to_string(),
        });
    }

    /// Every source of `key`: the known ones, NFD's built-in labels, and
    /// the templates (any label NFD keeps).
    fn sources(&self, key: &str) -> Vec<Source> {
        let mut out = self.keys.get(key).cloned().unwrap_or_default();
        if self.nfd
            && let Some(v) = crate::node::facts::builtin_label_value(key)
        {
            out.push(Source {
                values: v.map_or(Values::Any, |v| Values::Only([v.to_string()].into())),
                always: false,
                from: "NFD's built-in labels".into(),
            });
        }
        if nfd_refuses(key).is_none() {
            for t in &self.templates {
                out.push(Source {
                    values: Values::Any,
                    always: false,
                    from: format!("the labelsTemplate of {t}"),
                });
            }
        }
        out
    }

    /// The one value every machine has for `key`, if there is one.
    fn always_fixed(&self, key: &str) -> Option<String> {
        self.sources(key).iter().find_map(|s| match &s.values {
            Values::Only(v) if s.always && v.len() == 1 => v.iter().next().cloned(),
            _ => None,
        })
    }

    fn always_present(&self, key: &str) -> bool {
        self.sources(key).iter().any(|s| s.always)
    }

    /// Why no machine meets `r`, if none can.
    fn unmet(&self, r: &Requirement) -> Option<String> {
        let key = match r {
            Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Exists(k)
            | Requirement::DoesNotExist(k) => k,
        };
        let sources = self.sources(key);
        match r {
            Requirement::In(_, wanted) => {
                let can = sources.iter().any(|s| match &s.values {
                    Values::Any => true,
                    Values::Only(v) => wanted.iter().any(|w| v.contains(w)),
                });
                (!can).then(|| self.why_not(key, &sources))
            }
            Requirement::Exists(_) => sources.is_empty().then(|| self.why_not(key, &sources)),
            Requirement::NotIn(_, unwanted) => {
                let v = self.always_fixed(key)?;
                unwanted
                    .contains(&v)
                    .then(|| format!("every machine has {key}={v} (from kubelet and the MCO)"))
            }
            Requirement::DoesNotExist(_) => self
                .always_present(key)
                .then(|| format!("every machine has {key} (from kubelet and the MCO)")),
        }
    }

    fn why_not(&self, key: &str, sources: &[Source]) -> String {
        if sources.is_empty() {
            let mut why = format!("no machine has {key} when the install chooses its pool");
            if let Some(d) = self.dropped.get(key) {
                why += &format!(" ({d})");
            } else if let Some(r) = nfd_refuses(key) {
                why += &format!(" ({r}, so no rule can give it)");
            }
            return why;
        }
        let mut given: Vec<String> = Vec::new();
        for s in sources {
            if let Values::Only(v) = &s.values {
                for v in v {
                    given.push(format!("{key}={v} ({})", s.from));
                }
            }
        }
        format!("machines get only {}", given.join(", "))
    }

    /// What the rules and NFD can give, for the hint.
    fn offer(&self) -> String {
        let mut items: Vec<String> = Vec::new();
        for (k, sources) in &self.keys {
            for s in sources.iter().filter(|s| !s.always) {
                match &s.values {
                    Values::Any => items.push(format!("{k}=<any value>")),
                    Values::Only(v) => items.extend(v.iter().map(|v| format!("{k}={v}"))),
                }
            }
        }
        items.dedup();
        if self.nfd {
            items.push(
                "NFD's built-in feature.node.kubernetes.io/ labels (pci-<vendor>.present=true, \
                 cpu-cpuid.<flag>=true, memory-numa=true, ...)"
                    .into(),
            );
        }
        if !self.templates.is_empty() {
            items.push(format!("what {} write", self.templates.join(", ")));
        }
        if items.is_empty() {
            "the rules give no labels".into()
        } else {
            format!("the rules can give: {}", items.join(", "))
        }
    }
}

/// A custom pool whose nodeSelector every machine matches, if any.
fn matched_by_all<'a>(pools: &'a [Pool], p: &Possible) -> Option<&'a Pool> {
    pools.iter().find(|pool| {
        pool.kind == PoolKind::Custom
            && !pool.selector.is_empty()
            && pool.selector.iter().all(|r| match r {
                Requirement::In(k, vs) => p.always_fixed(k).is_some_and(|v| vs.contains(&v)),
                Requirement::Exists(k) => p.always_present(k),
                Requirement::NotIn(k, vs) => match p.always_fixed(k) {
                    Some(v) => !vs.contains(&v),
                    None => p.sources(k).is_empty(),
                },
                Requirement::DoesNotExist(k) => p.sources(k).is_empty(),
            })
    })
}

/// Refuse a pool no machine can install into, naming the pool, the label
/// and what the rules can give.
pub fn check(table: &Table, arch: Option<Arch>) -> Result<()> {
    let p = Possible::of(table, arch)?;
    for pool in &table.pools {
        for r in &pool.selector {
            let Some(why) = p.unmet(r) else { continue };
            let own = pool.static_labels.iter().any(|(k, _)| {
                matches!(r, Requirement::In(key, _) | Requirement::Exists(key) if key == k)
            });
            let own = if own {
                format!(
                    "; pool {}'s own MachineConfigs give that label, but a node gets it only \
                     once it is in the pool, never before the install chooses",
                    pool.name
                )
            } else {
                String::new()
            };
            bail!(
                "pool {name}: no machine can be installed into it: its nodeSelector needs {}, and \
                 {why}{own}. Select pool {name} on a label and value the rules give \
                 (render machineconfig --pool {name} --pool-label KEY=VALUE), then give its new \
                 MachineConfigPool here; {}",
                r.describe(),
                p.offer(),
                name = pool.name,
            );
        }
    }
    if let Some(all) = matched_by_all(&table.pools, &p)
        && let Some(pool) = table.pools.iter().find(|q| q.name != all.name)
    {
        let why = match pool.kind {
            PoolKind::Worker => "one custom pool beats worker",
            PoolKind::Custom => "the MCO refuses a node in two custom pools",
        };
        bail!(
            "pool {}: no machine can be installed into it: every machine matches pool {}'s \
                 nodeSelector ({}), and {why}. Select pool {} on a label the rules give",
            pool.name,
            all.name,
            all.describe_selector(),
            all.name
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::rules::Rule;

    fn is(k: &str, v: &str) -> Requirement {
        Requirement::In(k.into(), vec![v.into()])
    }

    fn pool(name: &str, sel: Vec<Requirement>) -> Pool {
        Pool {
            name: name.into(),
            kind: if name == "worker" {
                PoolKind::Worker
            } else {
                PoolKind::Custom
            },
            config: format!("{name}.ign"),
            selector: sel,
            static_labels: Vec::new(),
            device: None,
        }
    }

    fn table(rules: &[Rule], nfd: bool, pools: Vec<Pool>) -> Table {
        let mut env = vec![(
            crate::node::contract::RULES_VAR.to_string(),
            crate::node::rules::compact::encode(rules),
        )];
        if nfd {
            env.push((
                crate::node::contract::NFD_LABELS_VAR.to_string(),
                "openshift".into(),
            ));
        }
        Table { env, pools }
    }

    fn gpu_rule() -> Rule {
        Rule {
            name: "gpu-box".into(),
            labels: vec![("gpu".into(), "true".into())],
            ..Default::default()
        }
    }

    fn err(t: &Table) -> String {
        format!("{:#}", check(t, Some(Arch::X86_64)).unwrap_err())
    }

    #[test]
    fn a_pool_on_a_label_no_rule_gives_is_refused() {
        let worker = pool("worker", vec![is(WORKER_ROLE_LABEL, "")]);
        // The README's default pool label: the pool's own static label.
        let mut p = pool("worker-gpu", vec![is("node.kubernetes.io/worker-gpu", "")]);
        p.static_labels = vec![("node.kubernetes.io/worker-gpu".into(), String::new())];
        let e = err(&table(&[gpu_rule()], true, vec![p, worker.clone()]));
        assert!(
            e.starts_with("pool worker-gpu: no machine can be installed into it")
                && e.contains("needs node.kubernetes.io/worker-gpu=")
                && e.contains("NFD refuses labels in the namespace node.kubernetes.io")
                && e.contains("pool worker-gpu's own MachineConfigs give that label")
                && e.contains("feature.node.kubernetes.io/gpu=true"),
            "{e}"
        );
        // A value the rule never gives.
        let p = pool(
            "worker-gpu",
            vec![is("feature.node.kubernetes.io/gpu", "yes")],
        );
        let e = err(&table(&[gpu_rule()], true, vec![p, worker.clone()]));
        assert!(
            e.contains("needs feature.node.kubernetes.io/gpu=yes")
                && e.contains(
                    "machines get only feature.node.kubernetes.io/gpu=true (rule \"gpu-box\")"
                ),
            "{e}"
        );
        // The value it gives, or Exists: reachable.
        for sel in [
            is("feature.node.kubernetes.io/gpu", "true"),
            Requirement::Exists("feature.node.kubernetes.io/gpu".into()),
            Requirement::In(
                "feature.node.kubernetes.io/gpu".into(),
                vec!["yes".into(), "true".into()],
            ),
        ] {
            let p = pool("worker-gpu", vec![sel.clone()]);
            check(
                &table(&[gpu_rule()], false, vec![p, worker.clone()]),
                Some(Arch::X86_64),
            )
            .unwrap_or_else(|e| panic!("{sel:?}: {e:#}"));
        }
    }

    #[test]
    fn nfd_templates_and_dynamic_values_count() {
        let worker = pool("worker", vec![is(WORKER_ROLE_LABEL, "")]);
        let numa = pool(
            "worker-numa",
            vec![is("feature.node.kubernetes.io/memory-numa", "true")],
        );
        // Only with NFD's built-in labels.
        check(&table(&[], true, vec![numa.clone(), worker.clone()]), None).unwrap();
        let e = err(&table(&[], false, vec![numa, worker.clone()]));
        assert!(
            e.contains("no machine has feature.node.kubernetes.io/memory-numa"),
            "{e}"
        );
        let no = pool(
            "worker-numa",
            vec![is("feature.node.kubernetes.io/memory-numa", "false")],
        );
        assert!(err(&table(&[], true, vec![no, worker.clone()])).contains("NFD's built-in labels"));
        // A template or an `@` value may give anything NFD keeps.
        let any = pool("worker-x", vec![is("example.com/x", "whatever")]);
        let templ = Rule {
            name: "t".into(),
            labels_template: Some("x=y".into()),
            ..Default::default()
        };
        check(
            &table(
                std::slice::from_ref(&templ),
                false,
                vec![any.clone(), worker.clone()],
            ),
            None,
        )
        .unwrap();
        let dynamic = Rule {
            name: "d".into(),
            labels: vec![("example.com/x".into(), "@cpu.model.family".into())],
            ..Default::default()
        };
        check(&table(&[dynamic], false, vec![any, worker.clone()]), None).unwrap();
        // Not in a namespace NFD refuses, template or not.
        let kube = pool("worker-k", vec![is("node.kubernetes.io/k", "")]);
        assert!(err(&table(&[templ], false, vec![kube, worker])).contains("NFD refuses"));
    }

    #[test]
    fn kubelet_labels_are_fixed_and_always_there() {
        let worker = pool("worker", vec![is(WORKER_ROLE_LABEL, "")]);
        // An arm64 pool in an x86_64 ISO.
        let arm = pool("worker-arm", vec![is("kubernetes.io/arch", "arm64")]);
        let e = err(&table(&[], false, vec![arm.clone(), worker.clone()]));
        assert!(
            e.contains("machines get only kubernetes.io/arch=amd64"),
            "{e}"
        );
        check(&table(&[], false, vec![arm.clone()]), Some(Arch::Aarch64)).unwrap();
        for never in [
            Requirement::DoesNotExist(WORKER_ROLE_LABEL.into()),
            Requirement::NotIn("kubernetes.io/os".into(), vec!["linux".into()]),
        ] {
            let p = pool("worker-p", vec![never.clone()]);
            assert!(
                err(&table(&[], false, vec![p])).contains("every machine has"),
                "{never:?}"
            );
        }
        // A custom pool every machine matches: worker is never chosen.
        let all = pool("worker-all", vec![is("kubernetes.io/os", "linux")]);
        let e = err(&table(&[], false, vec![all.clone(), worker.clone()]));
        assert!(
            e.starts_with("pool worker: no machine can be installed into it: every machine matches pool worker-all")
                && e.contains("one custom pool beats worker"),
            "{e}"
        );
        check(&table(&[], false, vec![all.clone()]), Some(Arch::X86_64)).unwrap();
        let gpu = pool(
            "worker-gpu",
            vec![is("feature.node.kubernetes.io/gpu", "true")],
        );
        let e = err(&table(&[gpu_rule()], false, vec![all, gpu]));
        assert!(e.contains("two custom pools"), "{e}");
    }
}
