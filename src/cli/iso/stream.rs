//! A product streamed (an image to `-o -` or a FIFO, `render -o FIFO`):
//! a reader that stops early leaves it incomplete, which is an error, never
//! the quiet end a closed stdout has for data a reader may skip.

use std::io::{self, Read, Write};

use anyhow::{Context, Result};

/// All of `from` into `out`, a stream (stdout, a FIFO) whose reader may
/// stop early: then an error naming how much it got, since `what` (the
/// product: an image, a rendered file) is incomplete. Never the quiet end
/// of a closed stdout that data a reader may skip has (review 19 r19c F2;
/// coreos-installer exits 1, "Broken pipe").
pub fn copy_to_stream(from: &mut dyn Read, out: &mut dyn Write, what: &str) -> Result<()> {
    let mut buf = vec![0u8; 1 << 16];
    let mut written: u64 = 0;
    let cut = |e: io::Error, written: u64| -> anyhow::Error {
        if e.kind() == io::ErrorKind::BrokenPipe {
            anyhow::anyhow!(
                "the reader closed the stream after {written} bytes; {what} is incomplete"
            )
        } else {
            anyhow::Error::new(e).context(format!("writing {what}"))
        }
    };
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("reading what is streamed"),
        };
        let mut chunk = &buf[..n];
        while !chunk.is_empty() {
            match out.write(chunk) {
                Ok(0) => return Err(cut(io::ErrorKind::WriteZero.into(), written)),
                Ok(k) => {
                    written += k as u64;
                    chunk = &chunk[k..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(cut(e, written)),
            }
        }
    }
    out.flush().map_err(|e| cut(e, written))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that takes 1000 bytes and closes: the error says so.
    struct Stops(usize);

    impl Write for Stops {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            let n = b.len().min(self.0);
            self.0 -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_reader_that_stops_early_is_an_incomplete_product() {
        let data = vec![7u8; 200_000];
        let e = copy_to_stream(&mut &data[..], &mut Stops(1000), "the image").unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "the reader closed the stream after 1000 bytes; the image is incomplete"
        );
        let mut all = Vec::new();
        copy_to_stream(&mut &data[..], &mut all, "the image").unwrap();
        assert_eq!(all, data);
    }
}
