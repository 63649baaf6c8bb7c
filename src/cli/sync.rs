//! `sync`: the day-2 sync the node runs (`crate::node::sync`), from the CLI.

use std::process::ExitCode;

use crate::cmdline::SyncConfig;
use crate::node::kubelet::Profile;

/// A write error on stdout (`--dry-run > /dev/full`) is the command's
/// error, as for every command; a closed pipe keeps the run's own code.
pub fn run(c: SyncConfig) -> anyhow::Result<ExitCode> {
    use crate::node::sync::{reconcile::Policy, run};
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
        // Requests end as the node's service's do.
        deadline: crate::node::sync::start::deadline(
            std::time::Instant::now(),
            std::time::Duration::from_secs(c.max_wait),
        ),
    };
    let out = run::run(&opts);
    // The verdict (1: drift, 75: retry later) stands when a reader stops
    // early (`--dry-run | head`): a closed stdout drops only the data
    // (review 19 r19c F4). Written as `run::print_outcome` writes them
    // (the detail lines on stdout, the summary on stderr, each one journal
    // line), here, so the node's wrapper build stays as it is.
    use crate::node::wrapper::derived::journal_line;
    let detail: String = out
        .detail
        .iter()
        .map(|l| format!("{}\n", journal_line(l)))
        .collect();
    let verdict = crate::cli::output::data_then_verdict(detail, ExitCode::from(out.code as u8));
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{}", journal_line(&out.summary));
    verdict
}
