//! Just enough ISO9660 to find a file's extent: the primary volume
//! descriptor and a directory walk by 8.3 names (Rock Ridge and Joliet are
//! ignored: CoreOS's embed-area files have plain names).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use anyhow::{Context, Result, bail};

const SECTOR: u64 = 2048;
const MAX_DIR: u64 = 16 << 20;

/// A file's bytes in the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub offset: u64,
    pub length: u64,
}

/// A file that is not there (callers fall back on another).
#[derive(Debug)]
pub struct NotFound(pub String);

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} not found in the ISO image", self.0)
    }
}

impl std::error::Error for NotFound {}

pub struct Iso9660<'a> {
    file: &'a mut File,
    root: Extent,
    size: u64,
}

fn read_at(file: &mut File, offset: u64, buf: &mut [u8]) -> Result<()> {
    file.seek(SeekFrom::Start(offset))
        .context("seeking in the image")?;
    file.read_exact(buf).context("reading the image")
}

impl<'a> Iso9660<'a> {
    pub fn open(file: &'a mut File) -> Result<Self> {
        let mut pvd = [0u8; 2048];
        read_at(file, 16 * SECTOR, &mut pvd)
            .context("this is not an ISO image (too short for a volume descriptor)")?;
        if pvd[0] != 1 || &pvd[1..6] != b"CD001" {
            bail!("this is not an ISO9660 image (no primary volume descriptor at sector 16)");
        }
        let blocks = u32::from_le_bytes(pvd[80..84].try_into().unwrap()) as u64;
        let size = file.metadata().context("reading the image size")?.len();
        if size < blocks * SECTOR {
            bail!(
                "the ISO image is truncated: {size} bytes, its volume says {}",
                blocks * SECTOR
            );
        }
        let root = &pvd[156..156 + 34];
        let root = Extent {
            offset: u32::from_le_bytes(root[2..6].try_into().unwrap()) as u64 * SECTOR,
            length: u32::from_le_bytes(root[10..14].try_into().unwrap()) as u64,
        };
        let mut iso = Iso9660 { file, root, size };
        iso.check_within(root, "the root directory")?;
        Ok(iso)
    }

    /// Refuse an extent the image does not hold (checked: the numbers come
    /// from the image), before anything is allocated, read or written.
    pub fn check_within(&mut self, e: Extent, what: &str) -> Result<()> {
        match e.offset.checked_add(e.length) {
            Some(end) if end <= self.size => Ok(()),
            _ => bail!(
                "{what} (offset {}, {} bytes) lies outside the {}-byte image (corrupt image?)",
                e.offset,
                e.length,
                self.size
            ),
        }
    }

    /// Find `path` (e.g. `COREOS/IGNINFO.JSO`), case-insensitively.
    pub fn find(&mut self, path: &str) -> Result<Extent> {
        let mut dir = self.root;
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        // ECMA-119 nests directories 8 deep; a live ISO's path has 2 parts.
        // (IGNINFO names a path: 32,700 parts through one 16 MiB directory
        // read 512 GiB.)
        if parts.len() > 8 {
            bail!(
                "a path of {} parts, more than ISO 9660's 8 levels (corrupt image?)",
                parts.len()
            );
        }
        let mut read = 0u64;
        for (i, part) in parts.iter().enumerate() {
            let want = part.to_ascii_uppercase();
            self.check_within(dir, "a directory")?;
            // A live ISO's directories take a few sectors, all of them.
            read += dir.length;
            if dir.length > MAX_DIR {
                bail!(
                    "a directory of {} bytes, more than {} MiB (corrupt image?)",
                    dir.length,
                    MAX_DIR >> 20
                );
            }
            if read > MAX_DIR {
                bail!(
                    "directories of {read} bytes on the way to a file, more than {} MiB (corrupt image?)",
                    MAX_DIR >> 20
                );
            }
            let mut data = vec![0u8; dir.length as usize];
            read_at(self.file, dir.offset, &mut data)?;
            let mut pos = 0usize;
            let mut found = None;
            while pos < data.len() {
                let len = data[pos] as usize;
                if len == 0 {
                    // Records do not cross sectors: go on at the next one.
                    pos = (pos / 2048 + 1) * 2048;
                    continue;
                }
                let rec = data
                    .get(pos..pos + len)
                    .context("a directory record runs past its directory")?;
                if len < 34 {
                    bail!("a malformed directory record");
                }
                let name_len = rec[32] as usize;
                let raw = rec
                    .get(33..33 + name_len)
                    .context("a malformed directory record")?;
                let mut name = String::from_utf8_lossy(raw).to_ascii_uppercase();
                if let Some(p) = name.find(';') {
                    name.truncate(p);
                }
                let name = name.trim_end_matches('.');
                if name == want {
                    let is_dir = rec[25] & 2 != 0;
                    if (i + 1 < parts.len()) != is_dir {
                        break;
                    }
                    found = Some(Extent {
                        offset: u32::from_le_bytes(rec[2..6].try_into().unwrap()) as u64 * SECTOR,
                        length: u32::from_le_bytes(rec[10..14].try_into().unwrap()) as u64,
                    });
                    break;
                }
                pos += len;
            }
            dir = found.ok_or_else(|| NotFound(path.to_string()))?;
        }
        Ok(dir)
    }

