//! The taints kubelet registers with before our change: its last
//! `--register-with-taints`, else `registerWithTaints` from its `--config`
//! file and `--config-dir` drop-ins, read within one byte budget.

use std::io;
use std::path::Path;

use super::FlagScan;
use super::NodeFs;
use super::merge_error::{MergeError, config_unreadable, merge_err};
use crate::node::kubelet::Taint;
use crate::node::kubelet::config::{Merge, kubelet_taints, text};
use crate::node::kubelet::taints::parse_taints;
use crate::node::nodefs::MAX_CONFIG_BYTES;

/// The taints kubelet would register with before our change: the last
/// `--register-with-taints`, else `registerWithTaints` from `--config` and
/// the `--config-dir` drop-ins, merged as kubelet merges them.
pub(super) fn existing_taints(scan: &FlagScan, fs: &dyn NodeFs) -> Result<Vec<Taint>, MergeError> {
    if let Some(last) = scan.uses("register-with-taints").last() {
        let Some(value) = last.value.as_deref() else {
            return merge_err(
                "the command line ends with --register-with-taints and no value (kubelet refuses it)",
            );
        };
        return parse_taints(value)
            .or_else(|e| merge_err(format!("the existing --register-with-taints: {e}")));
    }
    // One budget for the --config file and every drop-in together, each
    // charged as it is read (MAX_CONFIG_BYTES).
    let left = std::cell::Cell::new(MAX_CONFIG_BYTES);
    let read = |file: &Path, missing_ok: bool| -> Result<Option<String>, MergeError> {
        let unreadable =
            |e| config_unreadable(format!("reading kubelet config {}: {e}", file.display()));
        match fs.read(file, left.get()) {
            Ok(bytes) => {
                let Some(rest) = left.get().checked_sub(bytes.len()) else {
                    return Err(unreadable(past_budget()));
                };
                left.set(rest);
                text(bytes).map(Some).map_err(|e| {
                    config_unreadable(format!("kubelet config {}: {e}", file.display()))
                })
            }
            // A missing --config (kubeadm before `join`): kubelet exits
            // without it ("failed to load kubelet config file"), so it
            // registers with no taint of the file; the first start after the
            // file appears merges with it.
            Err(e) if missing_ok && e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::FileTooLarge => Err(unreadable(past_budget())),
            Err(e) => Err(unreadable(e)),
        }
    };
    let config_name = scan.last_value("config").filter(|c| !c.is_empty());
    let config = match config_name {
        Some(c) => read(Path::new(c), true)?,
        None => None,
    };
    let dir = scan.last_value("config-dir").filter(|d| !d.is_empty());
    let mut files = Vec::new();
    if let Some(dir) = dir {
        super::config_dir::dropin_files(fs, Path::new(dir), &mut files)
            .map_err(config_unreadable)?;
    }
    let mut dropins = Vec::new();
    for file in &files {
        if let Some(text) = read(file, false)? {
            dropins.push(text);
        }
    }
    parse_texts(&Texts {
        config_name: scan.last_value("config").map(str::to_string),
        config,
        dir: dir.map(|_| (files, dropins)),
    })
}

/// What [`existing_taints`] read: `--config`'s name and text, and the
/// drop-ins' names and texts (None: no `--config-dir`).
struct Texts {
    config_name: Option<String>,
    config: Option<String>,
    dir: Option<(Vec<std::path::PathBuf>, Vec<String>)>,
}

fn parse_texts(texts: &Texts) -> Result<Vec<Taint>, MergeError> {
    let config_name = texts.config_name.as_deref().unwrap_or_default();
    let Some((files, dropins)) = &texts.dir else {
        return kubelet_taints(texts.config.as_deref(), None).map_err(|e| {
            config_unreadable(format!(
                "reading registerWithTaints from {config_name}: {e}"
            ))
        });
    };
    let named = |e| {
        let names: Vec<String> = texts
            .config_name
            .iter()
            .cloned()
            .chain(files.iter().map(|f| f.display().to_string()))
            .collect();
        config_unreadable(format!(
            "reading registerWithTaints from {}: {e}",
            names.join(", ")
        ))
    };
    let mut merge = Merge::new(texts.config.as_deref()).map_err(named)?;
    for text in dropins {
        merge.dropin(text).map_err(named)?;
    }
    merge.taints().map_err(named)
}

/// Why kubelet's config is not read past [`MAX_CONFIG_BYTES`].
pub(super) fn past_budget() -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        "past 1 MiB of kubelet config in all (--config and --config-dir drop-ins together), the most read at a start",
    )
}
