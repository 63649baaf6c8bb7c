//! `iso fleet` as a command, with a stand-in selector (never run): pools
//! no machine can reach, `--dry-run`, each pool's device in the live
//! config, where the selector is found, and `--leave-to-nfd`.

use crate::iso_fleet::{MCS, PEM, base_iso, ok, selector};
use crate::support::iso::{gitops, gpu_and_numa_pools, gpu_pool, rules, stand_in_selector};
use crate::support::{bin, repo, scratch_dir};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// `iso fleet` with the test rules, NFD's openshift labels, the test MCS
/// and CA and the stand-in selector, without an ISO yet.
pub(crate) fn fleet_args(dir: &Path) -> Command {
    fleet_args_with(dir, &rules())
}

/// [`fleet_args`] with the rules of `rules`.
pub(crate) fn fleet_args_with(dir: &Path, rules: &Path) -> Command {
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, PEM).unwrap();
    let mut c = bin();
    c.args(["iso", "fleet", "--nfd-labels", "openshift", "--rules"])
        .arg(rules)
        .args(["--mcs-url", MCS, "--ca-file"])
        .arg(&ca)
        .arg("--selector")
        .arg(stand_in_selector(dir));
    c
}

pub(crate) fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A pool selected by a label no machine has before the install chooses
/// (the pool's own default label `node.kubernetes.io/<pool>=""`, which the
/// pool's MachineConfigs give only once a node is in the pool), or by a
/// value no rule gives (`gpu=yes` where the rule gives `true`), is never
/// chosen: every GPU machine would install into worker. Refused, naming the
/// pool, the label and what the rules give; nothing written.
#[test]
fn a_pool_no_machine_can_reach_is_refused() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    let sel = stand_in_selector(dir);
    let default_label = dir.join("gitops-default");
    ok(bin()
        .args(["render", "machineconfig", "--pool", "worker-gpu", "--rules"])
        .arg(rules())
        .args(["--nfd-labels", "openshift", "--wrapper"])
        .arg(&sel)
        .arg("--output-dir")
        .arg(&default_label)
        .output()
        .unwrap());
    let yes = gitops(
        dir,
        "worker-gpu",
        "feature.node.kubernetes.io/gpu=yes",
        &sel,
    );
    let iso = match base_iso(dir) {
        Some(iso) => iso,
        // Without the fixture ISO: any file; the refusal comes first.
        None => {
            let p = dir.join("base.iso");
            std::fs::write(&p, b"stand-in").unwrap();
            p
        }
    };
    let pristine = std::fs::read(&iso).unwrap();
    for (source, needles) in [
        (
            &default_label,
            &[
                "pool worker-gpu: no machine can be installed into it",
                "needs node.kubernetes.io/worker-gpu=",
                "NFD refuses labels in the namespace node.kubernetes.io",
                "pool worker-gpu's own MachineConfigs give that label",
                "feature.node.kubernetes.io/gpu=true",
            ][..],
        ),
        (
            &yes,
            &[
                "pool worker-gpu: no machine can be installed into it",
                "needs feature.node.kubernetes.io/gpu=yes",
                "machines get only feature.node.kubernetes.io/gpu=true (rule \"gpu-box\")",
            ][..],
        ),
    ] {
        let out = dir.join("fleet.iso");
        let o = fleet_args(dir)
            .args(["--dest-device", "/dev/sda", "-o"])
            .arg(&out)
            .arg(&iso)
            .arg(format!("--pool=worker-gpu={}", source.display()))
            .arg("--pool=worker")
            .output()
            .unwrap();
        let e = said(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        for n in needles {
            assert!(e.contains(n), "{n:?} in {e}");
        }
        assert!(!out.exists() && std::fs::read(&iso).unwrap() == pristine);
    }
}

