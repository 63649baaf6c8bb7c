//! Review 23 r23b F8: kubelet's own command line (the MCO's
//! kubelet.service, which the wrapper keeps) is not what plan renders, so
//! a pull request that reaches it is refused (exit 2), never priced by our
//! variables alone as "a service restart; 0 with a taint change".

use std::path::Path;

use crate::plan::{plan, render};
use crate::support::{add_file_machineconfig, repo, scratch_dir, stderr, stdout};

const LABELS: &str = "50-worker-gpu-kubelet-labeler-labels.yaml";
const TAINT: &str = "example.com/gpu=true:NoSchedule";
const DROPINS: &str = "/etc/systemd/system/kubelet.service.d";
const EVIL: &str =
    "ExecStart=\nExecStart=/usr/bin/kubelet --register-with-taints=evil=1:NoExecute\n";

/// `dir`'s labels MachineConfig with `more` appended to its env drop-in.
fn append_to_env_dropin(dir: &Path, more: &str) {
    use kubelet_labeler::cli::render::{encoding, layout};
    let path = dir.join(LABELS);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut mc = layout::machineconfigs_from_yaml(&text, "labels")
        .unwrap()
        .remove(0);
    let file = mc.pointer_mut("/spec/config/storage/files/0").unwrap();
    assert_eq!(
        file["path"],
        format!("{DROPINS}/90-kubelet-labeler-env.conf")
    );
    let source = file["contents"]["source"].as_str().unwrap();
    let body = layout::decode_data_url(source, file["contents"]["compression"].as_str()).unwrap();
    let body = String::from_utf8(body).unwrap() + more;
    file["contents"] = serde_json::json!({
        "source": format!("data:,{}", encoding::percent_encode(body.as_bytes()))
    });
    std::fs::write(&path, mc.to_string()).unwrap();
}

/// `plan` of `base` to `pr`, failing on a taint change or a reboot.
pub(crate) fn planned(base: &Path, pr: &Path) -> std::process::Output {
    let fleet = repo().join("examples/fleet/fleet.json");
    plan(
        base,
        pr,
        &fleet,
        &["--fail-on", "taint", "--fail-on", "reboot"],
    )
}

#[test]
fn an_execstart_in_our_env_dropin_is_refused() {
    let tmp = scratch_dir();
    let (base, pr) = (tmp.path().join("base"), tmp.path().join("pr"));
    render(&base, &["--taint", TAINT]);
    render(&pr, &["--taint", TAINT]);
    append_to_env_dropin(&pr, EVIL);
    let o = planned(&base, &pr);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{}{err}", stdout(&o));
    assert!(
        err.contains("90-kubelet-labeler-env.conf is render's drop-in of kubelet.service")
            && err.contains("line 7: ExecStart="),
        "{err}"
    );
    // Our own variables appended are render's shape: priced, not refused.
    let ok = tmp.path().join("ok");
    render(&ok, &["--taint", TAINT]);
    append_to_env_dropin(
        &ok,
        "Environment=\"KUBELET_LABELER_POOL_LABEL=node.kubernetes.io/worker-gpu\"\n",
    );
    let o = planned(&base, &ok);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn another_dropin_or_environment_file_of_kubelet_s_is_refused_when_it_changes() {
    let tmp = scratch_dir();
    let base = tmp.path().join("base");
    render(&base, &["--taint", TAINT]);
    let cases = [
        (
            format!("{DROPINS}/10-evil.conf"),
            format!("[Service]\n{EVIL}"),
        ),
        (
            "/etc/kubernetes/kubelet-env".to_string(),
            "CUSTOM_KUBELET_LABELS=node-role.kubernetes.io/infra=,example.com/team=other\n"
                .to_string(),
        ),
        (
            format!("{DROPINS}/10-env.conf"),
            "[Service]\nEnvironment=\"KUBELET_LOG_LEVEL=9\"\n".to_string(),
        ),
        (
            "/etc/systemd/system/service.d/10-evil.conf".to_string(),
            format!("[Service]\n{EVIL}"),
        ),
    ];
    for (i, (path, text)) in cases.iter().enumerate() {
        let pr = tmp.path().join(format!("pr{i}"));
        render(&pr, &["--taint", TAINT]);
        add_file_machineconfig(&pr, "60-worker-gpu-x", Some("worker-gpu"), path, text);
        let o = planned(&base, &pr);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{path}: {}{err}", stdout(&o));
        assert!(
            err.contains(&format!("{path} changes from"))
                && err.contains("changes kubelet's command line or config"),
            "{path}: {err}"
        );
    }
    // A drop-in of our variables only is priced as the node reads it.
    let pr = tmp.path().join("ours");
    render(&pr, &["--taint", TAINT]);
    add_file_machineconfig(
        &pr,
        "60-worker-gpu-x",
        Some("worker-gpu"),
        &format!("{DROPINS}/95-taints.conf"),
        "[Service]\nEnvironment=\"FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=a=b:NoSchedule\"\n",
    );
    let o = planned(&base, &pr);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
}
