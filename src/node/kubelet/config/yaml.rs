//! The first document of a YAML stream as kubelet reads it: go-yaml v2's
//! scanner and parser (libyaml's token rules: simple keys, indentation,
//! flow levels, every scalar style, anchors, tags, directives), its decoder
//! into `interface{}` (YAML 1.1 scalar resolution, `<<` merge keys) and
//! sigs.k8s.io/yaml's conversion to JSON. A port of the rules, not of the
//! code: the names of go-yaml's functions are given where they apply.

use super::{ConfigError, Value, fail};

type Res<T> = Result<T, ConfigError>;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    StreamEnd,
    Version(u32, u32),
    TagDirective(String, String),
    DocStart,
    DocEnd,
    BlockSeqStart,
    BlockMapStart,
    BlockEnd,
    FlowSeqStart,
    FlowSeqEnd,
    FlowMapStart,
    FlowMapEnd,
    BlockEntry,
    FlowEntry,
    Key,
    Val,
    Alias(String),
    Anchor(String),
    Tag(String, String),
    /// text, plain?
    Scalar(String, bool),
}

#[derive(Clone, Copy, Default)]
struct SimpleKey {
    possible: bool,
    required: bool,
    token_number: usize,
    index: usize,
    line: usize,
    column: usize,
}

