//! The first document of a YAML stream as kubelet reads it: go-yaml v2's
//! parser over the tokens of `scan.rs` (directives, document markers,
//! anchors, aliases, tags, block and flow collections), its decoder into
//! `interface{}` (YAML 1.1 scalar resolution, `<<` merge keys) and
//! sigs.k8s.io/yaml's conversion to JSON. A port of the rules, not of the
//! code: the names of go-yaml's functions are given where they apply.

use super::scan::{Scanner, Tok};
use super::{ConfigError, Value, fail, refusal};
use crate::node::nodefs::MAX_CONFIG_BYTES;
use crate::node::sorted::Runs;

type Res<T> = Result<T, ConfigError>;

/// A node of the document (go-yaml's decode.go `node`).
#[derive(Debug)]
enum Node {
    /// text, tag ("" when none), implicit (plain or `!`)
    Scalar(String, String, bool),
    Seq(Vec<usize>),
    Map(Vec<(usize, usize)>),
    /// the node an alias names
    Alias(usize),
}

struct Parser {
    sc: Scanner,
    depth: usize,
    nodes: Vec<Node>,
    /// By name, the latest wins (an anchor names its node from there on):
    /// fed one at a time in any order, so not a `SortedMap` (anchors named
    /// descending moved n²/2 entries, minutes at boot: review 19 F1).
    anchors: Runs<String, usize>,
    /// `%TAG` handles and their prefixes.
    tags: Runs<String, String>,
}

const MAX_NODES: usize = 200_000;
/// Nesting this reader follows (kubelet's configs nest a few levels; Go
/// allows 10000, a depth our stack should not have to hold).
pub(super) const MAX_DEPTH: usize = 100;

impl Parser {
    fn add(&mut self, n: Node) -> Res<usize> {
        if self.nodes.len() >= MAX_NODES {
            return Err(refusal("the YAML document has too many nodes"));
        }
        self.nodes.push(n);
        Ok(self.nodes.len() - 1)
    }
    /// The next token's kind (its text stays in the queue: next() takes it).
    fn peek(&mut self) -> Res<Tok> {
        let e = String::new;
        Ok(match self.sc.peek()? {
            Tok::Scalar(_, plain) => Tok::Scalar(e(), *plain),
            Tok::Alias(_) => Tok::Alias(e()),
            Tok::Anchor(_) => Tok::Anchor(e()),
            Tok::Tag(..) => Tok::Tag(e(), e()),
            Tok::TagDirective(..) => Tok::TagDirective(e(), e()),
            t => t.clone(),
        })
    }
    fn empty(&mut self) -> Res<usize> {
        self.add(Node::Scalar(String::new(), String::new(), true))
    }

    /// The first document's root node (None: the stream has none).
    fn document(&mut self) -> Res<Option<usize>> {
        let mut t = self.peek()?;
        let explicit = matches!(
            t,
            Tok::Version(..) | Tok::TagDirective(..) | Tok::DocStart | Tok::StreamEnd
        );
        let mut version = false;
        let directives = matches!(t, Tok::Version(..) | Tok::TagDirective(..));
        while let Tok::Version(..) | Tok::TagDirective(..) = t {
            match self.sc.next()? {
                Tok::Version(major, minor) => {
                    if version {
                        return Err(refusal("YAML: found duplicate %YAML directive"));
                    }
                    if (major, minor) != (1, 1) {
                        return Err(refusal("YAML: found incompatible YAML document"));
                    }
                    version = true;
                }
                Tok::TagDirective(handle, prefix) => {
                    if self.tags.get(handle.as_str()).is_some() {
                        return Err(refusal("YAML: found duplicate %TAG directive"));
                    }
                    self.tags.insert(handle, prefix);
                }
                _ => {}
            }
            t = self.peek()?;
        }
        for (h, p) in [("!", "!"), ("!!", "tag:yaml.org,2002:")] {
            if self.tags.get(h).is_none() {
                self.tags.insert(h.into(), p.into());
            }
        }
        if explicit {
            if t == Tok::StreamEnd && !directives {
                return Ok(None);
            }
            if t != Tok::DocStart {
                return Err(refusal("YAML: did not find expected <document start>"));
            }
            self.sc.next()?;
            let t = self.peek()?;
            if matches!(
                t,
                Tok::Version(..)
                    | Tok::TagDirective(..)
                    | Tok::DocStart
                    | Tok::DocEnd
                    | Tok::StreamEnd
            ) {
                return Ok(Some(self.empty()?));
            }
        }
        let root = self.node(true, false)?;
        // parse_document_end peeks one token more (and takes a `...`)
        self.peek()?;
        Ok(Some(root))
    }

