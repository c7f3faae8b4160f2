#!/usr/bin/env python3
"""Train the rank model of LO-SpMM §3.5 (src/plan/rank_model.h) from tuning logs.

Retrain, from the repository root (one command once the venv exists):

    python3 -m venv .venv-rank && .venv-rank/bin/pip install -r scripts/requirements-rank.txt
    .venv-rank/bin/python scripts/train_rank_model.py bench/results/tuning/*.csv \\
        --out models/rank_model.txt --check

then rebuild: the library embeds models/rank_model.txt at build time.

The logs are the tuner's CSVs (spf_plan_write_tuning_log; spforge-bench --tuning-logs).
Only rows with status "ok" count. Rows are grouped into problems by the `problem`
column, else by (log file, m, k, n, nnz, dtype, f16x2, bias, relu, reorder): two seeds of
one shape and sparsity have equal m, k, n and nnz, and spforge-bench writes one log per
problem. The features are the log's
f_* columns (rank_feature_names, written by the tuner); a log without them is one of
spforge-bench's generated problems, named <use>_<M>x<K>_N_<N>_s<sparsity>.csv, and its
features are recomputed by the C code itself (spf_rank_features, built in the build
folder's tests/: --features-tool) on the same uniform matrix (seed 1) the bench tuned,
checked against the log's nnz.

The model is LightGBM's lambdarank objective (LambdaMART) over those features; each
problem's configurations get relevance grades from their kernel time against the
problem's best (grade_of). The export is the text format of rank_model.h; --check
scores every row from the exported text in Python and compares with LightGBM.
The cross-validation leaves whole problems out and reports, for K = 1, 3, 5, 8, the
loss of the best measured kernel among the model's top K against the problem's best.

Other modes: --write-fixture DIR (the C-vs-Python fixture under tests/fixtures/rank),
--selftest (ctest rank_model_python; exits 77 when lightgbm is not installed).
"""

import argparse
import csv
import math
import os
import re
import subprocess
import sys
import textwrap
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORMAT = "spforge-rank-model"
VERSION = 1
# LO-SpMM Table 1, in the paper's order (the first columns of rank_feature_names).
PAPER_FEATURES = ["f_a_tiles", "f_b_tiles", "f_blocks", "f_sparsity", "f_nnc_sum", "f_nnz_max",
                  "f_m1", "f_n1", "f_k"]
TOP_KS = (1, 3, 5, 8)
# Relevance grades: a configuration within GRADE_RATIOS[i] of the problem's best time
# earns one grade per ratio it is within (the best: all of them).
GRADE_RATIOS = (2.0, 1.5, 1.3, 1.2, 1.1, 1.05, 1.02, 1.000001)
BENCH_NAME = re.compile(r"^[A-Za-z0-9]+_(\d+)x(\d+)_N_(\d+)_s([0-9.]+)$")


class Problem:
    """One problem's ok rows: features X (lists of floats), kernel times."""

    def __init__(self, name):
        self.name, self.x, self.times, self.configs = name, [], [], []


def grade_of(time_us, best_us):
    ratio = time_us / best_us
    return sum(ratio <= r for r in GRADE_RATIOS)


# ---- reading the logs

