//! The two drop-ins every target gets: the wrapper's `ExecStart` swap and the
//! environment that carries the labels and taints.

use crate::kubelet::Additions;

/// Sorts after every other drop-in in byte order (lowercase `zz` beats digits,
/// upper case and `a`..`y`), so its `ExecStart=` is the one systemd keeps.
pub const WRAPPER_DROPIN_NAME: &str = "zz-kubelet-labeler.conf";
/// Carries the labels/taints; the name only has to differ from the above.
pub const ENV_DROPIN_NAME: &str = "90-kubelet-labeler-env.conf";
/// Where the wrapper lives on a node (writable on RHCOS, like kubenswrapper).
pub const WRAPPER_PATH: &str = "/usr/local/bin/kubelet-labeler-wrapper";
/// The variables existing deployments already set.
pub const LABELS_VAR: &str = "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS";
pub const TAINTS_VAR: &str = "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS";

/// The drop-in that makes systemd run the wrapper instead of the original
/// command. `restorecon` gives the wrapper its SELinux label before it runs,
/// as MCO does for kubenswrapper; `-` skips it where it does not exist.
pub fn wrapper_dropin() -> String {
    format!(
        "# kubelet-labeler: run kubelet through the wrapper, which finds the original\n\
         # ExecStart, adds the labels and taints from {LABELS_VAR}\n\
         # and {TAINTS_VAR}, and execs it in place.\n\
         [Service]\n\
         SyslogIdentifier=kubelet\n\
         ExecStartPre=-/usr/sbin/restorecon {WRAPPER_PATH}\n\
         ExecStart=\n\
         ExecStart={WRAPPER_PATH} --unit %n\n\
         ExecStopPost=-{WRAPPER_PATH} --unit %n --stop-post\n"
    )
}

/// The drop-in that carries the labels and taints. Values are validated
/// before this is called, so they hold no quote, space, `%` or `$`.
pub fn env_dropin(additions: &Additions) -> String {
    let labels: Vec<String> = additions
        .labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let taints: Vec<String> = additions.taints.iter().map(|t| t.to_string()).collect();
    let mut out = String::from(
        "# kubelet-labeler: labels and taints this node registers with. kubelet\n\
         # applies them only when it creates the Node object (first registration).\n\
         [Service]\n",
    );
    if !labels.is_empty() {
        out += &format!("Environment=\"{LABELS_VAR}={}\"\n", labels.join(","));
    }
    if !taints.is_empty() {
        out += &format!("Environment=\"{TAINTS_VAR}={}\"\n", taints.join(","));
    }
    out
}
