"""spforge.torch.SparseConv2d (issue 14): a pruned nn.Conv2d run by
spforge's conv plans (spforge.h, spf_conv_plan) on a cuda device, for
inference. Inputs are NCHW tensors of any memory format; the plans run
channels_last (NHWC: one SpMM launch for the batch) and the output is a
channels_last tensor, as torch's own conv gives for a channels_last input.

A plan is made per input shape (N, H, W) on first use. It is then timed
against torch's conv2d (cuDNN) on the same pruned weight, both by the
GPU's time (replays of a CUDA graph of their calls), and the faster of the
two is what that shape runs from then on: a swapped layer is never slower
than the dense convolution it replaced, by measurement (as SparseLinear's
dense plans run torch's linear; _torch.py). The weights'
columns are torch's (c, r, s) order, conv.weight.reshape(K, -1)."""

import ctypes
import threading
import time

import torch

from . import Error, Matrix, _Handle, _capi, _check, _convert, _error, _named
from ._timing import graph_time_us
from ._capi import lib
from ._torch import (_GPU_DTYPES, _KEYS, _LAYERS, PrunedState, _capturing, _compiling, _layer,
                     _magnitude_keep, _no_backward, _plan_device, dense_of)

_NHWC = 1  # spf_conv_layout
_PLAN_OPTIONS = ("strategy", "verify", "cache", "dense", "math")


