//! MachineConfigs, the custom MachineConfigPool, a kustomization, and the
//! same content as one Ignition config. Output is deterministic.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::dropins::{
    ENV_DROPIN_NAME, GENERATOR_PATH, NodeRules, env_dropin_with_rules, generator, role_env_dropin,
    wrapper_path,
};
use super::encoding::{DataUrl, data_url, readable_data_url};
use crate::node::kubelet::{Additions, Profile, validate_labels};

pub use super::arch::Arch;

pub struct PoolOptions {
    pub pool: String,
    /// Labels and taints besides the pool label.
    pub additions: Additions,
    /// The label the pool selects nodes by; default node.kubernetes.io/<pool>="".
    pub pool_label: Option<(String, String)>,
    pub base_role: String,
    pub ignition_version: &'static str,
    /// The static wrapper binaries, one per architecture (sorted, see
    /// `arch::one_per_arch`); a node of another architecture starts kubelet
    /// unchanged.
    pub wrappers: Vec<(Arch, Vec<u8>)>,
    /// Node rules and NFD label set the pool's nodes derive labels from.
    pub node_rules: NodeRules,
    /// `pool` names a built-in role (worker, master): no MachineConfigPool
    /// and no pool label, every node of the role gets the additions.
    pub builtin_role: bool,
}

/// Refuse a wrapper that will not run on the node: dynamic (has an ELF
/// interpreter, e.g. glibc's, absent or older on RHCOS 8) or built for
/// another machine. The caller adds how to build a good one
/// (`wrappers::build_hint`).
pub fn check_wrapper(bytes: &[u8], arch: Arch, path: &Path) -> Result<()> {
    let order = if arch.big_endian() { 2 } else { 1 };
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 || bytes[5] != order {
        bail!(
            "{} is not a 64-bit {}-endian ELF program",
            path.display(),
            if arch.big_endian() { "big" } else { "little" }
        );
    }
    let be = arch.big_endian();
    let u16_at = |o: usize| {
        let b = [bytes[o], bytes[o + 1]];
        if be {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        }
    };
    let u64_at = |o: usize| {
        let b: [u8; 8] = bytes[o..o + 8].try_into().unwrap();
        if be {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        }
    };
    let machine = u16_at(18);
    if machine != arch.elf_machine() {
        bail!(
            "{} is built for ELF machine {machine}, not {} ({})",
            path.display(),
            arch.name(),
            arch.elf_machine()
        );
    }
    let (phoff, phentsize, phnum) = (
        u64_at(32) as usize,
        u16_at(54) as usize,
        u16_at(56) as usize,
    );
    // ET_EXEC, or ET_DYN for a static-pie; anything else is not a program.
    let e_type = u16_at(16);
    if e_type != 2 && e_type != 3 {
        bail!(
            "{} is not an executable (ELF type {e_type})",
            path.display()
        );
    }
    for i in 0..phnum {
        let off = phoff + i * phentsize;
        let Some(header) = bytes.get(off..off + 56) else {
            bail!("{} has a truncated program header table", path.display());
        };
        let word: [u8; 4] = header[..4].try_into().unwrap();
        let p_type = if be {
            u32::from_be_bytes(word)
        } else {
            u32::from_le_bytes(word)
        };
        // PT_INTERP: the kernel would need a dynamic loader.
        if p_type == 3 {
            bail!(names_interpreter_error(path));
        }
        // PT_DYNAMIC: a static-pie has one too, but never a DT_NEEDED entry.
        if p_type == 2 && needs_shared_libraries(bytes, header, be) {
            bail!(
                "{} is dynamically linked (it needs shared libraries); a node needs a static wrapper",
                path.display()
            );
        }
    }
    Ok(())
}

fn names_interpreter_error(path: &Path) -> String {
    format!(
        "{} is dynamically linked (it names an ELF interpreter); a node needs a static wrapper",
        path.display()
    )
}

