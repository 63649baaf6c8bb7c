use super::*;
use serde_json::json;

fn mc(spec: Value) -> Value {
    json!({"metadata": {"name": "60-x",
           "labels": {"machineconfiguration.openshift.io/role": "worker-gpu"}},
           "spec": spec})
}
fn units(u: Value) -> Value {
    mc(json!({"config": {"ignition": {"version": "3.4.0"}, "systemd": {"units": [u]}}}))
}
fn judged(before: &[Value], after: &[Value]) -> Result<()> {
    let start = |c: &[Value]| of(&c.iter().collect::<Vec<_>>(), &BTreeMap::new());
    judge(("base", "pr"), "worker-gpu", &start(before), &start(after))
}

#[test]
fn kubelet_disabled_or_a_needed_unit_masked_is_refused() {
    let off = units(json!({"name": "kubelet.service", "enabled": false}));
    let err = judged(&[], &[off]).unwrap_err().to_string();
    assert!(
        err.contains("kubelet may not start: unit kubelet.service")
            && err.contains("enabled is true in base and false in pr"),
        "{err}"
    );
    // kubelet.service enabled as the MCO has it is no change.
    let on = units(json!({"name": "kubelet.service", "enabled": true}));
    judged(&[], &[on]).unwrap();
    for u in [
        json!({"name": "crio.service", "mask": true}),
        json!({"name": "crio.service", "enabled": false}),
        json!({"name": "kubelet-dependencies.target", "enabled": true}),
        json!({"name": "kubelet-auto-node-size.service", "enabled": false}),
        // Review 45 r45a F1: a unit the path waits on.
        json!({"name": "kdump.service", "enabled": true}),
        json!({"name": "kdump.service", "mask": true}),
    ] {
        let err = judged(&[], &[units(u.clone())]).unwrap_err().to_string();
        assert!(err.contains("kubelet may not start"), "{u}: {err}");
    }
    // A later MachineConfig's field wins (the merge by unit name).
    let mut back = units(json!({"name": "kubelet.service", "enabled": true}));
    back["metadata"]["name"] = "61-x".into();
    let off = units(json!({"name": "kubelet.service", "enabled": false}));
    judged(&[], &[off, back]).unwrap();
    // An unrelated unit is the policy's.
    let x = units(json!({"name": "x.service", "enabled": false}));
    judged(&[], &[x]).unwrap();
}

