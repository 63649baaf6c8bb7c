//! The embed area as the Linux kernel unpacks it at boot (init/initramfs.c:
//! unpack_to_rootfs and its cpio state machine), or refused.
//!
//! The kernel reads the area as one stream: zero bytes are skipped; a '0' at
//! an offset that is a multiple of 4 starts an uncompressed newc member; any
//! other byte starts a compressed stream (its magic picks the decompressor),
//! whose output is unpacked the same way and which ends where the
//! decompressor stopped reading. A member's name is a C string opened
//! relative to `/` as it is (never cleaned); a member of another type at an
//! existing path unlinks what is there first; a regular file with a link
//! count of 2 or more is linked to an earlier member with its inode number;
//! `TRAILER!!!` only ends a hard-link table. Where the kernel would stop
//! ("no cpio magic", "broken padding", "invalid magic", a decompressor
//! error), what follows is never unpacked.
//!
//! We accept what coreos-installer writes and reads (files, directories,
//! xz or gzip streams, uncompressed archives before them) and compute what
//! the kernel leaves at each path; anything whose effect at boot we would
//! not see (a name that is not a clean path or holds a NUL, a hard link, a
//! symlink or device left in the area, a member at an offset the kernel
//! does not read, a compression the kernel may not have) is refused with
//! the member named, so `iso show` never shows a decoy and `iso embed`,
//! `iso remove` and `iso fleet` never write a member back after ours that
//! the kernel would write over it.

use std::collections::BTreeMap;
use std::io::{Cursor, Read};

use anyhow::{Context, Result, bail};

use super::CONFIG_PATH;

/// The area's archives decompressed, all of them together (a live ISO's:
/// a few KiB).
pub(super) const MAX_UNPACKED: u64 = 64 << 20;
/// PATH_MAX: the kernel skips a member whose name (with its NUL) is longer.
const PATH_MAX: usize = 4096;
/// Archives and compressed streams in one area: a live ISO's holds one to
/// three (an early-microcode archive, the config's).
const MAX_ARCHIVES: usize = 64;
/// Members in one area, and components in one name: a live ISO's area
/// holds a few files, three deep. Bounds the work of checking each name's
/// parents (a 64 MiB area of 4 KiB names 2,000 deep took over a minute).
const MAX_MEMBERS: usize = 4096;
const MAX_DEPTH: usize = 32;
/// The most memory the xz decoder may take.
const XZ_MEMLIMIT: u64 = 256 << 20;

pub(super) fn unpacked_too_large() -> anyhow::Error {
    anyhow::anyhow!(
        "the archives in the embed area unpack to more than {} MiB (corrupt image?)",
        MAX_UNPACKED >> 20
    )
}

/// What the kernel leaves at a path.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    File,
    Dir,
    Symlink,
    Device,
    Fifo,
    Socket,
}

