//! Whether systemd runs the wrapper at kubelet's start: our drop-in (or
//! the generator that writes it) there, not hidden, not taken back by a
//! later drop-in. `explain` reports it; `plan` asks it of each pool.

use std::path::{Path, PathBuf};

use crate::node::contract::{GENERATOR_PATH, WRAPPER_DROPIN_NAME, WRAPPER_PATH};
use crate::node::unit::{self, UnitPaths};

/// Our generator in `root`, if it is there: the unit it writes the
/// wrapper's drop-in for and the architectures (its `unit=` line and `case`
/// arms, as `render::dropins::generator` writes them), and whether systemd
/// runs it (an executable file).
pub(super) struct Generator {
    unit: String,
    arches: Vec<String>,
    executable: bool,
    /// Not an earlier release's, and not the code this release renders for
    /// its unit and architectures (an `exit 0` edited in): what it does at
    /// boot is unknown.
    edited: bool,
    /// Stamped with an earlier release's node format (or none).
    earlier: bool,
    /// The profile this release renders it with, when it is its render.
    profile: Option<crate::node::kubelet::Profile>,
    /// Why the wrapper of an architecture it ships, where the tree holds
    /// one, cannot run (not a regular executable file, not an ELF program
    /// of that architecture): the generator's own check, which then
    /// writes no drop-in.
    broken: Vec<String>,
}

/// The generator's `why_not` on the tree's wrapper for `arch`: None when
/// it can run, or when the tree holds none (on RHCOS, /usr/local/bin is
/// under /var, mounted after generators run).
fn wrapper_broken(root: &Path, arch: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let node = format!("{WRAPPER_PATH}.{arch}");
    let path = unit::search::contained(root, Path::new(&node)).ok()?;
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Some(format!("{node} is not an executable file"));
    }
    // Its ELF header (a regular file: opening it never waits).
    let mut head = Vec::new();
    if let Ok(f) = std::fs::File::open(&path) {
        use std::io::Read;
        let _ = f.take(64).read_to_end(&mut head);
    }
    let of = crate::cli::render::arch::Arch::of_elf(&head).map(|a| a.name());
    (of != Some(arch)).then(|| format!("{node} is not an {arch} program"))
}

pub(super) fn generator(root: &Path) -> Option<Generator> {
    use std::os::unix::fs::PermissionsExt;
    let path = unit::search::contained(root, Path::new(GENERATOR_PATH)).ok()?;
    let executable = std::fs::metadata(&path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
    // A regular file (never a FIFO that would keep us waiting), as much
    // of it as a generator of ours takes.
    let bytes = crate::node::nodefs::read_regular(&path, 64 * 1024)
        .ok()?
        .unwrap_or_default();
    let text = String::from_utf8(bytes).ok()?;
    let unit = text
        .lines()
        .find_map(|l| l.strip_prefix("unit='")?.strip_suffix('\''))
        .unwrap_or_default()
        .to_string();
    let arches: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_once(") elf='").map(|(a, _)| a.to_string()))
        .collect();
    // An earlier release's generator is judged by that release (`formats`
    // says this CLI cannot); any other must be this release's code.
    let earlier = match crate::cli::render::node_format::of_file(text.as_bytes()) {
        Some(Some(f)) => f != crate::node::contract::NODE_FORMAT,
        Some(None) => true,
        None => false,
    };
    let profile = rendered_profile(&text, &unit, &arches);
    let edited = !earlier && profile.is_none();
    let broken = arches
        .iter()
        .filter_map(|a| wrapper_broken(root, a))
        .collect();
    Some(Generator {
        unit,
        arches,
        executable,
        edited,
        earlier,
        profile,
        broken,
    })
}

