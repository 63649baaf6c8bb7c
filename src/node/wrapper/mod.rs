//! The boot-time wrapper: find the original `ExecStart`, add labels/taints,
//! exec in place. `plan` is shared with the CLI's `explain`, so what
//! `explain` shows offline is what the wrapper does at boot.

pub mod boot;
pub mod bump;
pub mod crash;
pub mod derived;
pub mod exec;
pub mod fail_closed;
pub mod fence;
pub mod guard;
pub mod installed;
pub mod own_env;
pub mod plan;
pub mod pool_change;
pub mod state_dir;
