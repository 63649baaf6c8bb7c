//! The live ISO's kernel-argument areas, read as coreos-installer reads
//! them (`iso kargs show`; 0.27's `live/embed.rs`): located through
//! `COREOS/KARGS.JSO` (the default arguments, the areas' size, and each
//! area as a file of the image and an offset in it: grub.cfg, isolinux.cfg,
//! the EFI boot image), or, in an image without it, through the 72-byte
//! header before the embed area's in the ISO's system area. The kernel
//! line the boot loader gives is the area's text up to its end character
//! and padding.
//!
//! The image is untrusted: the JSON, the number of areas and their size
//! are bounded before anything is read, and every area must lie in the
//! image. Arguments that make Ignition take its config from elsewhere, or
//! not run, or that start an install of their own, make the embedded config
//! not the one the machine runs: `conflicts` names them.

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::iso9660::{Extent, Iso9660, NotFound};

const INFO_PATH: &str = "COREOS/KARGS.JSO";
/// coreos-installer's own limit on an area's size.
const MAX_SIZE: u64 = 2048;
/// `KARGS.JSO` is a few hundred bytes in every live ISO.
const MAX_INFO: u64 = 64 << 10;
/// Live ISOs have two or three areas (grub.cfg, isolinux.cfg, the EFI
/// boot image's grub.cfg); the system area's header holds at most 6.
const MAX_AREAS: usize = 8;
/// The system area's header: magic, length, the default's offset and up
/// to 6 areas' offsets, in the 72 bytes before the embed area's 24-byte
/// header at the end of the 32 KiB system area.
const HEADER_AT: u64 = 32768 - 24 - 72;
const HEADER_MAGIC: &[u8] = b"coreKarg";

/// The kernel arguments of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kargs {
    /// What the boot loader passes (every area holds the same).
    pub current: String,
    /// What `coreos-installer iso kargs reset` restores.
    pub default: String,
    /// Each area: its offset in the image and its length.
    pub areas: Vec<Extent>,
}

/// `KARGS.JSO`'s fields as coreos-installer requires them.
struct Info {
    default: String,
    files: Vec<Location>,
    size: u64,
}

struct Location {
    path: String,
    offset: u64,
    pad: Option<char>,
    end: Option<char>,
}

