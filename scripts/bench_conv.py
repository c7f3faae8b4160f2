#!/usr/bin/env python3
"""The DLMC ResNet-50 convolutions: spforge conv against cuDNN through torch,
in one run on one GPU (issue 14's conv set, a first version outside
spforge-bench).

For each layer of the chosen kinds and each batch: the DLMC pattern, its
columns moved from DLMC's (r, s, c) order into torch's (c, r, s)
(spforge.resnet50.torch_columns), runs through `spforge conv --json` (which
times the plan's executes with the BENCHMARKS.md protocol and checks the
output against the CPU reference). In the same run, on random weights
under the same mask, the competitors through torch, timed by CUDA events
the same way (warm-up, then rounds of R back-to-back calls, the median per
call over 7 rounds):
  - cuDNN (torch.nn.functional.conv2d, cudnn.benchmark on) in the dtype,
    channels_last and NCHW; and in fp32, exact and TF32, channels_last;
  - explicit im2col + cuSPARSE: torch's unfold, then torch.sparse.mm of
    the CSR weight (cuSPARSE SpMM) by the columns, in the dtype where
    torch's CSR product takes it, else fp32 (column cusparse_dtype).
spforge and cuDNN in the dtype (channels_last) are timed twice: in a loop
of calls (the host's cost per call included: on the H200's host it bounds
every convolution of batch 1 at 10-30 µs) and as the replays of a CUDA
graph of R calls (the GPU's time alone: spforge conv --timing both times
one plan both ways; torch.cuda.CUDAGraph). Column implicit_kinds: the
fastest config of each implicit kernel kind AUTO's plan timed and its µs
(the warpgroup kernel's dense and sparse weights apart). --also
STRATEGY,... times a
plan of each strategy named too, in CUDA graphs (columns <strategy>_graph_us
and <strategy>_kernel: the unrolled kernel over the implicit im2col, say,
beside AUTO's choice). --without-pdl times AUTO's plan again in CUDA graphs
with SPFORGE_PDL=0 (columns nopdl_graph_us, nopdl_kernel): each launch then
waits for the one before it to end, where by default a kernel of ours may
start its preamble while the previous one runs (src/gpu/grid_dependency.cuh;
in a graph of R calls of one plan, the previous kernel is its own last
call). Each plan's build time (the candidates it timed
included) is its column plan_s (<strategy>_plan_s). Writes a CSV and
prints the geomeans.

    python3 scripts/bench_conv.py --spforge build/spforge --data data \\
        --sparsity 0.9 --batch 1,32 --kinds 3x3 --out bench/results/conv/x.csv
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from spforge import resnet50  # noqa: E402
from spforge._timing import graph_time_us  # noqa: E402  (src/gpu/timing.c's graph mode)
from bench_torch_semi import time_us  # noqa: E402  (src/gpu/timing.c's protocol)


def write_torch_order(src, dst, layer):
    """src's pattern with its columns in torch's (c, r, s) order."""
    rows, cols, row_ptr, col_idx = resnet50.read_smtx(src)
    perm = resnet50.torch_columns(layer)
    out = []
    for i in range(rows):
        out += sorted(perm[j] for j in col_idx[row_ptr[i]:row_ptr[i + 1]])
    with open(dst, "w") as f:
        f.write("%d, %d, %d\n" % (rows, cols, len(out)))
        f.write(" ".join(str(x) for x in row_ptr) + "\n")
        f.write(" ".join(str(x) for x in out) + "\n")
    return rows, cols, row_ptr, out


DTYPES = ("f32", "f16", "bf16")


def masked_weight(layer, row_ptr, col_idx, torch):
    """Random weights in [-1, 1) under the pattern: C_out × C_in·R·S, fp32, host."""
    k = layer.kernel
    mask = torch.zeros(layer.c_out, layer.c_in * k * k)
    for i in range(layer.c_out):
        mask[i, col_idx[row_ptr[i]:row_ptr[i + 1]]] = 1
    return (torch.rand(layer.c_out, layer.c_in * k * k) * 2 - 1) * mask


def cudnn_us(layer, w, batch, dtype, channels_last, torch, tf32=False, graph=False):
    dt = dict(zip(DTYPES, (torch.float32, torch.float16, torch.bfloat16)))[dtype]
    k, side = layer.kernel, layer.in_side
    w = w.view(layer.c_out, layer.c_in, k, k).to("cuda", dt)
    x = (torch.rand(batch, layer.c_in, side, side) * 2 - 1).to("cuda", dt)
    if channels_last:
        w = w.contiguous(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    f = torch.nn.functional.conv2d
    torch.backends.cudnn.allow_tf32 = tf32
    try:
        with torch.no_grad():
            call = lambda: f(x, w, None, layer.stride, layer.padding)  # noqa: E731
            return graph_time_us(call) if graph else time_us(call, torch)
    finally:
        torch.backends.cudnn.allow_tf32 = False


def im2col_cusparse_us(layer, w, batch, dtype, torch):
    """torch's unfold (the explicit im2col) and cuSPARSE's CSR SpMM by
    torch.sparse.mm: (µs, the dtype it ran in)."""
    dt = dict(zip(DTYPES, (torch.float32, torch.float16, torch.bfloat16)))[dtype]
    k, side = layer.kernel, layer.in_side
    for name, t in ((dtype, dt), ("f32", torch.float32)):
        a = w.to("cuda", t).to_sparse_csr()
        x = (torch.rand(batch, layer.c_in, side, side) * 2 - 1).to("cuda", t)

        def run():
            cols = torch.nn.functional.unfold(x, k, padding=layer.padding, stride=layer.stride)
            return torch.sparse.mm(a, cols.transpose(0, 1).reshape(cols.shape[1], -1))
        try:
            with torch.no_grad():
                run()
                return time_us(run, torch), name
        except RuntimeError:  # no CSR product in this dtype: fp32
            continue
    return float("nan"), ""


def graph_columns(row, prefix, e, why):
    """row's <prefix>_graph_us and <prefix>_kernel from a CUDA-graph run's
    JSON e (NaN where it did not pass; why where it named no kernel)."""
    row[prefix + "_graph_us"] = round(1e3 * e["time_ms_median"], 3) \
        if e.get("passed") else float("nan")
    row[prefix + "_kernel"] = e.get("plan", {}).get("kernel", "") or why


def implicit_kinds(e):
    """The fastest config of each implicit kernel kind the plan timed, from
    `spforge conv --json` e: "kernel=us" joined by spaces, the kept one
    marked with a *."""
    return " ".join("%s=%.1f%s" % (c["detail"], c["kernel_us"],
                                   "*" if c["outcome"] == "chosen" else "")
                    for c in e.get("plan", {}).get("candidates", []) if c.get("kernel_us"))


def spforge_conv(spforge, path, layer, batch, dtype, strategy, timing, env=None):
    """`spforge conv --json` of layer's weights at path, NHWC, with env added
    to the environment: (its JSON, or {} and the start of its stderr)."""
    cmd = [spforge, "conv", path, "--input-shape",
           "%d,%d,%d,%d" % (batch, layer.c_in, layer.in_side, layer.in_side), "--stride",
           str(layer.stride), "--padding", str(layer.padding), "--layout", "nhwc", "--dtype",
           dtype, "--strategy", strategy, "--timing", timing, "--json", "--no-progress"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    try:
        return json.loads(p.stdout), ""
    except ValueError:
        return {}, p.stderr.strip()[:200]


def write_csv(path, rows):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spforge", required=True, help="the spforge program")
    ap.add_argument("--data", default="data", help="the extracted data folder (data/dlmc/rn50)")
    ap.add_argument("--sparsity", default="0.9",
                    help="DLMC sparsities, comma-separated (the data holds 0.8, 0.9, 0.95, 0.98)")
    ap.add_argument("--batch", default="1,32", help="batch sizes, comma-separated")
    ap.add_argument("--dtype", default="f16", choices=("f32", "f16", "bf16"))
    ap.add_argument("--kinds", default="3x3", help="3x3, 1x1, stem or all")
    ap.add_argument("--layers", default="",
                    help="only these of the kind, comma-separated module names "
                         "(layer3.5.conv2,...): a short run")
    ap.add_argument("--strategy", default="auto")
    ap.add_argument("--also", default="",
                    help="more strategies to time, comma-separated (CUDA graphs only)")
    ap.add_argument("--without-pdl", action="store_true",
                    help="time AUTO's plan again without the early start (SPFORGE_PDL=0)")
    ap.add_argument("--out", required=True, help="the CSV to write")
    a = ap.parse_args()
    sparsities = a.sparsity.split(",")
    also = [x for x in a.also.split(",") if x]
    for sparsity in sparsities:
        folder = os.path.join(a.data, "dlmc", "rn50", "magnitude_pruning", sparsity)
        if not os.path.isdir(folder):
            ap.error("--sparsity %s: no folder %s (extract ../shared/data: scripts/extract-data.sh)"
                     % (sparsity, folder))
    kinds = {"3x3": lambda l: l.kernel == 3, "1x1": lambda l: l.kernel == 1 and l.module != "fc",
             "stem": lambda l: l.kernel == 7, "all": lambda l: l.module != "fc"}[a.kinds]
    layers = [l for l in resnet50.LAYERS if kinds(l)]
    if a.layers:
        wanted = a.layers.split(",")
        unknown = sorted(set(wanted) - {l.module for l in layers})
        if unknown:
            ap.error("--layers: no %s layer %s (the names are torchvision's, e.g. layer3.5.conv2)"
                     % (a.kinds, ", ".join(unknown)))
        layers = [l for l in layers if l.module in wanted]
    import torch
    torch.backends.cudnn.benchmark = True
    # the floor of a graph-timed call: a kernel that does next to nothing
    one = torch.zeros(1, device="cuda")
    print("floor: a one-element add in CUDA graphs takes %.2f us a call"
          % graph_time_us(lambda: one.add_(1.0)), flush=True)
    rows_out = []
    tmp = tempfile.mkdtemp()
    runs = [(sparsity, int(b), l) for sparsity in sparsities for b in a.batch.split(",")
            for l in layers]
    for sparsity, batch, l in runs:
        src = os.path.join(a.data, "dlmc", "rn50", "magnitude_pruning", sparsity,
                           l.dlmc + ".smtx")
        dst = os.path.join(tmp, l.dlmc + ".smtx")
        _, _, row_ptr, col_idx = write_torch_order(src, dst, l)
        d, stderr = spforge_conv(a.spforge, dst, l, batch, a.dtype, a.strategy, "both")
        sp_us = 1e3 * d["time_ms_median"] if d else float("nan")
        sp_graph_us = 1e3 * d["graph_time_ms_median"] if d.get("passed") else float("nan")
        w = masked_weight(l, row_ptr, col_idx, torch)
        cl_us = cudnn_us(l, w, batch, a.dtype, True, torch)
        cl_graph_us = cudnn_us(l, w, batch, a.dtype, True, torch, graph=True)
        nchw_us = cudnn_us(l, w, batch, a.dtype, False, torch)
        f32_us = cudnn_us(l, w, batch, "f32", True, torch)
        tf32_us = cudnn_us(l, w, batch, "f32", True, torch, tf32=True)
        cs_us, cs_dtype = im2col_cusparse_us(l, w, batch, a.dtype, torch)
        row = {"layer": l.module, "dlmc": l.dlmc, "sparsity": sparsity, "batch": batch,
               "c_in": l.c_in,
               "c_out": l.c_out, "kernel": l.kernel, "stride": l.stride, "side": l.in_side,
               "nnz": len(col_idx), "dtype": a.dtype, "spforge_us": round(sp_us, 3),
               "spforge_graph_us": round(sp_graph_us, 3),
               "cudnn_channels_last_us": round(cl_us, 3),
               "cudnn_channels_last_graph_us": round(cl_graph_us, 3),
               "cudnn_nchw_us": round(nchw_us, 3),
               "cudnn_f32_us": round(f32_us, 3), "cudnn_tf32_us": round(tf32_us, 3),
               "im2col_cusparse_us": round(cs_us, 3), "cusparse_dtype": cs_dtype,
               "speedup_vs_channels_last": round(cl_us / sp_us, 3) if d else "",
               "graph_speedup_vs_channels_last": round(cl_graph_us / sp_graph_us, 3)
               if d.get("passed") else "",
               "speedup_vs_cusparse": round(cs_us / sp_us, 3) if d and cs_dtype else "",
               "passed": d.get("passed", False), "error": d.get("relative_error", ""),
               "path": d.get("path", ""), "im2col_us": d.get("im2col_us", ""),
               "dense_us": d.get("dense_us", ""),
               "implicit_us": d.get("implicit_us", ""),
               "strategy": d.get("plan", {}).get("strategy", ""),
               "spforge_kernel": d.get("plan", {}).get("kernel", "") or stderr,
               "implicit_kinds": implicit_kinds(d),
               "plan_s": d.get("plan_s", "")}
        for other in also:
            e, why = spforge_conv(a.spforge, dst, l, batch, a.dtype, other, "graph")
            graph_columns(row, other, e, why)
            row[other + "_plan_s"] = e.get("plan_s", "")
        if a.without_pdl:
            e, why = spforge_conv(a.spforge, dst, l, batch, a.dtype, a.strategy, "graph",
                                  {"SPFORGE_PDL": "0"})
            graph_columns(row, "nopdl", e, why)
        rows_out.append(row)
        write_csv(a.out, rows_out)  # each row as it comes: a cut-off run keeps its rows
        print("%-22s batch %2d: spforge %8.1f us (%s, %s), graph %7.1f us  cuDNN "
              "channels_last %7.1f us, graph %7.1f us  NCHW %7.1f  fp32 %7.1f  TF32 %7.1f  "
              "im2col+cuSPARSE (%s) %7.1f us"
              % (l.module, batch, sp_us, row["path"], row["spforge_kernel"], sp_graph_us,
                 cl_us, cl_graph_us, nchw_us, f32_us, tf32_us, cs_dtype, cs_us), flush=True)
    for sparsity, batch in sorted({(r["sparsity"], r["batch"]) for r in rows_out}):
        s = [r for r in rows_out
             if (r["sparsity"], r["batch"]) == (sparsity, batch) and r["passed"]]
        for col, mine, what in (
                ("cudnn_channels_last_us", "spforge_us", "cuDNN %s channels_last" % a.dtype),
                ("cudnn_channels_last_graph_us", "spforge_graph_us",
                 "cuDNN %s channels_last, both in CUDA graphs" % a.dtype),
                ("cudnn_tf32_us", "spforge_us", "cuDNN TF32 channels_last"),
                ("im2col_cusparse_us", "spforge_us", "im2col + cuSPARSE")) + tuple(
                    ("cudnn_channels_last_graph_us", x + "_graph_us",
                     "cuDNN %s channels_last, both in CUDA graphs, by strategy %s alone"
                     % (a.dtype, x)) for x in also) + (
                    (("cudnn_channels_last_graph_us", "nopdl_graph_us",
                      "cuDNN %s channels_last, both in CUDA graphs, ours without the early "
                      "start" % a.dtype),) if a.without_pdl else ()):
            t = [r for r in s if r[col] == r[col] and r[mine] == r[mine]]  # not NaN
            if t:
                g = math.exp(sum(math.log(r[col] / r[mine]) for r in t) / len(t))
                print("sparsity %s, batch %d: %d layers checked, geomean speed-up over %s: %.3fx"
                      % (sparsity, batch, len(t), what, g))


if __name__ == "__main__":
    main()
