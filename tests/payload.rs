//! The wrapper payload as MachineConfigs carry it: static, for the requested
//! architecture, small; and the aarch64 build really works (under
//! qemu-aarch64-static, exec'ing a native program as the node's kubelet).

use crate::support::{readme_figures, scratch_dir, skipped, systemd_oracle};

use std::path::{Path, PathBuf};
use std::process::Command;

use kubelet_labeler::cli::render::machineconfig::{Arch, check_wrapper};

/// Build with the script the README's main command uses, in a target
/// directory of its own (cargo test holds the main one) inside the one these
/// tests were built in (CARGO_TARGET_DIR, where one is given).
fn build(arch: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join("machineconfigs/build-wrapper.sh"))
        .arg(arch)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("../payload-test"),
        )
        .output()
        .expect("running build-wrapper.sh");
    assert!(
        out.status.success(),
        "build-wrapper.sh {arch}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

fn musl_target_installed(arch: &str) -> bool {
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    let ok = out.is_ok_and(|o| {
        String::from_utf8_lossy(&o.stdout).contains(&format!("{arch}-unknown-linux-musl"))
    });
    if !ok {
        let why =
            format!("rust target {arch}-unknown-linux-musl is not installed (rustup target add)");
        skipped::skipped(&why);
    }
    ok
}

/// A unit whose ExecStart is the recorder (`--v=2`), and the directory
/// the recorder writes each argv into.
fn recorder_unit(dir: &Path) -> (PathBuf, PathBuf) {
    let recorder = systemd_oracle::build_fake_kubelet(dir);
    let units = dir.join("units");
    std::fs::create_dir_all(units.join("k.service.d")).unwrap();
    std::fs::write(
        units.join("k.service"),
        format!("[Service]\nExecStart={} --v=2\n", recorder.display()),
    )
    .unwrap();
    let records = dir.join("rec");
    std::fs::create_dir_all(&records).unwrap();
    (units, records)
}

/// The one argv the recorder wrote (hex words, one per line).
fn recorded(records: &Path) -> String {
    let rec = std::fs::read_dir(records)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::read_to_string(rec).unwrap()
}

/// The wrapper (through `runner`, e.g. qemu, when given) on the recorder
/// unit in `dir` (`recorder_unit`), its state in `dir`, env cleared but for
/// the recorder's directory.
fn wrapper_on_recorder(wrapper: &Path, runner: Option<&str>, dir: &Path) -> Command {
    let mut cmd = match runner {
        Some(r) => {
            let mut c = Command::new(r);
            c.arg(wrapper);
            c
        }
        None => Command::new(wrapper),
    };
    cmd.args(["--unit", "k.service", "--unit-path"])
        .arg(dir.join("units"))
        .arg("--state-dir")
        .arg(dir.join("state"))
        .env_clear()
        .env("RECORD_DIR", dir.join("rec"));
    cmd
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn static_payloads_for_both_architectures() {
    for (arch, a) in [("x86_64", Arch::X86_64), ("aarch64", Arch::Aarch64)] {
        if !musl_target_installed(arch) {
            return;
        }
        let path = build(arch);
        let bytes = std::fs::read(&path).unwrap();
        check_wrapper(&bytes, a, &path).unwrap();
        let other = if a == Arch::X86_64 {
            Arch::Aarch64
        } else {
            Arch::X86_64
        };
        assert!(check_wrapper(&bytes, other, &path).is_err());
        let encoded = kubelet_labeler::cli::render::encoding::data_url(&bytes)
            .source
            .len();
        println!(
            "{arch}: {} bytes, {encoded} bytes as a data URL",
            bytes.len()
        );
        // etcd's object limit is 1.5 MiB and the rendered config holds it too.
        assert!(encoded < 1024 * 1024, "{arch} payload {encoded} bytes");
    }
}

#[test]
fn aarch64_wrapper_runs_under_qemu() {
    if !musl_target_installed("aarch64") {
        return;
    }
    if !qemu_aarch64() {
        return;
    }
    let wrapper = build("aarch64");
    let dir = scratch_dir();
    let (units, records) = recorder_unit(dir.path());
    std::fs::write(
        units.join("k.service.d/zz-kubelet-labeler.conf"),
        "[Service]\nExecStart=\nExecStart=/x\n",
    )
    .unwrap();
    let out = wrapper_on_recorder(&wrapper, Some("qemu-aarch64-static"), dir.path())
        .env(
            "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS",
            "node.kubernetes.io/arm=",
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("--node-labels=node.kubernetes.io/arm="));
    let text = recorded(&records);
    assert!(
        text.contains(&hex("--node-labels=node.kubernetes.io/arm=")),
        "{text}"
    );
    assert!(text.contains(&hex("--v=2")));
}

/// The shipped wrapper has no panic machinery (`-Cpanic=immediate-abort`):
/// a panic is a trap instruction, an abort or a stack overflow ends in
/// SIGABRT. Each, once the original command is known, must still start
/// kubelet with that command and the static labels (before those are merged,
/// with the fence alone), and say why in one line; on both
/// architectures (aarch64 under qemu, whose trap is a different signal).
#[test]
fn shipped_wrapper_starts_kubelet_with_the_static_part_after_a_crash() {
    let mut runs = Vec::new();
    if musl_target_installed("x86_64") {
        runs.push((build("x86_64"), None));
    }
    if musl_target_installed("aarch64") && qemu_aarch64() {
        runs.push((build("aarch64"), Some("qemu-aarch64-static")));
    }
    for (wrapper, runner) in &runs {
        for fault in ["panic", "abort-late", "stack-overflow-late"] {
            let dir = scratch_dir();
            let (_, records) = recorder_unit(dir.path());
            let out = wrapper_on_recorder(wrapper, *runner, dir.path())
                .env("INVOCATION_ID", "0123456789abcdef0123456789abcdef")
                .env("KUBELET_LABELER_FAULT", fault)
                .env(
                    "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS",
                    "node.kubernetes.io/x=",
                )
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let what = format!("{} {fault}: {stderr}", wrapper.display());
            assert!(out.status.success(), "{what}");
            let lines: Vec<&str> = stderr
                .lines()
                .filter(|l| l.starts_with("kubelet-labeler:"))
                .collect();
            assert_eq!(
                lines,
                [
                    "kubelet-labeler: starting kubelet with our static labels/taints only \
                     (--node-labels=node.kubernetes.io/x=), without the rule-derived ones: \
                     internal error (a crash; a bug, please report)"
                ],
                "{what}"
            );
            let text = recorded(&records);
            assert!(text.contains(&hex("--v=2")), "{text}");
            assert!(
                text.contains(&hex("--node-labels=node.kubernetes.io/x=")),
                "{text}"
            );
        }
        // Before the static part is merged, with a static taint: the
        // fence alone.
        let dir = scratch_dir();
        let (_, records) = recorder_unit(dir.path());
        let out = wrapper_on_recorder(wrapper, *runner, dir.path())
            .env("INVOCATION_ID", "0123456789abcdef0123456789abcdef")
            .env("KUBELET_LABELER_FAULT", "abort-early")
            .env(
                "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS",
                "example.com/t=1:NoSchedule",
            )
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.starts_with(
                "kubelet-labeler: starting kubelet fenced, without our labels/taints (not merged \
                 yet): internal error (a crash; a bug, please report); registering fenced with \
                 kubelet-labeler.io/fenced=wrapper-died:NoSchedule"
            ),
            "{stderr}"
        );
        let text = recorded(&records);
        assert!(
            text.contains(&hex(
                "--register-with-taints=kubelet-labeler.io/fenced=wrapper-died:NoSchedule"
            )),
            "{text}"
        );
    }
    assert!(!runs.is_empty() || std::env::var_os("CI").is_none());
}

fn qemu_aarch64() -> bool {
    skipped::need("qemu-aarch64-static")
}

/// SIGPIPE ignored (as systemd's default `IgnoreSIGPIPE=yes` leaves it) and
/// SIGUSR2 blocked, set in the child after std's own signal reset.
fn inherit_signal_state(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    unsafe extern "C" {
        fn signal(sig: i32, handler: usize) -> usize;
        fn sigprocmask(how: i32, set: *const u64, old: *mut u64) -> i32;
    }
    const SIGPIPE: i32 = 13;
    const SIG_IGN: usize = 1;
    const SIG_BLOCK: i32 = 0;
    const SIGUSR2_BIT: u64 = 1 << (12 - 1);
    // SAFETY: both calls are async-signal-safe and touch only this child.
    unsafe {
        cmd.pre_exec(|| {
            let set = [SIGUSR2_BIT, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
            signal(SIGPIPE, SIG_IGN);
            sigprocmask(SIG_BLOCK, set.as_ptr(), std::ptr::null_mut());
            Ok(())
        });
    }
}

/// The recorder's `SigBlk:`/`SigIgn:` lines.
fn signal_lines(record: &str) -> Vec<&str> {
    record
        .lines()
        .filter(|l| l.starts_with("SigBlk:") || l.starts_with("SigIgn:"))
        .collect()
}

/// The shipped wrapper (its constructor and exec, not `Command`'s) hands
/// kubelet the signal state it inherited, on its normal path and after a
/// crash; the recorder started directly the same way is the reference.
#[test]
fn shipped_wrapper_hands_on_the_inherited_signal_state() {
    if !musl_target_installed("x86_64") {
        return;
    }
    let wrapper = build("x86_64");
    let dir = scratch_dir();
    let (_, records) = recorder_unit(dir.path());
    let mut direct = Command::new(dir.path().join("fake-kubelet/kubelet"));
    direct.env_clear().env("RECORD_DIR", &records);
    inherit_signal_state(&mut direct);
    assert!(direct.status().unwrap().success());
    let reference = recorded(&records);
    let reference = signal_lines(&reference);
    assert_eq!(reference.len(), 2, "{reference:?}");
    assert!(
        reference.iter().all(|l| !l.ends_with("0000000000000000")),
        "{reference:?}"
    );
    for fault in [None, Some("panic")] {
        let dir = scratch_dir();
        let (_, records) = recorder_unit(dir.path());
        let mut cmd = wrapper_on_recorder(&wrapper, None, dir.path());
        cmd.env("INVOCATION_ID", "0123456789abcdef0123456789abcdef")
            .env(
                "FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS",
                "node.kubernetes.io/x=",
            );
        if let Some(f) = fault {
            cmd.env("KUBELET_LABELER_FAULT", f);
        }
        inherit_signal_state(&mut cmd);
        let out = cmd.output().unwrap();
        let what = format!("{fault:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{what}");
        let text = recorded(&records);
        // A crash keeps the static labels (the crash handler's exec).
        assert!(text.contains(&hex("--node-labels")), "{what}");
        assert_eq!(signal_lines(&text), reference, "{what}");
    }
}

/// Each shipped wrapper carries only its own architecture's CPU name tables
/// (src/node/facts/cpu.rs): on a node tree of that architecture it must still
/// give NFD's cpuid labels (x86_64 natively on the DGX fixture, aarch64
/// under qemu on the Raspberry Pi one).
#[test]
fn shipped_wrappers_name_their_own_cpu_features() {
    let nodes = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nodes");
    let mut runs = Vec::new();
    if musl_target_installed("x86_64") {
        runs.push((build("x86_64"), None, "dgx", "cpu-cpuid.AVX2=true"));
    }
    if musl_target_installed("aarch64") && qemu_aarch64() {
        runs.push((
            build("aarch64"),
            Some("qemu-aarch64-static"),
            "rpi4",
            "cpu-cpuid.ASIMD=true",
        ));
    }
    assert!(!runs.is_empty() || std::env::var_os("CI").is_none());
    for (wrapper, runner, node, label) in runs {
        let dir = scratch_dir();
        let (_, records) = recorder_unit(dir.path());
        let out = wrapper_on_recorder(&wrapper, runner, dir.path())
            .arg("--facts-root")
            .arg(nodes.join(node))
            .env(kubelet_labeler::node::contract::NFD_LABELS_VAR, "upstream")
            .output()
            .unwrap();
        let what = format!("{node}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{what}");
        let text = recorded(&records);
        assert!(
            text.contains(&hex(&format!("feature.node.kubernetes.io/{label}"))),
            "{what}"
        );
    }
}

/// Run `cmd`; it must succeed (its stderr in the failure).
fn succeeded(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A full Ignition config carrying one shipped wrapper (and the rules of
/// examples/rules/openshift-gpu.yaml) either fits a live ISO's 256 KiB embed
/// area (the synthetic CoreOS ISO's, as RHCOS/FCOS lay it out) and
/// coreos-installer reads it back unchanged, or `iso embed` refuses it
/// naming the pointer config, which then fits and reads back. Prints how
/// much of the area each takes.
#[test]
fn a_full_config_or_else_its_pointer_config_fits_the_live_iso_embed_area() {
    let Some(fx) = skipped::shared("fixtures/coreos-installer") else {
        return;
    };
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rules/openshift-gpu.yaml");
    let cli = env!("CARGO_BIN_EXE_kubelet-labeler");
    let dir = scratch_dir();
    let mut base = Vec::new();
    std::io::Read::read_to_end(
        &mut xz2::read::XzDecoder::new(
            std::fs::File::open(fx.join("synthetic-coreos-base.iso.xz")).unwrap(),
        ),
        &mut base,
    )
    .unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, crate::iso_fleet::PEM).unwrap();
    let mut ran = 0;
    for arch in ["x86_64", "aarch64"] {
        if !musl_target_installed(arch) {
            continue;
        }
        let config = dir.path().join(format!("{arch}.ign"));
        succeeded(
            Command::new(cli)
                .args(["render", "ignition", "--pool", "gpu", "--rules"])
                .arg(&rules)
                .arg("--wrapper")
                .arg(build(arch))
                .arg("--output")
                .arg(&config),
        );
        let iso = dir.path().join(format!("{arch}.iso"));
        let embed = |config: &Path| {
            std::fs::write(&iso, &base).unwrap();
            Command::new(cli)
                .args(["iso", "embed", "-i"])
                .arg(config)
                .arg(&iso)
                .output()
                .unwrap()
        };
        let out = embed(&config);
        let embedded = match out.status.success() {
            true => config,
            false => {
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(
                    err.contains("embed a pointer config (render ignition --merge-url) instead"),
                    "{arch}: {err}"
                );
                println!("{arch}: the full config does not fit: {err}");
                let pointer = dir.path().join(format!("{arch}-pointer.ign"));
                succeeded(
                    Command::new(cli)
                        .args(["render", "ignition", "--pool", "gpu", "--merge-url"])
                        .arg("https://api-int.example.com:22623/config/gpu")
                        .arg("--ca-file")
                        .arg(&ca)
                        .arg("--output")
                        .arg(&pointer),
                );
                let out = embed(&pointer);
                assert!(
                    out.status.success(),
                    "{arch}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                pointer
            }
        };
        let area = kubelet_labeler::cli::iso::area_of(&iso).unwrap();
        let bytes = std::fs::read(&iso).unwrap();
        let start = area.offset as usize;
        let region = &bytes[start..start + area.length as usize];
        let used = region.len() - region.iter().rev().take_while(|&&b| b == 0).count();
        println!(
            "{arch}: {} of {} bytes, {used} of the {}-byte embed area",
            embedded.display(),
            std::fs::metadata(&embedded).unwrap().len(),
            area.length
        );
        // Read back by coreos-installer itself.
        let Some(ci) = skipped::tool("coreos-installer") else {
            return;
        };
        let out = succeeded(Command::new(ci).args(["iso", "ignition", "show"]).arg(&iso));
        assert_eq!(out.stdout, std::fs::read(&embedded).unwrap());
        ran += 1;
    }
    assert!(ran > 0 || std::env::var_os("CI").is_none());
}

/// The README's embed-area figures are what this code measures today: the
/// bytes a full config (the OpenShift GPU example's rules) takes of the live
/// ISO's embed area with the x86_64 wrapper and with the aarch64 one, and the
/// size of the both-arch config `iso embed` refuses, with that figure.
#[test]
fn readme_embed_area_figures_are_measured() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(fx) = skipped::shared("fixtures/coreos-installer/synthetic-coreos-base.iso.xz") else {
        return;
    };
    if !musl_target_installed("x86_64") || !musl_target_installed("aarch64") {
        return;
    }
    let mut base = Vec::new();
    std::io::Read::read_to_end(
        &mut xz2::read::XzDecoder::new(std::fs::File::open(&fx).unwrap()),
        &mut base,
    )
    .unwrap();
    let dir = scratch_dir();
    let plain = dir.path().join("plain.iso");
    std::fs::write(&plain, &base).unwrap();
    let area_length = kubelet_labeler::cli::iso::area_of(&plain).unwrap().length as usize;
    let wrappers = [build("x86_64"), build("aarch64")];
    // Embed a config rendered with these wrappers: Ok(bytes of the area
    // used) or Err(the refusal).
    let embed = |name: &str, wrappers: &[PathBuf]| -> Result<usize, String> {
        let config = dir.path().join(format!("{name}.ign"));
        let mut render = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"));
        render
            .args(["render", "ignition", "--pool", "worker-gpu", "--rules"])
            .arg(root.join("examples/rules/openshift-gpu.yaml"))
            .arg("--output")
            .arg(&config);
        for w in wrappers {
            render.arg("--wrapper").arg(w);
        }
        succeeded(&mut render);
        let iso = dir.path().join(format!("{name}.iso"));
        std::fs::write(&iso, &base).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
            .args(["iso", "embed", "-i"])
            .arg(&config)
            .arg(&iso)
            .output()
            .unwrap();
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        let area = kubelet_labeler::cli::iso::area_of(&iso).unwrap();
        let bytes = std::fs::read(&iso).unwrap();
        let region = &bytes[area.offset as usize..(area.offset + area.length) as usize];
        Ok(region.len() - region.iter().rev().take_while(|&&b| b == 0).count())
    };
    // What fits: the bytes of the area used; what does not: the figure
    // the refusal names.
    let figure = |r: Result<usize, String>| match r {
        Ok(used) => (used, "fits"),
        Err(e) => (
            e.split("the compressed archive is ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("the refusal names no archive size: {e}")),
            "does not fit",
        ),
    };
    let x86 = figure(embed("x86_64", &wrappers[..1]));
    let arm = figure(embed("aarch64", &wrappers[1..]));
    let both = figure(embed("both", &wrappers));
    assert_eq!(both.1, "does not fit");
    let with_commas = readme_figures::with_commas;
    let stated = format!(
        "with `--pool worker-gpu` and the rules of `examples/rules/openshift-gpu.yaml`, of the \
         live ISO's {}-byte embed area it takes {} bytes with the x86_64 wrapper ({}), {} with \
         the aarch64 one ({}), and {} with both (a mixed pool; {})",
        with_commas(area_length),
        with_commas(x86.0),
        x86.1,
        with_commas(arm.0),
        arm.1,
        with_commas(both.0),
        both.1
    );
    readme_figures::assert_docs_say(&stated);
}