def _pair(value, what):
    """An int, or a pair of equal ints, as one int (the plans take one
    stride and one padding for both axes)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2 or value[0] != value[1]:
            raise ValueError("SparseConv2d: %s %s; the plans take the same on both axes"
                             % (what, tuple(value)))
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("SparseConv2d: %s %r; expected an int >= 0 (or a pair of them)"
                         % (what, value))
    return value


class _ConvPlans:
    """The plans of one SparseConv2d by input shape (N, H, W), and the
    pruned weight as a dense channels_last tensor for the shapes where
    torch's conv measured faster. Shared by deep copies."""

    def __init__(self, matrix, dense_weight, geometry, device, dtype, has_bias, relu, residual,
                 options, name):
        self.matrix, self.dense_weight = matrix, dense_weight
        self.k, self.c, self.r, self.s, self.stride, self.padding = geometry
        self.device, self.dtype, self.has_bias, self.relu = device, dtype, has_bias, relu
        self.residual = residual
        self.options, self.name = options, name
        self.plans = {}  # (n, h, w) -> dict: handle (or None), dense, times, path, strategy
        self.lock = threading.Lock()
        self.key = next(_KEYS)
        _LAYERS[self.key] = self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        """Pickled as what makes it (the Matrix as its CSR arrays, the pruned
        dense weight, the geometry, the options); the plans are made again
        on use."""
        return (_ConvPlans, (self.matrix, self.dense_weight,
                             (self.k, self.c, self.r, self.s, self.stride, self.padding),
                             self.device, self.dtype, self.has_bias, self.relu, self.residual,
                             self.options, self.name))

    def out_hw(self, h, w):
        return ((h + 2 * self.padding - self.r) // self.stride + 1,
                (w + 2 * self.padding - self.s) // self.stride + 1)

    def _create(self, n, h, w):
        desc = _capi.ConvDesc()
        lib().spf_conv_desc_init(ctypes.byref(desc))
        desc.batch, desc.channels, desc.height, desc.width = n, self.c, h, w
        desc.kernel_h, desc.kernel_w = self.r, self.s
        desc.stride, desc.padding, desc.layout = self.stride, self.padding, _NHWC
        desc.residual = int(self.residual)
        o = _capi.PlanOptions()
        lib().spf_plan_options_init(ctypes.byref(o))
        o.dtype = _named("dtype", _convert.dtype_name(self.dtype))
        o.bias, o.relu, o.device = int(self.has_bias), int(self.relu), self.device
        o.strategy = _named("strategy", self.options.get("strategy", "auto"))
        o.math = _named("math", self.options.get("math", "default"))
        for flag in ("verify", "cache", "dense"):
            setattr(o, flag, int(bool(self.options.get(flag, True))))
        handle = ctypes.c_void_p()
        with self.matrix._use() as ptr:
            status = lib().spf_conv_plan_create(ptr, ctypes.byref(desc), ctypes.byref(o),
                                                ctypes.byref(handle))
        try:
            _check(status)
        except Error as e:
            raise _error(e.status, e.name,
                         "layer %s (%d×%d×%d×%d, nnz %d), input %d×%d×%d×%d: %s"
                         % (self.name or "?", self.k, self.c, self.r, self.s, self.matrix.nnz, n,
                            self.c, h, w, e.detail)) from None
        info = _capi.ConvInfo()
        info.size = ctypes.sizeof(info)
        info.spmm.size = ctypes.sizeof(info.spmm)
        status = lib().spf_conv_plan_get_info(handle, ctypes.byref(info))
        if status:
            lib().spf_conv_plan_free(handle)
            _check(status)
        return _Handle(handle, lib().spf_conv_plan_free, "conv plan"), {"path": lib().spf_conv_path_name(info.path).decode(),
                        "strategy": lib().spf_strategy_name(info.spmm.strategy).decode(),
                        "kernel": info.spmm.kernel_name.decode("utf-8", "replace")}

    def plan(self, n, h, w):
        """The entry of input shape (n, h, w), made and timed now if there is none."""
        entry = self.plans.get((n, h, w))
        if entry is not None:
            return entry
        with self.lock:
            entry = self.plans.get((n, h, w))
            if entry is not None:
                return entry
            if _capturing(self.device):
                raise RuntimeError(
                    "spforge.torch: layer %s has no plan for input %d×%d×%d×%d and a CUDA graph "
                    "is being captured; making a plan compiles and synchronizes. Run the model "
                    "once with this shape before capturing" % (self.name or "?", n, self.c, h, w))
            start = time.perf_counter()
            handle, entry = self._create(n, h, w)
            entry["handle"] = handle
            try:  # both ways on one random input: the faster runs this shape
                dt = getattr(torch, self.dtype)
                where = torch.device("cuda", self.device)
                x = (torch.rand((n, self.c, h, w), device=where) * 2 - 1).to(dt).contiguous(
                    memory_format=torch.channels_last)
                bias = torch.rand(self.k, device=where) if self.has_bias else None
                y = self._output(x)
                skip = (torch.rand_like(y) * 2 - 1) if self.residual else None
                entry["sparse_us"] = graph_time_us(
                    lambda: self._execute(handle, x, y, bias, skip), rounds=5, repeats=20)
                dense_bias = None if bias is None else bias.to(dt)
                entry["dense_us"] = graph_time_us(lambda: self._dense(x, dense_bias, skip),
                                                  rounds=5, repeats=20)
            except BaseException:
                handle.release()
                raise
            entry["dense"] = entry["dense_us"] < entry["sparse_us"]
            entry["plan_s"] = time.perf_counter() - start
            self.plans[(n, h, w)] = entry
            return entry

    def _output(self, x):
        p, q = self.out_hw(x.shape[2], x.shape[3])
        return torch.empty((x.shape[0], self.k, p, q), dtype=x.dtype, device=x.device,
                           memory_format=torch.channels_last)

    def _execute(self, handle, x, y, bias, residual):
        stream = torch.cuda.current_stream(x.device).cuda_stream
        with handle as ptr:  # a release_plans() on another thread waits for the call
            _check(lib().spf_conv_plan_execute(ptr, x.data_ptr(), y.data_ptr(),
                                               None if bias is None else bias.data_ptr(),
                                               None if residual is None else residual.data_ptr(),
                                               stream or None))

    def _dense(self, x, bias, residual):
        y = torch.nn.functional.conv2d(x, self.dense_weight, bias, self.stride, self.padding)
        if residual is not None:
            y.add_(residual)
        return torch.relu_(y) if self.relu else y

    def _residual(self, x, residual):
        """residual checked against the output of x, as a channels_last tensor."""
        if (residual is not None) != self.residual:
            raise ValueError("spforge::conv2d: residual %s, the layer was made %s one"
                             % ("given" if residual is not None else "missing",
                                "with" if self.residual else "without"))
        if residual is None:
            return None
        p, q = self.out_hw(x.shape[2], x.shape[3])
        want = (x.shape[0], self.k, p, q)
        if tuple(residual.shape) != want or residual.dtype != x.dtype or \
                residual.device != x.device:
            raise ValueError("spforge::conv2d: residual of shape %s, %s on %s; expected %s, %s "
                             "on %s (the output's)" % (tuple(residual.shape), residual.dtype,
                                                       residual.device, want, x.dtype, x.device))
        return residual.contiguous(memory_format=torch.channels_last)

    def run(self, x, bias, residual=None):
        """The convolution of an N×C×H×W x (+ residual, output-shaped, before
        the ReLU): a new channels_last tensor."""
        if x.dim() != 4 or x.shape[1] != self.c:
            raise ValueError("spforge::conv2d: x must be N×%d×H×W, got shape %s"
                             % (self.c, tuple(x.shape)))
        if _convert._torch_name(x.dtype) != self.dtype:
            raise TypeError("spforge::conv2d: x of %s, the layer's plans take %s"
                            % (x.dtype, self.dtype))
        if x.device != torch.device("cuda", self.device):
            raise ValueError("spforge::conv2d: x on %s, the layer's plans run on cuda:%d"
                             % (x.device, self.device))
        if (bias is not None) != self.has_bias:
            raise ValueError("spforge::conv2d: bias %s, the layer was made %s one"
                             % ("given" if bias is not None else "missing",
                                "with" if self.has_bias else "without"))
        residual = self._residual(x, residual)
        n, _, h, w = x.shape
        if n == 0:
            return self._output(x)
        entry = self.plan(n, h, w)
        x = x.contiguous(memory_format=torch.channels_last)
        if entry["dense"]:
            return self._dense(x, None if bias is None else bias.to(x.dtype), residual)
        # the plans' vector loads (and the dense path's cuDNN plan) take 16-byte
        # aligned tensors; a view off an odd offset is copied
        if x.data_ptr() % 16:
            x = x.clone(memory_format=torch.channels_last)
        if residual is not None and residual.data_ptr() % 16:
            residual = residual.clone(memory_format=torch.channels_last)
        y = self._output(x)
        self._execute(entry["handle"], x, y, bias, residual)
        return y

    def close(self):
        plans, self.plans = self.plans, {}
        for entry in plans.values():
            entry["handle"].release()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass


def _pruned(weight, mask, threshold):
    """The K × C·R·S Matrix of weight's kept entries (mask, threshold or the
    nonzeros) and the same as a dense K × C × R × S tensor of weight's
    dtype on its device, channels_last: exactly the matrix's entries."""
    k = int(weight.shape[0])
    if isinstance(mask, torch.Tensor):  # a device mask stays there (_magnitude_keep)
        mask = mask.reshape(k, -1)
    elif mask is not None:
        mask = _convert._host_numpy(mask, "mask").reshape(k, -1)
    matrix = Matrix(weight.detach().reshape(k, -1), mask=mask, threshold=threshold)
    dense = dense_of(matrix, weight.dtype, weight.device).reshape(tuple(weight.shape))
    return matrix, dense.contiguous(memory_format=torch.channels_last)


def _conv_plans(key):
    return _layer(key, _ConvPlans, "spforge::conv2d", "SparseConv2d")


@torch.library.custom_op("spforge::conv2d", mutates_args=(),
                         schema="(Tensor x, Tensor? bias, Tensor? residual, int key) -> Tensor")
def conv2d_op(x, bias, residual, key):
    """The convolution (+ bias) (+ residual) (ReLU if fused) with the plans
    of layer key."""
    return _conv_plans(key).run(x, bias, residual)


@conv2d_op.register_fake
def _conv2d_fake(x, bias, residual, key):
    layer = _conv_plans(key)
    p, q = layer.out_hw(x.shape[2], x.shape[3])
    return x.new_empty((x.shape[0], layer.k, p, q)).contiguous(memory_format=torch.channels_last)


conv2d_op.register_autograd(_no_backward)


class SparseConv2d(PrunedState, torch.nn.Module):
    """A 2-D convolution with a sparse weight, for inference on a cuda device.

    SparseConv2d(weight, bias=None, *, stride=1, padding=0, mask=None,
    sparsity=None, threshold=None, activation=None, residual=False,
    plan_options=None, name=None) takes the weight (K × C × R × S; float32, float16 or
    bfloat16, on a cuda device) and keeps its entries where mask (the
    weight's shape) is nonzero, or the round((1 - sparsity) · size) of
    largest magnitude, or those with |w| > threshold, or its nonzeros.
    stride and padding: an int, or a pair of equal ints (zero padding);
    dilation 1 and groups 1. bias: K values, kept as float32. activation:
    None or "relu" (fused into the plans). residual: forward(x, residual)
    then adds an output-shaped tensor before the ReLU (a bottleneck's skip
    connection; the plans' window kernel adds it in its epilogue).
    plan_options: strategy, math, verify, cache, dense of the plans.

    in_features and out_features are the weight matrix's sides (C·R·S and
    K), for sparsify's report. plans() lists the shapes met so far with
    the times of both ways and which one runs. The layer cannot be moved
    or trained (backward raises INFERENCE_ONLY). state_dict() holds
    "weight" (the pruned weight, dense, as nn.Conv2d holds it) and "bias"
    (float32); load_state_dict takes them back (the nonzeros of the weight
    given) and makes the plans again on use; torch.save of the module
    pickles the matrix, not the plans."""

    def __init__(self, weight, bias=None, *, stride=1, padding=0, mask=None, sparsity=None,
                 threshold=None, activation=None, residual=False, plan_options=None, name=None):
        super().__init__()
        if sum(x is not None for x in (mask, sparsity, threshold)) > 1:
            raise ValueError("SparseConv2d: give one of mask, sparsity, threshold")
        if activation not in (None, "relu"):
            raise ValueError("SparseConv2d: activation None or \"relu\", got %r" % (activation,))
        options = dict(plan_options or {})
        unknown = sorted(set(options) - set(_PLAN_OPTIONS))
        if unknown:
            raise ValueError("plan_options: %s not taken by conv plans (%s are)"
                             % (", ".join(unknown), ", ".join(_PLAN_OPTIONS)))
        if len(tuple(weight.shape)) != 4:
            raise ValueError("SparseConv2d: weight must be 4-D (K × C × R × S), got shape %s"
                             % (tuple(weight.shape),))
        device = _plan_device(weight.device)
        dtype = _convert._torch_name(weight.dtype)
        if device is None:
            raise ValueError("SparseConv2d: weights on the cpu; conv plans run on cuda devices")
        if dtype not in _GPU_DTYPES:
            raise TypeError("SparseConv2d: a %s weight; plans take float32, float16 or bfloat16"
                            % dtype)
        k, c, r, s = (int(x) for x in weight.shape)
        stride, padding = _pair(stride, "stride"), _pair(padding, "padding")
        if stride < 1:
            raise ValueError("SparseConv2d: stride 0")
        if sparsity is not None:
            mask = _magnitude_keep(weight, sparsity)
        matrix, dense = _pruned(weight, mask, threshold)
        if bias is not None:
            if tuple(bias.shape) != (k,):
                raise ValueError("SparseConv2d: bias must have %d values, got shape %s"
                                 % (k, tuple(bias.shape)))
            bias = bias.detach().to(device=weight.device, dtype=torch.float32).contiguous()
        self.in_features, self.out_features = c * r * s, k
        self.kernel_size, self.stride, self.padding = (r, s), stride, padding
        self.nnz, self.dtype, self.device = matrix.nnz, weight.dtype, weight.device
        self.activation, self.residual = activation, bool(residual)
        self._layer = _ConvPlans(matrix, dense, (k, c, r, s, stride, padding), device, dtype,
                                 bias is not None, activation == "relu", self.residual, options,
                                 name)
        self.register_buffer("bias", bias)

    def _pruned_weight(self):
        return self._layer.dense_weight.contiguous()

    def _pruned_weight_shape(self):
        return self._layer.dense_weight.shape

    def _rebuilt(self, weight):
        old = self._layer
        matrix, dense = _pruned(weight, None, None)
        return _ConvPlans(matrix, dense, (old.k, old.c, old.r, old.s, old.stride, old.padding),
                          old.device, old.dtype, old.has_bias, old.relu, old.residual,
                          old.options, old.name)

    @classmethod
    def from_conv(cls, conv, *, mask=None, sparsity=None, threshold=None, activation=None,
                  residual=False, plan_options=None, name=None):
        """A SparseConv2d of an nn.Conv2d's weight, bias, stride and padding
        (see the class); the Conv2d is left as it was. ValueError for what
        the plans do not take: groups, dilation, padding other than zeros
        of one int, a stride that differs between the axes."""
        why = conv_unsupported(conv)
        if why is not None:
            raise ValueError("SparseConv2d.from_conv: %s" % why)
        return cls(conv.weight, conv.bias, stride=conv.stride, padding=conv.padding, mask=mask,
                   sparsity=sparsity, threshold=threshold, activation=activation,
                   residual=residual, plan_options=plan_options, name=name)

    @property
    def sparsity(self):
        return 1.0 - self.nnz / float(self.in_features * self.out_features or 1)

    def forward(self, x, residual=None):
        if x.dtype != self.dtype:
            raise TypeError("SparseConv2d: input of %s; the layer's plans take %s"
                            % (x.dtype, self.dtype))
        if type(x) is torch.Tensor and not _compiling() and not (
                x.requires_grad and torch.is_grad_enabled()):
            return self._layer.run(x, self.bias, residual)  # eager: what the op runs
        return conv2d_op(x, self.bias, residual, self._key)

    def plans(self):
        """The input shapes met so far: n (the batch), h, w, path and
        strategy of the spforge plan, sparse_us and dense_us (its time and
        torch conv2d's, measured when the plan was made), runs ("spforge"
        or "torch": the faster), kernel_us (that one's time), gain
        (dense_us / kernel_us, ≥ 1), plan_s."""
        out = []
        for (n, h, w), e in sorted(self._layer.plans.items()):
            kernel = min(e["sparse_us"], e["dense_us"])
            out.append({"n": n, "h": h, "w": w, "path": e["path"], "strategy": e["strategy"],
                        "config": e["kernel"], "sparse_us": e["sparse_us"],
                        "dense_us": e["dense_us"], "runs": "torch" if e["dense"] else "spforge",
                        "kernel_us": kernel, "gain": e["dense_us"] / kernel,
                        "plan_s": e["plan_s"], "from_cache": False})
        return out

    def release_plans(self):
        """Free every plan (made again on use). Not while work queued on them
        may still run."""
        self._layer.close()

    def _apply(self, fn, *args, **kwargs):
        moved = fn(torch.empty(0, device=self.device))
        if getattr(moved, "device", self.device) != self.device:
            raise RuntimeError("SparseConv2d on %s cannot move to %s: its plans are compiled "
                               "for one device" % (self.device, moved.device))
        return self

    def extra_repr(self):
        return ("%d, %d, kernel_size=%s, stride=%d, padding=%d, bias=%s, nnz=%d (sparsity "
                "%.3f), dtype=%s, device=%s, activation=%s, residual=%s"
                % (self.in_features // (self.kernel_size[0] * self.kernel_size[1]),
                   self.out_features, self.kernel_size, self.stride, self.padding,
                   self.bias is not None, self.nnz, self.sparsity,
                   _convert._torch_name(self.dtype), self.device, self.activation,
                   self.residual))


def conv_unsupported(conv):
    """None if SparseConv2d takes this nn.Conv2d, else why not."""
    if not isinstance(conv, torch.nn.Conv2d):
        return "expected a torch.nn.Conv2d, got %s" % type(conv).__name__
    if conv.groups != 1:
        return "groups %d (the plans take 1)" % conv.groups
    if tuple(conv.dilation) != (1, 1):
        return "dilation %s (the plans take 1)" % (tuple(conv.dilation),)
    if conv.padding_mode != "zeros":
        return "padding_mode %r (the plans pad with zeros)" % conv.padding_mode
    if isinstance(conv.padding, str) or conv.padding[0] != conv.padding[1]:
        return "padding %r (the plans take one int for both axes)" % (conv.padding,)
    if conv.stride[0] != conv.stride[1]:
        return "stride %s (the plans take one for both axes)" % (tuple(conv.stride),)
    if getattr(conv.weight.device, "type", "") != "cuda":
        return "weights on %s (conv plans run on cuda devices)" % conv.weight.device
    if _convert._torch_name(conv.weight.dtype) not in _GPU_DTYPES:
        return "%s weights (plans take float32, float16 or bfloat16)" % conv.weight.dtype
    return None
