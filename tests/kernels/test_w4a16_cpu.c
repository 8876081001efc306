/*
 * CPU reference GEMM (qb_w4a16_gemm_cpu) against ground truth:
 *   - exact: small integer x, scales +-1 / +-0.5 / 0: every partial sum is
 *     an exactly representable integer or half-integer, so y must equal
 *     the known product bit for bit (catches any decoding error);
 *   - random: float64 reference from the known codes on random shapes,
 *     group sizes (32, 64, 128, odd, > K, 1), perms, odd K, negative and
 *     zero scales, |x| ~ 1e3 outliers; bound: see qbt_w4a16_bound();
 *   - plain vs AVX2 agree within the same bound, and threads do not change
 *     the result (bitwise);
 *   - argument errors.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quantbridge/qb_half.h>
#include <quantbridge/qb_w4a16.h>

#include "qbt_w4a16_case.h"

static int check_case(const qbt_w4a16_case *c, const uint16_t *y, const char *what)
{
    int bad = 0;
    for (int64_t i = 0; i < c->M * c->N && bad < 5; i++) {
        double got = qb_f16_to_f32(y[i]);
        double b = qbt_w4a16_bound(c->ref[i], c->abs_sum[i], c->K, c->g);
        if (!(fabs(got - c->ref[i]) <= b)) {
            fprintf(stderr, "%s M=%lld N=%lld K=%lld g=%lld perm=%d: y[%lld]=%.9g ref=%.9g bound=%.3g\n",
                    what, (long long)c->M, (long long)c->N, (long long)c->K, (long long)c->g,
                    c->perm != NULL, (long long)i, got, c->ref[i], b);
            bad++;
        }
    }
    return bad;
}

START_TEST(test_exact_known_codes)
{
    /* K = 37 (odd), g = 5 (ragged last group of 2), N = 3, M = 2. */
    enum { M = 2, N = 3, K = 37, G = 5, SC = (K + G - 1) / G };
    static const float sv[4] = {1.0f, -1.0f, 0.5f, 0.0f};
    int8_t q[N * K];
    uint8_t packed[N * ((K + 1) / 2)];
    uint16_t scales[N * SC], x[M * K], y[M * N];
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            q[n * K + k] = (int8_t)(((n * 7 + k * 5) % 16) - 8);
    for (int i = 0; i < N * SC; i++)
        scales[i] = qb_f32_to_f16(sv[i % 4]);
    for (int i = 0; i < M * K; i++)
        x[i] = qb_f32_to_f16((float)((i * 3) % 7 - 3));
    qbt_w4a16_pack(q, N, K, packed);
    for (int path = QB_W4A16_CPU_PLAIN; path <= QB_W4A16_CPU_AVX2; path++) {
        if (path == QB_W4A16_CPU_AVX2 && !qb_w4a16_cpu_has_avx2())
            continue;
        ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, packed, scales, NULL, M, N, K, G, 1, path), 0);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double want = 0;
                for (int k = 0; k < K; k++)
                    want += q[n * K + k] * sv[(n * SC + k / G) % 4] * qb_f16_to_f32(x[m * K + k]);
                ck_assert_msg(qb_f16_to_f32(y[m * N + n]) == want, "path %d y[%d][%d] = %g, want %g",
                              path, m, n, qb_f16_to_f32(y[m * N + n]), want);
            }
    }
}
END_TEST

START_TEST(test_exact_permutation)
{
    /* perm reverses x; with W = identity-like codes y picks x[perm[c]]. */
    enum { K = 9, N = 9 };
    int8_t q[N * K] = {0};
    uint8_t packed[N * ((K + 1) / 2)];
    uint16_t scales[N], x[K], y[N];
    int32_t perm[K];
    for (int i = 0; i < K; i++) {
        q[i * K + i] = 1;
        perm[i] = K - 1 - i;
        x[i] = qb_f32_to_f16((float)(i + 1));
        scales[i] = qb_f32_to_f16(2.0f);
    }
    qbt_w4a16_pack(q, N, K, packed);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, packed, scales, perm, 1, N, K, K, 1, 0), 0);
    for (int n = 0; n < N; n++)
        ck_assert_float_eq(qb_f16_to_f32(y[n]), 2.0f * (float)(K - n));
}
END_TEST

