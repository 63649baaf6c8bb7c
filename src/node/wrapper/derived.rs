//! Labels and taints derived from the node itself: NFD's built-in label set
//! and the user's NodeFeatureRules, evaluated on the node's facts. The
//! wrapper and `explain` both call this, so they agree.

use std::ffi::OsString;

use crate::node::contract::{NFD_LABELS_VAR, RULES_VAR};
use crate::node::facts::{Features, NfdFlavour};
use crate::node::kubelet::{self, Additions, Profile, Taint};
use crate::node::rules::{self, Element, Rule};
use crate::node::sorted::{SortedMap, SortedSet};

/// What the environment asks us to derive from the node.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Decoded rules, or why they could not be read.
    pub rules: Option<Result<Vec<Rule>, String>>,
    pub nfd_labels: Option<Result<NfdFlavour, String>>,
}

impl Sources {
    /// Nothing to derive: the node's facts need not be read at all.
    pub fn is_empty(&self) -> bool {
        self.rules.is_none() && self.nfd_labels.is_none()
    }
}

/// What one rule gave on this node, and what became of it.
#[derive(Debug, Clone, Default)]
pub struct RuleReport {
    pub name: String,
    pub matched: bool,
    /// `<domain>.<feature>` → the elements the rule matched.
    pub matched_features: SortedMap<String, Vec<Element>>,
    pub labels: Vec<(String, String)>,
    pub taints: Vec<Taint>,
    /// Why this rule's output is not registered (evaluation error, or a
    /// label/taint kubelet would refuse).
    pub left_out: Option<String>,
}

/// Everything derived from the node, before the static labels/taints.
#[derive(Debug, Clone, Default)]
pub struct Derived {
    /// NFD built-in labels first, then each rule's in order (a later key wins).
    pub additions: Additions,
    pub rules: Vec<RuleReport>,
    /// Problems that dropped a whole source (undecodable rules, ...).
    pub problems: Vec<String>,
}

fn env_value(env: &[(OsString, OsString)], name: &str) -> Option<String> {
    env.iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.to_string_lossy().into_owned())
        .filter(|v| !v.trim().is_empty())
}

/// Whether the environment asks for anything derived (no decoding: the
/// static part is merged before any of it).
pub fn sources_in_env(env: &[(OsString, OsString)]) -> bool {
    env_value(env, RULES_VAR).is_some() || env_value(env, NFD_LABELS_VAR).is_some()
}

/// Every taint the node rules of `env` (the pool's and the role's) give a
/// node they match, matched here or not; rules that cannot be read give
/// none. How the day-2 sync tells a stale taint of ours from a user's.
pub fn rule_taints(env: &[(OsString, OsString)]) -> Vec<Taint> {
    let mut out = Vec::new();
    for var in [RULES_VAR, crate::node::contract::ROLE_RULES_VAR] {
        if let Some(Ok(rules)) = env_value(env, var).map(|text| rules::compact::decode(&text)) {
            out.extend(rules.into_iter().flat_map(|r| r.taints));
        }
    }
    out
}

/// Read the rules and the NFD flavour from the environment systemd built.
pub fn sources_from_env(env: &[(OsString, OsString)]) -> Sources {
    Sources {
        rules: env_value(env, RULES_VAR)
            .map(|text| rules::compact::decode(&text).map_err(|e| format!("{RULES_VAR}: {e}"))),
        nfd_labels: env_value(env, NFD_LABELS_VAR).map(|v| match v.trim() {
            "upstream" => Ok(NfdFlavour::Upstream),
            "openshift" => Ok(NfdFlavour::OpenShift),
            other => Err(format!(
                "{NFD_LABELS_VAR}={other:?} is neither upstream nor openshift"
            )),
        }),
    }
}

/// The facts the sources read: only these are read at boot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FactsUsed {
    /// `<domain>.<feature>` names.
    pub features: SortedSet<String>,
    /// Of the optional element attributes (`facts::OPTIONAL_ATTRIBUTES`),
    /// `<feature>.<attribute>`; None = all of them.
    pub attributes: Option<SortedSet<String>>,
}

