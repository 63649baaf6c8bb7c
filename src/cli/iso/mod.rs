//! CoreOS live ISO Ignition embedding, compatible with coreos-installer:
//! the embed area is found through `COREOS/IGNINFO.JSO` (or
//! `IMAGES/IGNITION.IMG`) and holds an xz-compressed newc cpio archive with
//! `config.ign` (and whatever else is there, e.g. network keyfiles), then
//! zeros. The kernel loads it as an extra initramfs.

#[cfg(feature = "cli")]
pub mod command;
#[cfg(feature = "cli")]
pub mod fleet;
pub mod ignition;
pub mod iso9660;
#[cfg(feature = "cli")]
pub mod reach;
mod unnamed;

pub use ignition::{Checked, IGNITION_VERSIONS, check_ignition};

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};

use iso9660::{Extent, Iso9660, NotFound};

/// Where the config lives in the initramfs.
pub const CONFIG_PATH: &str = "config.ign";

/// Sizes past any live ISO's, refused as a corrupt image before they are
/// read into memory: the embed area (256 KiB in every CoreOS live ISO),
/// COREOS/IGNINFO.JSO (one line), and the area's archives decompressed, all
/// of them together (an area of many small archives is bounded too).
const MAX_AREA: u64 = 16 << 20;
const MAX_IGNINFO: u64 = 64 << 10;
const MAX_UNPACKED: u64 = 64 << 20;
/// PATH_MAX: the kernel's initramfs unpacker skips a member whose name
/// (with its NUL) is longer.
const MAX_NAME: usize = 4096;

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
            let area = Extent {
                offset: f.offset + offset,
                length,
            };
            check_area_size(area)?;
            iso.check_within(area, "the embed area")?;
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

fn unpacked_too_large() -> anyhow::Error {
    anyhow::anyhow!(
        "the archives in the embed area unpack to more than {} MiB (corrupt image?)",
        MAX_UNPACKED >> 20
    )
}

/// Read the members of an embed area as coreos-installer reads it (and the
/// kernel unpacks it): archives one after another, each compressed (one xz
/// or gzip stream) or not, zero padding between them. An uncompressed
/// archive ends at its trailer and the next archive follows it; inside a
/// compressed stream only zeros may follow the trailer (coreos-installer
/// refuses more; the kernel would unpack it as another archive). Later
/// copies of a path win, as the kernel unpacks them.
pub fn read_members(area: &[u8]) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut members = BTreeMap::new();
    let mut rest = area;
    // What the archives before this one unpacked to.
    let mut unpacked = 0u64;
    loop {
        let skip = rest.iter().take_while(|&&b| b == 0).count();
        rest = &rest[skip..];
        if rest.is_empty() {
            break;
        }
        let budget = MAX_UNPACKED - unpacked;
        let used = if rest.starts_with(b"\xfd7zXZ\x00") {
            let (cpio, used) = xz_one_stream(rest, budget)?;
            unpacked += cpio.len() as u64;
            read_compressed(&cpio, &mut members)?;
            used
        } else if rest.starts_with(b"\x1f\x8b") {
            let mut cur = Cursor::new(rest);
            let mut out = Vec::new();
            {
                let dec = flate2::bufread::GzDecoder::new(&mut cur);
                dec.take(budget + 1)
                    .read_to_end(&mut out)
                    .context("decompressing the embedded archive (gzip)")?;
            }
            if out.len() as u64 > budget {
                return Err(unpacked_too_large());
            }
            unpacked += out.len() as u64;
            read_compressed(&out, &mut members)?;
            cur.position() as usize
        } else if rest.starts_with(b"070701") || rest.starts_with(b"070702") {
            // Up to its trailer: what follows is the next archive.
            let used = read_cpio(rest, &mut members)?;
            unpacked += used as u64;
            if unpacked > MAX_UNPACKED {
                return Err(unpacked_too_large());
            }
            used
        } else {
            bail!("the embed area holds something that is not an initramfs archive (corrupt?)");
        };
        if used == 0 {
            bail!("the embed area holds an empty archive (corrupt?)");
        }
        rest = &rest[used.min(rest.len())..];
    }
    Ok(members)
}

/// The most memory the xz decoder may take.
const XZ_MEMLIMIT: u64 = 256 << 20;

