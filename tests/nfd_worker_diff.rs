//! `kubelet-labeler facts --json` against nfd-worker's own feature sources
//! (kernel, memory, network, local, and cpu's cstate/pstate/coprocessor/
//! rdt/security/sst, the CPUID parts replayed from each tree's
//! kubelet-labeler.cpuid, the `host` tree's recorded from a real CPU):
//! on each node tree in tests/fixtures/nfd-worker (make-trees.sh), the
//! features must be those NFD's code discovered there, recorded as
//! `<tree>.nfd.json` by tests/support/nfd-worker/goldens.sh from an NFD
//! snapshot (commits in SOURCES). The goldens are NFD's output, so this
//! runs in CI without NFD's source or Go.

use crate::support::{bin, repo};

use std::path::{Path, PathBuf};

use serde_json::Value;

fn trees_dir() -> PathBuf {
    repo().join("tests/fixtures/nfd-worker")
}

/// The features NFD's sources give that these goldens cover: every one of
/// these domains, and cpu's features other than cpuid, model and topology
/// (read from /proc/cpuinfo and checked elsewhere).
fn covered(name: &str) -> bool {
    ["kernel.", "memory.", "network.", "local."]
        .iter()
        .any(|d| name.starts_with(d))
        || [
            "cpu.cstate",
            "cpu.pstate",
            "cpu.coprocessor",
            "cpu.rdt",
            "cpu.security",
            "cpu.sst",
        ]
        .contains(&name)
}

