//! The part of Go's `text/template` that NFD rule templates use, std only.
//! Parsed at render (errors carry the byte offset, see `line_col`); the
//! wrapper gets the parsed tree (`to_wire`/`from_wire`) and executes it
//! against the matched features with `missingkey=error`, then splits the
//! output into `key=value` pairs as NFD's `ExpandMap` does.
//!
//! Supported: text; `{{ .a.b }}`; `$`, `$x`, `$x.f`; `{{ $x := … }}` and
//! `{{ $x = … }}`; `if`/`else if`/`else`/`end`; `range` (with `$i, $e :=`
//! and `else`; over an integer n as Go >= 1.22: 0 to n-1), `break` and
//! `continue`; `len` (also as `… | len`); parentheses; string, integer and
//! `true`/`false` literals; `{{-`/`-}}` trimming; `{{/* comments */}}`;
//! the builtins `index`, `not`, `and`, `or` (short-circuit), `eq` (several
//! operands), `ne`, `lt`, `le`, `gt`, `ge` with Go's rules (published rules
//! use `(index .pci.device 0).device` and `gt (len …) 0`).
//! Semantics are those of the Go NFD is built with (>= 1.24). Everything
//! else (other functions, `with`, `define`, `template`, `block`, other
//! number forms) is refused at parse time.

use std::borrow::Cow;
use std::fmt::{self, Write};

use super::Element;
use crate::node::sorted::SortedMap;

/// Template data: `.<domain>.<feature>` → matched elements.
pub type Data = SortedMap<String, SortedMap<String, Vec<Element>>>;

/// NFD's `MaxTemplateSize`.
pub const MAX_SOURCE: usize = 64 * 1024;
/// Output cap (labels are short; a runaway template stops here).
pub const MAX_OUTPUT: usize = 4 * 1024;
/// Executed actions and loop iterations per run.
pub const MAX_STEPS: usize = 100_000;
/// Bytes compared (`eq`, `lt`, ...) per run.
pub const MAX_COMPARED: usize = 1 << 20;
/// Nesting of blocks and parentheses.
const MAX_DEPTH: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    /// Byte offset in the template source.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.message, self.offset)
    }
}

impl std::error::Error for TemplateError {}

/// 1-based line and column (in characters) of a byte offset in `src`.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(src.len());
    while !src.is_char_boundary(end) {
        end -= 1;
    }
    let before = &src[..end];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Text(String),
    /// Prints the pipeline's value unless it declares a variable.
    Action(Pipe),
    If {
        pipe: Pipe,
        then: Vec<Node>,
        otherwise: Vec<Node>,
    },
    Range {
        pipe: Pipe,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
    /// `{{break}}` and `{{continue}}` (inside a range body only).
    Break,
    Continue,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Pipe {
    /// Declared or assigned variables (`$i, $e :=` in range).
    vars: Vec<String>,
    assign: bool,
    cmds: Vec<Cmd>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Cmd {
    Operand(Operand),
    /// A builtin; a piped value is its last argument.
    Call(Func, Vec<Operand>),
}

/// Go's builtins that published rules use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Len,
    Index,
    Not,
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

const FUNCS: &[(&str, Func)] = &[
    ("len", Func::Len),
    ("index", Func::Index),
    ("not", Func::Not),
    ("and", Func::And),
    ("or", Func::Or),
    ("eq", Func::Eq),
    ("ne", Func::Ne),
    ("lt", Func::Lt),
    ("le", Func::Le),
    ("gt", Func::Gt),
    ("ge", Func::Ge),
];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Operand {
    /// `.a.b` on dot (empty chain = dot itself).
    Field(Vec<String>),
    /// `$x.a.b` (`$` is the root).
    Var(String, Vec<String>),
    Str(String),
    Int(i64),
    Bool(bool),
    /// `( … )`, with a field chain right after it (`(index .l 0).device`).
    Paren(Box<Pipe>, Vec<String>),
}

// ---- wire form (see `compact`): the parsed tree, prefix order ----
//
// `<n>:` counts and numbers, `<len>:` strings. nodes = `<n>:` node*;
// node = `t` text | `a` pipe | `i` pipe nodes nodes | `r` pipe nodes nodes
// | `b` break | `c` continue;
// pipe = `<n>:` var* (`y` assign | `n`) cmds; cmds = `<n>:` cmd*;
// cmd = `o` operand | `f` function (`a` + its index in FUNCS) `<n>:` operand*;
// operand = `F` chain | `V` name chain | `S` string | `I<int>:` | `T` | `X`
// (true, false) | `P` cmds chain; chain = `<n>:` name*.

/// Nesting the decoder accepts (blocks, and parentheses), above what the
/// parser makes; it bounds the executor's recursion too.
const MAX_WIRE_DEPTH: usize = 2 * MAX_DEPTH;

impl Template {
    /// The parsed tree in its wire form.
    pub fn to_wire(&self) -> String {
        let mut out = String::new();
        put_nodes(&mut out, &self.nodes);
        out
    }

    /// A tree from its wire form; None unless all of `wire` is one, nested
    /// at most `MAX_WIRE_DEPTH`.
    pub fn from_wire(wire: &str) -> Option<Template> {
        let mut r = super::wire::Reader::new(wire);
        let nodes = get_nodes(&mut r, 0)?;
        r.is_empty().then_some(Template { nodes })
    }
}

fn put_num(out: &mut String, n: impl fmt::Display) {
    let _ = write!(out, "{n}:");
}

fn put_str(out: &mut String, s: &str) {
    put_num(out, s.len());
    out.push_str(s);
}

fn put_strs(out: &mut String, v: &[String]) {
    put_num(out, v.len());
    for s in v {
        put_str(out, s);
    }
}

fn put_nodes(out: &mut String, nodes: &[Node]) {
    put_num(out, nodes.len());
    for node in nodes {
        match node {
            Node::Text(t) => {
                out.push('t');
                put_str(out, t);
            }
            Node::Action(p) => {
                out.push('a');
                put_pipe(out, p);
            }
            Node::Break => out.push('b'),
            Node::Continue => out.push('c'),
            Node::If {
                pipe,
                then: a,
                otherwise: b,
            }
            | Node::Range {
                pipe,
                body: a,
                otherwise: b,
            } => {
                out.push(if matches!(node, Node::If { .. }) {
                    'i'
                } else {
                    'r'
                });
                put_pipe(out, pipe);
                put_nodes(out, a);
                put_nodes(out, b);
            }
        }
    }
}

fn put_pipe(out: &mut String, p: &Pipe) {
    put_strs(out, &p.vars);
    out.push(if p.assign { 'y' } else { 'n' });
    put_cmds(out, &p.cmds);
}

fn put_cmds(out: &mut String, cmds: &[Cmd]) {
    put_num(out, cmds.len());
    for cmd in cmds {
        match cmd {
            Cmd::Operand(o) => {
                out.push('o');
                put_operand(out, o);
            }
            Cmd::Call(f, args) => {
                out.push('f');
                let k = FUNCS.iter().position(|p| p.1 == *f).unwrap_or(0);
                out.push((b'a' + k as u8) as char);
                put_num(out, args.len());
                for a in args {
                    put_operand(out, a);
                }
            }
        }
    }
}

fn put_operand(out: &mut String, o: &Operand) {
    match o {
        Operand::Field(chain) => {
            out.push('F');
            put_strs(out, chain);
        }
        Operand::Var(name, chain) => {
            out.push('V');
            put_str(out, name);
            put_strs(out, chain);
        }
        Operand::Str(s) => {
            out.push('S');
            put_str(out, s);
        }
        Operand::Int(i) => {
            out.push('I');
            put_num(out, i);
        }
        Operand::Bool(b) => out.push(if *b { 'T' } else { 'X' }),
        Operand::Paren(p, chain) => {
            out.push('P');
            put_cmds(out, &p.cmds);
            put_strs(out, chain);
        }
    }
}

type Wire<'a, 'b> = &'b mut super::wire::Reader<'a>;

/// Counts are checked against what is left: every item takes a byte.
fn get_count(r: Wire) -> Option<usize> {
    let left = r.left();
    r.num(left)
}

fn get_strs(r: Wire) -> Option<Vec<String>> {
    let n = get_count(r)?;
    let mut v = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        v.push(r.str()?.to_string());
    }
    Some(v)
}

fn get_nodes(r: Wire, depth: usize) -> Option<Vec<Node>> {
    if depth > MAX_WIRE_DEPTH {
        return None;
    }
    let n = get_count(r)?;
    let mut nodes = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        nodes.push(match r.char()? {
            't' => Node::Text(r.str()?.to_string()),
            'a' => Node::Action(get_pipe(r)?),
            'b' => Node::Break,
            'c' => Node::Continue,
            op @ ('i' | 'r') => {
                let pipe = get_pipe(r)?;
                let a = get_nodes(r, depth + 1)?;
                let b = get_nodes(r, depth + 1)?;
                if op == 'i' {
                    Node::If {
                        pipe,
                        then: a,
                        otherwise: b,
                    }
                } else {
                    Node::Range {
                        pipe,
                        body: a,
                        otherwise: b,
                    }
                }
            }
            _ => return None,
        });
    }
    Some(nodes)
}

