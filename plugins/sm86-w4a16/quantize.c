/*
 * sm86-w4a16 — choosing int4 codes and one fp16 scale per group.
 *
 * The format decodes w = q * scale in fp32 with q in [-8, 7] and the scale
 * stored in fp16 (w4a16-format.md, "Encoding of a packed linear"): the
 * kit's symmetric int4 rules (qbk_int4_rules.c: ABSMAX, SEARCH, KEEP, AUTO)
 * with fp16 scales, and here the importance-weighted search, which only
 * this writer has (activation statistics).
 */
#include "w4w.h"
#include "qbk_int4_rules.h"

#include <math.h>

#define W4W_REFITS 3 /* refits per weighted candidate, as SEARCH's */

int w4w_quant_group(const float *w, size_t n, w4w_rule rule, int8_t *q, uint16_t *scale,
                    double *err)
{
    qbk_int4_rule r = rule == W4W_RULE_ABSMAX ? QBK_INT4_ABSMAX
                      : rule == W4W_RULE_SEARCH ? QBK_INT4_SEARCH
                      : rule == W4W_RULE_KEEP   ? QBK_INT4_KEEP
                                                : QBK_INT4_AUTO;
    float s;
    int rc = qbk_int4_group(QBK_I4E_AUTO, QB_DT_F16, w, n, r, q, &s, err);
    if (rc == 0)
        *scale = qb_f32_to_f16(s); /* exact: s is an fp16 value */
    return rc;
}

/* ---- importance-weighted search (activation statistics, qb_stats.h) ------ */

/* Weighted error of the codes of w[0..n) against fp16-exact scale s, with
 * sum(imp q w) and sum(imp q q) for the refit; codes into q when q. */
static double werr(const float *w, const float *imp, size_t n, float s, int8_t *q, double *qw,
                   double *qq)
{
    double e = 0.0, a = 0.0, b = 0.0;
    float inv = s != 0.0f ? 1.0f / s : 0.0f;
    size_t i;
    for (i = 0; i < n; i++) {
        float r = rintf(w[i] * inv);
        int v = r < (float)W4A16_INT4_QMIN ? W4A16_INT4_QMIN
                : r > (float)W4A16_INT4_QMAX ? W4A16_INT4_QMAX : (int)r;
        double d = (double)((float)v * s) - (double)w[i];
        e += (double)imp[i] * d * d;
        a += (double)imp[i] * (double)v * (double)w[i];
        b += (double)imp[i] * (double)v * (double)v;
        if (q)
            q[i] = (int8_t)v;
    }
    *qw = a;
    *qq = b;
    return e;
}

/* Candidate factors of the weighted search: wider than SEARCH's, since with
 * the importance a smaller scale can pay off where the important columns
 * are small, and a larger one where they hold the extreme. */
#define W4W_WGRID_LO 0.70f
#define W4W_WGRID_STEP 0.025f
#define W4W_WGRID_N 21 /* 0.70 .. 1.20 */

int w4w_quant_group_weighted(const float *w, const float *imp, size_t n, int8_t *q,
                             uint16_t *scale, double *err)
{
    float amax = 0.0f, extreme = 0.0f, best_s = 0.0f, a_used = 0.0f;
    double best_e, qw, qq;
    int k, i, r;
    size_t j;

    for (j = 0; j < n; j++) {
        float a = fabsf(w[j]);
        if (!isfinite(w[j]))
            return W4W_EQUANT_NONFINITE;
        if (a > amax) {
            amax = a;
            extreme = w[j];
        }
    }
    if (amax == 0.0f) {
        for (j = 0; j < n; j++)
            q[j] = 0;
        *scale = 0;
        *err = 0.0;
        return 0;
    }
    if (qbk_int4_round_scale(QB_DT_F16, amax / 7.0f, &a_used) != 0)
        return W4W_EQUANT_OVERFLOW;
    /* ABSMAX first: kept unless a candidate is strictly better, so the
     * weighted error is never above ABSMAX's */
    best_s = a_used;
    best_e = werr(w, imp, n, a_used, NULL, &qw, &qq);
    for (k = 0; k < 2; k++) {
        /* the absmax/7 family, and s*absmax/8 mapping the extreme to -8 */
        float base = k == 0 ? amax / 7.0f : (extreme > 0.0f ? -1.0f : 1.0f) * amax / 8.0f;
        for (i = 0; i < W4W_WGRID_N; i++) {
            float s;
            double e;
            if (qbk_int4_round_scale(QB_DT_F16,
                                     base * (W4W_WGRID_LO + W4W_WGRID_STEP * (float)i), &s) != 0 ||
                s == 0.0f)
                continue;
            e = werr(w, imp, n, s, NULL, &qw, &qq);
            /* least squares for these codes: sum(imp q w) / sum(imp q q) */
            for (r = 0; r < W4W_REFITS && qq > 0.0; r++) {
                float s2;
                double e2, qw2, qq2;
                if (fabs(qw / qq) >= 65504.0 ||
                    qbk_int4_round_scale(QB_DT_F16, (float)(qw / qq), &s2) != 0 || s2 == 0.0f ||
                    s2 == s)
                    break;
                e2 = werr(w, imp, n, s2, NULL, &qw2, &qq2);
                if (!(e2 < e))
                    break;
                s = s2;
                e = e2;
                qw = qw2;
                qq = qq2;
            }
            if (e < best_e) {
                best_e = e;
                best_s = s;
            }
        }
    }
    *scale = qb_f32_to_f16(best_s);
    *err = qbk_int4_codes(w, n, best_s, q);
    return 0;
}
