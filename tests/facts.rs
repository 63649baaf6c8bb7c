//! `facts` on the fixture node trees (tests/fixtures/nodes, made by
//! make-nodes.sh there) and on this machine's own `/`, against what lspci,
//! lscpu, uname and os-release say about the same tree.

#[path = "support/ignition_oracle.rs"]
mod ignition_oracle;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use ignition_oracle::need;
use serde_json::Value;

const FIXTURES: &[&str] = &["dgx", "desktop-2gpu", "rpi4", "vm"];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nodes")
        .join(name)
}

fn facts_json(root: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["facts", "--json", "--root"])
        .arg(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn nfd_labels(root: &Path, flavour: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["facts", "--nfd-labels", flavour, "--root"])
        .arg(root)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// (class, vendor, device, subsystem vendor, subsystem device) per function.
type PciIds = BTreeSet<(String, String, String, String, String)>;

fn ours_pci(facts: &Value) -> PciIds {
    let s = |e: &Value, k: &str| e["attributes"][k].as_str().unwrap_or("").to_string();
    facts["instances"]["pci.device"]["elements"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        s(e, "class"),
                        s(e, "vendor"),
                        s(e, "device"),
                        s(e, "subsystem_vendor"),
                        s(e, "subsystem_device"),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `lspci -n -mm` lines: slot "class" "vendor" "device" [-rXX] [-pXX] "svendor" "sdevice".
fn lspci_pci(args: &[&str]) -> PciIds {
    let out = Command::new("lspci").args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .map(|line| {
            let q: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
            let sub = |i: usize| q.get(i).unwrap_or(&"").to_string();
            // lspci shows an all-zero subsystem as "".
            let zero = |s: String| if s.is_empty() { "0000".to_string() } else { s };
            (sub(0), sub(1), sub(2), zero(sub(3)), zero(sub(4)))
        })
        .collect()
}

fn lscpu(root: Option<&Path>) -> std::collections::BTreeMap<String, String> {
    let mut cmd = Command::new("lscpu");
    if let Some(r) = root {
        cmd.arg("--sysroot").arg(r);
    }
    let out = cmd.env("LC_ALL", "C").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn attr<'a>(facts: &'a Value, feature: &str, name: &str) -> Option<&'a str> {
    facts["attributes"][feature]["elements"][name].as_str()
}

fn check_cpu(name: &str, facts: &Value, l: &std::collections::BTreeMap<String, String>) {
    assert_eq!(
        attr(facts, "cpu.topology", "socket_count"),
        l.get("Socket(s)").map(String::as_str),
        "{name}: sockets"
    );
    let smt = l.get("Thread(s) per core").map(|t| (t != "1").to_string());
    assert_eq!(
        attr(facts, "cpu.topology", "hardware_multithreading").map(str::to_string),
        smt,
        "{name}: threads per core"
    );
    assert_eq!(
        attr(facts, "memory.numa", "node_count"),
        l.get("NUMA node(s)").map(String::as_str),
        "{name}: NUMA nodes"
    );
    let vendor = match l.get("Vendor ID").map(String::as_str) {
        Some("GenuineIntel") => "Intel",
        Some("AuthenticAMD") => "AMD",
        Some(other) => other,
        None => "",
    };
    assert_eq!(
        attr(facts, "cpu.model", "vendor_id"),
        Some(vendor),
        "{name}: vendor"
    );
    if let Some(family) = l.get("CPU family") {
        assert_eq!(
            attr(facts, "cpu.model", "family"),
            Some(family.as_str()),
            "{name}: family"
        );
        assert_eq!(
            attr(facts, "cpu.model", "id"),
            l.get("Model").map(String::as_str),
            "{name}: model"
        );
    }
}

#[test]
fn fixtures_agree_with_lspci_and_lscpu() {
    if !need("lspci", "apt-get install pciutils") || !need("lscpu", "apt-get install util-linux") {
        return;
    }
    for name in FIXTURES {
        let root = fixture(name);
        let facts = facts_json(&root);
        let sysfs = format!("sysfs.path={}/sys/bus/pci", root.display());
        let theirs = lspci_pci(&["-n", "-mm", "-A", "linux-sysfs", "-O", &sysfs]);
        assert!(!theirs.is_empty(), "{name}: lspci saw nothing");
        assert_eq!(ours_pci(&facts), theirs, "{name}: PCI devices");
        check_cpu(name, &facts, &lscpu(Some(&root)));
    }
}

#[test]
fn this_machine_agrees_with_lspci_lscpu_uname_and_os_release() {
    if !need("lspci", "apt-get install pciutils") || !need("lscpu", "apt-get install util-linux") {
        return;
    }
    let facts = facts_json(Path::new("/"));
    if Path::new("/sys/bus/pci/devices").is_dir() {
        assert_eq!(ours_pci(&facts), lspci_pci(&["-n", "-mm"]), "PCI devices");
    }
    check_cpu("/", &facts, &lscpu(None));
    let uname = Command::new("uname").arg("-r").output().unwrap();
    let release = String::from_utf8_lossy(&uname.stdout).trim().to_string();
    let full = attr(&facts, "kernel.version", "full").unwrap();
    // NFD makes characters a label value cannot hold `_`.
    assert_eq!(full.len(), release.trim_matches(['-', '_', '.']).len());
    assert!(release.starts_with(attr(&facts, "kernel.version", "major").unwrap()));
    let os = std::fs::read_to_string("/etc/os-release").unwrap();
    let id = os
        .lines()
        .find_map(|l| l.strip_prefix("ID="))
        .unwrap()
        .trim_matches('"');
    assert_eq!(attr(&facts, "system.osrelease", "ID"), Some(id));
}

#[test]
fn nfd_label_sets_of_the_fixtures() {
    let dgx = nfd_labels(&fixture("dgx"), "openshift");
    for want in [
        "feature.node.kubernetes.io/pci-10de.present=true",
        "feature.node.kubernetes.io/pci-15b3.present=true",
        "feature.node.kubernetes.io/pci-15b3.sriov.capable=true",
        "feature.node.kubernetes.io/kernel-version.full=5.14.0-427.72.1.el9_4.x86_64",
        "feature.node.kubernetes.io/kernel-version.major=5",
        "feature.node.kubernetes.io/system-os_release.ID=rhel",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID=9.6",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.major=9",
        "feature.node.kubernetes.io/system-os_release.OSTREE_VERSION=9.6.20250701-0",
        "feature.node.kubernetes.io/system-os_release.OPENSHIFT_VERSION=4.19",
        "feature.node.kubernetes.io/cpu-model.vendor_id=Intel",
        "feature.node.kubernetes.io/cpu-hardware_multithreading=true",
        "feature.node.kubernetes.io/cpu-cpuid.AVX512F=true",
        "feature.node.kubernetes.io/memory-numa=true",
        "feature.node.kubernetes.io/network-sriov.capable=true",
        "feature.node.kubernetes.io/storage-nonrotationaldisk=true",
    ] {
        assert!(
            dgx.iter().any(|l| l == want),
            "{want} missing from {dgx:#?}"
        );
    }
    // Blacklisted cpuid flags and the upstream-only forms are not there.
    assert!(!dgx.iter().any(|l| l.contains("cpu-cpuid.SSE2=")));
    assert!(!dgx.iter().any(|l| l.contains("pci-0302_10de")));
    let up = nfd_labels(&fixture("dgx"), "upstream");
    assert!(
        up.iter()
            .any(|l| l == "feature.node.kubernetes.io/pci-0302_10de.present=true")
    );
    // NVSwitches (0680) and NICs (0207) are not in upstream's classes.
    assert!(
        !up.iter()
            .any(|l| l.contains("pci-0680") || l.contains("pci-0207"))
    );
    assert!(!up.iter().any(|l| l.contains("OSTREE_VERSION")));
    let pi = nfd_labels(&fixture("rpi4"), "upstream");
    assert!(!pi.iter().any(|l| l.contains("pci-")), "{pi:?}");
    assert!(
        pi.iter()
            .any(|l| l == "feature.node.kubernetes.io/cpu-cpuid.ASIMD=true")
    );
    assert!(
        pi.iter()
            .any(|l| l == "feature.node.kubernetes.io/cpu-model.vendor_id=ARM")
    );
    // kernel-version of 6.6.31+rpt-rpi-v8: NFD's pattern fails, only full.
    assert!(
        pi.iter()
            .any(|l| l == "feature.node.kubernetes.io/kernel-version.full=6.6.31_rpt-rpi-v8")
    );
    assert!(!pi.iter().any(|l| l.contains("kernel-version.major")));
}

#[test]
fn missing_sources_are_absent_features_not_errors() {
    let empty = tempfile::tempdir().unwrap();
    let facts = facts_json(empty.path());
    assert_eq!(facts["attributes"].as_object().unwrap().len(), 0, "{facts}");
    // Garbage where numbers belong: still no error, values as read.
    let root = empty.path();
    std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
    std::fs::write(
        root.join("proc/sys/kernel/osrelease"),
        b"\xff\xfe garbage \n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("sys/bus/pci/devices/x")).unwrap();
    std::fs::write(root.join("sys/bus/pci/devices/x/class"), "nonsense").unwrap();
    let facts = facts_json(root);
    assert!(attr(&facts, "kernel.version", "full").is_some());
    assert_eq!(
        facts["instances"]["pci.device"]["elements"],
        serde_json::json!([])
    );
}
