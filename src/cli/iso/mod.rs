//! CoreOS live ISO Ignition embedding, compatible with coreos-installer:
//! the embed area is found through `COREOS/IGNINFO.JSO` (or
//! `IMAGES/IGNITION.IMG`) and holds an xz-compressed newc cpio archive with
//! `config.ign` (and network keyfiles: nothing else, `coreos_members`),
//! then zeros. The kernel loads it as an extra initramfs; `initramfs` reads
//! it as the kernel unpacks it, `before_area` checks the kernel reaches it.

mod before_area;
#[cfg(feature = "cli")]
pub mod command;
mod coreos_members;
#[cfg(feature = "cli")]
pub mod fleet;
pub mod ignition;
mod initramfs;
pub mod iso9660;
pub mod kargs;
#[cfg(feature = "cli")]
pub mod reach;
mod source;
pub mod stream;
mod unnamed;

pub use ignition::{Checked, IGNITION_VERSIONS, check_ignition};
use initramfs::{MAX_UNPACKED, unpacked_too_large};
pub use initramfs::{gunzip_member, read_members};

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};

use iso9660::{Extent, Iso9660, NotFound};
use source::Input;

/// Where the config lives in the initramfs.
pub const CONFIG_PATH: &str = "config.ign";

/// Sizes past any live ISO's, refused as a corrupt image before they are
/// read into memory: the embed area (256 KiB in every CoreOS live ISO) and
/// COREOS/IGNINFO.JSO (one line).
const MAX_AREA: u64 = 16 << 20;
const MAX_IGNINFO: u64 = 64 << 10;

/// The embed area of an image.
pub fn find_area(file: &mut File) -> Result<Extent> {
    let mut iso = Iso9660::open(file)?;
    match iso.find("COREOS/IGNINFO.JSO") {
        Ok(info) => {
            if info.length > MAX_IGNINFO {
                bail!(
                    "COREOS/IGNINFO.JSO is {} bytes, more than {} KiB (corrupt image?)",
                    info.length,
                    MAX_IGNINFO >> 10
                );
            }
            let json: serde_json::Value =
                serde_json::from_slice(&iso.read(info)?).context("parsing COREOS/IGNINFO.JSO")?;
            let name = json["file"]
                .as_str()
                .context("COREOS/IGNINFO.JSO names no file")?;
            let f = iso.find(&name.to_ascii_uppercase())?;
            let offset = json["offset"].as_u64().unwrap_or(0);
            let length = match json["length"].as_u64() {
                Some(l) => l,
                None => f
                    .length
                    .checked_sub(offset)
                    .context("IGNINFO offset past its file")?,
            };
            if offset.checked_add(length).is_none_or(|end| end > f.length) {
                bail!("COREOS/IGNINFO.JSO points past the end of {name} (corrupt image?)");
            }
            // The kernel reads an archive only at a 4-aligned offset of the
            // file (the boot loader loads each initrd 4-aligned).
            if !offset.is_multiple_of(4) {
                bail!(
                    "COREOS/IGNINFO.JSO puts the embed area at offset {offset} of {name}, not a \
                     multiple of 4, where the kernel reads no archive (corrupt image?)"
                );
            }
            before_area::check(&mut iso, name, f, offset)?;
            let area = Extent {
                offset: f.offset + offset,
                length,
            };
            check_area_size(area)?;
            iso.check_within(area, "the embed area")?;
            // The boot loader loads the whole file and the kernel unpacks
            // all of it: an archive after the area would be unpacked after
            // ours and win. Only zeros may follow it.
            let tail = Extent {
                offset: area.offset + length,
                length: f.length - offset - length,
            };
            if tail.length > MAX_AREA
                || (tail.length > 0 && iso.read(tail)?.iter().any(|&b| b != 0))
            {
                bail!(
                    "{name} holds data after the embed area COREOS/IGNINFO.JSO gives ({length} \
                     bytes at offset {offset}): the kernel unpacks the whole file at boot, so \
                     a config there would replace the one in the area; refusing a tampered image"
                );
            }
            Ok(area)
        }
        Err(e) if e.is::<NotFound>() => {
            let area = iso.find("IMAGES/IGNITION.IMG").map_err(|e| match e.downcast::<NotFound>() {
                Ok(_) => anyhow::anyhow!("this ISO image has no Ignition embed area (no COREOS/IGNINFO.JSO or IMAGES/IGNITION.IMG); use a CoreOS live ISO"),
                Err(e) => e,
            })?;
            check_area_size(area)?;
            iso.check_within(area, "the embed area")?;
            Ok(area)
        }
        Err(e) => Err(e),
    }
}

