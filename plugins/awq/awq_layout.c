/*
 * AWQ reader — GEMM and GEMV bit layouts (docs/formats/awq.md, "GEMM layout", "GEMV layout"), checked
 * against casper-hansen/AutoAWQ:
 *
 * GEMM (awq/modules/linear/gemm.py WQLinear_GEMM.__init__/from_linear):
 *   qweight I32 [K, N/8] packs 8 output columns per word; nibble i of word c
 *   holds column 8c + AWQ_ORDER[i], AWQ_ORDER = [0,2,4,6,1,3,5,7]
 *   (from_linear order_map), so column n sits in nibble
 *   AWQ_REVERSE_ORDER[n % 8], AWQ_REVERSE_ORDER = [0,4,1,5,2,6,3,7]
 *   (awq/utils/packing_utils.py reverse_awq_order). qzeros I32 [K/gs, N/8]
 *   is packed with the same order; scales F16 [K/gs, N].
 * GEMV (awq/modules/linear/gemv.py WQLinear_GEMV.__init__/from_linear):
 *   qweight I32 [N, K/8] packs 8 input columns per word in sequential order
 *   (order_map [0..7]); qzeros I32 [N, Wz] packs group zeros sequentially;
 *   scales F16 [N, 8*Wz]; only the first K/gs scales/zeros of a row are
 *   real, the rest is zero padding (calculate_zeros_width).
 * Zeros are stored as computed, no offset (AwqQuantizer.pseudo_quantize_
 * tensor; dequantize_gemm computes (iweight - izeros) * scales).
 */
#include "awq_layout.h"

#include <string.h>

static const uint32_t awq_reverse_order[8] = {0, 4, 1, 5, 2, 6, 3, 7};
static const uint32_t awq_order[8] = {0, 2, 4, 6, 1, 3, 5, 7};

/* tr[i] byte j = nibble i of v[j]: an 8 x 8 nibble transpose. SSE2 (every
 * x86-64): nibbles spread to bytes, then three unpack rounds; elsewhere the
 * same by shifts. perf: the shift-per-nibble loop was ~19 % of a 7B AWQ
 * convert. */
#if defined(__SSE2__)
#include <emmintrin.h>
static void awq_transpose8(const uint32_t v[8], uint64_t tr[8])
{
    const __m128i m = _mm_set1_epi8(0x0f);
    __m128i w0 = _mm_loadu_si128((const __m128i *)(const void *)v);
    __m128i w1 = _mm_loadu_si128((const __m128i *)(const void *)(v + 4));
    __m128i l0 = _mm_and_si128(w0, m), h0 = _mm_and_si128(_mm_srli_epi32(w0, 4), m);
    __m128i l1 = _mm_and_si128(w1, m), h1 = _mm_and_si128(_mm_srli_epi32(w1, 4), m);
    /* rows (one per word, byte i = nibble i): r01 holds rows 0 and 1, ... */
    __m128i r01 = _mm_unpacklo_epi8(l0, h0), r23 = _mm_unpackhi_epi8(l0, h0);
    __m128i r45 = _mm_unpacklo_epi8(l1, h1), r67 = _mm_unpackhi_epi8(l1, h1);
    __m128i a0 = _mm_unpacklo_epi8(r01, _mm_unpackhi_epi64(r01, r01));
    __m128i a1 = _mm_unpacklo_epi8(r23, _mm_unpackhi_epi64(r23, r23));
    __m128i a2 = _mm_unpacklo_epi8(r45, _mm_unpackhi_epi64(r45, r45));
    __m128i a3 = _mm_unpacklo_epi8(r67, _mm_unpackhi_epi64(r67, r67));
    __m128i b0 = _mm_unpacklo_epi16(a0, a1), b1 = _mm_unpackhi_epi16(a0, a1);
    __m128i b2 = _mm_unpacklo_epi16(a2, a3), b3 = _mm_unpackhi_epi16(a2, a3);
    _mm_storeu_si128((__m128i *)(void *)tr, _mm_unpacklo_epi32(b0, b2));
    _mm_storeu_si128((__m128i *)(void *)(tr + 2), _mm_unpackhi_epi32(b0, b2));
    _mm_storeu_si128((__m128i *)(void *)(tr + 4), _mm_unpacklo_epi32(b1, b3));
    _mm_storeu_si128((__m128i *)(void *)(tr + 6), _mm_unpackhi_epi32(b1, b3));
}
#else
static void awq_transpose8(const uint32_t v[8], uint64_t tr[8])
{
    int i, j;
    for (i = 0; i < 8; i++) {
        uint64_t out = 0;
        for (j = 0; j < 8; j++)
            out |= (uint64_t)((v[j] >> (4 * i)) & 15u) << (8 * j);
        tr[i] = out;
    }
}
#endif