    fn node(&mut self, block: bool, indentless: bool) -> Res<usize> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(refusal("YAML: nested deeper than this reader follows"));
        }
        let n = self.node_inner(block, indentless);
        self.depth -= 1;
        n
    }

    fn node_inner(&mut self, block: bool, indentless: bool) -> Res<usize> {
        let mut t = self.sc.next()?;
        if let Tok::Alias(name) = t {
            let Some(&target) = self.anchors.get(name.as_str()) else {
                return fail(format!("YAML: unknown anchor '{name}' referenced"));
            };
            return self.add(Node::Alias(target));
        }
        let mut anchor = None;
        let mut tag = None;
        for _ in 0..2 {
            match t {
                Tok::Anchor(a) if anchor.is_none() => anchor = Some(a),
                Tok::Tag(h, s) if tag.is_none() => tag = Some((h, s)),
                other => {
                    t = other;
                    break;
                }
            }
            t = self.sc.next()?;
        }
        let tag = match tag {
            None => String::new(),
            Some((h, s)) if h.is_empty() => s,
            Some((h, s)) => match self.tags.get(h.as_str()) {
                Some(prefix) => format!("{prefix}{s}"),
                None => return Err(refusal("YAML: found undefined tag handle")),
            },
        };
        // The node's index is known before its children: an anchor names
        // it from here on (an alias inside it is a cycle, refused later).
        let at = self.nodes.len();
        if let Some(a) = anchor.clone() {
            self.anchors.insert(a, at);
        }
        let node = match t {
            Tok::BlockEntry if indentless => {
                self.add(Node::Seq(Vec::new()))?;
                let mut items = Vec::new();
                self.push_back(Tok::BlockEntry);
                while self.peek()? == Tok::BlockEntry {
                    self.sc.next()?;
                    let n = self.peek()?;
                    items.push(
                        if matches!(n, Tok::BlockEntry | Tok::Key | Tok::Val | Tok::BlockEnd) {
                            self.empty()?
                        } else {
                            self.node(true, false)?
                        },
                    );
                }
                self.nodes[at] = Node::Seq(items);
                return Ok(at);
            }
            Tok::Scalar(text, plain) => {
                let implicit = (tag.is_empty() && plain) || tag == "!";
                return self.add(Node::Scalar(text, tag, implicit));
            }
            Tok::FlowSeqStart => {
                self.add(Node::Seq(Vec::new()))?;
                let mut items = Vec::new();
                let mut first = true;
                loop {
                    let mut n = self.peek()?;
                    if n != Tok::FlowSeqEnd {
                        if !first {
                            if n != Tok::FlowEntry {
                                return Err(refusal("YAML: did not find expected ',' or ']'"));
                            }
                            self.sc.next()?;
                            n = self.peek()?;
                        }
                        first = false;
                        if n == Tok::Key {
                            // [a: b]: a single-pair mapping
                            self.sc.next()?;
                            let k = if matches!(
                                self.peek()?,
                                Tok::Val | Tok::FlowEntry | Tok::FlowSeqEnd
                            ) {
                                // go-yaml (as libyaml) takes that token here
                                self.sc.next()?;
                                self.empty()?
                            } else {
                                self.node(false, false)?
                            };
                            let v = self.flow_pair_value(Tok::FlowSeqEnd)?;
                            items.push(self.add(Node::Map(vec![(k, v)]))?);
                            continue;
                        } else if n != Tok::FlowSeqEnd {
                            items.push(self.node(false, false)?);
                            continue;
                        }
                    }
                    self.sc.next()?;
                    break;
                }
                self.nodes[at] = Node::Seq(items);
                at
            }
            Tok::FlowMapStart => {
                self.add(Node::Map(Vec::new()))?;
                let mut pairs = Vec::new();
                let mut first = true;
                loop {
                    let mut n = self.peek()?;
                    if n != Tok::FlowMapEnd {
                        if !first {
                            if n != Tok::FlowEntry {
                                return Err(refusal("YAML: did not find expected ',' or '}'"));
                            }
                            self.sc.next()?;
                            n = self.peek()?;
                        }
                        first = false;
                        if n == Tok::Key {
                            self.sc.next()?;
                            let k = if matches!(
                                self.peek()?,
                                Tok::Val | Tok::FlowEntry | Tok::FlowMapEnd
                            ) {
                                self.empty()?
                            } else {
                                self.node(false, false)?
                            };
                            let v = self.flow_pair_value(Tok::FlowMapEnd)?;
                            pairs.push((k, v));
                            continue;
                        } else if n != Tok::FlowMapEnd {
                            let k = self.node(false, false)?;
                            let v = self.empty()?;
                            pairs.push((k, v));
                            continue;
                        }
                    }
                    self.sc.next()?;
                    break;
                }
                self.nodes[at] = Node::Map(pairs);
                at
            }
            Tok::BlockSeqStart if block => {
                self.add(Node::Seq(Vec::new()))?;
                let mut items = Vec::new();
                loop {
                    match self.sc.next()? {
                        Tok::BlockEntry => {
                            let n = self.peek()?;
                            items.push(if matches!(n, Tok::BlockEntry | Tok::BlockEnd) {
                                self.empty()?
                            } else {
                                self.node(true, false)?
                            });
                        }
                        Tok::BlockEnd => break,
                        _ => return Err(refusal("YAML: did not find expected '-' indicator")),
                    }
                }
                self.nodes[at] = Node::Seq(items);
                at
            }
            Tok::BlockMapStart if block => {
                self.add(Node::Map(Vec::new()))?;
                let mut pairs = Vec::new();
                loop {
                    let k = match self.peek()? {
                        Tok::Key => {
                            self.sc.next()?;
                            if matches!(self.peek()?, Tok::Key | Tok::Val | Tok::BlockEnd) {
                                self.empty()?
                            } else {
                                self.node(true, true)?
                            }
                        }
                        Tok::BlockEnd => {
                            self.sc.next()?;
                            break;
                        }
                        _ => return Err(refusal("YAML: did not find expected key")),
                    };
                    let v = if self.peek()? == Tok::Val {
                        self.sc.next()?;
                        if matches!(self.peek()?, Tok::Key | Tok::Val | Tok::BlockEnd) {
                            self.empty()?
                        } else {
                            self.node(true, true)?
                        }
                    } else {
                        self.empty()?
                    };
                    pairs.push((k, v));
                }
                self.nodes[at] = Node::Map(pairs);
                at
            }
            other => {
                if anchor.is_some() || !tag.is_empty() {
                    self.push_back(other);
                    let implicit = tag.is_empty();
                    return self.add(Node::Scalar(String::new(), tag, implicit));
                }
                return Err(refusal("YAML: did not find expected node content"));
            }
        };
        Ok(node)
    }

    /// The value after a key inside `[...]` or `{...}`.
    fn flow_pair_value(&mut self, end: Tok) -> Res<usize> {
        if self.peek()? == Tok::Val {
            self.sc.next()?;
            let n = self.peek()?;
            if n != Tok::FlowEntry && n != end {
                return self.node(false, false);
            }
        }
        self.empty()
    }

    /// Put a token taken with next() back at the head of the queue.
    fn push_back(&mut self, t: Tok) {
        self.sc.parsed = self.sc.parsed.saturating_sub(1);
        self.sc.tokens.push_front(t);
    }
}

