//! `validate`: its clap types to [`super::validate_kubelet_args`], and the
//! report on stdout.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::output::{say, terminal_safe};
use crate::cmdline::ValidateConfig;
use crate::node::kubelet::Profile;

pub fn run(c: ValidateConfig) -> Result<ExitCode> {
    use crate::cli::validate::validate_kubelet_args;
    if c.args.is_empty() {
        say!(
            "Error: no kubelet arguments to check; give them after '--': \
             kubelet-labeler validate [--profile upstream|openshift] [--json] -- KUBELET_ARGS..."
        );
        return Ok(ExitCode::from(2));
    }
    let report = validate_kubelet_args(&c.args, Profile::from(c.profile));
    let text = if c.json {
        report.to_json() + "\n"
    } else {
        // It quotes the arguments, which may be pasted from a hostile unit.
        terminal_safe(&report.to_human())
    };
    // Kept when a reader closes stdout early (`| head`).
    let verdict = ExitCode::from(if report.valid { 0 } else { 1 });
    crate::cli::output::data_then_verdict(text, verdict)
}
