//! `plan`'s taint/toleration matching (src/cli/plan/kube.rs) against the
//! real kubelet's. A pod bound to a node (`spec.nodeName`) passes the
//! kubelet's admission only if it tolerates every NoExecute taint of the
//! node (its lifecycle predicate, `v1.Toleration.ToleratesTaint`); else the
//! kubelet fails it (phase Failed, reason `TaintToleration`). So one real kubelet
//! registered with seeded random taints, and pods with seeded random
//! tolerations bound to it, give the kubelet's verdict on each pod, compared
//! with ours. The seed is printed; `PLAN_TOLERATIONS_SEED=N` replays one.

use crate::support::deflate::Rng;
use crate::support::realcluster::{self, Cluster};
use kubelet_labeler::cli::plan::kube::{self, Eviction, Toleration};
use kubelet_labeler::node::kubelet::{Taint, TaintEffect};
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Nodes of the real cluster (../shared/tools/realcluster) this area uses.
pub const NODES: [&str; 1] = ["plan-tolerations"];

const PODS: usize = 60;
const NAMESPACE: &str = "plan-tolerations";
/// Small alphabets, so that tolerations match taints often.
const KEYS: [&str; 3] = ["example.com/a", "example.com/b", "example.com/c"];
const VALUES: [&str; 3] = ["", "x", "y"];
const EFFECTS: [&str; 4] = ["", "NoExecute", "NoSchedule", "PreferNoSchedule"];

fn pick<'a>(rng: &mut Rng, from: &[&'a str]) -> &'a str {
    from[rng.below(from.len())]
}

/// The node's taints, as `--register-with-taints` items: two or three
/// NoExecute ones on distinct keys, and one NoSchedule (which admission
/// must ignore).
fn random_taints(rng: &mut Rng) -> Vec<String> {
    let mut keys = KEYS.to_vec();
    let n = 1 + rng.below(2);
    let mut out = Vec::new();
    for _ in 0..n {
        let key = keys.remove(rng.below(keys.len()));
        let value = pick(rng, &VALUES);
        out.push(format!("{key}={value}:NoExecute"));
    }
    out.push(format!(
        "{}={}:NoSchedule",
        pick(rng, &KEYS),
        pick(rng, &VALUES)
    ));
    out
}

/// Zero to three tolerations, valid as the API server validates them (an
/// empty key only with Exists, Exists without a value, tolerationSeconds
/// only on NoExecute).
fn random_tolerations(rng: &mut Rng) -> Vec<Value> {
    (0..1 + rng.below(4))
        .map(|_| {
            let key = if rng.below(12) == 0 {
                ""
            } else {
                pick(rng, &KEYS)
            };
            let operator = if key.is_empty() {
                "Exists"
            } else {
                pick(rng, &["Exists", "Equal", ""])
            };
            let effect = pick(rng, &EFFECTS);
            let mut t = json!({"key": key, "effect": effect});
            if !operator.is_empty() {
                t["operator"] = json!(operator);
            }
            if operator != "Exists" {
                t["value"] = json!(pick(rng, &VALUES));
            }
            if effect == "NoExecute" && rng.below(3) == 0 {
                t["tolerationSeconds"] = json!(rng.below(3) as i64 * 150);
            }
            t
        })
        .collect()
}

fn taint_of(v: &Value) -> Option<Taint> {
    let effect = match v["effect"].as_str()? {
        "NoSchedule" => TaintEffect::NoSchedule,
        "PreferNoSchedule" => TaintEffect::PreferNoSchedule,
        "NoExecute" => TaintEffect::NoExecute,
        _ => return None,
    };
    Some(Taint {
        key: v["key"].as_str()?.to_string(),
        value: v["value"].as_str().unwrap_or_default().to_string(),
        effect,
    })
}

