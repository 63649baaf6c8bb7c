//! Issue 33 item 3: a value in a form the node never reads. For every
//! attribute with a fixed form (`render::value_forms`), every value a
//! fixture node has is in that form (no warning on a real value), and each
//! of its usual misspellings (`0x10de`, `10DE`, a 2-digit or 6-digit PCI
//! class, `06` for 6, `GenuineIntel` for Intel) is flagged, and by NFD's
//! own evaluator (../shared/oracles/nfd) never matches any fixture node,
//! in `In`; the value as the node reads it does match its node.

use crate::nfd_differential::nodes;
use crate::support::{nfd_oracle, scratch_dir};

use kubelet_labeler::cli::render::value_forms;
use serde_json::{Value, json};

/// What a rule writer might write for `v`, the form the node reads.
fn misspellings(feature: &str, attr: &str, v: &str) -> Vec<String> {
    let mut out = vec![v.to_uppercase(), format!(" {v}")];
    if attr != "vendor_id" {
        out.push(format!("0x{v}"));
    }
    match (feature, attr) {
        ("pci.device", "class") => {
            out.push(v[..2].to_string());
            out.push(format!("{v}00"));
        }
        (_, "family" | "id") => {
            out.push(format!("0{v}"));
            if let Ok(n) = v.parse::<u64>() {
                out.push(format!("0x{n:x}"));
            }
        }
        (_, "vendor_id") => {
            out.push(v.to_lowercase());
            out.extend(match v {
                "Intel" => Some("GenuineIntel".to_string()),
                "AMD" => Some("AuthenticAMD".to_string()),
                _ => None,
            });
        }
        _ => {}
    }
    out.retain(|m| m != v);
    out
}

fn rule(n: usize, feature: &str, attr: &str, value: &str) -> Value {
    json!({
        "name": format!("r{n}"),
        "labels": {format!("m{n}"): "true"},
        "matchFeatures": [{"feature": feature,
            "matchExpressions": {attr: {"op": "In", "value": [value]}}}],
    })
}

#[test]
fn misspelled_values_are_flagged_and_never_match_in_nfd() {
    let nodes = nodes();
    // (feature, attribute, value, the node it is from, misspelled)
    let mut cases: Vec<(String, String, String, usize, bool)> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        for (feature, attr) in value_forms::fixed() {
            let mut values: Vec<String> = node
                .insts
                .get(feature)
                .into_iter()
                .flatten()
                .filter_map(|e| e.get(attr).cloned())
                .collect();
            values.extend(
                node.attrs
                    .get(feature)
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| k == attr)
                    .map(|(_, v)| v.clone()),
            );
            values.sort();
            values.dedup();
            for v in values {
                assert!(
                    value_forms::fits(feature, attr, &v),
                    "{}: {feature} {attr} {v:?} is what the node reads, yet flagged",
                    node.name
                );
                for m in misspellings(feature, attr, &v) {
                    assert!(
                        !value_forms::fits(feature, attr, &m),
                        "{feature} {attr} {m:?} (for {v:?}) is not flagged"
                    );
                    cases.push((feature.into(), attr.into(), m, i, true));
                }
                cases.push((feature.into(), attr.into(), v, i, false));
            }
        }
    }
    let seen: std::collections::BTreeSet<(&str, &str)> = cases
        .iter()
        .map(|(f, a, ..)| (f.as_str(), a.as_str()))
        .collect();
    // The fixtures have values of these (usb.device has none yet).
    for pair in [
        ("pci.device", "class"),
        ("pci.device", "vendor"),
        ("pci.device", "subsystem_device"),
        ("cpu.model", "family"),
        ("cpu.model", "vendor_id"),
    ] {
        assert!(seen.contains(&pair), "no fixture value for {pair:?}");
    }
    let out_dir = scratch_dir();
    let Some(oracle) = nfd_oracle::build(out_dir.path()) else {
        return;
    };
    let rules: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(n, (f, a, v, ..))| rule(n, f, a, v))
        .collect();
    let inputs: Vec<Value> = nodes
        .iter()
        .map(|node| json!({"features": node.json, "objects": [{"name": "forms", "rules": rules}]}))
        .collect();
    let answers = nfd_oracle::run(&oracle, &inputs);
    for (i, answer) in answers.iter().enumerate() {
        for outcome in nfd_oracle::outcomes(answer) {
            for (n, (f, a, v, from, misspelled)) in cases.iter().enumerate() {
                let matched = outcome["labels"]
                    .get(format!("feature.node.kubernetes.io/m{n}"))
                    .is_some();
                if *misspelled {
                    assert!(!matched, "NFD matched {f} {a} {v:?} on {}", nodes[i].name);
                } else if *from == i {
                    assert!(
                        matched,
                        "NFD did not match {f} {a} {v:?} on {}, which has it: {outcome}",
                        nodes[i].name
                    );
                }
            }
        }
    }
}

