//! The wrapper under a real systemd: for every MCO kubelet.service template
//! (4.14-4.21, main), a kubeadm host and an EKS-style host, systemd runs the
//! unit with our drop-ins; the recorder standing in for kubelet must get the
//! argv systemd gives the same unit without the wrapper, plus our labels and
//! one merged taint flag. With a label kubelet refuses, it must get that argv
//! with the taint and without our labels (fail closed: a bad label never
//! costs a taint). The crash-loop guard is exercised with a kubelet that
//! refuses.

use crate::support::{mco, scratch_dir, systemd_oracle, write};

use std::path::{Path, PathBuf};
use std::process::Command;

use systemd_oracle::{Record, UserRun};

const LABELS: &str = "node.kubernetes.io/worker-gpu=";
const TAINT: &str = "example.com/gpu=true:NoSchedule";
const CONFIG_TAINT: &str = "example.com/from-config=:PreferNoSchedule";

fn install_exe(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    std::fs::copy(src, dst).unwrap();
}

struct Host {
    scratch: PathBuf,
    units: PathBuf,
    state: PathBuf,
    wrapper: PathBuf,
    search_path: String,
}

impl Host {
    fn new(scratch: &Path) -> Host {
        let units = scratch.join("units");
        std::fs::create_dir_all(&units).unwrap();
        let run = UserRun::new(vec![units.clone()], vec![]);
        Host {
            scratch: scratch.to_path_buf(),
            search_path: systemd_oracle::search_path(&run, scratch),
            units,
            state: scratch.join("state"),
            wrapper: PathBuf::from(env!("CARGO_BIN_EXE_kubelet-labeler-wrapper")),
        }
    }

    /// `name` with its fragment and drop-ins; `wrapped` adds our two drop-ins.
    fn add_unit(
        &self,
        name: &str,
        fragment: &str,
        dropins: &[(&str, &str)],
        env: Option<(&str, &str)>,
        wrapped: bool,
    ) {
        write(&self.units.join(name), fragment);
        let d = self.units.join(format!("{name}.d"));
        for (n, t) in dropins {
            write(&d.join(n), t);
        }
        if let Some((labels, taints)) = env {
            write(
                &d.join("90-kubelet-labeler-env.conf"),
                &format!(
                    "[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS={labels}\"\n\
                     Environment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS={taints}\"\n"
                ),
            );
        }
        if wrapped {
            // The shipped drop-in, with the test's search path and state dir.
            let args = format!(
                "--unit %n --profile openshift --unit-path {} --state-dir {}",
                self.search_path,
                self.state.display()
            );
            let shipped = kubelet_labeler::cli::render::dropins::wrapper_dropin(
                kubelet_labeler::node::kubelet::Profile::OpenShift,
            )
            .replace(
                "/usr/local/bin/kubelet-labeler-wrapper",
                &self.wrapper.display().to_string(),
            )
            .replace("--unit %n --profile openshift", &args);
            write(&d.join("zz-kubelet-labeler.conf"), &shipped);
        }
    }

    fn run(
        &self,
        units: Vec<String>,
        overlays: Vec<(PathBuf, PathBuf)>,
        settle_secs: f32,
    ) -> std::collections::BTreeMap<String, systemd_oracle::Outcome> {
        let mut run = UserRun::new(vec![self.units.clone()], units);
        run.overlays = overlays;
        run.settle_secs = settle_secs;
        systemd_oracle::run_user_manager(&run, &self.scratch)
    }
}

