/* Generated PTX for a spread of configurations, dtypes and both targets
 * assembles with ptxas in relocatable mode (-c) with zero spill bytes, the
 * units link with nvlink, and the registers read from the units' cubins
 * (ptxas_cubin_registers) are the linked kernel's. Prints config →
 * registers (from the link) and writes the table to
 * $SPF_BUILD_DIR/unrolled_registers.csv. Skips visibly when no ptxas is
 * installed. */
#define _POSIX_C_SOURCE 200809L /* popen, mkdtemp */

#include "test_util.h"

#include "strategy/unrolled/schedule.h"
#include "conv/conv_gather.h"
#include "strategy/unrolled/unrolled.h"
#include "gpu/ptxas.h"

#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

static char ptxas[1024], nvlink[1024], tmpdir[1024];

/* $SPF_PTXAS, else the CUDA install, else PATH; "" if none. */
static void find_tool(const char *env, const char *tool, char *out, size_t cap)
{
    const char *e = env ? getenv(env) : NULL;
    char path[1024];
    snprintf(path, sizeof path, "/usr/local/cuda/bin/%s", tool);
    if (e && access(e, X_OK) == 0) {
        snprintf(out, cap, "%s", e);
    } else if (access(path, X_OK) == 0) {
        snprintf(out, cap, "%s", path);
    } else {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "command -v %s 2>/dev/null", tool);
        FILE *p = popen(cmd, "r");
        out[0] = '\0';
        if (p) {
            if (fgets(out, (int)cap, p))
                out[strcspn(out, "\n")] = '\0';
            pclose(p);
        }
    }
}

/* The registers ptxas_cubin_registers reads from the cubin at path (0 if
 * it cannot be read). */
static int file_registers(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    static unsigned char buf[1 << 22];
    size_t size = fread(buf, 1, sizeof buf, f);
    int full = feof(f);
    fclose(f);
    CHECK_MSG(full, "%s: larger than %zu bytes", path, sizeof buf);
    return full ? ptxas_cubin_registers(buf, size) : 0;
}

