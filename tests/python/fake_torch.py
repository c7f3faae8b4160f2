"""A minimal stand-in for torch, for testing the binding's torch adapter
where torch is not installed (CI: the CPU build of torch is not on PyPI;
the CUDA one brings gigabytes of CUDA wheels). It offers exactly what the
binding reads of a tensor — data_ptr(), stride(), shape, dtype, device,
layout, element_size(); detach(), cpu(), float(), numpy(); crow_indices(),
col_indices(), values(), indices(), _indices(), _values(), is_coalesced()
— and what it calls on the module (empty, the dtypes,
cuda.current_stream), plus what the tests call (tensor, T, slicing,
to_sparse_csr, to_sparse), with torch's names and behaviour.

For spforge.torch (tests/python/test_torch.py, which installs this module
as sys.modules["torch"]) it offers what python/spforge/_torch.py calls —
nn.Module (children, buffers, named_modules, setattr swapping a child),
nn.Linear, nn.Sequential, nn.ReLU / GELU / Identity, nn.functional (pad,
relu, gelu, silu), library.custom_op (a plain call: register_fake and
register_autograd keep what they are given), from_numpy, no_grad, and the
tensor methods reshape, contiguous, is_contiguous, clone, new_empty, to,
mul_ — and nothing of autograd, tracing or graphs: those are tested on
the real torch (test_torch.py without the fake, test_torch_gpu.py).

Tensors hold a numpy array. A "cuda" tensor's data stays in host memory:
the tests check conversions and pointers, and never run a kernel on one.
bfloat16 tensors hold the upper 16 bits of float32 (rounded to nearest
even), as torch stores them."""

import contextlib
import math

import numpy


class dtype:
    def __init__(self, name, storage):
        self.name, self.storage = name, numpy.dtype(storage)
        self.itemsize = self.storage.itemsize
        self.is_floating_point = name.startswith(("float", "bfloat"))
        self.is_complex = name.startswith("complex")

    def __repr__(self):
        return "torch." + self.name

    __str__ = __repr__

    def __deepcopy__(self, memo):  # one object per dtype, as torch has
        return self


float16, bfloat16 = dtype("float16", numpy.float16), dtype("bfloat16", numpy.uint16)
float32, float64 = dtype("float32", numpy.float32), dtype("float64", numpy.float64)
int32, int64, bool = dtype("int32", numpy.int32), dtype("int64", numpy.int64), dtype("bool", "?")
half = float16
_BY_NAME = {d.name: d for d in (float16, bfloat16, float32, float64, int32, int64, bool)}


class device:
    def __init__(self, spec, index=None):
        if isinstance(spec, device):
            spec, index = spec.type, spec.index
        kind, _, number = str(spec).partition(":")
        self.type = kind
        self.index = int(number) if number else index
        if kind == "cuda" and self.index is None:
            self.index = 0

    def __repr__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)

    __str__ = __repr__

    def __eq__(self, other):
        other = device(other)
        return (self.type, self.index) == (other.type, other.index)

    def __hash__(self):  # (torch.device is hashable)
        return hash((self.type, self.index))


class layout:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name

    __str__ = __repr__

    def __deepcopy__(self, memo):
        return self


strided, sparse_csr, sparse_coo = layout("strided"), layout("sparse_csr"), layout("sparse_coo")


