//! Day-2 sync: keep a registered Node's labels current with what the
//! wrapper derives (static labels, node rules on this node's facts, the NFD
//! label set), with the node's own identity (kubelet's kubeconfig and
//! client certificate). std only: it ships in the wrapper binary as its
//! `sync` mode and reaches the API server through the host's curl.
//!
//! `reconcile` decides (pure; `taints` the taint drift, `pool_guard` what
//! would move a fleet node out of its installed pool), `owned` writes and reads the list of keys it
//! owns; `run` reads, writes and retries, `start` runs it within a service's start;
//! `identity` loads kubelet's kubeconfig and certificate (`kubeconfig`,
//! `cert`); `json` reads the API server's answers; `transport` drives curl.

pub mod cert;
mod event;
pub mod identity;
pub mod json;
pub mod kubeconfig;
pub mod owned;
pub mod pool_guard;
pub mod reconcile;
pub mod run;
pub mod start;
pub mod state;
mod taints;
pub mod transport;
