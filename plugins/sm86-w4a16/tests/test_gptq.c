/*
 * sm86-w4a16 unit tests: GPTQ (gptq.c) against the paper's algorithm
 * (Frantar et al. 2022, Algorithm 1) written here independently and in the
 * plainest form: H^-1 by Gauss-Jordan elimination, its upper Cholesky
 * factor by the textbook recurrence, then one column at a time with the
 * whole remaining row updated after each column (no lazy batches); and
 * against the quantity GPTQ minimises, the output error tr((W-Q) H (W-Q)^T)
 * = ||(W-Q) X||^2 / tokens.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "w4t_fake.h"
#include "w4w.h"

/* A model-like input: m tokens of n columns, a few outlier channels (x30)
 * and a shared component (correlated columns), H = X^T X / m in double
 * and float. */
static void make_h(uint64_t *seed, int64_t n, int64_t m, double *Hd, float *Hf)
{
    double *X = malloc((size_t)(m * n) * sizeof *X);
    int64_t t, a, b;
    ck_assert_ptr_nonnull(X);
    for (t = 0; t < m; t++) {
        double common = w4t_normal(seed);
        for (a = 0; a < n; a++) {
            double v = w4t_normal(seed) + 0.6 * common;
            X[t * n + a] = a % 11 == 3 ? 30.0 * v : v;
        }
    }
    for (a = 0; a < n; a++)
        for (b = 0; b < n; b++) {
            double s = 0.0;
            for (t = 0; t < m; t++)
                s += X[t * n + a] * X[t * n + b];
            Hd[a * n + b] = s / (double)m;
        }
    for (a = 0; a < n * n; a++)
        Hf[a] = (float)Hd[a];
    free(X);
}

/* The reference: (H + damp I)^-1 by Gauss-Jordan, then its upper Cholesky
 * factor R (A = R^T R) by the recurrence over rows of R. */
static void ref_factor(const double *H, int64_t n, double *R)
{
    double *A = malloc((size_t)(n * 2 * n) * sizeof *A), mean = 0.0, damp;
    int64_t i, j, k;
    ck_assert_ptr_nonnull(A);
    for (i = 0; i < n; i++)
        mean += H[i * n + i];
    damp = 0.01 * mean / (double)n;
    for (i = 0; i < n; i++)
        for (j = 0; j < 2 * n; j++)
            A[i * 2 * n + j] = j < n ? H[i * n + j] + (i == j ? damp : 0.0) : (j - n == i);
    for (i = 0; i < n; i++) {
        double p = A[i * 2 * n + i];
        for (j = 0; j < 2 * n; j++)
            A[i * 2 * n + j] /= p;
        for (k = 0; k < n; k++) {
            double f = A[k * 2 * n + i];
            if (k == i)
                continue;
            for (j = 0; j < 2 * n; j++)
                A[k * 2 * n + j] -= f * A[i * 2 * n + j];
        }
    }
    memset(R, 0, (size_t)(n * n) * sizeof *R);
    for (i = 0; i < n; i++) {
        double s = A[i * 2 * n + n + i];
        for (k = 0; k < i; k++)
            s -= R[k * n + i] * R[k * n + i];
        R[i * n + i] = sqrt(s);
        for (j = i + 1; j < n; j++) {
            double t = A[i * 2 * n + n + j];
            for (k = 0; k < i; k++)
                t -= R[k * n + i] * R[k * n + j];
            R[i * n + j] = t / R[i * n + i];
        }
    }
    free(A);
}

/* The plain algorithm on one row w[n] (changed), groups of gs: the scale
 * absmax/7 (fp16) of the group's current weights at its first column. */
static void ref_gptq_row(double *w, int64_t n, const double *R, int64_t gs, int8_t *q,
                         uint16_t *sc)
{
    int64_t i, k;
    float s = 0.0f;
    for (i = 0; i < n; i++) {
        float d;
        int v;
        if (i % gs == 0) {
            float amax = 0.0f;
            for (k = i; k < i + gs && k < n; k++)
                amax = fmaxf(amax, fabsf((float)w[k]));
            sc[i / gs] = qb_f32_to_f16(amax / 7.0f);
            s = qb_f16_to_f32(sc[i / gs]);
        }
        v = s == 0.0f ? 0 : (int)fmax(-8.0, fmin(7.0, rint((double)(float)w[i] / (double)s)));
        q[i] = (int8_t)v;
        d = (float)v * s;
        for (k = i + 1; k < n; k++)
            w[k] -= ((w[i] - (double)d) / R[i * n + i]) * R[i * n + k];
    }
}

