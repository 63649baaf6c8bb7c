//! What a registries.conf change costs (review 13 r13b F6): the MCO's
//! daemon reloads crio, and drains the node unless
//! `isSafeContainerRegistryConfChanges` judges the change safe. Each pair
//! of files is a pool of its own in one MCO oracle run (`-prev-manifests`,
//! `-policy`); plan must say the daemon's cost, or a drain where the
//! daemon's TOML reader refuses the file (the update fails) or where plan
//! cannot read the file as that reader does.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::mco_disruption::{daemon_cost, oracle, oracle_json, plan_run, render_to, wrapper};
use crate::support::scratch_dir;

/// One registry with one mirror.
const BASE: &str = "unqualified-search-registries = [\"registry.access.redhat.com\"]\n\
short-name-mode = \"enforcing\"\n\n[[registry]]\nlocation = \"quay.io/a\"\n\n\
[[registry.mirror]]\nlocation = \"m.example.com/a\"\n";

/// How plan's cost must compare with the daemon's.
#[derive(PartialEq)]
enum Want {
    /// The same cost.
    Same,
    /// plan refuses the change before pricing it (review 30 r30a F2):
    /// crio's start refuses the new file, or plan cannot judge it so
    /// (a key it does not know, a file it cannot read as crio's reader
    /// does); `plan_crio_start` and `crio_registries` test those.
    Refused,
}

/// `BASE` with `line` added after the registry's location.
fn in_registry(line: &str) -> String {
    BASE.replace("\"quay.io/a\"\n", &format!("\"quay.io/a\"\n{line}\n"))
}

/// `BASE` with `tail` appended.
fn with(tail: &str) -> String {
    format!("{BASE}{tail}")
}

/// The case whose earlier render has no registries.conf of its own.
const WRITTEN_FIRST: &str = "written over the MCO's own";

