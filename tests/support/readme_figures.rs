//! A figure README.md or a page of docs/ states, checked against what a test
//! measures or counts, so the pages stay true as the code changes.

#![allow(dead_code)]

use std::path::Path;

/// README.md or one page of docs/ says `phrase` (whitespace-insensitive:
/// line breaks anywhere); otherwise a failure saying what it should say.
pub fn assert_docs_say(phrase: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("reading docs/")
        .map(|e| e.expect("reading docs/").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let said = files.iter().any(|f| {
        let text =
            std::fs::read_to_string(f).unwrap_or_else(|e| panic!("reading {}: {e}", f.display()));
        flat(&text).contains(&flat(phrase))
    });
    assert!(
        said,
        "the docs' figure is not today's: README.md or a page of docs/ should say \"{phrase}\""
    );
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
