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
 *           otherwise unused code -8 carries the extreme value. f = 1.00
 *           reproduces ABSMAX exactly, so SEARCH is never worse than ABSMAX.
 *   AUTO    per group the smaller error of ABSMAX and SEARCH (ABSMAX on ties).
 */
#include "w4w.h"

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

/* Least-error candidate of the search grid; -1 when every candidate
 * overflows fp16. Error ties keep the earlier candidate. */
static int search_scale(const float *w, size_t n, float amax, float sign8, int8_t *q,
                        uint16_t *best_bits, double *best_err)
{
    int found = 0, i, k;
    for (k = 0; k < 2; k++) {
        float base = k == 0 ? amax / 7.0f : sign8 * amax / 8.0f;
        for (i = 0; i < W4W_F_N; i++) {
            float f = (float)(W4W_F_LO + i) / 100.0f;
            uint16_t bits;
            float used;
            double e;
            if (round_scale(base * f, &bits, &used) != 0)
                continue;
            e = w4w_quant_codes(w, n, used, q);
            if (!found || e < *best_err) {
                found = 1;
                *best_err = e;
                *best_bits = bits;
            }
        }
    }
    return found ? 0 : -1;
}

int w4w_quant_group(const float *w, size_t n, w4w_rule rule, int8_t *q, uint16_t *scale,
                    double *err)
{
    float amax = 0.0f, extreme = 0.0f;
    uint16_t a_bits = 0, s_bits = 0;
    float a_used = 0.0f;
    double a_err = 0.0, s_err = 0.0;
    int have_a, have_s;
    size_t i;

    for (i = 0; i < n; i++) {
        float a = fabsf(w[i]);
        if (!isfinite(w[i]))
            return W4W_EQUANT_NONFINITE;
        if (a > amax) {
            amax = a;
            extreme = w[i];
        }
    }
    if (amax == 0.0f) {
        for (i = 0; i < n; i++)
            q[i] = 0;
        *scale = 0;
        *err = 0.0;
        return 0;
    }

    have_a = round_scale(amax / 7.0f, &a_bits, &a_used) == 0;
    if (have_a)
        a_err = w4w_quant_codes(w, n, a_used, q);
    if (rule == W4W_RULE_ABSMAX) {
        if (!have_a)
            return W4W_EQUANT_OVERFLOW;
        *scale = a_bits;
        *err = a_err;
        return 0;
    }
    have_s = search_scale(w, n, amax, extreme > 0.0f ? -1.0f : 1.0f, q, &s_bits, &s_err) == 0;
    if (!have_s)
        return W4W_EQUANT_OVERFLOW;
    if (rule == W4W_RULE_AUTO && have_a && a_err <= s_err) {
        s_bits = a_bits;
        s_err = a_err;
    }
    /* the search loop left q at its last candidate: recompute the winner's */
    (void)w4w_quant_codes(w, n, qb_f16_to_f32(s_bits), q);
    *scale = s_bits;
    *err = s_err;
    return 0;
}
