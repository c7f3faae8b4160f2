"""Tests of the ctypes binding (python/spforge) against libspforge ($SPF_LIB)
and the CLI ($SPF_CLI). Plain unittest; exits 77 (ctest: skipped) only when
the library cannot be loaded. The mirrored structs are checked through round
trips: stats equal to the CLI's --json, options that build a working plan.
The boundary tests pass wrong arguments of every kind and expect the
documented exception; those with numpy arrays skip (and say so in the
summary) where numpy is not installed."""

import array
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("SPF_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
if not os.environ.get("SPF_TEST_INSTALLED"):  # else the installed package (test_wheel.sh)
    sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

import spforge  # noqa: E402
import unittest_run  # noqa: E402

if os.environ.get("SPF_TEST_INSTALLED"):
    assert spforge.__file__.startswith(sys.prefix), "spforge from %s" % spforge.__file__

try:
    import numpy
except ImportError:  # the binding works without it; its tests skip, visibly
    numpy = None

CORPUS = os.path.join(SOURCE_DIR, "tests", "corpus")


def dense_product(matrix, b, n):
    """C = A·B in pure Python double precision from the matrix's CSR copy."""
    row_ptr, col_idx, values = matrix.csr()
    m = matrix.shape[0]
    c = [0.0] * (m * n)
    for i in range(m):
        for p in range(row_ptr[i], row_ptr[i + 1]):
            for j in range(n):
                c[i * n + j] += values[p] * b[col_idx[p] * n + j]
    return c


def random_floats(count, seed):
    rng = random.Random(seed)
    return array.array("f", (rng.uniform(-1.0, 1.0) for _ in range(count)))


class MatrixTests(unittest.TestCase):
    def test_corpus_stats_match_cli(self):
        cli = os.environ.get("SPF_CLI")
        if not cli:
            self.skipTest("SPF_CLI not set")
        names = sorted(f for f in os.listdir(CORPUS) if f.startswith("good"))
        self.assertGreater(len(names), 5)
        for name in names:
            path = os.path.join(CORPUS, name)
            with self.subTest(file=name), spforge.Matrix.read(path, seed=7) as a:
                out = subprocess.run([cli, "stat", "--json", "--seed", "7", path], check=True,
                                     stdout=subprocess.PIPE, universal_newlines=True).stdout
                self.assertEqual(a.stats(), json.loads(out)["stats"])
                self.assertEqual(a.shape, (a.stats()["rows"], a.stats()["cols"]))
                self.assertEqual(a.nnz, a.stats()["nnz"])

    def test_malformed_file_raises_with_file_name(self):
        path = os.path.join(CORPUS, "col_range.mtx")
        with self.assertRaises(spforge.Error) as ctx:
            spforge.Matrix.read(path)
        self.assertEqual(ctx.exception.status, -4)
        self.assertEqual(ctx.exception.name, spforge.lib().spf_status_string(-4).decode())
        self.assertIn("col_range.mtx:4", ctx.exception.detail)

    def test_duplicates_reject_or_sum(self):
        path = os.path.join(CORPUS, "duplicate.mtx")
        with self.assertRaises(spforge.Error) as ctx:
            spforge.Matrix.read(path)
        self.assertIn("duplicate.mtx:5", ctx.exception.detail)
        self.assertIn('read with duplicates="sum"', ctx.exception.detail)  # Python's terms
        with spforge.Matrix.read(path, duplicates="sum") as a:
            self.assertGreater(a.nnz, 0)

    def test_from_csr_round_trip_and_write(self):
        row_ptr, col_idx = [0, 2, 2, 3], [0, 3, 1]
        values = array.array("f", [0.25, -1.5, 3.0])
        a = spforge.Matrix.from_csr(3, 4, row_ptr, col_idx, values)
        self.assertEqual(a.shape, (3, 4))
        self.assertEqual(a.csr(), (array.array("q", row_ptr), array.array("i", col_idx), values))
        path = os.path.join(os.environ.get("SPF_BUILD_DIR", "/tmp"),
                            "python_binding_%d.mtx" % os.getpid())
        try:
            a.write(path)
            with spforge.Matrix.read(path) as b:
                self.assertEqual(b.stats(), a.stats())
        finally:
            os.unlink(path)
        a.close()
        a.close()  # a second close frees nothing
        with self.assertRaises(ValueError):
            a.nnz

    def test_from_csr_rejects_bad_arrays(self):
        with self.assertRaises(spforge.Error) as ctx:  # columns not ascending
            spforge.Matrix.from_csr(1, 4, [0, 2], [3, 1], [1.0, 2.0])
        self.assertEqual(ctx.exception.status, -7)
        with self.assertRaises(ValueError):  # row_ptr too short
            spforge.Matrix.from_csr(2, 4, [0, 1], [0])


    def test_array_like_facts_and_transpose(self):
        """What a newcomer reads first: dtype, ndim, shape, nnz, the version,
        and the transpose as a new Matrix of the entries transposed."""
        self.assertEqual(spforge.__version__, spforge.version())
        self.assertRegex(spforge.__version__, r"^\d+\.\d+\.\d+")
        with self.assertRaises(AttributeError):
            spforge.__no_such_name__
        a = spforge.Matrix.from_csr(2, 3, [0, 2, 3], [0, 2, 1], array.array("f", [1.5, -2, 4]))
        self.assertEqual((a.dtype, a.ndim, a.shape, a.nnz), ("float32", 2, (2, 3), 3))
        t = a.T
        self.assertEqual((t.shape, t.nnz), ((3, 2), 3))
        self.assertEqual(t.csr(), (array.array("q", [0, 1, 2, 3]), array.array("i", [0, 1, 0]),
                                   array.array("f", [1.5, 4, -2])))
        self.assertEqual(a.transpose().T.csr(), a.csr())
        self.assertEqual(spforge.Matrix.from_csr(4, 0, [0, 0, 0, 0, 0], []).T.shape, (0, 4))

    def test_generator_names_of_the_cli(self):
        """generate takes the CLI's kind names: colvec is column_vector, 2:4
        is vnm with V = 1, N:M = 2:4 (and refuses another N:M)."""
        def stats(**kw):
            with spforge.Matrix.generate(rows=16, cols=32, sparsity=0.5, seed=3, **kw) as a:
                return a.stats()
        self.assertEqual(stats(kind="colvec"), stats(kind="column_vector"))
        self.assertEqual(stats(kind="2:4"), stats(kind="vnm", vector_length=1, n=2, m=4))
        with spforge.Matrix.generate(kind="2:4", rows=8, cols=16, seed=1) as a:
            row_ptr, col_idx, _ = a.csr()
            for r in range(8):
                groups = [c // 4 for c in col_idx[row_ptr[r]:row_ptr[r + 1]]]
                self.assertLessEqual(max(groups.count(g) for g in groups), 2)
        with self.assertRaises(ValueError) as ctx:
            spforge.Matrix.generate(kind="2:4", m=8)
        self.assertIn("m=8", str(ctx.exception))

    def test_errors_are_the_builtins_they_mean(self):
        """A file that is not there is a FileNotFoundError (errno ENOENT), a
        malformed file or matrix a ValueError, each still a spforge.Error
        with its status and the library's whole message."""
        import errno
        missing = os.path.join(CORPUS, "no_such_file.mtx")
        with self.assertRaises(FileNotFoundError) as ctx:
            spforge.Matrix.read(missing)
        e = ctx.exception
        self.assertIsInstance(e, spforge.IOFailure)
        self.assertEqual((e.status, e.errno), (-3, errno.ENOENT))
        self.assertIn("no_such_file.mtx: cannot open for reading", str(e))
        with tempfile.TemporaryDirectory(suffix=".mtx") as folder, \
                self.assertRaises(OSError) as ctx:  # a folder is not a matrix file
            spforge.Matrix.read(folder)
        self.assertIsInstance(ctx.exception, spforge.IOFailure)
        with self.assertRaises(ValueError) as ctx:
            spforge.Matrix.read(os.path.join(CORPUS, "col_range.mtx"))
        self.assertIsInstance(ctx.exception, spforge.InvalidArgument)
        self.assertEqual(ctx.exception.status, -4)
        with self.assertRaises(ValueError) as ctx:
            spforge.Matrix.from_csr(1, 4, [0, 2], [3, 1], [1.0, 2.0])
        self.assertEqual(ctx.exception.status, -7)
        self.assertIsInstance(ctx.exception, spforge.Error)
        with self.assertRaises(MemoryError) as ctx:
            spforge.Matrix.read(os.path.join(CORPUS, "good_general.mtx"), max_bytes=8)
        self.assertEqual(ctx.exception.status, -2)


class ReferenceTests(unittest.TestCase):
    def test_reference_matches_dense_product(self):
        rng = random.Random(11)
        for n in (1, 3, 5):
            for rows, cols in ((1, 1), (7, 3), (13, 17), (31, 9)):
                seed = rng.randrange(1, 1 << 30)
                with self.subTest(n=n, rows=rows, cols=cols), \
                        spforge.Matrix.generate(rows=rows, cols=cols, sparsity=0.6,
                                                seed=seed) as a:
                    b = random_floats(cols * n, seed)
                    want = dense_product(a, b, n)
                    got = spforge.reference_spmm(a, b, n)
                    self.assertEqual(got.typecode, "f")
                    self.assertEqual(len(got), rows * n)
                    self.assertLessEqual(spforge.relative_error(got, want), 1e-6)
                    got64 = spforge.reference_spmm(a, b, n, accumulate="f64", threads=1)
                    self.assertEqual(got64.typecode, "d")
                    self.assertLessEqual(spforge.relative_error(got, got64), 1e-6)

    def test_empty_rows_bias_relu(self):
        # Rows 1 and 3 empty; bias and ReLU then decide those rows alone.
        a = spforge.Matrix.from_csr(4, 3, [0, 2, 2, 3, 3], [0, 2, 1], [0.5, -2.0, 1.25])
        self.assertEqual(a.stats()["empty_rows"], 2)
        n = 3
        b = random_floats(3 * n, 5)
        bias = [0.75, -0.5, 0.125, 0.3]
        want = [max(v + bias[i // n], 0.0) for i, v in enumerate(dense_product(a, b, n))]
        got = spforge.reference_spmm(a, b, n, bias=bias, relu=True)
        self.assertLessEqual(spforge.relative_error(got, want), 1e-6)
        self.assertEqual(list(got[n:2 * n]), [0.0] * n)
        self.assertEqual(list(got[3 * n:]), [array.array("f", [0.3])[0]] * n)

    def test_wrong_sizes_are_refused(self):
        a = spforge.Matrix.generate(rows=4, cols=5, sparsity=0.5, seed=2)
        with self.assertRaises(ValueError):
            spforge.reference_spmm(a, [1.0] * 9, 2)
        with self.assertRaises(ValueError):
            spforge.reference_spmm(a, [1.0] * 5, 1, accumulate="f16")


class PlanTests(unittest.TestCase):
    def test_cpu_plan_matches_reference(self):
        for n in (1, 3):
            with self.subTest(n=n), spforge.Matrix.generate(rows=29, cols=23, sparsity=0.7,
                                                            seed=9 + n) as a:
                b = random_floats(23 * n, n)
                bias = random_floats(29, 100 + n)
                with spforge.Plan(a, n, strategy="cpu", bias=True, relu=True) as plan:
                    self.assertEqual(plan.info()["strategy"], "cpu")
                    c = array.array("f", [float("nan")]) * (29 * n)
                    plan.execute(b, c, bias=bias)
                    ref = spforge.reference_spmm(a, b, n, bias=bias, relu=True,
                                                 accumulate="f64")
                    self.assertLessEqual(spforge.relative_error(c, ref), 1e-6)
                    with self.assertRaises(TypeError):  # c must be a writable buffer
                        plan.execute(b, bytes(4 * 29 * n), bias=bias)
                    with self.assertRaises(ValueError):  # the plan was made with bias
                        plan.execute(b, c)

    def test_layouts_names_and_candidates(self):
        m, k, n = 29, 23, 3
        with spforge.Matrix.generate(rows=m, cols=k, sparsity=0.7, seed=21) as a:
            b = random_floats(k * n, 5)
            ref = spforge.reference_spmm(a, b, n, accumulate="f64")
            bt = array.array("f", (b[kk * n + j] for j in range(n) for kk in range(k)))  # n×K
            with spforge.Plan(a, n, strategy="cpu", b_layout="n_first", c_layout="nm") as plan:
                info = plan.info()
                self.assertEqual((info["b_layout"], info["c_layout"]), ("n_first", "n_first"))
                self.assertEqual([c["outcome"] for c in info["candidates"]], ["chosen"])
                self.assertEqual(info["candidates"][0]["strategy"], "cpu")
                c = array.array("f", [float("nan")]) * (m * n)
                plan.execute(bt, c)  # C is n×M
                back = array.array("f", (c[j * m + i] for i in range(m) for j in range(n)))
                self.assertLessEqual(spforge.relative_error(back, ref), 1e-6)
        with spforge.Matrix.generate(rows=8, cols=8, sparsity=0.5, seed=2) as a:
            with self.assertRaises(ValueError) as e:
                spforge.Plan(a, 4, strategy="fastest")
            self.assertIn("auto, unrolled, generic", str(e.exception))
            with self.assertRaises(ValueError):
                spforge.Plan(a, 4, strategy="cpu", math="fast")
            with self.assertRaises(TypeError):
                spforge.Plan(a, 4, strategy="cpu", b_layout=1)
            with self.assertRaises(spforge.Error) as e:  # TF32 applies to f32 data only
                spforge.Plan(a, 4, strategy="cpu", dtype="bfloat16", math="tf32")
            self.assertIn("TF32", e.exception.detail)

    def test_plan_info_reports_search_and_cache(self):
        with spforge.Matrix.generate(rows=12, cols=10, sparsity=0.6, seed=5) as a, \
                spforge.Plan(a, 2, strategy="cpu") as plan:
            info = plan.info()
            self.assertIs(info["from_cache"], False)
            self.assertEqual(info["search"]["space"], 0)
            self.assertEqual(info["search"]["total_s"], 0.0)
            self.assertEqual(info["assembler"], "")  # nothing was assembled

    def test_search_options_reach_the_library(self):
        # Validated before any device is needed, so they fail the same way
        # on every machine: each field must land where the C struct has it.
        with spforge.Matrix.generate(rows=8, cols=8, sparsity=0.5, seed=4) as a:
            cases = [(dict(search=True, exhaustive=True), "excludes exhaustive"),
                     (dict(search=True, strategy="generic"), "excludes exhaustive"),
                     (dict(search_top_k=-1), "search_top_k = -1"),
                     (dict(search=True, config={"m1": 8, "n1": 64, "v": 1, "prefetch": 2,
                                                "ksplit": 1}), "forced config")]
            for kwargs, detail in cases:
                with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                    with self.assertRaises(spforge.Error) as ctx:
                        spforge.Plan(a, 4, **kwargs)
                    self.assertEqual(ctx.exception.name, "invalid argument")
                    self.assertIn(detail, ctx.exception.detail)

    def test_device_info_without_gpu(self):
        info = spforge.device_info()
        if info["available"]:
            self.skipTest("this machine has a CUDA device: " + info["name"])
        self.assertIs(info["available"], False)
        self.assertTrue(info["reason"])

    def test_inprocess_assembler_beside_the_library(self):
        # libspforge.so loads the PTX compiler from libspforge_ptxc.so in its
        # own folder: forced, an unrolled plan is assembled by it (or, in a
        # build without the compiler, refused saying so).
        if not spforge.device_info()["available"]:
            self.skipTest("no CUDA device")
        module = os.path.join(os.path.dirname(spforge._capi.path), "libspforge_ptxc.so")
        saved = os.environ.get("SPFORGE_ASSEMBLER")
        os.environ["SPFORGE_ASSEMBLER"] = "inprocess"
        try:
            with spforge.Matrix.generate(rows=64, cols=48, sparsity=0.8, seed=3) as a:
                if not os.path.exists(module):
                    with self.assertRaises(spforge.Error) as e:
                        spforge.Plan(a, 8, strategy="unrolled", cache=False)
                    self.assertIn("SPFORGE_ASSEMBLER=inprocess", e.exception.detail)
                    return
                with spforge.Plan(a, 8, strategy="unrolled", cache=False) as plan:
                    self.assertEqual(plan.info()["assembler"], "inprocess")
        finally:
            if saved is None:
                del os.environ["SPFORGE_ASSEMBLER"]
            else:
                os.environ["SPFORGE_ASSEMBLER"] = saved

    def test_gpu_pointers_checked(self):
        # Refused before any kernel runs, so fake addresses are safe here.
        if not spforge.device_info()["available"]:
            self.skipTest("no CUDA device")
        with spforge.Matrix.generate(rows=8, cols=8, sparsity=0.5, seed=4) as a, \
                spforge.Plan(a, 4, strategy="generic", cache=False) as plan:
            address = 1 << 40
            for kind, args in ((TypeError, (True, address)), (TypeError, (None, address)),
                               (TypeError, (float(address), address)),
                               (OverflowError, (address, 1 << 64)),
                               (OverflowError, (-address, address))):
                with self.subTest(args=args), self.assertRaises(kind):
                    plan.execute(*args)
            with self.assertRaises(spforge.Error) as ctx:  # C overlapping B
                plan.execute(address, address + 4)
            self.assertIn("overlaps b", ctx.exception.detail)

    def test_auto_plan_without_gpu_raises(self):
        if spforge.device_info()["available"]:
            self.skipTest("this machine has a CUDA device")
        a = spforge.Matrix.generate(rows=8, cols=8, sparsity=0.5, seed=4)
        with self.assertRaises(spforge.Error) as ctx:
            spforge.Plan(a, 4, strategy="auto")
        self.assertEqual(ctx.exception.name, "no CUDA device")
        self.assertEqual(ctx.exception.status, -8)
        self.assertIn('strategy="cpu" runs the CPU reference', ctx.exception.detail)
        # no driver, or a build without the CUDA toolkit
        self.assertRegex(ctx.exception.detail, "no CUDA|without CUDA")


    def test_cached_plan_info_without_gpu(self):
        """The cache lookup checks Plan's options, finds nothing for a host
        plan, and refuses a device plan as Plan does."""
        with spforge.Matrix.generate(rows=8, cols=8, sparsity=0.5, seed=4) as a:
            self.assertIsNone(spforge.cached_plan_info(a, 4, strategy="cpu"))
            with self.assertRaises(TypeError):
                spforge.cached_plan_info(a, 4, progress=False)  # not an option of a lookup
            with self.assertRaises(ValueError):
                spforge.cached_plan_info(a, 4, weights="warm")
            with self.assertRaises(spforge.Error) as ctx:
                spforge.cached_plan_info(a, 0, strategy="cpu")
            self.assertEqual(ctx.exception.name, "invalid argument")
            if spforge.device_info()["available"]:
                return
            with self.assertRaises(spforge.Error) as ctx:
                spforge.cached_plan_info(a, 4)
            self.assertEqual(ctx.exception.name, "no CUDA device")

    def test_named_lookups_without_gpu(self):
        """A MatrixName's fields are checked (as C ints, and by the library
        as a shape), a host plan is never noted or found, and a device
        lookup is refused as Plan is."""
        with spforge.Matrix.generate(rows=8, cols=6, sparsity=0.5, seed=4) as a:
            name = spforge.MatrixName(8, 6, a.nnz, (2**64 - 1, 7))
            self.assertIsNone(spforge.cached_plan_info(name, 4, strategy="cpu"))
            self.assertFalse(spforge.note_cached_plan(a, name, 4, strategy="cpu"))
            for bad, error in (((8, 6, a.nnz, (2**64, 0)), OverflowError),
                               ((8, 6, a.nnz, (1, 2, 3)), ValueError),
                               ((8, 6.0, a.nnz, (1, 2)), TypeError)):
                with self.assertRaises(error):
                    spforge.cached_plan_info(spforge.MatrixName(*bad), 4, strategy="cpu")
            with self.assertRaises(spforge.Error) as ctx:
                spforge.cached_plan_info(spforge.MatrixName(8, 6, 49, (1, 2)), 4, strategy="cpu")
            self.assertIn("8×6 matrix with 49 entries", ctx.exception.detail)
            with self.assertRaises(spforge.Error) as ctx:
                spforge.note_cached_plan(a, spforge.MatrixName(8, 7, a.nnz, (1, 2)), 4,
                                         strategy="cpu")
            self.assertIn("for a 8×6 matrix", ctx.exception.detail)
            with self.assertRaises(TypeError):
                spforge.note_cached_plan(a, (8, 6, a.nnz, (1, 2)), 4, strategy="cpu")
            if spforge.device_info()["available"]:
                return
            for call in (lambda: spforge.cached_plan_info(name, 4),
                         lambda: spforge.note_cached_plan(a, name, 4)):
                with self.assertRaises(spforge.Error) as ctx:
                    call()
                self.assertEqual(ctx.exception.name, "no CUDA device")


def shaped(values, typecode, shape):
    """A C-contiguous memoryview of the given shape over a copy of values
    (a 2-D buffer without numpy)."""
    return memoryview(array.array(typecode, values)).cast("B").cast(typecode, shape)


class LogTests(unittest.TestCase):
    """set_log: the library's messages to a callable or the logger
    "spforge"; its refusals; a message is forwarded as (level, text), an
    exception in the hook stays in it; on a GPU, a plan's real messages."""

    def tearDown(self):
        spforge.set_log(None)

    def test_hooks(self):
        self.assertIsNone(spforge.set_log(None))
        with self.assertRaises(TypeError):
            spforge.set_log(42)
        got = []
        self.assertIsNone(spforge.set_log(lambda level, text: got.append((level, text))))
        forward = spforge._log_c  # the C function the library calls
        forward(0, b"a debug line", None)
        forward(2, "caf\u00e9".encode(), None)
        self.assertEqual(got, [("debug", "a debug line"), ("warn", "caf\u00e9")])

        def broken(level, text):
            raise RuntimeError("the hook's own failure")
        spforge.set_log(broken)
        forward(1, b"dropped", None)  # nothing raised through C
        self.assertIs(spforge.set_log("logging"), broken)
        with self.assertLogs("spforge", level="DEBUG") as logs:
            forward(1, b"an info line", None)
            forward(0, b"a debug line", None)
        self.assertEqual(logs.output, ["INFO:spforge:an info line", "DEBUG:spforge:a debug line"])
        self.assertEqual(spforge.set_log(None), "logging")

    def test_plan_messages(self):
        if not spforge.device_info()["available"]:
            self.skipTest("no GPU: the CPU strategy logs nothing")
        got = []
        spforge.set_log(lambda level, text: got.append((level, text)))
        a = spforge.Matrix.generate(rows=256, cols=256, sparsity=0.9, seed=5)
        spforge.Plan(a, 16, cache=False).close()
        self.assertTrue(any(text.startswith("dense:") for _, text in got), got)


class ProgressTests(unittest.TestCase):
    """Plan(progress=...) and the module's hook (set_progress) on the CPU
    strategy, which runs without a GPU: events in order, a cancellation by
    return value, an exception raised in the hook coming out of Plan(),
    the logging hook."""

    def setUp(self):
        self.a = spforge.Matrix.generate(rows=40, cols=30, sparsity=0.8, seed=3)
        self.previous = spforge.set_progress(None)

    def tearDown(self):
        spforge.set_progress(self.previous)
        self.a.close()

    def test_events_in_order(self):
        events = []
        with spforge.Plan(self.a, 4, strategy="cpu", progress=events.append) as plan:
            self.assertEqual(plan.strategy, "cpu")
        self.assertIsInstance(events[0], spforge.ProgressEvent)
        self.assertEqual((events[0].stage, events[0].phase, events[0].depth), ("plan", "begin", 0))
        self.assertEqual((events[-1].stage, events[-1].phase, events[-1].status, events[-1].done),
                         ("plan", "end", 0, 1))
        self.assertIn("40x30", events[0].text)
        opened = []
        for e in events:  # a stack of stages, each at its depth, done within total
            self.assertLessEqual(0, e.done)
            self.assertLessEqual(e.done, e.total)
            if e.phase == "begin":
                self.assertEqual(e.depth, len(opened))
                opened.append(e.stage)
            elif e.phase == "end":
                self.assertEqual(opened.pop(), e.stage)
                self.assertEqual(e.depth, len(opened))
        self.assertEqual(opened, [])
        builds = [e for e in events if e.stage == "build"]
        self.assertEqual([(e.phase, e.text) for e in builds], [("begin", "cpu"), ("end", "cpu")])
        times = [e.elapsed_s for e in events]
        self.assertEqual(times, sorted(times))

    def test_true_return_cancels(self):
        seen = []

        def stop_at_build(event):
            seen.append(event)
            return event.stage == "build"

        with self.assertRaises(spforge.Cancelled) as ctx:
            spforge.Plan(self.a, 4, strategy="cpu", progress=stop_at_build)
        self.assertIsInstance(ctx.exception, spforge.Error)
        self.assertEqual((ctx.exception.status, ctx.exception.name), (-13, "cancelled"))
        self.assertIn("cancelled by the progress callback", ctx.exception.detail)
        # nothing after the cancellation but the plan's end, with the status
        self.assertEqual([(e.stage, e.phase) for e in seen][-2:], [("build", "begin"), ("plan", "end")])
        self.assertEqual(seen[-1].status, -13)

    def test_exception_in_the_hook_is_raised(self):
        calls = []

        def broken(event):
            calls.append(event)
            if event.stage == "candidates":
                raise ValueError("from the hook")

        with self.assertRaises(ValueError) as ctx:
            spforge.Plan(self.a, 4, strategy="cpu", progress=broken)
        self.assertEqual(str(ctx.exception), "from the hook")
        self.assertEqual([e.stage for e in calls], ["plan", "candidates"])  # not called again
        with spforge.Plan(self.a, 4, strategy="cpu") as plan:  # and the next plan is fine
            self.assertEqual(plan.strategy, "cpu")

    def test_module_hook_and_logging(self):
        events = []
        self.assertIsNone(spforge.set_progress(events.append))
        self.assertEqual(len(self.a @ ([1.0] * 30)), 40)  # A @ b's plan reports too
        self.assertEqual((events[0].stage, events[-1].stage), ("plan", "plan"))
        count = len(events)
        spforge.Plan(self.a, 4, strategy="cpu", progress=False).close()  # False: none
        self.assertEqual(len(events), count)
        self.assertEqual(spforge.set_progress(), events.append)  # default: "logging"
        with self.assertLogs("spforge", "INFO") as logs:
            spforge.Plan(self.a, 5, strategy="cpu").close()
        text = "\n".join(logs.output)
        self.assertIn("plan begin 0/1", text)
        self.assertIn("build end 1/1", text)
        self.assertIn("plan end 1/1", text)
        with self.assertLogs("spforge", "INFO") as logs:
            spforge.Plan(self.a, 5, strategy="cpu", progress="logging").close()
        self.assertTrue(any("cpu" in line for line in logs.output))
        for bad in (42, "print"):
            with self.assertRaises(TypeError):
                spforge.set_progress(bad)
            with self.assertRaises(TypeError):
                spforge.Plan(self.a, 4, strategy="cpu", progress=bad)


class BoundaryTests(unittest.TestCase):
    """Every argument is checked before ctypes converts it: before these
    checks each case below returned a wrong result (or an unrelated error)."""

    def setUp(self):
        self.m, self.k, self.n = 4, 6, 3
        self.a = spforge.Matrix.generate(rows=self.m, cols=self.k, sparsity=0.5, seed=2)
        self.b = random_floats(self.k * self.n, 1)

    def tearDown(self):
        self.a.close()

    def test_integers_beyond_their_c_type(self):
        a, b, n = self.a, self.b, self.n
        cases = [  # ctypes wrapped each of these into a valid, different value
            ("rows", lambda: spforge.Matrix.generate(rows=2 ** 64 + 5, cols=4)),
            ("seed", lambda: spforge.Matrix.generate(rows=4, cols=4, seed=-1)),
            ("seed", lambda: spforge.Matrix.generate(rows=4, cols=4, seed=2 ** 64)),
            ("n", lambda: spforge.Matrix.generate(kind="vnm", rows=8, cols=8, n=2 ** 32 + 2, m=4)),
            ("cols", lambda: spforge.Matrix.from_csr(1, 2 ** 64 + 2, [0, 1], [0], [1.0])),
            ("seed", lambda: spforge.Matrix.from_csr(1, 2, [0, 1], [0], None, seed=2 ** 64 + 1)),
            ("seed", lambda: spforge.Matrix.read(os.path.join(CORPUS, "good.smtx"), seed=-1)),
            ("threads", lambda: spforge.reference_spmm(a, b, n, threads=2 ** 32 + 1)),
            ("device", lambda: spforge.device_info(2 ** 32)),
            ("device", lambda: spforge.Plan(a, n, strategy="cpu", device=2 ** 32)),
            ("host_threads", lambda: spforge.Plan(a, n, strategy="cpu", host_threads=2 ** 32 + 1)),
            ("search_top_k", lambda: spforge.Plan(a, n, strategy="cpu", search_top_k=2 ** 32 + 1)),
            ("n", lambda: spforge.Plan(a, 2 ** 64 + n, strategy="cpu")),
            ("config['m1']", lambda: spforge.Plan(a, 64, config={
                "m1": 2 ** 32 + 8, "n1": 64, "v": 1, "prefetch": 2, "ksplit": 1})),
        ]
        for what, call in cases:
            with self.subTest(what=what), self.assertRaises(OverflowError) as ctx:
                call()
            self.assertIn(what, str(ctx.exception))
        with spforge.Plan(a, n, strategy="cpu") as plan, self.assertRaises(OverflowError):
            plan.execute(b, array.array("f", bytes(4 * self.m * n)), stream=2 ** 64)
        # The edges of the ranges pass.
        spforge.Matrix.generate(rows=4, cols=4, seed=2 ** 64 - 1).close()

    def test_bools_floats_and_strings_for_numbers(self):
        a, b, n = self.a, self.b, self.n
        type_errors = [  # True became 1, "no" became True
            ("rows", lambda: spforge.Matrix.generate(rows=True, cols=4)),
            ("n", lambda: spforge.reference_spmm(a, b, True)),
            ("seed", lambda: spforge.Matrix.from_csr(1, 2, [0, 1], [0], seed=False)),
            ("relu", lambda: spforge.reference_spmm(a, b, n, relu="no")),
            ("sparsity", lambda: spforge.Matrix.generate(rows=4, cols=4, sparsity="0.5")),
            ("rows", lambda: spforge.Matrix.generate(rows=4.5, cols=4)),
            ("verify", lambda: spforge.Plan(a, n, strategy="cpu", verify=None)),
        ]
        for what, call in type_errors:
            with self.subTest(what=what), self.assertRaises(TypeError) as ctx:
                call()
            self.assertIn(what, str(ctx.exception))
        with self.assertRaises(ValueError):  # relu=2 is not a bool
            spforge.reference_spmm(a, b, n, relu=2)
        with self.assertRaises(ValueError):
            spforge.Plan(a, n, strategy="cpu", config={"m1": 8})
        self.assertEqual(spforge.reference_spmm(a, b, n, relu=1),
                         spforge.reference_spmm(a, b, n, relu=True))

    def test_shapes_and_lengths_exactly(self):
        a, m, k, n = self.a, self.m, self.k, self.n
        with self.assertRaises(ValueError) as ctx:  # B given N×K: was read as if K×N
            spforge.reference_spmm(a, shaped(self.b, "f", (n, k)), n)
        self.assertIn("(6, 3)", str(ctx.exception))
        with self.assertRaises(ValueError):  # a flat buffer one element short
            spforge.reference_spmm(a, self.b[1:], n)
        with self.assertRaises(ValueError):  # bias M×1 is not M
            spforge.reference_spmm(a, self.b, n, bias=shaped([1.0] * m, "f", (m, 1)))
        got = spforge.reference_spmm(a, shaped(self.b, "f", (k, n)), n)
        self.assertEqual(got, spforge.reference_spmm(a, self.b, n))
        with spforge.Plan(a, n, strategy="cpu") as plan:
            with self.assertRaises(ValueError):  # C given N×M
                plan.execute(self.b, shaped([0.0] * (m * n), "f", (n, m)))
            c = shaped([0.0] * (m * n), "f", (m, n))
            plan.execute(self.b, c)
            self.assertLessEqual(spforge.relative_error(c, spforge.reference_spmm(
                a, self.b, n, accumulate="f64")), 1e-6)
        with self.assertRaises(ValueError):
            spforge.relative_error(shaped([1.0] * 6, "f", (2, 3)), shaped([1.0] * 6, "d", (3, 2)))
        with self.assertRaises(ValueError):  # row_ptr 2-D
            spforge.Matrix.from_csr(1, 2, shaped([0, 1], "q", (1, 2)), [0])

    def test_nul_in_paths(self):
        folder = os.environ.get("SPF_BUILD_DIR", "/tmp")
        path = os.path.join(folder, "python_nul_%d.mtx" % os.getpid())
        for call in (lambda: self.a.write(path + "\0.tmp"),
                     lambda: spforge.Matrix.read(os.path.join(CORPUS, "good_general.mtx") + "\0x"),
                     lambda: spforge.Matrix.read(os.path.join(CORPUS, "good.smtx"),
                                                 values_path=path + "\0.npy")):
            with self.assertRaises(ValueError) as ctx:
                call()
            self.assertIn("NUL", str(ctx.exception))
        self.assertFalse(os.path.exists(path))  # nothing written at the cut name

    def test_read_limit(self):
        huge = os.path.join(CORPUS, "huge_rows.mtx")  # 2^31 - 1 rows in a few bytes
        with self.assertRaises(spforge.Error) as ctx:
            spforge.Matrix.read(huge)
        self.assertEqual(ctx.exception.name, "out of memory")
        self.assertIn("read limit", ctx.exception.detail)
        good = os.path.join(CORPUS, "good_general.mtx")
        with self.assertRaises(spforge.Error):
            spforge.Matrix.read(good, max_bytes=8)
        self.assertEqual(spforge.Matrix.read(good, max_bytes=-1).shape,
                         spforge.Matrix.read(good).shape)
        with self.assertRaises(OverflowError):
            spforge.Matrix.read(good, max_bytes=2 ** 63)

    def test_output_sharing_memory_with_an_input(self):
        m, k, n = self.m, self.k, self.n
        buf = array.array("f", random_floats(64, 3))
        view = memoryview(buf)
        before = buf.tobytes()
        with spforge.Plan(self.a, n, strategy="cpu", bias=True) as plan:
            cases = [(view[:k * n], view[:m * n], view[40:40 + m]),  # the same memory
                     (view[:k * n], view[k * n - 1:k * n - 1 + m * n], view[40:40 + m]),
                     (view[20:20 + k * n], view[:m * n], view[m * n - 1:m * n - 1 + m])]
            for b, c, bias in cases:
                with self.assertRaises(ValueError) as ctx:
                    plan.execute(b, c, bias=bias)
                self.assertIn("shares memory", str(ctx.exception))
            self.assertEqual(buf.tobytes(), before)
            plan.execute(view[:k * n], view[k * n:k * n + m * n], bias=view[:m])  # apart
            # The library refuses it too, for callers that bypass the binding.
            address = buf.buffer_info()[0]
            with plan._use() as ptr:
                status = spforge.lib().spf_plan_execute(ptr, address, address + 4, address, None)
            self.assertEqual(status, -1)
            self.assertIn("overlaps b", spforge.lib().spf_last_error().decode())

    def test_non_finite_values(self):
        for value, name in ((float("nan"), "NaN"), (float("inf"), "inf"), (-float("inf"), "-inf")):
            with self.subTest(value=name), self.assertRaises(spforge.Error) as ctx:
                spforge.Matrix.from_csr(2, 3, [0, 1, 3], [2, 0, 1], [1.0, 2.0, value])
            self.assertEqual(ctx.exception.status, -7)
            self.assertIn("row 1, column 1: value %s" % name, ctx.exception.detail)

    def test_strided_buffers(self):
        m, k, n = self.m, self.k, self.n
        strided = memoryview(array.array("f", [1.0] * (2 * k * n)))[::2]
        with self.assertRaises(ValueError) as ctx:
            spforge.reference_spmm(self.a, strided, n)
        self.assertIn("C-contiguous", str(ctx.exception))
        with spforge.Plan(self.a, n, strategy="cpu") as plan, self.assertRaises(ValueError):
            plan.execute(self.b, memoryview(array.array("f", [0.0] * (2 * m * n)))[::2])

    def test_element_types_and_none(self):
        a, b, n = self.a, self.b, self.n
        with spforge.Plan(a, n, strategy="cpu") as plan:
            c = array.array("f", bytes(4 * self.m * n))
            cases = [lambda: spforge.reference_spmm(a, array.array("d", b), n),  # was converted
                     lambda: spforge.reference_spmm(a, array.array("i", [1] * len(b)), n),
                     lambda: spforge.reference_spmm(a, None, n),  # was spforge.Error
                     lambda: plan.execute(None, c),
                     lambda: plan.execute(b, array.array("d", bytes(8 * self.m * n))),
                     lambda: spforge.Matrix.from_csr(1, 2, [0, 1], array.array("q", [0])),
                     lambda: spforge.Matrix.from_csr(1, 2, [0, 1], [0], bytes(4)),
                     lambda: spforge.Matrix.from_csr(1, 2, [0, 1], None),
                     lambda: spforge.reference_spmm(None, b, n)]
            for i, call in enumerate(cases):
                with self.subTest(case=i), self.assertRaises(TypeError):
                    call()
        with self.assertRaises(OverflowError):  # a sequence element beyond int32
            spforge.Matrix.from_csr(1, 2, [0, 1], [2 ** 32 + 1])


@unittest.skipIf(numpy is None, "numpy is not installed")
class NumpyBoundaryTests(unittest.TestCase):
    def setUp(self):
        self.m, self.k, self.n = 5, 7, 3
        self.a = spforge.Matrix.generate(rows=self.m, cols=self.k, sparsity=0.4, seed=8)
        self.b = numpy.asarray(random_floats(self.k * self.n, 4)).reshape(self.k, self.n)

    def tearDown(self):
        self.a.close()

    def test_arrays_in_place(self):
        want = spforge.reference_spmm(self.a, self.b, self.n, accumulate="f64")
        with spforge.Plan(self.a, numpy.int64(self.n), strategy="cpu",
                          relu=numpy.bool_(False)) as plan:
            c = numpy.full((self.m, self.n), numpy.nan, numpy.float32)
            plan.execute(self.b, c)
            self.assertLessEqual(spforge.relative_error(c, want), 1e-6)

    def test_matmul_of_no_columns(self):
        """A @ B with B of N = 0 columns is the M×0 product (no plan made);
        B's K is still checked."""
        for order in ("C", "F"):
            c = self.a @ numpy.ones((self.k, 0), numpy.float32, order=order)
            self.assertEqual((type(c), c.shape, c.dtype), (numpy.ndarray, (self.m, 0),
                                                           numpy.float32))
        self.assertEqual(len(self.a._plans), 0)
        with self.assertRaises(ValueError):
            self.a @ numpy.ones((self.k + 1, 0), numpy.float32)

    def test_dense_and_scipy_views(self):
        """toarray() and numpy.asarray give the matrix dense; to_scipy() the
        same entries as scipy's CSR."""
        dense = self.a.toarray()
        self.assertEqual((dense.shape, dense.dtype), ((self.m, self.k), numpy.float32))
        row_ptr, col_idx, values = self.a._csr_numpy()
        self.assertEqual(int(numpy.count_nonzero(dense)), self.a.nnz)
        self.assertTrue(numpy.array_equal(numpy.asarray(self.a), dense))
        self.assertEqual(numpy.asarray(self.a, dtype=numpy.float64).dtype, numpy.float64)
        self.assertTrue(numpy.array_equal(self.a.T.toarray(), dense.T))
        try:
            import scipy  # noqa: F401
        except ImportError:
            return
        s = self.a.to_scipy()
        self.assertEqual(s.shape, (self.m, self.k))
        self.assertTrue(numpy.array_equal(s.toarray(), dense))
        self.assertTrue(numpy.array_equal(s.indptr, row_ptr))

    def test_wrong_arrays_raise(self):
        m, k, n, a, b = self.m, self.k, self.n, self.a, self.b
        wide = numpy.zeros((k, 2 * n), numpy.float32)
        cases = [(ValueError, lambda: spforge.reference_spmm(a, b.T.copy(), n)),  # N×K
                 (ValueError, lambda: spforge.reference_spmm(a, wide[:, :n], n)),  # strided
                 (ValueError, lambda: spforge.reference_spmm(a, numpy.asfortranarray(b), n)),
                 (TypeError, lambda: spforge.reference_spmm(a, b.astype(numpy.float64), n)),
                 (TypeError, lambda: spforge.reference_spmm(a, b.astype(">f4"), n)),
                 (TypeError, lambda: spforge.reference_spmm(a, b.astype(numpy.float16), n)),
                 (TypeError, lambda: spforge.Matrix.from_csr(1, 2, numpy.array([0, 1], numpy.int32),
                                                             [0])),
                 (ValueError, lambda: spforge.relative_error(numpy.zeros((2, 3), numpy.float32),
                                                             numpy.zeros((3, 2))))]
        for i, (kind, call) in enumerate(cases):
            with self.subTest(case=i), self.assertRaises(kind):
                call()
        with spforge.Plan(a, n, strategy="cpu") as plan:
            c = numpy.zeros((m, 2 * n), numpy.float32)
            with self.assertRaises(ValueError):  # a strided output is never copied
                plan.execute(b, c[:, :n])
            with self.assertRaises(TypeError):
                plan.execute(b, numpy.zeros((m, n)))
            shared = numpy.zeros(k * n + m * n, numpy.float32)
            with self.assertRaises(ValueError):  # C overlapping B
                plan.execute(shared[:k * n], shared[k * n - 1:k * n - 1 + m * n])


class MirrorTests(unittest.TestCase):
    """The ctypes mirrors of _capi.py against include/spforge.h: the same
    fields in the same order with the same C types (parsed from the
    header), and the same size as the C compiler gives each struct
    (spf_struct_sizes), so a field added to the header and not to the
    binding fails here instead of shifting every field after it."""

    MIRRORS = {"spf_read_options": "ReadOptions", "spf_gen_options": "GenOptions",
               "spf_matrix_stats": "MatrixStats", "spf_device_info": "DeviceInfo",
               "spf_kernel_config": "KernelConfig", "spf_plan_options": "PlanOptions",
               "spf_search_info": "SearchInfo", "spf_candidate": "Candidate",
               "spf_plan_info": "PlanInfo", "spf_matrix_name": "MatrixName",
               "spf_progress": "Progress",
               "spf_conv_desc": "ConvDesc", "spf_conv_info": "ConvInfo",
               "spf_dist_layout_info": "DistLayoutInfo"}
    SCALARS = {"int": "i32", "int32_t": "i32", "uint32_t": "u32", "int64_t": "i64",
               "uint64_t": "u64", "double": "f64"}

    @classmethod
    def setUpClass(cls):
        import re
        with open(os.path.join(SOURCE_DIR, "include", "spforge.h")) as f:
            text = re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)
        cls.enums = set(re.findall(r"typedef enum (spf_\w+) \{", text))
        cls.structs = {name: body for name, body in
                       re.findall(r"typedef struct (spf_\w+) \{(.*?)\} \1;", text, flags=re.S)}
        cls.defines = dict(re.findall(r"#define (SPF_\w+) (\d+)\n", text))
        # function pointer types: typedef int (*spf_x_fn)(const spf_y *a, void *b);
        cls.functions = {name: (ret, params) for ret, name, params in
                         re.findall(r"typedef (\w+) \(\*(spf_\w+)\)\((.*?)\);", text, flags=re.S)}

    def describe_c(self, base, declarator):
        """'i32', 'char[256]', 'ptr(KernelConfig)', 'KernelConfig', ... of one C field."""
        import re
        m = re.fullmatch(r"(\**)\s*(\w+)\s*(?:\[(\w+)\])?", declarator.strip())
        self.assertIsNotNone(m, "cannot parse declarator %r" % declarator)
        stars, name, length = m.groups()
        length = self.defines.get(length, length)
        if base == "char" and stars:
            kind = "char*"
        elif base == "void" and stars:
            kind = "void*"
        elif base in self.functions:
            ret, params = self.functions[base]
            args = []
            for param in params.split(","):
                words = " ".join(param.replace("*", " * ").split()).replace("const ", "")
                pbase, _, pdecl = words.partition(" ")
                args.append(self.describe_c(pbase, pdecl)[1])
            kind = "fn(%s: %s)" % (self.SCALARS.get(ret, ret), ", ".join(args))
        elif base == "char":
            kind = "char[%s]" % length
        elif base in self.enums:
            kind = "i32"  # C enums are int-sized (_capi.c_enum)
        elif base in self.MIRRORS:
            kind = ("ptr(%s)" if stars else "%s") % self.MIRRORS[base]
            if length:
                kind += "[%s]" % length
        else:
            self.assertIn(base, self.SCALARS, "field %s: no mirror type for C type %s" % (name, base))
            kind = self.SCALARS[base] + ("[%s]" % length if length else "")
        return name, kind

    @staticmethod
    def describe_ctypes(ctype):
        import ctypes
        names = {ctypes.c_int32: "i32", ctypes.c_uint32: "u32", ctypes.c_int64: "i64",
                 ctypes.c_uint64: "u64", ctypes.c_double: "f64", ctypes.c_char_p: "char*",
                 ctypes.c_void_p: "void*"}
        if ctype in names:
            return names[ctype]
        if hasattr(ctype, "_argtypes_"):  # a CFUNCTYPE
            return "fn(%s: %s)" % (MirrorTests.describe_ctypes(ctype._restype_), ", ".join(
                MirrorTests.describe_ctypes(t) for t in ctype._argtypes_))
        if getattr(ctype, "_type_", None) is ctypes.c_char and hasattr(ctype, "_length_"):
            return "char[%d]" % ctype._length_
        if hasattr(ctype, "_length_"):
            inner = names.get(ctype._type_) or ctype._type_.__name__
            return "%s[%d]" % (inner, ctype._length_)
        if hasattr(ctype, "contents"):
            return "ptr(%s)" % ctype._type_.__name__
        return ctype.__name__

    def test_fields_match_the_header(self):
        import ctypes
        from spforge import _capi
        for c_name, py_name in self.MIRRORS.items():
            self.assertIn(c_name, self.structs, "no struct %s in spforge.h" % c_name)
            want = []
            for decl in self.structs[c_name].split(";"):
                decl = " ".join(decl.split()).replace("const ", "")
                if not decl:
                    continue
                base, _, rest = decl.partition(" ")
                want += [self.describe_c(base, d) for d in rest.split(",")]
            got = [(name, self.describe_ctypes(t)) for name, t in getattr(_capi, py_name)._fields_]
            self.assertEqual(got, want, "%s mirrors %s" % (py_name, c_name))
        self.assertEqual(ctypes.sizeof(ctypes.c_int), 4)

    def test_sizes_match_the_compiler(self):
        import ctypes
        from spforge import _capi
        tool = os.environ.get("SPF_STRUCT_SIZES")
        if not tool:
            self.skipTest("SPF_STRUCT_SIZES not set (run through ctest)")
        lines = subprocess.run([tool], check=True, capture_output=True, text=True).stdout.split()
        sizes = dict(zip(lines[::2], map(int, lines[1::2])))
        self.assertEqual(set(sizes), set(self.MIRRORS))
        for c_name, py_name in self.MIRRORS.items():
            self.assertEqual(ctypes.sizeof(getattr(_capi, py_name)), sizes[c_name],
                             "sizeof %s vs %s" % (py_name, c_name))


def main():
    return unittest_run.run(__name__)


if __name__ == "__main__":
    sys.exit(main())
