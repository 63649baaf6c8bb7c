//! Every program the tests run is in tests/support/tools.txt, with a
//! package, so CI installs it (.ci/run installs the list and then checks
//! each program is found) and a missing one skips naming its package.

use crate::support::skipped;

use std::collections::BTreeSet;
use std::path::Path;

/// The string literals that directly follow `pattern` in `text`.
fn literals_after<'a>(text: &'a str, pattern: &str) -> Vec<&'a str> {
    text.match_indices(pattern)
        .filter_map(|(i, _)| {
            let rest = &text[i + pattern.len()..];
            let rest = rest.trim_start().strip_prefix('"')?;
            Some(&rest[..rest.find('"')?])
        })
        .collect()
}

/// Programs named by a string literal given to `Command::new`, `need` or
/// `tool` in the tests and their support files.
fn programs_the_tests_run() -> BTreeSet<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = BTreeSet::new();
    for dir in ["tests", "tests/support"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = e.unwrap().path();
            // This file names the patterns it looks for.
            if path.extension().is_none_or(|x| x != "rs") || path.ends_with("tools_listed.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for pattern in ["Command::new(", "need(", "tool("] {
                for p in literals_after(&text, pattern) {
                    let file = path.strip_prefix(root).unwrap().display().to_string();
                    found.insert((p.to_string(), file));
                }
            }
        }
    }
    found
}

#[test]
fn every_program_the_tests_run_is_listed_with_a_package() {
    let listed: BTreeSet<&str> = skipped::TOOLS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let found = programs_the_tests_run();
    // Not vacuous: the scan sees the tests' programs.
    assert!(found.iter().any(|(p, _)| p == "bash"), "{found:?}");
    assert!(found.iter().any(|(p, _)| p == "lspci"), "{found:?}");
    let missing: Vec<String> = found
        .iter()
        .filter(|(p, _)| !listed.contains(p.as_str()))
        .map(|(p, file)| format!("{p} (run by {file})"))
        .collect();
    assert!(
        missing.is_empty(),
        "not in tests/support/tools.txt, so CI does not install them: {}",
        missing.join(", ")
    );
}

#[test]
fn every_listed_program_has_one_package() {
    for line in skipped::TOOLS.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words.len(), 2, "`program package` expected: {line:?}");
        assert_eq!(skipped::package_of(words[0]), words[1]);
    }
}

#[test]
fn an_unlisted_program_is_refused() {
    let name = "no-such-program-listed";
    let err = std::panic::catch_unwind(|| skipped::tool(name)).unwrap_err();
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(msg.contains("not in tests/support/tools.txt"), "{msg}");
}
