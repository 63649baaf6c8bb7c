//! `iso embed|show|remove` against the real coreos-installer and the bytes it
//! wrote (../shared/fixtures/coreos-installer), on images made by
//! iso/make-test-iso.sh and on the fixture ISO.

use crate::support::iso::{FixtureIso, config_in, xz_crc32};
use crate::support::{bin, scratch_dir, stderr, test_iso};

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn copy(src: &Path, dst: &Path) -> PathBuf {
    std::fs::copy(src, dst).unwrap();
    dst.to_path_buf()
}

pub(crate) fn run(c: &mut Command) -> Output {
    c.output().unwrap()
}

pub(crate) fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

/// The embed area bytes equal what coreos-installer 0.27.0 wrote.
#[test]
fn embed_area_bytes_equal_coreos_installers() {
    let Some(FixtureIso { dir, fx, base }) = FixtureIso::new() else {
        return;
    };
    let area = kubelet_labeler::cli::iso::area_of(&base).unwrap();
    for (config, expected) in [
        ("pointer.ign", "embed-area-pointer.ign.bin"),
        ("odd.ign", "embed-area-odd.ign.bin"),
    ] {
        let iso = copy(&base, &dir.path().join(format!("{config}.iso")));
        ok(run(bin()
            .args(["iso", "embed", "--no-validate", "-i"])
            .arg(fx.join(config))
            .arg(&iso)));
        let bytes = std::fs::read(&iso).unwrap();
        let want = std::fs::read(fx.join(expected)).unwrap();
        let got = &bytes[area.offset as usize..(area.offset + area.length) as usize];
        assert_eq!(&got[..want.len()], want.as_slice(), "{config}");
        assert!(
            got[want.len()..].iter().all(|&b| b == 0),
            "{config}: area not zero-filled"
        );
        // Nothing outside the area changed.
        let orig = std::fs::read(&base).unwrap();
        assert_eq!(bytes[..area.offset as usize], orig[..area.offset as usize]);
        assert_eq!(
            bytes[(area.offset + area.length) as usize..],
            orig[(area.offset + area.length) as usize..]
        );
    }
}

