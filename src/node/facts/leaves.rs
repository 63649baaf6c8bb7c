//! `cpu.rdt`, `cpu.security` and `cpu.sst` as NFD's source/cpu reads them:
//! partly with the CPUID instruction (its pkg/cpuid, and klauspost/cpuid for
//! SGX and TDX guests), partly from sysfs (kvm's TDX/SEV parameters, the misc
//! cgroup's capacities, resctrl, cpufreq's base_frequency, s390x's
//! prot_virt_host). NFD reads the CPUID parts on x86-64 only; elsewhere it
//! has `cpu.rdt` and `cpu.sst` empty, and so do these reads.

use std::path::{Path, PathBuf};

use super::util::{exists, list_dir, read_bytes, read_capped, read_trimmed, under};
use crate::node::sorted::SortedMap;

type Attrs = SortedMap<String, String>;

/// Whether this build may read an x86-64 node: the CLI reads any tree, the
/// wrapper its own node.
const READS_X86: bool = cfg!(any(feature = "cli", target_arch = "x86_64"));

/// A tree's recording of its CPU's CPUID leaves (a tree cannot hold the
/// instruction): lines `LEAF SUBLEAF EAX EBX ECX EDX` in hex, `#` comments.
pub const RECORDING: &str = "kubelet-labeler.cpuid";

/// Where the CPUID leaves of the node under a root come from.
pub enum Leaves {
    /// This CPU: the root is `/` on x86-64.
    Cpu,
    /// A tree's recording; a leaf it does not hold reads as zeros.
    Recorded(Vec<(u32, u32, [u32; 4])>),
    /// The root is `/` on another architecture: NFD runs no CPUID there.
    None,
    /// A tree without a recording: the CPUID parts are not known.
    Unknown,
}

impl Leaves {
    pub fn of(root: &Path) -> Leaves {
        // The wrapper reads `/` only: no recording code in it.
        if !cfg!(feature = "cli") || root == Path::new("/") {
            return if cfg!(target_arch = "x86_64") {
                Leaves::Cpu
            } else {
                Leaves::None
            };
        }
        match read_capped(&under(root, RECORDING), 64 << 10) {
            Some(text) => Leaves::Recorded(parse_recording(&text)),
            None => Leaves::Unknown,
        }
    }

    fn x86(&self) -> bool {
        // Constant false in a wrapper for another architecture (it reads
        // its own node's `/`): the CPUID code is left out of it.
        READS_X86 && matches!(self, Leaves::Cpu | Leaves::Recorded(_))
    }

    /// EAX, EBX, ECX, EDX of CPUID with these EAX and ECX inputs.
    fn get(&self, leaf: u32, sub: u32) -> [u32; 4] {
        #[cfg(test)]
        tests::ASKED_LOG.with(|l| l.borrow_mut().insert((leaf, sub)));
        match self {
            #[cfg(target_arch = "x86_64")]
            Leaves::Cpu => {
                let r = core::arch::x86_64::__cpuid_count(leaf, sub);
                [r.eax, r.ebx, r.ecx, r.edx]
            }
            Leaves::Recorded(v) => v
                .iter()
                .find(|(l, s, _)| *l == leaf && *s == sub)
                .map_or([0; 4], |(_, _, r)| *r),
            _ => [0; 4],
        }
    }
}

/// Every leaf these reads ask CPUID for.
#[cfg(feature = "cli")]
const ASKED: &[(u32, u32)] = &[
    (0, 0),
    (7, 0),
    (0x0f, 0),
    (0x0f, 1),
    (0x10, 0),
    (0x12, 2),
    (0x12, 3),
    (0x12, 4),
    (0x12, 5),
    (0x12, 6),
    (0x12, 7),
    (0x12, 8),
    (0x12, 9),
    (0x16, 0),
    (0x21, 0),
    (0x4000_000c, 0),
];

/// This CPU's leaves that these reads ask for, as a recording; None off
/// x86-64.
#[cfg(feature = "cli")]
pub fn record() -> Option<String> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let mut out = String::from("# leaf subleaf eax ebx ecx edx (CPUID, hex)\n");
    for &(leaf, sub) in ASKED {
        let [a, b, c, d] = Leaves::Cpu.get(leaf, sub);
        out.push_str(&format!(
            "{leaf:x} {sub:x} {a:08x} {b:08x} {c:08x} {d:08x}\n"
        ));
    }
    Some(out)
}

