//! The pages users read stay true: every shell block (```sh, ```bash,
//! ```shell) of README.md and of each page in docs/ runs as written from the
//! repository root, or is listed here, by page and first line, as not
//! runnable here with the reason. A block the list does not know fails the
//! test, and so does an entry no block matches. Every relative link between
//! these pages (and to files of the repository) resolves, `#anchor`s as
//! GitHub renders the headings included.
//!
//! The runnable blocks of a page run in order, each with `bash -e -o
//! pipefail`, in one scratch copy of the repository per page (later blocks
//! use what earlier ones wrote, as a reader's shell would), with the
//! kubelet-labeler built by cargo first on PATH. What the install step would
//! put beside an installed CLI (the static wrappers, the fleet ISO's
//! selector) is built into cargo's target directory, where that CLI finds
//! them.

use crate::support::{readme_figures, repo, scratch_dir, skipped};

use std::path::{Path, PathBuf};
use std::process::Command;

/// What a block needs before it can run here.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Need {
    /// The static wrapper of this architecture, as the install step builds it.
    Wrapper(&'static str),
    /// The fleet ISO's static selector of this architecture, built the same way.
    Selector(&'static str),
    /// `ca.pem` in the scratch directory: a cluster CA (a self-signed one).
    Ca,
    /// `rhcos-live.x86_64.iso` and `rhcos-live.aarch64.iso` in the scratch
    /// directory: the synthetic CoreOS live ISO of
    /// ../shared/fixtures/coreos-installer.
    LiveIso,
    /// A program on PATH, and how to install it.
    Tool(&'static str),
}

enum Plan {
    Run(&'static [Need]),
    NotHere(&'static str),
}

use Need::*;
use Plan::*;

/// Each block by its page and first line.
const BLOCKS: &[(&str, &str, Plan)] = &[
    (
        "README.md",
        "bash dist/install.sh    # the CLI and its static programs for x86_64 nodes, into ~/.cargo/bin",
        NotHere(
            "installs a release build into the user's ~/.cargo/bin; tests/install.rs runs it as \
             written with cargo stubbed, and this test runs the CLI cargo built and builds the \
             wrappers the same way (Need::Wrapper)",
        ),
    ),
    (
        "README.md",
        "cargo test --all-targets",
        NotHere("runs this very test suite (CI runs it as written: .ci/run)"),
    ),
    (
        "README.md",
        "kubelet-labeler render machineconfig --pool worker-gpu --taint nvidia.com/gpu=true:NoSchedule \\",
        Run(&[Wrapper("x86_64")]),
    ),
    (
        "README.md",
        "kubelet-labeler render machineconfig --pool worker-gpu --label node.kubernetes.io/worker-gpu= \\",
        Run(&[Wrapper("x86_64")]),
    ),
    (
        "docs/plan.md",
        "kubelet-labeler render machineconfig --pool worker-gpu --label node.kubernetes.io/worker-gpu= \\",
        Run(&[Wrapper("x86_64")]),
    ),
    (
        "README.md",
        "kubelet-labeler render machineconfig --pool worker-gpu \\",
        Run(&[Wrapper("x86_64"), Selector("x86_64"), Ca, LiveIso]),
    ),
    (
        "README.md",
        "kubelet-labeler render dropins --root ./node-files --create-root \\",
        Run(&[Wrapper("x86_64"), Wrapper("aarch64")]),
    ),
    (
        "docs/testing.md",
        "bash machineconfigs/render.sh",
        NotHere(
            "a release build that rewrites machineconfigs/; tests/render.rs \
             (example_machineconfigs_are_current) checks that machineconfigs/ is what it renders",
        ),
    ),
    (
        "docs/testing.md",
        "cargo test --all-targets",
        NotHere("it is the test suite this test is part of"),
    ),
    (
        "docs/install.md",
        "bash dist/build-static.sh                  # both arches into target/static/",
        NotHere(
            "two static release builds; tests/static_cli.rs runs dist/build-static.sh and \
             sha256sum -c on its SHA256SUMS",
        ),
    ),
    (
        "docs/commands.md",
        "kubelet-labeler explain --root <node-root> --profile openshift \\",
        NotHere("needs a node's root filesystem (<node-root>)"),
    ),
    (
        "docs/commands.md",
        "oc get mc $(oc get mcp worker -o jsonpath='{.status.configuration.name}') -o yaml > rendered.yaml",
        NotHere("needs a cluster (oc)"),
    ),
    (
        "docs/commands.md",
        "kubelet-labeler explain --machineconfig rendered.yaml --machineconfig gitops/ --pool worker-gpu",
        NotHere("needs the cluster's rendered config (rendered.yaml, from oc get mc)"),
    ),
    (
        "docs/commands.md",
        "kubelet-labeler facts --root /                 # one `feature attr=value` per line",
        Run(&[]),
    ),
    (
        "docs/commands.md",
        "kubelet-labeler validate --profile openshift -- \\",
        Run(&[]),
    ),
    (
        "docs/commands.md",
        "kubelet-labeler render dropins --root / \\",
        NotHere("writes into / and reloads systemd: root on a real host"),
    ),
    (
        "docs/commands.md",
        "kubelet-labeler render machineconfig --pool worker-gpu \\",
        NotHere("ends in `oc apply`: needs a cluster"),
    ),
    (
        "docs/commands.md",
        "kubelet-labeler render dropins --root / --remove && systemctl daemon-reload",
        NotHere(
            "removes from / and reloads systemd: root on a real host; tests/preflight.rs \
             (render_dropins_remove_takes_out_exactly_what_render_wrote) runs --remove on a tree",
        ),
    ),
    (
        "docs/kubeadm.md",
        "scp target/static/kubelet-labeler-aarch64 pi-1:/tmp/kubelet-labeler",
        NotHere("needs a Raspberry Pi reachable by ssh (pi-1)"),
    ),
    (
        "docs/commands.md",
        "kubelet-labeler render ignition --pool worker-gpu -o worker-gpu.ign",
        Run(&[Wrapper("x86_64"), Ca]),
    ),
    (
        "docs/commands.md",
        "kubelet-labeler iso embed -i pointer.ign -o node.iso rhcos-live.x86_64.iso",
        Run(&[Wrapper("x86_64"), Wrapper("aarch64"), Ca, LiveIso]),
    ),
    (
        "docs/commands.md",
        "source <(kubelet-labeler completions bash)       # also zsh, fish",
        Run(&[Tool("man")]),
    ),
    (
        "docs/node-rules.md",
        "kubelet-labeler facts --root /                       # what the wrapper sees, NFD's names",
        Run(&[Wrapper("x86_64")]),
    ),
    (
        "docs/node-rules.md",
        "kubelet-labeler explain --root / --rules examples/rules/openshift-gpu.yaml",
        NotHere("needs a node: this host has no kubelet.service"),
    ),
    (
        "docs/node-rules.md",
        "kubelet-labeler render machineconfig --pool worker-sgx --rules nodefeaturerule.yaml \\",
        NotHere(
            "NFD's example file is not in this repository; tests/leave_to_nfd.rs renders a file \
             of its shape with these flags",
        ),
    ),
    (
        "docs/openshift-gpu-stack.md",
        "kubelet-labeler render machineconfig --pool worker-gpu --profile openshift \\",
        NotHere("ends in `oc apply`: needs a cluster"),
    ),
    (
        "docs/openshift-built-in-roles.md",
        "kubelet-labeler render machineconfig --role master \\",
        Run(&[Wrapper("x86_64")]),
    ),
    (
        "docs/kubeadm.md",
        "kubelet-labeler render dropins --root / --label node.kubernetes.io/gpu= \\",
        NotHere("writes into /, reloads systemd and joins a cluster: root on a real host"),
    ),
    (
        "docs/kubeadm.md",
        "kubelet-labeler render dropins --root ./node-files --create-root \\",
        Run(&[Wrapper("x86_64"), Wrapper("aarch64")]),
    ),
    (
        "docs/kubeadm.md",
        "mkdir -p /etc/kubernetes/node-feature-discovery/features.d",
        NotHere(
            "writes into a Raspberry Pi's /etc from its /proc/device-tree (tests/example_rules.rs \
             evaluates the file it writes on the Pi 3 fixture)",
        ),
    ),
    (
        "docs/kubeadm.md",
        "kubelet-labeler render dropins --root ./node-files \\",
        Run(&[Wrapper("x86_64"), Wrapper("aarch64")]),
    ),
    (
        "docs/kubeadm.md",
        "systemctl daemon-reload",
        NotHere("reloads systemd and joins a cluster: root on a real node (<api-server>, <token>)"),
    ),
    (
        "docs/mixed-architectures.md",
        "kubelet-labeler render machineconfig --pool worker-gpu --arch x86_64 --arch aarch64 \\",
        Run(&[Wrapper("x86_64"), Wrapper("aarch64")]),
    ),
    (
        "docs/openshift-custom-pool.md",
        "kubelet-labeler render machineconfig --pool worker-gpu --output-dir gitops/worker-gpu",
        NotHere("ends in `oc apply`: needs a cluster"),
    ),
    (
        "docs/openshift-custom-pool.md",
        "oc get mcp worker-gpu",
        NotHere("needs a cluster (oc, its Machine Config Server at <cluster>)"),
    ),
    (
        "docs/openshift-custom-pool.md",
        "kubelet-labeler render ignition --pool worker-gpu \\",
        NotHere("needs the cluster's name (<cluster>), its CA and a real live ISO"),
    ),
    (
        "docs/openshift-custom-pool.md",
        "oc get node <node> -L node.kubernetes.io/worker-gpu",
        NotHere("needs a cluster (oc)"),
    ),
    (
        "docs/fleet-iso.md",
        "kubelet-labeler render machineconfig --pool worker-gpu \\",
        NotHere("ends in `oc apply`: needs a cluster, and the user's rules file (gpu.yaml)"),
    ),
    (
        "docs/fleet-iso.md",
        "oc get machineconfigpools -o yaml > mcp.yaml",
        NotHere(
            "needs a cluster (oc get), the pools' user-data Secrets, the user's rules file and \
             a real live ISO",
        ),
    ),
    (
        "docs/fleet-iso.md",
        "oc get node <node> -L feature.node.kubernetes.io/gpu",
        NotHere("needs a cluster (oc)"),
    ),
    (
        "docs/upgrading.md",
        "oc patch mcp worker-gpu --type merge -p '{\"spec\":{\"paused\":true}}'",
        NotHere("needs a cluster (oc)"),
    ),
    (
        "docs/upgrading.md",
        "oc label node -l node.kubernetes.io/worker-gpu node.kubernetes.io/worker-gpu-",
        NotHere("needs a cluster (oc)"),
    ),
    (
        "docs/upgrading.md",
        "oc delete mc 50-worker-gpu-kubelet-labeler-wrapper 50-worker-gpu-kubelet-labeler-labels",
        NotHere("needs a cluster (oc)"),
    ),
    (
        "docs/upgrading.md",
        "oc apply --server-side --field-manager=kubelet-labeler-worker-gpu \\",
        NotHere("needs a cluster (oc)"),
    ),
    (
        "docs/upgrading.md",
        "kubelet-labeler render machineconfig --role worker ... --output-dir gitops/",
        NotHere(
            "the site's own flags (...) and the cluster's rendered config (oc get mc); \
             tests/compose.rs renders a role and a pool into one directory and explains them \
             with a rendered config",
        ),
    ),
    (
        "docs/upgrading.md",
        "oc get node NODE -o jsonpath='{.metadata.annotations.kubelet-labeler\\.io/owned-labels}'",
        NotHere("needs a cluster (oc)"),
    ),
];

/// A fenced shell block: the page line it starts on and its text,
/// de-indented by the fence's indentation (blocks inside list items).
pub(crate) struct Block {
    pub(crate) line: usize,
    pub(crate) text: String,
}

/// The info strings of the blocks a reader runs in a shell.
const SHELLS: &[&str] = &["sh", "bash", "shell"];

pub(crate) fn sh_blocks(page: &str, md: &str) -> Vec<Block> {
    let lines: Vec<&str> = md.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        let Some(lang) = trimmed.strip_prefix("```") else {
            i += 1;
            continue;
        };
        let indent = lines[i].len() - trimmed.len();
        let start = i;
        i += 1;
        let mut body = Vec::new();
        while i < lines.len() && lines[i].trim() != "```" {
            body.push(lines[i].get(indent..).unwrap_or("").trim_end());
            i += 1;
        }
        assert!(i < lines.len(), "{page}:{}: unclosed code block", start + 1);
        if SHELLS.contains(&lang.trim()) {
            blocks.push(Block {
                line: start + 1,
                text: body.join("\n") + "\n",
            });
        }
        i += 1;
    }
    blocks
}

/// README.md and every page of docs/, by path from the repository root, in
/// that order, with their text.
fn pages() -> Vec<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .expect("reading docs/")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    names.sort();
    names.insert(0, "README.md".to_string());
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(repo().join(&n)).unwrap();
            (n, text)
        })
        .collect()
}