/* tr((W - Q) H (W - Q)^T) for rows x n, Q decoded from codes and scales. */
static double out_err(const float *W, const int8_t *q, const uint16_t *sc, int64_t rows, int64_t n,
                      int64_t gs, const double *H)
{
    double tot = 0.0, *d = malloc((size_t)n * sizeof *d);
    int64_t r, a, b, ng = (n + gs - 1) / gs;
    ck_assert_ptr_nonnull(d);
    for (r = 0; r < rows; r++) {
        for (a = 0; a < n; a++)
            d[a] = (double)W[r * n + a] -
                   (double)((float)q[r * n + a] * qb_f16_to_f32(sc[r * ng + a / gs]));
        for (a = 0; a < n; a++)
            for (b = 0; b < n; b++)
                tot += d[a] * H[a * n + b] * d[b];
    }
    free(d);
    return tot;
}

/* U^T U is the dampened H's inverse, U upper with a positive diagonal:
 * checked as (H + damp I) U^T U = I, and against the reference factor. */
START_TEST(test_gptq_factor)
{
    enum { N = 40, M = 160 };
    static double Hd[N * N], R[N * N];
    static float Hf[N * N], U[N * N];
    uint8_t dead[N];
    uint64_t seed = 11;
    int64_t nd = -1, a, b, k;
    double mean = 0.0, damp;
    make_h(&seed, N, M, Hd, Hf);
    for (a = 0; a < N; a++)
        mean += (double)Hf[a * N + a];
    damp = 0.01 * mean / N;
    ck_assert_int_eq(w4w_gptq_prepare(Hf, N, 0.01, U, dead, &nd), 0);
    ck_assert_int_eq(nd, 0);
    for (a = 0; a < N; a++) {
        ck_assert(U[a * N + a] > 0.0f);
        for (b = 0; b < a; b++)
            ck_assert(U[a * N + b] == 0.0f);
    }
    for (a = 0; a < N; a++)
        for (b = 0; b < N; b++) {
            double s = 0.0;
            for (k = 0; k < N; k++) {
                double uu = 0.0;
                int64_t t;
                for (t = 0; t < N; t++)
                    uu += (double)U[t * N + k] * (double)U[t * N + b];
                s += ((double)Hf[a * N + k] + (a == k ? damp : 0.0)) * uu;
            }
            ck_assert_msg(fabs(s - (a == b)) < 2e-3, "(H U^T U)[%lld][%lld] = %g", (long long)a,
                          (long long)b, s);
        }
    ref_factor(Hd, N, R);
    for (a = 0; a < N * N; a++)
        ck_assert_msg(fabs((double)U[a] - R[a]) <= 1e-3 * fabs(R[a]) + 1e-6, "U[%lld] %g vs %g",
                      (long long)a, (double)U[a], R[a]);
}
END_TEST

/* The lazy-batch implementation gives the plain algorithm's codes and
 * scales (float vs double order of operations may flip a rounding tie:
 * at most 0.5 % of codes), and a lower output error than absmax. */