fn check_area_size(area: Extent) -> Result<()> {
    if area.length > MAX_AREA {
        bail!(
            "the embed area is {} bytes, more than {} MiB (live ISOs have 256 KiB; corrupt image?)",
            area.length,
            MAX_AREA >> 20
        );
    }
    Ok(())
}

/// The archive coreos-installer writes: parent directories first (0755),
/// files 0600, inode numbers in order, xz preset 9 with a CRC32 check (the
/// kernel's requirement), no block padding.
pub fn write_members(members: &BTreeMap<String, Vec<u8>>) -> Result<Vec<u8>> {
    if members.is_empty() {
        return Ok(Vec::new());
    }
    let mut entries: Vec<(cpio::NewcBuilder, Cursor<Vec<u8>>)> = Vec::new();
    let mut dirs: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    // The archive's size, bounded as what it was read from is: members'
    // names come from the image (a name of a million `a/` is a million
    // directories, each as long).
    let mut size = 0u64;
    let mut add = |name: &str, len: usize| -> Result<()> {
        size += 112 + name.len() as u64 + len as u64;
        if size > MAX_UNPACKED {
            return Err(unpacked_too_large());
        }
        Ok(())
    };
    for (path, bytes) in members {
        // Its parent directories not written yet, deepest first: those of
        // a directory already written were written with it.
        let mut new = Vec::new();
        let mut end = path.len();
        while let Some(i) = path[..end].rfind('/') {
            let dir = &path[..i];
            add(dir, 0)?;
            if !dirs.insert(dir) {
                break;
            }
            new.push(dir);
            end = i;
        }
        for dir in new.into_iter().rev() {
            entries.push((
                cpio::NewcBuilder::new(dir).mode(0o40_755),
                Cursor::new(Vec::new()),
            ));
        }
        add(path, bytes.len())?;
        entries.push((
            cpio::NewcBuilder::new(path).mode(0o100_600),
            Cursor::new(bytes.clone()),
        ));
    }
    let stream = xz2::stream::Stream::new_easy_encoder(9, xz2::stream::Check::Crc32)
        .context("creating the xz encoder")?;
    let encoder = xz2::write::XzEncoder::new_stream(Vec::new(), stream);
    let encoder =
        cpio::write_cpio(entries.into_iter(), encoder).context("writing the cpio archive")?;
    encoder.finish().context("finishing the xz stream")
}

/// The new area contents: `payload` then zeros.
fn fill_area(payload: &[u8], length: u64) -> Result<Vec<u8>> {
    if payload.len() as u64 > length {
        bail!(
            "the Ignition config does not fit: the compressed archive is {} bytes, the embed area {} bytes; \
             embed a pointer config (render ignition --merge-url) instead",
            payload.len(),
            length
        );
    }
    let mut area = payload.to_vec();
    area.resize(length as usize, 0);
    Ok(area)
}

fn read_area(file: &mut File, e: Extent) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; e.length as usize];
    file.seek(SeekFrom::Start(e.offset))
        .context("seeking to the embed area")?;
    file.read_exact(&mut buf)
        .context("reading the embed area")?;
    Ok(buf)
}

