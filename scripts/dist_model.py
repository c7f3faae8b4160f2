#!/usr/bin/env python3
"""The cost of distributed SpMM on P GPUs (issue 15 item 3): each rank's
share of the work and of the exchange from `spforge partition --json`
(the same split and exchange the distributed plans use), its compute time
from the throughput spforge's plan measured on one GPU, its communication
from a link bandwidth measured with NCCL. docs/distributed.md gives the
model and its assumptions.

    spforge partition graph.mtx --ranks 1,2,4,8,16,32,64 --n 128 --json > part.json
    python3 scripts/dist_model.py part.json --gflops 900 --link-gbs 300 \\
        --host-link-gbs 45 [--csv out.csv]

--gflops: spforge's SpMM throughput on this matrix and N on one GPU
(`spforge run FILE --n N --json`'s gflops, or a measured plan's), GFLOP/s
counted as 2·nnz·N. --link-gbs: the bytes per second (GB/s) a GPU moves to
the GPUs of its host (NCCL's bus bandwidth for all-to-all there);
--host-link-gbs: to GPUs of other hosts. Prints, per P, the predicted time
of one SpMM with B split by rows (the exchange of the needed rows
overlapped with the product on the rank's own rows, slowed by
--overlap-slowdown while they share the GPU) and with B replicated
on every rank (no exchange), and their speed-ups over one GPU. A partition
made with --replicas C models the 1.5-D algorithm: each rank's exchange is
its layer's (the volumes in the JSON are), the rest unchanged."""

import argparse
import csv
import json
import sys


def rank_times(part, n, elem, p):
    """The µs of each step of one rank (part: a `parts` entry of the
    partition JSON) under the parameters p (a dict, see model())."""
    # work in nonzeros, a row counting as row_cost of them (the split's own
    # weight, DIST_ROW_COST), at the one-GPU rate: gflops over the whole
    # matrix's 2·nnz·N, spread over its nnz + row_cost·rows
    per_work = p["one_us"] / p["total_work"]  # µs per unit of work
    own = (part["own_nnz"] + p["row_cost"] * part["rows"]) * per_work + p["launch_us"]
    remote = part["remote_nnz"] * per_work + p["launch_us"] if part["remote_nnz"] else 0.0
    far = part.get("recv_rows_other_hosts", 0)
    near_bytes = (part["recv_rows"] - far) * n * elem
    far_bytes = far * n * elem
    comm = 0.0
    if part["recv_rows"]:
        comm = p["latency_us"] + max(near_bytes / (1e3 * p["link_gbs"]),
                                     far_bytes / (1e3 * p["host_link_gbs"]))
    hbm = 1e3 * p["hbm_gbs"]  # bytes per µs
    pack = part["send_rows"] * n * elem * 2 / hbm + p["launch_us"] if part["send_rows"] else 0.0
    add = part["rows"] * n * elem * 3 / hbm + p["launch_us"] if part["remote_nnz"] else 0.0
    return {"own": own, "remote": remote, "comm": comm, "pack": pack, "add": add,
            "sharded": exchange_end(own, pack + comm, p.get("overlap_slowdown", 1.0)) +
            remote + add,
            "replicated": (part["own_nnz"] + part["remote_nnz"] + p["row_cost"] * part["rows"]) *
            per_work + p["launch_us"]}


def exchange_end(own, chain, slowdown):
    """When both the own product (own µs) and the exchange (chain µs alone:
    pack and transfer) are done, the two started together: while the
    product runs, the exchange goes slowdown times slower (the two share
    the GPU's memory; on 2 H200s the 540 MB transfer of 2.1 ms alone took
    3.1-3.5 ms beside a 1.5 ms product: about 2.9, traces-h200x2-b8758f4),
    then at its own pace. slowdown 1: a free overlap, max(own, chain)."""
    if chain * slowdown <= own:
        return own
    return own + chain - own / slowdown


