//! `--node-labels`: how kubelet parses the value (component-base's
//! ConfigurationMap) and which labels it accepts (ValidateKubeletFlags: the
//! self-label namespace policy, then IsQualifiedName / IsValidLabelValue).

use super::Profile;
use crate::node::one_of;

/// Parse one `--node-labels` value as kubelet does: split on `,`, skip
/// empty items, split each on the first `=`, trim key and value; a bare key
/// has the empty value. Never fails; order is kept (a later key wins).
pub fn parse_node_labels(value: &str) -> Vec<(String, String)> {
    value
        .split(',')
        .filter(|item| !item.is_empty())
        .map(|item| match item.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
            None => (item.trim().to_string(), String::new()),
        })
        .collect()
}

/// The keys kubelet may set on itself in the kubernetes.io/k8s.io namespaces;
/// kubelet also sets each of them on its own (hostname, os, arch at every
/// start; zone, region and instance type from the cloud provider),
/// replacing a `--node-labels` value on every restart.
pub const KUBELET_LABELS: [&str; 11] = [
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];
/// Namespaces (and their subdomains) kubelet may set freely.
const KUBELET_NAMESPACES: [&str; 2] = ["kubelet.kubernetes.io", "node.kubernetes.io"];
/// OpenShift's kubelet carry also lets it register with these roles.
pub const OPENSHIFT_ROLE_LABELS: [&str; 5] = [
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
    "node-role.kubernetes.io/worker",
    "node-role.kubernetes.io/etcd",
    "node-role.kubernetes.io/arbiter",
];

/// The part of `key` before its first `/`, "" when none. A byte scan:
/// opt-level z keeps it inline, where `split_once` calls memchr (NFD's
/// label set asks this of hundreds of keys at each start).
pub fn namespace(key: &str) -> &str {
    key.bytes()
        .position(|b| b == b'/')
        .and_then(|i| key.get(..i))
        .unwrap_or("")
}

fn in_domain(ns: &str, domain: &str) -> bool {
    ns == domain || ns.strip_suffix(domain).is_some_and(|p| p.ends_with('.'))
}

/// A key in the namespaces kubelet polices.
pub fn is_kubernetes_label(key: &str) -> bool {
    let ns = namespace(key);
    in_domain(ns, "kubernetes.io") || in_domain(ns, "k8s.io")
}

/// May kubelet (with `profile`) set this key on itself at registration?
pub fn is_self_settable(key: &str, profile: Profile) -> bool {
    if !is_kubernetes_label(key) {
        return true;
    }
    if one_of(&KUBELET_LABELS, key) {
        return true;
    }
    let ns = namespace(key);
    if KUBELET_NAMESPACES.iter().any(|d| in_domain(ns, d)) {
        return true;
    }
    profile == Profile::OpenShift && one_of(&OPENSHIFT_ROLE_LABELS, key)
}

fn is_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, the label name/value pattern.
fn matches_name_pattern(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && is_alnum(b[0])
        && is_alnum(b[b.len() - 1])
        && b.iter()
            .all(|&c| is_alnum(c) || c == b'-' || c == b'_' || c == b'.')
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Labels `[a-z0-9]([-a-z0-9]*[a-z0-9])?` joined by dots, in one pass with
/// no split (a start checks the prefix of each of NFD's hundreds of keys):
/// each byte one of `[-.a-z0-9]`, both ends and both sides of each dot
/// `[a-z0-9]`.
pub(crate) fn is_dns1123_subdomain(b: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
        return false;
    };
    is_lower_alnum(first)
        && is_lower_alnum(last)
        && b.iter().enumerate().all(|(i, &c)| match c {
            b'.' => is_lower_alnum(b[i - 1]) && is_lower_alnum(b[i + 1]),
            _ => is_lower_alnum(c) || c == b'-',
        })
}

/// DNS-1123 subdomain: lowercase labels `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
/// joined by dots, at most 253 bytes (no per-label limit here, as kubelet).
fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 bytes".to_string());
    }
    if !is_dns1123_subdomain(s.as_bytes()) {
        errs.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')"
                .to_string(),
        );
    }
    errs
}

