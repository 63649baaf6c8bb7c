//! The crash-loop guard's state directory, which a pod with a hostPath on
//! `/run` can write into (review 12 F5), with the wrapper as built: a link
//! planted there is replaced, never written through (root would overwrite
//! any file of the node at every start and stop), and a state directory
//! that is a link is not used, the journal line says so, kubelet starts.

use crate::support::{scratch_dir, wrapper_run};

use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

use kubelet_labeler::node::contract::TAINTS_VAR;

const VICTIM: &str = "root:$6$precious-hash:19000:0:99999:7:::\n";

fn env(id: &str) -> Vec<(OsString, OsString)> {
    vec![
        ("INVOCATION_ID".into(), id.into()),
        (
            TAINTS_VAR.into(),
            "nvidia.com/gpu=present:NoSchedule".into(),
        ),
    ]
}

#[test]
fn a_link_planted_at_the_guards_files_is_never_written_through() {
    let scratch = scratch_dir();
    let (s, facts) = (scratch.path(), scratch.path().join("facts"));
    std::fs::create_dir_all(&facts).unwrap();
    let victim = s.join("victim");
    std::fs::write(&victim, VICTIM).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let state = s.join("state");
    std::fs::create_dir(&state).unwrap();
    // What a pod plants between two starts, at both names.
    symlink(&victim, state.join("kubelet.service.tmp")).unwrap();
    symlink(&victim, state.join("kubelet.service.state")).unwrap();
    for id in ["inv1", "inv2"] {
        let started = wrapper_run::start(&[], &env(id), &facts, s);
        assert!(
            started.argv.contains("nvidia.com/gpu=present:NoSchedule"),
            "{}",
            started.journal
        );
        assert!(
            !started.journal.contains("guard off"),
            "{}",
            started.journal
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), VICTIM);
        let meta = std::fs::symlink_metadata(state.join("kubelet.service.state")).unwrap();
        assert!(meta.is_file() && meta.nlink() == 1 && meta.mode() & 0o777 == 0o600);
        let text = std::fs::read_to_string(state.join("kubelet.service.state")).unwrap();
        assert!(
            text.contains(&format!("invocation_id={id}\nphase=exec")),
            "{text}"
        );
        // And again at the next start, in the name written first.
        symlink(&victim, state.join("kubelet.service.tmp")).unwrap();
    }
}

#[test]
fn a_state_directory_that_is_a_link_is_not_used() {
    let scratch = scratch_dir();
    let (s, facts) = (scratch.path(), scratch.path().join("facts"));
    std::fs::create_dir_all(&facts).unwrap();
    let elsewhere = s.join("etc-cron.d");
    std::fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, s.join("state")).unwrap();
    let started = wrapper_run::start(&[], &env("inv1"), &facts, s);
    assert!(
        started.argv.contains("nvidia.com/gpu=present:NoSchedule"),
        "{}",
        started.journal
    );
    assert_eq!(started.journal.lines().count(), 1, "{}", started.journal);
    assert!(
        started
            .journal
            .contains("crash-loop guard off for this start: writing")
            && started
                .journal
                .contains("is a symbolic link: never followed"),
        "{}",
        started.journal
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}
