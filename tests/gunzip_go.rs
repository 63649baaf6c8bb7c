//! Differential test: our gunzip (`node::facts::gunzip`, on every
//! node's boot path) against Go's compress/gzip, which NFD's nfd-worker uses
//! for /proc/config.gz (source/kernel/kconfig.go: `gzip.NewReader` on the
//! file, then `io.ReadAll`; any error and NFD goes on to its next config
//! path). tests/support/go-gunzip/main.go reads each input that way, once
//! built. Ours must give the same bytes where Go reads to the end, and None
//! where Go errors.
//!
//! The inputs are generated deterministically (fixed seeds): gzip's own
//! output at every level, headers with every flag, hand-built DEFLATE
//! streams for the corners where decoders differ (incomplete and
//! over-subscribed Huffman codes, repeats, out-of-range symbols and
//! distances, stored blocks), bad trailers and trailing bytes, every
//! truncation of a few small streams, bit flips of a real-sized one, random
//! valid streams (random complete codes up to 15 bits), and DEFLATE streams
//! with a bit flipped, in a member whose trailer is what Go's compress/flate
//! makes of them, so that the CRC does not hide what a flip changed.

use crate::support::deflate::{
    CL_ALL, Code, FCOMMENT, FEXTRA, FHCRC, FNAME, FTEXT, Rng, Stream, Sym, header, lengths, member,
    random_body, random_dynamic, trailer,
};
use crate::support::{current_go, scratch_dir, skipped};

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use kubelet_labeler::node::facts::gunzip;

/// Ours reads at most this much (the wrapper's cap on /proc/config.gz).
/// Go has no cap: an input that Go reads to more than this is left out of
/// the comparison (ours must refuse it, which is our choice, not Go's).
const CAP: usize = 4 << 20;

/// What NFD's read gives: the data, or Go's error text.
type Answer = Result<Vec<u8>, String>;

pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) input: Vec<u8>,
}

#[derive(Default)]
pub(crate) struct Cases(pub(crate) Vec<Case>);

impl Cases {
    pub(crate) fn add(&mut self, name: impl Into<String>, input: Vec<u8>) {
        self.0.push(Case {
            name: name.into(),
            input,
        });
    }
}

/// Text shaped like a kernel config, about `size` bytes.
pub(crate) fn config_text(rng: &mut Rng, size: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "NET", "USB", "PCI", "ACPI", "X86", "KVM", "DRM", "HID", "SND", "CRYPTO", "BLK", "DEV",
        "INTEL", "AMD", "VIRTIO", "SCHED", "DEBUG", "FS", "EXT4", "XFS", "NUMA", "HOTPLUG",
    ];
    let mut text = b"#\n# Automatically generated file; DO NOT EDIT.\n# Linux/x86 6.1.0 Kernel Configuration\n#\n".to_vec();
    while text.len() < size {
        let mut name = String::from("CONFIG");
        for _ in 0..1 + rng.below(4) {
            name.push('_');
            name.push_str(WORDS[rng.below(WORDS.len())]);
        }
        let line = match rng.below(10) {
            0..=3 => format!("{name}=y\n"),
            4 | 5 => format!("# {name} is not set\n"),
            6 => format!("{name}=m\n"),
            7 => format!("{name}={}\n", rng.below(100_000)),
            8 => format!(
                "{name}=\"{}\"\n",
                WORDS[rng.below(WORDS.len())].to_lowercase()
            ),
            _ => format!("\n#\n# {} support\n#\n", WORDS[rng.below(WORDS.len())]),
        };
        text.extend_from_slice(line.as_bytes());
    }
    text
}

/// `gzip -n LEVEL` of `data` (no name, no time stamp).
pub(crate) fn gzip(tool: &Path, level: u32, data: &[u8]) -> Vec<u8> {
    let mut child = Command::new(tool)
        .arg("-c")
        .arg("-n")
        .arg(format!("-{level}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting gzip");
    let mut stdin = child.stdin.take().unwrap();
    let data = data.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&data).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "gzip -{level} failed");
    out.stdout
}

/// gzip's DEFLATE stream inside a member written by `gzip -n`.
pub(crate) fn deflate_of(gz: &[u8]) -> &[u8] {
    &gz[10..gz.len() - 8]
}

/// A complete literal/length code: a, b in 2 bits; end of block and
/// lengths 3, 4, 11-12 (symbol 265) in 3.
fn lit_abc() -> Vec<u8> {
    lengths(
        266,
        &[(97, 2), (98, 2), (256, 3), (257, 3), (258, 3), (265, 3)],
    )
}

