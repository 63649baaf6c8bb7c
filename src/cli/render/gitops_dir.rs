//! `render machineconfig --output-dir`: one render's manifests into a
//! directory that GitOps shares among pools and the user's own files. A
//! render owns the manifests marked with its pool ([`RENDERED_FOR`]), in
//! them only the fields it writes, and in the kustomization only the
//! entries naming its files. Everything else is kept: other pools' files
//! stay listed, a pool's `paused: true` or a sync-wave annotation survives a
//! re-render, the user's resources and `commonAnnotations` stay in the
//! kustomization. A file is edited in place (`yaml_edit`): the user's
//! quoting, layout and comments stay outside the lines that change; a
//! comment a change cannot keep is named, and only `--force` drops it. The
//! summary comment block at a labels MachineConfig's top (`summary`) is
//! render's own.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::machineconfig::{KUSTOMIZATION, RENDERED_FOR, Rendered, manifest_text, to_yaml};
use super::sync_units::{CLUSTER_WIDE_DIR, POLICY_FILE_PREFIX};
use super::{summary, yaml_edit};

/// The names kustomize reads a directory's kustomization from, in its order.
use super::input::KUSTOMIZATION_NAMES;

/// Where a manifest's fields are merged key by key; below these, a field
/// render writes is replaced whole (its `spec.nodeSelector`, `spec.config`).
const MERGED_LEVELS: [&str; 5] = [
    "",
    "metadata",
    "metadata.labels",
    "metadata.annotations",
    "spec",
];

/// The annotations render writes (`kubelet-labeler/rendered-for`, `-by`).
const OUR_ANNOTATIONS: &str = "kubelet-labeler/";

/// Ours are far smaller; a bigger file is nobody's manifest we read.
const MAX_MANIFEST: u64 = 16 << 20;
/// What render reads of an output directory in all (review 23 r23c F4: 32
/// hard links to one 16 MiB file took 1 GB; review 24 r24a F3: YAML of
/// small nodes costs seconds a MiB to read): a pool's files with four
/// architectures' wrappers are about 1 MiB.
const MAX_SCAN_BYTES: u64 = 16 << 20;
const MAX_SCAN_FILES: usize = 10_000;

/// A manifest-like file found in the directory.
struct Found {
    path: PathBuf,
    name: String,
    /// The text and its one YAML document, or why it could not be read.
    read: std::result::Result<(String, Value), String>,
    /// The render it belongs to: its mark, or for an unmarked file of an
    /// earlier version, the pool or role its name and object say.
    owner: Option<String>,
    /// Marked ([`RENDERED_FOR`]), not told from its name.
    marked: bool,
}

/// What happens to one file.
enum Action {
    Create,
    Unchanged,
    /// Only the comment block render writes at the top changes (an earlier
    /// version's file has none): no field, nothing of the user's.
    Summary,
    /// Fields render writes that change, fields it keeps, comment lines lost.
    Replace {
        replaced: Vec<String>,
        kept: Vec<String>,
        comments: Vec<usize>,
    },
}

struct Write {
    /// Its name in the directory (`own_path`).
    name: String,
    path: PathBuf,
    text: String,
    action: Action,
}

/// What writing `rendered` into `dir` does, checked before anything is
/// written.
struct Plan {
    writes: Vec<Write>,
    /// This render's earlier files it no longer writes.
    removes: Vec<PathBuf>,
    /// Lines for stderr about files left as they are.
    left: Vec<String>,
}

impl Plan {
    /// What only `--force` may do: replace or remove this render's earlier
    /// files, drop comments.
    fn forced(&self) -> Vec<String> {
        let mut out = Vec::new();
        for w in &self.writes {
            if let Action::Replace {
                replaced,
                kept,
                comments,
            } = &w.action
            {
                let mut s = format!("replace {}", w.path.display());
                if !replaced.is_empty() {
                    s += &format!(" (its {})", replaced.join(", "));
                }
                if !kept.is_empty() {
                    s += &format!(", keeping {}", kept.join(", "));
                }
                if !comments.is_empty() {
                    s += &format!(", dropping {}", comment_note(comments));
                }
                out.push(s);
            }
        }
        for p in &self.removes {
            out.push(format!("remove {} ({})", p.display(), removal_why(p)));
        }
        out
    }
}

