//! Crash-loop guard. kubelet exits at once when it refuses a flag, and
//! `Restart=always` would then restart it with the same flag forever. So
//! the wrapper keeps, per unit, one small state file under `/run` that
//! holds the boot ID (a state from another boot, or a stale `/run`, is
//! ignored), the systemd invocation ID, and how far the last start got.
//! What the guard leaves out is never the static taints or labels, only
//! what the failure could have come from:
//!
//! - first thing, before any work that could crash (unit files, configs,
//!   the node rules), the wrapper records an **attempt** and whether it is
//!   a full start (no fallback of the guard). A full start that dies
//!   without exec'ing kubelet (an OOM kill or systemd's start timeout
//!   during rule evaluation, a crash the handler could not turn into an
//!   exec) leaves that attempt behind; the next start leaves out the
//!   rule-derived labels and taints and keeps the static ones (validated at
//!   render, computed before any rule runs). If that start dies too, the
//!   death was not ours and the one after is a full start again;
//! - just before exec'ing kubelet it records the **exec**: whether this
//!   start carries our additions, whether it carries labels a kubelet of
//!   another version or distribution may refuse ([`may_be_refused`]), and
//!   whether kubelet could have judged them at all. A kubelet whose
//!   `--config` file is missing, or with neither `--kubeconfig` nor
//!   `--bootstrap-kubeconfig` present (kubeadm before `join`), fails before
//!   or without registering: such a failure is never blamed on us;
//! - `ExecStopPost=` runs the wrapper with `--stop-post`; systemd gives it
//!   `$SERVICE_RESULT` and the same `$INVOCATION_ID`. A blameable start that
//!   carried such labels and did not succeed within [`QUICK_FAILURE_SECS`]
//!   is recorded as a quick failure; the next start leaves out those labels
//!   only. Every taint and every other label stays: their checks are the
//!   ones every kubelet applies (taint syntax; label syntax; keys outside
//!   `kubernetes.io`/`k8s.io` or in kubelet's own `node.kubernetes.io` and
//!   `kubelet.kubernetes.io`, where the pool label is), so a quick failure
//!   with them (a port held by another process, a bad bootstrap token) is
//!   not a refusal of ours, and must not strip the node's taints or pool.
//!
//! A label a particular kubelet refuses thus costs one failed start, and a
//! wrapper that dies on the node rules one.

use std::path::{Path, PathBuf};

use super::state_dir::StateDir;

/// kubelet validates flags before it does anything else, well within this.
pub const QUICK_FAILURE_SECS: u64 = 10;

/// State files are a few lines; anything longer is not ours.
const STATE_MAX_BYTES: usize = 4096;

/// How far a start got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    /// Recorded before any risky work; still there means the wrapper died.
    #[default]
    Attempt,
    /// Recorded just before exec'ing kubelet.
    Exec,
}

/// What the previous start of this unit did, as far as the guard cares.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct State {
    /// `/proc/sys/kernel/random/boot_id` when written.
    pub boot_id: String,
    pub invocation_id: String,
    pub phase: Phase,
    /// Milliseconds since boot. Integers: float parsing and formatting
    /// would cost the wrapper payload tens of KB.
    pub started_at: u64,
    /// Attempt: a full start (no fallback of the guard). Exec: carries ours.
    pub with_additions: bool,
    /// Exec: carries labels a kubelet that disagrees with our checks may
    /// refuse ([`may_be_refused`]).
    pub refusable: bool,
    /// kubelet could have refused our additions (its config and a
    /// kubeconfig exist); a failure of a start that could not is not ours.
    pub blameable: bool,
    /// Set by `--stop-post` when that start ended in failure quickly.
    pub failed_quickly: bool,
}

impl State {
    fn parse(text: &str) -> Option<State> {
        let mut s = State::default();
        for line in text.lines() {
            let (k, v) = line.split_once('=')?;
            match k {
                "boot_id" => s.boot_id = v.to_string(),
                "invocation_id" => s.invocation_id = v.to_string(),
                "phase" => {
                    s.phase = match v {
                        "attempt" => Phase::Attempt,
                        "exec" => Phase::Exec,
                        _ => return None,
                    }
                }
                "started_at" => s.started_at = v.parse().ok()?,
                "with_additions" => s.with_additions = v == "1",
                "blameable" => s.blameable = v == "1",
                "refusable" => s.refusable = v == "1",
                "failed_quickly" => s.failed_quickly = v == "1",
                _ => {}
            }
        }
        Some(s)
    }

