#!/usr/bin/python3
"""The .npz reader against hostile archives, through `attnconv run`: a zip
bomb (an entry inflating to 1 GiB) refused within --max-memory and with a
small peak RSS, an entry holding more than its shape, an entry inflating past
its claimed size; entry names with terminal escapes, invalid UTF-8 and 5000
characters shown escaped and clipped; an archive of exactly 65535 entries
(which Python's zipfile writes without zip64) read; two state_dict names for
one tensor refused. Each refusal: exit 2, the message names the file, the
case and the key, and an earlier report is unchanged.

Usage: npz_limits.py ATTNCONV_BINARY SOURCE_DIR WORK_DIR
"""
import io
import json
import os
import struct
import subprocess
import zlib

import numpy as np

from cli_check import binary, check, finish, work

case = {"name": "c1", "proof": "cordonnier2020.theorem1",
        "params": {"image": [6, 6], "kernel": 3, "in_channels": 2, "out_channels": 3,
                   "heads": 9, "head_dim": 3, "padding": 1},
        "weights": "m.npz", "weights_prefix": "m."}
out = os.path.join(work, "out")
report = os.path.join(out, "report.json")
os.makedirs(out)
sentinel = b'{"sentinel": true}\n'


def npy(array):
    b = io.BytesIO()
    np.save(b, array)
    return b.getvalue()


def make_zip(entries):
    """entries: (name bytes, method, crc, compressed size, size, data). Local headers, central directory
    and end record as Python's zipfile writes them (no zip64, no data descriptor)."""
    local, central, offset = [], [], 0
    for name, method, crc, csize, size, data in entries:
        head = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, csize, size, len(name), 0) + name
        local += [head, data]
        central.append(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, csize, size,
                                   len(name), 0, 0, 0, 0, 0, offset) + name)
        offset += len(head) + len(data)
    directory = b"".join(central)
    count = len(entries) & 0xFFFF
    return b"".join(local) + directory + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count, count, len(directory), offset, 0)


def stored(name, data):
    return (name, 0, zlib.crc32(data), len(data), len(data), data)


def crc32_zeros(crc, n):
    """zlib.crc32(b"\\0" * n, crc) without the n bytes (zlib's crc32_combine: GF(2) matrix powers)."""
    def times(matrix, vector):
        total, k = 0, 0
        while vector:
            if vector & 1:
                total ^= matrix[k]
            vector >>= 1
            k += 1
        return total

    def square(matrix):
        return [times(matrix, matrix[k]) for k in range(32)]

    odd = [0xEDB88320] + [1 << k for k in range(31)]  # one zero bit
    even = square(odd)  # two
    odd = square(even)  # four
    crc ^= 0xFFFFFFFF
    while n:
        even = square(odd)
        if n & 1:
            crc = times(even, crc)
        n >>= 1
        if not n:
            break
        odd = square(even)
        if n & 1:
            crc = times(odd, crc)
        n >>= 1
    return crc ^ 0xFFFFFFFF


weight, bias = np.random.default_rng(0).random((3, 2, 3, 3)), np.random.default_rng(1).random(3)


def bomb(zeros_mib, declared=None):
    """m.weight: the layer's .npy followed by zeros_mib MiB of zeros, deflated (about 1 KB per MiB: the
    same full-flushed block repeated). `declared`: the size written in the headers (default: the true one)."""
    head = npy(weight)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    data = first + block * zeros_mib + c.flush()
    size = len(head) + (zeros_mib << 20)
    crc = crc32_zeros(zlib.crc32(head), zeros_mib << 20)
    return (b"m.weight.npy", 8, crc, len(data), size if declared is None else declared, data)


def write_case(folder, npz_bytes, **changes):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "m.npz"), "wb") as f:
        f.write(npz_bytes)
    with open(os.path.join(folder, "c.json"), "w") as f:
        json.dump({"cases": [dict(case, **changes)]}, f)
    return os.path.join(folder, "c.json")


