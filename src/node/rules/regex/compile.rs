//! The compiler: pattern text to the program the matcher runs (at render:
//! case folding, Perl/POSIX and Unicode classes become plain ranges here,
//! so the wrapper carries none of this).

use super::*;

impl Regex {
    /// Compile `pattern`; an error gives the byte offset of the problem.
    pub fn new(pattern: &str) -> Result<Regex, RegexError> {
        if pattern.len() > MAX_PATTERN_LEN {
            return Err(err(
                0,
                format!("pattern longer than {MAX_PATTERN_LEN} bytes"),
            ));
        }
        let mut p = Parser {
            src: pattern,
            pos: 0,
        };
        let mut flags = Flags {
            fold: false,
            multi_line: false,
            dot_nl: false,
        };
        let node = p.parse_alt(&mut flags, 0)?;
        if p.pos < pattern.len() {
            // Only an unmatched ')' stops the top level early.
            return Err(err(p.pos, "unexpected )".into()));
        }
        let mut c = Compiler {
            prog: Vec::new(),
            classes: Vec::new(),
            ranges: 0,
        };
        c.emit_node(&node).map_err(|()| {
            err(
                0,
                format!(
                    "pattern too large (compiled program over {MAX_PROGRAM} steps \
                     or {MAX_CLASS_RANGES} class ranges)"
                ),
            )
        })?;
        c.push(Inst::Match)
            .map_err(|()| err(0, "pattern too large".into()))?;
        Ok(Regex {
            prog: c.prog,
            classes: c.classes,
            scratch: Default::default(),
        })
    }
}

// ---- case folding (Go folds along Unicode simple-fold orbits) ----

/// Go's unicode.SimpleFold orbits (`tools/unicode-tables`), render only:
/// the wrapper compiles no pattern (it gets the ranges compiled in).
#[cfg(feature = "cli")]
const FOLD_ORBITS: &str = crate::node::rules::unicode_tables::FOLD_ORBITS;
#[cfg(not(feature = "cli"))]
const FOLD_ORBITS: &str = "";

/// The fold orbits: their runes, and each rune with its orbit's index,
/// sorted by rune. Built once, at render.
pub(super) struct FoldTables {
    pub(super) orbits: Vec<Vec<char>>,
    pub(super) by_rune: Vec<(char, u32)>,
}

pub(super) fn fold_tables() -> &'static FoldTables {
    static TABLES: std::sync::OnceLock<FoldTables> = std::sync::OnceLock::new();
    TABLES.get_or_init(|| {
        let orbits: Vec<Vec<char>> = FOLD_ORBITS
            .split(';')
            .map(|o| {
                o.split(' ')
                    .filter_map(|r| char::from_u32(u32::from_str_radix(r, 16).ok()?))
                    .collect::<Vec<char>>()
            })
            .filter(|o| o.len() > 1)
            .collect();
        let mut by_rune: Vec<(char, u32)> = orbits
            .iter()
            .enumerate()
            .flat_map(|(i, o)| o.iter().map(move |&c| (c, i as u32)))
            .collect();
        by_rune.sort_unstable();
        FoldTables { orbits, by_rune }
    })
}

/// The runes `(?i)` makes one with `c` (Go's SimpleFold orbit), `c`
/// among them; empty when it has no other case.
pub(super) fn orbit(c: char) -> &'static [char] {
    let t = fold_tables();
    match t.by_rune.binary_search_by(|&(r, _)| r.cmp(&c)) {
        Ok(at) => &t.orbits[t.by_rune[at].1 as usize],
        Err(_) => &[],
    }
}

/// `c` under `(?i)`: one character, or a class of its fold orbit.
fn literal(c: char, fold: bool) -> Node {
    let orbit = if fold { orbit(c) } else { &[] };
    if orbit.is_empty() {
        return Node::Char(c);
    }
    let mut ranges: Vec<(char, char)> = orbit.iter().map(|&c| (c, c)).collect();
    ranges.sort_unstable();
    Node::Class(Class {
        ranges,
        negated: false,
    })
}

