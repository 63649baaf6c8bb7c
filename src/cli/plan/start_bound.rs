//! How long a service of the pool's own may take to start (review 33
//! r33c F2): the OS's units order themselves after names plan cannot list
//! in full (a target waits on what it wants: nfs-client.target on
//! auth-rpcgss-module.service, remote-fs.target on nfs-client.target,
//! kdump.service on remote-fs.target, the MCO's ovs-configuration.service
//! on kdump.service), so a unit of the pool's at any name may be one
//! kubelet's start waits on. systemd 252 lets a unit ordered after another
//! start once the other's start job ends, failed or not; a start that
//! never ends (a oneshot has no start timeout unless given one) held
//! kubelet for ever. A start bounded in time only delays it.

use crate::node::unit::syntax::Assignment;

/// The longest start plan takes of a service of the pool's own, and the
/// longest stop (a start job ends when a failed start has stopped).
pub const START_MAX_SECS: u64 = 600;

/// The types whose start ends by systemd's timeouts alone (a `notify`
/// service extends its own, `EXTEND_TIMEOUT_USEC=`; review 34 r34a F2).
const TYPES: [&str; 6] = ["simple", "exec", "oneshot", "forking", "dbus", "idle"];

/// Keys that change how systemd ends a start or a stop: a kill signal the
/// service ignores (`KillSignal=SIGCONT`), no SIGKILL, notifications that
/// extend a timeout (review 34 r34a F2).
const ENDING_KEYS: [&str; 8] = [
    "KillSignal",
    "KillMode",
    "SendSIGKILL",
    "FinalKillSignal",
    "RestartKillSignal",
    "NotifyAccess",
    "TimeoutStartFailureMode",
    "TimeoutStopFailureMode",
];

/// Why the start of the service whose unit file and drop-ins hold
/// `assignments` (in the order systemd reads them) may not end within
/// [`START_MAX_SECS`] and its stop after as long, or None. plan reads
/// these keys in one spelling only, which it and systemd 252 read alike
/// (review 34 r34a F1: `Type=one-shot`, which systemd ignores;
/// `TimeoutStartSec=0.1us`, which it rounds to none).
pub fn unbounded(assignments: &[Assignment]) -> Option<String> {
    let service: Vec<&Assignment> = (assignments.iter())
        .filter(|a| a.section == "Service")
        .collect();
    let fix = format!(
        "a unit of the OS on kubelet's start path may order itself after this unit's name, and \
         waits as long as its start takes: give it `TimeoutStartSec=` of whole seconds or \
         minutes (`90`, `90s`, `5min`) up to {} minutes, keep systemd's type, kill and \
         timeout-failure settings",
        START_MAX_SECS / 60
    );
    for a in &service {
        let value = a.value.trim();
        let refused = match a.key.as_str() {
            "Type" => !TYPES.contains(&value),
            "TimeoutStartSec" | "TimeoutSec" | "TimeoutStopSec" | "TimeoutAbortSec" => {
                !value.is_empty() && whole_secs(value).is_none_or(|s| s > START_MAX_SECS)
            }
            k => ENDING_KEYS.contains(&k),
        };
        if refused {
            return Some(format!("line {}: {}={}: {fix}", a.line, a.key, a.value));
        }
    }
    let last = |keys: &[&str]| (service.iter()).rfind(|a| keys.contains(&a.key.as_str()));
    // Whether a command list is set at the end (an empty assignment
    // clears it).
    let set = |key: &str| last(&[key]).is_some_and(|a| !a.value.trim().is_empty());
    // systemd refuses to load a service with neither (and no
    // SuccessAction=, which `reaches_start` refuses): it never starts.
    if !set("ExecStart") && !set("ExecStop") {
        return None;
    }
    let oneshot = match last(&["Type"]) {
        Some(t) => t.value.trim() == "oneshot",
        // No Type= and no ExecStart=: systemd takes it as a oneshot.
        None => !set("ExecStart"),
    };
    // systemd 252 ignores an empty timeout (it does not parse), keeping
    // the one before (review 36 r36a F2); absent, the default: none for a
    // oneshot.
    let timeout = |keys: &[&str]| {
        (service.iter())
            .rfind(|a| keys.contains(&a.key.as_str()) && !a.value.trim().is_empty())
            .and_then(|t| whole_secs(t.value.trim()))
    };
    let start = timeout(&["TimeoutStartSec", "TimeoutSec"]).or((!oneshot).then_some(DEFAULT_SECS));
    let Some(start) = start else {
        return Some(format!(
            "a oneshot service has no start timeout unless given one; {fix}"
        ));
    };
    let stop = timeout(&["TimeoutStopSec", "TimeoutSec"]).unwrap_or(DEFAULT_SECS);
    // systemd times each command of a list on its own (review 35 r35a
    // F1: 5,000 `ExecStart=/bin/sleep 590` lines under a 10-minute
    // timeout held kubelet for 34 days): the phase's commands together.
    let starts = commands(
        &service,
        &[
            "ExecCondition",
            "ExecStartPre",
            "ExecStart",
            "ExecStartPost",
        ],
    );
    let stops = 1 + commands(&service, &["ExecStop", "ExecStopPost"]);
    for (phase, n, each) in [("start", starts, start), ("stop", stops, stop)] {
        if n.saturating_mul(each) > START_MAX_SECS {
            return Some(format!(
                "its {phase} may take {n} x {each} s (systemd times each command on its own), \
                 more than {} minutes; {fix}",
                START_MAX_SECS / 60
            ));
        }
    }
    None
}

