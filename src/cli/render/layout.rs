//! Lay MachineConfigs out as the node tree they would write: what
//! `explain --machineconfig` explains. MachineConfigs are merged as the MCO
//! merges a pool's configs (`worker`-role ones by name, then the pool's own
//! role's by name; files by path, units by name, drop-ins by name within a
//! unit: a later one replaces the fields it sets).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

pub use super::merge_order::{ROLE_LABEL, mc_name, merge_order, rendered_pool, role};
use super::storage::{merge_storage, refuse_sourceless_files, refuse_systemd_conflicts};
/// Where the link at `path` to `to` leads, as a node path (a relative
/// target from the link's directory).
fn link_target(path: &str, to: &str) -> String {
    let joined = if to.starts_with('/') {
        to.to_string()
    } else {
        let dir = Path::new(path).parent().unwrap_or(Path::new("/"));
        format!("{}/{to}", dir.display())
    };
    super::merge_inputs::node_path(&joined)
}

/// `path` with the layout's `links` (node path -> where it leads) at it or
/// a directory above it followed, a bounded number of times (the kernel's
/// 40).
fn through_links(links: &BTreeMap<String, String>, mut path: String) -> String {
    for _ in 0..40 {
        let hop = links.get(&path).cloned().or_else(|| {
            let mut at = path.as_str();
            while let Some(i) = at.rfind('/').filter(|&i| i > 0) {
                at = &at[..i];
                if let Some(to) = links.get(at) {
                    return Some(super::merge_inputs::node_path(&format!(
                        "{to}{}",
                        &path[at.len()..]
                    )));
                }
            }
            None
        });
        match hop {
            Some(next) if next != path => path = next,
            _ => break,
        }
    }
    path
}

#[cfg(test)]
use super::unpack::clean_path;
pub use super::unpack::{
    FILE_CAP, RUN_BUDGET, RunSpent, TOTAL_CAP, decode_data_url, with_run_budget,
};
use super::unpack::{Kind, MergedFile, masks_a_unit, read_node, resolve, unpack_read};

/// One file to write into the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    pub path: String,
    pub contents: Vec<u8>,
    pub mode: u32,
}

#[derive(Debug, Clone, Default)]
struct Unit {
    contents: Option<String>,
    mask: bool,
    dropins: BTreeMap<String, String>,
}

/// The merged content of a set of MachineConfigs.
#[derive(Debug, Default)]
pub struct Layout {
    /// `metadata.name`s in merge order.
    pub machineconfigs: Vec<String>,
    files: BTreeMap<String, MergedFile>,
    units: BTreeMap<String, Unit>,
}

/// MachineConfig objects from YAML text: one or more documents, each a
/// MachineConfig or a list (`kind: List`/`MachineConfigList`, `items:`) as
/// `oc get mc -o yaml` prints it. Other kinds (a pool, a kustomization) are
/// skipped: a rendered bundle holds them too.
pub fn machineconfigs_from_yaml(text: &str, source: &str) -> Result<Vec<Value>> {
    let docs: Vec<Value> = crate::cli::yaml::kube_yaml_docs(text)
        .with_context(|| format!("reading {source} as YAML"))?;
    let mut out = Vec::new();
    for doc in docs {
        collect(doc, source, &mut out)?;
    }
    if out.is_empty() {
        bail!(
            "{source} holds no MachineConfig; give `oc get mc NAME -o yaml` output or a rendered MachineConfig"
        );
    }
    Ok(out)
}

fn collect(doc: Value, source: &str, out: &mut Vec<Value>) -> Result<()> {
    match doc.get("kind").and_then(Value::as_str) {
        Some("MachineConfig") => out.push(doc),
        Some(k) if k == "List" || k.ends_with("List") => {
            if let Some(items) = doc.get("items").and_then(Value::as_array) {
                for item in items {
                    collect(item.clone(), source, out)?;
                }
            }
        }
        Some(_) => {}
        None if doc.is_null() => {}
        None => bail!("{source}: a document without `kind`; is this a MachineConfig?"),
    }
    Ok(())
}

impl Layout {
    /// Merge MachineConfigs in MCO's order (see `merge_order`).
    pub fn merge(configs: Vec<Value>) -> Result<Layout> {
        super::merge_inputs::check(&configs)?;
        let mut layout = Layout::default();
        for i in merge_order(&configs)? {
            let mc = &configs[i];
            let name = mc_name(mc);
            layout.machineconfigs.push(name.to_string());
            let Some(config) = mc.pointer("/spec/config") else {
                continue;
            };
            layout
                .add_config(name, config)
                .with_context(|| format!("MachineConfig {name:?}"))?;
        }
        refuse_systemd_conflicts(&layout.files, layout.unit_paths())?;
        refuse_sourceless_files(&layout.files)?;
        Ok(layout)
    }