impl ClassSpec {
    /// Merge the items into ranges, folding as Go does (appendFoldedClass):
    /// a folded item holds the whole fold orbit of each character in it.
    fn compile(&self) -> Class {
        let mut all: Vec<(u32, u32)> = Vec::new();
        for (ranges, neg) in &self.items {
            let has = |x: char| ranges.iter().any(|&(lo, hi)| lo <= x && x <= hi);
            let mut set: Vec<(u32, u32)> = ranges
                .iter()
                .map(|&(lo, hi)| (lo as u32, hi as u32))
                .collect();
            if self.fold {
                for orbit in &fold_tables().orbits {
                    if orbit.iter().any(|&x| has(x)) {
                        set.extend(orbit.iter().map(|&c| (c as u32, c as u32)));
                    }
                }
            }
            let set = merge(set);
            if *neg {
                let mut next = 0;
                for (lo, hi) in set {
                    if lo > next {
                        all.push((next, lo - 1));
                    }
                    next = hi + 1;
                }
                if next <= 0x10FFFF {
                    all.push((next, 0x10FFFF));
                }
            } else {
                all.extend(set);
            }
        }
        // Ranges as chars: ends inside the surrogate gap move out of it.
        let ranges = merge(all)
            .into_iter()
            .filter_map(|(lo, hi)| {
                let lo = if (0xD800..0xE000).contains(&lo) {
                    0xE000
                } else {
                    lo
                };
                let hi = if (0xD800..0xE000).contains(&hi) {
                    0xD7FF
                } else {
                    hi
                };
                Some((char::from_u32(lo)?, char::from_u32(hi)?)).filter(|(l, h)| l <= h)
            })
            .collect();
        Class {
            ranges,
            negated: self.negated,
        }
    }
}

/// Sorted, overlapping and adjacent ranges joined.
fn merge(mut v: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    v.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(v.len());
    for (lo, hi) in v {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

// ---- Unicode classes (render only: the node gets the ranges compiled in) ----

type Ranges = Vec<(char, char)>;

/// Go's canonicalName: first letter upper, the rest lower, no `_ - ` .
#[cfg(feature = "cli")]
fn canonical_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut first = true;
    for c in name.chars() {
        match c {
            '_' | '-' | ' ' => {}
            c if first => {
                out.push(c.to_ascii_uppercase());
                first = false;
            }
            c => out.push(c.to_ascii_lowercase()),
        }
    }
    out
}

/// The ranges of a class Go's regexp knows by `name`, and whether the
/// class is their complement (`Assigned`).
#[cfg(feature = "cli")]
fn unicode_table(name: &str) -> Option<(Ranges, bool)> {
    use crate::node::rules::unicode_tables::{NAMES, TABLES};
    let name = canonical_name(name);
    let at = NAMES
        .binary_search_by(|(n, _, _)| n.cmp(&name.as_str()))
        .ok()?;
    let (_, table, complement) = NAMES[at];
    let mut out = Vec::new();
    for range in TABLES[usize::from(table)]
        .split(' ')
        .filter(|r| !r.is_empty())
    {
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        let lo = u32::from_str_radix(lo, 16).ok()?;
        let hi = u32::from_str_radix(hi, 16).ok()?;
        // Surrogates are no chars: keep what is on either side of them.
        for (lo, hi) in [(lo, hi.min(0xD7FF)), (lo.max(0xE000), hi)] {
            if lo <= hi
                && let (Some(l), Some(h)) = (char::from_u32(lo), char::from_u32(hi))
            {
                out.push((l, h));
            }
        }
    }
    Some((out, complement))
}

/// Without the CLI (the wrapper) nothing is parsed: no tables.
#[cfg(not(feature = "cli"))]
fn unicode_table(_: &str) -> Option<(Ranges, bool)> {
    None
}

// ---- parser ----

struct Parser<'a> {
    src: &'a str,
    pos: usize,
}

const PERL_D: &[(char, char)] = &[('0', '9')];
const PERL_S: &[(char, char)] = &[('\t', '\n'), ('\x0c', '\r'), (' ', ' ')];
const PERL_W: &[(char, char)] = &[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];

fn posix_class(name: &str) -> Option<&'static [(char, char)]> {
    Some(match name {
        "alnum" => &[('0', '9'), ('A', 'Z'), ('a', 'z')],
        "alpha" => &[('A', 'Z'), ('a', 'z')],
        "ascii" => &[('\0', '\x7f')],
        "blank" => &[('\t', '\t'), (' ', ' ')],
        "cntrl" => &[('\0', '\x1f'), ('\x7f', '\x7f')],
        "digit" => &[('0', '9')],
        "graph" => &[('!', '~')],
        "lower" => &[('a', 'z')],
        "print" => &[(' ', '~')],
        "punct" => &[('!', '/'), (':', '@'), ('[', '`'), ('{', '~')],
        "space" => &[('\t', '\r'), (' ', ' ')],
        "upper" => &[('A', 'Z')],
        "word" => PERL_W,
        "xdigit" => &[('0', '9'), ('A', 'F'), ('a', 'f')],
        _ => return None,
    })
}

