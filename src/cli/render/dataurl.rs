//! `data:` URLs read as Ignition reads them (and the MCO, which validates a
//! MachineConfig with Ignition's config code): the RFC 2397 lexer of
//! vincent-petithory/dataurl, state for state. What it refuses is refused
//! here with its words: a raw `#` or space in the data, `;BASE64`, a
//! parameter after `;base64`, a space before the comma. A MachineConfig
//! with such a URL renders no config for its pool (the pool goes
//! Degraded), so what it would write is never on a node.

/// The bytes of the data URL `s` (before any `compression`), or why
/// Ignition refuses it (the lexer's or decoder's own words).
pub fn decode(s: &str) -> Result<Vec<u8>, String> {
    // Ignition parses the URL with Go's net/url first, which refuses any
    // control character (a newline in base64 data too).
    if s.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    let Some(rest) = s.strip_prefix("data:") else {
        return Err("missing data prefix".into());
    };
    let mut l = Lexer {
        chars: rest.chars().collect(),
        pos: 0,
    };
    let mut base64 = false;
    // After the prefix: a media type, parameters, or the comma.
    match l.next() {
        Some(';') => l.params(&mut base64)?,
        Some(',') => {}
        None => return Err("missing comma before data".into()),
        Some(r) if r == 'x' || r == 'X' || is_token(r) => {
            // `x-` types skip the discrete/composite check. (The lexer takes
            // the rune after `x` unchecked, as Go's does.)
            let x_token = (r == 'x' || r == 'X') && l.next() == Some('-');
            l.media_type(x_token, &mut base64)?;
        }
        Some(_) => return Err("invalid character after data prefix".into()),
    }
    let data: String = l.chars[l.pos..].iter().collect();
    if base64 {
        if data.chars().any(|r| !is_base64(r)) {
            return Err("invalid data character".into());
        }
        // Go's StdEncoding skips newlines, wants the padding, and takes
        // non-zero trailing bits.
        use base64::Engine;
        let engine = base64::engine::GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_allow_trailing_bits(true)
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
        );
        let joined: String = data.chars().filter(|&c| c != '\n').collect();
        return engine
            .decode(joined)
            .map_err(|e| format!("illegal base64 data ({e})"));
    }
    if data.chars().any(|r| !is_url_char(r)) {
        return Err("invalid data character".into());
    }
    unescape(&data)
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
}

impl Lexer {
    fn next(&mut self) -> Option<char> {
        let r = self.chars.get(self.pos).copied();
        if r.is_some() {
            self.pos += 1;
        }
        r
    }

    fn text(&self, from: usize) -> String {
        self.chars[from..self.pos].iter().collect()
    }

    /// The media type, its first rune read; then its parameters, up to and
    /// including the comma.
    fn media_type(&mut self, x_token: bool, base64: &mut bool) -> Result<(), String> {
        loop {
            match self.next() {
                Some('/') => break,
                None => return Err("missing media type slash".into()),
                Some(r) if is_token(r) => {}
                Some(_) => return Err("invalid character for media type".into()),
            }
        }
        let kind = self.text(0);
        const TYPES: [&str; 7] = [
            "text",
            "image",
            "audio",
            "video",
            "application",
            "message",
            "multipart",
        ];
        if !x_token && !TYPES.iter().any(|t| kind.starts_with(t)) {
            return Err("invalid media type".into());
        }
        loop {
            match self.next() {
                Some(';') => return self.params(base64),
                Some(',') => return Ok(()),
                None => return Err("incomplete media type".into()),
                Some(r) if is_token(r) => {}
                Some(_) => return Err("invalid character for media subtype".into()),
            }
        }
    }

    /// Parameters after a `;` just read, up to and including the comma.
    fn params(&mut self, base64: &mut bool) -> Result<(), String> {
        loop {
            let start = self.pos;
            match self.next() {
                None | Some('=') | Some(',') => {
                    return Err("unterminated parameter sequence".into());
                }
                Some(r) if is_token(r) => {}
                Some(_) => return Err("invalid character for parameter attribute".into()),
            }
            // The attribute; `base64` alone, last, ends at the comma.
            loop {
                match self.next() {
                    Some('=') => break,
                    Some(',') => {
                        self.pos -= 1;
                        let v = self.text(start);
                        if v != "base64" {
                            return Err(format!("expected base64, got {v}"));
                        }
                        *base64 = true;
                        self.pos += 1;
                        return Ok(());
                    }
                    None => return Err("unterminated parameter sequence".into()),
                    Some(r) if is_token(r) => {}
                    Some(_) => return Err("invalid character for parameter attribute".into()),
                }
            }
            // The value: a token (%-escapes decoded) or a quoted string.
            let start = self.pos;
            match self.next() {
                Some('"') => self.quoted()?,
                None => return Err("missing comma before data".into()),
                Some(r) if is_token(r) => loop {
                    match self.next() {
                        Some(';') | Some(',') => {
                            self.pos -= 1;
                            unescape(&self.text(start))?;
                            break;
                        }
                        None => return Err("missing comma before data".into()),
                        Some(r) if is_token(r) => {}
                        Some(_) => return Err("invalid character for parameter value".into()),
                    }
                },
                Some(_) => return Err("invalid character for parameter value".into()),
            }
            match self.next() {
                Some(';') => {}
                Some(',') => return Ok(()),
                None => return Err("missing comma before data".into()),
                Some(_) => return Err("expected semicolon or comma".into()),
            }
        }
    }

