//! kubelet flags: `--node-labels` and `--register-with-taints` parsed and
//! validated exactly as kubelet does, and merged into a kubelet argv.
//! Knows nothing of systemd.

use std::ffi::OsString;

pub mod arg_limit;
mod bool_flags;
pub mod config;
pub mod flags;
pub mod known_flags;
pub mod labels;
pub mod taints;
pub mod version;

pub use flags::{NodeFs, apply};
pub use labels::{parse_node_labels, validate_labels};
pub use taints::parse_taints;

/// Which kubelet's self-label rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    #[default]
    Upstream,
    /// Also allows node-role.kubernetes.io/{control-plane,master,worker,etcd,arbiter}.
    OpenShift,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: TaintEffect,
}

/// Labels and taints to add, from any source (environment drop-in today,
/// hardware rules later). Order matters: a later label with the same key wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Additions {
    pub labels: Vec<(String, String)>,
    pub taints: Vec<Taint>,
}

/// The argv to exec and what changed.
#[derive(Debug, Clone, Default)]
pub struct ArgvPlan {
    pub argv: Vec<OsString>,
    pub added_labels: Vec<(String, String)>,
    /// The taints the single merged flag carries (existing + ours).
    pub taints: Vec<Taint>,
    /// Ours among them (the fence too, when used): the last of `taints`.
    pub added_taints: Vec<Taint>,
    pub warnings: Vec<String>,
    /// Why the taints kubelet already registers with were replaced by ours
    /// and the fence, when `apply` was given a fence and used it.
    pub fenced: Option<(Replaced, String)>,
}

/// Why kubelet's own taints were replaced by ours and the fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaced {
    /// They could not be read.
    Unreadable,
    /// With ours they pass what one exec may carry.
    TooLong,
}

impl TaintEffect {
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

/// `key=value:Effect`, the form every kubelet since 1.x accepts (an empty
/// value gives `key=:Effect`).
impl std::fmt::Display for Taint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}:{}", self.key, self.value, self.effect.as_str())
    }
}

/// `Taint` from parts, for tests.
#[cfg(test)]
pub fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
    Taint {
        key: key.into(),
        value: value.into(),
        effect,
    }
}
