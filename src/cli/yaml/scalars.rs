//! Scalars and tags the Go readers of a manifest read differently from
//! one another or from us, refused with their line and the fix.
//!
//! `kubectl apply -f` and the MCO read YAML with go-yaml v2 (YAML 1.1:
//! gopkg.in/yaml.v2 resolve.go's table makes `y`, `Yes`, `ON`, `off` and
//! the like booleans, in these exact spellings only); kustomize (`kubectl
//! apply -k`, Argo CD, Flux) with go-yaml v3 (YAML 1.2: resolve.go's table
//! has only `true`/`True`/`TRUE` and the `false` three; a plain
//! `2001-12-14` is a timestamp, kyaml's RNode.Map decoding it so). Where
//! the two differ, or where this reader (serde-saphyr) would read otherwise
//! than both, the text is refused rather than read one way. What both read
//! alike and we do too (`oN`, `tRUE`: strings to all, with
//! `strict_booleans`) passes.
//!
//! Numbers are go-yaml's (go_resolve.rs): a plain number YAML 1.2 reads
//! otherwise (`1_`, `685_230.15`, `0b-101`) is read as Go reads it (the
//! text handed to the deserializer says the same number in its terms,
//! same length, so every line and column stays), or refused where no
//! such text fits. A double-quoted escape go-yaml does not know (YAML
//! 1.2's `\/`) is refused as go-yaml refuses the whole file.

use std::ops::Range;

use anyhow::anyhow;
use serde_json::Value;
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, Tag};

use super::go_resolve::{self, GoNumber};

/// Why [`check`] stopped.
pub(super) enum Stop {
    /// Text the readers read differently: the refusal, naming the line.
    Refused(anyhow::Error),
    /// Text the parser refused: the deserializer will say so too, in its
    /// words (this one is the fallback).
    Unparsed(anyhow::Error),
    /// An escape YAML 1.2 does not have in the double-quoted scalar whose
    /// opening quote is at this byte: go-yaml's `\'` is read by
    /// [`quote_escapes`], any other refused there.
    Escape(usize),
}

/// The YAML 1.1 booleans of go-yaml v2 that go-yaml v3 reads as strings.
const V2_ONLY_BOOLS: &[(&str, bool)] = &[
    ("y", true),
    ("Y", true),
    ("yes", true),
    ("Yes", true),
    ("YES", true),
    ("on", true),
    ("On", true),
    ("ON", true),
    ("n", false),
    ("N", false),
    ("no", false),
    ("No", false),
    ("NO", false),
    ("off", false),
    ("Off", false),
    ("OFF", false),
];

/// Booleans to go-yaml v2, go-yaml v3 and us alike.
const BOOLS: &[&str] = &["true", "True", "TRUE", "false", "False", "FALSE"];

/// Nulls to every reader (plain).
const NULLS: &[&str] = &["", "~", "null", "Null", "NULL"];

/// The core tags' namespace (`!!x` is `tag:yaml.org,2002:x`).
const CORE: &str = "tag:yaml.org,2002:";

/// Where a node stands in its parent.
enum Frame {
    Seq,
    /// A mapping, and whether its next node is a key.
    Map(bool),
}

/// Bytes of the text to read in place of what is written there (same
/// length): a number in the deserializer's terms.
pub(super) type Rewrite = (Range<usize>, String);

