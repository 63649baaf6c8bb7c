#!/usr/bin/env python3
"""What each part of the wrapper costs: the sizes of an unstripped build's
sections, and its code (function symbols, as `cargo bloat` counts them)
grouped by part: our modules (two levels under `node::`), std/core/alloc
modules, other crates, and the C side (musl, libunwind's C++ shows as
`libunwind`/`bool`). LTO inlines across parts, so a function counts where its
symbol ended up. The `~encoded` column is what the budget counts: how much
smaller the base64 of the gzip'ed code gets without the part's functions
(zlib level 9 on .text, so an estimate within a few percent of the renderer's).

usage: payload_parts.py ELF [PARTS [TOP_FUNCTIONS]]
"""
import collections
import re
import subprocess
import sys
import zlib

elf = sys.argv[1]
sections = subprocess.run(["size", "-A", elf], capture_output=True, text=True, check=True).stdout
print(f"{'section':40} {'bytes':>8}")
for line in sections.splitlines():
    f = line.split()
    if len(f) == 3 and f[0].startswith(".") and f[0] not in (".comment", ".symtab", ".strtab") \
            and not f[0].startswith(".debug") and int(f[1]) >= 512:
        print(f"{f[0]:40} {int(f[1]):8d}")
print()
out = subprocess.run(["nm", "-S", "--size-sort", "-C", elf], capture_output=True, text=True, check=True).stdout
parts = collections.Counter(); count = collections.Counter(); fns = []; seen = set()
ranges = collections.defaultdict(list)
for line in out.splitlines():
    f = line.split(None, 3)
    if len(f) < 4 or f[2].lower() not in "tw": continue
    size, name = int(f[1], 16), f[3]
    if f[0] in seen: continue  # an alias of a function already counted
    seen.add(f[0])
    n = re.sub(r"^<(impl )?", "", name); n = n.lstrip("&*(").replace("dyn ", "")
    n = re.sub(r"^(mut |const )", "", n)
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(::([A-Za-z_][A-Za-z0-9_]*))?", n)
    if "libunwind::" in name or name.startswith(("unw_", "__unw_", "_Unwind_", "unwind_")):
        key = "libunwind (C/C++)"
    elif name.startswith("OUTLINED_FUNCTION"):
        key = "outlined (machine outliner)"
    elif "::" not in name: key = "libc (musl) / C"
    elif m and m.group(1) == "kubelet_labeler":
        o = re.search(r"kubelet_labeler::node::(\w+)(::(\w+))?", name)
        key = "node::" + o.group(1) + ("::" + o.group(3) if o.group(3) else "") if o \
            else "kubelet_labeler::" + (m.group(3) or "")
    elif m and m.group(1) in ("std", "core", "alloc"): key = m.group(1) + "::" + (m.group(3) or "")
    elif m and m.group(1) in ("str", "char", "bool", "u8", "u16", "u32", "u64", "usize", "i32", "i64", "isize"):
        key = "core:: (methods on primitives)"
    elif m: key = m.group(1)
    else: key = "other"
    parts[key] += size; count[key] += 1; fns.append((size, name))
    ranges[key].append((int(f[0], 16), size))
total = sum(parts.values())
# .text (its address, file offset and size from readelf, which reads either
# architecture's ELF), for the encoded cost of each part
sh = [l.split() for l in subprocess.run(["readelf", "-SW", elf], capture_output=True, text=True,
                                         check=True).stdout.splitlines() if " .text " in l][0]
i = sh.index(".text")
text_at, off, length = (int(x, 16) for x in sh[i + 2 : i + 5])
with open(elf, "rb") as fh:
    fh.seek(off)
    text = fh.read(length)
def packed(b): return len(zlib.compress(b, 9)) * 4 // 3
whole = packed(text)
def encoded_cost(key):
    keep = bytearray(text)
    for at, size in sorted(ranges[key], reverse=True):
        del keep[at - text_at : at - text_at + size]
    return whole - packed(bytes(keep))
print(f"{'part (.text symbols)':40} {'bytes':>8} {'fns':>5} {'~encoded':>9}")
for k, v in parts.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 40):
    print(f"{k:40} {v:8d} {count[k]:5d} {encoded_cost(k):9d}")
print(f"{'total':40} {total:8d}")
groups = collections.Counter()
for k, v in parts.items():
    g = ("ours (kubelet_labeler)" if k.startswith(("kubelet_labeler", "node::")) else
         "std, core, alloc" if k.split("::")[0] in ("std", "core", "alloc", "other") else
         k if "(" in k else "other crates (" + k + ")" if k != "anyhow" else "anyhow")
    groups[g if not g.startswith("other crates") else "other crates"] += v
print()
for g, v in groups.most_common():
    print(f"{g:40} {v:8d} {100 * v / total:4.0f}%")
if len(sys.argv) > 3:
    for s, n in sorted(fns, reverse=True)[: int(sys.argv[3])]: print(f"{s:7d} {n[:150]}")