/// (unit stem, fragment, drop-ins, taints kubelet has when no flag sets any)
type TestHost = (String, String, Vec<(&'static str, String)>, &'static str);

fn words(r: &Record) -> Vec<String> {
    r.argv_lossy()
}

/// What the wrapped argv must be: the original without its taint flags, plus
/// ours (a node-labels flag, then one merged taint flag).
fn expected(original: &[String], existing_taints: &str, labels: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for w in original {
        if skip {
            skip = false;
            continue;
        }
        if w == "--register-with-taints" {
            skip = true;
            continue;
        }
        if w.starts_with("--register-with-taints=") {
            continue;
        }
        out.push(w.clone());
    }
    if labels {
        out.push(format!("--node-labels={LABELS}"));
    }
    let merged = if existing_taints.is_empty() {
        TAINT.to_string()
    } else {
        format!("{existing_taints},{TAINT}")
    };
    out.push(format!("--register-with-taints={merged}"));
    out
}

fn last_taint_flag(original: &[String]) -> Option<String> {
    let mut last = None;
    for (i, w) in original.iter().enumerate() {
        if let Some(v) = w.strip_prefix("--register-with-taints=") {
            last = Some(v.to_string());
        } else if w == "--register-with-taints" {
            last = original.get(i + 1).cloned();
        }
    }
    last
}

#[test]
fn mco_templates_kubeadm_and_eks_under_real_systemd() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let Some(fixtures) = mco::require_fixtures() else {
        return;
    };
    let dir = scratch_dir();
    let scratch = dir.path();
    let host = Host::new(scratch);
    let recorder = systemd_oracle::build_recorder(scratch);

    // Files kubelet's units read, laid over the real system dirs.
    let etc = scratch.join("over-etc");
    write(
        &etc.join("node-sizing.env"),
        "SYSTEM_RESERVED_MEMORY=1Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n",
    );
    write(
        &etc.join("kubernetes/kubelet.conf"),
        "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nregisterWithTaints:\n  - key: example.com/from-config\n    effect: PreferNoSchedule\n",
    );
    write(
        &etc.join("kubernetes/kubelet/kubelet-config.json"),
        r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","registerWithTaints":[{"key":"ignored","effect":"NoSchedule"}]}"#,
    );
    write(&etc.join("default/kubelet"), "KUBELET_EXTRA_ARGS=--v=4\n");
    let usr_local_bin = scratch.join("over-usr-local-bin");
    install_exe(&recorder, &usr_local_bin.join("kubenswrapper"));
    let usr_bin = scratch.join("over-usr-bin");
    install_exe(&recorder, &usr_bin.join("kubelet"));
    let var_lib = scratch.join("over-var-lib");
    write(
        &var_lib.join("kubelet/kubeadm-flags.env"),
        "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.9\"\n",
    );
    write(
        &var_lib.join("kubelet/config.yaml"),
        "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nregisterWithTaints: []\n",
    );

    // OpenShift's alibabacloud units (4.14-4.16) require this file.
    let run_dir = scratch.join("over-run");
    write(
        &run_dir.join("kubelet-alibaba.env"),
        "KUBELET_NODE_NAME=cn-hangzhou.i-0abc\n",
    );

    let env = Some((LABELS, TAINT));
    let bad_env = Some(("node-role.kubernetes.io/infra=", TAINT));
    // (unit stem, fragment, drop-ins, existing taints when no flag)
    let mut hosts: Vec<TestHost> = Vec::new();
    for (i, (name, unit)) in mco::kubelet_units(&fixtures).into_iter().enumerate() {
        hosts.push((
            format!("mco{i:02}-{}", &name[..name.find("__").unwrap()]),
            unit,
            vec![],
            CONFIG_TAINT,
        ));
    }
    let kubeadm_unit = "[Unit]\nDescription=kubelet: The Kubernetes Node Agent\nWants=network-online.target\n\
                        [Service]\nExecStart=/usr/bin/kubelet\nRestart=always\nStartLimitInterval=0\nRestartSec=10\n\
                        [Install]\nWantedBy=multi-user.target\n";
    let kubeadm_dropin = "[Service]\n\
        Environment=\"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf\"\n\
        Environment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\"\n\
        EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n\
        EnvironmentFile=-/etc/default/kubelet\n\
        ExecStart=\n\
        ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n";
    hosts.push((
        "kubeadm".into(),
        kubeadm_unit.into(),
        vec![("10-kubeadm.conf", kubeadm_dropin.into())],
        "",
    ));
    let eks_unit = "[Unit]\nDescription=Kubernetes Kubelet\n[Service]\n\
        ExecStart=/usr/bin/kubelet --cloud-provider external --config /etc/kubernetes/kubelet/kubelet-config.json \
        --kubeconfig /var/lib/kubelet/kubeconfig --container-runtime-endpoint unix:///run/containerd/containerd.sock $KUBELET_ARGS $KUBELET_EXTRA_ARGS\n\
        Restart=always\nRestartSec=5\n";
    let eks_extra = "[Service]\nEnvironment='KUBELET_EXTRA_ARGS=--node-labels=eks.amazonaws.com/nodegroup=ng-1 --register-with-taints dedicated=gpu:NoSchedule'\n";
    hosts.push((
        "eks".into(),
        eks_unit.into(),
        vec![("30-kubelet-extra-args.conf", eks_extra.into())],
        "",
    ));

    let mut units = Vec::new();
    for (stem, fragment, dropins, _) in &hosts {
        let d: Vec<(&str, &str)> = dropins.iter().map(|(n, t)| (*n, t.as_str())).collect();
        host.add_unit(&format!("orig-{stem}.service"), fragment, &d, env, false);
        host.add_unit(&format!("wrap-{stem}.service"), fragment, &d, env, true);
        host.add_unit(&format!("bad-{stem}.service"), fragment, &d, bad_env, true);
        units.extend([
            format!("orig-{stem}.service"),
            format!("wrap-{stem}.service"),
            format!("bad-{stem}.service"),
        ]);
    }
    let overlays = vec![
        (PathBuf::from("/etc"), etc),
        (PathBuf::from("/usr/local/bin"), usr_local_bin),
        (PathBuf::from("/usr/bin"), usr_bin),
        (PathBuf::from("/var/lib"), var_lib),
        (PathBuf::from("/run"), run_dir),
    ];
    let outcomes = host.run(units, overlays, 1.0);

    let mut failures = Vec::new();
    for (stem, _, _, config_taints) in &hosts {
        let get = |prefix: &str| {
            outcomes
                .get(&format!("{prefix}-{stem}.service"))
                .and_then(|o| o.records.first())
                .map(words)
        };
        let (Some(orig), Some(wrapped), Some(bad)) = (get("orig"), get("wrap"), get("bad")) else {
            failures.push(format!(
                "{stem}: a unit did not run: {:?}",
                ["orig", "wrap", "bad"].map(|p| outcomes
                    .get(&format!("{p}-{stem}.service"))
                    .map(|o| o.props.clone()))
            ));
            continue;
        };
        let existing = last_taint_flag(&orig).unwrap_or_else(|| config_taints.to_string());
        let want = expected(&orig, &existing, true);
        if wrapped != want {
            failures.push(format!(
                "{stem}: wrapped argv\n  got  {wrapped:?}\n  want {want:?}"
            ));
        }
        // A label kubelet refuses costs our labels, never the taint.
        let without_labels = expected(&orig, &existing, false);
        if bad != without_labels {
            failures.push(format!(
                "{stem}: with a refused label\n  got  {bad:?}\n  want {without_labels:?}"
            ));
        }
    }
    println!("{} hosts checked under systemd 252", hosts.len());
    assert!(
        hosts.len() >= 40,
        "expected every MCO template, got {}",
        hosts.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `explain`'s original_argv is what systemd execs, and its fragment and
/// drop-ins are what systemd loaded.
#[test]
fn explain_agrees_with_real_systemd() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let Some(fixtures) = mco::require_fixtures() else {
        return;
    };
    let dir = scratch_dir();
    let scratch = dir.path();
    let host = Host::new(scratch);
    let recorder = systemd_oracle::build_recorder(scratch);
    let units = mco::kubelet_units(&fixtures);
    let (_, unit) = units
        .iter()
        .find(|(n, _)| n.starts_with("release-4.20__templates__worker") && n.contains("_base"))
        .expect("4.20 worker template");
    host.add_unit(
        "kubelet.service",
        unit,
        &[(
            "10-mco-default-madv.conf",
            "[Service]\nEnvironment=\"GODEBUG=x509ignoreCN=0,madvdontneed=1\"\n",
        )],
        Some((LABELS, TAINT)),
        true,
    );
    // Run it without the wrapper too, to see the original argv.
    std::fs::copy(
        host.units.join("kubelet.service"),
        host.units.join("orig.service"),
    )
    .unwrap();
    let etc = scratch.join("over-etc");
    write(
        &etc.join("node-sizing.env"),
        "SYSTEM_RESERVED_MEMORY=1Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n",
    );
    let kubelet_conf = "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nregisterWithTaints:\n- key: example.com/from-config\n  effect: PreferNoSchedule\n";
    write(&etc.join("kubernetes/kubelet.conf"), kubelet_conf);
    let bin = scratch.join("over-bin");
    install_exe(&recorder, &bin.join("kubenswrapper"));
    let outcomes = host.run(
        vec!["kubelet.service".into(), "orig.service".into()],
        vec![
            (PathBuf::from("/etc"), etc.clone()),
            (PathBuf::from("/usr/local/bin"), bin),
        ],
        0.5,
    );
    let orig = &outcomes["orig.service"].records[0];
    let wrapped = &outcomes["kubelet.service"];

    // explain sees the node as systemd did: the overlaid files under a root
    // made of the real system plus the overlays, and the manager's env.
    let root = scratch.join("root");
    write(
        &root.join("etc/node-sizing.env"),
        &std::fs::read_to_string(etc.join("node-sizing.env")).unwrap(),
    );
    std::fs::copy("/etc/os-release", root.join("etc/os-release")).unwrap();
    write(&root.join("etc/kubernetes/kubelet.conf"), kubelet_conf);
    install_exe(&recorder, &root.join("usr/local/bin/kubenswrapper"));
    let unit_rel = host.units.strip_prefix("/").unwrap();
    systemd_oracle::copy_tree(&host.units, &root.join(unit_rel));
    let unit_path: Vec<String> = host.search_path.split(':').map(String::from).collect();
    for d in &unit_path[1..] {
        systemd_oracle::copy_tree(Path::new(d), &root.join(d.trim_start_matches('/')));
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"));
    cmd.args([
        "explain",
        "--json",
        "--profile",
        "openshift",
        "--unit",
        "kubelet.service",
    ])
    .arg("--root")
    .arg(&root)
    .arg("--unit-path")
    .arg(&host.search_path);
    // The manager's environment: what the process saw that no unit file set.
    for (k, v) in &orig.env {
        let k = k.to_string_lossy();
        if !k.starts_with("FIRST_BOOT_ONLY") {
            cmd.arg("--set-env")
                .arg(format!("{k}={}", v.to_string_lossy()));
        }
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "explain failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        strings(&json["original_argv"]),
        orig.argv_lossy(),
        "original_argv vs systemd"
    );
    assert_eq!(
        strings(&json["argv"]),
        wrapped.records[0].argv_lossy(),
        "argv vs what the wrapper exec'd"
    );
    assert_eq!(
        json["fragment"].as_str().unwrap(),
        wrapped.prop("FragmentPath")
    );
    assert_eq!(
        strings(&json["dropins"]),
        wrapped.dropins(),
        "drop-ins vs systemd"
    );
    assert_eq!(strings(&json["added_labels"]), vec![LABELS.to_string()]);
}

/// A kubelet that refuses our label (one in kubelet's policed namespaces,
/// whose allow-list differs between kubelets) fails once; the next start
/// leaves that label out, keeps the taint and the other labels, and kubelet
/// runs.
#[test]
fn crash_loop_guard_under_real_systemd() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = scratch_dir();
    let scratch = dir.path();
    let host = Host::new(scratch);
    let recorder = systemd_oracle::build_fake_kubelet(scratch);
    let unit = format!(
        "[Service]\nType=simple\nRestart=always\nRestartSec=200ms\n\
         Environment=RECORDER_FAIL_IF_ARG=topology.kubernetes.io/zone RECORDER_SLEEP=3\n\
         ExecStart={} --v=2\n",
        recorder.display()
    );
    // No journald here: send the service's stderr to a file to read the
    // wrapper's journal line.
    let log = scratch.join("guard.log");
    let log_dropin = format!("[Service]\nStandardError=append:{}\n", log.display());
    host.add_unit(
        "guard.service",
        &unit,
        &[("50-test-log.conf", &log_dropin)],
        Some((
            "topology.kubernetes.io/zone=a,example.com/kept=yes",
            "example.com/dedicated=gpu:NoSchedule",
        )),
        true,
    );
    let outcomes = host.run(vec!["guard.service".into()], vec![], 2.0);
    let o = &outcomes["guard.service"];
    let starts: Vec<Vec<String>> = o.records.iter().map(words).collect();
    assert!(
        starts.len() >= 2,
        "expected a failed start and a restart, got {starts:?} {:?}",
        o.props
    );
    assert!(
        starts[0]
            .iter()
            .any(|w| w.contains("topology.kubernetes.io/zone")),
        "{starts:?}"
    );
    assert_eq!(
        starts[1],
        vec![
            recorder.display().to_string(),
            "--v=2".to_string(),
            "--node-labels=example.com/kept=yes".to_string(),
            "--register-with-taints=example.com/dedicated=gpu:NoSchedule".to_string(),
        ]
    );
    let lines = std::fs::read_to_string(&log).unwrap();
    assert!(
        lines.contains(
            "kubelet-labeler: starting kubelet with --node-labels=topology.kubernetes.io/zone=a,example.com/kept=yes"
        ),
        "{lines}"
    );
    assert!(
        lines.contains("kubelet-labeler: starting kubelet with --node-labels=example.com/kept=yes")
            && lines.contains(
                "labels a kubelet of another version may refuse left out: topology.kubernetes.io/zone"
            )
            && lines.contains("crash-loop guard"),
        "{lines}"
    );
    let state = std::fs::read_to_string(host.state.join("guard.service.state")).unwrap();
    assert!(state.contains("refusable=0"), "{state}");
}

/// kubelet gets the signal state systemd gives it without us: SIGPIPE
/// ignored (`IgnoreSIGPIPE=yes`, the default) or not, and nothing blocked.
/// Rust's runtime ignores SIGPIPE and `Command::exec` resets it; the
/// wrapper must hand on what it inherited.
#[test]
fn kubelet_gets_the_signal_state_systemd_gives() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = scratch_dir();
    let scratch = dir.path();
    let host = Host::new(scratch);
    let kubelet = systemd_oracle::build_fake_kubelet(scratch);
    let cases = [("pipe-ignored", ""), ("pipe-default", "IgnoreSIGPIPE=no\n")];
    let mut units = Vec::new();
    for (stem, extra) in cases {
        let fragment = format!(
            "[Service]\nType=simple\n{extra}ExecStart={} --v=2\n",
            kubelet.display()
        );
        host.add_unit(&format!("{stem}-orig.service"), &fragment, &[], None, false);
        host.add_unit(
            &format!("{stem}.service"),
            &fragment,
            &[],
            Some((LABELS, TAINT)),
            true,
        );
        units.push(format!("{stem}-orig.service"));
        units.push(format!("{stem}.service"));
    }
    let outcomes = host.run(units, vec![], 0.5);
    let record = |unit: &str| outcomes[unit].records[0].clone();
    for (stem, _) in cases {
        let orig = record(&format!("{stem}-orig.service"));
        let wrapped = record(&format!("{stem}.service"));
        assert!(
            words(&wrapped).iter().any(|w| w.contains(LABELS)),
            "{stem}: the wrapper did not add our labels: {:?}",
            words(&wrapped)
        );
        assert_eq!(orig.signals.len(), 2, "{stem}: {:?}", orig.signals);
        assert_eq!(
            wrapped.signals, orig.signals,
            "{stem}: signal state vs systemd's"
        );
    }
    // Both dispositions were seen, so the comparison could have failed.
    assert_ne!(
        record("pipe-ignored-orig.service").signals,
        record("pipe-default-orig.service").signals
    );
}

