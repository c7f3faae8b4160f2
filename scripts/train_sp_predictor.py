#!/usr/bin/env python3
"""Train the structured strategy's predictor (src/strategy/structured/sp_predict.h).

STuning-DL (paper 001 §IV) tunes template kernels by a predictor trained on
tuning logs: the strategy times only the predictor's first few configurations
of the tuning space. This trains the two models issue 13 names and compares
them on problems left out of the training, then exports the ranking model the
library embeds:

    python3 -m venv .venv-rank && .venv-rank/bin/pip install -r scripts/requirements-rank.txt
    .venv-rank/bin/pip install scikit-learn     # only for the decision tree's comparison
    .venv-rank/bin/python scripts/train_sp_predictor.py \\
        bench/results/structured/predictor/sweeps-*.txt --out models/sp_predictor.txt

then rebuild: the library embeds models/sp_predictor.txt at build time.

The logs are spf_sp_sweep's output (tests/tools/sp_sweep.c): one "log," line
per configuration and problem (M, K, pattern, N, dtype, layout, config, µs).
A problem is (M, K, pattern, N, dtype, layout); configurations that did not
run (µs 0) are left out. The features are computed by the C code itself
(spf_sp_features, built in the build folder's tests/), so that the trainer
and the library cannot disagree on them.

The models:
  - LambdaMART (LightGBM's lambdarank, scripts/train_rank_model.py's training
    and export): one score per (problem, configuration) from all
    sp_feature_names; the strategy times the best-scored few.
  - The decision tree of paper 001 §IV: a classifier from the problem's
    features (m, k, n, v, group) to a configuration, trained on the classes
    left by §IV-D's normalisation (Algorithm 1: each problem's best within
    --threshold of its fastest, the most popular first); its top K are the K
    likeliest classes the problem's tuning space holds.
Both are scored by leave-problems-out cross-validation (problem i in fold
i mod --folds): for K = 1, 3, 5, 8, the loss of the fastest of the K against
the problem's fastest.
"""

import argparse
import collections
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_rank_model as trm  # noqa: E402

PROBLEM_FEATURES = ["m", "k", "n", "v", "group"]


def read_sweeps(paths, tool):
    """Problems (train_rank_model.Problem) from spf_sp_sweep outputs."""
    rows = collections.OrderedDict()
    for path in paths:
        with open(path) as f:
            for line_no, line in enumerate(f, 1):
                if not line.startswith("log,"):
                    continue
                parts = line.strip().split(",")
                if len(parts) != 9:
                    sys.exit("%s:%d: expected log,M,K,PATTERN,N,DTYPE,LAYOUT,CONFIG,US"
                             % (path, line_no))
                _, m, k, pattern, n, dtype, layout, config, us = parts
                if float(us) <= 0:
                    continue
                key = (int(m), int(k), pattern, int(n), dtype, layout)
                rows.setdefault(key, []).append((config, float(us)))
    lines = ["%d %d %s %d %s\n" % (key[0], key[1], key[2], key[3], c)
             for key, runs in rows.items() for c, _ in runs]
    names, x = trm.tool_features(tool, [], lines)
    problems, i = [], 0
    for key, runs in rows.items():
        p = trm.Problem("%dx%d %s N=%d %s %s" % key)
        for config, us in runs:
            p.x.append(x[i])
            p.times.append(us)
            p.configs.append(config)
            i += 1
        problems.append(p)
    return names, problems


def normalised_classes(problems, threshold):
    """Paper 001 Algorithm 1: a class (configuration) for each problem."""
    good = {p.name: {c for c, t in zip(p.configs, p.times) if min(p.times) / t >= threshold}
            for p in problems}
    left, label = {p.name for p in problems}, {}
    while left:
        popular = collections.Counter(c for name in left for c in good[name])
        config = min(popular, key=lambda c: (-popular[c], c))
        for name in [n for n in left if config in good[n]]:
            label[name] = config
            left.discard(name)
    return label


