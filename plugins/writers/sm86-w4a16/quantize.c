/*
 * sm86-w4a16 — choosing int4 codes and one fp16 scale per group.
 *
 * The format decodes w = q * scale in fp32 with q in [-8, 7] and the scale
 * stored in fp16 (w4a16-format.md, "Encoding of a packed linear"). So every
 * candidate scale is first rounded to fp16, and codes and error are computed
 * against the rounded value: the error measured is the error of the file.
 *
 * Rules:
 *   ABSMAX  scale = absmax / 7, q = clamp(round(w / scale), -8, 7).
 *   SEARCH  least squared error over a small grid of scales:
 *           absmax/7 * f and s*absmax/8 * f for f in {0.80, 0.81, ..., 1.05},
 *           where s is the sign that maps the largest-magnitude element to
 *           code -8 (a negative scale when that element is positive), so the
 *           otherwise unused code -8 carries the extreme value. Candidates
 *           are ranked by their float error with q = clamp(round(w * (1 /
 *           scale)), -8, 7) (quant_eval.c: vectorised, early exit); the
 *           winner is then kept only if its double error is below ABSMAX's,
 *           so SEARCH is never worse than ABSMAX.
 *   AUTO    per group the smaller error of ABSMAX and SEARCH (ABSMAX on ties).
 *
 * Results are identical on every x86-64 CPU: the AVX2 and portable loops
 * of quant_eval.c perform the same float operations in the same order.
 */
#include "w4w.h"
#include "quant_eval.h"

#include <math.h>

/* Candidate factors are (W4W_F_LO + i) / 100 for i in [0, W4W_F_N). */
#define W4W_F_LO 80
#define W4W_F_N 26

double w4w_quant_codes(const float *w, size_t n, float s, int8_t *q)
{
    double err = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        float r, d;
        int v = 0;
        if (s != 0.0f) {
            r = rintf(w[i] / s);
            /* clamp in float first: w/s may exceed the int range */
            v = r < -8.0f ? -8 : r > 7.0f ? 7 : (int)r;
        }
        q[i] = (int8_t)v;
        d = (float)v * s; /* the decoder's fp32 product */
        err += ((double)d - (double)w[i]) * ((double)d - (double)w[i]);
    }
    return err;
}

/* fp16 rounding of s; returns 0 and *used when finite, -1 on overflow. */
static int round_scale(float s, uint16_t *bits, float *used)
{
    uint16_t h = qb_f32_to_f16(s);
    if ((h & 0x7c00u) == 0x7c00u)
        return -1;
    *bits = h;
    *used = qb_f16_to_f32(h);
    return 0;
}

/* round_scale for the search grid, without the bits: float -> fp16 ->
 * float in a few integer operations where the result is a normal fp16
 * (round to nearest even at mantissa bit 13, a carry bumping the
 * exponent, as qb_f32_to_f16 does); subnormal results go through
 * round_scale. perf: the generic conversion pair was ~10 % of a convert. */
static int round_scale_fast(float s, float *used)
{
    uint32_t x = qb_f32_bits(s), ax = x & 0x7fffffffu;
    if (ax >= 0x477ff000u) /* rounds to inf (or is inf / nan) */
        return -1;
    if (ax < 0x38800000u) {
        uint16_t bits;
        return round_scale(s, &bits, used);
    }
    ax = (ax + 0x0fffu + ((ax >> 13) & 1u)) & ~0x1fffu;
    *used = qb_bits_f32((x & 0x80000000u) | ax);
    return 0;
}

/* The grid factors (W4W_F_LO + i) / 100, folded by the compiler exactly
 * as the float division would give them. */
#define W4W_F(i) ((float)(W4W_F_LO + (i)) / 100.0f)
static const float g_factor[W4W_F_N] = {
    W4W_F(0),  W4W_F(1),  W4W_F(2),  W4W_F(3),  W4W_F(4),  W4W_F(5),  W4W_F(6),
    W4W_F(7),  W4W_F(8),  W4W_F(9),  W4W_F(10), W4W_F(11), W4W_F(12), W4W_F(13),
    W4W_F(14), W4W_F(15), W4W_F(16), W4W_F(17), W4W_F(18), W4W_F(19), W4W_F(20),
    W4W_F(21), W4W_F(22), W4W_F(23), W4W_F(24), W4W_F(25)};

