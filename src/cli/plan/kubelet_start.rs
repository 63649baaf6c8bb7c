//! Whether kubelet starts at boot, judged as the node does (review 25
//! r25a F4): plan prices a change by the disruption policy, which says
//! what the MCO does to apply it, never whether kubelet comes up after.
//! A change that can keep kubelet.service from starting (the node goes
//! NotReady with nothing of ours running) is refused, whatever the policy
//! says:
//!
//! - the enablement (`enabled:`) or mask of a unit of [`NEEDED`] (or one
//!   they wait on, `start_units::WAITED_ON`: kdump.service): the MCO's
//!   kubelet.service (`enabled: true`, `WantedBy=multi-user.target` in
//!   every template, 4.14..main), what it `Requires=` (crio.service,
//!   kubelet-dependencies.target) and what those require, the boot target
//!   that pulls it in, and the units its start waits on (a start that
//!   fails or hangs holds kubelet back);
//! - a unit file, drop-in or dependency directory of one of them in any
//!   unit directory (`N.d`, `N.wants`, `N.requires`; the prefix drop-ins
//!   `a-.service.d`; the type-level `target.d`), and the files
//!   kubelet-auto-node-size.service (which kubelet-dependencies.target
//!   requires) runs or reads; kubelet.service's own unit, drop-ins and
//!   `service.d` are `kubelet_unit`'s (it prices a drop-in of our
//!   variables only);
//! - a kernel argument that changes which units start, runs something
//!   else as root at boot, or that plan does not know to leave the boot as
//!   it is ([`boot_changing`]: keys and values of an allow-list; the huge
//!   pages the pool reserves in all, [`hugepages_over`]).

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use serde_json::Value;

use super::Side;
use super::kargs::{boot_changing, hugepages_over, split_kargs};
use super::kubelet_unit;
// systemd's unit directories: the system manager's search path, as the
// wrapper reads it.
use crate::cli::render::merge_inputs::{above, at_or_in, node_path};
use crate::node::unit::search::SYSTEM_UNIT_PATH as UNIT_DIRS;

pub use super::start_units::NEEDED;