impl Kind {
    fn of(mode: u32) -> Option<Kind> {
        Some(match mode & 0o170_000 {
            0o100_000 => Kind::File,
            0o040_000 => Kind::Dir,
            0o120_000 => Kind::Symlink,
            0o020_000 | 0o060_000 => Kind::Device,
            0o010_000 => Kind::Fifo,
            0o140_000 => Kind::Socket,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Kind::File => "a regular file",
            Kind::Dir => "a directory",
            Kind::Symlink => "a symlink",
            Kind::Device => "a device node",
            Kind::Fifo => "a FIFO",
            Kind::Socket => "a socket",
        }
    }
}

/// Read the members of an embed area as the kernel unpacks it: the regular
/// files it leaves, by path (later members at a path replace earlier ones,
/// of any type). Refused: whatever the kernel would do otherwise than we
/// read it (see the module's comment), and whatever `iso embed` could not
/// write back as it is (a symlink, a device, a FIFO or a socket left in the
/// area; anything but a regular file at `config.ign`).
pub fn read_members(area: &[u8]) -> Result<BTreeMap<String, Vec<u8>>> {
    Ok(read_paths(area)?.0)
}

/// The regular files the area leaves, by path, and its directories.
pub(super) type Paths = (BTreeMap<String, Vec<u8>>, Vec<String>);

/// `read_members`, and the directories the area leaves.
pub(super) fn read_paths(area: &[u8]) -> Result<Paths> {
    let mut tree = Tree::default();
    let mut pos = 0;
    let mut archives = 0;
    // What the archives before this one unpacked to.
    let mut unpacked = 0u64;
    // One decompression buffer for every stream.
    let mut out = Vec::new();
    // After an uncompressed archive, the kernel checks that the next
    // non-zero byte is 4-aligned ("broken padding"); after a compressed
    // stream only a '0' must be. The image's own initramfs before the area
    // may end in either.
    let mut after_uncompressed = true;
    while pos < area.len() {
        let byte = area[pos];
        if byte == 0 {
            pos += 1;
            continue;
        }
        if pos % 4 != 0 && (byte == b'0' || after_uncompressed) {
            bail!(
                "the embed area holds data at offset {pos}, not a multiple of 4, where the \
                 kernel stops unpacking (it would not read this archive, nor any after it); \
                 refusing a corrupt or tampered image"
            );
        }
        archives += 1;
        if archives > MAX_ARCHIVES {
            bail!(
                "the embed area holds more than {MAX_ARCHIVES} archives (a live ISO's holds one \
                 to three; corrupt or tampered image?)"
            );
        }
        let budget = MAX_UNPACKED - unpacked;
        if byte == b'0' {
            let end = tree.archive(area, pos)?;
            unpacked += (end - pos) as u64;
            if unpacked > MAX_UNPACKED {
                return Err(unpacked_too_large());
            }
            pos = end;
            after_uncompressed = true;
            continue;
        }
        let rest = &area[pos..];
        let used = if rest.starts_with(b"\xfd7zXZ\x00") {
            xz_one_stream(rest, budget, &mut out)?
        } else if rest.starts_with(b"\x1f\x8b") {
            gzip_one_stream(rest, budget, &mut out)?
        } else {
            bail!(
                "the embed area holds {} at offset {pos}, where the kernel stops unpacking; \
                 refusing a corrupt or tampered image",
                compression(rest)
            );
        };
        unpacked += out.len() as u64;
        if used == 0 || out.is_empty() {
            bail!("the embed area holds an empty archive (corrupt?)");
        }
        let end = tree.archive(&out, 0)?;
        if out[end..].iter().any(|&b| b != 0) {
            bail!(
                "the embed area holds data after the end of an archive inside its compressed \
                 stream, which coreos-installer refuses and the kernel would unpack as another \
                 archive (corrupt or tampered image?)"
            );
        }
        pos += used;
        after_uncompressed = false;
    }
    tree.into_files()
}

/// What a stream the kernel would pick a decompressor for (by its first two
/// bytes, lib/decompress.c) is, for a refusal.
fn compression(data: &[u8]) -> String {
    let name = match data {
        [0x1f, 0x9e, ..] => "gzip (old)",
        [0x42, 0x5a, ..] => "bzip2",
        [0x5d, 0x00, ..] => "lzma",
        [0xfd, 0x37, ..] => "xz",
        [0x89, 0x4c, ..] => "lzo",
        [0x02, 0x21, ..] => "lz4",
        [0x28, 0xb5, ..] => "zstd",
        _ => {
            return "something that is not an initramfs archive (no cpio header, no \
                    compression the kernel knows)"
                .into();
        }
    };
    format!(
        "a {name} stream, which kubelet-labeler does not read (coreos-installer writes xz) \
         and a kernel without {name} support does not unpack"
    )
}

/// Decode the one xz stream at the start of `data` into `out`, at most
/// `budget` bytes of it: the bytes it takes.
fn xz_one_stream(data: &[u8], budget: u64, out: &mut Vec<u8>) -> Result<usize> {
    // The kernel's xz decoder takes no integrity check or CRC32 (what
    // coreos-installer writes, what the kernel documents), and stops on
    // others: what follows would not be unpacked.
    match data.get(7) {
        Some(0x00 | 0x01) => {}
        _ => bail!(
            "the embed area holds an xz stream with an integrity check other than CRC32, \
             which the kernel does not unpack (it stops there); refusing a corrupt or \
             tampered image"
        ),
    }
    // The dictionary is reserved as the archive declares it (up to 4 GiB):
    // bounded. coreos-installer's (and our) preset 9 needs 65 MiB.
    let mut stream = xz2::stream::Stream::new_stream_decoder(XZ_MEMLIMIT, 0)
        .context("creating the xz decoder")?;
    out.clear();
    // Reserved once for every stream of the area, bounded.
    out.reserve(
        (data.len().saturating_mul(4) as u64)
            .min(budget)
            .min(1 << 20) as usize,
    );
    loop {
        if out.capacity() - out.len() < 64 * 1024 {
            out.reserve(256 * 1024);
        }
        let before = stream.total_in() as usize;
        let status = match stream.process_vec(&data[before..], out, xz2::stream::Action::Run) {
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
            let used = stream.total_in() as usize;
            lzma2_only(&data[..used]).context(
                "the embed area holds an xz stream with a filter other than LZMA2 alone, which \
                 the kernel's xz decoder may not unpack (it stops there); refusing a corrupt or \
                 tampered image",
            )?;
            return Ok(used);
        }
        if stream.total_in() as usize >= data.len() && status != xz2::stream::Status::MemNeeded {
            bail!("the embedded xz archive is truncated");
        }
    }
}

/// Check that every block of a (decoded, so well-formed) xz stream is
/// LZMA2 alone, as coreos-installer writes it: the kernel's decoder has no
/// delta filter, and BCJ filters only where configured. The blocks are
/// found through the index before the stream footer.
fn lzma2_only(stream: &[u8]) -> Result<()> {
    fn vli(data: &[u8], at: &mut usize) -> Result<u64> {
        let mut v = 0u64;
        for i in 0..9 {
            let b = *data.get(*at).context("truncated")?;
            *at += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        bail!("a number too long")
    }
    let footer = stream
        .len()
        .checked_sub(12)
        .filter(|&f| f >= 12)
        .context("truncated")?;
    let backward = u32::from_le_bytes(stream[footer + 4..footer + 8].try_into()?);
    let index = usize::try_from(backward)?
        .checked_add(1)
        .and_then(|n| n.checked_mul(4))
        .and_then(|n| footer.checked_sub(n))
        .context("an index before the stream")?;
    let mut at = index + 1;
    let records = vli(stream, &mut at)?;
    let mut block = 12usize;
    for _ in 0..records {
        let unpadded = vli(stream, &mut at)?;
        vli(stream, &mut at)?;
        let header = stream
            .get(block..block + 2)
            .context("a block past the index")?;
        let mut pos = block + 2;
        if header[1] & 0x40 != 0 {
            vli(stream, &mut pos)?;
        }
        if header[1] & 0x80 != 0 {
            vli(stream, &mut pos)?;
        }
        if header[1] & 0x03 != 0 || vli(stream, &mut pos)? != 0x21 {
            bail!("a block with another filter");
        }
        block = usize::try_from(unpadded)?
            .checked_next_multiple_of(4)
            .and_then(|n| n.checked_add(block))
            .filter(|&b| b <= index)
            .context("a block past the index")?;
    }
    Ok(())
}

/// The gzip member at the start of `data` as the kernel's initramfs unpacker
/// reads it (zlib's inflate: a member it stops on is refused), at most
/// [`MAX_UNPACKED`] bytes of it: the data and the bytes the member takes.
/// Its CRC and size are checked too, where the kernel reads neither.
pub fn gunzip_member(data: &[u8]) -> Result<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let used = gzip_one_stream(data, MAX_UNPACKED, &mut out)?;
    Ok((out, used))
}

/// Decode the one gzip member at the start of `data` into `out`, at most
/// `budget` bytes of it: the bytes it takes.
fn gzip_one_stream(data: &[u8], budget: u64, out: &mut Vec<u8>) -> Result<usize> {
    // The kernel's gunzip (lib/decompress_inflate.c) takes deflate with at
    // most a file name in the header; other header fields make it stop.
    match data.get(2..4) {
        Some([8, flags]) if flags & !0x09 == 0 => {}
        _ => bail!(
            "the embed area holds a gzip stream with header fields the kernel does not read \
             (it stops there); refusing a corrupt or tampered image"
        ),
    }
    let mut cur = Cursor::new(data);
    out.clear();
    flate2::bufread::GzDecoder::new(&mut cur)
        .take(budget + 1)
        .read_to_end(out)
        .context("decompressing the embedded archive (gzip)")?;
    if out.len() as u64 > budget {
        return Err(unpacked_too_large());
    }
    Ok(cur.position() as usize)
}

/// One newc member as the kernel reads it.
struct Member<'a> {
    /// None: `TRAILER!!!`.
    kind: Option<Kind>,
    name: &'a str,
    body: &'a [u8],
    /// Where the next header is (4-aligned).
    end: usize,
}

