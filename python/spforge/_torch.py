"""spforge.torch's implementation (spforge/torch.py names what it offers).

Imported on the first use of one of spforge.torch's names, so that
`import spforge` and `import spforge.torch` never need torch.

How a layer runs: a SparseLinear holds its pruned weight as a spforge
Matrix (a host CSR copy; a cuda layer makes it on first need, which a
layer whose plan cache decisions are dense never has: it finds them by a
name of its weight made on the device, _torch_name.py) and an integer key
into a registry of layers (_LAYERS). forward() flattens X to N×K and
calls the custom op
spforge::linear(x, bias, key) (torch.library.custom_op): custom ops take
tensors and primitives, not Python objects, hence the key. The op looks
the layer up, takes the plan for N (made on first use: spforge.Plan with
both layouts N_FIRST, so C = A·B is Y = X·Wᵀ on X and Y as torch holds
them, nothing transposed) and runs it on torch's current stream into a
new tensor. Its fake (meta) implementation gives torch.compile the
output's shape; its autograd formula raises INFERENCE_ONLY.

Two ways around the op, where it would only cost time. In eager mode, for
a plain tensor that needs no gradient, forward runs the same code without
the op, through a function bound once per input shape (_Layer.run_eager):
the dispatcher's round trip through Python cost 6-17 µs a call more than
the same code called directly (CPU plans, torch 2.15, the 2-core build
machine, under inference_mode and no_grad), about the kernel time of a
decode-sized layer. Under torch.compile, a layer whose plans are all dense
is traced as torch's linear on the pruned weight, which inductor fuses
with its neighbours like any nn.Linear (_all_dense says when, and what it
costs). Otherwise (a sparse plan, none made yet, tensor subclasses such as
the fake tensors of tracing, and where autograd records) forward calls the
op.

Plans per N. A plan is made for one N and making one costs 0.1-1 s (the
plan cache on disk, $SPFORGE_CACHE_DIR, makes repeats cheap). n_plans
says which N a call of N rows runs on:
  "exact": a plan for every N met;
  "pow2":  the next power of two, X padded with zero rows (one copy) and
           Y a view of the first N rows of the result: at most log2(N)+1
           plans, at the cost of the padded rows' work;
  "auto":  "pow2" up to N = 64 (decoding, where the weights' bytes bound
           the kernel and a few more rows cost little), "exact" above.
scripts/e2e_bert.py measures both on the decode step of a Llama-like MLP.
"""

import fnmatch
import itertools
import math
import sys
import threading
import time
import weakref

try:
    import torch
except ImportError as e:
    raise ImportError("spforge.torch needs PyTorch (pip install torch, version 2.4 or later); "
                      "the rest of spforge does not: %s" % e) from None

from . import (Error, Matrix, Plan, _check, _convert, _error, cached_plan_info,
               note_cached_plan)
from ._capi import lib
from ._torch_name import weights_name

if not hasattr(getattr(torch, "library", None), "custom_op"):
    raise ImportError("spforge.torch needs torch >= 2.4 (torch.library.custom_op); this is torch "
                      "%s" % getattr(torch, "__version__", "?"))

__all__ = ["SparseLinear", "sparsify", "magnitude_prune", "magnitude_mask", "SparsifyReport",
           "INFERENCE_ONLY"]

INFERENCE_ONLY = ("spforge.torch.SparseLinear is inference only: its weights live in a compiled "
                  "spforge plan, which has no backward. Run it under torch.no_grad() or "
                  "torch.inference_mode(), and train (or fine-tune) the dense model, then "
                  "sparsify it again.")

N_PLANS = ("auto", "exact", "pow2")
POW2_MAX = 64  # n_plans="auto": N up to this rounds up to a power of two
# Activations applied after the op; only ReLU is fused into the plan.
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")
# Plan options the layer sets itself.
_OWN_OPTIONS = ("dtype", "b_layout", "c_layout", "bias", "relu", "device")
_GPU_DTYPES = ("float32", "float16", "bfloat16")


def plan_rows(n, n_plans):
    """The N of the plan that runs a call of n >= 1 rows under n_plans."""
    if n_plans == "exact" or (n_plans == "auto" and n > POW2_MAX):
        return n
    return 1 << (n - 1).bit_length()


def _capturing(device):
    return device is not None and torch.cuda.is_current_stream_capturing()


# Whether torch.compile (dynamo) is tracing: then forward calls the op,
# which it can trace.
_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)

# torch's current stream of a device index as a cudaStream_t int, without
# the Stream object torch.cuda.current_stream makes per call.
_raw_stream = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream)


