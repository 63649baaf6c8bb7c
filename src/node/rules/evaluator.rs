//! Running one rule against the facts: its `matchFeatures` / `matchAny`
//! terms (each operator on flags, attributes and instances, `matchName`),
//! its templates, and nfd-master's label checks (`filter_label`), each step
//! charged to the budget. The rule loop, the output's assembly (prefix,
//! merge, taints, what is dropped) and the rule model are in `super`.

use std::cell::Cell;

use super::{
    BACKREF_FEATURE, EVAL_UNITS, Element, Expr, Op, Rule, RuleTemplate, Term, budget,
    go_lower_ascii, ns_allowed, template,
};
use crate::node::facts::Features;
use crate::node::kubelet::labels::namespace;
use crate::node::sorted::SortedMap;

/// Output of one rule before prefixing.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    pub(super) matched: bool,
    pub(super) matched_features: SortedMap<String, Vec<Element>>,
    pub(super) labels: SortedMap<String, String>,
    pub(super) vars: SortedMap<String, String>,
    /// The units its matched blocks' elements were charged (what
    /// `matched_features` holds when kept, `element_units` each, kept or
    /// not): what reusing this output from the memo costs.
    pub(super) recorded: u64,
    /// The part of `recorded` from terms on features.d's features.
    pub(super) recorded_local: u64,
}

