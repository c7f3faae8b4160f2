"""spforge.torch on a GPU (ctest python_torch_gpu, labels gpu and python):
SparseConv2d against torch's conv2d (ConvGpuTests); SparseLinear against an fp32 reference of the same pruned weights in
float16, bfloat16 and float32, on torch's current stream and on another
one; under torch.compile (inductor, dynamic N, fullgraph; and
mode="reduce-overhead", which captures CUDA graphs itself; a layer of
dense plans traced as torch's linear); captured in a
CUDA graph by hand and replayed on new inputs; the error when a graph is
captured before a plan exists; sparsify on a small model with the
planner's gains in its report; backward raising "inference only".

Exits 77 (ctest: skipped), saying why, without torch, without a CUDA
device for torch, or when libspforge has no GPU backend or sees no device.
One command on the GPU host, after building the library:

    SPF_LIB=build/libspforge.so python3 tests/python/test_torch_gpu.py

Plans are built, not cached (SPFORGE_CACHE_DIR=off unless set)."""

import copy
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("SPF_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
if not os.environ.get("SPF_TEST_INSTALLED"):
    sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
os.environ.setdefault("SPFORGE_CACHE_DIR", "off")

import spforge  # noqa: E402
import unittest_run  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

TOL = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-4}  # of max |reference|


def why_skip():
    if torch is None:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    info = spforge.device_info()
    if not info["available"]:
        return "libspforge (%s) has no usable GPU: %s" % (spforge._capi.path, info["reason"])
    return None


def reference(x, weight, bias, relu=False):
    """Y = X·Wᵀ + b in float32 on the GPU (no TF32)."""
    y = torch.nn.functional.linear(x.float(), weight.float(),
                                   None if bias is None else bias.float())
    return torch.relu(y) if relu else y


class GpuTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.backends.cuda.matmul.allow_tf32 = False
        import spforge.torch as st
        cls.st = st

    def setUp(self):
        torch.manual_seed(7)

    def close(self, got, want, dtype):
        self.assertEqual(tuple(got.shape), tuple(want.shape))
        scale = max(1.0, float(want.float().abs().max())) if want.numel() else 1.0
        err = float((got.float() - want.float()).abs().max()) if want.numel() else 0.0
        self.assertLessEqual(err, TOL[dtype] * scale, "max error %.3e (scale %.3e)"
                             % (err, scale))

    def pruned_linear(self, k, m, dtype, sparsity, bias=True):
        linear = torch.nn.Linear(k, m, bias=bias, device="cuda", dtype=getattr(torch, dtype))
        self.st.magnitude_prune(torch.nn.Sequential(linear), sparsity, min_size=0)
        return linear

    def test_against_reference(self):
        for dtype in ("float16", "bfloat16", "float32"):
            for bias, relu in ((True, False), (False, True), (True, True)):
                linear = self.pruned_linear(256, 192, dtype, 0.8, bias)
                layer = self.st.SparseLinear.from_linear(
                    linear, activation="relu" if relu else None, n_plans="auto")
                for shape in ((1, 256), (7, 256), (2, 32, 256), (65, 256), (3, 100, 256)):
                    x = torch.randn(*shape, device="cuda", dtype=getattr(torch, dtype))
                    with self.subTest(dtype=dtype, bias=bias, relu=relu, shape=shape):
                        with torch.no_grad():
                            self.close(layer(x), reference(x, linear.weight, linear.bias, relu),
                                       dtype)
                plans = layer.plans()
                self.assertEqual([p["n"] for p in plans], [1, 8, 64, 65, 300])
                self.assertTrue(all(p["strategy"] != "cpu" for p in plans), plans)

    def test_pruning_on_the_device(self):
        """A cuda weight is ranked, selected and made dense again on its
        device: the same mask as the host's rule (fp16 weights have many
        equal magnitudes, so the ties are exercised), the same matrix as from
        the host copy, and dense_of gives back exactly the pruned weight."""
        from spforge._torch import _host_magnitude_keep, _magnitude_keep, dense_of
        for dtype in (torch.float16, torch.bfloat16, torch.float32):
            w = torch.randn(301, 517, device="cuda").to(dtype)
            w[:, :40] = 0.5  # a block of ties at the cut
            for sparsity in (0.0, 0.5, 0.9, 0.999):
                with self.subTest(dtype=str(dtype), sparsity=sparsity):
                    mask = _magnitude_keep(w, sparsity)
                    self.assertEqual(mask.device.type, "cuda")
                    host = _host_magnitude_keep(w.cpu(), sparsity)
                    self.assertTrue((mask.cpu().numpy() == host).all())
                    a = spforge.Matrix(w, mask=mask)
                    self.assertEqual([list(x) for x in a.csr()],
                                     [list(x) for x in spforge.Matrix(w.cpu(), mask=host).csr()])
                    dense = dense_of(a, dtype, w.device)
                    self.assertTrue(torch.equal(dense, w * mask.to(dtype)))

    def test_dense_plans_run_torch_linear(self):
        """A plan AUTO (here the strategy option) makes dense is freed and
        its N runs torch's linear on the pruned weight: made from the
        weight the layer was given (a copy: changing that weight after does
        not change the layer), exactly the matrix's entries; after
        release_plans the weight is made again from the matrix."""
        from spforge._torch import DENSE, dense_of
        linear = self.pruned_linear(384, 200, "float16", 0.7)
        pruned = linear.weight.detach().clone()
        layer = self.st.SparseLinear.from_linear(linear, plan_options={"strategy": "dense"})
        with torch.no_grad():
            linear.weight.mul_(2)
        plans = layer.prepare([1, 16])
        state = layer._layer
        self.assertEqual([p["strategy"] for p in plans], ["dense", "dense"])
        self.assertTrue(all(p["kernel_us"] and p["kernel_us"] > 0 for p in plans), plans)
        self.assertTrue(all(state.plans[n] is DENSE for n in (1, 16)))
        self.assertIsNone(state.source)
        self.assertTrue(torch.equal(state.dense_weight, pruned))
        self.assertTrue(torch.equal(dense_of(state.matrix, torch.float16, pruned.device),
                                    pruned))
        for made_again in (False, True):
            for n in (1, 5, 16):
                x = torch.randn(n, 384, device="cuda", dtype=torch.float16)
                with torch.no_grad():
                    self.close(layer(x), reference(x, pruned, linear.bias), "float16")
            self.assertEqual([p["n"] for p in layer.plans()], [1, 8, 16])
            self.assertTrue(torch.equal(state.dense_weight, pruned))
            if not made_again:
                self.assertEqual(layer.plans()[0], plans[0])
            layer.release_plans()
            self.assertEqual(layer.plans(), [])

    def test_cached_dense_plans_are_not_made(self):
        """With the plan cache on, a layer made again from the same weight
        finds its dense decisions there by the weight's name and runs them
        without making a Plan or a Matrix (cached_plan_info): the same
        summaries, from_cache, the same output; a miss (another N) still
        makes its plan."""
        import tempfile
        from unittest import mock
        from spforge import _torch
        linear = self.pruned_linear(320, 96, "float16", 0.7)
        x = torch.randn(16, 320, device="cuda", dtype=torch.float16)
        with tempfile.TemporaryDirectory() as folder, \
                mock.patch.dict(os.environ, {"SPFORGE_CACHE_DIR": folder}):
            first = self.st.SparseLinear.from_linear(linear, plan_options={"strategy": "dense"})
            built = first.prepare([1, 16])
            self.assertEqual([p["from_cache"] for p in built], [False, False])
            info = spforge.cached_plan_info(first._layer.matrix, 16, strategy="dense",
                                            dtype="float16", b_layout="n_first",
                                            c_layout="n_first", bias=True)
            self.assertEqual((info["strategy"], info["from_cache"], info["kernel_us"]),
                             ("dense", True, built[1]["kernel_us"]))
            no = AssertionError("made")
            with mock.patch.object(_torch, "Plan", side_effect=no), \
                    mock.patch.object(_torch, "Matrix", side_effect=no):
                # found by the weight's name: no Matrix (no CSR on the host)
                again = self.st.SparseLinear.from_linear(linear,
                                                         plan_options={"strategy": "dense"})
                loaded = again.prepare([1, 16])
            self.assertIsNone(again._layer._matrix)
            self.assertEqual(again._layer.known_as, first._layer.known_as)
            self.assertEqual([(p["strategy"], p["from_cache"], p["kernel_us"]) for p in loaded],
                             [("dense", True, p["kernel_us"]) for p in built])
            with torch.no_grad():
                self.close(again(x), reference(x, linear.weight, linear.bias), "float16")
            with mock.patch.object(_torch, "Plan", wraps=_torch.Plan) as made:
                again.prepare([64])
            self.assertEqual(made.call_count, 1)

    def test_streams(self):
        linear = self.pruned_linear(512, 256, "float16", 0.9)
        layer = self.st.SparseLinear.from_linear(linear)
        x = torch.randn(33, 512, device="cuda", dtype=torch.float16)
        want = reference(x, linear.weight, linear.bias)
        layer.prepare([33])
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(side):
            y = layer(x)
        side.synchronize()
        self.close(y, want, "float16")

    def test_torch_compile(self):
        dtype = "float16"
        model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                                    torch.nn.Linear(512, 256), torch.nn.ReLU(),
                                    torch.nn.Linear(256, 128)).to("cuda", torch.float16).eval()
        dense = copy.deepcopy(model)
        self.st.magnitude_prune(dense, 0.7, min_size=0)
        report = self.st.sparsify(model, 0.7, min_size=0)
        self.assertEqual(len(report.swapped), 3)
        self.assertEqual(report.fused, ["2"])
        compiled = torch.compile(model, dynamic=True, fullgraph=True)
        with torch.no_grad():
            for n in (5, 16, 77, 5):
                x = torch.randn(n, 256, device="cuda", dtype=torch.float16)
                with self.subTest(n=n):
                    self.close(compiled(x), dense(x), dtype)
        # reduce-overhead: torch records CUDA graphs after warm-up runs,
        # which make the plans (eager, before any capture).
        graphed = torch.compile(model, mode="reduce-overhead", fullgraph=True)
        with torch.no_grad():
            for n in (16, 16, 16, 40, 40, 40):
                x = torch.randn(n, 256, device="cuda", dtype=torch.float16)
                with self.subTest(mode="reduce-overhead", n=n):
                    self.close(graphed(x).clone(), dense(x), dtype)

    def test_compiled_dense_plans_trace_torch_linear(self):
        """Under torch.compile, a layer whose plans are all dense is traced
        as torch's linear (inductor fuses around it, no Python call per
        step); a layer with a sparse plan stays the op. Eager calls of 3-D
        inputs run both kinds too."""
        dtype = "float16"
        first, second = (self.pruned_linear(256, 384, dtype, 0.7),
                         self.pruned_linear(384, 128, dtype, 0.7))
        dense = torch.nn.Sequential(first, torch.nn.ReLU(), second)
        model = torch.nn.Sequential(
            self.st.SparseLinear.from_linear(first, activation="relu",
                                             plan_options={"strategy": "dense"}),
            self.st.SparseLinear.from_linear(second, plan_options={"strategy": "generic"}))
        for layer in model:
            layer.prepare([16])
        self.assertEqual([layer.plans()[0]["strategy"] for layer in model], ["dense", "generic"])
        graphs = []

        def record(gm, example_inputs):
            graphs.append(gm)
            return gm.forward
        compiled = torch.compile(model, backend=record, fullgraph=True, dynamic=False)
        with torch.no_grad():
            for shape in ((16, 256), (2, 8, 256)):
                x = torch.randn(*shape, device="cuda", dtype=torch.float16)
                with self.subTest(shape=shape):
                    self.close(compiled(x), dense(x), dtype)
                    self.close(model(x), dense(x), dtype)  # eager
            x = torch.randn(3, 0, 256, device="cuda", dtype=torch.float16)
            self.assertEqual(tuple(model(x).shape), (3, 0, 128))
        self.assertEqual(len(graphs), 2)  # one a shape

        def ops(gm):
            targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
            return (sum("spforge" in str(t) for t in targets),
                    targets.count(torch.nn.functional.linear))
        self.assertEqual([ops(gm) for gm in graphs], [(1, 1), (1, 1)])
        # Its plans freed, the dense layer is traced again, as the op.
        model[0].release_plans()
        with torch.no_grad():
            x = torch.randn(16, 256, device="cuda", dtype=torch.float16)
            self.close(compiled(x), dense(x), dtype)
        self.assertEqual(len(graphs), 3)
        self.assertEqual(ops(graphs[2]), (2, 0))

    def test_cuda_graph_capture(self):
        linear = self.pruned_linear(384, 1024, "float16", 0.7)
        layer = self.st.SparseLinear.from_linear(linear, activation="relu")
        n = 24
        layer.prepare([n])
        static_x = torch.randn(n, 384, device="cuda", dtype=torch.float16)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(side):
            for _ in range(2):
                layer(static_x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph):
            static_y = layer(static_x)
        for _ in range(3):
            static_x.copy_(torch.randn(n, 384, device="cuda", dtype=torch.float16))
            graph.replay()
            torch.cuda.synchronize()
            self.close(static_y, reference(static_x, linear.weight, linear.bias, True),
                       "float16")

    def test_capture_without_a_plan(self):
        layer = self.st.SparseLinear.from_linear(self.pruned_linear(128, 128, "float16", 0.5))
        x = torch.randn(12, 128, device="cuda", dtype=torch.float16)
        graph = torch.cuda.CUDAGraph()
        with self.assertRaises(RuntimeError) as ctx:
            with torch.no_grad(), torch.cuda.graph(graph):
                layer(x)
        self.assertIn("no plan for N = 16 and a CUDA graph is being captured", str(ctx.exception))
        torch.cuda.synchronize()
        with torch.no_grad():  # the device is still usable, and the plan is made outside
            self.assertEqual(tuple(layer(x).shape), (12, 128))

    def test_sparsify_report(self):
        model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                    torch.nn.Linear(4096, 1024), torch.nn.Linear(1024, 16))
        model = model.to("cuda", torch.float16).eval()
        dense = copy.deepcopy(model)
        self.st.magnitude_prune(dense, 0.9, min_size=1 << 16)
        report = self.st.sparsify(model, 0.9, min_size=1 << 16, ns=[16, 256])
        print(report)
        self.assertEqual(sorted(report.swapped), ["0", "2"])
        self.assertIn("< min_size", dict(report.kept)["3"])
        gains = report.expected_gain()
        self.assertEqual([g["n"] for g in gains], [16, 256])
        for g in gains:  # AUTO times the dense candidate beside the one it keeps
            self.assertEqual(g["measured"], 2, g)
            self.assertGreater(g["gain"], 0.5, g)
        x = torch.randn(16, 1024, device="cuda", dtype=torch.float16)
        with torch.no_grad():
            self.close(model(x), dense(x), "float16")

    def test_inference_only(self):
        layer = self.st.SparseLinear.from_linear(self.pruned_linear(64, 64, "float16", 0.5))
        x = torch.randn(4, 64, device="cuda", dtype=torch.float16, requires_grad=True)
        with self.assertRaises(RuntimeError) as ctx:
            layer(x).float().sum().backward()
        self.assertIn("inference only", str(ctx.exception))


