//! `render dropins|machineconfig|ignition`: their clap types to the
//! render modules' options, and what each says it wrote.

use std::process::ExitCode;

use anyhow::{Context, Result};

use super::arch::Arch;
use super::{additions, gitops_dir, input, machineconfig, output_file, pointer, tree, wrappers};
use crate::cli::args::{Usage, existing_dir, stdin_at_most_once};
use crate::cli::iso;
use crate::cli::output::{say, to_stdout};
use crate::cmdline::{
    AdditionsArgs, BaseRoleArg, PoolArgs, ProfileArg, RenderDropinsConfig, RenderIgnitionConfig,
    RenderMachineConfigConfig, RoleArg,
};
use crate::node::facts::NfdFlavour;
use crate::node::kubelet::Profile;

/// `--rules` with `--leave-to-nfd`: a warning line for each rule left out.
pub fn read_rules_leaving(
    rules: &[std::path::PathBuf],
    leave_to_nfd: &[String],
    prof: crate::node::kubelet::Profile,
) -> Result<crate::cli::render::leave_to_nfd::RuleFiles> {
    let read =
        crate::cli::render::leave_to_nfd::read_rule_files_leaving(rules, prof, leave_to_nfd)?;
    for w in read
        .left
        .iter()
        .map(|l| l.warning())
        .chain(read.warnings.clone())
    {
        // Warnings quote the rules files.
        say!("{}", crate::cli::output::terminal_safe(&w));
    }
    Ok(read)
}

