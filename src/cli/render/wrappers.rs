//! Which wrapper binaries a render ships: the `--wrapper` files, and for
//! each `--arch` no file covers, the static build found beside this program.
//! Every one must run on a node without a dynamic loader (see
//! `machineconfig::check_wrapper`): a plain `cargo build` of the wrapper is
//! linked against glibc and is refused, never picked silently.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::arch::{Arch, one_per_arch};
use super::input::{WRAPPER, read_file};
use super::machineconfig::{check_no_interpreter, check_wrapper};
use super::node_format::{self, WRAPPER_MARK, inverted, wrapper_format};
use crate::node::contract;

/// Where to look: the directory of the running CLI.
pub struct Lookup {
    pub exe_dir: PathBuf,
}

impl Lookup {
    pub fn of_this_program() -> Result<Lookup> {
        let exe = std::env::current_exe().context("finding this program")?;
        let exe_dir = exe
            .parent()
            .context("finding this program's directory")?
            .to_path_buf();
        Ok(Lookup { exe_dir })
    }

    /// The places a static wrapper for `arch` may be, in order: as
    /// dist/build-static.sh ships it beside the CLI, as
    /// machineconfigs/build-wrapper.sh leaves it in cargo's target directory
    /// (the CLI being in target/release or target/debug), and under the
    /// plain name beside the CLI (a musl build of both).
    pub fn candidates(&self, arch: Arch) -> Vec<PathBuf> {
        self.candidates_of(arch, Program::Wrapper)
    }

    /// [`Lookup::candidates`] of either program.
    pub fn candidates_of(&self, arch: Arch, program: Program) -> Vec<PathBuf> {
        let name = program.name();
        vec![
            self.exe_dir.join(format!("{name}-{}", arch.name())),
            self.exe_dir
                .join("..")
                .join(format!("{}-unknown-linux-musl", arch.name()))
                .join("wrapper")
                .join(name),
            self.exe_dir.join(name),
        ]
    }

    /// machineconfigs/build-wrapper.sh of the source checkout this CLI was
    /// built in, if it is one (target/<profile>/ or target/<triple>/<profile>/).
    pub fn build_script(&self) -> Option<PathBuf> {
        self.exe_dir.ancestors().take(4).find_map(|d| {
            let script = d.join("machineconfigs/build-wrapper.sh");
            (script.is_file() && d.join("Cargo.toml").is_file())
                .then(|| std::fs::canonicalize(&script).unwrap_or(script))
        })
    }

    /// How to get a static wrapper for `arch`, as a command that works as
    /// written from any directory.
    pub fn build_hint(&self, arch: Arch) -> String {
        match (arch, self.build_script()) {
            (Arch::X86_64 | Arch::Aarch64, Some(script)) => format!(
                "build it and pass it: `--wrapper \"$(bash {} {arch})\"`",
                shell_word(&script.display().to_string())
            ),
            (Arch::X86_64 | Arch::Aarch64, None) => format!(
                "pass the static kubelet-labeler-wrapper-{arch} of a release as --wrapper or \
                 install it as {}, or build it in a source checkout with \
                 `bash machineconfigs/build-wrapper.sh {arch}`{}",
                self.exe_dir.join(shipped_name(arch)).display(),
                self.install_hint(arch)
            ),
            _ => format!(
                "build a static {arch} wrapper (cargo build --profile wrapper --bin \
                 kubelet-labeler-wrapper --no-default-features --target {}-unknown-linux-musl) \
                 and pass it as --wrapper",
                if arch == Arch::Ppc64le {
                    "powerpc64le"
                } else {
                    arch.name()
                }
            ),
        }
    }

    /// When this CLI is installed in a `bin/` directory (as dist/install.sh
    /// installs it), the command that adds `arch`'s wrapper and selector
    /// beside it from a source checkout: "" otherwise.
    fn install_hint(&self, arch: Arch) -> String {
        match self.exe_dir.parent() {
            Some(root) if self.exe_dir.file_name().is_some_and(|n| n == "bin") => format!(
                " (or both static programs at once: `bash dist/install.sh --arch {arch} --root {}`)",
                shell_word(&root.display().to_string())
            ),
            _ => String::new(),
        }
    }

