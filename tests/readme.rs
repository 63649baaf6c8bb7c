//! Every ```sh block of README.md runs as written from the repository root,
//! or is listed here as not runnable here, with the reason. A block the list
//! does not know fails the test, and so does an entry no block matches.
//!
//! The runnable blocks run in order, each with `bash -e -o pipefail`, in one
//! scratch copy of the repository (later blocks use what earlier ones wrote,
//! as a reader's shell would), with the kubelet-labeler built by cargo first
//! on PATH. What the install step would put beside an installed CLI (the
//! static wrappers) is built into cargo's target directory, where that CLI
//! finds them.

#[path = "support/skipped.rs"]
mod skipped;

#[path = "support/readme_figures.rs"]
mod readme_figures;

use std::path::{Path, PathBuf};
use std::process::Command;

/// What a block needs before it can run here.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Need {
    /// The static wrapper of this architecture, as the install step builds it.
    Wrapper(&'static str),
    /// `ca.pem` in the scratch directory: a cluster CA (a self-signed one).
    Ca,
    /// `rhcos-live.x86_64.iso` in the scratch directory: the synthetic
    /// CoreOS live ISO of ../shared/fixtures/coreos-installer.
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

/// Each block by its first line.
const BLOCKS: &[(&str, Plan)] = &[
    (
        "cargo install --locked --path . --bin kubelet-labeler   # the CLI alone, into ~/.cargo/bin",
        NotHere(
            "installs a release build into the user's ~/.cargo/bin; this test runs the CLI cargo \
             built instead and builds the wrappers the same way (Need::Wrapper)",
        ),
    ),
    (
        "bash machineconfigs/render.sh",
        NotHere(
            "a release build that rewrites machineconfigs/; tests/render.rs \
             (example_machineconfigs_are_current) checks that machineconfigs/ is what it renders",
        ),
    ),
    (
        "cargo test --all-targets",
        NotHere("it is the test suite this test is part of"),
    ),
    (
        "bash dist/build-static.sh                  # both arches into target/static/",
        NotHere(
            "two static release builds; tests/static_cli.rs runs dist/build-static.sh and \
             sha256sum -c on its SHA256SUMS",
        ),
    ),
    (
        "kubelet-labeler explain --root <node-root> --profile openshift \\",
        NotHere("needs a node's root filesystem (<node-root>)"),
    ),
    (
        "oc get mc $(oc get mcp worker -o jsonpath='{.status.configuration.name}') -o yaml > rendered.yaml",
        NotHere("needs a cluster (oc)"),
    ),
    (
        "kubelet-labeler facts --root /                 # one `feature attr=value` per line",
        Run(&[]),
    ),
    (
        "kubelet-labeler validate --profile openshift -- \\",
        Run(&[]),
    ),
    (
        "kubelet-labeler render dropins --root / \\",
        NotHere("writes into / and reloads systemd: root on a real host"),
    ),
    (
        "kubelet-labeler render machineconfig --pool worker-gpu \\",
        NotHere("ends in `oc apply`: needs a cluster"),
    ),
    (
        "kubelet-labeler render ignition --pool worker-gpu -o worker-gpu.ign",
        Run(&[Wrapper("x86_64"), Ca]),
    ),
    (
        "kubelet-labeler iso embed -i pointer.ign -o node.iso rhcos-live.x86_64.iso",
        Run(&[Ca, LiveIso]),
    ),
    (
        "source <(kubelet-labeler completions bash)       # also zsh, fish",
        Run(&[Tool("man")]),
    ),
    (
        "kubelet-labeler facts --root /                       # what the wrapper sees, NFD's names",
        Run(&[Wrapper("x86_64")]),
    ),
    (
        "kubelet-labeler explain --root / --rules examples/rules/openshift-gpu.yaml",
        NotHere("needs a node: this host has no kubelet.service"),
    ),
    (
        "kubelet-labeler render machineconfig --pool worker-gpu --profile openshift \\",
        NotHere("ends in `oc apply`: needs a cluster"),
    ),
    (
        "kubelet-labeler render machineconfig --role master \\",
        Run(&[Wrapper("x86_64")]),
    ),
    (
        "kubelet-labeler render dropins --root ./node-files --create-root \\",
        Run(&[Wrapper("x86_64"), Wrapper("aarch64")]),
    ),
    (
        "systemctl daemon-reload",
        NotHere("reloads systemd and joins a cluster: root on a real node (<api-server>, <token>)"),
    ),
    (
        "kubelet-labeler render machineconfig --pool worker-gpu --arch x86_64 --arch aarch64 \\",
        Run(&[Wrapper("x86_64"), Wrapper("aarch64")]),
    ),
    (
        "kubelet-labeler render machineconfig --pool worker-gpu --output-dir gitops/worker-gpu",
        NotHere("ends in `oc apply`: needs a cluster"),
    ),
    (
        "oc get mcp worker-gpu",
        NotHere("needs a cluster (oc, its Machine Config Server at <cluster>)"),
    ),
    (
        "kubelet-labeler render ignition --pool worker-gpu \\",
        NotHere("needs the cluster's name (<cluster>), its CA and a real live ISO"),
    ),
    (
        "oc get node <node> -L node.kubernetes.io/worker-gpu",
        NotHere("needs a cluster (oc)"),
    ),
    (
        "kubelet-labeler render dropins --root / --label node.kubernetes.io/gpu= \\",
        NotHere("writes into /, reloads systemd and joins a cluster: root on a real host"),
    ),
    (
        "kubelet-labeler iso fleet -o fleet.iso rhcos-live.x86_64.iso \\",
        NotHere(
            "needs the pools' user-data Secrets from a cluster (oc get secret), the user's rules \
             file and a real live ISO",
        ),
    ),
    (
        "oc get node <node> -L feature.node.kubernetes.io/gpu",
        NotHere("needs a cluster (oc)"),
    ),
    (
        "oc patch mcp worker-gpu --type merge -p '{\"spec\":{\"paused\":true}}'",
        NotHere("needs a cluster (oc)"),
    ),
];

/// A fenced ```sh block: the README line it starts on and its text,
/// de-indented by the fence's indentation (blocks inside list items).
struct Block {
    line: usize,
    text: String,
}

fn sh_blocks(readme: &str) -> Vec<Block> {
    let lines: Vec<&str> = readme.lines().collect();
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
        assert!(
            i < lines.len(),
            "README.md:{}: unclosed code block",
            start + 1
        );
        if lang.trim() == "sh" {
            blocks.push(Block {
                line: start + 1,
                text: body.join("\n") + "\n",
            });
        }
        i += 1;
    }
    blocks
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).unwrap()
}

