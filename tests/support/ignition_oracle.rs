//! Real Ignition (Debian's `ignition` package, 2.14) writing a config into a
//! root directory, as it does on a node's first boot: the fetch-offline
//! stage, then the files stage (oracles.md §3).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Debian installs the real binary inside the dracut module, not on PATH.
pub const IGNITION: &str = "/usr/lib/dracut/modules.d/30ignition/ignition";

/// Ignition 2.14 knows spec 3.4.0 only as `3.4.0-experimental`; the fields
/// we emit are the same there, so a 3.4.0 config is read under that name.
pub fn for_debian_ignition(config: &Value) -> Value {
    let mut config = config.clone();
    if config["ignition"]["version"] == "3.4.0" {
        config["ignition"]["version"] = "3.4.0-experimental".into();
    }
    config
}

/// Run the given `stages` on `config` with `root` as the node's `/`;
/// `state` (created) holds the config, cache and state files. Err is
/// Ignition's log.
pub fn run_stages(
    config: &Value,
    root: &Path,
    state: &Path,
    stages: &[&str],
) -> Result<(), String> {
    run_stages_with_timeout(config, root, state, stages, 300)
}

/// [`run_stages`], giving each stage at most `secs` seconds (Ignition
/// retries a failing fetch for ever; a stage it is killed in is an Err).
pub fn run_stages_with_timeout(
    config: &Value,
    root: &Path,
    state: &Path,
    stages: &[&str],
    secs: u64,
) -> Result<(), String> {
    std::fs::create_dir_all(root.join("etc/selinux")).unwrap();
    std::fs::write(
        root.join("etc/selinux/config"),
        "SELINUX=disabled\nSELINUXTYPE=targeted\n",
    )
    .unwrap();
    std::fs::create_dir_all(state).unwrap();
    let cfg = state.join("config.ign");
    std::fs::write(
        &cfg,
        serde_json::to_vec(&for_debian_ignition(config)).unwrap(),
    )
    .unwrap();
    // Ignition relabels for SELinux at the end of the files stage; this
    // host has no policy, and labels are not what the callers test.
    let fakebin = state.join("fakebin");
    std::fs::create_dir_all(&fakebin).unwrap();
    std::fs::write(
        fakebin.join("setfiles"),
        "#!/bin/sh\ncat >/dev/null\nexit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(
        fakebin.join("setfiles"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        fakebin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for stage in stages {
        let mut c = Command::new(IGNITION);
        c.args([
            "-platform",
            "file",
            "-stage",
            stage,
            "-log-to-stdout",
            "-root",
        ])
        .arg(root)
        .arg("-config-cache")
        .arg(state.join("c.json"))
        .arg("-state-file")
        .arg(state.join("s"))
        .env("IGNITION_CONFIG_FILE", &cfg)
        .env("PATH", &path);
        if stage.starts_with("fetch") {
            c.arg("-neednet").arg(state.join("n"));
        }
        let log = state.join(format!("{stage}.log"));
        let log_file = std::fs::File::create(&log).unwrap();
        c.stdout(log_file.try_clone().unwrap()).stderr(log_file);
        let mut child = c.spawn().map_err(|e| format!("running {IGNITION}: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(secs);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        match status {
            Some(s) if s.success() => {}
            Some(s) => return Err(format!("ignition {stage} ({s}): {text}")),
            None => {
                return Err(format!(
                    "ignition {stage}: still running after {secs}s: {text}"
                ));
            }
        }
    }
    Ok(())
}

/// First boot's file writing: fetch-offline then files. Panics with
/// Ignition's log when it fails.
pub fn apply(config: &Value, root: &Path, state: &Path) {
    if let Err(log) = run_stages(config, root, state, &["fetch-offline", "files"]) {
        panic!("{log}");
    }
}

/// `root`-relative path of a node path.
pub fn in_root(root: &Path, node_path: &str) -> PathBuf {
    root.join(node_path.trim_start_matches('/'))
}
