//! One sync run: derive the labels as the wrapper does, read the Node with
//! the node's own identity, reconcile, write at most once.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::event::post_event;
use super::identity::{Files, identity};
use super::reconcile::{self, Desired, NodeState, Policy};
use super::transport::{Curl, Failure, Response, Transport};
use crate::node::contract::WRAPPER_DROPIN_NAME;
use crate::node::kubelet::{self, Profile, Taint};
use crate::node::unit::{self, LoadOptions, UnitPaths};
use crate::node::wrapper::derived::{escape_controls, journal_line};
use crate::node::wrapper::plan;

/// Exit codes: the Node matches; drift remains we may not fix (or the run
/// could not finish); bad usage or input, nothing tried.
pub const EXIT_OK: i32 = 0;
pub const EXIT_DRIFT: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
/// The API server stayed unreachable or busy (a cut connection, 429, 5xx)
/// past the run's wait: the sync service starts again later
/// (`Restart=on-failure`), so the Node does not stay stale until the
/// next change or kubelet start. 75 is sysexits' EX_TEMPFAIL.
pub const EXIT_RETRY_LATER: i32 = 75;

#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// The node's tree (`/` on the node).
    pub root: PathBuf,
    pub unit: String,
    /// A host path, read as kubectl reads it; None: kubelet's own (its
    /// `--kubeconfig`, else the profile's) under `root`.
    pub kubeconfig: Option<PathBuf>,
    pub dry_run: bool,
    pub policy: Policy,
    /// None: the installed wrapper's.
    pub profile: Option<Profile>,
    /// Where facts are read; None: `root`.
    pub facts_root: Option<PathBuf>,
    /// How long to keep retrying an unreachable API server or a Node not
    /// registered yet.
    pub max_wait: Duration,
    /// None: `curl` on PATH.
    pub curl: Option<PathBuf>,
    /// When requests stop, whatever is left to do (the node's service:
    /// its start's `--max-wait` and `start::GRACE`); None: no such time.
    pub deadline: Option<Instant>,
}

impl Default for SyncOptions {
    fn default() -> Self {
        SyncOptions {
            root: PathBuf::from("/"),
            unit: "kubelet.service".into(),
            kubeconfig: None,
            dry_run: false,
            policy: Policy::default(),
            profile: None,
            facts_root: None,
            max_wait: Duration::from_secs(300),
            curl: None,
            deadline: None,
        }
    }
}

/// What a run printed and how it ended.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Per key and drift lines (`--dry-run`).
    pub detail: Vec<String>,
    /// The one journal line.
    pub summary: String,
    pub code: i32,
    /// HTTP requests sent.
    pub requests: usize,
    pub writes: usize,
    /// What the run derived and synced to (None: it derived nothing).
    pub derived: Option<Derived>,
}

/// What a run syncs the Node to: the labels and taints, and the pool label
/// held back.
pub type Derived = (Desired, Option<String>);

fn fail(code: i32, summary: String) -> Outcome {
    Outcome {
        summary,
        code,
        ..Default::default()
    }
}

/// What the node's configuration derives, and where kubelet's kubeconfig is.
pub struct Derivation {
    pub desired: Desired,
    pub kubeconfig: PathBuf,
    /// kubelet's `--hostname-override` (trimmed, lower-cased as kubelet does).
    pub node_name: Option<String>,
    pub profile: Profile,
    pub notes: Vec<String>,
    /// The pool label the env drop-in names (`contract::POOL_LABEL_VAR`).
    pub pool_label: Option<String>,
}

