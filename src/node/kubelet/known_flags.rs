//! The long flags kubelet knows, for `validate` and `explain` to refuse a
//! typo as kubelet does (`unknown flag: --node-label`, exit 1). Never used
//! at boot: the wrapper passes the unit's flags on unchecked.
//!
//! `CURRENT` is what the reference kubelet (OpenShift's Kubernetes 1.36.2,
//! `../shared/tools/realcluster`) lists in `kubelet --help`; a test holds it
//! equal to that list. `OLDER` are flags other kubelets still in the field
//! take (older releases, upstream builds) and that kubelet refuses: a
//! warning, not an error, since the node's kubelet may be one of those.
//! `BOOL_FLAGS` entries count as known too (its `removed` ones are older).

use crate::node::one_of;

#[rustfmt::skip]
pub const CURRENT: &[&str] = &[
    "address",
    "allowed-unsafe-sysctls",
    "anonymous-auth",
    "application-metrics-count-limit",
    "authentication-token-webhook",
    "authentication-token-webhook-cache-ttl",
    "authorization-mode",
    "authorization-webhook-cache-authorized-ttl",
    "authorization-webhook-cache-unauthorized-ttl",
    "boot-id-file",
    "bootstrap-kubeconfig",
    "cert-dir",
    "cgroup-driver",
    "cgroup-root",
    "cgroups-per-qos",
    "client-ca-file",
    "cloud-provider",
    "cluster-dns",
    "cluster-domain",
    "config",
    "config-dir",
    "container-hints",
    "container-log-max-files",
    "container-log-max-size",
    "container-runtime-endpoint",
    "containerd",
    "containerd-namespace",
    "contention-profiling",
    "cpu-cfs-quota",
    "cpu-cfs-quota-period",
    "cpu-manager-policy",
    "cpu-manager-policy-options",
    "cpu-manager-reconcile-period",
    "enable-controller-attach-detach",
    "enable-debugging-handlers",
    "enable-load-reader",
    "enable-server",
    "enforce-node-allocatable",
    "event-burst",
    "event-qps",
    "event-storage-age-limit",
    "event-storage-event-limit",
    "eviction-hard",
    "eviction-max-pod-grace-period",
    "eviction-minimum-reclaim",
    "eviction-pressure-transition-period",
    "eviction-soft",
    "eviction-soft-grace-period",
    "exit-on-lock-contention",
    "experimental-allocatable-ignore-eviction",
    "experimental-mounter-path",
    "fail-cgroupv1",
    "fail-swap-on",
    "feature-gates",
    "file-check-frequency",
    "global-housekeeping-interval",
    "hairpin-mode",
    "healthz-bind-address",
    "healthz-port",
    "help",
    "hostname-override",
    "housekeeping-interval",
    "http-check-frequency",
    "image-credential-provider-bin-dir",
    "image-credential-provider-config",
    "image-gc-high-threshold",
    "image-gc-low-threshold",
    "image-service-endpoint",
    "kernel-memcg-notification",
    "kube-api-burst",
    "kube-api-content-type",
    "kube-api-qps",
    "kube-reserved",
    "kube-reserved-cgroup",
    "kubeconfig",
    "kubelet-cgroups",
    "local-storage-capacity-isolation",
    "lock-file",
    "log-cadvisor-usage",
    "log-flush-frequency",
    "log-text-info-buffer-size",
    "log-text-split-stream",
    "logging-format",
    "machine-id-file",
    "make-iptables-util-chains",
    "manifest-url",
    "manifest-url-header",
    "max-housekeeping-interval",
    "max-open-files",
    "max-pods",
    "maximum-dead-containers",
    "maximum-dead-containers-per-container",
    "memory-manager-policy",
    "minimum-container-ttl-duration",
    "minimum-image-ttl-duration",
    "node-ip",
    "node-labels",
    "node-status-max-images",
    "node-status-update-frequency",
    "oom-score-adj",
    "pod-cidr",
    "pod-manifest-path",
    "pod-max-pids",
    "pods-per-core",
    "port",
    "protect-kernel-defaults",
    "provider-id",
    "qos-reserved",
    "read-only-port",
    "register-node",
    "register-with-taints",
    "registry-burst",
    "registry-qps",
    "reserved-cpus",
    "reserved-memory",
    "resolv-conf",
    "root-dir",
    "rotate-certificates",
    "rotate-server-certificates",
    "runonce",
    "runtime-cgroups",
    "runtime-request-timeout",
    "seccomp-default",
    "serialize-image-pulls",
    "storage-driver-buffer-duration",
    "storage-driver-db",
    "storage-driver-host",
    "storage-driver-password",
    "storage-driver-secure",
    "storage-driver-table",
    "storage-driver-user",
    "streaming-connection-idle-timeout",
    "sync-frequency",
    "system-cgroups",
    "system-reserved",
    "system-reserved-cgroup",
    "tls-cert-file",
    "tls-cipher-suites",
    "tls-min-version",
    "tls-private-key-file",
    "topology-manager-policy",
    "topology-manager-policy-options",
    "topology-manager-scope",
    "v",
    "version",
    "vmodule",
    "volume-plugin-dir",
    "volume-stats-agg-period",
];

