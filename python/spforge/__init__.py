"""spforge: a thin ctypes binding of libspforge (include/spforge.h).

Matrices: spforge.Matrix(x) converts a scipy.sparse matrix or array (any
format), a torch sparse CSR / COO tensor, or a dense 2-D weight (numpy,
torch on cpu or cuda, cupy, DLPack, nested lists) with threshold= or mask=
(that conversion needs numpy); Matrix.read / generate / from_csr / from_coo
take files, generators and plain buffers without numpy.

Arrays (B, C, bias): host plans take host arrays (numpy, cpu tensors,
array.array, memoryview, DLPack, or, for inputs, a flat sequence of
numbers, which is converted); device plans take device arrays (cuda
tensors, cupy, anything with __cuda_array_interface__ or a CUDA DLPack
capsule) or device pointers as integers. Each is of exactly the element
type asked for (float32, or the plan's float16 / bfloat16), C-contiguous,
on the plan's device, of the shape asked for or flat (_convert.py). Results
are of the caller's kind: numpy for numpy, torch for torch (on its device),
cupy for cupy, array.array for buffers and sequences. A @ B runs a plan
(kept on the matrix) on B's device and returns C likewise; dtype names are
the library's ("f32", "f16", "bf16") or numpy's and torch's ("float32",
"float16", "bfloat16", torch.float16, numpy.float16). numpy is not required
for any of this.

The library is the libspforge.so beside this file (an installed package),
else $SPF_LIB, else build/libspforge.so in the repository, else whatever
ctypes.util.find_library("spforge") finds (spforge._capi.path: the one
loaded).

Progress: making a plan can take minutes (search, tuning, compiling).
Plan(..., progress=fn) calls fn with a ProgressEvent for each stage begun,
advanced and ended, on the calling thread; a true return value or an
exception stops the plan (spforge.Cancelled, or the exception). The
module's hook, set_progress(), serves plans made without progress= (A @ B's
too): set_progress() sends the events to the logger "spforge" (INFO, steps
at DEBUG), set_progress(fn) to fn, set_progress(None) nowhere (the start).

Every argument is checked before it reaches ctypes, which would otherwise
convert silently (wrap an integer, cut a path at a NUL, read a buffer of
another type or shape): TypeError for the wrong kind of value (a bool or a
float for an integer, float64 for float32, None for a buffer, a read-only
output), OverflowError for an integer beyond its C type (an index beyond
int32 included), ValueError for a wrong value (a shape or length, a strided
array, an array on another device, a NUL in a path, an output sharing
memory with an input); spforge.Error for what the library refuses.
"""

from __future__ import annotations

import array
import collections
import ctypes
import errno
import logging
import numbers
import os
import threading
from typing import Any, Callable, Dict, Optional, Tuple, Union

from . import _capi, _convert
from ._capi import lib

__all__ = ["Error", "Cancelled", "Matrix", "Plan", "ProgressEvent", "set_progress",
           "log_progress", "set_log", "reference_spmm", "relative_error", "device_info",
           "cached_plan_info", "note_cached_plan", "MatrixName", "version"]

_DUPLICATES = {"reject": 0, "sum": 1}
_FORMATS = {"auto": 0, "mtx": 1, "smtx": 2, "npy": 3}
# The CLI's names too (spforge gen --kind): colvec, and 2:4 for V:N:M with V = 1, N:M = 2:4.
_GENERATORS = {"uniform": 0, "magnitude": 1, "column_vector": 2, "colvec": 2, "vnm": 3, "2:4": 3,
               "rmat": 4}
_ACCUMULATE = {"f32": 0, "f64": 1}
_TUNE_SPACES = {"compact": 0, "full": 1}
_CONFIG_FIELDS = ("m1", "n1", "v", "prefetch", "ksplit")
# spf_timing: how a plan times its candidates (weights cold, the default, or hot).
_WEIGHTS = {"cold": 0, "hot": 1}


class Error(Exception):
    """A failing spforge call: status (the negative spf_status), name
    (spf_status_string) and detail (spf_last_error, naming the function and,
    for files, the file and line). Where a builtin exception says the same,
    the error is that one too, so that the usual except clauses catch it:
    InvalidArgument (ValueError: a bad argument, a malformed file or
    matrix), Overflow (OverflowError), OutOfMemory (MemoryError), IOFailure
    (OSError, with errno where the library named the system's error:
    FileNotFound is also FileNotFoundError, PermissionDenied
    PermissionError), Cancelled."""

    def __init__(self, status: int, name: str, detail: str) -> None:
        super().__init__("%s: %s" % (name, detail))
        self.status, self.name, self.detail = status, name, detail

    def __str__(self):  # (OSError's own would give errno and strerror alone)
        return "%s: %s" % (self.name, self.detail)


class Cancelled(Error):
    """spf_plan_create stopped because the progress callback asked it to
    (returned a true value): status SPF_ERR_CANCELLED, nothing built."""


class InvalidArgument(Error, ValueError):
    """An argument, a file's contents or a matrix the library refuses
    (statuses invalid argument, parse, invalid matrix)."""


class Overflow(Error, OverflowError):
    """A size beyond int32 indices or int64 byte counts."""


class OutOfMemory(Error, MemoryError):
    """An allocation failed, or a read's memory bound was reached."""


class IOFailure(Error, OSError):
    """A file could not be opened, read or written; errno and strerror are
    set where the library's message ends with the system's reason."""


class FileNotFound(IOFailure, FileNotFoundError):
    """IOFailure of a file or folder that does not exist (ENOENT)."""


class PermissionDenied(IOFailure, PermissionError):
    """IOFailure for want of permission (EACCES, EPERM)."""


_CANCELLED, _IO = -13, -3  # SPF_ERR_CANCELLED, SPF_ERR_IO
_ERRORS = {-1: InvalidArgument, -2: OutOfMemory, -4: InvalidArgument, -6: Overflow,
           -7: InvalidArgument, _CANCELLED: Cancelled}
_IO_ERRORS = {errno.ENOENT: FileNotFound, errno.EACCES: PermissionDenied,
              errno.EPERM: PermissionDenied}


