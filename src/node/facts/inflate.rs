//! gzip (RFC 1952) and DEFLATE (RFC 1951) decoding, for /proc/config.gz
//! only: NFD reads the kernel config from there first. Small and std-only
//! (the wrapper carries it). A start pays for it whenever a rule names
//! `kernel.config`, so it decodes a symbol per table look-up from a 64-bit
//! bit buffer and copies matches whole. What Go's compress/gzip refuses is
//! None (NFD then goes on to the next path): a bad header (its CRC16 too),
//! a Huffman code that is not complete, a distance past the member's start,
//! a CRC or length mismatch; so is output past `cap`. tests/gunzip_go.rs
//! compares the two.

/// Input bits, least significant first, in a 64-bit buffer refilled a
/// word at a time. Past the end of the input it loads zero bytes and
/// counts them (`over`): a stream that reads them is cut short.
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    buf: u64,
    cnt: u32,
    over: usize,
}

impl<'a> Bits<'a> {
    fn new(data: &'a [u8]) -> Bits<'a> {
        Bits {
            data,
            pos: 0,
            buf: 0,
            cnt: 0,
            over: 0,
        }
    }

    /// At least 56 bits in the buffer: one whole symbol with its extra
    /// bits (at most 15 + 5 + 15 + 13).
    #[inline(always)]
    fn refill(&mut self) {
        if let Some(w) = self.data.get(self.pos..self.pos + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            // Whole bytes only are counted; the bits of a partly loaded
            // byte are loaded again, the same, next time.
            self.buf |= u64::from_le_bytes(word) << self.cnt;
            self.pos += ((63 - self.cnt) >> 3) as usize;
            self.cnt |= 56;
        } else {
            while self.cnt < 56 {
                let b = match self.data.get(self.pos) {
                    Some(&b) => {
                        self.pos += 1;
                        b
                    }
                    None => {
                        self.over += 1;
                        0
                    }
                };
                self.buf |= u64::from(b) << self.cnt;
                self.cnt += 8;
            }
        }
    }

    /// `n` bits (the buffer holds them: `refill` was called).
    #[inline(always)]
    fn take(&mut self, n: u32) -> u32 {
        let v = (self.buf & ((1u64 << n) - 1)) as u32;
        self.buf >>= n;
        self.cnt -= n;
        v
    }

    fn bits(&mut self, n: u32) -> u32 {
        self.refill();
        self.take(n)
    }

    /// Whether the bits taken so far were all in the input.
    fn in_input(&self) -> bool {
        self.over * 8 <= self.cnt as usize
    }

    /// Drops the bits left of the current byte; the position of the next
    /// whole byte, None when the input ended before it.
    fn byte_pos(&mut self) -> Option<usize> {
        let drop = self.cnt % 8;
        self.take(drop);
        let next = (self.pos + self.over).checked_sub((self.cnt / 8) as usize)?;
        (next <= self.data.len()).then_some(next)
    }

    /// Starts again at byte `pos`.
    fn seek(&mut self, pos: usize) {
        *self = Bits::new(self.data);
        self.pos = pos;
    }
}

/// Table bits: most codes are at most this long and decode in one look-up.
const FAST: u32 = 10;

/// A canonical Huffman code: by the next FAST input bits, `symbol << 4 |
/// length` (0: a longer code); for those, how many codes of each length
/// and the symbols in code order, decoded bit by bit.
struct Huffman {
    fast: [u32; 1 << FAST],
    count: [u16; 16],
    symbol: [u16; 288],
}

impl Huffman {
    /// None unless the lengths make a complete code, as Go's compress/flate
    /// wants, which also takes no code at all (an error when read) and a
    /// single code of one bit.
    fn new(lengths: &[u8]) -> Option<Huffman> {
        let mut h = Huffman {
            fast: [0; 1 << FAST],
            count: [0; 16],
            symbol: [0; 288],
        };
        for &l in lengths {
            h.count[usize::from(l & 15)] += 1;
        }
        h.count[0] = 0;
        let mut left: i32 = 1;
        for &c in &h.count[1..] {
            left = (left << 1) - i32::from(c);
            if left < 0 {
                return None;
            }
        }
        // What is left of the code space: none (complete), all of it (no
        // code), or half of it with one code of one bit.
        if left != 0 && left != 1 << 15 && !(left == 1 << 14 && h.count[1] == 1) {
            return None;
        }
        let mut offs = [0u16; 16];
        let mut next = [0u32; 16];
        for len in 1..15 {
            offs[len + 1] = offs[len] + h.count[len];
        }
        for len in 2..16 {
            next[len] = (next[len - 1] + u32::from(h.count[len - 1])) << 1;
        }
        for (s, &l) in lengths.iter().enumerate().take(288) {
            let l = usize::from(l & 15);
            if l == 0 {
                continue;
            }
            h.symbol[usize::from(offs[l])] = s as u16;
            offs[l] += 1;
            let code = next[l];
            next[l] += 1;
            if l as u32 <= FAST {
                // Input bits come least significant first: the table is
                // indexed by the code reversed.
                let mut i = (code.reverse_bits() >> (32 - l)) as usize;
                while i < h.fast.len() {
                    h.fast[i] = (s as u32) << 4 | l as u32;
                    i += 1 << l;
                }
            }
        }
        Some(h)
    }