/// Why what `root` holds at [`GENERATOR_PATH`] is not the generator this
/// release renders for kubelet.service with `profile` on nodes of each of
/// `arches` (None: it is). An earlier release's is not: what it does is
/// that release's to judge. One rendered for other architectures writes
/// no drop-in on those nodes, which then start kubelet without the
/// wrapper (review 26 r26a F1).
pub fn generator_not_this_release(
    root: &Path,
    profile: crate::node::kubelet::Profile,
    arches: &[String],
) -> Option<String> {
    let g = match generator(root) {
        None => return Some("it is not a text file of at most 64 KiB".into()),
        Some(g) => g,
    };
    if g.earlier {
        return Some(
            "it is an earlier release's generator: render the change with the release that plans it"
                .into(),
        );
    }
    if g.edited {
        return Some("its code is not what this release renders".into());
    }
    if g.unit != "kubelet.service" {
        return Some(format!(
            "it writes the wrapper's drop-in for {}, not kubelet.service",
            g.unit
        ));
    }
    if g.profile != Some(profile) {
        return Some(format!(
            "it is rendered for another profile than {} (plan's --profile)",
            match profile {
                crate::node::kubelet::Profile::OpenShift => "openshift",
                crate::node::kubelet::Profile::Upstream => "upstream",
            }
        ));
    }
    let missing: Vec<&str> = (arches.iter())
        .filter(|a| !g.arches.contains(a))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "it ships no wrapper for {} (only {}): on those nodes it writes no drop-in and \
             kubelet starts without the wrapper",
            missing.join(", "),
            if g.arches.is_empty() {
                "none".to_string()
            } else {
                g.arches.join(", ")
            }
        ));
    }
    None
}

/// Whether `text` is the generator render writes for `unit` and `arches`
/// (with either profile), byte for byte but for the release in its stamp
/// (`kubelet-labeler VERSION+node.N`, of this node format: the caller
/// checks). Comments are compared too: the drop-in goes through a
/// double-quoted word (an unquoted here-document in earlier releases),
/// where a `#` line is the drop-in's text and a `$(...)` in it runs at
/// boot.
#[cfg(test)]
fn as_rendered(text: &str, unit: &str, arches: &[String]) -> bool {
    rendered_profile(text, unit, arches).is_some()
}

/// [`as_rendered`]: the profile it is rendered with, if any.
fn rendered_profile(
    text: &str,
    unit: &str,
    arches: &[String],
) -> Option<crate::node::kubelet::Profile> {
    use crate::cli::render::{RENDERED_BY, arch::Arch, generator as rendered};
    use crate::node::kubelet::Profile;
    // (render checks unit names before it writes one into the script.)
    let unit_ok = |u: &str| {
        !u.is_empty()
            && u.bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"@._-:".contains(&c))
    };
    let arches = arches
        .iter()
        .map(|a| Arch::from_name(a))
        .collect::<Option<Vec<_>>>()?;
    if !unit_ok(unit) {
        return None;
    }
    // The stamp on its second line: a release's name, in characters that
    // neither sh nor a here-document expands.
    let stamp = text
        .split('\n')
        .nth(1)
        .and_then(|l| l.strip_prefix("# "))
        .and_then(|l| l.split_once(": ").map(|(s, _)| s))?;
    let plain = stamp.strip_prefix("kubelet-labeler ").is_some_and(|v| {
        !v.is_empty()
            && v.bytes()
                .all(|c| c.is_ascii_alphanumeric() || b".+-_".contains(&c))
    });
    if !plain {
        return None;
    }
    [Profile::OpenShift, Profile::Upstream]
        .into_iter()
        .find(|&p| {
            // As any release of this node format rendered it.
            rendered::GeneratorText::ALL.into_iter().any(|t| {
                rendered::generator_text(t, p, unit, &arches).replace(RENDERED_BY, stamp) == text
            })
        })
}

/// Whether systemd would run the wrapper at boot: is its drop-in there (or
/// our generator, which writes it into /run/systemd/generator), and does a
/// drop-in that applies after it take `ExecStart=` back?
pub(super) struct Reach {
    pub installed: bool,
    /// Installed, but a later drop-in takes `ExecStart=` back: systemd
    /// runs another command, or none.
    pub bypassed: bool,
    /// Why kubelet would start without the wrapper though it is installed.
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
}

/// The generator's output directory, where its drop-in lands.
const GENERATOR_DIR: &str = "/run/systemd/generator";

