//! Our label and taint checks (`validate`, and the wrapper's, which are the
//! same functions) against the real kubelet and the real API server, on a
//! generated corpus: label keys (prefixes, namespaces, lengths, case,
//! Unicode, whitespace), values, duplicates, taint specs, for both profiles.
//!
//! - where we accept, the real kubelet accepts (`validate.sh`: its own flag
//!   and config validation) and so does the API server (a dry-run create of
//!   the Node kubelet would post, with the node's own certificate: Node
//!   authorization and NodeRestriction apply);
//! - where we refuse and kubelet accepts, the API server must refuse the Node
//!   (stricter is right only there);
//! - one real registration of every item all three accept: the Node as
//!   stored carries each label and taint as we parsed it.

use crate::support::realcluster;

use std::collections::BTreeMap;
use std::process::Command;

use kubelet_labeler::cli::validate::validate_kubelet_args;
use kubelet_labeler::node::kubelet::Profile;

const DRY_RUN_NODE: &str = "rc-corpus";
const REGISTERED_NODE: &str = "rc-corpus-reg";
/// Every node name these tests register (each gets a client certificate).
pub const NODES: [&str; 2] = [DRY_RUN_NODE, REGISTERED_NODE];

/// Label keys: valid and invalid names, prefixes, namespaces, lengths.
fn keys() -> Vec<String> {
    let mut k: Vec<String> = [
        "a",
        "A",
        "MyName",
        "my.name",
        "123-abc",
        "a_b",
        "a-b.c_d",
        "-a",
        "a-",
        "_a",
        "a_",
        ".a",
        "a.",
        "a b",
        "a/b/c",
        "/a",
        "a/",
        "",
        "example.com/a",
        "Example.com/a",
        "example.com/A_b",
        "exa_mple.com/a",
        "example..com/a",
        "-example.com/a",
        "example-.com/a",
        "example.com./a",
        "1.2.3.4/a",
        "xn--bcher-kva.example/a",
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "kubernetes.io/role",
        "kubernetes.io/Hostname",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/rack",
        "failure-domain.beta.kubernetes.io/zone",
        "node.kubernetes.io/worker-gpu",
        "feature.node.kubernetes.io/pci-10de.present",
        "a.b.node.kubernetes.io/x",
        "xnode.kubernetes.io/x",
        "kubelet.kubernetes.io/x",
        "x.kubelet.kubernetes.io/x",
        "app.kubernetes.io/name",
        "node-role.kubernetes.io/worker",
        "node-role.kubernetes.io/master",
        "node-role.kubernetes.io/control-plane",
        "node-role.kubernetes.io/etcd",
        "node-role.kubernetes.io/arbiter",
        "node-role.kubernetes.io/infra",
        "node-role.kubernetes.io/Worker",
        "node-restriction.kubernetes.io/a",
        "k8s.io/a",
        "x.k8s.io/a",
        "cluster.x-k8s.io/a",
        "kubernetes.io.example.com/a",
        "notkubernetes.io/a",
        "Kubernetes.io/a",
        "node.openshift.io/os_id",
        "é",
        "example.com/é",
        "exämple.com/a",
        "\u{212A}ubernetes.io/os",
        "ａ",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Lengths at the limits: name 63/64, prefix 253/254 (one segment > 63).
    k.push(format!("example.com/{}", "n".repeat(63)));
    k.push(format!("example.com/{}", "n".repeat(64)));
    k.push("n".repeat(63));
    k.push("n".repeat(64));
    let p253 = format!(
        "{}.{}.{}.{}",
        "a".repeat(63),
        "b".repeat(63),
        "c".repeat(63),
        "d".repeat(61)
    );
    k.push(format!("{p253}/n"));
    k.push(format!("{p253}e/n"));
    k.push(format!("{}.com/n", "a".repeat(64)));
    k.push(format!("{p253}/{}", "n".repeat(63)));
    k
}

fn values() -> Vec<String> {
    let mut v: Vec<String> = [
        "",
        "x",
        "X",
        "true",
        "1.2.3",
        "a_b",
        "a-b",
        "a.b",
        "-x",
        "x-",
        "_x",
        "x_",
        ".x",
        "x.",
        "a b",
        "a=b",
        "a:b",
        "a/b",
        "é",
        "~",
        "yes",
        "0x1F",
        "bad value",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push("v".repeat(63));
    v.push("v".repeat(64));
    v
}

/// `--node-labels` values: every key with a plain value, every value with a
/// plain key and with a role key, spacing, and repeated keys.
fn label_flags() -> Vec<String> {
    let mut out = Vec::new();
    for k in keys() {
        out.push(format!("{k}=x"));
        out.push(k.clone());
    }
    for v in values() {
        for k in [
            "example.com/a",
            "node-role.kubernetes.io/master",
            "node-role.kubernetes.io/worker",
            "node.kubernetes.io/a",
        ] {
            out.push(format!("{k}={v}"));
        }
    }
    for s in [
        " a = 1 ",
        "\ta\t=\t1\t",
        "a=1, b=2",
        "a=1,,b=2",
        ",",
        " ",
        "a=1,",
        "\u{a0}a=1",
        "a=1\u{a0}",
        "a=\u{2003}1",
        "\u{85}a=1",
        "a=-bad,a=good",
        "a=good,a=-bad",
        "node-role.kubernetes.io/master=-bad,node-role.kubernetes.io/master=",
        "node-role.kubernetes.io/master=,node-role.kubernetes.io/master=-bad",
        "a=1,A=2",
        "k8s.io/a=1,k8s.io/a=",
    ] {
        out.push(s.to_string());
    }
    out
}

/// `--register-with-taints` values.
fn taint_flags() -> Vec<String> {
    let mut out: Vec<String> = [
        "k=v:NoSchedule",
        "k=v:PreferNoSchedule",
        "k=v:NoExecute",
        "k=:NoSchedule",
        "k:NoSchedule",
        "k=v:noschedule",
        "k=v:",
        "k=v",
        "k",
        "k:",
        ":NoSchedule",
        "=v:NoSchedule",
        "k=v=w:NoSchedule",
        "k=v:NoSchedule:x",
        "k=-v:NoSchedule",
        "k=v-:NoSchedule",
        "k=v w:NoSchedule",
        "k=é:NoSchedule",
        "K=v:NoSchedule",
        "example.com/k=v:NoSchedule",
        "Example.com/k=v:NoSchedule",
        "kubernetes.io/k=v:NoSchedule",
        "node.kubernetes.io/not-ready:NoSchedule",
        "node.kubernetes.io/not-ready:NoExecute",
        "node-role.kubernetes.io/master:NoSchedule",
        "a:NoSchedule,a:NoSchedule",
        "a:NoSchedule,a:NoExecute",
        "a=1:NoSchedule,a=2:NoSchedule",
        "a:NoSchedule,b:NoSchedule",
        "a:NoSchedule,",
        ",a:NoSchedule",
        " a:NoSchedule",
        "a:NoSchedule ",
        "a :NoSchedule",
        "a:NoSchedule-",
        "a-",
        "",
        "nvidia.com/gpu=true:NoSchedule",
        "\u{a0}a:NoSchedule",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for k in keys() {
        if !k.contains([',', ':', '=']) {
            out.push(format!("{k}=v:NoSchedule"));
        }
    }
    for v in values() {
        if !v.contains([',', ':']) {
            out.push(format!("t={v}:NoExecute"));
        }
    }
    out
}

/// Where unpack.sh put the real kubelet: found once, since its checksums
/// take longer than a kubelet call.
fn bin_dir() -> &'static str {
    static DIR: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let out = Command::new("bash")
            .arg(realcluster::tools_dir().join("unpack.sh"))
            .output()
            .expect("running unpack.sh");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    })
}

