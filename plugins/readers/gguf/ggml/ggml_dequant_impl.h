/*
 * Internal to gguf_ggml: little-endian field readers and the per-type row
 * decoders that gguf_ggml_dequantize_row dispatches to. Each ggml_deq_<t>
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

/* fp16 field at p, widened exactly (ggml GGML_FP16_TO_FP32). */
static inline float ggml_rd_f16(const uint8_t *p)
{
    return qb_f16_to_f32(ggml_rd_u16(p));
}

typedef void (*ggml_deq_fn)(const uint8_t *src, float *dst, int64_t n);

/* plain types: ggml_dequant_plain.c */
void ggml_deq_f32(const uint8_t *src, float *dst, int64_t n);
void ggml_deq_f16(const uint8_t *src, float *dst, int64_t n);
void ggml_deq_bf16(const uint8_t *src, float *dst, int64_t n);
void ggml_deq_i8(const uint8_t *src, float *dst, int64_t n);
void ggml_deq_i16(const uint8_t *src, float *dst, int64_t n);
void ggml_deq_i32(const uint8_t *src, float *dst, int64_t n);
void ggml_deq_i64(const uint8_t *src, float *dst, int64_t n);
void ggml_deq_f64(const uint8_t *src, float *dst, int64_t n);

#endif
