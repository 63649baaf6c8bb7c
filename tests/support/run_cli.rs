//! Running the built `kubelet-labeler` and reading what it printed.

#![allow(dead_code)]

use std::process::{Command, Output};

use serde_json::Value;

pub fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .args(args)
        .output()
        .expect("running kubelet-labeler")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Its stdout as JSON; else a failure showing both streams.
pub fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
