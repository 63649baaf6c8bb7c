//! A paused MachineConfigPool on either side of a change (review 25 r25a
//! F5): a change that unpauses a pool rolls out what was merged while it
//! was paused, which the renders do not show; plan priced it "no change".

use crate::plan::{json, plan, render};
use crate::plan_pools::edit_pool;
use crate::support::{add_file_machineconfig, repo, scratch_dir, stderr, stdout};

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;

const POOL: &str = "machineconfigpool-worker-gpu.yaml";
const UNPAUSING: &str = "unpausing pool worker-gpu (paused in ";
const PAUSED: &str = "pool worker-gpu is paused (spec.paused): the MCO rolls none of this out";

/// A render of worker-gpu with a MachineConfig writing /etc/gpu.conf and
/// `paused` lines under the pool's spec (none: `""`).
fn render_gpu(dir: &Path, paused: &str) {
    render(dir, &[]);
    add_file_machineconfig(
        dir,
        "60-worker-gpu-conf",
        Some("worker-gpu"),
        "/etc/gpu.conf",
        "gpu=on\n",
    );
    if !paused.is_empty() {
        edit_pool(dir, paused);
    }
}

/// The example fleet (two GPU nodes in worker-gpu, two CPU workers) with
/// `edit` applied to its worker-gpu MachineConfigPool and GPU Nodes.
fn fleet_with(dir: &Path, edit: impl Fn(&mut Value)) -> PathBuf {
    let path = repo().join("examples/fleet/fleet.json");
    let mut f: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut f);
    let out = dir.join("fleet.json");
    std::fs::write(&out, f.to_string()).unwrap();
    out
}

fn items<'a>(f: &'a mut Value, kind: &str) -> impl Iterator<Item = &'a mut Value> {
    let kind = kind.to_string();
    f["items"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .filter(move |i| i["kind"] == kind.as_str())
}

/// Exit code and JSON of plan `from` -> `to` with `--fail-on gate`.
fn gated(from: &Path, to: &Path, fleet: &Path, gate: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["--fail-on", gate, "--format", "json"];
    args.extend(extra);
    let o: Output = plan(from, to, fleet, &args);
    let code = o.status.code().unwrap_or(-1);
    assert_ne!(code, 2, "{}{}", stdout(&o), stderr(&o));
    (code, json(&o))
}

fn gpu_group(p: &Value) -> &Value {
    (p["groups"].as_array().unwrap().iter())
        .find(|g| g["outcome"]["pool_before"] == "worker-gpu")
        .unwrap_or_else(|| panic!("{p:#}"))
}