/// Why this render removes its earlier file `p`.
fn removal_why(p: &Path) -> &'static str {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let top_level = p
        .parent()
        .and_then(Path::file_name)
        .is_none_or(|d| d != CLUSTER_WIDE_DIR);
    if top_level && legacy_policy(name) {
        "this pool's cluster-wide node disruption policy, where an earlier version wrote it: a \
         plain `oc apply -f` on the directory applies it client-side and drops other teams' \
         entries; it is now in cluster-wide/"
    } else {
        "an earlier render's for this pool, which this one does not write; its kustomization \
         entry too"
    }
}

fn comment_note(lines: &[usize]) -> String {
    let n: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    format!(
        "the YAML comment{} on line{} {} (a rewrite does not keep comments)",
        if lines.len() == 1 { "" } else { "s" },
        if lines.len() == 1 { "" } else { "s" },
        n.join(", ")
    )
}

/// Write `rendered` into `dir` (made when missing) and return what was
/// done, one line each. Every check comes first and every file is staged
/// as a temp file beside its place before the first rename, so a refusal or
/// failure changes nothing.
pub fn write(rendered: &Rendered, dir: &Path, force: bool) -> Result<Vec<String>> {
    check_output_dir(dir)?;
    let found = scan(dir)?;
    let plan = plan(rendered, dir, &found)?;
    let clashes = clashes(rendered, &found)?;
    if !clashes.is_empty() && !force {
        bail!(
            "not writing into {}: {}. Render the other one into this directory with this \
             release too (--force writes this one first)",
            dir.display(),
            clashes.join("; ")
        );
    }
    let forced = plan.forced();
    if !forced.is_empty() && !force {
        bail!(
            "not writing into {}: pass --force to {}. Other pools' and your files are left as \
             they are",
            dir.display(),
            forced.join("; ")
        );
    }
    let texts: Vec<(&str, &str)> = plan
        .writes
        .iter()
        .filter(|w| !matches!(w.action, Action::Unchanged))
        .map(|w| (w.name.as_str(), w.text.as_str()))
        .collect();
    let staged = stage_files(dir, &texts)?;
    for file in staged {
        file.persist()?;
    }
    let mut lines = Vec::new();
    for w in &plan.writes {
        let p = w.path.display();
        lines.push(match &w.action {
            Action::Create => format!("wrote {p}"),
            Action::Summary => format!("wrote {p} (only the summary comment at its top)"),
            Action::Unchanged => format!("unchanged {p}"),
            Action::Replace { kept, comments, .. } => {
                let mut s = format!("updated {p}");
                if !kept.is_empty() {
                    s += &format!(" (kept {})", kept.join(", "));
                }
                if !comments.is_empty() {
                    s += &format!(" (dropped {})", comment_note(comments));
                }
                s
            }
        });
    }
    for p in &plan.removes {
        std::fs::remove_file(p).with_context(|| format!("removing {}", p.display()))?;
        lines.push(format!("removed {} ({})", p.display(), removal_why(p)));
    }
    let note = policy_note(rendered, &plan);
    lines.extend(plan.left);
    lines.extend(note);
    lines.extend(clashes.iter().map(|c| format!("warning (--force): {c}")));
    Ok(lines)
}

/// What this render clashes with among the directory's MachineConfigs
/// (`compose::with_directory`), in words.
fn clashes(rendered: &Rendered, found: &[Found]) -> Result<Vec<String>> {
    let objects: Vec<&Value> = found
        .iter()
        .filter_map(|f| f.read.as_ref().ok().map(|(_, o)| o))
        .collect();
    Ok(super::compose::with_directory(rendered, &objects)?
        .iter()
        .map(|c| c.to_string())
        .collect())
}

/// What to do with the node disruption policy this render wrote or
/// changed: it is outside the kustomization and out of a plain `oc apply
/// -f` on the directory, and must reach the cluster before the
/// MachineConfigs (a file the policy does not name yet reboots every node
/// of the pool).
fn policy_note(rendered: &Rendered, plan: &Plan) -> Option<String> {
    let name = super::sync_units::policy_file(&rendered.owner);
    let w = plan.writes.iter().find(|w| w.name == name)?;
    let what = match w.action {
        Action::Unchanged => return None,
        Action::Create | Action::Summary => "wrote the cluster-wide node disruption policy",
        Action::Replace { .. } => "the cluster-wide node disruption policy changed",
    };
    Some(format!(
        "{what} (OpenShift 4.17+; not in the kustomization, and `oc apply -f` on the directory \
         does not reach it): apply it before the MachineConfigs, or nodes of the pool reboot for \
         files it does not name yet, server-side, so that entries other teams apply server-side \
         with a field manager of their own stay ({}): {}",
        super::sync_units::CLIENT_SIDE_ENTRIES,
        super::sync_units::apply_command(&rendered.owner, &w.path)
    ))
}

