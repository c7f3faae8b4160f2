"""The GPU's time per call of a torch callable, by src/gpu/timing.c's rule:
warm-up calls on a side stream (outside the capture, where cuDNN's benchmark
mode picks its algorithm), then R calls captured in a CUDA graph once, the
per-call median over rounds of its replays (CUDA events), the first replay
(the graph's upload) left out. A loop of eager calls would time the host's
cost per call instead (10-40 µs through torch), which hides kernels of a few
µs. Weights cold by default: every call follows a read of twice the L2, and
that read's own time, timed the same way, is subtracted, so that a choice
made here holds in a model whose layers stream their weights from HBM in
turn. Used by SparseConv2d's choice between its plan and torch's conv, and
by scripts/bench_conv.py."""

import statistics

import torch

_flushes = {}


def _flush_for(device):
    """A read of twice the L2 of device (the buffer made once per device)."""
    if device not in _flushes:
        l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 << 20
        buf = torch.zeros((2 * l2) // 4096, 1024, dtype=torch.float32, device=device)
        sink = torch.empty(1024, dtype=torch.float32, device=device)
        _flushes[device] = lambda: torch.sum(buf, dim=0, out=sink)
    return _flushes[device]


def _rounds_us(fn, rounds, repeats, target_us):
    """The sorted per-call times of rounds replays and the R used."""
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
    return times, repeats


def graph_time_us(fn, rounds=7, repeats=None, target_us=500.0, cold=True):
    """µs per call of fn on the GPU. repeats: the calls in the graph; None
    picks them so that a replay lasts about target_us (at most 2000; cold,
    at least 8). cold: each call after the L2 flush, its time subtracted."""
    if not cold:
        return statistics.median(_rounds_us(fn, rounds, repeats, target_us)[0])
    flush = _flush_for(torch.cuda.current_device())

    def flushed():
        flush()
        fn()

    if repeats is None:
        repeats = max(8, _rounds_us(flushed, 1, None, target_us)[1])
    times, _ = _rounds_us(flushed, rounds, repeats, target_us)
    base, _ = _rounds_us(flush, rounds, repeats, target_us)
    return max(statistics.median(times) - statistics.median(base), 0.01)