pub fn dropins(c: RenderDropinsConfig) -> Result<ExitCode> {
    if c.remove {
        return remove_dropins(&c);
    }
    // Writing the files makes a missing root, once everything is checked.
    if !c.create_root {
        existing_dir("--root", &c.root)
            .map_err(|e| anyhow::anyhow!("{e:#}; pass --create-root to start a new tree there"))?;
    }
    let prof = Profile::from(c.additions.profile.unwrap_or(ProfileArg::Upstream));
    let additions = additions::from_cli(&c.additions.labels, &c.additions.taints, prof)?;
    let mut arches: Vec<Arch> = c.arches.iter().copied().map(Arch::from).collect();
    if arches.is_empty() && c.wrappers.is_empty() {
        // This host's own architecture: the tree is most often this host's.
        arches.push(wrappers::host_arch().with_context(|| {
            format!(
                "no wrapper is built for this host's architecture ({}); pass --arch ARCH or --wrapper PATH",
                std::env::consts::ARCH
            )
        })?);
    }
    let wrappers = wrappers::Lookup::of_this_program()?.wrappers_for(&arches, &c.wrappers)?;
    let written = tree::render_tree(&tree::TreeOptions {
        root: c.root.clone(),
        unit: c.unit.clone(),
        additions,
        profile: prof,
        wrappers,
        force: c.force,
        node_rules: node_rules(&c.additions, prof, &[])?,
    })?;
    for (p, change) in written.written {
        say!("{} {}", change.word(), p.display());
    }
    for p in written.removed {
        say!(
            "removed {} (an earlier render's; this one does not write it)",
            p.display()
        );
    }
    // When the tree has the unit, say now what the next start would do.
    let why = crate::cli::explain::left_out_at_next_start(&c.root, &c.unit, prof);
    if let Some(why) = why {
        say!(
            "warning: at the next kubelet start the wrapper would start kubelet without our labels/taints: {why}"
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn remove_dropins(c: &RenderDropinsConfig) -> Result<ExitCode> {
    existing_dir("--root", &c.root)?;
    let done = crate::cli::render::remove::remove_tree(&c.root, &c.unit, c.force)?;
    for p in &done.removed {
        say!("removed {}", p.display());
    }
    for why in &done.left {
        say!("left {why}");
    }
    if done.removed.is_empty() {
        say!(
            "nothing of kubelet-labeler's for {} under {}",
            c.unit,
            c.root.display()
        );
    } else {
        say!(
            "run `systemctl daemon-reload` on the node now: until then systemd runs {} with the removed wrapper",
            c.unit
        );
    }
    for l in &done.cleanup {
        say!("{l}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The plain options of `render machineconfig|ignition`.
pub fn pool_options(p: &PoolArgs) -> Result<machineconfig::PoolOptions> {
    let prof = Profile::from(p.additions.profile.unwrap_or(ProfileArg::Openshift));
    let additions = additions::from_cli(&p.additions.labels, &p.additions.taints, prof)?;
    let pool_label = match &p.pool_label {
        Some(kv) => {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            Some((k.to_string(), v.to_string()))
        }
        None => None,
    };
    let arches: Vec<Arch> = if p.arches.is_empty() && p.wrappers.is_empty() {
        vec![Arch::X86_64]
    } else {
        p.arches.iter().copied().map(Arch::from).collect()
    };
    let wrappers = wrappers::Lookup::of_this_program()?.wrappers_for(&arches, &p.wrappers)?;
    let (pool, builtin_role) = match (&p.pool, p.role) {
        (_, Some(RoleArg::Worker)) => ("worker".to_string(), true),
        (_, Some(RoleArg::Master)) => ("master".to_string(), true),
        (Some(pool), None) => (pool.clone(), false),
        (None, None) => anyhow::bail!("say which nodes: --pool NAME or --role worker|master"),
    };
    // The key the pool selects its nodes by (the MachineConfigPool's
    // nodeSelector), as `machineconfig` writes it.
    let selectors = match (&pool_label, builtin_role) {
        (_, true) => Vec::new(),
        (Some((k, _)), false) => vec![(k.clone(), format!("--pool-label of pool {pool}"))],
        (None, false) => vec![(
            format!("node.kubernetes.io/{pool}"),
            format!("the pool label of pool {pool}"),
        )],
    };
    Ok(machineconfig::PoolOptions {
        pool,
        builtin_role,
        additions,
        pool_label,
        base_role: match p.base_role {
            BaseRoleArg::Worker => "worker".to_string(),
        },
        ignition_version: p.ignition_version.spec(),
        wrappers,
        node_rules: node_rules(&p.additions, prof, &selectors)?,
    })
}

/// `--rules`/`--nfd-labels`: read, checked and compiled for the env drop-in;
/// no rule left to NFD may give a label of `selectors` (a pool's key).
fn node_rules(
    a: &AdditionsArgs,
    prof: crate::node::kubelet::Profile,
    selectors: &[(String, String)],
) -> Result<crate::cli::render::dropins::NodeRules> {
    use crate::cli::render::node_rules;
    stdin_at_most_once(&[("--rules", &a.rules)])?;
    let mut out = crate::cli::render::dropins::NodeRules {
        nfd_labels: a.nfd_labels.map(NfdFlavour::from),
        ..Default::default()
    };
    if !a.rules.is_empty() {
        let read = read_rules_leaving(&a.rules, &a.leave_to_nfd, prof)?;
        read.refuse_left_selecting(selectors)?;
        out.names = read.rules.iter().map(|r| r.name.clone()).collect();
        out.compact = Some(node_rules::compile(&read.rules)?);
        out.left_to_nfd = read.left_ids();
    }
    Ok(out)
}

pub fn machineconfig(c: RenderMachineConfigConfig) -> Result<ExitCode> {
    let opts = pool_options(&c.pool)?;
    let rendered = machineconfig::render(&opts)?;
    match (&c.output_dir, &c.output) {
        (Some(dir), _) => {
            for line in gitops_dir::write(&rendered, dir, c.force)? {
                say!("{line}");
            }
        }
        (None, Some(out)) if out.as_os_str() == "-" => {
            to_stdout(machineconfig::to_stream(&rendered)?)?;
            say!("{}", machineconfig::stream_policy_note(&rendered));
        }
        (None, Some(out)) => {
            let file = output_file::write_output(
                out,
                machineconfig::to_stream(&rendered)?.as_bytes(),
                c.force,
            )?;
            if file {
                say!("wrote {}", out.display());
            }
            say!("{}", machineconfig::stream_policy_note(&rendered));
        }
        // clap requires one of the two.
        (None, None) => unreachable!("--output-dir or --output"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The `--ca-file` PEM, checked here so that a bad one is named.
pub fn read_ca_file(path: &std::path::Path) -> Result<Vec<u8>> {
    let pem = input::read_file(path, input::CA_FILE)?;
    pointer::check_ca(&pem, &format!("--ca-file {}", path.display()))?;
    Ok(pem)
}

/// The config `render ignition` writes and `iso embed --pool|--role`
/// embeds, one JSON line: with `--merge-url`, the pointer config; else the
/// pool's full config. Checked: a render bug must not reach a node's first
/// boot.
pub fn ignition_text(
    pool: &PoolArgs,
    merge_url: Option<&str>,
    ca_file: Option<&std::path::Path>,
) -> Result<String> {
    let version = pool.ignition_version.spec();
    let config = match (merge_url, ca_file) {
        (Some(url), Some(ca)) => {
            let name = pool.pool.as_deref().ok_or_else(|| {
                Usage("--merge-url needs --pool NAME: the pointer config merges a custom pool's config".into())
            })?;
            pointer::check_merge_url_pool(url, name)?;
            if let Some(w) = pointer::plain_http_warning(url) {
                say!("warning: {w}");
            }
            let pem = read_ca_file(ca)?;
            pointer::pointer_config(url, &pem, version)?
        }
        _ => machineconfig::ignition(&pool_options(pool)?)?,
    };
    let text = serde_json::to_string(&config)? + "\n";
    iso::check_ignition(text.as_bytes(), "the rendered config")?;
    Ok(text)
}

pub fn ignition(c: RenderIgnitionConfig) -> Result<ExitCode> {
    let text = ignition_text(&c.pool, c.merge_url.as_deref(), c.ca_file.as_deref())?;
    if c.output.as_os_str() == "-" {
        to_stdout(text)?;
    } else if output_file::write_output(&c.output, text.as_bytes(), c.force)? {
        say!("wrote {}", c.output.display());
    }
    Ok(ExitCode::SUCCESS)
}
