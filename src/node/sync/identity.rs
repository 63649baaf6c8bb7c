//! kubelet's identity for the sync: its kubeconfig and the client
//! certificate it names, read as kubectl reads them, checked to be a node's
//! and valid now, and the files curl needs (inline data in memfds, never
//! on disk).

use std::path::{Path, PathBuf};

use super::kubeconfig::{self, Source};
use super::transport::{Credentials, CurlFile};

/// Read at most this much of a kubeconfig or certificate.
const MAX_FILE: usize = 1 << 20;

/// A regular file of at most 1 MiB, opened without blocking (a FIFO or a
/// device put where a certificate is expected is refused, not waited on).
fn read_small(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    const O_NONBLOCK: i32 = 0o4000;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    // The boot path's reader: one code path in the payload, not a second
    // one through std's `Take::read_to_end`.
    let out = crate::node::nodefs::read_up_to(f, MAX_FILE + 1)?;
    if out.len() > MAX_FILE {
        return Err(std::io::Error::other("larger than 1 MiB"));
    }
    Ok(out)
}

/// Where the kubeconfig and the files it names are read.
#[derive(Clone, Copy)]
pub enum Files<'a> {
    /// On this machine, as kubectl reads them (`--kubeconfig`).
    Host,
    /// Node paths of the tree at this root, contained in it: `..` stops at
    /// the root and a link's absolute target starts there, so no file
    /// outside the tree (the host's own key) is ever read for it.
    Tree(&'a Path),
}

impl Files<'_> {
    pub(super) fn locate(self, p: &Path) -> std::io::Result<PathBuf> {
        match self {
            Files::Host => Ok(p.to_path_buf()),
            Files::Tree(root) => crate::node::unit::search::contained_in_any_build(root, p),
        }
    }

    fn read(self, p: &Path) -> std::io::Result<Vec<u8>> {
        read_small(&self.locate(p)?)
    }

    /// How a path is named in a message: where it is on this machine.
    fn shown(self, p: &Path) -> String {
        match self {
            Files::Host => p.display().to_string(),
            Files::Tree(root) => crate::node::unit::search::under(root, p)
                .display()
                .to_string(),
        }
    }
}

/// kubelet's identity: curl's files and the Node's name.
pub struct Identity {
    pub creds: Credentials,
    pub node: String,
}

pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Load the kubeconfig at `path` and the certificate it names, check it is
/// a node's and valid now. Every error names the input.
pub fn identity(path: &Path, files: Files) -> Result<Identity, String> {
    let shown = files.shown(path);
    let text = files
        .read(path)
        .map_err(|e| format!("kubeconfig {shown}: {e}"))?;
    let text = String::from_utf8(text).map_err(|_| format!("kubeconfig {shown}: not UTF-8"))?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    let k = kubeconfig::parse(&text, dir).map_err(|e| format!("kubeconfig {shown}: {e}"))?;
    // What curl reads is what was read and checked here, handed over in
    // memfds: nothing of it on disk, nothing resolved a second time.
    let place = |what: &str, s: &Source| -> Result<(CurlFile, Vec<u8>), String> {
        let bytes = match s {
            Source::File(p) => files
                .read(p)
                .map_err(|e| format!("{what} {} (from kubeconfig {shown}): {e}", files.shown(p)))?,
            Source::Inline(b) => b.clone(),
        };
        CurlFile::memory(what, &bytes)
            .map(|f| (f, bytes))
            .map_err(|e| format!("holding {what} of kubeconfig {shown} for curl: {e}"))
    };
    let (cert_file, cert_bytes) = place("client certificate", &k.client_cert)?;
    let (key_file, _) = place("client key", &k.client_key)?;
    let ca = match &k.ca {
        Some(s) => {
            let (f, b) = place("certificate authority", s)?;
            if super::cert::pem_block(&b, "CERTIFICATE").is_none() {
                return Err(format!(
                    "kubeconfig {shown}: its certificate authority holds no PEM certificate"
                ));
            }
            Some(f)
        }
        None => None,
    };
    let cert_shown = match &k.client_cert {
        Source::File(p) => files.shown(p),
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
            cert: cert_file,
            key: key_file,
        },
        node,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Not a regular file: refused (a FIFO would block a plain open).
        let e = read_small(tmp.path()).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file");
    }
}