    /// How to get the static selector for `arch`, as commands that work as
    /// written from any directory and leave it where [`Lookup::selector_for`]
    /// looks.
    pub fn selector_hint(&self, arch: Arch) -> String {
        let dest = self
            .exe_dir
            .join(format!("kubelet-labeler-select-{}", arch.name()));
        let dest = shell_word(&dest.display().to_string());
        match (arch, self.build_script()) {
            (Arch::X86_64 | Arch::Aarch64, Some(script)) => format!(
                "build and install it: `install -m 0755 \"$(bash {} {arch} kubelet-labeler-select)\" {dest}`, \
                 or pass one with --selector",
                shell_word(&script.display().to_string())
            ),
            (Arch::X86_64 | Arch::Aarch64, None) => format!(
                "install the static kubelet-labeler-select-{arch} of a release (dist/build-static.sh) \
                 as {dest}; or, from a source checkout, `install -m 0755 \"$(bash \
                 machineconfigs/build-wrapper.sh {arch} kubelet-labeler-select)\" {dest}`{}; or \
                 pass one with --selector",
                self.install_hint(arch)
            ),
            _ => format!(
                "build a static {arch} selector (cargo build --profile wrapper --bin \
                 kubelet-labeler-select --no-default-features --target {}-unknown-linux-musl) \
                 and pass it as --selector",
                if arch == Arch::Ppc64le {
                    "powerpc64le"
                } else {
                    arch.name()
                }
            ),
        }
    }

    /// The static selector for `arch`: the first candidate that is one.
    pub fn selector_for(&self, arch: Arch) -> Result<PathBuf> {
        Ok(self.find_program(arch, Program::Selector)?.0)
    }

    /// The first candidate that is a static wrapper for `arch`.
    fn find(&self, arch: Arch) -> Result<(PathBuf, Vec<u8>)> {
        self.find_program(arch, Program::Wrapper)
    }

    fn find_program(&self, arch: Arch, program: Program) -> Result<(PathBuf, Vec<u8>)> {
        let mut refused = Vec::new();
        let mut looked = Vec::new();
        for path in self.candidates_of(arch, program) {
            if !path.exists() {
                looked.push(path.display().to_string());
                continue;
            }
            let checked = read_wrapper(&path).and_then(|b| {
                check_wrapper(&b, arch, &path)?;
                check_ours(&b, program, &path)?;
                Ok(b)
            });
            match checked {
                Ok(bytes) => return Ok((path, bytes)),
                Err(e) => refused.push(format!("{e:#}")),
            }
        }
        let mut why = match program {
            Program::Wrapper => format!("no static wrapper for {arch} found beside this program"),
            Program::Selector => {
                format!("no static kubelet-labeler-select for {arch} found beside this program")
            }
        };
        if !looked.is_empty() {
            why += &format!(" (looked for {})", looked.join(", "));
        }
        for r in refused {
            why += &format!("; {r}");
        }
        let hint = match program {
            Program::Wrapper => self.build_hint(arch),
            Program::Selector => self.selector_hint(arch),
        };
        bail!("{why}; {hint}")
    }

    /// One static wrapper per architecture: each file for the architecture
    /// its ELF header names, and the one found for each of `arches` no file
    /// covers. Sorted by architecture.
    pub fn wrappers_for(&self, arches: &[Arch], files: &[PathBuf]) -> Result<Vec<(Arch, Vec<u8>)>> {
        let mut out = Vec::new();
        for path in files {
            let bytes = read_wrapper(path).map_err(|e| {
                anyhow::anyhow!(
                    "reading the wrapper {} (fix --wrapper): {e:#}; {}",
                    path.display(),
                    self.build_hint(host_arch().unwrap_or(Arch::X86_64))
                )
            })?;
            let Some(arch) = Arch::of_elf(&bytes) else {
                bail!(
                    "{} is not a 64-bit ELF program for x86_64, aarch64, ppc64le or s390x; {}",
                    path.display(),
                    self.build_hint(host_arch().unwrap_or(Arch::X86_64))
                );
            };
            check_wrapper(&bytes, arch, path)
                .and_then(|()| check_ours(&bytes, Program::Wrapper, path))
                .map_err(|e| anyhow::anyhow!("{e}; {}", self.build_hint(arch)))?;
            out.push((arch, bytes));
        }
        for &a in arches {
            if !out.iter().any(|(have, _)| *have == a) {
                out.push((a, self.find(a)?.1));
            }
        }
        one_per_arch(out)
    }
}

