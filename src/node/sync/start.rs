//! One start of the node's sync service: runs until what the
//! configuration derives holds still, within the start's deadline.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use super::run::{
    Derived, EXIT_RETRY_LATER, EXIT_USAGE, Outcome, derived_now, parse_node_args, print_outcome,
    run,
};

/// What a start may take past `--max-wait`: a read and a write of
/// [`super::transport::REQUEST_MAX_SECS`] each after its last wait. The
/// unit's TimeoutStartSec= (6 min) holds the default 5 min and this, with
/// time to spare (review 45 r45c F1: a second run, and a first one's GET,
/// Event and PATCH answered slowly, ran a start past it: killed, its
/// journal line lost).
pub const GRACE: Duration = Duration::from_secs(40);

/// When requests stop for a start at `started` that waits `max_wait`
/// (None: past what a clock holds, no deadline).
pub fn deadline(started: Instant, max_wait: Duration) -> Option<Instant> {
    started.checked_add(max_wait)?.checked_add(GRACE)
}

/// The most runs one start of the service makes.
pub const MAX_RUNS: usize = 3;

/// Runs until what the configuration derives holds still, at most
/// MAX_RUNS times, each run printed: systemd's path unit is deaf while
/// this service runs (it re-arms `PathChanged=` only after the service
/// stops, and what changed in between is lost), and a run may wait
/// minutes for an API server. So what a run synced to is derived again at
/// its end, and a different answer is a run of its own. Returns the last
/// run's exit code.
pub fn run_until_settled(
    mut run_once: impl FnMut() -> Outcome,
    mut derive: impl FnMut() -> Option<Derived>,
    mut print: impl FnMut(&Outcome),
    mut in_time: impl FnMut() -> bool,
) -> i32 {
    let mut out = run_once();
    for _ in 1..MAX_RUNS {
        print(&out);
        if out.derived.is_none() {
            return out.code;
        }
        // Review 46 r46c F1: past the start's deadline, no derive (seconds
        // for a large environment file) and no run: systemd starts the
        // service again, and that start tells (not after bad input).
        if !in_time() && out.code != EXIT_USAGE {
            print(&Outcome {
                summary: "kubelet-labeler sync: this start's time is spent before what the \
                          configuration derives was checked again: the service runs again"
                    .into(),
                code: EXIT_RETRY_LATER,
                ..Default::default()
            });
            return EXIT_RETRY_LATER;
        }
        if derive() == out.derived {
            return out.code;
        }
        out = run_once();
    }
    print(&out);
    out.code
}

/// `kubelet-labeler-wrapper sync ...`: a run, one journal line; another
/// when the configuration changed during it (`run_until_settled`).
pub fn node_main(args: &[OsString]) -> i32 {
    let opts = match parse_node_args(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("kubelet-labeler sync: {e}");
            return EXIT_USAGE;
        }
    };
    // The runs share one wait budget and one deadline for requests: the
    // service's start timeout (TimeoutStartSec=6min) holds one run's
    // --max-wait and GRACE, not three.
    let started = Instant::now();
    let deadline = deadline(started, opts.max_wait);
    let run_within_budget = || {
        let mut o = opts.clone();
        o.max_wait = opts.max_wait.saturating_sub(started.elapsed());
        o.deadline = deadline;
        run(&o)
    };
    run_until_settled(
        run_within_budget,
        || derived_now(&opts),
        |o| {
            let _ = print_outcome(o);
        },
        || deadline.is_none_or(|d| Instant::now() < d),
    )
}
