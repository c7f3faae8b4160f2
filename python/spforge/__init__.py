"""spforge: a thin ctypes binding of libspforge (include/spforge.h).

Host arrays are any buffer-protocol object of the right element type (array.array,
numpy arrays, memoryview, ...) or a plain sequence, which is converted; numpy is not
required. GPU plans take device pointers as integers (torch's tensor.data_ptr(),
cupy's array.data.ptr). The library is $SPF_LIB, else build/libspforge.so in the
repository, else whatever ctypes.util.find_library("spforge") finds.
"""

import array
import ctypes
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
_STRATEGIES = {"auto": 0, "unrolled": 1, "generic": 2, "cpu": 3}
_DTYPES = {"f32": 0, "f16": 1, "bf16": 2}
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


# Buffer formats (without a native byte-order prefix) by element kind.
_FORMAT_KIND = {c: "int" for c in "bhilqn"}
_FORMAT_KIND.update({"f": "float", "d": "float", "e": "float"})
_TYPECODE_KIND = {"q": "int", "i": "int", "f": "float", "d": "float"}
_NATIVE_PREFIXES = "@=" + ("<" if sys.byteorder == "little" else ">")


def _matching_view(obj, typecode):
    """obj as a flat byte memoryview if it is a C-contiguous native buffer of
    typecode's element kind and size, else None."""
    try:
        view = memoryview(obj)
    except TypeError:
        return None
    if (_FORMAT_KIND.get(view.format.lstrip(_NATIVE_PREFIXES)) != _TYPECODE_KIND[typecode]
            or view.itemsize != array.array(typecode).itemsize or not view.c_contiguous):
        return None
    return view.cast("B")


