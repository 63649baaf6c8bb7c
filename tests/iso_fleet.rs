//! `iso fleet` from the ISO to the destination config, with the real
//! programs: coreos-installer reads the ISO back, real Ignition lays the live
//! config down, and coreos-installer's own live-system generator and
//! `coreos-installer-service` script (../shared/fixtures/coreos-installer/live,
//! unchanged) run in a private mount namespace, with `coreos-installer
//! install` (0.27.0) reading the install configuration our config wrote.
//! Each fixture node's facts stand in for the machine's. The command's own
//! checks, with a stand-in selector: iso_fleet_cli.rs.

use crate::support::iso::{self, gitops, rules};
use crate::support::{bin, ignition_oracle, mco, repo, scratch_dir, skipped, systemd_oracle};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub(crate) const PEM: &str =
    "-----BEGIN CERTIFICATE-----\nMIIBCgKCAQEAfleetTestCA=\n-----END CERTIFICATE-----\n";
pub(crate) const MCS: &str = "https://api-int.ocp.example.com:22623";

/// `iso fleet` from `base` to `iso` with the test rules, NFD's openshift
/// labels, the test MCS and CA and the selector `sel`; the pools to add.
fn fleet_cmd(iso: &Path, base: &Path, dest: &str, ca: &Path, sel: &Path) -> Command {
    let mut c = bin();
    c.args(["iso", "fleet", "-o"])
        .arg(iso)
        .arg(base)
        .args(["--dest-device", dest, "--nfd-labels", "openshift"])
        .arg("--rules")
        .arg(rules())
        .args(["--mcs-url", MCS, "--ca-file"])
        .arg(ca)
        .arg("--selector")
        .arg(sel);
    c
}

pub(crate) fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn shared(rel: &str) -> Option<PathBuf> {
    skipped::shared(rel)
}

/// The static selector, built as the shipped one is (build-wrapper.sh), in
/// the target directory tests/payload.rs builds in.
pub(crate) fn selector(arch: &str) -> Option<PathBuf> {
    let target = format!("{arch}-unknown-linux-musl");
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(&target));
    if !installed {
        skipped::skipped(&format!(
            "rust target {target} is not installed (rustup target add)"
        ));
        return None;
    }
    let out = ok(Command::new("bash")
        .arg(repo().join("machineconfigs/build-wrapper.sh"))
        .args([arch, "kubelet-labeler-select"])
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("../payload-test"),
        )
        .output()
        .expect("running build-wrapper.sh"));
    Some(PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()))
}

/// The fixture ISO decompressed into `dir`; None (skipped, one line)
/// without it.
pub(crate) fn base_iso(dir: &Path) -> Option<PathBuf> {
    let xz = shared("fixtures/coreos-installer/synthetic-coreos-base.iso.xz")?;
    Some(iso::base_iso(dir, xz.parent().unwrap()))
}

/// The pointer config the installer writes (spec 3.2.0, CA as a plain
/// base64 data URL), as `oc get secret <pool>-user-data-managed -o yaml`.
fn secret(dir: &Path, pool: &str) -> PathBuf {
    use base64::Engine;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let pointer = format!(
        r#"{{"ignition":{{"config":{{"merge":[{{"source":"{MCS}/config/{pool}"}}]}},"security":{{"tls":{{"certificateAuthorities":[{{"source":"data:text/plain;charset=utf-8;base64,{}"}}]}}}},"version":"3.2.0"}}}}"#,
        b64(PEM.as_bytes())
    );
    secret_with(dir, pool, &pointer)
}

/// `pointer` (JSON text) as `oc get secret <pool>-user-data-managed -o
/// yaml` shows it, written to `dir/<pool>-user-data-managed.yaml`.
pub(crate) fn secret_with(dir: &Path, pool: &str, pointer: &str) -> PathBuf {
    use base64::Engine;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let p = dir.join(format!("{pool}-user-data-managed.yaml"));
    std::fs::write(
        &p,
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {pool}-user-data-managed\n  \
             namespace: openshift-machine-api\ntype: Opaque\ndata:\n  disableTemplating: dHJ1ZQo=\n  \
             userData: {}\n",
            b64(pointer.as_bytes())
        ),
    )
    .unwrap();
    p
}

