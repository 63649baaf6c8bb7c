//! Review 17 r17c: what `iso embed|remove|fleet|show` write, and where.
//! - F1: an in-place write puts the config (secrets) into the input, so the
//!   input must be only ours to write; one others may read gets a 0600
//!   copy in its place.
//! - F2: the input is opened once; the copy is made from that descriptor
//!   and checked before it is named (the input's owner changing it, at a
//!   chosen moment through an LD_PRELOAD shim, `support/swap_input.c`).
//! - F6: `iso show`'s kernel-argument refusal is said before the config
//!   and kept (exit 1) when stdout closes early.
//!
//! Read back with the real coreos-installer.

use crate::iso::{ok, run};
use crate::iso_fleet_cli::fleet_args;
use crate::support::iso::{FixtureIso, config_in};
use crate::support::{bin, skipped, stderr};

use std::os::unix::fs::{MetadataExt, PermissionsExt, chown};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const URL: &str = "ignition.config.url=http://203.0.113.9/x.ign";

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// What `coreos-installer iso WHAT show` prints (`ignition`, `kargs`).
fn ci_shows(ci: &Path, what: &str, iso: &Path) -> String {
    let o = ok(run(Command::new(ci).args(["iso", what, "show"]).arg(iso)));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// `base` with `ignition.config.url=` added (what we refuse to embed into).
fn with_url(ci: &Path, base: &Path, out: PathBuf) -> PathBuf {
    ok(run(Command::new(ci)
        .args(["iso", "kargs", "modify", "-a", URL, "-o"])
        .arg(&out)
        .arg(base)));
    out
}

#[test]
fn in_place_writes_only_into_a_file_only_we_may_write() {
    let Some((FixtureIso { dir: tmp, base, .. }, ci)) = FixtureIso::with("coreos-installer") else {
        return;
    };
    let d = tmp.path();
    let secret = r#"{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/pull-secret","contents":{"source":"data:,TOPSECRET"}}]}}"#;
    let config = config_in(d, secret);
    let embed = |iso: &Path| run(bin().args(["iso", "embed", "-i"]).arg(&config).arg(iso));
    let remove = |iso: &Path| run(bin().args(["iso", "remove"]).arg(iso));
    // The expected image: a copy of ours.
    let expected = d.join("expected.iso");
    ok(run(bin()
        .args(["iso", "embed", "-i"])
        .arg(&config)
        .arg("-o")
        .arg(&expected)
        .arg(&base)));
    let expected = std::fs::read(&expected).unwrap();

    // Another user's file (their download): refused, in any mode.
    let theirs = d.join("theirs.iso");
    std::fs::copy(&base, &theirs).unwrap();
    if chown(&theirs, Some(65534), Some(65534)).is_err() {
        skipped::skipped("a file of another user: chown needs root");
        return;
    }
    let pristine = std::fs::read(&base).unwrap();
    for mode in [0o644, 0o600] {
        chmod(&theirs, mode);
        for o in [embed(&theirs), remove(&theirs)] {
            let err = stderr(&o);
            assert!(
                !o.status.success()
                    && err.contains("theirs.iso is owned by another user (uid 65534)")
                    && err.contains("give -o FILE for a copy of your own (mode 0600)"),
                "{mode:o}: {err}"
            );
        }
        assert!(std::fs::read(&theirs).unwrap() == pristine, "{mode:o}");
    }
    // A stream is not read back before it is used: refused from their file.
    let o = run(bin()
        .args(["iso", "embed", "-o", "-", "-i"])
        .arg(&config)
        .arg(&theirs)
        .stdout(std::process::Stdio::piped()));
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && o.stdout.is_empty()
            && err.contains("theirs.iso is owned by another user (uid 65534): they could change it while it is streamed"),
        "{err}"
    );
    // Ours, but others may write it: refused.
    let shared = d.join("shared.iso");
    std::fs::copy(&base, &shared).unwrap();
    for (mode, group, says) in [
        (0o666, 0, "is writable by every user (mode 0666)"),
        (0o660, 65534, "is writable by group 65534 (mode 0660)"),
    ] {
        chown(&shared, None, Some(group)).unwrap();
        chmod(&shared, mode);
        let o = embed(&shared);
        let err = stderr(&o);
        assert!(
            !o.status.success()
                && err.contains(says)
                && err.contains(&format!("or chmod go-w {} first", shared.display())),
            "{err}"
        );
        assert!(std::fs::read(&shared).unwrap() == pristine);
    }

    // Ours and readable by others (curl's 0644): a 0600 copy in its place,
    // said; what coreos-installer reads back is the config and the same
    // arguments. Through a link of ours, the link stays.
    let kargs = ci_shows(&ci, "kargs", &base);
    let download = d.join("download.iso");
    std::fs::copy(&base, &download).unwrap();
    chmod(&download, 0o644);
    let link = d.join("link.iso");
    std::os::unix::fs::symlink(&download, &link).unwrap();
    let ino = std::fs::metadata(&download).unwrap().ino();
    let o = ok(embed(&link));
    assert!(
        stderr(&o).contains("was readable by other users: the image with the config was written as a new file of mode 0600"),
        "{}",
        stderr(&o)
    );
    let meta = std::fs::metadata(&download).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o600);
    assert_ne!(
        meta.ino(),
        ino,
        "the file others may have open stays as it was"
    );
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert!(std::fs::read(&download).unwrap() == expected);
    assert_eq!(ci_shows(&ci, "ignition", &download), secret);
    assert_eq!(ci_shows(&ci, "kargs", &download), kargs);

    // Ours, 0600: written in place (the same file).
    let private = d.join("private.iso");
    std::fs::copy(&base, &private).unwrap();
    chmod(&private, 0o600);
    let ino = std::fs::metadata(&private).unwrap().ino();
    ok(embed(&private));
    let meta = std::fs::metadata(&private).unwrap();
    assert_eq!((meta.ino(), meta.mode() & 0o7777), (ino, 0o600));
    assert!(std::fs::read(&private).unwrap() == expected);
    ok(remove(&private));
    assert!(std::fs::read(&private).unwrap() == pristine);
}