/// Where the changed image goes.
pub enum Output<'a> {
    InPlace,
    /// A new file: refused if it exists.
    File(&'a Path),
    /// A new file, replacing a regular file there (`-f`).
    Replace(&'a Path),
    Stdout,
}

/// Whether `path` is an ISO 9660 image (`CD001` in its first volume
/// descriptor), for a clear message when one is given as a config.
pub fn is_iso_image(path: &Path) -> bool {
    let mut magic = [0u8; 5];
    File::open(path)
        .and_then(|mut f| {
            f.seek(SeekFrom::Start(0x8001))?;
            f.read_exact(&mut magic)
        })
        .is_ok()
        && &magic == b"CD001"
}

/// What the copy written is checked for before it is named: the area
/// where it was found and holding what was written (so the walk before it
/// too), and, for `iso embed` (`Some(false)`) and `iso fleet`
/// (`Some(true)`), its kernel arguments.
type Kargs = Option<bool>;

/// Write `area` over the embed area of `src` (read by [`open_area`]), in
/// place or into a copy made from the same descriptor.
fn write_image(
    src: &mut Input,
    e: Extent,
    area: &[u8],
    output: Output,
    kargs: Kargs,
) -> Result<()> {
    let input = src.path.clone();
    // The extent came from the image: check it again against the file we
    // are about to write (it may have changed since it was read), so a write
    // never lands past its end or wraps around.
    let within = |f: &File| -> Result<()> {
        let size = f
            .metadata()
            .with_context(|| format!("reading the size of {}", input.display()))?
            .len();
        match e.offset.checked_add(e.length) {
            Some(end) if end <= size && area.len() as u64 == e.length => Ok(()),
            _ => bail!(
                "the embed area (offset {}, {} bytes) lies outside {} ({size} bytes); not writing (corrupt or changed image?)",
                e.offset,
                e.length,
                input.display()
            ),
        }
    };
    // The copy as written, before it is named: what the checks passed is
    // what is flashed, though the input changed while it was read (its
    // owner writes into it; a network filesystem answers each read anew).
    let check_copy = |out: &mut File| -> Result<()> {
        let changed = || {
            format!(
                "{} changed while it was copied; not writing the copy (start from an ISO only                  you can write)",
                input.display()
            )
        };
        let again = find_area(out).with_context(changed)?;
        if again != e || read_area(out, e).with_context(changed)? != area {
            bail!("{}", changed());
        }
        if let Some(fleet) = kargs {
            let mut iso = Iso9660::open(out).with_context(changed)?;
            kargs::check(&mut iso, &input.display().to_string(), fleet).with_context(changed)?;
        }
        Ok(())
    };
    match output {
        Output::InPlace => {
            let Some(place) = &src.in_place else {
                bail!("{} was not opened for an in-place write", input.display());
            };
            if place.copy {
                // Others may read it: a 0600 copy takes its place (its
                // link of ours stays), the config never in their reach;
                // in the directory held when the input was opened.
                let dir = place.dir.try_clone().context("holding the directory")?;
                let (name, target) = (place.name.clone(), place.target.clone());
                write_copy(
                    src,
                    e,
                    area,
                    &dir,
                    &name,
                    &target,
                    true,
                    &within,
                    &check_copy,
                )?;
                #[cfg(feature = "cli")]
                crate::cli::output::say!(
                    "{} was readable by other users: the image with the config was written as a \
                     new file of mode 0600 in its place",
                    input.display()
                );
                return Ok(());
            }
            let f = &mut src.file;
            within(f)?;
            f.seek(SeekFrom::Start(e.offset))
                .context("seeking to the embed area")?;
            f.write_all(area).context("writing the embed area")?;
            f.sync_all().context("syncing the image")?;
        }
        // One gate for both: -f changes only whether an existing file is
        // replaced (review 17 r17c F5).
        Output::File(path) | Output::Replace(path) => {
            let replace = matches!(output, Output::Replace(_));
            // The CLI's `-o` writer (render's); a build without it (the
            // fuzz targets') writes regular files only.
            #[cfg(not(feature = "cli"))]
            let file = path.to_path_buf();
            #[cfg(feature = "cli")]
            let target = match crate::cli::render::output_file::output_file(path)? {
                // A FIFO, the null device, /dev/stdout: written through.
                crate::cli::render::output_file::OutputFile::Stream { mut file, .. } => {
                    use std::io::IsTerminal;
                    if file.is_terminal() {
                        bail!(
                            "refusing to write an ISO image to a terminal ({}); redirect it or use -o FILE",
                            path.display()
                        );
                    }
                    src.refuse_stream_from_shared()?;
                    return stream_checked_copy(src, e, area, &mut file, &within, &check_copy);
                }
                crate::cli::render::output_file::OutputFile::Replace(target) => target,
            };
            #[cfg(feature = "cli")]
            let file = target.path().to_path_buf();
            // For its message only: the link below never replaces a file.
            if !replace && file.exists() {
                bail!(
                    "{} exists; pass -f to replace it, or choose another -o",
                    path.display()
                );
            }
            // Review 19 r19c F1: the directory through the gate (walked and
            // judged on descriptors, missing ones made), every step after
            // on its descriptor, never its path.
            #[cfg(feature = "cli")]
            {
                let mut made = crate::cli::render::checked_dir::MadeDirs::default();
                let written = target
                    .open_dir(path, Some(&mut made))
                    .and_then(|(dir, name)| {
                        write_copy(
                            src,
                            e,
                            area,
                            dir.fd(),
                            &name,
                            &file,
                            replace,
                            &within,
                            &check_copy,
                        )
                    });
                if written.is_err() {
                    made.remove_all();
                }
                written?;
            }
            #[cfg(not(feature = "cli"))]
            {
                let dir = match file.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p,
                    _ => Path::new("."),
                };
                let held =
                    unnamed::open_dir(dir).with_context(|| format!("opening {}", dir.display()))?;
                let name = file.file_name().context("a path with no file name")?;
                write_copy(
                    src,
                    e,
                    area,
                    &held,
                    name,
                    &file,
                    replace,
                    &within,
                    &check_copy,
                )?;
            }
        }
        Output::Stdout => {
            use std::io::IsTerminal;
            if io::stdout().is_terminal() {
                bail!(
                    "refusing to write an ISO image to a terminal; redirect stdout or use -o FILE"
                );
            }
            src.refuse_stream_from_shared()?;
            // Unbuffered, so that a reader's stop is met (and counted) as
            // it happens.
            use std::os::fd::AsFd;
            let mut out = File::from(
                io::stdout()
                    .as_fd()
                    .try_clone_to_owned()
                    .context("opening stdout")?,
            );
            return stream_checked_copy(src, e, area, &mut out, &within, &check_copy);
        }
    }
    Ok(())
}

