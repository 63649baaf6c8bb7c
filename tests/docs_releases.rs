//! docs/openshift-releases.md against the MCO's own kubelet.service templates
//! (../shared/fixtures/mco, read in place): every cell of the page's template
//! fact tables, and the summary table's label column (also README.md's copy),
//! recomputed from the templates of each branch, so that the page and the MCO
//! cannot drift apart; and the page's way to label a pool with the platform
//! alone, run through the MCO's own code (../shared/oracles/mco).

use crate::support::{mco, scratch_dir, skipped};

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const PAGE_PATH: &str = "docs/openshift-releases.md";
const PAGE: &str = include_str!("../docs/openshift-releases.md");

const ROLES: [&str; 3] = ["worker", "master", "arbiter"];

/// The facts the page states per template, by the id of its table.
const FACTS: [&str; 4] = [
    "custom-kubelet-labels",
    "kubelet-env",
    "config-dir",
    "register-with-taints",
];

/// The unit's lines without indentation and line continuation.
fn unit_lines(unit: &str) -> impl Iterator<Item = &str> {
    unit.lines()
        .map(|l| l.trim().trim_end_matches('\\').trim_end())
}

/// Whether a rendered kubelet.service has `fact`.
fn holds(fact: &str, unit: &str) -> bool {
    match fact {
        "custom-kubelet-labels" => {
            let labels: Vec<&str> = unit_lines(unit)
                .filter(|l| l.starts_with("--node-labels="))
                .collect();
            assert_eq!(labels.len(), 1, "one --node-labels= line in:\n{unit}");
            labels[0].ends_with(",${CUSTOM_KUBELET_LABELS}")
        }
        "kubelet-env" => {
            unit_lines(unit).any(|l| l == "EnvironmentFile=-/etc/kubernetes/kubelet-env")
        }
        "config-dir" => unit_lines(unit).any(|l| l == "--config-dir=/etc/openshift/kubelet.conf.d"),
        "register-with-taints" => {
            unit_lines(unit).any(|l| l.starts_with("--register-with-taints="))
        }
        other => panic!("no check for fact {other}"),
    }
}

/// One MCO branch's kubelet.service templates, as the fixtures' MANIFEST.tsv
/// lists them.
#[derive(Default)]
struct Branch {
    commit: String,
    /// role -> platform directory -> rendered unit
    units: BTreeMap<String, BTreeMap<String, String>>,
}

fn load(dir: &Path) -> BTreeMap<String, Branch> {
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).expect("reading MANIFEST.tsv");
    let mut branches: BTreeMap<String, Branch> = BTreeMap::new();
    for line in manifest.lines().filter(|l| !l.is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [branch, commit, path, _blob, fixture] = cols[..] else {
            panic!("MANIFEST.tsv: not 5 columns: {line}")
        };
        let b = branches.entry(branch.to_string()).or_default();
        assert!(
            b.commit.is_empty() || b.commit == commit,
            "MANIFEST.tsv: two commits for {branch}"
        );
        b.commit = commit.to_string();
        // templates/<role>/01-<role>-kubelet/<platform>/units/kubelet.service.yaml
        let parts: Vec<&str> = path.split('/').collect();
        let [
            "templates",
            role,
            kubelet_dir,
            platform,
            "units",
            "kubelet.service.yaml",
        ] = parts[..]
        else {
            continue;
        };
        if kubelet_dir != format!("01-{role}-kubelet") {
            continue;
        }
        assert!(
            ROLES.contains(&role),
            "MANIFEST.tsv: unknown role in {path}"
        );
        let yaml = std::fs::read_to_string(dir.join(fixture)).expect("reading a template");
        let unit = mco::fill(&mco::unit_body(&yaml));
        b.units
            .entry(role.to_string())
            .or_default()
            .insert(platform.to_string(), unit);
    }
    branches
}

