"""scripts/sharded_eval.py (issue 15 item 2) with a stand-in for
search-eval.sh (SPF_SEARCH_EVAL): every problem runs once, on the GPU its
process holds (CUDA_VISIBLE_DEVICES), both GPUs take problems, the merged
folder holds the same files and lines, in the list's order, as a run on
one GPU, each run gets --threads-per-gpu (SPF_TUNE_THREADS), a failing
problem is reported (exit 1) and the others still run,
and bad arguments are refused. Needs neither the library nor a GPU."""

import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "sharded_eval.py")

# search-eval.sh's outputs for its one-problem list, deterministic but for
# the GPU it records in its log; problems named fail* exit 1
STAND_IN = r"""#!/usr/bin/env bash
set -eu
out=$2
read -r name file n space < "$3"
mkdir -p "$out/oracle" "$out/searchlog" "$out/log" "$out/inputs"
sleep 0.05
case "$name" in fail*) exit 1 ;; esac
printf '{"name":"%s","result":{"n":%s,"space":"%s"}}\n' "$name" "$n" "$space" >> "$out/search.jsonl"
printf '{"name":"%s","result":{"n":%s}}\n' "$name" "$n" >> "$out/search-noproxy.jsonl"
printf 'config,us\nm8n%s,1.5\n' "$n" > "$out/oracle/$name.csv"
printf 'config,proxy_us\nm8,1\n' > "$out/searchlog/$name.csv"
echo "gpu $CUDA_VISIBLE_DEVICES" > "$out/log/$name.err"
echo "threads ${SPF_TUNE_THREADS:-unset}" > "$out/log/$name.threads"
"""

LIST = """# a comment, then problems
a  gen:64x32:0.9  16  compact
b  gen:64x64:0.9  32  compact

c  gen:128x64:0.9 64  full
d  gen:64x32:0.9  8   compact
e  gen:32x32:0.9  4   compact
"""


class ShardedEvalTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.runner = os.path.join(self.dir, "stand-in.sh")
        with open(self.runner, "w") as f:
            f.write(STAND_IN)
        os.chmod(self.runner, os.stat(self.runner).st_mode | stat.S_IEXEC)
        self.list = os.path.join(self.dir, "list.txt")
        with open(self.list, "w") as f:
            f.write(LIST)

    def tearDown(self):
        self.tmp.cleanup()

    def run_eval(self, out, *args):
        env = dict(os.environ, SPF_SEARCH_EVAL=self.runner)
        return subprocess.run([sys.executable, SCRIPT, "build", os.path.join(self.dir, out),
                               self.list] + list(args), env=env, capture_output=True, text=True)

    def files(self, out):
        """(relative path, text) of the merged folder's outputs, GPU logs aside."""
        root, got = os.path.join(self.dir, out), {}
        for sub in ("", "oracle", "searchlog"):
            folder = os.path.join(root, sub)
            for name in sorted(os.listdir(folder)):
                path = os.path.join(folder, name)
                if os.path.isfile(path) and name != "sharded.json":
                    with open(path) as f:
                        got[os.path.join(sub, name)] = f.read()
        return got

    def test_two_gpus_write_what_one_writes(self):
        two = self.run_eval("two", "--gpus", "0,1")
        self.assertEqual(two.returncode, 0, two.stderr)
        one = self.run_eval("one", "--gpus", "0")
        self.assertEqual(one.returncode, 0, one.stderr)
        self.assertEqual(self.files("two"), self.files("one"))
        names = [json.loads(l)["name"] for l in self.files("two")["search.jsonl"].splitlines()]
        self.assertEqual(names, ["a", "b", "c", "d", "e"])  # the list's order
        with open(os.path.join(self.dir, "two", "sharded.json")) as f:
            record = json.load(f)
        self.assertEqual(sorted(p["name"] for p in record["problems"]), ["a", "b", "c", "d", "e"])
        self.assertEqual({p["gpu"] for p in record["problems"]}, {"0", "1"})
        for p in record["problems"]:  # each ran on the GPU its process held
            with open(os.path.join(self.dir, "two", "log", p["name"] + ".err")) as f:
                self.assertEqual(f.read().strip(), "gpu " + p["gpu"])
        self.assertIn("5 problems on 2 GPUs", two.stdout)

    def test_threads_per_gpu_reach_each_run(self):
        r = self.run_eval("out", "--gpus", "0,1", "--threads-per-gpu", "16")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = set()
        for gpu in ("gpu0", "gpu1"):
            folder = os.path.join(self.dir, "out", gpu, "log")
            got |= {open(os.path.join(folder, n)).read().strip() for n in os.listdir(folder)
                    if n.endswith(".threads")}
        self.assertEqual(got, {"threads 16"})
        with open(os.path.join(self.dir, "out", "sharded.json")) as f:
            self.assertEqual(json.load(f)["threads_per_gpu"], 16)
        r = self.run_eval("bad", "--threads-per-gpu", "-1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--threads-per-gpu -1", r.stderr)

    def test_a_failing_problem_is_reported(self):
        with open(self.list, "a") as f:
            f.write("fail_me gen:8x8:0.5 2 compact\n")
        r = self.run_eval("out", "--gpus", "0,1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("failed or not run: fail_me", r.stdout)
        self.assertEqual(len(self.files("out")["search.jsonl"].splitlines()), 5)

    def test_bad_arguments(self):
        for gpus in ("0,0", "x", ","):
            r = self.run_eval("out", "--gpus", gpus)
            self.assertEqual(r.returncode, 2, gpus)
            self.assertIn("expected distinct GPU indices", r.stderr)
        with open(self.list, "a") as f:
            f.write("a gen:8x8:0.5 2 compact\n")
        r = self.run_eval("out")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("listed twice", r.stderr)
        with open(self.list, "w") as f:
            f.write("x gen:8x8:0.5\n")
        r = self.run_eval("out")
        self.assertIn("list.txt:1: expected NAME FILE N SPACE", r.stderr)


if __name__ == "__main__":
    result = unittest.TextTestRunner(verbosity=2).run(
        unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__]))
    sys.exit(0 if result.wasSuccessful() else 1)
