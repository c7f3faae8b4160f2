"""spforge.distributed (issue 15): DistSpMM on 1, 2 and 3 ranks of a gloo
process group (processes of this machine), each rank's rows of C against
the reference's same rows: a graph with B split as its rows, a
non-square A with B split evenly, and B replicated; both splits in two
layers (1.5-D, on 2 and 4 ranks); B's split chosen by the sizes (auto:
a budget of one byte splits, none replicates); the C API's plans over the
group's NCCL communicator (engine "nccl": on NCCL ranks, refused
elsewhere); every rank's
exchange counts agree with the others'. On the CPU (CPU plans); where
CUDA is there, on one GPU shared by every rank (the exchange through host
memory, as gloo needs): the several-ranks-on-one-GPU check of issue 15;
and on a host of several GPUs, over NCCL with a GPU a rank (2 to 4 ranks).
Skips (77) without torch or its distributed package."""

import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("SPF_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, HERE)

try:
    import numpy
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    SKIP = None if dist.is_available() else "torch has no distributed package"
except ImportError:
    SKIP = "torch (and numpy) not installed: spforge.distributed needs them"

import unittest_run  # noqa: E402

CASES = {  # name: generator kwargs, b_split, replicas (1.5-D), b_budget (auto)
    "graph": (dict(kind="rmat", rows=256, cols=256, sparsity=0.97, seed=5), "rows", 1, None),
    "wide": (dict(kind="uniform", rows=90, cols=200, sparsity=0.9, seed=6), "even", 1, None),
    "replicated": (dict(kind="rmat", rows=128, cols=128, sparsity=0.95, seed=7), "replicated", 1,
                   None),
    "graph 1.5-D": (dict(kind="rmat", rows=256, cols=256, sparsity=0.97, seed=8), "rows", 2, None),
    "wide 1.5-D": (dict(kind="uniform", rows=90, cols=200, sparsity=0.9, seed=9), "even", 2, None),
    # auto: 1 byte a rank holds no share of B (split, one copy); no budget
    # on the CPU replicates
    "auto tight": (dict(kind="rmat", rows=128, cols=128, sparsity=0.95, seed=10), "auto", 1, 1),
    "auto free": (dict(kind="uniform", rows=90, cols=200, sparsity=0.9, seed=11), "auto", 1,
                  None),
}
N = 7


def rank_main(rank, world, init, out, device):
    import spforge
    import spforge.distributed as sd
    backend = "gloo"
    if device == "nccl":  # one GPU a rank, the exchange through NCCL
        backend, device = "nccl", torch.device("cuda", rank)
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method="file://" + init, rank=rank, world_size=world)
    results = {}
    for name, (gen, split, replicas, budget) in sorted(CASES.items()):
        if world % replicas:
            continue
        a = spforge.Matrix.generate(**gen)
        m, k = a.shape
        b = numpy.random.default_rng(11).uniform(-1, 1, (k, N)).astype(numpy.float32)
        spmm = sd.DistSpMM(a, N, b_split=split, replicas=replicas, b_budget=budget,
                           device=device)
        mine = torch.from_numpy(b[spmm.b_rows.start:spmm.b_rows.stop]).to(device)
        c = spmm(mine).cpu().numpy()
        want = numpy.asarray(spforge.reference_spmm(a, b, N, accumulate="f64")).reshape(m, N)
        want = want[spmm.rows.start:spmm.rows.stop]
        results[name] = {"rows": [spmm.rows.start, spmm.rows.stop],
                         "error": float(numpy.abs(c - want).max()) if c.size else 0.0,
                         "shape": list(c.shape), "recv": spmm.recv_rows, "send": spmm.send_rows,
                         "split": spmm.b_split, "replicas": spmm.replicas,
                         "b_rows": [spmm.b_rows.start, spmm.b_rows.stop]}
    # engine "nccl": the C API's plans over the group's own communicator
    for name in ("graph", "wide"):
        gen, split = CASES[name][:2]
        a = spforge.Matrix.generate(**gen)
        m, k = a.shape
        if backend != "nccl":
            try:
                sd.DistSpMM(a, N, b_split=split, device=device, engine="nccl")
                results[name + " engine"] = "accepted"
            except ValueError as e:
                results[name + " engine"] = str(e)
            continue
        b = numpy.random.default_rng(12).uniform(-1, 1, (k, N)).astype(numpy.float32)
        spmm = sd.DistSpMM(a, N, b_split=split, device=device, engine="nccl")
        mine = torch.from_numpy(b[spmm.b_rows.start:spmm.b_rows.stop]).to(device)
        c = spmm(mine).cpu().numpy()
        want = numpy.asarray(spforge.reference_spmm(a, b, N, accumulate="f64")).reshape(m, N)
        results[name + " engine"] = {
            "rows": [spmm.rows.start, spmm.rows.stop],
            "error": float(numpy.abs(c - want[spmm.rows.start:spmm.rows.stop]).max())
            if c.size else 0.0}
    with open("%s.%d" % (out, rank), "w") as f:
        json.dump(results, f)
    dist.barrier()
    dist.destroy_process_group()


