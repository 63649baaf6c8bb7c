//! File contents as data URLs (RFC 2397), the shortest of percent-encoding,
//! base64 and gzip+base64, as Butane chooses; and a deterministic gzip.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// A data URL and the `compression` Ignition must apply ("gzip" or none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataUrl {
    pub source: String,
    pub compression: Option<&'static str>,
}

/// RFC 2397's unreserved set stays; every other byte is `%XX` (upper case).
pub fn percent_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A data URL a reviewer can read: `data:,` with only what the readers
/// need escaped. Ignition and the MCO decode data URLs with the same Go
/// package (vincent-petithory/dataurl): after the comma it takes any
/// printable ASCII but space, `<>#"{}|\^[]` and the backquote, and turns
/// only `%XX` back into a byte (a `+` stays a `+`). `%` and `?` (a URL
/// parser would split a query off) are escaped too, and `'` to be safe in
/// quotes. Never compressed, so a label, taint or rule name shows in a diff
/// as written.
pub fn readable_data_url(bytes: &[u8]) -> DataUrl {
    let mut out = String::from("data:,");
    for &b in bytes {
        let plain = b.is_ascii_alphanumeric() || b"-_.!~*()/:=,;@&$+".contains(&b);
        if plain {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    DataUrl {
        source: out,
        compression: None,
    }
}

/// gzip at libdeflate's best compression (level 12: the wrapper payload
/// comes out about 3.5% smaller than zlib's level 9) with a fixed header (mtime
/// 0, no name), so the same input always gives the same bytes.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let level = libdeflater::CompressionLvl::best();
    let mut c = libdeflater::Compressor::new(level);
    let mut out = vec![0; c.gzip_compress_bound(bytes.len())];
    let n = c
        .gzip_compress(bytes, &mut out)
        .expect("the bound libdeflate gave fits");
    out.truncate(n);
    out
}

pub fn data_url(bytes: &[u8]) -> DataUrl {
    let pct = format!(",{}", percent_encode(bytes));
    let b64 = format!(";base64,{}", STANDARD.encode(bytes));
    let mut best = if b64.len() < pct.len() { b64 } else { pct };
    let mut compression = None;
    let gz = format!(";base64,{}", STANDARD.encode(gzip(bytes)));
    if gz.len() + "gzip".len() < best.len() {
        best = gz;
        compression = Some("gzip");
    }
    DataUrl {
        source: format!("data:{best}"),
        compression,
    }
}

/// Decode what [`data_url`] wrote (for staleness checks and tests).
pub fn decode(url: &DataUrl) -> Option<Vec<u8>> {
    let rest = url.source.strip_prefix("data:")?;
    let raw = if let Some(b) = rest.strip_prefix(";base64,") {
        STANDARD.decode(b).ok()?
    } else {
        let p = rest.strip_prefix(',')?.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < p.len() {
            if p[i] == b'%' {
                out.push(
                    u8::from_str_radix(std::str::from_utf8(p.get(i + 1..i + 3)?).ok()?, 16).ok()?,
                );
                i += 3;
            } else {
                out.push(p[i]);
                i += 1;
            }
        }
        out
    };
    match url.compression {
        Some("gzip") => {
            let mut d = flate2::read::MultiGzDecoder::new(raw.as_slice());
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut d, &mut out).ok()?;
            Some(out)
        }
        _ => Some(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_shortest() {
        let small = data_url(b"[Service]\nEnvironment=\"A=b\"\n");
        assert!(small.source.starts_with("data:,%5BService%5D%0A"));
        assert_eq!(small.compression, None);
        let big = data_url(&vec![b'x'; 10_000]);
        assert_eq!(big.compression, Some("gzip"));
        let binary = data_url(&[0xff, 0xfe, 0x00, 0x01, 0x80, 0x90]);
        assert!(binary.source.starts_with("data:;base64,"));
        for url in [small, big, binary] {
            assert!(decode(&url).is_some());
        }
    }

    #[test]
    fn readable_urls_keep_labels_as_written() {
        let text = b"[Service]\nEnvironment=\"L=node.kubernetes.io/gpu=,a.io/b=c\"\n# x, y%?#'\n";
        let url = readable_data_url(text);
        assert_eq!(
            url.source,
            "data:,%5BService%5D%0AEnvironment=%22L=node.kubernetes.io/gpu=,a.io/b=c%22%0A%23%20x,%20y%25%3F%23%27%0A"
        );
        assert_eq!(url.compression, None);
        assert_eq!(decode(&url).unwrap(), text);
        let every: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(&readable_data_url(&every)).unwrap(), every);
    }

    #[test]
    fn gzip_is_deterministic() {
        assert_eq!(gzip(b"abc"), gzip(b"abc"));
        assert_eq!(&gzip(b"abc")[4..8], &[0, 0, 0, 0]);
    }
}