/// Refuse the start of a program (`head`, its ELF and program headers) that
/// names an ELF interpreter: for a file too big to read whole.
pub fn check_no_interpreter(head: &[u8], path: &Path) -> Result<()> {
    let Some(arch) = Arch::of_elf(head) else {
        return Ok(());
    };
    let be = arch.big_endian();
    let num = |o: usize, n: usize| -> Option<u64> {
        let b = head.get(o..o + n)?;
        Some(b.iter().enumerate().fold(0u64, |acc, (i, &x)| {
            let shift = if be { 8 * (n - 1 - i) } else { 8 * i };
            acc | (u64::from(x) << shift)
        }))
    };
    let (Some(phoff), Some(phentsize), Some(phnum)) = (num(32, 8), num(54, 2), num(56, 2)) else {
        return Ok(());
    };
    for i in 0..phnum {
        let off = phoff.saturating_add(i.saturating_mul(phentsize));
        if usize::try_from(off)
            .ok()
            .and_then(|o| num(o, 4))
            .is_some_and(|t| t == 3)
        {
            bail!(names_interpreter_error(path));
        }
    }
    Ok(())
}

/// Whether the dynamic section a PT_DYNAMIC `header` points at lists a
/// DT_NEEDED library. An unreadable section counts as needing one.
fn needs_shared_libraries(bytes: &[u8], header: &[u8], be: bool) -> bool {
    let word = |b: &[u8]| {
        let b: [u8; 8] = b[..8].try_into().unwrap();
        if be {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        }
    };
    let field = |o: usize| word(&header[o..]) as usize;
    let (offset, size) = (field(8), field(32));
    let Some(section) = offset
        .checked_add(size)
        .and_then(|end| bytes.get(offset..end))
    else {
        return true;
    };
    for entry in section.chunks_exact(16) {
        match word(entry) {
            0 => return false, // DT_NULL ends the table
            1 => return true,  // DT_NEEDED
            _ => {}
        }
    }
    false
}

/// Pool names: what a MachineConfigPool and a label key's name part allow,
/// and not a built-in role's.
pub fn check_pool_name(pool: &str) -> Result<()> {
    match pool_name_problem(pool) {
        Some(why) => bail!("--pool {pool:?}: {why}"),
        None => Ok(()),
    }
}

/// What is wrong with `pool` as a custom pool's name, with the fix.
pub fn pool_name_problem(pool: &str) -> Option<String> {
    let ok = !pool.is_empty()
        && pool.len() <= 63
        && pool
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !pool.starts_with('-')
        && !pool.ends_with('-');
    if !ok {
        return Some(
            "use lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit"
                .into(),
        );
    }
    if ["master", "worker", "arbiter"].contains(&pool) {
        let role = if pool == "arbiter" {
            String::new()
        } else {
            format!(", or --role {pool} instead of --pool for every node of the role")
        };
        return Some(format!(
            "{pool} is a built-in role; a custom pool needs its own name (e.g. worker-gpu){role}"
        ));
    }
    None
}

/// The pool label, checked: kubelet must be allowed to set it on itself.
fn pool_label(opts: &PoolOptions) -> Result<(String, String)> {
    let label = opts
        .pool_label
        .clone()
        .unwrap_or_else(|| (format!("node.kubernetes.io/{}", opts.pool), String::new()));
    if label.0.starts_with("node-role.kubernetes.io/")
        && !validate_labels(std::slice::from_ref(&label), Profile::OpenShift).is_empty()
    {
        bail!(
            "pool label {:?}: OpenShift's kubelet refuses to start with a custom node-role.kubernetes.io/ label \
             (only control-plane, master, worker, etcd, arbiter); use node.kubernetes.io/{} instead",
            label.0,
            opts.pool
        );
    }
    if let Some(e) = validate_labels(std::slice::from_ref(&label), Profile::OpenShift).first() {
        bail!("pool label: {e}");
    }
    if let Some(why) = carried_without_us(&label.0) {
        bail!(
            "--pool-label {}={}: {why}, so the pool would take in nodes it was not meant for and \
             the MCO would reboot each into it; select by a label of the pool's own: leave out \
             --pool-label for the default node.kubernetes.io/{}=",
            label.0,
            label.1,
            opts.pool
        );
    }
    Ok(label)
}

