//! CPU flag names as NFD reports them. On x86 NFD executes CPUID through
//! klauspost/cpuid, whose feature names differ from the kernel's
//! /proc/cpuinfo flags; this maps the kernel's names (which the kernel
//! derives from the same CPUID bits) to klauspost's. Flags klauspost names
//! but the kernel does not show are left out; so is anything unmapped.

use std::collections::BTreeSet;

/// (kernel flag, klauspost/cpuid feature name).
const X86: &[(&str, &str)] = &[
    ("3dnowprefetch", "PREFETCHW"),
    ("abm", "LZCNT"),
    ("adx", "ADX"),
    ("aes", "AESNI"),
    ("amx_bf16", "AMXBF16"),
    ("amx_complex", "AMXCOMPLEX"),
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
    ("avx_ne_convert", "AVXNECONVERT"),
    ("avx_vnni", "AVXVNNI"),
    ("avx_vnni_int8", "AVXVNNIINT8"),
    ("bmi1", "BMI1"),
    ("bmi2", "BMI2"),
    ("cldemote", "CLDEMOTE"),
    ("clwb", "CLWB"),
    ("clzero", "CLZERO"),
    ("cmov", "CMOV"),
    ("cmpxchg16b", "CX16"),
    ("cx16", "CX16"),
    ("cx8", "CX8"),
    ("enqcmd", "ENQCMD"),
    ("erms", "ERMS"),
    ("f16c", "F16C"),
    ("flush_l1d", "FLUSH_L1D"),
    ("fma", "FMA3"),
    ("fma4", "FMA4"),
    ("fsrm", "FSRM"),
    ("fxsr", "FXSR"),
    ("fxsr_opt", "FXSROPT"),
    ("gfni", "GFNI"),
    ("hle", "HLE"),
    ("ht", "HTT"),
    ("hypervisor", "HYPERVISOR"),
    ("ibpb", "IBPB"),
    ("ibrs", "IBRS"),
    ("ibt", "IBT"),
    ("invpcid", "INVPCID"),
    ("lahf_lm", "LAHF"),
    ("md_clear", "MD_CLEAR"),
    ("mmx", "MMX"),
    ("mmxext", "MMXEXT"),
    ("movbe", "MOVBE"),
    ("movdir64b", "MOVDIR64B"),
    ("movdiri", "MOVDIRI"),
    ("mpx", "MPX"),
    ("nx", "NX"),
    ("osxsave", "OSXSAVE"),
    ("pclmulqdq", "CLMUL"),
    ("pconfig", "PCONFIG"),
    ("popcnt", "POPCNT"),
    ("rdpid", "RDPID"),
    ("rdrand", "RDRAND"),
    ("rdseed", "RDSEED"),
    ("rdtscp", "RDTSCP"),
    ("rtm", "RTM"),
    ("serialize", "SERIALIZE"),
    ("sev", "SEV"),
    ("sev_es", "SEV_ES"),
    ("sev_snp", "SEV_SNP"),
    ("sgx", "SGX"),
    ("sgx_lc", "SGXLC"),
    ("sha_ni", "SHA"),
    ("sme", "SME"),
    ("sse", "SSE"),
    ("sse2", "SSE2"),
    ("pni", "SSE3"),
    ("sse4_1", "SSE4"),
    ("sse4_2", "SSE42"),
    ("sse4a", "SSE4A"),
    ("ssbd", "SSBD"),
    ("ssse3", "SSSE3"),
    ("stibp", "STIBP"),
    ("svm", "SVM"),
    ("tbm", "TBM"),
    ("tsxldtrk", "TSXLDTRK"),
    ("vaes", "VAES"),
    ("vmx", "VMX"),
    ("vpclmulqdq", "VPCLMULQDQ"),
    ("waitpkg", "WAITPKG"),
    ("wbnoinvd", "WBNOINVD"),
    ("xop", "XOP"),
    ("xsave", "XSAVE"),
    ("xsavec", "XSAVEC"),
    ("xsaveopt", "XSAVEOPT"),
    ("xsaves", "XSAVES"),
];

/// klauspost/cpuid's names for these kernel flags, plus NFD's
/// `X86_64_V1..4` microarchitecture levels.
pub(crate) fn x86_names<'a>(kernel_flags: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
    let have: BTreeSet<&str> = kernel_flags.collect();
    let mut out: BTreeSet<String> = X86
        .iter()
        .filter(|(k, _)| have.contains(k))
        .map(|(_, n)| n.to_string())
        .collect();
    // psABI levels as klauspost's X64Level computes them.
    let all = |fl: &[&str]| fl.iter().all(|f| have.contains(f));
    let v1 = all(&["cmov", "cx8", "fpu", "fxsr", "mmx", "sse", "sse2"]);
    let v2 = v1
        && all(&[
            "cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3",
        ]);
    let v3 = v2
        && all(&[
            "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "osxsave",
        ]);
    let v4 = v3 && all(&["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"]);
    for (level, ok) in [v1, v2, v3, v4].into_iter().enumerate() {
        if ok {
            out.insert(format!("X86_64_V{}", level + 1));
        }
    }
    out
}

/// klauspost/cpuid's vendor for an arm64 MIDR implementer code.
pub(crate) fn arm_vendor(implementer: u64) -> &'static str {
    match implementer {
        0x41 => "ARM",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x44 => "DEC",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x49 => "Infineon",
        0x4d => "Motorola",
        0x4e => "NVIDIA",
        0x50 => "AMCC",
        0x51 => "Qualcomm",
        0x56 => "Marvell",
        0x61 => "Apple",
        0x69 => "Intel",
        0xc0 => "Ampere",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_flags_become_klauspost_names() {
        let n = x86_names(
            "fpu cx8 cmov mmx fxsr sse sse2 pni ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm aes pclmulqdq sha_ni avx512f"
                .split_whitespace(),
        );
        for want in [
            "AESNI",
            "CLMUL",
            "SHA",
            "SSE3",
            "SSE42",
            "AVX512F",
            "X86_64_V2",
        ] {
            assert!(n.contains(want), "{want} in {n:?}");
        }
        assert!(!n.contains("X86_64_V3"));
    }
}