/// Decode the one xz stream at the start of `data`, at most `budget`
/// bytes of it: (output, bytes used).
fn xz_one_stream(data: &[u8], budget: u64) -> Result<(Vec<u8>, usize)> {
    // The dictionary is reserved as the archive declares it (up to 4 GiB):
    // bounded. coreos-installer's (and our) preset 9 needs 65 MiB.
    let mut stream = xz2::stream::Stream::new_stream_decoder(XZ_MEMLIMIT, 0)
        .context("creating the xz decoder")?;
    let mut out = Vec::with_capacity(data.len() * 4);
    loop {
        if out.capacity() - out.len() < 64 * 1024 {
            out.reserve(256 * 1024);
        }
        let before = stream.total_in() as usize;
        let status = match stream.process_vec(&data[before..], &mut out, xz2::stream::Action::Run) {
            Err(xz2::stream::Error::MemLimit) => bail!(
                "the embedded xz archive needs more than {} MiB of memory to decompress; \
                 is this image from coreos-installer?",
                XZ_MEMLIMIT >> 20
            ),
            other => other.context("decompressing the embedded archive (xz; corrupt?)")?,
        };
        if out.len() as u64 > budget {
            return Err(unpacked_too_large());
        }
        if status == xz2::stream::Status::StreamEnd {
            return Ok((out, stream.total_in() as usize));
        }
        if stream.total_in() as usize >= data.len() && status != xz2::stream::Status::MemNeeded {
            bail!("the embedded xz archive is truncated");
        }
    }
}

/// The members of the cpio archive a compressed stream unpacked to.
fn read_compressed(cpio: &[u8], members: &mut BTreeMap<String, Vec<u8>>) -> Result<()> {
    let end = read_cpio(cpio, members)?;
    if cpio[end..].iter().any(|&b| b != 0) {
        bail!(
            "the embed area holds data after the end of an archive inside its compressed \
             stream, which coreos-installer refuses and the kernel would unpack as another \
             archive (corrupt or tampered image?)"
        );
    }
    Ok(())
}

/// The members of the cpio archive at the start of `data` into `members`:
/// the bytes it takes, up to and with its trailer (all of `data` when only
/// zeros or nothing follow its last member).
fn read_cpio(data: &[u8], members: &mut BTreeMap<String, Vec<u8>>) -> Result<usize> {
    let mut cur = Cursor::new(data);
    loop {
        // Archives may be followed by zero padding.
        let buf = cur.fill_buf()?;
        if buf.is_empty() || buf.iter().all(|&b| b == 0) {
            return Ok(data.len());
        }
        let mut reader = cpio::NewcReader::new(&mut cur)
            .context("reading the embedded cpio archive (corrupt?)")?;
        let entry = reader.entry();
        if entry.is_trailer() {
            reader
                .finish()
                .context("reading the embedded cpio archive's trailer (corrupt?)")?;
            return Ok(cur.position() as usize);
        }
        let name = entry.name().to_string();
        // The kernel skips a longer name when it unpacks the archive.
        if name.len() >= MAX_NAME {
            bail!(
                "the embed area holds a file name of {} bytes, longer than the kernel unpacks ({MAX_NAME}; corrupt image?)",
                name.len()
            );
        }
        let is_file = entry.mode() & 0o170000 == 0o100000;
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .context("reading an embedded file")?;
        reader
            .finish()
            .context("reading the embedded cpio archive")?;
        if is_file {
            members.insert(name, bytes);
        }
    }
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

/// The regular file a replacing `-o` writes: `path`, or the regular file a
/// symlink there resolves to; None when nothing is there. Anything else (a
/// directory, a device, a FIFO, a socket) is not replaced by a copy.
fn replaced_file(path: &Path) -> Result<Option<std::path::PathBuf>> {
    let meta = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        other => other.with_context(|| format!("reading {}", path.display()))?,
    };
    if meta.is_file() {
        return Ok(Some(path.to_path_buf()));
    }
    let target = std::fs::canonicalize(path).ok();
    match target {
        Some(t) if meta.file_type().is_symlink() && t.is_file() => Ok(Some(t)),
        _ => bail!(
            "{} exists and is not a regular file (or a symlink to one); not replacing it with \
             an ISO image: choose another -o",
            path.display()
        ),
    }
}

