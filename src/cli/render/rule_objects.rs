//! NodeFeatureRule objects read into `rules::Rule`s, each rule with what
//! the node cannot evaluate (an error naming `FILE:LINE:COL` and the fix)
//! and what leaving it to the cluster's NFD would change. Below both
//! `node_rules` (the files' entry points) and `leave_to_nfd`.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Result, bail};
use serde_saphyr::Spanned;

use super::rule_yaml::{Ctx, Node, field};
use crate::node::kubelet::{self, Profile, Taint, TaintEffect};
use crate::node::rules::{self, DEFAULT_LABEL_PREFIX, Expr, Op, Rule, RuleTemplate, Term};

/// The API versions NFD serves `NodeFeatureRule` under (upstream, and
/// OpenShift's NFD operator).
pub const API_VERSIONS: &[&str] = &[
    "nfd.k8s-sigs.io/v1alpha1",
    "nfd.openshift.io/v1",
    "nfd.openshift.io/v1alpha1",
];

/// One NodeFeatureRule object as read: its rules, each evaluable or not.
pub(super) struct RuleObject {
    pub name: String,
    /// The file's name as errors show it.
    pub source: String,
    pub rules: Vec<ReadRule>,
}

/// One `spec.rules[]` entry: the rule, or why the node cannot evaluate it
/// (an error naming `FILE:LINE:COL`), and what leaving it to the cluster's
/// NFD would change, read from the YAML so that it is known either way.
pub(super) struct ReadRule {
    pub name: String,
    pub rule: Result<Rule>,
    /// A non-empty `taints`.
    pub sets_taints: bool,
    /// The keys it may put in `rule.matched` (static `labels` and `vars`).
    pub output_keys: BTreeSet<String>,
    /// A template (or a field we cannot list) may put any key there.
    pub output_any: bool,
    /// The `rule.matched` keys its `@rule.matched.KEY` label values read
    /// (resolved after every rule has run, so from later rules too).
    pub at_backref_keys: BTreeSet<String>,
    /// A template that may make such a value (its source holds an `@`).
    pub at_backref_any: bool,
    /// Its static `labels`' keys, as written.
    pub label_keys: BTreeSet<String>,
    /// A `labelsTemplate` (or `labels` we cannot list) may give any label.
    pub labels_any: bool,
}

/// The objects of rule files (`-` is stdin) in the order given.
pub(super) fn read_objects(
    paths: &[impl AsRef<Path>],
    profile: Profile,
) -> Result<Vec<RuleObject>> {
    let mut objects: Vec<RuleObject> = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let (text, source) = super::input::read_text(path, super::input::RULES)?;
        for (name, rules) in read_rule_objects(&text, &source, profile)? {
            if let Some(first) = objects.iter().find(|o| o.name == name) {
                bail!(
                    "{source}: a second NodeFeatureRule named {name:?} (the first is in {}); \
                     names are unique in a cluster, rename one",
                    first.source
                );
            }
            objects.push(RuleObject {
                name,
                source: source.clone(),
                rules,
            });
        }
    }
    Ok(objects)
}

/// `parse_rule_objects` with each rule's refusal kept beside it.
pub(super) fn read_rule_objects(
    text: &str,
    source: &str,
    profile: Profile,
) -> Result<Vec<(String, Vec<ReadRule>)>> {
    // As kubectl reads what it applies to the cluster (rules left to NFD
    // are), or refused.
    let docs: Vec<Spanned<Node>> = crate::cli::yaml::kube_yaml(text)
        .map_err(|e| anyhow::anyhow!("{source}: not YAML: {e:#}"))?;
    let cx = Ctx { source, text };
    let mut out = Vec::new();
    for doc in &docs {
        if matches!(doc.value, Node::Null) {
            continue;
        }
        let mut items = Vec::new();
        collect_objects(&cx, doc, &mut items)?;
        for obj in items {
            out.push(object(&cx, obj, profile)?);
        }
    }
    if out.is_empty() {
        bail!("{source}: no NodeFeatureRule in this file");
    }
    Ok(out)
}