class _Layer:
    """What the op's key names: the weight as a Matrix, the plans made for
    it (plan N -> Plan) and how to make them. Shared, never copied, by
    deep copies of its SparseLinear (plans are read-only once made and may
    run from several threads and streams at once)."""

    def __init__(self, matrix, device, dtype, has_bias, relu, n_plans, options, name,
                 source=None, known_as=None):
        # matrix None: a cuda layer known by known_as (a MatrixName of
        # source, _torch_name.py), its Matrix made on first need (matrix).
        self._matrix, self.known_as, self.device, self.dtype = matrix, known_as, device, dtype
        self.m, self.k = matrix.shape if matrix is not None else (known_as.rows, known_as.cols)
        self.nnz = matrix.nnz if matrix is not None else known_as.nnz
        self.has_bias, self.relu, self.n_plans = has_bias, relu, n_plans
        self.options, self.name = options, name
        # plan N -> its Plan, or DENSE; plan N -> seconds spent making it
        self.plans, self.made = {}, {}
        self.summaries = {}  # plan N -> _summary of a DENSE one (its Plan is freed)
        # Plan Ns whose AUTO plan chose the dense strategy run torch's own
        # linear on the pruned weight instead (made once, on first need):
        # the same dense computation without the binding's per-call cost,
        # so that a swapped layer is never slower than the dense Linear it
        # replaced (BERT-base on the H100: 0.68-0.73x end to end when the
        # dense plans ran through the binding; e2e_bert.py).
        self.dense_ns, self.dense_weight = set(), None
        self.dense_bias = None  # (the fp32 bias given, it in the layer's dtype)
        # The pruned weight, dense on the device as the layer was made from
        # it, until its first plans are made: a plan that AUTO makes dense
        # runs on it, with no trip through the host CSR (seconds on a 7B
        # model); else it is let go. A layer made without its Matrix keeps
        # it (as source, or as dense_weight) until the Matrix is made.
        self.source = source
        # What a call of N rows runs (N -> a function of x and bias), made on
        # its first call: the plan looked up, the dense choice, the C entry
        # point and the stream's device bound once, so that an eager call
        # costs the kernel's launch and little more. eager: the same by the
        # input's (shape, dtype, device), for inputs of any rank, checked
        # once (with whether a bias is given): an eager forward is a dict
        # lookup and the call.
        self.calls, self.eager = {}, {}
        self.x_dtype = getattr(torch, dtype)
        self.x_device = -1 if device is None else device  # as Tensor.get_device() says
        self.lock = threading.Lock()
        self.key = next(_KEYS)
        _LAYERS[self.key] = self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        """Pickled as what makes it (the Matrix as its CSR arrays, the
        options); the plans are made again on use (the plan cache makes
        that fast)."""
        return (_Layer, (self.matrix, self.device, self.dtype, self.has_bias, self.relu,
                         self.n_plans, self.options, self.name))

    @property
    def matrix(self):
        """The weight as a Matrix (_matrix_now)."""
        return self._matrix_now()

    def _matrix_now(self):
        """The Matrix; a layer made without one (known_as) makes it now from
        the pruned weight it holds, whose nonzeros are exactly its entries
        (_torch_name.weights_name)."""
        if self._matrix is None:
            self._matrix = Matrix(self.dense())
        return self._matrix

    def dense(self):
        """The pruned weight as torch's linear takes it: exactly the matrix's
        entries, M×K, in the layer's dtype, on its device."""
        for weight in (self.source, self.dense_weight):
            if weight is not None:
                return weight
        where = torch.device("cpu") if self.device is None else torch.device("cuda", self.device)
        return dense_of(self.matrix, getattr(torch, self.dtype), where)

    def plan(self, n):
        """The plan of plan N n, made now if there is none."""
        plan = self.plans.get(n)
        if plan is not None:
            return plan
        with self.lock:
            plan = self.plans.get(n)
            if plan is not None:
                return plan
            if _capturing(self.device):
                raise RuntimeError(
                    "spforge.torch: layer %s has no plan for N = %d and a CUDA graph is being "
                    "captured; making a plan compiles and synchronizes. Run the model once with "
                    "these shapes before capturing (or SparseLinear.prepare([N]) / "
                    "sparsify(ns=[N]))" % (self.name or "?", n))
            start = time.perf_counter()
            options = dict(self.options, dtype=self.dtype, b_layout="n_first",
                           c_layout="n_first", bias=self.has_bias, relu=self.relu)
            try:
                # A dense decision the plan cache holds is run by torch's
                # linear without making the plan (which would upload and
                # expand the weight only to be freed): _use_dense.
                lookup = _lookup_options(options)
                info, noted = self._cached_info(n, lookup)
                if info is not None and info["strategy"] == "dense":
                    plan = None
                else:
                    plan, info = Plan(self.matrix, n, **options), None
                if not noted:  # for the next process: the decision by the name
                    note_cached_plan(self.matrix, self.known_as, n, **lookup)
            except Error as e:
                raise _error(e.status, e.name, "layer %s (%d×%d, nnz %d), N = %d: %s"
                             % (self.name or "?", self.m, self.k, self.nnz, n,
                                e.detail)) from None
            self.made[n] = time.perf_counter() - start
            if info is None and self.device is not None:
                made = plan.info()
                if made["strategy"] == "dense":
                    info = made
                    plan.close()
            if info is not None:
                self._use_dense(n, info)
                plan = DENSE
            self.plans[n] = plan
            return plan

    def _cached_info(self, n, options):
        """(the plan cache's info of plan N n or None, whether the weight's
        name needs no note of it) for lookup options (_lookup_options): by
        the name first (no Matrix needed), else by the Matrix. A cpu
        layer's plans are never cached."""
        if self.device is None:
            return None, True
        if self.known_as is not None:
            info = cached_plan_info(self.known_as, n, **options)
            if info is not None:
                return info, True
        return cached_plan_info(self.matrix, n, **options), self.known_as is None

    def _use_dense(self, n, info):
        """Plan N n runs torch's linear on the pruned weight (made from the
        matrix's nonzeros, in the layer's dtype, on its device, once).
        Its Plan is not kept, the facts of its info are: its own dense copy
        of the weight would double the layer's memory."""
        if self.dense_weight is None:
            self.dense_weight = self.dense()
        self.dense_ns.add(n)
        self.summaries[n] = _summary(info, n, self.made.get(n))

    def summary(self, n):
        """_summary of the plan of plan N n."""
        return self.summaries.get(n) or _summary(self.plans[n].info(), n, self.made.get(n))

    def sources_done(self):
        """The plans asked for are made: the source is let go (a layer
        without its Matrix keeps its weight as dense_weight, or makes the
        Matrix first)."""
        if self.dense_weight is None:
            self._matrix_now()
        self.source = None

    def set_n_plans(self, policy):
        self.n_plans, self.calls, self.eager = policy, {}, {}

    def run(self, x, bias, who="spforge::linear"):
        """Y = X·Wᵀ (+ bias) (ReLU) for an N×K X: a new N×M tensor."""
        self._check(x, bias, who, x.dim() == 2)
        call = self.calls.get(x.shape[0])
        if call is None:
            call = self._call_for(x.shape[0])
        return call(x, bias)

    def run_eager(self, x, bias):
        """run() for an (..., K) X of an eager forward: (..., M), by the
        call bound to X's (shape, dtype, device) on its first meeting."""
        call = self.eager.get((x.shape, x.dtype, x.device, bias is None))
        if call is None:
            call = self._eager_for(x, bias)
        return call(x, bias)

    def _eager_for(self, x, bias):
        """The function run_eager keeps for inputs like x (checked now)."""
        self._check(x, bias, "SparseLinear", x.dim() >= 1)
        n = math.prod(x.shape[:-1])
        flat = self.calls.get(n) or self._call_for(n)
        if x.dim() == 2 or (n and plan_rows(n, self.n_plans) in self.dense_ns):
            call = flat  # (torch's linear takes any leading dimensions)
        else:
            k, out = self.k, tuple(x.shape[:-1]) + (self.m,)

            def call(x, bias):
                return flat(x.reshape(-1, k), bias).reshape(out)
        if len(self.eager) >= EAGER_SHAPES:  # shapes met once each stay bounded
            self.eager.clear()
        self.eager[(x.shape, x.dtype, x.device, bias is None)] = call
        return call

    def traced_dense(self, bias):
        """For torch.compile's trace: (the pruned weight, bias in the
        layer's dtype) when every plan the layer has made is dense
        (_all_dense), so that the compiled graph has torch's own linear (its
        fusions, no Python call); else None (the op runs)."""
        if not _all_dense(self.key):
            return None
        if bias is not None:
            held = self.dense_bias
            bias = held[1] if held is not None and held[0] is bias else bias.to(self.x_dtype)
        return self.dense_weight, bias

    def hold_dense_bias(self, bias):
        """bias in the layer's dtype, as the dense calls add it (made once
        per bias tensor)."""
        if self.dense_bias is None or self.dense_bias[0] is not bias:
            self.dense_bias = (bias, bias.to(self.x_dtype))
        return self.dense_bias[1]

    def _check(self, x, bias, who, rank_ok):
        """Refuse (_refuse) an input of another rank (rank_ok false), width,
        dtype or device, or a bias given to a layer made without one (or
        the reverse)."""
        if (not rank_ok or x.shape[-1] != self.k or x.dtype is not self.x_dtype
                or x.get_device() != self.x_device or (bias is None) == self.has_bias
                or not (x.is_cuda if self.x_device >= 0 else x.is_cpu)):
            self._refuse(x, bias, who, rank_ok)

    def _refuse(self, x, bias, who, rank_ok):
        """The error of a call _check refuses."""
        if not rank_ok or x.shape[-1] != self.k:
            raise ValueError("%s: input of shape %s; the layer takes (..., %d)"
                             % (who, tuple(x.shape), self.k))
        if x.dtype is not self.x_dtype:
            raise TypeError("%s: input of %s; the layer's plans take %s (convert the input, or "
                            "sparsify the model after converting it)" % (who, x.dtype, self.dtype))
        on_device = x.is_cuda if self.x_device >= 0 else x.is_cpu
        if x.get_device() != self.x_device or not on_device:
            raise ValueError("%s: input on %s; the layer's plans run on %s"
                             % (who, x.device, _convert.device_name(self.device)))
        raise ValueError("%s: bias %s, the layer was made %s one"
                         % (who, "given" if bias is not None else "missing",
                            "with" if self.has_bias else "without"))

    def _call_for(self, n):
        """The function that runs calls of n rows (made now: the plan too,
        if there is none; kept in self.calls)."""
        if n == 0:
            call = self._empty
        else:
            rows = plan_rows(n, self.n_plans)
            plan = self.plan(rows)
            self.sources_done()
            call = self._dense_call() if rows in self.dense_ns else self._plan_call(plan, n, rows)
        self.calls[n] = call
        return call

    def _empty(self, x, bias):
        return x.new_empty((0, self.m))

    def _dense_call(self):
        """torch's own linear on the pruned weight (the plan chose dense)."""
        weight, relu, linear = self.dense_weight, self.relu, torch.nn.functional.linear

        def call(x, bias):
            if bias is not None:
                bias = self.hold_dense_bias(bias)
            y = linear(x, weight, bias)
            return torch.relu_(y) if relu else y
        return call

    def _plan_call(self, plan, n, rows):
        """The plan's execute on n rows, padded to its rows (n_plans)."""
        execute, handle, m = lib().spf_plan_execute, plan._handle, self.m
        index = self.device
        empty, pad = torch.empty, torch.nn.functional.pad

        def call(x, bias):
            if rows != n:
                x = pad(x, (0, 0, 0, rows - n))
            elif not x.is_contiguous() or x.data_ptr() % 16:  # dense plans need 16-byte alignment
                x = x.clone(memory_format=torch.contiguous_format)
            y = empty((rows, m), dtype=x.dtype, device=x.device)
            stream = 0 if index is None else _raw_stream(index)
            with handle as ptr:  # a release_plans() on another thread waits for the call
                status = execute(ptr, x.data_ptr(), y.data_ptr(),
                                 None if bias is None else bias.data_ptr(), stream or None)
            if status:
                _check(status)
            return y if rows == n else y[:n]
        return call

    def close(self):
        source = self.dense() if self._matrix is None else None  # (its Matrix to be)
        self.calls, self.eager, self.summaries, self.source = {}, {}, {}, source
        self.dense_ns, self.dense_weight, self.dense_bias = set(), None, None
        plans, self.plans = self.plans, {}
        for plan in plans.values():
            if plan is not DENSE:
                plan.close()