/// A mapping key as go-yaml decodes it into `interface{}`.
#[derive(Debug, Clone, PartialEq)]
enum Key {
    Str(String),
    Int(i128),
    Bool(bool),
}

/// A scalar as go-yaml v2 resolves it (resolve.go) and decodes it into
/// `interface{}`; Null for null.
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Null,
    Str(String),
    Int(i128),
    /// finite?
    Float(bool),
    Bool(bool),
}

const STR: &str = "tag:yaml.org,2002:str";
const TAG_PREFIX: &str = "tag:yaml.org,2002:";

/// Go's strconv.ParseInt/ParseUint with base 0 (sign, 0x/0o/0b/0 prefixes),
/// within int64 or uint64.
fn go_int(s: &str) -> Option<i128> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.get(..2).map(str::to_ascii_lowercase);
    let (radix, digits) = match lower.as_deref() {
        Some("0x") => (16, &body[2..]),
        Some("0o") => (8, &body[2..]),
        Some("0b") => (2, &body[2..]),
        _ if body.len() > 1 && body.starts_with('0') => (8, &body[1..]),
        _ => (10, body),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let mut v: i128 = 0;
    for c in digits.chars() {
        v = v * radix as i128 + c.to_digit(radix)? as i128;
        if v > u64::MAX as i128 {
            return None;
        }
    }
    let v = if neg { -v } else { v };
    let signed = (i64::MIN as i128..=i64::MAX as i128).contains(&v);
    // ParseUint takes no sign
    (signed || (v >= 0 && !s.starts_with('+'))).then_some(v)
}

