//! Node rules: NFD `NodeFeatureRule` rules, evaluated against
//! `crate::facts::Features` at boot. std only: the wrapper calls this.
//! Reading the YAML (with positions and refusals) is render's job
//! (`crate::render::node_rules`); this module holds the rule model, its
//! compact form (`compact`, the contract between render and the wrapper)
//! and the evaluator. Knows nothing of systemd.

pub mod compact;

use std::collections::BTreeMap;

use crate::facts::Features;
use crate::kubelet::Taint;

/// NFD's default label namespace for keys without a prefix.
pub const DEFAULT_LABEL_PREFIX: &str = "feature.node.kubernetes.io/";

/// One `spec.rules[]` entry, reduced to what the node side evaluates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub name: String,
    /// Static labels as written (the default prefix is added on output).
    pub labels: Vec<(String, String)>,
    /// `labelsTemplate` source (Go text/template subset, see `template`).
    pub labels_template: Option<String>,
    pub vars: Vec<(String, String)>,
    pub vars_template: Option<String>,
    pub taints: Vec<Taint>,
    /// All terms must match.
    pub match_features: Vec<Term>,
    /// Any of these `matchFeatures` blocks may match.
    pub match_any: Vec<Vec<Term>>,
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    pub op: Op,
    pub value: Vec<String>,
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

/// One matched element as a template sees it (`.vendor`, or `.Name`/`.Value`
/// for flag and attribute features).
pub type Element = BTreeMap<String, String>;

/// What one rule gave on this node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleResult {
    pub name: String,
    pub matched: bool,
    /// Why the rule could not be evaluated (NFD skips such a rule too).
    pub error: Option<String>,
    /// `<domain>.<feature>` → the elements the rule matched.
    pub matched_features: BTreeMap<String, Vec<Element>>,
    /// Output labels, keys with the default prefix where they had none.
    pub labels: Vec<(String, String)>,
    pub vars: Vec<(String, String)>,
    pub taints: Vec<Taint>,
}

/// Evaluate `rules` in order against `features`, as nfd-master does (each
/// later rule sees earlier rules' labels and vars as `rule.matched`).
pub fn evaluate(rules: &[Rule], features: &Features) -> Vec<RuleResult> {
    let _ = (rules, features);
    Vec::new()
}