fn cases() -> Vec<(&'static str, String, String, Want)> {
    use Want::*;
    let mirror = |extra: &str| {
        with(&format!(
            "\n[[registry.mirror]]\nlocation = \"n.example.com/a\"\n{extra}"
        ))
    };
    let pull = |p: &str| with(&format!("pull-from-mirror = \"{p}\"\n"));
    let b = || BASE.to_string();
    vec![
        ("a digest-only mirror added", b(), mirror("pull-from-mirror = \"digest-only\"\n"), Same),
        // Review 16 r16b F3: the render writes the file first; before, the
        // pool held the MCO's own (its template), which the render lacks.
        (WRITTEN_FIRST, String::new(), mirror("pull-from-mirror = \"digest-only\"\n"), Same),
        ("a mirror added", b(), mirror(""), Same),
        ("a mirror added, pull-from-mirror all", b(), mirror("pull-from-mirror = \"all\"\n"), Same),
        ("a mirror added, tag-only", b(), mirror("pull-from-mirror = \"tag-only\"\n"), Same),
        (
            "a mirror added under mirror-by-digest-only",
            in_registry("mirror-by-digest-only = true"),
            mirror("").replace("\"quay.io/a\"\n", "\"quay.io/a\"\nmirror-by-digest-only = true\n"),
            Same,
        ),
        ("mirror-by-digest-only set", b(), in_registry("mirror-by-digest-only = true"), Same),
        ("a mirror removed", mirror(""), b(), Same),
        ("a registry removed", b(), "short-name-mode = \"enforcing\"\nunqualified-search-registries = [\"registry.access.redhat.com\"]\n".into(), Same),
        (
            "a registry added, digest-only mirrors",
            b(),
            with("\n[[registry]]\nlocation = \"r.io/b\"\n[[registry.mirror]]\nlocation = \"m.io/b\"\npull-from-mirror = \"digest-only\"\n"),
            Same,
        ),
        ("a registry added, blocked", b(), with("\n[[registry]]\nlocation = \"r.io/b\"\nblocked = true\n"), Same),
        (
            "a location changed under a prefix",
            in_registry("prefix = \"quay.io/a\""),
            in_registry("prefix = \"quay.io/a\"").replace("location = \"quay.io/a\"", "location = \"quay.io/z\""),
            Same,
        ),
        ("blocked flipped", b(), in_registry("blocked = true"), Same),
        ("insecure flipped", b(), in_registry("insecure = true"), Same),
        ("a mirror's insecure flipped", b(), with("insecure = true\n"), Same),
        ("pull-from-mirror to digest-only", pull("all"), pull("digest-only"), Same),
        ("pull-from-mirror from digest-only", pull("digest-only"), pull("all"), Same),
        (
            "search registries appended",
            b(),
            BASE.replace("redhat.com\"]", "redhat.com\", \"docker.io\"]"),
            Same,
        ),
        (
            "search registries reordered",
            BASE.replace("redhat.com\"]", "redhat.com\", \"docker.io\"]"),
            BASE.replace("[\"registry.access.redhat.com\"]", "[\"docker.io\", \"registry.access.redhat.com\"]"),
            Same,
        ),
        ("short-name-mode changed", b(), BASE.replace("enforcing", "disabled"), Same),
        ("aliases added", b(), with("\n[aliases]\n\"ubi\" = \"registry.access.redhat.com/ubi9\"\n"), Same),
        (
            "comments, whitespace, CRLF, a byte order mark",
            b(),
            format!("\u{feff}# mirrors\r\n\r\n{}", BASE.replace('\n', "  # x\r\n").replace(" = ", "=")),
            Same,
        ),
        (
            "odd quoting: quoted and escaped keys, literal and multi-line strings",
            b(),
            BASE.replace("location = \"quay.io/a\"", "\"\\u006Cocation\" = '''quay.io/a'''")
                .replace("location = \"m.example.com/a\"", "'location' = \"\"\"m.example.com/a\"\"\""),
            Same,
        ),
        ("keys in capitals", b(), BASE.replace("location", "LOCATION").replace("[[registry", "[[Registry"), Refused),
        ("a key by the Kelvin sign", b(), in_registry("\"bloc\u{212A}ed\" = true"), Refused),
        ("an inline array of tables", b(), "unqualified-search-registries = [\"registry.access.redhat.com\"]\nshort-name-mode = \"enforcing\"\nregistry = [{location = \"quay.io/a\", mirror = [{location = \"m.example.com/a\", pull-from-mirror = \"digest-only\"}]}]\n".into(), Same),
        ("aliases not a table (Go leaves it)", b(), format!("aliases = \"x\"\n{BASE}"), Refused),
        ("a key twice", b(), in_registry("blocked = false\nblocked = false"), Refused),
        ("two keys for one field", b(), in_registry("Location = \"quay.io/a\""), Refused),
        ("a wrong type", b(), BASE.replace("\"enforcing\"", "true"), Refused),
        ("mirror as a table", b(), in_registry("mirror.location = \"m.example.com/a\"").replace("\n[[registry.mirror]]\nlocation = \"m.example.com/a\"\n", "\n"), Refused),
        ("a TOML 1.1 trailing comma", b(), with("x = {a = \"b\",}\n"), Refused),
        ("a TOML 1.1 escape", b(), with("x = \"\\e\"\n"), Refused),
        ("a number under an unknown key", b(), BASE.replacen("short-name-mode", "x = 1e1000\nshort-name-mode", 1), Refused),
        ("a DEL in a string", b(), with("x = \"\u{7f}\"\n"), Refused),
        ("gzip bytes", b(), String::new(), Refused),
        // Review 17 r17b F1: the Go reader skips one byte order mark and
        // refuses the file at a second (the update fails); plan skipped
        // both and said safe.
        ("two byte order marks", b(), format!("\u{feff}\u{feff}{BASE}"), Refused),
        ("three byte order marks", b(), format!("\u{feff}\u{feff}\u{feff}{BASE}"), Refused),
    ]
}

/// A MachineConfig of pool `pool` writing registries.conf with `bytes`
/// (gzip-compressed when `gzip`), sorting after the MCO's own.
fn registries_mc(pool: &str, bytes: &[u8], gzip: bool) -> String {
    let contents = if gzip {
        use base64::Engine as _;
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut z, bytes).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(z.finish().unwrap());
        format!("{{source: \"data:;base64,{b64}\", compression: gzip}}")
    } else {
        let url: String = bytes.iter().fold(String::new(), |mut s, b| {
            let _ = write!(s, "%{b:02X}");
            s
        });
        format!("{{source: \"data:,{url}\"}}")
    };
    format!(
        "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  \
         name: 99-zz-{pool}-registries\n  labels:\n    machineconfiguration.openshift.io/role: \
         {pool}\nspec:\n  config:\n    ignition: {{version: 3.4.0}}\n    storage: {{files: [{{path: \
         /etc/containers/registries.conf, mode: 420, overwrite: true, contents: {contents}}}]}}\n"
    )
}

