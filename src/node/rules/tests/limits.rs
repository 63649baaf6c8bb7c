//! Robustness and edges: parsers on arbitrary text, `type: version`, names
//! shown on one line, repeated taints, the evaluation budget.

use super::*;

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
    assert!(super::super::evaluate_node(&few, &f).is_ok());
}

/// features.d as a pod with a hostPath on it may fill it: 1024 keys, 64
/// KiB, in both `local.label` and `local.feature`.
fn pod_filled_features_d() -> Features {
    let mut f = Features::default();
    let keys: SortedMap<String, String> = (0..1024)
        .map(|i| (format!("k{i:04}{}", "a".repeat(57)), String::new()))
        .collect();
    f.attributes.insert("local.label".into(), keys.clone());
    f.attributes.insert("local.feature".into(), keys);
    f
}

/// Review 13 r13a F1: what features.d gives (anyone who can write it)
/// buys no boot time: filled to its bounds, the budget grows by at most
/// `PER_FACT * LOCAL_COUNTED` (tens of milliseconds), where it grew by
/// ~3.3 billion units (a second of CPU). A provisioning's few keys count
/// whole, as render's check assumes.
#[test]
fn features_d_buys_no_boot_time() {
    let none = Budget::for_facts(&Features::default()).limit();
    let filled = Budget::for_facts(&pod_filled_features_d()).limit();
    assert!(
        filled <= none + budget::PER_FACT * budget::LOCAL_COUNTED,
        "a pod's features.d raised the budget from {none} to {filled} units"
    );
    const { assert!(budget::PER_FACT * budget::LOCAL_COUNTED <= budget::BASE + budget::BASE / 8) };
    let mut few = Features::default();
    attrs(&mut few, "local.label", &[("gpu", "true"), ("rack", "r12")]);
    attrs(
        &mut few,
        "local.feature",
        &[("gpu", "true"), ("rack", "r12")],
    );
    flags(&mut few, "cpu.cpuid", &["AVX", "AVX2"]);
    assert_eq!(budget::budget_size(&few), budget::facts_size(&few));
    // Other facts still count whole.
    let mut both = pod_filled_features_d();
    flags(&mut both, "cpu.cpuid", &["AVX", "AVX2"]);
    assert_eq!(
        budget::budget_size(&both) - budget::budget_size(&pod_filled_features_d()),
        budget::facts_size(&both) - budget::facts_size(&pod_filled_features_d())
    );
}

/// Review 14 r14a F3 (FAILS at 03cbdbc): the boot path and the sync
/// evaluate `without_matched`; explain keeps the matched elements. The
/// budget must not depend on it (evaluator.rs: "charged all the same"),
/// else explain runs out where the wrapper does not, and says the node
/// registers fenced when it registers unfenced. `record` skips its charges
/// when it keeps nothing.
#[test]
fn the_budget_does_not_depend_on_keeping_matched_elements() {
    let f = pod_filled_features_d();
    let rules: Vec<Rule> = (0..4)
        .map(|i| {
            rule(
                &format!("r{i}"),
                &[("example.com/l", "1")],
                vec![name_term("local.label", Expr::new(Op::Exists, vec![]))],
            )
        })
        .collect();
    let mut kept = Budget::new(u64::MAX / 2);
    let mut boot = Budget::new(u64::MAX / 2).without_matched();
    evaluate_node_without(&rules, &f, &[], &mut kept).unwrap();
    evaluate_node_without(&rules, &f, &[], &mut boot).unwrap();
    assert_eq!(
        kept.used(),
        boot.used(),
        "explain's evaluation charges {} units, the wrapper's {}",
        kept.used(),
        boot.used()
    );
}

