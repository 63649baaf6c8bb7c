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

/// A pull request's other MachineConfig for the pool, named `name`, whose
/// `spec.config` (after its Ignition version) is `config`, YAML indented
/// for `spec.config`'s keys (its own `ignition:` first, if it has one).
fn extra_mc(name: &str, config: &str) -> String {
    let version = if config.starts_with("    ignition:") {
        ""
    } else {
        "    ignition: {version: 3.4.0}\n"
    };
    format!(
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  \
         name: {name}\n  labels:\n    machineconfiguration.openshift.io/role: worker-gpu\n\
         spec:\n  config:\n{version}{config}"
    )
}

/// The oracle's errors for the manifest file `file` (its decode and
/// `ValidateMachineConfig` alone).
fn oracle_errors(report: &Value, file: &str) -> String {
    report["decoded"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["file"] == file)
        .flat_map(|d| d["errors"].as_array().cloned().unwrap_or_default())
        .map(|e| e.as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Review 10 (r10b F1, F3): a pull request adding a taint and, for the
/// same pool, a MachineConfig with a mistyped or invalid Ignition field
/// (`mask: "yes"`, a short hash, `append` without a source...). The MCO
/// refuses that MachineConfig (`ValidateMachineConfig`: Ignition's Go JSON
/// reader and `Validate()`) or cannot serve the pool's config with it, so
/// no node gets the taint; plan showed the GPU nodes registering with it.
/// Now plan refuses each (exit 2), naming the file, the MachineConfig and
/// the JSON path; the oracle refuses each too. The valid controls (a mode
/// written `420.0`, explicit `mask: false`, nulls, `overwrite: false`
/// without a source) are rendered and served by the MCO and planned with
/// the taint.
#[test]
fn ignition_fields_the_mco_refuses_are_refused_and_valid_ones_read() {
    const FILE: &str = "    storage:\n      files:\n      - path: /etc/a\n";
    const SRC: &str = "        contents: {source: \"data:,x\"}\n";
    const UNIT: &str = "    systemd:\n      units:\n      - name: acme-x.service\n";
    let sha512 = "0".repeat(128);
    // (case, spec.config after the version, plan's words, the MCO's words;
    // "" when the MCO's Machine Config Server refuses the pool's config)
    let refused: Vec<(&str, String, &str, &str)> = vec![
        (
            "mask \"yes\"",
            format!("{UNIT}        mask: \"yes\"\n"),
            "$.systemd.units.0.mask is \"yes\": Ignition reads true or false there",
            "units.0.mask of type bool",
        ),
        (
            "enabled \"no\"",
            format!("{UNIT}        enabled: \"no\"\n"),
            "$.systemd.units.0.enabled is \"no\"",
            "units.0.enabled of type bool",
        ),
        (
            "overwrite \"true\"",
            format!("{FILE}{SRC}        overwrite: \"true\"\n"),
            "$.storage.files.0.overwrite is \"true\"",
            "files.0.overwrite of type bool",
        ),
        (
            "mode \"420\"",
            format!("{FILE}{SRC}        mode: \"420\"\n"),
            "$.storage.files.0.mode is \"420\": Ignition reads an integer",
            "files.0.mode of type int",
        ),
        (
            "mode 420.5",
            format!("{FILE}{SRC}        mode: 420.5\n"),
            "cannot unmarshal number 420.5 into Go struct field Config.storage.files.0.mode",
            "number 420.5",
        ),
        (
            "user name 1",
            "    passwd:\n      users:\n      - name: 1\n".to_string(),
            "$.passwd.users.0.name is 1",
            "users.0.name of type string",
        ),
        (
            "sshAuthorizedKeys a string",
            "    passwd:\n      users:\n      - name: core\n        sshAuthorizedKeys: \"ssh-ed25519 AAAA\"\n".to_string(),
            "$.passwd.users.0.sshAuthorizedKeys is \"ssh-ed25519 AAAA\"",
            "sshAuthorizedKeys of type",
        ),
        (
            "files an object",
            "    storage:\n      files: {path: /etc/a}\n".to_string(),
            "$.storage.files is an object",
            "storage.files of type",
        ),
        (
            "httpTotal \"10\"",
            "    ignition: {version: 3.4.0, timeouts: {httpTotal: \"10\"}}\n".to_string(),
            "$.ignition.timeouts.httpTotal is \"10\"",
            "httpTotal of type int",
        ),
        (
            "hash sha512-zz",
            format!("{FILE}        contents: {{source: \"data:,x\", verification: {{hash: sha512-zz}}}}\n"),
            "$.storage.files.0.contents.verification.hash: Ignition refuses it (incorrect size for hash sum)",
            "incorrect size for hash sum",
        ),
        (
            "hash md5",
            format!("{FILE}        contents: {{source: \"data:,x\", verification: {{hash: md5-{}}}}}\n", "0".repeat(32)),
            "verification.hash: Ignition refuses it (unrecognized hash function)",
            "unrecognized hash function",
        ),
        (
            "a hash without a source",
            format!("{FILE}        overwrite: false\n        contents: {{verification: {{hash: sha512-{sha512}}}}}\n"),
            "source must be specified if verification is specified",
            "source must be specified if verification is specified",
        ),
        (
            "source ftp://",
            format!("{FILE}        contents: {{source: \"ftp://example.com/a\"}}\n"),
            "$.storage.files.0.contents.source: Ignition refuses it (invalid url scheme)",
            "invalid url scheme",
        ),
        (
            "httpHeaders on a data URL",
            format!("{FILE}        contents: {{source: \"data:,x\", httpHeaders: [{{name: a, value: b}}]}}\n"),
            "cannot use HTTP headers with this source scheme",
            "cannot use HTTP headers with this source scheme",
        ),
        (
            "a dirty path",
            "    storage:\n      files:\n      - path: /etc/./a\n        contents: {source: \"data:,x\"}\n".to_string(),
            "$.storage.files.0.path: Ignition refuses it (path is not fully simplified)",
            "path is not fully simplified",
        ),
        (
            "owner id and name",
            format!("{FILE}{SRC}        user: {{id: 0, name: root}}\n"),
            "$.storage.files.0.user: Ignition refuses it (cannot set both id and name)",
            "cannot set both id and name",
        ),
        (
            "a directory mode past 07777",
            "    storage:\n      directories:\n      - path: /etc/d\n        mode: 99999\n".to_string(),
            "$.storage.directories.0.mode: Ignition refuses it (illegal file mode)",
            "illegal file mode",
        ),
        (
            "a link without target",
            "    storage:\n      links:\n      - path: /etc/l\n".to_string(),
            "$.storage.links.0.target: Ignition refuses it (link target is required)",
            "link target is required",
        ),
        (
            "a file under a link",
            "    storage:\n      links:\n      - {path: /etc/l, target: /tmp}\n      files:\n      - path: /etc/l/a\n        contents: {source: \"data:,x\"}\n".to_string(),
            "$.storage.files.0: Ignition refuses it (file path includes link in config)",
            "file path includes link in config",
        ),
        (
            "a hard link to a directory",
            "    storage:\n      directories:\n      - path: /etc/d\n      links:\n      - {path: /etc/l, target: /etc/d, hard: true}\n".to_string(),
            "$.storage.links.0: Ignition refuses it (hard link target is a directory)",
            "hard link target is a directory",
        ),
        (
            "a file at a unit's path",
            format!("{UNIT}        contents: \"[Unit]\\n\"\n    storage:\n      files:\n      - path: /etc/systemd/system/acme-x.service\n{SRC}"),
            "$.storage.files.0.path: Ignition refuses it (path conflicts with systemd unit or dropin)",
            "path conflicts with systemd unit or dropin",
        ),
        (
            "a unit section without its ]",
            format!("{UNIT}        contents: \"[Unit\\nDescription=x\\n\"\n"),
            "invalid unit content: unable to find end of section",
            "unable to find end of section",
        ),
        (
            "a unit option without =",
            format!("{UNIT}        contents: \"[Service]\\nExecStart\\n\"\n"),
            "invalid unit content: unexpected newline encountered while parsing option name",
            "unexpected newline encountered while parsing option name",
        ),
        (
            "a drop-in option without =",
            format!("{UNIT}        dropins:\n        - {{name: a.conf, contents: \"[Service]\\nX\"}}\n"),
            "$.systemd.units.0.dropins.0.contents: Ignition refuses it (invalid unit content: EOF)",
            "invalid unit content: EOF",
        ),
        (
            "an ssh key twice",
            "    passwd:\n      users:\n      - name: core\n        sshAuthorizedKeys: [ssh-ed25519 AAAA, ssh-ed25519 AAAA]\n".to_string(),
            "$.passwd.users.0.sshAuthorizedKeys.1: Ignition refuses it (duplicate entry defined)",
            "duplicate entry defined",
        ),
        (
            "a kernel argument kept and dropped",
            "    kernelArguments: {shouldExist: [a=1], shouldNotExist: [a=1]}\n".to_string(),
            "$.kernelArguments.shouldNotExist.0: Ignition refuses it (duplicate entry defined)",
            "duplicate entry defined",
        ),
        (
            "a file without a source",
            format!("{FILE}        mode: 420\n"),
            "storage file /etc/a: no MachineConfig of the pool gives it contents.source, and the MCO's merge sets its `overwrite` to true",
            "",
        ),
        (
            "append without a source (F3 addendum)",
            format!("{FILE}        append: [{{source: \"data:,x\"}}]\n"),
            "storage file /etc/a: no MachineConfig of the pool gives it contents.source",
            "",
        ),
    ];
    let accepted = [
        format!("{FILE}{SRC}        mode: 420.0\n        overwrite: null\n        user: {{name: null}}\n"),
        format!("{UNIT}        mask: false\n        enabled: true\n        contents: \"[Unit]\\nDescription=x \\\\\\n  y\\n# c \\\\\\n[Service]\\nExecStart=/bin/true\\n[Install]\\nWantedBy=multi-user.target\\n\"\n"),
        "    storage:\n      files:\n      - {path: /etc/b, overwrite: false, mode: 384}\n      - path: /etc/c\n        contents: {source: \"data:,\", compression: \"\", verification: {hash: null}, httpHeaders: []}\n".to_string(),
        // No source of its own: the first control's /etc/a gives it.
        "    storage:\n      files:\n      - {path: /etc/a, mode: 384}\n".to_string(),
    ];
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &[]);
    let fleet = repo().join("examples/fleet/fleet.json");
    let oracle = mco::oracle_as_root();
    let with = |dir: &Path, files: &[(String, String)]| {
        render(dir, &["--taint", TAINT]);
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        crate::support::relist_kustomization(dir, &names, &[]);
    };
    // Plan: each refused, naming the file, the MachineConfig and the path.
    let mut wrong = Vec::new();
    let mut validated = Vec::new();
    for (i, (case, config, says, mco_says)) in refused.iter().enumerate() {
        let (file, name) = (
            format!("99-worker-gpu-extra-{i}.yaml"),
            format!("99-worker-gpu-extra-{i}"),
        );
        let text = extra_mc(&name, config);
        let pr = tmp.path().join(format!("pr{i}"));
        with(&pr, &[(file.clone(), text.clone())]);
        let o = plan(&base, &pr, &fleet, &[]);
        let e = stderr(&o);
        // (The pool's merged files are judged after each file's own: the
        // MachineConfig, not its file, is named.)
        let named = if mco_says.is_empty() {
            format!("MachineConfig \"{name}\"")
        } else {
            format!("{file}: MachineConfig \"{name}\"")
        };
        if o.status.code() != Some(2) || !e.contains(says) || !e.contains(&named) {
            wrong.push(format!("plan, {case}: {:?} {e}", o.status.code()));
        }
        if mco_says.is_empty() {
            // Refused by the Machine Config Server: one render of its own.
            if let Some((oracle, root)) = &oracle {
                let got = judged((oracle, root), &pr, &tmp.path().join(format!("work{i}")));
                assert_eq!(got, Mco::Refuses, "{case}: the MCO's side");
            }
        } else {
            validated.push((case, file, text, mco_says));
        }
    }
    assert!(
        wrong.is_empty(),
        "not refused as expected:\n{}",
        wrong.join("\n")
    );
    // The MCO: ValidateMachineConfig refuses each of them (one render, one
    // file each).
    if let Some((oracle, root)) = &oracle {
        let all = tmp.path().join("all");
        let files: Vec<(String, String)> = validated
            .iter()
            .map(|(_, f, t, _)| (f.clone(), t.clone()))
            .collect();
        with(&all, &files);
        let o = mco::boot_render((oracle, root), &all, "worker-gpu", &tmp.path().join("wall"));
        let report: Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
        for (case, file, _, mco_says) in &validated {
            let errors = oracle_errors(&report, file);
            assert!(
                errors.contains(*mco_says),
                "{case}: the MCO says {errors:?}"
            );
        }
    }
    // The controls: planned with the taint, rendered and served by the MCO.
    let ok = tmp.path().join("ok");
    let files: Vec<(String, String)> = accepted
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let name = format!("99-worker-gpu-ok-{i}");
            (format!("{name}.yaml"), extra_mc(&name, c))
        })
        .collect();
    with(&ok, &files);
    let own = ["--format", "json", "--own-unit-prefix", "acme-"];
    let o = plan(&base, &ok, &fleet, &own);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let gpu = json(&o)["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["outcome"]["pool_after"] == "worker-gpu")
        .cloned()
        .unwrap();
    assert_eq!(
        gpu["outcome"]["register_after"]["taints"][0], TAINT,
        "{gpu}"
    );
    if let Some((oracle, root)) = &oracle {
        let got = judged((oracle, root), &ok, &tmp.path().join("wok"));
        assert_eq!(
            got,
            Mco::ServesWithoutTaint(false),
            "the controls: the MCO's side"
        );
    }
}

