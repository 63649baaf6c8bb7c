//! What render writes and the wrapper reads at boot: file and variable names,
//! and (in `crate::node::rules::compact`) the compact rule form. The boot path
//! depends on this module, never on `render`.

/// The node format: the number of what the node reads from our files as a
/// whole (the names below, the env drop-ins' variables and values, the
/// compact rule form of `crate::node::rules::compact`, the generator's and
/// the sync's units). Renders and wrappers of one format compose on a node
/// (a custom pool's nodes take the role's MachineConfigs and the pool's);
/// of two formats they do not, and `explain`/`render` refuse them. Bump it
/// whenever any of that changes: `cli::render::node_format`'s test records
/// a fingerprint of it with this number, and fails until both change. It
/// is stamped in every rendered file and manifest
/// (`cli::render::RENDERED_BY`: `kubelet-labeler 0.1.0+node.5`), in the
/// wrapper's usage line (`; node format 5.`) and in the compact form's
/// header (`KLR5`).
#[macro_export]
#[doc(hidden)]
macro_rules! node_format {
    () => {
        "5"
    };
}
pub const NODE_FORMAT: &str = crate::node_format!();
/// What follows the node format's number in the wrapper's usage line.
pub const WRAPPER_FORMAT_MARK: &str = "; node format ";