/// What the page writes for `fact` on `role` at `branch`: `all`, `none`,
/// `n/a`, or the platform directories where it holds.
fn cell(branch: &Branch, role: &str, fact: &str) -> String {
    let Some(platforms) = branch.units.get(role) else {
        return "n/a".into();
    };
    let with: Vec<&str> = platforms
        .iter()
        .filter(|(_, unit)| holds(fact, unit))
        .map(|(p, _)| p.as_str())
        .collect();
    if with.len() == platforms.len() {
        "all".into()
    } else if with.is_empty() {
        "none".into()
    } else {
        with.join(", ")
    }
}

/// The summary table's label column: the roles whose templates take
/// `${CUSTOM_KUBELET_LABELS}` (`workers, masters`, `on-prem workers`, `none`).
fn label_phrase(branch: &Branch) -> String {
    let mut parts = Vec::new();
    for role in ROLES {
        match cell(branch, role, "custom-kubelet-labels").as_str() {
            "none" | "n/a" => {}
            "all" => parts.push(format!("{role}s")),
            some => parts.push(format!("{some} {role}s")),
        }
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

fn split_row(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// A markdown table's rows: the 1-based line number and the cells of each.
type Rows = Vec<(usize, Vec<String>)>;

/// The markdown table that starts at or after `from` (line index): header
/// cells and rows.
fn table_at(lines: &[&str], from: usize) -> Option<(Vec<String>, Rows)> {
    let start = (from..lines.len()).find(|&i| lines[i].trim_start().starts_with('|'))?;
    let header = split_row(lines[start]);
    let rows = lines[start + 2..]
        .iter()
        .enumerate()
        .take_while(|(_, l)| l.trim_start().starts_with('|'))
        .map(|(i, l)| (start + 3 + i, split_row(l)))
        .collect();
    Some((header, rows))
}

/// The branches of the fixtures a summary row's release names
/// (`4.14–4.16`, `4.21`, `main (4.23)`); none for `kubeadm` or a release the
/// fixtures lack.
fn branches_of_row(label: &str, known: &BTreeSet<&str>) -> Vec<String> {
    if label.starts_with("main") {
        return vec!["main".into()];
    }
    let minor = |s: &str| {
        s.trim()
            .strip_prefix("4.")
            .and_then(|m| m.parse::<u32>().ok())
    };
    let (lo, hi) = match label.split_once(['–', '-']) {
        Some((a, b)) => (minor(a), minor(b)),
        None => (minor(label), minor(label)),
    };
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return Vec::new();
    };
    (lo..=hi)
        .map(|m| format!("release-4.{m}"))
        .filter(|b| known.contains(b.as_str()))
        .collect()
}

/// The first table whose header has the `${CUSTOM_KUBELET_LABELS}` column:
/// that column's index and the rows.
fn summary_table(lines: &[&str]) -> Option<(usize, Rows)> {
    let mut from = 0;
    while let Some((header, rows)) = table_at(lines, from) {
        if let Some(col) = header
            .iter()
            .position(|h| h.contains("`${CUSTOM_KUBELET_LABELS}`"))
        {
            return Some((col, rows));
        }
        from = rows.last().map_or(from + 1, |(n, _)| *n);
    }
    None
}

/// A summary table's label column against the templates: every branch of
/// the fixtures in exactly one row, each with the roles that take the labels.
fn check_summary(
    path: &str,
    (col, rows): (usize, Rows),
    branches: &BTreeMap<String, Branch>,
) -> Vec<String> {
    let known: BTreeSet<&str> = branches.keys().map(String::as_str).collect();
    let mut wrong = Vec::new();
    let mut covered = BTreeSet::new();
    for (n, row) in rows {
        let label = row.first().map(String::as_str).unwrap_or("");
        let said = row.get(col).map(String::as_str).unwrap_or("");
        for b in branches_of_row(label, &known) {
            if !covered.insert(b.clone()) {
                wrong.push(format!("{path}:{n}: {b} in two summary rows"));
            }
            let truth = label_phrase(&branches[&b]);
            if said != truth {
                wrong.push(format!(
                    "{path}:{n}: summary {label:?} ({b}): the page says {said:?}, the templates give {truth:?}"
                ));
            }
        }
    }
    for missing in known.iter().filter(|b| !covered.contains(**b)) {
        wrong.push(format!("{path}: summary table: no row for {missing}"));
    }
    wrong
}

/// Every disagreement between `page` and the templates, one line each.
fn check(page: &str, branches: &BTreeMap<String, Branch>) -> Vec<String> {
    let lines: Vec<&str> = page.lines().collect();
    let known: BTreeSet<&str> = branches.keys().map(String::as_str).collect();
    let mut wrong = Vec::new();

    // The fact tables.
    let mut seen = BTreeSet::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(id) = line
            .trim()
            .strip_prefix("<!-- template-fact:")
            .and_then(|r| r.strip_suffix("-->"))
            .map(str::trim)
        else {
            continue;
        };
        if !FACTS.contains(&id) {
            wrong.push(format!("{PAGE_PATH}:{}: no check for fact {id:?}", i + 1));
            continue;
        }
        seen.insert(id);
        let Some((header, rows)) = table_at(&lines, i + 1) else {
            wrong.push(format!("{PAGE_PATH}:{}: no table after {id}", i + 1));
            continue;
        };
        if header != ["branch", "commit", "worker", "master", "arbiter"] {
            wrong.push(format!("{PAGE_PATH}:{}: {id}: header {header:?}", i + 1));
            continue;
        }
        let mut rows_seen = BTreeSet::new();
        for (n, row) in rows {
            let [name, commit, cells @ ..] = &row[..] else {
                wrong.push(format!("{PAGE_PATH}:{n}: {id}: too few cells"));
                continue;
            };
            let Some(branch) = branches.get(name) else {
                wrong.push(format!(
                    "{PAGE_PATH}:{n}: {id}: {name} is not a branch of the fixtures"
                ));
                continue;
            };
            if !rows_seen.insert(name.clone()) {
                wrong.push(format!("{PAGE_PATH}:{n}: {id}: {name} twice"));
            }
            if commit.len() < 12 || !branch.commit.starts_with(commit.as_str()) {
                wrong.push(format!(
                    "{PAGE_PATH}:{n}: {id}: {name} is at {}, the page says {commit}",
                    branch.commit
                ));
            }
            if cells.len() != ROLES.len() {
                wrong.push(format!("{PAGE_PATH}:{n}: {id}: {} role cells", cells.len()));
                continue;
            }
            for (role, said) in ROLES.iter().zip(cells) {
                let truth = cell(branch, role, id);
                if *said != truth {
                    wrong.push(format!(
                        "{PAGE_PATH}:{n}: {id}, {name}, {role}: the page says {said:?}, the templates give {truth:?}"
                    ));
                }
            }
        }
        for missing in known.iter().filter(|b| !rows_seen.contains(**b)) {
            wrong.push(format!("{PAGE_PATH}: {id}: no row for {missing}"));
        }
    }
    for missing in FACTS.iter().filter(|f| !seen.contains(*f)) {
        wrong.push(format!("{PAGE_PATH}: no table for fact {missing}"));
    }

    // The summary table (the page's first table): its label column.
    match summary_table(&lines) {
        None => wrong.push(format!("{PAGE_PATH}: no summary table with a label column")),
        Some(table) => wrong.extend(check_summary(PAGE_PATH, table, branches)),
    }
    wrong
}

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("reading README.md")
}

