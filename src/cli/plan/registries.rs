//! Whether the MCO's daemon drains a node for a registries.conf change
//! (the `Special` action of its default node disruption policy): crio
//! reloads, and the node drains unless the change is one the daemon judges
//! safe. A port of `isSafeContainerRegistryConfChanges`
//! (openshift/machine-config-operator `pkg/daemon/drain.go`), which decodes
//! both sides into containers/image's `sysregistriesv2.V2RegistriesConf`
//! with github.com/BurntSushi/toml (v1.5.0, TOML 1.0). What plan cannot read
//! exactly as that reader reads it is priced as a drain (the larger cost).

use std::collections::BTreeMap;

use serde_json::Value;

/// The daemon's judgement of a registries.conf change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Safe to skip the drain: crio reloads.
    Safe,
    /// The node drains, and why.
    Drain(String),
}

/// A registry's or a mirror's endpoint (`sysregistriesv2.Endpoint`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Endpoint {
    location: String,
    insecure: bool,
    pull_from_mirror: String,
}

/// `sysregistriesv2.Registry`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Registry {
    prefix: String,
    endpoint: Endpoint,
    mirrors: Vec<Endpoint>,
    blocked: bool,
    mirror_by_digest_only: bool,
}

/// What the daemon compares of a `V2RegistriesConf`.
#[derive(Debug, Default)]
struct Conf {
    registries: Vec<Registry>,
    unqualified_search: Vec<String>,
}

/// `sysregistriesv2.MirrorByDigestOnly`.
const DIGEST_ONLY: &str = "digest-only";

/// The judgement of a change between two sides' merged entries, as plan
/// keeps them (`None`: the render writes no registries.conf; `Some(None)`:
/// its contents were not kept). A side without the file has the MCO's own
/// in the pool's rendered config (its template, the cluster's mirror
/// sets), which the render does not show: a drain.
pub fn judge_entries(old: Option<Option<&Value>>, new: Option<Option<&Value>>) -> Verdict {
    match (old, new) {
        (Some(Some(old)), Some(Some(new))) => judge(Some(old), Some(new)),
        (Some(None), _) | (_, Some(None)) => {
            Verdict::Drain("its contents were not kept to judge".into())
        }
        _ => Verdict::Drain(
            "one side is the MCO's own registries.conf, which the render does not hold".into(),
        ),
    }
}

/// The daemon's judgement of moving from the `old` to the `new` rendered
/// file entry of registries.conf (none: no such file, read as empty).
pub fn judge(old: Option<&Value>, new: Option<&Value>) -> Verdict {
    let read = |side: &str, f: Option<&Value>| {
        conf_of(f).map_err(|why| format!("the {side} registries.conf {why}"))
    };
    match (read("current", old), read("new", new)) {
        (Ok(old), Ok(new)) => match unsafe_change(&old, &new) {
            None => Verdict::Safe,
            Some(why) => Verdict::Drain(why),
        },
        (Err(why), _) | (_, Err(why)) => Verdict::Drain(why),
    }
}

/// The file's contents as `GetIgnitionFileDataByPath` gives them (the
/// data URL's bytes, never decompressed), decoded as the daemon decodes
/// them.
fn conf_of(file: Option<&Value>) -> Result<Conf, String> {
    let source = file.and_then(|f| f.pointer("/contents/source"));
    let bytes = match source.and_then(Value::as_str) {
        Some(s) => crate::cli::render::dataurl::decode(s)
            .map_err(|why| format!("has a data URL the MCO cannot decode ({why})"))?,
        None => Vec::new(),
    };
    decode(&bytes)
}

/// The merged file entry's TOML table, for crio's own checks
/// (`crio_registries`): what the MCO's reader refuses or plan cannot read
/// as it does (`decode`), a compressed or appended file (crio reads the
/// bytes on disk, which the daemon's judgement does not), is an error.
pub fn table_of(file: &Value) -> Result<toml::Table, String> {
    let compressed = file
        .pointer("/contents/compression")
        .and_then(Value::as_str);
    let appended = file.get("append").and_then(Value::as_array);
    if compressed.is_some_and(|c| !c.is_empty()) || appended.is_some_and(|a| !a.is_empty()) {
        return Err("is compressed or appended to: plan cannot read what crio reads".into());
    }
    let source = file.pointer("/contents/source").and_then(Value::as_str);
    let bytes = crate::cli::render::dataurl::decode(source.unwrap_or("data:,"))
        .map_err(|why| format!("has a data URL plan cannot decode ({why})"))?;
    decode(&bytes)?;
    let bytes = [&b"\xff\xfe"[..], b"\xfe\xff", b"\xef\xbb\xbf"]
        .iter()
        .find_map(|bom| bytes.strip_prefix(*bom))
        .unwrap_or(&bytes);
    let text = std::str::from_utf8(bytes).map_err(|_| "is not UTF-8".to_string())?;
    text.parse()
        .map_err(|e: toml::de::Error| format!("is not TOML ({})", e.message()))
}

