//! Evaluator tests: every operator on every feature kind, missing features,
//! matchAny / matchName / vars / `rule.matched` / prefixes, and the examples
//! of NFD's customization guide on nodes built in code. Expected outputs are
//! what NFD's code (pkg/apis/nfd/nodefeaturerule, nfd-master) gives.

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

#[test]
fn gpu_classes_example_counts_in_one_rule() {
    let r = Rule {
        name: "nvidia gpus".into(),
        labels: pairs(&[("nvidia.com/gpu", "true")]),
        labels_template: Some("gpu.count={{ len .pci.device }}".into()),
        taints: vec![Taint {
            key: "nvidia.com/gpu".into(),
            value: "true".into(),
            effect: TaintEffect::NoSchedule,
        }],
        match_features: vec![term(
            "pci.device",
            &[
                ("vendor", expr(Op::In, &["10de"])),
                ("class", expr(Op::In, &["0300", "0302"])),
            ],
        )],
        ..Default::default()
    };
    let out = evaluate_node(std::slice::from_ref(&r), &dgx());
    assert_eq!(
        out.labels,
        pairs(&[
            ("feature.node.kubernetes.io/gpu.count", "8"),
            ("nvidia.com/gpu", "true")
        ])
    );
    assert_eq!(out.taints.len(), 1);
    assert_eq!(out.results[0].matched_features["pci.device"].len(), 8);
    let out = evaluate_node(std::slice::from_ref(&r), &desktop());
    assert_eq!(
        out.labels,
        pairs(&[
            ("feature.node.kubernetes.io/gpu.count", "2"),
            ("nvidia.com/gpu", "true")
        ])
    );
    let out = evaluate_node(std::slice::from_ref(&r), &raspberry_pi());
    assert!(!out.results[0].matched && out.results[0].error.is_none());
    assert!(out.labels.is_empty() && out.taints.is_empty());
}

#[test]
fn operators_on_attributes() {
    let f = dgx();
    let k = |key: &str, e: Expr| term("kernel.version", &[(key, e)]);
    let cases: &[(&str, Expr, bool)] = &[
        ("major", expr(Op::Any, &[]), true),
        ("nope", expr(Op::Any, &[]), true),
        ("major", expr(Op::In, &["4", "5"]), true),
        ("major", expr(Op::In, &["6"]), false),
        ("major", expr(Op::NotIn, &["6"]), true),
        ("major", expr(Op::NotIn, &["5"]), false),
        ("full", expr(Op::InRegexp, &["^6", "el9"]), true),
        ("full", expr(Op::InRegexp, &["^6"]), false),
        ("major", expr(Op::Exists, &[]), true),
        ("nope", expr(Op::Exists, &[]), false),
        ("major", expr(Op::DoesNotExist, &[]), false),
        ("nope", expr(Op::DoesNotExist, &[]), true),
        ("minor", expr(Op::Gt, &["13"]), true),
        ("minor", expr(Op::Gt, &["14"]), false),
        ("minor", expr(Op::Ge, &["14"]), true),
        ("minor", expr(Op::Ge, &["15"]), false),
        ("minor", expr(Op::Lt, &["15"]), true),
        ("minor", expr(Op::Lt, &["14"]), false),
        ("minor", expr(Op::Le, &["14"]), true),
        ("minor", expr(Op::Le, &["+13"]), false),
        ("minor", expr(Op::GtLt, &["13", "15"]), true),
        ("minor", expr(Op::GtLt, &["14", "15"]), false),
        ("minor", expr(Op::GeLe, &["14", "14"]), false), // lo >= hi is an error: see below
        ("minor", expr(Op::GeLe, &["14", "15"]), true),
        ("minor", expr(Op::GeLe, &["-1", "13"]), false),
    ];
    for (key, e, want) in cases {
        let r = one(rule("t", &[], vec![k(key, e.clone())]), &f);
        if e.op == Op::GeLe && e.value[0] == e.value[1] {
            assert!(r.error.is_some(), "{key} {e:?}");
            continue;
        }
        assert_eq!(r.error, None, "{key} {e:?}");
        assert_eq!(r.matched, *want, "{key} {e:?}");
    }
    // Every operator but Any/Exists/DoesNotExist is false on a missing
    // attribute, even with a bad value list (NFD checks it only on a value).
    for op in Op::ALL
        .into_iter()
        .filter(|op| !matches!(op, Op::Any | Op::Exists | Op::DoesNotExist))
    {
        assert!(!matches(&f, k("nope", expr(op, &[]))), "{op:?}");
    }
    let numa = |e: Expr| term("memory.numa", &[("is_numa", e)]);
    assert!(matches(&f, numa(expr(Op::IsTrue, &[]))));
    assert!(!matches(&f, numa(expr(Op::IsFalse, &[]))));
}

