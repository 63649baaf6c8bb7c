//! `registerWithTaints` from kubelet's `--config` file (YAML or JSON), read
//! with a small reader of the subset kubelet configs use. It refuses what it
//! cannot read with confidence (anchors, tags, block scalars in the list):
//! the caller then starts kubelet unchanged rather than guess.

use super::{Taint, TaintEffect};

/// Why the taints could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

fn fail<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(msg.into()))
}

/// A value of the flow/JSON subset.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    /// Quoted: always a string.
    Scalar(String),
    /// Unquoted: a string unless YAML reads it as a number or boolean.
    Plain(String),
    Null,
    List(Vec<Value>),
    Map(Vec<(String, Value)>),
}

/// Flow syntax: JSON, and YAML's `{a: b, c: [d]}`.
struct Flow<'a> {
    s: &'a [u8],
    i: usize,
}

impl Flow<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() {
            match self.s[self.i] {
                b' ' | b'\t' | b'\n' | b'\r' => self.i += 1,
                b'#' => {
                    while self.i < self.s.len() && self.s[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), ConfigError> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            fail(format!("expected '{}' at byte {}", c as char, self.i))
        }
    }

    fn value(&mut self) -> Result<Value, ConfigError> {
        match self.peek() {
            Some(b'{') => {
                self.i += 1;
                let mut map = Vec::new();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(Value::Map(map));
                }
                loop {
                    let key = match self.value()? {
                        Value::Scalar(k) | Value::Plain(k) => k,
                        _ => return fail("a mapping key is not a string"),
                    };
                    self.expect(b':')?;
                    let v = self.value()?;
                    map.push((key, v));
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Value::Map(map));
                        }
                        _ => return fail(format!("expected ',' or '}}' at byte {}", self.i)),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut list = Vec::new();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(Value::List(list));
                }
                loop {
                    list.push(self.value()?);
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::List(list));
                        }
                        _ => return fail(format!("expected ',' or ']' at byte {}", self.i)),
                    }
                }
            }
            Some(b'"') | Some(b'\'') => {
                let (s, used) = quoted(&self.s[self.i..])?;
                self.i += used;
                Ok(Value::Scalar(s))
            }
            Some(_) => {
                let start = self.i;
                while self.i < self.s.len() && !b",:]}\n".contains(&self.s[self.i]) {
                    self.i += 1;
                }
                // "a:b" inside a plain scalar: only ": " ends it in YAML, but
                // kubelet configs have no such values in this list.
                plain(std::str::from_utf8(&self.s[start..self.i]).unwrap_or(""))
            }
            None => fail("unexpected end of input"),
        }
    }
}

/// A quoted scalar at the start of `s`: (text, bytes used).
fn quoted(s: &[u8]) -> Result<(String, usize), ConfigError> {
    let q = s[0];
    let mut out = Vec::new();
    let mut i = 1;
    while i < s.len() {
        let c = s[i];
        if c == q {
            if q == b'\'' && s.get(i + 1) == Some(&b'\'') {
                out.push(b'\'');
                i += 2;
                continue;
            }
            let text = String::from_utf8(out).map_err(|_| ConfigError("invalid UTF-8".into()))?;
            return Ok((text, i + 1));
        }
        if q == b'"' && c == b'\\' {
            let e = *s
                .get(i + 1)
                .ok_or_else(|| ConfigError("unterminated string".into()))?;
            match e {
                b'"' | b'\\' | b'/' => out.push(e),
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                _ => return fail("an escape sequence this reader does not handle"),
            }
            i += 2;
            continue;
        }
        out.push(c);
        i += 1;
    }
    fail("unterminated string")
}

fn plain(text: &str) -> Result<Value, ConfigError> {
    let t = text.trim();
    if t.starts_with(['&', '*', '!', '|', '>', '%', '@', '`']) {
        return fail(format!("YAML feature not handled here: {t:?}"));
    }
    Ok(match t {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        _ => Value::Plain(t.to_string()),
    })
}