    fn render(&self) -> String {
        format!(
            "boot_id={}\ninvocation_id={}\nphase={}\nstarted_at={}\nwith_additions={}\n\
             blameable={}\nrefusable={}\nfailed_quickly={}\n",
            self.boot_id,
            self.invocation_id,
            match self.phase {
                Phase::Attempt => "attempt",
                Phase::Exec => "exec",
            },
            self.started_at,
            u8::from(self.with_additions),
            u8::from(self.blameable),
            u8::from(self.refusable),
            u8::from(self.failed_quickly)
        )
    }
}

/// What a start leaves out because of how the previous one ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Everything: the static part and the rule-derived part.
    Full,
    /// The previous full start died before exec: the rule-derived labels
    /// and taints (the static ones stay).
    SkipRules(String),
    /// The previous start failed quickly with labels a kubelet may refuse:
    /// those labels ([`may_be_refused`]); every taint and other label stays.
    DropRefusable(String),
}

impl Verdict {
    /// The guard's reason, when it leaves anything out.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Verdict::Full => None,
            Verdict::SkipRules(why) | Verdict::DropRefusable(why) => Some(why),
        }
    }
}

/// Whether a kubelet other than the one our checks model (another version,
/// another distribution's patches) may refuse this label at start: a key in
/// kubelet's policed `kubernetes.io`/`k8s.io` namespaces outside its own
/// `node.kubernetes.io` and `kubelet.kubernetes.io`, whose allow-list has
/// changed across versions (the topology labels came in 1.17) and differs
/// on OpenShift (`node-role.kubernetes.io/worker`). Every kubelet takes any
/// other label that passes the syntax checks (apimachinery's, unchanged),
/// the pool label among them (render checks that it is one).
pub fn may_be_refused(key: &str) -> bool {
    use crate::node::kubelet::Profile;
    use crate::node::kubelet::labels::{KUBELET_LABELS, is_kubernetes_label, is_self_settable};
    is_kubernetes_label(key)
        && (crate::node::one_of(&KUBELET_LABELS, key) || !is_self_settable(key, Profile::Upstream))
}

/// The guard's state file for one unit.
pub struct Guard {
    dir: PathBuf,
    /// The state file's name in `dir`, and the name it is written to first.
    name: String,
    tmp: String,
    path: PathBuf,
    boot_id: String,
}

impl Guard {
    pub fn new(state_dir: &Path, unit: &str) -> Guard {
        Guard::with_boot_id(state_dir, unit, current_boot_id())
    }