/* Least-error candidate of the search grid under the float metric of
 * w4w_qe_err (codes by multiplying with 1/scale); -1 when every candidate
 * overflows fp16. Ties keep the earlier candidate in grid order. The
 * absmax candidates (f = 1.00) are tried first so that the early exit of
 * w4w_qe_err prunes most others after half a group; the order of trial
 * does not change the winner. */
static int search_scale(w4w_qe_impl impl, const float *w, size_t n, float amax, float sign8,
                        float *best_used)
{
    float used[2 * W4W_F_N], best = 0.0f;
    int ok[2 * W4W_F_N], order[2 * W4W_F_N], best_i = -1, k, i, m = 0;
    for (k = 0; k < 2; k++) {
        float base = k == 0 ? amax / 7.0f : sign8 * amax / 8.0f;
        for (i = 0; i < W4W_F_N; i++)
            ok[k * W4W_F_N + i] = round_scale_fast(base * g_factor[i], &used[k * W4W_F_N + i]) == 0;
    }
    order[m++] = 100 - W4W_F_LO;
    order[m++] = W4W_F_N + 100 - W4W_F_LO;
    for (i = 0; i < 2 * W4W_F_N; i++)
        if (i != order[0] && i != order[1])
            order[m++] = i;
    for (k = 0; k < m; k++) {
        float s, e;
        i = order[k];
        if (!ok[i])
            continue;
        s = used[i];
        e = w4w_qe_err(impl, w, n, s, s != 0.0f ? 1.0f / s : 0.0f,
                       best_i < 0 ? (float)INFINITY : best);
        if (best_i < 0 || e < best || (e == best && i < best_i)) {
            best = e;
            best_i = i;
        }
    }
    if (best_i < 0)
        return -1;
    *best_used = used[best_i];
    return 0;
}

int w4w_quant_group_impl(w4w_qe_impl impl, const float *w, size_t n, int rule, int8_t *q,
                         uint16_t *scale, double *err)
{
    float amax = 0.0f, extreme = 0.0f, a_used = 0.0f, s_used = 0.0f;
    uint16_t a_bits = 0, s_bits = 0;
    double a_err = 0.0, s_err;
    int have_a;
    size_t i;

    impl = w4w_qe_resolve(impl);
    if (w4w_qe_absmax(impl, w, n, &amax, &extreme) != 0)
        return W4W_EQUANT_NONFINITE;
    if (amax == 0.0f) {
        for (i = 0; i < n; i++)
            q[i] = 0;
        *scale = 0;
        *err = 0.0;
        return 0;
    }

    have_a = round_scale(amax / 7.0f, &a_bits, &a_used) == 0;
    if (rule == W4W_RULE_ABSMAX) {
        if (!have_a)
            return W4W_EQUANT_OVERFLOW;
        *scale = a_bits;
        *err = w4w_qe_codes(impl, w, n, a_used, 0.0f, 1, q);
        return 0;
    }
    if (search_scale(impl, w, n, amax, extreme > 0.0f ? -1.0f : 1.0f, &s_used) != 0)
        return W4W_EQUANT_OVERFLOW;
    s_bits = qb_f32_to_f16(s_used);
    s_err = w4w_qe_codes(impl, w, n, s_used, s_used != 0.0f ? 1.0f / s_used : 0.0f, 0, q);
    /* The grid's f = 1.00 candidate is ABSMAX's scale but its codes come
     * from w * (1/s), not w / s, and the search ranks in float: compare
     * with ABSMAX itself in double so that SEARCH is never worse than
     * ABSMAX (AUTO keeps ABSMAX on ties, SEARCH only when strictly
     * better). */
    if (have_a) {
        a_err = w4w_qe_codes(impl, w, n, a_used, 0.0f, 1, NULL);
        if (a_err < s_err || (rule == W4W_RULE_AUTO && a_err == s_err)) {
            s_bits = a_bits;
            s_err = w4w_qe_codes(impl, w, n, a_used, 0.0f, 1, q);
        }
    }
    *scale = s_bits;
    *err = s_err;
    return 0;
}

int w4w_quant_group(const float *w, size_t n, w4w_rule rule, int8_t *q, uint16_t *scale,
                    double *err)
{
    return w4w_quant_group_impl(W4W_QE_AUTO, w, n, (int)rule, q, scale, err);
}
