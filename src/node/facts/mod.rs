//! Node facts under NFD's feature names, read at boot from files under the
//! node root (`/sys`, `/proc`, os-release) and never by running a program.
//! std only: the wrapper calls this. Knows nothing of systemd or kubelet.
//! A source that is missing or unreadable is an absent feature, never an error.

use std::path::Path;

use crate::node::sorted::{SortedMap, SortedSet};

mod cpu;
mod devices;
mod inflate;
mod kernel;
mod labels;
mod leaves;
mod local;
pub use local::FEATURES_DIR;
mod pci;
mod power;
pub(crate) mod system;
mod util;

/// NFD's `NodeFeature` `spec.features`: each key is `<domain>.<feature>`
/// (`cpu.cpuid`, `kernel.version`, `pci.device`). One name may have more
/// than one kind, as in NFD.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// Flag features: names only (`cpu.cpuid` → `AVX512F`, ...).
    pub flags: SortedMap<String, SortedSet<String>>,
    /// Attribute features: name → value (`kernel.version` → `major` → `5`).
    pub attributes: SortedMap<String, SortedMap<String, String>>,
    /// Instance features: a list of elements, each name → value
    /// (`pci.device` → `[{class: 0302, vendor: 10de, ...}]`).
    pub instances: SortedMap<String, Vec<SortedMap<String, String>>>,
    /// Features that could not be read whole, each with why (features.d
    /// past its bounds, say): no rule may be evaluated on part of them, so
    /// `wrapper::derived::derive` fails as a failed evaluation does.
    pub incomplete: SortedMap<String, String>,
}

impl Features {
    /// These features only, as a read with `FactsOptions::only` gives.
    pub fn only(&self, names: &SortedSet<String>) -> Features {
        let mut out = Features::default();
        for (k, v) in self.flags.iter().filter(|(k, _)| names.contains(*k)) {
            out.flags.insert(k.clone(), v.clone());
        }
        for (k, v) in self.attributes.iter().filter(|(k, _)| names.contains(*k)) {
            out.attributes.insert(k.clone(), v.clone());
        }
        for (k, v) in self.instances.iter().filter(|(k, _)| names.contains(*k)) {
            out.instances.insert(k.clone(), v.clone());
        }
        for (k, v) in self.incomplete.iter().filter(|(k, _)| names.contains(*k)) {
            out.incomplete.insert(k.clone(), v.clone());
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.flags.is_empty()
            && self.attributes.is_empty()
            && self.instances.is_empty()
            && self.incomplete.is_empty()
    }

    /// Why these features are not whole, if they are not (the first reason).
    pub fn incomplete(&self) -> Option<&str> {
        self.incomplete.values().next().map(String::as_str)
    }
}

/// Every feature `read` can produce: a rule on any other feature can never
/// match at boot, so render refuses it.
pub const FEATURES: &[&str] = &[
    "cpu.coprocessor",
    "cpu.cpuid",
    "cpu.cstate",
    "cpu.model",
    "cpu.pstate",
    "cpu.rdt",
    "cpu.security",
    "cpu.sst",
    "cpu.topology",
    "kernel.config",
    "kernel.enabledmodule",
    "kernel.kvm",
    "kernel.loadedmodule",
    "kernel.selinux",
    "kernel.version",
    "local.feature",
    "local.label",
    "memory.hugepages",
    "memory.numa",
    "memory.nv",
    "memory.swap",
    "network.device",
    "network.virtual",
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
    pub only: Option<&'a SortedSet<String>>,
    /// Of the element attributes in `OPTIONAL_ATTRIBUTES` (each its own
    /// file, mostly absent: three failed opens per PCI function), and of
    /// `kernel.config`'s options, only these, as `<feature>.<attribute>`;
    /// None = all. An element read keeps every attribute asked for exactly
    /// as a full read has it.
    pub attributes: Option<&'a SortedSet<String>>,
}

/// Instance attributes read from a file of their own and kept only when
/// readable, by feature: what `FactsOptions::attributes` may leave out.
/// Every other attribute of an element is always read.
pub const OPTIONAL_ATTRIBUTES: &[(&str, &[&str])] = &[
    ("pci.device", &pci::OPTIONAL),
    ("network.device", &devices::NETWORK_OPTIONAL),
    ("storage.block", &devices::BLOCK_OPTIONAL),
    ("memory.nv", &devices::NV_OPTIONAL),
    ("usb.device", &devices::USB_OPTIONAL),
];

/// The features and optional attributes NFD's built-in label set reads
/// (`nfd_labels` on facts read with only these gives the same labels).
pub use labels::{NFD_LABEL_ATTRIBUTES, NFD_LABEL_FEATURES, builtin_label_value};

/// The features read partly with the CPUID instruction (x86-64): on a tree
/// they come from its recording, `CPUID_RECORDING` at its top.
pub const CPUID_FEATURES: &[&str] = &["cpu.rdt", "cpu.security", "cpu.sst"];
/// /proc/config.gz's decoder, for tests/gunzip_go.rs (compared with Go's
/// reader); only with the CLI, so the wrapper's code stays as it is.
#[cfg(feature = "cli")]
pub use inflate::gunzip;
pub use leaves::RECORDING as CPUID_RECORDING;
/// This CPU's CPUID leaves the reads ask for, as a tree's recording holds
/// them; None off x86-64.
#[cfg(feature = "cli")]
pub use leaves::record as record_cpuid;

/// Whether the CPUID parts are unknown under `root`: a tree (not `/`)
/// without a recording.
#[cfg(feature = "cli")]
pub fn cpuid_unknown(root: &Path) -> bool {
    // Read as `read` reads it: inside the tree, links followed there.
    util::contained_in(root, || {
        matches!(leaves::Leaves::of(root), leaves::Leaves::Unknown)
    })
}

/// The architecture of the machine whose tree this is (`uname -m`'s
/// name), from its /proc/cpuinfo; None when that does not tell.
#[cfg(feature = "cli")]
pub fn machine_arch(root: &Path) -> Option<&'static str> {
    util::contained_in(root, || cpu::arch(root))
}