#[test]
fn interop_with_coreos_installer() {
    let Some((FixtureIso { dir, fx, base }, ci)) = FixtureIso::with("coreos-installer") else {
        return;
    };
    let d = dir.path();
    let pristine = std::fs::read(&base).unwrap();
    let config = std::fs::read(fx.join("pointer.ign")).unwrap();

    // The fixture's pointer.ign ends its CA data URL in a newline, which
    // Ignition refuses ("unable to parse url", ignition-validate says);
    // coreos-installer embeds it unchecked, and so do we when told to.
    let ours = copy(&base, &d.join("ours.iso"));
    let o = run(bin()
        .args(["iso", "embed", "-i"])
        .arg(fx.join("pointer.ign"))
        .arg(&ours));
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && err.contains("pointer.ign is not valid Ignition 3.2.0")
            && err.contains("--no-validate"),
        "{err}"
    );
    assert!(std::fs::read(&ours).unwrap() == pristine);

    // Ours in, theirs out; then our remove restores the image.
    ok(run(bin()
        .args(["iso", "embed", "--no-validate", "-i"])
        .arg(fx.join("pointer.ign"))
        .arg(&ours)));
    assert_eq!(
        ok(run(Command::new(&ci)
            .args(["iso", "ignition", "show"])
            .arg(&ours)))
        .stdout,
        config
    );
    ok(run(Command::new(&ci)
        .args(["iso", "ignition", "remove"])
        .arg(&ours)));
    assert!(
        std::fs::read(&ours).unwrap() == pristine,
        "their remove after our embed"
    );

    // Theirs in, ours out; then our remove restores the image.
    let theirs = copy(&base, &d.join("theirs.iso"));
    ok(run(Command::new(&ci)
        .args(["iso", "ignition", "embed", "-i"])
        .arg(fx.join("odd.ign"))
        .arg(&theirs)));
    assert_eq!(
        ok(run(bin().args(["iso", "show"]).arg(&theirs))).stdout,
        std::fs::read(fx.join("odd.ign")).unwrap()
    );
    ok(run(bin().args(["iso", "remove"]).arg(&theirs)));
    assert!(
        std::fs::read(&theirs).unwrap() == pristine,
        "our remove after their embed"
    );

    // Other members (a network keyfile, as `iso network embed` adds) are
    // written as coreos-installer writes them, and kept when we replace the
    // config.
    let mut members = std::collections::BTreeMap::new();
    members.insert("config.ign".to_string(), config.clone());
    let keyfile = std::fs::read(fx.join("eth0.nmconnection")).unwrap();
    members.insert(
        "etc/coreos-firstboot-network/eth0.nmconnection".to_string(),
        keyfile.clone(),
    );
    let payload = kubelet_labeler::cli::iso::write_members(&members).unwrap();
    assert!(
        payload == std::fs::read(fx.join("embed-area-pointer+eth0.bin")).unwrap(),
        "pointer+eth0 bytes"
    );
    let net = copy(&base, &d.join("net.iso"));
    let area = kubelet_labeler::cli::iso::area_of(&net).unwrap();
    let mut bytes = std::fs::read(&net).unwrap();
    bytes[area.offset as usize..area.offset as usize + payload.len()].copy_from_slice(&payload);
    std::fs::write(&net, &bytes).unwrap();
    ok(run(bin()
        .args(["iso", "embed", "-f", "-i"])
        .arg(fx.join("odd.ign"))
        .arg(&net)));
    assert_eq!(
        ok(run(Command::new(&ci)
            .args(["iso", "ignition", "show"])
            .arg(&net)))
        .stdout,
        std::fs::read(fx.join("odd.ign")).unwrap()
    );
    let mut f = std::fs::File::open(&net).unwrap();
    let area_bytes = {
        use std::io::{Seek, SeekFrom};
        f.seek(SeekFrom::Start(area.offset)).unwrap();
        let mut b = vec![0u8; area.length as usize];
        f.read_exact(&mut b).unwrap();
        b
    };
    let kept = kubelet_labeler::cli::iso::read_members(&area_bytes).unwrap();
    assert_eq!(
        kept.get("etc/coreos-firstboot-network/eth0.nmconnection"),
        Some(&keyfile)
    );

    // A config that does not fit is refused by both, and the file is unchanged.
    // Incompressible bytes (xorshift), as in coreos-installer's own test.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let big: Vec<u8> = (0..2_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    // Valid Ignition (we refuse anything else before trying to fit it):
    // the random bytes ride in a file's data URL, still far too big.
    let big = format!(
        "{{\"ignition\":{{\"version\":\"3.4.0\"}},\"storage\":{{\"files\":[{{\"path\":\"/big\",\"contents\":{{\"source\":\"data:;base64,{}\"}}}}]}}}}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &big)
    );
    std::fs::write(d.join("big.ign"), &big).unwrap();
    let target = copy(&base, &d.join("big.iso"));
    let o = run(bin()
        .args(["iso", "embed", "-i"])
        .arg(d.join("big.ign"))
        .arg(&target));
    assert!(
        !o.status.success() && stderr(&o).contains("does not fit"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("262144"), "{}", stderr(&o));
    let o = run(Command::new(&ci)
        .args(["iso", "ignition", "embed", "-i"])
        .arg(d.join("big.ign"))
        .arg(&target));
    assert!(!o.status.success());
    assert!(std::fs::read(&target).unwrap() == pristine);
}