/// Files render writes that no kustomization of ours lists: what is in
/// the cluster-wide directory, and an earlier version's policy beside the
/// manifests.
fn unlisted(name: &str) -> bool {
    in_cluster_wide(name) || legacy_policy(name)
}

/// A name in the cluster-wide directory (`cluster-wide/x.yaml`).
fn in_cluster_wide(name: &str) -> bool {
    name.strip_prefix(CLUSTER_WIDE_DIR)
        .is_some_and(|r| r.starts_with('/'))
}

/// A policy file's name where earlier versions wrote it: beside the
/// manifests, where a plain `oc apply -f` on the directory applies it.
fn legacy_policy(name: &str) -> bool {
    !name.contains('/') && name.starts_with(POLICY_FILE_PREFIX)
}

fn plan(rendered: &Rendered, dir: &Path, found: &[Found]) -> Result<Plan> {
    let at = |name: &str| found.iter().find(|f| f.name == name);
    let mut writes = Vec::new();
    let mut ours: Vec<&str> = Vec::new();
    // What the kustomization lists: not the cluster-wide node disruption
    // policy, which is applied server-side (`sync_units::policy_file`).
    let mut ours_listed: Vec<&str> = Vec::new();
    let mut kustomization = None;
    for (name, obj) in &rendered.manifests {
        if obj["kind"] == "Kustomization" {
            kustomization = Some(obj);
            continue;
        }
        ours.push(name);
        if !unlisted(name) {
            ours_listed.push(name);
        }
        // A link (to anywhere), a directory, a FIFO at our name: refused
        // by name, before anything else is said of it.
        let path = own_path(dir, name)?;
        let Some(f) = at(name) else {
            writes.push(Write {
                name: name.clone(),
                path,
                text: manifest_text(obj)?,
                action: Action::Create,
            });
            continue;
        };
        let (text, old) = f
            .read
            .as_ref()
            .map_err(|why| anyhow::anyhow!("{}: {why}; {}", path.display(), not_replacing(obj)))?;
        if f.owner.as_deref() != Some(&rendered.owner) || identity(old) != identity(obj) {
            bail!(
                "{} holds {}, not {}; {}",
                path.display(),
                describe(f, old),
                identity(obj),
                not_replacing(obj)
            );
        }
        let (merged, replaced, kept) = merge(old, obj);
        let new_text = summary::set(
            &edited(&summary::without(text), &merged)?,
            &summary::lines(&merged),
        );
        let action = if new_text == *text {
            Action::Unchanged
        } else if merged == *old {
            Action::Summary
        } else {
            Action::Replace {
                replaced,
                kept,
                comments: lost_comments(text, &new_text),
            }
        };
        writes.push(Write {
            name: name.clone(),
            path,
            text: new_text,
            action,
        });
    }
    let removes: Vec<&Found> = found
        .iter()
        .filter(|f| f.owner.as_deref() == Some(&rendered.owner) && !ours.contains(&f.name.as_str()))
        .collect();

    // The kustomization: this render's entries in, its removed files' out,
    // every other entry and field as it was.
    let k_name = KUSTOMIZATION_NAMES
        .iter()
        .find(|n| at(n).is_some())
        .copied()
        .unwrap_or(KUSTOMIZATION);
    let k_path = own_path(dir, k_name)?;
    let removed_names: Vec<&str> = removes.iter().map(|f| f.name.as_str()).collect();
    let listed: Vec<String>;
    match (at(k_name), kustomization) {
        (_, None) => listed = Vec::new(),
        (None, Some(k)) => {
            // A new kustomization lists every render's files found here.
            let mut k = k.clone();
            let mut resources: Vec<String> = ours_listed.iter().map(|s| s.to_string()).collect();
            resources.extend(
                found
                    .iter()
                    .filter(|f| f.owner.is_some() && !ours.contains(&f.name.as_str()))
                    .filter(|f| !unlisted(&f.name))
                    .filter(|f| !removed_names.contains(&f.name.as_str()))
                    .map(|f| f.name.clone()),
            );
            k["resources"] = serde_json::json!(resources);
            listed = resources;
            writes.push(Write {
                name: k_name.to_string(),
                path: k_path,
                text: to_yaml(&k)?,
                action: Action::Create,
            });
        }
        (Some(f), Some(_)) => {
            let (text, old) = f.read.as_ref().map_err(|why| {
                anyhow::anyhow!(
                    "{}: {why}; render adds this pool's files to it and cannot: fix it, or move it away",
                    k_path.display()
                )
            })?;
            let new = merge_kustomization(old, &ours_listed, &removed_names)
                .with_context(|| format!("{}: cannot add this pool's files", k_path.display()))?;
            listed = entries(&new).unwrap_or_default();
            let new_text = edited(text, &new)?;
            let action = if new == *old {
                Action::Unchanged
            } else {
                let comments = lost_comments(text, &new_text);
                if comments.is_empty() {
                    Action::Create
                } else {
                    Action::Replace {
                        replaced: vec!["resources".into()],
                        kept: Vec::new(),
                        comments,
                    }
                }
            };
            writes.push(Write {
                name: k_name.to_string(),
                path: k_path,
                text: new_text,
                action,
            });
        }
    }
    // A set, not a scan per file (review 42 r42b F3).
    let listed: std::collections::HashSet<&str> = listed.iter().map(String::as_str).collect();
    let mut left = Vec::new();
    for f in found {
        if ours.contains(&f.name.as_str())
            || removed_names.contains(&f.name.as_str())
            || KUSTOMIZATION_NAMES.contains(&f.name.as_str())
            // Out of a plain `oc apply -f` on the directory.
            || in_cluster_wide(&f.name)
        {
            continue;
        }
        if let (Some(owner), true) = (&f.owner, legacy_policy(&f.name)) {
            left.push(format!(
                "left {} ({owner}'s cluster-wide node disruption policy, where an earlier version \
                 wrote it: a plain `oc apply -f` on the directory applies it client-side and drops \
                 other teams' entries; render {owner} again with --force to move it into \
                 {CLUSTER_WIDE_DIR}/)",
                f.path.display()
            ));
            continue;
        }
        // Earlier versions wrote the worker wrapper MachineConfig with every
        // pool; unmarked, it may as well be a `--role worker` render's.
        if let (Some(role @ ("worker" | "master")), false) = (f.owner.as_deref(), f.marked) {
            left.push(format!(
                "left {} (unmarked, for every node of role {role}: an earlier version wrote it \
                 with each pool; remove it and its {k_name} entry unless you render --role \
                 {role}). {}",
                f.path.display(),
                removal_cost(role),
            ));
        } else if !(listed.contains(f.name.as_str()) || f.owner.is_some() && unlisted(&f.name)) {
            left.push(format!(
                "left {} (not listed in {k_name}; `oc apply -f` on the directory would apply it)",
                f.path.display()
            ));
        }
    }
    Ok(Plan {
        writes,
        removes: removes.iter().map(|f| f.path.clone()).collect(),
        left,
    })
}