/// NodeFeatureRules, also inside a `List`/`NodeFeatureRuleList`.
fn collect_objects<'n>(
    cx: &Ctx,
    doc: &'n Spanned<Node>,
    out: &mut Vec<&'n Spanned<Node>>,
) -> Result<()> {
    let fields = cx.map(doc, "a document")?;
    let kind = match field(fields, "kind") {
        Some(k) => cx.string(k, "kind")?,
        None => {
            return cx.fail(
                doc,
                "a document without kind; expected kind: NodeFeatureRule",
            );
        }
    };
    match kind.as_str() {
        "NodeFeatureRule" => out.push(doc),
        "List" | "NodeFeatureRuleList" => {
            if let Some(items) = field(fields, "items") {
                for item in cx.seq(items, "items")? {
                    collect_objects(cx, item, out)?;
                }
            }
        }
        other => {
            let k = field(fields, "kind").expect("kind");
            return cx.fail(
                k,
                format!(
                    "kind {other:?} is not a NodeFeatureRule; give only NodeFeatureRule documents"
                ),
            );
        }
    }
    Ok(())
}

fn object(cx: &Ctx, obj: &Spanned<Node>, profile: Profile) -> Result<(String, Vec<ReadRule>)> {
    let fields = cx.map(obj, "a NodeFeatureRule")?;
    match field(fields, "apiVersion") {
        Some(v) => {
            let api = cx.string(v, "apiVersion")?;
            if !API_VERSIONS.contains(&api.as_str()) {
                return cx.fail(
                    v,
                    format!(
                        "apiVersion {api:?} is not one NFD serves NodeFeatureRule under ({})",
                        API_VERSIONS.join(", ")
                    ),
                );
            }
        }
        None => return cx.fail(obj, "a NodeFeatureRule without apiVersion"),
    }
    let name = match field(fields, "metadata") {
        Some(m) => match field(cx.map(m, "metadata")?, "name") {
            Some(n) => cx.string(n, "metadata.name")?,
            None => return cx.fail(m, "metadata has no name"),
        },
        None => return cx.fail(obj, "a NodeFeatureRule without metadata.name"),
    };
    for (k, _) in fields {
        if !["apiVersion", "kind", "metadata", "spec", "status"].contains(&k.value.as_str()) {
            return cx.unknown(
                k,
                "a NodeFeatureRule",
                &["apiVersion", "kind", "metadata", "spec"],
            );
        }
    }
    let Some(spec) = field(fields, "spec") else {
        return cx.fail(obj, "a NodeFeatureRule without spec");
    };
    let spec_fields = cx.map(spec, "spec")?;
    let mut rules = Vec::new();
    let mut names = BTreeSet::new();
    for (k, v) in spec_fields {
        if k.value != "rules" {
            return cx.unknown(k, "spec", &["rules"]);
        }
        for r in cx.seq(v, "spec.rules")? {
            let read = read_rule(cx, r, profile)?;
            if !names.insert(read.name.clone()) {
                return cx.fail(
                    r,
                    format!(
                        "a second rule named {:?} in {name:?}; rename one",
                        read.name
                    ),
                );
            }
            rules.push(read);
        }
    }
    Ok((name, rules))
}

const RULE_FIELDS: &[&str] = &[
    "name",
    "labels",
    "labelsTemplate",
    "vars",
    "varsTemplate",
    "taints",
    "matchFeatures",
    "matchAny",
];

