//! The built binary's inputs without an end or past their caps: /dev/zero
//! given to every flag that reads a file, gzip bombs in MachineConfigs,
//! and ISOs whose embed area is past any live ISO's.

use crate::io_safety::{MERGE, RENDER_MC, inputs, run};
use crate::support::{BIN, scratch_dir, skipped, stderr, write};

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Run under a 1 GiB address-space limit, so a read that grows without
/// bound fails fast instead of taking the machine's memory.
fn run_bounded(dir: &Path, args: &[&str], stdin: Stdio) -> Output {
    Command::new("sh")
        .args(["-c", "ulimit -v 1048576 && exec \"$@\"", "sh", BIN])
        .args(args)
        .current_dir(dir)
        .stdin(stdin)
        .output()
        .unwrap()
}

/// /dev/zero (a file with no end) given to every flag that reads a file,
/// and as stdin where `-` or no file means stdin: refused, naming the file
/// and the limit, with nothing written; node facts read under a root whose
/// files have no end stay capped too.
#[test]
fn endless_inputs_are_refused_at_their_limit() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    inputs(dir);
    let pool = ["--pool", "gpu", "--wrapper", "wrapper"];
    let z = "/dev/zero";
    let cases: Vec<(Vec<&str>, bool, &str, &str)> = vec![
        // (args, /dev/zero on stdin, name in the message, limit)
        (
            [
                &["render", "machineconfig"][..],
                &pool,
                &["--rules", z, "-o", "out"],
            ]
            .concat(),
            false,
            z,
            "16 MiB, the most --rules reads",
        ),
        (
            [
                &["render", "machineconfig"][..],
                &pool,
                &["--rules", "-", "-o", "out"],
            ]
            .concat(),
            true,
            "<stdin>",
            "16 MiB, the most --rules reads",
        ),
        (
            [&RENDER_MC[..5], &[z, "-o", "out"]].concat(),
            false,
            z,
            "1 MiB, the most --wrapper reads",
        ),
        (
            vec!["explain", "--machineconfig", z],
            false,
            z,
            "64 MiB, the most --machineconfig reads",
        ),
        (
            vec!["explain", "--machineconfig", "-"],
            true,
            "<stdin>",
            "64 MiB, the most --machineconfig reads",
        ),
        (
            vec!["explain", "--root", "host", "--rules", z],
            false,
            z,
            "16 MiB, the most --rules reads",
        ),
        (
            [&["render", "ignition"][..], &MERGE, &[z, "-o", "out"]].concat(),
            false,
            z,
            "1 MiB, the most --ca-file reads",
        ),
        (
            [&["iso", "embed"][..], &MERGE, &[z, "-o", "out", "no.iso"]].concat(),
            false,
            z,
            "1 MiB, the most --ca-file reads",
        ),
        (
            vec!["iso", "embed", "-i", z, "-o", "out", "no.iso"],
            false,
            z,
            "16 MiB, the most iso embed -i reads",
        ),
        (
            vec!["iso", "embed", "-o", "out", "no.iso"],
            true,
            "<stdin>",
            "16 MiB, the most iso embed -i reads",
        ),
    ];
    let fleet = ["iso", "fleet", "--dest-device", "/dev/sda", "-o", "out"];
    let mcs = ["--mcs-url", "https://api-int.c.example.com:22623"];
    let cases = [
        cases,
        vec![
            (
                [
                    &fleet[..],
                    &["--pool", "gpu=/dev/zero", "--selector", "wrapper", "no.iso"],
                ]
                .concat(),
                false,
                z,
                "64 MiB, the most iso fleet --pool reads",
            ),
            (
                [
                    &fleet[..],
                    &mcs,
                    &["--pool", "gpu", "--ca-file", z, "no.iso"],
                ]
                .concat(),
                false,
                z,
                "1 MiB, the most --ca-file reads",
            ),
            (
                [
                    &fleet[..],
                    &mcs,
                    &[
                        "--pool",
                        "gpu",
                        "--ca-file",
                        "ca.pem",
                        "--selector",
                        z,
                        "no.iso",
                    ],
                ]
                .concat(),
                false,
                z,
                "1 MiB, the most --selector reads",
            ),
        ],
    ]
    .concat();
    for (args, on_stdin, name, limit) in cases {
        let stdin = if on_stdin {
            Stdio::from(std::fs::File::open(z).unwrap())
        } else {
            Stdio::null()
        };
        let out = run_bounded(dir, &args, stdin);
        let err = stderr(&out);
        assert!(
            out.status.code() == Some(1) && err.contains(&format!("{name} is larger than {limit}")),
            "{args:?}: {} {err}",
            out.status
        );
        assert!(!dir.join("out").exists(), "{args:?} wrote out");
    }
    // explain --root: a unit's EnvironmentFile= with no end.
    write(
        &dir.join("envhost/usr/lib/systemd/system/kubelet.service"),
        "[Service]\nEnvironmentFile=/etc/kubelet.env\nExecStart=/usr/bin/kubelet $ARGS\n",
    );
    std::fs::create_dir_all(dir.join("envhost/etc")).unwrap();
    // Not a link to the host's /dev/zero: explain resolves links inside the
    // root. A FIFO, which systemd would wait on and read without end:
    // refused unopened (review 44 r44c F2), nothing waited for.
    let fifo = dir.join("envhost/etc/kubelet.env");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let out = run_bounded(dir, &["explain", "--root", "envhost"], Stdio::null());
    let err = stderr(&out);
    assert!(
        out.status.code() == Some(1)
            && err.contains("reading /etc/kubelet.env: not a regular file (a FIFO or device)"),
        "{err}"
    );
    // Facts read node files capped (a /proc/cpuinfo or os-release with no
    // end is read up to its cap) and go on.
    let root = dir.join("endless");
    for f in [
        "proc/cpuinfo",
        "etc/os-release",
        "proc/sys/kernel/osrelease",
        "proc/config.gz",
        "proc/modules",
        "proc/swaps",
        "usr/src/linux/.config",
        "etc/kubernetes/node-feature-discovery/features.d/endless",
        "kubelet-labeler.cpuid",
        "sys/module/kvm_amd/parameters/sev",
        "sys/module/kvm_intel/parameters/tdx",
    ] {
        std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(z, root.join(f)).unwrap();
    }
    for args in [
        vec!["facts", "--root", "endless"],
        vec!["explain", "--root", "host", "--facts-root", "endless"],
    ] {
        let out = run_bounded(dir, &args, Stdio::null());
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
}