#[test]
fn operator_errors_skip_the_rule() {
    let f = dgx();
    let k = |key: &str, e: Expr| term("kernel.version", &[(key, e)]);
    assert!(errors(&f, k("full", expr(Op::Gt, &["1"]))).contains("not a number \"5.14.0"));
    assert!(errors(&f, k("major", expr(Op::Gt, &["x"]))).contains("not a number \"x\""));
    assert!(errors(&f, k("major", expr(Op::Gt, &["1", "2"]))).contains("exactly one"));
    assert!(errors(&f, k("major", expr(Op::GtLt, &["1"]))).contains("exactly two"));
    assert!(errors(&f, k("major", expr(Op::GtLt, &["9", "1"]))).contains("less than"));
    assert!(errors(&f, k("major", expr(Op::In, &[]))).contains("non-empty"));
    assert!(errors(&f, k("major", expr(Op::Exists, &["5"]))).contains("must be empty"));
    assert!(errors(&f, k("major", expr(Op::IsTrue, &["5"]))).contains("must be empty"));
    assert!(errors(&f, k("major", expr(Op::Any, &["5"]))).contains("must be empty"));
    assert!(errors(&f, k("major", expr(Op::InRegexp, &["("]))).contains("invalid regexp"));
    // Out of int64 range is an Atoi error too.
    assert!(
        errors(&f, k("major", expr(Op::Lt, &["99999999999999999999"]))).contains("not a number")
    );
    // An erroring rule gives nothing, and later rules still run.
    let rs = [
        rule("bad", &[("a", "1")], vec![k("full", expr(Op::Gt, &["1"]))]),
        rule("good", &[("b", "1")], vec![]),
    ];
    let out = evaluate_node(&rs, &f);
    assert!(out.results[0].error.is_some() && out.results[0].labels.is_empty());
    assert_eq!(out.labels, pairs(&[("feature.node.kubernetes.io/b", "1")]));
}

#[test]
fn operators_on_flags() {
    let f = dgx();
    let c = |key: &str, e: Expr| term("cpu.cpuid", &[(key, e)]);
    assert!(matches(&f, c("AVX512F", expr(Op::Exists, &[]))));
    assert!(!matches(&f, c("AMX", expr(Op::Exists, &[]))));
    assert!(matches(&f, c("AMX", expr(Op::DoesNotExist, &[]))));
    assert!(!matches(&f, c("AVX", expr(Op::DoesNotExist, &[]))));
    assert!(matches(&f, c("AMX", expr(Op::Any, &[]))));
    // A flag has no value: value operators never match it (and never error).
    for op in [
        Op::In,
        Op::NotIn,
        Op::InRegexp,
        Op::Gt,
        Op::GtLt,
        Op::IsTrue,
    ] {
        assert!(!matches(&f, c("AVX", expr(op, &["AVX"]))), "{op:?}");
    }
    // The matched elements are the expression keys, sorted by name.
    let r = one(
        rule(
            "t",
            &[],
            vec![
                c("SSE4", expr(Op::Exists, &[])),
                c("AVX", expr(Op::Exists, &[])),
            ],
        ),
        &f,
    );
    assert!(r.matched);
    let mut both = Rule {
        labels_template: Some("{{ range .cpu.cpuid }}{{ .Name }}=x\n{{ end }}".into()),
        ..rule(
            "t",
            &[],
            vec![term(
                "cpu.cpuid",
                &[
                    ("SSE4", expr(Op::Exists, &[])),
                    ("AVX", expr(Op::Exists, &[])),
                ],
            )],
        )
    };
    let r = one(both.clone(), &f);
    assert_eq!(
        r.labels,
        pairs(&[
            ("feature.node.kubernetes.io/AVX", "x"),
            ("feature.node.kubernetes.io/SSE4", "x")
        ])
    );
    assert_eq!(
        r.matched_features["cpu.cpuid"],
        vec![el(&[("Name", "AVX")]), el(&[("Name", "SSE4")])]
    );
    // DoesNotExist on a flag still yields an element for the template.
    both.match_features = vec![c("AMX", expr(Op::DoesNotExist, &[]))];
    assert_eq!(
        one(both, &f).labels,
        pairs(&[("feature.node.kubernetes.io/AMX", "x")])
    );
}

