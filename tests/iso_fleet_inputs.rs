//! `iso fleet` refuses pool inputs it cannot evaluate exactly as the node
//! will (review 9 riso F1): another kubelet drop-in or unit, an env drop-in
//! line not in the rendered form, a MachineConfigPool selecting other
//! MachineConfigs, a pointer config carrying more than its pointer; and a
//! `worker` MachineConfig counts for every pool, whichever directory it
//! came in.

use crate::iso_fleet::{MCS, ok};
use crate::iso_fleet_cli::{fleet_args, said};
use crate::support::iso::{gitops, stand_in_selector};
use crate::support::{bin, repo, scratch_dir};

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

/// A copy of a gitops directory's files (not its subdirectories).
fn copy_dir(from: &Path, to: &Path) -> PathBuf {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
    to.to_path_buf()
}

/// A MachineConfig of `role` writing `files` ((path, text)) and `units`.
fn machine_config(name: &str, role: &str, files: &[(&str, &str)], units: Value) -> Value {
    let files: Vec<Value> = files
        .iter()
        .map(|(path, text)| {
            json!({ "path": path, "mode": 420, "contents": { "source": format!(
                "data:,{}",
                kubelet_labeler::cli::render::encoding::percent_encode(text.as_bytes())
            ) } })
        })
        .collect();
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": { "name": name,
                      "labels": { "machineconfiguration.openshift.io/role": role } },
        "spec": { "config": { "ignition": { "version": "3.2.0" },
                              "storage": { "files": files },
                              "systemd": { "units": units } } }
    })
}

/// A manifest added to a gitops directory and its kustomization.
fn add(dir: &Path, name: &str, v: &Value) {
    add_text(dir, name, &v.to_string());
}

/// `add` of a manifest's text.
fn add_text(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
    let k = dir.join("kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    let line = "- machineconfigpool-";
    assert!(text.contains(line), "{text}");
    std::fs::write(&k, text.replacen(line, &format!("- {name}\n{line}"), 1)).unwrap();
}

struct Pools {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    gpu: PathBuf,
    numa: PathBuf,
}

fn pools() -> Pools {
    let tmp = scratch_dir();
    let dir = tmp.path().to_path_buf();
    let sel = stand_in_selector(&dir);
    let gpu = gitops(
        &dir,
        "worker-gpu",
        "feature.node.kubernetes.io/gpu=true",
        &sel,
    );
    let numa = gitops(
        &dir,
        "worker-numa",
        "feature.node.kubernetes.io/memory-numa=true",
        &sel,
    );
    Pools {
        _tmp: tmp,
        dir,
        gpu,
        numa,
    }
}

/// `iso fleet --dry-run` of worker-gpu from `gpu`, worker-numa and worker
/// on `machine`, with `extra` arguments.
fn dry_run(p: &Pools, gpu: &Path, machine: &str, extra: &[String]) -> Output {
    dry_run_with(p, gpu, &p.numa, machine, extra)
}

/// `dry_run` with worker-numa from `numa`.
fn dry_run_with(p: &Pools, gpu: &Path, numa: &Path, machine: &str, extra: &[String]) -> Output {
    fleet_args(&p.dir)
        .args(["--dry-run", "--dest-device", "/dev/sda"])
        .arg(format!("--pool=worker-gpu={}", gpu.display()))
        .arg(format!("--pool=worker-numa={}", numa.display()))
        .arg("--pool=worker")
        .args(extra)
        .arg("--facts-root")
        .arg(repo().join("tests/fixtures/nodes").join(machine))
        .output()
        .unwrap()
}

fn refused(o: &Output, needles: &[&str]) {
    let e = said(o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    for n in needles {
        assert!(e.contains(n), "{n:?} in {e}");
    }
}

const HOSTILE: &str = "[Service]\nEnvironment=KUBELET_LABELER_NODE_RULES=\n\
    Environment=FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_LABELS=feature.node.kubernetes.io/memory-numa=true\n\
    Environment=FIRST_BOOT_ONLY_KUBELET_NODE_EXTRA_TAINTS=\n";

/// Another kubelet drop-in (a file, or `systemd.units[].dropins`), or an env
/// drop-in line systemd reads otherwise than the rendered form (unquoted):
/// the node would register without the pool's labels and taints, into
/// another pool. Refused, naming the MachineConfig and the file.
#[test]
fn other_kubelet_dropins_and_lines_are_refused() {
    let p = pools();
    let env = "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf";
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            machine_config(
                "51-worker-gpu-tuning",
                "worker-gpu",
                &[(
                    "/etc/systemd/system/kubelet.service.d/95-tuning.conf",
                    HOSTILE,
                )],
                json!([]),
            ),
            vec![
                "MachineConfig 51-worker-gpu-tuning (reaching pool worker-gpu's nodes) writes \
                 /etc/systemd/system/kubelet.service.d/95-tuning.conf",
                "render machineconfig --pool worker-gpu",
            ],
        ),
        (
            machine_config(
                "51-worker-gpu-units",
                "worker-gpu",
                &[],
                json!([{ "name": "kubelet.service",
                         "dropins": [{ "name": "99-site.conf", "contents": HOSTILE }] }]),
            ),
            vec![
                "MachineConfig 51-worker-gpu-units",
                "has systemd unit kubelet.service",
            ],
        ),
        (
            machine_config(
                "51-worker-gpu-all-services",
                "worker-gpu",
                &[("/etc/systemd/system/service.d/10-env.conf", HOSTILE)],
                json!([]),
            ),
            vec!["writes /etc/systemd/system/service.d/10-env.conf"],
        ),
        (
            machine_config(
                "60-worker-gpu-env",
                "worker-gpu",
                &[(env, HOSTILE)],
                json!([]),
            ),
            vec![
                "line 2 of /etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf",
                "\"Environment=KUBELET_LABELER_NODE_RULES=\"",
                "render the pool again",
            ],
        ),
    ];
    for (i, (mc, needles)) in cases.iter().enumerate() {
        let gpu = copy_dir(&p.gpu, &p.dir.join(format!("case-{i}")));
        add(&gpu, "zz-added.json", mc);
        refused(&dry_run(&p, &gpu, "desktop-2gpu", &[]), needles);
    }
}

