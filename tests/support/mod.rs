//! What the integration tests share: the built CLI, scratch directories,
//! the skip helper, and the real programs they compare against (each in a
//! module of its own).

#![allow(dead_code)]

pub mod current_go;
pub mod deflate;
pub mod elf;
pub mod fake_api;
pub mod go_yaml;
pub mod ignition_oracle;
pub mod iso;
pub mod mco;
pub mod nfd_oracle;
pub mod node_format;
pub mod readme_figures;
pub mod realcluster;
pub mod run_cli;
pub mod skipped;
pub mod systemd_oracle;
pub mod wrapper_run;

use std::path::Path;
use std::process::{Command, Output};

/// The built `kubelet-labeler`.
pub const BIN: &str = env!("CARGO_BIN_EXE_kubelet-labeler");

/// A command running the built `kubelet-labeler`.
pub fn bin() -> Command {
    Command::new(BIN)
}

/// The checkout (the scripts, docs and fixtures the tests read).
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh directory of its own for one test (in `TMPDIR`), removed when
/// dropped.
pub fn scratch_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("creating a scratch directory in TMPDIR")
}

/// Write `text` to `path`, creating its directories.
pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `names` listed in the kustomization of `dir` (render's), with `drop`
/// left out, as a pull request that adds or renames manifests there does
/// (`kubectl apply -k` applies only what it lists, and the CLI refuses a
/// directory whose kustomization does not list exactly its manifests).
pub fn relist_kustomization(dir: &Path, names: &[&str], drop: &[&str]) {
    let path = dir.join("kustomization.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut k: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    let resources = k["resources"].as_array_mut().unwrap();
    resources.retain(|r| !drop.iter().any(|d| r == d));
    resources.extend(names.iter().map(|n| serde_json::json!(n)));
    std::fs::write(&path, k.to_string()).unwrap();
}

/// A pull request's MachineConfig `name` (role `role`, none when `None`)
/// writing one file at `path` with `text`, added to the render in `dir`
/// and listed in its kustomization.
pub fn add_file_machineconfig(dir: &Path, name: &str, role: Option<&str>, path: &str, text: &str) {
    let source = format!(
        "data:,{}",
        kubelet_labeler::cli::render::encoding::percent_encode(text.as_bytes())
    );
    let mut mc = serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": { "name": name },
        "spec": { "config": { "ignition": { "version": "3.4.0" },
            "storage": { "files": [ { "path": path, "mode": 420,
                                      "contents": { "source": source } } ] } } }
    });
    if let Some(role) = role {
        mc["metadata"]["labels"] =
            serde_json::json!({ "machineconfiguration.openshift.io/role": role });
    }
    let file = format!("{name}.yaml");
    std::fs::write(dir.join(&file), mc.to_string()).unwrap();
    relist_kustomization(dir, &[&file], &[]);
}

/// Write `text` to `path` as an executable (a stub program), creating its
/// directories.
pub fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    write(path, text);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Whether the tests run as root (the MCO oracle writes a node's files
/// only then).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A live-ISO stand-in built by iso/make-test-iso.sh in `dir`, or None
/// (skipped, one line) without xorriso.
pub fn test_iso(dir: &Path) -> Option<std::path::PathBuf> {
    skipped::tool("xorriso")?;
    let iso = dir.join("base.iso");
    let out = Command::new("bash")
        .arg(repo().join("iso/make-test-iso.sh"))
        .arg(&iso)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    Some(iso)
}

/// `program` with `args` run to its end under GNU time: its output, and
/// the peak of its resident memory in KiB. time forks it from its own
/// small process: a child the test binary spawns directly would count the
/// test binary's own peak (the kernel carries the peak of the memory a
/// process leaves at `execve`). None (skipped) without time.
pub fn peak_rss(program: &Path, args: &[&std::ffi::OsStr]) -> Option<(Output, u64)> {
    let time = skipped::tool("/usr/bin/time")?;
    let dir = scratch_dir();
    let report = dir.path().join("maxrss");
    let o = Command::new(time)
        .args(["-f", "%M", "-o"])
        .arg(&report)
        .arg(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let kib = std::fs::read_to_string(&report).unwrap_or_default();
    let kib = kib.lines().last().and_then(|l| l.trim().parse().ok());
    let kib = kib.unwrap_or_else(|| panic!("no peak from time: {}", stderr(&o)));
    Some((o, kib))
}
