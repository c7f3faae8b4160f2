# Per-call host cost of SparseLinear against torch's nn.Linear on a GPU (tiny kernels, CUDA graphs off):
# PYTHONPATH=python SPF_LIB=build/libspforge.so SPFORGE_CACHE_DIR=off python3 bench/results/e2e/overhead.py
import time, torch, spforge.torch as st
torch.manual_seed(0)
for n in (1, 16):
    lin = torch.nn.Linear(1024, 1024, bias=True).cuda().half()
    x = torch.randn(n, 1024, device="cuda", dtype=torch.half)
    for name, mode in (("tcfrag", {"strategy": "tcfrag"}), ("auto", {})):
        try:
            sl = st.SparseLinear.from_linear(lin, sparsity=0.9, plan_options=mode or None)
            sl(x)
        except Exception as e:
            print("N=%d %s: %s" % (n, name, e)); continue
        with torch.inference_mode():
            for f, what in ((lin, "torch linear"), (sl, "SparseLinear " + name)):
                for _ in range(200): f(x)
                torch.cuda.synchronize()
                reps = 3000; t = time.perf_counter()
                for _ in range(reps): f(x)
                host = (time.perf_counter() - t) / reps * 1e6
                torch.cuda.synchronize(); wall = (time.perf_counter() - t) / reps * 1e6
                print("N=%d %-22s host %.1f us a call, wall %.1f us a call, plans %s" % (n, what, host, wall, [ (p['strategy'], round(p['kernel_us'] or 0,1)) for p in sl.plans()] if f is sl else "-"))