/// Why nodes carry `key` whatever we register: OpenShift registers every
/// node of a built-in role with its role labels and its OS, and kubelet sets
/// its own labels on every start (kubelet.md, openshift.md).
fn carried_without_us(key: &str) -> Option<String> {
    use crate::node::kubelet::labels::{KUBELET_LABELS, OPENSHIFT_ROLE_LABELS};
    if OPENSHIFT_ROLE_LABELS.contains(&key) {
        Some(format!(
            "{key} is a built-in role's label: OpenShift's kubelet registers every worker \
             with node-role.kubernetes.io/worker, every control-plane node with its master and \
             control-plane labels"
        ))
    } else if key == "node.openshift.io/os_id" {
        Some(format!(
            "OpenShift's kubelet unit registers every node with {key}=${{ID}} of its OS"
        ))
    } else if KUBELET_LABELS.contains(&key) {
        Some(format!(
            "kubelet registers every node with a {key} of its own (its hostname, OS or \
             architecture, or the cloud provider's zone, region or instance type)"
        ))
    } else {
        None
    }
}

fn file(path: &str, bytes: &[u8], mode: u32) -> Value {
    file_from_url(path, data_url(bytes), mode)
}

fn file_from_url(path: &str, url: DataUrl, mode: u32) -> Value {
    let mut contents = json!({ "source": url.source });
    if let Some(c) = url.compression {
        contents["compression"] = json!(c);
    }
    json!({ "path": path, "mode": mode, "overwrite": true, "contents": contents })
}

/// The base role's Ignition: a wrapper per architecture, and the generator
/// that writes kubelet.service's `ExecStart` drop-in at boot only for a node
/// whose architecture has a runnable wrapper (see `dropins::generator`).
fn base_ignition(opts: &PoolOptions) -> Value {
    let arches: Vec<Arch> = opts.wrappers.iter().map(|(a, _)| *a).collect();
    let mut files: Vec<Value> = opts
        .wrappers
        .iter()
        .map(|(a, bytes)| file(&wrapper_path(*a), bytes, 0o755))
        .collect();
    files.push(file(
        GENERATOR_PATH,
        generator(Profile::OpenShift, "kubelet.service", &arches).as_bytes(),
        0o755,
    ));
    // The day-2 label sync: the same bytes for a role and a pool (a custom
    // pool's nodes take both); the pool label it holds back is in the
    // pool's env drop-in (`contract::POOL_LABEL_VAR`).
    files.extend(
        super::sync_units::files(Profile::OpenShift, "kubelet.service", None)
            .iter()
            .map(|(path, text)| file(path, text.as_bytes(), 0o644)),
    );
    json!({
        "ignition": { "version": opts.ignition_version },
        "storage": { "files": files }
    })
}

/// The pool's Ignition: the labels/taints drop-in, as a file (drop-ins of one
/// unit in several MachineConfigs then never depend on how they merge). Its
/// data URL is plain text, so a review of the committed MachineConfig reads
/// the labels, taints and rule names. A built-in role's has a name and
/// variables of its own (`contract::ROLE_ENV_DROPIN_NAME`): a custom pool's
/// nodes get both, the pool's adding to the role's.
fn pool_ignition(opts: &PoolOptions, additions: &Additions) -> Result<Value> {
    let (name, dropin) = if opts.builtin_role {
        (
            crate::node::contract::ROLE_ENV_DROPIN_NAME,
            role_env_dropin(additions, &opts.node_rules)?,
        )
    } else {
        let mut dropin = env_dropin_with_rules(additions, &opts.node_rules)?;
        let (key, _) = pool_label(opts)?;
        dropin += &format!(
            "Environment=\"{}={key}\"\n",
            crate::node::contract::POOL_LABEL_VAR
        );
        (ENV_DROPIN_NAME, dropin)
    };
    let path = format!("/etc/systemd/system/kubelet.service.d/{name}");
    let url = readable_data_url(dropin.as_bytes());
    Ok(json!({
        "ignition": { "version": opts.ignition_version },
        "storage": { "files": [ file_from_url(&path, url, 0o644) ] }
    }))
}

fn machine_config(name: &str, role: &str, config: Value) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": { "name": name, "labels": { "machineconfiguration.openshift.io/role": role } },
        "spec": { "config": config }
    })
}

/// The annotation every manifest of a render carries (not the
/// kustomization, which all renders into a directory share): the pool or
/// built-in role it was rendered for. It tells a render's own files from
/// another pool's and the user's (`gitops_dir`); nothing in the cluster
/// reads it.
pub const RENDERED_FOR: &str = "kubelet-labeler/rendered-for";

pub use super::RENDERED_BY_ANNOTATION;

