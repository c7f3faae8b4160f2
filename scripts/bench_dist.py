#!/usr/bin/env python3
"""Distributed SpMM against one GPU (issue 15's target: a graph of ≥ 50 M
nonzeros at N = 128, ≥ 1.8× on 2 GPUs, ≥ 3.2× on 4), one process per GPU:

    torchrun --nproc_per_node 4 scripts/bench_dist.py --scale 22 --sparsity 0.999997 \\
        --columns 128 --ranks 2,4 --out dist.csv

Every rank makes the same R-MAT graph (spforge's generator, --seed), or
reads --matrix; rank 0 first times one plan of the whole graph on its GPU
alone (the baseline) and cuSPARSE's product of it (torch.sparse.mm of the
CSR matrix, fp32: the competitor, its C checked against the plan's). Then, for each count P of --ranks (the launch's
first P ranks; the others wait) and each split of B in --splits, every
rank of the P times its DistSpMM call, and its steps alone: the product
on its own rows of B, the exchange, the product on the received rows (the
cost model's terms, scripts/dist_model.py). Times: CUDA events around R
calls after warm-up, the median per call over 7 rounds; the CSV row keeps
the slowest rank's (a call is done when every rank's is) and lists each
rank's. Every rank's rows of C are checked against the CPU reference of
the same rows (sums in double; the relative error over all of C), and
the first run's C, put together on rank 0, against the one-GPU plan's C.
Last, an all-to-all of --link-mb MB a rank over each P measures the bus
bandwidth (--links-out). Rank 0 writes the CSVs. --trace DIR adds a
timeline of three calls of each run on each rank (Chrome trace JSON).

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


def measure(a, sd, spforge, numpy, torch, dist, matrix, b, b_host, device, group, p, split,
            options, made_s):
    """One (ranks, split) run on this rank: its DistSpMM call timed, whole
    and step by step, its rows checked; rank 0's dict is the CSV row (the
    slowest rank's times), with this rank's C under "_c"."""
    t0 = time.perf_counter()
    spec, _, engine = split.partition("@")
    name, _, copies = spec.partition(":")
    spmm = sd.DistSpMM(matrix, a.n, group, b_split=name, replicas=int(copies or 1),
                       device=device, plan_options=options if device.type == "cuda" else None,
                       engine=engine or "torch")
    plan_s = time.perf_counter() - t0
    mine = b[spmm.b_rows.start:spmm.b_rows.stop].contiguous()
    c = spmm(mine)
    total = time_calls(lambda: spmm(mine), torch, device)
    # the steps alone (the model's terms): own product, exchange, remote
    # product (engine "torch" only: the C plan's steps are inside one call)
    own = exchange = remote = 0.0
    if engine != "nccl":
        own = time_calls(lambda: spmm._own(mine), torch, device)
    if spmm.replicas < p and engine != "nccl":
        def exchange_once():
            recv, work = spmm._exchange(mine)
            if work is not None:
                work.wait()
            return recv
        exchange = time_calls(exchange_once, torch, device)
        if spmm._remote is not None:
            recv = exchange_once().to(device)
            remote = time_calls(lambda: spmm._remote(recv), torch, device)
    if a.trace and device.type == "cuda":  # a timeline of a few calls, for the overlap
        trace(torch, a.trace, "p%d-%s-rank%d" % (p, split.replace(":", "x").replace("@", "-"),
                                                 dist.get_rank()), lambda: spmm(mine))
    err2, ref2 = check_rows(sd, spforge, numpy, matrix, spmm.rows, b_host, a.n, c)
    sums = torch.tensor([err2, ref2], dtype=torch.float64, device=device)
    dist.all_reduce(sums, group=group)
    steps = torch.tensor([total, own, exchange, remote, spmm.recv_rows], dtype=torch.float64,
                         device=device)
    every = [torch.zeros_like(steps) for _ in range(p)]
    dist.all_gather(every, steps, group=group)
    every = [[float(x) for x in t] for t in every]
    err = float((sums[0] / sums[1]).sqrt()) if float(sums[1]) > 0 else float(sums[0].sqrt())
    return {"ranks": p, "rows": matrix.shape[0], "nnz": matrix.nnz, "n": a.n, "b_split": split,
            "chosen": "%s:%d" % (spmm.b_split, spmm.replicas),
            "strategy": a.strategy, "one_gpu_us": None,
            "dist_us": round(max(t[0] for t in every), 1), "speedup": None,
            "rank_us": " ".join("%.1f" % t[0] for t in every),
            "own_us_max": round(max(t[1] for t in every), 1),
            "exchange_us_max": round(max(t[2] for t in every), 1),
            "remote_us_max": round(max(t[3] for t in every), 1),
            "recv_rows_max": int(max(t[4] for t in every)),
            "relative_error": "%.3g" % err, "one_gpu_vs_ranks": None,
            "made_s": round(made_s, 1), "plan_s": round(plan_s, 1),
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
            "commit": os.environ.get("SPF_GIT_COMMIT", ""), "_c": c}


def trace(torch, folder, name, fn, calls=3):
    """A Chrome trace (torch.profiler: host calls, kernels and their
    streams) of `calls` calls of fn, into folder/name.json: whether the
    exchange's kernels run beside the product's, or after."""
    os.makedirs(folder, exist_ok=True)
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    prof.export_chrome_trace(os.path.join(folder, name + ".json"))


def compare_whole(torch, dist, whole, c, group, starts):
    """On rank 0: the relative difference between the one-GPU C and the
    ranks' C put together (rank r's rows starts[r] .. starts[r+1] - 1,
    sent to rank 0); "" on the others."""
    if dist.get_rank() != 0:
        dist.send(c, dst=0, group=group)
        return ""
    parts = [c]
    for src in range(1, len(starts) - 1):
        part = torch.empty((starts[src + 1] - starts[src], c.shape[1]), dtype=c.dtype,
                           device=c.device)
        dist.recv(part, src=src, group=group)
        parts.append(part)
    return "%.3g" % float((torch.cat(parts) - whole).norm() / whole.norm())


def cusparse_one_gpu_us(matrix, b, whole, numpy, torch, device):
    """The whole product on one GPU by cuSPARSE (torch.sparse.mm of the CSR
    matrix, fp32), timed as the plans are; its C checked against spforge's
    one-GPU C (NaN where torch's CSR product does not run)."""
    row_ptr, col_idx, values = matrix.csr()
    a = torch.sparse_csr_tensor(torch.from_numpy(numpy.frombuffer(row_ptr, numpy.int64).copy()),
                                torch.from_numpy(numpy.frombuffer(col_idx, numpy.int32)
                                                 .astype(numpy.int64)),
                                torch.from_numpy(numpy.frombuffer(values, numpy.float32).copy()),
                                size=matrix.shape).to(device)
    try:
        c = torch.sparse.mm(a, b)
    except RuntimeError as e:
        print("bench_dist: no cuSPARSE baseline: %s" % e, flush=True)
        return float("nan")
    err = (torch.linalg.norm(c - whole) / torch.linalg.norm(whole)).item()
    if not err <= 1e-4:
        raise SystemExit("bench_dist: cuSPARSE's C and spforge's one-GPU C differ: relative "
                         "error %.3g" % err)
    return time_calls(lambda: torch.sparse.mm(a, b), torch, device)


def write_row(path, row):
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row))
        if new:
            w.writeheader()
        w.writerow(row)
    print(row, flush=True)