/// Files (and directories) a unit of [`NEEDED`] runs or reads, with the
/// unit: the programs, environment files and condition paths of the MCO's
/// units on kubelet's start path, as its templates write them
/// (templates/*/*/units, 4.14..main), the environment files and state of
/// the OS's units there, kubelet's own aside (`kubelet_unit`,
/// `cluster_unit`). Review 41 r41a F1: a
/// pool's `configure-ovs.sh` of `exec sleep infinity` held
/// ovs-configuration.service's start (a oneshot with no timeout) and
/// kubelet's with it, for good.
const NEEDED_FILES: &[(&str, &str)] = &[
    (
        "/usr/local/sbin/dynamic-system-reserved-calc.sh",
        "kubelet-auto-node-size.service",
    ),
    (
        "/etc/node-sizing-enabled.env",
        "kubelet-auto-node-size.service",
    ),
    // Review 44 r44a F2: its script reads the version with `jq` under
    // `set -e`: a file jq cannot parse failed the unit, RequiredBy=
    // kubelet.service, at every boot.
    (
        "/etc/node-sizing-version.json",
        "kubelet-auto-node-size.service",
    ),
    (
        "/usr/local/bin/configure-ovs.sh",
        "ovs-configuration.service",
    ),
    (
        "/usr/local/bin/nmstate-configuration.sh",
        "nmstate-configuration.service",
    ),
    ("/usr/local/bin/mtu-migration.sh", "mtu-migration.service"),
    ("/usr/local/bin/mco-hostname", "node-valid-hostname.service"),
    (
        "/usr/local/bin/configure-ip-forwarding.sh",
        "nodeip-configuration.service",
    ),
    (
        "/etc/default/nodeip-configuration",
        "nodeip-configuration.service",
    ),
    (
        "/usr/local/bin/wait-for-node-ip.sh",
        "wait-for-node-ip.service",
    ),
    (
        "/usr/local/bin/ipsec-connect-wait.sh",
        "wait-for-ipsec-connect.service",
    ),
    (
        "/usr/local/bin/wait-for-br-ex-up.sh",
        "wait-for-br-ex-up.service",
    ),
    (
        "/usr/local/bin/nm-clean-initrd-state.sh",
        "NetworkManager-clean-initrd-state.service",
    ),
    (
        "/usr/local/bin/aws-kubelet-nodename",
        "aws-kubelet-nodename.service",
    ),
    (
        "/usr/local/bin/aws-kubelet-providerid",
        "aws-kubelet-providerid.service",
    ),
    (
        "/usr/local/bin/openstack-kubelet-nodename",
        "openstack-kubelet-nodename.service",
    ),
    ("/usr/local/bin/update-dns-server", "aws-update-dns.service"),
    (
        "/usr/local/bin/vsphere-hostname.sh",
        "vsphere-hostname.service",
    ),
    // crio.service's proxy drop-in reads it without `-`: crio does not
    // start without it.
    ("/etc/mco/proxy.env", "crio.service"),
    // Review 43 r43a F3: its presence starts the MCO's first-boot
    // service (`ConditionPathExists=`, RequiredBy= kubelet.service), which
    // applies it as a MachineConfig and fails on anything else, at every
    // boot; the daemon's state and programs beside it.
    (
        "/etc/ignition-machine-config-encapsulated.json",
        "machine-config-daemon-firstboot.service",
    ),
    (
        "/etc/machine-config-daemon",
        "machine-config-daemon-firstboot.service",
    ),
    (
        "/etc/mcs-machine-config-content.json",
        "machine-config-daemon-firstboot.service",
    ),
    // Review 43 r43a F2: the OS's units on the start path read these as
    // `EnvironmentFile=` (a file systemd does not load fails their start)
    // and as their database.
    ("/etc/openvswitch", "ovsdb-server.service"),
    ("/var/lib/openvswitch", "ovs-vswitchd.service"),
    ("/etc/sysconfig/openvswitch", "ovsdb-server.service"),
    ("/etc/sysconfig/rpcbind", "rpcbind.service"),
    ("/etc/sysconfig/chronyd", "chronyd.service"),
    // What the MCO's scripts above read (a test checks its templates): the
    // OVN-Kubernetes bridge hints, an MTU migration under way, the
    // cluster's br-ex NMState config (a bad one takes the node's network
    // down with kubelet's start), the IPsec connection waited on.
    ("/etc/ovnk", "ovs-configuration.service"),
    ("/var/lib/ovnk", "ovs-configuration.service"),
    ("/etc/cno/mtu-migration", "mtu-migration.service"),
    ("/etc/nmstate/openshift", "nmstate-configuration.service"),
    (
        "/etc/ipsec.d/openshift.conf",
        "wait-for-ipsec-connect.service",
    ),
    // Review 44 r44a's leads: what the OS's units on the path read by
    // default. PID 1 puts locale.conf's LANG in every unit's environment
    // (one past exec's word limit fails every exec); dbus-broker refuses
    // a malformed policy, and resolves its user (as `User=` does) in the
    // user database; crio-wipe reads crio's state; rpc.statd nfs.conf.
    ("/etc/locale.conf", "kubelet.service"),
    ("/etc/dbus-1", "dbus-broker.service"),
    ("/etc/passwd", "dbus-broker.service"),
    ("/etc/group", "dbus-broker.service"),
    ("/etc/nsswitch.conf", "dbus-broker.service"),
    ("/var/lib/crio", "crio-wipe.service"),
    ("/etc/nfs.conf", "rpc-statd.service"),
    ("/etc/nfs.conf.d", "rpc-statd.service"),
    // Review 45 r45a F1: kdump's start (which ovs-configuration.service
    // waits on) reads its config and, for an ssh dump target, waits up to
    // 3 minutes on ssh, which reads its own config and root's (RHCOS's
    // /root is /var/roothome).
    ("/etc/kdump.conf", "kdump.service"),
    ("/etc/kdump", "kdump.service"),
    ("/etc/sysconfig/kdump", "kdump.service"),
    ("/etc/ssh/ssh_config", "kdump.service"),
    ("/etc/ssh/ssh_config.d", "kdump.service"),
    ("/root/.ssh", "kdump.service"),
    ("/var/roothome/.ssh", "kdump.service"),
    // `uninitialized` makes every boot a first boot to systemd (presets
    // applied again, ConditionFirstBoot= units run); kubelet reports it.
    ("/etc/machine-id", "kubelet.service"),
    // Review 46 r46a F1: auditd starts before sysinit.target; its config
    // can halt the node at boot (`admin_space_left_action = halt` above
    // the free space), its rules panic the kernel (`-f 2`).
    ("/etc/audit", "auditd.service"),
    ("/etc/sysconfig/auditd", "auditd.service"),
];

/// What kubelet reads at its start besides its command line and its
/// config file (review 33 r33a F1: the real kubelet exited on a PR's
/// `kubelet-ca.crt`, and under a PR's `/etc/hostname` NodeRestriction
/// refused the node's credentials the new Node), each with what is under
/// it. Not the pull secret, `/var/lib/kubelet/config.json`, which the
/// MCO's own policy prices (crio reloads it).
const KUBELET_READS: [(&str, &str); 4] = [
    (
        "/etc/kubernetes/kubelet-ca.crt",
        "kubelet.conf's clientCAFile: kubelet exits at its start when it holds no valid certificate",
    ),
    (
        "/etc/hostname",
        "the node's name: kubelet registers under the hostname, and NodeRestriction refuses the node's credentials any other Node",
    ),
    (
        "/var/lib/kubelet",
        "kubelet's root directory: its certificates, checkpoints and plugins' state, read at its start",
    ),
    (
        "/etc/kubernetes/kubelet-plugins",
        "kubelet's volumePluginDir: it runs each FlexVolume driver found there at its start",
    ),
];

/// The pull secret under kubelet's root directory, priced by the MCO's
/// policy.
const PULL_SECRET: &str = "/var/lib/kubelet/config.json";

/// What of a pool's render decides kubelet's start.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Start {
    /// Each path of [`needed_path`] with what is written there.
    paths: BTreeMap<String, u64>,
    /// Each unit the MachineConfigs name: its merged `enabled` (None:
    /// left as it is) and `mask` (judged for [`NEEDED`] and `dependents`).
    units: BTreeMap<String, (Option<bool>, bool)>,
    /// The unit files and drop-ins of other units whose dependencies name
    /// one of [`NEEDED`] ([`dependents`]): what is written there, and why.
    dependents: Dependents,
    /// The kernel arguments of [`boot_changing`] and [`hugepages_over`]
    /// (`LABEL ARG`, as given), and why.
    kargs: BTreeMap<String, String>,
    /// The services the pool writes in /etc/systemd/system (not
    /// templates) and the template instances it enables by name.
    services: usize,
}

