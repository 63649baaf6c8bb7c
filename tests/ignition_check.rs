//! The check `iso embed` runs on a user's Ignition config, held to the real
//! `ignition-validate` (Debian's Ignition 2.14, spec 3.0.0-3.4.0): on every
//! config of a corpus and every spec version, both accept or both refuse,
//! and the keys ours reports as unknown are the ones Ignition warns about.

use crate::support::{readme_figures, scratch_dir, skipped};

use std::collections::BTreeSet;
use std::process::Command;

use kubelet_labeler::cli::iso::check_ignition;
use skipped::need;

/// Configs with `VER` for the spec version. Each runs at every version, so
/// one that a version lacks a field for tests the version split too.
const CORPUS: &[&str] = &[
    // Accepted (some with warnings).
    r#"{"ignition":{"version":"VER"}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/etc/x","mode":420,"overwrite":true,"contents":{"source":"data:;base64,aGk=","compression":""}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:text/plain;charset=utf-8,a%20b;/?:@&=+$,!~*'()-_."}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:,"}},{"path":"/y","contents":{"source":"data:;charset=utf-8,x"}},{"path":"/z","contents":{"source":""}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:;base64,","compression":"gzip"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"systemd":{"units":[{"name":"kubelet.service","dropins":[{"name":"90-a.conf","contents":"[Service]\n"},{"name":"91-b.conf"}]},{"name":"x.timer","enabled":true,"contents":"[Timer]\n"}]}}"#,
    r#"{"ignition":{"version":"VER","config":{"merge":[{"source":"https://api-int.c.example.com:22623/config/w"}]},"security":{"tls":{"certificateAuthorities":[{"source":"data:text/plain;charset=utf-8;base64,aGk="}]}}}}"#,
    r#"{"ignition":{"version":"VER"},"storge":{}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/etc/hosts","filesystem":"root","mode":420,"contents":{"source":"data:,x","verification":{}}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"directories":[{"path":"/d","mode":493}],"links":[{"path":"/l","target":"/d"}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"https://h/x","verification":{"hash":"sha512-00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"}}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"https://h/x","verification":{"hash":"sha256-0000000000000000000000000000000000000000000000000000000000000000"}}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"gs://b/x"}},{"path":"/y","contents":{"source":"s3://b/y"}},{"path":"/z","contents":{"source":"tftp://h/z"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"arn:aws:s3:::bucket/x"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"kernelArguments":{"shouldExist":["a"]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","mode":4095}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/"}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"x","mode":1,"path":"/x"}]}}"#,
    // Refused.
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","path":"x"}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","mode":"420"}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"mode":420}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":5}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","overwrite":"yes"}]}}"#,
    r#"{"ignition":{"version":"VER"},"systemd":{"units":{}}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"etc/x"}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x/"}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/a/../b"}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/a//b"}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x"},{"path":"/x"}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x"}],"directories":[{"path":"/x"}]}}"#,
    r#"{"ignition":{"version":"VER"},"systemd":{"units":[{"name":"k.service","dropins":[{"name":"x"}]}]}}"#,
    r#"{"ignition":{"version":"VER"},"systemd":{"units":[{"name":"k"}]}}"#,
    r#"{"ignition":{"version":"VER"},"systemd":{"units":[{"name":"k.service"},{"name":"k.service"}]}}"#,
    r#"{"ignition":{"version":"VER"},"systemd":{"units":[{"name":"k.service","dropins":[{"name":"a.conf"},{"name":"a.conf"}]}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:,x","compression":"xz"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"ftp://h/x"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"/etc/x"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:x"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:x,y"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:a/b/c,y"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:,a b"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:,a\"b"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:,a#b"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:,%4"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:;base64,aGk"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:;base64,aGk%3D"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"data:text/plain;a=b;c,x"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"DATA:,ab"}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","contents":{"source":"https://h/x","verification":{"hash":"md5-00"}}}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","mode":99999}]}}"#,
    r#"{"ignition":{"version":"VER"},"storage":{"files":[{"path":"/x","mode":-1}]}}"#,
    r#"{"ignition":{"version":"VER","config":{"merge":[{"source":"ftp://h/x"}]}}}"#,
    r#"{"ignition":{"version":"VER","security":{"tls":{"certificateAuthorities":[{"source":"data:x"}]}}}}"#,
];

/// What ignition-validate says of `config`: accepted, and the keys it warns
/// are unused.
fn ignition_validate(dir: &std::path::Path, config: &str) -> (bool, BTreeSet<String>) {
    let f = dir.join("c.ign");
    std::fs::write(&f, config).unwrap();
    let out = Command::new("ignition-validate").arg(&f).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    // "warning at $.storge, line 1 col 33: Unused key storge"
    let unused = text
        .lines()
        .filter(|l| l.contains("Unused key"))
        .filter_map(|l| l.strip_prefix("warning at "))
        .filter_map(|l| l.split(',').next())
        .map(str::to_string)
        .collect();
    (out.status.success(), unused)
}

#[test]
fn embed_check_agrees_with_ignition_validate() {
    if !need("ignition-validate") {
        return;
    }
    let dir = scratch_dir();
    let (mut accepted, mut refused) = (0, 0);
    for template in CORPUS {
        for version in ["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0"] {
            let ours = check_ignition(template.replace("VER", version).as_bytes(), "c.ign");
            // Ignition 2.14 reads 3.4.0 only under its pre-release name.
            let theirs_version = if version == "3.4.0" {
                "3.4.0-experimental"
            } else {
                version
            };
            let (theirs, unused) =
                ignition_validate(dir.path(), &template.replace("VER", theirs_version));
            match &ours {
                Ok(c) => {
                    assert!(
                        theirs,
                        "{version} {template}: ignition-validate refuses, we accept"
                    );
                    let ours: BTreeSet<String> = c.unknown_keys.iter().cloned().collect();
                    assert_eq!(ours, unused, "{version} {template}: unknown keys");
                    accepted += 1;
                }
                Err(e) => {
                    assert!(
                        !theirs,
                        "{version} {template}: we refuse ({e}), ignition-validate accepts"
                    );
                    let e = e.to_string();
                    assert!(
                        e.contains("c.ign") && e.contains(&format!("not valid Ignition {version}")),
                        "{e}"
                    );
                    refused += 1;
                }
            }
        }
    }
    // The corpus exercises both answers, at every version.
    assert!(
        accepted >= 60 && refused >= 150,
        "{accepted} accepted, {refused} refused"
    );
}

/// 3.5.0 is past Debian's Ignition; the corpus gets the same verdicts as at
/// 3.4.0 (3.5.0 adds fields, none of which the corpus uses, and no rule).
#[test]
fn embed_check_reads_3_5_0_as_3_4_0_for_the_corpus() {
    for template in CORPUS {
        let at = |v: &str| check_ignition(template.replace("VER", v).as_bytes(), "c.ign");
        match (at("3.4.0"), at("3.5.0")) {
            (Ok(a), Ok(b)) => assert_eq!(a.unknown_keys, b.unknown_keys, "{template}"),
            (Err(_), Err(e)) => assert!(e.to_string().contains("configuration-v3_5"), "{e}"),
            (a, b) => panic!("{template}: 3.4.0 {a:?}, 3.5.0 {b:?}"),
        }
    }
}

#[test]
fn readme_states_the_corpus_size() {
    readme_figures::assert_docs_say(&format!("{} configs (types,", CORPUS.len()));
}
