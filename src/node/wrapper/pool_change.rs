//! A node installed from a fleet ISO registers in the pool it was installed
//! into, or fenced. The live system chose the pool from the machine's
//! facts at install; anything that changes those facts before the first
//! kubelet start (a unit that writes `features.d`, loads a module or turns
//! SMT off, the cluster's OS image with its own kernel and os-release)
//! makes the node register with labels the MCO places in another pool,
//! without the taints that pool gives only at registration. A file check
//! at install cannot see what a unit does at boot: the node checks, at
//! every start, against the record the install left
//! (`fleet::INSTALLED_POOL_PATH`), and fails closed
//! (`fence::Reason::PoolChanged`). kubelet applies the fence only when it
//! creates its Node, so a later start costs the one read of the record.
//!
//! No record (a node not installed from a fleet ISO): nothing read but
//! the one directory that is not there.

use std::ffi::OsString;
use std::path::Path;

use super::fail_closed;
use super::fence::{Failure, Reason};
use super::plan::Plan;
use crate::node::fleet::{self, INSTALLED_POOL_PATH, Table};
use crate::node::kubelet::{self, NodeFs, Profile};

/// The most bytes of the record: a fleet of a hundred pools takes a few KiB.
pub const RECORD_MAX: usize = 64 << 10;
const _: () = assert!(RECORD_MAX == 64 << 10, "the message says 64 KiB");

/// The install's record, as [`read_record`] reads it.
pub type Record = Option<Result<Table, String>>;

/// The record under `root`: None when there is none (its directory or the
/// file missing); else the table, or why it cannot be read. Read as the
/// wrapper reads its other inputs: within its bounds, never blocking, a
/// regular file only, never through a link (a link is unreadable, not
/// followed).
pub fn read_record(root: &Path) -> Record {
    use crate::node::nodefs::{Dir, read_up_to};
    let path = Path::new(INSTALLED_POOL_PATH);
    let (dir, name) = (path.parent()?, path.file_name()?);
    let read = || {
        let dir = Dir::open(&crate::node::unit::search::contained(root, dir)?)?;
        read_up_to(dir.open_file(name)?.0, RECORD_MAX + 1)
    };
    let bytes = match read() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            let why = match (e.raw_os_error(), e.kind()) {
                (Some(40), _) => "a symbolic link, not followed".to_string(),
                (_, std::io::ErrorKind::InvalidInput) => "not a regular file".to_string(),
                _ => e.to_string(),
            };
            return Some(Err(format!("{INSTALLED_POOL_PATH}: {why}")));
        }
        Ok(b) if b.len() > RECORD_MAX => {
            return Some(Err(format!(
                "{INSTALLED_POOL_PATH}: larger than 64 KiB, not read"
            )));
        }
        Ok(b) => b,
    };
    Some(
        String::from_utf8(bytes)
            .map_err(|_| "not UTF-8".to_string())
            .and_then(|t| Table::parse(&t))
            .map_err(|e| format!("{INSTALLED_POOL_PATH}: {e}")),
    )
}

/// The labels kubelet registers a worker with under `argv`: its own
/// (`fleet::base_labels`, the role label among them), then every
/// `--node-labels=` word's, ours included, the later winning; sorted, one
/// per key.
pub fn labels_of_argv(argv: &[OsString]) -> Vec<(String, String)> {
    let words: Vec<String> = argv
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let mut labels = fleet::base_labels();
    for u in kubelet::flags::scan(&words).uses("node-labels") {
        for (k, v) in kubelet::parse_node_labels(u.value.as_deref().unwrap_or("")) {
            labels.retain(|(l, _)| *l != k);
            labels.push((k, v));
        }
    }
    labels.sort();
    labels
}

/// Why `plan`'s registration does not land in the pool `record` names; None when it does, when there is no record, or when
/// nothing of ours reaches kubelet (`left_out`: no flag can be added).
pub fn changed(plan: &Plan, record: &Record) -> Option<String> {
    if plan.left_out.is_some() {
        return None;
    }
    match record.as_ref()? {
        Ok(record) => fleet::pool_change(record, &labels_of_argv(&plan.argv)),
        Err(why) => Some(format!("{why}: the pool it was installed into is unknown")),
    }
}

