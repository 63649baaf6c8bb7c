//! The text of the owned-labels annotation: the label keys the sync owns,
//! each shared prefix written once. Every PATCH of a Node goes to every
//! watcher of Nodes in the cluster, so what we add to one is kept small:
//! NFD's label set (89 keys, 4.0 KB as a plain list) takes 0.9 KB.
//!
//! Keys are listed, not hashed: a hash would tell ours from another
//! owner's key only up to a collision, and a collision would remove a
//! label that is not ours. The form is brace expansion over the sorted
//! keys, split after a `/` or `.`:
//! `feature.node.kubernetes.io/{cpu-cpuid.{AVX,AVX2},kernel-version.full},example.com/a`.
//! `{`, `}` and `,` occur in no label key, so the text is unambiguous, and
//! a plain comma-separated list (what earlier releases wrote) reads as it
//! always did.

/// Longest label key: a 253-byte DNS prefix, `/`, a 63-byte name.
const MAX_KEY: usize = 317;
/// Most keys one annotation may list: what fits the 256 KiB the API server
/// allows a Node's annotations, at two bytes a key (what the sync writes,
/// it reads back).
const MAX_KEYS: usize = 131_072;
/// Most bytes the keys read may hold (prefixes shared in the text are
/// repeated in each key).
const MAX_BYTES: usize = 8 << 20;
/// Deepest nesting written and read.
const MAX_DEPTH: usize = 16;

fn is_delimiter(c: u8) -> bool {
    c == b'/' || c == b'.'
}

fn is_key_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b'/')
}

/// The annotation's text for `keys` (sorted and deduplicated here).
pub fn encode(keys: &[String]) -> String {
    let mut sorted: Vec<&str> = keys.iter().map(String::as_str).collect();
    sorted.sort();
    sorted.dedup();
    let mut out = String::new();
    encode_into(&sorted, 0, &mut out);
    out
}

