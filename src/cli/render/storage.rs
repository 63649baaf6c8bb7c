//! A MachineConfig's `storage` merged over the configs before it, as the
//! MCO merges a pool's configs (Ignition's merge, `config/merge`): files,
//! links and directories are one list keyed by path
//! (`Storage.MergedKeys`), so a later entry of one kind at a path replaces
//! an earlier one of any other kind whole, and one of the same kind merges
//! field by field. And Ignition's refusal of a storage entry at the path
//! of a systemd unit or drop-in (`Config.Validate`).

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

use super::unpack::{Kind, MergedFile, clean_path};

/// The lists of `storage`, in the order merged, with the word for one
/// entry.
const LISTS: [(&str, &str); 3] = [
    ("files", "file"),
    ("links", "link"),
    ("directories", "directory"),
];

/// Merge the `storage` of `config` (MachineConfig `name`) into `nodes`.
pub(super) fn merge_storage(
    nodes: &mut BTreeMap<String, MergedFile>,
    name: &str,
    config: &Value,
) -> Result<()> {
    for (list, one) in LISTS {
        let entries = config.get("storage").and_then(|s| s.get(list));
        for (i, f) in entries.and_then(Value::as_array).into_iter().flatten().enumerate() {
            let field = format!("spec.config.storage.{list}[{i}].path");
            let path = f
                .get("path")
                .and_then(Value::as_str)
                .with_context(|| format!("{field} is missing; every {one} needs one"))?;
            check_file_path(path).map_err(|why| anyhow!("{field} {path:?} {why}"))?;
            // An entry of another list at the path is replaced whole.
            let was = nodes.remove(path).filter(|w| kind_list(&w.kind) == list);
            let merged = match list {
                "files" => MergedFile::merge(was, f, path, name)?,
                "links" => merge_link(was, f, name),
                _ => merge_directory(was, f, name),
            };
            nodes.insert(path.to_string(), merged);
        }
    }
    Ok(())
}

fn kind_list(kind: &Kind) -> &'static str {
    match kind {
        Kind::File => "files",
        Kind::Link { .. } => "links",
        Kind::Directory => "directories",
    }
}

/// A link entry over the same path's link before it: `target` and
/// `hard` kept where unset.
fn merge_link(was: Option<MergedFile>, f: &Value, name: &str) -> MergedFile {
    let (mut target, mut hard) = match was.map(|w| w.kind) {
        Some(Kind::Link { target, hard }) => (target, hard),
        _ => (None, false),
    };
    if let Some(t) = f.get("target").and_then(Value::as_str) {
        target = Some(t.to_string());
    }
    if let Some(h) = f.get("hard").and_then(Value::as_bool) {
        hard = h;
    }
    node(name, 0o777, Kind::Link { target, hard })
}

/// A directory entry over the same path's directory before it: `mode`
/// kept where unset.
fn merge_directory(was: Option<MergedFile>, f: &Value, name: &str) -> MergedFile {
    let mode = match f.get("mode").and_then(Value::as_u64) {
        Some(m) => m as u32,
        None => was.map_or(0o755, |w| w.mode),
    };
    node(name, mode, Kind::Directory)
}

fn node(name: &str, mode: u32, kind: Kind) -> MergedFile {
    MergedFile {
        source: None,
        compression: None,
        mode,
        appends: Vec::new(),
        machineconfig: name.to_string(),
        kind,
    }
}

/// Ignition's refusal (`Config.Validate`, `ErrPathConflictsSystemd`) of a
/// storage entry (file, link or directory) at the path of a unit or
/// drop-in with contents (`units`: those paths): the MCO renders no
/// config of it, and the Machine Config Server serves the pool none.
pub(super) fn refuse_systemd_conflicts(
    nodes: &BTreeMap<String, MergedFile>,
    units: impl Iterator<Item = String>,
) -> Result<()> {
    for path in units {
        if let Some(f) = nodes.get(&path) {
            let one = LISTS
                .iter()
                .find(|(list, _)| *list == kind_list(&f.kind))
                .map_or("file", |(_, one)| one);
            bail!(
                "MachineConfig {:?}: storage {one} {path}: path conflicts with systemd unit or \
                 dropin (Ignition refuses such a config; the Machine Config Server serves the \
                 pool none): write it either as the unit or drop-in, or as a storage {one}, \
                 not both",
                f.machineconfig
            );
        }
    }
    Ok(())
}

/// Why Ignition refuses `path` as a file's path, if it does: it must be
/// absolute and clean (Go's `path.Clean` leaves it as it is: no `..` or
/// `.` component, no `//`, no trailing `/`).
pub(super) fn check_file_path(path: &str) -> std::result::Result<(), String> {
    let fix = |why: &str| {
        let clean = clean_path(path);
        if clean == "/" {
            format!("{why}; Ignition refuses it: give the absolute path of the file, as /etc/NAME")
        } else {
            format!("{why}; Ignition refuses it: write it as {clean}")
        }
    };
    if path.is_empty() {
        return Err("is empty; Ignition refuses it: give the absolute path of the file".into());
    }
    if path.contains('\0') {
        return Err("holds a NUL byte; no file has such a name: remove it".into());
    }
    if !path.starts_with('/') {
        return Err(fix("is not absolute"));
    }
    if path == "/" {
        return Err("is the root directory, not a file: give the file's absolute path".into());
    }
    if clean_path(path) != path {
        return Err(fix(
            "is not clean (a \"..\" or \".\" component, \"//\" or a trailing \"/\")",
        ));
    }
    Ok(())
}
