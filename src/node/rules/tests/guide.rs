//! The examples of NFD's customization guide on nodes built in code.

use super::*;

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
