"""spforge: a thin ctypes binding of libspforge (include/spforge.h).

Host arrays are any buffer-protocol object (array.array, numpy arrays,
memoryview, ...) of exactly the element type asked for, C-contiguous, of the
shape asked for or flat; or, for inputs, a plain flat sequence of numbers,
which is converted. numpy is not required. GPU plans take device pointers as
integers (torch's tensor.data_ptr(), cupy's array.data.ptr). The library is
$SPF_LIB, else build/libspforge.so in the repository, else whatever
ctypes.util.find_library("spforge") finds.

Every argument is checked before it reaches ctypes, which would otherwise
convert silently (wrap an integer, cut a path at a NUL, read a buffer of
another type or shape): TypeError for the wrong kind of value (a bool or a
float for an integer, float64 for float32, None for a buffer), OverflowError
for an integer beyond its C type, ValueError for a wrong value (a shape or
length, a strided buffer, a NUL in a path, an output sharing memory with an
input); spforge.Error for what the library refuses.
"""

import array
import ctypes
import numbers
import operator
import os
import sys

from . import _capi
from ._capi import lib

__all__ = ["Error", "Matrix", "Plan", "reference_spmm", "relative_error", "device_info",
           "version"]

_DUPLICATES = {"reject": 0, "sum": 1}
_FORMATS = {"auto": 0, "mtx": 1, "smtx": 2, "npy": 3}
_GENERATORS = {"uniform": 0, "magnitude": 1, "column_vector": 2, "vnm": 3, "rmat": 4}
_ACCUMULATE = {"f32": 0, "f64": 1}
_DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2}
_TUNE_SPACES = {"compact": 0, "full": 1}
_CONFIG_FIELDS = ("m1", "n1", "v", "prefetch", "ksplit")


class Error(Exception):
    """A failing spforge call: status (the negative spf_status), name
    (spf_status_string) and detail (spf_last_error, naming the function and,
    for files, the file and line)."""

    def __init__(self, status, name, detail):
        super().__init__("%s: %s" % (name, detail))
        self.status, self.name, self.detail = status, name, detail


def _check(status):
    if status != 0:
        # Read the detail first: it is per-thread and valid until the next call.
        detail = lib().spf_last_error().decode("utf-8", "replace")
        name = lib().spf_status_string(status).decode("utf-8", "replace")
        raise Error(status, name, detail)


def _choice(table, value, what):
    try:
        return table[value]
    except KeyError:
        raise ValueError("unknown %s %r (one of: %s)" % (what, value, ", ".join(table))) from None


def _named(kind, value):
    """The library's enum value of a name (spf_<kind>_from_name: the one
    name list of the C API, the CLI and the bench). ValueError naming the
    choices for an unknown name, TypeError for a non-string."""
    if not isinstance(value, str):
        raise TypeError("%s: expected a name (str), got %r" % (kind, value))
    out = _capi.c_enum()
    status = getattr(lib(), "spf_%s_from_name" % kind)(value.encode(), ctypes.byref(out))
    if status != 0:
        raise ValueError(lib().spf_last_error().decode("utf-8", "replace"))
    return out.value


def _name(kind, value):
    return getattr(lib(), "spf_%s_name" % kind)(value).decode()


def _int(value, what, ctype):
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


def _flag(value, what):
    """1 or 0 for a bool (numpy's included) or the integers 1 and 0.
    TypeError for anything else, ValueError for another integer: a truthy
    string or 2 is a mistake, not True."""
    dtype = getattr(value, "dtype", None)
    if isinstance(value, bool) or (getattr(dtype, "kind", None) == "b"
                                   and getattr(value, "shape", None) == ()):
        return int(bool(value))
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError("%s: expected a bool, got %r" % (what, value))
    number = _int(value, what, ctypes.c_int)
    if number not in (0, 1):
        raise ValueError("%s: expected a bool (or 0 / 1), got %d" % (what, number))
    return number


