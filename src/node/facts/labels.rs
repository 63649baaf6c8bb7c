//! NFD's built-in labels (each source's GetLabels with its default config),
//! keyed `feature.node.kubernetes.io/<source>-<label>`.

use super::{Features, NfdFlavour};
use crate::node::one_of;

const PREFIX: &str = "feature.node.kubernetes.io/";

/// source/cpu default attributeBlacklist of NFD master (2026-07, commit
/// 76e6cc8): AVX10 and TDX_GUEST are the newest entries.
const CPUID_BLACKLIST: &[&str] = &[
    "AVX10",
    "BMI1",
    "BMI2",
    "CLMUL",
    "CMOV",
    "CX16",
    "ERMS",
    "F16C",
    "HTT",
    "LZCNT",
    "MMX",
    "MMXEXT",
    "NX",
    "POPCNT",
    "RDRAND",
    "RDSEED",
    "RDTSCP",
    "SGX",
    "SGXLC",
    "SSE",
    "SSE2",
    "SSE3",
    "SSE4",
    "SSE42",
    "SSSE3",
    "TDX_GUEST",
];

/// What `nfd_labels` reads, for either flavour: the wrapper reads only
/// these (`system.name` and `system.dmiid` give no built-in label).
pub const NFD_LABEL_FEATURES: &[&str] = &[
    "cpu.cpuid",
    "cpu.model",
    "cpu.topology",
    "kernel.version",
    "memory.numa",
    "memory.nv",
    "network.device",
    "pci.device",
    "storage.block",
    "system.osrelease",
    "usb.device",
];
/// The optional element attributes (`super::OPTIONAL_ATTRIBUTES`) it reads.
pub const NFD_LABEL_ATTRIBUTES: &[&str] = &[
    "memory.nv.devtype",
    "network.device.sriov_numvfs",
    "network.device.sriov_totalvfs",
    "pci.device.sriov_totalvfs",
    "storage.block.rotational",
    "usb.device.device",
    "usb.device.vendor",
];

