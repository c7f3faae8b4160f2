/* Compile (in parallel: ptxas or in process, assembler.h) → link (driver
 * linker) → load (CUDA runtime library API) → launch. The measured split
 * on the H200 host (DESIGN.md):
 * 16 chunk units of 64 rows assemble in 0.6 s each side by side, and
 * linking them takes ~36 ms, against 16.9 s for one 1024-row function.
 * Measured here (tests/gpu/test_plan.c, H200, 16 host cores): DLMC
 * Transformer 512×512 at 0.9 (26 k nonzeros, N = 256, 5.6 MB of PTX in 9
 * units) generates in 0.07 s, assembles in 1.7 s, links in 2 ms and loads
 * in 2 ms. */
#define _POSIX_C_SOURCE 200809L

#include "gpu/jit.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "gpu/timing.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#ifdef SPF_HAVE_CUDA
#include "gpu/cuda_check.h"

#include <cudaTypedefs.h>
#include <pthread.h>
#endif

void jit_object_release(jit_object *o)
{
    if (!o)
        return;
    for (int i = 0; i < o->unit_count && o->units; i++)
        ptxas_result_clear(&o->units[i]);
    mem_free(o->units);
    mem_free(o->log);
    memset(o, 0, sizeof *o);
}

/* Fold the unit results of one program into its object. */
static spf_status gather(const ptx_program *p, ptxas_result *results, jit_object *o)
{
    o->units = mem_calloc((size_t)p->unit_count, sizeof *o->units);
    if (!o->units)
        return FAIL(SPF_ERR_OUT_OF_MEMORY, "%d unit results", p->unit_count);
    o->unit_count = p->unit_count;
    o->status = SPF_OK;
    for (int u = 0; u < p->unit_count; u++) {
        ptxas_result *r = &results[u];
        o->units[u] = *r; /* ownership of cubin and log moves to the object */
        memset(r, 0, sizeof *r);
        if (o->units[u].registers > o->registers)
            o->registers = o->units[u].registers;
        o->spill_bytes += o->units[u].spill_bytes;
        o->compile_s += o->units[u].seconds;
        if (o->units[u].status != SPF_OK && o->status == SPF_OK) {
            o->status = o->units[u].status;
            const char *why = o->units[u].log ? o->units[u].log : "(no output)";
            size_t cap = strlen(why) + sizeof p->entry + 32;
            o->log = mem_alloc(cap);
            if (!o->log)
                return FAIL(SPF_ERR_OUT_OF_MEMORY, "a compile log");
            snprintf(o->log, cap, "unit %d of %s: %s", u, p->entry, why);
        }
    }
    return SPF_OK;
}

spf_status jit_compile(const ptx_program *const *programs, int count, int sm, int threads,
                       jit_object *out)
{
    spf_status status = SPF_OK;
    const ptx_unit **units = NULL;
    unsigned *caps = NULL;
    ptxas_result *results = NULL;
    int total = 0, compiling = 0;
    memset(out, 0, (size_t)count * sizeof *out);

    assembler_choice assembler;
    TRY(assembler_choose(&assembler));
    if (assembler.kind == JIT_ASSEMBLER_DRIVER) {
        if (!assembler.forced)
            log_msg(SPF_LOG_WARN, "jit: no in-process PTX compiler and no ptxas found ($SPF_PTXAS, "
                                  "$CUDA_HOME/bin, /usr/local/cuda/bin, PATH); the driver will "
                                  "compile %d program(s) from PTX, serially",
                    count);
        for (int i = 0; i < count; i++)
            out[i] = (jit_object){.status = SPF_OK, .assembler = JIT_ASSEMBLER_DRIVER};
        return SPF_OK;
    }
    for (int i = 0; i < count; i++) {
        if (programs[i]->unit_count < 1 || total > INT_MAX - programs[i]->unit_count)
            return FAIL(SPF_ERR_INTERNAL, "program %d has %d units", i, programs[i]->unit_count);
        total += programs[i]->unit_count;
    }
    units = mem_calloc((size_t)total, sizeof *units);
    caps = mem_calloc((size_t)total, sizeof *caps);
    results = mem_calloc((size_t)total, sizeof *results);
    if (!units || !caps || !results)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "%d compile units", total);
    for (int i = 0, k = 0; i < count; i++)
        for (int u = 0; u < programs[i]->unit_count; u++, k++) {
            units[k] = &programs[i]->units[u];
            caps[k] = programs[i]->max_registers;
        }

    /* The units are the stage's (the assembler reports them from the
     * calling thread: core/parallel.h, parallel_for_progress). */
    if (count == 1)
        TRY(progress_begin(SPF_STAGE_COMPILE, total, "%s", programs[0]->entry));
    else if (count > 1)
        TRY(progress_begin(SPF_STAGE_COMPILE, total, "%d programs", count));
    compiling = count > 0;
    TRY(assembler_compile(&assembler, units, caps, total, sm, threads, results));
    for (int i = 0, k = 0; i < count; k += programs[i]->unit_count, i++) {
        TRY(gather(programs[i], results + k, &out[i]));
        out[i].assembler = assembler.kind;
    }