# What _Layer.plans holds for a plan N that runs torch's linear.
DENSE = "dense"
# Input shapes a layer keeps eager calls bound for (_Layer.eager); past it
# they are bound again as met.
EAGER_SHAPES = 256
_KEYS = itertools.count(1)
_LAYERS = weakref.WeakValueDictionary()


def dense_of(matrix, dtype, device):
    """A Matrix as a dense M×K tensor of dtype on device: exactly its
    entries (scattered on the device: the CSR arrays cross, not M×K)."""
    m, k = matrix.shape
    row_ptr, col_idx, values = (torch.from_numpy(a).to(device=device)
                                for a in matrix._csr_numpy())
    rows = torch.repeat_interleave(torch.arange(m, device=device), row_ptr[1:] - row_ptr[:-1])
    dense = torch.zeros((m, k), dtype=dtype, device=device)
    dense[rows, col_idx.long()] = values.to(dtype)
    return dense


def _layer(key, kind=None, op="spforge::linear", module="SparseLinear"):
    """The live layer state of class kind (_Layer) behind op's key."""
    layer = _LAYERS.get(key)
    if not isinstance(layer, kind or _Layer):
        raise RuntimeError("%s: no live %s has key %d (the layer was freed)" % (op, module, key))
    return layer


def _assume_constant(fn):
    """fn, which torch.compile's trace calls once and whose result it keeps
    with no guard (torch._dynamo.assume_constant_result) where torch has
    it."""
    dynamo = getattr(torch, "_dynamo", None)
    return getattr(dynamo, "assume_constant_result", lambda f: f)(fn)