pub fn nfd_labels(f: &Features, flavour: NfdFlavour) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut put = |k: String, v: &str| {
        // nfd-master drops labels whose value is not a valid label value.
        if valid_value(v) {
            out.push((format!("{PREFIX}{k}"), v.to_string()));
        }
    };
    let attrs = |name: &str| f.attributes.get(name);

    if let Some(cpuid) = f.flags.get("cpu.cpuid") {
        for flag in cpuid.iter().filter(|c| !one_of(CPUID_BLACKLIST, c)) {
            put(format!("cpu-cpuid.{flag}"), "true");
        }
    }
    for (k, v) in attrs("cpu.model").into_iter().flatten() {
        put(format!("cpu-model.{k}"), v);
    }
    if let Some(v) = attrs("cpu.topology").and_then(|t| t.get("hardware_multithreading")) {
        put("cpu-hardware_multithreading".into(), v);
    }
    for (k, v) in attrs("kernel.version").into_iter().flatten() {
        put(format!("kernel-version.{k}"), v);
    }
    // OpenShift's NFD build also labels the RHCOS version keys.
    let os_keys: &[&str] = match flavour {
        NfdFlavour::Upstream => &["ID", "VERSION_ID", "VERSION_ID.major", "VERSION_ID.minor"],
        NfdFlavour::OpenShift => &[
            "ID",
            "VERSION_ID",
            "VERSION_ID.major",
            "VERSION_ID.minor",
            "OSTREE_VERSION",
            "RHEL_VERSION",
            "OPENSHIFT_VERSION",
        ],
    };
    if let Some(os) = attrs("system.osrelease") {
        for k in os_keys {
            if let Some(v) = os.get(*k) {
                put(format!("system-os_release.{k}"), v);
            }
        }
    }
    // memory-numa only when true (NFD never writes false).
    if attrs("memory.numa")
        .and_then(|m| m.get("is_numa"))
        .is_some_and(|v| v == "true")
    {
        put("memory-numa".into(), "true");
    }
    let inst = |name: &str| f.instances.get(name).map(Vec::as_slice).unwrap_or_default();
    if !inst("memory.nv").is_empty() {
        put("memory-nv.present".into(), "true");
    }
    if inst("memory.nv")
        .iter()
        .any(|d| d.get("devtype").is_some_and(|t| t == "nd_dax"))
    {
        put("memory-nv.dax".into(), "true");
    }
    if inst("storage.block")
        .iter()
        .any(|d| d.get("rotational").is_some_and(|r| r == "0"))
    {
        put("storage-nonrotationaldisk".into(), "true");
    }
    for (attr, label) in [
        ("sriov_totalvfs", "sriov.capable"),
        ("sriov_numvfs", "sriov.configured"),
    ] {
        let positive = |d: &crate::node::sorted::SortedMap<String, String>| {
            d.get(attr)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|n| n > 0)
        };
        if inst("network.device").iter().any(positive) {
            put(format!("network-{label}"), "true");
        }
    }
    let (classes, fields): (&[&str], &[&str]) = match flavour {
        NfdFlavour::Upstream => (&["03", "0b40", "12"], &["class", "vendor"]),
        NfdFlavour::OpenShift => (&["0200", "03", "12"], &["vendor"]),
    };
    for dev in inst("pci.device") {
        let class = dev.get("class").map(String::as_str).unwrap_or("");
        if classes.iter().any(|c| class.starts_with(c)) {
            let name = join_fields(dev, fields);
            put(format!("pci-{name}.present"), "true");
            if dev.contains_key("sriov_totalvfs") {
                put(format!("pci-{name}.sriov.capable"), "true");
            }
        }
    }
    for dev in inst("usb.device") {
        let class = dev.get("class").map(String::as_str).unwrap_or("");
        if ["0e", "ef", "fe", "ff"]
            .iter()
            .any(|c| class.starts_with(c))
        {
            put(
                format!(
                    "usb-{}.present",
                    join_fields(dev, &["class", "vendor", "device"])
                ),
                "true",
            );
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether NFD's built-in sources (either flavour) can write the label
/// `key`, and its value: `None` never; `Some(None)` any value (a CPU model,
/// a kernel or OS version); `Some(Some("true"))` only `true`. What
/// `nfd_labels` writes, without the machine: the fleet ISO asks which pools
/// some machine can reach.
pub fn builtin_label_value(key: &str) -> Option<Option<&'static str>> {
    let k = key.strip_prefix(PREFIX)?;
    let any_of = |prefix: &str| k.strip_prefix(prefix).is_some_and(|rest| !rest.is_empty());
    let named = |prefix: &str, suffixes: &[&str]| {
        k.strip_prefix(prefix).is_some_and(|rest| {
            suffixes
                .iter()
                .any(|s| rest.strip_suffix(s).is_some_and(|name| !name.is_empty()))
        })
    };
    if any_of("cpu-model.")
        || any_of("kernel-version.")
        || any_of("system-os_release.")
        || k == "cpu-hardware_multithreading"
    {
        return Some(None);
    }
    let flag = k
        .strip_prefix("cpu-cpuid.")
        .is_some_and(|f| !f.is_empty() && !one_of(CPUID_BLACKLIST, f));
    let only_true =
        flag || matches!(
            k,
            "memory-numa"
                | "memory-nv.present"
                | "memory-nv.dax"
                | "storage-nonrotationaldisk"
                | "network-sriov.capable"
                | "network-sriov.configured"
        ) || named("pci-", &[".present", ".sriov.capable"])
            || named("usb-", &[".present"]);
    only_true.then_some(Some("true"))
}

fn join_fields(dev: &crate::node::sorted::SortedMap<String, String>, fields: &[&str]) -> String {
    let parts: Vec<&str> = fields
        .iter()
        .map(|f| dev.get(*f).map(String::as_str).unwrap_or(""))
        .collect();
    parts.join("_")
}

/// Kubernetes label value: empty, or ≤ 63 of `[-_.A-Za-z0-9]` starting and
/// ending alphanumeric.
fn valid_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && v.as_bytes()[0].is_ascii_alphanumeric()
            && v.as_bytes()[v.len() - 1].is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::sorted::SortedMap;

    fn gpu_node() -> Features {
        let mut f = Features::default();
        let dev = |class: &str, vendor: &str, sriov: bool| {
            let mut d = SortedMap::from([
                ("class".to_string(), class.to_string()),
                ("vendor".to_string(), vendor.to_string()),
                ("device".to_string(), "2330".to_string()),
            ]);
            if sriov {
                d.insert("sriov_totalvfs".into(), "16".into());
            }
            d
        };
        f.instances.insert(
            "pci.device".into(),
            vec![
                dev("0302", "10de", false),
                dev("0680", "10de", false),
                dev("0200", "15b3", true),
            ],
        );
        f.attributes.insert(
            "memory.numa".into(),
            SortedMap::from([
                ("is_numa".into(), "false".into()),
                ("node_count".into(), "1".into()),
            ]),
        );
        f.attributes.insert(
            "system.osrelease".into(),
            SortedMap::from([
                ("ID".into(), "rhel".into()),
                ("OSTREE_VERSION".into(), "9.6.20250701-0".into()),
            ]),
        );
        f.flags.insert(
            "cpu.cpuid".into(),
            ["AVX512F".to_string(), "SSE2".to_string()].into(),
        );
        f
    }

    fn keys(l: &[(String, String)]) -> Vec<&str> {
        l.iter()
            .map(|(k, _)| k.strip_prefix(PREFIX).unwrap())
            .collect()
    }

    #[test]
    fn upstream_and_openshift_pci_and_os_keys() {
        let f = gpu_node();
        assert_eq!(
            keys(&nfd_labels(&f, NfdFlavour::Upstream)),
            [
                "cpu-cpuid.AVX512F",
                "pci-0302_10de.present",
                "system-os_release.ID"
            ]
        );
        assert_eq!(
            keys(&nfd_labels(&f, NfdFlavour::OpenShift)),
            [
                "cpu-cpuid.AVX512F",
                "pci-10de.present",
                "pci-15b3.present",
                "pci-15b3.sriov.capable",
                "system-os_release.ID",
                "system-os_release.OSTREE_VERSION"
            ]
        );
    }

    /// Every label either flavour writes on the fixture machines (and on
    /// a made-up one) is one `builtin_label_value` allows, with its value;
    /// a key it never writes, or another value, is not.
    #[test]
    fn builtin_label_value_covers_what_nfd_labels_writes() {
        let nodes = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nodes");
        let mut sets = vec![gpu_node()];
        for node in ["desktop-2gpu", "dgx", "rpi4", "server", "vm"] {
            sets.push(crate::node::facts::read(
                &crate::node::facts::FactsOptions {
                    root: &nodes.join(node),
                    nodename: None,
                    only: None,
                    attributes: None,
                },
            ));
        }
        let mut seen = 0;
        for f in &sets {
            for flavour in [NfdFlavour::Upstream, NfdFlavour::OpenShift] {
                for (k, v) in nfd_labels(f, flavour) {
                    seen += 1;
                    match builtin_label_value(&k) {
                        Some(None) => {}
                        Some(Some(only)) => assert_eq!(v, only, "{k}"),
                        None => panic!("{k}={v} is written but not allowed"),
                    }
                }
            }
        }
        assert!(seen > 50, "{seen}");
        for never in [
            "feature.node.kubernetes.io/gpu",
            "feature.node.kubernetes.io/cpu-cpuid.SSE2",
            "feature.node.kubernetes.io/pci-.present",
            "feature.node.kubernetes.io/cpu-model.",
            "example.com/pci-10de.present",
        ] {
            assert_eq!(builtin_label_value(never), None, "{never}");
        }
    }
}
