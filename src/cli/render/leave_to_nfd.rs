//! `--leave-to-nfd RULE`: named rules of the rule files are not evaluated at
//! boot but left to the cluster's NFD, which applies them after the node
//! joins (a rule the node cannot evaluate, say one reading `kernel.cmdline` or
//! setting `extendedResources`, then no longer refuses its whole file).
//! Explicit and checked: a name must match exactly one rule; a rule that
//! sets taints is never left out (a node must not register without a taint
//! it should have); a kept rule that reads through `rule.matched` what a
//! left rule gives is refused, since at boot it would answer differently
//! than NFD does after join.

use std::path::Path;

use anyhow::{Result, bail};

use super::rule_objects::{ReadRule, RuleObject, read_objects};
use super::rule_yaml::NotAtBoot;
use crate::cli::iso::reach::{nfd_refuses, prefixed};
use crate::node::kubelet::Profile;
use crate::node::rules::{self, Op, Rule};

/// A rule left to the cluster's NFD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftRule {
    /// Its NodeFeatureRule's `metadata.name`.
    pub object: String,
    /// Its `spec.rules[].name`.
    pub name: String,
    /// The file it is in.
    pub source: String,
    /// Why the node could not evaluate it at boot; None when it could.
    pub why_not_at_boot: Option<String>,
    /// Its static labels' keys, as NFD writes them (default namespace added).
    pub label_keys: Vec<String>,
    /// A `labelsTemplate` may give any label NFD keeps.
    pub labels_any: bool,
}

impl LeftRule {
    /// `OBJECT/RULE`: how the env drop-in records it and `explain` shows it.
    pub fn id(&self) -> String {
        format!("{}/{}", self.object, self.name)
    }

    /// The one warning line render and explain print for it.
    pub fn warning(&self) -> String {
        let head = format!(
            "warning: rule {:?} of NodeFeatureRule {:?} ({}) is left to the cluster's NFD: \
             the node registers without what it gives, and NFD applies it after the node joins",
            self.name, self.object, self.source
        );
        match &self.why_not_at_boot {
            Some(why) => format!("{head}; at boot it could not be evaluated: {why}"),
            None => format!(
                "{head}; it could be evaluated at boot (without --leave-to-nfd {} the node \
                 registers with it)",
                shell_words::quote(&self.id())
            ),
        }
    }
}

/// The rule files as the node evaluates them, and what is left to NFD.
#[derive(Debug, Default)]
pub struct RuleFiles {
    /// The rules the node evaluates, in NFD's order.
    pub rules: Vec<Rule>,
    /// In NFD's order.
    pub left: Vec<LeftRule>,
    /// Values the node never reads (`value_forms`), one `warning: ` line
    /// each.
    pub warnings: Vec<String>,
}

impl RuleFiles {
    /// The ids of the left rules, for the env drop-in's record.
    pub fn left_ids(&self) -> Vec<String> {
        self.left.iter().map(LeftRule::id).collect()
    }

    /// Refuse a rule left to NFD whose labels can match a key a pool
    /// selects nodes by (`selectors`: the key, and whose it is, e.g. `pool
    /// worker-numa's nodeSelector`). The node would register without the
    /// label, outside the pool (or be installed into another), and join the
    /// pool once NFD applies it: without the pool's taints, which kubelet
    /// sets only when the node registers. The same outcome as leaving out
    /// a rule that sets taints, one step later.
    pub fn refuse_left_selecting(&self, selectors: &[(String, String)]) -> Result<()> {
        for left in &self.left {
            for (key, whose) in selectors {
                let gives = if left.label_keys.contains(key) {
                    format!("gives the label {key}")
                } else if left.labels_any && nfd_refuses(key).is_none() {
                    format!("may give any label through its labelsTemplate, {key} too")
                } else {
                    continue;
                };
                bail!(
                    "--leave-to-nfd {}: rule {:?} of NodeFeatureRule {:?} ({}) {gives}, which \
                     {whose} selects nodes by: the node would register without it, outside \
                     the pool, and join the pool once the cluster's NFD applies it, without the \
                     pool's taints (kubelet sets them only when the node registers); evaluate \
                     the rule at boot (drop --leave-to-nfd for it), or select the pool by a \
                     label the node registers with",
                    shell_words::quote(&left.id()),
                    left.name,
                    left.object,
                    left.source,
                );
            }
        }
        Ok(())
    }
}

