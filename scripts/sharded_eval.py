#!/usr/bin/env python3
"""The search evaluation and its tuning logs over the GPUs of a host
(issue 15 item 2): scripts/search-eval.sh's problems shared out to one
process per GPU, each taking the next problem when it is free (the
problems' times differ by 100x, so a fixed split would leave GPUs idle),
their outputs merged into one folder exactly as one sequential run writes
it, and the rank model retrained on the merged logs if asked.

    python3 scripts/sharded_eval.py BUILD OUT LIST --gpus 0,1 [--budget 3600] \\
        [--threads-per-gpu T] [--retrain models/rank_model.txt]

Each GPU's process runs search-eval.sh on a one-problem list with
CUDA_VISIBLE_DEVICES set to that GPU, into OUT/gpu<i>/; then OUT gets
search.jsonl and search-noproxy.jsonl with their lines in LIST's order,
and the per-problem files (oracle/, searchlog/, log/, inputs/), as
search-eval.sh would have written them, so scripts/search_report.py reads
it unchanged. OUT/sharded.json records which GPU ran each problem and how
long it took, and the wall time. --retrain runs scripts/train_rank_model.py
on OUT/oracle/*.csv (every configuration's timing: tuning logs) and writes
the model there.

The tuning compiles every configuration with the host's cores (ptxas),
and the GPUs' processes share them: --threads-per-gpu gives each process
that many compile threads (default 0: all cores each). On a host of G GPUs
and C cores, C / G is each GPU's share, what a one-GPU machine of the same
kind has.

SPF_SEARCH_EVAL names another runner with search-eval.sh's arguments (the
tests use a stand-in)."""

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MERGED_LINES = ("search.jsonl", "search-noproxy.jsonl")
PER_PROBLEM = ("oracle", "searchlog", "log", "inputs")


def read_list(path):
    """LIST's problem lines (NAME FILE N SPACE), comments and blanks left out."""
    problems = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) != 4:
                raise ValueError("%s:%d: expected NAME FILE N SPACE, got %r"
                                 % (path, number, line.rstrip("\n")))
            problems.append(fields)
    names = [p[0] for p in problems]
    if len(set(names)) != len(names):
        raise ValueError("%s: a problem name is listed twice" % path)
    return problems


def run_shards(build, out, problems, gpus, budget_s, runner, compile_threads=0):
    """Every problem run once by the first free GPU; (name, gpu, seconds,
    exit status) of each, in the order they finished."""
    todo = queue.Queue()
    for p in problems:
        todo.put(p)
    done, lock, start = [], threading.Lock(), time.monotonic()

    def worker(gpu):
        folder = os.path.join(out, "gpu%s" % gpu)
        os.makedirs(folder, exist_ok=True)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu), SPF_TUNE_THREADS=str(compile_threads))
        while True:
            try:
                problem = todo.get_nowait()
            except queue.Empty:
                return
            left = int(budget_s - (time.monotonic() - start))
            if left <= 0:
                with lock:
                    done.append((problem[0], gpu, 0.0, None))
                continue
            one = os.path.join(folder, "list-%s.txt" % problem[0])
            with open(one, "w") as f:
                f.write(" ".join(problem) + "\n")
            t0 = time.monotonic()
            rc = subprocess.call(["bash", runner, build, folder, one, str(left)], env=env)
            with lock:
                done.append((problem[0], gpu, time.monotonic() - t0, rc))

    threads = [threading.Thread(target=worker, args=(g,)) for g in gpus]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done


def merge(out, problems, gpus):
    """The GPUs' folders into out, as one sequential run writes it."""
    order = {p[0]: i for i, p in enumerate(problems)}
    for name in MERGED_LINES:
        lines = []
        for g in gpus:
            path = os.path.join(out, "gpu%s" % g, name)
            if os.path.exists(path):
                with open(path) as f:
                    lines += [line for line in f if line.strip()]
        lines.sort(key=lambda line: order.get(json.loads(line).get("name"), len(order)))
        with open(os.path.join(out, name), "w") as f:
            f.writelines(lines)
    for sub in PER_PROBLEM:
        os.makedirs(os.path.join(out, sub), exist_ok=True)
        for g in gpus:
            src = os.path.join(out, "gpu%s" % g, sub)
            for entry in sorted(os.listdir(src)) if os.path.isdir(src) else []:
                shutil.copy2(os.path.join(src, entry), os.path.join(out, sub, entry))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", help="the build folder (its spforge)")
    ap.add_argument("out", help="the output folder, as search-eval.sh's")
    ap.add_argument("list", help="the problem list, as search-eval.sh's")
    ap.add_argument("--gpus", default="0", help="GPU indices, comma-separated (default 0)")
    ap.add_argument("--budget", type=int, default=3600, help="seconds for the whole run")
    ap.add_argument("--threads-per-gpu", type=int, default=0,
                    help="compile threads of each GPU's process (default 0: all cores)")
    ap.add_argument("--retrain", metavar="MODEL",
                    help="train the rank model on the merged oracle logs, write it here")
    a = ap.parse_args(argv)
    gpus = [g.strip() for g in a.gpus.split(",") if g.strip()]
    if not gpus or len(set(gpus)) != len(gpus) or not all(g.isdigit() for g in gpus):
        ap.error("--gpus %r: expected distinct GPU indices, comma-separated" % a.gpus)
    try:
        problems = read_list(a.list)
    except (OSError, ValueError) as e:
        sys.exit("sharded_eval: %s" % e)
    runner = os.environ.get("SPF_SEARCH_EVAL", os.path.join(HERE, "search-eval.sh"))
    os.makedirs(a.out, exist_ok=True)
    t0 = time.monotonic()
    if a.threads_per_gpu < 0:
        ap.error("--threads-per-gpu %d: expected 0 (all cores) or more" % a.threads_per_gpu)
    done = run_shards(a.build, a.out, problems, gpus, a.budget, runner, a.threads_per_gpu)
    wall = time.monotonic() - t0
    merge(a.out, problems, gpus)
    failed = sorted(name for name, _, _, rc in done if rc != 0)
    with open(os.path.join(a.out, "sharded.json"), "w") as f:
        json.dump({"gpus": gpus, "threads_per_gpu": a.threads_per_gpu, "wall_s": round(wall, 3),
                   "problems": [{"name": n, "gpu": g, "seconds": round(s, 3),
                                 "status": "not run (budget)" if rc is None else rc}
                                for n, g, s, rc in done]}, f, indent=1)
    busy = sum(s for _, _, s, _ in done)
    print("sharded_eval: %d problems on %d GPUs in %.1f s (%.1f s of runs: %.2fx)%s"
          % (len(problems), len(gpus), wall, busy, busy / wall if wall > 0 else 0,
             "; failed or not run: " + " ".join(failed) if failed else ""))
    if a.retrain:
        logs = sorted(os.path.join(a.out, "oracle", f)
                      for f in os.listdir(os.path.join(a.out, "oracle")) if f.endswith(".csv"))
        if not logs:
            sys.exit("sharded_eval: --retrain: no oracle logs in %s/oracle" % a.out)
        rc = subprocess.call([sys.executable, os.path.join(HERE, "train_rank_model.py")] + logs +
                             ["--out", a.retrain])
        if rc != 0:
            sys.exit("sharded_eval: train_rank_model.py failed (%d)" % rc)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