/// The lines of the summary table (the one whose header names
/// `${CUSTOM_KUBELET_LABELS}`), as written.
fn summary_lines(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = lines
        .iter()
        .position(|l| l.starts_with('|') && l.contains("`${CUSTOM_KUBELET_LABELS}`"))
    else {
        return Vec::new();
    };
    lines[start..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .copied()
        .collect()
}

/// README.md carries the page's summary table as the page has it, every
/// row and cell, and the note on static pool taints under it.
#[test]
fn readme_copies_the_summary_and_the_kubeletconfig_note() {
    let readme = readme();
    let page = summary_lines(PAGE);
    assert!(page.len() > 3, "{PAGE_PATH}: no summary table");
    assert_eq!(
        summary_lines(&readme),
        page,
        "README.md's summary table is not {PAGE_PATH}'s: copy it over"
    );
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let note = "Static taints for a whole pool need no tool on any release: a `KubeletConfig` with `registerWithTaints`";
    assert!(
        flat(PAGE).contains(note),
        "{PAGE_PATH} lost the KubeletConfig note"
    );
    assert!(
        flat(&readme).contains(note),
        "README.md lacks the KubeletConfig note under the summary table: \"{note} …\""
    );
}

#[test]
fn page_states_what_the_templates_have() {
    let Some(dir) = mco::require_fixtures() else {
        return;
    };
    let branches = load(&dir);
    assert!(
        branches.len() >= 9,
        "MANIFEST.tsv lists {} branches",
        branches.len()
    );
    let mut wrong = check(PAGE, &branches);
    // The README's copy of the summary.
    let readme = readme();
    let readme_lines: Vec<&str> = readme.lines().collect();
    let table = summary_table(&readme_lines).expect("README.md has no copy of the summary table");
    wrong.extend(check_summary("README.md", table, &branches));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The check finds any claim changed to something false: every cell of the
/// fact tables and of the summary's label column, changed one at a time, a
/// dropped row, a wrong commit, a summary row stretched over one release
/// more, and a fact table without its marker are each reported.
#[test]
fn a_false_claim_is_found() {
    let Some(dir) = mco::require_fixtures() else {
        return;
    };
    let branches = load(&dir);
    let lines: Vec<&str> = PAGE.lines().collect();
    let with_line = |i: usize, new: Option<String>| -> String {
        let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        match new {
            Some(l) => out[i] = l,
            None => {
                out.remove(i);
            }
        }
        out.join("\n") + "\n"
    };
    let join_row = |cells: &[String]| format!("| {} |", cells.join(" | "));
    let other = |v: &str| if v == "all" { "none" } else { "all" }.to_string();
    let mut edits: Vec<(String, String)> = Vec::new();

    let mut fact_rows = 0;
    for (i, line) in lines.iter().enumerate() {
        if !line.trim().starts_with("<!-- template-fact:") {
            continue;
        }
        edits.push((
            format!("marker at line {}", i + 1),
            with_line(i, Some("<!-- -->".into())),
        ));
        let (_, rows) = table_at(&lines, i + 1).expect("a table after each marker");
        for (n, row) in rows {
            fact_rows += 1;
            let at = n - 1;
            edits.push((format!("line {n} dropped"), with_line(at, None)));
            let mut commit = row.clone();
            let last = if commit[1].ends_with('0') { '1' } else { '0' };
            commit[1].pop();
            commit[1].push(last);
            edits.push((
                format!("line {n}: commit"),
                with_line(at, Some(join_row(&commit))),
            ));
            for c in 2..row.len() {
                let mut changed = row.clone();
                changed[c] = other(&row[c]);
                edits.push((
                    format!("line {n}: cell {c}"),
                    with_line(at, Some(join_row(&changed))),
                ));
            }
        }
    }
    assert!(fact_rows >= FACTS.len() * 9, "{fact_rows} fact rows");

    let (header, rows) = table_at(&lines, 0).expect("a summary table");
    let col = header
        .iter()
        .position(|h| h.contains("CUSTOM_KUBELET_LABELS"))
        .unwrap();
    let known: BTreeSet<&str> = branches.keys().map(String::as_str).collect();
    let mut summary_rows = 0;
    for (n, row) in rows {
        if branches_of_row(&row[0], &known).is_empty() {
            continue;
        }
        summary_rows += 1;
        let mut changed = row.clone();
        changed[col] = if row[col] == "none" {
            "workers".into()
        } else {
            "none".into()
        };
        edits.push((
            format!("line {n}: labels"),
            with_line(n - 1, Some(join_row(&changed))),
        ));
    }
    assert!(
        summary_rows >= 4,
        "{summary_rows} summary rows on fixture branches"
    );
    // 4.18 takes the labels on on-prem workers only, 4.19 on every worker and master.
    let stretched = PAGE.replacen("| 4.19–4.21 |", "| 4.18–4.21 |", 1);
    assert_ne!(stretched, PAGE, "the summary has a 4.19–4.21 row");
    edits.push(("summary row 4.18–4.21".into(), stretched));

    let unnoticed: Vec<&str> = edits
        .iter()
        .filter(|(_, page)| check(page, &branches).is_empty())
        .map(|(what, _)| what.as_str())
        .collect();
    assert!(
        unnoticed.is_empty(),
        "edits that went unnoticed: {unnoticed:?}"
    );
}

/// The page's fenced ```yaml blocks that hold `kind: <kind>`.
fn yaml_blocks<'a>(page: &'a str, kind: &str) -> Vec<&'a str> {
    page.split("```yaml\n")
        .skip(1)
        .filter_map(|rest| rest.split_once("\n```").map(|(block, _)| block))
        .filter(|block| block.lines().any(|l| l == format!("kind: {kind}")))
        .collect()
}

