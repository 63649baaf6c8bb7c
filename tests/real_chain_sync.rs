//! The day-2 sync through the rendered units, under a real `systemd --user`
//! on a node tree whose real kubelet registered with the real API server
//! (the chain of `real_chain`, whose helpers these use).

use crate::real_chain::{START_AND_REGISTER, cluster, openshift_case, start};
use crate::support::{realcluster, write};

/// Every node name these tests register (each gets a client certificate).
pub const NODES: [&str; 2] = ["rc-sync", "rc-retry"];

/// The day-2 sync through the rendered units under real systemd: after
/// kubelet's start (the `Wants=` drop-in) it adopts what registration set;
/// then every way the env drop-ins change makes the path unit run it, and
/// the Node follows with no kubelet restart: replaced by rename (a file
/// written beside it and renamed over it, as the MCO's daemon and `render
/// dropins` write; the unit's file watches missed it), written in place,
/// the role's drop-in created and removed. Each change lands once the run
/// before has stopped: the path unit is deaf while it runs (the sync
/// itself derives again at its end for that; a unit test covers it).
#[test]
fn sync_units_keep_the_node_current_without_a_restart() {
    let Some(cluster) = cluster() else { return };
    let node = "rc-sync";
    let (_d, scratch, tree) = openshift_case(cluster, node, &["--label", "example.com/tier=gold"]);
    let log = scratch.join("sync.log");
    // Five starts in a few seconds: more than systemd's default start
    // limit (5 in 10 s) lets a test add.
    write(
        &tree.join("etc/systemd/system/kubelet-labeler-sync.service.d/50-test-journal.conf"),
        &format!(
            "[Unit]\nStartLimitIntervalSec=0\n\
             [Service]\nStandardOutput=append:{l}\nStandardError=append:{l}\n",
            l = log.display()
        ),
    );
    let env_text = |labels: &str| {
        format!("[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS={labels}\"\n")
    };
    let renamed = scratch.join("renamed-env.conf");
    write(
        &renamed,
        &env_text("example.com/tier=silver,example.com/new=1"),
    );
    let in_place = scratch.join("in-place-env.conf");
    write(
        &in_place,
        &env_text("example.com/tier=bronze,example.com/new=1"),
    );
    let role = scratch.join("role-env.conf");
    write(
        &role,
        &format!(
            "[Service]\nEnvironment=\"{}=example.com/role=x\"\n",
            kubelet_labeler::node::contract::ROLE_LABELS_VAR
        ),
    );
    let dir = "/etc/systemd/system/kubelet.service.d";
    let steps = format!(
        "{START_AND_REGISTER}\
         SYNC={log}\n\
         wait_sync() {{ local end=$(( $(date +%s) + 30 )); until grep -q -- \"$1\" \"$SYNC\" 2>/dev/null; do \
         [ $(date +%s) -ge $end ] && {{ echo \"timeout waiting for a sync that says $1\"; return 1; }}; sleep 0.1; done; }}\n\
         wait_idle() {{ local end=$(( $(date +%s) + 30 )); until case $(systemctl --user is-active kubelet-labeler-sync.service) in inactive|failed) true;; *) false;; esac; do \
         [ $(date +%s) -ge $end ] && {{ echo \"timeout waiting for the sync to stop\"; return 1; }}; sleep 0.1; done; }}\n\
         wait_sync 'adopted example.com/tier=gold' && echo first_sync=1\n\
         wait_idle\n\
         before=$(restarts)\n\
         cat {renamed} > {dir}/.90-kubelet-labeler-env.conf.tmp && mv -f {dir}/.90-kubelet-labeler-env.conf.tmp {dir}/90-kubelet-labeler-env.conf\n\
         wait_sync 'changed example.com/tier=silver' && echo renamed=1\n\
         wait_idle\n\
         cp {in_place} {dir}/90-kubelet-labeler-env.conf\n\
         wait_sync 'changed example.com/tier=bronze' && echo in_place=1\n\
         wait_idle\n\
         cp {role} {dir}/80-kubelet-labeler-role-env.conf\n\
         wait_sync 'added example.com/role=x' && echo created=1\n\
         wait_idle\n\
         rm {dir}/80-kubelet-labeler-role-env.conf\n\
         wait_sync 'removed example.com/role' && echo removed=1\n\
         wait_idle\n\
         echo kubelet_restarts=$(( $(restarts) - before ))\n\
         systemctl --user is-active kubelet.service\n",
        log = log.display(),
        renamed = renamed.display(),
        in_place = in_place.display(),
        role = role.display(),
    );
    let run = start(cluster, node, &scratch, &tree, &steps);
    let sync_log = std::fs::read_to_string(&log).unwrap_or_default();
    for step in ["first_sync", "renamed", "in_place", "created", "removed"] {
        assert!(
            run.output.contains(&format!("{step}=1")),
            "{step}: {}\n{sync_log}",
            run.summary()
        );
    }
    assert!(run.output.contains("kubelet_restarts=0"), "{}", run.output);
    assert!(sync_log.contains("added example.com/new=1"), "{sync_log}");
    let stored = cluster.node(node).expect("the Node");
    let (labels, _) = realcluster::labels_and_taints(&stored);
    assert_eq!(labels["example.com/tier"], "bronze");
    assert_eq!(labels["example.com/new"], "1");
    assert!(!labels.contains_key("example.com/role"), "{labels:?}");
    assert_eq!(
        stored["metadata"]["annotations"]["kubelet-labeler.io/owned-labels"],
        "example.com/{new,tier}"
    );
}