/// Mark `obj` as rendered by this version for `owner`.
fn mark(obj: &mut Value, owner: &str) {
    let annotations = &mut obj["metadata"]["annotations"];
    annotations[RENDERED_FOR] = json!(owner);
    annotations[RENDERED_BY_ANNOTATION] = json!(super::RENDERED_BY);
}

/// Rendered manifests: (file name, object), the last one the kustomization.
pub struct Rendered {
    /// The pool or built-in role, as [`RENDERED_FOR`] names it.
    pub owner: String,
    pub manifests: Vec<(String, Value)>,
}

/// The manifests of `owner` with the [`RENDERED_FOR`] mark, and a
/// kustomization listing them.
fn finish(owner: &str, mut manifests: Vec<(String, Value)>) -> Rendered {
    for (_, obj) in &mut manifests {
        mark(obj, owner);
    }
    let resources: Vec<&String> = manifests.iter().map(|(f, _)| f).collect();
    let kustomization = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    });
    manifests.push((KUSTOMIZATION.into(), kustomization));
    Rendered {
        owner: owner.to_string(),
        manifests,
    }
}

/// The kustomization's file name render writes (kustomize also reads
/// `kustomization.yml` and `Kustomization`; `gitops_dir` merges into those).
pub const KUSTOMIZATION: &str = "kustomization.yaml";

pub fn all_additions(opts: &PoolOptions) -> Result<Additions> {
    if opts.builtin_role {
        if !["worker", "master"].contains(&opts.pool.as_str()) {
            bail!(
                "--role {:?}: the MCO's built-in roles are worker and master",
                opts.pool
            );
        }
        if opts.pool_label.is_some() {
            bail!("--pool-label selects nodes into a custom pool; a built-in role has none");
        }
        return Ok(opts.additions.clone());
    }
    check_pool_name(&opts.pool)?;
    let label = pool_label(opts)?;
    if let Some((k, v)) = opts
        .additions
        .labels
        .iter()
        .find(|(k, v)| *k == label.0 && *v != label.1)
    {
        bail!(
            "--label {k}={v}: {k} is the pool label, registered as {k}={} (the value the pool \
             selects its nodes by); leave out this --label, or make it the pool label: \
             --pool-label {k}={v}",
            label.1
        );
    }
    let mut additions = opts.additions.clone();
    additions.labels.retain(|(k, _)| *k != label.0);
    additions.labels.insert(0, label);
    Ok(additions)
}

/// The wrapper MachineConfig's name for a pool or built-in role.
pub fn wrapper_mc_name(pool_or_role: &str) -> String {
    format!("50-{pool_or_role}-kubelet-labeler-wrapper")
}

/// MachineConfigs for a built-in role: the wrapper and the labels drop-in,
/// both for `role`, usable day 2 and in an installer's `openshift/` dir.
fn render_role(opts: &PoolOptions, additions: &Additions) -> Result<Rendered> {
    let role = &opts.pool;
    let wrapper_name = wrapper_mc_name(role);
    let labels_name = format!("50-{role}-kubelet-labeler-labels");
    let mut manifests = vec![(
        format!("{wrapper_name}.yaml"),
        machine_config(&wrapper_name, role, base_ignition(opts)),
    )];
    if !additions.labels.is_empty() || !additions.taints.is_empty() || !opts.node_rules.is_empty() {
        manifests.push((
            format!("{labels_name}.yaml"),
            machine_config(&labels_name, role, pool_ignition(opts, additions)?),
        ));
    }
    Ok(with_policy(finish(role, manifests), opts))
}

/// `rendered` with the node disruption policy for what we ship (OpenShift
/// 4.17+), kept out of the kustomization (see `sync_units::policy_file`).
/// Unmarked: every pool applies it server-side to the cluster's one
/// `MachineConfiguration`, where an annotation whose value differs by pool
/// or version would make the second pool's apply conflict with the first's
/// (a real API server answers 409); its file name says whose it is.
fn with_policy(mut rendered: Rendered, opts: &PoolOptions) -> Rendered {
    let arches: Vec<&str> = opts.wrappers.iter().map(|(a, _)| a.name()).collect();
    let policy = super::sync_units::disruption_policy(&arches, "kubelet.service");
    rendered
        .manifests
        .push((super::sync_units::policy_file(&rendered.owner), policy));
    rendered
}

