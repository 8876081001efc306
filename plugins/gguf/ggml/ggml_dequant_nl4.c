/*
 * 4-bit codebook types: IQ4_NL, IQ4_XS (non-linear int8 codebook
 * kvalues_iq4nl) and MXFP4, NVFP4 (E2M1 codebook kvalues_mxfp4, stored
 * doubled as int8, with a halved power-of-two / UE4M3 scale).
 *
 * Layouts: ggml-common.h block_iq4_nl, block_iq4_xs, block_mxfp4,
 * block_nvfp4 (docs/formats/gguf.md, "Codebook blocks"). Float operations follow ggml-quants.c
 * dequantize_row_iq4_nl / _iq4_xs / _mxfp4 / _nvfp4; the scale helpers
 * follow ggml-impl.h ggml_e8m0_to_fp32_half and ggml_ue4m3_to_fp32.
 */
#include "ggml_dequant_impl.h"
#include "ggml_iq_grids.h"

#include <math.h>

void gguf_ggml_deq_iq4_nl(const uint8_t *src, float *dst, int64_t n)
{
    /* block_iq4_nl { f16 d; u8 qs[16]; } = 18, split-half nibbles */
    for (int64_t b = 0; b < n / 32; b++, src += 18, dst += 32) {
        const float d = ggml_rd_f16(src);
        const uint8_t *qs = src + 2;
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)gguf_ggml_kvalues_iq4nl[qs[j] & 0x0F];
            dst[j + 16] = d * (float)gguf_ggml_kvalues_iq4nl[qs[j] >> 4];
        }
    }
}

void gguf_ggml_deq_iq4_xs(const uint8_t *src, float *dst, int64_t n)
{
    /* block_iq4_xs { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]; } =
     * 136; sub-block ib has a 6-bit scale ls (4 low bits in scales_l, 2
     * high bits in scales_h), dl = d * (ls - 32). */
    for (int64_t b = 0; b < n / GGML_QK_K; b++, src += 136) {
        const float d = ggml_rd_f16(src);
        const uint16_t scales_h = ggml_rd_u16(src + 2);
        const uint8_t *scales_l = src + 4;
        const uint8_t *qs = src + 8;
        for (int ib = 0; ib < 8; ib++, qs += 16, dst += 32) {
            const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) |
                           (((scales_h >> (2 * ib)) & 3) << 4);
            const float dl = d * (float)(ls - 32);
            for (int j = 0; j < 16; j++) {
                dst[j] = dl * (float)gguf_ggml_kvalues_iq4nl[qs[j] & 0x0F];
                dst[j + 16] = dl * (float)gguf_ggml_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}

/* 2^(e - 128), i.e. half the E8M0 value (ggml_e8m0_to_fp32_half): e < 2
 * gives the subnormals 2^-128 and 2^-127. E = 0xFF (NaN in OCP MX) is not
 * special-cased upstream either and decodes to 2^127. */
static float ggml_e8m0_half(uint8_t e)
{
    const uint32_t bits = e < 2 ? (0x00200000u << e) : ((uint32_t)(e - 1) << 23);
    return qb_bits_f32(bits);
}

void gguf_ggml_deq_mxfp4(const uint8_t *src, float *dst, int64_t n)
{
    /* block_mxfp4 { u8 e; u8 qs[16]; } = 17, split-half nibbles */
    for (int64_t b = 0; b < n / 32; b++, src += 17, dst += 32) {
        const float d = ggml_e8m0_half(src[0]);
        const uint8_t *qs = src + 1;
        for (int j = 0; j < 16; j++) {
            dst[j] = (float)gguf_ggml_kvalues_mxfp4[qs[j] & 0x0F] * d;
            dst[j + 16] = (float)gguf_ggml_kvalues_mxfp4[qs[j] >> 4] * d;
        }
    }
}

/* Half the UE4M3 value (ggml_ue4m3_to_fp32): 0 and 0x7F (NaN) give 0; all
 * steps are exact in float. */
static float ggml_ue4m3_half(uint8_t x)
{
    const int exp = (x >> 3) & 0x0F;
    const int man = x & 7;
    float raw;
    if (x == 0 || x == 0x7F)
        return 0.0f;
    if (exp == 0)
        raw = ldexpf((float)man, -9);
    else
        raw = ldexpf(1.0f + (float)man / 8.0f, exp - 7);
    return raw * 0.5f;
}

void gguf_ggml_deq_nvfp4(const uint8_t *src, float *dst, int64_t n)
{
    /* block_nvfp4 { u8 d[4]; u8 qs[32]; } = 36, 64 elements in 4
     * sub-blocks of 16, each split-half over its 8 bytes */
    for (int64_t b = 0; b < n / 64; b++, src += 36) {
        for (int s = 0; s < 4; s++, dst += 16) {
            const float d = ggml_ue4m3_half(src[s]);
            const uint8_t *qs = src + 4 + 8 * s;
            for (int j = 0; j < 8; j++) {
                dst[j] = (float)gguf_ggml_kvalues_mxfp4[qs[j] & 0x0F] * d;
                dst[j + 8] = (float)gguf_ggml_kvalues_mxfp4[qs[j] >> 4] * d;
            }
        }
    }
}