/// A sync that gave up on an API server it could not reach (exit 75) is
/// started again by systemd, through the rendered unit's `Restart=`
/// alone (no path trigger, no kubelet restart),
/// and brings the Node current once the API server answers. The test's
/// drop-in shortens the run's wait and the restart delay (5 min and 1 min
/// as rendered) and points the sync at a port nothing listens on until
/// the test names the API server.
#[test]
fn a_sync_that_gave_up_starts_again() {
    let Some(cluster) = cluster() else { return };
    let node = "rc-retry";
    let (_d, scratch, tree) = openshift_case(cluster, node, &["--label", "example.com/tier=gold"]);
    let log = scratch.join("sync.log");
    let sys = tree.join("etc/systemd/system");
    let unit = std::fs::read_to_string(sys.join("kubelet-labeler-sync.service")).unwrap();
    assert!(unit.contains("\nRestart=on-failure\n"), "{unit}");
    let exec = unit
        .lines()
        .find(|l| l.starts_with("ExecStart=/bin/sh -c '"))
        .expect("the sync's ExecStart");
    let exec = format!(
        "{} --kubeconfig /etc/test-sync.kubeconfig --max-wait 2'",
        exec.strip_suffix('\'').unwrap()
    );
    write(
        &sys.join("kubelet-labeler-sync.service.d/50-test.conf"),
        &format!(
            "[Unit]\nStartLimitIntervalSec=0\n\
             [Service]\nStandardOutput=append:{l}\nStandardError=append:{l}\n\
             RestartSec=1\nExecStart=\n{exec}\n",
            l = log.display()
        ),
    );
    let kubeconfig = cluster.kubeconfig(node);
    assert!(kubeconfig.contains(&cluster.api), "{kubeconfig}");
    let answering = scratch.join("answering.kubeconfig");
    write(&answering, &kubeconfig);
    write(
        &tree.join("etc/test-sync.kubeconfig"),
        &kubeconfig.replace(&cluster.api, "https://127.0.0.1:1"),
    );
    let steps = format!(
        "{START_AND_REGISTER}\
         SYNC={log}\n\
         wait_sync() {{ local end=$(( $(date +%s) + 60 )); until grep -q -- \"$1\" \"$SYNC\" 2>/dev/null; do \
         [ $(date +%s) -ge $end ] && {{ echo \"timeout waiting for a sync that says $1\"; return 1; }}; sleep 0.1; done; }}\n\
         wait_sync 'gave up' && echo gave_up=1\n\
         cat {answering} > /etc/test-sync.kubeconfig\n\
         wait_sync 'adopted example.com/tier=gold' && echo synced=1\n\
         echo restarts=$(systemctl --user show -p NRestarts --value kubelet-labeler-sync.service)\n\
         systemctl --user show -p LoadState,LoadError kubelet-labeler-sync.service\n",
        log = log.display(),
        answering = answering.display(),
    );
    let run = start(cluster, node, &scratch, &tree, &steps);
    let sync_log = std::fs::read_to_string(&log).unwrap_or_default();
    for step in ["gave_up", "synced"] {
        assert!(
            run.output.contains(&format!("{step}=1")),
            "{step}: {}\n{sync_log}",
            run.summary()
        );
    }
    let restarts: u32 = run
        .output
        .lines()
        .find_map(|l| l.strip_prefix("restarts="))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(restarts >= 1, "{}\n{sync_log}", run.output);
    let stored = cluster.node(node).expect("the Node");
    let (labels, _) = realcluster::labels_and_taints(&stored);
    assert_eq!(labels["example.com/tier"], "gold");
}
