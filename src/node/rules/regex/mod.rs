//! A std-only matcher for Go's `regexp` (RE2) syntax, sized for NFD's
//! `InRegexp` (`regexp.MatchString`: unanchored search, true/false only).
//! Thompson NFA simulation: time linear in pattern × input, no backtracking.
//! Captures and greediness do not change whether a string matches, so they
//! are parsed and then forgotten. Unicode classes (`\pL`, `\p{Greek}`) are
//! Go's tables (`unicode_tables`, generated from the Go NFD is built with).
//!
//! Render parses and compiles (case folding, Perl/POSIX and Unicode classes
//! are expanded into plain ranges then); the wrapper only decodes the program
//! (`from_wire`) and runs it, so it carries no parser and no case tables.

use std::fmt;

/// Go refuses repeat counts above this (and nested products above it).
const MAX_REPEAT: u32 = 1000;
/// Compiled program size cap: a pattern beyond it is refused at compile time
/// (RE2 refuses oversized programs too), so boot-time matching stays bounded.
pub const MAX_PROGRAM: usize = 20_000;
/// Group nesting cap (the parser recurses per group).
const MAX_NESTING: usize = 100;
/// Longest pattern accepted.
pub const MAX_PATTERN_LEN: usize = 4096;
/// Class ranges per program (after case folding), compiled or decoded.
pub const MAX_CLASS_RANGES: usize = 50_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegexError {
    /// Byte offset in the pattern.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for RegexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.message, self.offset)
    }
}

impl std::error::Error for RegexError {}

#[derive(Debug, Clone)]
pub struct Regex {
    prog: Vec<Inst>,
    classes: Vec<Class>,
    scratch: std::cell::RefCell<Scratch>,
}

/// Same program, same matches (the scratch buffers do not count).
impl PartialEq for Regex {
    fn eq(&self, other: &Regex) -> bool {
        self.prog == other.prog && self.classes == other.classes
    }
}

impl Eq for Regex {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Assert {
    BeginText,
    EndText,
    BeginLine,
    EndLine,
    WordBoundary,
    NotWordBoundary,
}

/// A bracket class as written, before compiling (render only).
#[derive(Debug, Clone)]
struct ClassSpec {
    /// Each item: ranges and whether the item itself is negated (`\D`).
    items: Vec<(Vec<(char, char)>, bool)>,
    negated: bool,
    fold: bool,
}

/// A compiled class: case folding and items already merged into ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Class {
    ranges: Vec<(char, char)>,
    negated: bool,
}

#[derive(Debug, Clone)]
enum Node {
    Empty,
    Char(char),
    Class(Class),
    Any {
        newline: bool,
    },
    Assert(Assert),
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
        counted: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Inst {
    Char(char),
    Class(usize),
    Any {
        newline: bool,
    },
    Assert(Assert),
    /// Continue at the next instruction and at this one.
    Split(usize),
    Jmp(usize),
    Match,
}

#[derive(Clone, Copy)]
struct Flags {
    fold: bool,
    multi_line: bool,
    dot_nl: bool,
}

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

    /// Whether `text` contains a match (Go's `MatchString`).
    pub fn is_match(&self, text: &str) -> bool {
        let mut unbounded = u64::MAX;
        self.is_match_within(text, &mut unbounded).unwrap_or(false)
    }

