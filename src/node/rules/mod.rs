//! Node rules: NFD `NodeFeatureRule` rules, evaluated against
//! `crate::node::facts::Features` at boot. std only: the wrapper calls this.
//! Reading the YAML (with positions and refusals) is render's job
//! (`crate::cli::render::node_rules`); this module holds the rule model, its
//! compact form (`compact`, the contract between render and the wrapper)
//! and the evaluator. Knows nothing of systemd.
//!
//! For render: `template::parse` and `regex::Regex::new` give byte offsets
//! (`template::line_col`) for what the node cannot evaluate; `compact::parse_op`
//! maps NFD's operator names; `Expr::new` and `RuleTemplate::from` compile
//! (the compact form carries compiled regexes and parsed templates, so the
//! wrapper reaches neither parser). NFD's `type: version` is `Expr::version`
//! (`version` reads the values as NFD does). The wrapper calls
//! `evaluate_node_without` with one `Budget` for all its evaluations (see
//! `budget`: out of it, the rules are left out) and journals
//! `NodeOutcome::dropped` and each `RuleResult::error`.
//!
//! Here: the rule model and the rule loop with the output's assembly
//! (prefixes, merge, taints, what nfd-master drops). `evaluator`: one rule
//! against the facts (terms, operators, templates, label checks).

pub mod budget;
pub mod compact;
mod evaluator;
pub mod regex;
pub mod template;
#[cfg(feature = "cli")]
mod unicode_tables;
mod wire;

use std::cell::Cell;

use crate::node::facts::Features;
use crate::node::kubelet::Taint;
use crate::node::kubelet::labels::namespace;
use crate::node::sorted::SortedMap;

pub use budget::{Budget, BudgetExceeded};
use evaluator::Evaluator;
pub(crate) use evaluator::Output;
pub use evaluator::version;

/// NFD's default label namespace for keys without a prefix.
pub const DEFAULT_LABEL_PREFIX: &str = "feature.node.kubernetes.io/";

/// One `spec.rules[]` entry, reduced to what the node side evaluates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub name: String,
    /// Static labels as written (the default prefix is added on output).
    pub labels: Vec<(String, String)>,
    /// `labelsTemplate` (Go text/template subset, see `template`).
    pub labels_template: Option<RuleTemplate>,
    pub vars: Vec<(String, String)>,
    pub vars_template: Option<RuleTemplate>,
    pub taints: Vec<Taint>,
    /// All terms must match.
    pub match_features: Vec<Term>,
    /// Any of these `matchFeatures` blocks may match.
    pub match_any: Vec<Vec<Term>>,
}

/// A rule name as a comment or a journal line shows it: as written when it
/// is plain text, else quoted with Rust's escapes. NFD takes any string as a
/// name; shown this way none can end a line early (a newline, a carriage
/// return, NUL, U+2028), end one in a backslash (a unit file's continuation),
/// or pass for two names in a comma-separated list.
/// (Through `Debug`, which the wrapper links anyway: no code of its own.)
pub fn shown_name(name: &str) -> std::borrow::Cow<'_, str> {
    let quoted = format!("{name:?}");
    let plain = quoted.len() == name.len() + 2
        && !name.is_empty()
        && !name.starts_with(' ')
        && !name.ends_with(' ')
        && !name.contains(',');
    if plain {
        std::borrow::Cow::Borrowed(name)
    } else {
        std::borrow::Cow::Owned(quoted)
    }
}

/// A `matchFeatures` term.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Term {
    /// `<domain>.<feature>`, e.g. `pci.device`.
    pub feature: String,
    /// `matchExpressions`: attribute name → expression, in document order.
    pub match_expressions: Option<Vec<(String, Expr)>>,
    /// `matchName`.
    pub match_name: Option<Expr>,
}

/// A rule's template as the node runs it: the parsed tree, or why its
/// source did not parse (an error only when it would run, as in NFD).
/// `from` a source parses it (render and tests; never the wrapper).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleTemplate(pub Result<template::Template, String>);

impl From<&str> for RuleTemplate {
    fn from(src: &str) -> RuleTemplate {
        RuleTemplate(template::parse(src).map_err(|e| {
            let (line, col) = template::line_col(src, e.offset);
            format!("line {line} column {col}: {}", e.message)
        }))
    }
}

