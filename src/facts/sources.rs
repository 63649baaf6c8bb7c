//! One function per NFD feature source, each reading what that source of
//! nfd-worker reads (see node-feature-discovery's `source/<name>`), with its
//! attribute names and value formats.

use std::collections::{BTreeMap, BTreeSet};

use super::{Features, NodeTree, cpuid};

type Attrs = BTreeMap<String, String>;

fn attrs<const N: usize>(pairs: [(&str, String); N]) -> Attrs {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// `pci.device`: every function under /sys/bus/pci/devices; sysfs values
/// without `0x`, the class cut to its first 4 hex digits. A device missing
/// a mandatory attribute is skipped, as NFD does.
pub(crate) fn pci(fs: &NodeTree, f: &mut Features) {
    let Some(devices) = fs.list("/sys/bus/pci/devices") else {
        return;
    };
    let mut out = Vec::new();
    'dev: for dev in devices {
        let dir = format!("/sys/bus/pci/devices/{dev}");
        let mut a = Attrs::new();
        let read = |name: &str| {
            fs.text(&format!("{dir}/{name}")).map(|v| {
                let v = v.strip_prefix("0x").unwrap_or(&v).trim().to_string();
                if name == "class" && v.len() > 4 {
                    v[..4].to_string()
                } else {
                    v
                }
            })
        };
        for name in [
            "class",
            "vendor",
            "device",
            "subsystem_vendor",
            "subsystem_device",
        ] {
            match read(name) {
                Some(v) => a.insert(name.to_string(), v),
                None => continue 'dev,
            };
        }
        for name in [
            "sriov_totalvfs",
            "iommu_group/type",
            "iommu/intel-iommu/version",
        ] {
            if let Some(v) = read(name) {
                a.insert(name.to_string(), v);
            }
        }
        out.push(a);
    }
    f.instances.insert("pci.device".into(), out);
}

/// `usb.device`: devices with an `idProduct`; a device of class 00 is one
/// element per interface, with the interface's class.
pub(crate) fn usb(fs: &NodeTree, f: &mut Features) {
    let Some(devices) = fs.list("/sys/bus/usb/devices") else {
        return;
    };
    let mut out = Vec::new();
    for dev in devices {
        let dir = format!("/sys/bus/usb/devices/{dev}");
        if !fs.exists(&format!("{dir}/idProduct")) {
            continue;
        }
        let mut a = Attrs::new();
        for (name, file) in [
            ("class", "bDeviceClass"),
            ("vendor", "idVendor"),
            ("device", "idProduct"),
            ("serial", "serial"),
        ] {
            if let Some(v) = fs.text(&format!("{dir}/{file}")).filter(|v| !v.is_empty()) {
                a.insert(name.into(), v);
            }
        }
        if a.get("class").map(String::as_str) != Some("00") {
            out.push(a);
            continue;
        }
        for intf in fs.list(&dir).unwrap_or_default() {
            if let Some(class) = fs.text(&format!("{dir}/{intf}/bInterfaceClass")) {
                let mut sub = a.clone();
                sub.insert("class".into(), class);
                out.push(sub);
            }
        }
    }
    f.instances.insert("usb.device".into(), out);
}

/// `/proc/cpuinfo` of the first processor: field name → value.
fn cpuinfo_first(fs: &NodeTree) -> Attrs {
    let mut out = Attrs::new();
    let Some(text) = fs.text("/proc/cpuinfo") else {
        return out;
    };
    for line in text.lines() {
        if line.trim().is_empty() && !out.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            out.entry(k.trim().to_string())
                .or_insert_with(|| v.trim().to_string());
        }
    }
    out
}

