//! The node format (`crate::node::contract::NODE_FORMAT`) of our files and
//! wrappers as the CLI reads it back: whether renders and wrappers of two
//! builds compose on a node (`compose`, `explain`).

use crate::node::contract;

/// The head of every text file render writes for a node: its first line is
/// `# kubelet-labeler[ VERSION]: ...` (`super::RENDERED_BY`).
const TEXT_HEAD: &str = "# kubelet-labeler";

/// Whether `bytes` are one of our node files (a text file render wrote, or
/// our wrapper), and then its node format: `Some(None)` for ours from a
/// release that did not stamp it (an earlier one, unknown).
pub fn of_file(bytes: &[u8]) -> Option<Option<String>> {
    if bytes.starts_with(b"\x7fELF") {
        return wrapper_format(bytes);
    }
    // The generator: a shell script, stamped on the line after its `#!`.
    let bytes = bytes.strip_prefix(b"#!/bin/sh\n").unwrap_or(bytes);
    let rest = bytes.strip_prefix(TEXT_HEAD.as_bytes())?;
    let line = &rest[..rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())];
    let line = String::from_utf8_lossy(line);
    let stamp = match line.strip_prefix(' ') {
        // `# kubelet-labeler VERSION: ...`
        Some(words) => words.split([':', ' ']).next().unwrap_or(""),
        // `# kubelet-labeler: ...`, before renders named their version.
        None if line.starts_with(':') => "",
        None => return None,
    };
    Some(
        stamp
            .split_once("+node.")
            .map(|(_, n)| n.to_string())
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
    )
}

/// A node format in words: `node format 5`; for one of ours without a
/// stamp (`ours`), an earlier release.
pub fn describe(format: Option<&str>, ours: bool) -> String {
    match (format, ours) {
        (Some(n), _) => format!("node format {n}"),
        (None, true) => "an earlier release (its node format is not stamped)".into(),
        (None, false) => "no node format of ours".into(),
    }
}

/// Whether two of our files are of one (known) node format.
pub fn same(a: &Option<Option<String>>, b: &Option<Option<String>>) -> bool {
    matches!((a, b), (Some(Some(x)), Some(Some(y))) if x == y)
}

/// `s` with every byte inverted, at compile time: the heads are looked for
/// in this form, so this program never holds them as they are and a static
/// build of it passed as --wrapper is not taken for the wrapper.
pub(super) const fn inverted<const N: usize>(s: &str) -> [u8; N] {
    let b = s.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = !b[i];
        i += 1;
    }
    out
}

pub(super) const WRAPPER_MARK: [u8; contract::WRAPPER_USAGE_HEAD.len()] =
    inverted(contract::WRAPPER_USAGE_HEAD);