/// The labels and taints the wrapper adds at kubelet's next start, from the
/// unit files under `root` (the same code: `wrapper::plan`).
pub fn derive(opts: &SyncOptions) -> Result<Derivation, String> {
    let profile = opts.profile.unwrap_or_else(|| {
        crate::node::wrapper::installed::wrapper_profile(&opts.root, &opts.unit, None)
            .unwrap_or(Profile::Upstream)
    });
    let paths = UnitPaths::system(&opts.root);
    let load = LoadOptions {
        skip_dropin: Some(WRAPPER_DROPIN_NAME.into()),
        ..Default::default()
    };
    let svc = unit::load_service(&paths, &opts.unit, &load)
        .map_err(|e| format!("loading {}: {e:#}", opts.unit))?;
    let env = unit::offline_environment(&svc, &opts.root, &[])
        .map_err(|e| format!("building {}'s environment: {e:#}", opts.unit))?;
    // Our variables set otherwise than our drop-ins set them (an
    // `EnvironmentFile=` of kubelet's): the wrapper registers fenced with
    // ours; the sync changes no label on that word.
    let own = crate::node::wrapper::own_env::check(&svc, &opts.root, &env);
    if !own.overridden.is_empty() {
        return Err(format!(
            "refusing to change labels: {}",
            crate::node::wrapper::own_env::note(&own.overridden)
        ));
    }
    let pool_label = pool_label(&env);
    let mut notes = Vec::new();
    let original = plan::original_command_offline(&svc, &env, &opts.root, &mut notes)
        .map_err(|e| format!("{}: {e:#}", opts.unit))?;
    let words: Vec<String> = original
        .argv
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let scan = kubelet::flags::scan(&words);
    let node_name = scan
        .last_value("hostname-override")
        .map(|h| crate::node::rules::go_lower_ascii(h.trim()))
        .filter(|h| !h.is_empty());
    let kubeconfig = scan
        .last_value("kubeconfig")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(match profile {
                Profile::OpenShift => "/var/lib/kubelet/kubeconfig",
                Profile::Upstream => "/etc/kubernetes/kubelet.conf",
            })
        });
    let facts_root = opts.facts_root.as_deref().unwrap_or(&opts.root);
    let mut collected = plan::collect(
        &env,
        &original.argv,
        facts_root,
        profile,
        plan::FactsScope::Used,
    );
    // The rules could not be evaluated here (their features fenced: a
    // link in features.d, past its bounds): what they give is unknown, the
    // rest is not. `collected` then holds the static part alone; its drift
    // and kubelet's own taints' are still reported, and nothing the rules
    // may give is removed or reported stale (fail closed, as the wrapper
    // registers fenced).
    // Label-only rules too (review 14): no fence then, but what they give
    // is unknown all the same.
    let failed = collected.failed.take();
    // Said once, by `unknown`.
    let said = |n: &String| {
        failed.is_none()
            || !(n.starts_with(plan::RULES_LEFT_OUT_NOTE)
                || n.starts_with(crate::node::wrapper::fence::LABELS_LEFT_OUT_NOTE))
    };
    collected.notes.retain(said);
    let fs = plan::RootFs::of_unit(&opts.root, &svc);
    // Ours, for when kubelet's own taints cannot be read (its config past
    // its bounds, a drop-in a pod wrote in --config-dir): the wrapper then
    // registers ours fenced, and their drift is still known.
    let exe = original.executable.to_string_lossy().into_owned();
    let is_kubelet = kubelet::flags::kubelet_args_start(&exe, &words).is_ok();
    let ours = collected.additions.as_ref().ok().cloned().flatten();
    let ours = ours.filter(|_| is_kubelet);
    let p = plan::plan(original, collected.additions, profile, &fs);
    let (evaluated, kubelet_unread) = match (p.left_out, ours) {
        (None, _) => ((p.added_labels, p.taints), None),
        (Some(why), Some(ours)) => ((ours.labels, ours.taints), Some(why)),
        (Some(why), None) => {
            // The wrapper would start kubelet without our labels: the sync
            // does not guess what it would have added.
            return Err(format!(
                "the wrapper would leave our labels/taints out: {why}"
            ));
        }
    };
    notes.extend(collected.notes);
    Ok(Derivation {
        desired: Desired::evaluated(
            evaluated,
            failed.as_deref(),
            kubelet_unread.as_deref(),
            &env,
        ),
        kubeconfig,
        node_name,
        profile,
        notes,
        pool_label,
    })
}

