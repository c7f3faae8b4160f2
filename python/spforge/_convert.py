"""The caller's arrays, as libspforge takes them, and results of the
caller's kind.

An operand (B, C, a bias, CSR arrays, ...) is described without a copy, as
an Operand (address, shape, strides, element type, device), from the first
of these that the object offers:
  - a torch.Tensor, or any object with data_ptr(), stride(), dtype and
    device (layout torch.strided);
  - __cuda_array_interface__ (cupy, numba: device memory);
  - __array_interface__ (numpy: host memory);
  - __dlpack__ and __dlpack_device__ (jax and any other DLPack producer;
    read through ctypes, so numpy is not needed);
  - the buffer protocol (array.array, memoryview, bytes);
  - for inputs only, a flat sequence of numbers, converted (a copy).
Then check() holds it against what the call needs: TypeError for another
element type (nothing is converted: float64 is not float32) or a read-only
output; ValueError for another shape, a strided (non-contiguous) array,
the wrong device; a result is made of the input's kind by new_like().

A sparse matrix A is another matter: the library copies it into its own
float32 CSR anyway, so to_sparse() converts (values of float16, bfloat16,
float32 or float64; any integer index type, range-checked): scipy.sparse
matrices and arrays of every format, torch sparse CSR / COO tensors, and
dense 2-D arrays of any kind above with a threshold or a mask. That
conversion needs numpy (scipy and torch users have it); nothing else in
this module does.
"""

import array
import ctypes
import numbers
import operator
import sys

# Element types by the names numpy and torch give them.
_ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "int16": 2,
             "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1}
# array.array typecodes of the element types a flat sequence is converted to.
_TYPECODE = {"float32": "f", "float64": "d", "int32": "i", "int64": "q"}
# The library's dtype names (spf_dtype_name) as numpy / torch spell them.
PLAN_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}

_LITTLE = sys.byteorder == "little"


class Operand:
    """One array as the library sees it: ptr (int address of its first
    element), shape, strides (in elements; None when C-contiguous by
    construction), dtype (a name of _ITEMSIZE, or a description of
    something else), itemsize, device (None: host memory; an int: a CUDA
    device ordinal, -1 when the object does not say which), readonly,
    kind ("torch", "cuda_array", "numpy", "dlpack", "buffer", "sequence"),
    source (the object), stream (the stream its producer works on, for
    device arrays: an int, or None) and keep (what must stay alive while
    the library uses ptr)."""

    __slots__ = ("ptr", "shape", "strides", "dtype", "itemsize", "device", "readonly", "kind",
                 "source", "stream", "keep")

    def __init__(self, ptr, shape, strides, dtype, itemsize, device, readonly, kind, source,
                 keep=None, stream=None):
        self.ptr, self.shape, self.strides, self.dtype = ptr, tuple(shape), strides, dtype
        self.itemsize, self.device, self.readonly, self.kind = itemsize, device, readonly, kind
        self.source, self.keep, self.stream = source, keep, stream

    @property
    def count(self):
        count = 1
        for extent in self.shape:
            count *= extent
        return count

    @property
    def nbytes(self):
        return self.count * self.itemsize

    def contiguous(self, order="C"):
        """Whether the elements fill count · itemsize bytes from ptr in C
        (row-major) or, order "F", column-major order."""
        if self.strides is None:
            return order == "C" or sum(extent > 1 for extent in self.shape) <= 1
        dims = list(zip(self.shape, self.strides))
        if order == "C":
            dims.reverse()
        want = 1
        for extent, stride in dims:
            if extent == 0:
                return True
            if extent != 1 and stride != want:
                return False
            want *= extent
        return True

    def where(self):
        return device_name(self.device)


def integer(value, what, ctype):
    """value as an int that fits ctype (a ctypes integer or pointer type).
    TypeError for a bool or a non-integer (a float is not truncated);
    OverflowError outside ctype's range, which ctypes would wrap silently."""
    if isinstance(value, bool):
        raise TypeError("%s: expected an integer, got %r" % (what, value))
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError("%s: expected an integer, got %s" % (what, type(value).__name__)) from None
    bits = 8 * ctypes.sizeof(ctype)
    signed = ctype(-1).value == -1
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not lo <= value <= hi:
        kind = "a pointer" if ctype is ctypes.c_void_p else ("int%d" if signed else "uint%d") % bits
        raise OverflowError("%s = %d does not fit %s (%d .. %d)" % (what, value, kind, lo, hi))
    return value


def device_name(device):
    if device is None:
        return "the host (cpu)"
    return "cuda:%s" % ("?" if device < 0 else device)


def _module(obj):
    """The top-level module of obj's type (torch for a torch.Tensor or an
    nn.Parameter, cupy for a cupy.ndarray), or None."""
    return sys.modules.get(type(obj).__module__.partition(".")[0])