    /// The file the merged configs write at `path`: the whole file of the
    /// last MachineConfig in merge order that writes it, unpacked to at
    /// most [`FILE_CAP`].
    pub fn file(&self, path: &str) -> Result<Option<TreeFile>> {
        Ok(
            read_node(&self.files, path)?.map(|(contents, mode)| TreeFile {
                path: path.to_string(),
                contents,
                mode,
            }),
        )
    }

    /// The paths of the units and drop-ins with contents, as Ignition
    /// checks storage entries against them.
    fn unit_paths(&self) -> impl Iterator<Item = String> + '_ {
        self.units.iter().flat_map(|(name, unit)| {
            let own = unit.contents.as_ref().filter(|c| !c.is_empty());
            own.map(|_| format!("{UNIT_DIR}/{name}")).into_iter().chain(
                (unit.dropins.iter().filter(|(_, t)| !t.is_empty()))
                    .map(move |(d, _)| format!("{UNIT_DIR}/{name}.d/{d}")),
            )
        })
    }

    fn add_config(&mut self, name: &str, config: &Value) -> Result<()> {
        merge_storage(&mut self.files, name, config)?;
        let units = config.pointer("/systemd/units").and_then(Value::as_array);
        for (i, u) in units.into_iter().flatten().enumerate() {
            let field = format!("spec.config.systemd.units[{i}].name");
            let name = u
                .get("name")
                .and_then(Value::as_str)
                .with_context(|| format!("{field} is missing; every unit needs one"))?;
            check_unit_name(name).map_err(|why| anyhow::anyhow!("{field} {name:?} {why}"))?;
            let unit = self.units.entry(name.to_string()).or_default();
            if let Some(c) = u.get("contents").and_then(Value::as_str) {
                unit.contents = Some(c.to_string());
            }
            if let Some(m) = u.get("mask").and_then(Value::as_bool) {
                unit.mask = m;
            }
            for (j, d) in u
                .get("dropins")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let field = format!("spec.config.systemd.units[{i}].dropins[{j}].name");
                let dname = d
                    .get("name")
                    .and_then(Value::as_str)
                    .with_context(|| format!("{field} is missing; every drop-in needs one"))?;
                check_dropin_name(dname)
                    .map_err(|why| anyhow::anyhow!("{field} {dname:?} {why}"))?;
                // A drop-in without contents keeps an earlier one's (the
                // MCO's merge), or is empty.
                let text = d.get("contents").and_then(Value::as_str);
                let at = unit.dropins.entry(dname.to_string()).or_default();
                if let Some(t) = text {
                    *at = t.to_string();
                }
            }
        }
        Ok(())
    }

    /// Each path the merged configs write with a hash of what is written
    /// there (a file's encoded source, compression and mode; a unit's or
    /// drop-in's text), as the MCO's daemon tells a changed file: nothing
    /// is unpacked.
    pub fn identities(&self) -> BTreeMap<String, u64> {
        use std::hash::{Hash, Hasher};
        let hash = |parts: &[&[u8]]| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            parts.hash(&mut h);
            h.finish()
        };
        let mut out = BTreeMap::new();
        for (path, f) in &self.files {
            let mode = f.mode.to_le_bytes();
            let (c, s) = (
                f.compression.as_deref().unwrap_or(""),
                f.source.as_deref().unwrap_or(""),
            );
            let kind = format!("{:?}", f.kind);
            let mut parts: Vec<&[u8]> = vec![kind.as_bytes(), c.as_bytes(), s.as_bytes(), &mode];
            for (s, c) in &f.appends {
                parts.extend([s.as_bytes(), c.as_deref().unwrap_or("").as_bytes()]);
            }
            out.insert(path.clone(), hash(&parts));
        }
        for (name, unit) in &self.units {
            let path = format!("{UNIT_DIR}/{name}");
            if unit.mask {
                out.insert(path, hash(&[b"mask"]));
            } else if let Some(text) = &unit.contents {
                out.insert(path, hash(&[text.as_bytes()]));
            }
            for (dname, text) in &unit.dropins {
                out.insert(
                    format!("{UNIT_DIR}/{name}.d/{dname}"),
                    hash(&[text.as_bytes()]),
                );
            }
        }
        // A link is what it leads to (review 31 r31b F1: a base's link
        // `/etc/tmpfiles.d/gpu.conf -> /etc/gpu/tmpfiles.conf` whose target
        // alone a change rewrote was judged unchanged at the link's path,
        // which systemd reads through it): its identity holds the identity
        // of what the layout writes where it leads, through links of the
        // layout at the path or a directory above it.
        let by_node: BTreeMap<String, u64> = (out.iter())
            .map(|(p, id)| (super::merge_inputs::node_path(p), *id))
            .collect();
        let links: BTreeMap<String, String> = (self.files.iter())
            .filter_map(|(path, f)| match &f.kind {
                Kind::Link {
                    target: Some(to), ..
                } => Some((super::merge_inputs::node_path(path), link_target(path, to))),
                _ => None,
            })
            .collect();
        for (path, f) in &self.files {
            let Kind::Link {
                target: Some(to), ..
            } = &f.kind
            else {
                continue;
            };
            let led_to = through_links(&links, link_target(path, to));
            if let (Some(id), Some(own)) = (by_node.get(&led_to), out.get(path).copied()) {
                out.insert(path.clone(), hash(&[&own.to_le_bytes(), &id.to_le_bytes()]));
            }
        }
        out
    }

    /// What one MachineConfig's config writes, by node path (a masked
    /// unit as its link's target): what `compose` compares across
    /// MachineConfigs. The files explain reads are unpacked (within the
    /// same caps); any other file stands as its encoded source.
    pub(crate) fn writes_of(name: &str, config: &Value) -> Result<BTreeMap<String, Vec<u8>>> {
        let mut one = Layout::default();
        one.add_config(name, config)?;
        refuse_systemd_conflicts(&one.files, one.unit_paths())?;
        let texts = one.units.values().flat_map(|u| {
            u.contents
                .iter()
                .chain(u.dropins.values())
                .map(String::as_str)
        });
        // A link is what it says: its target may be another config's.
        let unpacked = unpack_read(&one.files, texts, false)?;
        let mut out: BTreeMap<String, Vec<u8>> = one
            .entries(&unpacked)
            .into_iter()
            .map(|(path, e)| match e {
                Entry::File(bytes, _) => (path, bytes.to_vec()),
                Entry::Link(target) => (path, format!("-> {target}").into_bytes()),
                Entry::Directory(_) => (path, b"a directory".to_vec()),
            })
            .collect();
        for (path, f) in &one.files {
            if let Kind::Link { target, hard } = &f.kind {
                let to = target.as_deref().unwrap_or("");
                out.insert(path.clone(), format!("-> {to} (hard: {hard})").into_bytes());
            } else if f.kind == Kind::File
                && !unpacked.contains_key(path.as_str())
                && let Some(bytes) = out.get_mut(path)
            {
                *bytes = format!(
                    "{}|{}",
                    f.compression.as_deref().unwrap_or(""),
                    f.source.as_deref().unwrap_or("")
                )
                .into_bytes();
            }
        }
        Ok(out)
    }

    /// What the tree holds, by node path: the files (with their contents
    /// when `unpacked` has them, else empty), then the units over them as
    /// Ignition writes them (a unit's file replaces a file of that path; a
    /// mask, a link to /dev/null, replaces both).
    fn entries<'a>(
        &'a self,
        unpacked: &'a BTreeMap<&'a str, Vec<u8>>,
    ) -> BTreeMap<String, Entry<'a>> {
        let mut out = BTreeMap::new();
        for (path, f) in &self.files {
            let contents = unpacked.get(path.as_str()).map(Vec::as_slice);
            let entry = match &f.kind {
                Kind::File => Entry::File(contents.unwrap_or_default(), f.mode),
                Kind::Directory => Entry::Directory(f.mode),
                // A link explain reads is laid out as what it reads (see
                // `unpack_read`); a mask as a mask; any other as a link
                // `write` leaves out (nothing in the tree leads out of it).
                Kind::Link { target, .. } => match (contents, target.as_deref()) {
                    (Some(c), _) => Entry::File(
                        c,
                        resolve(&self.files, path).map_or(0o644, |r| self.files[r].mode),
                    ),
                    (None, Some(t)) if masks_a_unit(path, Some(t)) => Entry::Link("/dev/null"),
                    (None, t) => Entry::Link(t.unwrap_or_default()),
                },
            };
            out.insert(path.clone(), entry);
        }
        for (name, unit) in &self.units {
            let path = format!("{UNIT_DIR}/{name}");
            // Ignition and the MCO's daemon write no unit or drop-in
            // without contents (the daemon removes one there).
            if unit.mask {
                out.insert(path, Entry::Link("/dev/null"));
            } else if let Some(text) = unit.contents.as_ref().filter(|t| !t.is_empty()) {
                out.insert(path, Entry::File(text.as_bytes(), 0o644));
            }
            for (dname, text) in unit.dropins.iter().filter(|(_, t)| !t.is_empty()) {
                let path = format!("{UNIT_DIR}/{name}.d/{dname}");
                out.insert(path, Entry::File(text.as_bytes(), 0o644));
            }
        }
        out
    }

    /// Write the tree under `root`, a scratch directory that is missing or
    /// empty. Units go to /etc/systemd/system as Ignition writes them; a
    /// masked unit is a symlink to /dev/null.
    ///
    /// Every write stays in `root` by construction: node paths are clean
    /// (checked when merged), each directory on the way is made here or
    /// must be a directory (a symlink is refused, never followed), and each
    /// file or link is created new (nothing there is replaced, removed or
    /// written through). Modes keep their permission bits only: no setuid,
    /// setgid or sticky bit in a scratch tree.
    pub fn write(&self, root: &Path) -> Result<Vec<PathBuf>> {
        match std::fs::read_dir(root) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    bail!(
                        "{} is not empty; MachineConfigs are laid out in a new directory",
                        root.display()
                    );
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(root).with_context(|| format!("creating {}", root.display()))?
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", root.display())),
        }
        let texts = self.units.values().flat_map(|u| {
            u.contents
                .iter()
                .chain(u.dropins.values())
                .map(String::as_str)
        });
        let unpacked = unpack_read(&self.files, texts, true)?;
        let entries = self.entries(&unpacked);
        super::unpack::check_tree_shape(entries.keys().map(String::as_str))?;
        let mut written = Vec::new();
        for (node, entry) in &entries {
            if matches!(entry, Entry::Link(t) if *t != "/dev/null") {
                continue;
            }
            written.push(create_in(root, node, entry)?);
        }
        Ok(written)
    }
}