#[test]
fn unit_files_and_drop_ins_of_needed_units() {
    for (path, needed) in [
        ("/etc/systemd/system/crio.service.d/zz.conf", true),
        ("/etc/systemd/system/crio.service", true),
        ("/run/systemd/system/crio.service.d/zz.conf", true),
        (
            "/etc/systemd/system/kubelet-dependencies.target.d/zz.conf",
            true,
        ),
        ("/etc/systemd/system/kubelet-.target.d/zz.conf", true),
        ("/etc/systemd/system/target.d/zz.conf", true),
        (
            "/etc/systemd/system/NetworkManager-wait-.service.d/zz.conf",
            true,
        ),
        (
            "/etc/systemd/system/kubelet.service.requires/x.service",
            true,
        ),
        ("/etc/systemd/system/multi-user.target.d/zz.conf", true),
        ("/etc/systemd/system/default.target", true),
        ("/etc/node-sizing-enabled.env", true),
        ("/etc/node-sizing-version.json", true),
        // Review 29 r29a F3: CoreOS's /var/usrlocal is /usr/local.
        ("/usr/local/sbin/dynamic-system-reserved-calc.sh", true),
        ("/var/usrlocal/sbin/dynamic-system-reserved-calc.sh", true),
        (
            "/var/usrlocal/lib/systemd/system/crio.service.d/zz.conf",
            true,
        ),
        ("/run/systemd", true),
        // Review 41 r41a F1: the programs and environment files of the
        // MCO's units on kubelet's start path.
        ("/usr/local/bin/configure-ovs.sh", true),
        ("/var/usrlocal/bin/nmstate-configuration.sh", true),
        ("/usr/local/bin/mco-hostname", true),
        ("/etc/default/nodeip-configuration", true),
        ("/etc/mco/proxy.env", true),
        ("/usr/local/bin", true),
        ("/usr/local/bin/acme-tool", false),
        ("/etc/default/acme", false),
        // Review 43 r43a F2, F3: the MCO's first-boot stamp and state, the
        // OS's units' environment files and databases, in any spelling.
        ("/etc/ignition-machine-config-encapsulated.json", true),
        ("/etc/machine-config-daemon/currentconfig", true),
        ("/etc/openvswitch/default.conf", true),
        ("/etc/openvswitch", true),
        ("/etc//openvswitch/./conf.db", true),
        ("/etc/sysconfig/openvswitch", true),
        ("/etc/sysconfig/rpcbind", true),
        ("/etc/sysconfig/chronyd", true),
        ("/etc/sysconfig", true),
        ("/etc/sysconfig/acme", false),
        // What the start path's scripts and the OS's units read.
        ("/etc/ovnk/extra_bridge", true),
        ("/var/lib/ovnk/iface_default_hint", true),
        ("/etc/cno/mtu-migration/config", true),
        ("/etc/nmstate/openshift/cluster.yml", true),
        ("/etc/nmstate/acme.yml", false),
        ("/etc/ipsec.d/openshift.conf", true),
        ("/etc/ipsec.d/acme.conf", false),
        ("/etc/locale.conf", true),
        ("/etc/dbus-1/system.d/acme.conf", true),
        ("/etc/passwd", true),
        ("/etc/passwd-", false),
        ("/etc/group", true),
        ("/var/lib/crio/version", true),
        ("/etc/kdump.conf", true),
        ("/etc/machine-id", true),
        ("/etc/audit/auditd.conf", true),
        ("/etc/audit/rules.d/acme.rules", true),
        ("/etc/sysconfig/auditd", true),
        ("/etc/sysconfig/kdump", true),
        ("/etc/ssh/ssh_config.d/01-acme.conf", true),
        ("/etc/ssh/sshd_config.d/01-acme.conf", false),
        ("/root/.ssh/config", true),
        ("/var/roothome/.ssh/config", true),
        ("/etc/nfs.conf.d/acme.conf", true),
        ("/etc/openvswitch-acme", false),
        // kubelet_unit's: kubelet.service, its drop-ins, service.d.
        ("/etc/systemd/system/kubelet.service", false),
        ("/etc/systemd/system/kubelet.service.d/zz.conf", false),
        ("/etc/systemd/system/service.d/zz.conf", false),
        ("/etc/systemd/system", false),
        // Not a unit directory, not a needed unit.
        ("/etc/crio.service.d/zz.conf", false),
        ("/etc/systemd/system/x.service.d/zz.conf", false),
        (
            "/etc/systemd/system/multi-user.target.wants/x.service",
            false,
        ),
        (
            "/etc/systemd/system/multi-user.target.wants/kubelet.service",
            false,
        ),
        ("/etc/systemd/system/crio-x.service", false),
        // Review 33 r33a F1: what kubelet reads at its start; not the
        // pull secret, which the MCO's policy prices.
        ("/etc/kubernetes/kubelet-ca.crt", true),
        ("/etc/hostname", true),
        ("/var/lib/kubelet/cpu_manager_state", true),
        ("/var/lib/kubelet/pki/kubelet-client-current.pem", true),
        ("/etc/kubernetes/kubelet-plugins/volume/exec/x~y/y", true),
        ("/var/lib/kubelet/config.json", false),
        ("/etc/kubernetes/kubelet-ca.crt.bak", false),
        ("/etc/hostname.d", false),
    ] {
        assert_eq!(needed_path(path).is_some(), needed, "{path}");
    }
    let files = |text: u64| {
        BTreeMap::from([(
            "/etc/systemd/system/crio.service.d/zz.conf".to_string(),
            text,
        )])
    };
    let (before, after) = (of(&[], &BTreeMap::new()), of(&[], &files(1)));
    let err = judge(("base", "pr"), "p", &before, &after)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("crio.service.d/zz.conf changes from base to pr"),
        "{err}"
    );
    judge(
        ("base", "pr"),
        "p",
        &of(&[], &files(1)),
        &of(&[], &files(1)),
    )
    .unwrap();
}

