//! The built binary in scratch trees: `render dropins`, `explain`,
//! `validate`, and `explain` against `systemd --test --system`.

use crate::support::{bin, elf, scratch_dir, stderr, stdout, systemd_oracle, write};

use kubelet_labeler::cli::render::arch::Arch;
use kubelet_labeler::node::kubelet::Profile;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// A static wrapper for this host, as far as render and explain look at it
/// (the ELF header): a plain `cargo build` of the wrapper is dynamic, and
/// render refuses it.
fn fake_wrapper() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = scratch_dir();
        let arch = Arch::from_name(std::env::consts::ARCH).unwrap_or(Arch::X86_64);
        std::fs::write(
            dir.path().join("kubelet-labeler-wrapper"),
            elf::static_elf(arch),
        )
        .unwrap();
        dir
    });
    Box::leak(dir.path().join("kubelet-labeler-wrapper").into_boxed_path())
}

/// `render dropins` with the static stand-in wrapper.
fn dropins() -> Command {
    let mut c = bin();
    c.args(["render", "dropins", "--wrapper"])
        .arg(fake_wrapper());
    c
}

/// A kubeadm host: the deb's kubelet.service and 10-kubeadm.conf, the flags
/// file kubeadm writes, and a kubelet binary.
pub(crate) fn kubeadm_root(root: &Path) {
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        "[Unit]\nDescription=kubelet\n[Service]\nExecStart=/usr/bin/kubelet\nRestart=always\n",
    );
    write(
        &root.join("usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf"),
        "[Service]\nEnvironment=\"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf\"\n\
         Environment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\"\n\
         EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\nEnvironmentFile=-/etc/default/kubelet\n\
         ExecStart=\nExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n",
    );
    write(
        &root.join("var/lib/kubelet/kubeadm-flags.env"),
        "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock\"\n",
    );
    write(
        &root.join("var/lib/kubelet/config.yaml"),
        "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nregisterWithTaints:\n- key: node.example.com/existing\n  effect: NoSchedule\n",
    );
    write(&root.join("usr/bin/kubelet"), "#!/bin/sh\n");
    std::fs::set_permissions(
        root.join("usr/bin/kubelet"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
}

fn explain_json(root: &Path) -> serde_json::Value {
    explain_json_exit(root, 0)
}

/// `explain --json` on `root`, which must exit with `code` (1: our
/// additions would not reach kubelet).
fn explain_json_exit(root: &Path, code: i32) -> serde_json::Value {
    let out = bin()
        .args(["explain", "--json", "--root"])
        .arg(root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(code), "explain: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn render_dropins_then_explain() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_root(root);
    let before = explain_json(root);
    assert_eq!(before["argv"], before["original_argv"]);
    assert_eq!(before["wrapper_installed"], false);

    let out = dropins()
        .args([
            "--label",
            "node.kubernetes.io/gpu=",
            "--taint",
            "nvidia.com/gpu=true:NoSchedule",
            "--root",
        ])
        .arg(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    // The wrapper under its architecture's name, and the generator that
    // writes the drop-in at daemon-reload.
    let built = std::fs::read(fake_wrapper()).unwrap();
    let arch = Arch::of_elf(&built).unwrap();
    let wrapper = root.join(format!("usr/local/bin/kubelet-labeler-wrapper.{arch}"));
    let generator = root.join("etc/systemd/system-generators/kubelet-labeler");
    for exe in [&wrapper, &generator] {
        let mode = std::fs::metadata(exe).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755, "{}", exe.display());
    }
    assert_eq!(std::fs::read(&wrapper).unwrap(), built);
    assert_eq!(
        std::fs::read_to_string(&generator).unwrap(),
        kubelet_labeler::cli::render::dropins::generator(
            Profile::Upstream,
            "kubelet.service",
            &[arch]
        )
    );
    let static_dropin = root.join("etc/systemd/system/kubelet.service.d/zz-kubelet-labeler.conf");
    assert!(!static_dropin.exists());

    let after = explain_json(root);
    assert_eq!(after["wrapper_installed"], true);
    assert_eq!(after["original_argv"], before["original_argv"]);
    let argv: Vec<&str> = after["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(argv[0], "/usr/bin/kubelet");
    assert!(
        argv.contains(&"--node-labels=node.kubernetes.io/gpu="),
        "{argv:?}"
    );
    // The config file's taint is kept in the one merged flag.
    assert!(
        argv.contains(&"--register-with-taints=node.example.com/existing=:NoSchedule,nvidia.com/gpu=true:NoSchedule"),
        "{argv:?}"
    );
    // An earlier version's static drop-in would shadow the generator's:
    // refused without --force, removed with it.
    write(&static_dropin, "[Service]\n");
    let again = |force: bool| {
        let mut c = dropins();
        c.args(["--label", "node.kubernetes.io/gpu=", "--root"])
            .arg(root);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    let refused = again(false);
    assert!(
        !refused.status.success() && stderr(&refused).contains("--force"),
        "{}",
        stderr(&refused)
    );
    assert!(static_dropin.exists());
    assert!(again(true).status.success());
    assert!(!static_dropin.exists());

    let human = stdout(
        &bin()
            .args(["explain", "--root"])
            .arg(root)
            .output()
            .unwrap(),
    );
    assert!(
        human.contains("+ [") && human.contains("--node-labels=node.kubernetes.io/gpu="),
        "{human}"
    );
}

/// kubeadm before `join`: no /var/lib/kubelet/config.yaml yet, so kubelet
/// exits at every start whatever we add. explain says so in a warning and
/// exits 0 (nothing of ours fails); the taint is on the argv, and after the
/// join wrote the file it merges with the file's registerWithTaints.
#[test]
fn explain_before_kubeadm_join_says_kubelet_waits_for_the_join() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_root(root);
    let config = root.join("var/lib/kubelet/config.yaml");
    let joined = std::fs::read(&config).unwrap();
    std::fs::remove_file(&config).unwrap();
    let out = dropins()
        .args(["--label", "node.kubernetes.io/gpu=", "--taint"])
        .args(["nvidia.com/gpu=true:NoSchedule", "--root"])
        .arg(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let before = explain_json(root);
    assert_eq!(before["left_out"], serde_json::Value::Null, "{before}");
    let argv = before["argv"].to_string();
    assert!(
        argv.contains("\"--register-with-taints=nvidia.com/gpu=true:NoSchedule\""),
        "{argv}"
    );
    let warnings = before["warnings"].to_string();
    assert!(
        warnings.contains(
            "kubelet cannot start yet: its --config /var/lib/kubelet/config.yaml does not exist"
        ) && warnings.contains("before `kubeadm join`"),
        "{warnings}"
    );
    std::fs::write(&config, joined).unwrap();
    let after = explain_json(root);
    assert!(
        after["argv"].to_string().contains(
            "--register-with-taints=node.example.com/existing=:NoSchedule,nvidia.com/gpu=true:NoSchedule"
        ),
        "{after}"
    );
    assert!(
        !after["warnings"].to_string().contains("kubeadm join"),
        "{after}"
    );
}

/// A typo in the unit's own kubelet flags (kubelet exits on it): explain
/// warns naming the flag meant, and still exits 0 (nothing of ours fails).
#[test]
fn explain_warns_of_flags_kubelet_exits_on() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_root(root);
    write(
        &root.join("etc/default/kubelet"),
        "KUBELET_EXTRA_ARGS=\"--node-label=a --pod-infra-container-image=pause\"\n",
    );
    let e = explain_json(root);
    let warnings = e["warnings"].to_string();
    assert!(
        warnings.contains(
            "kubelet's own command line: unknown flag: --node-label: kubelet exits on it; did you mean --node-labels?"
        ) && warnings.contains("--pod-infra-container-image: kubelet 1.36 has no such flag"),
        "{warnings}"
    );
}

/// A unit file's escape codes (a hostile tree, a pull request's
/// MachineConfigs) reach the terminal escaped: they could erase the lines
/// above them, or set the clipboard.
#[test]
fn explain_escapes_what_the_tree_says_for_the_terminal() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_root(root);
    write(
        &root.join("etc/systemd/system/kubelet.service.d/20-esc.conf"),
        "[Service]\nExecStart=\nExecStart=/usr/bin/kubelet \"\\x1b[1A\\x1b[2K\\x1b]52;c;ZWNobyBoaQ==\\x07\"\n",
    );
    let out = bin()
        .args(["explain", "--root"])
        .arg(root)
        .output()
        .unwrap();
    let (human, err) = (stdout(&out), stderr(&out));
    assert!(human.contains("\\u{1b}[1A"), "{human}");
    assert!(
        !human.contains('\u{1b}') && !err.contains('\u{1b}'),
        "{human:?}"
    );
    assert!(human.lines().count() > 3, "{human}");
}

/// An error or a warning that quotes a rules file (a pull request's) or
/// the arguments given reaches the terminal escaped: a YAML `\e` in a
/// label key used to go to stderr raw, and so did a taint to `validate`.
#[test]
fn errors_escape_what_the_rules_file_says_for_the_terminal() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_root(root);
    let rules = root.join("rules.yaml");
    write(
        &rules,
        "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata:\n  name: x\n\
         spec:\n  rules:\n  - name: r\n    labels:\n      \"example.com/a\\e[1A\\e[2K\": \"1\"\n\
         \x20   matchFeatures:\n    - feature: kernel.version\n      matchExpressions:\n\
         \x20       major: {op: Exists}\n",
    );
    let out = bin()
        .args(["explain", "--root"])
        .arg(root)
        .arg("--rules")
        .arg(&rules)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success() && err.contains("\\u{1b}[1A"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
    let out = bin()
        .args([
            "validate",
            "--",
            "--register-with-taints=x\u{1b}[2J=y:NoSchedule",
        ])
        .output()
        .unwrap();
    let human = stdout(&out);
    assert!(human.contains("\\u{1b}[2J"), "{human}");
    assert!(!human.contains('\u{1b}'), "{human:?}");
}

/// `explain --root` on a tree whose kubelet.service is `unit`: refused as
/// past exec's limit (E2BIG), without listing the command.
fn refused_past_execs_limit(unit: &str) {
    let dir = scratch_dir();
    let root = dir.path();
    write(&root.join("etc/systemd/system/kubelet.service"), unit);
    let out = bin()
        .args(["explain", "--root"])
        .arg(root)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.contains("(E2BIG)"),
        "{}",
        &err[..err.len().min(500)]
    );
    assert!(out.stdout.len() < 100_000, "{} bytes", out.stdout.len());
}

/// A unit whose `$VAR`s expand past what exec takes (a pull request's
/// 215 KB unit of 5000 `$A`s of 200 KB took `explain` 80 s and 5.9 GB):
/// refused at exec's limit, as systemd's exec would fail (E2BIG).
#[test]
fn a_command_expanding_past_execs_limit_is_refused_without_building_it() {
    refused_past_execs_limit(&format!(
        "[Service]\nEnvironment=A={}\nExecStart=/usr/bin/kubelet{}\n",
        "x".repeat(200_000),
        " $A".repeat(40)
    ));
}

/// Exec counts each word's pointer too (review 42 r42b F5: 3,000,000
/// one-byte words, 6 MB of strings but 30 MB to exec, were kept and listed,
/// 1 GB and 47 MB of stdout): 800,000 words of 1.6 MB are past its limit.
#[test]
fn one_byte_words_past_execs_limit_with_their_pointers_are_refused() {
    refused_past_execs_limit(&format!(
        "[Service]\nEnvironment=\"A={}\"\nExecStart=/usr/bin/kubelet{}\n",
        "x ".repeat(200_000),
        " $A".repeat(4)
    ));
}

/// A command line of thousands of words within exec's limit: explain lists
/// the first 1,000 and counts the rest, and says the first 32 of kubelet's
/// errors, then counts those (review 41 r41b F5: one error a word, 594 MB
/// of stderr for 2,000,000 words).
#[test]
fn a_long_command_line_is_listed_and_judged_within_bounds() {
    let dir = scratch_dir();
    let root = dir.path();
    write(
        &root.join("etc/systemd/system/kubelet.service"),
        &format!(
            "[Service]\nEnvironment=\"A={}\"\nExecStart=/usr/bin/kubelet $A $A\n",
            "-x ".repeat(1000)
        ),
    );
    let out = bin()
        .args(["explain", "--root"])
        .arg(root)
        .output()
        .unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(text.contains("  [1000] -x\n"), "{text}");
    assert!(!text.contains("[1001]"), "{text}");
    assert!(
        text.contains("... and 1001 more words, not shown (--json lists them all)"),
        "{text}"
    );
    let refused = err
        .lines()
        .filter(|l| l.contains("unknown shorthand flag"))
        .count();
    assert_eq!(refused, 32, "{err}");
    assert!(
        err.contains("kubelet's command line: and 1968 more like these, not shown"),
        "{err}"
    );
    let v = explain_json_exit(root, 1);
    assert_eq!(v["argv"].as_array().map(Vec::len), Some(2001));
}

/// Review 43 r43b F2: a MachineConfig of paths 1,900 directories deep (a
/// 772 KB one made 380,000 directories, 1.6 GB of scratch) is refused
/// before its layout, naming the path and the bound.
#[test]
fn a_machineconfig_of_deep_paths_is_refused_before_its_layout() {
    let dir = scratch_dir();
    let path = format!("/etc/gpu{}/f", "/a".repeat(1900));
    let mc = serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": { "name": "rendered-worker-0123456789abcdef0123456789abcdef" },
        "spec": { "config": {
            "ignition": { "version": "3.4.0" },
            "storage": { "files": [ { "path": path, "contents": { "source": "data:," } } ] }
        } }
    });
    let file = dir.path().join("mc.json");
    std::fs::write(&file, mc.to_string()).unwrap();
    let out = bin()
        .args(["explain", "--machineconfig"])
        .arg(&file)
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/etc/gpu/a/a/a") && err.contains("1902 directories deep, past the 64"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

