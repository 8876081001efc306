/*
 * sm86-w4a16 — the nibble layout of a packed linear (w4a16-format.md,
 * "Encoding of a packed linear"): byte c/2 of a row holds column c in its
 * low nibble when c is even, high nibble when odd; a nibble stores q + 8;
 * with odd in_features the unused last high nibble is 8 (q = 0).
 */
#include "w4w.h"

void w4w_pack_row(const int8_t *q, int64_t cols, uint8_t *out)
{
    int64_t c;
    for (c = 0; c + 1 < cols; c += 2)
        out[c / 2] = (uint8_t)((unsigned)(q[c] + 8) | ((unsigned)(q[c + 1] + 8) << 4));
    if (cols & 1)
        out[cols / 2] = (uint8_t)((unsigned)(q[cols - 1] + 8) | (8u << 4));
}

void w4w_unpack_row(const uint8_t *in, int64_t cols, int8_t *q)
{
    int64_t c;
    for (c = 0; c < cols; c++) {
        unsigned b = in[c / 2];
        unsigned nib = (c & 1) ? (b >> 4) : (b & 0xfu);
        q[c] = (int8_t)((int)nib - 8);
    }
}

void w4w_decode_row(const uint8_t *packed, const uint16_t *scales, int64_t cols, int64_t group_size,
                    float *out)
{
    int64_t c;
    for (c = 0; c < cols; c++) {
        unsigned b = packed[c / 2];
        int q = (int)((c & 1) ? (b >> 4) : (b & 0xfu)) - 8;
        out[c] = (float)q * qb_f16_to_f32(scales[c / group_size]);
    }
}