def tool_features(tool, generate, lines):
    """Feature names and rows from spf_rank_features for config lines."""
    proc = subprocess.run([tool] + generate, input="".join(lines), capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        sys.exit("%s %s: %s" % (tool, " ".join(generate), proc.stderr.strip()))
    out = proc.stdout.splitlines()
    return out[0].split(","), [[float(v) for v in row.split(",")] for row in out[1:]]


def read_log(path, tool, problems, names):
    """Add path's ok rows to problems (dict key -> Problem); returns the feature names."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return names
    header = list(rows[0].keys())
    ok = [r for r in rows if r["status"] == "ok" and float(r["kernel_us"]) > 0]
    log_names = [h for h in header if h.startswith("f_")]
    if log_names:
        feats = [[float(r[n]) for n in log_names] for r in ok]
    else:
        stem = os.path.splitext(os.path.basename(path))[0]
        match = BENCH_NAME.match(stem)
        if not match:
            sys.exit("%s: no f_* feature columns, and the name is not a generated bench "
                     "problem's (<use>_<M>x<K>_N_<N>_s<sparsity>)" % path)
        if not tool or not os.access(tool, os.X_OK):
            sys.exit("%s: no f_* feature columns; give --features-tool (the build folder's "
                     "tests/spf_rank_features)" % path)
        m, k, _, sparsity = match.groups()
        lines = ["%s %s %s %s %s %s %s\n" % (r["n"], r["dtype"], r["m1"], r["n1"], r["v"],
                                             r["prefetch"], r["ksplit"]) for r in ok]
        log_names, feats = tool_features(tool, ["--uniform", m, k, sparsity, "1"], lines)
        for r, x in zip(ok, feats):
            got = (x[log_names.index("f_m")], x[log_names.index("f_k")],
                   x[log_names.index("f_nnz")])
            if got != (float(r["m"]), float(r["k"]), float(r["nnz"])):
                sys.exit("%s: the regenerated matrix is %gx%g with %g nonzeros, the log's "
                         "%sx%s with %s" % (path, *got, r["m"], r["k"], r["nnz"]))
    if names is not None and log_names != names:
        sys.exit("%s: feature columns differ from the other logs'" % path)
    # The tuner logs NaN features for an m1 past the tile limit: no split
    # can place them as the C scorer would (NaN goes right, LightGBM makes it 0).
    nan_rows = sum(any(math.isnan(v) for v in x) for x in feats)
    if nan_rows:
        print("%s: %d ok rows without features left out" % (path, nan_rows))
    for r, x in zip(ok, feats):
        if any(math.isnan(v) for v in x):
            continue
        key = r.get("problem") or "%s %sx%s n%s nnz%s %s%s%s%s%s" % (
            os.path.splitext(os.path.basename(path))[0], r["m"], r["k"], r["n"], r["nnz"],
            r["dtype"], "+f16x2" if r["f16x2"] == "1" else "", "+bias" if r["bias"] == "1" else "",
            "+relu" if r["relu"] == "1" else "", "+reorder" if r.get("reorder") == "1" else "")
        p = problems.setdefault(key, Problem(key))
        p.x.append(x)
        p.times.append(float(r["kernel_us"]))
        p.configs.append(r["kernel"])
    return log_names


def read_logs(paths, tool):
    problems, names = {}, None
    for path in paths:
        names = read_log(path, tool, problems, names)
    kept = [p for p in problems.values() if len(p.times) >= 2]
    if not kept:
        sys.exit("no problem with two or more ok rows in %d logs" % len(paths))
    return names, kept


# ---- training and export

def train(problems, names, use, params):
    """A LightGBM booster on the columns `use` (names) of problems' features."""
    import lightgbm as lgb
    import numpy as np
    cols = [names.index(n) for n in use]
    x = np.array([[row[c] for c in cols] for p in problems for row in p.x], dtype=np.float64)
    y = np.array([grade_of(t, min(p.times)) for p in problems for t in p.times])
    data = lgb.Dataset(x, label=y, group=[len(p.times) for p in problems], feature_name=use,
                       params={"feature_pre_filter": False})
    return lgb.train(dict(params), data, num_boost_round=params["num_iterations"])


def lgb_params(args):
    return {
        "objective": "lambdarank", "metric": "ndcg", "verbosity": -1,
        "num_iterations": args.trees, "num_leaves": args.leaves,
        "learning_rate": args.learning_rate, "min_data_in_leaf": args.min_leaf,
        "lambdarank_truncation_level": 20, "label_gain": [2 ** g - 1 for g in
                                                          range(len(GRADE_RATIOS) + 1)],
        # NaN-free features and plain "x <= threshold" splits: what the C scorer does.
        "use_missing": False, "zero_as_missing": False,
        "deterministic": True, "force_row_wise": True, "num_threads": args.threads,
        "seed": 1,
    }


def export(booster, names, use, comments):
    """The model in rank_model.h's text format; feature indices into names."""
    dump = booster.dump_model()
    lines = ["# %s" % c for c in comments]
    lines += ["%s %d" % (FORMAT, VERSION), "features %d %s" % (len(names), " ".join(names)),
              "trees %d" % len(dump["tree_info"])]
    for tree in dump["tree_info"]:
        nodes = []

        def walk(node):
            index = len(nodes)
            nodes.append(None)
            if "leaf_value" in node:
                nodes[index] = "leaf %r" % float(node["leaf_value"])
                return index
            if node["decision_type"] != "<=" or node["missing_type"] != "None":
                raise ValueError("split %s %s: the C scorer does only '<=' without missing "
                                 "values" % (node["decision_type"], node["missing_type"]))
            left, right = walk(node["left_child"]), walk(node["right_child"])
            nodes[index] = "split %d %r %d %d" % (names.index(use[node["split_feature"]]),
                                                 float(node["threshold"]), left, right)
            return index

        walk(tree["tree_structure"])
        lines.append("tree %d" % len(nodes))
        lines += ["%d %s" % (i, n) for i, n in enumerate(nodes)]
    lines.append("end")
    return "\n".join(lines) + "\n"


# ---- the text format in Python (the exporter's check and the fixture's)

def parse_model(text, origin):
    """(feature names, trees); a tree is a list of ('leaf', v) / ('split', f, t, l, r)."""
    lines = [(i + 1, ln.split()) for i, ln in enumerate(text.splitlines())
             if ln.strip() and not ln.lstrip().startswith("#")]
    pos = 0

    def take(what):
        nonlocal pos
        if pos >= len(lines):
            raise ValueError("%s: expected %s, got end of file" % (origin, what))
        pos += 1
        return lines[pos - 1]

    no, tok = take(FORMAT)
    if tok != [FORMAT, str(VERSION)]:
        raise ValueError("%s:%d: expected '%s %d'" % (origin, no, FORMAT, VERSION))
    no, tok = take("features")
    if tok[0] != "features" or int(tok[1]) != len(tok) - 2:
        raise ValueError("%s:%d: expected 'features <count> <names>'" % (origin, no))
    names = tok[2:]
    no, tok = take("trees")
    trees = []
    for _ in range(int(tok[1])):
        no, tok = take("tree")
        nodes = []
        for i in range(int(tok[1])):
            no, tok = take("node %d" % i)
            if int(tok[0]) != i:
                raise ValueError("%s:%d: expected node %d" % (origin, no, i))
            nodes.append(("leaf", float(tok[2])) if tok[1] == "leaf" else
                         ("split", int(tok[2]), float(tok[3]), int(tok[4]), int(tok[5])))
        trees.append(nodes)
    no, tok = take("end")
    if tok != ["end"] or pos != len(lines):
        raise ValueError("%s:%d: expected 'end' and the end of the file" % (origin, no))
    return names, trees


def score(trees, x):
    """rank_model_score: the sum over trees of the leaf reached."""
    total = 0.0
    for nodes in trees:
        node = nodes[0]
        while node[0] == "split":
            node = nodes[node[3] if x[node[1]] <= node[2] else node[4]]
        total += node[1]
    return total


def check_export(booster, text, problems, names, use):
    """Max |text score − LightGBM raw score| over every row; exits on a mismatch."""
    import numpy as np
    _, trees = parse_model(text, "export")
    cols = [names.index(n) for n in use]
    rows = [row for p in problems for row in p.x]
    want = booster.predict(np.array([[r[c] for c in cols] for r in rows]), raw_score=True)
    worst = max(abs(score(trees, r) - w) for r, w in zip(rows, want))
    print("check: %d rows scored from the exported text; max |difference| from LightGBM %.3g"
          % (len(rows), worst))
    if worst > 1e-9:
        sys.exit("check failed: the exported model does not reproduce LightGBM's scores")


# ---- evaluation

def topk_losses(problem, scores):
    """For each K of TOP_KS: best time among the K best-scored / best time − 1."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    best = min(problem.times)
    return [min(problem.times[i] for i in order[:k]) / best - 1 for k in TOP_KS]


def random_losses(problem):
    """The expected loss of the best of K configurations drawn at random."""
    times = sorted(problem.times)
    n, best, out = len(times), times[0], []
    for k in TOP_KS:
        k = min(k, n)
        # P(the minimum of the draw is times[i]) = C(n-1-i, k-1) / C(n, k)
        total = sum(math.comb(n - 1 - i, k - 1) * times[i] for i in range(n - k + 1))
        out.append(total / math.comb(n, k) / best - 1)
    return out


def cross_validate(problems, names, use, params, folds):
    """Leave-problems-out: folds groups of problems (round robin), each held out once."""
    import numpy as np
    folds = min(folds, len(problems))
    losses = {}
    for f in range(folds):
        held = [p for i, p in enumerate(problems) if i % folds == f]
        kept = [p for i, p in enumerate(problems) if i % folds != f]
        booster = train(kept, names, use, params)
        cols = [names.index(n) for n in use]
        for p in held:
            s = booster.predict(np.array([[r[c] for c in cols] for r in p.x]), raw_score=True)
            losses[p.name] = topk_losses(p, list(s))
    return losses


def summarize(label, losses):
    """Lines 'K mean worst (problem)' for a {problem: [loss per K]} table."""
    out = []
    for j, k in enumerate(TOP_KS):
        vals = {name: l[j] for name, l in losses.items()}
        worst = max(vals, key=vals.get)
        out.append("%-10s top-%d: mean loss %5.1f %%, worst %6.1f %% (%s)"
                   % (label, k, 100 * sum(vals.values()) / len(vals), 100 * vals[worst], worst))
    return out


# ---- modes

def log_folders(paths):
    """'DIR/*.csv (N files)' for each folder of the logs, repository-relative."""
    count = {}
    for path in paths:
        d = os.path.relpath(os.path.dirname(os.path.abspath(path)), REPO)
        count[d] = count.get(d, 0) + 1
    return ", ".join("%s/*.csv (%d files)" % (d, n) for d, n in sorted(count.items()))


def need_lightgbm():
    try:
        import lightgbm  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        print("SKIP: lightgbm / numpy not installed (pip install -r scripts/requirements-rank.txt "
              "into .venv-rank)")
        sys.exit(77)


def check_fixture(directory, names):
    """The fixture's expected scores (LightGBM's, when written) from its text model."""
    with open(os.path.join(directory, "model.txt")) as f:
        model_names, trees = parse_model(f.read(), "model.txt")
    with open(os.path.join(directory, "features.csv"), newline="") as f:
        rows = list(csv.reader(f))
    if rows[0][:-1] != model_names or (names and model_names != names):
        sys.exit("fixture: feature names differ from the model's or the C library's")
    worst = max(abs(score(trees, [float(v) for v in r[:-1]]) - float(r[-1])) for r in rows[1:])
    print("fixture: %d rows, max |Python score − expected| %.3g" % (len(rows) - 1, worst))
    if worst > 1e-12:
        sys.exit("fixture check failed")


def write_fixture(directory, problems, names, args):
    """A small model, a spread of rows and LightGBM's scores of them."""
    import numpy as np
    params = lgb_params(args)
    params.update(num_iterations=6, num_leaves=6)
    booster = train(problems, names, names, params)
    text = export(booster, names, names, ["Test fixture: scripts/train_rank_model.py "
                                          "--write-fixture (a small model, not for use)"])
    rows = [row for p in problems for row in p.x][::37]
    want = booster.predict(np.array(rows), raw_score=True)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "model.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(directory, "features.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(names + ["score"])
        for r, s in zip(rows, want):
            w.writerow(["%r" % v for v in r] + ["%r" % float(s)])
    check_fixture(directory, names)