START_TEST(test_gptq_matches_plain_and_beats_absmax)
{
    enum { N = 256, M = 600, ROWS = 24, GS = 32 };
    static double Hd[N * N], R[N * N], wr[N];
    static float Hf[N * N], U[N * N], W[ROWS * N], Wg[ROWS * N], err[ROWS * 128];
    static int8_t q[ROWS * N], qr[ROWS * N], qa[ROWS * N];
    static uint16_t sc[ROWS * N / GS], scr[ROWS * N / GS], sca[ROWS * N / GS];
    uint8_t dead[N];
    uint64_t seed = 5;
    int64_t nd, r, a, diff = 0, sdiff = 0;
    double eg, ea, er;
    make_h(&seed, N, M, Hd, Hf);
    for (a = 0; a < ROWS * N; a++)
        W[a] = (float)(0.02 * w4t_normal(&seed));
    memcpy(Wg, W, sizeof W);
    ck_assert_int_eq(w4w_gptq_block(GS), 128);
    ck_assert_int_eq(w4w_gptq_prepare(Hf, N, 0.01, U, dead, &nd), 0);
    ck_assert_int_eq(w4w_gptq_rows(Wg, ROWS, N, U, dead, GS, NULL, q, sc, err), 0);
    ref_factor(Hd, N, R);
    for (r = 0; r < ROWS; r++) {
        for (a = 0; a < N; a++)
            wr[a] = (double)W[r * N + a];
        ref_gptq_row(wr, N, R, GS, qr + r * N, scr + r * (N / GS));
        for (a = 0; a < N / GS; a++) {
            double e;
            ck_assert_int_eq(w4w_quant_group(W + r * N + a * GS, GS, W4W_RULE_ABSMAX,
                                             qa + r * N + a * GS, &sca[r * (N / GS) + a], &e),
                             0);
        }
    }
    for (a = 0; a < ROWS * N; a++)
        diff += q[a] != qr[a];
    for (a = 0; a < ROWS * N / GS; a++)
        sdiff += sc[a] != scr[a];
    ck_assert_msg(diff * 200 <= ROWS * N, "%lld of %d codes differ from the plain algorithm",
                  (long long)diff, ROWS * N);
    ck_assert_msg(sdiff * 50 <= ROWS * N / GS, "%lld scales differ", (long long)sdiff);
    eg = out_err(W, q, sc, ROWS, N, GS, Hd);
    er = out_err(W, qr, scr, ROWS, N, GS, Hd);
    ea = out_err(W, qa, sca, ROWS, N, GS, Hd);
    fprintf(stderr, "output error: gptq %.6g, plain reference %.6g, absmax %.6g\n", eg, er, ea);
    ck_assert_msg(fabs(eg - er) <= 0.02 * er, "gptq %g vs plain %g", eg, er);
    ck_assert_msg(eg < 0.8 * ea, "gptq %g not below absmax %g", eg, ea);
    {
        /* gptq_scale=weighted: the scales from the weighted search over the
         * updated weights, the Hessian's diagonal as importance */
        static float imp[N];
        double ew;
        for (a = 0; a < N; a++)
            imp[a] = (float)Hd[a * N + a];
        memcpy(Wg, W, sizeof W);
        ck_assert_int_eq(w4w_gptq_rows(Wg, ROWS, N, U, dead, GS, imp, q, sc, err), 0);
        ew = out_err(W, q, sc, ROWS, N, GS, Hd);
        fprintf(stderr, "output error, weighted scales: %.6g\n", ew);
        ck_assert_msg(ew < 0.8 * ea, "gptq weighted %g not below absmax %g", ew, ea);
    }
}
END_TEST

/* A column no input used (H_jj = 0, its row and column zero): dead, its
 * weights zeroed as upstream does, the rest still factors. */
START_TEST(test_gptq_dead_column)
{
    enum { N = 64, M = 200, GS = 32 };
    static double Hd[N * N];
    static float Hf[N * N], U[N * N], W[N], err[128];
    static int8_t q[N];
    static uint16_t sc[N / GS];
    uint8_t dead[N];
    uint64_t seed = 9;
    int64_t nd = 0, a;
    make_h(&seed, N, M, Hd, Hf);
    for (a = 0; a < N; a++) {
        Hf[5 * N + a] = Hf[a * N + 5] = 0.0f;
        W[a] = (float)w4t_normal(&seed);
    }
    W[5] = 100.0f; /* would dominate its group's scale were it kept */
    ck_assert_int_eq(w4w_gptq_prepare(Hf, N, 0.01, U, dead, &nd), 0);
    ck_assert_int_eq(nd, 1);
    ck_assert_int_eq(dead[5], 1);
    ck_assert_int_eq(w4w_gptq_rows(W, 1, N, U, dead, GS, NULL, q, sc, err), 0);
    ck_assert_int_eq(q[5], 0);
    ck_assert(qb_f16_to_f32(sc[0]) < 10.0f / 7.0f);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("w4w_gptq");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_gptq_factor);
    tcase_add_test(tc, test_gptq_matches_plain_and_beats_absmax);
    tcase_add_test(tc, test_gptq_dead_column);
    suite_add_tcase(s, tc);
    return s;
}
