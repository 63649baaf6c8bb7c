//! The inputs of the OS's boot-time mechanisms (review 30 r30a F3, F4):
//! files that programs of the boot read as configuration that makes
//! mounts, links, files, units or users, loads modules or runs programs,
//! or overlays /usr and /etc. They are plain files to the disruption
//! policy, but what they make is in place before kubelet starts, at every
//! boot: an /etc/fstab bind over our wrapper (`x-systemd.before=
//! kubelet.service`), a tmpfs over /usr/local/bin, a device that never
//! appears (local-fs.target fails, so does the boot), a tmpfiles.d `L+`
//! line replacing the wrapper with a link, a system extension merged over
//! /usr (the PR's /usr/bin/kubelet). Plan cannot judge what they do to
//! kubelet's start, so a change of any of them is refused whatever the
//! policy says, and so is a change of the enablement or mask of the OS
//! units that put such content in place ([`BOOT_UNITS`]).
//!
//! Where the list comes from: systemd 252's own search paths, as its man
//! pages and binaries give them (`tmpfiles.d(5)`, `sysusers.d(5)`,
//! `binfmt.d(5)`, `modules-load.d(5)`, `systemd.preset(5)`,
//! `systemd.network(5)`/`systemd.netdev(5)` and udev's `.link` files in the
//! same directories, `repart.d(5)`, `systemd-sysext(8)`, `fstab(5)` with
//! `systemd-fstab-generator(8)`, `crypttab(5)`, `veritytab(5)`,
//! `integritytab(5)`, `systemd-rc-local-generator(8)`, the sysv generator;
//! `strings` of libsystemd-shared-252, systemd-udevd and the generators),
//! kmod's `modprobe.d(5)`, udev's rules and hwdb directories (`udev(7)`,
//! each under every directory of [`SYSTEMD_ROOTS`]: CONF_PATHS), newer
//! systemd's confexts (`systemd-confext`, 254+: RHEL 10), and dracut's
//! configuration (read when the node rebuilds its initramfs), and
//! `sysctl.d(5)`: kernel settings the kernel arguments plan refuses set
//! as well (review 33 r33a F2). Left out: `environment.d(5)` (the user
//! manager's). system generators and the manager's
//! configuration are `kubelet_unit`'s; unit directories `kubelet_start`'s.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde_json::Value;

use super::Side;
use crate::cli::render::merge_inputs::{SYSTEMD_ROOTS, node_path};

/// Directories, under each of [`SYSTEMD_ROOTS`] (`/etc`, `/run`,
/// `/usr/local/lib`, `/usr/lib`, `/lib`), that a boot-time program reads,
/// and what it makes of them.
const UNDER_ROOTS: [(&str, &str); 13] = [
    (
        "sysctl.d",
        "systemd-sysctl sets the kernel settings it names at every boot, before sysinit.target (review 33 r33a F2: `vm.nr_hugepages` the size of the node's memory leaves init and kubelet none; `kernel.modules_disabled`, `vm.overcommit_memory`, `kernel.pid_max` keep them from starting); set sysctls with the Node Tuning Operator's Tuned profiles",
    ),
    (
        "tmpfiles.d",
        "systemd-tmpfiles creates, replaces and removes files, links and directories by it at every boot, before kubelet (an `L+` line can replace the wrapper with a link)",
    ),
    (
        "sysusers.d",
        "systemd-sysusers creates users and groups by it at boot",
    ),
    (
        "binfmt.d",
        "systemd-binfmt registers interpreters by it at boot, which the kernel then runs for matching programs (kubelet's too)",
    ),
    (
        "modules-load.d",
        "systemd-modules-load loads kernel modules by it at boot",
    ),
    (
        "modprobe.d",
        "kmod reads it at every module load (an `install` line runs a command as root instead, a `blacklist` keeps a module out)",
    ),
    (
        "udev/rules.d",
        "systemd-udevd applies its rules at boot, which start units (`SYSTEMD_WANTS`), run programs and make links",
    ),
    (
        "udev/hwdb.d",
        "systemd-hwdb compiles it into the properties udev's rules act on",
    ),
    (
        "systemd/system-preset",
        "systemctl preset enables and disables units by it (the first boot's preset-all)",
    ),
    (
        "systemd/network",
        "udev renames and sets up network links by its .link files at boot, and systemd-networkd reads its .network and .netdev files",
    ),
    (
        "repart.d",
        "systemd-repart creates partitions and file systems by it at boot",
    ),
    (
        "extensions",
        "systemd-sysext merges the system extensions there over /usr at every boot (systemd-sysext.service, before sysinit.target): a /usr/bin/kubelet or unit files of its own",
    ),
    (
        "confexts",
        "systemd-confext merges the configuration extensions there over /etc at boot",
    ),
];

