//! What the installed wrapper is configured with, read from a node tree:
//! the sync (on the node) and `explain` (on a copy of its disk) both ask.

use std::path::Path;

use crate::node::contract::{GENERATOR_PATH, WRAPPER_DROPIN_NAME};
use crate::node::kubelet::Profile;
use crate::node::unit::{self, UnitPaths};

/// The profile the installed wrapper validates with at boot: the
/// `--profile` of its drop-in (in the tree, or as our generator writes it);
/// None when neither is there.
pub fn wrapper_profile(root: &Path, unit_name: &str, unit_path: Option<&str>) -> Option<Profile> {
    let paths = match unit_path {
        Some(list) => UnitPaths::from_list(root, list),
        None => UnitPaths::system(root),
    };
    let files = unit::search::find(root, &paths.dirs, unit_name);
    let text = match files
        .dropins
        .iter()
        .find(|d| d.file_name().is_some_and(|n| n == WRAPPER_DROPIN_NAME))
    {
        Some(d) => unit::read_node(&paths, d).ok()?,
        // nodefs's reader: the one the wrapper binary (its sync) carries.
        None => crate::node::nodefs::read_up_to(
            crate::node::nodefs::open(
                &unit::search::contained(root, Path::new(GENERATOR_PATH)).ok()?,
            )
            .ok()?,
            64 * 1024,
        )
        .ok()?,
    };
    let text = String::from_utf8_lossy(&text);
    let exec = text
        .lines()
        .rfind(|l| l.starts_with("ExecStart=") && l.len() > 10)?;
    Some(
        if exec.contains("--profile openshift") || exec.contains("--profile=openshift") {
            Profile::OpenShift
        } else {
            Profile::Upstream
        },
    )
}
