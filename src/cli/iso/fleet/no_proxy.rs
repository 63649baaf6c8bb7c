//! Whether Ignition fetches a URL through its configured proxy, as it
//! decides: `ignition.proxy.noProxy` joined with `,` and read by Go's
//! `golang.org/x/net/http/httpproxy` (Ignition's `proxyFuncFromIgnitionConfig`).
//! Where Go might skip the proxy and this reading cannot be sure (a
//! non-ASCII entry Go reads through IDNA; `localhost`, which Go never
//! proxies as written but proxies as `LOCALHOST`, while a merge URL's host
//! is read in lower case; loopback hosts, which are no Machine Config
//! Server), it says "proxied": a plain-HTTP merge URL is then refused,
//! never taken wrongly.

use std::net::IpAddr;

/// One `noProxy` entry as httpproxy's `config.init` reads it.
enum Matcher {
    All,
    Cidr(IpAddr, u8),
    Ip(IpAddr, String),
    /// `.suffix`, the port (empty: any), and whether the bare name matches.
    Domain(String, String, bool),
}

/// Go's `net.SplitHostPort`, which takes any text after the last `:` as
/// the port.
fn split_host_port(s: &str) -> Option<(&str, &str)> {
    let i = s.rfind(':')?;
    let (host, k) = if let Some(rest) = s.strip_prefix('[') {
        let end = rest.find(']')? + 1;
        if end + 1 != i {
            return None;
        }
        (&s[1..end], end + 1)
    } else {
        let host = &s[..i];
        if host.contains(':') {
            return None;
        }
        (host, 0)
    };
    let j = usize::from(s.starts_with('['));
    if s[j..].contains('[') || s[k..].contains(']') {
        return None;
    }
    Some((host, &s[i + 1..]))
}

/// Go's `net.ParseIP` (no zone, no leading zeros in IPv4), an IPv4-mapped
/// IPv6 address as the IPv4 address Go's `IP.Equal` and `IPNet.Contains`
/// take it for.
fn parse_ip(s: &str) -> Option<IpAddr> {
    let ip: IpAddr = s.parse().ok()?;
    Some(ip.to_canonical())
}

/// Go's `net.ParseCIDR`: an address without a zone, `/`, a decimal prefix
/// length within the address's bits.
fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (addr, len) = s.split_once('/')?;
    let ip: IpAddr = addr.parse().ok()?;
    if len.is_empty() || !len.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let len: u8 = len.parse().ok()?;
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    if len > bits {
        return None;
    }
    // An IPv4-mapped network of 96 bits or more: Go's IPNet.Contains takes
    // it as the IPv4 network of the last bits (one of fewer, Go's masked
    // address is no longer IPv4-mapped: it holds no IPv4 address).
    match ip {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => {
            let v4 = v6.to_ipv4_mapped()?;
            if len >= 96 {
                Some((IpAddr::V4(v4), len - 96))
            } else {
                Some((IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), 128))
            }
        }
        _ => Some((ip, len)),
    }
}

fn matchers(no_proxy: &str) -> Vec<Matcher> {
    let mut out = Vec::new();
    for p in no_proxy.split(',') {
        let p = p.trim().to_ascii_lowercase();
        if p.is_empty() {
            continue;
        }
        if p == "*" {
            return vec![Matcher::All];
        }
        if let Some((ip, len)) = parse_cidr(&p) {
            out.push(Matcher::Cidr(ip, len));
            continue;
        }
        let (host, port) = match split_host_port(&p) {
            Some(("", _)) => continue,
            Some((h, port)) => (h.to_string(), port.to_string()),
            None => (p.clone(), String::new()),
        };
        if let Some(ip) = parse_ip(&host) {
            out.push(Matcher::Ip(ip, port));
            continue;
        }
        if host.is_empty() || !host.is_ascii() {
            // Go reads a non-ASCII name through IDNA: not matched here.
            continue;
        }
        let host = host
            .strip_prefix('*')
            .filter(|h| h.starts_with('.'))
            .unwrap_or(&host);
        let (suffix, bare) = match host.strip_prefix('.') {
            Some(_) => (host.to_string(), false),
            None => (format!(".{host}"), true),
        };
        out.push(Matcher::Domain(suffix, port, bare));
    }
    out
}