/// `--dry-run --facts-root`: which pool each machine would install into and
/// which disk is wiped, as the selector decides, without an ISO; exit 1
/// when a machine would not install. Each pool may name its own device.
#[test]
fn dry_run_previews_each_machine_and_its_device() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    let (gpu, numa) = gpu_and_numa_pools(dir);
    let nodes = repo().join("tests/fixtures/nodes");
    let preview = |machines: &[&str]| {
        let mut c = fleet_args(dir);
        c.args([
            "--dry-run",
            "--dest-device",
            "/dev/sda",
            "--pool-dest-device",
            "worker-gpu=/dev/nvme0n1",
        ])
        .arg(format!("--pool=worker-gpu={}", gpu.display()))
        .arg(format!("--pool=worker-numa={}", numa.display()))
        .arg("--pool=worker");
        for m in machines {
            c.arg("--facts-root").arg(nodes.join(m));
        }
        c.output().unwrap()
    };
    let o = preview(&["desktop-2gpu", "vm", "server"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", said(&o));
    for line in [
        "pool worker-gpu: nodeSelector feature.node.kubernetes.io/gpu=true\n",
        "wiped on install: /dev/nvme0n1 (pool worker-gpu), /dev/sda (every other pool)\n",
    ] {
        assert!(out.contains(line), "{line:?} in {out}");
    }
    for (m, pool, dev) in [
        ("desktop-2gpu", "worker-gpu", "/dev/nvme0n1"),
        ("vm", "worker", "/dev/sda"),
        ("server", "worker-numa", "/dev/sda"),
    ] {
        let want = format!(
            "{}: would install into pool {pool} on {dev}:",
            nodes.join(m).display()
        );
        assert!(out.contains(&want), "{want:?} in {out}");
    }
    // A DGX (GPUs and NUMA) matches two custom pools: it would not install.
    let o = preview(&["dgx"]);
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("would not install:")
            && String::from_utf8_lossy(&o.stdout).contains("2 custom pools"),
        "{}",
        said(&o)
    );
    // An arm64 machine cannot boot the x86_64 ISO: it would not install
    // whatever its labels.
    let o = preview(&["rpi4", "vm"]);
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    let want = format!(
        "{}: cannot boot this ISO: the machine is aarch64 (its /proc/cpuinfo), the ISO is x86_64;",
        nodes.join("rpi4").display()
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&want), "{want:?} in {out}");
    assert!(!out.contains("rpi4: would install"), "{out}");
    // Without --dest-device every pool needs its own.
    let o = fleet_args(dir)
        .args(["--dry-run", "--pool-dest-device", "worker-gpu=/dev/nvme0n1"])
        .arg(format!("--pool=worker-gpu={}", gpu.display()))
        .arg("--pool=worker")
        .output()
        .unwrap();
    assert!(
        o.status.code() == Some(1)
            && said(&o).contains(
                "pool worker: no destination device; give --dest-device PATH (every pool's) or --pool-dest-device worker=PATH"
            ),
        "{}",
        said(&o)
    );
    for bad in ["worker-gpu", "worker-x=/dev/sdb"] {
        let o = fleet_args(dir)
            .args([
                "--dry-run",
                "--dest-device",
                "/dev/sda",
                "--pool-dest-device",
                bad,
            ])
            .arg(format!("--pool=worker-gpu={}", gpu.display()))
            .arg("--pool=worker")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{bad}: {}", said(&o));
        assert!(said(&o).contains("--pool-dest-device"), "{}", said(&o));
    }
}

/// The ISO: the live config carries each pool's own device in the pool
/// table (the selector writes it for coreos-installer) and the default in
/// coreos-installer's configuration; the command warns that booting it
/// wipes machines; `-o` over an existing file needs `-f`.
#[test]
fn pool_devices_reach_the_live_config_and_the_wipe_is_announced() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    let Some(base) = base_iso(dir) else { return };
    let gpu = gpu_pool(dir);
    let out = dir.join("fleet.iso");
    std::fs::write(&out, b"an older build").unwrap();
    let build = |force: bool| {
        let mut c = fleet_args(dir);
        c.args([
            "--dest-device",
            "/dev/sda",
            "--pool-dest-device",
            "worker-gpu=/dev/disk/by-path/pci-0000:01:00.0-nvme-1",
            "-o",
        ])
        .arg(&out)
        .arg(&base)
        .arg(format!("--pool=worker-gpu={}", gpu.display()))
        .arg("--pool=worker");
        if force {
            c.arg("-f");
        }
        c.output().unwrap()
    };
    let o = build(false);
    assert!(
        o.status.code() == Some(1) && said(&o).contains("exists; pass -f to replace it"),
        "{}",
        said(&o)
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"an older build");
    let o = ok(build(true));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains(&format!(
            "warning: every machine booted from {} whose hardware selects a pool is WIPED",
            out.display()
        )) && e.contains(
            "/dev/disk/by-path/pci-0000:01:00.0-nvme-1 (pool worker-gpu), /dev/sda (every other pool)"
        ),
        "{e}"
    );
    let live = iso_show(&out);
    let file = |path: &str| config_file(&live, path);
    let table =
        kubelet_labeler::node::fleet::Table::parse(&file(kubelet_labeler::node::fleet::TABLE_PATH))
            .unwrap();
    let devices: Vec<(&str, Option<&str>)> = table
        .pools
        .iter()
        .map(|p| (p.name.as_str(), p.device.as_deref()))
        .collect();
    assert_eq!(
        devices,
        [
            (
                "worker-gpu",
                Some("/dev/disk/by-path/pci-0000:01:00.0-nvme-1")
            ),
            ("worker", Some("/dev/sda"))
        ]
    );
    // coreos-installer refuses a second dest-device: the ISO's own
    // configuration names none, the selector writes the chosen pool's.
    let installer = file(kubelet_labeler::cli::iso::fleet::INSTALLER_CONFIG_PATH);
    assert!(
        !installer.contains("dest-device") && installer.contains("ignition-file: "),
        "{installer}"
    );
}