/// Every scalar and tag of `text`, against what the Go readers make of it;
/// the rewrites that make the deserializer read its numbers as Go does,
/// and what the text writes (its aliases not expanded).
pub(super) fn check(text: &str) -> Result<(Vec<Rewrite>, Written), Stop> {
    let mut frames: Vec<Frame> = Vec::new();
    let mut rewrites = Vec::new();
    let mut written = Written::default();
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| {
            use serde_saphyr::granit_parser::ErrorKind;
            match (e.kind(), e.marker().byte_offset()) {
                (ErrorKind::UnknownQuotedScalarEscape, Some(at)) => Stop::Escape(at),
                _ => Stop::Unparsed(anyhow!("{e}")),
            }
        })?;
        let line = span.start.line();
        let raw = span
            .start
            .byte_offset()
            .zip(span.end.byte_offset())
            .and_then(|(a, b)| Some((a..b, text.get(a..b)?)));
        written.count(&event);
        let is_key = match frames.last_mut() {
            Some(Frame::Map(next_is_key)) if is_node(&event) => {
                let key = *next_is_key;
                *next_is_key = !key;
                key
            }
            _ => false,
        };
        let refusal = match &event {
            Event::Scalar(value, style, _, tag) => match tag {
                Some(tag) if is_key => tagged_key(tag, value),
                Some(tag) => tagged_scalar(tag, value).or_else(|| {
                    let core = core_name(tag)?;
                    if *style != ScalarStyle::Plain || !matches!(core.as_str(), "int" | "float") {
                        return None;
                    }
                    match tagged_number(&core, value, raw.clone()) {
                        Number::Alike => None,
                        Number::Rewrite(r) => {
                            rewrites.push(r);
                            None
                        }
                        Number::Refused(why) => Some(why),
                    }
                }),
                None if *style == ScalarStyle::Plain => match plain(value, is_key) {
                    Some(why) => Some(why),
                    None if is_key => None,
                    None => match plain_number(value, raw.clone()) {
                        Number::Alike => None,
                        Number::Rewrite(r) => {
                            rewrites.push(r);
                            None
                        }
                        Number::Refused(why) => Some(why),
                    },
                },
                None if *style == ScalarStyle::DoubleQuoted => {
                    raw.as_ref().and_then(|(_, r)| escapes(r))
                }
                None => None,
            },
            Event::MappingStart(_, _, tag) => {
                frames.push(Frame::Map(true));
                tag.as_deref()
                    .and_then(|t| collection_tag(t, "map", "a mapping"))
            }
            Event::SequenceStart(_, _, tag) => {
                frames.push(Frame::Seq);
                tag.as_deref()
                    .and_then(|t| collection_tag(t, "seq", "a sequence"))
            }
            Event::MappingEnd | Event::SequenceEnd => {
                frames.pop();
                None
            }
            _ => None,
        };
        if let Some(why) = refusal {
            return Err(Stop::Refused(anyhow!("line {line}: {why}")));
        }
    }
    Ok((rewrites, written))
}

/// What a text writes, as the deserializer's budget counts what it reads:
/// nodes (scalars, mappings and sequences) and the bytes of scalars and
/// tags. What the deserializer reads beyond it, aliases expanded.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Written {
    pub nodes: usize,
    pub bytes: usize,
}

impl Written {
    fn count(&mut self, event: &Event) {
        let tag_len = |tag: Option<&Tag>| tag.map_or(0, |t| t.to_string().len());
        let bytes = match event {
            Event::Scalar(value, _, _, tag) => value.len() + tag_len(tag.as_deref()),
            Event::MappingStart(_, _, tag) | Event::SequenceStart(_, _, tag) => {
                tag_len(tag.as_deref())
            }
            _ => return,
        };
        self.nodes += 1;
        self.bytes = self.bytes.saturating_add(bytes);
    }
}

fn is_node(event: &Event) -> bool {
    matches!(
        event,
        Event::Scalar(..) | Event::MappingStart(..) | Event::SequenceStart(..) | Event::Alias(_)
    )
}