/// A MachineConfigPool whose machineConfigSelector leaves out the pool's
/// own role (its nodes get none of its MachineConfigs) or takes another's
/// is refused; the rendered one is taken.
#[test]
fn a_pool_selecting_other_machineconfigs_is_refused() {
    let p = pools();
    let mcp = "machineconfigpool-worker-gpu.yaml";
    let text = std::fs::read_to_string(p.gpu.join(mcp)).unwrap();
    assert!(text.contains("      - worker-gpu\n"), "{text}");
    for (i, edited) in [
        text.replace("      - worker-gpu\n", ""),
        text.replace(
            "      - worker-gpu\n",
            "      - worker-gpu\n      - worker-numa\n",
        ),
    ]
    .iter()
    .enumerate()
    {
        let gpu = copy_dir(&p.gpu, &p.dir.join(format!("mcp-{i}")));
        std::fs::write(gpu.join(mcp), edited).unwrap();
        refused(
            &dry_run(&p, &gpu, "desktop-2gpu", &[]),
            &[
                "machineconfigpool-worker-gpu.yaml: MachineConfigPool worker-gpu's machineConfigSelector",
                "values: [worker, worker-gpu]",
            ],
        );
    }
    let o = dry_run(&p, &p.gpu, "desktop-2gpu", &[]);
    assert!(o.status.success(), "{}", said(&o));
}

/// A pointer config carrying a kubelet drop-in, or a second merge source
/// (another pool's config over this one's): refused, nothing else in a
/// pointer is taken.
#[test]
fn a_pointer_with_more_than_its_pointer_is_refused() {
    let p = pools();
    let ca = p.dir.join("ca.pem");
    std::fs::write(&ca, crate::iso_fleet::PEM).unwrap();
    let ptr = p.dir.join("ptr.ign");
    ok(bin()
        .args(["render", "ignition", "--pool", "worker-gpu", "--merge-url"])
        .arg(format!("{MCS}/config/worker-gpu"))
        .arg("--ca-file")
        .arg(&ca)
        .arg("-o")
        .arg(&ptr)
        .output()
        .unwrap());
    let base: Value = serde_json::from_slice(&std::fs::read(&ptr).unwrap()).unwrap();
    let mut dropin = base.clone();
    dropin["systemd"] = json!({ "units": [{ "name": "kubelet.service",
        "dropins": [{ "name": "99-site.conf", "contents": HOSTILE }] }] });
    let mut two = base.clone();
    two["ignition"]["config"]["merge"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "source": format!("{MCS}/config/worker-numa") }));
    for (name, v, needle) in [
        ("dropin.ign", &dropin, "it has systemd"),
        ("two.ign", &two, "it has 2 ignition.config.merge entries"),
    ] {
        let f = p.dir.join(name);
        std::fs::write(&f, v.to_string()).unwrap();
        refused(
            &dry_run(
                &p,
                &p.gpu,
                "desktop-2gpu",
                &[format!("--pool=worker-gpu={}", f.display())],
            ),
            &[
                &format!("{name}: pool worker-gpu's pointer config carries more than a pointer"),
                needle,
            ],
        );
    }
    let o = dry_run(
        &p,
        &p.gpu,
        "desktop-2gpu",
        &[format!("--pool=worker-gpu={}", ptr.display())],
    );
    assert!(o.status.success(), "{}", said(&o));
}

