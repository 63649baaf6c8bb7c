//! Whom each pool's machines trust, and through whom they fetch, at first
//! boot: the pointer config's `ignition.security.tls.certificateAuthorities`
//! and `ignition.proxy`. A pool source (a gitops directory, a Secret, a
//! pointer file) may not widen either beyond what the operator gave: with
//! `--ca-file` each pointer trusts exactly that CA; without it every pool
//! trusts the same CAs through the same proxy (one cluster, one Machine
//! Config Server CA, one cluster-wide proxy), shown by fingerprint; and a
//! plain-HTTP merge URL is never fetched through a proxy.

use anyhow::{Result, bail};
use serde_json::Value;

use crate::cli::render::pointer::{self, McsUrl};
use crate::cli::sha256::sha256;

/// What a pointer config trusts and goes through.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Trust {
    /// The CA certificates as DER, sorted, each once: Ignition adds them
    /// all to the system's roots.
    pub(super) cas: Vec<Vec<u8>>,
    pub(super) proxy: Proxy,
}

/// `ignition.proxy` as Ignition hands it to Go's httpproxy.
#[derive(Clone, PartialEq, Eq, Default)]
pub(super) struct Proxy {
    pub(super) http: String,
    pub(super) https: String,
    /// The `noProxy` entries joined with `,`.
    pub(super) no_proxy: String,
}