@_assume_constant
def _all_dense(key):
    """Whether layer key has made plans and every one is dense. A trace
    reads it once and keeps it unguarded: a guard on the layer's plans
    failed, and compiled the graph again, each time a plan was made. It
    asks nothing of N, which a trace with dynamic shapes holds as a symbol
    (that a constant function may not take). So a graph traced before the
    layer's plans existed runs the op, and one traced while all were dense
    runs torch's linear at any N, even where a sparse plan is made later:
    both correct, the first a Python call slower, the second without that
    plan's gain until the model is compiled again."""
    layer = _LAYERS.get(key)
    return layer is not None and bool(layer.plans) and all(
        plan is DENSE for plan in layer.plans.values())


@torch.library.custom_op("spforge::linear", mutates_args=(),
                         schema="(Tensor x, Tensor? bias, int key) -> Tensor")
def linear_op(x, bias, key):
    """Y = X·Wᵀ (+ bias) (ReLU if fused) with the plans of layer key."""
    return _layer(key).run(x, bias)


@linear_op.register_fake
def _linear_fake(x, bias, key):
    return x.new_empty((x.shape[0], _layer(key).m))


def _no_backward(ctx, grad):
    raise RuntimeError(INFERENCE_ONLY)


linear_op.register_autograd(_no_backward)


def _host_weight(weight):
    return _convert._host_numpy(weight, "weight")


def _check_sparsity(sparsity):
    if isinstance(sparsity, bool) or not isinstance(sparsity, (int, float)):
        raise TypeError("sparsity: expected a number in [0, 1), got %r" % (sparsity,))
    if not 0 <= sparsity < 1:
        raise ValueError("sparsity: expected a number in [0, 1), got %r" % (sparsity,))


def _keep_count(size, sparsity):
    return size - int(round(sparsity * size))


def _magnitude_keep(weight, sparsity):
    """magnitude_mask's mask where the weight is: a bool tensor on the
    device for a cuda weight (selected there, in milliseconds where the
    host took a second on a 7B layer), else the numpy mask. Both keep the
    same entries: those above the keep-th largest magnitude, then the ties
    at it in row-major order."""
    _check_sparsity(sparsity)
    if getattr(getattr(weight, "device", None), "type", "cpu") != "cuda":
        return _host_magnitude_keep(weight, sparsity)
    with torch.no_grad():
        magnitude = weight.detach().abs().float().flatten()
        size = magnitude.numel()
        keep = _keep_count(size, sparsity)
        if keep >= size or keep == 0:
            return torch.full(tuple(weight.shape), keep > 0, dtype=torch.bool,
                              device=weight.device)
        cut = torch.kthvalue(magnitude, size - keep + 1).values
        mask = magnitude > cut
        ties = torch.nonzero(magnitude == cut).flatten()[:keep - int(mask.sum())]
        mask[ties] = True
        return mask.reshape(tuple(weight.shape))


def _host_magnitude_keep(weight, sparsity):
    w = _host_weight(weight)
    numpy = _convert._need_numpy("magnitude pruning")
    magnitude = numpy.abs(w.astype(numpy.float32, copy=False)).ravel()
    size = magnitude.size
    keep = _keep_count(size, sparsity)
    if keep >= size or keep == 0:
        return numpy.full(w.shape, keep > 0, bool)
    cut = numpy.partition(magnitude, size - keep)[size - keep]
    mask = magnitude > cut
    mask[numpy.flatnonzero(magnitude == cut)[:keep - int(mask.sum())]] = True
    return mask.reshape(w.shape)


def magnitude_mask(weight, sparsity):
    """The mask (numpy bool, the weight's shape) keeping the
    round((1 - sparsity) · size) entries of largest magnitude (of equal
    ones, the first in row-major order). A cuda weight is ranked on its
    device."""
    mask = _magnitude_keep(weight, sparsity)
    return mask.cpu().numpy() if isinstance(mask, torch.Tensor) else mask


def _plan_device(device):
    kind = getattr(device, "type", str(device))
    if kind == "cpu":
        return None
    if kind == "cuda":
        return 0 if device.index is None else int(device.index)
    raise ValueError("spforge.torch: weights on %s; spforge plans run on cpu and cuda" % device)


def _lookup_options(options):
    """A layer's plan options for cached_plan_info and note_cached_plan:
    less the progress hook, which a cache lookup has nothing to report to."""
    return {k: v for k, v in options.items() if k != "progress"}


def _summary(info, n, made_s):
    """One plan's facts for reports, from its info(): strategy, kernel time
    and the dense candidate's (both measured by the planner under AUTO),
    their ratio."""
    chosen = info["kernel_us"] or next((c["kernel_us"] for c in info["candidates"]
                                        if c["outcome"] == "chosen"), 0.0)
    dense = next((c["kernel_us"] for c in info["candidates"]
                  if c["strategy"] == "dense" and c["kernel_us"] > 0), 0.0)
    return {"n": n, "strategy": info["strategy"], "config": info["config"],
            "kernel_us": chosen or None, "dense_us": dense or None,
            "gain": dense / chosen if chosen and dense else None,
            "plan_s": made_s, "from_cache": info["from_cache"]}


class PrunedState:
    """What SparseLinear and SparseConv2d share: the layer behind the op's key
    (self._layer, holding .matrix and .key), and a state_dict of the module
    it replaced: "weight", the pruned weight dense (_pruned_weight), and the
    float32 "bias" buffer. Loading a weight keeps its nonzeros and makes the
    layer again (_rebuilt); the old layer's plans are freed."""

    @property
    def _key(self):
        return self._layer.key

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "weight"] = self._pruned_weight()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        key = prefix + "weight"
        weight, want = state_dict.get(key), tuple(self._pruned_weight_shape())
        if weight is None:
            missing_keys.append(key)
        elif tuple(weight.shape) != want:
            error_msgs.append("size mismatch for %s: copying a weight of shape %s, the layer's "
                              "is %s" % (key, tuple(weight.shape), want))
        else:
            old = self._layer
            self._layer = self._rebuilt(weight.detach().to(device=self.device, dtype=self.dtype))
            self.nnz = self._layer.matrix.nnz
            old.close()
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)
        if key in unexpected_keys:
            unexpected_keys.remove(key)
        if self.bias is not None and (self.bias.dtype != torch.float32 or
                                      not self.bias.is_contiguous()):
            self.bias = self.bias.float().contiguous()  # the plans add the bias in fp32


