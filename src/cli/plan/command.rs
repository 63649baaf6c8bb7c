//! `plan`: its clap types to [`super::PlanOptions`], the report on stdout,
//! and the exit code `--fail-on` asks for.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::args::Usage;
use crate::cli::output::terminal_safe;
use crate::cmdline::{FailOnArg, PlanConfig, PlanFormatArg};
use crate::node::kubelet::Profile;

pub fn run(c: PlanConfig) -> Result<ExitCode> {
    use crate::cli::plan;
    let p = plan::plan(&plan::PlanOptions {
        from: c.from,
        to: c.to,
        fleet: c.fleet,
        prune: c.prune,
        profile: Profile::from(c.profile),
        wrappers: c.wrapper,
        own_unit_prefixes: c.own_unit_prefix,
    })
    .map_err(|e| Usage(format!("{e:#}")))?;
    let format = match c.format {
        PlanFormatArg::Text => plan::Format::Text,
        PlanFormatArg::Json => plan::Format::Json,
        PlanFormatArg::Markdown => plan::Format::Markdown,
    };
    // Node names and labels come from a fleet export: no escape code of
    // theirs reaches a terminal (JSON escapes its own, and stays JSON).
    let text = plan::render(&p, format);
    let text = if matches!(format, plan::Format::Json) {
        text
    } else {
        terminal_safe(&text)
    };
    let fails = |f: &FailOnArg| match f {
        FailOnArg::Reboot => p.reboot > 0,
        FailOnArg::Lockout => p.lockout > 0,
        FailOnArg::Taint => p.taint_changes > 0,
        FailOnArg::Change => p.changed > 0,
    };
    let failed = if c.fail_on.is_empty() {
        p.changed > 0
    } else {
        c.fail_on.iter().any(fails)
    };
    // The MCO refuses a pool's change: a refusal, as bad input is. The
    // verdict is kept when a reader closes stdout early (`| head`).
    let verdict = if p.refused > 0 {
        ExitCode::from(2)
    } else if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    };
    crate::cli::output::data_then_verdict(text, verdict)
}
