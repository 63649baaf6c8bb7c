//! Our variables come from our own drop-ins (review 19 r19a F2). systemd
//! gives kubelet's `EnvironmentFile=`s precedence over `Environment=`
//! (systemd.exec(5)), and whoever can write one of them (OpenShift's
//! `/etc/kubernetes/kubelet-env`, a pod with a hostPath there) could set
//! one of our variables to nothing, or to other taints, and the node would
//! register without ours, unfenced. So each of our variables takes the
//! value our env drop-ins' `Environment=` give it (systemd's order of
//! drop-ins, the last of ours wins); where the environment systemd gave
//! differs (an `EnvironmentFile=`, a later drop-in, the unit, an
//! `UnsetEnvironment=`), the start registers fenced
//! (`contract::FENCE_ENVIRONMENT_OVERRIDDEN`) with our values, and the
//! day-2 sync changes no label.
//!
//! A variable our drop-ins do not set keeps what the unit's `Environment=`
//! gives it (another drop-in, root's like ours), else what the service
//! manager gave (`systemctl set-environment`, the tests' harness), unless
//! an `EnvironmentFile=` sets it: then it is overridden, and left out.
//! `KUBELET_LABELER_FAULT`, the test hook, is one of ours: an
//! `EnvironmentFile=` never sets it.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::fail_closed;
use super::fence::{Failure, Reason};
use super::plan::Plan;
use crate::node::contract::{
    ENV_DROPIN_NAME, LABELS_VAR, NFD_LABELS_VAR, POOL_LABEL_VAR, ROLE_ENV_DROPIN_NAME,
    ROLE_LABELS_VAR, ROLE_NFD_LABELS_VAR, ROLE_RULES_VAR, ROLE_TAINTS_VAR, RULES_VAR, TAINTS_VAR,
};
use crate::node::kubelet::Profile;
use crate::node::kubelet::flags::NodeFs;
use crate::node::unit::{self, LoadedService};

/// The fault-injection tests' hook (`wrapper::boot`).
pub const FAULT_VAR: &str = "KUBELET_LABELER_FAULT";

/// Every variable of ours the wrapper or the sync reads.
pub const OUR_VARS: [&str; 10] = [
    LABELS_VAR,
    TAINTS_VAR,
    RULES_VAR,
    NFD_LABELS_VAR,
    POOL_LABEL_VAR,
    ROLE_LABELS_VAR,
    ROLE_TAINTS_VAR,
    ROLE_RULES_VAR,
    ROLE_NFD_LABELS_VAR,
    FAULT_VAR,
];

/// One of our variables set otherwise than our drop-ins set it, and by
/// what (as well as known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overridden {
    pub var: &'static str,
    pub from: String,
}

/// The environment to read our variables from, and the ones overridden.
#[derive(Debug, Default)]
pub struct OwnEnv {
    pub env: Vec<(OsString, OsString)>,
    pub overridden: Vec<Overridden>,
}

/// Whether `file` is one of our env drop-ins (the pool's or the role's).
fn ours(file: &Path) -> bool {
    file.file_name()
        .is_some_and(|n| n == ENV_DROPIN_NAME || n == ROLE_ENV_DROPIN_NAME)
}