/// The image with `area` over the embed area, streamed to `out` (stdout, a
/// FIFO: not read back before it is used) from a private copy made from
/// `src` and checked (`check`) first: an unnamed file of mode 0600 in the
/// temp directory, which no one else may open. Who else may write the
/// input is not decided from its metadata: an ACL entry, a group shared
/// with us, a network or FUSE filesystem, a descriptor opened before all
/// escape it (review 18 r18c F1); what is streamed is what was checked.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
fn stream_checked_copy(
    src: &mut Input,
    e: Extent,
    area: &[u8],
    out: &mut dyn Write,
    within: &dyn Fn(&File) -> Result<()>,
    check: &dyn Fn(&mut File) -> Result<()>,
) -> Result<()> {
    let mut tmp = tempfile::tempfile().with_context(|| {
        format!(
            "creating a private copy of {} to stream (in {}; set TMPDIR for another place)",
            src.path.display(),
            std::env::temp_dir().display()
        )
    })?;
    fill_copy(src, e, area, &mut tmp, within)?;
    check(&mut tmp)?;
    tmp.seek(SeekFrom::Start(0))
        .context("seeking in the private copy")?;
    stream::copy_to_stream(&mut tmp, out, "the image")
}

/// A copy of `src` with `area` written, checked (`check`), renamed onto
/// `path` (over a regular file there only when `replace`). Written unnamed
/// where the filesystem can (`unnamed`): an interrupted run leaves nothing.
/// Every step in the directory held at `dir` (review 19 r19c F1): the
/// temp file made, linked and renamed on its descriptor, never its path
/// (`path`, its name `name` there, is for messages).
#[allow(clippy::too_many_arguments)]
fn write_copy(
    src: &mut Input,
    e: Extent,
    area: &[u8],
    dir: &File,
    name: &std::ffi::OsStr,
    path: &Path,
    replace: bool,
    within: &dyn Fn(&File) -> Result<()>,
    check: &dyn Fn(&mut File) -> Result<()>,
) -> Result<()> {
    let shown = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let creating = || format!("creating a temp file in {}", shown.display());
    let renaming = || format!("renaming into {}", path.display());
    let exists = |e: io::Error| -> anyhow::Error {
        if e.kind() == io::ErrorKind::AlreadyExists {
            anyhow::anyhow!(
                "{} exists; pass -f to replace it, or choose another -o",
                path.display()
            )
        } else {
            anyhow::Error::new(e).context(renaming())
        }
    };
    let c_name = unnamed::c_name(name).with_context(renaming)?;
    if let Some(mut tmp) = unnamed::create(dir).with_context(creating)? {
        fill_copy(src, e, area, &mut tmp, within)?;
        check(&mut tmp)?;
        return unnamed::publish(&tmp, dir, &c_name, replace).map_err(exists);
    }
    let mut tmp = unnamed::Named::new(dir).with_context(creating)?;
    fill_copy(src, e, area, &mut tmp.file, within)?;
    check(&mut tmp.file)?;
    tmp.persist(&c_name, replace).map_err(exists)
}