/// Sorts after every other drop-in in byte order (lowercase `zz` beats digits,
/// upper case and `a`..`y`), so its `ExecStart=` is the one systemd keeps.
pub const WRAPPER_DROPIN_NAME: &str = "zz-kubelet-labeler.conf";
/// Carries the labels/taints/rules; the name only has to differ from the above.
pub const ENV_DROPIN_NAME: &str = "90-kubelet-labeler-env.conf";
/// Where the wrappers live on a node (writable on RHCOS, like kubenswrapper),
/// one per architecture: this, a dot, and `uname -m` (`...-wrapper.x86_64`).
/// SELinux labels the path as it labels kubenswrapper beside it, so kubelet
/// keeps the domain it has without us (`kubelet_t` on Fedora CoreOS,
/// `unconfined_service_t` on RHCOS: docs/selinux.md).
pub const WRAPPER_PATH: &str = "/usr/local/bin/kubelet-labeler-wrapper";
/// The systemd generator that writes the wrapper's drop-in at boot and at
/// every daemon-reload, for this node's architecture only when its wrapper
/// can run here (`render::dropins::generator`).
pub const GENERATOR_PATH: &str = "/etc/systemd/system-generators/kubelet-labeler";
/// The variables existing deployments already set.
pub const LABELS_VAR: &str = "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS";
pub const TAINTS_VAR: &str = "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS";
/// Node rules in the compact form of `crate::node::rules::compact` (one line, a
/// charset that needs no escaping inside a quoted `Environment=` value).
pub const RULES_VAR: &str = "KUBELET_LABELER_NODE_RULES";
/// `upstream` or `openshift`: register with the labels NFD's built-in
/// sources of that flavour would write (`crate::node::facts::nfd_labels`).
pub const NFD_LABELS_VAR: &str = "KUBELET_LABELER_NFD_LABELS";
/// The env drop-in of `render machineconfig --role` (worker, master). A
/// custom pool's nodes take the role's MachineConfigs and the pool's, so
/// the role's labels, taints and rules live in a file and variables of
/// their own: the pool's [`ENV_DROPIN_NAME`] adds to them, never replaces
/// them (`wrapper::plan::collect` merges the two, the pool's on top).
/// The key of the label that selects a custom pool's nodes, in the pool's
/// env drop-in: the day-2 sync holds it back (moving a node to another
/// pool reboots it). Not in the sync's unit, which a `--role` render
/// ships too, with the same bytes.
pub const POOL_LABEL_VAR: &str = "KUBELET_LABELER_POOL_LABEL";
pub const ROLE_ENV_DROPIN_NAME: &str = "80-kubelet-labeler-role-env.conf";
/// The role layer's variables, one per variable above: labels, taints,
/// rules, NFD label set.
pub const ROLE_LABELS_VAR: &str = "KUBELET_LABELER_ROLE_LABELS";
pub const ROLE_TAINTS_VAR: &str = "KUBELET_LABELER_ROLE_TAINTS";
pub const ROLE_RULES_VAR: &str = "KUBELET_LABELER_ROLE_NODE_RULES";
pub const ROLE_NFD_LABELS_VAR: &str = "KUBELET_LABELER_ROLE_NFD_LABELS";
/// Each role variable with the variable it stands for in the pool's layer.
pub const ROLE_LAYER: [(&str, &str); 4] = [
    (ROLE_LABELS_VAR, LABELS_VAR),
    (ROLE_TAINTS_VAR, TAINTS_VAR),
    (ROLE_RULES_VAR, RULES_VAR),
    (ROLE_NFD_LABELS_VAR, NFD_LABELS_VAR),
];
/// The head of the usage line the wrapper prints (`wrapper::boot`), which
/// every build of it carries: how render tells our wrapper from any other
/// static program (`render::wrappers::check_ours`). Changing it makes
/// render refuse the wrappers of earlier releases.
pub const WRAPPER_USAGE_HEAD: &str = "usage: kubelet-labeler-wrapper [";
/// The same for the fleet ISO's selector (`fleet`).
pub const SELECTOR_USAGE_HEAD: &str = "usage: kubelet-labeler-select [";
/// The taint a node registers with when rule-derived taints could not be
/// derived at this start (the previous start died before exec'ing kubelet,
/// the rules failed or ran out of budget, an input the node reads was past
/// its bounds), or kubelet's own taints could not be kept beside ours (its
/// config could not be read, or its taints are too many to pass): fail
/// closed. Its value
/// says why (one of the `FENCE_*` reasons below); its effect is
/// `NoSchedule`. A node cannot remove its own taints (NodeRestriction), so
/// a cluster admin lifts it once the cause is fixed
/// (`kubectl taint node NAME kubelet-labeler.io/fenced-`).
pub const FENCE_TAINT_KEY: &str = "kubelet-labeler.io/fenced";
pub const FENCE_TAINT_EFFECT: &str = "NoSchedule";
/// Reasons, as the fence taint's value (label-value syntax).
pub const FENCE_WRAPPER_DIED: &str = "wrapper-died";
pub const FENCE_RULES_FAILED: &str = "rules-failed";
pub const FENCE_FEATURES_UNREADABLE: &str = "features-unreadable";
pub const FENCE_KUBELET_CONFIG_UNREADABLE: &str = "kubelet-config-unreadable";
/// kubelet's own taints (its config's, its `--register-with-taints`) were
/// read, but with ours they pass what one exec may carry: ours and the
/// fence replace them. Told apart from the above: the config reads fine,
/// the fix is fewer taints there (or finding who wrote them).
pub const FENCE_KUBELET_TAINTS_TOO_LONG: &str = "kubelet-taints-too-long";
/// The env drop-in's static taints could not be parsed (a hand edit:
/// render validates them), so what they meant is unknown.
pub const FENCE_TAINTS_UNREADABLE: &str = "taints-unreadable";
/// A node installed from a fleet ISO (`fleet::INSTALLED_POOL_PATH`) whose
/// registration labels select another pool than the one it was installed
/// into (something changed what the rules read between the install and
/// the first kubelet start: a unit writing `features.d`, a module loaded,
/// the OS image), or whose record cannot be read: it would land in that
/// pool without the taints that pool gives only at registration.
pub const FENCE_POOL_CHANGED: &str = "pool-changed";
/// One of our variables (the env drop-ins' labels, taints, rules, NFD
/// label set, pool label, their role layer's, the fault hook) reached
/// kubelet's environment otherwise than our drop-ins set it: an
/// `EnvironmentFile=` of kubelet.service (which systemd puts above
/// `Environment=`), a later drop-in, the unit, `UnsetEnvironment=`
/// (`wrapper::own_env`). Our drop-ins' values go in, fenced.
pub const FENCE_ENVIRONMENT_OVERRIDDEN: &str = "environment-overridden";
