//! A figure README.md or a page of docs/ states, checked against what a test
//! measures or counts, so the pages stay true as the code changes.

#![allow(dead_code)]

use std::path::Path;

/// The text of README.md and of every page of docs/.
fn pages() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("reading docs/")
        .map(|e| e.expect("reading docs/").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
        .iter()
        .map(|f| {
            std::fs::read_to_string(f).unwrap_or_else(|e| panic!("reading {}: {e}", f.display()))
        })
        .collect()
}

/// README.md or one page of docs/ says `phrase` (whitespace-insensitive:
/// line breaks anywhere); otherwise a failure saying what it should say.
pub fn assert_docs_say(phrase: &str) {
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let said = pages()
        .iter()
        .any(|text| flat(text).contains(&flat(phrase)));
    assert!(
        said,
        "the docs' figure is not today's: README.md or a page of docs/ should say \"{phrase}\""
    );
}

/// README.md or one page of docs/ states an approximate figure as
/// `<number> <unit_suffix>` (for instance "7.0 MiB (x86_64)"), and the number
/// is within `tolerance` of `measured`: for figures the pages give as "about",
/// which move a little with every change to the code.
pub fn assert_docs_say_about(unit_suffix: &str, measured: f64, tolerance: f64) {
    let suffix: Vec<&str> = unit_suffix.split_whitespace().collect();
    let mut stated = Vec::new();
    for text in pages() {
        let words: Vec<&str> = text.split_whitespace().collect();
        for i in 1..words.len() {
            // The suffix's last word may carry punctuation: "(aarch64).".
            let said = words.len() - i >= suffix.len()
                && suffix.iter().enumerate().all(|(k, w)| {
                    let word = words[i + k];
                    if k + 1 == suffix.len() {
                        word.starts_with(w)
                    } else {
                        word == *w
                    }
                });
            if said && let Ok(n) = words[i - 1].parse::<f64>() {
                stated.push(n);
            }
        }
    }
    assert!(
        !stated.is_empty(),
        "README.md or a page of docs/ should state \"{measured:.1} {unit_suffix}\""
    );
    for n in &stated {
        assert!(
            (n - measured).abs() <= tolerance,
            "the docs say \"{n} {unit_suffix}\" but today's figure is {measured:.1}: \
             write \"{measured:.1} {unit_suffix}\""
        );
    }
}

/// `n` as the pages write it: 265,764.
pub fn with_commas(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