/// `toml.Decode` into `V2RegistriesConf`; an error where plan cannot be
/// sure the MCO's reader reads the same (it may refuse the file, and the
/// update fails on the node).
fn decode(bytes: &[u8]) -> Result<Conf, String> {
    let unread = |why: &str| {
        format!("{why}: plan cannot read it as the MCO does (the MCO may drain or fail the update)")
    };
    // The Go reader skips one byte order mark, UTF-16's two bytes (either
    // order) or UTF-8's three, and reads a second as text (it refuses the
    // file); the Rust reader skips another: refused here.
    let bytes = [&b"\xff\xfe"[..], b"\xfe\xff", b"\xef\xbb\xbf"]
        .iter()
        .find_map(|bom| bytes.strip_prefix(*bom))
        .unwrap_or(bytes);
    let text = std::str::from_utf8(bytes).map_err(|_| unread("is not UTF-8"))?;
    if text.starts_with('\u{feff}') {
        return Err(
            "starts with two byte order marks: the MCO's TOML reader refuses it, and the \
             update fails on the node"
                .into(),
        );
    }
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| unread(&format!("is not TOML ({})", e.message())))?;
    if let Some(what) = toml_1_1_only(text) {
        return Err(unread(&format!(
            "uses {what} (TOML 1.1; the MCO reads TOML 1.0)"
        )));
    }
    if let Some(what) = table.values().find_map(not_plain) {
        return Err(unread(&format!("holds {what}")));
    }
    v2_conf(&table).map_err(|e| match e {
        Fault::Refused(why) => {
            format!("{why}: the MCO's TOML reader refuses it, and the update fails on the node")
        }
        Fault::Chance(why) => unread(&why),
    })
}

/// Why the Go reader's `V2RegistriesConf` is not known.
enum Fault {
    /// The reader refuses the file (a value of the wrong type).
    Refused(String),
    /// The reader's result depends on Go's map order.
    Chance(String),
}

impl From<String> for Fault {
    fn from(why: String) -> Fault {
        Fault::Refused(why)
    }
}

/// TOML 1.1 syntax the MCO's reader (TOML 1.0) refuses: a newline or a
/// trailing comma in an inline table, a `\e` or `\x` escape, a bare key
/// beyond ASCII.
fn toml_1_1_only(text: &str) -> Option<&'static str> {
    use toml_parser::lexer::TokenKind as K;
    let tokens = toml_parser::Source::new(text).lex().into_vec();
    let mut open: Vec<K> = Vec::new();
    let mut comma_in_table = false;
    for t in &tokens {
        let raw = text.get(t.span().start()..t.span().end()).unwrap_or("");
        let in_table = open.last() == Some(&K::LeftCurlyBracket);
        match t.kind() {
            k @ (K::LeftCurlyBracket | K::LeftSquareBracket) => open.push(k),
            K::RightCurlyBracket if comma_in_table => {
                return Some("a trailing comma in an inline table");
            }
            K::RightCurlyBracket | K::RightSquareBracket => {
                open.pop();
            }
            K::Newline | K::Comment if in_table => return Some("a newline in an inline table"),
            K::BasicString | K::MlBasicString => {
                let mut b = raw.bytes();
                while let Some(c) = b.next() {
                    if c == b'\\' && matches!(b.next(), Some(b'e' | b'x')) {
                        return Some("a \\e or \\x escape");
                    }
                }
            }
            K::Atom if !raw.is_ascii() => return Some("a bare key beyond ASCII"),
            _ => {}
        }
        comma_in_table = match t.kind() {
            K::Comma => in_table,
            K::Whitespace => comma_in_table,
            _ => false,
        };
    }
    None
}

