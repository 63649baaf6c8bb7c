//! What go-yaml v2 (`kubectl apply -f`, the MCO: sigs.k8s.io/yaml) makes
//! of a plain scalar that may be a number: gopkg.in/yaml.v2 resolve.go's
//! `resolve` for the hints `D`, `S` (a digit or sign first: every `_`
//! dropped, then Go's `strconv.ParseInt(s, 0, 64)`, `ParseUint`, a YAML
//! style float, `0b`) and `.` (Go's `ParseFloat` of the text as written).
//! go-yaml v3 (kustomize) resolves these alike. Go reads `1_`, `0x1_`,
//! `685_230.15`, `1e1_0`, `-_1` and `0b-101` as numbers where YAML 1.2
//! (this crate's parser) reads strings, and `1e1000` (past a float) as a
//! string where it reads an infinity.

/// A plain scalar as go-yaml v2 resolves it (booleans, nulls, dates and
/// `.inf`/`.nan` are the caller's: see scalars.rs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum GoNumber {
    Int(i64),
    Uint(u64),
    Float(f64),
}

impl GoNumber {
    /// The value as kubectl passes it on: Go's JSON text of it, read
    /// back (a float without a fraction below 1e21 is written as its
    /// shortest digits, `1e16` as 10000000000000000).
    pub(super) fn json(self) -> serde_json::Value {
        match self {
            GoNumber::Int(i) => i.into(),
            GoNumber::Uint(u) => u.into(),
            GoNumber::Float(f) => go_float_json(f),
        }
    }

    /// Shortest texts of the value that YAML 1.2 reads as a number too.
    pub(super) fn texts(self) -> Vec<String> {
        match self {
            GoNumber::Int(i) => vec![i.to_string()],
            GoNumber::Uint(u) => vec![u.to_string()],
            GoNumber::Float(f) => vec![format!("{f:e}"), format!("{f}")],
        }
    }
}

/// A finite float as Go's `encoding/json` writes it, read back by
/// serde_json (an integral one below 1e21 becomes an integer where it
/// fits 64 bits).
pub(super) fn go_float_json(f: f64) -> serde_json::Value {
    if f.is_finite()
        && f.fract() == 0.0
        && f.abs() < 1e21
        && let Ok(v) = serde_json::from_str(&format!("{f}"))
    {
        return v;
    }
    serde_json::Value::from(f)
}

/// The number go-yaml v2 reads a plain scalar as, if any.
pub(super) fn number(value: &str) -> Option<GoNumber> {
    match value.as_bytes().first()? {
        b'.' => parse_float_dot(value).map(GoNumber::Float),
        b'0'..=b'9' | b'+' | b'-' => digit_or_sign(value),
        _ => None,
    }
}

/// Hints `D` and `S` (the timestamp tried first is the caller's).
fn digit_or_sign(value: &str) -> Option<GoNumber> {
    let plain = value.replace('_', "");
    if let Some(i) = parse_int(&plain, 0) {
        return Some(GoNumber::Int(i));
    }
    if let Some(u) = parse_uint(&plain, 0) {
        return Some(GoNumber::Uint(u));
    }
    if yaml_style_float(&plain)
        && let Ok(f) = plain.parse::<f64>()
        && f.is_finite()
    {
        return Some(GoNumber::Float(f));
    }
    if let Some(rest) = plain.strip_prefix("0b") {
        if let Some(i) = parse_int(rest, 2) {
            return Some(GoNumber::Int(i));
        }
        return parse_uint(rest, 2).map(GoNumber::Uint);
    }
    if let Some(rest) = plain.strip_prefix("-0b") {
        return parse_int(&format!("-{rest}"), 2).map(GoNumber::Int);
    }
    None
}

/// Go's `strconv.ParseUint(s, base, 64)` on a text without `_` (base 0:
/// `0x`, `0o`, `0b` or a leading `0` choose it).
fn parse_uint(s: &str, base: u32) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let (radix, digits) = if base == 0 {
        let b = s.as_bytes();
        if b[0] == b'0' {
            match b.get(1).map(u8::to_ascii_lowercase) {
                Some(b'b') if s.len() >= 3 => (2, &s[2..]),
                Some(b'o') if s.len() >= 3 => (8, &s[2..]),
                Some(b'x') if s.len() >= 3 => (16, &s[2..]),
                _ => (8, &s[1..]),
            }
        } else {
            (10, s)
        }
    } else {
        (base, s)
    };
    let mut n: u64 = 0;
    for c in digits.chars() {
        let d = c.to_digit(radix)?;
        n = n.checked_mul(u64::from(radix))?.checked_add(u64::from(d))?;
    }
    Some(n)
}

/// Go's `strconv.ParseInt(s, base, 64)` on a text without `_`.
fn parse_int(s: &str, base: u32) -> Option<i64> {
    let (neg, rest) = match s.as_bytes().first()? {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let u = parse_uint(rest, base)?;
    if neg {
        0i64.checked_sub_unsigned(u)
    } else {
        i64::try_from(u).ok()
    }
}

/// go-yaml's `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    if b.get(i) == Some(&b'.') {
        let n = digits(i + 1);
        if n == 0 {
            return false;
        }
        i += 1 + n;
    } else {
        let n = digits(i);
        if n == 0 {
            return false;
        }
        i += n;
        if b.get(i) == Some(&b'.') {
            i += 1 + digits(i + 1);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let n = digits(i);
        if n == 0 {
            return false;
        }
        i += n;
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat` of a text starting with `.` (hint `.`, the
/// text as written): digits and `_` between digits, an optional
/// exponent; None past a float (Go's range error).
fn parse_float_dot(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 1;
    let mut digits = 0;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        digits += usize::from(b[i].is_ascii_digit());
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        i += 1;
        if i < b.len() && matches!(b[i], b'+' | b'-') {
            i += 1;
        }
        if !b.get(i).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    // Go's underscoreOK: each `_` between two digits.
    let between = (0..b.len()).filter(|&j| b[j] == b'_').all(|j| {
        j > 0 && b[j - 1].is_ascii_digit() && b.get(j + 1).is_some_and(u8::is_ascii_digit)
    });
    if i != b.len() || !between {
        return None;
    }
    s.replace('_', "")
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use GoNumber::{Float, Int, Uint};

    /// go-yaml v2's answers (tests/yaml_readers.rs checks the same texts
    /// against it).
    #[test]
    fn numbers_as_go_yaml_v2_resolves_them() {
        for (text, want) in [
            ("1_", Some(Int(1))),
            ("0x1_", Some(Int(1))),
            ("685_230.15", Some(Float(685_230.15))),
            ("1e1_0", Some(Float(1e10))),
            ("1__0", Some(Int(10))),
            ("-_1", Some(Int(-1))),
            ("0_644", Some(Int(420))),
            ("0b-101", Some(Int(-5))),
            ("-0b101", Some(Int(-5))),
            ("08", Some(Float(8.0))),
            ("0o8", None),
            ("0x", None),
            ("1e1000", None),
            ("18446744073709551615", Some(Uint(u64::MAX))),
            ("+18446744073709551615", Some(Float(1.8446744073709552e19))),
            (".5_0", Some(Float(0.5))),
            ("._5", None),
            (".5_", None),
            ("_1", None),
            ("1:20", None),
            ("0x1p3", None),
            ("-9223372036854775808", Some(Int(i64::MIN))),
        ] {
            assert_eq!(number(text), want, "{text}");
        }
        assert_eq!(
            Float(1e16).json(),
            serde_json::json!(10_000_000_000_000_000u64)
        );
    }
}
