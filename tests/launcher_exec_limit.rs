//! Review 23 r23a F1: kubelet started through a `#!` launcher (OpenShift's
//! `/usr/local/bin/kubenswrapper` is a bash script). exec of a script copies
//! the interpreter's path too, which the wrapper's count of exec's limit
//! does not see; an `EnvironmentFile=` of kubelet's padded into that gap
//! made exec refuse the plan the count said fits, and the runtime E2BIG
//! fallback exec'd kubelet's original command: without our taint, unfenced.
//! At every padding at which kubelet starts, it must get ours (or the
//! fence). FAILS on 7bd5710.

use crate::support::wrapper_run::RecorderNode;
use crate::support::write_exec;

use kubelet_labeler::node::contract::TAINTS_VAR;

const OURS: &str = "example.com/dedicated=gpu:NoSchedule";
/// A 1 MiB stack: exec allows 256 KiB of argv and environment.
const SMALL_STACK: &str = "ulimit -s 1024";
/// The largest variable (`room_in_env` leaves it out first), and the size
/// of the others, each counted as exec counts it (name, `=`, value, NUL,
/// pointer).
const BIG: usize = 450;
const FILLER: usize = 400;

fn taints_of(argv: &[String]) -> &str {
    argv.iter()
        .rev()
        .find_map(|w| w.strip_prefix("--register-with-taints="))
        .unwrap_or("")
}

#[test]
fn a_launcher_script_padded_to_its_own_bytes_never_starts_kubelet_without_ours() {
    // kubelet's own command longer than the wrapper's (as OpenShift's is).
    let unit = format!(
        "[Service]\nExecStart=/usr/local/bin/kubenswrapper /usr/bin/kubelet --v=2 \
         --hostname-override={}\n",
        "h".repeat(20_000)
    );
    let Some(node) = RecorderNode::new(&unit) else {
        return;
    };
    // The launcher passes its words on to kubelet (the recorder), as
    // kubensenter's `nsenter "$@"` does.
    let kubelet = node.root().join("usr/bin/kubelet");
    write_exec(
        &node.root().join("usr/local/bin/kubenswrapper"),
        &format!("#!/bin/sh\nshift\nexec '{}' \"$@\"\n", kubelet.display()),
    );
    let run = |fill: usize| {
        let mut vars: Vec<(String, String)> = vec![
            (TAINTS_VAR.into(), OURS.into()),
            ("INVOCATION_ID".into(), format!("fill-{fill}")),
            ("BIGVAR".into(), "y".repeat(BIG - 6 - 2 - 8)),
        ];
        let mut left = fill;
        for i in 0.. {
            if left == 0 {
                break;
            }
            let k = left.min(FILLER);
            vars.push((format!("F{i:05}"), "x".repeat(k.saturating_sub(6 + 2 + 8))));
            left -= k;
        }
        let env: Vec<(&str, String)> = vars.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        node.forget_starts();
        node.try_start(&env, SMALL_STACK, &[])
    };
    let ours_alone =
        |argv: &Option<Vec<String>>| argv.as_ref().is_some_and(|a| taints_of(a) == OURS);
    // The largest fill at which kubelet gets ours, unfenced (the full plan).
    let (mut lo, mut hi) = (0, 300_000);
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        match ours_alone(&run(mid).1) {
            true => lo = mid,
            false => hi = mid,
        }
    }
    assert!(lo > 0, "kubelet never started with ours");
    // Past it: ours and the fence, room made in the environment (BIGVAR
    // left out) up to the limit, then past what the wrapper can be exec'd
    // with. Every byte of that range.
    let (mut fenced, mut started) = (0, 0);
    for fill in lo + BIG - 150..lo + BIG + 50 {
        let (err, argv) = run(fill);
        let Some(argv) = argv else { continue };
        started += 1;
        let taints = taints_of(&argv);
        assert!(
            taints.split(',').any(|t| t == OURS),
            "filled with {fill}: kubelet started without {OURS}: {taints:?}\n{err}"
        );
        fenced += usize::from(taints.contains("kubelet-labeler.io/fenced="));
    }
    assert!(started > 0 && fenced > 0, "the range was never met");
}