/// What the rules read (their terms, `@domain.feature.element` label
/// values; an element attribute when an expression names it, all of them
/// when a template or `matchName` could see any) and NFD's label set.
pub fn facts_used(sources: &Sources) -> FactsUsed {
    let mut used = FactsUsed {
        attributes: Some(SortedSet::new()),
        ..Default::default()
    };
    if let Some(Ok(_)) = &sources.nfd_labels {
        used.features.extend(
            crate::node::facts::NFD_LABEL_FEATURES
                .iter()
                .map(|f| f.to_string()),
        );
        if let Some(a) = &mut used.attributes {
            a.extend(
                crate::node::facts::NFD_LABEL_ATTRIBUTES
                    .iter()
                    .map(|f| f.to_string()),
            );
        }
    }
    let Some(Ok(rules)) = &sources.rules else {
        return used;
    };
    for r in rules {
        if r.labels_template.is_some() || r.vars_template.is_some() {
            used.attributes = None;
        }
        for t in r.match_features.iter().chain(r.match_any.iter().flatten()) {
            let feature = rules::go_lower_ascii(&t.feature);
            if t.match_name.is_some() {
                used.attributes = None;
            }
            if let Some(a) = &mut used.attributes {
                for (key, _) in t.match_expressions.iter().flatten() {
                    a.insert(format!("{feature}.{key}"));
                }
            }
            used.features.insert(feature);
        }
        for (_, v) in &r.labels {
            if let Some(path) = v.strip_prefix('@') {
                let mut parts = path.splitn(3, '.');
                if let (Some(d), Some(f)) = (parts.next(), parts.next()) {
                    let feature = format!("{d}.{f}").to_ascii_lowercase();
                    // `@kernel.config.NO_HZ` reads that option.
                    if let (Some(a), Some(key)) = (&mut used.attributes, parts.next()) {
                        a.insert(format!("{feature}.{key}"));
                    }
                    used.features.insert(feature);
                }
            }
        }
    }
    used
}

/// Why kubelet would refuse this rule output, if it would.
fn refusal(labels: &[(String, String)], taints: &[Taint], profile: Profile) -> Option<String> {
    if let Some(e) = kubelet::validate_labels(labels, profile).first() {
        return Some(e.to_string());
    }
    // A taint must survive the trip through --register-with-taints unchanged.
    taints
        .iter()
        .find(|t| kubelet::parse_taints(&t.to_string()).as_deref() != Ok(std::slice::from_ref(*t)))
        .map(|t| format!("taint {t}: kubelet would refuse it"))
}

/// The keys of `labels` kubelet would refuse, each with why: one pass of
/// kubelet's checks over the whole set (NFD's label set is hundreds).
fn refused_labels(labels: &[(String, String)], profile: Profile) -> Vec<(String, String)> {
    kubelet::validate_labels(labels, profile)
        .into_iter()
        .map(|e| {
            let key = match &e {
                kubelet::labels::LabelError::NotSelfSettable { key, .. }
                | kubelet::labels::LabelError::InvalidKey { key, .. }
                | kubelet::labels::LabelError::InvalidValue { key, .. } => key.clone(),
            };
            (key, e.to_string())
        })
        .collect()
}

/// Reads the features named (`<domain>.<feature>`) from the node: how
/// `derive` reads what an `@` value names beyond `facts_used`.
pub type ReadMore<'a> = &'a mut dyn FnMut(&SortedSet<String>) -> Features;

