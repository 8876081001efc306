/*
 * K-quant super-block quantizers (Q4_K, Q5_K, Q6_K; 256 elements), written
 * from the block layouts (docs/formats/gguf.md, "K-quants", "Quantizing
 * K-quants"). The search for each 32- (16-) element sub-block's scale and
 * minimum and the 6-bit (8-bit) quantization of those scales follow the
 * reference quantizers llama.cpp uses without an importance matrix
 * (ggml-quants.c quantize_row_q4_K_ref, _q5_K_ref, _q6_K_ref, with
 * make_qkx2_quants and make_qx_quants), operation for operation in float32.
 */
#include "ggml_quant.h"
#include "ggml_types.h"

#include <quantbridge/qb_half.h>

#include <math.h>
#include <string.h>

#define QK_K 256
/* GROUP_MAX_EPS in ggml-quants.c: a sub-block smaller than this is zero */
#define GROUP_EPS 1e-15f

/* Round to nearest, ties to even, for |v| < 2^22: adding 1.5 * 2^23 leaves
 * the integer in the low mantissa bits (nearest_int in ggml-quants.c). */
static int nearest(float v)
{
    float t = v + 12582912.f;
    int i = (int)(qb_f32_bits(t) & 0x007fffff) - 0x00400000;
    return i;
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Affine sub-block fit: codes L in [0, nmax] with x ~ scale * L - *neg_min,
 * minimising the weighted squared error over a grid of nstep + 1 trial
 * inverse scales around nmax / (max - min) (make_qkx2_quants). */
static float fit_affine(int n, int nmax, const float *x, const float *w, uint8_t *L, float *neg_min, uint8_t *aux,
                        float rmin, float rdelta, int nstep)
{
    float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
    float iscale, scale, best;
    int i, is;
    for (i = 1; i < n; i++) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0)
        min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.f;
    }
    iscale = nmax / (max - min);
    scale = 1 / iscale;
    best = 0;
    for (i = 0; i < n; i++) {
        int l = nearest(iscale * (x[i] - min));
        float diff;
        L[i] = (uint8_t)clampi(l, 0, nmax);
        diff = scale * L[i] + min - x[i];
        best += w[i] * (diff * diff);
    }
    for (is = 0; is <= nstep; is++) {
        float sum_l = 0, sum_l2 = 0, sum_xl = 0, D;
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        for (i = 0; i < n; i++) {
            int l = clampi(nearest(iscale * (x[i] - min)), 0, nmax);
            aux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            float err = 0;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            for (i = 0; i < n; i++) {
                float diff = this_scale * aux[i] + this_min - x[i];
                err += w[i] * (diff * diff);
            }
            if (err < best) {
                memcpy(L, aux, (size_t)n);
                best = err;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

/* Q4_K / Q5_K: eight 32-element sub-blocks, each fitted affinely, the
 * eight scales and minima quantized to 6 bits against d = max / 63. */
static void quant_qk45(const float *x, uint8_t *out, int five)
{
    const int nmax = five ? 31 : 15;
    uint8_t L[QK_K], aux[32], *s = out + 4;
    float w[32], mins[8], scales[8], max_scale = 0, max_min = 0, inv_s, inv_m, d, dmin;
    int j, l;
    memset(out, 0, five ? 176 : 144);
    for (j = 0; j < 8; j++) {
        float sum_x2 = 0, av;
        for (l = 0; l < 32; l++)
            sum_x2 += x[32 * j + l] * x[32 * j + l];
        av = sqrtf(sum_x2 / 32);
        for (l = 0; l < 32; l++)
            w[l] = av + fabsf(x[32 * j + l]);
        scales[j] = five ? fit_affine(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], aux, -0.5f, 0.1f, 15)
                         : fit_affine(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], aux, -1.f, 0.1f, 20);
        if (scales[j] > max_scale)
            max_scale = scales[j];
        if (mins[j] > max_min)
            max_min = mins[j];
    }
    inv_s = max_scale > 0 ? 63.f / max_scale : 0.f;
    inv_m = max_min > 0 ? 63.f / max_min : 0.f;
    for (j = 0; j < 8; j++) {
        uint8_t ls = (uint8_t)nearest(inv_s * scales[j]), lm = (uint8_t)nearest(inv_m * mins[j]);
        ls = ls > 63 ? 63 : ls;
        lm = lm > 63 ? 63 : lm;
        /* get_scale_min_k4's packing (docs/formats/gguf.md "K-quants") */
        if (j < 4) {
            s[j] = ls;
            s[j + 4] = lm;
        } else {
            s[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            s[j - 4] |= (uint8_t)((ls >> 4) << 6);
            s[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    put16(out, qb_f32_to_f16(max_scale / 63.f));
    put16(out + 2, qb_f32_to_f16(max_min / 63.f));
    d = qb_f16_to_f32(qb_f32_to_f16(max_scale / 63.f));
    dmin = qb_f16_to_f32(qb_f32_to_f16(max_min / 63.f));
    for (j = 0; j < 8; j++) {
        int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        const float dl = d * sc, ml = dmin * m;
        if (!dl)
            continue;
        for (l = 0; l < 32; l++)
            L[32 * j + l] = (uint8_t)clampi(nearest((x[32 * j + l] + ml) / dl), 0, nmax);
    }
    if (!five) {
        uint8_t *q = out + 16;
        for (j = 0; j < QK_K; j += 64, q += 32)
            for (l = 0; l < 32; l++)
                q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
    } else {
        uint8_t *qh = out + 16, *ql = out + 48, m1 = 1, m2 = 2;
        for (j = 0; j < QK_K; j += 64, ql += 32, m1 <<= 2, m2 <<= 2)
            for (l = 0; l < 32; l++) {
                int l1 = L[j + l], l2 = L[j + l + 32];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[l] |= m1;
                }
                if (l2 > 15) {
                    l2 -= 16;
                    qh[l] |= m2;
                }
                ql[l] = (uint8_t)(l1 | (l2 << 4));
            }
    }
}

/* Symmetric fit of one 16-element sub-block with codes in [-nmax, nmax-1],
 * weights x^2, trying 19 inverse scales around -nmax / max (make_qx_quants
 * with rmse_type 1). L gets code + nmax. */
static float fit_sym(int n, int nmax, const float *x, int8_t *L)
{
    float max = 0, amax = 0, iscale, sumlx = 0, suml2 = 0, scale, best;
    int i, is;
    for (i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    iscale = -nmax / max;
    for (i = 0; i < n; i++) {
        int l = clampi(nearest(iscale * x[i]), -nmax, nmax - 1);
        float w = x[i] * x[i];
        L[i] = (int8_t)(l + nmax);
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    scale = suml2 ? sumlx / suml2 : 0.0f;
    best = scale * sumlx;
    for (is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (i = 0; i < n; i++) {
            int l = clampi(nearest(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + clampi(nearest(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Q6_K: sixteen 16-element sub-blocks, signed 8-bit scales against one
 * fp16 d (quantize_row_q6_K_ref). */
static void quant_q6_k(const float *x, uint8_t *out)
{
    int8_t L[QK_K];
    float scales[16], max_scale = 0, max_abs = 0, iscale, d;
    uint8_t *ql = out, *qh = out + 128;
    int8_t *sc = (int8_t *)(out + 192);
    int j, l;
    memset(out, 0, 210);
    for (j = 0; j < 16; j++) {
        scales[j] = fit_sym(16, 32, x + 16 * j, L + 16 * j);
        if (fabsf(scales[j]) > max_abs) {
            max_abs = fabsf(scales[j]);
            max_scale = scales[j];
        }
    }
    if (max_abs < GROUP_EPS)
        return; /* all zero, d = 0 */
    iscale = -128.f / max_scale;
    put16(out + 208, qb_f32_to_f16(1 / iscale));
    d = qb_f16_to_f32(qb_f32_to_f16(1 / iscale));
    for (j = 0; j < 16; j++) {
        int v = nearest(iscale * scales[j]);
        sc[j] = (int8_t)(v > 127 ? 127 : v);
    }
    for (j = 0; j < 16; j++) {
        const float dl = d * sc[j];
        if (!dl)
            continue;
        for (l = 0; l < 16; l++)
            L[16 * j + l] = (int8_t)(clampi(nearest(x[16 * j + l] / dl), -32, 31) + 32);
    }
    for (j = 0; j < QK_K; j += 128, ql += 64, qh += 32)
        for (l = 0; l < 32; l++) {
            const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF,
                      q4 = L[j + l + 96] & 0xF;
            ql[l] = (uint8_t)(q1 | (q3 << 4));
            ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
            qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                              ((L[j + l + 96] >> 4) << 6));
        }
}

void gguf_ggml_quantize_k_row(uint32_t type, const float *x, uint8_t *dst, int64_t n)
{
    int64_t i;
    for (i = 0; i < n / QK_K; i++, x += QK_K)
        switch (type) {
        case GGUF_GGML_TYPE_Q4_K:
            quant_qk45(x, dst, 0), dst += 144;
            break;
        case GGUF_GGML_TYPE_Q5_K:
            quant_qk45(x, dst, 1), dst += 176;
            break;
        default: /* Q6_K */
            quant_q6_k(x, dst), dst += 210;
            break;
        }
}
