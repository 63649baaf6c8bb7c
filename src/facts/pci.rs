//! `pci.device`: one element per function under /sys/bus/pci/devices, as
//! NFD's source/pci reads it.

use std::collections::BTreeMap;
use std::path::Path;

use super::util::{list_dir, read_trimmed, under};

/// A function missing any of these is skipped (NFD logs and goes on).
const MANDATORY: [&str; 5] = [
    "class",
    "vendor",
    "device",
    "subsystem_vendor",
    "subsystem_device",
];
/// Kept when readable, under these names (NFD keeps the relative path).
const OPTIONAL: [&str; 3] = [
    "sriov_totalvfs",
    "iommu_group/type",
    "iommu/intel-iommu/version",
];

pub fn devices(root: &Path) -> Option<Vec<BTreeMap<String, String>>> {
    let base = under(root, "/sys/bus/pci/devices");
    let names = list_dir(&base)?;
    let mut out = Vec::with_capacity(names.len());
    'dev: for name in names {
        let dir = base.join(&name);
        let mut attrs = BTreeMap::new();
        for attr in MANDATORY {
            match read_attr(&dir, attr) {
                Some(v) => attrs.insert(attr.to_string(), v),
                None => continue 'dev,
            };
        }
        for attr in OPTIONAL {
            if let Some(v) = read_attr(&dir, attr) {
                attrs.insert(attr.to_string(), v);
            }
        }
        out.push(attrs);
    }
    Some(out)
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