class SparseLinear(PrunedState, torch.nn.Module):
    """Y = X·Wᵀ + bias, then the activation, with W sparse, for inference.

    SparseLinear(weight, bias=None, *, mask=None, sparsity=None,
    threshold=None, activation=None, n_plans="auto", plan_options=None,
    name=None) takes W (out × in, float32 on the cpu; float32, float16 or
    bfloat16 on a cuda device) and keeps its entries where mask is nonzero,
    or the round((1 - sparsity) · size) of largest magnitude, or those with
    |w| > threshold, or, with none of these, its nonzeros. The weight is
    copied into spforge (the tensor is not kept); a cuda layer holds the
    pruned weight dense on its device too, until its first plans are made,
    and after only if AUTO made one of them dense (that plan runs torch's
    linear on it, and the dense plan itself is freed); with the plan cache
    on, its nonzeros cross to the host only when a plan needs them (not for
    plans the cache holds as dense). bias: out values, any
    float dtype, kept as float32 (the plans add it in fp32). activation:
    None, "relu" (fused into the plan), "gelu", "gelu_tanh", "silu" or a
    callable, applied after. n_plans: which plan a batch of N rows runs on
    (_torch.py's docstring: "exact", "pow2", "auto"). plan_options: more
    spforge.Plan options (strategy, math, search, dense, cache, ...); the
    cpu layers' plans are strategy "cpu".

    Inputs: (..., in) tensors of the layer's dtype on its device; any
    number of rows N (all leading dimensions). Calls run on torch's
    current stream. The first call with a new N makes its plan (0.1-1 s,
    less from the plan cache); prepare(ns) makes them ahead of time and
    must have run for every N met inside CUDA-graph capture.

    The layer cannot be moved or converted (.to(), .cuda(), .half() raise
    or leave it as it is: the plans are for one device and dtype) or trained
    (backward raises INFERENCE_ONLY). Deep copies share the plans.

    Saving: state_dict() holds "weight" (the pruned weight, dense, out × in,
    in the layer's dtype on its device: what nn.Linear holds, so a
    checkpoint loads into the dense model too) and "bias" (float32);
    load_state_dict takes them back, keeping the nonzeros of the weight
    given, and makes the plans again on use. torch.save of the whole module
    pickles the matrix and the options, not the plans."""

    def __init__(self, weight, bias=None, *, mask=None, sparsity=None, threshold=None,
                 activation=None, n_plans="auto", plan_options=None, name=None):
        super().__init__()
        if sum(x is not None for x in (mask, sparsity, threshold)) > 1:
            raise ValueError("SparseLinear: give one of mask, sparsity, threshold")
        if n_plans not in N_PLANS:
            raise ValueError("n_plans: expected one of %s, got %r" % (", ".join(N_PLANS), n_plans))
        if not (activation is None or activation in ACTIVATIONS or callable(activation)):
            raise ValueError("activation: expected None, %s or a callable, got %r"
                             % (", ".join(ACTIVATIONS), activation))
        options = dict(plan_options or {})
        for key in _OWN_OPTIONS:
            if key in options:
                raise ValueError("plan_options: %r is the layer's own (set from the weight, the "
                                 "bias and the activation)" % key)
        if len(tuple(weight.shape)) != 2:
            raise ValueError("SparseLinear: weight must be 2-D (out × in), got shape %s"
                             % (tuple(weight.shape),))
        device = _plan_device(weight.device)
        dtype = _convert._torch_name(weight.dtype)
        if device is None:
            if dtype != "float32":
                raise TypeError("SparseLinear: a %s weight on the cpu; cpu plans take float32 "
                                "(.float() the layer, or move it to a cuda device)" % dtype)
            options.setdefault("strategy", "cpu")
        elif dtype not in _GPU_DTYPES:
            raise TypeError("SparseLinear: a %s weight; plans take float32, float16 or bfloat16"
                            % dtype)
        else:
            options["device"] = device
        if sparsity is not None:
            mask = _magnitude_keep(weight, sparsity)
        pruned = known_as = None
        if device is not None:  # (a dtype of the weight's: the layer's)
            keep = _convert.cuda_keep(_convert._need_numpy("a SparseLinear"), weight.detach(),
                                      threshold, mask)
            pruned, mask, threshold = weight.detach().masked_fill(~keep, 0), keep, None
            if options.get("cache", True):  # its plans found in the cache by its name
                _convert._shape(tuple(weight.shape), "SparseLinear's weight")
                known_as = weights_name(pruned, keep)
        matrix = (None if known_as is not None
                  else Matrix(weight.detach(), mask=mask, threshold=threshold))
        out_features, in_features = tuple(weight.shape)
        if bias is not None:
            if tuple(bias.shape) != (out_features,):
                raise ValueError("SparseLinear: bias must have %d values, got shape %s"
                                 % (out_features, tuple(bias.shape)))
            bias = bias.detach().to(dtype=torch.float32).contiguous()
        self.in_features, self.out_features = in_features, out_features
        self.dtype, self.device = weight.dtype, weight.device
        self.activation = activation
        relu = activation == "relu"
        self._layer = _Layer(matrix, device, dtype, bias is not None, relu, n_plans, options,
                             name, pruned, known_as)
        self.nnz = self._layer.nnz
        self.register_buffer("bias", bias)

    def _pruned_weight(self):
        return self._layer.dense()

    def _pruned_weight_shape(self):
        return (self.out_features, self.in_features)

    def _rebuilt(self, weight):
        old = self._layer
        return _Layer(Matrix(weight), old.device, old.dtype, old.has_bias, old.relu, old.n_plans,
                      old.options, old.name)

    @classmethod
    def from_linear(cls, linear, *, mask=None, sparsity=None, threshold=None, activation=None,
                    n_plans="auto", plan_options=None, name=None):
        """A SparseLinear of an nn.Linear's weight and bias (see the
        class); the Linear is left as it was."""
        if not isinstance(linear, torch.nn.Linear):
            raise TypeError("SparseLinear.from_linear: expected a torch.nn.Linear, got %s"
                            % type(linear).__name__)
        return cls(linear.weight, linear.bias, mask=mask, sparsity=sparsity, threshold=threshold,
                   activation=activation, n_plans=n_plans, plan_options=plan_options, name=name)

    @property
    def sparsity(self):
        return 1.0 - self.nnz / float(self.in_features * self.out_features or 1)

    @property
    def n_plans(self):
        """The policy choosing a call's plan; settable (the plans made so
        far are kept and used where the new policy picks their N)."""
        return self._layer.n_plans

    @n_plans.setter
    def n_plans(self, policy):
        if policy not in N_PLANS:
            raise ValueError("n_plans: expected one of %s, got %r" % (", ".join(N_PLANS), policy))
        self._layer.set_n_plans(policy)

    def forward(self, x):
        if type(x) is torch.Tensor and not _compiling() and not (
                x.requires_grad and torch.is_grad_enabled()):
            # eager: what the op runs, without its dispatch (nor a reshape)
            y = self._layer.run_eager(x, self._buffers["bias"])
        else:
            y = self._traced(x)
        act = self.activation
        if act == "gelu":
            y = torch.nn.functional.gelu(y)
        elif act == "gelu_tanh":
            y = torch.nn.functional.gelu(y, approximate="tanh")
        elif act == "silu":
            y = torch.nn.functional.silu(y)
        elif callable(act):
            y = act(y)
        return y

    def _traced(self, x):
        """forward under torch.compile, for tensor subclasses and where
        autograd records: torch's linear where every plan of the layer is
        dense (compiling only, _all_dense), else the op on X flattened to
        N×K."""
        if x.dim() == 0 or x.shape[-1] != self.in_features:
            raise ValueError("SparseLinear: input of shape %s; the layer takes (..., %d)"
                             % (tuple(x.shape), self.in_features))
        dense = self._layer.traced_dense(self.bias) if _compiling() else None
        if dense is not None:
            y = torch.nn.functional.linear(x, *dense)
            return torch.relu(y) if self._layer.relu else y
        if x.dim() == 2:
            return linear_op(x, self.bias, self._key)
        lead = tuple(x.shape[:-1])
        y = linear_op(x.reshape(-1, self.in_features), self.bias, self._key)
        return y.reshape(lead + (self.out_features,))

    def prepare(self, ns):
        """Make the plans that calls of each N in ns run on (n_plans says
        which); returns plans() of those."""
        rows = sorted({plan_rows(int(n), self._layer.n_plans) for n in ns if int(n) > 0})
        for n in rows:
            self._layer.plan(n)
        self._layer.sources_done()
        if self._layer.dense_ns and self.bias is not None:
            self._layer.hold_dense_bias(self.bias)  # (what a compiled call's trace takes)
        return [p for p in self.plans() if p["n"] in rows]

    def plans(self):
        """The plans made so far, by plan N: strategy, config, kernel_us
        (the plan's measured kernel time), dense_us (the dense candidate's,
        which AUTO times too), gain (dense_us / kernel_us; None where not
        measured: cpu plans, dense=False), plan_s (seconds making it took
        here), from_cache."""
        layer = self._layer
        return [layer.summary(n) for n in sorted(layer.plans)]

    def release_plans(self):
        """Free every plan (made again on use). Not while work queued on them
        may still run, nor while a CUDA graph holds their kernels."""
        self._layer.close()

    def _apply(self, fn, *args, **kwargs):
        probe = torch.empty(0, device=self.device)
        moved = fn(probe)
        if getattr(moved, "device", self.device) != self.device:
            raise RuntimeError("SparseLinear on %s cannot move to %s: its plans are compiled for "
                               "one device; sparsify the model after moving it"
                               % (self.device, moved.device))
        return self  # dtype conversions leave the plans' dtype (and the fp32 bias) as they are

    def extra_repr(self):
        act = self.activation if not callable(self.activation) else getattr(
            self.activation, "__name__", type(self.activation).__name__)
        return ("in_features=%d, out_features=%d, bias=%s, nnz=%d (sparsity %.3f), dtype=%s, "
                "device=%s, activation=%s%s, n_plans=%s, plans for N=%s"
                % (self.in_features, self.out_features, self.bias is not None, self.nnz,
                   self.sparsity, _convert._torch_name(self.dtype), self.device, act,
                   " (fused)" if self._layer.relu else "", self._layer.n_plans,
                   sorted(self._layer.plans) or "[]"))


