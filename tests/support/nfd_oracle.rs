//! NFD's own NodeFeatureRule evaluator (../shared/oracles/nfd): built once
//! per test binary with a current Go, fed many inputs through one process.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

pub fn oracle_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/oracles/nfd")
}

/// Build the oracle into `out_dir` (under target/: ../shared is read-only
/// in CI). None (a CI failure, else a recorded skip) when ../shared or a
/// current Go is missing.
pub fn build(out_dir: &Path) -> Option<PathBuf> {
    let dir = oracle_dir();
    if !dir.join("build.sh").is_file() {
        let why = format!("{} is absent (NFD's evaluator)", dir.display());
        assert!(std::env::var_os("CI").is_none(), "{why}");
        super::skipped::skipped(&why);
        return None;
    }
    let go = super::current_go::find()?;
    let bin = out_dir.join("nfd-oracle");
    let res = Command::new("bash")
        .arg(dir.join("build.sh"))
        .arg(&bin)
        .env("GO", &go)
        .output()
        .expect("running the NFD oracle's build.sh");
    assert!(
        res.status.success(),
        "building NFD's evaluator failed: {}{}",
        String::from_utf8_lossy(&res.stdout),
        String::from_utf8_lossy(&res.stderr)
    );
    Some(bin)
}

/// One oracle process answering `inputs` in order (one JSON line each).
pub fn run(bin: &Path, inputs: &[Value]) -> Vec<Value> {
    let mut child = Command::new(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting the NFD oracle");
    let mut stdin = child.stdin.take().unwrap();
    let text: String = inputs.iter().map(|v| format!("{v}\n")).collect();
    // Write from a thread: the oracle answers while it reads.
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let out: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(&l.expect("oracle output")).expect("oracle output is JSON"))
        .collect();
    writer.join().unwrap().expect("writing to the oracle");
    let res = child.wait_with_output().unwrap();
    assert!(
        res.status.success() && out.len() == inputs.len(),
        "NFD oracle failed ({} answers to {} inputs): {}",
        out.len(),
        inputs.len(),
        String::from_utf8_lossy(&res.stderr)
    );
    out
}

/// Every outcome NFD can give for one input: `alternatives` when Go's map
/// order made runs differ, else the one answer.
pub fn outcomes(answer: &Value) -> Vec<&Value> {
    match answer["alternatives"].as_array() {
        Some(all) => all.iter().collect(),
        None => vec![answer],
    }
}

/// Labels by key.
pub type Labels = std::collections::BTreeMap<String, String>;

/// One NFD outcome as kubelet registers it: the labels and taints
/// (`key=value:Effect`) it would refuse left out, each alone (as the
/// wrapper leaves out one it refuses, the rest of its rule kept).
pub fn kubelet_accepted(
    outcome: &Value,
    profile: kubelet_labeler::node::kubelet::Profile,
) -> (Labels, Vec<(String, String, String)>) {
    use kubelet_labeler::node::kubelet;
    let labels = outcome["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .filter(|kv| kubelet::validate_labels(std::slice::from_ref(kv), profile).is_empty())
        .collect();
    let taints = outcome["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or("").to_string();
            (s("key"), s("value"), s("effect"))
        })
        .filter(|(k, v, e)| {
            kubelet::parse_taints(&format!("{k}={v}:{e}"))
                .is_ok_and(|ts| ts.len() == 1 && ts[0].key == *k && ts[0].value == *v)
        })
        .collect();
    (labels, taints)
}
