//! `cpu.model`, `cpu.cpuid` and `cpu.topology` from /proc/cpuinfo and
//! /sys/bus/cpu/devices, under NFD's names (source/cpu, which reads the
//! CPUID instruction through klauspost/cpuid on x86 and AT_HWCAP on arm64).

use std::path::Path;

use super::util::{CPUINFO_CAP, list_dir, read_trimmed, under};
use crate::node::sorted::{SortedMap, SortedSet};
use std::io::Read;

pub struct Cpu {
    pub model: SortedMap<String, String>,
    pub cpuid: SortedSet<String>,
}

/// /proc/cpuinfo: the first processor's fields (all CPUs of a node share
/// vendor, family, model and flags in practice).
pub fn read(root: &Path) -> Option<Cpu> {
    let text = read_first_block(&under(root, "/proc/cpuinfo"))?;
    Some(parse_cpuinfo(&text))
}

/// The architecture (as `uname -m` names it) whose kernel wrote this
/// /proc/cpuinfo, from the fields only it prints; None when unknown. The
/// CLI asks it of a tree (`iso fleet --dry-run --facts-root`).
#[cfg(feature = "cli")]
pub fn arch(root: &Path) -> Option<&'static str> {
    let text = read_first_block(&under(root, "/proc/cpuinfo"))?;
    let has = |name: &str| {
        text.lines()
            .any(|l| l.split_once(':').is_some_and(|(k, _)| k.trim() == name))
    };
    if has("vendor_id") && has("flags") {
        Some("x86_64")
    } else if has("CPU implementer") || (has("Features") && has("CPU architecture")) {
        Some("aarch64")
    } else if has("cpu") && text.contains("POWER") {
        Some("ppc64le")
    } else if text.contains("vendor_id") && text.contains("IBM/S390") {
        Some("s390x")
    } else {
        None
    }
}

/// /proc/cpuinfo up to the end of the first processor's block (all that
/// `parse_cpuinfo` reads), at most CPUINFO_CAP: the kernel makes the file
/// as it is read, a block per CPU (about 2 KiB each, 400 KiB on a DGX).
fn read_first_block(path: &Path) -> Option<String> {
    let path = super::util::inside(path)?;
    let mut file = crate::node::nodefs::open(&path).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 << 10];
    let mut block = FirstBlock::default();
    while (buf.len() as u64) < CPUINFO_CAP {
        let n = file.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if block.ends_in(&buf) {
            break;
        }
    }
    buf.truncate(CPUINFO_CAP as usize);
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// Where `parse_cpuinfo` stops: the first blank line after a `processor`
/// line, found in the whole lines read so far, each looked at once.
#[derive(Default)]
struct FirstBlock {
    /// Bytes of whole lines already looked at.
    scanned: usize,
    processor: bool,
}

impl FirstBlock {
    fn ends_in(&mut self, text: &[u8]) -> bool {
        while let Some(len) = text[self.scanned..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&text[self.scanned..self.scanned + len]);
            self.scanned += len + 1;
            if line.trim().is_empty() && self.processor {
                return true;
            }
            self.processor |= line
                .split_once(':')
                .is_some_and(|(k, _)| k.trim() == "processor");
        }
        false
    }
}

/// Which CPU name tables this build carries. The shipped wrapper (built
/// without the `cli` feature) only ever reads its own node's /proc/cpuinfo,
/// so it carries its own architecture's tables alone (x86's are ~5 KB);
/// the CLI reads any node tree and carries both.
const READS_X86: bool = cfg!(any(feature = "cli", target_arch = "x86_64"));
const READS_ARM64: bool = cfg!(any(feature = "cli", target_arch = "aarch64"));