/* Run a command, capture stdout+stderr into log; returns the exit status. */
static int run(const char *cmd, char *log, size_t cap)
{
    char full[8300];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t used = fread(log, 1, cap - 1, p);
    log[used] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Sum of every "N bytes spill stores" and "N bytes spill loads". */
static long spill_bytes(const char *log)
{
    long total = 0;
    for (const char *p = log; (p = strstr(p, "bytes spill")) != NULL; p++) {
        const char *q = p - 1;
        while (q > log && q[-1] >= '0' && q[-1] <= '9')
            q--;
        total += strtol(q, NULL, 10);
    }
    return total;
}

static spf_matrix *random_matrix(int64_t m, int64_t k, double density, uint64_t seed)
{
    return gen_matrix(SPF_GEN_UNIFORM, m, k, 1.0 - density, seed);
}

typedef struct ptx_case {
    const char *dlmc; /* a DLMC pattern under the data folder, or NULL for a random m×k */
    int64_t m, k;
    double density;
    int64_t n;
    spf_kernel_config cfg;
    spf_dtype dtype;
    int f16x2, bias, relu, sm, permute;
    const conv_gather *gather; /* B as a convolution's implicit im2col (k = C·R·S, n its cols) */
} ptx_case;

static void assemble_case(const ptx_case *given, FILE *csv)
{
    ptx_case cc = *given, *c = &cc;
    spf_matrix *a = NULL;
    if (c->dlmc) {
        a = data_case_matrix(c->dlmc, &c->m, &c->k);
        if (!a)
            return;
    } else {
        a = random_matrix(c->m, c->k, c->density, (uint64_t)c->m * 31 + (uint64_t)c->k);
    }
    int32_t *perm = NULL;
    if (c->permute) {
        perm = malloc((size_t)c->m * sizeof *perm);
        for (int64_t i = 0; i < c->m; i++)
            perm[i] = (int32_t)((i * 7 + 3) % c->m); /* 7 is coprime to every m used */
    }
    ptx_program prog;
    spf_status st =
        c->gather ? unrolled_generate_gather(a, perm, c->gather, &c->cfg, c->dtype, c->bias,
                                             c->relu, c->sm, 0, &prog)
                  : unrolled_generate(a, perm, c->n, &c->cfg, c->dtype, c->f16x2, c->bias,
                                      c->relu, c->sm, 0, &prog);
    CHECK_MSG(st == SPF_OK, "generate: %s", spf_last_error());
    if (st != SPF_OK)
        goto done;
    int64_t tiles = (c->m + c->cfg.m1 - 1) / c->cfg.m1;
    CHECK(prog.grid[0] == (unsigned)((c->n + c->cfg.n1 - 1) / c->cfg.n1));
    CHECK(prog.grid[1] == (unsigned)tiles);
    CHECK(prog.block[0] == (unsigned)(c->cfg.n1 / c->cfg.v * c->cfg.ksplit));
    CHECK(prog.unit_count >= 2);

    char cmd[8192], log[65536], cubins[4096] = "";
    long spills = 0;
    int ok = 1, retries = 0, cubin_regs = 0, entry_regs = 0;
    for (int u = 0; u < prog.unit_count; u++) {
        char ptx_path[1200], cubin_path[1200];
        snprintf(ptx_path, sizeof ptx_path, "%s/u%d.ptx", tmpdir, u);
        snprintf(cubin_path, sizeof cubin_path, "%s/u%d.cubin", tmpdir, u);
        FILE *f = fopen(ptx_path, "w");
        CHECK(f != NULL);
        if (!f)
            goto done;
        CHECK(strlen(prog.units[u].text) == prog.units[u].size);
        fwrite(prog.units[u].text, 1, prog.units[u].size, f);
        fclose(f);
        /* The cap is a heuristic: a unit that spills under it is assembled
         * again with 32 more registers (what the runtime does). */
        long unit_spills = 0;
        int rc = 0;
        for (unsigned cap = prog.max_registers; cap <= 255 + 31; cap += 32) {
            snprintf(cmd, sizeof cmd, "%s -arch=sm_%d -v -c --device-function-maxrregcount=%u %s -o %s",
                     ptxas, c->sm, cap < 255 ? cap : 255, ptx_path, cubin_path);
            rc = run(cmd, log, sizeof log);
            unit_spills = spill_bytes(log);
            if (rc != 0 || unit_spills == 0)
                break;
            retries++;
        }
        CHECK_MSG(rc == 0, "%s unit %d: ptxas exit %d:\n%.4000s", prog.entry, u, rc, log);
        ok &= rc == 0;
        /* -v names the entry's registers only; the cubin has every
         * function's, and must agree with -v where -v speaks */
        int verbose_regs, verbose_spills, unit_regs = rc == 0 ? file_registers(cubin_path) : 0;
        ptxas_parse_verbose(log, &verbose_regs, &verbose_spills);
        CHECK_MSG(rc != 0 || (unit_regs > 0 && (verbose_regs == 0 || unit_regs == verbose_regs)),
                  "%s unit %d: cubin %d registers, ptxas -v %d", prog.entry, u, unit_regs,
                  verbose_regs);
        if (u == 0)
            entry_regs = verbose_regs;
        cubin_regs = unit_regs > cubin_regs ? unit_regs : cubin_regs;
        spills += unit_spills;
        size_t used = strlen(cubins);
        snprintf(cubins + used, sizeof cubins - used, " %s", cubin_path);
    }
    CHECK_MSG(spills == 0, "%s: %ld spill bytes", prog.entry, spills);
    CHECK(prog.max_registers >= 32 && prog.max_registers <= 255);
    int regs = -1;
    if (ok && nvlink[0]) {
        snprintf(cmd, sizeof cmd, "%s -v -arch=sm_%d%s -o %s/linked.cubin", nvlink, c->sm, cubins,
                 tmpdir);
        int rc = run(cmd, log, sizeof log);
        CHECK_MSG(rc == 0, "%s: nvlink exit %d:\n%.4000s", prog.entry, rc, log);
        const char *p = strstr(log, "used ");
        if (p)
            regs = atoi(p + 5);
        CHECK_MSG(regs > 0 && regs <= 255, "%s: registers %d", prog.entry, regs);
        /* the linked kernel's count (nvlink -v) is the largest over the
         * units' functions, which the tile functions set, not the entry */
        CHECK_MSG(cubin_regs == regs && cubin_regs > entry_regs,
                  "%s: linked %d registers, cubins %d, entry (ptxas -v) %d", prog.entry, regs,
                  cubin_regs, entry_regs);
    }
    size_t bytes = 0;
    int64_t lines = 0, estimate = 0;
    for (int u = 0; u < prog.unit_count; u++) {
        bytes += prog.units[u].size;
        for (const char *q = prog.units[u].text; (q = strstr(q, ";\n")) != NULL; q++)
            lines++; /* instructions and declarations */
    }
    /* the budget's estimate tracks the real size */
    CHECK_OK(unrolled_estimate(a, perm, c->n, &c->cfg, c->dtype, c->f16x2, c->bias, c->relu,
                               &estimate));
    CHECK_MSG(estimate > lines / 2 && estimate < lines * 2, "%s: estimate %lld, %lld lines",
              prog.entry, (long long)estimate, (long long)lines);
    printf("%-40s %-5s sm_%d %4lldx%-4lld n=%-4lld units %2d  cap %3u%s  regs %3d  spill %ld  "
           "ptx %zu B\n",
           prog.entry, c->bias ? "bias" : "-", c->sm, (long long)c->m, (long long)c->k,
           (long long)c->n, prog.unit_count, prog.max_registers, retries ? "+" : " ", regs, spills,
           bytes);
    if (csv)
        fprintf(csv, "%s,%d,%lld,%lld,%lld,%d,%d,%d,%d,%d,%d,%s,%d,%d,%u,%d,%d,%ld,%zu\n", prog.entry,
                c->sm, (long long)c->m, (long long)c->k, (long long)c->n, c->cfg.m1, c->cfg.n1,
                c->cfg.v, c->cfg.prefetch, c->cfg.ksplit, c->f16x2,
                c->dtype == SPF_DTYPE_F32 ? "f32" : c->dtype == SPF_DTYPE_F16 ? "f16" : "bf16",
                c->bias, prog.unit_count, prog.max_registers, retries, regs, spills, bytes);
done:
    ptx_program_free(&prog);
    free(perm);
    spf_matrix_free(a);
}

/* Every allocation failure is reported as such and leaves a zeroed program. */
static void test_allocation_failures(void)
{
    spf_matrix *a = random_matrix(40, 64, 0.2, 9);
    spf_kernel_config cfg = {8, 64, 2, 1, 2};
    int failures = 0;
    for (int k = 0; k < 10000; k++) {
        ptx_program prog;
        budget b = {k, 0};
        spf_allocator fail = budget_allocator(&b);
        spf_set_allocator(&fail);
        spf_status st = unrolled_generate(a, NULL, 64, &cfg, SPF_DTYPE_F16, 0, 1, 0, 90, 0, &prog);
        spf_set_allocator(NULL);
        if (st == SPF_OK) {
            ptx_program_free(&prog);
            break;
        }
        failures++;
        CHECK_MSG(st == SPF_ERR_OUT_OF_MEMORY, "after %d allocations: %s", k, spf_last_error());
        CHECK(prog.units == NULL && prog.unit_count == 0);
    }
    CHECK(failures > 5);
    spf_matrix_free(a);
}

static void test_budget_and_errors(void)
{
    spf_matrix *a = random_matrix(64, 256, 0.2, 3);
    spf_kernel_config cfg = {8, 128, 4, 2, 1};
    ptx_program prog;
    CHECK_STATUS(unrolled_generate(a, NULL, 256, &cfg, SPF_DTYPE_F32, 0, 0, 0, 90, 1000, &prog),
                 SPF_ERR_UNSUPPORTED);
    CHECK_DETAIL("code budget");
    CHECK(prog.units == NULL && prog.unit_count == 0);
    CHECK_STATUS(unrolled_generate(a, NULL, 256, &cfg, SPF_DTYPE_F32, 1, 0, 0, 90, 0, &prog),
                 SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("f16x2");
    CHECK_STATUS(unrolled_generate(a, NULL, 256, &cfg, SPF_DTYPE_F32, 0, 0, 0, 75, 0, &prog),
                 SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("sm = 75");
    spf_kernel_config v1 = {8, 64, 1, 2, 1};
    CHECK_STATUS(unrolled_generate(a, NULL, 256, &v1, SPF_DTYPE_F16, 1, 0, 0, 90, 0, &prog),
                 SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("v = 2 or 4");
    int64_t estimate = 0;
    CHECK_OK(unrolled_estimate(a, NULL, 256, &cfg, SPF_DTYPE_F32, 0, 1, 1, &estimate));
    CHECK_STATUS(unrolled_generate(a, NULL, 256, &cfg, SPF_DTYPE_F32, 0, 1, 1, 90, estimate - 1,
                                   &prog),
                 SPF_ERR_UNSUPPORTED);
    /* the name encodes the config; m1 = 8 over 64 rows: 8 tiles, in units
     * of whole tiles sized by schedule_unit_end, each tile defined once */
    CHECK_OK(unrolled_generate(a, NULL, 256, &cfg, SPF_DTYPE_F32, 0, 1, 1, 90, estimate, &prog));
    CHECK(strcmp(prog.entry, "spf_unrolled_f32_m8_n128_v4_p2_k1") == 0);
    schedule s = {0};
    CHECK_OK(schedule_create(a, NULL, 256, &cfg, &s));
    int units = 0;
    for (int32_t t = 0; t < s.tile_count; units++)
        t = schedule_unit_end(&s, t, cfg.v, UNROLLED_UNIT_INSTRUCTIONS);
    schedule_free(&s);
    CHECK(units >= 2); /* 64 × 64 at this density is over one unit's worth */
    CHECK_EQ_I64(prog.unit_count, 1 + units);
    for (int t = 0; t < 8; t++) {
        char fn[96];
        snprintf(fn, sizeof fn, ".visible .func spf_unrolled_f32_m8_n128_v4_p2_k1_t%d(", t);
        int defined = 0;
        for (int u = 1; u < prog.unit_count; u++)
            defined += strstr(prog.units[u].text, fn) != NULL;
        CHECK_MSG(defined == 1, "tile %d defined in %d units", t, defined);
    }
    CHECK(strstr(prog.units[0].text, ".entry spf_unrolled_f32_m8_n128_v4_p2_k1") != NULL);
    CHECK(strstr(prog.units[0].text, ".u64 spf_unrolled_f32_m8_n128_v4_p2_k1_tiles[8] =") != NULL);
    CHECK(strstr(prog.units[0].text, ".callprototype") != NULL);
    CHECK(strstr(prog.units[prog.unit_count - 1].text,
                 ".visible .func spf_unrolled_f32_m8_n128_v4_p2_k1_t7(") != NULL);
    CHECK(strstr(prog.units[1].text, "ld.global.nc.v4.f32") != NULL);
    CHECK(strstr(prog.units[1].text, "fma.rn.f32") != NULL);
    ptx_program_free(&prog);
    ptx_program_free(&prog); /* a zeroed program is fine */
    ptx_program_free(NULL);
    spf_matrix_free(a);
}

int main(int argc, char **argv)
{
    test_budget_and_errors();
    test_allocation_failures();
    find_tool("SPF_PTXAS", "ptxas", ptxas, sizeof ptxas);
    if (!ptxas[0])
        SKIP("no ptxas ($SPF_PTXAS, /usr/local/cuda/bin or PATH): PTX assembly checks skipped");
    find_tool(NULL, "nvlink", nvlink, sizeof nvlink);
    if (!nvlink[0])
        printf("NOTE: no nvlink; units assembled but not linked\n");
    snprintf(tmpdir, sizeof tmpdir, "%s/spf_ptxas_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        CHECK_MSG(0, "mkdtemp %s failed", tmpdir);
        return check_report();
    }
    const char *build = getenv("SPF_BUILD_DIR");
    char csv_path[1200];
    snprintf(csv_path, sizeof csv_path, "%s/unrolled_registers.csv", build ? build : ".");
    FILE *csv = fopen(csv_path, "w");
    if (csv)
        fprintf(csv, "kernel,sm,m,k,n,m1,n1,v,prefetch,ksplit,f16x2,dtype,bias,units,register_cap,"
                     "cap_retries,registers,"
                     "spill_bytes,ptx_bytes\n");

    /* implicit im2col: a ResNet-50 3×3 layer's shape in NHWC (batch 2), the
     * stem's 7×7 with stride 2 and padding 3 in NCHW */
    const conv_gather nhwc3 = {.c = 64, .h = 14, .w = 14, .r = 3, .s = 3, .stride = 1, .pad = 1,
                               .p = 14, .q = 14, .cols = 2 * 196, .nhwc = 1};
    const conv_gather stem = {.c = 3, .h = 32, .w = 30, .r = 7, .s = 7, .stride = 2, .pad = 3,
                              .p = 16, .q = 15, .cols = 240};
    const ptx_case cases[] = {
        {NULL, 64, 576, 0.1, 392, {32, 64, 1, 2, 4}, SPF_DTYPE_F16, 0, 1, 1, 90, 0, &nhwc3},
        {NULL, 64, 576, 0.1, 392, {8, 128, 1, 2, 1}, SPF_DTYPE_BF16, 0, 0, 0, 80, 0, &nhwc3},
        {NULL, 64, 147, 0.3, 240, {16, 64, 1, 2, 2}, SPF_DTYPE_F32, 0, 1, 1, 90, 0, &stem},
        {NULL, 96, 128, 0.1, 256, {8, 128, 4, 2, 1}, SPF_DTYPE_F32, 0, 1, 1, 90, 0, NULL},
        {NULL, 96, 128, 0.1, 256, {8, 128, 4, 2, 1}, SPF_DTYPE_F32, 0, 1, 1, 80, 1, NULL},
        {NULL, 100, 200, 0.1, 49, {16, 32, 1, 1, 1}, SPF_DTYPE_F32, 0, 0, 0, 90, 1, NULL},
        {NULL, 64, 300, 0.1, 127, {4, 32, 1, 3, 4}, SPF_DTYPE_F32, 0, 1, 0, 90, 0, NULL},
        {NULL, 64, 256, 0.2, 256, {32, 64, 2, 4, 2}, SPF_DTYPE_F32, 0, 1, 1, 90, 1, NULL},
        {NULL, 64, 256, 0.1, 512, {32, 128, 4, 2, 1}, SPF_DTYPE_F32, 0, 0, 1, 80, 0, NULL},
        {NULL, 64, 256, 0.1, 512, {16, 128, 4, 2, 2}, SPF_DTYPE_F32, 0, 0, 1, 80, 0, NULL},
        {NULL, 64, 256, 0.1, 512, {32, 128, 4, 2, 2}, SPF_DTYPE_F32, 0, 1, 0, 90, 1, NULL},
        {NULL, 64, 256, 0.1, 256, {8, 64, 4, 2, 4}, SPF_DTYPE_F32, 0, 1, 1, 80, 0, NULL},
        {NULL, 128, 512, 0.05, 2048, {8, 256, 4, 1, 1}, SPF_DTYPE_F32, 0, 1, 1, 90, 1, NULL},
        {NULL, 40, 128, 0.15, 3, {1, 32, 1, 0, 1}, SPF_DTYPE_F32, 0, 1, 0, 90, 0, NULL},
        {NULL, 96, 128, 0.1, 256, {8, 128, 4, 2, 1}, SPF_DTYPE_F16, 0, 1, 1, 90, 1, NULL},
        {NULL, 96, 128, 0.1, 256, {8, 128, 4, 2, 1}, SPF_DTYPE_BF16, 0, 1, 1, 80, 0, NULL},
        {NULL, 100, 200, 0.1, 49, {16, 32, 1, 1, 2}, SPF_DTYPE_F16, 0, 1, 0, 80, 0, NULL},
        {NULL, 100, 200, 0.1, 49, {16, 32, 1, 1, 2}, SPF_DTYPE_BF16, 0, 0, 1, 90, 1, NULL},
        {NULL, 64, 256, 0.2, 130, {16, 64, 2, 2, 2}, SPF_DTYPE_BF16, 0, 1, 1, 90, 0, NULL},
        {NULL, 96, 128, 0.1, 256, {8, 128, 4, 2, 1}, SPF_DTYPE_F16, 1, 1, 1, 90, 0, NULL},
        {NULL, 96, 128, 0.1, 256, {8, 128, 4, 2, 1}, SPF_DTYPE_F16, 1, 0, 0, 80, 1, NULL},
        {NULL, 64, 256, 0.2, 130, {16, 64, 2, 3, 2}, SPF_DTYPE_F16, 1, 1, 1, 90, 0, NULL},
        {"dlmc/rn50/magnitude_pruning/0.9/bottleneck_1_block_group1_1_1.smtx", 0, 0, 0, 3136,
         {8, 128, 4, 2, 1}, SPF_DTYPE_F32, 0, 1, 1, 90, 0, NULL},
        {"dlmc/transformer/magnitude_pruning/0.9/body_encoder_layer_0_self_attention_"
         "multihead_attention_k_fully_connected.smtx", 0, 0, 0, 256, {16, 64, 2, 1, 2},
         SPF_DTYPE_F16, 0, 1, 0, 80, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assemble_case(&cases[i], csv);
    if (csv) {
        fclose(csv);
        printf("register table: %s\n", csv_path);
    }
    char cmd[1200], log[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    run(cmd, log, sizeof log);
    return check_report();
}
