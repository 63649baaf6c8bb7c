//! `kubelet-labeler facts` against lspci and lscpu on the fixture node trees
//! (tests/fixtures/nodes, made by make-nodes.sh) and on this machine, and
//! the built-in NFD label sets of the DGX and Pi fixtures.

use crate::support::{scratch_dir, skipped};
use skipped::need;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const NODES: [&str; 5] = ["dgx", "desktop-2gpu", "rpi4", "vm", "server"];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nodes")
        .join(name)
}

fn facts(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .arg("facts")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn facts_json(root: &Path) -> Value {
    serde_json::from_str(&facts(&["--root", root.to_str().unwrap(), "--json"])).unwrap()
}

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Sorted `class vendor device svendor sdevice` of every PCI function.
fn our_pci(j: &Value) -> Vec<String> {
    let mut v: Vec<String> = j["instances"]["pci.device"]["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let a = &e["attributes"];
            [
                "class",
                "vendor",
                "device",
                "subsystem_vendor",
                "subsystem_device",
            ]
            .map(|k| a[k].as_str().unwrap().to_string())
            .join(" ")
        })
        .collect();
    v.sort();
    v
}

/// The same from `lspci -n -vmm` (Class, Vendor, Device, SVendor, SDevice).
fn lspci_pci(args: &[&str]) -> Vec<String> {
    let mut all = vec!["-n", "-vmm"];
    all.extend_from_slice(args);
    let text = run("lspci", &all);
    let mut v: Vec<String> = text
        .split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let f: BTreeMap<&str, &str> = block
                .lines()
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim(), v.trim()))
                .collect();
            // A function without subsystem IDs has none in lspci's output;
            // sysfs then says 0000.
            ["Class", "Vendor", "Device", "SVendor", "SDevice"]
                .map(|k| f.get(k).copied().unwrap_or("0000").to_string())
                .join(" ")
        })
        .collect();
    v.sort();
    v
}

fn lscpu(root: Option<&Path>) -> BTreeMap<String, String> {
    let mut args = vec![];
    let r;
    if let Some(root) = root {
        r = root.to_str().unwrap().to_string();
        args = vec!["--sysroot", r.as_str()];
    }
    run("lscpu", &args)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn attr<'a>(j: &'a Value, feature: &str, name: &str) -> Option<&'a str> {
    j["attributes"][feature]["elements"][name].as_str()
}

/// CPU facts that lscpu also reports: sockets, SMT, NUMA nodes and, on x86,
/// vendor, family and model.
fn check_cpu(j: &Value, l: &BTreeMap<String, String>, what: &str) {
    assert_eq!(
        attr(j, "cpu.topology", "socket_count"),
        l.get("Socket(s)").map(String::as_str),
        "{what}"
    );
    let smt = l["Thread(s) per core"] != "1";
    assert_eq!(
        attr(j, "cpu.topology", "hardware_multithreading"),
        Some(if smt { "true" } else { "false" }),
        "{what}"
    );
    if let Some(n) = l.get("NUMA node(s)") {
        assert_eq!(
            attr(j, "memory.numa", "node_count"),
            Some(n.as_str()),
            "{what}"
        );
    }
    let vendor = match l["Vendor ID"].as_str() {
        "GenuineIntel" => Some("Intel"),
        "AuthenticAMD" => Some("AMD"),
        _ => None, // arm64: lscpu's Model is the revision, not NFD's id
    };
    if let Some(vendor) = vendor {
        assert_eq!(attr(j, "cpu.model", "vendor_id"), Some(vendor), "{what}");
        assert_eq!(
            attr(j, "cpu.model", "family"),
            l.get("CPU family").map(String::as_str),
            "{what}"
        );
        assert_eq!(
            attr(j, "cpu.model", "id"),
            l.get("Model").map(String::as_str),
            "{what}"
        );
    }
}