#[test]
fn kernel_arguments_that_change_what_starts() {
    for arg in [
        "systemd.mask=kubelet.service",
        "systemd.unit=rescue.target",
        "rd.systemd.unit=emergency.target",
        "systemd.wants=debug-shell.service",
        "systemd.run=/bin/sh",
        "systemd.debug-shell",
        "systemd.debug_shell=1",
        "\"systemd.mask=crio.service\"",
        "emergency",
        "single",
        "S",
        "1",
        "-b",
        "init=/bin/sh",
        "rd.break",
        "systemd.setenv=LD_PRELOAD=/x.so",
        "systemd.mount-extra=/x:/usr/bin",
        "ignition.firstboot",
        "systemd.unified_cgroup_hierarchy=0",
    ] {
        assert!(boot_changing(arg).is_some(), "{arg}");
    }
    for arg in [
        "nosmt",
        "hugepages=32",
        "systemd.log_level=debug",
        "systemd.default_standard_output=kmsg",
        "selinux=1",
        "i915.enable_guc=0",
        "isolcpus=1-3",
        "intel_iommu=on",
    ] {
        assert_eq!(boot_changing(arg), None, "{arg}");
    }
    assert_eq!(
        split_kargs(" a=\"b c\"  systemd.mask=kubelet.service"),
        ["a=\"b c\"", "systemd.mask=kubelet.service"]
    );
    let k = |args: Value| mc(json!({"kernelArguments": args}));
    let err = judged(&[], &[k(json!(["nosmt systemd.mask=kubelet.service"]))])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "kernel argument spec.kernelArguments systemd.mask=kubelet.service is in pr only"
        ),
        "{err}"
    );
    // Taken away is a change too; other arguments are the policy's.
    assert!(judged(&[k(json!(["systemd.unit=rescue.target"]))], &[]).is_err());
    judged(&[], &[k(json!(["nosmt", "hugepages=32"]))]).unwrap();
    let ign = mc(json!({"config": {"ignition": {"version": "3.4.0"},
        "kernelArguments": {"shouldExist": ["systemd.unit=rescue.target"]}}}));
    assert!(judged(&[], &[ign]).is_err());
}

/// Review 29 r29a F4: the huge pages a pool's MachineConfigs reserve
/// together, a size in one and a count in another.
#[test]
fn huge_pages_of_the_pool_in_all() {
    let k = |name: &str, args: Value| {
        let mut m = mc(json!({"kernelArguments": args}));
        m["metadata"]["name"] = name.into();
        m
    };
    let size = |s: &str| k("50-size", json!([format!("hugepagesz={s}")]));
    let count = k("60-count", json!(["hugepages=100"]));
    let err = judged(&[], &[size("1G"), count.clone()])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("kernel argument spec.kernelArguments hugepages=100 is in pr only")
            && err.contains("reserve 100 GiB in all"),
        "{err}"
    );
    // The count as it was, of pages of another size.
    let err = judged(&[size("2M"), count.clone()], &[size("1G"), count.clone()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("reserve 100 GiB in all"), "{err}");
    judged(&[], &[size("2M"), count.clone()]).unwrap();
    // Already in force on both sides: no change of it.
    judged(&[size("1G"), count.clone()], &[size("1G"), count]).unwrap();
    // The same words in another order: more in all (the count after
    // the size counts pages of its size).
    let (a, b) = (
        k("50-a", json!(["hugepages=100"])),
        k("60-b", json!(["hugepagesz=1G hugepages=64"])),
    );
    let (c, d) = (
        k("50-a", json!(["hugepagesz=1G hugepages=64"])),
        k("60-b", json!(["hugepages=100"])),
    );
    let err = judged(&[a, b], &[c, d]).unwrap_err().to_string();
    assert!(
        err.contains("hugepages=100 is in both base and pr, with another reading in pr")
            && err.contains("reserve 164 GiB in all"),
        "{err}"
    );
    let ign = mc(json!({"config": {"ignition": {"version": "3.4.0"},
        "kernelArguments": {"shouldExist": ["hugepagesz=1G hugepages=65"]}}}));
    assert!(judged(&[], &[ign]).is_err());
}