/// Write `area` over the embed area, in place or into a copy.
fn write_image(input: &Path, e: Extent, area: &[u8], output: Output) -> Result<()> {
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
    match output {
        Output::InPlace => {
            let mut f = OpenOptions::new()
                .write(true)
                .open(input)
                .with_context(|| format!("opening {} for writing", input.display()))?;
            within(&f)?;
            f.seek(SeekFrom::Start(e.offset))
                .context("seeking to the embed area")?;
            f.write_all(area).context("writing the embed area")?;
            f.sync_all().context("syncing the image")?;
        }
        Output::File(path) => {
            // The CLI's `-o` writer (render's); a build without it (the
            // fuzz targets') writes regular files only.
            #[cfg(not(feature = "cli"))]
            let file = path.to_path_buf();
            #[cfg(feature = "cli")]
            let file = match crate::cli::render::output_file::output_file(path)? {
                // A FIFO, a character device, /dev/stdout: written through.
                crate::cli::render::output_file::OutputFile::Stream(file) => {
                    use std::io::IsTerminal;
                    if file.is_terminal() {
                        bail!(
                            "refusing to write an ISO image to a terminal ({}); redirect it or use -o FILE",
                            path.display()
                        );
                    }
                    return stream_image(input, e, area, &mut io::BufWriter::new(file), within);
                }
                crate::cli::render::output_file::OutputFile::Replace(file) => file,
            };
            if file.exists() {
                bail!(
                    "{} exists; pass -f to replace it, or choose another -o",
                    path.display()
                );
            }
            write_copy(input, e, area, path, false, &within)?;
        }
        Output::Replace(path) => match replaced_file(path)? {
            Some(target) => write_copy(input, e, area, &target, true, &within)?,
            None => write_copy(input, e, area, path, false, &within)?,
        },
        Output::Stdout => {
            use std::io::IsTerminal;
            if io::stdout().is_terminal() {
                bail!(
                    "refusing to write an ISO image to a terminal; redirect stdout or use -o FILE"
                );
            }
            return stream_image(input, e, area, &mut io::stdout().lock(), within);
        }
    }
    Ok(())
}

/// The image with `area` over the embed area, written to `out` as it is
/// read.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
fn stream_image(
    input: &Path,
    e: Extent,
    area: &[u8],
    out: &mut dyn Write,
    within: impl Fn(&File) -> Result<()>,
) -> Result<()> {
    let mut src = File::open(input).with_context(|| format!("opening {}", input.display()))?;
    within(&src)?;
    io::copy(&mut (&mut src).take(e.offset), out).context("writing the image")?;
    out.write_all(area).context("writing the image")?;
    src.seek(SeekFrom::Start(e.offset + e.length))
        .context("seeking in the image")?;
    io::copy(&mut src, out).context("writing the image")?;
    out.flush().context("writing the image")?;
    Ok(())
}

/// A copy of `input` with `area` written, renamed onto `path` (over a
/// regular file there only when `replace`). Written unnamed where the
/// filesystem can (`unnamed`): an interrupted run leaves nothing.
fn write_copy(
    input: &Path,
    e: Extent,
    area: &[u8],
    path: &Path,
    replace: bool,
    within: &dyn Fn(&File) -> Result<()>,
) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let creating = || format!("creating a temp file in {}", dir.display());
    let renaming = || format!("renaming into {}", path.display());
    if let Some(mut tmp) = unnamed::create(dir).with_context(creating)? {
        fill_copy(input, e, area, &mut tmp, within)?;
        return unnamed::publish(&tmp, dir, path, replace).with_context(renaming);
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".kubelet-labeler-iso-")
        .tempfile_in(dir)
        .with_context(creating)?;
    fill_copy(input, e, area, tmp.as_file_mut(), within)?;
    if replace {
        tmp.persist(path)
    } else {
        tmp.persist_noclobber(path)
    }
    .map_err(|e| e.error)
    .with_context(renaming)?;
    Ok(())
}

/// `input` copied into `tmp` (for `path`), with `area` written.
fn fill_copy(
    input: &Path,
    e: Extent,
    area: &[u8],
    tmp: &mut File,
    within: &dyn Fn(&File) -> Result<()>,
) -> Result<()> {
    let mut src = File::open(input).with_context(|| format!("opening {}", input.display()))?;
    within(&src)?;
    // The copy keeps the temp file's 0600, as coreos-installer's output:
    // it holds the embedded config (secrets, often), and an input others
    // may write (a download of mode 0666) gives no output they may.
    // File to file: std uses copy_file_range, which reflinks or
    // copies in the kernel where the filesystem can.
    io::copy(&mut src, tmp).context("copying the image")?;
    tmp.seek(SeekFrom::Start(e.offset))
        .context("seeking to the embed area")?;
    tmp.write_all(area).context("writing the embed area")?;
    Ok(())
}