/// The CAs and proxy of `pointer`, pool `name`'s from `source`. A CA must be
/// carried as a `data:` URL, as the installer and the MCO write it: any
/// other Ignition fetches at boot (through the proxy) from a server the
/// pointer names.
pub(super) fn read(pointer: &Value, source: &str, name: &str) -> Result<Trust> {
    let field = "ignition.security.tls.certificateAuthorities";
    let mut cas = Vec::new();
    let entries = pointer
        .pointer("/ignition/security/tls/certificateAuthorities")
        .and_then(Value::as_array);
    for (i, ca) in entries.into_iter().flatten().enumerate() {
        let at = format!("{source}: pool {name}'s {field}[{i}]");
        let url = ca.get("source").and_then(Value::as_str).unwrap_or("");
        if !url.starts_with("data:") {
            bail!(
                "{at} is {url:.80?}, not a data: URL: Ignition would fetch the CA it trusts at \
                 boot from that server (through the pointer's proxy, if any); carry the CA \
                 itself, as `oc get secret -n openshift-machine-api {name}-user-data-managed` \
                 gives it"
            );
        }
        let compression = ca.get("compression").and_then(Value::as_str);
        let pem = crate::cli::render::layout::decode_data_url(url, compression)
            .map_err(|e| anyhow::anyhow!("{at}: {e:#}"))?;
        cas.extend(pointer::pem_certificates(&pem, &at)?);
    }
    cas.sort();
    cas.dedup();
    let text = |k: &str| {
        pointer
            .pointer(&format!("/ignition/proxy/{k}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let no_proxy = pointer
        .pointer("/ignition/proxy/noProxy")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or_default())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    Ok(Trust {
        cas,
        proxy: Proxy {
            http: text("httpProxy"),
            https: text("httpsProxy"),
            no_proxy,
        },
    })
}

/// `trust` of pool `name`'s pointer from `source`, merging `merge`
/// (`url`): with `ca_file` (its certificates as DER) exactly those CAs; a
/// plain-HTTP merge URL not through a proxy.
pub(super) fn check(
    trust: &Trust,
    merge: &McsUrl,
    url: &str,
    ca_file: Option<&[Vec<u8>]>,
    source: &str,
    name: &str,
) -> Result<()> {
    if let Some(ca) = ca_file {
        let mut want = ca.to_vec();
        want.sort();
        want.dedup();
        if trust.cas != want {
            bail!(
                "{source}: pool {name}'s pointer config trusts {} \
                 (ignition.security.tls.certificateAuthorities), not the CA of --ca-file ({}): \
                 its machines would take their whole config from whoever holds that CA's key \
                 (through the pointer's proxy, any server); give this cluster's Secret (oc get \
                 secret -n openshift-machine-api {name}-user-data-managed -o yaml), or drop the \
                 pointer and let --mcs-url and --ca-file write it",
                describe_cas(&trust.cas),
                describe_cas(&want)
            );
        }
    }
    let p = &trust.proxy;
    if !merge.https
        && !p.http.trim().is_empty()
        && super::no_proxy::proxied(&p.no_proxy, &merge.host, merge.port)
    {
        bail!(
            "{source}: pool {name}'s pointer config fetches its plain-HTTP merge URL {url} \
             through proxy {} (ignition.proxy.httpProxy, {} not in noProxy): without TLS the \
             proxy can serve the machines any config; use the https:// merge URL (port 22623), \
             or remove the proxy, or add {} to ignition.proxy.noProxy",
            p.http,
            merge.host,
            merge.host
        );
    }
    Ok(())
}

/// Without `--ca-file`: every pool's pointer trusts the same CAs through
/// the same proxy, for the same server. `pools`: (name, source, trust,
/// the merge URL's server).
pub(super) fn agree(pools: &[(String, String, Trust, String)]) -> Result<()> {
    let Some((first, first_source, t, server)) = pools.first() else {
        return Ok(());
    };
    for (name, source, other, other_server) in &pools[1..] {
        if other_server != server {
            bail!(
                "{source}: pool {name}'s pointer config fetches from {other_server}, pool \
                 {first}'s ({first_source}) from {server}: one cluster has one Machine Config \
                 Server; give every pool's Secret from the same cluster, or pass --mcs-url and \
                 --ca-file"
            );
        }
        if other.cas != t.cas {
            bail!(
                "{source}: pool {name}'s pointer config trusts {}, pool {first}'s ({first_source}) \
                 {} (ignition.security.tls.certificateAuthorities): one cluster has one Machine \
                 Config Server CA; give every pool's Secret from the same cluster, or pass its CA \
                 with --ca-file",
                describe_cas(&other.cas),
                describe_cas(&t.cas)
            );
        }
        if other.proxy != t.proxy {
            bail!(
                "{source}: pool {name}'s pointer config fetches {}, pool {first}'s \
                 ({first_source}) {} (ignition.proxy): one cluster has one proxy; give every \
                 pool's Secret from the same cluster, or pass its CA with --ca-file",
                describe_proxy(&other.proxy),
                describe_proxy(&t.proxy)
            );
        }
    }
    Ok(())
}

/// `CA SHA-256 AB:CD:...` for each certificate (as `openssl x509 -noout
/// -fingerprint -sha256` prints it), or that there is none.
pub(super) fn describe_cas(cas: &[Vec<u8>]) -> String {
    if cas.is_empty() {
        return "no CA of its own (the system's public roots only)".into();
    }
    let mut cas = cas.to_vec();
    cas.sort();
    cas.dedup();
    let fps: Vec<String> = cas
        .iter()
        .map(|der| {
            sha256(der)
                .iter()
                .map(|b| format!("{b:02X}"))
                .collect::<Vec<_>>()
                .join(":")
        })
        .collect();
    format!("CA SHA-256 {}", fps.join(", "))
}

/// `through proxy P (https), Q (http), noProxy N` or `without a proxy`.
pub(super) fn describe_proxy(p: &Proxy) -> String {
    let mut parts = Vec::new();
    if !p.https.is_empty() {
        parts.push(format!("{} (https)", p.https));
    }
    if !p.http.is_empty() {
        parts.push(format!("{} (http)", p.http));
    }
    if parts.is_empty() {
        return "without a proxy".into();
    }
    let no = if p.no_proxy.is_empty() {
        String::new()
    } else {
        format!(", noProxy {}", p.no_proxy)
    };
    format!("through proxy {}{no}", parts.join(", "))
}
