//! The wrapper's drop-in (the `ExecStart` swap) and the systemd generator
//! that writes it at boot: what `explain` and `plan` compare a pool's
//! generator with, so this module needs nothing of render but the stamp.

use super::RENDERED_BY;
use super::arch::Arch;
use crate::node::contract::{LABELS_VAR, TAINTS_VAR, WRAPPER_DROPIN_NAME, WRAPPER_PATH};
use crate::node::kubelet::Profile;

/// The drop-in that makes systemd run the wrapper at `exe` instead of the
/// original command. `restorecon` gives the wrapper its SELinux label before
/// it runs, as MCO does for kubenswrapper; `-` skips it where it does not
/// exist. `profile` picks the kubelet label rules the wrapper validates
/// against.
pub fn wrapper_dropin_at(profile: Profile, exe: &str) -> String {
    let args = match profile {
        Profile::Upstream => "--unit %n",
        Profile::OpenShift => "--unit %n --profile openshift",
    };
    format!(
        "# {RENDERED_BY}: run kubelet through the wrapper, which finds the original\n\
         # ExecStart, adds the labels and taints from {LABELS_VAR}\n\
         # and {TAINTS_VAR}, and execs it in place.\n\
         [Service]\n\
         SyslogIdentifier=kubelet\n\
         ExecStartPre=-/usr/sbin/restorecon {exe}\n\
         ExecStart=\n\
         ExecStart={exe} {args}\n\
         ExecStopPost=-{exe} {args} --stop-post\n"
    )
}

/// The drop-in with the wrapper at [`WRAPPER_PATH`] (tests put their own
/// wrapper's path in its place).
pub fn wrapper_dropin(profile: Profile) -> String {
    wrapper_dropin_at(profile, WRAPPER_PATH)
}

/// The systemd generator (systemd.generator(7)) render installs at
/// [`GENERATOR_PATH`] instead of a static drop-in, so that one
/// MachineConfig serves nodes of every architecture. systemd runs it at boot
/// and at every daemon-reload. It writes `unit`'s drop-in
/// ([`wrapper_dropin_at`], named [`WRAPPER_DROPIN_NAME`]) into its normal
/// output directory only when this node's architecture (`uname -m`) is one
/// of `arches` and, where the wrapper's directory is visible, the wrapper
/// there is an executable file whose ELF header is the one the kernel wants
/// for that architecture. Otherwise `unit` keeps its own `ExecStart=` and
/// one line in the kernel log says why (the journal is not up when
/// generators run); under a user manager, on stderr.
///
/// On RHCOS `/usr/local` is `/var/usrlocal`, and ostree mounts `/var` with a
/// `var.mount` unit, after generators ran: at boot the wrapper cannot be
/// looked at, and the drop-in is written for a shipped architecture on the
/// strength of render's checks (`check_wrapper`); every daemon-reload looks
/// again. A plain shell script: it must run on every architecture.
/// The generator's own PATH: the manager's `DefaultEnvironment=` reaches
/// generators (review 13), so its commands are looked up where the OS
/// keeps them. Earlier releases of node format 5 rendered the generator
/// without it.
pub const OWN_PATH: &str = "# The manager's DefaultEnvironment= reaches generators: the commands below\n\
# are found where the OS keeps them, whatever PATH it sets.\n\
PATH=/usr/sbin:/usr/bin:/sbin:/bin\n\
export PATH\n";

/// The texts node format 5 rendered the generator in, oldest first: an
/// installed node may carry any of them (`explain` takes each as ours).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeneratorText {
    /// Before it set its own PATH ([`OWN_PATH`]).
    NoOwnPath,
    /// Before it wrote the drop-in with `printf`: a here-document, which a
    /// shell may back with a temp file (bash before 5.1, as on RHEL 8 and
    /// Amazon Linux 2, in a read-only `/tmp` at generator time: no
    /// drop-in, and kubelet starts without the wrapper).
    HereDocument,
    Current,
}

impl GeneratorText {
    pub const ALL: [GeneratorText; 3] = [Self::NoOwnPath, Self::HereDocument, Self::Current];
}

pub fn generator(profile: Profile, unit: &str, arches: &[Arch]) -> String {
    generator_text(GeneratorText::Current, profile, unit, arches)
}

