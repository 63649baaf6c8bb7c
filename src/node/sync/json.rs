//! The little JSON the sync reads (a Node, a JSON kubeconfig, a Status) and
//! writes (a merge patch): std only, like the wrapper it ships in.

/// A parsed JSON value; a number keeps no digits (nothing here reads them).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number,
    String(String),
    Array(Vec<Value>),
    /// Members in document order (a later duplicate wins in [`Value::get`]).
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object (the last one, as Go's decoder keeps).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Follow object members.
    pub fn path(&self, keys: &[&str]) -> Option<&Value> {
        keys.iter().try_fold(self, |v, k| v.get(k))
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> &[Value] {
        match self {
            Value::Array(a) => a,
            _ => &[],
        }
    }

    /// A `map[string]string` (labels, annotations): string members only,
    /// sorted by key, a later duplicate winning; O(n log n) in members.
    pub fn string_map(&self) -> Vec<(String, String)> {
        let Value::Object(m) = self else {
            return Vec::new();
        };
        last_wins(
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect(),
        )
    }
}

/// `pairs` sorted by key, only the last pair of each key kept (a stable
/// sort, then one pass).
fn last_wins<K: Ord, V>(mut pairs: Vec<(K, V)>) -> Vec<(K, V)> {
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(K, V)> = Vec::with_capacity(pairs.len());
    for p in pairs {
        match out.last_mut() {
            Some(last) if last.0 == p.0 => *last = p,
            _ => out.push(p),
        }
    }
    out
}

/// Nesting deeper than this is refused (no stack overflow on hostile input).
const MAX_DEPTH: usize = 128;

/// More values than this are refused: a value takes 32 bytes however short
/// its text, so 4 MiB of `[0,0,…]` would take 140 MB. A Node with 100,000
/// labels has about as many values; a real one, a few thousand.
const MAX_VALUES: usize = 1 << 18;

pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        values: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("trailing data after the value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    values: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> String {
        format!("invalid JSON at byte {}: {what}", self.i)
    }

    fn ws(&mut self) {
        while self
            .s
            .get(self.i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.i += 1;
        }
    }

    fn eat(&mut self, word: &[u8]) -> bool {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(self.err("more than 262144 values"));
        }
        self.ws();
        match self.s.get(self.i) {
            None => Err(self.err("unexpected end")),
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.eat(b"}") {
                    return Ok(Value::Object(members));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return Err(self.err("expected a member name"));
                    }
                    let k = self.string()?;
                    self.ws();
                    if !self.eat(b":") {
                        return Err(self.err("expected ':'"));
                    }
                    let v = self.value(depth + 1)?;
                    members.push((k, v));
                    self.ws();
                    if self.eat(b",") {
                        continue;
                    }
                    if self.eat(b"}") {
                        return Ok(Value::Object(members));
                    }
                    return Err(self.err("expected ',' or '}'"));
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat(b"]") {
                    return Ok(Value::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.eat(b",") {
                        continue;
                    }
                    if self.eat(b"]") {
                        return Ok(Value::Array(items));
                    }
                    return Err(self.err("expected ',' or ']'"));
                }
            }
            Some(b'"') => self.string().map(Value::String),
            Some(_) if self.eat(b"null") => Ok(Value::Null),
            Some(_) if self.eat(b"true") => Ok(Value::Bool(true)),
            Some(_) if self.eat(b"false") => Ok(Value::Bool(false)),
            Some(c) if *c == b'-' || c.is_ascii_digit() => {
                while self.s.get(self.i).is_some_and(|c| {
                    c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E')
                }) {
                    self.i += 1;
                }
                Ok(Value::Number)
            }
            Some(_) => Err(self.err("unexpected character")),
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self
            .s
            .get(self.i..self.i + 4)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.err("bad \\u escape"))?;
        self.i += 4;
        Ok(h)
    }

    fn string(&mut self) -> Result<String, String> {
        self.i += 1; // the opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.i) else {
                return Err(self.err("unterminated string"));
            };
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = self.s.get(self.i) else {
                        return Err(self.err("unterminated string"));
                    };
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) && self.eat(b"\\u") {
                                let lo = self.hex4()?;
                                0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF)
                            } else {
                                hi
                            };
                            char::from_u32(code).unwrap_or('\u{FFFD}')
                        }
                        _ => return Err(self.err("bad escape")),
                    };
                    let mut buf = [0; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                c if c < 0x20 => return Err(self.err("control character in a string")),
                c => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("a string is not UTF-8"))
    }
}