# The C names a library message may suggest, as this binding's arguments spell them.
_PYTHON_TERMS = (("SPF_STRATEGY_CPU", 'strategy="cpu"'), ("SPF_DUPLICATES_SUM", 'duplicates="sum"'),
                 ("duplicates = SUM", 'duplicates="sum"'))


def _error(status, name, detail):
    """The exception of a failing status (Error's classes), its detail in
    the binding's terms where it names a C option."""
    for c_name, python_name in _PYTHON_TERMS:
        detail = detail.replace(c_name, python_name)
    if status != _IO:
        return _ERRORS.get(status, Error)(status, name, detail)
    # the library's messages end with strerror(errno): "...: No such file or directory"
    code = next((e for e in sorted(errno.errorcode) if detail.endswith(": " + os.strerror(e))),
                None)
    error = _IO_ERRORS.get(code, IOFailure)(status, name, detail)
    if code is not None:
        error.errno, error.strerror = code, os.strerror(code)
    return error


def _check(status):
    if status != 0:
        # Read the detail first: it is per-thread and valid until the next call.
        detail = lib().spf_last_error().decode("utf-8", "replace")
        name = lib().spf_status_string(status).decode("utf-8", "replace")
        raise _error(status, name, detail)


class _Handle:
    """One C object (a matrix or a plan) shared by the Python objects that
    own it, freed exactly once: when its last owner has let go (close(), a
    with-block's end, collection) and no call using it is in flight. Every C
    call on it runs inside `with handle as ptr:`, so a close() from another
    thread, or from a progress callback of a call that uses it, waits for
    that call to return instead of freeing memory under it. ctypes releases
    the GIL during calls, hence the lock."""

    __slots__ = ("_ptr", "_free", "_kind", "_lock", "_owners", "_calls")

    def __init__(self, ptr, free, kind):
        self._ptr, self._free, self._kind = ptr, free, kind
        self._lock = threading.Lock()
        self._owners, self._calls = 1, 0

    def retain(self):
        """Another owner (a copy of a plan): the handle lives until it lets go too."""
        with self._lock:
            if self._owners == 0:
                _closed(self._kind)
            self._owners += 1
        return self

    def _take_if_unused(self):
        if self._owners or self._calls:
            return None
        ptr, self._ptr = self._ptr, None
        return ptr

    def release(self):
        """One owner lets go (the object's close())."""
        with self._lock:
            self._owners -= 1
            ptr = self._take_if_unused()
        if ptr is not None:
            self._free(ptr)

    def __enter__(self):
        with self._lock:
            if self._owners == 0:
                _closed(self._kind)
            self._calls += 1
            return self._ptr

    def __exit__(self, *exc):
        with self._lock:
            self._calls -= 1
            ptr = self._take_if_unused()
        if ptr is not None:
            self._free(ptr)

    def __del__(self):  # every owner is gone, so no call is in flight
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr is not None:
            self._free(ptr)


def _closed(kind):
    raise ValueError("spforge.%s used after close()" % kind)


# ------------------------------------------------------------ progress

ProgressEvent = collections.namedtuple(
    "ProgressEvent", "stage phase depth done total elapsed_s stage_s status text")
ProgressEvent.__doc__ = """One progress event of a plan being made (spf_progress in spforge.h):
stage ("plan", "candidates", "build", "time", "reference", "reorder",
"constraints", "rank", "proxies", "final", "tune", "compile", "verify"),
phase ("begin", "step", "end"), depth (plan 0, a stage inside it 1, ...),
done of total units, elapsed_s since the plan began, stage_s since the
stage began, status (0, or in an "end" event how the stage ended: a
negative spf_status; the plan's own "end" is the last event and carries
the result) and text (what the stage works on: a strategy, a kernel)."""

_PHASES = ("begin", "step", "end")
_progress_hook = None
_logger = logging.getLogger("spforge")


def log_progress(event: ProgressEvent) -> None:
    """The progress hook "logging": each event on the logger "spforge",
    "begin" and "end" at INFO, "step" at DEBUG, e.g.
    "compile 3/16 (1.20 s): spf_unrolled_f32_m32_n64_v1_p2_k4"."""
    level = logging.DEBUG if event.phase == "step" else logging.INFO
    if not _logger.isEnabledFor(level):
        return
    how = "" if event.status == 0 else ": %s" % lib().spf_status_string(event.status).decode()
    _logger.log(level, "%s%s %s %d/%d (%.2f s)%s: %s", "  " * event.depth, event.stage,
                event.phase, event.done, event.total, event.elapsed_s, how, event.text)


def set_progress(hook: Union[Callable[[ProgressEvent], Any], str, None] = "logging") -> Any:
    """Where plans report their progress when made with progress=None (the
    default, A @ B's plans included): a callable taking a ProgressEvent,
    "logging" (the default: log_progress, the logger "spforge"), or None
    (nothing reported, the initial state). Returns the previous hook.
    TypeError for anything else. The hook is called on the thread making
    the plan, inside Plan(); see Plan's progress."""
    global _progress_hook
    if hook is not None and hook != "logging" and not callable(hook):
        raise TypeError("progress hook: expected a callable, \"logging\" or None, got %r"
                        % (hook,))
    previous, _progress_hook = _progress_hook, hook
    return previous


# ----------------------------------------------------------------- log

_LOG_LEVELS = ("debug", "info", "warn")
_log_hook = None   # what set_log installed: None, "logging" or a callable
_log_c = None      # its C function, kept alive while installed


def _log_logging(level, message):
    _logger.log({"debug": logging.DEBUG, "info": logging.INFO}.get(level, logging.WARNING),
                "%s", message)


def _log_forward(level, message, user):
    hook = _log_logging if _log_hook == "logging" else _log_hook
    if hook is None:
        return
    try:
        hook(_LOG_LEVELS[level] if 0 <= level < len(_LOG_LEVELS) else "warn",
             (message or b"").decode("utf-8", "replace"))
    except Exception:  # a C callback cannot raise: the message is dropped, the plan goes on
        pass


