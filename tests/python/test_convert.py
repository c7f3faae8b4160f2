"""Tests of the binding's conversions (python/spforge/_convert.py and what
uses it) against libspforge ($SPF_LIB): numpy arrays, scipy.sparse
matrices, torch tensors (the real torch where it is installed, else those
tests skip, visibly; always a minimal fake, fake_torch.py), cupy-like
__cuda_array_interface__ arrays (fake_cupy.py), DLPack (numpy's, wrapped,
and a capsule of a CUDA tensor built here), results of the caller's kind,
Matrix @ array, dtype names, and each error class: wrong shape, dtype,
device, non-contiguous, out-of-range ints, aliasing. Device arrays are
checked down to the pointers handed to spf_plan_execute (_convert.operands)
without a GPU. Plain unittest; exits 77 (ctest: skipped) only when the
library cannot be loaded; the numpy, scipy and torch tests skip, and the
summary says so, where those are not installed."""

import array
import ctypes
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("SPF_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
if not os.environ.get("SPF_TEST_INSTALLED"):  # else the installed package (test_wheel.sh)
    sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, HERE)

import spforge  # noqa: E402
import unittest_run  # noqa: E402
from spforge import _convert  # noqa: E402

if os.environ.get("SPF_TEST_INSTALLED"):
    assert spforge.__file__.startswith(sys.prefix), "spforge from %s" % spforge.__file__

try:
    import numpy
except ImportError:  # the binding works without it; these tests skip, visibly
    numpy = None
try:
    import scipy.sparse
except ImportError:
    scipy = None
try:
    import torch
except ImportError:
    torch = None
if numpy is not None:
    import fake_cupy
    import fake_torch
else:
    fake_cupy = fake_torch = None


def shaped(values, typecode, shape):
    """A C-contiguous memoryview of the given shape over a copy of values."""
    return memoryview(array.array(typecode, values)).cast("B").cast(typecode, shape)


def has_gpu():
    return spforge.device_info()["available"]


# ---- a DLPack producer of a CUDA tensor, without a GPU --------------------
_DLTENSOR = b"dltensor"  # the capsule keeps a pointer to its name
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype, _capsule_new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p,
                                                                 ctypes.c_void_p]


class CudaCapsuleProducer:
    """__dlpack__ / __dlpack_device__ of a tensor said to be on CUDA device
    device_id at address (which no test dereferences); records the stream
    each __dlpack__ call was given."""

    def __init__(self, address, shape, strides=None, code=2, bits=32, device_id=0):
        self.address, self.shape, self.strides = address, shape, strides
        self.code, self.bits, self.device_id, self.streams = code, bits, device_id, []
        self._keep = []

    def __dlpack_device__(self):
        return (_convert.DL_CUDA, self.device_id)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        managed = _convert._DLManagedTensor()
        t = managed.dl_tensor
        shape = (ctypes.c_int64 * len(self.shape))(*self.shape)
        t.data, t.ndim, t.byte_offset = self.address, len(self.shape), 0
        t.device.device_type, t.device.device_id = _convert.DL_CUDA, self.device_id
        t.dtype.code, t.dtype.bits, t.dtype.lanes = self.code, self.bits, 1
        t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        if self.strides is not None:
            strides = (ctypes.c_int64 * len(self.strides))(*self.strides)
            t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
            self._keep.append(strides)
        self._keep += [managed, shape]
        return _capsule_new(ctypes.addressof(managed), _DLTENSOR, None)