def _eligible(name, module, min_size, exclude):
    """None if sparsify may swap this Linear, else why not."""
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in exclude):
        return "excluded"
    out_features, in_features = tuple(module.weight.shape)
    if out_features * in_features < min_size:
        return "%d×%d = %d weights < min_size %d" % (out_features, in_features,
                                                      out_features * in_features, min_size)
    kind = getattr(module.weight.device, "type", str(module.weight.device))
    dtype = _convert._torch_name(module.weight.dtype)
    if kind == "cpu" and dtype != "float32":
        return "%s on the cpu: cpu plans take float32" % dtype
    if kind == "cuda" and dtype not in _GPU_DTYPES:
        return "%s weights: plans take float32, float16 or bfloat16" % dtype
    if kind not in ("cpu", "cuda"):
        return "weights on %s" % module.weight.device
    return None


def _linears(model, kind=None):
    """(qualified name, parent, attribute, module, (attribute, module) of
    the next child in an nn.Sequential or None) of every nn.Linear child
    (or child of class kind), depth first in the order the children were
    set. Every attribute naming a module is visited (named_children()
    names a module held twice once); the modules under one are walked
    once."""
    kind = kind or torch.nn.Linear
    found, walked = [], set()

    def walk(parent, prefix):
        walked.add(id(parent))
        children = [(attr, child) for attr, child in parent._modules.items()
                    if child is not None]
        for i, (attr, child) in enumerate(children):
            name = prefix + attr
            if isinstance(child, kind):
                following = None
                if isinstance(parent, torch.nn.Sequential) and i + 1 < len(children):
                    following = children[i + 1]
                found.append((name, parent, attr, child, following))
            elif id(child) not in walked:
                walk(child, name + ".")

    walk(model, "")
    return found


