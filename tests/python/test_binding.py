"""Tests of the ctypes binding (python/spforge) against libspforge ($SPF_LIB)
and the CLI ($SPF_CLI). Plain unittest; exits 77 (ctest: skipped) only when
the library cannot be loaded. The mirrored structs are checked through round
trips: stats equal to the CLI's --json, options that build a working plan."""

import array
import json
import os
import random
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("SPF_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

import spforge  # noqa: E402

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

    def test_plan_info_reports_search_and_cache(self):
        with spforge.Matrix.generate(rows=12, cols=10, sparsity=0.6, seed=5) as a, \
                spforge.Plan(a, 2, strategy="cpu") as plan:
            info = plan.info()
            self.assertIs(info["from_cache"], False)
            self.assertEqual(info["search"]["space"], 0)
            self.assertEqual(info["search"]["total_s"], 0.0)

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

    def test_auto_plan_without_gpu_raises(self):
        if spforge.device_info()["available"]:
            self.skipTest("this machine has a CUDA device")
        a = spforge.Matrix.generate(rows=8, cols=8, sparsity=0.5, seed=4)
        with self.assertRaises(spforge.Error) as ctx:
            spforge.Plan(a, 4, strategy="auto")
        self.assertEqual(ctx.exception.name, "no CUDA device")
        self.assertEqual(ctx.exception.status, -8)
        # no driver, or a build without the CUDA toolkit
        self.assertRegex(ctx.exception.detail, "no CUDA|without CUDA")


def main():
    try:
        spforge.version()
    except OSError as e:
        print("SKIP: %s" % e)
        return 77
    result = unittest.TextTestRunner(verbosity=2).run(
        unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__]))
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed" % (result.testsRun - failed - len(result.skipped), failed))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