def _is_torch(obj):
    return (callable(getattr(obj, "data_ptr", None)) and callable(getattr(obj, "stride", None))
            and hasattr(obj, "dtype") and hasattr(obj, "device"))


def _torch_name(dtype):
    name = str(dtype)
    return name[6:] if name.startswith("torch.") else name


def _typestr_dtype(typestr, obj=None):
    """An __array_interface__ / __cuda_array_interface__ typestr ("<f4")
    as an element type name ("float32"; "float32 (big-endian)" for '>')."""
    order, kind, digits = typestr[0], typestr[1], typestr[2:]
    # "|O" (numpy's object arrays) gives no size: its elements are pointers
    size = int(digits) if digits.isdigit() else ctypes.sizeof(ctypes.c_void_p)
    if kind == "O":
        return "object", size
    if kind == "V" and getattr(getattr(obj, "dtype", None), "name", None) == "bfloat16":
        name = "bfloat16"  # ml_dtypes' bfloat16 (jax's numpy arrays)
    else:
        name = {"f": "float%d", "i": "int%d", "u": "uint%d"}.get(kind, kind + "%d") % (8 * size)
        if kind == "b" and size == 1:
            name = "bool"
    if order in "<>" and (order == ">") == _LITTLE and size > 1:
        name += " (%s-endian)" % ("big" if _LITTLE else "little")
    return name, size


def _byte_strides(strides, itemsize, what):
    if strides is None:
        return None
    if any(s % itemsize for s in strides):
        raise ValueError("%s: strides %s bytes are not whole elements of %d bytes"
                         % (what, tuple(strides), itemsize))
    return tuple(s // itemsize for s in strides)


# ---- DLPack (v0.x, the unversioned capsule), read through ctypes --------
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


DL_CPU, DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat"}
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                         ctypes.c_char_p]
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype, _capsule_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]