pub fn parse_cpuinfo(text: &str) -> Cpu {
    // The first block's `name: value` lines, in file order: a few dozen,
    // looked up a few times (the first of a name counts).
    let mut lines: Vec<(&str, &str)> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() && lines.iter().any(|(k, _)| *k == "processor") {
            break; // end of the first processor's block
        }
        if let Some((k, v)) = line.split_once(':') {
            lines.push((k.trim(), v.trim()));
        }
    }
    let field = |name: &str| lines.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    let mut model = SortedMap::new();
    let mut cpuid = SortedSet::new();
    if READS_X86 && let Some(vendor) = field("vendor_id") {
        // x86: family and model as the kernel prints them already include the
        // extended fields, as klauspost/cpuid computes them.
        model.insert("vendor_id".into(), x86_vendor(vendor).into());
        for (attr, name) in [("family", "cpu family"), ("id", "model")] {
            if let Some(v) = field(name) {
                model.insert(attr.into(), v.into());
            }
        }
        let flags: Vec<&str> = field("flags")
            .map(|f| f.split_whitespace().collect())
            .unwrap_or_default();
        cpuid = x86_cpuid(&flags);
        if !flags.contains(&"hypervisor") {
            // NFD says `none` on bare metal; in a VM it names the hypervisor
            // from CPUID leaf 0x40000000, which /proc/cpuinfo does not show,
            // so then the attribute is left out.
            model.insert("hypervisor".into(), "none".into());
        }
    } else if READS_ARM64 && let Some(features) = field("Features") {
        cpuid = features
            .split_whitespace()
            .map(|w| w.to_ascii_uppercase())
            .filter(|w| crate::node::one_of(ARM64_HWCAPS, w))
            .collect();
        // klauspost/cpuid on arm64 reads MIDR_EL1 (the kernel prints its
        // fields here): vendor from the implementer, family = MIDR bits
        // 23..16 (variant, then architecture, 0xf on every arm64 core),
        // id = MIDR bits 15..0 (part number, then revision).
        if let Some(imp) = field("CPU implementer").and_then(hex) {
            model.insert("vendor_id".into(), arm_vendor(imp).into());
        }
        if let Some(var) = field("CPU variant").and_then(hex) {
            model.insert("family".into(), ((var << 4) | 0xf).to_string());
        }
        if let (Some(part), Some(rev)) = (
            field("CPU part").and_then(hex),
            field("CPU revision").and_then(|v| v.trim().parse::<u32>().ok()),
        ) {
            model.insert("id".into(), ((part << 4) | rev).to_string());
        }
        model.insert("hypervisor".into(), "none".into());
    }
    Cpu { model, cpuid }
}

fn hex(s: &str) -> Option<u32> {
    u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// klauspost/cpuid's VendorID names for the CPUID vendor strings.
fn x86_vendor(s: &str) -> &'static str {
    match s {
        "GenuineIntel" => "Intel",
        "AuthenticAMD" => "AMD",
        "HygonGenuine" => "Hygon",
        "CentaurHauls" | "VIA VIA VIA " => "VIA",
        "GenuineTMx86" | "TransmetaCPU" => "Transmeta",
        "Geode by NSC" => "NSC",
        "SiS SiS SiS " => "SiS",
        "  Shanghai  " => "Zhaoxin",
        _ => "VendorUnknown",
    }
}

fn arm_vendor(implementer: u32) -> &'static str {
    match implementer {
        0x41 => "ARM",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x44 => "DEC",
        0x46 => "Fujitsu",
        0x49 => "Infineon",
        0x4d => "Motorola",
        0x4e => "NVIDIA",
        0x50 => "AMCC",
        0x51 => "Qualcomm",
        0x56 => "Marvell",
        0x69 => "Intel",
        0xc0 => "Ampere",
        _ => "VendorUnknown",
    }
}

/// NFD's arm64 hwcap names (source/cpu/cpuid_linux_arm64.go): the kernel's
/// `Features` words upper-cased, only those NFD knows.
const ARM64_HWCAPS: &[&str] = &[
    "FP",
    "ASIMD",
    "EVTSTRM",
    "AES",
    "PMULL",
    "SHA1",
    "SHA2",
    "CRC32",
    "ATOMICS",
    "FPHP",
    "ASIMDHP",
    "CPUID",
    "ASIMDRDM",
    "JSCVT",
    "FCMA",
    "LRCPC",
    "DCPOP",
    "SHA3",
    "SM3",
    "SM4",
    "ASIMDDP",
    "SHA512",
    "SVE",
    "ASIMDFHM",
    "DIT",
    "USCAT",
    "ILRCPC",
    "FLAGM",
    "SSBS",
    "SB",
    "PACA",
    "PACG",
    "DCPODP",
    "SVE2",
    "SVEAES",
    "SVEPMULL",
    "SVEBITPERM",
    "SVESHA3",
    "SVESM4",
    "FLAGM2",
    "FRINT",
    "SVEI8MM",
    "SVEF32MM",
    "SVEF64MM",
    "SVEBF16",
    "I8MM",
    "BF16",
    "DGH",
    "RNG",
    "BTI",
    "MTE",
    "ECV",
    "AFP",
    "RPRES",
    "MTE3",
    "SME",
    "SMEI16I64",
    "SMEF64F64",
    "SMEI8I32",
    "SMEF16F32",
    "SMEB16F32",
    "SMEF32F32",
    "SMEFA64",
    "WFXT",
    "EBF16",
    "SVEEBF16",
];