/// The most services [`Start::services`] counts (review 40 r40a F1: one
/// template within its unit's budget, enabled as 3,000 instances, took
/// systemd 252's manager 80 s of CPU before kubelet started, and more
/// than linearly in their number).
const SERVICES_MAX: usize = 200;

/// Unit files and drop-ins (node path → what is written there, and the
/// line that names a unit of [`NEEDED`]).
pub type Dependents = BTreeMap<String, (u64, String)>;

/// Targets a service may pull in (`Wants=`) without reaching kubelet's
/// start: the boot target and the usual synchronization points.
const PLAIN_TARGETS: [&str; 8] = [
    "multi-user.target",
    "default.target",
    "network-online.target",
    "network.target",
    "nss-lookup.target",
    "time-sync.target",
    "remote-fs.target",
    "local-fs.target",
];

/// The unit files and drop-ins of `root` (a pool's laid-out tree, `files`
/// its layout's identities) of units other than [`NEEDED`] that can reach
/// kubelet's start ([`reaches_start`], [`outside_own`] with the name
/// prefixes `own` the team declares its own). What cannot be read as a
/// unit counts as reaching it.
pub fn dependents(
    root: &std::path::Path,
    files: &BTreeMap<String, u64>,
    own: &[String],
) -> Dependents {
    let mut out = Dependents::new();
    let defined = defined_units(files);
    let mut dropins = Vec::new();
    for (path, id) in files {
        let canon = node_path(path);
        if let Some(why) = shadowing_program(&canon, own) {
            out.insert(path.clone(), (*id, why));
            continue;
        }
        let Some(rest) = UNIT_DIRS.iter().find_map(|d| {
            canon
                .strip_prefix(d)
                .and_then(|r| r.strip_prefix('/'))
                .filter(|r| !r.is_empty())
        }) else {
            continue;
        };
        let unit = match rest.split_once('/') {
            None => rest,
            Some((dir, name)) if !name.contains('/') && name.ends_with(".conf") => {
                match dir.strip_suffix(".d") {
                    Some(unit) => unit,
                    None => continue,
                }
            }
            Some(_) => continue,
        };
        // Review 33 r33c F1, F3: `wait-for-br-.service.d/` is a drop-in of
        // every unit whose name (or alias) starts `wait-for-br-`: the MCO's
        // wait-for-br-ex-up.service, crio's alias cri-o.service. A unit
        // file the pool writes at that name changes nothing of that.
        if rest.contains('/') && unit.rsplit_once('.').is_some_and(|(b, _)| b.ends_with('-')) {
            let why = format!(
                "unit {unit}: a prefix drop-in directory, which systemd applies to every unit \
                 whose name or alias starts with {:?}, the OS's and the MCO's too; give the \
                 drop-in a unit of the pool's own by its full name",
                unit.rsplit_once('.').map_or(unit, |(b, _)| b)
            );
            out.insert(path.clone(), (*id, why));
            continue;
        }
        // kubelet.service is `kubelet_unit`'s, our sync units
        // `render_files`' (held to what render writes).
        if NEEDED.iter().any(|(n, _)| *n == unit)
            || unit == "service"
            || super::render_files::is_policy_path(path)
        {
            continue;
        }
        // Review 34 r34a F3: systemd loads a unit's file from the first
        // unit directory that has one, and one drop-in of each name
        // (/etc/systemd/system.control outranks /etc/systemd/system,
        // /usr/local/lib/systemd/system the OS's /usr/lib): the MCO writes
        // a MachineConfig's units in /etc/systemd/system only.
        if !canon.starts_with(POOL_UNIT_DIR) {
            let why = format!(
                "unit {unit}: a unit file or drop-in outside /etc/systemd/system, where the MCO \
                 writes a MachineConfig's units: systemd reads it before or instead of theirs, \
                 which plan does not judge; write it as a unit of the MachineConfig \
                 (systemd.units)"
            );
            out.insert(path.clone(), (*id, why));
            continue;
        }
        // Review 30 r30a F1: a unit file at a name the OS or the MCO
        // ships replaces their unit; its drop-ins go with it.
        let shipped = (!rest.contains('/')).then(|| super::start_units::shipped(unit));
        let why = match (kubelet_unit::regular(root, path), shipped.flatten()) {
            (Err(why), _) | (Ok(_), Some(why)) => Some(why),
            (Ok(bytes), None) => {
                reaches_start(&bytes, unit, &defined).or_else(|| outside_own(unit, own))
            }
        };
        match why {
            Some(why) => {
                out.insert(path.clone(), (*id, format!("unit {unit}: {why}")));
            }
            None if rest.contains('/') => dropins.push((path, *id, unit.to_string())),
            None => {}
        }
    }
    // A drop-in is judged with its unit (review 29 r29a F1: a service
    // ordered before kubelet by its own file, a drop-in adding
    // `ExecStartPre=/bin/sleep infinity`): one of a unit plan does not
    // judge, or whose file the pool does not write (the OS's, a prefix
    // drop-in such as `gpu-.service.d`), is not judged either.
    // Review 33 r33c F2: a start of the pool's own service, its drop-ins
    // with it, that may never end (or end late) is refused: plan cannot
    // list every name the OS's units on kubelet's path wait on.
    for (path, id) in files {
        let canon = node_path(path);
        let Some(name) = canon
            .strip_prefix(POOL_UNIT_DIR)
            .filter(|n| n.ends_with(".service"))
        else {
            continue;
        };
        if name.contains('/') || out.contains_key(path) || !defined.contains(name) {
            continue;
        }
        let mut texts: Vec<(&str, &String)> = (dropins.iter())
            .filter(|(_, _, u)| u == name)
            .map(|(p, _, _)| (p.rsplit('/').next().unwrap_or(p), *p))
            .collect();
        texts.sort();
        let dropin_count = texts.len();
        let mut assignments = Vec::new();
        let mut bytes_in_all = 0;
        for p in std::iter::once(path).chain(texts.into_iter().map(|(_, p)| p)) {
            if let Ok(bytes) = kubelet_unit::regular(root, p) {
                bytes_in_all += bytes.len();
                assignments.extend(crate::node::unit::syntax::parse(&bytes, name).assignments);
            }
        }
        let why = super::start_bound::unbounded(&assignments)
            .or_else(|| over_unit_budget(dropin_count, bytes_in_all, &assignments));
        if let Some(why) = why {
            out.insert(path.clone(), (*id, format!("unit {name}: {why}")));
        }
    }
    for (path, id, unit) in dropins {
        let unit_not_judged = (out.values()).any(|(_, w)| w.starts_with(&format!("unit {unit}: ")));
        let why = if unit_not_judged {
            "a drop-in of a unit plan does not judge"
        } else if !defined.contains(&unit) {
            "a drop-in of a unit no MachineConfig of the pool writes (the OS's, or every unit of a prefix): plan cannot read what it changes"
        } else {
            continue;
        };
        out.insert(path.clone(), (id, format!("unit {unit}: {why}")));
    }
    out
}

