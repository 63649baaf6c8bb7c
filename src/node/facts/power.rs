//! `cpu.cstate`, `cpu.pstate`, `cpu.coprocessor` as NFD's source/cpu reads
//! them from sysfs. NFD reads the first two on x86-64 only and the third
//! on ppc64le only; elsewhere it has them empty, and so do these reads:
//! the files they look for (intel_idle, intel_pstate, the NX-GZIP
//! coprocessor) exist on no other architecture.

use std::path::Path;

use super::util::{exists, list_dir, read_bytes, read_trimmed, under};
use crate::node::sorted::SortedMap;

type Attrs = SortedMap<String, String>;

const CPU: &str = "/sys/devices/system/cpu";

/// `enabled`: intel_idle's max_cstate > 0. Empty with another cpuidle
/// driver or none; absent when sysfs or intel_idle's files are unreadable.
pub fn cstate(root: &Path) -> Option<Attrs> {
    let cpu = under(root, CPU);
    exists(&cpu).filter(|e| *e)?;
    let mut out = Attrs::new();
    if exists(&cpu.join("cpuidle")) == Some(false) {
        return Some(out);
    }
    if read_trimmed(&cpu.join("cpuidle/current_driver"))? != "intel_idle" {
        return Some(out);
    }
    let max: i64 = read_trimmed(&under(root, "/sys/module/intel_idle/parameters/max_cstate"))?
        .parse()
        .ok()?;
    out.insert("enabled".into(), (max > 0).to_string());
    Some(out)
}

/// intel_pstate's `status`, `turbo` (no_turbo is 0) and, when active, the
/// `scaling_governor` every cpufreq policy with CPUs shares. Always
/// present (empty without intel_pstate), as in NFD.
pub fn pstate(root: &Path) -> Attrs {
    let mut out = Attrs::new();
    let cpu = under(root, CPU);
    if exists(&cpu) != Some(true) || exists(&cpu.join("intel_pstate")) == Some(false) {
        return out;
    }
    let Some(status) = read_trimmed(&cpu.join("intel_pstate/status")) else {
        return out;
    };
    if status == "off" {
        return out;
    }
    if let Some(b) = read_bytes(&cpu.join("intel_pstate/no_turbo"), 16) {
        out.insert("turbo".into(), (b.first() == Some(&b'0')).to_string());
    }
    let active = status == "active";
    out.insert("status".into(), status);
    if !active {
        return out;
    }
    let freq = cpu.join("cpufreq");
    let mut scaling = String::new();
    for policy in list_dir(&freq).unwrap_or_default() {
        let dir = freq.join(&policy);
        match read_trimmed(&dir.join("affected_cpus")) {
            Some(cpus) if !cpus.is_empty() => {}
            _ => continue,
        }
        let Some(governor) = read_trimmed(&dir.join("scaling_governor")) else {
            continue;
        };
        if !scaling.is_empty() && scaling != governor {
            scaling.clear();
            break;
        }
        scaling = governor;
    }
    if !scaling.is_empty() {
        out.insert("scaling_governor".into(), scaling);
    }
    out
}

/// `nx_gzip` when the NX-GZIP coprocessor (POWER9 and later) is there.
pub fn coprocessor(root: &Path) -> Attrs {
    let caps = under(root, "/sys/devices/vio/ibm,compression-v1/nx_gzip_caps");
    let mut out = Attrs::new();
    if exists(&caps) == Some(true) {
        out.insert("nx_gzip".into(), "true".into());
    }
    out
}