#[test]
fn operators_on_instances() {
    let f = dgx();
    let p = |exprs: &[(&str, Expr)]| term("pci.device", exprs);
    assert!(matches(
        &f,
        p(&[
            ("vendor", expr(Op::In, &["15b3"])),
            ("sriov_totalvfs", expr(Op::Gt, &["8"]))
        ])
    ));
    assert!(!matches(
        &f,
        p(&[
            ("vendor", expr(Op::In, &["15b3"])),
            ("sriov_totalvfs", expr(Op::Gt, &["16"]))
        ])
    ));
    // All expressions must hold on the same instance.
    assert!(!matches(
        &f,
        p(&[
            ("vendor", expr(Op::In, &["8086"])),
            ("class", expr(Op::In, &["0302"]))
        ])
    ));
    assert!(matches(
        &f,
        p(&[("sriov_totalvfs", expr(Op::DoesNotExist, &[]))])
    ));
    assert!(matches(
        &f,
        p(&[
            ("class", expr(Op::InRegexp, &["^03"])),
            ("vendor", expr(Op::NotIn, &["8086"]))
        ])
    ));
    assert!(!matches(&f, p(&[("class", expr(Op::InRegexp, &["^04"]))])));
    // An empty expression set matches every instance.
    let r = one(
        Rule {
            labels_template: Some("n={{ len .pci.device }}".into()),
            ..rule("t", &[], vec![p(&[])])
        },
        &f,
    );
    assert_eq!(r.labels, pairs(&[("feature.node.kubernetes.io/n", "16")]));
    // A number error on one instance fails the whole rule.
    assert!(errors(&f, p(&[("vendor", expr(Op::Gt, &["1"]))])).contains("not a number"));
}

#[test]
fn missing_features_never_match_and_never_error() {
    let pi = raspberry_pi();
    for op in [Op::Any, Op::DoesNotExist, Op::Exists, Op::In, Op::Gt] {
        assert!(
            !matches(&pi, term("pci.device", &[("vendor", expr(op, &["1"]))])),
            "{op:?}"
        );
        assert!(
            !matches(&pi, name_term("pci.device", expr(op, &["1"]))),
            "{op:?}"
        );
    }
    // A term with neither matchExpressions nor matchName only needs the feature.
    assert!(matches(
        &pi,
        Term {
            feature: "cpu.cpuid".into(),
            ..Default::default()
        }
    ));
    assert!(!matches(
        &pi,
        Term {
            feature: "memory.numa".into(),
            ..Default::default()
        }
    ));
}

#[test]
fn match_name_on_every_kind() {
    let f = dgx();
    let t = |feature: &str, e: Expr, tmpl: &str| {
        let r = Rule {
            labels_template: Some(tmpl.into()),
            ..rule("t", &[], vec![name_term(feature, e)])
        };
        one(r, &f)
    };
    let r = t(
        "cpu.cpuid",
        expr(Op::InRegexp, &["^AVX"]),
        "{{ range .cpu.cpuid }}{{ .Name }}=1\n{{ end }}",
    );
    assert_eq!(
        r.matched_features["cpu.cpuid"],
        vec![
            el(&[("Name", "AVX")]),
            el(&[("Name", "AVX2")]),
            el(&[("Name", "AVX512F")])
        ]
    );
    let r = t(
        "cpu.topology",
        expr(Op::Exists, &[]),
        "{{ range .cpu.topology }}cpu-{{ .Name }}={{ .Value }}\n{{ end }}",
    );
    assert_eq!(
        r.labels,
        pairs(&[
            (
                "feature.node.kubernetes.io/cpu-hardware_multithreading",
                "true"
            ),
            ("feature.node.kubernetes.io/cpu-socket_count", "2")
        ])
    );
    // Instances: any attribute name matching keeps the whole instance.
    let r = t(
        "pci.device",
        expr(Op::In, &["sriov_totalvfs"]),
        "n={{ len .pci.device }}",
    );
    assert_eq!(r.labels, pairs(&[("feature.node.kubernetes.io/n", "2")]));
    assert!(!t("pci.device", expr(Op::DoesNotExist, &[]), "").matched);
    assert!(
        t("cpu.cpuid", expr(Op::Gt, &["1"]), "")
            .error
            .unwrap()
            .contains("not a number")
    );
    // matchExpressions and matchName both must match; their elements join.
    let both = Term {
        feature: "kernel.version".into(),
        match_expressions: Some(vec![("major".into(), expr(Op::In, &["5"]))]),
        match_name: Some(expr(Op::In, &["minor"])),
    };
    let r = one(
        Rule {
            labels_template: Some(
                "{{ range .kernel.version }}{{ .Name }}={{ .Value }}\n{{ end }}".into(),
            ),
            ..rule("t", &[], vec![both.clone()])
        },
        &f,
    );
    assert_eq!(
        r.labels,
        pairs(&[
            ("feature.node.kubernetes.io/major", "5"),
            ("feature.node.kubernetes.io/minor", "14")
        ])
    );
    let mut no = both;
    no.match_name = Some(expr(Op::In, &["patch"]));
    assert!(!matches(&f, no));
}

