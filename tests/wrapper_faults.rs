//! Fault injection under a real systemd (user manager): for each fault the
//! recorder standing in for kubelet must end up running, and the wrapper's
//! journal line (stderr to a file) must say why it did what it did.

use crate::support::{readme_figures, scratch_dir, systemd_oracle, write};

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use kubelet_labeler::cli::render::arch::Arch;
use kubelet_labeler::cli::render::dropins;
use kubelet_labeler::node::contract::{RULES_VAR, WRAPPER_PATH};
use kubelet_labeler::node::kubelet::Profile;
use systemd_oracle::UserRun;

const LABEL: &str = "node.kubernetes.io/worker-gpu";
/// The kubeadm trials' taint: before the join there is no --config to merge it with.
const KADM_TAINT: &str = "nvidia.com/gpu=true:NoSchedule";

/// The env drop-in for `unit` in `units`.
fn env_dropin(units: &Path, unit: &str, labels: &str) {
    write(
        &units.join(format!("{unit}.d/90-kubelet-labeler-env.conf")),
        &format!("[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS={labels}\"\n"),
    );
}

/// The wrapper's arguments in a test: its search path and state directory.
fn wrapper_args(search_path: &str, state: &Path) -> String {
    format!(
        "--unit %n --profile openshift --unit-path {search_path} --state-dir {}",
        state.display()
    )
}

/// Our two drop-ins for `unit` (a name or a template) in `units`, the
/// wrapper's state in `state`.
fn wrap(units: &Path, unit: &str, search_path: &str, state: &Path, labels: &str) {
    let d = units.join(format!("{unit}.d"));
    env_dropin(units, unit, labels);
    let wrapper = env!("CARGO_BIN_EXE_kubelet-labeler-wrapper");
    let args = wrapper_args(search_path, state);
    let shipped = kubelet_labeler::cli::render::dropins::wrapper_dropin(
        kubelet_labeler::node::kubelet::Profile::OpenShift,
    )
    .replace("/usr/local/bin/kubelet-labeler-wrapper", wrapper)
    .replace("--unit %n --profile openshift", &args);
    write(&d.join("zz-kubelet-labeler.conf"), &shipped);
}

/// A generator case: unit name, the architectures the generator ships,
/// the bytes at this architecture's wrapper path (None: no file), and the
/// words its line must hold (None: it writes the drop-in).
type GeneratorCase = (&'static str, Vec<Arch>, Option<Vec<u8>>, Option<String>);

/// examples/rules/openshift-gpu.yaml's rule as `render` compiles it: NVIDIA display PCI functions.
const GPU_RULE: &str = "KLR5,1,nvidia-gpu-taint,0,~N,0,~N,1,nvidia.com/gpu,true,NoSchedule,\
1,pci.device,2,vendor,In,1,10de,class,In,2,0300,0302,~N,0";

/// The static taint every fallback keeps, as a unit's environment line.
const STATIC_TAINT_ENV: &str =
    "Environment=FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=example.com/dedicated=gpu:NoSchedule\n";
/// Node rules and the static taint.
const RULES_ENV: &str = "Environment=KUBELET_LABELER_NODE_RULES=KLR5,1,nvidia-gpu-taint,0,~N,0,~N,1,\
nvidia.com/gpu,true,NoSchedule,1,pci.device,2,vendor,In,1,10de,class,In,2,0300,0302,~N,0\n\
Environment=FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=example.com/dedicated=gpu:NoSchedule\n";

fn carries_static_taint(argv: &[String]) -> bool {
    argv.iter().any(|w| {
        w.starts_with("--register-with-taints=")
            && w.contains("example.com/dedicated=gpu:NoSchedule")
    })
}

/// A node root whose facts sources are garbage.
fn garbage_facts(scratch: &Path) -> std::path::PathBuf {
    let root = scratch.join("garbage-facts");
    let dev = root.join("sys/bus/pci/devices/0000:00:01.0");
    std::fs::create_dir_all(dev.join("class")).unwrap();
    std::fs::write(
        dev.join("uevent"),
        b"\xff\0PCI_CLASS=\xfe\nPCI_ID=10de\n".repeat(500),
    )
    .unwrap();
    std::fs::write(dev.join("vendor"), b"\xff\xff\xff").unwrap();
    let other = root.join("sys/bus/pci/devices/0000:00:02.0");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("uevent"), "PCI_CLASS=30000\nPCI_ID=10DE:zzzz\n").unwrap();
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::write(root.join("proc/cpuinfo"), b"\0\0\0".repeat(1000)).unwrap();
    root
}