/// How a value is shown in a refusal: quoted, cut short.
fn shown(value: &str) -> String {
    let mut cut: String = value.chars().take(40).collect();
    if cut.len() < value.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

/// A plain scalar (`is_key`: a mapping's key) the readers do not all read
/// as we do.
fn plain(value: &str, is_key: bool) -> Option<String> {
    let what = if is_key { "key" } else { "value" };
    if let Some((_, b)) = V2_ONLY_BOOLS.iter().find(|(s, _)| *s == value) {
        return Some(format!(
            "the unquoted {what} `{value}` is the boolean {b} to `kubectl apply -f` and the MCO \
             (YAML 1.1) but the string {q} to kustomize (`kubectl apply -k`, Argo CD, Flux), so \
             they would apply different things; quote it: {q}{or}",
            q = shown(value),
            or = if is_key {
                String::new()
            } else {
                format!(" (or write {b} for the boolean)")
            },
        ));
    }
    if looks_like_a_date(value) {
        return Some(format!(
            "the unquoted {what} `{value}` is a string to `kubectl apply -f` and the MCO but a \
             timestamp to kustomize (`kubectl apply -k`, Argo CD, Flux), which sends it as \
             another text (`2001-12-14` becomes \"2001-12-14T00:00:00Z\"); quote it: {}",
            shown(value)
        ));
    }
    if !is_key {
        return None;
    }
    // A key is a string to kustomize's top level; go-yaml v2 resolves it
    // first (`0644` is "420", `True` is "true", `~` no key at all), and v3
    // refuses such keys in a nested mapping.
    let resolved = if BOOLS.contains(&value) {
        "a boolean"
    } else if NULLS.contains(&value) {
        "null"
    } else if noncanonical_number(value) {
        "a number"
    } else {
        return None;
    };
    Some(format!(
        "the unquoted key `{value}` is {resolved} to `kubectl apply -f` and the MCO (YAML 1.1, \
         and so another key or none) and to kustomize in a nested mapping (refused there), but \
         the string {q} at its top level; quote it: {q}",
        q = shown(value)
    ))
}

/// Whether go-yaml v3 may read a plain scalar as a timestamp: `YYYY-M-D`,
/// alone or before `T`, `t` or a space (v3's parseTimestamp formats; a
/// text past the date that no format takes is refused all the same).
fn looks_like_a_date(value: &str) -> bool {
    let b = value.as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    if b.len() < 8 || digits(0) != 4 || b[4] != b'-' {
        return false;
    }
    let month = digits(5);
    if !(1..=2).contains(&month) || b.get(5 + month) != Some(&b'-') {
        return false;
    }
    let at = 6 + month;
    let day = digits(at);
    (1..=2).contains(&day) && matches!(b.get(at + day), None | Some(b'T' | b't' | b' '))
}

/// A number to go-yaml v2 whose key text is not its decimal integer
/// form: go-yaml v2 makes another key of it (`0644` is "420", `1_0` is
/// "10", `1.0` is "1").
fn noncanonical_number(value: &str) -> bool {
    match go_resolve::number(value) {
        Some(GoNumber::Int(i)) => i.to_string() != value,
        Some(GoNumber::Uint(u)) => u.to_string() != value,
        Some(GoNumber::Float(_)) => true,
        // `.inf:` is the key ".inf" to all (and a string to us).
        None => false,
    }
}

/// go-yaml v2's infinities and NaN (resolve.go's table): floats JSON has
/// no text for, so kubectl refuses the file with one.
const NON_FINITE: &[&str] = &[
    ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf",
    "-.INF",
];

/// What a plain value is to go-yaml v2 and to the deserializer.
enum Number {
    /// Read alike (or no number to either).
    Alike,
    /// A number to Go that the deserializer reads otherwise as written:
    /// these bytes read as Go's number.
    Rewrite(Rewrite),
    /// Read otherwise, and no text of Go's number fits: the refusal.
    Refused(String),
}

/// A plain value (`raw`: where it is written) as go-yaml v2 reads it: a
/// number read as Go reads it, or refused.
fn plain_number(value: &str, raw: Option<(Range<usize>, &str)>) -> Number {
    if !value.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '.')) {
        return Number::Alike;
    }
    if NON_FINITE.contains(&value) {
        return Number::Refused(format!(
            "the unquoted value `{value}` is a float without a JSON text (infinite or NaN): \
             `kubectl apply -f`, kustomize and the MCO refuse the file; quote it for the \
             string: {}",
            shown(value)
        ));
    }
    let go = match go_resolve::number(value) {
        Some(n) => n,
        // A string to Go: no number to us either, or refused.
        None => {
            let unreadable = |v: &str| v.replace('_', "").parse::<f64>().is_ok();
            return match alone(value) {
                Some(Value::Number(_)) => Number::Refused(format!(
                    "the unquoted value `{value}` is the string {q} to `kubectl apply -f`, \
                     kustomize and the MCO (go-yaml), but not to this reader; quote it: {q}",
                    q = shown(value)
                )),
                None if unreadable(value) => Number::Refused(format!(
                    "the unquoted value `{value}` is the string {q} to `kubectl apply -f`, \
                     kustomize and the MCO (go-yaml: no number past a float), but not to this \
                     reader; quote it: {q}",
                    q = shown(value)
                )),
                _ => Number::Alike,
            };
        }
    };
    let want = go.json();
    if alone(value).as_ref() == Some(&want) {
        return Number::Alike;
    }
    let mut texts = vec![value.replace('_', "")];
    texts.extend(go.texts());
    let fits = texts
        .into_iter()
        .find(|t| t.len() <= value.len() && alone(t).as_ref() == Some(&want));
    match (fits, raw) {
        (Some(t), Some((at, written))) if written == value => {
            let pad = value.len() - t.len();
            Number::Rewrite((at, format!("{t}{}", " ".repeat(pad))))
        }
        _ => Number::Refused(format!(
            "the unquoted value `{value}` is the number {want} to `kubectl apply -f`, kustomize \
             and the MCO (go-yaml drops every `_`), which this reader would read otherwise; \
             write {want} (or quote it for the string {q})",
            q = shown(value)
        )),
    }
}