fn perl_class(c: char) -> Option<(&'static [(char, char)], bool)> {
    Some(match c {
        'd' => (PERL_D, false),
        'D' => (PERL_D, true),
        's' => (PERL_S, false),
        'S' => (PERL_S, true),
        'w' => (PERL_W, false),
        'W' => (PERL_W, true),
        _ => return None,
    })
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }
    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Alternation up to `)` or the end; `flags` may change mid-group (`(?i)`).
    fn parse_alt(&mut self, flags: &mut Flags, depth: usize) -> Result<Node, RegexError> {
        let mut branches = Vec::new();
        loop {
            branches.push(self.parse_concat(flags, depth)?);
            if self.peek() == Some('|') {
                self.pos += 1;
            } else {
                break;
            }
        }
        Ok(if branches.len() == 1 {
            branches.pop().unwrap()
        } else {
            Node::Alt(branches)
        })
    }

    fn parse_concat(&mut self, flags: &mut Flags, depth: usize) -> Result<Node, RegexError> {
        let mut items: Vec<Node> = Vec::new();
        // Whether the last item may take a repetition operator, and whether it
        // was itself made by one (Go refuses `a**`).
        let mut can_repeat = false;
        let mut last_repeat = false;
        while let Some(c) = self.peek() {
            let start = self.pos;
            match c {
                '|' | ')' => break,
                '*' | '+' | '?' | '{' => {
                    let (min, max, counted) = match c {
                        '*' => (0, None, false),
                        '+' => (1, None, false),
                        '?' => (0, Some(1), false),
                        _ => match self.parse_counts() {
                            Some(Ok((min, max))) => (min, max, true),
                            Some(Err(e)) => return Err(e),
                            None => {
                                // Not a valid `{n,m}`: a literal brace.
                                self.pos += 1;
                                items.push(Node::Char('{'));
                                can_repeat = true;
                                last_repeat = false;
                                continue;
                            }
                        },
                    };
                    if !counted {
                        self.pos += 1;
                    }
                    if self.peek() == Some('?') {
                        self.pos += 1;
                    }
                    if last_repeat {
                        return Err(err(start, "invalid nested repetition operator".into()));
                    }
                    if !can_repeat {
                        return Err(err(start, "missing argument to repetition operator".into()));
                    }
                    let node = Box::new(items.pop().unwrap());
                    let rep = Node::Repeat {
                        node,
                        min,
                        max,
                        counted,
                    };
                    if counted
                        && (min >= 2 || max.is_some_and(|m| m >= 2))
                        && !repeat_ok(&rep, MAX_REPEAT)
                    {
                        return Err(err(start, "invalid repeat count".into()));
                    }
                    items.push(rep);
                    last_repeat = true;
                    continue;
                }
                '(' => {
                    if depth >= MAX_NESTING {
                        return Err(err(
                            start,
                            format!("groups nested deeper than {MAX_NESTING}"),
                        ));
                    }
                    self.pos += 1;
                    let mut inner = *flags;
                    if self.peek() == Some('?') {
                        let r = self.rest();
                        if r.starts_with("?P<") || r.starts_with("?<") {
                            self.pos += if r.starts_with("?P<") { 3 } else { 2 };
                            let Some(end) = self.rest().find('>') else {
                                return Err(err(start, "invalid named capture".into()));
                            };
                            let name = &self.rest()[..end];
                            if name.is_empty()
                                || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                            {
                                return Err(err(start, "invalid named capture".into()));
                            }
                            self.pos += end + 1;
                        } else {
                            self.pos += 1;
                            let group = self.parse_flags(&mut inner, start)?;
                            if !group {
                                // `(?i)`: flags for the rest of this group.
                                *flags = inner;
                                continue;
                            }
                        }
                    }
                    let node = self.parse_alt(&mut inner, depth + 1)?;
                    if self.peek() != Some(')') {
                        return Err(err(start, "missing closing )".into()));
                    }
                    self.pos += 1;
                    items.push(node);
                }
                '[' => {
                    let cls = self.parse_class(*flags)?;
                    items.push(Node::Class(cls.compile()));
                }
                '.' => {
                    self.pos += 1;
                    items.push(Node::Any {
                        newline: flags.dot_nl,
                    });
                }
                '^' => {
                    self.pos += 1;
                    items.push(Node::Assert(if flags.multi_line {
                        Assert::BeginLine
                    } else {
                        Assert::BeginText
                    }));
                }
                '$' => {
                    self.pos += 1;
                    items.push(Node::Assert(if flags.multi_line {
                        Assert::EndLine
                    } else {
                        Assert::EndText
                    }));
                }
                '\\' => {
                    let next = self.rest()[1..].chars().next();
                    let node = match next {
                        Some('A') => Node::Assert(Assert::BeginText),
                        Some('z') => Node::Assert(Assert::EndText),
                        Some('b') => Node::Assert(Assert::WordBoundary),
                        Some('B') => Node::Assert(Assert::NotWordBoundary),
                        Some('p' | 'P') => {
                            let (ranges, neg, len) = self.unicode_class()?;
                            self.pos += len - 2; // `\p` itself below
                            Node::Class(
                                ClassSpec {
                                    items: vec![(ranges, neg)],
                                    negated: false,
                                    fold: flags.fold,
                                }
                                .compile(),
                            )
                        }
                        Some('Q') => {
                            self.pos += 2;
                            let lit = match self.rest().find("\\E") {
                                Some(i) => {
                                    let s = &self.rest()[..i];
                                    self.pos += i + 2;
                                    s
                                }
                                None => {
                                    let s = self.rest();
                                    self.pos = self.src.len();
                                    s
                                }
                            };
                            let lit: Vec<Node> =
                                lit.chars().map(|c| literal(c, flags.fold)).collect();
                            can_repeat = !lit.is_empty() || can_repeat;
                            last_repeat = last_repeat && lit.is_empty();
                            items.extend(lit);
                            continue;
                        }
                        Some(c) => match perl_class(c) {
                            Some((ranges, neg)) => Node::Class(
                                ClassSpec {
                                    items: vec![(ranges.to_vec(), neg)],
                                    negated: false,
                                    fold: flags.fold,
                                }
                                .compile(),
                            ),
                            None => {
                                let ch = self.parse_escape(start)?;
                                items.push(literal(ch, flags.fold));
                                can_repeat = true;
                                last_repeat = false;
                                continue;
                            }
                        },
                        None => {
                            return Err(err(
                                start,
                                "trailing backslash at end of expression".into(),
                            ));
                        }
                    };
                    self.pos += 2;
                    items.push(node);
                }
                _ => {
                    self.pos += c.len_utf8();
                    items.push(literal(c, flags.fold));
                }
            }
            can_repeat = true;
            last_repeat = false;
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap(),
            _ => Node::Concat(items),
        })
    }

    /// After `(?`: flags then `)` (returns false) or `:` (a group, true).
    fn parse_flags(&mut self, flags: &mut Flags, start: usize) -> Result<bool, RegexError> {
        let mut negate = false;
        let mut saw = false;
        while let Some(c) = self.bump() {
            match c {
                'i' => flags.fold = !negate,
                'm' => flags.multi_line = !negate,
                's' => flags.dot_nl = !negate,
                'U' => {}
                '-' if !negate => {
                    negate = true;
                    saw = false;
                    continue;
                }
                ':' | ')' => {
                    if negate && !saw {
                        break;
                    }
                    return Ok(c == ':');
                }
                _ => break,
            }
            saw = true;
        }
        Err(err(
            start,
            "invalid Perl group syntax (RE2 has no lookaround, comments or backreferences)".into(),
        ))
    }

    /// `{n}`, `{n,}`, `{n,m}` at the cursor; None if it is not one (then
    /// `{` is a literal, as in Go). Moves past it on success.
    fn parse_counts(&mut self) -> Option<Result<(u32, Option<u32>), RegexError>> {
        let start = self.pos;
        let s = &self.src[self.pos + 1..];
        let (min, s) = parse_int(s)?;
        let (max, s) = match s.strip_prefix(',') {
            None => (Some(min), s),
            Some(s) if s.starts_with('}') => (None, s),
            Some(s) => {
                let (m, s) = parse_int(s)?;
                (Some(m), s)
            }
        };
        let rest = s.strip_prefix('}')?;
        self.pos = self.src.len() - rest.len();
        let cap = u64::from(MAX_REPEAT);
        if min > cap || max.is_some_and(|m| m > cap || min > m) {
            return Some(Err(err(start, "invalid repeat count".into())));
        }
        Some(Ok((min as u32, max.map(|m| m as u32))))
    }

    fn parse_class(&mut self, flags: Flags) -> Result<ClassSpec, RegexError> {
        let start = self.pos;
        self.pos += 1;
        let negated = if self.peek() == Some('^') {
            self.pos += 1;
            true
        } else {
            false
        };
        let mut items: Vec<(Vec<(char, char)>, bool)> = Vec::new();
        let mut plain: Vec<(char, char)> = Vec::new();
        let mut first = true;
        loop {
            let Some(c) = self.peek() else {
                return Err(err(start, "missing closing ]".into()));
            };
            if c == ']' && !first {
                self.pos += 1;
                break;
            }
            first = false;
            let here = self.pos;
            if self.rest().starts_with("[:")
                && let Some(end) = self.rest()[2..].find(":]")
            {
                let name = &self.rest()[2..2 + end];
                let (neg, name) = match name.strip_prefix('^') {
                    Some(n) => (true, n),
                    None => (false, name),
                };
                let Some(ranges) = posix_class(name) else {
                    return Err(err(here, "invalid character class range".into()));
                };
                items.push((ranges.to_vec(), neg));
                self.pos += 2 + end + 2;
                continue;
            }
            if c == '\\' && matches!(self.rest()[1..].chars().next(), Some('p' | 'P')) {
                let (ranges, neg, len) = self.unicode_class()?;
                items.push((ranges, neg));
                self.pos += len;
                continue;
            }
            if c == '\\'
                && let Some((ranges, neg)) = self.rest()[1..].chars().next().and_then(perl_class)
            {
                items.push((ranges.to_vec(), neg));
                self.pos += 2;
                continue;
            }
            let lo = self.class_char(start)?;
            let mut hi = lo;
            if self.rest().starts_with('-')
                && !self.rest().starts_with("-]")
                && self.rest().len() > 1
            {
                self.pos += 1;
                hi = self.class_char(start)?;
                if hi < lo {
                    return Err(err(here, "invalid character class range".into()));
                }
            }
            plain.push((lo, hi));
        }
        if !plain.is_empty() {
            items.push((plain, false));
        }
        Ok(ClassSpec {
            items,
            negated,
            fold: flags.fold,
        })
    }

    fn class_char(&mut self, class_start: usize) -> Result<char, RegexError> {
        match self.peek() {
            None => Err(err(class_start, "missing closing ]".into())),
            Some('\\') => {
                let here = self.pos;
                self.parse_escape(here)
            }
            Some(c) => {
                self.pos += c.len_utf8();
                Ok(c)
            }
        }
    }

    /// `\pN`, `\p{Name}`, `\p{^Name}` or `\P…` at the cursor, as Go's
    /// parseUnicodeClass reads them: the class's ranges, whether they are
    /// negated, and the bytes it takes.
    fn unicode_class(&self) -> Result<(Ranges, bool, usize), RegexError> {
        let at = self.pos;
        let rest = self.rest();
        let mut negated = rest[1..].starts_with('P');
        let after = &rest[2..];
        let (name, len) = match after.chars().next() {
            Some('{') => match after.find('}') {
                Some(end) => (&after[1..end], 2 + end + 1),
                None => return Err(err(at, "invalid character class range".into())),
            },
            Some(c) => (&after[..c.len_utf8()], 2 + c.len_utf8()),
            None => ("", 2),
        };
        let name = match name.strip_prefix('^') {
            Some(n) => {
                negated = !negated;
                n
            }
            None => name,
        };
        let Some((ranges, complement)) = unicode_table(name) else {
            return Err(err(
                at,
                format!("invalid character class range: unknown Unicode class {name:?}"),
            ));
        };
        Ok((ranges, negated != complement, len))
    }

    /// A single-character escape at the cursor (`\n`, `\x41`, `\.`, octal).
    fn parse_escape(&mut self, at: usize) -> Result<char, RegexError> {
        self.pos += 1;
        let Some(c) = self.bump() else {
            return Err(err(at, "trailing backslash at end of expression".into()));
        };
        let bad = || err(at, "invalid escape sequence".into());
        Ok(match c {
            'a' => '\x07',
            'f' => '\x0c',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\x0b',
            '1'..='7' | '0' => {
                if c != '0' && !matches!(self.peek(), Some('0'..='7')) {
                    return Err(bad());
                }
                let mut v = c as u32 - '0' as u32;
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ '0'..='7') => {
                            v = v * 8 + (d as u32 - '0' as u32);
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                char::from_u32(v).ok_or_else(bad)?
            }
            'x' => {
                if self.peek() == Some('{') {
                    self.pos += 1;
                    let end = self.rest().find('}').ok_or_else(bad)?;
                    let hex = &self.rest()[..end];
                    if hex.is_empty()
                        || hex.len() > 8
                        || !hex.chars().all(|c| c.is_ascii_hexdigit())
                    {
                        return Err(bad());
                    }
                    let v = u32::from_str_radix(hex, 16).map_err(|_| bad())?;
                    self.pos += end + 1;
                    if v > 0x10FFFF {
                        return Err(bad());
                    }
                    char::from_u32(v).ok_or_else(bad)?
                } else {
                    let hex = self.rest().get(..2).ok_or_else(bad)?;
                    if !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                        return Err(bad());
                    }
                    self.pos += 2;
                    char::from_u32(u32::from_str_radix(hex, 16).map_err(|_| bad())?)
                        .ok_or_else(bad)?
                }
            }
            'p' | 'P' => return Err(err(at, "unicode classes (\\p) are not supported".into())),
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => c,
            _ => return Err(bad()),
        })
    }
}