/// The plan for a block, by its first line.
fn plan_of(block: &Block) -> Option<&'static Plan> {
    let first = block.text.lines().next().unwrap_or("");
    BLOCKS.iter().find(|(f, _)| *f == first).map(|(_, p)| p)
}

#[test]
fn every_sh_block_is_run_or_listed_with_a_reason() {
    let blocks = sh_blocks(&readme());
    assert!(blocks.len() > 10, "found only {} sh blocks", blocks.len());
    let unknown: Vec<String> = blocks
        .iter()
        .filter(|b| plan_of(b).is_none())
        .map(|b| {
            format!(
                "README.md:{}: {}",
                b.line,
                b.text.lines().next().unwrap_or("")
            )
        })
        .collect();
    assert!(
        unknown.is_empty(),
        "sh blocks neither run nor listed as not runnable here; add each to BLOCKS in tests/readme.rs:\n{}",
        unknown.join("\n")
    );
    let stale: Vec<&str> = BLOCKS
        .iter()
        .map(|(f, _)| *f)
        .filter(|f| !blocks.iter().any(|b| b.text.lines().next() == Some(f)))
        .collect();
    assert!(
        stale.is_empty(),
        "BLOCKS lists blocks README.md no longer has: {stale:?}"
    );
    for (first, plan) in BLOCKS {
        if let NotHere(why) = plan {
            assert!(!why.is_empty(), "no reason given for {first}");
        }
    }
}

/// The block parser sees indented blocks, leaves out other languages and
/// keeps a block's lines as written.
#[test]
fn sh_blocks_are_found_as_written() {
    let md =
        "text\n```sh\na \\\n    b\n```\n\n1. item\n   ```sh\n   c\n   ```\n```yaml\nd: e\n```\n";
    let blocks = sh_blocks(md);
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
                .arg(root().join("machineconfigs/build-wrapper.sh"))
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
                root().join("../shared/fixtures/coreos-installer/synthetic-coreos-base.iso.xz");
            if !fx.is_file() {
                return missing(&format!("{} missing (a CoreOS live ISO)", fx.display()));
            }
            let mut iso = Vec::new();
            std::io::Read::read_to_end(
                &mut xz2::read::XzDecoder::new(std::fs::File::open(&fx).unwrap()),
                &mut iso,
            )
            .unwrap();
            std::fs::write(scratch.join("rhcos-live.x86_64.iso"), iso).unwrap();
            true
        }
        Tool(name) => skipped::tool(name).is_some(),
    }
}

#[test]
fn runnable_sh_blocks_run_as_written() {
    let blocks = sh_blocks(&readme());
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("kubelet-labeler");
    copy_tree(root(), &scratch);
    let cli_dir = Path::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .parent()
        .unwrap();
    let path = std::env::join_paths(std::iter::once(cli_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut ran = 0;
    let mut provided: Vec<Need> = Vec::new();
    for block in &blocks {
        let Some(Run(needs)) = plan_of(block) else {
            continue;
        };
        let have = needs.iter().all(|&n| {
            provided.contains(&n) || {
                let ok = provide(n, &scratch);
                if ok {
                    provided.push(n);
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
            "README.md:{}: the block failed ({}):\n{}\nstderr:\n{}",
            block.line,
            out.status,
            block.text,
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("ran the block at README.md:{}", block.line);
        ran += 1;
    }
    assert!(ran > 0, "no README block ran");
}

#[test]
fn figures_are_written_with_commas() {
    use readme_figures::with_commas;
    assert_eq!(with_commas(7), "7");
    assert_eq!(with_commas(262_144), "262,144");
    assert_eq!(with_commas(1_234_567), "1,234,567");
}

/// What users read (the READMEs, man pages, `--help` through them, the
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
    let mut files = vec![root().join("README.md"), root().join("iso/README.md")];
    for dir in ["man", "examples/rules"] {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
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