/// `s` as a JSON string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_node_shape() {
        let v = parse(
            r#"{"metadata":{"name":"n","resourceVersion":"42","labels":{"a":"1","b":"x\"y"}},
               "spec":{"taints":[{"key":"k","effect":"NoSchedule"}]},"n":-1.5e3,"t":true,"z":null}"#,
        )
        .unwrap();
        assert_eq!(
            v.path(&["metadata", "resourceVersion"]).unwrap().as_str(),
            Some("42")
        );
        assert_eq!(
            v.path(&["metadata", "labels"]).unwrap().string_map(),
            vec![("a".into(), "1".into()), ("b".into(), "x\"y".into())]
        );
        assert_eq!(v.path(&["spec", "taints"]).unwrap().as_array().len(), 1);
    }

    /// 100,000 labels: a map built with O(n log n) comparisons (counted),
    /// where a search per member would take n²/2 = 5·10⁹.
    #[test]
    fn a_large_map_is_built_in_n_log_n() {
        use std::cell::Cell;
        thread_local!(static COMPARED: Cell<u64> = const { Cell::new(0) });
        #[derive(Debug)]
        struct Counted(u32);
        impl PartialEq for Counted {
            fn eq(&self, o: &Self) -> bool {
                COMPARED.with(|c| c.set(c.get() + 1));
                self.0 == o.0
            }
        }
        impl Eq for Counted {}
        impl PartialOrd for Counted {
            fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(o))
            }
        }
        impl Ord for Counted {
            fn cmp(&self, o: &Self) -> std::cmp::Ordering {
                COMPARED.with(|c| c.set(c.get() + 1));
                self.0.cmp(&o.0)
            }
        }
        let n: u32 = 100_000;
        // Reversed, each key twice: the second value wins.
        let pairs: Vec<(Counted, u32)> = (0..2 * n).map(|i| (Counted(n - 1 - i % n), i)).collect();
        let map = last_wins(pairs);
        assert_eq!(map.len(), n as usize);
        assert!(map.windows(2).all(|w| w[0].0.0 < w[1].0.0));
        assert!(
            map.iter().all(|(k, v)| *v == 2 * n - 1 - k.0),
            "the later wins"
        );
        let compared = COMPARED.with(Cell::get);
        let bound = 2 * u64::from(2 * n) * 18; // 2·m·log2(m), m = 2n
        assert!(compared < bound, "{compared} comparisons");

        // And a Node's labels through the JSON: the same map.
        let mut text = String::from("{");
        for i in 0..n {
            text += &format!("\"example.com/k{i}\":\"v{i}\",");
        }
        text += "\"example.com/k7\":\"last\"}";
        let m = parse(&text).unwrap().string_map();
        assert_eq!(m.len(), n as usize);
        let at = m
            .binary_search_by(|(k, _)| k.as_str().cmp("example.com/k7"))
            .unwrap();
        assert_eq!(m[at].1, "last");
    }

    #[test]
    fn escapes_round_trip() {
        for s in ["plain", "q\"b\\s\n\t\u{1}", "ünï 😀"] {
            assert_eq!(parse(&quote(s)).unwrap(), Value::String(s.into()));
        }
        assert_eq!(
            parse(r#""\ud83d\ude00\u00fc""#).unwrap(),
            Value::String("😀ü".into())
        );
    }

    #[test]
    fn refuses_bad_input_without_panicking() {
        for bad in [
            "",
            "{",
            "[1,",
            "{\"a\" 1}",
            "\"abc",
            "nul",
            "{}x",
            "\"\\u12\"",
            "\"\\u+041\"",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(100_000);
        assert!(parse(&deep).unwrap_err().contains("deeply"));
    }

    /// 4 MiB of `[0,0,…]` took 140 MB: the count of values is bounded, and
    /// the bound leaves room for a Node with 100,000 labels (above).
    #[test]
    fn the_count_of_values_is_bounded() {
        let many = |n: usize| format!("[{}0]", "0,".repeat(n - 2));
        assert!(parse(&many(MAX_VALUES)).is_ok());
        let err = parse(&many(MAX_VALUES + 1)).unwrap_err();
        assert!(err.contains("262144 values"), "{err}");
        assert!(parse(&many(2 << 20)).is_err());
        assert_eq!(MAX_VALUES, 262_144, "the message names the bound");
    }
}
