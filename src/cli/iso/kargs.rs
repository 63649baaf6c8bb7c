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

/// The characters an argument may hold. The area is the tail of
/// grub.cfg's `linux` line (and isolinux.cfg's `append` on BIOS): GRUB's
/// script lexer removes single quotes and backslashes, expands `$var`
/// (unset: nothing) and ends the command at `;` (what follows is more
/// GRUB commands), and systemd removes single and double quotes anywhere
/// in a word. With none of those, the kernel line is the text coreos-
/// installer shows, word for word, to the kernel, systemd and Ignition.
/// `[]` for IPv6 addresses (`ip=[2001:db8::2]::...`); GRUB expands
/// wildcards only in a word with `*` or `?`. No `"`: neither the images'
/// defaults nor the network and console arguments need one (their values
/// hold no space).
fn plain_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "._-=,:/@+%[]".contains(c)
}

/// systemd's SysV runlevel words, read as `systemd.unit=` (`rd.`-prefixed
/// in the initrd): main.c's `rlmap` and `rlmap_initrd`.
const RUNLEVELS: &[&str] = &[
    "emergency",
    "rescue",
    "single",
    "s",
    "S",
    "1",
    "2",
    "3",
    "4",
    "5",
    "rd.emergency",
    "rd.rescue",
];

/// Arguments of systemd (and the kernel's `init`) that run something else
/// at the live boot: its run generator (`systemd.run=`, which may run an
/// install of another config), another default target, units wanted or
/// masked, an environment for every unit.
const SYSTEMD_RUNS: &[&str] = &[
    "systemd.run",
    "systemd.run_success_action",
    "systemd.run_failure_action",
    "rd.systemd.run",
    "rd.systemd.run_success_action",
    "rd.systemd.run_failure_action",
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

/// Why `word` is refused whatever the image: a character the boot loader
/// or systemd reads otherwise than coreos-installer shows, a word the
/// kernel gives the live system's init (an option, a runlevel, an
/// environment variable), or an argument that makes the machine run
/// another config than the embedded one, or none: Ignition's config from
/// a URL or elsewhere (`ignition.config.*`), another platform than
/// `metal` (its provider's config), Ignition not run (`ignition.firstboot`
/// given a value), an install of its own (`coreos.inst.*`), systemd
/// starting other units, or any other `ignition.` argument (its effect
/// unknown here).
fn refused(word: &str) -> Option<String> {
    if let Some(c) = word.chars().find(|&c| !plain_char(c)) {
        // Spaces, controls and other characters a terminal hides, shown.
        let shown = |s: &str| -> String {
            s.chars()
                .map(|c| match c {
                    '!'..='~' => c.to_string(),
                    _ => c.escape_default().to_string(),
                })
                .collect()
        };
        return Some(format!(
            "{} (holds `{}`: GRUB removes quotes and backslashes, expands $variables and \
             ends its command at `;`, and systemd removes quotes, so the kernel line is not \
             what `coreos-installer iso kargs show` says; only ASCII letters, digits and \
             `._-=,:/@+%[]` are taken, one space between arguments)",
            shown(word),
            shown(&c.to_string())
        ));
    }
    let (key, value) = match word.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (word, None),
    };
    // systemd reads `-` and `_` in its arguments' names as one.
    let systemd_key = key.replace('-', "_");
    let why = match (key, value) {
        ("ignition.firstboot", None) | ("ignition.platform.id", Some("metal")) => return None,
        _ if word.starts_with('-') => {
            "the kernel gives it to the live system's init, systemd, as an option (`-b`, `-s`: \
             another target; after `--`, every word)"
        }
        (_, None) if RUNLEVELS.contains(&key) => {
            "systemd reads a runlevel as `systemd.unit=`: the live system boots to that target \
             and installs nothing"
        }
        (k, Some(_)) if !k.contains('.') && k.chars().any(|c| c.is_ascii_uppercase()) => {
            "the kernel gives it to the live system's init, systemd, as an environment variable"
        }
        _ if SYSTEMD_RUNS.contains(&systemd_key.as_str()) => {
            "systemd starts or skips other units, or runs a command, at the live boot"
        }
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
        _ => return None,
    };
    Some(format!("{word} ({why})"))
}