/// Where Ignition writes units.
const UNIT_DIR: &str = "/etc/systemd/system";

#[derive(Debug, Clone, Copy)]
enum Entry<'a> {
    File(&'a [u8], u32),
    Link(&'a str),
    Directory(u32),
}

/// Create `entry` at the clean node path `node` in the tree at `root`.
fn create_in(root: &Path, node: &str, entry: &Entry) -> Result<PathBuf> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut names: Vec<&str> = node.split('/').filter(|n| !n.is_empty()).collect();
    // Checked when merged; refused here too, so no name can climb.
    if names.iter().any(|n| *n == "." || *n == "..") {
        bail!("writing {node}: a \".\" or \"..\" component");
    }
    let last = names.pop().context("a node path with no file name")?;
    let mut at = root.to_path_buf();
    for (i, name) in names.iter().enumerate() {
        at.push(name);
        match std::fs::symlink_metadata(&at) {
            // Not a symlink: symlink_metadata does not follow one.
            Ok(m) if m.is_dir() => {}
            Ok(_) => bail!(
                "writing {node}: /{} is not a directory in these MachineConfigs (a file, or a masked unit's link, is written there too); give each path one kind",
                names[..=i].join("/")
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(&at)
                .with_context(|| format!("creating /{}", names[..=i].join("/")))?,
            Err(e) => return Err(e).with_context(|| format!("reading /{}", names[..=i].join("/"))),
        }
    }
    at.push(last);
    let exists = |e: std::io::Error| -> anyhow::Error {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::anyhow!(
                "writing {node}: it is a directory in these MachineConfigs too (files are written below it); give each path one kind"
            )
        } else {
            anyhow::Error::new(e).context(format!("writing {node}"))
        }
    };
    match entry {
        Entry::File(bytes, mode) => {
            // O_CREAT|O_EXCL: never through a link, never over a file.
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&at)
                .map_err(exists)?;
            std::io::Write::write_all(&mut f, bytes).with_context(|| format!("writing {node}"))?;
            f.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))
                .with_context(|| format!("setting the mode of {node}"))?;
        }
        Entry::Link(target) => std::os::unix::fs::symlink(target, &at).map_err(exists)?,
        Entry::Directory(mode) => {
            if !std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir()) {
                std::fs::create_dir(&at).map_err(exists)?;
            }
            std::fs::set_permissions(&at, std::fs::Permissions::from_mode(mode & 0o777 | 0o700))
                .with_context(|| format!("setting the mode of {node}"))?;
        }
    }
    Ok(at)
}