#[test]
fn multi_kind_features() {
    // One name with flags, attributes and instances (as NFD allows).
    let mut f = Features::default();
    flags(&mut f, "x.y", &["F"]);
    attrs(&mut f, "x.y", &[("A", "1")]);
    f.instances
        .insert("x.y".into(), vec![el(&[("A", "2"), ("B", "b")])]);
    let m = |exprs: &[(&str, Expr)]| matches(&f, term("x.y", exprs));
    assert!(m(&[
        ("F", expr(Op::Exists, &[])),
        ("A", expr(Op::Exists, &[]))
    ]));
    // Flags+attributes fail but an instance matches: the term matches.
    assert!(m(&[("B", expr(Op::In, &["b"]))]));
    // DoesNotExist must hold in flags and attributes alike.
    assert!(!m(&[("A", expr(Op::DoesNotExist, &[]))]));
    assert!(m(&[("Z", expr(Op::DoesNotExist, &[]))]));
    let r = one(
        Rule {
            labels_template: Some("{{ range .x.y }}{{ . }}\n{{ end }}".into()),
            ..rule("t", &[], vec![term("x.y", &[("A", expr(Op::Exists, &[]))])])
        },
        &f,
    );
    // Flags/attributes part (sorted) then matching instances; `{{ . }}` on a
    // line without `=` is an ExpandMap error.
    assert!(r.error.unwrap().contains("missing value"));
    let r = one(
        rule("t", &[], vec![term("x.y", &[("A", expr(Op::Exists, &[]))])]),
        &f,
    );
    assert_eq!(
        r.matched_features["x.y"],
        vec![
            el(&[("Name", "A"), ("Value", "1")]),
            el(&[("A", "2"), ("B", "b")])
        ]
    );
    let r = one(
        rule("t", &[], vec![name_term("x.y", expr(Op::InRegexp, &["."]))]),
        &f,
    );
    assert_eq!(
        r.matched_features["x.y"],
        vec![
            el(&[("Name", "A"), ("Value", "1")]),
            el(&[("Name", "F")]),
            el(&[("A", "2"), ("B", "b")])
        ]
    );
}

#[test]
fn match_any_runs_templates_per_branch() {
    let f = desktop();
    let branch = |class: &str| {
        vec![term(
            "pci.device",
            &[
                ("vendor", expr(Op::In, &["10de"])),
                ("class", expr(Op::In, &[class])),
            ],
        )]
    };
    let mut r = Rule {
        labels_template: Some(
            "{{ range .pci.device }}pci-{{ .class }}.present=true\n{{ end }}".into(),
        ),
        match_any: vec![branch("0300"), branch("0302"), branch("0403")],
        ..rule("t", &[("static", "1")], vec![])
    };
    let res = one(r.clone(), &f);
    assert_eq!(
        res.labels,
        pairs(&[
            ("feature.node.kubernetes.io/pci-0300.present", "true"),
            ("feature.node.kubernetes.io/pci-0403.present", "true"),
            ("feature.node.kubernetes.io/static", "1"),
        ])
    );
    // Without templates the first matching branch is enough.
    r.labels_template = None;
    let res = one(r.clone(), &f);
    assert!(res.matched);
    assert_eq!(res.matched_features["pci.device"].len(), 2);
    // matchAny and matchFeatures must both match; when matchFeatures fails,
    // the branches' template output is dropped too.
    r.labels_template = Some("a=1".into());
    r.match_features = vec![term("cpu.cpuid", &[("AVX512F", expr(Op::Exists, &[]))])];
    let res = one(r.clone(), &f);
    assert!(!res.matched && res.labels.is_empty() && res.error.is_none());
    r.match_any = vec![branch("0b40")];
    r.match_features = vec![];
    assert!(!one(r, &f).matched);
}

#[test]
fn templates_then_static_labels_and_vars() {
    let f = dgx();
    let r = Rule {
        labels_template: Some("a=template\nb=template".into()),
        vars_template: Some("v=template\nw=template".into()),
        vars: pairs(&[("w", "static")]),
        ..rule(
            "t",
            &[("b", "static")],
            vec![term("kernel.version", &[("major", expr(Op::Exists, &[]))])],
        )
    };
    let res = one(r, &f);
    assert_eq!(
        res.labels,
        pairs(&[
            ("feature.node.kubernetes.io/a", "template"),
            ("feature.node.kubernetes.io/b", "static")
        ])
    );
    assert_eq!(res.vars, pairs(&[("v", "template"), ("w", "static")]));
    // A template error (missing key) skips the rule; a parse error too, but
    // only once the rule matched (NFD parses templates on use).
    let bad = |t: &str, m: bool| Rule {
        labels_template: Some(t.into()),
        ..rule(
            "t",
            &[],
            vec![term(
                "kernel.version",
                &[("major", expr(Op::In, &[if m { "5" } else { "6" }]))],
            )],
        )
    };
    assert!(
        one(bad("{{ .kernel.version.x }}", true), &f)
            .error
            .is_some()
    );
    assert!(
        one(bad("{{ printf }}", true), &f)
            .error
            .unwrap()
            .contains("line 1 column 4")
    );
    let res = one(bad("{{ printf }}", false), &f);
    assert!(res.error.is_none() && !res.matched);
}

