//! The layout's rules (docs/architecture.md), checked on the sources: no
//! file past 1,000 lines, no files that import each other (two, or round a
//! circle), and a `main.rs` that only dispatches.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every library source file under `src/` by its module path (`src/lib.rs`
/// is `[]`, `src/cli/render/mod.rs` is `[cli, render]`), with its text.
/// Test-only files (`*tests.rs`, `tests/` directories) are left out: a test
/// may read anything.
fn library_files() -> BTreeMap<Vec<String>, (PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("reading src/") {
            let p = e.expect("reading src/").path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "tests" && n != "bin") {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut out = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().with_extension("");
        let mut path: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let last = path.last().cloned().unwrap_or_default();
        if last == "main" || last.ends_with("tests") {
            continue;
        }
        if last == "mod" || last == "lib" {
            path.pop();
        }
        let text = std::fs::read_to_string(&f).unwrap();
        out.insert(path, (f, text));
    }
    out
}

/// `text` without comments and without its `#[cfg(test)]` module (which
/// sits at the end of a file here).
fn code_of(text: &str) -> String {
    let text = match text
        .find("#[cfg(test)]\nmod tests")
        .or_else(|| text.find("#[cfg(test)]\npub(super) mod tests"))
        .or_else(|| text.find(concat!("#[cfg(test)]\n#", "[path")))
    {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The paths `code` names from `crate::`, `super::` or `self::`, a `use`
/// group's members each as its own path (`super::a::{b, c::d}` gives
/// `super::a::b` and `super::a::c`).
fn named_paths(code: &str) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .any(|p| b[i..].starts_with(p.as_bytes()))
            && (i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':'));
        if !starts {
            i += 1;
            continue;
        }
        let (path, end) = path_at(code, i);
        i = end;
        if code.as_bytes()[i..].starts_with(b"::{") {
            let (members, end) = group_at(code, i + 3);
            i = end;
            for m in members {
                let mut p = path.clone();
                p.extend(m);
                out.push(p);
            }
        } else {
            out.push(path);
        }
    }
    out
}

/// The `a::b::c` path at `i`, and where it ends.
fn path_at(code: &str, mut i: usize) -> (Vec<String>, usize) {
    let b = code.as_bytes();
    let mut path = Vec::new();
    loop {
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if i == start {
            break;
        }
        path.push(code[start..i].to_string());
        if b[i..].starts_with(b"::") && b.get(i + 2).is_some_and(|&c| is_ident(c)) {
            i += 2;
        } else {
            break;
        }
    }
    (path, i)
}

/// The members of a `{...}` group starting at `i` (after the brace), each
/// as its first segments, and where the group ends.
fn group_at(code: &str, mut i: usize) -> (Vec<Vec<String>>, usize) {
    let b = code.as_bytes();
    let mut members = Vec::new();
    while i < b.len() {
        match b[i] {
            b'}' => return (members, i + 1),
            c if is_ident(c) => {
                let (p, end) = path_at(code, i);
                i = end;
                if code.as_bytes()[i..].starts_with(b"::{") {
                    let (inner, end) = group_at(code, i + 3);
                    i = end;
                    for m in inner {
                        let mut q = p.clone();
                        q.extend(m);
                        members.push(q);
                    }
                } else {
                    members.push(p);
                }
            }
            _ => i += 1,
        }
    }
    (members, i)
}

/// Which file of `modules` a path named in `from` reaches: the deepest
/// module on it.
fn file_named(
    from: &[String],
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut base: Vec<String> = from.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        _ => {}
    }
    while rest.first().map(String::as_str) == Some("super") {
        base.pop();
        rest = &rest[1..];
    }
    let mut found = None;
    for n in 0..=rest.len() {
        let mut m = base.clone();
        m.extend(rest[..n].iter().cloned());
        if modules.contains(&m) {
            found = Some(m);
        }
    }
    found
}

/// Files that import each other, round any circle: the groups of two or
/// more files each of which reaches every other.
fn circles(files: &BTreeMap<Vec<String>, (PathBuf, String)>) -> Vec<Vec<String>> {
    let modules: BTreeSet<Vec<String>> = files.keys().cloned().collect();
    let mut edges: BTreeMap<&Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (m, (_, text)) in files {
        for p in named_paths(&code_of(text)) {
            if let Some(to) = file_named(m, &p, &modules).filter(|to| to != m) {
                edges.entry(m).or_default().insert(to);
            }
        }
    }
    let reach = |from: &Vec<String>| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for n in edges.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&Vec<String>, BTreeSet<Vec<String>>> =
        modules.iter().map(|m| (m, reach(m))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut placed = BTreeSet::new();
    for m in &modules {
        if placed.contains(m) || !reached[m].contains(m) {
            continue;
        }
        let group: Vec<String> = modules
            .iter()
            .filter(|n| reached[m].contains(*n) && reached[*n].contains(m))
            .map(|n| {
                placed.insert(n.clone());
                let f = &files[n].0;
                let root = Path::new(env!("CARGO_MANIFEST_DIR"));
                f.strip_prefix(root).unwrap_or(f).display().to_string()
            })
            .collect();
        out.push(group);
    }
    out
}

#[test]
fn no_two_files_import_each_other() {
    let found = circles(&library_files());
    assert!(
        found.is_empty(),
        "files that import each other (move what they share below them):\n{}",
        found
            .iter()
            .map(|g| g.join(" <-> "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The check sees a circle of two and one of three, through `use`
/// groups, and not one between a file and the module it names only in a
/// comment.
#[test]
fn circles_are_seen() {
    let file = |path: &str, text: &str| {
        let m: Vec<String> = path.split('/').map(String::from).collect();
        (m, (PathBuf::from(path), text.to_string()))
    };
    let files: BTreeMap<_, _> = [
        file("a", "use super::b::{self, B};"),
        file("b", "fn f() { crate::x::a::g() }"),
        file("c", "use super::{d::D, e};"),
        file("d", "use crate::x::e::E;"),
        file("e", "pub fn e() { super::c::C }"),
        file("f", "// see super::g\nuse super::a::A;"),
        file(
            "g",
            "use super::f::F;\n#[cfg(test)]\nmod tests { use super::g; }",
        ),
    ]
    .into_iter()
    .map(|(mut m, v): (Vec<String>, _)| {
        // as if each were a file under src/x/
        m.insert(0, "x".into());
        (m, v)
    })
    .chain([(vec!["x".to_string()], (PathBuf::from("x"), String::new()))])
    .collect();
    let found = circles(&files);
    assert_eq!(
        found,
        [
            vec!["a".to_string(), "b".into()],
            vec!["c".into(), "d".into(), "e".into()]
        ]
    );
}

/// No source file, of the program (src/) or of its tests (tests/), past
/// 1,000 lines.
#[test]
fn no_file_past_1000_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut long = Vec::new();
    let mut todo = vec![root.join("src"), root.join("tests")];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let n = std::fs::read_to_string(&p).unwrap().lines().count();
                if n > 1000 {
                    long.push(format!("{} ({n} lines)", p.display()));
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these along a seam their sections show: {long:?}"
    );
}

/// `main.rs` parses and dispatches; each adapter lives beside its module.
#[test]
fn main_only_dispatches() {
    let main =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs")).unwrap();
    let fns: Vec<&str> = main
        .lines()
        .filter(|l| l.trim_start().starts_with("fn ") || l.contains(" fn "))
        .collect();
    assert_eq!(fns, ["fn main() -> ExitCode {"], "main.rs holds only main");
    assert!(main.lines().count() <= 200, "main.rs past 200 lines");
}
