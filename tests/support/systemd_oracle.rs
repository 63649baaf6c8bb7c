//! Real systemd as the oracle (../shared/reference/oracles.md §1, §2).
//!
//! `run_user_manager` starts a real `systemd --user` in a private mount
//! namespace with `SYSTEMD_UNIT_PATH` set to scratch directories, starts a
//! batch of units whose programs are `recorder.c` (or the wrapper, which then
//! execs it), and returns what each unit's process really got. `system_test`
//! runs `systemd --test --system` to see how PID 1 would load a system unit.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the oracle cannot run here, if it cannot (after the skip is said;
/// under CI the test fails instead: CI must run the differential tests).
pub fn unavailable() -> Option<String> {
    for tool in ["/lib/systemd/systemd", "systemctl", "unshare", "cc"] {
        if !super::skipped::need(tool) {
            return Some(format!("{tool} is missing"));
        }
    }
    let unshare_works = Command::new("unshare")
        .args(["--mount", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !unshare_works {
        let why = "systemd oracle: `unshare --mount` does not work here (needs root)";
        super::skipped::skipped(why);
        return Some(why.to_string());
    }
    None
}

/// Build the recorder into `dir` and return its path.
pub fn build_recorder(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/recorder.c");
    let out = dir.join("recx");
    let st = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("running cc");
    assert!(st.success(), "compiling the recorder");
    out
}

/// The recorder as a fake kubelet: named `kubelet` (in `dir/fake-kubelet/`),
/// since the wrapper adds flags only to a program it can tell is kubelet.
pub fn build_fake_kubelet(dir: &Path) -> PathBuf {
    let bin = dir.join("fake-kubelet");
    std::fs::create_dir_all(&bin).expect("creating the fake kubelet's directory");
    let recorder = build_recorder(&bin);
    let kubelet = bin.join("kubelet");
    std::fs::rename(&recorder, &kubelet).expect("naming the recorder kubelet");
    kubelet
}

/// What one process started by systemd got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub argv: Vec<Vec<u8>>,
    pub exe: String,
    /// `SigBlk:` and `SigIgn:` lines of its /proc/self/status.
    pub signals: Vec<String>,
    pub env: Vec<(OsString, OsString)>,
}

impl Record {
    pub fn argv_lossy(&self) -> Vec<String> {
        self.argv
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }
    pub fn env_get(&self, name: &str) -> Option<String> {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_string_lossy().into_owned())
    }
}

/// What systemd said about a unit, and what its processes recorded.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub props: BTreeMap<String, String>,
    /// In start order.
    pub records: Vec<Record>,
}

impl Outcome {
    pub fn prop(&self, name: &str) -> &str {
        self.props.get(name).map(String::as_str).unwrap_or("")
    }
    pub fn loaded(&self) -> bool {
        self.prop("LoadState") == "loaded"
    }
    /// `systemctl show` could not describe the unit (non-UTF-8 argv).
    pub fn unshowable(&self) -> bool {
        !self.props.contains_key("LoadState")
    }
    pub fn dropins(&self) -> Vec<String> {
        self.prop("DropInPaths")
            .split_whitespace()
            .map(str::to_string)
            .collect()
    }
}

