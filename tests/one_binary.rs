//! The integration tests are one test binary (tests/integration.rs), with
//! one support module; the skips of the run are listed when it exits.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::support::{repo, skipped, stderr};

/// The names `prefix NAME;` declares in `file`.
fn declared(file: &Path, prefix: &str) -> BTreeSet<String> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix(prefix)?.strip_suffix(';'))
        .map(String::from)
        .collect()
}

/// The `.rs` files of `dir` by stem, but `except`.
fn rust_files(dir: &Path, except: &str) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|s| s != except)
        .collect()
}

/// With `autotests = false` cargo builds no file of tests/ on its own: one
/// that tests/integration.rs does not name would never run. Support files
/// are modules of tests/support/mod.rs, not pulled in by a path attribute.
#[test]
fn every_test_file_is_a_module_of_the_one_binary() {
    let tests = repo().join("tests");
    let mut files = rust_files(&tests, "integration");
    assert!(files.len() >= 30, "{files:?}");
    files.insert("support".to_string());
    assert_eq!(files, declared(&tests.join("integration.rs"), "mod "));
    let support = tests.join("support");
    assert_eq!(
        rust_files(&support, "mod"),
        declared(&support.join("mod.rs"), "pub mod ")
    );
    for dir in [&tests, &support] {
        for name in rust_files(dir, "") {
            let path = dir.join(format!("{name}.rs"));
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                !text.contains(&format!("{}[path", '#')),
                "{}: a module of tests/integration.rs or tests/support/mod.rs, not pulled in by a path attribute",
                path.display()
            );
        }
    }
}

/// Set in the copy of the binary that the next test runs to skip.
const SKIPPING_CHILD: &str = "KUBELET_LABELER_TEST_SKIPPING_CHILD";

/// A skip is listed on stderr after the binary's results (libtest shows
/// nothing a passing test printed), whatever file the test is in.
#[test]
fn skips_are_listed_when_the_binary_exits() {
    let why = "no-such-tool missing (apt-get install no-such-package)";
    if std::env::var_os(SKIPPING_CHILD).is_some() {
        skipped::skipped(why);
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "one_binary::skips_are_listed_when_the_binary_exits",
        ])
        .env(SKIPPING_CHILD, "1")
        .env_remove("CI")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "the skipping test did not run: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        stderr(&out),
        format!("\nSKIPPED (CI=1 makes these failures):\n  {why}\n")
    );
}