/// Evaluate `sources` on `features` (read as `facts_used` says). A label or
/// taint kubelet would refuse is left out alone, as nfd-master leaves out
/// one it refuses: the rest of its rule stays. Err: the evaluation as a
/// whole failed (its budget, say); the caller keeps the static part.
/// `keep_matched`: each rule's matched elements kept (`explain` shows
/// them); the boot path and the sync keep none, so their memory does not
/// grow with the facts per rule that walks them.
pub fn derive(
    sources: &Sources,
    features: &mut Features,
    profile: Profile,
    read_more: ReadMore,
    keep_matched: bool,
) -> Result<Derived, super::fence::Failure> {
    use super::fence::{Failure, Reason};
    // Facts not read whole (features.d past its bounds): nothing is
    // derived from part of them.
    if let Some(why) = features.incomplete() {
        return Err(Failure::new(Reason::FeaturesUnreadable, why.to_string()));
    }
    let mut out = Derived::default();
    match &sources.nfd_labels {
        Some(Ok(flavour)) => {
            let mut labels = crate::node::facts::nfd_labels(features, *flavour);
            for (key, why) in refused_labels(&labels, profile) {
                crate::node::retain(&mut labels, &mut |(k, _)| *k != key);
                out.problems
                    .push(format!("NFD built-in label left out: {why}"));
            }
            out.additions.labels.extend(labels);
        }
        Some(Err(e)) => out.problems.push(e.clone()),
        None => {}
    }
    match &sources.rules {
        Some(Ok(rules)) => {
            let read = facts_used(sources).features;
            let budget = rules::Budget::for_facts(features);
            let budget = if keep_matched {
                budget
            } else {
                budget.without_matched()
            };
            derive_rules(rules, features, read, profile, read_more, budget, &mut out)?
        }
        Some(Err(e)) => out.problems.push(e.clone()),
        None => {}
    }
    Ok(out)
}

/// `label k=v` for a line of text: a key or value a template made may hold
/// control characters or escape sequences; such a one is quoted and escaped
/// as rule names are ([`rules::shown_name`]).
pub fn shown_label(key: &str, value: &str) -> String {
    format!("{}={}", rules::shown_name(key), rules::shown_name(value))
}

/// The node's attribute features that `@` values of these results name and
/// that were not read (a template can make any `@` value): NFD resolves
/// them against every feature.
fn unread_dynamic(results: &[rules::RuleResult], read: &SortedSet<String>) -> SortedSet<String> {
    let mut out = SortedSet::new();
    for (_, v) in results.iter().flat_map(|r| &r.labels) {
        let Some(path) = v.strip_prefix('@') else {
            continue;
        };
        let mut parts = path.splitn(3, '.');
        if let (Some(d), Some(f), Some(_)) = (parts.next(), parts.next(), parts.next()) {
            let name = format!("{d}.{f}");
            if crate::node::one_of(crate::node::facts::FEATURES, &name) && !read.contains(&name) {
                out.insert(name);
            }
        }
    }
    out
}

/// Rules as nfd-master would apply them (its merge and filters), then
/// kubelet's refusals on top of nfd-master's: each refused label or taint
/// is left out alone (later rules saw it as `rule.matched`, as they see a
/// label nfd-master drops), never the rest of its rule.
fn derive_rules(
    rules: &[Rule],
    features: &mut Features,
    read: SortedSet<String>,
    profile: Profile,
    read_more: ReadMore,
    mut budget: rules::Budget,
    out: &mut Derived,
) -> Result<(), super::fence::Failure> {
    // One budget for every evaluation below (see rules::budget); running
    // out of it leaves the rules out whole, the static part kept.
    let mut evaluate = |features: &Features| {
        rules::evaluate_node_without(rules, features, &[], &mut budget)
            .map_err(|e| format!("node rules left out: {e}"))
    };
    let mut outcome = evaluate(features)?;
    let more = unread_dynamic(&outcome.results, &read);
    if !more.is_empty() {
        let extra = read_more(&more);
        if let Some(why) = extra.incomplete() {
            return Err(super::fence::Failure::new(
                super::fence::Reason::FeaturesUnreadable,
                why.to_string(),
            ));
        }
        features.flags.extend(extra.flags);
        features.attributes.extend(extra.attributes);
        features.instances.extend(extra.instances);
        outcome = evaluate(features)?;
    }
    // The rule a registered label comes from: the last that sets its key.
    let owner = |results: &[rules::RuleResult], key: &str| {
        results
            .iter()
            .rev()
            .find(|r| r.labels.iter().any(|(k, _)| k == key))
            .map(|r| rules::shown_name(&r.name).into_owned())
            .unwrap_or_default()
    };
    let mut refused = Vec::new();
    for (key, why) in refused_labels(&outcome.labels, profile) {
        let rule = owner(&outcome.results, &key);
        crate::node::retain(&mut outcome.labels, &mut |(k, v)| {
            let keep = *k != key;
            if !keep {
                refused.push(format!(
                    "rule {rule}: {why}; label {} left out alone",
                    shown_label(k, v)
                ));
            }
            keep
        });
    }
    crate::node::retain(&mut outcome.taints, &mut |t| match refusal(
        &[],
        std::slice::from_ref(t),
        profile,
    ) {
        None => true,
        Some(why) => {
            refused.push(format!("{why}; that taint left out alone"));
            false
        }
    });
    out.problems.extend(refused);
    let in_final = |key: &str| {
        outcome
            .labels
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .is_ok()
    };
    out.rules = outcome
        .results
        .iter_mut()
        .map(|r| RuleReport {
            name: r.name.clone(),
            matched: r.matched,
            // Moved, not cloned: matched device maps are the bulk of it.
            matched_features: std::mem::take(&mut r.matched_features),
            // Its own values, where NFD and kubelet keep the key.
            labels: r
                .resolved
                .iter()
                .filter(|(k, _)| in_final(k))
                .cloned()
                .collect(),
            taints: r
                .taints
                .iter()
                .filter(|t| outcome.taints.contains(t))
                .cloned()
                .collect(),
            left_out: r.error.clone(),
        })
        .collect();
    out.additions.labels.extend(outcome.labels.iter().cloned());
    for t in &outcome.taints {
        // As nfd-master applies them: one taint per key and effect, the
        // later value in the earlier one's place.
        match out
            .additions
            .taints
            .iter_mut()
            .find(|o| o.key == t.key && o.effect == t.effect)
        {
            Some(o) => o.value = t.value.clone(),
            None => out.additions.taints.push(t.clone()),
        }
    }
    out.problems.extend(
        outcome
            .dropped
            .iter()
            .map(|d| format!("NFD would not apply {}", escape_controls(d))),
    );
    Ok(())
}

