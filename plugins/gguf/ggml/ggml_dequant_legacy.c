/*
 * Legacy 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1) and
 * the newer single-scale Q1_0 (128 elements) and Q2_0 (64 elements).
 *
 * Layouts: ggml-common.h block_q4_0 ... block_q8_1, block_q1_0 (docs/formats/gguf.md,
 * "Legacy blocks"). Quant nibbles use the "split-half" order: byte j holds element j
 * in its low nibble and element j+16 in its high nibble. Float operations
 * follow ggml-quants.c dequantize_row_q4_0 ... _q8_0, _q1_0, _q2_0 one for one
 * (int code converted to float, times d, then + m where there is a min).
 */
#include "ggml_dequant_impl.h"

#define QK32 32

void gguf_ggml_deq_q4_0(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q4_0 { f16 d; u8 qs[16]; } = 18 bytes */
    for (int64_t b = 0; b < n / QK32; b++, src += 18, dst += QK32) {
        const float d = ggml_rd_f16(src);
        const uint8_t *qs = src + 2;
        for (int j = 0; j < QK32 / 2; j++) {
            const int lo = (qs[j] & 0x0F) - 8;
            const int hi = (qs[j] >> 4) - 8;
            dst[j] = (float)lo * d;
            dst[j + QK32 / 2] = (float)hi * d;
        }
    }
}

void gguf_ggml_deq_q4_1(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q4_1 { f16 d; f16 m; u8 qs[16]; } = 20 bytes */
    for (int64_t b = 0; b < n / QK32; b++, src += 20, dst += QK32) {
        const float d = ggml_rd_f16(src);
        const float m = ggml_rd_f16(src + 2);
        const uint8_t *qs = src + 4;
        for (int j = 0; j < QK32 / 2; j++) {
            dst[j] = (float)(qs[j] & 0x0F) * d + m;
            dst[j + QK32 / 2] = (float)(qs[j] >> 4) * d + m;
        }
    }
}

void gguf_ggml_deq_q5_0(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q5_0 { f16 d; u8 qh[4]; u8 qs[16]; } = 22 bytes; bit e of the
     * little-endian u32 qh is the 5th bit of element e. */
    for (int64_t b = 0; b < n / QK32; b++, src += 22, dst += QK32) {
        const float d = ggml_rd_f16(src);
        const uint32_t qh = ggml_rd_u32(src + 2);
        const uint8_t *qs = src + 6;
        for (int j = 0; j < QK32 / 2; j++) {
            const int lo = (int)((qs[j] & 0x0F) | (((qh >> j) & 1u) << 4)) - 16;
            const int hi = (int)((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4)) - 16;
            dst[j] = (float)lo * d;
            dst[j + QK32 / 2] = (float)hi * d;
        }
    }
}

void gguf_ggml_deq_q5_1(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q5_1 { f16 d; f16 m; u8 qh[4]; u8 qs[16]; } = 24 bytes */
    for (int64_t b = 0; b < n / QK32; b++, src += 24, dst += QK32) {
        const float d = ggml_rd_f16(src);
        const float m = ggml_rd_f16(src + 2);
        const uint32_t qh = ggml_rd_u32(src + 4);
        const uint8_t *qs = src + 8;
        for (int j = 0; j < QK32 / 2; j++) {
            const int lo = (int)((qs[j] & 0x0F) | (((qh >> j) & 1u) << 4));
            const int hi = (int)((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
            dst[j] = (float)lo * d + m;
            dst[j + QK32 / 2] = (float)hi * d + m;
        }
    }
}

void gguf_ggml_deq_q8_0(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q8_0 { f16 d; i8 qs[32]; } = 34 bytes */
    for (int64_t b = 0; b < n / QK32; b++, src += 34, dst += QK32) {
        const float d = ggml_rd_f16(src);
        for (int j = 0; j < QK32; j++)
            dst[j] = (float)(int8_t)src[2 + j] * d;
    }
}

void gguf_ggml_deq_q8_1(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q8_1 { f16 d; f16 s; i8 qs[32]; } = 36 bytes. ggml registers no
     * to_float for Q8_1 (a dot-product intermediate); s = d * sum(qs) is
     * redundant, so the natural decode qs[e] * d (as Q8_0) is used. */
    for (int64_t b = 0; b < n / QK32; b++, src += 36, dst += QK32) {
        const float d = ggml_rd_f16(src);
        for (int j = 0; j < QK32; j++)
            dst[j] = (float)(int8_t)src[4 + j] * d;
    }
}

void gguf_ggml_deq_q1_0(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q1_0 { f16 d; u8 qs[16]; } = 18 bytes, 128 elements: bit e
     * (LSB first) set means +d, clear means -d (dequantize_row_q1_0). */
    for (int64_t b = 0; b < n / 128; b++, src += 18, dst += 128) {
        const float d = ggml_rd_f16(src);
        const float neg_d = -d;
        for (int j = 0; j < 128; j++)
            dst[j] = ((src[2 + j / 8] >> (j % 8)) & 1) ? d : neg_d;
    }
}

void gguf_ggml_deq_q2_0(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q2_0 { f16 d; u8 qs[16]; } = 18 bytes, 64 elements: 2-bit code
     * q of element e at bits 2(e%4) of qs[e/4], value (q - 1) * d
     * (dequantize_row_q2_0). */
    for (int64_t b = 0; b < n / 64; b++, src += 18, dst += 64) {
        const float d = ggml_rd_f16(src);
        for (int j = 0; j < 64; j++)
            dst[j] = (float)(((src[2 + j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
    }
}
