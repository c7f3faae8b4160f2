"""scripts/dist_model.py (issue 15's cost model) on a hand-made partition:
each step's time as the model's formulas give it, worked out here by hand
for a two-rank split (one rank's exchange crossing hosts), the overlap of
the exchange with the product on the rank's own rows, one GPU as the
baseline, the table and CSV of main(), and a partition without N refused.
Needs neither the library nor a GPU."""

import csv
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import dist_model  # noqa: E402

# row_cost 0: the work is the nonzeros alone (one_us and total_work are
# what model() derives: the one-GPU product's 20 µs over 1000 nonzeros)
PARAMS = {"gflops": 1.0, "link_gbs": 1.0, "host_link_gbs": 0.5, "latency_us": 2.0,
          "launch_us": 1.0, "hbm_gbs": 10.0, "row_cost": 0.0, "one_us": 20.0,
          "total_work": 1000.0}


def partition():
    """1000 nonzeros over 100 rows, N = 10 f32, split over two ranks."""
    parts = [{"row0": 0, "rows": 40, "b_row0": 0, "b_rows": 40, "own_nnz": 300,
              "remote_nnz": 200, "recv_rows": 30, "recv_rows_other_hosts": 10,
              "send_rows": 20, "recv_peers": 1},
             {"row0": 40, "rows": 60, "b_row0": 40, "b_rows": 60, "own_nnz": 450,
              "remote_nnz": 50, "recv_rows": 20, "recv_rows_other_hosts": 20,
              "send_rows": 30, "recv_peers": 1}]
    return {"path": "hand", "rows": 100, "cols": 100, "nnz": 1000, "n": 10, "dtype": "f32",
            "splits": [{"ranks": 2, "largest_work": 560, "mean_work": 550.0,
                        "recv_rows_max": 30, "parts": parts}]}


class ModelTests(unittest.TestCase):
    def test_rank_steps_by_hand(self):
        p = partition()
        t = dist_model.rank_times(p["splits"][0]["parts"][0], 10, 4, PARAMS)
        # 1 GFLOP/s = 1000 flop per µs; 1 GB/s = 1000 bytes per µs
        self.assertAlmostEqual(t["own"], 2 * 300 * 10 / 1000 + 1)        # 7
        self.assertAlmostEqual(t["remote"], 2 * 200 * 10 / 1000 + 1)     # 5
        self.assertAlmostEqual(t["comm"], 2 + max(20 * 40 / 1000, 10 * 40 / 500))  # 2.8
        self.assertAlmostEqual(t["pack"], 20 * 40 * 2 / 10000 + 1)       # 1.16
        self.assertAlmostEqual(t["add"], 40 * 40 * 3 / 10000 + 1)        # 1.48
        # the exchange (pack 1.16 + comm 2.8) hides under the own product (7)
        self.assertAlmostEqual(t["sharded"], 7 + 5 + 1.48)
        self.assertAlmostEqual(t["replicated"], 2 * 500 * 10 / 1000 + 1)

    def test_overlap_slowdown(self):
        # a free overlap is max(own, chain); slowed s times while the product
        # runs, the exchange has done own/s of its work when the product ends
        self.assertAlmostEqual(dist_model.exchange_end(7.0, 3.96, 1.0), 7.0)
        self.assertAlmostEqual(dist_model.exchange_end(7.0, 9.0, 1.0), 9.0)
        self.assertAlmostEqual(dist_model.exchange_end(7.0, 3.0, 2.0), 7.0)  # 6 hides under 7
        self.assertAlmostEqual(dist_model.exchange_end(7.0, 5.0, 2.0), 7.0 + 5.0 - 3.5)
        part = partition()["splits"][0]["parts"][0]
        # pack 1.16 + comm 2.8 = 3.96: 1.5 times as long (5.94) beside the 7 µs
        # product is still hidden; twice (7.92) is not: 7 + 3.96 - 7 / 2
        t = dist_model.rank_times(part, 10, 4, dict(PARAMS, overlap_slowdown=1.5))
        self.assertAlmostEqual(t["sharded"], 7 + 5 + 1.48)
        t = dist_model.rank_times(part, 10, 4, dict(PARAMS, overlap_slowdown=2.0))
        self.assertAlmostEqual(t["sharded"], 7.46 + 5 + 1.48)
        slow = dict(PARAMS, host_link_gbs=0.01, overlap_slowdown=2.0)
        t = dist_model.rank_times(part, 10, 4, slow)
        chain = t["pack"] + t["comm"]
        self.assertAlmostEqual(t["sharded"], 7 + chain - 3.5 + 5 + 1.48)
        with self.assertRaises(SystemExit):
            dist_model.main([os.devnull, "--gflops", "1", "--overlap-slowdown", "0.5"])

    def test_rows_cost_work(self):
        # a row as 4 nonzeros: the one-GPU 20 µs spread over 1000 + 4·100
        p = dict(PARAMS, row_cost=4.0, total_work=1400.0)
        t = dist_model.rank_times(partition()["splits"][0]["parts"][0], 10, 4, p)
        self.assertAlmostEqual(t["own"], (300 + 4 * 40) * 20 / 1400 + 1)
        self.assertAlmostEqual(t["remote"], 200 * 20 / 1400 + 1)
        self.assertAlmostEqual(t["replicated"], (500 + 4 * 40) * 20 / 1400 + 1)

    def test_exchange_longer_than_the_own_product(self):
        slow = dict(PARAMS, host_link_gbs=0.01)
        t = dist_model.rank_times(partition()["splits"][0]["parts"][1], 10, 4, slow)
        self.assertAlmostEqual(t["comm"], 2 + 20 * 40 / 10)  # 82, all from the other host
        self.assertAlmostEqual(t["sharded"], t["pack"] + t["comm"] + t["remote"] + t["add"])

    def test_model_and_main(self):
        one, rows = dist_model.model(partition(), dict(PARAMS, row_cost=0.0))
        self.assertAlmostEqual(one, 2 * 1000 * 10 / 1000 + 1)
        (r,) = rows
        slowest = max(dist_model.rank_times(x, 10, 4, PARAMS)["sharded"]
                      for x in partition()["splits"][0]["parts"])
        self.assertAlmostEqual(r["sharded_us"], slowest)
        self.assertAlmostEqual(r["speedup_sharded"], one / slowest)
        self.assertAlmostEqual(r["imbalance"], 560 / 550)
        with tempfile.TemporaryDirectory() as tmp:
            path, out = os.path.join(tmp, "part.json"), os.path.join(tmp, "model.csv")
            with open(path, "w") as f:
                json.dump(partition(), f)
            self.assertEqual(dist_model.main([path, "--gflops", "1", "--csv", out]), 0)
            with open(out) as f:
                (row,) = list(csv.DictReader(f))
            self.assertEqual(row["ranks"], "2")
            bad = partition()
            bad["n"] = 0
            with open(path, "w") as f:
                json.dump(bad, f)
            with self.assertRaises(SystemExit):
                dist_model.main([path, "--gflops", "1"])
            with self.assertRaises(SystemExit):
                dist_model.main([path, "--gflops", "0"])


if __name__ == "__main__":
    result = unittest.TextTestRunner(verbosity=2).run(
        unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__]))
    sys.exit(0 if result.wasSuccessful() else 1)
