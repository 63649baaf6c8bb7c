//! The evaluation budget: how much work the boot path may spend on node
//! rules before it gives up and falls back (kubelet must start in time).
//! Work is counted in units, roughly a nanosecond or a byte each: a byte
//! copied into template output or matched data, a template step
//! (`TEMPLATE_STEP`), an expression or element looked at, and a regex
//! thread looked at at its measured cost (`REGEX_UNITS`).
//!
//! The budget grows with the facts the rules read (`facts_size`): a node
//! with more devices may spend more on rules that walk them, in proportion.
//! Render refuses rule files whose worst case on any facts could pass it
//! (`worst_case`, the same model), so at boot `BudgetExceeded` means a
//! rule file render never accepted (or a bug), and the caller falls back.
//! One exception, on purpose: what features.d gives (`local.label`,
//! `local.feature`, files a pod with a hostPath may write) counts for at
//! most `LOCAL_COUNTED` (`budget_size`), so its writer cannot buy boot
//! time; render's guarantee holds on nodes whose features.d stays within
//! it (a provisioning's few dozen keys), and past it a rule set that needs
//! more runs out and fails closed. The work on those elements also draws
//! from features.d's own share (`local_limit`, tens of milliseconds), so
//! its writer cannot spend there the budget the node's other facts buy;
//! render checks that share as well (`Worst::local`).

use crate::node::facts::Features;

/// Units for any facts. Measured with the static wrapper: 40 templates of
/// `{{ range 30000 }}` (77 million units) ran in 40 to 120 ms on a loaded
/// 2-CPU machine, so this is tens of milliseconds at most. Render's worst
/// case overestimates real rule files many times over; this is what every
/// case of tests/nfd_differential.rs needs (half of it refuses a few).
pub const BASE: u64 = 64_000_000;
/// Units per unit of `facts_size`.
pub const PER_FACT: u64 = 16_384;
/// `facts_size` of one element (a flag, an attribute, an instance, an
/// instance's attribute) beyond its bytes: what looking at and copying one
/// costs whatever its size.
pub const ELEMENT: u64 = 32;
/// Units per label or var copied, beyond its bytes.
pub const PAIR_UNITS: u64 = 8;
/// Units per template step (an action, a node, a command, an iteration).
pub const TEMPLATE_STEP: u64 = 32;
/// Units per unit of a regex's own count of its work (a thread looked at,
/// `Regex::work_bound`): measured with the static wrapper, an `InRegexp`
/// whose threads all stay alive spends 4 to 6 ns per counted unit, where
/// the budget's other units are about a nanosecond (review 13 r13a F1).
/// The evaluator and render's worst case both charge this.
pub const REGEX_UNITS: u64 = 6;

/// The most template data one matched block may make, in `facts_size`
/// units (its elements and their bytes): a template reads a copy of what
/// its block matched, held until it ran (about 3 bytes a unit in the
/// wrapper, measured: 15 MB of RSS at the cap, where a full features.d walked by one
/// term is about 170 thousand units and a node's PCI devices a few
/// thousand). Past it the evaluation stops as out of budget, as a template
/// past its caps does (NFD would apply that rule): the budget bounds
/// time, this the memory a pod's features.d can make a rule hold.
pub const MAX_TEMPLATE_DATA: u64 = 4 << 20;

/// The evaluation ran out of its budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetExceeded {
    pub limit: u64,
}

impl std::fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "node rules need more work than their budget of {} units on these facts; \
             render refuses such rule files, unless features.d holds more than {} bytes of \
             facts, which buy no budget (render them again with this version, or keep \
             features.d small)",
            self.limit, LOCAL_COUNTED
        )
    }
}

impl std::error::Error for BudgetExceeded {}