/// The pull request that only unpauses a pool a MachineConfig was added to
/// while paused: both GPU nodes drain and reboot (what was merged is not
/// seen), counted as taint changes too; `--fail-on reboot` and `--fail-on
/// taint` fail. Planned "0 reboot ... no change", exit 0, before.
#[test]
fn unpausing_a_pool_prices_what_was_merged_while_it_was_paused() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render_gpu(&base, "  paused: true\n");
    render_gpu(&pr, "  paused: false\n");
    let fleet = repo().join("examples/fleet/fleet.json");
    let (code, p) = gated(&base, &pr, &fleet, "reboot", &[]);
    assert_eq!(code, 1, "{p:#}");
    assert_eq!(
        (p["reboot"].as_u64(), p["changed"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(p["taint_changes"], 2, "{p:#}");
    let o = &gpu_group(&p)["outcome"];
    assert_eq!(o["disruption"], "drain-and-reboot", "{o:#}");
    let why = o["disruption_because"].to_string();
    assert!(
        why.contains(&format!(
            "{UNPAUSING}{}) rolls out every MachineConfig",
            base.display()
        )) && why.contains("plan cannot see them from the renders"),
        "{why}"
    );
    assert_eq!(o["unseen_rollout"], true);
    let (code, _) = gated(&base, &pr, &fleet, "taint", &[]);
    assert_eq!(code, 1);
    // The PR leaves the field out, which the base render set: the apply
    // removes it, so the pool is unpaused all the same.
    let bare = tmp.path().join("bare");
    render_gpu(&bare, "");
    let (code, p) = gated(&base, &bare, &fleet, "reboot", &[]);
    assert_eq!((code, p["reboot"].as_u64()), (1, Some(2)), "{p:#}");
    // The fleet shows a node on the pool's latest rendered config: nothing
    // is pending there; the other node still runs an older one.
    let fleet = fleet_with(tmp.path(), |f| {
        for pool in items(f, "MachineConfigPool") {
            pool["spec"]["configuration"] = json!({ "name": "rendered-worker-gpu-2" });
        }
        for (i, n) in items(f, "Node")
            .filter(|n| n["metadata"]["name"].as_str().unwrap().starts_with("gpu-"))
            .enumerate()
        {
            n["metadata"]["annotations"] = json!({
                "machineconfiguration.openshift.io/currentConfig": format!("rendered-worker-gpu-{}", i + 1)
            });
        }
    });
    let (code, p) = gated(&base, &pr, &fleet, "reboot", &[]);
    assert_eq!((code, p["reboot"].as_u64()), (1, Some(1)), "{p:#}");
    let current = (p["groups"].as_array().unwrap().iter())
        .find(|g| g["nodes"] == json!(["gpu-a100-02"]))
        .unwrap_or_else(|| panic!("{p:#}"));
    assert_eq!(current["outcome"]["disruption"], "nothing", "{p:#}");
}

/// The cluster's pool is paused (`oc patch`, the fleet's export) and the
/// tree's is not: a PR that sets `paused: false` unpauses it (priced as
/// above); one that leaves the field out, as render writes it, leaves the
/// cluster's: still paused, nothing rolls out (the note).
#[test]
fn the_fleet_s_paused_pool_unpaused_by_the_tree_is_priced() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render_gpu(&base, "");
    render_gpu(&pr, "  paused: false\n");
    let fleet = fleet_with(tmp.path(), |f| {
        for pool in items(f, "MachineConfigPool") {
            pool["spec"]["paused"] = json!(true);
        }
    });
    let (code, p) = gated(&base, &pr, &fleet, "reboot", &[]);
    assert_eq!((code, p["reboot"].as_u64()), (1, Some(2)), "{p:#}");
    let why = gpu_group(&p)["outcome"]["disruption_because"].to_string();
    assert!(
        why.contains(&format!("{UNPAUSING}the fleet's MachineConfigPool)")),
        "{why}"
    );
    let (code, p) = gated(&base, &base, &fleet, "reboot", &[]);
    assert_eq!((code, p["reboot"].as_u64()), (0, Some(0)), "{p:#}");
    assert!(p.to_string().contains(PAUSED), "{p:#}");
}

/// Controls: paused on both sides (the note, what the renders change
/// priced as before, no unseen rollout); paused only by the PR (the note,
/// what unpausing does).
#[test]
fn a_pool_paused_on_both_sides_is_planned_as_before() {
    let tmp = scratch_dir();
    let (plain, base, pr) = (
        tmp.path().join("plain"),
        tmp.path().join("base"),
        tmp.path().join("pr"),
    );
    render(&plain, &[]);
    render_gpu(&base, "  paused: true\n");
    render_gpu(&pr, "  paused: true\n");
    let fleet = repo().join("examples/fleet/fleet.json");
    let (code, p) = gated(&base, &pr, &fleet, "reboot", &[]);
    assert_eq!((code, p["changed"].as_u64()), (0, Some(0)), "{p:#}");
    let shown = p.to_string();
    assert!(
        shown.contains(PAUSED) && !shown.contains(UNPAUSING),
        "{p:#}"
    );
    // The PR adds the file while the pool is paused: the file's verdict.
    let (code, p) = gated(&plain, &pr, &fleet, "reboot", &[]);
    assert_eq!((code, p["reboot"].as_u64()), (1, Some(2)), "{p:#}");
    let o = &gpu_group(&p)["outcome"];
    assert_ne!(o["unseen_rollout"], true, "{o:#}");
    assert_eq!(
        o["disruption_because"],
        json!(["/etc/gpu.conf: no policy entry"]),
        "{o:#}"
    );
    assert!(o["not_judged"].to_string().contains(PAUSED), "{o:#}");
}

/// A paused pool the PR deletes (--prune): its nodes move to worker,
/// priced as the move; the deleted pool's pause is no note of theirs (it
/// said the MCO rolls none of it out).
#[test]
fn a_paused_pool_deleted_is_priced_as_the_move() {
    let tmp = scratch_dir();
    let (plain, base) = (tmp.path().join("plain"), tmp.path().join("base"));
    render(&plain, &[]);
    render_gpu(&base, "  paused: true\n");
    let fleet = repo().join("examples/fleet/fleet.json");
    std::fs::remove_file(plain.join(POOL)).unwrap();
    crate::support::relist_kustomization(&plain, &[], &[POOL]);
    let (code, p) = gated(&base, &plain, &fleet, "reboot", &["--prune"]);
    assert_eq!((code, p["reboot"].as_u64()), (1, Some(2)), "{p:#}");
    let o = &gpu_group(&p)["outcome"];
    assert_eq!(o["pool_after"], "worker", "{o:#}");
    let shown = o.to_string();
    assert!(
        !shown.contains(UNPAUSING) && !shown.contains("is paused"),
        "{o:#}"
    );
}