impl From<String> for RuleTemplate {
    fn from(src: String) -> RuleTemplate {
        RuleTemplate::from(src.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    pub op: Op,
    /// The values, except for `InRegexp` (see `regexes`).
    pub value: Vec<String>,
    /// `InRegexp`'s patterns compiled, or why one did not compile (an error
    /// only when the expression runs, as in NFD).
    pub regexes: Vec<Result<regex::Regex, String>>,
    /// `type: version`: `Gt`…`GeLe` compare versions (NFD >= 0.18), not
    /// integers.
    pub version: bool,
}

impl Expr {
    /// An expression from NFD's operator and values; `InRegexp` patterns
    /// are compiled (render and tests; never the wrapper).
    pub fn new(op: Op, value: Vec<String>) -> Expr {
        if op != Op::InRegexp {
            return Expr {
                op,
                value,
                regexes: Vec::new(),
                version: false,
            };
        }
        let regexes = value
            .iter()
            .map(|p| {
                regex::Regex::new(p)
                    .map_err(|err| format!("invalid regexp {p:?} for Op InRegexp: {err}"))
            })
            .collect();
        Expr {
            op,
            value: Vec::new(),
            regexes,
            version: false,
        }
    }
}

/// NFD's match operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Any,
    In,
    NotIn,
    InRegexp,
    Exists,
    DoesNotExist,
    Gt,
    Ge,
    Lt,
    Le,
    GtLt,
    GeLe,
    IsTrue,
    IsFalse,
}

impl Op {
    /// Every operator, in NFD's documented order.
    pub const ALL: [Op; 14] = [
        Op::Any,
        Op::In,
        Op::NotIn,
        Op::InRegexp,
        Op::Exists,
        Op::DoesNotExist,
        Op::Gt,
        Op::Ge,
        Op::Lt,
        Op::Le,
        Op::GtLt,
        Op::GeLe,
        Op::IsTrue,
        Op::IsFalse,
    ];
}

/// One matched element as a template sees it (`.vendor`, or `.Name`/`.Value`
/// for flag and attribute features).
pub type Element = SortedMap<String, String>;

/// What one rule gave on this node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleResult {
    pub name: String,
    pub matched: bool,
    /// Why the rule could not be evaluated (NFD skips such a rule too).
    pub error: Option<String>,
    /// `<domain>.<feature>` → the elements the rule matched.
    pub matched_features: SortedMap<String, Vec<Element>>,
    /// Output labels, keys with the default prefix where they had none.
    pub labels: Vec<(String, String)>,
    /// `labels` through nfd-master's filter, each on its own: `@` values
    /// resolved, those NFD would drop left out (what this rule gives when
    /// no later rule sets the key).
    pub resolved: Vec<(String, String)>,
    pub vars: Vec<(String, String)>,
    pub taints: Vec<Taint>,
}

/// Evaluate `rules` in order against `features`, as nfd-master does (each
/// later rule sees earlier rules' labels and vars as `rule.matched`).
/// nfd-master runs NodeFeatureRule objects sorted by `metadata.name` and the
/// rules of one object in order: `rules` must already be in that order.
/// Within the boot budget for these facts.
pub fn evaluate(rules: &[Rule], features: &Features) -> Result<Vec<RuleResult>, BudgetExceeded> {
    Ok(evaluate_node(rules, features)?.results)
}

/// What the rules give a node once nfd-master's filters have run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeOutcome {
    pub results: Vec<RuleResult>,
    /// Later rules win on a key; `@domain.feature.element` values resolved;
    /// keys NFD refuses left out (see `dropped`). Sorted by key.
    pub labels: Vec<(String, String)>,
    /// As nfd-master applies them in rule order: one per key and effect,
    /// the last value in the first one's place.
    pub taints: Vec<Taint>,
    /// Labels and taints nfd-master would drop, each with why.
    pub dropped: Vec<String>,
}

/// `evaluate`, then nfd-master's merge and filters (label namespaces,
/// `@` dynamic values, label syntax, taint namespaces), within the boot
/// budget for these facts (`Budget::for_facts`).
pub fn evaluate_node(rules: &[Rule], features: &Features) -> Result<NodeOutcome, BudgetExceeded> {
    let mut budget = Budget::for_facts(features);
    evaluate_node_without(rules, features, &[], &mut budget)
}

