/*
 * w4a16_int4 — see w4a16_int4.h for the layout (docs/w4a16-format.md,
 * "Encoding of a packed linear").
 */
#include "w4a16_int4.h"

#include <string.h>

#include <quantbridge/qb_half.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

void w4a16_int4_pack_row(const int8_t *q, int64_t cols, uint8_t *out)
{
    int64_t c = 0;
#if defined(__SSE2__)
    /* 32 codes per step (SSE2 is part of x86-64): +8, then in each 16-bit
     * lane the odd column's nibble joins the even one's (perf: the byte
     * loop was ~8 % of a requantizing convert) */
    const __m128i k8 = _mm_set1_epi8(W4A16_INT4_BIAS), lo = _mm_set1_epi16(0x000f);
    for (; c + 32 <= cols; c += 32) {
        __m128i a = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(const void *)(q + c)), k8);
        __m128i b = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(const void *)(q + c + 16)), k8);
        a = _mm_or_si128(_mm_and_si128(a, lo), _mm_slli_epi16(_mm_srli_epi16(a, 8), 4));
        b = _mm_or_si128(_mm_and_si128(b, lo), _mm_slli_epi16(_mm_srli_epi16(b, 8), 4));
        _mm_storeu_si128((__m128i *)(void *)(out + c / 2), _mm_packus_epi16(a, b));
    }
#endif
    for (; c + 1 < cols; c += 2)
        out[c / 2] = (uint8_t)((unsigned)(q[c] + W4A16_INT4_BIAS) |
                               ((unsigned)(q[c + 1] + W4A16_INT4_BIAS) << 4));
    if (cols & 1)
        out[cols / 2] = (uint8_t)((unsigned)(q[cols - 1] + W4A16_INT4_BIAS) | (W4A16_INT4_BIAS << 4));
}

void w4a16_int4_unpack_row(const uint8_t *in, int64_t cols, int8_t *q)
{
    for (int64_t c = 0; c < cols; c++)
        q[c] = (int8_t)w4a16_int4_code(in, c);
}

void w4a16_int4_codes_f32(const uint8_t *in, int64_t cols, float *codes)
{
    /* a byte at a time: two columns per load, no parity test per column */
    int64_t c;
    for (c = 0; c + 1 < cols; c += 2) {
        unsigned b = in[c >> 1];
        codes[c] = (float)((int)(b & 0x0fu) - W4A16_INT4_BIAS);
        codes[c + 1] = (float)((int)(b >> 4) - W4A16_INT4_BIAS);
    }
    if (c < cols)
        codes[c] = (float)w4a16_int4_code(in, c);
}

void w4a16_int4_decode_row(const uint8_t *packed, const void *scales, int64_t cols,
                         int64_t group_size, const int32_t *perm, float *out)
{
    const uint8_t *sb = scales;
    int64_t k0, c;
    for (k0 = 0; k0 < cols; k0 += group_size) {
        int64_t k1 = cols - k0 > group_size ? k0 + group_size : cols;
        uint16_t h;
        float s;
        memcpy(&h, sb + 2 * (k0 / group_size), 2); /* mapped data may be unaligned */
        s = qb_f16_to_f32(h);
        if (perm)
            for (c = k0; c < k1; c++)
                out[perm[c]] = (float)w4a16_int4_code(packed, c) * s;
        else
            for (c = k0; c < k1; c++)
                out[c] = (float)w4a16_int4_code(packed, c) * s;
    }
}
