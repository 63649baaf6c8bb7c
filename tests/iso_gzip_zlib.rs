//! Differential test: the gzip members of an ISO's embed area as we read
//! them (`cli::iso::gunzip_member`, behind `iso show/embed/remove/fleet`)
//! against the kernel's initramfs gunzip (lib/decompress_inflate.c, whose
//! inflate is zlib's), modelled by tests/support/zlib-gunzip.py with
//! Python's zlib (review 12 r12c F5: a match reaching before the start of
//! the output, which zlib refuses, "invalid distance too far back", and
//! flate2's miniz_oxide read as zeros, so `iso show` printed a decoy config
//! after a stream the kernel stops on).
//!
//! What we read, the kernel reads the same: the same bytes, the same length
//! of member. What the kernel reads we read too, except where we refuse on
//! purpose: header fields beyond a file name (the kernel takes them for
//! DEFLATE data), a CRC or size in the trailer that is not the data's (the
//! kernel skips the trailer unread), a trailer cut short. The inputs are
//! tests/gunzip_go.rs's (gzip's output, every header flag, hand-built
//! corners of Huffman codes and symbols, trailers, truncations, bit flips,
//! random and mutated streams), and matches reaching before the output.

use crate::gunzip_go::{
    Cases, bit_flips, deflate_cases, gzip_outputs, header_cases, hex, mutated_streams, preview,
    random_streams, run_oracle, trailer_cases, truncations,
};
use crate::iso_hostile::{ATTACKER, DECOY, archive, file, member};
use crate::support::deflate::{Code, Rng, Stream, crc32, lengths};
use crate::support::{repo, skipped};

use std::process::Command;

use kubelet_labeler::cli::iso::{gunzip_member, read_members};

/// The kernel's reading of a gzip member: the bytes it takes and its data,
/// or zlib's error.
type Reading = Result<(usize, Vec<u8>), String>;

/// The kernel's reading of each gzip member; None without python3.
fn kernel_gunzip(members: &[&[u8]]) -> Option<Vec<Reading>> {
    skipped::tool("python3")?;
    let mut oracle = Command::new("python3");
    oracle.arg(repo().join("tests/support/zlib-gunzip.py"));
    let records: Vec<(u8, &[u8])> = members.iter().map(|m| (0, *m)).collect();
    let answers = run_oracle(oracle, &records)
        .into_iter()
        .map(|(ok, body)| match ok {
            true => Ok((
                u32::from_le_bytes(body[..4].try_into().unwrap()) as usize,
                body[4..].to_vec(),
            )),
            false => Err(String::from_utf8_lossy(&body).into_owned()),
        })
        .collect();
    Some(answers)
}

/// Mutated DEFLATE streams, each in a gzip member whose trailer is what
/// zlib makes of it (the data before the error, when it errs), so that a
/// mutation the CRC would hide is compared too.
fn wrapped_by_zlib(cases: &mut Cases, streams: &[(String, Vec<u8>)]) -> Option<()> {
    skipped::tool("python3")?;
    let mut oracle = Command::new("python3");
    oracle.arg(repo().join("tests/support/zlib-gunzip.py"));
    let records: Vec<(u8, &[u8])> = streams.iter().map(|(_, s)| (1, &s[..])).collect();
    for ((name, stream), (ok, body)) in streams.iter().zip(run_oracle(oracle, &records)) {
        let took = u32::from_le_bytes(body[..4].try_into().unwrap()) as usize;
        let data = &body[4..];
        let verdict = if ok { "zlib inflates it" } else { "zlib errs" };
        let member = crate::support::deflate::member(&stream[..took], data);
        cases.add(format!("{name} ({verdict})"), member);
    }
    Some(())
}

/// A fixed-Huffman member: `before` as literals, a copy of `len` bytes
/// from `back`, then `after`; its trailer computed as if the copy read
/// zeros where it reaches before the output (miniz_oxide's reading), so
/// that only the distance tells the readers apart.
fn far_back(before: &[u8], len: usize, back: usize, after: &[u8]) -> Vec<u8> {
    let (l, d) = (Code::fixed_lit(), Code::fixed_dist());
    let mut s = Stream::default();
    s.block(true, 1);
    for &b in before {
        s.lit(&l, b);
    }
    let had = s.out.len();
    s.copy(&l, &d, len, back);
    if s.out.len() == had {
        let mut window = vec![0u8; 32768];
        window.extend_from_slice(&s.out);
        for _ in 0..len {
            window.push(window[window.len() - back]);
        }
        s.out = window[32768..].to_vec();
    }
    for &b in after {
        s.lit(&l, b);
    }
    s.end(&l);
    s.member()
}

