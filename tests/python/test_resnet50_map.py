"""spforge.resnet50: the DLMC ResNet-50 files as torchvision resnet50's
layers. The table against the structure of the network (no data needed),
then against every file of data/dlmc/rn50 (extracted by `make data`;
those tests skip, saying so, without it): each file is a layer, of the
layer's shape, its output side as rn50_batchsizes.txt has it, and its
columns in the (r, s, c) order the module says."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("SPF_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
if not os.environ.get("SPF_TEST_INSTALLED"):  # else the installed package (test_wheel.sh)
    sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, HERE)

import unittest_run  # noqa: E402
from spforge import resnet50  # noqa: E402

RN50 = os.path.join(SOURCE_DIR, "data", "dlmc", "rn50")


def read_smtx(path):
    """(rows, cols, column indices) of an .smtx file."""
    with open(path) as f:
        head = f.readline()
        f.readline()
        cols = [int(x) for x in f.readline().split()]
    rows, ncols, nnz = (int(x) for x in head.split(","))
    if len(cols) != nnz:
        raise ValueError("%s: %d column indices, the header says %d" % (path, len(cols), nnz))
    return rows, ncols, cols


class Table(unittest.TestCase):
    def test_structure(self):
        # the stem, 16 bottlenecks of three convolutions, 4 projections, fc
        self.assertEqual(len(resnet50.LAYERS), 1 + 16 * 3 + 4 + 1)
        self.assertEqual(len({l.dlmc for l in resnet50.LAYERS}), len(resnet50.LAYERS))
        self.assertEqual(len({l.module for l in resnet50.LAYERS}), len(resnet50.LAYERS))
        self.assertEqual(resnet50.matrix_shape(resnet50.layer("conv1")), (64, 147))
        self.assertEqual(resnet50.matrix_shape(resnet50.layer("fc")), (1000, 2048))
        l = resnet50.layer("bottleneck_2_block_group_projection_block_group3.smtx")
        self.assertEqual((l.module, l.c_in, l.c_out, l.kernel, l.stride, l.padding,
                          l.in_side, l.out_side), ("layer3.0.conv2", 256, 256, 3, 2, 1, 28, 14))
        l = resnet50.layer("layer4.2.conv3")
        self.assertEqual((l.dlmc, l.c_in, l.c_out, l.out_side),
                         ("bottleneck_3_block_group4_2_1", 512, 2048, 7))
        self.assertEqual(resnet50.layer("layer2.0.downsample.0").stride, 2)
        with self.assertRaises(KeyError):
            resnet50.layer("layer5.0.conv1")

    def test_chain(self):
        # each convolution's output side from its input, stride and padding
        for l in resnet50.LAYERS:
            side = (l.in_side + 2 * l.padding - l.kernel) // l.stride + 1
            self.assertEqual(side, l.out_side, l.module)

    def test_torch_columns(self):
        l = resnet50.layer("layer1.1.conv2")  # C_in 64, 3x3
        perm = resnet50.torch_columns(l)
        self.assertEqual(sorted(perm), list(range(64 * 9)))
        # DLMC column (r, s, c) = (1, 2, 5) is (5 * 3 + 1) * 3 + 2 in torch's order
        self.assertEqual(perm[(1 * 3 + 2) * 64 + 5], (5 * 3 + 1) * 3 + 2)
        one = resnet50.layer("layer1.0.conv1")  # 1x1: the identity
        self.assertEqual(resnet50.torch_columns(one), list(range(64)))


@unittest.skipUnless(os.path.isdir(RN50), "no data/dlmc/rn50 (make data extracts it)")
class Data(unittest.TestCase):
    def folders(self):
        return sorted(os.path.join(RN50, kind, s) for kind in os.listdir(RN50)
                      if os.path.isdir(os.path.join(RN50, kind))
                      for s in os.listdir(os.path.join(RN50, kind)))

    def test_files_are_layers(self):
        folders = self.folders()
        self.assertTrue(folders)
        for folder in folders:
            names = sorted(f for f in os.listdir(folder) if f.endswith(".smtx"))
            self.assertEqual(sorted(resnet50.layer(f).dlmc + ".smtx" for f in names), names)
            self.assertEqual(len(names), len(resnet50.LAYERS), folder)
            for f in names:
                rows, cols, _ = read_smtx(os.path.join(folder, f))
                self.assertEqual((rows, cols), resnet50.matrix_shape(resnet50.layer(f)),
                                 os.path.join(folder, f))

    def test_output_sides(self):
        with open(os.path.join(RN50, "..", "rn50_batchsizes.txt")) as f:
            widths = dict(line.strip().split(",") for line in f if line.strip())
        self.assertEqual(len(widths), len(resnet50.LAYERS))
        for name, width in widths.items():
            self.assertEqual(int(width), resnet50.layer(name).out_side ** 2, name)

    def taps(self, folder, order):
        """Nonzeros of the 3x3 layers by kernel tap, the columns read in
        `order` ("rsc" or "crs")."""
        counts = [0] * 9
        for l in resnet50.LAYERS:
            if l.kernel != 3:
                continue
            _, _, cols = read_smtx(os.path.join(folder, l.dlmc + ".smtx"))
            for j in cols:
                counts[j // l.c_in if order == "rsc" else j % 9] += 1
        return counts

    def test_columns_are_rsc(self):
        for folder in self.folders():
            rsc, crs = self.taps(folder, "rsc"), self.taps(folder, "crs")
            self.assertLess(max(crs) / min(crs), 1.05, folder)
            if "magnitude" in folder:  # taps kept unevenly: visible only read (r, s, c)
                self.assertGreater(max(rsc) / min(rsc), 1.25, folder)
            else:
                self.assertLess(max(rsc) / min(rsc), 1.05, folder)


def main():
    return unittest_run.run(__name__)


if __name__ == "__main__":
    sys.exit(main())
