//! `completions`: clap_complete's scripts, with what they get wrong for
//! this program fixed.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::output::to_stdout;
use crate::cmdline::{Cmd, CompletionsConfig};

pub fn run(c: CompletionsConfig) -> Result<ExitCode> {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(c.shell, &mut Cmd::command(), BIN_NAME, &mut script);
    match c.shell {
        clap_complete::Shell::Bash => {
            script = bash_subcommand_labels_fixed(&String::from_utf8_lossy(&script)).into_bytes();
        }
        clap_complete::Shell::Fish => {
            let mut cmd = Cmd::command();
            cmd.build();
            fish_positional_values(&cmd, &[], &mut script);
        }
        _ => {}
    }
    to_stdout(script)?;
    Ok(ExitCode::SUCCESS)
}

const BIN_NAME: &str = "kubelet-labeler";

/// clap_complete's bash script (4.6.11) spells a subcommand's state two
/// ways when the program's name has a hyphen: the loop that reads the words
/// sets `kubelet__labeler__subcmd__render`, the `case` that answers matches
/// `kubelet__subcmd__labeler__subcmd__render`, so nothing completes past the
/// first word. The answering labels are respelled the way the loop sets them.
fn bash_subcommand_labels_fixed(script: &str) -> String {
    const SEP: &str = "__subcmd__";
    let set = format!("{}{SEP}", BIN_NAME.replace('-', "__"));
    let matched = format!("{}{SEP}", BIN_NAME.replace('-', SEP));
    script
        .lines()
        .map(|l| {
            let label = l.trim_start();
            match label.strip_prefix(&matched) {
                Some(rest) if rest.ends_with(')') && !rest.contains(char::is_whitespace) => {
                    format!("{}{set}{rest}", &l[..l.len() - label.len()])
                }
                _ => l.to_string(),
            }
        })
        .map(|l| l + "\n")
        .collect()
}

/// clap_complete's fish script offers files for every positional argument;
/// one with a fixed set of values (`completions SHELL`) gets those instead.
fn fish_positional_values(cmd: &clap::Command, path: &[&str], script: &mut Vec<u8>) {
    use std::fmt::Write;
    let values: Vec<String> = cmd
        .get_positionals()
        .flat_map(|a| a.get_possible_values())
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    if let (Some(first), false) = (path.first(), values.is_empty()) {
        let fn_name = format!("__fish_{}", BIN_NAME.replace('-', "_"));
        let mut cond = format!("{fn_name}_using_subcommand {first}");
        for p in &path[1..] {
            let _ = write!(cond, "; and __fish_seen_subcommand_from {p}");
        }
        let line = format!(
            "complete -c {BIN_NAME} -n \"{cond}\" -f -a \"{}\"\n",
            values.join(" ")
        );
        script.extend_from_slice(line.as_bytes());
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let mut p = path.to_vec();
        p.push(sub.get_name());
        fish_positional_values(sub, &p, script);
    }
}
