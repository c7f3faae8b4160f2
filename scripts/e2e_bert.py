#!/usr/bin/env python3
"""End to end: BERT-base and a Llama-like MLP block, dense torch against
spforge.torch (issue 12, item 5).

BERT: BERT-base built from its config (transformers.BertConfig(): 12
layers, hidden 768, FFN 3072; random weights, nothing downloaded), its
Linear layers pruned by magnitude to each sparsity (spforge.torch.
magnitude_prune: the dense reference), then a copy sparsified
(spforge.torch.sparsify: every Linear a SparseLinear of the same pruned
weights). For each (batch, sequence), N = batch · sequence rows reach
every Linear: the plans for N are made first (timed apart: plan_s, and
how many came from the plan cache), then a forward pass is timed, dense
and sparse (median of --repeat, CUDA events, after warm-up), and the
outputs compared: max_rel_err = max |sparse - dense| / max |dense| on
last_hidden_state, beside the dense fp16 model's own error against its
fp32 copy (the rounding floor). Also reported: the gain sparsify expects
from the plans' own timings (the Linear layers' kernel time, dense
candidate over the plan kept), and the forward pass captured in a CUDA
graph where transformers lets it be captured (no Python per layer).
Beside dense eager torch, the dense model compiled by torch.compile
(inductor, default mode, static shapes; its output checked like the
sparse one's, its compile time reported as compile_s), eager and in a
CUDA graph: the best dense a user has (--no-compile: without it).

MLP: a decode step of a Llama-like MLP block, down(silu(gate(x)) · up(x)),
4096 → 11008 → 4096, no bias, for N = 1..64 rows, pruned to each
sparsity: dense, and sparse with plans per N ("exact") and with one plan
per power of two ("pow2": X padded); eager and in a CUDA graph. Which
n_plans policy is better: the step time of each, and the plans (count,
seconds) each needs over the N measured.

Writes under --out: e2e_bert.json (everything, with the environment),
e2e_bert.csv, e2e_mlp.csv, e2e_bert.png (matplotlib; skipped with a note
without it), and prints a summary. Bounded by --budget-s: BERT gets
--bert-share of it, the MLP the rest; what does not fit is listed as
skipped. Plans go to the plan cache (--cache-dir, else $SPFORGE_CACHE_DIR,
else ~/.cache/spforge): a second run on the same machine loads them.

    python3 scripts/e2e_bert.py --out out/e2e              # GPU, fp16 (--budget-s: 9 minutes)
    python3 scripts/e2e_bert.py --tiny --out /tmp/e2e      # CPU smoke test: 2-layer BERT, float32

Exit status: 0, 1 when an output check failed (max_rel_err above
--tolerance), 2 for usage errors, 77 when torch or transformers is
missing (ctest: skipped).
"""