/// What removing a built-in role's MachineConfig costs, and the cheaper
/// order (checked against the MCO's own daemon: tests/mco_disruption.rs).
fn removal_cost(role: &str) -> String {
    let (pools, custom) = if role == "worker" {
        (
            "of worker and of every custom pool (they take worker's MachineConfigs)",
            "A custom pool's node keeps the files its own render writes at the same paths; ",
        )
    } else {
        ("of the master pool", "")
    };
    format!(
        "Removing it changes the rendered config {pools}: each rolls, maxUnavailable nodes at a \
         time. {custom}a file only it writes goes, and a {role} node loses the wrapper, the \
         generator and the sync's units: each node is drained and rebooted for that before \
         OpenShift 4.17, or until the cluster-wide node disruption policy is applied (with it, a \
         daemon-reload and a restart of the sync). Cheaper: remove it in the same change as \
         this render, with the pools paused, so that each pool rolls once, and apply the policy \
         first (docs/upgrading.md)"
    )
}

fn not_replacing(obj: &Value) -> String {
    format!(
        "render replaces only what an earlier render for {} wrote: move the file away and render again",
        obj["metadata"]["annotations"][RENDERED_FOR]
            .as_str()
            .unwrap_or("this pool")
    )
}

/// `Kind name` of a manifest.
fn identity(obj: &Value) -> String {
    format!(
        "{} {}",
        obj["kind"].as_str().unwrap_or("(no kind)"),
        obj["metadata"]["name"].as_str().unwrap_or("(no name)")
    )
}

