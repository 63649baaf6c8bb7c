//! What we render, read back by the YAML reader `oc apply` and the MCO use:
//! `sigs.k8s.io/yaml` (go-yaml v2, YAML 1.1 scalars: `y`, `on`, `0o17`, `1e3`
//! are not strings to it). tests/support/goyaml is built offline in GOPATH
//! mode from Debian's packages; every string must come back as the string we
//! meant. PyYAML checks the same in tests/render.rs.

use crate::support::{elf, go_yaml};

use std::path::Path;

use kubelet_labeler::cli::render::machineconfig::{self, Arch, PoolOptions};
use kubelet_labeler::node::kubelet::Additions;
use kubelet_labeler::node::kubelet::labels::label_value_errors;
use serde_json::{Value, json};

/// The `kubectl apply -f` reader's program (go-yaml v2), or None after a
/// skip.
fn goyaml_bin() -> Option<&'static Path> {
    go_yaml::bin(go_yaml::Reader::V2)
}

/// Read a YAML stream as oc apply does: one JSON value per document.
fn goyaml(bin: &Path, text: &str) -> Vec<Value> {
    go_yaml::read(bin, text)
}

/// [`goyaml`], or go-yaml's (or the split's) error.
fn goyaml_read(bin: &Path, text: &str) -> Result<Vec<Value>, String> {
    go_yaml::try_read(bin, text)
}

fn fake_static_elf() -> Vec<u8> {
    elf::static_elf(kubelet_labeler::cli::render::arch::Arch::X86_64)
}

fn opts(pool: &str, label_value: &str, version: &'static str) -> PoolOptions {
    PoolOptions {
        pool: pool.into(),
        additions: Additions {
            labels: vec![("example.com/v".into(), label_value.into())],
            taints: kubelet_labeler::node::kubelet::parse_taints("example.com/t=1e3:NoSchedule")
                .unwrap(),
        },
        pool_label: Some(("example.com/pool".into(), label_value.into())),
        base_role: "worker".into(),
        ignition_version: version,
        wrappers: vec![(Arch::X86_64, fake_static_elf())],
        node_rules: Default::default(),
        builtin_role: false,
    }
}

/// Every manifest, as the stream (`-o -`) and as the files `--output-dir`
/// writes, reads back equal to the JSON we meant.
fn assert_reads_back(bin: &Path, o: &PoolOptions, what: &str) {
    let rendered = machineconfig::render(o).unwrap();
    let ours: Vec<Value> = rendered
        .manifests
        .iter()
        .map(|(_, v)| v.clone())
        // The stream leaves out the cluster-wide policy too.
        .filter(|v| v["kind"] != "Kustomization" && v["kind"] != "MachineConfiguration")
        .collect();
    let stream = machineconfig::to_stream(&rendered).unwrap();
    assert_eq!(goyaml(bin, &stream), ours, "stream, {what}");
    let back = kubelet_labeler::cli::yaml::kube_yaml_docs(&stream);
    assert_eq!(back.ok(), Some(ours), "our reader, stream, {what}");
    for (name, obj) in &rendered.manifests {
        let text = machineconfig::to_yaml(obj).unwrap();
        assert_eq!(goyaml(bin, &text), vec![obj.clone()], "{name}, {what}");
    }
}

/// Label values go-yaml v2 would read as bools, numbers, timestamps or null.
const AMBIGUOUS: &[&str] = &[
    "y",
    "n",
    "Y",
    "N",
    "on",
    "Off",
    "yes",
    "NO",
    "true",
    "null",
    "0o17",
    "0x1F",
    "1e3",
    "1e-3",
    "1E3",
    "0644",
    "1_000",
    "123",
    "12.5",
    ".5",
    "-1",
    "2001-12-14",
    "2001-12-14T10:00:00Z",
    "oN",
    "tRUE",
    "~",
    "",
];

#[test]
fn go_yaml_reads_every_label_value_back_as_the_string() {
    let Some(bin) = goyaml_bin() else { return };
    let mut rendered = 0;
    for v in AMBIGUOUS {
        // Only values kubelet accepts get rendered; the rest go through the
        // emitter alone below.
        let o = opts("worker-gpu", v, "3.4.0");
        if label_value_errors(v).is_empty() {
            assert_reads_back(bin, &o, &format!("label value {v:?}"));
            rendered += 1;
        }
        let obj = json!({
            "metadata": { "name": v, "annotations": { "example.com/a": v, (*v): v } },
            "list": [v],
        });
        let text = machineconfig::to_yaml(&obj).unwrap();
        // Our own reader (plan, explain) reads what we write back too.
        let ours = kubelet_labeler::cli::yaml::kube_yaml_docs(&text);
        assert_eq!(ours.ok(), Some(vec![obj.clone()]), "our reader, {v:?}");
        assert_eq!(goyaml(bin, &text), vec![obj], "emitter, {v:?}");
    }
    assert!(rendered >= 15, "only {rendered} label values rendered");
}

