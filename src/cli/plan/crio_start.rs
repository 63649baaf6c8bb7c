//! What crio reads at its start (review 30 r30a F2): kubelet.service
//! `Requires=crio.service`, and crio exits at its start on a configuration
//! it refuses, while the MCO's `reload crio` (a SIGHUP) only logs it and
//! keeps the old one: the node looks applied, and from its next boot
//! kubelet never starts. A change of those files is judged as crio judges
//! it (registries.conf, [`crio_registries`]), or refused where plan cannot
//! judge it, whatever the disruption policy prices it.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use super::policy::Changed;
use super::{Side, crio_registries, registries};
use crate::cli::render::merge_inputs::node_path;

/// The file crio's start reads that plan judges.
const REGISTRIES: &str = "/etc/containers/registries.conf";

/// What else crio reads at its start, and where to make the change
/// instead: a file, or every path under a directory.
const UNJUDGED: [(&str, &str); 8] = [
    (
        "/etc/crio/crio.conf",
        "set crio's options with a ContainerRuntimeConfig",
    ),
    (
        "/etc/crio/crio.conf.d",
        "set crio's options with a ContainerRuntimeConfig (a runtime handler with its table)",
    ),
    (
        "/etc/containers/registries.conf.d",
        "write the change in /etc/containers/registries.conf, which plan judges as crio does",
    ),
    (
        "/etc/containers/storage.conf",
        "set storage with a ContainerRuntimeConfig",
    ),
    (
        "/etc/sysconfig/crio",
        "leave crio.service's environment file to the MCO",
    ),
    // crio reads every hook's JSON at its start and exits on one it
    // cannot parse (review 32 r32a F1).
    (
        "/etc/containers/oci/hooks.d",
        "add OCI hooks outside plan's cheap path, reviewed by hand",
    ),
    (
        "/usr/share/containers/oci/hooks.d",
        "add OCI hooks outside plan's cheap path, reviewed by hand",
    ),
    // containers/image reads root's own registries.conf (and the rest of
    // its containers configuration) before the system's (review 32 r32a
    // F2; CoreOS's /var/roothome is /root).
    (
        "/root/.config/containers",
        "write the change in /etc/containers/registries.conf, which plan judges as crio does",
    ),
];

/// Why a path of a layout is one crio's start reads that plan does not
/// judge, and the fix (none: it is not, or it is registries.conf).
fn unjudged(path: &str) -> Option<String> {
    let path = node_path(path);
    let above = |dir: &str| dir.strip_prefix(&path).is_some_and(|r| r.starts_with('/'));
    if above(REGISTRIES) || UNJUDGED.iter().any(|(p, _)| above(p)) {
        return Some(
            "it is a directory above crio's configuration: plan cannot judge what crio reads \
             there; leave it to the MCO"
                .into(),
        );
    }
    UNJUDGED.iter().find_map(|(p, fix)| {
        let at = path.strip_prefix(p)?;
        (at.is_empty() || at.starts_with('/'))
            .then(|| format!("crio reads it at its start, and plan cannot judge it; {fix}"))
    })
}

/// Refuse, in pool `pool`, a change between the two renders of what crio
/// reads at its start that crio refuses or plan cannot judge.
pub fn check((from, to): (&Side, &Side), pool: &str) -> Result<()> {
    let (Some(old), Some(new)) = (from.cache.get(pool), to.cache.get(pool)) else {
        return Ok(());
    };
    let names = (from.render.name.as_str(), to.render.name.as_str());
    judge(names, pool, (&old.files, &new.files), |path| {
        let change = Changed::File(path.to_string());
        (new.changes.get(&change))
            .and_then(|d| to.memo.read_file(d))
            .map(registries::table_of)
    })
}

fn refuse(pool: &str, what: String) -> Result<()> {
    bail!(
        "pool {pool}: kubelet may not start: {what}; kubelet.service Requires= crio.service, and \
         crio exits at its start on a configuration it refuses (the MCO's reload only logs it, \
         so the node fails at its next boot), whatever the disruption policy says; plan the \
         change without it, and review it by eye"
    )
}

/// The judgement of `check`: `files` the layouts' identities on each
/// side, `read` the new side's registries.conf entry at a path as a TOML
/// table (none: not kept).
fn judge(
    (from, to): (&str, &str),
    pool: &str,
    (old, new): (&BTreeMap<String, u64>, &BTreeMap<String, u64>),
    read: impl Fn(&str) -> Option<Result<toml::Table, String>>,
) -> Result<()> {
    for path in old.keys().chain(new.keys()) {
        if old.get(path) == new.get(path) {
            continue;
        }
        if let Some(why) = unjudged(path) {
            return refuse(pool, format!("{path} changes from {from} to {to} ({why})"));
        }
        // Taken away, registries.conf is the MCO's own again.
        if node_path(path) != REGISTRIES || !new.contains_key(path) {
            continue;
        }
        let why = match read(path) {
            None => Some("plan did not keep its contents to judge".to_string()),
            Some(Err(why)) => Some(why),
            Some(Ok(table)) => crio_registries::refused(&table)
                .map(|why| format!("{why}: crio refuses it at its start")),
        };
        if let Some(why) = why {
            return refuse(
                pool,
                format!(
                    "{path} of {to}: {why} (containers/image's registries.conf rules; fix the \
                     file, see containers-registries.conf(5))"
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(path: &str, text: Option<&str>) -> Result<()> {
        let old = BTreeMap::new();
        let new = BTreeMap::from([(path.to_string(), 1)]);
        judge(("base", "pr"), "p", (&old, &new), |_| {
            text.map(|t| t.parse::<toml::Table>().map_err(|e| e.to_string()))
        })
    }

    /// Review 30 r30a F2: crio's files are refused by what crio does with
    /// them, not priced by their path.
    #[test]
    fn what_crio_reads_at_its_start() {
        let err = judged(REGISTRIES, Some("short-name-mode = \"enforced\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("kubelet may not start: /etc/containers/registries.conf of pr")
                && err.contains("short-name-mode \"enforced\"")
                && err.contains("crio refuses it at its start"),
            "{err}"
        );
        judged(REGISTRIES, Some("short-name-mode = \"enforcing\"\n")).unwrap();
        assert!(judged(REGISTRIES, None).is_err());
        for path in [
            "/etc/crio/crio.conf.d/99-nvidia.conf",
            "/etc/crio/crio.conf",
            "/etc/crio",
            "/etc/containers/registries.conf.d/50-gpu.conf",
            "/etc/containers/storage.conf",
            "/etc/containers",
            "/etc/sysconfig/crio",
            // Review 32 r32a F1, F2.
            "/etc/containers/oci/hooks.d/99-gpu.json",
            "/root/.config/containers/registries.conf",
            "/var/roothome/.config/containers/registries.conf",
        ] {
            let err = judged(path, None).unwrap_err().to_string();
            assert!(
                err.contains(&format!(
                    "kubelet may not start: {path} changes from base to pr"
                )),
                "{err}"
            );
        }
        for path in [
            "/etc/containers/policy.json",
            "/etc/crio-x.conf",
            "/etc/sysconfig/crio-x",
        ] {
            judged(path, None).unwrap();
        }
        // Taken away: the MCO's own registries.conf again.
        let old = BTreeMap::from([(REGISTRIES.to_string(), 1)]);
        judge(("b", "p"), "p", (&old, &BTreeMap::new()), |_| None).unwrap();
    }
}
