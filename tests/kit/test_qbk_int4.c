/*
 * The kit's symmetric int4 rules (sdk/kit/qbk_int4_rules.h) with each
 * scale dtype: the rounding of a scale to F16 (the fast path), BF16 and F32
 * against qb_half.h's conversions; on random groups every rule's scale is a
 * value of the dtype (checked on its bits), its codes are in [-8, 7] and its
 * error is the error of those codes and that scale recomputed here, ABSMAX
 * is absmax/7 rounded with codes round(w / s), SEARCH and KEEP are never
 * worse than ABSMAX, AUTO is SEARCH where strictly better, else ABSMAX;
 * magnitudes out of fp16's range quantize in BF16 and F32 and are refused
 * in F16.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <quantbridge/qb_half.h>

#include "qbk_int4_rules.h"
#include "qbt_check_main.h"

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double uniform(uint64_t *s)
{
    return ((double)(rng(s) >> 11) + 0.5) * 0x1p-53;
}

static double normal(uint64_t *s)
{
    return sqrt(-2.0 * log(uniform(s))) * cos(6.283185307179586 * uniform(s));
}

/* 1 when v is a finite value of dt, from its bits. */
static int in_dtype(qb_dtype dt, float v)
{
    uint32_t b = qb_f32_bits(v);
    if (!isfinite(v))
        return 0;
    if (dt == QB_DT_BF16)
        return (b & 0xffffu) == 0;
    if (dt == QB_DT_F16)
        return qb_f16_to_f32(qb_f32_to_f16(v)) == v && fabsf(v) <= 65504.0f;
    return 1;
}

START_TEST(round_scale_as_conversions)
{
    uint64_t seed = 99;
    int i;
    for (i = 0; i < 200000; i++) {
        /* exponents from fp16's subnormals to past its range, and bf16's */
        float v = (float)(normal(&seed) * pow(2.0, (double)(i % 60) - 30.0)), u = 0.0f;
        uint16_t h = qb_f32_to_f16(v), b = qb_f32_to_bf16(v);
        int rc = qbk_int4_round_scale(QB_DT_F16, v, &u);
        if ((h & 0x7c00u) == 0x7c00u) {
            ck_assert_int_eq(rc, -1);
        } else {
            ck_assert_int_eq(rc, 0);
            ck_assert_uint_eq(qb_f32_bits(u), qb_f32_bits(qb_f16_to_f32(h)));
        }
        ck_assert_int_eq(qbk_int4_round_scale(QB_DT_BF16, v, &u), 0);
        ck_assert_uint_eq(qb_f32_bits(u), qb_f32_bits(qb_bf16_to_f32(b)));
        ck_assert_int_eq(qbk_int4_round_scale(QB_DT_F32, v, &u), 0);
        ck_assert_uint_eq(qb_f32_bits(u), qb_f32_bits(v));
    }
    /* the rounding boundary to inf: 65520 is half way past 65504 (ties to
     * even: inf); bf16's largest finite value rounds to itself */
    {
        float u;
        ck_assert_int_eq(qbk_int4_round_scale(QB_DT_F16, 65519.0f, &u), 0);
        ck_assert(u == 65504.0f);
        ck_assert_int_eq(qbk_int4_round_scale(QB_DT_F16, 65520.0f, &u), -1);
        ck_assert_int_eq(qbk_int4_round_scale(QB_DT_BF16, 0x1.fep127f, &u), 0);
        ck_assert(u == 0x1.fep127f);
        ck_assert_int_eq(qbk_int4_round_scale(QB_DT_BF16, FLT_MAX, &u), -1);
        ck_assert_int_eq(qbk_int4_round_scale(QB_DT_F32, INFINITY, &u), -1);
    }
}
END_TEST

/* Squared error of codes q and scale s on w, summed in long double. */
static double recompute(const float *w, const int8_t *q, size_t n, float s)
{
    long double e = 0.0L;
    size_t i;
    for (i = 0; i < n; i++) {
        long double d = (long double)((float)q[i] * s) - (long double)w[i];
        e += d * d;
    }
    return (double)e;
}

