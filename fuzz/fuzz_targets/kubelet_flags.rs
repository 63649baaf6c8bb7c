//! kubelet's flag scanner, --node-labels/--register-with-taints parsers, the
//! label validator and the merge of additions into an argv. Input: NUL-
//! separated argv words; the first word is also parsed as a label and a
//! taint list.
#![no_main]
use std::ffi::OsString;
use std::io;
use std::path::Path;

use kubelet_labeler::node::kubelet::{self, Additions, Profile, flags, labels, taints};
use libfuzzer_sys::fuzz_target;

/// A node with no files: config reads fail as on a pre-join node.
struct NoFiles;
impl flags::NodeFs for NoFiles {
    fn read(&self, _: &Path, _: usize) -> io::Result<Vec<u8>> {
        Err(io::ErrorKind::NotFound.into())
    }
    fn list(&self, _: &Path, _: &mut u64) -> io::Result<Vec<(std::ffi::OsString, bool)>> {
        Err(io::ErrorKind::NotFound.into())
    }
    fn is_dir(&self, _: &Path) -> io::Result<bool> {
        Err(io::ErrorKind::NotFound.into())
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let words: Vec<String> = text.split('\0').map(str::to_string).collect();
    let first = &words[0];
    let parsed_labels = labels::parse_node_labels(first);
    let _ = labels::validate_labels(&parsed_labels, Profile::OpenShift);
    let _ = labels::label_key_errors(first);
    let _ = labels::label_value_errors(first);
    let parsed_taints = taints::parse_taints(first);
    let _ = flags::scan(&words);
    let argv: Vec<OsString> = std::iter::once("/usr/bin/kubelet".into())
        .chain(words.iter().skip(1).map(OsString::from))
        .collect();
    let additions = Additions {
        labels: parsed_labels,
        taints: parsed_taints.unwrap_or_default(),
    };
    if let Ok(plan) = kubelet::apply(&argv, &additions, Profile::Upstream, &NoFiles) {
        // What we add must survive kubelet's own reading of the result.
        let out: Vec<String> = plan
            .argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let _ = flags::scan(&out[1..]);
    }
});
