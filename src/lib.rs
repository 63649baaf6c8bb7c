//! kubelet-labeler: make nodes register with kubelet already labeled and
//! tainted, by wrapping kubelet.service's `ExecStart` from a drop-in.
//!
//! Two rooms (docs/architecture.md): `node` is what runs on the node, std
//! only (the wrapper, the fleet selector and the day-2 sync are built from it
//! alone, without the `cli` feature, so it cannot name a CLI dependency);
//! `cli` is what only the workstation CLI runs (render, iso, explain, the
//! JSON reports), with serde, clap and liblzma. `cmdline` holds only clap
//! types, `main.rs` dispatches, `bin/` holds the two node binaries.

#[cfg(any(feature = "cli", feature = "iso"))]
pub mod cli;
#[cfg(feature = "cli")]
pub mod cmdline;
pub mod node;

/// The integration tests' skip helper, for the unit tests that read
/// ../shared (absent: a recorded skip; under CI, a failure).
#[cfg(test)]
#[path = "../tests/support/skipped.rs"]
mod skipped;
