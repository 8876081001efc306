/*
 * The MXFP4 element value from the definitions alone, written apart from
 * the kit's decoder (docs/formats/fp4.md): E2M1 magnitude table with the
 * sign bit, times 2^(e - 127) by ldexp. Element k of stored row j of expert
 * e of a `_blocks` [E, R, G, 16] / `_scales` [E, R, G] pair: byte k/2 of
 * block k/32, low nibble for even k.
 */
#ifndef MX_ORACLE_H
#define MX_ORACLE_H

#include <math.h>
#include <stdint.h>

static inline double mx_oracle(const uint8_t *blocks, const uint8_t *scales, int64_t R, int64_t G,
                               int64_t e, int64_t j, int64_t k)
{
    static const double mag[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    int64_t g = k / 32, blk = (e * R + j) * G + g;
    uint8_t byte = blocks[blk * 16 + (k % 32) / 2];
    unsigned nib = (k & 1) ? byte >> 4 : byte & 15u;
    double v = ldexp(mag[nib & 7], (int)scales[blk] - 127);
    return (nib & 8) ? -v : v;
}

#endif
