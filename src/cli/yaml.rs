//! YAML as kubectl reads a manifest, for every reader of what a pull
//! request applies: the manifests, the kustomizations beside them and the
//! NodeFeatureRules left to the cluster all go through [`kube_yaml`].
//!
//! What a pull request's YAML says must be what every consumer reads:
//! `kubectl apply -f` and the MCO (k8s.io/apimachinery's YAMLReader splits
//! a file at `---` lines, then sigs.k8s.io/yaml over go-yaml v2, YAML 1.1,
//! reads the first document of each part), and `kubectl apply -k`, Argo CD
//! and Flux (kustomize, go-yaml v3). Where they read the same text
//! differently from one another or from us (YAML 1.2), the text is
//! refused, naming the line and the fix, rather than read one way: a
//! taint reset hidden from plan that way was applied to the nodes.

mod expansion;
mod go_resolve;
mod scalars;

use anyhow::{Result, bail};

/// The documents of a manifest stream, read as kubectl reads them, or the
/// refusal of what its readers read differently ([`refuse_ambiguous`]).
/// Numbers are YAML 1.1's (`0644` is octal); booleans are what go-yaml v2
/// and v3 agree on (`true`, `True`, `TRUE` and the `false` three; `oN`
/// and `tRUE` are strings to both); a plain `yes`, `on`, `y`, `off`... (a
/// boolean to `kubectl apply -f`, a string to kustomize), a plain date (a
/// string to one, a timestamp to the other), a key go-yaml v2 reads as
/// another (`on:`, `0644:`), and tags other than the core ones are refused
/// (scalars.rs); so is a `<<` merge key (go-yaml v2 lets a later one
/// override an explicit key, go-yaml v3 and YAML do not). Errors name the
/// line; callers add the file.
pub fn kube_yaml<T: serde::de::DeserializeOwned>(text: &str) -> Result<Vec<T>> {
    // Each round below parses the text again: their bytes are bounded in
    // all (a thousand escapes after a large file were a thousand parses),
    // over every file the run reads (many small files, each re-parsed).
    kube_yaml_reparsing(text, 4 << 20, &expansion::RUN)
}

/// The bytes re-parsed for escapes so far in this run, all files together.
static REPARSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Their bound for the whole run.
const REPARSED_RUN_MAX: usize = 64 << 20;

