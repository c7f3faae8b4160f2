"""spforge.distributed (issue 15): C = A·B over the ranks of a
torch.distributed process group, one process per GPU, each rank running
ordinary spforge plans on its share (docs/distributed.md).

    import torch.distributed as dist
    import spforge.distributed as sd
    dist.init_process_group("nccl")            # one process per GPU
    spmm = sd.DistSpMM(a, n=128)               # every rank passes the whole A
    c_mine = spmm(b_mine)                      # its rows of B in, its rows of C out

A's rows are split over the ranks, balanced by work (spf_partition_rows);
rank r computes C's rows spmm.rows (a range). B is held
  - split by rows (b_split="rows", the default; a square A, a graph: rank
    r holds B's rows of its own part, its vertices' features; "even": B's
    K rows split evenly, any shape): each rank receives the rows of B its
    part's columns name from the ranks holding them, in one all_to_all,
    while it multiplies the part of A on its own rows (A_own); then the
    received rows (A_remote) are added in;
  - whole by every rank (b_split="replicated"): no exchange;
  - split by rows within layers (replicas=c, the 1.5-D algorithm): the P
    ranks form c layers of P/c consecutive ranks, layer L computing a
    contiguous block of A's rows with a whole copy of B split over its
    ranks, the exchange inside the layer only. c = 1 is the split above,
    c = P replication; each rank holds c/P of B and receives less as c
    grows;
  - by the sizes (b_split="auto"): the most replication whose share of B
    fits the memory budget (b_budget bytes a rank; default half the
    device's free memory). On 2 GPUs the 52.8 M-edge R-MAT graph ran 1.95x
    faster replicated and 0.93x split (bench/results/dist/), so where B
    fits, it is replicated.
Every rank works the same split out from the whole A, so only B's rows
are exchanged.

engine="nccl" (B split by rows, one layer, the nccl backend) runs the C
API's distributed plan (spf_dist_plan_*) over the group's own NCCL
communicator instead of torch's all_to_all: spforge packs and exchanges
the rows on a stream of its own at the device's highest priority. On the gloo backend with CUDA tensors the exchange goes
through host memory (gloo exchanges host tensors): several ranks can then
share one GPU, as the tests do; with nccl it stays on the GPUs.

For the exchange to overlap the product on NCCL, give the group's NCCL
stream high priority (else NCCL's kernels wait behind a product that
fills every SM, and the two run one after the other):

    options = dist.ProcessGroupNCCL.Options()
    options.is_high_priority_stream = True
    dist.init_process_group("nccl", pg_options=options)

Needs torch >= 2.4 and an initialised process group."""

import ctypes

import torch
import torch.distributed as dist

from . import Matrix, Plan, _Handle, _capi, _check, _plan_options
from ._capi import lib

_SPLITS = ("rows", "even", "replicated")


def partition_rows(matrix, parts):
    """The balanced split of matrix's rows into `parts` (spf_partition_rows):
    a list of parts + 1 row starts."""
    matrix = matrix if isinstance(matrix, Matrix) else Matrix(matrix)
    out = (ctypes.c_int64 * (parts + 1))()
    with matrix._use() as ptr:
        _check(lib().spf_partition_rows(ptr, int(parts), out))
    return list(out)


def _clone(ptr):
    """A Matrix of its own from a borrowed spf_matrix pointer."""
    return Matrix._create(lib().spf_matrix_clone, ptr)


def _row_slice(matrix, row0, rows):
    """Rows row0 .. row0 + rows - 1 of matrix, all its columns."""
    import numpy
    row_ptr, col_idx, values = (numpy.frombuffer(x, dtype=x.typecode) for x in matrix.csr())
    lo, hi = int(row_ptr[row0]), int(row_ptr[row0 + rows])
    return Matrix.from_csr(rows, matrix.shape[1], row_ptr[row0:row0 + rows + 1] - lo,
                           numpy.ascontiguousarray(col_idx[lo:hi]),
                           numpy.ascontiguousarray(values[lo:hi]))


