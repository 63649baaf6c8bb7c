//! What render writes and the wrapper reads at boot: file and variable names,
//! and (in `crate::rules::compact`) the compact rule form. The boot path
//! depends on this module, never on `render`.

/// Sorts after every other drop-in in byte order (lowercase `zz` beats digits,
/// upper case and `a`..`y`), so its `ExecStart=` is the one systemd keeps.
pub const WRAPPER_DROPIN_NAME: &str = "zz-kubelet-labeler.conf";
/// Carries the labels/taints/rules; the name only has to differ from the above.
pub const ENV_DROPIN_NAME: &str = "90-kubelet-labeler-env.conf";
/// Where the wrappers live on a node (writable on RHCOS, like kubenswrapper),
/// one per architecture: this, a dot, and `uname -m` (`...-wrapper.x86_64`).
/// SELinux labels `/usr/local/s?bin/kubelet.*` `kubelet_exec_t`, as it labels
/// kubenswrapper (container-selinux's container.fc), so kubelet keeps the
/// `kubelet_t` domain (docs/selinux.md).
pub const WRAPPER_PATH: &str = "/usr/local/bin/kubelet-labeler-wrapper";
/// The systemd generator that writes the wrapper's drop-in at boot and at
/// every daemon-reload, for this node's architecture only when its wrapper
/// can run here (`render::dropins::generator`).
pub const GENERATOR_PATH: &str = "/etc/systemd/system-generators/kubelet-labeler";
/// The variables existing deployments already set.
pub const LABELS_VAR: &str = "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS";
pub const TAINTS_VAR: &str = "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS";
/// Node rules in the compact form of `crate::rules::compact` (one line, a
/// charset that needs no escaping inside a quoted `Environment=` value).
pub const RULES_VAR: &str = "KUBELET_LABELER_NODE_RULES";
/// `upstream` or `openshift`: register with the labels NFD's built-in
/// sources of that flavour would write (`crate::facts::nfd_labels`).
pub const NFD_LABELS_VAR: &str = "KUBELET_LABELER_NFD_LABELS";
/// The head of the usage line the wrapper prints (`wrapper::boot`), which
/// every build of it carries: how render tells our wrapper from any other
/// static program (`render::wrappers::check_ours`). Changing it makes
/// render refuse the wrappers of earlier releases.
pub const WRAPPER_USAGE_HEAD: &str = "usage: kubelet-labeler-wrapper [";
/// The same for the fleet ISO's selector (`fleet`).
pub const SELECTOR_USAGE_HEAD: &str = "usage: kubelet-labeler-select [";
