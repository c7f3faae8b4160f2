"""ResNet-50 inference end to end (issue 14 item 5): torchvision's resnet50
structure, random weights pruned by the DLMC magnitude-pruning patterns
(data/dlmc/rn50/magnitude_pruning/<sparsity>, mapped to the layers by
spforge.resnet50), the batch norms' statistics calibrated on random
images (so that activations neither vanish nor blow up through 53 pruned
layers and the outputs compare meaningfully); then, side by side:

  dense      torch as users run it: eval mode, channels_last, cuDNN with
             benchmark mode on (conv, batch norm, ReLU, add: one kernel each);
  folded     the same with each batch norm folded into its convolution
             (torch.fx.experimental.optimization.fuse): dense, with torch's
             own fusion, for the comparison of the convolutions alone;
  sparse     spforge.torch.sparsify_fused: the batch norms folded the same
             way, every convolution a SparseConv2d that also runs its ReLU
             and residual add; per layer and input shape, whichever of its
             spforge plan and torch's conv measured faster runs.

    python3 scripts/e2e_resnet50.py --data data --sparsity 0.9,0.8 --batch 1,8,32 \\
        --dtype f16,f32 --out e2e.csv --plot e2e.png

The fc layer stays dense. Plans are made with verify off (the model
output is compared with the dense one instead: the relative error of the
logits, ‖sparse − dense‖ / ‖dense‖); making them is not timed. Time: one
forward pass as the replay of a CUDA graph of it (the GPU's time), and
eager (bound by Python's per-layer cost at small batch): the median per
call over 7 rounds of back-to-back calls (src/gpu/timing.c's protocol)."""

import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
from spforge import resnet50  # noqa: E402
from bench_torch_semi import time_us  # noqa: E402


def build_resnet50(torch):
    """torchvision's resnet50 (random weights), or the same structure and
    module names built here where torchvision is not installed."""
    try:
        import torchvision
        return torchvision.models.resnet50(weights=None)
    except ImportError:
        pass
    nn = torch.nn

    class Bottleneck(nn.Module):
        def __init__(self, c_in, width, stride, downsample):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(c_in, width, 1, bias=False), nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, 4 * width, 1, bias=False)
            self.bn3, self.relu = nn.BatchNorm2d(4 * width), nn.ReLU(inplace=True)
            self.downsample = downsample

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return self.relu(y + (x if self.downsample is None else self.downsample(x)))

    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64)
            self.relu, self.maxpool = nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)
            c_in = 64
            for g, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512)), 1):
                stride = 1 if g == 1 else 2
                down = nn.Sequential(nn.Conv2d(c_in, 4 * width, 1, stride, bias=False),
                                     nn.BatchNorm2d(4 * width))
                layers = [Bottleneck(c_in, width, stride, down)]
                layers += [Bottleneck(4 * width, width, 1, None) for _ in range(1, blocks)]
                setattr(self, "layer%d" % g, nn.Sequential(*layers))
                c_in = 4 * width
            self.avgpool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(2048, 1000)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet50()


def apply_dlmc_masks(model, folder, torch):
    """Zero each convolution's weights outside its DLMC pattern (columns
    moved into torch's order); returns the layers' (nnz, size)."""
    modules = dict(model.named_modules())
    kept = total = 0
    for layer in resnet50.LAYERS:
        if layer.module == "fc":
            continue
        rows, cols, row_ptr, col_idx = resnet50.read_smtx(
            os.path.join(folder, layer.dlmc + ".smtx"))
        nnz = len(col_idx)
        perm = resnet50.torch_columns(layer)
        mask = torch.zeros(rows, cols)
        for i in range(rows):
            mask[i, [perm[j] for j in col_idx[row_ptr[i]:row_ptr[i + 1]]]] = 1
        conv = modules[layer.module]
        with torch.no_grad():
            conv.weight.mul_(mask.view_as(conv.weight).to(conv.weight))
        kept, total = kept + nnz, total + rows * cols
    return kept, total


def calibrate(model, torch, batch, dtype, rounds=4):
    """The batch norms' running statistics from random images (the
    cumulative average over rounds), then eval mode."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(rounds):
            model(torch.randn(batch, 3, 224, 224, device="cuda", dtype=dtype).contiguous(
                memory_format=torch.channels_last))
    return model.eval()


def graph_us(model, x, torch):
    """One forward pass captured in a CUDA graph (after the eager calls
    made every plan), its replay timed: the model's GPU time without
    Python's per-layer cost, which bounds eager inference at small batch."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        model(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        model(x)
    return time_us(graph.replay, torch)


