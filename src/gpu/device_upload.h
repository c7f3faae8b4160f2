/* A device array made from a host one, counted into a plan's device bytes:
 * shared by the strategies that upload their formats (tc, tcfrag). */
#ifndef SPF_GPU_DEVICE_UPLOAD_H
#define SPF_GPU_DEVICE_UPLOAD_H

#include "spforge.h"

#include <stddef.h>
#include <stdint.h>

/* cudaMalloc count elements of elem bytes at *dst (one element when count
 * is 0, so the pointer is valid), add the size to *bytes, and copy count
 * elements from src, or zero the array when src is NULL. CUDA builds only. */
spf_status device_upload(void **dst, const void *src, int64_t count, size_t elem, int64_t *bytes);

#endif