#[test]
fn backreferences_between_rules() {
    let f = dgx();
    let rules = [
        rule(
            "kernel",
            &[("kernel-feature", "true")],
            vec![term("kernel.version", &[("major", expr(Op::Gt, &["4"]))])],
        ),
        Rule {
            vars: pairs(&[("nolabel-feature", "true")]),
            ..rule(
                "var",
                &[],
                vec![
                    term("cpu.cpuid", &[("AVX512F", expr(Op::Exists, &[]))]),
                    term(
                        "pci.device",
                        &[
                            ("vendor", expr(Op::In, &["10de"])),
                            ("device", expr(Op::In, &["2330", "2331"])),
                        ],
                    ),
                ],
            )
        },
        rule(
            "high",
            &[("high-level-feature", "true")],
            vec![term(
                "rule.matched",
                &[
                    ("kernel-feature", expr(Op::IsTrue, &[])),
                    ("nolabel-feature", expr(Op::IsTrue, &[])),
                ],
            )],
        ),
    ];
    let out = evaluate_node(&rules, &f);
    assert_eq!(
        out.labels,
        pairs(&[
            ("feature.node.kubernetes.io/high-level-feature", "true"),
            ("feature.node.kubernetes.io/kernel-feature", "true")
        ])
    );
    // The vars stay out of the labels.
    assert_eq!(out.results[1].vars, pairs(&[("nolabel-feature", "true")]));
    // rule.matched exists once any rule ran without error, even unmatched.
    let dne = rule(
        "after",
        &[("x", "1")],
        vec![term("rule.matched", &[("y", expr(Op::DoesNotExist, &[]))])],
    );
    assert!(!evaluate(std::slice::from_ref(&dne), &f)[0].matched);
    let miss = rule(
        "miss",
        &[],
        vec![term("pci.device", &[("vendor", expr(Op::In, &["ffff"]))])],
    );
    assert!(evaluate(&[miss, dne.clone()], &f)[1].matched);
    let err = rule(
        "err",
        &[],
        vec![term("kernel.version", &[("full", expr(Op::Gt, &["1"]))])],
    );
    assert!(!evaluate(&[err, dne], &f)[1].matched);
    // Backreferences see the labels as written (before the prefix).
    let rs = [
        rule("a", &[("example.com/x", "1"), ("y", "2")], vec![]),
        rule(
            "b",
            &[("z", "3")],
            vec![term(
                "rule.matched",
                &[
                    ("example.com/x", expr(Op::In, &["1"])),
                    ("y", expr(Op::In, &["2"])),
                ],
            )],
        ),
    ];
    assert!(evaluate(&rs, &f)[1].matched);
}

#[test]
fn prefix_and_what_nfd_master_drops() {
    let f = dgx();
    let r = rule(
        "t",
        &[
            ("plain", "1"),
            ("dup", "unprefixed"),
            ("feature.node.kubernetes.io/dup", "prefixed"),
            ("example.com/keep", "1"),
            ("node-role.kubernetes.io/gpu-worker", ""),
            ("kubernetes.io/arch", "x"),
            ("sub.feature.node.kubernetes.io/ok", "1"),
            ("profile.node.kubernetes.io/p", "1"),
            ("dyn", "@kernel.version.major"),
            ("dyn-missing", "@kernel.version.nope"),
            ("dyn-bad", "@kernel"),
            ("bad-value", "a b"),
        ],
        vec![],
    );
    let r = Rule {
        taints: vec![
            Taint {
                key: "nvidia.com/gpu".into(),
                value: "true".into(),
                effect: TaintEffect::NoSchedule,
            },
            Taint {
                key: "gpu".into(),
                value: "".into(),
                effect: TaintEffect::NoSchedule,
            },
            Taint {
                key: "node.kubernetes.io/x".into(),
                value: "".into(),
                effect: TaintEffect::NoExecute,
            },
            Taint {
                key: "feature.node.kubernetes.io/y".into(),
                value: "".into(),
                effect: TaintEffect::NoExecute,
            },
            Taint {
                key: "nvidia.com/gpu".into(),
                value: "true".into(),
                effect: TaintEffect::NoSchedule,
            },
        ],
        ..r
    };
    let out = evaluate_node(&[r], &f);
    assert_eq!(
        out.labels,
        pairs(&[
            ("example.com/keep", "1"),
            ("feature.node.kubernetes.io/dup", "prefixed"),
            ("feature.node.kubernetes.io/dyn", "5"),
            ("feature.node.kubernetes.io/plain", "1"),
            ("profile.node.kubernetes.io/p", "1"),
            ("sub.feature.node.kubernetes.io/ok", "1"),
        ])
    );
    let keys: Vec<&str> = out.taints.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(keys, ["nvidia.com/gpu", "feature.node.kubernetes.io/y"]);
    let dropped = out.dropped.join("\n");
    for what in [
        "node-role.kubernetes.io/gpu-worker",
        "kubernetes.io/arch",
        "dyn-missing",
        "dyn-bad",
        "bad-value",
        "taint gpu=",
        "node.kubernetes.io/x",
    ] {
        assert!(dropped.contains(what), "{what} not in {dropped}");
    }
    assert_eq!(out.dropped.len(), 7, "{dropped}");
}