    /// `is_match` spending at most `left` units of work (one per thread
    /// looked at, see `work_bound`), which it lowers by what it spent;
    /// None once they ran out.
    pub fn is_match_within(&self, text: &str, left: &mut u64) -> Option<bool> {
        let mut guard = self.scratch.borrow_mut();
        let Scratch { cur, next, stack } = &mut *guard;
        let n = self.prog.len();
        cur.reset(n);
        next.reset(n);
        // `^…` (not multi-line) can only start at the beginning.
        let anchored = matches!(self.prog.first(), Some(Inst::Assert(Assert::BeginText)));
        let mut prev: Option<char> = None;
        let mut rest = text;
        let mut work: u64 = 0;
        let result = loop {
            // Checked once per character: the work of one is at most
            // `6 * prog + 3` units (see `work_bound`).
            if work > *left {
                break None;
            }
            let mut chars = rest.chars();
            let c = chars.next();
            if prev.is_none() || !anchored {
                let ctx = Ctx {
                    prev,
                    cur: c,
                    at_start: prev.is_none(),
                };
                if self.add(cur, 0, ctx, stack, &mut work) {
                    break Some(true);
                }
            } else if cur.list.is_empty() {
                break Some(false);
            }
            let Some(ch) = c else { break Some(false) };
            let after = chars.as_str();
            let next_ctx = Ctx {
                prev: Some(ch),
                cur: after.chars().next(),
                at_start: false,
            };
            next.clear();
            work += 1 + cur.list.len() as u64;
            let mut hit = false;
            for i in 0..cur.list.len() {
                let pc = cur.list[i];
                let ok = match self.prog[pc] {
                    Inst::Char(l) => l == ch,
                    Inst::Class(k) => self.classes[k].matches(ch),
                    Inst::Any { newline } => newline || ch != '\n',
                    _ => false,
                };
                if ok && self.add(next, pc + 1, next_ctx, stack, &mut work) {
                    hit = true;
                    break;
                }
            }
            if hit {
                break Some(true);
            }
            std::mem::swap(cur, next);
            prev = Some(ch);
            rest = after;
        };
        if work > *left {
            *left = 0;
            return None;
        }
        *left -= work;
        result
    }

    /// The most work `is_match_within` spends on a text of `len` bytes:
    /// per character (and once at the end) the threads of the list (at most
    /// one per instruction) and the closures' stack pops (at most one per
    /// call plus two per instruction, twice: into the next list and from
    /// the start).
    pub fn work_bound(prog_len: usize, len: usize) -> u64 {
        (len as u64 + 1) * (6 * prog_len as u64 + 3)
    }

    /// Instructions in the compiled program.
    pub fn program_len(&self) -> usize {
        self.prog.len()
    }

    /// Epsilon closure of `pc` into `list`; true when it reaches Match.
    fn add(
        &self,
        list: &mut ThreadList,
        pc: usize,
        ctx: Ctx,
        stack: &mut Vec<usize>,
        work: &mut u64,
    ) -> bool {
        stack.clear();
        stack.push(pc);
        while let Some(pc) = stack.pop() {
            *work += 1;
            if list.seen[pc] == list.generation {
                continue;
            }
            list.seen[pc] = list.generation;
            match self.prog[pc] {
                Inst::Jmp(a) => stack.push(a),
                Inst::Split(b) => {
                    stack.push(b);
                    stack.push(pc + 1);
                }
                Inst::Assert(a) => {
                    if ctx.holds(a) {
                        stack.push(pc + 1);
                    }
                }
                Inst::Match => return true,
                _ => list.list.push(pc),
            }
        }
        false
    }
}

// ---- wire form (see `compact`): what render writes and the wrapper runs ----
//
// One instruction after another: `c` and a character; `C` (or `N`,
// negated) and `<n>:` then n ranges, each its two end characters; `a` any
// but newline, `A` any; asserts `B` begin text, `E` end text, `b` begin
// line, `e` end line, `W` word boundary, `w` not one; `S<n>:` split to the
// next instruction and n; `J<n>:` jump to n; `M` match (last).

impl Regex {
    /// The compiled program in its wire form.
    pub fn to_wire(&self) -> String {
        let mut out = String::new();
        for inst in &self.prog {
            match *inst {
                Inst::Char(c) => {
                    out.push('c');
                    out.push(c);
                }
                Inst::Class(k) => {
                    let class = &self.classes[k];
                    out.push(if class.negated { 'N' } else { 'C' });
                    out.push_str(&format!("{}:", class.ranges.len()));
                    // Code points as differences (from the previous range's
                    // end, then from the start): Unicode classes are
                    // hundreds of ranges, mostly short and close together.
                    let mut prev = 0i64;
                    for &(lo, hi) in &class.ranges {
                        let (lo, hi) = (i64::from(u32::from(lo)), i64::from(u32::from(hi)));
                        out.push_str(&format!("{}:{}:", lo - prev, hi - lo));
                        prev = hi;
                    }
                }
                Inst::Any { newline } => out.push(if newline { 'A' } else { 'a' }),
                Inst::Assert(a) => out.push(match a {
                    Assert::BeginText => 'B',
                    Assert::EndText => 'E',
                    Assert::BeginLine => 'b',
                    Assert::EndLine => 'e',
                    Assert::WordBoundary => 'W',
                    Assert::NotWordBoundary => 'w',
                }),
                Inst::Split(t) => out.push_str(&format!("S{t}:")),
                Inst::Jmp(t) => out.push_str(&format!("J{t}:")),
                Inst::Match => out.push('M'),
            }
        }
        out
    }

