//! What `plan` reads: the two renders (directories, files, or a git
//! revision's), and the fleet as a cluster exports it (`oc get ... -o json`
//! or `-o yaml`, `facts --json` dumps), its objects told apart by `kind`.
//! Exports are streamed: a list's items are reduced one at a time, so a
//! fleet of NodeFeatures far larger than memory is read in bounded memory.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::identity::{self, Identity};
use super::tree;
use crate::cli::render::input;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The most one object of a fleet export may take: etcd stores at most
/// 1.5 MiB an object, a NodeFeature is about 130 KB.
pub const OBJECT_MAX_BYTES: u64 = 16 << 20;
/// A YAML export is read whole; JSON is streamed.
const YAML_MAX_BYTES: u64 = 256 << 20;
/// Linux's `O_NONBLOCK` (std names no open flags).
const O_NONBLOCK: i32 = 0o4000;

/// One side of the change: the manifests of a render.
#[derive(Debug, Default)]
pub struct Render {
    /// As given (`gitops/`, `origin/main:gitops/`).
    pub name: String,
    pub machineconfigs: Vec<Value>,
    pub pools: Vec<Value>,
    /// Its `MachineConfiguration`s (the disruption policy) that are applied
    /// with it, in read order: client-side, as the tree's applier applies
    /// every file it reaches, without a field manager of their own
    /// whatever their file is called (review 25 r25a F1).
    pub policies: Vec<super::policy::PolicyFile>,
    /// Those of files a kustomization leaves out (render's `cluster-wide/`):
    /// not applied with the tree, but by hand or never (review 21 r21b F6);
    /// render's own (`machineconfiguration-<pool>.yaml`) with the field
    /// manager render says to apply it with, server-side.
    pub policies_left_out: Vec<super::policy::PolicyFile>,
    /// Objects the MCO renders into a pool's MachineConfigs that plan does
    /// not lay out (`NOT_LAID_OUT`, `RENDERED_FROM`), by kind and
    /// [`Identity::key_name`], as [`identity::compared`] (whole: review 21
    /// r21b F1).
    pub not_laid_out: std::collections::BTreeMap<(String, String), Value>,
    /// Objects of any other kind plan does not lay out (but kustomize's
    /// own), by `Kind (group)` and [`Identity::key_name`], as
    /// [`identity::compared`]: a change of one is refused (review 17: a
    /// Network's MTU migration reboots every node; an image policy is
    /// rendered into every pool), but of a Namespace or ServiceAccount
    /// that is only there (review 21 r21b F3).
    pub unpriced: std::collections::BTreeMap<(String, String), Value>,
    /// The names of core `Node` objects in it: applied, one replaces the
    /// Node's taints (a list applied whole) and labels.
    pub nodes: Vec<String>,
    /// Objects given twice, otherwise each time ([`Render::unpriced`] and
    /// [`Render::not_laid_out`] ones): which one the cluster keeps is the
    /// applier's order, not plan's.
    pub twice: Vec<String>,
    /// Each object's namespaces as spelt, by `Kind (group)` and name, of
    /// every kind: a cluster-scoped object given with and without one, or
    /// in two, is one object (review 21 r21b F2).
    pub spellings: std::collections::BTreeMap<(String, String), Vec<Option<String>>>,
    /// The file each object was first given in, by `Kind (group)`, name
    /// and namespace as spelt: one given again, anywhere in the render and
    /// whatever its pool or role, is refused (review 23 r23b F2).
    pub given: std::collections::BTreeMap<(String, String, Option<String>), String>,
}

/// Kinds the MCO renders into MachineConfigs of the pools they select
/// (`KubeletConfig`: kubelet.conf, `registerWithTaints` among it;
/// `ContainerRuntimeConfig`: CRI-O's), which plan does not render.
pub const NOT_LAID_OUT: [&str; 2] = ["KubeletConfig", "ContainerRuntimeConfig"];

