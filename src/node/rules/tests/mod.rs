//! Evaluator tests: every operator on every feature kind, missing features,
//! matchAny / matchName / vars / `rule.matched` / prefixes, and the examples
//! of NFD's customization guide on nodes built in code. Expected outputs are
//! what NFD's code (pkg/apis/nfd/nodefeaturerule, nfd-master) gives.
//!
//! Shared here: `evaluate_node` (checked against the compact form and the
//! budget's worst case), and the nodes and rule builders the tests use.

mod guide;
mod limits;
mod operators;
mod rules;

use super::*;
use crate::node::kubelet::TaintEffect;

/// `super::evaluate_node`, checked against the boot path: the same rules
/// through the compact form (compiled regexes and templates encoded, then
/// decoded as the wrapper does) must give the same outcome.
fn evaluate_node(rules: &[Rule], features: &Features) -> NodeOutcome {
    let wire = compact::encode(rules);
    let decoded = compact::decode(&wire).unwrap_or_else(|e| panic!("{wire}: {e}"));
    assert_eq!(decoded, rules, "{wire}");
    let direct = super::evaluate_node(rules, features).expect("within the budget");
    assert_eq!(
        super::evaluate_node(&decoded, features).as_ref(),
        Ok(&direct),
        "{wire}"
    );
    assert_within_worst_case(rules, features);
    direct
}

/// What one evaluation spends is within render's worst case for these
/// rules on facts of this size (the two must agree).
fn assert_within_worst_case(rules: &[Rule], features: &Features) {
    let mut budget = Budget::new(u64::MAX);
    evaluate_node_without(rules, features, &[], &mut budget).unwrap();
    let worst = budget::worst_case(rules).once;
    let size = budget::facts_size(features);
    assert!(
        budget.used() <= worst.at(size),
        "spent {} units, worst case {worst:?} on facts of size {size} gives {}",
        budget.used(),
        worst.at(size)
    );
    // Every evaluation the boot path may run, on one budget, each with a
    // rule more left out.
    let all = budget::worst_case(rules);
    let mut budget = Budget::new(u64::MAX);
    let mut without = Vec::new();
    for i in 0..all.evaluations as usize {
        evaluate_node_without(rules, features, &without, &mut budget).unwrap();
        if i % 2 == 1 && without.len() < rules.len() {
            without.push(without.len());
        }
    }
    assert!(
        budget.used() <= all.boot.at(size),
        "{} > {:?}",
        budget.used(),
        all.boot
    );
}

fn evaluate(rules: &[Rule], features: &Features) -> Vec<RuleResult> {
    evaluate_node(rules, features).results
}

fn el(pairs: &[(&str, &str)]) -> SortedMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn flags(f: &mut Features, name: &str, names: &[&str]) {
    f.flags
        .insert(name.into(), names.iter().map(|s| s.to_string()).collect());
}

fn attrs(f: &mut Features, name: &str, pairs: &[(&str, &str)]) {
    f.attributes.insert(name.into(), el(pairs));
}

fn pci(class: &str, vendor: &str, device: &str) -> SortedMap<String, String> {
    el(&[
        ("class", class),
        ("vendor", vendor),
        ("device", device),
        ("subsystem_vendor", vendor),
        ("subsystem_device", "0000"),
    ])
}

fn common(f: &mut Features) {
    attrs(f, "system.name", &[("nodename", "node-1")]);
}

