/*
 * AWQ reader — GEMM and GEMV bit layouts (formats.md §2.3, §2.4), checked
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

static const uint32_t awq_reverse_order[8] = {0, 4, 1, 5, 2, 6, 3, 7};

static void awq_gemm_codes(const qlr_tensor *t, int64_t n0, int64_t nr, uint8_t *codes)
{
    const uint64_t wpr = (uint64_t)t->N / 8; /* words per qweight row */
    int64_t k, r;
    for (k = 0; k < t->K; k++)
        for (r = 0; r < nr; r++) {
            uint64_t n = (uint64_t)(n0 + r);
            uint64_t w = qlr_word(t->qweight, (uint64_t)k * wpr + n / 8);
            codes[r * t->K + k] = (uint8_t)((w >> (4 * awq_reverse_order[n % 8])) & 15u);
        }
}

static void awq_gemm_params(const qlr_tensor *t, int64_t n0, int64_t nr, float *scales,
                            int32_t *zeros)
{
    const uint64_t wpr = (uint64_t)t->N / 8;
    int64_t r;
    uint32_t g;
    for (r = 0; r < nr; r++) {
        uint64_t n = (uint64_t)(n0 + r);
        for (g = 0; g < t->G; g++) {
            scales[r * t->G + g] = qlr_float_at(t->scales, (uint64_t)g * (uint64_t)t->N + n);
            if (t->qzeros) {
                uint64_t w = qlr_word(t->qzeros, (uint64_t)g * wpr + n / 8);
                zeros[r * t->G + g] = (int32_t)((w >> (4 * awq_reverse_order[n % 8])) & 15u);
            } else {
                zeros[r * t->G + g] = t->implicit_zero;
            }
        }
    }
}

static void awq_gemv_codes(const qlr_tensor *t, int64_t n0, int64_t nr, uint8_t *codes)
{
    const uint64_t wpr = (uint64_t)t->qweight->dims[1];
    int64_t k, r;
    for (r = 0; r < nr; r++) {
        uint64_t base = (uint64_t)(n0 + r) * wpr;
        for (k = 0; k < t->K; k++) {
            uint64_t w = qlr_word(t->qweight, base + (uint64_t)k / 8);
            codes[r * t->K + k] = (uint8_t)((w >> (4 * (k % 8))) & 15u);
        }
    }
}

static void awq_gemv_params(const qlr_tensor *t, int64_t n0, int64_t nr, float *scales,
                            int32_t *zeros)
{
    const uint64_t scols = (uint64_t)t->scales->dims[1];
    int64_t r;
    uint32_t g;
    for (r = 0; r < nr; r++) {
        uint64_t n = (uint64_t)(n0 + r);
        for (g = 0; g < t->G; g++) {
            scales[r * t->G + g] = qlr_float_at(t->scales, n * scols + g);
            if (t->qzeros) {
                uint64_t zc = (uint64_t)t->qzeros->dims[1];
                uint64_t w = qlr_word(t->qzeros, n * zc + g / 8);
                zeros[r * t->G + g] = (int32_t)((w >> (4 * (g % 8))) & 15u);
            } else {
                zeros[r * t->G + g] = t->implicit_zero;
            }
        }
    }
}

const qlr_decoder awq_gemm_decoder = {awq_gemm_codes, awq_gemm_params};
const qlr_decoder awq_gemv_decoder = {awq_gemv_codes, awq_gemv_params};

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