/// Read every feature this module knows from the node tree.
pub fn read(opts: &FactsOptions) -> Features {
    util::contained_in(opts.root, || read_in(opts))
}

fn read_in(opts: &FactsOptions) -> Features {
    let root = opts.root;
    let want = |name: &str| opts.only.is_none_or(|only| only.contains(name));
    // The optional attributes of `feature` to read, by element key.
    let optional = |feature: &str| -> Vec<&'static str> {
        let all = OPTIONAL_ATTRIBUTES
            .iter()
            .find(|(f, _)| *f == feature)
            .map_or(&[][..], |(_, a)| *a);
        all.iter()
            .copied()
            .filter(|a| {
                opts.attributes
                    .is_none_or(|set| set.contains(&format!("{feature}.{a}")))
            })
            .collect()
    };
    let mut f = Features::default();
    let mut attr = |name: &str, read: &dyn Fn() -> Option<SortedMap<String, String>>| {
        if want(name)
            && let Some(v) = read()
        {
            f.attributes.insert(name.to_string(), v);
        }
    };
    attr("kernel.version", &|| kernel::version(root));
    attr("system.name", &|| system::name(root, opts.nodename));
    attr("system.dmiid", &|| system::dmiid(root));
    attr("cpu.topology", &|| cpu::topology(root));
    attr("memory.numa", &|| devices::numa(root));
    attr("memory.swap", &|| devices::swap(root));
    attr("memory.hugepages", &|| devices::hugepages(root));
    attr("kernel.config", &|| {
        // Of its options, only those the rules name (`attributes`).
        let names: Option<Vec<&str>> = opts.attributes.map(|set| {
            set.iter()
                .filter_map(|a| a.strip_prefix("kernel.config."))
                .collect()
        });
        kernel::config(root, names.as_deref())
    });
    attr("kernel.selinux", &|| kernel::selinux(root));
    attr("kernel.kvm", &|| kernel::kvm(root));
    attr("cpu.cstate", &|| power::cstate(root));
    attr("cpu.pstate", &|| Some(power::pstate(root)));
    attr("cpu.coprocessor", &|| Some(power::coprocessor(root)));
    if want("cpu.rdt") || want("cpu.security") || want("cpu.sst") {
        let cpu = leaves::Leaves::of(root);
        attr("cpu.rdt", &|| leaves::rdt(root, &cpu));
        attr("cpu.security", &|| Some(leaves::security(root, &cpu)));
        attr("cpu.sst", &|| leaves::sst(root, &cpu));
    }
    if want("system.osrelease") {
        match system::osrelease(root) {
            Ok(Some(v)) => {
                f.attributes.insert("system.osrelease".into(), v);
            }
            Ok(None) => {}
            Err(why) => {
                f.incomplete.insert("system.osrelease".into(), why);
            }
        }
    }
    if want("local.feature") || want("local.label") {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        match local::read(root, now) {
            Ok((feature, label)) => {
                f.attributes.insert("local.feature".into(), feature);
                f.attributes.insert("local.label".into(), label);
            }
            Err(why) => {
                f.incomplete.insert("local.feature".into(), why.clone());
                f.incomplete.insert("local.label".into(), why);
            }
        }
    }
    if (want("cpu.model") || want("cpu.cpuid"))
        && let Some(c) = cpu::read(root)
    {
        f.attributes.insert("cpu.model".into(), c.model);
        f.flags.insert("cpu.cpuid".into(), c.cpuid);
    }
    let loaded = (want("kernel.loadedmodule") || want("kernel.enabledmodule"))
        .then(|| kernel::loaded_modules(root))
        .flatten();
    if want("kernel.enabledmodule")
        && let Some(m) = kernel::enabled_modules(root, loaded.as_ref())
    {
        f.flags.insert("kernel.enabledmodule".into(), m);
    }
    if want("kernel.loadedmodule")
        && let Some(m) = loaded
    {
        f.flags.insert("kernel.loadedmodule".into(), m);
    }
    let mut inst = |name: &str, read: &dyn Fn() -> Option<Vec<SortedMap<String, String>>>| {
        if want(name)
            && let Some(v) = read()
        {
            f.instances.insert(name.to_string(), v);
        }
    };
    inst("pci.device", &|| {
        pci::devices(root, &optional("pci.device"))
    });
    inst("memory.nv", &|| {
        Some(devices::nv(root, &optional("memory.nv")))
    });
    inst("storage.block", &|| {
        devices::block(root, &optional("storage.block"))
    });
    inst("network.device", &|| {
        devices::network(root, &optional("network.device"))
    });
    inst("network.virtual", &|| devices::network_virtual(root));
    inst("usb.device", &|| {
        devices::usb(root, &optional("usb.device"))
    });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes() -> Vec<std::path::PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nodes");
        let mut v: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        v.sort();
        assert!(v.len() >= 4, "node fixtures missing in {}", dir.display());
        v
    }

    fn read_with(
        root: &Path,
        only: Option<&SortedSet<String>>,
        attrs: Option<&SortedSet<String>>,
    ) -> Features {
        read(&FactsOptions {
            root,
            nodename: Some("n"),
            only,
            attributes: attrs,
        })
    }

    /// Review 9 (rboot) F4: an /etc/os-release longer than the wrapper
    /// reads (NFD reads it whole) is not read in part: it is incomplete,
    /// so rules on it are fenced (`wrapper::derived`), as features.d past
    /// its bounds; at the bound it is read whole.
    #[test]
    fn an_os_release_past_its_bound_is_incomplete() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("etc/os-release");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let only = SortedSet::from(["system.osrelease".to_string()]);
        let body = "ID=rhel\n";
        let pad = "#".repeat(system::MAX_OS_RELEASE - body.len() - 1) + "\n";
        std::fs::write(&path, format!("{pad}{body}")).unwrap();
        let f = read_with(root.path(), Some(&only), None);
        assert_eq!(f.attributes["system.osrelease"]["ID"], "rhel");
        assert_eq!(f.incomplete(), None);
        std::fs::write(&path, format!("#{pad}{body}")).unwrap();
        let f = read_with(root.path(), Some(&only), None);
        assert!(!f.attributes.contains_key("system.osrelease"));
        assert!(
            f.incomplete()
                .is_some_and(|w| w.contains("/etc/os-release"))
        );
    }

    /// Each optional attribute asked for alone comes out as a full read has
    /// it, and the others are left out.
    #[test]
    fn an_attribute_asked_for_is_read_as_in_a_full_read() {
        let mut seen = 0;
        for root in nodes() {
            let full = read_with(&root, None, None);
            for (feature, attrs) in OPTIONAL_ATTRIBUTES {
                for attr in *attrs {
                    let set = SortedSet::from([format!("{feature}.{attr}")]);
                    let part = read_with(&root, None, Some(&set));
                    let (Some(full_els), Some(part_els)) =
                        (full.instances.get(*feature), part.instances.get(*feature))
                    else {
                        assert_eq!(full.instances.get(*feature), part.instances.get(*feature));
                        continue;
                    };
                    assert_eq!(full_els.len(), part_els.len(), "{feature} on {root:?}");
                    for (f, p) in full_els.iter().zip(part_els) {
                        let others = |e: &SortedMap<String, String>| -> SortedMap<String, String> {
                            e.iter()
                                .filter(|(k, _)| !attrs.contains(&k.as_str()) || k == attr)
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect()
                        };
                        assert_eq!(&others(f), p, "{feature}.{attr} on {root:?}");
                        seen += usize::from(p.contains_key(*attr));
                    }
                }
            }
        }
        // The fixtures do have optional attributes (sriov_totalvfs, ...).
        assert!(seen > 0);
    }

    /// NFD's label set from only what it is said to read equals the one
    /// from every fact.
    #[test]
    fn nfd_labels_need_only_their_features_and_attributes() {
        let features: SortedSet<String> =
            NFD_LABEL_FEATURES.iter().map(|s| s.to_string()).collect();
        let attrs: SortedSet<String> = NFD_LABEL_ATTRIBUTES.iter().map(|s| s.to_string()).collect();
        for root in nodes() {
            let full = read_with(&root, None, None);
            let part = read_with(&root, Some(&features), Some(&attrs));
            // (A Raspberry Pi 3 has no PCI bus: then neither read has one.)
            let has_pci =
                |f: &Features| f.instances.get("pci.device").is_some_and(|d| !d.is_empty());
            assert_eq!(has_pci(&full), has_pci(&part), "{}", root.display());
            for flavour in [NfdFlavour::Upstream, NfdFlavour::OpenShift] {
                assert_eq!(
                    nfd_labels(&full, flavour),
                    nfd_labels(&part, flavour),
                    "{flavour:?} on {root:?}"
                );
            }
        }
    }
}
