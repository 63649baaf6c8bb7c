//! `sync`: the day-2 sync the node runs (`crate::node::sync`), from the CLI.

use std::process::ExitCode;

use crate::cmdline::SyncConfig;
use crate::node::kubelet::Profile;

/// A write error on stdout (`--dry-run > /dev/full`) is the command's
/// error, as for every command; the run's own code otherwise.
pub fn run(c: SyncConfig) -> anyhow::Result<ExitCode> {
    use crate::node::sync::{reconcile::Policy, run};
    use anyhow::Context;
    let opts = run::SyncOptions {
        root: c.root,
        unit: c.unit,
        kubeconfig: c.kubeconfig,
        dry_run: c.dry_run,
        policy: Policy {
            pool_label: c.pool_label,
            allow_pool_label: c.allow_pool_label,
            // `run` reads the record under the root.
            installed: None,
        },
        profile: c.profile.map(Profile::from),
        facts_root: c.facts_root,
        max_wait: std::time::Duration::from_secs(c.max_wait),
        curl: None,
    };
    let out = run::run(&opts);
    run::print_outcome(&out).context("writing to stdout")?;
    Ok(ExitCode::from(out.code as u8))
}
