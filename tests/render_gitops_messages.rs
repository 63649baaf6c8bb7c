//! Where render's and iso's messages go: usage errors exit 2 with the fix,
//! "wrote" lines on stderr, the unused CA of a plain-HTTP merge URL, and
//! `iso embed -i -`.

use crate::render_gitops::static_elf;
use crate::support::{bin, scratch_dir, stderr, stdout, test_iso};

use std::path::Path;
use std::process::Stdio;

use kubelet_labeler::cli::render::arch::Arch;

/// Usage errors exit 2, as clap's own: no output destination, stdin named
/// twice, a Debian/Go architecture name (with the kernel's name to use).
#[test]
fn usage_errors_exit_2_and_say_the_fix() {
    let dir = scratch_dir();
    let w = static_elf(dir.path(), Arch::X86_64);
    let rules = dir.path().join("rules.yaml");
    std::fs::write(&rules, "").unwrap();
    let run = |args: &[&str]| {
        bin()
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let w = w.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["render", "machineconfig", "--pool", "gpu", "--wrapper", w],
            "--output-dir",
        ),
        (
            vec![
                "render",
                "machineconfig",
                "--pool",
                "gpu",
                "--wrapper",
                w,
                "--rules",
                "-",
                "--rules",
                "-",
                "-o",
                "-",
            ],
            "stdin (\"-\") is given 2 times (--rules -, --rules -)",
        ),
        (
            vec![
                "render",
                "dropins",
                "--create-root",
                "--root",
                "r",
                "--wrapper",
                w,
                "--rules",
                "-",
                "--rules",
                "-",
            ],
            "it can be read once",
        ),
        (
            vec!["explain", "--machineconfig", "-", "--rules", "-"],
            "(--machineconfig -, --rules -)",
        ),
        (
            vec!["render", "dropins", "--root", "r", "--arch", "amd64"],
            "use --arch x86_64",
        ),
        (
            vec![
                "render",
                "machineconfig",
                "--pool",
                "gpu",
                "--arch",
                "arm64",
                "-o",
                "-",
            ],
            "use --arch aarch64",
        ),
        (
            vec![
                "render",
                "ignition",
                "--role",
                "worker",
                "--merge-url",
                "https://api-int.c.example.com:22623/config/worker",
                "--ca-file",
                "ca.pem",
                "-o",
                "-",
            ],
            "--pool",
        ),
    ] {
        let o = run(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(stdout(&o), "", "{args:?}");
    }
    assert!(!dir.path().join("r").exists());
}

/// The "wrote" lines of every render subcommand go to stderr, so stdout is
/// only ever what was asked for.
#[test]
fn wrote_lines_go_to_stderr() {
    let dir = scratch_dir();
    let w = static_elf(dir.path(), Arch::X86_64);
    for (sub, out) in [("machineconfig", "stream.yaml"), ("ignition", "pool.ign")] {
        let path = dir.path().join(out);
        let o = bin()
            .args(["render", sub, "--pool", "worker-gpu", "--wrapper"])
            .arg(&w)
            .arg("-o")
            .arg(&path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), "", "{sub}");
        let err = stderr(&o);
        let (wrote, rest) = err.split_once('\n').unwrap();
        assert_eq!(wrote, format!("wrote {}", path.display()), "{sub}");
        // Issue 33 item 17: the stream leaves the cluster-wide policy out,
        // and says so.
        if sub == "machineconfig" {
            assert!(
                rest.starts_with("not in this stream: the cluster-wide node disruption policy")
                    && rest.contains(
                        "oc apply --server-side --field-manager=kubelet-labeler-worker-gpu -f \
                         DIR/cluster-wide/machineconfiguration-worker-gpu.yaml\n"
                    ),
                "{err}"
            );
        } else {
            assert_eq!(rest, "", "{sub}");
        }
    }
}

/// A plain-HTTP merge URL (the MCS's port 22624) fetches without TLS: the
/// CA given is not used, and render says so; HTTPS gets no warning.
#[test]
fn plain_http_merge_url_warns_that_the_ca_is_unused() {
    let dir = scratch_dir();
    let ca = dir.path().join("ca.pem");
    std::fs::write(
        &ca,
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    for (url, warned) in [
        ("http://api-int.c.example.com:22624/config/worker-gpu", true),
        (
            "https://api-int.c.example.com:22623/config/worker-gpu",
            false,
        ),
    ] {
        let o = bin()
            .args([
                "render",
                "ignition",
                "--pool",
                "worker-gpu",
                "--merge-url",
                url,
            ])
            .arg("--ca-file")
            .arg(&ca)
            .args(["-o", "-"])
            .output()
            .unwrap();
        let err = stderr(&o);
        assert!(o.status.success(), "{err}");
        assert_eq!(
            err.contains("warning: --merge-url") && err.contains("the CA of --ca-file is not used"),
            warned,
            "{url}: {err}"
        );
    }
}

/// `iso embed -i -` reads the config from stdin, as `--rules -` does; a file
/// that is no ISO image is named in the refusal.
#[test]
fn iso_embed_reads_stdin_for_dash_and_names_a_non_iso() {
    let dir = scratch_dir();
    let d = dir.path();
    let config = br#"{"ignition":{"version":"3.4.0"}}"#;
    let not_iso = d.join("notes.txt");
    std::fs::write(&not_iso, "not an image").unwrap();
    let embed = |iso: &Path, out: Option<&Path>| {
        let mut c = bin();
        c.args(["iso", "embed", "-i", "-"]);
        if let Some(out) = out {
            c.arg("-o").arg(out);
        }
        let mut child = c
            .arg(iso)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), config).unwrap();
        drop(child.stdin.take());
        child.wait_with_output().unwrap()
    };
    let o = embed(&not_iso, None);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{}: this is not an ISO image", not_iso.display())),
        "{err}"
    );

    let Some(iso) = test_iso(d) else { return };
    let out = d.join("out.iso");
    let o = embed(&iso, Some(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = bin().args(["iso", "show"]).arg(&out).output().unwrap();
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert_eq!(shown.stdout, config);
}