/// Matches at and past the start of the output, in fixed, dynamic and
/// stored-then-fixed blocks, up to the window's 32 KiB.
fn far_back_cases(cases: &mut Cases) {
    for (before, back) in [
        (1usize, 1usize),
        (1, 2),
        (3, 3),
        (3, 4),
        (100, 100),
        (100, 101),
    ] {
        let text: Vec<u8> = (0..before).map(|i| b'a' + (i % 26) as u8).collect();
        cases.add(
            format!("fixed: {before} literals, a match {back} back"),
            far_back(&text, 3, back, b"!"),
        );
    }
    cases.add("fixed: a match first", far_back(b"", 3, 1, b"x"));
    for (size, back) in [(32768usize, 32768usize), (32767, 32768), (40000, 32768)] {
        let mut s = Stream::default();
        let data: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
        for chunk in data.chunks(65535) {
            s.stored(false, chunk);
        }
        let (l, d) = (Code::fixed_lit(), Code::fixed_dist());
        s.block(true, 1);
        let had = s.out.len();
        s.copy(&l, &d, 258, back);
        if s.out.len() == had {
            s.out.extend(std::iter::repeat_n(0, 258));
        }
        s.end(&l);
        cases.add(
            format!("stored {size} bytes, then a match {back} back"),
            s.member(),
        );
    }
    // Dynamic codes, the match reaching one byte before the output.
    for back in [4, 5] {
        let lit = lengths(
            266,
            &[(97, 2), (98, 2), (256, 3), (257, 3), (258, 3), (265, 3)],
        );
        let mut s = Stream::default();
        let (l, d) = s.dynamic(true, &lit, &[0, 0, 0, 2, 2, 1]);
        for &b in b"abab" {
            s.lit(&l, b);
        }
        let had = s.out.len();
        s.copy(&l, &d, 4, back);
        if s.out.len() == had {
            s.out.extend([0; 4]);
        }
        s.end(&l);
        cases.add(
            format!("dynamic: 4 literals, a match {back} back"),
            s.member(),
        );
    }
}

/// Review 12 r12c F5's area: the attacker's config.ign in a plain archive,
/// then a gzip member whose first member's data starts with a match 769
/// bytes back (before the start of the output), then a decoy config.ign.
/// The kernel's zlib stops on the match: it keeps the attacker's config.
fn far_back_area() -> (Vec<u8>, Vec<u8>) {
    let a = &member(b"a", 0o100_600, b"0000")[..112];
    let tail = [b"x".to_vec(), archive(&[file(b"config.ign", DECOY)])].concat();
    let gz = far_back(a, 3, 769, &tail);
    (
        [archive(&[file(b"config.ign", ATTACKER)]), gz.clone()].concat(),
        gz,
    )
}

/// The member after a stream zlib stops on is never read: no decoy shown.
#[test]
fn a_gzip_stream_zlib_stops_on_is_not_read_past() {
    let (area, gz) = far_back_area();
    match read_members(&area) {
        Err(e) => assert!(
            format!("{e:#}").contains("decompressing the embedded archive (gzip)"),
            "{e:#}"
        ),
        Ok(m) => panic!(
            "read as {:?}, past a stream the kernel stops on",
            m.keys().collect::<Vec<_>>()
        ),
    }
    // The kernel's inflate stops there (what makes it a decoy).
    if let Some(k) = kernel_gunzip(&[&gz]) {
        assert!(
            matches!(&k[0], Err(e) if e.contains("invalid distance too far back")),
            "{:?}",
            k[0]
        );
    }
}

#[test]
fn embed_area_gzip_reads_as_the_kernels_zlib() {
    let Some(gz) = skipped::tool("gzip") else {
        return;
    };
    let mut rng = Rng(0x7a6c_6962_2d6b_6572);
    let mut cases = Cases::default();
    far_back_cases(&mut cases);
    gzip_outputs(&mut cases, &gz, &mut rng);
    header_cases(&mut cases, &gz);
    deflate_cases(&mut cases, &mut rng);
    trailer_cases(&mut cases, &gz, &mut rng);
    truncations(&mut cases, &gz, &mut rng);
    let real = bit_flips(&mut cases, &gz, &mut rng);
    let streams = random_streams(&mut cases, &mut rng);
    let mutated = mutated_streams(&gz, &mut rng, &streams, &real);
    if wrapped_by_zlib(&mut cases, &mutated).is_none() {
        return;
    }
    let inputs: Vec<&[u8]> = cases.0.iter().map(|c| &c.input[..]).collect();
    let Some(kernel) = kernel_gunzip(&inputs) else {
        return;
    };

    let (mut both, mut neither, mut on_purpose) = (0, 0, 0);
    let mut differ = Vec::new();
    for (case, k) in cases.0.iter().zip(&kernel) {
        let ours = gunzip_member(&case.input);
        match (&ours, k) {
            (Ok((data, used)), Ok((k_used, k_data))) => {
                both += 1;
                if data != k_data || used != k_used {
                    differ.push(format!(
                        "{}: zlib reads {} bytes {:?} taking {k_used}, ours {} bytes {:?} taking {used}; input {}",
                        case.name,
                        k_data.len(),
                        preview(k_data),
                        data.len(),
                        preview(data),
                        hex(&case.input)
                    ));
                }
            }
            (Ok((data, _)), Err(e)) => differ.push(format!(
                "{}: zlib stops ({e}), ours reads {} bytes {:?}; input {}",
                case.name,
                data.len(),
                preview(data),
                hex(&case.input)
            )),
            (Err(_), Err(_)) => neither += 1,
            (Err(ours), Ok((used, data))) => {
                let m = &case.input;
                let trailer = m.get(used - 8..*used);
                let fields = m[3] & !0x09 != 0;
                let trailer_off = trailer.is_none_or(|t| {
                    t[..4] != crc32(data).to_le_bytes()
                        || t[4..] != (data.len() as u32).to_le_bytes()
                });
                if fields || trailer_off {
                    on_purpose += 1;
                } else {
                    differ.push(format!(
                        "{}: zlib reads {} bytes {:?}, ours refuses ({ours:#}); input {}",
                        case.name,
                        data.len(),
                        preview(data),
                        hex(m)
                    ));
                }
            }
        }
    }
    // Not vacuous: each outcome well represented.
    assert!(
        both > 1000 && neither > 1000 && on_purpose > 50,
        "{both} read by both, {neither} by neither, {on_purpose} refused on purpose"
    );
    assert!(
        differ.is_empty(),
        "{} of {} inputs read otherwise than the kernel's zlib:\n{}",
        differ.len(),
        cases.0.len(),
        differ.join("\n")
    );
}