import argparse
import copy
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for the results (created)")
    p.add_argument("--tiny", action="store_true",
                   help="CPU smoke test: 2-layer small BERT, small MLP, float32, CPU plans")
    p.add_argument("--budget-s", type=float, default=540.0,
                   help="seconds the whole run may take (default 540)")
    p.add_argument("--bert-share", type=float, default=0.6,
                   help="share of the budget for BERT; the MLP gets the rest (default 0.6)")
    p.add_argument("--sparsities", default="0.5,0.7,0.9", help="BERT (default 0.5,0.7,0.9)")
    p.add_argument("--batches", default=None, help="BERT batch sizes (default 1,8)")
    p.add_argument("--seqs", default=None, help="BERT sequence lengths (default 128,512)")
    p.add_argument("--layers", type=int, default=None, help="BERT layers (default 12)")
    p.add_argument("--mlp-sparsities", default="0.5,0.7", help="MLP (default 0.5,0.7)")
    p.add_argument("--mlp-ns", default=None,
                   help="MLP rows (default 1,2,3,4,6,8,12,16,24,32,48,64)")
    p.add_argument("--no-bert", action="store_true")
    p.add_argument("--no-mlp", action="store_true")
    p.add_argument("--no-graphs", action="store_true", help="skip the CUDA-graph timings")
    p.add_argument("--no-compile", action="store_true",
                   help="skip the torch.compile baseline (default: on a GPU, timed beside dense)")
    p.add_argument("--repeat", type=int, default=None, help="timed runs (default 20; tiny 3)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--dtype", default=None, help="float16 (default on cuda), bfloat16, float32")
    p.add_argument("--device", default=None, help="cuda (default) or cpu (--tiny: cpu)")
    p.add_argument("--cache-dir", default=None,
                   help="the plan cache (sets SPFORGE_CACHE_DIR; default: $SPFORGE_CACHE_DIR, "
                        "else the library's, ~/.cache/spforge; off: none)")
    p.add_argument("--tolerance", type=float, default=None,
                   help="max_rel_err allowed (default 3e-2 for fp16 / bf16, 1e-4 for float32)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plan-options", default="{}",
                   help='more spforge.Plan options for every layer, as JSON (e.g. '
                        '\'{"verify": false}\': no self-check, faster plans)')
    args = p.parse_args(argv)
    tiny = args.tiny
    args.batches = ints(args.batches or ("1,2" if tiny else "1,8"))
    args.seqs = ints(args.seqs or ("16,32" if tiny else "128,512"))
    args.layers = args.layers or (2 if tiny else 12)
    args.sparsities = floats(args.sparsities if not tiny or args.sparsities != "0.5,0.7,0.9"
                             else "0.5,0.9")
    args.mlp_sparsities = floats(args.mlp_sparsities)
    args.mlp_ns = ints(args.mlp_ns or ("1,3,4,8" if tiny else "1,2,3,4,6,8,12,16,24,32,48,64"))
    args.repeat = args.repeat or (3 if tiny else 20)
    try:
        args.plan_options = json.loads(args.plan_options)
    except ValueError as e:
        p.error("--plan-options: %s" % e)
    args.device = args.device or ("cpu" if tiny else "cuda")
    args.dtype = args.dtype or ("float32" if args.device == "cpu" else "float16")
    if args.tolerance is None:
        args.tolerance = 1e-4 if args.dtype == "float32" else 3e-2
    args.compile = args.device == "cuda" and not args.no_compile
    return args


def ints(text):
    return [int(v) for v in str(text).split(",") if v.strip()]


def floats(text):
    return [float(v) for v in str(text).split(",") if v.strip()]


class Clock:
    """Wall time against the budget; deadline(share) for a section."""

    def __init__(self, budget_s):
        self.start, self.budget = time.perf_counter(), budget_s

    def elapsed(self):
        return time.perf_counter() - self.start

    def left(self, until=None):
        return (self.budget if until is None else until) - self.elapsed()


def timer(torch, device, fn, repeat, warmup):
    """Median milliseconds of fn() over repeat runs after warmup: CUDA
    events around each run on a GPU, perf_counter on the CPU."""
    for _ in range(warmup):
        fn()
    times = []
    if device == "cuda":
        torch.cuda.synchronize()
        for _ in range(repeat):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


def graph_timer(torch, fn, repeat, warmup):
    """fn() captured in a CUDA graph, the replay timed as timer() times:
    (ms, None), or (None, why) when capturing failed."""
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - recorded, the run goes on
        torch.cuda.synchronize()
        return None, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
    ms = timer(torch, "cuda", graph.replay, repeat, warmup)
    del graph
    return ms, None


def max_rel_err(torch, got, want):
    got, want = got.float(), want.float()
    scale = float(want.abs().max())
    return float((got - want).abs().max()) / (scale or 1.0)


def compiled_baseline(torch, args, model, call, want, results, prefix="compile"):
    """model compiled by torch.compile, called as call(compiled): {P_s,
    P_ms, P_graph_ms, P_max_rel_err} against want (P: prefix), or
    {P_failed: why} (recorded once, not tried again)."""
    if not args.compile or results["compile_off"]:
        return {}
    out = _compiled(torch, args, model, call, want, results)
    return {k.replace("compile", prefix, 1): v for k, v in out.items()}