/// A rule with its name (without one, the file is refused whatever is
/// left to NFD) and what it sets, whether or not the node can evaluate it.
fn read_rule(cx: &Ctx, n: &Spanned<Node>, profile: Profile) -> Result<ReadRule> {
    let fields = cx.map(n, "a rule")?;
    let Some(name) = field(fields, "name") else {
        return cx.fail(n, "a rule without a name; every rule needs one");
    };
    let name = cx.string(name, "name")?;
    let set = |f: &str| field(fields, f).filter(|v| !matches!(v.value, Node::Null));
    let sets_taints =
        set("taints").is_some_and(|v| !matches!(&v.value, Node::Seq(s) if s.is_empty()));
    let mut label_keys = BTreeSet::new();
    let labels_any = set("labelsTemplate").is_some()
        || match set("labels").map(|v| &v.value) {
            Some(Node::Map(m)) => {
                label_keys.extend(m.iter().map(|(k, _)| k.value.clone()));
                false
            }
            Some(_) => true,
            None => false,
        };
    let mut output_keys = BTreeSet::new();
    let mut output_any = false;
    for f in ["labels", "vars"] {
        match set(f).map(|v| &v.value) {
            Some(Node::Map(m)) => output_keys.extend(m.iter().map(|(k, _)| k.value.clone())),
            Some(_) => output_any = true,
            None => {}
        }
    }
    if set("labelsTemplate").is_some() || set("varsTemplate").is_some() {
        output_any = true;
    }
    let at = format!("@{}.", rules::BACKREF_FEATURE);
    let mut at_backref_keys = BTreeSet::new();
    if let Some(Node::Map(m)) = set("labels").map(|v| &v.value) {
        for (_, v) in m {
            if let Node::Str(value) = &v.value
                && let Some(key) = value.strip_prefix(&at)
            {
                at_backref_keys.insert(key.to_string());
            }
        }
    }
    let at_backref_any = set("labelsTemplate")
        .is_some_and(|v| !matches!(&v.value, Node::Str(t) if !t.contains('@')));
    Ok(ReadRule {
        name,
        rule: rule(cx, n, profile),
        sets_taints,
        output_keys,
        output_any,
        at_backref_keys,
        at_backref_any,
        label_keys,
        labels_any,
    })
}

fn rule(cx: &Ctx, n: &Spanned<Node>, profile: Profile) -> Result<Rule> {
    let fields = cx.map(n, "a rule")?;
    let mut rule = Rule::default();
    let Some(name) = field(fields, "name") else {
        return cx.fail(n, "a rule without a name; every rule needs one");
    };
    rule.name = cx.string(name, "name")?;
    let what = |f: &str| format!("rule {:?}: {f}", rule.name);
    for (k, v) in fields {
        // NFD's Go types read a null as the field left out (and the API
        // server's structural schema prunes it).
        let known = RULE_FIELDS.contains(&k.value.as_str())
            || matches!(k.value.as_str(), "annotations" | "extendedResources");
        if matches!(v.value, Node::Null) && known && k.value != "name" {
            continue;
        }
        match k.value.as_str() {
            "name" => {}
            "labels" => {
                rule.labels = cx.string_map(v, &what("labels"))?;
                check_labels(cx, v, &rule.name, profile)?;
            }
            "vars" => rule.vars = cx.string_map(v, &what("vars"))?,
            "labelsTemplate" => rule.labels_template = template(cx, v, &what("labelsTemplate"))?,
            "varsTemplate" => rule.vars_template = template(cx, v, &what("varsTemplate"))?,
            "taints" => rule.taints = taints(cx, v, &what("taints"))?,
            "matchFeatures" => rule.match_features = terms(cx, v, &what("matchFeatures"))?,
            "matchAny" => {
                for elem in cx.seq(v, &what("matchAny"))? {
                    let elem_fields = cx.map(elem, &what("matchAny[]"))?;
                    let mut block = Vec::new();
                    for (ek, ev) in elem_fields {
                        if ek.value != "matchFeatures" {
                            return cx.unknown(ek, &what("matchAny[]"), &["matchFeatures"]);
                        }
                        block = terms(cx, ev, &what("matchAny[].matchFeatures"))?;
                    }
                    rule.match_any.push(block);
                }
            }
            "annotations" | "extendedResources" => {
                return cx.not_at_boot(
                    k,
                    format!(
                        "{}: {} are set by nfd-master on a running Node, not by kubelet at \
                         registration; keep this rule in the cluster's NFD and leave it out here",
                        what(&k.value),
                        k.value
                    ),
                );
            }
            _ => return cx.unknown(k, &what("the rule"), RULE_FIELDS),
        }
    }
    Ok(rule)
}

