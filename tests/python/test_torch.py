"""Tests of spforge.torch (python/spforge/_torch.py) on CPU plans:
SparseLinear against nn.Linear with the same pruned weights (bias or none,
ReLU fused, other activations after, any leading dimensions and N, the
three n_plans policies), masks, thresholds and magnitude pruning, sparsify
on a small model (what it swaps, keeps, fuses; its report and expected
gains; min_gain; exclude; a Linear held twice), the inference-only
backward, and the errors.

Two runs of this file (ctest): python_torch on the real torch (skipped,
exit 77, where torch is not installed), python_torch_fake with
SPF_FAKE_TORCH=1 on tests/python/fake_torch.py installed as
sys.modules["torch"] (CI: torch is not installed there), where the tests
that need torch's machinery (autograd, torch.compile, opcheck) skip,
saying so. Where the library cannot be loaded, exit 77. The GPU half:
test_torch_gpu.py."""

import copy
import io
import json
import os
import pickle
import subprocess
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("SPF_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
if not os.environ.get("SPF_TEST_INSTALLED"):
    sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, HERE)

FAKE = bool(os.environ.get("SPF_FAKE_TORCH"))
SKIP = None
try:
    import numpy
except ImportError:
    numpy = None
    SKIP = "numpy is not installed (spforge.torch converts weights with it)"
if FAKE and numpy is not None:
    import fake_torch
    sys.modules["torch"] = fake_torch
try:
    import torch
except ImportError:
    torch = None
    SKIP = SKIP or ("torch is not installed: the real-torch tests skip (the adapter is tested on "
                    "fake_torch by python_torch_fake)")

import spforge  # noqa: E402
import unittest_run  # noqa: E402

if torch is not None and SKIP is None:
    import spforge.torch as st  # noqa: E402
    from spforge import _torch  # noqa: E402
real = unittest.skipIf(FAKE, "needs the real torch (autograd, torch.compile, opcheck)")


def pruned(linear, sparsity):
    """A copy of linear with its weights pruned as sparsify prunes them."""
    dense = copy.deepcopy(linear)
    names = st.magnitude_prune(dense, sparsity, min_size=0) if not isinstance(
        dense, torch.nn.Linear) else None
    if names is None:
        mask = st.magnitude_mask(dense.weight, sparsity)
        with torch.no_grad():
            dense.weight.mul_(torch.from_numpy(mask.astype(numpy.float32)))
    return dense


def host(t):
    return t.detach().cpu().float().numpy().astype(numpy.float64)


