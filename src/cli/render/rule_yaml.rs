//! YAML with positions, for the rule files' reader (`rule_objects`): the
//! node tree serde_saphyr gives with each value's span (`Node`), and `Ctx`,
//! which reads typed values from it and words errors as `FILE:LINE:COL`
//! (`NotAtBoot` when the node, not the cluster, cannot take a rule).

use std::fmt;

use anyhow::{Result, bail};
use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// A YAML node with where it came from.
#[derive(Debug, Clone)]
pub(super) enum Node {
    Null,
    Bool(bool),
    Int(String),
    Float(String),
    Str(String),
    Seq(Vec<Spanned<Node>>),
    Map(Vec<(Spanned<String>, Spanned<Node>)>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a YAML value")
            }
            fn visit_unit<E>(self) -> Result<Node, E> {
                Ok(Node::Null)
            }
            fn visit_none<E>(self) -> Result<Node, E> {
                Ok(Node::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
                Node::deserialize(d)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
                Ok(Node::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
                Ok(Node::Int(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
                Ok(Node::Int(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
                Ok(Node::Float(v.to_string()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Node, E> {
                Ok(Node::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Node, E> {
                Ok(Node::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = a.next_element::<Spanned<Node>>()? {
                    out.push(v);
                }
                Ok(Node::Seq(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = a.next_key::<Spanned<String>>()? {
                    let v = a.next_value::<Spanned<Node>>()?;
                    out.push((k, v));
                }
                Ok(Node::Map(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// The error of a rule the node cannot evaluate at boot (see
/// `Ctx::not_at_boot`).
#[derive(Debug)]
pub(super) struct NotAtBoot(String);

impl fmt::Display for NotAtBoot {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotAtBoot {}

/// Where an error points.
pub(super) struct Ctx<'a> {
    pub(super) source: &'a str,
    /// The file's text, to quote a value as it is written.
    pub(super) text: &'a str,
}

impl Ctx<'_> {
    pub(super) fn at<T>(&self, n: &Spanned<T>) -> String {
        format!(
            "{}:{}:{}",
            self.source,
            n.referenced.line(),
            n.referenced.column()
        )
    }

    pub(super) fn fail<T, U>(&self, n: &Spanned<T>, msg: impl fmt::Display) -> Result<U> {
        bail!("{}: {msg}", self.at(n))
    }

    /// A refusal of what the node cannot evaluate before kubelet starts,
    /// though NFD can after join (`--leave-to-nfd` may leave the rule).
    pub(super) fn not_at_boot<T, U>(&self, n: &Spanned<T>, msg: impl fmt::Display) -> Result<U> {
        Err(anyhow::Error::new(NotAtBoot(format!(
            "{}: {msg}",
            self.at(n)
        ))))
    }

    pub(super) fn map<'n>(
        &self,
        n: &'n Spanned<Node>,
        what: &str,
    ) -> Result<&'n [(Spanned<String>, Spanned<Node>)]> {
        match &n.value {
            Node::Map(m) => Ok(m),
            Node::Null => Ok(&[]),
            _ => self.fail(n, format!("{what} must be a mapping")),
        }
    }

    pub(super) fn seq<'n>(&self, n: &'n Spanned<Node>, what: &str) -> Result<&'n [Spanned<Node>]> {
        match &n.value {
            Node::Seq(s) => Ok(s),
            Node::Null => Ok(&[]),
            _ => self.fail(n, format!("{what} must be a list")),
        }
    }

    /// The scalar as the file writes it (`0302`, `0x10de`, `1e3`), not as
    /// YAML reads it (302, 4318, 1000): the fix to suggest is quoting that.
    pub(super) fn written<T>(&self, n: &Spanned<T>, read: &str) -> String {
        let span = n.referenced.span();
        let at = span.byte_offset().zip(span.byte_len()).and_then(|(o, l)| {
            let o = usize::try_from(o).ok()?;
            self.text.get(o..o.checked_add(usize::try_from(l).ok()?)?)
        });
        match at.map(str::trim) {
            Some(w) if !w.is_empty() && !w.contains(['\n', '"', '\'']) => w.to_string(),
            _ => read.to_string(),
        }
    }

    /// A string as NFD's Go types read it: other scalars are errors there too.
    pub(super) fn string(&self, n: &Spanned<Node>, what: &str) -> Result<String> {
        match &n.value {
            Node::Str(s) => Ok(s.clone()),
            Node::Int(v) | Node::Float(v) => {
                let w = self.written(n, v);
                self.fail(
                    n,
                    format!("{what} must be a string, not the number {w}; quote it (\"{w}\")"),
                )
            }
            Node::Bool(b) => self.fail(
                n,
                format!("{what} must be a string, not the boolean {b}; quote it (\"{b}\")"),
            ),
            Node::Null => self.fail(n, format!("{what} must be a string, not null")),
            _ => self.fail(n, format!("{what} must be a string")),
        }
    }

    pub(super) fn string_map(
        &self,
        n: &Spanned<Node>,
        what: &str,
    ) -> Result<Vec<(String, String)>> {
        let mut out: Vec<(String, String)> = Vec::new();
        for (k, v) in self.map(n, what)? {
            let value = self.string(v, &format!("{what}.{}", k.value))?;
            out.push((k.value.clone(), value));
        }
        // A repeated key: its last value, in one sort (a scan per key took
        // `explain --rules` 71 s on a map of 100,000 labels).
        crate::node::unit::env::keep_last(&mut out);
        Ok(out)
    }

    pub(super) fn unknown<T>(
        &self,
        key: &Spanned<String>,
        what: &str,
        known: &[&str],
    ) -> Result<T> {
        self.fail(
            key,
            format!(
                "{what} has no field {:?} (known: {})",
                key.value,
                known.join(", ")
            ),
        )
    }
}

/// The value of a mapping's field, if there.
pub(super) fn field<'n>(
    fields: &'n [(Spanned<String>, Spanned<Node>)],
    name: &str,
) -> Option<&'n Spanned<Node>> {
    fields.iter().find(|(k, _)| k.value == name).map(|(_, v)| v)
}
