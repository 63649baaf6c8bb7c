//! What only the workstation CLI runs (never the node binaries): `render`
//! writes drop-ins, MachineConfigs and Ignition; `iso` embeds Ignition in live
//! ISOs; `explain` previews what the wrapper will do on a node tree;
//! `validate` reports on kubelet arguments; `facts_json` prints facts as
//! NFD's JSON. These may use serde, clap and the other CLI dependencies.

#[cfg(feature = "cli")]
pub mod args;
#[cfg(feature = "cli")]
pub mod completions;
#[cfg(feature = "cli")]
pub mod explain;
#[cfg(feature = "cli")]
pub mod facts;
#[cfg(feature = "cli")]
pub mod facts_json;
#[cfg(feature = "iso")]
pub mod iso;
#[cfg(feature = "cli")]
pub mod man;
#[cfg(feature = "cli")]
pub mod output;
#[cfg(feature = "cli")]
pub mod plan;
#[cfg(feature = "cli")]
pub mod render;
#[cfg(any(feature = "cli", feature = "iso"))]
pub mod sha256;
#[cfg(feature = "cli")]
pub mod sync;
#[cfg(feature = "cli")]
pub mod validate;
#[cfg(feature = "cli")]
pub mod yaml;
