//! The units kubelet's start waits on (review 30 r30a F1), and the names
//! of units the OS or the MCO ships: a unit file at such a name replaces
//! that unit whole on the node (the MCO merges a MachineConfig's unit over
//! its template by name; `/etc/systemd/system` hides the OS's
//! `/usr/lib/systemd/system`), and plan cannot see what the OS's units
//! expect of it (chrony-wait.service `Requires=`/`After=chronyd.service`).

/// The units kubelet's start needs, and why: the MCO's templates,
/// 4.14..main (kubelet.service, kubelet-dependencies.target and the units
/// it `Wants=`, the units the MCO enables `RequiredBy=`/`WantedBy=`
/// kubelet-dependencies.target or orders `Before=` it, kubelet.service or
/// crio.service on any platform, and what those `Requires=`), and the OS's
/// units those wait on (chrony 4.3's chrony-wait.service,
/// NetworkManager 1.42's NetworkManager-wait-online.service, nfs-utils'
/// rpc-statd.service, openvswitch's units). A target gets `After=` on
/// what it wants or requires: a start that hangs holds kubelet back.
pub const NEEDED: &[(&str, &str)] = &[
    ("kubelet.service", "it is kubelet's unit"),
    ("crio.service", "kubelet.service Requires= it"),
    (
        "kubelet-dependencies.target",
        "kubelet.service Requires= it",
    ),
    ("basic.target", "kubelet-dependencies.target Requires= it"),
    (
        "network-online.target",
        "kubelet-dependencies.target Requires= it",
    ),
    ("sysinit.target", "basic.target Requires= it"),
    (
        "kubelet-auto-node-size.service",
        "kubelet-dependencies.target requires it (its RequiredBy=)",
    ),
    ("multi-user.target", "it pulls kubelet.service in at boot"),
    ("default.target", "it is the boot target"),
    ("kubens.service", "kubelet.service starts after it"),
    (
        "ostree-finalize-staged.service",
        "kubelet.service starts after it",
    ),
    (
        "NetworkManager-wait-online.service",
        "kubelet-dependencies.target waits on it",
    ),
    (
        "crio-wipe.service",
        "kubelet-dependencies.target waits on it",
    ),
    (
        "rpc-statd.service",
        "kubelet-dependencies.target waits on it",
    ),
    (
        "chrony-wait.service",
        "kubelet-dependencies.target waits on it",
    ),
    (
        "disable-mglru.service",
        "kubelet-dependencies.target waits on it",
    ),
    (
        "machine-config-daemon-firstboot.service",
        "kubelet-dependencies.target waits on it",
    ),
    // The OS's units those wait on.
    ("chronyd.service", "chrony-wait.service Requires= it"),
    (
        "NetworkManager.service",
        "NetworkManager-wait-online.service Requires= it",
    ),
    (
        "dbus.service",
        "NetworkManager.service (Type=dbus) waits on it",
    ),
    ("dbus-broker.service", "it is the OS's dbus.service"),
    ("dbus.socket", "NetworkManager.service waits on dbus"),
    ("rpcbind.socket", "rpc-statd.service Requires= it"),
    ("rpcbind.service", "rpc-statd.service waits on rpcbind"),
    // The MCO's units kubelet-dependencies.target (or kubelet.service,
    // crio.service) gets by their [Install] or ordering, per platform.
    (
        "ovs-configuration.service",
        "kubelet-dependencies.target requires it (the MCO's RequiredBy=)",
    ),
    (
        "node-valid-hostname.service",
        "kubelet-dependencies.target wants it (the MCO's WantedBy=)",
    ),
    (
        "nodeip-configuration.service",
        "kubelet-dependencies.target requires it (the MCO's RequiredBy=)",
    ),
    (
        "nodeip-configuration-vsphere-upi.service",
        "kubelet-dependencies.target requires it (the MCO's RequiredBy=)",
    ),
    (
        "mtu-migration.service",
        "kubelet-dependencies.target wants it (the MCO's WantedBy=)",
    ),
    (
        "nmstate-configuration.service",
        "the MCO orders it Before=kubelet-dependencies.target",
    ),
    (
        "kubelet-cleanup.service",
        "the MCO orders it Before=kubelet.service",
    ),
    (
        "wait-for-ipsec-connect.service",
        "the MCO orders it Before=kubelet-dependencies.target",
    ),
    (
        "wait-for-primary-ip.service",
        "the MCO orders it Before=kubelet-dependencies.target",
    ),
    (
        "wait-for-node-ip.service",
        "the MCO orders it Before=kubelet-dependencies.target",
    ),
    ("ipsec.service", "the MCO orders it Before=crio.service"),
    (
        "openvswitch-ipsec.service",
        "the MCO orders it Before=crio.service",
    ),
    (
        "aws-kubelet-nodename.service",
        "the MCO orders it Before=kubelet-dependencies.target",
    ),
    (
        "aws-kubelet-providerid.service",
        "the MCO orders it Before=kubelet-dependencies.target",
    ),
    (
        "aws-update-dns.service",
        "kubelet-dependencies.target requires it (the MCO's RequiredBy=)",
    ),
    (
        "azure-update-dns.service",
        "kubelet-dependencies.target requires it (the MCO's RequiredBy=)",
    ),
    (
        "gcp-hostname.service",
        "kubelet-dependencies.target requires it (the MCO's RequiredBy=)",
    ),
    (
        "gcp-update-dns.service",
        "kubelet-dependencies.target requires it (the MCO's RequiredBy=)",
    ),
    (
        "openstack-kubelet-nodename.service",
        "kubelet-dependencies.target wants it (the MCO's WantedBy=)",
    ),
    (
        "vsphere-hostname.service",
        "the MCO orders it Before=kubelet-dependencies.target",
    ),
    (
        "alibaba-kubelet-nodename.service",
        "the MCO orders it Before=kubelet-dependencies.target",
    ),
    (
        "openshift-azure-routes.path",
        "kubelet-dependencies.target requires it (the MCO's RequiredBy=)",
    ),
    (
        "openshift-alibabacloud-routes.path",
        "the MCO orders it before kubelet's start",
    ),
    // What those require.
    (
        "openvswitch.service",
        "ovs-configuration.service Requires= it",
    ),
    ("ovsdb-server.service", "openvswitch.service Requires= it"),
    ("ovs-vswitchd.service", "openvswitch.service Requires= it"),
    (
        "nmstate.service",
        "nmstate-configuration.service Requires= it",
    ),
    ("afterburn.service", "the MCO's hostname units Require= it"),
    ("vmtoolsd.service", "the MCO's vSphere units Require= it"),
];

