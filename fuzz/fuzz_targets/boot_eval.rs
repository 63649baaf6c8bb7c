//! The whole boot-path evaluation: a rule set and node facts (a small line
//! format, below), render's budget check, the compact form as the wrapper
//! decodes it, and the evaluation within `Budget::for_facts`. A rule set
//! render accepts must evaluate within the budget on any facts whose
//! features.d part the budget counts whole (render's worst case and the
//! wrapper's budget agree: `budget_size` is `facts_size` there); past
//! `LOCAL_COUNTED` of features.d (a pod filling it), and any other rule
//! set, may run out of it, cleanly (fail closed). run.sh gives this target a short -timeout and a small
//! -rss_limit_mb: an input that takes long or much memory is a finding.
//!
//! Lines: `R name` starts a rule; `L k=v` / `V k=v` a static label / var;
//! `T src` / `W src` its labelsTemplate / varsTemplate (`\n` in src is a
//! newline); `X key=value:Effect` a taint; `A` starts a matchAny block; `M
//! feature` a term (in the last matchAny block, else matchFeatures); `E key
//! Op v|v` an expression and `N Op v|v` a matchName on the last term; `F
//! flag|attr|inst feature k=v,k=v` facts.
#![no_main]
use kubelet_labeler::node::facts::Features;
use kubelet_labeler::node::kubelet::{Taint, TaintEffect};
use kubelet_labeler::node::rules::{self, Expr, Rule, RuleTemplate, Term, compact};
use libfuzzer_sys::fuzz_target;

fn pairs(s: &str) -> Vec<(String, String)> {
    s.split(',')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn read(text: &str) -> (Vec<Rule>, Features) {
    let mut rules: Vec<Rule> = Vec::new();
    let mut facts = Features::default();
    let mut in_any = false;
    for line in text.lines() {
        let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
        if tag == "F" {
            let mut w = rest.splitn(3, ' ');
            let (kind, name, body) = (
                w.next().unwrap_or(""),
                w.next().unwrap_or("").to_string(),
                w.next().unwrap_or(""),
            );
            match kind {
                "flag" => facts
                    .flags
                    .entry(name)
                    .or_default()
                    .extend(body.split(',').map(str::to_string)),
                "attr" => facts
                    .attributes
                    .entry(name)
                    .or_default()
                    .extend(pairs(body)),
                _ => facts
                    .instances
                    .entry(name)
                    .or_default()
                    .push(pairs(body).into_iter().collect()),
            }
            continue;
        }
        if tag == "R" {
            rules.push(Rule {
                name: rest.to_string(),
                ..Default::default()
            });
            in_any = false;
            continue;
        }
        let Some(rule) = rules.last_mut() else {
            continue;
        };
        let template = |s: &str| Some(RuleTemplate::from(s.replace("\\n", "\n")));
        let terms = if in_any {
            rule.match_any.last_mut()
        } else {
            Some(&mut rule.match_features)
        };
        let expr = |rest: &str| {
            let (op, values) = rest.split_once(' ').unwrap_or((rest, ""));
            let values: Vec<String> = if values.is_empty() {
                Vec::new()
            } else {
                values.split('|').map(str::to_string).collect()
            };
            compact::parse_op(op).map(|op| Expr::new(op, values))
        };
        match tag {
            "L" => rule.labels.extend(pairs(rest)),
            "V" => rule.vars.extend(pairs(rest)),
            "T" => rule.labels_template = template(rest),
            "W" => rule.vars_template = template(rest),
            "X" => {
                if let Some((kv, effect)) = rest.rsplit_once(':') {
                    let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
                    let effect = match effect {
                        "NoSchedule" => TaintEffect::NoSchedule,
                        "NoExecute" => TaintEffect::NoExecute,
                        _ => TaintEffect::PreferNoSchedule,
                    };
                    rule.taints.push(Taint {
                        key: key.into(),
                        value: value.into(),
                        effect,
                    });
                }
            }
            "A" => {
                rule.match_any.push(Vec::new());
                in_any = true;
            }
            "M" => {
                if let Some(terms) = terms {
                    terms.push(Term {
                        feature: rest.to_string(),
                        ..Default::default()
                    });
                }
            }
            "E" => {
                let (key, e) = rest.split_once(' ').unwrap_or((rest, ""));
                if let (Some(t), Some(e)) = (terms.and_then(|t| t.last_mut()), expr(e)) {
                    t.match_expressions
                        .get_or_insert_with(Vec::new)
                        .push((key.to_string(), e));
                }
            }
            "N" => {
                if let (Some(t), Some(e)) = (terms.and_then(|t| t.last_mut()), expr(rest)) {
                    t.match_name = Some(e);
                }
            }
            _ => {}
        }
    }
    (rules, facts)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (rules, facts) = read(text);
    // What the wrapper gets: the compact form, decoded.
    let Ok(decoded) = compact::decode(&compact::encode(&rules)) else {
        return;
    };
    let accepted = rules::budget::check(&rules).is_ok();
    let mut budget = rules::Budget::for_facts(&facts);
    let limit = budget.limit();
    let outcome = rules::evaluate_node_without(&decoded, &facts, &[], &mut budget);
    let worst = rules::budget::worst_case(&rules);
    let size = rules::budget::facts_size(&facts);
    // features.d within what the budget counts (a provisioning's keys).
    let counted = rules::budget::budget_size(&facts) == size;
    if outcome.is_ok() {
        assert!(
            budget.used() <= worst.once.at(size),
            "spent {} units, more than the worst case {} render computed",
            budget.used(),
            worst.once.at(size)
        );
    }
    // A template past the wrapper's own caps (output, steps, bytes
    // compared), which NFD's lack, fails the rules closed whatever the
    // budget: known where an unbounded budget fails the same way.
    let past_caps = outcome.is_err()
        && rules::evaluate_node_without(&decoded, &facts, &[], &mut rules::Budget::new(u64::MAX))
            .is_err();
    if accepted && counted {
        assert!(
            worst.boot.at(size) <= limit,
            "render accepted a worst case past the budget"
        );
        if past_caps {
            return;
        }
        assert!(
            outcome.is_ok(),
            "render accepted it, yet it ran out of the budget"
        );
        // Every evaluation the boot path may run, on one budget.
        for _ in 1..rules::budget::evaluations(&rules) {
            assert!(
                rules::evaluate_node_without(&decoded, &facts, &[], &mut budget).is_ok(),
                "render accepted it, yet its evaluations at boot ran out of the budget"
            );
        }
    }
});