def set_log(hook: Union[Callable[[str, str], Any], str, None] = "logging") -> Any:
    """Where the library's log messages go (spf_set_log_callback: what the
    planner built, timed and chose, and why): "logging" (the logger
    "spforge", "debug" at DEBUG, "info" at INFO, "warn" at WARNING), a
    callable taking (level, message) with level "debug", "info" or "warn",
    or None (dropped: the initial state). Process-wide, from any thread;
    an exception the callable raises drops that message. Returns the
    previous hook. TypeError for anything else."""
    global _log_hook, _log_c
    if hook is not None and hook != "logging" and not callable(hook):
        raise TypeError("log hook: expected a callable, \"logging\" or None, got %r" % (hook,))
    previous = _log_hook
    if hook is None:
        lib().spf_set_log_callback(_capi.LogFn(), None)
        _log_hook, _log_c = None, None
    else:
        _log_hook = hook
        if _log_c is None:
            _log_c = _capi.LogFn(_log_forward)
            lib().spf_set_log_callback(_log_c, None)
    return previous


def _event(p):
    return ProgressEvent(_name("stage", p.stage),
                         _PHASES[p.phase] if 0 <= p.phase < len(_PHASES) else "?", p.depth,
                         p.done, p.total, p.elapsed_s, p.stage_s, p.status,
                         (p.text or b"").decode("utf-8", "replace"))


class _Forward:
    """The C callback of one spf_plan_create: events to hook as
    ProgressEvents; a true return value cancels; an exception cancels and
    is kept for Plan() to raise (the hook is not called again)."""

    def __init__(self, hook):
        self.hook = log_progress if hook == "logging" else hook
        self.error = None
        self.c_function = _capi.ProgressFn(self)  # kept alive through the call

    def __call__(self, event, user):
        if self.error is not None:
            return 1
        try:
            return 1 if self.hook(_event(event.contents)) else 0
        except BaseException as e:  # KeyboardInterrupt too: the plan stops, then it is raised
            self.error = e
            return 1


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
    if "\0" in value:  # C would read the name only up to it
        raise ValueError("%s: the name %r contains a NUL character" % (kind, value))
    out = _capi.c_enum()
    status = getattr(lib(), "spf_%s_from_name" % kind)(value.encode(), ctypes.byref(out))
    if status != 0:
        raise ValueError(lib().spf_last_error().decode("utf-8", "replace"))
    return out.value


def _name(kind, value):
    return getattr(lib(), "spf_%s_name" % kind)(value).decode()


_int = _convert.integer


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


def _matrix(matrix):
    """matrix, or a Matrix converted from a scipy.sparse matrix, a tensor or
    a dense array (Matrix(matrix); freed when dropped). TypeError for None,
    a number, a string or an object of no kind Matrix converts."""
    if isinstance(matrix, Matrix):
        return matrix
    if matrix is None or isinstance(matrix, (bool, numbers.Number, str, bytes)):
        raise TypeError("expected a spforge.Matrix (or a scipy.sparse matrix, a tensor, an "
                        "array), got %s" % type(matrix).__name__)
    return Matrix(matrix)


def version() -> str:
    return lib().spf_version().decode()


def __getattr__(name):
    """spforge.__version__: the library's version (spf_version), read when
    asked, so that importing spforge loads nothing."""
    if name == "__version__":
        return version()
    raise AttributeError("module 'spforge' has no attribute %r" % name)


_MATMUL_PLANS = 8  # the plans A @ B keeps per matrix, least recently used dropped first