fail:
    if (compiling)
        status = progress_end(SPF_STAGE_COMPILE, status);
    if (status != SPF_OK)
        for (int i = 0; i < count; i++)
            jit_object_release(&out[i]);
    for (int k = 0; results && k < total; k++)
        ptxas_result_clear(&results[k]);
    mem_free(results);
    mem_free(caps);
    mem_free(units);
    return status;
}

#ifdef SPF_HAVE_CUDA

/* Driver entry points, fetched once through the runtime. */
typedef struct driver_api {
    PFN_cuLinkCreate_v6050 link_create;
    PFN_cuLinkAddData_v6050 link_add_data;
    PFN_cuLinkComplete_v5050 link_complete;
    PFN_cuLinkDestroy_v5050 link_destroy;
    PFN_cuGetErrorString_v6000 error_string;
    spf_status status;
    char detail[256];
} driver_api;

static driver_api driver;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static int entry_point(const char *symbol, void **fn)
{
    enum cudaDriverEntryPointQueryResult found;
    cudaError_t err = cudaGetDriverEntryPointByVersion(symbol, fn, 12000, cudaEnableDefault, &found);
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess || !*fn) {
        (void)cudaGetLastError();
        snprintf(driver.detail, sizeof driver.detail, "driver entry point %s not found (%s)", symbol,
                 cudaGetErrorString(err));
        return 0;
    }
    return 1;
}

static void driver_load(void)
{
    driver.status = SPF_ERR_NO_DEVICE;
    if (entry_point("cuLinkCreate", (void **)&driver.link_create) &&
        entry_point("cuLinkAddData", (void **)&driver.link_add_data) &&
        entry_point("cuLinkComplete", (void **)&driver.link_complete) &&
        entry_point("cuLinkDestroy", (void **)&driver.link_destroy) &&
        entry_point("cuGetErrorString", (void **)&driver.error_string))
        driver.status = SPF_OK;
}

static spf_status driver_get(void)
{
    pthread_once(&driver_once, driver_load);
    if (driver.status != SPF_OK)
        return FAIL(driver.status, "%s", driver.detail);
    return SPF_OK;
}

enum { LINK_LOG_CAP = 8192 };

/* A driver linker call's result: on failure the statement, the driver's
 * error name and the linker's error log (STYLE.md 7: the JIT log goes into
 * the detail). */
static spf_status link_check(CUresult res, const char *stmt, const char *log)
{
    if (res == CUDA_SUCCESS)
        return SPF_OK;
    const char *name = NULL;
    if (driver.error_string(res, &name) != CUDA_SUCCESS || !name)
        name = "unknown driver error";
    return FAIL(SPF_ERR_COMPILE, "%s: %s (%d); linker log: %s", stmt, name, (int)res,
                log[0] ? log : "(empty)");
}

