"""The DLMC ResNet-50 matrices (../shared/data, dlmc/rn50/*/*.smtx) as the
layers of torchvision's resnet50 (issue 14: the conv bench set and
scripts/e2e_resnet50.py load them as masks).

DLMC's ResNet-50 is the v1.5 network of "The State of Sparsity in Deep
Neural Networks" (TensorFlow): the stride of a downsampling bottleneck in
its 3x3 convolution, as torchvision's resnet50 has it. Its file names:

    initial_conv                                   conv1 (7x7, stride 2)
    bottleneck_{k}_block_group_projection_block_group{g}
                                                   layer{g}.0.conv{k}
    bottleneck_projection_block_group_projection_block_group{g}
                                                   layer{g}.0.downsample.0
    bottleneck_{k}_block_group{g}_{b}_1            layer{g}.{b}.conv{k}
    final_dense                                    fc

A convolution's matrix is C_out x C_in*R*S. Its columns are in
TensorFlow's (r, s, c) order, c fastest. The evidence is in the data:
magnitude pruning keeps different shares of each kernel tap, so the
nonzeros of the 3x3 layers, counted by tap when the columns are read
(r, s, c), differ by 1.4-2.0x between taps (0.8 to 0.98 sparsity). Read
(c, r, s), the same counts differ by 3 % at most, and with random pruning
both readings are flat (tests/python/test_resnet50_map.py checks this). torch_columns() gives the
permutation into torch's order, that of nn.Conv2d's weight.view(C_out, -1)
and of src/ref/conv.h.

No numpy or torch needed."""

from collections import namedtuple

# One layer: its DLMC name, torchvision module, the convolution (c_in, c_out,
# kernel, stride, padding) and its input and output side at 224x224 (fc:
# 1x1, kernel 1).
Layer = namedtuple("Layer", "dlmc module c_in c_out kernel stride padding in_side out_side")

# torchvision resnet50: blocks of each layer group, bottleneck width
_BLOCKS = (3, 4, 6, 3)
_WIDTH = (64, 128, 256, 512)


def _layers():
    out = [Layer("initial_conv", "conv1", 3, 64, 7, 2, 3, 224, 112)]
    c_in, side = 64, 56  # after the stem's max pool
    for g, (blocks, w) in enumerate(zip(_BLOCKS, _WIDTH), start=1):
        stride = 1 if g == 1 else 2
        out_side = side // stride
        p = "block_group_projection_block_group%d" % g
        out += [Layer("bottleneck_1_" + p, "layer%d.0.conv1" % g, c_in, w, 1, 1, 0, side, side),
                Layer("bottleneck_2_" + p, "layer%d.0.conv2" % g, w, w, 3, stride, 1, side,
                      out_side),
                Layer("bottleneck_3_" + p, "layer%d.0.conv3" % g, w, 4 * w, 1, 1, 0, out_side,
                      out_side),
                Layer("bottleneck_projection_" + p, "layer%d.0.downsample.0" % g, c_in, 4 * w,
                      1, stride, 0, side, out_side)]
        for b in range(1, blocks):
            for k, (ci, co, kern) in enumerate(((4 * w, w, 1), (w, w, 3), (w, 4 * w, 1)),
                                               start=1):
                out.append(Layer("bottleneck_%d_block_group%d_%d_1" % (k, g, b),
                                 "layer%d.%d.conv%d" % (g, b, k), ci, co, kern, 1, kern // 2,
                                 out_side, out_side))
        c_in, side = 4 * w, out_side
    out.append(Layer("final_dense", "fc", 2048, 1000, 1, 1, 0, 1, 1))
    return tuple(out)


LAYERS = _layers()
_BY_DLMC = {l.dlmc: l for l in LAYERS}
_BY_MODULE = {l.module: l for l in LAYERS}


def layer(name):
    """The Layer of a DLMC name (with or without .smtx) or a torchvision
    module name; KeyError naming what is known otherwise."""
    key = name[:-5] if name.endswith(".smtx") else name
    found = _BY_DLMC.get(key) or _BY_MODULE.get(key)
    if found is None:
        raise KeyError("%r is neither a DLMC ResNet-50 layer (e.g. %s) nor a torchvision "
                       "resnet50 module (e.g. %s)" % (name, LAYERS[1].dlmc, LAYERS[1].module))
    return found


def matrix_shape(l):
    """(rows, cols) of the layer's DLMC matrix: C_out x C_in*R*S."""
    return l.c_out, l.c_in * l.kernel * l.kernel


def torch_columns(l):
    """perm with perm[j] = the torch (c, r, s) column of DLMC (r, s, c)
    column j of layer l: a mask of DLMC columns moves to torch's order as
    torch_mask[:, perm] = dlmc_mask."""
    c, k = l.c_in, l.kernel
    return [(j % c * k + j // c // k) * k + j // c % k for j in range(c * k * k)]


def read_smtx(path):
    """(rows, cols, row offsets, column indices) of a DLMC .smtx pattern;
    ValueError naming the file where its counts disagree with its header."""
    with open(path) as f:
        rows, cols, nnz = (int(x) for x in f.readline().split(","))
        row_ptr = [int(x) for x in f.readline().split()]
        col_idx = [int(x) for x in f.readline().split()] if nnz else []
    if len(row_ptr) != rows + 1 or len(col_idx) != nnz or row_ptr[-1] != nnz:
        raise ValueError("%s: expected %d row offsets and %d columns" % (path, rows + 1, nnz))
    return rows, cols, row_ptr, col_idx