def _from_dlpack(obj, what, stream):
    """An Operand over a DLPack producer's memory. The capsule is kept
    and not renamed "used_dltensor", so the producer's capsule destructor
    releases the tensor when the Operand is dropped. stream: the CUDA
    stream the library will run on (0 is passed as 1, the legacy default
    stream, as DLPack reserves 0)."""
    try:
        device_type, device_id = obj.__dlpack_device__()
    except Exception as e:  # noqa: BLE001 - any failure of the producer
        raise TypeError("%s: %s.__dlpack_device__() failed: %s" % (what, type(obj).__name__, e))
    if device_type in (DL_CPU, DL_CUDA_HOST):
        device = None
    elif device_type in (DL_CUDA, DL_CUDA_MANAGED):
        device = int(device_id)
    else:
        raise ValueError("%s: a DLPack device of type %d, neither the host nor CUDA"
                         % (what, device_type))
    if device is None:
        capsule = obj.__dlpack__()
    else:
        try:
            capsule = obj.__dlpack__(stream=stream or 1)
        except TypeError:  # a producer older than the stream argument
            capsule = obj.__dlpack__()
    if not _capsule_valid(capsule, b"dltensor"):
        raise TypeError("%s: %s.__dlpack__() did not return an unused DLPack capsule"
                        % (what, type(obj).__name__))
    managed = _DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    t = managed.dl_tensor
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = None if not t.strides else tuple(t.strides[i] for i in range(t.ndim))
    code, bits, lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
    if code == 6 and bits == 8:
        dtype = "bool"
    else:
        dtype = "%s%d" % (_DL_CODES.get(code, "code%d_" % code), bits)
    if lanes != 1:
        dtype += "x%d" % lanes
    itemsize = max(1, bits * lanes // 8)
    return Operand((t.data or 0) + t.byte_offset, shape, strides, dtype, itemsize, device,
                   False, "dlpack", obj, keep=(capsule, obj))


# ---- the buffer protocol -------------------------------------------------
_FORMATS = {"f": "float32", "d": "float64", "e": "float16", "?": "bool"}
_NATIVE_PREFIXES = "@=" + ("<" if _LITTLE else ">")


def _buffer_dtype(view):
    fmt = view.format.lstrip(_NATIVE_PREFIXES)
    if fmt in _FORMATS and len(fmt) == 1:
        return _FORMATS[fmt]
    if len(fmt) == 1 and fmt in "bhilqn":
        return "int%d" % (8 * view.itemsize)
    if len(fmt) == 1 and fmt in "BHILQN":
        return "uint%d" % (8 * view.itemsize)
    return "format %r" % view.format


def _from_buffer(obj, view, what, writable):
    """An Operand over a buffer-protocol object: in place, but for a
    read-only input, copied (ctypes takes the address of writable memory
    only). ValueError for a strided buffer, which has no address to give
    (column-major ones included: numpy arrays come by __array_interface__),
    TypeError for a read-only output."""
    if not view.c_contiguous:
        raise ValueError("%s: a C-contiguous buffer is needed, got a strided one (shape %s: a "
                         "slice or a transpose); numpy.ascontiguousarray(x) makes a contiguous "
                         "copy" % (what, view.shape))
    if writable and view.readonly:
        raise TypeError("%s: expected a writable array, got a read-only one" % what)
    make = ctypes.c_char * view.nbytes
    if view.nbytes == 0:  # memoryview cannot cast a shape with a zero extent
        keep = make()
    elif view.readonly:
        keep = make.from_buffer_copy(view.cast("B"))
    else:
        keep = make.from_buffer(view.cast("B"))
    return Operand(ctypes.addressof(keep), view.shape, None, _buffer_dtype(view), view.itemsize,
                   None, view.readonly, "buffer", obj, keep=keep)


def describe(obj, what, want=None, stream=None, writable=False):
    """An Operand over obj (see the module's docstring), without a copy
    except for a sequence of numbers (converted to want, an element type
    of _TYPECODE; inputs only) or a read-only buffer-protocol object.
    TypeError for None, a number, or anything else that is no array."""
    if obj is None:
        raise TypeError("%s: expected an array, got None" % what)
    if isinstance(obj, (bool, numbers.Number, str)):
        raise TypeError("%s: expected an array, got %s %r" % (what, type(obj).__name__, obj))
    if _is_torch(obj):
        layout = str(getattr(obj, "layout", "torch.strided"))
        if layout != "torch.strided":
            raise TypeError("%s: a dense tensor is needed, got a tensor of layout %s"
                            % (what, layout))
        device = obj.device
        kind = getattr(device, "type", str(device))
        if kind == "cpu":
            index = None
        elif kind == "cuda":
            index = -1 if device.index is None else int(device.index)
        else:
            raise ValueError("%s: a tensor on %s; spforge takes cpu and cuda tensors"
                             % (what, device))
        return Operand(obj.data_ptr(), tuple(obj.shape), tuple(obj.stride()),
                       _torch_name(obj.dtype), obj.element_size(), index, False, "torch", obj,
                       keep=obj)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        if cai.get("mask") is not None:
            raise ValueError("%s: masked device arrays are not supported" % what)
        dtype, itemsize = _typestr_dtype(cai["typestr"], obj)
        ptr, readonly = cai["data"]
        device = getattr(getattr(obj, "device", None), "id", None)
        return Operand(ptr or 0, cai["shape"], _byte_strides(cai.get("strides"), itemsize, what),
                       dtype, itemsize, -1 if device is None else int(device), bool(readonly),
                       "cuda_array", obj, keep=obj, stream=cai.get("stream"))
    ai = getattr(obj, "__array_interface__", None)
    if ai is not None and isinstance(ai, dict) and "typestr" in ai and "data" in ai:
        if ai.get("mask") is not None:
            raise ValueError("%s: masked arrays are not supported" % what)
        data = ai["data"]
        if not isinstance(data, tuple):  # the buffer protocol's object instead
            return describe(memoryview(data), what, want, stream, writable)
        dtype, itemsize = _typestr_dtype(ai["typestr"], obj)
        return Operand(data[0] or 0, ai["shape"], _byte_strides(ai.get("strides"), itemsize, what),
                       dtype, itemsize, None, bool(data[1]), "numpy", obj, keep=obj)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack(obj, what, stream)
    try:
        view = memoryview(obj)
    except TypeError:
        view = None
    if view is not None:
        return _from_buffer(obj, view, what, writable)
    if writable:
        raise TypeError("%s: expected a writable array (numpy, torch, array.array(%r), ...), got "
                        "%s" % (what, _TYPECODE.get(want, "f"), type(obj).__name__))
    if want not in _TYPECODE:
        raise TypeError("%s: expected an array of %s, got %s" % (what, want, type(obj).__name__))
    try:
        converted = array.array(_TYPECODE[want], obj)
    except OverflowError as e:
        raise OverflowError("%s: an element is beyond %s (%s)" % (what, want, e)) from None
    except TypeError as e:
        raise TypeError("%s: expected an array of %s or a flat sequence of numbers, got %s (%s)"
                        % (what, want, type(obj).__name__, e)) from None
    op = _from_buffer(converted, memoryview(converted), what, False)
    op.kind = "sequence"
    return op


_HINT = {"float32": "numpy: .astype(numpy.float32), torch: .float()",
         "float16": "numpy: .astype(numpy.float16), torch: .half()",
         "bfloat16": "torch: .bfloat16()",
         "float64": "numpy: .astype(numpy.float64), torch: .double()",
         "int32": "numpy: .astype(numpy.int32), torch: .int()",
         "int64": "numpy: .astype(numpy.int64), torch: .long()"}


def check(op, what, dtype, shape=None, device=None, writable=False, flat=True, order="C"):
    """op, checked, in this order: on device (None: the host; an int: that
    CUDA device; ValueError otherwise), of element type dtype (TypeError
    otherwise: nothing is converted), C-contiguous (or, order "F", column-major;
    ValueError for a strided array, which is never copied), of shape
    (exactly, or with flat 1-D with as many elements; ValueError), and
    writable when asked (TypeError). Returns op."""
    if (device is None) != (op.device is None):
        if device is None:
            raise ValueError("%s: an array on %s, but this call runs on the host: pass a host "
                             "array (numpy, a cpu tensor, ...)" % (what, op.where()))
        raise ValueError("%s: an array on the host, but the plan runs on %s: pass a device array "
                         "(a cuda tensor, cupy) or its device pointer as an int"
                         % (what, device_name(device)))
    if device is not None and op.device >= 0 and device >= 0 and op.device != device:
        raise ValueError("%s: an array on %s, but the plan runs on %s"
                         % (what, op.where(), device_name(device)))
    if op.dtype != dtype:
        raise TypeError("%s: expected %s elements, got %s; nothing is converted implicitly (%s)"
                        % (what, dtype, op.dtype, _HINT.get(dtype, "convert it first")))
    if not op.contiguous(order):
        raise ValueError("%s: a %s array is needed, got a strided one (shape %s, strides %s in "
                         "elements: a slice or a transpose); numpy.ascontiguousarray(x) or "
                         "x.contiguous() makes a contiguous copy"
                         % (what, "C-contiguous" if order == "C" else "column-major (F)",
                            op.shape, op.strides))
    if shape is not None:
        count = 1
        for extent in shape:
            count *= extent
        if op.shape != tuple(shape) and not (flat and len(op.shape) == 1
                                             and op.shape[0] == count):
            raise ValueError("%s: expected %s of shape %s%s, got shape %s"
                             % (what, dtype, tuple(shape), " (or %d flat)" % count if flat else "",
                                op.shape))
    if writable and op.readonly:
        raise TypeError("%s: expected a writable array, got a read-only one" % what)
    if writable and op.kind == "dlpack":
        raise TypeError("%s: a DLPack capsule is read-only here (it grants no write access): "
                        "pass a numpy array, a tensor or a cupy array" % what)
    return op


def host(obj, what, dtype, shape=None, writable=False):
    """describe() and check() for a host array."""
    return check(describe(obj, what, dtype, writable=writable), what, dtype, shape, None,
                 writable)


def refuse_overlap(c, inputs):
    """ValueError when the output c (an Operand) shares a byte with one of
    inputs ((name, Operand or None) pairs): the product would read what it
    has overwritten."""
    if not c.nbytes:
        return
    for name, other in inputs:
        if other is None or not other.nbytes or (other.device is None) != (c.device is None):
            continue
        if c.ptr < other.ptr + other.nbytes and other.ptr < c.ptr + c.nbytes:
            raise ValueError("c shares memory with %s: the output must be a buffer apart from "
                             "the inputs" % name)


def default_stream(op):
    """The stream the caller's framework works on for a device operand:
    torch's and cupy's current stream, else the stream named by
    __cuda_array_interface__ (version 3), else 0 (the default stream)."""
    if op.device is None:
        return 0
    mod = _module(op.source)
    cuda = getattr(mod, "cuda", None)
    if op.kind == "torch" and cuda is not None and hasattr(cuda, "current_stream"):
        return int(cuda.current_stream(op.source.device).cuda_stream)
    if cuda is not None and hasattr(cuda, "get_current_stream"):
        return int(cuda.get_current_stream().ptr)
    return int(op.stream or 0)


def _numpy():
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def new_like(op, shape, dtype, order="C"):
    """A new, uninitialized array of shape and element type dtype of op's
    kind, where op lives: torch → torch.empty on op's device, a device
    array → its module's empty() (cupy.empty), numpy → numpy.empty; a
    buffer or a sequence → array.array (flat) or, for order "F", numpy.
    order "F" gives the transpose of a C-contiguous array of the reversed
    shape. TypeError where no such array can be made."""
    shape = tuple(shape)
    made = shape[::-1] if order == "F" else shape
    mod = _module(op.source)
    if op.kind == "torch":
        out = mod.empty(made, dtype=getattr(mod, dtype), device=op.source.device)
    elif op.device is not None:
        if mod is None or not hasattr(mod, "empty"):
            raise TypeError("no result of type %s can be made on %s (its module has no empty()): "
                            "give an output (Plan.execute, or out= of a plan call)"
                            % (type(op.source).__name__, op.where()))
        try:
            out = mod.empty(made, dtype=dtype)
        except TypeError as e:
            raise TypeError("%s.empty(%s, dtype=%r) failed: %s; give an output (Plan.execute, "
                            "or out= of a plan call)" % (mod.__name__, made, dtype, e)) from None
    else:
        numpy = _numpy()
        if op.kind in ("buffer", "sequence") and order == "C" or numpy is None:
            if dtype not in _TYPECODE or order != "C":
                raise TypeError("a %s result of this shape needs numpy (not installed); give an "
                                "output (Plan.execute, or out= of a plan call)" % dtype)
            count = 1
            for extent in shape:
                count *= extent
            return array.array(_TYPECODE[dtype], bytes(count * _ITEMSIZE[dtype]))
        if dtype == "bfloat16":
            raise TypeError("numpy has no bfloat16: give an output (Plan.execute, or out= of a "
                            "plan call)")
        out = numpy.empty(made, dtype=dtype)
    return out.T if order == "F" else out


class PlanSpec:
    """What a plan's execute takes: device (None for a host plan, else the
    CUDA ordinal), dtype of B and C ("float32", "float16", "bfloat16"),
    the shapes of B and C in the plan's layouts and of the bias (None for a
    plan made without one)."""

    def __init__(self, device, dtype, b_shape, c_shape, bias_shape):
        self.device, self.dtype = device, dtype
        self.b_shape, self.c_shape, self.bias_shape = tuple(b_shape), tuple(c_shape), bias_shape


def operands(spec, b, c, bias, stream=None):
    """The addresses spf_plan_execute takes for b, c and bias, the stream
    to run on, and the Operands to keep alive during the call:
    (b, c, bias, stream, operands).

    Host plans take host arrays. Device plans take device arrays (a cuda
    tensor, cupy, anything with __cuda_array_interface__ or a CUDA DLPack
    capsule) or device pointers as ints, unchecked (the library still
    refuses a c overlapping b or bias). Arrays are checked by check():
    the plan's dtype for b and c, float32 for the bias, the plan's device
    and shapes, C-contiguous, c writable; ValueError for a c sharing
    memory with b or bias, and for a bias given to a plan made without one
    or missing from one made with it. stream: an int (a cudaStream_t;
    OverflowError beyond a pointer) or None: the current stream of the
    framework the arrays come from (torch, cupy), else 0, the default."""
    if stream is not None:
        stream = integer(stream, "stream", ctypes.c_void_p)
    if (bias is not None) != (spec.bias_shape is not None):
        raise ValueError("bias %s, but the plan was made with bias=%s"
                         % ("given" if bias is not None else "missing",
                            spec.bias_shape is not None))
    ops, ptrs = {}, []
    for name, obj, shape, dtype in (("b", b, spec.b_shape, spec.dtype),
                                    ("c", c, spec.c_shape, spec.dtype),
                                    ("bias", bias, spec.bias_shape, "float32")):
        if obj is None and name == "bias":
            ops[name] = None
            ptrs.append(None)
            continue
        if spec.device is not None and (obj is None or isinstance(obj, (bool, float))):
            raise TypeError("%s: device plans take device arrays (a cuda tensor, cupy, ...) or "
                            "device pointers as ints (e.g. tensor.data_ptr()), got %r"
                            % (name, obj))
        if spec.device is not None and isinstance(obj, numbers.Integral):
            ops[name] = None
            ptrs.append(integer(obj, name, ctypes.c_void_p))
            continue
        writable = name == "c"
        op = check(describe(obj, name, dtype, stream=stream, writable=writable), name, dtype,
                   shape, spec.device, writable=writable)
        ops[name] = op
        ptrs.append(op.ptr)
    if ops["c"] is not None:
        refuse_overlap(ops["c"], (("b", ops["b"]), ("bias", ops["bias"])))
    if stream is None:
        described = [op for op in ops.values() if op is not None]
        stream = default_stream(described[0]) if described else 0
    return ptrs[0], ptrs[1], ptrs[2], stream, ops


def dtype_name(value, what="dtype"):
    """A dtype as the library names it or as numpy / torch spell it: a
    string ("f16", "float16", "half"), a torch dtype (torch.float16), a
    numpy dtype or scalar type (numpy.float16). The library checks the
    name; TypeError for anything else."""
    if isinstance(value, str):
        return value
    name = str(value)
    if name.startswith("torch."):
        return name[6:]
    numpy = sys.modules.get("numpy")
    if numpy is not None and (isinstance(value, numpy.dtype)
                              or isinstance(value, type) and issubclass(value, numpy.generic)):
        return numpy.dtype(value).name
    raise TypeError("%s: expected a name (str), a numpy or a torch dtype, got %r" % (what, value))


# ---- sparse matrices: the caller's kinds to CSR / COO arrays -------------
_INT32_MAX = (1 << 31) - 1


def _need_numpy(what):
    numpy = _numpy()
    if numpy is None:
        raise ImportError("%s needs numpy (pip install numpy); spforge.Matrix.from_csr and "
                          "Matrix.from_coo take plain buffers without it" % what)
    return numpy


def _host_numpy(obj, what):
    """obj as a numpy array in host memory (a copy only where the object
    lives on a device or numpy cannot view it: torch bfloat16 is widened
    to float32, which is exact)."""
    numpy = _need_numpy(what)
    if _is_torch(obj):
        t = obj.detach() if hasattr(obj, "detach") else obj
        if getattr(getattr(t, "device", None), "type", "cpu") != "cpu":
            t = t.cpu()
        if _torch_name(t.dtype) == "bfloat16":
            t = t.float()
        return numpy.asarray(t.numpy())
    if isinstance(obj, numpy.ndarray):
        return obj
    if getattr(obj, "__cuda_array_interface__", None) is not None:
        for method in ("get", "copy_to_host"):  # cupy, numba
            if callable(getattr(obj, method, None)):
                return numpy.asarray(getattr(obj, method)())
        raise TypeError("%s: a device array of type %s: copy it to the host first"
                        % (what, type(obj).__name__))
    if hasattr(obj, "__dlpack_device__") and not hasattr(obj, "__array_interface__"):
        if obj.__dlpack_device__()[0] not in (DL_CPU, DL_CUDA_HOST):
            raise TypeError("%s: a device array of type %s: copy it to the host first"
                            % (what, type(obj).__name__))
        return numpy.from_dlpack(obj)
    out = numpy.asarray(obj)
    if out.dtype == object:
        raise TypeError("%s: expected an array, got %s" % (what, type(obj).__name__))
    return out


def _values(numpy, values, what):
    """values as float32: float16 / bfloat16 / float32 widen exactly,
    float64 rounds to the nearest float32 (A is held as float32). TypeError
    for integers, bools and complex numbers."""
    _value_type(values.dtype.name, what)
    return numpy.ascontiguousarray(values, dtype=numpy.float32)


def _value_type(name, what):
    if name not in ("float16", "bfloat16", "float32", "float64"):
        raise TypeError("%s: values of dtype %s; spforge holds float32 values and takes float16, "
                        "bfloat16, float32 or float64 (convert with .astype(numpy.float32))"
                        % (what, name))


def _indices(numpy, index, what, dtype, bound=_INT32_MAX):
    """An integer index array as dtype (int32 or int64): OverflowError for
    an entry beyond int32 where int32 is needed (never wrapped); TypeError
    for a non-integer array."""
    index = numpy.asarray(index)
    if index.dtype.kind not in "iu":
        raise TypeError("%s: expected integer indices, got dtype %s" % (what, index.dtype.name))
    if index.size and dtype == "int32":
        high, low = int(index.max()), int(index.min())
        if high > bound or low < -bound - 1:
            raise OverflowError("%s: index %d does not fit int32"
                                % (what, high if high > bound else low))
    if index.dtype.kind == "u" and index.size and int(index.max()) > (1 << 63) - 1:
        raise OverflowError("%s: index %d does not fit int64" % (what, int(index.max())))
    return numpy.ascontiguousarray(index, dtype=dtype)


def _shape(shape, what):
    shape = tuple(int(s) for s in shape)
    if len(shape) != 2:
        raise ValueError("%s: a matrix (2-D) is needed, got shape %s" % (what, shape))
    for extent in shape:
        if extent > _INT32_MAX:
            raise OverflowError("%s: shape %s; spforge takes at most %d rows and columns"
                                % (what, shape, _INT32_MAX))
    return shape


def _csr(numpy, shape, row_ptr, col_idx, values, what):
    return ("csr", shape, _indices(numpy, row_ptr, what + " row offsets", "int64"),
            _indices(numpy, col_idx, what + " column indices", "int32"),
            _values(numpy, values, what))


def _coo(numpy, shape, row, col, values, what):
    return ("coo", shape, _indices(numpy, row, what + " row indices", "int32"),
            _indices(numpy, col, what + " column indices", "int32"),
            _values(numpy, values, what))


def _scipy_check(numpy, obj, shape, what):
    """A scipy.sparse matrix's own arrays checked before anything reads
    them: scipy builds such objects from the arrays it is given without
    checking, and its conversions then move entries between rows (a
    decreasing indptr) or read past the arrays. ValueError naming the
    array and the place."""
    fmt = obj.format
    if fmt in ("csr", "csc", "bsr"):
        block = tuple(getattr(obj, "blocksize", (1, 1)))
        major, minor = (shape[0], shape[1]) if fmt != "csc" else (shape[1], shape[0])
        if fmt == "bsr":
            major, minor = shape[0] // block[0], shape[1] // block[1]
        indptr, indices = numpy.asarray(obj.indptr), numpy.asarray(obj.indices)
        stored = len(obj.data)
        if indptr.ndim != 1 or len(indptr) != major + 1:
            raise ValueError("%s: scipy %s indptr of shape %s, expected %d offsets"
                             % (what, fmt, indptr.shape, major + 1))
        steps = numpy.diff(indptr)
        if indptr[0] != 0 or (steps < 0).any():
            at = 0 if indptr[0] != 0 else int(numpy.argmax(steps < 0)) + 1
            raise ValueError("%s: scipy %s indptr[%d] = %d: the offsets must start at 0 and "
                             "never decrease" % (what, fmt, at, int(indptr[at])))
        if indptr[-1] > len(indices) or indptr[-1] > stored:
            raise ValueError("%s: scipy %s indptr ends at %d, past its %d indices and %d values"
                             % (what, fmt, int(indptr[-1]), len(indices), stored))
        used = indices[:int(indptr[-1])]
        if used.size and (used.min() < 0 or used.max() >= minor):
            bad = int(numpy.argmax((used < 0) | (used >= minor)))
            raise ValueError("%s: scipy %s indices[%d] = %d outside [0, %d)"
                             % (what, fmt, bad, int(used[bad]), minor))
    elif fmt == "coo":
        row, col = numpy.asarray(obj.row), numpy.asarray(obj.col)
        if not (len(row) == len(col) == len(obj.data)):
            raise ValueError("%s: scipy coo of %d rows, %d columns and %d values"
                             % (what, len(row), len(col), len(obj.data)))
        for name, index, bound in (("row", row, shape[0]), ("col", col, shape[1])):
            if index.size and (index.min() < 0 or index.max() >= bound):
                bad = int(numpy.argmax((index < 0) | (index >= bound)))
                raise ValueError("%s: scipy coo %s[%d] = %d outside [0, %d)"
                                 % (what, name, bad, int(index[bad]), bound))


def _is_scipy_sparse(obj):
    return (type(obj).__module__.startswith("scipy.sparse") and hasattr(obj, "tocoo")
            and hasattr(obj, "format"))


def _check_threshold(threshold):
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise TypeError("threshold: expected a real number, got %r" % (threshold,))
    if not threshold >= 0:
        raise ValueError("threshold: expected a number >= 0, got %r" % (threshold,))


def cuda_keep(numpy, t, threshold, mask, what="matrix"):
    """Which entries of a dense cuda tensor t to_sparse keeps, as a bool
    tensor of t's shape on its device: mask's nonzeros (a tensor or any
    array of t's shape), else |t| > threshold (NaN kept, to be refused),
    else t's nonzeros."""
    torch = _module(t)
    shape = _shape(tuple(t.shape), what)
    if mask is not None:
        if _is_torch(mask):
            keep = mask.detach().to(device=t.device)
        else:
            keep = torch.from_numpy(numpy.ascontiguousarray(_host_numpy(mask, "mask")))
            keep = keep.to(device=t.device)
        if tuple(keep.shape) != tuple(t.shape):
            raise ValueError("mask: expected the matrix's shape %s, got %s"
                             % (shape, tuple(keep.shape)))
        if keep.dtype.is_complex:
            raise TypeError("mask: expected bools or numbers, got dtype %s"
                            % _torch_name(keep.dtype))
        return keep != 0
    if threshold is not None:
        _check_threshold(threshold)
        return ~(t.abs() <= threshold)
    return t != 0


def _cuda_dense(numpy, t, threshold, mask, what):
    """to_sparse of a dense torch tensor on a cuda device, the entries
    selected there (a 7B layer's weight need not cross to the host; its
    nonzeros do): the same entries, order and checks as the host path."""
    torch = _module(t)
    t = t.detach()
    shape = _shape(tuple(t.shape), what)
    _value_type(_torch_name(t.dtype), what)
    keep = cuda_keep(numpy, t, threshold, mask, what)
    index = torch.nonzero(keep.reshape(-1)).reshape(-1)  # row-major: sorted columns in each row
    parts = (keep.sum(dim=1), (index % shape[1]).to(dtype=torch.int32),
             t.reshape(-1)[index].float())
    # Non-blocking copies land in pinned memory, at the bus's speed (a
    # pageable copy of a 7B layer's nonzeros ran at a tenth of it): all
    # three are queued, then waited for once.
    counts, cols, values = (x.to("cpu", non_blocking=True) for x in parts)
    torch.cuda.synchronize(t.device)
    row_ptr = numpy.zeros(shape[0] + 1, numpy.int64)
    numpy.cumsum(counts.numpy(), out=row_ptr[1:])
    return ("csr", shape, row_ptr, cols.numpy(), values.numpy())


def to_sparse(obj, threshold=None, mask=None, what="matrix"):
    """obj as ("csr", (rows, cols), row_ptr int64, col_idx int32, values
    float32) or ("coo", (rows, cols), row int32, col int32, values float32)
    numpy arrays:
      - a scipy.sparse matrix or array: its stored entries (explicit zeros
        included); CSR in canonical form directly, every other format and
        a CSR with unsorted or repeated columns as COO, so the caller's
        duplicates policy decides on repeats;
      - a torch sparse tensor (layout sparse_csr, or sparse_coo: as COO),
        on any device;
      - a dense 2-D array of any kind describe() reads (numpy, torch on
        any device, cupy, DLPack, buffers, nested lists): the entries where
        mask is nonzero if mask is given, else those with |w| > threshold
        if threshold is given, else the nonzeros (a NaN is always kept, so
        the library refuses it).
    TypeError for a kind it cannot read or values of another type,
    ValueError for a shape that is not 2-D, a mask of another shape,
    both threshold and mask, or a negative threshold; OverflowError for
    indices or a shape beyond int32."""
    sparse = _is_scipy_sparse(obj)
    layout = str(getattr(obj, "layout", "torch.strided")) if _is_torch(obj) else "torch.strided"
    if (sparse or layout != "torch.strided") and (threshold is not None or mask is not None):
        raise ValueError("%s: threshold and mask select entries of a dense matrix; this one is "
                         "sparse already" % what)
    numpy = _need_numpy("a spforge.Matrix from %s" % type(obj).__name__)
    if sparse:
        shape = _shape(obj.shape, what)
        _scipy_check(numpy, obj, shape, what)
        if obj.format == "csr" and obj.has_canonical_format:
            return _csr(numpy, shape, obj.indptr, obj.indices, obj.data, what)
        coo = obj.tocoo()
        return _coo(numpy, shape, coo.row, coo.col, coo.data, what)
    if layout == "torch.sparse_csr":
        shape = _shape(obj.shape, what)
        return _csr(numpy, shape, _host_numpy(obj.crow_indices(), what),
                    _host_numpy(obj.col_indices(), what), _host_numpy(obj.values(), what), what)
    if layout == "torch.sparse_coo":
        shape = _shape(obj.shape, what)
        coalesced = obj.is_coalesced()
        indices = _host_numpy(obj.indices() if coalesced else obj._indices(), what)
        values = _host_numpy(obj.values() if coalesced else obj._values(), what)
        if indices.ndim != 2 or indices.shape[0] != 2 or values.ndim != 1:
            raise ValueError("%s: a sparse COO tensor of 2 sparse and no dense dimensions is "
                             "needed" % what)
        return _coo(numpy, shape, indices[0], indices[1], values, what)
    if layout != "torch.strided":
        raise TypeError("%s: a torch tensor of layout %s; convert it with .to_sparse_csr()"
                        % (what, layout))
    if isinstance(obj, (bool, numbers.Number, str)) or obj is None:
        raise TypeError("%s: expected a matrix (scipy.sparse, a tensor, an array), got %r"
                        % (what, obj))
    if threshold is not None and mask is not None:
        raise ValueError("%s: give threshold or mask, not both" % what)
    if _is_torch(obj) and getattr(obj.device, "type", "cpu") == "cuda":
        return _cuda_dense(numpy, obj, threshold, mask, what)
    w = _host_numpy(obj, what)
    shape = _shape(w.shape, what)
    if mask is not None:
        keep = _host_numpy(mask, "mask")
        if keep.shape != w.shape:
            raise ValueError("mask: expected the matrix's shape %s, got %s" % (shape, keep.shape))
        if keep.dtype.kind not in "biuf":
            raise TypeError("mask: expected bools or numbers, got dtype %s" % keep.dtype.name)
        keep = keep != 0
    elif threshold is not None:
        _check_threshold(threshold)
        keep = ~(numpy.abs(w) <= threshold)  # NaN stays in, to be refused
    else:
        keep = ~(w == 0)
    values = _values(numpy, w[keep], what)
    rows, cols = numpy.nonzero(keep)  # row-major: sorted columns in each row
    row_ptr = numpy.zeros(shape[0] + 1, numpy.int64)
    numpy.cumsum(numpy.bincount(rows, minlength=shape[0]), out=row_ptr[1:])
    return ("csr", shape, row_ptr, cols.astype(numpy.int32), values)