/// Paths, by [`node_path`]'s spelling, that a boot-time program reads, and
/// what it makes of them.
const PATHS: [(&str, &str); 25] = [
    (
        "/etc/sysctl.conf",
        "systemd-sysctl sets the kernel settings it names at every boot, before sysinit.target; set sysctls with the Node Tuning Operator's Tuned profiles",
    ),
    (
        "/etc/fstab",
        "systemd-fstab-generator makes mount units of it at every boot and daemon-reload, which can cover the wrapper or kubelet's programs, or keep the boot (and kubelet) from starting",
    ),
    (
        "/etc/crypttab",
        "systemd-cryptsetup-generator makes units of it at every boot, which local-fs.target can wait on",
    ),
    (
        "/etc/veritytab",
        "systemd-veritysetup-generator makes units of it at every boot",
    ),
    (
        "/etc/integritytab",
        "systemd-integritysetup-generator makes units of it at every boot",
    ),
    (
        "/etc/rc.local",
        "systemd-rc-local-generator makes rc-local.service of it, which runs it as root at every boot",
    ),
    (
        "/etc/rc.d",
        "RHEL's systemd-rc-local-generator (rc.d/rc.local) and systemd-sysv-generator (rc.d/init.d) make units of it at every boot",
    ),
    (
        "/etc/init.d",
        "systemd-sysv-generator makes units of its scripts at every boot",
    ),
    (
        "/etc/udev",
        "systemd-udevd reads it (rules.d, hwdb.d, hwdb.bin, udev.conf) at boot",
    ),
    (
        "/var/lib/extensions",
        "systemd-sysext merges the system extensions there over /usr at every boot (systemd-sysext.service, before sysinit.target): a /usr/bin/kubelet or unit files of its own",
    ),
    (
        "/var/lib/extensions.mutable",
        "systemd-sysext's mutable mode overlays it on /usr",
    ),
    (
        "/var/lib/confexts",
        "systemd-confext merges the configuration extensions there over /etc at boot",
    ),
    (
        "/etc/dracut.conf",
        "dracut builds the node's initramfs by it (which runs before the root file system)",
    ),
    (
        "/etc/dracut.conf.d",
        "dracut builds the node's initramfs by it (which runs before the root file system)",
    ),
    (
        "/usr/lib/dracut",
        "dracut builds the node's initramfs from its modules and configuration",
    ),
    ("/etc/modprobe.conf", "kmod reads it at every module load"),
    (
        "/etc/ld.so.preload",
        "the dynamic loader loads the libraries it names into every program it starts, kubelet and the wrapper's children included",
    ),
    (
        "/etc/ld.so.cache",
        "the dynamic loader finds libraries by it, so it can point any program, kubelet included, at a library of the change's",
    ),
    (
        "/etc/selinux",
        "PID 1 loads the SELinux policy it names at boot, and freezes when an enforcing one fails to load",
    ),
    (
        "/etc/containers/systemd",
        "podman's quadlet generator makes units of its files at every boot and daemon-reload, ordered as they say (before kubelet)",
    ),
    (
        "/run/containers/systemd",
        "podman's quadlet generator makes units of its files at every boot and daemon-reload",
    ),
    (
        "/etc/NetworkManager/dispatcher.d",
        "NetworkManager runs its scripts as root when the network comes up (pre-up.d before it does)",
    ),
    (
        "/etc/ld.so.conf",
        "ldconfig and the dynamic loader take libraries from the directories it names, before the system's",
    ),
    (
        "/etc/ld.so.conf.d",
        "ldconfig and the dynamic loader take libraries from the directories it names, before the system's",
    ),
    (
        "/etc/depmod.d",
        "depmod orders the modules kmod loads by it",
    ),
];