#[test]
fn go_yaml_reads_pool_names_that_look_like_numbers_back() {
    let Some(bin) = goyaml_bin() else { return };
    let mut rendered = 0;
    for pool in [
        "123",
        "1e3",
        "0x1f",
        "0o17",
        "1e-3",
        "2001-12-14",
        "y",
        "on",
        "null",
    ] {
        if machineconfig::check_pool_name(pool).is_err() {
            continue;
        }
        assert_reads_back(bin, &opts(pool, "x", "3.4.0"), &format!("pool {pool:?}"));
        rendered += 1;
    }
    assert!(
        rendered >= 5,
        "only {rendered} number-like pool names rendered"
    );
}

#[test]
fn go_yaml_reads_every_ignition_version_back() {
    let Some(bin) = goyaml_bin() else { return };
    for version in ["3.5.0", "3.4.0", "3.2.0"] {
        assert_reads_back(bin, &opts("worker-gpu", "on", version), version);
    }
}

/// The oracle itself: it must see what YAML 1.1 makes of plain scalars, or
/// the tests above prove nothing.
#[test]
fn go_yaml_oracle_reads_plain_scalars_as_yaml_1_1() {
    let Some(bin) = goyaml_bin() else { return };
    let back = goyaml(
        bin,
        "a: y\nb: 0o17\nc: 1e3\nd: 0x1F\ne: null\nf: Off\n---\ng: x\n",
    );
    assert_eq!(
        back,
        vec![
            json!({"a": true, "b": 15, "c": 1000, "d": 31, "e": null, "f": false}),
            json!({"g": "x"})
        ]
    );
}

/// Manifest text kubectl (apimachinery's split at `---` lines, then go-yaml
/// v2) reads otherwise than YAML 1.2 does, each with the finding of review
/// 9 (rcli) it carried (a pull request hid a taint change from plan and
/// explain that way), and text all read alike (None).
const DIFFERENT: &[(&str, Option<&str>)] = &[
    // A literal block's NEL, LS, PS: a second line to go-yaml.
    ("a: |\n  x=1\u{85}  Environment=T=\n", Some("F1")),
    ("a: |\n  x=1\u{2028}  Environment=T=\n", Some("F1")),
    ("a: |\n  x=1\u{2029}  Environment=T=\n", Some("F1")),
    // A comment ends at LS: a key follows (the last of two wins).
    (
        "f:\n  source: taint\n  # note\u{2028}  source: empty\n",
        Some("F1b"),
    ),
    (
        "f:\n  source: taint\n  # note\u{85}  reset: x\n",
        Some("F1b"),
    ),
    // A kustomization's `patches:` after a comment's LS.
    (
        "resources:\n- a.yaml\n# applied with oc apply -k\u{2028}patches: [{path: p.yaml}]\n",
        Some("F1c"),
    ),
    // What follows `...` before a `---` line is never applied.
    ("a: 1\n...\na: 2\n", Some("F2")),
    ("a: 1\n...\n# c\nkind: MachineConfig\n", Some("F2")),
    ("a: 1\n... b: 2\n", Some("F2")),
    // A later merge key overrides an explicit key for go-yaml v2 only.
    ("a: 2\n<<: {a: 1}\n", Some("F7")),
    ("f:\n  source: taint\n  <<: {source: empty}\n", Some("F7")),
    // A lone CR splits no part for kubectl: go-yaml reads the first.
    ("a: 1\r---\rb: 2\n", Some("F2")),
    // Read alike.
    ("a: 1\n--- # next\nb: 2\n", None),
    ("a: 1\n...\n# c\n---\nb: 2\n", None),
    ("a: |\n  x=1\n  y=2\n", None),
    ("a: \"x\\u2028y\"\n", None),
    ("b: &x {a: 1}\nc: *x\n", None),
    ("a: 0644\nb: 493.0\n---\t\r\nc: [1, \"2\"]\n", None),
];

/// Every reader of a pull request's manifests and kustomizations reads as
/// kubectl does, or refuses: each text of [`DIFFERENT`] go-yaml v2 reads
/// otherwise than YAML 1.2 (the oracle sees the difference) is refused,
/// and what is read equals go-yaml's reading. Failed on 553e238 (F1, F1b,
/// F1c, F2, F7 were read as YAML 1.2).
#[test]
fn manifests_are_read_as_go_yaml_reads_them_or_refused() {
    use kubelet_labeler::cli::yaml::kube_yaml_docs;
    let Some(bin) = goyaml_bin() else { return };
    let docs = |v: Vec<Value>| -> Vec<Value> { v.into_iter().filter(|d| !d.is_null()).collect() };
    let mut bad = Vec::new();
    for (text, finding) in DIFFERENT {
        let theirs = goyaml_read(bin, text).map(docs);
        if let Some(finding) = finding {
            // The oracle itself: YAML 1.2 reads it otherwise.
            let yaml12 = serde_saphyr::from_multiple::<Value>(text).map(docs);
            assert_ne!(
                yaml12.ok(),
                theirs.clone().ok(),
                "{finding}: {text:?} is read alike"
            );
        }
        match kube_yaml_docs(text) {
            Ok(ours) if finding.is_some() => {
                bad.push(format!("{finding:?}: {text:?} read as {ours:?}"))
            }
            Ok(ours) if Ok(docs(ours.clone())) != theirs => {
                bad.push(format!("{text:?}: read as {ours:?}, go-yaml {theirs:?}"))
            }
            Ok(_) => {}
            Err(e) if finding.is_none() => bad.push(format!("{text:?} refused: {e}")),
            Err(_) => {}
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