/// Does the real kubelet accept this flag? (validate.sh, ~0.05 s a call)
fn kubelet_accepts(flag: &str) -> (bool, String) {
    let out = Command::new("bash")
        .arg(realcluster::tools_dir().join("validate.sh"))
        .arg(flag)
        .env("BIN_DIR", bin_dir())
        // Flags taking a path (`--lock-file=1`, `--log-file=1`) make kubelet
        // create that file relative to its directory: not the checkout's.
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .output()
        .expect("running validate.sh");
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && text == "VALID", text)
}

/// The Node kubelet would post for `flag`, as our parse reads it.
fn node_object(name: &str, labels: &[String], taints: &[String]) -> serde_json::Value {
    let mut l = serde_json::Map::new();
    for (k, v) in [
        ("kubernetes.io/hostname", name),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", "amd64"),
    ] {
        l.insert(k.into(), v.into());
    }
    for kv in labels {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        l.insert(k.into(), v.into());
    }
    let t: Vec<serde_json::Value> = taints
        .iter()
        .map(|spec| {
            let (kv, effect) = spec.rsplit_once(':').unwrap();
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let mut m = serde_json::json!({"key": k, "effect": effect});
            if !v.is_empty() {
                m["value"] = v.into();
            }
            m
        })
        .collect();
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": l},
        "spec": {"taints": t},
    })
}

