//! kubelet's kubeconfig, read as kubectl reads it: the current context's
//! cluster (server, CA) and user (client certificate and key), inline
//! `-data` fields or file references (relative ones against the
//! kubeconfig's directory). JSON, or the block YAML client-go writes.

use std::path::{Path, PathBuf};

use super::json::{self, Value};

/// A file's content or where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Inline(Vec<u8>),
    File(PathBuf),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kubeconfig {
    pub server: String,
    /// None: the system's trust store (as kubectl).
    pub ca: Option<Source>,
    pub client_cert: Source,
    pub client_key: Source,
}

/// Parse a kubeconfig's text; `dir` resolves relative file references
/// (the caller says where a file reference is read: on the host, or
/// contained in a node tree).
pub fn parse(text: &str, dir: &Path) -> Result<Kubeconfig, String> {
    let doc = if text.trim_start().starts_with('{') {
        json::parse(text)?
    } else {
        yaml(text)?
    };
    let named = |list: &str, name: Option<&str>, field: &str| -> Result<Value, String> {
        let items = doc.get(list).map(Value::as_array).unwrap_or(&[]);
        let found = match name {
            Some(n) => items
                .iter()
                .find(|i| i.get("name").and_then(Value::as_str) == Some(n)),
            None if items.len() == 1 => items.first(),
            None => None,
        };
        found
            .and_then(|i| i.get(field))
            .cloned()
            .ok_or_else(|| match name {
                Some(n) => format!("it has no {list} entry named {n:?}"),
                None => format!("it names no current-context and has not exactly one of {list}"),
            })
    };
    let current = doc
        .get("current-context")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let (cluster_name, user_name) = match current {
        Some(c) => {
            let ctx = named("contexts", Some(c), "context")?;
            (
                ctx.get("cluster").and_then(Value::as_str).map(String::from),
                ctx.get("user").and_then(Value::as_str).map(String::from),
            )
        }
        None => (None, None),
    };
    let cluster = named("clusters", cluster_name.as_deref(), "cluster")?;
    let user = named("users", user_name.as_deref(), "user")?;
    let server = cluster
        .get("server")
        .and_then(Value::as_str)
        .ok_or("its cluster has no server")?;
    check_server(server)?;
    let source = |v: &Value, data: &str, file: &str| -> Result<Option<Source>, String> {
        if let Some(d) = v
            .get(data)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            return super::cert::base64_decode(d)
                .map(|b| Some(Source::Inline(b)))
                .ok_or_else(|| format!("{data} is not base64"));
        }
        Ok(v.get(file)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(|f| Source::File(dir.join(f))))
    };
    let ca = source(
        &cluster,
        "certificate-authority-data",
        "certificate-authority",
    )?;
    let client_cert = source(&user, "client-certificate-data", "client-certificate")?
        .ok_or("its user has no client certificate (kubelet's kubeconfig names one)")?;
    let client_key =
        source(&user, "client-key-data", "client-key")?.ok_or("its user has no client key")?;
    Ok(Kubeconfig {
        server: server.trim_end_matches('/').to_string(),
        ca,
        client_cert,
        client_key,
    })
}

/// The API server's URL as curl gets it: https (kubelet's client
/// certificate goes nowhere else), printable ASCII with no space, and no
/// query or fragment (the request's path is appended to it).
fn check_server(server: &str) -> Result<(), String> {
    let shown = crate::node::wrapper::derived::escape_controls(server);
    let Some(rest) = server.strip_prefix("https://") else {
        return Err(format!(
            "its server {shown:?} is not https:// (kubelet's client certificate is only sent over TLS)"
        ));
    };
    if rest.is_empty()
        || !rest
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'?' | b'#'))
    {
        return Err(format!(
            "its server {shown:?} is no plain https:// URL (a host, a port, a path; no space, query or fragment)"
        ));
    }
    Ok(())
}

/// The block YAML subset kubeconfigs are written in: mappings, `- `
/// sequences, plain and quoted scalars, `{}`/`[]`, comments.
fn yaml(text: &str) -> Result<Value, String> {
    let lines: Vec<(usize, &str, usize)> = text
        .lines()
        .enumerate()
        .filter_map(|(n, l)| {
            let body = strip_comment(l);
            let trimmed = body.trim_start();
            (!trimmed.trim().is_empty() && trimmed != "---")
                .then(|| (body.len() - trimmed.len(), trimmed.trim_end(), n + 1))
        })
        .collect();
    let mut i = 0;
    let v = block(&lines, &mut i, 0)?;
    if i != lines.len() {
        return Err(format!("YAML line {}: unexpected indentation", lines[i].2));
    }
    Ok(v)
}

fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '#') if i == 0 || line[..i].ends_with([' ', '\t']) => return &line[..i],
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    line
}

fn scalar(s: &str, line: usize) -> Result<Value, String> {
    let s = s.trim();
    Ok(match s {
        "{}" => Value::Object(Vec::new()),
        "[]" => Value::Array(Vec::new()),
        "~" | "null" => Value::Null,
        _ if s.starts_with('"') => json::parse(s).map_err(|e| format!("YAML line {line}: {e}"))?,
        _ if s.starts_with('\'') && s.ends_with('\'') && s.len() >= 2 => {
            Value::String(s[1..s.len() - 1].replace("''", "'"))
        }
        _ if s.starts_with('{') && s.ends_with('}') && !s[1..s.len() - 1].contains(['{', '[']) => {
            // A one-line flow mapping of scalars (`context: {cluster: c, user: u}`).
            let mut members = Vec::new();
            for item in s[1..s.len() - 1]
                .split(',')
                .map(str::trim)
                .filter(|i| !i.is_empty())
            {
                let (k, v) = key_value(item)
                    .ok_or_else(|| format!("YAML line {line}: expected key: value in {{...}}"))?;
                members.push((k, scalar(v, line)?));
            }
            Value::Object(members)
        }
        _ if s.starts_with(['{', '[', '|', '>', '&', '*', '!']) => {
            return Err(format!(
                "YAML line {line}: this form is not read here; write block YAML or JSON"
            ));
        }
        _ => Value::String(s.to_string()),
    })
}

/// `key: rest` with a plain or quoted key.
fn key_value(s: &str) -> Option<(String, &str)> {
    if let Some(q) = s.strip_prefix('"') {
        let end = q.find('"')?;
        let rest = q[end + 1..].strip_prefix(':')?;
        return Some((q[..end].to_string(), rest));
    }
    let pos = s
        .find(": ")
        .or_else(|| s.ends_with(':').then(|| s.len() - 1))?;
    Some((s[..pos].trim().to_string(), &s[pos + 1..]))
}

const MAX_DEPTH: usize = 64;

fn block(lines: &[(usize, &str, usize)], i: &mut usize, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err("YAML nested too deeply".into());
    }
    let Some(&(indent, first, _)) = lines.get(*i) else {
        return Ok(Value::Null);
    };
    if first == "-" || first.starts_with("- ") {
        let mut items = Vec::new();
        while let Some(&(ind, text, n)) = lines.get(*i) {
            if ind != indent || !(text == "-" || text.starts_with("- ")) {
                break;
            }
            let rest = text[1..].trim_start();
            if rest.is_empty() {
                *i += 1;
                items.push(nested(lines, i, indent, depth)?);
            } else if key_value(rest).is_some() {
                // "- key: v" opens a mapping indented at the key.
                let inner = indent + (text.len() - rest.len());
                let mut sub: Vec<(usize, &str, usize)> = vec![(inner, rest, n)];
                *i += 1;
                while let Some(&l) = lines.get(*i) {
                    if l.0 <= indent {
                        break;
                    }
                    sub.push(l);
                    *i += 1;
                }
                let mut j = 0;
                let v = block(&sub, &mut j, depth + 1)?;
                if j != sub.len() {
                    return Err(format!("YAML line {}: unexpected indentation", sub[j].2));
                }
                items.push(v);
            } else {
                items.push(scalar(rest, n)?);
                *i += 1;
            }
        }
        return Ok(Value::Array(items));
    }
    let mut members = Vec::new();
    while let Some(&(ind, text, n)) = lines.get(*i) {
        if ind != indent {
            if ind > indent {
                return Err(format!("YAML line {n}: unexpected indentation"));
            }
            break;
        }
        let (k, rest) =
            key_value(text).ok_or_else(|| format!("YAML line {n}: expected key: value"))?;
        *i += 1;
        let v = if rest.trim().is_empty() {
            nested(lines, i, indent, depth)?
        } else {
            scalar(rest, n)?
        };
        members.push((k, v));
    }
    Ok(Value::Object(members))
}

