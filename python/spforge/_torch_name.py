"""A cuda weight's name for the plan cache (spforge.MatrixName), made on
its device.

The plan cache keys a plan by hashes of the matrix's CSR on the host. For
a layer of a model on the GPU that means its nonzeros crossing to the host
and being checked, copied and hashed there, about 20-30 ms a 7B layer: most
of what sparsify costs when every plan comes from the cache. A name made
where the weight lives lets a layer find its cached decision without that
(spforge.cached_plan_info of the name): a layer whose plans are dense never
makes its CSR at all.

The hash: the weight's elements as integers (their bit patterns), in
blocks of BLOCK, each element times a pseudo-random 64-bit multiplier of
its place in the block (splitmix64 of the place, a table made once per
device), summed per block on the device in wrapping int64; the host then
combines the blocks' sums with multipliers of their index, two independent
ways, into 128 bits (with the element count). A linear hash: two weights collide only if their
difference is orthogonal to both multiplier vectors modulo 2^64, which
weights do not arrange. A collision would give one layer another's
decision, never another's plan (MatrixName): the cost is speed, not
results.
"""

import torch

from . import MatrixName

BLOCK = 1 << 20        # elements hashed per pass (their int64 copy: 8 MiB)
_MASK = (1 << 64) - 1
_tables = {}           # device -> (2, BLOCK) int64 multipliers


def _splitmix(x):
    """splitmix64's output function of a Python int (mod 2^64)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _signed(c):
    return c - (1 << 64) if c >= 1 << 63 else c


def _shr(x, s):
    """x >> s on int64 tensors as on unsigned words (torch shifts in signs)."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def _splitmix_tensor(x):
    """_splitmix of every element of an int64 tensor (wrapping arithmetic)."""
    x = x + _signed(0x9E3779B97F4A7C15)
    x = (x ^ _shr(x, 30)) * _signed(0xBF58476D1CE4E5B9)
    x = (x ^ _shr(x, 27)) * _signed(0x94D049BB133111EB)
    return x ^ _shr(x, 31)


def _table(device):
    if device not in _tables:
        places = torch.arange(2 * BLOCK, dtype=torch.int64, device=device)
        _tables[device] = _splitmix_tensor(places).reshape(2, BLOCK)
    return _tables[device]


def weights_name(pruned, keep):
    """The MatrixName of the matrix of a cuda layer's pruned weight (its
    entries where keep is true, zero elsewhere), or None when that matrix
    is not the weight's nonzeros (a kept entry is zero) or a value is not
    finite: then the layer makes its Matrix now, which keeps the zeros and
    refuses the value as it would."""
    words = pruned.contiguous().reshape(-1)
    words = words.view(torch.int16 if words.element_size() == 2 else torch.int32)
    table = _table(pruned.device)
    sums = []
    for start in range(0, words.numel(), BLOCK):
        part = words[start:start + BLOCK].to(torch.int64)
        sums.append((part * table[:, :part.numel()]).sum(dim=1))
    facts = torch.stack([keep.sum(), (pruned != 0).sum(), torch.isfinite(pruned).all().long()])
    blocks = torch.cat([facts] + sums).tolist()  # the one wait for the device
    nnz, nonzero, finite = blocks[:3]
    if nnz != nonzero or not finite:
        return None
    hashes = [words.numel(), words.numel()]
    for index, i in enumerate(range(3, len(blocks), 2)):
        for j in range(2):
            multiplier = _splitmix(2 * index + j) | 1
            hashes[j] = (hashes[j] + (blocks[i + j] & _MASK) * multiplier) & _MASK
    rows, cols = pruned.shape
    return MatrixName(rows, cols, nnz, (hashes[0], hashes[1]))
