//! kubelet-labeler: make nodes register with kubelet already labeled and
//! tainted, by wrapping kubelet.service's `ExecStart` from a drop-in.
//!
//! Module map: `unit` knows systemd and nothing of kubelet; `kubelet` knows
//! kubelet flags and nothing of systemd; `wrapper` joins them at boot and in
//! `explain`; `render` writes drop-ins, MachineConfigs and Ignition; `iso`
//! embeds Ignition in live ISOs; `facts` reads the node's hardware under
//! NFD's names and `rules` evaluates NodeFeatureRules on them; `contract`
//! names what render writes and the wrapper reads; `sorted` is the map and set
//! the boot path uses instead of std's B-trees; `fleet` picks a machine's pool
//! at install time (the fleet ISO's selector); `sync` keeps a registered
//! Node's labels current with what the wrapper derives (day 2). `cmdline` holds only clap types
//! (the CLI's alone: the wrapper and the selector are built without them).

#[cfg(feature = "cli")]
pub mod cmdline;
pub mod contract;
pub mod facts;
pub mod fleet;
#[cfg(feature = "iso")]
pub mod iso;
pub mod kubelet;
pub mod nodefs;
#[cfg(feature = "cli")]
pub mod render;
pub mod rules;
pub mod sorted;
pub mod sync;
pub mod unit;
pub mod wrapper;

/// The integration tests' skip helper, for the unit tests that read
/// ../shared (absent: a recorded skip; under CI, a failure).
#[cfg(test)]
#[path = "../tests/support/skipped.rs"]
mod skipped;