/// The arguments of `kargs` (an area's text, as coreos-installer reads
/// it) refused whatever the image, each with why (`refused`); more than
/// one space between two of them; `ignition.firstboot` missing.
pub fn conflicts(kargs: &str) -> Vec<String> {
    let words: Vec<&str> = kargs.split(' ').collect();
    let mut out: Vec<String> = Vec::new();
    // Each refused word once (`; initrd ... ; boot` has two `;`).
    for why in words.iter().filter_map(|w| refused(w)) {
        if !out.contains(&why) {
            out.push(why);
        }
    }
    if kargs.contains("  ") {
        out.push(
            "two spaces between arguments (one space apart, as coreos-installer writes them)"
                .to_string(),
        );
    }
    if !words.contains(&"ignition.firstboot") {
        out.push(
            "ignition.firstboot missing (Ignition does not run on the live system, nor the \
             embedded config)"
                .to_string(),
        );
    }
    out
}

/// Arguments `iso fleet` takes: the live system needs them to reach the
/// Machine Config Server (network, console), and they change no fact the
/// selector reads other than the network interfaces' (which the
/// installed node's own config sets up anyway). Each a name, or a prefix
/// ending in `.`.
const FLEET_TAKES: &[&str] = &[
    "coreos.liveiso",
    "ignition.firstboot",
    "ignition.platform.id",
    "console",
    "ip",
    "nameserver",
    "rd.neednet",
    "rd.znet",
    "rd.znet_ifname",
    "bond",
    "vlan",
    "team",
    "bridge",
    "ifname",
    "rd.peerdns",
    "rd.route",
    "rd.net.timeout.",
    "rd.net.dhcp.",
];

/// Arguments CoreOS images carry by default (`coreos-installer iso kargs
/// show --default`: Fedora and CentOS Stream CoreOS put
/// `mitigations=auto,nosmt` there, older RHCOS the other two), taken when
/// the image's default holds them: its installed nodes boot with them too.
const IMAGE_DEFAULTS: &[&str] = &[
    "mitigations=auto,nosmt",
    "random.trust_cpu=on",
    "rd.luks.options=discard",
];

/// What each kind of argument changes that the selector reads, by name
/// or prefix ending in `.`.
const FLEET_WHY: &[(&[&str], &str)] = &[
    (
        &[
            "nosmt",
            "mitigations",
            "maxcpus",
            "nr_cpus",
            "possible_cpus",
            "isolcpus",
            "nohz_full",
            "smt",
            "nosmp",
            "intel_pstate",
            "cpuidle.",
            "processor.",
        ],
        "CPU topology, count or power states (cpu.*)",
    ),
    (
        &[
            "hugepages",
            "hugepagesz",
            "default_hugepagesz",
            "numa",
            "mem",
            "memmap",
            "transparent_hugepage",
        ],
        "memory, huge pages or NUMA (memory.*)",
    ),
    (
        &[
            "modprobe.blacklist",
            "module_blacklist",
            "rd.driver.blacklist",
            "rd.driver.pre",
            "rd.driver.post",
        ],
        "which kernel modules are loaded (kernel.loadedmodule) and the devices they drive",
    ),
    (
        &["selinux", "enforcing", "security"],
        "the SELinux state (kernel.selinux)",
    ),
    (
        &[
            "pci",
            "iommu",
            "intel_iommu",
            "amd_iommu",
            "nvme.",
            "nvme_core.",
            "usbcore.",
            "libata.",
            "scsi_mod.",
            "net.ifnames",
            "biosdevname",
        ],
        "devices, their names or attributes (pci, usb, storage, network)",
    ),
];

