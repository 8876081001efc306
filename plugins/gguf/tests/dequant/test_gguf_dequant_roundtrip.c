/*
 * Round trips: tests/gen/ggml_quant.c quantizes known weights, gguf_ggml
 * decodes them, and the reconstruction error must stay within what the
 * type's code width allows. These are TOLERANCE checks (relative RMS error
 * over 8192 Gaussian weights; bounds are a margin above the error of plain
 * round-to-nearest at that bit width, measured values are printed), except
 * the ternary and F32 cases, which are EXACT.
 */
#include "tgd.h"

#include "ggml_quant.h"
#include "ggml_types.h"

#include <quantbridge/qb_abi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 8192 };

static const struct {
    uint32_t type;
    double max_rel_rms;
} rt_cases[] = {
    {GGUF_GGML_TYPE_F16, 0.0005},   {GGUF_GGML_TYPE_BF16, 0.004},
    {GGUF_GGML_TYPE_Q8_0, 0.01},    {GGUF_GGML_TYPE_Q6_K, 0.03},
    {GGUF_GGML_TYPE_Q5_0, 0.06},    {GGUF_GGML_TYPE_Q5_1, 0.06},
    {GGUF_GGML_TYPE_Q5_K, 0.06},    {GGUF_GGML_TYPE_Q4_0, 0.12},
    {GGUF_GGML_TYPE_Q4_1, 0.12},    {GGUF_GGML_TYPE_Q4_K, 0.12},
    {GGUF_GGML_TYPE_IQ4_NL, 0.12},  {GGUF_GGML_TYPE_IQ4_XS, 0.12},
    {GGUF_GGML_TYPE_MXFP4, 0.20},   {GGUF_GGML_TYPE_Q3_K, 0.25},
    {GGUF_GGML_TYPE_Q2_K, 0.50},
};

static float *gaussian(uint64_t seed, double sigma)
{
    qbt_rng r = {seed};
    float *x = malloc(sizeof(float) * N);
    ck_assert_ptr_nonnull(x);
    for (int i = 0; i < N; i++)
        x[i] = (float)(qbt_rng_normal(&r) * sigma);
    return x;
}

/* quantize + decode x into y through `type` */
static void through(uint32_t type, const float *x, float *y, int64_t n)
{
    uint64_t bytes;
    ck_assert_int_eq(gguf_ggml_row_bytes(type, n, &bytes), QB_OK);
    void *q = malloc(bytes);
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(qbt_ggml_quantize_row(type, x, q, n), 0);
    gguf_ggml_dequantize_row(type, q, y, n);
    free(q);
}

START_TEST(test_roundtrip_gaussian)
{
    const uint32_t type = rt_cases[_i].type;
    float *x = gaussian(1000 + (uint64_t)_i, 0.02), *y = malloc(sizeof(float) * N);
    double se = 0, sx = 0;
    through(type, x, y, N);
    for (int i = 0; i < N; i++) {
        se += (double)(y[i] - x[i]) * (y[i] - x[i]);
        sx += (double)x[i] * x[i];
    }
    const double rel = sqrt(se / sx);
    printf("round trip %-7s rel RMS error %.5f (bound %.3f)\n", gguf_ggml_type_name(type), rel,
           rt_cases[_i].max_rel_rms);
    ck_assert_msg(rel <= rt_cases[_i].max_rel_rms, "%s: rel RMS %g", gguf_ggml_type_name(type), rel);
    /* a quantizer that ignored its input would still pass a loose bound
     * on a constant; also require it to track sign on large weights */
    for (int i = 0; i < N; i++)
        if (fabsf(x[i]) > 0.04f)
            ck_assert_msg((x[i] > 0) == (y[i] > 0), "%s: sign of %d", gguf_ggml_type_name(type), i);
    free(x);
    free(y);
}
END_TEST

/* Ternary weights {-a, 0, a} with a an fp16 value come back exactly; F32
 * is the identity. */
START_TEST(test_roundtrip_exact)
{
    static const uint32_t types[] = {GGUF_GGML_TYPE_TQ1_0, GGUF_GGML_TYPE_TQ2_0, GGUF_GGML_TYPE_F32};
    qbt_rng r = {77};
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        for (int i = 0; i < N; i++) {
            /* each 256-block has a +-0.0390625 (exact in fp16) somewhere */
            const int k = (int)(qbt_rng_u64(&r) % 3) - 1;
            x[i] = (float)k * 0.0390625f;
            if (i % 256 == 17)
                x[i] = -0.0390625f;
        }
        through(types[t], x, y, N);
        for (int i = 0; i < N; i++)
            ck_assert_msg(x[i] == y[i], "%s element %d: %g != %g", gguf_ggml_type_name(types[t]), i,
                          (double)x[i], (double)y[i]);
    }
    free(x);
    free(y);
}
END_TEST

/* Q8_0/Q4_0 per element: error at most half a step, except Q4_0's top
 * code clamp (7 vs 8 steps) which costs at most one step. */
START_TEST(test_roundtrip_element_bounds)
{
    float *x = gaussian(5, 1.0), *y = malloc(sizeof(float) * N);
    through(GGUF_GGML_TYPE_Q8_0, x, y, N);
    for (int b = 0; b < N / 32; b++) {
        float amax = 0;
        for (int e = 0; e < 32; e++)
            amax = fmaxf(amax, fabsf(x[32 * b + e]));
        const float step = amax / 127.0f;
        for (int e = 0; e < 32; e++)
            ck_assert(fabsf(y[32 * b + e] - x[32 * b + e]) <= 0.5f * step * 1.01f + 1e-7f);
    }
    through(GGUF_GGML_TYPE_Q4_0, x, y, N);
    for (int b = 0; b < N / 32; b++) {
        float amax = 0;
        for (int e = 0; e < 32; e++)
            amax = fmaxf(amax, fabsf(x[32 * b + e]));
        const float step = amax / 8.0f;
        for (int e = 0; e < 32; e++)
            ck_assert(fabsf(y[32 * b + e] - x[32 * b + e]) <= step * 1.01f);
    }
    free(x);
    free(y);
}
END_TEST

START_TEST(test_quantize_rejects)
{
    float x[64] = {0};
    uint8_t out[64];
    ck_assert_int_eq(qbt_ggml_quantize_row(GGUF_GGML_TYPE_Q4_0, x, out, 16), -1);
    ck_assert_int_eq(qbt_ggml_quantize_row(GGUF_GGML_TYPE_IQ2_XXS, x, out, 256), -1);
    ck_assert_int_eq(qbt_ggml_quantize_row(4, x, out, 32), -1);
    ck_assert_int_eq(qbt_ggml_can_quantize(GGUF_GGML_TYPE_Q4_K), 1);
    ck_assert_int_eq(qbt_ggml_can_quantize(GGUF_GGML_TYPE_IQ1_S), 0);
}
END_TEST

void tgd_add_roundtrip(Suite *s)
{
    TCase *tc = tcase_create("roundtrip");
    tcase_add_loop_test(tc, test_roundtrip_gaussian, 0, (int)(sizeof rt_cases / sizeof rt_cases[0]));
    tcase_add_test(tc, test_roundtrip_exact);
    tcase_add_test(tc, test_roundtrip_element_bounds);
    tcase_add_test(tc, test_quantize_rejects);
    suite_add_tcase(s, tc);
}