def _compiled(torch, args, model, call, want, results):
    try:
        compiled = torch.compile(model, dynamic=False)
        t0 = time.perf_counter()
        got = call(compiled)
        torch.cuda.synchronize()
        out = {"compile_s": time.perf_counter() - t0,
               "compile_max_rel_err": max_rel_err(torch, got, want)}
    except Exception as e:  # noqa: BLE001 - recorded, the run goes on
        results["compile_off"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
        return {"compile_failed": results["compile_off"]}
    out["compile_ms"] = timer(torch, "cuda", lambda: call(compiled), args.repeat, args.warmup)
    if not args.no_graphs:
        out["compile_graph_ms"], why = graph_timer(torch, lambda: call(compiled), args.repeat,
                                                   args.warmup)
        if why:
            out["compile_graph_failed"] = why
    return out


def best_dense(row):
    """The fastest dense of the row, eager and in a graph: (ms, name) each."""
    def pick(*keys):
        have = [(row[k], k) for k in keys if row.get(k)]
        return min(have) if have else (None, None)
    return {"eager": pick("dense_ms", "compile_ms"),
            "graph": pick("dense_graph_ms", "compile_graph_ms")}


def environment(torch, args):
    env = {"python": platform.python_version(), "torch": torch.__version__,
           "host": platform.node(), "args": vars(args)}
    try:
        import transformers
        env["transformers"] = transformers.__version__
    except ImportError:
        pass
    import spforge
    env["spforge"] = spforge.version()
    env["spforge_library"] = spforge._capi.path
    env["device_info"] = {k: v for k, v in spforge.device_info().items()
                          if k in ("available", "name", "cc_major", "cc_minor", "sm_count",
                                   "reason")}
    if args.device == "cuda":
        env["gpu"] = torch.cuda.get_device_name()
    commit = os.environ.get("SPF_GIT_COMMIT")
    if not commit:
        try:
            commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            commit = ""
    env["commit"] = commit or "unknown"
    return env


def sparse_layers(torch, model):
    import spforge.torch as st
    return [(name, m) for name, m in model.named_modules() if isinstance(m, st.SparseLinear)]


def vs_best(row, eager_keys, graph_keys):
    """The best dense of the row over its best spforge time (the fastest
    of the keys), eager and in a graph."""
    for timing, keys in (("eager", eager_keys), ("graph", graph_keys)):
        ms, name = best_dense(row)[timing]
        ours = [(row[k], k) for k in keys if row.get(k)]
        row["best_dense_%s" % timing] = name
        row["best_spforge_%s" % timing] = min(ours)[1] if ours else None
        row["vs_best_dense_%s" % timing] = ms / min(ours)[0] if ms and ours else None


def best_note(row):
    parts = ["%s %.2fx (%s over %s)" % (t, row["vs_best_dense_" + t], row["best_dense_" + t],
                                        row["best_spforge_" + t])
             for t in ("eager", "graph") if row.get("vs_best_dense_" + t)]
    return "; vs best dense: " + ", ".join(parts) if parts else ""


def prepare(layers, n, deadline, clock):
    """Make every layer's plan for N; (seconds, plans, from cache,
    strategies) or None when the deadline passed first."""
    start, made, cached, strategies = time.perf_counter(), 0, 0, {}
    for _, layer in layers:
        if clock.left(deadline) < 0:
            return None
        for p in layer.prepare([n]):
            made += 1
            cached += bool(p["from_cache"])
            strategies[p["strategy"]] = strategies.get(p["strategy"], 0) + 1
    return time.perf_counter() - start, made, cached, strategies


def bert_config(transformers, args):
    if args.tiny:
        return transformers.BertConfig(vocab_size=1000, hidden_size=64,
                                       num_hidden_layers=args.layers, num_attention_heads=2,
                                       intermediate_size=256, max_position_embeddings=128)
    return transformers.BertConfig(num_hidden_layers=args.layers)  # BERT-base otherwise


def run_bert(torch, args, clock, deadline, results):
    import transformers
    import spforge.torch as st
    dtype, device = getattr(torch, args.dtype), args.device
    torch.manual_seed(args.seed)
    config = bert_config(transformers, args)
    base = transformers.BertModel(config).eval().to(device=device, dtype=dtype)
    results["environment"]["bert"] = "%d layers, hidden %d, FFN %d" % (
        config.num_hidden_layers, config.hidden_size, config.intermediate_size)
    configs = sorted(((b, s) for b in args.batches for s in args.seqs), key=lambda c: c[0] * c[1])
    # The sparsest first: where the budget runs out, what goes is the
    # lowest sparsity, where AUTO keeps the dense strategy most.
    for sparsity in sorted(args.sparsities, reverse=True):
        if clock.left(deadline) < 0:
            results["skipped"] += ["bert s=%.2f b=%d seq=%d: budget" % (sparsity, b, s)
                                   for b, s in configs]
            continue
        dense = copy.deepcopy(base)
        pruned = st.magnitude_prune(dense, sparsity, min_size=0)
        sparse = copy.deepcopy(dense)
        report = st.sparsify(sparse, None, min_size=0,  # the pruned weights' nonzeros
                             plan_options=args.plan_options)
        layers = sparse_layers(torch, sparse)
        reference = copy.deepcopy(dense).float() if dtype != torch.float32 else None
        print("bert s=%.2f: %d Linear layers pruned, %d swapped" % (sparsity, len(pruned),
                                                                   len(layers)), flush=True)
        for batch, seq in configs:
            n = batch * seq
            tag = "bert s=%.2f b=%d seq=%d" % (sparsity, batch, seq)
            made = prepare(layers, n, deadline, clock) if clock.left(deadline) > 0 else None
            if made is None:
                results["skipped"].append(tag + ": budget")
                for _, layer in layers:
                    layer.release_plans()
                continue
            plan_s, plans, cached, strategies = made
            gen = torch.Generator(device="cpu").manual_seed(args.seed + n)
            ids = torch.randint(0, config.vocab_size, (batch, seq), generator=gen).to(device)
            with torch.inference_mode():
                want = dense(input_ids=ids).last_hidden_state
                got = sparse(input_ids=ids).last_hidden_state
                err = max_rel_err(torch, got, want)
                floor = (max_rel_err(torch, want, reference(input_ids=ids).last_hidden_state)
                         if reference is not None else None)
                dense_ms = timer(torch, device, lambda: dense(input_ids=ids), args.repeat,
                                 args.warmup)
                sparse_ms = timer(torch, device, lambda: sparse(input_ids=ids), args.repeat,
                                  args.warmup)
                graphs = {}
                if device == "cuda" and not args.no_graphs and not results["bert_graphs_off"]:
                    for kind, model in (("dense", dense), ("sparse", sparse)):
                        graphs[kind] = graph_timer(torch, lambda m=model: m(input_ids=ids),
                                                   args.repeat, args.warmup)
                        if graphs[kind][1]:  # a failed capture is not tried again
                            results["bert_graphs_off"] = "%s: %s" % (kind, graphs[kind][1])
                            break
                compiled = compiled_baseline(torch, args, dense,
                                             lambda m: m(input_ids=ids).last_hidden_state, want,
                                             results)
                # the sparse model compiled too (SparseLinear is a custom op
                # under torch.compile): what a user who compiles runs
                compiled.update(compiled_baseline(
                    torch, args, sparse, lambda m: m(input_ids=ids).last_hidden_state, want,
                    results, prefix="sparse_compile"))
            expected = next((g for g in report.expected_gain() if g["n"] == n), None)
            row = {"sparsity": sparsity, "batch": batch, "seq": seq, "n": n,
                   "layers": len(layers), "plans": plans, "plans_from_cache": cached,
                   "plan_s": plan_s, "strategies": strategies,
                   "dense_ms": dense_ms, "sparse_ms": sparse_ms, "speedup": dense_ms / sparse_ms,
                   "dense_graph_ms": graphs.get("dense", (None, None))[0],
                   "sparse_graph_ms": graphs.get("sparse", (None, None))[0],
                   "graph_failed": "; ".join("%s: %s" % (k, v[1]) for k, v in graphs.items()
                                             if v[1]) or None,
                   "max_rel_err": err, "dense_fp32_max_rel_err": floor,
                   "ok": err <= args.tolerance,
                   "expected_linear_gain": expected and expected["gain"],
                   "linear_dense_us": expected and expected["dense_us"],
                   "linear_sparse_us": expected and expected["sparse_us"]}
            row.update(compiled)
            row["ok"] = row["ok"] and row.get("sparse_compile_max_rel_err", 0) <= args.tolerance
            if row["dense_graph_ms"] and row["sparse_graph_ms"]:
                row["graph_speedup"] = row["dense_graph_ms"] / row["sparse_graph_ms"]
            vs_best(row, ("sparse_ms", "sparse_compile_ms"),
                    ("sparse_graph_ms", "sparse_compile_graph_ms"))
            results["bert"].append(row)
            print("  %s: plans %d (%d cached) in %.1f s %s; dense %.3f ms, sparse %.3f ms "
                  "(%.2fx; Linear layers expected %s)%s; max_rel_err %.2e%s%s"
                  % (tag, plans, cached, plan_s, strategies, dense_ms, sparse_ms,
                     row["speedup"], "%.2fx" % row["expected_linear_gain"]
                     if row["expected_linear_gain"] else "?", best_note(row), err,
                     " (dense fp16 vs fp32 %.2e)" % floor if floor is not None else "",
                     "" if row["ok"] else " ABOVE TOLERANCE %.1e" % args.tolerance), flush=True)
            for _, layer in layers:  # bounded device memory: one N's plans at a time
                layer.release_plans()
        dense = sparse = reference = layers = None  # freed before the next sparsity
        if device == "cuda":
            torch.cuda.empty_cache()


class MLP:
    """Llama's MLP block: down(silu(gate(x)) * up(x)), no bias."""

    def __init__(self, torch, gate, up, down):
        self.torch, self.gate, self.up, self.down = torch, gate, up, down

    def __call__(self, x):
        F = self.torch.nn.functional
        return self.down(F.silu(self.gate(x)) * self.up(x))


def run_mlp(torch, args, clock, deadline, results):
    import spforge.torch as st
    from spforge._torch import plan_rows, _zero_outside
    dtype, device = getattr(torch, args.dtype), args.device
    hidden, inter = (64, 172) if args.tiny else (4096, 11008)
    torch.manual_seed(args.seed + 1)
    base = [torch.nn.Linear(i, o, bias=False, device=device, dtype=dtype)
            for i, o in ((hidden, inter), (hidden, inter), (inter, hidden))]
    policies = ("exact", "pow2")
    for sparsity in args.mlp_sparsities:
        tag = "mlp s=%.2f" % sparsity
        if clock.left(deadline) < 0:
            results["skipped"].append(tag + ": budget")
            continue
        dense = [copy.deepcopy(lin) for lin in base]
        for lin in dense:
            _zero_outside(lin, st.magnitude_mask(lin.weight, sparsity))
        sparse = [st.SparseLinear.from_linear(lin, n_plans="exact",
                                              plan_options=args.plan_options) for lin in dense]
        dense_mlp, sparse_mlp = MLP(torch, *dense), MLP(torch, *sparse)
        made_s = {}  # (layer, plan N) -> seconds
        print("%s: %s" % (tag, ", ".join("%d×%d nnz %d" % (s.out_features, s.in_features, s.nnz)
                                         for s in sparse)), flush=True)
        for n in args.mlp_ns:
            if clock.left(deadline) < 0:
                results["skipped"].append("%s N=%d: budget" % (tag, n))
                continue
            gen = torch.Generator(device="cpu").manual_seed(args.seed + n)
            x = torch.randn(n, hidden, generator=gen).to(device=device, dtype=dtype)
            row = {"sparsity": sparsity, "n": n}
            with torch.inference_mode():
                want = dense_mlp(x)
                row["dense_ms"] = timer(torch, device, lambda: dense_mlp(x), args.repeat,
                                        args.warmup)
                if device == "cuda" and not args.no_graphs:
                    row["dense_graph_ms"], why = graph_timer(torch, lambda: dense_mlp(x),
                                                             args.repeat, args.warmup)
                row.update(compiled_baseline(torch, args, lambda v: dense_mlp(v), lambda f: f(x),
                                             want, results))
                for policy in policies:
                    for layer in sparse:
                        layer.n_plans = policy  # one table of plans for both policies
                    rows = plan_rows(n, policy)
                    for i, layer in enumerate(sparse):
                        if (i, rows) not in made_s:
                            for p in layer.prepare([n]):
                                made_s[(i, p["n"])] = p["plan_s"]
                    got = sparse_mlp(x)
                    row[policy + "_plan_n"] = rows
                    row[policy + "_max_rel_err"] = max_rel_err(torch, got, want)
                    row[policy + "_ms"] = timer(torch, device, lambda: sparse_mlp(x),
                                                args.repeat, args.warmup)
                    if device == "cuda" and not args.no_graphs:
                        row[policy + "_graph_ms"], why = graph_timer(
                            torch, lambda: sparse_mlp(x), args.repeat, args.warmup)
                        if why:
                            row[policy + "_graph_failed"] = why
                    row[policy + "_strategies"] = [next(p["strategy"] for p in layer.plans()
                                                        if p["n"] == rows) for layer in sparse]
                # the pow2 plans (the last policy's) compiled, as a user may run them
                row.update(compiled_baseline(torch, args, lambda v: sparse_mlp(v),
                                             lambda f: f(x), want, results,
                                             prefix="sparse_compile"))
            row["ok"] = all(row.get(key, 0) <= args.tolerance for key in
                            [p + "_max_rel_err" for p in policies] + ["sparse_compile_max_rel_err"])
            # n_plans="auto" (SparseLinear's default): the pow2 plans up to 64
            vs_best(row, ("pow2_ms", "sparse_compile_ms"),
                    ("pow2_graph_ms", "sparse_compile_graph_ms"))
            results["mlp"].append(row)
            print("  %s N=%d: dense %.3f ms%s; exact %.3f ms%s %s; pow2 (N=%d) %.3f ms%s %s%s; "
                  "max_rel_err %.1e / %.1e%s"
                  % (tag, n, row["dense_ms"], graph_note(row, "dense"), row["exact_ms"],
                     graph_note(row, "exact"), "/".join(row["exact_strategies"]),
                     row["pow2_plan_n"], row["pow2_ms"], graph_note(row, "pow2"),
                     "/".join(row["pow2_strategies"]), best_note(row), row["exact_max_rel_err"],
                     row["pow2_max_rel_err"], "" if row["ok"] else " ABOVE TOLERANCE"),
                  flush=True)
        measured = [r["n"] for r in results["mlp"] if r["sparsity"] == sparsity]
        for policy in policies:
            need = sorted({plan_rows(n, policy) for n in measured})
            seconds = sum(made_s.get((i, pn)) or 0.0 for i in range(3) for pn in need)
            results["mlp_plans"].append({"sparsity": sparsity, "policy": policy,
                                         "ns": measured, "plan_ns": need,
                                         "plans": 3 * len(need), "plan_s": seconds})
        for layer in sparse:
            layer.release_plans()
        dense = sparse = dense_mlp = sparse_mlp = None
        if device == "cuda":
            torch.cuda.empty_cache()


def graph_note(row, kind):
    ms = row.get(kind + "_graph_ms")
    return " (graph %.3f)" % ms if ms else ""


BERT_COLUMNS = ["sparsity", "batch", "seq", "n", "layers", "plans", "plans_from_cache", "plan_s",
                "dense_ms", "sparse_ms", "speedup", "dense_graph_ms", "sparse_graph_ms",
                "graph_speedup", "expected_linear_gain", "linear_dense_us", "linear_sparse_us",
                "max_rel_err", "dense_fp32_max_rel_err", "ok", "strategies", "graph_failed"]
COMPILE_COLUMNS = ["compile_s", "compile_ms", "compile_graph_ms", "compile_max_rel_err",
                   "sparse_compile_s", "sparse_compile_ms", "sparse_compile_graph_ms",
                   "sparse_compile_max_rel_err", "best_dense_eager", "best_spforge_eager",
                   "vs_best_dense_eager", "best_dense_graph", "best_spforge_graph",
                   "vs_best_dense_graph"]
BERT_COLUMNS += COMPILE_COLUMNS
MLP_COLUMNS = ["sparsity", "n", "dense_ms", "dense_graph_ms", "exact_plan_n", "exact_ms",
               "exact_graph_ms", "exact_max_rel_err", "exact_strategies", "pow2_plan_n",
               "pow2_ms", "pow2_graph_ms", "pow2_max_rel_err", "pow2_strategies", "ok"
               ] + COMPILE_COLUMNS


def write_csv(path, rows, columns):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for row in rows:
            w.writerow([json.dumps(row.get(c)) if isinstance(row.get(c), (dict, list))
                        else ("" if row.get(c) is None else row.get(c)) for c in columns])


def plot(path, results, title):
    """Two panels: BERT's forward-pass speedup per (batch, seq) and
    sparsity; the MLP step time against N. Returns a note when skipped."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot"
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5))
    bert = results["bert"]
    if bert:
        sparsities = sorted({r["sparsity"] for r in bert})
        configs = sorted({(r["batch"], r["seq"]) for r in bert}, key=lambda c: c[0] * c[1])
        width = 0.8 / max(1, len(sparsities))
        for i, s in enumerate(sparsities):
            for key, hatch in (("speedup", None), ("graph_speedup", "//")):
                xs, ys = [], []
                for j, c in enumerate(configs):
                    r = next((r for r in bert if r["sparsity"] == s
                              and (r["batch"], r["seq"]) == c), None)
                    if r is not None and r.get(key):
                        xs.append(j + i * width - 0.4 + width / 2)
                        ys.append(r[key])
                if xs and hatch is None:
                    left.bar(xs, ys, width * 0.9, label="s=%.1f eager" % s)
                elif xs:
                    left.scatter(xs, ys, marker="_", s=200, color="k",
                                 label="CUDA graph" if i == 0 else None)
        left.axhline(1.0, color="gray", lw=0.8)
        left.set_xticks(range(len(configs)))
        left.set_xticklabels(["b%d s%d" % c for c in configs])
        left.set_ylabel("forward pass: dense time / spforge time")
        left.set_title("BERT forward (%s), %s" % (results["environment"]["bert"], title))
        left.legend(fontsize=8)
    else:
        left.text(0.5, 0.5, "BERT not run", ha="center")
    mlp = results["mlp"]
    if mlp:
        for s in sorted({r["sparsity"] for r in mlp}):
            rows = [r for r in mlp if r["sparsity"] == s]
            ns = [r["n"] for r in rows]
            for key, style in (("exact_ms", "-o"), ("pow2_ms", "--s"),
                               ("exact_graph_ms", ":o"), ("pow2_graph_ms", ":s")):
                ys = [r.get(key) for r in rows]
                if all(y for y in ys):
                    right.plot(ns, ys, style, label="s=%.1f %s" % (s, key[:-3].replace("_", " ")))
        rows = [r for r in mlp if r["sparsity"] == mlp[0]["sparsity"]]
        right.plot([r["n"] for r in rows], [r["dense_ms"] for r in rows], "-k", lw=2,
                   label="dense eager")
        if all(r.get("dense_graph_ms") for r in rows):
            right.plot([r["n"] for r in rows], [r["dense_graph_ms"] for r in rows], ":k", lw=2,
                       label="dense graph")
        right.set_xscale("log", base=2)
        right.set_yscale("log")
        right.set_xlabel("N (rows of X)")
        right.set_ylabel("MLP step, ms")
        right.set_title("Llama-like MLP decode step, %s" % title)
        right.legend(fontsize=7)
    else:
        right.text(0.5, 0.5, "MLP not run", ha="center")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return None


def summary(results, args):
    lines = ["", "=== e2e_bert summary (%s, %s, %s) ===" % (
        results["environment"].get("gpu", args.device), args.dtype,
        results["environment"]["commit"])]
    if results["bert"]:
        lines.append("BERT (%d layers): sparsity batch seq | plans (cached) plan_s | dense_ms "
                     "sparse_ms speedup [graph] | expected Linear gain | max_rel_err"
                     % args.layers)
        for r in results["bert"]:
            lines.append("  %.2f %2d %4d | %3d (%3d) %6.1f s | %8.3f %8.3f %5.2fx [%s] | %s | "
                         "%.1e%s"
                         % (r["sparsity"], r["batch"], r["seq"], r["plans"],
                            r["plans_from_cache"], r["plan_s"], r["dense_ms"], r["sparse_ms"],
                            r["speedup"], "%.2fx" % r["graph_speedup"]
                            if r.get("graph_speedup") else "-",
                            "%.2fx" % r["expected_linear_gain"]
                            if r["expected_linear_gain"] else "?", r["max_rel_err"],
                            "" if r["ok"] else " FAIL"))
    if results["mlp"]:
        lines.append("MLP decode step: sparsity N | dense | exact | pow2 (ms, eager [graph])")
        for r in results["mlp"]:
            lines.append("  %.2f %3d | %.3f [%s] | %.3f [%s] | %.3f [%s] (plan N %d)%s"
                         % (r["sparsity"], r["n"], r["dense_ms"], fmt(r.get("dense_graph_ms")),
                            r["exact_ms"], fmt(r.get("exact_graph_ms")), r["pow2_ms"],
                            fmt(r.get("pow2_graph_ms")), r["pow2_plan_n"],
                            "" if r["ok"] else " FAIL"))
        for p in results["mlp_plans"]:
            lines.append("  plans s=%.2f %-5s: %d plans (N %s) made in %.1f s"
                         % (p["sparsity"], p["policy"], p["plans"], p["plan_ns"], p["plan_s"]))
        for s in sorted({r["sparsity"] for r in results["mlp"]}):
            rows = [r for r in results["mlp"] if r["sparsity"] == s]
            for key in ("ms", "graph_ms"):
                if all(r.get("exact_" + key) and r.get("pow2_" + key) for r in rows):
                    ratio = statistics.geometric_mean(r["pow2_" + key] / r["exact_" + key]
                                                      for r in rows)
                    lines.append("  s=%.2f %s: pow2 / exact step time, geomean over N: %.3f"
                                 % (s, "eager" if key == "ms" else "graph", ratio))
    if results["compile_off"]:
        lines.append("  torch.compile failed, not tried again (%s)" % results["compile_off"])
    if results["bert_graphs_off"]:
        lines.append("  BERT in a CUDA graph: capture failed, not tried again (%s)"
                     % results["bert_graphs_off"])
    for s in results["skipped"]:
        lines.append("  skipped: " + s)
    lines.append("wall %.1f s of a %.0f s budget; results in %s" % (
        results["wall_s"], args.budget_s, args.out))
    return "\n".join(lines)


def fmt(ms):
    return "%.3f" % ms if ms else "-"


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import torch
    except ImportError:
        print("SKIP: torch is not installed")
        return 77
    if not args.no_bert:
        try:
            import transformers  # noqa: F401
        except ImportError:
            print("SKIP: transformers is not installed (BERT is built from its config)")
            return 77
    if args.device == "cuda" and not torch.cuda.is_available():
        print("e2e_bert: no CUDA device for torch (use --tiny, or --device cpu)", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    if args.cache_dir:  # kept out of --out by default: entries are large and not results
        os.environ["SPFORGE_CACHE_DIR"] = args.cache_dir  # before the first plan
    cache = os.environ.get("SPFORGE_CACHE_DIR") or os.path.expanduser("~/.cache/spforge")
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import spforge  # noqa: F401  (the repository's, unless installed)
    torch.backends.cuda.matmul.allow_tf32 = False  # dense float32 as spforge's default math
    if args.tiny:
        torch.set_num_threads(1)  # the CPU plans' threads and torch's share small CI machines
    clock = Clock(args.budget_s)
    results = {"environment": environment(torch, args), "bert": [], "mlp": [], "mlp_plans": [],
               "skipped": [], "bert_graphs_off": None, "compile_off": None}
    print("e2e_bert: %s on %s, %s; plan cache %s; budget %.0f s"
          % (results["environment"]["commit"], results["environment"].get("gpu", "cpu"),
             args.dtype, cache, args.budget_s), flush=True)
    if not args.no_bert:
        run_bert(torch, args, clock, args.budget_s * (args.bert_share if not args.no_mlp else 1),
                 results)
    if not args.no_mlp:
        run_mlp(torch, args, clock, args.budget_s, results)
    results["wall_s"] = clock.elapsed()
    with open(os.path.join(args.out, "e2e_bert.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)
    write_csv(os.path.join(args.out, "e2e_bert.csv"), results["bert"], BERT_COLUMNS)
    write_csv(os.path.join(args.out, "e2e_mlp.csv"), results["mlp"], MLP_COLUMNS)
    note = plot(os.path.join(args.out, "e2e_bert.png"), results,
                "%s %s" % (results["environment"].get("gpu", "cpu"), args.dtype))
    print(summary(results, args))
    if note:
        print("e2e_bert: " + note)
    failed = [r for r in results["bert"] + results["mlp"] if not r["ok"]]
    if failed:
        print("e2e_bert: %d rows above the tolerance %.1e" % (len(failed), args.tolerance),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
