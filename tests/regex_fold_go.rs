//! `(?i)` in a rule's pattern against Go: the case-fold orbits compiled in
//! (src/node/rules/unicode_tables.rs, from tools/unicode-tables) and what
//! folded patterns match, with Go's own regexp (tests/support/go-oracle).

use crate::rules_go_oracle::run_oracle;
use crate::support::{current_go, scratch_dir};

use std::path::Path;
use std::process::Command;

use kubelet_labeler::node::rules::regex::Regex;
use serde_json::json;

/// `(?i)` folds along Go's unicode.SimpleFold orbits (review 9 F3: not
/// Rust's case maps). The orbits are compiled in from
/// src/node/rules/unicode_tables.rs: tools/unicode-tables run with the
/// current Go must give that file back; and on every rune of an orbit, on
/// each rune Rust's case maps give another case, and on ı/İ/ß/ẞ/ﬅ/ﬆ,
/// `(?i)^X$` and `(?i)^[X]$` match in Go's regexp what they match here.
#[test]
fn case_folding_is_gos() {
    let tmp = scratch_dir();
    let Some(oracle) = current_go::build_support_oracle("go-oracle", tmp.path()) else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let go = current_go::find().unwrap();
    let gen_bin = tmp.path().join("unicode-tables");
    let gen_dir = tmp.path().join("gen");
    current_go::build_std_program(
        &go,
        &repo.join("tools/unicode-tables/main.go"),
        &gen_dir,
        &gen_bin,
    );
    let generated = Command::new(&gen_bin).output().unwrap();
    assert!(generated.status.success());
    let generated = String::from_utf8(generated.stdout).unwrap();
    let committed = std::fs::read_to_string(repo.join("src/node/rules/unicode_tables.rs")).unwrap();
    // The first line names the Go and its Unicode version.
    let unicode = |s: &str| {
        s.lines()
            .next()
            .unwrap_or("")
            .split("(Unicode")
            .nth(1)
            .map(str::to_string)
    };
    if unicode(&generated) == unicode(&committed) {
        assert!(
            generated.lines().skip(1).eq(committed.lines().skip(1)),
            "src/node/rules/unicode_tables.rs is not what tools/unicode-tables gives: regenerate it"
        );
    } else {
        crate::support::skipped::skipped(&format!(
            "unicode_tables.rs against this Go: another Unicode version ({:?})",
            unicode(&generated)
        ));
    }
    // Runes to try: each of an orbit (the table's second field on), each
    // Rust case-maps to one other rune, and the reviewer's.
    let orbits = committed.split("FOLD_ORBITS: &str = \"").nth(1).unwrap();
    let orbits = orbits.split('"').next().unwrap().replace("\\\n", "");
    let mut runes: Vec<char> = orbits
        .split([';', ' '])
        .filter_map(|h| char::from_u32(u32::from_str_radix(h.trim(), 16).ok()?))
        .collect();
    for c in (0..0x20000).filter_map(char::from_u32) {
        let (l, u) = (single(c.to_lowercase()), single(c.to_uppercase()));
        if l.is_some_and(|l| l != c) || u.is_some_and(|u| u != c) {
            runes.push(c);
        }
    }
    runes.extend(['ı', 'İ', 'ß', 'ẞ', '\u{FB05}', '\u{FB06}', 'i', 'I', 'k']);
    runes.sort_unstable();
    runes.dedup();
    let mut cases: Vec<(String, Vec<String>)> = Vec::new();
    for &c in &runes {
        let mut inputs: Vec<char> = vec![c, 'i', 'I'];
        inputs.extend(single(c.to_lowercase()));
        inputs.extend(single(c.to_uppercase()));
        // Our orbit of c: what `(?i)c` compiles to.
        let re = Regex::new(&format!("(?i){c}")).unwrap();
        inputs.extend(runes.iter().filter(|&&r| re.is_match(&r.to_string())));
        inputs.sort_unstable();
        inputs.dedup();
        let inputs: Vec<String> = inputs.iter().map(char::to_string).collect();
        let lit = regex_quote(c);
        cases.push((format!("(?i)^{lit}$"), inputs.clone()));
        cases.push((format!("(?i)^[{lit}]$"), inputs));
    }
    let input = json!({
        "templates": [],
        "regexes": cases.iter().map(|(p, i)| json!({"pattern": p, "inputs": i})).collect::<Vec<_>>(),
    });
    let out = run_oracle(&oracle, &input);
    let mut failures = Vec::new();
    for ((pattern, inputs), go) in cases.iter().zip(out["regexes"].as_array().unwrap()) {
        let re = Regex::from_wire(&Regex::new(pattern).unwrap().to_wire()).unwrap();
        for (s, g) in inputs.iter().zip(go["matches"].as_array().unwrap()) {
            if re.is_match(s) != g.as_bool().unwrap() {
                failures.push(format!("{pattern:?} on {s:?}: Go says {g}"));
            }
        }
    }
    assert!(runes.len() > 2000, "{}", runes.len());
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `c` as a pattern's literal (escaped when RE2 gives it a meaning).
fn regex_quote(c: char) -> String {
    if "\\.+*?()|[]{}^$-".contains(c) {
        format!("\\{c}")
    } else {
        c.to_string()
    }
}

/// The one rune a case map gives, if it gives one.
fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
    match (it.next(), it.next()) {
        (Some(c), None) => Some(c),
        _ => None,
    }
}