/// A pointer config (file or `<pool>-user-data-managed` Secret) whose merge
/// URL is another server (review 12 r12c F3): userinfo before `@` (Go's
/// net/url, which Ignition fetches with, takes the host after it), no
/// `/config/<pool>` path, or a host:port other than `--mcs-url`'s. Refused,
/// naming the file; the dry run shows where each pool's machines fetch
/// their config. `render ignition --merge-url` refuses the same URLs.
#[test]
fn a_pointer_fetching_from_another_server_is_refused() {
    use base64::Engine;
    let p = pools();
    let ca = p.dir.join("ca.pem");
    std::fs::write(&ca, crate::iso_fleet::PEM).unwrap();
    let render = |url: &str, out: &Path| {
        bin()
            .args([
                "render",
                "ignition",
                "--pool",
                "worker-gpu",
                "--merge-url",
                url,
            ])
            .arg("--ca-file")
            .arg(&ca)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap()
    };
    let ptr = p.dir.join("ptr.ign");
    ok(render(&format!("{MCS}/config/worker-gpu"), &ptr));
    let base: Value = serde_json::from_slice(&std::fs::read(&ptr).unwrap()).unwrap();
    let userinfo = "https://api-int.ocp.example.com:22623@evil.example/config/worker-gpu";
    for (i, (url, needle)) in [
        (userinfo, "the host after the last '@' (\"evil.example\")"),
        (
            "https://evil.example/worker.ign",
            "path \"/worker.ign\" is not",
        ),
        (
            "https://evil.example:22623/config/worker-gpu",
            "is fetched from https://evil.example:22623, not from --mcs-url",
        ),
        (
            "https://api-int.ocp.example.com/config/worker-gpu",
            "is fetched from https://api-int.ocp.example.com:443, not",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut v = base.clone();
        v["ignition"]["config"]["merge"][0]["source"] = json!(url);
        let file = p.dir.join(format!("pointer-{i}.ign"));
        std::fs::write(&file, v.to_string()).unwrap();
        let secret = p.dir.join(format!("secret-{i}.yaml"));
        let data = base64::engine::general_purpose::STANDARD.encode(v.to_string());
        std::fs::write(
            &secret,
            json!({ "apiVersion": "v1", "kind": "Secret",
                    "metadata": { "name": "worker-gpu-user-data-managed",
                                  "namespace": "openshift-machine-api" },
                    "data": { "userData": data } })
            .to_string(),
        )
        .unwrap();
        for source in [&file, &secret] {
            refused(
                &dry_run(
                    &p,
                    &p.gpu,
                    "desktop-2gpu",
                    &[format!("--pool=worker-gpu={}", source.display())],
                ),
                &[
                    &format!("{}: pool worker-gpu's merge URL", source.display()),
                    url,
                    needle,
                ],
            );
        }
    }
    for url in [userinfo, "https://evil.example/worker.ign"] {
        let o = render(url, &p.dir.join("refused.ign"));
        assert_eq!(o.status.code(), Some(1), "{}", said(&o));
        assert!(
            said(&o).contains(&format!("--merge-url {url:?}")),
            "{}",
            said(&o)
        );
        assert!(!p.dir.join("refused.ign").exists());
    }
    let o = dry_run(
        &p,
        &p.gpu,
        "desktop-2gpu",
        &[format!("--pool=worker-gpu={}", ptr.display())],
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", said(&o));
    for pool in ["worker-gpu", "worker-numa", "worker"] {
        let line = format!("pool {pool}: config fetched from {MCS}/config/{pool}\n");
        assert!(out.contains(&line), "{line:?} in {out}");
    } // A proxy in the pointer is shown: Ignition fetches through it.
    let mut v = base.clone();
    v["ignition"]["proxy"] = json!({ "httpsProxy": "http://proxy.example:3128" });
    let proxied = p.dir.join("proxied.ign");
    std::fs::write(&proxied, v.to_string()).unwrap();
    let o = dry_run(
        &p,
        &p.gpu,
        "desktop-2gpu",
        &[format!("--pool=worker-gpu={}", proxied.display())],
    );
    let line = format!(
        "pool worker-gpu: config fetched from {MCS}/config/worker-gpu (through proxy http://proxy.example:3128)\n"
    );
    assert!(said(&o).contains(&line), "{line:?} in {}", said(&o));
}

/// A `worker` MachineConfig in one pool's directory reaches every pool's
/// nodes (the MCO gives it to each pool selecting worker): the fleet counts
/// it for each, so a server is no longer said to install into worker-numa
/// where it would register with worker-gpu's label too.
#[test]
fn a_worker_machineconfig_counts_for_every_pool() {
    let p = pools();
    let before = dry_run(&p, &p.gpu, "server", &[]);
    assert!(
        said(&before).contains("server: would install into pool worker-numa"),
        "{}",
        said(&before)
    );
    let gpu = copy_dir(&p.gpu, &p.dir.join("role"));
    let role_env = "/etc/systemd/system/kubelet.service.d/80-kubelet-labeler-role-env.conf";
    add(
        &gpu,
        "50-worker-role-env.json",
        &machine_config(
            "50-worker-role-env",
            "worker",
            &[(
                role_env,
                "[Service]\nEnvironment=\"KUBELET_LABELER_ROLE_LABELS=feature.node.kubernetes.io/gpu=true\"\n",
            )],
            json!([]),
        ),
    );
    refused(
        &dry_run(&p, &gpu, "server", &[]),
        &[
            "server: would not install",
            "feature.node.kubernetes.io/gpu=true,feature.node.kubernetes.io/memory-numa=true) \
             match 2 custom pools",
        ],
    );
}

/// Review 10 r10c F4: a `kind: List` (`oc get mc -o yaml`), nested lists
/// too, is what kubectl and kustomize apply item by item: a kubelet
/// drop-in or an env drop-in override inside one is refused as it is
/// plainly, and the pool's MachineConfigPool inside one is read.
#[test]
fn list_items_are_read_as_kubectl_applies_them() {
    let p = pools();
    let list = |items: Vec<Value>| json!({ "apiVersion": "v1", "kind": "List", "items": items });
    let dropin = machine_config(
        "99-worker-gpu-override",
        "worker-gpu",
        &[(
            "/etc/systemd/system/kubelet.service.d/99-zz-override.conf",
            HOSTILE,
        )],
        json!([]),
    );
    let env = machine_config(
        "99-worker-gpu-env",
        "worker-gpu",
        &[(
            "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf",
            HOSTILE,
        )],
        json!([]),
    );
    let cases = [
        (
            list(vec![dropin]),
            "zz-list.json: MachineConfig 99-worker-gpu-override (reaching pool worker-gpu's \
             nodes) writes /etc/systemd/system/kubelet.service.d/99-zz-override.conf",
        ),
        (
            list(vec![json!({ "kind": "MachineConfigList", "items": [env] })]),
            "zz-list.json: line 2 of /etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf",
        ),
    ];
    for (i, (v, needle)) in cases.iter().enumerate() {
        let gpu = copy_dir(&p.gpu, &p.dir.join(format!("list-{i}")));
        add(&gpu, "zz-list.json", v);
        refused(&dry_run(&p, &gpu, "desktop-2gpu", &[]), &[needle]);
    }
    // The pool's own MachineConfigPool as `oc get mcp worker-gpu -o yaml`
    // in a List: read, the machine installs into the pool.
    let gpu = copy_dir(&p.gpu, &p.dir.join("list-mcp"));
    let mcp = gpu.join("machineconfigpool-worker-gpu.yaml");
    let text = std::fs::read_to_string(&mcp).unwrap();
    let listed = format!(
        "apiVersion: v1\nkind: List\nitems:\n- {}\n",
        text.trim_end().replace('\n', "\n  ")
    );
    std::fs::write(&mcp, listed).unwrap();
    let o = dry_run(&p, &gpu, "desktop-2gpu", &[]);
    assert!(
        said(&o).contains("desktop-2gpu: would install into pool worker-gpu"),
        "{}",
        said(&o)
    );
}

/// Review 10 r10c F6: worker-numa's directory carries a MachineConfigPool
/// worker-gpu (kubectl applies it over worker-gpu's own, selecting role
/// `evil` too) and role `evil`'s kubelet drop-in: the pool is refused,
/// naming the file and the fix; and a MachineConfig no given pool selects
/// is refused when it reaches kubelet's unit or writes our env drop-in
/// (whatever pool selects it in the cluster, the fleet did not read),
/// taken when it does not; a Node object is refused.
#[test]
fn another_pools_objects_in_a_pools_sources() {
    let p = pools();
    let mcp = std::fs::read_to_string(p.gpu.join("machineconfigpool-worker-gpu.yaml")).unwrap();
    assert!(mcp.contains("      - worker-gpu\n"), "{mcp}");
    let evil_pool = mcp.replace("      - worker-gpu\n", "      - worker-gpu\n      - evil\n");
    let dropin = |name: &str, role: &str, path: &str| {
        let mut mc = machine_config(name, role, &[(path, HOSTILE)], json!([]));
        if role.is_empty() {
            mc["metadata"].as_object_mut().unwrap().remove("labels");
        }
        mc
    };
    let kubelet_dropin = "/etc/systemd/system/kubelet.service.d/99-zz-override.conf";
    let env = "/etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf";
    let numa = copy_dir(&p.numa, &p.dir.join("numa-mcp"));
    add_text(&numa, "zz-added.yaml", &evil_pool);
    refused(
        &dry_run_with(&p, &p.gpu, &numa, "server", &[]),
        &[
            "zz-added.yaml: MachineConfigPool \"worker-gpu\" in pool worker-numa's sources",
            "belongs in its own directory (--pool worker-gpu=DIR)",
        ],
    );
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            dropin("99-evil-override", "evil", kubelet_dropin),
            vec![
                "zz-added.json: MachineConfig 99-evil-override (role evil, which no --pool \
                 given selects) writes /etc/systemd/system/kubelet.service.d/99-zz-override.conf",
                "leave it out of the pool's sources",
            ],
        ),
        (
            dropin("99-no-role-env", "", env),
            vec![
                "MachineConfig 99-no-role-env (no machineconfiguration.openshift.io/role label",
                "writes /etc/systemd/system/kubelet.service.d/90-kubelet-labeler-env.conf, \
                 kubelet-labeler's env drop-in",
            ],
        ),
        (
            json!({ "apiVersion": "v1", "kind": "Node", "metadata": { "name": "gpu-01",
                    "labels": { "feature.node.kubernetes.io/gpu": "true" } } }),
            vec!["zz-added.json: Node \"gpu-01\" in pool worker-numa's sources"],
        ),
        // Review 15 r15c F2: kinds the MCO or an operator renders into the
        // pool's MachineConfigs (an OS image, kernel arguments).
        (
            json!({ "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineOSConfig",
                    "metadata": { "name": "worker" },
                    "spec": { "machineConfigPool": { "name": "worker" } } }),
            vec![
                "zz-added.json: MachineOSConfig \"worker\" (machineconfiguration.openshift.io/v1) in pool worker-numa's sources",
            ],
        ),
        (
            json!({ "apiVersion": "performance.openshift.io/v2", "kind": "PerformanceProfile",
                    "metadata": { "name": "rt" },
                    "spec": { "additionalKernelArgs": ["nosmt"], "realTimeKernel": { "enabled": true } } }),
            vec![
                "zz-added.json: PerformanceProfile \"rt\" (performance.openshift.io/v2) in pool worker-numa's sources",
                "apply it once the nodes have joined",
            ],
        ),
        (
            json!({ "apiVersion": "tuned.openshift.io/v1", "kind": "Tuned",
                    "metadata": { "name": "nosmt", "namespace": "openshift-cluster-node-tuning-operator" } }),
            vec![
                "zz-added.json: Tuned \"nosmt\" (tuned.openshift.io/v1) in pool worker-numa's sources",
            ],
        ),
        // Review 16 r16c F3: Flux's Kustomization applies a path of its own.
        (
            json!({ "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                    "metadata": { "name": "pools", "namespace": "flux-system" },
                    "spec": { "path": "./elsewhere" } }),
            vec!["zz-added.json: Kustomization \"pools\" (kustomize.toolkit.fluxcd.io/v1) in pool"],
        ),
    ];
    for (i, (v, needles)) in cases.iter().enumerate() {
        let numa = copy_dir(&p.numa, &p.dir.join(format!("numa-{i}")));
        add(&numa, "zz-added.json", v);
        refused(&dry_run_with(&p, &p.gpu, &numa, "server", &[]), needles);
    }
    // A role's MachineConfig that leaves kubelet alone (a master's chrony
    // configuration kept beside the pool) is taken.
    let numa = copy_dir(&p.numa, &p.dir.join("numa-chrony"));
    add(
        &numa,
        "zz-added.json",
        &machine_config(
            "50-master-chrony",
            "master",
            &[("/etc/chrony.conf", "pool 2.rhel.pool.ntp.org iburst\n")],
            json!([]),
        ),
    );
    let o = dry_run_with(&p, &p.gpu, &numa, "desktop-2gpu", &[]);
    assert!(o.status.success(), "{}", said(&o));
}