#define LINK_CHECK(call) TRY(link_check((call), #call, error_log))

/* Link p's units (cubins, or the PTX with DRIVER) and load the image
 * before cuLinkDestroy frees it (the module keeps a copy). */
static spf_status link_and_load(const ptx_program *p, const jit_object *o, jit_module *out,
                                jit_timings *t)
{
    spf_status status = SPF_OK;
    CUlinkState state = NULL;
    char error_log[LINK_LOG_CAP] = "";
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {error_log, (void *)(uintptr_t)sizeof error_log};

    double t0 = timing_now_s();
    LINK_CHECK(driver.link_create(2, opts, values, &state));
    for (int u = 0; u < p->unit_count; u++) {
        char name[32];
        snprintf(name, sizeof name, "unit%d", u);
        if (o->assembler == JIT_ASSEMBLER_DRIVER)
            LINK_CHECK(driver.link_add_data(state, CU_JIT_INPUT_PTX, p->units[u].text,
                                            p->units[u].size + 1, name, 0, NULL, NULL));
        else
            LINK_CHECK(driver.link_add_data(state, CU_JIT_INPUT_CUBIN, o->units[u].cubin,
                                            o->units[u].cubin_size, name, 0, NULL, NULL));
    }
    void *image = NULL;
    size_t image_size = 0;
    LINK_CHECK(driver.link_complete(state, &image, &image_size));
    t->link_s = timing_now_s() - t0;
    TRY(jit_module_load_image(image, image_size, p->entry, p->grid, p->block, p->shared_bytes,
                              out, &t->load_s));
fail:
    if (state)
        driver.link_destroy(state);
    return status;
}

spf_status jit_link_load(const ptx_program *p, const jit_object *o, jit_module *out, jit_timings *t)
{
    spf_status status = SPF_OK;
    memset(out, 0, sizeof *out);
    jit_timings local = {0};
    if (o->status != SPF_OK)
        return FAIL(o->status, "%s", o->log ? o->log : "compile failed");
    if (o->assembler != JIT_ASSEMBLER_DRIVER && o->unit_count != p->unit_count)
        return FAIL(SPF_ERR_INTERNAL, "%d objects for %d units", o->unit_count, p->unit_count);
    TRY(driver_get());
    TRY(link_and_load(p, o, out, t ? t : &local));
fail:
    return status;
}

spf_status jit_module_load_image(const void *image, size_t image_size, const char *entry,
                                 const unsigned grid[3], const unsigned block[3],
                                 unsigned shared_bytes, jit_module *out, double *load_s)
{
    spf_status status = SPF_OK;
    cudaLibrary_t lib = NULL;
    unsigned char *copy = NULL;
    memset(out, 0, sizeof *out);
    CHECK_ARG(image != NULL && image_size > 0 && entry != NULL && entry[0]);
    CHECK_ARG(grid != NULL && block != NULL);
    /* A cached entry's geometry is checksummed, not trusted: a zero extent
     * would only fail at the first launch, far from its cause. */
    if (!grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] || !block[2] ||
        shared_bytes > INT_MAX)
        return FAIL(SPF_ERR_INVALID_ARGUMENT,
                    "%s: grid %u×%u×%u, block %u×%u×%u, %u bytes of shared memory", entry, grid[0],
                    grid[1], grid[2], block[0], block[1], block[2], shared_bytes);

    double t0 = timing_now_s();
    copy = mem_alloc(image_size);
    if (!copy)
        FAIL_GOTO(SPF_ERR_OUT_OF_MEMORY, "a kernel image of %zu bytes", image_size);
    memcpy(copy, image, image_size);
    TRY(CUDA_CHECK(cudaLibraryLoadData(&lib, copy, NULL, NULL, 0, NULL, NULL, 0)));
    cudaKernel_t kernel;
    TRY(CUDA_CHECK(cudaLibraryGetKernel(&kernel, lib, entry)));
    int device;
    TRY(CUDA_CHECK(cudaGetDevice(&device)));
    if (shared_bytes > 48 * 1024)
        TRY(CUDA_CHECK(cudaKernelSetAttributeForDevice(
            kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared_bytes, device)));
    struct cudaFuncAttributes attr;
    TRY(CUDA_CHECK(cudaFuncGetAttributes(&attr, (const void *)kernel)));

    out->library = lib;
    out->kernel = kernel;
    memcpy(out->grid, grid, sizeof out->grid);
    memcpy(out->block, block, sizeof out->block);
    out->shared_bytes = shared_bytes;
    out->registers = attr.numRegs;
    out->local_bytes = (int)attr.localSizeBytes;
    out->image = copy;
    out->image_size = image_size;
    lib = NULL;
    copy = NULL;
    if (load_s)
        *load_s = timing_now_s() - t0;