/// Review 13 r13a F1 (FAILS at 3bd90f7): a regex thread costs 4 to 6 ns
/// where the budget's other units cost about one, so a render-accepted
/// `InRegexp` over `local.label` turned a pod's full features.d into half
/// a second of CPU per start. Regex work is now charged `REGEX_UNITS` a
/// counted unit, by the evaluator and by render's worst case alike: the
/// reviewer's rule (`.*` x800 then `ZQ`, 476K units an element before) is
/// refused, and what the evaluator spends on a regex is exactly that.
#[test]
fn regex_work_is_charged_at_its_measured_cost() {
    // `In` with the compiled pattern and no values: charged as `InRegexp`
    // is but for the regex, and matches nothing.
    let on_local = |op: Op, p: &str| {
        let mut e = Expr::new(Op::InRegexp, vec![p.to_string()]);
        e.op = op;
        rule(
            "re",
            &[("example.com/re", "1")],
            vec![name_term("local.label", e)],
        )
    };
    let heavy = format!("{}ZQ", ".*".repeat(800));
    let e = budget::check(&[on_local(Op::InRegexp, &heavy)]).unwrap_err();
    assert!(e.contains("per element of node facts"), "{e}");
    let f = pod_filled_features_d();
    let light = ".*.*ZQ";
    let spent = |op: Op| {
        let mut b = Budget::new(u64::MAX / 2).without_matched();
        evaluate_node_without(&[on_local(op, light)], &f, &[], &mut b).unwrap();
        b.used()
    };
    let re = regex::Regex::new(light).unwrap();
    let work: u64 = f.attributes["local.label"]
        .iter()
        .map(|(k, _)| {
            let mut left = u64::MAX;
            assert_eq!(re.is_match_within(k, &mut left), Some(false));
            u64::MAX - left
        })
        .sum();
    assert_eq!(
        spent(Op::InRegexp) - spent(Op::In),
        budget::REGEX_UNITS * work
    );
    assert!(budget::check(&[on_local(Op::InRegexp, light)]).is_ok());
}

/// Review 14 r14a F2 (FAILS at 3bd90f7): a template that reads its data
/// gets a copy of what its block matched, and a pod's full features.d
/// walked by many terms of one block made that copy hundreds of MB on a
/// node whose other facts bought the budget. A block's template data is
/// capped at `MAX_TEMPLATE_DATA` units (about 15 MB in the wrapper): this
/// render-accepted rule of 40 such terms stops as out of budget, whatever
/// the budget, on the boot path and in explain alike; one term does not.
#[test]
fn template_data_of_a_block_is_capped() {
    let f = pod_filled_features_d();
    let walking = |terms: usize| Rule {
        name: "walk".into(),
        labels_template: Some("{{ range .local.label }}{{ end }}example.com/w=1".into()),
        match_features: (0..terms)
            .map(|_| name_term("local.label", Expr::new(Op::Exists, vec![])))
            .collect(),
        ..Default::default()
    };
    assert!(budget::check(&[walking(40)]).is_ok());
    for budget in [
        Budget::new(u64::MAX / 2),
        Budget::new(u64::MAX / 2).without_matched(),
    ] {
        let mut b = budget.clone();
        let e = evaluate_node_without(&[walking(40)], &f, &[], &mut b).unwrap_err();
        assert!(e.to_string().contains("budget"), "{e}");
        let mut b = budget;
        evaluate_node_without(&[walking(1)], &f, &[], &mut b).unwrap();
    }
    // A template of text alone reads nothing: no cap.
    let mut text = walking(40);
    text.labels_template = Some("example.com/w=1".into());
    let mut b = Budget::new(u64::MAX / 2).without_matched();
    evaluate_node_without(&[text], &f, &[], &mut b).unwrap();
}

/// Review 15 r15a F1 (FAILS at 9e8a427): the rule memo charged a
/// memoized rule's matched elements again on every later evaluation with
/// the same budget (derived.rs re-evaluates when an `@` value names a
/// feature not read) by what it KEPT: explain keeps those elements, the
/// wrapper and the sync keep none, so only explain paid, ran out, and said
/// the node registers fenced when it does not. The memo now charges what
/// the first run was charged for them, kept or not.
#[test]
fn r15a_a_second_evaluation_costs_the_same_kept_or_not() {
    let f = pod_filled_features_d();
    let rules: Vec<Rule> = (0..4)
        .map(|i| {
            rule(
                &format!("r{i}"),
                &[("example.com/l", "1")],
                vec![name_term("local.label", Expr::new(Op::Exists, vec![]))],
            )
        })
        .collect();
    let mut kept = Budget::new(u64::MAX / 2);
    let mut boot = Budget::new(u64::MAX / 2).without_matched();
    for _ in 0..2 {
        evaluate_node_without(&rules, &f, &[], &mut kept).unwrap();
        evaluate_node_without(&rules, &f, &[], &mut boot).unwrap();
    }
    assert_eq!(
        kept.used(),
        boot.used(),
        "two evaluations: explain's charge {} units, the wrapper's {}",
        kept.used(),
        boot.used()
    );
}

