//! A pull request's MachineConfigs that kubectl, kustomize, Argo CD, Flux
//! or the MCO read otherwise than `plan` and `explain --machineconfig`
//! (review 9: F3, F4, F5, F6, F8). Each was planned as the nodes keeping
//! their taint while they register without it, or gaining one they never
//! get: now plan (exit 2) and explain refuse them, naming what differs.
//! The MCO oracle judges the MCO's side of each, and the data URLs and
//! fields both read are differential cases: the MCO refuses the render
//! exactly where plan refuses the pull request.

use std::path::Path;

use serde_json::Value;

use crate::plan::{json, plan, render};
use crate::support::{bin, mco, repo, scratch_dir, stderr};

const LABELS: &str = "50-worker-gpu-kubelet-labeler-labels.yaml";
const TAINT: &str = "nvidia.com/gpu=present:NoSchedule";
const ENV: &str = "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf";

/// What the MCO does with a pull request, as the oracle tells it.
#[derive(Debug, PartialEq)]
enum Mco {
    /// Refuses the MachineConfig: no config rendered for the pool.
    Refuses,
    /// Renders and serves it; the node's env drop-ins then carry no taint
    /// (true) or the taint (false).
    ServesWithoutTaint(bool),
    /// Not the MCO's doing (kubectl, kustomize): not run.
    NotJudged,
}

/// The labels MachineConfig with its env file's `source:` replaced.
fn with_source(text: &str, source: &str) -> String {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
        if l.trim_start().starts_with("source: >-") {
            out.push(format!("          source: {source:?}"));
            while lines.peek().is_some_and(|n| n.starts_with("            ")) {
                lines.next();
            }
        } else {
            out.push(l.to_string());
        }
    }
    out.join("\n") + "\n"
}

/// The env file's text as the render wrote it (percent-decoded).
fn env_text(text: &str) -> String {
    let mc = &kubelet_labeler::cli::render::layout::machineconfigs_from_yaml(text, "x").unwrap()[0];
    let source = mc
        .pointer("/spec/config/storage/files/0/contents/source")
        .unwrap();
    let bytes =
        kubelet_labeler::cli::render::layout::decode_data_url(source.as_str().unwrap(), None)
            .unwrap();
    String::from_utf8(bytes).unwrap()
}

/// `text` %-encoded but for letters, digits and `-./`.
fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn b64(text: &str) -> String {
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, text)
}

fn explain_dir(dir: &Path) -> std::process::Output {
    bin()
        .args(["explain", "--machineconfig"])
        .arg(dir)
        .output()
        .unwrap()
}

/// The MCO oracle on `dir`: whether it refused the pool's render, and
/// whether the node's served env drop-ins carry the taint.
fn judged(oracle: (&Path, &Path), dir: &Path, work: &Path) -> Mco {
    let o = mco::boot_render(oracle, dir, "worker-gpu", work);
    let report: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    if report["summary"]["mcoValidationErrors"].as_u64() != Some(0) {
        return Mco::Refuses;
    }
    let dropins = work.join("node-root/etc/systemd/system/kubelet.service.d");
    let tainted = std::fs::read_dir(&dropins)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .any(|t| {
            t.contains(&format!(
                "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS={TAINT}"
            ))
        });
    Mco::ServesWithoutTaint(!tainted)
}

