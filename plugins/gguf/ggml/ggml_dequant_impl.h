/*
 * Internal to gguf_ggml: little-endian field readers and the per-type row
 * decoders that gguf_ggml_dequantize_row dispatches to. Each gguf_ggml_deq_<t>
 * decodes n elements (a whole number of blocks, checked by the caller) from
 * src into dst and has the same float semantics as ggml's
 * dequantize_row_<t> (ggml-org/ggml src/ggml-quants.c). Pure, reentrant.
 */
#ifndef GGUF_GGML_DEQUANT_IMPL_H
#define GGUF_GGML_DEQUANT_IMPL_H

#include "ggml_types.h"

#include <quantbridge/qb_half.h>

#include <stdint.h>

#define GGML_QK_K GGUF_GGML_QK_K

/* Blocks are byte arrays read field by field (GGUF data is little-endian
 * and need not be aligned for the struct types). */
static inline uint16_t ggml_rd_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t ggml_rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t ggml_rd_u64(const uint8_t *p)
{
    return (uint64_t)ggml_rd_u32(p) | ((uint64_t)ggml_rd_u32(p + 4) << 32);
}

/* fp16 bits widened exactly as ggml's GGML_FP16_TO_FP32 does: every
 * finite value and infinity exactly (qb_f16_to_f32), and a signaling NaN
 * comes out quiet, as from ggml's float-arithmetic conversion or the F16C
 * instruction (qb_f16_to_f32 keeps the payload as is). */
static inline float ggml_f16_to_f32(uint16_t h)
{
    if ((h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0)
        h |= 0x0200u;
    return qb_f16_to_f32(h);
}

/* fp16 field at p. */
static inline float ggml_rd_f16(const uint8_t *p)
{
    return ggml_f16_to_f32(ggml_rd_u16(p));
}

typedef void (*gguf_ggml_deq_fn)(const uint8_t *src, float *dst, int64_t n);

/* plain types: ggml_dequant_plain.c */
void gguf_ggml_deq_f32(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_f16(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_bf16(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_i8(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_i16(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_i32(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_i64(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_f64(const uint8_t *src, float *dst, int64_t n);


/* legacy blocks: ggml_dequant_legacy.c */
void gguf_ggml_deq_q4_0(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_q4_1(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_q5_0(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_q5_1(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_q8_0(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_q8_1(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_q1_0(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_q2_0(const uint8_t *src, float *dst, int64_t n);

/* K-quants: ggml_dequant_kquants.c */
void gguf_ggml_deq_q2_k(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_q3_k(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_q4_k(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_q5_k(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_q6_k(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_q8_k(const uint8_t *src, float *dst, int64_t n);

/* ternary: ggml_dequant_ternary.c */
void gguf_ggml_deq_tq1_0(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_tq2_0(const uint8_t *src, float *dst, int64_t n);

/* 4-bit codebooks: ggml_dequant_nl4.c */
void gguf_ggml_deq_iq4_nl(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_iq4_xs(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_mxfp4(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_nvfp4(const uint8_t *src, float *dst, int64_t n);

/* grid i-quants: ggml_dequant_iquants.c */
void gguf_ggml_deq_iq2_xxs(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_iq2_xs(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_iq2_s(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_iq3_xxs(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_iq3_s(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_iq1_s(const uint8_t *src, float *dst, int64_t n);
void gguf_ggml_deq_iq1_m(const uint8_t *src, float *dst, int64_t n);

#endif
