//! The Go YAML readers of a manifest, built offline in GOPATH mode from
//! Debian's packages: `kubectl apply -f` and the MCO's (tests/support/goyaml:
//! apimachinery's split at `---` lines, then sigs.k8s.io/yaml over go-yaml
//! v2, YAML 1.1) and kustomize's (tests/support/goyaml3: go-yaml v3, YAML
//! 1.2, decoded as kyaml's RNode.Map does). Each prints the documents as one
//! JSON array.

use super::{scratch_dir, skipped};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

const GOPATH: &str = "/usr/share/gocode";

/// One of the two readers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Reader {
    /// `kubectl apply -f` and the MCO: go-yaml v2.
    V2,
    /// kustomize (`kubectl apply -k`, Argo CD, Flux): go-yaml v3.
    V3,
}

impl Reader {
    /// (directory under tests/support, the Go package it needs, the Debian
    /// packages that have it)
    fn parts(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Reader::V2 => (
                "goyaml",
                "sigs.k8s.io/yaml",
                "golang-k8s-sigs-yaml-dev golang-gopkg-yaml.v2-dev",
            ),
            Reader::V3 => ("goyaml3", "gopkg.in/yaml.v3", "golang-gopkg-yaml.v3-dev"),
        }
    }
}

/// The reader's program, built once; None (after saying why) when Go or
/// Debian's package is missing outside CI.
pub fn bin(reader: Reader) -> Option<&'static Path> {
    static V2: OnceLock<Option<PathBuf>> = OnceLock::new();
    static V3: OnceLock<Option<PathBuf>> = OnceLock::new();
    let cell = match reader {
        Reader::V2 => &V2,
        Reader::V3 => &V3,
    };
    cell.get_or_init(|| build(reader)).as_deref()
}

fn build(reader: Reader) -> Option<PathBuf> {
    let (dir, package, debs) = reader.parts();
    // A current Go: its encoding/json writes a map of int keys that go-yaml
    // v3 decodes (Debian's 1.19 refuses it), as the readers' callers do.
    let go = super::current_go::find()?;
    if !Path::new(GOPATH).join("src").join(package).is_dir() {
        skipped::skipped(&format!(
            "{GOPATH}/src/{package} is missing (apt-get install {debs})"
        ));
        return None;
    }
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let bin = tmp.join(dir);
    let out = Command::new(&go)
        .args(["build", "-o"])
        .arg(&bin)
        .arg(format!("./tests/support/{dir}"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("GO111MODULE", "off")
        .env("GOPATH", GOPATH)
        .env("GOCACHE", tmp.join("gocache"))
        .env("GOPROXY", "off")
        .output()
        .expect("running go build");
    assert!(
        out.status.success(),
        "go build tests/support/{dir}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(bin)
}

/// Read a YAML stream as the reader built at `bin` does: one JSON value
/// per document.
pub fn read(bin: &Path, text: &str) -> Vec<Value> {
    try_read(bin, text).unwrap_or_else(|e| panic!("{} on {text:?}: {e}", bin.display()))
}

/// [`read`], or go-yaml's (or the split's) error.
pub fn try_read(bin: &Path, text: &str) -> Result<Vec<Value>, String> {
    let dir = scratch_dir();
    let f = dir.path().join("in.yaml");
    std::fs::write(&f, text).unwrap();
    let out = Command::new(bin).arg(&f).output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(serde_json::from_slice(&out.stdout).unwrap())
}