/// `render machineconfig` of each pool into one directory, each pool with
/// its registries.conf (`side`: 0 before, 1 after).
fn manifests(
    d: &Path,
    w: &Path,
    cases: &[(&str, String, String, Want)],
    side: usize,
) -> std::path::PathBuf {
    let out = d.join(["before", "after"][side]);
    let mut resources = Vec::new();
    for (i, (name, before, after, _)) in cases.iter().enumerate() {
        let pool = format!("reg-{i}");
        let one = d.join(format!("render-{side}-{i}"));
        let label = format!("node.kubernetes.io/{pool}=");
        render_to(
            &one,
            &[
                "--pool",
                &pool,
                "--wrapper",
                w.to_str().unwrap(),
                "--label",
                &label,
            ],
        );
        if i == 0 && side == 0 {
            std::fs::rename(
                one.join(format!("cluster-wide/machineconfiguration-{pool}.yaml")),
                d.join("policy.yaml"),
            )
            .unwrap();
        }
        std::fs::create_dir_all(&out).unwrap();
        for e in std::fs::read_dir(&one).unwrap() {
            let e = e.unwrap();
            let file = e.file_name().into_string().unwrap();
            if file.ends_with(".yaml") && file != "kustomization.yaml" {
                std::fs::rename(e.path(), out.join(&file)).unwrap();
                resources.push(file);
            }
        }
        let gzip = side == 1 && *name == "gzip bytes";
        let text = if side == 0 { before } else { after };
        let bytes = if gzip {
            BASE.as_bytes()
        } else {
            text.as_bytes()
        };
        if side == 0 && *name == WRITTEN_FIRST {
            continue;
        }
        let file = format!("99-zz-{pool}-registries.yaml");
        std::fs::write(out.join(&file), registries_mc(&pool, bytes, gzip)).unwrap();
        resources.push(file);
    }
    let list: String = resources.iter().map(|r| format!("- {r}\n")).collect();
    std::fs::write(
        out.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{list}"
        ),
    )
    .unwrap();
    out
}

#[test]
fn plan_prices_a_registries_conf_change_as_the_mcos_daemon() {
    if oracle().is_none() {
        return;
    }
    let dir = scratch_dir();
    let d = dir.path();
    let w = wrapper(d, b"1");
    let (cases, refused): (Vec<_>, Vec<_>) =
        cases().into_iter().partition(|c| c.3 != Want::Refused);
    assert!(!refused.is_empty());
    let before = manifests(d, &w, &cases, 0);
    let after = manifests(d, &w, &cases, 1);
    let policy = d.join("policy.yaml");
    let items: Vec<Value> = (0..cases.len())
        .map(|i| {
            serde_json::json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": format!("n-{i}"), "labels": {
                    "node-role.kubernetes.io/worker": "", format!("node.kubernetes.io/reg-{i}"): ""}},
                "status": {"nodeInfo": {"kubeletVersion": "v1.33.5"}}})
        })
        .collect();
    let fleet = d.join("fleet.json");
    std::fs::write(
        &fleet,
        serde_json::json!({"kind": "List", "items": items}).to_string(),
    )
    .unwrap();
    let report = oracle_json(&before, &after, &policy);
    let o = plan_run(&before, &after, &fleet, &policy);
    let p: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let mut failures = Vec::new();
    let mut seen = [0; 3];
    for (i, (name, _, _, want)) in cases.iter().enumerate() {
        let what = format!("reg-{i} nodes on the earlier render");
        let change = (report["changeFromPrevManifests"]
            .as_array()
            .into_iter()
            .flatten())
        .find(|c| c["what"].as_str().is_some_and(|w| w.starts_with(&what)))
        .unwrap_or_else(|| panic!("{name}: {:#}", report["changeFromPrevManifests"]));
        // The daemon's TOML reader refused a side: the update fails.
        let daemon = if change["withGivenPolicy"].is_null() {
            "fails"
        } else {
            daemon_cost(change).0
        };
        let group = (p["groups"].as_array().into_iter().flatten())
            .find(|g| {
                g["nodes"]
                    .as_array()
                    .is_some_and(|n| n.iter().any(|n| *n == format!("n-{i}")))
            })
            .unwrap_or_else(|| panic!("{name}: {p:#}"));
        let plan = group["outcome"]["disruption"].as_str().unwrap_or_default();
        seen[match daemon {
            "reload" => 0,
            "drain" => 1,
            _ => 2,
        }] += 1;
        let ok = match (want, daemon) {
            (Want::Same, "fails") => plan == "drain",
            (Want::Same, _) => plan == daemon,
            (Want::Refused, _) => false,
        };
        if !ok {
            failures.push(format!(
                "{name}: the MCO's daemon: {daemon} ({change}); plan: {:#}",
                group["outcome"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // Each verdict is exercised: a reload, a drain (a file the daemon
    // refuses, crio's start refuses too: plan refuses it, `Refused`).
    assert!(seen[..2].iter().all(|n| *n > 0), "{seen:?}");
}
