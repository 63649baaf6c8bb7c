//! JSON as Go's encoding/json reads it (kubelet takes a config whose first
//! non-space character is `{` as JSON): keys in document order, repeated
//! keys kept for the caller to judge.

use super::{ConfigError, Value, fail, refusal};

struct Json<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Json<'_> {
    fn ws(&mut self) {
        while matches!(self.s.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }
    fn err<T>(&self) -> Result<T, ConfigError> {
        Err(self.error())
    }
    #[inline(never)]
    fn error(&self) -> ConfigError {
        ConfigError(format!("JSON: invalid character at byte {}", self.i))
    }
    fn value(&mut self) -> Result<Value, ConfigError> {
        self.ws();
        let Some(&c) = self.s.get(self.i) else {
            return Err(refusal("JSON: unexpected end of input"));
        };
        match c {
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth > super::yaml::MAX_DEPTH {
                    return Err(refusal("JSON: nested deeper than this reader follows"));
                }
                self.i += 1;
                let close = if c == b'{' { b'}' } else { b']' };
                let mut map = Vec::new();
                let mut seq = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&close) {
                    self.i += 1;
                } else {
                    loop {
                        if c == b'{' {
                            self.ws();
                            if self.s.get(self.i) != Some(&b'"') {
                                return self.err();
                            }
                            let k = self.string()?;
                            self.ws();
                            if self.s.get(self.i) != Some(&b':') {
                                return self.err();
                            }
                            self.i += 1;
                            map.push((k, self.value()?));
                        } else {
                            seq.push(self.value()?);
                        }
                        self.ws();
                        match self.s.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(x) if *x == close => {
                                self.i += 1;
                                break;
                            }
                            _ => return self.err(),
                        }
                    }
                }
                self.depth -= 1;
                Ok(if c == b'{' {
                    Value::Map(map)
                } else {
                    Value::Seq(seq)
                })
            }
            b'"' => Ok(Value::Str(self.string()?)),
            b't' | b'f' | b'n' => {
                for word in ["true", "false", "null"] {
                    if self.s[self.i..].starts_with(word.as_bytes()) {
                        self.i += word.len();
                        return Ok(if word == "null" {
                            Value::Null
                        } else {
                            Value::Other
                        });
                    }
                }
                self.err()
            }
            _ => {
                // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?
                let digits = |j: &mut Self| {
                    let start = j.i;
                    while j.s.get(j.i).is_some_and(u8::is_ascii_digit) {
                        j.i += 1;
                    }
                    j.i > start
                };
                if self.s.get(self.i) == Some(&b'-') {
                    self.i += 1;
                }
                if self.s.get(self.i) == Some(&b'0') {
                    self.i += 1;
                } else if !digits(self) {
                    return self.err();
                }
                if self.s.get(self.i) == Some(&b'.') {
                    self.i += 1;
                    if !digits(self) {
                        return self.err();
                    }
                }
                if matches!(self.s.get(self.i), Some(b'e' | b'E')) {
                    self.i += 1;
                    if matches!(self.s.get(self.i), Some(b'+' | b'-')) {
                        self.i += 1;
                    }
                    if !digits(self) {
                        return self.err();
                    }
                }
                Ok(Value::Other)
            }
        }
    }
    fn hex4(&mut self) -> Option<u32> {
        let h = self.s.get(self.i..self.i + 4)?;
        let v = u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()?;
        h.iter().all(u8::is_ascii_hexdigit).then(|| {
            self.i += 4;
            v
        })
    }
    fn string(&mut self) -> Result<String, ConfigError> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let Some(&c) = self.s.get(self.i) else {
                return Err(refusal("JSON: unterminated string"));
            };
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok(out);
                }
                b'\\' => {
                    let e = self.s.get(self.i + 1).copied();
                    self.i += 2;
                    match e {
                        Some(b'"') => out.push('"'),
                        Some(b'\\') => out.push('\\'),
                        Some(b'/') => out.push('/'),
                        Some(b'b') => out.push('\x08'),
                        Some(b'f') => out.push('\x0c'),
                        Some(b'n') => out.push('\n'),
                        Some(b'r') => out.push('\r'),
                        Some(b't') => out.push('\t'),
                        Some(b'u') => {
                            let Some(u) = self.hex4() else {
                                return self.err();
                            };
                            let mut ch = char::from_u32(u);
                            if (0xd800..0xdc00).contains(&u)
                                && self.s.get(self.i..self.i + 2) == Some(b"\\u")
                            {
                                let save = self.i;
                                self.i += 2;
                                match self.hex4() {
                                    Some(l) if (0xdc00..0xe000).contains(&l) => {
                                        ch = char::from_u32(
                                            0x10000 + ((u - 0xd800) << 10) + (l - 0xdc00),
                                        );
                                    }
                                    _ => self.i = save,
                                }
                            }
                            out.push(ch.unwrap_or('\u{fffd}'));
                        }
                        _ => return self.err(),
                    }
                }
                0..=0x1f => return self.err(),
                _ => {
                    // copy one UTF-8 character (the text is a str)
                    let len = match c {
                        0..=0x7f => 1,
                        0xc0..=0xdf => 2,
                        0xe0..=0xef => 3,
                        _ => 4,
                    };
                    let end = (self.i + len).min(self.s.len());
                    out.push_str(std::str::from_utf8(&self.s[self.i..end]).unwrap_or("\u{fffd}"));
                    self.i = end;
                }
            }
        }
    }
}

/// The one JSON value of `text`.
pub(super) fn parse(text: &str) -> Result<Value, ConfigError> {
    let mut j = Json {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = j.value()?;
    j.ws();
    if j.i != j.s.len() {
        return fail(format!(
            "JSON: invalid character after the top-level value at byte {}",
            j.i
        ));
    }
    Ok(v)
}