    pub fn with_boot_id(state_dir: &Path, unit: &str, boot_id: String) -> Guard {
        // Unit names hold no '/', but keep the file inside the directory.
        let unit = unit.replace('/', "_");
        let name = format!("{unit}.state");
        Guard {
            dir: state_dir.to_path_buf(),
            path: state_dir.join(&name),
            name,
            tmp: format!("{unit}.tmp"),
            boot_id,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The state of this boot, if any (another boot's is ignored); only
    /// a file as the wrapper writes it (see [`StateDir::read`]).
    pub fn load(&self) -> Option<State> {
        let bytes = StateDir::open(&self.dir, false)
            .ok()?
            .read(&self.name, STATE_MAX_BYTES)?;
        let text = String::from_utf8(bytes).ok()?;
        State::parse(&text).filter(|s| s.boot_id == self.boot_id)
    }

    /// What the start `invocation_id` leaves out, and why.
    pub fn verdict(&self, invocation_id: &str) -> Verdict {
        let Some(prev) = self.load() else {
            return Verdict::Full;
        };
        if prev.invocation_id == invocation_id {
            // Our own attempt (a retry within one invocation cannot happen).
            return Verdict::Full;
        }
        let state = self.path.display();
        match prev.phase {
            Phase::Attempt if prev.with_additions => Verdict::SkipRules(format!(
                "the previous start died before exec'ing kubelet (crash-loop guard; state in \
                 {state})"
            )),
            Phase::Attempt => Verdict::Full,
            Phase::Exec
                if prev.failed_quickly
                    && prev.with_additions
                    && prev.blameable
                    && prev.refusable =>
            {
                Verdict::DropRefusable(format!(
                    "the previous start with our additions failed within {QUICK_FAILURE_SECS}s \
                     (crash-loop guard; state in {state})"
                ))
            }
            Phase::Exec => Verdict::Full,
        }
    }

    /// Record, before any risky work, that this start is under way and
    /// whether it plans to add ours. Errors are ignored by callers: the
    /// guard must never stop kubelet from starting.
    pub fn record_attempt(&self, invocation_id: &str, now: u64, full: bool) -> std::io::Result<()> {
        self.write(&State {
            boot_id: self.boot_id.clone(),
            invocation_id: invocation_id.to_string(),
            phase: Phase::Attempt,
            started_at: now,
            with_additions: full,
            ..Default::default()
        })
    }

    /// Record the start the wrapper is about to exec.
    pub fn record_start(
        &self,
        invocation_id: &str,
        now: u64,
        with_additions: bool,
        refusable: bool,
        blameable: bool,
    ) -> std::io::Result<()> {
        self.write(&State {
            boot_id: self.boot_id.clone(),
            invocation_id: invocation_id.to_string(),
            phase: Phase::Exec,
            started_at: now,
            with_additions,
            refusable,
            blameable,
            failed_quickly: false,
        })
    }

    /// `ExecStopPost=`: note a quick failure of the start with this ID.
    pub fn record_stop(
        &self,
        invocation_id: &str,
        now: u64,
        service_result: &str,
    ) -> std::io::Result<()> {
        let Some(mut state) = self.load() else {
            return Ok(());
        };
        if state.invocation_id != invocation_id || state.phase != Phase::Exec {
            // ExecStartPre failed before the wrapper ran, or the wrapper
            // died before exec (its attempt says so): nothing to add.
            return Ok(());
        }
        state.failed_quickly = service_result != "success"
            && now.saturating_sub(state.started_at) < QUICK_FAILURE_SECS * 1000;
        self.write(&state)
    }

    /// Through no link, never into a file of another name, never out of
    /// the state directory (see [`StateDir`]); the directory is made at
    /// the first start of a boot.
    fn write(&self, state: &State) -> std::io::Result<()> {
        StateDir::open(&self.dir, true)?.replace(&self.name, &self.tmp, state.render().as_bytes())
    }
}

/// This boot's ID; empty when unreadable (then states of other boots with
/// an unreadable ID are taken as this boot's, as before boot IDs).
pub fn current_boot_id() -> String {
    let path = Path::new("/proc/sys/kernel/random/boot_id");
    let bytes =
        crate::node::nodefs::open(path).and_then(|f| crate::node::nodefs::read_up_to(f, 64));
    String::from_utf8(bytes.unwrap_or_default())
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Milliseconds since boot (CLOCK_BOOTTIME via /proc/uptime): unlike the
/// wall clock it does not jump when time sync corrects it at first boot.
pub fn uptime_ms() -> Option<u64> {
    let text = crate::node::nodefs::read_to_string(Path::new("/proc/uptime")).ok()?;
    let first = text.split_whitespace().next()?;
    let (secs, frac) = first.split_once('.').unwrap_or((first, "0"));
    let frac_ms: u64 = format!("{frac:0<3}").get(..3)?.parse().ok()?;
    Some(secs.parse::<u64>().ok()? * 1000 + frac_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn guard() -> (tempfile::TempDir, Guard) {
        let dir = tempfile::tempdir().unwrap();
        let g = Guard::with_boot_id(dir.path(), "kubelet.service", "boot-1".into());
        (dir, g)
    }

    /// One start that reaches exec (carrying ours, with labels a kubelet
    /// may refuse or not) and ends as `result` after `ran_ms`.
    fn start(
        g: &Guard,
        id: &str,
        at: u64,
        with: (bool, bool),
        blameable: bool,
        ran_ms: u64,
        result: &str,
    ) {
        g.record_attempt(id, at, with.0).unwrap();
        g.record_start(id, at, with.0, with.1, blameable).unwrap();
        g.record_stop(id, at + ran_ms, result).unwrap();
    }

    #[test]
    fn fresh_state_keeps_additions() {
        let (_d, g) = guard();
        assert_eq!(g.verdict("a"), Verdict::Full);
    }

    #[test]
    fn quick_failure_with_refusable_labels_drops_those_once() {
        let (_d, g) = guard();
        start(&g, "a", 100_000, (true, true), true, 1000, "exit-code");
        let v = g.verdict("b");
        assert!(
            matches!(&v, Verdict::DropRefusable(why) if why.contains("crash-loop guard")),
            "{v:?}"
        );
        // The next start runs without them; if it fails too, it was not
        // ours: the one after carries everything again.
        start(&g, "b", 112_000, (true, false), true, 1000, "exit-code");
        assert_eq!(g.verdict("c"), Verdict::Full);
    }

    /// A port held by another process, a bad bootstrap token: a quick
    /// failure of a start whose labels every kubelet takes is not ours.
    #[test]
    fn quick_failure_without_refusable_labels_keeps_everything() {
        let (_d, g) = guard();
        for (i, id) in ["a", "b", "c"].iter().enumerate() {
            assert_eq!(g.verdict(id), Verdict::Full);
            start(
                &g,
                id,
                100_000 + 11_000 * i as u64,
                (true, false),
                true,
                300,
                "exit-code",
            );
        }
    }

    #[test]
    fn late_failure_or_success_does_not_trip() {
        let (_d, g) = guard();
        start(
            &g,
            "a",
            100_000,
            (true, true),
            true,
            QUICK_FAILURE_SECS * 1000 + 1,
            "exit-code",
        );
        assert_eq!(g.verdict("b"), Verdict::Full);
        start(&g, "b", 200_000, (true, true), true, 1000, "success");
        assert_eq!(g.verdict("c"), Verdict::Full);
    }

    #[test]
    fn starts_that_could_not_register_are_never_blamed() {
        // kubeadm before join: every start fails at once, and the first
        // one after the join must carry ours whatever came before.
        let (_d, g) = guard();
        for i in 0..7u64 {
            assert_eq!(g.verdict(&format!("pre{i}")), Verdict::Full);
            start(
                &g,
                &format!("pre{i}"),
                1000 * i,
                (true, true),
                false,
                10,
                "exit-code",
            );
        }
        assert_eq!(g.verdict("joined"), Verdict::Full);
    }

    #[test]
    fn wrapper_death_before_exec_skips_the_rules_once() {
        let (_d, g) = guard();
        g.record_attempt("a", 1000, true).unwrap();
        // "a" died (an OOM kill during rule evaluation, say): "b" leaves
        // the rule-derived part out ...
        let v = g.verdict("b");
        assert!(
            matches!(&v, Verdict::SkipRules(why) if why.contains("died before exec")),
            "{v:?}"
        );
        g.record_attempt("b", 2000, false).unwrap();
        // ... and if "b" died too, it was not the rules: "c" tries again.
        assert_eq!(g.verdict("c"), Verdict::Full);
        // Stop-post of a start that never exec'd records nothing.
        g.record_stop("b", 2500, "signal").unwrap();
        assert_eq!(g.load().unwrap().phase, Phase::Attempt);
    }

    #[test]
    fn state_of_another_boot_or_garbage_is_ignored() {
        let (d, g) = guard();
        start(&g, "a", 100_000, (true, true), true, 1000, "exit-code");
        let other = Guard::with_boot_id(d.path(), "kubelet.service", "boot-2".into());
        assert_eq!(other.verdict("b"), Verdict::Full);
        fs::write(g.path(), "\0garbage").unwrap();
        assert_eq!(g.verdict("b"), Verdict::Full);
        fs::write(g.path(), "x=".repeat(100_000)).unwrap();
        assert_eq!(g.load(), None);
    }

    /// Review 12 F5: a symbolic or hard link planted at the name the
    /// state is written to first, or at the state's own name (a pod with
    /// a hostPath on /run), is replaced, never written through: the file
    /// it points at is untouched, the state is a file of its own.
    #[test]
    fn links_planted_in_the_state_dir_are_never_written_through() {
        use std::os::unix::fs::{MetadataExt, symlink};
        let victims = tempfile::tempdir().unwrap();
        let victim = victims.path().join("shadow");
        let near = |g: &Guard| g.path().with_extension("victim");
        for plant in [
            "symlink-tmp",
            "symlink-state",
            "hardlink-tmp",
            "hardlink-state",
        ] {
            let (_d, g) = guard();
            let at = match plant {
                "symlink-tmp" | "hardlink-tmp" => g.path().with_extension("tmp"),
                _ => g.path().to_path_buf(),
            };
            if plant.starts_with("symlink") {
                fs::write(&victim, "root:$6$precious\n").unwrap();
                symlink(&victim, &at).unwrap();
            } else {
                // A hard link needs the same filesystem: a file beside.
                fs::write(near(&g), "root:$6$precious\n").unwrap();
                fs::hard_link(near(&g), &at).unwrap();
            }
            g.record_attempt("a", 1000, true).unwrap();
            g.record_start("a", 1000, true, true, true).unwrap();
            g.record_stop("a", 1500, "exit-code").unwrap();
            let target = if plant.starts_with("symlink") {
                victim.clone()
            } else {
                near(&g)
            };
            assert_eq!(
                fs::read_to_string(&target).unwrap(),
                "root:$6$precious\n",
                "{plant}"
            );
            let meta = fs::symlink_metadata(g.path()).unwrap();
            assert!(meta.is_file() && meta.nlink() == 1, "{plant}");
            assert!(!g.path().with_extension("tmp").exists(), "{plant}");
            assert!(g.load().is_some_and(|s| s.failed_quickly), "{plant}");
        }
    }

    /// Review 12 F5: a state a pod planted is read only when it is what
    /// the wrapper writes (a regular file of its user, writable by it
    /// alone, one link): else the start is a full one.
    #[test]
    fn a_planted_state_is_not_taken() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let (d, g) = guard();
        start(&g, "a", 100_000, (true, true), true, 1000, "exit-code");
        let planted = fs::read_to_string(g.path()).unwrap();
        assert!(matches!(g.verdict("b"), Verdict::DropRefusable(_)));
        fs::set_permissions(g.path(), fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(g.verdict("b"), Verdict::Full);
        fs::remove_file(g.path()).unwrap();
        let elsewhere = d.path().join("elsewhere");
        fs::write(&elsewhere, &planted).unwrap();
        symlink(&elsewhere, g.path()).unwrap();
        assert_eq!(g.verdict("b"), Verdict::Full);
        fs::remove_file(g.path()).unwrap();
        fs::hard_link(&elsewhere, g.path()).unwrap();
        assert_eq!(g.verdict("b"), Verdict::Full);
    }

    #[test]
    fn stop_of_another_invocation_is_ignored() {
        let (_d, g) = guard();
        g.record_start("a", 100_000, true, true, true).unwrap();
        g.record_stop("other", 101_000, "exit-code").unwrap();
        assert_eq!(g.verdict("b"), Verdict::Full);
        assert_eq!(g.load().unwrap().invocation_id, "a");
    }

    #[test]
    fn state_round_trips() {
        let s = State {
            boot_id: "b".into(),
            invocation_id: "x".into(),
            phase: Phase::Exec,
            started_at: 12_500,
            with_additions: true,
            refusable: true,
            blameable: true,
            failed_quickly: true,
        };
        assert_eq!(State::parse(&s.render()), Some(s));
    }

    #[test]
    fn what_a_kubelet_may_refuse() {
        for key in [
            "node-role.kubernetes.io/worker",
            "topology.kubernetes.io/zone",
            "kubernetes.io/hostname",
            "x.k8s.io/a",
        ] {
            assert!(may_be_refused(key), "{key}");
        }
        // The pool label's forms, kubelet's own namespaces, anything else.
        for key in [
            "node.kubernetes.io/worker-gpu",
            "feature.node.kubernetes.io/gpu",
            "kubelet.kubernetes.io/x",
            "nvidia.com/gpu",
            "example.com/pool",
        ] {
            assert!(!may_be_refused(key), "{key}");
        }
    }
}

#[cfg(test)]
mod uptime_tests {
    #[test]
    fn uptime_is_read() {
        assert!(super::uptime_ms().is_some_and(|ms| ms > 0));
    }

    #[test]
    fn boot_id_is_read() {
        assert_eq!(super::current_boot_id().len(), 36);
    }
}
