//! `render machineconfig|ignition` against the real readers: ignition-validate,
//! a YAML 1.1 reader (PyYAML), real Ignition writing a first boot's files,
//! and real systemd starting MCO's kubelet.service with them.

use crate::support::{
    elf, ignition_oracle, mco, readme_figures, repo, scratch_dir, skipped, systemd_oracle,
};

use skipped::need;

use std::path::{Path, PathBuf};
use std::process::Command;

use kubelet_labeler::cli::render::dropins;
use kubelet_labeler::cli::render::encoding::{DataUrl, decode};
use kubelet_labeler::cli::render::machineconfig::{self, Arch, PoolOptions};
use kubelet_labeler::node::kubelet::{Additions, Profile};
use serde_json::Value;

fn pyyaml_ok() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import yaml"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skipped::skipped("python3 with PyYAML is missing (apt-get install python3-yaml)");
    }
    ok
}

/// Read YAML (one document or a stream) with PyYAML, a YAML 1.1 reader.
fn pyyaml(text: &str) -> Vec<Value> {
    let dir = scratch_dir();
    let f = dir.path().join("in.yaml");
    std::fs::write(&f, text).unwrap();
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys,yaml,json; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "PyYAML: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn example_wrapper() -> Vec<u8> {
    let text = std::fs::read_to_string(
        repo().join("machineconfigs/50-worker-gpu-kubelet-labeler-wrapper.yaml"),
    )
    .unwrap();
    let obj = serde_json::to_value(serde_saphyr::from_str::<Value>(&text).unwrap()).unwrap();
    let contents = &obj["spec"]["config"]["storage"]["files"][0]["contents"];
    decode(&DataUrl {
        source: contents["source"].as_str().unwrap().to_string(),
        compression: contents["compression"].as_str().map(|_| "gzip"),
    })
    .unwrap()
}

fn fake_static_elf() -> Vec<u8> {
    elf::static_elf(kubelet_labeler::cli::render::arch::Arch::X86_64)
}

fn opts(
    labels: &[(&str, &str)],
    pool_label: Option<(&str, &str)>,
    version: &'static str,
) -> PoolOptions {
    PoolOptions {
        pool: "worker-gpu".into(),
        additions: Additions {
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            taints: kubelet_labeler::node::kubelet::parse_taints("nvidia.com/gpu=true:NoSchedule")
                .unwrap(),
        },
        pool_label: pool_label.map(|(k, v)| (k.into(), v.into())),
        base_role: "worker".into(),
        ignition_version: version,
        // render carries the bytes it is given (the CLI checks they are our
        // wrapper): the header alone keeps the snapshot small.
        wrappers: vec![(Arch::X86_64, elf::foreign_static_elf(Arch::X86_64))],
        node_rules: Default::default(),
        builtin_role: false,
    }
}

/// YAML-1.1-ambiguous strings come back from PyYAML as the same strings.
#[test]
fn yaml_reads_back_unchanged_in_yaml_1_1() {
    if !pyyaml_ok() {
        return;
    }
    // Valid label values go through the whole render (pool label + labels).
    let valid = [
        "yes", "on", "off", "y", "n", "null", "1_000", "0o17", "0x1F", "Yes", "NO", "true", "1e3",
        "0644",
    ];
    for v in valid {
        let o = opts(
            &[("example.com/v", v)],
            Some(("example.com/pool", v)),
            "3.4.0",
        );
        let rendered = machineconfig::render(&o).unwrap();
        let stream = machineconfig::to_stream(&rendered).unwrap();
        let back = pyyaml(&stream);
        let ours: Vec<Value> = rendered
            .manifests
            .iter()
            .map(|(_, v)| v.clone())
            // The stream leaves out the cluster-wide policy too.
            .filter(|v| v["kind"] != "Kustomization" && v["kind"] != "MachineConfiguration")
            .collect();
        assert_eq!(back, ours, "label value {v:?}");
        // The files --output-dir writes, one by one (kustomization too).
        for (name, obj) in &rendered.manifests {
            let text = machineconfig::to_yaml(obj).unwrap();
            assert_eq!(pyyaml(&text), vec![obj.clone()], "{name}, value {v:?}");
        }
    }
    // Values kubelet refuses as labels still must survive the emitter.
    for v in [
        "~",
        "12:30",
        "2001-12-14",
        "",
        " lead",
        "a: b",
        "#x",
        "- x",
        "'q'",
        "\"dq\"",
        "multi\nline\n",
    ] {
        let obj = serde_json::json!({ "k": v, "list": [v] });
        assert_eq!(
            pyyaml(&machineconfig::to_yaml(&obj).unwrap()),
            vec![obj],
            "{v:?}"
        );
    }
}