class Matrix:
    """A sparse CSR matrix with float32 values, owned by the library; freed
    by close(), by leaving a with-block, or when collected (exactly once).

    Matrix(x) converts x (a copy): a scipy.sparse matrix or array of any
    format (its stored entries; repeated entries as duplicates says), a
    torch sparse CSR or COO tensor on any device, another Matrix, or a
    dense 2-D array of any kind (numpy, torch on cpu or cuda, cupy,
    DLPack, nested lists) keeping the entries where mask is nonzero, else
    those with |x| > threshold, else the nonzeros. Values of float16,
    bfloat16, float32 or float64 (rounded to float32). Needs numpy, except
    for another Matrix. TypeError for a kind it cannot read or values of
    another type (integers, complex), ValueError for a shape that is not
    2-D, a mask of another shape, both threshold and mask, or threshold or
    mask with a sparse x, OverflowError for indices or a shape beyond
    int32, spforge.Error for entries the library refuses (a NaN or
    infinite value, repeated entries under duplicates="reject").

    A @ B: C = A·B on B's side, returned of B's kind: a host B (numpy,
    a cpu tensor, array.array; float32) runs a host plan, a device B (a
    cuda tensor, cupy; float32, float16 or bfloat16) a plan on its device
    (AUTO, built on first use and kept with the matrix for each n, dtype,
    device and layout). B is K×N C-contiguous, or the transpose of an N×K
    C-contiguous array (X.T): then C is the transpose of an N×M array, so
    (A @ X.T).T is X·Aᵀ with nothing copied; a 1-D B of K gives C of M."""

    __array_ufunc__ = None  # numpy: x @ A is Matrix.__rmatmul__, not an object array

    def __init__(self, source: Any, threshold: Optional[float] = None, mask: Any = None,
                 duplicates: str = "reject") -> None:
        self._handle = None
        self._plans = collections.OrderedDict()
        self._plans_lock = threading.Lock()
        if isinstance(source, ctypes.c_void_p):  # a handle the library made (_create)
            self._own(source)
            return
        out = ctypes.c_void_p()
        if isinstance(source, Matrix):
            if threshold is not None or mask is not None:
                raise ValueError("threshold and mask select entries of a dense matrix; a "
                                 "spforge.Matrix is sparse already")
            with source._use() as ptr:
                _check(lib().spf_matrix_clone(ptr, ctypes.byref(out)))
            self._own(out)
            return
        policy = _choice(_DUPLICATES, duplicates, "duplicates")
        form, (rows, cols), first, second, values = _convert.to_sparse(source, threshold, mask)
        if form == "csr":
            nnz = int(first[-1])
            if nnz > len(second) or nnz > len(values):
                raise ValueError("matrix: row offsets end at %d, past the %d column indices and "
                                 "%d values given" % (nnz, len(second), len(values)))
            second, values = second[:nnz], values[:nnz]
            keep = (_convert.host(first, "row_ptr", "int64", (rows + 1,)),
                    _convert.host(second, "col_idx", "int32", (nnz,)),
                    _convert.host(values, "values", "float32", (nnz,)))
            _check(lib().spf_matrix_create_csr(rows, cols, nnz, *[op.ptr for op in keep], 1,
                                               ctypes.byref(out)))
        else:
            nnz = len(values)
            keep = [_convert.host(x, name, dtype, (nnz,)) for x, name, dtype in (
                (first, "row_idx", "int32"), (second, "col_idx", "int32"),
                (values, "values", "float32"))]
            _check(lib().spf_matrix_create_coo(rows, cols, nnz, *[op.ptr for op in keep],
                                               policy, 1, ctypes.byref(out)))
        self._own(out)

    def _own(self, ptr):
        # the library's free function kept, so collection works during
        # interpreter shutdown
        self._handle = _Handle(ptr, lib().spf_matrix_free, "Matrix")

    def _use(self):
        """The handle, to use as `with matrix._use() as ptr:` around a C call."""
        return self._handle or _closed("Matrix")

    def __copy__(self):
        """An independent copy (spf_matrix_clone); the plans A @ B kept are not copied."""
        return Matrix(self)

    def __deepcopy__(self, memo):
        return Matrix(self)

    def __reduce__(self):
        """Pickled as its CSR arrays (shape, row offsets, columns, values)."""
        rows, cols = self.shape
        return (Matrix.from_csr, (rows, cols) + self.csr())

    @classmethod
    def _create(cls, fn, *args):
        out = ctypes.c_void_p()
        _check(fn(*args, ctypes.byref(out)))
        return cls(out)

    @classmethod
    def read(cls, path: Union[str, bytes, os.PathLike], seed: int = 1, duplicates: str = "reject",
             format: str = "auto", values_path: Union[str, bytes, os.PathLike, None] = None,
             npy_sparsity: Optional[float] = None, max_bytes: Optional[int] = None) -> Matrix:
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
    def generate(cls, kind: str = "uniform", rows: Optional[int] = None,
                 cols: Optional[int] = None, sparsity: Optional[float] = None,
                 seed: Optional[int] = None, vector_length: Optional[int] = None,
                 n: Optional[int] = None, m: Optional[int] = None,
                 rmat: Optional[Tuple[float, float, float]] = None) -> Matrix:
        """A synthetic matrix; arguments left None keep the library defaults
        (768 x 768, sparsity 0.9, seed 1, vector_length 4, 2:4, R-MAT
        (0.57, 0.19, 0.19)); rmat is the (a, b, c) triple. kind: "uniform",
        "magnitude", "column_vector" (or the CLI's "colvec"), "vnm", "2:4"
        (vnm with V = 1 and N:M = 2:4; ValueError for other n, m or
        vector_length), "rmat". TypeError /
        OverflowError for a value that is not of its field's C type (rows,
        cols int64, seed uint64, vector_length, n, m int32, the others
        double), ValueError for an rmat of another length, spforge.Error
        for values the library refuses."""
        options = _capi.GenOptions()
        lib().spf_gen_options_init(ctypes.byref(options))
        options.kind = _choice(_GENERATORS, kind, "generator")
        if kind == "2:4":
            given = {"vector_length": vector_length, "n": n, "m": m}
            fixed = {"vector_length": 1, "n": 2, "m": 4}
            wrong = ["%s=%r" % (k, v) for k, v in given.items() if v is not None and v != fixed[k]]
            if wrong:
                raise ValueError("generate: kind \"2:4\" is vnm with vector_length=1, n=2, m=4; "
                                 "got %s (use kind=\"vnm\")" % ", ".join(wrong))
            vector_length, n, m = 1, 2, 4
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
    def from_csr(cls, rows: int, cols: int, row_ptr: Any, col_idx: Any, values: Any = None,
                 seed: int = 1) -> Matrix:
        """Copy CSR arrays (row_ptr int64 rows + 1, col_idx int32 nnz,
        values float32 nnz or None for values drawn from seed; nnz is
        row_ptr[rows]): host arrays of exactly those element types, as the
        module's docstring says (Matrix(x) converts other index and value
        types). TypeError / OverflowError for rows, cols (int64) or seed
        (uint64) of another type or range, and for arrays of another
        element type; ValueError for a negative rows or nnz, arrays of
        another length or strided ones; spforge.Error
        (SPF_ERR_INVALID_MATRIX) for arrays that break the CSR invariants or
        a NaN or infinite value, naming the row and column."""
        rows = _int(rows, "rows", ctypes.c_int64)
        cols = _int(cols, "cols", ctypes.c_int64)
        seed = _int(seed, "seed", ctypes.c_uint64)
        if rows < 0:
            raise ValueError("rows must be >= 0, got %d" % rows)
        rp = _convert.host(row_ptr, "row_ptr", "int64", (rows + 1,))
        nnz = ctypes.c_int64.from_address(rp.ptr + 8 * rows).value
        if nnz < 0:
            raise ValueError("row_ptr[%d] = %d: nnz must be >= 0" % (rows, nnz))
        ci = _convert.host(col_idx, "col_idx", "int32", (nnz,))
        va = None if values is None else _convert.host(values, "values", "float32", (nnz,))
        return cls._create(lib().spf_matrix_create_csr, rows, cols, nnz, rp.ptr, ci.ptr,
                           None if va is None else va.ptr, seed)

    @classmethod
    def from_coo(cls, rows: int, cols: int, row_idx: Any, col_idx: Any, values: Any = None,
                 duplicates: str = "reject", seed: int = 1) -> Matrix:
        """Copy COO triplets in any order (row_idx, col_idx int32 nnz, values
        float32 nnz or None for values drawn from seed), as from_csr takes
        arrays; repeated (row, column) entries are refused
        (duplicates="reject": spforge.Error naming them) or summed ("sum").
        The errors of from_csr."""
        rows = _int(rows, "rows", ctypes.c_int64)
        cols = _int(cols, "cols", ctypes.c_int64)
        seed = _int(seed, "seed", ctypes.c_uint64)
        policy = _choice(_DUPLICATES, duplicates, "duplicates")
        ri = _convert.host(row_idx, "row_idx", "int32")
        if len(ri.shape) != 1:
            raise ValueError("row_idx: expected a 1-D array, got shape %s" % (ri.shape,))
        nnz = ri.shape[0]
        ci = _convert.host(col_idx, "col_idx", "int32", (nnz,))
        va = None if values is None else _convert.host(values, "values", "float32", (nnz,))
        return cls._create(lib().spf_matrix_create_coo, rows, cols, nnz, ri.ptr, ci.ptr,
                           None if va is None else va.ptr, policy, seed)

    def close(self) -> None:
        """Let go of the matrix and the plans A @ B kept: freed now, or when
        the last call using them (on another thread) returns; exactly once.
        Using the matrix afterwards raises ValueError."""
        plans = getattr(self, "_plans", None)
        while plans:
            plans.popitem()[1].close()
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None:
            handle.release()

    __del__ = close

    def _matmul_plan(self, n, device, dtype, layout):
        key = (n, device, dtype, layout)
        with self._plans_lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
                return plan.__copy__()  # the caller's own use: an eviction cannot free it
        options = dict(strategy="cpu") if device is None else dict(device=max(device, 0))
        plan = Plan(self, n, dtype=dtype, b_layout=layout, c_layout=layout, **options)
        with self._plans_lock:
            evicted = [self._plans.pop(key, None)]
            self._plans[key] = plan
            while len(self._plans) > _MATMUL_PLANS:
                evicted.append(self._plans.popitem(last=False)[1])
            mine = plan.__copy__()
        for old in evicted:
            if old is not None:
                old.close()
        return mine

    def __matmul__(self, b):
        m, k = self.shape
        op = _convert.describe(b, "b", "float32")
        if len(op.shape) == 1:
            shape, layout, n = (k,), "n_last", 1
        elif len(op.shape) == 2:
            shape, n = (k, op.shape[1]), op.shape[1]
            layout = "n_first" if not op.contiguous("C") and op.contiguous("F") else "n_last"
        else:
            raise ValueError("A @ b: b must be 1-D (K) or 2-D (K×N), got shape %s" % (op.shape,))
        if op.shape[0] != k:
            raise ValueError("A @ b: A is %d×%d, b has shape %s (K = %d rows needed)"
                             % (m, k, op.shape, k))
        order = "F" if layout == "n_first" else "C"
        dtype = "float32" if op.device is None else op.dtype
        if dtype not in _convert.PLAN_DTYPES.values():
            raise TypeError("A @ b: b of %s; a device plan takes float32, float16 or bfloat16"
                            % dtype)
        _convert.check(op, "b", dtype, shape, op.device, flat=False, order=order)
        if n == 0:  # a K×0 B: the M×0 product, with nothing to plan (a plan needs N >= 1)
            return _convert.new_like(op, (m, 0), dtype, order)
        with self._matmul_plan(n, op.device, dtype, layout) as plan:
            c = _convert.new_like(op, (m, n) if len(shape) == 2 else (m,), dtype, order)
            cop = _convert.check(_convert.describe(c, "c", dtype, writable=True), "c", dtype,
                                 None, op.device, writable=True, order=order)
            stream = _convert.default_stream(op)
            with plan._use() as ptr:
                _check(lib().spf_plan_execute(ptr, op.ptr, cop.ptr, None, stream or None))
        return c

    def __rmatmul__(self, x):
        raise TypeError("x @ A: spforge computes A @ B; for X·Aᵀ write (A @ X.T).T, which "
                        "copies nothing")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def shape(self) -> Tuple[int, int]:
        with self._use() as ptr:
            return (lib().spf_matrix_rows(ptr), lib().spf_matrix_cols(ptr))

    @property
    def nnz(self) -> int:
        with self._use() as ptr:
            return lib().spf_matrix_nnz(ptr)

    @property
    def dtype(self) -> str:
        """The values' type, "float32": the library keeps them so; a plan
        rounds them to its dtype."""
        return "float32"

    @property
    def ndim(self) -> int:
        return 2

    @property
    def T(self) -> Matrix:
        """The transpose (transpose())."""
        return self.transpose()

    def transpose(self) -> Matrix:
        """A new Matrix, cols × rows, with this one's entries transposed."""
        rows, cols = self.shape
        with self._use() as ptr:
            nnz = lib().spf_matrix_nnz(ptr)
            r, c, v = (ctypes.c_int32 * nnz)(), (ctypes.c_int32 * nnz)(), (ctypes.c_float * nnz)()
            address = [ctypes.addressof(x) for x in (r, c, v)]
            _check(lib().spf_matrix_to_coo(ptr, *address))
        return Matrix._create(lib().spf_matrix_create_coo, cols, rows, nnz, address[1],
                              address[0], address[2], _DUPLICATES["reject"], 1)

    def toarray(self) -> Any:
        """The matrix dense, a rows × cols float32 numpy array (numpy needed)."""
        numpy = _convert._need_numpy("Matrix.toarray")
        row_ptr, col_idx, values = self._csr_numpy()
        out = numpy.zeros(self.shape, numpy.float32)
        out[numpy.repeat(numpy.arange(self.shape[0]), numpy.diff(row_ptr)), col_idx] = values
        return out

    def __array__(self, dtype=None, copy=None):
        """numpy.asarray(matrix): toarray(), in dtype if given (a copy each time)."""
        if copy is False:
            raise ValueError("a spforge.Matrix has no dense array to share: numpy.asarray "
                             "of it makes one (copy=False cannot)")
        dense = self.toarray()
        return dense if dtype is None else dense.astype(dtype)

    def to_scipy(self) -> Any:
        """A scipy.sparse CSR array of the same entries (csr_array where
        scipy has it, else csr_matrix; scipy needed)."""
        try:
            import scipy.sparse as sparse
        except ImportError:
            raise ImportError("Matrix.to_scipy needs scipy (pip install scipy)") from None
        kind = getattr(sparse, "csr_array", None) or sparse.csr_matrix
        row_ptr, col_idx, values = self._csr_numpy()
        return kind((values, col_idx, row_ptr), shape=self.shape)

    def csr(self) -> Tuple[array.array, array.array, array.array]:
        """Copies of (row_ptr, col_idx, values) as array.array('q' / 'i' / 'f')."""
        out = []
        with self._use() as ptr:
            m, nnz = lib().spf_matrix_rows(ptr), lib().spf_matrix_nnz(ptr)
            for fn, typecode, count in ((lib().spf_matrix_row_ptr, "q", m + 1),
                                        (lib().spf_matrix_col_idx, "i", nnz),
                                        (lib().spf_matrix_values, "f", nnz)):
                a = array.array(typecode)
                a.frombytes(ctypes.string_at(fn(ptr), count * a.itemsize))
                out.append(a)
        return tuple(out)

    def _csr_numpy(self):
        """Copies of (row_ptr, col_idx, values) as numpy int64 / int32 /
        float32 arrays: one copy each, where csr() makes two."""
        numpy = _convert._need_numpy("Matrix arrays")
        out = []
        with self._use() as ptr:
            m, nnz = lib().spf_matrix_rows(ptr), lib().spf_matrix_nnz(ptr)
            for fn, dtype, count in ((lib().spf_matrix_row_ptr, numpy.int64, m + 1),
                                     (lib().spf_matrix_col_idx, numpy.int32, nnz),
                                     (lib().spf_matrix_values, numpy.float32, nnz)):
                a = numpy.empty(count, dtype)
                if count:
                    ctypes.memmove(a.ctypes.data, fn(ptr), a.nbytes)
                out.append(a)
        return tuple(out)

    def stats(self) -> Dict[str, Any]:
        """Pattern statistics as a dict (hashes as 16-digit hex strings, as the
        CLI's --json prints them)."""
        s = _capi.MatrixStats()
        with self._use() as ptr:
            _check(lib().spf_matrix_stats_compute(ptr, ctypes.byref(s)))
        d = {name: getattr(s, name) for name, _ in s._fields_}
        d["pattern_hash"] = "%016x" % s.pattern_hash
        d["values_hash"] = "%016x" % s.values_hash
        return d

    def write(self, path: Union[str, bytes, os.PathLike], format: str = "auto") -> None:
        """Write the matrix (spf_matrix_write: atomically). ValueError for a
        NUL in path or an unknown format, spforge.Error when writing fails."""
        path, format = _path(path, "path"), _choice(_FORMATS, format, "format")
        with self._use() as ptr:
            _check(lib().spf_matrix_write(ptr, path, format))

    def __repr__(self):
        if self._handle is None:
            return "<spforge.Matrix closed>"
        return "<spforge.Matrix %dx%d nnz=%d>" % (self.shape + (self.nnz,))