/// Whether `host` in `prefix` bits of `net`.
fn in_cidr(host: IpAddr, net: IpAddr, prefix: u8) -> bool {
    let (h, n, bits) = match (host, net) {
        (IpAddr::V4(h), IpAddr::V4(n)) => (u32::from(h).into(), u32::from(n).into(), 32),
        (IpAddr::V6(h), IpAddr::V6(n)) => (u128::from(h), u128::from(n), 128),
        _ => return false,
    };
    let shift = bits - u32::from(prefix);
    prefix == 0 || (h >> shift) == (n >> shift)
}

/// Whether Ignition fetches `http(s)://host:port/...` through its proxy
/// with `no_proxy` (the `noProxy` entries joined with `,`); `host` as a
/// merge URL reads it (lower case, an IPv6 address in brackets). True
/// where not sure (see the module's notes).
pub fn proxied(no_proxy: &str, host: &str, port: u16) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port = port.to_string();
    let ip = parse_ip(bare);
    if bare == "localhost" || ip.is_some_and(|ip| ip.is_loopback()) {
        return true;
    }
    !matchers(no_proxy).iter().any(|m| match m {
        Matcher::All => true,
        Matcher::Cidr(net, len) => ip.is_some_and(|ip| in_cidr(ip, *net, *len)),
        Matcher::Ip(want, p) => ip == Some(*want) && (p.is_empty() || *p == port),
        Matcher::Domain(suffix, p, matches_bare) => {
            ip.is_none()
                && (bare.ends_with(suffix.as_str()) || (*matches_bare && bare == &suffix[1..]))
                && (p.is_empty() || *p == port)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_proxy_entries_as_go_reads_them() {
        let h = "api-int.c.example.com";
        for (no, want) in [
            ("", true),
            ("*", false),
            ("example.com", false),
            (".example.com", false),
            ("*.example.com", false),
            ("c.example.com:22624", false),
            ("c.example.com:22623", true),
            ("api-int.c.example.com", false),
            (".api-int.c.example.com", true),
            ("xample.com", true),
            ("other.com, EXAMPLE.COM ", false),
            ("10.0.0.0/8", true),
            ("example.com.", true),
        ] {
            assert_eq!(proxied(no, h, 22624), want, "{no:?}");
        }
        let v4 = "10.0.0.5";
        for (no, want) in [
            ("10.0.0.0/8", false),
            ("10.0.0.5", false),
            ("10.0.0.5:22624", false),
            ("10.0.0.5:80", true),
            ("10.0.0.0/33", true),
            ("0.0.0.0/0", false),
            ("10.0.0.5/32", false),
            ("11.0.0.0/8", true),
            ("10.0.0.5.example", true),
            ("0.5", true),
        ] {
            assert_eq!(proxied(no, v4, 22624), want, "{no:?}");
        }
        for (no, want) in [
            ("fd00::/8", false),
            ("[fd00::1]:22624", false),
            ("fd00::1", false),
            ("[fd00::1]", true),
            ("fd01::/16", true),
        ] {
            assert_eq!(proxied(no, "[fd00::1]", 22624), want, "{no:?}");
        }
        // Go takes an IPv4-mapped address for the IPv4 one.
        assert!(!proxied("10.0.0.0/8", "[::ffff:10.0.0.5]", 22624));
        assert!(!proxied("::ffff:10.0.0.5", "10.0.0.5", 22624));
        assert!(!proxied("::ffff:10.0.0.0/104", "10.0.0.5", 22624));
        assert!(proxied("::ffff:10.0.0.0/80", "10.0.0.5", 22624));
        // Not sure: proxied.
        assert!(proxied("", "localhost", 22624));
        assert!(proxied("*", "127.0.0.1", 22624));
    }
}
