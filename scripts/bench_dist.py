#!/usr/bin/env python3
"""Distributed SpMM against one GPU (issue 15's target: a graph of ≥ 50 M
nonzeros at N = 128, ≥ 1.8× on 2 GPUs, ≥ 3.2× on 4), one process per GPU:

    torchrun --nproc_per_node 2 scripts/bench_dist.py --scale 22 --sparsity 0.999997 \\
        --n 128 --out dist.csv

Every rank makes the same R-MAT graph (spforge's generator, --seed), or
reads --matrix; rank 0 first times one plan of the whole graph on its GPU
alone (the baseline), then every rank times its DistSpMM call (B split as
the graph's rows, or replicated with --replicated). Times: CUDA events
around R calls after warm-up, the median per call over 7 rounds, each
rank's, the slowest rank's kept (a call is done when every rank's is).
Every rank's rows of C are checked against the CPU reference of the same
rows (sums in double; the relative error over all of C). One CSV row per
run, written by rank 0.

--backend gloo --device cpu runs it on CPU ranks (a smoke test)."""

import argparse
import csv
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def time_calls(fn, torch, device, repeats=10, rounds=7):
    """Median µs per call over rounds of `repeats` calls (CUDA events, or
    the wall clock on the CPU), after three warm-up calls."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(rounds):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(repeats):
                fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / repeats)
        else:
            t0 = time.perf_counter()
            for _ in range(repeats):
                fn()
            times.append((time.perf_counter() - t0) * 1e6 / repeats)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matrix", help="a matrix file (else an R-MAT graph)")
    ap.add_argument("--scale", type=int, default=22, help="R-MAT: 2^scale vertices")
    ap.add_argument("--sparsity", type=float, default=0.999997,
                    help="R-MAT: the share of zeros (2^22 vertices at 0.999997: 52.8 M edges)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--strategy", default="generic", help="the plans' strategy")
    ap.add_argument("--replicated", action="store_true", help="B whole on every rank")
    ap.add_argument("--backend", default="nccl")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", required=True, help="the CSV (rank 0 writes it)")
    a = ap.parse_args()
    import numpy
    import torch
    import torch.distributed as dist
    import spforge
    import spforge.distributed as sd
    dist.init_process_group(a.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    device = torch.device("cuda", local) if a.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    t0 = time.perf_counter()
    if a.matrix:
        matrix = spforge.Matrix.read(a.matrix, seed=a.seed)
    else:
        side = 1 << a.scale
        matrix = spforge.Matrix.generate(kind="rmat", rows=side, cols=side, sparsity=a.sparsity,
                                         seed=a.seed)
    m, k = matrix.shape
    b = torch.from_numpy(numpy.random.default_rng(a.seed).uniform(
        -1, 1, (k, a.n)).astype(numpy.float32)).to(device)
    made_s = time.perf_counter() - t0
    options = {"verify": False, "cache": False}
    if device.type == "cuda":
        options["strategy"] = a.strategy
    one_us = float("nan")
    if rank == 0:  # the baseline: the whole graph on one GPU
        plan = spforge.Plan(matrix, a.n, device=device.index or 0, **options) \
            if device.type == "cuda" else spforge.Plan(matrix, a.n, strategy="cpu")
        one_us = time_calls(lambda: plan(b), torch, device)
        del plan
    t0 = time.perf_counter()
    spmm = sd.DistSpMM(matrix, a.n, b_split="replicated" if a.replicated else "rows",
                       device=device, plan_options=options if device.type == "cuda" else None)
    plan_s = time.perf_counter() - t0
    mine = b if a.replicated else b[spmm.b_rows.start:spmm.b_rows.stop].contiguous()
    c = spmm(mine)
    us = time_calls(lambda: spmm(mine), torch, device)
    # this rank's rows against the reference (sums in double) of the same rows
    part = sd._row_slice(matrix, spmm.rows.start, len(spmm.rows))
    ref = numpy.asarray(spforge.reference_spmm(part, b.cpu().numpy(), a.n, accumulate="f64"))
    diff = numpy.linalg.norm(c.cpu().numpy().ravel() - ref.ravel())
    sums = torch.tensor([diff ** 2, float(numpy.linalg.norm(ref) ** 2)], dtype=torch.float64,
                        device=device)
    dist.all_reduce(sums)
    times = [torch.zeros(1, dtype=torch.float64, device=device) for _ in range(world)]
    dist.all_gather(times, torch.tensor([us], dtype=torch.float64, device=device))
    if rank == 0:
        err = float((sums[0] / sums[1]).sqrt()) if float(sums[1]) > 0 else float(sums[0].sqrt())
        slowest = max(float(t) for t in times)
        row = {"ranks": world, "rows": m, "nnz": matrix.nnz, "n": a.n,
               "b_split": "replicated" if a.replicated else "rows",
               "strategy": a.strategy, "one_gpu_us": round(one_us, 1),
               "dist_us": round(slowest, 1), "speedup": round(one_us / slowest, 3),
               "rank_us": " ".join("%.1f" % float(t) for t in times),
               "recv_rows_rank0": spmm.recv_rows, "relative_error": "%.3g" % err,
               "made_s": round(made_s, 1), "plan_s": round(plan_s, 1),
               "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
               "commit": os.environ.get("SPF_GIT_COMMIT", "")}
        new = not os.path.exists(a.out)
        with open(a.out, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(row))
            if new:
                w.writeheader()
            w.writerow(row)
        print(row, flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