/// The arguments of `kargs` `iso fleet` refuses beyond `conflicts`: any
/// but the network and console ones and the image's own defaults
/// (`default`), each with what it changes. The selector reads the facts
/// on the live system, booted with these; the installed node boots with
/// the cluster's kernel line, and registers by its own facts.
pub fn fleet_refusals(kargs: &str, default: &str) -> Vec<String> {
    let is = |key: &str, name: &str| match name.strip_suffix('.') {
        Some(_) => key.starts_with(name),
        None => key == name,
    };
    let defaults: Vec<&str> = default.split(' ').collect();
    let mut out = Vec::new();
    for word in kargs.split(' ').filter(|w| !w.is_empty()) {
        let key = word.split_once('=').map_or(word, |(k, _)| k);
        if FLEET_TAKES.iter().any(|n| is(key, n))
            || (IMAGE_DEFAULTS.contains(&word) && defaults.contains(&word))
        {
            continue;
        }
        let changes = FLEET_WHY
            .iter()
            .find(|(names, _)| names.iter().any(|n| is(key, n)))
            .map_or(
                "may change a fact the rules read (CPU, memory, devices, modules, kernel)",
                |(_, why)| why,
            );
        out.push(format!("{word} ({changes})"));
    }
    out
}

/// The fix for an image whose arguments are refused.
fn fix(k: &Kargs, what: &str) -> String {
    if conflicts(&k.default).is_empty() {
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
    }
}