/// Work left for the whole boot-path evaluation (every evaluation the
/// caller runs with it counts). It also keeps what each rule that does not
/// read `rule.matched` gave, so that evaluating the same rules again (with
/// rules left out, or after reading more features) runs only the rules
/// that read earlier rules' output: between evaluations with one budget,
/// the caller may add features but not change those any rule's terms name.
#[derive(Debug, Clone)]
pub struct Budget {
    limit: u64,
    left: u64,
    /// What is left of features.d's own share (`local_limit`): work on its
    /// elements draws from both.
    local_left: u64,
    /// The rules (address and length) `memo` is for, and per rule what it
    /// gave.
    memo_of: (usize, usize),
    memo: Vec<Option<Result<super::Output, String>>>,
    /// Keep each rule's matched elements (`RuleResult::matched_features`,
    /// what `explain` shows); the boot path and the sync do not, so the
    /// memory of an evaluation does not grow with the facts per term that
    /// walks them (the wrapper's allocator never frees).
    pub(super) keep_matched: bool,
}

impl Budget {
    pub fn new(limit: u64) -> Budget {
        Budget {
            limit,
            left: limit,
            local_left: limit,
            memo_of: (0, 0),
            memo: Vec::new(),
            keep_matched: true,
        }
    }

    /// This budget, the rules' matched elements not kept: only the
    /// templates that read them see them, one block at a time.
    pub fn without_matched(mut self) -> Budget {
        self.keep_matched = false;
        self
    }

    /// What the rules gave in earlier evaluations with this budget.
    pub(super) fn memo_for(
        &mut self,
        rules: &[super::Rule],
    ) -> &mut [Option<Result<super::Output, String>>] {
        let of = (rules.as_ptr() as usize, rules.len());
        if self.memo_of != of {
            self.memo_of = of;
            self.memo = vec![None; rules.len()];
        }
        &mut self.memo
    }

    /// The boot budget on these facts: `BASE + PER_FACT * budget_size`.
    /// Work on features.d's elements (`LOCAL_FEATURES`) draws from
    /// `local_limit` as well.
    pub fn for_facts(features: &Features) -> Budget {
        let mut b = Budget::new(limit_for(budget_size(features)));
        b.local_left = local_limit(features);
        b
    }

    /// What is left of features.d's own share.
    pub fn local_left(&self) -> u64 {
        self.local_left
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn used(&self) -> u64 {
        self.limit - self.left
    }

    /// Spend `units`.
    pub fn charge(&mut self, units: u64) -> Result<(), BudgetExceeded> {
        match self.left.checked_sub(units) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => {
                self.left = 0;
                self.local_left = 0;
                Err(self.exceeded())
            }
        }
    }

    /// What is left, for work that counts itself (`Regex::is_match_within`).
    pub(super) fn left_mut(&mut self) -> &mut u64 {
        &mut self.left
    }

    pub(super) fn local_left_mut(&mut self) -> &mut u64 {
        &mut self.local_left
    }

    pub fn exceeded(&self) -> BudgetExceeded {
        BudgetExceeded { limit: self.limit }
    }
}

/// The budget for facts of this size.
pub fn limit_for(facts_size: u64) -> u64 {
    BASE.saturating_add(PER_FACT.saturating_mul(facts_size))
}

/// The features features.d gives: whoever can write that directory (a pod
/// with a hostPath on it, not only the node's provisioning) sets them.
pub const LOCAL_FEATURES: [&str; 2] = ["local.feature", "local.label"];

/// The most of `facts_size` the features.d features count for in the
/// budget: `PER_FACT` times this is ~67 million units, tens of
/// milliseconds (about 35 keys of 20 bytes, each in both maps). A pod
/// that fills features.d (up to ~200 K of facts) buys no more.
pub const LOCAL_COUNTED: u64 = 4096;

/// `facts_size` as the budget counts it: the features.d features
/// (`LOCAL_FEATURES`) together for at most `LOCAL_COUNTED`. Equal to
/// `facts_size` on a node whose features.d stays within that, where
/// render's check guarantees the rules it accepts never run out.
pub fn budget_size(f: &Features) -> u64 {
    facts_size(f).saturating_sub(local_size(f)) + local_size(f).min(LOCAL_COUNTED)
}