def add_lightgbm_args(ap):
    """The model's settings, shared with scripts/train_sp_predictor.py."""
    ap.add_argument("--trees", type=int, default=60)
    ap.add_argument("--leaves", type=int, default=12)
    ap.add_argument("--learning-rate", type=float, default=0.1)
    ap.add_argument("--min-leaf", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)


def parse_lightgbm_args(ap):
    args = ap.parse_args()
    if not 2 <= args.leaves <= 64:
        ap.error("--leaves: 2 to 64 (rank_model.h: a tree has at most 64 leaves)")
    return args


def write_model(path, text):
    with open(path, "w") as f:
        f.write(text)
    print("wrote %s" % path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="*", help="tuning-log CSVs")
    ap.add_argument("--out", help="write the model here (rank_model.h's format)")
    ap.add_argument("--features-tool", default=os.path.join(REPO, "build", "tests",
                                                            "spf_rank_features"),
                    help="spf_rank_features, for logs without f_* columns")
    ap.add_argument("--features", choices=("all", "paper"), default="all",
                    help="train on every feature, or LO-SpMM Table 1's only")
    add_lightgbm_args(ap)
    ap.add_argument("--folds", type=int, default=0,
                    help="cross-validation folds of problems (0: one problem per fold)")
    ap.add_argument("--no-cv", action="store_true", help="skip the cross-validation")
    ap.add_argument("--check", action="store_true",
                    help="score every row from the exported text and compare with LightGBM")
    ap.add_argument("--note", help="what the logs are, for the model file's header")
    ap.add_argument("--write-fixture", metavar="DIR")
    ap.add_argument("--selftest", action="store_true",
                    help="fixture scores, an export check on the logs (default: "
                         "bench/results/tuning), the committed model's feature names")
    args = parse_lightgbm_args(ap)

    need_lightgbm()
    if args.selftest and not args.logs:
        tuning = os.path.join(REPO, "bench", "results", "tuning")
        args.logs = sorted(os.path.join(tuning, f) for f in os.listdir(tuning)
                           if f.endswith(".csv"))
    if not args.logs:
        ap.error("no tuning logs")
    names, problems = read_logs(args.logs, args.features_tool)
    print("%d problems, %d ok rows, %d features, from %d logs"
          % (len(problems), sum(len(p.times) for p in problems), len(names), len(args.logs)))
    use = names if args.features == "all" else PAPER_FEATURES
    params = lgb_params(args)

    if args.selftest:
        check_fixture(os.path.join(REPO, "tests", "fixtures", "rank"), names)
        small = dict(params, num_iterations=8)
        booster = train(problems, names, use, small)
        check_export(booster, export(booster, names, use, []), problems, names, use)
        with open(os.path.join(REPO, "models", "rank_model.txt")) as f:
            committed, _ = parse_model(f.read(), "models/rank_model.txt")
        if committed != names:
            sys.exit("models/rank_model.txt: its features are not the C library's")
        print("selftest: 3 passed, 0 failed")
        return
    if args.write_fixture:
        write_fixture(args.write_fixture, problems, names, args)
        return

    summary = []
    if not args.no_cv:
        t0 = time.time()
        folds = args.folds or len(problems)
        losses = cross_validate(problems, names, use, params, folds)
        rand = {p.name: random_losses(p) for p in problems}
        summary = ["leave-problems-out cross-validation, %d folds, %s features:"
                   % (folds, args.features)]
        summary += summarize("model", losses) + summarize("random", rand)
        print("\n".join(summary) + "\n(%.1f s)" % (time.time() - t0))
    if args.out or args.check:
        t0 = time.time()
        booster = train(problems, names, use, params)
        comments = [
            "The rank model of LO-SpMM §3.5 (src/plan/rank_model.h has the format).",
            "Written by scripts/train_rank_model.py from %s." % log_folders(args.logs),
            "Trained on %d problems (%d ok rows), %s features%s"
            % (len(problems), sum(len(p.times) for p in problems), args.features,
               ": " + args.note if args.note else "."),
            "LightGBM %s lambdarank: %d trees, %d leaves, learning rate %g, min %d rows a leaf."
            % (__import__("lightgbm").__version__, args.trees, args.leaves,
               args.learning_rate, args.min_leaf),
        ]
        comments = [w for c in comments for w in textwrap.wrap(c, 96, subsequent_indent="  ")]
        comments += summary
        text = export(booster, names, use, comments)
        print("trained in %.1f s: %d trees, %d nodes" % (
            time.time() - t0, text.count("\ntree "), len(re.findall(r"^\d+ (?:leaf|split)",
                                                                    text, re.M))))
        if args.check:
            check_export(booster, text, problems, names, use)
        if args.out:
            write_model(args.out, text)


if __name__ == "__main__":
    main()
