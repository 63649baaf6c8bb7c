//! One summary line of what a test binary skipped. libtest captures what a
//! passing test prints, so a skip said with eprintln! is never seen; each skip
//! is recorded here and the line is written straight to fd 2 at process exit,
//! after libtest's own "test result" line.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, Once};

static SKIPPED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
static AT_EXIT: Once = Once::new();

unsafe extern "C" {
    fn atexit(callback: extern "C" fn()) -> i32;
}

extern "C" fn print_summary() {
    let Ok(skipped) = SKIPPED.lock() else { return };
    if skipped.is_empty() {
        return;
    }
    let exe = std::env::args().next().unwrap_or_default();
    let name = exe.rsplit('/').next().unwrap_or(&exe);
    let name = name.rsplit_once('-').map_or(name, |(n, _)| n);
    let list: Vec<&str> = skipped.iter().map(String::as_str).collect();
    // std::io::stderr() is not captured by libtest (only the print macros are).
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED in {name}: {} (set CI=1 to make these failures)",
        list.join("; ")
    );
}

/// Record a skip (the caller has already failed if CI is set) and say it
/// in the test's own output too.
pub fn skipped(why: &str) {
    eprintln!("SKIPPED: {why}");
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain extern "C" fn with no captured state.
        unsafe { atexit(print_summary) };
    });
    if let Ok(mut s) = SKIPPED.lock() {
        s.insert(why.to_string());
    }
}

/// A program on PATH or in ~/.cargo/bin; when missing, a CI failure, else
/// a recorded skip naming how to install it.
pub fn tool(name: &str, install: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo/bin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} missing ({install})"
        );
        skipped(&format!("{name} missing ({install})"));
    }
    found
}
