/* spf_asm_bench: the JIT's compile time with each assembler (issue 12) on
 * the unrolled kernels the planner generates for real layers: the same
 * PTX assembled by the ptxas program (one process per unit) and by the
 * in-process PTX compiler (one handle per unit), each over the same host
 * threads, alternating, several rounds. Compile time is CPU-side: no GPU
 * is needed, and the numbers are the host's.
 *
 *   spf_asm_bench [--threads 1,2,16] [--repeat 3] [--sm 90] [--n N]
 *                 [--config m1,n1,v,prefetch,ksplit] [FILE.smtx ...]
 *
 * Without files: two DLMC layers from $SPF_DATA_DIR (else data/ of the
 * source tree; make data), a Transformer 512×512 at 0.9 with N = 256 and a
 * ResNet-50 3×3 128×1152 at 0.9 with N = 784 (tests/gpu/test_plan.c's), in
 * the planner's fixed default configuration (m1 32, n1 64, v 1, prefetch 2,
 * ksplit 4; ksplit 1 where 4 does not fit N) on rows in their original
 * order. One line per (layer, threads, assembler): the median wall time of
 * the parallel step, the assembler seconds summed over the units, and the
 * CPU seconds of the process and its children (getrusage), then the
 * ratio of the medians. Exit 1 if an assembler fails or the two disagree
 * on a unit's registers. */
#define _POSIX_C_SOURCE 200809L

#include "core/parallel.h"
#include "gpu/assembler.h"
#include "gpu/jit.h"
#include "gpu/ptx_compiler.h"
#include "gpu/timing.h"
#include "strategy/unrolled/schedule.h"
#include "strategy/unrolled/unrolled.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

enum { MAX_THREAD_COUNTS = 8, MAX_REPEAT = 50 };

static double cpu_s(void)
{
    struct rusage self, children;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    return (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + children.ru_utime.tv_sec +
                    children.ru_stime.tv_sec) +
           1e-6 * (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec +
                           children.ru_utime.tv_usec + children.ru_stime.tv_usec);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct measure {
    double wall[MAX_REPEAT], summed[MAX_REPEAT], cpu[MAX_REPEAT];
    int registers[1024]; /* per unit, of the last round */
} measure;

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One round with `assembler`: wall, summed and CPU seconds into round r. */
static int run_round(const char *assembler, const ptx_program *p, int sm, int threads, int r,
                     measure *m)
{
    setenv("SPFORGE_ASSEMBLER", assembler, 1);
    const ptx_program *programs[] = {p};
    jit_object o;
    double c0 = cpu_s(), t0 = timing_now_s();
    spf_status st = jit_compile(programs, 1, sm, threads, &o);
    m->wall[r] = timing_now_s() - t0;
    m->cpu[r] = cpu_s() - c0;
    if (st != SPF_OK || o.status != SPF_OK) {
        fprintf(stderr, "spf_asm_bench: %s: %s: %s\n", assembler,
                spf_status_string(st != SPF_OK ? st : o.status),
                st != SPF_OK ? spf_last_error() : o.log ? o.log : "");
        jit_object_release(&o);
        return 0;
    }
    m->summed[r] = o.compile_s;
    for (int u = 0; u < o.unit_count && u < 1024; u++)
        m->registers[u] = o.units[u].registers;
    jit_object_release(&o);
    return 1;
}

static int parse_list(const char *s, int *out, int cap)
{
    int n = 0;
    for (char *end; *s && n < cap; s = *end ? end + 1 : end) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 1)
            return 0;
        out[n++] = (int)v;
    }
    return n;
}