def reference_spmm(matrix: Any, b: Any, n: int, bias: Any = None, relu: bool = False,
                   accumulate: str = "f32", threads: int = 0) -> Any:
    """C = A·B (+ bias) (ReLU) on the host with the CPU reference: b is K×n
    row-major float32 (K×n or flat), bias M float32 or None, host arrays
    as the module's docstring says; returns M×n float32, or float64 from
    the float64 oracle when accumulate="f64", of b's kind: numpy (M×n) for
    numpy, a cpu tensor for a tensor, else array.array('f' / 'd') (flat).
    matrix is a Matrix or anything Matrix() converts. TypeError /
    OverflowError for an n (int64) or threads (int) of another type or
    range, a relu that is not a bool, or arrays of another element type;
    ValueError for a negative n, arrays of another shape, strided ones or
    device arrays."""
    acc = _choice(_ACCUMULATE, accumulate, "accumulate")
    matrix = _matrix(matrix)
    m, k = matrix.shape
    n = _int(n, "n", ctypes.c_int64)
    relu, threads = _flag(relu, "relu"), _int(threads, "threads", ctypes.c_int)
    if n < 0:
        raise ValueError("n must be >= 0, got %d" % n)
    bb = _convert.host(b, "b", "float32", (k, n))
    bi = None if bias is None else _convert.host(bias, "bias", "float32", (m,))
    dtype = "float64" if acc else "float32"
    c = _convert.new_like(bb, (m, n), dtype)
    cc = _convert.host(c, "c", dtype, writable=True)
    bias_ptr = None if bi is None else bi.ptr
    with matrix._use() as ptr:
        if acc:
            st = lib().spf_reference_spmm_f64(ptr, n, bb.ptr, cc.ptr, bias_ptr, relu, threads)
        else:
            st = lib().spf_reference_spmm(ptr, n, bb.ptr, cc.ptr, bias_ptr, relu, acc, threads)
    _check(st)
    return c