/// The recording's leaves; a line that does not parse is skipped.
pub fn parse_recording(text: &str) -> Vec<(u32, u32, [u32; 4])> {
    let hex = |w: &str| u32::from_str_radix(w.trim_start_matches("0x"), 16).ok();
    text.lines()
        .filter_map(|line| {
            let line = line.split('#').next().unwrap_or("");
            let w: Vec<u32> = line.split_whitespace().map(hex).collect::<Option<_>>()?;
            match w[..] {
                [l, s, a, b, c, d] => Some((l, s, [a, b, c, d])),
                _ => None,
            }
        })
        .collect()
}

/// RDT monitoring and allocation from CPUID leaves 7, 0xf and 0x10, and the
/// L3 CLOSIDs resctrl offers. None when the leaves are not known.
pub fn rdt(root: &Path, cpu: &Leaves) -> Option<Attrs> {
    let mut out = Attrs::new();
    if matches!(cpu, Leaves::Unknown) {
        return None;
    }
    if !cpu.x86() {
        return Some(out);
    }
    let ext = cpu.get(0x07, 0)[1];
    let mon = cpu.get(0x0f, 0)[3];
    let l3 = cpu.get(0x0f, 1)[3];
    let alloc = cpu.get(0x10, 0)[1];
    let mut set = |k: &str, v: String| out.insert(k.to_string(), v);
    if ext & 1 << 12 != 0 && mon & 1 << 1 != 0 {
        set("RDTMON", "true".into());
        if l3 & 1 != 0 {
            set("RDTCMT", "true".into());
        }
        if l3 & 0b110 == 0b110 {
            set("RDTMBM", "true".into());
        }
    }
    if ext & 1 << 15 != 0 {
        if alloc & 1 << 1 != 0 {
            set("RDTL3CA", "true".into());
            if let Some(n) = l3_closids(root) {
                set("RDTL3CA_NUM_CLOSID", n.to_string());
            }
        }
        if alloc & 1 << 2 != 0 {
            set("RDTL2CA", "true".into());
        }
        if alloc & 1 << 3 != 0 {
            set("RDTMBA", "true".into());
        }
    }
    Some(out)
}

/// resctrl's `info/L3/num_closids` less the default group, where resctrl
/// is: at /sys/fs/resctrl (which must exist) when mounted there, else its
/// first mount in /proc/self/mountinfo (runc's intelrdt.Root, which NFD
/// calls; it asks statfs, the mount table says the same).
fn l3_closids(root: &Path) -> Option<i64> {
    const DEFAULT: &str = "/sys/fs/resctrl";
    exists(&under(root, DEFAULT)).filter(|e| *e)?;
    let table = read_capped(&under(root, "/proc/self/mountinfo"), 4 << 20)?;
    let mut first = None;
    for at in table.lines().filter_map(resctrl_mount) {
        if at == DEFAULT {
            first = Some(at);
            break;
        }
        first.get_or_insert(at);
    }
    let file: PathBuf = under(root, &first?).join("info/L3/num_closids");
    let n: i64 = read_trimmed(&file)?.parse().ok()?;
    let n = n.wrapping_sub(1);
    (n > -1).then_some(n)
}

/// A mountinfo line's mount point when its filesystem is resctrl.
fn resctrl_mount(line: &str) -> Option<String> {
    let fields: Vec<&str> = line.split(' ').collect();
    let sep = fields.iter().position(|f| *f == "-")?;
    if sep < 6 || fields.get(sep + 1) != Some(&"resctrl") {
        return None;
    }
    Some(unescape_octal(fields[4]))
}

