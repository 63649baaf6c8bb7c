//! Scalars and tags of a pull request's YAML against both Go readers of it:
//! `kubectl apply -f` and the MCO (go-yaml v2, YAML 1.1) and kustomize
//! (`kubectl apply -k`, Argo CD, Flux: go-yaml v3, YAML 1.2), built from
//! tests/support/goyaml and goyaml3. What both read alike we read as they
//! do; what they read differently, or what we would read otherwise than
//! both, is refused naming the line and the fix. Review 10 (r10b) F2: on
//! 9d154a5 `mask: oN` was a boolean to plan and the string "oN" to the MCO
//! (which then refused the pool's render while plan showed the new taint),
//! a plain `on`/`yes` a boolean to kubectl and a string to kustomize, and
//! `!foo 420` the number 420 to plan and the string "420" to both.

use crate::support::go_yaml::{self, Reader};
use crate::support::mco;

use kubelet_labeler::cli::yaml::kube_yaml_docs;
use serde_json::Value;

/// What we make of a text.
enum Want {
    /// Read, as both Go readers read it (they agree).
    Alike,
    /// Refused, with these words; the Go readers read it differently from
    /// each other (or one refuses it).
    Split(&'static str),
    /// Refused, with these words, though both Go readers read it alike:
    /// this reader would not (a tag it would honour, they drop).
    Unsure(&'static str),
    /// Refused by both Go readers, and by us with these words.
    Refused(&'static str),
}
use Want::{Alike, Refused, Split, Unsure};

const CASES: &[(&str, Want)] = &[
    // Mixed-case YAML 1.1 spellings: strings to both (on 9d154a5, to us
    // booleans).
    ("m: oN\n", Alike),
    ("m: yEs\n", Alike),
    ("m: tRUE\n", Alike),
    ("m: fALSE\n", Alike),
    ("m: nO\n", Alike),
    ("m: oFF\nk: tRue\n", Alike),
    ("m: {a: oN, b: [yEs, nO]}\n", Alike),
    ("oN: 1\n", Alike),
    ("a: {oN: 1}\n", Alike),
    ("- [tRUE, {fALSE: oN}]\n", Alike),
    // The booleans both take.
    ("m: true\nk: True\no: FALSE\n", Alike),
    // Quoted, or tagged as strings: strings to all.
    ("m: \"on\"\nk: 'yes'\n", Alike),
    ("m: !!str on\n", Alike),
    ("m: !<tag:yaml.org,2002:str> yes\n", Alike),
    ("!!str on: 1\n", Alike),
    ("\"on\": 1\n", Alike),
    // The core tags, read alike.
    ("m: !!bool \"true\"\n", Alike),
    ("m: !!bool True\n", Alike),
    ("m: !!int \"420\"\n", Alike),
    ("m: !!int \"0644\"\n", Alike),
    ("m: !!float 420\n", Alike),
    ("m: !!null \"\"\nk: !!null\n", Alike),
    ("m: !!binary aGVsbG8=\n", Alike),
    ("m: !!map {a: 1}\nk: !!seq [1]\n", Alike),
    // Numbers and keys both read alike.
    (
        "m: 0644\nk: 0o17\no: 1e3\np: 0x1F\nq: 1_000\nr: 493.0\n",
        Alike,
    ),
    ("123: 1\na: {123: 1}\n", Alike),
    ("m: 2001-12-14x\nk: 1:20\n", Alike),
    // YAML 1.1 booleans: to kubectl apply -f booleans, to kustomize strings.
    (
        "m: on\n",
        Split("line 1: the unquoted value `on` is the boolean true"),
    ),
    (
        "m: ON\n",
        Split("quote it: \"ON\" (or write true for the boolean)"),
    ),
    ("m: yes\n", Split("line 1: the unquoted value `yes`")),
    ("m: Yes\n", Split("line 1: the unquoted value `Yes`")),
    ("m: y\n", Split("line 1: the unquoted value `y`")),
    ("m: Y\n", Split("line 1: the unquoted value `Y`")),
    ("m: n\n", Split("the boolean false to `kubectl apply -f`")),
    ("m: off\n", Split("line 1: the unquoted value `off`")),
    (
        "a: 1\nm: [x, on]\n",
        Split("line 2: the unquoted value `on`"),
    ),
    (
        "a:\n  b: {c: off}\n",
        Split("line 2: the unquoted value `off`"),
    ),
    ("on: 1\n", Split("line 1: the unquoted key `on`")),
    ("a:\n  - {y: 1}\n", Split("line 2: the unquoted key `y`")),
    // Keys go-yaml v2 makes other keys of.
    (
        "True: 1\n",
        Split("line 1: the unquoted key `True` is a boolean"),
    ),
    (
        "a: {true: 1}\n",
        Split("line 1: the unquoted key `true` is a boolean"),
    ),
    (
        "0644: 1\n",
        Split("line 1: the unquoted key `0644` is a number"),
    ),
    ("1.0: 1\n", Split("the unquoted key `1.0` is a number")),
    ("0x1F: 1\n", Split("the unquoted key `0x1F` is a number")),
    ("~: 1\n", Split("the unquoted key `~` is null")),
    // A tagged key but `!!str`: another key to v2 (or none), refused by v3
    // in a nested mapping.
    (
        "!!int 0644: 1\n",
        Split("line 1: the tag `!!int` on the key \"0644\""),
    ),
    (
        "a: {!!bool true: 1}\n",
        Split("the tag `!!bool` on the key"),
    ),
    // A date: a string to kubectl apply -f, a timestamp to kustomize.
    (
        "m: 2001-12-14\n",
        Split("line 1: the unquoted value `2001-12-14`"),
    ),
    (
        "a: {2001-12-14: 1}\n",
        Split("the unquoted key `2001-12-14`"),
    ),
    (
        "m: !!timestamp 2001-12-14\n",
        Split("the tag `!!timestamp`"),
    ),
    // `!`: a string to v2, an integer to v3.
    (
        "m: ! 420\n",
        Split("line 1: the tag `!` on the value \"420\""),
    ),
    // A YAML 1.1 boolean tagged: true to v2, refused by v3.
    (
        "m: !!bool yes\n",
        Split("`!!bool yes`: only true and false"),
    ),
    // Tags both drop, reading the text as a string; we would not.
    (
        "m: !foo 420\n",
        Unsure("line 1: the tag `!foo` on the value \"420\""),
    ),
    (
        "m: !foo yes\n",
        Unsure("the tag `!foo` on the value \"yes\""),
    ),
    ("m: !int 420\n", Unsure("the tag `!int`")),
    ("m: !!set 4\n", Unsure("the tag `!!set`")),
    ("m: !!map x\n", Unsure("the tag `!!map`")),
    (
        "a: 1\nm: !foo {a: 1}\n",
        Unsure("line 2: the tag `!foo` on a mapping"),
    ),
    ("m: !!str {a: 1}\n", Unsure("the tag `!!str` on a mapping")),
    ("m: !!null 5\n", Unsure("`!!null 5`, no null")),
    ("true: 1\n", Unsure("the unquoted key `true`")),
    // Review 12 (r12b) F6: go-yaml drops every `_` of a plain number
    // (YAML 1.1), takes `0b-`, no sexagesimal, and writes a float without
    // a fraction as an integer; on 810045b these were strings (or floats).
    ("m: 1_\nk: 0x1_\no: 685_230.15\np: 1e1_0\n", Alike),
    ("m: 1__0\nk: -_1\no: +_1\np: 0_644\nq: 0b1_0\n", Alike),
    (
        "m: 0b-101\nk: -0b1_0\no: 0b_1\np: 1_e3\nq: 0_\nr: 5.5_\n",
        Alike,
    ),
    (
        "m: 12_34.5_6e1_0\nk: 1.5e1_0\no: .5e1_0\np: .5_0\nq: 1_0.0\n",
        Alike,
    ),
    ("m: [4_93, {a: 2_0}]\nk: {a: 1__0,b: 2}\n", Alike),
    (
        "m: _1\nk: ._5\no: 0x_\np: 0o8\nq: 0x1p3\nr: 1:20\ns: 190:20:30\n",
        Alike,
    ),
    (
        "m: 08\nk: 09.5\no: 1e16\np: 1e20\nq: 1e21\nr: -0.0\ns: 1e-400\n",
        Alike,
    ),
    ("m: 99999999999999999999\nk: +18446744073709551615\n", Alike),
    (
        "m: 0B11\nk: 0O17\no: 0X1f\np: -0x1f\nq: +0b1\nr: 0xFFFFFFFFFFFFFFFF\n",
        Alike,
    ),
    ("m: -9223372036854775808\nk: 9223372036854775808\n", Alike),
    // Tagged numbers, go-yaml's the same way.
    ("m: !!int 1_\n", Alike),
    ("m: !!float 1_0\n", Alike),
    ("m: !!int \"1_0\"\n", Alike),
    ("m: !!str 1_0\nk: \"1_0\"\n", Alike),
    (
        "m: !!int 0b-1\nk: !!float 1e1_0\no: [!!int 0x1_, !!float .5_0]\n",
        Alike,
    ),
    (
        "1_0: x\n",
        Split("line 1: the unquoted key `1_0` is a number"),
    ),
    ("0b1: x\n", Split("the unquoted key `0b1` is a number")),
    // Past a float: a string to Go, an infinity to YAML 1.2: refused.
    (
        "m: 1e1000\n",
        Unsure("line 1: the unquoted value `1e1000` is the string"),
    ),
    (".inf: 1\n", Alike),
    (
        "m: .inf\n",
        Refused("line 1: the unquoted value `.inf` is a float"),
    ),
    ("m: -.Inf\n", Refused("the unquoted value `-.Inf`")),
    ("m: .NaN\n", Refused("the unquoted value `.NaN`")),
    // Double-quoted escapes: YAML 1.1's, as go-yaml has them (and a tab
    // after `\`); YAML 1.2's `\/` refused as go-yaml refuses the file.
    (
        "m: \"a\\tb\\\tc\\Nd\\_e\\Lf\\Pg\\x41\\xe9\\u00e9\\U0001F600\"\n",
        Alike,
    ),
    (
        "m: \"\\0\\a\\b\\v\\f\\r\\e\\ \\\"\\\\\\x85\\uFFFE\\x00\\u2028\"\n",
        Alike,
    ),
    (
        "m: \"a\\\n  b\"\nk: 'a\\/b'\no: a\\/b\np: \"a\\\\/b\"\n",
        Alike,
    ),
    (
        "m: \"OPS-1\\/2\"\n",
        Refused("line 1: the escape `\\/` in a double-quoted string"),
    ),
    ("a: 1\nb: [\"\\/\"]\n", Refused("line 2: the escape `\\/`")),
    ("m: \"a\\qb\"\n", Refused("line 1: the escape `\\q`")),
    (
        "a: 1\nm: \"\\'a\\%b\"\n",
        Refused("line 2: the escape `\\%`"),
    ),
    // go-yaml's `\'` (no YAML 1.2 escape): `'`, in keys, flow and lists.
    ("m: \"it\\'s\"\nk: {\"a\\'\": [\"\\'\\'\", 1_0]}\n", Alike),
    ("- \"x\\\\\\'\"\n- \"a\\'\n  b\\'\" # c\n", Alike),
    (
        "m: \"a\\uD800b\"\n",
        Refused("while parsing a quoted scalar"),
    ),
    (
        "m: \"\\U00110000\"\n",
        Refused("invalid Unicode character escape code"),
    ),
    ("m: \"a\\x8gb\"\n", Refused("expected hexadecimal number")),
];

/// Documents without the empty ones (`---` alone), as the Go readers skip them.
fn docs(v: Vec<Value>) -> Vec<Value> {
    v.into_iter().filter(|d| !d.is_null()).collect()
}

/// Each case of [`CASES`] against both Go readers. Failed on 9d154a5: the
/// mixed-case spellings were booleans, and every refusal but
/// `!!null 5`'s and `!!bool yes`'s was read (as a boolean, a number, or a
/// key or text of its own).
#[test]
fn scalars_are_read_as_both_go_readers_read_them_or_refused() {
    let (Some(v2), Some(v3)) = (go_yaml::bin(Reader::V2), go_yaml::bin(Reader::V3)) else {
        return;
    };
    let mut bad = Vec::new();
    for (text, want) in CASES {
        let theirs2 = go_yaml::try_read(v2, text).map(docs);
        let theirs3 = go_yaml::try_read(v3, text).map(docs);
        let ours = kube_yaml_docs(text).map(docs).map_err(|e| format!("{e:#}"));
        match want {
            Alike => {
                if theirs2.is_err() || theirs2 != theirs3 {
                    bad.push(format!(
                        "{text:?}: the oracle: v2 {theirs2:?}, v3 {theirs3:?}"
                    ));
                } else if ours != theirs2 {
                    bad.push(format!("{text:?}: read as {ours:?}, go-yaml {theirs2:?}"));
                }
            }
            Refused(words) => {
                if theirs2.is_ok() || theirs3.is_ok() {
                    bad.push(format!(
                        "{text:?}: the oracle read it: v2 {theirs2:?}, v3 {theirs3:?}"
                    ));
                }
                match ours {
                    Ok(v) => bad.push(format!("{text:?}: read as {v:?}")),
                    Err(e) if !e.contains(words) => {
                        bad.push(format!("{text:?}: refused, not with {words:?}: {e}"))
                    }
                    Err(_) => {}
                }
            }
            Split(words) | Unsure(words) => {
                let split = matches!(want, Split(_));
                if split == (theirs2 == theirs3) {
                    bad.push(format!(
                        "{text:?}: the oracle: v2 {theirs2:?}, v3 {theirs3:?} (split: {split})"
                    ));
                }
                match ours {
                    Ok(v) => bad.push(format!("{text:?}: read as {v:?}")),
                    Err(e) if !e.contains(words) => {
                        bad.push(format!("{text:?}: refused, not with {words:?}: {e}"))
                    }
                    Err(_) => {}
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Every MCO template (../shared/fixtures/mco, every release), read by
/// go-yaml v2 as the MCO reads it, we read alike: nothing refused, nothing
/// read otherwise.
#[test]
fn mco_templates_read_as_go_yaml_reads_them() {
    let Some(dir) = mco::require_fixtures() else {
        return;
    };
    let Some(v2) = go_yaml::bin(Reader::V2) else {
        return;
    };
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    names.sort();
    assert!(names.len() >= 150, "only {} templates", names.len());
    let mut bad = Vec::new();
    for path in &names {
        let mut text = std::fs::read_to_string(path).unwrap();
        // kubelet.service's templates are YAML once rendered (their `{{- if`
        // lines stand at column 0 in a block): rendered as the MCO would.
        if go_yaml::try_read(v2, &text).is_err() {
            text = mco::fill(&text);
        }
        let theirs = go_yaml::try_read(v2, &text).map(docs);
        match kube_yaml_docs(&text).map(docs) {
            Ok(ours) if Ok(&ours) == theirs.as_ref() => {}
            other => bad.push(format!("{}: {other:?}, go-yaml {theirs:?}", path.display())),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