/// A plain `!!int` or `!!float` (`core`) number as go-yaml v2 reads it
/// (`!!int 1_` is 1, `!!float 1_0` 10.0), or refused; other texts are
/// the deserializer's and Go's alike, or refused by both.
fn tagged_number(core: &str, value: &str, raw: Option<(Range<usize>, &str)>) -> Number {
    let Some(go) = go_resolve::number(value) else {
        return Number::Alike;
    };
    let want = match (core, go) {
        ("float", GoNumber::Int(i)) => go_resolve::go_float_json(i as f64),
        ("float", GoNumber::Uint(u)) => go_resolve::go_float_json(u as f64),
        _ => go.json(),
    };
    let read = |t: &str| alone(&format!("!!{core} {t}"));
    if read(value).as_ref() == Some(&want) {
        return Number::Alike;
    }
    let mut texts = vec![value.replace('_', "")];
    texts.extend(go.texts());
    let fits = texts
        .into_iter()
        .find(|t| t.len() <= value.len() && read(t).as_ref() == Some(&want));
    match (fits, raw) {
        (Some(t), Some((at, written))) if written == value => {
            let pad = value.len() - t.len();
            Number::Rewrite((at, format!("{t}{}", " ".repeat(pad))))
        }
        _ => Number::Refused(format!(
            "`!!{core} {value}` is the number {want} to `kubectl apply -f`, kustomize and the \
             MCO (go-yaml drops every `_`), which this reader would read otherwise; write \
             {want}"
        )),
    }
}

/// What the deserializer reads a scalar's text as, alone, as kubectl's
/// JSON carries it on.
fn alone(text: &str) -> Option<Value> {
    let mut v = serde_saphyr::from_str_with_options::<Value>(text, super::read_options()).ok()?;
    super::integral_numbers(&mut v);
    Some(v)
}

/// The escapes of go-yaml's double-quoted scalars (YAML 1.1's, and `\'`
/// and a tab): after `\`, one of these, or a line break.
const GO_ESCAPES: &str = "0abt\tnvfre \"'\\N_LPxuU\n\r";

/// A double-quoted scalar as written (`raw`, from its quote) with an
/// escape go-yaml does not know: the whole file is refused by it.
fn escapes(raw: &str) -> Option<String> {
    let body = &raw[raw.find('"')? + 1..];
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            continue;
        }
        match chars.next() {
            Some(e) if GO_ESCAPES.contains(e) => {}
            Some(e) => return Some(unknown_escape(e)),
            None => {}
        }
    }
    None
}

