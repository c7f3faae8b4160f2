#!/usr/bin/env python3
"""Write the .npy files of the malformed-input corpus (tests/corpus/EXPECTED
says what each must produce). Pure Python (struct), no numpy needed; the
generated files are committed so the tests need no Python either.
Run from anywhere: python3 tests/corpus/make_npy.py"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# 3 x 4 with zeros in every row but the middle one, which is all zeros
MATRIX = [[0.0, 1.5, 0.0, -2.0], [0.0, 0.0, 0.0, 0.0], [3.25, 0.0, 0.0, 0.5]]


def header(descr, shape, fortran=False, version=1, dict_text=None):
    if dict_text is None:
        dims = "".join(f"{d}, " for d in shape) if len(shape) == 1 else ", ".join(map(str, shape))
        if len(shape) == 1:
            dims = dims.rstrip(" ")
        dict_text = (f"{{'descr': '{descr}', 'fortran_order': {fortran}, "
                     f"'shape': ({dims}), }}")
    length_bytes = 2 if version == 1 else 4
    pre = 6 + 2 + length_bytes
    total = (pre + len(dict_text) + 1 + 63) // 64 * 64
    text = dict_text + " " * (total - pre - len(dict_text) - 1) + "\n"
    fmt = "<H" if version == 1 else "<I"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack(fmt, len(text)) + text.encode()


def data(fmt, values):
    return b"".join(struct.pack(fmt, v) for v in values)


def flat(m):
    return [v for row in m for v in row]


def write(name, payload):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(payload)


def main():
    f32 = data("<f", flat(MATRIX))
    write("good_f32.npy", header("<f4", (3, 4)) + f32)
    half = [[0.0, 1.5, 0.0, -2.0], [0.0, 2.0 ** -20, 0.0, 0.0], [3.25, 0.0, 0.0, -65504.0]]
    write("good_f16.npy", header("<f2", (3, 4)) + data("<e", flat(half)))
    double = [[0.0, 0.1, 0.0, -2.0], [0.0, 0.0, 0.0, 0.0], [1e-50, 0.0, 0.0, 0.5]]
    write("good_f64.npy", header("<f8", (3, 4)) + data("<d", flat(double)))
    write("good_v2.npy", header("<f4", (3, 4), version=2) + f32)
    write("good_v3.npy", header("<f4", (3, 4), version=3) + f32)
    write("good_native_order.npy", header("=f4", (3, 4)) + f32)
    write("good_empty.npy", header("<f4", (0, 5)))
    write("npy_bigendian.npy", header(">f4", (3, 4)) + data(">f", flat(MATRIX)))
    write("npy_fortran.npy", header("<f4", (3, 4), fortran=True) + f32)
    write("npy_int.npy", header("<i4", (3, 4)) + data("<i", [1] * 12))
    write("npy_truncated.npy", header("<f4", (3, 4)) + f32[:-3])
    write("npy_trailing.npy", header("<f4", (3, 4)) + f32 + b"extra")
    write("npy_bad_magic.npy", b"\x93NUMPX" + header("<f4", (3, 4))[6:] + f32)
    write("npy_empty.npy", b"")
    write("npy_short.npy", b"\x93NUMPY\x01")
    write("npy_3d.npy", header("<f4", (2, 2, 3)) + f32)
    write("npy_1d.npy", header("<f4", (12,)) + f32)
    write("npy_missing_key.npy",
          header("<f4", (3, 4), dict_text="{'descr': '<f4', 'fortran_order': False, }") + f32)
    write("npy_unknown_key.npy",
          header("<f4", (3, 4), dict_text="{'descr': '<f4', 'fortran_order': False, "
                 "'shape': (3, 4), 'extra': 1, }") + f32)
    write("npy_bad_shape.npy",
          header("<f4", (3, 4), dict_text="{'descr': '<f4', 'fortran_order': False, "
                 "'shape': (3, x), }") + f32)
    write("npy_not_dict.npy", header("<f4", (3, 4), dict_text="['<f4', False, (3, 4)]") + f32)
    write("npy_huge_dim.npy", header("<f4", (3000000000, 2)) + f32)
    # strings longer than any dtype or key: reported as what they are, quoted and cut
    write("npy_long_descr.npy", header("<f4" + "x" * 60, (3, 4)) + f32)
    write("npy_long_key.npy",
          header("<f4", (3, 4), dict_text="{'descr': '<f4', 'fortran_order': False, "
                 "'shape" + "x" * 60 + "': (3, 4), }") + f32)
    # a header of a few bytes declaring 2^31 - 1 empty rows: 16 GiB of row offsets
    write("npy_huge_rows.npy", header("<f4", (2147483647, 0)))
    nan = flat(MATRIX)
    nan[2] = float("nan")
    write("npy_nan.npy", header("<f4", (3, 4)) + data("<f", nan))
    big = flat(MATRIX)
    big[5] = 1e300
    write("npy_f64_overflow.npy", header("<f8", (3, 4)) + data("<d", big))
    write("npy_version9.npy", b"\x93NUMPY\x09\x00" + header("<f4", (3, 4))[8:] + f32)
    write("npy_header_past_end.npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", 60000) + b"{'descr'")


if __name__ == "__main__":
    main()