/// Other objects the MCO renders MachineConfigs from (registries.conf from
/// image mirror sets, kubelet's config from the cluster's Node config, an
/// OS image from a MachineOSConfig), by API group and kind: refused as a
/// change, as [`NOT_LAID_OUT`] kinds are (review 14).
const RENDERED_FROM: [(&str, &str); 11] = [
    ("config.openshift.io", "Node"),
    ("config.openshift.io", "Image"),
    ("config.openshift.io", "Proxy"),
    ("config.openshift.io", "APIServer"),
    ("config.openshift.io", "FeatureGate"),
    ("config.openshift.io", "ImageDigestMirrorSet"),
    ("config.openshift.io", "ImageTagMirrorSet"),
    ("operator.openshift.io", "ImageContentSourcePolicy"),
    ("machineconfiguration.openshift.io", "MachineOSConfig"),
    // The Node Tuning Operator renders these into MachineConfigs (kernel
    // arguments, a real-time kernel).
    ("performance.openshift.io", "PerformanceProfile"),
    ("tuned.openshift.io", "Tuned"),
];

/// kustomize's own files, by API group and kind: not applied, nothing of
/// the cluster. Every other kind is priced (review 21 r21b F3: no kind is
/// neutral by kind alone).
const KUSTOMIZE_OWN: [(&str, &str); 2] = [
    ("kustomize.config.k8s.io", "Kustomization"),
    ("kustomize.config.k8s.io", "Component"),
];

