//! The MCO's own node disruption policy entries: the operator merges the
//! cluster's `MachineConfiguration` over them (an entry of the cluster's
//! for the same path replaces the default one), so the cluster's own files
//! (pull secrets, registries, CA bundles) change without a reboot even where
//! no one wrote a policy. Facts read from openshift/machine-config-operator's
//! release branches (`pkg/apihelpers`, the defaults the operator merges the
//! user's entries over); they differ by release.

/// One default entry: the path, its actions (as `kube::policy_files` writes
/// them), and the first OpenShift release that has it, as the kubelet's
/// minor version of that release (OpenShift 4.N runs Kubernetes 1.N+13).
struct Entry {
    path: &'static str,
    actions: &'static [&'static str],
    since_kubelet_minor: u32,
}

/// Node disruption policies came with OpenShift 4.17 (Kubernetes 1.30).
pub const FIRST_KUBELET_MINOR: u32 = 30;

const CRIO_RELOAD: &[&str] = &["Reload crio.service"];
const DEFAULTS: &[Entry] = &[
    Entry {
        path: "/var/lib/kubelet/config.json",
        actions: &["None"],
        since_kubelet_minor: 30,
    },
    Entry {
        path: "/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
        actions: CRIO_RELOAD,
        since_kubelet_minor: 30,
    },
    Entry {
        path: "/etc/containers/policy.json",
        actions: CRIO_RELOAD,
        since_kubelet_minor: 30,
    },
    // The MCO decides by the change: crio reloads, and the node drains
    // when the change is not one it judges safe.
    Entry {
        path: "/etc/containers/registries.conf",
        actions: &["Special"],
        since_kubelet_minor: 30,
    },
    Entry {
        path: "/etc/containers/registries.d",
        actions: CRIO_RELOAD,
        since_kubelet_minor: 30,
    },
    Entry {
        path: "/etc/nmstate/openshift",
        actions: &["None"],
        since_kubelet_minor: 30,
    },
    Entry {
        path: "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
        actions: &[
            "Restart coreos-update-ca-trust.service",
            "Restart crio.service",
        ],
        since_kubelet_minor: 30,
    },
    // OpenShift 4.18.
    Entry {
        path: "/etc/crio/policies",
        actions: CRIO_RELOAD,
        since_kubelet_minor: 31,
    },
    // OpenShift 4.22.
    Entry {
        path: "/etc/kubernetes/credential-providers",
        actions: &["Restart kubelet.service"],
        since_kubelet_minor: 35,
    },
    Entry {
        path: "/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf",
        actions: &["DaemonReload", "Restart kubelet.service"],
        since_kubelet_minor: 35,
    },
    Entry {
        path: "/etc/iri-registry",
        actions: &["Restart iri-registry.service"],
        since_kubelet_minor: 35,
    },
    Entry {
        path: "/usr/local/bin/load-registry-image.sh",
        actions: &["Restart iri-registry.service"],
        since_kubelet_minor: 35,
    },
    Entry {
        path: "/etc/pki/ca-trust/source/anchors/iri-root-ca.crt",
        actions: &["Restart coreos-update-ca-trust.service"],
        since_kubelet_minor: 35,
    },
];

/// The policy a node's daemon applies: the MCO's defaults of the node's
/// release (`kubelet_minor`; unknown: only those of every release since
/// 4.17, so a newer default never hides a reboot), with `over` (the
/// cluster's and the render's entries) replacing them by path. And the
/// paths whose entry is the MCO's default.
pub fn with_defaults(
    kubelet_minor: Option<u32>,
    over: &[(String, Vec<String>)],
) -> (Vec<(String, Vec<String>)>, Vec<String>) {
    let minor = kubelet_minor.unwrap_or(FIRST_KUBELET_MINOR);
    let mut merged: Vec<(String, Vec<String>)> = DEFAULTS
        .iter()
        .filter(|d| d.since_kubelet_minor <= minor)
        .map(|d| {
            (
                d.path.to_string(),
                d.actions.iter().map(|a| a.to_string()).collect(),
            )
        })
        .collect();
    let defaults: Vec<String> = merged
        .iter()
        .map(|(p, _)| p.clone())
        .filter(|p| !over.iter().any(|(q, _)| q == p))
        .collect();
    super::kube::merge_policy(&mut merged, over.to_vec());
    (merged, defaults)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::plan::kube::{Disruption, file_disruption};

    #[test]
    fn defaults_by_release() {
        let on = |minor: Option<u32>, path: &str| {
            let (policy, _) = with_defaults(minor, &[]);
            file_disruption(&policy, path).0
        };
        // The pull secret: nothing; a registries.d file: crio reloads.
        assert_eq!(
            on(Some(30), "/var/lib/kubelet/config.json"),
            Disruption::Nothing
        );
        assert_eq!(
            on(Some(33), "/etc/containers/registries.d/quay.yaml"),
            Disruption::Reload
        );
        // /etc/crio/policies from 4.18 on.
        assert_eq!(
            on(Some(30), "/etc/crio/policies/a.json"),
            Disruption::DrainAndReboot
        );
        assert_eq!(
            on(Some(31), "/etc/crio/policies/a.json"),
            Disruption::Reload
        );
        // Credential providers from 4.22 on; unknown release: the oldest.
        let cp = "/etc/kubernetes/credential-providers/ecr.yaml";
        assert_eq!(on(Some(34), cp), Disruption::DrainAndReboot);
        assert_eq!(on(Some(35), cp), Disruption::Restart);
        assert_eq!(on(None, cp), Disruption::DrainAndReboot);
    }

    #[test]
    fn the_clusters_entry_replaces_the_default() {
        let over = vec![(
            "/etc/containers/policy.json".to_string(),
            vec!["Reboot".to_string()],
        )];
        let (policy, defaults) = with_defaults(Some(33), &over);
        assert_eq!(
            file_disruption(&policy, "/etc/containers/policy.json").0,
            Disruption::DrainAndReboot
        );
        assert!(!defaults.iter().any(|p| p == "/etc/containers/policy.json"));
        assert!(defaults.iter().any(|p| p == "/var/lib/kubelet/config.json"));
    }
}