/// 2^1024 - 2^970: the least decimal Go's ParseFloat rounds to infinity
/// (and refuses); its 309 digits.
const FLOAT_LIMIT: &str = "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792";

/// The YAML float `[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?`
/// (`dot`: Go's ParseFloat's `\\.[0-9]+([eE][-+]?[0-9]+)?`, the only form of
/// it a '.' starts): Some(finite?) when `s` has that form.
fn float(s: &str, dot: bool) -> Option<bool> {
    let body = s.strip_prefix(['-', '+']).filter(|_| !dot).unwrap_or(s);
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let ok = if int.is_empty() {
        digits(frac)
    } else {
        !dot && digits(int) && (frac.is_empty() || digits(frac))
    };
    let exp = match exp {
        None => 0i64,
        Some(e) => {
            let (neg, d) = match e.strip_prefix('-') {
                Some(d) => (true, d),
                None => (false, e.strip_prefix('+').unwrap_or(e)),
            };
            if !digits(d) {
                return None;
            }
            let v = d.bytes().fold(0i64, |v, b| {
                v.saturating_mul(10).saturating_add(i64::from(b - b'0'))
            });
            if neg { -v } else { v }
        }
    };
    if !ok {
        return None;
    }
    // 0.SIG x 10^point; past FLOAT_LIMIT it overflows
    let all: String = [int, frac].concat();
    let lead = all.bytes().take_while(|b| *b == b'0').count();
    let sig = all[lead..].trim_end_matches('0');
    if sig.is_empty() {
        return Some(true);
    }
    let point = (int.len() as i64 - lead as i64).saturating_add(exp);
    Some(match point.cmp(&(FLOAT_LIMIT.len() as i64)) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => sig < FLOAT_LIMIT.trim_end_matches('0'),
    })
}

/// Is `s` a timestamp go-yaml's parseTimestamp accepts? Only `!!timestamp`
/// needs this: untagged, a timestamp decodes to its text anyway.
fn timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let date_end = b
        .iter()
        .position(|c| *c == b'T' || *c == b't' || *c == b' ')
        .unwrap_or(b.len());
    let date: Vec<&str> = s[..date_end].split('-').collect();
    let num = |t: &str, min: usize, max: usize| {
        (min..=max).contains(&t.len()) && t.bytes().all(|c| c.is_ascii_digit())
    };
    let date_ok = date.len() == 3 && num(date[0], 4, 4) && num(date[1], 1, 2) && num(date[2], 1, 2);
    // Any time part: refuse rather than judge (only !!timestamp asks).
    date_ok && date_end == b.len()
}

