//! What `plan` reads: the two renders (directories, files, or a git
//! revision's), and the fleet as a cluster exports it (`oc get ... -o json`
//! or `-o yaml`, `facts --json` dumps), its objects told apart by `kind`.
//! Exports are streamed: a list's items are reduced one at a time, so a
//! fleet of NodeFeatures far larger than memory is read in bounded memory.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The most one render (all its files) may hold: a pool's MachineConfigs
/// with four architectures' wrappers are about 1 MiB.
const RENDER_MAX_BYTES: u64 = 128 << 20;
/// The most one object of a fleet export may take: etcd stores at most
/// 1.5 MiB an object, a NodeFeature is about 130 KB.
pub const OBJECT_MAX_BYTES: u64 = 16 << 20;
/// A YAML export is read whole; JSON is streamed.
const YAML_MAX_BYTES: u64 = 256 << 20;

/// One side of the change: the manifests of a render.
#[derive(Debug, Default)]
pub struct Render {
    /// As given (`gitops/`, `origin/main:gitops/`).
    pub name: String,
    pub machineconfigs: Vec<Value>,
    pub pools: Vec<Value>,
    /// A `MachineConfiguration` (the disruption policy), when it holds one.
    pub policy: Option<Value>,
}

/// A render given as a directory (read recursively), a file, or
/// `REV:PATH` of the git repository of the working directory.
pub fn read_render(spec: &str) -> Result<Render> {
    let path = Path::new(spec);
    let texts = if path.exists() {
        local_texts(path, spec)?
    } else if let Some((rev, sub)) = spec.split_once(':') {
        git_texts(rev, sub, spec)?
    } else {
        bail!(
            "{spec}: no such file or directory (a git revision is given as REV:PATH, e.g. origin/main:gitops/)"
        );
    };
    let mut render = Render {
        name: spec.to_string(),
        ..Default::default()
    };
    for (name, text) in texts {
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
            .with_context(|| format!("{spec}: reading {name} as YAML"))?;
        for doc in docs {
            add_render_object(doc, &mut render);
        }
    }
    if render.machineconfigs.is_empty() && render.pools.is_empty() {
        bail!(
            "{spec}: no MachineConfig or MachineConfigPool in it; give what `render machineconfig --output-dir` wrote"
        );
    }
    Ok(render)
}

fn add_render_object(doc: Value, render: &mut Render) {
    match doc.get("kind").and_then(Value::as_str) {
        Some("MachineConfig") => render.machineconfigs.push(doc),
        Some("MachineConfigPool") => render.pools.push(doc),
        Some("MachineConfiguration") => render.policy = Some(doc),
        Some(k) if k == "List" || k.ends_with("List") => {
            if let Some(Value::Array(items)) = doc.get("items") {
                for item in items.clone() {
                    add_render_object(item, render);
                }
            }
        }
        _ => {}
    }
}

/// The YAML and JSON files of a directory (recursively, links not
/// followed, hidden entries skipped) or one file, at most
/// `RENDER_MAX_BYTES` in all.
fn local_texts(path: &Path, spec: &str) -> Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    if path.is_dir() {
        walk(path, &mut files, spec)?;
        files.sort();
    } else {
        files.push(path.to_path_buf());
    }
    let mut total = 0u64;
    let mut out = Vec::new();
    for f in files {
        let mut text = String::new();
        std::fs::File::open(&f)
            .with_context(|| format!("{spec}: opening {}", f.display()))?
            .take(RENDER_MAX_BYTES + 1 - total)
            .read_to_string(&mut text)
            .with_context(|| format!("{spec}: reading {} as UTF-8 text", f.display()))?;
        total += text.len() as u64;
        if total > RENDER_MAX_BYTES {
            bail!(
                "{spec}: more than {} MiB of manifests; give the directory of the pools to plan",
                RENDER_MAX_BYTES >> 20
            );
        }
        out.push((f.display().to_string(), text));
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, spec: &str) -> Result<()> {
    for entry in
        std::fs::read_dir(dir).with_context(|| format!("{spec}: reading {}", dir.display()))?
    {
        let entry = entry.with_context(|| format!("{spec}: reading {}", dir.display()))?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let p = entry.path();
        let meta =
            std::fs::symlink_metadata(&p).with_context(|| format!("{spec}: {}", p.display()))?;
        if meta.is_dir() {
            walk(&p, out, spec)?;
        } else if meta.is_file() && is_manifest(&p) {
            out.push(p);
        }
    }
    Ok(())
}

fn is_manifest(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
}

