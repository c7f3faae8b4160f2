#!/usr/bin/env python3
"""How far the DLMC ResNet-50 3x3 weights are from 2:4 along the implicit
im2col's reduction, per sparsity: what a sparse tensor-core kernel
(mma.sp / wgmma.sp, 2:4 along K) over the copy engine's im2col boxes would
have to leave to other code.

The copy engine's boxes bring a tap's channels in order, so the reduction
runs (r, s, c) and a 2:4 group is four consecutive channels of one tap:
DLMC's own column order (spforge.resnet50 moves it to torch's (c, r, s)
for the library; here it stays). A group with more than two nonzeros
breaks 2:4; its nonzeros past two are strays, and a row with a stray is
outside the pattern (src/strategy/structured/sp_pattern.h, which takes
strays while at most a sixteenth of the rows are outside).

    python3 scripts/rn50_24_strays.py --data data --sparsity 0.8,0.9,0.95

Needs only the standard library. Prints a line a layer and a total a
sparsity."""
import argparse
import glob
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from spforge import resnet50  # noqa: E402  (no numpy or torch)


def read_smtx(path):
    """(rows, cols, row offsets, column indices) of a DLMC .smtx file; exits
    naming the file where its counts disagree with its header."""
    try:
        return resnet50.read_smtx(path)
    except ValueError as e:
        sys.exit(str(e))


def strays_of(rows, offsets, columns):
    """(groups holding a nonzero that break 2:4, strays, rows outside)."""
    broken = strays = outside = 0
    for r in range(rows):
        counts = {}
        for c in columns[offsets[r]:offsets[r + 1]]:
            counts[c // 4] = counts.get(c // 4, 0) + 1
        over = [n - 2 for n in counts.values() if n > 2]
        broken += len(over)
        strays += sum(over)
        outside += bool(over)
    return broken, strays, outside


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="data", help="the extracted data folder (data/dlmc/rn50)")
    ap.add_argument("--sparsity", default="0.8,0.9,0.95", help="comma-separated")
    a = ap.parse_args()
    for sparsity in a.sparsity.split(","):
        folder = os.path.join(a.data, "dlmc", "rn50", "magnitude_pruning", sparsity)
        files = sorted(glob.glob(os.path.join(folder, "*.smtx")))
        if not files:
            sys.exit(f"--sparsity {sparsity}: no .smtx files in {folder}")
        total = [0] * 6  # groups, broken, nonzeros, strays, rows, outside
        for path in files:
            rows, cols, offsets, columns = read_smtx(path)
            if cols % 9 or cols // 9 % 4:  # 3x3 layers: K = 9 C, C a multiple of 4
                continue
            broken, strays, outside = strays_of(rows, offsets, columns)
            layer = [rows * cols // 4, broken, offsets[-1], strays, rows, outside]
            total = [t + x for t, x in zip(total, layer)]
            print(f"{sparsity} {os.path.basename(path):52s} {rows:4d}x{cols:<5d} "
                  f"groups broken {broken / layer[0]:.4%}, strays {strays:5d} "
                  f"({strays / layer[2]:.2%} of nonzeros), rows outside {outside / rows:.1%}")
        groups, broken, nnz, strays, rows, outside = total
        print(f"{sparsity} total: {groups} groups, {broken / groups:.4%} broken; {strays} strays, "
              f"{strays / nnz:.2%} of {nnz} nonzeros; {outside / rows:.1%} of {rows} rows outside")


if __name__ == "__main__":
    main()