class CoreTests(unittest.TestCase):
    """What works without numpy: buffers and sequences in, array.array out."""

    def setUp(self):
        self.m, self.k, self.n = 6, 5, 3
        self.a = spforge.Matrix.generate(rows=self.m, cols=self.k, sparsity=0.4, seed=5)
        self.b = array.array("f", [0.25 * i - 1.0 for i in range(self.k * self.n)])

    def tearDown(self):
        self.a.close()

    def test_library_path(self):
        path = spforge._capi.path
        self.assertTrue(os.path.exists(path), path)
        if os.environ.get("SPF_TEST_INSTALLED"):  # the package's own
            self.assertEqual(path, os.path.join(os.path.dirname(spforge.__file__),
                                                "libspforge.so"))
        elif os.environ.get("SPF_LIB"):  # the one under test (build-asan's, under ASan)
            self.assertEqual(path, os.environ["SPF_LIB"])

    def test_matmul_and_call_on_buffers(self):
        want = spforge.reference_spmm(self.a, self.b, self.n, accumulate="f64")
        got = self.a @ shaped(self.b, "f", (self.k, self.n))
        self.assertIsInstance(got, array.array)
        self.assertEqual(len(got), self.m * self.n)
        self.assertLessEqual(spforge.relative_error(got, want), 1e-6)
        vector = self.a @ list(self.b[:self.k])  # a 1-D B of K: C of M
        self.assertEqual(len(vector), self.m)
        with spforge.Plan(self.a, self.n, strategy="cpu") as plan:
            self.assertLessEqual(spforge.relative_error(plan(self.b), want), 1e-6)
            out = array.array("f", bytes(4 * self.m * self.n))
            self.assertIs(plan(self.b, out=out), out)
        self.assertEqual(len(self.a._plans), 2)  # A @ B keeps its plans
        self.a.close()
        self.assertEqual(len(self.a._plans), 0)

    def test_matmul_errors(self):
        with self.assertRaises(ValueError):  # K + 1 rows
            self.a @ shaped([1.0] * ((self.k + 1) * 2), "f", (self.k + 1, 2))
        with self.assertRaises(TypeError):  # float64
            self.a @ shaped([1.0] * (self.k * 2), "d", (self.k, 2))
        with self.assertRaises(ValueError):  # strided
            self.a @ memoryview(array.array("f", [1.0] * (2 * self.k)))[::2]
        with self.assertRaises(ValueError):  # 3-D
            self.a @ shaped([1.0] * (self.k * 4), "f", (self.k, 2, 2))
        with self.assertRaises(TypeError):
            self.a @ None
        with self.assertRaises(TypeError) as ctx:
            [1.0] * self.m @ self.a
        self.assertIn("(A @ X.T).T", str(ctx.exception))

    def test_from_coo(self):
        a = spforge.Matrix.from_coo(2, 3, [1, 0, 1], [2, 1, 0], [3.0, 1.0, 2.0])
        self.assertEqual(a.csr(), (array.array("q", [0, 1, 3]), array.array("i", [1, 0, 2]),
                                   array.array("f", [1.0, 2.0, 3.0])))
        with self.assertRaises(spforge.Error) as ctx:
            spforge.Matrix.from_coo(2, 2, [1, 1], [0, 0], [1.0, 2.0])
        self.assertEqual(ctx.exception.status, -7)
        a = spforge.Matrix.from_coo(2, 2, [1, 1], [0, 0], [1.0, 2.0], duplicates="sum")
        self.assertEqual(a.csr()[2], array.array("f", [3.0]))
        with self.assertRaises(OverflowError):
            spforge.Matrix.from_coo(2, 2, [0], [2 ** 31])
        with self.assertRaises(ValueError):  # col_idx of another length
            spforge.Matrix.from_coo(2, 2, [0, 1], [0])
        with self.assertRaises(ValueError):
            spforge.Matrix.from_coo(2, 2, [0], [0], duplicates="max")

    def test_matrix_copies_a_matrix(self):
        b = spforge.Matrix(self.a)
        self.assertEqual(b.csr(), self.a.csr())
        with self.assertRaises(ValueError):
            spforge.Matrix(self.a, threshold=0.5)
        for bad in (None, 3, "w.mtx", 2.5):
            with self.subTest(bad=bad), self.assertRaises(TypeError):
                spforge.Plan(bad, 2, strategy="cpu")

    def test_dtype_names(self):
        for name in ("f32", "float32"):
            with spforge.Plan(self.a, 2, strategy="cpu", dtype=name) as plan:
                self.assertEqual(plan.dtype, "f32")
        for name, canonical in (("f16", "f16"), ("float16", "f16"), ("half", "f16"),
                                ("bf16", "bf16"), ("bfloat16", "bf16")):
            with self.subTest(name=name), self.assertRaises(spforge.Error) as ctx:
                spforge.Plan(self.a, 2, strategy="cpu", dtype=name)  # host plans: float32 only
            self.assertIn("not " + canonical, ctx.exception.detail)
        with self.assertRaises(ValueError):
            spforge.Plan(self.a, 2, strategy="cpu", dtype="float64")
        with self.assertRaises(TypeError):
            spforge.Plan(self.a, 2, strategy="cpu", dtype=object())

    def test_without_numpy(self):
        saved = _convert._numpy
        _convert._numpy = lambda: None
        try:
            with self.assertRaises(ImportError) as ctx:
                spforge.Matrix([[1.0, 0.0]])
            self.assertIn("pip install numpy", str(ctx.exception))
            got = spforge.reference_spmm(self.a, self.b, self.n)
            self.assertIsInstance(got, array.array)
            self.assertIsInstance(self.a @ list(self.b[:self.k]), array.array)
        finally:
            _convert._numpy = saved

    def test_device_pointers_and_out_of_range_ints(self):
        spec = _convert.PlanSpec(0, "float32", (self.k, self.n), (self.m, self.n), (self.m,))
        b, c, bias, stream, _ = _convert.operands(spec, 1 << 40, (1 << 40) + 4096, 1 << 41)
        self.assertEqual((b, c, bias, stream), (1 << 40, (1 << 40) + 4096, 1 << 41, 0))
        cases = [(TypeError, (True, 1 << 40, 1)), (TypeError, (None, 1 << 40, 1)),
                 (TypeError, (1.0 * (1 << 40), 1 << 40, 1)),
                 (OverflowError, (1 << 40, 1 << 64, 1)), (OverflowError, (-1, 1 << 40, 1)),
                 (ValueError, (1 << 40, 1 << 41, None))]  # a bias missing
        for kind, args in cases:
            with self.subTest(args=args), self.assertRaises(kind):
                _convert.operands(spec, *args)
        with self.assertRaises(OverflowError):
            _convert.operands(spec, 1 << 40, 1 << 41, 1, stream=1 << 64)
        host_spec = _convert.PlanSpec(None, "float32", (self.k, self.n), (self.m, self.n), None)
        with self.assertRaises(TypeError):  # a host plan takes no pointers
            _convert.operands(host_spec, 1 << 40, 1 << 41, None)

    def test_dlpack_capsule_of_a_cuda_tensor(self):
        m, n = self.m, self.n
        producer = CudaCapsuleProducer(1 << 40, (m, n), code=4, bits=16)  # bfloat16
        op = _convert.describe(producer, "b", stream=0)
        self.assertEqual((op.ptr, op.shape, op.dtype, op.device, op.kind),
                         (1 << 40, (m, n), "bfloat16", 0, "dlpack"))
        self.assertEqual(producer.streams, [1])  # 0 is passed as 1, the legacy default stream
        _convert.check(op, "b", "bfloat16", (m, n), 0)
        with self.assertRaises(TypeError):  # a DLPack capsule is never written
            _convert.check(op, "c", "bfloat16", (m, n), 0, writable=True)
        with self.assertRaises(ValueError):  # another device
            _convert.check(op, "b", "bfloat16", (m, n), 1)
        with self.assertRaises(ValueError):  # a host plan
            _convert.check(op, "b", "bfloat16", (m, n), None)
        with self.assertRaises(TypeError):
            _convert.check(op, "b", "float16", (m, n), 0)
        transposed = CudaCapsuleProducer(1 << 40, (n, m), strides=(1, n))
        with self.assertRaises(ValueError) as ctx:
            _convert.check(_convert.describe(transposed, "b"), "b", "float32", (n, m), 0)
        self.assertIn("strided", str(ctx.exception))
        spec = _convert.PlanSpec(0, "float16", (self.k, n), (m, n), None)
        b = CudaCapsuleProducer(1 << 40, (self.k, n), bits=16)
        c = CudaCapsuleProducer(1 << 41, (m, n), bits=16)
        with self.assertRaises(TypeError):  # an output must be writable: a capsule is not
            _convert.operands(spec, b, c, None)
        ptrs = _convert.operands(spec, b, 1 << 41, None, stream=77)[:4]
        self.assertEqual(ptrs, (1 << 40, 1 << 41, None, 77))
        self.assertEqual(b.streams[-1], 77)
        with self.assertRaises(TypeError):  # nothing to make a result of its kind with
            _convert.new_like(_convert.describe(b, "b"), (m, n), "float16")