/// The kubelet's verdict on a pod as stored: Some(admitted), None while it
/// has not judged it yet.
fn verdict(pod: &Value) -> Option<bool> {
    let status = &pod["status"];
    if status["phase"] == "Failed" {
        return Some(false);
    }
    let judged = status["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Initialized"))
        || status["containerStatuses"].as_array().is_some();
    judged.then_some(true)
}

/// register.sh running the node's kubelet until dropped (its process
/// group, which holds kubelet and the fake CRI, is stopped then).
struct Kubelet(Child);

impl Drop for Kubelet {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

fn start_kubelet(cluster: &Cluster, node: &str, taints: &[String], work: &str) -> Kubelet {
    use std::os::unix::process::CommandExt;
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port().to_string())
            .expect("a free loopback port")
    };
    let child = Command::new("bash")
        .arg(realcluster::tools_dir().join("register.sh"))
        .arg(format!("--register-with-taints={}", taints.join(",")))
        // Only a memory threshold: with the default ones a host disk less
        // than 15% free (imagefs.available) is disk pressure, and the
        // kubelet evicts the pods it admitted ("low on resource:
        // ephemeral-storage", reason Evicted), which is no verdict on taints.
        .arg("--eviction-hard=memory.available<1Mi")
        .env("RC_DIR", &cluster.dir)
        .env("NODE_NAME", node)
        .env("WORK", work)
        .env("SETTLE", "600")
        .env("TIMEOUT", "60")
        .env("KUBELET_PORT", free())
        .env("KUBELET_HEALTHZ_PORT", free())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("running register.sh");
    Kubelet(child)
}

fn create(cluster: &Cluster, path: &str, body: &Value) {
    let (code, out) = cluster.request("POST", path, "application/json", &body.to_string());
    assert!(code == 201 || code == 409, "POST {path}: {code} {out}");
}

