# The table of README.md from the two runs JSON beside this file: python3 table.py
import json, math, sys, collections
def load(f): return {r['problem']:r for r in json.load(open(f))['rows']}
import os; os.chdir(os.path.dirname(os.path.abspath(__file__)))
A=load('graphs-tf32-affinity-nvidia-h100-80gb-hbm3-20261124.json')
P=load('graphs-tf32-n128-nvidia-h100-80gb-hbm3-20261124.json')
def cand(r,s):
    for c in r['plan']['candidates']:
        if c['strategy']==s: return c
def us(r,k):
    x=r['results'].get(k); return x['us'] if x and x['state']=='ok' else None
print("| problem | nnz | cuSPARSE µs | AUTO µs (chose) | cuSPARSE ÷ AUTO | tc µs, affinity order (kernel) | tc µs, rows as given | unrolled µs | generic µs | dense TF32 µs |")
print("|---|---|---|---|---|---|---|---|---|---|")
ls=[]; ltc=[]; lr=[]
for k,r in A.items():
    cs=us(r,'cusparse'); a=us(r,'spforge')
    t=cand(r,'tc'); u=cand(r,'unrolled'); g=cand(r,'generic'); d=cand(r,'dense')
    def f(c): 
        if not c: return '-'
        if c['kernel_us']: return '%.1f'%c['kernel_us']
        return c['outcome']
    tcp='-'
    if k in P:
        tp=cand(P[k],'tc'); tcp=f(tp)
        if tp and tp['kernel_us'] and t and t['kernel_us']: lr.append(t['kernel_us']/tp['kernel_us'])
    tdet=(t['detail'].replace('tc_f32_','') if t and t['kernel_us'] else '')
    print("| %s | %d | %.1f | %.1f (%s) | %.2f | %s %s | %s | %s | %s | %s |"%(k, r['nnz'], cs, a, r['plan']['strategy'], cs/a, f(t), ('('+tdet+')') if tdet else '', tcp, f(u), f(g), f(d)))
    ls.append(math.log(cs/a))
    if t and t['kernel_us']: ltc.append(math.log(cs/t['kernel_us']))
gm=lambda l: math.exp(sum(l)/len(l)) if l else float('nan')
print()
print("geomean cuSPARSE ÷ AUTO over %d rows: %.2f"%(len(ls), gm(ls)))
print("tc built on %d rows; geomean cuSPARSE ÷ tc there: %.2f"%(len(ltc), gm(ltc)))
print("N=128 rows with tc built in both runs: %d; geomean tc(affinity) ÷ tc(rows as given): %.3f"%(len(lr), gm([math.log(x) for x in lr])))
ch=collections.Counter(r['plan']['strategy'] for r in A.values()); print("AUTO chose:", dict(ch))