START_TEST(rules_in_each_dtype)
{
    static const qb_dtype dts[] = {QB_DT_F16, QB_DT_BF16, QB_DT_F32};
    static const size_t sizes[] = {1, 7, 16, 32, 33, 64, 128, 200};
    uint64_t seed = 4242;
    float w[200];
    int8_t q[4][200];
    int trial, d, better[3] = {0, 0, 0}, checked = 0;

    for (trial = 0; trial < 6000; trial++) {
        size_t n = sizes[trial % 8], i;
        /* magnitudes 1e-30 .. 1e30: past fp16's range both ways */
        double mag = pow(10.0, (double)((trial / 8) % 13) * 5.0 - 30.0);
        float amax = 0.0f;
        for (i = 0; i < n; i++) {
            double v = normal(&seed);
            if (trial % 3 == 1)
                v = v * v * v; /* heavy tails */
            w[i] = (float)(v * mag);
            amax = fabsf(w[i]) > amax ? fabsf(w[i]) : amax;
        }
        for (d = 0; d < 3; d++) {
            qb_dtype dt = dts[d];
            float sc[4];
            double err[4];
            int r, rc[4];
            for (r = 0; r < 4; r++)
                rc[r] = qbk_int4_group(QBK_I4E_AUTO, dt, w, n, (qbk_int4_rule)r, q[r], &sc[r],
                                       &err[r]);
            if (dt == QB_DT_F16 && amax / 7.0f > 65504.0f) {
                ck_assert_int_eq(rc[QBK_INT4_ABSMAX], QBK_INT4_EOVERFLOW);
                continue;
            }
            if (amax == 0.0f || (dt == QB_DT_F16 && amax / 7.0f < 0x1p-24f))
                continue; /* all-zero groups (below); fp16 underflow of every scale */
            for (r = 0; r < 4; r++) {
                ck_assert_int_eq(rc[r], 0);
                ck_assert_msg(in_dtype(dt, sc[r]), "dtype %d rule %d: scale %a", (int)dt, r,
                              (double)sc[r]);
                ck_assert(sc[r] != 0.0f);
                for (i = 0; i < n; i++)
                    ck_assert(q[r][i] >= -8 && q[r][i] <= 7);
                ck_assert_msg(fabs(err[r] - recompute(w, q[r], n, sc[r])) <=
                                  1e-9 * recompute(w, q[r], n, sc[r]) + 1e-300,
                              "rule %d: err %.17g", r, err[r]);
            }
            {
                /* ABSMAX: the rounded absmax / 7 and round(w / s) */
                float s = dt == QB_DT_F16    ? qb_f16_to_f32(qb_f32_to_f16(amax / 7.0f))
                          : dt == QB_DT_BF16 ? qb_bf16_to_f32(qb_f32_to_bf16(amax / 7.0f))
                                             : amax / 7.0f;
                ck_assert_uint_eq(qb_f32_bits(sc[QBK_INT4_ABSMAX]), qb_f32_bits(s));
                for (i = 0; i < n; i++) {
                    float c = rintf(w[i] / s);
                    c = c < -8.0f ? -8.0f : c > 7.0f ? 7.0f : c;
                    ck_assert_int_eq(q[QBK_INT4_ABSMAX][i], (int)c);
                }
            }
            ck_assert(err[QBK_INT4_SEARCH] <= err[QBK_INT4_ABSMAX]);
            ck_assert(err[QBK_INT4_KEEP] <= err[QBK_INT4_ABSMAX]);
            ck_assert(memcmp(&err[QBK_INT4_AUTO], &err[QBK_INT4_SEARCH], sizeof(double)) == 0);
            /* AUTO: SEARCH when strictly better, else ABSMAX (ties too) */
            r = err[QBK_INT4_SEARCH] < err[QBK_INT4_ABSMAX] ? QBK_INT4_SEARCH : QBK_INT4_ABSMAX;
            ck_assert_uint_eq(qb_f32_bits(sc[QBK_INT4_AUTO]), qb_f32_bits(sc[r]));
            ck_assert_mem_eq(q[QBK_INT4_AUTO], q[r], n);
            better[d] += err[QBK_INT4_SEARCH] < err[QBK_INT4_ABSMAX];
            checked++;
        }
    }
    ck_assert_int_gt(checked, 12000);
    /* the search finds a better scale in most groups of a few elements or more */
    for (d = 0; d < 3; d++)
        ck_assert_int_gt(better[d], 1000);
}
END_TEST

START_TEST(refusals_and_zero)
{
    float big[2] = {1e6f, -3.0f}, nan4[4] = {1.0f, NAN, 0.5f, 0.0f}, zero[3] = {0.0f, -0.0f, 0.0f};
    float s = 1.0f;
    int8_t q[4];
    double e = 1.0;
    qbk_int4_rule r;
    ck_assert_int_eq(qbk_int4_group(QBK_I4E_AUTO, QB_DT_F16, big, 2, QBK_INT4_SEARCH, q, &s, &e),
                     QBK_INT4_EOVERFLOW);
    ck_assert_int_eq(qbk_int4_group(QBK_I4E_AUTO, QB_DT_BF16, big, 2, QBK_INT4_SEARCH, q, &s, &e),
                     0);
    ck_assert((qb_f32_bits(s) & 0xffffu) == 0);
    ck_assert_int_eq(q[0] == 7 || q[0] == -8, 1);
    ck_assert_int_eq(qbk_int4_group(QBK_I4E_AUTO, QB_DT_F32, nan4, 4, QBK_INT4_AUTO, q, &s, &e),
                     QBK_INT4_ENONFINITE);
    ck_assert_int_eq(qbk_int4_group(QBK_I4E_AUTO, QB_DT_BF16, zero, 3, QBK_INT4_KEEP, q, &s, &e),
                     0);
    ck_assert(s == 0.0f && e == 0.0 && q[0] == 0 && q[1] == 0 && q[2] == 0);
    ck_assert_int_eq(qbk_int4_rule_parse("search", &r), 0);
    ck_assert_int_eq(r, QBK_INT4_SEARCH);
    ck_assert_str_eq(qbk_int4_rule_name(QBK_INT4_KEEP), "keep");
    ck_assert_int_eq(qbk_int4_rule_parse("minmax", &r), -1);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("qbk_int4");
    TCase *tc = tcase_create("int4");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, round_scale_as_conversions);
    tcase_add_test(tc, rules_in_each_dtype);
    tcase_add_test(tc, refusals_and_zero);
    suite_add_tcase(s, tc);
    return s;
}