/// apimachinery's wording for the name/value character rule.
const NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', \
                         and must start and end with an alphanumeric character";

/// Why `key` is not a qualified name (apimachinery IsQualifiedName), if not.
pub fn label_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let name = match key.split_once('/') {
        None => key,
        Some((prefix, name)) if !name.contains('/') => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            name
        }
        Some(_) => {
            return vec![format!(
                "a qualified name {NAME_RULE} (e.g. 'MyName', or 'my.name', or '123-abc') \
                 with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName'): \
                 at most one '/'"
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !matches_name_pattern(name) {
        errs.push(format!(
            "name part {NAME_RULE} (e.g. 'MyName', or 'my.name', or '123-abc')"
        ));
    }
    errs
}

/// Why `value` is not a label value (IsValidLabelValue), if not.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !value.is_empty() && !matches_name_pattern(value) {
        errs.push(format!(
            "a valid label must be an empty string or {} (e.g. 'MyValue', or 'my_value', or '12345')",
            NAME_RULE.replacen("must ", "", 1)
        ));
    }
    errs
}

/// A label kubelet would refuse, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelError {
    /// kubernetes.io/k8s.io key outside kubelet's allow-list.
    NotSelfSettable {
        key: String,
        profile: Profile,
    },
    InvalidKey {
        key: String,
        errors: Vec<String>,
    },
    InvalidValue {
        key: String,
        value: String,
        errors: Vec<String>,
    },
}

impl std::fmt::Display for LabelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LabelError::NotSelfSettable { key, profile } => {
                let mut allowed = KUBELET_LABELS.to_vec();
                allowed.sort_unstable();
                write!(
                    f,
                    "label {key:?}: unknown 'kubernetes.io' or 'k8s.io' label specified with \
                     --node-labels (kubelet refuses to start): --node-labels in the 'kubernetes.io' \
                     namespace must begin with an allowed prefix ({}) or be in the specifically \
                     allowed set ({})",
                    KUBELET_NAMESPACES.join(", "),
                    allowed.join(", "),
                )?;
                if *profile == Profile::OpenShift {
                    write!(
                        f,
                        "; OpenShift's kubelet also allows {}",
                        OPENSHIFT_ROLE_LABELS.join(", ")
                    )?;
                }
                f.write_str("; use e.g. node.kubernetes.io/<name> or a domain of your own")
            }
            LabelError::InvalidKey { key, errors } => {
                write!(f, "label key {key:?} is invalid: {}", errors.join("; "))
            }
            LabelError::InvalidValue { key, value, errors } => write!(
                f,
                "label {key:?} has an invalid value {value:?}: {}",
                errors.join("; ")
            ),
        }
    }
}

impl std::error::Error for LabelError {}

/// What kubelet keeps of repeated keys: one entry per key, at its first
/// position, with its last value (ConfigurationMap is a map).
pub fn effective_labels(labels: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::with_capacity(labels.len());
    // Where each key is in `out`, in an open-addressed table by FNV-1a hash:
    // NFD's label set is a few hundred keys, a scan of `out` per key made
    // this quadratic, and its keys share long prefixes that an ordered map
    // compares byte by byte (musl's memcmp). Smaller code than HashMap.
    let fnv = |k: &str| {
        k.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    };
    let mask = (labels.len() * 2).next_power_of_two() - 1;
    // `out` index + 1; 0 is free.
    let mut slots = vec![0usize; mask + 1];
    for (key, value) in labels {
        let mut s = fnv(key) as usize & mask;
        loop {
            match slots[s] {
                0 => {
                    slots[s] = out.len() + 1;
                    out.push((key.clone(), value.clone()));
                    break;
                }
                i if out[i - 1].0 == *key => {
                    out[i - 1].1 = value.clone();
                    break;
                }
                _ => s = (s + 1) & mask,
            }
        }
    }
    out
}