/// The other units the MCO's templates write, 4.14..main (a
/// MachineConfig's unit of the same name replaces the template's).
const MCO_UNITS: [&str; 19] = [
    "NetworkManager-clean-initrd-state.service",
    "afterburn-hostname.service",
    "corosync.service",
    "docker.socket",
    "firstboot-osupdate.target",
    "gcp-routes.service",
    "ha-00-directories.service",
    "ha-01-enable-services.service",
    "machine-config-daemon-pull.service",
    "on-prem-resolv-prepender.path",
    "on-prem-resolv-prepender.service",
    "openshift-alibabacloud-routes.service",
    "openshift-azure-routes.service",
    "openshift-gcp-routes.service",
    "openstack-hostname.service",
    "pivot.service",
    "powervs-hostname.service",
    "rpm-ostreed.service",
    "wait-for-br-ex-up.service",
];

/// Name prefixes of the units RHCOS's packages ship that boot orders
/// before kubelet's start (sysinit.target, basic.target, sockets.target,
/// network-online.target) or that the MCO's units need: systemd's own,
/// D-Bus, NetworkManager, ostree and rpm-ostree, Ignition and CoreOS's
/// first-boot units, dracut, storage (LVM, multipath, iSCSI, NFS, RPC),
/// audit, SELinux, time, Open vSwitch, cri-o, kubelet, the MCO, and the
/// consoles.
const OS_PREFIXES: [&str; 48] = [
    "systemd-",
    "dbus",
    "NetworkManager",
    "nm-",
    "network",
    "ostree-",
    "rpm-ostree",
    "ignition-",
    "coreos-",
    "rhcos-",
    "dracut-",
    "initrd-",
    "kmod-",
    "ldconfig",
    "import-state",
    "selinux",
    "auditd",
    "audit-",
    "lvm2-",
    "dm-event",
    "multipathd",
    "iscsi",
    "nfs",
    "rpc",
    "gssproxy",
    "blk-availability",
    "clevis",
    "stratisd",
    "mdmonitor",
    "chrony",
    "ntpd",
    "ovs",
    "openvswitch",
    "nmstate",
    "crio",
    "conmon",
    "kubelet",
    "kubens",
    "machine-config-",
    "mco-",
    "afterburn",
    "zincati",
    "bootupd",
    "sshd",
    "getty",
    "serial-getty",
    "emergency",
    "rescue",
];