/// The refusal of `\e`, an escape go-yaml does not know.
fn unknown_escape(e: char) -> String {
    let plain = if e == '/' {
        "write `/` without the backslash".to_string()
    } else {
        format!("write {e:?} another way (`\\\\` for a backslash)")
    };
    format!(
        "the escape `\\{e}` in a double-quoted string: `kubectl apply -f`, kustomize \
                     and the MCO (go-yaml, YAML 1.1) know no such escape and refuse the whole \
                     file (\"found unknown escape character\"); {plain}, or single-quote the \
                     string"
    )
}

/// `text` with the double-quoted scalar whose opening quote is at byte
/// `at` read as go-yaml reads it: each `\'` (go-yaml's, not YAML 1.2's)
/// written `'`, as many spaces after the closing quote (lines and columns
/// stay); or the refusal of an escape go-yaml does not know either.
pub(super) fn quote_escapes(text: &str, at: usize) -> Result<String, String> {
    let Some(body) = text.get(at..).and_then(|t| t.strip_prefix('"')) else {
        return Err("an escape this reader does not know in a double-quoted string".into());
    };
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..at]);
    out.push('"');
    let mut dropped = 0;
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                out.push('"');
                out.extend(std::iter::repeat_n(' ', dropped));
                out.push_str(&body[i + 1..]);
                return Ok(out);
            }
            '\\' => match chars.next() {
                Some((_, '\'')) => {
                    out.push('\'');
                    dropped += 1;
                }
                Some((_, e)) if GO_ESCAPES.contains(e) => {
                    out.push('\\');
                    out.push(e);
                }
                Some((_, e)) => return Err(unknown_escape(e)),
                None => break,
            },
            c => out.push(c),
        }
    }
    Err("a double-quoted string without its closing quote".into())
}

/// The core type a tag names (`!!int`: "int"), or None for a local or
/// other tag (`!foo`, `!`, `!<tag:example.com,2000:x>`).
fn core_name(tag: &Tag) -> Option<String> {
    tag.suffix_in_namespace(CORE).map(|s| s.into_owned())
}

/// A tagged scalar the readers read differently.
fn tagged_scalar(tag: &Tag, value: &str) -> Option<String> {
    let shown_tag = tag.original();
    let v = shown(value);
    match core_name(tag).as_deref() {
        // Read alike by all (tests/yaml_readers.rs).
        Some("str" | "int" | "float" | "binary") => None,
        Some("bool") if BOOLS.contains(&value) => None,
        Some("bool") => Some(format!(
            "`{shown_tag} {value}`: only true and false (`True`, `FALSE`...) are booleans to \
             every reader (kustomize refuses {v} there, `kubectl apply -f` takes YAML 1.1's); \
             write true or false"
        )),
        Some("null") if NULLS.contains(&value) => None,
        Some("null") => Some(format!(
            "`{shown_tag} {value}`, no null to `kubectl apply -f` or kustomize (they refuse \
             it); write null, or remove the tag"
        )),
        _ => Some(format!(
            "the tag `{shown_tag}` on the value {v}: `kubectl apply -f`, kustomize and the \
             MCO drop a tag they do not know and read the string {v} (or read it otherwise), \
             and this reader might not; remove the tag, and quote the value if a string is \
             meant: {v}"
        )),
    }
}

/// A tagged key but `!!str`: go-yaml v2 makes its own key of what the tag
/// resolves (`!!int 0644` is "420"), kustomize takes the text ("0644") or
/// refuses it in a nested mapping.
fn tagged_key(tag: &Tag, value: &str) -> Option<String> {
    if core_name(tag).as_deref() == Some("str") {
        return None;
    }
    Some(format!(
        "the tag `{}` on the key {v}, a key `kubectl apply -f`, kustomize and the MCO read \
         differently (or refuse); remove the tag, and quote the key: {v}",
        tag.original(),
        v = shown(value)
    ))
}

/// A tag on a mapping or sequence other than its own core one.
fn collection_tag(tag: &Tag, own: &str, what: &str) -> Option<String> {
    if core_name(tag).as_deref() == Some(own) {
        return None;
    }
    Some(format!(
        "the tag `{}` on {what}, which `kubectl apply -f`, kustomize and the MCO drop or \
         refuse; remove it",
        tag.original()
    ))
}
