//! `registerWithTaints` as kubelet reads it from its `--config` file and its
//! `--config-dir` drop-ins (kubelet 1.36: cmd/kubelet/app/server.go
//! `loadConfigFile` and `mergeKubeletConfigurations`, pkg/kubelet/
//! kubeletconfig/util/codec, apimachinery's JSON/YAML serializer):
//!
//! - a file whose first non-space character is `{` is JSON, any other is
//!   YAML: go-yaml v2's first document, converted to JSON by
//!   sigs.k8s.io/yaml (see `yaml.rs`);
//! - its `apiVersion`/`kind` must name `kubelet.config.k8s.io/v1beta1`
//!   `KubeletConfiguration`;
//! - the `--config` file's fields are matched case-sensitively and a
//!   repeated key keeps its last value; a drop-in may repeat no key;
//! - drop-ins are JSON-merge-patched over the config in order, then decoded
//!   with Go's encoding/json: field names match case-insensitively.
//!
//! What this reader cannot reproduce with confidence it refuses
//! (`ConfigError`): the caller then cannot know the taints kubelet
//! registers, and fails closed.

mod json;
mod scan;
mod yaml;

use super::taints::parse_taints;
use super::{Taint, TaintEffect};
use crate::node::sorted::Runs;

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

/// [`fail`] of a fixed message, the String made out of line (one copy for
/// the readers' many refusals).
#[inline(never)]
fn refusal(msg: &str) -> ConfigError {
    ConfigError(msg.to_string())
}

/// A config as JSON: what kubelet decodes.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Null,
    /// A number or a boolean: never a string field's value.
    Other,
    Str(String),
    Seq(Vec<Value>),
    /// Keys in the order Go's decoder meets them (JSON: as written, repeats
    /// kept; from YAML: each once).
    Map(Vec<(String, Value)>),
}

const FIELD: &str = "registerWithTaints";

/// Go's encoding/json field-name folding (`foldName`): ASCII case, and the
/// non-ASCII letters whose upper(lower(c)) is ASCII.
fn fold_eq(a: &str, b: &str) -> bool {
    let fold = |c: char| match c {
        '\u{212a}' => 'K',
        '\u{17f}' => 'S',
        '\u{130}' | '\u{131}' => 'I',
        c => c.to_ascii_uppercase(),
    };
    a.chars().map(fold).eq(b.chars().map(fold))
}

/// A file's top-level mapping, checked as kubelet's decoder checks it.
fn load(text: &str, dropin: bool) -> Result<Vec<(String, Value)>, ConfigError> {
    if text.is_empty() {
        // kubelet refuses to start with an empty file ("was empty") and so
        // registers nothing; like a missing --config (kubeadm writes it at
        // `join`), it has no taints to keep
        return Ok(Vec::new());
    }
    let is_json = text
        .trim_start_matches(char::is_whitespace)
        .starts_with('{');
    let (top, dup) = if is_json {
        let v = json::parse(text)?;
        let dup = has_dup(&v);
        (v, dup)
    } else {
        yaml::parse(text)?
    };
    if dropin && dup {
        return Err(refusal("a drop-in repeats a key (kubelet refuses it)"));
    }
    let Value::Map(top) = top else {
        return Err(refusal("the file is not a mapping (kubelet refuses it)"));
    };
    // SimpleMetaFactory.Interpret: encoding/json, names folded, in the
    // order of the JSON kubelet decodes (YAML's comes sorted)
    let mut order: Vec<&(String, Value)> = top.iter().collect();
    if !is_json {
        order.sort_by(|a, b| a.0.cmp(&b.0));
    }
    let (mut version, mut kind) = ("", "");
    for (k, v) in order {
        let slot = if fold_eq(k, "apiVersion") {
            &mut version
        } else if fold_eq(k, "kind") {
            &mut kind
        } else {
            continue;
        };
        match v {
            Value::Str(s) => *slot = s,
            Value::Null => {}
            _ => return fail(format!("{k} is not a string (kubelet refuses the file)")),
        }
    }
    if dropin {
        // an Unstructured object's own apiVersion and kind
        let exact = |name| match top.iter().find(|(k, _)| k == name) {
            Some((_, Value::Str(s))) => s.as_str(),
            _ => "",
        };
        (version, kind) = (exact("apiVersion"), exact("kind"));
    }
    if (version, kind) != ("kubelet.config.k8s.io/v1beta1", "KubeletConfiguration") {
        return fail(format!(
            "apiVersion {version:?} kind {kind:?} is not kubelet.config.k8s.io/v1beta1 \
             KubeletConfiguration (kubelet refuses the file)"
        ));
    }
    Ok(top)
}

