/*
 * GPTQ reader — bit layout of qweight / qzeros / scales (docs/formats/gptq.md).
 *
 *   qweight [ceil(K*bits/W), N]: codes packed along K (down the rows), value
 *     k of column n at bits [k*bits, k*bits+bits) of the little-endian bit
 *     stream formed by that column's words; for 2/4/8 bits no value crosses
 *     a word, for 3 bits three 32-bit words hold 32 values and values 10 and
 *     21 straddle (AutoGPTQ qlinear_cuda_old.py QuantLinear.pack, 3-bit
 *     branch: `qweight[row] |= intweight[i] << 30` then `>> 2`; GPTQModel
 *     model_dequant _unpack_rows_3bit);
 *   qzeros [G, ceil(N*bits/W)]: zero points packed the same way along N
 *     (QuantLinear.pack qzeros loop);
 *   scales [G, N] float;
 *   W = bits of the storage word: int32 normally, GPTQModel pack_dtype may
 *     make it 8/16/64 (GPTQModel GPTQQuantLinear._register_gptq_buffers).
 * Real zero = (stored + zero_add) & mask, zero_add 1 for v1 (QuantLinear.pack
 * `zeros -= 1`; QuantLinear.forward `zeros = zeros + 1`; GPTQModel
 * _correct_gptq_v1_qzeros masks the same way), 0 for v2.
 */
#include "gptq_layout.h"

#include <string.h>

static void gptq_codes(const qlinear_tensor *t, int64_t n0, int64_t nr, uint8_t *codes)
{
    const uint32_t W = t->word_bits, b = t->bits;
    const uint64_t N = (uint64_t)t->N;
    int64_t r, k;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (W == 32 && b == 4 && t->K % 8 == 0 && t->qweight->n_bytes >= (uint64_t)t->K / 2 * N) {
        /* the common 4-bit int32 layout: one load and eight nibbles per
         * word, no per-code bounds test (perf: the generic loop below and
         * its qlinear_word calls were ~30 % of an exact GPTQ repack) */
        const uint8_t *base = t->qweight->data;
        const int64_t nw = t->K / 8;
        int64_t wb, w;
        /* 8 words (64 codes, one cache line of a codes row) per row at a
         * time: writing 8 bytes to every row at stride K put all rows in one
         * L1 set for K = 4096 (perf: 31 % of a 7B exact repack) */
        for (wb = 0; wb < nw; wb += 8) {
            const int64_t we = wb + 8 < nw ? wb + 8 : nw;
            for (r = 0; r < nr; r++) {
                uint8_t *dst = codes + r * t->K;
                for (w = wb; w < we; w++) {
                    uint32_t v;
                    uint64_t x;
                    memcpy(&v, base + 4 * ((uint64_t)w * N + (uint64_t)(n0 + r)), 4);
                    /* nibble j -> byte j in a few word operations (SWAR):
                     * spread the 8 nibbles to the low halves of 8 bytes */
                    x = (uint64_t)v;
                    x = (x | (x << 16)) & 0x0000ffff0000ffffull;
                    x = (x | (x << 8)) & 0x00ff00ff00ff00ffull;
                    x = (x | (x << 4)) & 0x0f0f0f0f0f0f0f0full;
                    memcpy(dst + w * 8, &x, 8);
                }
            }
        }
        return;
    }
#endif
    if (W % b == 0) {
        /* no value straddles: walk qweight rows so reads stay contiguous in n */
        const uint32_t pf = W / b;
        const uint64_t mask = ((uint64_t)1 << b) - 1;
        int64_t rows = (t->K + pf - 1) / pf, w;
        for (w = 0; w < rows; w++) {
            for (r = 0; r < nr; r++) {
                uint64_t v = qlinear_word(t->qweight, (uint64_t)w * N + (uint64_t)(n0 + r));
                uint32_t j;
                for (j = 0; j < pf; j++) {
                    k = w * pf + j;
                    if (k >= t->K)
                        break;
                    codes[r * t->K + k] = (uint8_t)((v >> (j * b)) & mask);
                }
            }
        }
        return;
    }
    for (r = 0; r < nr; r++)
        for (k = 0; k < t->K; k++)
            codes[r * t->K + k] =
                (uint8_t)qlinear_field(t->qweight, (uint64_t)(n0 + r), N, W, b, (uint64_t)k);
}

/* real zero of group g, row n: field n of row g of qzeros plus the
 * convention's zero_add, masked to the code width */
static int32_t gptq_zero(const qlinear_tensor *t, uint32_t g, uint64_t n)
{
    uint32_t raw = qlinear_field(t->qzeros, (uint64_t)g * (uint64_t)t->qzeros->dims[1], 1,
                                     qlinear_word_bits(t->qzeros->dtype), t->bits, n);
    return (int32_t)((raw + (uint32_t)t->zero_add) & ((1u << t->bits) - 1));
}

static void gptq_params_rows(const qlinear_tensor *t, int64_t n0, int64_t nr, float *scales,
                             int32_t *zeros)
{
    qlinear_params_rows(t, n0, nr, scales, zeros, gptq_zero);
}

const qlinear_decoder gptq_decoder = {gptq_codes, gptq_params_rows};

void gptq_stored_zero_uniform(const qlinear_tensor *t, int *all_lo, int *all_hi)
{
    const uint32_t lo = (1u << (t->bits - 1)) - 1, hi = 1u << (t->bits - 1);
    const uint64_t zcols = (uint64_t)t->qzeros->dims[1];
    const uint32_t W = qlinear_word_bits(t->qzeros->dtype);
    uint32_t g;
    int64_t n;
    *all_lo = *all_hi = 1;
    for (g = 0; g < t->G && (*all_lo || *all_hi); g++)
        for (n = 0; n < t->N; n++) {
            uint32_t raw = qlinear_field(t->qzeros, (uint64_t)g * zcols, 1, W, t->bits, (uint64_t)n);
            if (raw != lo)
                *all_lo = 0;
            if (raw != hi)
                *all_hi = 0;
            if (!*all_lo && !*all_hi)
                break;
        }
}