pub fn render(opts: &PoolOptions) -> Result<Rendered> {
    let additions = all_additions(opts)?;
    if opts.builtin_role {
        return render_role(opts, &additions);
    }
    let (label_key, label_value) = additions.labels[0].clone();
    // Both MachineConfigs have the pool's role: applying them changes the
    // pool's rendered config only, never the base role's (whose every node
    // would drain and reboot). Names carry the pool, so two pools' outputs
    // never hold one object with two contents.
    let base_name = wrapper_mc_name(&opts.pool);
    let pool_name = format!("50-{}-kubelet-labeler-labels", opts.pool);
    let pool = json!({
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfigPool",
        "metadata": { "name": opts.pool },
        "spec": {
            "machineConfigSelector": { "matchExpressions": [ {
                "key": "machineconfiguration.openshift.io/role",
                "operator": "In",
                "values": [ opts.base_role, opts.pool ]
            } ] },
            "nodeSelector": { "matchLabels": { label_key: label_value } }
        }
    });
    let files = [
        format!("{base_name}.yaml"),
        format!("{pool_name}.yaml"),
        format!("machineconfigpool-{}.yaml", opts.pool),
    ];
    let [base_file, pool_file, mcp_file] = files;
    let rendered = finish(
        &opts.pool,
        vec![
            (
                base_file,
                machine_config(&base_name, &opts.pool, base_ignition(opts)),
            ),
            (
                pool_file,
                machine_config(&pool_name, &opts.pool, pool_ignition(opts, &additions)?),
            ),
            (mcp_file, pool),
        ],
    );
    Ok(with_policy(rendered, opts))
}