fn facts_json(root: &Path) -> Value {
    let out = bin()
        .args(["facts", "--json", "--root"])
        .arg(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "facts on {}: {}",
        root.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn facts_are_what_nfd_workers_sources_discover() {
    let mut goldens: Vec<PathBuf> = std::fs::read_dir(trees_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".nfd.json"))
        .collect();
    goldens.sort();
    assert!(
        goldens.len() >= 4,
        "goldens missing in {}",
        trees_dir().display()
    );
    let mut failures = Vec::new();
    // Each feature, with the trees where NFD gives it something.
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    for golden in &goldens {
        let name = golden.file_name().unwrap().to_string_lossy();
        let tree = trees_dir().join(name.trim_end_matches(".nfd.json"));
        let nfd: Value = serde_json::from_slice(&std::fs::read(golden).unwrap()).unwrap();
        let ours = facts_json(&tree);
        for kind in ["flags", "attributes", "instances"] {
            let empty = serde_json::Map::new();
            let n = nfd[kind].as_object().unwrap_or(&empty);
            let o = ours[kind].as_object().unwrap_or(&empty);
            let names: std::collections::BTreeSet<&String> =
                n.keys().chain(o.keys().filter(|k| covered(k))).collect();
            for f in names {
                let (nv, ov) = (n.get(f), o.get(f));
                if nv != ov {
                    failures.push(format!(
                        "{} {kind} {f}:\n  nfd-worker: {}\n  ours:       {}",
                        tree.display(),
                        nv.map_or("absent".into(), Value::to_string),
                        ov.map_or("absent".into(), Value::to_string)
                    ));
                }
                let has = nv.and_then(|v| v.get("elements")).is_some_and(|e| {
                    e.as_object().is_some_and(|m| !m.is_empty())
                        || e.as_array().is_some_and(|a| !a.is_empty())
                });
                *seen.entry(f.clone()).or_default() += usize::from(has);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The trees must hold each source's files: NFD finds each new feature
    // on some tree (cpu.coprocessor is ppc64le's, empty on these x86 and
    // arm trees, as NFD has it there).
    for f in [
        "kernel.config",
        "kernel.loadedmodule",
        "kernel.enabledmodule",
        "kernel.selinux",
        "kernel.kvm",
        "cpu.cstate",
        "cpu.pstate",
        "cpu.rdt",
        "cpu.security",
        "cpu.sst",
        "memory.swap",
        "memory.hugepages",
        "network.virtual",
        "local.label",
        "local.feature",
    ] {
        assert!(
            seen.get(f).is_some_and(|n| *n > 0),
            "no tree gives {f} anything: {seen:?}"
        );
    }
}

/// The goldens say which NFD they came from.
#[test]
fn the_goldens_name_their_nfd_commit() {
    let sources = std::fs::read_to_string(trees_dir().join("SOURCES")).unwrap();
    assert!(
        sources
            .lines()
            .any(|l| l.starts_with("kubernetes-sigs/node-feature-discovery ")
                && l.split(' ').nth(1).is_some_and(|c| c.len() == 40)),
        "{sources}"
    );
    // And which klauspost/cpuid (SGX, TDX guests) the CPUID sets used.
    assert!(
        sources.lines().any(|l| l.starts_with("klauspost/cpuid ")
            && l.split(' ').nth(1).is_some_and(|c| c.len() == 40)),
        "{sources}"
    );
}

/// On `/` the CPUID parts come from this CPU: the three sets are there
/// (empty on a CPU without the features, never left out), where a tree
/// without a recording leaves cpu.rdt and cpu.sst out.
#[test]
fn the_cpuid_sets_come_from_this_cpu_on_the_root() {
    let host = facts_json(Path::new("/"));
    for f in ["cpu.rdt", "cpu.security", "cpu.sst"] {
        assert!(
            host["attributes"][f]["elements"].is_object(),
            "{f} missing on /: {}",
            host["attributes"]
        );
    }
    let tree = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tree.path().join("proc")).unwrap();
    let bare = facts_json(tree.path());
    assert!(bare["attributes"]["cpu.rdt"].is_null(), "{bare}");
    assert!(bare["attributes"]["cpu.sst"].is_null(), "{bare}");
    assert_eq!(
        bare["attributes"]["cpu.security"]["elements"],
        serde_json::json!({})
    );
}

/// `facts --record-cpuid` in a tree holding this node's files for these
/// sets stands in for this CPU: the tree gives what `/` gives.
#[cfg(target_arch = "x86_64")]
#[test]
fn a_recording_of_this_cpu_gives_what_the_cpu_gives() {
    let out = bin().args(["facts", "--record-cpuid"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = tempfile::tempdir().unwrap();
    let t = tree.path();
    std::fs::write(t.join("kubelet-labeler.cpuid"), &out.stdout).unwrap();
    let mut files = vec![
        PathBuf::from("/proc/self/mountinfo"),
        "/sys/module/kvm_intel/parameters/tdx".into(),
        "/sys/fs/cgroup/misc.capacity".into(),
        "/sys/fs/cgroup/misc/misc.capacity".into(),
        "/sys/fs/resctrl/info/L3/num_closids".into(),
    ];
    for p in ["sev", "sev_es", "sev_snp"] {
        files.push(format!("/sys/module/kvm_amd/parameters/{p}").into());
    }
    for cpu in std::fs::read_dir("/sys/bus/cpu/devices")
        .into_iter()
        .flatten()
    {
        let cpu = cpu.unwrap().file_name();
        files.push(
            Path::new("/sys/bus/cpu/devices")
                .join(cpu)
                .join("cpufreq/base_frequency"),
        );
    }
    for f in files {
        if let Ok(bytes) = std::fs::read(&f) {
            let to = t.join(f.strip_prefix("/").unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::write(to, bytes).unwrap();
        }
    }
    // resctrl's directory, where this node has it.
    if Path::new("/sys/fs/resctrl").is_dir() {
        std::fs::create_dir_all(t.join("sys/fs/resctrl")).unwrap();
    }
    let sets =
        |v: &Value| ["cpu.rdt", "cpu.security", "cpu.sst"].map(|f| v["attributes"][f].clone());
    let host = facts_json(Path::new("/"));
    assert_eq!(sets(&facts_json(t)), sets(&host));
    assert!(
        sets(&host).iter().all(Value::is_object),
        "{}",
        host["attributes"]
    );
}

/// explain on a tree without a CPUID recording says that rules on the
/// CPUID sets see them absent; with one (or with rules on other features)
/// it says nothing.
#[test]
fn explain_says_when_a_tree_has_no_cpuid_recording() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let unit = root.join("etc/systemd/system/kubelet.service");
    std::fs::create_dir_all(unit.parent().unwrap()).unwrap();
    std::fs::write(&unit, "[Service]\nExecStart=/usr/bin/kubelet\n").unwrap();
    let rules = |feature: &str| {
        let file = dir.path().join(format!("{feature}.yaml"));
        std::fs::write(
            &file,
            format!(
                "apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {{name: r}}\n\
                 spec:\n  rules:\n    - name: r\n      labels: {{example.com/x: \"y\"}}\n      \
                 matchFeatures:\n        - feature: {feature}\n          matchName: {{op: Exists}}\n"
            ),
        )
        .unwrap();
        file
    };
    let note = |tree: &str, rules: &Path| {
        let out = bin()
            .args(["explain", "--root"])
            .arg(&root)
            .arg("--facts-root")
            .arg(trees_dir().join(tree))
            .arg("--rules")
            .arg(rules)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        // 1: the tree has no wrapper installed; the preview is still made.
        assert!(text.contains("facts: read under"), "{text}");
        text.contains("has no kubelet-labeler.cpuid")
    };
    assert!(note("arm", &rules("cpu.rdt")));
    assert!(note("arm", &rules("cpu.security")));
    assert!(!note("intel", &rules("cpu.rdt")));
    assert!(!note("arm", &rules("cpu.cstate")));
}
