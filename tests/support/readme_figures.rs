//! A figure the README states, checked against what a test measures or
//! counts, so the README stays true as the code changes.

#![allow(dead_code)]

/// README.md says `phrase` (whitespace-insensitive: line breaks anywhere);
/// otherwise a failure saying what it should say.
pub fn assert_readme_says(phrase: &str) {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("reading README.md");
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat(&readme).contains(&flat(phrase)),
        "README.md's figure is not today's: it should say \"{phrase}\""
    );
}

/// `n` as the README writes it: 265,764.
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
