//! The built wrapper run on a scratch node root, without systemd: the
//! recorder (`recorder.c`) stands in for kubelet at `root/usr/bin/kubelet`,
//! and the argv it got is read back.
//!
//! Also [`start`]: the wrapper run once as systemd starts it, outside
//! systemd, on a scratch node root whose kubelet.service runs a script
//! that writes its argv, the node's facts from another tree
//! (`--facts-root`). A hang fails the test after five minutes (a guard,
//! not a timing check: benches/ measure time).

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{stderr, systemd_oracle, write};

/// The recorder as `root/usr/bin/kubelet`, kubelet's unit `unit`, and where
/// the recorder writes; None (said once) where the recorder cannot be built.
pub fn recorder_root(root: &Path, unit: &str) -> Option<PathBuf> {
    if systemd_oracle::unavailable().is_some() {
        return None;
    }
    let kubelet = systemd_oracle::build_fake_kubelet(root);
    let exe = root.join("usr/bin/kubelet");
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    std::fs::rename(kubelet, &exe).unwrap();
    write(&root.join("usr/lib/systemd/system/kubelet.service"), unit);
    let records = root.join("records");
    std::fs::create_dir_all(&records).unwrap();
    Some(records)
}

/// A scratch node root made by [`recorder_root`], removed when dropped:
/// the wrapper started on it as [`try_wrapper`] does.
pub struct RecorderNode {
    dir: tempfile::TempDir,
    records: PathBuf,
}

impl RecorderNode {
    /// A fresh root with kubelet's unit `unit`; None (said once) where the
    /// recorder cannot be built.
    pub fn new(unit: &str) -> Option<Self> {
        let dir = super::scratch_dir();
        let records = recorder_root(dir.path(), unit)?;
        Some(Self { dir, records })
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// [`try_wrapper`] on this root.
    pub fn try_start(
        &self,
        env: &[(&str, String)],
        shell: &str,
        args: &[&str],
    ) -> (String, Option<Vec<String>>) {
        try_wrapper(self.root(), &self.records, env, shell, args)
    }

    /// Forget the starts before (the wrapper's state directory): the
    /// crash-loop guard takes a start after an unfinished one for one
    /// after a death.
    pub fn forget_starts(&self) {
        let _ = std::fs::remove_dir_all(self.root().join("state"));
    }
}

/// Run the built wrapper on `root` with `env` as systemd would give it,
/// under `sh` with `shell` run first (a `ulimit`); returns its stderr and
/// the argv the recorder (kubelet) got.
pub fn run_wrapper(
    root: &Path,
    records: &Path,
    env: &[(&str, String)],
    shell: &str,
) -> (String, Vec<String>) {
    let (err, argv) = try_wrapper(root, records, env, shell, &[]);
    (
        err.clone(),
        argv.unwrap_or_else(|| panic!("kubelet did not start: {err}")),
    )
}

/// [`run_wrapper`] with more wrapper arguments (`--facts-root DIR`), for a
/// start that may die before exec'ing kubelet: then no argv.
pub fn try_wrapper(
    root: &Path,
    records: &Path,
    env: &[(&str, String)],
    shell: &str,
    args: &[&str],
) -> (String, Option<Vec<String>>) {
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{shell}\nexec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_kubelet-labeler-wrapper"))
        .args([
            "--root",
            root.to_str().unwrap(),
            "--unit",
            "kubelet.service",
        ])
        .args(["--state-dir", root.join("state").to_str().unwrap()])
        .args(args)
        .env_clear()
        .env("RECORD_DIR", records)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    let err = stderr(&out);
    let Some(file) = std::fs::read_dir(records).unwrap().next() else {
        return (err, None);
    };
    let file = file.unwrap().path();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_file(file).unwrap();
    let mut lines = text.lines();
    let argc: usize = lines.next().unwrap()["argc ".len()..].parse().unwrap();
    let argv = lines
        .take(argc)
        .map(|h| {
            let bytes: Vec<u8> = (0..h.len() / 2)
                .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            String::from_utf8(bytes).unwrap()
        })
        .collect();
    (err, Some(argv))
}

/// What one start gave: the wrapper's journal line(s) (its stderr) and
/// the argv kubelet got ("" when kubelet never ran).
pub struct Started {
    pub journal: String,
    pub argv: String,
}

/// Run the wrapper under `scratch` on the facts of `facts`, with `env`;
/// `prefix` runs it through another program first (`prlimit --as=...`).
pub fn start(
    prefix: &[OsString],
    env: &[(OsString, OsString)],
    facts: &Path,
    scratch: &Path,
) -> Started {
    let root = scratch.join("root");
    super::write(
        &root.join("etc/systemd/system/kubelet.service"),
        "[Service]\nExecStart=/usr/bin/kubelet --v=2\n",
    );
    let kubelet = root.join("usr/bin/kubelet");
    let argv_file = scratch.join("argv");
    super::write(
        &kubelet,
        &format!("#!/bin/sh\necho \"$*\" > '{}'\n", argv_file.display()),
    );
    std::fs::set_permissions(&kubelet, std::fs::Permissions::from_mode(0o755)).unwrap();
    let state = scratch.join("state");
    std::fs::create_dir_all(&state).unwrap();
    // Writable by its owner alone, as the wrapper requires, whatever the umask.
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let wrapper = env!("CARGO_BIN_EXE_kubelet-labeler-wrapper");
    let mut command = match prefix.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(wrapper);
            c
        }
        None => Command::new(wrapper),
    };
    let mut child = command
        .args(["--unit", "kubelet.service", "--root"])
        .arg(&root)
        .arg("--state-dir")
        .arg(&state)
        .arg("--facts-root")
        .arg(facts)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the wrapper still runs after 300 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let journal = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "wrapper: {:?}\n{journal}", out.status);
    Started {
        journal,
        argv: std::fs::read_to_string(&argv_file).unwrap_or_default(),
    }
}

/// The paddings of an environment to try at exec's limit: the largest at
/// which `starts` (kubelet started at all, under a 1 MiB stack), then every
/// fourth byte of the 400 below it, largest first.
pub fn paddings_at_the_exec_limit(starts: impl Fn(usize) -> bool) -> impl Iterator<Item = usize> {
    let (mut lo, mut hi) = (0, 300_000);
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        match starts(mid) {
            true => lo = mid,
            false => hi = mid,
        }
    }
    (lo.saturating_sub(400)..=lo).rev().step_by(4)
}
