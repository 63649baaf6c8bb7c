//! kubelet's identity for the sync: its kubeconfig and the client
//! certificate it names, read as kubectl reads them, checked to be a node's
//! and valid now, and the files curl needs (inline data written to a
//! private directory).

use std::path::{Path, PathBuf};

use super::kubeconfig::{self, Source};
use super::run::under;
use super::transport::Credentials;

/// Inline kubeconfig data written for curl: a private directory (0700,
/// files 0600), removed when dropped.
pub struct PrivateFiles {
    dir: Option<PathBuf>,
    /// What `write` created in `dir`: removed by name, so the payload
    /// carries no `remove_dir_all` (std's walks the directory with libc's
    /// `opendir` and so links musl's malloc).
    written: Vec<PathBuf>,
}

impl PrivateFiles {
    fn write(&mut self, name: &str, data: &[u8]) -> std::io::Result<PathBuf> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = match &self.dir {
            Some(d) => d.clone(),
            None => {
                use std::hash::{BuildHasher, Hasher};
                let tag = std::collections::hash_map::RandomState::new()
                    .build_hasher()
                    .finish();
                let base = std::env::var_os("RUNTIME_DIRECTORY")
                    .map(PathBuf::from)
                    .unwrap_or_else(std::env::temp_dir);
                let d = base.join(format!("kubelet-labeler-sync.{tag:016x}"));
                std::fs::DirBuilder::new().mode(0o700).create(&d)?;
                self.dir = Some(d.clone());
                d
            }
        };
        let path = dir.join(name);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        self.written.push(path.clone());
        f.write_all(data)?;
        Ok(path)
    }
}

impl Drop for PrivateFiles {
    fn drop(&mut self) {
        if let Some(d) = &self.dir {
            for f in &self.written {
                let _ = std::fs::remove_file(f);
            }
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// Read at most this much of a kubeconfig or certificate.
const MAX_FILE: usize = 1 << 20;

fn read_small(path: &Path) -> std::io::Result<Vec<u8>> {
    // The boot path's reader: one code path in the payload, not a second
    // one through std's `Take::read_to_end`.
    let out = crate::node::nodefs::read_up_to(crate::node::nodefs::open(path)?, MAX_FILE + 1)?;
    if out.len() > MAX_FILE {
        return Err(std::io::Error::other("larger than 1 MiB"));
    }
    Ok(out)
}

/// kubelet's identity: curl's files and the Node's name.
pub struct Identity {
    pub creds: Credentials,
    pub node: String,
    _files: PrivateFiles,
}

pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Load the kubeconfig and the certificate it names, check it is a node's
/// and valid now. Every error names the input.
pub fn identity(path: &Path, explicit: bool, root: &Path) -> Result<Identity, String> {
    let shown = path.display();
    let text = read_small(path).map_err(|e| format!("kubeconfig {shown}: {e}"))?;
    let text = String::from_utf8(text).map_err(|_| format!("kubeconfig {shown}: not UTF-8"))?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    let map = |p: &Path| -> PathBuf {
        if explicit {
            p.to_path_buf()
        } else {
            under(root, p)
        }
    };
    let k = kubeconfig::parse(&text, dir, &map).map_err(|e| format!("kubeconfig {shown}: {e}"))?;
    let mut files = PrivateFiles {
        dir: None,
        written: Vec::new(),
    };
    let mut place = |what: &str, s: &Source| -> Result<(PathBuf, Vec<u8>), String> {
        match s {
            Source::File(p) => read_small(p)
                .map(|b| (p.clone(), b))
                .map_err(|e| format!("{what} {} (from kubeconfig {shown}): {e}", p.display())),
            Source::Inline(b) => files
                .write(what.rsplit(' ').next().unwrap_or("data"), b)
                .map(|p| (p, b.clone()))
                .map_err(|e| format!("writing {what} of kubeconfig {shown} for curl: {e}")),
        }
    };
    let (cert_path, cert_bytes) = place("client certificate", &k.client_cert)?;
    let (key_path, _) = place("client key", &k.client_key)?;
    let ca = match &k.ca {
        Some(s) => {
            let (p, b) = place("certificate authority", s)?;
            if super::cert::pem_block(&b, "CERTIFICATE").is_none() {
                return Err(format!(
                    "kubeconfig {shown}: its certificate authority holds no PEM certificate"
                ));
            }
            Some(p)
        }
        None => None,
    };
    let cert_shown = match &k.client_cert {
        Source::File(p) => p.display().to_string(),
        Source::Inline(_) => format!("client-certificate-data of {shown}"),
    };
    let cert = super::cert::pem_block(&cert_bytes, "CERTIFICATE")
        .and_then(|der| super::cert::parse_der(&der))
        .ok_or_else(|| format!("client certificate {cert_shown}: no X.509 certificate in PEM"))?;
    let node = super::cert::node_name(&cert)
        .map_err(|e| format!("client certificate {cert_shown}: {e}"))?;
    super::cert::check_validity(&cert, now_unix())
        .map_err(|e| format!("client certificate {cert_shown}: {e}"))?;
    Ok(Identity {
        creds: Credentials {
            server: k.server,
            ca,
            cert: cert_path,
            key: key_path,
        },
        node,
        _files: files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_files_leave_nothing_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("kubelet-labeler-sync.test");
        std::fs::create_dir(&dir).unwrap();
        let mut files = PrivateFiles {
            dir: Some(dir.clone()),
            written: Vec::new(),
        };
        let key = files.write("key", b"secret").unwrap();
        files.write("authority", b"ca").unwrap();
        assert_eq!(std::fs::read(&key).unwrap(), b"secret");
        // A second write of the same name is refused, not overwritten.
        assert!(files.write("key", b"other").is_err());
        drop(files);
        assert!(!dir.exists(), "the private directory was left behind");
    }

    #[test]
    fn read_small_refuses_past_one_mib() {
        let tmp = tempfile::tempdir().unwrap();
        let at = tmp.path().join("f");
        std::fs::write(&at, vec![b'a'; MAX_FILE]).unwrap();
        assert_eq!(read_small(&at).unwrap().len(), MAX_FILE);
        std::fs::write(&at, vec![b'a'; MAX_FILE + 1]).unwrap();
        let e = read_small(&at).unwrap_err();
        assert_eq!(e.to_string(), "larger than 1 MiB");
        assert!(read_small(&tmp.path().join("absent")).is_err());
    }
}
