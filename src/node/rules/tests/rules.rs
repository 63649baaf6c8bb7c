//! What a rule gives: counts and templates, matchAny, vars and
//! `rule.matched`, prefixes and what nfd-master drops, overrides, name case.

use super::*;

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
