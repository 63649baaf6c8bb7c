//! `memory.numa`, `memory.nv`, `memory.swap`, `memory.hugepages`,
//! `storage.block`, `network.device`, `network.virtual`, `usb.device` as
//! NFD's source/{memory,storage,network,usb} read them.

use std::path::Path;

use super::util::{CPUINFO_CAP, exists, list_dir, read_capped, read_trimmed, under};
use crate::node::sorted::SortedMap;

type Attrs = SortedMap<String, String>;

/// Entries of /sys/bus/node/devices (NFD counts them, not `online`).
pub fn numa(root: &Path) -> Option<Attrs> {
    let n = list_dir(&under(root, "/sys/bus/node/devices"))?.len();
    Some(SortedMap::from([
        ("is_numa".to_string(), (n > 1).to_string()),
        ("node_count".to_string(), n.to_string()),
    ]))
}

/// Each feature's attributes kept only when readable (element keys; the
/// files are below). `optional` arguments name the ones to read.
pub const NV_OPTIONAL: [&str; 2] = ["devtype", "mode"];
pub const BLOCK_OPTIONAL: [&str; 4] = ["dax", "rotational", "nr_zones", "zoned"];
pub const NETWORK_OPTIONAL: [&str; 5] = [
    "operstate",
    "speed",
    "sriov_numvfs",
    "sriov_totalvfs",
    "mtu",
];
pub const USB_OPTIONAL: [&str; 3] = ["vendor", "device", "serial"];

/// NVDIMM namespaces; an absent bus is an empty list, as in NFD.
pub fn nv(root: &Path, optional: &[&str]) -> Vec<Attrs> {
    let base = under(root, "/sys/bus/nd/devices");
    let names = list_dir(&base).unwrap_or_default();
    names
        .into_iter()
        .map(|n| with_files(&base.join(&n), &n, &["devtype", "mode"], optional))
        .collect()
}

pub fn block(root: &Path, optional: &[&str]) -> Option<Vec<Attrs>> {
    let base = under(root, "/sys/block");
    let names = list_dir(&base)?;
    Some(
        names
            .into_iter()
            .map(|n| {
                let q = [
                    "queue/dax",
                    "queue/rotational",
                    "queue/nr_zones",
                    "queue/zoned",
                ];
                with_files(&base.join(&n), &n, &q, optional)
            })
            .collect(),
    )
}

/// `enabled`: /proc/swaps has a line past its header (lines of only
/// white space not counted).
pub fn swap(root: &Path) -> Option<Attrs> {
    let text = read_capped(&under(root, "/proc/swaps"), CPUINFO_CAP)?;
    let lines = text.split('\n').filter(|l| !l.trim().is_empty()).count();
    Some(SortedMap::from([(
        "enabled".to_string(),
        (lines > 1).to_string(),
    )]))
}

/// `hugepages-<size>` → nr_hugepages ("" when unreadable) for each
/// /sys/kernel/mm/hugepages/hugepages-<n>kB, the size as Kubernetes
/// writes a quantity of n Ki (`2Mi`, `1Gi`, `64Ki`); `enabled` when one
/// count is above 0. No directory: only `enabled=false`.
pub fn hugepages(root: &Path) -> Option<Attrs> {
    let base = under(root, "/sys/kernel/mm/hugepages");
    let mut out = SortedMap::from([("enabled".to_string(), "false".to_string())]);
    let names = match list_dir(&base) {
        Some(n) => n,
        None if exists(&base) == Some(false) => return Some(out),
        None => return None,
    };
    let mut enabled = false;
    for name in names {
        // DirEntry.IsDir: the entry itself, links not followed.
        let is_dir = super::util::inside(&base.join(&name))
            .and_then(|p| std::fs::symlink_metadata(&*p).ok())
            .is_some_and(|m| m.is_dir());
        if !is_dir {
            continue;
        }
        let total = read_trimmed(&base.join(&name).join("nr_hugepages")).unwrap_or_default();
        let size = name.strip_prefix("hugepages-").unwrap_or(&name);
        let Some(size) = kibi_quantity(size.trim_end_matches(['k', 'B'])) else {
            continue;
        };
        enabled |= total.parse::<i64>().is_ok_and(|n| n > 0);
        let mut key = String::from("hugepages-");
        key.push_str(&size);
        out.insert(key, total);
    }
    if enabled {
        out.insert("enabled".into(), "true".into());
    }
    Some(out)
}

