//! `man`: a page per command, from the same clap types as `--help`.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::render::contained;
use crate::cmdline::{Cmd, ManConfig};

pub fn run(c: ManConfig) -> Result<ExitCode> {
    use clap::CommandFactory;
    // The directory is made by the gate with the first page, once the
    // chain to it is checked (review 17 r17c F4).
    let mut cmd = Cmd::command();
    cmd.build();
    write_man_pages(&cmd, &c.output_dir)?;
    Ok(ExitCode::SUCCESS)
}

/// One page per visible command, named as `git` names its pages
/// (kubelet-labeler-render-machineconfig.1). clap_mangen writes every
/// section but the examples: it fills after_help as prose, which runs the
/// example lines together; they go out unfilled instead.
fn write_man_pages(cmd: &clap::Command, dir: &std::path::Path) -> Result<()> {
    if cmd.is_hide_set() {
        return Ok(());
    }
    let name = cmd.get_display_name().unwrap_or(cmd.get_name()).to_string();
    let man = clap_mangen::Man::new(cmd.clone()).title(name.to_uppercase());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut page)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut page)?;
    }
    if let Some(after) = cmd.get_after_help() {
        page.extend_from_slice(b".SH EXAMPLES\n.nf\n");
        for line in after
            .to_string()
            .lines()
            .skip_while(|l| l.starts_with("Examples:"))
        {
            let line = line.replace('\\', "\\e").replace('-', "\\-");
            if line.starts_with('.') || line.starts_with('\'') {
                page.extend_from_slice(b"\\&");
            }
            page.extend_from_slice(line.as_bytes());
            page.push(b'\n');
        }
        page.extend_from_slice(b".fi\n");
    }
    if cmd.get_version().is_some() {
        man.render_version_section(&mut page)?;
    }
    contained::write_own(dir, &format!("{name}.1"), &page, 0o644, "man")?;
    for sub in cmd.get_subcommands() {
        write_man_pages(sub, dir)?;
    }
    Ok(())
}
