"""Writes .npy files of every form numpy.load reads (and some it or we refuse)
into OUT_DIR, with OUT_DIR/manifest.json saying, for each, what numpy.load
does and what attnconv must do. For a file numpy reads, `reference` is what
numpy.load returned, as raw little-endian bytes in C order: attnconv must read
exactly that. Run by tests/unit/io/test_npy.cpp with Debian's /usr/bin/python3.

    /usr/bin/python3 npy_variants.py OUT_DIR
"""
import hashlib
import json
import os
import struct
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
manifest = []
rng = np.random.default_rng(3)
base64 = rng.uniform(-1, 1, size=(2, 3, 4))


def raw(name, version, header, data):
    """A file with this exact header text (no padding added) and data bytes."""
    text = header.encode("latin1" if version < 3 else "utf8")
    length = struct.pack("<H" if version == 1 else "<I", len(text))
    with open(os.path.join(out, name), "wb") as f:
        f.write(b"\x93NUMPY" + bytes([version, 0]) + length + text + data)


def add(name, expect, dtype="float64", words="", numpy_loads=None):
    """numpy_loads: what numpy.load must do (default: read it iff we do)."""
    path = os.path.join(out, name)
    with open(path, "rb") as f:
        content = f.read()
    entry = {"file": name, "expect": expect, "dtype": dtype, "words": words, "bytes": len(content),
             "sha256": hashlib.sha256(content).hexdigest()}
    try:
        array = np.load(path, allow_pickle=False)
        entry["numpy_loads"] = True
        if expect == "read":
            assert array.dtype.kind == "f" and array.dtype.itemsize == np.dtype(dtype).itemsize, (name, array.dtype)
            reference = name + ".reference"
            with open(os.path.join(out, reference), "wb") as f:
                f.write(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes(order="C"))
            entry["reference"] = reference
            entry["shape"] = list(array.shape)
    except Exception as e:  # what numpy says, for the test log
        entry["numpy_loads"] = False
        entry["numpy_error"] = str(e).splitlines()[0]
    wanted = expect == "read" if numpy_loads is None else numpy_loads
    assert entry["numpy_loads"] == wanted, (name, entry)
    manifest.append(entry)


# --- written by numpy: every version, byte order and memory order
for dtype, code in [("float64", "f8"), ("float32", "f4")]:
    a = base64.astype(dtype)
    for order in "<>":
        for fortran in (False, True):
            for version in [(1, 0), (2, 0), (3, 0)]:
                name = f"np_{code}_{'be' if order == '>' else 'le'}_{'F' if fortran else 'C'}_v{version[0]}.npy"
                x = a.astype(np.dtype(dtype).newbyteorder(order))
                x = np.asfortranarray(x) if fortran else np.ascontiguousarray(x)
                with open(os.path.join(out, name), "wb") as f:
                    np.lib.format.write_array(f, x, version=version)
                add(name, "read", dtype)
np.save(os.path.join(out, "np_scalar.npy"), np.float64(2.5))
add("np_scalar.npy", "read")
np.save(os.path.join(out, "np_empty.npy"), np.zeros((0, 3)))
add("np_empty.npy", "read")
np.save(os.path.join(out, "np_1d.npy"), np.arange(5.0))
add("np_1d.npy", "read")

