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

/// The annotation naming the version that rendered a manifest
/// ([`RENDERED_BY`]), so a PR's diff shows a re-render by another
/// release. The MCO leaves source annotations out of the rendered config,
/// so it changes no pool's rendered config by itself.
pub const RENDERED_BY_ANNOTATION: &str = "kubelet-labeler/rendered-by";

/// The start of the env drop-in's comment line recording a rule left to
/// the cluster's NFD; the rule follows as [`crate::node::rules::shown_name`] shows it.
pub const LEFT_TO_NFD_MARK: &str = "# Left to the cluster's NFD, not evaluated here: ";

pub mod additions;
pub mod api_objects;
pub mod applied;
pub mod arch;
pub mod checked_dir;
pub mod command;
pub mod compose;
pub mod contained;
pub mod dataurl;
pub mod dir_chain;
pub mod dropins;
pub mod encoding;
pub mod extensions;
pub mod generator;
pub mod gitops_dir;
pub(crate) mod ignition_keys;
mod ignition_rules;
pub mod input;
pub mod layout;
pub mod leave_to_nfd;
pub mod machineconfig;
pub mod merge_inputs;
pub mod merge_order;
pub mod node_format;
pub mod node_rules;
pub mod output_file;
pub mod pointer;
pub mod remove;
mod rule_objects;
mod rule_yaml;
mod storage;
pub mod summary;
pub mod sync_units;
pub mod tree;
mod unpack;
pub mod value_forms;
pub mod wrappers;
mod yaml_edit;

pub use pointer::pointer_ignition;
pub use unpack::check_tree_shape;
