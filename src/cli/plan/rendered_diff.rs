//! What the MCO's daemon compares between a pool's two rendered configs
//! (`CalculateConfigFileDiffs`, `GetChangedConfigUnitsByType`, the
//! `passwd` diff): each file and each unit whole, as `MergeMachineConfigs`
//! merges them. A file whose owner, `overwrite` or `verification` alone
//! changes, or a unit whose `enabled` alone changes, is a change: without
//! a policy entry for it, a reboot.
//!
//! Each is kept as a SHA-256 digest of what is compared, not the JSON
//! itself: every pool of a render compares worker's MachineConfigs, whose
//! `passwd` or data URLs may be megabytes.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use anyhow::Result;
use serde_json::Value;

use super::policy::Changed;
use crate::cli::render::layout::merge_order;
use crate::cli::sha256::Sha256;

/// What is compared of a file, unit or `passwd`: equal exactly when the
/// JSON is (members in any order, a `null` member as absent).
pub type Digest = [u8; 32];

/// Digests of a render's own JSON, each taken once however many pools
/// compare it (every custom pool takes worker's MachineConfigs).
pub struct Memo {
    /// Where the render's MachineConfigs are: values under them are
    /// known by their address, which stays theirs while the render lives
    /// unchanged beside the memo (`plan`'s `Side`).
    configs: Range<usize>,
    kept: HashMap<usize, Digest>,
    /// The merged entries of the files the daemon reads beyond comparing
    /// them ([`READ_FILES`]: registries.conf), by digest: one copy of each
    /// content however many pools have it.
    read: HashMap<Digest, Value>,
}

/// Files whose merged entry the daemon reads to judge a change
/// (`Special`: `isSafeContainerRegistryConfChanges`).
pub const READ_FILES: [&str; 1] = ["/etc/containers/registries.conf"];

/// What is worth keeping: a value this large or larger, hashed.
const KEPT_FROM: u64 = 1024;

impl Memo {
    pub fn new(configs: &[Value]) -> Memo {
        let r = configs.as_ptr_range();
        Memo {
            configs: r.start as usize..r.end as usize,
            kept: HashMap::new(),
            read: HashMap::new(),
        }
    }

    /// The merged entry of a file of [`READ_FILES`] with this digest.
    pub fn read_file(&self, digest: &Digest) -> Option<&Value> {
        self.read.get(digest)
    }

    fn owns(&self, config: &Value) -> bool {
        self.configs.contains(&(config as *const Value as usize))
    }

    fn digest(&mut self, v: &Value, own: bool) -> Digest {
        let at = v as *const Value as usize;
        if let Some(d) = own.then(|| self.kept.get(&at)).flatten() {
            return *d;
        }
        let (d, size) = merkle(v);
        if own && size >= KEPT_FROM {
            self.kept.insert(at, d);
        }
        d
    }
}

