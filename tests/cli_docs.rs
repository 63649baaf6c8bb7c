//! Man pages, generated from the same clap types as --help, checked by the
//! real programs that read them: man and groff (completions: completions.rs).
//! man/ holds the generated pages (regenerate with
//! `cargo run -- man --output-dir man`); a test fails when they are stale.

use crate::support::{bin, scratch_dir, skipped};

use std::path::{Path, PathBuf};
use std::process::Command;

use skipped::need;

fn generated_pages() -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = scratch_dir();
    let status = bin()
        .args(["man", "--output-dir"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let mut pages: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pages.sort();
    (dir, pages)
}

#[test]
fn man_pages_render_without_warnings() {
    if !need("man") || !need("groff") {
        return;
    }
    let (_dir, pages) = generated_pages();
    // One page per visible command: kubelet-labeler, explain, validate,
    // facts, render + 3, iso + 4, sync, plan, completions, man.
    assert_eq!(pages.len(), 17, "{pages:?}");
    for page in &pages {
        let out = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(page)
            .env("MANWIDTH", "80")
            .env("MAN_KEEP_FORMATTING", "")
            .output()
            .unwrap();
        assert!(out.status.success(), "man -l {}", page.display());
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "man warns on {}",
            page.display()
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("EXAMPLES"), "{}: no examples", page.display());
    }
}

#[test]
fn committed_man_pages_are_current() {
    let (_dir, pages) = generated_pages();
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let mut names: Vec<_> = std::fs::read_dir(&committed)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    let generated: Vec<_> = pages
        .iter()
        .map(|p| p.file_name().unwrap().to_owned())
        .collect();
    assert_eq!(
        names, generated,
        "man/ is stale: cargo run -- man --output-dir man"
    );
    for page in &pages {
        let want = std::fs::read(page).unwrap();
        let have = std::fs::read(committed.join(page.file_name().unwrap())).unwrap();
        assert!(
            want == have,
            "man/{} is stale: cargo run -- man --output-dir man",
            page.file_name().unwrap().to_string_lossy()
        );
    }
}

#[test]
fn every_help_ends_with_examples_and_exit_status() {
    for args in [
        &["--help"][..],
        &["explain", "--help"],
        &["validate", "--help"],
        &["render", "machineconfig", "--help"],
        &["iso", "embed", "--help"],
        &["completions", "--help"],
    ] {
        let out = bin().args(args).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("\nExamples:\n  ") && text.contains("kubelet-labeler "),
            "{args:?}: {text}"
        );
        assert!(text.contains("\nExit status: 0 "), "{args:?}: {text}");
    }
}
