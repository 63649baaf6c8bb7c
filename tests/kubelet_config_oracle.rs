//! The wrapper's reader of kubelet's config files (`registerWithTaints` in
//! `--config` and `--config-dir` drop-ins) against kubelet's own reading:
//! tests/support/kubeletconfig, a Go program that runs kubelet's decode and
//! merge path on the libraries kubelet vendors (sigs.k8s.io/yaml over go-yaml
//! v2, sigs.k8s.io/json, evanphx/json-patch; Debian's packages, built
//! offline in GOPATH mode), on many generated configs: every YAML construct
//! kubelet accepts, JSON, drop-ins, and mutations of them. Where ours reads
//! taints they must be kubelet's; where kubelet refuses the file ours must
//! too. The real kubelet (../shared/tools/realcluster) checks the Go program
//! itself on a set of cases, the issue's among them.

use crate::support::{current_go, mco, realcluster, scratch_dir, skipped};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use kubelet_labeler::node::kubelet::Taint;
use kubelet_labeler::node::kubelet::config::kubelet_taints;
use serde_json::{Value, json};

const GOPATH: &str = "/usr/share/gocode";
const PKGS: [&str; 4] = [
    "sigs.k8s.io/yaml",
    "sigs.k8s.io/json",
    "gopkg.in/yaml.v2",
    "github.com/evanphx/json-patch",
];

/// The Go reader, built once; None (after saying why) outside CI when Go or
/// a Debian package is missing.
fn oracle() -> Option<&'static Path> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = PKGS
            .iter()
            .find(|p| !Path::new(GOPATH).join("src").join(p).is_dir())
        {
            skipped::skipped(&format!(
                "{GOPATH}/src/{p} is missing (apt-get install golang-k8s-sigs-yaml-dev \
                 golang-k8s-sigs-json-dev golang-gopkg-yaml.v2-dev golang-github-evanphx-json-patch-dev)"
            ));
            return None;
        }
        let go = current_go::find()?;
        let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let bin = tmp.join("kubeletconfig");
        let out = Command::new(go)
            .args(["build", "-o"])
            .arg(&bin)
            .arg("./tests/support/kubeletconfig")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("GO111MODULE", "off")
            .env("GOPATH", GOPATH)
            .env("GOCACHE", tmp.join("gocache"))
            .env("GOPROXY", "off")
            .env("GOTOOLCHAIN", "local")
            .output()
            .expect("running go build");
        assert!(
            out.status.success(),
            "go build tests/support/kubeletconfig: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(bin)
    })
    .as_deref()
}

#[derive(Clone, Debug)]
struct Case {
    config: Option<String>,
    /// None: no --config-dir
    dropins: Option<Vec<String>>,
}

fn case(config: &str) -> Case {
    Case {
        config: Some(config.to_string()),
        dropins: None,
    }
}

/// Kubelet's answer per case: the taints as `key=value:Effect`, or Err.
fn ask_oracle(bin: &Path, cases: &[Case]) -> Vec<Result<Vec<String>, String>> {
    let input: Vec<Value> = cases
        .iter()
        .map(|c| json!({"config": c.config, "dropins": c.dropins.clone().unwrap_or_default()}))
        .collect();
    let mut child = Command::new(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let body = serde_json::to_vec(&input).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "the Go reader failed");
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    results.iter().map(from_json).collect()
}

fn from_json(r: &Value) -> Result<Vec<String>, String> {
    if let Some(e) = r.get("error") {
        return Err(e.as_str().unwrap_or("?").to_string());
    }
    let none = vec![];
    let ts = r.get("taints").and_then(Value::as_array).unwrap_or(&none);
    Ok(ts
        .iter()
        .map(|t| {
            let s = |k| t.get(k).and_then(Value::as_str).unwrap_or("");
            format!("{}={}:{}", s("key"), s("value"), s("effect"))
        })
        .collect())
}

fn ours(c: &Case) -> Result<Vec<String>, String> {
    let dropins: Option<Vec<&str>> = c
        .dropins
        .as_ref()
        .map(|d| d.iter().map(String::as_str).collect());
    kubelet_taints(c.config.as_deref(), dropins.as_deref())
        .map(|ts| {
            ts.iter()
                .map(|t: &Taint| format!("{}={}:{}", t.key, t.value, t.effect.as_str()))
                .collect()
        })
        .map_err(|e| e.to_string())
}

const HEAD: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

