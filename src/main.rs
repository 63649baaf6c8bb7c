//! Dispatch only: each subcommand turns its clap struct into the plain
//! options of a logic module and calls it.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;

use kubelet_labeler::cli::iso;
use kubelet_labeler::cli::render::arch::Arch;
use kubelet_labeler::cli::render::{
    additions, contained, gitops_dir, input, layout, machineconfig, pointer, tree, wrappers,
};
use kubelet_labeler::cmdline::*;

/// `eprintln!` that cannot panic: with stderr a closed pipe (`2>&1 | head`)
/// the line is lost, not the run.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

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
        Cmd::Iso(IsoCmd::Fleet(c)) => cmd_iso_fleet(c),
        Cmd::Facts(c) => cmd_facts(c),
        Cmd::Sync(c) => Ok(cmd_sync(c)),
        Cmd::Plan(c) => cmd_plan(c),
        Cmd::Completions(c) => cmd_completions(c),
        Cmd::Man(c) => cmd_man(c),
    };
    match result {
        Ok(code) => code,
        // Whoever reads our stdout has stopped (`| head`): stop quietly,
        // with success, as ripgrep does.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            say!("Error: {e:#}");
            if e.is::<Usage>() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn cmd_sync(c: SyncConfig) -> ExitCode {
    use kubelet_labeler::node::sync::{reconcile::Policy, run};
    let opts = run::SyncOptions {
        root: c.root,
        unit: c.unit,
        kubeconfig: c.kubeconfig,
        dry_run: c.dry_run,
        policy: Policy {
            pool_label: c.pool_label,
            allow_pool_label: c.allow_pool_label,
        },
        profile: c.profile.map(profile),
        facts_root: c.facts_root,
        max_wait: std::time::Duration::from_secs(c.max_wait),
        curl: None,
    };
    let out = run::run(&opts);
    run::print_outcome(&out);
    ExitCode::from(out.code as u8)
}

fn cmd_plan(c: PlanConfig) -> Result<ExitCode> {
    use kubelet_labeler::cli::plan;
    let p = plan::plan(&plan::PlanOptions {
        from: c.from,
        to: c.to,
        fleet: c.fleet,
        profile: profile(c.profile),
    })
    .map_err(|e| Usage(format!("{e:#}")))?;
    let format = match c.format {
        PlanFormatArg::Text => plan::Format::Text,
        PlanFormatArg::Json => plan::Format::Json,
        PlanFormatArg::Markdown => plan::Format::Markdown,
    };
    to_stdout(plan::render(&p, format))?;
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
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// All of a subcommand's output: a closed stdout is an error (quiet, see
/// main), never the panic of `print!`.
fn to_stdout(text: impl AsRef<[u8]>) -> Result<()> {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_ref())
        .and_then(|()| o.flush())
        .context("writing to stdout")
}

/// A usage error clap cannot see (the flags parse, their combination is
/// wrong): exit 2, as clap's own.
#[derive(Debug)]
struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

fn profile(p: ProfileArg) -> kubelet_labeler::node::kubelet::Profile {
    match p {
        ProfileArg::Upstream => kubelet_labeler::node::kubelet::Profile::Upstream,
        ProfileArg::Openshift => kubelet_labeler::node::kubelet::Profile::OpenShift,
    }
}

// ---- explain (cli::explain) ----

fn cmd_explain(c: ExplainConfig) -> Result<ExitCode> {
    use kubelet_labeler::cli::explain;
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
            let (configs, pools) = input::read_machineconfigs_and_pools(&c.machineconfigs)?;
            let configs = match &c.pool {
                Some(name) => explain::pool::choose(configs, &pools, name)?,
                None => explain::pool::check_one_pool(&configs, &pools).map(|()| configs)?,
            };
            release_version = kubelet_labeler::cli::validate::version_from_machineconfigs(&configs);
            clashes = kubelet_labeler::cli::render::compose::clashes(&configs)?
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
        Some(p) => profile(p),
        None => kubelet_labeler::node::wrapper::installed::wrapper_profile(
            &root,
            &c.unit,
            c.unit_path.as_deref(),
        )
        .unwrap_or(if offline {
            kubelet_labeler::node::kubelet::Profile::OpenShift
        } else {
            kubelet_labeler::node::kubelet::Profile::Upstream
        }),
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
    if c.json {
        to_stdout(serde_json::to_string_pretty(&e)? + "\n")?;
    } else {
        to_stdout(explain::render_human(&e))?;
    }
    // A preflight: exit 1 whenever our additions would not reach kubelet.
    for err in &e.errors {
        say!("kubelet-labeler: {err}");
    }
    if let Some(why) = &e.left_out {
        say!(
            "kubelet-labeler: at boot the wrapper would start kubelet without our additions: {why}"
        );
    }
    Ok(if e.errors.is_empty() && e.left_out.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `explain --facts`: one NodeFeature (or `facts --json` output), YAML or
/// JSON.
fn read_facts(path: &std::path::Path) -> Result<(kubelet_labeler::node::facts::Features, String)> {
    let (text, name) = input::read_text(path, input::FACTS)?;
    let docs: Vec<serde_json::Value> = match serde_json::from_str(&text) {
        Ok(v) => vec![v],
        Err(_) => serde_saphyr::from_multiple(&text)
            .with_context(|| format!("reading {name} as YAML or JSON (--facts)"))?,
    };
    let docs: Vec<&serde_json::Value> = docs.iter().filter(|d| !d.is_null()).collect();
    let [doc] = docs.as_slice() else {
        anyhow::bail!(
            "--facts {name}: {} documents; give one node's NodeFeature",
            docs.len()
        );
    };
    let features =
        kubelet_labeler::cli::facts_json::from_nfd(doc, &name).map_err(anyhow::Error::msg)?;
    Ok((features, name))
}

/// A root given on the command line must exist: a mistyped one would read
/// as an empty node.
fn existing_dir(flag: &str, dir: &std::path::Path) -> Result<()> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => anyhow::bail!("{flag} {}: not a directory", dir.display()),
        Err(e) => Err(e).with_context(|| format!("{flag} {}", dir.display())),
    }
}

/// Stdin can be read once: refuse "-" given twice among these flags.
fn stdin_at_most_once(flags: &[(&str, &[std::path::PathBuf])]) -> Result<()> {
    let named: Vec<&str> = flags
        .iter()
        .flat_map(|(flag, paths)| paths.iter().filter(|p| p.as_os_str() == "-").map(|_| *flag))
        .collect();
    if named.len() > 1 {
        return Err(Usage(format!(
            "stdin (\"-\") is given {} times ({}); it can be read once: give the other files by name",
            named.len(),
            named.join(" -, ") + " -"
        ))
        .into());
    }
    Ok(())
}

type EnvAssignments = Vec<(String, String)>;

/// `--rules`/`--nfd-labels` of explain, as the env drop-in would carry them,
/// and with `--rules` the rules left to the cluster's NFD.
fn explain_override_env(
    rules: &[std::path::PathBuf],
    leave_to_nfd: &[String],
    nfd_labels: Option<NfdLabelsArg>,
    prof: kubelet_labeler::node::kubelet::Profile,
) -> Result<(EnvAssignments, Option<Vec<String>>)> {
    use kubelet_labeler::cli::render::node_rules;
    use kubelet_labeler::node::contract::{NFD_LABELS_VAR, RULES_VAR};
    let mut env = Vec::new();
    let mut left = None;
    if !rules.is_empty() {
        let read = read_rules_leaving(rules, leave_to_nfd, prof)?;
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

/// `--rules` with `--leave-to-nfd`: a warning line for each rule left out.
fn read_rules_leaving(
    rules: &[std::path::PathBuf],
    leave_to_nfd: &[String],
    prof: kubelet_labeler::node::kubelet::Profile,
) -> Result<kubelet_labeler::cli::render::leave_to_nfd::RuleFiles> {
    let read = kubelet_labeler::cli::render::leave_to_nfd::read_rule_files_leaving(
        rules,
        prof,
        leave_to_nfd,
    )?;
    for left in &read.left {
        say!("{}", left.warning());
    }
    Ok(read)
}

// ---- facts (facts module) ----

fn cmd_facts(c: FactsConfig) -> Result<ExitCode> {
    use kubelet_labeler::node::facts;
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
        say!("warning: {feature} not read (node rules on it fail at boot): {why}");
    }
    if let Some(flavour) = c.nfd_labels {
        let labels = facts::nfd_labels(&f, nfd_flavour(flavour));
        to_stdout(
            labels
                .iter()
                .map(|(k, v)| format!("{k}={v}\n"))
                .collect::<String>(),
        )?;
    } else if c.json {
        to_stdout(
            serde_json::to_string_pretty(&kubelet_labeler::cli::facts_json::nfd_json(&f))? + "\n",
        )?;
    } else {
        to_stdout(kubelet_labeler::cli::facts_json::human(&f))?;
    }
    Ok(ExitCode::SUCCESS)
}

// ---- validate (kubelet module) ----

fn cmd_validate(c: ValidateConfig) -> Result<ExitCode> {
    use kubelet_labeler::cli::validate::validate_kubelet_args;
    if c.args.is_empty() {
        say!(
            "Error: no kubelet arguments to check; give them after '--': \
             kubelet-labeler validate [--profile upstream|openshift] [--json] -- KUBELET_ARGS..."
        );
        return Ok(ExitCode::from(2));
    }
    let report = validate_kubelet_args(&c.args, profile(c.profile));
    if c.json {
        to_stdout(report.to_json() + "\n")?;
    } else {
        to_stdout(report.to_human())?;
    }
    Ok(ExitCode::from(if report.valid { 0 } else { 1 }))
}

// ---- render (render module) ----

fn cmd_render_dropins(c: RenderDropinsConfig) -> Result<ExitCode> {
    if c.remove {
        return cmd_remove_dropins(&c);
    }
    // Writing the files makes a missing root, once everything is checked.
    if !c.create_root {
        existing_dir("--root", &c.root)
            .map_err(|e| anyhow::anyhow!("{e:#}; pass --create-root to start a new tree there"))?;
    }
    let prof = profile(c.additions.profile.unwrap_or(ProfileArg::Upstream));
    let additions = additions::from_cli(&c.additions.labels, &c.additions.taints, prof)?;
    let mut arches: Vec<Arch> = c.arches.iter().copied().map(arch_of).collect();
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
        node_rules: node_rules(&c.additions, prof)?,
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
    let why = kubelet_labeler::cli::explain::left_out_at_next_start(&c.root, &c.unit, prof);
    if let Some(why) = why {
        say!(
            "warning: at the next kubelet start the wrapper would start kubelet without our labels/taints: {why}"
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_remove_dropins(c: &RenderDropinsConfig) -> Result<ExitCode> {
    existing_dir("--root", &c.root)?;
    let done = kubelet_labeler::cli::render::remove::remove_tree(&c.root, &c.unit, c.force)?;
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

fn ignition_version(v: IgnitionVersionArg) -> &'static str {
    match v {
        IgnitionVersionArg::V3_5_0 => "3.5.0",
        IgnitionVersionArg::V3_4_0 => "3.4.0",
        IgnitionVersionArg::V3_2_0 => "3.2.0",
    }
}

/// The plain options of `render machineconfig|ignition`.
fn pool_options(p: &PoolArgs) -> Result<machineconfig::PoolOptions> {
    let prof = profile(p.additions.profile.unwrap_or(ProfileArg::Openshift));
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
        p.arches.iter().copied().map(arch_of).collect()
    };
    let wrappers = wrappers::Lookup::of_this_program()?.wrappers_for(&arches, &p.wrappers)?;
    let (pool, builtin_role) = match (&p.pool, p.role) {
        (_, Some(RoleArg::Worker)) => ("worker".to_string(), true),
        (_, Some(RoleArg::Master)) => ("master".to_string(), true),
        (Some(pool), None) => (pool.clone(), false),
        (None, None) => anyhow::bail!("say which nodes: --pool NAME or --role worker|master"),
    };
    Ok(machineconfig::PoolOptions {
        pool,
        builtin_role,
        additions,
        pool_label,
        base_role: match p.base_role {
            BaseRoleArg::Worker => "worker".to_string(),
        },
        ignition_version: ignition_version(p.ignition_version),
        wrappers,
        node_rules: node_rules(&p.additions, prof)?,
    })
}

fn nfd_flavour(f: NfdLabelsArg) -> kubelet_labeler::node::facts::NfdFlavour {
    match f {
        NfdLabelsArg::Upstream => kubelet_labeler::node::facts::NfdFlavour::Upstream,
        NfdLabelsArg::Openshift => kubelet_labeler::node::facts::NfdFlavour::OpenShift,
    }
}

/// `--rules`/`--nfd-labels`: read, checked and compiled for the env drop-in.
fn node_rules(
    a: &AdditionsArgs,
    prof: kubelet_labeler::node::kubelet::Profile,
) -> Result<kubelet_labeler::cli::render::dropins::NodeRules> {
    use kubelet_labeler::cli::render::node_rules;
    stdin_at_most_once(&[("--rules", &a.rules)])?;
    let mut out = kubelet_labeler::cli::render::dropins::NodeRules {
        nfd_labels: a.nfd_labels.map(nfd_flavour),
        ..Default::default()
    };
    if !a.rules.is_empty() {
        let read = read_rules_leaving(&a.rules, &a.leave_to_nfd, prof)?;
        out.names = read.rules.iter().map(|r| r.name.clone()).collect();
        out.compact = Some(node_rules::compile(&read.rules)?);
        out.left_to_nfd = read.left_ids();
    }
    Ok(out)
}

fn arch_of(a: ArchArg) -> Arch {
    match a {
        ArchArg::X86_64 => Arch::X86_64,
        ArchArg::Aarch64 => Arch::Aarch64,
        ArchArg::Ppc64le => Arch::Ppc64le,
        ArchArg::S390x => Arch::S390x,
    }
}

fn cmd_render_machineconfig(c: RenderMachineConfigConfig) -> Result<ExitCode> {
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
            let file = tree::write_output(
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
fn read_ca_file(path: &std::path::Path) -> Result<Vec<u8>> {
    let pem = input::read_file(path, input::CA_FILE)?;
    pointer::check_ca(&pem, &format!("--ca-file {}", path.display()))?;
    Ok(pem)
}

/// The config `render ignition` writes and `iso embed --pool|--role`
/// embeds, one JSON line: with `--merge-url`, the pointer config; else the
/// pool's full config. Checked: a render bug must not reach a node's first
/// boot.
fn ignition_text(
    pool: &PoolArgs,
    merge_url: Option<&str>,
    ca_file: Option<&std::path::Path>,
) -> Result<String> {
    let version = ignition_version(pool.ignition_version);
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

fn cmd_render_ignition(c: RenderIgnitionConfig) -> Result<ExitCode> {
    let text = ignition_text(&c.pool, c.merge_url.as_deref(), c.ca_file.as_deref())?;
    if c.output.as_os_str() == "-" {
        to_stdout(text)?;
    } else if tree::write_output(&c.output, text.as_bytes(), c.force)? {
        say!("wrote {}", c.output.display());
    }
    Ok(ExitCode::SUCCESS)
}

// ---- iso (iso module) ----

/// `-o`: in place, stdout, or a new file (`-f`: or over an existing one).
fn iso_output(o: &Option<std::path::PathBuf>, force: bool) -> iso::Output<'_> {
    match o {
        None => iso::Output::InPlace,
        Some(p) if p.as_os_str() == "-" => iso::Output::Stdout,
        Some(p) if force => iso::Output::Replace(p),
        Some(p) => iso::Output::File(p),
    }
}

fn cmd_iso_embed(c: IsoEmbedConfig) -> Result<ExitCode> {
    // clap requires --pool or --role with the flags that render.
    let config = match &c.ignition_file {
        _ if c.pool.pool.is_some() || c.pool.role.is_some() => {
            ignition_text(&c.pool, c.merge_url.as_deref(), c.ca_file.as_deref())?.into_bytes()
        }
        Some(path) if path.as_os_str() != "-" => {
            if iso::is_iso_image(path) {
                anyhow::bail!(
                    "-i {}: that is an ISO image, not an Ignition config; -i takes the config to \
                     embed and the ISO comes last: iso embed -i CONFIG ISO",
                    path.display()
                );
            }
            let config = input::read_file(path, input::IGNITION)?;
            checked_input(config, &path.display().to_string(), c.no_validate)?
        }
        // `-i -`, or no -i: stdin.
        _ => {
            let buf = input::read_capped(std::io::stdin().lock(), "<stdin>", input::IGNITION)?;
            checked_input(buf, "the config on stdin", c.no_validate)?
        }
    };
    iso::embed(&c.input, &config, c.force, iso_output(&c.output, c.force))?;
    Ok(ExitCode::SUCCESS)
}

/// A user's config, refused if the node's Ignition would refuse it; keys
/// its spec version does not have are only warned about, as Ignition does.
fn checked_input(config: Vec<u8>, name: &str, no_validate: bool) -> Result<Vec<u8>> {
    if no_validate {
        return Ok(config);
    }
    let checked = iso::check_ignition(&config, name)
        .map_err(|e| anyhow::anyhow!("{e}; --no-validate embeds it unchecked"))?;
    if checked.repeats_keys {
        say!("warning: {name} names a key twice in one object; Ignition uses the last");
    }
    for key in &checked.unknown_keys {
        say!(
            "warning: {name}: Ignition {} ignores the unknown key {key}; fix its name, or raise ignition.version if it is a newer spec's field",
            checked.version
        );
    }
    Ok(config)
}

fn cmd_iso_show(c: IsoShowConfig) -> Result<ExitCode> {
    let config = iso::show(&c.input)?;
    to_stdout(config)?;
    Ok(ExitCode::SUCCESS)
}

fn cmd_iso_remove(c: IsoRemoveConfig) -> Result<ExitCode> {
    iso::remove(&c.input, iso_output(&c.output, false))?;
    Ok(ExitCode::SUCCESS)
}

fn cmd_iso_fleet(c: IsoFleetConfig) -> Result<ExitCode> {
    use kubelet_labeler::cli::iso::fleet;
    let pools = c
        .pools
        .iter()
        .map(|p| match p.split_once('=') {
            Some((n, s)) => (n.to_string(), Some(std::path::PathBuf::from(s))),
            None => (p.clone(), None),
        })
        .collect();
    let rules = if c.rules.is_empty() {
        None
    } else {
        let read = read_rules_leaving(
            &c.rules,
            &c.leave_to_nfd,
            kubelet_labeler::node::kubelet::Profile::OpenShift,
        )?
        .rules;
        // The live system's kernel and os-release are the ISO's, not the
        // installed system's that kubelet starts on.
        for r in &read {
            let terms = r.match_features.iter().chain(r.match_any.iter().flatten());
            if let Some(t) = terms.into_iter().find(|t| {
                let f = t.feature.to_ascii_lowercase();
                f.starts_with("kernel.") || f == "system.osrelease"
            }) {
                say!(
                    "warning: rule {:?} reads {}: at install that is the live ISO's, at registration the installed system's; \
                     keep the live ISO at the cluster's RHCOS version, or match on hardware only",
                    r.name,
                    t.feature
                );
            }
        }
        Some(kubelet_labeler::cli::render::node_rules::compile(&read)?)
    };
    let pool_devices = c
        .pool_dest_devices
        .iter()
        .map(|p| match p.split_once('=') {
            Some((n, d)) => Ok((n.to_string(), d.to_string())),
            None => Err(anyhow::anyhow!(
                "--pool-dest-device {p}: give NAME=PATH, e.g. worker-gpu=/dev/nvme0n1"
            )),
        })
        .collect::<Result<Vec<_>>>()?;
    let ca_pem = match &c.ca_file {
        Some(p) => Some(read_ca_file(p)?),
        None => None,
    };
    let selector_path = match &c.selector {
        Some(p) => p.clone(),
        None => wrappers::Lookup::of_this_program()?.selector_for(arch_of(c.arch))?,
    };
    let selector = input::read_file(&selector_path, input::SELECTOR)
        .with_context(|| format!("reading the selector {}", selector_path.display()))?;
    let hint = |arch| {
        wrappers::Lookup::of_this_program().map_or_else(
            |_| String::new(),
            |l| format!("; {}", l.selector_hint(arch)),
        )
    };
    let arch = Arch::of_elf(&selector).with_context(|| {
        format!(
            "{} is not a 64-bit ELF program{}",
            selector_path.display(),
            hint(arch_of(c.arch))
        )
    })?;
    if c.selector.is_none() && arch != arch_of(c.arch) {
        anyhow::bail!(
            "{} is a {arch} program, not {}; rebuild it or pass --selector",
            selector_path.display(),
            arch_of(c.arch)
        );
    }
    machineconfig::check_wrapper(&selector, arch, &selector_path)?;
    wrappers::check_ours(&selector, wrappers::Program::Selector, &selector_path)
        .map_err(|e| anyhow::anyhow!("{e}{}", hint(arch)))?;
    let built = fleet::build(&fleet::FleetOptions {
        pools,
        dest_device: c.dest_device.clone(),
        pool_devices,
        rules,
        nfd_labels: c.nfd_labels.map(|f| match f {
            NfdLabelsArg::Upstream => "upstream".to_string(),
            NfdLabelsArg::Openshift => "openshift".to_string(),
        }),
        mcs_url: c.mcs_url.clone(),
        ca_pem,
        selector,
    })?;
    let names: Vec<&str> = built.table.pools.iter().map(|p| p.name.as_str()).collect();
    let Some(input) = &c.input else {
        // --dry-run without an ISO.
        return fleet_preview(&built, arch, c.dest_device.as_deref(), &c.facts_root);
    };
    let (used, area) = iso::embedded_size(input, &built.config)?;
    let fits = format!("{used} of {area} bytes of the embed area");
    if c.dry_run {
        if used as u64 > area {
            anyhow::bail!(
                "the fleet config does not fit {}: {fits}; give fewer pools",
                input.display()
            );
        }
        say!(
            "the fleet config for pools {} ({arch} selector) takes {fits}",
            names.join(", ")
        );
        return fleet_preview(&built, arch, c.dest_device.as_deref(), &c.facts_root);
    }
    iso::embed(
        input,
        &built.config,
        c.force,
        iso_output(&c.output, c.force),
    )?;
    say!(
        "embedded the fleet config for pools {} ({arch} selector): {fits}",
        names.join(", ")
    );
    let iso_name = match &c.output {
        Some(o) if o.as_os_str() == "-" => "the ISO".to_string(),
        Some(o) => o.display().to_string(),
        None => input.display().to_string(),
    };
    say!(
        "warning: every machine booted from {iso_name} whose hardware selects a pool is WIPED \
         and installed without a prompt ({}); keep it away from machines you do not \
         mean to reinstall, and preview a machine with --dry-run --facts-root",
        fleet::devices(&built.table, c.dest_device.as_deref())
    );
    Ok(ExitCode::SUCCESS)
}

/// `iso fleet --dry-run`: its preview on stdout; exit 1 when a machine
/// would not install.
fn fleet_preview(
    built: &iso::fleet::Fleet,
    iso_arch: Arch,
    default_device: Option<&str>,
    roots: &[std::path::PathBuf],
) -> Result<ExitCode> {
    let (text, all) = iso::fleet::preview(built, iso_arch, default_device, roots);
    to_stdout(text)?;
    Ok(if all {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

// ---- completions and man pages (from the same clap types) ----

fn cmd_completions(c: CompletionsConfig) -> Result<ExitCode> {
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

fn cmd_man(c: ManConfig) -> Result<ExitCode> {
    use clap::CommandFactory;
    std::fs::create_dir_all(&c.output_dir)
        .with_context(|| format!("creating {}", c.output_dir.display()))?;
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