/* Codes for one row with sum_c q[c] * x[c] == target: seeded random codes,
 * then the last columns with x != 0 moved towards the target (so the far
 * end of the row, where a wrong group index shows first, carries weight). */
static void codes_with_dot(qbt_rng *rng, const uint16_t *x, int64_t K, int target, int8_t *q)
{
    int dot = 0;
    for (int64_t k = 0; k < K; k++) {
        q[k] = (int8_t)((int)(qbt_rng_u64(rng) % 16) - 8);
        dot += q[k] * (int)qb_f16_to_f32(x[k]);
    }
    for (int64_t k = K - 1; k >= 0 && dot != target; k--) {
        int xv = (int)qb_f16_to_f32(x[k]), nq;
        if (!xv)
            continue;
        nq = q[k] + (target - dot) * xv;
        nq = nq < -8 ? -8 : nq > 7 ? 7 : nq;
        dot += (nq - q[k]) * xv;
        q[k] = (int8_t)nq;
    }
    ck_assert_int_eq(dot, target);
}

/* group_size >= K is one group per row for every value, including those
 * past int32 (issue 19: K = 4096, N = 3, scales 1, 2, -3, row sums -321,
 * 302, 682 must give -321, 604, -2046; a group count computed in int gave
 * row 0's scale to every row: -321, 302, 682). Sparse +-1 activations,
 * exact integers: compared for equality; the second token is the negated
 * first. */
static const int64_t big_g[] = {4096,       4097,       8192,        INT32_MAX,
                                (int64_t)INT32_MAX + 1,  (1LL << 32) - 1, 1LL << 32,
                                (1LL << 32) + 32,        1LL << 62,       INT64_MAX};

START_TEST(test_group_size_at_least_k)
{
    enum { K = 4096, N = 3, M = 2 };
    static const int target[N] = {-321, 302, 682};
    static const float sv[N] = {1.0f, 2.0f, -3.0f}, want[N] = {-321.0f, 604.0f, -2046.0f};
    static int8_t q[N * K];
    static uint8_t packed[N * K / 2];
    static uint16_t x[M * K];
    uint16_t scales[N], y[M * N];
    qbt_rng rng = {19};
    const int64_t g = big_g[_i];
    for (int k = 0; k < K; k++) {
        float v = k % 4 == 0 ? 1.0f : k % 4 == 1 ? -1.0f : 0.0f;
        x[k] = qb_f32_to_f16(v);
        x[K + k] = qb_f32_to_f16(-v);
    }
    for (int n = 0; n < N; n++) {
        codes_with_dot(&rng, x, K, target[n], q + n * K);
        scales[n] = qb_f32_to_f16(sv[n]);
    }
    qbt_w4a16_pack(q, N, K, packed);
    for (int path = QB_W4A16_CPU_PLAIN; path <= QB_W4A16_CPU_AVX2; path++) {
        if (path == QB_W4A16_CPU_AVX2 && !qb_w4a16_cpu_has_avx2())
            continue;
        for (int threads = 1; threads <= 2; threads++) {
            memset(y, 0xff, sizeof(y));
            ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, packed, scales, NULL, M, N, K, g, threads,
                                               path), 0);
            for (int n = 0; n < N; n++) {
                ck_assert_msg(qb_f16_to_f32(y[n]) == want[n] && qb_f16_to_f32(y[N + n]) == -want[n],
                              "g = %lld path %d: y[%d] = %g / %g, want %g", (long long)g, path, n,
                              qb_f16_to_f32(y[n]), qb_f16_to_f32(y[N + n]), want[n]);
            }
        }
    }
}
END_TEST