#[test]
fn every_ignition_config_passes_ignition_validate() {
    if !need("ignition-validate") || !pyyaml_ok() {
        return;
    }
    let dir = scratch_dir();
    let mut configs: Vec<(String, Value)> = Vec::new();
    for version in ["3.5.0", "3.4.0", "3.2.0"] {
        let o = opts(&[("example.com/a", "b")], None, version);
        configs.push((
            format!("ignition-{version}"),
            machineconfig::ignition(&o).unwrap(),
        ));
        for (name, obj) in machineconfig::render(&o).unwrap().manifests {
            // Read the MachineConfig back as the cluster would, then its config.
            let back = pyyaml(&machineconfig::to_yaml(&obj).unwrap()).remove(0);
            if back["kind"] == "MachineConfig" {
                configs.push((format!("{version}-{name}"), back["spec"]["config"].clone()));
            }
        }
        let pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let pointer = machineconfig::pointer_ignition(
            "https://api-int.ocp.example.com:22623/config/worker-gpu",
            pem,
            version,
        )
        .unwrap();
        configs.push((format!("pointer-{version}"), pointer));
    }
    assert!(configs.len() >= 12);
    for (name, cfg) in configs {
        assert_strict_spec_types(&name, &cfg);
        // Debian's ignition-validate (2.14) stops at 3.4.0; a 3.5.0 config
        // is checked by the strict parse above and the embed-time rules
        // (tests/ignition_check.rs holds those to ignition-validate).
        if cfg["ignition"]["version"] == "3.5.0" {
            let bytes = serde_json::to_vec(&cfg).unwrap();
            let checked = kubelet_labeler::cli::iso::check_ignition(&bytes, &name).unwrap();
            assert!(checked.unknown_keys.is_empty(), "{name}: {checked:?}");
            continue;
        }
        // Debian's ignition-validate (2.14) knows 3.4.0 only as
        // 3.4.0-experimental; 3.4.0 adds no field we use over 3.3.0, so a
        // 3.4.0 config is checked under both names.
        let mut variants = vec![cfg.clone()];
        if cfg["ignition"]["version"] == "3.4.0" {
            variants = ["3.3.0", "3.4.0-experimental"]
                .iter()
                .map(|v| {
                    let mut c = cfg.clone();
                    c["ignition"]["version"] = (*v).into();
                    c
                })
                .collect();
        }
        for cfg in variants {
            let f = dir.path().join(format!("{name}.ign"));
            std::fs::write(&f, serde_json::to_vec(&cfg).unwrap()).unwrap();
            let out = Command::new("ignition-validate").arg(&f).output().unwrap();
            assert!(
                out.status.success(),
                "{name} as {}: {}{}",
                cfg["ignition"]["version"],
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// `cfg` parses as the `ignition-config` crate's types for its own spec
/// version, strictly. The crate's types do not deny unknown fields (no
/// `deny_unknown_fields`; it reports them through `serde_ignored` as
/// warnings), so every such warning fails here; and the typed value, written
/// back with its unset (null) fields dropped, must equal `cfg`, so no field
/// was coerced or lost on the way.
fn assert_strict_spec_types(name: &str, cfg: &Value) {
    use ignition_config::Config;
    let bytes = serde_json::to_vec(cfg).unwrap();
    let (typed, warnings) = Config::parse_slice(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(warnings.is_empty(), "{name}: unknown keys {warnings:?}");
    let version = cfg["ignition"]["version"].as_str().unwrap();
    let variant_ok = matches!(
        (&typed, version),
        (Config::V3_5(_), "3.5.0") | (Config::V3_4(_), "3.4.0") | (Config::V3_2(_), "3.2.0")
    );
    assert!(variant_ok, "{name}: {version} parsed as {typed:?}");
    fn drop_nulls(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.retain(|_, x| !x.is_null());
                m.values_mut().for_each(drop_nulls);
            }
            Value::Array(a) => a.iter_mut().for_each(drop_nulls),
            _ => {}
        }
    }
    let mut back = serde_json::to_value(&typed).unwrap();
    drop_nulls(&mut back);
    assert_eq!(&back, cfg, "{name}: changed by the spec types");
}

/// The labels MachineConfig's plain-text data URL escapes only what the
/// readers need: real Ignition (whose data-URL package the MCO shares) and
/// ignition-validate take one holding every byte, and Ignition writes those
/// bytes back.
#[test]
fn readable_data_urls_are_what_ignition_writes() {
    if !need(ignition_oracle::IGNITION) || !need("ignition-validate") {
        return;
    }
    use kubelet_labeler::cli::render::encoding::readable_data_url;
    let every: Vec<u8> = (0..=255u8).chain(*b"a+b c%20d?e#f").collect();
    let env = b"[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=node.kubernetes.io/gpu=,a.io/b=c\"\n";
    let dir = scratch_dir();
    let files: Vec<Value> = [("/etc/every", &every[..]), ("/etc/env.conf", &env[..])]
        .iter()
        .map(|(path, bytes)| {
            serde_json::json!({
                "path": path, "mode": 420, "overwrite": true,
                "contents": { "source": readable_data_url(bytes).source }
            })
        })
        .collect();
    let cfg = serde_json::json!({
        "ignition": { "version": "3.3.0" },
        "storage": { "files": files }
    });
    let f = dir.path().join("readable.ign");
    std::fs::write(&f, serde_json::to_vec(&cfg).unwrap()).unwrap();
    let out = Command::new("ignition-validate").arg(&f).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root = dir.path().join("root");
    ignition_oracle::apply(&cfg, &root, &dir.path().join("state"));
    assert_eq!(std::fs::read(root.join("etc/every")).unwrap(), every);
    assert_eq!(std::fs::read(root.join("etc/env.conf")).unwrap(), env);
}

/// `--ignition-version` reaches every config the CLI writes, and the
/// default is 3.4.0: the newest spec every OpenShift from 4.14 reads (the
/// MCO of 4.14-4.18 parses up to 3.4.0; 3.5.0 needs 4.19+).
#[test]
fn cli_writes_the_chosen_ignition_version() {
    let dir = scratch_dir();
    std::fs::write(dir.path().join("wrapper"), fake_static_elf()).unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
            .current_dir(dir.path())
            .args(args)
            .args(["--pool", "worker-gpu", "--wrapper", "wrapper", "-o", "-"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    for (flag, want) in [
        (None, "3.4.0"),
        (Some("3.5.0"), "3.5.0"),
        (Some("3.2.0"), "3.2.0"),
    ] {
        let version: Vec<&str> = flag
            .map(|v| vec!["--ignition-version", v])
            .unwrap_or_default();
        let mut configs = vec![(
            "render ignition".to_string(),
            serde_json::from_str::<Value>(&run(&[&["render", "ignition"][..], &version].concat()))
                .unwrap(),
        )];
        let stream = run(&[&["render", "machineconfig"][..], &version].concat());
        for mc in kubelet_labeler::cli::render::layout::machineconfigs_from_yaml(&stream, "stdout")
            .unwrap()
        {
            configs.push((
                format!("{}", mc["metadata"]["name"]),
                mc["spec"]["config"].clone(),
            ));
        }
        assert_eq!(configs.len(), 3);
        for (name, cfg) in configs {
            assert_eq!(cfg["ignition"]["version"], want, "{name}");
            assert_strict_spec_types(&name, &cfg);
        }
    }
}

/// The strict parse above can fail: an unknown key, a field the version
/// lacks, and a wrong type each do.
#[test]
fn strict_spec_types_refuse_what_they_should() {
    for bad in [
        serde_json::json!({"ignition": {"version": "3.5.0"}, "storge": {}}),
        serde_json::json!({"ignition": {"version": "3.2.0"}, "kernelArguments": {}}),
        serde_json::json!({"ignition": {"version": "3.5.0"},
                           "storage": {"files": [{"path": "/x", "mode": "420"}]}}),
    ] {
        let r = std::panic::catch_unwind(|| assert_strict_spec_types("bad", &bad));
        assert!(r.is_err(), "accepted {bad}");
    }
    assert_strict_spec_types(
        "ok",
        &serde_json::json!({"ignition": {"version": "3.5.0"}, "kernelArguments": {}}),
    );
}

/// machineconfigs/ is what render.sh renders: same wrapper bytes in, same
/// bytes out. Re-rendering twice gives identical bytes.
#[test]
fn example_machineconfigs_are_current() {
    let dir = scratch_dir();
    let wrapper = dir.path().join("wrapper");
    std::fs::write(&wrapper, example_wrapper()).unwrap();
    for out in ["a", "b"] {
        let st = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
            .args([
                "render",
                "machineconfig",
                "--pool",
                "worker-gpu",
                "--label",
                "node.kubernetes.io/worker-gpu=",
            ])
            .arg("--wrapper")
            .arg(&wrapper)
            .arg("--output-dir")
            .arg(dir.path().join(out))
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
    }
    // The manifests, and the cluster-wide policy in its subdirectory.
    let yaml_names = |d: &Path| {
        let mut v: Vec<String> = Vec::new();
        for sub in ["", "cluster-wide/"] {
            let Ok(entries) = std::fs::read_dir(d.join(sub)) else {
                continue;
            };
            v.extend(
                entries
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".yaml"))
                    .map(|n| format!("{sub}{n}")),
            );
        }
        v.sort();
        v
    };
    assert_eq!(
        yaml_names(&repo().join("machineconfigs")),
        yaml_names(&dir.path().join("a")),
        "machineconfigs/ holds other manifests than render.sh renders; remove the extra ones and run `bash machineconfigs/render.sh`"
    );
    for name in yaml_names(&dir.path().join("a")) {
        let fresh = std::fs::read(dir.path().join("a").join(&name)).unwrap();
        assert_eq!(
            fresh,
            std::fs::read(dir.path().join("b").join(&name)).unwrap(),
            "not deterministic: {name}"
        );
        let committed =
            std::fs::read(repo().join("machineconfigs").join(&name)).unwrap_or_default();
        assert!(
            fresh == committed,
            "machineconfigs/{name} is stale; run `bash machineconfigs/render.sh`"
        );
    }
}

/// The wrapper carried in machineconfigs/ is what build-wrapper.sh builds
/// from this source (the build is reproducible: pinned toolchain, remapped
/// paths; machineconfigs/check-reproducible.sh builds it in two places).
#[test]
fn example_wrapper_is_the_current_build() {
    let out = Command::new("bash")
        .arg(repo().join("machineconfigs/build-wrapper.sh"))
        .arg("x86_64")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "build-wrapper.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let built = String::from_utf8(out.stdout).unwrap();
    let built = std::fs::read(built.trim()).unwrap();
    assert!(
        built == example_wrapper(),
        "the wrapper in machineconfigs/ is stale ({} bytes built, {} carried); run `bash machineconfigs/render.sh`",
        built.len(),
        example_wrapper().len()
    );
}

#[test]
fn snapshot_of_rendered_pool() {
    let o = opts(&[("example.com/gpu", "yes")], None, "3.4.0");
    let r = machineconfig::render(&o).unwrap();
    insta::assert_snapshot!("pool_stream", machineconfig::to_stream(&r).unwrap());
}

#[test]
fn bad_input_is_refused_and_nothing_written() {
    let dir = scratch_dir();
    let out_dir = dir.path().join("out");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
            .args(["render", "machineconfig"])
            .args(args)
            .arg("--output-dir")
            .arg(&out_dir)
            .output()
            .unwrap()
    };
    let wrapper = dir.path().join("w");
    std::fs::write(&wrapper, fake_static_elf()).unwrap();
    let w = wrapper.to_str().unwrap();
    for (args, needle) in [
        (vec!["--pool", "Worker_RWN", "--wrapper", w], "--pool"),
        (
            vec![
                "--pool",
                "gpu",
                "--label",
                "node-role.kubernetes.io/gpu=",
                "--wrapper",
                w,
            ],
            "node-role.kubernetes.io/gpu",
        ),
        (
            vec![
                "--pool",
                "gpu",
                "--pool-label",
                "node-role.kubernetes.io/gpu=",
                "--wrapper",
                w,
            ],
            "node.kubernetes.io/gpu",
        ),
        (
            vec!["--pool", "gpu", "--taint", "gpu:Sometimes", "--wrapper", w],
            "gpu:Sometimes",
        ),
        // cargo's debug build (past the size limit too: dynamic is the
        // reason given, its fix the static build).
        (
            vec![
                "--pool",
                "gpu",
                "--wrapper",
                env!("CARGO_BIN_EXE_kubelet-labeler-wrapper"),
            ],
            "dynamically linked",
        ),
        // No s390x wrapper is built here (and none beside the program).
        (
            vec!["--pool", "gpu", "--arch", "s390x", "--wrapper", w],
            "no static wrapper for s390x",
        ),
        // Two wrappers for one architecture.
        (
            vec!["--pool", "gpu", "--wrapper", w, "--wrapper", w],
            "two wrappers for x86_64",
        ),
    ] {
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains(needle),
            "{args:?}: {err}"
        );
        assert!(!out_dir.exists(), "{args:?} wrote something");
    }
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join("keep.yaml"), "x").unwrap();
    // Another file in the directory: the manifests go beside it, and it
    // is named as left alone.
    let o = run(&["--pool", "gpu", "--wrapper", w]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("left "), "{err}");
    assert_eq!(std::fs::read(out_dir.join("keep.yaml")).unwrap(), b"x");
    for e in std::fs::read_dir(&out_dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            // The cluster-wide policy's directory.
            std::fs::remove_dir_all(p).unwrap();
        } else if !p.ends_with("keep.yaml") {
            std::fs::remove_file(p).unwrap();
        }
    }

    // An output directory that cannot be created (below a regular file).
    let blocked = out_dir.join("keep.yaml").join("sub");
    let o = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["render", "machineconfig", "--pool", "gpu", "--wrapper", w])
        .arg("--output-dir")
        .arg(&blocked)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains(&blocked.display().to_string()),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 1);

    // -o - is one YAML stream to apply: no kustomization, nothing written.
    let o = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["render", "machineconfig", "--pool", "gpu", "--wrapper", w])
        .args(["-o", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stream = String::from_utf8(o.stdout).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stream.matches("\nkind: ").count(), 3, "{stream}");
    assert!(!stream.contains("Kustomization"));
}

