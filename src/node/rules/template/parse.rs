//! The template lexer and parser: source text to the tree `exec` runs
//! (at render; the wrapper gets the parsed tree in its wire form).

use super::*;

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