class DistSpMM:
    """This rank's part of C = A·B over a process group (see the module).

    DistSpMM(matrix, n, group=None, *, b_split="rows", replicas=1,
    b_budget=None, device=None, dtype="f32", plan_options=None,
    engine="torch"): matrix is
    the whole A (a Matrix or what Matrix() takes), the same on every rank;
    n: B's columns; replicas: copies of B over the group (a divisor of its
    size; with "rows" or "even"); b_budget: "auto"'s bytes of B a rank may
    hold; device: "cpu" (CPU plans, float32) or a cuda device (default:
    the current one where CUDA is there); plan_options: Plan's keyword
    arguments (strategy, verify, cache, ...); engine: "torch" or "nccl"
    (the module says when).

    Attributes: rank, ranks, replicas, rows (range of C's rows this rank
    computes), b_rows (range of B's rows it holds; all of them when
    replicated), recv_rows and send_rows (rows of B it receives and sends a
    call)."""

    def __init__(self, matrix, n, group=None, *, b_split="rows", replicas=1, b_budget=None,
                 device=None, dtype="f32", plan_options=None, engine="torch"):
        if b_split not in _SPLITS + ("auto",):
            raise ValueError("b_split %r: expected one of %s" % (b_split,
                                                                 ", ".join(_SPLITS + ("auto",))))
        if not dist.is_initialized():
            raise RuntimeError("spforge.distributed: no torch.distributed process group "
                               "(dist.init_process_group first)")
        self.group = group
        self.rank, self.ranks = dist.get_rank(group), dist.get_world_size(group)
        matrix = matrix if isinstance(matrix, Matrix) else Matrix(matrix)
        m, k = matrix.shape
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device()) \
                if torch.cuda.is_available() else torch.device("cpu")
        self.device = torch.device(device)
        self.n = int(n)
        if b_split == "auto":
            b_split, replicas = self._by_size(m, k, dtype, b_budget)
        replicas = int(replicas)
        if replicas < 1 or self.ranks % replicas != 0:
            raise ValueError("replicas %d: expected a divisor of the group's %d ranks"
                             % (replicas, self.ranks))
        if b_split == "replicated":
            replicas = self.ranks
        if b_split == "rows" and m != k and replicas < self.ranks:
            raise ValueError("b_split \"rows\" splits B as A's rows, which needs a square A; "
                             "A is %d×%d (b_split=\"even\" splits B's %d rows evenly)" % (m, k, k))
        self.b_split, self.replicas = b_split, replicas
        options = dict(plan_options or {})
        if self.device.type == "cpu":
            options.update(strategy="cpu")
        else:
            options.setdefault("device", self.device.index or 0)
        options["dtype"] = dtype
        row_start = partition_rows(matrix, self.ranks)
        r = self.rank
        self.rows = range(row_start[r], row_start[r + 1])
        self._own = self._remote = self._plan = None
        if engine not in ("torch", "nccl"):
            raise ValueError("engine %r: expected \"torch\" or \"nccl\"" % (engine,))
        if engine == "nccl":
            self._nccl_plan(matrix, row_start, replicas, options)
            return
        if replicas == self.ranks:  # B whole here: no exchange
            self.b_split = "replicated" if b_split == "auto" else b_split
            self.b_rows, self.recv_rows, self.send_rows = range(k), 0, 0
            self._own = Plan(_row_slice(matrix, row_start[r], len(self.rows)), self.n, **options)
            return
        # the layers: q consecutive ranks each, B split over a layer's ranks
        q = self.ranks // replicas
        layer, me = divmod(r, q)
        self._layer_group = self._layer_groups(q, replicas)[layer]
        b_start = partition_rows(matrix, q) if b_split == "rows" else [k * i // q
                                                                      for i in range(q + 1)]
        self.b_rows = range(b_start[me], b_start[me + 1])
        # the layer's block of A's rows, its ranks' parts numbered within it
        top, bottom = row_start[layer * q], row_start[(layer + 1) * q]
        block = matrix if replicas == 1 else _row_slice(matrix, top, bottom - top)
        parts = [x - top for x in row_start[layer * q:(layer + 1) * q + 1]]
        starts = (ctypes.c_int64 * (q + 1))
        layout = ctypes.c_void_p()
        with block._use() as ptr:
            _check(lib().spf_dist_layout_create(ptr, q, me, starts(*parts), starts(*b_start),
                                                ctypes.byref(layout)))
        try:
            info = _capi.DistLayoutInfo()
            info.size = ctypes.sizeof(info)
            _check(lib().spf_dist_layout_get_info(layout, ctypes.byref(info)))
            self.recv_rows, self.send_rows = info.recv_rows, info.send_rows
            recv = (ctypes.c_int64 * q)()
            send = (ctypes.c_int64 * q)()
            index = (ctypes.c_int32 * max(info.send_rows, 1))()
            _check(lib().spf_dist_layout_lists(layout, recv, send, index))
            self._recv_counts, self._send_counts = list(recv), list(send)
            self._send_index = torch.tensor(list(index)[:info.send_rows], dtype=torch.int64,
                                            device=self.device)
            self._own = Plan(_clone(lib().spf_dist_layout_own(layout)), self.n, **options)
            remote = lib().spf_dist_layout_remote(layout)
            if remote:
                self._remote = Plan(_clone(remote), self.n, **options)
        finally:
            lib().spf_dist_layout_free(layout)

    def _nccl_plan(self, matrix, row_start, replicas, options):
        """engine="nccl": rank r's spf_dist_plan over the group's NCCL
        communicator, B split as A's rows (square A) or evenly."""
        if replicas != 1 or self.b_split not in ("rows", "even") or self.device.type != "cuda":
            raise ValueError("engine \"nccl\" takes B split by rows or evenly in one layer, on "
                             "a cuda device")
        if dist.get_backend(self.group) != "nccl":
            raise ValueError("engine \"nccl\" needs the nccl backend, not %s"
                             % dist.get_backend(self.group))
        m, k = matrix.shape
        b_start = row_start if self.b_split == "rows" else [k * i // self.ranks
                                                            for i in range(self.ranks + 1)]
        self.b_rows = range(b_start[self.rank], b_start[self.rank + 1])
        group = self.group or dist.group.WORLD
        dist.barrier(group=group)  # the communicator exists once a collective has run
        backend = group._get_backend(self.device)
        # the communicator's address: _comm_ptr() in torch 2.x (the device's
        # 2.x has no comm_ptr, which the 2-GPU run of 5bb9712 found)
        comm_ptr = getattr(backend, "_comm_ptr", None) or getattr(backend, "comm_ptr", None)
        if comm_ptr is None:
            raise RuntimeError("engine \"nccl\": this torch's ProcessGroupNCCL does not give "
                               "its communicator (no _comm_ptr); use engine=\"torch\"")
        comm = comm_ptr()
        starts = (ctypes.c_int64 * (self.ranks + 1))
        out = ctypes.c_void_p()
        settings = _plan_options(**options)
        with matrix._use() as ptr:
            _check(lib().spf_dist_plan_create(ptr, self.n, ctypes.c_void_p(comm),
                                              starts(*row_start), starts(*b_start),
                                              ctypes.byref(settings), ctypes.byref(out)))
        # freed when the last copy of this object is collected (a copy shares it)
        self._plan = _Handle(out, lib().spf_dist_plan_free, "distributed plan")
        info = _capi.DistLayoutInfo()
        info.size = ctypes.sizeof(info)
        with self._plan as plan:
            _check(lib().spf_dist_plan_get_info(plan, ctypes.byref(info)))
        self.recv_rows, self.send_rows = info.recv_rows, info.send_rows
        self._dtype = {"f32": torch.float32, "f16": torch.float16,
                       "bf16": torch.bfloat16}[options["dtype"]]

    def _by_size(self, m, k, dtype, budget):
        """b_split="auto": (split, replicas), the most copies of B whose
        share fits `budget` bytes a rank (B split as A's rows where A is
        square, else evenly)."""
        elem = 4 if dtype == "f32" else 2
        if budget is None:
            budget = (torch.cuda.mem_get_info(self.device)[0] // 2
                      if self.device.type == "cuda" else float("inf"))
        for copies in sorted((c for c in range(1, self.ranks + 1) if self.ranks % c == 0),
                             reverse=True):
            share = -(-k // (self.ranks // copies))  # the largest shard's rows, about
            if share * self.n * elem <= budget:
                if copies == self.ranks:
                    return "replicated", copies
                break
        return ("rows" if m == k else "even"), copies

    def _layer_groups(self, q, layers):
        """Each layer's process group (ranks L·q .. L·q + q − 1 of the
        group); every rank makes every one, as torch.distributed requires.
        The whole group when there is one layer."""
        if layers == 1:
            return [self.group]
        ranks = (dist.get_process_group_ranks(self.group) if self.group is not None
                 else list(range(self.ranks)))
        return [dist.new_group(ranks[L * q:(L + 1) * q]) for L in range(layers)]

    def _exchange(self, b):
        """The rows of B the others need from b sent, those this rank needs
        received: (the receive tensor, the pending work)."""
        send = b.index_select(0, self._send_index)
        recv = torch.empty((self.recv_rows, self.n), dtype=b.dtype, device=b.device)
        host = b.is_cuda and dist.get_backend(self._layer_group) == "gloo"
        if host:  # gloo exchanges host tensors
            send, recv = send.cpu(), recv.cpu()
        work = dist.all_to_all_single(recv, send, output_split_sizes=self._recv_counts,
                                      input_split_sizes=self._send_counts,
                                      group=self._layer_group, async_op=not host)
        return recv, work

    def __call__(self, b):
        """This rank's rows of C (len(rows) × n), from its rows of B
        (len(b_rows) × n; all of B when replicated), a tensor on the
        layer's device of the plans' dtype. Every rank of the group must
        call it (the exchange is collective)."""
        want = (len(self.b_rows), self.n)
        if tuple(b.shape) != want:
            raise ValueError("spforge.distributed: B's rows of rank %d: expected shape %s, got %s"
                             % (self.rank, want, tuple(b.shape)))
        b = b.contiguous()
        if self._plan is not None:  # engine "nccl"
            if b.dtype != self._dtype or b.device != self.device:
                raise ValueError("spforge.distributed: B's rows of rank %d: expected %s on %s, "
                                 "got %s on %s" % (self.rank, self._dtype, self.device, b.dtype,
                                                   b.device))
            c = torch.empty((len(self.rows), self.n), dtype=b.dtype, device=b.device)
            with self._plan as plan:
                _check(lib().spf_dist_plan_execute(plan, b.data_ptr(), c.data_ptr(), None,
                                                   torch.cuda.current_stream(b.device).cuda_stream))
            return c
        if self.replicas == self.ranks:
            return self._own(b)
        recv, work = self._exchange(b)  # every rank takes part, receiving or not
        c = self._own(b)  # while the rows arrive
        if work is not None:
            work.wait()
        if self._remote is not None:
            c += self._remote(recv.to(b.device))
        return c