/// Go's parseInt for repeat counts: digits, no leading zero; huge → over cap.
fn parse_int(s: &str) -> Option<(u64, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || (digits >= 2 && s.starts_with('0')) {
        return None;
    }
    let v = if digits > 8 {
        u64::MAX
    } else {
        s[..digits].parse().ok()?
    };
    Some((v, &s[digits..]))
}

/// Go's repeatIsValid: nested counted repeats may not multiply beyond `n`.
fn repeat_ok(node: &Node, mut n: u32) -> bool {
    match node {
        Node::Repeat {
            node,
            min,
            max,
            counted,
        } => {
            if *counted {
                let m = match max {
                    Some(0) => return true,
                    Some(m) => *m,
                    None => *min,
                };
                if m > n {
                    return false;
                }
                if let Some(q) = n.checked_div(m) {
                    n = q;
                }
            }
            repeat_ok(node, n)
        }
        Node::Concat(v) | Node::Alt(v) => v.iter().all(|x| repeat_ok(x, n)),
        _ => true,
    }
}

// ---- compiler ----

struct Compiler {
    prog: Vec<Inst>,
    classes: Vec<Class>,
    /// Class ranges emitted so far.
    ranges: usize,
}

impl Compiler {
    fn push(&mut self, i: Inst) -> Result<usize, ()> {
        if self.prog.len() >= MAX_PROGRAM {
            return Err(());
        }
        self.prog.push(i);
        Ok(self.prog.len() - 1)
    }

