//! The files of MachineConfigs, unpacked as `explain --machineconfig` lays
//! them out (`layout`): data URLs decoded, gzip unpacked, and only the files
//! explain reads, each to at most [`FILE_CAP`] and all to at most
//! [`TOTAL_CAP`], so a small MachineConfig of gzip'ed files takes neither
//! memory nor scratch disk linear in their count.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The most one file's contents may unpack to: what explain reads of a
/// file at most (`nodefs::READ_LIMIT`).
pub const FILE_CAP: u64 = crate::node::nodefs::READ_LIMIT as u64;

/// The most the files laid out may unpack to in all. A pool's rendered
/// config unpacks to a few MiB (our wrappers, 0.3 MiB each, are most of it);
/// without a cap a small MachineConfig of gzip'ed files takes memory and
/// scratch disk linear in their count.
pub const TOTAL_CAP: u64 = 64 << 20;

/// What one run of a command that reads MachineConfigs it was given
/// (`plan`, `iso fleet`, `explain --machineconfig`, `render` over a gitops
/// directory) may unpack in all, every file of every pool and check
/// counted each time it is unpacked: four times what one layout may. A
/// pool's layout takes a few MiB (our wrappers); many small gzip'ed files,
/// each under [`FILE_CAP`], read for many pools, would otherwise take memory
/// and time linear in their product.
pub const RUN_BUDGET: u64 = 4 * TOTAL_CAP;

/// A run's budget as it stands: what is left of it, all of it, and what
/// its refusal tells the user to do.
#[derive(Clone, Copy)]
struct Run {
    left: u64,
    all: u64,
    fix: &'static str,
}

thread_local! {
    /// The budget of the run on this thread, when it set one
    /// ([`with_run_budget`]): every data URL unpacked draws from it.
    static RUN: std::cell::Cell<Option<Run>> = const { std::cell::Cell::new(None) };
}

/// Run `f` with one budget of unpacked bytes (`bytes`) for every file
/// contents it unpacks, in every layout and check (each still at most
/// [`FILE_CAP`] a file and [`TOTAL_CAP`] a layout): past it the data URL
/// being unpacked is refused ([`RunSpent`]), naming `fix`. Within another
/// run's budget, what is left of that one bounds this one, and what this
/// one spends is spent for it.
pub fn with_run_budget<T>(bytes: u64, fix: &'static str, f: impl FnOnce() -> T) -> T {
    let outer = RUN.get();
    let all = outer.map_or(bytes, |o| o.left.min(bytes));
    RUN.set(Some(Run {
        left: all,
        all,
        fix,
    }));
    let out = f();
    let spent = RUN.get().map_or(0, |r| all - r.left);
    RUN.set(outer.map(|o| Run {
        left: o.left - spent,
        ..o
    }));
    out
}

/// Contents that would unpack past what is left of the run's budget.
#[derive(Debug)]
pub struct RunSpent {
    all: u64,
    fix: &'static str,
}

impl std::fmt::Display for RunSpent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "with it, the file contents this command unpacks (every gzip'ed or encoded file it \
             reads, for every pool and check) come to more than the run's budget of {} MiB; {}",
            self.all >> 20,
            self.fix
        )
    }
}

impl std::error::Error for RunSpent {}

/// A file as merged: its contents still encoded, unpacked only when read
/// (`Layout::write`, `Layout::file`).
#[derive(Debug, Clone)]
pub(super) struct MergedFile {
    pub source: Option<String>,
    pub compression: Option<String>,
    /// The compressions `source` was checked with (see [`MergedFile::merge`]).
    pub checked: Vec<Option<String>>,
    pub mode: u32,
    /// Its `append` entries (source, compression), in merge order: Ignition
    /// writes each after the contents.
    pub appends: Vec<(String, Option<String>)>,
    /// `overwrite` as the last entry that set it set it.
    pub overwrite: Option<bool>,
    /// The MachineConfig that wrote it last, for messages.
    pub machineconfig: String,
    /// What Ignition writes at the path: files, links and directories
    /// are one list keyed by path in Ignition's merge.
    pub kind: Kind,
}