class Tiny(torch.nn.Module if torch is not None else object):
    """A small model: a Sequential with a fusable ReLU, a GELU, a small
    head, and one Linear held in two places."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(64, 320), torch.nn.ReLU(),
                                        torch.nn.Linear(320, 64), torch.nn.GELU())
        self.shared = torch.nn.Linear(64, 256)
        self.again = self.shared
        self.head = torch.nn.Linear(256, 8)

    def forward(self, x):
        return self.head(self.again(self.body(x)))


class SparseLinearTests(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(3)

    def close(self, got, want, tol=1e-5):
        got, want = host(got), host(want)
        self.assertEqual(got.shape, want.shape)
        if not want.size:
            return
        scale = max(1.0, float(numpy.abs(want).max()))
        self.assertLessEqual(float(numpy.abs(got - want).max()), tol * scale)

    def test_against_linear(self):
        for bias in (True, False):
            linear = torch.nn.Linear(96, 40, bias=bias)
            dense = pruned(linear, 0.75)
            for n_plans in ("exact", "pow2", "auto"):
                layer = st.SparseLinear.from_linear(linear, sparsity=0.75, n_plans=n_plans)
                self.assertEqual(layer.nnz, int((host(dense.weight) != 0).sum()))
                self.assertAlmostEqual(layer.sparsity, 0.75, places=2)
                for shape in ((1, 96), (3, 96), (2, 5, 96), (65, 96), (2, 3, 2, 96), (0, 96)):
                    x = torch.randn(*shape)
                    with self.subTest(bias=bias, n_plans=n_plans, shape=shape):
                        self.close(layer(x), dense(x))

    def test_plans_per_n(self):
        linear = torch.nn.Linear(32, 16)
        want = {"exact": [3, 5, 9, 70], "pow2": [4, 8, 16, 128], "auto": [4, 8, 16, 70]}
        for policy, ns in want.items():
            layer = st.SparseLinear.from_linear(linear, sparsity=0.5, n_plans=policy)
            for n in (3, 5, 9, 70, 5):
                layer(torch.randn(n, 32))
            with self.subTest(policy=policy):
                self.assertEqual([p["n"] for p in layer.plans()], ns)
                for p in layer.plans():
                    self.assertEqual((p["strategy"], p["gain"], p["from_cache"]),
                                     ("cpu", None, False))
                    self.assertGreater(p["plan_s"], 0)
                layer.release_plans()
                self.assertEqual(layer.plans(), [])
                self.assertEqual([p["n"] for p in layer.prepare([2, 64, 65])],
                                 sorted({_torch.plan_rows(n, policy) for n in (2, 64, 65)}))

    def test_masks_and_thresholds(self):
        linear = torch.nn.Linear(48, 24)
        w = host(linear.weight)
        mask = numpy.abs(w) > 0.1
        by_mask = st.SparseLinear.from_linear(linear, mask=torch.from_numpy(mask))
        by_threshold = st.SparseLinear(linear.weight, linear.bias, threshold=0.1)
        self.assertEqual(by_mask.nnz, int(mask.sum()))
        self.assertEqual(by_threshold.nnz, int(mask.sum()))
        dense = copy.deepcopy(linear)
        with torch.no_grad():
            dense.weight.mul_(torch.from_numpy(mask.astype(numpy.float32)))
        x = torch.randn(6, 48)
        self.close(by_mask(x), dense(x))
        self.close(by_threshold(x), dense(x))
        nonzeros = st.SparseLinear(dense.weight, dense.bias)  # already pruned: its nonzeros
        self.assertEqual(nonzeros.nnz, int(mask.sum()))
        self.close(nonzeros(x), dense(x))
        m = st.magnitude_mask(linear.weight, 0.9)
        self.assertEqual(int(m.sum()), round(0.1 * w.size))
        self.assertTrue(numpy.abs(w[m]).min() >= numpy.abs(w[~m]).max())
        self.assertEqual(int(st.magnitude_mask(linear.weight, 0).sum()), w.size)
        # of equal magnitudes, the first in row-major order: the rule the
        # device ranking (test_torch_gpu.py) shares
        ties = torch.tensor(numpy.array([[1, -2, 2, 1], [2, 1, -1, 3]], numpy.float32))
        self.assertEqual(st.magnitude_mask(ties, 0.5).tolist(),
                         [[False, True, True, False], [True, False, False, True]])
        self.assertEqual(st.magnitude_mask(ties, 0.25).tolist(),
                         [[True, True, True, True], [True, False, False, True]])

    def test_activations(self):
        linear = torch.nn.Linear(40, 30)
        dense = pruned(linear, 0.5)
        F = torch.nn.functional
        x = torch.randn(7, 40)
        y = dense(x)
        cases = {"relu": F.relu(y), "gelu": F.gelu(y), "gelu_tanh": F.gelu(y, approximate="tanh"),
                 "silu": F.silu(y)}
        for act, want in cases.items():
            layer = st.SparseLinear.from_linear(linear, sparsity=0.5, activation=act)
            with self.subTest(activation=act):
                self.assertEqual(layer._layer.relu, act == "relu")  # only ReLU is fused
                self.close(layer(x), want)
        layer = st.SparseLinear.from_linear(linear, sparsity=0.5, activation=F.silu)
        self.close(layer(x), cases["silu"])
        self.assertIn("activation=relu (fused)", repr(st.SparseLinear.from_linear(
            linear, sparsity=0.5, activation="relu")))

    def test_sparsify(self):
        model = Tiny().eval()
        dense = copy.deepcopy(model)
        self.assertEqual(st.magnitude_prune(dense, 0.6, min_size=4096, exclude=["body.2"]),
                         ["body.0", "shared"])
        bar = io.StringIO()
        with mock.patch.object(sys, "stderr", bar):
            report = st.sparsify(model, 0.6, min_size=4096, exclude=["body.2"], ns=[5, 7],
                                 progress=True)
        # one line, rewritten per layer (4 distinct Linear layers), the last
        # one the head's
        self.assertEqual(bar.getvalue().count("\n"), 1)
        self.assertIn("layer 4/4", bar.getvalue())
        self.assertIn("s left (head)", bar.getvalue())
        self.assertGreater(report.seconds, 0.0)
        self.assertIn(" s", str(report).splitlines()[0])
        with self.assertRaises(TypeError):
            st.sparsify(Tiny(), 0.6, ns=[5], progress="yes")
        self.assertEqual(sorted(report.swapped), ["body.0", "shared"])
        self.assertIs(model.again, model.shared)  # held twice, swapped once
        self.assertIsInstance(model.shared, st.SparseLinear)
        self.assertEqual(report.fused, ["body.0"])
        self.assertIsInstance(model.body._modules["1"], torch.nn.Identity)
        kept = dict(report.kept)
        self.assertEqual(kept["body.2"], "excluded")
        self.assertIn("< min_size 4096", kept["head"])
        x = torch.randn(5, 64)
        self.close(model(x), dense(x))
        x = torch.randn(3, 2, 64)
        self.close(model(x), dense(x))
        rows = {r["name"]: r for r in report.rows()}
        self.assertEqual(rows["shared"]["shape"], (256, 64))
        self.assertTrue(rows["body.0"]["fused_relu"])
        self.assertEqual([p["n"] for p in rows["shared"]["plans"]], [8])  # auto: 5, 7 -> 8
        gain = report.expected_gain()
        self.assertEqual([(g["n"], g["layers"], g["measured"], g["gain"]) for g in gain],
                         [(8, 2, 0, None)])
        text = str(report)
        for words in ("2 Linear layers swapped, 2 kept dense", "+relu fused", "kept head",
                      "gain unknown"):
            self.assertIn(words, text)
        json.dumps(report.to_dict())
        lazy = st.sparsify(torch.nn.Sequential(torch.nn.Linear(4, 4)), 0.5, min_size=0)
        self.assertEqual((lazy.rows()[0]["plans"], lazy.expected_gain()), ([], []))
        self.assertIn("no plans yet", str(lazy))

    def test_expected_gain_from_the_plans_timings(self):
        def info(chosen, candidates):  # what Plan.info() gives, in part
            return {"strategy": chosen, "config": "", "kernel_us": 0.0, "from_cache": True,
                    "candidates": [{"strategy": s, "outcome": o, "kernel_us": us}
                                   for s, o, us in candidates]}

        tc = _torch._summary(info("tcfrag", [("tcfrag", "chosen", 20.0),
                                             ("dense", "slower", 30.0),
                                             ("generic", "skipped", 0.0)]), 16, 0.5)
        self.assertEqual((tc["strategy"], tc["kernel_us"], tc["dense_us"], tc["gain"]),
                         ("tcfrag", 20.0, 30.0, 1.5))
        nodense = _torch._summary(info("generic", [("generic", "chosen", 10.0),
                                                   ("dense", "refused", 0.0)]), 16, 0.1)
        self.assertEqual((nodense["kernel_us"], nodense["gain"]), (10.0, None))
        # min_gain: a layer whose plans measured less stays an nn.Linear, pruned
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 64))
        dense = pruned(model, 0.5)
        gains = iter([[1.5], [0.9]])

        def prepare(layer, ns):
            layer._layer.plan(8)
            return [{"n": 8, "gain": g} for g in next(gains)]

        with mock.patch.object(st.SparseLinear, "prepare", prepare):
            report = st.sparsify(model, 0.5, min_size=0, ns=[8], min_gain=1.1)
        self.assertEqual(list(report.swapped), ["0"])
        self.assertEqual(report.kept, [("1", "expected gain 0.90x < min_gain 1.10 (weights "
                                              "pruned, kept dense)")])
        self.assertEqual(type(model._modules["1"]), torch.nn.Linear)
        self.close(model._modules["1"].weight, dense._modules["1"].weight, 0)
        x = torch.randn(4, 64)
        self.close(model(x), dense(x))

    @real
    def test_pickle_keeps_the_layer(self):
        """A whole-module pickle (torch.save(model)) carries the matrix and the
        options, and the copy makes its plans again: the same outputs."""
        layer = st.SparseLinear.from_linear(torch.nn.Linear(16, 8), sparsity=0.5,
                                            activation="relu")
        x = torch.randn(5, 16)
        with torch.no_grad():
            want = layer(x)
            back = pickle.loads(pickle.dumps(layer))
            self.assertIsNot(back._layer, layer._layer)
            self.assertEqual(back.nnz, layer.nnz)
            self.close(back(x), want, tol=0)
            self.assertEqual(back._key, back._layer.key)

    @real
    def test_state_dict_saves_and_loads(self):
        """state_dict() holds the pruned weight and the bias as nn.Linear does
        (persistent), so a checkpoint loads into the dense model and
        sparsify(model, None) reproduces the outputs; into another sparse
        model; through torch.save / torch.load and safetensors; and refuses
        a weight of another shape or a missing one by name."""
        import io
        model = Tiny()
        dense = copy.deepcopy(model)
        st.sparsify(model, 0.7, min_size=0)
        x = torch.randn(3, 64)
        with torch.no_grad():
            want = model(x)
        state = model.state_dict()
        self.assertEqual(sorted(state), sorted(dense.state_dict()))
        self.assertEqual(tuple(state["body.0.weight"].shape), (320, 64))
        nnz = int((state["body.0.weight"] != 0).sum())
        self.assertEqual(nnz, model.body[0].nnz)
        fresh = copy.deepcopy(dense)
        fresh.load_state_dict(state)
        st.sparsify(fresh, None, min_size=0)
        other = copy.deepcopy(dense)
        st.sparsify(other, 0.3, min_size=0)
        other.load_state_dict(state)
        buffer = io.BytesIO()
        torch.save(state, buffer)
        buffer.seek(0)
        loaded = copy.deepcopy(dense)
        st.sparsify(loaded, 0.5, min_size=0)
        loaded.load_state_dict(torch.load(buffer))
        buffer = io.BytesIO()
        torch.save(model, buffer)
        buffer.seek(0)
        whole = torch.load(buffer, weights_only=False)
        with torch.no_grad():
            for name, got in (("dense + sparsify(None)", fresh), ("sparse", other),
                              ("torch.load", loaded), ("whole module", whole)):
                with self.subTest(name=name):
                    self.close(got(x), want, tol=0)
        try:
            from safetensors.torch import load_file, save_file
        except ImportError:
            load_file = None
        if load_file is not None:
            path = os.path.join(self.tmp(), "model.safetensors")
            save_file({k: v.contiguous() for k, v in state.items() if k != "again.weight"
                       and k != "again.bias"}, path)
            back = copy.deepcopy(dense)
            st.sparsify(back, 0.5, min_size=0)
            back.load_state_dict(load_file(path), strict=False)
            with torch.no_grad():
                self.close(back(x), want, tol=0)
        wrong = dict(state)
        wrong["head.weight"] = torch.zeros(3, 3)
        with self.assertRaises(RuntimeError) as ctx:
            other.load_state_dict(wrong)
        self.assertIn("size mismatch for head.weight", str(ctx.exception))
        missing = {k: v for k, v in state.items() if k != "head.weight"}
        with self.assertRaises(RuntimeError) as ctx:
            other.load_state_dict(missing)
        self.assertIn("head.weight", str(ctx.exception))

    @real
    def test_save_pretrained_then_from_pretrained(self):
        """transformers' save_pretrained of a sparsified BERT (built from a
        small config: nothing fetched) writes the pruned weights;
        from_pretrained of the dense class and sparsify(model, None)
        reproduce the outputs."""
        try:
            import transformers
        except ImportError:
            self.skipTest("transformers is not installed")
        config = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=2, intermediate_size=64,
                                         max_position_embeddings=32)
        model = transformers.BertModel(config).eval()
        st.sparsify(model, 0.7, min_size=0)
        ids = torch.randint(0, 64, (2, 9))
        with torch.no_grad():
            want = model(ids).last_hidden_state
        folder = self.tmp()
        model.save_pretrained(folder)
        loaded = transformers.BertModel.from_pretrained(folder).eval()
        st.sparsify(loaded, None, min_size=0)
        with torch.no_grad():
            self.close(loaded(ids).last_hidden_state, want, tol=1e-6)

    def tmp(self):
        import tempfile
        folder = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(folder, ignore_errors=True))
        return folder

    def test_inference_only(self):
        self.assertIn("inference only", st.INFERENCE_ONLY)
        if FAKE:  # the registered formula; the real torch runs it below
            with self.assertRaises(RuntimeError) as ctx:
                _torch.linear_op.backward(None, None)
            self.assertEqual(str(ctx.exception), st.INFERENCE_ONLY)
            return
        layer = st.SparseLinear.from_linear(torch.nn.Linear(16, 8), sparsity=0.5)
        x = torch.randn(3, 16, requires_grad=True)
        y = layer(x)
        with self.assertRaises(RuntimeError) as ctx:
            y.sum().backward()
        self.assertIn(st.INFERENCE_ONLY, str(ctx.exception))

    def test_errors(self):
        linear = torch.nn.Linear(16, 8)
        layer = st.SparseLinear.from_linear(linear, sparsity=0.5)
        layer.prepare([4])
        cases = [
            (ValueError, "the layer takes (..., 16)", lambda: layer(torch.randn(4, 15))),
            (TypeError, "input of torch.float64", lambda: layer(torch.randn(4, 16,
                                                                            dtype=torch.float64))),
            (TypeError, "cpu plans take float32",
             lambda: st.SparseLinear(torch.randn(8, 16, dtype=torch.float16))),
            (ValueError, "give one of mask, sparsity, threshold",
             lambda: st.SparseLinear.from_linear(linear, sparsity=0.5, threshold=0.1)),
            (ValueError, "sparsity: expected a number in [0, 1)",
             lambda: st.SparseLinear.from_linear(linear, sparsity=1.0)),
            (TypeError, "sparsity: expected a number",
             lambda: st.SparseLinear.from_linear(linear, sparsity=True)),
            (ValueError, "'dtype' is the layer's own",
             lambda: st.SparseLinear.from_linear(linear, plan_options={"dtype": "f16"})),
            (ValueError, "n_plans: expected one of auto, exact, pow2",
             lambda: st.SparseLinear.from_linear(linear, n_plans="all")),
            (ValueError, "activation: expected None, relu",
             lambda: st.SparseLinear.from_linear(linear, activation="tanh")),
            (TypeError, "expected a torch.nn.Linear",
             lambda: st.SparseLinear.from_linear(torch.nn.ReLU())),
            (ValueError, "weight must be 2-D", lambda: st.SparseLinear(torch.randn(16))),
            (ValueError, "bias must have 8 values",
             lambda: st.SparseLinear(linear.weight, torch.randn(7))),
            (ValueError, "min_gain needs ns",
             lambda: st.sparsify(torch.nn.Sequential(linear), 0.5, min_gain=1.1)),
            (ValueError, "sparsity: expected a number in [0, 1)",
             lambda: st.sparsify(torch.nn.Sequential(), 1.5)),
            (TypeError, "for a Linear itself use SparseLinear.from_linear",
             lambda: st.sparsify(linear, 0.5)),
            (ValueError, "spforge::linear: input of shape (4, 8); the layer takes (..., 16)",
             lambda: _torch.linear_op(torch.randn(4, 8), layer.bias, layer._key)),
            (ValueError, "SparseLinear: input of shape (2, 3, 8); the layer takes (..., 16)",
             lambda: layer(torch.randn(2, 3, 8))),
            (TypeError, "SparseLinear: input of torch.float64; the layer's plans take float32",
             lambda: layer(torch.randn(4, 16, dtype=torch.float64))),
            (ValueError, "bias missing, the layer was made with one",
             lambda: _torch.linear_op(torch.randn(4, 16), None, layer._key)),
            (RuntimeError, "no live SparseLinear has key -1",
             lambda: _torch.linear_op(torch.randn(4, 16), None, -1)),
        ]
        for i, (kind, words, call) in enumerate(cases):
            with self.subTest(case=i, words=words), self.assertRaises(kind) as ctx:
                call()
            self.assertIn(words, str(ctx.exception))
        with mock.patch.object(_torch, "_capturing", lambda device: True):
            with self.assertRaises(RuntimeError) as ctx:
                layer(torch.randn(33, 16))
            self.assertIn("no plan for N = 64 and a CUDA graph is being captured",
                          str(ctx.exception))
            layer(torch.randn(4, 16))  # N = 4 has its plan: runs under capture
        self.assertIs(copy.deepcopy(layer)._layer, layer._layer)  # copies share the plans
        if not FAKE:
            layer.half()  # leaves the plans' dtype and the fp32 bias as they are
            self.assertEqual(layer.bias.dtype, torch.float32)
            with self.assertRaises(RuntimeError) as ctx:
                layer.to("meta")
            self.assertIn("cannot move to meta", str(ctx.exception))

    @real
    def test_eager_calls_skip_the_op(self):
        layer = st.SparseLinear.from_linear(torch.nn.Linear(16, 8), sparsity=0.5)
        x = torch.randn(3, 16)
        with mock.patch.object(_torch, "linear_op", side_effect=AssertionError("op called")):
            with torch.no_grad():
                layer(x)
            with torch.inference_mode():
                layer(x)
            layer(x)  # grad enabled, but x needs none
        calls = []
        op = _torch.linear_op
        with mock.patch.object(_torch, "linear_op", lambda *a: calls.append(1) or op(*a)):
            layer(x.requires_grad_())  # autograd records: through the op
        self.assertEqual(calls, [1])

    def test_eager_calls_bound_per_shape(self):
        """An eager call binds its function to the input's shape, dtype and
        device once (checks included); later calls of that shape reuse it,
        an input that differs is checked again, and the shapes kept are
        bounded."""
        linear = torch.nn.Linear(16, 8)
        dense = pruned(linear, 0.5)
        layer = st.SparseLinear.from_linear(linear, sparsity=0.5)
        state = layer._layer
        made = []
        bind = state._eager_for
        with mock.patch.object(state, "_eager_for", lambda x, b: made.append(1) or bind(x, b)):
            for shape in ((2, 3, 16), (2, 3, 16), (6, 16), (2, 3, 16), (6, 16)):
                x = torch.randn(*shape)
                self.close(layer(x), dense(x))
            self.assertEqual(len(made), 2)
            with self.assertRaises(TypeError):
                layer(torch.randn(2, 3, 16, dtype=torch.float64))
            self.assertEqual(len(made), 3)
        self.assertEqual(len(state.eager), 2)
        with mock.patch.object(_torch, "EAGER_SHAPES", 2):
            for n in (1, 2, 3):
                layer(torch.randn(n, 16))
        self.assertLessEqual(len(state.eager), 2)
        layer.release_plans()
        self.assertEqual(state.eager, {})
        x = torch.randn(4, 16)
        self.close(layer(x), dense(x))

    def test_cached_dense_decision_makes_no_plan(self):
        """A device layer asks the plan cache first (its plan options less
        the progress hook): a dense decision found there runs torch's
        linear with no Plan made; anything else makes the Plan."""
        linear = torch.nn.Linear(16, 8)
        pruned(linear, 0.5)
        matrix = spforge.Matrix(linear.weight.detach().numpy())
        layer = _torch._Layer(matrix, 0, "float32", True, False, "pow2", {"progress": False},
                              "fc", source=linear.weight.detach())
        asked = []
        hit = {"strategy": "dense", "config": "algo 3", "kernel_us": 4.0, "from_cache": True,
               "candidates": [{"strategy": "dense", "outcome": "chosen", "kernel_us": 4.0}]}

        def cached(matrix_, n, **options):
            asked.append((matrix_, n, options))
            return hit if n == 8 else None

        made = mock.Mock(side_effect=_torch.Error(1, "NO_DEVICE", "made a Plan"))
        noted = mock.Mock(return_value=True)
        with mock.patch.object(_torch, "cached_plan_info", cached), \
                mock.patch.object(_torch, "note_cached_plan", noted), \
                mock.patch.object(_torch, "_capturing", lambda device: False), \
                mock.patch.object(_torch, "Plan", made):
            self.assertIs(layer.plan(8), _torch.DENSE)
            self.assertEqual(made.call_count, 0)
            self.assertEqual(layer.dense_ns, {8})
            self.assertIs(layer.dense_weight, layer.source)
            summary = layer.summary(8)
            self.assertEqual((summary["strategy"], summary["kernel_us"], summary["from_cache"]),
                             ("dense", 4.0, True))
            with self.assertRaises(_torch.Error) as ctx:
                layer.plan(16)  # a miss makes the Plan
            self.assertEqual(made.call_count, 1)
            self.assertIn("layer fc (8×16, nnz %d), N = 16: made a Plan" % matrix.nnz,
                          str(ctx.exception))
        self.assertEqual(noted.call_count, 0)  # a layer made with its Matrix has no name
        self.assertIs(asked[0][0], matrix)
        self.assertEqual(asked[0][2], {"dtype": "float32", "bias": True,
                                       "b_layout": "n_first", "c_layout": "n_first",
                                       "relu": False})
        self.assertEqual(made.call_args.kwargs, dict(asked[1][2], progress=False))

    @real
    def test_weights_name(self):
        """A weight's name: its shape and nnz, the same hash for equal
        weights (any device), another for a value changed or two swapped;
        none where a kept entry is zero or a value is not finite."""
        from spforge._torch_name import BLOCK, weights_name
        for dtype, shape in ((torch.float16, (300, 200)), (torch.bfloat16, (7, 33)),
                             (torch.float32, (64, BLOCK // 32 + 3))):
            w = torch.randn(*shape).to(dtype)
            w[w.abs() < 0.5] = 0
            keep = w != 0
            name = weights_name(w, keep)
            self.assertEqual((name.rows, name.cols, name.nnz), shape + (int(keep.sum()),))
            self.assertEqual(weights_name(w.clone(), keep.clone()), name)
            changed = w.clone()
            changed[-1, -1] = 2.5
            other = weights_name(changed, changed != 0)
            self.assertNotEqual(other.hash[0], name.hash[0])
            self.assertNotEqual(other.hash[1], name.hash[1])
            swapped = w.clone()
            i, j = keep.reshape(-1).nonzero()[:2, 0].tolist()
            flat = swapped.reshape(-1)
            flat[i], flat[j] = w.reshape(-1)[j], w.reshape(-1)[i]
            if flat[i] != flat[j]:
                self.assertNotEqual(weights_name(swapped, keep).hash, name.hash)
            zero_kept = keep.clone()
            zero_kept.reshape(-1)[(~keep).reshape(-1).nonzero()[0, 0]] = True
            self.assertIsNone(weights_name(w, zero_kept))
            bad = w.clone()
            bad.reshape(-1)[i] = float("nan")
            self.assertIsNone(weights_name(bad, keep))

    def test_named_layer_makes_its_matrix_only_when_needed(self):
        """A cuda layer known by its weight's name (no Matrix made) asks the
        cache by the name: a dense decision there needs no Matrix; a miss
        makes the Matrix from the pruned weight (its nonzeros), asks by it,
        makes the Plan and notes what the cache then holds under the name."""
        linear = torch.nn.Linear(16, 8)
        pruned(linear, 0.5)
        weight = linear.weight.detach()
        nnz = spforge.Matrix(weight.numpy()).nnz
        name = spforge.MatrixName(8, 16, nnz, (1, 2))
        layer = _torch._Layer(None, 0, "float32", False, False, "exact", {}, "fc",
                              source=weight, known_as=name)
        self.assertEqual((layer.m, layer.k, layer.nnz), (8, 16, nnz))
        hit = {"strategy": "dense", "config": "algo 3", "kernel_us": 4.0, "from_cache": True,
               "candidates": []}
        asked = []

        def cached(what, n, **options):
            asked.append((what, n))
            return hit if (what is name and n == 8) or n == 32 else None

        plan = mock.Mock()
        plan.info.return_value = dict(hit, from_cache=False)
        noted = mock.Mock(return_value=True)
        with mock.patch.object(_torch, "cached_plan_info", cached), \
                mock.patch.object(_torch, "note_cached_plan", noted), \
                mock.patch.object(_torch, "_capturing", lambda device: False), \
                mock.patch.object(_torch, "Plan", mock.Mock(return_value=plan)) as made:
            self.assertIs(layer.plan(8), _torch.DENSE)
            self.assertIsNone(layer._matrix)
            self.assertEqual((asked, made.call_count, noted.call_count), ([(name, 8)], 0, 0))
            self.assertIs(layer.plan(16), _torch.DENSE)  # made, dense, closed
            self.assertIsNotNone(layer._matrix)
            self.assertEqual(layer._matrix.nnz, nnz)
            self.assertEqual(asked[1:], [(name, 16), (layer._matrix, 16)])
            self.assertEqual(made.call_count, 1)
            self.assertEqual(plan.close.call_count, 1)
            self.assertEqual(noted.call_args.args, (layer._matrix, name, 16))
            self.assertIs(layer.plan(32), _torch.DENSE)  # found by the name
            self.assertEqual(asked[3:], [(name, 32)])
            self.assertEqual(noted.call_count, 1)
            other = _torch._Layer(None, 0, "float32", False, False, "exact", {}, "fc",
                                  source=weight, known_as=name)
            self.assertIs(other.plan(8), _torch.DENSE)
        other.sources_done()
        self.assertIsNone(other.source)
        self.assertIs(other.dense(), weight)  # kept as the dense plans' weight
        other.close()
        self.assertIsNone(other._matrix)
        self.assertIs(other.source, weight)  # what its Matrix would be made from

    @real
    def test_custom_op_under_torch_compile(self):
        layer = st.SparseLinear.from_linear(torch.nn.Linear(32, 24), sparsity=0.7,
                                            activation="relu")
        x = torch.randn(5, 32)
        result = torch.library.opcheck(torch.ops.spforge.linear.default,
                                       (x, layer.bias, layer._key))
        self.assertEqual(set(result.values()), {"SUCCESS"}, result)
        compiled = torch.compile(layer, backend="aot_eager", dynamic=True, fullgraph=True)
        with torch.no_grad():
            for n in (1, 5, 9, 100):
                x = torch.randn(2, n, 32)
                self.close(compiled(x), layer(x), 0)


class ImportTests(unittest.TestCase):
    def test_without_torch(self):
        """import spforge and spforge.torch never import torch; using
        spforge.torch without it raises an ImportError saying what to do."""
        code = ("import sys; sys.modules['torch'] = None\n"
                "import spforge, spforge.torch\n"
                "try:\n"
                "    spforge.torch.SparseLinear\n"
                "except ImportError as e:\n"
                "    print('ImportError:', e)\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE_DIR, "python"))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("ImportError: spforge.torch needs PyTorch (pip install torch", out.stdout)
        out = subprocess.run([sys.executable, "-c", "import sys, spforge, spforge.torch; "
                              "print('torch' in sys.modules)"], env=env, capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(out.stdout.strip(), "False", out.stderr)
        with self.assertRaises(AttributeError):
            spforge.torch.not_a_name


class StandIn(torch.nn.Module if torch is not None else object):
    """What SparseConv2d.from_conv makes, on the CPU: the folded conv, the
    residual added, the ReLU."""

    def __init__(self, conv, activation=None, residual=False, **_):
        super().__init__()
        self.conv, self.relu = copy.deepcopy(conv), activation == "relu"
        self.has_residual = residual

    def forward(self, x, residual=None):
        if (residual is not None) != self.has_residual:
            raise AssertionError("residual given: %s, expected: %s" % (residual is not None,
                                                                       self.has_residual))
        y = self.conv(x) + (0 if residual is None else residual)
        return torch.relu(y) if self.relu else y


@real
class FuseTests(unittest.TestCase):
    """sparsify_fused's rewrite: the output unchanged (the batch norms'
    statistics not trivial), no batch norm, ReLU module or add left, each
    convolution's ReLU and residual where they belong; exclude and
    min_size keep a convolution as torch's, with its batch norm folded."""

    def model(self):
        from bottleneck import Bottleneck
        torch.manual_seed(3)
        m = torch.nn.Sequential(Bottleneck(8, 4, 1, 2), Bottleneck(8, 4, 2, 2),
                                Bottleneck(8, 8, 1, 2),
                                Bottleneck(16, 8, 1, 2))  # the last adds the fused output before it
        for bn in (x for x in m.modules() if isinstance(x, torch.nn.BatchNorm2d)):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.2, 0.2)
        return m.eval()

    def test_rewrite(self):
        from spforge import _torch_fuse
        m = self.model()
        x = torch.randn(2, 8, 9, 9)
        with mock.patch.object(_torch_fuse, "conv_unsupported", lambda conv: None), \
                mock.patch.object(_torch_fuse.SparseConv2d, "from_conv", StandIn):
            gm, report = st.sparsify_fused(m, x, min_size=0, exclude=("2.conv2",))
        with torch.no_grad():
            torch.testing.assert_close(gm(x), m(x), rtol=1e-4, atol=1e-5)
        self.assertFalse(m.training or gm.training)
        kinds = [type(mod).__name__ for mod in gm.modules()]
        self.assertNotIn("BatchNorm2d", kinds)
        modules = dict(gm.named_modules())
        relus = [n.args[0].target for n in gm.graph.nodes if n.op == "call_module"
                 and isinstance(modules[n.target], torch.nn.ReLU)]
        self.assertEqual(relus, ["2.conv2"])  # the ReLU of the convolution kept as torch's
        self.assertFalse([n for n in gm.graph.nodes if n.op == "call_function"])
        swapped = sorted(report.swapped)
        self.assertEqual(len(swapped), 13)  # 14 convolutions, one excluded
        self.assertEqual(report.kept, [("2.conv2", "excluded")])
        self.assertEqual(sorted(report.residual), ["0.conv3", "1.conv3", "2.conv3", "3.conv3"])
        self.assertEqual(sorted(report.fused), sorted(
            "%d.conv%d" % (b, c) for b in range(4) for c in (1, 2, 3) if (b, c) != (2, 2)))
        self.assertNotIn("0.down.0", report.fused)  # the projection: no ReLU of its own
        self.assertTrue(isinstance(gm.get_submodule("2.conv2"), torch.nn.Conv2d)
                        and gm.get_submodule("2.conv2").bias is not None)  # kept, bn folded

    def test_add_of_another_shape_is_not_a_residual(self):
        from spforge import _torch_fuse

        class Broadcast(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(4, 6, 3, padding=1)
                self.register_buffer("shift", torch.randn(6, 1, 1))

            def forward(self, x):
                return torch.relu(self.conv(x) + self.shift)

        m = Broadcast().eval()
        x = torch.randn(1, 4, 5, 5)
        with mock.patch.object(_torch_fuse, "conv_unsupported", lambda conv: None), \
                mock.patch.object(_torch_fuse.SparseConv2d, "from_conv", StandIn):
            gm, report = st.sparsify_fused(m, x, min_size=0)
        self.assertEqual((report.residual, report.fused), ([], []))
        with torch.no_grad():
            torch.testing.assert_close(gm(x), m(x))


def main():
    return unittest_run.run(__name__, SKIP, lambda: "spforge.torch on %s (torch %s)" % (
        "fake_torch" if FAKE else "the real torch", torch.__version__))


if __name__ == "__main__":
    sys.exit(main())