/// Installed as the README says (the CLI alone in a bin directory, where a
/// plain `cargo install` also leaves a dynamically linked
/// `kubelet-labeler-select`), `iso fleet` finds `kubelet-labeler-select-<arch>`
/// beside it. Missing, the error names every path looked at, the dynamic one
/// as refused, and a command that puts the selector at the exact path.
#[test]
fn the_selector_is_found_beside_an_installed_cli_or_its_path_named() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = tmp.path();
    let bin_dir = dir.join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let cli = bin_dir.join("kubelet-labeler");
    let built = env!("CARGO_BIN_EXE_kubelet-labeler");
    for name in ["kubelet-labeler", "kubelet-labeler-select"] {
        let to = bin_dir.join(name);
        if std::fs::hard_link(built, &to).is_err() {
            std::fs::copy(built, &to).unwrap();
        }
    }
    let sel = stand_in_selector(dir);
    let gpu = gitops(
        dir,
        "worker-gpu",
        "feature.node.kubernetes.io/gpu=true",
        &sel,
    );
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, PEM).unwrap();
    let preview = |arch: &str| {
        Command::new(&cli)
            .args(["iso", "fleet", "--dry-run", "--arch", arch])
            .args([
                "--dest-device",
                "/dev/sda",
                "--nfd-labels",
                "openshift",
                "--rules",
            ])
            .arg(rules())
            .args(["--mcs-url", MCS, "--ca-file"])
            .arg(&ca)
            .arg(format!("--pool=worker-gpu={}", gpu.display()))
            .arg("--pool=worker")
            .output()
            .unwrap()
    };
    for arch in ["x86_64", "aarch64"] {
        let o = preview(arch);
        let e = said(&o);
        let exact = bin_dir.join(format!("kubelet-labeler-select-{arch}"));
        assert_eq!(o.status.code(), Some(1), "{e}");
        for needle in [
            format!("no static kubelet-labeler-select for {arch} found beside this program"),
            format!("looked for {}", exact.display()),
            format!(
                "{} is dynamically linked",
                bin_dir.join("kubelet-labeler-select").display()
            ),
            format!(
                "`install -m 0755 \"$(bash machineconfigs/build-wrapper.sh {arch} kubelet-labeler-select)\" {}`",
                exact.display()
            ),
        ] {
            assert!(e.contains(&needle), "{needle:?} in {e}");
        }
    }
    // Put where it said: found.
    std::fs::copy(&sel, bin_dir.join("kubelet-labeler-select-x86_64")).unwrap();
    let o = preview("x86_64");
    assert!(o.status.success(), "{}", said(&o));
}

/// `build-wrapper.sh` from another directory, with a relative
/// `CARGO_TARGET_DIR` (the caller's): the path it prints is the program it
/// built, from where it was run.
#[test]
fn build_wrapper_runs_from_any_directory() {
    let Some(sel) = selector("x86_64") else {
        return;
    };
    let elsewhere = Path::new(env!("CARGO_TARGET_TMPDIR")).join("..");
    let out = ok(Command::new("bash")
        .arg(repo().join("machineconfigs/build-wrapper.sh"))
        .args(["x86_64", "kubelet-labeler-select"])
        .current_dir(&elsewhere)
        .env("CARGO_TARGET_DIR", "payload-test")
        .output()
        .unwrap());
    let printed = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    assert!(printed.is_absolute(), "{}", printed.display());
    assert_eq!(
        std::fs::read(&printed).unwrap(),
        std::fs::read(&sel).unwrap()
    );
}

