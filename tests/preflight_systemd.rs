//! `explain`'s drop-in verdicts against a real systemd: whether the
//! wrapper's drop-in is what systemd runs must be what `explain` concludes.

use crate::support::{run_cli, scratch_dir, stderr, systemd_oracle, write};

use std::path::{Path, PathBuf};

use kubelet_labeler::node::contract::{LABELS_VAR, WRAPPER_DROPIN_NAME};
use run_cli::cli;
use serde_json::{Value, json};
use systemd_oracle::UserRun;

/// A file for a case: (directory index, name in the unit's drop-in
/// directory or, with a '/', in the search directory, contents or
/// "/dev/null").
type Placed<'a> = (usize, &'a str, &'a str);

/// One user-manager run over `cases` (unit name suffix, files): per unit,
/// what systemd ran and what `explain` said, and whether they agree.
fn verdicts(scratch: &Path, kubelet: &Path, cases: &[(&str, &[Placed])]) -> Vec<(bool, String)> {
    let k = kubelet.display();
    // As /etc/systemd/system, /run/systemd/system, /run/systemd/generator
    // and /usr/lib/systemd/system rank.
    let dirs: Vec<PathBuf> = ["etc", "run", "generator", "usr"]
        .iter()
        .map(|n| scratch.join(n))
        .collect();
    // The wrapper's stand-in: the recorder too, as another file (the
    // wrapper knows itself by its file).
    let wrapper = scratch.join("fake-wrapper");
    std::fs::create_dir_all(scratch).unwrap();
    std::fs::copy(kubelet, &wrapper).unwrap();
    let ours = format!(
        "[Service]\nExecStart=\nExecStart={} wrapper\n",
        wrapper.display()
    );
    let env = format!("[Service]\nEnvironment=\"{LABELS_VAR}=example.com/a=b\"\n");
    let mut units = Vec::new();
    for (name, files) in cases {
        let unit = format!("kl{name}.service");
        let dropin = |d: usize, file: &str| dirs[d].join(format!("{unit}.d/{file}"));
        write(
            &dirs[3].join(&unit),
            &format!("[Service]\nExecStart={k} original\n"),
        );
        write(&dropin(2, WRAPPER_DROPIN_NAME), &ours);
        write(&dropin(1, "90-kubelet-labeler-env.conf"), &env);
        for (d, file, text) in *files {
            let path = match file.contains('/') {
                true => dirs[*d].join(file),
                false => dropin(*d, file),
            };
            if *text == "/dev/null" {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink("/dev/null", &path).unwrap();
            } else {
                write(&path, text);
            }
        }
        units.push(unit);
    }
    let run = UserRun::new(dirs.clone(), units.clone());
    let search_path = systemd_oracle::search_path(&run, scratch);
    let outcomes = systemd_oracle::run_user_manager(&run, scratch);
    let mut table = Vec::new();
    for unit in &units {
        let o = &outcomes[unit];
        let ran = o.records.first().map(|r| r.argv_lossy()[1].clone());
        let systemd_runs_wrapper = ran.as_deref() == Some("wrapper");
        let out = cli(&[
            "explain",
            "--json",
            "--root",
            "/",
            "--unit-path",
            &search_path,
            "--unit",
            unit,
        ]);
        let explained = serde_json::from_slice::<Value>(&out.stdout).ok();
        let we_say_wrapper = out.status.success()
            && explained
                .as_ref()
                .is_some_and(|e| e["wrapper_installed"] == json!(true) && e["errors"] == json!([]));
        table.push((
            systemd_runs_wrapper == we_say_wrapper,
            format!(
                "{unit}: systemd ran {ran:?} ({}), explain exit {:?}: {}",
                o.prop("LoadState"),
                out.status.code(),
                stderr(&out).trim()
            ),
        ));
    }
    table
}

/// The drop-in verdicts against a real systemd (a user manager with the
/// search path in systemd's priority order, the generator's directory
/// among them): for each arrangement, whether the command of the wrapper's
/// drop-in is what systemd runs must be what `explain` concludes.
#[test]
fn wrapper_verdicts_match_systemd() {
    if systemd_oracle::unavailable().is_some() {
        return;
    }
    let dir = scratch_dir();
    let kubelet = systemd_oracle::build_fake_kubelet(dir.path());
    let k = kubelet.display();
    let reset = format!("[Service]\nExecStart=\nExecStart={k} debug\n");
    let more = format!("[Service]\nExecStart={k} more\n");
    let log = "[Service]\nEnvironment=X=1\n";
    let cases: &[(&str, &[Placed])] = &[
        ("plain", &[]),
        ("etcafter", &[(0, "zzz-debug.conf", &reset)]),
        ("usrafter", &[(3, "zzz-debug.conf", &reset)]),
        ("before", &[(0, "00-debug.conf", &reset)]),
        ("harmless", &[(1, "zzz-log.conf", log)]),
        ("maskedetc", &[(0, WRAPPER_DROPIN_NAME, "/dev/null")]),
        ("maskedusr", &[(3, WRAPPER_DROPIN_NAME, "/dev/null")]),
        ("emptyetc", &[(0, WRAPPER_DROPIN_NAME, "")]),
        ("appends", &[(1, "zzz-more.conf", &more)]),
        (
            "resetonly",
            &[(0, "zzz-none.conf", "[Service]\nExecStart=\n")],
        ),
    ];
    let mut table = verdicts(&dir.path().join("units"), &kubelet, cases);
    // The type-level directory (`service.d`) applies to every service: one
    // run each.
    for (i, name) in ["zzz-all.conf", "00-all.conf"].iter().enumerate() {
        let file = format!("service.d/{name}");
        let case: &[(&str, &[Placed])] = &[("typelevel", &[(0, &file, &reset)])];
        table.extend(verdicts(
            &dir.path().join(format!("type{i}")),
            &kubelet,
            case,
        ));
    }
    let text: Vec<&str> = table.iter().map(|(_, l)| l.as_str()).collect();
    assert!(table.iter().all(|(agree, _)| *agree), "{}", text.join("\n"));
    // The arrangements do cover both verdicts.
    let runs = text
        .iter()
        .filter(|l| l.contains("Some(\"wrapper\")"))
        .count();
    assert!(runs >= 3 && runs < table.len() - 3, "{}", text.join("\n"));
}
