/* The boundaries of issue 48 in the library, each case one that a tiny
 * input or a plain mistake used to turn into a blow-up, a lost or widened
 * file or a silently wrong value:
 *   - the work budget (core/budget.h): what a generator, a dense .npy, a
 *     matrix, the tile statistics and the tensor-core format would allocate
 *     is refused, naming the input and the bytes, before any allocation;
 *     a sparse 1 x 2^31 row is drawn without a 2^31 permutation;
 *   - writes: a FIFO, a folder or a device as the target is refused before
 *     anything is written; an existing file keeps its permission bits;
 *   - values: duplicates summed past float32 are an error, not inf;
 *   - contracts: read options of another format refused; growable structs
 *     of a later header accepted by the conv plan too; JSON strings valid
 *     UTF-8 whatever the bytes of a file name. */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "test_util.h"

#include "core/alloc.h"
#include "core/budget.h"
#include "core/json.h"
#include "core/matrix.h"
#include "strategy/tc/tc_format.h"
#include "strategy/unrolled/tile_stats.h"

#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static const char *path_in(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_budget_rules(void)
{
    CHECK(spf_max_bytes() > 0 && spf_max_bytes() <= SPF_MAX_BYTES_DEFAULT);
    spf_set_max_bytes(1000);
    CHECK_EQ_I64(spf_max_bytes(), 1000);
    CHECK_OK(budget_check("x", 1000, "a thing"));
    CHECK_STATUS(budget_check("input.mtx", 1001, "a thing"), SPF_ERR_OUT_OF_MEMORY);
    CHECK_DETAIL("input.mtx");
    CHECK_DETAIL("a thing needs 1001 bytes, over the work budget of 1000 bytes");
    CHECK_STATUS(budget_check("x", INT64_MAX, "a thing"), SPF_ERR_OUT_OF_MEMORY);
    CHECK_DETAIL("more than 2^63");
    spf_set_max_bytes(-1);
    CHECK_EQ_I64(spf_max_bytes(), -1);
    CHECK_OK(budget_check("x", INT64_MAX, "a thing"));
    spf_set_max_bytes(0);
    setenv("SPFORGE_MAX_BYTES", "12345", 1);
    CHECK_EQ_I64(spf_max_bytes(), 12345);
    setenv("SPFORGE_MAX_BYTES", "12k", 1);
    CHECK_STATUS(budget_check("x", 1, "a thing"), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("$SPFORGE_MAX_BYTES");
    unsetenv("SPFORGE_MAX_BYTES");
    CHECK_EQ_I64(bytes_mul(INT64_MAX / 2, 3), INT64_MAX);
    CHECK_EQ_I64(bytes_add(INT64_MAX, 1), INT64_MAX);
    CHECK_EQ_I64(bytes_mul(-5, 3), 0);
}

static void test_generators(void)
{
    spf_matrix *a = NULL;
    spf_gen_options g;
    /* 2^31 - 1 rows of 2 columns at sparsity 0: 48 GB of CSR */
    spf_gen_options_init(&g);
    g.rows = INT32_MAX, g.cols = 2, g.sparsity = 0;
    CHECK_STATUS(spf_matrix_generate(&g, &a), SPF_ERR_OUT_OF_MEMORY);
    CHECK_DETAIL("2147483647 x 2 at sparsity 0");
    CHECK_DETAIL("over the work budget");
    CHECK(a == NULL);
    g.kind = SPF_GEN_MAGNITUDE;
    CHECK_STATUS(spf_matrix_generate(&g, &a), SPF_ERR_OUT_OF_MEMORY);
    CHECK_DETAIL("the dense Gaussian matrix");
    /* 215 nonzeros of a 1 x 2^31 row: drawn without a 2^31 permutation,
     * under a budget of 1 MiB that such a permutation would break 8000 times */
    spf_set_max_bytes(1 << 20);
    spf_gen_options_init(&g);
    g.rows = 1, g.cols = INT32_MAX, g.sparsity = 0.9999999;
    CHECK_OK(spf_matrix_generate(&g, &a));
    CHECK_EQ_I64(spf_matrix_nnz(a), 215);
    CHECK_OK(spf_matrix_validate(a)); /* sorted, distinct columns */
    /* the output of a dense conversion counts: 8 GiB of .npy refused */
    CHECK_STATUS(spf_matrix_write(a, path_in("wide.npy"), SPF_FORMAT_AUTO), SPF_ERR_OUT_OF_MEMORY);
    CHECK_DETAIL("wide.npy");
    CHECK_DETAIL("the dense .npy array needs 8589934588 bytes");
    CHECK(access(path_in("wide.npy"), F_OK) != 0);
    /* the tile statistics need one stamp per column: 8 GiB here */
    tile_stats ts;
    CHECK_STATUS(tile_nnc_stats(a, NULL, 1, &ts), SPF_ERR_OUT_OF_MEMORY);
    spf_matrix_free(a);
    /* a matrix past the budget is refused before its arrays exist */
    CHECK_STATUS(matrix_alloc(1000, 1000, 200000, &a), SPF_ERR_OUT_OF_MEMORY);
    CHECK_DETAIL("1000 x 1000 with 200000 nonzeros");
    spf_set_max_bytes(0);
}

/* 10^5 empty rows: more tiles than a kernel's grid takes, and the host's
 * statistics still count them; the tensor-core format of a declared 10^8
 * rows is refused by its bound, not built in gigabytes (here 2 * 10^5 rows
 * against a budget of 1 MiB). */
static void test_host_statistics(void)
{
    spf_matrix *a = NULL;
    int64_t *row_ptr = calloc(100001, sizeof *row_ptr);
    CHECK_OK(spf_matrix_create_csr(100000, 8, 0, row_ptr, NULL, NULL, 1, &a));
    tile_stats ts;
    CHECK_OK(tile_nnc_stats(a, NULL, 1, &ts));
    CHECK_EQ_I64(ts.tiles, 100000);
    CHECK(ts.max_nnc == 0 && ts.cov_row == 0);
    spf_matrix_free(a);
    free(row_ptr);
    CHECK_OK(matrix_alloc(200000, 4, 0, &a));
    for (int64_t i = 0; i <= 200000; i++)
        a->row_ptr[i] = 0;
    spf_set_max_bytes(1 << 20); /* below the format's 8 bytes a row */
    tc_format f;
    CHECK_STATUS(tc_format_build(a, SPF_DTYPE_F16, TC_FORMAT_AUTO, 1, &f), SPF_ERR_OUT_OF_MEMORY);
    CHECK_DETAIL("the tensor-core format");
    spf_matrix_free(a);
    spf_set_max_bytes(0);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_mode : 0;
}

static void test_write_targets(void)
{
    spf_matrix *a = NULL;
    spf_gen_options g;
    spf_gen_options_init(&g);
    g.rows = g.cols = 8;
    CHECK_OK(spf_matrix_generate(&g, &a));
    const char *fifo = path_in("pipe.mtx");
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK_STATUS(spf_matrix_write(a, fifo, SPF_FORMAT_AUTO), SPF_ERR_IO);
    CHECK_DETAIL("is a FIFO, expected a regular file or a new name");
    CHECK(S_ISFIFO(mode_of(fifo)));
    const char *folder = path_in("folder.mtx");
    CHECK(mkdir(folder, 0700) == 0);
    CHECK_STATUS(spf_matrix_write(a, folder, SPF_FORMAT_AUTO), SPF_ERR_IO);
    CHECK_DETAIL("is a folder");
    CHECK(S_ISDIR(mode_of(folder)));
    if (access("/dev/null", W_OK) == 0) {
        CHECK_STATUS(spf_matrix_write(a, "/dev/null", SPF_FORMAT_MTX), SPF_ERR_IO);
        CHECK_DETAIL("is a character device");
    }
    /* the permission bits of the file replaced stay, whatever the umask */
    const char *private = path_in("private.mtx");
    write_text(private, "old\n");
    const mode_t modes[] = {0600, 0640, 0604, 0700};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        CHECK(chmod(private, modes[i]) == 0);
        CHECK_OK(spf_matrix_write(a, private, SPF_FORMAT_AUTO));
        CHECK_MSG((mode_of(private) & 07777) == modes[i], "mode %04o became %04o",
                  (unsigned)modes[i], (unsigned)(mode_of(private) & 07777));
    }
    /* a new file takes the umask, as before */
    mode_t old = umask(022);
    CHECK_OK(spf_matrix_write(a, path_in("new.mtx"), SPF_FORMAT_AUTO));
    CHECK((mode_of(path_in("new.mtx")) & 0777) == 0644);
    umask(old);
    spf_matrix_free(a);
}