/// `--leave-to-nfd` on `iso fleet`: a rule file with a rule only the
/// cluster's NFD can apply is refused, naming the flag; with the rule left
/// to NFD (a warning line), the selector evaluates the rest as before.
#[test]
fn a_rule_left_to_nfd_is_not_evaluated_at_install() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    let gpu = gpu_pool(dir);
    let nfd_only = dir.join("nfd-only.yaml");
    std::fs::write(
        &nfd_only,
        "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {name: nfd-only}\n\
         spec:\n  rules:\n  - name: sgx\n    extendedResources: {example.com/sgx: \"1\"}\n\
         \x20   matchFeatures: [{feature: cpu.cpuid, matchExpressions: {SSE2: {op: Exists}}}]\n",
    )
    .unwrap();
    let preview = |leave: &[&str]| {
        let mut c = fleet_args(dir);
        c.arg("--rules").arg(&nfd_only);
        for l in leave {
            c.args(["--leave-to-nfd", l]);
        }
        c.args(["--dry-run", "--dest-device", "/dev/sda"])
            .arg(format!("--pool=worker-gpu={}", gpu.display()))
            .arg("--pool=worker")
            .arg("--facts-root")
            .arg(repo().join("tests/fixtures/nodes/desktop-2gpu"));
        c.output().unwrap()
    };
    let o = preview(&[]);
    assert!(!o.status.success());
    assert!(
        said(&o).contains("--leave-to-nfd nfd-only/sgx"),
        "{}",
        said(&o)
    );
    let o = preview(&["sgx"]);
    assert!(o.status.success(), "{}", said(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.matches("warning: rule \"sgx\" of NodeFeatureRule \"nfd-only\"")
            .count(),
        1,
        "{err}"
    );
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("would install into pool worker-gpu on /dev/sda:"),
        "{}",
        said(&o)
    );
}

/// `--leave-to-nfd` of a rule whose label a pool selects nodes by (review 9
/// riso F6): the machine would install into (and register in) another pool
/// and join this one once NFD labels it, without the pool's taints. Refused,
/// naming the rule, the pool and the fix; a left rule giving another label
/// is still taken.
#[test]
fn a_rule_left_to_nfd_giving_a_pools_label_is_refused() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    let gpu = gpu_pool(dir);
    // One rule a file: the rules the selector evaluates stay the pool's.
    let late = |name: &str, output: &str| {
        let p = dir.join(format!("{name}.yaml"));
        std::fs::write(
            &p,
            format!(
                "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {{name: late}}\n\
                 spec:\n  rules:\n  - name: {name}\n    {output}\n\
                 \x20   matchFeatures: [{{feature: cpu.cpuid, matchExpressions: {{SSE2: {{op: Exists}}}}}}]\n"
            ),
        )
        .unwrap();
        p
    };
    let preview = |file: &Path, leave: &str| {
        let mut c = fleet_args(dir);
        c.arg("--rules")
            .arg(file)
            .args(["--leave-to-nfd", leave])
            .args(["--dry-run", "--dest-device", "/dev/sda"])
            .arg(format!("--pool=worker-gpu={}", gpu.display()))
            .arg("--pool=worker")
            .arg("--facts-root")
            .arg(repo().join("tests/fixtures/nodes/vm"));
        c.output().unwrap()
    };
    for (leave, output, gives) in [
        (
            "late-gpu",
            "labels: {gpu: \"true\"}",
            "gives the label feature.node.kubernetes.io/gpu,",
        ),
        (
            "late-template",
            "labelsTemplate: \"{{ range .cpu.cpuid }}cpu-{{ .Name }}=true\\n{{ end }}\"",
            "may give any label through its labelsTemplate",
        ),
    ] {
        let o = preview(&late(leave, output), leave);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{leave}: {}", said(&o));
        assert!(
            err.contains(&format!(
                "Error: --leave-to-nfd late/{leave}: rule \"{leave}\""
            )) && err.contains(gives)
                && err.contains("pool worker-gpu's nodeSelector")
                && err.contains("evaluate the rule at boot"),
            "{leave}: {err}"
        );
        assert!(!String::from_utf8_lossy(&o.stdout).contains("would install"));
    }
    let other = late("late-other", "labels: {example.com/other: \"true\"}");
    let o = preview(&other, "late-other");
    assert!(o.status.success(), "{}", said(&o));
}

/// The live config of the ISO `iso`, as `iso show` gives it.
pub(crate) fn iso_show(iso: &Path) -> Value {
    serde_json::from_slice(&ok(bin().args(["iso", "show"]).arg(iso).output().unwrap()).stdout)
        .unwrap()
}

/// The file `path` an Ignition config writes, decoded.
pub(crate) fn config_file(config: &Value, path: &str) -> String {
    let f = config
        .pointer("/storage/files")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} in {config}"));
    let url = kubelet_labeler::cli::render::encoding::DataUrl {
        source: f["contents"]["source"].as_str().unwrap().to_string(),
        compression: f["contents"]["compression"]
            .as_str()
            .map(|c| if c == "gzip" { "gzip" } else { "?" }),
    };
    String::from_utf8(kubelet_labeler::cli::render::encoding::decode(&url).unwrap()).unwrap()
}