/// The MachineConfigs and pools of `base` that `proposed` removes, added
/// back to it: an apply that does not prune leaves them in the cluster,
/// where they still render into their pools. What was kept, named.
pub fn keep_removed(base: &Render, proposed: &mut Render) -> Vec<String> {
    let name = |v: &Value| {
        v.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut kept = Vec::new();
    for (kind, from, to) in [
        (
            "MachineConfig",
            &base.machineconfigs,
            &mut proposed.machineconfigs,
        ),
        ("MachineConfigPool", &base.pools, &mut proposed.pools),
    ] {
        for obj in from {
            let n = name(obj);
            if !to.iter().any(|o| name(o) == n) {
                kept.push(format!("{kind} {n:?}"));
                to.push(obj.clone());
            }
        }
    }
    kept
}

/// A render given as a directory (read recursively), a file, or
/// `REV:PATH` of the git repository of the working directory.
pub fn read_render(spec: &str) -> Result<Render> {
    let path = Path::new(spec);
    // A path as given, a dangling link too (`Path::exists` follows it).
    let on_disk = Some(spec.trim_end_matches('/')).filter(|s| !s.is_empty());
    let exists = std::fs::symlink_metadata(on_disk.unwrap_or(spec)).is_ok();
    let texts = if exists {
        // Never guessed from what the working directory holds (review 23
        // r23b F4): a pull request's checkout may add a directory named
        // like the revision (`HEAD:gitops`, `origin/main:gitops/`).
        if let Some((rev, sub)) = spec.split_once(':').filter(|(r, _)| tree::is_revision(r)) {
            bail!(
                "{spec}: ambiguous: a path of the working directory, and {sub:?} of git \
                 revision {rev:?}; plan does not guess which is meant (a pull request can add \
                 a directory named like the revision): give `./{spec}` for the path, or move \
                 or rename the path to read the revision"
            );
        }
        tree::check_no_link(spec)?;
        tree::local_texts(path, spec)?
    } else if let Some((rev, sub)) = spec.split_once(':') {
        tree::git_texts(rev, sub, spec)?
    } else {
        bail!(
            "{spec}: no such file or directory (a git revision is given as REV:PATH, e.g. origin/main:gitops/)"
        );
    };
    let mut render = Render {
        name: spec.to_string(),
        ..Default::default()
    };
    let mut kustomizations = Vec::new();
    // Each directory's manifest files, by plain name.
    let mut manifests: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    // What may be left out of a kustomization (review 21 r21b F7): the files
    // that hold the cluster's MachineConfiguration alone, and the
    // directories holding no other (`other` holds those that do, and
    // every directory above them).
    let mut only_policy = std::collections::BTreeSet::new();
    let mut other = std::collections::BTreeSet::new();
    // Where each of `render.policies` is read from: (directory, file).
    let mut policy_at = Vec::new();
    for m in texts {
        if input::KUSTOMIZATION_NAMES.contains(&m.file.as_str()) {
            kustomizations.push(m);
            continue;
        }
        manifests
            .entry(m.dir.clone())
            .or_default()
            .push(m.file.clone());
        let docs = crate::cli::yaml::kube_yaml_docs(&m.text)
            .with_context(|| format!("{spec}: reading {} as YAML", m.name))?;
        // Every object, of any kind, is read as applied: one an applier
        // leaves out is refused (review 21 r21b F1).
        let applied = crate::cli::render::applied::applied_objects(&docs, &m.name)
            .map_err(|e| e.context(spec.to_string()))?;
        for obj in applied {
            crate::cli::render::applied::check_left_out(obj, &m.name)
                .map_err(|e| e.context(spec.to_string()))?;
        }
        if input::policy_only_docs(&docs) {
            only_policy.insert((m.dir.clone(), m.file.clone()));
        } else {
            let mut d = m.dir.as_str();
            while other.insert(d.to_string()) {
                let Some((up, _)) = d.rsplit_once('/') else {
                    break;
                };
                d = up;
            }
        }
        for doc in docs {
            add_render_object(doc, &m, &mut render).map_err(|e| e.context(spec.to_string()))?;
        }
        policy_at.resize(render.policies.len(), (m.dir.clone(), m.file.clone()));
    }
    // Every kustomization of the tree (review 18: one away from the
    // MachineConfigs patched them, or applied a Node): `kubectl apply -k`
    // applies the files as they are, and the subdirectories it lists, each
    // with a kustomization so checked, and every one of them.
    let kustomized: std::collections::BTreeSet<&str> =
        kustomizations.iter().map(|k| k.dir.as_str()).collect();
    let mut left_out: Vec<(String, String)> = Vec::new();
    let all_dirs: std::collections::BTreeSet<&str> = manifests
        .keys()
        .map(String::as_str)
        .chain(kustomized.iter().copied())
        .collect();
    for k in &kustomizations {
        let files = manifests.get(&k.dir).map_or(&[][..], Vec::as_slice);
        let prefix = if k.dir.ends_with(['/', ':']) || k.dir.is_empty() {
            k.dir.clone()
        } else {
            format!("{}/", k.dir)
        };
        let mut dirs: Vec<(String, bool)> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        // The directories below it are one sorted run from its prefix on:
        // each kustomization looks at its own subtree only, not at every
        // directory of the tree (review 20 r20b F5: quadratic in them).
        let below = all_dirs.range::<str, _>((
            std::ops::Bound::Included(prefix.as_str()),
            std::ops::Bound::Unbounded,
        ));
        for d in below {
            let Some(rest) = d.strip_prefix(prefix.as_str()) else {
                break;
            };
            let Some(child) = rest.split('/').next() else {
                continue;
            };
            if child.is_empty() || !seen.insert(child) {
                continue;
            }
            let has = kustomized.contains(format!("{prefix}{child}").as_str());
            dirs.push((child.to_string(), has));
        }
        let mut may_leave_out = |f: &str| {
            let sub = format!("{prefix}{f}");
            if all_dirs.contains(sub.as_str()) {
                !other.contains(&sub)
            } else {
                only_policy.contains(&(k.dir.clone(), f.to_string()))
            }
        };
        let out =
            input::check_kustomization(&k.text, &k.name, "plan", files, &dirs, &mut may_leave_out)
                .map_err(|e| e.context(spec.to_string()))?;
        for f in out {
            left_out.push((k.dir.clone(), f));
        }
    }
    // The MachineConfigurations a kustomization leaves out are not applied
    // with the tree (review 21 r21b F6): a file left out, or any file below
    // a directory left out.
    let is_left_out = |(dir, file): &(String, String)| {
        left_out.iter().any(|(kdir, f)| {
            let sub = if kdir.ends_with(['/', ':']) || kdir.is_empty() {
                format!("{kdir}{f}")
            } else {
                format!("{kdir}/{f}")
            };
            (dir == kdir && file == f)
                || *dir == sub
                || dir
                    .strip_prefix(sub.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        })
    };
    // How a policy file is applied follows from how the tree is applied,
    // never from its name (review 25 r25a F1): one the tree's applier
    // reaches (listed in an applied kustomization, or any file of a tree
    // without one) is applied client-side by `oc apply -k`/`-f` and Argo
    // CD whatever it is called (kubectl never reads a file's name): no
    // field manager of its own. Only one it never reaches (left out:
    // render's `cluster-wide/`) is applied by hand, server-side, with
    // render's field manager when named as render names it.
    let mut applied = Vec::new();
    let mut applied_from: Vec<String> = Vec::new();
    for (mut p, at) in std::mem::take(&mut render.policies)
        .into_iter()
        .zip(&policy_at)
    {
        if is_left_out(at) {
            p.manager = renders_manager(&at.1);
            render.policies_left_out.push(p);
        } else {
            p.manager = None;
            applied.push(p);
            applied_from.push(format!("{}/{}", at.0, at.1));
        }
    }
    // Each client-side apply replaces the lists whole: with two, the
    // cluster keeps the last one applied, which is the applier's order.
    if applied.len() > 1 {
        bail!(
            "{spec}: the cluster's MachineConfiguration is given more than once where the \
             apply reaches it ({}): each client-side apply replaces its lists whole, so which \
             one the cluster keeps depends on the order of the apply; give it once",
            applied_from.join(", ")
        );
    }
    render.policies = applied;
    for mc in &render.machineconfigs {
        let name = crate::cli::render::layout::mc_name(mc);
        crate::cli::render::api_objects::check_not_mco_s_own(name, spec)?;
    }
    if render.machineconfigs.is_empty() && render.pools.is_empty() {
        bail!(
            "{spec}: no MachineConfig or MachineConfigPool in it; give what `render machineconfig --output-dir` wrote"
        );
    }
    Ok(render)
}

/// The field manager `render machineconfig` says to apply its policy file
/// `machineconfiguration-<pool>.yaml` with, server-side, by hand: only for
/// a file the tree's applier never reaches.
fn renders_manager(file: &str) -> Option<String> {
    (file.strip_prefix(crate::cli::render::sync_units::POLICY_FILE_PREFIX))
        .and_then(|f| f.strip_suffix(".yaml"))
        .map(|pool| format!("kubelet-labeler-{pool}"))
}

fn add_render_object(doc: Value, m: &tree::ManifestFile, render: &mut Render) -> Result<()> {
    let Some(k) = doc.get("kind").and_then(Value::as_str) else {
        // An empty document: nothing to apply.
        if doc.is_null() {
            return Ok(());
        }
        // kubectl refuses to apply it, and Argo CD fails the whole sync;
        // a file an applier reads as its settings has no kind either.
        bail!(
            "{}: a YAML document without a `kind`, which plan cannot place (kubectl refuses \
             it; an applier's settings file changes what is applied): give it its kind, or \
             move it out of the tree",
            m.name
        );
    };
    // A list as kubectl decodes one: `List`, or `...List` with items
    // (without them it applies the object as it is).
    if k == "List" || (k.ends_with("List") && matches!(doc.get("items"), Some(Value::Array(_)))) {
        if let Some(Value::Array(items)) = doc.get("items") {
            for item in items.clone() {
                add_render_object(item, m, render)?;
            }
        }
        return Ok(());
    }
    // One identity for every object, of any kind (review 21 r21b F2).
    let id = Identity::of(&doc);
    // One object per kind, group and name (and namespace) in the whole
    // render, of every kind: `oc apply -R` and Argo CD keep the last one
    // applied, whole, whatever pool or role it names (review 23 r23b F2: a
    // copy of the pool's labels MachineConfig for another role replaced
    // it); kustomize refuses the build. A namespace spelt otherwise is
    // `twice` below. The cluster's `MachineConfiguration` may be given
    // once per pool (render's, left out, each applied by its own field
    // manager: server-side apply merges them; `policy::applied` prices
    // those the tree applies), and kustomize's own files are not applied.
    let per_manager = k == "MachineConfiguration" && id.group == "operator.openshift.io";
    if !per_manager && !KUSTOMIZE_OWN.contains(&(id.group.as_str(), k)) {
        let key = (id.kind_group(), id.name.clone(), id.spelt.clone());
        if let Some(first) = render.given.get(&key) {
            bail!(
                "{}: {} {:?} is given twice (also in {first}): the cluster holds one object \
                 per kind and name (`oc apply -R` and Argo CD keep the last one applied, \
                 whole, whatever pool or role it names; kustomize refuses the build), while \
                 plan would read both; give it once",
                m.name,
                id.kind_group(),
                id.key_name()
            );
        }
        render.given.insert(key, m.name.clone());
    }
    let spelt = render
        .spellings
        .entry((id.kind_group(), id.name.clone()))
        .or_default();
    if !spelt.contains(&id.spelt) {
        spelt.push(id.spelt.clone());
    }
    if id.twice_in(spelt) {
        render.twice.push(format!(
            "{} {:?} (given in more than one namespace, or with and without one)",
            id.kind_group(),
            id.name
        ));
    }
    let rendered_from = RENDERED_FROM
        .iter()
        .any(|(group, kind)| *kind == k && id.group == *group);
    match k {
        "MachineConfig" => render.machineconfigs.push(doc),
        "MachineConfigPool" => render.pools.push(doc),
        // Its field manager follows from how the tree is applied, known
        // once every kustomization is read (`read_render`).
        "MachineConfiguration" => render.policies.push(super::policy::PolicyFile {
            name: m.name.clone(),
            manager: None,
            doc,
        }),
        "Node" if id.group == "v1" => render.nodes.push(id.name),
        _ if KUSTOMIZE_OWN.contains(&(id.group.as_str(), k)) => {}
        _ => {
            // Not laid out: the MCO renders it (kept by kind alone), or
            // plan cannot price it (kept by kind and group). Compared
            // whole, labels and annotations with the spec (review 21 r21b
            // F1: a KubeletConfig was compared by its spec alone).
            let (map, kind) = if NOT_LAID_OUT.contains(&k) || rendered_from {
                (&mut render.not_laid_out, k.to_string())
            } else {
                (&mut render.unpriced, id.kind_group())
            };
            let key = (kind, id.key_name());
            let compared = identity::compared(&doc, &id);
            if map.get(&key).is_some_and(|earlier| *earlier != compared) {
                // Which one lands is the applier's choice.
                render.twice.push(format!("{} {:?}", key.0, key.1));
            }
            map.insert(key, compared);
        }
    }
    Ok(())
}

/// Each object of a fleet export, in order: the items of a list one at a
/// time, a single object whole; `facts --json` output as it is. `each`
/// returns an error to stop.
pub fn read_fleet_file(
    path: &Path,
    keep: Keep,
    each: &mut dyn FnMut(Value) -> Result<(), String>,
) -> Result<()> {
    let name = path.display().to_string();
    // Without blocking: a FIFO named here is refused, not waited on.
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(O_NONBLOCK)
            .open(path)
            .with_context(|| format!("--fleet {name}: opening it"))?
    };
    let meta = file.metadata().with_context(|| format!("--fleet {name}"))?;
    if !meta.is_file() {
        bail!("--fleet {name}: not a regular file");
    }
    let mut reader = std::io::BufReader::new(file);
    // JSON (what `-o json` writes) streams; anything else is YAML.
    let first = {
        use std::io::BufRead;
        let buf = reader
            .fill_buf()
            .with_context(|| format!("--fleet {name}: reading it"))?;
        buf.iter().copied().find(|b| !b.is_ascii_whitespace())
    };
    if first == Some(b'{') {
        let mut item = |bytes: &[u8]| -> Result<()> {
            let mut de = serde_json::Deserializer::from_slice(bytes);
            let v = Object { depth: 0, keep }
                .deserialize(&mut de)
                .and_then(|v| de.end().map(|()| v))
                .map_err(|e| anyhow::anyhow!("--fleet {name}: {e}"))?;
            each(v).map_err(|e| anyhow::anyhow!("--fleet {name}: {e}"))
        };
        let rest = split_json(&mut reader, &name, &mut item)?;
        // What is not a list's items: the list's own fields, or a single
        // object whole.
        let mut de = serde_json::Deserializer::from_slice(&rest);
        let single = serde_json::Map::<String, Value>::deserialize(&mut de)
            .and_then(|v| de.end().map(|()| v))
            .map_err(|e| anyhow::anyhow!("--fleet {name}: {e}"))?;
        if !single.contains_key("items") {
            each(Value::Object(single)).map_err(|e| anyhow::anyhow!("--fleet {name}: {e}"))?;
        }
        return Ok(());
    }
    let mut text = String::new();
    reader
        .take(YAML_MAX_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("--fleet {name}: reading it as UTF-8 text"))?;
    if text.len() as u64 > YAML_MAX_BYTES {
        bail!(
            "--fleet {name}: more than {} MiB of YAML; export as JSON (-o json), which is read as it streams",
            YAML_MAX_BYTES >> 20
        );
    }
    let docs: Vec<Value> = crate::cli::yaml::kube_yaml_docs(&text)
        .with_context(|| format!("--fleet {name}: reading it as YAML or JSON"))?;
    for doc in docs {
        match doc.get("items") {
            Some(Value::Array(items))
                if doc
                    .get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List")) =>
            {
                for item in items.clone() {
                    each(item).map_err(|e| anyhow::anyhow!("--fleet {name}: {e}"))?;
                }
            }
            _ if doc.is_null() => {}
            _ => each(doc).map_err(|e| anyhow::anyhow!("--fleet {name}: {e}"))?,
        }
    }
    Ok(())
}

/// Which features of a NodeFeature's `spec.features` to keep: the rest
/// are skipped as they are read, never built (a kernel config alone is
/// thousands of attributes). None keeps all.
pub type Keep<'a> = Option<&'a crate::node::sorted::SortedSet<String>>;

/// An item of a list, read as a `Value` but for the features `keep`
/// leaves out: `spec.features.{flags,attributes,instances}.NAME` at depth
/// 0, 1, 2, 3.
#[derive(Clone, Copy)]
struct Object<'a> {
    depth: u8,
    keep: Keep<'a>,
}

