//! The seeded generator of the differential test against NFD
//! (nfd_differential.rs): random NodeFeatureRule objects within the subset
//! we accept, drawn from the fixture nodes' features and values.

use crate::nfd_differential::Node;

use std::collections::BTreeSet;

use kubelet_labeler::node::rules::version;
use serde_json::{Value, json};

pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, in_n: usize) -> bool {
        self.below(in_n) == 0
    }
    fn pick<T: Clone>(&mut self, v: &[T]) -> T {
        v[self.below(v.len())].clone()
    }
}

/// Every feature the node side reads, present or not.
use kubelet_labeler::node::facts::FEATURES;

const OPS: &[&str] = &[
    "In",
    "NotIn",
    "InRegexp",
    "Exists",
    "DoesNotExist",
    "Gt",
    "Ge",
    "Lt",
    "Le",
    "GtLt",
    "GeLe",
    "IsTrue",
    "IsFalse",
];

/// `@` values NFD resolves against the node's attribute features (and some
/// it cannot resolve).
const DYNAMIC: &[&str] = &[
    "@kernel.version.major",
    "@kernel.version.full",
    "@system.osrelease.ID",
    "@system.osrelease.VERSION_ID",
    "@memory.numa.node_count",
    "@cpu.model.vendor_id",
    "@cpu.topology.socket_count",
    "@system.dmiid.sys_vendor",
    "@system.name.nodename",
    "@rule.matched.tier",
    "@rule.matched.v0",
    "@nope.feature.x",
    "@kernel.version",
    "@cpu.cpuid.AVX",
    "@KERNEL.version.major",
];

pub(crate) struct Gen<'n> {
    rng: Rng,
    node: &'n Node,
    /// Keys earlier rules of this case may have written (rule.matched).
    backref_keys: Vec<String>,
    rule_no: usize,
    /// Null and empty shapes (`matchExpressions:` with nothing after it,
    /// `{}`, a null `op`, `value` or `type`, null or empty `matchFeatures`
    /// and `matchAny` parts), drawn from their own generator so the cases
    /// before them stay as they were.
    shapes: Option<Rng>,
    /// Taints on every rule from a small pool (one key, two effects, two values), so
    /// that rules across objects give one key and effect different values.
    taint_pool: bool,
}

impl<'n> Gen<'n> {
    /// A case's generator: `rng` draws it on `node`; `shapes`, when given,
    /// draws null and empty fields; `taint_pool` draws taints from a small
    /// pool.
    pub(crate) fn new(rng: Rng, node: &'n Node, shapes: Option<Rng>, taint_pool: bool) -> Self {
        Gen {
            rng,
            node,
            backref_keys: Vec::new(),
            rule_no: 0,
            shapes,
            taint_pool,
        }
    }
}

fn re_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if "\\.+*?()|[]{}^$".contains(c) {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        })
        .collect()
}