    /// A quoted parameter value, its opening quote read: through the
    /// closing one. Go unquotes it with `strconv.Unquote`; the escapes
    /// here are the plain ones it takes (others are refused, a stricter
    /// reading than Go's, never a laxer one).
    fn quoted(&mut self) -> Result<(), String> {
        loop {
            match self.next() {
                None => return Err("unclosed quoted string".into()),
                Some('\\') => match self.next() {
                    None => return Err("unclosed quoted string".into()),
                    Some(c) if "abfnrtv\\\"".contains(c) => {}
                    Some(c) if c.is_ascii() => {
                        return Err(format!("invalid escape \\{c} in a quoted parameter"));
                    }
                    Some(_) => return Err("invalid escaped character".into()),
                },
                Some('"') => return Ok(()),
                Some('\n') => return Err("a newline in a quoted parameter".into()),
                Some(c) if c.is_ascii() => {}
                Some(_) => return Err("invalid character for parameter value".into()),
            }
        }
    }
}

/// RFC 2045 token runes.
fn is_token(r: char) -> bool {
    r.is_ascii() && !r.is_ascii_control() && r != ' ' && !"()<>@,;:\\\"/[]?=".contains(r)
}

/// RFC 2396 URI runes (what may stand unescaped in the data).
fn is_url_char(r: char) -> bool {
    r.is_ascii() && !r.is_ascii_control() && !" <>#\"{}|\\^[]`".contains(r)
}

fn is_base64(r: char) -> bool {
    r.is_ascii_alphanumeric() || "+/=\n".contains(r)
}

/// `%XX` escapes decoded (dataurl's `Unescape`).
fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3).filter(|h| h.len() == 2);
            let Some(hex) = hex else {
                return Err("rfc2396: unexpected end of unescape sequence".into());
            };
            let digit = |c: u8| (c as char).to_digit(16);
            let (Some(hi), Some(lo)) = (digit(hex[0]), digit(hex[1])) else {
                return Err("rfc2396: invalid char 0x25 in unescape sequence".into());
            };
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::decode;

    /// What the MCO oracle (Ignition's validation in the MCO) took and
    /// refused, each through the MCO oracle by the review that found the
    /// difference (review 9, F8): the refused ones were read as data.
    #[test]
    fn data_urls_as_ignition_lexes_them() {
        for (url, data) in [
            ("data:,a%20b%0A", &b"a b\n"[..]),
            ("data:,", b""),
            ("data:text/plain;charset=utf-8;base64,aGk=", b"hi"),
            ("data:;base64,aGk=", b"hi"),
            ("data:text/plain;charset=\"utf-8\",x", b"x"),
            ("data:x-foo/bar,x", b"x"),
            ("data:,a;b=c?d&e'()*!~$+:@/", b"a;b=c?d&e'()*!~$+:@/"),
            // Go's StdEncoding takes non-zero trailing bits.
            ("data:;base64,aGl=", b"hi"),
        ] {
            assert_eq!(decode(url).as_deref(), Ok(data), "{url}");
        }
        for (url, why) in [
            ("data:,#%20kubelet", "invalid data character"),
            ("data:,a b", "invalid data character"),
            ("data:,é", "invalid data character"),
            ("data:;BASE64,aGk=", "expected base64, got BASE64"),
            ("data:;Base64,aGk=", "expected base64, got Base64"),
            (
                "data:;base64;x=y,aGk=",
                "invalid character for parameter attribute",
            ),
            (
                "data:text/plain ;base64,aGk=",
                "invalid character for media subtype",
            ),
            ("data:text/plain ,x", "invalid character for media subtype"),
            ("data: ,x", "invalid character after data prefix"),
            ("data:foo/bar,x", "invalid media type"),
            ("data:text,x", "invalid character for media type"),
            ("data:x", "missing media type slash"),
            ("data:", "missing comma before data"),
            ("data:;base64,aGk", "illegal base64 data"),
            ("data:;base64,aGk= ", "invalid data character"),
            ("data:,%zz", "unescape sequence"),
            ("data:,%4", "unexpected end of unescape sequence"),
            ("data:;base64,aG\nk=", "invalid control character"),
            ("data:,a\tb", "invalid control character"),
            ("DATA:,x", "missing data prefix"),
            ("data:;charset,x", "expected base64, got charset"),
            ("data:;=x,y", "unterminated parameter sequence"),
        ] {
            let e = decode(url).unwrap_err();
            assert!(e.contains(why), "{url}: {e}");
        }
    }
}
