"""spforge.torch: pruned nn.Linear and nn.Conv2d layers as spforge plans, for inference.

    import spforge.torch
    layer = spforge.torch.SparseLinear.from_linear(linear, sparsity=0.9)  # or mask=
    conv = spforge.torch.SparseConv2d.from_conv(conv2d, sparsity=0.9)  # cuda, NCHW in
    report = spforge.torch.sparsify(model, sparsity=0.7, min_size=1 << 16, ns=[512])
    print(report)                 # what was swapped, what was not and why, the expected gain
    cnn, report = spforge.torch.sparsify_fused(cnn, example)  # batch norms folded, ReLU and
                                                             # residual adds fused (torch.fx)

SparseLinear runs Y = X·Wᵀ (+ bias) (ReLU fused; other activations after)
through the spforge::linear custom op (torch.library), so it works in
eager mode, under torch.compile and inside CUDA graphs; its backward
raises (inference only). Plans are made per N (the rows of X: batch ×
sequence) on first use, or ahead of time with prepare(ns) — required
before a CUDA graph is captured, since making a plan compiles and
synchronizes. The implementation is _torch.py. SparseConv2d (cuda only)
runs spforge's conv plans through spforge::conv2d the same way, a plan
per input shape, each timed against torch's conv on first use and the
faster kept (_torch_conv.py). sparsify_fused traces a CNN with torch.fx,
folds its batch norms and fuses each convolution's ReLU and residual add
into its SparseConv2d (_torch_fuse.py).

This module imports without torch; its names need torch >= 2.4 and raise
ImportError saying so when it is missing. `import spforge` never imports
torch.
"""

__all__ = ["SparseLinear", "SparseConv2d", "sparsify", "sparsify_fused", "magnitude_prune",
           "magnitude_mask", "SparsifyReport", "INFERENCE_ONLY"]


def __getattr__(name):
    if name not in __all__:
        raise AttributeError("module 'spforge.torch' has no attribute %r" % name)
    from . import _torch  # raises the ImportError that names what is missing
    if name == "SparseConv2d":
        from . import _torch_conv
        return _torch_conv.SparseConv2d
    if name == "sparsify_fused":
        from . import _torch_fuse
        return _torch_fuse.sparsify_fused
    return getattr(_torch, name)


def __dir__():
    return sorted(list(globals()) + __all__)
