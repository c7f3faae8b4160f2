"""scripts/rn50_24_strays.py (how far 3x3 weights are from 2:4 along the
implicit im2col's reduction) on hand-made rows: the groups that break 2:4,
the strays past two nonzeros a group, the rows outside, the sparse
warpgroup kernel's stray entries; and a .smtx file whose counts disagree
refused. Needs neither the library nor a GPU."""

import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import rn50_24_strays  # noqa: E402


def csr(rows):
    """(row offsets, column indices) of rows given as lists of columns."""
    offsets, columns = [0], []
    for r in rows:
        columns += r
        offsets.append(len(columns))
    return offsets, columns


class StraysTests(unittest.TestCase):
    def test_counts_by_hand(self):
        # row 0: columns 0-3 hold 4 (2 strays), 4-7 hold 2 (2:4 holds);
        # row 1: 8-11 hold 3 (1 stray), 12 alone; row 2 empty;
        # row 3: 1 and 5, one a group
        rows = [[0, 1, 2, 3, 4, 6], [8, 9, 11, 12], [], [1, 5]]
        offsets, columns = csr(rows)
        broken, strays, outside = rn50_24_strays.strays_of(len(rows), offsets, columns)
        self.assertEqual((broken, strays, outside), (2, 3, 2))

    def test_stray_entries_by_hand(self):
        # one block (64 x 64 channels, 9 taps): row 0 with 4 strays (two
        # full runs of four), row 1 with 1, the rest empty: groups of
        # distinct output channels need 4 (32 entries), runs 1 (8)
        rows = [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10]] + [[]] * 62
        offsets, columns = csr(rows)
        got = rn50_24_strays.stray_entries(len(rows), 9 * 64, offsets, columns)
        self.assertEqual(got, {"distinct": (32, 32), "runs": (8, 8), "balanced": (8, 8)})

    def test_stray_entries_balanced_by_hand(self):
        # two rows of blocks: rows 0 and 8 (two eights of the first) with 8
        # strays each (four full runs of four), the second row empty; moved
        # in eights, each row of blocks takes one: 8 entries each, not 16
        rows = [[]] * 128
        rows[0] = rows[8] = list(range(16))
        offsets, columns = csr(rows)
        got = rn50_24_strays.stray_entries(len(rows), 9 * 64, offsets, columns)
        self.assertEqual(got, {"distinct": (64, 64), "runs": (16, 16), "balanced": (16, 8)})

    def test_read_checks_counts(self):
        with tempfile.TemporaryDirectory() as d:
            good = os.path.join(d, "good.smtx")
            with open(good, "w") as f:
                f.write("2, 8, 3\n0 2 3\n0 5 7\n")
            self.assertEqual(rn50_24_strays.read_smtx(good), (2, 8, [0, 2, 3], [0, 5, 7]))
            bad = os.path.join(d, "bad.smtx")
            with open(bad, "w") as f:
                f.write("2, 8, 4\n0 2 3\n0 5 7\n")
            with self.assertRaises(SystemExit) as e:
                rn50_24_strays.read_smtx(bad)
            self.assertIn("bad.smtx", str(e.exception.code))


if __name__ == "__main__":
    unittest.main()