/// The directories of programs systemd's default search path for a
/// service (`/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin`) puts
/// ahead of the OS's.
const LOCAL_PROGRAM_DIRS: [&str; 2] = ["/usr/local/sbin", "/usr/local/bin"];

/// Why a file at `path` ([`node_path`]'s spelling) may stand in for a
/// program the units on kubelet's start path run by name (review 42
/// r42a F1: kubelet's launcher `/usr/bin/kubensenter` runs `nsenter`,
/// kubens.service `touch`; a pool's `/usr/local/bin/nsenter` ran instead,
/// without the taints, and `/usr/local/sbin/touch` of `sleep infinity`
/// held kubelet's start for good). A program of the pool's own is named
/// with one of the team's prefixes `own`, as its units are; render's
/// wrapper is `render_files`'.
fn shadowing_program(path: &str, own: &[String]) -> Option<String> {
    for dir in LOCAL_PROGRAM_DIRS {
        if path == dir || above(path, dir) {
            return Some(format!(
                "program directory {dir}: systemd runs a program named without its directory \
                 from there before the OS's, and a directory or link here changes every one"
            ));
        }
        let Some(name) = path.strip_prefix(dir).and_then(|r| r.strip_prefix('/')) else {
            continue;
        };
        if super::render_files::is_policy_path(path) {
            return None;
        }
        let name = name.split('/').next().unwrap_or(name);
        if own.iter().any(|p| name.starts_with(p.as_str())) {
            return None;
        }
        return Some(format!(
            "program {name}: systemd runs a program named without its directory from {dir} \
             before the OS's (kubelet's launcher runs nsenter so, the MCO's units touch, nmcli, \
             ...), so a name the OS or the MCO ships stands in for theirs on kubelet's start \
             path; name the pool's programs with a prefix given to --own-unit-prefix, as its \
             units are"
        ));
    }
    None
}

/// Why a service of the pool's own at `name` may be on kubelet's start
/// path, whatever its text (review 36 r36a F1): outside the prefixes `own`
/// the team declares its own (`--own-unit-prefix`), a unit of the OS or of
/// an operator, which plan does not see, may order itself after that name
/// (Debian's Open vSwitch packaging: ovsdb-server.service
/// `After=dpdk.service`, `Before=network.target`). The pool's unit,
/// ordered after network-online.target, or after any unit such a unit is
/// before (by `After=`, or by what its type, paths and defaults add), then
/// closes a cycle, which systemd 252 broke by dropping kubelet's start job
/// in 7 of 10 boots. Names of the OS's families are [`shipped`]'s; no list
/// of every name an OS or operator unit orders itself after can be made,
/// so the team's namespace is what keeps them apart.
///
/// [`shipped`]: super::start_units::shipped
fn outside_own(name: &str, own: &[String]) -> Option<String> {
    if own.iter().any(|p| name.starts_with(p.as_str())) {
        return None;
    }
    let given = if own.is_empty() {
        "plan was given no prefix of the team's (--own-unit-prefix)".to_string()
    } else {
        format!("its name starts with none of {}", own.join(", "))
    };
    Some(format!(
        "a service of the pool's own at a name a unit of the OS or of an operator may order \
         itself after ({given}): plan cannot see those units, and an ordering cycle through \
         one of them makes systemd drop kubelet's start job; name the pool's own units with \
         your team's prefix and give it to plan (--own-unit-prefix PREFIX)"
    ))
}