/// /proc/cpuinfo flag → klauspost/cpuid v2.4 FeatureID name (NFD master's
/// go.mod). Names with no /proc/cpuinfo flag cannot be derived and are not
/// reported: e.g. AVXSLOW, FP128/FP256, MOVU, HTT as klauspost computes it,
/// STOSB_SHORT/MOVSB_ZL/CMPSB_SCADBS_SHORT, the IBS_* and SEV_* details,
/// SGXPQC, AVX10/AVX10_128/256/512, APX_F, AMXFP8/AMXTF32/AMXTRANSPOSE,
/// TSA_*/SRSO_* and the PMU_* counters.
const X86_FLAGS: &[(&str, &str)] = &[
    ("3dnow", "AMD3DNOW"),
    ("3dnowext", "AMD3DNOWEXT"),
    ("abm", "LZCNT"),
    ("adx", "ADX"),
    ("aes", "AESNI"),
    ("amx_bf16", "AMXBF16"),
    ("amx_fp16", "AMXFP16"),
    ("amx_int8", "AMXINT8"),
    ("amx_tile", "AMXTILE"),
    ("arch_capabilities", "IA32_ARCH_CAP"),
    ("avx", "AVX"),
    ("avx2", "AVX2"),
    ("avx512_4fmaps", "AVX5124FMAPS"),
    ("avx512_4vnniw", "AVX5124VNNIW"),
    ("avx512_bf16", "AVX512BF16"),
    ("avx512_bitalg", "AVX512BITALG"),
    ("avx512_fp16", "AVX512FP16"),
    ("avx512_vbmi2", "AVX512VBMI2"),
    ("avx512_vnni", "AVX512VNNI"),
    ("avx512_vp2intersect", "AVX512VP2INTERSECT"),
    ("avx512_vpopcntdq", "AVX512VPOPCNTDQ"),
    ("avx512bw", "AVX512BW"),
    ("avx512cd", "AVX512CD"),
    ("avx512dq", "AVX512DQ"),
    ("avx512er", "AVX512ER"),
    ("avx512f", "AVX512F"),
    ("avx512ifma", "AVX512IFMA"),
    ("avx512pf", "AVX512PF"),
    ("avx512vbmi", "AVX512VBMI"),
    ("avx512vl", "AVX512VL"),
    ("avx_ifma", "AVXIFMA"),
    ("avx_vnni", "AVXVNNI"),
    ("bmi1", "BMI1"),
    ("bmi2", "BMI2"),
    ("cldemote", "CLDEMOTE"),
    ("clflushopt", "CLFLUSHOPT"),
    ("clwb", "CLWB"),
    ("clzero", "CLZERO"),
    ("cmov", "CMOV"),
    ("core_capabilities", "IA32_CORE_CAP"),
    ("cpb", "CPBOOST"),
    ("cx16", "CX16"),
    ("cx8", "CMPXCHG8"),
    ("decodeassists", "SVMDA"),
    ("enqcmd", "ENQCMD"),
    ("erms", "ERMS"),
    ("f16c", "F16C"),
    ("flush_l1d", "FLUSH_L1D"),
    ("flushbyasid", "SVMFBASID"),
    ("fma", "FMA3"),
    ("fma4", "FMA4"),
    ("fpu", "X87"),
    ("fsrm", "FSRM"),
    ("fxsr", "FXSR"),
    ("fxsr_opt", "FXSROPT"),
    ("gfni", "GFNI"),
    ("hle", "HLE"),
    ("ht", "HTT"),
    ("hybrid_cpu", "HYBRID_CPU"),
    ("hypervisor", "HYPERVISOR"),
    ("ibpb", "IBPB"),
    ("ibrs", "IBRS"),
    ("ibs", "IBS"),
    ("ibt", "CETIBT"),
    ("lahf_lm", "LAHF"),
    ("lbrv", "LBRVIRT"),
    ("md_clear", "MD_CLEAR"),
    ("mmx", "MMX"),
    ("mmxext", "MMXEXT"),
    ("movbe", "MOVBE"),
    ("movdir64b", "MOVDIR64B"),
    ("movdiri", "MOVDIRI"),
    ("mpx", "MPX"),
    ("npt", "SVMNP"),
    ("nrip_save", "NRIPS"),
    ("nx", "NX"),
    ("osxsave", "OSXSAVE"),
    ("overflow_recov", "MCAOVERFLOW"),
    ("pausefilter", "SVMPF"),
    ("pclmulqdq", "CLMUL"),
    ("pconfig", "PCONFIG"),
    ("pfthreshold", "SVMPFT"),
    ("pni", "SSE3"),
    ("popcnt", "POPCNT"),
    ("rdpru", "RDPRU"),
    ("rdrand", "RDRAND"),
    ("rdseed", "RDSEED"),
    ("rdtscp", "RDTSCP"),
    ("rtm", "RTM"),
    ("sep", "SYSEE"),
    ("serialize", "SERIALIZE"),
    ("sev", "SEV"),
    ("sev_es", "SEV_ES"),
    ("sev_snp", "SEV_SNP"),
    ("sgx", "SGX"),
    ("sgx_lc", "SGXLC"),
    ("sha_ni", "SHA"),
    ("shstk", "CETSS"),
    ("ssbd", "SPEC_CTRL_SSBD"),
    ("sse", "SSE"),
    ("sse2", "SSE2"),
    ("sse4_1", "SSE4"),
    ("sse4_2", "SSE42"),
    ("sse4a", "SSE4A"),
    ("ssse3", "SSSE3"),
    ("stibp", "STIBP"),
    ("succor", "SUCCOR"),
    ("svm", "SVM"),
    ("syscall", "SYSCALL"),
    ("tbm", "TBM"),
    ("tme", "TME"),
    ("topoext", "TOPEXT"),
    ("tsc_scale", "TSCRATEMSR"),
    ("tsxldtrk", "TSXLDTRK"),
    ("vaes", "VAES"),
    ("vmcb_clean", "VMCBCLEAN"),
    ("vmx", "VMX"),
    ("vpclmulqdq", "VPCLMULQDQ"),
    ("waitpkg", "WAITPKG"),
    ("wbnoinvd", "WBNOINVD"),
    ("xgetbv1", "XGETBV1"),
    ("xop", "XOP"),
    ("xsave", "XSAVE"),
    ("xsavec", "XSAVEC"),
    ("xsaveopt", "XSAVEOPT"),
    ("xsaves", "XSAVES"),
];

