//! dist/build-static.sh: the CLI (with `iso`, so liblzma compiled from source
//! for musl) static for x86_64 and aarch64, the wrappers beside it, and a
//! SHA256SUMS that `sha256sum -c` accepts. Each binary then works on its own:
//! x86_64 natively, aarch64 under qemu-aarch64-static. It renders the same
//! MachineConfigs as the cargo-built CLI, taking the wrapper from beside
//! itself, writes drop-ins, and embeds Ignition in an ISO byte for byte as
//! coreos-installer 0.27.0 did (../shared/fixtures/coreos-installer).

use crate::support::{readme_figures, repo, scratch_dir, skipped};

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kubelet_labeler::cli::render::machineconfig::{Arch, check_wrapper};

fn ok(o: Output, what: &str) -> Output {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Skips (or, under CI, fails) when a file the build needs is missing,
/// naming how to install it.
fn need_file(path: &str, why: &str) -> bool {
    let present = Path::new(path).is_file();
    if !present {
        skipped::skipped(why);
    }
    present
}

/// What the script needs for `arch`, as it checks it itself.
fn toolchain_present(arch: &str) -> bool {
    let (cc, musl) = match arch {
        "x86_64" => ("gcc", "musl-dev"),
        _ => (
            "aarch64-linux-gnu-gcc",
            "musl-dev:arm64 (dpkg --add-architecture arm64 first)",
        ),
    };
    skipped::need(cc)
        && need_file(
            &format!("/usr/include/{arch}-linux-musl/stdlib.h"),
            &format!("musl headers for {arch} missing (apt-get install {musl})"),
        )
        && (arch == "x86_64" || skipped::need("qemu-aarch64-static"))
}

/// Run the script for one arch into `out`. The target directory is the one
/// tests/payload.rs builds the wrappers in (cargo test holds the main one),
/// so the wrapper builds are shared.
fn build(arch: &str, out: &Path) {
    ok(
        Command::new("bash")
            .arg(repo().join("dist/build-static.sh"))
            .arg("-o")
            .arg(out)
            .arg(arch)
            .env(
                "CARGO_TARGET_DIR",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("../payload-test"),
            )
            .output()
            .expect("running build-static.sh"),
        &format!("build-static.sh {arch}"),
    );
}

/// A command running `exe` natively or under qemu for aarch64.
fn runner(arch: &str, exe: &Path) -> Command {
    if arch == "aarch64" {
        let mut c = Command::new("qemu-aarch64-static");
        c.arg(exe);
        c
    } else {
        Command::new(exe)
    }
}

fn fixture_dir() -> Option<PathBuf> {
    skipped::shared("fixtures/coreos-installer")
}

fn static_cli_works(arch: &str, a: Arch) {
    if !toolchain_present(arch) {
        return;
    }
    let Some(fx) = fixture_dir() else { return };
    let dir = scratch_dir();
    let out = dir.path().join("dist");
    build(arch, &out);
    let cli = out.join(format!("kubelet-labeler-{arch}"));
    let wrapper = out.join(format!("kubelet-labeler-wrapper-{arch}"));

    // SHA256SUMS: what sha256sum itself checks, and naming both files.
    let sums = std::fs::read_to_string(out.join("SHA256SUMS")).unwrap();
    let names: Vec<&str> = sums.lines().filter_map(|l| l.split("  ").nth(1)).collect();
    let mut want = [
        format!("kubelet-labeler-{arch}"),
        format!("kubelet-labeler-select-{arch}"),
        format!("kubelet-labeler-wrapper-{arch}"),
    ];
    want.sort();
    assert_eq!(names, want, "{sums}");
    ok(
        Command::new("sha256sum")
            .args(["-c", "--strict", "SHA256SUMS"])
            .current_dir(&out)
            .output()
            .unwrap(),
        "sha256sum -c",
    );

    // Static, of this arch: no interpreter, no DT_NEEDED, per our own ELF
    // check and per ldd.
    let bytes = std::fs::read(&cli).unwrap();
    check_wrapper(&bytes, a, &cli).unwrap();
    let ldd = Command::new("ldd").arg(&cli).output().unwrap();
    let ldd_says =
        String::from_utf8_lossy(&ldd.stdout).to_string() + &String::from_utf8_lossy(&ldd.stderr);
    assert!(
        ldd_says.contains("statically linked") || ldd_says.contains("not a dynamic executable"),
        "ldd {}: {ldd_says}",
        cli.display()
    );
    println!("{arch}: kubelet-labeler {} bytes", bytes.len());
    // The size docs/install.md states as "about": within 0.2 MiB, so that
    // an ordinary change to the CLI does not make the page false.
    readme_figures::assert_docs_say_about(
        &format!("MiB ({arch})"),
        bytes.len() as f64 / (1024.0 * 1024.0),
        0.2,
    );

    let version = ok(
        runner(arch, &cli).arg("--version").output().unwrap(),
        "--version",
    );
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        // The version with its node format, as every render stamps it.
        kubelet_labeler::cli::render::RENDERED_BY
    );

    // render machineconfig takes the wrapper from beside itself and writes
    // what the cargo-built CLI writes with that wrapper named.
    let args = [
        "render",
        "machineconfig",
        "--pool",
        "worker-gpu",
        "--label",
        "example.com/gpu=yes",
        "--arch",
        arch,
        "-o",
        "-",
    ];
    let ours = ok(runner(arch, &cli).args(args).output().unwrap(), "render");
    let reference = ok(
        Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
            .args(args)
            .arg("--wrapper")
            .arg(&wrapper)
            .output()
            .unwrap(),
        "render (cargo-built)",
    );
    assert!(
        ours.stdout == reference.stdout,
        "render machineconfig differs"
    );

    // render dropins: the wrapper of this arch lands in the tree.
    let tree = dir.path().join("root");
    ok(
        runner(arch, &cli)
            .args([
                "render",
                "dropins",
                "--create-root",
                "--label",
                "example.com/gpu=yes",
                "--root",
            ])
            .arg(&tree)
            .output()
            .unwrap(),
        "render dropins",
    );
    let of_arch = if arch == "aarch64" {
        Arch::Aarch64
    } else {
        Arch::X86_64
    };
    let installed = tree
        .join(kubelet_labeler::cli::render::dropins::wrapper_path(of_arch).trim_start_matches('/'));
    assert!(
        std::fs::read(&installed).unwrap() == std::fs::read(&wrapper).unwrap(),
        "{} is not the wrapper beside the CLI",
        installed.display()
    );

    // iso embed: liblzma as built here writes coreos-installer's bytes.
    // The fixture's CA data URL ends in an escaped newline, which Ignition
    // refuses (tests/iso.rs checks that refusal): embed it unchecked.
    let mut iso = Vec::new();
    xz2::read::XzDecoder::new(
        std::fs::File::open(fx.join("synthetic-coreos-base.iso.xz")).unwrap(),
    )
    .read_to_end(&mut iso)
    .unwrap();
    let iso_path = dir.path().join("live.iso");
    std::fs::write(&iso_path, &iso).unwrap();
    let area = kubelet_labeler::cli::iso::area_of(&iso_path).unwrap();
    ok(
        runner(arch, &cli)
            .args(["iso", "embed", "--no-validate", "-i"])
            .arg(fx.join("pointer.ign"))
            .arg(&iso_path)
            .output()
            .unwrap(),
        "iso embed",
    );
    let embedded = std::fs::read(&iso_path).unwrap();
    let want = std::fs::read(fx.join("embed-area-pointer.ign.bin")).unwrap();
    let start = area.offset as usize;
    assert_eq!(&embedded[start..start + want.len()], want.as_slice());
    let shown = ok(
        runner(arch, &cli)
            .args(["iso", "show"])
            .arg(&iso_path)
            .output()
            .unwrap(),
        "iso show",
    );
    assert_eq!(shown.stdout, std::fs::read(fx.join("pointer.ign")).unwrap());

    // iso fleet takes the selector of its --arch from beside itself.
    let fleet_iso = dir.path().join("fleet.iso");
    let base = dir.path().join("base.iso");
    std::fs::write(&base, &iso).unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(
        &ca,
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    ok(
        runner(arch, &cli)
            .args(["iso", "fleet", "--arch", arch, "--dest-device", "/dev/sda"])
            .args(["--nfd-labels", "openshift", "--pool", "worker"])
            .args([
                "--mcs-url",
                "https://api-int.c.example.com:22623",
                "--ca-file",
            ])
            .arg(&ca)
            .arg("-o")
            .arg(&fleet_iso)
            .arg(&base)
            .output()
            .unwrap(),
        "iso fleet",
    );
    let selector = std::fs::read(out.join(format!("kubelet-labeler-select-{arch}"))).unwrap();
    let live: serde_json::Value =
        serde_json::from_slice(&kubelet_labeler::cli::iso::show(&fleet_iso).unwrap()).unwrap();
    let file = &live["storage"]["files"][0];
    assert_eq!(file["path"], "/usr/local/bin/kubelet-labeler-select");
    let carried = kubelet_labeler::cli::render::layout::decode_data_url(
        file["contents"]["source"].as_str().unwrap(),
        file["contents"]["compression"].as_str(),
    )
    .unwrap();
    assert!(carried == selector, "the ISO carries another selector");
}

#[test]
fn static_x86_64_cli_works_alone() {
    static_cli_works("x86_64", Arch::X86_64);
}

#[test]
fn static_aarch64_cli_works_under_qemu() {
    static_cli_works("aarch64", Arch::Aarch64);
}