fn align4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// The member whose header is at `pos` (4-aligned) of `data`.
fn member(data: &[u8], pos: usize) -> Result<Member<'_>> {
    let header = data
        .get(pos..pos + 110)
        .context("the embed area ends inside a cpio header (truncated or corrupt image?)")?;
    match &header[..6] {
        b"070701" => {}
        b"070702" => bail!(
            "the embed area holds a cpio archive with checksums (070702), which kernels \
             before 5.14 do not unpack; refusing (coreos-installer writes 070701)"
        ),
        _ => bail!(
            "the embed area holds something that is not a cpio header where the kernel \
             reads one (\"no cpio magic\": it stops unpacking there); refusing a corrupt or \
             tampered image"
        ),
    }
    let field = |i: usize| -> Result<usize> {
        let hex = &header[6 + 8 * i..14 + 8 * i];
        std::str::from_utf8(hex)
            .ok()
            .filter(|s| s.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|s| usize::from_str_radix(s, 16).ok())
            .context("the embed area holds a cpio header with a field that is not hexadecimal (corrupt or tampered image?)")
    };
    let (mode, nlink, body_len, name_len) = (field(1)?, field(4)?, field(6)?, field(11)?);
    if name_len == 0 || name_len > PATH_MAX {
        bail!(
            "the embed area holds a file name of {name_len} bytes, which the kernel skips \
             (0, or longer than {PATH_MAX}; corrupt image?)"
        );
    }
    // The kernel's N_ALIGN: the header and name together padded to 4.
    let body_start = pos + 110 + ((name_len + 1) & !3) + 2;
    let end = body_start
        .checked_add(body_len)
        .map(align4)
        .filter(|&end| end <= data.len())
        .context("the embed area ends inside a cpio member (truncated or corrupt image?)")?;
    let raw = &data[pos + 110..pos + 110 + name_len];
    let name = match raw.split_last() {
        Some((0, name)) if !name.contains(&0) => name,
        _ => {
            let shown = String::from_utf8_lossy(raw.strip_suffix(&[0]).unwrap_or(raw));
            let c = String::from_utf8_lossy(raw.split(|&b| b == 0).next().unwrap_or_default());
            bail!(
                "the embed area holds a member named {shown:?}, with a NUL inside its name: \
                 the kernel takes the name up to its first NUL and would write {c:?}; \
                 refusing a tampered image"
            );
        }
    };
    let name = std::str::from_utf8(name).with_context(|| {
        format!(
            "the embed area holds a member whose name is not UTF-8 ({:?}; corrupt image?)",
            String::from_utf8_lossy(name)
        )
    })?;
    let body = &data[body_start..body_start + body_len];
    let kind = Kind::of(mode as u32);
    if name == "TRAILER!!!" {
        // The kernel takes it as a trailer only when it reads its name: a
        // file, or no data (and not a symlink).
        if body_len != 0 || kind == Some(Kind::Symlink) {
            bail!("the embed area holds a cpio trailer with data (corrupt or tampered image?)");
        }
        return Ok(Member {
            kind: None,
            name,
            body,
            end,
        });
    }
    check_clean(name)?;
    let Some(kind) = kind else {
        bail!(
            "the embed area holds {name} of no known file type (mode {mode:o}): the kernel \
             would remove what is at that path; refusing a corrupt or tampered image"
        );
    };
    match kind {
        Kind::File => {}
        Kind::Symlink if body_len > PATH_MAX => bail!(
            "the embed area holds a symlink {name} whose target is longer than the kernel \
             reads (corrupt image?)"
        ),
        Kind::Symlink => {}
        _ if body_len != 0 => bail!(
            "the embed area holds {} {name} with {body_len} bytes of data, which the kernel \
             skips (corrupt or tampered image?)",
            kind.name()
        ),
        _ => {}
    }
    if nlink >= 2 && !matches!(kind, Kind::Dir | Kind::Symlink) {
        bail!(
            "the embed area holds {name} as a hard link (link count {nlink}): the kernel links \
             it to an earlier member with its inode number and writes through it; refusing \
             (coreos-installer writes no hard links)"
        );
    }
    Ok(Member {
        kind: Some(kind),
        name,
        body,
        end,
    })
}

