/*
 * Symmetric int4 group rules: codes in [-8, 7] and one scale per group in
 * the stored dtype (qbk_int4_rules.h). Every candidate scale is first
 * rounded to that dtype, and codes and error are computed against the
 * rounded value: the error measured is the error of the file.
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
 *              (in the stored dtype) is tried and kept while it lowers the
 *              error.
 *           The four scales of a base share one pass over the group
 *           (qbk_int4_eval.c, vectorised), which gives each its sum(q*w)
 *           and sum(q*q), hence its error and its refit; a refit costs one
 *           more pass. The winner is kept only if its double error is below
 *           ABSMAX's, so SEARCH is never worse than ABSMAX.
 *           Against the former exhaustive grid (f = 0.80, 0.81, ..., 1.05
 *           for both bases: 52 candidate passes per group), 2 + at most 3
 *           passes, and the error is the same to 3 digits
 *           (plugins/sm86-w4a16/tests/measure_rules.sh; bench/RESULTS.md).
 *   KEEP    absmax/7 or the extreme on code -8 (scale -+absmax/8): neither
 *           clips the largest weight.
 *   AUTO    per group the smaller error of ABSMAX and SEARCH (ABSMAX on ties).
 *
 * Results are identical on every x86-64 CPU: the AVX2 and portable loops
 * of qbk_int4_eval.c perform the same float operations in the same order.
 */
#include "qbk_int4_rules.h"

#include <quantbridge/qb_half.h>

#include <float.h>
#include <math.h>
#include <string.h>

/* Coarse grid factors (step 1 of SEARCH) and the number of refits. */
static const float g_coarse[] = {0.85f, 0.90f, 0.95f, 1.00f};
#define QBK_INT4_N_COARSE (sizeof g_coarse / sizeof g_coarse[0])
#define QBK_INT4_REFITS 3

static const char *const g_names[] = {"auto", "absmax", "search", "keep"};

const char *qbk_int4_rule_name(qbk_int4_rule rule)
{
    return (unsigned)rule < sizeof g_names / sizeof g_names[0] ? g_names[rule] : "?";
}

int qbk_int4_rule_parse(const char *name, qbk_int4_rule *rule)
{
    size_t i;
    for (i = 0; name && i < sizeof g_names / sizeof g_names[0]; i++)
        if (strcmp(name, g_names[i]) == 0) {
            *rule = (qbk_int4_rule)i;
            return 0;
        }
    return -1;
}

double qbk_int4_scale_max(qb_dtype sdt)
{
    /* bf16's largest finite value: 0x7f7f, (2 - 2^-7) * 2^127 */
    return sdt == QB_DT_F16 ? 65504.0 : sdt == QB_DT_BF16 ? 0x1.fep127 : (double)FLT_MAX;
}

double qbk_int4_codes(const float *w, size_t n, float s, int8_t *q)
{
    double err = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        float r, d;
        int v = 0;
        if (s != 0.0f) {
            r = rintf(w[i] / s);
            /* clamp in float first: w/s may exceed the int range */
            v = r < (float)QBK_INT4_QMIN   ? QBK_INT4_QMIN
                : r > (float)QBK_INT4_QMAX ? QBK_INT4_QMAX
                                           : (int)r;
        }
        q[i] = (int8_t)v;
        d = (float)v * s; /* the decoder's fp32 product */
        err += ((double)d - (double)w[i]) * ((double)d - (double)w[i]);
    }
    return err;
}

/* s rounded to sdt by the generic conversions; 0, or -1 when not finite. */
static int round_scale(qb_dtype sdt, float s, float *used)
{
    if (sdt == QB_DT_F16) {
        uint16_t h = qb_f32_to_f16(s);
        if ((h & 0x7c00u) == 0x7c00u)
            return -1;
        *used = qb_f16_to_f32(h);
        return 0;
    }
    if (sdt == QB_DT_BF16) {
        uint16_t b = qb_f32_to_bf16(s);
        if ((b & 0x7f80u) == 0x7f80u)
            return -1;
        *used = qb_bf16_to_f32(b);
        return 0;
    }
    if (!isfinite(s))
        return -1;
    *used = s;
    return 0;
}

/* For F16: float -> fp16 -> float in a few integer operations where the
 * result is a normal fp16 (round to nearest even at mantissa bit 13, a
 * carry bumping the exponent, as qb_f32_to_f16 does); subnormal results
 * go through round_scale. perf: the generic conversion pair was ~10 % of
 * a requantizing convert. */
int qbk_int4_round_scale(qb_dtype sdt, float s, float *used)
{
    uint32_t x, ax;
    if (sdt != QB_DT_F16)
        return round_scale(sdt, s, used);
    x = qb_f32_bits(s);
    ax = x & 0x7fffffffu;
    if (ax >= 0x477ff000u) /* rounds to inf (or is inf / nan) */
        return -1;
    if (ax < 0x38800000u)
        return round_scale(sdt, s, used);
    ax = (ax + 0x0fffu + ((ax >> 13) & 1u)) & ~0x1fffu;
    *used = qb_bits_f32((x & 0x80000000u) | ax);
    return 0;
}

/* One candidate of the search: its rounded scale, the error of the
 * codes it gives (less sum(w^2), common to all candidates) and the
 * least-squares scale of those codes. */
typedef struct i4_cand {
    float s;
    double err;
    double refit;
} i4_cand;

/* Evaluates k (1..4) scales s[] (exact in the dtype, nonzero) for w[0..n)
 * in one pass. The error is formed in double from the float sums:
 * s^2 qq - 2 s qw. */
