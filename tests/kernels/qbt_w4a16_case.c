/* Test helpers for the W4A16 kernels. See qbt_w4a16_case.h. */
#include "qbt_w4a16_case.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <quantbridge/qb_half.h>

static void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n ? n : 1, s);
    if (!p)
        abort();
    return p;
}

void qbt_w4a16_pack(const int8_t *q, int64_t N, int64_t K, uint8_t *packed)
{
    int64_t pc = (K + 1) / 2;
    for (int64_t n = 0; n < N; n++)
        for (int64_t b = 0; b < pc; b++) {
            int lo = q[n * K + 2 * b] + 8;
            int hi = 2 * b + 1 < K ? q[n * K + 2 * b + 1] + 8 : 8;
            packed[n * pc + b] = (uint8_t)(lo | hi << 4);
        }
}

static void case_make(qbt_w4a16_case *c, qbt_rng *rng, int64_t M, int64_t N, int64_t K,
                      int64_t g, int with_perm, int outliers, int exact)
{
    int64_t sc = K / g + (K % g != 0); /* no overflow for any g >= 1 */
    memset(c, 0, sizeof(*c));
    c->M = M, c->N = N, c->K = K, c->g = g;
    c->q = xcalloc((size_t)(N * K), 1);
    c->packed = xcalloc((size_t)(N * ((K + 1) / 2)), 1);
    c->scales = xcalloc((size_t)(N * sc), 2);
    c->x = xcalloc((size_t)(M * K), 2);
    c->ref = xcalloc((size_t)(M * N), sizeof(double));
    c->abs_sum = xcalloc((size_t)(M * N), sizeof(double));
    for (int64_t i = 0; i < N * K; i++)
        c->q[i] = (int8_t)((int)(qbt_rng_u64(rng) % 16) - 8);
    qbt_w4a16_pack(c->q, N, K, c->packed);
    for (int64_t i = 0; exact && i < N * sc; i++) {
        static const float sv[4] = {1.0f, -1.0f, 0.5f, -0.5f};
        c->scales[i] = qb_f32_to_f16(sv[qbt_rng_u64(rng) % 4]);
    }
    for (int64_t m = 0; exact && m < M; m++) {
        /* at most 256 nonzeros (+-1) per row: |y| <= 8 * 256 = 2048 */
        int64_t nnz = K < 256 ? K : 256;
        for (int64_t j = 0; j < nnz; j++) {
            int64_t k = (int64_t)(qbt_rng_u64(rng) % (uint64_t)K);
            c->x[m * K + k] = qb_f32_to_f16(qbt_rng_u64(rng) & 1 ? 1.0f : -1.0f);
        }
    }
    for (int64_t i = 0; !exact && i < N * sc; i++) {
        double u = qbt_rng_uniform(rng);
        /* magnitudes like real absmax/7 scales; 1 in 16 negative (Q4_0 makes
         * them), 1 in 64 zero */
        double s = (0.002 + 0.02 * qbt_rng_uniform(rng)) * (u < 1.0 / 16 ? -1.0 : 1.0);
        if (u > 1.0 - 1.0 / 64)
            s = 0.0;
        c->scales[i] = qb_f32_to_f16((float)s);
    }
    for (int64_t i = 0; !exact && i < M * K; i++) {
        double v = qbt_rng_normal(rng);
        if (outliers && qbt_rng_u64(rng) % 97 == 0)
            v *= 1000.0;
        c->x[i] = qb_f32_to_f16((float)v);
    }
    if (with_perm) {
        c->perm = xcalloc((size_t)K, sizeof(int32_t));
        for (int64_t i = 0; i < K; i++)
            c->perm[i] = (int32_t)i;
        for (int64_t i = K - 1; i > 0; i--) { /* Fisher-Yates */
            int64_t j = (int64_t)(qbt_rng_u64(rng) % (uint64_t)(i + 1));
            int32_t t = c->perm[i];
            c->perm[i] = c->perm[j];
            c->perm[j] = t;
        }
    }
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double acc = 0.0, a = 0.0;
            for (int64_t k = 0; k < K; k++) {
                double w = (double)c->q[n * K + k] * qb_f16_to_f32(c->scales[n * sc + k / g]);
                double xv = qb_f16_to_f32(c->x[m * K + (c->perm ? c->perm[k] : k)]);
                acc += w * xv;
                a += fabs(w * xv);
            }
            c->ref[m * N + n] = acc;
            c->abs_sum[m * N + n] = a;
        }
}

void qbt_w4a16_case_make(qbt_w4a16_case *c, qbt_rng *rng, int64_t M, int64_t N, int64_t K,
                         int64_t g, int with_perm, int outliers)
{
    case_make(c, rng, M, N, K, g, with_perm, outliers, 0);
}

void qbt_w4a16_case_make_exact(qbt_w4a16_case *c, qbt_rng *rng, int64_t M, int64_t N, int64_t K,
                               int64_t g, int with_perm)
{
    case_make(c, rng, M, N, K, g, with_perm, 0, 1);
}

uint16_t qbt_w4a16_exact_f16(const qbt_w4a16_case *c, int64_t i)
{
    return qb_f32_to_f16((float)c->ref[i]);
}

void qbt_w4a16_case_free(qbt_w4a16_case *c)
{
    free(c->q);
    free(c->packed);
    free(c->scales);
    free(c->x);
    free(c->perm);
    free(c->ref);
    free(c->abs_sum);
    memset(c, 0, sizeof(*c));
}

double qbt_w4a16_bound(double ref, double abs_sum, int64_t K, int64_t g)
{
    /* fp32 accumulation: each q*x product is exact in fp32 (4-bit times
     * 11-bit significands); at most K additions inside groups, one scale
     * product and one addition per group: the classic bound
     * |err| <= gamma_n * sum|terms| with n = K + 2*ceil(K/g) and
     * gamma_n ~ n * 2^-24. The final fp16 rounding adds 2^-11 relative
     * (half an ulp of an 11-bit significand) plus 2^-25 absolute for the
     * subnormal range. Factor 2 on the fp32 term for the float64
     * reference's own rounding and slack. */
    double n = (double)K + 2.0 * (double)(K / g + (K % g != 0));
    double e32 = 2.0 * n * ldexp(1.0, -24) * abs_sum;
    return ldexp(1.0, -11) * (fabs(ref) + e32) + e32 + ldexp(1.0, -24);
}
