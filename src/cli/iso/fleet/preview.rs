//! `iso fleet --dry-run`: what the selector would decide on each machine
//! given, without an ISO.

use super::{Fleet, devices, pool_device};
use crate::cli::render::arch::Arch;

/// `iso fleet --dry-run`'s text: each pool's nodeSelector and device, and the pool
/// each `--facts-root` machine would install into, as the selector decides;
/// and whether every machine would install.
pub fn preview(
    built: &Fleet,
    iso_arch: Arch,
    default_device: Option<&str>,
    roots: &[std::path::PathBuf],
) -> (String, bool) {
    use std::fmt::Write as _;
    let devices = devices(&built.table, default_device);
    let mut out = String::new();
    for p in &built.table.pools {
        let _ = writeln!(
            out,
            "pool {}: nodeSelector {}",
            p.name,
            p.describe_selector()
        );
        if let Some(url) = built.merge_urls.get(&p.name) {
            let _ = writeln!(out, "pool {}: config fetched from {url}", p.name);
        }
        if let Some(ca) = built.trusts.get(&p.name) {
            let _ = writeln!(out, "pool {}: its machines trust {ca} for it", p.name);
        }
    }
    let _ = writeln!(out, "wiped on install: {devices}");
    let mut all = true;
    for root in roots {
        // The ISO boots only machines of its selector's architecture.
        if let Some(machine) = crate::node::facts::machine_arch(root)
            && machine != iso_arch.to_string()
        {
            all = false;
            let _ = writeln!(
                out,
                "{}: cannot boot this ISO: the machine is {machine} (its /proc/cpuinfo), the \
                 ISO is {iso_arch}; build a fleet ISO for {machine} to install it",
                root.display()
            );
            continue;
        }
        match crate::node::fleet::decide(&built.table, root) {
            Ok((pool, labels)) => {
                let dev = pool_device(pool, default_device);
                let _ = writeln!(
                    out,
                    "{}: would install into pool {} on {dev}: its labels ({}) match the nodeSelector",
                    root.display(),
                    pool.name,
                    crate::node::fleet::describe_labels(&crate::node::fleet::selected_labels(
                        &built.table.pools,
                        &labels
                    )),
                );
            }
            Err(why) => {
                all = false;
                let _ = writeln!(out, "{}: would not install: {why}", root.display());
            }
        }
    }
    (out, all)
}
