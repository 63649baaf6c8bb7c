//! Review 10 r10c: an embed area written to hide a config from `iso show`
//! (and coreos-installer) that the kernel unpacks at boot over the one
//! shown, or over ours once `iso embed -f` / `iso fleet` keeps it: every
//! `iso` command refuses the image, naming the member and why, and writes
//! nothing. Each image is the fixture ISO with a hostile area, built here.

use crate::iso::{ok, run};
use crate::support::iso::{FixtureIso, xz_crc32};
use crate::support::{bin, scratch_dir, skipped, stderr};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub(crate) const DECOY: &[u8] =
    br#"{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"decoy"}]}}"#;
pub(crate) const ATTACKER: &[u8] =
    br#"{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"attacker"}]}}"#;
const OURS: &[u8] = br#"{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"ours"}]}}"#;

/// A newc member as a hostile image writes it: any name bytes, any mode.
pub(crate) fn member(name: &[u8], mode: u32, data: &[u8]) -> Vec<u8> {
    let mut e = b"070701".to_vec();
    for v in [0, mode, 0, 0, 1, 0, data.len() as u32, 0, 0, 0, 0] {
        e.extend(format!("{v:08x}").bytes());
    }
    e.extend(format!("{:08x}{:08x}", name.len() + 1, 0).bytes());
    e.extend(name);
    e.push(0);
    e.resize(e.len().div_ceil(4) * 4, 0);
    e.extend(data);
    e.resize(e.len().div_ceil(4) * 4, 0);
    e
}

/// Members, then the trailer: an uncompressed archive.
pub(crate) fn archive(members: &[Vec<u8>]) -> Vec<u8> {
    [members.concat(), member(b"TRAILER!!!", 0, b"")].concat()
}

pub(crate) fn file(name: &[u8], data: &[u8]) -> Vec<u8> {
    member(name, 0o100_600, data)
}

/// The fixture ISO with `area` at the start of its embed area.
fn with_area(base: &Path, name: &str, area: &[u8]) -> PathBuf {
    let e = kubelet_labeler::cli::iso::area_of(base).unwrap();
    assert!(area.len() as u64 <= e.length);
    let mut iso = std::fs::read(base).unwrap();
    iso[e.offset as usize..e.offset as usize + area.len()].copy_from_slice(area);
    let p = base.with_file_name(name);
    std::fs::write(&p, iso).unwrap();
    p
}

/// `iso show`, `iso embed` (with -f and without), `iso remove` and
/// `iso embed -o` all refuse `iso` with `why` in their message, and leave
/// it as it was.
fn refused_by_every_command(iso: &Path, ours: &Path, why: &str) {
    refused(iso, ours, why, true)
}

/// The same without `iso show`, which reads what the others refuse to
/// write back.
fn refused_by_every_command_but_show(iso: &Path, ours: &Path, why: &str) {
    refused(iso, ours, why, false)
}