def _real(value, what):
    """value as a float. TypeError for a bool or a non-number (a string is
    not parsed); OverflowError for an integer beyond a double."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s: expected a real number, got %r" % (what, value))
    try:
        return float(value)
    except OverflowError:
        raise OverflowError("%s: %d is beyond a double" % (what, value)) from None


def _path(path, what):
    """path (str, bytes or os.PathLike) as bytes for a char * argument.
    TypeError for anything else; ValueError for a NUL byte, at which C would
    cut the path short (and read or write another file)."""
    encoded = os.fsencode(path)
    if b"\0" in encoded:
        raise ValueError("%s: the path %r contains a NUL byte" % (what, path))
    return encoded


def _field(struct, name, value, what=None):
    """Set struct.name to value checked against the field's C type (the
    mirror in _capi), as _real or _int do."""
    ctype, what = dict(struct._fields_)[name], what or name
    setattr(struct, name, _real(value, what) if ctype is ctypes.c_double
            else _int(value, what, ctype))


# Buffer formats (without a native byte-order prefix) by element kind.
_FORMAT_KIND = {c: "int" for c in "bhilqn"}
_FORMAT_KIND.update({"f": "float", "d": "float", "e": "float"})
_TYPECODE_KIND = {"q": "int", "i": "int", "f": "float", "d": "float"}
_TYPECODE_NAME = {"q": "int64", "i": "int32", "f": "float32", "d": "float64"}
_NATIVE_PREFIXES = "@=" + ("<" if sys.byteorder == "little" else ">")


def _buffer(obj, typecode, what, shape=None, writable=False):
    """(keep, shape): obj's elements of typecode as a ctypes byte array, to
    keep alive for the duration of the C call, and obj's shape.

    obj is a buffer of exactly typecode's element kind and size, native byte
    order and C-contiguous, used in place when writable (a read-only input is
    copied); or, unless writable, a flat sequence of numbers, converted (a
    copy). With shape, obj must have exactly that shape or be flat with as
    many elements. Raises TypeError for None, a non-buffer output, a
    read-only output or another element type or size (float64 where float32
    is needed is not converted); ValueError for a strided (non-contiguous)
    buffer, which is never copied, or another shape or length;
    OverflowError for a sequence element beyond the element type."""
    name = _TYPECODE_NAME[typecode]
    if obj is None:
        raise TypeError("%s: expected a buffer of %s, got None" % (what, name))
    try:
        view = memoryview(obj)
    except TypeError:
        view = None
    if view is None:
        if writable:
            raise TypeError("%s: expected a writable buffer of %s (array.array(%r), a numpy "
                            "array, ...), got %s" % (what, name, typecode, type(obj).__name__))
        try:
            view = memoryview(array.array(typecode, obj))
        except OverflowError as e:
            raise OverflowError("%s: an element is beyond %s (%s)" % (what, name, e)) from None
        except TypeError as e:
            raise TypeError("%s: expected a buffer of %s or a flat sequence of numbers, got %s "
                            "(%s)" % (what, name, type(obj).__name__, e)) from None
    else:
        fmt = view.format.lstrip(_NATIVE_PREFIXES)
        if (_FORMAT_KIND.get(fmt) != _TYPECODE_KIND[typecode]
                or view.itemsize != array.array(typecode).itemsize):
            raise TypeError("%s: expected %s elements, got a buffer of format %r (%d-byte items); "
                            "nothing is converted implicitly (numpy: .astype(numpy.%s))"
                            % (what, name, view.format, view.itemsize, name))
        if not view.c_contiguous:
            raise ValueError("%s: a C-contiguous buffer is needed, got a strided one (a slice or "
                             "a transpose); numpy.ascontiguousarray(x) makes a contiguous copy"
                             % what)
        if writable and view.readonly:
            raise TypeError("%s: expected a writable buffer, got a read-only one" % what)
    if shape is not None:
        count = 1
        for extent in shape:
            count *= extent
        if tuple(view.shape) != tuple(shape) and (view.ndim != 1 or view.shape[0] != count):
            raise ValueError("%s: expected %s of shape %s (or %d flat), got shape %s"
                             % (what, name, tuple(shape), count, tuple(view.shape)))
    make = ctypes.c_char * view.nbytes
    if view.nbytes == 0:  # memoryview cannot cast a shape with a zero extent
        keep = make()
    elif view.readonly:
        keep = make.from_buffer_copy(view.cast("B"))
    else:
        keep = make.from_buffer(view.cast("B"))
    return keep, tuple(view.shape)


def _optional(obj, typecode, what, shape):
    """_buffer's keep for an optional input (None stays None)."""
    return None if obj is None else _buffer(obj, typecode, what, shape)[0]