/// The kind of a storage entry: a later entry of another kind at a path
/// replaces the earlier one whole (Ignition's `Storage.MergedKeys`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    /// A link's `target` (unset until some entry sets it) and `hard`.
    Link {
        target: Option<String>,
        hard: bool,
    },
    Directory,
}

impl MergedFile {
    /// The file entry `f` (at `path`, of MachineConfig `name`) merged over
    /// `was`, the same path's entry before it, as the MCO merges them
    /// (Ignition's merge): field by field, what `f` leaves unset kept (a
    /// `mode` alone keeps the contents; a `compression` left unset keeps an
    /// earlier gzip), its `append` entries after the others, every one
    /// kept (Ignition's `FileEmbedded1.IgnoreDuplicates` covers `Append`:
    /// `[X]` then `[Y, X]` is `[X, Y, X]`). Data URLs are checked now (one
    /// Ignition cannot fetch fails the boot), unpacked only if explain
    /// reads the file.
    pub fn merge(
        mut was: Option<MergedFile>,
        f: &Value,
        path: &str,
        name: &str,
    ) -> Result<MergedFile> {
        // What the earlier entry set is moved on, not copied: many entries
        // at one path each cost what they set, not the contents again.
        let new_source = f.pointer("/contents/source").and_then(Value::as_str);
        let overwrite = f
            .get("overwrite")
            .and_then(Value::as_bool)
            .or_else(|| was.as_ref().and_then(|w| w.overwrite));
        let new_compression = match f.pointer("/contents/compression") {
            Some(Value::String(c)) => Some(c.clone()),
            _ => None,
        };
        let source = match new_source {
            Some(s) => Some(s.to_string()),
            None => was.as_mut().and_then(|w| w.source.take()),
        };
        let compression = match new_compression {
            Some(c) => Some(c),
            None => was.as_mut().and_then(|w| w.compression.take()),
        };
        // Checked once for each compression it is read with (one Ignition
        // cannot fetch fails the boot).
        let mut checked = match (new_source, was.as_mut()) {
            (None, Some(w)) => std::mem::take(&mut w.checked),
            _ => Vec::new(),
        };
        if let Some(s) = &source
            && !checked.contains(&compression)
        {
            data_url_bytes(s, compression.as_deref()).with_context(|| path.to_string())?;
            checked.push(compression.clone());
        }
        let mode = match f.get("mode") {
            None | Some(Value::Null) => was.as_ref().map_or(0o644, |w| w.mode),
            Some(m) => match m.as_u64().filter(|m| *m <= 0o7777) {
                Some(m) => m as u32,
                // Ignition refuses the config (and the MCO the
                // MachineConfig): nothing of it is served.
                None => bail!(
                    "{path}: mode {m} is not a file mode Ignition reads (an integer, 0 to 4095: \
                     420 or 0644 for rw-r--r--)"
                ),
            },
        };
        let mut appends = was.map(|w| w.appends).unwrap_or_default();
        let added = f.get("append").and_then(Value::as_array);
        for (j, a) in added.into_iter().flatten().enumerate() {
            let Some(s) = a.get("source").and_then(Value::as_str) else {
                continue;
            };
            let c = a.get("compression").and_then(Value::as_str);
            data_url_bytes(s, c).with_context(|| format!("{path}: append[{j}]"))?;
            appends.push((s.to_string(), c.map(str::to_string)));
        }
        Ok(MergedFile {
            source,
            compression,
            checked,
            mode,
            appends,
            overwrite,
            machineconfig: name.to_string(),
            kind: Kind::File,
        })
    }
}

/// Decode an Ignition `contents.source` data URL (RFC 2397), its contents
/// unpacked to at most [`FILE_CAP`].
pub fn decode_data_url(source: &str, compression: Option<&str>) -> Result<Vec<u8>> {
    decode_capped(source, compression, FILE_CAP)
}