/// The most a service of the pool's own may hold, its unit file and
/// drop-ins together: drop-ins, bytes, assignments, and variables its environment
/// keys name (review 39 r39a F1: systemd 252 merges a unit's environment
/// in the manager itself, in time quadratic in its variables; five
/// drop-ins of 100,000 held it past 7 minutes, and kubelet with it).
const UNIT_BYTES_MAX: usize = 64 << 10;
const UNIT_ASSIGNMENTS_MAX: usize = 1000;
const UNIT_VARIABLES_MAX: usize = 1000;
const UNIT_DROPINS_MAX: usize = 64;

/// Why a service of `dropins` drop-ins, `bytes` in all and `assignments`
/// is past the budget above, or None.
fn over_unit_budget(
    dropins: usize,
    bytes: usize,
    assignments: &[crate::node::unit::syntax::Assignment],
) -> Option<String> {
    let variables: usize = (assignments.iter())
        .filter(|a| a.section == "Service" && a.key.ends_with("Environment"))
        .map(|a| a.value.split_whitespace().count())
        .sum();
    let over = if dropins > UNIT_DROPINS_MAX {
        format!("{dropins} drop-ins, more than {UNIT_DROPINS_MAX}")
    } else if bytes > UNIT_BYTES_MAX {
        format!("{bytes} bytes in its unit file and drop-ins, more than {UNIT_BYTES_MAX}")
    } else if assignments.len() > UNIT_ASSIGNMENTS_MAX {
        format!(
            "{} settings, more than {UNIT_ASSIGNMENTS_MAX}",
            assignments.len()
        )
    } else if variables > UNIT_VARIABLES_MAX {
        format!("{variables} environment variables, more than {UNIT_VARIABLES_MAX}")
    } else {
        return None;
    };
    Some(format!(
        "{over}: systemd reads and merges a unit in its manager, before anything starts, and \
         a large one holds the whole boot; keep the unit small, and let its script read what \
         it needs"
    ))
}

/// What a service of the team's own names (`outside_own`) may order
/// itself after: no unit outside the pool orders itself after it, so
/// these close no cycle; after another of the pool's, bounded starts
/// would add up (review 35 r35a F1).
const AFTER_OK: [&str; 4] = [
    "network.target",
    "network-online.target",
    "local-fs.target",
    "nss-lookup.target",
];

/// Keys of `[Unit]` a service may hold and still be judged not to reach
/// kubelet's start (review 28 r28a: a deny-list of keys missed what
/// systemd adds by default or by a unit's type). `Wants=` is judged by
/// what it names.
const UNIT_KEYS: [&str; 10] = [
    "Description",
    "Documentation",
    "After",
    "Wants",
    "StartLimitIntervalSec",
    "StartLimitBurst",
    "RefuseManualStart",
    "RefuseManualStop",
    "CollectMode",
    "SourcePath",
];

/// Keys of `[Service]` a service may hold and still be judged not to
/// reach kubelet's start: its commands, their environment, user and
/// limits, restarts, timeouts (`start_bound` reads their values) and
/// output. None claims what another unit holds (`BusName=`, `PIDFile=`,
/// `Sockets=`, `Slice=`, `USBFunction*=`), acts on the whole manager
/// (`FailureAction=`, ...), orders the unit after others (paths it
/// mounts, `PrivateTmp=`, `WorkingDirectory=`), or has the manager
/// itself read a file (review 38 r38a F1: `EnvironmentFile=-/dev/ptmx`
/// blocked systemd 252 for good; a script reads its own file).
const SERVICE_KEYS: [&str; 30] = [
    "Type",
    "ExecCondition",
    "ExecStartPre",
    "ExecStart",
    "ExecStartPost",
    "ExecReload",
    "ExecStop",
    "ExecStopPost",
    "RemainAfterExit",
    "Restart",
    "RestartSec",
    "RestartPreventExitStatus",
    "RestartForceExitStatus",
    "SuccessExitStatus",
    "TimeoutStartSec",
    "TimeoutStopSec",
    "TimeoutSec",
    "TimeoutAbortSec",
    "Environment",
    "UnsetEnvironment",
    "PassEnvironment",
    "User",
    "Group",
    "SupplementaryGroups",
    "Nice",
    "UMask",
    "LimitNOFILE",
    "StandardOutput",
    "StandardError",
    "SyslogIdentifier",
];

/// Whether `key=value` in `[Service]` is one of [`SERVICE_KEYS`] in a
/// value that claims nothing of another unit's: a type whose start needs
/// no bus name (`dbus`) nor notification, output to the journal, the
/// kernel's log or nowhere (not a TTY or socket another unit holds).
fn service_key(key: &str, value: &str) -> bool {
    match key {
        "Type" => matches!(value, "simple" | "exec" | "oneshot" | "forking" | "idle"),
        "StandardOutput" | "StandardError" => matches!(
            value,
            "" | "journal" | "journal+console" | "kmsg" | "kmsg+console" | "null" | "inherit"
        ),
        _ => SERVICE_KEYS.contains(&key),
    }
}