/// The shim built into `dir`, or None (skipped) without a C compiler.
fn shim(dir: &Path) -> Option<PathBuf> {
    let cc = skipped::tool("cc")?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/swap_input.c");
    let out = dir.join("swap_input.so");
    let st = Command::new(cc)
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-ldl")
        .status()
        .unwrap();
    assert!(st.success(), "compiling the shim");
    Some(out)
}

/// `cmd` run with the shim: when the output's directory `out` is first
/// opened (after the checks, for the copy), `input` becomes `with`'s
/// bytes (`mode`: "rename" or "write"). The opens of `input` counted.
fn swapped(
    cmd: &mut Command,
    so: &Path,
    mode: &str,
    input: &Path,
    with: &Path,
    out: &Path,
) -> (Output, usize) {
    let count = out.with_extension("opens");
    let o = cmd
        .env("LD_PRELOAD", so)
        .env("SWAP_MODE", mode)
        .env("SWAP_INPUT", input)
        .env("SWAP_WITH", with)
        .env("SWAP_TRIGGER", out)
        .env("SWAP_COUNT", &count)
        .output()
        .unwrap();
    let opens = std::fs::read_to_string(&count)
        .unwrap_or_default()
        .lines()
        .count();
    (o, opens)
}

#[test]
fn the_copy_is_made_from_the_checked_input_and_checked_before_it_is_named() {
    let Some((FixtureIso { dir: tmp, base, .. }, ci)) = FixtureIso::with("coreos-installer") else {
        return;
    };
    let d = tmp.path();
    let Some(so) = shim(d) else { return };
    let kargs = ci_shows(&ci, "kargs", &base);
    let config = config_in(d, r#"{"ignition":{"version":"3.4.0"}}"#);
    let mut n = 0;
    let mut case = |what: &str, mode: &str| {
        n += 1;
        let input = d.join(format!("in{n}.iso"));
        std::fs::copy(&base, &input).unwrap();
        let hostile = with_url(&ci, &base, d.join(format!("hostile{n}.iso")));
        let out = d.join(format!("out{n}"));
        std::fs::create_dir(&out).unwrap();
        let mut cmd = if what == "embed" {
            let mut c = bin();
            c.args(["iso", "embed", "-i"]).arg(&config);
            c
        } else {
            let mut c = fleet_args(d);
            c.args(["--dest-device", "/dev/sda", "--pool=worker"]);
            c
        };
        cmd.arg("-o").arg(out.join("x.iso")).arg(&input);
        let (o, opens) = swapped(&mut cmd, &so, mode, &input, &hostile, &out);
        (o, opens, out.join("x.iso"))
    };
    for what in ["embed", "fleet"] {
        // Another file renamed over the input after its checks: the copy
        // is the checked image's, from the one open.
        let (o, opens, out) = case(what, "rename");
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        assert_eq!(opens, 1, "{what}: the input opened once");
        let args = ci_shows(&ci, "kargs", &out);
        assert_eq!(args, kargs, "{what}: the copy is of the checked image");
        assert!(!args.contains("ignition.config.url"));
        ok(run(bin().args(["iso", "show"]).arg(&out)));
        // The input itself changed after its checks: the copy, read back
        // before it is named, is refused; nothing named.
        let (o, _, out) = case(what, "write");
        let err = stderr(&o);
        assert!(
            !o.status.success() && err.contains("changed while it was copied") && err.contains(URL),
            "{what}: {err}"
        );
        assert!(!out.exists(), "{what}");
        assert_eq!(std::fs::read_dir(out.parent().unwrap()).unwrap().count(), 0);
    }
}

/// A pointer config past the pipe buffer, in an image whose arguments take
/// another config: `iso show | grep -q` (stdout closed early) exits 1 with
/// the refusal said; before, the closed pipe ended the run with 0 and
/// nothing said.
#[test]
fn show_says_the_kargs_refusal_first_and_keeps_it_on_a_closed_pipe() {
    let Some((FixtureIso { dir: tmp, base, .. }, ci)) = FixtureIso::with("coreos-installer") else {
        return;
    };
    let d = tmp.path();
    let keys: Vec<String> = (0..8000)
        .map(|i| format!("ssh-ed25519 AAAA{i:06}"))
        .collect();
    let config = serde_json::json!({
        "ignition": {"version": "3.4.0", "config": {"merge": [{"source": "https://api-int.example.com:22623/config/worker"}]}},
        "passwd": {"users": [{"name": "core", "sshAuthorizedKeys": keys}]},
    });
    let p = d.join("p.ign");
    std::fs::write(&p, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    assert!(std::fs::metadata(&p).unwrap().len() > 64 << 10);
    let iso = d.join("x.iso");
    ok(run(Command::new(&ci)
        .args(["iso", "ignition", "embed", "-i"])
        .arg(&p)
        .arg("-o")
        .arg(&iso)
        .arg(&base)));
    let iso = with_url(&ci, &iso, d.join("url.iso"));
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = bin()
        .args(["iso", "show"])
        .arg(&iso)
        .stdout(writer)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("Error: ") && err.contains(URL), "{err}");
    // Read to its end: the refusal before the config, the config whole.
    let o = bin().args(["iso", "show"]).arg(&iso).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout == std::fs::read(&p).unwrap());
    assert_eq!(stderr(&o).matches(URL).count(), 1, "{}", stderr(&o));
}

