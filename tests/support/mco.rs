//! The MCO kubelet.service templates in ../shared/fixtures/mco, rendered as
//! MCO would for a single-stack IPv4 cluster (Go template placeholders filled
//! with plausible values). Read in place, never copied.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/mco")
}

/// The templates' directory, or a skip when ../shared is absent (a failure
/// under CI, which always has it).
pub fn require_fixtures() -> Option<PathBuf> {
    super::skipped::shared("fixtures/mco")
}

/// Value for each placeholder that is not a control directive.
fn placeholder(expr: &str) -> &'static str {
    match expr.trim() {
        "cloudProvider ." => "external",
        "cloudConfigFlag ." => "",
        "credentialProviderConfigFlag ." => {
            "--image-credential-provider-config=/etc/kubernetes/credential-providers/ecr-credential-provider.yaml \
             --image-credential-provider-bin-dir=/usr/libexec/kubelet-image-credential-provider-plugins"
        }
        ".Images.infraImageKey" => {
            "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1c2f9d8e7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d"
        }
        // manifests/userdata_secret.yaml's.
        ".Role" => "worker",
        ".PointerConfig" => "eyJpZ25pdGlvbiI6eyJ2ZXJzaW9uIjoiMy40LjAifX0=",
        other => panic!("unknown MCO template placeholder {{{{{other}}}}}"),
    }
}

/// Render a template body: IPFamilies is "IPv4", so every `if` on it is false.
/// `{{-` trims the newline before it, so dropping directive lines is exact.
pub fn fill(template: &str) -> String {
    let mut out = Vec::new();
    // One flag per open `if`: whether lines are taken.
    let mut taking: Vec<bool> = Vec::new();
    for line in template.lines() {
        let t = line.trim();
        if t.starts_with("{{- if") || t.starts_with("{{if") {
            assert!(t.contains(".IPFamilies"), "unexpected condition {t}");
            taking.push(false);
            continue;
        }
        if t == "{{- else}}" || t == "{{else}}" {
            let last = taking.last_mut().expect("else without if");
            *last = !*last;
            continue;
        }
        if t == "{{- end}}" || t == "{{end}}" {
            taking.pop().expect("end without if");
            continue;
        }
        if taking.iter().any(|taken| !taken) {
            continue;
        }
        let mut rendered = String::new();
        let mut rest = line;
        while let Some(start) = rest.find("{{") {
            let end = rest[start..].find("}}").expect("unclosed placeholder") + start;
            rendered += &rest[..start];
            rendered += placeholder(&rest[start + 2..end]);
            rest = &rest[end + 2..];
        }
        rendered += rest;
        out.push(rendered);
    }
    assert!(taking.is_empty(), "unclosed if");
    out.join("\n") + "\n"
}

/// The unit body of a `units/kubelet.service.yaml` template (`contents: |`).
pub fn unit_body(yaml: &str) -> String {
    let mut lines = yaml.lines().skip_while(|l| l.trim() != "contents: |");
    lines.next().expect("no contents: | in template");
    lines
        .map(|l| l.strip_prefix("  ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every kubelet.service template (not the common drop-in): (fixture name,
/// rendered unit text).
pub fn kubelet_units(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("reading fixtures")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("__units__kubelet.service.yaml") && !n.contains("__common__"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let yaml = std::fs::read_to_string(dir.join(&n)).unwrap();
            let unit = fill(&unit_body(&yaml));
            (n, unit)
        })
        .collect()
}

pub const KUBELET_CONF: &str = "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\n\
registerWithTaints:\n- key: example.com/from-config\n  effect: PreferNoSchedule\n";

/// A MachineConfig as MCO renders the kubelet part of a role.
pub fn mco_machineconfig(unit: &str) -> serde_json::Value {
    let conf = format!(
        "data:,{}",
        kubelet_labeler::cli::render::encoding::percent_encode(KUBELET_CONF.as_bytes())
    );
    serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": { "name": "01-worker-kubelet",
                      "labels": { "machineconfiguration.openshift.io/role": "worker" } },
        "spec": { "config": {
            "ignition": { "version": "3.4.0" },
            "storage": { "files": [ { "path": "/etc/kubernetes/kubelet.conf", "mode": 420,
                                      "contents": { "source": conf } },
                                    // The OS image's; carried here so both trees have it.
                                    { "path": "/etc/os-release", "mode": 420,
                                      "contents": { "source": "data:,ID=rhel%0AVERSION_ID=9.6%0A" } },
                                    // Written at boot by kubelet-auto-node-size.service.
                                    { "path": "/etc/node-sizing.env", "mode": 420,
                                      "contents": { "source": "data:,SYSTEM_RESERVED_MEMORY=1Gi%0ASYSTEM_RESERVED_CPU=500m%0A" } } ] },
            "systemd": { "units": [ { "name": "kubelet.service", "enabled": true, "contents": unit } ] }
        } }
    })
}

/// The MCO oracle (../shared/oracles/mco, see its README), unpacked once:
/// (its binary, the MCO tree it reads); a skip when absent.
pub fn oracle() -> Option<(PathBuf, PathBuf)> {
    let dir = super::skipped::shared("oracles/mco")?;
    let out = std::process::Command::new("bash")
        .arg(dir.join("unpack.sh"))
        .output()
        .expect("running unpack.sh");
    assert!(
        out.status.success(),
        "unpack.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines().map(PathBuf::from);
    Some((lines.next().unwrap(), lines.next().unwrap()))
}

/// [`oracle`] where it can run: as root (it chroots into the node's
/// files); elsewhere a skip with one line.
pub fn oracle_as_root() -> Option<(PathBuf, PathBuf)> {
    let found = oracle()?;
    if !super::is_root() {
        super::skipped::skipped("the MCO oracle needs root (it chroots into the node's files)");
        return None;
    }
    Some(found)
}

/// The MCO's install-time render of `pool` from the manifests in
/// `manifests` (its bootstrap), the node's files under `work`: the
/// oracle's JSON report on stdout.
pub fn boot_render(
    (oracle, mco_root): (&Path, &Path),
    manifests: &Path,
    pool: &str,
    work: &Path,
) -> std::process::Output {
    std::process::Command::new(oracle)
        .arg("-mco-root")
        .arg(mco_root)
        .arg("-manifests")
        .arg(manifests)
        .args(["-boot-pool", pool, "-work"])
        .arg(work)
        .output()
        .unwrap()
}

/// What every MCO template of kubelet.service (its units and its drop-ins,
/// every release of the fixtures) sets: (fixture name, directive, value),
/// e.g. `("…kubelet.service.yaml", "EnvironmentFile", "-/etc/os-release")`.
/// Template lines (`{{ … }}`) are left out; both branches of a condition
/// are taken (what any cluster may be served).
pub fn kubelet_service_directives(dir: &Path) -> Vec<(String, String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("reading fixtures")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("__units__kubelet"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for n in names {
        let yaml = std::fs::read_to_string(dir.join(&n)).unwrap();
        if !yaml.lines().any(|l| l.trim() == "name: kubelet.service") {
            continue;
        }
        for line in yaml.lines().map(str::trim) {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            if !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphabetic()) {
                out.push((n.clone(), key.to_string(), value.trim().to_string()));
            }
        }
    }
    out
}