    fn emit_node(&mut self, node: &Node) -> Result<(), ()> {
        match node {
            Node::Empty => {}
            Node::Char(c) => {
                self.push(Inst::Char(*c))?;
            }
            Node::Class(c) => {
                self.ranges += c.ranges.len();
                if self.ranges > MAX_CLASS_RANGES {
                    return Err(());
                }
                self.classes.push(c.clone());
                self.push(Inst::Class(self.classes.len() - 1))?;
            }
            Node::Any { newline } => {
                self.push(Inst::Any { newline: *newline })?;
            }
            Node::Assert(a) => {
                self.push(Inst::Assert(*a))?;
            }
            Node::Concat(v) => {
                for x in v {
                    self.emit_node(x)?;
                }
            }
            Node::Alt(v) => {
                let mut jumps = Vec::new();
                for (i, x) in v.iter().enumerate() {
                    if i + 1 < v.len() {
                        let split = self.push(Inst::Split(0))?;
                        self.emit_node(x)?;
                        jumps.push(self.push(Inst::Jmp(0))?);
                        let next = self.prog.len();
                        self.prog[split] = Inst::Split(next);
                    } else {
                        self.emit_node(x)?;
                    }
                }
                let end = self.prog.len();
                for j in jumps {
                    self.prog[j] = Inst::Jmp(end);
                }
            }
            Node::Repeat { node, min, max, .. } => {
                for _ in 0..*min {
                    self.emit_node(node)?;
                }
                match max {
                    None => {
                        // x*: L: split(body, out); body; jmp L
                        let split = self.push(Inst::Split(0))?;
                        self.emit_node(node)?;
                        self.push(Inst::Jmp(split))?;
                        let out = self.prog.len();
                        self.prog[split] = Inst::Split(out);
                    }
                    Some(max) => {
                        let mut splits = Vec::new();
                        for _ in *min..*max {
                            splits.push(self.push(Inst::Split(0))?);
                            self.emit_node(node)?;
                        }
                        let out = self.prog.len();
                        for s in splits {
                            self.prog[s] = Inst::Split(out);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
