//! gzip (RFC 1952) and DEFLATE (RFC 1951) decoding, for /proc/config.gz
//! only: NFD reads the kernel config from there first. Small and std-only
//! (the wrapper carries it); a canonical-Huffman decoder read bit by bit,
//! fast enough for a ~40 KiB file read once per start. Any malformed input
//! (bad header, bad code, CRC or length mismatch, output past `cap`) is
//! None, as Go's gzip reader errors and NFD goes on to the next path.

struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    buf: u32,
    cnt: u32,
}

impl Bits<'_> {
    /// The next `n` bits without taking them; None near the end of the
    /// input (the caller then goes bit by bit).
    fn peek(&mut self, n: u32) -> Option<u32> {
        while self.cnt < n {
            let b = *self.data.get(self.pos)?;
            self.pos += 1;
            self.buf |= u32::from(b) << self.cnt;
            self.cnt += 8;
        }
        Some(self.buf & ((1u32 << n) - 1))
    }

    /// Drops the bits left of the current byte and gives back the whole
    /// bytes read ahead: the next read starts at a byte boundary.
    fn unread(&mut self) {
        self.pos -= (self.cnt / 8) as usize;
        self.buf = 0;
        self.cnt = 0;
    }

    fn bits(&mut self, n: u32) -> Option<u32> {
        while self.cnt < n {
            let b = *self.data.get(self.pos)?;
            self.pos += 1;
            self.buf |= u32::from(b) << self.cnt;
            self.cnt += 8;
        }
        let v = self.buf & ((1u32 << n) - 1);
        self.buf = self.buf.checked_shr(n).unwrap_or(0);
        self.cnt -= n;
        Some(v)
    }
}

/// A canonical Huffman code: how many codes of each length, the symbols
/// in code order, and for codes of at most FAST bits a table by the next
/// FAST input bits (symbol << 4 | length; 0 = a longer code): most symbols
/// decode in one look-up instead of a bit at a time.
struct Huffman {
    count: [u16; 16],
    symbol: Vec<u16>,
    fast: Vec<u16>,
}

const FAST: u32 = 9;

impl Huffman {
    /// None for an over-subscribed set of lengths (an incomplete one is
    /// allowed, as zlib allows it for a single distance code).
    fn new(lengths: &[u8]) -> Option<Huffman> {
        let mut count = [0u16; 16];
        for &l in lengths {
            count[usize::from(l)] += 1;
        }
        let mut left: i32 = 1;
        for &c in &count[1..] {
            left = (left << 1) - i32::from(c);
            if left < 0 {
                return None;
            }
        }
        let mut offs = [0u16; 16];
        for len in 1..15 {
            offs[len + 1] = offs[len] + count[len];
        }
        let mut symbol = vec![0u16; lengths.len()];
        let mut next = [0u32; 16];
        for len in 2..16 {
            next[len] = (next[len - 1] + u32::from(count[len - 1])) << 1;
        }
        let mut fast = vec![0u16; 1 << FAST];
        for (s, &l) in lengths.iter().enumerate() {
            if l != 0 {
                let l = usize::from(l);
                symbol[usize::from(offs[l])] = s as u16;
                offs[l] += 1;
                let code = next[l];
                next[l] += 1;
                if l as u32 <= FAST {
                    // Input bits come least significant first: the table
                    // is indexed by the code reversed.
                    let mut i = (code.reverse_bits() >> (32 - l)) as usize;
                    while i < fast.len() {
                        fast[i] = (s as u16) << 4 | l as u16;
                        i += 1 << l;
                    }
                }
            }
        }
        Some(Huffman {
            count,
            symbol,
            fast,
        })
    }

