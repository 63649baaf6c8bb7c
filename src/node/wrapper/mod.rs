//! The boot-time wrapper and `explain`: find the original `ExecStart`, add
//! labels/taints, exec in place. `plan` is shared by both, so what `explain`
//! shows offline is what the wrapper does at boot.

pub mod boot;
pub mod bump;
pub mod crash;
pub mod derived;
pub mod exec;
pub mod explain;
mod explain_tree;
pub mod guard;
pub mod plan;
