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

/// SHA-256 (FIPS 180-4) of `data`: the fingerprint an operator compares
/// with `openssl x509 -fingerprint -sha256`.
pub(super) fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64).wrapping_mul(8)).to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, v) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(v);
        }
    }
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// FIPS 180-4's examples, and lengths around the padding's edges
    /// against sha256sum (coreutils, always there).
    #[test]
    fn sha256_is_sha256() {
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&sha256(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        for len in [55usize, 56, 63, 64, 65, 119, 120, 1000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let dir = tempfile::tempdir().unwrap();
            let f = dir.path().join("d");
            std::fs::write(&f, &data).unwrap();
            let o = std::process::Command::new("sha256sum")
                .arg(&f)
                .output()
                .unwrap();
            let want = String::from_utf8_lossy(&o.stdout);
            assert_eq!(
                hex(&sha256(&data)),
                want.split_whitespace().next().unwrap(),
                "{len}"
            );
        }
    }
}