/// Names the units of [`NEEDED`] (transitively) order themselves after,
/// require, want, bind to or conflict with in the texts the OS's packages
/// and the MCO's templates ship, that [`NEEDED`] and [`OS_PREFIXES`] do not
/// cover (review 32 r32a F3): a pool's unit at one of them is waited on by
/// a unit kubelet's start waits on (chronyd.service `After=sntp.service`:
/// a `sleep infinity` there held kubelet under systemd 252). Some the OS
/// ships (its unit would be replaced), most it does not (any unit of the
/// pool's own there joins the path). Their enablement and mask are judged
/// as [`NEEDED`]'s are (review 45 r45a F1: kdump.service enabled with a
/// dump target that never answers held ovs-configuration's start, and
/// kubelet's, for good).
pub const WAITED_ON: &[(&str, &str)] = &[
    (
        "sntp.service",
        "chrony's chronyd.service orders itself After= it",
    ),
    (
        "ntpdate.service",
        "chrony's chronyd.service orders itself After= it",
    ),
    (
        "ntpd.service",
        "chrony's chronyd.service orders itself After= it and Conflicts= it",
    ),
    (
        "systemd-timesyncd.service",
        "chrony's chronyd.service Conflicts= it",
    ),
    (
        "network.service",
        "the MCO's ovs-configuration.service, mtu-migration.service and \
         nmstate-configuration.service order themselves After= it",
    ),
    (
        "kdump.service",
        "the MCO's ovs-configuration.service orders itself After= it",
    ),
    (
        "vgauthd.service",
        "open-vm-tools' vmtoolsd.service Requires= it",
    ),
    ("cri-o.service", "it is crio.service's Alias="),
    (
        "rpc-statd-notify.service",
        "nfs-utils' rpc-statd.service Wants= it",
    ),
    (
        "ovs-delete-transient-ports.service",
        "Open vSwitch's ovsdb-server.service Wants= it",
    ),
    (
        "ostree-finalize-staged-hold.service",
        "ostree-finalize-staged.service Wants= it",
    ),
];

/// Why a unit file at `name` would replace a unit the OS or the MCO ships,
/// or join kubelet's start path by the OS's own ordering (none: a name
/// plan does not know of theirs). The OS's unit list is not plan's to
/// read: [`OS_PREFIXES`] names its families, and a unit of the pool's own
/// should carry a name of the team's.
pub fn shipped(name: &str) -> Option<String> {
    let of = if NEEDED.iter().any(|(n, _)| *n == name) || MCO_UNITS.contains(&name) {
        "a unit the OS or the MCO ships (kubelet's start or the MCO's templates name it)"
    } else if let Some((_, by)) = WAITED_ON.iter().find(|(n, _)| same_unit(n, name)) {
        return Some(format!(
            "a unit at this name is one kubelet's start waits on ({by}): a start of it that \
             fails or never ends holds kubelet back, and plan cannot judge what the OS's units \
             expect of it; give your unit a name of your own"
        ));
    } else if OS_PREFIXES.iter().any(|p| name.starts_with(p)) {
        "a name of the OS's units (its prefix is one of systemd's, D-Bus's, NetworkManager's, \
         ostree's, the MCO's, ...)"
    } else {
        return None;
    };
    Some(format!(
        "a unit file at the name of {of} replaces that unit whole, and plan cannot read what the \
         OS's units expect of it; leave the OS's unit as it is, or give your unit a name of \
         your own"
    ))
}

/// Refuse `prefix` as the team's own unit name prefix
/// (`--own-unit-prefix`) where it is not a unit name's start, or where it
/// takes in a name plan knows the OS or the MCO use (`kube` would take in
/// kubelet.service): every unit at such a name would pass as the team's.
pub fn own_prefix(prefix: &str) -> anyhow::Result<()> {
    let unit_char = |c: char| c.is_ascii_alphanumeric() || ":-_.\\".contains(c);
    if prefix.is_empty() || !prefix.chars().all(unit_char) {
        anyhow::bail!(
            "--own-unit-prefix {prefix:?}: not the start of a unit name (letters, digits and \
             \":-_.\\\"); give your team's prefix, such as acme-"
        );
    }
    let known = (NEEDED.iter().map(|(n, _)| *n))
        .chain(MCO_UNITS)
        .chain(WAITED_ON.iter().map(|(n, _)| *n))
        .find(|n| n.starts_with(prefix))
        .or_else(|| {
            (OS_PREFIXES.iter().copied()).find(|p| p.starts_with(prefix) || prefix.starts_with(p))
        });
    if let Some(known) = known {
        anyhow::bail!(
            "--own-unit-prefix {prefix}: names of the OS's or the MCO's units start so \
             ({known}), which would pass as your team's; give a prefix of your own, such as \
             acme-"
        );
    }
    Ok(())
}