/// Whether `bytes` are our wrapper, and then its node format: the number
/// after [`contract::WRAPPER_FORMAT_MARK`] in its usage line, or None for
/// a wrapper of a release before the usage line carried it.
pub fn wrapper_format(bytes: &[u8]) -> Option<Option<String>> {
    let at = bytes
        .windows(WRAPPER_MARK.len())
        .position(|w| w.iter().zip(&WRAPPER_MARK).all(|(b, m)| *b == !*m))?;
    // The usage line is one literal: its tail is within a few hundred bytes.
    let line = &bytes[at..bytes.len().min(at + 512)];
    let mark = contract::WRAPPER_FORMAT_MARK.as_bytes();
    let Some(m) = line.windows(mark.len()).position(|w| w == mark) else {
        return Some(None);
    };
    let digits: String = line[m + mark.len()..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .map(|&b| b as char)
        .collect();
    Some((!digits.is_empty()).then_some(digits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::render::arch::Arch;
    use crate::cli::render::{dropins, node_rules, sync_units};
    use crate::node::contract::NODE_FORMAT;
    use crate::node::kubelet::{Additions, Profile};

    /// The wrapper's usage line read back whatever string literal the
    /// linker puts after it (one starting with a digit made node format 5
    /// read as 47).
    #[test]
    fn the_wrappers_node_format_reads_back_whatever_follows() {
        use crate::node::wrapper::boot::USAGE;
        for next in [&b"7_"[..], b"", b"\0", b"42"] {
            let bytes = [b"\x7fELF".as_slice(), USAGE.as_bytes(), next].concat();
            assert_eq!(
                wrapper_format(&bytes),
                Some(Some(NODE_FORMAT.to_string())),
                "{next:?}"
            );
        }
    }

    #[test]
    fn stamps_read_back() {
        let ours = format!("# {}: labels\n[Service]\n", super::super::RENDERED_BY);
        assert_eq!(
            of_file(ours.as_bytes()),
            Some(Some(NODE_FORMAT.to_string()))
        );
        assert_eq!(of_file(b"# kubelet-labeler 0.1.0: labels\n"), Some(None));
        assert_eq!(
            of_file(b"# kubelet-labeler: labels\n[Service]\n"),
            Some(None)
        );
        assert_eq!(
            of_file(b"# kubelet-labeler 0.1.0+node.2: x\n"),
            Some(Some("2".into()))
        );
        assert_eq!(of_file(b"# kubelet-labelers: x\n"), None);
        assert_eq!(of_file(b"[Service]\nEnvironment=A=b\n"), None);
        assert!(same(&of_file(ours.as_bytes()), &of_file(ours.as_bytes())));
        assert!(!same(&Some(None), &Some(None)));
    }

    /// FNV-1a, 64 bits: a fingerprint, not a security boundary.
    fn fnv(data: &[u8], mut h: u64) -> u64 {
        for &b in data {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        h
    }

    /// Rules that use every part of the compact form: match expressions
    /// of each kind, `InRegexp` (with a Unicode class), `matchAny`, vars,
    /// templates, taints.
    const RULES: &str = r#"
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeatureRule
metadata: {name: fingerprint}
spec:
  rules:
  - name: gpu
    labels: {example.com/gpu: "true"}
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
    vars: {gpu.seen: "yes"}
    matchFeatures:
    - feature: pci.device
      matchExpressions:
        vendor: {op: In, value: ["10de"]}
        class: {op: InRegexp, value: ["^03\\p{Nd}{2}$"]}
        device: {op: Exists}
  - name: kernel
    labelsTemplate: |
      {{ range .kernel.version }}example.com/kernel-{{ .Name }}={{ .Value }}
      {{ end }}
    matchAny:
    - matchFeatures:
      - feature: kernel.version
        matchExpressions:
          major: {op: Gt, value: ["4"]}
    - matchFeatures:
      - feature: cpu.cpuid
        matchName: {op: NotIn, value: ["AVX512F"]}
  - name: after
    labels: {example.com/after: "@rule.matched.gpu.seen"}
    matchFeatures:
    - feature: rule.matched
      matchExpressions:
        gpu.seen: {op: IsTrue}
"#;

    /// Everything a node reads from what render writes, for fixed input,
    /// with comment lines (and so the version stamp) left out: the
    /// contract's code, the compact rules, the env drop-ins, the wrapper's
    /// drop-in and generator, the sync's units.
    fn node_reads() -> String {
        let strip = |text: &str| -> String {
            text.lines()
                .filter(|l| !l.trim_start().starts_with('#') && !l.trim_start().starts_with("//"))
                .filter(|l| !l.trim().is_empty())
                .map(|l| format!("{l}\n"))
                .collect()
        };
        let mut out = strip(include_str!("../../node/contract.rs"));
        let rules: Vec<_> =
            node_rules::parse_rule_objects(RULES, "fingerprint", Profile::OpenShift)
                .unwrap()
                .into_iter()
                .flat_map(|(_, r)| r)
                .collect();
        let compact = node_rules::compile(&rules).unwrap();
        out += &compact;
        let additions = Additions {
            labels: vec![("node.kubernetes.io/worker-gpu".into(), String::new())],
            taints: crate::node::kubelet::parse_taints("example.com/d=x:NoSchedule").unwrap(),
        };
        let with_rules = dropins::NodeRules {
            names: vec!["gpu".into()],
            compact: Some(compact),
            nfd_labels: Some(crate::node::facts::NfdFlavour::OpenShift),
            left_to_nfd: vec!["fingerprint/kernel".into()],
        };
        out += &strip(&dropins::env_dropin_with_rules(&additions, &with_rules).unwrap());
        out += &strip(&dropins::role_env_dropin(&additions, &with_rules).unwrap());
        for profile in [Profile::OpenShift, Profile::Upstream] {
            out += &strip(&dropins::wrapper_dropin(profile));
            out += &strip(&dropins::generator(
                profile,
                "kubelet.service",
                &[Arch::X86_64, Arch::Aarch64],
            ));
            for (path, text) in sync_units::files(
                profile,
                "kubelet.service",
                Some("node.kubernetes.io/worker-gpu"),
            ) {
                out += &path;
                out += &strip(&text);
            }
        }
        out
    }

    /// The node format this fingerprint of [`node_reads`] was recorded for.
    /// (Re-recorded in format 5 for a new fence reason, a value the wrapper
    /// writes which no render reads, then for the generator's own PATH:
    /// what it writes is the same, so renders and wrappers still compose;
    /// then for another fence reason, `pool-changed`, with the fleet ISO's
    /// installed-pool record, which `iso fleet` writes, not render, and
    /// which the wrapper reads in both its forms; then for another fence
    /// reason, `environment-overridden`: the wrapper reads the same env
    /// drop-ins, by the same names, and now takes our variables from them.)
    const RECORDED: (&str, u64) = ("5", 0xc848270337b0633f);

    /// What the node reads changes only with a new node format, so the
    /// version stamped in every file and manifest tells renders and
    /// wrappers that do not compose apart.
    #[test]
    fn what_the_node_reads_changes_only_with_the_node_format() {
        let got = fnv(node_reads().as_bytes(), 0xcbf2_9ce4_8422_2325);
        assert!(
            RECORDED == (NODE_FORMAT, got),
            "what the node reads changed (fingerprint {got:#x}, recorded {:#x} for node format \
             {}): bump node_format! in src/node/contract.rs (renders and wrappers of the two \
             builds do not compose: explain and render refuse them together), then set \
             RECORDED here to ({:?}, {got:#x})",
            RECORDED.1,
            RECORDED.0,
            NODE_FORMAT
        );
    }
}
