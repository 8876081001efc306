/*
 * quantbridge model library — the dense products y = x . W^T of a row
 * block (docs/forward.md, "Operations").
 *
 * x arrives as double (widened once per linear, zero-padded to a multiple
 * of 4 columns), W as the float rows the reader gave: widened 4 columns at
 * a time in registers when few tokens share each weight, else each tile of
 * rows widened once into a buffer that stays in L1. A product of two floats
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
 * chunks whose x fits the L2 cache. Columns past the last multiple of 4
 * go to the lanes the zero-padded vector would give them. The AVX2 version is the same code
 * compiled for that target, chosen at run time.
 */
#include "fwd.h"

#include <stdatomic.h>
#include <stdlib.h>

/* The vector helpers below are static and always inlined: no call passes
 * a 32-byte vector, so GCC's note that such a call's ABI differs without
 * AVX does not apply. */
#if defined(__GNUC__) /* GCC and clang both know the warning */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

typedef double v4d __attribute__((vector_size(32)));
/* unaligned loads: the alignment of a double / a float */
typedef double v4du __attribute__((vector_size(32), aligned(8)));
typedef float v4fu __attribute__((vector_size(16), aligned(4)));

#define RT 4 /* weight rows per tile */
#define MT 2 /* tokens per tile */
#define L2_BYTES ((int64_t)256 * 1024)

static inline __attribute__((always_inline)) double lanes_sum(v4d a)
{
    return (a[0] + a[1]) + (a[2] + a[3]);
}

static inline __attribute__((always_inline)) v4d wload(const float *w)
{
    return __builtin_convertvector(*(const v4fu *)w, v4d);
}

/* 4 weights from column c of a row: widened in registers from the float
 * row f, or loaded from the row already widened d (stride kp). `wide` is
 * a constant at every call, so each kernel below compiles to one loop. */
#define WLOAD(f, d, c) (wide ? *(const v4du *)((d) + (c)) : wload((f) + (c)))
#define WAT(f, d, c) (wide ? (d)[c] : (double)(f)[c])

/* One output: the fixed order above, for rows and tokens outside a full
 * tile. The columns past the last multiple of 4 go to lanes 0, 1, 2 as
 * the zero-padded vector would put them (adding an exact 0 elsewhere).
 * The weights: float row f, or its widened copy d (then f is unused). */
static inline __attribute__((always_inline)) double dot1(const float *f, const double *d,
                                                         int wide, const double *x, int64_t K)
{
    v4d a = {0, 0, 0, 0};
    int64_t c, k4 = K & ~(int64_t)3;
    for (c = 0; c < k4; c += 4)
        a += WLOAD(f, d, c) * *(const v4du *)(x + c);
    for (; c < K; c++)
        a[c - k4] += WAT(f, d, c) * x[c];
    return lanes_sum(a);
}

/* The tile: RT weight rows (float rows f of stride K, or their widened
 * copies d of stride kp) x MT tokens x (stride kp), each accumulator its
 * own output in the order of dot1. */