/// The plan for a block of `page`, by its first line.
fn plan_of(page: &str, block: &Block) -> Option<&'static Plan> {
    let first = block.text.lines().next().unwrap_or("");
    BLOCKS
        .iter()
        .find(|(p, f, _)| *p == page && *f == first)
        .map(|(_, _, plan)| plan)
}

#[test]
fn every_sh_block_is_run_or_listed_with_a_reason() {
    let pages = pages();
    let mut all = Vec::new();
    for (page, text) in &pages {
        for b in sh_blocks(page, text) {
            all.push((page.as_str(), b));
        }
    }
    assert!(all.len() > 20, "found only {} shell blocks", all.len());
    let first = |b: &Block| b.text.lines().next().unwrap_or("").to_string();
    let unknown: Vec<String> = all
        .iter()
        .filter(|(p, b)| plan_of(p, b).is_none())
        .map(|(p, b)| format!("{p}:{}: {}", b.line, first(b)))
        .collect();
    assert!(
        unknown.is_empty(),
        "shell blocks neither run nor listed as not runnable here; add each to BLOCKS in tests/readme.rs:\n{}",
        unknown.join("\n")
    );
    // A key names one block: two blocks of a page with one first line would
    // share a plan, which is right for neither by accident.
    let mut twice = Vec::new();
    for (i, (p, b)) in all.iter().enumerate() {
        if all[..i].iter().any(|(q, c)| q == p && first(c) == first(b)) {
            twice.push(format!("{p}:{}: {}", b.line, first(b)));
        }
    }
    assert!(
        twice.is_empty(),
        "blocks whose page already has a block with that first line (give one another first line):\n{}",
        twice.join("\n")
    );
    let stale: Vec<String> = BLOCKS
        .iter()
        .filter(|(p, f, _)| !all.iter().any(|(q, b)| q == p && first(b) == *f))
        .map(|(p, f, _)| format!("{p}: {f}"))
        .collect();
    assert!(
        stale.is_empty(),
        "BLOCKS lists blocks the pages no longer have:\n{}",
        stale.join("\n")
    );
    for (page, first, plan) in BLOCKS {
        if let NotHere(why) = plan {
            assert!(!why.is_empty(), "no reason given for {page}: {first}");
        }
    }
}

