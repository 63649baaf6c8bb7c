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

pub mod budget;
pub mod compact;
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
    };
    let memo = budget.memo_for(rules);
    let r = evaluate_with(&mut ev, rules, without, memo);
    *budget.left_mut() = ev.left.get();
    match r {
        Some(outcome) if !ev.out_of_budget.get() => Ok(outcome),
        _ => {
            *budget.left_mut() = 0;
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
                if let Ok(out) = done {
                    let copied: u64 = out
                        .matched_features
                        .values()
                        .flatten()
                        .map(element_units)
                        .sum();
                    ev.charge(copied).ok()?;
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
    taints.retain(|t| match taint_ns_error(&t.key) {
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

/// Output of one rule before prefixing.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    matched: bool,
    matched_features: SortedMap<String, Vec<Element>>,
    labels: SortedMap<String, String>,
    vars: SortedMap<String, String>,
}

struct Evaluator<'f> {
    features: &'f Features,
    /// `rule.matched` once a rule has run.
    backref: Option<SortedMap<String, String>>,
    /// Budget units left.
    left: Cell<u64>,
    /// Set when they ran out (the error then stops every rule).
    out_of_budget: Cell<bool>,
}

/// One feature name's elements of each kind (NFD allows several kinds).
struct Kinds<'a> {
    flags: Option<&'a crate::node::sorted::SortedSet<String>>,
    attributes: Option<&'a SortedMap<String, String>>,
    instances: Option<&'a Vec<SortedMap<String, String>>>,
}

/// What a rule error says when the budget ran out (never shown: the whole
/// evaluation stops).
const OUT_OF_BUDGET: &str = "out of budget";

impl<'f> Evaluator<'f> {
    fn charge(&self, units: u64) -> Result<(), String> {
        match self.left.get().checked_sub(units) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.left.set(0);
                self.out_of_budget.set(true);
                Err(OUT_OF_BUDGET.into())
            }
        }
    }

    /// An element copied into matched data.
    fn charge_element(&self, e: &Element) -> Result<(), String> {
        self.charge(element_units(e))
    }

    fn kinds(&self, name: &str) -> Kinds<'_> {
        let attributes = match (&self.backref, name == BACKREF_FEATURE) {
            (Some(b), true) => Some(b),
            _ => self.features.attributes.get(name),
        };
        Kinds {
            flags: self.features.flags.get(name),
            attributes,
            instances: self.features.instances.get(name),
        }
    }

    /// nfd `Execute` with failFast, as nfd-master calls it.
    fn execute(&self, rule: &Rule) -> Result<Output, String> {
        let unmatched = || Output {
            matched: false,
            matched_features: SortedMap::new(),
            labels: SortedMap::new(),
            vars: SortedMap::new(),
        };
        let mut out = unmatched();
        // A parse error counts only when the template would run (NFD
        // parses it on use).
        let labels_t = (&rule.labels_template, "labelsTemplate");
        let vars_t = (&rule.vars_template, "varsTemplate");
        let templates = labels_t.0.is_some() || vars_t.0.is_some();
        if !rule.match_any.is_empty() {
            let mut any = false;
            for branch in &rule.match_any {
                let Some(data) = self.match_terms(branch)? else {
                    continue;
                };
                any = true;
                self.record(&mut out.matched_features, &data)?;
                if !templates {
                    break;
                }
                self.run_template(labels_t, &data, &mut out.labels)?;
                self.run_template(vars_t, &data, &mut out.vars)?;
            }
            if !any {
                return Ok(unmatched());
            }
        }
        if !rule.match_features.is_empty() {
            let Some(data) = self.match_terms(&rule.match_features)? else {
                return Ok(unmatched());
            };
            self.record(&mut out.matched_features, &data)?;
            self.run_template(labels_t, &data, &mut out.labels)?;
            self.run_template(vars_t, &data, &mut out.vars)?;
        }
        out.labels.extend(rule.labels.iter().cloned());
        out.vars.extend(rule.vars.iter().cloned());
        out.matched = true;
        Ok(out)
    }

    /// A `matchFeatures` block (AND over terms). `Some(template data)` when
    /// it matched.
    fn match_terms(&self, terms: &[Term]) -> Result<Option<template::Data>, String> {
        let mut data = template::Data::new();
        for term in terms {
            self.charge(budget::ELEMENT + 3 * term.feature.len() as u64)?;
            // NFD lower-cases the name for the lookup only.
            let lookup = go_lower_ascii(&term.feature);
            // Template keys come from the name as written (NFD lower-cases
            // only the lookup).
            let (dom, nam) = match term.feature.split_once('.') {
                Some((d, n)) => (d.to_string(), n.to_string()),
                None => (lookup.clone(), String::new()),
            };
            let k = self.kinds(&lookup);
            if k.flags.is_none() && k.attributes.is_none() && k.instances.is_none() {
                return Ok(None);
            }
            let (flags, attrs, insts) = (k.flags, k.attributes, k.instances);
            let mut term_match = true;
            let mut elems = Vec::new();
            if let Some(exprs) = &term.match_expressions {
                (term_match, elems) = self.match_multi(exprs, flags, attrs, insts)?;
            }
            if term_match && let Some(e) = &term.match_name {
                let (m, more) = self.match_names(e, flags, attrs, insts)?;
                term_match = m;
                elems.extend(more);
            }
            data.entry(dom)
                .or_default()
                .entry(nam)
                .or_default()
                .extend(elems);
            if !term_match {
                return Ok(None);
            }
        }
        Ok(Some(data))
    }

    /// NFD's `MatchMulti`: flags and attributes as a union, then instances
    /// (an instance matches when all expressions match its attributes).
    fn match_multi(
        &self,
        exprs: &[(String, Expr)],
        keys: Option<&crate::node::sorted::SortedSet<String>>,
        values: Option<&SortedMap<String, String>>,
        instances: Option<&Vec<SortedMap<String, String>>>,
    ) -> Result<(bool, Vec<Element>), String> {
        let mut is_match = keys.is_some() || values.is_some();
        let mut elems: Vec<Element> = Vec::new();
        for (n, e) in exprs {
            let mut mk = false;
            let mut mv = false;
            if let Some(keys) = keys {
                mk = self.eval(e, keys.contains(n), None)?;
                if mk {
                    elems.push(self.name_elem(n, None)?);
                } else if e.op == Op::DoesNotExist {
                    is_match = false;
                    elems.clear();
                    break;
                }
            }
            if let Some(values) = values {
                let v = values.get(n).map(String::as_str);
                mv = self.eval(e, v.is_some(), v)?;
                if mv {
                    elems.push(self.name_elem(n, Some(v.unwrap_or("")))?);
                } else if e.op == Op::DoesNotExist {
                    is_match = false;
                    elems.clear();
                    break;
                }
            }
            if !mk && !mv {
                is_match = false;
                elems.clear();
                break;
            }
        }
        sort_by_name(&mut elems);
        let mut any_instance = false;
        for inst in instances.into_iter().flatten() {
            let mut all = true;
            for (n, e) in exprs {
                let v = inst.get(n).map(String::as_str);
                if !self.eval(e, v.is_some(), v)? {
                    all = false;
                    break;
                }
            }
            if all {
                any_instance = true;
                self.charge_element(inst)?;
                elems.push(inst.clone());
            }
        }
        Ok((is_match || any_instance, elems))
    }

    /// NFD's `MatchNamesMulti`: the expression against element names
    /// (flags, attributes), then against each instance's attribute names.
    fn match_names(
        &self,
        e: &Expr,
        keys: Option<&crate::node::sorted::SortedSet<String>>,
        values: Option<&SortedMap<String, String>>,
        instances: Option<&Vec<SortedMap<String, String>>>,
    ) -> Result<(bool, Vec<Element>), String> {
        let mut out = Vec::new();
        for k in keys.into_iter().flatten() {
            if self.eval(e, true, Some(k))? {
                out.push(self.name_elem(k, None)?);
            }
        }
        for (k, v) in values.into_iter().flatten() {
            if self.eval(e, true, Some(k))? {
                out.push(self.name_elem(k, Some(v))?);
            }
        }
        sort_by_name(&mut out);
        for inst in instances.into_iter().flatten() {
            let mut hit = false;
            for k in inst.keys() {
                hit |= self.eval(e, true, Some(k))?;
            }
            if hit {
                self.charge_element(inst)?;
                out.push(inst.clone());
            }
        }
        Ok((!out.is_empty(), out))
    }

    /// NFD's `evaluateMatchExpression`; `value` None is a flag (no value).
    fn eval(&self, e: &Expr, valid: bool, value: Option<&str>) -> Result<bool, String> {
        self.charge(EVAL_UNITS + e.value.len() as u64 + value.map_or(0, |v| v.len() as u64))?;
        let want_empty = |e: &Expr| {
            if e.value.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "invalid expression, 'value' field must be empty for Op {:?} (have {:?})",
                    e.op, e.value
                ))
            }
        };
        match e.op {
            Op::Any => return want_empty(e).map(|()| true),
            Op::Exists => return want_empty(e).map(|()| valid),
            Op::DoesNotExist => return want_empty(e).map(|()| !valid),
            _ => {}
        }
        let (true, Some(value)) = (valid, value) else {
            return Ok(false);
        };
        let non_empty = |e: &Expr| {
            if e.value.is_empty() && e.regexes.is_empty() {
                Err(format!(
                    "invalid expression, 'value' field must be non-empty for Op {:?}",
                    e.op
                ))
            } else {
                Ok(())
            }
        };
        let atoi = |s: &str, what: &str| {
            s.parse::<i64>()
                .map_err(|_| format!("not a number {s:?}{what}"))
        };
        Ok(match e.op {
            Op::In => {
                non_empty(e)?;
                e.value.iter().any(|v| v == value)
            }
            Op::NotIn => {
                non_empty(e)?;
                !e.value.iter().any(|v| v == value)
            }
            Op::InRegexp => {
                non_empty(e)?;
                let mut hit = false;
                for re in &e.regexes {
                    // Every pattern must compile, even after a hit.
                    let re = re.as_ref().map_err(Clone::clone)?;
                    if !hit {
                        let mut left = self.left.get();
                        let m = re.is_match_within(value, &mut left);
                        self.left.set(left);
                        hit = m.ok_or_else(|| {
                            self.out_of_budget.set(true);
                            OUT_OF_BUDGET.to_string()
                        })?;
                    }
                }
                hit
            }
            Op::Gt | Op::Ge | Op::Lt | Op::Le => {
                if e.value.len() != 1 {
                    return Err(format!(
                        "invalid expression, 'value' field must contain exactly one element for Op {:?} (have {:?})",
                        e.op, e.value
                    ));
                }
                if e.version {
                    let l = version(value).ok_or_else(|| format!("not a version {value:?}"))?;
                    let r = version(&e.value[0])
                        .ok_or_else(|| format!("not a version {:?} in the rule", e.value[0]))?;
                    return Ok(match e.op {
                        Op::Gt => l > r,
                        Op::Ge => l >= r,
                        Op::Lt => l < r,
                        _ => l <= r,
                    });
                }
                let l = atoi(value, "")?;
                let r = atoi(&e.value[0], " in the rule")?;
                match e.op {
                    Op::Gt => l > r,
                    Op::Ge => l >= r,
                    Op::Lt => l < r,
                    _ => l <= r,
                }
            }
            Op::GtLt | Op::GeLe => {
                if e.value.len() != 2 {
                    return Err(format!(
                        "invalid expression, 'value' field must contain exactly two elements for Op {:?} (have {:?})",
                        e.op, e.value
                    ));
                }
                if e.version {
                    let v = version(value).ok_or_else(|| format!("not a version {value:?}"))?;
                    let mut lr = [(0, 0, 0); 2];
                    for (i, s) in e.value.iter().enumerate() {
                        lr[i] =
                            version(s).ok_or_else(|| format!("not a version {s:?} in the rule"))?;
                    }
                    // No order check on the bounds here (NFD has none).
                    return Ok(if e.op == Op::GtLt {
                        v > lr[0] && v < lr[1]
                    } else {
                        v >= lr[0] && v <= lr[1]
                    });
                }
                let v = atoi(value, "")?;
                let lo = atoi(&e.value[0], " in the rule")?;
                let hi = atoi(&e.value[1], " in the rule")?;
                if lo >= hi {
                    return Err(format!(
                        "invalid expression, value[0] must be less than Value[1] for Op {:?} (have {:?})",
                        e.op, e.value
                    ));
                }
                if e.op == Op::GtLt {
                    v > lo && v < hi
                } else {
                    v >= lo && v <= hi
                }
            }
            Op::IsTrue | Op::IsFalse => {
                want_empty(e)?;
                value == if e.op == Op::IsTrue { "true" } else { "false" }
            }
            Op::Any | Op::Exists | Op::DoesNotExist => unreachable!("handled above"),
        })
    }

    /// nfd-master's `filterFeatureLabel`: `@` values, then NFD's label checks.
    fn filter_label(&self, key: &str, value: &str) -> Result<String, String> {
        // Borrowed until it passed the checks (a value may be large).
        let value: &str = match value.strip_prefix('@') {
            None => value,
            Some(path) => {
                let mut parts = path.splitn(3, '.');
                let (Some(d), Some(f), Some(el)) = (parts.next(), parts.next(), parts.next())
                else {
                    return Err(format!(
                        "value {value} is not in the form of '@domain.feature.element'"
                    ));
                };
                let feature = format!("{d}.{f}");
                let attrs = self
                    .kinds(&feature)
                    .attributes
                    .ok_or_else(|| format!("feature {feature} not found"))?;
                attrs
                    .get(el)
                    .map(String::as_str)
                    .ok_or_else(|| format!("element {el} not found on feature {feature}"))?
            }
        };
        let errs = crate::node::kubelet::labels::label_key_errors(key);
        if !errs.is_empty() {
            return Err(format!("invalid label key: {}", errs.join("; ")));
        }
        let ns = namespace(key);
        if ns.is_empty() {
            return Err("unprefixed keys are not allowed".into());
        }
        if !ns_allowed(
            ns,
            &["feature.node.kubernetes.io", "profile.node.kubernetes.io"],
        ) {
            return Err(format!("NFD refuses the label namespace {ns:?}"));
        }
        let errs = crate::node::kubelet::labels::label_value_errors(value);
        if !errs.is_empty() {
            return Err(format!("invalid value {value:?}: {}", errs.join("; ")));
        }
        Ok(value.to_string())
    }
}