/// One Ignition config with what both MachineConfigs carry.
pub fn ignition(opts: &PoolOptions) -> Result<Value> {
    let additions = all_additions(opts)?;
    let mut cfg = base_ignition(opts);
    let pool = pool_ignition(opts, &additions)?;
    let extra = pool["storage"]["files"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    cfg["storage"]["files"]
        .as_array_mut()
        .expect("files")
        .extend(extra);
    Ok(cfg)
}

/// A pointer config: merge the pool's config from the Machine Config Server,
/// trusting `ca_pem` for it (what a boot ISO carries). Same as
/// [`super::pointer::pointer_config`], kept for existing callers.
pub fn pointer_ignition(merge_url: &str, ca_pem: &[u8], version: &str) -> Result<Value> {
    super::pointer::pointer_config(merge_url, ca_pem, version)
}

pub fn to_yaml(v: &Value) -> Result<String> {
    serde_saphyr::to_string(v).context("writing YAML")
}

/// A manifest as render writes it: the YAML, below the comment block that
/// says in words what a MachineConfig's env drop-in registers nodes with
/// (`summary`), so that a Git diff of two renders shows the change.
pub fn manifest_text(v: &Value) -> Result<String> {
    Ok(super::summary::set(&to_yaml(v)?, &super::summary::lines(v)))
}

/// What `-o` says on stderr of the policy its stream leaves out
/// ([`to_stream`]): where to get it and how to apply it.
pub fn stream_policy_note(rendered: &Rendered) -> String {
    let file = super::sync_units::policy_file(&rendered.owner);
    format!(
        "not in this stream: the cluster-wide node disruption policy (OpenShift 4.17+), which a \
         client-side `oc apply` would apply over other teams' entries. Render with --output-dir \
         DIR to get it as DIR/{file}, and apply it before these MachineConfigs, or nodes of the \
         pool reboot for files it does not name yet: {}",
        super::sync_units::apply_command(&rendered.owner, &Path::new("DIR").join(&file))
    )
}

/// The manifests to apply, as one YAML stream (`-o -`, for `oc apply -f -`).
/// The kustomization is left out: it is kustomize's input, not an API
/// object, and `oc apply` fails on its kind.
pub fn to_stream(rendered: &Rendered) -> Result<String> {
    let mut out = String::new();
    for (_, obj) in &rendered.manifests {
        // The policy is cluster-wide: applied client-side it would replace
        // the cluster's lists (`sync_units::policy_file`).
        if obj["kind"] == "Kustomization" || obj["kind"] == "MachineConfiguration" {
            continue;
        }
        out += "---\n";
        out += &manifest_text(obj)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal static ELF header for `machine`.
    pub fn fake_elf(machine: u16) -> Vec<u8> {
        let mut v = vec![0u8; 64];
        v[..4].copy_from_slice(b"\x7fELF");
        v[4] = 2;
        v[5] = 1;
        v[16..18].copy_from_slice(&2u16.to_le_bytes());
        v[18..20].copy_from_slice(&machine.to_le_bytes());
        v
    }

    fn opts() -> PoolOptions {
        PoolOptions {
            pool: "worker-gpu".into(),
            additions: Additions::default(),
            pool_label: None,
            base_role: "worker".into(),
            ignition_version: "3.4.0",
            wrappers: vec![(Arch::X86_64, fake_elf(62))],
            node_rules: Default::default(),
            builtin_role: false,
        }
    }

    #[test]
    fn wrapper_checks() {
        let p = Path::new("w");
        assert!(check_wrapper(&fake_elf(62), Arch::X86_64, p).is_ok());
        assert!(
            check_wrapper(&fake_elf(183), Arch::X86_64, p)
                .unwrap_err()
                .to_string()
                .contains("183")
        );
        assert!(check_wrapper(b"#!/bin/sh\n", Arch::X86_64, p).is_err());
        let mut dynamic = fake_elf(62);
        dynamic.resize(64 + 56, 0);
        dynamic[32..40].copy_from_slice(&64u64.to_le_bytes());
        dynamic[54..56].copy_from_slice(&56u16.to_le_bytes());
        dynamic[56..58].copy_from_slice(&1u16.to_le_bytes());
        dynamic[64..68].copy_from_slice(&3u32.to_le_bytes());
        assert!(
            check_wrapper(&dynamic, Arch::X86_64, p)
                .unwrap_err()
                .to_string()
                .contains("dynamically")
        );
        // PT_DYNAMIC whose table lists DT_NEEDED (a program without an
        // interpreter that still needs libc.so) vs. a static-pie's table.
        let with_dynamic = |tags: &[u64]| {
            let mut v = fake_elf(62);
            v[16..18].copy_from_slice(&3u16.to_le_bytes());
            v.resize(64 + 56, 0);
            v[32..40].copy_from_slice(&64u64.to_le_bytes());
            v[54..56].copy_from_slice(&56u16.to_le_bytes());
            v[56..58].copy_from_slice(&1u16.to_le_bytes());
            v[64..68].copy_from_slice(&2u32.to_le_bytes());
            v[72..80].copy_from_slice(&120u64.to_le_bytes());
            v[96..104].copy_from_slice(&((tags.len() * 16) as u64).to_le_bytes());
            for tag in tags {
                v.extend_from_slice(&tag.to_le_bytes());
                v.extend_from_slice(&0u64.to_le_bytes());
            }
            v
        };
        let needs = check_wrapper(&with_dynamic(&[5, 1, 0]), Arch::X86_64, p).unwrap_err();
        assert!(needs.to_string().contains("shared libraries"), "{needs}");
        assert!(check_wrapper(&with_dynamic(&[5, 0, 1]), Arch::X86_64, p).is_ok());
        let mut object = fake_elf(62);
        object[16..18].copy_from_slice(&1u16.to_le_bytes());
        assert!(check_wrapper(&object, Arch::X86_64, p).is_err());
    }

    #[test]
    fn big_endian_s390x_wrappers_are_read_in_their_byte_order() {
        let p = Path::new("w");
        let mut be = vec![0u8; 64];
        be[..4].copy_from_slice(b"\x7fELF");
        be[4] = 2;
        be[5] = 2;
        be[16..18].copy_from_slice(&2u16.to_be_bytes());
        be[18..20].copy_from_slice(&22u16.to_be_bytes());
        assert!(check_wrapper(&be, Arch::S390x, p).is_ok());
        let e = check_wrapper(&be, Arch::X86_64, p).unwrap_err().to_string();
        assert!(e.contains("little-endian"), "{e}");
        // A little-endian header claiming s390x is not one.
        let e = check_wrapper(&fake_elf(22), Arch::S390x, p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("big-endian"), "{e}");
        // ppc64le is little-endian, e_machine 21.
        assert!(check_wrapper(&fake_elf(21), Arch::Ppc64le, p).is_ok());
    }

    #[test]
    fn every_wrapper_and_the_generator_are_carried() {
        let mut o = opts();
        o.wrappers = vec![(Arch::X86_64, fake_elf(62)), (Arch::Aarch64, fake_elf(183))];
        let r = render(&o).unwrap();
        let files = r.manifests[0].1["spec"]["config"]["storage"]["files"]
            .as_array()
            .unwrap()
            .clone();
        let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
        assert_eq!(
            paths,
            [
                "/usr/local/bin/kubelet-labeler-wrapper.x86_64",
                "/usr/local/bin/kubelet-labeler-wrapper.aarch64",
                GENERATOR_PATH,
                "/etc/systemd/system/kubelet-labeler-sync.service",
                "/etc/systemd/system/kubelet-labeler-sync.path",
                "/etc/systemd/system/kubelet.service.d/91-kubelet-labeler-sync.conf",
            ]
        );
        assert!(r.manifests[0].1["spec"]["config"].get("systemd").is_none());
    }

    #[test]
    fn stream_leaves_out_the_kustomization() {
        let r = render(&opts()).unwrap();
        let stream = to_stream(&r).unwrap();
        assert_eq!(stream.matches("---\n").count(), 3);
        assert!(!stream.contains("Kustomization"));
        assert!(r.manifests.iter().any(|(n, _)| n == "kustomization.yaml"));
    }

    #[test]
    fn pool_names_and_labels() {
        assert!(check_pool_name("worker-gpu").is_ok());
        for bad in ["Worker", "-x", "x-", "", "worker", "master", "a_b"] {
            assert!(check_pool_name(bad).is_err(), "{bad}");
        }
        let mut o = opts();
        o.pool_label = Some(("node-role.kubernetes.io/worker-gpu".into(), String::new()));
        let e = render(&o).err().unwrap().to_string();
        assert!(
            e.contains("refuses") && e.contains("node.kubernetes.io/worker-gpu"),
            "{e}"
        );
    }

    /// Applying a pool's render changes that pool only: every MachineConfig
    /// has the pool's role (the pool selects [worker, pool], no other pool
    /// selects the pool's role), and two pools share no object name.
    #[test]
    fn a_pool_render_touches_only_that_pool() {
        let names = |o: &PoolOptions| -> Vec<String> {
            let r = render(o).unwrap();
            for (_, obj) in &r.manifests {
                if obj["kind"] == "MachineConfig" {
                    assert_eq!(
                        obj["metadata"]["labels"]["machineconfiguration.openshift.io/role"],
                        json!(o.pool),
                        "{obj}"
                    );
                }
            }
            // (The MachineConfiguration is cluster-wide by design: each
            // pool's entries merge by path under its own field manager.)
            r.manifests
                .iter()
                .filter(|(_, obj)| {
                    obj["kind"] != "Kustomization" && obj["kind"] != "MachineConfiguration"
                })
                .map(|(_, obj)| {
                    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
                    format!("{}/{}", s(&obj["kind"]), s(&obj["metadata"]["name"]))
                })
                .collect()
        };
        let a = names(&opts());
        assert_eq!(
            a,
            [
                "MachineConfig/50-worker-gpu-kubelet-labeler-wrapper",
                "MachineConfig/50-worker-gpu-kubelet-labeler-labels",
                "MachineConfigPool/worker-gpu"
            ]
        );
        let mut other = opts();
        other.pool = "worker-pi".into();
        other.wrappers = vec![(Arch::Aarch64, fake_elf(183))];
        let b = names(&other);
        assert!(a.iter().all(|n| !b.contains(n)), "{a:?} {b:?}");
        // --role worker: the way to put the wrapper on every worker.
        let mut role = opts();
        role.pool = "worker".into();
        role.builtin_role = true;
        let w = names(&role);
        assert_eq!(w, ["MachineConfig/50-worker-kubelet-labeler-wrapper"]);
        assert!(a.iter().all(|n| !w.contains(n)));
    }

    #[test]
    fn pool_selects_roles_and_nodes() {
        let r = render(&opts()).unwrap();
        let pool = &r.manifests[2].1;
        assert_eq!(
            pool["spec"]["machineConfigSelector"]["matchExpressions"][0]["values"],
            json!(["worker", "worker-gpu"])
        );
        assert_eq!(
            pool["spec"]["nodeSelector"]["matchLabels"],
            json!({"node.kubernetes.io/worker-gpu": ""})
        );
        assert_eq!(
            to_stream(&r).unwrap(),
            to_stream(&render(&opts()).unwrap()).unwrap()
        );
    }
}
