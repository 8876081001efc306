/*
 * qbk_half_row.h — bulk fp16 / bf16 -> fp32 for reader plugins.
 * Internal kit code, header-only (static inline, never ABI): a plugin
 * includes it from the kit's include directory and links nothing for it.
 * No function allocates, fails or keeps pointers; all are thread-safe.
 *
 * Both conversions are exact: every fp16 and bf16 value is a float. The
 * fp16 path uses F16C (vcvtph2ps, eight at a time) when the CPU has it,
 * chosen at run time, else qb_f16_to_f32; the two agree for every pattern
 * except that F16C returns signaling NaNs quieted (no reader passes NaN on:
 * writers refuse non-finite weights).
 * perf: the scalar fp16 loops were ~12 % of an exact GPTQ repack (a 7B
 * model's fp16 embeddings and lm_head) and bf16 ~12 % of a BF16 convert.
 */
#ifndef QBK_HALF_ROW_H
#define QBK_HALF_ROW_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <quantbridge/qb_half.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define QBK_HALF_HAVE_F16C 1

/* 1 when the CPU has AVX (with OS support, as __builtin_cpu_supports
 * checks) and F16C (CPUID.1:ECX bit 29; clang 14 has no "f16c" feature
 * string), else 0. Cannot fail; thread-safe (relaxed-atomic cache). */
static inline int qbk_half_cpu_has_f16c(void)
{
    /* 0 unknown, 1 no, 2 yes; cached (cpuid traps in a VM). Relaxed
     * atomics: racing threads compute the same answer. */
    static int cached;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v == 0) {
        unsigned a, b, c, d;
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) ? 2 : 1;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v == 2;
}

__attribute__((target("avx,f16c"))) static inline void qbk_half_f16_row_f16c(const uint8_t *src, float *dst,
                                                                 size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i))));
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        dst[i] = qb_f16_to_f32(h);
    }
}
#endif

/* Converts n little-endian fp16 values at src (any alignment) to float32
 * in dst (n floats, caller-owned, not overlapping src). Exact; cannot fail;
 * thread-safe. */
static inline void qbk_half_f16_row_to_f32(const uint8_t *src, float *dst, size_t n)
{
    size_t i;
#ifdef QBK_HALF_HAVE_F16C
    if (qbk_half_cpu_has_f16c()) {
        qbk_half_f16_row_f16c(src, dst, n);
        return;
    }
#endif
    for (i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        dst[i] = qb_f16_to_f32(h);
    }
}

/* Converts n little-endian bf16 values at src (any alignment) to float32
 * in dst (n floats, caller-owned, not overlapping src): the 16 bits become
 * the float's high half (a shift the compiler vectorises). Exact; cannot
 * fail; thread-safe. */
static inline void qbk_half_bf16_row_to_f32(const uint8_t *src, float *dst, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        uint16_t h;
        uint32_t u;
        memcpy(&h, src + 2 * i, 2);
        u = (uint32_t)h << 16;
        memcpy(&dst[i], &u, 4);
    }
}

#endif