/// The data URL's bytes before any decompression, read as Ignition reads
/// it ([`super::dataurl`]); the compression named is checked too.
pub(super) fn data_url_bytes(source: &str, compression: Option<&str>) -> Result<Vec<u8>> {
    if !source.starts_with("data:") {
        bail!("only data: URLs can be laid out offline, not {source:.60}");
    }
    if let Some(other) = compression.filter(|c| !["", "gzip"].contains(c)) {
        bail!("unknown compression {other:?}");
    }
    super::dataurl::decode(source).map_err(|why| {
        let shown: String = source.chars().take(60).collect();
        let more = if shown.len() < source.len() {
            "…"
        } else {
            ""
        };
        anyhow::anyhow!(
            "data URL {shown:?}{more}: {why}; Ignition (RFC 2397) refuses it, and the MCO renders \
             no config for the pool with it: write it as render does, data:,<%-encoded text> or \
             data:;base64,<base64>"
        )
    })
}

/// [`decode_data_url`] unpacking at most `cap` bytes: a small forged gzip
/// must not unpack into memory without end. What it unpacks is drawn from
/// the run's budget, when one is set ([`with_run_budget`]): past it,
/// [`RunSpent`].
fn decode_capped(source: &str, compression: Option<&str>, cap: u64) -> Result<Vec<u8>> {
    let raw = data_url_bytes(source, compression)?;
    let run = RUN.get();
    let limit = cap.min(run.map_or(u64::MAX, |r| r.left));
    let out = match compression.unwrap_or("") {
        "gzip" => {
            let mut out = Vec::new();
            std::io::Read::read_to_end(
                &mut std::io::Read::take(
                    flate2::read::MultiGzDecoder::new(raw.as_slice()),
                    limit.saturating_add(1),
                ),
                &mut out,
            )
            .context("decompressing gzip contents")?;
            out
        }
        _ => raw,
    };
    if out.len() as u64 > limit {
        return Err(match run {
            Some(r) if r.left < cap => RunSpent {
                all: r.all,
                fix: r.fix,
            }
            .into(),
            _ => TooBig(cap).into(),
        });
    }
    if let Some(r) = run {
        RUN.set(Some(Run {
            left: r.left - out.len() as u64,
            ..r
        }));
    }
    Ok(out)
}

/// Contents that unpack to more than the cap given.
#[derive(Debug)]
struct TooBig(u64);

impl std::fmt::Display for TooBig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "its contents unpack to more than {} MiB (explain lays out at most {} MiB of a \
             file, as much as it reads of one, and {} MiB in all)",
            self.0 >> 20,
            FILE_CAP >> 20,
            TOTAL_CAP >> 20
        )
    }
}

impl std::error::Error for TooBig {}

/// `f`, the file at `path`, unpacked to at most `cap` bytes; an error names
/// its MachineConfig and the path ([`TooBig`] the cap).
/// Its contents and then each `append` entry, as Ignition writes the file
/// (the cap is on them all).
pub(super) fn unpack(path: &str, f: &MergedFile, cap: u64) -> Result<Vec<u8>> {
    let context = || format!("MachineConfig {:?}: {path}", f.machineconfig);
    let mut out = match &f.source {
        Some(source) => {
            decode_capped(source, f.compression.as_deref(), cap).with_context(context)?
        }
        None => Vec::new(),
    };
    for (source, compression) in &f.appends {
        let left = cap - out.len() as u64;
        let more = decode_capped(source, compression.as_deref(), left)
            .map_err(|e| match e.downcast::<TooBig>() {
                Ok(_) => TooBig(cap).into(),
                Err(e) => e,
            })
            .with_context(context)?;
        out.extend(more);
    }
    Ok(out)
}

