//! Node facts under NFD's feature names, read at boot from files under the
//! node root (`/sys`, `/proc`, os-release) and never by running a program.
//! std only: the wrapper calls this. Knows nothing of systemd or kubelet.
//! A source that is missing or unreadable is an absent feature, never an error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod cpuid;
pub mod json;
mod labels;
mod sources;

pub use labels::nfd_labels;

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
}

/// Read every feature this module knows from the node tree.
pub fn read(opts: &FactsOptions) -> Features {
    let fs = NodeTree { root: opts.root };
    let mut f = Features::default();
    sources::pci(&fs, &mut f);
    sources::usb(&fs, &mut f);
    sources::cpu(&fs, &mut f);
    sources::kernel(&fs, &mut f);
    sources::system(&fs, opts.nodename, &mut f);
    sources::memory(&fs, &mut f);
    sources::storage(&fs, &mut f);
    sources::network(&fs, &mut f);
    f
}

/// Bounded reads under the node root. Every failure is "absent".
pub(crate) struct NodeTree<'a> {
    root: &'a Path,
}

/// No sysfs or proc file we read is near this; a bigger one is not what we
/// think it is.
const MAX_FILE: u64 = 256 * 1024;
/// Entries per directory we look at (PCI functions, CPUs, block devices).
const MAX_ENTRIES: usize = 4096;

impl NodeTree<'_> {
    fn path(&self, node_path: &str) -> std::path::PathBuf {
        self.root.join(node_path.trim_start_matches('/'))
    }

    /// A file's text, trimmed of surrounding whitespace.
    pub(crate) fn text(&self, node_path: &str) -> Option<String> {
        use std::io::Read;
        let file = std::fs::File::open(self.path(node_path)).ok()?;
        let mut buf = Vec::new();
        file.take(MAX_FILE).read_to_end(&mut buf).ok()?;
        Some(String::from_utf8_lossy(&buf).trim().to_string())
    }

    /// Entry names of a directory, sorted (sysfs order is not stable).
    pub(crate) fn list(&self, node_path: &str) -> Option<Vec<String>> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(node_path))
            .ok()?
            .take(MAX_ENTRIES)
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Some(names)
    }

    pub(crate) fn exists(&self, node_path: &str) -> bool {
        self.path(node_path).exists()
    }
}

/// Which NFD deployment's built-in label set to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NfdFlavour {
    /// kubernetes-sigs/node-feature-discovery defaults (`pci-0302_10de.present`).
    Upstream,
    /// OpenShift's NFD operator defaults (`pci-10de.present`, os-release extras).
    OpenShift,
}
