//! The README's install is one command, run as written, and it builds what
//! install needs in as few cargo invocations as can be: `cargo install` of
//! the CLI and ONE build of every static program (wrapper and selector) for
//! every architecture asked, so std (rebuilt per arch with build-std) and
//! the crate compile once for all of them. cargo, rustup and rustc are stubs
//! here (nothing is built): each records its arguments, and cargo leaves a
//! file naming the target and program where a real build leaves it.

use crate::readme::sh_blocks;
use crate::support::{repo, scratch_dir, skipped, write_exec};

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A stub cargo: appends its arguments, one invocation a line, to $LOG;
/// `build` writes "<target> <bin>" to each
/// $CARGO_TARGET_DIR/<target>/wrapper/<bin> it was asked for; `install`
/// writes ROOT/bin/kubelet-labeler.
const CARGO: &str = r#"#!/bin/sh
echo "$*" >> "$LOG"
case "$1" in
build)
  {
    echo "flags RUSTFLAGS=${RUSTFLAGS-}"
    echo "flags x86_64=${CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS-}"
    echo "flags aarch64=${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUSTFLAGS-}"
  } >> "$LOG.flags"
  targets= bins=
  while [ $# -gt 0 ]; do
    case "$1" in
      --target) targets="$targets $2"; shift ;;
      --bin) bins="$bins $2"; shift ;;
    esac
    shift
  done
  for t in $targets; do
    for b in $bins; do
      mkdir -p "${CARGO_TARGET_DIR:?}/$t/wrapper"
      echo "$t $b" > "$CARGO_TARGET_DIR/$t/wrapper/$b"
    done
  done ;;
install)
  root=
  while [ $# -gt 0 ]; do
    case "$1" in --root) root=$2; shift ;; esac
    shift
  done
  mkdir -p "${root:?}/bin" && echo cli > "$root/bin/kubelet-labeler" ;;
esac
"#;

struct Stubbed {
    _scratch: tempfile::TempDir,
    home: PathBuf,
    target_dir: PathBuf,
    log: PathBuf,
    stubs: PathBuf,
}

fn stubbed() -> Stubbed {
    let scratch = scratch_dir();
    let stubs = scratch.path().join("stubs");
    write_exec(&stubs.join("cargo"), CARGO);
    write_exec(&stubs.join("rustup"), "#!/bin/sh\nexit 0\n");
    write_exec(&stubs.join("rustc"), "#!/bin/sh\necho /sysroot\n");
    Stubbed {
        home: scratch.path().join("home"),
        target_dir: scratch.path().join("target"),
        log: scratch.path().join("cargo.log"),
        stubs,
        _scratch: scratch,
    }
}

impl Stubbed {
    /// `bash -c script` from the checkout's root, as a reader runs it.
    fn run(&self, bash: &Path, script: &str) {
        let path = format!(
            "{}:{}",
            self.stubs.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new(bash)
            .args(["-e", "-o", "pipefail", "-c", script])
            .current_dir(repo())
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("LOG", &self.log)
            .env("CARGO_TARGET_DIR", &self.target_dir)
            .env_remove("CARGO_HOME")
            .env_remove("CARGO_INSTALL_ROOT")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The cargo invocations, one a line.
    fn cargo_calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Exactly two cargo invocations: `cargo install` of the CLI alone, and
    /// one build of both static programs for exactly `arches`.
    fn assert_two_cargo_calls(&self, arches: &[&str]) {
        let calls = self.cargo_calls();
        let installs: Vec<_> = calls.iter().filter(|c| c.starts_with("install ")).collect();
        let builds: Vec<_> = calls.iter().filter(|c| c.starts_with("build ")).collect();
        assert!(
            calls.len() == 2 && installs.len() == 1 && builds.len() == 1,
            "install must run cargo twice (install the CLI, build the static programs): {calls:#?}"
        );
        assert!(
            installs[0].contains("--bin kubelet-labeler ") && installs[0].contains("--locked"),
            "{}",
            installs[0]
        );
        let build = builds[0];
        for bin in ["kubelet-labeler-wrapper", "kubelet-labeler-select"] {
            assert!(build.contains(&format!("--bin {bin}")), "{build}");
        }
        for arch in ["x86_64", "aarch64"] {
            assert_eq!(
                build.contains(&format!("--target {arch}-unknown-linux-musl")),
                arches.contains(&arch),
                "{build}"
            );
        }
        assert!(build.contains("-Z build-std=std,panic_abort"), "{build}");
    }

    /// ROOT/bin holds the CLI and, for each of `arches`, the wrapper and the
    /// selector cargo built for that arch, executable.
    fn assert_installed(&self, root: &Path, arches: &[&str]) {
        let bin = root.join("bin");
        assert!(bin.join("kubelet-labeler").is_file());
        for arch in arches {
            for name in ["kubelet-labeler-wrapper", "kubelet-labeler-select"] {
                let path = bin.join(format!("{name}-{arch}"));
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert_eq!(text, format!("{arch}-unknown-linux-musl {name}\n"));
                let mode = std::fs::metadata(&path).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o755, "{}", path.display());
            }
        }
    }
}

/// The shell blocks of the README's `## Install` section.
fn readme_install_blocks() -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme
        .find("\n## Install\n")
        .expect("README has ## Install");
    let section = &readme[start + 1..];
    let end = section[1..].find("\n## ").map_or(section.len(), |e| e + 1);
    sh_blocks("README.md", &section[..end])
        .into_iter()
        .map(|b| b.text)
        .collect()
}

