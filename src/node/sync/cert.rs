//! The node's name from kubelet's client certificate (`CN=system:node:<name>`)
//! and its validity, by a minimal walk of the DER (std only).

/// What the sync needs from the certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCert {
    pub common_name: String,
    /// notBefore / notAfter, seconds since the Unix epoch.
    pub not_before: i64,
    pub not_after: i64,
}

/// The bytes of the first `-----BEGIN <label>-----` block.
pub fn pem_block(text: &[u8], label: &str) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(text).ok()?;
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)? + begin.len();
    let stop = start + text[start..].find(&end)?;
    base64_decode(&text[start..stop])
}

/// Standard base64 with padding; whitespace ignored.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    let mut pad = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                pad += 1;
                continue;
            }
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        if pad > 0 {
            return None;
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    (pad <= 2).then_some(out)
}

/// One DER element: tag, content.
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *der.first()?;
    let first = *der.get(1)?;
    let (len, head) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for b in der.get(2..2 + n)? {
            len = (len << 8) | usize::from(*b);
        }
        (len, 2 + n)
    };
    let content = der.get(head..head.checked_add(len)?)?;
    Some((tag, content, &der[head + len..]))
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID_CN: &[u8] = &[0x55, 0x04, 0x03];

/// Parse an X.509 certificate's subject CN and validity.
pub fn parse_der(der: &[u8]) -> Option<ClientCert> {
    let (SEQUENCE, cert, _) = element(der)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = element(cert)? else {
        return None;
    };
    let mut rest = tbs;
    // [0] version, optional.
    if rest.first() == Some(&0xa0) {
        rest = element(rest)?.2;
    }
    rest = element(rest)?.2; // serialNumber
    rest = element(rest)?.2; // signature
    rest = element(rest)?.2; // issuer
    let (SEQUENCE, validity, after) = element(rest)? else {
        return None;
    };
    let (t1, nb, v) = element(validity)?;
    let (t2, na, _) = element(v)?;
    let (SEQUENCE, mut subject, _) = element(after)? else {
        return None;
    };
    let mut common_name = None;
    while !subject.is_empty() {
        let (SET, mut set, next) = element(subject)? else {
            return None;
        };
        subject = next;
        while !set.is_empty() {
            let (SEQUENCE, atv, next) = element(set)? else {
                return None;
            };
            set = next;
            let (0x06, oid, value) = element(atv)? else {
                return None;
            };
            if oid == OID_CN {
                let (_, text, _) = element(value)?;
                common_name = Some(String::from_utf8(text.to_vec()).ok()?);
            }
        }
    }
    Some(ClientCert {
        common_name: common_name?,
        not_before: time(t1, nb)?,
        not_after: time(t2, na)?,
    })
}

/// UTCTime (0x17, YYMMDDHHMMSSZ) or GeneralizedTime (0x18, YYYYMMDDHHMMSSZ).
fn time(tag: u8, text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?.strip_suffix('Z')?;
    let (year, rest) = match tag {
        0x17 => {
            let yy: i64 = text.get(..2)?.parse().ok()?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &text[2..])
        }
        0x18 => (text.get(..4)?.parse().ok()?, &text[4..]),
        _ => return None,
    };
    if rest.len() != 10 || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = |i: usize| -> i64 { rest[i..i + 2].parse().unwrap_or(0) };
    let days = crate::node::days_from_civil(year, n(0), n(2));
    Some(days * 86_400 + n(4) * 3600 + n(6) * 60 + n(8))
}

/// The node name a kubelet certificate names, or why it names none. A
/// Node's name is a DNS-1123 subdomain (the API server's rule), so what
/// goes into the request's URL is never `..`, `?` or `#`.
pub fn node_name(cert: &ClientCert) -> Result<String, String> {
    let shown = crate::node::wrapper::derived::escape_controls(&cert.common_name);
    match cert.common_name.strip_prefix("system:node:") {
        Some(name)
            if name.len() <= 253
                && crate::node::kubelet::labels::is_dns1123_subdomain(name.as_bytes()) =>
        {
            Ok(name.to_string())
        }
        Some(_) => Err(format!(
            "its subject is CN={shown}, and that is no Node's name (a DNS-1123 subdomain)"
        )),
        None => Err(format!(
            "its subject is CN={shown}, not a node's (CN=system:node:<name>)"
        )),
    }
}

