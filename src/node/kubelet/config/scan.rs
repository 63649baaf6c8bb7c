//! go-yaml v2's scanner (scannerc.go): the tokens of a YAML stream, with
//! libyaml's rules for simple keys, indentation, flow levels, and every
//! scalar style. The parser beside it (`yaml.rs`) asks for tokens one at a
//! time, as go-yaml's does, so nothing past the first document is read.

use super::{ConfigError, refusal};

type Res<T> = Result<T, ConfigError>;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
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

pub(super) struct Scanner {
    c: Vec<char>,
    i: usize,
    line: usize,
    col: usize,
    pub(super) tokens: std::collections::VecDeque<Tok>,
    pub(super) parsed: usize,
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
    pub(super) fn new(c: Vec<char>) -> Scanner {
        Scanner {
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
        }
    }
}

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
        Err(self.error(what))
    }
    /// Out of line: one copy of the message's formatting for the
    /// scanner's many refusals (the wrapper's payload is counted in bytes).
    #[inline(never)]
    fn error(&self, what: &str) -> ConfigError {
        ConfigError(format!("YAML line {}: {what}", self.line + 1))
    }

    /// peek_token: go-yaml's fetch_more_tokens, then the head.
    pub(super) fn peek(&mut self) -> Res<&Tok> {
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
    pub(super) fn next(&mut self) -> Res<Tok> {
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
                let at = n.saturating_sub(self.parsed).min(self.tokens.len());
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
            return Err(refusal("YAML: read past the end"));
        }
        if !self.started {
            self.started = true;
            self.indent = -1;
            self.keys.push(SimpleKey::default());
            self.allowed = true;
            return Ok(());
        }
        self.skip_to_next_token();
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
    fn skip_to_next_token(&mut self) {
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
