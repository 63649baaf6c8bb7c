//! The labels nfd-worker's built-in sources write with their default
//! configuration (`--nfd-labels`): byte-identical keys and values, so the NFD
//! that runs later takes them over instead of adding its own beside them.
//! Sources whose features are not read here (cstate, pstate, rdt, security,
//! sst, kernel-config, selinux, swap, custom rdma) write nothing.

use super::{Features, NfdFlavour};

const PREFIX: &str = "feature.node.kubernetes.io/";

/// NFD's default cpuid attribute blacklist (source/cpu, 2026-07 main).
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

struct Flavour {
    pci_classes: &'static [&'static str],
    /// In NFD's field order (class, vendor, device, subsystem_*).
    pci_fields: &'static [&'static str],
    os_release: &'static [&'static str],
}

fn flavour(f: NfdFlavour) -> Flavour {
    match f {
        NfdFlavour::Upstream => Flavour {
            pci_classes: &["03", "0b40", "12"],
            pci_fields: &["class", "vendor"],
            os_release: &["ID", "VERSION_ID", "VERSION_ID.major", "VERSION_ID.minor"],
        },
        // openshift/cluster-nfd-operator's default worker config, and its
        // NFD's extra os-release fields (RHCOS).
        NfdFlavour::OpenShift => Flavour {
            pci_classes: &["0200", "03", "12"],
            pci_fields: &["vendor"],
            os_release: &[
                "ID",
                "VERSION_ID",
                "VERSION_ID.major",
                "VERSION_ID.minor",
                "OSTREE_VERSION",
                "RHEL_VERSION",
                "OPENSHIFT_VERSION",
            ],
        },
    }
}

/// The labels NFD's built-in sources of `flavour` would write for these
/// features, sorted by key.
pub fn nfd_labels(features: &Features, flavour_: NfdFlavour) -> Vec<(String, String)> {
    let fl = flavour(flavour_);
    let mut out = std::collections::BTreeMap::<String, String>::new();
    let mut put = |k: String, v: &str| {
        out.insert(format!("{PREFIX}{k}"), v.to_string());
    };
    let attr = |feature: &str| features.attributes.get(feature);
    let instances = |feature: &str| {
        features
            .instances
            .get(feature)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    };

    for flag in features.flags.get("cpu.cpuid").into_iter().flatten() {
        if !CPUID_BLACKLIST.contains(&flag.as_str()) {
            put(format!("cpu-cpuid.{flag}"), "true");
        }
    }
    for (k, v) in attr("cpu.model").into_iter().flatten() {
        put(format!("cpu-model.{k}"), v);
    }
    if let Some(v) = attr("cpu.topology").and_then(|t| t.get("hardware_multithreading")) {
        put("cpu-hardware_multithreading".into(), v);
    }
    for (k, v) in attr("kernel.version").into_iter().flatten() {
        put(format!("kernel-version.{k}"), v);
    }
    if let Some(os) = attr("system.osrelease") {
        for key in fl.os_release {
            if let Some(v) = os.get(*key) {
                put(format!("system-os_release.{key}"), v);
            }
        }
    }
    if attr("memory.numa")
        .and_then(|m| m.get("is_numa"))
        .map(String::as_str)
        == Some("true")
    {
        put("memory-numa".into(), "true");
    }
    if !instances("memory.nv").is_empty() {
        put("memory-nv.present".into(), "true");
    }
    if instances("memory.nv")
        .iter()
        .any(|d| d.get("devtype").map(String::as_str) == Some("nd_dax"))
    {
        put("memory-nv.dax".into(), "true");
    }
    if instances("storage.block")
        .iter()
        .any(|d| d.get("rotational").map(String::as_str) == Some("0"))
    {
        put("storage-nonrotationaldisk".into(), "true");
    }
    let positive = |d: &std::collections::BTreeMap<String, String>, k: &str| {
        d.get(k)
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|n| n > 0)
    };
    for dev in instances("network.device") {
        if positive(dev, "sriov_totalvfs") {
            put("network-sriov.capable".into(), "true");
        }
        if positive(dev, "sriov_numvfs") {
            put("network-sriov.configured".into(), "true");
        }
    }
    for dev in instances("pci.device") {
        let class = dev.get("class").map(String::as_str).unwrap_or("");
        if fl.pci_classes.iter().any(|w| class.starts_with(w)) {
            let name: Vec<&str> = fl
                .pci_fields
                .iter()
                .map(|f| dev.get(*f).map(String::as_str).unwrap_or(""))
                .collect();
            let name = name.join("_");
            put(format!("pci-{name}.present"), "true");
            if dev.contains_key("sriov_totalvfs") {
                put(format!("pci-{name}.sriov.capable"), "true");
            }
        }
    }
    for dev in instances("usb.device") {
        let class = dev.get("class").map(String::as_str).unwrap_or("");
        if ["0e", "ef", "fe", "ff"].contains(&class) {
            let name: Vec<&str> = ["class", "vendor", "device"]
                .iter()
                .map(|f| dev.get(*f).map(String::as_str).unwrap_or(""))
                .collect();
            put(format!("usb-{}.present", name.join("_")), "true");
        }
    }
    out.into_iter().collect()
}