def relative_error(c: Any, ref: Any) -> float:
    """‖c − ref‖_F / ‖ref‖_F with c float32 and ref float64 host arrays of
    the same number of elements, and of the same shape when both have more
    than one dimension: ValueError otherwise, TypeError for another element
    type."""
    cc = _convert.host(c, "c", "float32")
    rr = _convert.host(ref, "ref", "float64")
    if rr.count != cc.count or (len(cc.shape) > 1 and len(rr.shape) > 1
                                and cc.shape != rr.shape):
        raise ValueError("ref: expected c's shape %s (or %d flat), got shape %s"
                         % (cc.shape, cc.count, rr.shape))
    return lib().spf_relative_error(cc.ptr, rr.ptr, cc.count)


def device_info(device: int = 0) -> Dict[str, Any]:
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


def _plan_options(strategy="auto", dtype="f32", bias=False, relu=False, device=0, verify=True,
                  exhaustive=False, tune_space="compact", config=None, host_threads=0,
                  reorder=False, math="default", b_layout="n_last", c_layout="n_last",
                  dense=True, search=False, search_top_k=0, search_proxies=True, cache=True,
                  weights="cold"):
    """spf_plan_options from Plan's keyword arguments (Plan says what each
    means), checked; a config is kept alive by the struct's pointer to it."""
    options = _capi.PlanOptions()
    lib().spf_plan_options_init(ctypes.byref(options))
    options.strategy = _named("strategy", strategy)
    options.dtype = _named("dtype", _convert.dtype_name(dtype))
    options.math = _named("math", math)
    options.b_layout = _named("layout", b_layout)
    options.c_layout = _named("layout", c_layout)
    for name, value in (("dense", dense), ("bias", bias),
                        ("relu", relu), ("verify", verify), ("exhaustive", exhaustive),
                        ("reorder", reorder), ("search", search),
                        ("search_proxies", search_proxies), ("cache", cache)):
        setattr(options, name, _flag(value, name))
    options.tune_space = _choice(_TUNE_SPACES, tune_space, "tune space")
    options.timing = _choice(_WEIGHTS, weights, "weights")
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
    return options