/// Would YAML (goyaml, as kubelet reads its config) give this unquoted
/// scalar a type other than string? Then kubelet cannot load it into a
/// string field and refuses the file.
fn typed_plain(t: &str) -> bool {
    const WORDS: [&str; 24] = [
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
        "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", ".nan", ".NaN",
    ];
    if WORDS.contains(&t) {
        return true;
    }
    // 2001-12-14 and longer timestamps
    let b = t.as_bytes();
    if b.len() >= 8 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' {
        return true;
    }
    let unsigned = t.strip_prefix(['-', '+']).unwrap_or(t);
    if [".inf", ".Inf", ".INF", ".NAN"].contains(&unsigned) {
        return true;
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    // 0x1F, 0o17, 0b101 (underscores allowed)
    if let Some(rest) = unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
        .or_else(|| unsigned.strip_prefix("0o"))
        .or_else(|| unsigned.strip_prefix("0b"))
    {
        return !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_hexdigit() || c == b'_');
    }
    // 123, 1_000
    if unsigned.starts_with(|c: char| c.is_ascii_digit())
        && unsigned.bytes().all(|c| c.is_ascii_digit() || c == b'_')
    {
        return true;
    }
    // [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
        None => (unsigned, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

/// Strip a trailing ` # comment` outside quotes.
fn strip_comment(line: &str) -> &str {
    let b = line.as_bytes();
    let mut quote = None;
    for (i, &c) in b.iter().enumerate() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'"' || c == b'\'' => quote = Some(c),
            None if c == b'#' && (i == 0 || b[i - 1] == b' ' || b[i - 1] == b'\t') => {
                return &line[..i];
            }
            None => {}
        }
    }
    line
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Split `key: value` (key plain or quoted).
fn split_key(text: &str) -> Option<(String, &str)> {
    let t = text.trim_start();
    if t.starts_with('"') || t.starts_with('\'') {
        let (k, used) = quoted(t.as_bytes()).ok()?;
        let rest = t[used..].trim_start().strip_prefix(':')?;
        return Some((k, rest));
    }
    let pos = t
        .find(": ")
        .or_else(|| t.strip_suffix(':').map(|s| s.len()))?;
    Some((t[..pos].trim_end().to_string(), t[pos + 1..].trim_start()))
}

/// Inline value after `key:` (flow collection or scalar); None if empty.
fn inline(text: &str) -> Result<Option<Value>, ConfigError> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let mut f = Flow {
        s: t.as_bytes(),
        i: 0,
    };
    let v = f.value()?;
    if f.peek().is_some() {
        return fail(format!("unexpected text after a value: {t:?}"));
    }
    Ok(Some(v))
}

/// Block-style: the lines after `registerWithTaints:` at `key_indent`.
fn block_list(lines: &[&str], key_indent: usize) -> Result<Value, ConfigError> {
    let mut items: Vec<Vec<(String, Value)>> = Vec::new();
    let mut item_indent = None;
    for raw in lines {
        let line = strip_comment(raw).trim_end();
        if line.trim().is_empty() {
            continue;
        }
        let ind = indent(line);
        let body = &line[ind..];
        let is_item = body == "-" || body.starts_with("- ");
        if ind < key_indent || (ind == key_indent && !is_item) {
            break;
        }
        if line.contains('\t') && line.trim_start_matches(' ').starts_with('\t') {
            return fail("tab indentation");
        }
        let field = if is_item {
            if item_indent.is_some_and(|i| i != ind) {
                return fail("list items at different indentation");
            }
            item_indent = Some(ind);
            let rest = body[1..].trim_start();
            if rest.starts_with('{') {
                match inline(rest)? {
                    Some(Value::Map(m)) => {
                        items.push(m);
                        continue;
                    }
                    _ => return fail("a list item is not a mapping"),
                }
            }
            items.push(Vec::new());
            if rest.is_empty() {
                continue;
            }
            rest
        } else {
            if item_indent.is_none_or(|i| ind <= i) {
                return fail(format!("unexpected line in registerWithTaints: {body:?}"));
            }
            body
        };
        let (k, v) =
            split_key(field).ok_or_else(|| ConfigError(format!("not `key: value`: {field:?}")))?;
        let v = inline(v)?.ok_or_else(|| ConfigError(format!("nested block under {k:?}")))?;
        items.last_mut().expect("item").push((k, v));
    }
    Ok(Value::List(items.into_iter().map(Value::Map).collect()))
}

fn find_top_level(text: &str) -> Result<Option<Value>, ConfigError> {
    let trimmed = text.trim_start_matches('\u{feff}');
    let first = trimmed
        .lines()
        .map(|l| strip_comment(l).trim())
        .find(|l| !l.is_empty() && *l != "---");
    if first.is_some_and(|l| l.starts_with('{')) {
        let mut f = Flow {
            s: trimmed.as_bytes(),
            i: 0,
        };
        let top = f.value()?;
        if f.peek().is_some() {
            return fail(format!(
                "unexpected text after the top-level mapping at byte {}",
                f.i
            ));
        }
        return match top {
            Value::Map(m) => Ok(m
                .into_iter()
                .rev()
                .find(|(k, _)| k == "registerWithTaints")
                .map(|(_, v)| v)),
            _ => fail("the config is not a mapping"),
        };
    }
    let lines: Vec<&str> = trimmed.lines().collect();
    let mut found = None;
    let mut content = false;
    for (n, raw) in lines.iter().enumerate() {
        let line = strip_comment(raw);
        if indent(line) != 0 || line.trim().is_empty() {
            continue;
        }
        // kubelet reads only the first document; a reader that merged them
        // would be wrong, so more than one is refused.
        let marker = line.trim_end();
        if marker == "---" || marker.starts_with("--- ") {
            if content || marker != "---" {
                return fail("more than one YAML document");
            }
            continue;
        }
        if marker == "..." || marker.starts_with('%') {
            return fail(format!("YAML document marker or directive {marker:?}"));
        }
        content = true;
        if let Some((k, v)) = split_key(line)
            && k == "registerWithTaints"
        {
            found = Some(match inline(v)? {
                Some(v) => v,
                None => block_list(&lines[n + 1..], 0)?,
            });
        }
    }
    Ok(found)
}

