/*
 * quantbridge SDK — header-only IEEE half (binary16) and bfloat16
 * conversions, exact and portable (no compiler intrinsics), so every plugin
 * converts the same way without linking anything.
 *
 * STABILITY: stable. All functions are pure and thread-safe.
 *   qb_f16_to_f32 / qb_bf16_to_f32: exact (every value is representable).
 *   qb_f32_to_f16 / qb_f32_to_bf16: round to nearest, ties to even;
 *     overflow gives infinity, NaN stays NaN (quiet).
 */
#ifndef QUANTBRIDGE_QB_HALF_H
#define QUANTBRIDGE_QB_HALF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline uint32_t qb_f32_bits(float f)
{
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
}

static inline float qb_bits_f32(uint32_t u)
{
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
}

static inline float qb_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* inf / nan */
        return qb_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in float */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return qb_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t qb_f32_to_f16(float f)
{
    uint32_t x = qb_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
    if (ax >= 0x477ff000u) /* >= 65520 rounds to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {
        /* result is subnormal or zero: round ax * 2^24 to an integer, RNE */
        uint32_t e = ax >> 23;
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift;
        uint32_t r, rem, half;
        if (e < 102) /* < 2^-25: rounds to zero */
            return sign;
        shift = 126u - e; /* 14..24: value = m * 2^(e-150), want * 2^24 */
        r = m >> shift;
        rem = m & ((1u << shift) - 1u);
        half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u)))
            r++;
        return (uint16_t)(sign | r);
    }
    {
        /* normal: rebias exponent, round mantissa 23 -> 10 bits RNE; a
         * mantissa carry correctly bumps the exponent */
        uint32_t r = ax - 0x38000000u; /* exponent - 112 */
        uint32_t rem = r & 0x1fffu;
        r >>= 13;
        if (rem > 0x1000u || (rem == 0x1000u && (r & 1u)))
            r++;
        return (uint16_t)(sign | r);
    }
}

static inline float qb_bf16_to_f32(uint16_t b)
{
    return qb_bits_f32((uint32_t)b << 16);
}

static inline uint16_t qb_f32_to_bf16(float f)
{
    uint32_t x = qb_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* nan: keep it quiet and a nan */
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

#ifdef __cplusplus
}
#endif
#endif /* QUANTBRIDGE_QB_HALF_H */