def model(partition, p):
    """Per split of the partition JSON: ranks, the predicted µs (sharded,
    replicated), speed-ups over one GPU, and the slowest rank's steps."""
    n, elem = partition["n"], {"f32": 4, "f16": 2, "bf16": 2}[partition["dtype"]]
    if n <= 0:
        raise ValueError("the partition JSON has no N: run spforge partition with --n")
    one = 2.0 * partition["nnz"] * n / (1e3 * p["gflops"]) + p["launch_us"]
    p = dict(p, one_us=one - p["launch_us"],
             total_work=partition["nnz"] + p["row_cost"] * partition["rows"])
    out = []
    for split in partition["splits"]:
        times = [rank_times(part, n, elem, p) for part in split["parts"]]
        slow = max(times, key=lambda t: t["sharded"])
        sharded = slow["sharded"]
        replicated = max(t["replicated"] for t in times)
        out.append({"ranks": split["ranks"], "sharded_us": sharded, "replicated_us": replicated,
                    "speedup_sharded": one / sharded, "speedup_replicated": one / replicated,
                    "slowest_own_us": slow["own"], "slowest_comm_us": slow["comm"],
                    "slowest_remote_us": slow["remote"],
                    "imbalance": split["largest_work"] / split["mean_work"],
                    "recv_rows_max": split["recv_rows_max"]})
    return one, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("partition", help="spforge partition --json output (with --n)")
    ap.add_argument("--gflops", type=float, required=True,
                    help="spforge's SpMM throughput on one GPU, GFLOP/s (2·nnz·N)")
    ap.add_argument("--link-gbs", type=float, default=300.0,
                    help="GB/s a GPU moves to GPUs of its host (default 300: NVLink, measured "
                    "values belong here)")
    ap.add_argument("--host-link-gbs", type=float, default=45.0,
                    help="GB/s a GPU moves to GPUs of other hosts (default 45: a 400 Gb/s NIC "
                    "each)")
    ap.add_argument("--latency-us", type=float, default=15.0,
                    help="the exchange's fixed cost, µs (default 15)")
    ap.add_argument("--launch-us", type=float, default=5.0,
                    help="a kernel's fixed cost, µs (default 5)")
    ap.add_argument("--hbm-gbs", type=float, default=3000.0,
                    help="device memory bandwidth for packing and adding, GB/s (default 3000)")
    ap.add_argument("--row-cost", type=float, default=4.0,
                    help="a row's work in nonzeros (default 4: the split's own weight, fitted "
                    "on the 2-GPU R-MAT run)")
    ap.add_argument("--overlap-slowdown", type=float, default=1.0,
                    help="how many times slower the exchange goes beside the own product "
                    "(default 1: a free overlap; 2.9 measured on 2 H200s, docs/distributed.md)")
    ap.add_argument("--csv", help="also write the table here")
    a = ap.parse_args(argv)
    for name in ("gflops", "link_gbs", "host_link_gbs", "hbm_gbs"):
        if getattr(a, name) <= 0:
            ap.error("--%s must be positive" % name.replace("_", "-"))
    if a.overlap_slowdown < 1:
        ap.error("--overlap-slowdown must be at least 1")
    with open(a.partition) as f:
        partition = json.load(f)
    params = {k: getattr(a, k) for k in ("gflops", "link_gbs", "host_link_gbs", "latency_us",
                                         "launch_us", "hbm_gbs", "row_cost",
                                         "overlap_slowdown")}
    try:
        one, rows = model(partition, params)
    except (KeyError, ValueError) as e:
        sys.exit("dist_model: %s: %s" % (a.partition, e))
    copies = partition.get("replicas", 1)
    print("%s: %d x %d, %d nonzeros, N = %d %s; one GPU: %.1f us at %.0f GFLOP/s%s"
          % (partition["path"], partition["rows"], partition["cols"], partition["nnz"],
             partition["n"], partition["dtype"], one, a.gflops,
             "; sharded: %d copies of B, a layer of P/%d ranks each" % (copies, copies)
             if copies > 1 else ""))
    print("%6s %12s %8s %12s %8s %9s %12s %12s %12s" % (
        "ranks", "sharded us", "speedup", "replicated", "speedup", "imbalance", "own us",
        "comm us", "remote us"))
    for r in rows:
        print("%6d %12.1f %7.2fx %12.1f %7.2fx %9.3f %12.1f %12.1f %12.1f" % (
            r["ranks"], r["sharded_us"], r["speedup_sharded"], r["replicated_us"],
            r["speedup_replicated"], r["imbalance"], r["slowest_own_us"], r["slowest_comm_us"],
            r["slowest_remote_us"]))
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