def _info_dict(i):
    """A filled spf_plan_info as Plan.info() gives it."""
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


class MatrixName(collections.namedtuple("MatrixName", "rows cols nnz hash")):
    """A matrix named by a hash its owner made of it (spf_matrix_name):
    rows × cols with nnz stored entries, hash a pair of 64-bit unsigned
    ints. spforge.torch names a layer's weight by a hash computed on its
    GPU, so that a plan cache lookup needs no CSR on the host. The plan
    cache records under a name what it holds for the matrix
    (note_cached_plan) and says it back (cached_plan_info). Two matrices
    of one name share that record: it decides how to run, it is never a
    plan."""

    __slots__ = ()

    def _c(self):
        name = _capi.MatrixName()
        name.size = ctypes.sizeof(name)
        for field in ("rows", "cols", "nnz"):
            _field(name, field, getattr(self, field), "MatrixName." + field)
        if len(self.hash) != 2:
            raise ValueError("MatrixName.hash: two 64-bit ints, got %d" % len(self.hash))
        for i, h in enumerate(self.hash):
            name.hash[i] = _int(h, "MatrixName.hash[%d]" % i, ctypes.c_uint64)
        return name


def _peek_options(n, options):
    """cached_plan_info's and note_cached_plan's options and n as C takes them."""
    return _plan_options(**options), _int(n, "n", ctypes.c_int64)


def cached_plan_info(matrix: Any, n: int, **options: Any) -> Optional[Dict[str, Any]]:
    """What Plan(matrix, n, **options) would be if the plan cache has it
    (spf_plan_cache_peek): its info() as a dict, from_cache True, read from
    the cache without making the plan; None when the plan would be made (a
    miss, the cache off, a host strategy). The options are Plan's, but
    progress; spforge.Error NO_DEVICE for a device strategy without a GPU,
    as Plan. matrix may be a MatrixName: then the info note_cached_plan
    recorded under it (spf_plan_cache_peek_named), the matrix not read."""
    options, n = _peek_options(n, options)
    i = _capi.PlanInfo()
    i.size = ctypes.sizeof(i)
    found = ctypes.c_int(0)
    if isinstance(matrix, MatrixName):
        _check(lib().spf_plan_cache_peek_named(ctypes.byref(matrix._c()), n,
                                               ctypes.byref(options), ctypes.byref(i),
                                               ctypes.byref(found)))
    else:
        matrix = _matrix(matrix)
        with matrix._use() as ptr:
            _check(lib().spf_plan_cache_peek(ptr, n, ctypes.byref(options), ctypes.byref(i),
                                             ctypes.byref(found)))
    return _info_dict(i) if found.value else None


def note_cached_plan(matrix: Any, name: MatrixName, n: int, **options: Any) -> bool:
    """Record under name (a MatrixName of matrix's shape and nnz) what the
    plan cache holds for Plan(matrix, n, **options) (spf_plan_cache_note),
    so that cached_plan_info(name, n, **options) says it without the
    matrix. True when it did; False when the cache has no such plan (a
    miss, the cache off, a host strategy)."""
    options, n = _peek_options(n, options)
    if not isinstance(name, MatrixName):
        raise TypeError("name: expected a spforge.MatrixName, got %s" % type(name).__name__)
    matrix = _matrix(matrix)
    noted = ctypes.c_int(0)
    with matrix._use() as ptr:
        _check(lib().spf_plan_cache_note(ptr, ctypes.byref(name._c()), n, ctypes.byref(options),
                                         ctypes.byref(noted)))
    return bool(noted.value)