static const int64_t shapes[][4] = {
    /* M, N, K, g */
    {1, 64, 256, 128}, {1, 33, 4096, 128}, {3, 17, 255, 32}, {2, 8, 1000, 64},
    {16, 40, 384, 128}, {5, 19, 129, 7}, {1, 7, 77, 200}, {4, 12, 96, 1},
    {8, 24, 2048, 128}, {1, 5, 1, 128}, {2, 9, 3, 2}, {7, 31, 513, 33},
};

static void run_random(int path, int with_perm, int outliers)
{
    qbt_rng rng = {0x5eed0000u + (uint64_t)path * 131 + (uint64_t)with_perm * 7 + (uint64_t)outliers};
    int bad = 0;
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        qbt_w4a16_case c;
        uint16_t *y;
        qbt_w4a16_case_make(&c, &rng, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3],
                            with_perm, outliers);
        y = calloc((size_t)(c.M * c.N), 2);
        ck_assert_ptr_nonnull(y);
        ck_assert_int_eq(qb_w4a16_gemm_cpu(c.x, y, c.packed, c.scales, c.perm, c.M, c.N, c.K, c.g,
                                           (int)(s % 3) + 1, path), 0);
        bad += check_case(&c, y, path == QB_W4A16_CPU_AVX2 ? "avx2" : "plain");
        free(y);
        qbt_w4a16_case_free(&c);
    }
    ck_assert_int_eq(bad, 0);
}

/* The whole shape table with exact inputs (qbt_w4a16_case_make_exact):
 * every output equal to the exact value's fp16, on both paths, with and
 * without a perm. */
START_TEST(test_exact_shapes)
{
    const int path = _i & 1 ? QB_W4A16_CPU_AVX2 : QB_W4A16_CPU_PLAIN;
    qbt_rng rng = {0xe8ac7 + (uint64_t)_i};
    if (path == QB_W4A16_CPU_AVX2 && !qb_w4a16_cpu_has_avx2())
        return; /* the plain path is the one this CPU runs */
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        qbt_w4a16_case c;
        uint16_t *y;
        qbt_w4a16_case_make_exact(&c, &rng, shapes[s][0], shapes[s][1], shapes[s][2],
                                  shapes[s][3], _i >> 1);
        y = calloc((size_t)(c.M * c.N), 2);
        ck_assert_ptr_nonnull(y);
        ck_assert_int_eq(qb_w4a16_gemm_cpu(c.x, y, c.packed, c.scales, c.perm, c.M, c.N, c.K, c.g,
                                           (int)(s % 3) + 1, path), 0);
        for (int64_t i = 0; i < c.M * c.N; i++)
            ck_assert_msg(qb_f16_to_f32(y[i]) == qb_f16_to_f32(qbt_w4a16_exact_f16(&c, i)),
                          "path %d shape %zu y[%lld] = %g, exact %g", path, s, (long long)i,
                          qb_f16_to_f32(y[i]), c.ref[i]);
        free(y);
        qbt_w4a16_case_free(&c);
    }
}
END_TEST

START_TEST(test_random_plain)
{
    run_random(QB_W4A16_CPU_PLAIN, _i & 1, _i >> 1);
}
END_TEST

START_TEST(test_random_avx2)
{
    if (!qb_w4a16_cpu_has_avx2())
        return; /* the plain path is the one this CPU runs; covered above */
    run_random(QB_W4A16_CPU_AVX2, _i & 1, _i >> 1);
}
END_TEST