    /// A program from its wire form; None unless it is one the VM can run
    /// safely (at most `MAX_PROGRAM` steps and `MAX_CLASS_RANGES` ranges,
    /// jumps inside it, ending in `M`).
    pub fn from_wire(wire: &str) -> Option<Regex> {
        let mut r = super::wire::Reader::new(wire);
        let mut prog = Vec::new();
        let mut classes: Vec<Class> = Vec::new();
        let mut ranges = 0;
        while let Some(op) = r.char() {
            if prog.len() >= MAX_PROGRAM {
                return None;
            }
            prog.push(match op {
                'c' => Inst::Char(r.char()?),
                'C' | 'N' => {
                    let n = r.num((MAX_CLASS_RANGES - ranges).min(r.left()))?;
                    ranges += n;
                    let mut class = Class {
                        ranges: Vec::with_capacity(n.min(64)),
                        negated: op == 'N',
                    };
                    let mut prev = 0i64;
                    let mut point = |delta: i64| {
                        let c = prev.checked_add(delta)?;
                        prev = c;
                        char::from_u32(u32::try_from(c).ok()?)
                    };
                    for _ in 0..n {
                        let lo = point(r.int()?)?;
                        let hi = point(r.int()?)?;
                        class.ranges.push((lo, hi));
                    }
                    classes.push(class);
                    Inst::Class(classes.len() - 1)
                }
                'a' | 'A' => Inst::Any { newline: op == 'A' },
                'B' => Inst::Assert(Assert::BeginText),
                'E' => Inst::Assert(Assert::EndText),
                'b' => Inst::Assert(Assert::BeginLine),
                'e' => Inst::Assert(Assert::EndLine),
                'W' => Inst::Assert(Assert::WordBoundary),
                'w' => Inst::Assert(Assert::NotWordBoundary),
                'S' => Inst::Split(r.num(MAX_PROGRAM)?),
                'J' => Inst::Jmp(r.num(MAX_PROGRAM)?),
                'M' => Inst::Match,
                _ => return None,
            });
        }
        // Every step but the last continues at the next one, and jumps
        // stay inside: the VM indexes with no further checks.
        let n = prog.len();
        let inside = prog.iter().all(|i| match i {
            Inst::Split(t) | Inst::Jmp(t) => *t < n,
            _ => true,
        });
        (prog.last() == Some(&Inst::Match) && inside).then(|| Regex {
            prog,
            classes,
            scratch: Default::default(),
        })
    }
}

#[derive(Clone, Copy)]
struct Ctx {
    prev: Option<char>,
    cur: Option<char>,
    at_start: bool,
}

impl Ctx {
    fn holds(self, a: Assert) -> bool {
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        match a {
            Assert::BeginText => self.at_start,
            Assert::EndText => self.cur.is_none(),
            Assert::BeginLine => self.at_start || self.prev == Some('\n'),
            Assert::EndLine => self.cur.is_none() || self.cur == Some('\n'),
            Assert::WordBoundary => word(self.prev) != word(self.cur),
            Assert::NotWordBoundary => word(self.prev) == word(self.cur),
        }
    }
}

/// Buffers reused across `is_match` calls (boot matches many short strings).
#[derive(Debug, Clone, Default)]
struct Scratch {
    cur: ThreadList,
    next: ThreadList,
    stack: Vec<usize>,
}

/// States reached at one position; `seen` holds the generation that saw a
/// state, so clearing is one increment.
#[derive(Debug, Clone, Default)]
struct ThreadList {
    seen: Vec<u32>,
    generation: u32,
    list: Vec<usize>,
}

impl ThreadList {
    fn reset(&mut self, n: usize) {
        if self.seen.len() != n {
            self.seen = vec![0; n];
            self.generation = 0;
        }
        self.clear();
    }

    fn clear(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.seen.iter_mut().for_each(|s| *s = 0);
            self.generation = 1;
        }
        self.list.clear();
    }
}

fn err(offset: usize, message: String) -> RegexError {
    RegexError { offset, message }
}

// ---- case folding (Go folds along Unicode simple-fold orbits) ----