/// Compare `env` (what systemd gave the service, or the sync's offline
/// environment) with what `svc`'s files give our variables: `env` with
/// each of ours as our drop-ins set it, and those it differed in.
pub fn check(svc: &LoadedService, root: &Path, env: &[(OsString, OsString)]) -> OwnEnv {
    // What our drop-ins give, in systemd's order (an empty
    // `Environment=` in one of them drops what came before).
    let mut given: Vec<(&str, &[u8])> = Vec::new();
    for (_, set) in svc.environment_log.iter().filter(|(f, _)| ours(f)) {
        match set {
            None => given.clear(),
            Some((k, v)) if OUR_VARS.contains(&k.as_str()) => {
                given.retain(|(n, _)| n != k);
                given.push((k.as_str(), v.as_slice()));
            }
            Some(_) => {}
        }
    }
    let lookup = |var: &str| env.iter().rfind(|(k, _)| k == var).map(|(_, v)| v);
    let unit_value = |var: &str| {
        svc.environment
            .iter()
            .rfind(|(k, _)| k == var)
            .map(|(_, v)| v.as_slice())
    };
    // (var, what it should be, whether our drop-ins set it)
    let mut differ: Vec<(&'static str, Option<&[u8]>, bool)> = Vec::new();
    for var in OUR_VARS {
        let mine = given.iter().find(|(n, _)| *n == var).map(|(_, v)| *v);
        let expected = mine.or_else(|| unit_value(var));
        let got = lookup(var).map(|v| v.as_bytes());
        if got != expected {
            differ.push((var, expected, mine.is_some()));
        }
    }
    let mut out = OwnEnv::default();
    if differ.is_empty() {
        out.env = env.to_vec();
        return out;
    }
    let names: Vec<&str> = differ.iter().map(|(v, _, _)| *v).collect();
    let files = unit::environment_files_setting(svc, root, &names);
    let mut replaced: Vec<(&str, Option<&[u8]>)> = Vec::new();
    for (var, expected, mine) in differ {
        let file = match &files {
            Ok(f) => f.iter().find(|(n, _)| n == var).map(|(_, p)| Ok(p)),
            Err(e) => Some(Err(e)),
        };
        let from = match (expected, file) {
            // Neither our drop-ins nor the unit set it, and the unit reads
            // no file: the service manager's own (root's), as before. With
            // an EnvironmentFile=, what a second read finds proves nothing
            // (a FIFO fed once, a file swapped after systemd read it;
            // review 20 r20a F1): not ours, so left out and fenced.
            (None, None) if svc.environment_files.is_empty() => continue,
            (None, None) => "not kubelet's unit files (it reads EnvironmentFile=s, which \
                             may have set it)"
                .into(),
            (None, Some(Err(e))) => format!(
                "not kubelet's unit files; its EnvironmentFile=s cannot be read again to tell \
                 ({e:#})"
            ),
            _ if mine && unit_value(var) != expected => later_dropin(svc, var),
            (_, Some(Ok(p))) => format!("EnvironmentFile= {}", p.display()),
            _ if svc.unset_environment.iter().any(|u| u == var) => "UnsetEnvironment=".into(),
            (_, Some(Err(e))) => format!(
                "not kubelet's unit files; its EnvironmentFile=s cannot be read again to tell \
                 ({e:#})"
            ),
            (_, None) => "not kubelet's unit files".into(),
        };
        replaced.push((var, expected));
        out.overridden.push(Overridden { var, from });
    }
    out.env = env
        .iter()
        .filter(|(k, _)| !replaced.iter().any(|(v, _)| k == v))
        .cloned()
        .collect();
    for (var, value) in replaced {
        if let Some(v) = value {
            out.env
                .push((var.into(), OsStr::from_bytes(v).to_os_string()));
        }
    }
    out
}

/// The drop-in (or unit) whose `Environment=` changed `var` after ours.
fn later_dropin(svc: &LoadedService, var: &str) -> String {
    let last = svc.environment_log.iter().rev().find(|(_, s)| match s {
        None => true,
        Some((k, _)) => k == var,
    });
    match last {
        Some((f, Some(_))) => format!("Environment= in {}", f.display()),
        Some((f, None)) => format!("an empty Environment= in {}", f.display()),
        None => "kubelet's unit files".into(),
    }
}

/// The note naming what was overridden, and by what (never the values).
pub fn note(overridden: &[Overridden]) -> String {
    let mut what = String::new();
    for o in overridden {
        if !what.is_empty() {
            what.push_str(", ");
        }
        what.push_str(o.var);
        what.push_str(" (by ");
        what.push_str(&o.from);
        what.push(')');
    }
    format!(
        "our variables set otherwise than our drop-ins set them: {what}; our drop-ins' values \
         used; remove them from there (only our env drop-ins may set them)"
    )
}

/// `plan` fenced (`environment-overridden`) when `overridden` is not
/// empty, as `pool_change::check` fences: a plan fenced already keeps its
/// fence and gets the note.
pub fn fence(mut plan: Plan, overridden: &[Overridden], profile: Profile, fs: &dyn NodeFs) -> Plan {
    if overridden.is_empty() {
        return plan;
    }
    let note = note(overridden);
    // Checked again after each smaller plan (the exec limit's): one note.
    if !plan.notes.contains(&note) {
        plan.notes.insert(0, note);
    }
    if plan.left_out.is_some() {
        return plan;
    }
    let failure = Failure::new(Reason::EnvironmentOverridden, "");
    fail_closed::refenced(plan, &failure, profile, fs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::unit::{LoadOptions, UnitPaths};

    fn os(v: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        v.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
    }

    /// `check` on a root with kubelet's `unit`, our env drop-in `ours`,
    /// a drop-in `later` after it and kubelet-env `file`.
    fn checked(unit: &str, later: &str, file: &str, env: &[(&str, &str)]) -> OwnEnv {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let write = |p: &str, text: &str| {
            let p = r.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let d = "etc/systemd/system/k.service.d";
        write("etc/systemd/system/k.service", unit);
        write(
            &format!("{d}/{ENV_DROPIN_NAME}"),
            &format!("[Service]\nEnvironment={TAINTS_VAR}=a=b:NoSchedule\n"),
        );
        write(&format!("{d}/95-later.conf"), later);
        write("etc/kubelet-env", file);
        let svc = unit::load_service(&UnitPaths::system(r), "k.service", &LoadOptions::default())
            .unwrap();
        check(&svc, r, &os(env))
    }

    const UNIT: &str = "[Service]\nEnvironmentFile=-/etc/kubelet-env\nExecStart=/bin/k\n";
    const OURS: (&str, &str) = (TAINTS_VAR, "a=b:NoSchedule");

    #[test]
    fn the_managers_own_is_kept_an_environment_files_is_not() {
        // The fault hook from the service manager (the tests' harness), on
        // a unit that reads no EnvironmentFile=: kept.
        let bare = "[Service]\nExecStart=/bin/k\n";
        let c = checked(bare, "", "", &[OURS, (FAULT_VAR, "abort")]);
        assert!(c.overridden.is_empty(), "{:?}", c.overridden);
        assert!(c.env.contains(&(FAULT_VAR.into(), "abort".into())));
        // On one that reads EnvironmentFile=s, no second read can tell
        // where it came from (review 20 r20a F1): left out.
        let c = checked(UNIT, "", "", &[OURS, (FAULT_VAR, "abort")]);
        assert_eq!(c.overridden.len(), 1, "{:?}", c.overridden);
        assert!(!c.env.iter().any(|(k, _)| k == FAULT_VAR));
        // The same from kubelet-env: overridden, left out.
        let file = format!("{FAULT_VAR}=abort\n");
        let c = checked(UNIT, "", &file, &[OURS, (FAULT_VAR, "abort")]);
        assert_eq!(c.overridden.len(), 1);
        assert_eq!(c.overridden[0].from, "EnvironmentFile= /etc/kubelet-env");
        assert!(!c.env.iter().any(|(k, _)| k == FAULT_VAR));
        // Set by another drop-in's Environment= (root's, as ours): kept.
        let later = format!("[Service]\nEnvironment={FAULT_VAR}=abort\n");
        let c = checked(UNIT, &later, "", &[OURS, (FAULT_VAR, "abort")]);
        assert!(c.overridden.is_empty(), "{:?}", c.overridden);
    }

    #[test]
    fn what_took_ours_away_is_named() {
        let ours = |c: &OwnEnv| {
            c.env
                .contains(&(TAINTS_VAR.into(), "a=b:NoSchedule".into()))
        };
        let unset = format!("[Service]\nUnsetEnvironment={TAINTS_VAR}\n");
        let c = checked(UNIT, &unset, "", &[]);
        assert_eq!(c.overridden[0].from, "UnsetEnvironment=");
        assert!(ours(&c));
        let c = checked(UNIT, "[Service]\nEnvironment=\n", "", &[]);
        assert_eq!(
            c.overridden[0].from,
            "an empty Environment= in /etc/systemd/system/k.service.d/95-later.conf"
        );
        assert!(ours(&c));
        let c = checked(UNIT, "", "", &[(TAINTS_VAR, "")]);
        assert_eq!(c.overridden[0].from, "not kubelet's unit files");
        assert!(ours(&c));
        assert!(note(&c.overridden).contains(TAINTS_VAR));
        assert!(!note(&c.overridden).contains("a=b"));
    }
}