fn get_pipe(r: Wire) -> Option<Pipe> {
    let vars = get_strs(r)?;
    let assign = match r.char()? {
        'y' => true,
        'n' => false,
        _ => return None,
    };
    Some(Pipe {
        vars,
        assign,
        cmds: get_cmds(r, 0)?,
    })
}

fn get_cmds(r: Wire, depth: usize) -> Option<Vec<Cmd>> {
    if depth > MAX_WIRE_DEPTH {
        return None;
    }
    let n = get_count(r)?;
    let mut cmds = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        cmds.push(match r.char()? {
            'o' => Cmd::Operand(get_operand(r, depth)?),
            'f' => {
                let k = (r.char()? as usize).checked_sub('a' as usize)?;
                let f = FUNCS.get(k)?.1;
                let n = get_count(r)?;
                let mut args = Vec::with_capacity(n.min(64));
                for _ in 0..n {
                    args.push(get_operand(r, depth)?);
                }
                Cmd::Call(f, args)
            }
            _ => return None,
        });
    }
    Some(cmds)
}

fn get_operand(r: Wire, depth: usize) -> Option<Operand> {
    Some(match r.char()? {
        'F' => Operand::Field(get_strs(r)?),
        'V' => Operand::Var(r.str()?.to_string(), get_strs(r)?),
        'S' => Operand::Str(r.str()?.to_string()),
        'I' => Operand::Int(r.int()?),
        'T' => Operand::Bool(true),
        'X' => Operand::Bool(false),
        'P' => {
            let cmds = get_cmds(r, depth + 1)?;
            let pipe = Pipe {
                vars: Vec::new(),
                assign: false,
                cmds,
            };
            Operand::Paren(Box::new(pipe), get_strs(r)?)
        }
        _ => return None,
    })
}

// ---- lexer ----

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Field(Vec<String>),
    Var(String, Vec<String>),
    Ident(String),
    Str(String),
    Int(i64),
    LParen,
    RParen,
    Pipe,
    Declare,
    Assign,
    Comma,
}

enum Item {
    Text(String),
    /// Tokens with offsets; the offset of `{{`.
    Action(Vec<(Tok, usize)>, usize),
}

fn terr(offset: usize, message: impl Into<String>) -> TemplateError {
    TemplateError {
        offset,
        message: message.into(),
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn lex(src: &str) -> Result<Vec<Item>, TemplateError> {
    let b = src.as_bytes();
    let mut items = Vec::new();
    let mut pos = 0;
    let mut trim_next = false;
    while pos <= b.len() {
        let open = src[pos..].find("{{").map(|i| pos + i);
        let text_end = open.unwrap_or(b.len());
        let mut text = &src[pos..text_end];
        if trim_next {
            text = text.trim_start_matches([' ', '\t', '\r', '\n']);
        }
        let Some(open) = open else {
            if !text.is_empty() {
                items.push(Item::Text(text.to_string()));
            }
            break;
        };
        let mut i = open + 2;
        if b.get(i) == Some(&b'-') && b.get(i + 1).is_some_and(|&c| is_space(c)) {
            text = text.trim_end_matches([' ', '\t', '\r', '\n']);
            i += 2;
        }
        if !text.is_empty() {
            items.push(Item::Text(text.to_string()));
        }
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        // A comment must start right after the delimiter (and trim marker).
        let after_delim = if src[open + 2..].starts_with("- ") || src[open + 2..].starts_with("-\t")
        {
            open + 4
        } else {
            open + 2
        };
        if src[after_delim..].starts_with("/*") {
            let Some(end) = src[after_delim + 2..].find("*/") else {
                return Err(terr(open, "unclosed comment"));
            };
            let mut j = after_delim + 2 + end + 2;
            if src[j..].starts_with("}}") {
                trim_next = false;
                pos = j + 2;
            } else if b.get(j).is_some_and(|&c| is_space(c)) && src[j + 1..].starts_with("-}}") {
                j += 4;
                trim_next = true;
                pos = j;
            } else {
                return Err(terr(open, "comment ends before closing delimiter"));
            }
            continue;
        }
        let mut toks = Vec::new();
        loop {
            if i >= b.len() {
                return Err(terr(open, "unclosed action"));
            }
            let c = b[i];
            if is_space(c) {
                let ws = i;
                while i < b.len() && is_space(b[i]) {
                    i += 1;
                }
                if src[i..].starts_with("-}}") {
                    trim_next = true;
                    pos = i + 3;
                    break;
                }
                let _ = ws;
                continue;
            }
            if src[i..].starts_with("}}") {
                trim_next = false;
                pos = i + 2;
                break;
            }
            let start = i;
            let tok = match c {
                b'(' => {
                    i += 1;
                    Tok::LParen
                }
                b')' => {
                    i += 1;
                    Tok::RParen
                }
                b'|' => {
                    i += 1;
                    Tok::Pipe
                }
                b',' => {
                    i += 1;
                    Tok::Comma
                }
                b'=' => {
                    i += 1;
                    Tok::Assign
                }
                b':' if b.get(i + 1) == Some(&b'=') => {
                    i += 2;
                    Tok::Declare
                }
                b'.' => {
                    let (chain, j) = lex_chain(src, i, start)?;
                    i = j;
                    Tok::Field(chain)
                }
                b'$' => {
                    let j = ident_end(src, i + 1);
                    let name = src[i..j].to_string();
                    i = j;
                    let (chain, j) = if b.get(i) == Some(&b'.') {
                        lex_chain(src, i, start)?
                    } else {
                        (Vec::new(), i)
                    };
                    i = j;
                    Tok::Var(name, chain)
                }
                b'"' => {
                    let (s, j) = lex_quoted(src, i)?;
                    i = j;
                    Tok::Str(s)
                }
                b'`' => {
                    let Some(end) = src[i + 1..].find('`') else {
                        return Err(terr(i, "unterminated raw quoted string"));
                    };
                    let s = &src[i + 1..i + 1 + end];
                    if s.contains('\r') {
                        return Err(terr(i, "carriage return in raw string is not supported"));
                    }
                    i += end + 2;
                    Tok::Str(s.to_string())
                }
                b'-' | b'+' | b'0'..=b'9' => {
                    let mut j = i + 1;
                    while j < b.len()
                        && (b[j].is_ascii_alphanumeric() || matches!(b[j], b'_' | b'.'))
                    {
                        j += 1;
                    }
                    let text = &src[i..j];
                    let digits = text.trim_start_matches(['-', '+']);
                    let plain = text.len() - digits.len() <= 1
                        && !digits.is_empty()
                        && digits.bytes().all(|d| d.is_ascii_digit())
                        && (digits == "0" || !digits.starts_with('0'));
                    let v = if plain {
                        text.parse::<i64>().ok()
                    } else {
                        None
                    };
                    let Some(v) = v else {
                        // Go's other number forms (octal, hex, floats, `1_000`)
                        // are refused; anything else is no number at all.
                        let go_number = digits.starts_with(|c: char| c.is_ascii_digit());
                        let why = if go_number {
                            "unsupported number (only decimal integers)"
                        } else {
                            "bad number syntax"
                        };
                        return Err(terr(i, format!("{why}: {text:?}")));
                    };
                    i = j;
                    Tok::Int(v)
                }
                c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                    let j = ident_end(src, i);
                    if j == i {
                        return Err(terr(i, "unexpected character in action"));
                    }
                    let name = src[i..j].to_string();
                    i = j;
                    if b.get(i) == Some(&b'.') {
                        return Err(terr(start, format!("unexpected '.' after {name:?}")));
                    }
                    Tok::Ident(name)
                }
                b'\'' => return Err(terr(i, "character constants are not supported")),
                _ => return Err(terr(i, "unexpected character in action")),
            };
            toks.push((tok, start));
        }
        items.push(Item::Action(toks, open));
    }
    Ok(items)
}

fn ident_end(src: &str, mut i: usize) -> usize {
    for c in src[i..].chars() {
        if c.is_alphanumeric() || c == '_' {
            i += c.len_utf8();
        } else {
            break;
        }
    }
    i
}

/// `.a.b.c` (or lone `.`) starting at `i`.
fn lex_chain(src: &str, mut i: usize, start: usize) -> Result<(Vec<String>, usize), TemplateError> {
    let b = src.as_bytes();
    let mut chain = Vec::new();
    while b.get(i) == Some(&b'.') {
        let j = ident_end(src, i + 1);
        if j == i + 1 {
            if chain.is_empty() && !src[j..].starts_with('.') {
                return Ok((chain, j));
            }
            return Err(terr(start, "bad field name"));
        }
        chain.push(src[i + 1..j].to_string());
        i = j;
    }
    if b.get(i)
        .is_some_and(|&c| c == b'(' || c == b'"' || c == b'$')
    {
        return Err(terr(start, "unexpected character after field"));
    }
    Ok((chain, i))
}

/// A Go double-quoted string at `i`; returns the value and the end offset.
fn lex_quoted(src: &str, i: usize) -> Result<(String, usize), TemplateError> {
    let mut out = String::new();
    let mut it = src[i + 1..].char_indices();
    let bad = |at: usize| terr(i + 1 + at, "bad escape in string");
    while let Some((k, c)) = it.next() {
        match c {
            '"' => return Ok((out, i + 1 + k + 1)),
            '\n' => break,
            '\\' => {
                let Some((k2, e)) = it.next() else { break };
                let hex = |it: &mut std::str::CharIndices, n: usize| -> Option<u32> {
                    let mut v = 0u32;
                    for _ in 0..n {
                        v = v * 16 + it.next()?.1.to_digit(16)?;
                    }
                    Some(v)
                };
                let ch = match e {
                    'a' => '\x07',
                    'b' => '\x08',
                    'f' => '\x0c',
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    'v' => '\x0b',
                    '\\' => '\\',
                    '"' => '"',
                    'x' => hex(&mut it, 2)
                        .filter(|&v| v < 0x80)
                        .and_then(char::from_u32)
                        .ok_or_else(|| bad(k2))?,
                    'u' => hex(&mut it, 4)
                        .and_then(char::from_u32)
                        .ok_or_else(|| bad(k2))?,
                    'U' => hex(&mut it, 8)
                        .and_then(char::from_u32)
                        .ok_or_else(|| bad(k2))?,
                    '0'..='7' => {
                        let mut v = e.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            v = v * 8
                                + it.next()
                                    .and_then(|(_, d)| d.to_digit(8))
                                    .ok_or_else(|| bad(k2))?;
                        }
                        char::from_u32(v)
                            .filter(|_| v < 0x80)
                            .ok_or_else(|| bad(k2))?
                    }
                    _ => return Err(bad(k2)),
                };
                out.push(ch);
            }
            c => out.push(c),
        }
    }
    Err(terr(i, "unterminated quoted string"))
}

