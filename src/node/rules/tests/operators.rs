//! Every operator on every feature kind, matchName, missing features and
//! features of more than one kind.

use super::*;

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