/// A version as NFD's `type: version` reads it (Masterminds semver, leading
/// zeros coerced): `[v]MAJOR[.MINOR[.PATCH]][-PRE][+META]`, identifiers of
/// `[0-9A-Za-z-]`, no numeric pre-release identifier with a leading zero.
/// Compared by major, minor, patch only (NFD drops the pre-release).
pub fn version(s: &str) -> Option<(u64, u64, u64)> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let (s, meta) = match s.split_once('+') {
        Some((a, m)) => (a, Some(m)),
        None => (s, None),
    };
    let (core, pre) = match s.split_once('-') {
        Some((a, p)) => (a, Some(p)),
        None => (s, None),
    };
    let ident =
        |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if meta.is_some_and(|m| !m.split('.').all(ident)) {
        return None;
    }
    if let Some(pre) = pre {
        let ok = pre.split('.').all(|p| {
            ident(p)
                && !(p.len() > 1 && p.starts_with('0') && p.bytes().all(|b| b.is_ascii_digit()))
        });
        if !ok {
            return None;
        }
    }
    let mut parts = core.split('.');
    let mut num = || -> Option<Option<u64>> {
        match parts.next() {
            None => Some(None),
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse().ok().map(Some)
            }
            Some(_) => None,
        }
    };
    let major = num()??;
    let minor = num()?.unwrap_or(0);
    let patch = num()?.unwrap_or(0);
    parts.next().is_none().then_some((major, minor, patch))
}