/// gzip's own output at every level, of text, noise, runs and nothing.
pub(crate) fn gzip_outputs(cases: &mut Cases, gz: &Path, rng: &mut Rng) {
    let text = config_text(rng, 60_000);
    let noise = rng.bytes(70_000);
    let mut mixed = config_text(rng, 20_000);
    mixed.extend(rng.bytes(20_000));
    mixed.extend(config_text(rng, 20_000));
    let inputs: Vec<(&str, Vec<u8>)> = vec![
        ("config text", text.clone()),
        ("random bytes (stored blocks)", noise),
        ("text, noise, text", mixed),
        ("empty", Vec::new()),
        ("one byte", b"y".to_vec()),
        ("short line (fixed block)", b"CONFIG_A=y\n".to_vec()),
        ("run of one byte (distance 1)", vec![b'a'; 300_000]),
        ("run of 3 bytes (distance 3)", b"ab\n".repeat(50_000)),
        (
            "run then text",
            [vec![0u8; 70_000], text[..5000].to_vec()].concat(),
        ),
    ];
    for (name, data) in &inputs {
        for level in 1..=9 {
            cases.add(format!("gzip -{level} of {name}"), gzip(gz, level, data));
        }
    }
    // Members concatenated (as `cat a.gz b.gz`), an empty one among them.
    let mut multi = gzip(gz, 6, &text[..20_000]);
    multi.extend(gzip(gz, 1, b""));
    multi.extend(gzip(gz, 9, &text[20_000..]));
    cases.add("three members, the middle one empty", multi);
    let mut small_last = gzip(gz, 6, &text);
    small_last.extend(gzip(gz, 6, b"x"));
    cases.add(
        "a big member then a 1-byte one (last ISIZE small)",
        small_last,
    );
    let mut many = Vec::new();
    for i in 0..300 {
        many.extend(gzip(gz, 1, &text[i * 10..i * 10 + i % 3]));
    }
    cases.add("300 members of 0 to 2 bytes", many);
    // Exactly our cap in two members: read. Over it: Go reads it all, ours
    // refuses (left out of the comparison).
    let half = gzip(gz, 9, &vec![0; CAP / 2]);
    cases.add(
        "two members of 2 MiB (our cap)",
        [&half[..], &half].concat(),
    );
    let mut over = gzip(gz, 9, b"x");
    over.extend(&half);
    over.extend(&half);
    cases.add("three members, one byte over our cap", over);
    cases.add(
        "5 MiB of zeros (over our cap)",
        gzip(gz, 9, &vec![0; 5 << 20]),
    );
}

/// Headers with every flag, fields at Go's limits, and damaged headers,
/// around gzip's own DEFLATE stream of a line.
pub(crate) fn header_cases(cases: &mut Cases, gz: &Path) {
    let data = b"CONFIG_A=y\nCONFIG_B=m\n";
    let deflate = deflate_of(&gzip(gz, 9, data)).to_vec();
    let with = |h: Vec<u8>| [h, deflate.clone(), trailer(data)].concat();
    for flags in 0..32u8 {
        let h = header(flags, b"AB\x02\x00xy", b"config", b"kernel config", true);
        cases.add(format!("flags {flags:#04x}"), with(h));
    }
    for flags in [FHCRC, FHCRC | FEXTRA | FNAME | FCOMMENT, FHCRC | FTEXT] {
        let h = header(flags, b"AB\x00\x00", b"n", b"c", false);
        cases.add(format!("flags {flags:#04x}, wrong header CRC16"), with(h));
    }
    for reserved in [0x20u8, 0x40, 0x80, 0xe0] {
        for flags in [0, FNAME | FHCRC] {
            let h = header(flags | reserved, b"", b"name", b"", true);
            cases.add(
                format!("reserved flag bits {:#04x}", flags | reserved),
                with(h),
            );
        }
    }
    for n in [0usize, 1, 255, 510, 511, 512, 513, 2000] {
        let s = vec![b'n'; n];
        cases.add(
            format!("name of {n} bytes"),
            with(header(FNAME, b"", &s, b"", true)),
        );
        cases.add(
            format!("comment of {n} bytes"),
            with(header(FCOMMENT | FHCRC, b"", b"", &s, true)),
        );
    }
    cases.add(
        "Latin-1 name and comment",
        with(header(FNAME | FCOMMENT, b"", b"\xe9t\xe9", b"\xff", true)),
    );
    for n in [0usize, 1, 300, 65535] {
        let x = vec![7u8; n];
        cases.add(
            format!("extra field of {n} bytes"),
            with(header(FEXTRA | FHCRC, &x, b"", b"", true)),
        );
    }
    let mut h = header(FEXTRA, b"", b"", b"", true);
    h.truncate(10);
    h.extend_from_slice(&[0xff, 0xff, 1, 2, 3]);
    cases.add(
        "extra field longer than the input",
        [h, deflate.clone()].concat(),
    );
    let mut h = header(FNAME, b"", b"unterminated", b"", true);
    h.pop();
    cases.add("name without its NUL to the end", h);
    for (i, v, what) in [
        (0, 0x1e, "bad magic 1"),
        (1, 0x8c, "bad magic 2"),
        (2, 7, "method 7"),
        (2, 0, "method 0"),
        (8, 0xff, "any XFL"),
        (9, 0xff, "any OS"),
        (4, 0xff, "any MTIME"),
    ] {
        let mut h = header(0, b"", b"", b"", true);
        h[i] = v;
        cases.add(what, with(h));
    }
    cases.add("no input", Vec::new());
    cases.add("header only", header(0, b"", b"", b"", true));
    cases.add("plain text", b"CONFIG_A=y\nCONFIG_B=y\n".to_vec());
}

