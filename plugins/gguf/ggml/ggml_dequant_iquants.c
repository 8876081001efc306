/*
 * Grid ("i-quant") types: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
 * IQ1_M, all 256-element super-blocks of 8 sub-blocks of 32.
 *
 * Each group of 8 (IQ2, IQ1) or 4 (IQ3) elements is one grid entry whose
 * bytes are the magnitudes (ggml_iq_grids.c), with per-element signs from
 * a sign byte (bit j set = negative). Layouts: ggml-common.h block_iq* and
 * docs/formats/gguf.md "I-quants". Float operations follow ggml-quants.c
 * dequantize_row_iq2_xxs ... _iq1_m: sub-block scale first (e.g.
 * d * (0.5f + s) * 0.25f), then scale * magnitude, then the sign (ggml
 * multiplies by +-1.f, exact; done here as a sign-bit flip, see
 * ggml_apply_sign).
 */
#include "ggml_dequant_impl.h"
#include "ggml_iq_grids.h"

#define QK_K GGML_QK_K

/* Byte j of a grid entry (little-endian byte vector). */
static inline int ggml_grid_u8(uint64_t entry, int j)
{
    return (int)((entry >> (8 * j)) & 0xFF);
}

/* v times the sign (bit j set = -1.f). ggml multiplies by +-1.f; that is
 * exact, so flipping the sign bit gives the same value, and it also gives
 * the NaN sign GCC's build of ggml gives (it compiles the multiply to this
 * flip). Branch-free: random sign bits would be mispredicted. */
static inline float ggml_apply_sign(float v, uint8_t signs, int j)
{
    return qb_bits_f32(qb_f32_bits(v) ^ ((uint32_t)((signs >> j) & 1) << 31));
}

void gguf_ggml_deq_iq2_xxs(const uint8_t *src, float *dst, int64_t n)
{
    /* block_iq2_xxs { f16 d; u16 qs[32]; } = 66. Per sub-block: 8 bytes =
     * u32 with 4 grid indices, u32 with 4x7 sign-index bits and a 4-bit
     * scale in bits 28..31. */
    for (int64_t b = 0; b < n / QK_K; b++, src += 66) {
        const float d = ggml_rd_f16(src);
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = src + 2 + 8 * ib;
            const uint32_t aux = ggml_rd_u32(q + 4);
            const float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++, dst += 8) {
                const uint64_t g = gguf_ggml_iq2xxs_grid[q[l]];
                const uint8_t signs = gguf_ggml_ksigns_iq2xs[(aux >> (7 * l)) & 127];
                for (int j = 0; j < 8; j++)
                    dst[j] = ggml_apply_sign(db * (float)ggml_grid_u8(g, j), signs, j);
            }
        }
    }
}

void gguf_ggml_deq_iq2_xs(const uint8_t *src, float *dst, int64_t n)
{
    /* block_iq2_xs { f16 d; u16 qs[32]; u8 scales[8]; } = 74. qs: 9-bit
     * grid index + 7-bit sign index; two 4-bit scales per sub-block. */
    for (int64_t b = 0; b < n / QK_K; b++, src += 74) {
        const float d = ggml_rd_f16(src);
        const uint8_t *scales = src + 66;
        for (int ib = 0; ib < 8; ib++) {
            float db[2];
            db[0] = d * (0.5f + (float)(scales[ib] & 0x0F)) * 0.25f;
            db[1] = d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f;
            for (int l = 0; l < 4; l++, dst += 8) {
                const uint16_t v = ggml_rd_u16(src + 2 + 2 * (4 * ib + l));
                const uint64_t g = gguf_ggml_iq2xs_grid[v & 511];
                const uint8_t signs = gguf_ggml_ksigns_iq2xs[v >> 9];
                for (int j = 0; j < 8; j++)
                    dst[j] = ggml_apply_sign(db[l / 2] * (float)ggml_grid_u8(g, j), signs, j);
            }
        }
    }
}

void gguf_ggml_deq_iq2_s(const uint8_t *src, float *dst, int64_t n)
{
    /* block_iq2_s { f16 d; u8 qs[64]; u8 qh[8]; u8 scales[8]; } = 82. qs[0..31]
     * low 8 index bits, qs[32..63] explicit sign bytes, qh 2 high index
     * bits per group. */
    for (int64_t b = 0; b < n / QK_K; b++, src += 82) {
        const float d = ggml_rd_f16(src);
        const uint8_t *qs = src + 2;
        const uint8_t *signs = src + 2 + 32;
        const uint8_t *qh = src + 66;
        const uint8_t *scales = src + 74;
        for (int ib = 0; ib < 8; ib++, qs += 4, signs += 4) {
            float db[2];
            db[0] = d * (0.5f + (float)(scales[ib] & 0x0F)) * 0.25f;
            db[1] = d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f;
            for (int l = 0; l < 4; l++, dst += 8) {
                const int idx = qs[l] | (((int)qh[ib] << (8 - 2 * l)) & 0x300);
                const uint64_t g = gguf_ggml_iq2s_grid[idx];
                for (int j = 0; j < 8; j++)
                    dst[j] = ggml_apply_sign(db[l / 2] * (float)ggml_grid_u8(g, j), signs[l], j);
            }
        }
    }
}