/// The block parser sees indented blocks, leaves out other languages and
/// keeps a block's lines as written.
#[test]
fn sh_blocks_are_found_as_written() {
    let md =
        "text\n```sh\na \\\n    b\n```\n\n1. item\n   ```sh\n   c\n   ```\n```yaml\nd: e\n```\n";
    let blocks = sh_blocks("t.md", md);
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        (blocks[0].line, blocks[0].text.as_str()),
        (2, "a \\\n    b\n")
    );
    assert_eq!((blocks[1].line, blocks[1].text.as_str()), (8, "c\n"));
}

/// Copy the repository (without target/ and .git) into `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        let ty = e.file_type().unwrap();
        if ty.is_dir() {
            copy_tree(&e.path(), &to.join(&name));
        } else if ty.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), to.join(&name))
                .unwrap();
        } else {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}

/// Outside CI, a recorded skip; under CI, a failure.
fn missing(why: &str) -> bool {
    skipped::skipped(why);
    false
}

/// cargo's target directory: the built CLI is in its `debug/` (or
/// `release/`), and the CLI looks for the static wrappers beside that.
fn target_dir() -> PathBuf {
    let cli = Path::new(env!("CARGO_BIN_EXE_kubelet-labeler"));
    cli.parent().unwrap().parent().unwrap().to_path_buf()
}