/// The pool label the unit's environment names (the env drop-in's
/// `contract::POOL_LABEL_VAR`, the last one set).
pub fn pool_label(env: &[(OsString, OsString)]) -> Option<String> {
    env.iter()
        .rfind(|(k, _)| k == crate::node::contract::POOL_LABEL_VAR)
        .map(|(_, v)| v.to_string_lossy().trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The policy a run follows: its command line's, the pool label the
/// env drop-in names where the command line gives none.
pub fn effective_policy(given: &Policy, env_pool_label: &Option<String>) -> Policy {
    let mut policy = given.clone();
    if policy.pool_label.is_none() {
        policy.pool_label = env_pool_label.clone();
    }
    policy
}

/// The policy a run under `opts.root` follows: [`effective_policy`]'s,
/// with the installed-pool record there (read as the wrapper reads it:
/// bounded, never blocking, never through a link), so that the sync never
/// moves a node installed from a fleet ISO out of its pool
/// (`super::pool_guard`).
pub fn policy_of(opts: &SyncOptions, env_pool_label: &Option<String>) -> Policy {
    let mut policy = effective_policy(&opts.policy, env_pool_label);
    policy.installed = crate::node::wrapper::pool_change::read_record(&opts.root);
    policy
}

/// The Node as reconcile sees it.
pub fn node_state(body: &str) -> Result<NodeState, String> {
    let v = super::json::parse(body)?;
    let meta = v
        .get("metadata")
        .ok_or("the answer is no object with metadata")?;
    let taints = v
        .path(&["spec", "taints"])
        .map(|t| t.as_array().to_vec())
        .unwrap_or_default()
        .iter()
        .filter_map(|t| {
            Some(Taint {
                key: t.get("key")?.as_str()?.to_string(),
                value: t
                    .get("value")
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_string(),
                effect: kubelet::TaintEffect::parse(t.get("effect")?.as_str()?)?,
            })
        })
        .collect();
    Ok(NodeState {
        name: meta
            .get("name")
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .to_string(),
        resource_version: meta
            .get("resourceVersion")
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .to_string(),
        labels: meta
            .get("labels")
            .map(|l| l.string_map())
            .unwrap_or_default(),
        annotations: meta
            .get("annotations")
            .map(|l| l.string_map())
            .unwrap_or_default(),
        taints,
    })
}

/// The API server's message in a Status answer: network text, escaped
/// (a newline or an escape code in it never forges a journal line) and
/// at most 200 characters.
fn status_message(r: &Response) -> String {
    let text = super::json::parse(&r.body)
        .ok()
        .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(String::from))
        .unwrap_or_else(|| r.body.trim().to_string());
    shown(&text, 200)
}

/// Network text for the journal line: escaped, and at most `most`
/// characters of it (a label value or a taint of a Node the API server
/// made up can be megabytes).
fn shown(text: &str, most: usize) -> String {
    let short: String = text.chars().take(most).collect();
    let more = if short.len() < text.len() { "..." } else { "" };
    format!("{}{more}", escape_controls(&short))
}

/// Random factor in [0.5, 1.5) for backoff jitter.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let r = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    0.5 + (r % 1000) as f64 / 1000.0
}

/// Delay before retry `n` (from 0): 1 s doubling to 32 s, with jitter.
pub fn backoff(n: u32) -> Duration {
    Duration::from_secs_f64(f64::from(1u32 << n.min(5)) * jitter())
}

/// How many times a conflicting write is read again and retried.
const MAX_CONFLICTS: usize = 5;

/// What a run went through before its end, for its journal line.
#[derive(Default)]
struct Trail {
    /// Why each retry was made ("connection failure", "HTTP 503", ...).
    retried: Vec<String>,
    /// A write whose answer was lost (the connection cut, a 5xx): what it
    /// changes, and the taint drift its plan reported. Until the Node is
    /// read again nobody knows whether it landed.
    unsure: Option<(String, Vec<String>)>,
}

impl Trail {
    /// " (retried 3 times: connection failure x2, HTTP 503 x1)".
    fn note(&self) -> String {
        if self.retried.is_empty() {
            return String::new();
        }
        let mut kinds: Vec<(&str, usize)> = Vec::new();
        for r in &self.retried {
            match kinds.iter_mut().find(|(k, _)| k == r) {
                Some((_, n)) => *n += 1,
                None => kinds.push((r, 1)),
            }
        }
        let n = self.retried.len();
        let list: Vec<String> = kinds.iter().map(|(k, c)| format!("{k} x{c}")).collect();
        format!(
            " (retried {n} time{}: {})",
            if n == 1 { "" } else { "s" },
            list.join(", ")
        )
    }
}

