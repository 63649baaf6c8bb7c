//! Writing gzip members and DEFLATE streams bit by bit, valid or not, for
//! tests/gunzip_go.rs: Huffman codes from any lengths (incomplete and
//! over-subscribed ones too), symbols past the tables, any header flags,
//! and random valid streams from a seeded generator.

/// splitmix64: deterministic inputs without a crate.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// gzip's CRC-32, a byte at a time.
pub fn crc32(data: &[u8]) -> u32 {
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

pub const FTEXT: u8 = 1;
pub const FHCRC: u8 = 2;
pub const FEXTRA: u8 = 4;
pub const FNAME: u8 = 8;
pub const FCOMMENT: u8 = 16;

/// A gzip member header: `flags` (any bits), with the fields its flags
/// name; FHCRC's CRC16 right when `hcrc_ok`.
pub fn header(flags: u8, extra: &[u8], name: &[u8], comment: &[u8], hcrc_ok: bool) -> Vec<u8> {
    let mut h = vec![0x1f, 0x8b, 8, flags, 0x4d, 0x3c, 0x2b, 0x1a, 0, 3];
    if flags & FEXTRA != 0 {
        h.extend_from_slice(&(extra.len() as u16).to_le_bytes());
        h.extend_from_slice(extra);
    }
    for (bit, s) in [(FNAME, name), (FCOMMENT, comment)] {
        if flags & bit != 0 {
            h.extend_from_slice(s);
            h.push(0);
        }
    }
    if flags & FHCRC != 0 {
        let crc = crc32(&h) as u16 ^ u16::from(!hcrc_ok);
        h.extend_from_slice(&crc.to_le_bytes());
    }
    h
}

pub fn trailer(data: &[u8]) -> Vec<u8> {
    let mut t = crc32(data).to_le_bytes().to_vec();
    t.extend_from_slice(&(data.len() as u32).to_le_bytes());
    t
}

/// A plain member: a minimal header, `deflate`, the trailer of `data`.
pub fn member(deflate: &[u8], data: &[u8]) -> Vec<u8> {
    let mut m = header(0, b"", b"", b"", true);
    m.extend_from_slice(deflate);
    m.extend(trailer(data));
    m
}

/// DEFLATE bits, least significant first.
#[derive(Default)]
pub struct BitWriter {
    pub bytes: Vec<u8>,
    pub acc: u64,
    pub n: u32,
}

impl BitWriter {
    pub fn put(&mut self, v: u32, n: u32) {
        self.acc |= (u64::from(v) & ((1u64 << n) - 1)) << self.n;
        self.n += n;
        while self.n >= 8 {
            self.bytes.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    pub fn align(&mut self) {
        if self.n > 0 {
            self.put(0, 8 - self.n);
        }
    }
}

/// A canonical Huffman code by symbol: (code, length). Computed as RFC 1951
/// says for any lengths, so over-subscribed and incomplete sets are written
/// too (what a decoder makes of them is the question).
pub struct Code(pub Vec<(u32, u32)>);

impl Code {
    pub fn new(lengths: &[u8]) -> Code {
        let mut count = [0u32; 16];
        for &l in lengths {
            count[usize::from(l)] += 1;
        }
        count[0] = 0;
        let mut next = [0u32; 16];
        for len in 1..16 {
            next[len] = (next[len - 1] + count[len - 1]) << 1;
        }
        Code(
            lengths
                .iter()
                .map(|&l| {
                    let l = usize::from(l);
                    let c = next[l];
                    if l > 0 {
                        next[l] += 1;
                    }
                    (c, l as u32)
                })
                .collect(),
        )
    }

    pub fn fixed_lit() -> Code {
        let mut l = [8u8; 288];
        l[144..256].fill(9);
        l[256..280].fill(7);
        Code::new(&l)
    }

    pub fn fixed_dist() -> Code {
        Code::new(&[5; 32])
    }
}

pub const LEN_BASE: [usize; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
pub const LEN_EXTRA: [u32; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
pub const DIST_BASE: [usize; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
pub const DIST_EXTRA: [u32; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

/// A symbol and the value of its extra bits.
pub type Sym = (usize, u32);

/// The code-length code's symbols in the order their lengths are sent.
pub const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// A complete code-length code for every symbol: 0..=12 in 4 bits, the
/// rest in 5.
pub const CL_ALL: [u8; 19] = [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5];

/// A DEFLATE stream being written, and the data it is meant to give (what
/// the trailer's CRC and size are computed from).
#[derive(Default)]
pub struct Stream {
    pub w: BitWriter,
    pub out: Vec<u8>,
}

impl Stream {
    pub fn block(&mut self, last: bool, kind: u32) {
        self.w.put(u32::from(last), 1);
        self.w.put(kind, 2);
    }

    /// Symbol `s` of `code` (written most significant bit first).
    pub fn sym(&mut self, code: &Code, s: usize) {
        let (c, l) = code.0[s];
        assert!(l > 0, "symbol {s} has no code");
        for i in (0..l).rev() {
            self.w.put(c >> i, 1);
        }
    }

    pub fn lit(&mut self, lit: &Code, b: u8) {
        self.sym(lit, usize::from(b));
        self.out.push(b);
    }

    pub fn end(&mut self, lit: &Code) {
        self.sym(lit, 256);
    }

    /// A match, by its symbols and extra bits as given (so out-of-range
    /// ones can be written); the data gets the copy when it is in range.
    pub fn raw_copy(&mut self, lit: &Code, dist: &Code, l: Sym, d: Sym) {
        self.sym(lit, 257 + l.0);
        self.w.put(l.1, LEN_EXTRA.get(l.0).copied().unwrap_or(0));
        self.sym(dist, d.0);
        self.w.put(d.1, DIST_EXTRA.get(d.0).copied().unwrap_or(0));
        if let (Some(&lb), Some(&db)) = (LEN_BASE.get(l.0), DIST_BASE.get(d.0)) {
            let (len, back) = (lb + l.1 as usize, db + d.1 as usize);
            if back <= self.out.len() {
                for _ in 0..len {
                    self.out.push(self.out[self.out.len() - back]);
                }
            }
        }
    }

    pub fn copy(&mut self, lit: &Code, dist: &Code, len: usize, back: usize) {
        let l = if len == 258 {
            28
        } else {
            LEN_BASE.iter().rposition(|&b| b <= len).unwrap()
        };
        let d = DIST_BASE.iter().rposition(|&b| b <= back).unwrap();
        self.raw_copy(
            lit,
            dist,
            (l, (len - LEN_BASE[l]) as u32),
            (d, (back - DIST_BASE[d]) as u32),
        );
    }

    pub fn stored(&mut self, last: bool, data: &[u8]) {
        self.block(last, 0);
        self.w.align();
        self.w.put(data.len() as u32, 16);
        self.w.put(!(data.len() as u32), 16);
        self.w.bytes.extend_from_slice(data);
        self.out.extend_from_slice(data);
    }

    /// A dynamic block's header: HLIT and HDIST from `nlen` and `ndist`
    /// (5 bits each, so out-of-range counts can be sent), the code-length
    /// code's lengths by symbol, then `seq`: code-length symbols with
    /// their extra bits.
    pub fn dynamic_header(
        &mut self,
        last: bool,
        nlen: usize,
        ndist: usize,
        cl: &[u8; 19],
        seq: &[Sym],
    ) {
        self.block(last, 2);
        self.w.put((nlen - 257) as u32, 5);
        self.w.put((ndist - 1) as u32, 5);
        let ncl = (4..=19)
            .rev()
            .find(|&n| cl[CL_ORDER[n - 1]] != 0)
            .unwrap_or(4);
        self.w.put((ncl - 4) as u32, 4);
        for &s in &CL_ORDER[..ncl] {
            self.w.put(u32::from(cl[s]), 3);
        }
        let code = Code::new(cl);
        for &(s, extra) in seq {
            self.sym(&code, s);
            match s {
                16 => self.w.put(extra, 2),
                17 => self.w.put(extra, 3),
                18 => self.w.put(extra, 7),
                _ => {}
            }
        }
    }

    /// A dynamic block's header sending `lit` and `dist` lengths one symbol
    /// each; their codes.
    pub fn dynamic(&mut self, last: bool, lit: &[u8], dist: &[u8]) -> (Code, Code) {
        let seq: Vec<Sym> = lit.iter().chain(dist).map(|&l| (l.into(), 0)).collect();
        self.dynamic_header(last, lit.len(), dist.len(), &CL_ALL, &seq);
        (Code::new(lit), Code::new(dist))
    }

    /// The stream's bytes so far, its last one padded with zero bits.
    pub fn bytes(&self) -> Vec<u8> {
        let mut bytes = self.w.bytes.clone();
        if self.w.n > 0 {
            bytes.push(self.w.acc as u8);
        }
        bytes
    }

    /// The stream as a gzip member whose trailer is the intended data's.
    pub fn member(&self) -> Vec<u8> {
        member(&self.bytes(), &self.out)
    }
}

/// Lengths by symbol from (symbol, length) pairs, `n` symbols.
pub fn lengths(n: usize, pairs: &[(usize, u8)]) -> Vec<u8> {
    let mut l = vec![0; n];
    for &(s, len) in pairs {
        l[s] = len;
    }
    l
}

/// The lengths of a random complete code over `symbols` (of `n`), at most
/// `max` bits: a tree grown by splitting leaves, half the time the deepest
/// (long codes). One symbol gets the single code of one bit.
pub fn random_code(rng: &mut Rng, n: usize, symbols: &[usize], max: u8) -> Vec<u8> {
    let mut l = vec![0u8; n];
    let mut leaves = vec![0u8];
    while leaves.len() < symbols.len() {
        let i = if rng.below(2) == 0 {
            let deepest = leaves.iter().filter(|&&d| d < max).max().copied();
            leaves.iter().position(|&d| Some(d) == deepest).unwrap()
        } else {
            loop {
                let i = rng.below(leaves.len());
                if leaves[i] < max {
                    break i;
                }
            }
        };
        leaves[i] += 1;
        leaves.push(leaves[i]);
    }
    for i in (1..leaves.len()).rev() {
        leaves.swap(i, rng.below(i + 1));
    }
    for (&s, &d) in symbols.iter().zip(&leaves) {
        l[s] = d.max(1);
    }
    l
}

/// `k` distinct numbers of `range`, in random order.
pub fn distinct(rng: &mut Rng, range: std::ops::Range<usize>, k: usize) -> Vec<usize> {
    let mut all: Vec<usize> = range.collect();
    for i in (1..all.len()).rev() {
        all.swap(i, rng.below(i + 1));
    }
    all.truncate(k);
    all
}

/// Code lengths as code-length symbols, runs sent with 16, 17 and 18.
pub fn run_length(lengths: &[u8]) -> Vec<Sym> {
    let mut seq = Vec::new();
    let mut i = 0;
    while i < lengths.len() {
        let v = lengths[i];
        let run = lengths[i..].iter().take_while(|&&x| x == v).count();
        let (sym, r, min) = match v {
            0 if run >= 11 => (18, run.min(138), 11),
            0 if run >= 3 => (17, run.min(10), 3),
            _ if i > 0 && lengths[i - 1] == v && run >= 3 => (16, run.min(6), 3),
            _ => (usize::from(v), 1, 1),
        };
        seq.push((sym, (r - min) as u32));
        i += r;
    }
    seq
}

/// Random literals and matches (distances within the data so far), with
/// the symbols `lits` and `lens` of `lit` and `dists` of `dist`.
pub fn random_body(
    rng: &mut Rng,
    s: &mut Stream,
    (lit, lits, lens): (&Code, &[usize], &[usize]),
    (dist, dists): (&Code, &[usize]),
) {
    for _ in 0..rng.below(400) {
        let history = s.out.len();
        let near: Vec<usize> = dists
            .iter()
            .copied()
            .filter(|&d| d < 30 && DIST_BASE[d] <= history)
            .collect();
        if !lens.is_empty() && !near.is_empty() && rng.below(3) == 0 {
            let l = lens[rng.below(lens.len())] - 257;
            let d = near[rng.below(near.len())];
            let room = (history - DIST_BASE[d] + 1).min(1 << DIST_EXTRA[d]);
            let lx = rng.below(1 << LEN_EXTRA[l]) as u32;
            s.raw_copy(lit, dist, (l, lx), (d, rng.below(room) as u32));
        } else if !lits.is_empty() {
            s.lit(lit, lits[rng.below(lits.len())] as u8);
        }
    }
    s.end(lit);
}

/// A dynamic block of random complete codes (sent plainly or with runs,
/// by a random code-length code) and random data.
pub fn random_dynamic(rng: &mut Rng, s: &mut Stream, last: bool) {
    let n_lits = rng.below(80);
    let lits = distinct(rng, 0..256, n_lits);
    let n_lens = rng.below(30);
    let lens = distinct(rng, 257..286, n_lens);
    let n_dists = rng.below(31);
    let dists = distinct(rng, 0..30, n_dists);
    let mut lit_syms = [&lits[..], &lens[..], &[256]].concat();
    lit_syms.sort();
    let lit_len = random_code(rng, 286, &lit_syms, 15);
    let dist_len = random_code(rng, 30, &dists, 15);
    let nlen = lit_syms.last().unwrap().max(&256) + 1;
    let ndist = dists.iter().max().map_or(1, |&d| d + 1);
    let lengths = [&lit_len[..nlen], &dist_len[..ndist]].concat();
    let seq = match rng.below(2) {
        0 => lengths.iter().map(|&l| (usize::from(l), 0)).collect(),
        _ => run_length(&lengths),
    };
    let mut cl_syms: Vec<usize> = seq.iter().map(|&(sym, _)| sym).collect();
    cl_syms.sort();
    cl_syms.dedup();
    let cl: [u8; 19] = random_code(rng, 19, &cl_syms, 7).try_into().unwrap();
    s.dynamic_header(last, nlen, ndist, &cl, &seq);
    let (lit, dist) = (Code::new(&lit_len[..nlen]), Code::new(&dist_len[..ndist]));
    random_body(rng, s, (&lit, &lits, &lens), (&dist, &dists));
}
