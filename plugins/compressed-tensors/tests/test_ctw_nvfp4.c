/*
 * Tests of the compressed-tensors writer's NVFP4 pieces (ctw_encode.c):
 * the E2M1 encoder against the OCP MX definition of the format (1 sign,
 * 2 exponent bits with bias 1, 1 mantissa bit; exponent 0 is subnormal),
 * computed here by formula; the nibble packing (column 2i in the low
 * nibble); and one row's round to nearest against a reference computed
 * here from the definition (global 2688 / amax, group scale
 * e4m3(global * amax_g / 6), value / (scale / global), nearest E2M1 by
 * search).
 */
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ctw.h"
#include "qbk_fp8_decode.h"

/* E2M1 code c's value by the OCP definition. */
static float e2m1_value(int c)
{
    int e = (c >> 1) & 3, m = c & 1;
    float v = e == 0 ? 0.5f * (float)m : ldexpf(1.0f + 0.5f * (float)m, e - 1);
    return (c & 8) ? -v : v;
}

/* Nearest E2M1 code to v (|v| <= 6) by search; ties to the even code. */
static uint8_t nearest_e2m1(float v)
{
    int c, best = 0;
    float bd = INFINITY;
    for (c = 0; c < 8; c++) {
        float d = fabsf(fabsf(v) - e2m1_value(c));
        if (d < bd || (d == bd && (c & 1) == 0)) {
            bd = d;
            best = c;
        }
    }
    return (uint8_t)(best | (v < 0.0f ? 8 : 0));
}

START_TEST(test_e2m1_codes_round_trip)
{
    int c;
    for (c = 0; c < 16; c++) {
        if (c == 8)
            continue; /* -0 encodes as +0: it is not negative */
        ck_assert_msg(ctw_f32_to_e2m1(e2m1_value(c)) == c, "code %d (%g) encodes to %d", c,
                      (double)e2m1_value(c), ctw_f32_to_e2m1(e2m1_value(c)));
    }
}
END_TEST

START_TEST(test_e2m1_ties_to_even)
{
    int c;
    for (c = 0; c < 7; c++) {
        float lo = e2m1_value(c), hi = e2m1_value(c + 1), mid = (lo + hi) / 2.0f;
        int even = (c & 1) ? c + 1 : c;
        ck_assert_msg(ctw_f32_to_e2m1(mid) == even, "midpoint %g gives %d", (double)mid,
                      ctw_f32_to_e2m1(mid));
        ck_assert_int_eq(ctw_f32_to_e2m1(nextafterf(mid, 0.0f)), c);
        ck_assert_int_eq(ctw_f32_to_e2m1(nextafterf(mid, 10.0f)), c + 1);
        ck_assert_int_eq(ctw_f32_to_e2m1(-mid), 8 | even);
    }
    /* a negative value rounding to 0 keeps the sign bit (torch.signbit of -0.0) */
    ck_assert_int_eq(ctw_f32_to_e2m1(-0.1f), 8);
    ck_assert_int_eq(ctw_f32_to_e2m1(0.1f), 0);
}
END_TEST

START_TEST(test_e2m1_packing)
{
    uint8_t codes[6] = {0x1, 0xF, 0x8, 0x7, 0xA, 0x0}, out[3];
    int k;
    ctw_pack_e2m1_row(codes, 6, out);
    for (k = 0; k < 6; k++) {
        int nib = (out[k / 2] >> (4 * (k & 1))) & 0xF;
        ck_assert_int_eq(nib, codes[k]);
    }
    ck_assert_int_eq(out[0], 0xF1);
}
END_TEST

START_TEST(test_nvfp4_row_round_to_nearest)
{
    float x[64], amax = 0.0f, gs;
    uint8_t q[64], s[4];
    double err2 = 0, ref2 = 0, emax = 0, want2 = 0;
    int k, g;
    uint32_t r = 777u;
    for (k = 0; k < 64; k++) {
        r = r * 1103515245u + 12345u;
        x[k] = ((float)((r >> 8) & 0xffff) / 65536.0f - 0.5f) * 0.02f * (float)(1 + k / 16);
        amax = fabsf(x[k]) > amax ? fabsf(x[k]) : amax;
    }
    for (k = 48; k < 64; k++)
        x[k] = 0.0f; /* an all-zero group: the scale becomes e4m3's eps 0.125 */
    gs = ctw_nvfp4_global(QB_DT_F32, amax);
    ck_assert(gs == (1.0f / amax) * 2688.0f);
    ctw_nvfp4_row(QB_DT_F32, gs, x, 64, q, s, &err2, &ref2, &emax);
    for (g = 0; g < 4; g++) {
        float ga = 0.0f, t, sc;
        for (k = g * 16; k < g * 16 + 16; k++)
            ga = fabsf(x[k]) > ga ? fabsf(x[k]) : ga;
        t = gs * (ga / 6.0f);
        if (ga == 0.0f)
            ck_assert_int_eq(s[g], 0x20);
        else
            /* one e4m3 step is 1/8 relative at most: the nearest is within 1/16 */
            ck_assert(fabsf(qbk_fp8_e4m3fn_to_f32(s[g]) - t) <= t / 16.0f);
        sc = qbk_fp8_e4m3fn_to_f32(s[g]) / gs;
        for (k = g * 16; k < g * 16 + 16; k++) {
            float v = x[k] / sc, d;
            uint8_t w = nearest_e2m1(v > 6.0f ? 6.0f : v < -6.0f ? -6.0f : v);
            ck_assert_msg(q[k] == w, "x[%d] = %g: code %d, nearest %d", k, (double)x[k], q[k], w);
            d = e2m1_value(w) * sc - x[k];
            want2 += (double)d * d;
        }
    }
    ck_assert(fabs(err2 - want2) <= 1e-12 * (want2 + 1e-30));
    ck_assert(err2 > 0 && ref2 > 0 && emax > 0);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("ctw_nvfp4");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_e2m1_codes_round_trip);
    tcase_add_test(tc, test_e2m1_ties_to_even);
    tcase_add_test(tc, test_e2m1_packing);
    tcase_add_test(tc, test_nvfp4_row_round_to_nearest);
    suite_add_tcase(s, tc);
    return s;
}