/// Reconcile the Node `name` through `api`; `sleep` waits between retries
/// (a parameter so tests need not wait).
pub fn sync_node(
    api: &mut dyn Transport,
    sleep: &mut dyn FnMut(Duration),
    name: &str,
    desired: &Desired,
    policy: &Policy,
    dry_run: bool,
    max_wait: Duration,
) -> Outcome {
    let start = Instant::now();
    let mut out = Outcome::default();
    let mut trail = Trail::default();
    let mut conflicts = 0;
    let path = format!("/api/v1/nodes/{name}");
    // Retry after `why` while the budget lasts; false: give up.
    let mut wait = |why: String, trail: &mut Trail| -> bool {
        let d = backoff(trail.retried.len() as u32);
        if start.elapsed() + d > max_wait {
            return false;
        }
        trail.retried.push(why);
        sleep(d);
        true
    };
    let finish = |mut out: Outcome, code: i32, summary: String, trail: &Trail| {
        let summary = match (&trail.unsure, summary.strip_prefix("nothing changed: ")) {
            // The lost write may have landed: never "nothing changed".
            (Some((changes, _)), Some(why)) => {
                format!(
                    "unknown whether the Node changed ({changes}): a write's answer was lost; {why}"
                )
            }
            _ => summary,
        };
        out.code = code;
        out.summary = format!(
            "kubelet-labeler sync: node {name}: {summary}{}",
            trail.note()
        );
        out
    };
    const CONNECTION: &str = "connection failure";
    // The drift whose Event this run posted, and a note when its post
    // failed: posted before the write that records it as told, so neither
    // a failed post nor a write's lost answer loses it.
    let mut posted: Option<Vec<String>> = None;
    let mut unposted = String::new();
    let spent = |s: &str| format!("nothing changed: this start's time for requests is spent{s}");
    loop {
        if api.spent() {
            return finish(out, EXIT_RETRY_LATER, spent(""), &trail);
        }
        let got = api.request("GET", &path, None);
        out.requests += 1;
        let r = match got {
            Ok(r) => r,
            Err(Failure::Unreachable(why)) => {
                if wait(CONNECTION.into(), &mut trail) {
                    continue;
                }
                return finish(
                    out,
                    EXIT_RETRY_LATER,
                    format!(
                        "nothing changed: {why} (gave up after {} s)",
                        start.elapsed().as_secs()
                    ),
                    &trail,
                );
            }
            Err(Failure::Fatal(why)) => {
                return finish(out, EXIT_DRIFT, format!("nothing changed: {why}"), &trail);
            }
        };
        match r.status {
            200 => {}
            404 => {
                if wait("Node not registered".into(), &mut trail) {
                    continue;
                }
                return finish(out, EXIT_DRIFT, "nothing changed: the Node is not registered (yet); the next kubelet start syncs it".into(), &trail);
            }
            401 | 403 => {
                return finish(
                    out,
                    EXIT_DRIFT,
                    format!(
                        "nothing changed: the API server refused kubelet's identity ({}): {}",
                        r.status,
                        status_message(&r)
                    ),
                    &trail,
                );
            }
            429 | 500..=599 => {
                if wait(format!("HTTP {}", r.status), &mut trail) {
                    continue;
                }
                return finish(
                    out,
                    EXIT_RETRY_LATER,
                    format!(
                        "nothing changed: the API server answered {} (gave up after {} s): {}",
                        r.status,
                        start.elapsed().as_secs(),
                        status_message(&r)
                    ),
                    &trail,
                );
            }
            s => {
                return finish(
                    out,
                    EXIT_DRIFT,
                    format!(
                        "nothing changed: reading the Node: HTTP {s}: {}",
                        status_message(&r)
                    ),
                    &trail,
                );
            }
        }
        let node = match node_state(&r.body) {
            Ok(n) if n.name == name => n,
            Ok(n) => {
                return finish(
                    out,
                    EXIT_DRIFT,
                    format!(
                        "nothing changed: the API server gave Node {:?}",
                        shown(&n.name, 253)
                    ),
                    &trail,
                );
            }
            Err(e) => {
                return finish(
                    out,
                    EXIT_DRIFT,
                    format!("nothing changed: reading the Node: {e}"),
                    &trail,
                );
            }
        };
        // The answer's text is not needed past here: free it before the
        // next request (a retry's Node is not added to this one's).
        drop(r);
        let mut plan = match reconcile::reconcile(desired, &node, policy) {
            Ok(p) => p,
            Err(e) => return finish(out, EXIT_DRIFT, format!("nothing changed: {e}"), &trail),
        };
        if dry_run {
            out.detail = reconcile::describe(&plan);
            let code = if plan.drift_remains() {
                EXIT_DRIFT
            } else {
                EXIT_OK
            };
            let what = if plan.patch.is_empty() {
                "dry run: nothing to write".to_string()
            } else {
                format!("dry run: would write {}", changes(&plan))
            };
            return finish(out, code, format!("{what}{}", drift_suffix(&plan)), &trail);
        }
        if plan.patch.is_empty() {
            // Drift stays reported (exit 1) at every run until it is gone.
            let (code, what) = if plan.pool_move.is_some() {
                (EXIT_DRIFT, "labels not changed")
            } else if plan.drift_remains() {
                (EXIT_DRIFT, "labels up to date")
            } else {
                (EXIT_OK, "up to date")
            };
            if let Some((changed, _)) = trail.unsure.take() {
                // The lost write landed: say what it changed, as if its
                // answer had come.
                return finish(
                    out,
                    code,
                    format!(
                        "{changed}{}{unposted} (the write's answer was lost; the Node read again shows it)",
                        drift_suffix(&plan)
                    ),
                    &trail,
                );
            }
            return finish(out, code, format!("{what}{}", drift_suffix(&plan)), &trail);
        }
        if api.spent() {
            return finish(out, EXIT_RETRY_LATER, spent(&drift_suffix(&plan)), &trail);
        }
        if plan.post_event && posted.as_ref() != Some(&plan.taint_drift) {
            unposted = match post_event(api, name, &plan) {
                Some(note) => {
                    out.requests += 1;
                    out.writes += 1;
                    note
                }
                None => String::new(),
            };
            if unposted.is_empty() {
                posted = Some(plan.taint_drift.clone());
            } else {
                // Not told: the next run posts it.
                plan.patch
                    .annotations
                    .retain(|(k, _)| k != reconcile::DRIFT_ANNOTATION);
                if plan.patch.is_empty() {
                    return finish(
                        out,
                        EXIT_DRIFT,
                        format!(
                            "labels {}{}{unposted}",
                            if plan.pool_move.is_some() {
                                "not changed"
                            } else {
                                "up to date"
                            },
                            drift_suffix(&plan)
                        ),
                        &trail,
                    );
                }
            }
        }
        if api.spent() {
            let s = format!("{}{unposted}", drift_suffix(&plan));
            return finish(out, EXIT_RETRY_LATER, spent(&s), &trail);
        }
        let body = plan.patch.to_json(&node.resource_version);
        drop(node);
        let sent = api.request(
            "PATCH",
            &path,
            Some(("application/merge-patch+json", &body)),
        );
        out.requests += 1;
        out.writes += 1;
        match sent {
            Ok(r) if r.status == 200 => {
                trail.unsure = None;
                let code = if plan.drift_remains() {
                    EXIT_DRIFT
                } else {
                    EXIT_OK
                };
                return finish(
                    out,
                    code,
                    format!("{}{}{unposted}", changes(&plan), drift_suffix(&plan)),
                    &trail,
                );
            }
            // Review 37 r37c F1: a conflict is retried within the run's
            // budget only (409s answered slowly ran one run past the
            // unit's start timeout, its journal line never written).
            Ok(r) if r.status == 409 && conflicts < MAX_CONFLICTS && start.elapsed() < max_wait => {
                conflicts += 1;
                continue;
            }
            Ok(r) if r.status == 429 || r.status >= 500 => {
                // A 5xx may come after the write was applied (a timeout):
                // the next read says.
                if r.status != 429 {
                    trail.unsure = Some((changes(&plan), plan.taint_drift.clone()));
                }
                if wait(format!("HTTP {}", r.status), &mut trail) {
                    continue;
                }
                return finish(
                    out,
                    EXIT_RETRY_LATER,
                    format!(
                        "nothing changed: the API server answered {} (gave up): {}{}",
                        r.status,
                        status_message(&r),
                        drift_suffix(&plan)
                    ),
                    &trail,
                );
            }
            // The label write refused (an admission policy, the Node's
            // annotations at their limit): the drift this run found is
            // still reported, and its Event posted (it does not depend on
            // the write), at every run while it lasts.
            Ok(r) => {
                return finish(
                    out,
                    EXIT_DRIFT,
                    format!(
                        "nothing changed: the API server refused the patch ({}): {}{}{unposted}",
                        r.status,
                        status_message(&r),
                        drift_suffix(&plan)
                    ),
                    &trail,
                );
            }
            Err(Failure::Unreachable(why)) => {
                // Sent, maybe applied, answer lost: read the Node again.
                trail.unsure = Some((changes(&plan), plan.taint_drift.clone()));
                if wait(CONNECTION.into(), &mut trail) {
                    continue;
                }
                return finish(
                    out,
                    EXIT_RETRY_LATER,
                    format!("nothing changed: {why} (gave up){}", drift_suffix(&plan)),
                    &trail,
                );
            }
            Err(Failure::Fatal(why)) => {
                return finish(
                    out,
                    EXIT_DRIFT,
                    format!("nothing changed: {why}{}", drift_suffix(&plan)),
                    &trail,
                );
            }
        }
    }
}

