//! Shell completions, generated from the same clap types as --help, tried in
//! the shells themselves: typed into an interactive bash and zsh (under tmux,
//! a Tab pressed, the completed line read back from the screen), and asked of
//! bash's completion function and fish's `complete -C` for the candidates.
//! Subcommands at each depth, flags, and flag values.

use crate::support::{scratch_dir, skipped};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use skipped::need;

const BIN: &str = "kubelet-labeler";

fn completions(shell: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(["completions", shell])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What is typed, and the candidates the shell must offer for its last word
/// (a partial word, or "" after a space); where that word is empty, bash
/// also offers the command's flags, which are left out of the comparison.
const CANDIDATES: &[(&str, &[&str])] = &[
    ("ren", &["render"]),
    ("render mach", &["machineconfig"]),
    ("render ", &["dropins", "ignition", "machineconfig"]),
    ("iso em", &["embed"]),
    ("iso ", &["embed", "fleet", "remove", "show"]),
    ("render machineconfig --ar", &["--arch"]),
    (
        "render machineconfig --arch ",
        &["aarch64", "ppc64le", "s390x", "x86_64"],
    ),
    ("explain --profile ", &["openshift", "upstream"]),
    (
        "completions ",
        &["bash", "elvish", "fish", "powershell", "zsh"],
    ),
];

/// Typed into an interactive shell, one Tab, and the line it becomes
/// (bash ends a completed flag with a space, zsh with `=`).
const TYPED: &[(&str, &str, &str)] = &[
    (
        "render mach",
        "render machineconfig",
        "render machineconfig",
    ),
    ("iso em", "iso embed", "iso embed"),
    (
        "render machineconfig --ar",
        "render machineconfig --arch",
        "render machineconfig --arch=",
    ),
    (
        "render dropins --prof",
        "render dropins --profile",
        "render dropins --profile=",
    ),
    (
        "render machineconfig --arch aa",
        "render machineconfig --arch aarch64",
        "render machineconfig --arch aarch64",
    ),
    (
        "explain --profile op",
        "explain --profile openshift",
        "explain --profile openshift",
    ),
];

fn sorted(v: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = v.into_iter().collect();
    v.sort();
    v.dedup();
    v
}

/// bash's completion function for `line`, called as readline calls it
/// (COMP_WORDS, COMP_CWORD, and the command, current and previous word as
/// arguments); the candidates it leaves in COMPREPLY.
fn bash_candidates(script: &Path, line: &str) -> Vec<String> {
    let probe = r#"
        source "$1" || exit 1
        complete -p kubelet-labeler >/dev/null || exit 1
        line=$2
        read -ra COMP_WORDS <<< "$line"
        [[ $line == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        COMP_LINE=$line COMP_POINT=${#line}
        fn=$(complete -p kubelet-labeler | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
        "$fn" kubelet-labeler "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", probe, "bash"])
        .arg(script)
        .arg(line)
        .output()
        .unwrap();
    sorted(
        ok(out, line)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string),
    )
}

#[test]
fn bash_completion_function_offers_subcommands_flags_and_values() {
    if !need("bash") {
        return;
    }
    let dir = scratch_dir();
    let script = dir.path().join("kubelet-labeler.bash");
    std::fs::write(&script, completions("bash")).unwrap();
    for (typed, want) in CANDIDATES {
        let mut got = bash_candidates(&script, &format!("{BIN} {typed}"));
        if typed.ends_with(' ') {
            got.retain(|c| !c.starts_with('-'));
        }
        assert_eq!(got, sorted(want.iter().map(|s| s.to_string())), "{typed:?}");
    }
}

#[test]
fn fish_completes_subcommands_flags_and_values() {
    if !need("fish") {
        return;
    }
    let dir = scratch_dir();
    let script = dir.path().join("kubelet-labeler.fish");
    std::fs::write(&script, completions("fish")).unwrap();
    ok(
        Command::new("fish")
            .arg("--no-execute")
            .arg(&script)
            .output()
            .unwrap(),
        "fish --no-execute",
    );
    for (typed, want) in CANDIDATES {
        let out = Command::new("fish")
            .args(["--no-config", "-c", "source $argv[1]; complete -C $argv[2]"])
            .arg(&script)
            .arg(format!("{BIN} {typed}"))
            .env("HOME", dir.path())
            .output()
            .unwrap();
        let got = sorted(
            ok(out, typed)
                .lines()
                .map(|l| l.split('\t').next().unwrap_or("").to_string()),
        );
        assert_eq!(got, sorted(want.iter().map(|s| s.to_string())), "{typed:?}");
    }
}

/// An interactive shell in a tmux server of its own (its socket in `dir`),
/// with a fixed prompt; dropped, the server is killed.
struct Terminal {
    socket: PathBuf,
}

const PROMPT: &str = "kl$ ";

impl Terminal {
    fn start(dir: &Path, shell: &[&str]) -> Terminal {
        let socket = dir.join("tmux.sock");
        let t = Terminal { socket };
        let path = std::env::var("PATH").unwrap_or_default();
        let st = Command::new("tmux")
            .arg("-S")
            .arg(&t.socket)
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "200",
                "-y",
                "50",
                "-c",
            ])
            .arg(dir)
            .arg("env")
            .arg("-i")
            .arg(format!("HOME={}", dir.display()))
            .arg(format!("PATH={path}"))
            .arg("TERM=xterm")
            .args(shell)
            .status()
            .unwrap();
        assert!(st.success(), "tmux new-session");
        t
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        ok(out, &format!("tmux {args:?}"))
    }

    fn last_line(&self) -> String {
        let screen = self.tmux(&["capture-pane", "-p"]);
        let line = screen.lines().rev().find(|l| !l.trim().is_empty());
        line.unwrap_or("").trim_end().to_string()
    }

    /// Wait (a bounded number of polls, not a timing assertion) until the
    /// last line on the screen is `want`.
    fn wait_for(&self, want: &str, what: &str) {
        let want = want.trim_end();
        for _ in 0..400 {
            if self.last_line() == want {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!(
            "{what}: the screen's last line is {:?}, not {want:?}\n{}",
            self.last_line(),
            self.tmux(&["capture-pane", "-p"])
        );
    }

    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-l", text]);
    }

    fn press(&self, key: &str) {
        self.tmux(&["send-keys", key]);
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// `setup` loads the completion script and sets PROMPT; then each TYPED
/// line, a Tab, and the line it must become.
fn typed_in(shell: &[&str], setup: &str, zsh: bool) {
    let dir = scratch_dir();
    let dir = dir.path();
    let script = if zsh {
        std::fs::create_dir(dir.join("fpath")).unwrap();
        dir.join("fpath/_kubelet-labeler")
    } else {
        dir.join("kubelet-labeler.bash")
    };
    std::fs::write(&script, completions(if zsh { "zsh" } else { "bash" })).unwrap();
    let term = Terminal::start(dir, shell);
    term.type_text(setup);
    term.press("Enter");
    term.wait_for(PROMPT, "the shell after loading the completions");
    for (typed, bash_line, zsh_line) in TYPED {
        let want = if zsh { zsh_line } else { bash_line };
        term.type_text(&format!("{BIN} {typed}"));
        term.press("Tab");
        term.wait_for(
            &format!("{PROMPT}{BIN} {want}"),
            &format!("{typed:?} + Tab"),
        );
        term.press("C-u");
        term.wait_for(PROMPT, "the line cleared");
    }
}

#[test]
fn interactive_bash_completes_on_tab() {
    if !need("bash") || !need("tmux") {
        return;
    }
    typed_in(
        &["bash", "--norc", "--noprofile", "-i"],
        &format!("source kubelet-labeler.bash; PS1='{PROMPT}'"),
        false,
    );
}

#[test]
fn interactive_zsh_completes_on_tab() {
    if !need("zsh") || !need("tmux") {
        return;
    }
    typed_in(
        &["zsh", "-f", "-i"],
        &format!(
            "fpath=(~/fpath $fpath); autoload -U compinit; compinit -u -d ~/.zcompdump; PROMPT='{PROMPT}'"
        ),
        true,
    );
}