/// Ignition parses unit and drop-in contents with go-systemd's
/// `unit.Deserialize` and refuses the config on its error: a differential
/// of plan's refusals against the MCO oracle's (`ValidateMachineConfig`),
/// one MachineConfig per text, on the lexer's edges (sections over lines,
/// text before the first section, comments continued with `\`, a `\r`
/// kept before `\n`, an option name at the end of the text...).
#[test]
fn unit_contents_are_refused_as_ignition_parses_them() {
    let texts = [
        "",
        "[Unit]",
        "[Unit]\n",
        "[Unit] x\n",
        "[Unit]]\n",
        "[Unit]\r\nA=b\r\n",
        "A=b\n[Unit]\n",
        "x[y]\nA=b\n",
        "x[y\n",
        "[Un\nit]\nA=b\n",
        "[Unit]\n[",
        "[Unit]\n  A=b\n",
        "[Unit]\nA\n",
        "[Unit]\nA",
        "[Unit]\nA=",
        "[Unit]\n=x\n",
        "[Unit]\nA\r=b\n",
        "[Unit]\nA=b\\\n",
        "[Unit]\nA=b \\\nc\n",
        "[Unit]\nA=b\\\r\nc\n",
        "[Unit]\nA=b\\\n\nc\n",
        "[Unit]\n#c\\\nA\n",
        "[Unit]\n# c \\ \nA\n",
        "[Unit]\n# c \\  \nA\n",
        "[Unit]\n;x\nA=b\n",
        "[Unit]\n\u{a0}A=b\n",
        "[Unit]\n\tA\tB = c\n",
        "\u{feff}[Unit]\nA=b\n",
        "[Unit]\nA=b\r",
        "# c\\\n[Unit]\nA\n",
    ];
    let tmp = scratch_dir();
    let dir = tmp.path().join("units");
    render(&dir, &[]);
    let mut ours = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let mc = serde_json::json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": {"name": format!("99-u-{i}"),
                         "labels": {"machineconfiguration.openshift.io/role": "worker-gpu"}},
            "spec": {"config": {"ignition": {"version": "3.4.0"}, "systemd": {"units": [
                {"name": "u.service", "dropins": [{"name": "a.conf", "contents": text}]}]}}}
        });
        let file = format!("99-u-{i}.json");
        std::fs::write(dir.join(&file), mc.to_string()).unwrap();
        let refused = kubelet_labeler::cli::render::applied::check_documents(&[mc], &file);
        ours.push((file, refused.err().map(|e| format!("{e:#}"))));
    }
    let Some((oracle, root)) = mco::oracle_as_root() else {
        return;
    };
    let o = mco::boot_render((&oracle, &root), &dir, "worker-gpu", &tmp.path().join("w"));
    let report: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    let differ: Vec<String> = texts
        .iter()
        .zip(&ours)
        .filter_map(|(text, (file, ours))| {
            let theirs = oracle_errors(&report, file);
            (ours.is_some() == theirs.is_empty())
                .then(|| format!("{text:?}: plan {ours:?}, the MCO {theirs:?}"))
        })
        .collect();
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    assert!(ours.iter().any(|(_, e)| e.is_some()) && ours.iter().any(|(_, e)| e.is_none()));
}
