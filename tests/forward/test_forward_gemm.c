/*
 * The forward pass's dense products (host/model/gemm.c, linked through
 * qbh_core) against a reference written here in long double, and against
 * themselves: the portable and the AVX2 path, a token alone or among many
 * (the tile and the widened-rows branch), rows alone or in a block, must
 * give the same floats bit for bit (docs/forward.md, "Operations": one
 * summation order per output). Shapes with K and N not multiples of 4.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fwd.h"

static uint64_t z = 99;

static float rnd(double scale)
{
    z = z * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)(((double)(z >> 40) / 16777216.0 * 2.0 - 1.0) * scale);
}

START_TEST(gemm_matches_reference_and_itself)
{
    static const int64_t Ks[] = {1, 3, 4, 7, 64, 130, 641};
    static const int64_t Ns[] = {1, 3, 5, 8, 13};
    static const int64_t Ms[] = {1, 2, 3, 9, 40};
    size_t ki, ni, mi;
    for (ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
        for (ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++)
            for (mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
                int64_t K = Ks[ki], N = Ns[ni], M = Ms[mi], kp = qbh_fwd_gemm_kp(K), m, r, c;
                float *x = malloc(sizeof(float) * (size_t)(M * K));
                float *w = malloc(sizeof(float) * (size_t)(N * K));
                float *y = malloc(sizeof(float) * (size_t)(M * N));
                float *yp = malloc(sizeof(float) * (size_t)(M * N));
                float *one = malloc(sizeof(float) * (size_t)N);
                double *xd = malloc(sizeof(double) * (size_t)(M * kp));
                ck_assert(x && w && y && yp && one && xd);
                for (c = 0; c < M * K; c++)
                    x[c] = rnd(3.0);
                for (c = 0; c < N * K; c++)
                    w[c] = rnd(0.2) * (c % 17 == 0 ? 50.0f : 1.0f); /* outliers */
                qbh_fwd_gemm_widen(x, M, K, xd);
                for (c = K; c < kp; c++)
                    ck_assert(xd[c] == 0.0); /* padding */
                qbh_fwd_gemm(xd, M, K, w, N, y, N);
                qbh_fwd_gemm_portable(xd, M, K, w, N, yp, N);
                ck_assert_msg(memcmp(y, yp, sizeof(float) * (size_t)(M * N)) == 0,
                              "K %lld N %lld M %lld: SIMD and portable paths differ",
                              (long long)K, (long long)N, (long long)M);
                for (m = 0; m < M; m++) {
                    /* the token alone, each row alone: the same floats */
                    qbh_fwd_gemm(xd + m * kp, 1, K, w, N, one, N);
                    ck_assert_msg(memcmp(one, y + m * N, sizeof(float) * (size_t)N) == 0,
                                  "K %lld N %lld M %lld: token %lld alone differs",
                                  (long long)K, (long long)N, (long long)M, (long long)m);
                    for (r = 0; r < N; r++) {
                        long double ref = 0, mag = 0;
                        float alone;
                        qbh_fwd_gemm(xd + m * kp, 1, K, w + r * K, 1, &alone, 1);
                        ck_assert(alone == y[m * N + r]);
                        for (c = 0; c < K; c++) {
                            ref += (long double)x[m * K + c] * w[r * K + c];
                            mag += fabsl((long double)x[m * K + c] * w[r * K + c]);
                        }
                        /* one rounding to float, plus double sums of K
                         * exact products (K u_double of the magnitude) */
                        ck_assert_msg(fabsl((long double)y[m * N + r] - ref) <=
                                          ldexpl(fabsl(ref), -24) + K * ldexpl(mag, -52),
                                      "K %lld row %lld token %lld: %g vs %Lg", (long long)K,
                                      (long long)r, (long long)m, y[m * N + r], ref);
                    }
                }
                free(x);
                free(w);
                free(y);
                free(yp);
                free(one);
                free(xd);
            }
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("forward-gemm");
    TCase *tc = tcase_create("gemm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, gemm_matches_reference_and_itself);
    suite_add_tcase(s, tc);
    return s;
}
