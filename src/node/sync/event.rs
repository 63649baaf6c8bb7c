//! The `TaintDrift` Event the sync posts on the Node, once per drift (a
//! node may not change its own taints: the cluster's admin is told).

use super::identity::now_unix;
use super::reconcile;
use super::transport::{Failure, Transport};

/// The TaintDrift Event, once per drift (the patch just written records
/// it); a note for the journal line when it could not be posted. None:
/// nothing to post, no request sent.
pub(super) fn post_event(
    api: &mut dyn Transport,
    name: &str,
    plan: &reconcile::Reconciled,
) -> Option<String> {
    if !plan.post_event || plan.taint_drift.is_empty() {
        return None;
    }
    let event = event_json(name, &plan.taint_drift);
    let posted = api.request(
        "POST",
        "/api/v1/namespaces/default/events",
        Some(("application/json", &event)),
    );
    Some(match posted {
        Ok(r) if (200..300).contains(&r.status) => String::new(),
        Ok(r) => format!(" (the TaintDrift Event was not posted: HTTP {})", r.status),
        Err(Failure::Unreachable(why) | Failure::Fatal(why)) => {
            format!(" (the TaintDrift Event was not posted: {why})")
        }
    })
}

/// A Warning Event on the Node (node credentials may create events).
fn event_json(node: &str, drift: &[String]) -> String {
    use super::json::quote;
    let now = {
        let s = now_unix();
        let days = s.div_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        let t = s.rem_euclid(86_400);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            t / 3600,
            t / 60 % 60,
            t % 60
        )
    };
    format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{{\"generateName\":{},\"namespace\":\"default\"}},\
\"involvedObject\":{{\"kind\":\"Node\",\"name\":{},\"uid\":{}}},\"reason\":\"TaintDrift\",\"type\":\"Warning\",\
\"message\":{},\"source\":{{\"component\":\"kubelet-labeler\",\"host\":{}}},\"firstTimestamp\":{},\"lastTimestamp\":{},\"count\":1}}",
        quote(&format!("{node}.")),
        quote(node),
        quote(node),
        quote(&drift.join("; ")),
        quote(node),
        quote(&now),
        quote(&now),
    )
}

pub(super) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
