"""One-off: cuSPARSELt layouts and algorithm ids through torch, cold, graphs."""
import sys, importlib.util, torch, statistics
spec = importlib.util.spec_from_file_location("t", "python/spforge/_timing.py")
T = importlib.util.module_from_spec(spec); spec.loader.exec_module(T)
torch.manual_seed(0)
def prune(w):
    g = w.view(w.shape[0], -1, 4)
    idx = g.abs().topk(2, dim=-1).indices
    m = torch.zeros_like(g, dtype=torch.bool).scatter_(-1, idx, True)
    return (g * m).view_as(w)
shapes = {"4096x4096": (4096, 4096), "11008x4096": (11008, 4096), "4096x11008": (4096, 11008)}
ns = [int(v) for v in sys.argv[1].split(",")] if len(sys.argv) > 1 else [2048]
print("device", torch.cuda.get_device_name(), torch.__version__, flush=True)
for name, (m, k) in shapes.items():
    w = prune(torch.randn(m, k, device="cuda")).half()
    packed = torch._cslt_compress(w)
    for n in ns:
        x = torch.randn(n, k, device="cuda").half()
        xt = x.t().contiguous()
        want = (x.float() @ w.float().t())
        y = torch.empty(n, m, device="cuda", dtype=torch.half)
        dense = T.graph_time_us(lambda: torch.matmul(x, w.t(), out=y))
        res = {}
        for bname, B in (("Bt", x.t()), ("Bc", xt)):
            for tr in (False, True):
                best = None
                for alg in range(0, 64):
                    try:
                        out = torch._cslt_sparse_mm(packed, B, transpose_result=tr, alg_id=alg)
                    except Exception as e:
                        break
                    got = out if tr else out.t()
                    err = (got.float() - want).abs().max().item() / want.abs().max().item()
                    us = T.graph_time_us(lambda: torch._cslt_sparse_mm(packed, B, transpose_result=tr, alg_id=alg))
                    res[(bname, tr, alg)] = us
                    if best is None or us < best[1]:
                        best = (alg, us)
                    if err > 2e-2:
                        print("  ERR", bname, tr, alg, err)
                print("%s N=%d dense %.1f  B=%s transpose_result=%s: ids %d, id0 %.1f best id %d %.1f (%.2fx)" % (
                    name, n, dense, bname, tr, len([1 for key in res if key[0] == bname and key[1] == tr]),
                    res.get((bname, tr, 0), -1), best[0], best[1], dense / best[1]), flush=True)
        try:
            sid = torch._cslt_sparse_mm_search(packed, x.t(), transpose_result=False)
            print("  search picks", sid)
        except Exception as e:
            print("  search failed", e)
