//! The built wrapper run once as systemd starts it, outside systemd: a
//! scratch node root whose kubelet.service runs a script that writes its
//! argv, the node's facts from another tree (`--facts-root`), and the
//! environment the env drop-in would give. A hang fails the test after
//! five minutes (a guard, not a timing check: benches/ measure time).

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
