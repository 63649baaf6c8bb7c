//! Whether this CLI's preview is what the node's own wrapper will do: the
//! wrapper reads its release's node format (`contract::NODE_FORMAT`), and
//! `explain` previews with this CLI's. A tree whose wrapper, or any file of
//! ours, is of another node format is not previewed as if it were ours.

use std::path::{Path, PathBuf};

use crate::cli::render::arch::Arch;
use crate::cli::render::node_format;
use crate::node::contract::{GENERATOR_PATH, NODE_FORMAT, WRAPPER_PATH};
use crate::node::unit;

/// A wrapper is about 0.3 MiB; nothing we ship is near this.
const MAX_WRAPPER: u64 = 16 << 20;

/// The bytes of the regular file at node path `node` in `root`, if there
/// is one of at most `max` bytes (never a device or FIFO, never through a
/// link out of the tree).
fn regular(root: &Path, node: &Path, max: u64) -> Option<Vec<u8>> {
    let path = unit::search::contained(root, node).ok()?;
    crate::node::nodefs::read_regular(&path, max as usize).ok()?
}

/// Our files in the tree of another node format than this CLI's, with
/// theirs in words: the wrappers (one per architecture, and the single
/// wrapper of early releases), the generator and `dropins` (the unit's
/// drop-ins as systemd loads them).
fn foreign(paths: &unit::UnitPaths, dropins: &[PathBuf]) -> Vec<(String, String)> {
    let root = &paths.root;
    let mut files: Vec<(String, Option<Vec<u8>>)> = std::iter::once(WRAPPER_PATH.to_string())
        .chain(
            Arch::ALL
                .iter()
                .map(|a| format!("{WRAPPER_PATH}.{}", a.name())),
        )
        .chain([GENERATOR_PATH.to_string()])
        .map(|p| {
            let bytes = regular(root, Path::new(&p), MAX_WRAPPER);
            (p, bytes)
        })
        .collect();
    for d in dropins {
        files.push((d.display().to_string(), unit::read_node(paths, d).ok()));
    }
    files
        .into_iter()
        .filter_map(|(p, bytes)| {
            let format = node_format::of_file(&bytes?)?;
            (format.as_deref() != Some(NODE_FORMAT))
                .then(|| (p, node_format::describe(format.as_deref(), true)))
        })
        .collect()
}

/// The error `explain` reports when the tree's wrapper or files of ours
/// are of another node format: the preview would not be what the node
/// does.
pub fn preview_error(paths: &unit::UnitPaths, dropins: &[PathBuf]) -> Option<String> {
    let foreign = foreign(paths, dropins);
    if foreign.is_empty() {
        return None;
    }
    let listed: Vec<String> = foreign
        .iter()
        .map(|(p, format)| format!("{p} ({format})"))
        .collect();
    Some(format!(
        "this preview is not what that node will do: {} {} of another node format than this \
         CLI's (node format {NODE_FORMAT}), and the node's wrapper reads its own release's \
         drop-ins and rules; preview with the CLI of the node's release, or render the \
         node's files with this one and install them together (docs/upgrading.md)",
        listed.join(", "),
        if listed.len() == 1 { "is" } else { "are" },
    ))
}