/// Review 18 r18c F1: `iso embed -o -` from an input of ours that another
/// user may write through an ACL entry (`user:65534:rw-`; its mode shows
/// 0660, the group ours). They change it while it streams: the image
/// streamed is the one checked (from a private copy), without their
/// `ignition.config.url=`. Before, the mode-bit gate passed it and the
/// stream carried their argument, exit 0.
#[test]
fn a_stream_is_made_from_a_checked_private_copy() {
    use std::io::Read;
    let Some((
        FixtureIso {
            dir: tmp,
            base: input,
            ..
        },
        ci,
    )) = FixtureIso::with("coreos-installer")
    else {
        return;
    };
    let d = tmp.path();
    chmod(d, 0o711);
    let config = config_in(d, r#"{"ignition":{"version":"3.4.0"}}"#);
    let expected = d.join("expected.iso");
    ok(run(bin()
        .args(["iso", "embed", "-i"])
        .arg(&config)
        .arg("-o")
        .arg(&expected)
        .arg(&input)));
    let expected = std::fs::read(&expected).unwrap();
    chmod(&input, 0o660);
    let acl = Command::new("setfacl")
        .args(["-m", "u:65534:rw"])
        .arg(&input)
        .status();
    if !acl.is_ok_and(|s| s.success()) {
        skipped::skipped("an ACL entry: setfacl on the scratch directory");
        return;
    }
    let as_them = || {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        c
    };
    let may = as_them().arg("test").arg("-w").arg(&input).status();
    if !may.is_ok_and(|s| s.success()) {
        skipped::skipped("another user's write through an ACL: setpriv needs root");
        return;
    }
    let mut child = bin()
        .args(["iso", "embed", "-o", "-", "-i"])
        .arg(&config)
        .arg(&input)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // The stream has begun (and blocks on the full pipe): they change the
    // input's kernel arguments, in place.
    let mut streamed = vec![0; 4096];
    stdout.read_exact(&mut streamed).unwrap();
    ok(run(as_them()
        .arg(&ci)
        .args(["iso", "kargs", "modify", "-a", URL])
        .arg(&input)));
    assert!(ci_shows(&ci, "kargs", &input).contains(URL));
    stdout.read_to_end(&mut streamed).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = d.join("out.iso");
    std::fs::write(&out, &streamed).unwrap();
    assert!(!ci_shows(&ci, "kargs", &out).contains(URL));
    assert!(streamed == expected, "the stream is not the image checked");
}