/// resolve() and decoder.scalar() of go-yaml v2 into `interface{}`.
fn resolve(text: &str, tag: &str, implicit: bool) -> Res<Scalar> {
    if tag.is_empty() && !implicit {
        return Ok(Scalar::Str(text.to_string()));
    }
    let short = tag.strip_prefix(TAG_PREFIX);
    let resolvable = tag.is_empty()
        || matches!(
            short,
            Some("str" | "bool" | "int" | "float" | "null" | "timestamp")
        );
    if !resolvable {
        if short == Some("binary") {
            return Err(refusal(
                "YAML: a !!binary value, which this reader does not follow",
            ));
        }
        return Ok(Scalar::Str(text.to_string()));
    }
    let hint = match text.as_bytes().first() {
        None => b'N',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(c) if b"yYnNtTfFoO~".contains(c) => b'M',
        Some(b'.') => b'.',
        Some(_) => 0,
    };
    let word = |l: &[&str]| l.contains(&text);
    let out = if tag == STR || hint == 0 {
        Scalar::Str(text.to_string())
    } else if word(&[
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
    ]) {
        Scalar::Bool(true)
    } else if word(&[
        "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
    ]) {
        Scalar::Bool(false)
    } else if word(&["", "~", "null", "Null", "NULL"]) {
        Scalar::Null
    } else if word(&[
        ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF",
    ]) {
        Scalar::Float(false)
    } else if hint == b'.' {
        match float(text, true) {
            Some(true) => Scalar::Float(true),
            _ => Scalar::Str(text.to_string()),
        }
    } else if hint == b'S' || hint == b'D' {
        // a timestamp decodes to its text; !!timestamp needs one
        if short == Some("timestamp") && timestamp(text) {
            return Ok(Scalar::Str(text.to_string()));
        }
        let plain: String = text.chars().filter(|c| *c != '_').collect();
        if let Some(i) = go_int(&plain) {
            Scalar::Int(i)
        } else if let Some(true) = float(&plain, false) {
            Scalar::Float(true)
        } else {
            Scalar::Str(text.to_string())
        }
    } else {
        Scalar::Str(text.to_string())
    };
    // the tag asked for a type: the value must have it (ints may be floats)
    let ok = match (short, &out) {
        (None | Some("str"), _) => true,
        (Some("bool"), Scalar::Bool(_)) => true,
        (Some("int"), Scalar::Int(_)) => true,
        (Some("float"), Scalar::Float(_)) => true,
        (Some("float"), Scalar::Int(_)) => return Ok(Scalar::Float(true)),
        (Some("null"), Scalar::Null) => true,
        (Some("timestamp"), Scalar::Str(_)) => timestamp(text),
        _ => false,
    };
    if !ok {
        return fail(format!("YAML: cannot decode {text:?} as {tag}"));
    }
    Ok(out)
}

struct Dec<'a> {
    nodes: &'a [Node],
    depth: usize,
    active: Vec<usize>,
    count: usize,
    alias_depth: usize,
    alias_count: usize,
    /// A key repeated in a mapping (yaml.UnmarshalStrict refuses it).
    dup: bool,
    /// Bytes produced so far, charged against [`MAX_OUTPUT`].
    produced: usize,
}

/// The most the decoder produces from one file: its strings' bytes (keys
/// and values, an alias's target at each use, merged and repeated pairs
/// included) and [`NODE_COST`] a node. A file reads to at most 1.5 times
/// its size in strings (YAML escapes), so a config within
/// [`MAX_CONFIG_BYTES`] (1 MiB) reads to under 5 MiB; an alias or merge key
/// reusing one long value thousands of times made gigabytes at every start
/// (review 17 F1). Past this the config is unreadable.
const MAX_OUTPUT: usize = 8 * MAX_CONFIG_BYTES;
const _: () = assert!(MAX_OUTPUT == 8 << 20, "messages say 8 MiB");
/// A node's share of [`MAX_OUTPUT`] besides its string: a value's place.
const NODE_COST: usize = 16;