/// Read rule files (`-` is stdin) into rules in NFD's order (objects by
/// `metadata.name`, the rules of one object in order), leaving the rules
/// `leave` names (`RULE` or `OBJECT/RULE`) to the cluster's NFD.
pub fn read_rule_files_leaving(
    paths: &[impl AsRef<Path>],
    profile: Profile,
    leave: &[String],
) -> Result<RuleFiles> {
    let mut objects = read_objects(paths, profile)?;
    let mut left_at: Vec<(usize, usize)> = Vec::new();
    for spec in leave {
        let found = find(&objects, spec)?;
        let (o, r) = found;
        let (object, read) = (&objects[o], &objects[o].rules[r]);
        if read.sets_taints {
            bail!(
                "--leave-to-nfd {spec}: rule {:?} of NodeFeatureRule {:?} ({}) sets taints, and \
                 taints are a security control: a node must not register without one it \
                 should have; keep the rule evaluable at boot, or move it to a rule file only \
                 the cluster's NFD runs and give its taints as static --taint",
                read.name,
                object.name,
                object.source
            );
        }
        if !left_at.contains(&found) {
            left_at.push(found);
        }
    }
    // What the node cannot evaluate, in the order given, unless left; where
    // NFD can evaluate it after join, the error says how to leave it.
    for (o, object) in objects.iter_mut().enumerate() {
        for (r, read) in object.rules.iter_mut().enumerate() {
            if left_at.contains(&(o, r)) {
                continue;
            }
            if read.rule.is_err()
                && let Err(e) = std::mem::replace(&mut read.rule, Ok(Rule::default()))
            {
                if e.downcast_ref::<NotAtBoot>().is_none() {
                    return Err(e);
                }
                bail!(
                    "{e:#}; to render the rest of the file, give --leave-to-nfd {}: the \
                     cluster's NFD applies this rule after the node joins",
                    shell_words::quote(&format!("{}/{}", object.name, read.name))
                );
            }
        }
    }
    // NFD's order: objects by name, the rules of one object in order.
    let mut order: Vec<usize> = (0..objects.len()).collect();
    order.sort_by(|a, b| objects[*a].name.cmp(&objects[*b].name));
    let mut out = RuleFiles::default();
    let mut warned = super::value_forms::Warned::default();
    let mut left_so_far: Vec<(&RuleObject, &ReadRule)> = Vec::new();
    for &o in &order {
        let object = &objects[o];
        for (r, read) in object.rules.iter().enumerate() {
            if left_at.contains(&(o, r)) {
                // NFD reads the same values: the same warning.
                if let Ok(rule) = &read.rule {
                    warned.add(rule, || {
                        format!(
                            "rule {:?} of NodeFeatureRule {:?} ({})",
                            read.name, object.name, object.source
                        )
                    });
                }
                out.left.push(LeftRule {
                    object: object.name.clone(),
                    name: read.name.clone(),
                    source: object.source.clone(),
                    why_not_at_boot: read.rule.as_ref().err().map(|e| format!("{e:#}")),
                    label_keys: read.label_keys.iter().map(|k| prefixed(k)).collect(),
                    labels_any: read.labels_any,
                });
                left_so_far.push((object, read));
                continue;
            }
            let rule = match &read.rule {
                Ok(rule) => rule,
                Err(e) => bail!("{e:#}"),
            };
            if let Some((lo, lr)) = left_so_far.iter().find(|(_, l)| depends_on(rule, l)) {
                bail!(
                    "rule {:?} of NodeFeatureRule {:?} ({}) reads rule.matched, where NFD puts \
                     what the earlier rule {:?} of {:?} ({}) gives; left to the cluster's NFD, \
                     that rule is not evaluated at boot, so this one would answer differently \
                     at boot than NFD does after join: leave it too (--leave-to-nfd {}), or \
                     keep {:?}",
                    read.name,
                    object.name,
                    object.source,
                    lr.name,
                    lo.name,
                    lo.source,
                    shell_words::quote(&format!("{}/{}", object.name, read.name)),
                    lr.name,
                );
            }
            warned.add(rule, || {
                format!(
                    "rule {:?} of NodeFeatureRule {:?} ({})",
                    read.name, object.name, object.source
                )
            });
            out.rules.push(rule.clone());
        }
    }
    out.warnings = warned
        .into_lines()
        .into_iter()
        .map(|w| format!("warning: {w}"))
        .collect();
    // `@rule.matched.KEY` values are resolved once every rule has run: a
    // left rule anywhere may give KEY.
    for (o, object) in objects.iter().enumerate() {
        for (r, read) in object.rules.iter().enumerate() {
            if left_at.contains(&(o, r)) {
                continue;
            }
            let given = |l: &ReadRule| {
                let any = l.output_any && (read.at_backref_any || !read.at_backref_keys.is_empty());
                let key = read
                    .at_backref_keys
                    .iter()
                    .any(|k| l.output_keys.contains(k));
                let templated = read.at_backref_any && !l.output_keys.is_empty();
                any || key || templated
            };
            if let Some(&(lo, lr)) = left_so_far.iter().find(|(_, l)| given(l)) {
                bail!(
                    "rule {:?} of NodeFeatureRule {:?} ({}) has a label value @{}.KEY (or a \
                     template that may make one), where NFD puts what rule {:?} of {:?} ({}) \
                     gives; left to the cluster's NFD, that rule is not evaluated at boot, so \
                     the value would differ at boot from NFD's after join: leave this rule too \
                     (--leave-to-nfd {}), or keep {:?}",
                    read.name,
                    object.name,
                    object.source,
                    rules::BACKREF_FEATURE,
                    lr.name,
                    lo.name,
                    lo.source,
                    shell_words::quote(&format!("{}/{}", object.name, read.name)),
                    lr.name,
                );
            }
        }
    }
    if out.rules.is_empty() {
        if out.left.is_empty() {
            bail!("the rule files hold no rules");
        }
        bail!(
            "every rule of the rule files is left to the cluster's NFD (--leave-to-nfd), so \
             the node has none to evaluate at boot; leave out --rules instead"
        );
    }
    Ok(out)
}