class Plan:
    """A compiled SpMM for one matrix and one n (spf_plan_create); the matrix
    (a Matrix, or anything Matrix() converts) is only read during
    construction. dtype: "f32", "f16", "bf16" or as numpy and torch spell
    them ("float16", torch.float16, numpy.float16). TypeError / OverflowError for an n
    (int64), device, host_threads or search_top_k (int) or config values
    (int32) of another type or range, or a flag that is not a bool;
    ValueError for an unknown choice, a flag integer other than 0 / 1 or a
    config without exactly the fields m1, n1, v, prefetch, ksplit;
    spforge.Error for options the library refuses.

    progress: called with a ProgressEvent as the plan is made (planning,
    search and tuning can take minutes), on this thread, inside this call;
    "logging" sends the events to the logger "spforge" (log_progress);
    None (the default) uses the module's hook (set_progress); False
    reports nothing. A true return value stops the plan: spforge.Cancelled.
    An exception raised by it stops the plan too, and is raised here once
    everything built is freed (Ctrl-C during a long search works so).

    weights: how AUTO and the tuners time the candidates they choose among,
    "cold" (the default: the L2 flushed before every launch, as in a model
    whose layers stream their weights from HBM in turn) or "hot" (the same
    buffers back to back, for a matrix called alone in a loop)."""

    def __init__(self, matrix: Any, n: int, strategy: str = "auto", dtype: Any = "f32",
                 bias: bool = False, relu: bool = False, device: int = 0, verify: bool = True,
                 exhaustive: bool = False, tune_space: str = "compact",
                 config: Optional[Dict[str, int]] = None, host_threads: int = 0,
                 reorder: bool = False, math: str = "default", b_layout: str = "n_last",
                 c_layout: str = "n_last", dense: bool = True, search: bool = False,
                 search_top_k: int = 0, search_proxies: bool = True, cache: bool = True,
                 progress: Any = None, weights: str = "cold") -> None:
        self._handle = None
        hook = _progress_hook if progress is None else None if progress is False else progress
        if hook is not None and hook != "logging" and not callable(hook):
            raise TypeError("progress: expected a callable, \"logging\", None or False, got %r"
                            % (progress,))
        options = _plan_options(strategy=strategy, dtype=dtype, bias=bias, relu=relu,
                                device=device, verify=verify, exhaustive=exhaustive,
                                tune_space=tune_space, config=config, host_threads=host_threads,
                                reorder=reorder, math=math, b_layout=b_layout, c_layout=c_layout,
                                dense=dense, search=search, search_top_k=search_top_k,
                                search_proxies=search_proxies, cache=cache, weights=weights)
        n = _int(n, "n", ctypes.c_int64)
        matrix = _matrix(matrix)
        forward = None if hook is None else _Forward(hook)
        if forward is not None:
            options.progress = forward.c_function
        out = ctypes.c_void_p()
        # The matrix stays valid through the call even if the progress hook
        # closes it (its free waits for the call's end).
        with matrix._use() as ptr:
            status = lib().spf_plan_create(ptr, n, ctypes.byref(options), ctypes.byref(out))
            self.shape = m, k = (lib().spf_matrix_rows(ptr), lib().spf_matrix_cols(ptr))
        if forward is not None and forward.error is not None:
            error, forward.error = forward.error, None
            if status == 0:
                lib().spf_plan_free(out)
            raise error  # the library returned SPF_ERR_CANCELLED and freed everything
        _check(status)
        self._handle = _Handle(out, lib().spf_plan_free, "Plan")
        self.n, self.has_bias = n, bool(options.bias)
        info = self.info()
        self.strategy, self.dtype = info["strategy"], info["dtype"]
        self.b_layout, self.c_layout = info["b_layout"], info["c_layout"]
        self.device = None if self.strategy == "cpu" else options.device
        self._spec = _convert.PlanSpec(
            self.device, _convert.PLAN_DTYPES[self.dtype],
            (k, n) if self.b_layout == "n_last" else (n, k),
            (m, n) if self.c_layout == "n_last" else (n, m), (m,) if self.has_bias else None)

    def execute(self, b: Any, c: Any, bias: Any = None, stream: Optional[int] = None) -> None:
        """Run C = A·B (+ bias) into c on stream.
        Host plans (strategy cpu): host arrays. Device plans: device arrays
        (cuda tensors, cupy, __cuda_array_interface__, CUDA DLPack) on the
        plan's device, or device pointers as ints (TypeError for a bool, a
        float or None, OverflowError beyond a pointer; not checked further).
        b is K×n and c M×n (n×K and n×M in the n_first layouts; or flat) of
        the plan's dtype, c writable and never copied, bias M float32;
        TypeError for another element type or a read-only c, ValueError
        for another shape, a strided array, an array on another device, a c
        sharing memory with b or bias, or a bias given to a plan made
        without one or missing from one made with it. stream: a
        cudaStream_t as an int, or None for the current stream of the
        arrays' framework (torch, cupy), else the default stream.
        spforge.Error for what the library refuses (it, too, refuses a c
        overlapping b or bias)."""
        b_ptr, c_ptr, bias_ptr, stream, keep = _convert.operands(self._spec, b, c, bias, stream)
        with self._use() as ptr:
            _check(lib().spf_plan_execute(ptr, b_ptr, c_ptr, bias_ptr, stream or None))
        del keep  # the operands stay alive (and their memory valid) through the call

    def __call__(self, b: Any, bias: Any = None, out: Any = None,
                 stream: Optional[int] = None) -> Any:
        """C = A·B (+ bias) as execute runs it, into out, or into a new array
        of b's kind (numpy, a tensor on b's device, cupy, array.array) of
        the plan's dtype and C's shape. Returns C. TypeError where no array
        of b's kind can be made (a pointer, a DLPack capsule on a device):
        pass out="""
        if out is None:
            op = _convert.describe(b, "b", self._spec.dtype)
            out = _convert.new_like(op, self._spec.c_shape, self._spec.dtype)
        self.execute(b, out, bias, stream)
        return out

    def info(self) -> Dict[str, Any]:
        """The plan's spf_plan_info as a dict: names for the enums, the
        strategy's configuration by name, the planner's candidates as a list
        of dicts (strategy, outcome, estimate_us, kernel_us, detail)."""
        i = _capi.PlanInfo()
        i.size = ctypes.sizeof(i)
        with self._use() as ptr:
            _check(lib().spf_plan_get_info(ptr, ctypes.byref(i)))
        return _info_dict(i)

    def _use(self):
        """The handle, to use as `with plan._use() as ptr:` around a C call."""
        return self._handle or _closed("Plan")

    def __copy__(self):
        """Another owner of the same compiled plan (a plan never changes once
        made): it lives until every copy is closed or collected."""
        twin = Plan.__new__(Plan)
        twin.__dict__.update(self.__dict__)
        twin._handle = self._use().retain()
        return twin

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce__(self):
        raise TypeError("a spforge.Plan cannot be pickled: it holds kernels compiled for one "
                        "device; pickle its Matrix and make the Plan again (the plan cache "
                        "makes that fast)")

    def close(self) -> None:
        """Let go of the plan: freed now, or when the last call running it (on
        another thread) returns, or the last copy lets go; exactly once. Using
        this object afterwards raises ValueError."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None:
            handle.release()

    __del__ = close

    def __repr__(self):
        if getattr(self, "_handle", None) is None:
            return "<spforge.Plan closed>"
        return "<spforge.Plan %dx%d n=%d strategy=%s dtype=%s>" % (
            self.shape + (self.n, self.strategy, self.dtype))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
