"""spforge.torch.sparsify_fused (issue 14): a CNN for inference with each
convolution run by spforge's conv plans together with what follows it.

torch runs a ResNet bottleneck's convolution, batch norm, residual add and
ReLU as separate kernels; at batch 1 each costs a launch of a few µs for
little work (ResNet-50 at batch 1 replayed in a CUDA graph: 935 µs on the
H200 for about 160 kernels). Folded and fused, a convolution with its
batch norm, residual add and ReLU is one conv plan: a bias (the batch
norm's, folded into the weights and bias in eval mode), the residual added
in the window kernel's epilogue, then the ReLU.

The model is traced with torch.fx; the batch norms are folded by
torch.fx.experimental.optimization.fuse (each Conv2d whose only user is a
BatchNorm2d); the shapes come from one run of the traced model on the
example input (torch.fx.passes.shape_prop), so that only an add of a
tensor of the convolution's own shape becomes a residual."""

import fnmatch
import operator

import torch

from ._torch import SparsifyReport, _check_sparsity, _magnitude_keep
from ._torch_conv import _PLAN_OPTIONS, SparseConv2d, conv_unsupported

_ADD_FUNCTIONS = (operator.add, operator.iadd, torch.add)
_RELU_FUNCTIONS = (torch.relu, torch.relu_, torch.nn.functional.relu)


def _shape(node):
    meta = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
    return tuple(meta.shape) if meta is not None and hasattr(meta, "shape") else None


def _residual_of(user, conv):
    """The other operand where user adds conv's output and a tensor of its
    shape (conv's output first for the in-place adds, whose target would
    otherwise change), else None."""
    if user.kwargs:
        return None
    if user.op == "call_function" and user.target in _ADD_FUNCTIONS and len(user.args) == 2:
        a, b = user.args
    elif user.op == "call_method" and user.target in ("add", "add_") and len(user.args) == 2:
        a, b = user.args
    else:
        return None
    inplace = user.target in (operator.iadd, "add_")
    if a is conv and isinstance(b, torch.fx.Node) and b is not conv:
        other = b
    elif b is conv and not inplace and isinstance(a, torch.fx.Node):
        other = a
    else:
        return None
    shape = _shape(conv)
    return other if shape is not None and _shape(other) == shape else None


def _is_relu(node, modules):
    if node.op == "call_module":
        return type(modules.get(node.target)) is torch.nn.ReLU
    if node.op == "call_function":
        return node.target in _RELU_FUNCTIONS and len(node.args) == 1 and \
            set(node.kwargs) <= {"inplace"}
    return node.op == "call_method" and node.target in ("relu", "relu_") and len(node.args) == 1


def _set_module(root, name, module):
    parent, _, attr = name.rpartition(".")
    setattr(root.get_submodule(parent) if parent else root, attr, module)


def sparsify_fused(model, example, sparsity=None, min_size=1 << 16, *, exclude=(),
                   plan_options=None):
    """Trace model with torch.fx, fold each BatchNorm2d into the Conv2d
    before it (eval mode: the running statistics), and swap each Conv2d
    that SparseConv2d takes (and min_size, exclude allow, as sparsify) for
    a SparseConv2d that also runs what follows it: a ReLU, or an add of a
    tensor of its output's shape (a residual) and then, where one follows,
    a ReLU. example: the model's input (a tensor, or a tuple of its
    arguments), run once through the traced model for the shapes. Weights
    are pruned by magnitude to sparsity after the folding, or, with
    sparsity None, their nonzeros are kept (the folding scales a channel's
    weights; a zero stays zero).

    Returns (module, report): a torch.fx.GraphModule (model is left as it
    was, in its own training mode) and a SparsifyReport whose fused names
    the layers that took their ReLU and whose residual those that took
    their add. Raises what torch.fx raises for a model it cannot trace."""
    from torch.fx.experimental.optimization import fuse as fold_batchnorm
    from torch.fx.passes.shape_prop import ShapeProp
    exclude = (exclude,) if isinstance(exclude, str) else tuple(exclude)
    if sparsity is not None:
        _check_sparsity(sparsity)
    options = {k: v for k, v in (plan_options or {}).items() if k in _PLAN_OPTIONS}
    training = model.training
    try:
        gm = fold_batchnorm(model.eval())  # a traced copy
    finally:
        model.train(training)
    with torch.no_grad():
        ShapeProp(gm).propagate(*(example if isinstance(example, tuple) else (example,)))
    modules = dict(gm.named_modules())
    report = SparsifyReport(sparsity, min_size)
    for node in list(gm.graph.nodes):
        conv = modules.get(node.target) if node.op == "call_module" else None
        if not isinstance(conv, torch.nn.Conv2d):
            continue
        name, size = node.target, conv.weight.numel()
        why = ("excluded" if any(fnmatch.fnmatchcase(name, p) for p in exclude)
               else "%d weights < min_size %d" % (size, min_size) if size < min_size
               else conv_unsupported(conv))
        if why is not None:
            report.kept.append((name, why))
            continue
        chain, skip = [node], None
        if len(node.users) == 1:
            skip = _residual_of(next(iter(node.users)), node)
            if skip is not None:
                chain.append(next(iter(node.users)))
        relu = len(chain[-1].users) == 1 and _is_relu(next(iter(chain[-1].users)), modules)
        if relu:
            chain.append(next(iter(chain[-1].users)))
        mask = None if sparsity is None else _magnitude_keep(conv.weight, sparsity)
        layer = SparseConv2d.from_conv(conv, mask=mask, activation="relu" if relu else None,
                                       residual=skip is not None, plan_options=options,
                                       name=name)
        _set_module(gm, name, layer)
        with gm.graph.inserting_after(chain[-1]):
            fused = gm.graph.call_module(name, (node.args[0],) + (() if skip is None else (skip,)))
        fused.meta = dict(chain[-1].meta)  # its shape, for a later add that reads it
        chain[-1].replace_all_uses_with(fused)
        for dead in reversed(chain):
            gm.graph.erase_node(dead)
        report.swapped[name] = layer
        if relu:
            report.fused.append(name)
        if skip is not None:
            report.residual.append(name)
    gm.graph.lint()
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm, report