def _address(keep):
    return None if keep is None else ctypes.addressof(keep)


def _refuse_overlap(c, inputs):
    """ValueError when the output c shares a byte with one of inputs
    ((name, keep) pairs): the product would read what it has overwritten."""
    start, size = ctypes.addressof(c), ctypes.sizeof(c)
    for name, keep in inputs:
        if keep is None or not size or not ctypes.sizeof(keep):
            continue
        other = ctypes.addressof(keep)
        if start < other + ctypes.sizeof(keep) and other < start + size:
            raise ValueError("c shares memory with %s: the output must be a buffer apart from "
                             "the inputs" % name)


def _matrix(matrix):
    if not isinstance(matrix, Matrix):
        raise TypeError("expected a spforge.Matrix, got %s" % type(matrix).__name__)
    return matrix


def version():
    return lib().spf_version().decode()


class Matrix:
    """A sparse CSR matrix owned by the library; freed by close(), by leaving
    a with-block, or when collected (exactly once)."""

    def __init__(self, handle):
        self._lib = lib()  # kept so __del__ works during interpreter shutdown
        self._handle = handle

    @classmethod
    def _create(cls, fn, *args):
        out = ctypes.c_void_p()
        _check(fn(*args, ctypes.byref(out)))
        return cls(out)

    @classmethod
    def read(cls, path, seed=1, duplicates="reject", format="auto", values_path=None,
             npy_sparsity=None, max_bytes=None):
        """Read .mtx / .smtx / .npy (format from the file name unless given).
        max_bytes bounds the memory the read may allocate (None: the
        library's default, $SPFORGE_READ_MAX_BYTES or 4 GiB; negative: no
        limit); past it spforge.Error with status "out of memory".
        ValueError for a NUL in path or values_path or an unknown choice,
        TypeError / OverflowError for a seed that is not a uint64 or a
        max_bytes that is not an int64, spforge.Error for a file the
        library refuses."""
        options = _capi.ReadOptions()
        lib().spf_read_options_init(ctypes.byref(options))
        options.format = _choice(_FORMATS, format, "format")
        options.duplicates = _choice(_DUPLICATES, duplicates, "duplicates")
        _field(options, "seed", seed)
        if values_path is not None:
            options.values_path = _path(values_path, "values_path")
        if npy_sparsity is not None:
            _field(options, "npy_sparsity", npy_sparsity)
        if max_bytes is not None:
            _field(options, "max_bytes", max_bytes)
        return cls._create(lib().spf_matrix_read, _path(path, "path"), ctypes.byref(options))

    @classmethod
    def generate(cls, kind="uniform", rows=None, cols=None, sparsity=None, seed=None,
                 vector_length=None, n=None, m=None, rmat=None):
        """A synthetic matrix; arguments left None keep the library defaults
        (768 x 768, sparsity 0.9, seed 1, vector_length 4, 2:4, R-MAT
        (0.57, 0.19, 0.19)); rmat is the (a, b, c) triple. TypeError /
        OverflowError for a value that is not of its field's C type (rows,
        cols int64, seed uint64, vector_length, n, m int32, the others
        double), ValueError for an rmat of another length, spforge.Error
        for values the library refuses."""
        options = _capi.GenOptions()
        lib().spf_gen_options_init(ctypes.byref(options))
        options.kind = _choice(_GENERATORS, kind, "generator")
        for name, value in (("rows", rows), ("cols", cols), ("sparsity", sparsity),
                            ("seed", seed), ("vector_length", vector_length), ("n", n),
                            ("m", m)):
            if value is not None:
                _field(options, name, value)
        if rmat is not None:
            rmat = tuple(rmat)
            if len(rmat) != 3:
                raise ValueError("rmat: expected the triple (a, b, c), got %d values" % len(rmat))
            for name, value in zip(("rmat_a", "rmat_b", "rmat_c"), rmat):
                _field(options, name, value)
        return cls._create(lib().spf_matrix_generate, ctypes.byref(options))

    @classmethod
    def from_csr(cls, rows, cols, row_ptr, col_idx, values=None, seed=1):
        """Copy CSR arrays (row_ptr int64 rows + 1, col_idx int32 nnz,
        values float32 nnz or None for values drawn from seed; nnz is
        row_ptr[rows]), as _buffer takes them. TypeError / OverflowError for
        rows, cols (int64) or seed (uint64) of another type or range, and
        for arrays of another element type; ValueError for a negative rows
        or nnz, arrays of another length or strided ones; spforge.Error
        (SPF_ERR_INVALID_MATRIX) for arrays that break the CSR invariants or
        a NaN or infinite value, naming the row and column."""
        rows = _int(rows, "rows", ctypes.c_int64)
        cols = _int(cols, "cols", ctypes.c_int64)
        seed = _int(seed, "seed", ctypes.c_uint64)
        if rows < 0:
            raise ValueError("rows must be >= 0, got %d" % rows)
        rp = _buffer(row_ptr, "q", "row_ptr", (rows + 1,))[0]
        nnz = ctypes.cast(rp, ctypes.POINTER(ctypes.c_int64))[rows]
        if nnz < 0:
            raise ValueError("row_ptr[%d] = %d: nnz must be >= 0" % (rows, nnz))
        ci = _buffer(col_idx, "i", "col_idx", (nnz,))[0]
        va = _optional(values, "f", "values", (nnz,))
        return cls._create(lib().spf_matrix_create_csr, rows, cols, nnz,
                           ctypes.cast(rp, ctypes.POINTER(ctypes.c_int64)),
                           ctypes.cast(ci, ctypes.POINTER(ctypes.c_int32)),
                           None if va is None else ctypes.cast(va, ctypes.POINTER(ctypes.c_float)),
                           seed)

    def _ptr(self):
        if self._handle is None:
            raise ValueError("spforge.Matrix used after close()")
        return self._handle

    def close(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None:
            self._lib.spf_matrix_free(handle)

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def shape(self):
        return (lib().spf_matrix_rows(self._ptr()), lib().spf_matrix_cols(self._ptr()))

    @property
    def nnz(self):
        return lib().spf_matrix_nnz(self._ptr())

    def csr(self):
        """Copies of (row_ptr, col_idx, values) as array.array('q' / 'i' / 'f')."""
        m, nnz = self.shape[0], self.nnz
        out = []
        for fn, typecode, count in ((lib().spf_matrix_row_ptr, "q", m + 1),
                                    (lib().spf_matrix_col_idx, "i", nnz),
                                    (lib().spf_matrix_values, "f", nnz)):
            a = array.array(typecode)
            a.frombytes(ctypes.string_at(fn(self._ptr()), count * a.itemsize))
            out.append(a)
        return tuple(out)

    def stats(self):
        """Pattern statistics as a dict (hashes as 16-digit hex strings, as the
        CLI's --json prints them)."""
        s = _capi.MatrixStats()
        _check(lib().spf_matrix_stats_compute(self._ptr(), ctypes.byref(s)))
        d = {name: getattr(s, name) for name, _ in s._fields_}
        d["pattern_hash"] = "%016x" % s.pattern_hash
        d["values_hash"] = "%016x" % s.values_hash
        return d

    def write(self, path, format="auto"):
        """Write the matrix (spf_matrix_write: atomically). ValueError for a
        NUL in path or an unknown format, spforge.Error when writing fails."""
        _check(lib().spf_matrix_write(self._ptr(), _path(path, "path"),
                                      _choice(_FORMATS, format, "format")))

    def __repr__(self):
        if self._handle is None:
            return "<spforge.Matrix closed>"
        return "<spforge.Matrix %dx%d nnz=%d>" % (self.shape + (self.nnz,))


def reference_spmm(matrix, b, n, bias=None, relu=False, accumulate="f32", threads=0):
    """C = A·B (+ bias) (ReLU) on the host with the CPU reference: b is K×n
    row-major float32 (K×n or flat), bias M float32 or None, as _buffer
    takes them; returns M×n as array.array('f'), or array('d') from the
    float64 oracle when accumulate="f64". TypeError / OverflowError for an
    n (int64) or threads (int) of another type or range, a relu that is not
    a bool, or buffers of another element type; ValueError for a negative
    n, buffers of another shape or strided ones."""
    acc = _choice(_ACCUMULATE, accumulate, "accumulate")
    m, k = _matrix(matrix).shape
    n = _int(n, "n", ctypes.c_int64)
    relu, threads = _flag(relu, "relu"), _int(threads, "threads", ctypes.c_int)
    if n < 0:
        raise ValueError("n must be >= 0, got %d" % n)
    bb = _buffer(b, "f", "b", (k, n))[0]
    bi = _optional(bias, "f", "bias", (m,))
    c = array.array("d" if acc else "f", bytes(m * n * (8 if acc else 4)))
    cc = _buffer(c, c.typecode, "c", writable=True)[0]
    if acc:
        st = lib().spf_reference_spmm_f64(matrix._ptr(), n, _address(bb), _address(cc),
                                          _address(bi), relu, threads)
    else:
        st = lib().spf_reference_spmm(matrix._ptr(), n, _address(bb), _address(cc),
                                      _address(bi), relu, acc, threads)
    _check(st)
    return c


def relative_error(c, ref):
    """‖c − ref‖_F / ‖ref‖_F with c float32 and ref float64 (as _buffer
    takes them) of the same number of elements, and of the same shape when
    both have more than one dimension: ValueError otherwise, TypeError for
    another element type."""
    cc, c_shape = _buffer(c, "f", "c")
    rr, ref_shape = _buffer(ref, "d", "ref")
    count = ctypes.sizeof(cc) // 4
    if ctypes.sizeof(rr) // 8 != count or (len(c_shape) > 1 and len(ref_shape) > 1
                                           and c_shape != ref_shape):
        raise ValueError("ref: expected c's shape %s (or %d flat), got shape %s"
                         % (c_shape, count, ref_shape))
    return lib().spf_relative_error(_address(cc), _address(rr), count)


