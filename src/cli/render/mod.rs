//! Rendering: drop-ins for a filesystem tree, MachineConfigs, the custom
//! MachineConfigPool, Ignition configs.

/// The version that rendered a file or manifest, in its first comment line
/// and in [`machineconfig::RENDERED_BY`]: a GitOps diff says which release
/// re-rendered it. The crate's version and, as semver build metadata, the
/// node format (`crate::node::contract::NODE_FORMAT`), which tells two
/// builds of one version apart when what the node reads differs.
pub const RENDERED_BY: &str = concat!(
    "kubelet-labeler ",
    env!("CARGO_PKG_VERSION"),
    "+node.",
    crate::node_format!()
);

pub mod additions;
pub mod arch;
pub mod command;
pub mod compose;
pub mod contained;
pub mod dropins;
pub mod encoding;
pub mod gitops_dir;
pub mod input;
pub mod layout;
pub mod leave_to_nfd;
pub mod machineconfig;
pub mod node_format;
pub mod node_rules;
pub mod output_file;
pub mod pointer;
pub mod remove;
mod rule_objects;
mod rule_yaml;
pub mod summary;
pub mod sync_units;
pub mod tree;
mod unpack;
pub mod value_forms;
pub mod wrappers;
mod yaml_edit;

pub use pointer::pointer_ignition;