/// Review 33 r33c: a prefix drop-in directory (`wait-for-br-.service.d`,
/// `cri-.service.d`) is refused whatever unit file the pool writes at
/// its name; a unit file outside /etc/systemd/system does not make a
/// unit the pool's (`modprobe@.service` under /usr/lib); a service of
/// the pool's own whose start may never end is refused, its drop-ins
/// read with it.
#[test]
fn prefix_drop_ins_other_fragments_and_unbounded_starts() {
    let root = tempfile::tempdir().unwrap();
    let sleep = "[Service]\nExecStartPre=/bin/sleep infinity\n";
    let bounded = "[Service]\nType=oneshot\nTimeoutStartSec=2min\nExecStart=/bin/true\n";
    let files: Vec<(&str, &str)> = vec![
        ("/etc/systemd/system/wait-for-br-.service", bounded),
        (
            "/etc/systemd/system/wait-for-br-.service.d/10-wait.conf",
            sleep,
        ),
        ("/etc/systemd/system/cri-.service.d/10-wait.conf", sleep),
        ("/usr/lib/systemd/system/modprobe@.service", bounded),
        (
            "/etc/systemd/system/modprobe@.service.d/10-wait.conf",
            sleep,
        ),
        (
            "/etc/systemd/system/gpu-d.service",
            "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sleep infinity\n",
        ),
        ("/etc/systemd/system/gpu-a.service", bounded),
        (
            "/etc/systemd/system/gpu-a.service.d/10-x.conf",
            "[Service]\nTimeoutStartSec=infinity\n",
        ),
        ("/etc/systemd/system/gpu-b.service", bounded),
        ("/etc/systemd/system/gpu-b.service.d/10-x.conf", sleep),
        // Review 34 r34a F3: what systemd reads before the MCO's units.
        ("/etc/systemd/system.control/gpu-b.service", sleep),
        (
            "/etc/systemd/system.control/gpu-b.service.d/10-x.conf",
            "[Service]\nTimeoutStartSec=infinity\n",
        ),
        ("/var/usrlocal/lib/systemd/system/gpu-c.service", sleep),
    ];
    for (path, text) in &files {
        let at = root.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    }
    let ids: BTreeMap<String, u64> = files.iter().map(|(p, _)| (p.to_string(), 1)).collect();
    let d = dependents(root.path(), &ids, &["gpu-".into()]);
    let judged: Vec<&str> = d.keys().map(String::as_str).collect();
    assert_eq!(
        judged,
        [
            "/etc/systemd/system.control/gpu-b.service",
            "/etc/systemd/system.control/gpu-b.service.d/10-x.conf",
            "/etc/systemd/system/cri-.service.d/10-wait.conf",
            "/etc/systemd/system/gpu-a.service",
            "/etc/systemd/system/gpu-a.service.d/10-x.conf",
            // Its unit is not judged: another file of it is refused.
            "/etc/systemd/system/gpu-b.service.d/10-x.conf",
            "/etc/systemd/system/gpu-d.service",
            "/etc/systemd/system/modprobe@.service.d/10-wait.conf",
            // Outside the team's names.
            "/etc/systemd/system/wait-for-br-.service",
            "/etc/systemd/system/wait-for-br-.service.d/10-wait.conf",
            "/usr/lib/systemd/system/modprobe@.service",
            "/var/usrlocal/lib/systemd/system/gpu-c.service",
        ]
    );
    let why = |p: &str| d[p].1.clone();
    assert!(
        why("/usr/lib/systemd/system/modprobe@.service").contains("outside /etc/systemd/system")
    );
    assert!(why("/etc/systemd/system/cri-.service.d/10-wait.conf").contains("prefix drop-in"));
    assert!(
        why("/etc/systemd/system/gpu-d.service").contains("a oneshot service has no start timeout")
    );
    assert!(why("/etc/systemd/system/gpu-a.service").contains("TimeoutStartSec=infinity"));
}

/// Review 29 r29a F1: a drop-in is judged with its unit: one of a unit
/// plan does not judge, or of a unit the pool does not write, is not
/// judged either.
#[test]
fn drop_ins_are_judged_with_their_unit() {
    let root = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let at = root.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    };
    let sleep = "[Service]\nExecStartPre=/bin/sleep infinity\n";
    write(
        "/etc/systemd/system/team.service",
        "[Unit]\nBefore=kubelet.service\n",
    );
    write("/etc/systemd/system/team.service.d/x.conf", sleep);
    // Its start bounded (review 33 r33c F2), the drop-in's sleep too.
    write(
        "/etc/systemd/system/ok.service",
        "[Unit]\nDescription=ok\n[Service]\nType=oneshot\nTimeoutStartSec=5min\n",
    );
    write("/etc/systemd/system/ok.service.d/x.conf", sleep);
    write("/etc/systemd/system/gpu-.service.d/x.conf", sleep);
    write(
        "/etc/systemd/system/systemd-tmpfiles-setup.service.d/x.conf",
        sleep,
    );
    let files: BTreeMap<String, u64> = [
        "/etc/systemd/system/team.service",
        "/etc/systemd/system/team.service.d/x.conf",
        "/etc/systemd/system/ok.service",
        "/etc/systemd/system/ok.service.d/x.conf",
        "/etc/systemd/system/gpu-.service.d/x.conf",
        "/etc/systemd/system/systemd-tmpfiles-setup.service.d/x.conf",
    ]
    .into_iter()
    .map(|p| (p.to_string(), 1))
    .collect();
    let d = dependents(root.path(), &files, &["ok".into(), "team".into()]);
    let judged: Vec<&str> = d.keys().map(String::as_str).collect();
    assert_eq!(
        judged,
        [
            "/etc/systemd/system/gpu-.service.d/x.conf",
            "/etc/systemd/system/systemd-tmpfiles-setup.service.d/x.conf",
            "/etc/systemd/system/team.service",
            "/etc/systemd/system/team.service.d/x.conf",
        ]
    );
}

