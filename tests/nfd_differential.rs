//! Differential test against NFD's own rule evaluator (../shared/oracles/nfd:
//! NFD's `nodefeaturerule` package and nfd-master's rule processing, built
//! with a current Go). Seeded random NodeFeatureRule objects within the
//! subset we accept (every operator, matchAny, matchName, vars,
//! rule.matched, templates, `@` values, taints, several objects; null and
//! empty fields, which NFD's Go types read as left out) on the
//! fixture nodes: our answer is what the wrapper registers at boot (render
//! → compact form → the reduced facts read → evaluation → kubelet's
//! filter), and `explain` must say the same. NFD's answer is the oracle's on
//! `facts --json` of the same node, with each label and taint kubelet would
//! refuse left out alone (as nfd-master leaves out one it refuses; the rest
//! of its rule stays). Each difference is shrunk to a small reproduction
//! for the failure message. The generator is nfd_differential_gen.rs.

use crate::nfd_differential_gen::{Gen, Rng};
use crate::support::{nfd_oracle, readme_figures, scratch_dir};

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use kubelet_labeler::cli::render::{leave_to_nfd, node_rules};
use kubelet_labeler::node::contract::RULES_VAR;
use kubelet_labeler::node::kubelet::{self, Profile, Taint};
use kubelet_labeler::node::wrapper::plan::{self, FactsScope};
use serde_json::{Value, json};

/// Cases per run, and the seed (fixed: a failure reproduces). The last
/// `SHAPE_CASES` of them also draw null and empty fields (see `Gen::shapes`).
const CASES: usize = 1500;
const SHAPE_CASES: usize = 300;
const SEED: u64 = 0x4E46_445F_4449_4646;

pub struct Node {
    pub name: String,
    root: PathBuf,
    /// `facts --json`: what the oracle evaluates on.
    pub json: Value,
    pub flags: BTreeMap<String, Vec<String>>,
    pub attrs: BTreeMap<String, Vec<(String, String)>>,
    pub insts: BTreeMap<String, Vec<BTreeMap<String, String>>>,
}

fn cli() -> &'static str {
    env!("CARGO_BIN_EXE_kubelet-labeler")
}

/// The fixture nodes, and the trees with nfd-worker's kernel, memory,
/// network, local and cpu power files.
pub fn nodes() -> Vec<Node> {
    let mut nodes = nodes_in("tests/fixtures/nodes");
    nodes.extend(nodes_in("tests/fixtures/nfd-worker"));
    nodes
}

fn nodes_in(fixtures: &str) -> Vec<Node> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(fixtures);
    let mut roots: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("proc").is_dir())
        .collect();
    roots.sort();
    roots
        .into_iter()
        .map(|root| {
            let out = Command::new(cli())
                .args(["facts", "--json", "--root"])
                .arg(&root)
                .output()
                .unwrap();
            assert!(out.status.success(), "facts --json on {}", root.display());
            let json: Value = serde_json::from_slice(&out.stdout).unwrap();
            let obj = |k: &str| json[k].as_object().cloned().unwrap_or_default();
            let flags = obj("flags")
                .iter()
                .map(|(n, v)| {
                    let names = v["elements"].as_object().unwrap().keys().cloned();
                    (n.clone(), names.collect())
                })
                .collect();
            let strmap = |v: &Value| -> Vec<(String, String)> {
                v.as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                    .collect()
            };
            let attrs = obj("attributes")
                .iter()
                .map(|(n, v)| (n.clone(), strmap(&v["elements"])))
                .collect();
            let insts = obj("instances")
                .iter()
                .map(|(n, v)| {
                    let els = v["elements"].as_array().unwrap();
                    let els = els
                        .iter()
                        .map(|e| strmap(&e["attributes"]).into_iter().collect())
                        .collect();
                    (n.clone(), els)
                })
                .collect();
            Node {
                name: root.file_name().unwrap().to_string_lossy().into_owned(),
                root,
                json,
                flags,
                attrs,
                insts,
            }
        })
        .collect()
}

/// What the wrapper registers, as labels and taints.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Answer {
    labels: BTreeMap<String, String>,
    taints: Vec<(String, String, String)>,
}

impl Answer {
    /// NFD's answer with what kubelet would refuse left out, each label and
    /// taint alone.
    fn from_oracle(v: &Value) -> Answer {
        let (labels, taints) = nfd_oracle::kubelet_accepted(v, Profile::Upstream);
        Answer { labels, taints }
    }