/// What a condition or assertion may test (`Condition`/`Assert` and
/// one of these): systemd checks them in the manager itself, before the
/// start job runs; a glob (review 38 r38a F2: forty `{,}` groups in
/// `ConditionPathExistsGlob=` held the manager for days) or a specifier
/// is not read.
const CONDITIONS: [&str; 13] = [
    "PathExists",
    "PathIsDirectory",
    "PathIsSymbolicLink",
    "PathIsMountPoint",
    "PathIsReadWrite",
    "DirectoryNotEmpty",
    "FileNotEmpty",
    "FileIsExecutable",
    "KernelCommandLine",
    "Architecture",
    "Virtualization",
    "Host",
    "FirstBoot",
];

/// Whether `key=value` of `[Unit]` is a condition or assertion of
/// [`CONDITIONS`] whose value holds no glob, brace or specifier.
fn condition(key: &str, value: &str) -> bool {
    let kind = (key.strip_prefix("Condition")).or_else(|| key.strip_prefix("Assert"));
    kind.is_some_and(|k| CONDITIONS.contains(&k))
        && !value.contains(['*', '?', '[', ']', '{', '}', '%', '\\'])
}

/// Where the MCO writes a MachineConfig's units (`systemd.units`): a unit
/// file elsewhere (`/usr/lib/systemd/system`, read-only on CoreOS; below
/// the OS's own in systemd's order) is not the pool's unit (review 33
/// r33c: its `/etc` drop-ins were taken as the pool's).
const POOL_UNIT_DIR: &str = "/etc/systemd/system/";

/// The units whose unit files the layout writes (not drop-ins), where the
/// MCO writes them.
pub fn defined_units(files: &BTreeMap<String, u64>) -> std::collections::BTreeSet<String> {
    (files.keys())
        .filter_map(|p| {
            let rest = node_path(p).strip_prefix(POOL_UNIT_DIR)?.to_string();
            (!rest.contains('/') && rest.contains('.')).then_some(rest)
        })
        .collect()
}

/// The first line of a unit's text by which it can keep kubelet from
/// starting, or why the unit is not one plan judges: only a service is
/// (a socket, path, timer, mount, slice... acts on others by its type:
/// `Before=sockets.target`, `Unit=`, a mount over our files, kubelet's
/// slice), holding in `[Unit]` only [`UNIT_KEYS`], conditions and
/// assertions, `Wants=` of plain targets or of services the pool's
/// MachineConfigs define (`defined`), in `[Install]` only `WantedBy=` of
/// the boot target, and in `[Service]` only [`SERVICE_KEYS`] (what its
/// commands do is any MachineConfig's power, which the MCO's policy
/// prices).
fn reaches_start(
    bytes: &[u8],
    name: &str,
    defined: &std::collections::BTreeSet<String>,
) -> Option<String> {
    let kind = name.rsplit_once('.').map_or("", |(_, k)| k);
    if kind != "service" {
        return Some(format!(
            "it is a {} unit, which acts on other units by its type: plan judges services only",
            if kind.is_empty() { name } else { kind }
        ));
    }
    let parsed = crate::node::unit::syntax::parse(bytes, name);
    if let Some(fatal) = parsed.fatal {
        return Some(format!("systemd stops reading it: {fatal}"));
    }
    let wanted = |w: &str| {
        PLAIN_TARGETS.contains(&w)
            || (w.ends_with(".service")
                && defined.contains(w)
                && !NEEDED.iter().any(|(n, _)| *n == w))
    };
    parsed.assignments.iter().find_map(|a| {
        let (section, key) = (a.section.as_str(), a.key.as_str());
        // Review 39 r39a F2: systemd expands a specifier in the manager
        // at load (`%o` reads /etc/os-release each time): only `%%`.
        if a.value.replace("%%", "").contains('%') {
            return Some(format!(
                "line {}: {}={} (in [{}]): a specifier, which systemd expands in its manager; \
                 write `%%` for a percent sign",
                a.line, a.key, a.value, a.section
            ));
        }
        let judged = match section {
            // Review 37 r37a F1: `BusName=` of NetworkManager's made
            // systemd 252 refuse to load NetworkManager.service at every
            // boot; a deny-list (review 29 r29a F2: actions on the whole
            // manager) misses what a key claims of other units.
            "Service" => service_key(key, a.value.trim()),
            "Unit" if key == "Wants" => a.value.split_whitespace().all(wanted),
            // Review 35 r35a F1, F2: ordered after kubelet or the boot
            // target that waits on it, a unit on kubelet's path made a
            // cycle systemd broke by dropping kubelet's job; after another
            // of the pool's, a chain of bounded starts added up.
            "Unit" if key == "After" => (a.value.split_whitespace()).all(|w| AFTER_OK.contains(&w)),
            "Unit" => UNIT_KEYS.contains(&key) || condition(key, &a.value),
            "Install" => {
                key == "WantedBy"
                    && (a.value.split_whitespace())
                        .all(|w| matches!(w, "multi-user.target" | "default.target"))
            }
            _ => false,
        };
        (!judged).then(|| {
            format!(
                "line {}: {}={} (in [{}])",
                a.line, a.key, a.value, a.section
            )
        })
    })
}