fn open_area(input: &Path) -> Result<(Extent, BTreeMap<String, Vec<u8>>)> {
    let mut f = File::open(input).with_context(|| format!("opening {}", input.display()))?;
    let e = find_area(&mut f).with_context(|| input.display().to_string())?;
    let area = read_area(&mut f, e)?;
    let members = read_members(&area)
        .with_context(|| format!("reading the embed area of {}", input.display()))?;
    Ok((e, members))
}

/// `iso embed`: put `config` in the area (refusing to replace one unless
/// `force`), keeping other members.
pub fn embed(input: &Path, config: &[u8], force: bool, output: Output) -> Result<()> {
    let (e, mut members) = open_area(input)?;
    if members.contains_key(CONFIG_PATH) && !force {
        bail!(
            "{} already has an embedded Ignition config; use -f to replace it",
            input.display()
        );
    }
    members.insert(CONFIG_PATH.into(), config.to_vec());
    let area = fill_area(&write_members(&members)?, e.length)?;
    write_image(input, e, &area, output)
}

/// What embedding `config` would take: (compressed archive bytes, area
/// bytes), other members of the area included.
pub fn embedded_size(input: &Path, config: &[u8]) -> Result<(usize, u64)> {
    let (e, mut members) = open_area(input)?;
    members.insert(CONFIG_PATH.into(), config.to_vec());
    Ok((write_members(&members)?.len(), e.length))
}

/// `iso show`: the embedded config.
pub fn show(input: &Path) -> Result<Vec<u8>> {
    let (_, mut members) = open_area(input)?;
    members
        .remove(CONFIG_PATH)
        .with_context(|| format!("{} has no embedded Ignition config", input.display()))
}