/// The parsed template (the node runs the tree; no template parser there).
fn template(cx: &Ctx, n: &Spanned<Node>, what: &str) -> Result<Option<RuleTemplate>> {
    let src = cx.string(n, what)?;
    if src.trim().is_empty() {
        return Ok(None);
    }
    let parsed = rules::template::parse(&src);
    if let Err(e) = &parsed {
        let (line, col) = rules::template::line_col(&src, e.offset);
        return cx.fail(
            n,
            format!(
                "{what}: {} (template line {line}, column {col}); the node evaluates NFD's \
                 template forms: range, if/else, len, index, fields",
                e.message
            ),
        );
    }
    Ok(Some(RuleTemplate(parsed.map_err(|e| e.message))))
}

fn taints(cx: &Ctx, n: &Spanned<Node>, what: &str) -> Result<Vec<Taint>> {
    let mut out: Vec<Taint> = Vec::new();
    for t in cx.seq(n, what)? {
        let mut key = None;
        let mut value = String::new();
        let mut effect = None;
        for (k, v) in cx.map(t, what)? {
            match k.value.as_str() {
                "key" => key = Some(cx.string(v, &format!("{what}.key"))?),
                "value" => value = cx.string(v, &format!("{what}.value"))?,
                "effect" => {
                    let e = cx.string(v, &format!("{what}.effect"))?;
                    effect = Some(TaintEffect::parse(&e).ok_or_else(|| {
                        anyhow::anyhow!(
                            "{}: {what}: effect {e:?} is not NoSchedule, PreferNoSchedule or NoExecute",
                            cx.at(v)
                        )
                    })?);
                }
                _ => return cx.unknown(k, what, &["key", "value", "effect"]),
            }
        }
        let (Some(key), Some(effect)) = (key, effect) else {
            return cx.fail(t, format!("{what}: a taint needs key and effect"));
        };
        let taint = Taint { key, value, effect };
        if kubelet::parse_taints(&taint.to_string()).as_deref() != Ok(std::slice::from_ref(&taint))
        {
            return cx.fail(
                t,
                format!("{what}: kubelet would refuse the taint {taint}: write key (a qualified name) and value (a label value)"),
            );
        }
        if !taint.key.contains('/') {
            return cx.fail(
                t,
                format!(
                    "{what}: NFD refuses taint keys without a prefix ({:?}); use e.g. example.com/{}",
                    taint.key, taint.key
                ),
            );
        }
        if out
            .iter()
            .any(|o| o.key == taint.key && o.effect == taint.effect)
        {
            return cx.fail(
                t,
                format!(
                    "{what}: a second taint with key {:?} and effect {} (kubelet refuses both)",
                    taint.key,
                    taint.effect.as_str()
                ),
            );
        }
        out.push(taint);
    }
    Ok(out)
}

/// Domains whose features come from the node; `rule` is earlier rules'.
/// NFD looks a name up lower-cased (`PCI.Device` is `pci.device`); templates
/// still see it as written.
fn check_feature(cx: &Ctx, n: &Spanned<Node>, feature: &str, what: &str) -> Result<()> {
    let lookup = rules::go_lower_ascii(feature);
    if lookup == rules::BACKREF_FEATURE || crate::node::facts::FEATURES.contains(&lookup.as_str()) {
        return Ok(());
    }
    cx.not_at_boot(
        n,
        format!(
            "{what}: the node side does not read feature {feature:?}; it reads {} and rule.matched",
            crate::node::facts::FEATURES.join(", ")
        ),
    )
}