def _zero_outside(linear, mask):
    """linear.weight *= mask (a numpy bool array, or a bool tensor on the
    weight's device), in place."""
    w = linear.weight
    if not isinstance(mask, torch.Tensor):
        mask = torch.from_numpy(mask)
    keep = mask.to(device=w.device, dtype=w.dtype)
    with torch.no_grad():
        w.mul_(keep)


def magnitude_prune(model, sparsity, min_size=1 << 16, exclude=()):
    """Zero, in place, the smallest-magnitude weights of each nn.Linear of
    model that sparsify would swap (the same min_size and exclude), so
    that round((1 - sparsity) · size) remain per layer. Returns the names
    pruned. For a dense reference of what sparsify(model, sparsity) runs."""
    names, done = [], set()
    exclude = (exclude,) if isinstance(exclude, str) else tuple(exclude)
    for name, _, _, linear, _ in _linears(model):
        if id(linear) not in done and _eligible(name, linear, min_size, exclude) is None:
            _zero_outside(linear, _magnitude_keep(linear.weight, sparsity))
            names.append(name)
        done.add(id(linear))
    return names


class SparsifyReport:
    """What sparsify did: swapped (name -> SparseLinear), kept ((name,
    why) of the Linear layers left dense), fused (names whose ReLU went
    into the plan) and residual (sparsify_fused: names whose residual add
    went into the plan). rows() and expected_gain() read the plans made so
    far, so they fill in as calls meet new N; str() is a table of both."""

    def __init__(self, sparsity, min_size):
        self.sparsity, self.min_size = sparsity, min_size
        self.swapped, self.kept, self.fused, self.residual = {}, [], [], []
        self.seconds = 0.0  # sparsify's wall time, plans included

    def rows(self):
        """One dict per swapped layer: name, shape (out, in), nnz, sparsity,
        activation, plans (SparseLinear.plans())."""
        return [{"name": name, "shape": (layer.out_features, layer.in_features),
                 "nnz": layer.nnz, "sparsity": layer.sparsity,
                 "activation": layer.activation if not callable(layer.activation) else "callable",
                 "fused_relu": layer._layer.relu, "plans": layer.plans()}
                for name, layer in self.swapped.items()]

    def expected_gain(self):
        """By plan N: the swapped layers' kernel time summed, sparse
        (kernel_us) and dense (the dense candidate's), over the layers
        where both were measured; gain = dense / sparse; plan_s, the
        seconds making the plans took; layers (measured) of all. The
        Linear layers' time only: the rest of the model is unchanged."""
        out = {}
        for row in self.rows():
            for p in row["plans"]:
                g = out.setdefault(p["n"], {"n": p["n"], "dense_us": 0.0, "sparse_us": 0.0,
                                            "gain": None, "plan_s": 0.0, "layers": 0,
                                            "measured": 0, "strategies": {}})
                g["layers"] += 1
                g["plan_s"] += p["plan_s"] or 0.0
                g["strategies"][p["strategy"]] = g["strategies"].get(p["strategy"], 0) + 1
                if p["gain"] is not None:
                    g["measured"] += 1
                    g["dense_us"] += p["dense_us"]
                    g["sparse_us"] += p["kernel_us"]
        for g in out.values():
            if g["sparse_us"] > 0:
                g["gain"] = g["dense_us"] / g["sparse_us"]
        return [out[n] for n in sorted(out)]

    def to_dict(self):
        return {"sparsity": self.sparsity, "min_size": self.min_size, "layers": self.rows(),
                "kept": [{"name": n, "why": why} for n, why in self.kept],
                "fused_relu": list(self.fused), "fused_residual": list(self.residual),
                "expected_gain": self.expected_gain(), "seconds": self.seconds}

    def __str__(self):
        lines = ["spforge.torch.sparsify: %d Linear layers swapped, %d kept dense "
                 "(sparsity %s, min_size %d) in %.1f s" % (len(self.swapped), len(self.kept),
                                                           self.sparsity, self.min_size,
                                                           self.seconds)]
        for row in self.rows():
            plans = ", ".join("N=%d %s%s" % (p["n"], p["strategy"],
                                             " %.2fx" % p["gain"] if p["gain"] else "")
                              for p in row["plans"]) or "no plans yet"
            lines.append("  %-40s %5d×%-5d nnz %9d (%.2f)%s  %s"
                         % (row["name"], row["shape"][0], row["shape"][1], row["nnz"],
                            row["sparsity"], " +relu fused" if row["fused_relu"] else "", plans))
        for name, why in self.kept:
            lines.append("  kept %-35s %s" % (name, why))
        for g in self.expected_gain():
            if g["gain"] is None:
                lines.append("  N=%d: %d plans (%s), made in %.2f s; no dense time measured "
                             "(cpu plans, or dense=False): gain unknown"
                             % (g["n"], g["layers"], _strategies(g), g["plan_s"]))
            else:
                lines.append("  N=%d: Linear layers %.1f us dense -> %.1f us sparse: %.2fx over "
                             "%d of %d layers measured (%s), plans made in %.2f s"
                             % (g["n"], g["dense_us"], g["sparse_us"], g["gain"], g["measured"],
                                g["layers"], _strategies(g), g["plan_s"]))
        return "\n".join(lines)


def _strategies(g):
    return ", ".join("%d %s" % (count, s) for s, count in sorted(g["strategies"].items()))


class _ProgressBar:
    """One line on stream, rewritten in place: the layer being planned of
    all, the time spent and, from the pace of those done, the time left."""

    def __init__(self, total, stream):
        self.total, self.stream, self.done, self.t0 = total, stream, 0, time.perf_counter()

    def step(self, name):
        spent = time.perf_counter() - self.t0
        left = ("about %.0f s left" % (spent / self.done * (self.total - self.done))
                if self.done else "")
        self.done += 1
        self.stream.write("\rsparsify: layer %d/%d, %.0f s, %s (%s)\x1b[K"
                          % (self.done, self.total, spent, left, name[-40:]))
        self.stream.flush()

    def close(self):
        if self.done:
            self.stream.write("\n")
            self.stream.flush()