/// The value under a `key:` or `-` line: a deeper block (or a sequence at
/// the same indentation, as client-go writes lists under a key), or null.
fn nested(
    lines: &[(usize, &str, usize)],
    i: &mut usize,
    indent: usize,
    depth: usize,
) -> Result<Value, String> {
    match lines.get(*i) {
        Some(&(ind, _, _)) if ind > indent => block(lines, i, depth + 1),
        Some(&(ind, text, _)) if ind == indent && text.starts_with("- ") => {
            block(lines, i, depth + 1)
        }
        _ => Ok(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENSHIFT: &str = "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: aGVsbG8=
    server: https://api-int.example.com:6443
  name: local
contexts:
- context:
    cluster: local
    user: kubelet
  name: kubelet
current-context: kubelet
kind: Config
preferences: {}
users:
- name: kubelet
  user:
    client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem
    client-key: /var/lib/kubelet/pki/kubelet-client-current.pem
";

    #[test]
    fn openshift_kubelet_kubeconfig() {
        let k = parse(OPENSHIFT, Path::new("/var/lib/kubelet")).unwrap();
        assert_eq!(k.server, "https://api-int.example.com:6443");
        assert_eq!(k.ca, Some(Source::Inline(b"hello".to_vec())));
        assert_eq!(
            k.client_cert,
            Source::File("/var/lib/kubelet/pki/kubelet-client-current.pem".into())
        );
    }

    #[test]
    fn kubeadm_style_with_indented_lists_quotes_and_relative_paths() {
        let text = "# kubeadm
apiVersion: v1
clusters:
  - cluster:
      certificate-authority: 'pki/ca.crt'
      server: \"https://10.0.0.1:6443/\"
    name: kubernetes
contexts:
  - context: {cluster: kubernetes}
    name: x
users:
  - name: default-auth
    user:
      client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem # rotated
      client-key: /var/lib/kubelet/pki/kubelet-client-current.pem
";
        let k = parse(text, Path::new("/etc/kubernetes")).unwrap();
        assert_eq!(k.server, "https://10.0.0.1:6443");
        assert_eq!(
            k.ca,
            Some(Source::File("/etc/kubernetes/pki/ca.crt".into()))
        );
        // A server curl would glob, an IPv6 literal: taken as they are
        // (curl runs with --globoff).
        for server in ["https://h/[1-40]/..", "https://[::1]:6443", "https://{a,b}"] {
            let text = OPENSHIFT.replace("https://api-int.example.com:6443", server);
            assert_eq!(parse(&text, Path::new("/")).unwrap().server, server);
        }
    }

    #[test]
    fn json_kubeconfig_and_bad_inputs() {
        let text = r#"{"clusters":[{"name":"c","cluster":{"server":"https://s"}}],
            "users":[{"name":"u","user":{"client-certificate-data":"aGVsbG8=","client-key-data":"aGVsbG8="}}]}"#;
        let k = parse(text, Path::new("/")).unwrap();
        assert_eq!(k.ca, None);
        assert_eq!(k.client_key, Source::Inline(b"hello".to_vec()));
        for (bad, says) in [
            ("", "no current-context"),
            ("clusters: [", "not read here"),
            ("a: {b: {c: d}}", "not read here"),
            (&OPENSHIFT.replace("https://", "http://"), "is not https://"),
            (
                &OPENSHIFT.replace("https://", "file:///"),
                "is not https://",
            ),
            (
                &OPENSHIFT.replace(":6443", ":6443/?a=b"),
                "no plain https:// URL",
            ),
            (
                &OPENSHIFT.replace(":6443", ":6443/\u{1b}[2J"),
                "no plain https:// URL",
            ),
            (
                &OPENSHIFT.replace(
                    "server: https://api-int.example.com:6443",
                    "server: \"https://\"",
                ),
                "no plain https:// URL",
            ),
            (
                &OPENSHIFT.replace("current-context: kubelet", "current-context: other"),
                "named \"other\"",
            ),
            (
                &OPENSHIFT.replace("    client-key: /var", "    client-kez: /var"),
                "no client key",
            ),
            (&OPENSHIFT.replace("aGVsbG8=", "a*b"), "not base64"),
            ("{", "invalid JSON"),
            ("a:\n   b: 1\n  c: 2\n", "indentation"),
        ] {
            let e = parse(bad, Path::new("/")).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}