#[test]
fn later_rules_override_earlier_labels() {
    let rs = [
        rule("a", &[("x", "1"), ("y", "1")], vec![]),
        rule("b", &[("x", "2")], vec![]),
    ];
    let out = evaluate_node(&rs, &dgx());
    assert_eq!(
        out.labels,
        pairs(&[
            ("feature.node.kubernetes.io/x", "2"),
            ("feature.node.kubernetes.io/y", "1")
        ])
    );
}

#[test]
fn feature_name_case() {
    // NFD lower-cases the name for lookup but keys template data by the name
    // as written: the guide's `system.osRelease` example fails on
    // `.system.osrelease` (missing key), and works with the written case.
    let f = dgx();
    let t = |tmpl: &str| Rule {
        labels_template: Some(tmpl.into()),
        ..rule(
            "t",
            &[],
            vec![term(
                "system.osRelease",
                &[
                    ("ID", expr(Op::Exists, &[])),
                    ("VERSION_ID.major", expr(Op::Exists, &[])),
                ],
            )],
        )
    };
    let r = one(
        t("{{ range .system.osrelease }}system-{{ .Name }}={{ .Value }}\n{{ end }}"),
        &f,
    );
    assert!(r.error.unwrap().contains("no entry for key \"osrelease\""));
    let r = one(
        t("{{ range .system.osRelease }}system-{{ .Name }}={{ .Value }}\n{{ end }}"),
        &f,
    );
    assert_eq!(
        r.labels,
        pairs(&[
            ("feature.node.kubernetes.io/system-ID", "rhel"),
            ("feature.node.kubernetes.io/system-VERSION_ID.major", "9")
        ])
    );
}