def _host(obj, typecode, what, count=None, writable=False):
    """A ctypes byte array over obj's elements of typecode and their count.
    Without a copy when obj is a matching writable buffer; otherwise inputs are
    converted (a copy) and outputs refused. count, if given, must match.
    Keep the result alive for the duration of the C call."""
    view = _matching_view(obj, typecode)
    if view is None or view.readonly:
        if writable:
            raise TypeError("%s: expected a writable contiguous buffer of %s elements"
                            % (what, {"f": "float32", "d": "float64"}[typecode]))
        if view is None:
            view = memoryview(array.array(typecode, obj)).cast("B")
    size = array.array(typecode).itemsize
    if count is not None and view.nbytes != count * size:
        raise ValueError("%s: expected %d elements, got %d" % (what, count, view.nbytes // size))
    make = ctypes.c_char * view.nbytes
    return (make.from_buffer_copy(view) if view.readonly else make.from_buffer(view),
            view.nbytes // size)


def _input(obj, typecode, count, what):
    """_host for an optional input of count elements (None stays None)."""
    return None if obj is None else _host(obj, typecode, what, count)[0]


def _address(keep):
    return None if keep is None else ctypes.addressof(keep)


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
             npy_sparsity=None):
        """Read .mtx / .smtx / .npy (format from the file name unless given)."""
        options = _capi.ReadOptions()
        lib().spf_read_options_init(ctypes.byref(options))
        options.format = _choice(_FORMATS, format, "format")
        options.duplicates = _choice(_DUPLICATES, duplicates, "duplicates")
        options.seed = seed
        if values_path is not None:
            options.values_path = os.fsencode(values_path)
        if npy_sparsity is not None:
            options.npy_sparsity = npy_sparsity
        return cls._create(lib().spf_matrix_read, os.fsencode(path), ctypes.byref(options))

    @classmethod
    def generate(cls, kind="uniform", rows=None, cols=None, sparsity=None, seed=None,
                 vector_length=None, n=None, m=None, rmat=None):
        """A synthetic matrix; arguments left None keep the library defaults
        (768 x 768, sparsity 0.9, seed 1, vector_length 4, 2:4, R-MAT
        (0.57, 0.19, 0.19)); rmat is the (a, b, c) triple."""
        options = _capi.GenOptions()
        lib().spf_gen_options_init(ctypes.byref(options))
        options.kind = _choice(_GENERATORS, kind, "generator")
        for name, value in (("rows", rows), ("cols", cols), ("sparsity", sparsity),
                            ("seed", seed), ("vector_length", vector_length), ("n", n),
                            ("m", m)):
            if value is not None:
                setattr(options, name, value)
        if rmat is not None:
            options.rmat_a, options.rmat_b, options.rmat_c = rmat
        return cls._create(lib().spf_matrix_generate, ctypes.byref(options))

    @classmethod
    def from_csr(cls, rows, cols, row_ptr, col_idx, values=None, seed=1):
        """Copy CSR arrays (row_ptr int64 rows + 1, col_idx int32, values
        float32 or None for values drawn from seed)."""
        if rows < 0:
            raise ValueError("rows must be >= 0, got %d" % rows)
        rp = _input(row_ptr, "q", rows + 1, "row_ptr")
        nnz = ctypes.cast(rp, ctypes.POINTER(ctypes.c_int64))[rows]
        ci = _input(col_idx, "i", nnz, "col_idx")
        va = _input(values, "f", nnz, "values")
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
        _check(lib().spf_matrix_write(self._ptr(), os.fsencode(path),
                                      _choice(_FORMATS, format, "format")))

    def __repr__(self):
        if self._handle is None:
            return "<spforge.Matrix closed>"
        return "<spforge.Matrix %dx%d nnz=%d>" % (self.shape + (self.nnz,))


def reference_spmm(matrix, b, n, bias=None, relu=False, accumulate="f32", threads=0):
    """C = A·B (+ bias) (ReLU) on the host with the CPU reference: b is K×n
    row-major float32; returns M×n as array.array('f'), or array('d') from the
    float64 oracle when accumulate="f64"."""
    acc = _choice(_ACCUMULATE, accumulate, "accumulate")
    m, k = matrix.shape
    if n < 0:
        raise ValueError("n must be >= 0, got %d" % n)
    bb = _input(b, "f", k * n, "b")
    bi = _input(bias, "f", m, "bias")
    c = array.array("d" if acc else "f", bytes(m * n * (8 if acc else 4)))
    cc = _host(c, c.typecode, "c", writable=True)[0]
    if acc:
        st = lib().spf_reference_spmm_f64(matrix._ptr(), n, _address(bb), _address(cc),
                                          _address(bi), int(bool(relu)), threads)
    else:
        st = lib().spf_reference_spmm(matrix._ptr(), n, _address(bb), _address(cc),
                                      _address(bi), int(bool(relu)), acc, threads)
    _check(st)
    return c


def relative_error(c, ref):
    """‖c − ref‖_F / ‖ref‖_F with c float32 and ref float64 (any lengths that match)."""
    cc, count = _host(c, "f", "c")
    rr = _input(ref, "d", count, "ref")
    return lib().spf_relative_error(_address(cc), _address(rr), count)


def device_info(device=0):
    """What spf_device_query reports, as a dict (available False with a
    reason on a machine without a usable GPU)."""
    d = _capi.DeviceInfo()
    _check(lib().spf_device_query(device, ctypes.byref(d)))
    out = {name: getattr(d, name) for name, _ in d._fields_}
    out["available"] = bool(d.available)
    out["name"] = d.name.decode("utf-8", "replace")
    out["reason"] = d.reason.decode("utf-8", "replace")
    return out


class Plan:
    """A compiled SpMM for one matrix and one n (spf_plan_create); the matrix
    is only read during construction."""

    def __init__(self, matrix, n, strategy="auto", dtype="f32", bias=False, relu=False,
                 device=0, verify=True, exhaustive=False, tune_space="compact", config=None,
                 host_threads=0, reorder=False, f16x2_accumulate=False, search=False,
                 search_top_k=0, search_proxies=True, cache=True):
        self._lib = lib()
        self._handle = None
        options = _capi.PlanOptions()
        lib().spf_plan_options_init(ctypes.byref(options))
        options.strategy = _choice(_STRATEGIES, strategy, "strategy")
        options.dtype = _choice(_DTYPES, dtype, "dtype")
        options.f16x2_accumulate = int(bool(f16x2_accumulate))
        options.bias, options.relu = int(bool(bias)), int(bool(relu))
        options.device, options.verify = device, int(bool(verify))
        options.exhaustive = int(bool(exhaustive))
        options.tune_space = _choice(_TUNE_SPACES, tune_space, "tune space")
        options.host_threads, options.reorder = host_threads, int(bool(reorder))
        options.search, options.search_top_k = int(bool(search)), search_top_k
        options.search_proxies, options.cache = int(bool(search_proxies)), int(bool(cache))
        if config is not None:
            cfg = _capi.KernelConfig(*(config[f] for f in _CONFIG_FIELDS))
            options.config = ctypes.pointer(cfg)
        out = ctypes.c_void_p()
        _check(lib().spf_plan_create(matrix._ptr(), n, ctypes.byref(options), ctypes.byref(out)))
        self._handle = out
        self.shape = matrix.shape
        self.n, self.dtype, self.has_bias = n, dtype, bool(bias)
        self.strategy = self.info()["strategy"]

    def execute(self, b, c, bias=None, stream=0):
        """Run C = A·B (+ bias) on stream. GPU plans: b, c, bias are device
        pointers (ints). CPU plans: host buffers; b K×n and c M×n float32, c
        writable, bias M float32."""
        m, k = self.shape
        if self.has_bias != (bias is not None):
            raise ValueError("bias %s, but the plan was made with bias=%s"
                             % ("given" if bias is not None else "missing", self.has_bias))
        if self.strategy == "cpu":
            if self.dtype != "f32":
                raise ValueError("CPU plans take float32 buffers")
            keep = (_input(b, "f", k * self.n, "b"),
                    _host(c, "f", "c", m * self.n, writable=True)[0],
                    _input(bias, "f", m, "bias"))
            args = [_address(x) for x in keep]
        else:
            args = [b, c, bias]
            if not all(x is None or isinstance(x, int) for x in args):
                raise TypeError("GPU plans take device pointers as ints (e.g. tensor.data_ptr())")
        _check(lib().spf_plan_execute(self._ptr(), *args, stream or None))

    def info(self):
        i = _capi.PlanInfo()
        _check(lib().spf_plan_get_info(self._ptr(), ctypes.byref(i)))
        out = {name: getattr(i, name) for name, _ in i._fields_}
        out["strategy"] = next(k for k, v in _STRATEGIES.items() if v == i.strategy)
        out["config"] = {f: getattr(i.config, f) for f in _CONFIG_FIELDS}
        out["kernel_name"] = i.kernel_name.decode("utf-8", "replace")
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