/// A wrapper file's bytes, refused past the size limit; one that names an
/// ELF interpreter (cargo's debug build, tens of MiB) is refused as
/// dynamic, the reason that says the fix, read from its first 64 KiB.
fn read_wrapper(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let too_big = match read_file(path, WRAPPER) {
        Ok(bytes) => return Ok(bytes),
        Err(e) => e,
    };
    let mut head = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(64 << 10).read_to_end(&mut head);
    }
    check_no_interpreter(&head, path)?;
    Err(too_big)
}

/// Which of our static programs a file must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// kubelet.service execs it on every node.
    Wrapper,
    /// The fleet ISO runs it before coreos-installer.
    Selector,
}

impl Program {
    /// The program's file name (`-<arch>` added where it ships).
    pub fn name(self) -> &'static str {
        match self {
            Program::Wrapper => "kubelet-labeler-wrapper",
            Program::Selector => "kubelet-labeler-select",
        }
    }
}

const SELECTOR_MARK: [u8; contract::SELECTOR_USAGE_HEAD.len()] =
    inverted(contract::SELECTOR_USAGE_HEAD);

/// Refuse a static program that is not our `program`: kubelet.service (or
/// the fleet ISO) would exec it. Ours carry the head of their usage line.
pub fn check_ours(bytes: &[u8], program: Program, path: &Path) -> Result<()> {
    let (mark, name, flag, runs): (&[u8], _, _, _) = match program {
        Program::Wrapper => (
            &WRAPPER_MARK,
            "kubelet-labeler-wrapper",
            "--wrapper",
            "kubelet.service would exec it on every node",
        ),
        Program::Selector => (
            &SELECTOR_MARK,
            "kubelet-labeler-select",
            "--selector",
            "the fleet ISO would run it to choose each machine's pool",
        ),
    };
    let carries = bytes
        .windows(mark.len())
        .any(|w| w.iter().zip(mark).all(|(b, m)| *b == !*m));
    if !carries {
        bail!(
            "{} is not our {name} (it lacks {name}'s usage line), and {runs}; \
             give {flag} the static {name} of this release",
            path.display()
        );
    }
    // What it reads must be what this render writes (docs/upgrading.md).
    if program == Program::Wrapper {
        let format = wrapper_format(bytes).flatten();
        if format.as_deref() != Some(contract::NODE_FORMAT) {
            bail!(
                "{} is a {name} of {}, and this release writes node format {} (drop-ins, \
                 rules) that it would misread on every node; give {flag} the static {name} \
                 of this release",
                path.display(),
                node_format::describe(format.as_deref(), true),
                contract::NODE_FORMAT
            );
        }
    }
    Ok(())
}

/// The name dist/build-static.sh gives the static wrapper for `arch`.
pub fn shipped_name(arch: Arch) -> String {
    format!("kubelet-labeler-wrapper-{}", arch.name())
}

/// This host's architecture, if we ship wrappers for it.
pub fn host_arch() -> Option<Arch> {
    Arch::from_name(std::env::consts::ARCH)
}