/// The generator as the node format 5 release `text` rendered it.
pub fn generator_text(
    text: GeneratorText,
    profile: Profile,
    unit: &str,
    arches: &[Arch],
) -> String {
    // Run again from the unit's `ExecStopPost=` (see the script's comment).
    let dropin = wrapper_dropin_at(profile, "$exe") + "ExecStopPost=-/bin/sh $0 --exec-failed\n";
    // The drop-in goes into a double-quoted word (a here-document before):
    // only `$exe` and `$0` may expand in it.
    assert!(
        !dropin.contains(['`', '\\', '"']) && dropin.matches('$').count() == 4,
        "the drop-in must survive a double-quoted word"
    );
    let own_path = if text == GeneratorText::NoOwnPath {
        ""
    } else {
        OWN_PATH
    };
    let tmp = format!("\"$dir/.{WRAPPER_DROPIN_NAME}.tmp\"");
    let rename = format!("mv -f {tmp} \"$dir/{WRAPPER_DROPIN_NAME}\"");
    let write = if text == GeneratorText::Current {
        format!(
            "# printf, a builtin, with no temp file of the shell's: at generator time\n\
# /tmp may be read-only, and some shells back a here-document with a file.\n\
if mkdir -p \"$dir\" && printf '%s' \"{dropin}\" >{tmp} && {rename}; then\n\
\texit 0\n\
fi\n"
        )
    } else {
        format!(
            "if mkdir -p \"$dir\" && cat >{tmp} <<EOF && {rename}; then\n\
{dropin}\
EOF\n\
\texit 0\n\
fi\n"
        )
    };
    assert!(
        unit.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"@._-:".contains(&c)),
        "unit names are checked by the caller"
    );
    let names: Vec<&str> = arches.iter().map(|a| a.name()).collect();
    let shipped = if names.is_empty() {
        "none".to_string()
    } else {
        names.join(" ")
    };
    let mut cases = String::new();
    for a in arches {
        cases += &format!("{}) elf='{}' ;;\n", a.name(), a.elf_header_pattern());
    }
    format!(
        "#!/bin/sh\n\
# {RENDERED_BY}: a systemd generator (systemd.generator(7)), run at boot and\n\
# at every daemon-reload. It writes the drop-in that makes {unit} run our\n\
# wrapper, only when this node's wrapper can run here; otherwise {unit}\n\
# starts with its own ExecStart and one kernel log line (journalctl -k) says why.\n\
{own_path}\
unit='{unit}'\n\
say() {{\n\
\tif [ \"${{SYSTEMD_SCOPE:-system}}\" = system ] && [ \"$1\" != --exec-failed ] &&\n\
\t\t{{ printf '<4>kubelet-labeler[%s]: %s\\n' \"$$\" \"$2\" >/dev/kmsg; }} 2>/dev/null; then\n\
\t\treturn\n\
\tfi\n\
\tprintf 'kubelet-labeler: %s\\n' \"$2\" >&2\n\
}}\n\
arch=$(uname -m)\n\
# The ELF header bytes the kernel checks (magic, 64-bit, byte order, and\n\
# e_machine at offset 18), as od prints them, for each wrapper shipped.\n\
elf=\n\
case $arch in\n\
{cases}\
esac\n\
exe={WRAPPER_PATH}.$arch\n\
# Why this node's wrapper cannot run; nothing when it can.\n\
why_not() {{\n\
\tif [ -z \"$elf\" ]; then\n\
\t\techo \"no wrapper for $arch is shipped (only {shipped})\"\n\
\t\treturn\n\
\tfi\n\
\t# On RHCOS /usr/local/bin is /var/usrlocal/bin, and /var is mounted after\n\
\t# generators ran: then rely on render's checks (and the net below).\n\
\t[ -d \"${{exe%/*}}\" ] || return 0\n\
\tif [ ! -f \"$exe\" ] || [ ! -x \"$exe\" ]; then\n\
\t\techo \"$exe is missing or not executable\"\n\
\t\treturn\n\
\tfi\n\
\thead=$(od -An -tx1 -v -N20 \"$exe\" 2>/dev/null | tr -d ' \\n')\n\
\tcase $head in\n\
\t$elf) ;;\n\
\t*) echo \"$exe is not an $arch program (ELF header ${{head:-unreadable}})\" ;;\n\
\tesac\n\
}}\n\
why=$(why_not)\n\
if [ \"$1\" = --exec-failed ]; then\n\
\t# The net, from {unit}'s ExecStopPost=: systemd could not exec the wrapper\n\
\t# (203/EXEC) that boot could not look at. Reloading runs this generator\n\
\t# again, which now sees it and writes no drop-in; Restart= then starts\n\
\t# {unit} unchanged. A 203 of the wrapper's own leaves a good wrapper here.\n\
\tif [ \"$EXIT_CODE\" = exited ] && [ \"$EXIT_STATUS\" = 203 ] && [ -n \"$why\" ]; then\n\
\t\tsay --exec-failed \"$why; reloading so that $unit starts unchanged\"\n\
\t\tsystemctl daemon-reload\n\
\tfi\n\
\texit 0\n\
fi\n\
if [ -n \"$why\" ]; then\n\
\tsay - \"$why; $unit starts unchanged\"\n\
\texit 0\n\
fi\n\
# Written aside and renamed: a half-written drop-in could reset ExecStart=\n\
# and set none (a full /run).\n\
dir=${{1:-/run/systemd/generator}}/$unit.d\n\
{write}\
rm -f \"$dir/.{WRAPPER_DROPIN_NAME}.tmp\"\n\
say - \"cannot write $dir/{WRAPPER_DROPIN_NAME}; $unit starts unchanged\"\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Run the generator with `sh` as systemd would (normal, early, late
    /// output dirs), the wrappers under `bin/` in `dir`. Returns the drop-in
    /// it wrote, if any, and its stderr.
    fn run_generator(dir: &Path, arches: &[Arch]) -> (Option<String>, String) {
        let prefix = dir.join("bin/kubelet-labeler-wrapper");
        let script = generator(Profile::OpenShift, "kubelet.service", arches)
            .replace(WRAPPER_PATH, prefix.to_str().unwrap());
        let gen_path = dir.join("generator");
        std::fs::write(&gen_path, script).unwrap();
        let out = dir.join("out");
        let _ = std::fs::remove_dir_all(&out);
        // The manager's DefaultEnvironment= may give generators any PATH
        // (review 13 r13b F8): the generator finds its commands itself.
        let run = std::process::Command::new("/bin/sh")
            .arg(&gen_path)
            .arg(&out)
            .arg(dir.join("early"))
            .arg(dir.join("late"))
            .env("SYSTEMD_SCOPE", "user")
            .env("PATH", "/usr/local/sbin:/nonexistent")
            .output()
            .unwrap();
        assert!(run.status.success(), "the generator failed: {run:?}");
        let dropin =
            std::fs::read_to_string(out.join("kubelet.service.d").join(WRAPPER_DROPIN_NAME));
        // Nothing else: no temp file left behind.
        if let Ok(entries) = std::fs::read_dir(out.join("kubelet.service.d")) {
            assert_eq!(entries.count(), 1);
        }
        (
            dropin.ok(),
            String::from_utf8_lossy(&run.stderr).into_owned(),
        )
    }

    fn host_arch() -> Option<Arch> {
        let out = std::process::Command::new("uname")
            .arg("-m")
            .output()
            .ok()?;
        Arch::from_name(String::from_utf8_lossy(&out.stdout).trim())
    }

    /// A file with just the ELF header bytes the generator looks at.
    fn elf_of(arch: Arch) -> Vec<u8> {
        let mut v = vec![0u8; 64];
        v[..4].copy_from_slice(b"\x7fELF");
        v[4] = 2;
        v[5] = if arch.big_endian() { 2 } else { 1 };
        let m = if arch.big_endian() {
            arch.elf_machine().to_be_bytes()
        } else {
            arch.elf_machine().to_le_bytes()
        };
        v[18..20].copy_from_slice(&m);
        v
    }

    #[test]
    fn generator_writes_the_dropin_only_for_a_runnable_wrapper() {
        let Some(host) = host_arch() else {
            eprintln!("skipped: `uname -m` is no architecture we ship");
            return;
        };
        let other = if host == Arch::X86_64 {
            Arch::Aarch64
        } else {
            Arch::X86_64
        };
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        let exe = bin.join(format!("kubelet-labeler-wrapper.{host}"));
        let both = [Arch::X86_64, Arch::Aarch64];
        let put = |bytes: &[u8], mode: u32| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::create_dir_all(&bin).unwrap();
            std::fs::write(&exe, bytes).unwrap();
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(mode)).unwrap();
        };

        // The directory is not there (RHCOS before var.mount): trusted.
        let (dropin, _) = run_generator(dir.path(), &both);
        let expected = wrapper_dropin_at(Profile::OpenShift, exe.to_str().unwrap())
            + &format!(
                "ExecStopPost=-/bin/sh {} --exec-failed\n",
                dir.path().join("generator").display()
            );
        assert_eq!(dropin.as_deref(), Some(expected.as_str()));

        put(&elf_of(host), 0o755);
        let (dropin, err) = run_generator(dir.path(), &both);
        assert_eq!(dropin.as_deref(), Some(expected.as_str()), "{err}");
        assert_eq!(err, "");

        for (bytes, mode, why) in [
            (elf_of(other), 0o755, "is not an"),
            (b"#!/bin/sh\n".to_vec(), 0o755, "is not an"),
            (Vec::new(), 0o755, "ELF header unreadable"),
            (elf_of(host), 0o644, "missing or not executable"),
        ] {
            put(&bytes, mode);
            let (dropin, err) = run_generator(dir.path(), &both);
            assert_eq!(dropin, None, "{why}");
            assert!(
                err.contains(why) && err.contains("kubelet.service starts unchanged"),
                "{why}: {err}"
            );
        }
        std::fs::remove_file(&exe).unwrap();
        let (dropin, err) = run_generator(dir.path(), &both);
        assert_eq!(dropin, None);
        assert!(err.contains("missing"), "{err}");

        // An architecture nobody shipped a wrapper for.
        put(&elf_of(host), 0o755);
        let (dropin, err) = run_generator(dir.path(), &[other]);
        assert_eq!(dropin, None);
        assert!(
            err.contains(&format!("no wrapper for {host} is shipped (only {other})")),
            "{err}"
        );
    }

    #[test]
    fn generator_writes_the_dropin_as_one_quoted_word() {
        let text = generator(Profile::Upstream, "kubelet.service", &Arch::ALL);
        for a in Arch::ALL {
            assert!(text.contains(&format!(
                "\n{}) elf='{}' ;;\n",
                a.name(),
                a.elf_header_pattern()
            )));
        }
        assert!(!text.contains("<<"), "no here-document: {text}");
        let body = text.split("printf '%s' \"").nth(1).unwrap();
        let body = body.split('"').next().unwrap();
        assert_eq!(
            body,
            wrapper_dropin_at(Profile::Upstream, "$exe")
                + "ExecStopPost=-/bin/sh $0 --exec-failed\n"
        );
        // Earlier texts of node format 5: the here-document, and before it
        // no PATH of its own.
        let here = generator_text(
            GeneratorText::HereDocument,
            Profile::Upstream,
            "kubelet.service",
            &Arch::ALL,
        );
        assert!(here.contains(OWN_PATH) && here.contains(" <<EOF && mv -f "));
        let oldest = generator_text(
            GeneratorText::NoOwnPath,
            Profile::Upstream,
            "kubelet.service",
            &Arch::ALL,
        );
        assert_eq!(oldest, here.replacen(OWN_PATH, "", 1));
    }

    /// A shell whose here-documents need a temp file (bash before 5.1, as
    /// RHEL 8 and Amazon Linux 2 ship it) in a `/tmp` it cannot write, as
    /// at generator time: the drop-in is written all the same. zsh
    /// emulating sh backs here-documents with a file under `TMPPREFIX`.
    #[test]
    fn generator_writes_the_dropin_where_no_temp_file_can_be_made() {
        if std::process::Command::new("zsh")
            .arg("-fc")
            .arg("true")
            .status()
            .is_err()
        {
            assert!(
                std::env::var_os("CI").is_none(),
                "zsh is missing (tests/support/tools.txt)"
            );
            eprintln!("skipped: zsh is missing");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        for (text, written) in [
            (GeneratorText::HereDocument, false),
            (GeneratorText::Current, true),
        ] {
            let script = generator_text(text, Profile::OpenShift, "kubelet.service", &Arch::ALL)
                .replace(WRAPPER_PATH, dir.path().join("bin/w").to_str().unwrap());
            let gen_path = dir.path().join("generator");
            std::fs::write(&gen_path, script).unwrap();
            let out = dir.path().join(format!("out-{text:?}"));
            let run = std::process::Command::new("zsh")
                .args(["--emulate", "sh", "-f"])
                .arg(&gen_path)
                .arg(&out)
                .env("SYSTEMD_SCOPE", "user")
                .env("TMPPREFIX", dir.path().join("read-only/zsh"))
                .env("TMPDIR", dir.path().join("read-only"))
                .output()
                .unwrap();
            let dropin = out.join("kubelet.service.d").join(WRAPPER_DROPIN_NAME);
            let err = String::from_utf8_lossy(&run.stderr);
            assert_eq!(dropin.exists(), written, "{text:?}: {err}");
            if written {
                let got = std::fs::read_to_string(&dropin).unwrap();
                assert!(
                    got.starts_with("# ") && got.ends_with(" --exec-failed\n"),
                    "{got}"
                );
                assert_eq!(err, "");
            } else {
                assert!(err.contains("cannot write"), "{err}");
            }
        }
    }

    #[test]
    fn wrapper_dropin_resets_execstart_before_setting_it() {
        let text = wrapper_dropin(Profile::OpenShift);
        assert!(text.contains("--profile openshift --stop-post"));
        let reset = text.find("ExecStart=\n").unwrap();
        let set = text.find(&format!("ExecStart={WRAPPER_PATH}")).unwrap();
        assert!(reset < set);
        assert!(text.contains("SyslogIdentifier=kubelet\n"));
    }
}
