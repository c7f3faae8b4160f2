"""ctypes declarations of include/spforge.h: the library loader, mirrors of
the public structs (same field order and C types as the header) and the
argtypes / restype of every function the binding calls."""

import ctypes
import ctypes.util
import os

c_int, c_int32, c_int64, c_uint64 = ctypes.c_int, ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64
c_double, c_char_p, c_void_p = ctypes.c_double, ctypes.c_char_p, ctypes.c_void_p
# C enums are int-sized on every ABI spforge builds for (gcc, clang, MSVC).
c_enum = ctypes.c_int


class ReadOptions(ctypes.Structure):
    _fields_ = [("format", c_enum), ("duplicates", c_enum), ("seed", c_uint64),
                ("values_path", c_char_p), ("npy_sparsity", c_double), ("max_bytes", c_int64)]


class GenOptions(ctypes.Structure):
    _fields_ = [("kind", c_enum), ("rows", c_int64), ("cols", c_int64), ("sparsity", c_double),
                ("seed", c_uint64), ("vector_length", c_int32), ("n", c_int32), ("m", c_int32),
                ("rmat_a", c_double), ("rmat_b", c_double), ("rmat_c", c_double)]


class MatrixStats(ctypes.Structure):
    _fields_ = [("rows", c_int64), ("cols", c_int64), ("nnz", c_int64), ("density", c_double),
                ("row_nnz_min", c_int64), ("row_nnz_max", c_int64),
                ("row_nnz_mean", c_double), ("row_nnz_cv", c_double),
                ("empty_rows", c_int64), ("empty_cols", c_int64), ("bandwidth", c_int64),
                ("pattern_hash", c_uint64), ("values_hash", c_uint64)]


class DeviceInfo(ctypes.Structure):
    _fields_ = [("available", c_int), ("device", c_int), ("name", ctypes.c_char * 256),
                ("cc_major", c_int), ("cc_minor", c_int), ("sm_count", c_int),
                ("max_threads_per_sm", c_int), ("max_shared_per_block_optin", c_int),
                ("l2_bytes", c_int), ("total_memory", c_int64), ("driver_version", c_int),
                ("runtime_version", c_int), ("reason", ctypes.c_char * 256)]


class KernelConfig(ctypes.Structure):
    _fields_ = [("m1", c_int32), ("n1", c_int32), ("v", c_int32), ("prefetch", c_int32),
                ("ksplit", c_int32)]


class Progress(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("stage", c_enum), ("phase", c_enum),
                ("depth", c_int), ("done", c_int64), ("total", c_int64),
                ("elapsed_s", c_double), ("stage_s", c_double), ("status", c_enum),
                ("text", c_char_p)]


# spf_progress_fn: int (*)(const spf_progress *event, void *user)
ProgressFn = ctypes.CFUNCTYPE(c_int, ctypes.POINTER(Progress), c_void_p)

# spf_log_fn: void (*)(spf_log_level level, const char *message, void *user)
LogFn = ctypes.CFUNCTYPE(None, c_enum, c_char_p, c_void_p)


class PlanOptions(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("strategy", c_enum), ("dtype", c_enum),
                ("math", c_enum), ("b_layout", c_enum), ("c_layout", c_enum), ("dense", c_int),
                ("bias", c_int), ("relu", c_int), ("device", c_int), ("verify", c_int),
                ("exhaustive", c_int), ("tune_space", c_enum),
                ("config", ctypes.POINTER(KernelConfig)), ("host_threads", c_int),
                ("reorder", c_int), ("search", c_int), ("search_top_k", c_int),
                ("search_proxies", c_int), ("cache", c_int),
                ("progress", ProgressFn), ("progress_user", c_void_p),
                ("timing", c_enum)]


class SearchInfo(ctypes.Structure):
    _fields_ = [("space", c_int), ("after_register", c_int), ("after_utilization", c_int),
                ("after_balance", c_int), ("after_rank", c_int), ("evaluated", c_int),
                ("analysis_s", c_double), ("reorder_s", c_double), ("rank_s", c_double),
                ("proxy_build_s", c_double), ("proxy_compile_s", c_double),
                ("proxy_run_s", c_double), ("final_compile_s", c_double),
                ("selfcheck_s", c_double), ("total_s", c_double)]


MAX_CANDIDATES = 8  # SPF_MAX_CANDIDATES


class Candidate(ctypes.Structure):
    _fields_ = [("strategy", c_enum), ("outcome", c_enum), ("estimate_us", c_double),
                ("kernel_us", c_double), ("detail", ctypes.c_char * 160)]


