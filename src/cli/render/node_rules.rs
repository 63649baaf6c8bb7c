//! NodeFeatureRule files into `rules::Rule`s, checked at render: anything the
//! node side cannot evaluate, or that kubelet or NFD would refuse, is an
//! error naming `FILE:LINE:COL`, what is wrong and the fix. Never silently
//! dropped. Not on the boot path (the wrapper reads `rules::compact`).

use std::path::Path;

use anyhow::{Result, bail};

pub use super::rule_objects::API_VERSIONS;
use super::rule_objects::read_rule_objects;
use crate::node::kubelet::Profile;
use crate::node::rules::{self, Rule};

/// The compact form goes into one environment variable; Linux refuses a
/// single one over 128 KiB (MAX_ARG_STRLEN), so stay well under.
pub const MAX_COMPACT: usize = 64 * 1024;

/// Read rule files (`-` is stdin) into rules in NFD's order: objects by
/// `metadata.name`, the rules of one object in order.
pub fn read_rule_files(paths: &[impl AsRef<Path>], profile: Profile) -> Result<Vec<Rule>> {
    Ok(super::leave_to_nfd::read_rule_files_leaving(paths, profile, &[])?.rules)
}

/// The rules in their compact form, refused when it would not fit the
/// environment variable that carries it, or when evaluating them at boot
/// could pass the wrapper's budget on some node (`rules::budget`: what
/// render accepts, the wrapper evaluates within it on any facts).
pub fn compile(rules: &[Rule]) -> Result<String> {
    rules::budget::check(rules).map_err(|e| anyhow::anyhow!("{e}"))?;
    let text = rules::compact::encode(rules);
    if text.len() > MAX_COMPACT {
        bail!(
            "the rules take {} bytes in compact form, more than the {MAX_COMPACT} one \
             environment variable may carry; split them over fewer, simpler rules",
            text.len()
        );
    }
    Ok(text)
}