impl Dec<'_> {
    /// Charge `bytes` about to be produced to [`MAX_OUTPUT`].
    fn charge(&mut self, bytes: usize) -> Res<()> {
        self.produced = self.produced.saturating_add(bytes);
        if self.produced > MAX_OUTPUT {
            return Err(refusal(
                "YAML: the document expands past 8 MiB as read (aliases or merge keys \
                 reuse a long value many times), which this reader does not follow; \
                 write the value out once",
            ));
        }
        Ok(())
    }

    fn tick(&mut self) -> Res<()> {
        self.count += 1;
        if self.alias_depth > 0 {
            self.alias_count += 1;
        }
        // go-yaml's "excessive aliasing" guard, and our own bound
        let ratio = match self.count {
            ..=400_000 => 0.99,
            4_000_000.. => 0.10,
            n => 0.99 - 0.89 * ((n - 400_000) as f64 / 3_600_000.0),
        };
        if (self.alias_count > 100
            && self.count > 1000
            && self.alias_count as f64 / self.count as f64 > ratio)
            || self.count > MAX_NODES
        {
            return Err(refusal("YAML: document contains excessive aliasing"));
        }
        Ok(())
    }

    fn scalar(&mut self, n: usize) -> Res<Scalar> {
        self.tick()?;
        let nodes = self.nodes;
        match &nodes[n] {
            Node::Scalar(text, tag, implicit) => {
                // before the copy: its text is as long as any string it gives
                self.charge(NODE_COST + text.len())?;
                resolve(text, tag, *implicit)
            }
            Node::Alias(t) => {
                let t = *t;
                self.enter(n)?;
                let v = self.scalar(t);
                self.leave();
                v
            }
            _ => Err(refusal("YAML: invalid map key (a mapping or a sequence)")),
        }
    }

    fn enter(&mut self, alias: usize) -> Res<()> {
        if self.active.contains(&alias) {
            return Err(refusal("YAML: anchor value contains itself"));
        }
        self.active.push(alias);
        self.alias_depth += 1;
        Ok(())
    }
    fn leave(&mut self) {
        self.active.pop();
        self.alias_depth -= 1;
    }

    fn value(&mut self, n: usize) -> Res<Value> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(refusal("YAML: nested deeper than this reader follows"));
        }
        let v = self.value_inner(n);
        self.depth -= 1;
        v
    }

    fn value_inner(&mut self, n: usize) -> Res<Value> {
        match &self.nodes[n] {
            Node::Scalar(..) => {
                return match self.scalar(n)? {
                    Scalar::Null => Ok(Value::Null),
                    Scalar::Str(s) => Ok(Value::Str(s)),
                    // json.Marshal refuses NaN and infinities
                    Scalar::Float(false) => {
                        Err(refusal("YAML: a value JSON cannot hold (NaN or infinity)"))
                    }
                    _ => Ok(Value::Other),
                };
            }
            Node::Alias(t) => {
                let t = *t;
                self.tick()?;
                self.enter(n)?;
                let v = self.value(t);
                self.leave();
                return v;
            }
            _ => {}
        }
        self.tick()?;
        self.charge(NODE_COST)?;
        match &self.nodes[n] {
            Node::Seq(items) => {
                let items = items.clone();
                let mut out = Vec::with_capacity(items.len());
                for i in items {
                    out.push(self.value(i)?);
                }
                Ok(Value::Seq(out))
            }
            _ => {
                // Every set in order (a later one of a key wins, in the
                // place of its first), keyed by its text with the kind of
                // key it was: one sort, not a scan of the map per key
                // (100,000 keys took minutes, past systemd's start timeout).
                let mut map: Vec<(Key, Value)> = Vec::new();
                self.mapping(n, &mut map)?;
                let mut sets: Vec<(String, u8, Option<Value>)> = Vec::with_capacity(map.len());
                for (k, v) in map {
                    let k = match k {
                        Key::Str(s) => (s, 0),
                        Key::Int(i) if i <= i64::MAX as i128 => (i.to_string(), 1),
                        Key::Bool(b) => (b.to_string(), 2),
                        _ => {
                            return Err(refusal(
                                "YAML: a mapping key this reader does not convert",
                            ));
                        }
                    };
                    sets.push((k.0, k.1, Some(v)));
                }
                // By key text, then place: each key's sets in order.
                let mut order: Vec<(&str, usize)> = sets
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (s.0.as_str(), i))
                    .collect();
                order.sort_unstable();
                let mut runs = Vec::new();
                let mut at = 0;
                while let Some(&(key, head)) = order.get(at) {
                    let mut end = at + 1;
                    while let Some(&(_, i)) = order.get(end).filter(|(k, _)| *k == key) {
                        // "1" and 1 both: Go picks one at random
                        if sets[i].1 != sets[head].1 {
                            return fail(format!("YAML: two keys read as {key:?}"));
                        }
                        end += 1;
                    }
                    runs.push((head, order[end - 1].1));
                    at = end;
                }
                let mut first = vec![false; sets.len()];
                for (head, last) in runs {
                    if head != last {
                        self.dup = true;
                        sets[head].2 = sets[last].2.take();
                    }
                    first[head] = true;
                }
                let out = sets
                    .into_iter()
                    .zip(first)
                    .filter_map(|((k, _, v), first)| Some((k, v.filter(|_| first)?)))
                    .collect();
                Ok(Value::Map(out))
            }
        }
    }

    fn is_merge(&self, k: usize) -> bool {
        matches!(&self.nodes[k], Node::Scalar(t, tag, implicit)
            if t == "<<" && (*implicit || tag == "tag:yaml.org,2002:merge"))
    }

    /// decoder.mapping into a map[interface{}]interface{}.
    fn mapping(&mut self, n: usize, out: &mut Vec<(Key, Value)>) -> Res<()> {
        let Node::Map(pairs) = &self.nodes[n] else {
            return Err(refusal(
                "YAML: map merge requires map or sequence of maps as the value",
            ));
        };
        for (k, v) in pairs.clone() {
            if self.is_merge(k) {
                self.merge(v, out)?;
                continue;
            }
            let key = match self.scalar(k)? {
                Scalar::Null => return Err(refusal("YAML: a null mapping key")),
                Scalar::Str(s) => Key::Str(s),
                Scalar::Int(i) => Key::Int(i),
                // sigs.k8s.io/yaml formats it; this reader does not
                Scalar::Float(_) => {
                    return Err(refusal(
                        "YAML: a float mapping key, which this reader does not follow",
                    ));
                }
                Scalar::Bool(b) => Key::Bool(b),
            };
            // Repeats are resolved once the mapping is whole (`value`).
            let val = self.value(v)?;
            out.push((key, val));
        }
        Ok(())
    }

    /// decoder.merge: a mapping, an alias of one, or a sequence of them
    /// (earlier ones win: applied last to first).
    fn merge(&mut self, n: usize, out: &mut Vec<(Key, Value)>) -> Res<()> {
        let target = |d: &Self, i: usize| match &d.nodes[i] {
            Node::Alias(t) => *t,
            _ => i,
        };
        match &self.nodes[n] {
            Node::Seq(items) => {
                for i in items.clone().into_iter().rev() {
                    if !matches!(self.nodes[target(self, i)], Node::Map(_)) {
                        return fail(
                            "YAML: map merge requires map or sequence of maps as the value",
                        );
                    }
                    self.merge_one(i, out)?;
                }
                Ok(())
            }
            _ => self.merge_one(n, out),
        }
    }
    fn merge_one(&mut self, n: usize, out: &mut Vec<(Key, Value)>) -> Res<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(refusal(
                "YAML: merges nested deeper than this reader follows",
            ));
        }
        let r = self.merge_inner(n, out);
        self.depth -= 1;
        r
    }
    fn merge_inner(&mut self, n: usize, out: &mut Vec<(Key, Value)>) -> Res<()> {
        self.tick()?;
        match &self.nodes[n] {
            Node::Alias(t) => {
                let t = *t;
                self.enter(n)?;
                self.tick()?;
                let r = self.mapping(t, out);
                self.leave();
                r
            }
            _ => self.mapping(n, out),
        }
    }
}