fn refused(iso: &Path, ours: &Path, why: &str, show: bool) {
    let before = std::fs::read(iso).unwrap();
    let out = iso.with_extension("out.iso");
    let ours = ours.as_os_str();
    let iso_arg = iso.as_os_str();
    let runs: [&[&std::ffi::OsStr]; 5] = [
        &["show".as_ref(), iso_arg],
        &["embed".as_ref(), "-i".as_ref(), ours, iso_arg],
        &[
            "embed".as_ref(),
            "-f".as_ref(),
            "-i".as_ref(),
            ours,
            iso_arg,
        ],
        &[
            "embed".as_ref(),
            "-f".as_ref(),
            "-i".as_ref(),
            ours,
            "-o".as_ref(),
            out.as_ref(),
            iso_arg,
        ],
        &["remove".as_ref(), iso_arg],
    ];
    for args in runs.into_iter().skip(usize::from(!show)) {
        let o = run(bin().arg("iso").args(args));
        let err = stderr(&o);
        assert!(
            !o.status.success() && err.contains(why) && err.contains(&iso.display().to_string()),
            "{}: iso {args:?}: {err}",
            iso.display()
        );
        assert!(o.stdout.is_empty(), "{args:?}");
        assert!(
            std::fs::read(iso).unwrap() == before,
            "{args:?}: image changed"
        );
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
}

/// F1 (`x/../config.ign`, `config.ign<NUL>x` after a decoy, or alone so
/// no -f was needed), F2 (a later symlink or directory at config.ign) and
/// F3 (a decoy archive at an offset 1 mod 4 after a gzip stream, where the
/// kernel stops): before, `iso show` printed the decoy (rc 0) or said there
/// was no config, and `iso embed` wrote the hostile member back after ours.
#[test]
fn hostile_embed_areas_are_refused_by_every_command() {
    let Some(FixtureIso { dir, base, .. }) = FixtureIso::new() else {
        return;
    };
    let d = dir.path();
    let ours = d.join("ours.ign");
    std::fs::write(&ours, OURS).unwrap();
    let decoy = || file(b"config.ign", DECOY);
    let mut unaligned = {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&archive(&[file(b"config.ign", ATTACKER)]))
            .unwrap();
        gz.finish().unwrap()
    };
    while unaligned.len() % 4 != 1 {
        unaligned.push(0);
    }
    unaligned.extend(archive(&[decoy()]));
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "dotdot.iso",
            [
                archive(&[decoy()]),
                archive(&[
                    member(b"x", 0o40_755, b""),
                    file(b"x/../config.ign", ATTACKER),
                ]),
            ]
            .concat(),
            r#"named "x/../config.ign", not a clean path: the kernel would write it at "config.ign" (over config.ign"#,
        ),
        (
            "nul.iso",
            [
                archive(&[decoy()]),
                xz_crc32(&archive(&[file(b"config.ign\0x", ATTACKER)])),
            ]
            .concat(),
            r#"named "config.ign\0x", with a NUL inside its name: the kernel takes the name up to its first NUL and would write "config.ign""#,
        ),
        (
            "hidden.iso",
            archive(&[file(b"config.ign\0x", ATTACKER)]),
            "with a NUL inside its name",
        ),
        (
            "symlink.iso",
            [
                archive(&[decoy()]),
                archive(&[
                    file(b"real.ign", ATTACKER),
                    member(b"config.ign", 0o120_777, b"real.ign"),
                ]),
            ]
            .concat(),
            "leaves a symlink at config.ign, not the regular file Ignition reads",
        ),
        (
            "dir.iso",
            archive(&[decoy(), member(b"config.ign", 0o40_755, b"")]),
            "leaves a directory at config.ign",
        ),
        (
            "unaligned.iso",
            unaligned,
            "not a multiple of 4, where the kernel stops unpacking",
        ),
    ];
    for (name, area, why) in cases {
        let iso = with_area(&base, name, &area);
        refused_by_every_command(&iso, &ours, why);
    }
}