static void eval_scales(qbk_i4e_impl impl, const float *w, size_t n, const float *s, size_t k,
                        i4_cand *c)
{
    float inv[4] = {0.0f, 0.0f, 0.0f, 0.0f}, qw[4], qq[4];
    size_t j;
    for (j = 0; j < k; j++)
        inv[j] = 1.0f / s[j];
    qbk_i4e_fit(impl, w, n, inv, k, qw, qq);
    for (j = 0; j < k; j++) {
        c[j].s = s[j];
        c[j].err = (double)s[j] * (double)s[j] * (double)qq[j] - 2.0 * (double)s[j] * (double)qw[j];
        c[j].refit = qq[j] > 0.0f ? (double)qw[j] / (double)qq[j] : 0.0;
    }
}

/* SEARCH's scale (see the rules above); 0 when every coarse candidate
 * underflows the dtype, -1 when none is usable and one overflows. Ties
 * keep the earlier candidate: grid order (absmax/7 family first), then
 * refits. */
static int search_scale(qbk_i4e_impl impl, qb_dtype sdt, const float *w, size_t n, float amax,
                        float sign8, float *best_used)
{
    i4_cand best, c, cs[2 * QBK_INT4_N_COARSE];
    double smax = qbk_int4_scale_max(sdt);
    int overflow = 0, k, r;
    size_t i, m = 0, bi = 0;
    for (k = 0; k < 2; k++) {
        /* one pass per base: its usable coarse scales together */
        float base = k == 0 ? amax / 7.0f : sign8 * amax / 8.0f, sc[QBK_INT4_N_COARSE];
        size_t m0 = m, mk = 0;
        for (i = 0; i < QBK_INT4_N_COARSE; i++) {
            float s;
            if (qbk_int4_round_scale(sdt, base * g_coarse[i], &s) != 0) {
                overflow = 1;
                continue;
            }
            if (s == 0.0f) /* underflows the dtype: all codes would be 0 */
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
    for (r = 0; r < QBK_INT4_REFITS; r++) {
        float s;
        /* a refit of 0 (no nonzero code) or one that overflows ends it */
        if (best.refit == 0.0 || fabs(best.refit) >= smax ||
            qbk_int4_round_scale(sdt, (float)best.refit, &s) != 0 || s == 0.0f || s == best.s)
            break;
        eval_scales(impl, w, n, &s, 1, &c);
        if (!(c.err < best.err))
            break;
        best = c;
    }
    *best_used = best.s;
    return 0;
}

int qbk_int4_group(qbk_i4e_impl impl, qb_dtype sdt, const float *w, size_t n, qbk_int4_rule rule,
                   int8_t *q, float *scale, double *err)
{
    float amax = 0.0f, extreme = 0.0f, a_used = 0.0f, s_used = 0.0f;
    double a_err = 0.0, s_err;
    int have_a;
    size_t i;

    impl = qbk_i4e_resolve(impl);
    if (qbk_i4e_absmax(impl, w, n, &amax, &extreme) != 0)
        return QBK_INT4_ENONFINITE;
    if (amax == 0.0f) {
        for (i = 0; i < n; i++)
            q[i] = 0;
        *scale = 0.0f;
        *err = 0.0;
        return 0;
    }

    have_a = round_scale(sdt, amax / 7.0f, &a_used) == 0;
    if (rule == QBK_INT4_KEEP) {
        /* absmax/7 or the extreme on code -8 (scale -+absmax/8): neither
         * clips the largest weight, which the activations may need most
         * (docs/fidelity.md, "Requantizing lossy sources (issue 27)") */
        float k_used;
        double k_err;
        if (!have_a)
            return QBK_INT4_EOVERFLOW;
        a_err = qbk_i4e_codes(impl, w, n, a_used, 0.0f, 1, NULL);
        if (round_scale(sdt, (extreme > 0.0f ? -amax : amax) / 8.0f, &k_used) == 0 &&
            k_used != 0.0f) {
            k_err = qbk_int4_codes(w, n, k_used, q);
            if (k_err < a_err) {
                *scale = k_used;
                *err = k_err;
                return 0;
            }
        }
        *scale = a_used;
        *err = qbk_i4e_codes(impl, w, n, a_used, 0.0f, 1, q);
        return 0;
    }
    if (rule == QBK_INT4_ABSMAX) {
        if (!have_a)
            return QBK_INT4_EOVERFLOW;
        *scale = a_used;
        *err = qbk_i4e_codes(impl, w, n, a_used, 0.0f, 1, q);
        return 0;
    }
    if (search_scale(impl, sdt, w, n, amax, extreme > 0.0f ? -1.0f : 1.0f, &s_used) != 0)
        return QBK_INT4_EOVERFLOW;
    /* The grid's f = 1.00 candidate is ABSMAX's scale but its codes come
     * from w * (1/s), not w / s, and the search ranks in float: compare
     * with ABSMAX itself in double so that SEARCH is never worse than
     * ABSMAX (AUTO keeps ABSMAX on ties, SEARCH only when strictly
     * better). Both errors in one pass (perf: two passes were ~12 %). */
    if (have_a && a_used != 0.0f)
        qbk_i4e_codes2(impl, w, n, s_used, s_used != 0.0f ? 1.0f / s_used : 0.0f, a_used, q,
                       &s_err, &a_err);
    else
        s_err = qbk_i4e_codes(impl, w, n, s_used, s_used != 0.0f ? 1.0f / s_used : 0.0f, 0, q);
    if (have_a) {
        if (a_used == 0.0f)
            a_err = qbk_i4e_codes(impl, w, n, a_used, 0.0f, 1, NULL);
        if (a_err < s_err || (rule == QBK_INT4_AUTO && a_err == s_err)) {
            s_used = a_used;
            s_err = qbk_i4e_codes(impl, w, n, a_used, 0.0f, 1, q);
        }
    }
    *scale = s_used;
    *err = s_err;
    return 0;
}