/// features.d's own share of the budget: `LOCAL_BASE + PER_FACT *
/// min(its size, LOCAL_COUNTED)`, about 83 million units at most. The work on its
/// elements draws from this as well as from the whole budget, so whoever
/// writes features.d (a pod) cannot spend there what the node's other
/// facts bought (review 15: a template walking a pod's full features.d
/// spent the budget `modules.builtin` gave). Render's check covers it
/// (`Worst::local`): on any node whose features.d stays within
/// `LOCAL_COUNTED`, the rules it accepts stay within this share too.
pub fn local_limit(f: &Features) -> u64 {
    LOCAL_BASE.saturating_add(PER_FACT.saturating_mul(local_size(f).min(LOCAL_COUNTED)))
}

/// The fixed part of features.d's share (`local_limit`): what work on its
/// elements may cost whatever their size (render refuses rules whose
/// worst case there is more, `Worst::local`). With `PER_FACT *
/// LOCAL_COUNTED` about 83 million units, tens of milliseconds.
pub const LOCAL_BASE: u64 = 16_000_000;

/// `facts_size` of the features.d features (`LOCAL_FEATURES`).
fn local_size(f: &Features) -> u64 {
    LOCAL_FEATURES
        .iter()
        .filter_map(|name| f.attributes.get(*name).map(|attrs| (name, attrs)))
        .map(|(name, attrs)| {
            name.len() as u64
                + attrs
                    .iter()
                    .map(|(k, v)| ELEMENT + (k.len() + v.len()) as u64)
                    .sum::<u64>()
        })
        .sum()
}

/// The size of the facts as the budget counts them: each element `ELEMENT`
/// plus its bytes (names and values).
pub fn facts_size(f: &Features) -> u64 {
    let mut size = 0u64;
    for (name, flags) in &f.flags {
        size += name.len() as u64;
        for flag in flags {
            size += ELEMENT + flag.len() as u64;
        }
    }
    for (name, attrs) in &f.attributes {
        size += name.len() as u64;
        for (k, v) in attrs {
            size += ELEMENT + (k.len() + v.len()) as u64;
        }
    }
    for (name, insts) in &f.instances {
        size += name.len() as u64;
        for inst in insts {
            size += ELEMENT;
            for (k, v) in inst {
                size += ELEMENT + (k.len() + v.len()) as u64;
            }
        }
    }
    size
}

/// A worst-case cost on facts of size `s`: `c + e * s / ELEMENT` (`e` is
/// per element's worth of facts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lin {
    pub c: u64,
    pub e: u64,
}

impl Lin {
    pub const ZERO: Lin = Lin { c: 0, e: 0 };

    pub const fn c(c: u64) -> Lin {
        Lin { c, e: 0 }
    }

    /// Elements of one feature (`s / ELEMENT` at most).
    pub const ELEMENTS: Lin = Lin { c: 0, e: 1 };
    /// Bytes of one feature (`s` at most).
    pub const BYTES: Lin = Lin { c: 0, e: ELEMENT };

    pub fn plus(self, o: Lin) -> Lin {
        Lin {
            c: self.c.saturating_add(o.c),
            e: self.e.saturating_add(o.e),
        }
    }

    pub fn times(self, k: u64) -> Lin {
        Lin {
            c: self.c.saturating_mul(k),
            e: self.e.saturating_mul(k),
        }
    }

    /// The product, when it stays linear (one side constant).
    pub fn product(self, o: Lin) -> Option<Lin> {
        if self.e > 0 && o.e > 0 {
            return None;
        }
        Some(Lin {
            c: self.c.saturating_mul(o.c),
            e: self
                .e
                .saturating_mul(o.c)
                .saturating_add(o.e.saturating_mul(self.c)),
        })
    }

    pub fn max(self, o: Lin) -> Lin {
        Lin {
            c: self.c.max(o.c),
            e: self.e.max(o.e),
        }
    }

    /// The value on facts of this size.
    pub fn at(self, facts_size: u64) -> u64 {
        let per = u128::from(self.e) * u128::from(facts_size) / u128::from(ELEMENT);
        self.c
            .saturating_add(u64::try_from(per).unwrap_or(u64::MAX))
    }
}