impl<'de> DeserializeSeed<'de> for Object<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.keep.is_none() {
            return Value::deserialize(d);
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Object<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key_seed(Key)? {
            let descend = match self.depth {
                0 => key == "spec",
                1 => key == "features",
                2 => matches!(&*key, "flags" | "attributes" | "instances"),
                _ => false,
            };
            if self.depth == 3 && !self.keep.is_some_and(|k| k.contains(&*key)) {
                map.next_value::<serde::de::IgnoredAny>()?;
                continue;
            }
            let v = if descend {
                map.next_value_seed(Object {
                    depth: self.depth + 1,
                    keep: self.keep,
                })?
            } else {
                map.next_value::<Value>()?
            };
            out.insert(key.into_owned(), v);
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.into()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// A member's name, borrowed from the input when it has no escapes: the
/// thousands of features skipped are never copied.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = std::borrow::Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = std::borrow::Cow<'de, str>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a member's name")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(v))
    }
}

/// The bytes of a JSON document whose top level is an object, read as they
/// stream: each element of its `items` array is handed to `item` on its
/// own (at most `OBJECT_MAX_BYTES` each), and the rest of the object (its
/// `items` left empty) is returned, at most `OBJECT_MAX_BYTES` too. Only
/// the nesting is followed here (strings, escapes, brackets); the bytes
/// are parsed by serde_json, from a slice: many times faster than from a
/// reader, byte by byte.
fn split_json(
    reader: &mut dyn std::io::BufRead,
    name: &str,
    item: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<Vec<u8>> {
    let mut s = Splitter::default();
    loop {
        let buf = reader
            .fill_buf()
            .with_context(|| format!("--fleet {name}: reading it"))?;
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        s.feed(buf, item).map_err(|e| match e {
            Split::TooLarge => anyhow::anyhow!(
                "--fleet {name}: an object larger than {} MiB (a Node or NodeFeature is far smaller): is this an export of the cluster?",
                OBJECT_MAX_BYTES >> 20
            ),
            Split::Bad(why) => anyhow::anyhow!("--fleet {name}: {why}"),
            Split::Item(e) => e,
        })?;
        reader.consume(len);
    }
    if !s.done {
        bail!("--fleet {name}: it ends inside an object (truncated?)");
    }
    Ok(s.rest)
}

enum Split {
    TooLarge,
    Bad(&'static str),
    Item(anyhow::Error),
}

#[derive(Default)]
struct Splitter {
    /// The top-level object but for its items.
    rest: Vec<u8>,
    /// The item being read.
    cur: Vec<u8>,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The last string begun at depth 1: a member's key when `[` follows.
    key: Vec<u8>,
    key_open: bool,
    /// Inside the top-level `items` array (its elements are at depth 2).
    in_items: bool,
    done: bool,
}

impl Splitter {
    fn sink(&mut self, bytes: &[u8]) -> Result<(), Split> {
        let to = if self.in_items && self.depth >= 2 {
            &mut self.cur
        } else {
            &mut self.rest
        };
        to.extend_from_slice(bytes);
        if to.len() as u64 > OBJECT_MAX_BYTES {
            return Err(Split::TooLarge);
        }
        Ok(())
    }

    /// Hand the item read so far over, if there is one (not only blanks).
    fn emit(&mut self, item: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<(), Split> {
        if self.cur.iter().any(|b| !b.is_ascii_whitespace()) {
            item(&self.cur).map_err(Split::Item)?;
        }
        self.cur.clear();
        Ok(())
    }

    fn feed(&mut self, buf: &[u8], item: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<(), Split> {
        let mut i = 0;
        while i < buf.len() {
            if self.done {
                if !buf[i].is_ascii_whitespace() {
                    return Err(Split::Bad("more than one JSON document"));
                }
                i += 1;
                continue;
            }
            // A run of bytes that changes nothing here.
            let start = i;
            if self.in_string {
                loop {
                    if self.escaped && i < buf.len() {
                        self.escaped = false;
                        i += 1;
                    }
                    i += buf[i..]
                        .iter()
                        .position(|&b| b == b'"' || b == b'\\')
                        .unwrap_or(buf.len() - i);
                    if i < buf.len() && buf[i] == b'\\' {
                        self.escaped = true;
                        i += 1;
                        continue;
                    }
                    break;
                }
                if self.key_open {
                    self.key.extend_from_slice(&buf[start..i.min(start + 64)]);
                }
            } else {
                i += buf[i..]
                    .iter()
                    .position(|b| matches!(b, b'"' | b'{' | b'}' | b'[' | b']' | b','))
                    .unwrap_or(buf.len() - i);
            }
            self.sink(&buf[start..i])?;
            let Some(&c) = buf.get(i) else { break };
            i += 1;
            match c {
                b'"' if self.in_string => {
                    self.in_string = false;
                    self.key_open = false;
                    self.sink(&[c])?;
                }
                b'"' => {
                    self.in_string = true;
                    if self.depth == 1 {
                        self.key.clear();
                        self.key_open = true;
                    }
                    self.sink(&[c])?;
                }
                b'{' | b'[' => {
                    let items = self.depth == 1 && c == b'[' && self.key == b"items";
                    self.sink(&[c])?;
                    self.depth += 1;
                    if items {
                        self.in_items = true;
                    }
                }
                b'}' | b']' => {
                    if self.depth == 0 {
                        return Err(Split::Bad("not JSON: a bracket closes that was not open"));
                    }
                    if self.in_items && self.depth == 2 {
                        // The items array closes: a last scalar item.
                        self.emit(item)?;
                        self.in_items = false;
                    }
                    self.depth -= 1;
                    if self.in_items && self.depth == 2 {
                        self.cur.push(c);
                        self.emit(item)?;
                    } else {
                        self.sink(&[c])?;
                    }
                    self.done = self.depth == 0;
                }
                // `,` between items.
                _ if self.in_items && self.depth == 2 => self.emit(item)?,
                _ => self.sink(&[c])?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "inputs_tests.rs"]
mod tests;
