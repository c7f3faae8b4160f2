/* gpu/timing.h's rules on the device: cold timing finds what it times in
 * HBM, hot timing in the L2. The thing timed is a read of a buffer that
 * fits the L2 a few times over (the flush kernel itself on 8 MiB): hot, its
 * second read is served by the L2; cold, by HBM, which streams it about
 * three times slower on Hopper. A flush that did not evict, or a
 * subtraction that removed the launch too, makes the two agree. */
#include "test_util.h"

#ifndef SPF_HAVE_CUDA
int main(int argc, char **argv) { SKIP("no CUDA device: built without CUDA"); }
#else

#include "gpu/l2_flush.h"
#include "gpu/timing.h"

#include <cuda_runtime_api.h>

static spf_status read_launch(void *ctx, void *stream) { return l2_flush_launch(ctx, stream); }

static void test_cold_slower_than_hot(void)
{
    l2_flush whole, part;
    CHECK_OK(l2_flush_make(&whole));
    CHECK_OK(l2_flush_make(&part));
    part.bytes = 8u << 20; /* the first 8 MiB of its buffer: well inside the L2 */
    timing_options o;
    timing_result hot, cold;
    timing_options_init(&o);
    CHECK(o.graph == 1 && o.cold == 1); /* the defaults: graph replays, weights cold */
    o.cold = 0;
    CHECK_OK(timing_measure(read_launch, &part, NULL, &o, &hot));
    CHECK(hot.cold == 0 && hot.graph == 1 && hot.flush_us == 0 && hot.median_us > 0);
    o.cold = 1;
    o.flush = &whole;
    CHECK_OK(timing_measure(read_launch, &part, NULL, &o, &cold));
    CHECK(cold.cold == 1 && cold.graph == 1 && cold.repeats >= 8);
    /* the flush reads twice the L2: longer than the 8 MiB read it precedes */
    CHECK_MSG(cold.flush_us > 2 * cold.median_us, "flush %.2f us, read %.2f us", cold.flush_us,
              cold.median_us);
    printf("8 MiB read: hot %.2f us, cold %.2f us (flush %.2f us subtracted)\n", hot.median_us,
           cold.median_us, cold.flush_us);
    CHECK_MSG(cold.median_us > 1.3 * hot.median_us, "cold %.2f us against hot %.2f us",
              cold.median_us, hot.median_us);
    /* without a flush given, the call makes its own */
    timing_result own;
    CHECK_OK(timing_measure(read_launch, &part, NULL, NULL, &own));
    CHECK(own.cold == 1 && own.flush_us > 0 && own.median_us > 1.3 * hot.median_us);
    l2_flush_release(&part);
    l2_flush_release(&whole);
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    setvbuf(stdout, NULL, _IONBF, 0);
    spf_device_info dev;
    if (spf_device_query(0, &dev) != SPF_OK || !dev.available)
        SKIP("no CUDA device: %s", dev.reason);
    test_cold_slower_than_hot();
    return check_report();
}

#endif /* SPF_HAVE_CUDA */