fn describe(f: &Found, obj: &Value) -> String {
    match &f.owner {
        Some(o) => format!("{} (rendered for {o})", identity(obj)),
        None => format!("{} (not rendered by kubelet-labeler)", identity(obj)),
    }
}

/// `resources` of a kustomization, as file names (`./x` is `x`).
fn entries(k: &Value) -> Option<Vec<String>> {
    match k.get("resources") {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|e| e.as_str().map(|s| s.trim_start_matches("./").to_string()))
            .collect(),
        Some(_) => None,
    }
}

/// The kustomization with `add` listed (appended, when missing) and
/// `remove` unlisted; every other entry and field kept, in order.
fn merge_kustomization(old: &Value, add: &[&str], remove: &[&str]) -> Result<Value> {
    let Some(map) = old.as_object() else {
        bail!("it is not a YAML mapping");
    };
    let list = match map.get("resources") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => bail!("its resources is not a list"),
    };
    let name = |v: &Value| v.as_str().map(|s| s.trim_start_matches("./").to_string());
    let mut list: Vec<Value> = list
        .into_iter()
        .filter(|v| name(v).is_none_or(|n| !remove.contains(&n.as_str())))
        .collect();
    for a in add {
        if !list.iter().any(|v| name(v).as_deref() == Some(a)) {
            list.push(Value::String(a.to_string()));
        }
    }
    let mut new = map.clone();
    new.insert("resources".into(), Value::Array(list));
    Ok(Value::Object(new))
}

/// `old` with `ours` written over it: at [`MERGED_LEVELS`] key by key,
/// below them whole. Returns the result, the fields of ours that change and
/// the fields of `old` kept that ours does not write.
fn merge(old: &Value, ours: &Value) -> (Value, Vec<String>, Vec<String>) {
    let mut replaced = Vec::new();
    let mut kept = Vec::new();
    let merged = merge_at("", old, ours, &mut replaced, &mut kept);
    (merged, replaced, kept)
}