#[test]
fn fixtures_agree_with_lspci() {
    if !need("lspci") {
        return;
    }
    for n in NODES {
        let root = fixture(n);
        let sysfs = format!("sysfs.path={}", root.join("sys/bus/pci").display());
        let theirs = lspci_pci(&["-A", "linux-sysfs", "-O", &sysfs]);
        assert!(!theirs.is_empty(), "{n}");
        assert_eq!(our_pci(&facts_json(&root)), theirs, "{n}");
    }
}

#[test]
fn fixtures_agree_with_lscpu() {
    if !need("lscpu") {
        return;
    }
    // The Pi 3 has no PCI for lspci, a CPU for lscpu.
    for n in NODES.into_iter().chain(["rpi3"]) {
        let root = fixture(n);
        check_cpu(&facts_json(&root), &lscpu(Some(&root)), n);
    }
}

#[test]
fn this_machine_agrees_with_lspci_lscpu_uname_os_release() {
    if !need("lspci") || !need("lscpu") {
        return;
    }
    let j = facts_json(Path::new("/"));
    if Path::new("/sys/bus/pci/devices").exists() {
        assert_eq!(our_pci(&j), lspci_pci(&[]));
    }
    let l = lscpu(None);
    // lscpu counts sockets from the same topology files, but on a VM it may
    // not print NUMA nodes; check_cpu handles both.
    if Path::new("/sys/bus/cpu/devices").exists() {
        check_cpu(&j, &l, "/");
    }
    let uname = run("uname", &["-r"]);
    let uname = uname.trim();
    let full = attr(&j, "kernel.version", "full").unwrap();
    let sanitized: String = uname
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    assert_eq!(full, sanitized.trim_matches(|c| "-_.".contains(c)));
    let os = std::fs::read_to_string("/etc/os-release").unwrap();
    for line in os.lines() {
        if let Some(v) = line.strip_prefix("ID=") {
            assert_eq!(
                attr(&j, "system.osrelease", "ID"),
                Some(v.trim_matches('"'))
            );
        }
        if let Some(v) = line.strip_prefix("VERSION_ID=") {
            assert_eq!(
                attr(&j, "system.osrelease", "VERSION_ID"),
                Some(v.trim_matches('"'))
            );
        }
    }
}

