"""The binding at its boundaries (issue 48), each case one that crashed the
interpreter, used freed memory or let wrong data in before:

  - handles that cannot dangle: copy / deepcopy / pickle of a Matrix and a
    Plan; close() from another thread while a call runs (ctypes releases the
    GIL during it), and from the progress callback of the plan being made
    from the matrix; A @ B's plan kept per matrix and evicted while in use;
  - inputs validated before anything reads them: a scipy CSR whose indptr
    decreases or runs past its arrays, a COO of out-of-range indices, names
    with a NUL, arrays of Python objects (TypeError, as documented).

Under the sanitizer build (ctest in build-asan) the library runs with the
ASan runtime preloaded, so a use after free or a double free is a report
that fails the test, not a silent success. Exit 77 where the library cannot
be loaded or numpy is missing."""

import copy
import os
import pickle
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("SPF_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, HERE)

import spforge  # noqa: E402
import unittest_run  # noqa: E402

try:
    import numpy
except ImportError:
    numpy = None
try:
    import scipy.sparse as scipy_sparse
except ImportError:
    scipy_sparse = None


def matrix(rows=64, cols=48, sparsity=0.8, seed=1):
    return spforge.Matrix.generate(rows=rows, cols=cols, sparsity=sparsity, seed=seed)


class HandleTests(unittest.TestCase):
    def test_copies_of_a_matrix_are_independent(self):
        a = matrix()
        x = numpy.ones((48, 3), numpy.float32)
        want = a @ x
        for make in (copy.copy, copy.deepcopy, lambda m: pickle.loads(pickle.dumps(m))):
            with self.subTest(make=make):
                b = make(a)
                self.assertEqual((b.shape, b.nnz), (a.shape, a.nnz))
                self.assertEqual([list(t) for t in b.csr()], [list(t) for t in a.csr()])
                del b  # frees the copy only
                numpy.testing.assert_array_equal(a @ x, want)
        b = copy.copy(a)
        b.close()
        b.close()  # exactly once
        numpy.testing.assert_array_equal(a @ x, want)
        with self.assertRaises(ValueError):
            b @ x

    def test_copies_of_a_plan_share_it_until_the_last_lets_go(self):
        a = matrix()
        x = numpy.ones((48, 3), numpy.float32)
        plan = spforge.Plan(a, 3, strategy="cpu")
        want = plan(x)
        twins = [copy.copy(plan), copy.deepcopy(plan)]
        plan.close()
        with self.assertRaises(ValueError):
            plan(x)
        for twin in twins:
            numpy.testing.assert_array_equal(twin(x), want)
            self.assertIn("strategy=cpu", repr(twin))
            twin.close()
        self.assertEqual(repr(twins[0]), "<spforge.Plan closed>")
        with self.assertRaises(TypeError) as ctx:
            pickle.dumps(spforge.Plan(a, 3, strategy="cpu"))
        self.assertIn("pickle its Matrix", str(ctx.exception))

    def test_close_from_another_thread_waits_for_the_call(self):
        a = matrix(2048, 2048, 0.5)
        x = numpy.ones((2048, 64), numpy.float32)
        for owner in ("plan", "matrix"):
            with self.subTest(owner=owner):
                plan = spforge.Plan(a, 64, strategy="cpu")
                want = plan(x)
                results, errors = [], []

                def run():
                    try:
                        for _ in range(50):
                            results.append(plan(x) if owner == "plan" else a @ x)
                    except ValueError as e:
                        errors.append(e)

                worker = threading.Thread(target=run)
                worker.start()
                time.sleep(0.02)
                (plan if owner == "plan" else a).close()
                worker.join()
                self.assertTrue(results, "no call ran before close()")
                for got in results:
                    numpy.testing.assert_array_equal(got, want)
                if errors:
                    self.assertIn("used after close()", str(errors[0]))
                plan.close()
                a = matrix(2048, 2048, 0.5)

    def test_closing_the_matrix_from_the_plans_progress_callback(self):
        a = matrix()
        x = numpy.ones((48, 2), numpy.float32)
        want = spforge.Plan(matrix(), 2, strategy="cpu")(x)
        seen = []

        def hook(event):
            seen.append(event)
            a.close()

        plan = spforge.Plan(a, 2, strategy="cpu", progress=hook)
        self.assertTrue(seen)
        numpy.testing.assert_array_equal(plan(x), want)
        with self.assertRaises(ValueError):
            a.nnz

    def test_matmul_plans_evicted_while_in_use(self):
        a = matrix(256, 256, 0.7)
        xs = [numpy.ones((256, n), numpy.float32) for n in range(1, 13)]
        errors = []

        def run(offset):
            try:
                for i in range(24):
                    x = xs[(i + offset) % len(xs)]
                    numpy.testing.assert_allclose(a @ x, spforge.reference_spmm(a, x, x.shape[1]),
                                               rtol=1e-5, atol=1e-5)
            except Exception as e:  # noqa: BLE001: reported below
                errors.append(e)

        workers = [threading.Thread(target=run, args=(k,)) for k in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        self.assertEqual(errors, [])


class InputTests(unittest.TestCase):
    @unittest.skipIf(scipy_sparse is None, "scipy is not installed")
    def test_scipy_arrays_checked_first(self):
        data = numpy.ones(3, numpy.float32)
        cases = [
            ("csr", (data, numpy.array([0, 1, 2]), numpy.array([0, 2, 1, 3])),
             "indptr[2] = 1: the offsets must start at 0 and never decrease"),
            ("csr", (data, numpy.array([0, 1, 2]), numpy.array([1, 2, 3, 3])),
             "indptr[0] = 1"),
            ("csr", (data, numpy.array([0, 1, 2]), numpy.array([0, 1, 2, 9])),
             "indptr ends at 9, past its 3 indices"),
            ("csr", (data, numpy.array([0, 7, 2]), numpy.array([0, 1, 2, 3])),
             "indices[1] = 7 outside [0, 3)"),
            ("csc", (data, numpy.array([0, 1, 2]), numpy.array([0, 3, 1, 3])),
             "indptr[2] = 1"),
        ]
        for fmt, arrays, words in cases:
            with self.subTest(fmt=fmt, words=words):
                make = scipy_sparse.csr_matrix if fmt == "csr" else scipy_sparse.csc_matrix
                m = make((3, 3))
                m.data, m.indices, m.indptr = arrays  # as a careless builder leaves them
                with self.assertRaises(ValueError) as ctx:
                    spforge.Matrix(m)
                self.assertIn(words, str(ctx.exception))
        coo = scipy_sparse.coo_matrix((3, 3))
        coo.row, coo.col, coo.data = numpy.array([0, 5]), numpy.array([0, 1]), data[:2]
        with self.assertRaises(ValueError) as ctx:
            spforge.Matrix(coo)
        self.assertIn("row[1] = 5 outside [0, 3)", str(ctx.exception))
        good = scipy_sparse.random(5, 4, density=0.5, format="csr", random_state=1)
        self.assertEqual(spforge.Matrix(good).nnz, good.nnz)

    def test_names_with_a_nul_are_refused(self):
        a = matrix()
        for kwargs in ({"strategy": "cpu\0zzz"}, {"dtype": "f32\0"}, {"math": "default\0x"}):
            with self.subTest(kwargs=kwargs), self.assertRaises(ValueError) as ctx:
                spforge.Plan(a, 2, **kwargs)
            self.assertIn("NUL", str(ctx.exception))

    def test_object_arrays_are_a_type_error(self):
        a = matrix()
        with self.assertRaises(TypeError) as ctx:
            a @ numpy.array([[object()] * 3] * 48)
        self.assertIn("object", str(ctx.exception))
        with self.assertRaises(TypeError):
            spforge.reference_spmm(a, numpy.array([[object()] * 2] * 48), 2)


if __name__ == "__main__":
    sys.exit(unittest_run.run(__name__, "numpy is not installed" if numpy is None else None))
