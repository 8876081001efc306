/*
 * sm86-w4a16 unit tests: the int4 rules (quantize.c) and the nibble layout
 * (sdk/kit/w4a16_int4.c), against known integer codes and the format's own definition.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "w4t_fake.h"
#include "w4w.h"

/* Independent decode of one element as w4a16-format.md defines it. */
static float ref_decode(const uint8_t *row, const uint16_t *scales, int64_t c, int64_t gs)
{
    unsigned b = row[c / 2];
    int q = (int)((c % 2 == 0) ? (b & 15u) : (b >> 4)) - 8;
    return (float)q * qb_f16_to_f32(scales[c / gs]);
}

START_TEST(test_pack_nibble_order)
{
    const int8_t q[5] = {-8, 7, 0, 1, -1};
    uint8_t out[3] = {0xaa, 0xaa, 0xaa};
    int8_t back[5];
    w4a16_int4_pack_row(q, 5, out);
    /* col 0 (-8 -> 0) low, col 1 (7 -> 15) high; col 2 (0 -> 8) low,
     * col 3 (1 -> 9) high; col 4 (-1 -> 7) low, unused high nibble 8 */
    ck_assert_uint_eq(out[0], 0xf0);
    ck_assert_uint_eq(out[1], 0x98);
    ck_assert_uint_eq(out[2], 0x87);
    w4a16_int4_unpack_row(out, 5, back);
    ck_assert_mem_eq(back, q, 5);
}
END_TEST

START_TEST(test_pack_round_trip)
{
    uint64_t seed = 7;
    int64_t cols, c;
    /* beyond 32 columns the SSE2 path packs 32 at a time, then the tail */
    for (cols = 1; cols <= 100; cols++) {
        int8_t q[100], back[100];
        uint8_t p[50];
        for (c = 0; c < cols; c++)
            q[c] = (int8_t)((int)(fabs(w4t_normal(&seed)) * 1000) % 16 - 8);
        w4a16_int4_pack_row(q, cols, p);
        w4a16_int4_unpack_row(p, cols, back);
        ck_assert_mem_eq(back, q, (size_t)cols);
        /* the format's own words: byte c/2 = (q[c] + 8) | (q[c+1] + 8) << 4 */
        for (c = 0; c + 1 < cols; c += 2)
            ck_assert_uint_eq(p[c / 2], (unsigned)(q[c] + 8) | (unsigned)(q[c + 1] + 8) << 4);
        if (cols & 1)
            ck_assert_uint_eq(p[cols / 2] >> 4, 8);
    }
}
END_TEST

/* Values that ARE q * s with s exact in fp16 and |q| reaching 7: absmax/7
 * gives back s, so the codes come back exactly. */
START_TEST(test_absmax_recovers_known_codes)
{
    const float s = 0.0078125f; /* 2^-7, exact in fp16 */
    int8_t q[64], got[64];
    float w[64];
    uint16_t sc;
    double err;
    uint64_t seed = 11;
    int i;
    for (i = 0; i < 64; i++) {
        q[i] = (int8_t)((int)(fabs(w4t_normal(&seed)) * 1000) % 15 - 7);
        w[i] = (float)q[i] * s;
    }
    q[5] = 7;
    w[5] = 7 * s;
    ck_assert_int_eq(w4w_quant_group(w, 64, W4W_RULE_ABSMAX, got, &sc, &err), 0);
    ck_assert_float_eq(qb_f16_to_f32(sc), s);
    ck_assert_mem_eq(got, q, 64);
    ck_assert(err == 0.0);
}
END_TEST

/* Code -8 is reachable only by the search: values q*s with q = -8 present
 * and nothing above 7 are exact under scale +s (found as absmax/8), while
 * absmax/7 cannot be exact. */
START_TEST(test_search_uses_minus8)
{
    const float s = 0.25f;
    float w[16];
    int8_t got[16], q[16];
    uint16_t sc;
    double err_s, err_a;
    int i;
    for (i = 0; i < 16; i++) {
        q[i] = (int8_t)(i - 8); /* -8 .. 7 */
        w[i] = (float)q[i] * s;
    }
    ck_assert_int_eq(w4w_quant_group(w, 16, W4W_RULE_ABSMAX, got, &sc, &err_a), 0);
    ck_assert(err_a > 0.0);
    ck_assert_int_eq(w4w_quant_group(w, 16, W4W_RULE_SEARCH, got, &sc, &err_s), 0);
    ck_assert(err_s == 0.0);
    ck_assert_float_eq(qb_f16_to_f32(sc), s);
    ck_assert_mem_eq(got, q, 16);
}
END_TEST