/// `src` copied into `tmp`, from the descriptor its checks read, with
/// `area` written.
fn fill_copy(
    src: &mut Input,
    e: Extent,
    area: &[u8],
    tmp: &mut File,
    within: &dyn Fn(&File) -> Result<()>,
) -> Result<()> {
    let src = &mut src.file;
    within(src)?;
    src.seek(SeekFrom::Start(0))
        .context("seeking in the image")?;
    // The copy keeps the temp file's 0600, as coreos-installer's output:
    // it holds the embedded config (secrets, often), and an input others
    // may write (a download of mode 0666) gives no output they may.
    // File to file: std uses copy_file_range, which reflinks or
    // copies in the kernel where the filesystem can.
    io::copy(src, tmp).context("copying the image")?;
    tmp.seek(SeekFrom::Start(e.offset))
        .context("seeking to the embed area")?;
    tmp.write_all(area).context("writing the embed area")?;
    Ok(())
}

fn open_area(src: &mut Input) -> Result<(Extent, BTreeMap<String, Vec<u8>>)> {
    let input = &src.path;
    let e = find_area(&mut src.file).with_context(|| input.display().to_string())?;
    let area = read_area(&mut src.file, e)?;
    let reading = || format!("reading the embed area of {}", input.display());
    let (members, dirs) = initramfs::read_paths(&area).with_context(reading)?;
    coreos_members::check(&members, &dirs).with_context(reading)?;
    Ok((e, members))
}

/// What the members kept from an image (all but `config.ign`: network
/// keyfiles) may unpack to before a write compresses them again: a live
/// ISO's hold a few KiB, and the area (256 KiB) takes a few MiB of text at
/// best. An area past it is a hostile one: xz at preset 9 over the 64 MiB
/// it may unpack to takes a minute and 750 MB for `iso fleet`.
const MAX_KEPT: u64 = 1 << 20;

/// Refuse to write back `members` (all but `config.ign`) past [`MAX_KEPT`].
fn check_kept(input: &Path, members: &BTreeMap<String, Vec<u8>>) -> Result<()> {
    let kept: u64 = members
        .iter()
        .filter(|(name, _)| *name != CONFIG_PATH)
        .map(|(name, bytes)| name.len() as u64 + bytes.len() as u64)
        .sum();
    if kept > MAX_KEPT {
        bail!(
            "the embed area of {} holds network keyfiles that unpack to {} KiB, more than {} \
             MiB (a live ISO's hold a few KiB): not compressing them again (corrupt or \
             tampered image?); start from a pristine ISO",
            input.display(),
            kept >> 10,
            MAX_KEPT >> 20
        );
    }
    Ok(())
}

/// `config` in `input`'s embed area, compressed once: what `embed` writes
/// and `fleet` says the size of first. The input stays open from the
/// checks to the write.
pub struct Embedding {
    src: Input,
    e: Extent,
    had_config: bool,
    payload: Vec<u8>,
}

