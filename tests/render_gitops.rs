//! What a user of the render and iso commands meets: which wrapper
//! `render dropins` installs, what a pool's MachineConfigs reach, what
//! `--force` removes, exit codes of usage errors, and where messages go.

#[path = "support/elf.rs"]
mod elf;
#[path = "support/skipped.rs"]
mod skipped;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kubelet_labeler::render::arch::Arch;
use kubelet_labeler::render::layout::machineconfigs_from_yaml;
use kubelet_labeler::render::machineconfig::check_wrapper;
use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn host_arch() -> Arch {
    Arch::from_name(std::env::consts::ARCH).expect("a host architecture we ship")
}

/// A file with a static program's ELF header for `arch`: all render and
/// explain look at.
fn static_elf(dir: &Path, arch: Arch) -> PathBuf {
    let path = dir.join(format!("static-{arch}"));
    std::fs::write(&path, elf::static_elf(arch)).unwrap();
    path
}

fn objects(dir: &Path) -> Vec<Value> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    names.sort();
    names
        .iter()
        .filter(|p| !p.ends_with("kustomization.yaml"))
        .map(|p| serde_saphyr::from_str::<Value>(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}

/// `render dropins` after a plain `cargo build`: the glibc wrapper beside
/// the CLI is refused (not installed), and the command the error suggests,
/// run exactly as written, builds the static one and renders with it.
#[test]
fn dropins_refuse_a_dynamic_wrapper_and_the_suggested_command_works() {
    let repo = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).unwrap();
    // A checkout's layout: target/debug/ with the CLI and the dynamic
    // wrapper a plain `cargo build` leaves, beside Cargo.toml and
    // machineconfigs/ (links to this checkout's).
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let debug = scratch.path().join("target/debug");
    std::fs::create_dir_all(&debug).unwrap();
    for (from, to) in [
        (env!("CARGO_BIN_EXE_kubelet-labeler"), "kubelet-labeler"),
        (
            env!("CARGO_BIN_EXE_kubelet-labeler-wrapper"),
            "kubelet-labeler-wrapper",
        ),
    ] {
        std::fs::hard_link(from, debug.join(to))
            .or_else(|_| std::fs::copy(from, debug.join(to)).map(|_| ()))
            .unwrap();
    }
    std::os::unix::fs::symlink(repo.join("Cargo.toml"), scratch.path().join("Cargo.toml")).unwrap();
    std::os::unix::fs::symlink(
        repo.join("machineconfigs"),
        scratch.path().join("machineconfigs"),
    )
    .unwrap();
    let cli = debug.join("kubelet-labeler");
    let root = scratch.path().join("root");
    let args = "render dropins --create-root --label example.com/gpu=yes --root";

    let refused = Command::new(&cli)
        .args(args.split(' '))
        .arg(&root)
        .output()
        .unwrap();
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    let arch = host_arch();
    assert!(
        err.contains(&format!(
            "{} is dynamically linked",
            debug.join("kubelet-labeler-wrapper").display()
        )),
        "{err}"
    );
    assert!(!root.exists(), "nothing may be written");
    let suggested = err
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in {err}"));
    assert_eq!(
        suggested,
        format!(
            "--wrapper \"$(bash {}/machineconfigs/build-wrapper.sh {arch})\"",
            repo.display()
        )
    );

    // The suggestion, appended to the same command line, as a user would.
    let line = format!(
        "'{}' {args} '{}' {suggested}",
        cli.display(),
        root.display()
    );
    let done = Command::new("sh")
        .args(["-c", &line])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(done.status.success(), "{line}: {}", stderr(&done));
    let installed =
        root.join(kubelet_labeler::render::dropins::wrapper_path(arch).trim_start_matches('/'));
    let bytes = std::fs::read(&installed).unwrap();
    check_wrapper(&bytes, arch, &installed).unwrap();
}