/// An ISO of `files` (paths under its root) with `info` as
/// COREOS/IGNINFO.JSO, made by xorriso in `d`.
fn build_iso(d: &Path, xorriso: &Path, name: &str, info: &str, files: &[(&str, &[u8])]) -> PathBuf {
    let tree = d.join("tree");
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::create_dir_all(tree.join("coreos")).unwrap();
    std::fs::write(tree.join("coreos/igninfo.json"), info).unwrap();
    for (path, bytes) in files {
        let p = tree.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    let iso = d.join(name);
    let st = Command::new(xorriso)
        .args(["-as", "mkisofs", "-quiet", "-R", "-J", "-o"])
        .arg(&iso)
        .arg(&tree)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    iso
}

/// F1 (IGNINFO variant): IGNINFO gives the area as the first 4 KiB of
/// images/ignition.img; the boot loader loads the whole file and the
/// kernel unpacks an archive after those 4 KiB over ours. Before, `iso
/// show` said there was no config and `iso embed` wrote ours before it.
/// Zeros there are fine; an area at an offset not 4-aligned is refused.
#[test]
fn data_after_igninfos_area_in_its_file_is_refused() {
    let Some(xorriso) = skipped::tool("xorriso") else {
        return;
    };
    let dir = scratch_dir();
    let d = dir.path();
    let ours = d.join("ours.ign");
    std::fs::write(&ours, OURS).unwrap();
    let build = |name: &str, info: &str, img: &[u8]| {
        build_iso(d, &xorriso, name, info, &[("images/ignition.img", img)])
    };
    let info = r#"{"file":"images/ignition.img","length":4096}"#;
    let mut img = vec![0u8; 4096];
    img.extend(archive(&[file(b"config.ign", ATTACKER)]));
    img.resize(16384, 0);
    let iso = build("tail.iso", info, &img);
    refused_by_every_command(
        &iso,
        &ours,
        "holds data after the embed area COREOS/IGNINFO.JSO gives (4096 bytes at offset 0): the kernel unpacks the whole file at boot",
    );
    let iso = build("zeros.iso", info, &[0u8; 16384]);
    ok(run(bin().args(["iso", "embed", "-i"]).arg(&ours).arg(&iso)));
    assert_eq!(ok(run(bin().args(["iso", "show"]).arg(&iso))).stdout, OURS);
    let info = r#"{"file":"images/ignition.img","offset":2,"length":4096}"#;
    let iso = build("offset.iso", info, &[0u8; 16384]);
    refused_by_every_command(
        &iso,
        &ours,
        "not a multiple of 4, where the kernel reads no archive",
    );
}

/// What `iso embed` writes over an area holding another member (a network
/// keyfile) is what coreos-installer and we read back, the kernel's way.
#[test]
fn areas_we_write_read_back_in_coreos_installer() {
    let Some((FixtureIso { dir, base, .. }, ci)) = FixtureIso::with("coreos-installer") else {
        return;
    };
    let d = dir.path();
    let ours = d.join("ours.ign");
    std::fs::write(&ours, OURS).unwrap();
    let area = [
        archive(&[
            member(b"etc", 0o40_755, b""),
            member(b"etc/coreos-firstboot-network", 0o40_755, b""),
            file(b"etc/coreos-firstboot-network/eth0.nmconnection", b"[c]\n"),
        ]),
        xz_crc32(&archive(&[file(b"config.ign", DECOY)])),
    ]
    .concat();
    let iso = with_area(&base, "net.iso", &area);
    assert_eq!(ok(run(bin().args(["iso", "show"]).arg(&iso))).stdout, DECOY);
    ok(run(bin()
        .args(["iso", "embed", "-f", "-i"])
        .arg(&ours)
        .arg(&iso)));
    for show in [
        bin().args(["iso", "show"]).arg(&iso),
        Command::new(&ci)
            .args(["iso", "ignition", "show"])
            .arg(&iso),
    ] {
        assert_eq!(ok(run(show)).stdout, OURS);
    }
    let out = ok(run(Command::new(&ci)
        .args(["iso", "network", "extract"])
        .arg(&iso)));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("[c]"),
        "{}",
        stderr(&out)
    );
}

/// Directories, as a hostile area writes them.
fn dirs(names: &[&str]) -> Vec<Vec<u8>> {
    names
        .iter()
        .map(|n| member(n.as_bytes(), 0o40_755, b""))
        .collect()
}