/// `cpu.cpuid`, `cpu.model`, `cpu.topology`.
pub(crate) fn cpu(fs: &NodeTree, f: &mut Features) {
    let info = cpuinfo_first(fs);
    if let Some(flags) = info.get("flags") {
        // x86: klauspost/cpuid's names, from the kernel's flag names.
        let names: BTreeSet<String> = cpuid::x86_names(flags.split_whitespace());
        f.flags.insert("cpu.cpuid".into(), names);
        let vendor = match info.get("vendor_id").map(String::as_str) {
            Some("GenuineIntel") => "Intel",
            Some("AuthenticAMD") => "AMD",
            Some("HygonGenuine") => "Hygon",
            Some("CentaurHauls") => "VIA",
            Some("  Shanghai  ") => "Zhaoxin",
            Some(_) | None => "",
        };
        if let (Some(family), Some(model)) = (info.get("cpu family"), info.get("model")) {
            f.attributes.insert(
                "cpu.model".into(),
                attrs([
                    ("vendor_id", vendor.to_string()),
                    ("family", family.clone()),
                    ("id", model.clone()),
                ]),
            );
        }
    } else if let Some(features) = info.get("Features") {
        // arm64: the kernel's hwcap names, upper-cased.
        let names = features
            .split_whitespace()
            .map(|w| w.to_ascii_uppercase())
            .collect();
        f.flags.insert("cpu.cpuid".into(), names);
        let hex = |k: &str| {
            info.get(k)
                .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        };
        if let (Some(implementer), Some(variant), Some(part), Some(rev)) = (
            hex("CPU implementer"),
            hex("CPU variant"),
            hex("CPU part"),
            hex("CPU revision"),
        ) {
            // klauspost/cpuid reads MIDR_EL1: family = bits 23..16 (variant,
            // architecture 0xf on arm64), id = bits 15..0 (part, revision).
            let family = (variant << 4) | 0xf;
            let id = (part << 4) | rev;
            f.attributes.insert(
                "cpu.model".into(),
                attrs([
                    ("vendor_id", cpuid::arm_vendor(implementer).to_string()),
                    ("family", family.to_string()),
                    ("id", id.to_string()),
                ]),
            );
        }
    }
    // Topology: any CPU with a sibling list; distinct package ids.
    if let Some(cpus) = fs.list("/sys/bus/cpu/devices") {
        let mut ht = false;
        let mut packages = BTreeSet::new();
        let mut complete = !cpus.is_empty();
        for cpu in &cpus {
            let dir = format!("/sys/bus/cpu/devices/{cpu}/topology");
            match (
                fs.text(&format!("{dir}/thread_siblings_list")),
                fs.text(&format!("{dir}/physical_package_id")),
            ) {
                (Some(siblings), Some(pkg)) => {
                    ht |= siblings.contains([',', '-']);
                    packages.insert(pkg);
                }
                _ => {
                    complete = false;
                    break;
                }
            }
        }
        if complete {
            f.attributes.insert(
                "cpu.topology".into(),
                attrs([
                    ("hardware_multithreading", ht.to_string()),
                    ("socket_count", packages.len().to_string()),
                ]),
            );
        }
    }
}

/// `kernel.version` from /proc/sys/kernel/osrelease, as NFD parses it.
pub(crate) fn kernel(fs: &NodeTree, f: &mut Features) {
    if let Some(raw) = fs.text("/proc/sys/kernel/osrelease") {
        f.attributes
            .insert("kernel.version".into(), kernel_version(&raw));
    }
}

/// NFD: `full` is the release with anything outside `[-A-Za-z0-9_.]` made
/// `_` and trimmed of `-_.`; `major`, `minor`, `revision` from
/// `^(\d+)(\.(\d+))?(\.(\d+))?(-.*)?$` (an absent part is an empty value).
pub(crate) fn kernel_version(raw: &str) -> Attrs {
    let full: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let full = full.trim_matches(['-', '_', '.']).to_string();
    let mut out = Attrs::new();
    out.insert("full".into(), full.clone());
    let numbers = full.split('-').next().unwrap_or("");
    let parts: Vec<&str> = numbers.split('.').collect();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if (1..=3).contains(&parts.len()) && parts.iter().all(|p| digits(p)) {
        for (i, name) in ["major", "minor", "revision"].iter().enumerate() {
            out.insert((*name).into(), parts.get(i).unwrap_or(&"").to_string());
        }
    }
    out
}

/// `system.osrelease` (/etc/os-release, as NFD reads it), `system.name`,
/// `system.dmiid`.
pub(crate) fn system(fs: &NodeTree, nodename: Option<&str>, f: &mut Features) {
    let name = nodename.map(str::to_string).or_else(|| {
        fs.text("/proc/sys/kernel/hostname")
            .map(|h| h.to_lowercase())
    });
    if let Some(n) = name {
        f.attributes
            .insert("system.name".into(), attrs([("nodename", n)]));
    }
    if let Some(text) = fs.text("/etc/os-release") {
        f.attributes
            .insert("system.osrelease".into(), os_release(&text));
    }
    let mut dmi = Attrs::new();
    for name in [
        "bios_date",
        "bios_vendor",
        "bios_version",
        "board_asset_tag",
        "board_name",
        "board_vendor",
        "board_version",
        "chassis_asset_tag",
        "chassis_type",
        "chassis_vendor",
        "chassis_version",
        "product_family",
        "product_name",
        "product_sku",
        "product_version",
        "sys_vendor",
    ] {
        if let Some(v) = fs.text(&format!("/sys/devices/virtual/dmi/id/{name}")) {
            dmi.insert(name.into(), v);
        }
    }
    if !dmi.is_empty() {
        f.attributes.insert("system.dmiid".into(), dmi);
    }
}

/// NFD: lines matching `^(\w+)=(.+)`, value trimmed of `"` and `'`; then
/// `VERSION_ID.major`/`.minor` from `^(\d+)(\.(\d+))?(\..*)?$` when non-empty.
pub(crate) fn os_release(text: &str) -> Attrs {
    let mut out = Attrs::new();
    for line in text.lines() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        if k.is_empty() || !k.chars().all(word) || v.is_empty() {
            continue;
        }
        out.insert(k.to_string(), v.trim_matches(['"', '\'']).to_string());
    }
    if let Some(v) = out.get("VERSION_ID").cloned() {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let (major, rest) = match v.split_once('.') {
            Some((a, b)) => (a, Some(b)),
            None => (v.as_str(), None),
        };
        if digits(major) {
            out.insert("VERSION_ID.major".into(), major.to_string());
            if let Some(minor) = rest.and_then(|r| r.split('.').next()).filter(|m| digits(m)) {
                out.insert("VERSION_ID.minor".into(), minor.to_string());
            }
        }
    }
    out
}