fn merge_at(
    path: &str,
    old: &Value,
    ours: &Value,
    replaced: &mut Vec<String>,
    kept: &mut Vec<String>,
) -> Value {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (old, ours) {
        (Value::Object(o), Value::Object(n)) if MERGED_LEVELS.contains(&path) => {
            let mut out = o.clone();
            // An earlier render's marks are ours, not the user's: where
            // this render writes none (the policy), they go.
            if path == "metadata"
                && !n.contains_key("annotations")
                && let Some(Value::Object(a)) = out.get_mut("annotations")
            {
                let before = a.len();
                a.retain(|k, _| !k.starts_with(OUR_ANNOTATIONS));
                if a.len() != before {
                    replaced.push(join("annotations"));
                }
                if a.is_empty() {
                    out.remove("annotations");
                }
            }
            if path == "metadata.annotations" {
                let before = out.len();
                out.retain(|k, _| n.contains_key(k) || !k.starts_with(OUR_ANNOTATIONS));
                if out.len() != before {
                    replaced.push(path.to_string());
                }
            }
            for (k, v) in n {
                let merged = match o.get(k) {
                    Some(ov) => merge_at(&join(k), ov, v, replaced, kept),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            kept.extend(out.keys().filter(|k| !n.contains_key(*k)).map(|k| join(k)));
            Value::Object(out)
        }
        _ => {
            if old != ours {
                replaced.push(path.to_string());
            }
            ours.clone()
        }
    }
}

/// `text` edited to read as `new`: in place, the user's quoting, layout
/// and comments kept outside what changes (`yaml_edit`); or, where that
/// cannot be done, rewritten whole.
fn edited(text: &str, new: &Value) -> Result<String> {
    match yaml_edit::edit(text, new) {
        Some(t) => Ok(t),
        None => to_yaml(new),
    }
}

/// The lines (1-based) of `old` with a comment of the user's (not the
/// summary block render writes) that `new` no longer has.
fn lost_comments(old: &str, new: &str) -> Vec<usize> {
    // Sets, not scans (review 41 r41b F2: 40,000 comment lines took
    // 140 s, quadratic).
    let ours: std::collections::HashSet<usize> = summary::block_lines(old).into_iter().collect();
    let lines: Vec<&str> = old.lines().collect();
    let kept: std::collections::HashSet<&str> = new.lines().collect();
    comment_lines(old)
        .into_iter()
        .filter(|l| !ours.contains(l))
        .filter(|l| !kept.contains(lines.get(l - 1).copied().unwrap_or_default()))
        .collect()
}

/// The lines (1-based) of `text` that hold a YAML comment: a `#` at the
/// start or after a blank, outside quotes and block scalars.
pub fn comment_lines(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    // The indentation of the line that opened a block scalar (`|`, `>`).
    let mut block: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let body = line.trim_start();
        let indent = line.len() - body.len();
        if let Some(b) = block {
            if body.is_empty() || indent > b {
                continue;
            }
            block = None;
        }
        let mut quote: Option<char> = None;
        let mut prev = ' ';
        let mut code_end = line.len();
        for (at, c) in line.char_indices() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if (c == '\'' || c == '"')
                    && (prev.is_whitespace() || "[{,".contains(prev)) =>
                {
                    quote = Some(c)
                }
                None if c == '#' && prev.is_whitespace() => {
                    out.push(i + 1);
                    code_end = at;
                    break;
                }
                None => {}
            }
            prev = c;
        }
        let code = line[..code_end].trim_end();
        let value = code
            .rsplit_once(": ")
            .map(|(_, v)| v)
            .or_else(|| code.trim_start().strip_prefix("- "))
            .unwrap_or(code.trim_start());
        let is_block = matches!(value.chars().next(), Some('|' | '>'))
            && value[1..]
                .chars()
                .all(|c| c == '-' || c == '+' || c.is_ascii_digit());
        if is_block {
            block = Some(indent);
        }
    }
    out
}

/// The manifest-like files of `dir` (`.yaml`, `.yml`, `.json`, and the
/// kustomization's names), sorted, each read and told whose it is.
fn scan(dir: &Path) -> Result<Vec<Found>> {
    let mut read = 0u64;
    let mut found = scan_in(dir, "", &mut read)?;
    // The cluster-wide directory, when it is one (a link there is refused
    // when written, never followed).
    let sub = dir.join(CLUSTER_WIDE_DIR);
    if std::fs::symlink_metadata(&sub).is_ok_and(|m| m.is_dir()) {
        found.extend(scan_in(&sub, &format!("{CLUSTER_WIDE_DIR}/"), &mut read)?);
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// The manifest-like files of `dir`, named `prefix` + file name, each
/// counted into `read` (bytes, of every file read so far) before it is
/// read.
fn scan_in(dir: &Path, prefix: &str, read: &mut u64) -> Result<Vec<Found>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let manifest = [".yaml", ".yml", ".json"].iter().any(|e| name.ends_with(e))
            || KUSTOMIZATION_NAMES.contains(&name.as_str());
        if !manifest || name.starts_with('.') {
            continue;
        }
        let name = format!("{prefix}{name}");
        let path = entry.path();
        let size = std::fs::symlink_metadata(&path).map_or(0, |m| m.len().min(MAX_MANIFEST));
        *read += size;
        if *read > MAX_SCAN_BYTES || found.len() >= MAX_SCAN_FILES {
            bail!(
                "{}: more than {MAX_SCAN_FILES} manifest files or {} MiB of them; render reads \
                 every manifest of the directory it writes into: give --output-dir a directory \
                 of the pool's own",
                dir.display(),
                MAX_SCAN_BYTES >> 20
            );
        }
        let read = read_manifest(&path);
        let (owner, marked) = match &read {
            Ok((_, obj)) => owner_of(&name, obj),
            Err(_) => (None, false),
        };
        found.push(Found {
            path,
            name,
            read,
            owner,
            marked,
        });
    }
    Ok(found)
}