/// Budget units per rule run, beyond what its parts count.
pub(crate) const RULE_UNITS: u64 = 256;
/// Budget units per expression evaluated, beyond its values.
pub(crate) const EVAL_UNITS: u64 = 4;
/// Copies an output label or var goes through in `evaluate_node_without`
/// (the rule's map, `rule.matched`, prefixed, merged, resolved twice).
pub(crate) const LABEL_COPIES: u64 = 6;

/// `evaluate_node` as if the rules at the indices in `without` were not
/// there (no result for them either), spending from `budget`: the caller
/// keeps one budget for all the evaluations of one boot, so their sum is
/// bounded. Out of budget, nothing is returned: fall back.
pub fn evaluate_node_without(
    rules: &[Rule],
    features: &Features,
    without: &[usize],
    budget: &mut Budget,
) -> Result<NodeOutcome, BudgetExceeded> {
    let mut ev = Evaluator {
        features,
        backref: None,
        left: Cell::new(*budget.left_mut()),
        out_of_budget: Cell::new(false),
        keep_matched: budget.keep_matched,
        template_data: Cell::new(None),
        block_units: Cell::new(0),
        block_local: Cell::new(0),
        local_left: Cell::new(*budget.local_left_mut()),
        in_local: Cell::new(false),
    };
    let memo = budget.memo_for(rules);
    let r = evaluate_with(&mut ev, rules, without, memo);
    *budget.left_mut() = ev.left.get();
    *budget.local_left_mut() = ev.local_left.get();
    match r {
        Some(outcome) if !ev.out_of_budget.get() => Ok(outcome),
        _ => {
            *budget.left_mut() = 0;
            *budget.local_left_mut() = 0;
            Err(budget.exceeded())
        }
    }
}

/// None when the budget ran out.
fn evaluate_with(
    ev: &mut Evaluator,
    rules: &[Rule],
    without: &[usize],
    memo: &mut [Option<Result<Output, String>>],
) -> Option<NodeOutcome> {
    let features = ev.features;
    let mut results = Vec::with_capacity(rules.len());
    for (i, rule) in rules.iter().enumerate() {
        if without.contains(&i) {
            continue;
        }
        ev.charge(RULE_UNITS + rule.name.len() as u64).ok()?;
        let mut res = RuleResult {
            name: rule.name.clone(),
            ..Default::default()
        };
        // A rule that does not read `rule.matched` gives what it gave
        // before (its features are unchanged): run once per budget.
        let run = match memo.get(i).and_then(Option::as_ref) {
            Some(done) => {
                // Its matched elements copied again, charged as the run
                // charged them whether it kept them or not: explain (which
                // keeps them), plan, the boot path and the sync (which do
                // not) spend the same (review 15 r15a F1).
                if let Ok(out) = done {
                    ev.charge(out.recorded).ok()?;
                    ev.charge_local(out.recorded_local).ok()?;
                }
                done.clone()
            }
            None => {
                let run = ev.execute(rule);
                if ev.out_of_budget.get() {
                    return None;
                }
                if !reads_backref(rule)
                    && let Some(slot) = memo.get_mut(i)
                {
                    *slot = Some(run.clone());
                }
                run
            }
        };
        match run {
            Err(e) => res.error = Some(e),
            Ok(out) => {
                let bytes: u64 = out
                    .labels
                    .iter()
                    .chain(&out.vars)
                    .map(|(k, v)| budget::PAIR_UNITS + (k.len() + v.len()) as u64)
                    .sum();
                ev.charge(LABEL_COPIES * bytes).ok()?;
                // Later rules see this one's raw (unprefixed) labels and its
                // vars, even an empty set when it did not match (as NFD).
                let backref = ev.backref.get_or_insert_with(|| {
                    features
                        .attributes
                        .get(BACKREF_FEATURE)
                        .cloned()
                        .unwrap_or_default()
                });
                backref.extend(out.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
                backref.extend(out.vars.iter().map(|(k, v)| (k.clone(), v.clone())));
                res.matched = out.matched;
                res.matched_features = out.matched_features;
                if out.matched {
                    res.labels = add_default_prefix(&out.labels);
                    res.vars = out.vars.into_iter().collect();
                    res.taints = rule.taints.clone();
                }
            }
        }
        results.push(res);
    }
    let mut merged: SortedMap<String, String> = SortedMap::new();
    let mut taints: Vec<Taint> = Vec::new();
    for r in &results {
        merged.extend(r.labels.iter().cloned());
        for t in &r.taints {
            ev.charge(budget::TAINT_UNITS * (taints.len() as u64 + 1))
                .ok()?;
            // nfd-master's AddOrUpdateTaint, taint after taint: one of the
            // same key and effect is replaced where it stands, so the last
            // applied value wins (an earlier exact duplicate included).
            match taints
                .iter_mut()
                .find(|o| o.key == t.key && o.effect == t.effect)
            {
                Some(o) => o.value.clone_from(&t.value),
                None => taints.push(t.clone()),
            }
        }
    }
    for r in &mut results {
        r.resolved = r
            .labels
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), ev.filter_label(k, v).ok()?)))
            .collect();
    }
    let mut dropped = Vec::new();
    let mut labels = Vec::new();
    for (k, v) in merged {
        match ev.filter_label(&k, &v) {
            Ok(v) => labels.push((k, v)),
            Err(why) => dropped.push(format!("label {k}={v}: {why}")),
        }
    }
    crate::node::retain(&mut taints, &mut |t| match taint_ns_error(&t.key) {
        None => true,
        Some(why) => {
            dropped.push(format!("taint {t}: {why}"));
            false
        }
    });
    Some(NodeOutcome {
        results,
        labels,
        taints,
        dropped,
    })
}