/// A value plan does not read as the Go reader does: numbers and dates
/// (their ranges and forms differ between the readers; registries.conf
/// has none).
fn not_plain(v: &toml::Value) -> Option<&'static str> {
    match v {
        toml::Value::String(_) | toml::Value::Boolean(_) => None,
        toml::Value::Integer(_) | toml::Value::Float(_) => Some("a number"),
        toml::Value::Datetime(_) => Some("a date-time"),
        toml::Value::Array(a) => a.iter().find_map(not_plain),
        toml::Value::Table(t) => t.values().find_map(not_plain),
    }
}

/// Go's `strings.EqualFold` of a field name (ASCII) and a key: simple case
/// folding, where the Kelvin sign is a `k` and the long s an `s`.
fn fold_eq(field: &str, key: &str) -> bool {
    field.chars().count() == key.chars().count()
        && field.chars().zip(key.chars()).all(|(f, k)| {
            f.eq_ignore_ascii_case(&k)
                || (f == 'k' && k == '\u{212A}')
                || (f == 's' && k == '\u{17F}')
        })
}

/// BurntSushi/toml's `unifyStruct`: each key of `table` sets the field of
/// its name, else the first field whose name it equals folded; other keys
/// are left. Two keys setting one field are set in Go's map order (at
/// random): refused.
fn fields<'a>(
    table: &'a toml::Table,
    names: &[&'static str],
) -> Result<BTreeMap<&'static str, &'a toml::Value>, Fault> {
    let mut out: BTreeMap<&'static str, (&'a str, &'a toml::Value)> = BTreeMap::new();
    for (key, value) in table {
        let Some(name) =
            (names.iter().find(|n| **n == key)).or_else(|| names.iter().find(|n| fold_eq(n, key)))
        else {
            continue;
        };
        if let Some((other, _)) = out.insert(name, (key, value)) {
            return Err(Fault::Chance(format!(
                "has keys {other:?} and {key:?} that both set {name}, in an order Go leaves to \
                 chance"
            )));
        }
    }
    Ok(out.into_iter().map(|(n, (_, v))| (n, v)).collect())
}

fn string(v: &toml::Value, name: &str) -> Result<String, String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{name} is not a string"))
}

fn boolean(v: &toml::Value, name: &str) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| format!("{name} is not a boolean"))
}

fn strings(v: &toml::Value, name: &str) -> Result<Vec<String>, String> {
    let a = v
        .as_array()
        .ok_or_else(|| format!("{name} is not an array"))?;
    a.iter().map(|s| string(s, name)).collect()
}

fn tables<'a>(v: &'a toml::Value, name: &str) -> Result<Vec<&'a toml::Table>, String> {
    let a = v
        .as_array()
        .ok_or_else(|| format!("{name} is not an array"))?;
    a.iter()
        .map(|t| {
            t.as_table()
                .ok_or_else(|| format!("{name} holds a non-table"))
        })
        .collect()
}

/// `V2RegistriesConf` (and what its fields refuse: every field is decoded,
/// a wrong type fails the whole file).
fn v2_conf(table: &toml::Table) -> Result<Conf, Fault> {
    let f = fields(table, &super::crio_registries::TOP)?;
    let mut conf = Conf::default();
    for (name, v) in f {
        match name {
            "registry" => {
                conf.registries = tables(v, name)?
                    .into_iter()
                    .map(registry)
                    .collect::<Result<_, _>>()?;
            }
            "unqualified-search-registries" => conf.unqualified_search = strings(v, name)?,
            "credential-helpers" => {
                strings(v, name)?;
            }
            // `unifyMap` leaves a non-table alone.
            "aliases" => {
                for (alias, to) in v.as_table().into_iter().flatten() {
                    string(to, &format!("aliases.{alias}"))?;
                }
            }
            _ => {
                string(v, name)?;
            }
        }
    }
    Ok(conf)
}

