#!/usr/bin/env python3
"""torch's 2:4 path beside torch's dense fp16, the competitor of spforge's structured set.

Issue 13 benches spforge's structured strategy against what a torch user would run
instead on a 2:4-pruned weight: `to_sparse_semi_structured` (cuSPARSELt, or CUTLASS,
which refuses sm_90) and plain dense fp16. For each LLM shape of the structured set
(bench/problems.c) and each N this times, on the current GPU:

  dense:  W @ X with W the pruned weight kept dense (cuBLAS through torch)
  2:4:    Ws @ X with Ws = to_sparse_semi_structured(W)

with the timing protocol of src/gpu/timing.c: warm-up, then rounds of R back-to-back
calls between two CUDA events (R chosen so that a round lasts about 500 µs), the
per-call median over 7 rounds. Each result is checked against W @ X in float64 first
(relative Frobenius error); a backend that refuses a shape is recorded with its
message, not skipped silently.

    python3 scripts/bench_torch_semi.py --out bench/results/structured --tag torch24

writes structured-<tag>-<device>-<date>.{csv,json}. SPF_GIT_COMMIT names the commit.
"""

import argparse
import csv
import datetime
import json
import os
import statistics
import sys

SHAPES = [(4096, 4096), (11008, 4096), (4096, 11008)]  # bench/problems.c, LLM
NS = [1, 16, 64, 256, 2048]


def time_us(fn, torch, rounds=7, target_us=500.0):
    """Per-call median over rounds of R back-to-back calls (src/gpu/timing.c)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    once = max(start.elapsed_time(end) * 1e3, 1.0)
    repeats = max(1, min(10000, int(target_us / once)))
    per_call = []
    for _ in range(rounds):
        start.record()
        for _ in range(repeats):
            fn()
        end.record()
        torch.cuda.synchronize()
        per_call.append(start.elapsed_time(end) * 1e3 / repeats)
    return statistics.median(per_call)


def pruned_24(m, k, dtype, torch, gen):
    """A random m × k weight with 2 nonzeros in every 4 consecutive columns of a row."""
    w = torch.empty(m, k, device="cuda", dtype=torch.float32).uniform_(-1, 1, generator=gen)
    groups = w.view(m, k // 4, 4)
    keep = torch.rand(m, k // 4, 4, device="cuda", generator=gen).argsort(dim=-1)[..., :2]
    mask = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, keep, True)
    return (groups * mask).view(m, k).to(dtype)


def rel_err(c, ref):
    return float((c.double() - ref).norm() / ref.norm())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the CSV and JSON")
    ap.add_argument("--tag", default="torch24")
    ap.add_argument("--ns", default=",".join(map(str, NS)))
    ap.add_argument("--dtype", choices=("f16", "bf16"), default="f16")
    args = ap.parse_args()
    try:
        import torch
        from torch.sparse import to_sparse_semi_structured, SparseSemiStructuredTensor
    except ImportError as e:
        print("SKIP: torch with semi-structured sparsity is not installed (%s)" % e)
        return 77
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 77
    dtype = torch.float16 if args.dtype == "f16" else torch.bfloat16
    gen = torch.Generator(device="cuda")
    gen.manual_seed(13)
    rows = []
    for m, k in SHAPES:
        w = pruned_24(m, k, dtype, torch, gen)
        sparse = {}
        for backend in ("cusparselt", "cutlass"):
            SparseSemiStructuredTensor._FORCE_CUTLASS = backend == "cutlass"
            try:
                sparse[backend] = to_sparse_semi_structured(w)
            except Exception as e:  # the backend's refusal, recorded per row
                sparse[backend] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
        for n in (int(v) for v in args.ns.split(",")):
            x = torch.empty(k, n, device="cuda", dtype=torch.float32).uniform_(
                -1, 1, generator=gen).to(dtype)
            ref = w.double() @ x.double()
            row = {"problem": "LLM %dx%d N=%d 2:4" % (m, k, n), "M": m, "K": k, "N": n,
                   "dtype": args.dtype}
            row["torch_dense_relerr"] = rel_err(w @ x, ref)
            row["torch_dense_us"] = time_us(lambda: w @ x, torch)
            for backend, ws in sparse.items():
                if isinstance(ws, str):
                    row["torch_%s_us" % backend], row["torch_%s_error" % backend] = "", ws
                    continue
                try:
                    row["torch_%s_relerr" % backend] = rel_err(ws @ x, ref)
                    row["torch_%s_us" % backend] = time_us(lambda: ws @ x, torch)
                    row["torch_%s_error" % backend] = ""
                except Exception as e:
                    row["torch_%s_us" % backend] = ""
                    row["torch_%s_error" % backend] = "%s: %s" % (
                        type(e).__name__, str(e).splitlines()[0][:200])
            rows.append(row)
            print("%-28s dense %8.2f us  cusparselt %s  cutlass %s" % (
                row["problem"], row["torch_dense_us"], row.get("torch_cusparselt_us") or
                row.get("torch_cusparselt_error"), row.get("torch_cutlass_us") or
                row.get("torch_cutlass_error")[:60]), flush=True)
    device = torch.cuda.get_device_name().replace(" ", "-").lower()
    date = datetime.date.today().strftime("%Y%m%d")
    base = os.path.join(args.out, "structured-%s-%s-%s" % (args.tag, device, date))
    fields = sorted({f for r in rows for f in r}, key=lambda f: (f not in rows[0], f))
    with open(base + ".csv", "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=fields)
        out.writeheader()
        out.writerows(rows)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "commit": os.environ.get("SPF_GIT_COMMIT", ""),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "command": " ".join(sys.argv),
            "timing": "per-call median over 7 rounds of R back-to-back calls between CUDA "
                      "events, after 3 warm-up calls (src/gpu/timing.c's protocol)",
            "rows": rows}
    with open(base + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print("results: %s.{csv,json}" % base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