impl Gen<'_> {
    /// One of `n` null/empty shapes, or None (most of the time, and always
    /// without shapes).
    fn shape(&mut self, n: usize) -> Option<usize> {
        let rng = self.shapes.as_mut()?;
        let k = rng.below(2 * n);
        (k < n).then_some(k)
    }

    /// A feature name as a rule writes it, and its lookup name.
    fn feature(&mut self) -> (String, String) {
        let n = self.node;
        let present: Vec<String> = n
            .flags
            .keys()
            .chain(n.attrs.keys())
            .chain(n.insts.keys())
            .cloned()
            .collect();
        let lookup = match self.below(10) {
            0 => self.rng.pick(FEATURES).to_string(),
            1 if !self.backref_keys.is_empty() => "rule.matched".to_string(),
            _ => self.rng.pick(&present),
        };
        let written = match self.below(12) {
            0 => lookup.to_uppercase(),
            1 => {
                let (d, f) = lookup.split_once('.').unwrap();
                format!("{}.{f}", d.to_uppercase())
            }
            _ => lookup.clone(),
        };
        (written, lookup)
    }

    fn below(&mut self, n: usize) -> usize {
        self.rng.below(n)
    }

    /// Element names (flags, attribute keys) and instance attribute keys.
    fn names(&self, feature: &str) -> Vec<String> {
        let n = self.node;
        let mut out: BTreeSet<String> = BTreeSet::new();
        if feature == "rule.matched" {
            out.extend(self.backref_keys.iter().cloned());
        }
        out.extend(n.flags.get(feature).into_iter().flatten().cloned());
        out.extend(
            n.attrs
                .get(feature)
                .into_iter()
                .flatten()
                .map(|(k, _)| k.clone()),
        );
        for e in n.insts.get(feature).into_iter().flatten() {
            out.extend(e.keys().cloned());
        }
        out.into_iter().collect()
    }

    fn values(&self, feature: &str, key: &str) -> Vec<String> {
        let n = self.node;
        let mut out: Vec<String> = n
            .attrs
            .get(feature)
            .into_iter()
            .flatten()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect();
        for e in n.insts.get(feature).into_iter().flatten() {
            out.extend(e.get(key).cloned());
        }
        if n.flags
            .get(feature)
            .is_some_and(|f| f.contains(&key.to_string()))
        {
            out.push(key.to_string());
        }
        out
    }

    fn number_near(&mut self, sample: Option<&String>) -> i64 {
        match sample.and_then(|s| s.parse::<i64>().ok()) {
            Some(n) if !self.rng.chance(4) => n + self.below(3) as i64 - 1,
            _ => self.below(12) as i64 - 1,
        }
    }

    fn regex(&mut self, sample: Option<&String>) -> String {
        let s = sample.cloned().unwrap_or_else(|| "x".into());
        let first: String = s.chars().take(1).collect();
        let three: String = s.chars().take(3).collect();
        let pool = [
            format!("^{}", re_escape(&first)),
            format!("(?i)^{}", re_escape(&three.to_lowercase())),
            format!("^{}$", re_escape(&s)),
            ".".into(),
            "^$".into(),
            "^[0-9]+$".into(),
            "\\d\\.\\d".into(),
            "^[a-f0-9]{4}$".into(),
            "^x".into(),
            "\\p{Lu}".into(),
            "^\\p{L}+$".into(),
            "[\\p{Greek}\\d]".into(),
            "\\PL".into(),
            "^\\pN+$".into(),
            "\\P{Lu}$".into(),
            "[^\\p{Ll}]".into(),
        ];
        self.rng.pick(&pool)
    }

    fn expr(&mut self, feature: &str, key: Option<&str>) -> Value {
        let op = self.rng.pick(OPS);
        let vals = key.map(|k| self.values(feature, k)).unwrap_or_default();
        let sample = if vals.is_empty() {
            None
        } else {
            Some(self.rng.pick(&vals))
        };
        let some_value = |g: &mut Self| -> String {
            match g.below(4) {
                0 => "x".into(),
                1 => "true".into(),
                _ => sample.clone().unwrap_or_else(|| "0".into()),
            }
        };
        let value: Option<Vec<String>> = match op {
            "In" | "NotIn" => Some((0..1 + self.below(2)).map(|_| some_value(self)).collect()),
            "InRegexp" => Some(
                (0..1 + self.below(2))
                    .map(|_| self.regex(sample.as_ref()))
                    .collect(),
            ),
            "Gt" | "Ge" | "Lt" | "Le" => Some(vec![self.number_near(sample.as_ref()).to_string()]),
            "GtLt" | "GeLe" => {
                let a = self.number_near(sample.as_ref()) - self.below(2) as i64;
                let b = a + 1 + self.below(3) as i64;
                Some(vec![a.to_string(), b.to_string()])
            }
            _ => None,
        };
        let mut e = json!({ "op": op });
        if let Some(v) = value {
            e["value"] = json!(v);
        }
        // NFD >= 0.18 compares versions with `type: version`.
        if matches!(op, "Gt" | "Ge" | "Lt" | "Le" | "GtLt" | "GeLe") && self.rng.chance(3) {
            const VERSIONS: &[&str] =
                &["5.14", "6.1.0", "v5", "9.6", "4.18.0-553", "1.2.3+b", "10"];
            let n = if matches!(op, "GtLt" | "GeLe") { 2 } else { 1 };
            let v: Vec<String> = (0..n)
                .map(|_| match &sample {
                    // Render refuses a value that is no version, as it
                    // refuses a non-integer for Gt.
                    Some(s) if version(s).is_some() && self.rng.chance(2) => s.clone(),
                    _ => self.rng.pick(VERSIONS).to_string(),
                })
                .collect();
            e["value"] = json!(v);
            e["type"] = json!("version");
        }
        // A null is the field left out: a null op is NFD's match-anything
        // (which takes no value), a null value an empty one.
        match self.shape(6) {
            Some(0) => e = json!({ "op": null }),
            Some(1) => e = json!({}),
            Some(2) if e.get("value").is_none() => e["value"] = Value::Null,
            Some(3) if e.get("type").is_none() => e["type"] = Value::Null,
            _ => {}
        }
        e
    }

    fn term(&mut self) -> (Value, String) {
        let (written, lookup) = self.feature();
        let names = self.names(&lookup);
        let mut t = json!({ "feature": written });
        let with_name = self.rng.chance(4);
        if !with_name || self.rng.chance(2) {
            let mut exprs = serde_json::Map::new();
            for _ in 0..1 + self.below(3) {
                let key = if names.is_empty() || self.rng.chance(8) {
                    "nope".to_string()
                } else {
                    self.rng.pick(&names)
                };
                let e = self.expr(&lookup, Some(&key));
                exprs.insert(key, e);
            }
            t["matchExpressions"] = Value::Object(exprs);
        }
        if with_name {
            let op = self
                .rng
                .pick(&["In", "NotIn", "InRegexp", "Exists", "DoesNotExist"]);
            let sample = if names.is_empty() {
                None
            } else {
                Some(self.rng.pick(&names))
            };
            let mut e = json!({ "op": op });
            match op {
                "In" | "NotIn" => e["value"] = json!([sample.unwrap_or_else(|| "x".into())]),
                "InRegexp" => e["value"] = json!([self.regex(sample.as_ref())]),
                _ => {}
            }
            t["matchName"] = e;
        }
        // A null matchExpressions or matchName is one left out (the term
        // matches with no elements); `{}` matches every element.
        match self.shape(8) {
            Some(0) => t["matchExpressions"] = Value::Null,
            Some(1) => t["matchExpressions"] = json!({}),
            Some(2) => t["matchName"] = Value::Null,
            Some(3) => t["matchName"] = json!({}),
            Some(4) => {
                t["matchExpressions"] = Value::Null;
                t["matchName"] = Value::Null;
            }
            Some(5) => t["matchName"] = json!({ "op": "Exists", "value": null }),
            _ => {}
        }
        (t, written)
    }

    /// A template over what the rule matched (`features` as written).
    fn template(&mut self, features: &[String], r: usize) -> String {
        let mut parts = Vec::new();
        for _ in 0..1 + self.below(2) {
            let f = if features.is_empty() {
                "kernel.version".to_string()
            } else {
                self.rng.pick(features)
            };
            let lookup = f.to_lowercase();
            let kind_inst = self.node.insts.contains_key(&lookup);
            let part = match self.below(13) {
                0 | 1 if kind_inst => {
                    let keys = self.names(&lookup);
                    let k = if keys.is_empty() {
                        "class".into()
                    } else {
                        self.rng.pick(&keys)
                    };
                    format!("{{{{ range .{f} }}}}i{r}-{{{{ .{k} }}}}=present\n{{{{ end }}}}")
                }
                0 => format!("{{{{ range .{f} }}}}f{r}.{{{{ .Name }}}}=true\n{{{{ end }}}}"),
                1 => format!(
                    "{{{{ range .{f} }}}}a{r}.{{{{ .Name }}}}={{{{ .Value }}}}\n{{{{ end }}}}"
                ),
                2 => format!("n{r}={{{{ len .{f} }}}}"),
                3 => {
                    let n = self.rng.pick(&[-1, 0, 1, 3]);
                    format!("{{{{ range {n} }}}}slot{r}-{{{{ . }}}}=present\n{{{{ end }}}}")
                }
                4 => format!("{{{{ range $i := 2 }}}}s{r}-{{{{ $i }}}}=x\n{{{{ end }}}}"),
                5 => (0..1 + self.below(3))
                    .map(|i| format!("d{r}{i}={}", self.rng.pick(DYNAMIC)))
                    .collect::<Vec<_>>()
                    .join("\n"),
                6 => format!("x.k8s.io/count={{{{ len .{f} }}}}"),
                7 => self.rng.pick(&[
                    "tier=gpu".to_string(),
                    format!("example.com/tier=t{r}"),
                    "kubernetes.io/x=1".to_string(),
                ]),
                8 => format!("dyn{r}=@{{{{ \"kernel.version\" }}}}.full"),
                9 => format!(
                    "{{{{ range .{f} }}}}{{{{ if eq (len $.{f}) 1 }}}}{{{{ break }}}}{{{{ end }}}}\
                     {{{{ if eq .Name \"major\" }}}}{{{{ continue }}}}{{{{ end }}}}b{r}-{{{{ .Name }}}}=1\n{{{{ end }}}}"
                ),
                10 => "{{ .nope.x }}".to_string(),
                11 => format!(
                    "{{{{ range .rule.matched }}}}rm{r}-{{{{ .Name }}}}={{{{ .Value }}}}\n{{{{ end }}}}"
                ),
                _ => format!("{{{{ range $i, $e := 2 }}}}s{r}-{{{{ $i }}}}=x\n{{{{ end }}}}"),
            };
            parts.push(part);
        }
        parts.join("\n")
    }

    fn rule(&mut self) -> Value {
        let r = self.rule_no;
        self.rule_no += 1;
        let mut rule = json!({ "name": format!("r{r}") });
        let mut written = Vec::new();
        if !self.rng.chance(5) {
            let terms: Vec<Value> = (0..1 + self.below(2))
                .map(|_| {
                    let (t, w) = self.term();
                    written.push(w);
                    t
                })
                .collect();
            rule["matchFeatures"] = json!(terms);
        }
        if self.rng.chance(4) {
            let any: Vec<Value> = (0..1 + self.below(2))
                .map(|_| {
                    let terms: Vec<Value> = (0..1 + self.below(2))
                        .map(|_| {
                            let (t, w) = self.term();
                            written.push(w);
                            t
                        })
                        .collect();
                    json!({ "matchFeatures": terms })
                })
                .collect();
            rule["matchAny"] = json!(any);
        }
        if self.rng.chance(2) {
            let mut labels = serde_json::Map::new();
            for _ in 0..1 + self.below(2) {
                let key = self.rng.pick(&[
                    format!("l{r}"),
                    format!("example.com/l{r}"),
                    "tier".to_string(),
                    "example.com/tier".to_string(),
                    format!("feature.node.kubernetes.io/f{r}"),
                ]);
                let value = if self.rng.chance(3) {
                    self.rng.pick(DYNAMIC).to_string()
                } else {
                    self.rng
                        .pick(&["true".to_string(), format!("v{r}"), String::new()])
                };
                self.backref_keys.push(key.clone());
                labels.insert(key, json!(value));
            }
            rule["labels"] = Value::Object(labels);
        }
        if self.rng.chance(2) {
            rule["labelsTemplate"] = json!(self.template(&written, r));
            self.backref_keys
                .extend(["tier".to_string(), format!("n{r}")]);
        }
        if self.rng.chance(4) {
            let (k, v) = self.rng.pick(&[
                (format!("v{r}"), "1".to_string()),
                ("x".to_string(), "@kernel.version.full".to_string()),
                ("tier".to_string(), "base".to_string()),
            ]);
            self.backref_keys.push(k.clone());
            rule["vars"] = json!({ k: v });
        }
        if self.rng.chance(6) {
            rule["varsTemplate"] = json!(self.template(&written, r));
        }
        if self.taint_pool {
            let value = self.rng.pick(&["a", "b"]);
            let effect = self
                .rng
                .pick(&["NoSchedule", "NoSchedule", "NoSchedule", "NoExecute"]);
            rule["taints"] =
                json!([{ "key": "example.com/shared", "value": value, "effect": effect }]);
        } else if self.rng.chance(5) {
            let key = self.rng.pick(&[
                format!("example.com/t{r}"),
                "example.com/shared".to_string(),
                "feature.node.kubernetes.io/t".to_string(),
            ]);
            let value = self.rng.pick(&[String::new(), format!("v{r}")]);
            let effect = self
                .rng
                .pick(&["NoSchedule", "PreferNoSchedule", "NoExecute"]);
            rule["taints"] = json!([{ "key": key, "value": value, "effect": effect }]);
        }
        let null_or_empty = [Value::Null, json!([])];
        match self.shape(12) {
            Some(0 | 1) => rule["matchFeatures"] = null_or_empty[self.below(2)].clone(),
            Some(2 | 3) => rule["matchAny"] = null_or_empty[self.below(2)].clone(),
            Some(4) => rule["matchAny"] = json!([{ "matchFeatures": null }]),
            Some(5) => rule["matchAny"] = json!([{}]),
            Some(6) => rule["matchAny"] = json!([null]),
            Some(7) => rule["labelsTemplate"] = Value::Null,
            Some(8) => rule["vars"] = Value::Null,
            Some(9) => rule["taints"] = Value::Null,
            _ => {}
        }
        rule
    }

    pub(crate) fn objects(&mut self) -> Vec<Value> {
        let mut names = vec!["gpu", "a-first", "zeta", "m"];
        let mut out = Vec::new();
        for _ in 0..1 + self.below(3) {
            let name = names.remove(self.below(names.len()));
            let rules: Vec<Value> = (0..1 + self.below(3)).map(|_| self.rule()).collect();
            out.push(json!({ "name": name, "rules": rules }));
        }
        out
    }
}