/// `memory.numa` (/sys/bus/node/devices), `memory.nv` (/sys/bus/nd/devices).
pub(crate) fn memory(fs: &NodeTree, f: &mut Features) {
    if let Some(nodes) = fs.list("/sys/bus/node/devices") {
        f.attributes.insert(
            "memory.numa".into(),
            attrs([
                ("is_numa", (nodes.len() > 1).to_string()),
                ("node_count", nodes.len().to_string()),
            ]),
        );
    }
    let nv = fs
        .list("/sys/bus/nd/devices")
        .unwrap_or_default()
        .into_iter()
        .map(|dev| {
            let mut a = attrs([("name", dev.clone())]);
            for name in ["devtype", "mode"] {
                if let Some(v) = fs.text(&format!("/sys/bus/nd/devices/{dev}/{name}")) {
                    a.insert(name.into(), v);
                }
            }
            a
        })
        .collect();
    f.instances.insert("memory.nv".into(), nv);
}

/// `storage.block`: /sys/block/*/queue attributes.
pub(crate) fn storage(fs: &NodeTree, f: &mut Features) {
    let Some(devices) = fs.list("/sys/block") else {
        return;
    };
    let out = devices
        .into_iter()
        .map(|dev| {
            let mut a = attrs([("name", dev.clone())]);
            for name in ["dax", "rotational", "nr_zones", "zoned"] {
                if let Some(v) = fs.text(&format!("/sys/block/{dev}/queue/{name}")) {
                    a.insert(name.into(), v);
                }
            }
            a
        })
        .collect();
    f.instances.insert("storage.block".into(), out);
}

/// `network.device`: interfaces under /sys/class/net with a `device` (NICs,
/// not virtual ones).
pub(crate) fn network(fs: &NodeTree, f: &mut Features) {
    let Some(ifaces) = fs.list("/sys/class/net") else {
        return;
    };
    let out = ifaces
        .into_iter()
        .filter(|i| i != "bonding_masters" && fs.exists(&format!("/sys/class/net/{i}/device")))
        .map(|i| {
            let mut a = attrs([("name", i.clone())]);
            for file in [
                "operstate",
                "speed",
                "device/sriov_numvfs",
                "device/sriov_totalvfs",
                "mtu",
            ] {
                if let Some(v) = fs.text(&format!("/sys/class/net/{i}/{file}")) {
                    let name = file.rsplit('/').next().unwrap_or(file);
                    a.insert(name.into(), v);
                }
            }
            a
        })
        .collect();
    f.instances.insert("network.device".into(), out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_as_nfd_parses_them() {
        let v = kernel_version("5.14.0-427.13.1.el9_4.x86_64");
        assert_eq!(v["full"], "5.14.0-427.13.1.el9_4.x86_64");
        assert_eq!(
            (
                v["major"].as_str(),
                v["minor"].as_str(),
                v["revision"].as_str()
            ),
            ("5", "14", "0")
        );
        // `31_rpt` is no number: NFD's pattern fails, only `full` is there.
        let v = kernel_version("6.6.31+rpt-rpi-v8");
        assert_eq!(v["full"], "6.6.31_rpt-rpi-v8");
        assert!(!v.contains_key("major"));
        let v = kernel_version("6.1.0-26-amd64");
        assert_eq!(v["revision"], "0");
        let v = kernel_version("6.8");
        assert_eq!(v["minor"], "8");
        assert_eq!(v["revision"], "");
        assert!(!kernel_version("weird").contains_key("major"));
    }

    #[test]
    fn os_release_as_nfd_reads_it() {
        let r = os_release(
            "NAME=\"Red Hat Enterprise Linux CoreOS\"\nID=\"rhel\"\nVERSION_ID=\"9.6\"\n\
             OPENSHIFT_VERSION=\"4.19\"\nRHEL_VERSION=9.6\nOSTREE_VERSION='9.6.20250701-0'\n# c\n",
        );
        assert_eq!(r["ID"], "rhel");
        assert_eq!(r["VERSION_ID.major"], "9");
        assert_eq!(r["VERSION_ID.minor"], "6");
        assert_eq!(r["OSTREE_VERSION"], "9.6.20250701-0");
        let r = os_release("ID=debian\nVERSION_ID=\"12\"\n");
        assert_eq!(r["VERSION_ID.major"], "12");
        assert!(!r.contains_key("VERSION_ID.minor"));
        let r = os_release("VERSION_ID=rolling\n");
        assert!(!r.contains_key("VERSION_ID.major"));
    }
}