/// Cases each construct of the issue and of YAML/JSON is read in, with the
/// answer every one must give (kubelet's, checked by `real_kubelet_agrees`).
fn constructs() -> Vec<Case> {
    let list = "registerWithTaints:\n- key: a\n  value: b\n  effect: NoSchedule\n";
    let mut v: Vec<Case> = [
        // the issue's: document markers, directives, anchors, tags, block scalars
        format!("{HEAD}{list}...\n"),
        format!("%YAML 1.1\n---\n{HEAD}{list}"),
        format!("%YAML 1.2\n---\n{HEAD}{list}"),
        format!("{HEAD}x: &e NoSchedule\nregisterWithTaints:\n- key: a\n  effect: *e\n"),
        format!("{HEAD}registerWithTaints:\n- key: !!str a\n  value: !!str 123\n  effect: !!str NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: >-\n    a\n  value: |-\n    b\n  effect: NoSchedule\n"),
        // more documents: kubelet reads the first
        format!("{HEAD}{list}---\nregisterWithTaints: []\n"),
        format!("---\n{HEAD}{list}--- [\n"),
        format!("# c\n--- # c\n{HEAD}{list}...\n---\nfoo\n"),
        format!("%TAG !k! tag:yaml.org,2002:\n---\n{HEAD}registerWithTaints:\n- key: !k!str a\n  effect: NoSchedule\n"),
        format!("%FOO bar\n---\n{HEAD}{list}"),
        format!("%YAML 1.1\n%YAML 1.1\n---\n{HEAD}{list}"),
        format!("\u{feff}{HEAD}{list}"),
        // anchors on the list, merge keys, aliases of items
        format!("{HEAD}t: &t\n- {{key: a, effect: NoExecute}}\nregisterWithTaints: *t\n"),
        format!("{HEAD}base: &b {{effect: NoSchedule, value: v}}\nregisterWithTaints:\n- <<: *b\n  key: a\n- key: c\n  <<: *b\n  value: w\n"),
        format!("{HEAD}a: &a {{effect: NoSchedule}}\nb: &b {{effect: NoExecute, value: x}}\nregisterWithTaints:\n- <<: [*a, *b]\n  key: k\n"),
        format!("{HEAD}registerWithTaints:\n- &i {{key: a, effect: NoSchedule}}\n- *i\n"),
        // a long value aliased a few times; thousands of times past 8 MiB
        // of output ours refuses on purpose (review 17 F1: 1.2 GB at a start)
        format!("{HEAD}a: &a {{effect: NoSchedule, pad: {}}}\nregisterWithTaints:\n- <<: [*a, *a, *a]\n  key: k\n", "x".repeat(100_000)),
        format!("{HEAD}p: &p {}\nq: {{k: *p, k: *p, k: *p}}\n{list}", "x".repeat(100_000)),
        format!("{HEAD}a: &a {{k: {}}}\nm: {{<<: [{}]}}\n{list}", "x".repeat(300_000), ["*a"].repeat(40).join(",")),
        format!("{HEAD}registerWithTaints:\n- key: a\n  effect: *nope\n"),
        format!("{HEAD}registerWithTaints: &x\n- key: a\n  effect: NoSchedule\n  self: *x\n"),
        format!("{HEAD}registerWithTaints:\n- <<: {{effect: NoSchedule}}\n  \"<<\": x\n  key: a\n"),
        format!("{HEAD}registerWithTaints:\n- <<: 1\n  key: a\n  effect: NoSchedule\n"),
        // tags on collections and scalars
        format!("{HEAD}registerWithTaints: !!seq\n- !!map {{key: a, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- key: !!int 1\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  value: !!null\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  value: !custom 12\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  value: !<tag:yaml.org,2002:str> 12\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  value: !!binary YQ==\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  value: !!timestamp 2001-12-14\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints: !!null\n"),
        // scalar styles
        format!("{HEAD}registerWithTaints:\n- key: 'a'\n  value: \"\\x62\\u0063\"\n  effect: \"No\\\n  Schedule\"\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  value: 'it''s'\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  value: \"b\n    c\"\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  value: b\n    c\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: |\n    a\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: |+\n    a\n\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: >2-\n     a\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: >-\n    a\n    b\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: >-\n\n    a\n  effect: >-\n    NoSchedule\n    # not a comment\n"),
        format!("{HEAD}registerWithTaints:\n- key: a # c\n  value: b#c\n  effect: NoSchedule#\n"),
        // YAML 1.1 types: not strings, or strings
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 0x1F, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 1e400, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 0xFFFFFFFFFFFFFFFFFFFF, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 09, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 2001-12-14, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: yes, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: ~, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: .5, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 1_0, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: e5, effect: NoSchedule}}\n"),
        format!("{HEAD}x: .nan\n{list}"),
        // float64's edge: Go's ParseFloat refuses what rounds to infinity,
        // and go-yaml then takes the text as a string
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 1.7976931348623157e308, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 1.7976931348623159e308, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 0.17976931348623158e309, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 17976931348623158e292, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: -1.8e308, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: .5e400, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: .5e-400, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 1e-400, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 00000.0e99999999999999999999, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497791, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792.0, effect: NoSchedule}}\n"),
        format!("{HEAD}registerWithTaints:\n- {{key: a, value: 0.179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497791e309, effect: NoSchedule}}\n"),
        // flow and block forms, indentless and indented sequences
        format!("{HEAD}registerWithTaints: [{{key: a, effect: NoSchedule}}, {{key: b, value: c, effect: NoExecute}},]\n"),
        format!("{HEAD}registerWithTaints:\n  - key: a\n    effect: NoSchedule\n  -\n    key: b\n    effect: NoExecute\n"),
        format!("{HEAD}registerWithTaints: [\n  {{key: a,\n   effect: NoSchedule}}\n  ]\n"),
        format!("{HEAD}registerWithTaints: [key: a]\n"),
        format!("{HEAD}{{registerWithTaints: [{{key: a, effect: NoSchedule}}]}}\n"),
        format!("{HEAD}? registerWithTaints\n: - key: a\n    effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  effect: NoSchedule\n x: y\n"),
        format!("{HEAD}registerWithTaints:\n\t- key: a\n"),
        // keys: repeats, case, quoting
        format!("{HEAD}{list}registerWithTaints:\n- key: b\n  effect: NoExecute\n"),
        format!("{HEAD}RegisterWithTaints:\n- key: b\n  effect: NoExecute\n"),
        format!("{HEAD}registerWithTaints:\n- Key: b\n  key: c\n  KEY: d\n  effect: NoExecute\n"),
        format!("{HEAD}\"registerWithTaints\":\n- 'key': a\n  \"effect\": NoSchedule\n  key: b\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  effect: NoSchedule\n  timeAdded: null\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  effect: NoSchedule\n  timeAdded: 2024-01-01T00:00:00Z\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  effect: NoSchedule\n  unknown: 1\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n"),
        format!("{HEAD}registerWithTaints:\n- key: a\n  effect: nosched\n"),
        format!("{HEAD}registerWithTaints:\n- key: a b\n  effect: NoSchedule\n"),
        format!("{HEAD}registerWithTaints:\n- null\n"),
        format!("{HEAD}registerWithTaints: {{}}\n"),
        format!("{HEAD}registerWithTaints:\n"),
        format!("{HEAD}registerWithTaints: []\n"),
        // kind and apiVersion
        "KIND: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nregisterWithTaints: [{key: a, effect: NoSchedule}]\n".into(),
        "kind: KubeletConfiguration\nregisterWithTaints: [{key: a, effect: NoSchedule}]\n".into(),
        "kind: KubeletConfiguration\napiVersion: v1\nregisterWithTaints: [{key: a, effect: NoSchedule}]\n".into(),
        format!("{HEAD}kind: KubeletConfiguration\n{list}"),
        // JSON
        r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","registerWithTaints":[{"key":"a","value":"\u0062","effect":"NoSchedule"}]}"#.into(),
        r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","registerWithTaints":[{"key":"a","effect":"NoSchedule"}],"registerWithTaints":[]}"#.into(),
        r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","registerWithTaints":[{"key":"a","key":"b","value":"x","value":null,"effect":"NoSchedule"}]}"#.into(),
        r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","RegisterWithTaints":[{"key":"a","effect":"NoSchedule"}]}"#.into(),
        r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","registerWithTaints":[{"key":"a","effect":"NoSchedule"}]} x"#.into(),
        " \n {\"apiVersion\":\"kubelet.config.k8s.io/v1beta1\",\"kind\":\"KubeletConfiguration\",// c\n}".into(),
        "{apiVersion: kubelet.config.k8s.io/v1beta1, kind: KubeletConfiguration, registerWithTaints: []}".into(),
        "\u{feff}{apiVersion: kubelet.config.k8s.io/v1beta1, kind: KubeletConfiguration, registerWithTaints: [{key: a, effect: NoSchedule}]}".into(),
        // review 19 F1: anchors redefined (the latest wins from where it is
        // defined), thousands named descending; %TAG repeated, redefining
        // `!!`, thousands of them
        format!("{HEAD}a: &e NoExecute\nb: &e NoSchedule\nregisterWithTaints:\n- key: a\n  effect: *e\n"),
        format!("{HEAD}a: &e NoExecute\nregisterWithTaints:\n- key: a\n  effect: *e\nb: &e NoSchedule\n"),
        format!("{HEAD}x: [{}]\nregisterWithTaints:\n- {{key: a, value: *a0100, effect: *a0000}}\n",
            (0..20_000).rev().map(|i| format!("&a{i:04} {}", ["NoSchedule", "v"][i % 2])).collect::<Vec<_>>().join(",")),
        format!("{HEAD}x: [&c p, &b q, &a NoExecute, &b NoSchedule]\nregisterWithTaints:\n- {{key: a, effect: *b}}\n"),
        format!("%TAG !k! tag:yaml.org,2002:\n%TAG !k! tag:yaml.org,2002:\n---\n{HEAD}{list}"),
        format!("%TAG !! tag:example.com,2000:\n---\n{HEAD}registerWithTaints:\n- key: !!int a\n  effect: NoSchedule\n"),
        format!("{}---\n{HEAD}registerWithTaints:\n- key: !t1000!str a\n  effect: !t0007!str NoSchedule\n",
            (0..5_000).rev().map(|i| format!("%TAG !t{i:04}! tag:yaml.org,2002:\n")).collect::<String>()),
        String::new(),
        "# only a comment\n".into(),
    ]
    .iter()
    .map(|s| case(s))
    .collect();
    // drop-ins
    let d = |body: &str| format!("{HEAD}{body}");
    let base = format!("{HEAD}registerWithTaints:\n- {{key: a, value: x, effect: NoSchedule}}\n");
    for dropins in [
        vec![d("registerWithTaints:\n- {key: b, effect: NoExecute}\n")],
        vec![d("registerWithTaints: null\n")],
        vec![d("registerWithTaints: []\n")],
        vec![d("maxPods: 10\n")],
        vec![d("RegisterWithTaints: [{key: c, effect: NoSchedule}]\n")],
        vec![d("registerWithTaints: [{KEY: c, \u{212a}ey: d, effect: NoSchedule}]\n")],
        vec![d("registerWithTaints: [{key: c, effect: NoSchedule}]\nregisterWithTaints: []\n")],
        vec![d("a: &a {effect: NoSchedule}\nregisterWithTaints:\n- <<: *a\n  effect: NoExecute\n  key: c\n")],
        vec![d("registerWithTaints: [{key: c, effect: NoSchedule}]\n"), d("registerWithTaints: null\n")],
        vec![d("registerWithTaints: [{key: c, effect: NoSchedule}]\n"), d("maxPods: 3\n")],
        vec!["kind: KubeletConfiguration\nregisterWithTaints: []\n".into()],
        vec!["apiVersion: kubelet.config.k8s.io/v1beta1\nregisterWithTaints: []\n".into()],
        vec![r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","registerWithTaints":[{"key":"d","effect":"NoExecute"}]}"#.into()],
        vec![r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","maxPods":1,"maxPods":2}"#.into()],
        vec![d("registerWithTaints: [{key: c, effect: NoSchedule, value: null}]\n")],
        vec![d("registerWithTaints: {a: b}\n"), d("registerWithTaints: [{key: e, effect: NoSchedule}]\n")],
        vec![String::new()],
        vec![d("%YAML 1.1\n---\nregisterWithTaints: [{key: c, effect: NoSchedule}]\n")],
        vec![format!("%YAML 1.1\n---\n{HEAD}registerWithTaints: [{{key: c, effect: NoSchedule}}]\n...\n")],
        // review 19 F1: the field under many names differing in case, all
        // but one set back to null by the next drop-in
        vec![d(&case_variants(1..2000, "[]")), d(&(case_variants(1..2000, "null") + "REGISTERWITHTAINTS: [{key: f, effect: NoSchedule}]\n"))],
        vec![d(&case_variants(1..2000, "[]")), d(&case_variants(2..2000, "null"))],
    ] {
        v.push(Case {
            config: Some(base.clone()),
            dropins: Some(dropins.clone()),
        });
        v.push(Case {
            config: None,
            dropins: Some(dropins),
        });
    }
    v.push(Case {
        config: Some(base),
        dropins: Some(vec![]),
    });
    v
}

/// `registerWithTaints` set to `value` under the names `i` spells (bit j
/// of i: letter j upper case), in descending order of i.
fn case_variants(names: std::ops::Range<usize>, value: &str) -> String {
    let name = |i: usize| -> String {
        let flip = |(j, c): (usize, char)| match (i >> j) & 1 {
            1 => c.to_ascii_uppercase(),
            _ => c.to_ascii_lowercase(),
        };
        "registerWithTaints".chars().enumerate().map(flip).collect()
    };
    names
        .rev()
        .map(|i| format!("{}: {value}\n", name(i)))
        .collect()
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[(self.next() % xs.len() as u64) as usize]
    }
}