/// Review 26 r26a F2: a unit of another name whose dependencies name
/// kubelet's start (its `[Install] RequiredBy=` makes the refused
/// `kubelet.service.requires/` link when enabled), and init's argv.
#[test]
fn other_units_naming_kubelet_s_start_and_init_s_arguments() {
    let defined = std::collections::BTreeSet::from(["x.service".to_string()]);
    let unit = |text: &str| reaches_start(text.as_bytes(), "x.service", &defined);
    for text in [
        "[Unit]\nBefore=kubelet.service\n[Service]\nExecStart=/bin/false\n[Install]\nRequiredBy=kubelet.service\n",
        "[Unit]\nConflicts=crio.service\n",
        "[Unit]\nRequires=x.service kubelet-dependencies.target\n",
        "[Install]\nWantedBy=\"kubelet.service\"\n",
        "[Unit]\nBefore=network-online.target\n",
        "[Unit]\nConflicts=multi-user.target\n",
        // Review 27 r27a F1: other names, specifiers, quotes, actions.
        "[Install]\nRequiredBy=%j.service\n",
        "[Unit]\nBefore=local-fs.target\n",
        "[Unit]\nBefore=multi-user.target\n",
        "[Install]\nRequiredBy=kube\"let.serv\"ice\n",
        "[Unit]\nOnSuccess=rescue.target\nOnSuccessJobMode=isolate\n",
        "[Unit]\nSuccessAction=reboot-force\n",
        "[Unit]\nWants=rescue.target\n",
        "[Unit]\nDefaultDependencies=no\n",
        "[Install]\nWantedBy=%j.service\n",
        // Review 28 r28a: what a deny-list of keys missed.
        "[Unit]\nWants=systemd-reboot.service\n",
        "[Unit]\nWants=emergency.target\n",
        "[Service]\nFailureAction=exit-force\n",
        "[Service]\nStartLimitAction=reboot-force\n",
        // Review 35 r35a F2: a cycle with kubelet's start (systemd drops
        // one job of it, kubelet's in 3 of 10 starts); F1: a chain of the
        // pool's own services.
        "[Unit]\nAfter=kubelet.service\n[Install]\nWantedBy=multi-user.target\n",
        "[Unit]\nAfter=multi-user.target\n",
        "[Unit]\nAfter=x.service\n",
        "[Unit]\nAfter=remote-fs.target\n",
        // Review 37 r37a F1: NetworkManager's bus name, which systemd 252
        // then refused NetworkManager.service at every boot; what else
        // claims another unit's, or orders after it.
        "[Service]\nType=oneshot\nBusName=org.freedesktop.NetworkManager\n",
        "[Service]\nType=dbus\n",
        "[Service]\nType=notify\n",
        "[Service]\nType=forking\nPIDFile=/run/NetworkManager.pid\n",
        "[Service]\nSockets=sshd.socket\n",
        "[Service]\nSlice=kubepods.slice\n",
        "[Service]\nStandardInput=tty\n",
        "[Service]\nStandardOutput=tty\n",
        "[Service]\nStandardError=socket\n",
        "[Service]\nWorkingDirectory=/var/mnt/nfs\n",
        "[Service]\nPrivateTmp=yes\n",
        "[Service]\nUSBFunctionDescriptors=/x\n",
        // Review 38 r38a F1, F2: what the manager itself reads or expands
        // (it blocked for good, or for days).
        "[Service]\nEnvironmentFile=-/dev/ptmx\n",
        "[Unit]\nConditionPathExistsGlob=/nonexistent{,}{,}{,}\n",
        "[Unit]\nAssertPathExistsGlob=/x*\n",
        "[Unit]\nConditionPathExists=/nonexistent{,}{,}\n",
        "[Unit]\nConditionHost=*a*a*a*a*b\n",
        "[Unit]\nConditionPathExists=%h/x\n",
        "[Unit]\nConditionOSRelease=ID=rhcos\n",
        // Review 39 r39a F2: `%o` re-read /etc/os-release at each.
        "[Service]\nEnvironment=A=%o%o%o\n",
        "[Service]\nExecStart=/bin/echo %%%i\n",
    ] {
        assert!(unit(text).is_some(), "{text}");
    }
    for text in [
        "[Unit]\nDescription=kubelet.service\n",
        "[Unit]\nWants=network-online.target x.service\nAfter=network-online.target\n",
        "[Service]\nType=oneshot\nRemainAfterExit=yes\nEnvironment=A=1\n\
         User=core\nExecStartPre=/bin/true\nExecStart=/usr/local/bin/x\nStandardOutput=journal\n\
         TimeoutStartSec=5min\nRestart=on-failure\nRestartSec=5\nNice=5\n",
        "[Unit]\nConditionPathExists=!/etc/acme-done\nAssertFileNotEmpty=|/etc/acme.conf\n\
         ConditionKernelCommandLine=!acme.off\n",
        "[Service]\nExecStart=/bin/date +%%s\n",
    ] {
        assert_eq!(unit(text), None, "{text}");
    }
    for other in [
        "x.socket",
        "x.path",
        "x.timer",
        "usr-local-bin.mount",
        "system.slice",
        "slice",
    ] {
        let why = reaches_start(b"[Unit]\nDescription=x\n", other, &defined).unwrap();
        assert!(why.contains("plan judges services only"), "{other}: {why}");
    }
    let why = unit("[Install]\nRequiredBy=kubelet.service\n").unwrap();
    assert_eq!(why, "line 2: RequiredBy=kubelet.service (in [Install])");
    // What the kernel hands init: an option word, and all after `--`.
    for arg in [
        "--unit=rescue.target",
        "--crash-shell",
        "systemd.machine_id=x",
        "systemd.crash_action=reboot",
        "nosmt\u{120}rdinit=/bin/sh",
        "module_blacklist=ice",
        "root=/dev/sdb1",
        "cgroup_disable=memory",
        "noinitrd",
        "rd.driver.blacklist=overlay",
        "rd.cmdline=ask",
        "modprobe.blacklist=ice",
    ] {
        assert!(boot_changing(arg).is_some(), "{arg}");
    }
    let k = |args: Value| mc(json!({"kernelArguments": args}));
    let err = judged(&[], &[k(json!(["nosmt -- rescue2"]))])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("kernel argument spec.kernelArguments -- is in pr only"),
        "{err}"
    );
    assert!(judged(&[], &[k(json!(["nosmt", "--", "x"]))]).is_err());
    judged(
        &[],
        &[k(json!([
            "systemd.log_level=debug",
            "systemd.show-status=0"
        ]))],
    )
    .unwrap();
}

