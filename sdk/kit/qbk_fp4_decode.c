/*
 * E2M1 / E8M0 decoding (qbk_fp4_decode.h). docs/formats/fp4.md "E2M1" and
 * "E8M0" state the bit layouts.
 */
#include "qbk_fp4_decode.h"

#include <math.h>

/* The eight E2M1 magnitudes in code order: exponent 0 is subnormal
 * (0, 0.5), then 1.0, 1.5 at exponent 1, 2, 3 at 2, 4, 6 at 3. */
static const float qbk_e2m1_magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

float qbk_fp4_e2m1_to_f32(uint8_t nib)
{
    const float m = qbk_e2m1_magnitude[nib & 7u];
    return (nib & 8u) ? -m : m;
}

float qbk_e8m0_to_f32(uint8_t e)
{
    if (e == 0xFFu)
        return NAN;
    return ldexpf(1.0f, (int)e - 127);
}

void qbk_fp4_e2m1_row_to_f32(const uint8_t *src, size_t n, float scale, float *dst)
{
    size_t i;
    for (i = 0; i + 1 < n; i += 2) {
        const uint8_t b = src[i / 2];
        dst[i] = qbk_fp4_e2m1_to_f32(b & 0x0Fu) * scale;
        dst[i + 1] = qbk_fp4_e2m1_to_f32(b >> 4) * scale;
    }
    if (i < n)
        dst[i] = qbk_fp4_e2m1_to_f32(src[i / 2] & 0x0Fu) * scale;
}