/// Go's other template functions are refused as unsupported; other names
/// (sprig's among them) are not defined here at all.
fn unknown_function(name: &str, at: usize) -> TemplateError {
    const GO_OTHERS: &[&str] = &[
        "call", "html", "slice", "js", "print", "printf", "println", "urlquery",
    ];
    let what = if GO_OTHERS.contains(&name) {
        "is not supported in node rules"
    } else {
        "not defined"
    };
    terr(
        at,
        format!(
            "function {name:?} {what} (node rules have len, index, not, and, or, eq, ne, lt, le, gt, ge)"
        ),
    )
}

// ---- parser ----

struct Parser {
    items: std::vec::IntoIter<Item>,
    /// Variables in scope (for "undefined variable" at parse time, as Go).
    vars: Vec<String>,
    /// Range bodies we are in (`{{break}}` needs one, as in Go).
    ranges: usize,
}

/// How a block's item list ended.
enum Stop {
    Eof,
    End(usize),
    Else(usize),
    ElseIf(Pipe, usize),
}

pub fn parse(src: &str) -> Result<Template, TemplateError> {
    if src.len() > MAX_SOURCE {
        return Err(terr(0, format!("template larger than {MAX_SOURCE} bytes")));
    }
    let mut p = Parser {
        items: lex(src)?.into_iter(),
        vars: vec!["$".into()],
        ranges: 0,
    };
    let (nodes, end) = p.list(0)?;
    match end {
        Stop::Eof => Ok(Template { nodes }),
        Stop::End(at) => Err(terr(at, "unexpected {{end}}")),
        Stop::Else(at) | Stop::ElseIf(_, at) => Err(terr(at, "unexpected {{else}}")),
    }
}

impl Parser {
    fn list(&mut self, depth: usize) -> Result<(Vec<Node>, Stop), TemplateError> {
        let mut nodes = Vec::new();
        while let Some(item) = self.items.next() {
            let (toks, at) = match item {
                Item::Text(t) => {
                    nodes.push(Node::Text(t));
                    continue;
                }
                Item::Action(toks, at) => (toks, at),
            };
            let Some((first, _)) = toks.first() else {
                return Err(terr(at, "missing value for command"));
            };
            let kw = match first {
                Tok::Ident(k) => k.as_str(),
                _ => "",
            };
            match kw {
                "end" => {
                    if toks.len() > 1 {
                        return Err(terr(at, "unexpected tokens after end"));
                    }
                    return Ok((nodes, Stop::End(at)));
                }
                "else" => {
                    if toks.len() == 1 {
                        return Ok((nodes, Stop::Else(at)));
                    }
                    if toks[1].0 == Tok::Ident("if".into()) {
                        let pipe = self.pipe(&toks[2..], at, false)?;
                        return Ok((nodes, Stop::ElseIf(pipe, at)));
                    }
                    return Err(terr(
                        toks[1].1,
                        "only {{else}} and {{else if}} are supported",
                    ));
                }
                "if" | "range" => {
                    if depth >= MAX_DEPTH {
                        return Err(terr(at, format!("blocks nested deeper than {MAX_DEPTH}")));
                    }
                    let mark = self.vars.len();
                    let node = if kw == "if" {
                        self.if_rest(&toks[1..], at, depth)?
                    } else {
                        self.range_rest(&toks[1..], at, depth)?
                    };
                    self.vars.truncate(mark);
                    nodes.push(node);
                }
                "break" | "continue" => {
                    if toks.len() > 1 {
                        return Err(terr(toks[1].1, format!("unexpected token in {{{{{kw}}}}}")));
                    }
                    if self.ranges == 0 {
                        return Err(terr(at, format!("{{{{{kw}}}}} outside {{{{range}}}}")));
                    }
                    nodes.push(if kw == "break" {
                        Node::Break
                    } else {
                        Node::Continue
                    });
                }
                "with" | "define" | "template" | "block" => {
                    return Err(terr(
                        at,
                        format!("{{{{{kw}}}}} is not supported in node rules"),
                    ));
                }
                _ => {
                    let pipe = self.pipe(&toks, at, false)?;
                    nodes.push(Node::Action(pipe));
                }
            }
        }
        Ok((nodes, Stop::Eof))
    }

    fn if_rest(
        &mut self,
        toks: &[(Tok, usize)],
        at: usize,
        depth: usize,
    ) -> Result<Node, TemplateError> {
        let pipe = self.pipe(toks, at, false)?;
        let (then, end) = self.list(depth + 1)?;
        let otherwise = match end {
            Stop::Eof => return Err(terr(at, "unexpected EOF: missing {{end}}")),
            Stop::End(_) => Vec::new(),
            Stop::Else(_) => self.expect_end(at, depth)?,
            Stop::ElseIf(pipe2, at2) => {
                // `{{else if}}` is an `if` nested in the else branch, sharing the `{{end}}`.
                let (then2, end2) = self.list(depth + 1)?;
                let rest = self.else_chain(end2, at2, depth)?;
                vec![Node::If {
                    pipe: pipe2,
                    then: then2,
                    otherwise: rest,
                }]
            }
        };
        Ok(Node::If {
            pipe,
            then,
            otherwise,
        })
    }

    fn else_chain(
        &mut self,
        end: Stop,
        at: usize,
        depth: usize,
    ) -> Result<Vec<Node>, TemplateError> {
        match end {
            Stop::Eof => Err(terr(at, "unexpected EOF: missing {{end}}")),
            Stop::End(_) => Ok(Vec::new()),
            Stop::Else(_) => self.expect_end(at, depth),
            Stop::ElseIf(pipe, at2) => {
                if depth >= MAX_DEPTH {
                    return Err(terr(at2, format!("blocks nested deeper than {MAX_DEPTH}")));
                }
                let (then, end2) = self.list(depth + 1)?;
                let otherwise = self.else_chain(end2, at2, depth + 1)?;
                Ok(vec![Node::If {
                    pipe,
                    then,
                    otherwise,
                }])
            }
        }
    }

    fn expect_end(&mut self, at: usize, depth: usize) -> Result<Vec<Node>, TemplateError> {
        let (nodes, end) = self.list(depth + 1)?;
        match end {
            Stop::End(_) => Ok(nodes),
            Stop::Eof => Err(terr(at, "unexpected EOF: missing {{end}}")),
            Stop::Else(a) | Stop::ElseIf(_, a) => Err(terr(a, "expected {{end}}, found {{else}}")),
        }
    }

    fn range_rest(
        &mut self,
        toks: &[(Tok, usize)],
        at: usize,
        depth: usize,
    ) -> Result<Node, TemplateError> {
        let pipe = self.pipe(toks, at, true)?;
        self.ranges += 1;
        let listed = self.list(depth + 1);
        self.ranges -= 1;
        let (body, end) = listed?;
        let otherwise = match end {
            Stop::Eof => return Err(terr(at, "unexpected EOF: missing {{end}}")),
            Stop::End(_) => Vec::new(),
            Stop::Else(_) => self.expect_end(at, depth)?,
            Stop::ElseIf(_, a) => return Err(terr(a, "{{else if}} inside {{range}}")),
        };
        Ok(Node::Range {
            pipe,
            body,
            otherwise,
        })
    }

    /// A pipeline: optional `$x :=` (or `$i, $e :=` in range), then commands.
    fn pipe(
        &mut self,
        toks: &[(Tok, usize)],
        at: usize,
        in_range: bool,
    ) -> Result<Pipe, TemplateError> {
        let mut toks = toks;
        let mut vars = Vec::new();
        let mut assign = false;
        // Look for a declaration prefix.
        let decl_len = match toks {
            [(Tok::Var(a, c), _), (Tok::Declare | Tok::Assign, _), ..] if c.is_empty() => {
                vars.push(a.clone());
                assign = matches!(toks[1].0, Tok::Assign);
                2
            }
            [
                (Tok::Var(a, c1), _),
                (Tok::Comma, _),
                (Tok::Var(b, c2), _),
                (Tok::Declare | Tok::Assign, _),
                ..,
            ] if in_range && c1.is_empty() && c2.is_empty() => {
                vars.push(a.clone());
                vars.push(b.clone());
                assign = matches!(toks[3].0, Tok::Assign);
                4
            }
            _ => 0,
        };
        toks = &toks[decl_len..];
        // Go declares the variables before parsing the commands (so
        // `$x := $x` parses, and fails only when run); assigning to an
        // undefined variable fails only when run.
        if !assign {
            self.vars.extend(vars.iter().cloned());
        }
        let cmds = self.commands(toks, at, 0)?;
        Ok(Pipe { vars, assign, cmds })
    }

