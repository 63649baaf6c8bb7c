//! Crash-loop guard. kubelet exits at once when it refuses a flag, and
//! `Restart=always` would then restart it with the same flag forever. So:
//!
//! - before exec'ing kubelet the wrapper records, in a state file under
//!   `/run` (cleared at reboot), the systemd invocation ID, the boot-clock
//!   time, and whether this start carries our additions;
//! - `ExecStopPost=` runs the wrapper with `--stop-post`; systemd gives it
//!   `$SERVICE_RESULT` and the same `$INVOCATION_ID`. A start that carried
//!   our additions and did not succeed within [`QUICK_FAILURE_SECS`] is
//!   recorded as a quick failure;
//! - the next start after such a failure leaves our additions out and says
//!   so. If that start fails quickly too, the failure was not ours, so the
//!   one after it carries our additions again.
//!
//! A label a particular kubelet refuses thus costs one failed start.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// kubelet validates flags before it does anything else, well within this.
pub const QUICK_FAILURE_SECS: u64 = 10;

/// What the previous start of this unit did, as far as the guard cares.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct State {
    pub invocation_id: String,
    /// Milliseconds since boot. Integers: float parsing and formatting
    /// would cost the wrapper payload tens of KB.
    pub started_at: u64,
    pub with_additions: bool,
    /// Set by `--stop-post` when that start ended in failure quickly.
    pub failed_quickly: bool,
}

impl State {
    fn parse(text: &str) -> Option<State> {
        let mut s = State::default();
        for line in text.lines() {
            let (k, v) = line.split_once('=')?;
            match k {
                "invocation_id" => s.invocation_id = v.to_string(),
                "started_at" => s.started_at = v.parse().ok()?,
                "with_additions" => s.with_additions = v == "1",
                "failed_quickly" => s.failed_quickly = v == "1",
                _ => {}
            }
        }
        Some(s)
    }

    fn render(&self) -> String {
        format!(
            "invocation_id={}\nstarted_at={}\nwith_additions={}\nfailed_quickly={}\n",
            self.invocation_id,
            self.started_at,
            u8::from(self.with_additions),
            u8::from(self.failed_quickly)
        )
    }
}

/// The guard's state file for one unit.
pub struct Guard {
    path: PathBuf,
}

impl Guard {
    pub fn new(state_dir: &Path, unit: &str) -> Guard {
        // Unit names hold no '/', but keep the file inside the directory.
        let name = unit.replace('/', "_");
        Guard {
            path: state_dir.join(format!("{name}.state")),
        }
    }

    pub fn load(&self) -> Option<State> {
        State::parse(&fs::read_to_string(&self.path).ok()?)
    }

    /// Whether this start should leave our additions out, and why.
    pub fn should_leave_out(&self) -> Option<String> {
        let prev = self.load()?;
        (prev.failed_quickly && prev.with_additions).then(|| {
            format!(
                "the previous start with our additions failed within {QUICK_FAILURE_SECS}s \
                 (crash-loop guard; state in {})",
                self.path.display()
            )
        })
    }

    /// Record the start the wrapper is about to exec. Errors are ignored by
    /// callers: the guard must never stop kubelet from starting.
    pub fn record_start(
        &self,
        invocation_id: &str,
        now: u64,
        with_additions: bool,
    ) -> std::io::Result<()> {
        let state = State {
            invocation_id: invocation_id.to_string(),
            started_at: now,
            with_additions,
            failed_quickly: false,
        };
        self.write(&state)
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
        if state.invocation_id != invocation_id {
            // ExecStartPre failed before the wrapper ran: nothing to judge.
            return Ok(());
        }
        state.failed_quickly = service_result != "success"
            && now.saturating_sub(state.started_at) < QUICK_FAILURE_SECS * 1000;
        self.write(&state)
    }

    fn write(&self, state: &State) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("tmp");
        let mut f = fs::File::create(&tmp)?;
        f.write_all(state.render().as_bytes())?;
        fs::rename(&tmp, &self.path)
    }
}

/// Milliseconds since boot (CLOCK_BOOTTIME via /proc/uptime): unlike the
/// wall clock it does not jump when time sync corrects it at first boot.
pub fn uptime_ms() -> Option<u64> {
    let text = fs::read_to_string("/proc/uptime").ok()?;
    let first = text.split_whitespace().next()?;
    let (secs, frac) = first.split_once('.').unwrap_or((first, "0"));
    let frac_ms: u64 = format!("{frac:0<3}").get(..3)?.parse().ok()?;
    Some(secs.parse::<u64>().ok()? * 1000 + frac_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> (tempfile::TempDir, Guard) {
        let dir = tempfile::tempdir().unwrap();
        let g = Guard::new(dir.path(), "kubelet.service");
        (dir, g)
    }

    #[test]
    fn fresh_state_keeps_additions() {
        let (_d, g) = guard();
        assert_eq!(g.should_leave_out(), None);
    }

    #[test]
    fn quick_failure_with_additions_trips_once() {
        let (_d, g) = guard();
        g.record_start("a", 100_000, true).unwrap();
        g.record_stop("a", 101_000, "exit-code").unwrap();
        assert!(g.should_leave_out().unwrap().contains("crash-loop guard"));
        // The next start runs without them; if it fails too, re-arm.
        g.record_start("b", 112_000, false).unwrap();
        g.record_stop("b", 113_000, "exit-code").unwrap();
        assert_eq!(g.should_leave_out(), None);
    }

    #[test]
    fn late_failure_or_success_does_not_trip() {
        let (_d, g) = guard();
        g.record_start("a", 100_000, true).unwrap();
        g.record_stop("a", 100_000 + QUICK_FAILURE_SECS * 1000 + 1, "exit-code")
            .unwrap();
        assert_eq!(g.should_leave_out(), None);
        g.record_start("b", 200_000, true).unwrap();
        g.record_stop("b", 201_000, "success").unwrap();
        assert_eq!(g.should_leave_out(), None);
    }

    #[test]
    fn stop_of_another_invocation_is_ignored() {
        let (_d, g) = guard();
        g.record_start("a", 100_000, true).unwrap();
        g.record_stop("other", 101_000, "exit-code").unwrap();
        assert_eq!(g.should_leave_out(), None);
        assert_eq!(g.load().unwrap().invocation_id, "a");
    }

    #[test]
    fn state_round_trips() {
        let s = State {
            invocation_id: "x".into(),
            started_at: 12_500,
            with_additions: true,
            failed_quickly: true,
        };
        assert_eq!(State::parse(&s.render()), Some(s));
    }
}

#[cfg(test)]
mod uptime_tests {
    #[test]
    fn uptime_is_read() {
        assert!(super::uptime_ms().is_some_and(|ms| ms > 0));
    }
}
