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
 *   SEARCH  a least-squares scale found in two steps, every candidate
 *           judged by its squared error with q = clamp(round(w * (1 /
 *           scale)), -8, 7):
 *           1. a coarse grid: absmax/7 * f and s*absmax/8 * f for
 *              f in {0.85, 0.90, 0.95, 1.00}, where s is the sign that maps
 *              the largest-magnitude element to code -8 (a negative scale
 *              when that element is positive), so the otherwise unused code
 *              -8 can carry the extreme value;
 *           2. up to three refits from the best so far: for its codes the
 *              error is least at scale sum(q*w) / sum(q*q); that scale
 *              (in fp16) is tried and kept while it lowers the error.
 *           The four scales of a base share one pass over the group
 *           (quant_eval.c, vectorised), which gives each its sum(q*w) and
 *           sum(q*q), hence its error and its refit; a refit costs one more
 *           pass. The winner is kept only if its double error is below
 *           ABSMAX's, so SEARCH is never worse than ABSMAX.
 *           Against the former exhaustive grid (f = 0.80, 0.81, ..., 1.05
 *           for both bases: 52 candidate passes per group), 2 + at most 3
 *           passes, and the error is the same to 3 digits
 *           (plugins/sm86-w4a16/tests/measure_rules.sh; bench/RESULTS.md).
 *   AUTO    per group the smaller error of ABSMAX and SEARCH (ABSMAX on ties).
 *
 * Results are identical on every x86-64 CPU: the AVX2 and portable loops
 * of quant_eval.c perform the same float operations in the same order.
 */
#include "w4w.h"
#include "quant_eval.h"

#include <math.h>

/* Coarse grid factors (step 1 of SEARCH) and the number of refits. */
static const float g_coarse[] = {0.85f, 0.90f, 0.95f, 1.00f};
#define W4W_N_COARSE (sizeof g_coarse / sizeof g_coarse[0])
#define W4W_REFITS 3

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
            v = r < (float)W4A16_INT4_QMIN   ? W4A16_INT4_QMIN
                : r > (float)W4A16_INT4_QMAX ? W4A16_INT4_QMAX
                                           : (int)r;
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

/* One candidate of the search: its fp16-rounded scale, the error of the
 * codes it gives (less sum(w^2), common to all candidates) and the
 * least-squares scale of those codes. */
typedef struct w4w_cand {
    float s;
    double err;
    double refit;
} w4w_cand;

/* Evaluates k (1..4) scales s[] (fp16-exact, nonzero) for w[0..n) in one
 * pass. The error is formed in double from the float sums: s^2 qq - 2 s qw. */
static void eval_scales(w4w_qe_impl impl, const float *w, size_t n, const float *s, size_t k,
                        w4w_cand *c)
{
    float inv[4] = {0.0f, 0.0f, 0.0f, 0.0f}, qw[4], qq[4];
    size_t j;
    for (j = 0; j < k; j++)
        inv[j] = 1.0f / s[j];
    w4w_qe_fit(impl, w, n, inv, k, qw, qq);
    for (j = 0; j < k; j++) {
        c[j].s = s[j];
        c[j].err = (double)s[j] * (double)s[j] * (double)qq[j] - 2.0 * (double)s[j] * (double)qw[j];
        c[j].refit = qq[j] > 0.0f ? (double)qw[j] / (double)qq[j] : 0.0;
    }
}

/* SEARCH's scale (see the rules above); 0 when every coarse candidate
 * underflows fp16, -1 when none is usable and one overflows. Ties keep the earlier candidate: grid order (absmax/7
 * family first), then refits. */
