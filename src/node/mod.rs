//! What runs on the node, std only: the wrapper's boot path, the fleet ISO's
//! install-time selector and the day-2 sync are built from this module alone.
//!
//! `unit` knows systemd and nothing of kubelet; `kubelet` knows kubelet flags
//! and nothing of systemd; `wrapper` joins them at boot; `facts` reads the
//! node's hardware under NFD's names and `rules` evaluates NodeFeatureRules on
//! them; `contract` names what render writes and the wrapper reads; `sorted`
//! is the map and set the boot path uses instead of std's B-trees; `nodefs`
//! reads the node's files; `fleet` picks a machine's pool at install time;
//! `sync` keeps a registered Node's labels current with what the wrapper
//! derives (day 2).

pub mod contract;
pub mod error;
pub mod facts;
pub mod fleet;
pub mod kubelet;
pub mod nodefs;
pub mod rules;
pub mod sorted;
pub mod sync;
pub mod unit;
pub mod wrapper;

/// Is `s` one of `list`'s entries? Lengths first, so most entries cost a
/// compare of two integers: a plain `contains` over the boot path's lists
/// (the kubelet's labels, NFD's cpuid blacklist, the feature names) cost
/// about 2% of a start's instructions once the compiler stopped inlining it
/// and every entry became a call (benches/wrapper-instructions.sh).
pub fn one_of(list: &[&str], s: &str) -> bool {
    list.iter()
        .any(|x| x.len() == s.len() && x.as_bytes() == s.as_bytes())
}

/// `v.retain(keep)` through one copy of std's loop per item type, not one
/// per predicate (the wrapper's payload is counted in bytes).
#[inline(never)]
pub fn retain<T>(v: &mut Vec<T>, keep: &mut dyn FnMut(&T) -> bool) {
    v.retain(|x| keep(x))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`): certificate times and feature files' expiry times.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