def _to_bf16_bits(values):
    bits = numpy.asarray(values, numpy.float32).view(numpy.uint32).astype(numpy.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
    return bits.astype(numpy.uint16)


def _storage(values, dt):
    values = numpy.asarray(values)
    if dt is bfloat16:
        return _to_bf16_bits(values) if values.dtype != numpy.uint16 else values
    return values.astype(dt.storage)


class Tensor:
    def __init__(self, data, dt, dev="cpu", lay=strided, parts=None, shape=None, coalesced=False):
        self._data, self.dtype, self.device, self.layout = data, dt, device(dev), lay
        self._parts, self._shape, self._coalesced = parts, shape, coalesced
        self.requires_grad = False

    # what the binding reads
    @property
    def shape(self):
        return tuple(self._data.shape) if self._shape is None else self._shape

    def stride(self):
        if self.layout is not strided:
            raise RuntimeError("sparse tensors do not have strides")
        return tuple(s // self._data.itemsize for s in self._data.strides)

    def data_ptr(self):
        return self._data.ctypes.data

    def element_size(self):
        return self.dtype.itemsize

    def get_device(self):
        return -1 if self.device.type == "cpu" else self.device.index or 0

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    def dim(self):
        return len(self.shape)

    def detach(self):
        return self

    def cpu(self):
        parts = None if self._parts is None else {k: v.cpu() for k, v in self._parts.items()}
        return Tensor(self._data, self.dtype, "cpu", self.layout, parts, self._shape,
                      self._coalesced)

    def float(self):
        if self.dtype is bfloat16:
            data = (self._data.astype(numpy.uint32) << 16).view(numpy.float32)
        else:
            data = self._data.astype(numpy.float32)
        return Tensor(data, float32, self.device)

    def numpy(self):
        if self.device.type != "cpu":
            raise TypeError("can't convert cuda:%d device type tensor to numpy" % self.device.index)
        if self.dtype is bfloat16:
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._data

    def crow_indices(self):
        return self._parts["crow"]

    def col_indices(self):
        return self._parts["col"]

    def values(self):
        if self.layout is sparse_coo and not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor")
        return self._parts["values"]

    def indices(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor")
        return self._parts["indices"]

    def _indices(self):
        return self._parts["indices"]

    def _values(self):
        return self._parts["values"]

    def is_coalesced(self):
        return self._coalesced

    # what the tests use
    @property
    def T(self):
        return Tensor(self._data.T, self.dtype, self.device)

    def __getitem__(self, index):
        if isinstance(index, Tensor):  # a bool mask: the kept elements, row-major
            index = index._data
        data = self._data[index]
        return Tensor(data, self.dtype if data.dtype == self._data.dtype
                      else _BY_NAME[data.dtype.name], self.device)

    # elementwise, as spforge's selection of a device matrix's entries uses them
    def abs(self):
        return Tensor(numpy.abs(self._elements()), self.dtype if self.dtype is not bfloat16
                      else float32, self.device)

    def _compare(self, other, op):
        other = other._elements() if isinstance(other, Tensor) else other
        return Tensor(op(self._elements(), other), bool, self.device)

    def __ne__(self, other):
        return self._compare(other, numpy.not_equal)

    def __le__(self, other):
        return self._compare(other, numpy.less_equal)

    def __invert__(self):
        return Tensor(~self._data, self.dtype, self.device)

    def sum(self, dim=None):
        return Tensor(numpy.asarray(self._data.sum(axis=dim), numpy.int64), int64, self.device)

    def to_sparse_csr(self):
        keep = self._data != 0
        rows, cols = numpy.nonzero(keep)
        crow = numpy.concatenate([[0], numpy.cumsum(numpy.bincount(rows,
                                                                   minlength=self.shape[0]))])
        parts = {"crow": Tensor(crow.astype(numpy.int64), int64, self.device),
                 "col": Tensor(cols.astype(numpy.int64), int64, self.device),
                 "values": Tensor(self._data[keep], self.dtype, self.device)}
        return Tensor(self._data, self.dtype, self.device, sparse_csr, parts)

    def to_sparse(self):
        keep = self._data != 0
        parts = {"indices": Tensor(numpy.array(numpy.nonzero(keep), numpy.int64), int64,
                                   self.device),
                 "values": Tensor(self._data[keep], self.dtype, self.device)}
        return Tensor(self._data, self.dtype, self.device, sparse_coo, parts, coalesced=True)

    # what spforge.torch uses (dense, strided tensors only)
    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        return Tensor(self._data.reshape(shape), self.dtype, self.device)

    def is_contiguous(self):
        return self._data.flags.c_contiguous  # (bool is torch.bool here)

    def contiguous(self):
        return Tensor(numpy.ascontiguousarray(self._data), self.dtype, self.device)

    def clone(self, memory_format=None):
        return Tensor(numpy.array(self._data, order="C"), self.dtype, self.device)

    def new_empty(self, shape):
        return empty(shape, dtype=self.dtype, device=self.device)

    def __mod__(self, other):
        return Tensor(self._data % other, self.dtype, self.device)

    def masked_fill(self, mask, value):
        data = numpy.array(self._data, order="C")
        data[mask._data] = _storage(numpy.asarray(value, numpy.float32), self.dtype)
        return Tensor(data, self.dtype, self.device)

    def to(self, device=None, dtype=None, non_blocking=False):
        dt = dtype or self.dtype
        data = self._data if dt is self.dtype else _storage(self._elements(), dt)
        return Tensor(numpy.array(data, order="C"), dt, self.device if device is None else device)

    def mul_(self, other):
        self._data[...] = _storage(self._elements() * other._elements(), self.dtype)
        return self

    def _elements(self):
        """The elements as float32 (bfloat16 widened) or their own type."""
        return self.float()._data if self.dtype is bfloat16 else self._data

    def __repr__(self):
        return "fake_torch.Tensor(shape=%s, dtype=%s, device=%s)" % (self.shape, self.dtype,
                                                                      self.device)


def tensor(data, dtype=None, device="cpu"):
    data = numpy.asarray(data)
    dt = dtype or _BY_NAME.get(data.dtype.name, float32)
    return Tensor(numpy.ascontiguousarray(_storage(data, dt)), dt, device)


def empty(shape, dtype=float32, device="cpu"):
    return Tensor(numpy.empty(tuple(shape), dtype.storage), dtype, device)


def sparse_coo_tensor(indices, values, size):
    """Uncoalesced, as torch's constructor leaves it."""
    return Tensor(numpy.zeros(0), values.dtype, values.device, sparse_coo,
                  {"indices": indices, "values": values}, tuple(size), coalesced=False)


class _Stream:
    cuda_stream = 0x5EED  # a recognizable handle: the tests check it is the one used


class cuda:
    @staticmethod
    def current_stream(device=None):
        return _Stream()

    @staticmethod
    def is_available():
        return False

    @staticmethod
    def is_current_stream_capturing():
        return False

    @staticmethod
    def synchronize(device=None):
        pass


# ---- what spforge.torch uses of the module -------------------------------
contiguous_format = object()


def from_numpy(array):
    array = numpy.asarray(array)
    return Tensor(array, _BY_NAME[array.dtype.name])


def nonzero(x):
    return Tensor(numpy.argwhere(x._data).astype(numpy.int64), int64, x.device)


_rng = numpy.random.default_rng(0)


def manual_seed(seed):
    global _rng
    _rng = numpy.random.default_rng(seed)


def randn(*shape, dtype=None, device="cpu"):
    shape = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
    return tensor(_rng.standard_normal(shape), dtype=dtype or float32, device=device)


@contextlib.contextmanager
def no_grad():
    yield


inference_mode = no_grad


def _apply(x, fn):
    """fn over x's elements in float64, rounded back to x's dtype."""
    return Tensor(numpy.ascontiguousarray(_storage(fn(x._elements().astype(numpy.float64)),
                                                   x.dtype)), x.dtype, x.device)


_erf = numpy.vectorize(math.erf)


class _Functional:
    @staticmethod
    def pad(x, pad):
        if len(pad) != 4 or pad[:3] != (0, 0, 0):
            raise NotImplementedError("fake_torch: pad of the rows' end only")
        return Tensor(numpy.pad(x._data, ((0, pad[3]), (0, 0))), x.dtype, x.device)

    @staticmethod
    def relu(x):
        return _apply(x, lambda v: numpy.maximum(v, 0))

    @staticmethod
    def gelu(x, approximate="none"):
        if approximate == "tanh":
            return _apply(x, lambda v: 0.5 * v * (1 + numpy.tanh(
                math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))))
        return _apply(x, lambda v: 0.5 * v * (1 + _erf(v / math.sqrt(2))))

    @staticmethod
    def silu(x):
        return _apply(x, lambda v: v / (1 + numpy.exp(-v)))


class _Module:
    """nn.Module's bookkeeping: child modules and buffers by name, in the
    order set; named_modules visits each module once."""

    def __init__(self):
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_buffers", {})
        self.training = True

    def __setattr__(self, name, value):
        if isinstance(value, _Module):
            self._buffers.pop(name, None)
            self._modules[name] = value
        elif name in self._buffers:
            self._buffers[name] = value
        else:
            self._modules.pop(name, None)
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        for table in ("_modules", "_buffers"):
            found = self.__dict__.get(table, {})
            if name in found:
                return found[name]
        raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))

    def register_buffer(self, name, value, persistent=True):
        self._buffers[name] = value

    def named_children(self):
        return iter(list(self._modules.items()))

    def children(self):
        return (m for _, m in self.named_children())

    def named_modules(self, memo=None, prefix=""):
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self.named_children():
            yield from child.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self):
        return (m for _, m in self.named_modules())

    def eval(self):
        for m in self.modules():
            object.__setattr__(m, "training", False)
        return self

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def extra_repr(self):
        return ""

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self.extra_repr())