#[test]
fn output_modes_and_refusals() {
    let dir = scratch_dir();
    let d = dir.path();
    let Some(iso) = test_iso(d) else { return };
    let pristine = std::fs::read(&iso).unwrap();
    std::fs::write(d.join("c.ign"), br#"{"ignition":{"version":"3.4.0"}}"#).unwrap();

    // -o FILE leaves the input alone; -o - streams the same bytes.
    ok(run(bin()
        .args(["iso", "embed", "-i"])
        .arg(d.join("c.ign"))
        .arg("-o")
        .arg(d.join("out.iso"))
        .arg(&iso)));
    assert!(std::fs::read(&iso).unwrap() == pristine);
    let streamed = ok(run(bin()
        .args(["iso", "embed", "-i"])
        .arg(d.join("c.ign"))
        .args(["-o", "-"])
        .arg(&iso)
        .stdout(Stdio::piped())));
    assert!(streamed.stdout == std::fs::read(d.join("out.iso")).unwrap());
    let o = run(bin()
        .args(["iso", "embed", "-i"])
        .arg(d.join("c.ign"))
        .arg("-o")
        .arg(d.join("out.iso"))
        .arg(&iso));
    assert!(!o.status.success(), "an existing -o file must be refused");
    // In place, twice: the second needs -f.
    ok(run(bin()
        .args(["iso", "embed", "-i"])
        .arg(d.join("c.ign"))
        .arg(&iso)));
    let o = run(bin()
        .args(["iso", "embed", "-i"])
        .arg(d.join("c.ign"))
        .arg(&iso));
    assert!(!o.status.success() && stderr(&o).contains("-f"));
    ok(run(bin()
        .args(["iso", "embed", "-f", "-i"])
        .arg(d.join("c.ign"))
        .arg(&iso)));
    assert_eq!(
        ok(run(bin().args(["iso", "show"]).arg(&iso))).stdout,
        std::fs::read(d.join("c.ign")).unwrap()
    );

    // One step from pool to ISO: the pointer config goes in.
    let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    std::fs::write(d.join("ca.pem"), pem).unwrap();
    ok(run(bin()
        .args([
            "iso",
            "embed",
            "-f",
            "--pool",
            "worker-gpu",
            "--merge-url",
            "https://api-int.c.example.com:22623/config/worker-gpu",
            "--ca-file",
        ])
        .arg(d.join("ca.pem"))
        .arg(&iso)));
    let shown: serde_json::Value =
        serde_json::from_slice(&ok(run(bin().args(["iso", "show"]).arg(&iso))).stdout).unwrap();
    assert_eq!(
        shown["ignition"]["config"]["merge"][0]["source"],
        "https://api-int.c.example.com:22623/config/worker-gpu"
    );
    assert_eq!(shown["ignition"]["version"], "3.4.0");
    // For 4.19+ live ISOs, at 3.5.0: it parses as the spec's types with no
    // unknown key.
    ok(run(bin()
        .args([
            "iso",
            "embed",
            "-f",
            "--pool",
            "worker-gpu",
            "--merge-url",
            "https://api-int.c.example.com:22623/config/worker-gpu",
            "--ignition-version",
            "3.5.0",
            "--ca-file",
        ])
        .arg(d.join("ca.pem"))
        .arg(&iso)));
    let shown = ok(run(bin().args(["iso", "show"]).arg(&iso))).stdout;
    match ignition_config::Config::parse_slice(&shown).unwrap() {
        (ignition_config::Config::V3_5(c), warnings) => {
            assert!(warnings.is_empty(), "{warnings:?}");
            assert_eq!(c.ignition.version, "3.5.0");
        }
        other => panic!("{other:?}"),
    }

    // Bad inputs: one clear error, the file unchanged.
    let not_iso = d.join("not.iso");
    std::fs::write(&not_iso, vec![7u8; 100_000]).unwrap();
    let truncated = d.join("trunc.iso");
    std::fs::write(&truncated, &pristine[..pristine.len() / 2]).unwrap();
    let corrupt = d.join("corrupt.iso");
    std::fs::write(&corrupt, &pristine).unwrap();
    let area = kubelet_labeler::cli::iso::area_of(&corrupt).unwrap();
    let mut bytes = pristine.clone();
    bytes[area.offset as usize..area.offset as usize + 8].copy_from_slice(b"\xfd7zXZ\x00\x01\x02");
    std::fs::write(&corrupt, &bytes).unwrap();
    for (file, needle) in [
        (&not_iso, "not an ISO"),
        (&truncated, "truncated"),
        (&corrupt, "corrupt"),
    ] {
        let before = std::fs::read(file).unwrap();
        let o = run(bin()
            .args(["iso", "embed", "-i"])
            .arg(d.join("c.ign"))
            .arg(file));
        assert!(
            !o.status.success() && stderr(&o).contains(needle),
            "{}: {}",
            file.display(),
            stderr(&o)
        );
        assert!(
            std::fs::read(file).unwrap() == before,
            "{} changed",
            file.display()
        );
    }
}

/// `-o` writes a new file 0600, as coreos-installer does (it holds the
/// config; the input's mode gave a secret's ISO 0644); a config CoreOS cannot read, or an image
/// whose IGNINFO points outside itself, is refused with the file named and
/// nothing written.
#[test]
fn refuses_bad_configs_and_out_of_image_areas_keeps_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir();
    let d = dir.path();
    let Some(iso) = test_iso(d) else { return };
    std::fs::set_permissions(&iso, std::fs::Permissions::from_mode(0o644)).unwrap();
    let pristine = std::fs::read(&iso).unwrap();
    std::fs::write(d.join("c.ign"), br#"{"ignition":{"version":"3.4.0"}}"#).unwrap();
    ok(run(bin()
        .args(["iso", "embed", "-i"])
        .arg(d.join("c.ign"))
        .arg("-o")
        .arg(d.join("out.iso"))
        .arg(&iso)));
    let mode = std::fs::metadata(d.join("out.iso"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o600, "-o output mode {mode:o}");
    // Nor from an input others may write.
    std::fs::set_permissions(&iso, std::fs::Permissions::from_mode(0o666)).unwrap();
    ok(run(bin()
        .args(["iso", "embed", "-i"])
        .arg(d.join("c.ign"))
        .arg("-o")
        .arg(d.join("out2.iso"))
        .arg(&iso)));
    let mode = std::fs::metadata(d.join("out2.iso"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o600, "-o output mode {mode:o}");
    std::fs::set_permissions(&iso, std::fs::Permissions::from_mode(0o644)).unwrap();

    for (name, body, needle) in [
        ("notjson.ign", &b"not json"[..], "is not JSON"),
        (
            "v9.ign",
            br#"{"ignition":{"version":"9.9.9"}}"#,
            "\"9.9.9\"",
        ),
        ("v2.ign", br#"{"ignition":{"version":"2.2.0"}}"#, "spec 2.x"),
        ("array.ign", b"[]", "not an object"),
        // JSON, but not Ignition of its version: the spec's types, then the
        // rules Ignition adds (tests/ignition_check.rs holds both to
        // ignition-validate).
        (
            "mode.ign",
            br#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/x","mode":"420"}]}}"#,
            "is not valid Ignition 3.4.0: $.storage.files.0.mode: invalid type: string \"420\", expected i64; a mode is a decimal number",
        ),
        (
            "relative.ign",
            br#"{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"etc/x"}]}}"#,
            "$.storage.files.0.path \"etc/x\" is not absolute; start it with /",
        ),
        (
            "dropin.ign",
            br#"{"ignition":{"version":"3.2.0"},"systemd":{"units":[{"name":"kubelet.service","dropins":[{"name":"10-x"}]}]}}"#,
            "end it in .conf",
        ),
    ] {
        let p = d.join(name);
        std::fs::write(&p, body).unwrap();
        let o = run(bin().args(["iso", "embed", "-i"]).arg(&p).arg(&iso));
        let err = stderr(&o);
        assert!(
            !o.status.success() && err.contains(needle) && err.contains(name),
            "{name}: {err}"
        );
        let o = run(bin()
            .args(["iso", "embed"])
            .arg(&iso)
            .stdin(std::fs::File::open(&p).unwrap()));
        assert!(
            !o.status.success() && stderr(&o).contains("stdin"),
            "{name}: {}",
            stderr(&o)
        );
    }
    assert!(std::fs::read(&iso).unwrap() == pristine);

    // A key the spec version lacks: Ignition ignores it, so it is embedded
    // with a warning naming the file and the key.
    let p = d.join("typo.ign");
    std::fs::write(&p, br#"{"ignition":{"version":"3.4.0"},"storge":{}}"#).unwrap();
    let o = ok(run(bin()
        .args(["iso", "embed", "-i"])
        .arg(&p)
        .arg("-o")
        .arg(d.join("typo.iso"))
        .arg(&iso)));
    assert!(
        stderr(&o).contains(&format!(
            "warning: {}: Ignition 3.4.0 ignores the unknown key $.storge",
            p.display()
        )),
        "{}",
        stderr(&o)
    );

    // Review 39 r39b F2: the first 100 unknown keys, and how many more.
    let keys: String = (0..1500).map(|i| format!(",\"k{i}\":{{}}")).collect();
    let p = d.join("typos.ign");
    std::fs::write(&p, format!(r#"{{"ignition":{{"version":"3.4.0"}}{keys}}}"#)).unwrap();
    let o = ok(run(bin()
        .args(["iso", "embed", "-i"])
        .arg(&p)
        .arg("-o")
        .arg(d.join("typos.iso"))
        .arg(&iso)));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 101, "{}", &err[..200]);
    assert!(
        err.contains("and 1400 more unknown keys"),
        "{}",
        &err[err.len() - 200..]
    );

    // IGNINFO naming an offset/length past its file (and one that would
    // wrap a u64) is refused before anything is written.
    for info in [
        r#"{"file":"images/ignition.img","offset":262144,"length":1}"#.to_string(),
        format!(
            r#"{{"file":"images/ignition.img","offset":1,"length":{}}}"#,
            u64::MAX
        ),
    ] {
        let tree = d.join("tree");
        let _ = std::fs::remove_dir_all(&tree);
        std::fs::create_dir_all(tree.join("images")).unwrap();
        std::fs::create_dir_all(tree.join("coreos")).unwrap();
        std::fs::write(tree.join("images/ignition.img"), vec![0u8; 262144]).unwrap();
        std::fs::write(tree.join("coreos/igninfo.json"), &info).unwrap();
        let bad = d.join("bad.iso");
        let _ = std::fs::remove_file(&bad);
        let st = Command::new("xorriso")
            .args(["-as", "mkisofs", "-quiet", "-R", "-J", "-o"])
            .arg(&bad)
            .arg(&tree)
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        let bytes = std::fs::read(&bad).unwrap();
        let o = run(bin()
            .args(["iso", "embed", "-i"])
            .arg(d.join("c.ign"))
            .arg(&bad));
        assert!(
            !o.status.success() && stderr(&o).contains("past the end"),
            "{info}: {}",
            stderr(&o)
        );
        assert!(
            std::fs::read(&bad).unwrap() == bytes,
            "{info}: image changed"
        );
    }
}

/// `-o` over an existing file: refused, naming `-f`; with `-f` replaced (a
/// symlink's regular file through the link; a directory never). An ISO
/// given as the config (`-i`) is named as one, nothing written.
#[test]
fn existing_output_needs_f_and_an_iso_as_config_is_named() {
    let Some(FixtureIso { dir, base, .. }) = FixtureIso::new() else {
        return;
    };
    let d = dir.path();
    let pristine = std::fs::read(&base).unwrap();
    let config = config_in(d, r#"{"ignition":{"version":"3.4.0"}}"#);
    let embed = |out: &Path, force: bool| {
        let mut c = bin();
        c.args(["iso", "embed", "-i"])
            .arg(&config)
            .arg("-o")
            .arg(out);
        if force {
            c.arg("-f");
        }
        run(c.arg(&base))
    };
    let fresh = d.join("fresh.iso");
    ok(embed(&fresh, false));
    let expected = std::fs::read(&fresh).unwrap();

    let old = d.join("old.iso");
    std::fs::write(&old, b"yesterday's build").unwrap();
    let o = embed(&old, false);
    assert!(
        !o.status.success() && stderr(&o).contains("exists; pass -f to replace it"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&old).unwrap(), b"yesterday's build");
    ok(embed(&old, true));
    assert!(std::fs::read(&old).unwrap() == expected);

    let target = d.join("target.iso");
    std::fs::write(&target, b"old").unwrap();
    let link = d.join("link.iso");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    ok(embed(&link, true));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(std::fs::read(&target).unwrap() == expected);

    let a_dir = d.join("a-dir");
    std::fs::create_dir(&a_dir).unwrap();
    let o = embed(&a_dir, true);
    assert!(
        !o.status.success() && stderr(&o).contains("not a regular file"),
        "{}",
        stderr(&o)
    );
    assert!(a_dir.is_dir());

    // The ISO as the config, the other way round.
    let o = run(bin().args(["iso", "embed", "-i"]).arg(&base).arg(&config));
    assert!(
        !o.status.success()
            && stderr(&o).contains(&format!(
                "-i {}: that is an ISO image, not an Ignition config",
                base.display()
            ))
            && stderr(&o).contains("iso embed -i CONFIG ISO"),
        "{}",
        stderr(&o)
    );
    assert!(std::fs::read(&base).unwrap() == pristine);
}

/// Issue 33 item 21: `iso embed --pool NAME` with `render ignition`'s flags
/// (rules, architectures, labels, taints) embeds the full config itself:
/// the image is byte-identical to `render ignition … -o - | iso embed`'s.
/// A render flag without --pool is a usage error.
#[test]
fn embed_renders_the_full_config_as_render_ignition() {
    let Some(FixtureIso { dir, base, .. }) = FixtureIso::new() else {
        return;
    };
    let d = dir.path();
    let rules = crate::support::repo().join("examples/rules/mixed-fleet.yaml");
    let mut flags: Vec<std::ffi::OsString> = [
        "--pool",
        "worker-gpu",
        "--arch",
        "x86_64",
        "--arch",
        "aarch64",
        "--label",
        "example.com/site=lab",
        "--taint",
        "example.com/dedicated=gpu:NoSchedule",
        "--rules",
    ]
    .iter()
    .map(Into::into)
    .collect();
    flags.push(rules.into());
    for arch in [
        kubelet_labeler::cli::render::arch::Arch::X86_64,
        kubelet_labeler::cli::render::arch::Arch::Aarch64,
    ] {
        let w = d.join(format!("wrapper-{arch}"));
        std::fs::write(&w, crate::support::elf::static_elf(arch)).unwrap();
        flags.push("--wrapper".into());
        flags.push(w.into());
    }
    let rendered = ok(run(bin()
        .args(["render", "ignition"])
        .args(&flags)
        .args(["-o", "-"])))
    .stdout;
    let piped = d.join("piped.iso");
    let mut child = bin()
        .args(["iso", "embed", "-o"])
        .arg(&piped)
        .arg(&base)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&rendered).unwrap();
    ok(child.wait_with_output().unwrap());
    let direct = d.join("direct.iso");
    let o = ok(run(bin()
        .args(["iso", "embed"])
        .args(&flags)
        .arg("-o")
        .arg(&direct)
        .arg(&base)));
    assert_eq!(stderr(&o), "");
    let shown = ok(run(bin().args(["iso", "show"]).arg(&direct))).stdout;
    assert_eq!(shown, rendered, "the embedded config");
    assert!(
        std::fs::read(&direct).unwrap() == std::fs::read(&piped).unwrap(),
        "the two images differ"
    );
    let config: serde_json::Value = serde_json::from_slice(&shown).unwrap();
    let paths: Vec<&str> = config["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert!(
        paths.contains(&"/usr/local/bin/kubelet-labeler-wrapper.aarch64"),
        "{paths:?}"
    );

    // Render flags without --pool (or --role): nothing to render them into.
    let o = run(bin()
        .args(["iso", "embed", "--rules", "r.yaml", "-o"])
        .arg(d.join("x.iso"))
        .arg(&base));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the following required arguments were not provided")
            && stderr(&o).contains("--pool <NAME>|--role <ROLE>"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("x.iso").exists());
}

/// Ctrl-C while `iso embed -o FILE` copies a large image (2 GiB, sparse)
/// leaves nothing in the output's directory: the copy is an unnamed file
/// until complete (before, a `.kubelet-labeler-iso-*` temp file stayed).
#[test]
fn an_interrupted_embed_leaves_nothing() {
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch_dir();
    let d = dir.path();
    let Some(iso) = test_iso(d) else { return };
    let f = std::fs::OpenOptions::new().write(true).open(&iso).unwrap();
    f.set_len(f.metadata().unwrap().len() + (2 << 30)).unwrap();
    std::fs::write(d.join("c.ign"), br#"{"ignition":{"version":"3.4.0"}}"#).unwrap();
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    let child = bin()
        .args(["iso", "embed", "-i"])
        .arg(d.join("c.ign"))
        .arg("-o")
        .arg(out.join("big.iso"))
        .arg(&iso)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once its output is open (a descriptor in `out`).
    let fds = PathBuf::from(format!("/proc/{}/fd", child.id()));
    let writing = || {
        std::fs::read_dir(&fds).is_ok_and(|mut it| {
            it.any(|e| {
                e.ok()
                    .and_then(|e| std::fs::read_link(e.path()).ok())
                    .is_some_and(|t| t.starts_with(&out))
            })
        })
    };
    let start = std::time::Instant::now();
    while !writing() {
        assert!(start.elapsed().as_secs() < 20, "the output never opened");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    unsafe extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { kill(child.id() as i32, 2) }, 0);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(2), "{}", stderr(&o));
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `iso show` of a downloaded ISO whose embedded config holds escape codes:
/// on a terminal (a pty from `script`) they are shown escaped; into a pipe,
/// the config is its bytes as they are.
#[test]
fn show_escapes_a_hostile_config_on_a_terminal() {
    let Some((FixtureIso { dir, base, .. }, script)) = FixtureIso::with("script") else {
        return;
    };
    let d = dir.path();
    let evil = b"{\"ignition\":{\"version\":\"3.4.0\"}}\x1b[1A\x1b[2K\x1b]52;c;ZWNobyBoaQ==\x07\n";
    std::fs::write(d.join("evil.ign"), evil).unwrap();
    ok(run(bin()
        .args(["iso", "embed", "--no-validate", "-i"])
        .arg(d.join("evil.ign"))
        .arg(&base)));
    let piped = ok(run(bin().args(["iso", "show"]).arg(&base)));
    assert_eq!(piped.stdout, evil);
    let cmd = format!("{} iso show {}", crate::support::BIN, base.display());
    let tty = ok(run(Command::new(script).args(["-qec", &cmd, "/dev/null"])));
    let shown = String::from_utf8_lossy(&tty.stdout);
    assert!(shown.contains("\\u{1b}[1A"), "{shown:?}");
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
}

/// An uncompressed cpio archive with its trailer (as the kernel's early
/// microcode archive is): the one `write_members` compresses.
fn newc(files: &[(&str, &[u8])]) -> Vec<u8> {
    let members = files
        .iter()
        .map(|(name, data)| (name.to_string(), data.to_vec()))
        .collect();
    let xz = kubelet_labeler::cli::iso::write_members(&members).unwrap();
    let mut out = Vec::new();
    xz2::read::XzDecoder::new(&xz[..])
        .read_to_end(&mut out)
        .unwrap();
    assert!(out.starts_with(b"070701"));
    out
}

/// An embed area holding more than one archive (review 9 riso F2): `iso
/// show` shows what coreos-installer shows (the later config.ign, the one
/// the kernel leaves in the initramfs), or refuses what it refuses (a second
/// archive inside one compressed stream); `iso embed` without -f refuses an
/// ISO that has a config in a later archive, as coreos-installer does.
#[test]
fn show_reads_every_archive_of_the_area_as_coreos_installer() {
    let Some((FixtureIso { dir, fx, base }, ci)) = FixtureIso::with("coreos-installer") else {
        return;
    };
    let d = dir.path();
    let area = kubelet_labeler::cli::iso::area_of(&base).unwrap();
    let decoy: &[u8] = br#"{"ignition":{"version":"3.4.0"}}"#;
    let real: &[u8] = br#"{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA attacker"]}]}}"#;
    let with_area = |name: &str, bytes: &[u8]| {
        let mut iso = std::fs::read(&base).unwrap();
        let at = area.offset as usize;
        assert!(bytes.len() as u64 <= area.length);
        iso[at..at + bytes.len()].copy_from_slice(bytes);
        let p = d.join(name);
        std::fs::write(&p, iso).unwrap();
        p
    };
    let mut uncompressed_then_xz = newc(&[("config.ign", decoy)]);
    uncompressed_then_xz.extend(xz_crc32(&newc(&[("config.ign", real)])));
    let one_xz_stream = xz_crc32(
        &[
            newc(&[("config.ign", decoy)]),
            newc(&[("config.ign", real)]),
        ]
        .concat(),
    );
    // Another member coreos-installer writes (a network keyfile; any other
    // is refused: iso_hostile.rs), then the config.
    let mut other_then_config = newc(&[("etc/coreos-firstboot-network/x", b"x")]);
    other_then_config.extend([0u8; 8]);
    other_then_config.extend(xz_crc32(&newc(&[("config.ign", real)])));
    for (name, bytes) in [
        ("f2a.iso", uncompressed_then_xz),
        ("f2b.iso", one_xz_stream),
        ("f2c.iso", other_then_config),
    ] {
        let iso = with_area(name, &bytes);
        let theirs = run(Command::new(&ci)
            .args(["iso", "ignition", "show"])
            .arg(&iso));
        let ours = run(bin().args(["iso", "show"]).arg(&iso));
        assert_eq!(
            ours.status.success(),
            theirs.status.success(),
            "{name}: ours: {} theirs: {}",
            stderr(&ours),
            stderr(&theirs)
        );
        if theirs.status.success() {
            assert_eq!(ours.stdout, theirs.stdout, "{name}");
            assert_eq!(ours.stdout, real, "{name}");
        } else {
            assert!(
                stderr(&theirs).contains("trailing garbage"),
                "{name}: {}",
                stderr(&theirs)
            );
            assert!(
                stderr(&ours).contains("inside its compressed stream"),
                "{name}: {}",
                stderr(&ours)
            );
        }
        // Embedding without -f: both refuse, the image unchanged.
        let before = std::fs::read(&iso).unwrap();
        let theirs = run(Command::new(&ci)
            .args(["iso", "ignition", "embed", "-i"])
            .arg(fx.join("odd.ign"))
            .arg(&iso));
        assert!(!theirs.status.success(), "{name}");
        let ours = run(bin()
            .args(["iso", "embed", "--no-validate", "-i"])
            .arg(fx.join("odd.ign"))
            .arg(&iso));
        assert!(!ours.status.success(), "{name}");
        assert!(std::fs::read(&iso).unwrap() == before, "{name}");
    }
}
