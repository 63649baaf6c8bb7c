//! systemd's word splitting (extract_first_word) and C unescaping
//! (cunescape_one), as unit files and `$VAR` values use them.
//! See systemd.syntax(7) "Quoting" and systemd.service(5) "Command lines".

/// Whether `b` separates words: space, tab, newline, carriage return (a
/// match: at opt-level z a slice search is a function call per byte, and
/// this runs for every byte of every unit line at each kubelet start).
pub fn is_separator(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flags {
    /// Remove quotes (a quote may open anywhere in a word).
    pub unquote: bool,
    /// Decode C escapes (`\n`, `\x41`, `\101`, `\u00e9`, `\s`, …).
    pub cunescape: bool,
    /// Keep unknown escapes verbatim, backslash included.
    pub unescape_relax: bool,
    /// Tolerate unbalanced quotes and a trailing backslash.
    pub relax: bool,
}

/// What unit settings use: quotes and C escapes.
pub const UNIT: Flags = Flags {
    unquote: true,
    cunescape: true,
    unescape_relax: false,
    relax: false,
};

/// What `$VAR` splitting at exec time uses.
pub const ENV_VALUE: Flags = Flags {
    unquote: true,
    cunescape: false,
    unescape_relax: false,
    relax: true,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordError {
    /// Unbalanced quote, bad escape (without relax), trailing backslash.
    Invalid,
}

fn unhex(c: u8) -> Option<u32> {
    (c as char).to_digit(16)
}

/// UTF-8 bytes of a code point, without refusing surrogates.
fn utf8_encode(v: u32) -> Vec<u8> {
    match v {
        0..=0x7f => vec![v as u8],
        0x80..=0x7ff => vec![0xc0 | (v >> 6) as u8, 0x80 | (v & 0x3f) as u8],
        0x800..=0xffff => vec![
            0xe0 | (v >> 12) as u8,
            0x80 | ((v >> 6) & 0x3f) as u8,
            0x80 | (v & 0x3f) as u8,
        ],
        _ => vec![
            0xf0 | (v >> 18) as u8,
            0x80 | ((v >> 12) & 0x3f) as u8,
            0x80 | ((v >> 6) & 0x3f) as u8,
            0x80 | (v & 0x3f) as u8,
        ],
    }
}

/// One escape after a backslash: (bytes it yields, input bytes consumed).
pub fn cunescape_one(s: &[u8]) -> Option<(Vec<u8>, usize)> {
    let simple = |b: u8| Some((vec![b], 1));
    match *s.first()? {
        b'a' => simple(0x07),
        b'b' => simple(0x08),
        b'f' => simple(0x0c),
        b'n' => simple(b'\n'),
        b'r' => simple(b'\r'),
        b't' => simple(b'\t'),
        b'v' => simple(0x0b),
        b'\\' => simple(b'\\'),
        b'"' => simple(b'"'),
        b'\'' => simple(b'\''),
        b's' => simple(b' '),
        b'x' => {
            let v = unhex(*s.get(1)?)? << 4 | unhex(*s.get(2)?)?;
            // Raw byte, not UTF-8; NUL is refused.
            (v != 0).then(|| (vec![v as u8], 3))
        }
        b'u' | b'U' => {
            let n = if s[0] == b'u' { 4 } else { 8 };
            let mut v: u32 = 0;
            for i in 1..=n {
                v = v.checked_mul(16)? + unhex(*s.get(i)?)?;
            }
            if v == 0 {
                return None;
            }
            // \U must be a valid code point; \u is encoded as is, so a
            // surrogate gives its three (invalid UTF-8) bytes, as systemd does.
            if s[0] == b'U' {
                char::from_u32(v)?;
            }
            Some((utf8_encode(v), n + 1))
        }
        b'0'..=b'7' => {
            let oct = |c: Option<&u8>| {
                c.filter(|c| (b'0'..=b'7').contains(c))
                    .map(|c| (c - b'0') as u32)
            };
            let v = oct(s.first())? << 6 | oct(s.get(1))? << 3 | oct(s.get(2))?;
            (v != 0 && v <= 255).then(|| (vec![v as u8], 3))
        }
        _ => None,
    }
}

/// Extract the first word of `s[*pos..]`, advancing `*pos` past it and the
/// separators after it. Ok(None) when only separators remain.
pub fn extract_first_word(
    s: &[u8],
    pos: &mut usize,
    flags: Flags,
) -> Result<Option<Vec<u8>>, WordError> {
    let mut p = *pos;
    while p < s.len() && is_separator(s[p]) {
        p += 1;
    }
    if p >= s.len() {
        *pos = p;
        return Ok(None);
    }
    let mut out = Vec::new();
    let mut quote: Option<u8> = None;
    loop {
        let Some(&c) = s.get(p) else {
            // End of input.
            if quote.is_some() && !flags.relax {
                return Err(WordError::Invalid);
            }
            break;
        };
        if c == b'\\' {
            p += 1;
            let Some(&next) = s.get(p) else {
                if flags.unescape_relax && (quote.is_none() || flags.relax) {
                    out.push(b'\\');
                    break;
                }
                if flags.relax {
                    break;
                }
                return Err(WordError::Invalid);
            };
            if flags.cunescape {
                match cunescape_one(&s[p..]) {
                    Some((bytes, used)) => {
                        out.extend_from_slice(&bytes);
                        p += used;
                    }
                    None if flags.unescape_relax => {
                        out.push(b'\\');
                        out.push(next);
                        p += 1;
                    }
                    None => return Err(WordError::Invalid),
                }
            } else {
                out.push(next);
                p += 1;
            }
            continue;
        }
        match quote {
            Some(q) if c == q => {
                quote = None;
                p += 1;
            }
            // Ordinary bytes are copied a run at a time, up to the next
            // byte with a meaning (c itself is ordinary: the run is not empty).
            Some(q) => {
                let run = s[p..]
                    .iter()
                    .position(|&b| b == q || b == b'\\')
                    .unwrap_or(s.len() - p);
                out.extend_from_slice(&s[p..p + run]);
                p += run;
            }
            None if flags.unquote && (c == b'\'' || c == b'"') => {
                quote = Some(c);
                p += 1;
            }
            None if is_separator(c) => {
                while p < s.len() && is_separator(s[p]) {
                    p += 1;
                }
                break;
            }
            None => {
                let run = s[p..]
                    .iter()
                    .position(|&b| {
                        b == b'\\'
                            || is_separator(b)
                            || (flags.unquote && (b == b'\'' || b == b'"'))
                    })
                    .unwrap_or(s.len() - p);
                out.extend_from_slice(&s[p..p + run]);
                p += run;
            }
        }
    }
    *pos = p;
    Ok(Some(out))
}

/// extract_first_word_and_warn: on an invalid escape, retry keeping unknown
/// escapes verbatim. Returns the word and whether the retry was needed.
pub fn extract_word_relaxed(
    s: &[u8],
    pos: &mut usize,
    flags: Flags,
) -> Result<Option<(Vec<u8>, bool)>, WordError> {
    let save = *pos;
    match extract_first_word(s, pos, flags) {
        Ok(w) => Ok(w.map(|w| (w, false))),
        Err(_) if !flags.unescape_relax => {
            *pos = save;
            let relaxed = Flags {
                unescape_relax: true,
                ..flags
            };
            extract_first_word(s, pos, relaxed).map(|w| w.map(|w| (w, true)))
        }
        Err(e) => Err(e),
    }
}

/// Split a whole string (strv_split_full).
pub fn split(s: &[u8], flags: Flags) -> Result<Vec<Vec<u8>>, WordError> {
    let mut pos = 0;
    let mut words = Vec::new();
    while let Some(w) = extract_first_word(s, &mut pos, flags)? {
        words.push(w);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        let mut pos = 0;
        let mut out = Vec::new();
        while let Some((w, _)) = extract_word_relaxed(s.as_bytes(), &mut pos, UNIT).unwrap() {
            out.push(String::from_utf8_lossy(&w).into_owned());
        }
        out
    }

    #[test]
    fn quotes_anywhere_in_a_word() {
        assert_eq!(
            words(r#""a b" 'c d' a"b c"d "" '' "it's" 'say "hi"' 'a'"b"c"#),
            ["a b", "c d", "ab cd", "", "", "it's", "say \"hi\"", "abc"]
        );
        assert_eq!(words(r#"-o"k=v" --flag="x y""#), ["-ok=v", "--flag=x y"]);
    }

    #[test]
    fn c_escapes_also_inside_quotes() {
        assert_eq!(
            words(r"\x41 \101 \u00e9 a\sb \t x\\y"),
            ["A", "A", "é", "a b", "\t", "x\\y"]
        );
        assert_eq!(
            words(r#"'a\nb' "c\td" \' 'it\'s'"#),
            ["a\nb", "c\td", "'", "it's"]
        );
        let mut pos = 0;
        let (w, _) = extract_word_relaxed(br"\xff", &mut pos, UNIT)
            .unwrap()
            .unwrap();
        assert_eq!(w, vec![0xff]);
    }

    #[test]
    fn unknown_escapes_kept_verbatim_on_retry() {
        assert_eq!(
            words(r"\d \$HOME a\ b \x4 \x00 \8 end\"),
            [r"\d", r"\$HOME", r"a\ b", r"\x4", r"\x00", r"\8", r"end\"]
        );
    }

    #[test]
    fn unbalanced_quote_is_an_error() {
        let mut pos = 0;
        assert!(extract_word_relaxed(br#""abc"#, &mut pos, UNIT).is_err());
        let mut pos = 0;
        assert!(extract_word_relaxed(br#""abc\"#, &mut pos, UNIT).is_err());
    }

    #[test]
    fn env_value_splitting_is_relaxed() {
        let s = |v: &str| -> Vec<String> {
            split(v.as_bytes(), ENV_VALUE)
                .unwrap()
                .into_iter()
                .map(|w| String::from_utf8(w).unwrap())
                .collect()
        };
        assert_eq!(
            s(r#"a "b c" d\ e 'f g' \x41 h\"#),
            ["a", "b c", "d e", "f g", "x41", "h"]
        );
        assert_eq!(s(r#"x "y z"#), ["x", "y z"]);
        assert_eq!(
            s(r#""x\y z" 'a\'b c' d\ e #f g\"#),
            ["xy z", "a'b c", "d e", "#f", "g"]
        );
        assert_eq!(s("  "), Vec::<String>::new());
    }
}
