//! Rendering: drop-ins for a filesystem tree, MachineConfigs, the custom
//! MachineConfigPool, Ignition configs.

pub mod additions;
pub mod dropins;
pub mod tree;