fn changes(plan: &reconcile::Reconciled) -> String {
    let list = |a: reconcile::Action| -> Vec<String> {
        plan.keys
            .iter()
            .filter(|k| k.action == a)
            .map(|k| match &k.derived {
                Some(v) if a != reconcile::Action::Remove => format!("{}={v}", k.key),
                _ => k.key.clone(),
            })
            .collect()
    };
    let mut parts = Vec::new();
    for (a, word) in [
        (reconcile::Action::Add, "added"),
        (reconcile::Action::Change, "changed"),
        (reconcile::Action::Remove, "removed"),
        (reconcile::Action::Adopt, "adopted"),
    ] {
        let l = list(a);
        if !l.is_empty() {
            parts.push(format!("{word} {}", l.join(",")));
        }
    }
    if parts.is_empty() {
        parts.push("updated our annotations".into());
    }
    parts.join("; ")
}

fn drift_suffix(plan: &reconcile::Reconciled) -> String {
    let mut out = String::new();
    if let Some(why) = &plan.unknown {
        out += &format!(
            " (rule-derived labels and taints unknown, none removed or reported stale: {})",
            shown(why, 1000)
        );
    }
    for k in plan.keys.iter().filter(|k| k.drift) {
        // Keys and values as the Node has them: escaped.
        out += &format!(
            " (left {}={}: {})",
            escape_controls(&k.key),
            shown(k.node.as_deref().unwrap_or("<absent>"), 200),
            k.why
        );
    }
    for t in &plan.taint_drift {
        out += &format!(" ({})", shown(t, 1000));
    }
    if let Some(why) = &plan.pool_move {
        // The record's names and selectors: escaped, bounded.
        out += &format!(" ({})", shown(&reconcile::pool_move_line(why), 2000));
    }
    out
}