def tree_losses(problems, names, folds, threshold, leaf):
    """Leave-problems-out losses of the §IV decision tree; None without scikit-learn."""
    try:
        from sklearn.tree import DecisionTreeClassifier
    except ImportError:
        return None
    cols = [names.index(f) for f in PROBLEM_FEATURES]
    losses = {}
    for f in range(folds):
        held = [p for i, p in enumerate(problems) if i % folds == f]
        kept = [p for i, p in enumerate(problems) if i % folds != f]
        label = normalised_classes(kept, threshold)
        tree = DecisionTreeClassifier(min_samples_leaf=leaf, random_state=0)
        tree.fit([[p.x[0][c] for c in cols] for p in kept], [label[p.name] for p in kept])
        for p in held:
            proba = tree.predict_proba([[p.x[0][c] for c in cols]])[0]
            ranked = [tree.classes_[i] for i in sorted(range(len(proba)),
                                                         key=lambda i: (-proba[i], i))]
            # the classes this problem's space holds, likeliest first; then the rest of its
            # space in log order (the tree gives them no order)
            order = [p.configs.index(c) for c in ranked if c in p.configs]
            order += [i for i in range(len(p.configs)) if i not in order]
            scores = [0.0] * len(p.configs)
            for rank, i in enumerate(order):
                scores[i] = -rank
            losses[p.name] = trm.topk_losses(p, scores)
    return losses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+", help="spf_sp_sweep outputs")
    ap.add_argument("--out", help="write the LambdaMART model here (rank_model.h's format)")
    ap.add_argument("--features-tool", default=os.path.join(trm.REPO, "build", "tests",
                                                            "spf_sp_features"))
    trm.add_lightgbm_args(ap)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--threshold", type=float, default=0.98,
                    help="Algorithm 1's share of the fastest a class may give up")
    ap.add_argument("--tree-leaf", type=int, default=2,
                    help="the decision tree's least problems a leaf")
    ap.add_argument("--note", help="what the logs are, for the model file's header")
    ap.add_argument("--reproduces", metavar="MODEL",
                    help="exit 1 unless the model trained here is MODEL's text (the ctest: "
                         "the committed model comes from the committed logs)")
    args = trm.parse_lightgbm_args(ap)
    trm.need_lightgbm()

    names, problems = read_sweeps(args.logs, args.features_tool)
    rows = sum(len(p.times) for p in problems)
    print("%d problems, %d timed configurations, %d features" % (len(problems), rows, len(names)))
    folds = min(args.folds, len(problems))
    params = trm.lgb_params(args)
    ranked = trm.summarize("LambdaMART", trm.cross_validate(problems, names, names, params,
                                                            folds))
    tree = tree_losses(problems, names, folds, args.threshold, args.tree_leaf)
    report = ranked + (trm.summarize("tree §IV", tree) if tree else [
        "tree §IV: not run (scikit-learn is not installed)"])
    report += trm.summarize("random", {p.name: trm.random_losses(p) for p in problems})
    print("leave-problems-out, %d folds (loss of the fastest of the top K):" % folds)
    print("\n".join(report))
    if args.out or args.reproduces:
        booster = trm.train(problems, names, names, params)
        comments = ["The structured strategy's predictor (src/strategy/structured/sp_predict.h),",
                    "LambdaMART trained by scripts/train_sp_predictor.py on %d problems, %d rows."
                    % (len(problems), rows)]
        if args.note:
            comments.append(args.note)
        comments += ["Cross-validation (%d folds):" % folds] + ranked
        text = trm.export(booster, names, names, comments)
        trm.check_export(booster, text, problems, names, names)
        if args.reproduces:
            with open(args.reproduces) as f:
                if f.read() != text:
                    sys.exit("%s is not the model these logs train" % args.reproduces)
            print("%s: reproduced from the logs" % args.reproduces)
        if args.out:
            trm.write_model(args.out, text)


if __name__ == "__main__":
    main()
