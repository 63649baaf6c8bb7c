//! What we render, read back by the YAML reader `oc apply` and the MCO use:
//! `sigs.k8s.io/yaml` (go-yaml v2, YAML 1.1 scalars: `y`, `on`, `0o17`, `1e3`
//! are not strings to it). tests/support/goyaml is built offline in GOPATH
//! mode from Debian's packages; every string must come back as the string we
//! meant. PyYAML checks the same in tests/render.rs.

use crate::support::{elf, scratch_dir, skipped};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use kubelet_labeler::cli::render::machineconfig::{self, Arch, PoolOptions};
use kubelet_labeler::node::kubelet::Additions;
use kubelet_labeler::node::kubelet::labels::label_value_errors;
use serde_json::{Value, json};
use skipped::need;

const GOPATH: &str = "/usr/share/gocode";

/// Builds the reader once; None (after saying why) when Go or Debian's
/// sigs.k8s.io/yaml is missing outside CI.
fn goyaml_bin() -> Option<&'static Path> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| {
        let pkgs = "apt-get install golang-k8s-sigs-yaml-dev golang-gopkg-yaml.v2-dev";
        if !need("go") {
            return None;
        }
        let have_pkg = Path::new(GOPATH).join("src/sigs.k8s.io/yaml").is_dir();
        if !have_pkg {
            let why = format!("{GOPATH}/src/sigs.k8s.io/yaml is missing ({pkgs})");
            skipped::skipped(&why);
            return None;
        }
        let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let bin = tmp.join("goyaml");
        let out = Command::new("go")
            .args(["build", "-o"])
            .arg(&bin)
            .arg("./tests/support/goyaml")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("GO111MODULE", "off")
            .env("GOPATH", GOPATH)
            .env("GOCACHE", tmp.join("gocache"))
            .env("GOPROXY", "off")
            .output()
            .expect("running go build");
        assert!(
            out.status.success(),
            "go build tests/support/goyaml: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(bin)
    })
    .as_deref()
}

/// Read a YAML stream as oc apply does: one JSON value per document.
fn goyaml(bin: &Path, text: &str) -> Vec<Value> {
    let dir = scratch_dir();
    let f = dir.path().join("in.yaml");
    std::fs::write(&f, text).unwrap();
    let out = Command::new(bin).arg(&f).output().unwrap();
    assert!(
        out.status.success(),
        "goyaml on {text:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
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
        assert_eq!(
            goyaml(bin, &machineconfig::to_yaml(&obj).unwrap()),
            vec![obj],
            "emitter, {v:?}"
        );
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
