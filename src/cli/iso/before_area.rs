//! The bytes of the file `COREOS/IGNINFO.JSO` names before the embed area
//! (its `offset`). The boot loader loads an initrd file whole and the
//! kernel unpacks it from its first byte: an uncompressed cpio member
//! there whose data runs over the area makes the area that member's data,
//! never unpacked as an archive (`iso show` would see no config where the
//! kernel leaves the one before it, and `iso embed` would write ours where
//! the kernel never reads it).
//!
//! `images/ignition.img` is only the embed area in every live ISO: an
//! offset into it is refused. In another file (the end of
//! `images/initramfs.img` on older ISOs, `images/cdboot.img` on s390x) the
//! bytes before the area are the image's own: when they start with an
//! uncompressed cpio archive (the early-microcode archive), its headers are
//! walked as the kernel reads them, and the area must start where the
//! kernel is between archives. A compressed stream (the main initramfs) or
//! something that is no initramfs (the s390x kernel) is not decompressed to
//! find where it ends: a known limit.

use anyhow::{Context, Result, bail};

use super::iso9660::{Extent, Iso9660};

/// Members walked and zero bytes scanned before the area: an
/// early-microcode archive has a few members; the zeros between archives
/// are padding.
const MAX_WALKED: usize = 1 << 16;
const MAX_ZEROS: u64 = 64 << 20;
const CHUNK: u64 = 64 << 10;

/// Refuse an area at `offset` of `file` (named `name` in IGNINFO) that the
/// kernel would not reach as an archive.
pub(super) fn check(iso: &mut Iso9660, name: &str, file: Extent, offset: u64) -> Result<()> {
    if offset == 0 {
        return Ok(());
    }
    if iso.find("IMAGES/IGNITION.IMG").ok() == Some(file) {
        bail!(
            "COREOS/IGNINFO.JSO puts the embed area at offset {offset} of {name}, a file that is \
             only the embed area in every live ISO: the kernel unpacks the file from its start, \
             so the bytes before the area may hold a config and make the area data it never \
             unpacks; refusing a tampered image: start from a pristine ISO"
        );
    }
    let mut walk = Walk {
        iso,
        file,
        offset,
        zeros: 0,
    };
    let Some(mut pos) = walk.non_zero(0)? else {
        return Ok(());
    };
    if pos % 4 != 0 || !walk.starts_with(pos, b"07070")? {
        // A compressed initramfs, or no initramfs (an s390x kernel).
        return Ok(());
    }
    let refuse = |at: u64, what: &str| -> anyhow::Error {
        anyhow::anyhow!(
            "{name} holds, at offset {at} before the embed area COREOS/IGNINFO.JSO gives (at \
             offset {offset}), {what}: the kernel unpacks the file from its start and would \
             never unpack the area as an archive; refusing a tampered image: start from a \
             pristine ISO"
        )
    };
    for _ in 0..MAX_WALKED {
        let header = walk
            .read(pos, 110)?
            .ok_or_else(|| refuse(pos, "a cpio header that runs into the area"))?;
        if !matches!(&header[..6], b"070701" | b"070702") {
            return Err(refuse(
                pos,
                "no cpio header where the kernel reads one (it stops there)",
            ));
        }
        let field = |i: usize| {
            std::str::from_utf8(&header[6 + 8 * i..14 + 8 * i])
                .ok()
                .and_then(|s| u64::from_str_radix(s, 16).ok())
                .ok_or_else(|| refuse(pos, "a cpio header field that is not hexadecimal"))
        };
        let (mode, body_len, name_len) = (field(1)?, field(6)?, field(11)?);
        // The kernel's N_ALIGN: the header and name together padded to 4.
        let end = (pos + 110 + ((name_len + 1) & !3) + 2 + body_len).next_multiple_of(4);
        if end > offset {
            return Err(refuse(
                pos,
                &format!("a cpio member whose {body_len} bytes of data run over the area"),
            ));
        }
        let trailer = name_len == 11
            && mode & 0o170_000 != 0o120_000
            && walk.read(pos + 110, 11)?.as_deref() == Some(b"TRAILER!!!\0");
        pos = end;
        if !trailer {
            continue;
        }
        // Between archives: zeros, then the area or another archive.
        let Some(next) = walk.non_zero(pos)? else {
            return Ok(());
        };
        if next % 4 != 0 {
            return Err(refuse(
                next,
                "data not 4-aligned after a cpio archive (\"broken padding\": the kernel stops)",
            ));
        }
        if !walk.starts_with(next, b"0")? {
            // A compressed stream (the main initramfs): not decompressed.
            return Ok(());
        }
        pos = next;
    }
    bail!(
        "{name} holds more than {MAX_WALKED} cpio members before the embed area; refusing an \
         image whose area the kernel may not reach (corrupt or tampered image?)"
    )
}

/// Reads of the bytes before the area, bounded.
struct Walk<'i, 'a> {
    iso: &'i mut Iso9660<'a>,
    file: Extent,
    offset: u64,
    zeros: u64,
}

impl Walk<'_, '_> {
    /// `len` bytes at `at` of the file, None where they run into the area.
    fn read(&mut self, at: u64, len: u64) -> Result<Option<Vec<u8>>> {
        if at.checked_add(len).is_none_or(|end| end > self.offset) {
            return Ok(None);
        }
        self.iso
            .read(Extent {
                offset: self.file.offset + at,
                length: len,
            })
            .map(Some)
    }

    fn starts_with(&mut self, at: u64, magic: &[u8]) -> Result<bool> {
        Ok(self.read(at, magic.len() as u64)?.as_deref() == Some(magic))
    }

    /// The first non-zero byte from `at` before the area, if any.
    fn non_zero(&mut self, mut at: u64) -> Result<Option<u64>> {
        while at < self.offset {
            let len = CHUNK.min(self.offset - at);
            self.zeros += len;
            if self.zeros > MAX_ZEROS + CHUNK {
                bail!(
                    "the file the embed area is in holds more than {} MiB of padding between \
                     the archives before it (corrupt image?)",
                    MAX_ZEROS >> 20
                );
            }
            let chunk = self
                .read(at, len)?
                .context("reading before the embed area")?;
            if let Some(i) = chunk.iter().position(|&b| b != 0) {
                return Ok(Some(at + i as u64));
            }
            at += len;
        }
        Ok(None)
    }
}