/// Why a path of a layout (in any spelling, [`node_path`]) is one
/// kubelet's start reads (None: it is not, or it is `kubelet_unit`'s).
fn needed_path(path: &str) -> Option<String> {
    let path = node_path(path);
    let path = path.as_str();
    if kubelet_unit::unit_path(path) {
        return None;
    }
    if let Some((_, unit)) = NEEDED_FILES.iter().find(|(f, _)| at_or_in(path, f)) {
        return Some(format!("{unit} runs or reads it"));
    }
    if let Some((f, unit)) = NEEDED_FILES.iter().find(|(f, _)| above(path, f)) {
        return Some(format!("it is above {f}, which {unit} runs or reads"));
    }
    if path != PULL_SECRET {
        let reads = KUBELET_READS.iter().find_map(|(dir, why)| {
            if path == *dir || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/')) {
                Some(format!("kubelet reads it at its start ({why})"))
            } else {
                // A directory or link above points kubelet elsewhere.
                (path != "/" && dir.strip_prefix(path).is_some_and(|r| r.starts_with('/')))
                    .then(|| format!("it is above {dir}, which kubelet reads at its start ({why})"))
            }
        });
        if reads.is_some() {
            return reads;
        }
    }
    let under = |dir: &str| path.strip_prefix(dir).filter(|r| r.starts_with('/'));
    if UNIT_DIRS
        .iter()
        .any(|d| d.strip_prefix(path).is_some_and(|r| r.starts_with('/')))
    {
        return Some("it is a directory above systemd's unit directories".into());
    }
    let rest = UNIT_DIRS.iter().find_map(|d| under(d))?;
    let components: Vec<&str> = rest.split('/').filter(|c| !c.is_empty()).collect();
    NEEDED.iter().find_map(|(unit, why)| {
        let (base, kind) = unit.rsplit_once('.')?;
        // A boot target's `.wants` enables any unit: the policy's.
        let boot = matches!(*unit, "multi-user.target" | "default.target");
        let hit = components.iter().any(|c| {
            *c == *unit
                || (c.strip_prefix(unit).and_then(|r| r.strip_prefix('.')))
                    .is_some_and(|r| !(boot && r == "wants"))
                || *c == format!("{kind}.d")
                || base
                    .match_indices('-')
                    .any(|(i, _)| *c == format!("{}-.{kind}.d", &base[..i]))
        });
        hit.then(|| format!("it is a unit file or drop-in of {unit} ({why})"))
    })
}

/// What `configs` (a pool's MachineConfigs of one render) and `files`
/// (their layout's identities) give kubelet's start.
pub fn of(configs: &[&Value], files: &BTreeMap<String, u64>) -> Start {
    let mut start = Start {
        paths: (files.iter())
            .filter(|(p, _)| needed_path(p).is_some())
            .map(|(p, id)| (p.clone(), *id))
            .collect(),
        services: (defined_units(files).iter())
            .filter(|u| u.ends_with(".service") && !u.contains("@."))
            .count(),
        ..Start::default()
    };
    let order = crate::cli::render::layout::merge_order(configs)
        .unwrap_or_else(|_| (0..configs.len()).collect());
    let strings = |v: Option<&Value>| -> Vec<String> {
        (v.and_then(Value::as_array).into_iter().flatten())
            .filter_map(Value::as_str)
            .flat_map(split_kargs)
            .collect()
    };
    // The arguments the pool's nodes are given, in the MCO's order.
    let mut given: Vec<(&str, String)> = Vec::new();
    for i in order {
        let Some(mc) = configs.get(i) else { continue };
        let units = mc.pointer("/spec/config/systemd/units");
        for u in units.and_then(Value::as_array).into_iter().flatten() {
            let name = u.get("name").and_then(Value::as_str).unwrap_or_default();
            let at = start.units.entry(name.to_string()).or_default();
            if let Some(e) = u.get("enabled").and_then(Value::as_bool) {
                at.0 = Some(e);
            }
            if let Some(m) = u.get("mask").and_then(Value::as_bool) {
                at.1 = m;
            }
        }
        for (label, at) in [
            ("spec.kernelArguments", "/spec/kernelArguments"),
            (
                "Ignition kernelArguments.shouldExist",
                "/spec/config/kernelArguments/shouldExist",
            ),
            (
                "Ignition kernelArguments.shouldNotExist",
                "/spec/config/kernelArguments/shouldNotExist",
            ),
        ] {
            let mut to_init = false;
            for arg in strings(mc.pointer(at)) {
                // After `--`, every word is init's (systemd's argv).
                to_init |= arg == "--";
                let why = boot_changing(&arg).or(to_init.then(|| {
                    "after `--`, the kernel hands it to systemd (init) as an argument".into()
                }));
                if let Some(why) = why {
                    start.kargs.insert(format!("{label} {arg}"), why);
                }
                if !label.ends_with("shouldNotExist") {
                    given.push((label, arg));
                }
            }
        }
    }
    start.services += (start.units.iter())
        .filter(|(n, (e, _))| *e == Some(true) && n.contains('@') && !n.contains("@."))
        .count();
    // The huge pages of all the pool's arguments together.
    if let Some(why) = hugepages_over(given.iter().map(|(_, a)| a.as_str())) {
        for (label, arg) in &given {
            let arg_ = arg.replace('"', "").replace('-', "_");
            let key = arg_.split('=').next().unwrap_or_default();
            if matches!(key, "hugepages" | "hugepagesz" | "default_hugepagesz") {
                (start.kargs.entry(format!("{label} {arg}"))).or_insert_with(|| why.clone());
            }
        }
    }
    start
}