static int search_scale(w4w_qe_impl impl, const float *w, size_t n, float amax, float sign8,
                        float *best_used)
{
    w4w_cand best, c, cs[2 * W4W_N_COARSE];
    int overflow = 0, k, r;
    size_t i, m = 0, bi = 0;
    for (k = 0; k < 2; k++) {
        /* one pass per base: its usable coarse scales together */
        float base = k == 0 ? amax / 7.0f : sign8 * amax / 8.0f, sc[W4W_N_COARSE];
        size_t m0 = m, mk = 0;
        for (i = 0; i < W4W_N_COARSE; i++) {
            float s;
            if (round_scale_fast(base * g_coarse[i], &s) != 0) {
                overflow = 1;
                continue;
            }
            if (s == 0.0f) /* underflows fp16: all codes would be 0 */
                continue;
            sc[mk++] = s;
        }
        if (mk == 0)
            continue;
        eval_scales(impl, w, n, sc, mk, cs + m0);
        m += mk;
    }
    if (m == 0) {
        /* only underflowing candidates: scale 0 (codes 0) is the answer */
        *best_used = 0.0f;
        return overflow ? -1 : 0;
    }
    /* the first least error, selected without branches (a data-dependent
     * branch per candidate mispredicted about half the time: perf showed
     * the candidate logic at ~12 % of a requantization) */
    for (i = 1; i < m; i++)
        bi = cs[i].err < cs[bi].err ? i : bi;
    best = cs[bi];
    for (r = 0; r < W4W_REFITS; r++) {
        float s;
        /* a refit of 0 (no nonzero code) or one that overflows ends it */
        if (best.refit == 0.0 || fabs(best.refit) >= 65504.0 ||
            round_scale_fast((float)best.refit, &s) != 0 || s == 0.0f || s == best.s)
            break;
        eval_scales(impl, w, n, &s, 1, &c);
        if (!(c.err < best.err))
            break;
        best = c;
    }
    *best_used = best.s;
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
    if (rule == W4W_RULE_KEEP) {
        /* absmax/7 or the extreme on code -8 (scale -+absmax/8): neither
         * clips the largest weight, which the activations may need most
         * (docs/fidelity.md, "Requantizing lossy sources") */
        uint16_t k_bits;
        float k_used;
        double k_err;
        if (!have_a)
            return W4W_EQUANT_OVERFLOW;
        a_err = w4w_qe_codes(impl, w, n, a_used, 0.0f, 1, NULL);
        if (round_scale((extreme > 0.0f ? -amax : amax) / 8.0f, &k_bits, &k_used) == 0 &&
            k_used != 0.0f) {
            k_err = w4w_quant_codes(w, n, k_used, q);
            if (k_err < a_err) {
                *scale = k_bits;
                *err = k_err;
                return 0;
            }
        }
        *scale = a_bits;
        *err = w4w_qe_codes(impl, w, n, a_used, 0.0f, 1, q);
        return 0;
    }
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
    /* The grid's f = 1.00 candidate is ABSMAX's scale but its codes come
     * from w * (1/s), not w / s, and the search ranks in float: compare
     * with ABSMAX itself in double so that SEARCH is never worse than
     * ABSMAX (AUTO keeps ABSMAX on ties, SEARCH only when strictly
     * better). Both errors in one pass (perf: two passes were ~12 %). */
    if (have_a && a_used != 0.0f)
        w4w_qe_codes2(impl, w, n, s_used, s_used != 0.0f ? 1.0f / s_used : 0.0f, a_used, q, &s_err,
                      &a_err);
    else
        s_err = w4w_qe_codes(impl, w, n, s_used, s_used != 0.0f ? 1.0f / s_used : 0.0f, 0, q);
    if (have_a) {
        if (a_used == 0.0f)
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
    uint16_t a_bits = 0;
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
    if (round_scale(amax / 7.0f, &a_bits, &a_used) != 0)
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
            if (round_scale_fast(base * (W4W_WGRID_LO + W4W_WGRID_STEP * (float)i), &s) != 0 ||
                s == 0.0f)
                continue;
            e = werr(w, imp, n, s, NULL, &qw, &qq);
            /* least squares for these codes: sum(imp q w) / sum(imp q q) */
            for (r = 0; r < W4W_REFITS && qq > 0.0; r++) {
                float s2;
                double e2, qw2, qq2;
                if (fabs(qw / qq) >= 65504.0 || round_scale_fast((float)(qw / qq), &s2) != 0 ||
                    s2 == 0.0f || s2 == s)
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
    *err = w4w_quant_codes(w, n, best_s, q);
    return 0;
}
