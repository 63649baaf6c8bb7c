//! A service of the pool's own, judged by its text: its start bounded,
//! its name in the team's namespace (`--own-unit-prefix`), its unit
//! file only where the MCO writes units, nothing in it that another unit
//! holds (reviews 33 to 39).

use serde_json::json;

use crate::plan::{plan, render};
use crate::plan_kubelet_start::{
    TAINT, boot_policy, boot_spec, cluster_policy, planned, pr_adding, priced_none, refused, units,
};
use crate::support::{repo, scratch_dir, stderr};

/// Review 33 r33c: plan cannot list every name the OS's units on kubelet's
/// start path wait on (F2: nfs-client.target wants auth-rpcgss-module.service,
/// remote-fs.target waits on it, kdump.service on remote-fs.target, the
/// MCO's ovs-configuration.service on kdump.service; systemd 252: kubelet
/// "did NOT run"), so a service of the pool's own whose start may never
/// end is refused, at any name; nor is a prefix drop-in directory the
/// pool's (F1, F3: `wait-for-br-.service.d` applies to the MCO's
/// wait-for-br-ex-up.service, `cri-.service.d` to crio.service by its
/// alias). Each was "costs nothing" with a None entry, exit 0. A oneshot
/// whose start is bounded is priced.
#[test]
fn a_start_that_may_never_end_or_a_prefix_drop_in_is_refused() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &["--taint", TAINT]);
    let forever = "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sleep infinity\n";
    let bounded = "[Service]\nType=oneshot\nTimeoutStartSec=5min\nExecStart=/bin/true\n";
    let sleep = json!([{ "name": "10-wait.conf",
                         "contents": "[Service]\nExecStartPre=/bin/sleep infinity\n" }]);
    for (i, (unit, says)) in [
        (
            json!({ "name": "auth-rpcgss-module.service", "contents": forever }),
            "its name starts with none of gpu-",
        ),
        (
            json!({ "name": "gpu-warmup.service", "enabled": true, "contents": forever }),
            "a oneshot service has no start timeout unless given one",
        ),
        (
            json!({ "name": "wait-for-br-.service", "dropins": sleep }),
            "a prefix drop-in directory",
        ),
        (
            json!({ "name": "cri-.service", "dropins": sleep }),
            "a prefix drop-in directory",
        ),
        // Review 34 r34a F1, F2: spellings systemd reads otherwise, a stop
        // that never ends, a kill signal the service ignores.
        (
            json!({ "name": "gpu-a.service", "contents":
                "[Service]\nType=oneshot\nType=one-shot\nTimeoutStartSec=5min\nExecStart=/bin/sleep infinity\n" }),
            "line 3: Type=one-shot",
        ),
        (
            json!({ "name": "gpu-b.service", "contents":
                "[Service]\nType=oneshot\nTimeoutStartSec=0.1us\nExecStart=/bin/sleep infinity\n" }),
            "line 3: TimeoutStartSec=0.1us",
        ),
        (
            json!({ "name": "gpu-c.service", "contents":
                "[Service]\nType=oneshot\nTimeoutSec=infinity\nTimeoutStartSec=3\nExecStart=/bin/sleep infinity\n" }),
            "line 3: TimeoutSec=infinity",
        ),
        // Review 35 r35a F1: each command timed on its own; F2: ordered
        // after the boot target that waits on kubelet (a cycle).
        (
            json!({ "name": "gpu-d.service", "contents":
                "[Service]\nType=oneshot\nTimeoutStartSec=10min\nExecStart=/bin/sleep 590\nExecStart=/bin/sleep 590\n" }),
            "its start may take 2 x 600 s",
        ),
        (
            json!({ "name": "gpu-e.service", "contents":
                "[Unit]\nAfter=multi-user.target\n[Service]\nType=oneshot\nTimeoutStartSec=5min\nExecStart=/bin/true\n" }),
            "line 2: After=multi-user.target",
        ),
        (
            json!({ "name": "gpu-warmup.service", "enabled": true, "contents": bounded }),
            "",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let name = unit["name"].as_str().unwrap().to_string();
        let pr = pr_adding(
            &tmp.path().join(format!("pr{i}")),
            "60-worker-gpu-x",
            units(unit),
        );
        let policy = tmp.path().join(format!("cluster-mc{i}.json"));
        cluster_policy(&base, &name, &policy);
        let o = planned(&base, &pr, Some(&policy));
        if says.is_empty() {
            priced_none(&o, &name);
            continue;
        }
        refused(&o, says);
        refused(&planned(&base, &pr, None), says);
    }
}

/// Review 34 r34a F3: a unit file or drop-in in another of systemd's unit
/// directories than the MCO's (`/etc/systemd/system.control` outranks it,
/// `/usr/local/lib/systemd/system` the OS's /usr/lib) was priced as a
/// plain file, and systemd loaded it ("costs nothing", exit 0): refused.
#[test]
fn a_unit_outside_the_mco_s_unit_directory_is_refused() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &["--taint", TAINT]);
    let policy = tmp.path().join("policy.json");
    boot_policy(&base, &policy);
    let forever = "[Service]\nType=oneshot\nExecStart=/bin/sleep infinity\n";
    for (i, path) in [
        "/etc/systemd/system.control/auth-rpcgss-module.service",
        "/usr/local/lib/systemd/system/auth-rpcgss-module.service",
        "/etc/systemd/system.control/auth-rpcgss-module.service.d/10-t.conf",
    ]
    .into_iter()
    .enumerate()
    {
        let spec = boot_spec(&[(path, forever, 0o644)], json!([]));
        let pr = pr_adding(&tmp.path().join(format!("pr{i}")), "60-worker-gpu-u", spec);
        refused(&planned(&base, &pr, None), "outside /etc/systemd/system");
    }
}