/// Whether explain reads the file at `path` whatever names it: units and
/// drop-ins (the unit search path, the generators' directory), kubelet's
/// files under /etc/kubernetes, ours, and the OS release.
fn read_by_explain(path: &str) -> bool {
    const ALSO: [&str; 6] = [
        "/etc/systemd/",
        "/etc/kubernetes/",
        "/etc/kubelet-labeler/",
        "/etc/os-release",
        "/usr/lib/os-release",
        "/var/lib/dpkg/status",
    ];
    crate::node::unit::search::SYSTEM_UNIT_PATH
        .iter()
        .any(|d| path.strip_prefix(d).is_some_and(|r| r.starts_with('/')))
        || ALSO.iter().any(|p| path.starts_with(p))
        || path.starts_with(crate::node::contract::WRAPPER_PATH)
}

/// The absolute paths `text` names, each as a prefix of the files it may
/// mean: a word starting with `/` (`-/etc/x.env`, `--config=/etc/k.yaml`,
/// `"/usr/bin/x"`), cut where a variable, a specifier or a glob starts
/// (`/etc/k/*.conf`: every file under /etc/k/). A prefix of fewer than two
/// directories (`/`, `/etc`) names too much to be a file kubelet's start
/// reads, and is left out.
fn named_prefixes(text: &[u8]) -> Vec<&str> {
    let starts_word = |b: u8| !(b.is_ascii_alphanumeric() || b"._/~".contains(&b));
    let ends_word = |b: u8| b.is_ascii_whitespace() || b"\"'`,;()<>|&\\=:$%*?[{".contains(&b);
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i] != b'/' || (i > 0 && !starts_word(text[i - 1])) {
            i += 1;
            continue;
        }
        let end = text[i..]
            .iter()
            .position(|b| ends_word(*b))
            .map_or(text.len(), |n| i + n);
        if let Ok(word) = std::str::from_utf8(&text[i..end])
            && word.trim_end_matches('/').matches('/').count() >= 2
        {
            out.push(word);
        }
        i = end.max(i + 1);
    }
    out
}

/// The contents of the files explain reads, unpacked: those where it
/// reads whatever names them ([`read_by_explain`]), and every file a
/// unit or drop-in (`texts`) or a file unpacked here names ([`named_prefixes`]:
/// an `EnvironmentFile=`, kubelet's `--config`, a program), until none
/// is left. A file over [`FILE_CAP`], or past [`TOTAL_CAP`] in all, is
/// refused naming its MachineConfig and path; the rest stay packed.
///
/// A link is read as the file of `files` it leads to ([`resolve`]); one
/// that leads elsewhere is an error when `strict` (explain cannot vouch
/// for what the node reads through it), else left out; a link to
/// /dev/null in place of a unit is a mask, laid out as one.
pub(super) fn unpack_read<'a>(
    files: &'a BTreeMap<String, MergedFile>,
    texts: impl Iterator<Item = &'a str>,
    strict: bool,
) -> Result<BTreeMap<&'a str, Vec<u8>>> {
    let mut todo: Vec<&str> = files
        .iter()
        .filter(|(p, f)| read_by_explain(p) && !(is_link(f) && in_a_dependency_dir(p)))
        .map(|(p, _)| p.as_str())
        .collect();
    // Each prefix walked once, none inside one walked already (`seen` holds
    // no prefix of another), each path queued once: a text naming one
    // directory of many files many times is linear, not their product.
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queued: BTreeSet<&str> = todo.iter().copied().collect();
    let mut name = |text: &[u8], todo: &mut Vec<&'a str>| {
        use std::ops::Bound;
        for prefix in named_prefixes(text) {
            let covered = seen
                .range::<str, _>((Bound::Unbounded, Bound::Included(prefix)))
                .next_back()
                .is_some_and(|q| prefix.starts_with(q.as_str()));
            if covered {
                continue;
            }
            let inside: Vec<String> = seen
                .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
                .take_while(|q| q.starts_with(prefix))
                .cloned()
                .collect();
            for q in inside {
                seen.remove(&q);
            }
            seen.insert(prefix.to_string());
            for (p, _) in files
                .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
                .take_while(|(p, _)| p.starts_with(prefix))
            {
                if queued.insert(p.as_str()) {
                    todo.push(p.as_str());
                }
            }
        }
    };
    for text in texts {
        name(text.as_bytes(), &mut todo);
    }
    let mut unpacked = BTreeMap::new();
    let mut total = 0u64;
    while let Some(path) = todo.pop() {
        if unpacked.contains_key(path) {
            continue;
        }
        let (real, f) = match &files[path].kind {
            Kind::Directory => continue,
            Kind::File => (path, &files[path]),
            Kind::Link { target, .. } if masks_a_unit(path, target.as_deref()) => continue,
            Kind::Link { .. } => match resolve(files, path) {
                Ok(real) => (real, &files[real]),
                Err(e) if strict => return Err(e),
                Err(_) => continue,
            },
        };
        let left = TOTAL_CAP - total;
        let contents = match unpack(real, f, FILE_CAP.min(left)) {
            Err(e) if left < FILE_CAP && e.downcast_ref::<TooBig>().is_some() => bail!(
                "MachineConfig {:?}: {path}: with it the files explain reads unpack to more \
                 than {} MiB in all (the most explain lays out); give the MachineConfigs of \
                 one pool only",
                f.machineconfig,
                TOTAL_CAP >> 20,
            ),
            other => other?,
        };
        total += contents.len() as u64;
        // A program's bytes name no file the node reads for kubelet.
        if !contents.starts_with(b"\x7fELF") {
            name(&contents, &mut todo);
        }
        unpacked.insert(path, contents);
    }
    Ok(unpacked)
}