/// `mib` MiB of zeros gzip'ed, as a data URL (1/1000 of it on the wire).
fn gzip_bomb(mib: usize) -> String {
    use base64::Engine;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..mib {
        std::io::Write::write_all(&mut gz, &zeros).unwrap();
    }
    format!(
        "data:;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap())
    )
}

/// A MachineConfig of `count` files at `dir/N`, each the gzip'ed data
/// URL `url`, and a kubelet unit naming none.
fn gzip_bomb_machineconfig(dir: &str, count: usize, url: &str) -> String {
    let files: Vec<serde_json::Value> = (0..count)
        .map(|i| {
            serde_json::json!({ "path": format!("{dir}/{i}"),
                "contents": { "source": url, "compression": "gzip" } })
        })
        .collect();
    let mc = serde_json::json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": { "name": "50-bombs" },
        "spec": { "config": {
            "ignition": { "version": "3.4.0" },
            "storage": { "files": files },
            "systemd": { "units": [ { "name": "kubelet.service",
                "contents": "[Service]\nExecStart=/usr/bin/kubelet --v=2\n" } ] } } }
    });
    serde_json::to_string(&mc).unwrap()
}

/// Issue 32 item 14: a 3.5 MB MachineConfig of forty gzip'ed 64 MiB files
/// took 2.6 GB of memory and 2.5 GB of scratch disk in `explain
/// --machineconfig`. Now only the files explain reads are unpacked, each to
/// at most 16 MiB, all to at most 64 MiB: run under a 1 GiB address space
/// and a 40 MiB file-size limit, forty 32 MiB bombs nothing names (1.25 GiB
/// unpacked, which the old code held in memory) explain fine, and
/// bombs where explain reads are refused naming the MachineConfig, the
/// path and the cap.
#[test]
fn machineconfig_bombs_unpack_only_what_explain_reads_within_caps() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    let bounded = |args: &[&str]| {
        Command::new("sh")
            .args([
                "-c",
                "ulimit -v 1048576 && ulimit -f 40960 && exec \"$@\"",
                "sh",
                BIN,
            ])
            .args(args)
            .current_dir(dir)
            .env("TMPDIR", dir)
            .output()
            .unwrap()
    };
    let bomb = gzip_bomb(32);
    write(
        &dir.join("unread.json"),
        &gzip_bomb_machineconfig("/etc/bomb", 40, &bomb),
    );
    let out = bounded(&["explain", "--json", "--machineconfig", "unread.json"]);
    let err = stderr(&out);
    assert!(
        out.status.code().is_some_and(|c| c <= 1) && !err.contains("Error:"),
        "{err}"
    );
    let explained: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(explained["original_argv"][1], "--v=2", "{explained}");

    write(
        &dir.join("read.json"),
        &gzip_bomb_machineconfig("/etc/kubernetes/bomb", 40, &bomb),
    );
    let out = bounded(&["explain", "--machineconfig", "read.json"]);
    let err = stderr(&out);
    assert!(
        out.status.code() == Some(1)
            && err.contains("MachineConfig \"50-bombs\": /etc/kubernetes/bomb/")
            && err.contains(
                "its contents unpack to more than 16 MiB (explain lays out at most 16 MiB of a \
                 file, as much as it reads of one, and 64 MiB in all)"
            ),
        "{err}"
    );
    // The scratch trees went with the runs.
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// An ISO whose embed area or IGNINFO is far past any live ISO's (a
/// corrupt or forged image) is refused before it is read into memory.
#[test]
fn oversized_embed_areas_are_refused() {
    let Some(xorriso) = skipped::tool("xorriso") else {
        return;
    };
    let tmp = scratch_dir();
    let dir = tmp.path();
    let padded_info = format!(
        r#"{{"file": "images/ignition.img"}}{}"#,
        " ".repeat(70 << 10)
    );
    for (area_bytes, info, want) in [
        (
            256 << 10,
            padded_info,
            "COREOS/IGNINFO.JSO is 71711 bytes, more than 64 KiB (corrupt image?)",
        ),
        (
            17usize << 20,
            r#"{"file": "images/ignition.img"}"#.to_string(),
            "the embed area is 17825792 bytes, more than 16 MiB (live ISOs have 256 KiB; corrupt image?)",
        ),
    ] {
        let tree = dir.join("tree");
        let _ = std::fs::remove_dir_all(&tree);
        write(&tree.join("coreos/igninfo.json"), &info);
        std::fs::create_dir_all(tree.join("images")).unwrap();
        std::fs::File::create(tree.join("images/ignition.img"))
            .unwrap()
            .set_len(area_bytes as u64)
            .unwrap();
        let iso = dir.join("big.iso");
        let _ = std::fs::remove_file(&iso);
        let st = Command::new(&xorriso)
            .args(["-as", "mkisofs", "-quiet", "-R", "-J", "-o"])
            .arg(&iso)
            .arg(&tree)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        let out = run(dir, &["iso", "show", "big.iso"]);
        assert!(
            out.status.code() == Some(1) && stderr(&out).contains(want),
            "{want}: {}",
            stderr(&out)
        );
    }
    // The root directory's record (in the primary volume descriptor at
    // sector 16, offset 156; its length at +10, little-endian) made to
    // claim 16 MiB and a byte, inside the 17 MiB image.
    let mut bytes = std::fs::read(dir.join("big.iso")).unwrap();
    let at = 16 * 2048 + 156 + 10;
    bytes[at..at + 4].copy_from_slice(&((16u32 << 20) + 1).to_le_bytes());
    std::fs::write(dir.join("forged.iso"), &bytes).unwrap();
    let out = run(dir, &["iso", "show", "forged.iso"]);
    assert!(
        out.status.code() == Some(1)
            && stderr(&out)
                .contains("a directory of 16777217 bytes, more than 16 MiB (corrupt image?)"),
        "{}",
        stderr(&out)
    );
}

/// `explain --machineconfig DIR` with many large files (sparse: nothing on
/// disk), each under the per-file limit: refused by their sizes, before one
/// is read, naming the directory and the fix (r19c F5: each was read whole
/// before any was parsed, ~61 MB of memory a file, without bound).
#[test]
fn a_directory_of_many_large_files_is_refused_before_it_is_read() {
    let tmp = scratch_dir();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("mcd")).unwrap();
    for i in 0..5 {
        let f = std::fs::File::create(dir.join(format!("mcd/{i}.yaml"))).unwrap();
        f.set_len(60 << 20).unwrap();
    }
    let o = run_bounded(dir, &["explain", "--machineconfig", "mcd"], Stdio::null());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "--machineconfig mcd: its 5 manifest files come to 300 MiB, more than is left of \
             the 256 MiB this command reads in all of the files it is given; give a directory \
             holding only the manifests to read"
        ),
        "{}",
        stderr(&o)
    );
}