/// DGX-like: 8 NVIDIA 3D controllers, 4 NVSwitches, ConnectX NICs with
/// SR-IOV, an Intel NIC, 2 NUMA nodes, RHCOS 4.19 (RHEL 9.6).
fn dgx() -> Features {
    let mut f = Features::default();
    common(&mut f);
    let mut devs = Vec::new();
    for _ in 0..8 {
        devs.push(pci("0302", "10de", "2330"));
    }
    for _ in 0..4 {
        devs.push(pci("0680", "10de", "22a3"));
    }
    let mut cx = pci("0207", "15b3", "1021");
    cx.insert("sriov_totalvfs".into(), "16".into());
    devs.push(cx.clone());
    devs.push(cx);
    devs.push(pci("0200", "8086", "1521"));
    devs.push(pci("0600", "8086", "09a2"));
    f.instances.insert("pci.device".into(), devs);
    flags(
        &mut f,
        "cpu.cpuid",
        &["AESNI", "AVX", "AVX2", "AVX512F", "FMA3", "SSE4"],
    );
    attrs(
        &mut f,
        "cpu.model",
        &[("vendor_id", "Intel"), ("family", "6"), ("id", "143")],
    );
    attrs(
        &mut f,
        "cpu.topology",
        &[("hardware_multithreading", "true"), ("socket_count", "2")],
    );
    attrs(
        &mut f,
        "kernel.version",
        &[
            ("full", "5.14.0-570.el9.x86_64"),
            ("major", "5"),
            ("minor", "14"),
            ("revision", "0"),
        ],
    );
    flags(
        &mut f,
        "kernel.loadedmodule",
        &["e1000", "mlx5_core", "nvme"],
    );
    attrs(
        &mut f,
        "system.osrelease",
        &[
            ("ID", "rhel"),
            ("VERSION_ID", "9.6"),
            ("VERSION_ID.major", "9"),
            ("VERSION_ID.minor", "6"),
            ("OPENSHIFT_VERSION", "4.19"),
        ],
    );
    attrs(
        &mut f,
        "memory.numa",
        &[("is_numa", "true"), ("node_count", "2")],
    );
    f
}

/// A desktop with two GeForce cards (and their HDMI audio functions).
fn desktop() -> Features {
    let mut f = Features::default();
    common(&mut f);
    f.instances.insert(
        "pci.device".into(),
        vec![
            pci("0300", "10de", "2f04"),
            pci("0403", "10de", "22ba"),
            pci("0300", "10de", "2f04"),
            pci("0403", "10de", "22ba"),
            pci("0600", "1022", "14d8"),
        ],
    );
    flags(&mut f, "cpu.cpuid", &["AVX", "AVX2", "AESNI"]);
    attrs(
        &mut f,
        "cpu.model",
        &[("vendor_id", "AMD"), ("family", "25"), ("id", "97")],
    );
    attrs(
        &mut f,
        "kernel.version",
        &[
            ("full", "6.8.0-45-generic"),
            ("major", "6"),
            ("minor", "8"),
            ("revision", "0"),
        ],
    );
    f
}

/// A Raspberry Pi 4: aarch64, no PCI devices at all.
fn raspberry_pi() -> Features {
    let mut f = Features::default();
    common(&mut f);
    flags(
        &mut f,
        "cpu.cpuid",
        &["ASIMD", "CPUID", "CRC32", "EVTSTRM", "FP"],
    );
    attrs(
        &mut f,
        "kernel.version",
        &[
            ("full", "6.1.0-rpi7-rpi-v8"),
            ("major", "6"),
            ("minor", "1"),
            ("revision", "0"),
        ],
    );
    attrs(
        &mut f,
        "system.osrelease",
        &[
            ("ID", "debian"),
            ("VERSION_ID", "12"),
            ("VERSION_ID.major", "12"),
        ],
    );
    f
}

fn expr(op: Op, value: &[&str]) -> Expr {
    Expr::new(op, value.iter().map(|s| s.to_string()).collect())
}

fn term(feature: &str, exprs: &[(&str, Expr)]) -> Term {
    Term {
        feature: feature.into(),
        match_expressions: Some(
            exprs
                .iter()
                .map(|(k, e)| (k.to_string(), e.clone()))
                .collect(),
        ),
        match_name: None,
    }
}

fn name_term(feature: &str, e: Expr) -> Term {
    Term {
        feature: feature.into(),
        match_expressions: None,
        match_name: Some(e),
    }
}

fn rule(name: &str, labels: &[(&str, &str)], terms: Vec<Term>) -> Rule {
    Rule {
        name: name.into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        match_features: terms,
        ..Default::default()
    }
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn one(r: Rule, f: &Features) -> RuleResult {
    evaluate(&[r], f).pop().unwrap()
}

/// Whether one term matches, panicking on a rule error.
fn matches(f: &Features, t: Term) -> bool {
    let r = one(rule("t", &[], vec![t]), f);
    assert_eq!(r.error, None);
    r.matched
}

fn errors(f: &Features, t: Term) -> String {
    one(rule("t", &[], vec![t]), f).error.expect("an error")
}