fn lower1(c: char) -> char {
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

fn upper1(c: char) -> char {
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// One representative per fold orbit.
fn canon(c: char) -> char {
    lower1(upper1(c))
}

/// Orbit members that neither upper- nor lower-casing reaches from the
/// representative (Kelvin sign, long s, Greek symbol forms, title case).
fn fold_extras(c: char) -> &'static [char] {
    match c {
        'k' => &['\u{212A}'],
        's' => &['\u{017F}'],
        'å' => &['\u{212B}'],
        'μ' => &['\u{00B5}'],
        'ω' => &['\u{2126}'],
        'θ' => &['\u{03D1}', '\u{03F4}'],
        'β' => &['\u{03D0}'],
        'ε' => &['\u{03F5}'],
        'κ' => &['\u{03F0}'],
        'π' => &['\u{03D6}'],
        'ρ' => &['\u{03F1}'],
        'σ' => &['\u{03C2}'],
        'φ' => &['\u{03D5}'],
        'ι' => &['\u{0345}', '\u{1FBE}'],
        'ṡ' => &['\u{1E9B}'],
        'ǆ' => &['\u{01C5}'],
        'ǉ' => &['\u{01C8}'],
        'ǌ' => &['\u{01CB}'],
        'ǳ' => &['\u{01F2}'],
        _ => &[],
    }
}

/// Characters with a case mapping (all below U+20000), and each with its
/// orbit representative, sorted by representative. Built once, at render.
struct FoldTables {
    cased: Vec<char>,
    by_canon: Vec<(char, char)>,
}

fn fold_tables() -> &'static FoldTables {
    static TABLES: std::sync::OnceLock<FoldTables> = std::sync::OnceLock::new();
    TABLES.get_or_init(|| {
        let cased: Vec<char> = (0..0x20000u32)
            .filter_map(char::from_u32)
            .filter(|&c| lower1(c) != c || upper1(c) != c)
            .collect();
        let mut by_canon: Vec<(char, char)> = cased.iter().map(|&c| (canon(c), c)).collect();
        by_canon.sort_unstable();
        FoldTables { cased, by_canon }
    })
}

/// `c` under `(?i)`: one character, or a class of its fold orbit (the
/// characters `ch` with `canon(ch) == canon(c)`: cased ones, and `c`'s
/// representative when it is uncased).
fn literal(c: char, fold: bool) -> Node {
    if !fold {
        return Node::Char(c);
    }
    let k = canon(c);
    let t = fold_tables();
    let from = t.by_canon.partition_point(|&(x, _)| x < k);
    let mut orbit: Vec<char> = t.by_canon[from..]
        .iter()
        .take_while(|&&(x, _)| x == k)
        .map(|&(_, c)| c)
        .chain([c, k])
        .filter(|&x| canon(x) == k)
        .collect();
    orbit.sort_unstable();
    orbit.dedup();
    if orbit.len() == 1 {
        return Node::Char(c);
    }
    Node::Class(Class {
        ranges: orbit.into_iter().map(|c| (c, c)).collect(),
        negated: false,
    })
}