impl Embedding {
    /// The area with `config` in it, other members (network keyfiles)
    /// kept; the image's kernel arguments checked as `iso fleet`'s.
    /// `in_place`: opened to be written in place (see [`Input::open`]).
    pub fn new(input: &Path, config: &[u8], in_place: bool) -> Result<Embedding> {
        let mut src = Input::open(input, in_place)?;
        let (e, mut members) = open_area(&mut src)?;
        check_kept(input, &members)?;
        // Only `iso fleet` embeds a selector that reads the live system.
        check_kargs(&mut src, true)?;
        let had_config = members
            .insert(CONFIG_PATH.into(), config.to_vec())
            .is_some();
        Ok(Embedding {
            src,
            e,
            had_config,
            payload: write_members(&members)?,
        })
    }

    /// (compressed archive bytes, area bytes).
    pub fn size(&self) -> (usize, u64) {
        (self.payload.len(), self.e.length)
    }

    /// Write it into the input read by [`Embedding::new`], refusing to
    /// replace a config unless `force`.
    pub fn write(mut self, force: bool, output: Output) -> Result<()> {
        if self.had_config && !force {
            bail!(
                "{} already has an embedded Ignition config; use -f to replace it",
                self.src.path.display()
            );
        }
        let area = fill_area(&self.payload, self.e.length)?;
        write_image(&mut self.src, self.e, &area, output, Some(true))
    }
}

/// Refuse an image whose kernel arguments make its machines run another
/// config than the embedded one, or (`fleet`) change what the fleet's
/// selector reads on the live system (`kargs::check`).
fn check_kargs(src: &mut Input, fleet: bool) -> Result<()> {
    let name = src.path.display().to_string();
    let mut iso = Iso9660::open(&mut src.file).with_context(|| name.clone())?;
    kargs::check(&mut iso, &name, fleet)
}

/// `iso embed`: put `config` in the area (refusing to replace one unless
/// `force`), keeping network keyfiles. An image whose kernel arguments
/// run another config is refused, with `force` too.
pub fn embed(input: &Path, config: &[u8], force: bool, output: Output) -> Result<()> {
    let mut src = Input::open(input, matches!(output, Output::InPlace))?;
    let (e, mut members) = open_area(&mut src)?;
    check_kept(input, &members)?;
    // -f replaces an embedded config; the arguments are no part of it,
    // and the user's own (console, network) would go with a reset.
    check_kargs(&mut src, false).map_err(|e| {
        anyhow::anyhow!("{e:#} (refused with -f too: -f replaces an embedded config only)")
    })?;
    if members.contains_key(CONFIG_PATH) && !force {
        bail!(
            "{} already has an embedded Ignition config; use -f to replace it",
            input.display()
        );
    }
    members.insert(CONFIG_PATH.into(), config.to_vec());
    let area = fill_area(&write_members(&members)?, e.length)?;
    write_image(&mut src, e, &area, output, Some(false))
}

/// `iso show`: the embedded config.
pub fn show(input: &Path) -> Result<Vec<u8>> {
    let (config, kargs) = show_with_kargs(input)?;
    kargs?;
    config.with_context(|| format!("{} has no embedded Ignition config", input.display()))
}

/// The embedded config (None without one), and the refusal of the image's
/// kernel arguments when they make its machines run another config; both
/// read through one descriptor.
pub fn show_with_kargs(input: &Path) -> Result<(Option<Vec<u8>>, Result<()>)> {
    let mut src = Input::open(input, false)?;
    let (_, mut members) = open_area(&mut src)?;
    Ok((members.remove(CONFIG_PATH), check_kargs(&mut src, false)))
}

/// `iso remove`: drop the config, keep network keyfiles (zeros if none).
pub fn remove(input: &Path, output: Output) -> Result<()> {
    let mut src = Input::open(input, matches!(output, Output::InPlace))?;
    let (e, mut members) = open_area(&mut src)?;
    members.remove(CONFIG_PATH);
    check_kept(input, &members)?;
    let area = fill_area(&write_members(&members)?, e.length)?;
    write_image(&mut src, e, &area, output, None)
}

