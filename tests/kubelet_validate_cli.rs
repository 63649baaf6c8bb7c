//! `kubelet-labeler validate`, the built binary: exit codes (0 valid, 1
//! invalid, 2 usage), the JSON object, and messages that name the key or
//! taint and the rule it breaks.

use crate::support::stdout;

use std::process::{Command, Output};

fn validate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubelet-labeler"))
        .arg("validate")
        .args(args)
        .output()
        .expect("running kubelet-labeler validate")
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

#[test]
fn valid_arguments_exit_0_and_list_what_kubelet_registers() {
    let o = validate(&[
        "--profile",
        "openshift",
        "--",
        "/usr/local/bin/kubenswrapper",
        "/usr/bin/kubelet",
        "--config=/etc/kubernetes/kubelet.conf",
        "--node-labels=node-role.kubernetes.io/worker,node.openshift.io/os_id=rhcos,",
        "--register-with-taints",
        "node-role.kubernetes.io/master=:NoSchedule",
        "-v",
        "2",
        "--node-labels=node.kubernetes.io/gpu=a100",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(
        stdout(&o),
        "valid for the openshift kubelet\n\
         label: node-role.kubernetes.io/worker=\n\
         label: node.openshift.io/os_id=rhcos\n\
         label: node.kubernetes.io/gpu=a100\n\
         taint: node-role.kubernetes.io/master=:NoSchedule\n"
    );
}

#[test]
fn json_shape() {
    let o = validate(&[
        "--json",
        "--",
        "--node-labels=a=1,a=2,b",
        "--register-with-taints=t=v:NoExecute",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "valid", "profile", "command", "labels", "taints", "errors", "warnings"
        ]
    );
    assert_eq!(v["valid"], true);
    assert_eq!(v["profile"], "upstream");
    assert_eq!(v["command"], serde_json::json!([]));
    assert_eq!(v["labels"], serde_json::json!(["a=2", "b="]));
    assert_eq!(v["taints"], serde_json::json!(["t=v:NoExecute"]));
    assert_eq!(v["errors"], serde_json::json!([]));

    let o = validate(&[
        "--json",
        "--",
        "--node-labels=node-role.kubernetes.io/infra",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["valid"], false);
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].as_str().unwrap().contains(
            "\"node-role.kubernetes.io/infra\": unknown 'kubernetes.io' or 'k8s.io' label"
        )
    );
}

#[test]
fn invalid_arguments_exit_1_naming_the_key_and_the_rule() {
    // (args, profile, what the message must contain)
    let cases: &[(&[&str], &str, &[&str])] = &[
        (
            &["--node-labels=node-role.kubernetes.io/worker"],
            "upstream",
            &[
                "node-role.kubernetes.io/worker",
                "must begin with an allowed prefix",
            ],
        ),
        (
            &["--node-labels=Example.com/a=1"],
            "upstream",
            &["\"Example.com/a\"", "lowercase RFC 1123 subdomain"],
        ),
        (
            &["--node-labels=example.com/a=-x"],
            "openshift",
            &[
                "\"example.com/a\"",
                "\"-x\"",
                "must start and end with an alphanumeric",
            ],
        ),
        (
            &[
                "--node-labels",
                "a=1",
                "--register-with-taints=a:noschedule",
            ],
            "upstream",
            &["a:noschedule", "invalid taint effect: noschedule"],
        ),
        (
            &["--register-with-taints=a:NoSchedule,a=x:NoSchedule"],
            "upstream",
            &["duplicated taints with the same key and effect: a:NoSchedule"],
        ),
        (
            &["--register-with-taints=gpu"],
            "upstream",
            &["invalid taint spec: gpu", "an effect is required"],
        ),
        (
            &["--v=2", "--node-labels"],
            "upstream",
            &["flag needs an argument: --node-labels"],
        ),
        (
            &["-node-labels=a=1"],
            "upstream",
            &["unknown shorthand flag: 'n'", "--node-labels=a=1"],
        ),
        (
            &["--v=2", "--", "--node-labels=a=1"],
            "upstream",
            &["\"--node-labels=a=1\": unknown command", "before '--'"],
        ),
        (
            &["--node-labels=a=1", "gpu=true"],
            "upstream",
            &["\"gpu=true\": unknown command"],
        ),
        // kubelet exits on a flag it does not know, a typo above all.
        (
            &["--node-label=a"],
            "upstream",
            &["unknown flag: --node-label: kubelet exits on it; did you mean --node-labels?"],
        ),
        (
            &["--v=2", "--foo=bar"],
            "openshift",
            &["unknown flag: --foo: kubelet exits on it\n"],
        ),
        (
            &["--register_with_taint=a:NoSchedule"],
            "upstream",
            &[
                "unknown flag: --register_with_taint:",
                "did you mean --register-with-taints?",
            ],
        ),
    ];
    for (args, profile, wanted) in cases {
        let mut all = vec!["--profile", profile, "--"];
        all.extend_from_slice(args);
        let o = validate(&all);
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {out}");
        assert!(out.starts_with("invalid: "), "{args:?}: {out}");
        for w in *wanted {
            assert!(out.contains(w), "{args:?}: {w:?} not in {out}");
        }
    }
}

/// A flag only older kubelets take: valid, with a warning that the
/// current one exits on it.
#[test]
fn flags_of_older_kubelets_are_valid_with_a_warning() {
    let o = validate(&[
        "--",
        "--pod-infra-container-image=pause:3.9",
        "--node-labels=a=1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(
        stdout(&o),
        "valid for the upstream kubelet\nlabel: a=1\n\
         warning: --pod-infra-container-image: kubelet 1.36 has no such flag and exits on it (unknown flag); only kubelets before 1.35 take it\n"
    );
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["--"][..],
        &["--json"][..],
        &["--profile", "nope", "--", "--v=1"][..],
        &["--bogus", "--", "--v=1"][..],
        &["--node-labels=a=1"][..],
    ] {
        let o = validate(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
        assert!(!o.stderr.is_empty(), "{args:?}");
    }
}

/// 2,000 unknown flags: the first 32 said, one line counting the rest
/// (review 41 r41b F5: one error a word was 594 MB of output for 2,000,000
/// words), the count of every kind of error together.
#[test]
fn many_errors_are_said_for_the_first_32_and_counted() {
    let flags: Vec<String> = (0..2000).map(|i| format!("--no-such-flag-{i}=1")).collect();
    let args: Vec<&str> = flags.iter().map(String::as_str).collect();
    let o = validate(&[&["--"], &args[..]].concat());
    assert_eq!(o.status.code(), Some(1));
    let v = json(&validate(&[&["--json", "--"], &args[..]].concat()));
    let errors: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.as_str())
        .collect();
    assert_eq!(errors.len(), 33, "{errors:?}");
    assert!(errors[31].contains("--no-such-flag-31"), "{errors:?}");
    assert_eq!(errors[32], "and 1968 more like these, not shown");
    let said = stdout(&o) + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(said.matches("more like these").count(), 1, "{said}");
}
