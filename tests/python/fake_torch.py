"""A minimal stand-in for torch, for testing the binding's torch adapter
where torch is not installed (CI: the CPU build of torch is not on PyPI;
the CUDA one brings gigabytes of CUDA wheels). It offers exactly what the
binding reads of a tensor — data_ptr(), stride(), shape, dtype, device,
layout, element_size(); detach(), cpu(), float(), numpy(); crow_indices(),
col_indices(), values(), indices(), _indices(), _values(), is_coalesced()
— and what it calls on the module (empty, the dtypes,
cuda.current_stream), plus what the tests call (tensor, T, slicing,
to_sparse_csr, to_sparse), with torch's names and behaviour.

Tensors hold a numpy array. A "cuda" tensor's data stays in host memory:
the tests check conversions and pointers, and never run a kernel on one.
bfloat16 tensors hold the upper 16 bits of float32 (rounded to nearest
even), as torch stores them."""

import numpy


class dtype:
    def __init__(self, name, storage):
        self.name, self.storage = name, numpy.dtype(storage)
        self.itemsize = self.storage.itemsize
        self.is_floating_point = name.startswith(("float", "bfloat"))

    def __repr__(self):
        return "torch." + self.name

    __str__ = __repr__


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


class layout:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name

    __str__ = __repr__


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
        return Tensor(self._data[index], self.dtype, self.device)

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
