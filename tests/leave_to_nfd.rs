//! `--leave-to-nfd RULE` (issue 27 item 4): a rule file the cluster's NFD
//! runs, with rules the node cannot evaluate before kubelet starts, renders
//! with those rules named and left to NFD: a warning line each, the env
//! drop-in records them, and `explain` (of the tree and of the rendered
//! MachineConfigs) shows them. A typo, a rule with taints, or a kept rule
//! that reads a left one's output is refused and writes nothing.

use crate::support::run_cli::{cli, json_of, snapshot};
use crate::support::{mco, scratch_dir, stderr, write};

use std::path::Path;

/// The features and fields of NFD's `nodefeaturerule-cpu.yaml` and
/// `examples/nodefeaturerule.yaml` that only NFD can apply (not copies):
/// an extended resource, annotations, and a rule the node evaluates.
const RULES: &str = "\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: site-cpu
spec:
  rules:
    - name: sgx resources
      extendedResources:
        example.com/sgx-epc: \"1\"
      labels:
        sgx-ready: \"true\"
      matchFeatures:
        - feature: cpu.cpuid
          matchExpressions:
            SSE2: {op: Exists}
    - name: annotated
      annotations:
        example.com/note: \"seen by NFD\"
      matchFeatures:
        - feature: kernel.version
          matchExpressions:
            major: {op: Exists}
    - name: kernel
      labels:
        example.com/kernel: \"true\"
      matchFeatures:
        - feature: kernel.version
          matchExpressions:
            major: {op: Exists}
";

fn kubelet_root(root: &Path) {
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        "[Unit]\nDescription=kubelet\n[Service]\nExecStart=/usr/bin/kubelet\n",
    );
}