#[test]
fn plan_refuses_machineconfigs_the_cluster_reads_otherwise() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &["--taint", TAINT]);
    let notaint = tmp.path().join("notaint");
    render(&notaint, &[]);
    let labels = std::fs::read_to_string(base.join(LABELS)).unwrap();
    let env = env_text(&labels);
    let no_taint_env: String = env
        .lines()
        .filter(|l| !l.contains("TAINTS"))
        .map(|l| format!("{l}\n"))
        .collect();
    // The labels MachineConfig renamed to a second one writing its own
    // env drop-in (the taint moved there), for the cases that hide it.
    let taints_mc = labels
        .replace(
            "name: 50-worker-gpu-kubelet-labeler-labels\n",
            "name: 51-worker-gpu-kubelet-labeler-taints\n",
        )
        .replace(
            ENV,
            "/etc/systemd/system/kubelet.service.d/95-kubelet-labeler-taints.conf",
        );
    let after_source = |extra: &str| {
        let mut out = String::new();
        let mut in_source = false;
        for l in labels.lines() {
            if in_source && !l.starts_with("            ") {
                out.push_str(extra);
                in_source = false;
            }
            in_source |= l.trim_start().starts_with("source: >-");
            out.push_str(l);
            out.push('\n');
        }
        if in_source {
            out.push_str(extra);
        }
        out
    };
    let version = "      version: \"3.4.0\"\n";
    let inner = r#"{"ignition":{"version":"3.4.0"},"systemd":{"units":[{"name":"kubelet.service","dropins":[{"name":"95-x.conf","contents":"[Service]\nEnvironment=FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=\n"}]}]}}"#;
    // (name, the labels file, an added file, what plan says, the MCO's side)
    let cases: Vec<(&str, String, Option<String>, &str, Mco)> = vec![
        (
            "F3 ſource beside source",
            after_source(&format!(
                "          \u{17f}ource: \"data:,{}\"\n",
                percent(&no_taint_env)
            )),
            None,
            "contents.\"\u{17f}ource\": the MCO (Go's JSON reader",
            Mco::ServesWithoutTaint(true),
        ),
        (
            "F4 items on a MachineConfig",
            std::fs::read_to_string(notaint.join(LABELS)).unwrap(),
            Some(format!("{taints_mc}items: []\n")),
            "has a top-level `items`: kubectl",
            Mco::NotJudged,
        ),
        (
            "F5 ignition.config.merge",
            labels.replacen(
                version,
                &format!(
                    "{version}      config:\n        merge:\n        - source: \"data:,{}\"\n",
                    percent(inner)
                ),
                1,
            ),
            None,
            "spec.config.ignition.config.merge: the MCO serves it",
            Mco::ServesWithoutTaint(false),
        ),
        (
            "F6 local-config",
            std::fs::read_to_string(notaint.join(LABELS)).unwrap(),
            Some(taints_mc.replacen(
                "  annotations:\n",
                "  annotations:\n    config.kubernetes.io/local-config: \"true\"\n",
                1,
            )),
            "is annotated config.kubernetes.io/local-config: \"true\": kustomize",
            Mco::NotJudged,
        ),
        (
            "F8 a raw # in the data",
            labels.replacen("data:,%23%20kubelet", "data:,#%20kubelet", 1),
            None,
            "invalid data character; Ignition (RFC 2397) refuses it",
            Mco::Refuses,
        ),
        (
            "F8 ;BASE64",
            with_source(&labels, &format!("data:;BASE64,{}", b64(&env))),
            None,
            "expected base64, got BASE64",
            Mco::Refuses,
        ),
        (
            "F8 a parameter after ;base64",
            with_source(&labels, &format!("data:;base64;x=y,{}", b64(&env))),
            None,
            "invalid character for parameter attribute",
            Mco::Refuses,
        ),
        (
            "F8 a space before the comma",
            with_source(&labels, &format!("data:text/plain ,{}", percent(&env))),
            None,
            "invalid character for media subtype",
            Mco::Refuses,
        ),
        (
            "F8 a newline in base64 data",
            with_source(
                &labels,
                &format!("data:;base64,{}", b64(&env).replacen('A', "\nA", 1)),
            ),
            None,
            "invalid control character in URL",
            Mco::Refuses,
        ),
        (
            "F8 ignition.version 3.9.0",
            labels.replacen(version, "      version: \"3.9.0\"\n", 1),
            None,
            "version \"3.9.0\": no Ignition version the MCO reads",
            Mco::Refuses,
        ),
        (
            "F8 no ignition.version",
            labels.replacen(&format!("    ignition:\n{version}"), "", 1),
            None,
            "spec.config.ignition.version is missing",
            Mco::Refuses,
        ),
        (
            "F8 kernelType bogus",
            labels.replacen("spec:\n", "spec:\n  kernelType: bogus\n", 1),
            None,
            "spec.kernelType \"bogus\" is no kernel type the MCO knows",
            Mco::Refuses,
        ),
        (
            "F8 an unknown extension",
            labels.replacen("spec:\n", "spec:\n  extensions: [bogus-ext]\n", 1),
            None,
            "spec.extensions: \"bogus-ext\" is no extension the MCO knows",
            Mco::Refuses,
        ),
        (
            "F8 one path twice",
            labels.replacen(
                "      files:\n",
                &format!("      files:\n      - path: {ENV}\n        mode: 420\n"),
                1,
            ),
            None,
            "files[1].path /etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf: a \
             second entry for one path",
            Mco::Refuses,
        ),
    ];
    let fleet = repo().join("examples/fleet/fleet.json");
    let oracle = mco::oracle_as_root();
    let mut read = Vec::new();
    for (i, (case, text, added, says, mco_side)) in cases.into_iter().enumerate() {
        let pr = tmp.path().join(format!("pr{i}"));
        render(&pr, &[]);
        assert_ne!(
            text, labels,
            "{case}: the pull request changes the labels file"
        );
        std::fs::write(pr.join(LABELS), text).unwrap();
        if let Some(added) = added {
            let name = "51-worker-gpu-kubelet-labeler-taints.yaml";
            std::fs::write(pr.join(name), added).unwrap();
            crate::support::relist_kustomization(&pr, &[name], &[]);
        }
        // Every case run, the ones plan or explain read collected.
        let o = plan(&base, &pr, &fleet, &[]);
        if o.status.code() != Some(2) || !stderr(&o).contains(says) {
            read.push(format!(
                "plan, {case}: {:?} {}",
                o.status.code(),
                stderr(&o)
            ));
        }
        let o = explain_dir(&pr);
        if o.status.success() || !stderr(&o).contains(says) {
            read.push(format!(
                "explain, {case}: {:?} {}",
                o.status.code(),
                stderr(&o)
            ));
        }
        if let Some((oracle, root)) = &oracle
            && mco_side != Mco::NotJudged
        {
            let work = tmp.path().join(format!("work{i}"));
            let got = judged((oracle, root), &pr, &work);
            assert_eq!(got, mco_side, "{case}: the MCO's side");
        }
    }
    assert!(read.is_empty(), "not refused:\n{}", read.join("\n"));
}