/// NFD sorts flag/attribute matches by name "for reproducible output".
fn sort_by_name(elems: &mut [Element]) {
    elems.sort_by(|a, b| a.get("Name").cmp(&b.get("Name")));
}

fn name_elem(name: &str, value: Option<&str>) -> Element {
    let mut e = Element::new();
    e.insert("Name".into(), name.into());
    if let Some(v) = value {
        e.insert("Value".into(), v.into());
    }
    e
}

/// Budget units of copying an element: `budget::ELEMENT` for it and each
/// attribute, and their bytes (its `budget::facts_size`).
fn element_units(e: &Element) -> u64 {
    budget::ELEMENT
        + e.iter()
            .map(|(k, v)| budget::ELEMENT + (k.len() + v.len()) as u64)
            .sum::<u64>()
}

impl Evaluator<'_> {
    fn name_elem(&self, name: &str, value: Option<&str>) -> Result<Element, String> {
        let e = name_elem(name, value);
        self.charge_element(&e)?;
        Ok(e)
    }

    /// Keep what a matched block gave, keyed `<domain>.<feature>`, for explain.
    fn record(
        &self,
        all: &mut SortedMap<String, Vec<Element>>,
        data: &template::Data,
    ) -> Result<(), String> {
        for (dom, feats) in data {
            for (nam, elems) in feats {
                self.charge(budget::ELEMENT + (dom.len() + nam.len()) as u64)?;
                for e in elems {
                    self.charge_element(e)?;
                }
                all.entry(format!("{dom}.{nam}"))
                    .or_default()
                    .extend(elems.iter().cloned());
            }
        }
        Ok(())
    }

    fn run_template(
        &self,
        (t, what): (&Option<RuleTemplate>, &str),
        data: &template::Data,
        out: &mut SortedMap<String, String>,
    ) -> Result<(), String> {
        if let Some(RuleTemplate(t)) = t {
            let t = t.as_ref().map_err(|e| format!("{what}: {e}"))?;
            let mut left = self.left.get();
            let r = t.expand_map_within(data, &mut left);
            self.left.set(left);
            match r {
                Ok(pairs) => out.extend(pairs),
                Err(template::RunError::Failed(e)) => return Err(format!("template: {e}")),
                Err(template::RunError::Budget) => {
                    self.left.set(0);
                    self.out_of_budget.set(true);
                    return Err(OUT_OF_BUDGET.into());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