def Parameter(data, requires_grad=True):
    data.requires_grad = requires_grad
    return data


class _Linear(_Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(tensor(_rng.uniform(-bound, bound, (out_features, in_features)),
                                       dtype=dtype or float32, device=device or "cpu"))
        self.bias = None if not bias else Parameter(tensor(
            _rng.uniform(-bound, bound, out_features), dtype=dtype or float32,
            device=device or "cpu"))

    def forward(self, x):
        y = x._elements().astype(numpy.float64) @ self.weight._elements().T.astype(numpy.float64)
        if self.bias is not None:
            y = y + self.bias._elements()
        return Tensor(numpy.ascontiguousarray(_storage(y, x.dtype)), x.dtype, x.device)


class _Sequential(_Module):
    def __init__(self, *modules):
        super().__init__()
        for i, m in enumerate(modules):
            setattr(self, str(i), m)

    def forward(self, x):
        for m in self.children():
            x = m(x)
        return x


class _Activation(_Module):
    fn = None

    def forward(self, x):
        return type(self).fn(x)


class _ReLU(_Activation):
    fn = _Functional.relu


class _GELU(_Activation):
    fn = _Functional.gelu


class _Identity(_Module):
    def forward(self, x):
        return x


class nn:
    Module, Linear, Sequential = _Module, _Linear, _Sequential
    ReLU, GELU, Identity = _ReLU, _GELU, _Identity
    Parameter = staticmethod(Parameter)
    functional = _Functional


class _CustomOp:
    """torch.library.custom_op's result, as a plain call."""

    def __init__(self, name, fn, schema):
        self.name, self.fn, self.schema = name, fn, schema
        self.fake = self.backward = None

    def register_fake(self, fn):
        self.fake = fn
        return fn

    def register_autograd(self, backward, setup_context=None):
        self.backward = backward

    def __call__(self, *args):
        return self.fn(*args)


class library:
    @staticmethod
    def custom_op(name, fn=None, *, mutates_args, device_types=None, schema=None):
        def wrap(f):
            return _CustomOp(name, f, schema)
        return wrap if fn is None else wrap(fn)


__version__ = "0.0-fake"