/// `s` quoted for a POSIX shell when it needs it.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn static_elf(arch: Arch) -> Vec<u8> {
        let mut v = vec![0u8; 64];
        v[..4].copy_from_slice(b"\x7fELF");
        v[4] = 2;
        v[5] = if arch.big_endian() { 2 } else { 1 };
        let (t, m) = if arch.big_endian() {
            (2u16.to_be_bytes(), arch.elf_machine().to_be_bytes())
        } else {
            (2u16.to_le_bytes(), arch.elf_machine().to_le_bytes())
        };
        v[16..18].copy_from_slice(&t);
        v[18..20].copy_from_slice(&m);
        v.extend_from_slice(contract::WRAPPER_USAGE_HEAD.as_bytes());
        v.extend_from_slice(contract::WRAPPER_FORMAT_MARK.as_bytes());
        v.extend_from_slice(contract::NODE_FORMAT.as_bytes());
        v
    }

    /// A wrapper of another node format (an earlier release's, without
    /// one in its usage line, or another number) is refused.
    #[test]
    fn a_wrapper_of_another_node_format_is_refused() {
        let ours = static_elf(Arch::X86_64);
        assert!(check_ours(&ours, Program::Wrapper, Path::new("w")).is_ok());
        assert_eq!(
            wrapper_format(&ours),
            Some(Some(contract::NODE_FORMAT.into()))
        );
        let head = ours.len() - contract::WRAPPER_FORMAT_MARK.len() - contract::NODE_FORMAT.len();
        let mut earlier = ours[..head].to_vec();
        earlier.extend_from_slice(b"--unit NAME] [--stop-post]");
        assert_eq!(wrapper_format(&earlier), Some(None));
        let e = check_ours(&earlier, Program::Wrapper, Path::new("w"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("an earlier release") && e.contains("--wrapper"),
            "{e}"
        );
        let mut other = ours[..head].to_vec();
        other.extend_from_slice(format!("{}99", contract::WRAPPER_FORMAT_MARK).as_bytes());
        let e = check_ours(&other, Program::Wrapper, Path::new("w"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("node format 99"), "{e}");
    }

    /// With a PT_INTERP program header: what a plain `cargo build` makes.
    fn dynamic_elf() -> Vec<u8> {
        let mut v = static_elf(Arch::X86_64);
        v.resize(64 + 56, 0);
        v[32..40].copy_from_slice(&64u64.to_le_bytes());
        v[54..56].copy_from_slice(&56u16.to_le_bytes());
        v[56..58].copy_from_slice(&1u16.to_le_bytes());
        v[64..68].copy_from_slice(&3u32.to_le_bytes());
        v
    }

    #[test]
    fn a_dynamic_build_beside_the_program_is_skipped_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let release = dir.path().join("target/release");
        std::fs::create_dir_all(&release).unwrap();
        std::fs::write(release.join("kubelet-labeler-wrapper"), dynamic_elf()).unwrap();
        let lookup = Lookup {
            exe_dir: release.clone(),
        };
        let e = lookup
            .wrappers_for(&[Arch::X86_64], &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("kubelet-labeler-wrapper is dynamically linked")
                && e.contains("x86_64-unknown-linux-musl/wrapper/kubelet-labeler-wrapper")
                && e.contains("kubelet-labeler-wrapper-x86_64"),
            "{e}"
        );
        // Not a checkout: the hint names no script path that is not there.
        assert!(
            e.contains("`bash machineconfigs/build-wrapper.sh x86_64`"),
            "{e}"
        );

        // What build-wrapper.sh leaves in target/ is found.
        let built = dir
            .path()
            .join("target/x86_64-unknown-linux-musl/wrapper/kubelet-labeler-wrapper");
        std::fs::create_dir_all(built.parent().unwrap()).unwrap();
        std::fs::write(&built, static_elf(Arch::X86_64)).unwrap();
        let w = lookup.wrappers_for(&[Arch::X86_64], &[]).unwrap();
        assert_eq!(w, vec![(Arch::X86_64, static_elf(Arch::X86_64))]);

        // A checkout: the hint is the script's absolute path.
        std::fs::create_dir_all(dir.path().join("machineconfigs")).unwrap();
        std::fs::write(dir.path().join("machineconfigs/build-wrapper.sh"), "").unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        let script =
            std::fs::canonicalize(dir.path().join("machineconfigs/build-wrapper.sh")).unwrap();
        assert_eq!(
            lookup.build_hint(Arch::Aarch64),
            format!(
                "build it and pass it: `--wrapper \"$(bash {} aarch64)\"`",
                shell_word(&script.display().to_string())
            )
        );
        // A --wrapper that is dynamic is refused with the same hint.
        let dynamic = dir.path().join("dyn");
        std::fs::write(&dynamic, dynamic_elf()).unwrap();
        let e = lookup
            .wrappers_for(&[], &[dynamic])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("dynamically linked") && e.contains("build-wrapper.sh x86_64)"),
            "{e}"
        );
    }

    /// A CLI installed in ROOT/bin (not a checkout) names, for a missing
    /// arch, the one command that installs both its programs there.
    #[test]
    fn an_installed_cli_names_install_sh_for_a_missing_arch() {
        let lookup = Lookup {
            exe_dir: PathBuf::from("/opt/my tools/bin"),
        };
        let install = "`bash dist/install.sh --arch aarch64 --root '/opt/my tools'`";
        assert!(lookup.build_hint(Arch::Aarch64).contains(install));
        assert!(lookup.selector_hint(Arch::Aarch64).contains(install));
        let elsewhere = Lookup {
            exe_dir: PathBuf::from("/opt/tools"),
        };
        assert!(!elsewhere.build_hint(Arch::Aarch64).contains("install.sh"));
    }

    #[test]
    fn shell_words() {
        assert_eq!(shell_word("/a/b-c_d.sh"), "/a/b-c_d.sh");
        assert_eq!(shell_word("/my dir/it's"), r"'/my dir/it'\''s'");
    }
}