    fn commands(
        &mut self,
        toks: &[(Tok, usize)],
        at: usize,
        depth: usize,
    ) -> Result<Vec<Cmd>, TemplateError> {
        if depth > MAX_DEPTH {
            return Err(terr(at, "parentheses nested too deep"));
        }
        let mut cmds = Vec::new();
        let mut i = 0;
        loop {
            let start = i;
            let mut operands: Vec<(Operand, usize)> = Vec::new();
            let mut func = None;
            while i < toks.len() && toks[i].0 != Tok::Pipe {
                let (tok, off) = &toks[i];
                let op = match tok {
                    Tok::Ident(name) if i == start && FUNCS.iter().any(|p| p.0 == name) => {
                        func = FUNCS.iter().find(|p| p.0 == name).map(|p| p.1);
                        i += 1;
                        continue;
                    }
                    Tok::Ident(name) if name == "true" || name == "false" => {
                        Operand::Bool(name == "true")
                    }
                    Tok::Ident(name) if name == "nil" => {
                        return Err(terr(*off, "nil is not a command"));
                    }
                    Tok::Ident(name) => return Err(unknown_function(name, *off)),
                    Tok::Field(chain) => Operand::Field(chain.clone()),
                    Tok::Var(name, chain) => {
                        if !self.vars.contains(name) {
                            return Err(terr(*off, format!("undefined variable {name:?}")));
                        }
                        Operand::Var(name.clone(), chain.clone())
                    }
                    Tok::Str(s) => Operand::Str(s.clone()),
                    Tok::Int(v) => Operand::Int(*v),
                    Tok::LParen => {
                        let mut level = 0;
                        let mut j = i;
                        loop {
                            match toks.get(j).map(|t| &t.0) {
                                Some(Tok::LParen) => level += 1,
                                Some(Tok::RParen) => {
                                    level -= 1;
                                    if level == 0 {
                                        break;
                                    }
                                }
                                None => return Err(terr(*off, "unclosed left paren")),
                                _ => {}
                            }
                            j += 1;
                        }
                        let inner = &toks[i + 1..j];
                        if matches!(inner.get(1).map(|t| &t.0), Some(Tok::Declare | Tok::Assign)) {
                            return Err(terr(
                                *off,
                                "declaration inside parentheses is not supported",
                            ));
                        }
                        let cmds = self.commands(inner, *off, depth + 1)?;
                        i = j;
                        let mut chain = Vec::new();
                        if let Some((Tok::Field(c), f_at)) = toks.get(j + 1)
                            && *f_at == toks[j].1 + 1
                            && !c.is_empty()
                        {
                            chain = c.clone();
                            i += 1;
                        }
                        Operand::Paren(
                            Box::new(Pipe {
                                vars: Vec::new(),
                                assign: false,
                                cmds,
                            }),
                            chain,
                        )
                    }
                    Tok::RParen => return Err(terr(*off, "unexpected right paren")),
                    Tok::Declare | Tok::Assign | Tok::Comma => {
                        return Err(terr(*off, "unexpected declaration or comma"));
                    }
                    Tok::Pipe => unreachable!(),
                };
                operands.push((op, *off));
                i += 1;
            }
            let cmd_at = toks.get(start).map(|t| t.1).unwrap_or(at);
            let piped = !cmds.is_empty();
            let cmd = match func {
                Some(f) => Cmd::Call(f, operands.into_iter().map(|o| o.0).collect()),
                None => {
                    if piped {
                        return Err(terr(cmd_at, "only a function may follow |"));
                    }
                    if operands.len() != 1 {
                        let msg = if operands.is_empty() {
                            "missing value for command"
                        } else {
                            "can't give argument to non-function"
                        };
                        return Err(terr(cmd_at, msg));
                    }
                    Cmd::Operand(operands.pop().unwrap().0)
                }
            };
            cmds.push(cmd);
            if i >= toks.len() {
                break;
            }
            i += 1; // `|`
            if i >= toks.len() {
                return Err(terr(toks[i - 1].1, "missing command after |"));
            }
        }
        Ok(cmds)
    }
}

// ---- execution ----

#[derive(Debug, Clone)]
enum Value<'d> {
    Str(Cow<'d, str>),
    Int(i64),
    Bool(bool),
    Root(&'d Data),
    Domain(&'d SortedMap<String, Vec<Element>>),
    List(&'d [Element]),
    Elem(&'d Element),
    /// What `index` gives for a missing feature: NFD types that level
    /// `interface{}`, so Go yields an invalid value.
    Nil,
}

impl Value<'_> {
    fn truth(&self) -> bool {
        match self {
            Value::Str(s) => !s.is_empty(),
            Value::Int(i) => *i != 0,
            Value::Bool(b) => *b,
            Value::Root(m) => !m.is_empty(),
            Value::Domain(m) => !m.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Elem(m) => !m.is_empty(),
            Value::Nil => false,
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Int(_) => "int",
            Value::Bool(_) => "bool",
            Value::List(_) => "list",
            Value::Nil => "<nil>",
            _ => "map",
        }
    }
}

struct Exec<'d> {
    vars: Vec<(&'d str, Value<'d>)>,
    out: String,
    steps: usize,
    /// Bytes compared by `eq`…`ge` (capped like steps).
    compared: usize,
    /// Budget units left (see `super::budget`).
    left: u64,
}

/// Why a run stopped: the template failed (NFD skips the rule), or the
/// evaluation budget ran out (the caller falls back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    Failed(String),
    Budget,
}

impl From<String> for RunError {
    fn from(why: String) -> RunError {
        RunError::Failed(why)
    }
}

impl From<&str> for RunError {
    fn from(why: &str) -> RunError {
        RunError::Failed(why.to_string())
    }
}

type ExecResult<T> = Result<T, RunError>;

/// How a node list ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Next,
    Break,
    Continue,
}

/// Budget units per output byte: the output, its lines, the map of pairs.
pub const OUTPUT_BYTE: u64 = 3;
/// Budget units per `key=value` pair of `expand_map`.
pub const OUTPUT_PAIR: u64 = 8;

impl Template {
    /// Run the template; `Err` says what failed (NFD then skips the rule).
    pub fn execute(&self, data: &Data) -> Result<String, String> {
        let mut left = u64::MAX;
        self.execute_within(data, &mut left).map_err(|e| match e {
            RunError::Failed(why) => why,
            RunError::Budget => "out of budget".to_string(),
        })
    }

    /// `execute` spending at most `left` budget units (lowered by what it
    /// spent): a template step `budget::TEMPLATE_STEP`, an output byte
    /// `OUTPUT_BYTE`, a compared byte one.
    pub fn execute_within(&self, data: &Data, left: &mut u64) -> Result<String, RunError> {
        let root = Value::Root(data);
        let mut ex = Exec {
            vars: vec![("$", root.clone())],
            out: String::new(),
            steps: 0,
            compared: 0,
            left: *left,
        };
        let r = ex.walk(&self.nodes, &root);
        *left = ex.left;
        r?;
        Ok(ex.out)
    }

    /// NFD's `ExpandMap`: output lines trimmed, empty ones skipped, each
    /// `key=value` (split at the first `=`); later keys win. Sorted by key.
    pub fn expand_map(&self, data: &Data) -> Result<Vec<(String, String)>, String> {
        let mut left = u64::MAX;
        self.expand_map_within(data, &mut left)
            .map_err(|e| match e {
                RunError::Failed(why) => why,
                RunError::Budget => "out of budget".to_string(),
            })
    }

    /// `expand_map` within a budget (see `execute_within`).
    pub fn expand_map_within(
        &self,
        data: &Data,
        left: &mut u64,
    ) -> Result<Vec<(String, String)>, RunError> {
        let out = self.execute_within(data, left)?;
        let mut map = SortedMap::new();
        for line in out.split('\n') {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                return Err(RunError::Failed(format!(
                    "missing value in expanded template line {line:?}, (format must be '<key>=<value>')"
                )));
            };
            *left = left.checked_sub(OUTPUT_PAIR).ok_or(RunError::Budget)?;
            map.insert(k.to_string(), v.to_string());
        }
        Ok(map.into_iter().collect())
    }
}

impl<'d> Exec<'d> {
    fn charge(&mut self, units: u64) -> ExecResult<()> {
        self.left = self.left.checked_sub(units).ok_or(RunError::Budget)?;
        Ok(())
    }