    fn from_ours(labels: &[(String, String)], taints: &[Taint]) -> Answer {
        Answer {
            labels: labels.iter().cloned().collect(),
            taints: taints
                .iter()
                .map(|t| {
                    (
                        t.key.clone(),
                        t.value.clone(),
                        t.effect.as_str().to_string(),
                    )
                })
                .collect(),
        }
    }
}

/// Our side of one case.
struct Ours {
    answer: Answer,
    /// Rules left out (an evaluation error).
    left_out: BTreeSet<String>,
    /// Labels and taints left out alone because kubelet would refuse them.
    refused: usize,
}

fn yaml_of(objects: &[Value]) -> String {
    objects
        .iter()
        .map(|o| {
            json!({
                "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
                "kind": "NodeFeatureRule",
                "metadata": { "name": o["name"] },
                "spec": { "rules": o["rules"] },
            })
            .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// Render's reading and compact form, then the wrapper's evaluation at
/// boot and explain's; Err is a refusal or a disagreement between them.
fn ours(node: &Node, objects: &[Value], scratch: &Path) -> Result<Ours, String> {
    ours_leaving(node, objects, &[], scratch)
}

/// [`ours`] with `--leave-to-nfd` for each of `leave`.
fn ours_leaving(
    node: &Node,
    objects: &[Value],
    leave: &[String],
    scratch: &Path,
) -> Result<Ours, String> {
    let file = scratch.join("rules.yaml");
    std::fs::write(&file, yaml_of(objects)).unwrap();
    let rules = leave_to_nfd::read_rule_files_leaving(&[&file], Profile::Upstream, leave)
        .map(|read| read.rules)
        .map_err(|e| format!("render refused: {e:#}"))?;
    let compact = node_rules::compile(&rules).map_err(|e| format!("render refused: {e:#}"))?;
    let env: Vec<(OsString, OsString)> = vec![(RULES_VAR.into(), compact.into())];
    let argv: Vec<OsString> = vec!["/usr/bin/kubelet".into()];
    let boot = plan::collect(&env, &argv, &node.root, Profile::Upstream, FactsScope::Used);
    let explain = plan::collect(
        &env,
        &argv,
        &node.root,
        Profile::Upstream,
        FactsScope::WholeElements,
    );
    let additions = |c: &plan::Collected| {
        c.additions
            .as_ref()
            .map_err(|e| format!("{e:#}"))
            .map(|a| a.clone().unwrap_or_default())
    };
    let a = additions(&boot)?;
    if additions(&explain)? != a {
        return Err(format!(
            "explain and boot differ: explain {:?}, boot {a:?}",
            additions(&explain)
        ));
    }
    let strip = |c: &plan::Collected| -> Vec<String> {
        c.rules
            .iter()
            .map(|r| {
                format!(
                    "{} {} {:?} {:?} {:?}",
                    r.name, r.matched, r.labels, r.taints, r.left_out
                )
            })
            .collect()
    };
    if strip(&boot) != strip(&explain) {
        return Err(format!(
            "explain's rules differ from boot's: {:?} vs {:?}",
            strip(&explain),
            strip(&boot)
        ));
    }
    // explain's per-rule labels, merged in order over the kept rules, are
    // what is registered.
    let mut merged: BTreeMap<String, String> = BTreeMap::new();
    for r in boot.rules.iter().filter(|r| r.left_out.is_none()) {
        merged.extend(r.labels.iter().cloned());
    }
    let registered: BTreeMap<String, String> = a.labels.iter().cloned().collect();
    if merged != registered {
        return Err(format!(
            "explain's rules give {merged:?}, the node registers {registered:?}"
        ));
    }
    if let Some(e) = kubelet::validate_labels(&a.labels, Profile::Upstream).first() {
        return Err(format!("we would give kubelet a label it refuses: {e}"));
    }
    let left_out = boot
        .rules
        .iter()
        .filter(|r| r.matched && r.left_out.is_some())
        .map(|r| r.name.clone())
        .collect();
    let refused = boot
        .notes
        .iter()
        .filter(|n| n.contains("left out alone"))
        .count();
    Ok(Ours {
        answer: Answer::from_ours(&a.labels, &a.taints),
        left_out,
        refused,
    })
}

fn oracle_input(node: &Node, objects: &[Value], without: &BTreeSet<String>) -> Value {
    let objects: Vec<Value> = objects
        .iter()
        .map(|o| {
            let rules: Vec<Value> = o["rules"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| !without.contains(r["name"].as_str().unwrap()))
                .cloned()
                .collect();
            json!({ "name": o["name"], "rules": rules })
        })
        .collect();
    json!({ "features": node.json, "objects": objects })
}

/// None when we agree with one of NFD's outcomes, else what differs.
fn compare(
    node: &Node,
    objects: &[Value],
    ours: &Result<Ours, String>,
    oracle: &Value,
) -> Option<String> {
    let ours = match ours {
        Err(e) => return Some(e.clone()),
        Ok(o) => o,
    };
    if let Some(inv) = oracle["invalid"].as_array().filter(|a| !a.is_empty()) {
        return Some(format!("we accept what NFD cannot compile: {inv:?}"));
    }
    let outcomes = nfd_oracle::outcomes(oracle);
    if outcomes
        .iter()
        .any(|o| Answer::from_oracle(o) == ours.answer)
    {
        return None;
    }
    let _ = (node, objects);
    let nfd = Answer::from_oracle(outcomes[0]);
    let ours_l = &ours.answer.labels;
    let mut what = Vec::new();
    if nfd.labels.keys().any(|k| !ours_l.contains_key(k)) {
        what.push("NFD gives labels we do not");
    }
    if ours_l.keys().any(|k| !nfd.labels.contains_key(k)) {
        what.push("we give labels NFD does not");
    }
    if ours_l
        .iter()
        .any(|(k, v)| nfd.labels.get(k).is_some_and(|n| n != v))
    {
        what.push("label values differ");
    }
    if nfd.taints != ours.answer.taints {
        what.push("taints differ");
    }
    Some(format!(
        "{}\nwe register {:?}\nNFD gives {}{}",
        what.join(", "),
        ours.answer,
        outcomes
            .iter()
            .map(|o| format!("{:?} (errors {})", Answer::from_oracle(o), o["errors"]))
            .collect::<Vec<_>>()
            .join("\n  or "),
        if ours.left_out.is_empty() {
            String::new()
        } else {
            format!("\n(with rules {:?} left out, as we did)", ours.left_out)
        }
    ))
}

/// Run one case on both sides (own oracle process: for shrinking).
fn check_one(oracle: &Path, node: &Node, objects: &[Value], scratch: &Path) -> Option<String> {
    let ours = ours(node, objects, scratch);
    let without = ours
        .as_ref()
        .map(|o| o.left_out.clone())
        .unwrap_or_default();
    let answer = nfd_oracle::run(oracle, &[oracle_input(node, objects, &without)]);
    compare(node, objects, &ours, &answer[0])
}

/// Smaller variants of a case: fewer objects, rules, and rule parts.
fn shrink_steps(objects: &[Value]) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for i in 0..objects.len() {
        if objects.len() > 1 {
            let mut v = objects.to_vec();
            v.remove(i);
            out.push(v);
        }
        let rules = objects[i]["rules"].as_array().unwrap();
        for j in 0..rules.len() {
            if rules.len() > 1 {
                let mut v = objects.to_vec();
                v[i]["rules"].as_array_mut().unwrap().remove(j);
                out.push(v);
            }
            let rule = rules[j].as_object().unwrap();
            for key in rule.keys().filter(|k| *k != "name") {
                let mut v = objects.to_vec();
                v[i]["rules"][j].as_object_mut().unwrap().remove(key);
                out.push(v);
                // One entry less of a list or map.
                let field = &rule[key];
                let n = field
                    .as_array()
                    .map(Vec::len)
                    .or(field.as_object().map(|o| o.len()))
                    .unwrap_or(0);
                for k in 0..n {
                    if n < 2 {
                        break;
                    }
                    let mut v = objects.to_vec();
                    let f = &mut v[i]["rules"][j][key];
                    if let Some(a) = f.as_array_mut() {
                        a.remove(k);
                    } else if let Some(o) = f.as_object_mut() {
                        let name = o.keys().nth(k).unwrap().clone();
                        o.remove(&name);
                    }
                    out.push(v);
                }
            }
            // Fewer expressions in a term.
            for (t, term) in rule
                .get("matchFeatures")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let exprs = term.get("matchExpressions").and_then(Value::as_object);
                for name in exprs.into_iter().flat_map(|e| e.keys()) {
                    if exprs.unwrap().len() < 2 {
                        break;
                    }
                    let mut v = objects.to_vec();
                    v[i]["rules"][j]["matchFeatures"][t]["matchExpressions"]
                        .as_object_mut()
                        .unwrap()
                        .remove(name);
                    out.push(v);
                }
            }
        }
    }
    out
}

/// A difference's first line with what varies from case to case blurred.
fn kind_of(why: &str) -> String {
    let line = why.lines().next().unwrap_or("");
    let line = match line.strip_prefix("render refused: ") {
        Some(rest) => format!("render refused: {}", rest.rsplit(": ").next().unwrap_or("")),
        None => line.to_string(),
    };
    line.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .take(90)
        .collect()
}

fn shrink(oracle: &Path, node: &Node, objects: &[Value], scratch: &Path) -> (Vec<Value>, String) {
    let mut cur = objects.to_vec();
    let mut why = check_one(oracle, node, &cur, scratch).unwrap_or_default();
    'outer: for _ in 0..200 {
        for cand in shrink_steps(&cur) {
            if let Some(w) = check_one(oracle, node, &cand, scratch) {
                cur = cand;
                why = w;
                continue 'outer;
            }
        }
        break;
    }
    (cur, why)
}