/// The manifests under `sub` at git revision `rev` of the repository the
/// working directory is in (`git show REV:PATH` spelling), read with git
/// itself: nothing is checked out or written.
fn git_texts(rev: &str, sub: &str, spec: &str) -> Result<Vec<(String, String)>> {
    let git = |args: &[&str]| -> Result<Vec<u8>> {
        let out = Command::new("git")
            .args(args)
            .output()
            .with_context(|| format!("{spec}: running git"))?;
        if !out.status.success() {
            bail!(
                "{spec}: git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(out.stdout)
    };
    let top = String::from_utf8_lossy(&git(&["rev-parse", "--show-toplevel"]).map_err(|_| {
        anyhow::anyhow!(
            "{spec}: not a file, and the working directory is in no git repository for REV:PATH"
        )
    })?)
    .trim()
    .to_string();
    let commit = format!("{rev}^{{commit}}");
    if git(&["-C", &top, "rev-parse", "--verify", "--quiet", &commit]).is_err() {
        bail!(
            "{spec}: {rev:?} is no git revision of {top}; give a branch, tag or commit (git fetch first for origin/...)"
        );
    }
    let sub = sub.trim_start_matches("./");
    // With each blob's size (`<mode> <type> <object> <size>\t<name>`): the
    // total is known before any blob is read (a blob git stores in a few
    // MiB may hold gigabytes of zeros, and git hands it over whole).
    let listing = git(&["-C", &top, "ls-tree", "-r", "-z", "--long", rev, "--", sub])?;
    let mut names = Vec::new();
    let mut total = 0u64;
    for entry in listing.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        let Some((meta, name)) = entry.split_once('\t') else {
            continue;
        };
        if !is_manifest(Path::new(name)) || name.split('/').any(|c| c.starts_with('.')) {
            continue;
        }
        let size = meta.split_whitespace().nth(3).unwrap_or("0");
        total = total.saturating_add(size.parse().unwrap_or(0));
        names.push(name.to_string());
    }
    if total > RENDER_MAX_BYTES {
        bail!(
            "{spec}: more than {} MiB of manifests",
            RENDER_MAX_BYTES >> 20
        );
    }
    let mut out = Vec::new();
    let mut total = 0u64;
    for name in names {
        let bytes = git(&["-C", &top, "cat-file", "blob", &format!("{rev}:{name}")])?;
        total += bytes.len() as u64;
        if total > RENDER_MAX_BYTES {
            bail!(
                "{spec}: more than {} MiB of manifests",
                RENDER_MAX_BYTES >> 20
            );
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| anyhow::anyhow!("{spec}: {name} is not UTF-8 text"))?;
        out.push((format!("{rev}:{name}"), text));
    }
    if out.is_empty() {
        bail!("{spec}: no *.yaml, *.yml or *.json file under {sub:?} at {rev}");
    }
    Ok(out)
}

/// Each object of a fleet export, in order: the items of a list one at a
/// time, a single object whole; `facts --json` output as it is. `each`
/// returns an error to stop.
pub fn read_fleet_file(
    path: &Path,
    keep: Keep,
    each: &mut dyn FnMut(Value) -> Result<(), String>,
) -> Result<()> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).with_context(|| format!("--fleet {name}: opening it"))?;
    let meta = file.metadata().with_context(|| format!("--fleet {name}"))?;
    if !meta.is_file() {
        bail!("--fleet {name}: not a regular file");
    }
    let mut reader = std::io::BufReader::new(file);
    // JSON (what `-o json` writes) streams; anything else is YAML.
    let first = {
        use std::io::BufRead;
        let buf = reader
            .fill_buf()
            .with_context(|| format!("--fleet {name}: reading it"))?;
        buf.iter().copied().find(|b| !b.is_ascii_whitespace())
    };
    if first == Some(b'{') {
        let counted = Counted {
            inner: reader,
            since_item: std::rc::Rc::new(std::cell::Cell::new(0)),
        };
        let since = counted.since_item.clone();
        let mut de = serde_json::Deserializer::from_reader(counted);
        let result = de.deserialize_map(TopVisitor {
            each,
            since: &since,
            keep,
        });
        match result {
            Ok(()) => {}
            Err(e) if e.is_io() => bail!(
                "--fleet {name}: an object larger than {} MiB (a Node or NodeFeature is far smaller): is this an export of the cluster?",
                OBJECT_MAX_BYTES >> 20
            ),
            Err(e) if e.is_eof() => {
                bail!("--fleet {name}: it ends inside an object (truncated?): {e}")
            }
            Err(e) => bail!("--fleet {name}: {e}"),
        }
        de.end()
            .with_context(|| format!("--fleet {name}: more than one JSON document"))?;
        return Ok(());
    }
    let mut text = String::new();
    reader
        .take(YAML_MAX_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("--fleet {name}: reading it as UTF-8 text"))?;
    if text.len() as u64 > YAML_MAX_BYTES {
        bail!(
            "--fleet {name}: more than {} MiB of YAML; export as JSON (-o json), which is read as it streams",
            YAML_MAX_BYTES >> 20
        );
    }
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .with_context(|| format!("--fleet {name}: reading it as YAML or JSON"))?;
    for doc in docs {
        match doc.get("items") {
            Some(Value::Array(items))
                if doc
                    .get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List")) =>
            {
                for item in items.clone() {
                    each(item).map_err(|e| anyhow::anyhow!("--fleet {name}: {e}"))?;
                }
            }
            _ if doc.is_null() => {}
            _ => each(doc).map_err(|e| anyhow::anyhow!("--fleet {name}: {e}"))?,
        }
    }
    Ok(())
}