/// `<n>Ki` in Kubernetes' canonical form: the largest binary suffix that
/// keeps the number whole. Only plain digit strings are taken (sysfs
/// writes no other); None otherwise.
fn kibi_quantity(n: &str) -> Option<String> {
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut v: u64 = n.parse().ok()?;
    if v == 0 {
        return Some("0".into());
    }
    let mut suffix = 0;
    const SUFFIXES: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    while v.is_multiple_of(1024) && suffix + 1 < SUFFIXES.len() {
        v /= 1024;
        suffix += 1;
    }
    let mut out = v.to_string();
    out.push_str(SUFFIXES[suffix]);
    Some(out)
}

/// Interfaces without a `device` link: `name`, `operstate`, `speed`,
/// `mtu`, each file kept when readable.
pub fn network_virtual(root: &Path) -> Option<Vec<Attrs>> {
    let base = under(root, "/sys/class/net");
    let names = list_dir(&base)?;
    let files = ["operstate", "speed", "mtu"];
    Some(
        names
            .into_iter()
            .filter(|n| {
                n != "bonding_masters" && exists(&base.join(n).join("device")) != Some(true)
            })
            .map(|n| with_files(&base.join(&n), &n, &files, &files))
            .collect(),
    )
}

/// Interfaces with a `device` link (NFD's network.device; the others are
/// network.virtual). `speed` is unreadable while down.
pub fn network(root: &Path, optional: &[&str]) -> Option<Vec<Attrs>> {
    let base = under(root, "/sys/class/net");
    let names = list_dir(&base)?;
    let attrs = [
        "operstate",
        "speed",
        "device/sriov_numvfs",
        "device/sriov_totalvfs",
        "mtu",
    ];
    Some(
        names
            .into_iter()
            .filter(|n| n != "bonding_masters" && base.join(n).join("device").exists())
            .map(|n| with_files(&base.join(&n), &n, &attrs, optional))
            .collect(),
    )
}

/// `name` plus each readable file, named by its last path component, of
/// those whose name is in `optional`.
fn with_files(dir: &Path, name: &str, files: &[&str], optional: &[&str]) -> Attrs {
    let mut out = SortedMap::from([("name".to_string(), name.to_string())]);
    for f in files {
        let key = f.rsplit('/').next().unwrap_or(f);
        if !optional.contains(&key) {
            continue;
        }
        if let Some(v) = read_trimmed(&dir.join(f)) {
            out.insert(key.to_string(), v);
        }
    }
    out
}

/// USB devices (entries with idProduct): class/vendor/device/serial; a
/// device of class 00 is one element per interface with that interface's
/// class, as NFD does.
pub fn usb(root: &Path, optional: &[&str]) -> Option<Vec<Attrs>> {
    let base = under(root, "/sys/bus/usb/devices");
    let names = list_dir(&base)?;
    let mut out = Vec::new();
    for n in names {
        let dir = base.join(&n);
        if !dir.join("idProduct").exists() {
            continue;
        }
        let mut attrs = Attrs::new();
        for (attr, file) in [
            ("class", "bDeviceClass"),
            ("vendor", "idVendor"),
            ("device", "idProduct"),
            ("serial", "serial"),
        ] {
            if attr != "class" && !optional.contains(&attr) {
                continue;
            }
            if let Some(v) = read_trimmed(&dir.join(file)).filter(|v| !v.is_empty()) {
                attrs.insert(attr.into(), v);
            }
        }
        if attrs.get("class").map(String::as_str) != Some("00") {
            out.push(attrs);
            continue;
        }
        for sub in list_dir(&dir).unwrap_or_default() {
            if let Some(class) = read_trimmed(&dir.join(&sub).join("bInterfaceClass")) {
                let mut a = attrs.clone();
                a.insert("class".into(), class);
                out.push(a);
            }
        }
    }
    Some(out)
}