# --- hand-written headers numpy.load reads
le = base64.astype("<f8").tobytes()
fortran_le = np.asfortranarray(base64).astype("<f8").tobytes(order="F")
readable = {
    "keys_reordered": "{'shape': (2, 3, 4), 'fortran_order': False, 'descr': '<f8'}",
    "keys_reordered_fortran": "{'fortran_order': True, 'shape': (2, 3, 4), 'descr': '<f8', }",
    "no_trailing_newline": "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }",
    "no_padding_no_comma": "{'descr':'<f8','fortran_order':False,'shape':(2,3,4)}",
    "double_quotes": '{"descr": "<f8", "fortran_order": False, "shape": (2, 3, 4)}\n',
    "tabs_and_newlines": "\t{\n'descr' :\t'<f8' ,\n 'fortran_order' : False ,\n 'shape' : ( 2 , 3 , 4 , ) ,\n}" + " " * 40 + "\n",
    "long_padding": "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }" + " " * 3000 + "\n",
    "python2_longs": "{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 3L, 4L), }\n",
    "native_order_pipe": "{'descr': '|f8', 'fortran_order': False, 'shape': (2, 3, 4), }\n",
    "native_order_equals": "{'descr': '=f8', 'fortran_order': False, 'shape': (2, 3, 4), }\n",
    "no_byte_order": "{'descr': 'f8', 'fortran_order': False, 'shape': (2, 3, 4), }\n",
    "descr_d": "{'descr': '<d', 'fortran_order': False, 'shape': (2, 3, 4), }\n",
}
for label, header in readable.items():
    raw(label + ".npy", 1, header, fortran_le if "fortran" in label else le)
    add(label + ".npy", "read")
raw("v3_utf8.npy", 3, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4)}  \n", le)
add("v3_utf8.npy", "read")

# --- refused by numpy.load, and by attnconv with these words
header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }\n"
refused = {
    "missing_key": ("{'descr': '<f8', 'shape': (2, 3, 4)}\n", le, "no 'fortran_order'"),
    "extra_key": ("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), 'x': 1}\n", le, "unknown key 'x'"),
    "shape_not_tuple": ("{'descr': '<f8', 'fortran_order': False, 'shape': [2, 3, 4]}\n", le, "shape as a tuple"),
    "shape_int_in_parens": ("{'descr': '<f8', 'fortran_order': False, 'shape': (24)}\n", le, "not a tuple"),
    "shape_float": ("{'descr': '<f8', 'fortran_order': False, 'shape': (2.0, 3, 4)}\n", le, "not an integer"),
    "fortran_not_bool": ("{'descr': '<f8', 'fortran_order': 0, 'shape': (2, 3, 4)}\n", le, "True or False"),
    "not_a_dict": ("('<f8', False, (2, 3, 4))\n", le, "dict literal"),
    "garbage_after": ("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4)} x\n", le, "after the dict"),
    "unterminated": ("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4)\n", le, "expected ',' or '}'"),
    "null_padding": ("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4)}\0\0\n", le, "byte 0x00"),
    "huge_header": ("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4)}" + " " * 10001 + "\n", le, "more than 10000"),
    "data_truncated": (header, le[:-8], "truncated"),
}
for label, (text, data, words) in refused.items():
    raw(label + ".npy", 1, text, data)
    add(label + ".npy", "refuse", words=words)
with open(os.path.join(out, "version_1_1.npy"), "wb") as f:
    text = header.encode()
    f.write(b"\x93NUMPY\x01\x01" + struct.pack("<H", len(text)) + text + le)
add("version_1_1.npy", "refuse", words="version 1.1")
with open(os.path.join(out, "version_4.npy"), "wb") as f:
    f.write(b"\x93NUMPY\x04\x00" + struct.pack("<I", len(header)) + header.encode() + le)
add("version_4.npy", "refuse", words="version 4.0")
np.save(os.path.join(out, "int64.npy"), np.arange(24, dtype="<i8").reshape(2, 3, 4))
add("int64.npy", "refuse", words="dtype '<i8'", numpy_loads=True)
np.save(os.path.join(out, "structured.npy"), np.zeros(3, dtype=[("a", "<f8")]))
add("structured.npy", "refuse", words="structured dtype", numpy_loads=True)

# --- odd files numpy.load reads: attnconv reads them as numpy does
raw("duplicate_key.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), 'descr': '<f8'}\n", le)
add("duplicate_key.npy", "read")  # the last 'descr' counts, as numpy.load reads it
raw("bytes_after_data.npy", 1, header, le + b"\0" * 8)
add("bytes_after_data.npy", "read")  # numpy.load ignores them

with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