/// A pod's full features.d, and a node whose other facts (a distribution
/// kernel's built-in modules) buy a budget many times features.d's share.
fn pod_filled_features_d_on_a_big_node() -> Features {
    let mut f = pod_filled_features_d();
    let modules: SortedMap<String, String> = (0..20_000)
        .map(|i| (format!("mod{i:05}"), String::new()))
        .collect();
    f.attributes.insert("kernel.enabledmodule".into(), modules);
    f
}

/// Left by review 14/15 (63d860f): the work on features.d's elements drew
/// on the whole budget, which the node's other facts grow, so a template
/// walking a pod's full features.d cost ~0.35 s of CPU per start on a node
/// with a distribution kernel's modules.builtin. That work now draws from
/// features.d's own share as well (`budget::local_limit`, the budget of a
/// node with no other facts): these render-accepted rules run out on the
/// big node as on a bare one (FAILS at 9e8a427: they ran to the end, ~1.7x
/// that share), at boot and in explain alike; the same rules on a
/// provisioning's few keys stay well within it.
#[test]
fn work_on_features_d_draws_from_its_own_share() {
    let rules: Vec<Rule> = (0..400)
        .map(|i| Rule {
            name: format!("t{i}"),
            labels_template: Some("{{ range .local.label }}{{ end }}example.com/w=1".into()),
            match_features: (0..2)
                .map(|_| name_term("local.label", Expr::new(Op::Exists, vec![])))
                .collect(),
            ..Default::default()
        })
        .collect();
    assert!(budget::check(&rules).is_ok());
    let big = pod_filled_features_d_on_a_big_node();
    let share = budget::local_limit(&big);
    assert!(Budget::for_facts(&big).limit() > 10 * share);
    // What walking it costs with no share: several times the share.
    let mut unbounded = Budget::new(Budget::for_facts(&big).limit());
    evaluate_node_without(&rules, &big, &[], &mut unbounded).unwrap();
    assert!(unbounded.used() > share + share / 2, "{}", unbounded.used());
    for keep in [true, false] {
        let mut b = Budget::for_facts(&big);
        if !keep {
            b = b.without_matched();
        }
        let r = evaluate_node_without(&rules, &big, &[], &mut b);
        assert!(
            matches!(&r, Err(e) if e.to_string().contains("budget")),
            "kept {keep}: the walk of the pod's file ran to the end"
        );
    }
    // A provisioning's keys on the same node: within the share, each
    // evaluation drawing from it.
    let mut few = pod_filled_features_d_on_a_big_node();
    attrs(&mut few, "local.label", &[("gpu", "true"), ("rack", "r12")]);
    few.attributes.remove("local.feature");
    let mut b = Budget::for_facts(&few).without_matched();
    let before = b.local_left();
    for _ in 0..2 {
        evaluate_node_without(&rules, &few, &[], &mut b).unwrap();
    }
    assert!(b.local_left() < before);
}

/// Render checks features.d's share as the evaluator draws from it: work
/// on its elements whatever their size (here templates of a fixed
/// 30,000 steps in blocks on `local.label`) past `LOCAL_BASE` is refused,
/// naming the share; the same rules on another feature stay within the
/// whole budget.
#[test]
fn render_checks_features_d_share() {
    let looping = |feature: &str, n: usize| -> Vec<Rule> {
        (0..n)
            .map(|i| Rule {
                name: format!("loop{i}"),
                labels_template: Some("{{ range 30000 }}{{ end }}example.com/w=1".into()),
                match_features: vec![name_term(feature, Expr::new(Op::Exists, vec![]))],
                ..Default::default()
            })
            .collect()
    };
    let e = budget::check(&looping("local.label", 24)).unwrap_err();
    assert!(e.contains("features.d") && e.contains("loop"), "{e}");
    budget::check(&looping("pci.device", 24)).unwrap();
    budget::check(&looping("local.label", 2)).unwrap();
}

/// A rule on `cpu.cpuid` (present in `lookup_facts`) with this template.
fn templated(name: &str, template: &str) -> Rule {
    Rule {
        name: name.into(),
        labels_template: Some(template.into()),
        match_features: vec![name_term("cpu.cpuid", Expr::new(Op::Exists, vec![]))],
        ..Default::default()
    }
}

fn lookup_facts() -> Features {
    let mut f = Features::default();
    flags(&mut f, "cpu.cpuid", &["AVX"]);
    f
}