/// The unit types systemd loads (the suffixes Ignition takes, less
/// `.snapshot`, which systemd no longer has).
const UNIT_TYPES: [&str; 11] = [
    "service",
    "socket",
    "device",
    "mount",
    "automount",
    "swap",
    "target",
    "path",
    "timer",
    "slice",
    "scope",
];

/// Why `name` is not a unit name systemd loads (unit_name_is_valid: at
/// most 255 bytes of letters, digits and `:-_.\`, an optional `@`
/// instance, a unit type suffix), if it is not: a file name in
/// /etc/systemd/system, never a path.
fn check_unit_name(name: &str) -> std::result::Result<(), String> {
    let fix = "systemd loads units by file names of letters, digits and \":-_.\\@\" ending in a unit type (as kubelet.service), without \"/\": name the unit so";
    let ok = (|| {
        if name.is_empty() || name.len() > 255 {
            return false;
        }
        let Some(dot) = name.rfind('.') else {
            return false;
        };
        if dot == 0 || !UNIT_TYPES.contains(&&name[dot + 1..]) {
            return false;
        }
        if !name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b":-_.\\@".contains(&c))
        {
            return false;
        }
        match name.find('@') {
            None => true,
            // One `@`, not first: `tpl@.service` or `tpl@instance.service`.
            Some(at) => at != 0 && at < dot && !name[at + 1..].contains('@'),
        }
    })();
    if ok {
        Ok(())
    } else {
        Err(format!("is not a unit name; {fix}"))
    }
}