    pub fn read(&mut self, e: Extent) -> Result<Vec<u8>> {
        self.check_within(e, "a file")?;
        let mut buf = vec![0u8; e.length as usize];
        read_at(self.file, e.offset, &mut buf)?;
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The fixture ISO coreos-installer's outputs were made from.
    fn fixture_iso() -> Option<File> {
        let p = crate::skipped::shared("fixtures/coreos-installer/synthetic-coreos-base.iso.xz")?;
        let mut bytes = Vec::new();
        xz2::read::XzDecoder::new(File::open(p).unwrap())
            .read_to_end(&mut bytes)
            .unwrap();
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&bytes).unwrap();
        Some(f)
    }

    #[test]
    fn finds_files_by_8_3_names() {
        let Some(mut f) = fixture_iso() else { return };
        let mut iso = Iso9660::open(&mut f).unwrap();
        let img = iso.find("IMAGES/IGNITION.IMG").unwrap();
        // README of the fixtures: the embed area is at 77824, 256 KiB.
        assert_eq!(
            img,
            Extent {
                offset: 77824,
                length: 262144
            }
        );
        assert_eq!(iso.find("images/ignition.img").unwrap(), img);
        let info = iso.find("COREOS/IGNINFO.JSO").unwrap();
        assert!(
            String::from_utf8(iso.read(info).unwrap())
                .unwrap()
                .contains("images/ignition.img")
        );
        assert!(iso.find("NOPE/X").unwrap_err().is::<NotFound>());
    }

    /// A directory `A` that is the root itself, the root 3 MiB: a path of
    /// many `A/` reads it again at each (a 17 MB image took minutes).
    #[test]
    fn a_path_through_one_directory_again_and_again_is_bounded() {
        let root_len: u32 = 3 << 20;
        let root_at: u32 = 18;
        let mut img = vec![0u8; (root_at as usize) * 2048 + root_len as usize];
        let pvd = &mut img[16 * 2048..17 * 2048];
        pvd[0] = 1;
        pvd[1..6].copy_from_slice(b"CD001");
        let blocks = (img.len() / 2048) as u32;
        let record = |name: &[u8], dir: bool| {
            let mut r = vec![0u8; 33 + name.len()];
            r[0] = r.len() as u8;
            r[2..6].copy_from_slice(&root_at.to_le_bytes());
            r[10..14].copy_from_slice(&root_len.to_le_bytes());
            r[25] = if dir { 2 } else { 0 };
            r[32] = name.len() as u8;
            r[33..].copy_from_slice(name);
            r
        };
        let pvd = &mut img[16 * 2048..17 * 2048];
        pvd[80..84].copy_from_slice(&blocks.to_le_bytes());
        let root = record(b"\0", true);
        pvd[156..156 + 34].copy_from_slice(&root);
        let a = record(b"A", true);
        let at = root_at as usize * 2048;
        img[at..at + a.len()].copy_from_slice(&a);
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&img).unwrap();
        let mut iso = Iso9660::open(&mut f).unwrap();
        // Within the bounds: found (the directory itself, as a directory).
        assert!(iso.find("A/A/A/X").unwrap_err().is::<NotFound>());
        let deep = "A/".repeat(9) + "X";
        assert!(
            iso.find(&deep)
                .unwrap_err()
                .to_string()
                .contains("8 levels")
        );
        let wide = "A/".repeat(6) + "X";
        assert!(iso.find(&wide).unwrap_err().to_string().contains("MiB"));
    }

    #[test]
    fn refuses_what_is_not_an_iso() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[0u8; 40_000]).unwrap();
        assert!(
            Iso9660::open(&mut f)
                .err()
                .unwrap()
                .to_string()
                .contains("not an ISO9660")
        );
    }
}