    /// The next symbol (the buffer holds 15 bits: `refill` was called).
    #[inline(always)]
    fn decode(&self, b: &mut Bits) -> Option<usize> {
        let e = self.fast[(b.buf & ((1 << FAST) - 1)) as usize];
        if e != 0 {
            b.take(e & 15);
            return Some((e >> 4) as usize);
        }
        self.decode_long(b)
    }

    #[inline(never)]
    fn decode_long(&self, b: &mut Bits) -> Option<usize> {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for len in 1..16 {
            code |= ((b.buf >> (len - 1)) & 1) as i32;
            let count = i32::from(self.count[len]);
            if code - count < first {
                b.take(len as u32);
                return self
                    .symbol
                    .get((index + code - first) as usize)
                    .map(|&s| usize::from(s));
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

/// The longest match: the output keeps this much room ahead of the next
/// symbol, so neither a literal nor a match checks for room.
const MAX_MATCH: usize = 258;

/// Output written by index (a literal is one store, not a push), into a
/// buffer sized from the gzip trailer and grown only when that lied.
struct Out {
    buf: Vec<u8>,
    at: usize,
    cap: usize,
}

impl Out {
    /// Room for `n` more bytes (at most MAX_MATCH past `cap`: the caller
    /// checks `at` against `cap` at the end); None when they cannot fit.
    fn room(&mut self, n: usize) -> Option<()> {
        let most = self.cap.saturating_add(MAX_MATCH);
        let need = self.at.checked_add(n).filter(|&need| need <= most)?;
        if need > self.buf.len() {
            // vec! zeroes with memset; `resize` is a byte loop at opt-level z.
            let mut bigger = vec![0u8; need.max(self.buf.len() * 2).min(most)];
            bigger[..self.at].copy_from_slice(&self.buf[..self.at]);
            self.buf = bigger;
        }
        Some(())
    }
}

fn codes(b: &mut Bits, out: &mut Out, lit: &Huffman, dist: &Huffman) -> Option<()> {
    loop {
        // Zero bytes past the end decode too: stop at a buffer's worth.
        if b.over > 8 {
            return None;
        }
        if out.buf.len() - out.at < MAX_MATCH {
            out.room(MAX_MATCH)?;
        }
        b.refill();
        let sym = lit.decode(b)?;
        if sym < 256 {
            out.buf[out.at] = sym as u8;
            out.at += 1;
            continue;
        }
        if sym == 256 {
            return Some(());
        }
        let i = sym - 257;
        let len = usize::from(*LEN_BASE.get(i)?) + b.take(u32::from(LEN_EXTRA[i])) as usize;
        let d = dist.decode(b)?;
        let dist = usize::from(*DIST_BASE.get(d)?) + b.take(u32::from(DIST_EXTRA[d])) as usize;
        let start = out.at.checked_sub(dist)?;
        if dist >= len {
            let (done, rest) = out.buf.split_at_mut(out.at);
            rest[..len].copy_from_slice(&done[start..start + len]);
        } else {
            // Overlapping: the copy reads what it writes.
            for k in 0..len {
                out.buf[out.at + k] = out.buf[start + k];
            }
        }
        out.at += len;
    }
}

fn dynamic(b: &mut Bits) -> Option<(Huffman, Huffman)> {
    const ORDER: [usize; 19] = [
        16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
    ];
    let nlen = b.bits(5) as usize + 257;
    let ndist = b.bits(5) as usize + 1;
    let ncode = b.bits(4) as usize + 4;
    if nlen > 286 || ndist > 30 {
        return None;
    }
    let mut lengths = [0u8; 320];
    for &o in &ORDER[..ncode] {
        lengths[o] = b.bits(3) as u8;
    }
    let lencode = Huffman::new(&lengths[..19])?;
    let mut i = 0;
    while i < nlen + ndist {
        b.refill();
        let sym = lencode.decode(b)?;
        let (value, repeat) = match sym {
            0..=15 => (sym as u8, 1),
            16 => (*lengths[..i].last()?, 3 + b.take(2) as usize),
            17 => (0, 3 + b.take(3) as usize),
            _ => (0, 11 + b.take(7) as usize),
        };
        if i + repeat > nlen + ndist {
            return None;
        }
        lengths[i..i + repeat].fill(value);
        i += repeat;
    }
    if lengths[256] == 0 || !b.in_input() {
        return None;
    }
    Some((
        Huffman::new(&lengths[..nlen])?,
        Huffman::new(&lengths[nlen..nlen + ndist])?,
    ))
}

fn fixed() -> Option<(Huffman, Huffman)> {
    let mut l = [0u8; 288];
    l[..144].fill(8);
    l[144..256].fill(9);
    l[256..280].fill(7);
    l[280..].fill(8);
    // 32 distance codes (a complete code): 30 and 31 are errors when read.
    Some((Huffman::new(&l)?, Huffman::new(&[5u8; 32])?))
}

/// One DEFLATE stream from `b`, appended to `out`.
fn inflate(b: &mut Bits, out: &mut Out) -> Option<()> {
    loop {
        let last = b.bits(1);
        match b.bits(2) {
            0 => {
                let pos = b.byte_pos()?;
                let hdr = b.data.get(pos..pos + 4)?;
                let len = usize::from(u16::from_le_bytes([hdr[0], hdr[1]]));
                if u16::from_le_bytes([hdr[2], hdr[3]]) != !(len as u16) {
                    return None;
                }
                let data = b.data.get(pos + 4..pos + 4 + len)?;
                out.room(len)?;
                out.buf[out.at..out.at + len].copy_from_slice(data);
                out.at += len;
                b.seek(pos + 4 + len);
            }
            1 => {
                let (lit, dist) = fixed()?;
                codes(b, out, &lit, &dist)?;
            }
            2 => {
                let (lit, dist) = dynamic(b)?;
                codes(b, out, &lit, &dist)?;
            }
            _ => return None,
        }
        if !b.in_input() {
            return None;
        }
        if last == 1 {
            return Some(());
        }
    }
}

/// CRC-32's tables, slicing by 8: built once per [`gunzip`], not per
/// member (a file of many small members would build thousands).
type CrcTable = [[u32; 256]; 8];

#[cfg(test)]
thread_local! {
    /// Tables built on this thread (the test counts them).
    static TABLES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn crc_table() -> CrcTable {
    #[cfg(test)]
    TABLES.with(|n| n.set(n.get() + 1));
    let mut t = [[0u32; 256]; 8];
    for (n, entry) in t[0].iter_mut().enumerate() {
        let mut c = n as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *entry = c;
    }
    // Table k: a byte followed by k zero bytes.
    for k in 1..8 {
        let (done, rest) = t.split_at_mut(k);
        for (entry, &prev) in rest[0].iter_mut().zip(&done[k - 1]) {
            *entry = (prev >> 8) ^ done[0][(prev & 0xff) as usize];
        }
    }
    t
}

/// CRC-32 (gzip's), eight bytes a step ("slicing by 8"): a byte-wise
/// table walk took a third of the decoding time.
fn crc32(t: &CrcTable, data: &[u8]) -> u32 {
    let mut c = !0u32;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let lo = c ^ u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        c = t[7][(lo & 0xff) as usize]
            ^ t[6][(lo >> 8 & 0xff) as usize]
            ^ t[5][(lo >> 16 & 0xff) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][usize::from(w[4])]
            ^ t[2][usize::from(w[5])]
            ^ t[1][usize::from(w[6])]
            ^ t[0][usize::from(w[7])];
    }
    for &byte in words.remainder() {
        c = t[0][((c ^ u32::from(byte)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// The data of every gzip member in `gz` (Go's reader reads concatenated
/// members), at most `cap` bytes.
pub fn gunzip(gz: &[u8], cap: usize) -> Option<Vec<u8>> {
    // The last member's size (mod 2^32) is a fair guess of the whole; the
    // room a match may need past it saves a copy at the end.
    let size = gz.get(gz.len().checked_sub(4)?..)?;
    let size = u32::from_le_bytes([size[0], size[1], size[2], size[3]]) as usize;
    let mut out = Out {
        buf: vec![0; size.min(cap) + MAX_MATCH],
        at: 0,
        cap,
    };
    // The data of the members before this one: each member is a DEFLATE
    // stream of its own, decoded from the start of `out`, so `codes` finds
    // a distance reaching past the member's start at no cost.
    let mut earlier = Vec::new();
    let mut pos = 0;
    let table = crc_table();
    loop {
        let h = gz.get(pos..pos + 10)?;
        // Reserved flag bits are ignored, as Go ignores them.
        if h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 {
            return None;
        }
        let flags = h[3];
        let head = pos;
        pos += 10;
        if flags & 4 != 0 {
            let x = gz.get(pos..pos + 2)?;
            pos += 2 + usize::from(u16::from_le_bytes([x[0], x[1]]));
        }
        for bit in [8u8, 16] {
            if flags & bit != 0 {
                // Go reads a name or a comment into 512 bytes, NUL included.
                let field = gz.get(pos..)?;
                pos += field[..field.len().min(512)].iter().position(|&c| c == 0)? + 1;
            }
        }
        if flags & 2 != 0 {
            let x = gz.get(pos..pos + 2)?;
            if u16::from_le_bytes([x[0], x[1]]) != crc32(&table, &gz[head..pos]) as u16 {
                return None;
            }
            pos += 2;
        }
        out.cap = cap - earlier.len();
        let mut b = Bits::new(gz.get(pos..)?);
        inflate(&mut b, &mut out)?;
        if out.at > out.cap {
            return None;
        }
        pos += b.byte_pos()?;
        let t = gz.get(pos..pos + 8)?;
        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let size = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
        let data = &out.buf[..out.at];
        if crc != crc32(&table, data) || size != data.len() as u32 {
            return None;
        }
        pos += 8;
        if pos >= gz.len() {
            out.buf.truncate(out.at);
            if !earlier.is_empty() {
                earlier.extend_from_slice(&out.buf);
                out.buf = earlier;
            }
            return Some(out.buf);
        }
        earlier.extend_from_slice(data);
        out.at = 0;
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

    /// CRC-32's tables are built once per gunzip, not once per member: a
    /// thousand members, one table.
    #[test]
    fn the_crc_table_is_built_once_however_many_members() {
        let many = gzip(&["-c", "-n"], b"a\n").repeat(1000);
        let built = || TABLES.with(std::cell::Cell::get);
        let before = built();
        assert_eq!(gunzip(&many, 1 << 20), Some(b"a\n".repeat(1000)));
        assert_eq!(built() - before, 1);
    }

    /// What Go's compress/gzip does where ours used to differ (the cases
    /// tests/gunzip_go.rs found; it compares with Go itself).
    #[test]
    fn go_parity() {
        // Complete codes only, or none, or one code of one bit.
        assert!(Huffman::new(&[1, 1]).is_some());
        assert!(Huffman::new(&[0, 0]).is_some());
        assert!(Huffman::new(&[0, 1]).is_some());
        assert!(Huffman::new(&[2]).is_none());
        assert!(Huffman::new(&[1, 2]).is_none());
        assert!(Huffman::new(&[1, 1, 1]).is_none());
        let gz = gzip(&["-c", "-n"], b"CONFIG_A=y\n");
        let with_header = |flags: u8, fields: &[u8]| {
            let mut m = gz[..10].to_vec();
            m[3] = flags;
            m.extend_from_slice(fields);
            m.extend_from_slice(&gz[10..]);
            m
        };
        // Reserved flag bits are ignored.
        let m = with_header(0xe0, b"");
        assert_eq!(gunzip(&m, 100).as_deref(), Some(&b"CONFIG_A=y\n"[..]));
        // The header's CRC16 is checked.
        let crc = crc32(&crc_table(), &with_header(2, b"")[..10]) as u16;
        let m = with_header(2, &crc.to_le_bytes());
        assert!(gunzip(&m, 100).is_some());
        let m = with_header(2, &(crc ^ 1).to_le_bytes());
        assert_eq!(gunzip(&m, 100), None);
        // A name takes at most 512 bytes with its NUL.
        let mut name = vec![b'n'; 511];
        name.push(0);
        assert!(gunzip(&with_header(8, &name), 100).is_some());
        name.insert(0, b'n');
        assert_eq!(gunzip(&with_header(8, &name), 100), None);
        // A distance reaches no further back than its member's start: "abc"
        // then a member of a match of 3 at distance 3, both fixed blocks.
        let two = b"\x1f\x8b\x08\x00\x4d\x3c\x2b\x1a\x00\x03\x4b\x4c\x4a\x06\x00\xc2\x41\x24\x35\x03\x00\x00\x00\
                    \x1f\x8b\x08\x00\x4d\x3c\x2b\x1a\x00\x03\x03\x22\x00\xc2\x41\x24\x35\x03\x00\x00\x00";
        assert_eq!(gunzip(two, 100), None);
    }
}