void gguf_ggml_deq_iq3_xxs(const uint8_t *src, float *dst, int64_t n)
{
    /* block_iq3_xxs { f16 d; u8 qs[96]; } = 98. qs[0..63] grid indices (8
     * per sub-block, 4 magnitudes each), qs[64..95] one u32 per sub-block:
     * 4x7 sign-index bits + 4-bit scale. */
    for (int64_t b = 0; b < n / QK_K; b++, src += 98) {
        const float d = ggml_rd_f16(src);
        const uint8_t *qs = src + 2;
        const uint8_t *scales_and_signs = src + 2 + 64;
        for (int ib = 0; ib < 8; ib++, qs += 8) {
            const uint32_t aux = ggml_rd_u32(scales_and_signs + 4 * ib);
            const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++, dst += 8) {
                const uint8_t signs = gguf_ggml_ksigns_iq2xs[(aux >> (7 * l)) & 127];
                const uint32_t g1 = gguf_ggml_iq3xxs_grid[qs[2 * l]];
                const uint32_t g2 = gguf_ggml_iq3xxs_grid[qs[2 * l + 1]];
                for (int j = 0; j < 4; j++) {
                    dst[j] = ggml_apply_sign(db * (float)ggml_grid_u8(g1, j), signs, j);
                    dst[j + 4] = ggml_apply_sign(db * (float)ggml_grid_u8(g2, j), signs, j + 4);
                }
            }
        }
    }
}

void gguf_ggml_deq_iq3_s(const uint8_t *src, float *dst, int64_t n)
{
    /* block_iq3_s { f16 d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]; }
     * = 110. 9-bit indices (8 low bits in qs, the 9th in qh), explicit
     * sign bytes, one 4-bit scale per sub-block: dl = d * (1 + 2s). */
    for (int64_t b = 0; b < n / QK_K; b++, src += 110) {
        const float d = ggml_rd_f16(src);
        const uint8_t *qs = src + 2;
        const uint8_t *qh = src + 66;
        const uint8_t *signs = src + 74;
        const uint8_t *scales = src + 106;
        for (int ib = 0; ib < 8; ib++, qs += 8, signs += 4) {
            const int s = (scales[ib / 2] >> (4 * (ib % 2))) & 0x0F;
            const float db = d * (float)(1 + 2 * s);
            for (int l = 0; l < 4; l++, dst += 8) {
                const int i1 = qs[2 * l] | (((int)qh[ib] << (8 - 2 * l)) & 256);
                const int i2 = qs[2 * l + 1] | (((int)qh[ib] << (7 - 2 * l)) & 256);
                const uint32_t g1 = gguf_ggml_iq3s_grid[i1];
                const uint32_t g2 = gguf_ggml_iq3s_grid[i2];
                for (int j = 0; j < 4; j++) {
                    dst[j] = ggml_apply_sign(db * (float)ggml_grid_u8(g1, j), signs[l], j);
                    dst[j + 4] = ggml_apply_sign(db * (float)ggml_grid_u8(g2, j), signs[l], j + 4);
                }
            }
        }
    }
}

/* IQ1S_DELTA / IQ1M_DELTA of ggml-common.h. */
#define GGML_IQ1_DELTA 0.125f

void gguf_ggml_deq_iq1_s(const uint8_t *src, float *dst, int64_t n)
{
    /* block_iq1_s { f16 d; u8 qs[32]; u16 qh[8]; } = 50. qh[ib]: 3 high
     * index bits per group (bits 3l..3l+2), 3-bit scale (12..14), delta
     * sign (15). Grid bytes are int8 in {-1, 0, 1}. */
    for (int64_t b = 0; b < n / QK_K; b++, src += 50) {
        const float d = ggml_rd_f16(src);
        const uint8_t *qs = src + 2;
        for (int ib = 0; ib < 8; ib++, qs += 4) {
            const uint16_t qh = ggml_rd_u16(src + 34 + 2 * ib);
            const float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
            const float delta = (qh & 0x8000) ? -GGML_IQ1_DELTA : GGML_IQ1_DELTA;
            for (int l = 0; l < 4; l++, dst += 8) {
                const uint64_t g = gguf_ggml_iq1s_grid[qs[l] | (((qh >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; j++)
                    dst[j] = dl * ((float)(int8_t)ggml_grid_u8(g, j) + delta);
            }
        }
    }
}

void gguf_ggml_deq_iq1_m(const uint8_t *src, float *dst, int64_t n)
{
    /* block_iq1_m { u8 qs[32]; u8 qh[16]; u8 scales[8]; } = 56. The fp16
     * super-block scale is spread over the top nibbles of the four u16
     * scale words; each sub-block has two 3-bit scales (groups 0-1 and
     * 2-3); qh byte per group pair: 3 index bits + delta sign per group. */
    for (int64_t b = 0; b < n / QK_K; b++, src += 56) {
        const uint8_t *qs = src;
        const uint8_t *qh = src + 32;
        uint16_t sc[4];
        for (int i = 0; i < 4; i++)
            sc[i] = ggml_rd_u16(src + 48 + 2 * i);
        const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                          ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
        const float d = ggml_f16_to_f32(dbits);
        for (int ib = 0; ib < 8; ib++, qs += 4, qh += 2) {
            const float dl1 = d * (float)(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 7) + 1);
            const float dl2 = d * (float)(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1);
            for (int l = 0; l < 4; l++, dst += 8) {
                const uint8_t h = qh[l / 2];
                /* even group: low nibble of h; odd group: high nibble */
                const int idx = qs[l] | ((l % 2 ? (h << 4) : (h << 8)) & 0x700);
                const uint8_t dbit = l % 2 ? 0x80 : 0x08;
                const float delta = (h & dbit) ? -GGML_IQ1_DELTA : GGML_IQ1_DELTA;
                const float dl = l < 2 ? dl1 : dl2;
                const uint64_t g = gguf_ggml_iq1s_grid[idx];
                for (int j = 0; j < 8; j++)
                    dst[j] = dl * ((float)(int8_t)ggml_grid_u8(g, j) + delta);
            }
        }
    }
}