/// Refuse a name the kernel would resolve otherwise than it reads: a `.` or
/// `..` component, a leading or trailing `/`, `//`. The kernel opens it as
/// it is, relative to `/`.
fn check_clean(name: &str) -> Result<()> {
    if name
        .split('/')
        .all(|c| !c.is_empty() && c != "." && c != "..")
    {
        return Ok(());
    }
    // Where the kernel would write it, its directories being directories.
    let mut at: Vec<&str> = Vec::new();
    for c in name.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                at.pop();
            }
            c => at.push(c),
        }
    }
    let at = at.join("/");
    let over = if at == CONFIG_PATH {
        " (over config.ign, the config Ignition reads)"
    } else {
        ""
    };
    bail!(
        "the embed area holds a member named {name:?}, not a clean path: the kernel would \
         write it at {:?}{over}; refusing a tampered image",
        if at.is_empty() { "/" } else { &at }
    )
}

/// What the kernel leaves at each path the area names (paths it does not
/// name are the image's own initramfs's).
#[derive(Default)]
struct Tree {
    nodes: BTreeMap<String, (Kind, Vec<u8>)>,
    /// Members applied.
    members: usize,
}

impl Tree {
    /// Unpack the archive at `pos` (4-aligned) of `data`, up to and with
    /// its trailer: where it ends.
    fn archive(&mut self, data: &[u8], mut pos: usize) -> Result<usize> {
        loop {
            let m = member(data, pos)?;
            pos = m.end;
            let Some(kind) = m.kind else {
                return Ok(pos);
            };
            self.apply(m.name, kind, m.body)?;
        }
    }

