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

/// The longest start plan takes of a service of the pool's own.
pub const START_MAX_SECS: f64 = 600.0;

/// Why the start of the service whose unit file and drop-ins hold
/// `assignments` (in the order systemd reads them) may not end within
/// [`START_MAX_SECS`], or None.
pub fn unbounded(assignments: &[Assignment]) -> Option<String> {
    let service = || assignments.iter().filter(|a| a.section == "Service");
    let last = |keys: &[&str]| service().rfind(|a| keys.contains(&a.key.as_str()));
    // Whether a command list is set at the end (an empty assignment
    // clears it).
    let set = |key: &str| {
        service()
            .rfind(|a| a.key == key)
            .is_some_and(|a| !a.value.trim().is_empty())
    };
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
    let fix = format!(
        "give it `TimeoutStartSec=` of at most {} minutes: a unit of the OS on kubelet's start \
         path may order itself after this unit's name, and waits as long as its start takes",
        START_MAX_SECS / 60.0
    );
    let no_timeout = || format!("a oneshot service has no start timeout unless given one; {fix}");
    let Some(timeout) = last(&["TimeoutStartSec", "TimeoutSec"]) else {
        return oneshot.then(no_timeout);
    };
    // Empty: back to the default, none for a oneshot.
    if timeout.value.trim().is_empty() {
        return oneshot.then(no_timeout);
    }
    let at = format!("line {}: {}={}", timeout.line, timeout.key, timeout.value);
    match timespan_secs(&timeout.value) {
        Some(s) if s > 0.0 && s <= START_MAX_SECS => None,
        // `0` and `infinity` turn the timeout off.
        _ => Some(format!(
            "{at}: its start may take for ever, or longer than plan takes; {fix}"
        )),
    }
}

/// A systemd time span in seconds (`90`, `5min 30s`, `1.5h`); None for
/// `infinity`, empty, or what plan does not read as one.
fn timespan_secs(value: &str) -> Option<f64> {
    let value = value.trim();
    if value.is_empty() || value == "infinity" {
        return None;
    }
    let mut total = 0.0;
    let mut rest = value;
    while !rest.is_empty() {
        rest = rest.trim_start();
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return None;
        }
        let n: f64 = rest[..num_len].parse().ok()?;
        rest = rest[num_len..].trim_start();
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let per = match &rest[..unit_len] {
            "" | "s" | "sec" | "second" | "seconds" => 1.0,
            "us" | "usec" | "µs" => 1e-6,
            "ms" | "msec" => 1e-3,
            "m" | "min" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hour" | "hours" => 3600.0,
            "d" | "day" | "days" => 86_400.0,
            "w" | "week" | "weeks" => 604_800.0,
            "M" | "month" | "months" => 2_629_800.0,
            "y" | "year" | "years" => 31_557_600.0,
            _ => return None,
        };
        total += n * per;
        rest = &rest[unit_len..];
    }
    Some(total)
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
            "[Service]\nType=oneshot\nTimeoutStartSec=5min\nTimeoutStartSec=\nExecStart=/bin/true\n",
            "[Service]\nType=notify\nTimeoutSec=infinity\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=5 fortnights\nExecStart=/bin/true\n",
        ] {
            assert!(judged(text).is_some(), "{text}");
        }
        for text in [
            "[Service]\nType=oneshot\nTimeoutStartSec=5min\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutSec=10min\nExecStart=/bin/true\n",
            "[Service]\nType=oneshot\nTimeoutStartSec=1min 30s\nExecStart=/bin/true\n",
            "[Service]\nExecStart=/bin/sleep infinity\n",
            "[Service]\nType=simple\nTimeoutStartSec=\nExecStart=/bin/true\n",
            "[Service]\nType=notify\nExecStart=/bin/true\n",
            // Not loaded: no ExecStart= nor ExecStop= at the end.
            "[Service]\nType=oneshot\nExecStartPre=/bin/sleep infinity\n",
            "[Service]\nType=oneshot\nExecStart=/bin/true\nExecStart=\n",
        ] {
            assert_eq!(judged(text), None, "{text}");
        }
        assert_eq!(timespan_secs("1.5h"), Some(5400.0));
        assert_eq!(timespan_secs("2min30s"), Some(150.0));
        assert_eq!(timespan_secs("x"), None);
    }
}
