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

mod compile;

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

/// A compiled class: case folding and items already merged into ranges,
/// sorted and disjoint (compiled so, checked when decoded), so a
/// character is looked up by binary search (review 16 r16a F4: a linear
/// scan of thousands of ranges per character was charged as one).
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
            // `char_bound` units (see `work_bound`).
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
                    Inst::Class(k) => {
                        let class = &self.classes[k];
                        work += class.probes();
                        class.matches(ch)
                    }
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
    /// `char_bound` per character and once at the end.
    pub fn work_bound(&self, len: usize) -> u64 {
        (len as u64 + 1) * self.char_bound()
    }

    /// The most work on one character: the threads of the list (at most
    /// one per instruction), the closures' stack pops (at most one per
    /// call plus two per instruction, twice: into the next list and from
    /// the start), and each class's binary search (`Class::probes`).
    pub fn char_bound(&self) -> u64 {
        let probes: u64 = self.classes.iter().map(Class::probes).sum();
        6 * self.prog.len() as u64 + 3 + probes
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
                        // Sorted and disjoint, as compiled: the binary
                        // search in `matches` relies on it.
                        let after = class.ranges.last().is_none_or(|&(_, last)| last < lo);
                        if hi < lo || !after {
                            return None;
                        }
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

// Class ranges compared, counted in tests: the work a lookup does,
// measured without a clock.
#[cfg(test)]
thread_local! {
    static COMPARED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl Class {
    fn matches(&self, c: char) -> bool {
        // The last range starting at or before `c`.
        let i = self.ranges.partition_point(|&(lo, _)| {
            #[cfg(test)]
            COMPARED.with(|n| n.set(n.get() + 1));
            lo <= c
        });
        let inside = i > 0 && self.ranges.get(i - 1).is_some_and(|&(_, hi)| c <= hi);
        inside != self.negated
    }

    /// Ranges a lookup compares at most (`matches`' binary search), the
    /// work counted for it.
    fn probes(&self) -> u64 {
        u64::from(usize::BITS - self.ranges.len().leading_zeros())
    }
}

fn err(offset: usize, message: String) -> RegexError {
    RegexError { offset, message }
}

#[cfg(test)]
mod tests {
    use super::compile::{fold_tables, orbit};
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

    /// Review 9 (rboot) F3, FAILS on 4a4bbe7: `(?i)` folds along Go's
    /// unicode.SimpleFold orbits (CaseFolding.txt), not Rust's case
    /// mappings: Go 1.27 folds U+FB05/U+FB06, U+0390/U+1FD3, U+03B0/U+1FE3,
    /// and does not fold U+0131 (dotless i) with i/I.
    #[test]
    fn fold_orbits_are_gos_simple_fold() {
        assert!(m("(?i)^\u{FB05}$", "\u{FB06}"));
        assert!(m("(?i)^\u{0390}$", "\u{1FD3}"));
        assert!(m("(?i)^[\u{03B0}]$", "\u{1FE3}"));
        assert!(!m("(?i)^\u{0131}$", "I"));
        assert!(!m("(?i)^[a-z]$", "\u{0131}"));
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

    /// Compiled folding is Go's: one character matches its SimpleFold
    /// orbit; a class item, every character whose orbit meets it. On
    /// every folded character and some others.
    #[test]
    fn compiled_folding_is_orbit_closure() {
        let mut probe: Vec<char> = fold_tables().by_rune.iter().map(|&(c, _)| c).collect();
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
                let want = ch == c || orbit(c).contains(&ch);
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
                let want = has(ch) || orbit(ch).iter().any(|&x| has(x));
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

    /// Review 16 r16a F4 (FAILS at b91a8f2): a class was a linear scan of
    /// its ranges, charged as one thread whatever its size, so a class of
    /// thousands of ranges over long values cost far more than charged.
    /// The work counted for a match is at least the ranges it compared,
    /// and render's per-character bound covers it.
    #[test]
    fn class_lookups_are_charged_for_the_ranges_compared() {
        let classes = "[\\p{L}\\p{N}\\p{M}\\p{S}]";
        let re = Regex::new(&format!("{}Q", classes.repeat(8))).unwrap();
        let text = "é\u{10FFFD}9\u{1F600}".repeat(200);
        let before = COMPARED.with(|n| n.get());
        let mut left = u64::MAX;
        assert_eq!(re.is_match_within(&text, &mut left), Some(false));
        let compared = COMPARED.with(|n| n.get()) - before;
        let work = u64::MAX - left;
        assert!(compared > 0);
        assert!(
            compared <= work,
            "{compared} class ranges compared, {work} units of work counted"
        );
        assert!(work <= re.work_bound(text.len()));
    }

    /// The binary search matches what a scan of the ranges does, on
    /// classes as compiled (folded, negated, Unicode, surrogate ends); the
    /// wire form of unsorted or overlapping ranges is refused.
    #[test]
    fn class_search_is_the_scan() {
        for p in [
            "[\\p{L}\\p{N}]",
            "(?i)[a-zK\u{17F}]",
            "[^\\x{1}-\\x{10}\\p{Greek}]",
            "[\\x{D000}-\\x{F000}\\x{10FFFF}]",
            "(?i)k",
            "[\\D\\S]",
            "[^\\w]",
        ] {
            let re = Regex::new(p).unwrap();
            for class in &re.classes {
                let mut points: Vec<u32> = (0..0x11_0000).step_by(97).collect();
                for &(lo, hi) in &class.ranges {
                    let (lo, hi) = (lo as u32, hi as u32);
                    points.extend([lo.saturating_sub(1), lo, hi, hi + 1]);
                }
                for c in points.into_iter().filter_map(char::from_u32) {
                    let scan = class.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
                    assert_eq!(class.matches(c), scan != class.negated, "{p} on {c:?}");
                }
            }
        }
        assert!(Regex::from_wire("C2:97:0:1:0:M").is_some());
        for bad in [
            "C2:98:0:-1:0:M",
            "C2:97:0:0:0:M",
            "C1:98:-1:M",
            "C2:97:2:-1:0:M",
        ] {
            assert_eq!(Regex::from_wire(bad), None, "{bad}");
        }
    }
}