fn is_link(f: &MergedFile) -> bool {
    matches!(f.kind, Kind::Link { .. })
}

/// Whether `path` is in a unit's `.wants`/`.requires`/`.upholds`
/// directory: links there enable units, and explain reads no file
/// through them.
fn in_a_dependency_dir(path: &str) -> bool {
    path.split('/').any(|c| {
        [".wants", ".requires", ".upholds"]
            .iter()
            .any(|e| c.ends_with(e))
    })
}

/// Whether a link at `path` to `target` masks a unit: in place of a unit
/// in /etc/systemd/system, to /dev/null (as Ignition writes `mask: true`).
pub(super) fn masks_a_unit(path: &str, target: Option<&str>) -> bool {
    target == Some("/dev/null")
        && path
            .strip_prefix("/etc/systemd/system/")
            .is_some_and(|n| !n.contains('/') && !n.ends_with(".d"))
}

/// The path of the file of `nodes` that reading `path` reads: `path`
/// itself, or where its links lead (a target absolute or relative to the
/// link's directory, at most 40 links as the kernel follows). A link that
/// leads to no file of these MachineConfigs (a file of the host, /dev/null,
/// a directory, nothing) is an error naming its MachineConfig and path:
/// what the node reads through it is not in them.
pub(super) fn resolve<'a>(nodes: &'a BTreeMap<String, MergedFile>, path: &str) -> Result<&'a str> {
    let first = nodes.get(path).context("no such path")?;
    let mut at = nodes
        .get_key_value(path)
        .map(|(k, _)| k.as_str())
        .unwrap_or_default();
    let mut hops = 0;
    loop {
        let here = &nodes[at];
        let target = match &here.kind {
            Kind::File => return Ok(at),
            Kind::Link {
                target: Some(t), ..
            } if hops < 40 => t,
            Kind::Link { target: None, .. } => bail!(
                "MachineConfig {:?}: {at} is a link without a target; Ignition refuses it: \
                 give its target",
                here.machineconfig
            ),
            _ => break,
        };
        let parent = at.rsplit_once('/').map_or("", |(d, _)| d);
        let next = match target.starts_with('/') {
            true => clean_path(target),
            false => clean_path(&format!("{parent}/{target}")),
        };
        match nodes.get_key_value(next.as_str()) {
            Some((k, _)) => at = k.as_str(),
            None => break,
        }
        hops += 1;
    }
    let target = match &first.kind {
        Kind::Link {
            target: Some(t), ..
        } => t.as_str(),
        _ => at,
    };
    bail!(
        "MachineConfig {:?}: {path} is a link to {target}, which leads to no file of these \
         MachineConfigs (a file of the host, /dev/null, a directory or nothing); explain \
         cannot vouch for what the node reads through it: write the file itself at {path}, \
         or leave the link out",
        first.machineconfig
    )
}

