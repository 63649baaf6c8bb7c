//! `explain`: its clap types to [`super::ExplainOptions`], and the
//! preflight's exit code.

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::args::{existing_dir, stdin_at_most_once};
use crate::cli::output::{say, terminal_safe};
use crate::cli::render::{input, layout};
use crate::cmdline::{ExplainConfig, NfdLabelsArg};
use crate::node::kubelet::Profile;

pub fn run(c: ExplainConfig) -> Result<ExitCode> {
    use crate::cli::explain;
    stdin_at_most_once(&[
        ("--machineconfig", &c.machineconfigs),
        ("--rules", &c.rules),
        ("--facts", c.facts.as_slice()),
    ])?;
    let facts = match &c.facts {
        Some(path) => Some(read_facts(path)?),
        None => None,
    };
    let manager_env = c.set_env;
    if let Some(dir) = &c.facts_root {
        existing_dir("--facts-root", dir)?;
    }
    // MachineConfigs are laid out in a scratch tree that lives until the end.
    let scratch;
    let mut release_version = None;
    // Renders of ours that do not compose (`render::compose`), and what the
    // named release refuses: errors of the preflight.
    let mut clashes: Vec<String> = Vec::new();
    let (root, offline) = match c.root {
        Some(root) => {
            existing_dir("--root", &root)?;
            (root, false)
        }
        None => {
            scratch = tempfile::tempdir().context("creating a scratch node tree")?;
            let (mut configs, mut pools, mut from_dirs) = (Vec::new(), Vec::new(), Vec::new());
            for path in &c.machineconfigs {
                let (mcs, p) = input::read_machineconfigs_and_pools(std::slice::from_ref(path))?;
                if path.as_os_str() != "-" && path.is_dir() {
                    from_dirs.extend(mcs.iter().cloned());
                }
                configs.extend(mcs);
                pools.extend(p);
            }
            explain::pool::check_given_once(&configs, &pools)?;
            explain::pool::check_selected(&from_dirs, &pools)?;
            let configs = match &c.pool {
                Some(name) => explain::pool::choose(configs, &pools, name)?,
                None => match explain::pool::choose_the_given_pool(configs.clone(), &pools)? {
                    Some(chosen) => chosen,
                    None => explain::pool::check_one_pool(&configs, &pools).map(|()| configs)?,
                },
            };
            release_version = crate::cli::validate::version_from_machineconfigs(&configs);
            clashes = crate::cli::render::compose::clashes(&configs)?
                .iter()
                .map(|c| c.to_string())
                .collect();
            // What the cluster's release refuses, judged by the release named.
            clashes.extend(explain::release::errors(&configs));
            layout::Layout::merge(configs)?.write(scratch.path())?;
            (scratch.path().to_path_buf(), true)
        }
    };
    // What the installed wrapper validates with; else, MachineConfigs
    // being OpenShift's, openshift for them.
    let prof = match c.profile {
        Some(p) => Profile::from(p),
        None => {
            crate::node::wrapper::installed::wrapper_profile(&root, &c.unit, c.unit_path.as_deref())
                .unwrap_or(if offline {
                    crate::node::kubelet::Profile::OpenShift
                } else {
                    crate::node::kubelet::Profile::Upstream
                })
        }
    };
    let (override_env, left_to_nfd) =
        explain_override_env(&c.rules, &c.leave_to_nfd, c.nfd_labels, prof)?;
    let mut e = explain::explain(&explain::ExplainOptions {
        root: root.clone(),
        unit: c.unit,
        profile: prof,
        manager_env,
        unit_path: c.unit_path,
        override_env,
        left_to_nfd,
        facts_root: c.facts_root,
        facts,
        offline,
        kubelet_version: c.kubelet_version.or(release_version),
    })?;
    if offline {
        e.strip_root(&root);
    }
    e.errors.extend(clashes);
    // A preflight: exit 1 whenever our additions would not reach kubelet,
    // kept (and said below) when a reader closes stdout early.
    let verdict = if e.errors.is_empty() && e.left_out.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    let text = if c.json {
        serde_json::to_string_pretty(&e)? + "\n"
    } else {
        terminal_safe(&explain::render_human(&e))
    };
    let code = crate::cli::output::data_then_verdict(text, verdict)?;
    for err in &e.errors {
        say!("kubelet-labeler: {}", terminal_safe(err));
    }
    if let Some(why) = &e.left_out {
        say!(
            "kubelet-labeler: at boot the wrapper would start kubelet without our additions: {}",
            terminal_safe(why)
        );
    }
    Ok(code)
}

/// `explain --facts`: one NodeFeature (or `facts --json` output), YAML or
/// JSON.
fn read_facts(path: &std::path::Path) -> Result<(crate::node::facts::Features, String)> {
    let (text, name) = input::read_text(path, input::FACTS)?;
    let docs: Vec<serde_json::Value> = match serde_json::from_str(&text) {
        Ok(v) => vec![v],
        // Review 41 r41b F3: read as every manifest is, whose errors name
        // the line and never quote it (the file may be a link to a secret).
        Err(_) => crate::cli::yaml::kube_yaml(&text)
            .with_context(|| format!("reading {name} as YAML or JSON (--facts)"))?,
    };
    let docs: Vec<&serde_json::Value> = docs.iter().filter(|d| !d.is_null()).collect();
    let [doc] = docs.as_slice() else {
        anyhow::bail!(
            "--facts {name}: {} documents; give one node's NodeFeature",
            docs.len()
        );
    };
    let features = crate::cli::facts_json::from_nfd(doc, &name).map_err(anyhow::Error::msg)?;
    Ok((features, name))
}

type EnvAssignments = Vec<(String, String)>;

/// `--rules`/`--nfd-labels` of explain, as the env drop-in would carry them,
/// and with `--rules` the rules left to the cluster's NFD.
fn explain_override_env(
    rules: &[std::path::PathBuf],
    leave_to_nfd: &[String],
    nfd_labels: Option<NfdLabelsArg>,
    prof: crate::node::kubelet::Profile,
) -> Result<(EnvAssignments, Option<Vec<String>>)> {
    use crate::cli::render::node_rules;
    use crate::node::contract::{NFD_LABELS_VAR, RULES_VAR};
    let mut env = Vec::new();
    let mut left = None;
    if !rules.is_empty() {
        // explain says itself which values the node never reads.
        let read =
            crate::cli::render::leave_to_nfd::read_rule_files_leaving(rules, prof, leave_to_nfd)?;
        for left in &read.left {
            say!("{}", left.warning());
        }
        env.push((RULES_VAR.to_string(), node_rules::compile(&read.rules)?));
        left = Some(read.left_ids());
    }
    if let Some(f) = nfd_labels {
        let v = match f {
            NfdLabelsArg::Upstream => "upstream",
            NfdLabelsArg::Openshift => "openshift",
        };
        env.push((NFD_LABELS_VAR.to_string(), v.to_string()));
    }
    Ok((env, left))
}