/// A second drop-in that runs the wrapper too (a hand copy sorting after
/// ours, an earlier render's under another name sorting before it): the
/// wrapper leaves it out like its own and starts kubelet once, with our
/// labels. With no command left but the wrapper (a unit file that runs the
/// wrapper itself) it starts nothing and says so in one line naming the
/// files. `explain` agrees with each.
#[test]
fn a_second_wrapper_dropin_is_left_out_like_ours() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = scratch_dir();
    let scratch = dir.path();
    let host = Host::new(scratch);
    let kubelet = systemd_oracle::build_fake_kubelet(scratch);
    let log = |stem: &str| scratch.join(format!("{stem}.log"));
    let fragment = |stem: &str, exec: &str| {
        format!(
            "[Service]\nType=simple\nStandardError=append:{}\nExecStart={exec}\n",
            log(stem).display()
        )
    };
    let kubelet_exec = format!("{} --v=2", kubelet.display());
    for stem in ["after", "before"] {
        host.add_unit(
            &format!("{stem}.service"),
            &fragment(stem, &kubelet_exec),
            &[],
            Some((LABELS, TAINT)),
            true,
        );
    }
    // Copies of our drop-in (the test's, with its search path) by other names.
    let d = |stem: &str| host.units.join(format!("{stem}.service.d"));
    let ours = std::fs::read_to_string(d("after").join("zz-kubelet-labeler.conf")).unwrap();
    write(&d("after").join("zzz-kubelet-labeler-copy.conf"), &ours);
    write(&d("before").join("50-kubelet-labeler.conf"), &ours);
    // The unit file itself runs the wrapper: no kubelet anywhere.
    let wrapper_exec = format!(
        "{} --unit %n --unit-path {} --state-dir {}",
        host.wrapper.display(),
        host.search_path,
        host.state.display()
    );
    host.add_unit(
        "nokubelet.service",
        &fragment("nokubelet", &wrapper_exec),
        &[],
        Some((LABELS, TAINT)),
        true,
    );
    let units = ["after", "before", "nokubelet"].map(|s| format!("{s}.service"));
    let outcomes = host.run(units.to_vec(), vec![], 1.0);

    for stem in ["after", "before"] {
        let o = &outcomes[&format!("{stem}.service")];
        let starts: Vec<Vec<String>> = o.records.iter().map(words).collect();
        assert_eq!(starts.len(), 1, "{stem}: {starts:?} {:?}", o.props);
        assert!(
            starts[0]
                .iter()
                .any(|w| w == &format!("--node-labels={LABELS}")),
            "{stem}: {starts:?}"
        );
        assert_eq!(o.prop("NRestarts"), "0", "{stem}: {:?}", o.props);
        let lines = std::fs::read_to_string(log(stem)).unwrap();
        assert_eq!(lines.lines().count(), 1, "{stem}: {lines}");
        assert!(
            lines.starts_with("kubelet-labeler: starting kubelet with --node-labels="),
            "{stem}: {lines}"
        );

        // explain: the same argv, and a word about the extra drop-in.
        let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
            .args(["explain", "--json", "--profile", "openshift", "--root", "/"])
            .args(["--unit", &format!("{stem}.service")])
            .args(["--unit-path", &host.search_path])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{stem}: explain failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let argv: Vec<&str> = json["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        assert_eq!(argv, starts[0], "{stem}: explain vs systemd");
        assert_eq!(json["errors"], serde_json::json!([]), "{stem}: {json}");
        let extra = if stem == "after" {
            "zzz-kubelet-labeler-copy.conf"
        } else {
            "50-kubelet-labeler.conf"
        };
        assert!(
            json["warnings"].as_array().unwrap().iter().any(|w| w
                .as_str()
                .unwrap()
                .contains(extra)
                && w.as_str().unwrap().contains("runs the wrapper")),
            "{stem}: {json}"
        );
    }

    let o = &outcomes["nokubelet.service"];
    assert!(o.records.is_empty(), "{:?}", o.records);
    let lines = std::fs::read_to_string(log("nokubelet")).unwrap();
    assert_eq!(lines.lines().count(), 1, "{lines}");
    let fragment_path = host.units.join("nokubelet.service");
    assert!(
        lines.starts_with("kubelet-labeler: ")
            && lines.contains("nothing to start beneath the wrapper")
            && lines.contains(&fragment_path.display().to_string())
            && lines.contains("zz-kubelet-labeler.conf"),
        "{lines}"
    );
}