/// Rendering `--pool P` changes nothing outside pool P: each MachineConfig
/// has role P (the pool selects [worker, P]; the worker pool selects role
/// worker only), two pools share no object name, and `--role worker` is
/// what reaches every worker.
#[test]
fn a_pool_render_reaches_only_its_pool() {
    let dir = tempfile::tempdir().unwrap();
    let x86 = static_elf(dir.path(), Arch::X86_64);
    let arm = static_elf(dir.path(), Arch::Aarch64);
    let render = |args: &[&str], wrapper: &Path, out: &str| {
        let o = bin()
            .args(["render", "machineconfig"])
            .args(args)
            .arg("--wrapper")
            .arg(wrapper)
            .arg("--output-dir")
            .arg(dir.path().join(out))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), "", "the wrote lines go to stderr");
        objects(&dir.path().join(out))
    };
    let name = |o: &Value| format!("{}/{}", o["kind"], o["metadata"]["name"]);
    let gpu = render(&["--pool", "worker-gpu"], &x86, "gpu");
    let pi = render(&["--pool", "worker-pi"], &arm, "pi");
    for (pool, objs) in [("worker-gpu", &gpu), ("worker-pi", &pi)] {
        let mut kinds = Vec::new();
        // The cluster-wide policy is the same object for every pool.
        for o in objs.iter().filter(|o| o["kind"] != "MachineConfiguration") {
            kinds.push(o["kind"].as_str().unwrap().to_string());
            if o["kind"] == "MachineConfig" {
                assert_eq!(
                    o["metadata"]["labels"]["machineconfiguration.openshift.io/role"],
                    pool,
                    "{}",
                    name(o)
                );
                assert!(o["metadata"]["name"].as_str().unwrap().contains(pool));
            } else {
                let values = &o["spec"]["machineConfigSelector"]["matchExpressions"][0]["values"];
                assert_eq!(values, &serde_json::json!(["worker", pool]));
            }
        }
        kinds.sort();
        assert_eq!(
            kinds,
            ["MachineConfig", "MachineConfig", "MachineConfigPool"]
        );
    }
    // (Except the cluster-wide MachineConfiguration: applied server-side
    // with a field manager per pool, its entries merge by path.)
    let gpu_names: Vec<String> = gpu
        .iter()
        .filter(|o| o["kind"] != "MachineConfiguration")
        .map(name)
        .collect();
    for o in pi.iter().filter(|o| o["kind"] != "MachineConfiguration") {
        assert!(!gpu_names.contains(&name(o)), "both pools have {}", name(o));
    }
    let mut worker = render(&["--role", "worker"], &x86, "worker");
    worker.retain(|o| o["kind"] != "MachineConfiguration");
    assert_eq!(worker.len(), 1);
    assert_eq!(
        worker[0]["metadata"]["labels"]["machineconfiguration.openshift.io/role"],
        "worker"
    );
    assert!(!gpu_names.contains(&name(&worker[0])));
}

/// `--force` into a directory of an earlier render: the earlier render's
/// manifests this one does not write are removed and named (an older
/// version's worker wrapper MachineConfig, another pool's), other manifests
/// are left and named.
#[test]
fn force_removes_an_earlier_renders_manifests_and_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let w = static_elf(dir.path(), Arch::X86_64);
    let out = dir.path().join("gitops");
    let render = |args: &[&str], out: &Path| {
        bin()
            .args(["render", "machineconfig"])
            .args(args)
            .arg("--wrapper")
            .arg(&w)
            .arg("--output-dir")
            .arg(out)
            .output()
            .unwrap()
    };
    assert!(render(&["--pool", "worker-old"], &out).status.success());
    // What an older version wrote: the wrapper MachineConfig of role worker.
    let role = dir.path().join("role");
    assert!(render(&["--role", "worker"], &role).status.success());
    let old_worker = "50-worker-kubelet-labeler-wrapper.yaml";
    std::fs::copy(role.join(old_worker), out.join(old_worker)).unwrap();
    std::fs::write(out.join("mine.yaml"), "kind: ConfigMap\n").unwrap();

    let o = render(&["--pool", "worker-gpu", "--force"], &out);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    for gone in [
        old_worker,
        "50-worker-old-kubelet-labeler-wrapper.yaml",
        "50-worker-old-kubelet-labeler-labels.yaml",
        "machineconfigpool-worker-old.yaml",
    ] {
        assert!(!out.join(gone).exists(), "{gone} left");
        assert!(
            err.contains(&format!("removed {}", out.join(gone).display())),
            "{gone}: {err}"
        );
    }
    assert!(out.join("mine.yaml").exists());
    assert!(
        err.contains(&format!("left {}", out.join("mine.yaml").display())),
        "{err}"
    );
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "50-worker-gpu-kubelet-labeler-labels.yaml",
            "50-worker-gpu-kubelet-labeler-wrapper.yaml",
            "kustomization.yaml",
            "machineconfigpool-worker-gpu.yaml",
            "machineconfiguration-cluster.yaml",
            "mine.yaml"
        ]
    );
}