/* The mirror case: the extreme value is positive (+8s), reachable only with
 * a negative scale and code -8. */
START_TEST(test_negative_scale)
{
    const float s = 0.5f;
    float w[16];
    int8_t got[16];
    uint16_t sc;
    double err;
    int i;
    for (i = 0; i < 16; i++)
        w[i] = -(float)(i - 8) * s; /* +4 .. -3.5 */
    ck_assert_int_eq(w4w_quant_group(w, 16, W4W_RULE_AUTO, got, &sc, &err), 0);
    ck_assert(err == 0.0);
    ck_assert_float_eq(qb_f16_to_f32(sc), -s);
    for (i = 0; i < 16; i++)
        ck_assert_float_eq((float)got[i] * qb_f16_to_f32(sc), w[i]);
    ck_assert_int_eq(got[0], -8);
}
END_TEST

/* Per group, over many random groups of several shapes and sizes:
 * search <= absmax, auto == min(absmax, search), and the returned error is
 * the error of the returned codes and scale. */
START_TEST(test_search_never_worse)
{
    uint64_t seed = 99;
    int trial;
    for (trial = 0; trial < 600; trial++) {
        size_t n = 1 + (size_t)(trial % 130), i;
        float w[130];
        int8_t qa[130], qs[130], qu[130];
        uint16_t sa, ss, su;
        double ea, es, eu, chk = 0.0;
        for (i = 0; i < n; i++) {
            double v = w4t_normal(&seed);
            if (trial % 3 == 1)
                v = v * v * v; /* heavy tails */
            if (trial % 3 == 2)
                v = fmod(fabs(v) * 7.3, 2.0) - 1.0; /* roughly uniform */
            w[i] = (float)(v * 0.03);
        }
        ck_assert_int_eq(w4w_quant_group(w, n, W4W_RULE_ABSMAX, qa, &sa, &ea), 0);
        ck_assert_int_eq(w4w_quant_group(w, n, W4W_RULE_SEARCH, qs, &ss, &es), 0);
        ck_assert_int_eq(w4w_quant_group(w, n, W4W_RULE_AUTO, qu, &su, &eu), 0);
        ck_assert(es <= ea);
        ck_assert(eu == (es < ea ? es : ea));
        for (i = 0; i < n; i++) {
            double d = (double)((float)qu[i] * qb_f16_to_f32(su)) - (double)w[i];
            ck_assert(qu[i] >= -8 && qu[i] <= 7);
            chk += d * d;
        }
        ck_assert(fabs(chk - eu) <= 1e-12 * (chk + 1e-30));
    }
}
END_TEST

/* Weighted error sum imp (w - q s)^2 recomputed here from the codes and scale. */
static double weighted_err(const float *w, const float *imp, size_t n, const int8_t *q,
                           uint16_t sc)
{
    double e = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        double d = (double)((float)q[i] * qb_f16_to_f32(sc)) - (double)w[i];
        e += (double)imp[i] * d * d;
    }
    return e;
}

/* The weighted rule never does worse than absmax in the weighted error, reports the plain
 * error of the codes it wrote, and with all the importance on one column serves that column
 * at least as well as absmax does. */