/// Each file, unit and `passwd` of the pool's rendered config as the MCO
/// merges its MachineConfigs (Ignition's merge, in the MCO's order, with
/// its compression and `overwrite` defaults), by what the daemon compares.
/// The merge copies no JSON of the configs: what it changes is built over
/// them.
pub fn identities<V: Borrow<Value>>(
    configs: &[V],
    memo: &mut Memo,
) -> Result<BTreeMap<Changed, Digest>> {
    let mut files = Keyed::default();
    let mut units = Keyed::default();
    // Each config's `passwd` in merge order, digested as it comes.
    let mut passwd: Option<Sha256> = None;
    for (k, i) in merge_order(configs)?.into_iter().enumerate() {
        let mc = configs[i].borrow();
        let own = memo.owns(mc);
        let Some(config) = mc.pointer("/spec/config").filter(|c| !c.is_null()) else {
            continue;
        };
        let list = |path: &str| {
            config
                .pointer(path)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        };
        // Files, directories and links share one key, the path: a later
        // link or directory takes an earlier file's place (Ignition's
        // merge), and taken away, the file is back.
        for e in list("/storage/links").chain(list("/storage/directories")) {
            if let Some(p) = e.get("path").and_then(Value::as_str) {
                files.remove(p);
            }
        }
        for f in list("/storage/files") {
            let mut f = Node::Raw(f, own);
            // Every file of a later config sets compression (unset: ""),
            // so a later source never keeps an earlier compression.
            if k > 0
                && let Some(o) = f.object()
            {
                let contents = (o.entry("contents".into())).or_insert_with(Node::empty_object);
                if let Some(c) = contents.object() {
                    (c.entry("compression".into())).or_insert_with(|| Node::New("".into()));
                }
            }
            files.merge(&["path"], f);
        }
        if k > 0 {
            for (_, f) in files.iter_mut() {
                let unset = f.str_at(&["contents", "compression"]) == Some("");
                if unset
                    && let Some(c) = f.object().and_then(|o| o.get_mut("contents"))
                    && let Some(c) = c.object()
                {
                    c.remove("compression");
                }
            }
        }
        for u in list("/systemd/units") {
            units.merge(&["name"], Node::Raw(u, own));
        }
        if let Some(p) = config.get("passwd").filter(|p| !p.is_null()) {
            let d = memo.digest(p, own);
            passwd.get_or_insert_with(Sha256::new).update(&d);
        }
    }
    let mut out = BTreeMap::new();
    for (path, mut f) in files.into_entries() {
        if let Some(o) = f.object() {
            (o.entry("overwrite".into())).or_insert(Node::New(Value::Bool(true)));
        }
        let d = f.digest(memo);
        if READ_FILES.contains(&path.as_str()) {
            memo.read.entry(d).or_insert_with(|| f.to_value());
        }
        out.insert(Changed::File(path), d);
    }
    for (name, u) in units.into_entries() {
        out.insert(Changed::Unit(name), u.digest(memo));
    }
    // Every `passwd` section as written: a change of any is judged as an
    // SSH key change (the only one the MCO makes on running nodes; the
    // others are refused as not reconcilable).
    if let Some(h) = passwd {
        out.insert(Changed::SshKeys, h.finish());
    }
    Ok(out)
}

/// What changed between two sides' identities: removed, added or not the
/// same.
pub fn changed<'a>(
    old: &'a BTreeMap<Changed, Digest>,
    new: &'a BTreeMap<Changed, Digest>,
) -> Vec<&'a Changed> {
    let mut out: Vec<&Changed> = old
        .keys()
        .chain(new.keys())
        .filter(|k| old.get(*k) != new.get(*k))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A file or unit as merged: a config's JSON where the merge leaves it as
