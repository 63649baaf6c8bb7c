//! Node facts under NFD's feature names, read at boot from files under the
//! node root (`/sys`, `/proc`, os-release) and never by running a program.
//! std only: the wrapper calls this. Knows nothing of systemd or kubelet.
//! A source that is missing or unreadable is an absent feature, never an error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod cpu;
mod devices;
pub mod json;
mod kernel;
mod labels;
mod pci;
mod system;
mod util;

/// NFD's `NodeFeature` `spec.features`: each key is `<domain>.<feature>`
/// (`cpu.cpuid`, `kernel.version`, `pci.device`). One name may have more
/// than one kind, as in NFD.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// Flag features: names only (`cpu.cpuid` → `AVX512F`, ...).
    pub flags: BTreeMap<String, BTreeSet<String>>,
    /// Attribute features: name → value (`kernel.version` → `major` → `5`).
    pub attributes: BTreeMap<String, BTreeMap<String, String>>,
    /// Instance features: a list of elements, each name → value
    /// (`pci.device` → `[{class: 0302, vendor: 10de, ...}]`).
    pub instances: BTreeMap<String, Vec<BTreeMap<String, String>>>,
}

/// Every feature `read` can produce: a rule on any other feature can never
/// match at boot, so render refuses it.
pub const FEATURES: &[&str] = &[
    "cpu.cpuid",
    "cpu.model",
    "cpu.topology",
    "kernel.version",
    "memory.numa",
    "memory.nv",
    "network.device",
    "pci.device",
    "storage.block",
    "system.dmiid",
    "system.name",
    "system.osrelease",
    "usb.device",
];

/// What to read facts from.
#[derive(Debug, Clone)]
pub struct FactsOptions<'a> {
    /// The node's root (`/` at boot).
    pub root: &'a Path,
    /// kubelet's `--hostname-override`, which NFD's `system.name` nodename
    /// follows; None = the kernel hostname.
    pub nodename: Option<&'a str>,
    /// Only these features (the boot path reads what its rules use);
    /// None = all.
    pub only: Option<&'a BTreeSet<String>>,
}

/// Read every feature this module knows from the node tree.
pub fn read(opts: &FactsOptions) -> Features {
    let root = opts.root;
    let want = |name: &str| opts.only.is_none_or(|only| only.contains(name));
    let mut f = Features::default();
    let mut attr = |name: &str, read: &dyn Fn() -> Option<BTreeMap<String, String>>| {
        if want(name)
            && let Some(v) = read()
        {
            f.attributes.insert(name.to_string(), v);
        }
    };
    attr("kernel.version", &|| kernel::version(root));
    attr("system.osrelease", &|| system::osrelease(root));
    attr("system.name", &|| system::name(root, opts.nodename));
    attr("system.dmiid", &|| system::dmiid(root));
    attr("cpu.topology", &|| cpu::topology(root));
    attr("memory.numa", &|| devices::numa(root));
    if (want("cpu.model") || want("cpu.cpuid"))
        && let Some(c) = cpu::read(root)
    {
        f.attributes.insert("cpu.model".into(), c.model);
        f.flags.insert("cpu.cpuid".into(), c.cpuid);
    }
    let mut inst = |name: &str, read: &dyn Fn() -> Option<Vec<BTreeMap<String, String>>>| {
        if want(name)
            && let Some(v) = read()
        {
            f.instances.insert(name.to_string(), v);
        }
    };
    inst("pci.device", &|| pci::devices(root));
    inst("memory.nv", &|| Some(devices::nv(root)));
    inst("storage.block", &|| devices::block(root));
    inst("network.device", &|| devices::network(root));
    inst("usb.device", &|| devices::usb(root));
    f
}

/// Which NFD deployment's built-in label set to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NfdFlavour {
    /// kubernetes-sigs/node-feature-discovery defaults (`pci-0302_10de.present`).
    Upstream,
    /// OpenShift's NFD operator defaults (`pci-10de.present`, os-release extras).
    OpenShift,
}

/// The labels NFD's built-in sources of `flavour` would write for these
/// features: byte-identical keys (with `feature.node.kubernetes.io/`) and values.
pub fn nfd_labels(features: &Features, flavour: NfdFlavour) -> Vec<(String, String)> {
    labels::nfd_labels(features, flavour)
}