/// The `registerWithTaints` list of a kubelet config file, or None when the
/// file does not set it.
pub fn register_with_taints(text: &str) -> Result<Option<Vec<Taint>>, ConfigError> {
    let value = match find_top_level(text)? {
        None => return Ok(None),
        Some(Value::Null) => return Ok(Some(Vec::new())),
        Some(v) => v,
    };
    let Value::List(items) = value else {
        return fail("registerWithTaints is not a list");
    };
    let mut taints = Vec::new();
    for item in items {
        let Value::Map(fields) = item else {
            return fail("a registerWithTaints item is not a mapping");
        };
        let get = |name: &str| {
            fields
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| match v {
                    Value::Scalar(s) => Ok(Some(s.clone())),
                    Value::Plain(s) if !typed_plain(s) => Ok(Some(s.clone())),
                    Value::Null => Ok(None),
                    _ => fail(format!(
                        "registerWithTaints field {name:?} is not a string (kubelet refuses the file)"
                    )),
                })
                .transpose()
                .map(Option::flatten)
        };
        let key = get("key")?
            .ok_or_else(|| ConfigError("a registerWithTaints item has no key".into()))?;
        if fields
            .iter()
            .any(|(k, v)| k == "timeAdded" && *v != Value::Null)
        {
            return fail(format!(
                "registerWithTaints item {key:?} sets timeAdded, which kubelet refuses"
            ));
        }
        let effect_text = get("effect")?.unwrap_or_default();
        let effect = TaintEffect::parse(&effect_text).ok_or_else(|| {
            ConfigError(format!(
                "registerWithTaints item {key:?} has effect {effect_text:?}; the API server requires \
                 NoSchedule, PreferNoSchedule or NoExecute"
            ))
        })?;
        taints.push(Taint {
            key,
            value: get("value")?.unwrap_or_default(),
            effect,
        });
    }
    Ok(Some(taints))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::node::kubelet::taint as t;

    #[test]
    fn yaml_block_list() {
        let text = "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\n\
                    registerWithTaints:\n  - key: a # comment\n    value: \"b\"\n    effect: NoSchedule\n\
                    \x20 - {key: c, effect: NoExecute}\n  -\n    key: 'd'\n    effect: PreferNoSchedule\n\
                    maxPods: 250\n";
        assert_eq!(
            register_with_taints(text).unwrap().unwrap(),
            vec![
                t("a", "b", TaintEffect::NoSchedule),
                t("c", "", TaintEffect::NoExecute),
                t("d", "", TaintEffect::PreferNoSchedule)
            ]
        );
    }

    #[test]
    fn yaml_sequence_at_key_indent() {
        let text = "registerWithTaints:\n- key: a\n  effect: NoSchedule\nfoo: bar\n";
        assert_eq!(
            register_with_taints(text).unwrap().unwrap(),
            vec![t("a", "", TaintEffect::NoSchedule)]
        );
    }

    #[test]
    fn json_and_flow() {
        let json = r#"{"kind":"KubeletConfiguration","registerWithTaints":[{"key":"a","value":"b","effect":"NoExecute","timeAdded":null}],"maxPods":250}"#;
        assert_eq!(
            register_with_taints(json).unwrap().unwrap(),
            vec![t("a", "b", TaintEffect::NoExecute)]
        );
        assert_eq!(
            register_with_taints("registerWithTaints: []\n")
                .unwrap()
                .unwrap(),
            vec![]
        );
        assert_eq!(
            register_with_taints("registerWithTaints:\nmaxPods: 3\n")
                .unwrap()
                .unwrap(),
            vec![]
        );
    }

    #[test]
    fn absent_is_none() {
        let mco = "kind: KubeletConfiguration\nauthentication:\n  x509:\n    clientCAFile: /x\n\
                   clusterDNS:\n  - 172.30.0.10\nfeatureGates:\n  A: true\n";
        assert_eq!(register_with_taints(mco).unwrap(), None);
        assert_eq!(register_with_taints(r#"{"maxPods": 1}"#).unwrap(), None);
        // a nested key of the same name is not the kubelet field
        assert_eq!(
            register_with_taints("x:\n  registerWithTaints: []\n").unwrap(),
            None
        );
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for bad in [
            "registerWithTaints: &a\n  - key: a\n",
            "registerWithTaints:\n  - key: a\n    effect: *e\n",
            "registerWithTaints:\n  - key: a\n", // no effect
            "registerWithTaints:\n  - key: a\n    effect: bogus\n",
            "registerWithTaints:\n  - key: |\n      a\n",
            "registerWithTaints: {a: b}\n",
            "{\"registerWithTaints\": [1]}",
            "{\"registerWithTaints\": [",
        ] {
            assert!(register_with_taints(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_one_document() {
        let one = "---\nregisterWithTaints: [{key: a, effect: NoSchedule}]\n";
        assert_eq!(register_with_taints(one).unwrap().unwrap().len(), 1);
        for bad in [
            "maxPods: 1\n---\nregisterWithTaints: [{key: a, effect: NoSchedule}]\n",
            "registerWithTaints: []\n---\nmaxPods: 1\n",
            "registerWithTaints: []\n...\n",
            "%YAML 1.1\n---\nregisterWithTaints: []\n",
            "--- {registerWithTaints: []}\n",
            "{\"registerWithTaints\": []} {}",
        ] {
            assert!(register_with_taints(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fields_yaml_would_not_read_as_strings_are_refused() {
        for typed in [
            "123",
            "1_000",
            "0x1F",
            "0o17",
            "-1",
            "+1",
            "1.5",
            ".5",
            "1e3",
            "1.0e-3",
            "yes",
            "No",
            "on",
            "OFF",
            "true",
            "y",
            ".inf",
            "-.Inf",
            ".nan",
            "2001-12-14",
            "2001-12-14T21:59:43Z",
        ] {
            let text =
                format!("registerWithTaints:\n- key: a\n  value: {typed}\n  effect: NoSchedule\n");
            assert!(register_with_taints(&text).is_err(), "{typed}");
        }
        let json = r#"{"registerWithTaints":[{"key":"a","value":1,"effect":"NoSchedule"}]}"#;
        assert!(register_with_taints(json).is_err());
        // quoted, they are strings; and plain strings that only look close
        for (text, value) in [
            ("'123'", "123"),
            ("\"yes\"", "yes"),
            ("1gpu", "1gpu"),
            ("v1.2", "v1.2"),
            ("1-2", "1-2"),
            ("e5", "e5"),
            ("null", ""),
            ("~", ""),
        ] {
            let doc =
                format!("registerWithTaints:\n- key: a\n  value: {text}\n  effect: NoSchedule\n");
            assert_eq!(
                register_with_taints(&doc).unwrap().unwrap(),
                vec![t("a", value, TaintEffect::NoSchedule)],
                "{text}"
            );
        }
    }

    #[test]
    fn time_added_is_refused_unless_null() {
        let set = "registerWithTaints:\n- key: a\n  effect: NoSchedule\n  timeAdded: \"2024-01-01T00:00:00Z\"\n";
        assert!(
            register_with_taints(set)
                .unwrap_err()
                .to_string()
                .contains("timeAdded")
        );
        let null = "registerWithTaints:\n- key: a\n  effect: NoSchedule\n  timeAdded: null\n";
        assert_eq!(register_with_taints(null).unwrap().unwrap().len(), 1);
    }

    #[test]
    fn comments_quotes_and_flow_forms() {
        let text = "# kubelet\nkind: KubeletConfiguration # trailing\n\
                    \"registerWithTaints\": # the list\n\
                    \x20\x20# a comment line inside\n\
                    \x20\x20- {key: \"a#b\", value: 'it''s', effect: NoSchedule}\n\
                    \x20\x20- key: c\n    effect: NoExecute # why\n";
        assert_eq!(
            register_with_taints(text).unwrap().unwrap(),
            vec![
                t("a#b", "it's", TaintEffect::NoSchedule),
                t("c", "", TaintEffect::NoExecute)
            ]
        );
        let pretty = "{\n  \"kind\": \"KubeletConfiguration\",\n  \"registerWithTaints\": [\n    {\n      \"key\": \"a\",\n      \"effect\": \"NoSchedule\"\n    }\n  ]\n}\n";
        assert_eq!(
            register_with_taints(pretty).unwrap().unwrap(),
            vec![t("a", "", TaintEffect::NoSchedule)]
        );
        // the last of duplicate keys, as the Go YAML/JSON readers keep
        let dup =
            r#"{"registerWithTaints":[{"key":"a","effect":"NoSchedule"}],"registerWithTaints":[]}"#;
        assert_eq!(register_with_taints(dup).unwrap().unwrap(), vec![]);
    }
}
