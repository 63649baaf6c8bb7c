//! Rendering: drop-ins for a filesystem tree, MachineConfigs, the custom
//! MachineConfigPool, Ignition configs.

pub mod additions;
pub mod arch;
pub mod dropins;
pub mod encoding;
pub mod gitops_dir;
pub mod input;
pub mod layout;
pub mod machineconfig;
pub mod node_rules;
pub mod pointer;
pub mod remove;
pub mod sync_units;
pub mod tree;
pub mod wrappers;

pub use pointer::pointer_ignition;
