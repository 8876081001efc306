/*
 * Ternary types TQ1_0 and TQ2_0 (BitNet b1.58 / TriLM), 256 elements.
 *
 * Layouts: ggml-common.h block_tq1_0 { u8 qs[48]; u8 qh[4]; f16 d; } = 54,
 * block_tq2_0 { u8 qs[64]; f16 d; } = 66 (docs/formats/gguf.md, "Ternary"). Float
 * operations follow ggml-quants.c dequantize_row_tq1_0 / _tq2_0:
 * (float)(t - 1) * d.
 */
#include "ggml_dequant_impl.h"

/* Trit n (0 = most significant) of a TQ1_0 byte: the byte stores
 * ceil(v * 256 / 243) for a 5-trit number v, so multiplying by 3^n
 * (mod 256) brings trit n to the top and (x * 3) >> 8 extracts it
 * (dequantize_row_tq1_0). */
static int ggml_tq1_trit(uint8_t byte, int n)
{
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const uint8_t q = (uint8_t)(byte * pow3[n]);
    return (int)(((uint16_t)q * 3) >> 8);
}

void gguf_ggml_deq_tq1_0(const uint8_t *src, float *dst, int64_t n)
{
    for (int64_t b = 0; b < n / GGML_QK_K; b++, src += 54) {
        const uint8_t *qs = src;
        const uint8_t *qh = src + 48;
        const float d = ggml_rd_f16(src + 52);
        /* qs[0..31]: 5 trits each -> elements 0..159 (trit-major) */
        for (int t = 0; t < 5; t++)
            for (int m = 0; m < 32; m++)
                *dst++ = (float)(ggml_tq1_trit(qs[m], t) - 1) * d;
        /* qs[32..47]: 5 trits each -> elements 160..239 */
        for (int t = 0; t < 5; t++)
            for (int m = 0; m < 16; m++)
                *dst++ = (float)(ggml_tq1_trit(qs[32 + m], t) - 1) * d;
        /* qh[0..3]: 4 trits each -> elements 240..255 */
        for (int t = 0; t < 4; t++)
            for (int m = 0; m < 4; m++)
                *dst++ = (float)(ggml_tq1_trit(qh[m], t) - 1) * d;
    }
}

void gguf_ggml_deq_tq2_0(const uint8_t *src, float *dst, int64_t n)
{
    for (int64_t b = 0; b < n / GGML_QK_K; b++, src += 66) {
        const float d = ggml_rd_f16(src + 64);
        for (int j = 0; j < 64; j += 32)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++)
                    *dst++ = (float)(((src[j + m] >> (2 * l)) & 3) - 1) * d;
    }
}