/// The README states how many cases run, and how many draw null shapes.
#[test]
fn the_readme_states_the_case_counts() {
    readme_figures::assert_docs_say(&format!(
        "{} seeded random NodeFeatureRule sets",
        readme_figures::with_commas(CASES)
    ));
    readme_figures::assert_docs_say(&format!(
        "{} of them also with null and empty fields",
        readme_figures::with_commas(SHAPE_CASES)
    ));
}

#[test]
fn rules_give_what_nfd_gives() {
    differential(SEED, CASES, SHAPE_CASES, false);
}

/// Issue 22 item 18: taints of one key and effect with different values
/// from rules across several objects; nfd-master applies them in its order
/// (objects by name, rules in order), the last value winning in the first
/// one's place. Another seed, taints drawn from a small pool.
#[test]
fn taints_of_one_key_and_effect_as_nfd_applies_them() {
    differential(0x5441_494E_5453_0018, 400, 0, true);
}

/// Rule files of our own with the features and operators of NFD's sample
/// rule files (deployment/nodefeaturerule/samples/*.yaml and
/// examples/nodefeaturerule.yaml: kernel.config, kernel.loadedmodule,
/// cpu.cstate/pstate, local.label, ...) on the trees that hold nfd-worker's
/// files (tests/fixtures/nfd-worker): every file renders, and on every tree
/// the wrapper's answer is NFD's.
#[test]
fn sample_like_rule_files_give_what_nfd_gives() {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nfd-oracle-samples");
    std::fs::create_dir_all(&out_dir).unwrap();
    let Some(oracle) = nfd_oracle::build(&out_dir) else {
        return;
    };
    let nodes = nodes_in("tests/fixtures/nfd-worker");
    assert!(nodes.len() >= 4, "nfd-worker trees missing");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nfd-worker/rules");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 5, "rule files missing in {}", dir.display());
    let scratch = tempfile::tempdir().unwrap();
    let (mut failures, mut labels, mut taints) = (Vec::new(), 0, 0);
    for file in &files {
        let before = labels + taints;
        let doc: Value = serde_saphyr::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let objects =
            vec![json!({ "name": doc["metadata"]["name"], "rules": doc["spec"]["rules"] })];
        for node in &nodes {
            let o = ours(node, &objects, scratch.path());
            let without = o.as_ref().map(|o| o.left_out.clone()).unwrap_or_default();
            let answer = nfd_oracle::run(&oracle, &[oracle_input(node, &objects, &without)]);
            if let Ok(o) = &o {
                labels += o.answer.labels.len();
                taints += o.answer.taints.len();
            }
            if let Some(why) = compare(node, &objects, &o, &answer[0]) {
                failures.push(format!("{} on {}: {why}", file.display(), node.name));
            }
        }
        if labels + taints == before {
            failures.push(format!("{} gives nothing on any tree", file.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The files must give output on these trees, not only agree on nothing.
    assert!(
        labels > 40 && taints >= 4,
        "{labels} labels, {taints} taints"
    );
}

/// Issue 27 item 4: a file with rules only NFD can apply (an extended
/// resource, annotations, a CPUID feature) renders with them left to NFD
/// (`--leave-to-nfd`), refused without; on every fixture node the boot
/// answer is NFD's on the kept rules, and it is NFD's on the whole file but
/// for what the left rules give (kept rules after them read `rule.matched`).
#[test]
fn rules_left_to_nfd_leave_nfds_answer_on_the_kept_rules() {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nfd-oracle-leave");
    std::fs::create_dir_all(&out_dir).unwrap();
    let Some(oracle) = nfd_oracle::build(&out_dir) else {
        return;
    };
    let term =
        |feature: &str, exprs: Value| json!({ "feature": feature, "matchExpressions": exprs });
    let objects = vec![
        json!({ "name": "a-site", "rules": [
            { "name": "sgx", "extendedResources": { "example.com/sgx-epc": "1" },
              "labels": { "left.example.com/sgx": "true" },
              "matchFeatures": [term("cpu.cpuid", json!({ "SSE2": { "op": "Exists" } }))] },
            { "name": "kernel", "labelsTemplate":
                "{{ range .kernel.version }}site.example.com/kernel-{{ .Name }}={{ .Value }}\n{{ end }}",
              "matchFeatures": [{ "feature": "kernel.version", "matchName": { "op": "In", "value": ["major", "minor"] } }] },
            { "name": "sst", "labels": { "left.example.com/sst": "true" },
              "matchFeatures": [term("cpu.sst", json!({ "bf.enabled": { "op": "IsTrue" } }))] },
        ]}),
        json!({ "name": "b-site", "rules": [
            { "name": "annotated", "annotations": { "example.com/seen": "yes" },
              "vars": { "left-var": "x" },
              "matchFeatures": [term("pci.device", json!({ "class": { "op": "InRegexp", "value": ["^03"] } }))] },
            { "name": "after-left", "labels": { "site.example.com/kernel-known": "true" },
              "matchFeatures": [term("rule.matched", json!({ "site.example.com/kernel-major": { "op": "Exists" } }))] },
            { "name": "gpu", "labels": { "site.example.com/gpu": "@pci.device.vendor" },
              "matchFeatures": [term("pci.device", json!({ "class": { "op": "InRegexp", "value": ["^03"] } }))] },
        ]}),
    ];
    let leave: Vec<String> = ["sgx", "a-site/sst", "annotated"]
        .map(String::from)
        .to_vec();
    let left: BTreeSet<String> = ["sgx", "sst", "annotated"].map(String::from).into();
    let scratch = tempfile::tempdir().unwrap();
    let nodes = nodes();
    let Err(refused) = ours(&nodes[0], &objects, scratch.path()) else {
        panic!("the file renders without --leave-to-nfd");
    };
    assert!(refused.contains("--leave-to-nfd"), "{refused}");
    let (mut failures, mut labels) = (Vec::new(), 0);
    for node in &nodes {
        let o = ours_leaving(node, &objects, &leave, scratch.path());
        let mut without = o.as_ref().map(|o| o.left_out.clone()).unwrap_or_default();
        without.extend(left.iter().cloned());
        let kept = nfd_oracle::run(&oracle, &[oracle_input(node, &objects, &without)]);
        if let Some(why) = compare(node, &objects, &o, &kept[0]) {
            failures.push(format!("{} (kept rules): {why}", node.name));
            continue;
        }
        let o = o.unwrap();
        labels += o.answer.labels.len();
        if !o.left_out.is_empty() {
            continue;
        }
        // NFD on the whole file, but for the left rules' own labels.
        let whole = nfd_oracle::run(&oracle, &[oracle_input(node, &objects, &BTreeSet::new())]);
        let mut nfd = Answer::from_oracle(&whole[0]);
        nfd.labels
            .retain(|k, _| !k.starts_with("left.example.com/"));
        if nfd != o.answer {
            failures.push(format!(
                "{}: we register {:?}, NFD on the whole file gives {nfd:?}",
                node.name, o.answer
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        labels >= nodes.len(),
        "{labels} labels on {} nodes",
        nodes.len()
    );
}

/// NFD creates rule.matched when a rule runs, whatever it gives: a kept
/// rule whose term answers on the set being there (DoesNotExist, here with
/// a taint) matches after join only because the left rule before it ran.
/// NFD's own evaluator shows the taint appearing with the left rule;
/// render refuses leaving that rule (and a rule with taints is never left).
#[test]
fn a_left_rule_that_creates_rule_matched_is_not_left_alone() {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nfd-oracle-leave");
    std::fs::create_dir_all(&out_dir).unwrap();
    let Some(oracle) = nfd_oracle::build(&out_dir) else {
        return;
    };
    let objects = vec![json!({ "name": "a-site", "rules": [
        { "name": "sgx", "extendedResources": { "example.com/sgx-epc": "1" },
          "matchFeatures": [{ "feature": "kernel.version",
                              "matchExpressions": { "major": { "op": "Exists" } } }] },
        { "name": "unverified",
          "taints": [{ "key": "example.com/unverified", "effect": "NoSchedule" }],
          "matchFeatures": [{ "feature": "rule.matched",
                              "matchExpressions": { "verified": { "op": "DoesNotExist" } } }] },
    ]})];
    let nodes = nodes();
    let node = &nodes[0];
    let taints = |without: &[&str]| {
        let without: BTreeSet<String> = without.iter().map(|s| s.to_string()).collect();
        let answer = nfd_oracle::run(&oracle, &[oracle_input(node, &objects, &without)]);
        Answer::from_oracle(&answer[0]).taints
    };
    assert_eq!(taints(&[]).len(), 1, "NFD on the whole file taints");
    assert!(
        taints(&["sgx"]).is_empty(),
        "NFD on the kept rule alone does not"
    );
    let scratch = tempfile::tempdir().unwrap();
    let Err(e) = ours_leaving(node, &objects, &["sgx".to_string()], scratch.path()) else {
        panic!("leaving sgx alone renders: the node would register without the taint");
    };
    assert!(e.contains("--leave-to-nfd a-site/unverified"), "{e}");
    // Nor can the tainting rule be left with it.
    let both = ["sgx".to_string(), "unverified".to_string()];
    let Err(e) = ours_leaving(node, &objects, &both, scratch.path()) else {
        panic!("a rule with taints is left");
    };
    assert!(e.contains("sets taints"), "{e}");
}

fn differential(seed: u64, cases_n: usize, shape_cases: usize, taint_pool: bool) {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nfd-oracle");
    std::fs::create_dir_all(&out_dir).unwrap();
    // One build at a time (both seeds' tests build into the same place).
    static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let built = {
        let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
        nfd_oracle::build(&out_dir)
    };
    let Some(oracle) = built else {
        return;
    };
    let nodes = nodes();
    assert!(nodes.len() >= 4, "fixture nodes missing");
    let scratch = scratch_dir();
    let mut rng = Rng(seed);
    let mut cases: Vec<(usize, Vec<Value>)> = Vec::new();
    for i in 0..cases_n {
        let n = rng.below(nodes.len());
        let mut g = Gen::new(
            Rng(rng.next() | 1),
            &nodes[n],
            (i >= cases_n - shape_cases).then_some(Rng((seed ^ ((i as u64) << 1)) | 1)),
            taint_pool,
        );
        cases.push((n, g.objects()));
    }
    let ours: Vec<Result<Ours, String>> = cases
        .iter()
        .map(|(n, objs)| ours(&nodes[*n], objs, scratch.path()))
        .collect();
    let inputs: Vec<Value> = cases
        .iter()
        .zip(&ours)
        .map(|((n, objs), o)| {
            let without = o.as_ref().map(|o| o.left_out.clone()).unwrap_or_default();
            oracle_input(&nodes[*n], objs, &without)
        })
        .collect();
    let answers = nfd_oracle::run(&oracle, &inputs);
    // The left-out rules must be ones whose output kubelet would refuse:
    // NFD with them gives such a label or taint.
    let with_all: Vec<Value> = cases
        .iter()
        .zip(&ours)
        .filter(|(_, o)| o.as_ref().is_ok_and(|o| !o.left_out.is_empty()))
        .map(|((n, objs), _)| oracle_input(&nodes[*n], objs, &BTreeSet::new()))
        .collect();
    let full = nfd_oracle::run(&oracle, &with_all);
    let mut failures = Vec::new();
    for a in &full {
        let refused = nfd_oracle::outcomes(a).iter().all(|o| {
            let ans = Answer::from_oracle(o);
            let labels: Vec<(String, String)> = ans.labels.into_iter().collect();
            !kubelet::validate_labels(&labels, Profile::Upstream).is_empty()
        });
        if !refused {
            failures.push(format!(
                "a rule was left out though kubelet takes all NFD gives: {}",
                a["labels"]
            ));
        }
    }
    let (mut matched, mut labels, mut taints, mut alternatives) = (0, 0, 0, 0);
    let (mut left_out, mut over_budget) = (0, 0);
    // Differences by kind (first line, numbers and paths blurred): the
    // first case of each kind is shrunk and shown.
    let mut kinds: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (i, ((n, objs), (o, a))) in cases.iter().zip(ours.iter().zip(&answers)).enumerate() {
        if let Ok(o) = o {
            matched += usize::from(!o.answer.labels.is_empty() || !o.answer.taints.is_empty());
            labels += o.answer.labels.len();
            taints += o.answer.taints.len();
            left_out += o.refused;
        }
        alternatives += usize::from(a["outcomes"].as_u64().unwrap_or(1) > 1);
        // Render's work budget (tests/rules_budget.rs) is a limit of ours
        // that NFD does not have: a case past it says nothing about the
        // evaluation, so it is not compared (and must stay rare, below).
        if o.as_ref()
            .is_err_and(|e| e.starts_with("render refused: ") && e.contains("units of work"))
        {
            over_budget += 1;
            continue;
        }
        if let Some(why) = compare(&nodes[*n], objs, o, a) {
            kinds.entry(kind_of(&why)).or_insert((0, i)).0 += 1;
        }
    }
    if taint_pool {
        // The pool must give one key and effect several values in a case.
        let colliding = cases
            .iter()
            .filter(|(_, objs)| {
                let mut seen: BTreeMap<String, String> = BTreeMap::new();
                objs.iter()
                    .flat_map(|o| o["rules"].as_array().cloned().unwrap_or_default())
                    .flat_map(|r| r["taints"].as_array().cloned().unwrap_or_default())
                    .any(|t| {
                        let key = format!("{}:{}", t["key"], t["effect"]);
                        let value = t["value"].to_string();
                        seen.insert(key, value.clone())
                            .is_some_and(|old| old != value)
                    })
            })
            .count();
        assert!(
            colliding > cases_n / 10,
            "only {colliding} cases with colliding taints"
        );
    }
    let differing: usize = kinds.values().map(|k| k.0).sum();
    let mut by_count: Vec<(&String, &(usize, usize))> = kinds.iter().collect();
    by_count.sort_by_key(|(_, (count, _))| std::cmp::Reverse(*count));
    for (kind, (count, i)) in by_count.into_iter().take(8) {
        let (n, objs) = &cases[*i];
        let (small, why) = shrink(&oracle, &nodes[*n], objs, scratch.path());
        failures.push(format!(
            "{count} cases like case {i} ({kind}); on node {}: {why}\nreproduction:\n{}",
            nodes[*n].name,
            yaml_of(&small)
        ));
    }
    eprintln!(
        "nfd differential: {cases_n} cases (seed {seed:#x}), {differing} differ; {matched} gave \
         output ({labels} labels, {taints} taints), {left_out} labels or taints kubelet refuses \
         left out alone, \
         {alternatives} with several NFD outcomes, {over_budget} past render's work budget"
    );
    assert!(
        over_budget * 100 <= cases_n,
        "{over_budget} of {cases_n} cases past render's work budget: the generator makes too \
         many rule sets render refuses"
    );
    assert!(
        failures.is_empty(),
        "{differing} of {cases_n} cases differ from NFD (seed {seed:#x}); one of each kind, shrunk:\n\n{}",
        failures.join("\n\n")
    );
    // The generator must exercise matches, labels and taints, not only errors.
    assert!(
        matched > cases_n / 3
            && taints > cases_n / 20
            // The taint pool's run is about colliding taints; the main
            // run's 1,500 cases are the ones that must give labels and
            // leave some out (its 400 cases drew 196 labels once the Pi 3
            // fixture, with few features, joined the nodes).
            && (taint_pool || labels > cases_n / 2)
            && (taint_pool || left_out * CASES > 5 * cases_n),
        "too little output"
    );
}
