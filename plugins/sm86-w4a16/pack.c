/*
 * sm86-w4a16 — the nibble layout of a packed linear (w4a16-format.md,
 * "Encoding of a packed linear"): byte c/2 of a row holds column c in its
 * low nibble when c is even, high nibble when odd; a nibble stores q + 8;
 * with odd in_features the unused last high nibble is 8 (q = 0).
 */
#include "w4w.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

void w4w_pack_row(const int8_t *q, int64_t cols, uint8_t *out)
{
    int64_t c = 0;
#if defined(__SSE2__)
    /* 32 codes per step (SSE2 is part of x86-64): +8, then in each 16-bit
     * lane the odd column's nibble joins the even one's (perf: the byte
     * loop was ~8 % of a requantizing convert) */
    const __m128i k8 = _mm_set1_epi8(8), lo = _mm_set1_epi16(0x000f);
    for (; c + 32 <= cols; c += 32) {
        __m128i a = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(const void *)(q + c)), k8);
        __m128i b = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(const void *)(q + c + 16)), k8);
        a = _mm_or_si128(_mm_and_si128(a, lo), _mm_slli_epi16(_mm_srli_epi16(a, 8), 4));
        b = _mm_or_si128(_mm_and_si128(b, lo), _mm_slli_epi16(_mm_srli_epi16(b, 8), 4));
        _mm_storeu_si128((__m128i *)(void *)(out + c / 2), _mm_packus_epi16(a, b));
    }
#endif
    for (; c + 1 < cols; c += 2)
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
