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
        for (i, f) in entries
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
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
        checked: Vec::new(),
        mode,
        appends: Vec::new(),
        overwrite: None,
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

/// Refuse a merged file without `contents.source` whose `overwrite` no
/// entry set to false: the MCO's merge sets it to true, and Ignition
/// refuses the pool's config then (`overwrite must be false if source is
/// unspecified`): the Machine Config Server serves it to no node.
pub(super) fn refuse_sourceless_files(nodes: &BTreeMap<String, MergedFile>) -> Result<()> {
    for (path, f) in nodes {
        if f.kind == Kind::File && f.source.is_none() && f.overwrite != Some(false) {
            bail!(
                "MachineConfig {:?}: storage file {path}: no MachineConfig of the pool gives it \
                 contents.source, and the MCO's merge sets its `overwrite` to true: Ignition \
                 refuses that (overwrite must be false if source is unspecified), so the \
                 Machine Config Server cannot serve the pool's config and no new node of it \
                 boots; give contents.source (data:, for an empty file)",
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::layout::Layout;

    const ENV: &str = "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf";
    const TAINTS: &str = "data:,Environment%3D%22T%3Dnvidia.com/gpu%3Dtrue%3ANoSchedule%22%0A";

    fn mc(name: &str, storage: Value) -> Value {
        json!({"kind": "MachineConfig", "metadata": {"name": name},
               "spec": {"config": {"storage": storage}}})
    }

    fn env_file(name: &str) -> Value {
        mc(
            name,
            json!({"files": [{"path": ENV, "contents": {"source": TAINTS}}]}),
        )
    }

    fn read(layout: &Layout, path: &str) -> Option<String> {
        let tree = tempfile::tempdir().unwrap();
        layout.write(tree.path()).unwrap();
        std::fs::read_to_string(tree.path().join(&path[1..])).ok()
    }

    /// Review 10 (r10b F3 addendum): a file no MachineConfig gives a
    /// source (`append` only, a mode only) gets `overwrite: true` from the
    /// MCO's merge, and its Machine Config Server refuses the pool's config
    /// then; a source from another MachineConfig, or `overwrite: false`,
    /// keeps it served.
    #[test]
    fn a_file_without_a_source_in_the_pool_is_refused() {
        let only = |name: &str, f: Value| mc(name, json!({"files": [f]}));
        for configs in [
            vec![only(
                "60-a",
                json!({"path": "/etc/a", "append": [{"source": "data:,x"}]}),
            )],
            vec![only("60-a", json!({"path": "/etc/a", "mode": 420}))],
            vec![
                only("60-a", json!({"path": "/etc/a", "overwrite": false})),
                only("70-b", json!({"path": "/etc/a", "overwrite": true})),
            ],
        ] {
            let e = format!("{:#}", Layout::merge(configs).unwrap_err());
            assert!(
                e.contains(
                    "storage file /etc/a: no MachineConfig of the pool gives it contents.source"
                ),
                "{e}"
            );
        }
        for configs in [
            vec![
                env_file("50-a"),
                only("60-b", json!({"path": ENV, "mode": 384})),
            ],
            vec![only("60-a", json!({"path": "/etc/a", "overwrite": false}))],
        ] {
            Layout::merge(configs).unwrap();
        }
    }

    /// Ignition's merge (`Storage.MergedKeys`: files, links and
    /// directories one list by path; a child entry in another list drops
    /// the parent's): a later link or directory at a file's path removes
    /// the file (it was kept: explain showed the env drop-in's taint where
    /// the MCO serves none), and a later file replaces a link.
    #[test]
    fn a_later_link_or_directory_replaces_a_file_and_a_file_a_link() {
        let link = mc(
            "99-link",
            json!({"links": [{"path": ENV, "target": "/dev/null", "overwrite": true}]}),
        );
        let layout = Layout::merge(vec![env_file("50-ours"), link.clone()]).unwrap();
        for e in [
            layout.file(ENV).unwrap_err(),
            layout
                .write(tempfile::tempdir().unwrap().path())
                .unwrap_err(),
        ] {
            assert_eq!(
                format!("{e:#}"),
                format!(
                    "MachineConfig \"99-link\": {ENV} is a link to /dev/null, which leads to no \
                     file of these MachineConfigs (a file of the host, /dev/null, a directory \
                     or nothing); explain cannot vouch for what the node reads through it: \
                     write the file itself at {ENV}, or leave the link out"
                )
            );
        }
        let dir = mc(
            "99-dir",
            json!({"directories": [{"path": ENV, "mode": 493}]}),
        );
        let layout = Layout::merge(vec![env_file("50-ours"), dir]).unwrap();
        assert_eq!(layout.file(ENV).unwrap(), None);
        let tree = tempfile::tempdir().unwrap();
        layout.write(tree.path()).unwrap();
        assert!(tree.path().join(&ENV[1..]).is_dir());
        // A later file replaces a link whole.
        let layout = Layout::merge(vec![link, env_file("99-z")]).unwrap();
        assert!(read(&layout, ENV).unwrap().contains("nvidia.com/gpu"));
    }

    /// A link to a file of the merged configs is what the node reads
    /// through it (systemd follows a linked drop-in): laid out as that
    /// file's contents, a relative target from the link's directory. It
    /// was left out: explain listed no such drop-in.
    #[test]
    fn a_link_to_a_file_of_the_configs_reads_as_that_file() {
        let extra = mc(
            "99-extra",
            json!({"files": [{"path": "/etc/kubernetes/gpu-tuning.conf",
                              "contents": {"source": "data:,%5BService%5D%0AT%3D%0A"}}],
                   "links": [{"path": "/etc/systemd/system/kubelet.service.d/95-gpu.conf",
                              "target": "/etc/kubernetes/gpu-tuning.conf"},
                             {"path": "/etc/systemd/system/kubelet.service.d/96-gpu.conf",
                              "target": "../../../kubernetes/gpu-tuning.conf"},
                             {"path": "/etc/systemd/system/multi-user.target.wants/x.service",
                              "target": "/usr/lib/systemd/system/x.service"}]}),
        );
        let layout = Layout::merge(vec![env_file("50-ours"), extra]).unwrap();
        for n in [95, 96] {
            let path = format!("/etc/systemd/system/kubelet.service.d/{n}-gpu.conf");
            assert_eq!(read(&layout, &path).unwrap(), "[Service]\nT=\n");
            let f = layout.file(&path).unwrap().unwrap();
            assert_eq!(f.contents, b"[Service]\nT=\n");
        }
        // A link explain reads nothing through (enabling a unit of the
        // OS) is not laid out, and no error.
        assert_eq!(
            read(
                &layout,
                "/etc/systemd/system/multi-user.target.wants/x.service"
            ),
            None
        );
    }

    /// Ignition's `FileEmbedded1.IgnoreDuplicates` covers `Append`: the
    /// lists are concatenated, none dropped (contents C, then [X], then
    /// [Y, X] is C X Y X). The second X was merged into the first: the
    /// file ended with Y's taint where the node's ends with X's none.
    #[test]
    fn appends_are_concatenated_with_their_repeats() {
        let append = |name: &str, sources: &[&str]| {
            let a: Vec<Value> = sources
                .iter()
                .map(|s| json!({"source": format!("data:,{s}%0A")}))
                .collect();
            mc(name, json!({"files": [{"path": ENV, "append": a}]}))
        };
        let layout = Layout::merge(vec![
            env_file("50-ours"),
            append("60-x", &["X"]),
            append("70-y", &["Y", "X"]),
        ])
        .unwrap();
        let f = layout.file(ENV).unwrap().unwrap();
        let text = String::from_utf8(f.contents).unwrap();
        assert!(text.ends_with("\"\nX\nY\nX\n"), "{text}");
    }

    /// Ignition's `Config.Validate` refuses a storage entry at the path of
    /// a unit or drop-in with contents (the MCS serves the pool nothing);
    /// the unit's drop-in won, silently.
    #[test]
    fn a_storage_entry_at_a_units_or_dropins_path_is_refused() {
        let dropin = json!({"systemd": {"units": [{"name": "kubelet.service",
            "dropins": [{"name": "90-kubelet-labeler-env.conf", "contents": "[Service]\n"}]}]}});
        let mut both = env_file("50-ours");
        both["spec"]["config"]["systemd"] = dropin["systemd"].clone();
        let later = json!({"kind": "MachineConfig", "metadata": {"name": "99-unit"},
                           "spec": {"config": dropin}});
        for configs in [vec![both.clone()], vec![env_file("50-ours"), later]] {
            let e = Layout::merge(configs).unwrap_err();
            assert!(
                format!("{e:#}").starts_with(&format!(
                    "MachineConfig \"50-ours\": storage file {ENV}: path conflicts with \
                     systemd unit or dropin"
                )),
                "{e:#}"
            );
        }
        let e = Layout::writes_of("50-ours", &both["spec"]["config"]).unwrap_err();
        assert!(format!("{e:#}").contains("path conflicts"), "{e:#}");
    }
}