/// Review 12 r12c F1: an area holding files coreos-installer never writes
/// there (an Ignition base config fragment, merged into every config
/// Ignition runs; a unit wanted by initrd.target), with no config.ign or
/// beside one. Before, `iso show` said there was no config (or showed
/// config.ign alone), and `iso embed` (no -f needed) and `iso fleet` wrote
/// them back beside ours. coreos-installer's own members still pass.
#[test]
fn members_coreos_installer_never_writes_are_refused_by_every_command() {
    let Some(FixtureIso { dir, base, .. }) = FixtureIso::new() else {
        return;
    };
    let d = dir.path();
    let ours = d.join("ours.ign");
    std::fs::write(&ours, OURS).unwrap();
    let base_d = [
        dirs(&[
            "usr",
            "usr/lib",
            "usr/lib/ignition",
            "usr/lib/ignition/base.d",
        ]),
        vec![file(b"usr/lib/ignition/base.d/00-evil.ign", ATTACKER)],
    ]
    .concat();
    let unit = [
        dirs(&[
            "etc",
            "etc/systemd",
            "etc/systemd/system",
            "etc/systemd/system/initrd.target.wants",
        ]),
        vec![file(
            b"etc/systemd/system/initrd.target.wants/evil.service",
            b"[Unit]\nDefaultDependencies=no\n[Service]\nExecStart=/bin/true\n",
        )],
    ]
    .concat();
    let network = [
        dirs(&["etc", "etc/coreos-firstboot-network"]),
        vec![file(
            b"etc/coreos-firstboot-network/eth0.nmconnection",
            b"[c]\n",
        )],
    ]
    .concat();
    let config = || vec![file(b"config.ign", DECOY)];
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "extra.iso",
            xz_crc32(&archive(&[base_d.clone(), unit].concat())),
            "holds a file at etc/systemd/system/initrd.target.wants/evil.service (and 8 other \
             members), which coreos-installer never writes there",
        ),
        (
            "beside.iso",
            [
                archive(&[config(), network.clone()].concat()),
                xz_crc32(&archive(&base_d)),
            ]
            .concat(),
            "holds a file at usr/lib/ignition/base.d/00-evil.ign (and 4 other members), which",
        ),
        (
            "dir.iso",
            archive(&[network.clone(), dirs(&["etc/coreos-firstboot-network/d"])].concat()),
            "holds a directory at etc/coreos-firstboot-network/d, which",
        ),
    ];
    for (name, area, why) in cases {
        let iso = with_area(&base, name, &area);
        refused_by_every_command(&iso, &ours, why);
        let out = d.join("fleet.iso");
        let o = run(crate::iso_fleet_cli::fleet_args(d)
            .args(["--dest-device", "/dev/sda", "--pool=worker", "-o"])
            .arg(&out)
            .arg(&iso));
        assert!(
            !o.status.success() && stderr(&o).contains(why),
            "{name}: iso fleet: {}",
            stderr(&o)
        );
        assert!(!out.exists(), "{name}: iso fleet wrote {}", out.display());
    }
    // What coreos-installer writes: a config and a network keyfile.
    let iso = with_area(&base, "net.iso", &archive(&[config(), network].concat()));
    assert_eq!(ok(run(bin().args(["iso", "show"]).arg(&iso))).stdout, DECOY);
    ok(run(bin()
        .args(["iso", "embed", "-f", "-i"])
        .arg(&ours)
        .arg(&iso)));
    assert_eq!(ok(run(bin().args(["iso", "show"]).arg(&iso))).stdout, OURS);
}