/// One rule's worst case on any facts, with its biggest part named.
#[derive(Debug, Clone)]
pub struct RuleCost {
    pub name: String,
    /// Its first evaluation.
    pub cost: Lin,
    /// Each later one with the same budget.
    pub again: Lin,
    /// Its parts, each in words.
    pub parts: Vec<(String, Lin)>,
    /// Its work on features.d's elements in every evaluation the boot
    /// path may run (within `local_limit`).
    pub local: Lin,
}

/// Per-rule worst cases of one evaluation (in rule order) and the total,
/// the taint merge included: the units `evaluate_node_without` may charge
/// on facts of any size `s`, at most `total.at(s)`.
pub fn worst_case(rules: &[super::Rule]) -> Worst {
    use super::template::DataBounds;
    use super::{EVAL_UNITS, LABEL_COPIES, Op, RULE_UNITS, Term};

    // `rule.matched` so far: its pairs and bytes (labels and vars of the
    // rules before, static or made by templates).
    let mut br_pairs: u64 = 0;
    let mut br_bytes: u64 = 0;
    let mut taints: u64 = 0;
    let mut total = Lin::ZERO;
    let mut rerun = Lin::ZERO;
    let mut out = Vec::with_capacity(rules.len());
    for rule in rules {
        let mut parts: Vec<(String, Lin)> = Vec::new();
        let br_elements = Lin::ELEMENTS.plus(Lin::c(br_pairs));
        let br_string = Lin::BYTES.plus(Lin::c(br_bytes));
        // A term: (its cost, the elements and the bytes it may add to the data).
        let term = |t: &Term| -> (Lin, Lin, Lin, Lin) {
            let backref = super::go_lower_ascii(&t.feature) == super::BACKREF_FEATURE;
            let (elems, bytes) = if backref {
                (br_elements, br_string)
            } else {
                (Lin::ELEMENTS, Lin::BYTES)
            };
            // The kinds of one feature (flags, attributes, instances)
            // together are at most all of it.
            let elems3 = elems;
            let bytes3 = bytes;
            // Looked up, and recorded per matched block.
            let mut cost = Lin::c(2 * ELEMENT + 4 * t.feature.len() as u64);
            let mut pushed = Lin::ZERO;
            let per_expr = |e: &super::Expr| -> (u64, u64) {
                let regex: u64 = if e.op == Op::InRegexp {
                    e.regexes
                        .iter()
                        .flatten()
                        .map(|re| REGEX_UNITS * re.char_bound())
                        .sum()
                } else {
                    0
                };
                (EVAL_UNITS + e.value.len() as u64, regex)
            };
            // One eval on each element, its value within `bytes`.
            let evals = |k: u64, r: u64| {
                elems3
                    .times(k + r)
                    .plus(bytes3.times(1 + r))
                    .plus(Lin::c(k + r))
            };
            // A pushed `Name`/`Value` element.
            let name_elem = Lin::c(3 * ELEMENT + 9);
            for (key, e) in t.match_expressions.iter().flatten() {
                let (k, r) = per_expr(e);
                // Flags and attributes: one lookup each; instances: each.
                cost = cost
                    .plus(
                        Lin::c(2 * k)
                            .plus(bytes.times(2 + 2 * r))
                            .plus(Lin::c(2 * r)),
                    )
                    .plus(evals(k, r));
                pushed = pushed
                    .plus(name_elem.times(2))
                    .plus(Lin::c(2 * key.len() as u64))
                    .plus(bytes);
            }
            if t.match_expressions.is_some() {
                // Matching instances, copied.
                pushed = pushed.plus(bytes3);
            }
            if let Some(e) = &t.match_name {
                let (k, r) = per_expr(e);
                cost = cost.plus(evals(k, r));
                pushed = pushed
                    .plus(elems3.product(name_elem).unwrap_or(elems3))
                    .plus(bytes3.times(2));
            }
            // Pushed once, recorded (copied) once per matched block.
            let data_elems = elems3.times(2).plus(Lin::c(
                1 + 2 * t.match_expressions.as_ref().map_or(0, |v| v.len() as u64),
            ));
            // A `Name` value is an expression's key.
            let keys = t
                .match_expressions
                .iter()
                .flatten()
                .map(|(k, _)| k.len() as u64)
                .max()
                .unwrap_or(0);
            (
                cost.plus(pushed.times(2)),
                data_elems,
                bytes.max(Lin::c(keys)),
                pushed,
            )
        };
        let mut blocks: Vec<&[Term]> = rule.match_any.iter().map(Vec::as_slice).collect();
        if !rule.match_features.is_empty() {
            blocks.push(&rule.match_features);
        }
        let templates = [
            ("labelsTemplate", &rule.labels_template),
            ("varsTemplate", &rule.vars_template),
        ];
        let mut outputs: u64 = 0;
        let mut pairs: u64 = 0;
        // Matched elements recorded (copied again when a memo is reused).
        let mut recorded = Lin::ZERO;
        // Its work on features.d's elements (`local_limit`): its terms on
        // them in full, the templates of a block with one in full (the
        // evaluator charges a part), what they recorded.
        let mut local = Lin::ZERO;
        let mut local_recorded = Lin::ZERO;
        for (b, block) in blocks.iter().enumerate() {
            let mut block_local = false;
            let mut elements = Lin::ZERO;
            let mut bytes = Lin::ZERO;
            let what = if b < rule.match_any.len() {
                format!("matchAny[{b}]")
            } else {
                "matchFeatures".to_string()
            };
            for t in *block {
                let (c, e, by, pushed) = term(t);
                recorded = recorded.plus(pushed);
                if LOCAL_FEATURES.contains(&super::go_lower_ascii(&t.feature).as_str()) {
                    block_local = true;
                    local = local.plus(c);
                    local_recorded = local_recorded.plus(pushed);
                }
                elements = elements.plus(e);
                bytes = bytes.max(by);
                let programs: Vec<String> = t
                    .match_expressions
                    .iter()
                    .flatten()
                    .map(|(_, e)| e)
                    .chain(&t.match_name)
                    .flat_map(|e| e.regexes.iter().flatten())
                    .map(|re| re.program_len().to_string())
                    .collect();
                let detail = if programs.is_empty() {
                    format!("{what} on {}", t.feature)
                } else {
                    format!(
                        "{what}: InRegexp on {} (compiled programs of {} instructions, each run over every value)",
                        t.feature,
                        programs.join(", ")
                    )
                };
                parts.push((detail, c));
            }
            let bounds = DataBounds { elements, bytes };
            for (what, t) in templates {
                if let Some(super::RuleTemplate(Ok(t))) = t {
                    let run = t.worst_case(&bounds);
                    if block_local {
                        local = local.plus(run.units);
                    }
                    outputs += run.output;
                    pairs += run.output / 2 + 1;
                    let detail = if run.capped {
                        format!(
                            "{what}: ranges within ranges over node facts, up to {} steps a run",
                            super::template::MAX_STEPS
                        )
                    } else {
                        format!("{what}: up to {} units a run", run.units.c)
                    };
                    parts.push((detail, run.units));
                }
            }
        }
        // Output pairs: static ones and what templates print, copied.
        let statics: u64 = rule
            .labels
            .iter()
            .chain(&rule.vars)
            .map(|(k, v)| PAIR_UNITS + (k.len() + v.len()) as u64)
            .sum();
        let made = outputs + pairs * PAIR_UNITS;
        let outputs_cost =
            Lin::c(LABEL_COPIES * (statics + made) + RULE_UNITS + rule.name.len() as u64);
        parts.push(("its labels and vars".to_string(), outputs_cost));
        br_pairs += (rule.labels.len() + rule.vars.len()) as u64 + pairs;
        br_bytes += statics + outputs;
        taints += rule.taints.len() as u64;
        let cost = parts.iter().fold(Lin::ZERO, |a, (_, c)| a.plus(*c));
        // Evaluated again with the same budget: run again when it reads
        // `rule.matched`, else what it gave copied.
        let again = if super::reads_backref(rule) {
            cost
        } else {
            recorded.plus(outputs_cost)
        };
        let local_again = if super::reads_backref(rule) {
            local
        } else {
            local_recorded
        };
        total = total.plus(cost);
        rerun = rerun.plus(again);
        out.push(RuleCost {
            name: rule.name.clone(),
            cost,
            again,
            parts,
            local: local.plus(local_again.times(evaluations(rules) - 1)),
        });
    }
    let merge = Lin::c(TAINT_UNITS * taints * (taints + 1));
    let k = evaluations(rules);
    let boot = total.plus(merge).plus(rerun.plus(merge).times(k - 1));
    let local = out.iter().fold(Lin::ZERO, |a, r| a.plus(r.local));
    Worst {
        rules: out,
        once: total.plus(merge),
        boot,
        local,
        evaluations: k,
    }
}