/// A field value in one of YAML's scalar forms, at `indent` (the item's
/// field indentation).
fn scalar(r: &mut Rng, text: &str, indent: usize) -> String {
    let pad = " ".repeat(indent + 2);
    match r.next() % 12 {
        0 | 1 => text.to_string(),
        2 => format!("'{text}'"),
        3 => format!("\"{text}\""),
        4 => format!(
            "\"{}\"",
            text.chars()
                .map(|c| format!("\\x{:02x}", c as u32))
                .collect::<String>()
        ),
        5 => format!("|-\n{pad}{text}"),
        6 => format!(">-\n{pad}{text}"),
        7 => format!("!!str {text}"),
        8 => format!("&v{} {text}", r.next() % 1000),
        9 => format!("|2-\n{pad}{text}"),
        10 => format!("\"{text}\" # c"),
        _ => format!("!!str '{text}'"),
    }
}

/// One random config in YAML (block, flow or mixed) or JSON.
fn generated(r: &mut Rng) -> String {
    let keys = ["a", "example.com/gpu", "k8s.io_x", "x-y.z"];
    let values = [
        "",
        "v",
        "1gpu",
        "yes",
        "123",
        "0x1F",
        "2001-12-14",
        "true",
        "null",
        "1.5",
        "a.b",
    ];
    let effects = [
        "NoSchedule",
        "PreferNoSchedule",
        "NoExecute",
        "",
        "noschedule",
    ];
    let n = (r.next() % 4) as usize;
    let items: Vec<(String, String, String)> = (0..n)
        .map(|_| {
            (
                r.pick(&keys).to_string(),
                r.pick(&values).to_string(),
                r.pick(&effects).to_string(),
            )
        })
        .collect();
    if r.next().is_multiple_of(6) {
        let body: Vec<Value> = items
            .iter()
            .map(|(k, v, e)| json!({"key": k, "value": v, "effect": e}))
            .collect();
        return json!({"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                      "maxPods": 10, "registerWithTaints": body})
        .to_string();
    }
    let mut out = String::new();
    if r.next().is_multiple_of(4) {
        let s: &str = r.pick::<&str>(&["---\n", "%YAML 1.1\n---\n", "# head\n", "--- # c\n"]);
        out.push_str(s);
    }
    let head = [
        "apiVersion: kubelet.config.k8s.io/v1beta1\n",
        "kind: KubeletConfiguration\n",
        "maxPods: 110\n",
    ];
    let list_at = (r.next() % 4) as usize;
    for (i, h) in head.iter().enumerate() {
        if i == list_at {
            out.push_str(&list(r, &items));
        }
        out.push_str(h);
    }
    if list_at == 3 {
        out.push_str(&list(r, &items));
    }
    if r.next().is_multiple_of(5) {
        let s: &str = r.pick::<&str>(&["...\n", "---\nmaxPods: 1\n", "# tail\n", "...\n--- {\n"]);
        out.push_str(s);
    }
    out
}

fn list(r: &mut Rng, items: &[(String, String, String)]) -> String {
    let flow = |k: &str, v: &str, e: &str| {
        let q = |s: &str| {
            if s.is_empty() {
                "\"\"".to_string()
            } else {
                s.to_string()
            }
        };
        format!("{{key: {}, value: {}, effect: {}}}", q(k), q(v), q(e))
    };
    match r.next() % 5 {
        0 => format!(
            "registerWithTaints: [{}]\n",
            items
                .iter()
                .map(|(k, v, e)| flow(k, v, e))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => {
            let ind = r.pick(&[0usize, 2, 4]).to_owned();
            let pad = " ".repeat(ind);
            let mut s = if items.is_empty() {
                r.pick(&[
                    "registerWithTaints:\n",
                    "registerWithTaints: []\n",
                    "registerWithTaints: ~\n",
                ])
                .to_string()
            } else {
                "registerWithTaints:\n".to_string()
            };
            for (k, v, e) in items {
                if r.next().is_multiple_of(4) {
                    s.push_str(&format!("{pad}- {}\n", flow(k, v, e)));
                    continue;
                }
                let fi = ind + 2;
                let fpad = " ".repeat(fi);
                let mut fields = vec![
                    format!("key: {}", scalar(r, k, fi)),
                    format!("effect: {}", scalar(r, e, fi)),
                ];
                if !v.is_empty() || r.next().is_multiple_of(2) {
                    fields.push(format!("value: {}", scalar(r, v, fi)));
                }
                if r.next().is_multiple_of(3) {
                    fields.reverse();
                }
                s.push_str(&format!("{pad}- {}\n", fields[0]));
                for f in &fields[1..] {
                    s.push_str(&format!("{fpad}{f}\n"));
                }
            }
            s
        }
    }
}

/// A small change to a config (a character dropped, doubled or replaced, a
/// line's indentation changed).
fn mutate(r: &mut Rng, text: &str) -> String {
    let mut c: Vec<char> = text.chars().collect();
    if c.is_empty() {
        return String::new();
    }
    let at = (r.next() % c.len() as u64) as usize;
    match r.next() % 5 {
        0 => {
            c.remove(at);
        }
        1 => c.insert(at, c[at]),
        2 => {
            c[at] = *r.pick(&[
                ' ', ':', '-', '\'', '"', '#', '\n', '\t', '&', '*', '!', '{', '[', ',', '>',
            ])
        }
        3 => c.insert(at, ' '),
        _ => {
            let line = text.lines().count().max(1);
            let pick = (r.next() % line as u64) as usize;
            return text
                .lines()
                .enumerate()
                .map(|(i, l)| {
                    if i == pick {
                        format!("  {l}\n")
                    } else {
                        format!("{l}\n")
                    }
                })
                .collect();
        }
    }
    c.into_iter().collect()
}

#[test]
fn reads_registerwithtaints_as_kubelet_does() {
    let Some(bin) = oracle() else { return };
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let fixed = constructs();
    let mut random: Vec<Case> = (0..1500).map(|_| case(&generated(&mut r))).collect();
    for i in 0..300 {
        let dropins = (0..(1 + i % 3)).map(|_| generated(&mut r)).collect();
        random.push(Case {
            config: (i % 2 == 0).then(|| generated(&mut r)),
            dropins: Some(dropins),
        });
    }
    let mutated: Vec<Case> = random
        .iter()
        .take(1500)
        .flat_map(|c| {
            let t = c.config.clone().unwrap_or_default();
            let once = mutate(&mut r, &t);
            let twice = mutate(&mut r, &once);
            [case(&mutate(&mut r, &t)), case(&twice)]
        })
        .collect();
    let mut exact: Vec<Case> = fixed.iter().chain(&random).cloned().collect();
    // OpenShift's kubelet.conf templates, bare and with lists added
    if let Some(dir) = mco::require_fixtures() {
        for (_, conf) in crate::kubelet_mco::config_templates(&dir) {
            exact.push(case(&conf));
            for _ in 0..4 {
                let items = vec![("a".into(), "v".into(), "NoSchedule".into())];
                exact.push(case(&format!("{conf}{}", list(&mut r, &items))));
            }
        }
    }
    let want = ask_oracle(bin, &exact);
    let mut wrong = Vec::new();
    let mut read = 0;
    for (c, w) in exact.iter().zip(&want) {
        let got = ours(c);
        read += got.is_ok() as usize;
        // the same taints, or both refuse (ours may refuse on purpose what
        // it does not follow: the node is then fenced)
        let on_purpose = matches!(&got, Err(e) if e.contains("which this reader does not follow"))
            // an empty file stops kubelet; ours reads it as no taints, as a
            // missing --config before kubeadm's join
            || (w.is_err() && (c.config.as_deref() == Some("")
                || c.dropins.iter().flatten().any(String::is_empty)));
        if !on_purpose && (got.is_ok() != w.is_ok() || (got.is_ok() && got != *w)) {
            wrong.push(format!("{c:?}\n  kubelet: {w:?}\n  ours:    {got:?}"));
        }
    }
    assert!(
        read > exact.len() / 3,
        "only {read} of {} read",
        exact.len()
    );
    // mutations: what ours reads must be what kubelet reads (ours may refuse
    // a broken file kubelet takes: the node is then fenced, never wrong), and
    // YAML or JSON kubelet cannot parse ours must not read (a file whose
    // other fields kubelet refuses, ours need not judge: kubelet stops)
    let want = ask_oracle(bin, &mutated);
    let mut refused = 0;
    for (c, w) in mutated.iter().zip(&want) {
        match (ours(c), w) {
            (Ok(got), Ok(w)) if got != *w => {
                wrong.push(format!("{c:?}\n  kubelet: {w:?}\n  ours:    {got:?}"))
            }
            (Ok(got), Err(e)) if !e.contains("Go struct field config.maxPods") => wrong.push(
                format!("{c:?}\n  kubelet: refuses ({e})\n  ours:    {got:?}"),
            ),
            (Err(_), Ok(_)) => refused += 1,
            _ => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "{} cases differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(
        refused < mutated.len() / 50,
        "{refused} mutated configs kubelet reads are refused"
    );
}

/// The real kubelet's `registerWithTaints`: it logs its configuration at
/// -v=5 once it has loaded, merged and validated it, then stops at the
/// missing kubeconfig (as ../shared/tools/realcluster/validate.sh).
fn real_kubelet(kubelet: &Path, c: &Case) -> Result<Vec<String>, String> {
    let dir = scratch_dir();
    let d = dir.path();
    std::fs::write(d.join("c.yaml"), c.config.as_deref().unwrap_or("")).unwrap();
    std::fs::create_dir(d.join("dd")).unwrap();
    for (i, t) in c.dropins.iter().flatten().enumerate() {
        std::fs::write(d.join(format!("dd/{i:02}.conf")), t).unwrap();
    }
    real_kubelet_in(kubelet, d, &d.join("dd").display().to_string())
}

/// [`real_kubelet`] on the tree at `d` (its `c.yaml` the `--config`),
/// with `--config-dir=config_dir` as written, run in `d`.
fn real_kubelet_in(kubelet: &Path, d: &Path, config_dir: &str) -> Result<Vec<String>, String> {
    let mut cmd = Command::new(kubelet);
    cmd.arg(format!("--config={}", d.join("c.yaml").display()))
        .arg(format!("--config-dir={config_dir}"))
        .arg(format!("--kubeconfig={}", d.join("none").display()))
        .arg(format!("--root-dir={}", d.join("root").display()))
        .arg("-v=5")
        .current_dir(d);
    let out = cmd.output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    let Some(start) = log.find("\"KubeletConfiguration\" configuration=<\n") else {
        let line = log
            .lines()
            .find(|l| l.contains("command failed"))
            .unwrap_or("?");
        return Err(line.to_string());
    };
    let body: String = log[start..]
        .lines()
        .skip(1)
        .take_while(|l| *l != " >")
        .map(|l| l.strip_prefix('\t').unwrap_or(l).to_string() + "\n")
        .collect();
    let v: Value = serde_json::from_str(&body).unwrap();
    let out = from_json(&json!({"taints": v["RegisterWithTaints"]}))?;
    // kubelet takes an empty effect (the API server refuses the Node)
    if out.iter().any(|t| t.ends_with(':')) {
        return Err("an empty effect: the API server refuses the Node".into());
    }
    Ok(out)
}

#[test]
fn real_kubelet_agrees() {
    let Some(bin) = oracle() else { return };
    if realcluster::unavailable().is_some() {
        return;
    }
    let unpacked = Command::new("bash")
        .arg(realcluster::tools_dir().join("unpack.sh"))
        .output()
        .unwrap();
    assert!(unpacked.status.success());
    let kubelet = PathBuf::from(String::from_utf8_lossy(&unpacked.stdout).trim()).join("kubelet");
    // This host runs cgroup v1, which kubelet refuses unless told: a first
    // drop-in says so, for the Go reader too.
    let cgroup = format!("{HEAD}failCgroupV1: false\n");
    let cases: Vec<Case> = constructs()
        .into_iter()
        .filter(|c| c.config.is_some())
        .map(|c| Case {
            dropins: Some([vec![cgroup.clone()], c.dropins.unwrap_or_default()].concat()),
            ..c
        })
        .collect();
    let go = ask_oracle(bin, &cases);
    let wrong: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .chunks(cases.len().div_ceil(2))
            .zip(go.chunks(cases.len().div_ceil(2)))
            .map(|(cs, gs)| {
                let kubelet = &kubelet;
                s.spawn(move || {
                    cs.iter()
                        .zip(gs)
                        .filter_map(|(c, g)| {
                            let real = real_kubelet(kubelet, c);
                            (real.is_ok() != g.is_ok() || (real.is_ok() && real != *g))
                                .then(|| format!("{c:?}\n  kubelet: {real:?}\n  Go reader: {g:?}"))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        wrong.is_empty(),
        "{} cases differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// The `--config-dir` walk (which drop-ins are merged) against the real
/// kubelet's, on trees with links: Go's filepath.WalkDir descends into no
/// link (the `--config-dir` itself walked only written with a `/` at its
/// end), and reads a link or a file named `*.conf` (the `--config-dir`
/// itself too). Each tree's drop-ins set taints of their own, so the list
/// kubelet registers with says which it read last. Review 9 F6: the
/// wrapper walked linked directories, and a drop-in there that kubelet
/// never reads cleared the `--config`'s taints from ours.
#[test]
fn real_kubelet_walks_the_config_dir_as_ours() {
    use kubelet_labeler::node::kubelet::{Additions, Profile, apply, parse_taints};
    use kubelet_labeler::node::wrapper::plan::RootFs;
    use std::os::unix::fs::symlink;
    if realcluster::unavailable().is_some() {
        return;
    }
    let unpacked = Command::new("bash")
        .arg(realcluster::tools_dir().join("unpack.sh"))
        .output()
        .unwrap();
    assert!(unpacked.status.success());
    let kubelet = PathBuf::from(String::from_utf8_lossy(&unpacked.stdout).trim()).join("kubelet");
    let taint =
        |key: &str| format!("{HEAD}registerWithTaints: [{{key: {key}, effect: NoSchedule}}]\n");
    // (--config-dir as written, the tree: `name` a file of a drop-in
    // setting the taint `name`'s last part, or `name@target` a link)
    let cases: &[(&str, &[&str])] = &[
        ("dd", &["real-dd/50.conf", "dd@real-dd"]),
        ("dd/", &["real-dd/50.conf", "dd@real-dd"]),
        ("dd/.", &["real-dd/50.conf", "dd@real-dd"]),
        ("{D}/dd", &["real-dd/50.conf", "dd@{D}/real-dd"]),
        ("{D}/dd/", &["real-dd/50.conf", "dd@{D}/real-dd"]),
        (
            "dd",
            &["dd/10.conf", "real-dd/50.conf", "dd/sub@../real-dd"],
        ),
        (
            "dd",
            &["dd/10.conf", "real-dd/50.conf", "dd/sub@{D}/real-dd"],
        ),
        ("dd", &["dd/10.conf", "dd/sub/50.conf"]),
        (
            "dd",
            &["dd/10.conf", "f/50.conf", "dd/zz.conf@../f/50.conf"],
        ),
        ("dd", &["dd/10.conf", "f/50.conf", "dd/zz@../f/50.conf"]),
        (
            "dd",
            &["dd/10.conf", "real-dd/50.conf", "dd/sub.conf@../real-dd"],
        ),
        ("dd", &["dd/10.conf", "dd/zz.conf@nowhere"]),
        ("dd", &["dd@nowhere"]),
        ("dd", &[]),
        ("one.conf", &["one.conf"]),
        ("ln.conf", &["f/50.conf", "ln.conf@f/50.conf"]),
        ("ln", &["f/50.conf", "ln@f/50.conf"]),
        // Review 10 F3: `dd/..` is the parent of dd's target as the kernel
        // resolves it, but each entry is named filepath.Join(dir, name),
        // cleaned lexically: kubelet reads {D}/x.conf, not real/x.conf, and
        // lists the directory `inner` at {D}/inner.
        (
            "{D}/dd/..",
            &[
                "dd@{D}/real/inner",
                "real/inner/10.conf",
                "real/x.conf",
                "inner/20.conf",
                "x.conf",
            ],
        ),
        (
            "dd/..",
            &[
                "dd@{D}/real/inner",
                "real/inner/10.conf",
                "real/x.conf",
                "inner/20.conf",
                "x.conf",
            ],
        ),
        // ... and below it, each subdirectory at its lexical path too.
        (
            "{D}/dd/..",
            &[
                "dd@{D}/real/inner",
                "real/inner/10.conf",
                "real/sub/t/10.conf",
                "inner/20.conf",
                "sub/t/30.conf",
                "sub/t/u/40.conf",
            ],
        ),
        // A `..` inside: the directory as the kernel resolves it, its
        // entries named below the lexical one.
        (
            "{D}/dd/../k.d",
            &[
                "dd@{D}/real/inner",
                "real/inner/10.conf",
                "real/k.d/10.conf",
                "k.d/10.conf",
            ],
        ),
    ];
    let (mut wrong, mut read) = (Vec::new(), 0);
    for (config_dir, tree) in cases {
        let dir = scratch_dir();
        let d = dir.path();
        let at_d = |s: &str| s.replace("{D}", &d.display().to_string());
        // This host runs cgroup v1, which kubelet refuses unless told.
        std::fs::write(
            d.join("c.yaml"),
            format!("{HEAD}failCgroupV1: false\nregisterWithTaints: [{{key: example.com/a, value: v, effect: NoExecute}}]\n"),
        )
        .unwrap();
        for entry in *tree {
            let (path, target) = match entry.split_once('@') {
                Some((p, t)) => (d.join(p), Some(at_d(t))),
                None => (d.join(entry), None),
            };
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            match target {
                Some(t) => symlink(t, &path).unwrap(),
                None => {
                    let key = entry.replace(['/', '.'], "-");
                    std::fs::write(&path, taint(&format!("x.example/{key}"))).unwrap()
                }
            }
        }
        let config_dir = at_d(config_dir);
        let real = real_kubelet_in(&kubelet, d, &config_dir);
        let fs = RootFs::new(Path::new("/"), d);
        let argv: Vec<std::ffi::OsString> = [
            "/usr/bin/kubelet".to_string(),
            format!("--config={}", d.join("c.yaml").display()),
            format!("--config-dir={config_dir}"),
        ]
        .into_iter()
        .map(Into::into)
        .collect();
        let additions = Additions {
            labels: Vec::new(),
            taints: parse_taints("x.example/ours:NoSchedule").unwrap(),
        };
        let ours = apply(&argv, &additions, Profile::Upstream, &fs)
            .map(|p| {
                let flag = p
                    .argv
                    .iter()
                    .filter_map(|a| a.to_str()?.strip_prefix("--register-with-taints="))
                    .next_back()
                    .unwrap_or("")
                    .to_string();
                flag.split(',')
                    .filter(|t| !t.is_empty() && *t != "x.example/ours=:NoSchedule")
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .map_err(|e| e.to_string());
        println!("--config-dir={config_dir} {tree:?}: kubelet {real:?}");
        read += usize::from(real.is_ok());
        if real.is_ok() != ours.is_ok() || (real.is_ok() && real != ours) {
            wrong.push(format!(
                "--config-dir={config_dir} {tree:?}\n  kubelet: {real:?}\n  ours:    {ours:?}"
            ));
        }
    }
    // Kubelet went past its configuration (to the missing kubeconfig) but
    // for the three trees it refuses (a `*.conf` link to a directory or to
    // nothing, no --config-dir): not stopped by this host or a flag.
    assert_eq!(read, cases.len() - 3, "trees kubelet read");
    assert!(
        wrong.is_empty(),
        "{} of {} trees differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}