def refused(label, cases, args, expect, forbid=()):
    """run: exit 2, every part of `expect` in stderr, none of `forbid`, the earlier report unchanged.
    Returns the message."""
    with open(report, "wb") as f:
        f.write(sentinel)
    child = subprocess.Popen([binary, "run", cases, "--out", out, "--quiet", *args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, stderr = child.communicate(timeout=300)
    stderr = stderr.decode("utf-8", "replace")
    check(child.returncode == 2, f"{label}: exit {child.returncode}, expected 2: {stderr[-2000:]}")
    for part in expect:
        check(part in stderr, f"{label}: {part!r} not in the message: {stderr[-2000:]}")
    for part in forbid:
        check(part not in stderr, f"{label}: {part!r} in the message: {stderr[-2000:]!r}")
    with open(report, "rb") as f:
        check(f.read() == sentinel, f"{label}: the earlier report changed")
    check(not os.path.exists(os.path.join(out, "report.journal.jsonl")), f"{label}: a journal was written")
    return stderr


def peak_rss_mib(cases, args):
    """The peak RSS of `attnconv run` (its own, from wait4), in MiB."""
    child = subprocess.Popen([binary, "run", cases, "--out", out, "--quiet", *args],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024


where = "case 'c1': key 'weights.conv_weight'"

# A2. A bomb: a 1 MB archive whose m.weight inflates to 1 GiB of trailing zeros.
bomb_cases = write_case(os.path.join(work, "bomb"), make_zip([bomb(1024), stored(b"m.bias.npy", npy(bias))]))
check(os.path.getsize(os.path.join(work, "bomb", "m.npz")) < 2 << 20, "the bomb is not small")
refused("bomb under --max-memory 100M", bomb_cases, ["--max-memory", "100M"],
        ["bomb/c.json", where, "m.npz", "entry 'm.weight' of 1.0 GiB inflated", "more than --max-memory 100.0 MiB"])
# Within the budget, it holds more than its shape needs: refused after its first 64 KiB.
refused("bomb under --max-memory 4G", bomb_cases, ["--max-memory", "4G"],
        ["bomb/c.json", where, "m.npz",
         f"entry 'm.weight' of {len(npy(weight)) + (1 << 30)} bytes, more data than its shape (3, 2, 3, 3) of '<f8'"])
for args in (["--max-memory", "100M"], ["--max-memory", "4G"]):
    code, rss = peak_rss_mib(bomb_cases, args)
    check(code == 2 and rss < 150, f"bomb {args}: exit {code}, peak RSS {rss:.0f} MiB, expected 2 and < 150 MiB")
# Headers that lie: the size of the shape is claimed, the data inflates to 1 GiB.
liar_cases = write_case(os.path.join(work, "liar"), make_zip([bomb(1024, declared=len(npy(weight))),
                                                              stored(b"m.bias.npy", npy(bias))]))
refused("bomb with a forged size", liar_cases, [],
        ["liar/c.json", where, "m.npz", f"entry 'm.weight' inflates to more than its {len(npy(weight))} bytes"])
code, rss = peak_rss_mib(liar_cases, [])
check(code == 2 and rss < 150, f"bomb with a forged size: exit {code}, peak RSS {rss:.0f} MiB, expected 2 and < 150 MiB")
# A stored entry larger than the budget is not read at all.
big = np.zeros((3, 2, 3, 145636))
fat_cases = write_case(os.path.join(work, "fat"), make_zip([stored(b"m.weight.npy", npy(big)), stored(b"m.bias.npy", npy(bias))]))
refused("a stored entry over --max-memory", fat_cases, ["--max-memory", "10M"],
        ["fat/c.json", where, "entry 'm.weight' of 20.0 MiB, more than --max-memory 10.0 MiB"])

# C11. Entry names with an ESC sequence, an OSC ended by BEL, C1 controls, invalid UTF-8 and 5000 characters.
hostile = b"\x1b[2J\x1b]0;owned\x07\xc2\x9b31m\xff\xfe" + b"n" * 5000
names_cases = write_case(os.path.join(work, "names"), make_zip([stored(b"m.weight.npy", npy(weight)),
                                                                stored(b"m.bias.npy", npy(bias)),
                                                                stored(hostile + b".txt", b"x")]))
message = refused("an entry name with escapes", names_cases, [],
                  ["names/c.json", "case 'c1': key 'weights'", "m.npz",
                   "entry '\\u001b[2J\\u001b]0;owned\\u0007\\u009b31m\\xFF\\xFEnnn"], forbid=["\x1b", "\x07", "\u009b", "\ufffd"])
check(len(message) < 1200, f"an entry name of 5000 characters is not clipped: {len(message)} characters")
# ... and in the listing of what an archive holds (a missing entry, the nearest names).
names_cases = write_case(os.path.join(work, "names2"), make_zip([stored(b"m.weight.npy", npy(weight)),
                                                                 stored(b"m.\x1b]0;x\x07" + b"b" * 3000 + b".npy", npy(bias))]))
message = refused("entry names listed", names_cases, [], ["names2/c.json", "case 'c1'", "has no entry 'm.bias'", "\\u001b]0;x\\u0007bbb"],
                  forbid=["\x1b", "\x07"])
check(len(message) < 2000, f"listed entry names are not clipped: {len(message)} characters")

# C12. 65535 entries: the end record's count 0xFFFF with no zip64 locator is a plain count.
entries = [stored(b"m.weight.npy", npy(weight)), stored(b"m.bias.npy", npy(bias))]
filler = npy(np.zeros(1))
entries += [stored(f"other.{k}.npy".encode(), filler) for k in range(65535 - len(entries))]
many_cases = write_case(os.path.join(work, "many"), make_zip(entries))
run = subprocess.run([binary, "run", many_cases, "--out", os.path.join(work, "many_out"), "--quiet"],
                     capture_output=True, text=True, timeout=300)
check(run.returncode == 0 and "1 holds" in run.stderr, f"65535 entries: exit {run.returncode}: {run.stderr[-2000:]}")
with open(os.path.join(work, "many", "m.npz"), "rb") as f:
    f.seek(-22, os.SEEK_END)
    check(f.read(22)[10:12] == b"\xff\xff", "the 65535-entry archive does not count 0xFFFF")

# C13. Two state_dict names for one tensor: m.weight and m.conv_weight both name conv_weight.
np.savez(os.path.join(work, "two.npz"), **{"m.weight": weight, "m.bias": bias, "m.conv_weight": weight * 2})
with open(os.path.join(work, "two.npz"), "rb") as f:
    two_cases = write_case(os.path.join(work, "two"), f.read())
refused("two names for conv_weight", two_cases, [],
        ["two/c.json", "case 'c1': key 'weights'", "m.npz entries 'm.weight' and 'm.conv_weight' both name the tensor conv_weight"])

finish()
