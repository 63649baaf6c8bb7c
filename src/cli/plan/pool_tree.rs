//! A pool's MachineConfigs laid out as the node tree they write, merged
//! as the MCO merges them (with a stand-in for the cluster's own
//! kubelet.service), and what our drop-ins and the wrapper do there: what
//! `plan` judges of each pool, and `iso fleet` of each pool it installs
//! machines into (one check, one code).

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::node::contract::WRAPPER_DROPIN_NAME;
use crate::node::wrapper::{derived, own_env};

/// The laid-out tree of one pool (removed when dropped).
pub struct PoolTree {
    _scratch: tempfile::TempDir,
    pub root: PathBuf,
    pub layout: crate::cli::render::layout::Layout,
    pub svc: crate::node::unit::LoadedService,
    /// kubelet.service's environment from its drop-ins (ours left out),
    /// with each of our variables as our env drop-ins set it, as the
    /// wrapper and the sync read it (`own_env::check`).
    pub env: Vec<(OsString, OsString)>,
    /// Our variables set otherwise than our drop-ins set them (an
    /// `EnvironmentFile=` of kubelet's): the node registers fenced
    /// (`environment-overridden`) and its sync changes no label.
    pub overridden: Vec<own_env::Overridden>,
}

/// Lay out `configs` (a pool's MachineConfigs) in a scratch tree and load
/// kubelet.service there as the node does.
pub fn lay_out(configs: Vec<Value>) -> Result<PoolTree> {
    // kubelet.service itself is the cluster's (the MCO's templates, in no
    // render of ours): a stand-in, the base the render changes, reads what
    // it reads.
    lay_out_with_stand_in(super::cluster_unit::with_stand_in(configs))
}

/// [`lay_out`] of configs given the stand-in already
/// (`cluster_unit::with_stand_in`).
pub fn lay_out_with_stand_in(configs: Vec<Value>) -> Result<PoolTree> {
    let scratch = tempfile::tempdir().context("creating a scratch node tree")?;
    let root = scratch.path().join("root");
    let layout = crate::cli::render::layout::Layout::merge(configs)?;
    layout.write(&root).context("laying out")?;
    let paths = crate::node::unit::UnitPaths::system(&root);
    let load = crate::node::unit::LoadOptions {
        skip_dropin: Some(WRAPPER_DROPIN_NAME.into()),
        ..Default::default()
    };
    let svc = crate::node::unit::load_service(&paths, "kubelet.service", &load)
        .context("loading kubelet.service's drop-ins")?;
    let env = crate::node::unit::offline_environment(&svc, &root, &[])
        .context("the drop-ins' environment")?;
    let own = own_env::check(&svc, &root, &env);
    Ok(PoolTree {
        _scratch: scratch,
        root,
        layout,
        svc,
        env: own.env,
        overridden: own.overridden,
    })
}

impl PoolTree {
    /// Whether our drop-ins give the pool's nodes labels, taints or rules.
    pub fn ours(&self) -> bool {
        [
            crate::node::contract::LABELS_VAR,
            crate::node::contract::TAINTS_VAR,
        ]
        .iter()
        .any(|v| self.env.iter().any(|(k, _)| k == v))
            || derived::sources_in_env(&self.env)
    }

    /// Whether the MachineConfigs write anything at the wrapper's paths,
    /// the generator's or the wrapper's drop-in (in any form: a file, a
    /// link, a directory, a unit's drop-in).
    pub fn ships_wrapper(&self) -> bool {
        use crate::node::contract::{GENERATOR_PATH, WRAPPER_PATH};
        self.layout.identities().keys().any(|p| {
            let p = crate::cli::render::merge_inputs::node_path(p);
            p == GENERATOR_PATH
                || p.starts_with(WRAPPER_PATH)
                || p.rsplit('/').next() == Some(WRAPPER_DROPIN_NAME)
        })
    }

    /// Why the pool's nodes register with nothing of ours though our
    /// drop-ins are there, as `explain` judges the tree: the generator
    /// missing, not executable or not ours, the wrapper not an executable
    /// program of its architecture, our drop-in hidden or taken back by a
    /// later one, or a command the wrapper cannot add to. None when ours
    /// run (or when there is nothing of ours).
    pub fn wrapper_off(&self) -> Option<String> {
        self.ours()
            .then(|| {
                crate::cli::explain::reach::wrapper_off(&self.root)
                    .or_else(|| super::formats::command_off(&self.svc, &self.env, &self.root))
            })
            .flatten()
    }
}