fn terms(cx: &Ctx, n: &Spanned<Node>, what: &str) -> Result<Vec<Term>> {
    let mut out = Vec::new();
    for t in cx.seq(n, what)? {
        let mut term = Term::default();
        let mut feature_node = None;
        for (k, v) in cx.map(t, what)? {
            // A null matchExpressions or matchName is one left out: the
            // term matches with no elements, as NFD's nil pointer does.
            let optional = matches!(k.value.as_str(), "matchExpressions" | "matchName");
            if matches!(v.value, Node::Null) && optional {
                continue;
            }
            match k.value.as_str() {
                "feature" => {
                    term.feature = cx.string(v, &format!("{what}.feature"))?;
                    feature_node = Some(v);
                }
                "matchExpressions" => {
                    let mut exprs = Vec::new();
                    for (attr, e) in cx.map(v, &format!("{what}.matchExpressions"))? {
                        let w = format!("{what}: {}", attr.value);
                        if matches!(e.value, Node::Null) {
                            return cx.fail(
                                e,
                                format!(
                                    "{w}: a null expression, which NFD's evaluator cannot \
                                     evaluate (nfd-master crashes on it); write {{op: Exists}} \
                                     or leave {} out",
                                    attr.value
                                ),
                            );
                        }
                        exprs.push((attr.value.clone(), expression(cx, e, &w)?));
                    }
                    term.match_expressions = Some(exprs);
                }
                "matchName" => {
                    term.match_name = Some(expression(cx, v, &format!("{what}.matchName"))?)
                }
                _ => return cx.unknown(k, what, &["feature", "matchExpressions", "matchName"]),
            }
        }
        let Some(fnode) = feature_node else {
            return cx.fail(t, format!("{what}: a term without feature"));
        };
        check_feature(cx, fnode, &term.feature, what)?;
        out.push(term);
    }
    Ok(out)
}