/// How to lift the fence of a pool change, after the reason.
pub const POOL_LIFT: &str = "fix what changed its labels since the install (a unit or file \
that writes what the rules read, a module, the OS image), or, if the move is meant, replace \
or remove the record; then delete the Node so kubelet registers it again (with that pool's \
taints)";

/// `plan`, fenced with `pool-changed` where `record` (the install's, read
/// once a start) says the node would land in another pool than it was
/// installed into (see [`changed`]); a note names both pools and how to
/// lift it. Already fenced: that fence stays, the note is added.
pub fn check(mut plan: Plan, record: &Record, profile: Profile, fs: &dyn NodeFs) -> Plan {
    let Some(why) = changed(&plan, record) else {
        return plan;
    };
    let note = format!("{why}; {POOL_LIFT}");
    // Checked again after each smaller plan (the exec limit's): one note.
    if !plan.notes.contains(&note) {
        plan.notes.push(note);
    }
    fail_closed::refenced(plan, &Failure::new(Reason::PoolChanged, ""), profile, fs)
}

/// The final check of every argv the wrapper may exec, applied after its
/// last rewrite (the exec-limit fallbacks drop our labels, which may be
/// what chose the installed pool): [`check`] with the record read once
/// this start, passed on, not read again.
pub struct Gate {
    pub record: Record,
    pub profile: Profile,
    pub fs: super::plan::RootFs,
    /// Our variables set otherwise than our drop-ins set them: fenced.
    pub overridden: Vec<super::own_env::Overridden>,
}