/// Review 19 r19a F2 under real systemd: an `EnvironmentFile=` (OpenShift's
/// kubelet-env) that sets our taints' variable empty wins over our
/// drop-in's `Environment=` (systemd.exec(5); the premise), and the
/// wrapper registers with our taint, fenced (`environment-overridden`),
/// its line naming the variable and the file. FAILS before the fix: no
/// taint, no fence.
#[test]
fn an_environment_file_over_ours_is_fenced_under_real_systemd() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = scratch_dir();
    let scratch = dir.path();
    let host = Host::new(scratch);
    let kubelet = systemd_oracle::build_fake_kubelet(scratch);
    let env_file = scratch.join("kubelet-env");
    write(&env_file, "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=\n");
    let log = scratch.join("k.log");
    let unit = format!(
        "[Service]\nType=simple\nStandardError=append:{}\nEnvironmentFile=-{}\n\
         ExecStart={} --v=2\n",
        log.display(),
        env_file.display(),
        kubelet.display()
    );
    host.add_unit("k.service", &unit, &[], Some((LABELS, TAINT)), true);
    let outcomes = host.run(vec!["k.service".into()], vec![], 1.0);
    let o = &outcomes["k.service"];
    let r = o
        .records
        .first()
        .unwrap_or_else(|| panic!("kubelet did not start: {:?}", o.props));
    // Review 21 r21a F1: kubelet gets no variable of ours (the file's
    // empty value, which systemd put above our drop-in's, included).
    assert_eq!(
        r.env_get("FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS")
            .as_deref(),
        None,
        "our variable reached kubelet"
    );
    let argv = words(r);
    let fence = "kubelet-labeler.io/fenced=environment-overridden:NoSchedule";
    assert!(
        argv.iter()
            .any(|w| w == &format!("--register-with-taints={TAINT},{fence}")),
        "{argv:?}"
    );
    let line = std::fs::read_to_string(&log).unwrap();
    assert!(
        line.contains(&format!(
            "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS (by EnvironmentFile= {})",
            env_file.display()
        )),
        "{line}"
    );
}