/// The fleet of the tests: GPU machines, Raspberry Pis and NUMA machines
/// each have a custom pool; everything else is a worker. A DGX is a NUMA
/// machine with GPUs: two custom pools, so it must not install.
struct Fleet {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    iso: PathBuf,
    /// Each custom pool's gitops directory.
    gitops: Vec<(&'static str, PathBuf)>,
    stderr: String,
}

fn fleet(arch: &str) -> Option<Fleet> {
    let tmp = scratch_dir();
    let dir = tmp.path().to_path_buf();
    let base = base_iso(&dir)?;
    let sel = selector(arch)?;
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, PEM).unwrap();
    let gpu = gitops(
        &dir,
        "worker-gpu",
        "feature.node.kubernetes.io/gpu=true",
        &sel,
    );
    let pi = gitops(
        &dir,
        "worker-pi",
        "feature.node.kubernetes.io/raspberry-pi=true",
        &sel,
    );
    let numa = gitops(
        &dir,
        "worker-numa",
        "feature.node.kubernetes.io/memory-numa=true",
        &sel,
    );
    let iso = dir.join("fleet.iso");
    // The GPU machines on their own disk: the selector's override of
    // coreos-installer's dest-device.
    let out = ok(fleet_cmd(&iso, &base, "/dev/null", &ca, &sel)
        .arg("--pool-dest-device=worker-gpu=/dev/zero")
        .arg(format!("--pool=worker-gpu={}", gpu.display()))
        .arg(format!("--pool=worker-pi={}", pi.display()))
        .arg(format!(
            "--pool=worker-pi={}",
            secret(&dir, "worker-pi").display()
        ))
        .arg(format!("--pool=worker-numa={}", numa.display()))
        .arg(format!(
            "--pool=worker={}",
            secret(&dir, "worker").display()
        ))
        .output()
        .unwrap());
    Some(Fleet {
        _dir: tmp,
        dir,
        iso,
        gitops: vec![
            ("worker-gpu", gpu),
            ("worker-pi", pi),
            ("worker-numa", numa),
        ],
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// The live config, as coreos-installer reads it back from the ISO.
fn live_config(iso: &Path) -> Option<Value> {
    let ci = skipped::tool("coreos-installer")?;
    let out = ok(Command::new(ci)
        .args(["iso", "ignition", "show"])
        .arg(iso)
        .output()
        .unwrap());
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// What happened on one machine's live boot.
#[derive(Debug)]
struct Boot {
    /// The generator switched the boot to the install target.
    install_target: bool,
    selector_ok: bool,
    selector_said: String,
    /// coreos-installer's own output (its script, then the program).
    installer_said: String,
    /// The destination config coreos-installer was given, if any.
    dest: Option<Vec<u8>>,
}

const NAMESPACE_SCRIPT: &str = r#"
set -u
root=$1 facts=$2 live=$3 s=$4
mount -t tmpfs tmpfs /run
mkdir -p "$s/upper" "$s/work" "$s/gen" "$s/bin"
cp -a "$root/etc/coreos" "$root/etc/kubelet-labeler" "$root/etc/systemd" "$s/upper/"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$s/upper,workdir=$s/work" /etc
printf 'BOOT_IMAGE=/images/pxeboot/vmlinuz coreos.liveiso=COREOS_TEST ignition.firstboot ignition.platform.id=metal\n' >"$s/cmdline"
mount --bind "$s/cmdline" /proc/cmdline
mount --bind /dev/null /dev/kmsg
printf '#!/bin/sh\nexit 0\n' >"$s/bin/udevadm"; chmod +x "$s/bin/udevadm"
bash "$live/systemd/coreos-installer-generator" "$s/gen"
exe=$(sed -n 's/^ExecStart=//p' /etc/systemd/system/kubelet-labeler-fleet.service)
$RUNNER "$root$exe" --facts-root "$facts" 2>"$s/selector.out"
echo $? >"$s/selector.rc"
PATH="$s/bin:$PATH" bash "$live/scripts/coreos-installer-service" >"$s/installer.out" 2>&1
if [ -f /run/kubelet-labeler-fleet/dest.ign ]; then cp /run/kubelet-labeler-fleet/dest.ign "$s/dest.ign"; fi
"#;

/// Lay the live config down with real Ignition, then boot `node`'s facts
/// through the live install flow in a private mount namespace; `runner`
/// (qemu) stands in for another architecture's CPU.
fn boot(live: &Value, node: &str, scratch: &Path, runner: &str) -> Boot {
    let root = scratch.join("root");
    ignition_oracle::apply(live, &root, &scratch.join("ignition"));
    let facts = repo().join("tests/fixtures/nodes").join(node);
    let live_dir = repo().join("../shared/fixtures/coreos-installer/live");
    let s = scratch.join("ns");
    std::fs::create_dir_all(&s).unwrap();
    let ci = skipped::tool("coreos-installer").unwrap();
    let path = format!(
        "{}:{}",
        ci.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "bash",
            "-c",
            NAMESPACE_SCRIPT,
            "ns",
        ])
        .arg(&root)
        .arg(&facts)
        .arg(&live_dir)
        .arg(&s)
        .env("PATH", path)
        .env("RUNNER", runner)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the namespace script: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |n: &str| std::fs::read_to_string(s.join(n)).unwrap_or_default();
    Boot {
        install_target: std::fs::read_link(s.join("gen/default.target"))
            .is_ok_and(|t| t.ends_with("coreos-installer-post.target")),
        selector_ok: read("selector.rc").trim() == "0",
        selector_said: read("selector.out"),
        installer_said: read("installer.out"),
        dest: std::fs::read(s.join("dest.ign")).ok(),
    }
}

fn can_boot() -> bool {
    if !skipped::need(ignition_oracle::IGNITION) || !skipped::need("unshare") {
        return false;
    }
    let ns = Command::new("unshare")
        .args(["--mount", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ns {
        skipped::skipped("`unshare --mount` does not work here (needs root)");
    }
    ns
}

/// coreos-installer, run without the selector's choice, stops before
/// writing: no destination config, or (a fleet with a pool on its own disk,
/// whose devices only the selector names) no device.
fn nothing_to_install(installer_said: &str) -> bool {
    installer_said.contains("opening source Ignition config")
        || installer_said
            .contains("the following required arguments were not provided:\n      <DEST_DEVICE>")
}

/// Boot `node` from the fleet ISO and check where it installs: `pool`, or
/// (None) nowhere, because it matches two custom pools.
fn check(f: &Fleet, live: &Value, node: &str, pool: Option<&str>, runner: &str) {
    let scratch = f.dir.join(format!("boot-{node}"));
    let b = boot(live, node, &scratch, runner);
    assert!(
        b.install_target,
        "{node}: the generator did not start the install: {b:?}"
    );
    let Some(pool) = pool else {
        assert!(!b.selector_ok, "{node}: {b:?}");
        assert!(
            b.selector_said.contains("not installing:")
                && b.selector_said.contains("2 custom pools")
                && b.selector_said.contains("worker-gpu")
                && b.selector_said.contains("worker-numa"),
            "{node}: {}",
            b.selector_said
        );
        // Even run anyway, coreos-installer finds no destination config and
        // installs nothing.
        assert!(b.dest.is_none(), "{node}");
        assert!(
            nothing_to_install(&b.installer_said),
            "{node}: {}",
            b.installer_said
        );
        return;
    };
    assert!(b.selector_ok, "{node}: {b:?}");
    assert!(
        b.selector_said
            .contains(&format!("installing into pool {pool}:")),
        "{node}: {}",
        b.selector_said
    );
    // coreos-installer accepted the configuration (our ignition-file
    // included, and for the GPU pool the selector's device override after
    // it) and stopped only at the device.
    assert!(
        b.installer_said
            .contains("--config-file /etc/coreos/installer.d/0000-kubelet-labeler-fleet.yaml")
            && b.installer_said.contains("not a block device"),
        "{node}: {}",
        b.installer_said
    );
    // One pool has its own disk, so the selector names every pool's: the
    // GPU pool's /dev/zero, the ISO's /dev/null for the rest; coreos-installer
    // was given exactly that one.
    assert!(
        b.installer_said.contains(
            "--config-file /etc/coreos/installer.d/0001-kubelet-labeler-fleet-device.yaml"
        ),
        "{node}: {}",
        b.installer_said
    );
    let (dev, other) = if pool == "worker-gpu" {
        ("/dev/zero", "/dev/null")
    } else {
        ("/dev/null", "/dev/zero")
    };
    let given: Vec<&str> = b
        .installer_said
        .lines()
        .find_map(|l| l.strip_prefix("Running with arguments:"))
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert!(
        given.contains(&dev) && !given.contains(&other),
        "{node}: {}",
        b.installer_said
    );
    let dest: Value = serde_json::from_slice(b.dest.as_ref().unwrap()).unwrap();
    assert_eq!(
        dest.pointer("/ignition/config/merge/0/source"),
        Some(&Value::from(format!("{MCS}/config/{pool}"))),
        "{node}"
    );
    let record = dest
        .pointer("/storage/files/0/path")
        .and_then(Value::as_str);
    assert_eq!(
        record,
        Some("/etc/kubelet-labeler/installed-pool"),
        "{node}"
    );
    if runner.is_empty() {
        same_answer_at_registration(f, &scratch, node, pool, &dest);
    }
}

/// The node as the pool's config makes it (the MCO's 4.20 worker kubelet
/// unit, the pool's MachineConfigs, the installed-pool record from the
/// destination config): `explain` on `facts`, as JSON.
fn explain_installed(f: &Fleet, scratch: &Path, pool: &str, dest: &Value, facts: &str) -> Value {
    let dir = scratch.join("explain");
    std::fs::create_dir_all(&dir).unwrap();
    let mco_dir = mco::require_fixtures().unwrap();
    let (_, unit) = mco::kubelet_units(&mco_dir)
        .into_iter()
        .find(|(n, _)| {
            n.starts_with("release-4.20__") && n.contains("worker__01-worker-kubelet___base")
        })
        .expect("the 4.20 worker kubelet unit");
    let write = |name: &str, v: &Value| {
        let p = dir.join(name);
        std::fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
        p
    };
    let mut mcs = vec![write(
        "01-worker-kubelet.json",
        &mco::mco_machineconfig(&unit),
    )];
    let record = serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": { "name": "00-installed-pool",
                      "labels": { "machineconfiguration.openshift.io/role": pool } },
        "spec": { "config": { "ignition": { "version": "3.2.0" },
                              "storage": { "files": dest.pointer("/storage/files").unwrap() } } }
    });
    mcs.push(write("00-installed-pool.json", &record));
    // A pool's MachineConfigs (wrapper, labels and rules) all have the
    // pool's role: only its own gitops directory reaches its nodes.
    for (name, g) in &f.gitops {
        for e in std::fs::read_dir(g).unwrap() {
            let p = e.unwrap().path();
            let file = p.file_name().unwrap().to_string_lossy().into_owned();
            if *name == pool && file.starts_with("50-") {
                mcs.push(p);
            }
        }
    }
    let mut c = bin();
    c.args([
        "explain",
        "--profile",
        "openshift",
        "--json",
        "--facts-root",
    ])
    .arg(repo().join("tests/fixtures/nodes").join(facts));
    for m in &mcs {
        c.arg("--machineconfig").arg(m);
    }
    let out = c.output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The same answer twice: what the node registers with, once installed
/// from the pool's config (the wrapper's plan, through `explain`), places
/// it in the pool the install chose, by the same MCO precedence.
fn same_answer_at_registration(f: &Fleet, scratch: &Path, node: &str, pool: &str, dest: &Value) {
    use kubelet_labeler::node::fleet::{Table, base_labels, choose};
    let table = Table::parse(
        &std::fs::read_to_string(scratch.join("root/etc/kubelet-labeler/fleet/pools")).unwrap(),
    )
    .unwrap();
    let e = explain_installed(f, scratch, pool, dest, node);
    let argv: Vec<String> = serde_json::from_value(e["argv"].clone()).unwrap();
    let mut labels = base_labels();
    for u in kubelet_labeler::node::kubelet::flags::scan(&argv).uses("node-labels") {
        labels.extend(kubelet_labeler::node::kubelet::parse_node_labels(
            u.value.as_deref().unwrap(),
        ));
    }
    assert_eq!(
        choose(&table.pools, &labels).map(|p| p.name.as_str()),
        Ok(pool),
        "{node}: {argv:?}"
    );
    let warnings = e["warnings"].to_string();
    assert!(
        !warnings.contains("installed-pool") && !warnings.contains("installed for pool"),
        "{node}: {warnings}"
    );
}

/// From the ISO to the destination config coreos-installer is given, on
/// the x86_64 fixture nodes: each installs into the pool its hardware
/// selects (the non-GPU server, NUMA and a BMC's VGA, into the NUMA pool);
/// the DGX (GPUs and NUMA: two custom pools) does not install.
#[test]
fn each_machine_installs_into_its_pool() {
    let Some(f) = fleet("x86_64") else { return };
    assert!(
        f.stderr.contains("of 262144 bytes of the embed area"),
        "{}",
        f.stderr
    );
    let Some(live) = live_config(&f.iso) else {
        return;
    };
    if !can_boot() || shared("fixtures/coreos-installer/live").is_none() {
        return;
    }
    for (node, pool) in [
        ("desktop-2gpu", Some("worker-gpu")),
        ("vm", Some("worker")),
        ("server", Some("worker-numa")),
        ("dgx", None),
    ] {
        check(&f, &live, node, pool, "");
    }
    // The GPU desktop's installed system, its GPUs gone (the VM's facts):
    // `explain` says the node no longer matches the pool it was installed for.
    let scratch = f.dir.join("boot-desktop-2gpu");
    let dest: Value =
        serde_json::from_slice(&std::fs::read(scratch.join("ns/dest.ign")).unwrap()).unwrap();
    let e = explain_installed(&f, &scratch, "worker-gpu", &dest, "vm");
    let warnings = e["warnings"].to_string();
    assert!(
        warnings.contains(
            "installed for pool worker-gpu (nodeSelector feature.node.kubernetes.io/gpu=true)"
        ) && warnings.contains("hardware no longer matches it"),
        "{warnings}"
    );
}

/// A Raspberry Pi boots the aarch64 fleet ISO (its selector under
/// qemu-aarch64-static here): it reads ARM CPU facts and installs into the
/// Pi pool.
#[test]
fn a_raspberry_pi_installs_from_the_aarch64_iso() {
    let Some(qemu) = skipped::tool("qemu-aarch64-static") else {
        return;
    };
    let Some(f) = fleet("aarch64") else { return };
    let Some(live) = live_config(&f.iso) else {
        return;
    };
    if !can_boot() || shared("fixtures/coreos-installer/live").is_none() {
        return;
    }
    check(
        &f,
        &live,
        "rpi4",
        Some("worker-pi"),
        &qemu.display().to_string(),
    );
    // Our code cannot run: nothing is installed. Not by running the aarch64
    // selector here, which a host with qemu's binfmt_misc handler runs
    // (Debian's qemu-user-static registers it): the selector is cut short
    // after its ELF header, which no machine executes.
    let mut cut = live.clone();
    let sel = cut
        .pointer_mut("/storage/files")
        .and_then(Value::as_array_mut)
        .and_then(|files| {
            files
                .iter_mut()
                .find(|f| f["path"].as_str() == Some(kubelet_labeler::node::fleet::SELECT_PATH))
        })
        .expect("the selector in the live config");
    let header = std::fs::read(selector("aarch64").unwrap()).unwrap();
    sel["contents"] = serde_json::json!({
        "source": format!(
            "data:;base64,{}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &header[..64])
        )
    });
    let b = boot(&cut, "vm", &f.dir.join("boot-cannot-run"), "");
    assert!(!b.selector_ok && b.dest.is_none(), "{b:?}");
    assert!(
        nothing_to_install(&b.installer_said),
        "{}",
        b.installer_said
    );
}

/// What the fleet config takes of the 256 KiB embed area with 2 and 5
/// pools (the selector, the rules, a pointer config with the CA per pool),
/// measured on the ISO coreos-installer reads back; the README quotes it.
#[test]
fn two_and_five_pools_fit_the_embed_area() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    let Some(base) = base_iso(dir) else { return };
    let Some(sel) = selector("x86_64") else {
        return;
    };
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, PEM).unwrap();
    let mut pools = Vec::new();
    // Each on a label some machine has at install: NFD's for a PCI vendor.
    for (name, vendor) in [("a", "10de"), ("b", "8086"), ("c", "1002"), ("d", "15b3")] {
        let pool = format!("worker-{name}");
        let label = format!("feature.node.kubernetes.io/pci-{vendor}.present=true");
        pools.push(format!(
            "--pool={pool}={}",
            gitops(dir, &pool, &label, &sel).display()
        ));
    }
    for n in [2, 5] {
        let iso = dir.join(format!("fleet-{n}.iso"));
        let out = ok(fleet_cmd(&iso, &base, "/dev/sda", &ca, &sel)
            .args(&pools[..n - 1])
            .arg("--pool=worker")
            .output()
            .unwrap());
        let said = String::from_utf8_lossy(&out.stderr);
        let used: u64 = said
            .split("): ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{said}"));
        assert!(used < 262_144, "{said}");
        println!("{n} pools: {used} of 262144 bytes");
        if let Some(live) = live_config(&iso) {
            let pools = live.pointer("/storage/files").unwrap().as_array().unwrap();
            // selector, table, installer config, one config per pool
            assert_eq!(pools.len(), 3 + n, "{live}");
        }
    }
}