    fn step(&mut self) -> ExecResult<()> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(format!("template ran more than {MAX_STEPS} steps").into());
        }
        self.charge(super::budget::TEMPLATE_STEP)
    }

    /// Append to the output; refused before it would pass `MAX_OUTPUT`.
    fn emit(&mut self, s: &str) -> ExecResult<()> {
        if self.out.len() + s.len() > MAX_OUTPUT {
            return Err(format!("template output larger than {MAX_OUTPUT} bytes").into());
        }
        self.charge(OUTPUT_BYTE * s.len() as u64)?;
        self.out.push_str(s);
        Ok(())
    }

    /// Go's `%v` formatting, into the output.
    fn print(&mut self, v: &Value<'_>) -> ExecResult<()> {
        match v {
            Value::Str(s) => self.emit(s),
            Value::Nil => self.emit("<no value>"),
            Value::Int(i) => self.emit(&i.to_string()),
            Value::Bool(b) => self.emit(if *b { "true" } else { "false" }),
            Value::Root(m) => {
                self.emit("map[")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    self.map_key(i, k)?;
                    self.print(&Value::Domain(v))?;
                }
                self.emit("]")
            }
            Value::Domain(m) => {
                self.emit("map[")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    self.map_key(i, k)?;
                    self.print(&Value::List(v))?;
                }
                self.emit("]")
            }
            Value::Elem(m) => {
                self.emit("map[")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    self.map_key(i, k)?;
                    self.emit(v)?;
                }
                self.emit("]")
            }
            Value::List(l) => {
                self.emit("[")?;
                for (i, e) in l.iter().enumerate() {
                    if i > 0 {
                        self.emit(" ")?;
                    }
                    self.print(&Value::Elem(e))?;
                }
                self.emit("]")
            }
        }
    }

    fn map_key(&mut self, i: usize, k: &str) -> ExecResult<()> {
        if i > 0 {
            self.emit(" ")?;
        }
        self.emit(k)?;
        self.emit(":")
    }

    /// Run `nodes`; a `{{break}}` or `{{continue}}` stops the list and is
    /// handed up to the range it belongs to.
    fn walk(&mut self, nodes: &'d [Node], dot: &Value<'d>) -> ExecResult<Flow> {
        for node in nodes {
            self.step()?;
            match node {
                Node::Text(t) => self.emit(t)?,
                Node::Action(pipe) => {
                    let v = self.pipe(pipe, dot)?;
                    if pipe.vars.is_empty() {
                        self.print(&v)?;
                    }
                }
                Node::Break => return Ok(Flow::Break),
                Node::Continue => return Ok(Flow::Continue),
                Node::If {
                    pipe,
                    then,
                    otherwise,
                } => {
                    let mark = self.vars.len();
                    let v = self.pipe(pipe, dot)?;
                    let r = self.walk(if v.truth() { then } else { otherwise }, dot);
                    self.vars.truncate(mark);
                    let flow = r?;
                    if flow != Flow::Next {
                        return Ok(flow);
                    }
                }
                Node::Range {
                    pipe,
                    body,
                    otherwise,
                } => {
                    let mark = self.vars.len();
                    let r = self.range(pipe, body, otherwise, dot);
                    self.vars.truncate(mark);
                    // Go: a break ends the innermost range being walked,
                    // its else list included; a continue there goes up.
                    if r? == Flow::Continue {
                        return Ok(Flow::Continue);
                    }
                }
            }
        }
        Ok(Flow::Next)
    }

    /// Go's range, one item at a time (nothing collected: `range N`
    /// allocates nothing per iteration).
    fn range(
        &mut self,
        pipe: &'d Pipe,
        body: &'d [Node],
        otherwise: &'d [Node],
        dot: &Value<'d>,
    ) -> ExecResult<Flow> {
        let v = self.eval_cmds(&pipe.cmds, dot)?;
        let mut any = false;
        match v {
            Value::List(l) => {
                for (i, e) in l.iter().enumerate() {
                    any = true;
                    if self.iteration(pipe, body, Value::Int(i as i64), Value::Elem(e))? {
                        break;
                    }
                }
            }
            Value::Root(m) => {
                for (k, v) in m.iter() {
                    any = true;
                    let (k, v) = (Value::Str(Cow::Borrowed(k)), Value::Domain(v));
                    if self.iteration(pipe, body, k, v)? {
                        break;
                    }
                }
            }
            Value::Domain(m) => {
                for (k, v) in m.iter() {
                    any = true;
                    let (k, v) = (Value::Str(Cow::Borrowed(k)), Value::List(v));
                    if self.iteration(pipe, body, k, v)? {
                        break;
                    }
                }
            }
            Value::Elem(m) => {
                for (k, v) in m.iter() {
                    any = true;
                    let (k, v) = (Value::Str(Cow::Borrowed(k)), Value::Str(Cow::Borrowed(v)));
                    if self.iteration(pipe, body, k, v)? {
                        break;
                    }
                }
            }
            // Go >= 1.22: 0..n, one variable at most (the element).
            Value::Int(n) => {
                if pipe.vars.len() > 1 {
                    return Err(
                        format!("can't use {n} to iterate over more than one variable").into(),
                    );
                }
                if n > MAX_STEPS as i64 {
                    return Err(format!("template ran more than {MAX_STEPS} steps").into());
                }
                for i in 0..n.max(0) {
                    any = true;
                    if self.iteration(pipe, body, Value::Nil, Value::Int(i))? {
                        break;
                    }
                }
            }
            Value::Nil => {}
            other => {
                return Err(format!("range can't iterate over {}", other.type_name()).into());
            }
        }
        if !any {
            return self.walk(otherwise, dot);
        }
        Ok(Flow::Next)
    }

    /// One pass of a range body; true on `{{break}}`.
    fn iteration(
        &mut self,
        pipe: &'d Pipe,
        body: &'d [Node],
        k: Value<'d>,
        v: Value<'d>,
    ) -> ExecResult<bool> {
        self.step()?;
        match pipe.vars.as_slice() {
            [] => {}
            [e] => self.set(e, v.clone(), pipe.assign)?,
            [i, e] => {
                self.set(i, k, pipe.assign)?;
                self.set(e, v.clone(), pipe.assign)?;
            }
            _ => {}
        }
        let iter_mark = self.vars.len();
        let r = self.walk(body, &v);
        self.vars.truncate(iter_mark);
        Ok(r? == Flow::Break)
    }

    fn set(&mut self, name: &'d str, v: Value<'d>, assign: bool) -> ExecResult<()> {
        if assign {
            let slot = self.vars.iter_mut().rev().find(|(n, _)| *n == name);
            let slot = slot.ok_or_else(|| format!("undefined variable: {name}"))?;
            slot.1 = v;
        } else {
            self.vars.push((name, v));
        }
        Ok(())
    }

    fn pipe(&mut self, pipe: &'d Pipe, dot: &Value<'d>) -> ExecResult<Value<'d>> {
        let v = self.eval_cmds(&pipe.cmds, dot)?;
        if let Some(name) = pipe.vars.first() {
            self.set(name, v.clone(), pipe.assign)?;
        }
        Ok(v)
    }

    fn eval_cmds(&mut self, cmds: &'d [Cmd], dot: &Value<'d>) -> ExecResult<Value<'d>> {
        let mut prev: Option<Value<'d>> = None;
        for cmd in cmds {
            self.step()?;
            prev = Some(match cmd {
                Cmd::Operand(op) => self.operand(op, dot)?,
                Cmd::Call(f, args) => {
                    let piped = prev.take();
                    let n = args.len() + piped.is_some() as usize;
                    // Go checks the count only when it calls (an unrun
                    // branch may hold a wrong one).
                    let (want, exact) = match f {
                        Func::Len | Func::Not => (1, true),
                        Func::Ne | Func::Lt | Func::Le | Func::Gt | Func::Ge => (2, true),
                        _ => (1, false),
                    };
                    if n < want || (exact && n > want) {
                        let least = if exact { "" } else { "at least " };
                        let name = FUNCS.iter().find(|p| p.1 == *f).map_or("", |p| p.0);
                        return Err(format!(
                            "wrong number of args for {name}: want {least}{want} got {n}"
                        )
                        .into());
                    }
                    let arg = |ex: &mut Self, k: usize| match args.get(k) {
                        Some(op) => ex.operand(op, dot),
                        None => piped
                            .clone()
                            .ok_or_else(|| RunError::from("missing argument")),
                    };
                    if matches!(f, Func::And | Func::Or) {
                        // Go ≥ 1.18: stop at the first false (and) or true
                        // (or) argument and yield it, else the last one.
                        let mut v = arg(self, 0)?;
                        for k in 1..n {
                            if v.truth() != (*f == Func::And) {
                                break;
                            }
                            v = arg(self, k)?;
                        }
                        v
                    } else {
                        let mut vals = Vec::with_capacity(n);
                        for k in 0..n {
                            vals.push(arg(self, k)?);
                        }
                        if !matches!(f, Func::Len | Func::Index | Func::Not) {
                            self.compare_cost(&vals)?;
                        }
                        call(*f, vals)?
                    }
                }
            });
        }
        prev.ok_or_else(|| "empty pipeline".into())
    }

    /// What comparing the first value with each other costs (bytes of the
    /// shorter string), capped per run like steps.
    fn compare_cost(&mut self, vals: &[Value<'d>]) -> ExecResult<()> {
        let Some((Value::Str(a), rest)) = vals.split_first() else {
            return Ok(());
        };
        let mut bytes = 0;
        for b in rest {
            if let Value::Str(b) = b {
                bytes += a.len().min(b.len());
            }
        }
        self.compared += bytes;
        if self.compared > MAX_COMPARED {
            return Err(format!("template compared more than {MAX_COMPARED} bytes").into());
        }
        self.charge(bytes as u64)
    }

    fn operand(&mut self, op: &'d Operand, dot: &Value<'d>) -> ExecResult<Value<'d>> {
        Ok(match op {
            Operand::Field(chain) => fields(dot.clone(), chain)?,
            Operand::Var(name, chain) => {
                let v = self
                    .vars
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone());
                fields(
                    v.ok_or_else(|| format!("undefined variable {name}"))?,
                    chain,
                )?
            }
            Operand::Str(s) => Value::Str(Cow::Borrowed(s)),
            Operand::Int(i) => Value::Int(*i),
            Operand::Bool(b) => Value::Bool(*b),
            Operand::Paren(p, chain) => fields(self.eval_cmds(&p.cmds, dot)?, chain)?,
        })
    }
}