/// `flags`: /proc/cpuinfo's, in its order.
fn x86_cpuid(flags: &[&str]) -> SortedSet<String> {
    // X86_FLAGS is in flag order (a test checks): one binary search a flag.
    // The names are sorted first so the set is built by appends, not ~100
    // inserts in the middle.
    let mut names: Vec<String> = flags
        .iter()
        .filter_map(|f| X86_FLAGS.binary_search_by(|(flag, _)| flag.cmp(f)).ok())
        .map(|i| X86_FLAGS[i].1.to_string())
        .collect();
    names.sort();
    let mut out: SortedSet<String> = names.into_iter().collect();
    // The kernel hides OSXSAVE ("" name in cpufeatures.h); it sets CR4.OSXSAVE
    // whenever it uses XSAVE, and clears `xsave` when it does not.
    if out.contains("XSAVE") {
        out.insert("OSXSAVE".into());
    }
    // NFD adds X86_64_V1..Vn for klauspost's X64Level (the x86-64 psABI
    // microarchitecture levels), checked on the names above.
    let levels: [&[&str]; 4] = [
        &["CMOV", "CMPXCHG8", "X87", "FXSR", "MMX", "SSE", "SSE2"],
        &["CX16", "LAHF", "POPCNT", "SSE3", "SSE4", "SSE42", "SSSE3"],
        &[
            "AVX", "AVX2", "BMI1", "BMI2", "F16C", "FMA3", "LZCNT", "MOVBE", "OSXSAVE",
        ],
        &["AVX512F", "AVX512BW", "AVX512CD", "AVX512DQ", "AVX512VL"],
    ];
    // klauspost/cpuid: level 0 unless SYSCALL or SYSENTER is there.
    let mut level = 0;
    let any_syscall = out.contains("SYSCALL") || out.contains("SYSEE");
    for (i, need) in levels.iter().enumerate() {
        if !any_syscall || !need.iter().all(|n| out.contains(*n)) {
            break;
        }
        level = i + 1;
    }
    for l in 1..=level {
        out.insert(format!("X86_64_V{l}"));
    }
    out
}