def device_info(device=0):
    """What spf_device_query reports, as a dict (available False with a
    reason on a machine without a usable GPU). TypeError / OverflowError for
    a device that is not an int."""
    d = _capi.DeviceInfo()
    _check(lib().spf_device_query(_int(device, "device", ctypes.c_int), ctypes.byref(d)))
    out = {name: getattr(d, name) for name, _ in d._fields_}
    out["available"] = bool(d.available)
    out["name"] = d.name.decode("utf-8", "replace")
    out["reason"] = d.reason.decode("utf-8", "replace")
    return out


class Plan:
    """A compiled SpMM for one matrix and one n (spf_plan_create); the matrix
    is only read during construction. TypeError / OverflowError for an n
    (int64), device, host_threads or search_top_k (int) or config values
    (int32) of another type or range, or a flag that is not a bool;
    ValueError for an unknown choice, a flag integer other than 0 / 1 or a
    config without exactly the fields m1, n1, v, prefetch, ksplit;
    spforge.Error for options the library refuses."""

    def __init__(self, matrix, n, strategy="auto", dtype="f32", bias=False, relu=False,
                 device=0, verify=True, exhaustive=False, tune_space="compact", config=None,
                 host_threads=0, reorder=False, math="default", b_layout="n_last",
                 c_layout="n_last", dense=True, search=False, search_top_k=0,
                 search_proxies=True, cache=True):
        self._lib = lib()
        self._handle = None
        options = _capi.PlanOptions()
        lib().spf_plan_options_init(ctypes.byref(options))
        options.strategy = _named("strategy", strategy)
        options.dtype = _named("dtype", dtype)
        options.math = _named("math", math)
        options.b_layout = _named("layout", b_layout)
        options.c_layout = _named("layout", c_layout)
        for name, value in (("dense", dense), ("bias", bias),
                            ("relu", relu), ("verify", verify), ("exhaustive", exhaustive),
                            ("reorder", reorder), ("search", search),
                            ("search_proxies", search_proxies), ("cache", cache)):
            setattr(options, name, _flag(value, name))
        options.tune_space = _choice(_TUNE_SPACES, tune_space, "tune space")
        for name, value in (("device", device), ("host_threads", host_threads),
                            ("search_top_k", search_top_k)):
            _field(options, name, value)
        if config is not None:
            if sorted(config) != sorted(_CONFIG_FIELDS):
                raise ValueError("config: expected exactly the fields %s, got %s"
                                 % (", ".join(_CONFIG_FIELDS), ", ".join(map(str, config))))
            cfg = _capi.KernelConfig()
            for name in _CONFIG_FIELDS:
                _field(cfg, name, config[name], "config[%r]" % name)
            options.config = ctypes.pointer(cfg)
        n = _int(n, "n", ctypes.c_int64)
        out = ctypes.c_void_p()
        _check(lib().spf_plan_create(_matrix(matrix)._ptr(), n, ctypes.byref(options),
                                     ctypes.byref(out)))
        self._handle = out
        self.shape = matrix.shape
        self.n, self.has_bias = n, bool(options.bias)
        info = self.info()
        self.strategy, self.dtype = info["strategy"], info["dtype"]
        self.b_layout, self.c_layout = info["b_layout"], info["c_layout"]

    def execute(self, b, c, bias=None, stream=0):
        """Run C = A·B (+ bias) on stream (an int, 0 for the default).
        GPU plans: b, c, bias are device pointers (ints; TypeError for
        anything else, OverflowError beyond a pointer). CPU plans: host
        buffers as _buffer takes them; b K×n and c M×n float32 (n×K and n×M
        in the n_first layouts; or flat), c writable, never copied, bias M
        float32; ValueError when c shares
        memory with b or bias. ValueError for a bias given to a plan made
        without one or missing from one made with it. spforge.Error for what
        the library refuses (it, too, refuses a c overlapping b or bias)."""
        m, k = self.shape
        if self.has_bias != (bias is not None):
            raise ValueError("bias %s, but the plan was made with bias=%s"
                             % ("given" if bias is not None else "missing", self.has_bias))
        stream = _int(stream, "stream", ctypes.c_void_p)
        if self.strategy == "cpu":
            b_shape = (k, self.n) if self.b_layout == "n_last" else (self.n, k)
            c_shape = (m, self.n) if self.c_layout == "n_last" else (self.n, m)
            keep = (_buffer(b, "f", "b", b_shape)[0],
                    _buffer(c, "f", "c", c_shape, writable=True)[0],
                    _optional(bias, "f", "bias", (m,)))
            _refuse_overlap(keep[1], (("b", keep[0]), ("bias", keep[2])))
            args = [_address(x) for x in keep]
        else:
            args = [None if x is None else _int(x, name, ctypes.c_void_p)
                    for name, x in (("b", b), ("c", c), ("bias", bias))]
            if args[0] is None or args[1] is None:
                raise TypeError("GPU plans take device pointers for b and c as ints (e.g. "
                                "tensor.data_ptr()), got None")
        _check(lib().spf_plan_execute(self._ptr(), *args, stream or None))

    def info(self):
        """The plan's spf_plan_info as a dict: names for the enums, the
        strategy's configuration by name, the planner's candidates as a list
        of dicts (strategy, outcome, estimate_us, kernel_us, detail)."""
        i = _capi.PlanInfo()
        i.size = ctypes.sizeof(i)
        _check(lib().spf_plan_get_info(self._ptr(), ctypes.byref(i)))
        out = {name: getattr(i, name) for name, _ in i._fields_ if name != "size"}
        for kind, name in (("strategy", "strategy"), ("dtype", "dtype"), ("math", "math"),
                           ("layout", "b_layout"), ("layout", "c_layout")):
            out[name] = _name(kind, getattr(i, name))
        out["config"] = i.config.decode("utf-8", "replace")
        out["kernel_name"] = i.kernel_name.decode("utf-8", "replace")
        out["assembler"] = i.assembler.decode("utf-8", "replace")
        out["candidates"] = [{"strategy": _name("strategy", c.strategy),
                              "outcome": _name("candidate_outcome", c.outcome),
                              "estimate_us": c.estimate_us,
                              "kernel_us": c.kernel_us,
                              "detail": c.detail.decode("utf-8", "replace")}
                             for c in i.candidates[:i.candidate_count]]
        del out["candidate_count"]
        out["search"] = {name: getattr(i.search, name) for name, _ in i.search._fields_}
        out["from_cache"] = bool(i.from_cache)
        return out

    def _ptr(self):
        if self._handle is None:
            raise ValueError("spforge.Plan used after close()")
        return self._handle

    def close(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None:
            self._lib.spf_plan_free(handle)

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