fn call(f: Func, vals: Vec<Value<'_>>) -> Result<Value<'_>, String> {
    let mut it = vals.into_iter();
    let a = it.next().ok_or("missing argument")?;
    Ok(match f {
        Func::Len => Value::Int(match a {
            Value::Str(s) => s.len(),
            Value::List(l) => l.len(),
            Value::Root(m) => m.len(),
            Value::Domain(m) => m.len(),
            Value::Elem(m) => m.len(),
            other => return Err(format!("len of type {}", other.type_name())),
        } as i64),
        Func::Not => Value::Bool(!a.truth()),
        Func::Index => {
            let mut item = a;
            for i in it {
                item = index(item, i)?;
            }
            item
        }
        Func::Eq => {
            let mut any = false;
            let mut rest = it.peekable();
            if rest.peek().is_none() {
                return Err("missing argument for comparison".into());
            }
            for b in rest {
                if equal(&a, &b)? {
                    any = true;
                    break;
                }
            }
            Value::Bool(any)
        }
        _ => {
            let b = it.next().ok_or("missing argument")?;
            if f == Func::Ne {
                return Ok(Value::Bool(!equal(&a, &b)?));
            }
            let lt = less(&a, &b)?;
            Value::Bool(match f {
                Func::Lt => lt,
                Func::Le => lt || equal(&a, &b)?,
                Func::Gt => !(lt || equal(&a, &b)?),
                _ => !lt,
            })
        }
    })
}

/// Go's basic kinds for comparison; maps and lists have none.
fn kinds<'a>(a: &'a Value<'_>, b: &'a Value<'_>) -> Result<(&'a Value<'a>, &'a Value<'a>), String> {
    let basic = |v: &Value| matches!(v, Value::Str(_) | Value::Int(_) | Value::Bool(_));
    if !basic(a) || !basic(b) {
        return Err("invalid type for comparison".into());
    }
    if std::mem::discriminant(a) != std::mem::discriminant(b) {
        return Err("incompatible types for comparison".into());
    }
    Ok((a, b))
}

fn equal(a: &Value<'_>, b: &Value<'_>) -> Result<bool, String> {
    // Go: an invalid value differs from any basic value without error.
    if matches!(a, Value::Nil) != matches!(b, Value::Nil) {
        return Ok(false);
    }
    Ok(match kinds(a, b)? {
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        _ => false,
    })
}

fn less(a: &Value<'_>, b: &Value<'_>) -> Result<bool, String> {
    match kinds(a, b)? {
        (Value::Str(x), Value::Str(y)) => Ok(x < y),
        (Value::Int(x), Value::Int(y)) => Ok(x < y),
        _ => Err("invalid type for comparison".into()),
    }
}

static NO_DOMAIN: SortedMap<String, Vec<Element>> = SortedMap::new();

/// Go's `index` on one key: a missing map key gives the element type's
/// zero value; a slice or string index must be in range.
fn index<'d>(item: Value<'d>, i: Value<'_>) -> Result<Value<'d>, String> {
    let i_str = match &i {
        Value::Str(s) => Some(s.as_ref()),
        _ => None,
    };
    let key = |i: &Value| match i_str {
        Some(s) => Ok(s),
        None => Err(format!(
            "value has type {}; should be string",
            i.type_name()
        )),
    };
    let pos = |i: &Value, len: usize| match *i {
        Value::Int(x) if x >= 0 && (x as u64) < len as u64 => Ok(x as usize),
        Value::Int(x) => Err(format!("index out of range: {x}")),
        ref other => Err(format!(
            "cannot index slice/array with type {}",
            other.type_name()
        )),
    };
    Ok(match item {
        Value::Root(m) => Value::Domain(m.get(key(&i)?).unwrap_or(&NO_DOMAIN)),
        Value::Domain(m) => m.get(key(&i)?).map_or(Value::Nil, |v| Value::List(v)),
        Value::Elem(m) => Value::Str(
            m.get(key(&i)?)
                .map_or(Cow::Borrowed(""), |v| Cow::Borrowed(v)),
        ),
        Value::List(l) => Value::Elem(&l[pos(&i, l.len())?]),
        Value::Str(s) => {
            let b = s.as_bytes()[pos(&i, s.len())?];
            Value::Int(b as i64)
        }
        Value::Nil => return Err("index of nil pointer".into()),
        other => return Err(format!("can't index item of type {}", other.type_name())),
    })
}

/// Follow `.a.b` with `missingkey=error`.
fn fields<'d>(mut v: Value<'d>, chain: &[String]) -> Result<Value<'d>, String> {
    for f in chain {
        let missing = || format!("map has no entry for key {f:?}");
        v = match v {
            Value::Root(m) => Value::Domain(m.get(f).ok_or_else(missing)?),
            Value::Domain(m) => Value::List(m.get(f).ok_or_else(missing)?),
            Value::Elem(m) => Value::Str(Cow::Borrowed(m.get(f).ok_or_else(missing)?)),
            other => {
                return Err(format!(
                    "can't evaluate field {f} in type {}",
                    other.type_name()
                ));
            }
        };
    }
    Ok(v)
}

// ---- worst case (render's check of the budget, see `super::budget`) ----

/// What a template's data may hold, for `Template::worst_case`.
#[derive(Debug, Clone, Copy)]
pub struct DataBounds {
    /// Elements a range over a feature's list may walk.
    pub elements: Lin,
    /// Bytes of any one string of the data (and so any `len` of one).
    pub bytes: Lin,
}

/// A template run's worst case.
#[derive(Debug, Clone, Copy)]
pub struct RunCost {
    /// Budget units of one run.
    pub units: Lin,
    /// Output bytes of one run (at most `MAX_OUTPUT`).
    pub output: u64,
    /// Whether the steps could only be bounded by `MAX_STEPS` (ranges in
    /// ranges over data, or data compared with data in one).
    pub capped: bool,
}

use super::budget::{Lin, TEMPLATE_STEP};

impl Template {
    /// The most one run may cost (the units `execute_within` and
    /// `expand_map_within` count), on data within `bounds`.
    pub fn worst_case(&self, bounds: &DataBounds) -> RunCost {
        let (max_str, max_int) = literals(&self.nodes);
        let bounds = &DataBounds {
            elements: bounds.elements,
            // A variable may hold a literal string too.
            bytes: bounds.bytes.plus(Lin::c(max_str)),
        };
        // Integers are literals, lengths (of strings or lists) or bytes.
        let ints = bounds
            .elements
            .plus(bounds.bytes)
            .plus(Lin::c(max_int.max(255)));
        let w = Worst { bounds, ints };
        let output = match w.text(&self.nodes) {
            Some(l) if l.e == 0 => l.c.min(MAX_OUTPUT as u64),
            _ => MAX_OUTPUT as u64,
        };
        let out_units = OUTPUT_BYTE * output + OUTPUT_PAIR * (output / 2 + 1);
        let cap = Lin::c(MAX_STEPS as u64 * TEMPLATE_STEP + MAX_COMPARED as u64);
        let (steps, capped) = match w.nodes(&self.nodes) {
            Some(l) if l.e == 0 => (Lin::c(l.c.min(cap.c)), false),
            Some(l) => (l, false),
            None => (cap, true),
        };
        RunCost {
            units: steps.plus(Lin::c(out_units)),
            output,
            capped,
        }
    }
}

struct Worst<'b> {
    bounds: &'b DataBounds,
    /// The largest integer a range may be given.
    ints: Lin,
}

/// The longest string literal and the largest integer literal.
fn literals(nodes: &[Node]) -> (u64, u64) {
    fn operand(o: &Operand, m: &mut (u64, u64)) {
        match o {
            Operand::Str(s) => m.0 = m.0.max(s.len() as u64),
            Operand::Int(i) => m.1 = m.1.max(i.unsigned_abs()),
            Operand::Paren(p, _) => cmds(&p.cmds, m),
            _ => {}
        }
    }
    fn cmds(cs: &[Cmd], m: &mut (u64, u64)) {
        for c in cs {
            match c {
                Cmd::Operand(o) => operand(o, m),
                Cmd::Call(_, args) => args.iter().for_each(|a| operand(a, m)),
            }
        }
    }
    fn walk(nodes: &[Node], m: &mut (u64, u64)) {
        for n in nodes {
            match n {
                Node::Action(p) => cmds(&p.cmds, m),
                Node::If {
                    pipe,
                    then: a,
                    otherwise: b,
                }
                | Node::Range {
                    pipe,
                    body: a,
                    otherwise: b,
                } => {
                    cmds(&pipe.cmds, m);
                    walk(a, m);
                    walk(b, m);
                }
                _ => {}
            }
        }
    }
    let mut m = (0, 0);
    walk(nodes, &mut m);
    m
}