/// `worst_case`'s answer.
#[derive(Debug, Clone)]
pub struct Worst {
    pub rules: Vec<RuleCost>,
    /// One evaluation with a fresh budget.
    pub once: Lin,
    /// Every evaluation the boot path may run, on one budget.
    pub boot: Lin,
    /// The part of `boot` on features.d's elements (within `local_limit`:
    /// its constant part within `LOCAL_BASE`).
    pub local: Lin,
    pub evaluations: u64,
}

/// Budget units per taint per taint already merged.
pub const TAINT_UNITS: u64 = 8;

/// How many evaluations the boot path may run (`wrapper::derived`): one,
/// and one more after reading the features `@` values name. (A label or
/// taint kubelet would refuse is left out alone: no evaluation again.)
pub fn evaluations(_rules: &[super::Rule]) -> u64 {
    2
}

/// Render's check: on any facts, every evaluation the boot path may run,
/// together, within `Budget::for_facts`. The error names the rule that
/// costs most, its costliest part and the limit.
pub fn check(rules: &[super::Rule]) -> Result<(), String> {
    let worst = worst_case(rules);
    let (costs, k) = (&worst.rules, worst.evaluations);
    let fixed = worst.boot.c;
    let per = worst.boot.e;
    let per_limit = PER_FACT * ELEMENT;
    if worst.local.c > LOCAL_BASE {
        let name = costs
            .iter()
            .rev()
            .max_by_key(|r| r.local.c)
            .map_or("", |r| r.name.as_str());
        return Err(format!(
            "the node rules could need {} units of work (about a nanosecond each) at boot on \
             features.d's facts (local.label, local.feature) whatever their size, more than the \
             {LOCAL_BASE} the wrapper allows there (evaluated up to {k} times per kubelet start); \
             the costliest is rule {}; make its templates over them loop or print less, or use \
             fewer templated rules on them",
            worst.local.c,
            super::shown_name(name)
        ));
    }
    if fixed <= BASE && per <= per_limit {
        return Ok(());
    }
    let by_fixed = fixed > BASE;
    let part = |l: &Lin| if by_fixed { l.c } else { l.e };
    // The first of the costliest rules, and its costliest part.
    let worst = costs
        .iter()
        .rev()
        .max_by_key(|r| part(&r.cost.plus(r.again.times(k - 1))))
        .map(|r| {
            let p = r.parts.iter().rev().max_by_key(|(_, l)| part(l));
            (r.name.as_str(), p.map_or("", |(w, _)| w.as_str()))
        });
    let (name, biggest) = worst.unwrap_or(("", ""));
    let runs = format!(
        " (evaluated up to {k} times per kubelet start: once, and again after reading what `@` \
         values name)"
    );
    Err(if by_fixed {
        format!(
            "the node rules could need {fixed} units of work (about a nanosecond each) at boot \
             whatever the node's facts, more than the {BASE} the wrapper allows{runs}; the costliest \
             is rule {} ({biggest}); make that smaller (templates that loop or print less, shorter \
             InRegexp patterns over shorter template-made values), or use fewer templated rules",
            super::shown_name(name)
        )
    } else {
        format!(
            "the node rules could need {} units of work per element of node facts at boot, \
             more than the {per_limit} the wrapper allows{runs}; the costliest is rule {} ({biggest}); \
             use shorter InRegexp patterns, fewer expressions, or templates that walk the facts once",
            per,
            super::shown_name(name)
        )
    })
}