fn has_dup(v: &Value) -> bool {
    match v {
        Value::Seq(items) => items.iter().any(has_dup),
        // One sort of the keys, not a scan per key (a map of 100,000 keys
        // took the wrapper minutes).
        Value::Map(m) => {
            let mut keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
            keys.sort_unstable();
            keys.windows(2).any(|w| w[0] == w[1]) || m.iter().any(|(_, v)| has_dup(v))
        }
        _ => false,
    }
}

/// A `v1.Taint` as decoded: key, value, effect, and whether timeAdded is set.
type Item = (String, String, String, bool);

/// A `[]v1.Taint` decoded from `v` (`fold`: encoding/json's folded names,
/// else sigs.k8s.io/json's exact ones).
fn decode(v: &Value, fold: bool) -> Result<Vec<Item>, ConfigError> {
    let items = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Seq(items) => items,
        _ => return fail(format!("{FIELD} is not a list (kubelet refuses the file)")),
    };
    let mut out = Vec::new();
    for item in items {
        let mut fields = [""; 3];
        let mut time_added = false;
        let empty = Vec::new();
        let pairs = match item {
            Value::Map(m) => m,
            Value::Null => &empty,
            _ => return fail(format!("a {FIELD} item is not a mapping")),
        };
        let mut pairs: Vec<&(String, Value)> = pairs.iter().collect();
        if fold {
            // a map marshaled by Go: keys sorted
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
        }
        for (k, v) in pairs {
            let is = |name: &str| if fold { fold_eq(k, name) } else { k == name };
            if is("timeAdded") {
                // null leaves the pointer nil; anything else is refused
                // (not a time, or a time kubelet's validation refuses)
                time_added = *v != Value::Null;
                continue;
            }
            let Some(slot) = ["key", "value", "effect"].iter().position(|n| is(n)) else {
                continue;
            };
            match v {
                Value::Str(s) => fields[slot] = s,
                Value::Null => {}
                _ => {
                    return fail(format!(
                        "{FIELD} field {k:?} is not a string (kubelet refuses the file)"
                    ));
                }
            }
        }
        let [key, value, effect] = fields.map(str::to_string);
        out.push((key, value, effect, time_added));
    }
    Ok(out)
}

/// The taints kubelet registers, checked as its validation and the API
/// server check them.
fn validate(items: Vec<Item>) -> Result<Vec<Taint>, ConfigError> {
    let mut out = Vec::new();
    for (key, value, effect, time_added) in items {
        if time_added {
            return fail(format!(
                "{FIELD} item {key:?} sets timeAdded (kubelet refuses it)"
            ));
        }
        let Some(effect) = TaintEffect::parse(&effect) else {
            return fail(format!(
                "{FIELD} item {key:?} has effect {effect:?}; the API server requires \
                 NoSchedule, PreferNoSchedule or NoExecute"
            ));
        };
        let t = Taint { key, value, effect };
        // kubelet's checks of key and value are the flag's
        if parse_taints(&t.to_string()).as_deref() != Ok(std::slice::from_ref(&t)) {
            return fail(format!(
                "{FIELD} has a taint kubelet refuses: key {:?}, value {:?}",
                t.key, t.value
            ));
        }
        out.push(t);
    }
    Ok(out)
}

fn config_items(text: &str) -> Result<Option<Vec<Item>>, ConfigError> {
    let top = load(text, false)?;
    let mut found = top.iter().filter(|(k, _)| k == FIELD);
    let Some((_, v)) = found.next() else {
        return Ok(None);
    };
    if found.next().is_some() {
        // Go decodes the second list into the first one's elements
        return fail(format!(
            "the JSON config repeats {FIELD}, which this reader does not follow"
        ));
    }
    decode(v, false).map(Some)
}