fn info_of(v: &Value) -> Option<Info> {
    // `pad` and `end`: one character, if given.
    let char_of = |f: &Value, k: &str| -> Option<Option<char>> {
        match f.get(k) {
            None | Some(Value::Null) => Some(None),
            Some(v) => {
                let mut c = v.as_str()?.chars();
                let one = c.next()?;
                c.next().is_none().then_some(Some(one))
            }
        }
    };
    let files = v
        .get("files")?
        .as_array()?
        .iter()
        .map(|f| {
            Some(Location {
                path: f.get("path")?.as_str()?.to_string(),
                offset: f.get("offset")?.as_u64()?,
                pad: char_of(f, "pad")?,
                end: char_of(f, "end")?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Info {
        default: v.get("default")?.as_str()?.to_string(),
        files,
        size: v.get("size")?.as_u64()?,
    })
}

/// The image's kernel arguments, None for an image without areas (an old
/// live ISO, or no CoreOS one).
pub fn read(iso: &mut Iso9660) -> Result<Option<Kargs>> {
    let info = match iso.find(INFO_PATH) {
        Ok(e) => e,
        Err(e) if e.is::<NotFound>() => return via_system_area(iso),
        Err(e) => return Err(e),
    };
    if info.length > MAX_INFO {
        bail!(
            "{INFO_PATH} is {} bytes, more than {} KiB (corrupt image?)",
            info.length,
            MAX_INFO >> 10
        );
    }
    let info: Value =
        serde_json::from_slice(&iso.read(info)?).with_context(|| format!("parsing {INFO_PATH}"))?;
    let info = info_of(&info).with_context(|| {
        format!(
            "{INFO_PATH} is not what coreos-installer reads (default, files with path and \
             offset, size; corrupt image?)"
        )
    })?;
    if info.size > MAX_SIZE {
        bail!(
            "{INFO_PATH}: kernel-argument areas of {} bytes, more than {MAX_SIZE} (corrupt image?)",
            info.size
        );
    }
    if info.default.len() as u64 > info.size {
        bail!("{INFO_PATH}: default kernel arguments longer than their areas (corrupt image?)");
    }
    if info.files.len() > MAX_AREAS {
        bail!(
            "{INFO_PATH} names {} kernel-argument areas, more than {MAX_AREAS} (corrupt image?)",
            info.files.len()
        );
    }
    let mut areas = Vec::new();
    for loc in &info.files {
        let file = iso
            .find(&loc.path.to_ascii_uppercase())
            .with_context(|| format!("{INFO_PATH}: looking up {:?}", loc.path))?;
        let offset = file
            .offset
            .checked_add(loc.offset)
            .context("a kernel-argument area's offset overflows (corrupt image?)")?;
        areas.push((
            Extent {
                offset,
                length: info.size,
            },
            loc.pad,
            loc.end,
        ));
    }
    build(iso, info.default, areas).map(Some)
}

/// An image without `KARGS.JSO`: the header in its system area, if any.
fn via_system_area(iso: &mut Iso9660) -> Result<Option<Kargs>> {
    let header = iso.read(Extent {
        offset: HEADER_AT,
        length: 72,
    })?;
    if &header[..8] != HEADER_MAGIC {
        return Ok(None);
    }
    let word = |i: usize| {
        let b: [u8; 8] = header[8 * i..8 * i + 8].try_into().unwrap_or_default();
        u64::from_le_bytes(b)
    };
    let length = word(1);
    if length > MAX_SIZE {
        bail!(
            "the system area's kernel-argument areas are {length} bytes, more than {MAX_SIZE} (corrupt image?)"
        );
    }
    let default = iso.read(Extent {
        offset: word(2),
        length,
    })?;
    let default = parse(&default, None, None)?;
    let areas = (3..9)
        .map(word)
        .take_while(|&o| o != 0)
        .map(|offset| (Extent { offset, length }, None, None))
        .collect();
    build(iso, default, areas).map(Some)
}

fn build(
    iso: &mut Iso9660,
    default: String,
    areas: Vec<(Extent, Option<char>, Option<char>)>,
) -> Result<Kargs> {
    let mut current: Option<String> = None;
    for (area, pad, end) in &areas {
        let text = parse(&iso.read(*area)?, *pad, *end)?;
        match &current {
            None => current = Some(text),
            Some(first) if *first != text => bail!(
                "the image's kernel-argument areas differ ({first:?}, and {text:?} at offset \
                 {}): which one boots depends on the firmware; coreos-installer refuses such \
                 an image too (corrupt or tampered image?)",
                area.offset
            ),
            Some(_) => {}
        }
    }
    let current = current.context(
        "the image names no kernel-argument area; corrupted CoreOS ISO image (coreos-installer \
         refuses it too)",
    )?;
    Ok(Kargs {
        current,
        default,
        areas: areas.into_iter().map(|(e, _, _)| e).collect(),
    })
}

/// An area's arguments as coreos-installer reads them: the text, its
/// padding and end character cut off, trimmed.
fn parse(bytes: &[u8], pad: Option<char>, end: Option<char>) -> Result<String> {
    let text = std::str::from_utf8(bytes)
        .ok()
        .context("a kernel-argument area is not UTF-8 (corrupt image?)")?;
    Ok(text
        .trim_end_matches(pad.unwrap_or('#'))
        .trim_end_matches(end.unwrap_or('\n'))
        .trim()
        .to_string())
}

/// The arguments of `kargs` that make the machine run another config than
/// the embedded one, or none, each with why: Ignition's config from a URL
/// or elsewhere (`ignition.config.*`), another platform than `metal` (its
/// provider's config), Ignition not run (`ignition.firstboot` missing or
/// given a value), an install of its own (`coreos.inst.*`, the legacy
/// installer's), or any other `ignition.` argument (its effect unknown
/// here).
/// Arguments of systemd (and the kernel's `init`) that run something else
/// at the live boot: its run generator (`systemd.run=`, which may run an
/// install of another config), another default target, units wanted or
/// masked, an environment for every unit.
const SYSTEMD_RUNS: &[&str] = &[
    "systemd.run",
    "systemd.run_success_action",
    "systemd.run_failure_action",
    "systemd.unit",
    "rd.systemd.unit",
    "systemd.wants",
    "rd.systemd.wants",
    "systemd.mask",
    "rd.systemd.mask",
    "systemd.setenv",
    "rd.systemd.setenv",
    "init",
    "rdinit",
];

pub fn conflicts(kargs: &str) -> Vec<String> {
    let mut out = Vec::new();
    // The kernel and dracut split on ASCII white space and drop the
    // quotes; Ignition splits /proc/cmdline as Go's strings.Fields does,
    // on any Unicode white space: a word of either counts, and the first
    // boot argument must be a word of both.
    let ascii: Vec<&str> = kargs.split_ascii_whitespace().collect();
    let unicode: Vec<&str> = kargs
        .split(char::is_whitespace)
        .filter(|w| !w.is_empty())
        .collect();
    let firstboot =
        ascii.contains(&"ignition.firstboot") && unicode.contains(&"ignition.firstboot");
    let mut words: Vec<&str> = ascii.iter().chain(&unicode).copied().collect();
    words.sort_unstable();
    words.dedup();
    for word in words {
        let plain: String = word.chars().filter(|&c| c != '"').collect();
        let (key, value) = match plain.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (plain.as_str(), None),
        };
        // systemd reads `-` and `_` in its arguments' names as one.
        let systemd_key = key.replace('-', "_");
        let why = match (key, value) {
            ("ignition.firstboot", None) => continue,
            _ if SYSTEMD_RUNS.contains(&systemd_key.as_str()) => {
                "systemd starts or skips other units, or runs a command, at the live boot"
            }
            ("ignition.platform.id", Some("metal")) => continue,
            ("ignition.firstboot", Some(_)) => {
                "Ignition's first boot is told by this argument alone; with a value it may not run"
            }
            ("ignition.platform.id", _) => {
                "Ignition reads the config of that platform's provider, not the embedded one"
            }
            (k, _) if k.starts_with("ignition.config.") => {
                "Ignition takes its config from this argument and never reads the embedded one"
            }
            (k, _) if k.starts_with("coreos.inst.") => {
                "the live system installs on its own, with a config the argument names"
            }
            (k, _) if k.starts_with("ignition.") => {
                "an Ignition argument whose effect on the config is not known here"
            }
            _ => continue,
        };
        out.push(format!("{word} ({why})"));
    }
    if !firstboot {
        out.push(
            "ignition.firstboot missing (Ignition does not run on the live system, nor the \
             embedded config)"
                .to_string(),
        );
    }
    out
}

/// Refuse an image whose kernel arguments make its machines run another
/// config than the embedded one (`what` is the image, for messages).
pub fn check(iso: &mut Iso9660, what: &str) -> Result<()> {
    let Some(k) = read(iso).with_context(|| format!("{what}: reading its kernel arguments"))?
    else {
        return Ok(());
    };
    let found = conflicts(&k.current);
    if found.is_empty() {
        return Ok(());
    }
    let fix = if conflicts(&k.default).is_empty() {
        format!(
            "reset them with `coreos-installer iso kargs reset {what}` (its default \
             arguments: {:?}), or delete each with `coreos-installer iso kargs modify -d ARG \
             {what}`",
            k.default
        )
    } else {
        "its default kernel arguments carry them too (the image was built so): start from a \
         CoreOS live ISO of the release mirror"
            .to_string()
    };
    bail!(
        "{what}: its kernel arguments (coreos-installer iso kargs show) make a machine booted \
         from it run another config than the embedded one: {}; {fix}",
        found.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_changes_the_config_run() {
        let base = "coreos.liveiso=rhcos-9.6 ignition.firstboot ignition.platform.id=metal";
        assert!(conflicts(base).is_empty());
        assert!(conflicts(&format!("{base} console=ttyS0 ip=dhcp rd.neednet=1")).is_empty());
        for bad in [
            "ignition.config.url=https://x/y.ign",
            "\"ignition.config.url=data:,{}\"",
            "ignition.config.url=\"x\"",
            "ignition.platform.id=qemu",
            "ignition.firstboot=0",
            "coreos.inst.ignition_url=http://x",
            "coreos.inst.install_dev=/dev/sda",
            "ignition.something",
        ] {
            let c = conflicts(&format!("{base} {bad}"));
            assert_eq!(c.len(), 1, "{bad}: {c:?}");
            assert!(c[0].starts_with(bad), "{c:?}");
        }
        let c = conflicts("coreos.liveiso=x ignition.platform.id=metal");
        assert!(c[0].contains("ignition.firstboot missing"), "{c:?}");
        // Review 14 r14c F1: after a white space Go's strings.Fields splits
        // on and the kernel may not; r14c F4: systemd's run generator and
        // other units at the live boot.
        for space in ['\u{b}', '\u{85}', '\u{a0}', '\u{2028}', '\u{3000}'] {
            let c = conflicts(&format!(
                "{base} console=tty0{space}ignition.config.url=http://x"
            ));
            assert!(
                c.iter().any(|c| c.starts_with("ignition.config.url")),
                "{space:?}: {c:?}"
            );
        }
        for bad in [
            "systemd.unit=kernel-command-line.target",
            "systemd.run=\"coreos-installer install /dev/sda --ignition-url http://x\"",
            "rd.systemd.unit=emergency.target",
            "systemd.wants=x.service",
            "systemd.mask=ignition-fetch.service",
            "init=/bin/sh",
        ] {
            let c = conflicts(&format!("{base} {bad}"));
            assert!(!c.is_empty(), "{bad}");
        }
    }

    #[test]
    fn an_area_as_coreos_installer_reads_it() {
        assert_eq!(parse(b" a b\n#####", None, None).unwrap(), "a b");
        assert_eq!(parse(b"a b;xxxx", Some('x'), Some(';')).unwrap(), "a b");
        assert!(parse(b"a\xff\n#", None, None).is_err());
    }
}