pub(super) struct Evaluator<'f> {
    pub(super) features: &'f Features,
    /// `rule.matched` once a rule has run.
    pub(super) backref: Option<SortedMap<String, String>>,
    /// Budget units left.
    pub(super) left: Cell<u64>,
    /// Set when they ran out (the error then stops every rule).
    pub(super) out_of_budget: Cell<bool>,
    /// Keep what each rule matched (`Output::matched_features`); else
    /// matched elements are made only for a rule's templates.
    pub(super) keep_matched: bool,
    /// When the rule running has a template that reads its data: the
    /// units of data its current block made so far (at most
    /// `budget::MAX_TEMPLATE_DATA`). The same wherever the rules run.
    pub(super) template_data: Cell<Option<u64>>,
    /// The units of the elements the current block made so far (copied
    /// into matched data, kept or not).
    pub(super) block_units: Cell<u64>,
    /// The part of `block_units` from terms on features.d's features.
    pub(super) block_local: Cell<u64>,
    /// Units left of features.d's own share of the budget
    /// (`budget::local_limit`): the work on its elements (a term on
    /// `local.label`/`local.feature`, a template's run in proportion to
    /// the part of its data they gave) draws from it as well, so whoever
    /// writes features.d cannot spend there what the node's other facts
    /// bought.
    pub(super) local_left: Cell<u64>,
    /// The term being matched is on a features.d feature.
    pub(super) in_local: Cell<bool>,
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
    pub(super) fn charge(&self, units: u64) -> Result<(), String> {
        match self.left.get().checked_sub(units) {
            Some(left) => {
                self.left.set(left);
                if self.in_local.get() {
                    self.charge_local(units)?;
                }
                Ok(())
            }
            None => self.ran_out(),
        }
    }

    /// Spend `units` of features.d's share (`local_left`) only: work
    /// already charged to the whole budget.
    pub(super) fn charge_local(&self, units: u64) -> Result<(), String> {
        match self.local_left.get().checked_sub(units) {
            Some(left) => {
                self.local_left.set(left);
                Ok(())
            }
            None => self.ran_out(),
        }
    }

    fn ran_out(&self) -> Result<(), String> {
        self.left.set(0);
        self.local_left.set(0);
        self.out_of_budget.set(true);
        Err(OUT_OF_BUDGET.into())
    }

    /// An element copied into matched data.
    fn charge_element(&self, e: &Element) -> Result<(), String> {
        self.charge(element_units(e))?;
        self.hold(element_units(e))
    }

    /// `units` more of template data in the block: past
    /// `budget::MAX_TEMPLATE_DATA` the evaluation stops as out of budget
    /// (as a template past its caps does).
    fn hold(&self, units: u64) -> Result<(), String> {
        self.block_units
            .set(self.block_units.get().saturating_add(units));
        if self.in_local.get() {
            self.block_local
                .set(self.block_local.get().saturating_add(units));
        }
        if let Some(held) = self.template_data.get() {
            let held = held.saturating_add(units);
            if held > budget::MAX_TEMPLATE_DATA {
                self.left.set(0);
                self.out_of_budget.set(true);
                return Err(OUT_OF_BUDGET.into());
            }
            self.template_data.set(Some(held));
        }
        Ok(())
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
    pub(super) fn execute(&self, rule: &Rule) -> Result<Output, String> {
        let unmatched = || Output {
            matched: false,
            matched_features: SortedMap::new(),
            labels: SortedMap::new(),
            vars: SortedMap::new(),
            recorded: 0,
            recorded_local: 0,
        };
        let mut out = unmatched();
        // A parse error counts only when the template would run (NFD
        // parses it on use).
        let labels_t = (&rule.labels_template, "labelsTemplate");
        let vars_t = (&rule.vars_template, "varsTemplate");
        let templates = labels_t.0.is_some() || vars_t.0.is_some();
        // Matched elements are made (copied) only when something reads
        // them (explain, or a template with an action): charged all the
        // same, so the budget does not depend on it. The copies live until
        // the block's templates ran (the wrapper's allocator frees them).
        let reads =
            |t: &Option<RuleTemplate>| matches!(t, Some(RuleTemplate(Ok(t))) if t.reads_data());
        let reading = reads(labels_t.0) || reads(vars_t.0);
        self.template_data.set(reading.then_some(0));
        let keep = reading || self.keep_matched;
        if !rule.match_any.is_empty() {
            let mut any = false;
            for branch in &rule.match_any {
                let Some(data) = self.match_terms(branch, keep)? else {
                    continue;
                };
                any = true;
                out.recorded += self.block_units.get();
                out.recorded_local += self.block_local.get();
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
            let Some(data) = self.match_terms(&rule.match_features, keep)? else {
                return Ok(unmatched());
            };
            out.recorded += self.block_units.get();
            out.recorded_local += self.block_local.get();
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
    fn match_terms(&self, terms: &[Term], keep: bool) -> Result<Option<template::Data>, String> {
        self.block_units.set(0);
        self.block_local.set(0);
        let r = self.match_block(terms, keep);
        self.in_local.set(false);
        r
    }

    fn match_block(&self, terms: &[Term], keep: bool) -> Result<Option<template::Data>, String> {
        let mut data = template::Data::new();
        if self.template_data.get().is_some() {
            self.template_data.set(Some(0));
        }
        for term in terms {
            self.in_local.set(false);
            self.charge(budget::ELEMENT + 3 * term.feature.len() as u64)?;
            // NFD lower-cases the name for the lookup only.
            let lookup = go_lower_ascii(&term.feature);
            self.in_local
                .set(budget::LOCAL_FEATURES.contains(&lookup.as_str()));
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
                (term_match, elems) = self.match_multi(exprs, flags, attrs, insts, keep)?;
            }
            if term_match && let Some(e) = &term.match_name {
                let (m, more) = self.match_names(e, flags, attrs, insts, keep)?;
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
        keep: bool,
    ) -> Result<(bool, Vec<Element>), String> {
        let mut is_match = keys.is_some() || values.is_some();
        let mut elems: Vec<Element> = Vec::new();
        for (n, e) in exprs {
            let mut mk = false;
            let mut mv = false;
            if let Some(keys) = keys {
                mk = self.eval(e, keys.contains(n), None)?;
                if mk {
                    self.push_name(&mut elems, keep, n, None)?;
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
                    self.push_name(&mut elems, keep, n, Some(v.unwrap_or("")))?;
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
                if keep {
                    elems.push(inst.clone());
                }
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
        keep: bool,
    ) -> Result<(bool, Vec<Element>), String> {
        let mut out = Vec::new();
        let mut hit_any = false;
        for k in keys.into_iter().flatten() {
            if self.eval(e, true, Some(k))? {
                hit_any = true;
                self.push_name(&mut out, keep, k, None)?;
            }
        }
        for (k, v) in values.into_iter().flatten() {
            if self.eval(e, true, Some(k))? {
                hit_any = true;
                self.push_name(&mut out, keep, k, Some(v))?;
            }
        }
        sort_by_name(&mut out);
        for inst in instances.into_iter().flatten() {
            let mut hit = false;
            for k in inst.keys() {
                hit |= self.eval(e, true, Some(k))?;
            }
            if hit {
                hit_any = true;
                self.charge_element(inst)?;
                if keep {
                    out.push(inst.clone());
                }
            }
        }
        Ok((hit_any, out))
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
                    e.op,
                    Listed(&e.value)
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
                        // The regex counts its own work, in its units
                        // (`budget::REGEX_UNITS` of the budget's each).
                        let left = self.left.get();
                        let local = self.in_local.get().then(|| self.local_left.get());
                        let avail = local.map_or(left, |l| l.min(left));
                        let mut units = avail / budget::REGEX_UNITS;
                        let m = re.is_match_within(value, &mut units);
                        let spent = (avail / budget::REGEX_UNITS - units) * budget::REGEX_UNITS;
                        self.left.set(left - spent);
                        if let Some(l) = local {
                            self.local_left.set(l - spent);
                        }
                        hit = match m {
                            Some(hit) => hit,
                            None => return self.ran_out().map(|()| false),
                        };
                    }
                }
                hit
            }
            Op::Gt | Op::Ge | Op::Lt | Op::Le => {
                if e.value.len() != 1 {
                    return Err(format!(
                        "invalid expression, 'value' field must contain exactly one element for Op {:?} (have {:?})",
                        e.op,
                        Listed(&e.value)
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
                        e.op,
                        Listed(&e.value)
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
                        e.op,
                        Listed(&e.value)
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
    pub(super) fn filter_label(&self, key: &str, value: &str) -> Result<String, String> {
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
/// A rule's values as `{:?}` prints a `Vec<String>` (`["a", "b"]`), in
/// the messages that quote them, without std's list formatter (its padding
/// adapter for `{:#?}`): the wrapper's payload is counted in bytes.
struct Listed<'a>(&'a [String]);

impl std::fmt::Debug for Listed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[")?;
        for (i, v) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            std::fmt::Debug::fmt(v.as_str(), f)?;
        }
        f.write_str("]")
    }
}

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
pub(super) fn element_units(e: &Element) -> u64 {
    budget::ELEMENT
        + e.iter()
            .map(|(k, v)| budget::ELEMENT + (k.len() + v.len()) as u64)
            .sum::<u64>()
}

/// `element_units` of `name_elem(name, value)`, without making it.
fn name_elem_units(name: &str, value: Option<&str>) -> u64 {
    budget::ELEMENT
        + (budget::ELEMENT + ("Name".len() + name.len()) as u64)
        + value.map_or(0, |v| budget::ELEMENT + ("Value".len() + v.len()) as u64)
}

impl Evaluator<'_> {
    /// A `Name`/`Value` element charged, and pushed when kept.
    fn push_name(
        &self,
        out: &mut Vec<Element>,
        keep: bool,
        name: &str,
        value: Option<&str>,
    ) -> Result<(), String> {
        self.charge(name_elem_units(name, value))?;
        self.hold(name_elem_units(name, value))?;
        if keep {
            out.push(name_elem(name, value));
        }
        Ok(())
    }

    /// Keep what a matched block gave, keyed `<domain>.<feature>`, for explain.
    fn record(
        &self,
        all: &mut SortedMap<String, Vec<Element>>,
        data: &template::Data,
    ) -> Result<(), String> {
        // Not charged: only explain keeps these copies (the boot path and
        // the sync do not), and the budget must be the same for both, or
        // explain would run out where the node does not (review 14).
        if self.keep_matched {
            for (dom, feats) in data {
                for (nam, elems) in feats {
                    all.entry(format!("{dom}.{nam}"))
                        .or_default()
                        .extend(elems.iter().cloned());
                }
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
            // Its run is work on features.d's elements in proportion to
            // the part of its data they gave (`local / all` of the block's
            // units): that part draws from their share too, so the run
            // may spend no more than that share allows.
            let (local, all) = (self.block_local.get(), self.block_units.get());
            let before = self.left.get();
            let mut left = before;
            if local > 0 {
                let cap = u128::from(self.local_left.get()) * u128::from(all) / u128::from(local);
                left = left.min(u64::try_from(cap).unwrap_or(u64::MAX));
            }
            let allowed = left;
            let r = t.expand_map_within(data, &mut left);
            let spent = allowed - left;
            self.left.set(before - spent);
            if local > 0 {
                let share = u128::from(spent) * u128::from(local) / u128::from(all);
                self.charge_local(u64::try_from(share).unwrap_or(u64::MAX))?;
            }
            match r {
                Ok(pairs) => out.extend(pairs),
                Err(template::RunError::Failed(e)) => return Err(format!("template: {e}")),
                Err(template::RunError::Budget) => return self.ran_out(),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod listed_tests {
    /// What a `Name`/`Value` element is charged is what copying it costs,
    /// whether it is made or not.
    #[test]
    fn name_elements_charged_as_made() {
        for (n, v) in [("a", None), ("key", Some("")), ("k0001", Some("value"))] {
            assert_eq!(
                super::name_elem_units(n, v),
                super::element_units(&super::name_elem(n, v))
            );
        }
    }

    /// `Listed` prints what `{:?}` of the `Vec<String>` printed.
    #[test]
    fn listed_is_vec_debug() {
        for v in [
            vec![],
            vec!["a".to_string()],
            vec![
                "x\"y".into(),
                "tab\there".into(),
                "é\u{301}\u{7f}".into(),
                "".into(),
            ],
        ] {
            assert_eq!(format!("{:?}", super::Listed(&v)), format!("{v:?}"));
        }
    }
}