fail:
    if (lib)
        (void)cudaLibraryUnload(lib);
    mem_free(copy);
    return status;
}

spf_status jit_launch(const jit_module *m, const void *b, void *c, const float *bias, void *stream)
{
    void *args[] = {(void *)&b, (void *)&c, (void *)&bias};
    dim3 grid = {m->grid[0], m->grid[1], m->grid[2]};
    dim3 block = {m->block[0], m->block[1], m->block[2]};
    return CUDA_CHECK(cudaLaunchKernel((const void *)m->kernel, grid, block, args, m->shared_bytes,
                                       (cudaStream_t)stream));
}

spf_status jit_launch_with(const jit_module *m, const unsigned grid[3], const unsigned block[3],
                           unsigned shared_bytes, void **params, void *stream)
{
    dim3 g = {grid[0], grid[1], grid[2]}, b = {block[0], block[1], block[2]};
    return CUDA_CHECK(cudaLaunchKernel((const void *)m->kernel, g, b, params, shared_bytes,
                                       (cudaStream_t)stream));
}

#else /* !SPF_HAVE_CUDA */

spf_status jit_link_load(const ptx_program *p, const jit_object *o, jit_module *out, jit_timings *t)
{
    (void)p, (void)o, (void)t;
    memset(out, 0, sizeof *out);
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

spf_status jit_launch(const jit_module *m, const void *b, void *c, const float *bias, void *stream)
{
    (void)m, (void)b, (void)c, (void)bias, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

spf_status jit_launch_with(const jit_module *m, const unsigned grid[3], const unsigned block[3],
                           unsigned shared_bytes, void **params, void *stream)
{
    (void)m, (void)grid, (void)block, (void)shared_bytes, (void)params, (void)stream;
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

spf_status jit_module_load_image(const void *image, size_t image_size, const char *entry,
                                 const unsigned grid[3], const unsigned block[3],
                                 unsigned shared_bytes, jit_module *out, double *load_s)
{
    (void)image, (void)image_size, (void)entry, (void)grid, (void)block, (void)shared_bytes;
    (void)load_s;
    memset(out, 0, sizeof *out);
    return FAIL(SPF_ERR_NO_DEVICE, "built without CUDA");
}

#endif

void jit_module_release(jit_module *m)
{
    if (!m)
        return;
#ifdef SPF_HAVE_CUDA
    if (m->library)
        (void)cudaLibraryUnload((cudaLibrary_t)m->library);
#endif
    mem_free(m->image);
    memset(m, 0, sizeof *m);
}

spf_status jit_build(const ptx_program *p, int sm, int threads, jit_module *out, jit_timings *t)
{
    jit_object o;
    jit_timings local = {0};
    if (!t)
        t = &local;
    double t0 = timing_now_s();
    spf_status status = jit_compile(&p, 1, sm, threads, &o);
    t->compile_s = timing_now_s() - t0;
    t->assembler = status == SPF_OK ? o.assembler : JIT_ASSEMBLER_NONE;
    if (status == SPF_OK)
        status = jit_link_load(p, &o, out, t);
    jit_object_release(&o);
    return status;
}
