/* fp8 reader — exact FP8 / F16 / BF16 / F32 decoding. See fp8_decode.h. */
#include "qbk_fp8_decode.h"

#include <string.h>

#include <quantbridge/qb_half.h>


float qbk_fp8_e4m3fn_to_f32(uint8_t b)
{
    uint32_t sign = (uint32_t)(b & 0x80u) << 24;
    uint32_t exp = (b >> 3) & 0xfu;
    uint32_t man = b & 0x7u;
    float v;

    /* E4M3FN ("finite"): the all-ones exponent still holds normal numbers
     * (256..448); only mantissa 111 there is NaN (OCP OFP8 spec, table 1). */
    if (exp == 0xfu && man == 0x7u)
        return qb_bits_f32(sign | 0x7fc00000u);
    if (exp == 0) {
        /* subnormal: man * 2^-9, exact in float */
        v = (float)man * 0.001953125f;
        return sign ? -v : v;
    }
    /* rebias 7 -> 127 and widen the 3-bit mantissa to 23 bits */
    return qb_bits_f32(sign | ((exp + 120u) << 23) | (man << 20));
}

float qbk_fp8_e5m2_to_f32(uint8_t b)
{
    /* E5M2 is the upper byte of an IEEE binary16 with the same sign,
     * exponent and the two top mantissa bits, so the f16 decoder is exact
     * for it, infinities and NaNs included. */
    return qb_f16_to_f32((uint16_t)((uint16_t)b << 8));
}

int qbk_float_store_ok(qb_dtype dt)
{
    return qbk_float_store_size(dt) != 0;
}

size_t qbk_float_store_size(qb_dtype dt)
{
    switch (dt) {
    case QB_DT_F32:
        return 4;
    case QB_DT_F16:
    case QB_DT_BF16:
        return 2;
    case QB_DT_F8_E4M3:
    case QB_DT_F8_E5M2:
        return 1;
    default:
        return 0;
    }
}

void qbk_float_store_to_f32(qb_dtype dt, const uint8_t *src, size_t n, float *dst)
{
    size_t i;
    uint16_t h;

    switch (dt) {
    case QB_DT_F32:
        memcpy(dst, src, n * 4);
        break;
    case QB_DT_F16:
        for (i = 0; i < n; i++) {
            h = (uint16_t)(src[2 * i] | (src[2 * i + 1] << 8));
            dst[i] = qb_f16_to_f32(h);
        }
        break;
    case QB_DT_BF16:
        for (i = 0; i < n; i++) {
            h = (uint16_t)(src[2 * i] | (src[2 * i + 1] << 8));
            dst[i] = qb_bf16_to_f32(h);
        }
        break;
    case QB_DT_F8_E4M3:
        for (i = 0; i < n; i++)
            dst[i] = qbk_fp8_e4m3fn_to_f32(src[i]);
        break;
    case QB_DT_F8_E5M2:
        for (i = 0; i < n; i++)
            dst[i] = qbk_fp8_e5m2_to_f32(src[i]);
        break;
    default:
        break;
    }
}