/// [`kube_yaml`], `reparsed_max` bytes re-parsed for escapes at most, what
/// aliases build charged to `expansion`.
fn kube_yaml_reparsing<T: serde::de::DeserializeOwned>(
    text: &str,
    reparsed_max: usize,
    expansion: &expansion::Expansion,
) -> Result<Vec<T>> {
    refuse_ambiguous(text)?;
    // go-yaml's `\'` in a double-quoted string, written `'` (same length:
    // lines and columns stay); one scalar each round.
    let mut read = std::borrow::Cow::Borrowed(text);
    let (mut rounds, mut reparsed) = (0, 0usize);
    let checked = loop {
        rounds += 1;
        reparsed = reparsed.saturating_add(read.len());
        let run = if rounds > 1 {
            REPARSED.fetch_add(read.len(), std::sync::atomic::Ordering::Relaxed) + read.len()
        } else {
            0
        };
        if rounds > 1000 || (rounds > 1 && (reparsed > reparsed_max || run > REPARSED_RUN_MAX)) {
            bail!(
                "{} double-quoted strings with `\\'` (go-yaml's escape for `'`, not YAML \
                 1.2's) in {} bytes; write `'` without the backslash",
                rounds - 1,
                text.len()
            );
        }
        match scalars::check(&read) {
            Err(scalars::Stop::Escape(at)) => match scalars::quote_escapes(&read, at) {
                Ok(t) if t != *read => read = std::borrow::Cow::Owned(t),
                Ok(_) => break Err(scalars::Stop::Unparsed(anyhow::anyhow!("unknown escape"))),
                Err(why) => bail!("line {}: {why}", line_of(&read, at)),
            },
            other => break other,
        }
    };
    let (unparsed, rewrites, written) = match checked {
        Ok((rewrites, written)) => (None, rewrites, Some(written)),
        Err(scalars::Stop::Refused(e)) => return Err(e),
        Err(scalars::Stop::Unparsed(e)) => (Some(e), Vec::new(), None),
        Err(scalars::Stop::Escape(_)) => (None, Vec::new(), None),
    };
    // Numbers go-yaml reads otherwise than YAML 1.2, written as the same
    // number in YAML 1.2's terms (same length: lines and columns stay).
    for (at, with) in rewrites {
        read.to_mut().replace_range(at, &with);
    }
    // What the aliases build beyond the text, charged to the run (a text
    // the check could not parse is refused below whatever it builds).
    let mut options = read_options();
    let report = std::rc::Rc::new(std::cell::Cell::new(None));
    if let Some(written) = written {
        expansion.charge_written(written)?;
        options.budget = Some(expansion.budget(written));
        let report = report.clone();
        options = options.with_budget_report(move |r: serde_saphyr::budget::BudgetReport| {
            use serde_saphyr::budget::BudgetBreach as B;
            let cut = matches!(r.breached, Some(B::Nodes { .. } | B::ScalarBytes { .. }));
            report.set(Some(((r.nodes, r.total_scalar_bytes), cut)));
        });
    }
    let docs = serde_saphyr::from_multiple_with_options(&read, options);
    if let (Some(written), Some((read, cut))) = (written, report.get()) {
        expansion.charge(written, read, cut)?;
    }
    let docs = docs.map_err(|e| {
        use serde_saphyr::Error as E;
        let mut inner = &e;
        while let E::AliasError { error, .. } | E::WithSnippet { error, .. } = inner {
            inner = error;
        }
        match (inner, e.location()) {
            (E::MergeKeyNotAllowed { .. }, Some(at)) => anyhow::anyhow!(
                "line {}: a `<<` merge key, read one way by `kubectl apply -f` and the MCO (a \
                 later one overrides an explicit key) and another by kustomize (it does not); \
                 write the keys out instead",
                at.line()
            ),
            // Line and column, never the text: the file may be a link a pull
            // request planted to a secret of the machine reading it (as
            // kubectl, which names the line without quoting it).
            _ => anyhow::anyhow!(
                "{}",
                e.render_with_options(serde_saphyr::render_options! {
                    snippets: serde_saphyr::SnippetMode::Off,
                })
            ),
        }
    })?;
    // The scalars went unchecked: refused all the same (the deserializer
    // and the check share their parser, so this is not expected).
    match unparsed {
        Some(e) => Err(e),
        None => Ok(docs),
    }
}

/// The line (from 1) of byte `at` of `text`.
fn line_of(text: &str, at: usize) -> usize {
    1 + text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// How the deserializer reads a manifest: YAML 1.1's octal, the booleans
/// both Go readers take, no merge key.
fn read_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        legacy_octal_numbers: true,
        strict_booleans: true,
        merge_keys: serde_saphyr::MergeKeyPolicy::Error,
    }
}

/// The YAML documents of a manifest as kubectl reads them (sigs.k8s.io/yaml
/// over go-yaml, YAML 1.1, then JSON): `0644` is octal (420), and a number
/// without a fraction, `493.0`, is the integer JSON carries on (493). Read
/// as YAML 1.2 the first was no integer and the second a float, and a
/// `mode:` so written was passed over as if absent (a pull request setting
/// the generator's mode to `0644` planned as no change). See [`kube_yaml`]
/// for what is refused.
pub fn kube_yaml_docs(text: &str) -> Result<Vec<serde_json::Value>> {
    let mut docs: Vec<serde_json::Value> = kube_yaml(text)?;
    docs.iter_mut().for_each(integral_numbers);
    Ok(docs)
}

