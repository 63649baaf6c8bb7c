//! The boot-time wrapper and `explain`: find the original `ExecStart`, add
//! labels/taints, exec in place.
