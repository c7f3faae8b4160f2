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

    python3 scripts/rn50_24_strays.py --data data --sparsity 0.8,0.9,0.95 [--entries]

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


def stray_entries(rows, cols, offsets, columns, chunk=64, block_rows=64, group=8):
    """The sparse warpgroup conv kernel's stray entries (src/conv/conv_wg.h)
    for a 3x3 layer's weights (DLMC's (r, s, c) columns, C = cols / 9): a
    block is 64 output by 64 input channels of every tap, its strays in
    groups of 8. {layout: (entries, the most of one row of blocks)}, the
    second what the slowest block walks through:
      "distinct": groups of distinct output channels, as many as the count
                  and the busiest channel need (47494d1-4060fd5);
      "runs":     groups by output channel with run marks, only the last
                  group filled out;
      "balanced": runs, the output channels first moved between the rows
                  of blocks in eights (a 16-byte store's), the eights with
                  the most strays each to the row with the fewest (not
                  built: the kernel would store each eight through a
                  table)."""
    c_in = cols // 9
    chunks = c_in // chunk
    count = {}  # (block, output channel in it) -> strays
    for r in range(rows):
        runs = {}
        for c in columns[offsets[r]:offsets[r + 1]]:
            runs.setdefault(c // 4, []).append(c)
        for cs in runs.values():
            for c in cs[2:]:  # which of a run are strays moves no count
                key = (r // block_rows * chunks + c % c_in // chunk, r % block_rows)
                count[key] = count.get(key, 0) + 1
    block_row_count = (rows + block_rows - 1) // block_rows
    blocks = block_row_count * chunks

    def layout_entries(row_of, padded):
        """(entries, the busiest row of blocks') with output channel r in
        row of blocks row_of(r); padded: groups of distinct channels."""
        n, most = [0] * blocks, [0] * blocks
        for (b, m), k in count.items():
            r = b // chunks * block_rows + m
            nb = row_of(r) * chunks + b % chunks
            n[nb] += k
            most[nb] = max(most[nb], k)
        per = [group * max(-(-n[b] // group), most[b] if padded else 0) for b in range(blocks)]
        worst = max(sum(per[mb * chunks:(mb + 1) * chunks]) for mb in range(block_row_count))
        return sum(per), worst

    # the eights of output channels by strays, each to the least loaded row
    # of blocks with room (longest first)
    eights = {}
    for (b, m), k in count.items():
        e = (b // chunks * block_rows + m) // 8
        eights[e] = eights.get(e, 0) + k
    load, room, moved = [0] * block_row_count, [block_rows // 8] * block_row_count, {}
    for e in sorted(range(rows // 8), key=lambda e: -eights.get(e, 0)):
        to = min((mb for mb in range(block_row_count) if room[mb]), key=lambda mb: load[mb])
        moved[e], load[to], room[to] = to, load[to] + eights.get(e, 0), room[to] - 1
    return {"distinct": layout_entries(lambda r: r // block_rows, True),
            "runs": layout_entries(lambda r: r // block_rows, False),
            "balanced": layout_entries(lambda r: moved[r // 8], False)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="data", help="the extracted data folder (data/dlmc/rn50)")
    ap.add_argument("--sparsity", default="0.8,0.9,0.95", help="comma-separated")
    ap.add_argument("--entries", action="store_true",
                    help="also the sparse warpgroup kernel's stray entries a layer "
                         "(C and K multiples of 64)")
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
            if a.entries and cols // 9 % 64 == 0 and rows % 64 == 0:
                e = stray_entries(rows, cols, offsets, columns)
                print(f"    stray entries: distinct {e['distinct'][0]} (a block row at most "
                      f"{e['distinct'][1]}), runs {e['runs'][0]} ({e['runs'][1]}), "
                      f"balanced {e['balanced'][0]} ({e['balanced'][1]})")
        groups, broken, nnz, strays, rows, outside = total
        print(f"{sparsity} total: {groups} groups, {broken / groups:.4%} broken; {strays} strays, "
              f"{strays / nnz:.2%} of {nnz} nonzeros; {outside / rows:.1%} of {rows} rows outside")


if __name__ == "__main__":
    main()
