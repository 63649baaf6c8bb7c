//! Skipping a test whose program or fixture is missing, the one way every
//! test does it. Under CI (`CI` set) nothing skips: `skipped` fails the test
//! instead. Outside CI each skip is said in one line: libtest captures what a
//! passing test prints, so the skips are also listed straight on fd 2 when
//! the test binary exits. The integration tests are one binary, so that list
//! is the run's summary (the unit tests', which read ../shared too, print
//! their own).
//!
//! The programs are listed in tests/support/tools.txt with the package that
//! installs each: CI installs them from there, and `tool` names the package.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

static SKIPPED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
static AT_EXIT: Once = Once::new();

/// `program package` lines; see the file's header.
pub const TOOLS: &str = include_str!("tools.txt");

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> i32;
}

extern "C" fn print_summary() {
    let Ok(skipped) = SKIPPED.lock() else { return };
    if skipped.is_empty() {
        return;
    }
    let mut out = "\nSKIPPED (CI=1 makes these failures):\n".to_string();
    for why in skipped.iter() {
        out.push_str(&format!("  {why}\n"));
    }
    // std::io::stderr() is not captured by libtest (only the print macros are).
    let _ = std::io::stderr().write_all(out.as_bytes());
}

/// The calling test skips because of `why` (what is missing and how to get
/// it). Under CI this fails the test with `why` instead.
pub fn skipped(why: &str) {
    assert!(std::env::var_os("CI").is_none(), "under CI: {why}");
    eprintln!("SKIPPED: {why}");
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain extern "C" fn with no captured state.
        unsafe { atexit(print_summary) };
    });
    if let Ok(mut s) = SKIPPED.lock() {
        s.insert(why.to_string());
    }
}

/// The package tools.txt names for `name`; a program missing from the list
/// is a bug of the test (CI would not install it).
pub fn package_of(name: &str) -> &'static str {
    TOOLS
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(char::is_whitespace))
        .find(|(p, _)| *p == name)
        .map(|(_, pkg)| pkg.trim())
        .unwrap_or_else(|| {
            panic!("{name} is not in tests/support/tools.txt: add it with its package")
        })
}

/// How to install what `package_of` names.
fn install_hint(package: &str) -> String {
    match package.strip_prefix("cargo:") {
        Some(krate) => format!("cargo install --locked {krate}"),
        None => format!("apt-get install {package}"),
    }
}

/// A program listed in tests/support/tools.txt, found on PATH or in
/// ~/.cargo/bin (or, for a listed absolute path, there); when missing, a
/// skip naming the package (a failure under CI).
pub fn tool(name: &str) -> Option<PathBuf> {
    let package = package_of(name);
    let found = if name.starts_with('/') {
        Some(PathBuf::from(name)).filter(|p| p.is_file())
    } else {
        std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .chain([PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo/bin")])
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    };
    if found.is_none() {
        skipped(&format!("{name} missing ({})", install_hint(package)));
    }
    found
}

/// `tool(name)` found.
pub fn need(name: &str) -> bool {
    tool(name).is_some()
}

/// A file or directory of the shared material beside the repository
/// (`../shared/REL`, read in place); when absent, a skip naming it.
pub fn shared(rel: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(rel);
    if p.exists() {
        return Some(p);
    }
    skipped(&format!("../shared/{rel} is absent"));
    None
}