const GPU_0X: &str = "\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: gpus
spec:
  rules:
  - name: nvidia
    labels:
      nvidia.com/gpu: \"true\"
    taints:
    - key: nvidia.com/gpu
      value: \"true\"
      effect: NoSchedule
    matchFeatures:
    - feature: pci.device
      matchExpressions:
        vendor: {op: In, value: [\"0x10de\"]}
        class: {op: NotIn, value: [\"03\"]}
";

/// `render dropins --rules RULES` (RULES written with `text`) on a tree
/// under `dir` holding a kubelet unit: the tree's root and the run.
fn render_dropins_with_rules(
    dir: &std::path::Path,
    rules: &std::path::Path,
    text: &str,
) -> (std::path::PathBuf, std::process::Output) {
    use crate::support::run_cli::cli;
    use crate::support::write;
    write(rules, text);
    let root = dir.join("root");
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        "[Service]\nExecStart=/usr/bin/kubelet --v=2\n",
    );
    let out = cli(&[
        "render",
        "dropins",
        "--root",
        root.to_str().unwrap(),
        "--arch",
        "x86_64",
        "--rules",
        rules.to_str().unwrap(),
    ]);
    (root, out)
}

/// render warns where it reads the rules, and explain where it evaluates
/// them (the tree's rules, as `--rules`), naming the rule, the feature,
/// the attribute, the value, the form and the value meant; `NotIn` says it
/// excludes nothing. The DGX fixture (NVIDIA GPUs) gets no match.
#[test]
fn render_and_explain_warn_on_a_value_the_node_never_reads() {
    use crate::support::run_cli::cli;
    use crate::support::stderr;
    let dir = scratch_dir();
    let rules = dir.path().join("gpus.yaml");
    let (root, out) = render_dropins_with_rules(dir.path(), &rules, GPU_0X);
    let r = root.to_str().unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let vendor = "pci.device vendor \"0x10de\" (In) never matches: the node reads vendor as 4 \
                  lower-case hex digits without 0x (e.g. \"10de\"); write \"10de\"";
    let class = "pci.device class \"03\" (NotIn) excludes nothing";
    assert!(
        err.contains(&format!(
            "warning: rule \"nvidia\" of NodeFeatureRule \"gpus\" ({}): {vendor}",
            rules.display()
        )) && err.contains(class)
            && err.contains("InRegexp, value: [\"^03\"]"),
        "{err}"
    );
    let dgx = crate::support::repo().join("tests/fixtures/nodes/dgx");
    let facts = ["--facts-root", dgx.to_str().unwrap()];
    for extra in [&[][..], &["--rules", rules.to_str().unwrap()]] {
        let mut args = vec!["explain", "--root", r];
        args.extend(facts);
        args.extend(extra);
        let out = cli(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("warning: rule \"nvidia\": {vendor}\n"))
                && text.contains("rule \"nvidia\": no match"),
            "{text}{}",
            stderr(&out)
        );
        // Said once: not on stderr too.
        assert!(!stderr(&out).contains("never matches"), "{}", stderr(&out));
    }
}

/// Review 40 r40b F2: a rules file of many rules, each with as many values
/// in the wrong form as one expression is warned about, gets at most 200
/// value warnings in the run and one line counting the rest.
#[test]
fn value_warnings_are_bounded_per_run() {
    use crate::support::stderr;
    let dir = scratch_dir();
    let values: Vec<String> = (0..16).map(|i| format!("\"0x{i:04x}\"")).collect();
    let mut text = String::from(
        "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata:\n  name: many\nspec:\n  rules:\n",
    );
    for i in 0..40 {
        text.push_str(&format!(
            "  - name: r{i}\n    labels:\n      example.com/r{i}: \"true\"\n    matchFeatures:\n    \
             - feature: pci.device\n      matchExpressions:\n        vendor: {{op: In, value: [{}]}}\n",
            values.join(", ")
        ));
    }
    let rules = dir.path().join("many.yaml");
    let (_, out) = render_dropins_with_rules(dir.path(), &rules, &text);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let warned = err.lines().filter(|l| l.contains("never matches")).count();
    assert_eq!(warned, 200, "{}", &err[..err.len().min(2000)]);
    let more = 40 * 16 - 200;
    assert!(
        err.contains(&format!("warning: and {more} more values of the rules")),
        "{}",
        &err[err.len().saturating_sub(2000)..]
    );
}