START_TEST(test_weighted_never_worse)
{
    uint64_t seed = 7;
    int trial;
    for (trial = 0; trial < 400; trial++) {
        size_t n = 2 + (size_t)(trial % 127), i, hot = (size_t)trial % n;
        float w[130], imp[130];
        int8_t qa[130], qw[130];
        uint16_t sa, sw;
        double ea, ew, chk = 0.0, wa, ww;
        for (i = 0; i < n; i++) {
            double v = w4t_normal(&seed);
            w[i] = (float)((trial % 2 ? v * v * v : v) * 0.02);
            imp[i] = trial % 4 == 3 ? (i == hot ? 1000.0f : 1e-3f)
                                    : (float)(0.1 + fabs(w4t_normal(&seed)));
        }
        ck_assert_int_eq(w4w_quant_group(w, n, W4W_RULE_ABSMAX, qa, &sa, &ea), 0);
        ck_assert_int_eq(w4w_quant_group_weighted(w, imp, n, qw, &sw, &ew), 0);
        wa = weighted_err(w, imp, n, qa, sa);
        ww = weighted_err(w, imp, n, qw, sw);
        ck_assert_msg(ww <= wa * (1.0 + 1e-12), "trial %d: weighted %g > absmax %g", trial, ww, wa);
        for (i = 0; i < n; i++) {
            double d = (double)((float)qw[i] * qb_f16_to_f32(sw)) - (double)w[i];
            ck_assert(qw[i] >= -8 && qw[i] <= 7);
            chk += d * d;
        }
        ck_assert(fabs(chk - ew) <= 1e-12 * (chk + 1e-30));
        if (trial % 4 == 3) {
            double dh = (double)((float)qw[hot] * qb_f16_to_f32(sw)) - (double)w[hot];
            double da = (double)((float)qa[hot] * qb_f16_to_f32(sa)) - (double)w[hot];
            ck_assert(fabs(dh) <= fabs(da) + 1e-12);
        }
    }
}
END_TEST

/* keep: absmax/7 or the extreme on -8, whichever errs less; either way the largest weight is
 * reproduced to within fp16 rounding of its scale (no clipping). */
START_TEST(test_keep_keeps_extreme)
{
    uint64_t seed = 11;
    int trial;
    for (trial = 0; trial < 400; trial++) {
        size_t n = 1 + (size_t)(trial % 130), i, at = 0;
        float w[130];
        int8_t qa[130], qk[130];
        uint16_t sa, sk;
        double ea, ek, amax = 0.0, dec;
        for (i = 0; i < n; i++) {
            double v = w4t_normal(&seed);
            w[i] = (float)((trial % 2 ? v * v * v : v) * 0.05);
            if (fabs(w[i]) > amax) {
                amax = fabs(w[i]);
                at = i;
            }
        }
        ck_assert_int_eq(w4w_quant_group(w, n, W4W_RULE_ABSMAX, qa, &sa, &ea), 0);
        ck_assert_int_eq(w4w_quant_group(w, n, W4W_RULE_KEEP, qk, &sk, &ek), 0);
        ck_assert(ek <= ea);
        dec = (double)((float)qk[at] * qb_f16_to_f32(sk));
        ck_assert_msg(fabs(dec - (double)w[at]) <= 1e-3 * amax, "trial %d: extreme %g -> %g",
                      trial, (double)w[at], dec);
    }
}
END_TEST

START_TEST(test_zero_group)
{
    float w[9] = {0};
    int8_t q[9];
    uint16_t sc = 1;
    double err = 1;
    uint8_t p[5];
    int r;
    for (r = 0; r < 3; r++) {
        ck_assert_int_eq(w4w_quant_group(w, 9, (w4w_rule)r, q, &sc, &err), 0);
        ck_assert_uint_eq(sc, 0);
        ck_assert(err == 0.0);
    }
    w4a16_int4_pack_row(q, 9, p);
    for (r = 0; r < 5; r++)
        ck_assert_uint_eq(p[r], 0x88);
}
END_TEST

START_TEST(test_nonfinite_and_overflow)
{
    float w[4] = {1, 2, NAN, 3};
    float big[2] = {1e6f, -2e6f};
    int8_t q[4];
    uint16_t sc;
    double err;
    ck_assert_int_eq(w4w_quant_group(w, 4, W4W_RULE_AUTO, q, &sc, &err), W4W_EQUANT_NONFINITE);
    w[2] = INFINITY;
    ck_assert_int_eq(w4w_quant_group(w, 4, W4W_RULE_ABSMAX, q, &sc, &err), W4W_EQUANT_NONFINITE);
    ck_assert_int_eq(w4w_quant_group(big, 2, W4W_RULE_ABSMAX, q, &sc, &err), W4W_EQUANT_OVERFLOW);
    ck_assert_int_eq(w4w_quant_group(big, 2, W4W_RULE_SEARCH, q, &sc, &err), W4W_EQUANT_OVERFLOW);
}
END_TEST