/// Go's `strings.ToLower` where it matters for names that are ASCII when
/// valid (node names, feature names): the only non-ASCII characters Go
/// lowers into ASCII are the Kelvin sign and the dotted capital I. Other
/// characters are kept (such a name matches nothing whatever its case). No
/// Unicode case tables in the wrapper for this.
pub fn go_lower_ascii(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{212A}' => 'k',
            '\u{0130}' => 'i',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// The feature later rules read earlier rules' output from.
pub const BACKREF_FEATURE: &str = "rule.matched";

/// Whether a rule's outcome depends on the rules before it.
pub fn reads_backref(rule: &Rule) -> bool {
    rule.match_features
        .iter()
        .chain(rule.match_any.iter().flatten())
        .any(|t| go_lower_ascii(&t.feature) == BACKREF_FEATURE)
}

/// `addNsToMapKeys`: unprefixed keys get the default namespace unless the
/// same prefixed key is also there (then the prefixed one wins).
fn add_default_prefix(labels: &SortedMap<String, String>) -> Vec<(String, String)> {
    let ns = DEFAULT_LABEL_PREFIX.trim_end_matches('/');
    let mut out = SortedMap::new();
    for (k, v) in labels {
        if k.contains('/') {
            out.insert(k.clone(), v.clone());
        } else {
            // Go's path.Join(ns, k): "" and "." vanish, ".." climbs out.
            let full = match k.as_str() {
                "" | "." => ns.to_string(),
                ".." => ".".to_string(),
                _ => format!("{ns}/{k}"),
            };
            if !labels.contains_key(&full) {
                out.insert(full, v.clone());
            }
        }
    }
    out.into_iter().collect()
}

/// `kubernetes.io` and its subdomains are NFD's only with these exceptions.
fn ns_allowed(ns: &str, allowed: &[&str]) -> bool {
    if ns != "kubernetes.io" && !ns.ends_with(".kubernetes.io") {
        return true;
    }
    allowed
        .iter()
        .any(|a| ns == *a || (ns.ends_with(a) && ns[..ns.len() - a.len()].ends_with('.')))
}

fn taint_ns_error(key: &str) -> Option<String> {
    let ns = namespace(key);
    if ns.is_empty() {
        return Some("NFD refuses taint keys without a prefix".into());
    }
    if !ns_allowed(ns, &["feature.node.kubernetes.io"]) {
        return Some(format!("NFD refuses the taint namespace {ns:?}"));
    }
    None
}

#[cfg(test)]
mod tests;