static void awq_gemm_codes(const qlinear_tensor *t, int64_t n0, int64_t nr, uint8_t *codes)
{
    const uint64_t wpr = (uint64_t)t->N / 8; /* words per qweight row */
    int64_t k, r;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (t->qweight->dtype == QB_DT_I32 && t->qweight->n_bytes >= (uint64_t)t->K * wpr * 4) {
        /* tiles of 8 k x one word (8 columns): each column's 8 codes leave
         * as one 8-byte store. perf: a qlinear_word call per code was ~35 % of
         * an AWQ convert, then byte stores at stride K (all in one L1 set
         * for K = 4096) ~25 %. Nibble i of a word is column 8c + AWQ_ORDER[i]. */
        const uint8_t *base = t->qweight->data;
        const int64_t c0 = n0 / 8, c1 = (n0 + nr + 7) / 8;
        for (k = 0; k < t->K; k += 8) {
            const int64_t kt = t->K - k < 8 ? t->K - k : 8;
            int64_t c;
            for (c = c0; c < c1; c++) {
                uint32_t v[8], i;
                uint64_t tr[8];
                int64_t j;
                for (j = 0; j < kt; j++)
                    memcpy(&v[j], base + 4 * ((uint64_t)(k + j) * wpr + (uint64_t)c), 4);
                if (kt == 8)
                    awq_transpose8(v, tr);
                for (i = 0; i < 8; i++) {
                    const int64_t col = 8 * c + awq_order[i];
                    uint8_t *dst;
                    if (col < n0 || col >= n0 + nr)
                        continue;
                    dst = codes + (col - n0) * t->K + k;
                    if (kt == 8) {
                        memcpy(dst, &tr[i], 8);
                    } else {
                        for (j = 0; j < kt; j++)
                            dst[j] = (uint8_t)((v[j] >> (4 * i)) & 15u);
                    }
                }
            }
        }
        return;
    }
#endif
    for (k = 0; k < t->K; k++)
        for (r = 0; r < nr; r++) {
            uint64_t n = (uint64_t)(n0 + r);
            uint64_t w = qlinear_word(t->qweight, (uint64_t)k * wpr + n / 8);
            codes[r * t->K + k] = (uint8_t)((w >> (4 * awq_reverse_order[n % 8])) & 15u);
        }
}

/* stored zero of group g, row n: row g of qzeros, AWQ order within a word */
static int32_t awq_gemm_zero(const qlinear_tensor *t, uint32_t g, uint64_t n)
{
    uint64_t w = qlinear_word(t->qzeros, (uint64_t)g * ((uint64_t)t->N / 8) + n / 8);
    return (int32_t)((w >> (4 * awq_reverse_order[n % 8])) & 15u);
}

static void awq_gemm_params(const qlinear_tensor *t, int64_t n0, int64_t nr, float *scales,
                            int32_t *zeros)
{
    qlinear_params_rows(t, n0, nr, scales, zeros, awq_gemm_zero);
}

static void awq_gemv_codes(const qlinear_tensor *t, int64_t n0, int64_t nr, uint8_t *codes)
{
    const uint64_t wpr = (uint64_t)t->qweight->dims[1];
    int64_t k, r;
    for (r = 0; r < nr; r++) {
        uint64_t base = (uint64_t)(n0 + r) * wpr;
        for (k = 0; k < t->K; k++) {
            uint64_t w = qlinear_word(t->qweight, base + (uint64_t)k / 8);
            codes[r * t->K + k] = (uint8_t)((w >> (4 * (k % 8))) & 15u);
        }
    }
}

static void awq_gemv_params(const qlinear_tensor *t, int64_t n0, int64_t nr, float *scales,
                            int32_t *zeros)
{
    const uint64_t scols = (uint64_t)t->scales->dims[1];
    int64_t r;
    uint32_t g;
    for (r = 0; r < nr; r++) {
        uint64_t n = (uint64_t)(n0 + r);
        for (g = 0; g < t->G; g++) {
            scales[r * t->G + g] = qlinear_float_at(t->scales, n * scols + g);
            if (t->qzeros) {
                uint64_t zc = (uint64_t)t->qzeros->dims[1];
                uint64_t w = qlinear_word(t->qzeros, n * zc + g / 8);
                zeros[r * t->G + g] = (int32_t)((w >> (4 * (g % 8))) & 15u);
            } else {
                zeros[r * t->G + g] = t->implicit_zero;
            }
        }
    }
}

const qlinear_decoder awq_gemm_decoder = {awq_gemm_codes, awq_gemm_params};
const qlinear_decoder awq_gemv_decoder = {awq_gemv_codes, awq_gemv_params};

int64_t awq_gemv_zeros_width(int64_t K, int64_t gs)
{
    /* calculate_zeros_width: ceil(ceil(K/gs / 8) / m) * m, m by group size;
     * AutoAWQ's make_divisible(c, d) is ceil(c / d) */
    int64_t m, base;
    if (gs >= 128)
        m = 1;
    else if (gs == 64)
        m = 2;
    else if (gs == 32)
        m = 4;
    else
        return -1;
    base = (K / gs + 7) / 8;
    return (base + m - 1) / m * m;
}
