//! The files (and stdin) the CLI reads, each capped at a size far above any
//! real one: a wrong path (`/dev/zero`, a disk image, a log) is refused
//! naming the file and the limit, after reading at most one byte past it.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// The most one flag reads from one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// The flag, for messages.
    pub flag: &'static str,
    pub bytes: u64,
}

const MIB: u64 = 1 << 20;

/// A CA bundle: the whole Mozilla store is about 0.2 MiB.
pub const CA_FILE: Limit = Limit {
    flag: "--ca-file",
    bytes: MIB,
};
/// NodeFeatureRule YAML: real ones are a few KiB.
pub const RULES: Limit = Limit {
    flag: "--rules",
    bytes: 16 * MIB,
};
/// MachineConfig YAML: one object is at most 1.5 MiB (etcd's request
/// limit); a file may hold a cluster's `oc get mc -o yaml`.
pub const MACHINECONFIG: Limit = Limit {
    flag: "--machineconfig",
    bytes: 64 * MIB,
};
/// An Ignition config to embed: the live ISO's embed area is 256 KiB
/// compressed.
pub const IGNITION: Limit = Limit {
    flag: "iso embed -i",
    bytes: 16 * MIB,
};
/// `iso fleet --pool NAME=SOURCE`: a pool's Secret, MachineConfigs or
/// pointer config, as `--machineconfig`.
pub const FLEET_POOL: Limit = Limit {
    flag: "iso fleet --pool",
    bytes: 64 * MIB,
};
/// A static selector is about 0.2 MiB; the fleet ISO's embed area, 256 KiB
/// compressed, holds it.
pub const SELECTOR: Limit = Limit {
    flag: "--selector",
    bytes: MIB,
};
/// A static wrapper is about 0.3 MiB; a MachineConfig carries one per
/// architecture and must stay under etcd's 1.5 MiB per object.
pub const WRAPPER: Limit = Limit {
    flag: "--wrapper",
    bytes: MIB,
};

/// The bytes of `path`, or of stdin for `-`, with the name messages use.
pub fn read_path_or_stdin(path: &Path, limit: Limit) -> Result<(Vec<u8>, String)> {
    if path.as_os_str() == "-" {
        let bytes = read_capped(std::io::stdin().lock(), "<stdin>", limit)?;
        Ok((bytes, "<stdin>".into()))
    } else {
        Ok((read_file(path, limit)?, path.display().to_string()))
    }
}

/// [`read_path_or_stdin`] as UTF-8 text.
pub fn read_text(path: &Path, limit: Limit) -> Result<(String, String)> {
    let (bytes, name) = read_path_or_stdin(path, limit)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{name} is not UTF-8 text (invalid byte at offset {}); give the YAML file {} expects",
            e.utf8_error().valid_up_to(),
            limit.flag
        )
    })?;
    Ok((text, name))
}

/// The bytes of the file `path`.
pub fn read_file(path: &Path, limit: Limit) -> Result<Vec<u8>> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).with_context(|| format!("reading {name}"))?;
    read_capped(file, &name, limit)
}

/// Everything `r` gives, refused past `limit` (memory stays near the limit).
pub fn read_capped(r: impl Read, name: &str, limit: Limit) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    r.take(limit.bytes + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {name}"))?;
    if bytes.len() as u64 > limit.bytes {
        bail!(
            "{name} is larger than {} MiB, the most {} reads; is it the right file?",
            limit.bytes / MIB,
            limit.flag
        );
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_past_the_limit_naming_file_and_limit() {
        let tiny = Limit {
            flag: "--x",
            bytes: 4,
        };
        assert_eq!(read_capped(&b"abcd"[..], "f", tiny).unwrap(), b"abcd");
        let e = read_capped(&b"abcde"[..], "f", tiny)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("f is larger than") && e.contains("--x"),
            "{e}"
        );
        let e = read_file(Path::new("/dev/zero"), CA_FILE)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "/dev/zero is larger than 1 MiB, the most --ca-file reads; is it the right file?"
        );
    }
}