/// Review 16 r16a F1 (FAILS at b91a8f2): variable lookups, field lookups
/// and function arguments were not charged (one step a command however
/// many arguments, each looking at every variable declared before it), so
/// a template render accepted at ~3 million units ran for minutes at
/// boot. Each is charged now: at least a unit per variable looked at and
/// per field probed, tens per argument, and render's worst case covers
/// what the evaluator spends.
#[test]
fn r16a_lookups_and_arguments_are_charged() {
    let f = lookup_facts();
    let spent = |t: &str| {
        let mut b = Budget::new(u64::MAX / 2).without_matched();
        evaluate_node_without(&[templated("t", t)], &f, &[], &mut b).unwrap();
        b.used()
    };
    let (k, a, r) = (40u64, 60u64, 10u64);
    let loop_of = |args: &str| {
        format!(
            "{{{{ $b := 0 }}}}{}{{{{ range {r} }}}}{{{{ if and {} }}}}{{{{ end }}}}{{{{ end }}}}x=1",
            "{{ $a := 0 }}".repeat(k as usize),
            args.repeat(a as usize)
        )
    };
    let base = spent(&loop_of(""));
    // `$` is the first variable: each lookup looks at all k + 2.
    let vars = spent(&loop_of("$ ")) - base;
    assert!(
        vars >= r * a * (k + 2),
        "{vars} units for {} variables looked at",
        r * a * (k + 2)
    );
    // An argument costs as much as ~40 ns of work (a step is 32 units).
    let ints = spent(&loop_of("1 ")) - base;
    assert!(ints >= r * a * 32, "{ints} units for {} arguments", r * a);
    // Two fields probed per argument, beyond its variable.
    let fields = spent(&loop_of("$.cpu.cpuid ")) - base - vars;
    assert!(
        fields >= r * a * 2 * 16,
        "{fields} units for {} fields",
        r * a * 2
    );
    for args in [
        "",
        "$ ",
        "1 ",
        "$.cpu.cpuid ",
        "(index $ \"cpu\" \"cpuid\") ",
    ] {
        assert_within_worst_case(&[templated("t", &loop_of(args))], &f);
    }
    // Range variables are set in place, not pushed per iteration: a
    // lookup past them costs the same in every iteration.
    let range_vars = |n: u64| {
        spent(&format!(
            "{{{{ range $i, $e := {n} }}}}{{{{ if $ }}}}{{{{ end }}}}{{{{ end }}}}x=1"
        ))
    };
    let (one, two) = (range_vars(1000), range_vars(2000));
    assert!(
        two - one <= one + one / 8,
        "1000 iterations {one} units, 2000 {two}"
    );
}

/// Review 16 r16a F1 (FAILS at b91a8f2): the reviewer's kind of rule, a
/// loop of `and` over thousands of arguments (26 s of CPU at boot with
/// the static wrapper), is charged per argument: its run stops at the
/// template's cap on lookups (`MAX_LOOKED`, milliseconds), out of budget,
/// and render counts that cap, so a file of 13 such rules is refused
/// where each cost ~3 million units before.
#[test]
fn r16a_argument_loops_stop_at_the_cap_and_render_counts_it() {
    let t = format!(
        "{{{{ range 30000 }}}}{{{{ if and {} }}}}{{{{ end }}}}{{{{ end }}}}x=1",
        "1 ".repeat(5000)
    );
    let rules: Vec<Rule> = (0..13).map(|i| templated(&format!("a{i}"), &t)).collect();
    let e = budget::check(&rules).unwrap_err();
    assert!(e.contains("the costliest is rule a"), "{e}");
    budget::check(&rules[..1]).unwrap();
    let mut b = Budget::for_facts(&lookup_facts()).without_matched();
    let e = evaluate_node_without(&rules[..1], &lookup_facts(), &[], &mut b).unwrap_err();
    assert!(e.to_string().contains("budget"), "{e}");
    // What the run spent before it stopped: about the cap.
    let mut left = u64::MAX;
    let run = template::parse(&t)
        .unwrap()
        .execute_within(&template::Data::new(), &mut left);
    assert_eq!(run, Err(template::RunError::Budget));
    let spent = u64::MAX - left;
    assert!(
        spent <= template::MAX_LOOKED + template::MAX_LOOKED / 8,
        "{spent}"
    );
}