class PlanInfo(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("strategy", c_enum), ("dtype", c_enum),
                ("math", c_enum), ("b_layout", c_enum), ("c_layout", c_enum),
                ("config", ctypes.c_char * 64), ("kernel_name", ctypes.c_char * 128),
                ("registers", c_int), ("code_bytes", c_int64), ("configs_tried", c_int),
                ("generate_s", c_double), ("compile_s", c_double), ("link_s", c_double),
                ("load_s", c_double), ("tune_s", c_double), ("verify_s", c_double),
                ("kernel_us", c_double), ("verify_error", c_double),
                ("search", SearchInfo), ("from_cache", c_int), ("device_bytes", c_int64),
                ("plan_s", c_double), ("candidate_count", c_int),
                ("candidates", Candidate * MAX_CANDIDATES), ("assembler", ctypes.c_char * 16)]


class MatrixName(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("rows", c_int64), ("cols", c_int64),
                ("nnz", c_int64), ("hash", ctypes.c_uint64 * 2)]


class ConvDesc(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("batch", c_int64), ("channels", c_int64),
                ("height", c_int64), ("width", c_int64), ("kernel_h", c_int64),
                ("kernel_w", c_int64), ("stride", c_int64), ("padding", c_int64),
                ("layout", c_enum), ("residual", c_int)]


class ConvInfo(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("path", c_enum), ("out_h", c_int64),
                ("out_w", c_int64), ("spmm_n", c_int64), ("launches", c_int),
                ("workspace_bytes", c_int64), ("host", c_int), ("im2col_us", c_double),
                ("implicit_us", c_double), ("spmm", PlanInfo), ("dense_us", c_double)]


class DistLayoutInfo(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("ranks", c_int), ("rank", c_int), ("row0", c_int64),
                ("rows", c_int64), ("b_row0", c_int64), ("b_rows", c_int64),
                ("own_nnz", c_int64), ("remote_nnz", c_int64), ("recv_rows", c_int64),
                ("send_rows", c_int64)]


_P = ctypes.POINTER
# name: (restype, argtypes); spf_status results are declared c_int.
_SIGNATURES = {
    "spf_status_string": (c_char_p, [c_int]),
    "spf_last_error": (c_char_p, []),
    "spf_version": (c_char_p, []),
    "spf_set_log_callback": (None, [LogFn, c_void_p]),
    # Array arguments as addresses (ints), which _convert.Operand.ptr gives.
    "spf_matrix_create_csr": (c_int, [c_int64, c_int64, c_int64, c_void_p, c_void_p, c_void_p,
                                      c_uint64, _P(c_void_p)]),
    "spf_matrix_create_coo": (c_int, [c_int64, c_int64, c_int64, c_void_p, c_void_p, c_void_p,
                                      c_enum, c_uint64, _P(c_void_p)]),
    "spf_matrix_to_coo": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p]),
    "spf_matrix_clone": (c_int, [c_void_p, _P(c_void_p)]),
    "spf_matrix_free": (None, [c_void_p]),
    "spf_matrix_rows": (c_int64, [c_void_p]),
    "spf_matrix_cols": (c_int64, [c_void_p]),
    "spf_matrix_nnz": (c_int64, [c_void_p]),
    "spf_matrix_row_ptr": (_P(c_int64), [c_void_p]),
    "spf_matrix_col_idx": (_P(c_int32), [c_void_p]),
    "spf_matrix_values": (_P(ctypes.c_float), [c_void_p]),
    "spf_matrix_stats_compute": (c_int, [c_void_p, _P(MatrixStats)]),
    "spf_read_options_init": (None, [_P(ReadOptions)]),
    "spf_matrix_read": (c_int, [c_char_p, _P(ReadOptions), _P(c_void_p)]),
    "spf_matrix_write": (c_int, [c_void_p, c_char_p, c_enum]),
    "spf_gen_options_init": (None, [_P(GenOptions)]),
    "spf_matrix_generate": (c_int, [_P(GenOptions), _P(c_void_p)]),
    "spf_reference_spmm": (c_int, [c_void_p, c_int64, c_void_p, c_void_p, c_void_p, c_int,
                                   c_enum, c_int]),
    "spf_reference_spmm_f64": (c_int, [c_void_p, c_int64, c_void_p, c_void_p, c_void_p, c_int,
                                       c_int]),
    "spf_relative_error": (c_double, [c_void_p, c_void_p, c_int64]),
    "spf_device_query": (c_int, [c_int, _P(DeviceInfo)]),
    "spf_plan_options_init": (None, [_P(PlanOptions)]),
    "spf_plan_create": (c_int, [c_void_p, c_int64, _P(PlanOptions), _P(c_void_p)]),
    "spf_plan_execute": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    "spf_plan_get_info": (c_int, [c_void_p, _P(PlanInfo)]),
    "spf_plan_cache_peek": (c_int, [c_void_p, c_int64, _P(PlanOptions), _P(PlanInfo),
                                    _P(c_int)]),
    "spf_plan_cache_peek_named": (c_int, [_P(MatrixName), c_int64, _P(PlanOptions),
                                          _P(PlanInfo), _P(c_int)]),
    "spf_plan_cache_note": (c_int, [c_void_p, _P(MatrixName), c_int64, _P(PlanOptions),
                                    _P(c_int)]),
    "spf_plan_free": (None, [c_void_p]),
    "spf_conv_desc_init": (None, [_P(ConvDesc)]),
    "spf_conv_plan_create": (c_int, [c_void_p, _P(ConvDesc), _P(PlanOptions), _P(c_void_p)]),
    "spf_conv_plan_execute": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p,
                                      c_void_p]),
    "spf_conv_plan_get_info": (c_int, [c_void_p, _P(ConvInfo)]),
    "spf_conv_plan_free": (None, [c_void_p]),
    "spf_conv_path_name": (c_char_p, [c_enum]),
    "spf_strategy_name": (c_char_p, [c_enum]),
    "spf_strategy_from_name": (c_int, [c_char_p, _P(c_enum)]),
    "spf_dtype_name": (c_char_p, [c_enum]),
    "spf_dtype_from_name": (c_int, [c_char_p, _P(c_enum)]),
    "spf_math_name": (c_char_p, [c_enum]),
    "spf_math_from_name": (c_int, [c_char_p, _P(c_enum)]),
    "spf_layout_name": (c_char_p, [c_enum]),
    "spf_layout_from_name": (c_int, [c_char_p, _P(c_enum)]),
    "spf_candidate_outcome_name": (c_char_p, [c_enum]),
    "spf_stage_name": (c_char_p, [c_enum]),
    "spf_partition_rows": (c_int, [c_void_p, c_int, _P(c_int64)]),
    "spf_dist_layout_create": (c_int, [c_void_p, c_int, c_int, _P(c_int64), _P(c_int64),
                                       _P(c_void_p)]),
    "spf_dist_layout_get_info": (c_int, [c_void_p, _P(DistLayoutInfo)]),
    "spf_dist_layout_own": (c_void_p, [c_void_p]),
    "spf_dist_layout_remote": (c_void_p, [c_void_p]),
    "spf_dist_layout_lists": (c_int, [c_void_p, _P(c_int64), _P(c_int64), _P(c_int32)]),
    "spf_dist_layout_free": (None, [c_void_p]),
    "spf_dist_plan_create": (c_int, [c_void_p, c_int64, c_void_p, _P(c_int64), _P(c_int64),
                                     _P(PlanOptions), _P(c_void_p)]),
    "spf_dist_plan_execute": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]),
    "spf_dist_plan_get_info": (c_int, [c_void_p, _P(DistLayoutInfo)]),
    "spf_dist_plan_free": (None, [c_void_p]),
}


