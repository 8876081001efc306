/* The kit's FP4 decoding (sdk/kit/qbk_fp4_decode.c) against values worked
 * from the bit layouts of docs/formats/fp4.md: every E2M1 code built from
 * its sign/exponent/mantissa fields, E8M0 as ldexp, and the nibble order of
 * a packed row with an odd length. */
#include <math.h>
#include <string.h>

#include "qbk_fp4_decode.h"
#include "qbt_check_main.h"

/* E2M1 from its fields: exponent 0 is subnormal (m/2), else (1+m/2)*2^(e-1). */
static float e2m1_from_fields(unsigned code)
{
    const unsigned s = (code >> 3) & 1u, e = (code >> 1) & 3u, m = code & 1u;
    const float mag = e == 0 ? 0.5f * (float)m : ldexpf(1.0f + 0.5f * (float)m, (int)e - 1);
    return s ? -mag : mag;
}

START_TEST(e2m1_every_code)
{
    for (unsigned c = 0; c < 16; c++) {
        const float got = qbk_fp4_e2m1_to_f32((uint8_t)c), want = e2m1_from_fields(c);
        ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "code %u: %g vs %g", c, got, want);
        /* Bits above the nibble are ignored. */
        ck_assert_float_eq(qbk_fp4_e2m1_to_f32((uint8_t)(c | 0xA0u)), want);
    }
    ck_assert_float_eq(qbk_fp4_e2m1_to_f32(7), 6.0f);
    ck_assert_float_eq(qbk_fp4_e2m1_to_f32(9), -0.5f);
    ck_assert(signbit(qbk_fp4_e2m1_to_f32(8)));
}
END_TEST

START_TEST(e8m0_powers)
{
    for (int e = 0; e < 255; e++) {
        const float got = qbk_e8m0_to_f32((uint8_t)e);
        ck_assert_msg(got == ldexpf(1.0f, e - 127) && got > 0.0f, "e=%d", e);
    }
    ck_assert_float_eq(qbk_e8m0_to_f32(127), 1.0f);
    ck_assert(isnan(qbk_e8m0_to_f32(255)));
}
END_TEST

START_TEST(row_nibble_order)
{
    /* 0x71: low nibble 1 (0.5) is element 0, high nibble 7 (6) element 1. */
    const uint8_t src[3] = {0x71, 0x9A, 0xF5};
    float dst[5];
    dst[4] = 0.0f;
    qbk_fp4_e2m1_row_to_f32(src, 5, 4.0f, dst);
    ck_assert_float_eq(dst[0], 2.0f);
    ck_assert_float_eq(dst[1], 24.0f);
    ck_assert_float_eq(dst[2], -4.0f); /* 0xA: -1 */
    ck_assert_float_eq(dst[3], -2.0f); /* 0x9: -0.5 */
    ck_assert_float_eq(dst[4], 12.0f); /* 0x5: 3; the high nibble 0xF is past n */
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("fp4_decode");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, e2m1_every_code);
    tcase_add_test(tc, e8m0_powers);
    tcase_add_test(tc, row_nibble_order);
    suite_add_tcase(s, tc);
    return s;
}