/// Offset and length of the embed area (for tests and `dd`).
pub fn area_of(input: &Path) -> Result<Extent> {
    let mut f = File::open(input).with_context(|| format!("opening {}", input.display()))?;
    find_area(&mut f).with_context(|| input.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(v: &[(&str, &[u8])]) -> BTreeMap<String, Vec<u8>> {
        v.iter().map(|(k, b)| (k.to_string(), b.to_vec())).collect()
    }

    /// Names from the image are bounded work: a member named a million
    /// `a/` deep (2 MiB, 1,400 bytes in xz) took hours to write back (each
    /// parent directory joined anew and looked for in a list), now refused
    /// as the kernel would skip it; written back, the archive is bounded.
    #[test]
    fn deep_member_names_are_bounded_work() {
        let deep = format!("{}f", "a/".repeat(1 << 20));
        let (tx, rx) = std::sync::mpsc::channel();
        let name = deep.clone();
        std::thread::spawn(move || {
            let m = members(&[(&name, b"x")]);
            let _ = tx.send(write_members(&m).map(|_| ()).map_err(|e| e.to_string()));
        });
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("writing a deep member back took more than a minute");
        assert_eq!(
            got.unwrap_err(),
            "the archives in the embed area unpack to more than 64 MiB (corrupt image?)"
        );
        let mut cpio = Vec::new();
        cpio::NewcBuilder::new(&deep)
            .mode(0o100_600)
            .write(&mut cpio, 1)
            .finish()
            .unwrap();
        cpio::newc::trailer(&mut cpio).unwrap();
        let e = read_members(&cpio).unwrap_err().to_string();
        assert!(e.contains("which the kernel skips"), "{e}");
        // Many members in directories of their own: each written once (read
        // back up to the members a live ISO's area could hold).
        let names: Vec<String> = (0..20_000).map(|i| format!("d{i}/e/f")).collect();
        let m: BTreeMap<String, Vec<u8>> = names.iter().map(|n| (n.clone(), Vec::new())).collect();
        let area = write_members(&m).unwrap();
        let e = read_members(&area).unwrap_err().to_string();
        assert!(e.contains("more than 4096 members"), "{e}");
        let m: BTreeMap<String, Vec<u8>> = m.into_iter().take(1365).collect();
        assert_eq!(
            read_members(&write_members(&m).unwrap()).unwrap().len(),
            1365
        );
    }

    #[test]
    fn archive_round_trips_with_padding_and_concatenation() {
        let m = members(&[
            ("config.ign", b"{}"),
            ("etc/coreos-firstboot-network/eth0.nmconnection", b"[c]\n"),
        ]);
        let mut area = write_members(&m).unwrap();
        assert!(area.starts_with(b"\xfd7zXZ\x00"));
        // A second archive after zero padding overrides the first's config.
        area.extend_from_slice(&[0u8; 12]);
        area.extend(write_members(&members(&[("config.ign", b"{\"x\":1}")])).unwrap());
        area.resize(area.len() + 1000, 0);
        let back = read_members(&area).unwrap();
        assert_eq!(back["config.ign"], b"{\"x\":1}");
        assert_eq!(
            back["etc/coreos-firstboot-network/eth0.nmconnection"],
            b"[c]\n"
        );
        assert!(read_members(&[0u8; 64]).unwrap().is_empty());
        assert!(write_members(&BTreeMap::new()).unwrap().is_empty());
    }
    #[test]
    fn writes_outside_the_image_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("small.iso");
        std::fs::write(&p, [0u8; 100]).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        for e in [
            Extent {
                offset: 90,
                length: 20,
            },
            Extent {
                offset: u64::MAX - 4,
                length: 10,
            },
        ] {
            let area = vec![1u8; e.length as usize];
            let mut src = Input::open(&p, true).unwrap();
            let err = write_image(&mut src, e, &area, Output::InPlace, None).unwrap_err();
            assert!(err.to_string().contains("outside"), "{err}");
        }
        assert_eq!(std::fs::read(&p).unwrap(), [0u8; 100]);
    }

    #[test]
    fn garbage_and_oversize_are_refused() {
        assert!(read_members(b"garbage").is_err());
        assert!(read_members(b"\xfd7zXZ\x00\x00\x00").is_err());
        let e = fill_area(&[1u8; 10], 4).unwrap_err().to_string();
        assert!(e.contains("10") && e.contains('4'), "{e}");
        assert_eq!(fill_area(&[1u8; 2], 4).unwrap(), vec![1, 1, 0, 0]);
    }
}