class ConvGpuTests(unittest.TestCase):
    """SparseConv2d: the spforge plan of each shape (whichever way the layer
    then runs) and the module's output against torch's conv2d on the same
    pruned weight in float32 (no TF32), with and without a residual; odd
    sizes, stride 2, padding 0 / 1 / 3, C = 3; sparsify swapping the
    convolutions of a small model; sparsify_fused on a small ResNet."""

    SHAPES = [  # c, k, r, stride, padding, n, h, w
        (16, 24, 3, 1, 1, 2, 9, 11), (8, 5, 3, 2, 0, 3, 13, 7), (3, 12, 7, 2, 3, 1, 17, 15),
        (32, 16, 1, 1, 0, 1, 5, 6), (24, 8, 1, 2, 0, 2, 9, 9)]

    @classmethod
    def setUpClass(cls):
        torch.backends.cudnn.allow_tf32 = False
        import spforge.torch as st
        cls.st = st

    def setUp(self):
        torch.manual_seed(11)

    def close(self, got, want, dtype):
        self.assertEqual(tuple(got.shape), tuple(want.shape))
        scale = max(1.0, float(want.abs().max()))
        err = float((got.float() - want).abs().max())
        self.assertLessEqual(err, TOL[dtype] * scale, "max error %.3e" % err)

    def test_against_reference(self):
        for dtype in ("float16", "bfloat16", "float32"):
            dt = getattr(torch, dtype)
            for i, (c, k, r, stride, padding, n, h, w) in enumerate(self.SHAPES):
                for strategy in ("auto", "generic"):
                    residual = (i + len(strategy)) % 2 == 1
                    with self.subTest(dtype=dtype, shape=(c, k, r, stride, padding, n, h, w),
                                      strategy=strategy, residual=residual):
                        conv = torch.nn.Conv2d(c, k, r, stride, padding, device="cuda", dtype=dt)
                        layer = self.st.SparseConv2d.from_conv(
                            conv, sparsity=0.8, activation="relu", residual=residual,
                            plan_options={"strategy": strategy, "cache": False})
                        x = torch.randn(n, c, h, w, device="cuda", dtype=dt)
                        weight = layer._layer.dense_weight.float()
                        want = torch.nn.functional.conv2d(x.float(), weight, layer.bias, stride,
                                                          padding)
                        skip = torch.randn_like(want).to(dt) if residual else None
                        want = torch.relu(want + (skip.float() if residual else 0))
                        self.close(layer(x, skip), want, dtype)
                        entry = layer._layer.plan(n, h, w)
                        xs = x.contiguous(memory_format=torch.channels_last)
                        y = layer._layer._output(xs)
                        layer._layer._execute(entry["handle"], xs, y, layer.bias,
                                              layer._layer._residual(xs, skip))
                        self.close(y, want, dtype)  # the spforge plan, whichever runs
                        if strategy == "generic" and (r > 1 or stride > 1):
                            self.assertEqual(entry["path"], "implicit")
                        (plan,) = layer.plans()
                        self.assertGreaterEqual(plan["gain"], 1.0)

    def test_sparsify_swaps_convolutions(self):
        model = torch.nn.Sequential(
            torch.nn.Conv2d(16, 32, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(32),
            torch.nn.ReLU(), torch.nn.Conv2d(32, 32, 3, 2, 1, groups=2),
            torch.nn.Conv2d(32, 64, 1)).cuda().half().eval()
        x = torch.randn(2, 16, 10, 10, device="cuda", dtype=torch.float16)
        report = self.st.sparsify(model, sparsity=0.9, min_size=0)
        self.assertEqual(sorted(report.swapped), ["0", "4"])
        self.assertEqual([n for n, _ in report.kept], ["3"])
        self.assertIn("groups 2", report.kept[0][1])
        with torch.no_grad():
            y = model(x)
        self.assertEqual(tuple(y.shape), (2, 64, 5, 5))
        self.assertTrue(torch.isfinite(y).all())
        self.assertEqual(len(report.swapped["0"].plans()), 1)
        with self.assertRaises(RuntimeError):
            copy.deepcopy(model)[0]._apply(lambda t: t.cpu())

    def test_sparsify_fused(self):
        """A small ResNet of bottlenecks (the projection too), batch norms
        with their statistics from random images: sparsify_fused's model
        against the dense one with the same pruned weights, eager and
        replayed in a CUDA graph."""
        nn = torch.nn

        from bottleneck import Bottleneck as Block
        for dtype in (torch.float16, torch.float32):
            with self.subTest(dtype=dtype):
                model = nn.Sequential(nn.Conv2d(3, 32, 7, 2, 3, bias=False), nn.BatchNorm2d(32),
                                      nn.ReLU(), Block(32, 16, 1), Block(64, 16, 1),
                                      Block(64, 32, 2)).cuda().to(memory_format=torch.channels_last)
                with torch.no_grad():
                    for conv in (m for m in model.modules() if isinstance(m, nn.Conv2d)):
                        conv.weight.mul_(torch.rand_like(conv.weight) < 0.2)
                for bn in (m for m in model.modules() if isinstance(m, nn.BatchNorm2d)):
                    bn.momentum = None
                model.train()
                with torch.no_grad():
                    model(torch.randn(8, 3, 33, 33, device="cuda"))
                model = model.to(dtype).eval()
                x = torch.randn(2, 3, 33, 33, device="cuda", dtype=dtype).contiguous(
                    memory_format=torch.channels_last)
                fused, report = self.st.sparsify_fused(model, x, min_size=0,
                                                       plan_options={"cache": False})
                self.assertEqual(len(report.swapped), 12)
                self.assertEqual(sorted(report.residual), ["3.conv3", "4.conv3", "5.conv3"])
                with torch.no_grad():
                    want, got = model(x).float(), fused(x).float()
                err = float((got - want).norm() / want.norm())
                self.assertLess(err, 1e-2 if dtype == torch.float16 else 1e-4)
                graph = torch.cuda.CUDAGraph()
                with torch.no_grad(), torch.cuda.graph(graph):
                    replayed = fused(x)
                graph.replay()
                torch.cuda.synchronize()
                torch.testing.assert_close(replayed, fused(x))
                for layer in report.swapped.values():
                    layer.release_plans()

    def test_state_dict_saves_and_loads(self):
        """A sparsified model of convolutions and a Linear, fp16 on the GPU:
        its state_dict loads into the dense model (sparsify(None) then
        reproduces the outputs) and into another sparsified one; a whole-
        module pickle and a layer whose plans were released run the same."""
        import io
        import pickle
        model = torch.nn.Sequential(
            torch.nn.Conv2d(16, 32, 3, 1, 1), torch.nn.ReLU(), torch.nn.Conv2d(32, 8, 1),
            torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 24)).cuda().half().eval()
        dense = copy.deepcopy(model)
        self.st.sparsify(model, sparsity=0.8, min_size=0)
        self.assertIsInstance(model[0], self.st.SparseConv2d)
        x = torch.randn(2, 16, 6, 6, device="cuda", dtype=torch.float16)
        with torch.no_grad():
            want = model(x)
            state = model.state_dict()
            self.assertEqual(sorted(state), sorted(dense.state_dict()))
            fresh = copy.deepcopy(dense)
            fresh.load_state_dict(state)
            self.st.sparsify(fresh, None, min_size=0)
            other = copy.deepcopy(dense)
            self.st.sparsify(other, 0.5, min_size=0)
            other.load_state_dict(state)
            buffer = io.BytesIO()
            torch.save(model, buffer)
            buffer.seek(0)
            whole = torch.load(buffer, weights_only=False)
            back = pickle.loads(pickle.dumps(model[0]))
            for name, got in (("dense + sparsify(None)", fresh(x)), ("sparse", other(x)),
                              ("whole module", whole(x))):
                with self.subTest(name=name):
                    self.close(got, want.float(), "float16")
            self.close(back(x), model[0](x).float(), "float16")

    def test_refusals(self):
        conv = torch.nn.Conv2d(4, 4, 3, dilation=2, device="cuda")
        with self.assertRaises(ValueError) as ctx:
            self.st.SparseConv2d.from_conv(conv)
        self.assertIn("dilation", str(ctx.exception))
        layer = self.st.SparseConv2d.from_conv(torch.nn.Conv2d(4, 4, 3, device="cuda"),
                                               sparsity=0.5)
        with self.assertRaises(ValueError):
            layer(torch.randn(1, 5, 8, 8, device="cuda"))
        with self.assertRaises(TypeError):
            layer(torch.randn(1, 4, 8, 8, device="cuda", dtype=torch.float16))


def main():
    def banner():
        return "spforge.torch on %s, torch %s, library %s" % (
            torch.cuda.get_device_name(), torch.__version__, spforge._capi.path)
    return unittest_run.run(__name__, why_skip, banner)


if __name__ == "__main__":
    sys.exit(main())
