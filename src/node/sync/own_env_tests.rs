//! Review 19 r19a F2, the sync's side: one of our variables set by an
//! `EnvironmentFile=` of kubelet's (empty, or another value) makes the
//! sync refuse to change any label (exit 2, nothing sent): the wrapper
//! registers fenced with our drop-ins' values then.

use super::*;
use crate::node::contract::{
    LABELS_VAR, POOL_LABEL_VAR, ROLE_LABELS_VAR, ROLE_TAINTS_VAR, RULES_VAR, TAINTS_VAR,
};
use crate::node::wrapper::own_env::OUR_VARS;

/// FAILS before the fix: `derive` took the file's value, so the sync
/// derived no label of ours and removed the ones it owns.
#[test]
fn an_environment_file_setting_our_variables_changes_no_label() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let write = |p: &str, text: &str| {
        let path = root.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "etc/systemd/system/kubelet.service",
        "[Service]\nEnvironmentFile=-/etc/kubernetes/kubelet-env\n\
         ExecStart=/usr/bin/kubelet --kubeconfig=/var/lib/kubelet/kubeconfig\n",
    );
    let d = "etc/systemd/system/kubelet.service.d";
    write(
        &format!("{d}/90-kubelet-labeler-env.conf"),
        &format!(
            "[Service]\nEnvironment=\"{LABELS_VAR}=example.com/gpu=true\"\n\
             Environment=\"{TAINTS_VAR}=example.com/dedicated=gpu:NoSchedule\"\n\
             Environment=\"{RULES_VAR}=KLR5,1,provisioned-gpu,0,~N,0,~N,1,example.com/gpu-provisioned,true,NoSchedule,1,local.label,1,gpu,Exists,0,~N,0\"\n\
             Environment=\"{POOL_LABEL_VAR}=node-role.kubernetes.io/worker-gpu\"\n"
        ),
    );
    write(
        &format!("{d}/80-kubelet-labeler-role-env.conf"),
        &format!(
            "[Service]\nEnvironment=\"{ROLE_LABELS_VAR}=example.com/role=infra\"\n\
             Environment=\"{ROLE_TAINTS_VAR}=example.com/role=infra:NoSchedule\"\n"
        ),
    );
    let opts = SyncOptions {
        root: root.to_path_buf(),
        profile: Some(Profile::Upstream),
        ..Default::default()
    };
    let d = derive(&opts).unwrap();
    assert!(
        d.desired.labels.iter().any(|(k, _)| k == "example.com/gpu"),
        "{:?}",
        d.desired.labels
    );
    // OpenShift's kubelet-env, or our own value again: nothing to refuse.
    write("etc/kubernetes/kubelet-env", "CUSTOM_KUBELET_LABELS=a=b\n");
    assert!(derive(&opts).is_ok());
    write(
        "etc/kubernetes/kubelet-env",
        &format!("{LABELS_VAR}=example.com/gpu=true\n"),
    );
    assert!(derive(&opts).is_ok());
    for var in OUR_VARS {
        for value in ["", "example.com/other=1"] {
            write("etc/kubernetes/kubelet-env", &format!("{var}={value}\n"));
            let case = format!("{var}={value:?}");
            let e = match derive(&opts) {
                Ok(d) => panic!("{case}: derived {:?}", d.desired.labels),
                Err(e) => e,
            };
            assert!(
                e.starts_with("refusing to change labels: ")
                    && e.contains(&format!(
                        "{var} (by EnvironmentFile= /etc/kubernetes/kubelet-env)"
                    )),
                "{case}: {e}"
            );
            let out = run(&opts);
            assert_eq!(out.code, EXIT_USAGE, "{case}: {}", out.summary);
            assert_eq!((out.requests, out.writes), (0, 0), "{case}");
            assert!(
                out.summary.starts_with(
                    "kubelet-labeler sync: nothing changed: refusing to change labels"
                ),
                "{case}: {}",
                out.summary
            );
        }
    }
}