/// Hand-built DEFLATE streams: the corners where decoders differ.
pub(crate) fn deflate_cases(cases: &mut Cases, rng: &mut Rng) {
    let fl = Code::fixed_lit();
    let fd = Code::fixed_dist();

    // Huffman codes: complete, incomplete, over-subscribed, single codes.
    let mut s = Stream::default();
    let (l, d) = s.dynamic(true, &lit_abc(), &[1, 1]);
    s.lit(&l, b'a');
    s.lit(&l, b'b');
    s.copy(&l, &d, 3, 1);
    s.copy(&l, &d, 11, 2);
    s.copy(&l, &d, 4, 2);
    s.end(&l);
    cases.add("dynamic: complete codes", s.member());

    let lit_sets: &[(&str, &[(usize, u8)])] = &[
        (
            "incomplete (a, b, end: 2 bits each)",
            &[(97, 2), (98, 2), (256, 2)],
        ),
        ("incomplete (a: 1 bit, end: 3 bits)", &[(97, 1), (256, 3)]),
        ("over-subscribed", &[(97, 1), (98, 2), (99, 2), (256, 2)]),
        ("one code, end of block in 1 bit", &[(256, 1)]),
        ("one code, end of block in 2 bits", &[(256, 2)]),
        ("one code, end of block in 15 bits", &[(256, 15)]),
        ("no end of block (a, b: 1 bit)", &[(97, 1), (98, 1)]),
    ];
    for (what, pairs) in lit_sets {
        let lit = lengths(257, pairs);
        let mut s = Stream::default();
        let (l, _) = s.dynamic(true, &lit, &[0]);
        for b in [b'a', b'b'] {
            if l.0[usize::from(b)].1 > 0 {
                s.lit(&l, b);
            }
        }
        if l.0[256].1 > 0 {
            s.end(&l);
        }
        cases.add(format!("literal/length code {what}"), s.member());
    }

    let dist_sets: &[(&str, &[u8], Option<usize>)] = &[
        ("one code of 1 bit, used", &[1], Some(1)),
        (
            "one code of 1 bit (distance 4), used",
            &[0, 0, 0, 1],
            Some(4),
        ),
        ("one code of 1 bit, unused", &[1], None),
        ("one code of 2 bits, unused", &[2], None),
        ("one code of 2 bits, used", &[2], Some(1)),
        ("one code of 15 bits, unused", &[0, 15], None),
        ("incomplete (1 and 2 bits), unused", &[1, 2], None),
        ("incomplete (1 and 2 bits), used", &[1, 2], Some(1)),
        ("over-subscribed, unused", &[1, 1, 1], None),
        ("none, unused", &[0], None),
        ("none, 30 zero lengths, unused", &[0; 30], None),
    ];
    for (what, dist, back) in dist_sets {
        let mut s = Stream::default();
        let (l, d) = s.dynamic(true, &lit_abc(), dist);
        for &b in b"abab" {
            s.lit(&l, b);
        }
        if let Some(back) = back {
            s.copy(&l, &d, 4, *back);
        }
        s.lit(&l, b'a');
        s.end(&l);
        cases.add(format!("distance code {what}"), s.member());
    }
    // A match when there is no distance code: whatever bits follow.
    let mut s = Stream::default();
    let (l, _) = s.dynamic(true, &lit_abc(), &[0]);
    s.lit(&l, b'a');
    s.sym(&l, 257);
    s.w.put(0, 16);
    s.end(&l);
    cases.add("distance code none, a match", s.member());

    // Codes up to 15 bits (past both decoders' first table look-up).
    let mut long = vec![0u8; 286];
    for (i, sym) in [
        97usize, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110,
    ]
    .into_iter()
    .enumerate()
    {
        long[sym] = i as u8 + 1;
    }
    long[257] = 15;
    long[256] = 15;
    let dist_long: Vec<u8> = (1..=15).chain([15]).collect();
    for (what, end_first) in [
        ("long codes", false),
        ("long codes, end of block alone", true),
    ] {
        let mut s = Stream::default();
        let (l, d) = s.dynamic(true, &long, &dist_long);
        if !end_first {
            for b in b"abcdefghijklmn" {
                s.lit(&l, *b);
            }
            s.copy(&l, &d, 3, 1);
            s.raw_copy(&l, &d, (0, 0), (15, 5));
            s.lit(&l, b'n');
            s.raw_copy(&l, &d, (0, 0), (14, 20));
        }
        s.end(&l);
        cases.add(format!("dynamic: {what}"), s.member());
    }

    // The code-length code: the lengths below use 0, 1 and 2 only.
    let lit = lengths(257, &[(97, 1), (98, 2), (256, 2)]);
    let plain: Vec<Sym> = lit.iter().chain(&[1, 1]).map(|&v| (v.into(), 0)).collect();
    let cl_sets: &[(&str, [u8; 19], &[Sym])] = &[
        (
            "complete (0, 1, 2 and 18 in 2 bits)",
            [2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
            &plain,
        ),
        (
            "incomplete (0, 1, 2 in 2 bits)",
            [2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            &plain,
        ),
        (
            "over-subscribed",
            [1, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            &plain,
        ),
        (
            "one code of 1 bit (18: every length 0)",
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            &[(18, 127), (18, 110)],
        ),
        ("none (4 zero lengths)", [0; 19], &[]),
    ];
    for (what, cl, seq) in cl_sets {
        let mut s = Stream::default();
        s.dynamic_header(true, 257, 2, cl, seq);
        // The data as `lit` codes it (what follows a header that sends
        // other lengths is an error either way).
        let l = Code::new(&lit);
        s.lit(&l, b'a');
        s.lit(&l, b'b');
        s.end(&l);
        cases.add(format!("code-length code {what}"), s.member());
    }

    // Repeats in the code lengths. The literal/length code is a in 1 bit,
    // 0xff and end of block in 2; "prefix" sends its lengths up to 0xff's.
    let lit = lengths(257, &[(97, 1), (255, 2), (256, 2)]);
    let mut prefix: Vec<Sym> = vec![(0, 0); 97];
    prefix.push((1, 0));
    prefix.extend([(18, 138 - 11), (18, 19 - 11), (2, 0)]);
    let with = |tail: &[Sym]| [&prefix[..], tail].concat();
    let repeat_sets: Vec<(&str, usize, Vec<Sym>)> = vec![
        (
            "16 at the start",
            4,
            [&[(16, 0)], &prefix[1..], &[(16, 2)]].concat(),
        ),
        (
            "16 across literal/length and distance lengths",
            4,
            with(&[(16, 2)]),
        ),
        ("16 running past nlen + ndist", 4, with(&[(16, 3)])),
        (
            "17 ending exactly at nlen + ndist",
            3,
            with(&[(2, 0), (17, 0)]),
        ),
        ("17 running past nlen + ndist", 3, with(&[(2, 0), (17, 7)])),
        (
            "18 ending exactly at nlen + ndist",
            11,
            with(&[(2, 0), (18, 0)]),
        ),
        (
            "18 running past nlen + ndist",
            11,
            with(&[(2, 0), (18, 127)]),
        ),
    ];
    for (what, ndist, seq) in &repeat_sets {
        let mut s = Stream::default();
        s.dynamic_header(true, 257, *ndist, &CL_ALL, seq);
        let l = Code::new(&lit);
        s.lit(&l, b'a');
        s.lit(&l, 0xff);
        s.lit(&l, b'a');
        s.end(&l);
        cases.add(format!("code-length repeat {what}"), s.member());
    }

    // Counts at their limits and past them: 286 literal/length codes
    // (226 in 8 bits, 60 in 9) and 30 distance codes (2 in 4 bits, 28 in 5).
    for (nlen, ndist) in [
        (286usize, 30usize),
        (287, 30),
        (288, 30),
        (286, 31),
        (286, 32),
    ] {
        let mut lit = vec![8u8; 286];
        lit[226..].fill(9);
        let mut dist = vec![5u8; 30];
        dist[..2].fill(4);
        let seq: Vec<Sym> = (0..nlen + ndist)
            .map(|i| match i.checked_sub(nlen) {
                None => (usize::from(lit.get(i).copied().unwrap_or(0)), 0),
                Some(j) => (usize::from(dist.get(j).copied().unwrap_or(0)), 0),
            })
            .collect();
        let mut s = Stream::default();
        s.dynamic_header(true, nlen, ndist, &CL_ALL, &seq);
        let (l, d) = (Code::new(&lit), Code::new(&dist));
        s.lit(&l, b'a');
        s.copy(&l, &d, 258, 1);
        s.lit(&l, 0xff);
        s.end(&l);
        cases.add(format!("nlen {nlen}, ndist {ndist}"), s.member());
    }

    // Length and distance symbols past the tables, in fixed blocks.
    for (what, lsym, dsym) in [
        ("length symbol 284 + 31 (258)", (27, 31), (0, 0)),
        ("length symbol 285 (258)", (28, 0), (0, 0)),
        ("length symbol 286", (29, 0), (0, 0)),
        ("length symbol 287", (30, 0), (0, 0)),
        ("distance symbol 29 after 1 byte", (0, 0), (29, 0)),
        ("distance symbol 30", (0, 0), (30, 0)),
        ("distance symbol 31", (0, 0), (31, 0)),
    ] {
        let mut s = Stream::default();
        s.block(true, 1);
        s.lit(&fl, b'x');
        s.raw_copy(&fl, &fd, lsym, dsym);
        s.lit(&fl, b'y');
        s.end(&fl);
        cases.add(format!("fixed: {what}"), s.member());
    }

    // Distances: to the first byte, one too far, the whole window.
    for (what, out, back) in [
        ("distance 1 with nothing yet", 0usize, 1usize),
        ("distance to the first byte", 5, 5),
        ("distance one past the first byte", 5, 6),
        ("distance 32768 after 32768 bytes", 32768, 32768),
        ("distance 32768 after 32767 bytes", 32767, 32768),
    ] {
        let mut s = Stream::default();
        let data = rng.bytes(out);
        if out > 100 {
            s.stored(false, &data);
            s.block(true, 1);
        } else {
            s.block(true, 1);
            for &b in &data {
                s.lit(&fl, b);
            }
        }
        s.copy(&fl, &fd, 10, back);
        s.end(&fl);
        cases.add(format!("fixed: {what}"), s.member());
    }
    // A distance back into the previous gzip member: each member is a
    // DEFLATE stream of its own.
    let mut first = Stream::default();
    first.block(true, 1);
    for &b in b"abc" {
        first.lit(&fl, b);
    }
    first.end(&fl);
    let mut second = Stream::default();
    second.block(true, 1);
    second.out.extend_from_slice(b"abc");
    second.copy(&fl, &fd, 3, 3);
    second.end(&fl);
    second.out.drain(..3);
    let mut both = first.member();
    both.extend(second.member());
    cases.add("second member's distance reaches into the first", both);
    let mut second = Stream::default();
    second.block(true, 1);
    second.lit(&fl, b'd');
    second.copy(&fl, &fd, 3, 1);
    second.end(&fl);
    let mut both = first.member();
    both.extend(second.member());
    cases.add("second member's distance within itself", both);

    // Stored blocks.
    let data = rng.bytes(1000);
    let mut s = Stream::default();
    s.stored(true, &data);
    let good = s.member();
    cases.add("stored block", good.clone());
    let mut bad = good.clone();
    bad[10 + 3] ^= 1;
    cases.add("stored block, NLEN wrong", bad);
    let mut s = Stream::default();
    s.stored(false, b"");
    s.stored(true, b"");
    cases.add("stored blocks of 0 bytes", s.member());
    let mut s = Stream::default();
    s.block(false, 1);
    s.lit(&fl, b'q');
    s.end(&fl);
    s.stored(false, b"stored after 10 bits");
    s.block(true, 1);
    s.copy(&fl, &fd, 6, 6);
    s.end(&fl);
    cases.add("fixed, stored (aligned from bit 10), fixed", s.member());
    let mut s = Stream::default();
    s.stored(true, &rng.bytes(65535));
    cases.add("stored block of 65535 bytes", s.member());
    let mut s = Stream::default();
    s.block(true, 0);
    s.w.align();
    s.w.put(500, 16);
    s.w.put(!500, 16);
    s.w.bytes.extend_from_slice(&[1; 20]);
    cases.add("stored block longer than the input", s.member());

    // Block type 3, first and after a block.
    let mut s = Stream::default();
    s.block(true, 3);
    s.w.put(0, 16);
    cases.add("block type 3", s.member());
    let mut s = Stream::default();
    s.block(false, 1);
    s.lit(&fl, b'z');
    s.end(&fl);
    s.block(true, 3);
    s.w.put(0, 16);
    cases.add("fixed then block type 3", s.member());
    let mut s = Stream::default();
    s.block(false, 1);
    s.lit(&fl, b'z');
    s.end(&fl);
    cases.add("no last block", s.member());

    // Streams ending at every bit of their last byte, whole and one byte
    // short (the rest of their bits then come from the trailer).
    for nine in 0..8 {
        let mut s = Stream::default();
        s.block(true, 1);
        for i in 0..nine {
            s.lit(&fl, 144 + i as u8);
        }
        s.lit(&fl, b'k');
        s.end(&fl);
        let bits = s.w.bytes.len() * 8 + s.w.n as usize;
        let whole = s.member();
        cases.add(format!("fixed block of {bits} bits"), whole.clone());
        let mut short = whole.clone();
        short.remove(short.len() - 9);
        cases.add(format!("fixed block of {bits} bits, last byte cut"), short);
    }
}

/// Trailers: wrong CRC or size, lying sizes, bytes after the last member.
pub(crate) fn trailer_cases(cases: &mut Cases, gz: &Path, rng: &mut Rng) {
    let data = config_text(rng, 3000);
    let good = gzip(gz, 6, &data);
    let n = good.len();
    for (what, at, x) in [
        ("CRC low byte wrong", n - 8, 1u8),
        ("CRC high byte wrong", n - 5, 0x80),
        ("ISIZE low bit wrong", n - 4, 1),
        ("ISIZE high byte set (lies 16 MiB+ big)", n - 1, 1),
    ] {
        let mut m = good.clone();
        m[at] ^= x;
        cases.add(format!("trailer: {what}"), m);
    }
    let size = data.len() as u32;
    for size in [0, 1, size - 1, size + 1, 0xffff_ffff, 0x0040_0000] {
        let mut m = good.clone();
        m[n - 4..].copy_from_slice(&size.to_le_bytes());
        cases.add(format!("trailer: ISIZE {size:#x}"), m);
    }
    let second = gzip(gz, 9, b"CONFIG_Z=y\n");
    let tails: Vec<(&str, Vec<u8>)> = vec![
        ("1 zero byte", vec![0]),
        ("8 zero bytes", vec![0; 8]),
        ("10 zero bytes", vec![0; 10]),
        ("512 zero bytes", vec![0; 512]),
        ("garbage byte", vec![b'x']),
        ("gzip magic only", vec![0x1f, 0x8b]),
        ("9 bytes of a header", second[..9].to_vec()),
        ("a whole header", second[..10].to_vec()),
        ("garbage", b"trailing garbage after the member".to_vec()),
        ("the same trailer again", good[n - 8..].to_vec()),
        ("an empty member", gzip(gz, 6, b"")),
    ];
    for (what, tail) in tails {
        cases.add(format!("trailing {what}"), [good.clone(), tail].concat());
    }
    for cut in 0..second.len() {
        cases.add(
            format!("second member cut at {cut}"),
            [good.clone(), second[..cut].to_vec()].concat(),
        );
    }
}

/// Every truncation of a few small streams.
pub(crate) fn truncations(cases: &mut Cases, gz: &Path, rng: &mut Rng) {
    let text = config_text(rng, 400);
    let mut s = Stream::default();
    s.stored(false, b"stored");
    s.block(true, 1);
    s.lit(&Code::fixed_lit(), b'!');
    s.end(&Code::fixed_lit());
    let flagged = [
        header(FNAME | FCOMMENT | FEXTRA | FHCRC, b"ex", b"nm", b"cm", true),
        deflate_of(&gzip(gz, 9, &text)).to_vec(),
        trailer(&text),
    ]
    .concat();
    let streams: Vec<(&str, Vec<u8>)> = vec![
        ("gzip -9 of 400 bytes of config", gzip(gz, 9, &text)),
        ("gzip -1 of a line", gzip(gz, 1, b"CONFIG_A=y\n")),
        ("stored then fixed", s.member()),
        ("every header field", flagged),
    ];
    for (what, full) in streams {
        for cut in 0..full.len() {
            cases.add(format!("{what}, cut to {cut} bytes"), full[..cut].to_vec());
        }
    }
}

/// Single-bit flips of a real-sized stream: this machine's
/// /proc/config.gz when readable, else gzip -9 of a generated config.
pub(crate) fn bit_flips(cases: &mut Cases, gz: &Path, rng: &mut Rng) -> Vec<u8> {
    let real = std::fs::read("/proc/config.gz")
        .ok()
        .filter(|g| g.len() > 1000);
    let (what, full) = match real {
        Some(g) => ("/proc/config.gz", g),
        None => (
            "gzip -9 of 100 KB of config",
            gzip(gz, 9, &config_text(rng, 100_000)),
        ),
    };
    cases.add(what, full.clone());
    let n = full.len();
    // Every bit of the header and the trailer, and random ones between,
    // more of them near the start (the first block's code lengths).
    let mut bits: Vec<usize> = (0..80).chain((n - 8) * 8..n * 8).collect();
    bits.extend((0..60).map(|_| 80 + rng.below(400 * 8)));
    bits.extend((0..160).map(|_| 80 + rng.below((n - 18) * 8)));
    for bit in bits {
        let mut m = full.clone();
        m[bit / 8] ^= 1 << (bit % 8);
        cases.add(format!("{what}, bit {bit} flipped"), m);
    }
    full
}

/// Random valid streams of 1 to 4 blocks (dynamic, fixed, stored), each a
/// gzip member; the streams, for mutating.
pub(crate) fn random_streams(cases: &mut Cases, rng: &mut Rng) -> Vec<Vec<u8>> {
    let fl = Code::fixed_lit();
    let fd = Code::fixed_dist();
    let lits: Vec<usize> = (0..256).collect();
    let lens: Vec<usize> = (257..286).collect();
    let dists: Vec<usize> = (0..30).collect();
    let mut streams = Vec::new();
    for i in 0..150 {
        let mut s = Stream::default();
        let blocks = 1 + rng.below(4);
        for b in 0..blocks {
            let last = b + 1 == blocks;
            match rng.below(10) {
                0..=5 => random_dynamic(rng, &mut s, last),
                6..=8 => {
                    s.block(last, 1);
                    random_body(rng, &mut s, (&fl, &lits, &lens), (&fd, &dists));
                }
                _ => {
                    let n = rng.below(300);
                    s.stored(last, &rng.bytes(n));
                }
            }
        }
        streams.push(s.bytes());
        cases.add(format!("random stream {i}"), s.member());
    }
    streams
}

/// DEFLATE streams with one bit flipped: every bit of a small one from
/// gzip, random bits of the random streams and of the real-sized one.
pub(crate) fn mutated_streams(
    gz: &Path,
    rng: &mut Rng,
    random: &[Vec<u8>],
    real: &[u8],
) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut flip = |what: &str, stream: &[u8], bit: usize| {
        let mut m = stream.to_vec();
        m[bit / 8] ^= 1 << (bit % 8);
        out.push((format!("{what}, DEFLATE bit {bit} flipped"), m));
    };
    let small = gzip(gz, 9, &config_text(rng, 300));
    let small = deflate_of(&small);
    for bit in 0..small.len() * 8 {
        flip("gzip -9 of 300 bytes of config", small, bit);
    }
    for (i, stream) in random.iter().enumerate().take(100) {
        for _ in 0..4 {
            flip(
                &format!("random stream {i}"),
                stream,
                rng.below(stream.len() * 8),
            );
        }
    }
    // The real one's DEFLATE stream, after a plain header (as the
    // kernel's `gzip -n` and ours write it).
    if real[3] == 0 {
        let body = &real[10..real.len() - 8];
        for _ in 0..100 {
            flip("the real-sized stream", body, rng.below(body.len() * 8));
        }
    }
    out
}

/// One run of an oracle (Go's, or tests/support/zlib-gunzip.py) on `(kind,
/// input)` records (0: gzip, 1: DEFLATE): for each, whether it read it to
/// the end, and the record's bytes.
pub(crate) fn run_oracle(mut oracle: Command, records: &[(u8, &[u8])]) -> Vec<(bool, Vec<u8>)> {
    let mut child = oracle
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the gunzip oracle");
    let mut stdin = child.stdin.take().unwrap();
    let mut input = Vec::new();
    for (kind, bytes) in records {
        input.push(*kind);
        input.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        input.extend_from_slice(bytes);
    }
    let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    writer.join().unwrap();
    assert!(child.wait().unwrap().success(), "the gunzip oracle failed");
    let mut answers = Vec::new();
    let mut rest = &out[..];
    while let [status, a, b, c, d, tail @ ..] = rest {
        let len = u32::from_le_bytes([*a, *b, *c, *d]) as usize;
        let (body, tail) = tail.split_at(len);
        answers.push((*status == 0, body.to_vec()));
        rest = tail;
    }
    assert!(rest.is_empty(), "oracle output ends mid-record");
    assert_eq!(answers.len(), records.len(), "one answer per input");
    answers
}

/// What NFD's read gives for each case.
fn go_gunzip(bin: &Path, cases: &[Case]) -> Vec<Answer> {
    let records: Vec<(u8, &[u8])> = cases.iter().map(|c| (0, &c.input[..])).collect();
    run_oracle(Command::new(bin), &records)
        .into_iter()
        .map(|(ok, body)| match ok {
            true => Ok(body),
            false => Err(String::from_utf8_lossy(&body).into_owned()),
        })
        .collect()
}

/// Mutated DEFLATE streams, each in a gzip member whose trailer is what
/// Go's compress/flate makes of it (the data before the error, when it
/// errs), so a mutation the CRC would hide is compared too. The member
/// holds the bytes Go's stream took, or all of them when it erred.
fn wrapped_by_go(cases: &mut Cases, bin: &Path, streams: &[(String, Vec<u8>)]) {
    let records: Vec<(u8, &[u8])> = streams.iter().map(|(_, s)| (1, &s[..])).collect();
    for ((name, stream), (ok, body)) in streams.iter().zip(run_oracle(Command::new(bin), &records))
    {
        let took = u32::from_le_bytes(body[..4].try_into().unwrap()) as usize;
        let data = &body[4..];
        let stream = if ok { &stream[..took] } else { &stream[..] };
        let verdict = if ok { "Go inflates it" } else { "Go errs" };
        cases.add(format!("{name} ({verdict})"), member(stream, data));
    }
}

fn describe(a: &Option<Vec<u8>>) -> String {
    match a {
        Some(d) => format!("{} bytes {:?}", d.len(), preview(d)),
        None => "None".into(),
    }
}

pub(crate) fn preview(d: &[u8]) -> String {
    String::from_utf8_lossy(&d[..d.len().min(40)]).into_owned()
}

pub(crate) fn hex(d: &[u8]) -> String {
    let shown: String = d.iter().take(48).map(|b| format!("{b:02x}")).collect();
    if d.len() > 48 {
        format!("{shown}... ({} bytes)", d.len())
    } else {
        shown
    }
}

#[test]
fn gunzip_agrees_with_go_compress_gzip() {
    let Some(gz) = skipped::tool("gzip") else {
        return;
    };
    let dir = scratch_dir();
    let Some(oracle) = current_go::build_support_oracle("go-gunzip", dir.path()) else {
        return;
    };
    let mut rng = Rng(0x6b75_6265_6c65_7421);
    let mut cases = Cases::default();
    gzip_outputs(&mut cases, &gz, &mut rng);
    header_cases(&mut cases, &gz);
    deflate_cases(&mut cases, &mut rng);
    trailer_cases(&mut cases, &gz, &mut rng);
    truncations(&mut cases, &gz, &mut rng);
    let real = bit_flips(&mut cases, &gz, &mut rng);
    let streams = random_streams(&mut cases, &mut rng);
    let mutated = mutated_streams(&gz, &mut rng, &streams, &real);
    wrapped_by_go(&mut cases, &oracle, &mutated);
    let answers = go_gunzip(&oracle, &cases.0);

    let (mut read, mut errors, mut over_cap) = (0, 0, 0);
    let mut differ = Vec::new();
    for (case, go) in cases.0.iter().zip(&answers) {
        let ours = std::panic::catch_unwind(|| gunzip(&case.input, CAP));
        let Ok(ours) = ours else {
            differ.push(format!(
                "{}: ours panicked; input {}",
                case.name,
                hex(&case.input)
            ));
            continue;
        };
        match go {
            Ok(data) if data.len() > CAP => {
                over_cap += 1;
                assert_eq!(ours, None, "{}: over the cap, ours must refuse", case.name);
            }
            Ok(data) => {
                read += 1;
                if ours.as_deref() != Some(&data[..]) {
                    differ.push(format!(
                        "{}: Go reads {} bytes {:?}, ours {}; input {}",
                        case.name,
                        data.len(),
                        preview(data),
                        describe(&ours),
                        hex(&case.input)
                    ));
                }
            }
            Err(e) => {
                errors += 1;
                if ours.is_some() {
                    differ.push(format!(
                        "{}: Go errors ({e}), ours {}; input {}",
                        case.name,
                        describe(&ours),
                        hex(&case.input)
                    ));
                }
            }
        }
    }
    // Not vacuous: both outcomes are well represented.
    assert!(
        read > 1000 && errors > 1000 && over_cap == 2,
        "{read} read, {errors} errors, {over_cap} over the cap"
    );
    assert!(
        differ.is_empty(),
        "{} of {} inputs differ from Go's compress/gzip:\n{}",
        differ.len(),
        cases.0.len(),
        differ.join("\n")
    );
}