/// it is, objects and lists of its own where it changes them.
enum Node<'a> {
    /// JSON of a config (of the render's own: its digest may be kept).
    Raw(&'a Value, bool),
    /// An object, without `null` members (Go's decoder leaves the field
    /// unset, as if it were absent).
    Object(BTreeMap<String, Node<'a>>),
    Array(Vec<Node<'a>>),
    New(Value),
}

impl<'a> Node<'a> {
    fn empty_object() -> Node<'a> {
        Node::Object(BTreeMap::new())
    }

    /// Its members to change, if it is an object.
    fn object(&mut self) -> Option<&mut BTreeMap<String, Node<'a>>> {
        if let Node::Raw(Value::Object(o), own) = *self {
            *self = Node::Object(
                o.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), Node::Raw(v, own)))
                    .collect(),
            );
        }
        match self {
            Node::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The string at `path` (members' names) under it.
    fn str_at(&self, path: &[&str]) -> Option<&str> {
        let Some((first, rest)) = path.split_first() else {
            return match self {
                Node::Raw(Value::String(s), _) | Node::New(Value::String(s)) => Some(s),
                _ => None,
            };
        };
        match self {
            Node::Raw(Value::Object(o), _) => {
                let mut v = o.get(*first)?;
                for k in rest {
                    v = v.get(k)?;
                }
                v.as_str()
            }
            Node::Object(o) => o.get(*first)?.str_at(rest),
            _ => None,
        }
    }

    fn is_object(&self) -> bool {
        matches!(self, Node::Raw(Value::Object(_), _) | Node::Object(_))
    }

    fn is_array(&self) -> bool {
        matches!(self, Node::Raw(Value::Array(_), _) | Node::Array(_))
    }

    /// An object's members, `null` ones left out.
    fn members(self) -> Vec<(String, Node<'a>)> {
        match self {
            Node::Raw(Value::Object(o), own) => o
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), Node::Raw(v, own)))
                .collect(),
            Node::Object(o) => o.into_iter().collect(),
            _ => Vec::new(),
        }
    }

    fn items(self) -> Vec<Node<'a>> {
        match self {
            Node::Raw(Value::Array(a), own) => a.iter().map(|v| Node::Raw(v, own)).collect(),
            Node::Array(a) => a,
            _ => Vec::new(),
        }
    }

    /// The JSON the node stands for.
    fn to_value(&self) -> Value {
        match self {
            Node::Raw(v, _) => (*v).clone(),
            Node::New(v) => v.clone(),
            Node::Object(o) => {
                Value::Object(o.iter().map(|(k, v)| (k.clone(), v.to_value())).collect())
            }
            Node::Array(a) => Value::Array(a.iter().map(Node::to_value).collect()),
        }
    }

    fn digest(&self, memo: &mut Memo) -> Digest {
        match self {
            Node::Raw(v, own) => memo.digest(v, *own),
            Node::New(v) => merkle(v).0,
            Node::Object(o) => {
                let mut h = Sha256::new();
                h.update(b"o");
                h.update(&(o.len() as u64).to_le_bytes());
                for (k, v) in o {
                    text(&mut h, k);
                    h.update(&v.digest(memo));
                }
                h.finish()
            }
            Node::Array(a) => {
                let mut h = Sha256::new();
                h.update(b"a");
                h.update(&(a.len() as u64).to_le_bytes());
                for v in a {
                    h.update(&v.digest(memo));
                }
                h.finish()
            }
        }
    }
}

fn text(h: &mut Sha256, s: &str) {
    h.update(&(s.len() as u64).to_le_bytes());
    h.update(s.as_bytes());
}

/// The digest of `v` as Go's decoder reads it (objects' members in any
/// order, a `null` member as absent; numbers as serde_json tells them
/// apart: `1` is not `1.0`), of each member's and item's digest as a
/// [`Node`]'s is; and the bytes hashed.
fn merkle(v: &Value) -> (Digest, u64) {
    let mut h = Sha256::new();
    let mut size = 0;
    match v {
        Value::Null => h.update(b"n"),
        Value::Bool(b) => h.update(if *b { b"t" } else { b"f" }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                h.update(b"u");
                h.update(&u.to_le_bytes());
            } else if let Some(i) = n.as_i64() {
                h.update(b"i");
                h.update(&i.to_le_bytes());
            } else {
                // -0.0 == 0.0, as serde_json compares them.
                let f = n.as_f64().unwrap_or_default();
                let f = if f == 0.0 { 0.0 } else { f };
                h.update(b"d");
                h.update(&f.to_bits().to_le_bytes());
            }
        }
        Value::String(s) => {
            h.update(b"s");
            text(&mut h, s);
            size = s.len() as u64;
        }
        Value::Array(a) => {
            h.update(b"a");
            h.update(&(a.len() as u64).to_le_bytes());
            for e in a {
                let (d, n) = merkle(e);
                h.update(&d);
                size += n;
            }
        }
        Value::Object(o) => {
            let mut members: Vec<(&String, &Value)> =
                o.iter().filter(|(_, v)| !v.is_null()).collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            h.update(b"o");
            h.update(&(members.len() as u64).to_le_bytes());
            for (k, v) in members {
                text(&mut h, k);
                let (d, n) = merkle(v);
                h.update(&d);
                size += k.len() as u64 + n;
            }
        }
    }
    (h.finish(), size + 8)
}