/// What pool `pool` of `side` gives kubelet's start.
fn of_side(side: &Side, pool: &str) -> Start {
    let Some(r) = side.cache.get(pool) else {
        return Start::default();
    };
    let configs: Vec<&Value> = (r.configs.iter())
        .filter_map(|&i| side.render.machineconfigs.get(i))
        .collect();
    let mut start = of(&configs, &r.files);
    start.dependents = r.start_dependents.clone();
    start
}

/// Refuse, in pool `pool`, a change between the two renders of what
/// decides kubelet's start.
pub fn check((from, to): (&Side, &Side), pool: &str) -> Result<()> {
    let (before, after) = (of_side(from, pool), of_side(to, pool));
    judge((&from.render.name, &to.render.name), pool, &before, &after)
}

fn judge((from, to): (&str, &str), pool: &str, before: &Start, after: &Start) -> Result<()> {
    let refuse = |what: String| -> Result<()> {
        bail!(
            "pool {pool}: kubelet may not start: {what}; plan cannot price it, whatever the \
             disruption policy says (the policy says how the MCO applies a change, not whether \
             kubelet starts after it); plan the change without it, and review it by eye"
        )
    };
    let shown = |e: Option<bool>| e.map_or("unset".to_string(), |e| e.to_string());
    if after.services > SERVICES_MAX && after.services != before.services {
        return refuse(format!(
            "{to} gives the pool {} services (its unit files in /etc/systemd/system and the \
             template instances it enables), more than {SERVICES_MAX}: systemd loads and starts \
             each in its manager at boot, in time that grows faster than their number; give \
             the pool fewer, and let one service do the work of many",
            after.services
        ));
    }
    // Units whose dependencies name kubelet's start, on either side.
    let dependent_units: Vec<(String, String)> = (before.dependents.iter())
        .chain(&after.dependents)
        .filter(|(_, (_, why))| why.starts_with("unit "))
        .map(|(path, (_, why))| {
            let unit = why.strip_prefix("unit ").unwrap_or(why);
            let unit = unit.split(':').next().unwrap_or(unit).to_string();
            let said = why.split_once(": ").map_or(why.as_str(), |(_, w)| w);
            (unit, format!("{path}: {said}"))
        })
        .collect();
    let needed = (NEEDED.iter().chain(super::start_units::WAITED_ON))
        .map(|(u, w)| (u.to_string(), w.to_string()));
    // A template's instances, enabled by name (`a@x.service` of `a@.service`).
    let instances: Vec<(String, String)> = (dependent_units.iter())
        .filter_map(|(u, why)| {
            let (head, kind) = u.split_once("@.")?;
            let of = |s: &Start| {
                (s.units.keys())
                    .filter(|n| {
                        n.starts_with(&format!("{head}@")) && n.ends_with(&format!(".{kind}"))
                    })
                    .cloned()
                    .collect::<Vec<_>>()
            };
            Some((of(before), of(after), why.clone()))
        })
        .flat_map(|(a, b, why)| a.into_iter().chain(b).map(move |n| (n, why.clone())))
        .collect();
    for (unit, why) in needed.chain(dependent_units).chain(instances) {
        let unit = unit.as_str();
        // The MCO's kubelet.service is `enabled: true`.
        let dflt = (unit == "kubelet.service").then_some(true);
        let get = |s: &Start| {
            let (e, m) = s.units.get(unit).copied().unwrap_or_default();
            (e.or(dflt), m)
        };
        let ((eb, mb), (ea, ma)) = (get(before), get(after));
        if eb != ea {
            return refuse(format!(
                "unit {unit} ({why}): enabled is {} in {from} and {} in {to}",
                shown(eb),
                shown(ea)
            ));
        }
        if mb != ma {
            return refuse(format!(
                "unit {unit} ({why}): mask is {mb} in {from} and {ma} in {to}"
            ));
        }
    }
    for path in before.dependents.keys().chain(after.dependents.keys()) {
        let id = |s: &Start| s.dependents.get(path).map(|(id, _)| *id);
        if id(before) != id(after) {
            let why = (after.dependents.get(path))
                .or(before.dependents.get(path))
                .map(|(_, w)| w.as_str())
                .unwrap_or_default();
            return refuse(format!("{path} changes from {from} to {to} ({why})"));
        }
    }
    for path in before.paths.keys().chain(after.paths.keys()) {
        if before.paths.get(path) != after.paths.get(path) {
            let why = needed_path(path).unwrap_or_default();
            return refuse(format!("{path} changes from {from} to {to} ({why})"));
        }
    }
    fn changed<'a>(a: &'a Start, b: &Start) -> Option<(&'a String, &'a String)> {
        (a.kargs.iter()).find(|(k, why)| b.kargs.get(*k) != Some(why))
    }
    let new = changed(after, before).map(|k| (k, to));
    if let Some(((k, why), side)) = new.or(changed(before, after).map(|k| (k, from))) {
        if before.kargs.contains_key(k) && after.kargs.contains_key(k) {
            return refuse(format!(
                "kernel argument {k} is in both {from} and {to}, with another reading in \
                 {to} ({why})"
            ));
        }
        return refuse(format!("kernel argument {k} is in {side} only ({why})"));
    }
    Ok(())
}

#[cfg(test)]
#[path = "kubelet_start_tests.rs"]
mod tests;