/// The other side of the differential: data URLs and fields the MCO
/// renders (other spellings than render's own) are read, and plan shows
/// the taint the oracle's served node gets.
#[test]
fn what_the_mco_renders_is_read() {
    let tmp = scratch_dir();
    let notaint = tmp.path().join("notaint");
    render(&notaint, &[]);
    let base = tmp.path().join("base");
    render(&base, &["--taint", TAINT]);
    let labels = std::fs::read_to_string(base.join(LABELS)).unwrap();
    let env = env_text(&labels);
    let fleet = repo().join("examples/fleet/fleet.json");
    let oracle = mco::oracle_as_root();
    for (i, text) in [
        with_source(
            &labels,
            &format!("data:text/plain;charset=\"utf-8\";base64,{}", b64(&env)),
        ),
        with_source(
            &labels,
            &format!("data:application/octet-stream;x-a=%41,{}", percent(&env)),
        ),
        labels
            .replacen(
                "spec:\n",
                "spec:\n  kernelType: default\n  extensions: [usbguard]\n",
                1,
            )
            .replacen("version: \"3.4.0\"", "version: \"3.2.0\"", 1),
    ]
    .into_iter()
    .enumerate()
    {
        let pr = tmp.path().join(format!("pr{i}"));
        render(&pr, &[]);
        std::fs::write(pr.join(LABELS), text).unwrap();
        let o = plan(&notaint, &pr, &fleet, &["--format", "json"]);
        assert_eq!(o.status.code(), Some(1), "{i}: {}", stderr(&o));
        let gpu = json(&o)["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["outcome"]["pool_after"] == "worker-gpu")
            .cloned()
            .unwrap();
        assert_eq!(
            gpu["outcome"]["register_after"]["taints"][0], TAINT,
            "{i}: {gpu}"
        );
        if let Some((oracle, root)) = &oracle {
            let work = tmp.path().join(format!("work{i}"));
            let got = judged((oracle, root), &pr, &work);
            assert_eq!(got, Mco::ServesWithoutTaint(false), "{i}: the MCO's side");
        }
    }
}