/// The one rule `spec` names: `RULE`, or `OBJECT/RULE` (a rule name may
/// hold a `/` too: both readings are tried).
fn find(objects: &[RuleObject], spec: &str) -> Result<(usize, usize)> {
    let mut found = Vec::new();
    for (o, object) in objects.iter().enumerate() {
        for (r, read) in object.rules.iter().enumerate() {
            let qualified = spec
                .split_once('/')
                .is_some_and(|(on, rn)| on == object.name && rn == read.name);
            if read.name == spec || qualified {
                found.push((o, r));
            }
        }
    }
    let files = || {
        let mut f: Vec<&str> = objects.iter().map(|o| o.source.as_str()).collect();
        f.dedup();
        f.join(", ")
    };
    match found.as_slice() {
        [one] => Ok(*one),
        [] => bail!(
            "--leave-to-nfd {spec}: no rule of that name in the rule files ({}); give a rule's \
             spec.rules[].name, or OBJECT/RULE with its NodeFeatureRule's metadata.name",
            files()
        ),
        [(o1, r1), (o2, _), ..] => {
            let (a, b) = (&objects[*o1], &objects[*o2]);
            bail!(
                "--leave-to-nfd {spec}: more than one rule has that name, in NodeFeatureRule \
                 {:?} ({}) and {:?} ({}); give OBJECT/RULE, e.g. {}",
                a.name,
                a.source,
                b.name,
                b.source,
                shell_words::quote(&format!("{}/{}", a.name, a.rules[*r1].name))
            )
        }
    }
}

