//! The specifier budget of a unit's load (see `specifier::EXPANDED_MAX`).

use super::*;
use crate::node::unit::specifier::Host;

/// Specifiers have one budget over the whole load: 100 words of 96
/// `%o`s on a 60 KiB `ID=` (each word under the old per-word bound)
/// built 575 MB before exec's E2BIG. Now the expansion stops at the
/// budget and the unit is refused, with `-` or in `Environment=` too;
/// the usual specifiers load as before.
#[test]
fn specifiers_have_one_budget_per_load() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let units = r.join("etc/systemd/system");
    std::fs::create_dir_all(units.join("k.service.d")).unwrap();
    let id = "o".repeat(60 << 10);
    std::fs::write(r.join("etc/os-release"), format!("ID={id}\n")).unwrap();
    let word = "%o".repeat(96);
    let words = vec![word.as_str(); 100].join(" ");
    let paths = UnitPaths::system(r);
    let load = || load_service(&paths, "k.service", &LoadOptions::default());
    for exec in [format!("/bin/k {words}"), format!("-/bin/k {words}")] {
        std::fs::write(
            units.join("k.service"),
            format!("[Service]\nExecStart={exec}\n"),
        )
        .unwrap();
        // Not expect_err: the loaded argv would be printed whole.
        let Err(e) = load() else { panic!("loaded") };
        let e = e.to_string();
        assert!(e.starts_with("/etc/systemd/system/k.service:2: "), "{e}");
        assert!(e.contains("E2BIG"), "{e}");
    }
    // The work stops at the budget: what was built is the budget at most.
    let spec = SpecifierValues {
        host: Host::System {
            root: r.to_path_buf(),
            live: false,
        },
        unit: "k.service".into(),
        fragment: None,
        cache: Default::default(),
    };
    let line = exec::parse_exec(&format!("/bin/k {words}"), &spec);
    assert!(
        matches!(&line, exec::ExecLine::Append { error: Some(e), fatal: true, .. } if e.contains("E2BIG")),
        "{line:?}"
    );
    assert!(spec.over_budget());
    assert!(spec.expanded_bytes() <= specifier::EXPANDED_MAX);
    // Later words and lines are not expanded at all.
    assert!(spec.expand(b"%n").is_err());
    // Across lines and files: each word fits, the whole does not.
    std::fs::write(units.join("k.service"), "[Service]\nExecStart=/bin/k %o\n").unwrap();
    let envs: String = (0..100)
        .map(|i| format!("Environment=A{i}={word}\n"))
        .collect();
    std::fs::write(
        units.join("k.service.d/50.conf"),
        format!("[Service]\n{envs}"),
    )
    .unwrap();
    let Err(e) = load() else { panic!("loaded") };
    let e = e.to_string();
    assert!(
        e.contains("k.service.d/50.conf:") && e.contains("E2BIG"),
        "{e}"
    );
    // The usual cases are unchanged.
    std::fs::write(
        units.join("k.service.d/50.conf"),
        "[Service]\nEnvironment=A=%o\n",
    )
    .unwrap();
    std::fs::write(r.join("etc/os-release"), "ID=rhcos\n").unwrap();
    let svc = load().unwrap();
    assert_eq!(
        svc.exec_start[0].argv,
        [b"/bin/k".to_vec(), b"rhcos".to_vec()]
    );
    assert_eq!(svc.environment, [("A".to_string(), b"rhcos".to_vec())]);
}
