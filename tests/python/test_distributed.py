"""spforge.distributed (issue 15): DistSpMM on 1, 2 and 3 ranks of a gloo
process group (processes of this machine), each rank's rows of C against
the reference's same rows: a graph with B split as its rows, a
non-square A with B split evenly, and B replicated; every rank's
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

CASES = {  # name: generator kwargs, b_split
    "graph": (dict(kind="rmat", rows=256, cols=256, sparsity=0.97, seed=5), "rows"),
    "wide": (dict(kind="uniform", rows=90, cols=200, sparsity=0.9, seed=6), "even"),
    "replicated": (dict(kind="rmat", rows=128, cols=128, sparsity=0.95, seed=7), "replicated"),
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
    for name, (gen, split) in sorted(CASES.items()):
        a = spforge.Matrix.generate(**gen)
        m, k = a.shape
        b = numpy.random.default_rng(11).uniform(-1, 1, (k, N)).astype(numpy.float32)
        spmm = sd.DistSpMM(a, N, b_split=split, device=device)
        mine = torch.from_numpy(b[spmm.b_rows.start:spmm.b_rows.stop]).to(device)
        c = spmm(mine).cpu().numpy()
        want = numpy.asarray(spforge.reference_spmm(a, b, N, accumulate="f64")).reshape(m, N)
        want = want[spmm.rows.start:spmm.rows.stop]
        results[name] = {"rows": [spmm.rows.start, spmm.rows.stop],
                         "error": float(numpy.abs(c - want).max()) if c.size else 0.0,
                         "shape": list(c.shape), "recv": spmm.recv_rows, "send": spmm.send_rows}
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

    def check(self, device, worlds=(1, 2, 3)):
        for world in worlds:
            ranks = self.run_ranks(world, device)
            for name, (gen, _) in CASES.items():
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
                    if world == 1 or name == "replicated":
                        self.assertEqual(sum(r["recv"] for r in got), 0)

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