struct Verdicts {
    flag: String,
    ours_openshift: bool,
    ours_upstream: bool,
    kubelet: bool,
    kubelet_says: String,
    labels: Vec<String>,
    taints: Vec<String>,
}

#[test]
fn our_checks_agree_with_the_real_kubelet_and_api_server() {
    if realcluster::unavailable().is_some() {
        return;
    }
    let mut flags: Vec<String> = label_flags()
        .into_iter()
        .map(|v| format!("--node-labels={v}"))
        .collect();
    let n_labels = flags.len();
    flags.extend(
        taint_flags()
            .into_iter()
            .map(|v| format!("--register-with-taints={v}")),
    );
    flags.sort();
    flags.dedup();
    // The kubelet's verdicts, two at a time (one call per flag).
    let kubelet: Vec<(bool, String)> = std::thread::scope(|s| {
        let half = flags.len() / 2;
        let (a, b) = flags.split_at(half);
        let ha = s.spawn(|| a.iter().map(|f| kubelet_accepts(f)).collect::<Vec<_>>());
        let hb = s.spawn(|| b.iter().map(|f| kubelet_accepts(f)).collect::<Vec<_>>());
        let mut v = ha.join().unwrap();
        v.extend(hb.join().unwrap());
        v
    });
    let verdicts: Vec<Verdicts> = flags
        .iter()
        .zip(kubelet)
        .map(|(flag, (k, says))| {
            let os = validate_kubelet_args(std::slice::from_ref(flag), Profile::OpenShift);
            let up = validate_kubelet_args(std::slice::from_ref(flag), Profile::Upstream);
            Verdicts {
                flag: flag.clone(),
                ours_openshift: os.valid,
                ours_upstream: up.valid,
                kubelet: k,
                kubelet_says: says,
                labels: os.labels,
                taints: os.taints,
            }
        })
        .collect();

    let cluster = realcluster::cluster();
    let mut problems = Vec::new();
    let mut api_refused_where_kubelet_accepts = 0;
    let mut registrable = Vec::new();
    let mut agree = 0;
    for v in &verdicts {
        if v.ours_openshift == v.kubelet {
            agree += 1;
        }
        if v.ours_openshift && !v.kubelet {
            problems.push(format!(
                "{:?}: we accept, the real kubelet refuses: {}",
                v.flag, v.kubelet_says
            ));
        }
        if v.ours_upstream && !v.ours_openshift {
            problems.push(format!(
                "{:?}: the upstream profile accepts what the openshift one refuses",
                v.flag
            ));
        }
        if !v.kubelet {
            continue;
        }
        // kubelet accepts: what does the API server say to its Node?
        let ours_parse = validate_kubelet_args(std::slice::from_ref(&v.flag), Profile::OpenShift);
        let node = node_object(DRY_RUN_NODE, &ours_parse.labels, &ours_parse.taints);
        let (code, body) = cluster.post_node_as_node(DRY_RUN_NODE, &node, true);
        let api_accepts = code == 201;
        if !api_accepts && code != 422 && code != 403 {
            problems.push(format!("{:?}: API server answered {code}: {body}", v.flag));
        }
        if !api_accepts {
            api_refused_where_kubelet_accepts += 1;
        }
        match (v.ours_openshift, api_accepts) {
            (true, false) => problems.push(format!(
                "{:?}: we and kubelet accept, the API server refuses ({code}): {body}",
                v.flag
            )),
            (false, true) => problems.push(format!(
                "{:?}: we refuse, kubelet and the API server accept",
                v.flag
            )),
            (true, true) => registrable.push(v),
            (false, false) => {}
        }
    }

    // One real registration of all the accepted labels and taints (distinct
    // keys; a later item that would collide goes to no batch).
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let mut taints: Vec<String> = Vec::new();
    let mut taint_keys = std::collections::BTreeSet::new();
    for v in &registrable {
        let fresh = v.labels.iter().all(|kv| {
            let k = kv.split_once('=').map_or(kv.as_str(), |(k, _)| k);
            !labels.contains_key(k)
                && !k.starts_with("kubernetes.io/")
                && !k.starts_with("beta.kubernetes.io/")
        });
        if fresh {
            for kv in &v.labels {
                let (k, val) = kv.split_once('=').unwrap_or((kv, ""));
                labels.insert(k.into(), val.into());
            }
        }
        for t in &v.taints {
            let (kv, effect) = t.rsplit_once(':').unwrap();
            let key = kv.split_once('=').map_or(kv, |(k, _)| k);
            if key != "node.kubernetes.io/not-ready"
                && taint_keys.insert((key.to_string(), effect.to_string()))
            {
                taints.push(t.clone());
            }
        }
    }
    let label_flag = format!(
        "--node-labels={}",
        labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let taint_flag = format!("--register-with-taints={}", taints.join(","));
    eprintln!(
        "registering {} labels and {} taints",
        labels.len(),
        taints.len()
    );
    let serial = realcluster::one_kubelet_at_a_time();
    let reg = Command::new("bash")
        .arg(realcluster::tools_dir().join("register.sh"))
        .arg(&label_flag)
        .arg(&taint_flag)
        .env("RC_DIR", &cluster.dir)
        .env("NODE_NAME", REGISTERED_NODE)
        .env("SETTLE", "0")
        .env("TIMEOUT", "60")
        .output()
        .expect("running register.sh");
    drop(serial);
    let reg_out: serde_json::Value = serde_json::from_slice(&reg.stdout).unwrap_or_else(|_| {
        panic!(
            "register.sh: {}{}",
            String::from_utf8_lossy(&reg.stdout),
            String::from_utf8_lossy(&reg.stderr)
        )
    });
    assert_eq!(reg_out["registered"], true, "{reg_out}");
    // register.sh's `stored_node` is {name, labels, taints}.
    let stored = &reg_out["stored_node"];
    let (stored_labels, stored_taints) = realcluster::labels_and_taints(&serde_json::json!({
        "metadata": {"labels": stored["labels"]},
        "spec": {"taints": stored["taints"]},
    }));
    for (k, v) in &labels {
        if stored_labels.get(k) != Some(v) {
            problems.push(format!(
                "label {k}={v}: stored as {:?}",
                stored_labels.get(k)
            ));
        }
    }
    for t in &taints {
        let (kv, effect) = t.rsplit_once(':').unwrap();
        let (k, val) = kv.split_once('=').unwrap_or((kv, ""));
        let want = format!("{k}={val}:{effect}");
        if !stored_taints.contains(&want) {
            problems.push(format!("taint {want}: not stored ({stored_taints:?})"));
        }
    }

    let kubelet_accepts = verdicts.iter().filter(|v| v.kubelet).count();
    let ours_accepts = verdicts.iter().filter(|v| v.ours_openshift).count();
    let stricter = verdicts
        .iter()
        .filter(|v| v.kubelet && !v.ours_openshift)
        .count();
    let upstream_stricter = verdicts
        .iter()
        .filter(|v| v.ours_openshift && !v.ours_upstream)
        .count();
    eprintln!(
        "CORPUS: {} flags ({} --node-labels, {} --register-with-taints); real kubelet accepts {kubelet_accepts}, \
         we accept {ours_accepts} (openshift profile); same verdict on {agree}; we refuse and kubelet accepts {stricter} \
         (the API server refused every one of those: {api_refused_where_kubelet_accepts} refusals where kubelet accepts in all); \
         upstream profile refuses {upstream_stricter} more (the five OpenShift role labels); \
         one registration carried {} labels and {} taints, stored as parsed",
        verdicts.len(),
        n_labels,
        verdicts.len() - n_labels,
        labels.len(),
        taints.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The corpus reaches both sides of every rule.
    assert!(stricter > 0 && upstream_stricter > 0 && kubelet_accepts < verdicts.len());
}

/// Which long flags kubelet knows, against the real one: the names its
/// `--help` lists are `known_flags::CURRENT`; it refuses every `OLDER` name
/// (we warn) and every near miss of a current name that we call unknown
/// (a letter dropped, an `s` added, the first `-` dropped or written `_`),
/// and takes every one we take.
#[test]
fn unknown_flags_as_the_real_kubelet_says() {
    use kubelet_labeler::node::kubelet::known_flags::{CURRENT, Known, OLDER, known};
    if realcluster::unavailable().is_some() {
        return;
    }
    let help = Command::new("bash")
        .arg(realcluster::tools_dir().join("validate.sh"))
        .arg("--help")
        .env("BIN_DIR", bin_dir())
        .output()
        .expect("running validate.sh --help");
    let help = String::from_utf8_lossy(&help.stdout);
    let mut listed: Vec<&str> = help
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix("-h, ")
                .or(l.strip_prefix("-v, "))
                .unwrap_or(l);
            l.strip_prefix("--")?.split([' ', '=']).next()
        })
        .collect();
    listed.sort();
    listed.dedup();
    assert_eq!(
        listed, CURRENT,
        "kubelet --help lists other flags than CURRENT"
    );

    let mut names: Vec<String> = OLDER.iter().map(|s| s.to_string()).collect();
    for n in CURRENT.iter().filter(|n| n.len() > 2) {
        names.push(n[..n.len() - 1].to_string());
        names.push(format!("{n}s"));
        if n.contains('-') {
            names.push(n.replacen('-', "", 1));
            names.push(n.replacen('-', "_", 1));
        }
    }
    names.sort();
    names.dedup();
    let says = |name: &String| {
        let (ok, text) = kubelet_accepts(&format!("--{name}=1"));
        let unknown = text.contains(&format!("unknown flag: --{name}\""));
        assert!(ok || !text.is_empty(), "--{name}: no answer");
        unknown
    };
    let kubelet: Vec<bool> = std::thread::scope(|s| {
        let (a, b) = names.split_at(names.len() / 2);
        let ha = s.spawn(|| a.iter().map(says).collect::<Vec<_>>());
        let hb = s.spawn(|| b.iter().map(says).collect::<Vec<_>>());
        let mut v = ha.join().unwrap();
        v.extend(hb.join().unwrap());
        v
    });
    let mut problems = Vec::new();
    let (mut unknown, mut taken) = (0, 0);
    for (name, kubelet_unknown) in names.iter().zip(kubelet) {
        let ours = known(&name.replace('_', "-"));
        let report = validate_kubelet_args(&[format!("--{name}=1")], Profile::Upstream);
        let ours_unknown = report.errors.iter().any(|e| e.starts_with("unknown flag:"));
        let agree = match ours {
            Known::Current => !kubelet_unknown && !ours_unknown,
            Known::Older => kubelet_unknown && !ours_unknown && !report.warnings.is_empty(),
            Known::Unknown => kubelet_unknown && ours_unknown,
        };
        if !agree {
            problems.push(format!(
                "--{name}: ours {ours:?}, kubelet unknown: {kubelet_unknown}"
            ));
        }
        unknown += usize::from(kubelet_unknown);
        taken += usize::from(!kubelet_unknown);
    }
    eprintln!(
        "FLAGS: kubelet --help lists {} (= CURRENT); {} names tried ({} OLDER, the rest near misses): \
         kubelet refuses {unknown} as unknown, takes {taken}; ours agree on all",
        CURRENT.len(),
        names.len(),
        OLDER.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(unknown > 0 && taken > 0);
}