static inline __attribute__((always_inline)) void tile(const float *f, const double *d,
                                                       int wide, int64_t K, const double *x,
                                                       int64_t kp, double out[RT][MT])
{
    v4d a00 = {0, 0, 0, 0}, a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00,
        a31 = a00;
    const float *f0 = f, *f1 = f + K, *f2 = f + 2 * K, *f3 = f + 3 * K;
    const double *d0 = d, *d1 = wide ? d + kp : NULL, *d2 = wide ? d + 2 * kp : NULL,
                 *d3 = wide ? d + 3 * kp : NULL, *x0 = x, *x1 = x + kp;
    int64_t c, k4 = K & ~(int64_t)3;
    for (c = 0; c < k4; c += 4) {
        v4d p = *(const v4du *)(x0 + c), q = *(const v4du *)(x1 + c);
        v4d r0 = WLOAD(f0, d0, c), r1 = WLOAD(f1, d1, c), r2 = WLOAD(f2, d2, c),
            r3 = WLOAD(f3, d3, c);
        a00 += r0 * p;
        a01 += r0 * q;
        a10 += r1 * p;
        a11 += r1 * q;
        a20 += r2 * p;
        a21 += r2 * q;
        a30 += r3 * p;
        a31 += r3 * q;
    }
    for (; c < K; c++) {
        int l = (int)(c - k4);
        a00[l] += WAT(f0, d0, c) * x0[c];
        a01[l] += WAT(f0, d0, c) * x1[c];
        a10[l] += WAT(f1, d1, c) * x0[c];
        a11[l] += WAT(f1, d1, c) * x1[c];
        a20[l] += WAT(f2, d2, c) * x0[c];
        a21[l] += WAT(f2, d2, c) * x1[c];
        a30[l] += WAT(f3, d3, c) * x0[c];
        a31[l] += WAT(f3, d3, c) * x1[c];
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

/* Rows [r, r + RT) against tokens [m0, m1): the weights read as floats
 * (wide 0) or from wt, their widened copy (wide 1). */
static inline __attribute__((always_inline)) void row_tile(const double *xd, int64_t m0,
                                                           int64_t m1, int64_t K, int64_t kp,
                                                           const float *wr, const double *wt,
                                                           int wide, int64_t r, float *y,
                                                           int64_t ldy)
{
    double o[RT][MT];
    int64_t m;
    int i, k;
    for (m = m0; m + MT <= m1; m += MT) {
        tile(wr, wt, wide, K, xd + m * kp, kp, o);
        for (i = 0; i < RT; i++)
            for (k = 0; k < MT; k++)
                y[(m + k) * ldy + r + i] = (float)o[i][k];
    }
    for (; m < m1; m++)
        for (i = 0; i < RT; i++)
            y[m * ldy + r + i] =
                (float)dot1(wr + i * K, wide ? wt + i * kp : NULL, wide, xd + m * kp, K);
}

/* Token pairs per row tile from which widening the tile's rows once (in
 * L1) beats widening them in registers for every pair (bench_fwd_dense). */
#define WIDEN_MIN_PAIRS 4

static inline __attribute__((always_inline)) void gemm_body(const double *xd, int64_t M,
                                                            int64_t K, const float *w, int64_t n,
                                                            float *y, int64_t ldy, double *wt)
{
    int64_t kp = qbh_fwd_gemm_kp(K), chunk = L2_BYTES / (kp * (int64_t)sizeof(double)), m0, r, m;
    if (chunk < MT)
        chunk = MT;
    chunk -= chunk % MT;
    for (m0 = 0; m0 < M; m0 += chunk) {
        int64_t m1 = M - m0 < chunk ? M : m0 + chunk;
        int widen = wt && (m1 - m0) / MT >= WIDEN_MIN_PAIRS;
        for (r = 0; r + RT <= n; r += RT) {
            const float *wr = w + r * K;
            if (widen) {
                qbh_fwd_gemm_widen(wr, RT, K, wt);
                row_tile(xd, m0, m1, K, kp, wr, wt, 1, r, y, ldy);
            } else {
                row_tile(xd, m0, m1, K, kp, wr, NULL, 0, r, y, ldy);
            }
        }
        for (; r < n; r++)
            for (m = m0; m < m1; m++)
                y[m * ldy + r] = (float)dot1(w + r * K, NULL, 0, xd + m * kp, K);
    }
}

static void gemm_plain(const double *xd, int64_t M, int64_t K, const float *w, int64_t n,
                       float *y, int64_t ldy, double *wt)
{
    gemm_body(xd, M, K, w, n, y, ldy, wt);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) static void gemm_avx2(const double *xd, int64_t M,
                                                          int64_t K, const float *w, int64_t n,
                                                          float *y, int64_t ldy, double *wt)
{
    gemm_body(xd, M, K, w, n, y, ldy, wt);
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

static void gemm(const double *xd, int64_t M, int64_t K, const float *w, int64_t n, float *y,
                 int64_t ldy, int simd)
{
    /* the row tile widened once for many tokens; without memory for it the
     * rows are widened in registers: the same sums either way */
    double *wt = M / MT >= WIDEN_MIN_PAIRS && n >= RT
                     ? malloc((size_t)RT * (size_t)qbh_fwd_gemm_kp(K) * sizeof *wt)
                     : NULL;
#if defined(__x86_64__) && defined(__GNUC__)
    if (simd && have_avx2())
        gemm_avx2(xd, M, K, w, n, y, ldy, wt);
    else
#endif
        gemm_plain(xd, M, K, w, n, y, ldy, wt);
    (void)simd;
    free(wt);
}

void qbh_fwd_gemm(const double *xd, int64_t M, int64_t K, const float *w, int64_t n, float *y,
                  int64_t ldy)
{
    gemm(xd, M, K, w, n, y, ldy, 1);
}

void qbh_fwd_gemm_portable(const double *xd, int64_t M, int64_t K, const float *w, int64_t n,
                           float *y, int64_t ldy)
{
    gemm(xd, M, K, w, n, y, ldy, 0);
}
