//! The members an embed area may hold: what coreos-installer writes there
//! (`src/live/embed.rs`: `config.ign`, and `etc/coreos-firstboot-network/
//! <keyfile>` from `iso network embed` or `iso customize`), with their
//! parent directories. A live ISO's area is zeros until then.
//!
//! Any other member is unpacked by the kernel into the live initramfs at
//! boot, where Ignition and systemd read it: a base config fragment
//! (`usr/lib/ignition/base.d/*.ign`, merged into every config Ignition
//! runs), a unit wanted by `initrd.target` (root code before Ignition).
//! `iso show` shows `config.ign` only and `iso embed` / `iso fleet` would
//! write such members back beside ours: every `iso` command refuses them.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use super::CONFIG_PATH;

/// Where coreos-installer writes network keyfiles.
const NETWORK_DIR: &str = "etc/coreos-firstboot-network";

/// Whether coreos-installer writes a regular file at `name`.
fn is_coreos_file(name: &str) -> bool {
    name == CONFIG_PATH
        || name
            .strip_prefix(NETWORK_DIR)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|file| !file.is_empty() && !file.contains('/'))
}

/// Refuse an area that leaves anything but coreos-installer's members:
/// `files` and `dirs` as the kernel leaves them (initramfs::read_paths).
pub(super) fn check(files: &BTreeMap<String, Vec<u8>>, dirs: &[String]) -> Result<()> {
    let others: Vec<&str> = files
        .keys()
        .map(String::as_str)
        .filter(|f| !is_coreos_file(f))
        .chain(
            dirs.iter()
                .map(String::as_str)
                .filter(|d| !matches!(*d, "etc" | NETWORK_DIR)),
        )
        .collect();
    let Some(first) = others.first() else {
        return Ok(());
    };
    let kind = if files.contains_key(*first) {
        "a file"
    } else {
        "a directory"
    };
    let more = match others.len() - 1 {
        0 => String::new(),
        1 => " (and 1 other member)".into(),
        n => format!(" (and {n} other members)"),
    };
    bail!(
        "the embed area holds {kind} at {first}{more}, which coreos-installer never writes there \
         (only {CONFIG_PATH} and {NETWORK_DIR}/<keyfile>): the kernel unpacks it into the live \
         system's initramfs at boot, where Ignition or systemd may use it, and `iso show` would \
         not show it; refusing a tampered image: start from a pristine ISO"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(names: &[&str]) -> BTreeMap<String, Vec<u8>> {
        names.iter().map(|n| (n.to_string(), Vec::new())).collect()
    }

    fn dirs(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn only_coreos_installers_members_pass() {
        let net = "etc/coreos-firstboot-network/eth0.nmconnection";
        let coreos = dirs(&["etc", NETWORK_DIR]);
        assert!(check(&files(&[CONFIG_PATH, net]), &coreos).is_ok());
        assert!(check(&files(&[]), &[]).is_ok());
        for (f, d, want) in [
            (
                vec![CONFIG_PATH, "usr/lib/ignition/base.d/00-evil.ign"],
                vec![
                    "usr",
                    "usr/lib",
                    "usr/lib/ignition",
                    "usr/lib/ignition/base.d",
                ],
                "a file at usr/lib/ignition/base.d/00-evil.ign (and 4 other members)",
            ),
            (
                vec!["etc/systemd/system/initrd.target.wants/evil.service"],
                vec![],
                "a file at etc/systemd/system/initrd.target.wants/evil.service, which",
            ),
            (
                vec!["etc/coreos-firstboot-network/a/b"],
                vec![],
                "a file at etc/coreos-firstboot-network/a/b,",
            ),
            (vec!["etc/coreos-firstboot-network"], vec![], "a file at"),
            (vec!["etc/coreos-firstboot-network/"], vec![], "a file at"),
            (vec!["config.ign.d"], vec![], "a file at config.ign.d,"),
            (
                vec![],
                vec!["etc/coreos-firstboot-network/x"],
                "a directory at",
            ),
            (vec![], vec!["run"], "a directory at run,"),
        ] {
            let e = check(&files(&f), &dirs(&d)).unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
            assert!(e.contains("start from a pristine ISO"), "{e}");
        }
    }
}