/// The kernel writes space, tab, newline and backslash as `\NNN`.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let digits = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match digits {
            Some(d) if b[i] == b'\\' => {
                let v = d.iter().fold(0u32, |a, c| a * 8 + u32::from(c - b'0'));
                out.push(v as u8);
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// SGX (enabled with its EPC size), TDX host and guest, SEV, SEV-ES and
/// SEV-SNP hosts, s390x Secure Execution. The sysfs parts are read on any
/// root; SGX and `tdx.protected` need the CPUID leaves (left out on a tree
/// without a recording).
pub fn security(root: &Path, cpu: &Leaves) -> Attrs {
    let mut out = Attrs::new();
    // NFD reads none of these on another architecture (arm64: nothing).
    if !cfg!(any(
        feature = "cli",
        target_arch = "x86_64",
        target_arch = "s390x"
    )) {
        return out;
    }
    let mut set = |k: &str, v: String| out.insert(k.to_string(), v);
    let epc = if cpu.x86() { sgx_epc(cpu) } else { 0 };
    if epc > 0 {
        set("sgx.enabled", "true".into());
        set("sgx.epc", epc.to_string());
    }
    if read_bytes(&under(root, "/sys/module/kvm_intel/parameters/tdx"), 16).as_deref()
        == Some(b"Y\n")
    {
        set("tdx.enabled", "true".into());
        if let Some(n) = misc_capacity(root, "tdx") {
            set("tdx.total_keys", n.to_string());
        }
    }
    if cpu.x86() && tdx_guest(cpu) {
        set("tdx.protected", "true".into());
    }
    let kvm_amd = |p: &str| {
        read_bytes(&under(root, "/sys/module/kvm_amd/parameters").join(p), 1)
            .is_some_and(|b| matches!(b.first(), Some(b'1' | b'Y')))
    };
    if kvm_amd("sev") {
        set("sev.enabled", "true".into());
        if let Some(n) = misc_capacity(root, "sev") {
            set("sev.asids", n.to_string());
        }
    }
    if kvm_amd("sev_es") {
        set("sev.es.enabled", "true".into());
        if let Some(n) = misc_capacity(root, "sev_es") {
            set("sev.encrypted_state_ids", n.to_string());
        }
    }
    if kvm_amd("sev_snp") {
        set("sev.snp.enabled", "true".into());
    }
    // s390x's file, which NFD reads there only: on s390x, or a tree that
    // may be one.
    let s390x = matches!(cpu, Leaves::Unknown) || cfg!(target_arch = "s390x");
    if s390x
        && read_bytes(&under(root, "/sys/firmware/uv/prot_virt_host"), 16).as_deref()
            == Some(b"1\n")
    {
        set("se.enabled", "true".into());
    }
    out
}

/// The summed size of the SGX EPC sections (leaf 0x12), 0 without SGX:
/// klauspost/cpuid's reading.
fn sgx_epc(cpu: &Leaves) -> u64 {
    if cpu.get(0, 0)[0] < 7 || cpu.get(7, 0)[1] & 1 << 2 == 0 {
        return 0;
    }
    let mut size = 0u64;
    for sub in 2..10 {
        let [a, _, c, d] = cpu.get(0x12, sub);
        match a & 0xf {
            0 => break,
            1 => {
                let s = u64::from(c & 0xffff_f000) + (u64::from(d & 0x000f_ffff) << 32);
                size = size.wrapping_add(s);
            }
            _ => {}
        }
    }
    size
}

/// klauspost/cpuid's TDX_GUEST: Hyper-V's isolation leaf says TDX, or leaf
/// 0x21 says "IntelTDX    ".
fn tdx_guest(cpu: &Leaves) -> bool {
    let max = cpu.get(0, 0)[0];
    let hyperv = max >= 0x20 && cpu.get(0x4000_000c, 0)[1] == 0xbe3;
    let tdx = max >= 0x21 && {
        let [_, b, c, d] = cpu.get(0x21, 0);
        // Its bytes in EBX, EDX, ECX order, up to the first zero byte
        // (twelve, none zero, to be equal).
        let want = b"IntelTDX    ";
        let word = |i: usize| u32::from_le_bytes([want[i], want[i + 1], want[i + 2], want[i + 3]]);
        [b, d, c] == [word(0), word(4), word(8)]
    };
    hyperv || tdx
}

/// The misc cgroup's capacity of `resource`: the first line starting with
/// it (a prefix, as NFD matches it) in the first misc.capacity that opens.
fn misc_capacity(root: &Path, resource: &str) -> Option<i64> {
    for p in [
        "/sys/fs/cgroup/misc.capacity",
        "/sys/fs/cgroup/misc/misc.capacity",
    ] {
        let path = under(root, p);
        if exists(&path) != Some(true) {
            continue;
        }
        let text = read_capped(&path, 64 << 10)?;
        let line = text.lines().find(|l| l.starts_with(resource))?;
        let n: i64 = line.split(' ').nth(1)?.parse().ok()?;
        return (n > -1).then_some(n);
    }
    None
}

/// `bf.enabled` (SST base frequency) when some CPU's cpufreq base frequency
/// is above the nominal one in CPUID leaf 0x16. None when the leaves are
/// not known.
pub fn sst(root: &Path, cpu: &Leaves) -> Option<Attrs> {
    let mut out = Attrs::new();
    if matches!(cpu, Leaves::Unknown) {
        return None;
    }
    if !cpu.x86() {
        return Some(out);
    }
    if sst_bf(root, i64::from(cpu.get(0x16, 0)[0])) == Some(true) {
        out.insert("bf.enabled".into(), "true".into());
    }
    Some(out)
}

/// NFD's SST-BF detection; None where it errs (its result is then empty).
fn sst_bf(root: &Path, nominal: i64) -> Option<bool> {
    let devices = under(root, "/sys/bus/cpu/devices");
    for cpu in list_dir(&devices)? {
        let file = devices.join(&cpu).join("cpufreq/base_frequency");
        // Missing: the next CPU; unknowable: NFD's error.
        if !exists(&file)? {
            continue;
        }
        let base: i64 = read_trimmed(&file)?.parse().ok()?;
        if nominal == 0 {
            return None;
        }
        if base / 1000 > nominal {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// The leaves `Leaves::get` was asked for on this thread.
        pub(super) static ASKED_LOG: std::cell::RefCell<std::collections::BTreeSet<(u32, u32)>> =
            Default::default();
    }

    /// `facts --record-cpuid` records every leaf the reads can ask for:
    /// with every feature bit set, each path is taken.
    #[test]
    fn the_recording_holds_every_leaf_asked_for() {
        let t = tree(&[
            ("sys/fs/resctrl/info/L3/num_closids", "4"),
            (
                "proc/self/mountinfo",
                "1 1 0:1 / /sys/fs/resctrl rw - resctrl resctrl rw\n",
            ),
            ("sys/bus/cpu/devices/cpu0/cpufreq/base_frequency", "1000"),
        ]);
        let mut leaves = vec![
            (0, 0, [0x21, 0, 0, 0]),
            (7, 0, [0, 1 << 2 | 1 << 12 | 1 << 15, 0, 0]),
            (0x0f, 0, [0, 0, 0, 2]),
            (0x0f, 1, [0, 0, 0, 7]),
            (0x10, 0, [0, 0xe, 0, 0]),
            (0x16, 0, [1, 0, 0, 0]),
        ];
        for sub in 2..10 {
            leaves.push((0x12, sub, [1, 0, 0x1000, 0]));
        }
        let cpu = Leaves::Recorded(leaves);
        ASKED_LOG.with(|l| l.borrow_mut().clear());
        assert!(rdt(t.path(), &cpu).is_some_and(|r| r.len() == 7));
        assert!(security(t.path(), &cpu).contains_key("sgx.epc"));
        assert!(sst(t.path(), &cpu).is_some());
        let asked = ASKED_LOG.with(|l| l.borrow().clone());
        let recorded: std::collections::BTreeSet<(u32, u32)> = ASKED.iter().copied().collect();
        assert_eq!(asked, recorded);
    }

    /// A tree's recording that links out of the tree is no recording, for
    /// explain's note as for the reads (a tree's link never reads the host).
    #[test]
    fn a_recording_linked_out_of_the_tree_is_unknown() {
        let outside = tree(&[("leaves", "7 0 0 8000 0 0\n")]);
        let t = tree(&[("proc/cpuinfo", "")]);
        std::os::unix::fs::symlink(outside.path().join("leaves"), t.path().join(RECORDING))
            .unwrap();
        assert!(crate::node::facts::cpuid_unknown(t.path()));
        let inside = tree(&[("leaves", "7 0 0 8000 0 0\n")]);
        std::os::unix::fs::symlink("/leaves", inside.path().join(RECORDING)).unwrap();
        assert!(!crate::node::facts::cpuid_unknown(inside.path()));
    }

    #[test]
    fn a_recording_reads_hex_lines_and_skips_the_rest() {
        let text = "# leaf sub eax ebx ecx edx\n7 0 0 0x8000 0 0\n10 0 0 e 0 0 # rdt\nbad\n1 2 3\n";
        let v = parse_recording(text);
        assert_eq!(v, [(7, 0, [0, 0x8000, 0, 0]), (0x10, 0, [0, 0xe, 0, 0])]);
        let cpu = Leaves::Recorded(v);
        assert_eq!(cpu.get(7, 0)[1], 0x8000);
        assert_eq!(cpu.get(7, 1), [0; 4]);
    }

    #[test]
    fn mountinfo_names_resctrl_mounts() {
        let line = "40 22 0:36 / /sys/fs/res\\040ctrl rw,relatime shared:18 - resctrl resctrl rw";
        assert_eq!(resctrl_mount(line).as_deref(), Some("/sys/fs/res ctrl"));
        assert_eq!(resctrl_mount("22 1 0:21 / /sys rw - sysfs sysfs rw"), None);
        assert_eq!(resctrl_mount("- resctrl"), None);
    }

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    /// NFD matches a misc resource by prefix (`sev` finds `sev_es` first
    /// when listed first), takes the second space-separated word, and has
    /// nothing for a line without one (where it would panic) or a value
    /// below 0.
    #[test]
    fn misc_capacity_reads_as_nfd_does() {
        let misc = |text: &str, resource: &str| {
            let t = tree(&[("sys/fs/cgroup/misc.capacity", text)]);
            misc_capacity(t.path(), resource)
        };
        assert_eq!(misc("sev_es 10\nsev 509\n", "sev"), Some(10));
        assert_eq!(misc("sev 509\nsev_es 10\n", "sev_es"), Some(10));
        assert_eq!(misc("tdx\n", "tdx"), None);
        assert_eq!(misc("tdx -1\n", "tdx"), None);
        assert_eq!(misc("tdx +7 x\r\n", "tdx"), Some(7));
        assert_eq!(misc("sev 1\n", "tdx"), None);
        // The cgroup v1 place, read only when the v2 one does not open.
        let t = tree(&[("sys/fs/cgroup/misc/misc.capacity", "tdx 3\n")]);
        assert_eq!(misc_capacity(t.path(), "tdx"), Some(3));
    }

    /// SST-BF: a CPU's base frequency (kHz) above the nominal one (MHz);
    /// an unreadable or non-numeric one before that, or no nominal
    /// frequency with one present, is NFD's error (nothing).
    #[test]
    fn sst_bf_as_nfd_decides_it() {
        let bf = |freqs: &[&str], nominal: i64| {
            let files: Vec<(String, &str)> = freqs
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    (
                        format!("sys/bus/cpu/devices/cpu{i}/cpufreq/base_frequency"),
                        *f,
                    )
                })
                .collect();
            let refs: Vec<(&str, &str)> = files.iter().map(|(p, f)| (p.as_str(), *f)).collect();
            let t = tree(&refs);
            std::fs::create_dir_all(t.path().join("sys/bus/cpu/devices/cpu9")).unwrap();
            sst_bf(t.path(), nominal)
        };
        assert_eq!(bf(&["2100000\n", "2600000\n"], 2100), Some(true));
        assert_eq!(bf(&["2100999\n"], 2100), Some(false));
        assert_eq!(bf(&["2100000", "x", "2600000"], 2100), None);
        assert_eq!(bf(&["2600000"], 0), None);
        assert_eq!(bf(&[], 0), Some(false));
        assert_eq!(sst_bf(Path::new("/nonexistent"), 2100), None);
    }

    #[test]
    fn a_tdx_guest_is_told_by_either_leaf() {
        let guest = |leaves: Vec<(u32, u32, [u32; 4])>| tdx_guest(&Leaves::Recorded(leaves));
        let id = |s: &[u8; 12]| {
            let w = |i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap());
            [0, w(0), w(8), w(4)]
        };
        assert!(guest(vec![
            (0, 0, [0x21, 0, 0, 0]),
            (0x21, 0, id(b"IntelTDX    "))
        ]));
        assert!(!guest(vec![
            (0, 0, [0x20, 0, 0, 0]),
            (0x21, 0, id(b"IntelTDX    "))
        ]));
        assert!(guest(vec![
            (0, 0, [0x20, 0, 0, 0]),
            (0x4000_000c, 0, [0, 0xbe3, 0, 0])
        ]));
        assert!(!guest(vec![
            (0, 0, [0x1f, 0, 0, 0]),
            (0x4000_000c, 0, [0, 0xbe3, 0, 0])
        ]));
    }
}