    /// A member of `kind` at `name`, as the kernel's do_name/do_symlink
    /// apply it (clean_path: what is there, of another type, is unlinked).
    fn apply(&mut self, name: &str, kind: Kind, body: &[u8]) -> Result<()> {
        self.members += 1;
        if self.members > MAX_MEMBERS {
            bail!(
                "the embed area holds more than {MAX_MEMBERS} members (a live ISO's holds a \
                 few; corrupt image?)"
            );
        }
        if name.split('/').nth(MAX_DEPTH).is_some() {
            bail!(
                "the embed area holds {:?}..., more than {MAX_DEPTH} directories deep (a \
                 live ISO's are three; corrupt image?)",
                name.chars().take(64).collect::<String>()
            );
        }
        for (i, _) in name.match_indices('/') {
            let parent = &name[..i];
            match self.nodes.get(parent) {
                Some((Kind::Dir, _)) | None => {}
                Some((k, _)) => bail!(
                    "the embed area holds {name} under {parent}, which is {} there: the \
                     kernel would {}; refusing a tampered image",
                    k.name(),
                    if *k == Kind::Symlink {
                        "follow the link and write it elsewhere"
                    } else {
                        "not write it"
                    }
                ),
            }
        }
        if kind != Kind::Dir {
            let under = format!("{name}/");
            if let Some((child, _)) = self.nodes.range(under.clone()..).next()
                && child.starts_with(&under)
            {
                bail!(
                    "the embed area holds {} at {name} after {child} under it: the kernel \
                     cannot replace a directory that holds files; refusing a tampered image",
                    kind.name()
                );
            }
        }
        if kind == Kind::Dir && matches!(self.nodes.get(name), Some((Kind::Dir, _))) {
            return Ok(());
        }
        let bytes = if kind == Kind::File {
            body.to_vec()
        } else {
            Vec::new()
        };
        self.nodes.insert(name.to_string(), (kind, bytes));
        Ok(())
    }