struct Scanner {
    c: Vec<char>,
    i: usize,
    line: usize,
    col: usize,
    tokens: std::collections::VecDeque<Tok>,
    parsed: usize,
    started: bool,
    ended: bool,
    indent: isize,
    indents: Vec<isize>,
    allowed: bool,
    keys: Vec<SimpleKey>,
    flow: usize,
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}
fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}
fn is_blankz(c: char) -> bool {
    is_blank(c) || is_break(c) || c == '\0'
}
fn is_alpha(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

const LIMIT: usize = 10_000;

impl Scanner {
    fn at(&self, k: usize) -> char {
        self.c.get(self.i + k).copied().unwrap_or('\0')
    }
    fn ch(&self) -> char {
        self.at(0)
    }
    fn skip(&mut self) {
        self.i += 1;
        self.col += 1;
    }
    /// One line break, normalized as go-yaml's read_line does.
    fn read_line(&mut self, out: &mut String) {
        let c = self.ch();
        if c == '\r' && self.at(1) == '\n' {
            out.push('\n');
            self.i += 2;
        } else if matches!(c, '\r' | '\n' | '\u{85}') {
            out.push('\n');
            self.i += 1;
        } else if is_break(c) {
            out.push(c);
            self.i += 1;
        } else {
            return;
        }
        self.line += 1;
        self.col = 0;
    }
    fn skip_line(&mut self) {
        let mut sink = String::new();
        self.read_line(&mut sink);
    }
    fn read(&mut self, out: &mut String) {
        out.push(self.ch());
        self.skip();
    }
    fn err<T>(&self, what: &str) -> Res<T> {
        fail(format!("YAML line {}: {what}", self.line + 1))
    }

    /// peek_token: go-yaml's fetch_more_tokens, then the head.
    fn peek(&mut self) -> Res<&Tok> {
        loop {
            if !self.tokens.is_empty() {
                let head = self
                    .keys
                    .iter()
                    .position(|k| k.possible && k.token_number == self.parsed);
                match head {
                    None => break,
                    Some(h) => {
                        if !self.key_valid(h)? {
                            break;
                        }
                    }
                }
            }
            self.fetch_next()?;
        }
        Ok(self.tokens.front().unwrap_or(&Tok::StreamEnd))
    }
    fn next(&mut self) -> Res<Tok> {
        self.peek()?;
        self.parsed += 1;
        Ok(self.tokens.pop_front().unwrap_or(Tok::StreamEnd))
    }

    fn key_valid(&mut self, k: usize) -> Res<bool> {
        let key = self.keys[k];
        if !key.possible {
            return Ok(false);
        }
        if key.line < self.line || key.index + 1024 < self.i {
            if key.required {
                return self.err("could not find expected ':'");
            }
            self.keys[k].possible = false;
            return Ok(false);
        }
        Ok(true)
    }
    fn save_key(&mut self) -> Res<()> {
        let required = self.flow == 0 && self.indent == self.col as isize;
        if self.allowed {
            let key = SimpleKey {
                possible: true,
                required,
                token_number: self.parsed + self.tokens.len(),
                index: self.i,
                line: self.line,
                column: self.col,
            };
            self.remove_key()?;
            if let Some(last) = self.keys.last_mut() {
                *last = key;
            }
        }
        Ok(())
    }
    fn remove_key(&mut self) -> Res<()> {
        if let Some(k) = self.keys.last_mut()
            && k.possible
        {
            if k.required {
                return self.err("could not find expected ':'");
            }
            k.possible = false;
        }
        Ok(())
    }
    fn insert(&mut self, number: Option<usize>, t: Tok) {
        match number {
            Some(n) => {
                let at = (n - self.parsed).min(self.tokens.len());
                self.tokens.insert(at, t);
            }
            None => self.tokens.push_back(t),
        }
    }
    fn roll_indent(&mut self, column: usize, number: Option<usize>, t: Tok) -> Res<()> {
        if self.flow > 0 {
            return Ok(());
        }
        if self.indent < column as isize {
            self.indents.push(self.indent);
            self.indent = column as isize;
            if self.indents.len() > LIMIT {
                return self.err("too deep");
            }
            self.insert(number, t);
        }
        Ok(())
    }
    fn unroll_indent(&mut self, column: isize) {
        if self.flow > 0 {
            return;
        }
        while self.indent > column {
            self.tokens.push_back(Tok::BlockEnd);
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    fn fetch_next(&mut self) -> Res<()> {
        if self.ended {
            return fail("YAML: read past the end");
        }
        if !self.started {
            self.started = true;
            self.indent = -1;
            self.keys.push(SimpleKey::default());
            self.allowed = true;
            return Ok(());
        }
        self.to_next_token();
        self.unroll_indent(self.col as isize);
        let c = self.ch();
        if c == '\0' && self.i >= self.c.len() {
            if self.col != 0 {
                self.col = 0;
                self.line += 1;
            }
            self.unroll_indent(-1);
            self.remove_key()?;
            self.allowed = false;
            self.ended = true;
            self.tokens.push_back(Tok::StreamEnd);
            return Ok(());
        }
        let three = |s: &Self, x: char| {
            s.col == 0 && s.at(0) == x && s.at(1) == x && s.at(2) == x && is_blankz(s.at(3))
        };
        if self.col == 0 && c == '%' {
            self.unroll_indent(-1);
            self.remove_key()?;
            self.allowed = false;
            let t = self.directive()?;
            self.tokens.push_back(t);
            return Ok(());
        }
        if three(self, '-') || three(self, '.') {
            self.unroll_indent(-1);
            self.remove_key()?;
            self.allowed = false;
            self.i += 3;
            self.col += 3;
            let t = if c == '-' { Tok::DocStart } else { Tok::DocEnd };
            self.tokens.push_back(t);
            return Ok(());
        }
        let next = self.at(1);
        match c {
            '[' | '{' => {
                self.save_key()?;
                self.keys.push(SimpleKey {
                    token_number: self.parsed + self.tokens.len(),
                    ..Default::default()
                });
                self.flow += 1;
                if self.flow > LIMIT {
                    return self.err("too deep");
                }
                self.allowed = true;
                self.skip();
                let t = if c == '[' {
                    Tok::FlowSeqStart
                } else {
                    Tok::FlowMapStart
                };
                self.tokens.push_back(t);
            }
            ']' | '}' => {
                self.remove_key()?;
                if self.flow > 0 {
                    self.flow -= 1;
                    self.keys.pop();
                }
                self.allowed = false;
                self.skip();
                let t = if c == ']' {
                    Tok::FlowSeqEnd
                } else {
                    Tok::FlowMapEnd
                };
                self.tokens.push_back(t);
            }
            ',' => {
                self.remove_key()?;
                self.allowed = true;
                self.skip();
                self.tokens.push_back(Tok::FlowEntry);
            }
            '-' if is_blankz(next) => {
                if self.flow == 0 {
                    if !self.allowed {
                        return self.err("block sequence entries are not allowed in this context");
                    }
                    self.roll_indent(self.col, None, Tok::BlockSeqStart)?;
                }
                self.remove_key()?;
                self.allowed = true;
                self.skip();
                self.tokens.push_back(Tok::BlockEntry);
            }
            '?' if self.flow > 0 || is_blankz(next) => {
                if self.flow == 0 {
                    if !self.allowed {
                        return self.err("mapping keys are not allowed in this context");
                    }
                    self.roll_indent(self.col, None, Tok::BlockMapStart)?;
                }
                self.remove_key()?;
                self.allowed = self.flow == 0;
                self.skip();
                self.tokens.push_back(Tok::Key);
            }
            ':' if self.flow > 0 || is_blankz(next) => self.fetch_value()?,
            '*' | '&' => {
                self.save_key()?;
                self.allowed = false;
                self.skip();
                let mut name = String::new();
                while is_alpha(self.ch()) {
                    self.read(&mut name);
                }
                let end = self.ch();
                if name.is_empty() || !(is_blankz(end) || "?:,]}%@`".contains(end)) {
                    return self.err("did not find expected alphabetic or numeric character");
                }
                self.tokens.push_back(if c == '*' {
                    Tok::Alias(name)
                } else {
                    Tok::Anchor(name)
                });
            }
            '!' => {
                self.save_key()?;
                self.allowed = false;
                let t = self.tag()?;
                self.tokens.push_back(t);
            }
            '|' | '>' if self.flow == 0 => {
                self.remove_key()?;
                self.allowed = true;
                let s = self.block_scalar(c == '|')?;
                self.tokens.push_back(Tok::Scalar(s, false));
            }
            '\'' | '"' => {
                self.save_key()?;
                self.allowed = false;
                let s = self.quoted(c == '\'')?;
                self.tokens.push_back(Tok::Scalar(s, false));
            }
            _ => {
                let plain = !(is_blankz(c) || "-?:,[]{}#&*!|>'\"%@`".contains(c))
                    || (c == '-' && !is_blank(next))
                    || (self.flow == 0 && (c == '?' || c == ':') && !is_blankz(next));
                if !plain {
                    return self.err("found character that cannot start any token");
                }
                self.save_key()?;
                self.allowed = false;
                let s = self.plain()?;
                self.tokens.push_back(Tok::Scalar(s, true));
            }
        }
        Ok(())
    }

    fn fetch_value(&mut self) -> Res<()> {
        let k = self.keys.len() - 1;
        if self.key_valid(k)? {
            let key = self.keys[k];
            self.insert(Some(key.token_number), Tok::Key);
            self.roll_indent(key.column, Some(key.token_number), Tok::BlockMapStart)?;
            self.keys[k].possible = false;
            self.allowed = false;
        } else {
            if self.flow == 0 {
                if !self.allowed {
                    return self.err("mapping values are not allowed in this context");
                }
                self.roll_indent(self.col, None, Tok::BlockMapStart)?;
            }
            self.allowed = self.flow == 0;
        }
        self.skip();
        self.tokens.push_back(Tok::Val);
        Ok(())
    }

    /// scan_to_next_token
    fn to_next_token(&mut self) {
        loop {
            if self.col == 0 && self.ch() == '\u{feff}' {
                self.skip();
            }
            while self.ch() == ' ' || ((self.flow > 0 || !self.allowed) && self.ch() == '\t') {
                self.skip();
            }
            if self.ch() == '#' {
                while !is_break(self.ch()) && self.i < self.c.len() {
                    self.skip();
                }
            }
            if is_break(self.ch()) {
                self.skip_line();
                if self.flow == 0 {
                    self.allowed = true;
                }
            } else {
                break;
            }
        }
    }

    /// The rest of a line after a directive or a block scalar header.
    fn line_end(&mut self, what: &str) -> Res<()> {
        while is_blank(self.ch()) {
            self.skip();
        }
        if self.ch() == '#' {
            while !is_breakz(self.ch()) {
                self.skip();
            }
        }
        if !is_breakz(self.ch()) {
            return self.err(what);
        }
        self.skip_line();
        Ok(())
    }

    fn directive(&mut self) -> Res<Tok> {
        self.skip();
        let mut name = String::new();
        while is_alpha(self.ch()) {
            self.read(&mut name);
        }
        if name.is_empty() || !is_blankz(self.ch()) {
            return self.err("could not find expected directive name");
        }
        let blanks = |s: &mut Self| {
            while is_blank(s.ch()) {
                s.skip();
            }
        };
        let t = match name.as_str() {
            "YAML" => {
                blanks(self);
                let major = self.version_number()?;
                if self.ch() != '.' {
                    return self.err("did not find expected digit or '.' character");
                }
                self.skip();
                Tok::Version(major, self.version_number()?)
            }
            "TAG" => {
                blanks(self);
                let handle = self.tag_handle(true)?;
                if !is_blank(self.ch()) {
                    return self.err("did not find expected whitespace");
                }
                blanks(self);
                let prefix = self.tag_uri(true, "")?;
                if !is_blankz(self.ch()) {
                    return self.err("did not find expected whitespace or line break");
                }
                Tok::TagDirective(handle, prefix)
            }
            _ => return self.err("found unknown directive name"),
        };
        self.line_end("did not find expected comment or line break")?;
        Ok(t)
    }
    fn version_number(&mut self) -> Res<u32> {
        let mut n = 0u32;
        let mut len = 0;
        while self.ch().is_ascii_digit() {
            len += 1;
            if len > 9 {
                return self.err("found extremely long version number");
            }
            n = n * 10 + (self.ch() as u32 - '0' as u32);
            self.skip();
        }
        if len == 0 {
            return self.err("did not find expected version number");
        }
        Ok(n)
    }

    fn tag(&mut self) -> Res<Tok> {
        let (handle, suffix) = if self.at(1) == '<' {
            self.skip();
            self.skip();
            let suffix = self.tag_uri(false, "")?;
            if self.ch() != '>' {
                return self.err("did not find the expected '>'");
            }
            self.skip();
            (String::new(), suffix)
        } else {
            let handle = self.tag_handle(false)?;
            if handle.len() > 1 && handle.ends_with('!') {
                (handle, self.tag_uri(false, "")?)
            } else {
                let suffix = self.tag_uri(false, &handle)?;
                if suffix.is_empty() {
                    (String::new(), "!".to_string())
                } else {
                    ("!".to_string(), suffix)
                }
            }
        };
        if !is_blankz(self.ch()) && (self.flow == 0 || self.ch() != ',') {
            return self.err("did not find expected whitespace or line break");
        }
        Ok(Tok::Tag(handle, suffix))
    }
    fn tag_handle(&mut self, directive: bool) -> Res<String> {
        if self.ch() != '!' {
            return self.err("did not find expected '!'");
        }
        let mut s = String::new();
        self.read(&mut s);
        while is_alpha(self.ch()) {
            self.read(&mut s);
        }
        if self.ch() == '!' {
            self.read(&mut s);
        } else if directive && s != "!" {
            return self.err("did not find expected '!'");
        }
        Ok(s)
    }
    fn tag_uri(&mut self, directive: bool, head: &str) -> Res<String> {
        let mut bytes: Vec<u8> = head.get(1..).unwrap_or("").as_bytes().to_vec();
        let mut has = !head.is_empty();
        loop {
            let c = self.ch();
            if c == '%' {
                // scan_uri_escapes: one UTF-8 sequence of %XX octets
                let mut want = 0;
                loop {
                    let hex = |s: &Self, k| s.at(k).to_digit(16);
                    let (Some(h), Some(l)) = (hex(self, 1), hex(self, 2)) else {
                        return self.err("did not find URI escaped octet");
                    };
                    let b = (h * 16 + l) as u8;
                    if want == 0 {
                        want = match b {
                            0..=0x7f => 1,
                            0xc0..=0xdf => 2,
                            0xe0..=0xef => 3,
                            0xf0..=0xf7 => 4,
                            _ => return self.err("found an incorrect leading UTF-8 octet"),
                        };
                    } else if b & 0xc0 != 0x80 {
                        return self.err("found an incorrect trailing UTF-8 octet");
                    }
                    bytes.push(b);
                    self.i += 3;
                    self.col += 3;
                    want -= 1;
                    if want == 0 {
                        break;
                    }
                    if self.ch() != '%' {
                        return self.err("did not find URI escaped octet");
                    }
                }
            } else if is_alpha(c) || ";/?:@&=+$,.!~*'()[]".contains(c) && c != '\0' {
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                self.skip();
            } else {
                break;
            }
            has = true;
        }
        let _ = directive;
        if !has {
            return self.err("did not find expected tag URI");
        }
        String::from_utf8(bytes).or_else(|_| self.err("a tag is not UTF-8"))
    }

    fn doc_indicator(&self) -> bool {
        self.col == 0
            && ((self.at(0) == '-' && self.at(1) == '-' && self.at(2) == '-')
                || (self.at(0) == '.' && self.at(1) == '.' && self.at(2) == '.'))
            && is_blankz(self.at(3))
    }

    fn plain(&mut self) -> Res<String> {
        let mut s = String::new();
        let mut leading_break = String::new();
        let mut trailing = String::new();
        let mut spaces = String::new();
        let mut leading_blanks = false;
        let indent = self.indent + 1;
        loop {
            if self.doc_indicator() || self.ch() == '#' {
                break;
            }
            while !is_blankz(self.ch()) {
                let c = self.ch();
                if (c == ':' && is_blankz(self.at(1))) || (self.flow > 0 && ",?[]{}".contains(c)) {
                    break;
                }
                if leading_blanks || !spaces.is_empty() {
                    if leading_blanks {
                        if leading_break.starts_with('\n') {
                            if trailing.is_empty() {
                                s.push(' ');
                            } else {
                                s.push_str(&trailing);
                            }
                        } else {
                            s.push_str(&leading_break);
                            s.push_str(&trailing);
                        }
                        trailing.clear();
                        leading_break.clear();
                        leading_blanks = false;
                    } else {
                        s.push_str(&spaces);
                        spaces.clear();
                    }
                }
                self.read(&mut s);
            }
            if !(is_blank(self.ch()) || is_break(self.ch())) {
                break;
            }
            while is_blank(self.ch()) || is_break(self.ch()) {
                if is_blank(self.ch()) {
                    if leading_blanks && (self.col as isize) < indent && self.ch() == '\t' {
                        return self.err("found a tab character that violates indentation");
                    }
                    if leading_blanks {
                        self.skip();
                    } else {
                        self.read(&mut spaces);
                    }
                } else if leading_blanks {
                    self.read_line(&mut trailing);
                } else {
                    spaces.clear();
                    self.read_line(&mut leading_break);
                    leading_blanks = true;
                }
            }
            if self.flow == 0 && (self.col as isize) < indent {
                break;
            }
        }
        if leading_blanks {
            self.allowed = true;
        }
        Ok(s)
    }

    fn quoted(&mut self, single: bool) -> Res<String> {
        self.skip();
        let mut s = String::new();
        let mut leading_break = String::new();
        let mut trailing = String::new();
        let mut spaces = String::new();
        loop {
            if self.doc_indicator() {
                return self.err("found unexpected document indicator");
            }
            if self.i >= self.c.len() {
                return self.err("found unexpected end of stream");
            }
            let mut leading_blanks = false;
            while !is_blankz(self.ch()) {
                let c = self.ch();
                if single && c == '\'' && self.at(1) == '\'' {
                    s.push('\'');
                    self.skip();
                    self.skip();
                } else if (single && c == '\'') || (!single && c == '"') {
                    break;
                } else if !single && c == '\\' && is_break(self.at(1)) {
                    self.skip();
                    self.skip_line();
                    leading_blanks = true;
                    break;
                } else if !single && c == '\\' {
                    let mut len = 0;
                    match self.at(1) {
                        '0' => s.push('\0'),
                        'a' => s.push('\x07'),
                        'b' => s.push('\x08'),
                        't' | '\t' => s.push('\t'),
                        'n' => s.push('\n'),
                        'v' => s.push('\x0b'),
                        'f' => s.push('\x0c'),
                        'r' => s.push('\r'),
                        'e' => s.push('\x1b'),
                        ' ' => s.push(' '),
                        '"' => s.push('"'),
                        '\'' => s.push('\''),
                        '\\' => s.push('\\'),
                        'N' => s.push('\u{85}'),
                        '_' => s.push('\u{a0}'),
                        'L' => s.push('\u{2028}'),
                        'P' => s.push('\u{2029}'),
                        'x' => len = 2,
                        'u' => len = 4,
                        'U' => len = 8,
                        _ => return self.err("found unknown escape character"),
                    }
                    self.skip();
                    self.skip();
                    if len > 0 {
                        let mut v: u32 = 0;
                        for k in 0..len {
                            let Some(d) = self.at(k).to_digit(16) else {
                                return self.err("did not find expected hexdecimal number");
                            };
                            v = (v << 4) + d;
                        }
                        let Some(ch) = char::from_u32(v) else {
                            return self.err("found invalid Unicode character escape code");
                        };
                        s.push(ch);
                        for _ in 0..len {
                            self.skip();
                        }
                    }
                } else {
                    self.read(&mut s);
                }
            }
            let c = self.ch();
            if (single && c == '\'') || (!single && c == '"') {
                break;
            }
            while is_blank(self.ch()) || is_break(self.ch()) {
                if is_blank(self.ch()) {
                    if leading_blanks {
                        self.skip();
                    } else {
                        self.read(&mut spaces);
                    }
                } else if leading_blanks {
                    self.read_line(&mut trailing);
                } else {
                    spaces.clear();
                    self.read_line(&mut leading_break);
                    leading_blanks = true;
                }
            }
            if leading_blanks {
                if leading_break.starts_with('\n') {
                    if trailing.is_empty() {
                        s.push(' ');
                    } else {
                        s.push_str(&trailing);
                    }
                } else {
                    s.push_str(&leading_break);
                    s.push_str(&trailing);
                }
                trailing.clear();
                leading_break.clear();
            } else {
                s.push_str(&spaces);
                spaces.clear();
            }
        }
        self.skip();
        Ok(s)
    }

    fn block_scalar(&mut self, literal: bool) -> Res<String> {
        self.skip();
        let mut chomping = 0i8;
        let mut increment = 0usize;
        let chomp = |c: char| match c {
            '+' => 1,
            '-' => -1,
            _ => 0,
        };
        if chomp(self.ch()) != 0 {
            chomping = chomp(self.ch());
            self.skip();
            if let Some(d) = self.ch().to_digit(10) {
                if d == 0 {
                    return self.err("found an indentation indicator equal to 0");
                }
                increment = d as usize;
                self.skip();
            }
        } else if let Some(d) = self.ch().to_digit(10) {
            if d == 0 {
                return self.err("found an indentation indicator equal to 0");
            }
            increment = d as usize;
            self.skip();
            if chomp(self.ch()) != 0 {
                chomping = chomp(self.ch());
                self.skip();
            }
        }
        self.line_end("did not find expected comment or line break")?;
        let mut indent = 0usize;
        if increment > 0 {
            indent = if self.indent >= 0 {
                self.indent as usize + increment
            } else {
                increment
            };
        }
        let mut s = String::new();
        let mut leading_break = String::new();
        let mut trailing = String::new();
        self.block_breaks(&mut indent, &mut trailing)?;
        let mut leading_blank = false;
        while self.col == indent && self.i < self.c.len() {
            let trailing_blank = is_blank(self.ch());
            if !literal && !leading_blank && !trailing_blank && leading_break.starts_with('\n') {
                if trailing.is_empty() {
                    s.push(' ');
                }
            } else {
                s.push_str(&leading_break);
            }
            leading_break.clear();
            s.push_str(&trailing);
            trailing.clear();
            leading_blank = is_blank(self.ch());
            while !is_breakz(self.ch()) || (self.ch() == '\0' && self.i < self.c.len()) {
                self.read(&mut s);
            }
            self.read_line(&mut leading_break);
            self.block_breaks(&mut indent, &mut trailing)?;
        }
        if chomping != -1 {
            s.push_str(&leading_break);
        }
        if chomping == 1 {
            s.push_str(&trailing);
        }
        Ok(s)
    }
    fn block_breaks(&mut self, indent: &mut usize, breaks: &mut String) -> Res<()> {
        let mut max = 0;
        loop {
            while (*indent == 0 || self.col < *indent) && self.ch() == ' ' {
                self.skip();
            }
            max = max.max(self.col);
            if (*indent == 0 || self.col < *indent) && self.ch() == '\t' {
                return self.err("found a tab character where an indentation space is expected");
            }
            if !is_break(self.ch()) {
                break;
            }
            self.read_line(breaks);
        }
        if *indent == 0 {
            *indent = max.max((self.indent + 1).max(1) as usize);
        }
        Ok(())
    }
}

fn is_breakz(c: char) -> bool {
    is_break(c) || c == '\0'
}

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
    nodes: Vec<Node>,
    anchors: Vec<(String, usize)>,
    tags: Vec<(String, String)>,
}

const MAX_NODES: usize = 200_000;

impl Parser {
    fn add(&mut self, n: Node) -> Res<usize> {
        if self.nodes.len() >= MAX_NODES {
            return fail("the YAML document has too many nodes");
        }
        self.nodes.push(n);
        Ok(self.nodes.len() - 1)
    }
    fn peek(&mut self) -> Res<Tok> {
        self.sc.peek().cloned()
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
                        return fail("YAML: found duplicate %YAML directive");
                    }
                    if (major, minor) != (1, 1) {
                        return fail("YAML: found incompatible YAML document");
                    }
                    version = true;
                }
                Tok::TagDirective(handle, prefix) => {
                    if self.tags.iter().any(|(h, _)| *h == handle) {
                        return fail("YAML: found duplicate %TAG directive");
                    }
                    self.tags.push((handle, prefix));
                }
                _ => {}
            }
            t = self.peek()?;
        }
        for (h, p) in [("!", "!"), ("!!", "tag:yaml.org,2002:")] {
            if !self.tags.iter().any(|(x, _)| x == h) {
                self.tags.push((h.into(), p.into()));
            }
        }
        if explicit {
            if t == Tok::StreamEnd && !directives {
                return Ok(None);
            }
            if t != Tok::DocStart {
                return fail("YAML: did not find expected <document start>");
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
        let mut t = self.sc.next()?;
        if let Tok::Alias(name) = t {
            let Some(&(_, target)) = self.anchors.iter().rev().find(|(a, _)| *a == name) else {
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
            Some((h, s)) => match self.tags.iter().find(|(x, _)| *x == h) {
                Some((_, prefix)) => format!("{prefix}{s}"),
                None => return fail("YAML: found undefined tag handle"),
            },
        };
        // The node's index is known before its children: an anchor names
        // it from here on (an alias inside it is a cycle, refused later).
        let at = self.nodes.len();
        if let Some(a) = anchor.clone() {
            self.anchors.push((a, at));
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
                                return fail("YAML: did not find expected ',' or ']'");
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
                                return fail("YAML: did not find expected ',' or '}'");
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
                        _ => return fail("YAML: did not find expected '-' indicator"),
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
                        _ => return fail("YAML: did not find expected key"),
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
                return fail("YAML: did not find expected node content");
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
        self.sc.parsed -= 1;
        self.sc.tokens.push_front(t);
    }
}

/// A mapping key as go-yaml decodes it into `interface{}`.
#[derive(Debug, Clone, PartialEq)]
enum Key {
    Str(String),
    Int(i128),
    Float(f64),
    Bool(bool),
}

/// A scalar as go-yaml v2 resolves it (resolve.go) and decodes it into
/// `interface{}`; Null for null.
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Null,
    Str(String),
    Int(i128),
    Float(f64),
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

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`, parsed as a
/// finite float64 (Go's ParseFloat refuses what overflows).
fn yaml_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let m_ok = match mantissa.split_once('.') {
        Some(("", f)) => digits(f),
        Some((i, f)) => digits(i) && (f.is_empty() || digits(f)),
        None => digits(mantissa),
    };
    let e_ok = exp.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    if !(m_ok && e_ok) {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Go's ParseFloat on a string starting with '.': `.5`, `.5e3`.
fn dot_float(s: &str) -> Option<f64> {
    let rest = &s[1..];
    let (frac, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let ok = digits(frac) && exp.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    if !ok {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
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
            return fail("YAML: a !!binary value, which this reader does not follow");
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
    } else if word(&[".nan", ".NaN", ".NAN"]) {
        Scalar::Float(f64::NAN)
    } else if word(&[".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"]) {
        Scalar::Float(f64::INFINITY)
    } else if word(&["-.inf", "-.Inf", "-.INF"]) {
        Scalar::Float(f64::NEG_INFINITY)
    } else if hint == b'.' {
        dot_float(text).map_or_else(|| Scalar::Str(text.into()), Scalar::Float)
    } else if hint == b'S' || hint == b'D' {
        // a timestamp decodes to its text; !!timestamp needs one
        if short == Some("timestamp") && timestamp(text) {
            return Ok(Scalar::Str(text.to_string()));
        }
        let plain: String = text.chars().filter(|c| *c != '_').collect();
        if let Some(i) = go_int(&plain) {
            Scalar::Int(i)
        } else if let Some(f) = yaml_float(&plain) {
            Scalar::Float(f)
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
        (Some("float"), Scalar::Int(i)) => return Ok(Scalar::Float(*i as f64)),
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
    active: Vec<usize>,
    count: usize,
    alias_depth: usize,
    alias_count: usize,
    /// A key repeated in a mapping (yaml.UnmarshalStrict refuses it).
    dup: bool,
}

impl Dec<'_> {
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
            return fail("YAML: document contains excessive aliasing");
        }
        Ok(())
    }

    fn scalar(&mut self, n: usize) -> Res<Scalar> {
        self.tick()?;
        match &self.nodes[n] {
            Node::Scalar(text, tag, implicit) => resolve(text, tag, *implicit),
            Node::Alias(t) => {
                let t = *t;
                self.enter(n)?;
                let v = self.scalar(t);
                self.leave();
                v
            }
            _ => fail("YAML: invalid map key (a mapping or a sequence)"),
        }
    }

    fn enter(&mut self, alias: usize) -> Res<()> {
        if self.active.contains(&alias) {
            return fail("YAML: anchor value contains itself");
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
        match &self.nodes[n] {
            Node::Scalar(..) => {
                return match self.scalar(n)? {
                    Scalar::Null => Ok(Value::Null),
                    Scalar::Str(s) => Ok(Value::Str(s)),
                    // json.Marshal refuses NaN and infinities
                    Scalar::Float(f) if !f.is_finite() => {
                        fail("YAML: a value JSON cannot hold (NaN or infinity)")
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
                let mut map: Vec<(Key, Value)> = Vec::new();
                self.mapping(n, &mut map)?;
                let mut out: Vec<(String, Value)> = Vec::with_capacity(map.len());
                for (k, v) in map {
                    let k = match k {
                        Key::Str(s) => s,
                        Key::Int(i) if i <= i64::MAX as i128 => i.to_string(),
                        Key::Bool(b) => b.to_string(),
                        _ => return fail("YAML: a mapping key this reader does not convert"),
                    };
                    // "1" and 1 both: Go picks one at random
                    if out.iter().any(|(x, _)| *x == k) {
                        return fail(format!("YAML: two keys read as {k:?}"));
                    }
                    out.push((k, v));
                }
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
            return fail("YAML: map merge requires map or sequence of maps as the value");
        };
        for (k, v) in pairs.clone() {
            if self.is_merge(k) {
                self.merge(v, out)?;
                continue;
            }
            let key = match self.scalar(k)? {
                Scalar::Null => return fail("YAML: a null mapping key"),
                Scalar::Str(s) => Key::Str(s),
                Scalar::Int(i) => Key::Int(i),
                Scalar::Float(f) => Key::Float(f),
                Scalar::Bool(b) => Key::Bool(b),
            };
            let val = self.value(v)?;
            match out.iter_mut().find(|(x, _)| *x == key) {
                Some(slot) => {
                    self.dup = true;
                    slot.1 = val;
                }
                None => out.push((key, val)),
            }
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
    let c: Vec<char> = text.chars().collect();
    // go-yaml's reader: printable characters only
    if let Some(bad) = c.iter().find(|&&ch| {
        !matches!(ch, '\t' | '\n' | '\r' | '\u{20}'..='\u{7e}' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
    }) {
        return fail(format!("YAML: control character {bad:?} is not allowed"));
    }
    let mut p = Parser {
        sc: Scanner {
            c,
            i: 0,
            line: 0,
            col: 0,
            tokens: Default::default(),
            parsed: 0,
            started: false,
            ended: false,
            indent: -1,
            indents: Vec::new(),
            allowed: false,
            keys: Vec::new(),
            flow: 0,
        },
        nodes: Vec::new(),
        anchors: Vec::new(),
        tags: Vec::new(),
    };
    let Some(root) = p.document()? else {
        return Ok((Value::Null, false));
    };
    let mut d = Dec {
        nodes: &p.nodes,
        active: Vec::new(),
        count: 0,
        alias_depth: 0,
        alias_count: 0,
        dup: false,
    };
    let v = d.value(root)?;
    Ok((v, d.dup))
}
