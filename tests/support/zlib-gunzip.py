#!/usr/bin/env python3
"""The kernel's initramfs gunzip (lib/decompress_inflate.c), with Python's
zlib as its inflate (the kernel's lib/zlib_inflate is zlib's), for
tests/iso_gzip_zlib.rs.

Records on stdin: a kind byte, a u32 (little-endian) length, the bytes.
Kind 0, a gzip member as the kernel reads it: magic and method checked,
FNAME skipped, every other flag ignored, a raw inflate to its end; CRC and
ISIZE never read (it skips 8 bytes). Kind 1, a raw DEFLATE stream.
Answers on stdout, one per record: a status byte (0: read to the end), a u32
length, then for kind 0 a u32 of the bytes it takes (the trailer's 8
included) and the data, for kind 1 a u32 of the bytes the stream takes and
the data before its end or its error; on an error of kind 0, the message.
"""
import struct
import sys
import zlib


def inflate(raw):
    """(ok, bytes taken, data): the data before an error when it errs."""
    d = zlib.decompressobj(-15)
    out = []
    i = 0
    try:
        for i in range(0, len(raw), 256):
            out.append(d.decompress(raw[i:i + 256]))
            if d.eof:
                break
    except zlib.error as e:
        return False, str(e), b"".join(out)
    if not d.eof:
        return False, "read error (the stream ends before its last block)", b"".join(out)
    # unused_data holds what followed the stream in the last chunk fed.
    fed = min(len(raw), i + 256)
    taken = fed - len(d.unused_data)
    return True, taken, b"".join(out)


def kernel_gunzip(b):
    if len(b) < 10 or b[0] != 0x1F or b[1] != 0x8B or b[2] != 8:
        return False, "Not a gzip file", b""
    i = 10
    if b[3] & 8:
        while True:
            if i >= len(b):
                return False, "header error", b""
            i += 1
            if b[i - 1] == 0:
                break
    ok, taken, data = inflate(b[i:])
    if not ok:
        return False, taken, b""
    return True, i + taken + 8, data


def main():
    inp = sys.stdin.buffer.read()
    out = sys.stdout.buffer
    at = 0
    while at < len(inp):
        kind = inp[at]
        (n,) = struct.unpack_from("<I", inp, at + 1)
        rec = inp[at + 5:at + 5 + n]
        at += 5 + n
        if kind == 0:
            ok, used, data = kernel_gunzip(rec)
        else:
            ok, used, data = inflate(rec)
            if not ok:
                used = len(rec)
        if ok or kind == 1:
            body = struct.pack("<I", used) + data
        else:
            body = used.encode()
        out.write(bytes([0 if ok else 1]) + struct.pack("<I", len(body)) + body)


main()