/// Review 36 r36a F1: Debian's Open vSwitch packaging orders
/// ovsdb-server.service `After=dpdk.service` and `Before=network.target`;
/// a pool's bounded `dpdk.service` ordered after network-online.target
/// closed a cycle, and systemd 252 dropped kubelet's start job in 7 of 10
/// boots ("costs nothing", exit 0). A service of the pool's own is
/// judged by its text only at a name of the team's (`--own-unit-prefix`);
/// a prefix that takes in the OS's names is refused.
#[test]
fn a_service_outside_the_team_s_names_is_refused() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &["--taint", TAINT]);
    let text = "[Unit]\nDescription=the team's DPDK setup\nAfter=network-online.target\n\
                [Service]\nType=oneshot\nTimeoutStartSec=10min\nExecStart=/bin/true\n\
                [Install]\nWantedBy=multi-user.target\n";
    let fleet = repo().join("examples/fleet/fleet.json");
    for (i, (name, own, says)) in [
        (
            "dpdk.service",
            Some("gpu-"),
            "its name starts with none of gpu-",
        ),
        (
            "dpdk.service",
            None,
            "plan was given no prefix of the team's",
        ),
        (
            "gpu-dpdk.service",
            None,
            "plan was given no prefix of the team's",
        ),
        ("gpu-dpdk.service", Some("gpu-"), ""),
    ]
    .into_iter()
    .enumerate()
    {
        let pr = pr_adding(
            &tmp.path().join(format!("pr{i}")),
            "60-worker-gpu-x",
            units(json!({ "name": name, "enabled": true, "contents": text })),
        );
        let policy = tmp.path().join(format!("cluster-mc{i}.json"));
        cluster_policy(&base, name, &policy);
        let mut extra = vec!["--fail-on", "taint", "--fail-on", "reboot"];
        extra.extend(["--fleet", policy.to_str().unwrap()]);
        if let Some(own) = own {
            extra.extend(["--own-unit-prefix", own]);
        }
        let o = plan(&base, &pr, &fleet, &extra);
        if says.is_empty() {
            priced_none(&o, name);
            continue;
        }
        refused(&o, says);
        assert!(
            stderr(&o).contains("--own-unit-prefix PREFIX"),
            "{}",
            stderr(&o)
        );
    }
    let pr = tmp.path().join("pr3");
    for (prefix, says) in [
        ("kube", "kubelet.service"),
        ("a b", "not the start of a unit name"),
    ] {
        let o = plan(&base, &pr, &fleet, &["--own-unit-prefix", prefix]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("--own-unit-prefix {prefix}"))
                || err.contains(&format!("--own-unit-prefix {prefix:?}")),
            "{err}"
        );
        assert!(err.contains(says), "{err}");
    }
}

/// Review 37 r37a F1: `BusName=org.freedesktop.NetworkManager` in a
/// bounded service of the team's (or its drop-in) made systemd 252 refuse
/// to load NetworkManager.service at every boot, and kubelet never
/// started ("costs nothing", exit 0): `[Service]` is read by an
/// allow-list of keys that claim nothing of another unit's.
#[test]
fn a_service_claiming_another_unit_s_bus_name_is_refused() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &["--taint", TAINT]);
    let text = "[Unit]\nDescription=the team's unit\n[Service]\nType=oneshot\n\
                TimeoutStartSec=10min\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n";
    let bus = "[Service]\nBusName=org.freedesktop.NetworkManager\n";
    let with_bus = text.replace("Type=oneshot\n", &format!("Type=oneshot\n{}", &bus[10..]));
    for (i, unit) in [
        json!({ "name": "gpu-x.service", "enabled": true, "contents": with_bus }),
        json!({ "name": "gpu-x.service", "enabled": true, "contents": text,
                "dropins": [{ "name": "10-bus.conf", "contents": bus }] }),
    ]
    .into_iter()
    .enumerate()
    {
        let pr = pr_adding(
            &tmp.path().join(format!("pr{i}")),
            "60-worker-gpu-x",
            units(unit),
        );
        let policy = tmp.path().join(format!("cluster-mc{i}.json"));
        cluster_policy(&base, "gpu-x.service", &policy);
        let says = "BusName=org.freedesktop.NetworkManager (in [Service])";
        refused(&planned(&base, &pr, Some(&policy)), says);
        refused(&planned(&base, &pr, None), says);
    }
    // Control: the same unit without the line is priced.
    let pr = pr_adding(
        &tmp.path().join("control"),
        "60-worker-gpu-x",
        units(json!({ "name": "gpu-x.service", "enabled": true, "contents": text })),
    );
    let policy = tmp.path().join("cluster-control.json");
    cluster_policy(&base, "gpu-x.service", &policy);
    priced_none(&planned(&base, &pr, Some(&policy)), "gpu-x.service");
}