fn carries_label(argv: &[String]) -> bool {
    argv.iter()
        .any(|w| w.starts_with("--node-labels=") && w.contains(LABEL))
}

/// A small deterministic generator; the seed is printed to replay a failure.
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

/// kubeadm: kubelet crash-loops before `join` (no config, no kubeconfig),
/// then the join writes them. 60 trials, each a unit instance failing N
/// times (random N in 1..=6) before it joins: the first start after the
/// join carries the labels every time, whatever the guard saw before.
/// The other faults share the manager.
#[test]
fn faults_under_real_systemd() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = scratch_dir();
    let scratch = dir.path();
    let units = scratch.join("units");
    std::fs::create_dir_all(&units).unwrap();
    let unit_dirs = vec![units.clone(), systemd_oracle::generator_dir(scratch)];
    let probe = UserRun::new(unit_dirs.clone(), vec![]);
    let search_path = systemd_oracle::search_path(&probe, scratch);
    let state = scratch.join("state");
    let recorder = systemd_oracle::build_fake_kubelet(scratch);
    // One "journal" per unit (no journald here).
    let logs = scratch.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let common = format!(
        "[Unit]\nStartLimitIntervalSec=0\n[Service]\nType=simple\nRestart=always\n\
         RestartSec=100ms\nStandardError=append:{}/%n.log\n",
        logs.display()
    );

    // kubeadm trials.
    let nodes = scratch.join("nodes");
    let mut seed: u64 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("kubeadm trial seed {seed}");
    let trials = KUBEADM_TRIALS;
    let mut joins = Vec::new();
    for t in 0..trials {
        let n = 1 + lcg(&mut seed) % 6;
        joins.push(n);
        let node = nodes.join(t.to_string());
        std::fs::create_dir_all(&node).unwrap();
        write(
            &units.join(format!("kadm@{t}.service.d/n.conf")),
            &format!("[Service]\nEnvironment=RECORDER_JOIN_AFTER={n}\n"),
        );
    }
    let n_dir = nodes.display();
    write(
        &units.join("kadm@.service"),
        &format!(
            "{common}Environment=RECORDER_SLEEP=60\n\
             Environment=RECORDER_FAIL_IF_MISSING={n_dir}/%i/config.yaml\n\
             Environment=RECORDER_JOIN_FILES={n_dir}/%i/config.yaml:{n_dir}/%i/kubelet.conf\n\
             Environment=FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS={KADM_TAINT}\n\
             ExecStart={} --bootstrap-kubeconfig={n_dir}/%i/bootstrap-kubelet.conf \
             --kubeconfig={n_dir}/%i/kubelet.conf --config={n_dir}/%i/config.yaml\n",
            recorder.display()
        ),
    );
    wrap(
        &units,
        "kadm@.service",
        &search_path,
        &state,
        &format!("{LABEL}="),
    );

    // Single faults: (unit, extra [Service] lines, labels, expected journal words,
    // whether the running kubelet carries the label).
    let faults: &[(&str, String, &str, &str, bool)] = &[
        // A label a kubelet of another version refuses (the recorder
        // plays it): the next start leaves out that label only.
        (
            "refused",
            "Environment=RECORDER_FAIL_IF_ARG=topology.kubernetes.io/zone=refused\n".into(),
            &format!("topology.kubernetes.io/zone=refused,{LABEL}="),
            "labels a kubelet of another version may refuse left out: topology.kubernetes.io/zone",
            true,
        ),
        // A quick failure that is not ours (a held port, a bad bootstrap
        // token: here the first start fails whatever its flags): the next
        // start keeps the labels and the taint.
        (
            "quickfail",
            format!(
                "Environment=RECORDER_FAIL_IF_MISSING={q}/released RECORDER_JOIN_AFTER=1 \
                 RECORDER_JOIN_FILES={q}/released\n{STATIC_TAINT_ENV}",
                q = scratch.join("quickfail").display()
            ),
            &format!("{LABEL}="),
            "starting kubelet with --node-labels",
            true,
        ),
        // Crashes, deaths and errors while the node rules run: kubelet
        // starts with the static labels and taint (the same start, or the
        // next after a death no handler sees: an OOM kill, a timeout).
        (
            "rules-panic",
            format!("Environment=KUBELET_LABELER_FAULT=panic\n{RULES_ENV}"),
            &format!("{LABEL}="),
            "starting kubelet with our static labels/taints only (--node-labels=",
            true,
        ),
        (
            "rules-abort",
            format!("Environment=KUBELET_LABELER_FAULT=abort-late\n{RULES_ENV}"),
            &format!("{LABEL}="),
            "starting kubelet with our static labels/taints only (--node-labels=",
            true,
        ),
        (
            "rules-killed",
            format!("Environment=KUBELET_LABELER_FAULT=kill-late\n{RULES_ENV}"),
            &format!("{LABEL}="),
            "rule-derived labels and taints left out: the previous start died before exec",
            true,
        ),
        (
            "rules-early-abort",
            format!("Environment=KUBELET_LABELER_FAULT=abort\n{RULES_ENV}"),
            &format!("{LABEL}="),
            "rule-derived labels and taints left out: the previous start died before exec",
            true,
        ),
        (
            "rules-error",
            format!("Environment=KUBELET_LABELER_FAULT=rules-error\n{RULES_ENV}"),
            &format!("{LABEL}="),
            "rule-derived labels and taints left out: injected",
            true,
        ),
        (
            "abort",
            "Environment=KUBELET_LABELER_FAULT=abort\n".into(),
            "x=",
            "died before exec",
            false,
        ),
        (
            "overflow",
            "Environment=KUBELET_LABELER_FAULT=stack-overflow\n".into(),
            "x=",
            "died before exec",
            false,
        ),
        (
            "badlabel",
            String::new(),
            "bad key!=x",
            "starting kubelet without our labels/taints: ",
            false,
        ),
        (
            "envfile-garbage",
            format!(
                "EnvironmentFile=-{}\n",
                scratch.join("garbage.env").display()
            ),
            "",
            "no labels or taints to add",
            false,
        ),
        (
            "config-unreadable",
            // Only a taint makes the wrapper read registerWithTaints there.
            "Environment=FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=example.com/gpu=true:NoSchedule\n"
                .into(),
            "x=",
            "--register-with-taints=example.com/gpu=true:NoSchedule,kubelet-labeler.io/fenced=kubelet-config-unreadable:NoSchedule",
            false,
        ),
        // A drop-in of garbage beside ours: systemd skips what it cannot
        // parse, and so does the wrapper.
        (
            "dropin-garbage",
            String::new(),
            &format!("{LABEL}="),
            "starting kubelet with --node-labels",
            true,
        ),
        // Node rules on a facts tree of garbage (binary uevent, a directory
        // where a file should be, unreadable cpuinfo): the rule matches
        // nothing, the static label is added.
        (
            "facts-garbage",
            format!("Environment={RULES_VAR}={GPU_RULE}\n"),
            &format!("{LABEL}="),
            "starting kubelet with --node-labels",
            true,
        ),
        (
            "state-unwritable",
            String::new(),
            &format!("{LABEL}="),
            "crash-loop guard off for this start: writing",
            true,
        ),
        // The state directory on a tmpfs with no room left (a full /run).
        (
            "run-full",
            String::new(),
            &format!("{LABEL}="),
            "crash-loop guard off for this start: writing /",
            true,
        ),
        (
            // Words appended to `sh -c` would be the script's "$@", which
            // this one passes on, but no rule can tell that from outside.
            "sh-c",
            String::new(),
            &format!("{LABEL}="),
            "starting kubelet without our labels/taints: the original ExecStart= runs /bin/sh",
            false,
        ),
        (
            "env",
            String::new(),
            &format!("{LABEL}="),
            "starting kubelet with --node-labels",
            true,
        ),
    ];
    std::fs::write(
        scratch.join("garbage.env"),
        b"\xff\xfe\0=\n=\n\\\n".repeat(1000),
    )
    .unwrap();
    // A kubelet config that is a directory: the wrapper cannot read it.
    let config_dir = scratch.join("config-is-a-dir");
    std::fs::create_dir_all(&config_dir).unwrap();
    // A state dir below a regular file: nothing can be written there.
    let blocker = scratch.join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    // A tmpfs filled to the last byte, mounted in the manager's namespace.
    let full_run = scratch.join("full-run");
    std::fs::create_dir_all(&full_run).unwrap();
    let mut names = Vec::new();
    for (name, extra, labels, _, _) in faults {
        let unit = format!("{name}.service");
        let rec = recorder.display();
        let exec_start = match *name {
            "config-unreadable" => format!("{rec} --v=2 --config={}", config_dir.display()),
            "sh-c" => format!("/bin/sh -c 'exec {rec} --v=2 \"$$@\"' sh"),
            "env" => format!("/usr/bin/env GODEBUG=x=1 {rec} --v=2"),
            // kubelet could have refused ours: its config and kubeconfig
            // are there (the guard blames only such a start).
            "quickfail" => {
                let q = scratch.join("quickfail");
                std::fs::create_dir_all(&q).unwrap();
                std::fs::write(
                    q.join("config.yaml"),
                    "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n",
                )
                .unwrap();
                std::fs::write(q.join("kubelet.conf"), "").unwrap();
                format!(
                    "{rec} --v=2 --kubeconfig={q}/kubelet.conf --config={q}/config.yaml",
                    q = q.display()
                )
            }
            _ => format!("{rec} --v=2"),
        };
        write(
            &units.join(&unit),
            &format!("{common}Environment=RECORDER_SLEEP=60\n{extra}ExecStart={exec_start}\n"),
        );
        let st = match *name {
            "state-unwritable" => blocker.join("state"),
            "run-full" => full_run.join("kubelet-labeler"),
            _ => state.clone(),
        };
        wrap(&units, &unit, &search_path, &st, labels);
        match *name {
            "dropin-garbage" => std::fs::write(
                units.join(format!("{unit}.d/50-garbage.conf")),
                b"\xff\xfe garbage\n=\nno equals sign\n[No Such Section]\nExecStart=/x\n\
                  [Service]\nNoSuchSetting=1\n"
                    .repeat(100),
            )
            .unwrap(),
            "facts-garbage" => {
                let ours = units.join(format!("{unit}.d/zz-kubelet-labeler.conf"));
                let text = std::fs::read_to_string(&ours).unwrap();
                let root = garbage_facts(scratch);
                let with_root = text.replace(
                    " --unit-path ",
                    &format!(" --facts-root {} --unit-path ", root.display()),
                );
                assert_ne!(text, with_root);
                std::fs::write(&ours, with_root).unwrap();
            }
            _ => {}
        }
        names.push(unit);
    }

    // The wrapper's own binary: the generator installs its drop-in only
    // when this is runnable here. (unit, architectures the generator ships,
    // what is at this architecture's wrapper path, expected manager-log
    // words; None: the drop-in is written and labels are added.)
    let built = std::fs::read(env!("CARGO_BIN_EXE_kubelet-labeler-wrapper")).unwrap();
    let host = Arch::of_elf(&built).expect("the wrapper is built for an architecture we ship");
    let other = if host == Arch::X86_64 {
        Arch::Aarch64
    } else {
        Arch::X86_64
    };
    // An aarch64 build in the x86_64 wrapper's place (or the other way
    // round): the same bytes with the other e_machine, which the kernel
    // refuses to exec (ENOEXEC).
    let mut foreign = built.clone();
    foreign[18..20].copy_from_slice(&other.elf_machine().to_le_bytes());
    let generated: Vec<GeneratorCase> = vec![
        ("arch-ok", vec![host, other], Some(built.clone()), None),
        (
            "arch-foreign",
            vec![host, other],
            Some(foreign.clone()),
            Some(format!("is not an {host} program (ELF header 7f454c46")),
        ),
        (
            "arch-missing",
            vec![host, other],
            None,
            Some("is missing or not executable".into()),
        ),
        (
            "arch-unshipped",
            vec![other],
            Some(built.clone()),
            Some(format!("no wrapper for {host} is shipped (only {other})")),
        ),
        // RHCOS at boot: the wrapper's directory is not there when the
        // generator runs (it trusts render), then the wrong-arch binary
        // appears (as /var gets mounted). The first start fails (203); its
        // ExecStopPost= net reloads, the generator now refuses, and the
        // restart runs kubelet unchanged.
        (
            "arch-late-foreign",
            vec![host, other],
            None,
            Some(format!("is not an {host} program (ELF header 7f454c46")),
        ),
    ];
    // A manager of their own: the net's daemon-reload must not disturb the
    // crash loops above.
    let scratch2 = scratch.join("generated-run");
    std::fs::create_dir_all(&scratch2).unwrap();
    let unit_dirs2 = vec![units.clone(), systemd_oracle::generator_dir(&scratch2)];
    let search_path2 =
        systemd_oracle::search_path(&UserRun::new(unit_dirs2.clone(), vec![]), &scratch2);
    let mut gen_names = Vec::new();
    let gens = scratch.join("generators");
    for (name, arches, binary, _) in &generated {
        let unit = format!("{name}.service");
        let bin = scratch.join(format!("bin-{name}"));
        if *name != "arch-late-foreign" {
            std::fs::create_dir_all(&bin).unwrap();
        }
        let prefix = bin.join("kubelet-labeler-wrapper");
        if let Some(bytes) = binary {
            let exe = bin.join(format!("kubelet-labeler-wrapper.{host}"));
            std::fs::write(&exe, bytes).unwrap();
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        write(
            &units.join(&unit),
            &format!(
                "{common}Environment=RECORDER_SLEEP=60\nExecStart={} --v=2\n",
                recorder.display()
            ),
        );
        env_dropin(&units, &unit, &format!("{LABEL}="));
        let script = dropins::generator(Profile::OpenShift, &unit, arches)
            .replace(WRAPPER_PATH, prefix.to_str().unwrap())
            .replace(
                "--unit %n --profile openshift",
                &wrapper_args(&search_path2, &state),
            )
            .replace("systemctl daemon-reload", "systemctl --user daemon-reload");
        let g = gens.join(name);
        write(&g, &script);
        std::fs::set_permissions(&g, std::fs::Permissions::from_mode(0o755)).unwrap();
        gen_names.push(unit);
    }
    // Control: the foreign binary behind a static drop-in (no generator):
    // systemd cannot exec it, and kubelet never runs.
    let static_foreign = scratch.join("bin-static-foreign/kubelet-labeler-wrapper");
    std::fs::create_dir_all(static_foreign.parent().unwrap()).unwrap();
    std::fs::write(&static_foreign, &foreign).unwrap();
    std::fs::set_permissions(&static_foreign, std::fs::Permissions::from_mode(0o755)).unwrap();
    // RestartSec=1h: after its one failed exec the unit waits, so its
    // ExecMainStatus still says 203 when the oracle reads it (at 100ms a new
    // attempt may have begun and reset it, under load).
    write(
        &units.join("static-foreign.service"),
        &format!(
            "{common}RestartSec=1h\nEnvironment=RECORDER_SLEEP=60\nExecStart={} --v=2\n",
            recorder.display()
        ),
    );
    write(
        &units.join("static-foreign.service.d/zz-kubelet-labeler.conf"),
        &dropins::wrapper_dropin(Profile::OpenShift)
            .replace(WRAPPER_PATH, static_foreign.to_str().unwrap())
            .replace(
                "--unit %n --profile openshift",
                &wrapper_args(&search_path2, &state),
            ),
    );
    gen_names.push("static-foreign.service".into());

    let mut all: Vec<String> = (0..trials).map(|t| format!("kadm@{t}.service")).collect();
    all.extend(names.iter().cloned());
    let mut run = UserRun::new(unit_dirs.clone(), all);
    run.settle_secs = 8.0;
    let full = full_run.display();
    run.setup = format!(
        "mount -t tmpfs -o size=16k tmpfs {full} || exit 91\n\
         dd if=/dev/zero of={full}/fill bs=4096 2>/dev/null\n\
         mkdir -p {full}/kubelet-labeler\n"
    );
    let outcomes = systemd_oracle::run_user_manager(&run, scratch);

    let mut run2 = UserRun::new(unit_dirs2, gen_names);
    run2.settle_secs = 8.0;
    run2.generator_path = Some(gens.display().to_string());
    let late = scratch.join("bin-arch-late-foreign");
    let late_exe = late.join(format!("kubelet-labeler-wrapper.{host}"));
    let foreign_file = scratch.join("foreign");
    std::fs::write(&foreign_file, &foreign).unwrap();
    run2.before_start = format!(
        "mkdir -p {} && install -m 755 {} {}\n",
        late.display(),
        foreign_file.display(),
        late_exe.display()
    );
    let outcomes2 = systemd_oracle::run_user_manager(&run2, &scratch2);
    let manager_log = systemd_oracle::manager_log(&scratch2);
    let journal =
        |unit: &str| std::fs::read_to_string(logs.join(format!("{unit}.log"))).unwrap_or_default();

    for (t, n) in joins.iter().enumerate() {
        let unit = format!("kadm@{t}.service");
        let o = &outcomes[&unit];
        let journal = journal(&unit);
        let starts: Vec<Vec<String>> = o.records.iter().map(|r| r.argv_lossy()).collect();
        let n = *n as usize;
        assert_eq!(
            starts.len(),
            n + 1,
            "trial {t}: {n} failed starts, then one that runs; got {starts:?} {:?}\n{journal}",
            o.props
        );
        assert!(
            carries_label(&starts[n]),
            "trial {t}: the first start after the join lacks the label: {starts:?}\n{journal}"
        );
        // Before the join too: the missing --config has no registerWithTaints
        // to merge with (kubelet exits without it), so the taint goes in.
        let taint = format!("--register-with-taints={KADM_TAINT}");
        assert!(
            starts
                .iter()
                .all(|s| carries_label(s) && s.contains(&taint)),
            "trial {t}: a start without the label and taint: {starts:?}\n{journal}"
        );
        assert!(
            !journal.contains("without our labels/taints"),
            "trial {t}: {journal}"
        );
        assert_eq!(o.prop("ActiveState"), "active", "trial {t}");
    }
    for (name, extra, _, why, labelled) in faults {
        let o = &outcomes[&format!("{name}.service")];
        let journal = journal(&format!("{name}.service"));
        let last = o.records.last().map(|r| r.argv_lossy()).unwrap_or_default();
        assert_eq!(
            o.prop("ActiveState"),
            "active",
            "{name}: {:?}\n{journal}",
            o.props
        );
        assert!(!last.is_empty(), "{name}: kubelet never ran\n{journal}");
        assert_eq!(carries_label(&last), *labelled, "{name}: {last:?}");
        assert!(journal.contains(why), "{name}: no {why:?} in\n{journal}");
        if extra.contains("EXTRA_TAINTS=example.com/dedicated") {
            // What render validated is never lost because something of
            // ours failed or kubelet failed for a reason not ours.
            assert!(carries_static_taint(&last), "{name}: {last:?}\n{journal}");
            assert!(
                !journal.contains("without our labels/taints"),
                "{name}: {journal}"
            );
        }
    }
    // Fail closed: a start without the rules' taint registers fenced (the
    // rule gives a taint), with the reason, and says how to lift it.
    for (name, reason) in [
        ("rules-panic", "rules-failed"),
        ("rules-abort", "rules-failed"),
        ("rules-error", "rules-failed"),
        ("rules-killed", "wrapper-died"),
        ("rules-early-abort", "wrapper-died"),
        ("config-unreadable", "kubelet-config-unreadable"),
    ] {
        let o = &outcomes[&format!("{name}.service")];
        let last = o.records.last().map(|r| r.argv_lossy()).unwrap_or_default();
        let journal = journal(&format!("{name}.service"));
        let fence = format!("kubelet-labeler.io/fenced={reason}:NoSchedule");
        assert!(
            last.iter()
                .any(|w| w.starts_with("--register-with-taints=") && w.ends_with(&fence)),
            "{name}: {last:?}\n{journal}"
        );
        assert!(
            journal.contains("`kubectl taint node <node> kubelet-labeler.io/fenced-`"),
            "{name}: {journal}"
        );
    }
    // The refused label went alone, after one failed start.
    let refused = &outcomes["refused.service"].records;
    let last = refused.last().unwrap().argv_lossy();
    assert!(
        !last
            .iter()
            .any(|w| w.contains("topology.kubernetes.io/zone")),
        "{last:?}"
    );
    // The quick failure not ours: two starts, both with ours.
    let quick: Vec<Vec<String>> = outcomes["quickfail.service"]
        .records
        .iter()
        .map(|r| r.argv_lossy())
        .collect();
    assert_eq!(quick.len(), 2, "{quick:?}");
    assert!(
        quick
            .iter()
            .all(|a| carries_label(a) && carries_static_taint(a)),
        "{quick:?}"
    );
    // kubelet under `sh -c` got exactly what the script gives it.
    let sh = &outcomes["sh-c.service"].records;
    assert!(
        sh.iter()
            .all(|r| r.argv_lossy() == [recorder.display().to_string(), "--v=2".to_string()]),
        "{:?}",
        sh.iter().map(|r| r.argv_lossy()).collect::<Vec<_>>()
    );
    // The garbage facts matched no GPU: no taint from the rule.
    let facts = &outcomes["facts-garbage.service"].records;
    assert!(
        facts.iter().all(|r| r
            .argv_lossy()
            .iter()
            .all(|w| !w.starts_with("--register-with-taints"))),
        "{:?}",
        facts.iter().map(|r| r.argv_lossy()).collect::<Vec<_>>()
    );
    // The full tmpfs, not some other error, turned the guard off.
    let full_journal = journal("run-full.service");
    assert!(
        full_journal.contains("No space left on device"),
        "{full_journal}"
    );
    for (name, _, _, why) in &generated {
        let unit = format!("{name}.service");
        let o = &outcomes2[&unit];
        // Where the generator refused, no drop-in of ours is loaded: kubelet
        // never went through a wrapper that could not run.
        let ours = o
            .dropins()
            .iter()
            .any(|d| d.ends_with("zz-kubelet-labeler.conf"));
        assert_eq!(ours, why.is_none(), "{name}: {:?}", o.props);
        let journal = journal(&unit);
        let last = o.records.last().map(|r| r.argv_lossy()).unwrap_or_default();
        assert_eq!(o.prop("ActiveState"), "active", "{name}: {:?}", o.props);
        match why {
            None => {
                assert!(carries_label(&last), "{name}: {last:?}\n{journal}");
                assert!(
                    o.dropins()
                        .iter()
                        .any(|d| d.ends_with("zz-kubelet-labeler.conf")),
                    "{name}: {:?}",
                    o.props
                );
                assert!(
                    journal.contains("starting kubelet with --node-labels"),
                    "{journal}"
                );
            }
            Some(why) if *name == "arch-late-foreign" => {
                // One failed start (203), then kubelet with its own argv.
                assert_eq!(
                    last,
                    [recorder.display().to_string(), "--v=2".to_string()],
                    "{name}: {journal}\n{manager_log}"
                );
                assert_eq!(o.records.len(), 1, "{name}: {:?}", o.props);
                // (NRestarts does not survive the reload.) The net's line in
                // the unit's journal, then the reloaded generator's.
                assert!(
                    manager_log.lines().any(|l| l.contains(why.as_str())
                        && l.contains("arch-late-foreign.service starts unchanged")),
                    "{name}: {manager_log}"
                );
                assert!(
                    journal.contains(why.as_str())
                        && journal.contains(
                            "reloading so that arch-late-foreign.service starts unchanged"
                        ),
                    "{name}: {journal}"
                );
            }
            Some(why) => {
                // kubelet with its own ExecStart, at the first start (one
                // record), and the line.
                assert_eq!(
                    last,
                    [recorder.display().to_string(), "--v=2".to_string()],
                    "{name}"
                );
                assert_eq!(o.records.len(), 1, "{name}: {:?}", o.props);
                let line = manager_log
                    .lines()
                    .find(|l| l.starts_with("kubelet-labeler: ") && l.contains(&unit))
                    .unwrap_or_else(|| panic!("{name}: no generator line in\n{manager_log}"));
                assert!(
                    line.contains(why.as_str()) && line.contains("starts unchanged"),
                    "{name}: {line}"
                );
            }
        }
    }
    let control = &outcomes2["static-foreign.service"];
    assert!(control.records.is_empty(), "{:?}", control.records);
    // systemd's own status for "could not exec" (NRestarts is reset by
    // the oracle's reset-failed).
    assert_eq!(control.prop("ExecMainStatus"), "203", "{:?}", control.props);

    // At most two failed starts for a crash or a refusal.
    for name in [
        "refused",
        "abort",
        "overflow",
        "quickfail",
        "rules-killed",
        "rules-early-abort",
    ] {
        let restarts: u32 = outcomes[&format!("{name}.service")]
            .prop("NRestarts")
            .parse()
            .unwrap();
        assert!(restarts <= 2, "{name}: {restarts} restarts");
    }
}

/// How many kubeadm pre-join crash loops the fault test runs.
const KUBEADM_TRIALS: usize = 60;

#[test]
fn readme_states_the_kubeadm_trial_count() {
    readme_figures::assert_docs_say(&format!(
        "({KUBEADM_TRIALS} trials, random 1-6 failed starts each)"
    ));
    readme_figures::assert_docs_say(&format!("{KUBEADM_TRIALS} kubeadm pre-join crash loops"));
}