/// The examples of NFD's docs/usage/customization-guide.md.
#[test]
fn customization_guide_examples() {
    let (d, desk, pi) = (dgx(), desktop(), raspberry_pi());
    // "my feature rule": AVX512F, kernel 5.x with minor > 1, an Intel NIC.
    let my = rule(
        "my feature rule",
        &[("feature.node.kubernetes.io/my-special-feature", "my-value")],
        vec![
            term("cpu.cpuid", &[("AVX512F", expr(Op::Exists, &[]))]),
            term(
                "kernel.version",
                &[
                    ("major", expr(Op::In, &["5"])),
                    ("minor", expr(Op::Gt, &["1"])),
                ],
            ),
            term(
                "pci.device",
                &[
                    ("vendor", expr(Op::In, &["8086"])),
                    ("class", expr(Op::In, &["0200"])),
                ],
            ),
        ],
    );
    assert_eq!(
        evaluate_node(std::slice::from_ref(&my), &d).labels,
        pairs(&[("feature.node.kubernetes.io/my-special-feature", "my-value")])
    );
    assert!(
        evaluate_node(std::slice::from_ref(&my), &desk)
            .labels
            .is_empty()
    );
    assert!(
        evaluate_node(std::slice::from_ref(&my), &pi)
            .labels
            .is_empty()
    );

    // Templating: one label per matched network controller.
    let tmpl = Rule {
        labels_template: Some(
            "{{ range .pci.device }}vendor-{{ .class }}-{{ .device }}.present=true\n{{ end }}"
                .into(),
        ),
        ..rule(
            "t",
            &[],
            vec![term(
                "pci.device",
                &[
                    ("class", expr(Op::InRegexp, &["^02"])),
                    ("vendor", expr(Op::In, &["15b3"])),
                ],
            )],
        )
    };
    assert_eq!(
        evaluate_node(std::slice::from_ref(&tmpl), &d).labels,
        pairs(&[(
            "feature.node.kubernetes.io/vendor-0207-1021.present",
            "true"
        )])
    );

    // `len` piped, as in the guide (its `first`/`trim`/`substr` are sprig
    // functions and refused).
    let count = Rule {
        labels_template: Some("num-intel-network-controllers={{ .pci.device | len }}\n".into()),
        ..rule(
            "t",
            &[],
            vec![term(
                "pci.device",
                &[
                    ("vendor", expr(Op::In, &["8086"])),
                    ("class", expr(Op::In, &["0200"])),
                ],
            )],
        )
    };
    assert_eq!(
        evaluate_node(std::slice::from_ref(&count), &d).labels,
        pairs(&[(
            "feature.node.kubernetes.io/num-intel-network-controllers",
            "1"
        )])
    );
    assert!(template::parse("{{ (.pci.device | first).class | trim }}").is_err());

    // "example cpuid rule".
    let cpuid = rule(
        "example cpuid rule",
        &[("my-special-cpu-feature", "true")],
        vec![term(
            "cpu.cpuid",
            &[
                ("AESNI", expr(Op::Exists, &[])),
                ("AVX", expr(Op::Exists, &[])),
            ],
        )],
    );
    assert!(evaluate(std::slice::from_ref(&cpuid), &d)[0].matched);
    assert!(evaluate(std::slice::from_ref(&cpuid), &desk)[0].matched);
    assert!(!evaluate(std::slice::from_ref(&cpuid), &pi)[0].matched);

    // "my multi-feature rule" (with `value:`; the guide's `values:` is not a
    // field of the CRD, so NFD sees an empty value list and errors).
    let multi = rule(
        "my multi-feature rule",
        &[("my-special-multi-feature", "true")],
        vec![
            term("kernel.loadedmodule", &[("e1000", expr(Op::Exists, &[]))]),
            term(
                "system.osrelease",
                &[
                    ("ID", expr(Op::InRegexp, &["^rhel"])),
                    ("VERSION_ID.major", expr(Op::Gt, &["8"])),
                ],
            ),
        ],
    );
    assert!(evaluate(std::slice::from_ref(&multi), &d)[0].matched);
    let typo = rule(
        "t",
        &[],
        vec![term("system.osrelease", &[("ID", expr(Op::InRegexp, &[]))])],
    );
    assert!(evaluate(&[typo], &d)[0].error.is_some());

    // Taints example: both taints on a match (NFD needs --enable-taints).
    let taints = Rule {
        taints: vec![
            Taint {
                key: "feature.node.kubernetes.io/special-node".into(),
                value: "true".into(),
                effect: TaintEffect::PreferNoSchedule,
            },
            Taint {
                key: "feature.node.kubernetes.io/dedicated-node".into(),
                value: "".into(),
                effect: TaintEffect::NoExecute,
            },
        ],
        ..rule(
            "my sample taint rule",
            &[],
            vec![term(
                "kernel.loadedmodule",
                &[("nvme", expr(Op::Exists, &[]))],
            )],
        )
    };
    assert_eq!(
        evaluate_node(std::slice::from_ref(&taints), &d)
            .taints
            .len(),
        2
    );
    assert!(evaluate_node(&[taints], &pi).taints.is_empty());

    // matchAny example: kmod + vendor in either branch.
    let any = |vendor: &str, kmod: &str| {
        vec![
            term("kernel.loadedmodule", &[(kmod, expr(Op::Exists, &[]))]),
            term(
                "pci.device",
                &[
                    ("vendor", expr(Op::In, &[vendor])),
                    ("class", expr(Op::In, &["0200"])),
                ],
            ),
        ]
    };
    let r = Rule {
        match_any: vec![any("0eee", "kmod-1"), any("8086", "e1000")],
        ..rule("any", &[("a", "1")], vec![])
    };
    assert!(evaluate(std::slice::from_ref(&r), &d)[0].matched);
    assert!(!evaluate(&[r], &desk)[0].matched);
}

/// Arbitrary rule text (as a corrupted compact form could carry) never
/// panics the template or regex parsers, nor their execution.
#[test]
fn parsers_never_panic() {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    const PIECES: &[&str] = &[
        "{{",
        "}}",
        "{{-",
        " -}}",
        "/*",
        "*/",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "|",
        "$",
        "$x",
        ":=",
        "=",
        ",",
        ".",
        ".a",
        "len",
        "range",
        "if",
        "else",
        "end",
        "\"",
        "`",
        "\\",
        "-",
        "1",
        "é",
        "\u{212A}",
        " ",
        "\n",
        "^",
        "*",
        "+",
        "?",
        "(?i)",
        "[:alpha:]",
        "\\x{",
        "\\Q",
        "\\E",
        "{2,",
        "0",
    ];
    let data = {
        let mut d = template::Data::new();
        d.entry("a".into())
            .or_default()
            .insert("b".into(), vec![el(&[("c", "d")])]);
        d
    };
    for _ in 0..20_000 {
        let s: String = (0..next(12)).map(|_| PIECES[next(PIECES.len())]).collect();
        if let Ok(t) = template::parse(&s) {
            let _ = t.expand_map(&data);
        }
        if let Ok(re) = regex::Regex::new(&s) {
            let _ = re.is_match(&s);
            let _ = re.is_match("a\nb K é");
        }
    }
}