/// `render dropins --force` over an earlier render: the env drop-in this
/// render no longer writes (no labels now) would still add the old labels;
/// without --force that is refused, with it removed, each time named. Its
/// "wrote" lines are on stderr, stdout stays empty.
#[test]
fn dropins_name_and_remove_an_earlier_renders_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let x86 = static_elf(dir.path(), Arch::X86_64);
    let arm = static_elf(dir.path(), Arch::Aarch64);
    let run = |extra: &[&str], wrappers: &[&Path]| {
        let mut c = bin();
        c.args(["render", "dropins", "--root"])
            .arg(&root)
            .args(extra);
        for w in wrappers {
            c.arg("--wrapper").arg(w);
        }
        c.output().unwrap()
    };
    let first = run(&["--label", "example.com/gpu=yes"], &[&x86, &arm]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(stdout(&first), "");
    let env = root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf");
    let arm_wrapper = root.join("usr/local/bin/kubelet-labeler-wrapper.aarch64");
    assert!(stderr(&first).contains(&format!("wrote {}", env.display())));

    let refused = run(&[], &[&x86]);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&env.display().to_string())
            && err.contains(&arm_wrapper.display().to_string())
            && err.contains("--force"),
        "{err}"
    );
    assert!(env.exists());

    let forced = run(&["--force"], &[&x86]);
    let err = stderr(&forced);
    assert!(forced.status.success(), "{err}");
    for gone in [&env, &arm_wrapper] {
        assert!(!gone.exists());
        assert!(
            err.contains(&format!("removed {}", gone.display())),
            "{err}"
        );
    }
}

/// Usage errors exit 2, as clap's own: no output destination, stdin named
/// twice, a Debian/Go architecture name (with the kernel's name to use).
#[test]
fn usage_errors_exit_2_and_say_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let w = static_elf(dir.path(), Arch::X86_64);
    let rules = dir.path().join("rules.yaml");
    std::fs::write(&rules, "").unwrap();
    let run = |args: &[&str]| {
        bin()
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let w = w.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["render", "machineconfig", "--pool", "gpu", "--wrapper", w],
            "--output-dir",
        ),
        (
            vec![
                "render",
                "machineconfig",
                "--pool",
                "gpu",
                "--wrapper",
                w,
                "--rules",
                "-",
                "--rules",
                "-",
                "-o",
                "-",
            ],
            "stdin (\"-\") is given 2 times (--rules -, --rules -)",
        ),
        (
            vec![
                "render",
                "dropins",
                "--create-root",
                "--root",
                "r",
                "--wrapper",
                w,
                "--rules",
                "-",
                "--rules",
                "-",
            ],
            "it can be read once",
        ),
        (
            vec!["explain", "--machineconfig", "-", "--rules", "-"],
            "(--machineconfig -, --rules -)",
        ),
        (
            vec!["render", "dropins", "--root", "r", "--arch", "amd64"],
            "use --arch x86_64",
        ),
        (
            vec![
                "render",
                "machineconfig",
                "--pool",
                "gpu",
                "--arch",
                "arm64",
                "-o",
                "-",
            ],
            "use --arch aarch64",
        ),
        (
            vec![
                "render",
                "ignition",
                "--role",
                "worker",
                "--merge-url",
                "https://api-int.c.example.com:22623/config/worker",
                "--ca-file",
                "ca.pem",
                "-o",
                "-",
            ],
            "--pool",
        ),
    ] {
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(stdout(&o), "", "{args:?}");
    }
    assert!(!dir.path().join("r").exists());
}

/// The "wrote" lines of every render subcommand go to stderr, so stdout is
/// only ever what was asked for.
#[test]
fn wrote_lines_go_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let w = static_elf(dir.path(), Arch::X86_64);
    for (sub, out) in [("machineconfig", "stream.yaml"), ("ignition", "pool.ign")] {
        let path = dir.path().join(out);
        let o = bin()
            .args(["render", sub, "--pool", "worker-gpu", "--wrapper"])
            .arg(&w)
            .arg("-o")
            .arg(&path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), "", "{sub}");
        assert_eq!(stderr(&o), format!("wrote {}\n", path.display()), "{sub}");
    }
}