impl Worst<'_> {
    /// Steps and compared bytes of a node list, in units.
    fn nodes(&self, nodes: &[Node]) -> Option<Lin> {
        let mut sum = Lin::ZERO;
        for node in nodes {
            sum = sum.plus(Lin::c(TEMPLATE_STEP));
            sum = sum.plus(match node {
                Node::Text(_) | Node::Break | Node::Continue => Lin::ZERO,
                Node::Action(p) => self.cmds(&p.cmds)?,
                Node::If {
                    pipe,
                    then,
                    otherwise,
                } => self
                    .cmds(&pipe.cmds)?
                    .plus(self.nodes(then)?)
                    .plus(self.nodes(otherwise)?),
                Node::Range {
                    pipe,
                    body,
                    otherwise,
                } => {
                    let per = self.nodes(body)?.plus(Lin::c(TEMPLATE_STEP));
                    self.cmds(&pipe.cmds)?
                        .plus(self.iterations(pipe).product(per)?)
                        .plus(self.nodes(otherwise)?)
                }
            });
        }
        Some(sum)
    }

    /// How many times a range may run its body.
    fn iterations(&self, pipe: &Pipe) -> Lin {
        match pipe.cmds.as_slice() {
            [Cmd::Operand(Operand::Int(n))] => Lin::c((*n).max(0) as u64),
            // A feature's list or map, an element's attributes.
            [Cmd::Operand(Operand::Field(chain) | Operand::Var(_, chain))] if !chain.is_empty() => {
                self.bounds.elements
            }
            // Anything, an integer included: `len` of a string, an
            // integer literal, a byte.
            _ => self.ints,
        }
    }

    fn cmds(&self, cmds: &[Cmd]) -> Option<Lin> {
        let mut sum = Lin::ZERO;
        for (i, cmd) in cmds.iter().enumerate() {
            sum = sum.plus(Lin::c(TEMPLATE_STEP));
            match cmd {
                Cmd::Operand(o) => sum = sum.plus(self.operand(o)?),
                Cmd::Call(f, args) => {
                    for a in args {
                        sum = sum.plus(self.operand(a)?);
                    }
                    if !matches!(
                        f,
                        Func::Len | Func::Index | Func::Not | Func::And | Func::Or
                    ) {
                        // The first operand against each other one.
                        let piped = i > 0;
                        let mut ops: Vec<Option<&Operand>> = args.iter().map(Some).collect();
                        if piped {
                            ops.push(None);
                        }
                        let lit = |o: Option<&Operand>| match o {
                            Some(Operand::Str(s)) => Some(s.len() as u64),
                            Some(Operand::Int(_) | Operand::Bool(_)) => Some(0),
                            _ => None,
                        };
                        let first = ops.first().copied().flatten();
                        for other in ops.iter().skip(1) {
                            sum = sum.plus(match (lit(first), lit(*other)) {
                                (Some(a), Some(b)) => Lin::c(a.min(b)),
                                (Some(a), None) | (None, Some(a)) => Lin::c(a),
                                (None, None) => self.bounds.bytes,
                            });
                        }
                    }
                }
            }
        }
        Some(sum)
    }

    fn operand(&self, o: &Operand) -> Option<Lin> {
        match o {
            Operand::Paren(p, _) => self.cmds(&p.cmds),
            _ => Some(Lin::ZERO),
        }
    }

    /// Output bytes when only text is printed; None when data may be.
    fn text(&self, nodes: &[Node]) -> Option<Lin> {
        let mut sum = Lin::ZERO;
        for node in nodes {
            sum = sum.plus(match node {
                Node::Text(t) => Lin::c(t.len() as u64),
                Node::Break | Node::Continue => Lin::ZERO,
                Node::Action(p) if !p.vars.is_empty() => Lin::ZERO,
                Node::Action(_) => return None,
                Node::If {
                    then, otherwise, ..
                } => self.text(then)?.plus(self.text(otherwise)?),
                Node::Range {
                    pipe,
                    body,
                    otherwise,
                } => self
                    .iterations(pipe)
                    .product(self.text(body)?)?
                    .plus(self.text(otherwise)?),
            });
        }
        Some(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn el(pairs: &[(&str, &str)]) -> Element {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn data() -> Data {
        let mut d = Data::new();
        d.entry("pci".into()).or_default().insert(
            "device".into(),
            vec![
                el(&[("class", "0302"), ("vendor", "10de")]),
                el(&[("class", "0302"), ("vendor", "10de"), ("device", "2330")]),
            ],
        );
        d.entry("cpu".into()).or_default().insert(
            "cpuid".into(),
            vec![el(&[("Name", "AVX")]), el(&[("Name", "SSE4")])],
        );
        d
    }

    /// Parse, then run the tree as the wrapper gets it (wire form, decoded),
    /// which must equal and run as the parsed one.
    fn run(src: &str) -> Result<String, String> {
        let t = parse(src).map_err(|e| e.to_string())?;
        let decoded = Template::from_wire(&t.to_wire()).expect("wire form decodes");
        assert_eq!(decoded, t, "{src}");
        let out = decoded.execute(&data());
        assert_eq!(out, t.execute(&data()), "{src}");
        out
    }

    #[test]
    fn wire_form_refuses_what_is_not_a_tree() {
        let t = parse(
            "{{ range $i, $e := .pci.device }}{{ if and (gt (len $.pci.device) -1) (eq $e.class \"0300\" \"x\") }}\
             {{ (index $.pci.device 0).vendor }}{{ else if not true }}:{{ else }}{{ $i }}{{ end }}{{ end }}",
        )
        .unwrap();
        let wire = t.to_wire();
        assert_eq!(Template::from_wire(&wire), Some(t));
        // Every cut and every one-byte change gives a tree or None, never a panic.
        for i in 0..wire.len() {
            let _ = Template::from_wire(&wire[..i]);
            for b in [b'0', b'9', b':', b'a', b'P', b'f', b'z', b'-'] {
                let mut m = wire.clone().into_bytes();
                m[i] = b;
                if let Ok(m) = String::from_utf8(m) {
                    let _ = Template::from_wire(&m).map(|t| t.execute(&data()));
                }
            }
        }
        for bad in [
            "",
            "1:",
            "1:q",
            "1:t5:ab",
            "0:x",
            "1:fz0:",
            "1:aX",
            "1:a0:n1:oI99999999999999999999:",
        ] {
            assert_eq!(Template::from_wire(bad), None, "{bad}");
        }
        // Nesting past the decoder's bound (the executor recurses per level).
        let deep = "1:i0:n1:oT".repeat(MAX_WIRE_DEPTH + 2) + &"0:0:".repeat(MAX_WIRE_DEPTH + 2);
        assert_eq!(Template::from_wire(&deep), None);
        let parens = format!(
            "1:a0:n1:{}0:{}",
            "oP1:".repeat(MAX_WIRE_DEPTH + 2),
            "0:".repeat(MAX_WIRE_DEPTH + 2)
        );
        assert_eq!(Template::from_wire(&parens), None);
    }

    #[test]
    fn published_forms() {
        assert_eq!(
            run("{{ range .pci.device }}pci-{{ .class }}_{{ .vendor }}.present=true\n{{ end }}")
                .unwrap(),
            "pci-0302_10de.present=true\npci-0302_10de.present=true\n"
        );
        assert_eq!(
            run("gpu.count={{ len .pci.device }}").unwrap(),
            "gpu.count=2"
        );
        assert_eq!(run("n={{ .pci.device | len }}").unwrap(), "n=2");
        assert_eq!(
            run("{{ range $i, $e := .cpu.cpuid }}{{ $i }}={{ $e.Name }};{{ end }}").unwrap(),
            "0=AVX;1=SSE4;"
        );
        assert_eq!(
            run("{{- /* c */ -}}\n  a  {{- if .pci.device }} yes {{- else }}no{{ end -}}  \n")
                .unwrap(),
            "a yes"
        );
        assert_eq!(
            run("{{ if len .cpu.cpuid }}x{{ else if .pci }}y{{ else }}z{{ end }}").unwrap(),
            "x"
        );
        assert_eq!(
            run("{{ range .pci.nothing }}{{ else }}none{{ end }}").unwrap_err(),
            "map has no entry for key \"nothing\""
        );
        assert_eq!(
            run("{{ .cpu.cpuid }}").unwrap(),
            "[map[Name:AVX] map[Name:SSE4]]"
        );
        assert_eq!(
            run("{{ $x := 3 }}{{ $x }}{{ \"a\\tb\" }}{{ `r` }}{{ true }}").unwrap(),
            "3a\tbrtrue"
        );
    }

    /// Templates and patterns of published NodeFeatureRules, on the matched
    /// elements NFD would hand them, with NFD's output.
    #[test]
    fn published_rules() {
        let mut d = Data::new();
        let max1550 = el(&[("class", "0380"), ("vendor", "8086"), ("device", "0bd5")]);
        d.entry("pci".into())
            .or_default()
            .insert("device".into(), vec![max1550.clone(), max1550]);
        let expand = |src: &str| parse(src).unwrap().expand_map(&d).unwrap();
        let kv = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        // intel/intel-device-plugins-for-kubernetes:
        // deployments/nfd/overlays/node-feature-rules/platform-labeling-rules.yaml
        assert_eq!(
            expand(
                "{{ range .pci.device }}gpu.intel.com/device-id.{{ .class }}-{{ .device }}.present=true\n{{ end }}\n"
            ),
            kv("gpu.intel.com/device-id.0380-0bd5.present", "true")
        );
        assert_eq!(
            expand(
                "gpu.intel.com/device-id.0380-{{ (index .pci.device 0).device }}.count={{ len .pci.device }}"
            ),
            kv("gpu.intel.com/device-id.0380-0bd5.count", "2")
        );
        assert_eq!(
            expand("gpu.intel.com/device.count={{ len .pci.device }}"),
            kv("gpu.intel.com/device.count", "2")
        );
        // kubernetes-sigs/node-feature-discovery: docs/usage/customization-guide.md
        assert_eq!(
            expand(
                "{{ range .pci.device }}vendor-{{ .class }}-{{ .device }}.present=true\n{{ end }}\n"
            ),
            kv("vendor-0380-0bd5.present", "true")
        );
        // The counting forms published rules and examples/rules/gpu-classes.yaml use.
        assert_eq!(
            expand("{{ if gt (len .pci.device) 1 }}hardware.tier=multi-gpu{{ end }}"),
            kv("hardware.tier", "multi-gpu")
        );
        // InRegexp values: NFD's customization guide (`^02`, matchName
        // `^AVX`), NVIDIA GPU Operator OpenShift guides (`^03`), system.name
        // rules (`^gn-`, `^worker-[0-9]+$`).
        for (pat, yes, no) in [
            ("^02", "0200", "0302"),
            ("^03", "0302", "0200"),
            ("^AVX", "AVX512F", "SSE4"),
            ("^gn-", "gn-01", "cn-gn-01"),
            ("^worker-[0-9]+$", "worker-12", "worker-1a"),
        ] {
            let re = super::super::regex::Regex::new(pat).unwrap();
            assert!(re.is_match(yes) && !re.is_match(no), "{pat}");
        }
    }

    #[test]
    fn builtins_as_go() {
        for (src, want) in [
            ("{{ index .pci.device 1 \"device\" }}", Ok("2330")),
            ("{{ index .pci.device 2 }}", Err("index out of range: 2")),
            ("{{ index .pci.device -1 }}", Err("index out of range: -1")),
            ("{{ index . \"nope\" \"x\" }}", Ok("<no value>")),
            ("{{ index .pci \"nope\" }}", Ok("<no value>")),
            ("{{ index .pci \"nope\" 0 }}", Err("index of nil pointer")),
            ("{{ index .pci.device 0 \"nope\" }}", Ok("")),
            ("{{ index \"ab\" 1 }}", Ok("98")),
            (
                "{{ index .pci 0 }}",
                Err("value has type int; should be string"),
            ),
            (
                "{{ eq 1 2 3 1 }}{{ eq \"a\" \"b\" }}{{ ne true false }}",
                Ok("truefalsetrue"),
            ),
            ("{{ eq 1 \"1\" }}", Err("incompatible types for comparison")),
            ("{{ eq 1 1 .pci }}", Ok("true")),
            ("{{ lt true false }}", Err("invalid type for comparison")),
            (
                "{{ lt \"a\" \"b\" }}{{ le 2 2 }}{{ gt 1 2 }}{{ ge 2 2 }}",
                Ok("truetruefalsetrue"),
            ),
            (
                "{{ and 1 0 .nope }}{{ or 0 \"\" }}{{ or 0 \"x\" .nope }}{{ not .pci }}",
                Ok("0xfalse"),
            ),
            ("{{ 2 | lt 1 }}", Ok("true")),
        ] {
            assert_eq!(
                run(src).as_deref(),
                want.map_err(|e| e.to_string()).as_deref(),
                "{src}"
            );
        }
    }

    #[test]
    fn missing_keys_error() {
        assert!(run("{{ range .pci.device }}{{ .device }}{{ end }}").is_err());
        assert!(run("{{ .gpu.device }}").is_err());
        assert!(run("{{ .pci.device.vendor }}").is_err());
    }

    /// Go >= 1.22 ranges over an integer; Go 1.18's break and continue.
    #[test]
    fn range_over_int_break_continue() {
        let ok = |src: &str| run(src).unwrap();
        assert_eq!(ok("{{ range 3 }}{{ . }},{{ end }}"), "0,1,2,");
        assert_eq!(ok("{{ range $i := 2 }}s{{ $i }}{{ end }}"), "s0s1");
        assert_eq!(ok("{{ range -1 }}x{{ else }}none{{ end }}"), "none");
        assert_eq!(ok("{{ range 0 }}x{{ else }}none{{ end }}"), "none");
        assert_eq!(ok("{{ range len .pci.device }}{{ . }}{{ end }}"), "01");
        assert!(run("{{ range $i, $e := 2 }}{{ end }}").is_err());
        assert!(run("{{ range $i, $e := 0 }}{{ end }}").is_err());
        assert!(run("{{ range true }}{{ end }}").is_err());
        assert!(run("{{ range 1000000000000 }}{{ end }}").is_err());
        assert_eq!(
            ok(
                "{{ range 5 }}{{ if eq . 1 }}{{ continue }}{{ end }}{{ if eq . 3 }}{{ break }}{{ end }}{{ . }}{{ end }}"
            ),
            "02"
        );
        // A continue in an inner range's else list goes to the outer one;
        // a break there ends only the inner range.
        assert_eq!(
            ok("{{ range 2 }}a{{ range 0 }}{{ else }}{{ continue }}{{ end }}b{{ end }}"),
            "aa"
        );
        assert_eq!(
            ok("{{ range 2 }}a{{ range 0 }}{{ else }}{{ range 1 }}{{ end }}{{ end }}b{{ end }}"),
            "abab"
        );
        for bad in [
            "{{ break }}",
            "{{ range 1 }}{{ else }}{{ break }}{{ end }}",
            "{{ range 1 }}{{ break 1 }}{{ end }}",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let t = parse("{{ range 3 }}{{ if eq . 1 }}{{ break }}{{ end }}{{ continue }}{{ end }}")
            .unwrap();
        assert_eq!(Template::from_wire(&t.to_wire()), Some(t));
    }

    #[test]
    fn refusals_have_offsets() {
        for (src, off) in [
            ("ab{{ printf \"%d\" 1 }}", 5),
            ("{{ with .pci }}{{ end }}", 0),
            ("x\n{{ if .a }}", 2),
            ("{{ end }}", 0),
            ("{{ .a | .b }}", 8),
            ("{{ $x }}", 3),
            ("{{ 0x10 }}", 3),
            ("{{ slice .a }}", 3),
            ("{{ printf }}", 3),
            ("{{ lower .a }}", 3),
            ("{{ .a", 0),
        ] {
            let e = parse(src).expect_err(src);
            assert_eq!(e.offset, off, "{src}: {e}");
        }
        assert_eq!(line_col("x\n{{ if .a }}", 2), (2, 1));
    }

    #[test]
    fn expand_map_as_nfd() {
        let t = parse(" a=1\n\n b = 2 \nc=x=y\na=3").unwrap();
        assert_eq!(
            t.expand_map(&data()).unwrap(),
            vec![
                ("a".into(), "3".into()),
                ("b ".into(), " 2".into()),
                ("c".into(), "x=y".into())
            ]
        );
        assert!(parse("novalue").unwrap().expand_map(&data()).is_err());
    }

    #[test]
    fn bounded() {
        let mut d = Data::new();
        d.entry("a".into())
            .or_default()
            .insert("b".into(), vec![Element::new(); 400]);
        let t =
            parse("{{ range .a.b }}{{ range $.a.b }}{{ range $.a.b }}x{{ end }}{{ end }}{{ end }}")
                .unwrap();
        let e = t.execute(&d).unwrap_err();
        assert!(e.contains("larger than"), "{e}");
        let t =
            parse("{{ range .a.b }}{{ range $.a.b }}{{ range $.a.b }}{{ end }}{{ end }}{{ end }}")
                .unwrap();
        assert!(t.execute(&d).unwrap_err().contains("more than"));
    }

    /// `range N` collects nothing and a literal is not copied per step:
    /// what a run spends is counted, and stops at the budget given.
    #[test]
    fn runs_within_a_budget() {
        let t =
            parse("{{ range 30000 }}{{ $x := \"a long literal, not copied\" }}{{ end }}").unwrap();
        let mut left = u64::MAX;
        assert_eq!(t.execute_within(&data(), &mut left), Ok(String::new()));
        let spent = u64::MAX - left;
        let bounds = DataBounds {
            elements: Lin::ZERO,
            bytes: Lin::ZERO,
        };
        let worst = t.worst_case(&bounds);
        assert!(spent <= worst.units.at(0), "{spent} > {worst:?}");
        let mut left = spent / 2;
        assert_eq!(t.execute_within(&data(), &mut left), Err(RunError::Budget));
        // Output counts before it is made: the cap is never passed.
        let t = parse("{{ range 1000 }}{{ $ }}{{ end }}").unwrap();
        let e = t.execute(&data()).unwrap_err();
        assert!(e.contains("larger than"), "{e}");
    }
}
