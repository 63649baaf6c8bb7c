//! Reading a unit's `EnvironmentFile=`s as systemd reads them at its start.

use super::*;

/// A unit `k.service` under a new root whose `[Service]` section holds `lines`.
fn unit_with(lines: &str) -> (tempfile::TempDir, LoadedService) {
    let dir = tempfile::tempdir().unwrap();
    let units = dir.path().join("etc/systemd/system");
    std::fs::create_dir_all(&units).unwrap();
    std::fs::write(
        units.join("k.service"),
        format!("[Service]\nExecStart=/bin/k\n{lines}"),
    )
    .unwrap();
    let paths = UnitPaths::system(dir.path());
    let svc = load_service(&paths, "k.service", &LoadOptions::default()).unwrap();
    (dir, svc)
}

/// Review 44 r44c F2: a FIFO as an optional `EnvironmentFile=` read as an
/// empty file (never waiting), while systemd waits on it and applies what
/// is fed: the sync changed labels the wrapper had fenced. Anything but a
/// regular file is unknown: the sync refuses and the wrapper names it.
#[test]
fn an_environment_file_that_is_not_a_regular_file_is_unknown() {
    let (dir, svc) = unit_with("EnvironmentFile=-/etc/k.env\n");
    let r = dir.path();
    assert!(offline_environment(&svc, r, &[]).is_ok(), "absent");
    crate::node::nodefs::mkfifo(&r.join("etc/k.env"));
    let e = format!("{:#}", offline_environment(&svc, r, &[]).unwrap_err());
    assert!(
        e.contains("reading /etc/k.env: not a regular file") && e.contains("unknown"),
        "{e}"
    );
    let e = environment_files_setting(&svc, r, &["A"]).unwrap_err();
    assert!(
        format!("{e:#}").contains("/etc/k.env: not a regular file"),
        "{e:#}"
    );
    // Review 46 r46c F2: a directory (or a socket) systemd cannot read:
    // an optional one sets nothing, another fails the start.
    std::fs::remove_file(r.join("etc/k.env")).unwrap();
    std::fs::create_dir(r.join("etc/k.env")).unwrap();
    assert!(
        offline_environment(&svc, r, &[]).is_ok(),
        "an optional directory"
    );
    assert!(
        environment_files_setting(&svc, r, &["A"])
            .unwrap()
            .is_empty()
    );
    let (dir, svc) = unit_with("EnvironmentFile=/etc/k.env\n");
    std::fs::create_dir(dir.path().join("etc/k.env")).unwrap();
    let e = format!(
        "{:#}",
        offline_environment(&svc, dir.path(), &[]).unwrap_err()
    );
    assert!(
        e.contains("a directory or socket, which systemd cannot read"),
        "{e}"
    );
}

/// Review 44 r44c F3: values past systemd's own bound are dropped and the
/// unit starts; the sync's refusal says what is known, not "cannot start".
#[test]
fn an_environment_file_past_exec_s_limit_is_unknown_not_unstartable() {
    let (dir, svc) = unit_with("EnvironmentFile=-/etc/k.env\n");
    let big: String = (0..4)
        .map(|i| format!("B{i}={}\n", "x".repeat(2 << 20)))
        .collect();
    std::fs::write(dir.path().join("etc/k.env"), big).unwrap();
    let e = format!(
        "{:#}",
        offline_environment(&svc, dir.path(), &[]).unwrap_err()
    );
    assert!(
        e.contains("(E2BIG)") && e.contains("what the unit gets is unknown"),
        "{e}"
    );
    assert!(!e.contains("cannot start"), "{e}");
}

/// Review 42 r42b F2: one file named many times is read within one
/// bound for all the entries, not once per entry without end.
#[test]
fn environment_files_are_read_within_one_bound() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let units = r.join("etc/systemd/system");
    std::fs::create_dir_all(&units).unwrap();
    std::fs::write(r.join("etc/big.env"), "A=x\n".repeat(1 << 18)).unwrap();
    let unit = format!(
        "[Service]\nExecStart=/bin/k\n{}",
        "EnvironmentFile=/etc/big.env\n".repeat(17)
    );
    std::fs::write(units.join("k.service"), &unit).unwrap();
    let paths = UnitPaths::system(r);
    let svc = load_service(&paths, "k.service", &LoadOptions::default()).unwrap();
    let e = offline_environment(&svc, r, &[]).unwrap_err();
    assert!(
        format!("{e:#}").contains("more than 16 MiB in all"),
        "{e:#}"
    );
    let unit = unit.replace(
        &"EnvironmentFile=/etc/big.env\n".repeat(17),
        "EnvironmentFile=/etc/big.env\n",
    );
    std::fs::write(units.join("k.service"), &unit).unwrap();
    let svc = load_service(&paths, "k.service", &LoadOptions::default()).unwrap();
    assert!(offline_environment(&svc, r, &[]).is_ok());
}
