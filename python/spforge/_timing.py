"""The GPU's time per call of a torch callable (src/gpu/timing.c's graph
mode): warm-up calls on a side stream (outside the capture, where cuDNN's
benchmark mode picks its algorithm), then R calls captured in a CUDA graph
once, the per-call median over rounds of its replays (CUDA events), the
first replay (the graph's upload) left out. A loop of eager calls would
time the host's cost per call instead (10-40 µs through torch), which
hides kernels of a few µs. Used by SparseConv2d's choice between its plan
and torch's conv, and by scripts/bench_conv.py."""

import statistics

import torch


def graph_time_us(fn, rounds=7, repeats=None, target_us=500.0):
    """µs per call of fn on the GPU. repeats: the calls in the graph; None
    picks them so that a replay lasts about target_us (at most 2000)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)

    def captured(count):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(count):
                fn()
        return g

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def replay_us(g):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3

    if repeats is None:
        once = max(replay_us(captured(1)), 1.0)
        repeats = max(1, min(2000, int(target_us / once)))
    graph = captured(repeats)
    replay_us(graph)
    times = [replay_us(graph) / repeats for _ in range(rounds)]
    del graph
    return statistics.median(times)