/// A list keyed by one field, in order, each key looked up (review 44
/// r44b F3: a scan of the list per entry made 40,000 files take 73 s).
#[derive(Default)]
struct Keyed<'a> {
    /// The entries in order; a removed one leaves its place empty.
    entries: Vec<Option<(String, Node<'a>)>>,
    at: std::collections::HashMap<String, usize>,
}

impl<'a> Keyed<'a> {
    /// `entry` merged in by its field `key` (Ignition's merge: the entry of
    /// the same key is merged field by field, a new one appended).
    fn merge(&mut self, key: &[&str], entry: Node<'a>) {
        let k = entry.str_at(key).unwrap_or_default().to_string();
        match self.at.get(&k).and_then(|&i| self.entries.get_mut(i)) {
            Some(Some((_, was))) => merge(was, entry),
            _ => {
                self.at.insert(k.clone(), self.entries.len());
                self.entries.push(Some((k, entry)));
            }
        }
    }

    /// The entry of key `k` taken away: one merged later is appended.
    fn remove(&mut self, k: &str) {
        if let Some(i) = self.at.remove(k) {
            self.entries[i] = None;
        }
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut (String, Node<'a>)> {
        self.entries.iter_mut().flatten()
    }

    fn into_entries(self) -> impl Iterator<Item = (String, Node<'a>)> {
        self.entries.into_iter().flatten()
    }
}

/// The key of the keyed lists inside a file or unit (`httpHeaders` by
/// name, `append` by source, drop-ins by name).
fn list_key(field: &str) -> Option<&'static str> {
    match field {
        "httpHeaders" | "dropins" => Some("name"),
        "append" => Some("source"),
        _ => None,
    }
}