/// `cpu.topology` as NFD computes it: any CPU whose thread_siblings_list has
/// `,` or `-` means multithreading; socket_count = distinct
/// physical_package_id. Any unreadable file makes the feature empty (NFD
/// returns an empty map).
pub fn topology(root: &Path) -> Option<SortedMap<String, String>> {
    let base = under(root, "/sys/bus/cpu/devices");
    let names = list_dir(&base)?;
    let mut ht = false;
    let mut packages = SortedSet::new();
    for name in names {
        let topo = base.join(name).join("topology");
        let siblings = read_trimmed(&topo.join("thread_siblings_list"))?;
        ht |= siblings.contains([',', '-']);
        packages.insert(read_trimmed(&topo.join("physical_package_id"))?);
    }
    let mut out = SortedMap::new();
    out.insert("hardware_multithreading".into(), ht.to_string());
    out.insert("socket_count".into(), packages.len().to_string());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `x86_cpuid` binary-searches X86_FLAGS by flag.
    #[test]
    fn x86_flags_are_sorted_by_flag() {
        assert!(X86_FLAGS.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn the_first_block_parses_as_the_whole_file() {
        let mut files: Vec<std::path::PathBuf> =
            std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nodes"))
                .unwrap()
                .map(|e| e.unwrap().path().join("proc/cpuinfo"))
                .filter(|p| p.exists())
                .collect();
        // A big node's file: the read stops long before its end.
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("cpuinfo");
        let block = |i: usize| {
            format!(
                "processor\t: {i}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n\
                 flags\t\t: fpu {}avx512f\n\n",
                "sse ".repeat(400)
            )
        };
        std::fs::write(&big, (0..224).map(block).collect::<String>()).unwrap();
        files.push(big.clone());
        assert!(files.len() >= 3, "{files:?}");
        for f in &files {
            let whole = std::fs::read_to_string(f).unwrap();
            let first = read_first_block(f).unwrap();
            assert!(whole.starts_with(&first), "{f:?}");
            let (a, b) = (parse_cpuinfo(&whole), parse_cpuinfo(&first));
            assert_eq!((a.model, a.cpuid), (b.model, b.cpuid), "{f:?}");
        }
        assert!(read_first_block(&big).unwrap().len() < 20 << 10);
    }

    #[test]
    fn x86_names_and_levels() {
        let cpu = parse_cpuinfo(
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n\
             flags\t\t: fpu syscall cx8 cmov mmx fxsr sse sse2 ht pni ssse3 cx16 sse4_1 sse4_2 popcnt \
             lahf_lm aes avx avx2 bmi1 bmi2 f16c fma abm movbe osxsave avx512f avx512bw avx512cd \
             avx512dq avx512vl sha_ni amx_tile\n\nprocessor\t: 1\nvendor_id\t: Other\n",
        );
        assert_eq!(cpu.model["vendor_id"], "Intel");
        assert_eq!(cpu.model["family"], "6");
        assert_eq!(cpu.model["id"], "143");
        assert_eq!(cpu.model["hypervisor"], "none");
        for name in [
            "AESNI",
            "FMA3",
            "SHA",
            "LZCNT",
            "AMXTILE",
            "X86_64_V4",
            "SSE42",
        ] {
            assert!(cpu.cpuid.contains(name), "{name} in {:?}", cpu.cpuid);
        }
    }

    #[test]
    fn vm_has_no_hypervisor_attribute_and_v3_stops_without_avx512() {
        let cpu = parse_cpuinfo(
            "vendor_id: AuthenticAMD\ncpu family: 25\nmodel: 1\nflags: fpu syscall cx8 cmov mmx fxsr sse \
             sse2 pni ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm avx avx2 bmi1 bmi2 f16c fma abm \
             movbe osxsave hypervisor\n",
        );
        assert_eq!(cpu.model["vendor_id"], "AMD");
        assert!(!cpu.model.contains_key("hypervisor"));
        assert!(cpu.cpuid.contains("X86_64_V3") && !cpu.cpuid.contains("X86_64_V4"));
    }

    #[test]
    fn arm64_features_upper_cased_known_only() {
        let cpu = parse_cpuinfo(
            "processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid newthing\n\
             CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\n\
             CPU revision\t: 3\n",
        );
        let want: SortedSet<String> = ["FP", "ASIMD", "EVTSTRM", "CRC32", "CPUID"]
            .map(String::from)
            .into();
        assert_eq!(cpu.cpuid, want);
        assert_eq!(cpu.model["vendor_id"], "ARM");
        assert_eq!(cpu.model["id"], "53379"); // 0xd083: Cortex-A72 r0p3
        assert_eq!(cpu.model["family"], "15"); // variant 0, architecture 0xf
    }
}