/// A unit of many variables (`Environment=`, an `EnvironmentFile=` of
/// 100,000 lines, `UnsetEnvironment=`) is read in O(n log n): a scan of
/// the environment per assignment took `explain` 154 s on the file alone,
/// and the day-2 sync reads the same environment.
#[test]
fn many_variables_are_read_without_a_scan_per_assignment() {
    let dir = scratch_dir();
    let root = dir.path();
    let file: String = (0..100_000).map(|i| format!("V{i}=1\n")).collect();
    write(&root.join("etc/default/kubelet"), &file);
    let set: String = (0..30_000).map(|i| format!(" W{i}=1")).collect();
    let unset: String = (0..30_000).map(|i| format!(" V{i}")).collect();
    write(
        &root.join("etc/systemd/system/kubelet.service"),
        &format!(
            "[Service]\nEnvironment={set}\nEnvironmentFile=/etc/default/kubelet\n\
             UnsetEnvironment={unset}\nExecStart=/usr/bin/kubelet $V99999 $V1\n"
        ),
    );
    let t = std::time::Instant::now();
    let out = bin()
        .args(["explain", "--json", "--root"])
        .arg(root)
        .output()
        .unwrap();
    assert!(
        t.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        t.elapsed()
    );
    let e: serde_json::Value = serde_json::from_slice(&out.stdout).expect("explain --json");
    // $V99999 is set, $V1 unset: the expansion is as before.
    assert_eq!(
        e["original_argv"],
        serde_json::json!(["/usr/bin/kubelet", "1"]),
        "{}",
        stderr(&out)
    );
}

