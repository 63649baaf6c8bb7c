//! `iso embed|show|remove|fleet`: their clap types to the ISO modules'
//! options, and what each says it did.

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::iso;
use crate::cli::output::{say, to_stdout};
use crate::cli::render::arch::Arch;
use crate::cli::render::command::{ignition_text, read_ca_file, read_rules_leaving};
use crate::cli::render::{input, machineconfig, wrappers};
use crate::cmdline::{
    IsoEmbedConfig, IsoFleetConfig, IsoRemoveConfig, IsoShowConfig, NfdLabelsArg,
};

/// `-o`: in place, stdout, or a new file (`-f`: or over an existing one).
fn iso_output(o: &Option<std::path::PathBuf>, force: bool) -> iso::Output<'_> {
    match o {
        None => iso::Output::InPlace,
        Some(p) if p.as_os_str() == "-" => iso::Output::Stdout,
        Some(p) if force => iso::Output::Replace(p),
        Some(p) => iso::Output::File(p),
    }
}

pub fn embed(c: IsoEmbedConfig) -> Result<ExitCode> {
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
    // Review 39 r39b F2: one line a key wrote 223 MB for a 16 MiB config.
    const KEYS_SAID: usize = 100;
    for key in checked.unknown_keys.iter().take(KEYS_SAID) {
        say!(
            "warning: {name}: Ignition {} ignores the unknown key {key}; fix its name, or raise ignition.version if it is a newer spec's field",
            checked.version
        );
    }
    if checked.unknown_keys.len() > KEYS_SAID {
        say!(
            "warning: {name}: and {} more unknown keys Ignition {} ignores",
            checked.unknown_keys.len() - KEYS_SAID,
            checked.version
        );
    }
    Ok(config)
}

pub fn show(c: IsoShowConfig) -> Result<ExitCode> {
    // The config is shown whatever the kernel arguments, and the exit code
    // is 1 when they run another config. That verdict is said first, on
    // stderr: a reader that stops early (`| grep -q`, `| head`) closes
    // stdout before the config's end, and a closed pipe is quiet success
    // only when nothing but data is left (review 17 r17c F6).
    let (config, kargs) = iso::show_with_kargs(&c.input)?;
    let Some(config) = config else {
        kargs?;
        anyhow::bail!("{} has no embedded Ignition config", c.input.display());
    };
    let refused = match &kargs {
        Err(e) => {
            crate::cli::output::report(e);
            true
        }
        Ok(()) => false,
    };
    // The bytes of a downloaded ISO: on a terminal its escape codes are
    // shown escaped (they could rewrite the screen or set the clipboard);
    // into a pipe or file, the config as it is.
    use std::io::IsTerminal;
    let shown = if std::io::stdout().is_terminal() {
        to_stdout(crate::cli::output::terminal_safe(&String::from_utf8_lossy(
            &config,
        )))
    } else {
        to_stdout(config)
    };
    match shown {
        Err(e) if refused && crate::cli::output::reader_stopped(&e) => {}
        other => other?,
    }
    Ok(if refused {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub fn remove(c: IsoRemoveConfig) -> Result<ExitCode> {
    iso::remove(&c.input, iso_output(&c.output, false))?;
    Ok(ExitCode::SUCCESS)
}

pub fn fleet(c: IsoFleetConfig) -> Result<ExitCode> {
    use crate::cli::iso::fleet;
    let pools = c
        .pools
        .iter()
        .map(|p| match p.split_once('=') {
            Some((n, s)) => (n.to_string(), Some(std::path::PathBuf::from(s))),
            None => (p.clone(), None),
        })
        .collect();
    let mut read_rules = None;
    let rules = if c.rules.is_empty() {
        None
    } else {
        let read_files = read_rules_leaving(
            &c.rules,
            &c.leave_to_nfd,
            crate::node::kubelet::Profile::OpenShift,
        )?;
        let read = read_rules.insert(read_files).rules.clone();
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
        Some(crate::cli::render::node_rules::compile(&read)?)
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
        None => wrappers::Lookup::of_this_program()?.selector_for(Arch::from(c.arch))?,
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
            hint(Arch::from(c.arch))
        )
    })?;
    if c.selector.is_none() && arch != Arch::from(c.arch) {
        anyhow::bail!(
            "{} is a {arch} program, not {}; rebuild it or pass --selector",
            selector_path.display(),
            Arch::from(c.arch)
        );
    }
    machineconfig::check_wrapper(&selector, arch, &selector_path)?;
    wrappers::check_ours(&selector, wrappers::Program::Selector, &selector_path)
        .map_err(|e| anyhow::anyhow!("{e}{}", hint(arch)))?;
    if c.cluster_pools.is_none() {
        say!(
            "warning: without --cluster-pools (oc get machineconfigpools -o yaml) the installed \
             nodes judge a label change only among the pools given with --pool: one selecting \
             another pool of the cluster is neither fenced at registration nor held by the sync"
        );
    }
    let built = fleet::build(&fleet::FleetOptions {
        pools,
        cluster_pools: c.cluster_pools.clone(),
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
    if let Some(read) = &read_rules {
        read.refuse_left_selecting(&fleet_selectors(&built.table))?;
    }
    // Each pool with where its machines fetch their config.
    let names: Vec<String> = built
        .table
        .pools
        .iter()
        .map(
            |p| match (built.merge_urls.get(&p.name), built.trusts.get(&p.name)) {
                (Some(url), Some(ca)) => format!("{} (config from {url}, trusting {ca})", p.name),
                (Some(url), None) => format!("{} (config from {url})", p.name),
                _ => p.name.clone(),
            },
        )
        .collect();
    let Some(input) = &c.input else {
        // --dry-run without an ISO.
        return fleet_preview(&built, arch, c.dest_device.as_deref(), &c.facts_root);
    };
    // Compressed once: its size said, then written.
    let embedding = iso::Embedding::new(input, &built.config, c.output.is_none() && !c.dry_run)?;
    let (used, area) = embedding.size();
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
    embedding.write(c.force, iso_output(&c.output, c.force))?;
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

/// The keys the fleet's pools select nodes by (their MachineConfigPools'
/// nodeSelectors), with whose each is.
fn fleet_selectors(table: &crate::node::fleet::Table) -> Vec<(String, String)> {
    use crate::node::fleet::Requirement;
    let mut out = Vec::new();
    for pool in &table.pools {
        for r in &pool.selector {
            let (Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Exists(k)
            | Requirement::DoesNotExist(k)) = r;
            out.push((k.clone(), format!("pool {}'s nodeSelector", pool.name)));
        }
    }
    out
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
    // Kept when a reader closes stdout early (`| head`).
    let verdict = if all {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    crate::cli::output::data_then_verdict(text, verdict)
}