    fn decode(&self, b: &mut Bits) -> Option<u16> {
        if let Some(bits) = b.peek(FAST) {
            let e = self.fast[bits as usize];
            if e != 0 {
                b.bits(u32::from(e & 15))?;
                return Some(e >> 4);
            }
        }
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for len in 1..16 {
            code |= b.bits(1)? as i32;
            let count = i32::from(self.count[len]);
            if code - count < first {
                return self.symbol.get((index + code - first) as usize).copied();
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        None
    }
}

const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

fn codes(b: &mut Bits, out: &mut Vec<u8>, cap: usize, lit: &Huffman, dist: &Huffman) -> Option<()> {
    loop {
        let sym = lit.decode(b)?;
        match sym {
            0..=255 => {
                if out.len() >= cap {
                    return None;
                }
                out.push(sym as u8);
            }
            256 => return Some(()),
            _ => {
                let i = usize::from(sym - 257);
                let len =
                    usize::from(*LEN_BASE.get(i)?) + b.bits(u32::from(LEN_EXTRA[i]))? as usize;
                let d = usize::from(dist.decode(b)?);
                let dist =
                    usize::from(*DIST_BASE.get(d)?) + b.bits(u32::from(DIST_EXTRA[d]))? as usize;
                if dist > out.len() || out.len() + len > cap {
                    return None;
                }
                let start = out.len() - dist;
                for k in 0..len {
                    out.push(out[start + k]);
                }
            }
        }
    }
}

fn dynamic(b: &mut Bits) -> Option<(Huffman, Huffman)> {
    const ORDER: [usize; 19] = [
        16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
    ];
    let nlen = b.bits(5)? as usize + 257;
    let ndist = b.bits(5)? as usize + 1;
    let ncode = b.bits(4)? as usize + 4;
    if nlen > 286 || ndist > 30 {
        return None;
    }
    let mut lengths = [0u8; 320];
    for &o in &ORDER[..ncode] {
        lengths[o] = b.bits(3)? as u8;
    }
    let lencode = Huffman::new(&lengths[..19])?;
    let mut i = 0;
    while i < nlen + ndist {
        let sym = lencode.decode(b)?;
        let (value, repeat) = match sym {
            0..=15 => (sym as u8, 1),
            16 => (*lengths[..i].last()?, 3 + b.bits(2)? as usize),
            17 => (0, 3 + b.bits(3)? as usize),
            _ => (0, 11 + b.bits(7)? as usize),
        };
        if i + repeat > nlen + ndist {
            return None;
        }
        lengths[i..i + repeat].fill(value);
        i += repeat;
    }
    if lengths[256] == 0 {
        return None;
    }
    Some((
        Huffman::new(&lengths[..nlen])?,
        Huffman::new(&lengths[nlen..nlen + ndist])?,
    ))
}

fn fixed() -> (Huffman, Huffman) {
    let mut l = [0u8; 288];
    l[..144].fill(8);
    l[144..256].fill(9);
    l[256..280].fill(7);
    l[280..].fill(8);
    let empty = || Huffman {
        count: [0; 16],
        symbol: Vec::new(),
        fast: vec![0; 1 << FAST],
    };
    let lit = Huffman::new(&l).unwrap_or_else(empty);
    let dist = Huffman::new(&[5u8; 30]).unwrap_or_else(empty);
    (lit, dist)
}

/// One DEFLATE stream from `b`, appended to `out`.
fn inflate(b: &mut Bits, out: &mut Vec<u8>, cap: usize) -> Option<()> {
    loop {
        let last = b.bits(1)?;
        match b.bits(2)? {
            0 => {
                // To the byte boundary; whole bytes `peek` took are unread.
                b.unread();
                let hdr = b.data.get(b.pos..b.pos + 4)?;
                let len = usize::from(u16::from_le_bytes([hdr[0], hdr[1]]));
                if u16::from_le_bytes([hdr[2], hdr[3]]) != !(len as u16) {
                    return None;
                }
                b.pos += 4;
                let data = b.data.get(b.pos..b.pos + len)?;
                if out.len() + len > cap {
                    return None;
                }
                out.extend_from_slice(data);
                b.pos += len;
            }
            1 => {
                let (lit, dist) = fixed();
                codes(b, out, cap, &lit, &dist)?;
            }
            2 => {
                let (lit, dist) = dynamic(b)?;
                codes(b, out, cap, &lit, &dist)?;
            }
            _ => return None,
        }
        if last == 1 {
            return Some(());
        }
    }
}

fn crc32(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (n, t) in table.iter_mut().enumerate() {
        let mut c = n as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *t = c;
    }
    !data.iter().fold(!0u32, |c, &b| {
        table[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

/// The data of every gzip member in `gz` (Go's reader reads concatenated
/// members), at most `cap` bytes.
pub fn gunzip(gz: &[u8], cap: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        let h = gz.get(pos..pos + 10)?;
        if h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 || h[3] & 0xe0 != 0 {
            return None;
        }
        let flags = h[3];
        pos += 10;
        if flags & 4 != 0 {
            let x = gz.get(pos..pos + 2)?;
            pos += 2 + usize::from(u16::from_le_bytes([x[0], x[1]]));
        }
        for bit in [8u8, 16] {
            if flags & bit != 0 {
                pos += gz.get(pos..)?.iter().position(|&c| c == 0)? + 1;
            }
        }
        if flags & 2 != 0 {
            pos += 2;
        }
        let start = out.len();
        let mut b = Bits {
            data: gz.get(pos..)?,
            pos: 0,
            buf: 0,
            cnt: 0,
        };
        inflate(&mut b, &mut out, cap)?;
        b.unread();
        pos += b.pos;
        let t = gz.get(pos..pos + 8)?;
        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let size = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
        if crc != crc32(&out[start..]) || size != (out.len() - start) as u32 {
            return None;
        }
        pos += 8;
        if pos >= gz.len() {
            return Some(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gzip(args: &[&str], data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut child = std::process::Command::new("gzip")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("gzip");
        let mut stdin = child.stdin.take().unwrap();
        let data = data.to_vec();
        let w = std::thread::spawn(move || stdin.write_all(&data).unwrap());
        let out = child.wait_with_output().unwrap();
        w.join().unwrap();
        out.stdout
    }

    /// gzip's own output (dynamic, fixed and stored blocks, two members)
    /// comes back byte for byte; damage is None.
    #[test]
    fn gzip_output_round_trips() {
        let mut text = Vec::new();
        for i in 0..20000u32 {
            text.extend_from_slice(format!("CONFIG_X{}={}\n", i % 977, i * 7919 % 13).as_bytes());
        }
        for level in ["-1", "-6", "-9"] {
            let gz = gzip(&["-c", level], &text);
            assert_eq!(gunzip(&gz, 1 << 24).as_deref(), Some(&text[..]), "{level}");
        }
        // Short input: a fixed-Huffman block; random bytes: stored blocks.
        let gz = gzip(&["-c"], b"CONFIG_A=y\n");
        assert_eq!(gunzip(&gz, 100).as_deref(), Some(&b"CONFIG_A=y\n"[..]));
        // Every length up to a few blocks' worth: the trailer is found
        // wherever the last code ends, read ahead or not.
        for n in [1, 2, 7, 64, 300, 1000, 5000] {
            let gz = gzip(&["-c", "-9"], &text[..n]);
            assert_eq!(gunzip(&gz, 1 << 24).as_deref(), Some(&text[..n]), "{n}");
        }
        let noise: Vec<u8> = (0..100_000u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let gz = gzip(&["-c"], &noise);
        assert_eq!(gunzip(&gz, 1 << 20).as_deref(), Some(&noise[..]));
        let mut two = gzip(&["-c"], b"a\n");
        two.extend(gzip(&["-c"], b"b\n"));
        assert_eq!(gunzip(&two, 100).as_deref(), Some(&b"a\nb\n"[..]));
        // Damage, truncation, a cap too small: None, never a panic.
        let gz = gzip(&["-c"], &text);
        assert_eq!(gunzip(&gz, 100), None);
        assert_eq!(gunzip(&gz[..gz.len() - 1], 1 << 24), None);
        let mut bad = gz.clone();
        let n = bad.len();
        bad[n - 6] ^= 1;
        assert_eq!(gunzip(&bad, 1 << 24), None);
        for i in 0..gz.len().min(400) {
            let mut m = gz.clone();
            m[i] ^= 0x55;
            let _ = gunzip(&m, 1 << 24);
        }
        assert_eq!(gunzip(b"", 10), None);
        assert_eq!(gunzip(b"plain text", 10), None);
    }
}