/// Refuse the text kubectl, kustomize and the MCO read other than we do,
/// or other than one another, naming its line:
/// - NEL, LS, PS (U+0085, U+2028, U+2029) anywhere: line breaks to go-yaml
///   (YAML 1.1), content to us (YAML 1.2): a comment ended there for them,
///   and what followed it (a key, a drop-in line) was applied unseen;
/// - a carriage return not before a line feed: a line break to YAML, none
///   to kubectl's splitting at `---` lines;
/// - content after a `...` document end before the next `---` line:
///   kubectl reads the first document of each part between `---` lines
///   and drops the rest, we read it;
/// - a `---` line with more after it than a comment (kubectl refuses it),
///   and a `%` directive line (kubectl reads it as a part of its own).
pub fn refuse_ambiguous(text: &str) -> Result<()> {
    // The line of a `...` since the last `---` line.
    let mut ended: Option<usize> = None;
    // The reader's cost grows faster than the count of documents (160,000
    // tiny ones took half a minute): a file holds at most this many.
    const DOCUMENTS_MAX: usize = 10_000;
    let mut documents = 0;
    for (i, line) in text.split('\n').enumerate() {
        let n = i + 1;
        if let Some(c) = line
            .chars()
            .find(|c| matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}'))
        {
            let what = match c {
                '\u{85}' => "U+0085 (NEXT LINE)",
                '\u{2028}' => "U+2028 (LINE SEPARATOR)",
                _ => "U+2029 (PARAGRAPH SEPARATOR)",
            };
            bail!(
                "line {n}: a {what} character, a line break to `kubectl apply -f`, kustomize \
                 and the MCO (YAML 1.1) and not to this reader, so they would apply other \
                 than what it shows; remove it (in a double-quoted string, write it escaped, \
                 e.g. \"\\u2028\")"
            );
        }
        let body = line.strip_suffix('\r').unwrap_or(line);
        if body.contains('\r') {
            bail!(
                "line {n}: a carriage return not followed by a line feed, a line break to YAML \
                 and not to `kubectl apply -f`'s split at `---` lines; end lines with \\n (or \\r\\n)"
            );
        }
        if let Some(rest) = body.strip_prefix("---") {
            let after = rest.trim_matches([' ', '\t']);
            if !(rest.is_empty() || rest.starts_with([' ', '\t']))
                || !(after.is_empty() || after.starts_with('#'))
            {
                bail!(
                    "line {n}: a `---` line with more after it than a comment, which \
                     `kubectl apply -f` refuses and YAML reads as part of a document; put \
                     `---` alone on its line and the document on the next"
                );
            }
            ended = None;
            documents += 1;
            if documents > DOCUMENTS_MAX {
                bail!(
                    "line {n}: more than {DOCUMENTS_MAX} YAML documents in one file; split it \
                     into several files"
                );
            }
            continue;
        }
        if body.starts_with('%') {
            bail!(
                "line {n}: a YAML directive (`%`), which `kubectl apply -f` reads apart from \
                 the document after it; remove it"
            );
        }
        // What follows `...` on its line counts as after it.
        let (body, end) = match body.strip_prefix("...") {
            Some(rest) if rest.is_empty() || rest.starts_with([' ', '\t']) => (rest, Some(n)),
            _ => (body, None),
        };
        ended = ended.or(end);
        let blank = body.trim_start_matches([' ', '\t']);
        if let Some(end) = ended
            && !(blank.is_empty() || blank.starts_with('#'))
        {
            bail!(
                "line {n}: content after the document end `...` of line {end}: `kubectl \
                 apply -f`, kustomize and the MCO apply only the first document before a \
                 `---` line and drop this one, which this reader would read; put a `---` \
                 line before it, or remove it"
            );
        }
    }
    Ok(())
}