fn endpoint_field(e: &mut Endpoint, name: &str, v: &toml::Value) -> Result<bool, String> {
    match name {
        "location" => e.location = string(v, name)?,
        "insecure" => e.insecure = boolean(v, name)?,
        "pull-from-mirror" => e.pull_from_mirror = string(v, name)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn registry(t: &toml::Table) -> Result<Registry, Fault> {
    let f = fields(
        t,
        &[
            "prefix",
            "location",
            "insecure",
            "pull-from-mirror",
            "mirror",
            "blocked",
            "mirror-by-digest-only",
        ],
    )?;
    let mut r = Registry::default();
    for (name, v) in f {
        if endpoint_field(&mut r.endpoint, name, v)? {
            continue;
        }
        match name {
            "prefix" => r.prefix = string(v, name)?,
            "blocked" => r.blocked = boolean(v, name)?,
            "mirror-by-digest-only" => r.mirror_by_digest_only = boolean(v, name)?,
            _ => {
                r.mirrors = tables(v, name)?
                    .into_iter()
                    .map(|m| {
                        let mut e = Endpoint::default();
                        for (name, v) in fields(m, &["location", "insecure", "pull-from-mirror"])? {
                            endpoint_field(&mut e, name, v)?;
                        }
                        Ok::<_, Fault>(e)
                    })
                    .collect::<Result<_, _>>()?;
            }
        }
    }
    Ok(r)
}

/// `isSafeContainerRegistryConfChanges`: why the change is not safe, none
/// when it is (only digest-only mirrors or registries added, search
/// registries only appended).
fn unsafe_change(old: &Conf, new: &Conf) -> Option<String> {
    let (o, n) = (&old.unqualified_search, &new.unqualified_search);
    if o.len() > n.len() || o.iter().zip(n).any(|(a, b)| a != b) {
        return Some("unqualified-search-registries changed (not only appended to)".into());
    }
    // Keyed by prefix, else location; a later registry of the same key
    // replaces an earlier one.
    let by_scope = |c: &Conf| -> BTreeMap<String, Registry> {
        (c.registries.iter())
            .map(|r| {
                let scope = if r.prefix.is_empty() {
                    &r.endpoint.location
                } else {
                    &r.prefix
                };
                (scope.clone(), r.clone())
            })
            .collect()
    };
    let (old, new) = (by_scope(old), by_scope(new));
    if let Some(scope) = old.keys().find(|s| !new.contains_key(*s)) {
        return Some(format!("registry {scope:?} removed"));
    }
    let find = |loc: &str, list: &[Endpoint]| list.iter().find(|m| m.location == loc).cloned();
    for (scope, n) in &new {
        let Some(o) = old.get(scope) else {
            // allDigestOnlyMirror.
            let digest_only = if n.mirrors.is_empty() {
                n.mirror_by_digest_only
            } else {
                n.mirrors.iter().all(|m| m.pull_from_mirror == DIGEST_ONLY)
            };
            if !digest_only {
                return Some(format!(
                    "registry {scope:?} added with a mirror not pull-from-mirror = \"digest-only\""
                ));
            }
            continue;
        };
        if o == n {
            continue;
        }
        for (what, changed) in [
            ("prefix", o.prefix != n.prefix),
            ("location", o.endpoint.location != n.endpoint.location),
            ("blocked", o.blocked != n.blocked),
            ("insecure", o.endpoint.insecure != n.endpoint.insecure),
        ] {
            if changed {
                return Some(format!("registry {scope:?}: {what} changed"));
            }
        }
        if let Some(m) = o
            .mirrors
            .iter()
            .find(|m| find(&m.location, &n.mirrors).is_none())
        {
            return Some(format!(
                "registry {scope:?}: mirror {:?} removed",
                m.location
            ));
        }
        for m in &n.mirrors {
            match find(&m.location, &o.mirrors) {
                Some(was)
                    if m.pull_from_mirror != was.pull_from_mirror
                        && m.pull_from_mirror != DIGEST_ONLY =>
                {
                    return Some(format!(
                        "registry {scope:?}: mirror {:?} pull-from-mirror changed from {:?} to {:?}",
                        m.location, was.pull_from_mirror, m.pull_from_mirror
                    ));
                }
                Some(_) => {}
                None if m.pull_from_mirror != DIGEST_ONLY && !n.mirror_by_digest_only => {
                    return Some(format!(
                        "registry {scope:?}: mirror {:?} added without pull-from-mirror = \
                         \"digest-only\"",
                        m.location
                    ));
                }
                None => {}
            }
        }
    }
    None
}

#[cfg(test)]
#[path = "registries_tests.rs"]
mod tests;