/// Why `name` is not a drop-in name Ignition writes, if it is not: a file
/// name ending in `.conf` (systemd reads no other), never a path.
fn check_dropin_name(name: &str) -> std::result::Result<(), String> {
    let ok = name.len() <= 255 && name.ends_with(".conf") && !name.contains(['/', '\0']);
    if ok {
        Ok(())
    } else {
        Err(
            "is not a drop-in name; Ignition and systemd take a file name ending in .conf, \
             without \"/\" (as 20-labels.conf): name the drop-in so"
                .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use serde_json::json;

    fn mc(name: &str, config: Value) -> Value {
        json!({"kind": "MachineConfig", "metadata": {"name": name}, "spec": {"config": config}})
    }

    #[test]
    fn later_names_win_per_path_unit_and_dropin() {
        let a = mc(
            "01-a",
            json!({"storage": {"files": [{"path": "/etc/x", "contents": {"source": "data:,one"}}]},
                   "systemd": {"units": [{"name": "k.service", "contents": "A",
                                           "dropins": [{"name": "d.conf", "contents": "1"}]}]}}),
        );
        let b = mc(
            "99-b",
            json!({"storage": {"files": [{"path": "/etc/x", "mode": 420,
                                           "contents": {"source": "data:;base64,dHdv"}}]},
                   "systemd": {"units": [{"name": "k.service",
                                           "dropins": [{"name": "d.conf", "contents": "2"},
                                                       {"name": "e.conf", "contents": "3"}]}]}}),
        );
        // Given out of order: within a role, the MCO sorts by name.
        let layout = Layout::merge(vec![b, a]).unwrap();
        assert_eq!(layout.machineconfigs, ["01-a", "99-b"]);
        let dir = tempfile::tempdir().unwrap();
        layout.write(dir.path()).unwrap();
        let read = |p: &str| std::fs::read_to_string(dir.path().join(p)).unwrap();
        // Merged: the later file; laid out empty (nothing names it).
        assert_eq!(layout.file("/etc/x").unwrap().unwrap().contents, b"two");
        assert_eq!(read("etc/x"), "");
        assert_eq!(read("etc/systemd/system/k.service"), "A");
        assert_eq!(read("etc/systemd/system/k.service.d/d.conf"), "2");
        assert_eq!(read("etc/systemd/system/k.service.d/e.conf"), "3");
    }

    /// As the MCO merges (Ignition's merge): a later entry of a path keeps
    /// what it leaves unset (a `mode` alone kept the contents, which were
    /// laid out empty: explain said "no labels or taints to add" where
    /// the MCO serves them), and its `append` entries are written after
    /// the contents (they were dropped: explain showed a taint an appended
    /// line clears at the node's first boot). A drop-in without contents
    /// keeps the earlier one's too.
    #[test]
    fn a_later_entry_merges_field_by_field_and_appends() {
        let env = "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf";
        let a = mc(
            "50-a",
            json!({"storage": {"files": [{"path": env, "mode": 420,
                                           "contents": {"source": "data:,T%3Dtaint%0A"}}]},
                   "systemd": {"units": [{"name": "k.service",
                                           "dropins": [{"name": "d.conf", "contents": "1"}]}]}}),
        );
        let mode_only = mc(
            "60-b",
            json!({"storage": {"files": [{"path": env, "mode": 384}]},
                   "systemd": {"units": [{"name": "k.service",
                                           "dropins": [{"name": "d.conf"}]}]}}),
        );
        let appended = mc(
            "99-c",
            json!({"storage": {"files": [{"path": env,
                "append": [{"source": "data:,T%3D%0A"}]}]}}),
        );
        let layout = Layout::merge(vec![a, mode_only, appended]).unwrap();
        let f = layout.file(env).unwrap().unwrap();
        assert_eq!(String::from_utf8(f.contents).unwrap(), "T=taint\nT=\n");
        assert_eq!(f.mode, 384);
        let dir = tempfile::tempdir().unwrap();
        layout.write(dir.path()).unwrap();
        let read = |p: &str| std::fs::read_to_string(dir.path().join(p)).unwrap();
        assert_eq!(read(&env[1..]), "T=taint\nT=\n");
        assert_eq!(read("etc/systemd/system/k.service.d/d.conf"), "1");
        // A later entry's plain source with no `compression` keeps an
        // earlier gzip, as the MCO serves it: Ignition cannot unpack it.
        let gz = |name: &str, c: Value| {
            mc(
                name,
                json!({"storage": {"files": [{"path": "/etc/kubernetes/x",
                "contents": {"source": "data:,plain", "compression": c}}]}}),
            )
        };
        let e = Layout::merge(vec![gz("50-a", json!("gzip")), gz("60-b", Value::Null)])
            .unwrap()
            .file("/etc/kubernetes/x")
            .unwrap_err();
        assert!(format!("{e:#}").contains("gzip"), "{e:#}");
        let f = Layout::merge(vec![gz("50-a", json!("gzip")), gz("60-b", json!(""))]).unwrap();
        assert_eq!(
            f.file("/etc/kubernetes/x").unwrap().unwrap().contents,
            b"plain"
        );
        // Appends count toward the file's cap.
        let big = mc(
            "99-d",
            json!({"storage": {"files": [{"path": env, "overwrite": false, "append": [
                {"source": format!("data:,{}", "a".repeat(super::super::unpack::FILE_CAP as usize))}]}]}}),
        );
        let layout = Layout::merge(vec![big]).unwrap();
        assert!(layout.file(env).is_ok());
        let over = mc(
            "99-e",
            json!({"storage": {"files": [{"path": env, "contents": {"source": "data:,x"}, "append": [
                {"source": format!("data:,{}", "a".repeat(super::super::unpack::FILE_CAP as usize))}]}]}}),
        );
        let e = Layout::merge(vec![over]).unwrap().file(env).unwrap_err();
        assert!(format!("{e:#}").contains("unpack to more than"), "{e:#}");
    }

    fn role_mc(name: &str, role: &str, config: Value) -> Value {
        let mut v = mc(name, config);
        v["metadata"]["labels"] = json!({ ROLE_LABEL: role });
        v
    }

    /// Writes /etc/x and the drop-in k.service.d/d.conf with `text`.
    fn writes(text: &str) -> Value {
        json!({"storage": {"files": [{"path": "/etc/x", "contents": {"source": format!("data:,{text}")}}]},
               "systemd": {"units": [{"name": "k.service",
                                       "dropins": [{"name": "d.conf", "contents": text}]}]}})
    }

    #[test]
    fn the_pools_own_role_wins_over_worker_whatever_the_names() {
        let configs = vec![
            role_mc("99-worker-z", "worker", writes("worker")),
            role_mc("50-worker-gpu-a", "worker-gpu", writes("pool")),
            mc("rendered-worker-0123", writes("rendered")),
            role_mc("00-worker-a", "worker", json!({})),
            mc("00-base", json!({})),
        ];
        let layout = Layout::merge(configs).unwrap();
        assert_eq!(
            layout.machineconfigs,
            [
                "00-base",
                "rendered-worker-0123",
                "00-worker-a",
                "99-worker-z",
                "50-worker-gpu-a"
            ]
        );
        assert_eq!(layout.file("/etc/x").unwrap().unwrap().contents, b"pool");
        let dir = tempfile::tempdir().unwrap();
        layout.write(dir.path()).unwrap();
        let dropin = dir.path().join("etc/systemd/system/k.service.d/d.conf");
        assert_eq!(std::fs::read_to_string(dropin).unwrap(), "pool");
        // Without the pool's, worker's go over the rendered config.
        let layout = Layout::merge(vec![
            role_mc("01-worker-a", "worker", writes("worker")),
            mc("rendered-worker-0123", writes("rendered")),
        ])
        .unwrap();
        assert_eq!(layout.file("/etc/x").unwrap().unwrap().contents, b"worker");
    }

    #[test]
    fn machineconfigs_of_two_pools_are_refused() {
        let err = |configs: Vec<Value>| format!("{:#}", Layout::merge(configs).unwrap_err());
        let e = err(vec![
            role_mc("01-worker-kubelet", "worker", json!({})),
            role_mc("50-worker-gpu-labels", "worker-gpu", json!({})),
            role_mc("50-worker-infra-labels", "worker-infra", json!({})),
            role_mc("50-worker-infra-wrapper", "worker-infra", json!({})),
        ]);
        assert_eq!(
            e,
            "MachineConfigs of more than one pool (a node is in one pool, not worker-gpu and \
             worker-infra): \"01-worker-kubelet\" (role worker); \"50-worker-gpu-labels\" \
             (role worker-gpu); \"50-worker-infra-labels\", \"50-worker-infra-wrapper\" (role \
             worker-infra); give the MachineConfigs of one pool: its role's (and, for a custom \
             pool, worker's) or its rendered config"
        );
        for own in ["master", "arbiter"] {
            let e = err(vec![
                role_mc("01-worker-kubelet", "worker", json!({})),
                role_mc(&format!("50-{own}-labels"), own, json!({})),
            ]);
            assert!(
                e.contains(&format!("the {own} pool takes no worker MachineConfigs"))
                    && e.contains("\"01-worker-kubelet\" (role worker)")
                    && e.contains("give the MachineConfigs of one pool"),
                "{e}"
            );
        }
        let e = err(vec![role_mc("a", "worker", json!({})), {
            let mut v = mc("b", json!({}));
            v["metadata"]["labels"] = json!({ ROLE_LABEL: 1 });
            v
        }]);
        assert!(
            e.contains("MachineConfig \"b\": label") && e.contains("quote it"),
            "{e}"
        );
        // One pool, with or without a rendered config: merged.
        for configs in [
            vec![
                role_mc("01-master-kubelet", "master", json!({})),
                mc("rendered-master-1", json!({})),
            ],
            vec![
                role_mc("01-worker-kubelet", "worker", json!({})),
                role_mc("50-worker-gpu-labels", "worker-gpu", json!({})),
                mc("rendered-worker-gpu-1", json!({})),
            ],
        ] {
            assert!(Layout::merge(configs).is_ok());
        }
    }

    /// A rendered config names its pool (its owner, or its name): with
    /// another pool's MachineConfigs it is refused like a role label.
    #[test]
    fn a_rendered_config_counts_as_its_pools() {
        let err = |configs: Vec<Value>| format!("{:#}", Layout::merge(configs).unwrap_err());
        let hash = "2c2b8d9c2a6f1e0b8e7d5f3a1c9b7e6d";
        let gpu = || role_mc("50-worker-gpu-labels", "worker-gpu", json!({}));
        let e = err(vec![
            mc(&format!("rendered-master-{hash}"), json!({})),
            gpu(),
        ]);
        assert!(
            e.contains("a node is in one pool, not master and worker-gpu")
                && e.contains(&format!(
                    "\"rendered-master-{hash}\" (rendered for pool master)"
                ))
                && e.contains("\"50-worker-gpu-labels\" (role worker-gpu)"),
            "{e}"
        );
        // The owner names the pool, whatever the object's name.
        let mut owned = mc("my-copy", json!({}));
        owned["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigPool", "name": "infra", "uid": "u", "controller": true
        }]);
        let e = err(vec![owned.clone(), gpu()]);
        assert!(e.contains("not infra and worker-gpu"), "{e}");
        // Two rendered configs of two pools.
        let e = err(vec![
            mc(&format!("rendered-worker-gpu-{hash}"), json!({})),
            mc(&format!("rendered-worker-infra-{hash}"), json!({})),
        ]);
        assert!(e.contains("not worker-gpu and worker-infra"), "{e}");
        // Worker's configs under master.
        let e = err(vec![
            mc(&format!("rendered-master-{hash}"), json!({})),
            role_mc("99-worker-x", "worker", json!({})),
        ]);
        assert!(
            e.contains("the master pool takes no worker MachineConfigs"),
            "{e}"
        );
        // One pool: rendered-worker is what a custom pool takes from worker.
        for configs in [
            vec![mc(&format!("rendered-worker-{hash}"), json!({})), gpu()],
            vec![mc(&format!("rendered-worker-gpu-{hash}"), json!({})), gpu()],
            vec![
                mc(&format!("rendered-worker-gpu-{hash}"), json!({})),
                role_mc("99-worker-x", "worker", json!({})),
            ],
            // Not a rendered name: no pool to tell.
            vec![mc("rendered-by-hand", json!({})), gpu()],
        ] {
            assert!(Layout::merge(configs).is_ok());
        }
    }

    #[test]
    fn data_urls_decode_as_ignition_writes_them() {
        assert_eq!(decode_data_url("data:,a%20b%0A", None).unwrap(), b"a b\n");
        assert_eq!(
            decode_data_url("data:text/plain;charset=utf-8;base64,aGk=", None).unwrap(),
            b"hi"
        );
        let gz = super::super::encoding::gzip(b"zipped");
        let url = format!(
            "data:;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(gz)
        );
        assert_eq!(decode_data_url(&url, Some("gzip")).unwrap(), b"zipped");
        let e = decode_data_url("https://example.com/x", None).unwrap_err();
        assert!(e.to_string().contains("data: URLs"), "{e}");
        // Review 9, F8: what Ignition's data-URL lexer refuses (the MCO
        // oracle: "invalid data character", "expected base64") was read.
        for bad in [
            "data:,#%20kubelet",
            "data:;BASE64,aGk=",
            "data:;base64;x=y,aGk=",
            "data:text/plain ;base64,aGk=",
        ] {
            let e = decode_data_url(bad, None).unwrap_err();
            assert!(
                e.to_string().contains("Ignition (RFC 2397) refuses it"),
                "{e}"
            );
        }
    }

    /// Issue 32 item 14: files are unpacked only where explain reads them,
    /// each to at most 16 MiB and all to at most 64 MiB; the rest are laid
    /// out empty.
    #[test]
    fn only_what_explain_reads_is_unpacked_and_only_so_far() {
        let bomb = super::super::unpack::tests::gzip_zeros(20);
        let file = |path: &str, url: &str| json!({"path": path, "contents": {"source": url, "compression": "gzip"}});
        let plain = |path: &str, text: &str| json!({"path": path, "contents": {"source": format!("data:,{text}")}});
        // Forty bombs nothing names, an env file the unit names, which names
        // the kubelet config, which names a CA.
        let mut files: Vec<Value> = (0..40)
            .map(|i| file(&format!("/etc/bomb/{i}"), &bomb))
            .collect();
        files.push(plain("/etc/node.env", "CONFIG=/etc/kube/config.yaml"));
        files.push(plain("/etc/kube/config.yaml", "ca:%20/etc/pki/kube-ca.crt"));
        files.push(plain("/etc/pki/kube-ca.crt", "CA"));
        files.push(plain("/etc/pki/other.crt", "other"));
        let unit = json!({"name": "kubelet.service",
            "contents": "[Service]\nEnvironmentFile=-/etc/node.env\nExecStart=/usr/bin/kubelet --config=${CONFIG}\n"});
        let config = json!({"storage": {"files": files}, "systemd": {"units": [unit]}});
        let layout = Layout::merge(vec![mc("50-bombs", config.clone())]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        layout.write(&dir.path().join("t")).unwrap();
        let read = |p: &str| std::fs::read(dir.path().join("t").join(p)).unwrap();
        assert_eq!(read("etc/kube/config.yaml"), b"ca: /etc/pki/kube-ca.crt");
        assert_eq!(read("etc/pki/kube-ca.crt"), b"CA");
        // Laid out, not unpacked.
        assert_eq!(read("etc/pki/other.crt"), b"");
        assert_eq!(read("etc/bomb/7"), b"");

        // Where explain reads them: the first refused, naming the
        // MachineConfig, the path and the cap.
        let mut config = config;
        config["storage"]["files"][3]["path"] = json!("/etc/kubernetes/bomb");
        let layout = Layout::merge(vec![mc("50-bombs", config)]).unwrap();
        let e = format!("{:#}", layout.write(&dir.path().join("t2")).unwrap_err());
        assert_eq!(
            e,
            "MachineConfig \"50-bombs\": /etc/kubernetes/bomb: its contents unpack to more than \
             16 MiB (explain lays out at most 16 MiB of a file, as much as it reads of one, and \
             64 MiB in all)"
        );
        // Five of 15 MiB: the fifth passes 64 MiB in all.
        let fifteen = super::super::unpack::tests::gzip_zeros(15);
        let files: Vec<Value> = (0..5)
            .map(|i| file(&format!("/etc/kubernetes/f{i}"), &fifteen))
            .collect();
        let layout =
            Layout::merge(vec![mc("50-many", json!({"storage": {"files": files}}))]).unwrap();
        let e = format!("{:#}", layout.write(&dir.path().join("t3")).unwrap_err());
        assert!(
            e.starts_with("MachineConfig \"50-many\": /etc/kubernetes/f")
                && e.contains("unpack to more than 64 MiB in all"),
            "{e}"
        );
    }

    #[test]
    fn names_as_systemd_takes_them_and_no_climbing_write() {
        for ok in [
            "k.service",
            "k@.service",
            "k@i.service",
            "a-b_c:d\\x2d.timer",
            "..service",
        ] {
            assert!(check_unit_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "x",
            ".service",
            "k.foo",
            "k.snapshot",
            "@i.service",
            "a@b@c.service",
            "a/b.service",
            "../x.service",
            "a b.service",
        ] {
            assert!(check_unit_name(bad).is_err(), "{bad}");
        }
        for ok in ["10-a.conf", ".conf", "a b.conf"] {
            assert!(check_dropin_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a.conf.d", "a/b.conf", "../b.conf", "x"] {
            assert!(check_dropin_name(bad).is_err(), "{bad}");
        }
        assert_eq!(clean_path("/usr/../../../../etc/cron.d/x"), "/etc/cron.d/x");
        let dir = tempfile::tempdir().unwrap();
        let e = create_in(dir.path(), "/a/../../b", &Entry::File(b"x", 0o644)).unwrap_err();
        assert!(e.to_string().contains("component"), "{e}");
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }

    #[test]
    fn lists_and_other_kinds() {
        let text = "kind: List\nitems:\n- kind: MachineConfig\n  metadata: {name: a}\n---\nkind: MachineConfigPool\nmetadata: {name: p}\n";
        assert_eq!(machineconfigs_from_yaml(text, "x.yaml").unwrap().len(), 1);
        assert!(machineconfigs_from_yaml("kind: MachineConfigPool\n", "p.yaml").is_err());
    }
}