/// The file the merged `nodes` write at `path` (through links, see
/// [`resolve`]) unpacked to at most [`FILE_CAP`], with its mode; none for
/// a directory or nothing.
pub(super) fn read_node(
    nodes: &BTreeMap<String, MergedFile>,
    path: &str,
) -> Result<Option<(Vec<u8>, u32)>> {
    let real = match nodes.get(path).map(|f| &f.kind) {
        None | Some(Kind::Directory) => return Ok(None),
        Some(Kind::File) => path,
        Some(Kind::Link { .. }) => resolve(nodes, path)?,
    };
    let f = &nodes[real];
    Ok(Some((unpack(real, f, FILE_CAP)?, f.mode)))
}

/// Go's `path.Clean` for an absolute path (a relative one is taken from
/// `/`): `..` stops at the root.
pub(super) fn clean_path(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for name in path.split('/') {
        match name {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            n => out.push(n),
        }
    }
    format!("/{}", out.join("/"))
}

/// The deepest path, in directories, and the most directories a layout
/// makes: real configs are under 20 deep and a few hundred directories;
/// each directory is an inode and a block of scratch disk (review 43 r43b
/// F2: a 772 KB MachineConfig of 1,900-deep paths made 380,000 of them,
/// 1.6 GB).
pub const LAYOUT_DEPTH_MAX: usize = 64;
pub const LAYOUT_DIRS_MAX: usize = 10_000;
/// The most files a layout makes (review 46 r46b F2: three MachineConfigs
/// of 30,000 empty files each, 5 MB, made `explain` create 90,000 files
/// in 41 s); a real config writes a few hundred.
pub const LAYOUT_FILES_MAX: usize = 50_000;