/// Floats as Go's JSON encoder writes them and serde_json reads that
/// back: one without a fraction below 1e21 as its shortest digits, an
/// integer where it fits 64 bits (`1e16` is 10000000000000000).
fn integral_numbers(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64() {
                *v = go_resolve::go_float_json(f);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(members) => members.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Review 15 r15b F7: each `\'` costs a parse of the text again; their
    /// bytes are bounded in all (400 escapes after 60 KB were 400 parses).
    #[test]
    fn escape_rounds_are_bounded_in_bytes() {
        let filler: String = (0..300).map(|i| format!("k{i}: v\n")).collect();
        let escapes: String = (0..40).map(|i| format!("e{i}: \"it\\'s\"\n")).collect();
        let text = filler + &escapes;
        // 40 rounds of ~3.6 KB: past a budget of 64 KB, within one of 1 MB.
        let e =
            kube_yaml_reparsing::<serde_json::Value>(&text, 64 << 10, &expansion::RUN).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("write `'` without the backslash"), "{e}");
        let docs =
            kube_yaml_reparsing::<serde_json::Value>(&text, 1 << 20, &expansion::RUN).unwrap();
        assert_eq!(docs[0]["e39"], "it's");
        let few = kube_yaml_docs("a: \"it\\'s\"\nb: \"x\\'y\"\n").unwrap();
        assert_eq!(few[0]["a"], "it's");
    }

    /// Review 23 r23b F5: what aliases build is bounded over the run, all
    /// files together, not per file: each file here is within the
    /// reader's own bound, the third past the run's, and refused within
    /// its parse. A file without aliases is charged nothing.
    #[test]
    fn alias_expansion_is_bounded_over_the_run() {
        // `b` repeats `a`'s 12 nodes 11 times, `c` `b`'s 133: 1,595 nodes
        // built from aliases.
        let bomb = "a: &a [x, x, x, x, x, x, x, x, x, x, x]\n\
                    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
                    c: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n";
        let run = expansion::Expansion::new(4_000, 1 << 20, usize::MAX);
        let read = |text| kube_yaml_reparsing::<serde_json::Value>(text, 1 << 20, &run);
        for _ in 0..2 {
            assert_eq!(read(bomb).unwrap()[0]["c"][10][10][10], "x");
        }
        let plain = "k: [1, 2, 3]\n";
        assert_eq!(read(plain).unwrap()[0]["k"][2], 3);
        let e = format!("{:#}", read(bomb).unwrap_err());
        assert!(
            e.starts_with("its aliases (`*name`) expand to at least ")
                && e.contains("past the run's bound of 4000 nodes built from aliases"),
            "{e}"
        );
        // Past the bound, what writes its nodes out is read still.
        assert_eq!(read(plain).unwrap()[0]["k"][0], 1);
    }

    /// Review 24 r24a F3: the nodes texts write are bounded over the run,
    /// all files together, and a text past the bound is refused before it
    /// is deserialized (the costly part: some microseconds a node).
    #[test]
    fn nodes_written_are_bounded_over_the_run() {
        let run = expansion::Expansion::new(usize::MAX, usize::MAX, 100);
        let read = |text: &str| kube_yaml_reparsing::<serde_json::Value>(text, 1 << 20, &run);
        // A mapping, its key and a sequence of 30: 33 nodes.
        let small = format!("k: [{}]\n", vec!["a"; 30].join(","));
        for _ in 0..3 {
            assert_eq!(read(&small).unwrap()[0]["k"][29], "a");
        }
        let e = format!("{:#}", read(&small).unwrap_err());
        assert!(
            e.contains("it writes 33 YAML nodes, and the YAML read so far in this run 132")
                && e.contains("past the run's bound of 100 nodes"),
            "{e}"
        );
    }

    /// Review 15 r15b F7: a file of many tiny documents is refused before
    /// it is parsed.
    #[test]
    fn documents_are_bounded() {
        let many = "---\na: 1\n".repeat(10_001);
        let e = format!("{:#}", kube_yaml_docs(&many).unwrap_err());
        assert!(e.contains("more than 10000 YAML documents"), "{e}");
        assert_eq!(kube_yaml_docs(&"---\na: 1\n".repeat(3)).unwrap().len(), 3);
    }

    /// Review 15 r15c F4: an input named on the command line may be a link
    /// a pull request planted to a secret of the machine checking it; a
    /// parse error names the line and column, never quotes the text.
    #[test]
    fn parse_errors_quote_no_text() {
        let secret = "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n\
                      aws_secret_access_key = wJalrXUtnFEMI/K7MDENG\n";
        let e = format!("{:#}", kube_yaml_docs(secret).unwrap_err());
        assert!(e.contains("line 2, column 1"), "{e}");
        assert!(!e.contains("AKIA") && !e.contains("wJalr"), "{e}");
    }

    /// Numbers as kubectl reads a manifest (go-yaml's YAML 1.1, then
    /// JSON): `0644` is octal, `493.0` the integer 493; a quoted `"0644"`
    /// stays a string (Ignition then refuses it).
    #[test]
    fn numbers_are_read_as_kubectl_reads_them() {
        let docs =
            kube_yaml_docs("a: 0644\nb: 493.0\nc: 0o755\nd: \"0644\"\ne: 420\nf: 1.5\ng: 0x1ED\n")
                .unwrap();
        let d = &docs[0];
        assert_eq!(d["a"], 420);
        assert_eq!(d["b"], 493);
        assert_eq!(d["c"], 493);
        assert_eq!(d["d"], "0644");
        assert_eq!(d["e"], 420);
        assert_eq!(d["f"], 1.5);
        assert_eq!(d["g"], 493);
    }

    /// The refusal's words, or what was read.
    fn refused(text: &str) -> String {
        match kube_yaml_docs(text) {
            Ok(docs) => panic!("read {text:?} as {docs:?}"),
            Err(e) => format!("{e:#}"),
        }
    }

    // Review 9 (rcli): text kubectl (apimachinery's YAMLReader, then
    // sigs.k8s.io/yaml over go-yaml v2) or kustomize (go-yaml v3) read
    // otherwise than YAML 1.2 does is refused, naming its line: each was
    // read on 553e238, and a pull request hid a taint change from plan and
    // explain with it (tests/render_goyaml.rs checks against go-yaml).

    /// F1, F1b: NEL, LS and PS are line breaks to go-yaml: a literal block
    /// got a second line, a comment ended and a key followed.
    #[test]
    fn nel_ls_and_ps_are_refused_with_their_line() {
        for (c, name) in [
            ('\u{85}', "U+0085"),
            ('\u{2028}', "U+2028"),
            ('\u{2029}', "U+2029"),
        ] {
            let e = refused(&format!("a: |\n  x=1{c}  y=2\n"));
            assert!(e.starts_with(&format!("line 2: a {name} ")), "{e}");
            let e = refused(&format!(
                "f:\n  source: taint\n  # note{c}  source: empty\n"
            ));
            assert!(e.starts_with("line 3: ") && e.contains("remove it"), "{e}");
        }
    }

    /// F2: kubectl splits only at `---` lines and reads the first document
    /// of each part: what follows `...` was never applied.
    #[test]
    fn content_after_a_document_end_is_refused() {
        let e = refused("a: 1\n...\na: 2\n");
        assert!(
            e.starts_with("line 3: content after the document end `...` of line 2"),
            "{e}"
        );
        refused("a: 1\n... # end\n\n# c\n  b: 2\n");
        let e = refused("a: 1\n... b: 2\n");
        assert!(
            e.starts_with("line 2: content after the document end `...` of line 2"),
            "{e}"
        );
        refused("...\na: 1\n");
        // A `...` then only comments, or a `---` line after it, is read
        // alike by all.
        for ok in ["a: 1\n...\n# c\n\n---\na: 2\n", "a: 1\n...\n", "a: ...\n"] {
            assert!(kube_yaml_docs(ok).is_ok(), "{ok:?}");
        }
        assert_eq!(kube_yaml_docs("a: 1\n... \n---\nb: 2\n").unwrap().len(), 2);
    }

    /// `---` lines as kubectl splits at them: a comment may follow, a
    /// document may not (kubectl refuses it); a directive or a lone CR
    /// splits other than YAML does.
    #[test]
    fn separators_kubectl_reads_otherwise_are_refused() {
        assert_eq!(
            kube_yaml_docs("a: 1\n--- # next\nb: 2\n---\t\r\nc: 3\n").unwrap(),
            vec![
                serde_json::json!({"a": 1}),
                serde_json::json!({"b": 2}),
                serde_json::json!({"c": 3})
            ]
        );
        for (text, line) in [
            ("a: 1\n--- {a: 2}\n", 2),
            ("a: 1\n--- |\n  x\n", 2),
            ("a: 1\n---#c\n", 2),
            ("%YAML 1.1\n---\na: 1\n", 1),
            ("a: 1\rb: 2\n", 1),
        ] {
            let e = refused(text);
            assert!(e.starts_with(&format!("line {line}: ")), "{text:?}: {e}");
        }
    }

    /// F7: go-yaml v2 lets a later merge key override an explicit key,
    /// go-yaml v3 (kustomize) does not: refused, as is any merge key.
    #[test]
    fn merge_keys_are_refused() {
        for text in ["a: 2\n<<: {a: 1}\n", "b: &x {a: 1}\nc:\n  <<: *x\n"] {
            let e = refused(text);
            assert!(
                e.starts_with("line 2: a `<<` merge key") || e.starts_with("line 3: a `<<`"),
                "{e}"
            );
        }
        // A quoted `<<` is a key like any other to every reader.
        assert_eq!(kube_yaml_docs("\"<<\": 1\n").unwrap()[0]["<<"], 1);
    }

    // Review 10 (r10b) F2: scalars go-yaml v2 (`kubectl apply -f`, the
    // MCO) and v3 (kustomize) read differently, or we otherwise than both,
    // were read one way on 9d154a5 (tests/yaml_readers.rs checks against
    // both readers; these are their resolve tables' answers).

    /// Mixed-case YAML 1.1 spellings are in neither reader's table of
    /// booleans (v2: y/Y/yes/Yes/YES/on/On/ON/true/True/TRUE and the false
    /// ones; v3: true/True/TRUE, false/False/FALSE): strings, as keys too.
    #[test]
    fn mixed_case_boolean_spellings_are_strings() {
        let d = &kube_yaml_docs("m: oN\nk: yEs\nt: tRUE\nf: [fALSE, nO]\noFF: 1\nb: True\n")
            .unwrap()[0];
        assert_eq!(
            d,
            &serde_json::json!({"m": "oN", "k": "yEs", "t": "tRUE", "f": ["fALSE", "nO"],
                                "oFF": 1, "b": true})
        );
    }

    /// A plain `on`, `yes`, `y`, `off`... is a boolean to go-yaml v2 and a
    /// string to v3; a date a string to v2 and a timestamp to v3; a key v2
    /// reads as a boolean, null or number is another key to it.
    #[test]
    fn scalars_the_go_readers_read_differently_are_refused() {
        for (text, want) in [
            (
                "a: 1\nmask: on\n",
                "line 2: the unquoted value `on` is the boolean true to `kubectl apply -f` and the \
                 MCO (YAML 1.1) but the string \"on\" to kustomize",
            ),
            (
                "m: [x, No]\n",
                "quote it: \"No\" (or write false for the boolean)",
            ),
            ("m: {a: Y}\n", "line 1: the unquoted value `Y`"),
            ("a:\n  on: 1\n", "line 2: the unquoted key `on`"),
            ("True: 1\n", "line 1: the unquoted key `True` is a boolean"),
            ("0644: 1\n", "the unquoted key `0644` is a number"),
            ("null: 1\n", "the unquoted key `null` is null"),
            ("d: 2024-1-2\n", "line 1: the unquoted value `2024-1-2`"),
            ("d: 2024-01-02T10:00:00Z\n", "a timestamp to kustomize"),
        ] {
            let e = refused(text);
            assert!(e.starts_with("line ") && e.contains(want), "{text:?}: {e}");
        }
        // Quoted, all read strings; numbers and dates-to-be are read.
        let d = &kube_yaml_docs("a: \"on\"\n'y': 1\nc: \"2024-01-02\"\n123: 2\nd: 2024-01\n")
            .unwrap()[0];
        assert_eq!(
            d,
            &serde_json::json!({"a": "on", "y": 1, "c": "2024-01-02", "123": 2, "d": "2024-01"})
        );
    }

    /// Tags: the core scalar tags are read as both readers read them; any
    /// other tag (both drop it and read the text as a string, we would
    /// not), a `!!bool` or `!!null` with other content, or a collection's
    /// tag other than its own is refused.
    #[test]
    fn tags_other_than_the_core_ones_are_refused() {
        let d = &kube_yaml_docs(
            "s: !!str on\nb: !!bool \"true\"\ni: !!int \"0644\"\nz: !!null\nm: !!map {a: 1}\n",
        )
        .unwrap()[0];
        assert_eq!(
            d,
            &serde_json::json!({"s": "on", "b": true, "i": 420, "z": null, "m": {"a": 1}})
        );
        for (text, want) in [
            (
                "m: !foo 420\n",
                "line 1: the tag `!foo` on the value \"420\": `kubectl apply -f`, kustomize \
                 and the MCO drop a tag they do not know and read the string \"420\"",
            ),
            ("m: !int 420\n", "the tag `!int`"),
            ("m: ! 420\n", "the tag `!`"),
            ("m: !!timestamp 2001-12-14\n", "the tag `!!timestamp`"),
            ("m: !!bool yes\n", "`!!bool yes`: only true and false"),
            ("m: !!null 5\n", "`!!null 5`, no null"),
            ("m: !!seq {a: 1}\n", "the tag `!!seq` on a mapping"),
            ("m: !x [1]\n", "the tag `!x` on a sequence"),
        ] {
            let e = refused(text);
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    // Review 12 (r12b) F6: go-yaml (`kubectl apply -f`, the MCO, and
    // kustomize alike) drops every `_` of a plain number and refuses an
    // escape YAML 1.1 does not have; on 810045b `mode: 4_93` was a string
    // (a valid file refused) and `"OPS-1\/2"` read as `OPS-1/2` where
    // kubectl refuses the file (tests/yaml_readers.rs checks both against
    // go-yaml).

    /// Numbers with `_`, `0b-`, and floats Go writes as integers, as
    /// kubectl reads them; every other byte of the text stays where it is.
    #[test]
    fn numbers_with_underscores_are_go_yamls() {
        let d = &kube_yaml_docs(
            "mode: 4_93
v: [1_, 0x1_, 685_230.15, 1e1_0, 1__0, -_1, 0b-101, 1e16, .5_0]
w: _1
",
        )
        .unwrap()[0];
        assert_eq!(
            d,
            &serde_json::json!({"mode": 493,
                "v": [1, 1, 685_230.15, 10_000_000_000u64, 10, -1, -5, 10_000_000_000_000_000u64, 0.5],
                "w": "_1"})
        );
        for (text, want) in [
            (
                "m: 1e1000\n",
                "line 1: the unquoted value `1e1000` is the string",
            ),
            (
                "m: .inf\n",
                "line 1: the unquoted value `.inf` is a float without a JSON",
            ),
            ("1_0: x\n", "line 1: the unquoted key `1_0` is a number"),
        ] {
            let e = refused(text);
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    /// A double-quoted `\/` (YAML 1.2, JSON) is no escape to go-yaml: the
    /// whole file is refused, naming the line and the fix.
    #[test]
    fn escapes_go_yaml_does_not_know_are_refused() {
        let e = refused("a: 1\nb: {c: \"OPS-1\\/2\"}\n");
        assert!(
            e.starts_with("line 2: the escape `\\/` in a double-quoted string")
                && e.contains("write `/` without the backslash"),
            "{e}"
        );
        let d = &kube_yaml_docs("a: \"\\t\\_\\N\\L\\x41\\u00e9\\\\/\"\nb: 'x\\/'\n").unwrap()[0];
        assert_eq!(
            d,
            &serde_json::json!({"a": "\t\u{a0}\u{85}\u{2028}A\u{e9}\\/", "b": "x\\/"})
        );
    }

    /// go-yaml reads `\'` in a double-quoted string as `'` (YAML 1.2 has
    /// no such escape: refused on 810045b); an escape neither knows is
    /// refused naming the line and the fix.
    #[test]
    fn go_yamls_quote_escape_is_read() {
        let text = "a: \"it\\'s\"\nb: {\"k\\'\": [\"\\'\\'x\", 1_0]}\nc: \"x\\\\\\'\"\n";
        let d = &kube_yaml_docs(text).unwrap()[0];
        assert_eq!(
            d,
            &serde_json::json!({"a": "it's", "b": {"k'": ["''x", 10]}, "c": "x\\'"})
        );
        for (text, want) in [
            ("a: 1\nb: \"\\q\"\n", "line 2: the escape `\\q`"),
            ("a: \"\\'\\%\"\n", "line 1: the escape `\\%`"),
        ] {
            let e = refused(text);
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }
}
