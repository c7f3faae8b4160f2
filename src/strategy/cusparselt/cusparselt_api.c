/* The run-time loader of cuSPARSELt (cusparselt_api.h). */
#define _POSIX_C_SOURCE 200809L

#include "strategy/cusparselt/cusparselt_api.h"

#ifdef SPF_HAVE_CUDA

#include "core/dynlib.h"

#include <stdio.h>
#include <string.h>

/* The soname the wheels and archives ship (0.x releases keep .so.0), then
 * the unversioned name of a development install. */
static const char *const default_names[] = {"libcusparseLt.so.0", "libcusparseLt.so"};
enum { NAME_COUNT = sizeof default_names / sizeof default_names[0] };

#define ENTRY(fn) {"cusparseLt" #fn, offsetof(cuslt_api, fn)}
static const dynlib_entry entries[] = {
    ENTRY(Init),
    ENTRY(Destroy),
    ENTRY(GetVersion),
    ENTRY(GetErrorString),
    ENTRY(DenseDescriptorInit),
    ENTRY(StructuredDescriptorInit),
    ENTRY(MatDescriptorDestroy),
    ENTRY(MatmulDescriptorInit),
    ENTRY(MatmulDescSetAttribute),
    ENTRY(MatmulAlgSelectionInit),
    ENTRY(MatmulAlgSelectionDestroy),
    ENTRY(MatmulAlgSetAttribute),
    ENTRY(MatmulAlgGetAttribute),
    ENTRY(MatmulPlanInit),
    ENTRY(MatmulPlanDestroy),
    ENTRY(MatmulGetWorkspace),
    ENTRY(Matmul),
    ENTRY(SpMMACompressedSize),
    ENTRY(SpMMACompress),
};
#undef ENTRY

void cuslt_close(cuslt_api *api)
{
    if (!api)
        return;
    dynlib_close(api->lib);
    memset(api, 0, sizeof *api);
}

/* The release, asked of a handle (cuSPARSELt has no handle-free version
 * call in 0.6): 0 with why when none can be made (no device). */
static int release_of(const cuslt_api *api, char *reason, size_t cap)
{
    cuslt_handle h;
    cuslt_status st = api->Init(&h);
    if (st != CUSLT_STATUS_SUCCESS) {
        snprintf(reason, cap, "%s: cusparseLtInit: %s (%d)", api->path, api->GetErrorString(st),
                 (int)st);
        return 0;
    }
    int version = 0;
    st = api->GetVersion(&h, &version);
    (void)api->Destroy(&h);
    if (st != CUSLT_STATUS_SUCCESS) {
        snprintf(reason, cap, "%s: cusparseLtGetVersion: %s (%d)", api->path,
                 api->GetErrorString(st), (int)st);
        return 0;
    }
    return version;
}

int cuslt_open(const char *path, cuslt_api *out, char *reason, size_t cap)
{
    memset(out, 0, sizeof *out);
    const char *const *names = path ? &path : default_names;
    if (!dynlib_open(names, path ? 1 : NAME_COUNT, entries, sizeof entries / sizeof *entries, out,
                     &out->lib, out->path, sizeof out->path, reason, cap)) {
        memset(out, 0, sizeof *out);
        return 0;
    }
    out->version = release_of(out, reason, cap);
    if (out->version < CUSLT_VERSION_MIN) {
        if (out->version > 0)
            snprintf(reason, cap, "%s is release %d.%d.%d; spforge needs 0.6 or later", out->path,
                     out->version / 1000000, out->version / 100 % 100, out->version % 100);
        cuslt_close(out);
        return 0;
    }
    return 1;
}

static int open_table(const char *path, void *table, char *reason, size_t cap)
{
    return cuslt_open(path, table, reason, cap);
}

static cuslt_api process_api;
static dynlib_once process_once = {.env = "SPF_CUSPARSELT", .open = open_table,
                                   .table = &process_api};

const cuslt_api *cuslt_get(char *reason, size_t cap)
{
    return dynlib_get(&process_once, reason, cap);
}

#endif /* SPF_HAVE_CUDA */