#[test]
fn named_rules_are_left_to_nfd_with_a_warning_each_and_explain_shows_them() {
    let scratch = scratch_dir();
    let root = scratch.path().join("root");
    kubelet_root(&root);
    let rules = scratch.path().join("cpu.yaml");
    std::fs::write(&rules, RULES).unwrap();
    let (root_s, rules_s) = (root.to_str().unwrap(), rules.to_str().unwrap());
    let before = snapshot(&root);

    // Today's refusal, now naming the way out; nothing written.
    let out = cli(&["render", "dropins", "--root", root_s, "--rules", rules_s]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--leave-to-nfd 'site-cpu/sgx resources'"),
        "{}",
        stderr(&out)
    );
    // A typo, or a second name that matches nothing: an error, nothing written.
    for typo in [&["sgx resource"][..], &["sgx resources", "site-cpu/kernal"]] {
        let mut args = vec!["render", "dropins", "--root", root_s, "--rules", rules_s];
        for t in typo {
            args.extend(["--leave-to-nfd", t]);
        }
        args.extend(["--leave-to-nfd", "annotated"]);
        let out = cli(&args);
        assert!(!out.status.success(), "{typo:?}");
        assert!(
            stderr(&out).contains("no rule of that name"),
            "{}",
            stderr(&out)
        );
        assert_eq!(
            snapshot(&root),
            before,
            "{typo:?}: a refusal writes nothing"
        );
    }

    let out = cli(&[
        "render",
        "dropins",
        "--root",
        root_s,
        "--rules",
        rules_s,
        "--leave-to-nfd",
        "sgx resources",
        "--leave-to-nfd",
        "site-cpu/annotated",
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("left to the cluster's NFD"))
        .collect();
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(
        warnings[0].starts_with("warning: rule \"sgx resources\" of NodeFeatureRule \"site-cpu\"")
            && warnings[0].contains(rules_s)
            && warnings[0].contains("extendedResources"),
        "{err}"
    );
    assert!(warnings[1].contains("\"annotated\"") && warnings[1].contains("annotations"));
    let env = std::fs::read_to_string(
        root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf"),
    )
    .unwrap();
    assert!(env.contains("# kubelet start: kernel\n"), "{env}");
    assert!(
        env.contains(
            "# Left to the cluster's NFD, not evaluated here: site-cpu/sgx resources\n\
             # Left to the cluster's NFD, not evaluated here: site-cpu/annotated\n"
        ),
        "{env}"
    );

    // explain of the tree: the kept rule evaluated, the left ones named.
    let out = cli(&["explain", "--json", "--root", root_s]);
    let e = json_of(&out);
    let names: Vec<&str> = e["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["kernel"], "{e}");
    assert_eq!(
        e["left_to_nfd"],
        serde_json::json!(["site-cpu/sgx resources", "site-cpu/annotated"]),
        "{e}"
    );
    let out = cli(&["explain", "--root", root_s]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "rule site-cpu/annotated: left to the cluster's NFD (not evaluated at boot; NFD applies it after the node joins)"
        ),
        "{text}"
    );
    // Previewing the file with explain --rules takes the same flag, and
    // its decision stands in for the tree's.
    let out = cli(&[
        "explain",
        "--json",
        "--root",
        root_s,
        "--rules",
        rules_s,
        "--leave-to-nfd",
        "annotated",
        "--leave-to-nfd",
        "sgx resources",
    ]);
    let e = json_of(&out);
    assert_eq!(
        e["left_to_nfd"],
        serde_json::json!(["site-cpu/sgx resources", "site-cpu/annotated"]),
        "{e}"
    );
    assert_eq!(stderr(&out).matches("warning: rule").count(), 2);
    let out = cli(&["explain", "--root", root_s, "--rules", rules_s]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--leave-to-nfd"), "{}", stderr(&out));
}

/// Taints are a security control: a rule that sets them is never left out
/// of registration, whatever it reads.
#[test]
fn a_rule_with_taints_is_refused_and_nothing_written() {
    let scratch = scratch_dir();
    let root = scratch.path().join("root");
    kubelet_root(&root);
    let rules = scratch.path().join("cpu.yaml");
    let tainted = RULES.replace(
        "      extendedResources:",
        "      taints:\n        - {key: example.com/sgx, effect: NoSchedule}\n      extendedResources:",
    );
    std::fs::write(&rules, tainted).unwrap();
    let before = snapshot(&root);
    let out = cli(&[
        "render",
        "dropins",
        "--root",
        root.to_str().unwrap(),
        "--rules",
        rules.to_str().unwrap(),
        "--leave-to-nfd",
        "sgx resources",
        "--leave-to-nfd",
        "annotated",
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("sets taints") && err.contains("security control") && err.contains("--taint"),
        "{err}"
    );
    assert_eq!(snapshot(&root), before);
}

/// The rendered MachineConfigs carry the record: `explain --machineconfig`
/// of them (the MCO's rendered config keeps file contents) shows what was
/// left, with no flag.
#[test]
fn explain_of_the_rendered_machineconfigs_shows_the_rules_left() {
    let Some(dir) = mco::require_fixtures() else {
        return;
    };
    let (_, unit) = mco::kubelet_units(&dir).pop().unwrap();
    let scratch = scratch_dir();
    let rules = scratch.path().join("cpu.yaml");
    std::fs::write(&rules, RULES).unwrap();
    let out_dir = scratch.path().join("gitops");
    let wrapper = crate::support::run_cli::example_wrapper(scratch.path());
    let out = cli(&[
        "render",
        "machineconfig",
        "--pool",
        "worker-cpu",
        "--rules",
        rules.to_str().unwrap(),
        "--leave-to-nfd",
        "sgx resources",
        "--leave-to-nfd",
        "annotated",
        "--wrapper",
        wrapper.to_str().unwrap(),
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mc = scratch.path().join("01-worker-kubelet.yaml");
    std::fs::write(
        &mc,
        kubelet_labeler::cli::render::machineconfig::to_yaml(&mco::mco_machineconfig(&unit))
            .unwrap(),
    )
    .unwrap();
    let mut args = vec![
        "explain".to_string(),
        "--json".into(),
        "--machineconfig".into(),
        mc.display().to_string(),
    ];
    for f in std::fs::read_dir(&out_dir).unwrap() {
        let p = f.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with("50-") {
            args.extend(["--machineconfig".into(), p.display().to_string()]);
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let e = json_of(&cli(&args));
    assert_eq!(
        e["left_to_nfd"],
        serde_json::json!(["site-cpu/sgx resources", "site-cpu/annotated"]),
        "{e}"
    );
    assert_eq!(e["rules"].as_array().unwrap().len(), 1, "{e}");
}

/// `render machineconfig --pool` refuses to leave to NFD a rule giving the
/// label the pool selects its nodes by (review 9 riso F6): the node would
/// register outside the pool and join it once NFD labels it, without the
/// pool's taints. Nothing written; without `--leave-to-nfd` it renders.
#[test]
fn a_rule_giving_the_pool_label_is_not_left_to_nfd() {
    let scratch = scratch_dir();
    let rules = scratch.path().join("late.yaml");
    std::fs::write(
        &rules,
        "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {name: late}\n\
         spec:\n  rules:\n  - name: late-numa\n    labels: {feature.node.kubernetes.io/memory-numa: \"true\"}\n\
         \x20   matchFeatures: [{feature: cpu.cpuid, matchExpressions: {SSE2: {op: Exists}}}]\n\
         \x20 - name: kept\n    labels: {example.com/kept: \"true\"}\n\
         \x20   matchFeatures: [{feature: cpu.cpuid, matchExpressions: {SSE2: {op: Exists}}}]\n",
    )
    .unwrap();
    let out_dir = scratch.path().join("gitops");
    // The example's wrapper: a fresh build has none for --arch to find.
    let wrapper = crate::support::run_cli::example_wrapper(scratch.path());
    let render = |leave: bool| {
        let mut args = vec![
            "render",
            "machineconfig",
            "--pool",
            "worker-numa",
            "--pool-label",
            "feature.node.kubernetes.io/memory-numa=true",
            "--taint",
            "example.com/worker-numa=yes:NoSchedule",
            "--rules",
            rules.to_str().unwrap(),
            "--wrapper",
            wrapper.to_str().unwrap(),
            "--output-dir",
            out_dir.to_str().unwrap(),
        ];
        if leave {
            args.extend(["--leave-to-nfd", "late-numa"]);
        }
        cli(&args)
    };
    let out = render(true);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("Error: --leave-to-nfd late/late-numa: rule \"late-numa\"")
            && err.contains("gives the label feature.node.kubernetes.io/memory-numa")
            && err.contains("--pool-label of pool worker-numa")
            && err.contains("evaluate the rule at boot"),
        "{err}"
    );
    assert!(!out_dir.exists());
    let out = render(false);
    assert!(out.status.success(), "{}", stderr(&out));
}