/// Refuse, before anything is made, paths (a layout's node paths, a git
/// checkout's names) deeper than [`LAYOUT_DEPTH_MAX`], more than
/// [`LAYOUT_DIRS_MAX`] directories in all, or more than
/// [`LAYOUT_FILES_MAX`] paths.
/// Ok: the directories they make.
pub fn check_tree_shape<'a>(paths: impl Iterator<Item = &'a str>) -> Result<usize> {
    let mut dirs: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (n, path) in paths.enumerate() {
        if n == LAYOUT_FILES_MAX {
            bail!(
                "{:.200}: one file more than the {LAYOUT_FILES_MAX} that are laid out on disk \
                 to read these files (a real config's are a few hundred): write fewer files",
                path
            );
        }
        let ends: Vec<usize> = path
            .match_indices('/')
            .map(|(i, _)| i)
            .filter(|&i| i > 0)
            .collect();
        if ends.len() > LAYOUT_DEPTH_MAX {
            bail!(
                "{:.200}...: a path {} directories deep, past the {LAYOUT_DEPTH_MAX} that are \
                 laid out on disk to read it (a real config's or repository's paths are under \
                 20): shorten it",
                path,
                ends.len()
            );
        }
        for end in ends {
            if dirs.insert(&path[..end]) && dirs.len() > LAYOUT_DIRS_MAX {
                bail!(
                    "{:.200}: one directory more than the {LAYOUT_DIRS_MAX} that are laid \
                     out on disk to read these files (a real config's or repository's are a few \
                     hundred): put the files in fewer directories",
                    path
                );
            }
        }
    }
    Ok(dirs.len())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Go's gzip reader (Ignition's, the MCO daemon's) reads every member
    /// of a stream: a second member's line is in the file on the node.
    #[test]
    fn every_gzip_member_is_read() {
        use base64::Engine;
        use std::io::Write;
        let member = |text: &str| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(text.as_bytes()).unwrap();
            e.finish().unwrap()
        };
        let mut both = member("T=taint\n");
        both.extend(member("T=\n"));
        let url = format!(
            "data:;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&both)
        );
        let out = decode_data_url(&url, Some("gzip")).unwrap();
        assert_eq!(out, b"T=taint\nT=\n");
    }

    /// A drop-in naming one directory of many files many times (30,000 of
    /// each: 900 million queued paths before, about 1 GB at 8,000), and
    /// many entries at the path of one large file (each decoded and copied
    /// it again): each file queued once, each source checked once per
    /// compression. Linear: well under a second here.
    #[test]
    fn many_names_and_many_entries_stay_linear() {
        let n = 30_000;
        let mut files = BTreeMap::new();
        for i in 0..n {
            let path = format!("/etc/ab/f{i}");
            let f = serde_json::json!({"contents": {"source": "data:,x"}});
            files.insert(
                path.clone(),
                MergedFile::merge(None, &f, &path, "mc").unwrap(),
            );
        }
        let text = format!("[Service]\nEnvironment=X={}\n", "/etc/ab/ ".repeat(n));
        let read = unpack_read(&files, std::iter::once(text.as_str()), true).unwrap();
        assert_eq!(read.len(), n);

        let big = format!("data:;base64,{}", "QUFB".repeat(1 << 18));
        let mut was = None;
        for i in 0..5_000 {
            let f = match i {
                0 => serde_json::json!({"contents": {"source": big}}),
                i if i % 2 == 0 => serde_json::json!({"mode": 420}),
                _ => serde_json::json!({"mode": 420, "contents": {"compression": ""}}),
            };
            was = Some(MergedFile::merge(was.take(), &f, "/etc/big", "mc").unwrap());
        }
        let was = was.unwrap();
        assert_eq!(was.checked, [None, Some(String::new())]);
        assert_eq!(was.source.as_deref(), Some(big.as_str()));
    }

    /// A mode Ignition cannot read (a string, a negative or too large a
    /// number) is refused, never passed over as if absent: the MCO serves
    /// none of that MachineConfig.
    #[test]
    fn a_mode_ignition_cannot_read_is_refused() {
        for mode in [
            serde_json::json!("0644"),
            serde_json::json!(-1),
            serde_json::json!(4096),
            serde_json::json!(420.5),
        ] {
            let f = serde_json::json!({"mode": mode, "contents": {"source": "data:,x"}});
            let e = MergedFile::merge(None, &f, "/etc/x", "mc").unwrap_err();
            assert!(
                format!("{e:#}").contains("is not a file mode Ignition reads"),
                "{e:#}"
            );
        }
        let f = serde_json::json!({"mode": 420});
        assert_eq!(
            MergedFile::merge(None, &f, "/etc/x", "mc").unwrap().mode,
            0o644
        );
    }

    /// `n` MiB of zeros, gzip'ed, as a data URL.
    pub(in crate::cli::render) fn gzip_zeros(n: usize) -> String {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..n {
            std::io::Write::write_all(&mut gz, &zeros).unwrap();
        }
        let bomb = gz.finish().unwrap();
        format!(
            "data:;base64,{}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bomb)
        )
    }

    #[test]
    fn gzip_contents_unpack_only_so_far() {
        let e = decode_data_url(&gzip_zeros(17), Some("gzip")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "its contents unpack to more than 16 MiB (explain lays out at most 16 MiB of a file, \
             as much as it reads of one, and 64 MiB in all)"
        );
        assert_eq!(
            decode_data_url(&gzip_zeros(16), Some("gzip"))
                .unwrap()
                .len(),
            16 << 20
        );
    }

    /// Every data URL unpacked in a run draws from its budget, whatever
    /// reads it (a layout, or one file read by a check): past it, the
    /// refusal names the fix; a run within another spends the outer's.
    #[test]
    fn every_unpack_draws_from_the_run_budget() {
        let url = gzip_zeros(1);
        let e = with_run_budget(3 << 20, "give fewer", || {
            for _ in 0..3 {
                decode_data_url(&url, Some("gzip")).unwrap();
            }
            decode_data_url(&url, Some("gzip")).unwrap_err()
        });
        assert_eq!(
            e.to_string(),
            "with it, the file contents this command unpacks (every gzip'ed or encoded file it \
             reads, for every pool and check) come to more than the run's budget of 3 MiB; give \
             fewer"
        );
        with_run_budget(3 << 20, "outer", || {
            with_run_budget(8 << 20, "inner", || {
                decode_data_url(&url, Some("gzip")).unwrap();
                decode_data_url(&url, Some("gzip")).unwrap();
            });
            let e = decode_data_url(&url, Some("gzip")).unwrap();
            assert_eq!(e.len(), 1 << 20);
            let e = decode_data_url(&url, Some("gzip")).unwrap_err();
            assert!(e.to_string().ends_with("budget of 3 MiB; outer"), "{e}");
        });
        assert_eq!(decode_data_url(&url, Some("gzip")).unwrap().len(), 1 << 20);
    }

    #[test]
    fn paths_a_text_names() {
        let text = b"EnvironmentFile=-/etc/kubernetes/kubelet-env\n\
                     ExecStart=/usr/bin/kubelet --config=/etc/kubernetes/kubelet.conf \\\n\
                     --x=\"/etc/a/b\" ${X}/etc/no /etc/k/*.conf /etc/v/${V} a/b/c /etc / /e/\n\
                     PATH=/usr/local/bin:/usr/bin /opt/%i/x";
        assert_eq!(
            named_prefixes(text),
            [
                "/etc/kubernetes/kubelet-env",
                "/usr/bin/kubelet",
                "/etc/kubernetes/kubelet.conf",
                "/etc/a/b",
                "/etc/no",
                "/etc/k/",
                "/etc/v/",
                "/usr/local/bin",
                "/usr/bin",
            ]
        );
    }

    /// Review 43 r43b F2: a path past the depth, or a directory past the
    /// count, is refused before anything is made.
    #[test]
    fn deep_or_many_directories_are_refused() {
        let deep = format!("{}/f", "/a".repeat(LAYOUT_DEPTH_MAX + 1));
        let e = check_tree_shape([deep.as_str()].into_iter()).unwrap_err();
        assert!(e.to_string().contains("65 directories deep"), "{e}");
        let fits = format!("{}/f", "/a".repeat(LAYOUT_DEPTH_MAX));
        assert!(check_tree_shape([fits.as_str()].into_iter()).is_ok());
        let many: Vec<String> = (0..LAYOUT_DIRS_MAX)
            .map(|i| format!("/etc/{i}/f"))
            .collect();
        let e = check_tree_shape(many.iter().map(String::as_str)).unwrap_err();
        assert!(e.to_string().contains("one directory more"), "{e}");
        let some: Vec<String> = (0..LAYOUT_DIRS_MAX - 1)
            .map(|i| format!("/etc/{i}/f"))
            .collect();
        assert!(check_tree_shape(some.iter().map(String::as_str)).is_ok());
        // Relative paths (a git listing) count alike.
        assert!(check_tree_shape(["a/b/c.yaml", "a/d.yaml"].into_iter()).is_ok());
        // Review 46 r46b F2: files in one directory count too.
        let files: Vec<String> = (0..=LAYOUT_FILES_MAX)
            .map(|i| format!("/etc/x/{i}"))
            .collect();
        let e = check_tree_shape(files.iter().map(String::as_str)).unwrap_err();
        assert!(
            e.to_string().contains("one file more than the 50000"),
            "{e}"
        );
        assert!(check_tree_shape(files[1..].iter().map(String::as_str)).is_ok());
    }
}