START_TEST(test_avx2_matches_plain)
{
    qbt_rng rng = {42};
    if (!qb_w4a16_cpu_has_avx2()) {
        uint8_t p1 = 0x88;
        uint16_t s1 = 0x3c00, x1 = 0, y1 = 0;
        ck_assert_int_eq(qb_w4a16_gemm_cpu(&x1, &y1, &p1, &s1, NULL, 1, 1, 1, 1, 1,
                                           QB_W4A16_CPU_AVX2), QB_E_UNSUPPORTED);
        return;
    }
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        qbt_w4a16_case c;
        uint16_t *ya, *yp;
        qbt_w4a16_case_make(&c, &rng, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3],
                            (int)(s & 1), 1);
        ya = calloc((size_t)(c.M * c.N), 2);
        yp = calloc((size_t)(c.M * c.N), 2);
        ck_assert_int_eq(qb_w4a16_gemm_cpu(c.x, ya, c.packed, c.scales, c.perm, c.M, c.N, c.K, c.g,
                                           1, QB_W4A16_CPU_AVX2), 0);
        ck_assert_int_eq(qb_w4a16_gemm_cpu(c.x, yp, c.packed, c.scales, c.perm, c.M, c.N, c.K, c.g,
                                           1, QB_W4A16_CPU_PLAIN), 0);
        for (int64_t i = 0; i < c.M * c.N; i++) {
            double a = qb_f16_to_f32(ya[i]), p = qb_f16_to_f32(yp[i]);
            /* both within the bound of the exact value: twice it between them */
            ck_assert_msg(fabs(a - p) <= 2 * qbt_w4a16_bound(c.ref[i], c.abs_sum[i], c.K, c.g),
                          "shape %zu y[%lld]: avx2 %g plain %g", s, (long long)i, a, p);
        }
        free(ya);
        free(yp);
        qbt_w4a16_case_free(&c);
    }
}
END_TEST

START_TEST(test_threads_bitwise_equal)
{
    qbt_rng rng = {7};
    qbt_w4a16_case c;
    uint16_t *y1, *y4;
    qbt_w4a16_case_make(&c, &rng, 3, 101, 640, 64, 1, 0);
    y1 = calloc((size_t)(c.M * c.N), 2);
    y4 = calloc((size_t)(c.M * c.N), 2);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(c.x, y1, c.packed, c.scales, c.perm, c.M, c.N, c.K, c.g, 1, 0), 0);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(c.x, y4, c.packed, c.scales, c.perm, c.M, c.N, c.K, c.g, 4, 0), 0);
    ck_assert_int_eq(memcmp(y1, y4, (size_t)(c.M * c.N) * 2), 0);
    free(y1);
    free(y4);
    qbt_w4a16_case_free(&c);
}
END_TEST

START_TEST(test_bad_arguments)
{
    uint8_t packed[4] = {0x88, 0x88, 0x88, 0x88};
    uint16_t scales[2] = {0x3c00, 0x3c00}, x[4] = {0}, y[2] = {0x1234, 0x1234};
    int32_t dup[4] = {0, 1, 1, 3}, out_of_range[4] = {0, 1, 2, 4}, neg[4] = {-1, 1, 2, 3};
    ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, packed, scales, NULL, 0, 2, 4, 4, 1, 0), QB_E_INVALID);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, packed, scales, NULL, 1, 2, 0, 4, 1, 0), QB_E_INVALID);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, packed, scales, NULL, 1, 2, 4, 0, 1, 0), QB_E_INVALID);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, NULL, scales, NULL, 1, 2, 4, 4, 1, 0), QB_E_INVALID);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, packed, scales, NULL, 1, 2, 4, 4, 1, 99), QB_E_INVALID);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, packed, scales, dup, 1, 2, 4, 4, 1, 0), QB_E_INVALID);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, packed, scales, out_of_range, 1, 2, 4, 4, 1, 0),
                     QB_E_INVALID);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(x, y, packed, scales, neg, 1, 2, 4, 4, 1, 0), QB_E_INVALID);
    /* nothing written on failure */
    ck_assert_uint_eq(y[0], 0x1234);
    ck_assert_uint_eq(y[1], 0x1234);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("w4a16_cpu");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_exact_known_codes);
    tcase_add_test(tc, test_exact_permutation);
    tcase_add_loop_test(tc, test_group_size_at_least_k, 0, (int)(sizeof(big_g) / sizeof(big_g[0])));
    tcase_add_loop_test(tc, test_exact_shapes, 0, 4);
    tcase_add_loop_test(tc, test_random_plain, 0, 4);
    tcase_add_loop_test(tc, test_random_avx2, 0, 4);
    tcase_add_test(tc, test_avx2_matches_plain);
    tcase_add_test(tc, test_threads_bitwise_equal);
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}