fn musl_target_installed(arch: &str) -> bool {
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    out.is_ok_and(|o| {
        String::from_utf8_lossy(&o.stdout).contains(&format!("{arch}-unknown-linux-musl"))
    }) || missing(&format!(
        "rust target {arch}-unknown-linux-musl is not installed (rustup target add)"
    ))
}

/// Provide `need` in `scratch`; false (a recorded skip) when it cannot be.
fn provide(need: Need, scratch: &Path) -> bool {
    match need {
        Wrapper(arch) => {
            if !musl_target_installed(arch) {
                return false;
            }
            // As the install step: build-wrapper.sh, in cargo's target
            // directory, where the cargo-built CLI finds it.
            let out = Command::new("bash")
                .arg(repo().join("machineconfigs/build-wrapper.sh"))
                .arg(arch)
                .env("CARGO_TARGET_DIR", target_dir())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "build-wrapper.sh {arch}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            true
        }
        Selector(arch) => {
            if !musl_target_installed(arch) {
                return false;
            }
            let out = Command::new("bash")
                .arg(repo().join("machineconfigs/build-wrapper.sh"))
                .args([arch, "kubelet-labeler-select"])
                .env("CARGO_TARGET_DIR", target_dir())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "build-wrapper.sh {arch} kubelet-labeler-select: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            true
        }
        Ca => {
            let Some(openssl) = skipped::tool("openssl") else {
                return false;
            };
            let out = Command::new(openssl)
                .args([
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                ])
                .args([
                    "-subj",
                    "/CN=root-ca",
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                ])
                .current_dir(scratch)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "openssl: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            true
        }
        LiveIso => {
            let fx =
                repo().join("../shared/fixtures/coreos-installer/synthetic-coreos-base.iso.xz");
            if !fx.is_file() {
                return missing(&format!("{} missing (a CoreOS live ISO)", fx.display()));
            }
            let mut iso = Vec::new();
            std::io::Read::read_to_end(
                &mut xz2::read::XzDecoder::new(std::fs::File::open(&fx).unwrap()),
                &mut iso,
            )
            .unwrap();
            std::fs::write(scratch.join("rhcos-live.aarch64.iso"), &iso).unwrap();
            std::fs::write(scratch.join("rhcos-live.x86_64.iso"), iso).unwrap();
            true
        }
        Tool(name) => skipped::tool(name).is_some(),
    }
}