/// systemd's `DefaultTimeoutStartSec=` and `DefaultTimeoutStopSec=` (the
/// manager's configuration, which a change may not touch).
const DEFAULT_SECS: u64 = 90;

/// How many commands the lists `keys` hold at the end (an empty
/// assignment clears its list).
fn commands(service: &[&Assignment], keys: &[&str]) -> u64 {
    keys.iter()
        .map(|k| {
            (service.iter()).filter(|a| a.key == *k).fold(0u64, |n, a| {
                if a.value.trim().is_empty() { 0 } else { n + 1 }
            })
        })
        .sum()
}

/// A time span of whole seconds or minutes (`90`, `90s`, `5min`) in
/// seconds, not 0 (no timeout); None for any other spelling.
fn whole_secs(value: &str) -> Option<u64> {
    let (digits, per) = match value.strip_suffix("min") {
        Some(d) => (d, 60),
        None => (value.strip_suffix('s').unwrap_or(value), 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 6 {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    (n > 0).then_some(n * per)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(text: &str) -> Option<String> {
        unbounded(&crate::node::unit::syntax::parse(text.as_bytes(), "x.service").assignments)
    }

    #[test]
    fn a_start_is_bounded_or_refused() {
        for text in [
            "[Service]\nType=oneshot\nExecStart=/bin/sleep infinity\n",
            "[Service]\nExecStop=/bin/true\nExecStartPre=/bin/sleep infinity\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=infinity\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=0\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=1h\nExecStart=/bin/true\n",
            // Review 36 r36a F2: an empty timeout keeps the one before.
            "[Service]\nType=oneshot\nTimeoutStartSec=10min\nTimeoutStartSec=\nExecStart=/bin/true\nExecStart=/bin/true\n",
            "[Service]\nExecStart=/bin/true\nTimeoutStopSec=5min\nTimeoutStopSec=\nExecStopPost=/bin/true\nExecStopPost=/bin/true\n",
            "[Service]\nType=notify\nTimeoutSec=infinity\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=5 fortnights\nExecStart=/bin/true\n",
            // Review 34 r34a F1: spellings systemd reads otherwise.
            "[Service]\nType=oneshot\nType=one-shot\nTimeoutStartSec=5min\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=5.\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=0.1us\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=1min 30s\nExecStart=/bin/true\n",
            // Review 34 r34a F2: a stop or abort that never ends, a kill
            // signal ignored, a timeout extended.
            "[Service]\nType=oneshot\nTimeoutSec=infinity\nTimeoutStartSec=3\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=3\nTimeoutStopSec=0\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=3\nKillSignal=SIGCONT\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=3\nTimeoutStartFailureMode=abort\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=3\nTimeoutAbortSec=infinity\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=3\nNotifyAccess=all\nExecStart=/bin/true\n",
            "[Service]\nType=notify\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=3\nSendSIGKILL=no\nExecStart=/bin/true\n",
            // Review 35 r35a F1: each command timed on its own.
            "[Service]\nType=oneshot\nTimeoutStartSec=10min\nExecStart=/bin/sleep 590\nExecStart=/bin/sleep 590\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=5min\nExecStartPre=/bin/true\nExecStartPre=/bin/true\nExecStart=/bin/true\n",
            "[Service]\nExecStart=/bin/true\nExecStopPost=/bin/true\nExecStopPost=/bin/true\nTimeoutStopSec=5min\n",
        ] {
            assert!(judged(text).is_some(), "{text}");
        }
        for text in [
            "[Service]\nType=oneshot\nTimeoutStartSec=5min\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutSec=10min\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=90s\nTimeoutStopSec=30\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=2min\nExecStartPre=/bin/true\nExecStart=/bin/true\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=5min\nExecStart=/bin/true\nExecStart=\nExecStart=/bin/true\n",
            "[Service]\nExecStart=/bin/sleep infinity\n",
            "[Service]\nType=simple\nTimeoutStartSec=\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=5min\nTimeoutStartSec=\nExecStart=/bin/true\n",
            "[Service]\nType=forking\nExecStart=/bin/true\n",
            // Not loaded: no ExecStart= nor ExecStop= at the end.
            "[Service]\nType=oneshot\nExecStartPre=/bin/sleep infinity\n",
            "[Service]\nType=oneshot\nExecStart=/bin/true\nExecStart=\n",
        ] {
            assert_eq!(judged(text), None, "{text}");
        }
        assert_eq!(whole_secs("5min"), Some(300));
        assert_eq!(whole_secs("90s"), Some(90));
        assert_eq!(whole_secs("0"), None);
        assert_eq!(whole_secs("x"), None);
    }
}