#[test]
fn tolerations_match_as_the_real_kubelet_admits() {
    if realcluster::unavailable().is_some() {
        return;
    }
    let seed = std::env::var("PLAN_TOLERATIONS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("plan_tolerations: seed {seed} (PLAN_TOLERATIONS_SEED={seed} replays it)");
    let mut rng = Rng(seed);
    let cluster = realcluster::cluster();
    let node = NODES[0];
    let t0 = Instant::now();
    let work = tempfile::tempdir().unwrap();
    let taints = random_taints(&mut rng);
    let serial = realcluster::one_kubelet_at_a_time();
    cluster.delete_node(node);
    let kubelet = start_kubelet(cluster, node, &taints, &work.path().display().to_string());
    // The Node as stored, with its NoExecute taints.
    let deadline = Instant::now() + Duration::from_secs(60);
    let stored = loop {
        if let Some(n) = cluster
            .node(node)
            .filter(|n| n["spec"]["taints"].is_array())
        {
            break n;
        }
        assert!(
            Instant::now() < deadline,
            "seed {seed}: the kubelet did not register {node} with {taints:?} (see {})",
            work.path().display()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let node_taints: Vec<Taint> = stored["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(taint_of)
        .collect();
    create(
        cluster,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
    );
    // No controller-manager here: the ServiceAccount admission wants the
    // namespace's default account to exist.
    create(
        cluster,
        &format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts"),
        &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
    );
    let pods_path = format!("/api/v1/namespaces/{NAMESPACE}/pods");
    let mut names = Vec::new();
    for i in 0..PODS {
        let name = format!("p{seed:x}-{i}");
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"nodeName": node, "automountServiceAccountToken": false,
                "containers": [{"name": "c", "image": "example.invalid/pause"}],
                "tolerations": random_tolerations(&mut rng)}});
        let (code, out) = cluster.request("POST", &pods_path, "application/json", &pod.to_string());
        assert_eq!(code, 201, "seed {seed}: POST pod {pod}: {out}");
        names.push(name);
    }
    // The kubelet's verdicts, pods as stored (tolerations the API server's
    // admission added, e.g. DefaultTolerationSeconds', included).
    let deadline = Instant::now() + Duration::from_secs(90);
    let pods: Vec<Value> = loop {
        let (code, body) = cluster.get(&pods_path);
        assert_eq!(code, 200, "{body}");
        let list: Value = serde_json::from_str(&body).expect("a PodList");
        let ours: Vec<Value> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| names.iter().any(|n| p["metadata"]["name"] == n.as_str()))
            .cloned()
            .collect();
        let judged = ours.iter().filter(|p| verdict(p).is_some()).count();
        if ours.len() == PODS && judged == PODS {
            break ours;
        }
        assert!(
            Instant::now() < deadline,
            "seed {seed}: the kubelet judged {judged} of {PODS} pods (see {})",
            work.path().display()
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    drop(kubelet);
    drop(serial);
    let noexecute: Vec<Taint> = node_taints
        .iter()
        .filter(|t| t.effect == TaintEffect::NoExecute)
        .cloned()
        .collect();
    let swap = |e: &str| match e {
        "NoExecute" => "NoSchedule".to_string(),
        "NoSchedule" => "NoExecute".to_string(),
        other => other.to_string(),
    };
    let as_noschedule: Vec<Taint> = noexecute
        .iter()
        .map(|t| Taint {
            effect: TaintEffect::NoSchedule,
            ..t.clone()
        })
        .collect();
    let (mut admitted, mut disagree) = (0, Vec::new());
    for pod in &pods {
        let kubelet_admits = verdict(pod) == Some(true);
        // Rejected for another reason: not a verdict on the taints.
        assert!(
            kubelet_admits || pod["status"]["reason"] == "TaintToleration",
            "seed {seed}: the kubelet rejected a pod for another reason than its taints: {}",
            pod["status"]
        );
        admitted += usize::from(kubelet_admits);
        let tolerations: Vec<Toleration> = pod["spec"]["tolerations"]
            .as_array()
            .into_iter()
            .flatten()
            .map(Toleration::from_object)
            .collect();
        let ours = kube::untolerated(&noexecute, &tolerations).is_empty();
        // The same matching decides NoSchedule: the taints and the
        // tolerations' effects swapped, the answer must not change.
        let swapped: Vec<Toleration> = tolerations
            .iter()
            .map(|t| Toleration {
                effect: swap(&t.effect),
                ..t.clone()
            })
            .collect();
        let ours_noschedule = kube::untolerated(&as_noschedule, &swapped).is_empty();
        // And the eviction controller's view keeps a pod the kubelet admits
        // unless a tolerationSeconds runs out.
        let eviction = kube::noexecute_eviction(&node_taints, &tolerations);
        let eviction_agrees = kubelet_admits == (eviction != Eviction::Now)
            || (kubelet_admits
                && tolerations
                    .iter()
                    .any(|t| t.seconds.is_some_and(|s| s <= 0)));
        if ours != kubelet_admits || ours_noschedule != kubelet_admits || !eviction_agrees {
            disagree.push(format!(
                "kubelet {} (reason {:?}), ours {ours}, NoSchedule {ours_noschedule}, \
                 eviction {eviction:?}: tolerations {}",
                if kubelet_admits { "admits" } else { "rejects" },
                pod["status"]["reason"],
                pod["spec"]["tolerations"]
            ));
        }
    }
    eprintln!(
        "plan_tolerations: seed {seed}, node taints {taints:?}: kubelet admitted {admitted} of \
         {PODS} pods, {} disagreements, {:.1} s",
        disagree.len(),
        t0.elapsed().as_secs_f64()
    );
    assert!(
        disagree.is_empty(),
        "seed {seed}, node taints {:?}:\n{}",
        stored["spec"]["taints"],
        disagree.join("\n")
    );
    assert!(
        admitted > 0 && admitted < PODS,
        "seed {seed}: every pod judged alike ({admitted} of {PODS} admitted): nothing compared"
    );
    cluster.delete_node(node);
}
