//! `facts`: what the wrapper reads on a node tree, as it reads it, as NFD's
//! JSON, or as the labels NFD would give.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::args::existing_dir;
use crate::cli::output::{say, terminal_safe, to_stdout};
use crate::cmdline::FactsConfig;
use crate::node::facts::NfdFlavour;

pub fn run(c: FactsConfig) -> Result<ExitCode> {
    use crate::node::facts;
    existing_dir("--root", &c.root)?;
    if c.record_cpuid {
        let Some(text) = facts::record_cpuid() else {
            say!("Error: --record-cpuid: this CPU has no CPUID instruction (it is x86-64's)");
            return Ok(ExitCode::from(1));
        };
        to_stdout(text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let nodename = c.hostname_override.map(|h| h.trim().to_lowercase());
    let f = facts::read(&facts::FactsOptions {
        root: &c.root,
        nodename: nodename.as_deref(),
        only: None,
        attributes: None,
    });
    for (feature, why) in &f.incomplete {
        say!(
            "warning: {feature} not read (node rules on it fail at boot): {}",
            terminal_safe(why)
        );
    }
    if let Some(flavour) = c.nfd_labels {
        let labels = facts::nfd_labels(&f, NfdFlavour::from(flavour));
        to_stdout(terminal_safe(
            &labels
                .iter()
                .map(|(k, v)| format!("{k}={v}\n"))
                .collect::<String>(),
        ))?;
    } else if c.json {
        to_stdout(serde_json::to_string_pretty(&crate::cli::facts_json::nfd_json(&f))? + "\n")?;
    } else {
        // features.d is written by whoever may write it (a pod).
        to_stdout(terminal_safe(&crate::cli::facts_json::human(&f)))?;
    }
    Ok(ExitCode::SUCCESS)
}
