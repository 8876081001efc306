/*
 * The kit's int4 rules (qbk_int4_rules.h): the AVX2 and portable loops of
 * qbk_int4_eval.c give identical codes, scales and
 * errors on random groups (every rule and scale dtype, group sizes with
 * and without a tail, heavy tails, zeros, tiny and large magnitudes), and
 * the search's fit sums match an independent scalar sum.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_int4_rules.h"
#include <quantbridge/qb_half.h>

/* splitmix64 + Box-Muller: a normal sample */
static double normal(uint64_t *s)
{
    double u1, u2;
    uint64_t z;
    *s += 0x9e3779b97f4a7c15ull;
    z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    u1 = ((double)(z >> 11) + 1.0) / 9007199254740993.0;
    *s += 0x9e3779b97f4a7c15ull;
    z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    u2 = (double)(z >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* A random group of one of several shapes, chosen by trial. */
static void fill_group(float *w, size_t n, int trial, uint64_t *seed)
{
    size_t i;
    double scale = pow(10.0, (double)(trial % 9) - 6.0); /* 1e-6 .. 1e2 */
    for (i = 0; i < n; i++) {
        double v = normal(seed);
        switch (trial % 5) {
        case 1:
            v = v * v * v; /* heavy tails */
            break;
        case 2:
            v = fmod(fabs(v) * 7.3, 2.0) - 1.0; /* roughly uniform */
            break;
        case 3:
            v = (i % 3 == 0) ? 0.0 : v; /* many exact zeros */
            break;
        case 4:
            v = (double)((int)(v * 3.0)); /* few distinct values: ties */
            break;
        default:
            break;
        }
        w[i] = (float)(v * scale);
    }
}

START_TEST(test_avx2_equals_portable)
{
    static const size_t sizes[] = {1, 7, 8, 31, 32, 33, 64, 65, 100, 127, 128, 129, 256, 1000};
    uint64_t seed = 1234;
    float w[1000];
    int8_t qp[1000], qv[1000];
    int trial, rule, checked = 0;
    if (!qbk_i4e_have_avx2()) {
        fprintf(stderr, "test_avx2_equals_portable: CPU without AVX2, portable path only\n");
        return;
    }
    for (trial = 0; trial < 3000; trial++) {
        size_t n = sizes[trial % (sizeof sizes / sizeof sizes[0])];
        fill_group(w, n, trial / 14, &seed);
        for (rule = 0; rule < 4 * 3; rule++) {
            static const qb_dtype dts[] = {QB_DT_F16, QB_DT_BF16, QB_DT_F32};
            float sp = 1.0f, sv = 2.0f;
            double ep = -1.0, ev = -2.0;
            int rp = qbk_int4_group(QBK_I4E_PORTABLE, dts[rule / 4], w, n,
                                    (qbk_int4_rule)(rule % 4), qp, &sp, &ep);
            int rv = qbk_int4_group(QBK_I4E_AVX2, dts[rule / 4], w, n, (qbk_int4_rule)(rule % 4),
                                    qv, &sv, &ev);
            ck_assert_int_eq(rp, rv);
            if (rp != 0)
                continue;
            ck_assert(memcmp(&sp, &sv, sizeof sp) == 0);
            ck_assert_mem_eq(qp, qv, n);
            ck_assert(memcmp(&ep, &ev, sizeof ep) == 0);
            checked++;
        }
    }
    ck_assert_int_gt(checked, 4 * 8000);
}
END_TEST

START_TEST(test_kernels_equal)
{
    uint64_t seed = 77;
    float w[300];
    int8_t qp[300], qv[300];
    int trial;
    if (!qbk_i4e_have_avx2())
        return;
    for (trial = 0; trial < 2000; trial++) {
        size_t n = 1 + (size_t)(trial * 7 % 300);
        float amax_p, amax_v, ext_p, ext_v, s, inv, fp, fv, gp, gv;
        double dp, dv;
        fill_group(w, n, trial, &seed);
        ck_assert_int_eq(qbk_i4e_absmax(QBK_I4E_PORTABLE, w, n, &amax_p, &ext_p), 0);
        ck_assert_int_eq(qbk_i4e_absmax(QBK_I4E_AVX2, w, n, &amax_v, &ext_v), 0);
        ck_assert(qb_f32_bits(amax_p) == qb_f32_bits(amax_v));
        ck_assert(qb_f32_bits(ext_p) == qb_f32_bits(ext_v));
        s = qb_f16_to_f32(qb_f32_to_f16(amax_p / 7.0f * (0.8f + 0.01f * (float)(trial % 26))));
        if (trial % 2)
            s = -s;
        inv = s != 0.0f ? 1.0f / s : 0.0f;
        qbk_i4e_fit(QBK_I4E_PORTABLE, w, n, &inv, 1, &fp, &gp);
        qbk_i4e_fit(QBK_I4E_AVX2, w, n, &inv, 1, &fv, &gv);
        ck_assert(qb_f32_bits(fp) == qb_f32_bits(fv));
        ck_assert(qb_f32_bits(gp) == qb_f32_bits(gv));
        {
            /* four candidates in one pass: each equals its own single pass,
             * on both paths (one accumulator per candidate, same lanes) */
            float inv4[4] = {inv * 0.9f, inv, -inv * 1.1f, inv * 1.25f}, a4[2][4], b4[2][4];
            int j, im;
            for (im = 0; im < 2; im++)
                qbk_i4e_fit(im ? QBK_I4E_AVX2 : QBK_I4E_PORTABLE, w, n, inv4, 4, a4[im], b4[im]);
            for (j = 0; j < 4; j++) {
                float a1, b1;
                qbk_i4e_fit(QBK_I4E_PORTABLE, w, n, &inv4[j], 1, &a1, &b1);
                ck_assert(qb_f32_bits(a4[0][j]) == qb_f32_bits(a1));
                ck_assert(qb_f32_bits(b4[0][j]) == qb_f32_bits(b1));
                ck_assert(qb_f32_bits(a4[1][j]) == qb_f32_bits(a1));
                ck_assert(qb_f32_bits(b4[1][j]) == qb_f32_bits(b1));
            }
        }
        {
            /* the fused pass: bit for bit the two separate ones, both paths */
            float a = qb_f16_to_f32(qb_f32_to_f16(amax_p / 7.0f));
            int im;
            if (a != 0.0f)
                for (im = 1; im <= 2; im++) {
                    double es, ea, es1, ea1;
                    int8_t q1[300], q2[300];
                    qbk_i4e_codes2((qbk_i4e_impl)im, w, n, s, inv, a, q2, &es, &ea);
                    es1 = qbk_i4e_codes(QBK_I4E_PORTABLE, w, n, s, inv, 0, q1);
                    ea1 = qbk_i4e_codes(QBK_I4E_PORTABLE, w, n, a, 0.0f, 1, NULL);
                    ck_assert(memcmp(&es, &es1, sizeof es) == 0);
                    ck_assert(memcmp(&ea, &ea1, sizeof ea) == 0);
                    ck_assert_mem_eq(q1, q2, n);
                }
        }
        dp = qbk_i4e_codes(QBK_I4E_PORTABLE, w, n, s, inv, trial % 3 == 0, qp);
        dv = qbk_i4e_codes(QBK_I4E_AVX2, w, n, s, inv, trial % 3 == 0, qv);
        ck_assert(memcmp(&dp, &dv, sizeof dp) == 0);
        ck_assert_mem_eq(qp, qv, n);
    }
}
END_TEST

/* Against an independent scalar reference: codes by the stated formula,
 * the double error equal to a plain sum within rounding. */
START_TEST(test_codes_reference)
{
    uint64_t seed = 5;
    float w[200];
    int8_t q[200];
    int trial, impl;
    for (trial = 0; trial < 400; trial++) {
        size_t n = 1 + (size_t)(trial % 200), i;
        float s;
        fill_group(w, n, trial, &seed);
        s = qb_f16_to_f32(qb_f32_to_f16(0.9f * fabsf(w[0]) / 7.0f + 1e-3f));
        for (impl = 1; impl <= (qbk_i4e_have_avx2() ? 2 : 1); impl++) {
            int use_div = trial % 2;
            double e = qbk_i4e_codes((qbk_i4e_impl)impl, w, n, s, 1.0f / s, use_div, q), chk = 0.0;
            for (i = 0; i < n; i++) {
                float r = rintf(use_div ? w[i] / s : w[i] * (1.0f / s));
                int want = r < -8.0f ? -8 : r > 7.0f ? 7 : (int)r;
                double d = (double)((float)want * s) - (double)w[i];
                ck_assert_int_eq(q[i], want);
                chk += d * d;
            }
            ck_assert(fabs(chk - e) <= 1e-12 * (chk + 1e-30));
        }
    }
}
END_TEST

/* The fit sums against a plain double sum of the stated formula: equal
 * within float accumulation error. */
START_TEST(test_fit_reference)
{
    uint64_t seed = 9;
    float w[300];
    int trial, impl;
    for (trial = 0; trial < 400; trial++) {
        size_t n = 1 + (size_t)(trial * 13 % 300), i;
        float amax = 0.0f, inv;
        fill_group(w, n, trial, &seed);
        for (i = 0; i < n; i++)
            amax = fabsf(w[i]) > amax ? fabsf(w[i]) : amax;
        if (amax == 0.0f)
            continue;
        inv = 7.0f / (amax * (0.8f + 0.01f * (float)(trial % 30)));
        for (impl = 1; impl <= (qbk_i4e_have_avx2() ? 2 : 1); impl++) {
            double a = 0.0, b = 0.0, aw = 0.0;
            float qw, qq;
            qbk_i4e_fit((qbk_i4e_impl)impl, w, n, &inv, 1, &qw, &qq);
            for (i = 0; i < n; i++) {
                float r = rintf(w[i] * inv);
                double q = r < -8.0f ? -8.0 : r > 7.0f ? 7.0 : (double)r;
                a += q * (double)w[i];
                aw += fabs(q * (double)w[i]);
                b += q * q;
            }
            ck_assert(b == (double)qq); /* small integers: exact in float */
            ck_assert(fabs(a - (double)qw) <= 1e-5 * aw + 1e-30);
        }
    }
}
END_TEST

/* xorshift64: the test's own integers */
static uint64_t qbx_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The exact-repack group check: both paths accept a block whose ref is
 * (code - zero) * sf bit for bit, give the same q and sum of q^2 as a
 * plain loop, and reject a flipped low bit anywhere or a code outside the
 * grid (also in the scalar tail). */
START_TEST(test_check_group)
{
    static const size_t sizes[] = {1, 7, 8, 9, 32, 64, 100, 128, 131};
    static const int32_t zeros[] = {8, 4, 2, 1};
    uint64_t seed = 21;
    uint8_t codes[131];
    float ref[131];
    int8_t q[131];
    int trial, impl;
    for (trial = 0; trial < 600; trial++) {
        size_t n = sizes[trial % 9], i, at;
        int32_t zero = zeros[trial % 4];
        float sf = qb_f16_to_f32(qb_f32_to_f16((float)(normal(&seed) * 0.01)));
        int64_t want_qq = 0;
        for (i = 0; i < n; i++) {
            codes[i] = (uint8_t)(qbx_rand(&seed) % (uint64_t)(2 * zero));
            ref[i] = (float)((int)codes[i] - zero) * sf;
            want_qq += ((int)codes[i] - zero) * ((int)codes[i] - zero);
        }
        at = (size_t)(qbx_rand(&seed) % n);
        for (impl = 1; impl <= (qbk_i4e_have_avx2() ? 2 : 1); impl++) {
            int64_t qq = -1;
            uint32_t bits;
            uint8_t saved;
            ck_assert_int_eq(qbk_i4e_check_group((qbk_i4e_impl)impl, codes, ref, n, zero, sf, q, &qq), 0);
            ck_assert_int_eq(qq, want_qq);
            for (i = 0; i < n; i++)
                ck_assert_int_eq(q[i], (int)codes[i] - zero);
            bits = qb_f32_bits(ref[at]) ^ 1u;
            memcpy(&ref[at], &bits, 4);
            ck_assert_int_ne(qbk_i4e_check_group((qbk_i4e_impl)impl, codes, ref, n, zero, sf, q, &qq), 0);
            bits ^= 1u;
            memcpy(&ref[at], &bits, 4);
            saved = codes[at];
            codes[at] = (uint8_t)(2 * zero + (int)(trial % 3));
            ck_assert_int_ne(qbk_i4e_check_group((qbk_i4e_impl)impl, codes, ref, n, zero, sf, q, &qq), 0);
            codes[at] = saved;
        }
    }
}
END_TEST

START_TEST(test_nonfinite_both)
{
    float w[40];
    int impl;
    size_t i;
    for (i = 0; i < 40; i++)
        w[i] = 0.01f * (float)i;
    for (impl = 1; impl <= (qbk_i4e_have_avx2() ? 2 : 1); impl++) {
        float a, e;
        w[37] = NAN;
        ck_assert_int_eq(qbk_i4e_absmax((qbk_i4e_impl)impl, w, 40, &a, &e), -1);
        w[37] = -INFINITY;
        ck_assert_int_eq(qbk_i4e_absmax((qbk_i4e_impl)impl, w, 40, &a, &e), -1);
        w[37] = -0.5f;
        ck_assert_int_eq(qbk_i4e_absmax((qbk_i4e_impl)impl, w, 40, &a, &e), 0);
        ck_assert_float_eq(a, 0.5f);
        ck_assert_float_eq(e, -0.5f);
    }
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("qbk_int4_eval");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_avx2_equals_portable);
    tcase_add_test(tc, test_kernels_equal);
    tcase_add_test(tc, test_codes_reference);
    tcase_add_test(tc, test_fit_reference);
    tcase_add_test(tc, test_check_group);
    tcase_add_test(tc, test_nonfinite_both);
    suite_add_tcase(s, tc);
    return s;
}