/// Control characters (CR, ESC, ...), line separators and the bidi
/// controls that reorder what follows them on a line (review 41 r41b F6:
/// U+202E showed `\u{202e}gnp.exe` as `exe.png`) in text made from node
/// facts or templates, escaped as Rust's `{:?}` does, for one line of
/// journal or terminal output.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| {
        c.is_control()
            || matches!(
                c,
                '\u{2028}'
                    | '\u{2029}'
                    | '\u{061c}'
                    | '\u{200e}'
                    | '\u{200f}'
                    | '\u{202a}'..='\u{202e}'
                    | '\u{2066}'..='\u{2069}'
            )
    };
    if !text.contains(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The most bytes of one journal line: journald splits a line past its
/// `LineMax=` (48 KiB by default), and what follows the split is a record of
/// its own, which text in it (a file's, the network's) could then forge.
pub const MAX_LINE: usize = 32 << 10;

/// `line` escaped (see [`escape_controls`]) and cut to [`MAX_LINE`] bytes.
pub fn journal_line(line: &str) -> std::borrow::Cow<'_, str> {
    let line = escape_controls(line);
    if line.len() <= MAX_LINE {
        return line;
    }
    std::borrow::Cow::Owned(cut_middle(&line, MAX_LINE))
}

/// `text` cut to about `most` bytes in its middle, its head and its tail
/// kept (the end of a summary says what was left out and why).
pub fn cut_middle(text: &str, most: usize) -> String {
    if text.len() <= most {
        return text.to_string();
    }
    let mut head = most / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (most / 2 - 64);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}... ({} bytes cut) ...{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// Static labels/taints win over derived ones on the same key (taints: key
/// and effect). Returns the merged additions and a note per override.
pub fn merge(static_: Option<&Additions>, derived: &Derived) -> (Additions, Vec<String>) {
    let empty = Additions::default();
    let static_ = static_.unwrap_or(&empty);
    let mut notes = Vec::new();
    let mut merged = Additions::default();
    for (k, v) in &derived.additions.labels {
        match static_.labels.iter().rev().find(|(sk, _)| sk == k) {
            Some((_, sv)) if sv != v => {
                notes.push(format!("static label {k}={sv} wins over derived {k}={v}"));
            }
            Some(_) => {}
            None => merged.labels.push((k.clone(), v.clone())),
        }
    }
    merged.labels.extend(static_.labels.iter().cloned());
    for t in &derived.additions.taints {
        match static_
            .taints
            .iter()
            .find(|s| s.key == t.key && s.effect == t.effect)
        {
            Some(s) if s != t => notes.push(format!("static taint {s} wins over derived {t}")),
            Some(_) => {}
            None => merged.taints.push(t.clone()),
        }
    }
    merged.taints.extend(static_.taints.iter().cloned());
    (merged, notes)
}

/// Whether these sources could give a taint on some node: a rule with a
/// taint (NFD never templates taints; its built-in label set gives none),
/// or rules that could not be decoded (then nobody can tell).
pub fn sources_may_taint(sources: &Sources) -> bool {
    match &sources.rules {
        None => false,
        Some(Ok(rules)) => rules.iter().any(|r| !r.taints.is_empty()),
        Some(Err(_)) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::kubelet::TaintEffect;

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.into(), v.into())
    }

    fn taint(k: &str, v: &str) -> Taint {
        Taint {
            key: k.into(),
            value: v.into(),
            effect: TaintEffect::NoSchedule,
        }
    }

    #[test]
    fn static_wins_and_says_so() {
        let derived = Derived {
            additions: Additions {
                labels: vec![kv("a", "1"), kv("b", "2")],
                taints: vec![taint("gpu", "true"), taint("x", "1")],
            },
            ..Default::default()
        };
        let static_ = Additions {
            labels: vec![kv("a", "9")],
            taints: vec![taint("gpu", "false")],
        };
        let (merged, notes) = merge(Some(&static_), &derived);
        assert_eq!(merged.labels, vec![kv("b", "2"), kv("a", "9")]);
        assert_eq!(merged.taints, vec![taint("x", "1"), taint("gpu", "false")]);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("a=9") && notes[0].contains("a=1"));
    }

    #[test]
    fn refused_output_is_named() {
        let why = refusal(
            &[kv("node-role.kubernetes.io/gpu-worker", "true")],
            &[],
            Profile::Upstream,
        )
        .unwrap();
        assert!(why.contains("node-role.kubernetes.io/gpu-worker"), "{why}");
        assert!(refusal(&[kv("nvidia.com/gpu", "true")], &[], Profile::Upstream).is_none());
        assert!(refusal(&[], &[taint("a,b", "c")], Profile::Upstream).is_some());
    }

    fn gpu_node() -> Features {
        let mut f = Features::default();
        let dev = |device: &str| -> Element {
            [("class", "0302"), ("vendor", "10de"), ("device", device)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        f.instances
            .insert("pci.device".into(), vec![dev("2330"), dev("2330")]);
        f
    }

    fn nvidia_term() -> rules::Term {
        rules::Term {
            feature: "pci.device".into(),
            match_expressions: Some(vec![(
                "vendor".into(),
                rules::Expr {
                    op: rules::Op::In,
                    value: vec!["10de".into()],
                    regexes: Vec::new(),
                    version: false,
                },
            )]),
            match_name: None,
        }
    }

    #[test]
    fn only_what_kubelet_would_refuse_is_left_out() {
        let good = Rule {
            name: "gpu".into(),
            labels: vec![kv("nvidia.com/gpu", "true")],
            labels_template: Some("gpu.count={{ len .pci.device }}".into()),
            taints: vec![taint("nvidia.com/gpu", "true")],
            match_features: vec![nvidia_term()],
            ..Default::default()
        };
        // NFD itself drops this label (kubernetes.io namespace): a note.
        let role = Rule {
            name: "role".into(),
            labels: vec![kv("node-role.kubernetes.io/gpu-worker", "true")],
            match_features: vec![nvidia_term()],
            ..Default::default()
        };
        // NFD keeps this taint, kubelet refuses it: the taint goes alone.
        let bad = Rule {
            name: "bad-taint".into(),
            labels: vec![kv("example.com/also", "1")],
            taints: vec![taint("example.com/t", "a b")],
            match_features: vec![nvidia_term()],
            ..Default::default()
        };
        let sources = Sources {
            rules: Some(Ok(vec![good, role, bad])),
            nfd_labels: None,
        };
        let d = derive(
            &sources,
            &mut gpu_node(),
            Profile::Upstream,
            &mut |_| Features::default(),
            true,
        )
        .unwrap();
        assert_eq!(
            d.additions.labels,
            vec![
                kv("example.com/also", "1"),
                kv("feature.node.kubernetes.io/gpu.count", "2"),
                kv("nvidia.com/gpu", "true")
            ]
        );
        assert_eq!(d.additions.taints, vec![taint("nvidia.com/gpu", "true")]);
        assert!(d.rules[0].left_out.is_none() && d.rules[0].matched);
        assert!(d.rules[1].left_out.is_none() && d.rules[1].labels.is_empty());
        assert!(
            d.problems
                .iter()
                .any(|p| p.contains("node-role.kubernetes.io/gpu-worker")),
            "{:?}",
            d.problems
        );
        assert!(d.rules[2].left_out.is_none());
        assert_eq!(d.rules[2].labels, vec![kv("example.com/also", "1")]);
        assert!(d.rules[2].taints.is_empty());
        assert!(
            d.problems.iter().any(|p| p.contains("example.com/t")),
            "{:?}",
            d.problems
        );
        assert_eq!(d.rules[0].matched_features["pci.device"].len(), 2);
        // The same rules on a node without the GPU give nothing.
        let d = derive(
            &sources,
            &mut Features::default(),
            Profile::Upstream,
            &mut |_| Features::default(),
            true,
        )
        .unwrap();
        assert!(d.additions.labels.is_empty() && d.additions.taints.is_empty());
        assert!(d.rules.iter().all(|r| !r.matched && r.left_out.is_none()));
    }

    /// A templated key kubelet refuses and NFD takes (`*.k8s.io/`): that
    /// label alone is left out; its rule's other labels and its static
    /// taint stay (a USB serial or DMI string must not remove a taint).
    #[test]
    fn a_refused_templated_key_drops_only_itself() {
        let first = Rule {
            name: "first".into(),
            labels: vec![kv("example.com/tier", "base")],
            match_features: vec![nvidia_term()],
            ..Default::default()
        };
        let second = Rule {
            name: "second".into(),
            labels: vec![kv("example.com/tier", "gpu")],
            labels_template: Some("x.k8s.io/count={{ len .pci.device }}".into()),
            taints: vec![taint("nvidia.com/gpu", "true")],
            match_features: vec![nvidia_term()],
            ..Default::default()
        };
        let sources = Sources {
            rules: Some(Ok(vec![first, second])),
            nfd_labels: None,
        };
        let d = derive(
            &sources,
            &mut gpu_node(),
            Profile::Upstream,
            &mut |_| Features::default(),
            true,
        )
        .unwrap();
        assert_eq!(d.additions.labels, vec![kv("example.com/tier", "gpu")]);
        assert_eq!(d.additions.taints, vec![taint("nvidia.com/gpu", "true")]);
        assert_eq!(d.rules[0].labels, vec![kv("example.com/tier", "base")]);
        assert!(d.rules.iter().all(|r| r.left_out.is_none()));
        assert_eq!(d.rules[1].taints, vec![taint("nvidia.com/gpu", "true")]);
        let note = d
            .problems
            .iter()
            .find(|p| p.contains("x.k8s.io/count"))
            .unwrap();
        assert!(
            note.contains("rule second") && note.contains("left out alone"),
            "{note}"
        );
    }

    /// Labels a template makes with escape sequences and carriage returns,
    /// refused by NFD or by kubelet: the notes that name them are one line
    /// of printable text.
    #[test]
    fn refused_template_text_reaches_notes_escaped() {
        let rule = Rule {
            name: "t".into(),
            labels_template: Some(
                "x.k8s.io/a\u{1b}[2J=1\nx.k8s.io/b=\r\u{1b}[31m\nx.k8s.io/c=ok".into(),
            ),
            match_features: vec![nvidia_term()],
            ..Default::default()
        };
        let sources = Sources {
            rules: Some(Ok(vec![rule])),
            nfd_labels: None,
        };
        let d = derive(
            &sources,
            &mut gpu_node(),
            Profile::Upstream,
            &mut |_| Features::default(),
            true,
        )
        .unwrap();
        assert!(d.problems.len() >= 3, "{:?}", d.problems);
        for p in &d.problems {
            assert!(!p.contains(|c: char| c.is_control()), "{p:?}");
        }
    }

    /// Template-made keys and values reach lines of text escaped.
    #[test]
    fn template_made_text_is_escaped() {
        assert_eq!(shown_label("a/b", "c"), "a/b=c");
        let shown = shown_label("x.k8s.io/a\rb", "\u{1b}[2J");
        assert!(!shown.contains(['\r', '\u{1b}']), "{shown}");
        assert_eq!(escape_controls("ok"), "ok");
        assert_eq!(escape_controls("a\r\u{2028}b"), "a\\r\\u{2028}b");
        // Review 41 r41b F6: the bidi controls, each escaped.
        for c in [
            '\u{061c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}',
        ] {
            let shown = escape_controls(&format!("a{c}b")).into_owned();
            assert_eq!(shown, format!("a\\u{{{:x}}}b", c as u32));
        }
    }

    /// An `@` value a template makes names a feature the rules do not
    /// match on: it is read then, as NFD resolves it against all features.
    #[test]
    fn template_dynamic_values_are_read() {
        let rule = Rule {
            name: "dyn".into(),
            labels_template: Some("a=@kernel.version.major\nb=@system.nope.x".into()),
            match_features: vec![nvidia_term()],
            ..Default::default()
        };
        let sources = Sources {
            rules: Some(Ok(vec![rule])),
            nfd_labels: None,
        };
        let mut asked = Vec::new();
        let d = derive(
            &sources,
            &mut gpu_node(),
            Profile::Upstream,
            &mut |more| {
                asked.extend(more.iter().cloned());
                let mut f = Features::default();
                f.attributes.insert(
                    "kernel.version".into(),
                    [("major".to_string(), "5".to_string())]
                        .into_iter()
                        .collect(),
                );
                f
            },
            true,
        )
        .unwrap();
        assert_eq!(asked, vec!["kernel.version".to_string()]);
        assert_eq!(
            d.additions.labels,
            vec![kv("feature.node.kubernetes.io/a", "5")]
        );
    }

    #[test]
    fn facts_used_names_the_attributes_expressions_read() {
        let rule = Rule {
            name: "gpu".into(),
            match_features: vec![nvidia_term()],
            ..Default::default()
        };
        let mut sources = Sources {
            rules: Some(Ok(vec![rule.clone()])),
            nfd_labels: None,
        };
        let used = facts_used(&sources);
        assert_eq!(used.features, SortedSet::from(["pci.device".to_string()]));
        assert_eq!(
            used.attributes,
            Some(SortedSet::from(["pci.device.vendor".to_string()]))
        );
        // NFD's label set adds its own.
        sources.nfd_labels = Some(Ok(NfdFlavour::OpenShift));
        let used = facts_used(&sources);
        assert!(used.features.contains("cpu.cpuid"));
        let attrs = used.attributes.unwrap();
        assert!(attrs.contains("pci.device.sriov_totalvfs") && attrs.contains("pci.device.vendor"));
        // A template may read any attribute of what it matched.
        let templated = Rule {
            labels_template: Some(
                "x={{ range .pci.device }}{{ .iommu_group/type }}{{ end }}".into(),
            ),
            ..rule
        };
        sources.rules = Some(Ok(vec![templated]));
        assert_eq!(facts_used(&sources).attributes, None);
        // A label's `@` value reads its option (kernel.config is read only
        // for the options named).
        let dynamic = Rule {
            name: "hz".into(),
            labels: vec![("example.com/hz".into(), "@kernel.config.NO_HZ".into())],
            ..Default::default()
        };
        sources.rules = Some(Ok(vec![dynamic]));
        sources.nfd_labels = None;
        let used = facts_used(&sources);
        assert!(used.features.contains("kernel.config"));
        assert_eq!(
            used.attributes,
            Some(SortedSet::from(["kernel.config.NO_HZ".to_string()]))
        );
    }

    /// Every rule's taints, matched or not, of both layers; the day-2
    /// sync tells a stale taint of ours by them.
    #[test]
    fn rule_taints_are_every_rules_of_both_layers() {
        let taint = |k: &str| Taint {
            key: k.into(),
            value: "true".into(),
            effect: kubelet::TaintEffect::NoSchedule,
        };
        let rules = |k: &str| {
            rules::compact::encode(&[Rule {
                name: k.into(),
                taints: vec![taint(k)],
                ..Default::default()
            }])
        };
        let env = vec![
            (RULES_VAR.into(), rules("example.com/old").into()),
            (RULES_VAR.into(), rules("example.com/pool").into()),
            (
                crate::node::contract::ROLE_RULES_VAR.into(),
                rules("example.com/role").into(),
            ),
        ];
        assert_eq!(
            rule_taints(&env),
            vec![taint("example.com/pool"), taint("example.com/role")]
        );
        assert!(rule_taints(&[(RULES_VAR.into(), "garbage".into())]).is_empty());
    }

    #[test]
    fn bad_environment_is_a_problem_not_a_panic() {
        let env = vec![
            (NFD_LABELS_VAR.into(), "rhel".into()),
            (RULES_VAR.into(), " ".into()),
        ];
        let s = sources_from_env(&env);
        assert!(s.rules.is_none());
        let d = derive(
            &s,
            &mut Features::default(),
            Profile::Upstream,
            &mut |_| Features::default(),
            true,
        )
        .unwrap();
        assert_eq!(d.problems.len(), 1);
        assert!(d.problems[0].contains("rhel"));
    }

    /// Review 15 r15a F1, differential: the boot path (matched elements
    /// not kept) and explain (kept) on the same node come to the same
    /// outcome when an `@` value a pod wrote into features.d makes the
    /// rules evaluated a second time. At 9e8a427 (the memo charging what
    /// explain kept) explain ran out of the budget, fenced, where the boot
    /// path registered with no taint: 178 rules put the first evaluation
    /// within features.d's share and the explain-only charge past it.
    #[test]
    fn a_second_evaluation_ends_alike_kept_or_not() {
        let exists = || rules::Expr {
            op: rules::Op::Exists,
            value: Vec::new(),
            regexes: Vec::new(),
            version: false,
        };
        let walk = || rules::Term {
            feature: "local.label".into(),
            match_expressions: None,
            match_name: Some(exists()),
        };
        let has = |key: &str| rules::Term {
            feature: "local.label".into(),
            match_expressions: Some(vec![(key.into(), exists())]),
            match_name: None,
        };
        let mut rules: Vec<Rule> = (0..178)
            .map(|i| Rule {
                name: format!("t{i}"),
                labels: vec![kv(&format!("example.com/l{i}"), "1")],
                match_features: vec![walk(), walk()],
                ..Default::default()
            })
            .collect();
        rules.push(Rule {
            name: "zone".into(),
            labels_template: Some(
                "{{ range .local.label }}example.com/{{ .Name }}={{ .Value }}\n{{ end }}".into(),
            ),
            match_features: vec![has("zone")],
            ..Default::default()
        });
        rules.push(Rule {
            name: "taint".into(),
            taints: vec![taint("example.com/t", "1")],
            match_features: vec![has("gpu")],
            ..Default::default()
        });
        let sources = Sources {
            rules: Some(Ok(rules)),
            nfd_labels: None,
        };
        let mut pod: SortedMap<String, String> = (0..1022)
            .map(|i| (format!("k{i:04}{}", "a".repeat(50)), String::new()))
            .collect();
        pod.insert("zone".into(), "@cpu.model.vendor_id".into());
        let outcome = |keep: bool| {
            let mut f = Features::default();
            f.attributes.insert("local.label".into(), pod.clone());
            derive(
                &sources,
                &mut f,
                Profile::Upstream,
                &mut |_| {
                    let mut f = Features::default();
                    f.attributes.insert(
                        "cpu.model".into(),
                        [("vendor_id".to_string(), "GenuineIntel".to_string())]
                            .into_iter()
                            .collect(),
                    );
                    f
                },
                keep,
            )
            .map(|d| (d.additions.labels, d.additions.taints))
        };
        let (kept, boot) = (outcome(true), outcome(false));
        assert_eq!(
            kept.as_ref().map_err(|e| &e.reason),
            boot.as_ref().map_err(|e| &e.reason),
            "explain: {:?}, the boot path: {:?}",
            kept.as_ref().err(),
            boot.as_ref().err()
        );
    }
}
