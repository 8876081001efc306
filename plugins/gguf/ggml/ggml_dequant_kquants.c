/*
 * K-quants: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K (256-element super-blocks).
 *
 * Layouts: ggml-common.h block_q2_K ... block_q8_K (docs/formats/gguf.md, "K-quants").
 * Float operations follow ggml-quants.c dequantize_row_q2_K ... _q8_K: the
 * per-sub-block products (d * scale, dmin * min) are rounded to float
 * first, then each element is `dl * q - ml` (two roundings, never fused:
 * the library is built with -ffp-contract=off).
 */
#include "ggml_dequant_impl.h"

#define QK_K GGML_QK_K

void gguf_ggml_deq_q2_k(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q2_K { u8 scales[16]; u8 qs[64]; f16 d; f16 dmin; } = 84 */
    for (int64_t b = 0; b < n / QK_K; b++, src += 84) {
        const uint8_t *scales = src;
        const uint8_t *qs = src + 16;
        const float d = ggml_rd_f16(src + 80);
        const float dmin = ggml_rd_f16(src + 82);
        int is = 0;
        /* two halves of 128; in each, 4 bit-planes (shift 0,2,4,6) of
         * 32 bytes, each plane two sub-blocks of 16 with own scale/min */
        for (int half = 0; half < 2; half++, qs += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int sub = 0; sub < 2; sub++, is++) {
                    const uint8_t sc = scales[is];
                    const float dl = d * (float)(sc & 0x0F);
                    const float ml = dmin * (float)(sc >> 4);
                    for (int l = 0; l < 16; l++) {
                        const int q = (qs[16 * sub + l] >> shift) & 3;
                        *dst++ = dl * (float)q - ml;
                    }
                }
            }
        }
    }
}

/* The 16 6-bit scales of Q3_K: low 4 bits in s[0..7] (two per byte), high
 * 2 bits in s[8..11] (docs/formats/gguf.md, "K-quants"; the kmask unpacking in
 * dequantize_row_q3_K yields the same numbers). */
static int ggml_q3k_scale(const uint8_t *s, int i)
{
    const int lo = i < 8 ? (s[i] & 0x0F) : (s[i - 8] >> 4);
    const int hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    return lo | (hi << 4);
}

void gguf_ggml_deq_q3_k(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q3_K { u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d; } = 110 */
    for (int64_t b = 0; b < n / QK_K; b++, src += 110) {
        const uint8_t *hmask = src;
        const uint8_t *qs = src + 32;
        const uint8_t *scales = src + 96;
        const float d_all = ggml_rd_f16(src + 108);
        int is = 0;
        int hbit = 0;
        for (int half = 0; half < 2; half++, qs += 32) {
            for (int shift = 0; shift < 8; shift += 2, hbit++) {
                for (int sub = 0; sub < 2; sub++, is++) {
                    const float dl = d_all * (float)(ggml_q3k_scale(scales, is) - 32);
                    for (int l = 0; l < 16; l++) {
                        const int r = 16 * sub + l;
                        /* a clear high bit means the code is 4 lower */
                        const int q = ((qs[r] >> shift) & 3) - (((hmask[r] >> hbit) & 1) ? 0 : 4);
                        *dst++ = dl * (float)q;
                    }
                }
            }
        }
    }
}

/* get_scale_min_k4 of ggml-quants.c: 8 (scale, min) pairs of 6 bits packed
 * in 12 bytes. */
static void ggml_k4_scale_min(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

void gguf_ggml_deq_q4_k(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q4_K { f16 d; f16 dmin; u8 scales[12]; u8 qs[128]; } = 144 */
    for (int64_t b = 0; b < n / QK_K; b++, src += 144) {
        const float d = ggml_rd_f16(src);
        const float dmin = ggml_rd_f16(src + 2);
        const uint8_t *scales = src + 4;
        const uint8_t *qs = src + 16;
        /* 4 chunks of 64: 32 bytes, low nibbles = sub-block 2c, high = 2c+1 */
        for (int c = 0; c < 4; c++, qs += 32) {
            int sc, m;
            ggml_k4_scale_min(scales, 2 * c, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            ggml_k4_scale_min(scales, 2 * c + 1, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++)
                *dst++ = d1 * (float)(qs[l] & 0x0F) - m1;
            for (int l = 0; l < 32; l++)
                *dst++ = d2 * (float)(qs[l] >> 4) - m2;
        }
    }
}

void gguf_ggml_deq_q5_k(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q5_K { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]; }
     * = 176; bit (2c + h) of qh[l] is the 5th bit of chunk c, half h. */
    for (int64_t b = 0; b < n / QK_K; b++, src += 176) {
        const float d = ggml_rd_f16(src);
        const float dmin = ggml_rd_f16(src + 2);
        const uint8_t *scales = src + 4;
        const uint8_t *qh = src + 16;
        const uint8_t *qs = src + 48;
        for (int c = 0; c < 4; c++, qs += 32) {
            int sc, m;
            ggml_k4_scale_min(scales, 2 * c, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            ggml_k4_scale_min(scales, 2 * c + 1, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) {
                const int q = (qs[l] & 0x0F) + (((qh[l] >> (2 * c)) & 1) ? 16 : 0);
                *dst++ = d1 * (float)q - m1;
            }
            for (int l = 0; l < 32; l++) {
                const int q = (qs[l] >> 4) + (((qh[l] >> (2 * c + 1)) & 1) ? 16 : 0);
                *dst++ = d2 * (float)q - m2;
            }
        }
    }
}

void gguf_ggml_deq_q6_k(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d; } = 210.
     * ggml computes d * sc * q left to right: (d * sc) rounded, then * q. */
    for (int64_t b = 0; b < n / QK_K; b++, src += 210) {
        const uint8_t *ql = src;
        const uint8_t *qh = src + 128;
        const int8_t *sc = (const int8_t *)(src + 192);
        const float d = ggml_rd_f16(src + 208);
        for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, dst += 128) {
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                dst[l] = d * (float)sc[is] * (float)q1;
                dst[l + 32] = d * (float)sc[is + 2] * (float)q2;
                dst[l + 64] = d * (float)sc[is + 4] * (float)q3;
                dst[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
        }
    }
}

void gguf_ggml_deq_q8_k(const uint8_t *src, float *dst, int64_t n)
{
    /* block_q8_K { f32 d; i8 qs[256]; i16 bsums[16]; } = 292 (ggml has
     * dequantize_row_q8_K but registers no to_float; same formula). */
    for (int64_t b = 0; b < n / QK_K; b++, src += 292) {
        const float d = qb_bits_f32(ggml_rd_u32(src));
        for (int j = 0; j < QK_K; j++)
            *dst++ = d * (float)(int8_t)src[4 + j];
    }
}