/* w4a16_int4_decode_row agrees with the independent decoder, last group short. */
START_TEST(test_decode_row_short_group)
{
    const int64_t cols = 13, gs = 5;
    int8_t q[13];
    uint8_t p[7];
    uint16_t sc[3];
    float out[13];
    int64_t c;
    for (c = 0; c < cols; c++)
        q[c] = (int8_t)(c % 16 - 8);
    sc[0] = qb_f32_to_f16(0.5f);
    sc[1] = qb_f32_to_f16(-0.25f);
    sc[2] = qb_f32_to_f16(3.0f);
    w4a16_int4_pack_row(q, cols, p);
    w4a16_int4_decode_row(p, sc, cols, gs, NULL, out);
    for (c = 0; c < cols; c++) {
        ck_assert_float_eq(out[c], ref_decode(p, sc, c, gs));
        ck_assert_float_eq(out[c], (float)q[c] * qb_f16_to_f32(sc[c / gs]));
    }
}
END_TEST

/* With a perm, stored column c lands at perm[c]; the fp32 codes and the
 * scalar accessors agree with the packed bytes; scales may be unaligned. */
START_TEST(test_decode_row_perm_codes)
{
    const int64_t cols = 7, gs = 3;
    const int32_t perm[7] = {3, 0, 6, 1, 5, 2, 4};
    int8_t q[7] = {-8, 7, -1, 0, 3, -5, 2};
    uint8_t p[4], sraw[1 + 6];
    uint16_t sc[3];
    float out[7], codes[7];
    int64_t c;
    sc[0] = qb_f32_to_f16(0.5f);
    sc[1] = qb_f32_to_f16(-2.0f);
    sc[2] = qb_f32_to_f16(0.125f);
    memcpy(sraw + 1, sc, sizeof sc);
    w4a16_int4_pack_row(q, cols, p);
    w4a16_int4_decode_row(p, sraw + 1, cols, gs, perm, out);
    w4a16_int4_codes_f32(p, cols, codes);
    for (c = 0; c < cols; c++) {
        ck_assert_float_eq(out[perm[c]], ref_decode(p, sc, c, gs));
        ck_assert_float_eq(codes[c], (float)q[c]);
        ck_assert_int_eq(w4a16_int4_code(p, c), q[c]);
        ck_assert_uint_eq(w4a16_int4_nibble(p, c), (unsigned)(q[c] + 8));
    }
}
END_TEST

/* Counts are ceilings and stay in int64_t range at the top end. */
START_TEST(test_int4_counts)
{
    ck_assert_int_eq(w4a16_int4_packed_bytes(0), 0);
    ck_assert_int_eq(w4a16_int4_packed_bytes(1), 1);
    ck_assert_int_eq(w4a16_int4_packed_bytes(4096), 2048);
    ck_assert_int_eq(w4a16_int4_packed_bytes(INT64_MAX), INT64_MAX / 2 + 1);
    ck_assert_int_eq(w4a16_int4_n_groups(0, 128), 0);
    ck_assert_int_eq(w4a16_int4_n_groups(11, 4), 3);
    ck_assert_int_eq(w4a16_int4_n_groups(128, 128), 1);
    ck_assert_int_eq(w4a16_int4_n_groups(INT64_MAX, 2), INT64_MAX / 2 + 1);
    ck_assert_int_eq(w4a16_int4_n_groups(INT64_MAX, INT64_MAX), 1);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("sm86-w4a16-quant");
    TCase *tc = tcase_create("quant");
    tcase_add_test(tc, test_pack_nibble_order);
    tcase_add_test(tc, test_pack_round_trip);
    tcase_add_test(tc, test_decode_row_perm_codes);
    tcase_add_test(tc, test_int4_counts);
    tcase_add_test(tc, test_absmax_recovers_known_codes);
    tcase_add_test(tc, test_search_uses_minus8);
    tcase_add_test(tc, test_negative_scale);
    tcase_add_test(tc, test_search_never_worse);
    tcase_add_test(tc, test_weighted_never_worse);
    tcase_add_test(tc, test_keep_keeps_extreme);
    tcase_add_test(tc, test_zero_group);
    tcase_add_test(tc, test_nonfinite_and_overflow);
    tcase_add_test(tc, test_decode_row_short_group);
    suite_add_tcase(s, tc);
    return s;
}

