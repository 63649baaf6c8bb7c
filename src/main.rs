//! Dispatch only: each subcommand turns its clap struct into the plain
//! options of a logic module and calls it.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;

use kubelet_labeler::cmdline::*;

fn main() -> ExitCode {
    let result = match Cmd::parse() {
        Cmd::Explain(c) => cmd_explain(c),
        Cmd::Validate(c) => cmd_validate(c),
        Cmd::Render(RenderCmd::Dropins(c)) => cmd_render_dropins(c),
        Cmd::Render(RenderCmd::Machineconfig(c)) => cmd_render_machineconfig(c),
        Cmd::Render(RenderCmd::Ignition(c)) => cmd_render_ignition(c),
        Cmd::Iso(IsoCmd::Embed(c)) => cmd_iso_embed(c),
        Cmd::Iso(IsoCmd::Show(c)) => cmd_iso_show(c),
        Cmd::Iso(IsoCmd::Remove(c)) => cmd_iso_remove(c),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn profile(p: ProfileArg) -> kubelet_labeler::kubelet::Profile {
    match p {
        ProfileArg::Upstream => kubelet_labeler::kubelet::Profile::Upstream,
        ProfileArg::Openshift => kubelet_labeler::kubelet::Profile::OpenShift,
    }
}

// ---- explain (wrapper module) ----

fn cmd_explain(c: ExplainConfig) -> Result<ExitCode> {
    use kubelet_labeler::wrapper::explain;
    let manager_env = c
        .set_env
        .iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .with_context(|| format!("--set-env {kv:?} is not KEY=VALUE"))
        })
        .collect::<Result<Vec<_>>>()?;
    let e = explain::explain(&explain::ExplainOptions {
        root: c.root,
        unit: c.unit,
        profile: profile(c.profile),
        manager_env,
        unit_path: c.unit_path,
    })?;
    if c.json {
        println!("{}", serde_json::to_string_pretty(&e)?);
    } else {
        print!("{}", explain::render_human(&e));
    }
    Ok(ExitCode::SUCCESS)
}

// ---- validate (kubelet module) ----

fn cmd_validate(c: ValidateConfig) -> Result<ExitCode> {
    use kubelet_labeler::kubelet::validate::validate_kubelet_args;
    if c.args.is_empty() {
        eprintln!(
            "Error: no kubelet arguments; usage: kubelet-labeler validate [--profile P] -- ARGS..."
        );
        return Ok(ExitCode::from(2));
    }
    let report = validate_kubelet_args(&c.args, profile(c.profile));
    if c.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_human());
    }
    Ok(ExitCode::from(if report.valid { 0 } else { 1 }))
}

// ---- render (render module) ----

fn cmd_render_dropins(c: RenderDropinsConfig) -> Result<ExitCode> {
    use kubelet_labeler::render::{additions, tree};
    let prof = profile(c.additions.profile.unwrap_or(ProfileArg::Upstream));
    let additions = additions::from_cli(&c.additions.labels, &c.additions.taints, prof)?;
    let wrapper = match c.wrapper {
        Some(w) => w,
        None => beside_this_program("kubelet-labeler-wrapper")?,
    };
    let written = tree::render_tree(&tree::TreeOptions {
        root: c.root,
        unit: c.unit,
        additions,
        profile: prof,
        wrapper,
        force: c.force,
    })?;
    for p in written {
        println!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// A file shipped next to this binary.
fn beside_this_program(name: &str) -> Result<std::path::PathBuf> {
    let exe = std::env::current_exe().context("finding this program")?;
    Ok(exe.with_file_name(name))
}

fn cmd_render_machineconfig(c: RenderMachineConfigConfig) -> Result<ExitCode> {
    let _ = c;
    anyhow::bail!("render machineconfig: not implemented yet")
}

fn cmd_render_ignition(c: RenderIgnitionConfig) -> Result<ExitCode> {
    let _ = c;
    anyhow::bail!("render ignition: not implemented yet")
}

// ---- iso (iso module) ----

fn cmd_iso_embed(c: IsoEmbedConfig) -> Result<ExitCode> {
    let _ = c;
    anyhow::bail!("iso embed: not implemented yet")
}

fn cmd_iso_show(c: IsoShowConfig) -> Result<ExitCode> {
    let _ = c;
    anyhow::bail!("iso show: not implemented yet")
}

fn cmd_iso_remove(c: IsoRemoveConfig) -> Result<ExitCode> {
    let _ = c;
    anyhow::bail!("iso remove: not implemented yet")
}