fn read_manifest(path: &Path) -> std::result::Result<(String, Value), String> {
    // A link is never ours (render writes regular files), and is not
    // followed out of the directory.
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("cannot read it ({e})"))?;
    if meta.file_type().is_symlink() {
        return Err("a symlink, which render neither follows nor writes through".into());
    }
    if !meta.is_file() || meta.len() > MAX_MANIFEST {
        return Err("not a regular file of at most 16 MiB".into());
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it ({e})"))?;
    // As kubectl and kustomize read it, or refused: a key they read after a
    // U+2028 in a comment is no key to YAML 1.2.
    let obj = match crate::cli::yaml::kube_yaml_docs(&text) {
        Ok(docs) => {
            let mut docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
            if docs.len() > 1 {
                return Err(format!("{} YAML documents, not one", docs.len()));
            }
            docs.pop().unwrap_or_default()
        }
        Err(e) => return Err(format!("not one YAML document render can read ({e:#})")),
    };
    Ok((text, obj))
}

/// Whose render `obj` (in file `name`) is: its [`RENDERED_FOR`] mark, or,
/// unmarked (an earlier version's), the pool or role its name and object
/// say: `50-<x>-kubelet-labeler-{wrapper,labels}.yaml` holding the
/// MachineConfig of that name, `machineconfigpool-<x>.yaml` the
/// MachineConfigPool `<x>`. Returns (owner, marked).
fn owner_of(name: &str, obj: &Value) -> (Option<String>, bool) {
    let (sub, base) = match name.split_once('/') {
        Some((d, b)) => (Some(d), b),
        None => (None, name),
    };
    if sub.is_some_and(|d| d != CLUSTER_WIDE_DIR) {
        return (None, false);
    }
    // In the cluster-wide directory only a policy is ours.
    if let (None, Some(o)) = (sub, obj["metadata"]["annotations"][RENDERED_FOR].as_str()) {
        return (Some(o.to_string()), true);
    }
    let Some(stem) = base.strip_suffix(".yaml") else {
        return (None, false);
    };
    // The cluster-wide policy carries no mark (`machineconfig::with_policy`):
    // its file name is the mark.
    if let Some(owner) = stem.strip_prefix(POLICY_FILE_PREFIX) {
        let ours = obj["apiVersion"] == "operator.openshift.io/v1"
            && obj["kind"] == "MachineConfiguration"
            && obj["metadata"]["name"] == "cluster";
        return (ours.then(|| owner.to_string()), ours);
    }
    if sub.is_some() {
        return (None, false);
    }
    let (kind, object, owner) = if let Some(pool) = stem.strip_prefix("machineconfigpool-") {
        ("MachineConfigPool", pool, pool)
    } else if let Some(x) = stem.strip_prefix("50-").and_then(|s| {
        s.strip_suffix("-kubelet-labeler-wrapper")
            .or_else(|| s.strip_suffix("-kubelet-labeler-labels"))
    }) {
        ("MachineConfig", stem, x)
    } else {
        return (None, false);
    };
    let ours = obj["apiVersion"] == "machineconfiguration.openshift.io/v1"
        && obj["kind"] == kind
        && obj["metadata"]["name"] == object;
    (ours.then(|| owner.to_string()), false)
}

/// `--output-dir DIR` is a directory, or nothing yet (then it is made).
fn check_output_dir(dir: &Path) -> Result<()> {
    let not_dir = match std::fs::metadata(dir) {
        Ok(m) if m.is_file() => "is a file",
        Ok(m) if !m.is_dir() => "is not a directory",
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            "has a file where a directory should be"
        }
        _ => return Ok(()),
    };
    bail!(
        "--output-dir {} {not_dir}; give a directory (made when missing) for the manifests, or -o FILE for one YAML stream",
        dir.display()
    )
}

/// Who writes in the directory, for [`super::contained`]'s messages.
const WHO: &str = "render machineconfig --output-dir";

/// Where our file `name` goes in `dir`, never through a link
/// ([`super::contained::own_path`]).
fn own_path(dir: &Path, name: &str) -> Result<PathBuf> {
    super::contained::own_path(dir, name, WHO)
}