/// A span of seconds in the largest whole unit: "3 days", "1 hour".
pub fn age(secs: i64) -> String {
    let s = secs.max(0);
    let (n, unit) = match s {
        0..=119 => (s, "second"),
        120..=7_199 => (s / 60, "minute"),
        7_200..=172_799 => (s / 3600, "hour"),
        _ => (s / 86_400, "day"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// Is `cert` valid at `now`? Err: why not, and what renews it.
pub fn check_validity(cert: &ClientCert, now: i64) -> Result<(), String> {
    if now >= cert.not_after {
        return Err(format!(
            "expired {} ago; kubelet's rotation renews a certificate only before it expires: \
             restart kubelet so it asks for a new one with its bootstrap kubeconfig, then approve \
             the node's CSR (`kubectl get csr`, `kubectl certificate approve NAME`)",
            age(now - cert.not_after)
        ));
    }
    if now < cert.not_before {
        return Err(format!(
            "not valid for another {} (the clock or the certificate is wrong)",
            age(cert.not_before - now)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(crate::node::days_from_civil(1970, 1, 1), 0);
        assert_eq!(crate::node::days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(time(0x17, b"260101000000Z"), Some(1_767_225_600));
        assert_eq!(time(0x18, b"20260101000000Z"), Some(1_767_225_600));
        assert_eq!(time(0x17, b"2601010000Z"), None);
    }

    /// Issue 33 item 20: ages in human units; an expired certificate is
    /// not said to be renewed by kubelet's rotation.
    #[test]
    fn validity_in_human_units() {
        let c = ClientCert {
            common_name: String::new(),
            not_before: 1_000_000,
            not_after: 2_000_000,
        };
        let e = check_validity(&c, 2_000_000 + 3 * 86_400 + 5).unwrap_err();
        assert!(e.starts_with("expired 3 days ago;"), "{e}");
        assert!(
            e.contains("only before it expires") && e.contains("kubectl certificate approve"),
            "{e}"
        );
        let e = check_validity(&c, 1_000_000 - 7_300).unwrap_err();
        assert!(e.starts_with("not valid for another 2 hours"), "{e}");
        assert!(check_validity(&c, 1_500_000).is_ok());
        for (s, want) in [
            (0, "0 seconds"),
            (1, "1 second"),
            (119, "119 seconds"),
            (120, "2 minutes"),
            (3_600, "60 minutes"),
            (7_200, "2 hours"),
            (86_400, "24 hours"),
            (172_800, "2 days"),
            (-5, "0 seconds"),
        ] {
            assert_eq!(age(s), want, "{s}");
        }
    }

    #[test]
    fn a_node_name_fit_for_a_url() {
        let named = |cn: &str| {
            node_name(&ClientCert {
                common_name: cn.into(),
                not_before: 0,
                not_after: 0,
            })
        };
        assert_eq!(
            named("system:node:rk-node-1.example.com").unwrap(),
            "rk-node-1.example.com"
        );
        for bad in [
            "",
            "..",
            "a/../../x",
            "n?watch=1",
            "n#x",
            "N1",
            "n\n",
            &"a".repeat(254),
        ] {
            let e = named(&format!("system:node:{bad}")).unwrap_err();
            assert!(
                e.contains("no Node's name") && !e.contains('\n'),
                "{bad:?}: {e}"
            );
        }
        assert!(named("admin").unwrap_err().contains("not a node's"));
    }

    #[test]
    fn base64() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVs\nbG8h").unwrap(), b"hello!");
        assert!(base64_decode("a*b").is_none());
    }

    /// A certificate openssl made, when openssl is here (the DER walk
    /// against the real encoder).
    #[test]
    fn reads_what_openssl_writes() {
        if !crate::skipped::need("openssl") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("k.pem");
        let crt = dir.path().join("c.pem");
        let ok = std::process::Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&crt)
            .args([
                "-days",
                "2",
                "-subj",
                "/O=system:nodes/CN=system:node:rk-node-1",
            ])
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stderr)
        );
        let der = pem_block(&std::fs::read(&crt).unwrap(), "CERTIFICATE").unwrap();
        let c = parse_der(&der).unwrap();
        assert_eq!(node_name(&c).unwrap(), "rk-node-1");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        assert!(c.not_before <= now + 60 && c.not_after > now + 86_400);
        // Truncated anywhere: None, never a panic.
        for cut in 0..der.len() {
            let _ = parse_der(&der[..cut]);
        }
    }
}
