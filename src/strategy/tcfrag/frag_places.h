/* Where a lane's slots sit in its run of values (frag_format.h): for the
 * lane's mask byte, the byte offset of each of its eight slots' value
 * (fp16 / bf16: twice the number of set slots below it), a nibble each,
 * slot s in bits 4s..4s+3. The kernel decodes with it, and so does the
 * host's frag_format_to_dense, so the tests check the kernel's arithmetic.
 *
 * Three multiply-and-masks spread the eight bits one per nibble (slots 0-3
 * to bits 0-3 and 4-7 to 16-19, then two a byte, then one a nibble); one
 * multiply by 0x22222220 then adds, into nibble s, twice the bits of the
 * nibbles below s. No carries: a nibble's sum is at most 14. */
#ifndef SPF_STRATEGY_TCFRAG_FRAG_PLACES_H
#define SPF_STRATEGY_TCFRAG_FRAG_PLACES_H

#include <stdint.h>

#ifdef __CUDACC__
#define FRAG_PLACES_FN static __host__ __device__ __forceinline__
#else
#define FRAG_PLACES_FN static inline
#endif

FRAG_PLACES_FN uint32_t frag_slot_places(uint32_t bits)
{
    uint32_t x = (bits * 4097u) & 0x000f000fu;
    x = (x * 65u) & 0x03030303u;
    x = (x * 9u) & 0x11111111u;
    return x * 0x22222220u;
}

#endif