impl ClassSpec {
    /// Merge the items into ranges, folding as Go does: a character is in
    /// a folded item when it, its upper or lower case, its orbit
    /// representative (or that one's upper case) or an extra orbit member is.
    fn compile(&self) -> Class {
        let mut all: Vec<(u32, u32)> = Vec::new();
        for (ranges, neg) in &self.items {
            let has = |x: char| ranges.iter().any(|&(lo, hi)| lo <= x && x <= hi);
            let mut set: Vec<(u32, u32)> = ranges
                .iter()
                .map(|&(lo, hi)| (lo as u32, hi as u32))
                .collect();
            if self.fold {
                for &c in &fold_tables().cased {
                    let k = canon(c);
                    if has(lower1(c))
                        || has(upper1(c))
                        || has(k)
                        || has(upper1(k))
                        || fold_extras(k).iter().any(|&x| has(x))
                    {
                        set.push((c as u32, c as u32));
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

impl Class {
    fn matches(&self, c: char) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negated
    }
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
    use super::unicode_tables::{NAMES, TABLES};
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Compile, then match with the program as the wrapper gets it (wire
    /// form, decoded), which must equal and match as the compiled one.
    fn m(p: &str, t: &str) -> bool {
        let re = Regex::new(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        let decoded = Regex::from_wire(&re.to_wire()).expect("wire form decodes");
        assert_eq!(decoded, re, "{p}");
        assert_eq!(decoded.is_match(t), re.is_match(t), "{p} on {t:?}");
        decoded.is_match(t)
    }

    #[test]
    fn folding_is_compiled_in() {
        // `(?i)` leaves plain ranges and characters: no case tables at boot.
        let re = Regex::new("(?i)k[a-c]").unwrap();
        assert_eq!(re.to_wire(), "C3:75:0:32:0:8383:0:C2:65:2:30:2:M");
        assert_eq!(Regex::new("(?i)1").unwrap().to_wire(), "c1M");
        assert_eq!(
            Regex::new("[^\\D]").unwrap().to_wire(),
            "N2:0:47:11:1114053:M"
        );
    }

    /// `\p` classes are Go's tables compiled into the program's ranges
    /// (the node needs no table), with Go's name matching and negations.
    #[test]
    fn unicode_classes_are_compiled_in() {
        assert!(m("^\\p{Greek}+$", "Ωλ") && !m("\\p{Greek}", "abc"));
        assert!(m("^\\pL\\pN$", "é٣") && !m("\\pN", "x"));
        for p in [
            "\\p{greek}",
            "\\p{GREEK}",
            "\\p{Gre_ek}",
            "\\P{^Greek}",
            "[\\p{Greek}]",
        ] {
            assert!(m(p, "λ") && !m(p, "l"), "{p}");
        }
        for p in ["\\P{Greek}", "\\p{^Greek}", "[^\\p{Greek}]"] {
            assert!(!m(p, "λ") && m(p, "l"), "{p}");
        }
        assert!(m("\\p{Letter}", "a") && m("\\p{Lu}", "A") && !m("\\p{Lu}", "a"));
        assert!(m("(?i)\\p{Lu}", "a") && m("(?i)\\p{Lu}", "\u{212A}"));
        assert!(m("\\p{Any}", "\u{10FFFF}") && !m("\\p{Assigned}", "\u{E0080}"));
        // The whole class travels, and only it: a few ranges for Greek.
        let wire = Regex::new("\\p{Greek}").unwrap().to_wire();
        assert!(wire.len() < 400 && wire.is_ascii(), "{wire}");
    }

    /// Compiled folding gives what matching with the case tables gave (one
    /// character: same orbit representative; a class item: any case variant
    /// of the character in it), on every cased character and some others.
    #[test]
    fn compiled_folding_matches_runtime_folding() {
        let mut probe = fold_tables().cased.clone();
        probe.extend([
            '0', '_', ' ', '\u{0130}', '\u{0131}', 'ß', '\u{1E9E}', '\u{FB00}',
        ]);
        let singles = [
            'a', 'K', '\u{212A}', 's', '\u{017F}', 'µ', 'σ', 'ς', 'Σ', 'ǅ', 'İ',
        ];
        for c in singles
            .into_iter()
            .chain(['ı', 'ß', 'é', 'ϑ', 'ι', '\u{0345}', '1'])
        {
            let re = Regex::new(&format!("(?i){c}")).unwrap();
            for &ch in &probe {
                let want = canon(c) == canon(ch);
                assert_eq!(re.is_match(&ch.to_string()), want, "(?i){c} on {ch:?}");
            }
        }
        for (class, items) in [
            ("[a-z]", vec![('a', 'z')]),
            ("[K-M\u{3c3}]", vec![('K', 'M'), ('σ', 'σ')]),
            (
                "[\u{1c4}-\u{1c6}\u{b5}]",
                vec![('\u{1c4}', '\u{1c6}'), ('µ', 'µ')],
            ),
        ] {
            let re = Regex::new(&format!("^(?i){class}$")).unwrap();
            let has = |x: char| items.iter().any(|&(lo, hi)| lo <= x && x <= hi);
            for &ch in &probe {
                let k = canon(ch);
                let want = has(ch)
                    || has(lower1(ch))
                    || has(upper1(ch))
                    || has(k)
                    || has(upper1(k))
                    || fold_extras(k).iter().any(|&x| has(x));
                assert_eq!(re.is_match(&ch.to_string()), want, "{class} on {ch:?}");
            }
        }
    }

    #[test]
    fn wire_form_refuses_what_the_vm_cannot_run() {
        let re = Regex::new("^(a|[b-d]+)*?\\bx.(?s:.)$").unwrap();
        let wire = re.to_wire();
        assert_eq!(Regex::from_wire(&wire), Some(re));
        for i in 0..wire.len() {
            let _ = Regex::from_wire(&wire[..i]);
            for b in [b'0', b'9', b':', b'S', b'J', b'C', b'M', b'c'] {
                let mut m = wire.clone().into_bytes();
                m[i] = b;
                if let Ok(m) = String::from_utf8(m) {
                    let _ = Regex::from_wire(&m).map(|re| re.is_match("abcx\nbbx!"));
                }
            }
        }
        for bad in [
            "", "ca", "S2:M", "J2:M", "MS1:", "C1:aM", "N2:abM", "Q", "S:M", "S-1:M",
        ] {
            assert_eq!(Regex::from_wire(bad), None, "{bad}");
        }
        assert!(
            Regex::from_wire("J0:M").is_some(),
            "a loop with no step is bounded by the VM"
        );
        assert!(!Regex::from_wire("J0:M").unwrap().is_match("x"));
        let big = "ca".repeat(MAX_PROGRAM) + "M";
        assert_eq!(Regex::from_wire(&big), None);
        let many = format!(
            "C{}:{}M",
            MAX_CLASS_RANGES + 1,
            "az".repeat(MAX_CLASS_RANGES + 1)
        );
        assert_eq!(Regex::from_wire(&many), None);
    }

    #[test]
    fn basics() {
        assert!(m("^AVX", "AVX512F"));
        assert!(!m("^AVX", "XAVX"));
        assert!(m("10de", "0x10de"));
        assert!(m("^0(3|2)0[02]$", "0302"));
        assert!(!m("^0(3|2)0[02]$", "03020"));
        assert!(m("", ""));
        assert!(m("a|", "zzz"));
        assert!(m("(?i)nvidia", "NVIDIA Corp"));
        assert!(m("(?i)[a-z]+$", "ABC"));
        assert!(m("(?i)k", "\u{212A}"));
        assert!(m(r"\bfoo\b", "a foo b"));
        assert!(!m(r"\bfoo\b", "afoob"));
        assert!(m("a{2,3}$", "caaa"));
        assert!(!m("^a{2,3}$", "aaaa"));
        assert!(m("^[[:xdigit:]]{4}$", "10dE"));
        assert!(m(r"^\d+\.\d+", "9.6"));
        assert!(m("(?m)^b$", "a\nb\nc"));
        assert!(!m("^b$", "a\nb\nc"));
        assert!(m("(?s)a.b", "a\nb"));
        assert!(!m("a.b", "a\nb"));
        assert!(m(r"\Qa.b\E", "xa.b"));
        assert!(!m(r"\Qa.b\E", "axb"));
        assert!(m("(?P<x>ab)+?c", "ababc"));
        assert!(m("[^\\d]", "a1"));
        assert!(m("é+", "café"));
        assert!(m("x*", "anything"));
        assert!(m("a{,2}", "a{,2}"));
        assert!(m("a{01}", "a{01}"));
    }

    #[test]
    fn errors_have_offsets() {
        for (p, off) in [
            ("ab(", 2),
            ("a)", 1),
            ("a**", 2),
            ("*a", 0),
            ("x{1001}", 1),
            ("[z-a]", 1),
            ("(?=x)", 0),
            ("\\p{Nope}", 0),
            ("a\\p{L", 1),
            ("[a\\pé]", 2),
            ("a\\", 1),
            ("\\1", 0),
            ("((a{100}){100})", 9),
            ("[abc", 0),
        ] {
            let e = Regex::new(p).expect_err(p);
            assert_eq!(e.offset, off, "{p}: {e}");
        }
    }

    #[test]
    fn program_size_is_capped() {
        // Each counted repeat is within Go's limits; together they are not.
        let e = Regex::new(&"x{1000}".repeat(21)).expect_err("too large");
        assert!(e.message.contains("too large"), "{e}");
        assert!(Regex::new("[0-9a-f]{1000}").is_ok());
    }

    #[test]
    fn linear_on_pathological_input() {
        // (a*)*b on a long run of a's backtracks exponentially elsewhere.
        let re = Regex::new("(a*)*(a|aa)*b").unwrap();
        assert!(!re.is_match(&"a".repeat(5000)));
    }
}