/// The ordering, by a real `systemd --user`: the live config's unit and its
/// drop-in on coreos-installer's own (unchanged) `coreos-installer.service`.
/// The selector runs first; when it fails, coreos-installer.service never
/// starts and `OnFailure=` takes the live system to emergency mode. Test
/// drop-ins only point the selector at the fixture's facts and send output
/// to files.
#[test]
fn systemd_starts_coreos_installer_only_after_a_choice() {
    let Some(f) = fleet("x86_64") else { return };
    let Some(live) = live_config(&f.iso) else {
        return;
    };
    if !can_boot() || systemd_oracle::unavailable().is_some() {
        return;
    }
    let Some(live_dir) = shared("fixtures/coreos-installer/live") else {
        return;
    };
    let ci = skipped::tool("coreos-installer").unwrap();
    for (node, pool) in [("desktop-2gpu", Some("worker-gpu")), ("dgx", None)] {
        let scratch = f.dir.join(format!("systemd-{node}"));
        let root = scratch.join("root");
        ignition_oracle::apply(&live, &root, &scratch.join("ignition"));
        let out = scratch.join("out");
        let test_units = scratch.join("test-units");
        let libexec = scratch.join("libexec");
        let bin = scratch.join("bin");
        for d in [&out, &libexec, &bin] {
            std::fs::create_dir_all(d).unwrap();
        }
        let facts = repo().join("tests/fixtures/nodes").join(node);
        let dropin = |unit: &str, text: String| {
            let d = test_units.join(format!("{unit}.d"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("zz-test.conf"), text).unwrap();
        };
        dropin(
            "kubelet-labeler-fleet.service",
            format!(
                "[Service]\nExecStart=\nExecStart=/usr/local/bin/kubelet-labeler-select --facts-root {}\n\
                 StandardOutput=file:{o}/selector.log\nStandardError=file:{o}/selector.log\n",
                facts.display(),
                o = out.display()
            ),
        );
        dropin(
            "coreos-installer.service",
            format!(
                "[Service]\nExecStartPre=/bin/cp /run/kubelet-labeler-fleet/dest.ign {o}/dest.ign\n\
                 Environment=PATH={}:{}:/usr/sbin:/usr/bin:/sbin:/bin\n\
                 StandardOutput=file:{o}/installer.log\nStandardError=file:{o}/installer.log\n",
                bin.display(),
                ci.parent().unwrap().display(),
                o = out.display()
            ),
        );
        std::fs::write(
            test_units.join("emergency.target"),
            "[Unit]\nWants=emergency-mark.service\n",
        )
        .unwrap();
        std::fs::write(
            test_units.join("emergency-mark.service"),
            format!(
                "[Service]\nType=oneshot\nExecStart=/bin/touch {}/emergency\n",
                out.display()
            ),
        )
        .unwrap();
        std::fs::copy(
            live_dir.join("scripts/coreos-installer-service"),
            libexec.join("coreos-installer-service"),
        )
        .unwrap();
        std::fs::write(bin.join("udevadm"), "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(
            bin.join("udevadm"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        std::fs::write(
            scratch.join("cmdline"),
            "BOOT_IMAGE=/images/pxeboot/vmlinuz coreos.liveiso=COREOS_TEST ignition.firstboot\n",
        )
        .unwrap();
        let mut run = systemd_oracle::UserRun::new(
            vec![
                test_units.clone(),
                root.join("etc/systemd/system"),
                live_dir.join("systemd"),
            ],
            vec!["coreos-installer.service".into()],
        );
        run.overlays = vec![
            (PathBuf::from("/etc"), root.join("etc")),
            (PathBuf::from("/usr/local/bin"), root.join("usr/local/bin")),
            (PathBuf::from("/usr/libexec"), libexec.clone()),
        ];
        run.setup = format!(
            "mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system\n\
             mount --bind {} /proc/cmdline\nmount --bind /dev/null /dev/kmsg\n",
            scratch.join("cmdline").display()
        );
        run.settle_secs = 1.0;
        let outcomes = systemd_oracle::run_user_manager(&run, &scratch);
        let installer = &outcomes["coreos-installer.service"];
        let read = |n: &str| std::fs::read_to_string(out.join(n)).unwrap_or_default();
        let log = systemd_oracle::manager_log(&scratch);
        match pool {
            Some(pool) => {
                assert!(
                    read("selector.log").contains(&format!("installing into pool {pool}:")),
                    "{node}: {}\n{log}",
                    read("selector.log")
                );
                // It ran, after the choice, and stopped only at the device.
                assert!(
                    read("installer.log").contains("not a block device"),
                    "{node}: {installer:?}\n{}\n{log}",
                    read("installer.log")
                );
                let dest: Value = serde_json::from_str(&read("dest.ign")).unwrap();
                assert_eq!(
                    dest.pointer("/ignition/config/merge/0/source"),
                    Some(&Value::from(format!("{MCS}/config/{pool}")))
                );
            }
            None => {
                assert!(
                    read("selector.log").contains("not installing:"),
                    "{node}: {}\n{log}",
                    read("selector.log")
                );
                assert!(
                    !out.join("installer.log").exists() && !out.join("dest.ign").exists(),
                    "{node}: coreos-installer ran: {installer:?}"
                );
                assert_eq!(installer.prop("ActiveState"), "inactive", "{installer:?}");
                assert!(
                    out.join("emergency").exists(),
                    "{node}: no emergency mode\n{log}"
                );
            }
        }
    }
}
