//! Issue 33 item 22: `examples/rules/mixed-fleet.yaml` labels every
//! Raspberry Pi, not only the Pi 4/5 (their PCIe controllers): the Pi 3
//! fixture (no PCIe, Raspberry Pi OS's kernel) gets
//! `feature.node.kubernetes.io/raspberry-pi=true` as `explain --facts-root
//! <pi3> --rules <example>` says; so does a Pi 3 on Debian's own kernel
//! with the feature file its provisioning writes, and not without it; no
//! x86 fixture does. (plan's differential, `plan::registering_now_is_what_nfd_gives`,
//! holds the same file against NFD's evaluator on every fixture.)

use crate::support::run_cli::{cli, json_of};
use crate::support::systemd_oracle::copy_tree;
use crate::support::{repo, scratch_dir, stderr, write};

const PI: &str = "feature.node.kubernetes.io/raspberry-pi=true";

#[test]
fn the_mixed_fleet_example_labels_every_raspberry_pi() {
    let dir = scratch_dir();
    let root = dir.path().join("root");
    let r = root.to_str().unwrap();
    write(
        &root.join("usr/lib/systemd/system/kubelet.service"),
        "[Service]\nExecStart=/usr/bin/kubelet --v=2\n",
    );
    let example = repo().join("examples/rules/mixed-fleet.yaml");
    let out = cli(&["render", "dropins", "--root", r, "--arch", "x86_64"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let labels = |facts: &std::path::Path| -> Vec<String> {
        let out = cli(&[
            "explain",
            "--json",
            "--root",
            r,
            "--facts-root",
            facts.to_str().unwrap(),
            "--rules",
            example.to_str().unwrap(),
        ]);
        let e = json_of(&out);
        e["added_labels"]
            .as_array()
            .unwrap_or_else(|| panic!("{e}{}", stderr(&out)))
            .iter()
            .map(|l| l.as_str().unwrap().to_string())
            .collect()
    };
    let nodes = repo().join("tests/fixtures/nodes");
    for (node, pi) in [
        ("rpi3", true),
        ("rpi4", true),
        ("dgx", false),
        ("desktop-2gpu", false),
        ("vm", false),
        ("server", false),
    ] {
        let got = labels(&nodes.join(node));
        assert_eq!(got.iter().any(|l| l == PI), pi, "{node}: {got:?}");
    }
    // A Pi 3 on Debian's own arm64 kernel: the node reads nothing that only
    // a Pi has, until provisioning writes the feature file.
    let pi3 = dir.path().join("pi3-debian");
    copy_tree(&nodes.join("rpi3"), &pi3);
    write(&pi3.join("proc/sys/kernel/osrelease"), "6.1.0-28-arm64\n");
    assert!(!labels(&pi3).iter().any(|l| l == PI));
    write(
        &pi3.join("etc/kubernetes/node-feature-discovery/features.d/raspberry-pi"),
        "raspberry-pi\n",
    );
    let got = labels(&pi3);
    assert!(got.iter().any(|l| l == PI), "{got:?}");
}