/// Refuse an image whose kernel arguments make its machines run another
/// config than the embedded one, or are not read by the boot loader and
/// systemd as coreos-installer shows them (`what` is the image, for
/// messages). With `fleet`, also one whose arguments change the facts the
/// fleet's selector reads on the live system (`fleet_refusals`).
pub fn check(iso: &mut Iso9660, what: &str, fleet: bool) -> Result<()> {
    let Some(k) = read(iso).with_context(|| format!("{what}: reading its kernel arguments"))?
    else {
        return Ok(());
    };
    let found = conflicts(&k.current);
    if !found.is_empty() {
        bail!(
            "{what}: its kernel arguments (coreos-installer iso kargs show) make a machine \
             booted from it run another config than the embedded one, or something other than \
             they say: {}; {}",
            found.join("; "),
            fix(&k, what)
        );
    }
    let found = if fleet {
        fleet_refusals(&k.current, &k.default)
    } else {
        Vec::new()
    };
    if !found.is_empty() {
        let fix = if fleet_refusals(&k.default, &k.default).is_empty() {
            fix(&k, what)
        } else {
            "its default kernel arguments carry them too: start from a CoreOS live ISO of the \
             cluster's release"
                .to_string()
        };
        bail!(
            "{what}: its kernel arguments (coreos-installer iso kargs show) change what the \
             fleet's selector reads on the live system, and the installed node boots without \
             them: {}; a machine could be installed into one pool and register into another, \
             without that pool's first-boot taints. The fleet takes only the network and \
             console arguments (console=, ip=, nameserver=, rd.neednet=, bond=, vlan=, team=, \
             bridge=, ifname=, rd.znet=, rd.net.timeout.*) and the image's defaults: {fix}",
            found.join("; "),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "coreos.liveiso=rhcos-9.6 ignition.firstboot ignition.platform.id=metal";

    #[test]
    fn what_changes_the_config_run() {
        let base = BASE;
        assert!(conflicts(base).is_empty());
        assert!(conflicts(&format!("{base} console=ttyS0 ip=dhcp rd.neednet=1")).is_empty());
        for bad in [
            "ignition.config.url=https://x/y.ign",
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
        // Quoted: refused for the quote.
        for bad in [
            "\"ignition.config.url=data:,{}\"",
            "ignition.config.url=\"x\"",
        ] {
            let c = conflicts(&format!("{base} {bad}"));
            assert_eq!(c.len(), 1, "{bad}: {c:?}");
            assert!(
                c[0].starts_with(bad) && c[0].contains("holds `\"`"),
                "{c:?}"
            );
        }
        let c = conflicts("coreos.liveiso=x ignition.platform.id=metal");
        assert!(c[0].contains("ignition.firstboot missing"), "{c:?}");
        // Review 14 r14c F1: after a white space Go's strings.Fields splits
        // on and the kernel may not; r14c F4: systemd's run generator and
        // other units at the live boot.
        for space in ['\t', '\u{b}', '\u{85}', '\u{a0}', '\u{2028}', '\u{3000}'] {
            let c = conflicts(&format!(
                "{base} console=tty0{space}ignition.config.url=http://x"
            ));
            assert_eq!(c.len(), 1, "{space:?}: {c:?}");
            assert!(
                c[0].starts_with("console=tty0\\") && c[0].contains("ignition.config.url"),
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
            // Review 16 r16c F4: the initrd's run generator.
            "rd.systemd.run=/usr/bin/true",
            "rd.systemd.run-success-action=reboot",
        ] {
            let c = conflicts(&format!("{base} {bad}"));
            assert!(!c.is_empty(), "{bad}");
        }
    }

    /// Review 15 r15b F5: systemd drops single quotes too, anywhere in a
    /// word (extract_first_word with EXTRACT_UNQUOTE).
    #[test]
    fn systemd_arguments_with_single_quotes() {
        let base = "coreos.liveiso=x ignition.firstboot ignition.platform.id=metal";
        for bad in [
            "systemd.r'un'='coreos-installer install /dev/sda --ignition-url http://x'",
            "systemd.u'nit'=kernel-command-line.target",
            "'systemd.mask=ignition-fetch.service'",
        ] {
            let c = conflicts(&format!("{base} {bad}"));
            assert!(!c.is_empty(), "{bad}");
        }
    }

    /// Review 15 r15c F1: what GRUB's lexer and systemd un-quote, expand
    /// or end a command at is refused by the character, whatever the key
    /// it spells; systemd's runlevel words, options and environment
    /// variables for the live system's init by the word.
    #[test]
    fn only_plain_characters_and_no_words_for_init() {
        for bad in [
            "systemd.'unit'=kernel-command-line.target",
            "ign'ition'.config.url=http://evil.example/x.ign",
            "\\ignition.config.url=http://evil.example/x.ign",
            "ign${x}ition.config.url=http://evil.example/x.ign",
            "ign$x.config.url=http://evil.example/x.ign",
            "systemd.u${n}nit=kernel-command-line.target",
            "coreos.inst\\.install_dev=/dev/sda",
            "; initrd /images/pxeboot/initrd.img ; boot",
            ";initrd",
            "a#b",
            "x=a&b",
            "x=a|b",
            "x=a*",
            "x=a?",
            "x=(hd0)",
            "x={a}",
            "x=<a>",
            "x=`a`",
            "x=a~",
            "x=a!",
            "x=é",
            "x=a\nb",
            "\u{0}",
        ] {
            let c = conflicts(&format!("{BASE} {bad}"));
            assert!(c.iter().any(|c| c.contains("holds `")), "{bad:?}: {c:?}");
        }
        for bad in [
            "1",
            "2",
            "3",
            "4",
            "5",
            "s",
            "S",
            "single",
            "-s",
            "-b",
            "rescue",
            "emergency",
            "rd.rescue",
            "rd.emergency",
            "--",
            "-a",
            "SYSTEMD_PROC_CMDLINE=systemd.unit=x",
            "LD_PRELOAD=/x.so",
        ] {
            let c = conflicts(&format!("{BASE} {bad}"));
            assert_eq!(c.len(), 1, "{bad}: {c:?}");
            assert!(c[0].starts_with(bad), "{c:?}");
        }
        assert!(!conflicts(&format!("{BASE}  console=tty0")).is_empty());
        let c = conflicts(&format!("{BASE} ; initrd /x ; boot"));
        assert_eq!(c.len(), 1, "{c:?}");
        // What CoreOS images carry by default, and the usual console and
        // network arguments.
        for ok in [
            "mitigations=auto,nosmt coreos.liveiso=fedora-coreos-35.20220103.3.0 \
             ignition.firstboot ignition.platform.id=metal",
            "mitigations=auto,nosmt coreos.liveiso=scos-413.9.20230103.0 ignition.firstboot \
             ignition.platform.id=metal",
            "random.trust_cpu=on rd.luks.options=discard coreos.liveiso=rhcos-410.84.202201251210-0 \
             ignition.firstboot ignition.platform.id=metal",
            "coreos.liveiso=rhcos-415.92.202311241643-0 ignition.firstboot \
             ignition.platform.id=metal console=ttyS0 rd.neednet=1 \
             ip=192.168.0.40::192.168.0.1:255.255.255.0:sno.example.com:enp0s1:off \
             nameserver=192.168.0.100 nameserver=8.8.8.8",
        ] {
            assert!(conflicts(ok).is_empty(), "{ok}: {:?}", conflicts(ok));
        }
        let usual = [
            "console=tty0",
            "console=ttyS0,115200n8",
            "console=ttysclp0",
            "ip=dhcp",
            "ip=dhcp6",
            "ip=enp1s0:dhcp",
            "ip=10.0.0.2::10.0.0.1:255.255.255.0:node1.example.com:enp1s0:none",
            "ip=10.0.0.2::10.0.0.1:24:node1:bond0:none:1500",
            "ip=[2001:db8::2]::[2001:db8::1]:64:node1.example.com:enp1s0:none",
            "ip=[fd00::2]:::64::enp1s0:none",
            "nameserver=10.0.0.53",
            "nameserver=[2001:db8::53]",
            "nameserver=2001:db8::53",
            "rd.neednet=1",
            "bond=bond0:em1,em2:mode=active-backup,miimon=100",
            "vlan=vlan5:enp1s0",
            "team=team0:em1,em2",
            "bridge=br0:enp1s0",
            "ifname=eth0:52:54:00:12:34:56",
            "rd.znet=qeth,0.0.bdf0,0.0.bdf1,0.0.bdf2,layer2=1,portno=0",
            "rd.net.timeout.carrier=30",
            "rd.peerdns=0",
        ];
        let all = format!("{BASE} {}", usual.join(" "));
        assert!(conflicts(&all).is_empty(), "{:?}", conflicts(&all));
        assert!(
            fleet_refusals(&all, BASE).is_empty(),
            "{:?}",
            fleet_refusals(&all, BASE)
        );
    }

    /// Review 15 r15c F3: the fleet's selector reads the live system,
    /// booted with the ISO's arguments; the installed node boots without
    /// them. Only network and console arguments and the image's own
    /// defaults are taken.
    #[test]
    fn fleet_takes_network_arguments_and_the_images_defaults() {
        for (bad, why) in [
            ("nosmt", "CPU topology"),
            ("maxcpus=2", "CPU topology"),
            ("nr_cpus=4", "CPU topology"),
            ("hugepages=16", "huge pages"),
            ("numa=off", "NUMA"),
            ("mem=4G", "memory"),
            ("modprobe.blacklist=nouveau", "kernel modules"),
            ("selinux=0", "SELinux"),
            ("pci=noaer", "devices"),
            ("nvme.poll_queues=2", "devices"),
            ("quiet", "may change"),
            ("mitigations=auto,nosmt", "CPU topology"),
        ] {
            let kargs = format!("{BASE} {bad}");
            let r = fleet_refusals(&kargs, BASE);
            assert_eq!(r.len(), 1, "{bad}: {r:?}");
            assert!(r[0].starts_with(bad) && r[0].contains(why), "{r:?}");
        }
        // The image's default: taken.
        let fcos = "mitigations=auto,nosmt coreos.liveiso=fedora-coreos-35.20220103.3.0 \
                    ignition.firstboot ignition.platform.id=metal";
        assert!(fleet_refusals(fcos, fcos).is_empty());
        assert!(fleet_refusals(&format!("{fcos} ip=dhcp"), fcos).is_empty());
    }

    #[test]
    fn an_area_as_coreos_installer_reads_it() {
        assert_eq!(parse(b" a b\n#####", None, None).unwrap(), "a b");
        assert_eq!(parse(b"a b;xxxx", Some('x'), Some(';')).unwrap(), "a b");
        assert!(parse(b"a\xff\n#", None, None).is_err());
    }
}
