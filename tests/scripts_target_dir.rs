//! The scripts find what cargo built where cargo put it: in
//! CARGO_TARGET_DIR when one is set, not in a hard-coded `target/`.

use crate::support::{scratch_dir, skipped, write_exec};

use std::path::Path;
use std::process::Command;

/// render.sh in a copy of the checkout's scripts, with cargo, rustup and
/// rustc stubbed (nothing is built) and a stub CLI in CARGO_TARGET_DIR that
/// records its arguments: the script must run that one.
#[test]
fn render_sh_runs_the_cli_of_cargo_target_dir() {
    let Some(bash) = skipped::tool("bash") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = scratch_dir();
    let checkout = scratch.path().join("checkout");
    for script in ["render.sh", "build-wrapper.sh"] {
        let to = checkout.join("machineconfigs").join(script);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root.join("machineconfigs").join(script), to).unwrap();
    }
    let stubs = scratch.path().join("stubs");
    for tool in ["cargo", "rustup"] {
        write_exec(&stubs.join(tool), "#!/bin/sh\nexit 0\n");
    }
    write_exec(&stubs.join("rustc"), "#!/bin/sh\necho /sysroot\n");
    let target_dir = scratch.path().join("elsewhere");
    let record = scratch.path().join("ran");
    write_exec(
        &target_dir.join("release/kubelet-labeler"),
        &format!("#!/bin/sh\necho \"$@\" > {}\n", record.display()),
    );
    let path = format!(
        "{}:{}",
        stubs.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(bash)
        .arg(checkout.join("machineconfigs/render.sh"))
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", &target_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "render.sh with CARGO_TARGET_DIR set: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ran = std::fs::read_to_string(&record).expect("render.sh ran the CLI of CARGO_TARGET_DIR");
    assert!(
        ran.starts_with("render machineconfig --pool worker-gpu")
            && ran.contains(&format!(
                "--wrapper {}/x86_64-unknown-linux-musl/wrapper/kubelet-labeler-wrapper",
                target_dir.display()
            )),
        "{ran}"
    );
}

/// No script names cargo's output directory literally: each takes it from
/// CARGO_TARGET_DIR (`${CARGO_TARGET_DIR:-target}`).
#[test]
fn no_script_hard_codes_the_target_dir() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut offending = Vec::new();
    let mut scripts = 0;
    for dir in ["machineconfigs", "benches", "dist", "iso", "tools", "fuzz"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries {
            let path = e.unwrap().path();
            if path.extension().is_none_or(|x| x != "sh") {
                continue;
            }
            scripts += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                let code = line.split(" #").next().unwrap_or("");
                if code.trim_start().starts_with('#') {
                    continue;
                }
                for profile in ["target/release", "target/debug"] {
                    let literal = code.contains(profile);
                    if literal {
                        offending.push(format!(
                            "{}:{}: {line}",
                            path.strip_prefix(root).unwrap().display(),
                            i + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(scripts >= 5, "found only {scripts} scripts");
    assert!(
        offending.is_empty(),
        "hard-coded target directory (use ${{CARGO_TARGET_DIR:-target}}):\n{}",
        offending.join("\n")
    );
}