/// A rules file (a pull request's) whose labels map has 100,000 keys is
/// read in one sort: a scan of the map per key took `explain --rules` 71 s
/// before it could say the rules are too large.
#[test]
fn a_rules_map_of_many_keys_is_read_without_a_scan_per_key() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_root(root);
    let labels: String = (0..100_000)
        .map(|i| format!("      example.com/k{i}: \"1\"\n"))
        .collect();
    let rules = root.join("rules.yaml");
    write(
        &rules,
        &format!(
            "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata:\n  name: x\n\
             spec:\n  rules:\n  - name: r\n    labels:\n{labels}    matchFeatures:\n\
             \x20   - feature: kernel.version\n      matchExpressions:\n        major: {{op: Exists}}\n"
        ),
    );
    let t = std::time::Instant::now();
    let out = bin()
        .args(["explain", "--root"])
        .arg(root)
        .arg("--rules")
        .arg(&rules)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(err.contains("in compact form"), "{err}");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        t.elapsed()
    );
}

/// kubelet behind `sh -c`: render warns, explain leaves our flags out and
/// says why; the same tree with `env NAME=VALUE` in front gets them.
#[test]
fn a_shell_in_execstart_gets_no_flags_and_says_why() {
    let dir = scratch_dir();
    let root = dir.path();
    kubeadm_root(root);
    let shell = root.join("etc/systemd/system/kubelet.service.d/20-shell.conf");
    write(
        &shell,
        "[Service]\nExecStart=\nExecStart=/bin/sh -c 'exec /usr/bin/kubelet --v=2 \"$$@\"' sh\n",
    );
    for exe in ["bin/sh", "usr/bin/env"] {
        write(&root.join(exe), "");
        std::fs::set_permissions(root.join(exe), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = dropins()
        .args(["--label", "node.kubernetes.io/gpu=", "--root"])
        .arg(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: at the next kubelet start the wrapper would start kubelet without our labels/taints: the original ExecStart= runs /bin/sh"),
        "{}",
        stderr(&out)
    );
    let e = explain_json_exit(root, 1);
    assert_eq!(e["argv"], e["original_argv"]);
    assert_eq!(e["original_argv"][0], "/bin/sh");
    let why = e["left_out"].as_str().unwrap();
    assert!(
        why.contains("runs /bin/sh, which is neither kubelet"),
        "{why}"
    );
    let out = bin()
        .args(["explain", "--root"])
        .arg(root)
        .output()
        .unwrap();
    let human = stdout(&out);
    // The reason once, on stderr.
    assert!(
        human.contains("our labels/taints are left out (why: on stderr)")
            && !human.contains("runs /bin/sh"),
        "{human}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("the original ExecStart= runs /bin/sh").count(),
        1,
        "{err}"
    );

    write(
        &shell,
        "[Service]\nExecStart=\nExecStart=/usr/bin/env GODEBUG=x=1 /usr/bin/kubelet --v=2\n",
    );
    let e = explain_json(root);
    assert_eq!(e["left_out"], serde_json::Value::Null);
    assert_eq!(
        e["argv"].as_array().unwrap().last().unwrap(),
        "--node-labels=node.kubernetes.io/gpu="
    );
}

#[test]
fn render_dropins_refuses_bad_input_and_replaces_only_its_own_files() {
    let dir = scratch_dir();
    let root = dir.path();
    let out = dropins()
        .args(["--label", "node-role.kubernetes.io/infra=", "--root"])
        .arg(root)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("node-role.kubernetes.io/infra"),
        "{}",
        stderr(&out)
    );
    assert!(
        std::fs::read_dir(root).unwrap().next().is_none(),
        "nothing may be written"
    );

    let render = |label: &str, force: bool| {
        let mut c = dropins();
        c.args(["--label", label, "--root"]).arg(root);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    assert!(render("a=1", false).status.success());
    let env = root.join("etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf");
    // A re-render replaces what an earlier render wrote (issue 33 item 15).
    let out = render("a=2", false);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&env).unwrap().contains("=a=2\""));
    // A file that is not ours needs --force.
    let theirs = "[Service]\nEnvironment=A=b\n";
    std::fs::write(&env, theirs).unwrap();
    let out = render("a=3", false);
    assert!(
        !out.status.success() && stderr(&out).contains("--force"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&env).unwrap(), theirs);
    assert!(render("a=3", true).status.success());
    assert!(std::fs::read_to_string(&env).unwrap().contains("=a=3\""));
}