/// `iso remove`: drop the config, keep other members (zeros if none).
pub fn remove(input: &Path, output: Output) -> Result<()> {
    let (e, mut members) = open_area(input)?;
    members.remove(CONFIG_PATH);
    let area = fill_area(&write_members(&members)?, e.length)?;
    write_image(input, e, &area, output)
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

    /// A small archive that unpacks past the limit (a corrupt or forged
    /// area) is refused, not unpacked into memory without end.
    #[test]
    fn archives_unpacking_past_the_limit_are_refused() {
        use std::io::Write;
        let zeros = vec![0u8; 1 << 20];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let mut xz = xz2::write::XzEncoder::new(Vec::new(), 0);
        for _ in 0..=(MAX_UNPACKED >> 20) {
            gz.write_all(&zeros).unwrap();
            xz.write_all(&zeros).unwrap();
        }
        for area in [gz.finish().unwrap(), xz.finish().unwrap()] {
            assert!(area.len() < 256 << 10, "{}", area.len());
            let e = read_members(&area).unwrap_err().to_string();
            assert_eq!(
                e,
                "the archives in the embed area unpack to more than 64 MiB (corrupt image?)"
            );
        }
    }

    /// An archive declaring a 4 GiB dictionary for a few bytes: refused
    /// before the decoder reserves it; preset 9 (65 MiB) still reads.
    #[test]
    fn an_xz_dictionary_past_the_limit_is_refused() {
        use std::io::Write;
        let mut xz = xz2::write::XzEncoder::new(Vec::new(), 9);
        xz.write_all(b"070701 tiny").unwrap();
        let mut area = xz.finish().unwrap();
        assert!(xz_one_stream(&area, 1 << 20).is_ok());
        // The block header after the 12-byte stream header: its size, its
        // flags (one filter, no sizes), LZMA2's id and property size, then
        // the dictionary size byte (40: 4 GiB - 1), zero padding and CRC32.
        assert_eq!(area[13..16], [0x00, 0x21, 0x01]);
        let header_len = (usize::from(area[12]) + 1) * 4;
        area[16] = 40;
        let mut crc = flate2::Crc::new();
        crc.update(&area[12..12 + header_len - 4]);
        area[12 + header_len - 4..12 + header_len].copy_from_slice(&crc.sum().to_le_bytes());
        let e = xz_one_stream(&area, 1 << 20).unwrap_err().to_string();
        assert!(e.contains("more than 256 MiB of memory"), "{e}");
    }

    /// Many small archives, each under the limit, together past it (an
    /// area of 16 MiB holds over a thousand 64 MiB xz bombs): refused as
    /// soon as their sum passes it, not unpacked into memory without end.
    #[test]
    fn archives_unpacking_past_the_limit_together_are_refused() {
        use std::io::Write;
        let zeros = vec![0u8; 1 << 20];
        let mut archives = Vec::new();
        for n in 0..3 {
            let mut cpio = Vec::new();
            let entry = cpio::NewcBuilder::new(&format!("f{n}")).mode(0o100_600);
            let mut w = entry.write(&mut cpio, 30 << 20);
            for _ in 0..30 {
                w.write_all(&zeros).unwrap();
            }
            w.finish().unwrap();
            cpio::newc::trailer(&mut cpio).unwrap();
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&cpio).unwrap();
            archives.push(gz.finish().unwrap());
        }
        let area = archives.concat();
        assert!(area.len() < 1 << 20, "{}", area.len());
        let e = read_members(&area).unwrap_err().to_string();
        assert_eq!(
            e,
            "the archives in the embed area unpack to more than 64 MiB (corrupt image?)"
        );
        // Two of them (60 MiB in all) are read.
        let two = archives[..2].concat();
        assert_eq!(read_members(&two).map(|m| m.len()).ok(), Some(2));
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
        assert!(e.contains("longer than the kernel unpacks"), "{e}");
        // Many members in directories of their own: each written once.
        let names: Vec<String> = (0..20_000).map(|i| format!("d{i}/e/f")).collect();
        let m: BTreeMap<String, Vec<u8>> = names.iter().map(|n| (n.clone(), Vec::new())).collect();
        let area = write_members(&m).unwrap();
        assert_eq!(read_members(&area).unwrap().len(), 20_000);
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

    /// An uncompressed archive with its trailer.
    fn newc(v: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, data) in v {
            let mut w = cpio::NewcBuilder::new(name)
                .mode(0o100_600)
                .write(&mut out, data.len() as u32);
            w.write_all(data).unwrap();
            w.finish().unwrap();
        }
        cpio::newc::trailer(&mut out).unwrap();
        out
    }

    fn xz(data: &[u8]) -> Vec<u8> {
        let mut xz = xz2::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(data).unwrap();
        xz.finish().unwrap()
    }

    /// The area is read on after an uncompressed archive's trailer (the
    /// early-microcode layout: the kernel and coreos-installer read on),
    /// and the later copy of a member wins, as the kernel unpacks it.
    #[test]
    fn archives_after_an_uncompressed_one_are_read() {
        let mut area = newc(&[("config.ign", b"decoy"), ("etc/a", b"a")]);
        area.extend(xz(&newc(&[("config.ign", b"real")])));
        area.extend([0u8; 7]);
        area.extend(newc(&[("etc/b", b"b")]));
        area.extend([0u8; 100]);
        let m = read_members(&area).unwrap();
        assert_eq!(m["config.ign"], b"real");
        assert_eq!(m["etc/a"], b"a");
        assert_eq!(m["etc/b"], b"b");
        // Two uncompressed archives back to back, no padding between.
        let two = [newc(&[("config.ign", b"1")]), newc(&[("config.ign", b"2")])].concat();
        assert_eq!(read_members(&two).unwrap()["config.ign"], b"2");
        // What follows a trailer is an archive or zeros.
        let mut junk = newc(&[("config.ign", b"1")]);
        junk.extend(b"junk");
        assert!(read_members(&junk).is_err());
    }

    /// A second archive inside one compressed stream (the kernel unpacks
    /// it) is refused, as coreos-installer refuses it; zeros there are not.
    #[test]
    fn data_after_the_trailer_inside_a_compressed_stream_is_refused() {
        let two = [
            newc(&[("config.ign", b"decoy")]),
            newc(&[("config.ign", b"real")]),
        ]
        .concat();
        for area in [xz(&two), {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&two).unwrap();
            gz.finish().unwrap()
        }] {
            let e = read_members(&area).unwrap_err().to_string();
            assert!(
                e.contains("after the end of an archive inside its compressed"),
                "{e}"
            );
        }
        let mut padded = newc(&[("config.ign", b"1")]);
        padded.extend([0u8; 512]);
        assert_eq!(read_members(&xz(&padded)).unwrap()["config.ign"], b"1");
    }

    #[test]
    fn writes_outside_the_image_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("small.iso");
        std::fs::write(&p, [0u8; 100]).unwrap();
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
            let err = write_image(&p, e, &area, Output::InPlace).unwrap_err();
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