/// Check labels as kubelet's ValidateKubeletFlags does, on the effective
/// map (a later value of a key replaces an earlier one): every key outside
/// the allow-list first, then syntax. Returns every problem found.
pub fn validate_labels(labels: &[(String, String)], profile: Profile) -> Vec<LabelError> {
    let mut policy = Vec::new();
    let mut syntax = Vec::new();
    for (key, value) in effective_labels(labels) {
        if !is_self_settable(&key, profile) {
            policy.push(LabelError::NotSelfSettable { key, profile });
            continue;
        }
        let key_errs = label_key_errors(&key);
        if !key_errs.is_empty() {
            syntax.push(LabelError::InvalidKey {
                key: key.clone(),
                errors: key_errs,
            });
        }
        let value_errs = label_value_errors(&value);
        if !value_errs.is_empty() {
            syntax.push(LabelError::InvalidValue {
                key,
                value,
                errors: value_errs,
            });
        }
    }
    policy.extend(syntax);
    policy
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The one-pass check is the label-by-label definition, on every
    /// string of up to five bytes from the bytes that matter.
    #[test]
    fn dns1123_subdomain_in_one_pass_is_label_by_label() {
        let by_labels = |s: &str| {
            s.split('.').all(|l| {
                let b = l.as_bytes();
                !b.is_empty()
                    && is_lower_alnum(b[0])
                    && is_lower_alnum(b[b.len() - 1])
                    && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
            })
        };
        let alphabet = ["a", "0", "-", ".", "A", "_"];
        let mut all = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..5 {
            last = last
                .iter()
                .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
                .collect();
            all.extend(last.iter().cloned());
        }
        assert_eq!(all.len(), 1 + 6 + 36 + 216 + 1296 + 7776);
        for s in &all {
            assert_eq!(is_dns1123_subdomain(s.as_bytes()), by_labels(s), "{s:?}");
        }
    }

    #[test]
    fn parses_like_configuration_map() {
        assert_eq!(
            parse_node_labels("a=1,b=2"),
            labels(&[("a", "1"), ("b", "2")])
        );
        // first '=' splits; bare key; empty items; trimming
        assert_eq!(parse_node_labels("a=b=c"), labels(&[("a", "b=c")]));
        assert_eq!(
            parse_node_labels("node-role.kubernetes.io/worker,x=1,"),
            labels(&[("node-role.kubernetes.io/worker", ""), ("x", "1")])
        );
        assert_eq!(parse_node_labels(",,"), labels(&[]));
        assert_eq!(parse_node_labels(" a = 1 "), labels(&[("a", "1")]));
        assert_eq!(parse_node_labels(" "), labels(&[("", "")]));
        assert_eq!(parse_node_labels(""), labels(&[]));
    }

    #[test]
    fn upstream_allow_list() {
        let ok = [
            "kubernetes.io/hostname",
            "kubernetes.io/os",
            "kubernetes.io/arch",
            "beta.kubernetes.io/os",
            "beta.kubernetes.io/arch",
            "beta.kubernetes.io/instance-type",
            "node.kubernetes.io/instance-type",
            "topology.kubernetes.io/zone",
            "topology.kubernetes.io/region",
            "failure-domain.beta.kubernetes.io/zone",
            "failure-domain.beta.kubernetes.io/region",
            "node.kubernetes.io/worker-gpu",
            "feature.node.kubernetes.io/x",
            "kubelet.kubernetes.io/y",
            "foo.kubelet.kubernetes.io/y",
            "example.com/pool",
            "cluster.x-k8s.io/a",
            "plain",
        ];
        for k in ok {
            assert!(is_self_settable(k, Profile::Upstream), "{k}");
        }
        let refused = [
            "xnode.kubernetes.io/a",
            "app.kubernetes.io/name",
            "node-role.kubernetes.io/worker",
            "node-role.kubernetes.io/infra",
            "node-restriction.kubernetes.io/a",
            "kubernetes.io/role",
            "k8s.io/a",
            "x.k8s.io/a",
            "kubernetes.io/instance-type",
        ];
        for k in refused {
            assert!(!is_self_settable(k, Profile::Upstream), "{k}");
        }
    }

    #[test]
    fn openshift_adds_exactly_five_roles() {
        for k in OPENSHIFT_ROLE_LABELS {
            assert!(is_self_settable(k, Profile::OpenShift));
            assert!(!is_self_settable(k, Profile::Upstream));
        }
        assert!(!is_self_settable(
            "node-role.kubernetes.io/infra",
            Profile::OpenShift
        ));
        assert!(!is_self_settable(
            "node-role.kubernetes.io/worker-gpu",
            Profile::OpenShift
        ));
    }

    #[test]
    fn key_syntax() {
        assert!(label_key_errors("example.com/a").is_empty());
        assert!(label_key_errors("MyName").is_empty());
        assert!(label_key_errors("my.name").is_empty());
        assert!(label_key_errors("123-abc").is_empty());
        assert!(!label_key_errors("Example.com/a").is_empty());
        assert!(!label_key_errors("a/b/c").is_empty());
        assert!(!label_key_errors("/a").is_empty());
        assert!(!label_key_errors("a/").is_empty());
        assert!(!label_key_errors("").is_empty());
        assert!(!label_key_errors("-a").is_empty());
        assert!(!label_key_errors("a_").is_empty());
        assert!(label_key_errors(&"a".repeat(63)).is_empty());
        assert!(
            label_key_errors(&"a".repeat(64))
                .iter()
                .any(|e| e.contains("63 bytes"))
        );
        let prefix253 = format!("{}.{}", "a".repeat(63), "b".repeat(189));
        assert_eq!(prefix253.len(), 253);
        assert!(label_key_errors(&format!("{prefix253}/x")).is_empty());
        assert!(
            label_key_errors(&format!("{prefix253}c/x"))
                .iter()
                .any(|e| e.contains("253"))
        );
        assert!(!label_key_errors("a..b/x").is_empty());
        assert!(!label_key_errors("a-.b/x").is_empty());
    }

    #[test]
    fn value_syntax() {
        for ok in [
            "", "MyValue", "my_value", "12345", "yes", "0x1F", "1_000", "a.b-c",
        ] {
            assert!(label_value_errors(ok).is_empty(), "{ok}");
        }
        for bad in ["-x", "x-", "b=c", "12:30", "~", "a b", "é"] {
            assert!(!label_value_errors(bad).is_empty(), "{bad}");
        }
        assert!(label_value_errors(&"v".repeat(63)).is_empty());
        assert!(!label_value_errors(&"v".repeat(64)).is_empty());
    }

    #[test]
    fn policy_errors_come_first() {
        let errs = validate_labels(
            &labels(&[("Bad.Prefix/x", ""), ("node-role.kubernetes.io/infra", "")]),
            Profile::OpenShift,
        );
        assert!(matches!(errs[0], LabelError::NotSelfSettable { .. }));
        assert!(matches!(errs[1], LabelError::InvalidKey { .. }));
        assert!(
            errs[0]
                .to_string()
                .contains("node-role.kubernetes.io/infra")
        );
    }

    #[test]
    fn whitespace_only_item_is_an_empty_key() {
        let errs = validate_labels(&parse_node_labels("a=1, "), Profile::Upstream);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].to_string().contains("name part must be non-empty"));
    }

    #[test]
    fn exactly_the_eleven_keys_and_two_namespaces_in_kubernetes_io() {
        for k in KUBELET_LABELS {
            assert!(is_self_settable(k, Profile::Upstream), "{k}");
        }
        // neighbours of the allowed keys are not allowed
        for k in [
            "kubernetes.io/hostnames",
            "topology.kubernetes.io/rack",
            "beta.kubernetes.io/zone",
            "failure-domain.beta.kubernetes.io/rack",
            "x.kubernetes.io/os",
            "kubernetes.io/Os",
            "sub.kubernetes.io/hostname",
        ] {
            assert!(!is_self_settable(k, Profile::Upstream), "{k}");
            assert!(!is_self_settable(k, Profile::OpenShift), "{k}");
        }
        // namespaces with subdomains, at a dot boundary only
        for k in [
            "node.kubernetes.io/x",
            "a.b.node.kubernetes.io/x",
            "kubelet.kubernetes.io/x",
            "a.kubelet.kubernetes.io/x",
        ] {
            assert!(is_self_settable(k, Profile::Upstream), "{k}");
        }
        for k in [
            "xnode.kubernetes.io/a",
            "xkubelet.kubernetes.io/a",
            "node.k8s.io/a",
            "kubelet.k8s.io/a",
            "node-role.kubernetes.io/control-plane",
        ] {
            assert!(!is_self_settable(k, Profile::Upstream), "{k}");
        }
        // not a kubernetes.io/k8s.io namespace: only syntax applies
        for k in [
            "kubernetes.io.example.com/a",
            "notkubernetes.io/a",
            "Kubernetes.io/a",
            "kubernetes.io",
            "example.com/kubernetes.io",
        ] {
            assert!(!is_kubernetes_label(k), "{k}");
        }
        // the namespace is what precedes the first '/'
        assert!(is_kubernetes_label("kubernetes.io/a/b"));
        assert!(!is_kubernetes_label("/x"));
    }

    #[test]
    fn openshift_roles_need_the_openshift_profile() {
        let errs = validate_labels(
            &labels(&[("node-role.kubernetes.io/master", "")]),
            Profile::Upstream,
        );
        assert_eq!(errs.len(), 1);
        let msg = errs[0].to_string();
        assert!(
            msg.contains("\"node-role.kubernetes.io/master\"")
                && msg.contains("unknown 'kubernetes.io' or 'k8s.io' label")
                && msg.contains("allowed prefix (kubelet.kubernetes.io, node.kubernetes.io)")
                && msg.contains("(beta.kubernetes.io/arch, beta.kubernetes.io/instance-type,")
                && !msg.contains("OpenShift"),
            "{msg}"
        );
        assert!(
            validate_labels(
                &labels(&[
                    ("node-role.kubernetes.io/master", ""),
                    ("node-role.kubernetes.io/control-plane", ""),
                    ("node-role.kubernetes.io/arbiter", ""),
                ]),
                Profile::OpenShift
            )
            .is_empty()
        );
        let errs = validate_labels(
            &labels(&[("node-role.kubernetes.io/infra", "")]),
            Profile::OpenShift,
        );
        assert!(
            errs[0]
                .to_string()
                .contains("OpenShift's kubelet also allows")
        );
        // the role set is exact: no other key in that namespace, no other value of the prefix
        for k in [
            "node-role.kubernetes.io/Worker",
            "node-role.kubernetes.io/worker/x",
            "x.node-role.kubernetes.io/worker",
        ] {
            assert!(!is_self_settable(k, Profile::OpenShift), "{k}");
        }
    }

    #[test]
    fn kubelet_error_wording() {
        let key = |k: &str| label_key_errors(k).join("; ");
        assert!(
            key("Example.com/a").starts_with(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
            ),
            "{}",
            key("Example.com/a")
        );
        assert_eq!(
            key(&"n".repeat(64)),
            "name part must be no more than 63 bytes"
        );
        assert!(key("a_").starts_with("name part must consist of alphanumeric characters"));
        assert!(key("a/b/c").starts_with("a qualified name must consist of"));
        assert_eq!(key("/a"), "prefix part must be non-empty");
        assert!(key("a/").starts_with("name part must be non-empty; name part must consist"));
        assert!(
            label_value_errors(&"v".repeat(64))
                .join("; ")
                .contains("must be no more than 63 bytes")
        );
        assert!(
            label_value_errors("-x")[0]
                .starts_with("a valid label must be an empty string or consist of")
        );
        let e = validate_labels(&labels(&[("a", "-x")]), Profile::Upstream);
        assert!(
            e[0].to_string()
                .contains("label \"a\" has an invalid value \"-x\""),
            "{}",
            e[0]
        );
    }

    #[test]
    fn lengths_at_the_limits() {
        // name 63/64
        assert!(label_key_errors(&format!("example.com/{}", "n".repeat(63))).is_empty());
        assert!(!label_key_errors(&format!("example.com/{}", "n".repeat(64))).is_empty());
        // prefix 253/254, one segment longer than 63 is fine (no per-label limit)
        let p253 = format!(
            "{}.{}.{}.{}",
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(61)
        );
        assert_eq!(p253.len(), 253);
        assert!(label_key_errors(&format!("{p253}/n")).is_empty());
        let p254 = format!("{p253}e");
        assert_eq!(
            label_key_errors(&format!("{p254}/n")),
            vec!["prefix part must be no more than 253 bytes".to_string()]
        );
        assert!(label_key_errors(&format!("{}.com/n", "a".repeat(64))).is_empty());
        // a full 253+1+63 key
        assert!(label_key_errors(&format!("{p253}/{}", "n".repeat(63))).is_empty());
        // value 63/64, empty allowed
        assert!(label_value_errors(&"v".repeat(63)).is_empty());
        assert_eq!(label_value_errors(&"v".repeat(64)).len(), 1);
        assert!(label_value_errors("").is_empty());
        // byte lengths, not characters
        assert!(!label_value_errors(&"é".repeat(32)).is_empty());
    }

    #[test]
    fn configuration_map_accumulates_and_the_last_value_wins() {
        let mut all = parse_node_labels("a=1,b=2");
        all.extend(parse_node_labels("a=3"));
        assert_eq!(effective_labels(&all), labels(&[("a", "3"), ("b", "2")]));
        // an earlier bad value that a later one replaces is no error to kubelet
        let mut all = parse_node_labels("a=-bad");
        all.extend(parse_node_labels("a=good"));
        assert!(validate_labels(&all, Profile::Upstream).is_empty());
        // and the reverse is
        let mut all = parse_node_labels("a=good");
        all.extend(parse_node_labels("a=-bad"));
        assert_eq!(validate_labels(&all, Profile::Upstream).len(), 1);
        // a=b=c: value "b=c", refused by the value rule
        let e = validate_labels(&parse_node_labels("a=b=c"), Profile::Upstream);
        assert!(matches!(&e[0], LabelError::InvalidValue { value, .. } if value == "b=c"));
        // tabs and spaces around key and value are trimmed
        assert_eq!(parse_node_labels("\ta\t=\t1\t"), labels(&[("a", "1")]));
        assert_eq!(parse_node_labels("a = "), labels(&[("a", "")]));
    }

    #[test]
    fn effective_labels_of_many_keys_as_a_scan_gives_them() {
        let all: Vec<(String, String)> = (0..700)
            .map(|i| {
                (
                    format!("feature.node.kubernetes.io/k{}", (i * 7919) % 450),
                    i.to_string(),
                )
            })
            .collect();
        let mut scan: Vec<(String, String)> = Vec::new();
        for (k, v) in &all {
            match scan.iter_mut().find(|(sk, _)| sk == k) {
                Some(seen) => seen.1 = v.clone(),
                None => scan.push((k.clone(), v.clone())),
            }
        }
        assert_eq!(scan.len(), 450);
        assert_eq!(effective_labels(&all), scan);
    }

    #[test]
    fn every_problem_is_listed_policy_first() {
        let errs = validate_labels(
            &labels(&[
                ("ok.example.com/a", "1"),
                ("bad_prefix.com/a", "x"),
                ("k8s.io/a", ""),
                ("b", "~"),
                ("app.kubernetes.io/name", "x"),
            ]),
            Profile::Upstream,
        );
        let kinds: Vec<_> = errs
            .iter()
            .map(|e| match e {
                LabelError::NotSelfSettable { key, .. } => format!("policy {key}"),
                LabelError::InvalidKey { key, .. } => format!("key {key}"),
                LabelError::InvalidValue { key, .. } => format!("value {key}"),
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                "policy k8s.io/a",
                "policy app.kubernetes.io/name",
                "key bad_prefix.com/a",
                "value b"
            ]
        );
    }
}