/// The page's way to label a pool with the platform alone (its
/// `/etc/kubernetes/kubelet-env` MachineConfig, beside this repository's
/// example pool), judged by the MCO's own code (the MCO oracle in
/// ../shared/oracles/mco, at its snapshot of main): a node booted from the
/// pool's config registers with the pool label and has nothing to update; a
/// node labeled into the pool later reboots by default; and without the label
/// the node controller of 4.22+ takes the node for one booted into the pool.
#[test]
fn the_platform_way_to_label_a_pool_lands_the_node_in_it() {
    let Some(oracle) = skipped::shared("oracles/mco/unpack.sh") else {
        return;
    };
    let uid = std::process::Command::new("id").arg("-u").output();
    if !uid.is_ok_and(|o| o.stdout == b"0\n") {
        skipped::skipped("the MCO oracle needs root (it chroots into the node's files)");
        return;
    }
    if !skipped::need("bash") || !skipped::need("xz") {
        return;
    }
    let unpacked = std::process::Command::new("bash")
        .arg(&oracle)
        .output()
        .unwrap();
    assert!(
        unpacked.status.success(),
        "{}",
        String::from_utf8_lossy(&unpacked.stderr)
    );
    let out = String::from_utf8(unpacked.stdout).unwrap();
    let [bin, mco_root] = out.lines().collect::<Vec<_>>()[..] else {
        panic!("unpack.sh printed {out:?}")
    };

    let [machineconfig] = yaml_blocks(PAGE, "MachineConfig")[..] else {
        panic!("{PAGE_PATH}: one MachineConfig example expected")
    };
    assert!(machineconfig.contains("path: /etc/kubernetes/kubelet-env"));
    let scratch = scratch_dir();
    let manifests = scratch.path().join("worker-gpu");
    std::fs::create_dir(&manifests).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(
        root.join("machineconfigs/machineconfigpool-worker-gpu.yaml"),
        manifests.join("machineconfigpool-worker-gpu.yaml"),
    )
    .unwrap();
    std::fs::write(
        manifests.join("kubelet-env.yaml"),
        format!("{machineconfig}\n"),
    )
    .unwrap();

    let run = std::process::Command::new(bin)
        .args(["-mco-root", mco_root, "-manifests"])
        .arg(&manifests)
        .args(["-expect-labels", "node.kubernetes.io/worker-gpu="])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "oracle output ({e}): {}",
            String::from_utf8_lossy(&run.stderr)
        )
    });
    let summary = &report["summary"];
    assert_eq!(
        summary["ok"], true,
        "{summary:#}\n{:#}",
        report["firstBoot"]
    );
    assert_eq!(report["firstBoot"]["bootPool"], "worker-gpu");
    assert_eq!(summary["noRebootAtFirstBoot"], true, "{summary:#}");
    let late = report["lateLabel"]["verdict"].as_str().unwrap_or_default();
    assert!(late.starts_with("default: Reboot"), "labeled later: {late}");
    let control =
        &report["poolSelectionControls"]["withoutOurLabels_nodeController_isCustomPoolBootedNode"];
    assert_eq!(control["result"], true, "{control:#}");
}