def _candidates():
    """Where the library is looked for, in order: beside this file (the
    installed package: pip install . puts libspforge.so there), $SPF_LIB,
    build/libspforge.so of the repository this file lies in, then
    ctypes.util.find_library("spforge")."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, "libspforge.so")]
    env = os.environ.get("SPF_LIB")
    if env:
        return found + [env]
    repo = os.path.dirname(os.path.dirname(here))
    found.append(os.path.join(repo, "build", "libspforge.so"))
    system = ctypes.util.find_library("spforge")
    if system:
        found.append(system)
    return found


_lib = None
path = None  # the file the library was loaded from, once loaded


def _wheel_cusparselt():
    """libcusparseLt from NVIDIA's wheel (nvidia-cusparselt-cu12 / -cu13,
    a dependency of torch's CUDA wheels) in this interpreter's site
    folders, or None. The library dlopens cuSPARSELt by its soname, which
    finds no wheel; $SPF_CUSPARSELT names the file instead."""
    import glob
    import site
    folders = list(getattr(site, "getsitepackages", lambda: [])())
    folders.append(getattr(site, "getusersitepackages", lambda: "")())
    for folder in folders:
        for pattern in ("nvidia/cusparselt/lib/libcusparseLt.so*",
                        "nvidia/cu*/lib/libcusparseLt.so*"):
            found = sorted(glob.glob(os.path.join(folder, pattern)))
            if found:
                return found[0]
    return None


def lib():
    """The loaded library with every signature declared (loaded once).
    Raises OSError naming every place looked at if none loads."""
    global _lib, path
    if _lib is not None:
        return _lib
    if "SPF_CUSPARSELT" not in os.environ:  # before the library's first plan loads it
        wheel = _wheel_cusparselt()
        if wheel:
            os.environ["SPF_CUSPARSELT"] = wheel
    tried = []
    for path_ in _candidates():
        if os.path.sep in path_ and not os.path.exists(path_):
            tried.append(path_ + " (missing)")
            continue
        try:
            handle = ctypes.CDLL(path_)
        except OSError as e:
            tried.append("%s (%s)" % (path_, e))
            continue
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(handle, name)
            fn.restype, fn.argtypes = restype, argtypes
        _lib, path = handle, path_
        return _lib
    raise OSError("spforge: cannot load libspforge (pip install the package, set SPF_LIB to its "
                  "path, or build it into build/); tried: "
                  + "; ".join(tried or ["find_library('spforge'): not found"]))