@unittest.skipIf(numpy is None, "numpy is not installed")
class NumpyTests(unittest.TestCase):
    def setUp(self):
        self.m, self.k, self.n = 7, 9, 4
        rng = numpy.random.default_rng(3)
        self.w = rng.standard_normal((self.m, self.k)).astype(numpy.float32)
        self.w[rng.random((self.m, self.k)) < 0.5] = 0
        self.a = spforge.Matrix(self.w)
        self.b = rng.standard_normal((self.k, self.n)).astype(numpy.float32)

    def tearDown(self):
        self.a.close()

    def close(self, got, want, tol=1e-5):
        self.assertEqual(got.shape, want.shape)
        self.assertLessEqual(float(numpy.abs(numpy.asarray(got, numpy.float64) - want).max()),
                             tol * max(1.0, float(numpy.abs(want).max())))

    def test_dense_matrix(self):
        self.assertEqual(self.a.nnz, int((self.w != 0).sum()))
        self.close(self.a @ self.b, self.w.astype(numpy.float64) @ self.b)
        t = spforge.Matrix(self.w, threshold=0.8)
        self.assertEqual(t.nnz, int((numpy.abs(self.w) > 0.8).sum()))
        keep = numpy.zeros_like(self.w, bool)
        keep[::2] = True  # the mask decides, zeros included
        masked = spforge.Matrix(self.w, mask=keep)
        self.assertEqual(masked.nnz, int(keep.sum()))
        self.close(masked @ self.b, (self.w * keep).astype(numpy.float64) @ self.b)
        half = spforge.Matrix(self.w.astype(numpy.float16))
        self.assertEqual(numpy.asarray(half.csr()[2]).tolist(),
                         self.w[self.w != 0].astype(numpy.float16).astype(numpy.float32).tolist())
        lists = spforge.Matrix([[0.0, 1.5], [2.0, 0.0]])
        self.assertEqual(lists.csr()[1], array.array("i", [1, 0]))

    def test_dense_matrix_errors(self):
        w = self.w
        cases = [(ValueError, lambda: spforge.Matrix(w[None])),  # 3-D
                 (ValueError, lambda: spforge.Matrix(w[0])),  # 1-D
                 (ValueError, lambda: spforge.Matrix(w, threshold=0.5, mask=w != 0)),
                 (ValueError, lambda: spforge.Matrix(w, threshold=-1.0)),
                 (ValueError, lambda: spforge.Matrix(w, mask=numpy.ones((2, 2), bool))),
                 (TypeError, lambda: spforge.Matrix(w, threshold="0.5")),
                 (TypeError, lambda: spforge.Matrix(w.astype(numpy.int32))),
                 (TypeError, lambda: spforge.Matrix(w.astype(numpy.complex64))),
                 (TypeError, lambda: spforge.Matrix(object())),
                 (ValueError, lambda: spforge.Matrix(w, duplicates="max"))]
        for i, (kind, call) in enumerate(cases):
            with self.subTest(case=i), self.assertRaises(kind):
                call()
        nan = w.copy()
        nan[1, 2] = numpy.nan  # kept whatever the threshold, and refused by the library
        with self.assertRaises(spforge.Error) as ctx:
            spforge.Matrix(nan, threshold=0.5)
        self.assertIn("row 1, column 2", ctx.exception.detail)

    def test_matmul_returns_numpy(self):
        want = self.w.astype(numpy.float64) @ self.b
        got = self.a @ self.b
        self.assertIsInstance(got, numpy.ndarray)
        self.assertEqual(got.dtype, numpy.float32)
        self.close(got, want)
        self.close(self.a @ self.b[:, 1].copy(), want[:, 1])
        x = numpy.ascontiguousarray(self.b.T)  # N×K, as a Linear layer's input
        y = (self.a @ x.T).T  # Y = X·Aᵀ, nothing transposed in memory
        self.assertTrue(y.flags.c_contiguous)
        self.close(y, want.T)
        self.assertIn((self.n, None, "float32", "n_first"), self.a._plans)

    def test_matmul_errors(self):
        a, b = self.a, self.b
        cases = [(ValueError, lambda: a @ b[1:]),  # K - 1 rows
                 (ValueError, lambda: a @ b[:, ::2]),  # strided
                 (ValueError, lambda: a @ b[None]),  # 3-D
                 (TypeError, lambda: a @ b.astype(numpy.float64)),
                 (TypeError, lambda: a @ b.astype(numpy.float16)),  # host plans: float32
                 (TypeError, lambda: b.T @ a),
                 (ValueError, lambda: a @ memoryview(numpy.asfortranarray(b)))]  # no address
        for i, (kind, call) in enumerate(cases):
            with self.subTest(case=i), self.assertRaises(kind):
                call()

    def test_plan_call_execute_and_errors(self):
        m, k, n = self.m, self.k, self.n
        bias = numpy.linspace(-1, 1, m).astype(numpy.float32)
        want = self.w.astype(numpy.float64) @ self.b + bias[:, None]
        with spforge.Plan(self.a, n, strategy="cpu", bias=True) as plan:
            self.close(plan(self.b, bias=bias), want)
            out = numpy.full((m, n), numpy.nan, numpy.float32)
            self.assertIs(plan(self.b, bias=bias, out=out), out)
            self.close(out, want)
            shared = numpy.zeros(k * n + m * n, numpy.float32)
            readonly = numpy.zeros((m, n), numpy.float32)
            readonly.flags.writeable = False
            cases = [(ValueError, "shares memory with b",
                      lambda: plan(shared[:k * n], bias=bias,
                                   out=shared[k * n - 1:k * n - 1 + m * n])),
                     (TypeError, "read-only", lambda: plan(self.b, bias=bias, out=readonly)),
                     (ValueError, "bias: expected float32 of shape (7,)",
                      lambda: plan(self.b, bias=bias[:-1])),
                     (TypeError, "got float64", lambda: plan(self.b,
                                                             bias=bias.astype(numpy.float64))),
                     (ValueError, "bias missing", lambda: plan(self.b)),
                     (ValueError, "got shape (4, 9)", lambda: plan(self.b.T.copy(), bias=bias)),
                     (ValueError, "strided", lambda: plan(numpy.asfortranarray(self.b),
                                                          bias=bias)),
                     (TypeError, "expected float32 elements, got float16",
                      lambda: plan(self.b.astype(numpy.float16), bias=bias)),
                     (ValueError, "strided", lambda: plan.execute(self.b, out.T, bias))]
            for i, (kind, words, call) in enumerate(cases):
                with self.subTest(case=i), self.assertRaises(kind) as ctx:
                    call()
                self.assertIn(words, str(ctx.exception))
            # c overlapping the bias: the same memory
            both = numpy.zeros(m * n, numpy.float32)
            with self.assertRaises(ValueError) as ctx:
                plan.execute(self.b, both, both[:m])
            self.assertIn("shares memory with bias", str(ctx.exception))
        with spforge.Plan(self.a, n, strategy="cpu", b_layout="n_first",
                          c_layout="n_first") as plan:
            y = plan(numpy.ascontiguousarray(self.b.T))
            self.assertEqual(y.shape, (n, m))
            self.close(y, (want - bias[:, None]).T)

    def test_reference_returns_numpy(self):
        got = spforge.reference_spmm(self.a, self.b, self.n)
        self.assertEqual((type(got), got.shape, got.dtype),
                         (numpy.ndarray, (self.m, self.n), numpy.float32))
        got = spforge.reference_spmm(self.a, self.b, self.n, accumulate="f64")
        self.assertEqual(got.dtype, numpy.float64)
        self.close(got, self.w.astype(numpy.float64) @ self.b, 1e-12)

    def test_array_interface_and_dlpack_objects(self):
        class ArrayInterface:
            def __init__(self, a):
                self.a = a
                self.__array_interface__ = a.__array_interface__

        class DLPackOnly:
            def __init__(self, a):
                self.a = a

            def __dlpack__(self, stream=None):
                return self.a.__dlpack__()

            def __dlpack_device__(self):
                return self.a.__dlpack_device__()

        want = self.w.astype(numpy.float64) @ self.b
        for wrap in (ArrayInterface, DLPackOnly):
            with self.subTest(kind=wrap.__name__):
                got = self.a @ wrap(self.b)
                self.assertIsInstance(got, numpy.ndarray)  # host arrays of no known kind
                self.close(got, want)
                with self.assertRaises(ValueError):
                    self.a @ wrap(self.b[:, ::2])
        with spforge.Plan(self.a, self.n, strategy="cpu") as plan:
            with self.assertRaises(TypeError):  # DLPack grants no writing
                plan.execute(self.b, DLPackOnly(numpy.zeros((self.m, self.n), numpy.float32)))
            c = numpy.zeros((self.m, self.n), numpy.float32)
            plan.execute(DLPackOnly(self.b), ArrayInterface(c))
            self.close(c, want)

    def test_cuda_array_interface(self):
        m, k, n = self.m, self.k, self.n
        b = fake_cupy.asarray(self.b, "float16")
        c = fake_cupy.empty((m, n), "float16")
        with spforge.Plan(self.a, n, strategy="cpu") as plan, self.assertRaises(ValueError) as ctx:
            plan(b)  # a device array for a host plan
        self.assertIn("cuda:0", str(ctx.exception))
        spec = _convert.PlanSpec(0, "float16", (k, n), (m, n), None)
        bp, cp, _, stream, _ = _convert.operands(spec, b, c, None)
        self.assertEqual((bp, cp, stream), (b._data.ctypes.data, c._data.ctypes.data, 0xC0FFEE))
        readonly = fake_cupy.ndarray(numpy.zeros((m, n), numpy.float16), readonly=True)
        shared = fake_cupy.ndarray(numpy.zeros(k * n + m * n, numpy.float16))
        cases = [(ValueError, "on cuda:1, but the plan runs on cuda:0",
                  (fake_cupy.asarray(self.b, "float16", device=1), c)),
                 (TypeError, "got float32", (fake_cupy.asarray(self.b), c)),
                 (ValueError, "strided", (fake_cupy.asarray(self.b.T, "float16").T, c)),
                 (ValueError, "shape", (fake_cupy.asarray(self.b[1:], "float16"), c)),
                 (TypeError, "read-only", (b, readonly)),
                 (ValueError, "shares memory",
                  (shared[:k * n], shared[k * n - 1:k * n - 1 + m * n])),
                 (ValueError, "on the host", (self.b.astype(numpy.float16), c))]
        for i, (kind, words, args) in enumerate(cases):
            with self.subTest(case=i), self.assertRaises(kind) as ctx:
                _convert.operands(spec, *args, None)
            self.assertIn(words, str(ctx.exception))
        made = _convert.new_like(_convert.describe(b, "b"), (m, n), "float16", order="F")
        self.assertIsInstance(made, fake_cupy.ndarray)
        self.assertEqual((made.shape, made.dtype, made._data.T.flags.c_contiguous),
                         ((m, n), numpy.float16, True))
        if not has_gpu():  # the conversions pass; then the plan needs a device
            with self.assertRaises(spforge.Error) as ctx:
                self.a @ b
            self.assertEqual(ctx.exception.name, "no CUDA device")


