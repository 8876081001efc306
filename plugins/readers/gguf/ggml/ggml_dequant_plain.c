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

void gguf_ggml_deq_f16(const uint8_t *src, float *dst, int64_t n)
{
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