static int usage(void)
{
    fprintf(stderr, "usage: spf_asm_bench [--threads 1,2,16] [--repeat 3] [--sm 90] [--n N] "
                    "[--config m1,n1,v,prefetch,ksplit] [FILE.smtx ...]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int threads[MAX_THREAD_COUNTS] = {0}, thread_counts = 1, repeat = 3, sm = 90, cfg_given = 0;
    int64_t n_given = 0;
    spf_kernel_config cfg = {32, 64, 1, 2, 4};
    const char *files[16];
    int64_t ns[16];
    int file_count = 0;
    threads[0] = 0; /* all cores */
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int c[5];
        if (strcmp(arg, "--threads") == 0 && val) {
            thread_counts = parse_list(val, threads, MAX_THREAD_COUNTS);
            i++;
        } else if (strcmp(arg, "--repeat") == 0 && val) {
            repeat = atoi(val);
            i++;
        } else if (strcmp(arg, "--sm") == 0 && val) {
            sm = atoi(val);
            i++;
        } else if (strcmp(arg, "--n") == 0 && val) {
            n_given = atoll(val);
            i++;
        } else if (strcmp(arg, "--config") == 0 && val && parse_list(val, c, 5) == 5) {
            cfg = (spf_kernel_config){c[0], c[1], c[2], c[3], c[4]};
            cfg_given = 1;
            i++;
        } else if (arg[0] != '-' && file_count < 16) {
            files[file_count] = arg;
            ns[file_count++] = 0;
        } else {
            return usage();
        }
    }
    if (thread_counts < 1 || repeat < 1 || repeat > MAX_REPEAT || (sm != 80 && sm != 90) ||
        n_given < 0)
        return usage();

    char defaults[2][8192];
    if (file_count == 0) {
        const char *dir = getenv("SPF_DATA_DIR");
        char fallback[4096];
        if (!dir) {
            snprintf(fallback, sizeof fallback, "%s/data", SPF_SOURCE_DIR);
            dir = fallback;
        }
        snprintf(defaults[0], sizeof defaults[0],
                 "%s/dlmc/transformer/magnitude_pruning/0.9/"
                 "body_encoder_layer_0_self_attention_multihead_attention_k_fully_connected.smtx",
                 dir);
        snprintf(defaults[1], sizeof defaults[1],
                 "%s/dlmc/rn50/magnitude_pruning/0.9/bottleneck_2_block_group2_3_1.smtx", dir);
        files[0] = defaults[0], ns[0] = 256;
        files[1] = defaults[1], ns[1] = 784;
        file_count = 2;
    }

    int linked_major = 0, linked_minor = 0;
    int linked = ptx_compiler_available(&linked_major, &linked_minor);
    char ptxas[4096];
    int have_ptxas = ptxas_locate(ptxas, sizeof ptxas);
    printf("in-process: %s", linked ? "nvPTXCompiler " : "not in this build");
    if (linked)
        printf("%d.%d", linked_major, linked_minor);
    printf("; ptxas: %s; host cores: %d; sm_%d; %d rounds each, alternating\n",
           have_ptxas ? ptxas : "not found", parallel_default_threads(), sm, repeat);
    if (!linked || !have_ptxas) {
        fprintf(stderr, "spf_asm_bench: both assemblers are needed to compare\n");
        return 1;
    }

    int ok = 1;
    for (int f = 0; f < file_count; f++) {
        spf_matrix *a = NULL;
        spf_status st = spf_matrix_read(files[f], NULL, &a);
        if (st != SPF_OK) {
            fprintf(stderr, "spf_asm_bench: %s: %s (%s)%s\n", files[f], spf_status_string(st),
                    spf_last_error(), ns[f] ? "; make data extracts the DLMC layers" : "");
            return 1;
        }
        int64_t n = n_given ? n_given : ns[f] ? ns[f] : 256;
        spf_kernel_config c = cfg;
        if (!cfg_given && schedule_config_check(&c, n) != SPF_OK)
            c.ksplit = 1;
        ptx_program p;
        st = unrolled_generate(a, NULL, n, &c, SPF_DTYPE_F32, 0, 0, 0, sm, 0, &p);
        if (st != SPF_OK) {
            fprintf(stderr, "spf_asm_bench: generate: %s (%s)\n", spf_status_string(st),
                    spf_last_error());
            spf_matrix_free(a);
            return 1;
        }
        size_t bytes = 0;
        for (int u = 0; u < p.unit_count; u++)
            bytes += p.units[u].size;
        const char *base = strrchr(files[f], '/');
        printf("\n%s: %lld x %lld, %lld nonzeros, N = %lld, %s: %d units, %.1f MB of PTX\n",
               base ? base + 1 : files[f], (long long)spf_matrix_rows(a),
               (long long)spf_matrix_cols(a), (long long)spf_matrix_nnz(a), (long long)n, p.entry,
               p.unit_count, 1e-6 * (double)bytes);
        printf("  %-7s  %-9s  %9s  %11s  %9s\n", "threads", "assembler", "wall (s)",
               "summed (s)", "CPU (s)");
        for (int t = 0; t < thread_counts; t++) {
            static measure m[2];
            static const char *const names[2] = {"ptxas", "inprocess"};
            for (int r = 0; r < repeat && ok; r++)
                for (int k = 0; k < 2 && ok; k++)
                    ok = run_round(names[k], &p, sm, threads[t], r, &m[k]);
            if (!ok)
                break;
            for (int u = 0; u < p.unit_count && u < 1024; u++)
                if (m[0].registers[u] != m[1].registers[u]) {
                    fprintf(stderr, "spf_asm_bench: unit %d: ptxas %d registers, in process %d\n",
                            u, m[0].registers[u], m[1].registers[u]);
                    ok = 0;
                }
            double wall[2];
            for (int k = 0; k < 2; k++) {
                wall[k] = median(m[k].wall, repeat);
                printf("  %-7d  %-9s  %9.3f  %11.3f  %9.3f\n",
                       threads[t] ? threads[t] : parallel_default_threads(), names[k], wall[k],
                       median(m[k].summed, repeat), median(m[k].cpu, repeat));
            }
            printf("  in process / ptxas, wall: %.2f\n", wall[1] / wall[0]);
        }
        ptx_program_free(&p);
        spf_matrix_free(a);
        if (!ok)
            break;
    }
    unsetenv("SPFORGE_ASSEMBLER");
    return ok ? 0 : 1;
}