/// The NodeFeatureRule objects of one multi-document YAML text: (metadata.name, rules).
pub fn parse_rule_objects(
    text: &str,
    source: &str,
    profile: Profile,
) -> Result<Vec<(String, Vec<Rule>)>> {
    let mut out = Vec::new();
    for (name, read) in read_rule_objects(text, source, profile)? {
        let rules = read.into_iter().map(|r| r.rule).collect::<Result<_>>()?;
        out.push((name, rules));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::rules::{Expr, Op};

    /// The example's Raspberry Pi rule matches the board, not the OS: the
    /// Pi 4 fixture under Raspberry Pi OS and under Ubuntu, a Pi without
    /// PCIe by its kernel, not an ARM machine with neither.
    #[test]
    fn the_example_pi_rule_matches_the_board() {
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let text =
            std::fs::read_to_string(manifest.join("examples/rules/mixed-fleet.yaml")).unwrap();
        let rules: Vec<Rule> = parse_rule_objects(&text, "mixed-fleet.yaml", Profile::Upstream)
            .unwrap()
            .into_iter()
            .flat_map(|(_, r)| r)
            .collect();
        let pi = crate::node::facts::read(&crate::node::facts::FactsOptions {
            root: &manifest.join("tests/fixtures/nodes/rpi4"),
            nodename: None,
            only: None,
            attributes: None,
        });
        let labelled = |f: &crate::node::facts::Features| {
            crate::node::rules::evaluate_node(&rules, f)
                .unwrap()
                .labels
                .iter()
                .any(|(k, v)| k == "feature.node.kubernetes.io/raspberry-pi" && v == "true")
        };
        assert!(labelled(&pi));
        let mut ubuntu = pi.clone();
        ubuntu
            .attributes
            .get_mut("system.osrelease")
            .unwrap()
            .insert("ID".into(), "ubuntu".into());
        assert!(labelled(&ubuntu));
        // A Pi without PCIe (a Pi 3) by the kernel Raspberry Pi OS builds
        // for it; an ARM machine with neither, not.
        let mut pi3 = pi.clone();
        pi3.instances.remove("pci.device");
        assert!(labelled(&pi3));
        let mut other_arm = pi3.clone();
        other_arm
            .attributes
            .get_mut("kernel.version")
            .unwrap()
            .insert("full".into(), "6.1.0-28-arm64".into());
        assert!(!labelled(&other_arm));
    }

    const GPU: &str = "\
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata:
  name: gpu
spec:
  rules:
  - name: nvidia
    labels:
      nvidia.com/gpu: \"true\"
    labelsTemplate: |
      gpu.count={{ len .pci.device }}
    taints:
    - key: nvidia.com/gpu
      value: \"true\"
      effect: NoSchedule
    matchFeatures:
    - feature: pci.device
      matchExpressions:
        vendor: {op: In, value: [\"10de\"]}
        class: {op: InRegexp, value: [\"^03\"]}
";

    fn err(text: &str) -> String {
        format!(
            "{:#}",
            parse_rule_objects(text, "r.yaml", Profile::OpenShift).unwrap_err()
        )
    }

    #[test]
    fn reads_a_gpu_rule() {
        let objs = parse_rule_objects(GPU, "r.yaml", Profile::Upstream).unwrap();
        assert_eq!(objs.len(), 1);
        let r = &objs[0].1[0];
        assert_eq!(r.name, "nvidia");
        assert_eq!(r.labels, vec![("nvidia.com/gpu".into(), "true".into())]);
        assert_eq!(r.taints.len(), 1);
        assert_eq!(r.match_features[0].feature, "pci.device");
        let exprs = r.match_features[0].match_expressions.as_ref().unwrap();
        assert_eq!(exprs[1].0, "class");
        assert_eq!(exprs[1].1.op, Op::InRegexp);
        let compact = compile(&objs[0].1).unwrap();
        assert_eq!(rules::compact::decode(&compact).unwrap(), objs[0].1);
    }

    #[test]
    fn refusals_name_the_place_and_the_fix() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "nvidia.com/gpu: \"true\"",
                "node-role.kubernetes.io/gpu-worker: \"true\"",
                "r.yaml:9:7",
            ),
            ("labels:", "extendedResources:", "r.yaml:8:5"),
            (
                "{op: In, value: [\"10de\"]}",
                "{op: Inn, value: [\"10de\"]}",
                ":19:22",
            ),
            (
                "{op: In, value: [\"10de\"]}",
                "{op: Exists, value: [\"10de\"]}",
                "no value",
            ),
            (
                "{op: In, value: [\"10de\"]}",
                "{op: In, value: [0302]}",
                "not the number 0302; quote it (\"0302\")",
            ),
            (
                "{op: In, value: [\"10de\"]}",
                "{op: In, value: [0x10de, 12]}",
                "not the number 0x10de; quote it (\"0x10de\")",
            ),
            ("[\"^03\"]", "[\"(03\"]", "regexp"),
            (
                "feature: pci.device",
                "feature: kernel.cmdline",
                "does not read",
            ),
            (
                "{{ len .pci.device }}",
                "{{ printf \"%d\" 1 }}",
                "template line 1",
            ),
            ("key: nvidia.com/gpu", "key: gpu", "without a prefix"),
            (
                "effect: NoSchedule",
                "effect: Sometimes",
                "NoSchedule, PreferNoSchedule",
            ),
            (
                "    labels:",
                "    colour: blue\n    labels:",
                "no field \"colour\"",
            ),
            (
                "nfd.k8s-sigs.io/v1alpha1",
                "nfd.k8s-sigs.io/v1",
                "apiVersion",
            ),
        ];
        for (from, to, want) in cases {
            assert!(GPU.contains(from), "{from}");
            let e = err(&GPU.replacen(from, to, 1));
            assert!(e.contains(want), "{to}: {e}");
            assert!(e.starts_with("r.yaml:"), "{to}: {e}");
        }
        let e = err(&GPU.replacen(
            "nvidia.com/gpu: \"true\"",
            "node-role.kubernetes.io/gpu-worker: \"true\"",
            1,
        ));
        assert!(
            e.contains("feature.node.kubernetes.io/gpu-worker"),
            "the fix is named: {e}"
        );
    }

    /// What NFD accepts and render once refused: capitals in feature names,
    /// static `@` values, `\p` classes, `type: version`, `range` over an
    /// integer, `break`.
    #[test]
    fn accepts_what_nfd_accepts() {
        for (from, to) in [
            ("feature: pci.device", "feature: PCI.Device"),
            (
                "nvidia.com/gpu: \"true\"",
                "nvidia.com/gpu: \"@kernel.version.major\"",
            ),
            ("[\"^03\"]", "[\"^\\\\p{Nd}+$\", \"[\\\\p{Greek}]\"]"),
            (
                "{op: In, value: [\"10de\"]}",
                "{op: GtLt, value: [\"v1.2\", \"1.0.0-rc1\"], type: version}",
            ),
            (
                "{{ len .pci.device }}",
                "{{ range 2 }}{{ if eq . 1 }}{{ break }}{{ end }}{{ end }}",
            ),
        ] {
            assert!(GPU.contains(from), "{from}");
            let text = GPU.replacen(from, to, 1);
            let objs = parse_rule_objects(&text, "r.yaml", Profile::Upstream)
                .unwrap_or_else(|e| panic!("{to}: {e:#}"));
            let compact = compile(&objs[0].1).unwrap();
            assert_eq!(rules::compact::decode(&compact).unwrap(), objs[0].1, "{to}");
        }
        for (to, want) in [
            (
                "{op: Gt, value: [\"5.x\"], type: version}",
                "is not a version",
            ),
            ("{op: Gt, value: [\"5\"], type: semver}", "type \"semver\""),
            (
                "{op: InRegexp, value: [\"\\\\p{Nope}\"]}",
                "unknown Unicode class",
            ),
        ] {
            let e = err(&GPU.replacen("{op: In, value: [\"10de\"]}", to, 1));
            assert!(e.contains(want) && e.starts_with("r.yaml:"), "{to}: {e}");
        }
    }

    #[test]
    fn openshift_api_versions_lists_and_order() {
        let b = GPU
            .replace("nfd.k8s-sigs.io/v1alpha1", "nfd.openshift.io/v1")
            .replace("name: gpu\n", "name: a-first\n")
            .replace("name: nvidia", "name: other");
        let dir = tempfile::tempdir().unwrap();
        let (pa, pb) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
        std::fs::write(&pa, GPU).unwrap();
        std::fs::write(&pb, &b).unwrap();
        let rules = read_rule_files(&[&pa, &pb], Profile::Upstream).unwrap();
        // NFD runs objects by name: a-first before gpu.
        assert_eq!(rules[0].name, "other");
        assert_eq!(rules[1].name, "nvidia");
        let e = read_rule_files(&[&pa, &pa], Profile::Upstream).unwrap_err();
        assert!(e.to_string().contains("second NodeFeatureRule"), "{e}");
        let list = format!(
            "kind: List\nitems:\n{}",
            GPU.lines()
                .map(|l| format!("  {l}\n"))
                .collect::<String>()
                .replacen("  apiVersion", "- apiVersion", 1)
        );
        assert_eq!(
            parse_rule_objects(&list, "l.yaml", Profile::Upstream)
                .unwrap()
                .len(),
            1
        );
    }

    /// NFD's Go types read a null field as one left out (`matchExpressions:`
    /// with nothing after it is null): the term then matches with no
    /// elements, not with every one as an empty `{}` does.
    #[test]
    fn null_fields_are_left_out_as_nfd_reads_them() {
        let rule = |body: &str| {
            let text = format!(
                "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {{name: o}}\nspec:\n  rules:\n  - name: r\n{body}"
            );
            parse_rule_objects(&text, "r.yaml", Profile::Upstream)
                .map(|mut o| o.remove(0).1.remove(0))
        };
        let r = rule("    labelsTemplate:\n    matchFeatures:\n    - feature: pci.device\n      matchExpressions:\n      matchName: null\n").unwrap();
        assert_eq!(r.labels_template, None);
        assert_eq!(r.match_features[0].match_expressions, None);
        assert_eq!(r.match_features[0].match_name, None);
        let r = rule("    matchFeatures:\n    - feature: pci.device\n      matchExpressions: {}\n      matchName: {op: null, value: null, type: null}\n").unwrap();
        assert_eq!(r.match_features[0].match_expressions, Some(vec![]));
        assert_eq!(
            r.match_features[0].match_name,
            Some(Expr::new(Op::Any, vec![]))
        );
        let e = rule("    matchFeatures:\n    - feature: pci.device\n      matchExpressions:\n        vendor:\n").unwrap_err();
        assert!(
            format!("{e:#}")
                .contains("r.yaml:10:15: rule \"r\": matchFeatures: vendor: a null expression"),
            "{e:#}"
        );
        // A null is left out only where a field may be: an unknown one is still named.
        let e = rule("    bogus: null\n").unwrap_err();
        assert!(format!("{e:#}").contains("no field \"bogus\""), "{e:#}");
    }
}