fn encode_into(keys: &[&str], depth: usize, out: &mut String) {
    let mut i = 0;
    while i < keys.len() {
        if i > 0 {
            out.push(',');
        }
        let key = keys[i];
        // Keys sharing this one's first segment are next to it (sorted).
        let group_end = match key.bytes().position(is_delimiter) {
            Some(d) if depth < MAX_DEPTH => {
                let seg = &key[..=d];
                i + keys[i..].iter().take_while(|k| k.starts_with(seg)).count()
            }
            _ => i + 1,
        };
        let group = &keys[i..group_end];
        // Their common prefix up to its last delimiter (the first and last
        // of a sorted run share what all of it shares).
        let last = group[group.len() - 1];
        let common = key
            .bytes()
            .zip(last.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let prefix_len = key.as_bytes()[..common]
            .iter()
            .rposition(|&c| is_delimiter(c))
            .map_or(0, |p| p + 1);
        // Braces cost two bytes: worth it when the prefix saves more.
        if group.len() < 2 || (group.len() - 1) * prefix_len <= 2 {
            out.push_str(key);
            i += 1;
            continue;
        }
        // Every rest is non-empty: a label key ends in an alphanumeric.
        let rests: Vec<&str> = group.iter().map(|k| &k[prefix_len..]).collect();
        out.push_str(&key[..prefix_len]);
        out.push('{');
        encode_into(&rests, depth + 1, out);
        out.push('}');
        i = group_end;
    }
}

/// The keys the annotation lists, sorted; Err: why it is no list we wrote.
pub fn decode(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut prefix = String::new();
    let end = list(text, 0, &mut prefix, 0, &mut out, &mut 0)?;
    if end < text.len() {
        return Err(format!("a character no label key has, at byte {end}"));
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn skip_space(s: &[u8], mut i: usize) -> usize {
    while s.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// One comma-separated list from `i`, each item under `prefix`; returns
/// where it stopped (the end, or a byte no item starts or goes on with).
/// Items are sliced at ASCII bytes only, so at char boundaries.
fn list(
    t: &str,
    mut i: usize,
    prefix: &mut String,
    depth: usize,
    out: &mut Vec<String>,
    total: &mut usize,
) -> Result<usize, String> {
    let s = t.as_bytes();
    loop {
        i = skip_space(s, i);
        let start = i;
        while s.get(i).copied().is_some_and(is_key_byte) {
            i += 1;
        }
        let text = &t[start..i];
        let outer = prefix.len();
        prefix.push_str(text);
        if prefix.len() > MAX_KEY {
            return Err(format!("a key longer than {MAX_KEY} bytes"));
        }
        i = skip_space(s, i);
        if s.get(i) == Some(&b'{') {
            if text.is_empty() || depth >= MAX_DEPTH {
                return Err(format!(
                    "a {{ at byte {i} with no prefix or nested too deep"
                ));
            }
            i = list(t, i + 1, prefix, depth + 1, out, total)?;
            if s.get(i) != Some(&b'}') {
                return Err(format!("the {{ before byte {i} is not closed"));
            }
            i = skip_space(s, i + 1);
        } else if !text.is_empty() {
            if out.len() >= MAX_KEYS {
                return Err(format!("more than {MAX_KEYS} keys"));
            }
            *total += prefix.len();
            if *total > MAX_BYTES {
                return Err(format!("keys of more than {MAX_BYTES} bytes"));
            }
            out.push(prefix.clone());
        }
        prefix.truncate(outer);
        if s.get(i) != Some(&b',') {
            return Ok(i);
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn shared_prefixes_are_written_once_and_read_back() {
        let k = keys(&[
            "feature.node.kubernetes.io/cpu-cpuid.AVX",
            "feature.node.kubernetes.io/cpu-cpuid.AVX2",
            "feature.node.kubernetes.io/kernel-version.full",
            "example.com/a",
            "plain",
            "aaa.b",
            "aaa.b.c",
            "z.a",
            "z.b",
        ]);
        let text = encode(&k);
        assert_eq!(
            text,
            "aaa.{b,b.c},example.com/a,feature.node.kubernetes.io/{cpu-cpuid.{AVX,AVX2},kernel-version.full},plain,z.a,z.b"
        );
        let mut sorted = k.clone();
        sorted.sort();
        assert_eq!(decode(&text).unwrap(), sorted);
        // Nothing to share: the plain list.
        assert_eq!(encode(&keys(&["x.io/a", "y.io/b"])), "x.io/a,y.io/b");
        assert_eq!(encode(&[]), "");
        assert_eq!(decode("").unwrap(), Vec::<String>::new());
    }

    /// What earlier releases wrote (a plain list, spaces tolerated) reads
    /// as before, so an upgrade keeps what the sync owned.
    #[test]
    fn the_plain_list_reads_as_before() {
        assert_eq!(
            decode("example.com/gone,example.com/tier, node.kubernetes.io/pool,").unwrap(),
            keys(&[
                "example.com/gone",
                "example.com/tier",
                "node.kubernetes.io/pool"
            ])
        );
    }

    #[test]
    fn what_no_release_wrote_is_refused() {
        for bad in ["a.{b", "a.{b}}", "{a,b}", "a b", "a=1", "a.{b}c", "a\u{e9}"] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
        let deep = format!(
            "{}x{}",
            "a.{".repeat(MAX_DEPTH + 1),
            "}".repeat(MAX_DEPTH + 1)
        );
        assert!(decode(&deep).is_err());
        let long = format!("{}{{a,b}}", "p".repeat(MAX_KEY));
        assert!(decode(&long).is_err());
        let many = vec!["k"; MAX_KEYS + 1].join(",");
        assert!(decode(&many).is_err());
        // A shared prefix is repeated in every key: 90 KB of text that
        // would be 9 MB of keys.
        let suffixes: Vec<String> = (0..30_000).map(|i| format!("{i:x}")).collect();
        let wide = format!("{}.{{{}}}", "p".repeat(300), suffixes.join(","));
        assert!(decode(&wide).unwrap_err().contains("bytes"));
    }

    /// What the sync writes for the most labels a node registers with, it
    /// reads back (16,385 keys were refused by the reader).
    #[test]
    fn what_is_written_is_read_back() {
        let keys: Vec<String> = (0..40_000).map(|i| format!("k{i:05}")).collect();
        assert_eq!(decode(&encode(&keys)).unwrap(), keys);
    }

    /// Any set of keys survives the round trip, however its prefixes nest.
    #[test]
    fn round_trip_of_many_shapes() {
        let mut k = Vec::new();
        for a in ["a", "a.b", "a.b.c", "ab", "a-b", "a/b", "a.b/c.d", "z"] {
            for b in ["", ".x", ".x.y", "/n", "/n.m", "/n.m2", "_q"] {
                k.push(format!("{a}{b}"));
            }
        }
        let text = encode(&k);
        k.sort();
        assert_eq!(decode(&text).unwrap(), k, "{text}");
        // Nesting deeper than MAX_DEPTH is written flat below it.
        let deep: Vec<String> = (0..3)
            .map(|i| format!("{}{i}", "s.".repeat(MAX_DEPTH + 4)))
            .collect();
        assert_eq!(decode(&encode(&deep)).unwrap(), deep);
    }

    /// NFD's label set on the DGX fixture, as the first sync owns it: 4.0
    /// KB as the plain list earlier releases wrote, under 1 KB now.
    #[test]
    fn the_nfd_label_set_stays_under_a_kilobyte() {
        use crate::node::facts::{self, FactsOptions, NfdFlavour};
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nodes/dgx");
        let features = facts::read(&FactsOptions {
            root: &root,
            nodename: None,
            only: None,
            attributes: None,
        });
        let mut owned: Vec<String> = facts::nfd_labels(&features, NfdFlavour::OpenShift)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        // The pool label and two static labels, as in the node.
        owned.extend(keys(&[
            "node.kubernetes.io/worker-gpu",
            "example.com/tier",
            "example.com/rack",
        ]));
        owned.sort();
        owned.dedup();
        assert_eq!(owned.len(), 89);
        let plain = owned.join(",");
        let text = encode(&owned);
        assert!(plain.len() > 4000, "{}", plain.len());
        assert!(text.len() < 1000, "{} bytes: {text}", text.len());
        assert_eq!(decode(&text).unwrap(), owned);
    }
}