/// A pool MachineConfig that stops the wrapper from running at kubelet's
/// start (review 12 r12c F6): the wrapper without its exec bits (the MCO
/// merges a file's fields by path: `mode` alone keeps our contents), a
/// script or a link in its place, a directory there, the generator
/// without its exec bits, edited, linked to /dev/null or shadowed from an
/// earlier generator directory, or its directory linked elsewhere. The
/// generator then writes no drop-in and the installed machine registers
/// without the pool's taints, unfenced: refused as `plan` and `explain
/// --machineconfig` refuse the same MachineConfigs (one check).
#[test]
fn a_pool_config_stopping_the_wrapper_is_refused() {
    use kubelet_labeler::node::contract::{GENERATOR_PATH, WRAPPER_PATH};
    let p = pools();
    let wrapper = format!("{WRAPPER_PATH}.x86_64");
    // `compression` set: the MCO keeps our gzip's otherwise.
    let script = json!({ "source": "data:,%23!%2Fbin%2Fsh%0Aexec%20%22%24%40%22%0A",
                         "compression": "" });
    let mc = |storage: Value| {
        json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfig",
            "metadata": { "name": "99-worker-gpu-tuning",
                          "labels": { "machineconfiguration.openshift.io/role": "worker-gpu" } },
            "spec": { "config": { "ignition": { "version": "3.4.0" }, "storage": storage } }
        })
    };
    let not_exec = "is not an executable file";
    let no_file = "leads to no file of these MachineConfigs";
    let cases: Vec<(Value, &str)> = vec![
        (
            mc(json!({ "files": [{ "path": wrapper, "mode": 420 }] })),
            not_exec,
        ),
        (
            mc(json!({ "files": [{ "path": wrapper, "mode": 493, "contents": script }] })),
            "is not an x86_64 program",
        ),
        (
            mc(json!({ "directories": [{ "path": wrapper, "mode": 493 }] })),
            not_exec,
        ),
        (
            mc(json!({ "links": [{ "path": wrapper, "target": "/usr/bin/true" }] })),
            no_file,
        ),
        (
            mc(json!({ "files": [{ "path": GENERATOR_PATH, "mode": 420 }] })),
            "kubelet-labeler is not executable",
        ),
        (
            mc(json!({ "files": [{ "path": GENERATOR_PATH, "mode": 493, "contents": script }] })),
            "is not the generator this release renders",
        ),
        (
            mc(json!({ "links": [{ "path": GENERATOR_PATH, "target": "/dev/null" }] })),
            no_file,
        ),
        (
            mc(
                json!({ "links": [{ "path": "/etc/systemd/system-generators",
                                   "target": "/var/empty" }] }),
            ),
            "/etc/systemd/system-generators",
        ),
        (
            mc(
                json!({ "files": [{ "path": "/run/systemd/system-generators/kubelet-labeler",
                                   "mode": 493, "contents": script }] }),
            ),
            "/run/systemd/system-generators/kubelet-labeler",
        ),
    ];
    for (i, (mc, needle)) in cases.iter().enumerate() {
        let gpu = copy_dir(&p.gpu, &p.dir.join(format!("case-{i}")));
        add(&gpu, "99-tuning.json", mc);
        refused(
            &dry_run(&p, &gpu, "desktop-2gpu", &[]),
            &["pool worker-gpu", needle],
        );
    }
}