def parse_ints(text, what):
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise SystemExit("bench_dist: --%s %r: expected positive integers, comma-separated"
                         % (what, text))
    return values


def check_rows(sd, spforge, numpy, matrix, rows, b, n, c):
    """(‖c − ref‖², ‖ref‖²) of this rank's rows of C against the CPU
    reference of the same rows (sums in double)."""
    part = sd._row_slice(matrix, rows.start, len(rows))
    ref = numpy.asarray(spforge.reference_spmm(part, b, n, accumulate="f64"))
    return (float(numpy.linalg.norm(c.cpu().numpy().ravel() - ref.ravel()) ** 2),
            float(numpy.linalg.norm(ref) ** 2))


def link_bandwidth(torch, dist, group, ranks, device, mbytes):
    """All-to-all over `group` of `mbytes` MB a rank (equal shares): µs a
    call and the bus bandwidth in GB/s (bytes each rank sends to the others
    over the time, NCCL's busbw for all-to-all)."""
    elems = (mbytes << 20) // 4 // ranks * ranks
    send = torch.empty(elems, dtype=torch.float32, device=device).uniform_(-1, 1)
    recv = torch.empty_like(send)
    us = time_calls(lambda: dist.all_to_all_single(recv, send, group=group), torch, device,
                    repeats=5, rounds=5)
    return us, elems * 4 * (ranks - 1) / ranks / (us * 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matrix", help="a matrix file (else an R-MAT graph)")
    ap.add_argument("--scale", type=int, default=22, help="R-MAT: 2^scale vertices")
    ap.add_argument("--sparsity", type=float, default=0.999997,
                    help="R-MAT: the share of zeros (2^22 vertices at 0.999997: 52.8 M edges)")
    ap.add_argument("--seed", type=int, default=1)
    # not --n: torchrun reads an option it can take as short for its own
    # (--nnodes, --nproc-per-node, ...) even after the script's name
    ap.add_argument("--columns", dest="n", type=int, default=128, help="N, B's columns")
    ap.add_argument("--strategy", default="generic", help="the plans' strategy")
    ap.add_argument("--ranks", help="rank counts to measure, each on the first ranks of the "
                    "launch (default: all of them), e.g. 2,4")
    ap.add_argument("--splits", default="rows,replicated",
                    help="B's splits to measure: rows, even, replicated or auto; rows:C and "
                    "even:C for C copies of B (1.5-D); @nccl for the C API's plans over the "
                    "group's communicator (DistSpMM engine \"nccl\"), e.g. "
                    "rows,rows@nccl,rows:2,replicated")
    ap.add_argument("--link-mb", type=int, default=256,
                    help="MB a rank sends in the all-to-all bandwidth probe (0: none)")
    ap.add_argument("--backend", default="nccl")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", required=True, help="the CSV (rank 0 writes it)")
    ap.add_argument("--links-out", help="the bandwidth probe's CSV (rank 0 writes it)")
    ap.add_argument("--trace", metavar="DIR",
                    help="also a Chrome trace (torch.profiler) of 3 calls of each run and "
                         "rank into DIR")
    a = ap.parse_args()
    splits = [s for s in a.splits.split(",") if s]
    import numpy
    import torch
    import torch.distributed as dist
    import spforge
    import spforge.distributed as sd
    def valid(split):
        spec, at, engine = split.partition("@")
        name, colon, copies = spec.partition(":")
        return (name in sd._SPLITS + ("auto",) and (not colon or copies.isdigit()) and
                (not at or engine in ("torch", "nccl")))
    bad = [s for s in splits if not valid(s)]
    if bad:
        raise SystemExit("bench_dist: --splits: %s: expected rows, even, replicated or auto, "
                         "rows and even with :COPIES, any with @torch or @nccl" % bad[0])
    local = int(os.environ.get("LOCAL_RANK", os.environ.get("RANK", 0)))
    device = torch.device("cuda", local) if a.device == "cuda" else torch.device("cpu")
    kwargs = {}
    if a.backend == "nccl":
        # NCCL's kernels at high priority: behind a product that fills every
        # SM they would wait for it to end, and the exchange would not
        # overlap it (the 2-GPU run of 2026-11-27: 8.7 ms against 4.9 for
        # the steps alone)
        options = dist.ProcessGroupNCCL.Options()
        options.is_high_priority_stream = True
        kwargs = {"pg_options": options, "device_id": device}
    dist.init_process_group(a.backend, **kwargs)
    rank, world = dist.get_rank(), dist.get_world_size()
    counts = parse_ints(a.ranks, "ranks") if a.ranks else [world]
    if max(counts) > world:
        raise SystemExit("bench_dist: --ranks %s: the launch has %d ranks" % (a.ranks, world))
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
    b_host = numpy.random.default_rng(a.seed).uniform(-1, 1, (k, a.n)).astype(numpy.float32)
    b = torch.from_numpy(b_host).to(device)
    made_s = time.perf_counter() - t0
    options = {"verify": False, "cache": False}
    if device.type == "cuda":
        options["strategy"] = a.strategy
    one_us, whole, cusparse_us = float("nan"), None, float("nan")
    if rank == 0:  # the baseline: the whole graph on one GPU, checked below against the ranks'
        plan = spforge.Plan(matrix, a.n, device=device.index or 0, **options) \
            if device.type == "cuda" else spforge.Plan(matrix, a.n, strategy="cpu")
        one_us = time_calls(lambda: plan(b), torch, device)
        whole = plan(b)
        del plan
        if device.type == "cuda":
            cusparse_us = cusparse_one_gpu_us(matrix, b, whole, numpy, torch, device)
    groups = {p: dist.new_group(list(range(p)), pg_options=kwargs.get("pg_options"))
              for p in counts}  # every rank makes each
    first = True
    for p in counts:
        group = groups[p]
        for split in splits:
            if rank < p:
                row = measure(a, sd, spforge, numpy, torch, dist, matrix, b, b_host, device,
                              group, p, split, options, made_s)
                if first:  # the baseline's C against the ranks' (checked) C
                    starts = sd.partition_rows(matrix, p)
                    row["one_gpu_vs_ranks"] = compare_whole(torch, dist, whole, row.pop("_c"),
                                                            group, starts)
                else:
                    row.pop("_c")
                    row["one_gpu_vs_ranks"] = ""
                row["one_gpu_us"] = round(one_us, 1)
                row["speedup"] = round(one_us / row["dist_us"], 3) if rank == 0 else ""
                row["cusparse_one_gpu_us"] = round(cusparse_us, 1) if rank == 0 else ""
                row["speedup_vs_cusparse"] = round(cusparse_us / row["dist_us"], 3) \
                    if rank == 0 else ""
                if rank == 0:
                    write_row(a.out, row)
            first = False
            dist.barrier()
    if a.link_mb > 0 and device.type == "cuda":
        for p in counts:
            if p > 1 and rank < p:
                us, gbs = link_bandwidth(torch, dist, groups[p], p, device, a.link_mb)
                if rank == 0:
                    write_row(a.links_out or a.out.replace(".csv", "-links.csv"),
                              {"ranks": p, "mb_per_rank": a.link_mb, "us": round(us, 1),
                               "busbw_gbs": round(gbs, 1), "backend": a.backend,
                               "device": torch.cuda.get_device_name(device),
                               "commit": os.environ.get("SPF_GIT_COMMIT", "")})
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