/// The README's install section is one command: one shell block, one line
/// once its comment is left out, no loop. Run as written (into ~/.cargo/bin),
/// it installs the CLI, the wrapper and the selector of this host's
/// architecture (x86_64, render's default, on any host) with two cargo
/// invocations.
#[test]
fn readme_install_is_one_command_with_two_cargo_invocations() {
    let Some(bash) = skipped::tool("bash") else {
        return;
    };
    let blocks = readme_install_blocks();
    assert_eq!(blocks.len(), 1, "README ## Install: {blocks:#?}");
    let commands: Vec<&str> = blocks[0]
        .lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(
        commands.len() == 1 && !commands[0].contains(';') && !commands[0].contains("&&"),
        "README ## Install is not one command: {commands:#?}"
    );
    let s = stubbed();
    s.run(&bash, &blocks[0]);
    let mut arches = vec!["x86_64"];
    if std::env::consts::ARCH == "aarch64" {
        arches.push("aarch64");
    }
    s.assert_two_cargo_calls(&arches);
    s.assert_installed(&s.home.join(".cargo"), &arches);
}

/// Both architectures asked: still one build (both targets), and each
/// arch's programs installed under its own name.
#[test]
fn install_sh_builds_every_arch_asked_in_one_cargo_build() {
    let Some(bash) = skipped::tool("bash") else {
        return;
    };
    let s = stubbed();
    let root = s.home.join("elsewhere");
    s.run(
        &bash,
        &format!(
            "bash dist/install.sh --root {} --arch aarch64 --arch x86_64 --arch aarch64",
            root.display()
        ),
    );
    s.assert_two_cargo_calls(&["x86_64", "aarch64"]);
    s.assert_installed(&root, &["x86_64", "aarch64"]);
}

/// Each architecture's flags reach its own target only, in whatever order
/// the arches are named: aarch64 is built without LLVM's machine outliner,
/// x86_64 never gets that flag, and RUSTFLAGS (which would override the
/// per-target flags) carries nothing.
#[test]
fn each_arch_gets_its_own_flags_in_any_order() {
    let Some(bash) = skipped::tool("bash") else {
        return;
    };
    for order in ["x86_64 aarch64", "aarch64 x86_64", "aarch64", "x86_64"] {
        let s = stubbed();
        s.run(
            &bash,
            &format!("bash machineconfigs/build-wrapper.sh {order}"),
        );
        let flags = std::fs::read_to_string(format!("{}.flags", s.log.display())).unwrap();
        let get = |k: &str| {
            flags
                .lines()
                .find_map(|l| l.strip_prefix(&format!("flags {k}=")))
                .unwrap_or_else(|| panic!("{order}: no {k} in {flags}"))
                .to_string()
        };
        let outliner = "-enable-machine-outliner=never";
        assert_eq!(get("RUSTFLAGS"), "", "{order}");
        let x86 = get("x86_64");
        let arm = get("aarch64");
        assert_eq!(x86.is_empty(), !order.contains("x86_64"), "{order}: {x86}");
        assert_eq!(arm.is_empty(), !order.contains("aarch64"), "{order}: {arm}");
        assert!(!x86.contains(outliner), "{order}: {x86}");
        if !arm.is_empty() {
            assert!(arm.contains(outliner), "{order}: {arm}");
        }
        if !arm.is_empty() && !x86.is_empty() {
            // the same flags otherwise
            assert_eq!(
                arm.replace(&format!(" -Cllvm-args={outliner}"), ""),
                x86,
                "{order}"
            );
        }
    }
}