/// Review 36 r36a F1: a service of the pool's own is judged by its text
/// only within the team's names: at another (Debian's Open vSwitch orders
/// ovsdb-server.service `After=dpdk.service`, `Before=network.target`),
/// `After=network-online.target` closed a cycle through a unit plan does
/// not see, and systemd dropped kubelet's start job.
#[test]
fn a_service_of_the_pool_s_own_only_within_the_team_s_names() {
    let root = tempfile::tempdir().unwrap();
    let text = "[Unit]\nAfter=network-online.target\n[Service]\nType=oneshot\n\
                TimeoutStartSec=10min\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n";
    let mut files = BTreeMap::new();
    for name in ["dpdk.service", "acme-dpdk.service", "acme-x@.service"] {
        let path = format!("/etc/systemd/system/{name}");
        let at = root.path().join(path.trim_start_matches('/'));
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
        files.insert(path, 1);
    }
    let judged = |own: &[String]| {
        let d = dependents(root.path(), &files, own);
        (d.keys().cloned().collect::<Vec<_>>(), d)
    };
    let (with_prefix, d) = judged(&["acme-".into()]);
    assert_eq!(with_prefix, ["/etc/systemd/system/dpdk.service"]);
    let why = &d["/etc/systemd/system/dpdk.service"].1;
    assert!(why.contains("starts with none of acme-"), "{why}");
    assert!(why.contains("--own-unit-prefix PREFIX"), "{why}");
    let (without, d) = judged(&[]);
    assert_eq!(without.len(), 3, "{without:?}");
    let why = &d["/etc/systemd/system/acme-dpdk.service"].1;
    assert!(why.contains("plan was given no prefix"), "{why}");
}