fn unhex(line: &str) -> Vec<u8> {
    (0..line.len() / 2)
        .map(|i| u8::from_str_radix(&line[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn parse_record(text: &str) -> Record {
    let mut lines = text.lines();
    let argc: usize = lines
        .next()
        .unwrap()
        .strip_prefix("argc ")
        .unwrap()
        .parse()
        .unwrap();
    let argv = (0..argc).map(|_| unhex(lines.next().unwrap())).collect();
    assert_eq!(lines.next(), Some("exe"));
    let exe = String::from_utf8(unhex(lines.next().unwrap())).unwrap();
    assert_eq!(lines.next(), Some("signals"));
    let signals = lines
        .by_ref()
        .take_while(|l| *l != "env")
        .map(String::from)
        .collect();
    let env = lines
        .map(unhex)
        .map(|kv| {
            let eq = kv.iter().position(|&c| c == b'=').unwrap_or(kv.len());
            let v = kv.get(eq + 1..).unwrap_or_default().to_vec();
            let mut k = kv;
            k.truncate(eq);
            (OsString::from_vec(k), OsString::from_vec(v))
        })
        .collect();
    Record {
        argv,
        exe,
        signals,
        env,
    }
}

/// A user-manager run.
pub struct UserRun {
    /// `SYSTEMD_UNIT_PATH` for the manager, highest priority first. A base
    /// directory with the targets every service needs is appended.
    pub unit_dirs: Vec<PathBuf>,
    /// Units to start, in order; each is started and waited for.
    pub units: Vec<String>,
    /// Directories to lay over system directories inside the namespace
    /// (target, directory whose files appear in it), as overlayfs.
    pub overlays: Vec<(PathBuf, PathBuf)>,
    /// Extra environment of the manager (passed on to services).
    pub manager_env: Vec<(String, String)>,
    /// Start each unit this many times (restarts after it ended).
    pub starts: usize,
    /// Seconds to let processes run (and restart) before asking systemd.
    pub settle_secs: f32,
    /// Before the settle time, wait (up to 10 s) until no unit of the
    /// batch has a process running: for units whose program exits at once
    /// (a loaded machine took past the settle time to exec one of 250).
    pub wait_exits: bool,
    /// `SYSTEMD_GENERATOR_PATH` for the manager: the generators it runs
    /// (their output lands in [`generator_dir`], their stderr in
    /// [`manager_log`]).
    pub generator_path: Option<String>,
    /// Shell lines run in the namespace before the manager starts (as root:
    /// mounts).
    pub setup: String,
    /// Shell lines run once the manager is up, before any unit starts
    /// (after its generators ran).
    pub before_start: String,
}

impl UserRun {
    pub fn new(unit_dirs: Vec<PathBuf>, units: Vec<String>) -> UserRun {
        UserRun {
            unit_dirs,
            units,
            overlays: Vec::new(),
            manager_env: Vec::new(),
            starts: 1,
            settle_secs: 0.3,
            wait_exits: false,
            generator_path: None,
            setup: String::new(),
            before_start: String::new(),
        }
    }
}

/// Where the user manager run in `scratch` puts its generators' normal
/// output (`$XDG_RUNTIME_DIR/systemd/generator`); list it in `unit_dirs`
/// for their drop-ins to count.
pub fn generator_dir(scratch: &Path) -> PathBuf {
    scratch.join("xdg-runtime/systemd/generator")
}

/// The manager's stdout and stderr (its generators' too), for a run in
/// `scratch`.
pub fn manager_log(scratch: &Path) -> String {
    std::fs::read_to_string(scratch.join("manager.log")).unwrap_or_default()
}

/// The directory (in `scratch`) the user manager finds its base targets in;
/// tests hand it to our loader too, so both see the same search path.
pub fn base_dir(scratch: &Path) -> PathBuf {
    let base = scratch.join("oracle-base");
    std::fs::create_dir_all(&base).unwrap();
    for t in [
        "default", "basic", "shutdown", "sockets", "timers", "paths", "exit",
    ] {
        std::fs::write(
            base.join(format!("{t}.target")),
            "[Unit]\nDescription=oracle\n",
        )
        .unwrap();
    }
    // What MCO's kubelet.service requires.
    std::fs::write(
        base.join("crio.service"),
        "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n",
    )
    .unwrap();
    std::fs::write(
        base.join("kubelet-dependencies.target"),
        "[Unit]\nDescription=oracle\n",
    )
    .unwrap();
    base
}

/// The full search path the manager gets for `run`.
pub fn search_path(run: &UserRun, scratch: &Path) -> String {
    let mut dirs: Vec<String> = run
        .unit_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    dirs.push(base_dir(scratch).display().to_string());
    dirs.join(":")
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Run a real `systemd --user` on `run`; returns per unit what happened.
pub fn run_user_manager(run: &UserRun, scratch: &Path) -> BTreeMap<String, Outcome> {
    let rec = scratch.join("records");
    let rt = scratch.join("xdg-runtime");
    let cfg = scratch.join("xdg-config");
    for d in [&rec, &rt, &cfg] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).unwrap();
    }
    let mut script = String::from("set -u\n");
    for (i, (target, upper)) in run.overlays.iter().enumerate() {
        let work = scratch.join(format!("overlay-work-{i}"));
        std::fs::create_dir_all(&work).unwrap();
        script += &format!(
            "mkdir -p {t} && mount -t overlay overlay -o lowerdir={t},upperdir={u},workdir={w} {t} || exit 90\n",
            t = sh_quote(&target.display().to_string()),
            u = sh_quote(&upper.display().to_string()),
            w = sh_quote(&work.display().to_string()),
        );
    }
    // After the overlays, so an overlay on /run does not hide it.
    script += "mkdir -p /run/systemd && mount -t tmpfs tmpfs /run/systemd && mkdir -p /run/systemd/system\n";
    script += &format!(
        "export XDG_RUNTIME_DIR={rt} XDG_CONFIG_HOME={cfg} RECORD_DIR={rec}\nchmod 700 \"$XDG_RUNTIME_DIR\"\n",
        rt = sh_quote(&rt.display().to_string()),
        cfg = sh_quote(&cfg.display().to_string()),
        rec = sh_quote(&rec.display().to_string()),
    );
    for (k, v) in &run.manager_env {
        script += &format!("export {k}={}\n", sh_quote(v));
    }
    if let Some(g) = &run.generator_path {
        script += &format!("export SYSTEMD_GENERATOR_PATH={}\n", sh_quote(g));
    }
    script += &run.setup;
    script += "\n";
    script += &format!(
        "SYSTEMD_UNIT_PATH={} /lib/systemd/systemd --user >{}/manager.log 2>&1 &\npid=$!\n\
         for i in $(seq 100); do s=$(systemctl --user is-system-running 2>/dev/null); \
         case \"$s\" in running|degraded) break;; esac; sleep 0.05; done\n",
        sh_quote(&search_path(run, scratch)),
        sh_quote(&scratch.display().to_string()),
    );
    script += &run.before_start;
    script += "\n";
    let units: Vec<String> = run.units.iter().map(|u| sh_quote(u)).collect();
    // Start a batch at once and wait for the job queue to drain; each unit's
    // process then finishes on its own (the recorder exits at once).
    script += &format!(
        "for n in $(seq {starts}); do\n\
           timeout 60 systemctl --user start --no-block {units} >/dev/null 2>&1\n\
           for i in $(seq 600); do j=$(systemctl --user list-jobs --no-legend 2>/dev/null | wc -l); \
         [ \"$j\" = 0 ] && break; sleep 0.05; done\n\
           {wait_exits}\
           sleep {settle}\n\
           timeout 5 systemctl --user reset-failed {units} >/dev/null 2>&1 || true\n\
         done\n",
        starts = run.starts,
        settle = run.settle_secs,
        wait_exits = match run.wait_exits {
            true => format!(
                "for i in $(seq 200); do r=$(systemctl --user list-units --no-legend \
                 --state=running,activating,deactivating {} 2>/dev/null | wc -l); \
                 [ \"$r\" = 0 ] && break; sleep 0.05; done\n",
                units.join(" ")
            ),
            false => String::new(),
        },
        units = units.join(" "),
    );
    // One unit a call: a unit whose argv is not UTF-8 makes `show` fail.
    // Then they are stopped (not killed: `Restart=` would start them again),
    // so nothing of theirs is left running.
    script += &format!(
        "for u in {units}; do systemctl --user show -p Id -p LoadState -p ActiveState -p Result \
         -p FragmentPath -p DropInPaths -p ExecMainStatus -p NRestarts \"$u\" 2>/dev/null || echo \"Id=$u\"; echo; done\n\
         timeout 10 systemctl --user stop {units} >/dev/null 2>&1\n\
         kill -9 $pid; wait $pid 2>/dev/null\n",
        units = units.join(" ")
    );
    let script_path = scratch.join("oracle.sh");
    std::fs::write(&script_path, &script).unwrap();
    let out = Command::new("unshare")
        .arg("--mount")
        .arg("bash")
        .arg(&script_path)
        .output()
        .expect("running unshare");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut result: BTreeMap<String, Outcome> = BTreeMap::new();
    for block in stdout.split("\n\n") {
        let mut o = Outcome::default();
        for line in block.lines() {
            if let Some((k, v)) = line.split_once('=') {
                o.props.insert(k.to_string(), v.to_string());
            }
        }
        if let Some(id) = o.props.get("Id").cloned() {
            result.insert(id, o);
        }
    }
    assert!(
        !result.is_empty(),
        "the user manager gave no answer; script {}:\nstdout: {stdout}\nstderr: {}\nmanager log: {}",
        script_path.display(),
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(scratch.join("manager.log")).unwrap_or_default()
    );
    // Records are `<unit>.<start ns>.<pid>`: ordered by start time, since
    // PIDs wrap (a CI machine near pid_max gave starts out of order).
    let mut files: Vec<(u64, u32, String, PathBuf)> = std::fs::read_dir(&rec)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            let (rest, pid) = name.rsplit_once('.')?;
            let (unit, start) = rest.rsplit_once('.')?;
            Some((start.parse().ok()?, pid.parse().ok()?, unit.to_string(), p))
        })
        .collect();
    files.sort();
    for (_, _, unit, path) in files {
        let text = std::fs::read_to_string(&path).unwrap();
        result
            .entry(unit)
            .or_default()
            .records
            .push(parse_record(&text));
    }
    result
}

/// `systemd --test --system` on the stock units plus `etc`, `run` and
/// `usr_lib` trees laid over /etc/systemd/system, /run/systemd/system and
/// /usr/lib/systemd/system. Returns the dump block of `unit`.
pub fn system_test(scratch: &Path, etc: &Path, run: &Path, usr_lib: &Path, unit: &str) -> String {
    let work = scratch.join("systest-work");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let mut script = String::from("set -eu\n");
    for (i, (target, upper)) in [
        ("/usr/lib/systemd/system", usr_lib),
        ("/etc/systemd/system", etc),
    ]
    .iter()
    .enumerate()
    {
        let w = work.join(format!("w{i}"));
        std::fs::create_dir_all(&w).unwrap();
        script += &format!(
            "mount -t overlay overlay -o lowerdir={target},upperdir={},workdir={} {target}\n",
            sh_quote(&upper.display().to_string()),
            sh_quote(&w.display().to_string())
        );
    }
    script += &format!(
        "mkdir -p /run/systemd && mount -t tmpfs tmpfs /run/systemd\n\
         cp -a {}/. /run/systemd/ 2>/dev/null || true\n\
         mkdir -p /run/systemd/system\n\
         cd /tmp && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp \
         /lib/systemd/systemd --test --system --unit={} --no-pager 2>/dev/null\n",
        sh_quote(&run.parent().unwrap().display().to_string()),
        sh_quote(unit)
    );
    let path = scratch.join("systest.sh");
    std::fs::write(&path, script).unwrap();
    let out = Command::new("unshare")
        .arg("--mount")
        .arg("bash")
        .arg(&path)
        .output()
        .expect("running unshare");
    let dump = String::from_utf8_lossy(&out.stdout).into_owned();
    let marker = format!("-> Unit {unit}:");
    let start = dump.find(&marker).unwrap_or_else(|| {
        panic!(
            "no {marker} in systemd --test output: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let rest = &dump[start + marker.len()..];
    let end = rest.find("-> Unit ").unwrap_or(rest.len());
    rest[..end].to_string()
}

/// Fragment and drop-in paths from a `systemd --test` unit block.
pub fn dump_paths(block: &str) -> (Option<String>, Vec<String>) {
    let mut fragment = None;
    let mut dropins = Vec::new();
    for line in block.lines() {
        let l = line.trim();
        if let Some(v) = l.strip_prefix("Fragment Path:") {
            fragment = Some(v.trim().to_string());
        } else if let Some(v) = l.strip_prefix("DropIn Path:") {
            dropins.push(v.trim().to_string());
        }
    }
    (fragment, dropins)
}

/// Copy a directory tree (symlinks as symlinks), to lay a scratch tree out
/// as a node root.
pub fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        let ft = e.file_type().unwrap();
        if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), &to).unwrap();
        } else if ft.is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}
