//! `pci.device`: one element per function under /sys/bus/pci/devices, as
//! NFD's source/pci reads it.

use std::path::Path;

use super::util::{list_dir, read_trimmed, under};
use crate::node::sorted::SortedMap;

/// A function missing any of these is skipped (NFD logs and goes on).
const MANDATORY: [&str; 5] = [
    "class",
    "vendor",
    "device",
    "subsystem_vendor",
    "subsystem_device",
];
/// Kept when readable, under these names (NFD keeps the relative path).
pub const OPTIONAL: [&str; 3] = [
    "sriov_totalvfs",
    "iommu_group/type",
    "iommu/intel-iommu/version",
];

/// `optional`: the OPTIONAL attributes to read.
pub fn devices(root: &Path, optional: &[&str]) -> Option<Vec<SortedMap<String, String>>> {
    let base = under(root, "/sys/bus/pci/devices");
    let names = list_dir(&base)?;
    let mut out = Vec::with_capacity(names.len());
    'dev: for name in names {
        let dir = base.join(&name);
        let mut attrs = from_uevent(&dir).unwrap_or_default();
        if attrs.is_empty() {
            for attr in MANDATORY {
                match read_attr(&dir, attr) {
                    Some(v) => attrs.insert(attr.to_string(), v),
                    None => continue 'dev,
                };
            }
        }
        for &attr in optional {
            if let Some(v) = read_attr(&dir, attr) {
                attrs.insert(attr.to_string(), v);
            }
        }
        out.push(attrs);
    }
    Some(out)
}

/// The mandatory attributes from the function's `uevent` (one file instead
/// of five; the kernel writes `PCI_CLASS=%04X`, `PCI_ID=%04X:%04X`,
/// `PCI_SUBSYS_ID=%04X:%04X` from the same config-space values NFD reads
/// from the single-attribute files). None when any is missing.
fn from_uevent(dir: &Path) -> Option<SortedMap<String, String>> {
    let text = read_trimmed(&dir.join("uevent"))?;
    // One pass over the lines (this runs for every PCI function at boot).
    let (mut class, mut id, mut subsys) = (None, None, None);
    for line in text.lines() {
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let slot = match name {
            "PCI_CLASS" => &mut class,
            "PCI_ID" => &mut id,
            "PCI_SUBSYS_ID" => &mut subsys,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(value.trim());
        }
    }
    let hex = |v: &str| v.bytes().all(|b| b.is_ascii_hexdigit());
    let class = class?;
    if class.is_empty() || class.len() > 6 || !hex(class) {
        return None;
    }
    // PCI_CLASS is the 24-bit class without leading zeros; NFD keeps the
    // first 4 of its 6 digits (base class + subclass).
    let padded = format!("{class:0>6}");
    let pair = |v: &str| {
        let (a, b) = v.split_once(':')?;
        (a.len() == 4 && b.len() == 4 && hex(a) && hex(b))
            .then(|| (a.to_ascii_lowercase(), b.to_ascii_lowercase()))
    };
    let (vendor, device) = pair(id?)?;
    let (sv, sd) = pair(subsys?)?;
    Some(SortedMap::from([
        ("class".to_string(), padded[..4].to_ascii_lowercase()),
        ("vendor".to_string(), vendor),
        ("device".to_string(), device),
        ("subsystem_vendor".to_string(), sv),
        ("subsystem_device".to_string(), sd),
    ]))
}

/// sysfs gives `0x10de`; NFD drops the `0x` and keeps 4 digits of the
/// 6-digit class (base class + subclass).
fn read_attr(dir: &Path, attr: &str) -> Option<String> {
    let raw = read_trimmed(&dir.join(attr))?;
    let v = raw.strip_prefix("0x").unwrap_or(&raw).trim();
    let v = if attr == "class" && v.len() > 4 {
        v.get(..4)?
    } else {
        v
    };
    Some(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uevent_gives_what_the_attribute_files_give() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("uevent"),
            "DRIVER=x\nPCI_CLASS=60000\nPCI_ID=8086:0D57\nPCI_SUBSYS_ID=0000:0000\nPCI_SLOT_NAME=0000:00:00.0\n",
        )
        .unwrap();
        let a = from_uevent(dir.path()).unwrap();
        assert_eq!(a["class"], "0600");
        assert_eq!(a["device"], "0d57");
        assert_eq!(a["subsystem_vendor"], "0000");
        std::fs::write(dir.path().join("uevent"), "PCI_CLASS=60000\n").unwrap();
        assert!(
            from_uevent(dir.path()).is_none(),
            "incomplete: the files are read"
        );
    }
}