/// Review 39 r39a F1: a service of the pool's own is bounded in all, its
/// unit file and drop-ins together (five drop-ins of 100,000 variables
/// each, each under the bound of one file, held systemd 252's manager
/// past 7 minutes): drop-ins, bytes, settings, environment variables.
#[test]
fn a_service_of_the_pool_s_own_is_bounded_in_all() {
    let unit = "[Service]\nType=oneshot\nTimeoutStartSec=5min\nExecStart=/bin/true\n";
    let vars = |n: usize| -> String {
        let line: Vec<String> = (0..n).map(|i| format!("V{i}=1")).collect();
        format!("[Service]\nEnvironment={}\n", line.join(" "))
    };
    let judged = |dropins: Vec<String>| {
        let root = tempfile::tempdir().unwrap();
        let mut files = BTreeMap::new();
        let mut write = |path: String, text: &str| {
            let at = root.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
            files.insert(path, 1);
        };
        write("/etc/systemd/system/acme-x.service".into(), unit);
        for (i, text) in dropins.iter().enumerate() {
            write(
                format!("/etc/systemd/system/acme-x.service.d/{i:03}.conf"),
                text,
            );
        }
        let d = dependents(root.path(), &files, &["acme-".into()]);
        d.get("/etc/systemd/system/acme-x.service")
            .map(|(_, w)| w.clone())
    };
    assert_eq!(judged(vec![vars(200); 5]), None);
    for (dropins, says) in [
        (
            vec![vars(300); 5],
            "1500 environment variables, more than 1000",
        ),
        (vec![String::new(); 65], "65 drop-ins, more than 64"),
        (
            vec![format!("[Service]\nNice=1\n#{}\n", "x".repeat(1100)); 64],
            "bytes in its unit file and drop-ins",
        ),
        (
            vec!["[Service]\nNice=1\n".repeat(20); 60],
            "settings, more than 1000",
        ),
    ] {
        let why = judged(dropins).unwrap_or_default();
        assert!(why.contains(says), "{says}: {why}");
    }
}

/// Review 40 r40a F1: a template within its unit's budget, enabled as
/// thousands of instances, held systemd 252's manager minutes before
/// kubelet: the services a pool gives are bounded in all.
#[test]
fn the_services_of_a_pool_are_bounded_in_all() {
    let instances = |n: usize| {
        let list: Vec<Value> = (0..n)
            .map(|i| json!({"name": format!("acme-t@{i}.service"), "enabled": true}))
            .collect();
        mc(json!({"config": {"ignition": {"version": "3.4.0"}, "systemd": {"units": list}}}))
    };
    judged(&[], &[instances(SERVICES_MAX)]).unwrap();
    let err = judged(&[], &[instances(SERVICES_MAX + 1)])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("201 services") && err.contains("more than 200"),
        "{err}"
    );
    // Unit files count too; a template alone does not.
    let mut files = BTreeMap::new();
    for i in 0..=SERVICES_MAX {
        files.insert(format!("/etc/systemd/system/acme-{i}.service"), 1);
    }
    files.insert("/etc/systemd/system/acme-t@.service".into(), 1);
    assert_eq!(of(&[], &files).services, SERVICES_MAX + 1);
}

/// Review 42 r42a F1: a program in /usr/local/bin or /usr/local/sbin (any
/// spelling) stands in for the OS's of its name on kubelet's start path:
/// refused but at a name of the team's own prefix, or render's wrapper.
#[test]
fn programs_ahead_of_the_os_s_are_the_team_s_own() {
    let root = tempfile::tempdir().unwrap();
    let files: BTreeMap<String, u64> = [
        "/usr/local/bin/nsenter",
        "/var/usrlocal/sbin/touch",
        "/usr/local/bin/gpu-tool",
        "/usr/local/bin/kubelet-labeler-wrapper.x86_64",
        "/usr/local",
        "/usr/local/lib/x.so",
    ]
    .iter()
    .enumerate()
    .map(|(i, p)| (p.to_string(), i as u64))
    .collect();
    let got = dependents(root.path(), &files, &["gpu-".into()]);
    let refused: Vec<&str> = got.keys().map(String::as_str).collect();
    assert_eq!(
        refused,
        [
            "/usr/local",
            "/usr/local/bin/nsenter",
            "/var/usrlocal/sbin/touch"
        ],
        "{got:?}"
    );
    assert!(
        got["/usr/local/bin/nsenter"]
            .1
            .contains("--own-unit-prefix")
    );
}