#[test]
fn runnable_sh_blocks_run_as_written() {
    let cli_dir = Path::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .parent()
        .unwrap();
    let path = std::env::join_paths(std::iter::once(cli_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let dir = scratch_dir();
    let mut ran = 0;
    // Built once for every page: they land in cargo's target directory.
    let mut built: Vec<Need> = Vec::new();
    for (n, (page, text)) in pages().iter().enumerate() {
        let blocks = sh_blocks(page, text);
        if !blocks
            .iter()
            .any(|b| matches!(plan_of(page, b), Some(Run(_))))
        {
            continue;
        }
        // A reader starts each page in a fresh checkout.
        let scratch = dir.path().join(format!("page-{n}/kubelet-labeler"));
        copy_tree(repo(), &scratch);
        let mut provided: Vec<Need> = Vec::new();
        for block in &blocks {
            let Some(Run(needs)) = plan_of(page, block) else {
                continue;
            };
            let have = needs.iter().all(|&need| {
                let once = matches!(need, Wrapper(_) | Selector(_) | Tool(_));
                let have = if once { &mut built } else { &mut provided };
                have.contains(&need) || {
                    let ok = provide(need, &scratch);
                    if ok {
                        have.push(need);
                    }
                    ok
                }
            });
            if !have {
                continue;
            }
            let out = Command::new("bash")
                .args(["-e", "-o", "pipefail", "-c", &block.text])
                .current_dir(&scratch)
                .env("PATH", &path)
                .env("MANPAGER", "cat")
                .env("PAGER", "cat")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{page}:{}: the block failed ({}):\n{}\nstderr:\n{}",
                block.line,
                out.status,
                block.text,
                String::from_utf8_lossy(&out.stderr)
            );
            eprintln!("ran the block at {page}:{}", block.line);
            ran += 1;
        }
    }
    assert!(ran > 0, "no block ran");
}

#[test]
fn figures_are_written_with_commas() {
    use readme_figures::with_commas;
    assert_eq!(with_commas(7), "7");
    assert_eq!(with_commas(262_144), "262,144");
    assert_eq!(with_commas(1_234_567), "1,234,567");
}

/// What users read (the READMEs, docs/, man pages, `--help` through them, the
/// example rules) names scenarios, not this project's internal labels.
#[test]
fn user_facing_text_has_no_internal_names() {
    let forbidden: &[(&str, &str)] = &[
        ("seed 0", "name the scenario"),
        ("seed-0", "name the scenario"),
        ("KLR", "the rules wire format's header is internal"),
        (".ci/run", "CI's script is internal"),
        (" insta ", "the snapshot library is internal"),
        ("insta snapshot", "the snapshot library is internal"),
        ("worker-rwn", "an unexplained pool name"),
        ("llm-d-lab", "an unexplained lab name"),
    ];
    let mut files: Vec<PathBuf> = pages().iter().map(|(p, _)| repo().join(p)).collect();
    files.push(repo().join("iso/README.md"));
    for dir in ["man", "examples/rules"] {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        files.extend(entries);
    }
    let mut found = Vec::new();
    for f in &files {
        // Man pages escape hyphens.
        let text = std::fs::read_to_string(f).unwrap().replace("\\-", "-");
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            for (word, why) in forbidden {
                if lower.contains(&word.to_lowercase()) {
                    found.push(format!("{}:{}: {word:?} ({why})", f.display(), n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A heading's `#anchor` as GitHub renders it: lower case, every character
/// but letters, digits, `-`, `_` and spaces dropped (backticks, colons,
/// dots, `|`), spaces made `-`.
fn github_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of `md` outside fenced code blocks, numbered from 1.
fn prose_lines(md: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<String> = None;
    let mut out = Vec::new();
    for (n, line) in md.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") {
            let ticks: String = t.chars().take_while(|&c| c == '`').collect();
            match &fence {
                None => fence = Some(ticks),
                Some(open) if t.trim_end() == open.as_str() => fence = None,
                Some(_) => {}
            }
            continue;
        }
        if fence.is_none() {
            out.push((n + 1, line));
        }
    }
    out
}

/// Every heading's anchor in `md`; a repeated one gets `-1`, `-2`, … as on
/// GitHub.
fn anchors(md: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, line) in prose_lines(md) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = github_anchor(&line[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while out.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        out.push(anchor);
    }
    out
}

/// The targets of the inline links `[text](target)` of `md`, with their
/// line, outside code blocks and code spans.
fn links(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(md) {
        // Text between backticks is code, not a link.
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            out.push((n, target.to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// `base`'s directory joined with `rel`, `..` resolved; None when it climbs
/// out of the repository.
fn join_rel(base: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for c in rel.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    Some(parts.join("/"))
}

/// Every relative link of `pages` that does not resolve: to a file
/// `exists` does not know, to a page's anchor it does not have, or out of
/// the repository. Links to other sites are not followed.
fn broken_links(pages: &[(String, String)], exists: impl Fn(&str) -> bool) -> Vec<String> {
    let mut broken = Vec::new();
    for (page, text) in pages {
        for (line, target) in links(text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                Some(page.clone())
            } else {
                join_rel(page, path)
            };
            let Some(file) = file else {
                broken.push(format!("{page}:{line}: {target} leaves the repository"));
                continue;
            };
            let md = pages.iter().find(|(p, _)| *p == file).map(|(_, t)| t);
            if md.is_none() && !exists(&file) {
                broken.push(format!("{page}:{line}: {target}: no file {file}"));
                continue;
            }
            if let Some(anchor) = anchor {
                let text = match md {
                    Some(t) => t.clone(),
                    None => std::fs::read_to_string(repo().join(&file)).unwrap_or_default(),
                };
                if !anchors(&text).iter().any(|a| a == anchor) {
                    broken.push(format!(
                        "{page}:{line}: {target}: {file} has no heading #{anchor}"
                    ));
                }
            }
        }
    }
    broken
}

#[test]
fn links_between_the_pages_resolve() {
    let pages = pages();
    let broken = broken_links(&pages, |f| repo().join(f).exists());
    assert!(
        broken.is_empty(),
        "links that do not resolve:\n{}",
        broken.join("\n")
    );
    // The README reaches every page of docs/.
    let readme_links: Vec<String> = links(&pages[0].1)
        .into_iter()
        .filter_map(|(_, t)| join_rel("README.md", t.split('#').next().unwrap_or("")))
        .collect();
    let unlinked: Vec<&str> = pages[1..]
        .iter()
        .map(|(p, _)| p.as_str())
        .filter(|p| !readme_links.iter().any(|l| l == p))
        .collect();
    assert!(
        unlinked.is_empty(),
        "pages README.md does not link to: {unlinked:?}"
    );
}

/// Anchors as GitHub makes them, and each kind of broken link is found.
#[test]
fn the_link_check_finds_what_does_not_resolve() {
    assert_eq!(
        github_anchor(" `render dropins`: kubeadm-style hosts"),
        "render-dropins-kubeadm-style-hosts"
    );
    assert_eq!(
        github_anchor(" `iso embed | show | remove`: CoreOS live ISOs, as coreos-installer does"),
        "iso-embed--show--remove-coreos-live-isos-as-coreos-installer-does"
    );
    assert_eq!(
        github_anchor(" 4.21+: `--config-dir=/etc/openshift/kubelet.conf.d`"),
        "421---config-diretcopenshiftkubeletconfd"
    );
    let pages = vec![
        (
            "README.md".to_string(),
            "# T\n## Same\n## Same\n[a](docs/x.md#usage-x) [b](#same-1) [c](#same-2)\n\
             [d](docs/y.md) [e](../../etc/passwd) `[f](nowhere.md)` [g](https://x/#y)\n\
             ```sh\n[h](nowhere.md)\n```\n[i](Cargo.toml)\n"
                .to_string(),
        ),
        (
            "docs/x.md".to_string(),
            "# X\n## Usage: `x`\n[j](../README.md#t) [k](../README.md#nope)\n".to_string(),
        ),
    ];
    let broken = broken_links(&pages, |f| f == "Cargo.toml");
    assert_eq!(
        broken,
        [
            "README.md:4: #same-2: README.md has no heading #same-2",
            "README.md:5: docs/y.md: no file docs/y.md",
            "README.md:5: ../../etc/passwd leaves the repository",
            "docs/x.md:3: ../README.md#nope: README.md has no heading #nope",
        ]
    );
}