/// The first document of `text` as sigs.k8s.io/yaml's YAMLToJSON gives it
/// (Null for an empty stream), and whether a mapping repeats a key.
pub(super) fn parse(text: &str) -> Res<(Value, bool)> {
    // the reader takes a byte order mark at the start
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Sized at once: collected, a Vec<char> doubles from a quarter of the
    // bytes, up to 8 bytes of memory a byte read (review 12).
    let mut c = Vec::with_capacity(text.chars().count());
    c.extend(text.chars());
    // go-yaml's reader: printable characters only
    if let Some(bad) = c.iter().find(|&&ch| {
        !matches!(ch, '\t' | '\n' | '\r' | '\u{20}'..='\u{7e}' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
    }) {
        return fail(format!("YAML: control character {bad:?} is not allowed"));
    }
    let mut p = Parser {
        sc: Scanner::new(c),
        depth: 0,
        nodes: Vec::new(),
        anchors: Runs::new(),
        tags: Runs::new(),
    };
    let Some(root) = p.document()? else {
        return Ok((Value::Null, false));
    };
    let mut d = Dec {
        nodes: &p.nodes,
        depth: 0,
        active: Vec::new(),
        count: 0,
        alias_depth: 0,
        alias_count: 0,
        dup: false,
        produced: 0,
    };
    let v = d.value(root)?;
    Ok((v, d.dup))
}