/// Whether a unit file at `file` defines `listed`: the same name, or the
/// template (`a@.service`) of a listed instance (`a@b.service`).
fn same_unit(listed: &str, file: &str) -> bool {
    listed == file
        || (listed.split_once('@'))
            .zip(file.split_once('@'))
            .is_some_and(|((lp, ls), (fp, fs))| lp == fp && fs.starts_with('.') && ls.ends_with(fs))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Review 30 r30a F1: chronyd.service (chrony-wait.service Requires=
    /// it), NetworkManager.service, the MCO's ovs-configuration.service
    /// and node-valid-hostname.service are on kubelet's start path; a
    /// unit file at an OS unit's name is the OS's, not the pool's.
    #[test]
    fn units_kubelet_s_start_waits_on_and_shipped_names() {
        for unit in [
            "chronyd.service",
            "NetworkManager.service",
            "ovs-configuration.service",
            "node-valid-hostname.service",
            "openvswitch.service",
        ] {
            assert!(NEEDED.iter().any(|(n, _)| *n == unit), "{unit}");
        }
        for unit in [
            "chronyd.service",
            "rpm-ostreed.service",
            "systemd-tmpfiles-setup.service",
            "dbus-broker.service",
            "NetworkManager-dispatcher.service",
            "sshd.service",
        ] {
            assert!(shipped(unit).is_some(), "{unit}");
        }
        for unit in ["gpu-setup.service", "team-x.service", "x.service"] {
            assert_eq!(shipped(unit), None, "{unit}");
        }
        // Review 32 r32a F3: names the OS's units on kubelet's path wait
        // on, shipped or not.
        for unit in [
            "sntp.service",
            "kdump.service",
            "vgauthd.service",
            "cri-o.service",
        ] {
            let why = shipped(unit).unwrap_or_default();
            assert!(why.contains("kubelet's start waits on"), "{unit}: {why}");
        }
        assert!(same_unit("a@b.service", "a@.service"));
        assert!(!same_unit("a@b.service", "a@.socket"));
        assert!(!same_unit("a.service", "b.service"));
        // Every entry once.
        let mut names: Vec<&str> = NEEDED.iter().map(|(n, _)| *n).collect();
        names.extend(MCO_UNITS);
        names.extend(WAITED_ON.iter().map(|(n, _)| *n));
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    /// A unit file at an OS unit's name is judged as the OS's unit, its
    /// drop-ins with it (`kubelet_start::dependents`); at a name of the
    /// team's own, by its text.
    #[test]
    fn a_unit_file_at_a_shipped_name_is_not_the_pool_s() {
        let root = tempfile::tempdir().unwrap();
        let mut files = std::collections::BTreeMap::new();
        for (path, text) in [
            (
                "/etc/systemd/system/sshd.service",
                "[Service]\nType=oneshot\nExecStart=/bin/sleep infinity\n",
            ),
            (
                "/etc/systemd/system/sshd.service.d/x.conf",
                "[Service]\nNice=1\n",
            ),
            (
                "/etc/systemd/system/gpu.service",
                "[Service]\nType=oneshot\nTimeoutStartSec=5min\nExecStart=/bin/sleep infinity\n",
            ),
        ] {
            let at = root.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
            files.insert(path.to_string(), 1);
        }
        let d = super::super::kubelet_start::dependents(root.path(), &files, &["gpu".into()]);
        let judged: Vec<&str> = d.keys().map(String::as_str).collect();
        assert_eq!(
            judged,
            [
                "/etc/systemd/system/sshd.service",
                "/etc/systemd/system/sshd.service.d/x.conf"
            ]
        );
        assert!(
            d["/etc/systemd/system/sshd.service"]
                .1
                .contains("replaces that unit whole")
        );
    }

    /// A prefix of the team's must not take in the names plan knows the
    /// OS's or the MCO's units by, nor be anything but a unit name's start.
    #[test]
    fn the_team_s_prefix_is_its_own() {
        for ok in ["acme-", "gpu-team.", "x"] {
            assert!(own_prefix(ok).is_ok(), "{ok}");
        }
        for (bad, said) in [
            ("", "not the start of a unit name"),
            ("acme/", "not the start of a unit name"),
            ("acme ", "not the start of a unit name"),
            ("kube", "(kubelet.service)"),
            ("sntp", "(sntp.service)"),
            ("wait-for-br", "(wait-for-br-ex-up.service)"),
            ("systemd-foo-", "(systemd-)"),
            ("openv", "names of the OS's or the MCO's units start so"),
        ] {
            let err = format!("{:#}", own_prefix(bad).unwrap_err());
            assert!(err.contains(said), "{bad}: {err}");
        }
    }
}
