/*
 * Plain (non-block) ggml types: F32, F16, BF16, I8..I64, F64.
 *
 * ggml's to_float for F16 is ggml_fp16_to_fp32_row and for BF16
 * ggml_bf16_to_fp32_row (ggml.c); both are exact widenings (F16 also quiets
 * a signaling NaN, see ggml_f16_to_f32). The integer and F64 types have no ggml
 * to_float; they are converted with a plain C cast (rounding to nearest).
 */
#include "ggml_dequant_impl.h"

#include <quantbridge/qb_half.h>

#include <string.h>

void gguf_ggml_deq_f32(const uint8_t *src, float *dst, int64_t n)
{
    if (n > 0)
        memcpy(dst, src, (size_t)n * sizeof(float));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define GGUF_GGML_HAVE_F16C_PATH 1

/* vcvtph2ps widens exactly and quiets signaling NaNs, the same bits as
 * ggml_f16_to_f32, eight at a time. */
__attribute__((target("avx,f16c"))) static void ggml_f16_row_f16c(const uint8_t *src, float *dst,
                                                                  int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; i++)
        dst[i] = ggml_rd_f16(src + 2 * i);
}
#endif

void gguf_ggml_deq_f16(const uint8_t *src, float *dst, int64_t n)
{
#ifdef GGUF_GGML_HAVE_F16C_PATH
    if (__builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx")) {
        ggml_f16_row_f16c(src, dst, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        dst[i] = ggml_rd_f16(src + 2 * i);
}

void gguf_ggml_deq_bf16(const uint8_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = qb_bf16_to_f32(ggml_rd_u16(src + 2 * i));
}

void gguf_ggml_deq_i8(const uint8_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)(int8_t)src[i];
}

void gguf_ggml_deq_i16(const uint8_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)(int16_t)ggml_rd_u16(src + 2 * i);
}

void gguf_ggml_deq_i32(const uint8_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)(int32_t)ggml_rd_u32(src + 4 * i);
}

void gguf_ggml_deq_i64(const uint8_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)(int64_t)ggml_rd_u64(src + 8 * i);
}

void gguf_ggml_deq_f64(const uint8_t *src, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t u = ggml_rd_u64(src + 8 * i);
        double d;
        memcpy(&d, &u, sizeof d);
        dst[i] = (float)d;
    }
}