/// MCO merges MachineConfigs of the base role, then the pool's: files and
/// units append, drop-ins of a unit append.
fn merge_as_mco(configs: &[Value]) -> Value {
    let mut files = Vec::new();
    let mut units: Vec<Value> = Vec::new();
    for c in configs {
        files.extend(
            c["storage"]["files"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
        for u in c["systemd"]["units"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            match units.iter_mut().find(|x| x["name"] == u["name"]) {
                Some(x) => {
                    let more = u["dropins"].as_array().cloned().unwrap_or_default();
                    x["dropins"].as_array_mut().unwrap().extend(more);
                }
                None => units.push(u),
            }
        }
    }
    serde_json::json!({
        "ignition": { "version": configs[0]["ignition"]["version"] },
        "storage": { "files": files },
        "systemd": { "units": units }
    })
}

/// First boot end to end: the example MachineConfigs merged as MCO would,
/// written by real Ignition, then real systemd starts MCO's 4.20 worker
/// kubelet.service with what Ignition wrote: the recorder standing in for
/// kubelet gets the original argv plus the pool label. With a label kubelet
/// refuses placed in the drop-in, it gets the original argv.
#[test]
fn first_boot_with_real_ignition_and_systemd() {
    if !need(ignition_oracle::IGNITION) || systemd_oracle::unavailable().is_some() || !pyyaml_ok() {
        return;
    }
    let Some(fixtures) = mco::require_fixtures() else {
        return;
    };
    let dir = scratch_dir();
    let scratch = dir.path();
    let recorder = systemd_oracle::build_recorder(scratch);
    let units = mco::kubelet_units(&fixtures);
    let (_, kubelet_unit) = units
        .iter()
        .find(|(n, _)| n.starts_with("release-4.20__templates__worker") && n.contains("_base"))
        .unwrap();

    let mut configs = Vec::new();
    for f in [
        "50-worker-gpu-kubelet-labeler-wrapper.yaml",
        "50-worker-gpu-kubelet-labeler-labels.yaml",
    ] {
        let text = std::fs::read_to_string(repo().join("machineconfigs").join(f)).unwrap();
        configs.push(pyyaml(&text).remove(0)["spec"]["config"].clone());
    }
    let merged = merge_as_mco(&configs);

    let mut argvs = Vec::new();
    for (case, refused) in [("good", false), ("refused", true)] {
        let root = scratch.join(format!("root-{case}"));
        ignition_oracle::apply(&merged, &root, &scratch.join(format!("ign-{case}")));
        let etc_units = root.join("etc/systemd/system");
        let wrapper = root.join("usr/local/bin/kubelet-labeler-wrapper.x86_64");
        let generator = root.join("etc/systemd/system-generators/kubelet-labeler");
        for exe in [&wrapper, &generator] {
            let mode = std::fs::metadata(exe).unwrap();
            assert_eq!(
                std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
                0o755,
                "{}",
                exe.display()
            );
        }
        assert!(std::fs::read(&wrapper).unwrap() == example_wrapper());
        assert_eq!(
            std::fs::read_to_string(&generator).unwrap(),
            dropins::generator(Profile::OpenShift, "kubelet.service", &[Arch::X86_64])
        );
        // No static drop-in: the generator writes it at boot.
        assert!(
            !etc_units
                .join("kubelet.service.d/zz-kubelet-labeler.conf")
                .exists()
        );
        let env_dropin = std::fs::read_to_string(
            etc_units.join("kubelet.service.d/90-kubelet-labeler-env.conf"),
        )
        .unwrap();
        assert!(
            env_dropin.contains(
                "Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=node.kubernetes.io/worker-gpu=\"\n"
            ),
            "{env_dropin}"
        );
        // What MCO's own MachineConfigs would have written.
        std::fs::write(etc_units.join("kubelet.service"), kubelet_unit).unwrap();
        std::fs::write(
            root.join("etc/node-sizing.env"),
            "SYSTEM_RESERVED_MEMORY=1Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("etc/kubernetes")).unwrap();
        std::fs::write(
            root.join("etc/kubernetes/kubelet.conf"),
            "kind: KubeletConfiguration\n",
        )
        .unwrap();
        std::fs::copy(&recorder, root.join("usr/local/bin/kubenswrapper")).unwrap();
        // No journald here: the service's stderr (the wrapper's line) to a file.
        let log = scratch.join(format!("kubelet-{case}.log"));
        std::fs::write(
            etc_units.join("kubelet.service.d/50-test-log.conf"),
            format!("[Service]\nStandardError=append:{}\n", log.display()),
        )
        .unwrap();
        if refused {
            let env = etc_units.join("kubelet.service.d/90-kubelet-labeler-env.conf");
            let text = std::fs::read_to_string(&env).unwrap();
            std::fs::write(
                &env,
                text.replace(
                    "node.kubernetes.io/worker-gpu=",
                    "node-role.kubernetes.io/worker-gpu=",
                ),
            )
            .unwrap();
        }
        // A second unit from the same fragment without our drop-ins: the
        // argv systemd gives without the wrapper.
        std::fs::write(etc_units.join("original.service"), kubelet_unit).unwrap();
        let work = scratch.join(format!("sd-{case}"));
        std::fs::create_dir_all(&work).unwrap();
        // The user manager runs the generator Ignition wrote, as PID 1 would.
        let mut run = systemd_oracle::UserRun::new(
            vec![
                PathBuf::from("/etc/systemd/system"),
                systemd_oracle::generator_dir(&work),
            ],
            vec!["kubelet.service".into(), "original.service".into()],
        );
        run.generator_path = Some("/etc/systemd/system-generators".into());
        let run_upper = scratch.join(format!("run-{case}"));
        std::fs::create_dir_all(&run_upper).unwrap();
        run.overlays = vec![
            (PathBuf::from("/etc"), root.join("etc")),
            (PathBuf::from("/usr/local/bin"), root.join("usr/local/bin")),
            (PathBuf::from("/run"), run_upper),
        ];
        run.settle_secs = 0.5;
        let out = systemd_oracle::run_user_manager(&run, &work);
        let get = |u: &str| {
            out.get(u)
                .and_then(|o| o.records.first())
                .map(|r| r.argv_lossy())
                .unwrap_or_else(|| {
                    panic!(
                        "{case}: {u} did not run: {:?}",
                        out.get(u).map(|o| &o.props)
                    )
                })
        };
        let line = std::fs::read_to_string(&log).unwrap_or_default();
        let want = if refused {
            "kubelet-labeler: starting kubelet without our labels/taints: label \"node-role.kubernetes.io/worker-gpu\""
        } else {
            "kubelet-labeler: starting kubelet with --node-labels=node.kubernetes.io/worker-gpu="
        };
        assert!(
            line.contains(want),
            "{case}: the journal line says {line:?}"
        );
        argvs.push((case, get("original.service"), get("kubelet.service")));
    }
    for (case, original, kubelet) in argvs {
        let mut want = original.clone();
        if case == "good" {
            want.push("--node-labels=node.kubernetes.io/worker-gpu=".into());
        }
        assert_eq!(kubelet, want, "{case}");
    }
}

/// The README's figure for libdeflate's gain over zlib's best (flate2 at
/// level 9) on the wrapper, to the nearest half percent.
#[test]
fn readme_states_the_gzip_gain_on_the_wrapper() {
    use std::io::Write;
    let wrapper = example_wrapper();
    let ours = kubelet_labeler::cli::render::encoding::gzip(&wrapper).len();
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&wrapper).unwrap();
    let zlib = z.finish().unwrap().len();
    let halves = ((1.0 - ours as f64 / zlib as f64) * 200.0).round() as u32;
    let pct = if halves.is_multiple_of(2) {
        format!("{}", halves / 2)
    } else {
        format!("{}.5", halves / 2)
    };
    readme_figures::assert_docs_say(&format!(
        "about {pct}% smaller than zlib's best on the wrapper"
    ));
}