/// What the MCO's scripts on kubelet's start path name under /etc and
/// /var that plan does not refuse, and why (review 44 r44a F2: a script's
/// own input, `/etc/node-sizing-version.json`, was missed).
const SCRIPTS_NAME_NOT_REFUSED: &[(&str, &str)] = &[
    (
        "/etc/NetworkManager",
        "NetworkManager's own configuration and keyfiles, how a pool's network is set up: \
         priced by the MCO's policy",
    ),
    ("/etc/resolv.conf", "written by update-dns-server"),
    (
        "/etc/kubernetes/node.env",
        "kubelet's EnvironmentFile=: kubelet_unit's",
    ),
    (
        "/etc/systemd/system/kubelet.service.d",
        "kubelet's drop-ins, written by the scripts: kubelet_unit's",
    ),
    (
        "/var/lib/mco/nm-clean-initrd-state",
        "a stamp the script writes; there, it only skips a cleanup",
    ),
    (
        "/var/run",
        "/run, a new tmpfs at every boot: nothing written there is left",
    ),
];

/// The absolute paths under /etc and /var that `text` names, as far as
/// they are literal (`/etc/x/${HOST}.yml` names `/etc/x`).
fn absolute_paths(text: &str) -> Vec<&str> {
    let part = |c: char| c.is_ascii_alphanumeric() || "._@/-".contains(c);
    let mut out = Vec::new();
    for (i, _) in text.match_indices(['/']) {
        let rest = &text[i..];
        let before = text[..i].chars().next_back();
        if !(rest.starts_with("/etc/") || rest.starts_with("/var/"))
            || before.is_some_and(|c| part(c) || "$}".contains(c))
        {
            continue;
        }
        let end = rest.find(|c| !part(c)).unwrap_or(rest.len());
        out.push(rest[..end].trim_end_matches(['/', '.', '-']));
    }
    out
}

/// Every path under /etc and /var that the MCO's templates of the start
/// path's scripts (the programs of [`NEEDED_FILES`]) name is refused, or
/// listed with why not; each listed entry is still named by one.
#[test]
fn what_the_start_path_s_scripts_name_is_refused_or_said_why_not() {
    let Some(oracle) = crate::skipped::shared("oracles/mco") else {
        return;
    };
    let out = std::process::Command::new("bash")
        .arg(oracle.join("unpack.sh"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let templates = std::path::Path::new(text.lines().nth(1).unwrap()).join("templates");
    let programs: Vec<&str> = (NEEDED_FILES.iter())
        .map(|(f, _)| *f)
        .filter(|f| f.starts_with("/usr/local/"))
        .collect();
    let (mut scripts, mut named) = (Vec::new(), BTreeMap::new());
    let mut dirs = vec![templates];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let file = text
                .lines()
                .find(|l| l.starts_with("path:"))
                .unwrap_or_default();
            let Some(program) = programs.iter().find(|p| file.contains(&format!("\"{p}\""))) else {
                continue;
            };
            scripts.push(*program);
            for p in absolute_paths(&text) {
                named.insert(p.to_string(), *program);
            }
        }
    }
    assert!(scripts.len() >= 12, "{scripts:?}");
    let listed = |p: &str| {
        (SCRIPTS_NAME_NOT_REFUSED.iter()).find(|(l, _)| p == *l || p.starts_with(&format!("{l}/")))
    };
    for (p, script) in &named {
        assert!(
            needed_path(p).is_some() || listed(p).is_some(),
            "{script} names {p}: add it to NEEDED_FILES, or to SCRIPTS_NAME_NOT_REFUSED with why"
        );
    }
    for (l, _) in SCRIPTS_NAME_NOT_REFUSED {
        assert!(
            named.keys().any(|p| listed(p).is_some_and(|(m, _)| m == l)),
            "no script names {l} any more"
        );
    }
}