/// `type: version` reads values as NFD's semver does (leading zeros
/// coerced, pre-release dropped from the comparison).
#[test]
fn versions_as_nfd_reads_them() {
    use super::version;
    for (s, want) in [
        ("1", Some((1, 0, 0))),
        ("v1.2", Some((1, 2, 0))),
        ("5.14.0", Some((5, 14, 0))),
        ("05.014.00", Some((5, 14, 0))),
        ("6.1.0-18-amd64", Some((6, 1, 0))),
        ("1.2.3-rc.1+build.5", Some((1, 2, 3))),
        ("1.2.3-01", None),
        ("1.2.3-", None),
        ("1.2.3+", None),
        ("5.14.0-570.25.1.el9_6.x86_64", None),
        ("1.2.3.4", None),
        ("V1", None),
        ("", None),
        ("1..2", None),
        ("18446744073709551616", None),
    ] {
        assert_eq!(version(s), want, "{s:?}");
    }
}

/// Plain names show as written; any other is quoted and escaped, so a
/// list of them stays on one line and never ends in a backslash.
#[test]
fn names_show_on_one_line() {
    for plain in ["nvidia-gpu", "my sample rule", "é✓", "a.b/c:d"] {
        assert_eq!(shown_name(plain), plain);
    }
    for (name, shown) in [
        ("a\nb", r#""a\nb""#),
        ("x\\", r#""x\\""#),
        ("a, b", r#""a, b""#),
        ("", r#""""#),
        (" lead", r#"" lead""#),
        ("q\"", r#""q\"""#),
        ("ls\u{2028}", r#""ls\u{2028}""#),
        ("nel\u{85}", r#""nel\u{85}""#),
        ("cr\r", r#""cr\r""#),
    ] {
        assert_eq!(shown_name(name), shown);
        assert!(!shown_name(name).contains(['\n', '\r', '\u{2028}', '\u{85}']));
    }
}

/// nfd-master applies taints one after another (AddOrUpdateTaint): one
/// of the same key and effect is replaced where it stands, so the last
/// applied value wins even when an earlier rule gave that same taint.
#[test]
fn taints_of_one_key_and_effect_keep_the_last_applied() {
    let f = Features::default();
    let taint = |value: &str, effect: TaintEffect| Taint {
        key: "example.com/shared".into(),
        value: value.into(),
        effect,
    };
    let with = |name: &str, t: Vec<Taint>| Rule {
        name: name.into(),
        labels: pairs(&[("x", "1")]),
        taints: t,
        ..Default::default()
    };
    let rules = [
        with("a", vec![taint("v1", TaintEffect::NoSchedule)]),
        with("b", vec![taint("", TaintEffect::NoExecute)]),
        with("c", vec![taint("v2", TaintEffect::NoSchedule)]),
        with("d", vec![taint("v1", TaintEffect::NoSchedule)]),
    ];
    assert_eq!(
        evaluate_node(&rules, &f).taints,
        vec![
            taint("v1", TaintEffect::NoSchedule),
            taint("", TaintEffect::NoExecute)
        ]
    );
}

/// The issue's heavy rules, evaluated within a budget: a clean error, not
/// a panic, an abort or minutes.
#[test]
fn heavy_rules_stop_at_the_budget() {
    let mut f = Features::default();
    flags(&mut f, "cpu.cpuid", &["AVX"]);
    let heavy = |i: usize| Rule {
        name: format!("r{i}"),
        labels_template: Some("{{ range 30000 }}{{ end }}".into()),
        match_features: vec![name_term("cpu.cpuid", Expr::new(Op::Exists, vec![]))],
        ..Default::default()
    };
    let rules: Vec<Rule> = (0..800).map(heavy).collect();
    let mut budget = Budget::new(budget::BASE);
    let e = evaluate_node_without(&rules, &f, &[], &mut budget).unwrap_err();
    assert!(e.to_string().contains("budget"), "{e}");
    assert!(budget::check(&rules).is_err());
    // Within the budget once fewer: and render's check agrees.
    let few: Vec<Rule> = (0..2).map(heavy).collect();
    assert!(budget::check(&few).is_ok());
    assert!(super::evaluate_node(&few, &f).is_ok());
}