/// Ignition's struct merge: a field the child sets replaces the parent's,
/// objects merge field by field, keyed lists by key; other lists append.
fn merge<'a>(parent: &mut Node<'a>, child: Node<'a>) {
    if !child.is_object() {
        return;
    }
    let Some(p) = parent.object() else {
        return;
    };
    for (field, value) in child.members() {
        match p.get_mut(&field) {
            Some(was) if was.is_object() && value.is_object() => merge(was, value),
            Some(was) if was.is_array() && value.is_array() => {
                let items = std::mem::replace(was, Node::Array(Vec::new())).items();
                *was = Node::Array(match list_key(&field) {
                    Some(key) => {
                        // The parent's entries as they are (a repeated key
                        // kept twice), then the child's merged in by key.
                        let mut keyed = Keyed::default();
                        for e in items {
                            let k = e.str_at(&[key]).unwrap_or_default().to_string();
                            keyed.at.entry(k.clone()).or_insert(keyed.entries.len());
                            keyed.entries.push(Some((k, e)));
                        }
                        for item in value.items() {
                            keyed.merge(&[key], item);
                        }
                        keyed.into_entries().map(|(_, e)| e).collect()
                    }
                    None => items.into_iter().chain(value.items()).collect(),
                });
            }
            _ => {
                p.insert(field, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(configs: &[Value]) -> Result<BTreeMap<Changed, Digest>> {
        identities(configs, &mut Memo::new(configs))
    }

    /// `extra` over `base`, objects member by member.
    fn over(base: &mut Value, extra: Value) {
        match (base, extra) {
            (Value::Object(b), Value::Object(e)) => {
                for (k, v) in e {
                    over(b.entry(k).or_insert(Value::Null), v);
                }
            }
            (b, e) => *b = e,
        }
    }

    fn mc(name: &str, config: Value) -> Value {
        json!({"metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": "worker"}},
               "spec": {"config": config}})
    }

    #[test]
    fn a_file_is_compared_whole_after_the_mcos_defaults() {
        let file = |extra: Value| {
            let mut f = json!({"path": "/etc/a", "contents": {"source": "data:,a"}, "mode": 420});
            over(&mut f, extra);
            mc(
                "50-a",
                json!({"ignition": {"version": "3.4.0"}, "storage": {"files": [f]}}),
            )
        };
        let base = ids(&[mc("00-base", json!({})), file(json!({}))]).unwrap();
        let same = ids(&[mc("00-base", json!({})), file(json!({"overwrite": true}))]).unwrap();
        assert!(changed(&base, &same).is_empty(), "overwrite unset is true");
        for extra in [
            json!({"user": {"name": "chrony"}}),
            json!({"overwrite": false}),
            json!({"contents": {"verification": {"hash": "sha512-00"}}}),
            json!({"mode": 384}),
        ] {
            let other = ids(&[mc("00-base", json!({})), file(extra.clone())]).unwrap();
            assert_eq!(
                changed(&base, &other),
                [&Changed::File("/etc/a".into())],
                "{extra}"
            );
        }
    }

    /// Review 14 r14b F5: a link over a file hides it; taken away, the
    /// file is back, a change.
    #[test]
    fn a_link_over_a_file_hides_it() {
        let file = mc(
            "10-a",
            json!({"storage": {"files": [{"path": "/etc/a", "contents": {"source": "data:,x"}}]}}),
        );
        let link = mc(
            "20-a",
            json!({"storage": {"links": [{"path": "/etc/a", "target": "/etc/b"}]}}),
        );
        let hidden = ids(&[file.clone(), link]).unwrap();
        let shown = ids(&[file]).unwrap();
        assert_eq!(changed(&hidden, &shown), [&Changed::File("/etc/a".into())]);
    }

    /// Keyed's removal: a file a link hid and a later config writes again
    /// is that config's entry whole, nothing merged from the hidden one.
    #[test]
    fn a_file_written_again_over_a_link_is_the_later_entry() {
        let file = |name: &str, f: Value| mc(name, json!({"storage": {"files": [f]}}));
        let first = file(
            "10-a",
            json!({"path": "/etc/a", "contents": {"source": "data:,x"}, "mode": 384}),
        );
        let link = mc(
            "20-a",
            json!({"storage": {"links": [{"path": "/etc/a", "target": "/etc/b"}]}}),
        );
        let again = file(
            "30-a",
            json!({"path": "/etc/a", "contents": {"source": "data:,y"}}),
        );
        let ids = ids(&[first, link, again.clone()]).unwrap();
        let alone = super::tests::ids(&[again]).unwrap();
        assert_eq!(changed(&ids, &alone), Vec::<&Changed>::new());
    }

    #[test]
    fn a_later_entry_resets_compression() {
        let gz = mc(
            "10-a",
            json!({"storage": {"files": [{"path": "/etc/a", "contents": {"source": "data:;base64,H4sI", "compression": "gzip"}}]}}),
        );
        let plain = mc(
            "20-a",
            json!({"storage": {"files": [{"path": "/etc/a", "contents": {"source": "data:,x"}}]}}),
        );
        let ids = ids(&[gz, plain]).unwrap();
        assert_eq!(
            ids[&Changed::File("/etc/a".into())],
            merkle(
                &json!({"path": "/etc/a", "contents": {"source": "data:,x"}, "overwrite": true})
            )
            .0
        );
    }

    #[test]
    fn a_unit_is_compared_whole() {
        let unit = |u: Value| mc("50-u", json!({"systemd": {"units": [u]}}));
        let base = ids(&[unit(json!({"name": "kdump.service"}))]).unwrap();
        let enabled = ids(&[unit(json!({"name": "kdump.service", "enabled": true}))]).unwrap();
        assert_eq!(
            changed(&base, &enabled),
            [&Changed::Unit("kdump.service".into())]
        );
        let dropin = |t: &str| {
            unit(
                json!({"name": "kubelet.service", "dropins": [{"name": "90-x.conf", "contents": t}]}),
            )
        };
        let a = ids(&[dropin("[Service]\n")]).unwrap();
        let b = ids(&[dropin("[Service]\nEnvironment=A=1\n")]).unwrap();
        assert_eq!(changed(&a, &b), [&Changed::Unit("kubelet.service".into())]);
        // A drop-in without contents keeps the earlier one's.
        let later = mc(
            "60-u",
            json!({"systemd": {"units": [{"name": "kubelet.service", "dropins": [{"name": "90-x.conf"}]}]}}),
        );
        let c = ids(&[dropin("[Service]\n"), later]).unwrap();
        assert!(changed(&a, &c).is_empty());
    }

    /// Review 14 r14b F7: the digest tells JSON apart exactly as the
    /// comparison of the JSON did (serde_json's equality, `null` members
    /// left out), and a merged object's digest is its JSON's.
    #[test]
    fn digests_are_equal_exactly_when_the_json_is() {
        let values = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(1),
            json!(-1),
            json!(1.0),
            json!(-0.0),
            json!(0.0),
            json!(u64::MAX),
            json!(""),
            json!("1"),
            json!("ab"),
            json!(["ab"]),
            json!(["a", "b"]),
            json!(["b", "a"]),
            json!([null]),
            json!([]),
            json!({}),
            json!({"a": null}),
            json!({"a": "bc"}),
            json!({"ab": "c"}),
            json!({"a": "b", "c": "d"}),
            json!({"c": "d", "a": "b"}),
            json!({"a": {"b": null, "c": 1}}),
            json!({"a": {"c": 1}}),
            json!({"a": [{"b": null}]}),
            json!({"a": [{}]}),
        ];
        fn without_nulls(v: &Value) -> Value {
            match v {
                Value::Object(o) => Value::Object(
                    (o.iter().filter(|(_, v)| !v.is_null()))
                        .map(|(k, v)| (k.clone(), without_nulls(v)))
                        .collect(),
                ),
                Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
                v => v.clone(),
            }
        }
        for a in &values {
            for b in &values {
                assert_eq!(
                    merkle(a).0 == merkle(b).0,
                    without_nulls(a) == without_nulls(b),
                    "{a} {b}"
                );
            }
            // Built over, member by member, the same digest.
            let memo = &mut Memo::new(&[]);
            let mut node = Node::Raw(a, false);
            node.object();
            assert_eq!(node.digest(memo), merkle(a).0, "{a}");
        }
    }

    /// Every pool of a render compares worker's MachineConfigs: a large
    /// `passwd` is hashed once, and a change of one key is still seen.
    #[test]
    fn a_render_s_json_is_hashed_once() {
        let keys = |last: &str| {
            let mut k: Vec<String> = (0..200).map(|i| format!("ssh-ed25519 {i:0>64}")).collect();
            k.push(last.into());
            json!({"users": [{"name": "core", "sshAuthorizedKeys": k}]})
        };
        let render = vec![mc("99-keys", json!({"passwd": keys("a")}))];
        let memo = &mut Memo::new(&render);
        let first = identities(&render, memo).unwrap();
        let at = render[0].pointer("/spec/config/passwd").unwrap() as *const Value as usize;
        assert!(memo.kept.contains_key(&at));
        // Known by its address: hashed again, it would not be this.
        memo.kept.insert(at, [7; 32]);
        let again = identities(&render, memo).unwrap();
        assert_ne!(first[&Changed::SshKeys], again[&Changed::SshKeys]);
        // A copy (not the render's own) is hashed afresh.
        let copy = render.clone();
        let other = ids(&[mc("99-keys", json!({"passwd": keys("b")}))]).unwrap();
        assert_eq!(identities(&copy, memo).unwrap(), first);
        assert_eq!(changed(&first, &other), [&Changed::SshKeys]);
    }
}