/// A plain-HTTP merge URL (the MCS's port 22624) fetches without TLS: the
/// CA given is not used, and render says so; HTTPS gets no warning.
#[test]
fn plain_http_merge_url_warns_that_the_ca_is_unused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(
        &ca,
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    for (url, warned) in [
        ("http://api-int.c.example.com:22624/config/worker-gpu", true),
        (
            "https://api-int.c.example.com:22623/config/worker-gpu",
            false,
        ),
    ] {
        let o = bin()
            .args([
                "render",
                "ignition",
                "--pool",
                "worker-gpu",
                "--merge-url",
                url,
            ])
            .arg("--ca-file")
            .arg(&ca)
            .args(["-o", "-"])
            .output()
            .unwrap();
        let err = stderr(&o);
        assert!(o.status.success(), "{err}");
        assert_eq!(
            err.contains("warning: --merge-url") && err.contains("the CA of --ca-file is not used"),
            warned,
            "{url}: {err}"
        );
    }
}

/// `iso embed -i -` reads the config from stdin, as `--rules -` does; a file
/// that is no ISO image is named in the refusal.
#[test]
fn iso_embed_reads_stdin_for_dash_and_names_a_non_iso() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let config = br#"{"ignition":{"version":"3.4.0"}}"#;
    let not_iso = d.join("notes.txt");
    std::fs::write(&not_iso, "not an image").unwrap();
    let embed = |iso: &Path, out: Option<&Path>| {
        let mut c = bin();
        c.args(["iso", "embed", "-i", "-"]);
        if let Some(out) = out {
            c.arg("-o").arg(out);
        }
        let mut child = c
            .arg(iso)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), config).unwrap();
        drop(child.stdin.take());
        child.wait_with_output().unwrap()
    };
    let o = embed(&not_iso, None);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{}: this is not an ISO image", not_iso.display())),
        "{err}"
    );

    if skipped::tool("xorriso").is_none() {
        return;
    }
    let iso = d.join("made.iso");
    let st = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("iso/make-test-iso.sh"))
        .arg(&iso)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let out = d.join("out.iso");
    let o = embed(&iso, Some(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = bin().args(["iso", "show"]).arg(&out).output().unwrap();
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert_eq!(shown.stdout, config);
}

/// The labels MachineConfig shows its labels, taints and rule names as
/// written (plain-text data URL), and stays what Ignition reads: decoded,
/// it is the drop-in render writes into a tree.
#[test]
fn the_labels_machineconfig_reads_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let w = static_elf(dir.path(), Arch::X86_64);
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rules");
    let rule_file = std::fs::read_dir(&rules)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .min()
        .unwrap();
    let common = [
        "--label",
        "node.kubernetes.io/worker-gpu=",
        "--label",
        "example.com/team=ml",
        "--taint",
        "nvidia.com/gpu=true:NoSchedule",
    ];
    let o = bin()
        .args(["render", "machineconfig", "--pool", "worker-gpu"])
        .args(common)
        .arg("--rules")
        .arg(&rule_file)
        .arg("--wrapper")
        .arg(&w)
        .arg("--output-dir")
        .arg(dir.path().join("mc"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(
        dir.path()
            .join("mc/50-worker-gpu-kubelet-labeler-labels.yaml"),
    )
    .unwrap();
    for shown in [
        "node.kubernetes.io/worker-gpu=,example.com/team=ml",
        "nvidia.com/gpu=true:NoSchedule",
    ] {
        assert!(text.contains(shown), "{shown} not readable in:\n{text}");
    }
    assert!(!text.contains("base64") && !text.contains("gzip"), "{text}");
    let names = kubelet_labeler::render::node_rules::read_rule_files(
        &[&rule_file],
        kubelet_labeler::kubelet::Profile::OpenShift,
    )
    .unwrap();
    for rule in names {
        assert!(text.contains(&rule.name), "{} not readable", rule.name);
    }

    // Decoded, the file is the drop-in `render dropins` writes.
    let tree = dir.path().join("tree");
    let o = bin()
        .args([
            "render",
            "dropins",
            "--profile",
            "openshift",
            "--create-root",
        ])
        .arg("--root")
        .arg(&tree)
        .args(common)
        .arg("--rules")
        .arg(&rule_file)
        .arg("--wrapper")
        .arg(&w)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mc = machineconfigs_from_yaml(&text, "labels").unwrap().remove(0);
    let file = &mc["spec"]["config"]["storage"]["files"][0];
    let decoded = kubelet_labeler::render::layout::decode_data_url(
        file["contents"]["source"].as_str().unwrap(),
        file["contents"]["compression"].as_str(),
    )
    .unwrap();
    let on_tree = std::fs::read_to_string(
        tree.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf"),
    )
    .unwrap();
    assert_eq!(String::from_utf8(decoded).unwrap(), on_tree);
}