pub(super) fn reach(paths: &UnitPaths, unit_name: &str, wrapper: &unit::Program) -> Reach {
    let mut r = Reach {
        installed: false,
        bypassed: false,
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    let files = unit::search::find(&paths.root, &paths.dirs, unit_name);
    let is_ours = |d: &PathBuf| d.file_name().is_some_and(|n| n == WRAPPER_DROPIN_NAME);
    // Priority of a node path: the index of its search directory.
    let rank = |p: &Path| paths.dirs.iter().position(|d| p.starts_with(d));
    let in_tree = files.dropins.iter().find(|d| is_ours(d));
    let gen_writes = match generator(&paths.root) {
        Some(g) if !g.executable => {
            r.warnings.push(format!(
                "{GENERATOR_PATH} is not executable: systemd does not run it, and it writes no {WRAPPER_DROPIN_NAME}"
            ));
            false
        }
        Some(g) if g.edited => {
            r.errors.push(format!(
                "{GENERATOR_PATH} is not the generator this release renders for {} (its code \
                 differs: edited by hand or by another tool): what it does at boot cannot be \
                 judged, so it is taken to write no {WRAPPER_DROPIN_NAME} and kubelet to start \
                 without our labels/taints; render it again with `kubelet-labeler render`",
                g.unit
            ));
            false
        }
        Some(g) if !g.broken.is_empty() => {
            r.errors.push(format!(
                "{}: {GENERATOR_PATH} then writes no {WRAPPER_DROPIN_NAME} and kubelet starts \
                 without our labels/taints (its own check, at boot)",
                g.broken.join("; ")
            ));
            false
        }
        Some(g) if g.unit != unit_name => {
            r.warnings.push(format!(
                "{GENERATOR_PATH} writes the wrapper's drop-in for {}, not {unit_name}",
                g.unit
            ));
            false
        }
        Some(g) => {
            if in_tree.is_none() {
                r.warnings.push(format!(
                    "the wrapper's drop-in is not in this tree: {GENERATOR_PATH} writes it into {GENERATOR_DIR} at boot, on nodes of {}",
                    if g.arches.is_empty() {
                        "no architecture".to_string()
                    } else {
                        g.arches.join(", ")
                    }
                ));
            }
            true
        }
        None => false,
    };
    r.installed = match in_tree {
        // A file of that name in a directory before the generator's
        // shadows what the generator writes; one after it is shadowed.
        Some(d) if unit::search::is_masked(&paths.root, d) => {
            let generator_wins = gen_writes
                && match (rank(Path::new(GENERATOR_DIR)), rank(d)) {
                    (Some(g), Some(masking)) => g < masking,
                    (generator, _) => generator.is_some(),
                };
            if !generator_wins {
                r.errors.push(format!(
                    "{} masks the wrapper's drop-in (empty, or a link to /dev/null): systemd runs kubelet's own ExecStart=",
                    d.display()
                ));
            }
            generator_wins
        }
        // A drop-in of our name that outranks the generator's hides it: it
        // must itself run the wrapper (`# nothing` there ran kubelet's own
        // ExecStart=, as systemd 252 showed).
        Some(d) => {
            let generator_wins = gen_writes
                && match (rank(Path::new(GENERATOR_DIR)), rank(d)) {
                    (Some(g), Some(ours)) => g < ours,
                    (generator, _) => generator.is_some(),
                };
            let runs = generator_wins || dropin_runs_wrapper(paths, d);
            if !runs {
                // Not installed, first of what is said (`wrapper_off`).
                r.warnings.insert(0, format!(
                    "{} has the wrapper's drop-in name but sets no command (no ExecStart= reset \
                     and the wrapper's), and hides the drop-in {GENERATOR_PATH} writes: systemd \
                     runs kubelet's own ExecStart=, without our labels/taints; remove it",
                    d.display()
                ));
            }
            runs
        }
        // Where the generator writes must be on the search path.
        None => gen_writes && rank(Path::new(GENERATOR_DIR)).is_some(),
    };
    if !r.installed {
        return r;
    }
    // Our drop-in's own command, when it is in the tree: a copy of it
    // after ours runs the same.
    let ours = in_tree
        .and_then(|d| exec_starts(paths, d).ok())
        .and_then(|v| v.into_iter().rfind(|c| !c.is_empty()));
    // Drop-ins apply in byte order of their names, whatever their directory.
    for d in files.dropins.iter().filter(|d| {
        d.file_name()
            .is_some_and(|n| n.as_encoded_bytes() > WRAPPER_DROPIN_NAME.as_bytes())
    }) {
        let exec_starts = match exec_starts(paths, d) {
            Ok(v) => v,
            Err(e) => {
                r.errors.push(format!(
                    "{}: cannot read it ({e}), and it sorts after {WRAPPER_DROPIN_NAME}: whether it takes ExecStart= back from the wrapper is unknown; run explain as root or fix the file",
                    d.display()
                ));
                continue;
            }
        };
        let exec_starts: Vec<&str> = exec_starts.iter().map(String::as_str).collect();
        let name = d.display();
        let fix = format!(
            "remove it, or rename it to sort before {WRAPPER_DROPIN_NAME} (the wrapper then runs its command)"
        );
        match exec_starts.iter().rposition(|v| v.is_empty()) {
            // Not a bypass: systemd runs the wrapper, which leaves this
            // drop-in out like its own (`explain` says so).
            Some(reset)
                if exec_starts.len() == reset + 2
                    && runs_wrapper(&paths.root, exec_starts[reset + 1], wrapper)
                    && (renders_arguments(exec_starts[reset + 1], unit_name)
                        || ours.as_deref() == Some(exec_starts[reset + 1])) => {}
            Some(reset) => {
                let why = match exec_starts.get(reset + 1) {
                    Some(cmd) => format!(
                        "{name} sorts after {WRAPPER_DROPIN_NAME} and resets ExecStart= to {cmd}: systemd runs that instead of the wrapper, and kubelet starts without our labels/taints; {fix}"
                    ),
                    None => format!(
                        "{name} sorts after {WRAPPER_DROPIN_NAME} and resets ExecStart= to nothing: the unit has no command, and systemd refuses to start it; {fix}"
                    ),
                };
                r.bypassed = true;
                r.errors.push(why);
            }
            None if !exec_starts.is_empty() => {
                r.bypassed = true;
                r.errors.push(format!(
                    "{name} sorts after {WRAPPER_DROPIN_NAME} and adds an ExecStart= without resetting it: with the wrapper's, the unit has two, and systemd refuses to start it; {fix}"
                ));
            }
            None => r.warnings.push(format!(
                "{name} sorts after {WRAPPER_DROPIN_NAME}; it sets no ExecStart=, so the wrapper still runs"
            )),
        }
    }
    r
}

/// Whether the drop-in `d` of our name sets a command: its last
/// `ExecStart=` reset followed by one command (the wrapper, wherever a
/// tree installs it; one of ours that sets none runs kubelet's own).
fn dropin_runs_wrapper(paths: &UnitPaths, d: &Path) -> bool {
    exec_starts(paths, d).is_ok_and(
        |v| matches!(v.iter().rposition(|v| v.is_empty()), Some(reset) if v.len() == reset + 2),
    )
}

/// The `ExecStart=` values of the drop-in `d`, trimmed, in order (an empty
/// one resets the list).
fn exec_starts(paths: &UnitPaths, d: &Path) -> std::io::Result<Vec<String>> {
    let data = unit::read_node(paths, d)?;
    let parsed = unit::syntax::parse(&data, &d.display().to_string());
    Ok(parsed
        .assignments
        .iter()
        .filter(|a| a.section == "Service" && a.key == "ExecStart")
        .map(|a| a.value.trim().to_string())
        .collect())
}

/// Why no node of the tree at `root` runs the wrapper at kubelet's start
/// (`plan`'s question of a pool's laid-out MachineConfigs): not installed,
/// its drop-in hidden, or a later drop-in taking `ExecStart=` back.
pub fn wrapper_off(root: &Path) -> Option<String> {
    let paths = UnitPaths::system(root);
    let unit_name = "kubelet.service";
    let wrapper = wrapper_program(&paths, unit_name);
    let r = reach(&paths, unit_name, &wrapper);
    if !r.errors.is_empty() {
        return Some(format!("the wrapper does not run: {}", r.errors.join("; ")));
    }
    if !r.installed {
        let why = r
            .warnings
            .first()
            .cloned()
            .unwrap_or_else(|| format!("neither {GENERATOR_PATH} nor its drop-in is there"));
        return Some(format!(
            "the wrapper does not run: {why}; kubelet starts without our labels and taints"
        ));
    }
    None
}

/// Whether the wrapper's arguments in `command` are the ones render writes
/// (`--unit %n`, and `--profile openshift` or `upstream`): another
/// `--unit`, `--root` or `--facts-root` makes it derive from another unit or
/// tree than kubelet's (a later drop-in so written started kubelet without
/// our taints while explain showed them).
fn renders_arguments(command: &str, unit_name: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().skip(1).collect();
    let unit_ok = |u: &str| u == "%n" || u == unit_name;
    match words.as_slice() {
        ["--unit", u] => unit_ok(u),
        ["--unit", u, "--profile", p] => unit_ok(u) && matches!(*p, "openshift" | "upstream"),
        _ => false,
    }
}

/// Whether an `ExecStart=` command runs the wrapper.
fn runs_wrapper(root: &Path, command: &str, wrapper: &unit::Program) -> bool {
    let exe = command
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_start_matches(['-', '@', ':', '+', '!', '|']);
    wrapper.is(root, Path::new(exe), None)
}

/// Whether a node path is where the wrapper lives (its path, or the
/// per-architecture one the generator picks).
fn is_wrapper_path(exe: &Path) -> bool {
    let Some(exe) = exe.to_str() else {
        return false;
    };
    exe == WRAPPER_PATH
        || exe
            .strip_prefix(WRAPPER_PATH)
            .and_then(|rest| rest.strip_prefix('.'))
            .is_some_and(|arch| !arch.is_empty() && !arch.contains('/'))
}

/// The wrapper as the boot wrapper knows itself (the file it runs from):
/// the file the wrapper's drop-in in the tree runs, and the paths it is
/// installed at (a tree from MachineConfigs may not hold the file).
pub(super) fn wrapper_program(paths: &UnitPaths, unit_name: &str) -> unit::Program {
    use std::os::unix::fs::MetadataExt;
    let mut program = unit::Program {
        ids: Vec::new(),
        path_is: Some(is_wrapper_path),
        what: "the wrapper",
    };
    let files = unit::search::find(&paths.root, &paths.dirs, unit_name);
    let Some(ours) = files
        .dropins
        .iter()
        .find(|d| d.file_name().is_some_and(|n| n == WRAPPER_DROPIN_NAME))
    else {
        return program;
    };
    let exe = exec_starts(paths, ours)
        .ok()
        .and_then(|v| v.into_iter().rfind(|c| !c.is_empty()))
        .and_then(|c| c.split_whitespace().next().map(str::to_string));
    if let Some(exe) = exe
        && let Ok(m) = unit::search::contained(
            &paths.root,
            Path::new(exe.trim_start_matches(['-', '@', ':', '+', '!', '|'])),
        )
        .and_then(std::fs::metadata)
    {
        program.ids.push((m.dev(), m.ino()));
    }
    program
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::render::{arch::Arch, generator as rendered};
    use crate::node::kubelet::Profile;

    /// What render writes is ours, with either profile and any
    /// architectures; code changed in any way sh would see is not.
    #[test]
    fn only_the_rendered_code_is_ours() {
        let arches = [Arch::X86_64, Arch::Aarch64];
        let names: Vec<String> = arches.iter().map(|a| a.name().to_string()).collect();
        for p in [Profile::OpenShift, Profile::Upstream] {
            let text = rendered::generator(p, "kubelet.service", &arches);
            assert!(as_rendered(&text, "kubelet.service", &names));
            // Another release of this node format: its stamp.
            let other = text.replace(
                crate::cli::render::RENDERED_BY,
                "kubelet-labeler 0.0.9+node.5",
            );
            assert!(as_rendered(&other, "kubelet.service", &names));
            // Earlier releases of this node format: a here-document, and
            // before it no PATH of its own.
            for t in [
                rendered::GeneratorText::HereDocument,
                rendered::GeneratorText::NoOwnPath,
            ] {
                let earlier = rendered::generator_text(t, p, "kubelet.service", &arches).replace(
                    crate::cli::render::RENDERED_BY,
                    "kubelet-labeler 0.0.9+node.5",
                );
                assert_ne!(earlier, other);
                assert!(as_rendered(&earlier, "kubelet.service", &names), "{t:?}");
            }
            // A PATH of another's is an edit.
            let path = other.replacen("PATH=/usr/sbin:", "PATH=/tmp:/usr/sbin:", 1);
            assert!(!as_rendered(&path, "kubelet.service", &names));
            assert!(!as_rendered(&text, "kubelet.service", &names[..1]));
            assert!(!as_rendered(&text, "crio.service", &names));
            for edited in [
                text.replacen("#!/bin/sh\n", "#!/bin/true\n", 1),
                text.replacen("\nesac\n", "\nesac\r\n", 1),
                text.replacen("\nesac\n", "\nesac\nexit 0\n", 1),
                text.replacen("\tfi\n", "\tfi # x\n", 1),
                text.clone() + "true\n",
                // A comment is the drop-in's text inside the quoted word,
                // and `$(...)` in it runs.
                text.replacen("[Service]\n", "[Service]\n# $(true)\n", 1),
                text.replacen("SyslogIdentifier=", "SyslogIdentifier=$(true)", 1),
                text.replacen("\nesac\n", "\n\t# a comment\n\nesac\n", 1),
                text.replacen("kubelet-labeler ", "kubelet-labeler $(true)", 1),
            ] {
                assert!(!as_rendered(&edited, "kubelet.service", &names), "{edited}");
            }
        }
    }
}