#[rustfmt::skip]
pub const OLDER: &[&str] = &[
    "azure-container-registry-config",
    "bootstrap-checkpoint-path",
    "cadvisor-port",
    "chaos-chance",
    "cloud-config",
    "cni-bin-dir",
    "cni-cache-dir",
    "cni-conf-dir",
    "container-runtime",
    "docker",
    "docker-endpoint",
    "docker-env-metadata-whitelist",
    "docker-root",
    "docker-tls-ca",
    "docker-tls-cert",
    "docker-tls-key",
    "dynamic-config-dir",
    "experimental-allowed-unsafe-sysctls",
    "experimental-bootstrap-kubeconfig",
    "experimental-dockershim-root-directory",
    "image-pull-progress-deadline",
    "iptables-drop-bit",
    "iptables-masquerade-bit",
    "log-backtrace-at",
    "log-dir",
    "log-file",
    "log-file-max-size",
    "log-json-info-buffer-size",
    "master-service-namespace",
    "network-plugin",
    "network-plugin-mtu",
    "non-masquerade-cidr",
    "pod-infra-container-image",
    "seccomp-profile-root",
    "stderrthreshold",
];

/// The release each of these older flags left kubelet in (its minor,
/// 1.x): a kubelet of that release or later exits on it, an earlier one
/// takes it. From the kubernetes/kubernetes pull requests that removed
/// them (#133779 pod-infra-container-image, #130161 cloud-config, #122363
/// the iptables bits, #116015 master-service-namespace, the in-tree
/// credential providers' removal in 1.30, dockershim's in 1.24, klog's
/// flags in 1.26). Flags not here left before 1.24 or are not recorded.
#[rustfmt::skip]
pub const REMOVED_IN: &[(&str, u32)] = &[
    ("add-dir-header", 26),
    ("alsologtostderr", 26),
    ("azure-container-registry-config", 30),
    ("cloud-config", 34),
    ("cni-bin-dir", 24),
    ("cni-cache-dir", 24),
    ("cni-conf-dir", 24),
    ("container-runtime", 27),
    ("docker-endpoint", 24),
    ("dynamic-config-dir", 24),
    ("experimental-dockershim-root-directory", 24),
    ("image-pull-progress-deadline", 24),
    ("iptables-drop-bit", 31),
    ("iptables-masquerade-bit", 31),
    ("log-backtrace-at", 26),
    ("log-dir", 26),
    ("log-file", 26),
    ("log-file-max-size", 26),
    ("logtostderr", 26),
    ("master-service-namespace", 27),
    ("network-plugin", 24),
    ("network-plugin-mtu", 24),
    ("non-masquerade-cidr", 24),
    ("one-output", 26),
    ("pod-infra-container-image", 35),
    ("skip-headers", 26),
    ("skip-log-headers", 26),
    ("stderrthreshold", 26),
];

/// The minor release that removed an older flag, if recorded.
pub fn removed_in(name: &str) -> Option<u32> {
    REMOVED_IN.iter().find(|(n, _)| *n == name).map(|&(_, m)| m)
}

/// What kubelet makes of a long flag name (`_` already read as `-`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// The reference kubelet takes it.
    Current,
    /// Only older kubelets (or other builds) take it.
    Older,
    /// No kubelet we know takes it ([`closest`] finds the name meant).
    Unknown,
}

pub fn known(name: &str) -> Known {
    if one_of(CURRENT, name) {
        return Known::Current;
    }
    if one_of(OLDER, name) || one_of(super::bool_flags::BOOL_FLAGS, name) {
        return Known::Older;
    }
    Known::Unknown
}

/// The known flag closest to an unknown `name`, if one is close: one edit
/// per four characters at most (`node-label`, `nodelabels` and
/// `register-with-taint` find theirs; `foo` finds nothing). A name too
/// much longer or shorter than a flag is never measured against it: the
/// distance is at least the difference (a 128 KiB word was 10^9 steps).
pub fn closest(name: &str) -> Option<&'static str> {
    let mut best: Option<(usize, &'static str)> = None;
    for &candidate in CURRENT.iter().chain(OLDER) {
        let longest = name.len().max(candidate.len());
        if name.len().abs_diff(candidate.len()) * 4 > longest {
            continue;
        }
        let d = edit_distance(name, candidate);
        if d * 4 <= longest && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// Levenshtein distance in bytes (flag names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_sorted_and_apart() {
        for list in [CURRENT, OLDER] {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?}");
        }
        assert!(OLDER.iter().all(|o| !CURRENT.contains(o)));
    }

    #[test]
    fn removed_flags_are_older_ones() {
        assert!(REMOVED_IN.windows(2).all(|w| w[0].0 < w[1].0));
        for (name, minor) in REMOVED_IN {
            assert_eq!(known(name), Known::Older, "{name}");
            assert!(*minor <= super::super::version::REFERENCE_MINOR, "{name}");
        }
        assert_eq!(removed_in("pod-infra-container-image"), Some(35));
        assert_eq!(removed_in("node-labels"), None);
    }

    #[test]
    fn typos_find_the_flag_meant() {
        assert_eq!(known("node-labels"), Known::Current);
        assert_eq!(known("pod-infra-container-image"), Known::Older);
        assert_eq!(known("logtostderr"), Known::Older);
        assert_eq!(known("node-label"), Known::Unknown);
        assert_eq!(closest("node-label"), Some("node-labels"));
        assert_eq!(closest("nodelabels"), Some("node-labels"));
        assert_eq!(closest("register-with-taint"), Some("register-with-taints"));
        assert_eq!(closest("kubecofig"), Some("kubeconfig"));
        assert_eq!(closest("foo"), None);
        assert_eq!(closest("x"), None);
        assert_eq!(closest(&"node-labels".repeat(10_000)), None);
        assert_eq!(edit_distance("", "ab"), 2);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