#[test]
fn validate_exit_codes_and_messages() {
    let run = |args: &[&str]| bin().arg("validate").args(args).output().unwrap();
    let ok = run(&[
        "--profile",
        "openshift",
        "--",
        "--node-labels=node-role.kubernetes.io/worker,node.kubernetes.io/x=",
        "--register-with-taints=a=b:NoSchedule",
    ]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    let no = run(&["--", "--node-labels=node-role.kubernetes.io/worker"]);
    assert_eq!(no.status.code(), Some(1));
    assert!(stdout(&no).contains("node-role.kubernetes.io/worker"));
    let no = run(&["--json", "--", "--register-with-taints=a:Bogus"]);
    assert_eq!(no.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&no.stdout).unwrap();
    assert_eq!(json["valid"], false);
    assert!(json["errors"][0].as_str().unwrap().contains("a:Bogus"));
    assert_eq!(run(&[]).status.code(), Some(2));
    assert_eq!(
        run(&["--profile", "nope", "--", "--v=1"]).status.code(),
        Some(2)
    );
}

/// `explain`'s fragment and drop-ins are what PID 1 would load, across
/// /etc, /run and /usr/lib, with shadowing, masking, dash-prefix and
/// type-level drop-ins.
#[test]
fn explain_matches_systemd_test_system() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = scratch_dir();
    let scratch = dir.path();
    let etc = scratch.join("etc");
    let run = scratch.join("run/system");
    let usr = scratch.join("usr-lib");
    let unit = "kubelet-labeler-test-kubelet.service";
    write(&usr.join(unit), "[Service]\nExecStart=/usr/bin/true usr\n");
    write(&etc.join(unit), "[Service]\nExecStart=/usr/bin/true etc\n");
    write(
        &usr.join(format!("{unit}.d/10-a.conf")),
        "[Service]\nEnvironment=A=usr\n",
    );
    write(
        &etc.join(format!("{unit}.d/10-a.conf")),
        "[Service]\nEnvironment=A=etc\n",
    );
    write(
        &run.join(format!("{unit}.d/20-b.conf")),
        "[Service]\nEnvironment=B=run\n",
    );
    write(
        &usr.join(format!("{unit}.d/20-b.conf")),
        "[Service]\nEnvironment=B=usr\n",
    );
    write(
        &usr.join(format!("{unit}.d/30-masked.conf")),
        "[Service]\nEnvironment=C=usr\n",
    );
    std::fs::create_dir_all(etc.join(format!("{unit}.d"))).unwrap();
    std::os::unix::fs::symlink("/dev/null", etc.join(format!("{unit}.d/30-masked.conf"))).unwrap();
    write(
        &usr.join("kubelet-labeler-.service.d/40-dash.conf"),
        "[Service]\nEnvironment=D=dash\n",
    );
    write(
        &run.join("kubelet-labeler-test-.service.d/05-dash.conf"),
        "[Service]\nEnvironment=E=dash\n",
    );
    write(
        &usr.join("kubelet-labeler-test-kubelet.service.d/zz-kubelet-labeler.conf"),
        "[Service]\nSyslogIdentifier=kubelet\n",
    );

    let block = systemd_oracle::system_test(scratch, &etc, &run, &usr, unit);
    let (fragment, dropins) = systemd_oracle::dump_paths(&block);

    // The same tree as a node root; /lib is /usr/lib as on Debian 12.
    let root = scratch.join("root");
    systemd_oracle::copy_tree(&etc, &root.join("etc/systemd/system"));
    systemd_oracle::copy_tree(&run, &root.join("run/systemd/system"));
    systemd_oracle::copy_tree(&usr, &root.join("usr/lib/systemd/system"));
    std::os::unix::fs::symlink("usr/lib", root.join("lib")).unwrap();
    write(&root.join("usr/bin/true"), "");
    std::fs::set_permissions(
        root.join("usr/bin/true"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let out = bin()
        .args(["explain", "--json", "--unit", unit, "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ours: Vec<String> = json["dropins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        json["fragment"].as_str().map(String::from),
        fragment,
        "fragment (systemd block:\n{block})"
    );
    assert_eq!(ours, dropins, "drop-ins (systemd block:\n{block})");
    assert_eq!(dropins.len(), 6, "{block}");
}