/// Which features of a NodeFeature's `spec.features` to keep: the rest
/// are skipped as they are read, never built (a kernel config alone is
/// thousands of attributes). None keeps all.
pub type Keep<'a> = Option<&'a crate::node::sorted::SortedSet<String>>;

/// An item of a list, read as a `Value` but for the features `keep`
/// leaves out: `spec.features.{flags,attributes,instances}.NAME` at depth
/// 0, 1, 2, 3.
#[derive(Clone, Copy)]
struct Object<'a> {
    depth: u8,
    keep: Keep<'a>,
}

impl<'de> DeserializeSeed<'de> for Object<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.keep.is_none() {
            return Value::deserialize(d);
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Object<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let descend = match self.depth {
                0 => key == "spec",
                1 => key == "features",
                2 => matches!(key.as_str(), "flags" | "attributes" | "instances"),
                _ => false,
            };
            if self.depth == 3 && !self.keep.is_some_and(|k| k.contains(key.as_str())) {
                map.next_value::<serde::de::IgnoredAny>()?;
                continue;
            }
            let v = if descend {
                map.next_value_seed(Object {
                    depth: self.depth + 1,
                    keep: self.keep,
                })?
            } else {
                map.next_value::<Value>()?
            };
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.into()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// A reader that fails once more than `OBJECT_MAX_BYTES` were read since
/// the last item ended: a single huge object is refused, not buffered.
struct Counted<R> {
    inner: R,
    since_item: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let total = self.since_item.get() + n as u64;
        if total > OBJECT_MAX_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                "object too large",
            ));
        }
        self.since_item.set(total);
        Ok(n)
    }
}

type Since = std::rc::Rc<std::cell::Cell<u64>>;

struct TopVisitor<'a> {
    each: &'a mut dyn FnMut(Value) -> Result<(), String>,
    since: &'a Since,
    keep: Keep<'a>,
}

impl<'de> Visitor<'de> for TopVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Kubernetes object or list")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::Error;
        let mut single = serde_json::Map::new();
        let mut listed = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                map.next_value_seed(Items {
                    each: &mut *self.each,
                    since: self.since,
                    keep: self.keep,
                })?;
                listed = true;
            } else {
                let v: Value = map.next_value()?;
                single.insert(key, v);
            }
        }
        if !listed {
            (self.each)(Value::Object(single)).map_err(A::Error::custom)?;
        }
        Ok(())
    }
}

struct Items<'a> {
    each: &'a mut dyn FnMut(Value) -> Result<(), String>,
    since: &'a Since,
    keep: Keep<'a>,
}

impl<'de> DeserializeSeed<'de> for Items<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        use serde::de::Error;
        while let Some(item) = seq.next_element_seed(Object {
            depth: 0,
            keep: self.keep,
        })? {
            self.since.set(0);
            (self.each)(item).map_err(A::Error::custom)?;
        }
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(text: &str) -> Result<Vec<Value>> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, text).unwrap();
        let mut out = Vec::new();
        read_fleet_file(&p, None, &mut |v| {
            out.push(v);
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn lists_and_single_objects_in_json_and_yaml() {
        let json = r#"{"apiVersion":"v1","items":[{"kind":"Node","metadata":{"name":"a"}},{"kind":"Node","metadata":{"name":"b"}}],"kind":"List"}"#;
        let got = objects(json).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1]["metadata"]["name"], "b");
        let got = objects(r#"{"kind":"Node","metadata":{"name":"a"}}"#).unwrap();
        assert_eq!(got[0]["kind"], "Node");
        let yaml = "kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n---\nkind: Node\nmetadata: {name: c}\n";
        assert_eq!(objects(yaml).unwrap().len(), 2);
    }

    #[test]
    fn truncated_and_oversized_exports_are_refused() {
        let e = objects(r#"{"kind":"List","items":[{"kind":"Node","metadata":{"na"#).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        let big = format!(
            r#"{{"kind":"List","items":[{{"kind":"Node","x":"{}"}}]}}"#,
            "a".repeat((OBJECT_MAX_BYTES + 10) as usize)
        );
        let e = objects(&big).unwrap_err();
        assert!(e.to_string().contains("larger than 16 MiB"), "{e}");
        // Many items, each small, are fine however large the whole.
        let many: Vec<String> = (0..2000)
            .map(|i| format!(r#"{{"kind":"Node","x":"{}","n":{i}}}"#, "b".repeat(10_000)))
            .collect();
        let text = format!(r#"{{"kind":"List","items":[{}]}}"#, many.join(","));
        assert!(text.len() as u64 > OBJECT_MAX_BYTES);
        assert_eq!(objects(&text).unwrap().len(), 2000);
    }
}
