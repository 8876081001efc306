/*
 * quantbridge host — forward pass: the dense products y = x . W^T of a row
 * block (docs/forward.md, "Numerics").
 *
 * Both operands arrive as double (converted once: x per linear, W per row
 * block), zero-padded to a multiple of 4 columns. A product of two floats
 * is exact in double (24 + 24 significant bits < 53), so what rounds is
 * only the sum, and its order is fixed per output element: 4 lanes, lane
 * l summing columns l, l + 4, l + 8, ... in column order, then (l0 + l1) +
 * (l2 + l3). Every output goes through that one sequence whatever the
 * tile it falls in, the number of threads or the instruction set (with or
 * without FMA: the product being exact, a fused multiply-add rounds as the
 * separate add does), so results are identical on every machine.
 *
 * Speed comes from the tile: 4 weight rows x 2 tokens give 8 independent
 * accumulators (enough to hide the add latency), each weight row of the
 * tile is read from L1 once per token pair, and the tokens are taken in
 * chunks whose x fits the L2 cache. The AVX2 version is the same code
 * compiled for that target, chosen at run time.
 */
#include "forward.h"

#include <stdatomic.h>

typedef double v4d __attribute__((vector_size(32)));
/* the same vector with the alignment of a double: unaligned loads */
typedef double v4du __attribute__((vector_size(32), aligned(8)));

#define RT 4 /* weight rows per tile */
#define MT 2 /* tokens per tile */
#define L2_BYTES ((int64_t)256 * 1024)

static inline __attribute__((always_inline)) double lanes_sum(v4d a)
{
    return (a[0] + a[1]) + (a[2] + a[3]);
}

/* One output: the fixed order above, for rows and tokens outside a full
 * tile. */
static inline __attribute__((always_inline)) double dot1(const double *w, const double *x, int64_t kp)
{
    v4d a = {0, 0, 0, 0};
    int64_t c;
    for (c = 0; c < kp; c += 4)
        a += *(const v4du *)(w + c) * *(const v4du *)(x + c);
    return lanes_sum(a);
}

/* The tile: rows w[0..RT) x tokens x[0..MT), each accumulator its own
 * output in the order of dot1. */
static inline __attribute__((always_inline)) void tile(const double *w, const double *x, int64_t kp, double out[RT][MT])
{
    v4d a00 = {0, 0, 0, 0}, a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00,
        a31 = a00;
    const double *w0 = w, *w1 = w + kp, *w2 = w + 2 * kp, *w3 = w + 3 * kp, *x0 = x,
                 *x1 = x + kp;
    int64_t c;
    for (c = 0; c < kp; c += 4) {
        v4d p = *(const v4du *)(x0 + c), q = *(const v4du *)(x1 + c);
        v4d r0 = *(const v4du *)(w0 + c), r1 = *(const v4du *)(w1 + c);
        v4d r2 = *(const v4du *)(w2 + c), r3 = *(const v4du *)(w3 + c);
        a00 += r0 * p;
        a01 += r0 * q;
        a10 += r1 * p;
        a11 += r1 * q;
        a20 += r2 * p;
        a21 += r2 * q;
        a30 += r3 * p;
        a31 += r3 * q;
    }
    out[0][0] = lanes_sum(a00);
    out[0][1] = lanes_sum(a01);
    out[1][0] = lanes_sum(a10);
    out[1][1] = lanes_sum(a11);
    out[2][0] = lanes_sum(a20);
    out[2][1] = lanes_sum(a21);
    out[3][0] = lanes_sum(a30);
    out[3][1] = lanes_sum(a31);
}

static inline __attribute__((always_inline)) void gemm_body(const double *xd, int64_t M, int64_t kp, const double *wd,
                             int64_t n, float *y, int64_t ldy)
{
    int64_t chunk = L2_BYTES / (kp * (int64_t)sizeof(double)), m0, r, m;
    double o[RT][MT];
    if (chunk < MT)
        chunk = MT;
    chunk -= chunk % MT;
    for (m0 = 0; m0 < M; m0 += chunk) {
        int64_t m1 = M - m0 < chunk ? M : m0 + chunk;
        for (r = 0; r + RT <= n; r += RT) {
            const double *w = wd + r * kp;
            for (m = m0; m + MT <= m1; m += MT) {
                int i, k;
                tile(w, xd + m * kp, kp, o);
                for (i = 0; i < RT; i++)
                    for (k = 0; k < MT; k++)
                        y[(m + k) * ldy + r + i] = (float)o[i][k];
            }
            for (; m < m1; m++) {
                int i;
                for (i = 0; i < RT; i++)
                    y[m * ldy + r + i] = (float)dot1(w + i * kp, xd + m * kp, kp);
            }
        }
        for (; r < n; r++)
            for (m = m0; m < m1; m++)
                y[m * ldy + r] = (float)dot1(wd + r * kp, xd + m * kp, kp);
    }
}

static void gemm_plain(const double *xd, int64_t M, int64_t kp, const double *wd, int64_t n,
                       float *y, int64_t ldy)
{
    gemm_body(xd, M, kp, wd, n, y, ldy);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) static void gemm_avx2(const double *xd, int64_t M,
                                                          int64_t kp, const double *wd, int64_t n,
                                                          float *y, int64_t ldy)
{
    gemm_body(xd, M, kp, wd, n, y, ldy);
}

static int have_avx2(void)
{
    static atomic_int v = -1; /* every thread computes the same value */
    int h = atomic_load_explicit(&v, memory_order_relaxed);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        atomic_store_explicit(&v, h, memory_order_relaxed);
    }
    return h;
}
#endif

int64_t qbh_fwd_gemm_kp(int64_t K)
{
    return (K + 3) & ~(int64_t)3;
}

void qbh_fwd_gemm_widen(const float *src, int64_t rows, int64_t K, double *dst)
{
    int64_t kp = qbh_fwd_gemm_kp(K), r, c;
    for (r = 0; r < rows; r++) {
        const float *s = src + r * K;
        double *d = dst + r * kp;
        for (c = 0; c < K; c++)
            d[c] = (double)s[c];
        for (; c < kp; c++)
            d[c] = 0.0;
    }
}

void qbh_fwd_gemm(const double *xd, int64_t M, int64_t K, const double *wd, int64_t n, float *y,
                  int64_t ldy)
{
    int64_t kp = qbh_fwd_gemm_kp(K);
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx2()) {
        gemm_avx2(xd, M, kp, wd, n, y, ldy);
        return;
    }
#endif
    gemm_plain(xd, M, kp, wd, n, y, ldy);
}