    /// The regular files and the directories, or a refusal naming what
    /// `iso` could neither show nor write back as the kernel would leave it.
    fn into_files(self) -> Result<Paths> {
        let (mut files, mut dirs) = (BTreeMap::new(), Vec::new());
        for (name, (kind, bytes)) in self.nodes {
            match kind {
                Kind::File => {
                    files.insert(name, bytes);
                }
                Kind::Dir if name != CONFIG_PATH => dirs.push(name),
                _ if name == CONFIG_PATH => bail!(
                    "the embed area leaves {} at config.ign, not the regular file Ignition \
                     reads (the kernel unpacks the area so at boot); refusing a tampered image",
                    kind.name()
                ),
                _ => bail!(
                    "the embed area leaves {} at {name}, which iso commands do not write back \
                     (coreos-installer writes files and directories only); refusing a \
                     corrupt or tampered image",
                    kind.name()
                ),
            }
        }
        Ok((files, dirs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// An xz encoder as the kernel reads them (CRC32).
    fn xz_encoder(preset: u32) -> xz2::write::XzEncoder<Vec<u8>> {
        let stream =
            xz2::stream::Stream::new_easy_encoder(preset, xz2::stream::Check::Crc32).unwrap();
        xz2::write::XzEncoder::new_stream(Vec::new(), stream)
    }

    /// A small archive that unpacks past the limit (a corrupt or forged
    /// area) is refused, not unpacked into memory without end.
    #[test]
    fn archives_unpacking_past_the_limit_are_refused() {
        let zeros = vec![0u8; 1 << 20];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let mut xz = xz_encoder(0);
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
        let mut xz = xz_encoder(9);
        xz.write_all(b"070701 tiny").unwrap();
        let mut area = xz.finish().unwrap();
        assert!(xz_one_stream(&area, 1 << 20, &mut Vec::new()).is_ok());
        // The block header after the 12-byte stream header: its size, its
        // flags (one filter, no sizes), LZMA2's id and property size, then
        // the dictionary size byte (40: 4 GiB - 1), zero padding and CRC32.
        assert_eq!(area[13..16], [0x00, 0x21, 0x01]);
        let header_len = (usize::from(area[12]) + 1) * 4;
        area[16] = 40;
        let mut crc = flate2::Crc::new();
        crc.update(&area[12..12 + header_len - 4]);
        area[12 + header_len - 4..12 + header_len].copy_from_slice(&crc.sum().to_le_bytes());
        let e = xz_one_stream(&area, 1 << 20, &mut Vec::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than 256 MiB of memory"), "{e}");
    }

    /// Many small archives, each under the limit, together past it (an
    /// area of 16 MiB holds over a thousand 64 MiB xz bombs): refused as
    /// soon as their sum passes it, not unpacked into memory without end.
    #[test]
    fn archives_unpacking_past_the_limit_together_are_refused() {
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
        let mut xz = xz_encoder(1);
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
        // Zeros up to a 4-aligned offset (the kernel reads a cpio header
        // only there), and more.
        area.resize(align4(area.len()) + 8, 0);
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

    /// A newc member as a hostile image may write it: any name bytes (the
    /// NUL added), mode and link count.
    fn raw(name: &[u8], mode: u32, nlink: u32, data: &[u8]) -> Vec<u8> {
        let mut e = b"070701".to_vec();
        let fields = [0, mode, 0, 0, nlink, 0, data.len() as u32, 0, 0, 0, 0];
        for v in fields {
            e.extend(format!("{v:08x}").bytes());
        }
        e.extend(format!("{:08x}{:08x}", name.len() + 1, 0).bytes());
        e.extend(name);
        e.push(0);
        e.resize(align4(e.len()), 0);
        e.extend(data);
        e.resize(align4(e.len()), 0);
        e
    }

    fn trailer() -> Vec<u8> {
        raw(b"TRAILER!!!", 0, 1, b"")
    }

    /// Members, then a trailer.
    fn archive(members: &[Vec<u8>]) -> Vec<u8> {
        [members.concat(), trailer()].concat()
    }

    fn file(name: &str, data: &[u8]) -> Vec<u8> {
        raw(name.as_bytes(), 0o100_600, 1, data)
    }

    fn err(area: &[u8]) -> String {
        format!("{:#}", read_members(area).unwrap_err())
    }

    /// Review 10 r10c F1: a name the kernel resolves elsewhere than it
    /// reads (it opens it as it is) or takes up to a NUL inside it is
    /// refused, named, in any archive of the area.
    #[test]
    fn names_the_kernel_resolves_otherwise_are_refused() {
        let decoy = file("config.ign", b"decoy");
        for (name, at) in [
            ("x/../config.ign", "\"config.ign\" (over config.ign"),
            ("./config.ign", "\"config.ign\" (over config.ign"),
            ("/config.ign", "\"config.ign\" (over config.ign"),
            ("etc//x", "\"etc/x\""),
            ("etc/x/", "\"etc/x\""),
            ("..", "\"/\""),
        ] {
            let hostile = raw(name.as_bytes(), 0o100_600, 1, b"attacker");
            for area in [
                archive(&[decoy.clone(), hostile.clone()]),
                [
                    archive(std::slice::from_ref(&decoy)),
                    xz(&archive(&[hostile])),
                ]
                .concat(),
            ] {
                let e = err(&area);
                assert!(e.contains(&format!("{name:?}, not a clean path")), "{e}");
                assert!(e.contains(at), "{e}");
            }
        }
        let e = err(&archive(&[
            decoy.clone(),
            raw(b"config.ign\0x", 0o100_600, 1, b"attacker"),
        ]));
        assert!(
            e.contains(r#"named "config.ign\0x""#) && e.contains(r#"would write "config.ign""#),
            "{e}"
        );
        // A name field without its NUL (newer kernels stop there).
        let mut no_nul = raw(b"config.ign", 0o100_600, 1, b"x");
        no_nul[94..102].copy_from_slice(b"0000000a");
        assert!(err(&archive(&[no_nul])).contains("with a NUL inside its name"));
        assert!(err(&archive(&[raw(b"", 0o100_600, 1, b"x")])).contains("not a clean path"));
    }

    /// Review 10 r10c F2: a later member of any type at a path replaces the
    /// earlier (the kernel unlinks it), so a symlink or directory left at
    /// config.ign is refused, not skipped to show the earlier file; what
    /// the kernel cannot apply, or would write through a link, is refused.
    #[test]
    fn later_members_of_any_type_replace_earlier_ones() {
        let decoy = file("config.ign", b"decoy");
        let link = |name: &str, to: &[u8]| raw(name.as_bytes(), 0o120_777, 1, to);
        let dir = |name: &str| raw(name.as_bytes(), 0o040_755, 2, b"");
        for (members, want) in [
            (
                vec![
                    decoy.clone(),
                    file("real.ign", b"x"),
                    link("config.ign", b"real.ign"),
                ],
                "leaves a symlink at config.ign",
            ),
            (
                vec![decoy.clone(), dir("config.ign")],
                "leaves a directory at config.ign",
            ),
            (
                vec![raw(b"config.ign", 0o020_644, 1, b"")],
                "leaves a device node at config.ign",
            ),
            (
                vec![link("x", b"/"), file("x/config.ign", b"x")],
                "under x, which is a symlink",
            ),
            (
                vec![file("x", b""), file("x/y", b"")],
                "under x, which is a regular file",
            ),
            (vec![file("a/b", b""), file("a", b"")], "after a/b under it"),
            (
                vec![file("a/b", b""), link("a", b"/")],
                "after a/b under it",
            ),
            (
                vec![file("etc/x", b""), link("etc/x", b"y")],
                "leaves a symlink at etc/x",
            ),
            (
                vec![raw(b"x", 0o100_600, 2, b"")],
                "as a hard link (link count 2)",
            ),
            (vec![raw(b"x", 0o170_000, 1, b"")], "no known file type"),
            (
                vec![raw(b"x", 0o040_755, 2, b"data")],
                "with 4 bytes of data",
            ),
        ] {
            let e = err(&archive(&members));
            assert!(e.contains(want), "{want}: {e}");
        }
        // What the kernel replaces, replaced: a link, then a file there.
        let m = read_members(&archive(&[
            link("config.ign", b"x"),
            dir("d"),
            decoy.clone(),
            file("d/e", b"e"),
        ]))
        .unwrap();
        assert_eq!(m["config.ign"], b"decoy");
        assert_eq!(m.len(), 2);
        let m = read_members(&archive(&[dir("config.ign"), decoy])).unwrap();
        assert_eq!(m["config.ign"], b"decoy");
    }

    /// Review 10 r10c F3: the kernel reads a cpio header only at a 4-aligned
    /// offset and stops where it finds none: an archive after a compressed
    /// one at an offset 1 mod 4 (never unpacked) is refused, not shown.
    #[test]
    fn archives_where_the_kernel_stops_are_refused() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&archive(&[file("config.ign", b"attacker")]))
            .unwrap();
        let mut area = gz.finish().unwrap();
        while area.len() % 4 != 1 {
            area.push(0);
        }
        area.extend(archive(&[file("config.ign", b"decoy")]));
        assert!(err(&area).contains("not a multiple of 4"), "{}", err(&area));
        // After an uncompressed archive, any next archive must be aligned
        // ("broken padding"); after a compressed one, another compressed
        // one may start anywhere.
        let mut area = archive(&[file("a", b"a")]);
        area.extend([0, 0]);
        area.extend(xz(&archive(&[file("b", b"b")])));
        assert!(err(&area).contains("not a multiple of 4"));
        let mut area = xz(&archive(&[file("a", b"a")]));
        while area.len() % 4 != 3 {
            area.push(0);
        }
        area.extend(xz(&archive(&[file("b", b"b")])));
        assert_eq!(read_members(&area).unwrap().len(), 2);
        // A BCJ filter before LZMA2 (liblzma reads it, a kernel built
        // without it not).
        let filters = {
            let mut f = xz2::stream::Filters::new();
            f.sparc();
            f.lzma2(&xz2::stream::LzmaOptions::new_preset(1).unwrap());
            f
        };
        let delta = xz2::stream::Stream::new_stream_encoder(&filters, xz2::stream::Check::Crc32);
        let mut w = xz2::write::XzEncoder::new_stream(Vec::new(), delta.unwrap());
        w.write_all(&archive(&[file("a", b"a")])).unwrap();
        let e = err(&w.finish().unwrap());
        assert!(e.contains("other than LZMA2 alone"), "{e}");
        // Compressions and forms the kernel may stop on.
        let mut crc64 = xz2::write::XzEncoder::new(Vec::new(), 1);
        crc64.write_all(&archive(&[file("a", b"a")])).unwrap();
        for (area, want) in [
            (crc64.finish().unwrap(), "other than CRC32"),
            (b"\x28\xb5\x2f\xfd....".to_vec(), "a zstd stream"),
            (
                b"\x1f\x8b\x08\x10....".to_vec(),
                "header fields the kernel does not read",
            ),
            ([b"070702", &trailer()[6..]].concat(), "with checksums"),
            (b"junk".to_vec(), "not an initramfs archive"),
        ] {
            assert!(err(&area).contains(want), "{want}: {}", err(&area));
        }
    }

    /// Review 10 r10c F5: an area of many archives (a 16 MiB area held
    /// 200,000 xz streams: 4 s) is refused past 64.
    #[test]
    fn archives_past_the_limit_in_number_are_refused() {
        let one = xz(&trailer());
        let area = one.repeat(16 << 20 >> 6);
        assert!(err(&area).contains("more than 64 archives"));
        assert!(read_members(&one.repeat(64)).unwrap().is_empty());
        assert!(err(&trailer().repeat(65)).contains("more than 64 archives"));
        // Names more than 32 deep, or more than 4,096 members (a 64 MiB area
        // of 4 KiB names 2,000 deep took over a minute): refused.
        let deep = format!("{}f", "a/".repeat(32));
        assert!(err(&archive(&[file(&deep, b"")])).contains("more than 32 directories deep"));
        assert!(read_members(&archive(&[file(&deep[2..], b"")])).is_ok());
        let many: Vec<Vec<u8>> = (0..4097).map(|i| file(&format!("f{i}"), b"")).collect();
        assert!(err(&archive(&many)).contains("more than 4096 members"));
        assert_eq!(read_members(&archive(&many[1..])).unwrap().len(), 4096);
    }
}