/// OS units that put content of such files in place, or make mounts and
/// partitions, at boot: a change of their enablement or mask is refused
/// as a change of the files is (`systemd-sysext.service` merges
/// /var/lib/extensions only when enabled).
const BOOT_UNITS: [&str; 6] = [
    "systemd-sysext.service",
    "systemd-confext.service",
    "systemd-repart.service",
    "systemd-tmpfiles-setup.service",
    "systemd-binfmt.service",
    "systemd-modules-load.service",
];

/// Why a boot-time program reads what is at `path` (in any spelling,
/// [`node_path`]) as configuration plan cannot judge: at or under one of
/// its paths, or a directory (or link) above one, which points it
/// elsewhere.
pub(super) fn boot_input(path: &str) -> Option<String> {
    let path = node_path(path);
    let path = path.as_str();
    let related = |dir: &str| {
        path == dir
            || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
            || (path != "/" && dir.strip_prefix(path).is_some_and(|r| r.starts_with('/')))
    };
    let under_roots = SYSTEMD_ROOTS.iter().flat_map(|root| {
        UNDER_ROOTS
            .iter()
            .map(move |(dir, why)| (format!("{root}/{dir}"), *why))
    });
    let paths = PATHS.iter().map(|(p, why)| (p.to_string(), *why));
    under_roots
        .chain(paths)
        .find(|(dir, _)| related(dir))
        .map(|(dir, why)| {
            if path == dir || path.starts_with(&format!("{dir}/")) {
                why.to_string()
            } else {
                format!("it is above {dir}, where {why}")
            }
        })
}

/// Each unit of [`BOOT_UNITS`] the MachineConfigs name: its merged
/// `enabled` (None: left as it is) and `mask`, in the MCO's merge order.
fn boot_units(configs: &[&Value]) -> BTreeMap<String, (Option<bool>, bool)> {
    let mut out = BTreeMap::new();
    let order = crate::cli::render::layout::merge_order(configs)
        .unwrap_or_else(|_| (0..configs.len()).collect());
    for mc in order.into_iter().filter_map(|i| configs.get(i)) {
        let units = mc.pointer("/spec/config/systemd/units");
        for u in units.and_then(Value::as_array).into_iter().flatten() {
            let name = u.get("name").and_then(Value::as_str).unwrap_or_default();
            if !BOOT_UNITS.contains(&name) {
                continue;
            }
            let at: &mut (Option<bool>, bool) = out.entry(name.to_string()).or_default();
            if let Some(e) = u.get("enabled").and_then(Value::as_bool) {
                at.0 = Some(e);
            }
            if let Some(m) = u.get("mask").and_then(Value::as_bool) {
                at.1 = m;
            }
        }
    }
    out
}

/// What a pool of one render gives the boot: its boot inputs (node path →
/// what is written there) and the enablement of [`BOOT_UNITS`].
#[derive(Debug, Default, PartialEq, Eq)]
struct Boot {
    files: BTreeMap<String, u64>,
    units: BTreeMap<String, (Option<bool>, bool)>,
}