/// A config file's bytes as kubelet's readers take them: UTF-8; UTF-16
/// after its byte order mark (go-yaml decodes it); JSON holding bytes that
/// are not UTF-8 (encoding/json reads each as U+FFFD). Anything else kubelet
/// refuses (go-yaml: "invalid leading UTF-8 octet").
pub fn text(bytes: Vec<u8>) -> Result<String, ConfigError> {
    let be = match bytes.get(..2) {
        Some([0xfe, 0xff]) => Some(true),
        Some([0xff, 0xfe]) => Some(false),
        _ => None,
    };
    if let Some(be) = be {
        let units = bytes.chunks(2).map(|c| match *c {
            [a, b] if be => Ok(u16::from_be_bytes([a, b])),
            [a, b] => Ok(u16::from_le_bytes([a, b])),
            _ => Err(()),
        });
        let mut out = String::new();
        for u in char::decode_utf16(units.map_while(Result::ok)) {
            out.push(u.map_err(|_| refusal("the UTF-16 config holds an unpaired surrogate"))?);
        }
        if !bytes.len().is_multiple_of(2) {
            return Err(refusal("the UTF-16 config ends in half a character"));
        }
        return Ok(out);
    }
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => {
            let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
            if lossy
                .trim_start_matches(char::is_whitespace)
                .starts_with('{')
            {
                Ok(lossy)
            } else {
                Err(refusal(
                    "the file is neither UTF-8 nor UTF-16 with a byte order mark",
                ))
            }
        }
    }
}

/// The `registerWithTaints` of a `--config` file alone: None when the file
/// does not set it.
pub fn register_with_taints(text: &str) -> Result<Option<Vec<Taint>>, ConfigError> {
    config_items(text)?.map(validate).transpose()
}

/// The taints kubelet registers from its `--config` file (None: kubelet
/// runs without one) and the `--config-dir` drop-ins (`dropins`, in the
/// order kubelet merges them; `None`: no `--config-dir`).
pub fn kubelet_taints(
    config: Option<&str>,
    dropins: Option<&[&str]>,
) -> Result<Vec<Taint>, ConfigError> {
    let Some(dropins) = dropins else {
        return validate(config_base(config)?);
    };
    let mut merge = Merge::new(config)?;
    for text in dropins {
        merge.dropin(text)?;
    }
    merge.taints()
}

fn config_base(config: Option<&str>) -> Result<Vec<Item>, ConfigError> {
    match config {
        Some(text) => Ok(config_items(text)?.unwrap_or_default()),
        None => Ok(Vec::new()),
    }
}

/// [`kubelet_taints`] under a `--config-dir`, one drop-in at a time: each
/// is parsed as it is read and dropped, none kept (kubelet reads them so).
pub struct Merge {
    /// The merge document's keys that fold to registerWithTaints: the
    /// config's (marshaled from v1beta1, omitted when empty), then patches
    /// (None: removed by a null). Names differing in case are as many keys
    /// as a drop-in holds: a scan of these per key was quadratic.
    merged: Runs<String, Option<Value>>,
    /// Drop-ins merged so far.
    count: usize,
}

impl Merge {
    /// Over the `--config` file's taints (None: kubelet runs without one).
    pub fn new(config: Option<&str>) -> Result<Merge, ConfigError> {
        let base = config_base(config)?;
        let mut merged = Runs::new();
        if !base.is_empty() {
            let items = base
                .into_iter()
                .map(|(key, value, effect, time_added)| {
                    let mut m = vec![
                        ("key".into(), Value::Str(key)),
                        ("value".into(), Value::Str(value)),
                        ("effect".into(), Value::Str(effect)),
                    ];
                    if time_added {
                        m.push(("timeAdded".into(), Value::Other));
                    }
                    Value::Map(m)
                })
                .collect();
            merged.insert(FIELD.into(), Some(Value::Seq(items)));
        }
        Ok(Merge { merged, count: 0 })
    }

    /// The next drop-in, JSON-merge-patched over the config and those
    /// before it.
    pub fn dropin(&mut self, text: &str) -> Result<(), ConfigError> {
        self.count += 1;
        let n = self.count;
        let top = load(text, true).map_err(|e| ConfigError(format!("drop-in {n}: {e}")))?;
        for (k, v) in top.into_iter().filter(|(k, _)| fold_eq(k, FIELD)) {
            self.merged.insert(k, Some(v).filter(|v| *v != Value::Null));
        }
        Ok(())
    }

    /// The taints kubelet registers with, the drop-ins merged.
    pub fn taints(self) -> Result<Vec<Taint>, ConfigError> {
        let set: Vec<Value> = self
            .merged
            .into_sorted()
            .into_iter()
            .filter_map(|(_, v)| v)
            .collect();
        match set.as_slice() {
            [] => Ok(Vec::new()),
            [v] => validate(decode(v, true)?),
            _ => fail(format!(
                "{FIELD} set under names differing in case; Go decodes one list into the other's \
                 elements, which this reader does not follow"
            )),
        }
    }
}

#[cfg(test)]
mod tests;
