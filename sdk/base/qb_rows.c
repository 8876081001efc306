/*
 * libquantbridge-base: dense float rows (qb_rows.h).
 * perf: scalar fp16 loops were ~12 % of an exact GPTQ repack (a 7B model's
 * fp16 embeddings and lm_head) and bf16 ~12 % of a BF16 convert, hence
 * F16C for fp16 and a loop the compiler vectorises for bf16.
 */
#define _DEFAULT_SOURCE /* madvise, MADV_DONTNEED */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <quantbridge/base/qb_rows.h>
#include <quantbridge/qb_half.h>

/* safetensors stores little-endian; the copies below rely on the host
 * being little-endian too. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the reader base assumes a little-endian host"
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define QB_ROWS_HAVE_F16C 1

/* 1 when the CPU has AVX (with OS support, as __builtin_cpu_supports
 * checks) and F16C (CPUID.1:ECX bit 29; clang 14 has no "f16c" feature
 * string), else 0. Cached with relaxed atomics: racing threads compute the
 * same answer (cpuid traps in a VM, so it runs once). */
static int cpu_has_f16c(void)
{
    static int cached; /* 0 unknown, 1 no, 2 yes */
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v == 0) {
        unsigned a, b, c, d;
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29))
                ? 2
                : 1;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v == 2;
}

__attribute__((target("avx,f16c"))) static void f16_row_f16c(const uint8_t *src, float *dst,
                                                             size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i,
                         _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i))));
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        dst[i] = qb_f16_to_f32(h);
    }
}
#endif

static void f16_row(const uint8_t *src, float *dst, size_t n)
{
    size_t i;
#ifdef QB_ROWS_HAVE_F16C
    if (cpu_has_f16c()) {
        f16_row_f16c(src, dst, n);
        return;
    }
#endif
    for (i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        dst[i] = qb_f16_to_f32(h);
    }
}

/* The 16 bits become the float's high half: a shift the compiler
 * vectorises. */
static void bf16_row(const uint8_t *src, float *dst, size_t n)
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

size_t qb_rows_dense_size(qb_dtype dt)
{
    switch (dt) {
    case QB_DT_F32: return 4;
    case QB_DT_F16:
    case QB_DT_BF16: return 2;
    default: return 0;
    }
}

const char *qb_rows_dense_encoding(qb_dtype dt)
{
    switch (dt) {
    case QB_DT_F32: return "f32";
    case QB_DT_F16: return "f16";
    case QB_DT_BF16: return "bf16";
    default: return NULL;
    }
}

int qb_rows_to_f32(qb_dtype dt, const uint8_t *src, size_t n, float *dst)
{
    /* safetensors data may be unaligned (third-party writers do not pad),
     * so elements are memcpy'd, never dereferenced */
    switch (dt) {
    case QB_DT_F32:
        memcpy(dst, src, n * sizeof(float));
        return 0;
    case QB_DT_F16:
        f16_row(src, dst, n);
        return 0;
    case QB_DT_BF16:
        bf16_row(src, dst, n);
        return 0;
    default:
        return -1;
    }
}

/* Rows are read once per conversion: without this every source byte read
 * stays in the peak RSS (a 7B BF16 source: 14 GB; a 6 GB DeepSeek-V3-shaped
 * FP8 source peaked at 5.6 GiB, bench/RESULTS.md "DeepSeek-V3 FP8 (issue
 * 18)"). MADV_DONTNEED on a read-only file mapping drops only the mapping. */
void qb_rows_drop_pages(const void *p, size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a, e;
    if (!p || n == 0 || pg <= 0)
        return;
    a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    e = ((uintptr_t)p + n) & ~((uintptr_t)pg - 1);
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_DONTNEED);
}