fn of(configs: &[&Value], files: &BTreeMap<String, u64>) -> Boot {
    Boot {
        files: (files.iter())
            .filter(|(p, _)| boot_input(p).is_some())
            .map(|(p, id)| (p.clone(), *id))
            .collect(),
        units: boot_units(configs),
    }
}

fn of_side(side: &Side, pool: &str) -> Boot {
    let Some(r) = side.cache.get(pool) else {
        return Boot::default();
    };
    let configs: Vec<&Value> = (r.configs.iter())
        .filter_map(|&i| side.render.machineconfigs.get(i))
        .collect();
    of(&configs, &r.files)
}

/// Refuse, in pool `pool`, a change between the two renders of a boot
/// input (written, changed or removed) or of a boot unit's enablement.
pub fn check((from, to): (&Side, &Side), pool: &str) -> Result<()> {
    let (before, after) = (of_side(from, pool), of_side(to, pool));
    judge((&from.render.name, &to.render.name), pool, &before, &after)
}

fn judge((from, to): (&str, &str), pool: &str, before: &Boot, after: &Boot) -> Result<()> {
    let refuse = |what: String| -> Result<()> {
        bail!(
            "pool {pool}: kubelet may not start: {what}; plan cannot price what the boot makes \
             of it, whatever the disruption policy says; plan the change without it, and apply \
             it outside plan's cheap path, reviewed by hand"
        )
    };
    for path in before.files.keys().chain(after.files.keys()) {
        if before.files.get(path) != after.files.get(path) {
            let why = boot_input(path).unwrap_or_default();
            return refuse(format!("{path} changes from {from} to {to}: {why}"));
        }
    }
    for unit in before.units.keys().chain(after.units.keys()) {
        let get = |b: &Boot| b.units.get(unit).copied().unwrap_or_default();
        let ((eb, mb), (ea, ma)) = (get(before), get(after));
        let shown = |e: Option<bool>| e.map_or("unset".to_string(), |e| e.to_string());
        if eb != ea || mb != ma {
            return refuse(format!(
                "unit {unit} (it puts files, mounts or modules in place at boot): enabled is {} \
                 and mask {mb} in {from}, enabled {} and mask {ma} in {to}",
                shown(eb),
                shown(ea)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn boot_inputs_in_every_spelling() {
        for path in [
            "/etc/fstab",
            "/etc/crypttab",
            "/etc/veritytab",
            "/etc/integritytab",
            "/etc/tmpfiles.d/gpu.conf",
            "/usr/lib/tmpfiles.d/gpu.conf",
            "/run/tmpfiles.d/gpu.conf",
            "/usr/local/lib/tmpfiles.d/gpu.conf",
            // CoreOS's /usr/local is /var/usrlocal.
            "/var/usrlocal/lib/tmpfiles.d/gpu.conf",
            "/var/usrlocal/lib/extensions/gpu/usr/bin/kubelet",
            "/var/lib/extensions/gpu-tools/usr/bin/kubelet",
            "/var/lib/extensions/gpu.raw",
            "/etc/extensions/gpu.raw",
            "/run/extensions/gpu",
            "/etc/confexts/x.raw",
            "/var/lib/confexts/x",
            "/etc/sysusers.d/x.conf",
            "/etc/binfmt.d/x.conf",
            "/etc/modules-load.d/x.conf",
            "/etc/modprobe.d/x.conf",
            "/usr/lib/modprobe.d/x.conf",
            "/etc/udev/rules.d/99-x.rules",
            "/etc/udev/hwdb.d/x.hwdb",
            "/etc/udev/udev.conf",
            "/usr/lib/udev/rules.d/99-x.rules",
            "/etc/systemd/system-preset/90-x.preset",
            "/etc/systemd/network/10-x.link",
            "/etc/repart.d/x.conf",
            "/etc/rc.d/rc.local",
            "/etc/rc.local",
            "/etc/init.d/x",
            "/etc/dracut.conf.d/x.conf",
            "/etc/ld.so.preload",
            "/etc/ld.so.conf.d/gpu.conf",
            "/etc/ld.so.cache",
            "/etc/selinux/config",
            "/etc/containers/systemd/gpu.container",
            "/etc/NetworkManager/dispatcher.d/pre-up.d/10-x",
            // Review 33 r33a F2.
            "/etc/sysctl.d/99-gpu-hugepages.conf",
            "/etc/sysctl.conf",
            "/usr/lib/sysctl.d/99-x.conf",
            "/var/usrlocal/lib/sysctl.d/99-x.conf",
            // A directory or link above one points the program elsewhere.
            "/etc/udev",
            "/var/lib",
            "/var/usrlocal/lib",
            "/etc/tmpfiles.d",
            "/etc//fstab",
        ] {
            assert!(boot_input(path).is_some(), "{path}");
        }
        for path in [
            "/etc/fstab.d/x",
            "/etc/gpu/kubelet-shim",
            "/etc/systemd/system/x.service",
            "/var/lib/extensionsx",
            "/usr/local/bin/kubelet-labeler-wrapper.x86_64",
            "/etc/environment.d/x.conf",
            "/",
        ] {
            assert_eq!(boot_input(path), None, "{path}");
        }
        let why = boot_input("/etc/fstab").unwrap_or_default();
        assert!(why.starts_with("systemd-fstab-generator makes mount units"));
        let above = boot_input("/var/lib").unwrap_or_default();
        assert!(
            above.starts_with("it is above /var/lib/extensions, where"),
            "{above}"
        );
    }

    fn mc(name: &str, units: Value) -> Value {
        json!({"metadata": {"name": name,
               "labels": {"machineconfiguration.openshift.io/role": "worker-gpu"}},
               "spec": {"config": {"ignition": {"version": "3.4.0"},
                                   "systemd": {"units": units}}}})
    }

    #[test]
    fn a_boot_input_written_changed_or_removed_is_refused() {
        let files = |id: Option<u64>| {
            let mut f = BTreeMap::from([("/etc/gpu/kubelet-shim".to_string(), 7)]);
            if let Some(id) = id {
                f.insert("/etc/fstab".into(), id);
            }
            of(&[], &f)
        };
        for (b, a) in [(None, Some(1)), (Some(1), Some(2)), (Some(1), None)] {
            let err = judge(("base", "pr"), "p", &files(b), &files(a))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("pool p: kubelet may not start: /etc/fstab changes from base to pr: systemd-fstab-generator")
                    && err.contains("reviewed by hand"),
                "{err}"
            );
        }
        judge(("base", "pr"), "p", &files(Some(1)), &files(Some(1))).unwrap();
        // Other files are the policy's.
        judge(
            ("base", "pr"),
            "p",
            &files(None),
            &of(&[], &BTreeMap::new()),
        )
        .unwrap();
    }

    #[test]
    fn a_boot_unit_s_enablement_is_refused() {
        let on = mc(
            "60-x",
            json!([{"name": "systemd-sysext.service", "enabled": true}]),
        );
        let none = of(&[], &BTreeMap::new());
        let err = judge(("base", "pr"), "p", &none, &of(&[&on], &BTreeMap::new()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unit systemd-sysext.service") && err.contains("enabled true"),
            "{err}"
        );
        // A later MachineConfig naming it without the field leaves it;
        // other units are the policy's.
        let off = mc(
            "61-x",
            json!([{"name": "systemd-sysext.service"}, {"name": "x.service", "enabled": true}]),
        );
        let both = of(&[&on, &off], &BTreeMap::new());
        assert!(judge(("base", "pr"), "p", &of(&[&on], &BTreeMap::new()), &both).is_ok());
        let x = mc("60-x", json!([{"name": "x.service", "enabled": true}]));
        judge(("base", "pr"), "p", &none, &of(&[&x], &BTreeMap::new())).unwrap();
    }
}