/// Review 12 r12c F2: IGNINFO's offset puts the area inside a cpio member
/// that starts before it in the same file (the kernel unpacks the file from
/// its start: the area is that member's data, never unpacked; the config
/// before it is the one Ignition reads). Before, `iso show` said there was
/// no config and `iso embed` wrote ours into the member's data. An offset
/// into images/ignition.img is refused; in another file, an uncompressed
/// archive before the area must end (with its trailer) before it.
#[test]
fn an_area_inside_a_member_before_it_is_refused() {
    let Some(xorriso) = skipped::tool("xorriso") else {
        return;
    };
    let dir = scratch_dir();
    let d = dir.path();
    let ours = d.join("ours.ign");
    std::fs::write(&ours, OURS).unwrap();
    const LEN: usize = 16384;
    // config.ign (the attacker's), then `pad`, whose data runs to the end
    // of the file, over the area at 4096 (the reproducer's layout).
    let spanning = {
        let config = file(b"config.ign", ATTACKER);
        let header = member(b"pad", 0o100_600, b"").len();
        let pad = member(b"pad", 0o100_600, &vec![0u8; LEN - config.len() - header]);
        [config, pad].concat()
    };
    assert_eq!(spanning.len(), LEN);
    // `prefix`, then zeros.
    let img = |prefix: &[u8]| {
        let mut v = prefix.to_vec();
        v.resize(LEN, 0);
        v
    };
    let info = |name: &str| format!(r#"{{"file":"images/{name}","offset":4096}}"#);
    let only_area = "a file that is only the embed area in every live ISO";
    for (name, bytes) in [("spanning.iso", spanning.clone()), ("zeros.iso", img(&[]))] {
        let iso = build_iso(
            d,
            &xorriso,
            name,
            &info("ignition.img"),
            &[("images/ignition.img", &bytes)],
        );
        refused_by_every_command(&iso, &ours, only_area);
    }
    let gzip = {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&archive(&[file(b"config.ign", DECOY)]))
            .unwrap();
        gz.finish().unwrap()
    };
    let cdboot = |name: &str, bytes: &[u8]| {
        build_iso(
            d,
            &xorriso,
            name,
            &info("cdboot.img"),
            &[("images/cdboot.img", bytes)],
        )
    };
    for (name, bytes, why) in [
        (
            "legacy-spanning.iso",
            spanning,
            "bytes of data run over the area",
        ),
        (
            "no-trailer.iso",
            img(&file(b"config.ign", ATTACKER)),
            "no cpio header where the kernel reads one",
        ),
        (
            "broken-padding.iso",
            img(&[archive(&[file(b"a", b"a")]), vec![0, 0], gzip.clone()].concat()),
            "(\"broken padding\": the kernel stops)",
        ),
    ] {
        let iso = cdboot(name, &bytes);
        refused_by_every_command(&iso, &ours, why);
    }
    // The area where the kernel is between archives: after an early
    // archive's trailer, after a compressed stream (not decompressed: a
    // known limit), after something that is no initramfs (s390x's
    // cdboot.img starts with its kernel).
    for (name, bytes) in [
        ("legacy.iso", img(&archive(&[file(b"config.ign", DECOY)]))),
        (
            "legacy-gzip.iso",
            img(&[archive(&[file(b"a", b"a")]), gzip].concat()),
        ),
        ("kernel.iso", img(b"\x00\x08\x00\x00\x80\x00\x02\x00")),
    ] {
        let iso = cdboot(name, &bytes);
        ok(run(bin().args(["iso", "embed", "-i"]).arg(&ours).arg(&iso)));
        assert_eq!(ok(run(bin().args(["iso", "show"]).arg(&iso))).stdout, OURS);
    }
}

/// Review 12 r12c F4: network keyfiles that unpack to more than 1 MiB (a
/// live ISO's hold a few KiB; 2 MiB of zeros is a few hundred bytes of xz,
/// up to the 64 MiB the area may unpack to) are never compressed again at
/// preset 9: `iso embed` (with -f or not, in place or -o), `iso remove` and
/// `iso fleet` refuse, writing nothing. `iso show` still reads it.
#[test]
fn keyfiles_past_a_mib_are_not_compressed_again() {
    let Some(FixtureIso { dir, base, .. }) = FixtureIso::new() else {
        return;
    };
    let d = dir.path();
    let ours = d.join("ours.ign");
    std::fs::write(&ours, OURS).unwrap();
    let big = vec![0u8; 2 << 20];
    let area = xz_crc32(&archive(&[
        file(b"config.ign", ATTACKER),
        file(b"etc/coreos-firstboot-network/big.nmconnection", &big),
    ]));
    let iso = with_area(&base, "big-keyfile.iso", &area);
    let o = ok(run(bin().args(["iso", "show"]).arg(&iso)));
    assert_eq!(o.stdout, ATTACKER);
    let why = "holds network keyfiles that unpack to 2048 KiB, more than 1 MiB";
    let before = std::fs::read(&iso).unwrap();
    // embed, embed -f (in place and -o), remove: all but show.
    refused_by_every_command_but_show(&iso, &ours, why);
    let gpu = crate::support::iso::gpu_pool(d);
    let out = d.join("fleet.iso");
    let o = crate::iso_fleet_cli::fleet_args(d)
        .args(["--dest-device", "/dev/sda", "-f", "-o"])
        .arg(&out)
        .arg(&iso)
        .arg(format!("--pool=worker-gpu={}", gpu.display()))
        .arg("--pool=worker")
        .output()
        .unwrap();
    assert!(
        o.status.code() == Some(1) && stderr(&o).contains(why),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
    assert!(std::fs::read(&iso).unwrap() == before);
}
