//! What the ISO tests share: the fixture base ISO (../shared/fixtures/
//! coreos-installer) in a scratch directory of its own, with a program a
//! test compares against; the pools `iso fleet` takes, rendered beside a
//! stand-in selector; an xz stream with the check coreos-installer writes.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{bin, elf, repo, scratch_dir, skipped};

/// ../shared/fixtures/coreos-installer, or None (skipped, one line).
pub fn fixtures() -> Option<PathBuf> {
    skipped::shared("fixtures/coreos-installer")
}

/// The pristine fixture ISO of `fx` ([`fixtures`]), decompressed into
/// `dir` as base.iso.
pub fn base_iso(dir: &Path, fx: &Path) -> PathBuf {
    let mut xz = xz2::read::XzDecoder::new(
        std::fs::File::open(fx.join("synthetic-coreos-base.iso.xz")).unwrap(),
    );
    let mut bytes = Vec::new();
    xz.read_to_end(&mut bytes).unwrap();
    let p = dir.join("base.iso");
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A scratch directory (removed when dropped) holding the fixture ISO.
pub struct FixtureIso {
    pub dir: tempfile::TempDir,
    /// The fixtures ([`fixtures`]).
    pub fx: PathBuf,
    /// The pristine base ISO in `dir` ([`base_iso`]).
    pub base: PathBuf,
}

impl FixtureIso {
    /// The fixture ISO in a fresh scratch directory; None (skipped, one
    /// line) without the fixtures.
    pub fn new() -> Option<Self> {
        let fx = fixtures()?;
        let dir = scratch_dir();
        let base = base_iso(dir.path(), &fx);
        Some(Self { dir, fx, base })
    }

    /// [`FixtureIso::new`] and the program `tool` (tools.txt), as
    /// `coreos-installer`; None (skipped, one line saying what is missing)
    /// without either.
    pub fn with(tool: &str) -> Option<(Self, PathBuf)> {
        let fx = fixtures()?;
        let tool = skipped::tool(tool)?;
        let dir = scratch_dir();
        let base = base_iso(dir.path(), &fx);
        Some((Self { dir, fx, base }, tool))
    }
}

/// An Ignition config `text` written in `dir` as c.ign.
pub fn config_in(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("c.ign");
    std::fs::write(&p, text).unwrap();
    p
}

/// An xz stream of `data` with a CRC32 check (as coreos-installer writes
/// the embed area's archives).
pub fn xz_crc32(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let stream = xz2::stream::Stream::new_easy_encoder(6, xz2::stream::Check::Crc32).unwrap();
    let mut w = xz2::write::XzEncoder::new_stream(Vec::new(), stream);
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

/// A stand-in selector (x86_64): `iso fleet` reads its ELF header and usage
/// line; it is never run here.
pub fn stand_in_selector(dir: &Path) -> PathBuf {
    let p = dir.join("stand-in-selector");
    std::fs::write(
        &p,
        elf::static_elf(kubelet_labeler::cli::render::arch::Arch::X86_64),
    )
    .unwrap();
    p
}

/// The fleet tests' rules.
pub fn rules() -> PathBuf {
    repo().join("examples/rules/mixed-fleet.yaml")
}

/// A pool's gitops directory, rendered by `render machineconfig`; a
/// stand-in wrapper of the selector's architecture is carried (never run
/// here).
pub fn gitops(dir: &Path, pool: &str, label: &str, sel: &Path) -> PathBuf {
    let out = dir.join(format!("gitops-{pool}"));
    let arch = kubelet_labeler::cli::render::arch::Arch::of_elf(&std::fs::read(sel).unwrap())
        .expect("the selector's architecture");
    let wrapper = dir.join(format!("stand-in-wrapper-{arch}"));
    std::fs::write(&wrapper, elf::static_elf(arch)).unwrap();
    let o = bin()
        .args([
            "render",
            "machineconfig",
            "--pool",
            pool,
            "--pool-label",
            label,
        ])
        .arg("--rules")
        .arg(rules())
        .args(["--nfd-labels", "openshift", "--wrapper"])
        .arg(&wrapper)
        .arg("--output-dir")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

const GPU: &str = "feature.node.kubernetes.io/gpu=true";
const NUMA: &str = "feature.node.kubernetes.io/memory-numa=true";

/// The pool most fleet tests give `iso fleet`: `worker-gpu`, selecting
/// `feature.node.kubernetes.io/gpu=true`, rendered in `dir` beside a
/// stand-in selector ([`stand_in_selector`], the one `iso fleet` is given).
pub fn gpu_pool(dir: &Path) -> PathBuf {
    gitops(dir, "worker-gpu", GPU, &stand_in_selector(dir))
}

/// [`gpu_pool`] and `worker-numa`, selecting
/// `feature.node.kubernetes.io/memory-numa=true`.
pub fn gpu_and_numa_pools(dir: &Path) -> (PathBuf, PathBuf) {
    let sel = stand_in_selector(dir);
    let gpu = gitops(dir, "worker-gpu", GPU, &sel);
    (gpu, gitops(dir, "worker-numa", NUMA, &sel))
}