impl Gate {
    /// `plan` rewritten: in the installed pool, or fenced (see [`check`]).
    pub fn check(&self, plan: Plan) -> Plan {
        let plan = check(plan, &self.record, self.profile, &self.fs);
        super::own_env::fence(plan, &self.overridden, self.profile, &self.fs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::fleet::{Pool, PoolKind, WORKER_ROLE_LABEL};
    use crate::node::kubelet::Additions;
    use crate::node::wrapper::plan::OriginalCommand;

    use crate::node::fleet::tests_pool as pool;

    fn fleet_pools() -> Vec<Pool> {
        vec![
            pool(
                "worker-special",
                PoolKind::Custom,
                "feature.node.kubernetes.io/special",
                "true",
            ),
            pool("worker", PoolKind::Worker, WORKER_ROLE_LABEL, ""),
            pool("worker-gpu", PoolKind::Custom, "example.com/gpu", "true"),
        ]
    }

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    const SPECIAL: &str = "--node-labels=feature.node.kubernetes.io/special=true";

    /// r18a F2: a record naming a cluster pool left off the ISO (`iso
    /// fleet --cluster-pools`) fences a registration selecting it.
    #[test]
    fn a_cluster_pool_off_the_iso_is_fenced() {
        let pools = fleet_pools();
        let on_iso = [pools[1].clone()];
        let text = fleet::installed_record_with(&pools[1], &on_iso, &pools).to_text();
        let record = fleet::Table::parse(&text).unwrap();
        assert_eq!(record.pools.len(), 3);
        let special = labels_of_argv(&argv(&["kubelet", "--v=2", SPECIAL]));
        let why = fleet::pool_change(&record, &special).unwrap();
        assert!(why.contains("select pool worker-special"), "{why}");
        let plain = labels_of_argv(&argv(&["kubelet", "--node-labels=a=b"]));
        assert_eq!(fleet::pool_change(&record, &plain), None);
    }

    /// The MCO's precedence against the installed pool: the same pool, no
    /// change; another, none, or two custom pools: a change, naming both.
    #[test]
    fn the_labels_select_the_installed_pool_or_it_changed() {
        let pools = fleet_pools();
        let worker = fleet::installed_record(&pools[1], &pools);
        assert_eq!(worker.pools[0].name, "worker");
        assert_eq!(worker.pools.len(), 3);
        let plain = labels_of_argv(&argv(&["kubelet", "--node-labels=a=b"]));
        assert_eq!(fleet::pool_change(&worker, &plain), None);
        let special = labels_of_argv(&argv(&["kubelet", "--v=2", SPECIAL]));
        let why = fleet::pool_change(&worker, &special).unwrap();
        assert_eq!(
            why,
            "installed into pool worker (/etc/kubelet-labeler/installed-pool), but the labels \
             it registers with (feature.node.kubernetes.io/special=true,\
             node-role.kubernetes.io/worker=) select pool worker-special (nodeSelector \
             feature.node.kubernetes.io/special=true)"
        );
        let both = labels_of_argv(&argv(&[
            "kubelet",
            SPECIAL,
            "--node-labels",
            "example.com/gpu=true",
        ]));
        let why = fleet::pool_change(&worker, &both).unwrap();
        assert!(why.contains("match 2 custom pools"), "{why}");
        // Installed into the custom pool: its label gone, worker is chosen.
        let special_record = fleet::installed_record(&pools[0], &pools);
        assert_eq!(fleet::pool_change(&special_record, &special), None);
        let why = fleet::pool_change(&special_record, &plain).unwrap();
        assert!(why.contains("select pool worker "), "{why}");
        // A later word wins, as in kubelet.
        let undone = labels_of_argv(&argv(&[
            "kubelet",
            SPECIAL,
            "--node-labels=feature.node.kubernetes.io/special=false",
        ]));
        assert_eq!(fleet::pool_change(&worker, &undone), None);
    }

    /// A record of one pool (the releases before this one wrote the
    /// installed pool alone): a change only where the labels no longer
    /// match that pool's own nodeSelector; a move into a pool it does not
    /// know is not seen.
    #[test]
    fn a_one_pool_record_fences_only_when_its_pool_no_longer_matches() {
        let pools = fleet_pools();
        let old = |p: &Pool| Table {
            env: Vec::new(),
            pools: vec![p.clone()],
        };
        let special = labels_of_argv(&argv(&["kubelet", SPECIAL]));
        let plain = labels_of_argv(&argv(&["kubelet"]));
        assert_eq!(fleet::pool_change(&old(&pools[1]), &special), None);
        assert_eq!(fleet::pool_change(&old(&pools[0]), &special), None);
        let why = fleet::pool_change(&old(&pools[0]), &plain).unwrap();
        assert!(why.contains("no pool's nodeSelector matches"), "{why}");
        let empty = Table::default();
        assert!(fleet::pool_change(&empty, &plain).is_some());
    }

    fn root_with(record: Option<&[u8]>) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        if let Some(bytes) = record {
            let p = d.path().join(INSTALLED_POOL_PATH.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        d
    }

    /// None without a record; every record that cannot be read as a
    /// table is a reason, never "no record": a link (not followed), a
    /// FIFO (never opened: nothing blocks), a directory, past 64 KiB,
    /// not a table.
    #[test]
    fn a_record_is_read_within_bounds_or_is_a_reason() {
        let none = root_with(None);
        assert!(read_record(none.path()).is_none());
        let pools = fleet_pools();
        let text = fleet::installed_record(&pools[1], &pools).to_text();
        let good = root_with(Some(text.as_bytes()));
        assert_eq!(read_record(good.path()).unwrap().unwrap().pools.len(), 3);
        let at = |d: &tempfile::TempDir| d.path().join(INSTALLED_POOL_PATH.trim_start_matches('/'));
        let link = root_with(Some(b""));
        std::fs::remove_file(at(&link)).unwrap();
        std::os::unix::fs::symlink(at(&good), at(&link)).unwrap();
        let fifo = root_with(Some(b""));
        std::fs::remove_file(at(&fifo)).unwrap();
        let c = std::ffi::CString::new(at(&fifo).into_os_string().into_encoded_bytes()).unwrap();
        unsafe extern "C" {
            fn mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
        }
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { mkfifo(c.as_ptr(), 0o600) }, 0);
        let dir = root_with(Some(b""));
        std::fs::remove_file(at(&dir)).unwrap();
        std::fs::create_dir(at(&dir)).unwrap();
        let big = root_with(Some(format!("{text}{}", "#".repeat(RECORD_MAX)).as_bytes()));
        let junk = root_with(Some(b"kubelet-labeler-fleet 1\nin a b\n"));
        for (d, says) in [
            (&link, "a symbolic link, not followed"),
            (&fifo, "not a regular file"),
            (&dir, "not a regular file"),
            (&big, "larger than 64 KiB"),
            (&junk, "before any pool line"),
        ] {
            let why = read_record(d.path()).unwrap().unwrap_err();
            assert!(why.contains(says), "{says}: {why}");
        }
    }
    /// The plan of `kubelet --v=2` with our `labels` and `taints` merged,
    /// checked against a root holding `record`.
    fn checked(record: Option<&Table>, labels: &[(&str, &str)], taints: &str) -> Plan {
        use super::super::plan::{RootFs, plan_closed};
        let d = root_with(record.map(|r| r.to_text()).as_deref().map(str::as_bytes));
        let fs = RootFs::new(d.path(), Path::new("/"));
        let original = OriginalCommand {
            executable: "/usr/bin/kubelet".into(),
            argv: argv(&["/usr/bin/kubelet", "--v=2"]),
        };
        let additions = Additions {
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            taints: kubelet::parse_taints(taints).unwrap_or_default(),
        };
        let p = plan_closed(original, Ok(Some(additions)), Profile::OpenShift, &fs);
        check(p, &read_record(d.path()), Profile::OpenShift, &fs)
    }

    fn taints_word(p: &Plan) -> Option<String> {
        p.argv.iter().find_map(|w| {
            w.to_str()?
                .strip_prefix("--register-with-taints=")
                .map(String::from)
        })
    }

    /// Installed into worker, its labels now select worker-special: ours
    /// go in with the fence, the one line names both pools and how to
    /// lift it. No record, or the installed pool: unchanged.
    #[test]
    fn a_pool_change_registers_fenced() {
        const OURS: &str = "example.com/x=y:NoSchedule";
        const FENCE: &str = "kubelet-labeler.io/fenced=pool-changed:NoSchedule";
        let pools = fleet_pools();
        let worker = fleet::installed_record(&pools[1], &pools);
        let special = [("feature.node.kubernetes.io/special", "true")];
        let p = checked(Some(&worker), &special, OURS);
        assert_eq!(
            taints_word(&p).as_deref(),
            Some(&*format!("{OURS},{FENCE}"))
        );
        assert!(p.added_labels.iter().any(|(k, _)| k == special[0].0));
        let line = super::super::plan::summary(&p);
        for part in [
            "installed into pool worker (/etc/kubelet-labeler/installed-pool), but the labels",
            "select pool worker-special",
            POOL_LIFT,
            "registering fenced with kubelet-labeler.io/fenced=pool-changed:NoSchedule",
        ] {
            assert!(line.contains(part), "{part}\n{line}");
        }
        // No taint of ours: the fence alone.
        let p = checked(Some(&worker), &special, "");
        assert_eq!(taints_word(&p).as_deref(), Some(FENCE));
        // An unreadable record: fenced all the same.
        let p = checked(Some(&Table::default()), &[], OURS);
        assert_eq!(
            taints_word(&p).as_deref(),
            Some(&*format!("{OURS},{FENCE}"))
        );
        // No change, or no record: as planned.
        for (record, labels) in [(Some(&worker), &[][..]), (None, &special[..])] {
            let p = checked(record, labels, OURS);
            assert_eq!(taints_word(&p).as_deref(), Some(OURS));
            assert!(p.notes.is_empty(), "{:?}", p.notes);
        }
    }

    /// Fenced already (another reason): that fence stays, the pool change
    /// is said beside it.
    #[test]
    fn one_fence_the_pool_change_noted() {
        let pools = fleet_pools();
        let worker = fleet::installed_record(&pools[1], &pools);
        let first = "kubelet-labeler.io/fenced=rules-failed:NoSchedule";
        let p = checked(
            Some(&worker),
            &[("feature.node.kubernetes.io/special", "true")],
            first,
        );
        assert_eq!(taints_word(&p).as_deref(), Some(first));
        assert!(
            p.notes[0].contains("select pool worker-special"),
            "{:?}",
            p.notes
        );
    }

    /// Over exec's limit (r18a F1): the fallbacks that drop our labels
    /// pass the pool check after they are made, with the record read once.
    /// A node installed into a pool our labels select registers there or
    /// fenced with `pool-changed`, every taint kept; where the labels do
    /// not choose the pool, or there is no record, nothing is fenced.
    #[test]
    fn labels_dropped_for_the_exec_limit_pass_the_pool_check() {
        use super::super::plan::{RootFs, plan_closed};
        const FENCE: &str = "kubelet-labeler.io/fenced=pool-changed:NoSchedule";
        const OURS: &str = "example.com/gpu-only=true:NoSchedule";
        let pools = vec![
            pool("worker", PoolKind::Worker, WORKER_ROLE_LABEL, ""),
            pool("worker-gpu", PoolKind::Custom, "example.com/gpu", "true"),
        ];
        // Many labels from the rules, the gpu pool's among them.
        let mut labels = vec![("example.com/gpu".to_string(), "true".to_string())];
        labels.extend((0..300).map(|i| (format!("example.com/l{i:03}"), "v".repeat(60))));
        let over = |argv: &[OsString]| {
            let total: usize = argv.iter().map(|a| a.len() + 1).sum();
            (total > 16 << 10).then(|| format!("{total} bytes, over 16 KiB"))
        };
        let fitted = |installed: Option<usize>| {
            let record = installed.map(|i| fleet::installed_record(&pools[i], &pools));
            let d = root_with(record.map(|r| r.to_text()).as_deref().map(str::as_bytes));
            let original = OriginalCommand {
                executable: "/usr/bin/kubelet".into(),
                argv: argv(&["/usr/bin/kubelet", "--v=2"]),
            };
            // Installed into worker: the gpu label would move it (fenced
            // before any rewrite); left out here.
            let gpu = installed != Some(0);
            let additions = Additions {
                labels: labels[usize::from(!gpu)..].to_vec(),
                taints: kubelet::parse_taints(OURS).unwrap(),
            };
            let gate = Gate {
                record: read_record(d.path()),
                profile: Profile::OpenShift,
                fs: RootFs::new(d.path(), Path::new("/")),
                overridden: Vec::new(),
            };
            let planned = plan_closed(original, Ok(Some(additions)), gate.profile, &gate.fs);
            let mut plan = gate.check(planned);
            assert!(changed(&plan, &gate.record).is_none());
            let at_runtime = fail_closed::smaller(&plan, "E2BIG", &|p| gate.check(p));
            let _ = fail_closed::fit_exec_limit(&mut plan, &over, &|p| gate.check(p));
            let [labels_out, _] = at_runtime;
            (plan, labels_out.unwrap())
        };
        // Installed into worker-gpu: without our labels it lands in
        // worker, so it registers fenced, and says which pools.
        let (plan, at_runtime) = fitted(Some(1));
        for p in [&plan, &at_runtime] {
            assert!(p.left_out.is_none());
            assert!(p.added_labels.is_empty());
            assert_eq!(taints_word(p).as_deref(), Some(&*format!("{OURS},{FENCE}")));
            assert!(
                !p.argv
                    .iter()
                    .any(|w| w.to_string_lossy().starts_with("--node-labels="))
            );
            assert!(
                p.notes
                    .iter()
                    .any(|n| n.contains("installed into pool worker-gpu")
                        && n.contains("select pool worker ")),
                "{:?}",
                p.notes
            );
            assert!(p.notes.iter().any(|n| n.starts_with("our labels left out")));
        }
        assert!(over(&plan.argv).is_none());
        // Installed into worker, or no record: without our labels, unfenced.
        for installed in [Some(0), None] {
            let (plan, at_runtime) = fitted(installed);
            for p in [&plan, &at_runtime] {
                assert_eq!(taints_word(p).as_deref(), Some(OURS), "{installed:?}");
                assert!(p.added_labels.is_empty());
            }
        }
    }
}