def plot(rows, path):
    """Speed-up of the sparse model over dense torch (graph replays), a bar
    per batch, a group per sparsity and dtype."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = sorted({(r["sparsity"], r["dtype"]) for r in rows})
    batches = sorted({r["batch"] for r in rows})
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(batches)
    for i, b in enumerate(batches):
        ys = [next((r["graph_speedup"] for r in rows
                    if (r["sparsity"], r["dtype"], r["batch"]) == (g[0], g[1], b)), 0)
              for g in groups]
        ax.bar([j + i * width for j in range(len(groups))], ys, width, label="batch %d" % b)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks([j + width * (len(batches) - 1) / 2 for j in range(len(groups))])
    ax.set_xticklabels(["%s %s" % g for g in groups])
    ax.set_ylabel("speed-up over dense torch (CUDA graph)")
    ax.set_title("ResNet-50, DLMC magnitude pruning, %s" % rows[0]["device"])
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="data", help="the extracted data folder")
    ap.add_argument("--sparsity", default="0.9", help="DLMC sparsities, comma-separated")
    ap.add_argument("--batch", default="1,8,32", help="batch sizes, comma-separated")
    ap.add_argument("--dtype", default="f16", help="f16 and/or f32, comma-separated")
    ap.add_argument("--strategy", default="auto", help="the conv plans' strategy")
    ap.add_argument("--out", required=True, help="the CSV to write (a row per run)")
    ap.add_argument("--plot", help="a PNG of the speed-ups (needs matplotlib)")
    a = ap.parse_args()
    import torch
    import spforge.torch as st
    from torch.fx.experimental.optimization import fuse as fold_batchnorm
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    rows = []
    for sparsity in a.sparsity.split(","):
        folder = os.path.join(a.data, "dlmc", "rn50", "magnitude_pruning", sparsity)
        for dtype in a.dtype.split(","):
            dt = {"f16": torch.float16, "f32": torch.float32}[dtype]
            torch.manual_seed(0)
            dense = build_resnet50(torch)
            kept, total = apply_dlmc_masks(dense, folder, torch)
            dense = dense.to("cuda", dt).to(memory_format=torch.channels_last)
            dense = calibrate(dense, torch, 8, dt)
            folded = fold_batchnorm(dense)
            example = torch.randn(1, 3, 224, 224, device="cuda", dtype=dt).contiguous(
                memory_format=torch.channels_last)
            sparse, report = st.sparsify_fused(dense, example, None, min_size=0,
                                               exclude=("fc",),
                                               plan_options={"strategy": a.strategy,
                                                             "verify": False})
            for batch in (int(b) for b in a.batch.split(",")):
                x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=dt).contiguous(
                    memory_format=torch.channels_last)
                with torch.no_grad():
                    want = dense(x).double()
                    got = sparse(x).double()  # makes this shape's plans
                    times = {name: (time_us(lambda: m(x), torch), graph_us(m, x, torch))
                             for name, m in (("dense", dense), ("folded", folded),
                                             ("sparse", sparse))}
                err = float((got - want).norm() / want.norm())
                plans = [p for layer in report.swapped.values() for p in layer.plans()
                         if p["n"] == batch]
                row = {"sparsity": sparsity, "dtype": dtype, "batch": batch,
                       "conv_density": round(kept / total, 4),
                       "convs_swapped": len(report.swapped),
                       "relu_fused": len(report.fused), "residual_fused": len(report.residual),
                       "dense_us": round(times["dense"][0], 1),
                       "folded_us": round(times["folded"][0], 1),
                       "sparse_us": round(times["sparse"][0], 1),
                       "speedup": round(times["dense"][0] / times["sparse"][0], 3),
                       "dense_graph_us": round(times["dense"][1], 1),
                       "folded_graph_us": round(times["folded"][1], 1),
                       "sparse_graph_us": round(times["sparse"][1], 1),
                       "graph_speedup": round(times["dense"][1] / times["sparse"][1], 3),
                       "graph_speedup_vs_folded": round(times["folded"][1] / times["sparse"][1],
                                                        3),
                       "relative_error": "%.3g" % err,
                       "layers_run_by_spforge": sum(p["runs"] == "spforge" for p in plans),
                       "layers_run_by_torch": sum(p["runs"] == "torch" for p in plans),
                       "paths": " ".join(sorted({p["path"] for p in plans
                                                 if p["runs"] == "spforge"})),
                       "conv_sparse_us_sum": round(sum(p["kernel_us"] for p in plans), 1),
                       "conv_dense_us_sum": round(sum(p["dense_us"] for p in plans), 1),
                       "device": torch.cuda.get_device_name(),
                       "commit": os.environ.get("SPF_GIT_COMMIT", "")}
                rows.append(row)
                with open(a.out, "w", newline="") as f:
                    w = csv.DictWriter(f, fieldnames=list(row))
                    w.writeheader()
                    w.writerows(rows)
                print("sparsity %s %s batch %2d: CUDA graphs: dense %.1f us, folded %.1f us, "
                      "sparse %.1f us: %.2fx over dense, %.2fx over folded; eager %.1f / %.1f / "
                      "%.1f us (error %s; %d convs by spforge, %d by torch)"
                      % (sparsity, dtype, batch, row["dense_graph_us"], row["folded_graph_us"],
                         row["sparse_graph_us"], row["graph_speedup"],
                         row["graph_speedup_vs_folded"], row["dense_us"], row["folded_us"],
                         row["sparse_us"], row["relative_error"], row["layers_run_by_spforge"],
                         row["layers_run_by_torch"]), flush=True)
            for layer in report.swapped.values():
                layer.release_plans()
    if a.plot and rows:
        plot(rows, a.plot)


if __name__ == "__main__":
    main()