class DistributedTests(unittest.TestCase):
    def run_ranks(self, world, device):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            mp.spawn(rank_main, args=(world, os.path.join(tmp, "init"), out, device),
                     nprocs=world)
            return [json.load(open("%s.%d" % (out, r))) for r in range(world)]

    def check(self, device, worlds=(1, 2, 3, 4)):
        for world in worlds:
            ranks = self.run_ranks(world, device)
            for name, (gen, split, replicas, _) in CASES.items():
                if world % replicas:
                    continue
                with self.subTest(device=device, ranks=world, case=name):
                    got = [r[name] for r in ranks]
                    # the ranks' rows tile C, in order
                    self.assertEqual(got[0]["rows"][0], 0)
                    self.assertEqual(got[-1]["rows"][1], gen["rows"])
                    for a, b in zip(got, got[1:]):
                        self.assertEqual(a["rows"][1], b["rows"][0])
                    for r in got:
                        self.assertEqual(r["shape"], [r["rows"][1] - r["rows"][0], N])
                        self.assertLess(r["error"], 1e-4)
                    self.assertEqual(sum(r["recv"] for r in got), sum(r["send"] for r in got))
                    if world == 1 or got[0]["replicas"] == world:
                        self.assertEqual(sum(r["recv"] for r in got), 0)
                    # B's shards: each layer of world / replicas ranks holds
                    # all of B once, in order
                    q = world // got[0]["replicas"]
                    for layer in range(got[0]["replicas"]):
                        mine = got[layer * q:(layer + 1) * q]
                        self.assertEqual(mine[0]["b_rows"][0], 0)
                        self.assertEqual(mine[-1]["b_rows"][1], gen["cols"])
                        for x, y in zip(mine, mine[1:]):
                            self.assertEqual(x["b_rows"][1], y["b_rows"][0])
                    if name == "auto tight":
                        self.assertEqual((got[0]["split"], got[0]["replicas"]), ("rows", 1))
                    if name == "auto free":
                        self.assertEqual((got[0]["split"], got[0]["replicas"]),
                                         ("replicated", world))
            for name in ("graph", "wide"):
                with self.subTest(device=device, ranks=world, case=name + ", engine nccl"):
                    got = [r[name + " engine"] for r in ranks]
                    if device != "nccl":  # refused, saying why
                        for g in got:
                            self.assertIn("engine \"nccl\"", g)
                        continue
                    self.assertEqual(got[0]["rows"][0], 0)
                    self.assertEqual(got[-1]["rows"][1], CASES[name][0]["rows"])
                    for g in got:
                        self.assertLess(g["error"], 1e-4)

    def test_cpu(self):
        self.check("cpu")

    def test_one_gpu_shared(self):
        if not torch.cuda.is_available():
            self.skipTest("no CUDA device: the ranks sharing one GPU not run")
        self.check("cuda")

    def test_nccl_gpu_each(self):
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if gpus < 2 or not dist.is_nccl_available():
            self.skipTest("%d CUDA devices%s: the NCCL ranks (one GPU each) not run"
                          % (gpus, "" if dist.is_nccl_available() else ", no NCCL"))
        self.check("nccl", worlds=range(2, min(gpus, 4) + 1))


if __name__ == "__main__":
    sys.exit(unittest_run.run(__name__, SKIP, lambda: "spforge.distributed on torch %s"
                              % torch.__version__))