def _progress_stream(progress):
    """Where sparsify's bar goes: progress True: stderr; "auto": stderr
    when it is a terminal; False: nowhere."""
    if progress == "auto":
        isatty = getattr(sys.stderr, "isatty", None)
        return sys.stderr if isatty is not None and isatty() else None
    if not isinstance(progress, bool):
        raise TypeError("progress: True, False or \"auto\", got %r" % (progress,))
    return sys.stderr if progress else None


def sparsify(model, sparsity=None, min_size=1 << 16, *, exclude=(), ns=(), fuse_relu=True,
             min_gain=None, n_plans="auto", plan_options=None, convs=True, progress="auto"):
    """Swap, in place, each nn.Linear of model with out·in >= min_size
    weights (and a name matching none of the fnmatch patterns of exclude)
    for a SparseLinear: its weights pruned by magnitude to sparsity, or,
    with sparsity None, its nonzeros. Sparsify after moving and converting
    the model (.to(device, dtype)): cpu layers need float32. In an
    nn.Sequential a Linear followed by an nn.ReLU gets the ReLU fused
    (fuse_relu) and the ReLU becomes nn.Identity. ns: make the plans of
    these N now (a plan per layer and N: 0.1-1 s each, less from the plan
    cache), so that the report has their gains and CUDA graphs can be
    captured; then, with min_gain, a layer whose plans all measured a gain
    below min_gain stays an nn.Linear (with its weights pruned). A Linear
    held in several places is swapped once.
    convs: the nn.Conv2d layers on cuda devices are swapped too, for
    SparseConv2d (_torch_conv.py; those it does not take are kept, with
    why), by the same sparsity, min_size and exclude; their plans are made
    per input shape on first call (ns and min_gain are the Linear layers'),
    and a shape where torch's conv measured faster runs it.
    progress: with ns, a one-line bar of the layers planned and the time
    left on stderr (True), none (False), or on stderr when it is a
    terminal ("auto"). Returns a SparsifyReport (its seconds: the time
    sparsify took)."""
    t0 = time.perf_counter()
    stream = _progress_stream(progress)
    if isinstance(model, torch.nn.Linear):
        raise TypeError("sparsify swaps the Linear layers inside a module; for a Linear itself "
                        "use SparseLinear.from_linear")
    exclude = (exclude,) if isinstance(exclude, str) else tuple(exclude)
    if sparsity is not None:  # checked here too, for a model with no layer to swap
        _check_sparsity(sparsity)
    if min_gain is not None and not ns:
        raise ValueError("min_gain needs ns: the gain is measured when the plans are made")
    report = SparsifyReport(sparsity, min_size)
    done = {}  # id(linear) -> its SparseLinear, or the reason it stays
    linears = list(_linears(model))
    bar = _ProgressBar(len({id(x[3]) for x in linears}), stream) if ns and stream else None
    try:
        _swap_linears(linears, report, done, bar, sparsity, min_size, exclude, ns, fuse_relu,
                      min_gain, n_plans, plan_options)
    finally:
        if bar is not None:
            bar.close()
    if convs and getattr(torch.nn, "Conv2d", None) is not None:
        _sparsify_convs(model, sparsity, min_size, exclude, plan_options, report)
    report.seconds = time.perf_counter() - t0
    return report


def _swap_linears(linears, report, done, bar, sparsity, min_size, exclude, ns, fuse_relu,
                  min_gain, n_plans, plan_options):
    """sparsify's part for nn.Linear (its arguments; bar: a _ProgressBar
    stepped per layer, or None)."""
    for name, parent, attr, linear, following in linears:
        if id(linear) in done:
            swapped = done[id(linear)]
            if isinstance(swapped, SparseLinear):
                setattr(parent, attr, swapped)
            continue
        if bar is not None:
            bar.step(name)
        why = _eligible(name, linear, min_size, exclude)
        if why is not None:
            report.kept.append((name, why))
            done[id(linear)] = why
            continue
        fuse = (fuse_relu and following is not None
                and type(following[1]) is torch.nn.ReLU)
        mask = None if sparsity is None else _magnitude_keep(linear.weight, sparsity)
        layer = SparseLinear(linear.weight, linear.bias, mask=mask,
                             activation="relu" if fuse else None, n_plans=n_plans,
                             plan_options=plan_options, name=name)
        if ns:
            plans = layer.prepare(ns)
            gains = [p["gain"] for p in plans]
            if (min_gain is not None and gains and all(g is not None for g in gains)
                    and max(gains) < min_gain):
                layer.release_plans()
                if mask is not None:
                    _zero_outside(linear, mask)
                why = "expected gain %.2fx < min_gain %.2f (weights pruned, kept dense)" % (
                    max(gains), min_gain)
                report.kept.append((name, why))
                done[id(linear)] = why
                continue
        setattr(parent, attr, layer)
        if fuse:
            setattr(parent, following[0], torch.nn.Identity())
            report.fused.append(name)
        report.swapped[name] = layer
        done[id(linear)] = layer


def _sparsify_convs(model, sparsity, min_size, exclude, plan_options, report):
    """sparsify's part for nn.Conv2d: each one SparseConv2d takes (and
    min_size, exclude allow) swapped, its plans made on first call."""
    from ._torch_conv import SparseConv2d, conv_unsupported
    done = {}
    for name, parent, attr, conv, _ in _linears(model, torch.nn.Conv2d):
        if id(conv) in done:
            if isinstance(done[id(conv)], SparseConv2d):
                setattr(parent, attr, done[id(conv)])
            continue
        size = conv.weight.numel()
        why = ("excluded" if any(fnmatch.fnmatchcase(name, p) for p in exclude)
               else "%d weights < min_size %d" % (size, min_size) if size < min_size
               else conv_unsupported(conv))
        if why is not None:
            report.kept.append((name, why))
            done[id(conv)] = why
            continue
        mask = None if sparsity is None else _magnitude_keep(conv.weight, sparsity)
        options = {k: v for k, v in (plan_options or {}).items()
                   if k in ("strategy", "verify", "cache", "dense", "math")}
        layer = SparseConv2d.from_conv(conv, mask=mask, plan_options=options, name=name)
        setattr(parent, attr, layer)
        report.swapped[name] = layer
        done[id(conv)] = layer
