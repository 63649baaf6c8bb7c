//! kubelet-labeler: make nodes register with kubelet already labeled and
//! tainted, by wrapping kubelet.service's `ExecStart` from a drop-in.
//!
//! Module map: `unit` knows systemd and nothing of kubelet; `kubelet` knows
//! kubelet flags and nothing of systemd; `wrapper` joins them at boot and in
//! `explain`; `render` writes drop-ins, MachineConfigs and Ignition; `iso`
//! embeds Ignition in live ISOs. `cmdline` holds only clap types.

pub mod cmdline;
#[cfg(feature = "iso")]
pub mod iso;
pub mod kubelet;
pub mod render;
pub mod unit;
pub mod wrapper;