@unittest.skipIf(scipy is None, "scipy is not installed")
class ScipyTests(unittest.TestCase):
    def setUp(self):
        self.s = scipy.sparse.random(40, 30, density=0.15, format="csr", random_state=4)
        self.b = numpy.random.default_rng(5).standard_normal((30, 6)).astype(numpy.float32)

    def want(self, s):
        return s.toarray().astype(numpy.float32).astype(numpy.float64) @ self.b

    def test_every_format(self):
        s = self.s
        csr = (s.indptr.tolist(), s.indices.tolist(), s.data.astype(numpy.float32).tolist())
        formats = [s, s.tocsc(), s.tocoo(), s.tobsr(), s.tolil(), s.todok(), s.todia(),
                   scipy.sparse.csr_array(s), scipy.sparse.coo_array(s),
                   s.astype(numpy.float32)]
        for i, x in enumerate(formats):
            with self.subTest(format=x.format, i=i):
                a = spforge.Matrix(x)
                self.assertEqual(a.shape, s.shape)
                self.assertEqual(tuple(v.tolist() for v in a.csr()), csr)
                got = a @ self.b
                self.assertLessEqual(float(numpy.abs(got - self.want(s)).max()), 1e-5)
        self.assertLessEqual(spforge.relative_error(
            spforge.reference_spmm(s, self.b, 6), self.want(s)), 1e-6)
        with spforge.Plan(s, 6, strategy="cpu") as plan:
            self.assertLessEqual(spforge.relative_error(plan(self.b), self.want(s)), 1e-6)

    def test_unsorted_duplicates_and_explicit_zeros(self):
        # CSR with its columns reversed in each row: not canonical, taken as COO
        s = self.s.copy()
        for i in range(s.shape[0]):
            lo, hi = s.indptr[i], s.indptr[i + 1]
            s.indices[lo:hi] = s.indices[lo:hi][::-1].copy()
            s.data[lo:hi] = s.data[lo:hi][::-1].copy()
        s.has_sorted_indices = False
        self.assertEqual(spforge.Matrix(s).csr()[1].tolist(), self.s.indices.tolist())
        dup = scipy.sparse.coo_matrix(([1.0, 2.0, 4.0], ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
        with self.assertRaises(spforge.Error) as ctx:
            spforge.Matrix(dup)
        self.assertEqual(ctx.exception.status, -7)
        with self.assertRaises(spforge.Error):  # the same entries as CSR (not canonical)
            spforge.Matrix(scipy.sparse.csr_matrix(([1.0, 2.0, 4.0], [1, 1, 0], [0, 2, 3]),
                                                   shape=(2, 2)))
        self.assertEqual(spforge.Matrix(dup, duplicates="sum").csr()[2].tolist(), [3.0, 4.0])
        zero = scipy.sparse.csr_matrix(([0.0, 5.0], [0, 1], [0, 2]), shape=(1, 2))
        self.assertEqual(spforge.Matrix(zero).nnz, 2)  # a stored zero is part of the pattern

    def test_errors(self):
        s = self.s
        cases = [(TypeError, lambda: spforge.Matrix(s.astype(numpy.int64))),
                 (TypeError, lambda: spforge.Matrix(s.astype(numpy.complex128))),
                 (TypeError, lambda: spforge.Matrix(s.astype(bool))),
                 (ValueError, lambda: spforge.Matrix(s, threshold=0.1)),
                 (ValueError, lambda: spforge.Matrix(s, mask=s.toarray() != 0)),
                 (OverflowError, lambda: spforge.Matrix(scipy.sparse.coo_matrix(
                     ([1.0], ([0], [2 ** 31])), shape=(1, 2 ** 31 + 1)))),
                 (OverflowError, lambda: spforge.Matrix(scipy.sparse.coo_matrix(
                     (2 ** 31, 2), dtype=numpy.float32)))]
        for i, (kind, call) in enumerate(cases):
            with self.subTest(case=i), self.assertRaises(kind):
                call()
        with self.assertRaises(OverflowError):  # an index beyond int32
            _convert._indices(numpy, numpy.array([0, 2 ** 31], numpy.int64), "col", "int32")


class TorchCases:
    """The torch adapter against a torch module T: the real torch, or the
    fake of fake_torch.py (the same calls)."""

    T = None

    def setUp(self):
        rng = numpy.random.default_rng(6)
        self.m, self.k, self.n = 8, 6, 5
        self.w = rng.standard_normal((self.m, self.k)).astype(numpy.float32)
        self.w[rng.random((self.m, self.k)) < 0.5] = 0
        self.b = rng.standard_normal((self.k, self.n)).astype(numpy.float32)
        self.want = self.w.astype(numpy.float64) @ self.b

    def cuda(self):
        if self.T is torch and not self.T.cuda.is_available():
            self.skipTest("torch has no CUDA device")
        return "cuda:0"

    def host(self, t):
        self.assertIs(type(t), self.T.Tensor)
        return t.detach().cpu().float().numpy()

    def close(self, got, want, tol=1e-5):
        got = self.host(got)
        self.assertEqual(got.shape, want.shape)
        self.assertLessEqual(float(numpy.abs(got - want).max()),
                             tol * max(1.0, float(numpy.abs(want).max())))

    def same_csr(self, got, want):
        for g, w in zip(got.csr(), want.csr()):
            self.assertEqual(list(g), list(w))

    def test_device_dense_selection(self):
        """A dense cuda tensor's entries are selected on its device: the
        same matrix as from the host array, by nonzeros, threshold and mask
        (numpy or a tensor, on the host or the device), and the same
        errors."""
        T, w, dev = self.T, self.w, self.cuda()
        mask = numpy.abs(w) > 0.7
        for dtype in (T.float32, T.float16, T.bfloat16, T.float64):
            t = T.tensor(w, dtype=dtype, device=dev)
            host = T.tensor(w, dtype=dtype)
            with self.subTest(dtype=str(dtype)):
                self.same_csr(spforge.Matrix(t), spforge.Matrix(host))
                self.same_csr(spforge.Matrix(t, threshold=0.5), spforge.Matrix(host, threshold=0.5))
                for m in (mask, T.tensor(mask), T.tensor(mask, device=dev),
                          T.tensor(mask.astype(numpy.float32), device=dev)):
                    self.same_csr(spforge.Matrix(t, mask=m), spforge.Matrix(host, mask=mask))
        t = T.tensor(w, device=dev)
        cases = [(ValueError, "expected the matrix's shape", dict(mask=mask[1:])),
                 (ValueError, "give threshold or mask", dict(mask=mask, threshold=0.1)),
                 (ValueError, "expected a number >= 0", dict(threshold=-1.0)),
                 (TypeError, "expected a real number", dict(threshold="0.1"))]
        for kind, words, kwargs in cases:
            with self.subTest(kwargs=sorted(kwargs)), self.assertRaises(kind) as ctx:
                spforge.Matrix(t, **kwargs)
            self.assertIn(words, str(ctx.exception))
        with self.assertRaises(TypeError) as ctx:
            spforge.Matrix(T.tensor(w.astype(numpy.int32), dtype=T.int32, device=dev))
        self.assertIn("values of dtype int32", str(ctx.exception))
        with self.assertRaises(ValueError) as ctx:
            spforge.Matrix(T.tensor(w[0], device=dev))
        self.assertIn("a matrix (2-D) is needed", str(ctx.exception))

    def test_host_tensors(self):
        T = self.T
        a = spforge.Matrix(T.tensor(self.w))
        self.assertEqual(a.nnz, int((self.w != 0).sum()))
        self.close(a @ T.tensor(self.b), self.want)
        x = T.tensor(numpy.ascontiguousarray(self.b.T))
        self.close((a @ x.T).T, self.want.T)
        with spforge.Plan(a, self.n, strategy="cpu", dtype=T.float32) as plan:
            self.close(plan(T.tensor(self.b)), self.want)
            c = T.empty((self.m, self.n), dtype=T.float32)
            plan.execute(T.tensor(self.b), c)
            self.close(c, self.want)
        self.close(spforge.reference_spmm(a, T.tensor(self.b), self.n), self.want)

    def test_weights_and_sparse_tensors(self):
        T, w = self.T, self.w
        half = spforge.Matrix(T.tensor(w, dtype=T.float16), threshold=0.5)
        self.assertEqual(half.nnz, int((numpy.abs(w.astype(numpy.float16)) > 0.5).sum()))
        bf16 = T.tensor(w, dtype=T.bfloat16)
        got = numpy.asarray(spforge.Matrix(bf16).csr()[2])
        self.assertEqual(got.tolist(), self.host(bf16)[w != 0].tolist())  # widened exactly
        mask = T.tensor(numpy.abs(w) > 1.0)
        self.assertEqual(spforge.Matrix(T.tensor(w), mask=mask).nnz,
                         int((numpy.abs(w) > 1.0).sum()))
        want = spforge.Matrix(w).csr()
        self.assertEqual(spforge.Matrix(T.tensor(w).to_sparse_csr()).csr(), want)
        self.assertEqual(spforge.Matrix(T.tensor(w).to_sparse()).csr(), want)
        index = T.tensor(numpy.array([[0, 0, 1], [1, 1, 0]]), dtype=T.int64)
        dup = T.sparse_coo_tensor(index, T.tensor([1.0, 2.0, 4.0]), (2, 2))  # uncoalesced
        with self.assertRaises(spforge.Error):
            spforge.Matrix(dup)
        self.assertEqual(spforge.Matrix(dup, duplicates="sum").csr()[2].tolist(), [3.0, 4.0])
        wide = T.tensor(numpy.array([[0, 0], [0, 2 ** 31]]), dtype=T.int64)
        with self.assertRaises(OverflowError):  # a column index beyond int32
            spforge.Matrix(T.sparse_coo_tensor(wide, T.tensor([1.0, 2.0]), (1, 2 ** 31 + 1)))
        with self.assertRaises(ValueError):
            spforge.Matrix(T.tensor(w).to_sparse_csr(), threshold=0.1)

    def test_host_errors(self):
        T, m, k, n = self.T, self.m, self.k, self.n
        a = spforge.Matrix(self.w)
        b = T.tensor(self.b)
        with spforge.Plan(a, n, strategy="cpu") as plan:
            flat = T.empty((k * n + m * n,), dtype=T.float32)
            wide = T.tensor(numpy.zeros((k, 2 * n), numpy.float32))
            cases = [(TypeError, "got float64", lambda: plan(T.tensor(self.b, dtype=T.float64))),
                     (TypeError, "got float16",
                      lambda: plan(b, out=T.empty((m, n), dtype=T.float16))),
                     (ValueError, "strided", lambda: plan(wide[:, ::2])),
                     (ValueError, "got shape (5, 6)",
                      lambda: plan(T.tensor(numpy.ascontiguousarray(self.b.T)))),
                     (ValueError, "shares memory",
                      lambda: plan(flat[:k * n], out=flat[k * n - 1:k * n - 1 + m * n])),
                     (TypeError, "layout torch.sparse_csr",
                      lambda: plan(T.tensor(self.w).to_sparse_csr()))]
            for i, (kind, words, call) in enumerate(cases):
                with self.subTest(case=i), self.assertRaises(kind) as ctx:
                    call()
                self.assertIn(words, str(ctx.exception))
        with self.assertRaises(TypeError):
            a @ T.tensor(self.b, dtype=T.float64)

    def test_device_tensors(self):
        T, m, k, n = self.T, self.m, self.k, self.n
        dev = self.cuda()
        b = T.tensor(self.b, dtype=T.float16, device=dev)
        c = T.empty((m, n), dtype=T.float16, device=dev)
        bias = T.tensor(numpy.ones(m, numpy.float32), device=dev)
        spec = _convert.PlanSpec(0, "float16", (k, n), (m, n), (m,))
        bp, cp, biasp, stream, _ = _convert.operands(spec, b, c, bias)
        self.assertEqual((bp, cp, biasp), (b.data_ptr(), c.data_ptr(), bias.data_ptr()))
        self.assertEqual(stream, T.cuda.current_stream().cuda_stream)
        with spforge.Plan(self.w, n, strategy="cpu") as plan, self.assertRaises(ValueError) as ctx:
            plan(T.tensor(self.b, device=dev))
        self.assertIn("cuda:0", str(ctx.exception))
        flat = T.empty((k * n + m * n,), dtype=T.float16, device=dev)
        cases = [(TypeError, "b: expected float16 elements, got float32",
                  (T.tensor(self.b, device=dev), c, bias)),
                 (TypeError, "bias: expected float32 elements, got float16",
                  (b, c, T.tensor(numpy.ones(m), dtype=T.float16, device=dev))),
                 (ValueError, "b: an array on the host",
                  (T.tensor(self.b, dtype=T.float16), c, bias)),
                 (ValueError, "strided",
                  (T.tensor(numpy.ascontiguousarray(self.b.T), dtype=T.float16, device=dev).T,
                   c, bias)),
                 (ValueError, "got shape (5, 5)",
                  (T.tensor(self.b[1:], dtype=T.float16, device=dev), c, bias)),
                 (ValueError, "shares memory with b",
                  (flat[:k * n], flat[k * n - 1:k * n - 1 + m * n], bias))]
        if self.T is fake_torch:  # a second device
            cases.append((ValueError, "on cuda:1, but the plan runs on cuda:0",
                          (T.tensor(self.b, dtype=T.float16, device="cuda:1"), c, bias)))
        for i, (kind, words, args) in enumerate(cases):
            with self.subTest(case=i), self.assertRaises(kind) as ctx:
                _convert.operands(spec, *args)
            self.assertIn(words, str(ctx.exception))
        made = _convert.new_like(_convert.describe(b, "b"), (m, n), "bfloat16")
        self.assertEqual((type(made), made.shape, str(made.dtype), str(made.device)),
                         (T.Tensor, (m, n), "torch.bfloat16", "cuda:0"))
        a = spforge.Matrix(T.tensor(self.w, device=dev))  # its entries selected on the device
        self.assertEqual(a.nnz, int((self.w != 0).sum()))
        self.same_csr(a, spforge.Matrix(self.w))
        if not has_gpu():
            with self.assertRaises(spforge.Error) as ctx:
                a @ b
            self.assertEqual(ctx.exception.name, "no CUDA device")
        elif self.T is torch:  # a real run on the GPU
            self.close(a @ b, self.w.astype(numpy.float64) @ self.host(b), 2e-2)


@unittest.skipIf(numpy is None, "numpy is not installed (fake_torch holds numpy arrays)")
class FakeTorchTests(TorchCases, unittest.TestCase):
    T = fake_torch


@unittest.skipIf(torch is None, "torch is not installed (its adapter is tested on fake_torch)")
class TorchTests(TorchCases, unittest.TestCase):
    T = torch


def main():
    return unittest_run.run(__name__)


if __name__ == "__main__":
    sys.exit(main())