/// A whole run: derive, identify, sync.
pub fn run(opts: &SyncOptions) -> Outcome {
    // Every read under a --root stays in the tree, in the wrapper's build
    // too (the boot path's reads are ours at /, and skip the cost).
    crate::node::unit::search::contain_from_now();
    let derivation = match derive(opts) {
        Ok(d) => d,
        Err(e) => {
            return fail(
                EXIT_USAGE,
                format!("kubelet-labeler sync: nothing changed: {e}"),
            );
        }
    };
    // kubelet's own kubeconfig is a node path of the tree, read inside it;
    // one given on the command line is this machine's, as kubectl reads it.
    let (kubeconfig, files) = match &opts.kubeconfig {
        Some(k) => (k.clone(), Files::Host),
        None => (derivation.kubeconfig.clone(), Files::Tree(&opts.root)),
    };
    // Not written yet: the node's first client certificate awaits the
    // CSR's approval (only kubelet's own kubeconfig; one given must exist).
    // A link there (wherever it points) is a kubeconfig given, judged as
    // such below.
    if let Files::Tree(root) = files
        && not_there(&root.join(kubeconfig.strip_prefix("/").unwrap_or(&kubeconfig)))
        && files.locate(&kubeconfig).map_or_else(
            |e| e.kind() == std::io::ErrorKind::NotFound,
            |p| not_there(&p),
        )
    {
        return fail(EXIT_OK, no_kubeconfig_yet(&kubeconfig));
    }
    let id = match identity(&kubeconfig, files) {
        Ok(i) => i,
        Err(e) => {
            return fail(
                EXIT_USAGE,
                format!("kubelet-labeler sync: nothing changed: {e}"),
            );
        }
    };
    if let Some(name) = derivation.node_name.as_ref().filter(|n| **n != id.node) {
        return fail(
            EXIT_USAGE,
            format!(
                "kubelet-labeler sync: nothing changed: kubeconfig {}: its certificate is node {}'s, but kubelet registers as {name} (--hostname-override); give that node's kubeconfig",
                kubeconfig.display(),
                id.node
            ),
        );
    }
    let Some(program) = opts.curl.clone().or_else(super::transport::find_curl) else {
        return fail(
            EXIT_DRIFT,
            "kubelet-labeler sync: nothing changed: curl is not installed (the sync reaches the API server through the host's curl)".into(),
        );
    };
    let mut api = Curl {
        program,
        creds: id.creds,
        sent: 0,
        deadline: opts.deadline,
    };
    let policy = policy_of(opts, &derivation.pool_label);
    let mut out = sync_node(
        &mut api,
        &mut std::thread::sleep,
        &id.node,
        &derivation.desired,
        &policy,
        opts.dry_run,
        opts.max_wait,
    );
    for n in &derivation.notes {
        out.summary += &format!(" ({n})");
    }
    out.derived = Some((derivation.desired, derivation.pool_label));
    out
}