#[test]
fn human_output_is_sorted_lines_and_hostname_override_wins() {
    let root = fixture("dgx");
    let out = facts(&[
        "--root",
        root.to_str().unwrap(),
        "--hostname-override",
        "Node-A",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
    assert!(lines.contains(&"system.name nodename=node-a"), "{out}");
    assert!(
        lines.contains(&"system.dmiid product_name=DGXH100"),
        "{out}"
    );
    let out = facts(&["--root", root.to_str().unwrap()]);
    assert!(
        out.lines().any(|l| l == "system.name nodename=dgx-h100-01"),
        "{out}"
    );
}

fn labels(node: &str, flavour: &str) -> Vec<String> {
    let root = fixture(node);
    facts(&["--root", root.to_str().unwrap(), "--nfd-labels", flavour])
        .lines()
        .map(String::from)
        .collect()
}

/// NFD defaults: kernel-version.* (no split for `+rpt` kernels), os_release
/// ID/VERSION_ID(.major/.minor) (+ OSTREE/RHEL/OPENSHIFT on OpenShift),
/// cpu-model.*, hardware_multithreading, memory-numa only when true,
/// storage-nonrotationaldisk, network-sriov.*, pci by class whitelist and
/// label fields of the flavour. cpu-cpuid.* checked separately.
#[test]
fn nfd_labels_dgx_and_pi() {
    let p = "feature.node.kubernetes.io/";
    let dgx_common = [
        "cpu-hardware_multithreading=true",
        "cpu-model.family=6",
        "cpu-model.hypervisor=none",
        "cpu-model.id=143",
        "cpu-model.vendor_id=Intel",
        "kernel-version.full=5.14.0-570.25.1.el9_6.x86_64",
        "kernel-version.major=5",
        "kernel-version.minor=14",
        "kernel-version.revision=0",
        "memory-numa=true",
        "network-sriov.capable=true",
        "network-sriov.configured=true",
    ];
    let os = [
        "system-os_release.ID=rhel",
        "system-os_release.VERSION_ID=9.6",
        "system-os_release.VERSION_ID.major=9",
        "system-os_release.VERSION_ID.minor=6",
    ];
    let non_cpuid = |node, flavour| -> Vec<String> {
        labels(node, flavour)
            .into_iter()
            .filter(|l| !l.starts_with(&format!("{p}cpu-cpuid.")))
            .map(|l| l.strip_prefix(p).unwrap().to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let mut want: Vec<&str> = dgx_common.to_vec();
    want.extend([
        "pci-0302_10de.present=true",
        "storage-nonrotationaldisk=true",
    ]);
    want.extend(os);
    want.sort();
    assert_eq!(non_cpuid("dgx", "upstream"), want);
    let mut want: Vec<&str> = dgx_common.to_vec();
    // ConnectX-7 here is class 0207 (InfiniBand): not in OpenShift's 0200.
    want.extend(["pci-10de.present=true", "storage-nonrotationaldisk=true"]);
    want.extend(os);
    want.extend([
        "system-os_release.OPENSHIFT_VERSION=4.19",
        "system-os_release.OSTREE_VERSION=9.6.20250701-0",
        "system-os_release.RHEL_VERSION=9.6",
    ]);
    want.sort();
    assert_eq!(non_cpuid("dgx", "openshift"), want);

    let cpuid: Vec<String> = labels("dgx", "upstream")
        .into_iter()
        .filter(|l| l.contains("cpu-cpuid."))
        .collect();
    for name in [
        "AVX512F",
        "AVX512FP16",
        "AMXTILE",
        "AESNI",
        "FMA3",
        "SHA",
        "X86_64_V4",
        "OSXSAVE",
    ] {
        assert!(
            cpuid.contains(&format!("{p}cpu-cpuid.{name}=true")),
            "{name}: {cpuid:?}"
        );
    }
    // NFD's default attributeBlacklist.
    for name in [
        "SSE42", "SSE4", "CMOV", "HTT", "NX", "BMI1", "LZCNT", "CLMUL", "RDRAND", "POPCNT",
    ] {
        assert!(
            !cpuid.iter().any(|l| l.contains(&format!(".{name}="))),
            "{name}"
        );
    }

    let pi = [
        "cpu-cpuid.ASIMD=true",
        "cpu-cpuid.CPUID=true",
        "cpu-cpuid.CRC32=true",
        "cpu-cpuid.EVTSTRM=true",
        "cpu-cpuid.FP=true",
        "cpu-hardware_multithreading=false",
        "cpu-model.family=15",
        "cpu-model.hypervisor=none",
        "cpu-model.id=53379",
        "cpu-model.vendor_id=ARM",
        "kernel-version.full=6.6.31_rpt-rpi-v8",
        "storage-nonrotationaldisk=true",
        "system-os_release.ID=debian",
        "system-os_release.VERSION_ID=12",
        "system-os_release.VERSION_ID.major=12",
    ];
    for flavour in ["upstream", "openshift"] {
        let got: Vec<String> = labels("rpi4", flavour)
            .iter()
            .map(|l| l.strip_prefix(p).unwrap().to_string())
            .collect();
        let mut want = pi.to_vec();
        want.sort();
        let mut got = got;
        got.sort();
        assert_eq!(got, want, "{flavour}");
    }
}

#[test]
fn desktop_has_both_geforce_cards_and_usb_defaults() {
    let up = labels("desktop-2gpu", "upstream");
    let p = "feature.node.kubernetes.io/";
    assert!(
        up.contains(&format!("{p}pci-0300_10de.present=true")),
        "{up:?}"
    );
    // usb: class ff interface of a class-00 device; e0 (wireless) is not in
    // NFD's 0e/ef/fe/ff whitelist, 03 (HID) neither.
    let usb: Vec<&String> = up.iter().filter(|l| l.contains("usb-")).collect();
    assert_eq!(usb, [&format!("{p}usb-ff_046d_c52b.present=true")]);
    let j = facts_json(&fixture("desktop-2gpu"));
    let gpus: Vec<&str> = j["instances"]["pci.device"]["elements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["attributes"]["class"] == "0300" && e["attributes"]["vendor"] == "10de")
        .map(|e| e["attributes"]["device"].as_str().unwrap())
        .collect();
    assert_eq!(gpus, ["2f04", "2582"]);
}

/// An untrusted tree's links stay inside it: an absolute link means the
/// node's own path (under the tree), a climbing `..` stops at its top. The
/// host's files behind such links never reach the facts (and so never a
/// label a rule makes of them).
#[test]
fn facts_never_read_a_file_outside_the_root() {
    let dir = scratch_dir();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("os-release"), "ID=leaked\nVERSION_ID=9\n").unwrap();
    std::fs::write(outside.join("product"), "leaked-product\n").unwrap();
    let root = dir.path().join("root");
    let dmi = root.join("sys/class/dmi/id");
    std::fs::create_dir_all(&dmi).unwrap();
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::create_dir_all(root.join("usr/lib")).unwrap();
    // Absolute: the node's /usr/lib/os-release, not the host's.
    std::fs::write(root.join("usr/lib/os-release"), "ID=inside\nVERSION_ID=1\n").unwrap();
    std::os::unix::fs::symlink("/usr/lib/os-release", root.join("etc/os-release")).unwrap();
    // Absolute to a host path, and climbing out with `..`.
    std::os::unix::fs::symlink(outside.join("product"), dmi.join("product_name")).unwrap();
    std::os::unix::fs::symlink("../../../../../outside/os-release", dmi.join("sys_vendor"))
        .unwrap();
    // features.d reads no link at all, as on the node: neither out of the
    // tree nor to a file beside it (and, nfd-worker reading what they
    // name, its files are then not read at all).
    let features_d = root.join("etc/kubernetes/node-feature-discovery/features.d");
    std::fs::create_dir_all(&features_d).unwrap();
    std::fs::write(outside.join("cloud.env"), "key=leaked\n").unwrap();
    std::os::unix::fs::symlink(outside.join("cloud.env"), features_d.join("cloud")).unwrap();
    std::fs::write(root.join("local-file"), "beside=linked\n").unwrap();
    std::os::unix::fs::symlink("/local-file", features_d.join("beside")).unwrap();
    std::fs::write(features_d.join("own"), "own=inside\n").unwrap();
    let text = facts(&["--root", root.to_str().unwrap(), "--json"]);
    assert!(
        !text.contains("leaked") && !text.contains("linked"),
        "{text}"
    );
    assert!(text.contains("inside"), "{text}");
    assert!(!text.contains("\"own\""), "{text}");
}

/// features.d past its bounds: `facts` says the local features were not
/// read and why (at boot the node rules fail on them).
#[test]
fn facts_say_when_features_d_is_past_its_bounds() {
    let dir = scratch_dir();
    let features_d = dir
        .path()
        .join("etc/kubernetes/node-feature-discovery/features.d");
    std::fs::create_dir_all(&features_d).unwrap();
    for i in 0..2 {
        std::fs::write(features_d.join(format!("f{i}")), "a=b\n".repeat(15_000)).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["facts", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: local.feature not read")
            && err.contains("features.d: more than 64 KiB of feature files"),
        "{err}"
    );
}

/// A feature file a pod wrote: its escape codes reach the terminal of
/// whoever runs `facts` escaped, in the facts and as NFD's labels.
#[test]
fn feature_files_reach_the_terminal_escaped() {
    let dir = scratch_dir();
    let d = dir
        .path()
        .join("etc/kubernetes/node-feature-discovery/features.d");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("esc"),
        "example.com/x=\u{1b}[2J\u{1b}]52;c;aGk=\u{7}\n",
    )
    .unwrap();
    let root = dir.path().to_str().unwrap();
    for args in [
        vec!["--root", root],
        vec!["--root", root, "--nfd-labels", "upstream"],
    ] {
        let out = facts(&args);
        assert!(!out.contains('\u{1b}'), "{out:?}");
    }
    assert!(facts(&["--root", root]).contains("\\u{1b}[2J"));
}