static void test_values_and_options(void)
{
    spf_matrix *a = NULL;
    spf_read_options o;
    spf_read_options_init(&o);
    o.duplicates = SPF_DUPLICATES_SUM;
    write_text(path_in("sum.mtx"), "%%MatrixMarket matrix coordinate real general\n"
                                   "1 1 2\n1 1 3e38\n1 1 3e38\n");
    CHECK_STATUS(spf_matrix_read(path_in("sum.mtx"), &o, &a), SPF_ERR_INVALID_MATRIX);
    CHECK_DETAIL("sum.mtx:4");
    CHECK_DETAIL("overflows float32");
    CHECK(a == NULL);
    /* the same through COO arrays, the Python binding's path */
    int32_t rows[2] = {0, 0}, cols[2] = {0, 0};
    float values[2] = {3e38f, 3e38f};
    CHECK_STATUS(spf_matrix_create_coo(1, 1, 2, rows, cols, values, SPF_DUPLICATES_SUM, 1, &a),
                 SPF_ERR_INVALID_MATRIX);
    /* options of another format */
    write_text(path_in("one.mtx"), "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\n");
    spf_read_options_init(&o);
    o.npy_sparsity = 0.5;
    CHECK_STATUS(spf_matrix_read(path_in("one.mtx"), &o, &a), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("applies to .npy files only");
    spf_read_options_init(&o);
    o.values_path = path_in("values.npy");
    CHECK_STATUS(spf_matrix_read(path_in("one.mtx"), &o, &a), SPF_ERR_INVALID_ARGUMENT);
    CHECK_DETAIL("applies to .smtx files only");
    spf_read_options_init(&o);
    CHECK_OK(spf_matrix_read(path_in("one.mtx"), &o, &a));
    spf_matrix_free(a);
}

/* A conv plan takes options and a desc from a later header (larger size,
 * unknown fields not read), as spf_plan_create does. */
static void test_growable_structs(void)
{
    spf_matrix *w = NULL;
    spf_gen_options g;
    spf_gen_options_init(&g);
    g.rows = 4, g.cols = 2 * 3 * 3, g.sparsity = 0.5;
    CHECK_OK(spf_matrix_generate(&g, &w));
    struct {
        spf_conv_desc d;
        char later[64];
    } desc;
    struct {
        spf_plan_options o;
        char later[64];
    } opts;
    memset(&desc, 0x5a, sizeof desc);
    memset(&opts, 0x5a, sizeof opts);
    spf_conv_desc_init(&desc.d);
    desc.d.size = sizeof desc;
    desc.d.batch = 1, desc.d.channels = 2, desc.d.height = 5, desc.d.width = 5;
    desc.d.kernel_h = desc.d.kernel_w = 3;
    spf_plan_options_init(&opts.o);
    opts.o.size = sizeof opts;
    opts.o.strategy = SPF_STRATEGY_CPU;
    spf_conv_plan *p = NULL;
    CHECK_OK(spf_conv_plan_create(w, &desc.d, &opts.o, &p));
    struct {
        spf_conv_info i;
        char later[64];
    } info;
    memset(&info, 0, sizeof info);
    info.i.size = sizeof info;
    CHECK_OK(spf_conv_plan_get_info(p, &info.i));
    spf_conv_plan_free(p);
    opts.o.size = 1u << 20; /* never initialized */
    CHECK_STATUS(spf_conv_plan_create(w, &desc.d, &opts.o, &p), SPF_ERR_INVALID_ARGUMENT);
    spf_matrix_free(w);
}

static void test_json_utf8(void)
{
    json_writer w;
    char *text = NULL;
    json_init(&w);
    json_object_begin(&w, NULL);
    json_string(&w, "path", "bad\xff\xe9.mtx");
    json_string(&w, "fine", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    json_string(&w, "overlong", "\xc0\xaf \xed\xa0\x80");
    json_object_end(&w);
    CHECK_OK(json_finish(&w, &text));
    CHECK_MSG(text && strcmp(text, "{\"path\":\"bad\xef\xbf\xbd\xef\xbf\xbd.mtx\","
                                   "\"fine\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\","
                                   "\"overlong\":\"\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd"
                                   "\xef\xbf\xbd\xef\xbf\xbd\"}") == 0,
              "%s", text ? text : "(null)");
    mem_free(text);
}

int main(int argc, char **argv)
{
    snprintf(dir, sizeof dir, "%s/spf_budget_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        SKIP("cannot make a temporary folder: %s", strerror(errno));
    test_budget_rules();
    test_generators();
    test_host_statistics();
    test_write_targets();
    test_values_and_options();
    test_growable_structs();
    test_json_utf8();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_report();
}
