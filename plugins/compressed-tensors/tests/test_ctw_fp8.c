/*
 * Tests of the compressed-tensors writer's FP8 pieces (ctw_encode.c): the
 * float8 e4m3fn encoder against the kit's decoder (every finite code back
 * to itself, every midpoint between neighbours to the even one, values just
 * beside a midpoint to the nearer one) and one row's round to nearest
 * against a reference computed here from the definition (amax / 448,
 * each value divided, clamped, rounded to the nearest e4m3 by search).
 */
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ctw.h"
#include "qbk_fp8_decode.h"

static int is_nan_code(int c)
{
    return (c & 0x7f) == 0x7f;
}

START_TEST(test_e4m3_codes_round_trip)
{
    int c;
    for (c = 0; c < 256; c++) {
        float v;
        if (is_nan_code(c))
            continue;
        v = qbk_fp8_e4m3fn_to_f32((uint8_t)c);
        ck_assert_msg(ctw_f32_to_e4m3(v) == c, "code 0x%02x (%g) encodes to 0x%02x", c, (double)v,
                      ctw_f32_to_e4m3(v));
    }
}
END_TEST

START_TEST(test_e4m3_ties_to_even)
{
    int c;
    for (c = 0; c < 0x7e; c++) {
        float lo = qbk_fp8_e4m3fn_to_f32((uint8_t)c), hi = qbk_fp8_e4m3fn_to_f32((uint8_t)(c + 1));
        float mid = (lo + hi) / 2.0f; /* exact: both have at most 4 significant bits */
        int even = (c & 1) ? c + 1 : c;
        ck_assert_msg(ctw_f32_to_e4m3(mid) == even, "midpoint %g of 0x%02x/0x%02x gives 0x%02x",
                      (double)mid, c, c + 1, ctw_f32_to_e4m3(mid));
        ck_assert_int_eq(ctw_f32_to_e4m3(nextafterf(mid, 0.0f)), c);
        ck_assert_int_eq(ctw_f32_to_e4m3(nextafterf(mid, 1000.0f)), c + 1);
        ck_assert_int_eq(ctw_f32_to_e4m3(-mid), 0x80 | even);
    }
}
END_TEST

/* Nearest e4m3 code to v by search over every finite code (ties: even). */
static uint8_t nearest(float v)
{
    int c, best = 0;
    double bd = INFINITY;
    for (c = 0; c < 256; c++) {
        double d;
        if (is_nan_code(c))
            continue;
        d = fabs((double)qbk_fp8_e4m3fn_to_f32((uint8_t)c) - (double)v);
        if (d < bd || (d == bd && (c & 1) == 0 && (c & 0x80) == (signbit(v) ? 0x80 : 0))) {
            bd = d;
            best = c;
        }
    }
    return (uint8_t)best;
}

START_TEST(test_fp8_row_round_to_nearest)
{
    float x[64], s = 0.0f;
    uint8_t q[64];
    double err2 = 0, ref2 = 0, emax = 0, want2 = 0;
    int k;
    uint32_t r = 12345u;
    for (k = 0; k < 64; k++) {
        r = r * 1103515245u + 12345u;
        x[k] = ((float)((r >> 8) & 0xffff) / 65536.0f - 0.5f) * 3.0f;
    }
    x[5] = -2.75f; /* the row's largest magnitude: maps to -448 */
    ctw_fp8_row(QB_DT_F32, x, 64, q, &s, &err2, &ref2, &emax);
    ck_assert(s == 2.75f / 448.0f);
    for (k = 0; k < 64; k++) {
        float want_v = x[k] / s, d;
        uint8_t w = nearest(want_v > 448.0f ? 448.0f : want_v < -448.0f ? -448.0f : want_v);
        ck_assert_msg(q[k] == w, "x[%d] = %g: code 0x%02x, nearest 0x%02x", k, (double)x[k],
                      q[k], w);
        d = qbk_fp8_e4m3fn_to_f32(w) * s - x[k];
        want2 += (double)d * d;
    }
    ck_assert_int_eq(q[5], 0x80 | 0x7e);
    ck_assert(fabs(err2 - want2) <= 1e-12 * (want2 + 1e-30));
    ck_assert(err2 > 0 && ref2 > 0 && emax > 0);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("ctw_fp8");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_e4m3_codes_round_trip);
    tcase_add_test(tc, test_e4m3_ties_to_even);
    tcase_add_test(tc, test_fp8_row_round_to_nearest);
    suite_add_tcase(s, tc);
    return s;
}