fn expression(cx: &Ctx, n: &Spanned<Node>, what: &str) -> Result<Expr> {
    let mut op = None;
    let mut value = Vec::new();
    let mut value_node = None;
    let mut version = false;
    for (k, v) in cx.map(n, what)? {
        // A null op, value or type is one left out, as in NFD's Go types.
        if matches!(v.value, Node::Null) && matches!(k.value.as_str(), "op" | "value" | "type") {
            continue;
        }
        match k.value.as_str() {
            "op" => {
                let name = cx.string(v, &format!("{what}: op"))?;
                op = Some(rules::compact::parse_op(&name).ok_or_else(|| {
                    anyhow::anyhow!(
                        "{}: {what}: unknown op {name:?}; NFD's are In, NotIn, InRegexp, Exists, \
                         DoesNotExist, Gt, Ge, Lt, Le, GtLt, GeLe, IsTrue, IsFalse",
                        cx.at(v)
                    )
                })?);
            }
            "value" => {
                value_node = Some(v);
                for item in cx.seq(v, &format!("{what}: value"))? {
                    value.push(cx.string(item, &format!("{what}: each value"))?);
                }
            }
            "type" => match cx.string(v, &format!("{what}: type"))?.as_str() {
                "" => {}
                "version" => version = true,
                other => {
                    return cx.fail(
                        v,
                        format!(
                            "{what}: type {other:?} is not one NFD knows (only \"version\", for \
                             Gt, Ge, Lt, Le, GtLt and GeLe); NFD fails such a comparison on \
                             every node"
                        ),
                    );
                }
            },
            _ => return cx.unknown(k, what, &["op", "value", "type"]),
        }
    }
    let op = op.unwrap_or(Op::Any);
    let at = value_node.unwrap_or(n);
    let count_err = |want: &str| {
        cx.fail(
            at,
            format!("{what}: op {} takes {want}", rules::compact::op_name(op)),
        )
    };
    match op {
        Op::Any | Op::Exists | Op::DoesNotExist | Op::IsTrue | Op::IsFalse if !value.is_empty() => {
            return count_err("no value");
        }
        Op::In | Op::NotIn | Op::InRegexp if value.is_empty() => {
            return count_err("at least one value");
        }
        Op::Gt | Op::Ge | Op::Lt | Op::Le if value.len() != 1 => {
            return count_err("exactly one value");
        }
        Op::GtLt | Op::GeLe if value.len() != 2 => return count_err("exactly two values"),
        _ => {}
    }
    let compares = matches!(op, Op::Gt | Op::Ge | Op::Lt | Op::Le | Op::GtLt | Op::GeLe);
    if compares && version {
        // NFD does not order the two bounds of a version range.
        if let Some(v) = value.iter().find(|v| rules::version(v).is_none()) {
            return cx.fail(
                at,
                format!(
                    "{what}: {v:?} is not a version (MAJOR[.MINOR[.PATCH]], an optional v \
                     before and -pre-release or +build after)"
                ),
            );
        }
    } else if compares {
        let mut ints = Vec::new();
        for v in &value {
            match go_atoi(v) {
                Some(i) => ints.push(i),
                None => return cx.fail(at, format!("{what}: {v:?} is not an integer")),
            }
        }
        if ints.len() == 2 && ints[0] >= ints[1] {
            return cx.fail(
                at,
                format!("{what}: the first value must be less than the second"),
            );
        }
    }
    let mut regexes = Vec::new();
    if op == Op::InRegexp {
        // Compiled here: the node runs the programs (no regexp parser there).
        for v in std::mem::take(&mut value) {
            match rules::regex::Regex::new(&v) {
                Ok(re) => regexes.push(Ok(re)),
                Err(e) => return cx.fail(at, format!("{what}: regexp {v:?}: {e}")),
            }
        }
    }
    Ok(Expr {
        op,
        value,
        regexes,
        version,
    })
}

/// Go's strconv.Atoi: optional sign, decimal digits, fits in 64 bits.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Static labels: what kubelet (with `profile`) and NFD accept, each error
/// pointing at the label.
fn check_labels(cx: &Ctx, labels: &Spanned<Node>, rule: &str, profile: Profile) -> Result<()> {
    for (key, value) in cx.map(labels, "labels")? {
        let full = if key.value.contains('/') {
            key.value.clone()
        } else {
            format!("{DEFAULT_LABEL_PREFIX}{}", key.value)
        };
        let value = cx.string(value, "a label value")?;
        let (ns, name) = full.split_once('/').unwrap_or(("", full.as_str()));
        let in_domain = |d: &str| ns == d || ns.ends_with(&format!(".{d}"));
        let nfd_ok = !in_domain("kubernetes.io")
            || in_domain("feature.node.kubernetes.io")
            || in_domain("profile.node.kubernetes.io");
        if !nfd_ok {
            return cx.fail(
                key,
                format!(
                    "rule {rule:?}: label {full}: NFD refuses the namespace {ns} (and kubelet \
                     most of it), so the cluster's NFD would never write it; use \
                     feature.node.kubernetes.io/{name} or a domain of your own, e.g. \
                     example.com/{name}"
                ),
            );
        }
        // An `@domain.feature.element` value is the node's, resolved at
        // boot (and checked there): only the key is checked here.
        let checked = if value.starts_with('@') {
            String::new()
        } else {
            value.clone()
        };
        let pair = [(full.clone(), checked)];
        if let Some(e) = kubelet::validate_labels(&pair, profile).first() {
            return cx.fail(key, format!("rule {rule:?}: label {full}={value}: {e}"));
        }
        if let Some(why) = super::additions::per_node_key(&full) {
            return cx.fail(key, format!("rule {rule:?}: label {full}={value}: {why}"));
        }
    }
    Ok(())
}