/// Whether `rule` reads through `rule.matched` a key `left` may give (NFD
/// puts every earlier rule's labels and vars there, as written), or only
/// whether the set is there.
fn depends_on(rule: &Rule, left: &ReadRule) -> bool {
    rule.match_features
        .iter()
        .chain(rule.match_any.iter().flatten())
        .filter(|t| rules::go_lower_ascii(&t.feature) == rules::BACKREF_FEATURE)
        .any(|t| {
            // NFD creates rule.matched when a rule runs, even one that
            // gives nothing, and a term on a feature that is not there
            // does not match: a term that can match a set without the
            // keys it names answers differently at boot when the left
            // rule is what created the set.
            let on_existence = t.match_name.is_none()
                && t.match_expressions.as_ref().is_none_or(|e| {
                    e.is_empty()
                        || e.iter()
                            .any(|(_, x)| matches!(x.op, Op::DoesNotExist | Op::Any))
                });
            if on_existence {
                return true;
            }
            if !left.output_any && left.output_keys.is_empty() {
                return false;
            }
            // A name expression may read any key.
            match (&t.match_name, &t.match_expressions) {
                (None, Some(e)) => {
                    left.output_any || e.iter().any(|(k, _)| left.output_keys.contains(k))
                }
                _ => true,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPU: &str = "\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: cpu
spec:
  rules:
  - name: rdt
    labels:
      rdt-ready: \"true\"
    extendedResources:
      example.com/rdt: \"1\"
    matchFeatures:
    - feature: cpu.cpuid
      matchExpressions:
        SSE4: {op: Exists}
  - name: model
    labels:
      example.com/cpu: known
    matchFeatures:
    - feature: cpu.model
      matchExpressions:
        vendor_id: {op: Exists}
";

    fn read(files: &[(&str, &str)], leave: &[&str]) -> Result<RuleFiles> {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<_> = files
            .iter()
            .map(|(name, text)| {
                let p = dir.path().join(name);
                std::fs::write(&p, text).unwrap();
                p
            })
            .collect();
        let leave: Vec<String> = leave.iter().map(|s| s.to_string()).collect();
        read_rule_files_leaving(&paths, Profile::Upstream, &leave)
    }

    fn err(files: &[(&str, &str)], leave: &[&str]) -> String {
        format!("{:#}", read(files, leave).unwrap_err())
    }

    #[test]
    fn a_named_rule_is_left_and_the_rest_kept() {
        let e = err(&[("cpu.yaml", CPU)], &[]);
        assert!(
            e.contains("cpu.yaml:10:5: rule \"rdt\": extendedResources")
                && e.ends_with("; to render the rest of the file, give --leave-to-nfd cpu/rdt: the cluster's NFD applies this rule after the node joins"),
            "{e}"
        );
        // A rule NFD would refuse too: no such hint.
        let typo = CPU.replace("vendor_id: {op: Exists}", "vendor_id: {op: Exist}");
        let e = err(&[("cpu.yaml", &typo)], &["rdt"]);
        assert!(e.contains("Exist") && !e.contains("--leave-to-nfd"), "{e}");
        for spec in ["rdt", "cpu/rdt"] {
            let got = read(&[("cpu.yaml", CPU)], &[spec]).unwrap();
            assert_eq!(got.rules.len(), 1);
            assert_eq!(got.rules[0].name, "model");
            assert_eq!(got.left_ids(), vec!["cpu/rdt"]);
            let w = got.left[0].warning();
            assert!(
                w.contains("\"rdt\"") && w.contains("cpu.yaml") && w.contains("extendedResources"),
                "{w}"
            );
        }
        // An evaluable rule may be left too, with a warning that says so.
        let got = read(&[("cpu.yaml", CPU)], &["rdt", "model", "rdt"]);
        let e = format!("{:#}", got.unwrap_err());
        assert!(
            e.contains("every rule") && e.contains("leave out --rules"),
            "{e}"
        );
        let two = CPU.replace(
            "name: model",
            "name: other\n    labels: {a: b}\n    matchFeatures: []\n  - name: model",
        );
        let got = read(&[("cpu.yaml", &two)], &["rdt", "model"]).unwrap();
        assert_eq!(got.left_ids(), vec!["cpu/rdt", "cpu/model"]);
        assert!(got.left[1].why_not_at_boot.is_none());
        assert!(got.left[1].warning().contains("could be evaluated at boot"));
    }

    #[test]
    fn a_typo_or_an_ambiguous_name_is_an_error() {
        let e = err(&[("cpu.yaml", CPU)], &["rtd"]);
        assert!(
            e.contains("--leave-to-nfd rtd: no rule") && e.contains("cpu.yaml"),
            "{e}"
        );
        let e = err(&[("cpu.yaml", CPU)], &["other/rdt"]);
        assert!(e.contains("no rule"), "{e}");
        let other = CPU.replace("name: cpu", "name: cpu2");
        let e = err(&[("a.yaml", CPU), ("b.yaml", &other)], &["rdt"]);
        assert!(
            e.contains("a.yaml") && e.contains("b.yaml") && e.contains("OBJECT/RULE"),
            "{e}"
        );
        // Qualified, either one; the other stays refused.
        let e = err(&[("a.yaml", CPU), ("b.yaml", &other)], &["cpu/rdt"]);
        assert!(e.contains("b.yaml:10:5"), "{e}");
        let got = read(
            &[("a.yaml", CPU), ("b.yaml", &other)],
            &["cpu/rdt", "cpu2/rdt"],
        )
        .unwrap();
        assert_eq!(got.left_ids(), vec!["cpu/rdt", "cpu2/rdt"]);
    }

    #[test]
    fn a_rule_with_taints_is_never_left() {
        let tainted = CPU.replace(
            "    extendedResources:",
            "    taints:\n    - {key: example.com/rdt, effect: NoSchedule}\n    extendedResources:",
        );
        let e = err(&[("cpu.yaml", &tainted)], &["rdt"]);
        assert!(
            e.contains("sets taints") && e.contains("--taint") && e.contains("cpu.yaml"),
            "{e}"
        );
        // An empty list sets none.
        let empty = CPU.replace(
            "    extendedResources:",
            "    taints: []\n    extendedResources:",
        );
        read(&[("cpu.yaml", &empty)], &["rdt"]).unwrap();
    }

    /// A later rule reading through `rule.matched` what a left rule gives
    /// is refused naming both; one reading other keys, or an earlier rule,
    /// is kept.
    #[test]
    fn a_rule_reading_a_left_rules_output_is_refused() {
        let reader = |expr: &str| {
            format!(
                "{CPU}  - name: reader\n    labels: {{x: v}}\n    matchFeatures:\n    - feature: rule.matched\n{expr}"
            )
        };
        for expr in [
            "      matchExpressions:\n        rdt-ready: {op: IsTrue}\n",
            "      matchName: {op: InRegexp, value: [\"^rdt\"]}\n",
            "      matchExpressions: {}\n",
        ] {
            let e = err(&[("cpu.yaml", &reader(expr))], &["rdt"]);
            assert!(e.contains("--leave-to-nfd cpu/reader"), "{e}");
            assert!(
                e.contains("\"reader\"") && e.contains("\"rdt\"") && e.contains("cpu/reader"),
                "{expr}: {e}"
            );
            read(&[("cpu.yaml", &reader(expr))], &["rdt", "reader"]).unwrap();
        }
        // Another key: not a dependency.
        let other = reader("      matchExpressions:\n        example.com/cpu: {op: Exists}\n");
        let got = read(&[("cpu.yaml", &other)], &["rdt"]).unwrap();
        assert_eq!(got.rules.len(), 2);
        // A left rule that gives nothing to rule.matched.
        let silent = reader("      matchName: {op: Exists}\n")
            .replace("    labels:\n      rdt-ready: \"true\"\n", "");
        read(&[("cpu.yaml", &silent)], &["rdt"]).unwrap();
        // A template may give any key.
        let templated = reader("      matchExpressions:\n        other: {op: Exists}\n").replace(
            "    labels:\n      rdt-ready: \"true\"\n",
            "    labelsTemplate: \"a=b\"\n",
        );
        assert!(err(&[("cpu.yaml", &templated)], &["rdt"]).contains("rule.matched"));
        // NFD runs objects by name: a reader in an earlier object is not
        // affected.
        let before = format!(
            "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {{name: aaa}}\nspec:\n  rules:\n  - name: reader\n    labels: {{x: v}}\n    matchFeatures:\n    - feature: rule.matched\n      matchName: {{op: Exists}}\n---\n{CPU}"
        );
        read(&[("cpu.yaml", &before)], &["cpu/rdt"]).unwrap();
        // `@rule.matched.KEY` values resolve after every rule: a rule
        // before the left one reads it too.
        let at = |value: &str| {
            format!(
                "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {{name: aaa}}\nspec:\n  rules:\n  - name: at\n    labels: {{x: \"{value}\"}}\n    matchFeatures: []\n---\n{CPU}"
            )
        };
        let e = err(&[("cpu.yaml", &at("@rule.matched.rdt-ready"))], &["rdt"]);
        assert!(
            e.contains("\"at\"") && e.contains("--leave-to-nfd aaa/at"),
            "{e}"
        );
        read(
            &[("cpu.yaml", &at("@rule.matched.example.com/cpu"))],
            &["rdt"],
        )
        .unwrap();
        read(&[("cpu.yaml", &at("@cpu.model.vendor_id"))], &["rdt"]).unwrap();
        let templated = at("v").replace(
            "    labels: {x: \"v\"}\n",
            "    labelsTemplate: \"x=@rule.matched.{{ \\\"rdt-ready\\\" }}\"\n",
        );
        assert!(templated.contains("labelsTemplate"), "{templated}");
        let e = err(&[("cpu.yaml", &templated)], &["rdt"]);
        assert!(e.contains("template that may make one"), "{e}");
    }

    /// NFD creates rule.matched when a rule runs, whatever it gives: a
    /// kept rule whose term can match the set without the keys it names
    /// (DoesNotExist, Any, no expressions) matches after join but not at
    /// boot when the left rule is the one before it, so its taints would
    /// be missing at registration.
    #[test]
    fn a_rule_reading_whether_rule_matched_exists_is_refused() {
        let file = |left_labels: &str, term: &str| {
            format!(
                "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {{name: a}}\nspec:\n  rules:\n  - name: left\n{left_labels}    extendedResources: {{example.com/r: \"1\"}}\n    matchFeatures: []\n  - name: kept\n    taints: [{{key: example.com/unverified, effect: NoSchedule}}]\n    matchFeatures:\n    - feature: rule.matched\n{term}"
            )
        };
        for labels in ["", "    labels: {other: \"true\"}\n"] {
            for term in [
                "      matchExpressions:\n        verified: {op: DoesNotExist}\n",
                "      matchExpressions:\n        verified: {op: Any}\n",
                "",
            ] {
                let e = err(&[("r.yaml", &file(labels, term))], &["left"]);
                assert!(
                    e.contains("\"kept\"") && e.contains("--leave-to-nfd a/kept"),
                    "{labels}{term}: {e}"
                );
            }
            // A key that must be there: absent either way.
            let exists = "      matchExpressions:\n        verified: {op: Exists}\n";
            read(&[("r.yaml", &file(labels, exists))], &["left"]).unwrap();
        }
    }
}