/// Every file staged; `dir` and the directories on the way to it made
/// by the gate ([`super::checked_dir`]), after the directory chain is
/// checked, and removed again (with the temp files) on a refusal.
fn stage_files(dir: &Path, texts: &[(&str, &str)]) -> Result<Vec<super::contained::StagedOwn>> {
    let mut staged = Vec::new();
    let mut made = super::checked_dir::MadeDirs::default();
    for (name, text) in texts {
        match super::contained::stage_own(dir, name, text.as_bytes(), 0o644, WHO, &mut made) {
            Ok(s) => staged.push(s),
            Err(e) => {
                drop(staged);
                made.remove_all();
                return Err(e);
            }
        }
    }
    Ok(staged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comments_are_found_outside_quotes_and_block_scalars() {
        let text = "# head\n\
                    a: 1 # trailing\n\
                    b: 'x # not' # yes\n\
                    c: \"#no\"\n\
                    d: a#b\n\
                    e: |\n  # inside a block\n  x\n\
                    f: >-\n  data:,%23\n\
                    - |-\n    # also inside\n\
                    g: 2\n  # indented comment\n";
        assert_eq!(comment_lines(text), [1, 2, 3, 14]);
        assert!(comment_lines("apiVersion: v1\nkind: X\n").is_empty());
    }

    #[test]
    fn an_earlier_renders_marks_go_where_this_render_writes_none() {
        let old = json!({
            "kind": "MachineConfiguration",
            "metadata": {"name": "cluster", "annotations": {
                "kubelet-labeler/rendered-for": "gpu", "kubelet-labeler/rendered-by": "kubelet-labeler 0.0.9"}},
            "spec": {}
        });
        let ours =
            json!({"kind": "MachineConfiguration", "metadata": {"name": "cluster"}, "spec": {}});
        let (merged, replaced, kept) = merge(&old, &ours);
        assert_eq!(merged, ours);
        assert_eq!(replaced, ["metadata.annotations"]);
        assert!(kept.is_empty(), "{kept:?}");

        let mut old = old;
        old["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] = json!("-1");
        let (merged, _, kept) = merge(&old, &ours);
        assert_eq!(
            merged["metadata"]["annotations"],
            json!({"argocd.argoproj.io/sync-wave": "-1"})
        );
        assert_eq!(kept, ["metadata.annotations"]);
    }

    #[test]
    fn merge_keeps_what_ours_does_not_write_and_replaces_below_spec() {
        let old = json!({
            "apiVersion": "v1", "kind": "MachineConfigPool",
            "metadata": {"name": "p", "annotations": {"sync": "-1", "kubelet-labeler/rendered-for": "p"}},
            "spec": {"paused": true, "nodeSelector": {"matchLabels": {"old": ""}}},
            "status": {"x": 1}
        });
        let ours = json!({
            "apiVersion": "v1", "kind": "MachineConfigPool",
            "metadata": {"name": "p", "annotations": {"kubelet-labeler/rendered-for": "p"}},
            "spec": {"nodeSelector": {"matchLabels": {"new": ""}}}
        });
        let (merged, replaced, kept) = merge(&old, &ours);
        assert_eq!(merged["spec"]["paused"], true);
        assert_eq!(
            merged["spec"]["nodeSelector"],
            json!({"matchLabels": {"new": ""}})
        );
        assert_eq!(merged["metadata"]["annotations"]["sync"], "-1");
        assert_eq!(merged["status"], json!({"x": 1}));
        assert_eq!(replaced, ["spec.nodeSelector"]);
        assert_eq!(kept, ["metadata.annotations.sync", "spec.paused", "status"]);
        let (same, replaced, _) = merge(&merged, &ours);
        assert_eq!(same, merged);
        assert!(replaced.is_empty());
    }

    #[test]
    fn kustomization_entries_are_added_and_removed_only_for_this_render() {
        let old = json!({
            "commonAnnotations": {"a": "b"},
            "resources": ["./mine.yaml", "50-p-kubelet-labeler-labels.yaml", "../base"]
        });
        let new = merge_kustomization(
            &old,
            &["50-p-kubelet-labeler-wrapper.yaml", "mine.yaml"],
            &["50-p-kubelet-labeler-labels.yaml"],
        )
        .unwrap();
        assert_eq!(
            new,
            json!({
                "commonAnnotations": {"a": "b"},
                "resources": ["./mine.yaml", "../base", "50-p-kubelet-labeler-wrapper.yaml"]
            })
        );
        assert!(merge_kustomization(&json!({"resources": "x"}), &[], &[]).is_err());
        assert!(merge_kustomization(&json!(["x"]), &[], &[]).is_err());
    }
}