/// Review 13 r13c F3: a MachineConfig a pool takes (worker's count for
/// every pool) that changes what the install chooses by: a features.d file
/// a `local.*` rule reads, `CUSTOM_KUBELET_LABELS` (or `ID`) in a file
/// kubelet.service reads with `EnvironmentFile=` (the MCO's unit puts them
/// into `--node-labels`), `/etc/os-release`, kernel arguments or another
/// kernel. The live ISO has none of them, the installed node registers with
/// them and could move into another pool without its first-boot taints:
/// refused, naming the MachineConfig, the file or argument and the pool.
#[test]
fn a_config_changing_what_the_install_reads_is_refused() {
    use kubelet_labeler::node::facts::FEATURES_DIR;
    let p = pools();
    let features = format!("{FEATURES_DIR}/special");
    let mc = |role: &str, files: &[(&str, &str)], spec: Value| {
        let mut v = machine_config("60-changes-inputs", role, files, json!([]));
        for (k, x) in spec.as_object().unwrap() {
            v["spec"][k] = x.clone();
        }
        v
    };
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            mc("worker", &[(&features, "special\n")], json!({})),
            vec![&features, "local.* features"],
        ),
        (
            mc(
                "worker",
                &[(
                    "/etc/kubernetes/kubelet-env",
                    "CUSTOM_KUBELET_LABELS=feature.node.kubernetes.io/gpu=true\n",
                )],
                json!({}),
            ),
            vec!["/etc/kubernetes/kubelet-env", "CUSTOM_KUBELET_LABELS"],
        ),
        (
            mc(
                "worker-gpu",
                &[("/etc/os-release", "ID=\"rhcos\"\nVERSION_ID=\"9.9\"\n")],
                json!({}),
            ),
            vec!["/etc/os-release", "OS release"],
        ),
        (
            mc("worker-gpu", &[], json!({ "kernelArguments": ["nosmt"] })),
            vec!["kernel arguments nosmt", "cpu topology"],
        ),
        (
            mc(
                "worker",
                &[],
                json!({ "config": { "ignition": { "version": "3.4.0" },
                                    "kernelArguments": { "shouldExist": ["numa=off"] } } }),
            ),
            vec!["kernel arguments numa=off"],
        ),
        (
            mc("worker-gpu", &[], json!({ "kernelType": "realtime" })),
            vec!["kernelType realtime"],
        ),
    ];
    for (i, (mc, needles)) in cases.iter().enumerate() {
        let gpu = copy_dir(&p.gpu, &p.dir.join(format!("inputs-{i}")));
        add(&gpu, "60-changes-inputs.json", mc);
        let mut all = vec!["MachineConfig 60-changes-inputs", "pool worker"];
        all.extend(needles);
        refused(&dry_run(&p, &gpu, "desktop-2gpu", &[]), &all);
    }
    // The same MachineConfig writing another file is taken.
    let gpu = copy_dir(&p.gpu, &p.dir.join("inputs-ok"));
    add(
        &gpu,
        "60-changes-inputs.json",
        &mc(
            "worker",
            &[("/etc/kubernetes/kubelet-env", "X=1\n")],
            json!({}),
        ),
    );
    ok(dry_run(&p, &gpu, "desktop-2gpu", &[]));
}

/// Review 13 r13c F3: a pool selecting on NFD's kernel-version (or OS
/// release) label chooses by the live ISO's kernel; the node registers on
/// the cluster's. Refused, naming the label and the pool.
#[test]
fn a_pool_selecting_on_the_kernel_release_is_refused() {
    let p = pools();
    let sel = stand_in_selector(&p.dir);
    let kern = p.dir.join("kern");
    std::fs::create_dir_all(&kern).unwrap();
    let numa = gitops(
        &kern,
        "worker-numa",
        "feature.node.kubernetes.io/kernel-version.major=6",
        &sel,
    );
    refused(
        &dry_run_with(&p, &p.gpu, &numa, "server", &[]),
        &[
            "pool worker-numa",
            "feature.node.kubernetes.io/kernel-version.major",
            "whose value is the kernel's or the OS release's",
            "select on a hardware label",
        ],
    );
}