fn not_there(p: &std::path::Path) -> bool {
    std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// kubelet's own kubeconfig is not written yet (its first certificate is
/// not issued: the node's CSR awaits approval): nothing to sync, exit 0.
fn no_kubeconfig_yet(kubeconfig: &std::path::Path) -> String {
    format!(
        "kubelet-labeler sync: nothing to do yet: kubelet has no kubeconfig {} (its client \
         certificate is not issued: approve the node's CSR); kubelet registers the Node with \
         our labels, and its next start runs the sync again",
        kubeconfig.display()
    )
}

/// What the configuration derives now (None when it derives nothing).
pub fn derived_now(opts: &SyncOptions) -> Option<Derived> {
    derive(opts).ok().map(|d| (d.desired, d.pool_label))
}

/// The node-side entry (the wrapper binary's `sync` mode): std-only
/// argument parsing, the journal line on stderr.
pub const NODE_USAGE: &str = "usage: kubelet-labeler-wrapper sync [--root DIR] [--unit NAME] \
[--kubeconfig FILE] [--pool-label KEY] [--allow-pool-label] [--profile upstream|openshift] \
[--max-wait SECONDS] [--dry-run]";

pub fn parse_node_args(args: &[OsString]) -> Result<SyncOptions, String> {
    let mut opts = SyncOptions::default();
    let mut it = args.iter().map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        match name.as_str() {
            "--dry-run" => {
                opts.dry_run = true;
                continue;
            }
            "--allow-pool-label" => {
                opts.policy.allow_pool_label = true;
                continue;
            }
            _ => {}
        }
        let value = inline
            .or_else(|| it.next())
            .ok_or_else(|| format!("{name} needs a value; {NODE_USAGE}"))?;
        match name.as_str() {
            "--root" => opts.root = PathBuf::from(value),
            "--unit" => opts.unit = value,
            "--kubeconfig" => opts.kubeconfig = Some(PathBuf::from(value)),
            "--pool-label" => opts.policy.pool_label = Some(value).filter(|v| !v.is_empty()),
            "--facts-root" => opts.facts_root = Some(PathBuf::from(value)),
            "--curl" => opts.curl = Some(PathBuf::from(value)),
            "--max-wait" => {
                opts.max_wait = Duration::from_secs(
                    value
                        .parse()
                        .map_err(|_| format!("--max-wait takes seconds, not {value:?}"))?,
                )
            }
            "--profile" => {
                opts.profile = Some(match value.as_str() {
                    "upstream" => Profile::Upstream,
                    "openshift" => Profile::OpenShift,
                    other => return Err(format!("unknown profile {other:?}; {NODE_USAGE}")),
                })
            }
            _ => return Err(format!("unknown argument {arg:?}; {NODE_USAGE}")),
        }
    }
    Ok(opts)
}

/// Detail lines on stdout, the summary on stderr, each one line whatever
/// it holds (control characters escaped as the boot path escapes them, and
/// short of journald's `LineMax=`: a line never forges another in the
/// journal); a closed pipe is no panic.
/// The summary is written whatever became of stdout; its error is returned
/// (the CLI reports it, the node's journal has no reader to tell).
pub fn print_outcome(out: &Outcome) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let written = out
        .detail
        .iter()
        .try_for_each(|l| writeln!(stdout, "{}", journal_line(l)))
        .and_then(|()| stdout.flush());
    let _ = writeln!(std::io::stderr(), "{}", journal_line(&out.summary));
    written
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "own_env_tests.rs"]
mod own_env_tests;
