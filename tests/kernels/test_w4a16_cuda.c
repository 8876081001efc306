/*
 * W4A16 CUDA kernels on a GPU, every kernel choice (auto, GEMV, forced mma):
 *   - exact: the whole shape table with exact inputs (sparse +-1
 *     activations, scales +-1 / +-1/2, |y| <= 2048: qbt_w4a16_case.h),
 *     every output compared for equality with the exact value's fp16 (a
 *     single wrong column cannot hide in a tolerance), and with the CPU
 *     reference;
 *   - random: float64 ground truth and the CPU reference on the same
 *     inputs, |x| ~ 1e3 outliers, negative and zero scales; bound: see
 *     qbt_w4a16_bound() (tensor cores accumulate with their own, not IEEE
 *     round-to-nearest, fp32 adds: factor 2 on the fp32 term);
 *   - shapes: M = 1..16 including 6, 10, 11, 13, 14, 15, M > 16 (row
 *     chunks), N < 8, N % 16 != 0, odd K, K % 32 == 0 with g not a multiple
 *     of 32, g = K, g > K up to INT64_MAX (2^31 - 1, 2^31, 2^32, 2^32 + 32:
 *     clamped to K), perms, narrow N (split-K);
 *   - the issue 19 example (K = 4096, N = 3, scales 1, 2, -3: exactly
 *     -321, 604, -2046 for every g >= K);
 *   - canaries: every output buffer (y, the workspace) is allocated with
 *     256 bytes of canary after it, and y is prefilled with NaN so an
 *     unwritten output shows; both checked after every call;
 *   - paths: misaligned x / packed, an out-of-range perm (NaN, never an
 *     out-of-bounds read), a too-small workspace (unsplit, same result,
 *     nothing written past it), refused calls (nothing enqueued: y and the
 *     workspace untouched), a non-default stream and two streams at once
 *     with a workspace each, split-K determinism, an earlier pending CUDA
 *     error (reported as such, not cleared).
 *
 * QBT_W4A16_CUDA_REDUCED=1 selects a small shape set and leaves out the test
 * that provokes a CUDA API error on purpose: the compute-sanitizer passes
 * of bench/gpu-check.sh run that way.
 *
 * Exits 77 (CTest SKIP_RETURN_CODE) when no CUDA device is present, so a
 * machine without a GPU reports the test skipped, not passed. Runs forked
 * (check's default: the device probe keeps this process free of CUDA) or
 * with CK_FORK=no (the sanitizer passes).
 */
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include <quantbridge/qb_half.h>
#include <quantbridge/qb_w4a16.h>
#include <quantbridge/qb_w4a16_cuda.h>

#include "qbt_w4a16_case.h"

#define CK_CUDA(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        ck_assert_msg(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

enum { CANARY = 256 };
#define CANARY_BYTE 0xa5

static int g_reduced;

/* A device buffer of `bytes` at `offset` into its allocation, followed by
 * CANARY bytes of CANARY_BYTE (the whole allocation starts that way). */
typedef struct dbuf {
    char *base;
    void *p;
    size_t offset, bytes;
} dbuf;

static void dbuf_alloc(dbuf *b, size_t bytes, size_t offset)
{
    const size_t total = offset + bytes + CANARY;
    CK_CUDA(cudaMalloc((void **)&b->base, total));
    CK_CUDA(cudaMemset(b->base, CANARY_BYTE, total));
    b->p = b->base + offset;
    b->offset = offset;
    b->bytes = bytes;
}

static void dbuf_put(dbuf *b, const void *src, size_t bytes)
{
    ck_assert_uint_le(bytes, b->bytes);
    if (bytes)
        CK_CUDA(cudaMemcpy(b->p, src, bytes, cudaMemcpyHostToDevice));
}

/* 1 when every byte of [from, from + n) of the buffer is CANARY_BYTE. */
static int dbuf_untouched(const dbuf *b, size_t from, size_t n)
{
    unsigned char *h = malloc(n ? n : 1);
    int ok = 1;
    ck_assert_ptr_nonnull(h);
    CK_CUDA(cudaMemcpy(h, (char *)b->p + from, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n && ok; i++)
        ok = h[i] == CANARY_BYTE;
    free(h);
    return ok;
}

static int dbuf_canary_ok(const dbuf *b)
{
    return dbuf_untouched(b, b->bytes, CANARY);
}

static void dbuf_free(dbuf *b)
{
    if (b->base)
        cudaFree(b->base);
    memset(b, 0, sizeof(*b));
}

/* One problem on the device. x and packed may sit at an offset into their
 * allocation (misalignment tests). */
typedef struct dev_case {
    dbuf x, y, packed, scales, perm, ws;
    size_t ws_bytes; /* what the calls pass */
} dev_case;

static size_t n_scale_cols(int64_t K, int64_t g)
{
    return (size_t)(K / g + (K % g != 0));
}

static void upload(const qbt_w4a16_case *c, dev_case *d, size_t x_off, size_t packed_off)
{
    const size_t pb = (size_t)c->N * (size_t)((c->K + 1) / 2);
    const size_t sb = (size_t)c->N * n_scale_cols(c->K, c->g) * 2;
    size_t ws = 0;
    memset(d, 0, sizeof(*d));
    dbuf_alloc(&d->x, (size_t)(c->M * c->K) * 2, x_off);
    dbuf_alloc(&d->y, (size_t)(c->M * c->N) * 2, 0);
    dbuf_alloc(&d->packed, pb, packed_off);
    dbuf_alloc(&d->scales, sb, 0);
    dbuf_put(&d->x, c->x, (size_t)(c->M * c->K) * 2);
    dbuf_put(&d->packed, c->packed, pb);
    dbuf_put(&d->scales, c->scales, sb);
    if (c->perm) {
        dbuf_alloc(&d->perm, (size_t)c->K * 4, 0);
        dbuf_put(&d->perm, c->perm, (size_t)c->K * 4);
    }
    ck_assert_msg(qb_w4a16_cuda_workspace_bytes(c->M, c->N, c->K, c->g, c->perm != NULL, &ws) ==
                      0,
                  "%s", qb_w4a16_cuda_error());
    d->ws_bytes = ws;
    if (ws)
        dbuf_alloc(&d->ws, ws, 0);
}

static void release(dev_case *d)
{
    dbuf_free(&d->x);
    dbuf_free(&d->y);
    dbuf_free(&d->packed);
    dbuf_free(&d->scales);
    dbuf_free(&d->perm);
    dbuf_free(&d->ws);
}

/* Prefills y with NaN (0xffff) so an output no kernel wrote shows. */
static void y_poison(dev_case *d)
{
    CK_CUDA(cudaMemset(d->y.p, 0xff, d->y.bytes));
}

static qb_status call(const qbt_w4a16_case *c, dev_case *d, int kernel, void *stream)
{
    return qb_w4a16_gemm_cuda(d->x.p, d->y.p, d->packed.p, d->scales.p, d->perm.p, c->M, c->N,
                              c->K, c->g, d->ws.p, d->ws_bytes, kernel, stream);
}

/* Runs one kernel choice, fetches y, checks both canaries. */
static void run_fetch(const qbt_w4a16_case *c, dev_case *d, int kernel, uint16_t *y)
{
    qb_status st;
    y_poison(d);
    st = call(c, d, kernel, NULL);
    ck_assert_msg(st == 0, "gemm_cuda kernel %d: %d %s", kernel, st, qb_w4a16_cuda_error());
    CK_CUDA(cudaDeviceSynchronize());
    CK_CUDA(cudaMemcpy(y, d->y.p, d->y.bytes, cudaMemcpyDeviceToHost));
    ck_assert_msg(dbuf_canary_ok(&d->y), "kernel %d wrote past y", kernel);
    if (d->ws.p)
        ck_assert_msg(dbuf_canary_ok(&d->ws), "kernel %d wrote past the workspace", kernel);
}

/* Outputs that differ from the exact fp16 (or from the CPU's), at most 5
 * reported. */
static int exact_mismatches(const qbt_w4a16_case *c, const uint16_t *y, const uint16_t *ycpu,
                            int kernel)
{
    int bad = 0;
    for (int64_t i = 0; i < c->M * c->N && bad < 5; i++) {
        const float got = qb_f16_to_f32(y[i]), want = qb_f16_to_f32(qbt_w4a16_exact_f16(c, i));
        if (!(got == want) || !(got == qb_f16_to_f32(ycpu[i]))) {
            fprintf(stderr, "exact kernel %d M=%lld N=%lld K=%lld g=%lld perm=%d: y[%lld] gpu %g "
                            "cpu %g exact %g\n",
                    kernel, (long long)c->M, (long long)c->N, (long long)c->K, (long long)c->g,
                    c->perm != NULL, (long long)i, got, qb_f16_to_f32(ycpu[i]), c->ref[i]);
            bad++;
        }
    }
    return bad;
}

static int bound_mismatches(const qbt_w4a16_case *c, const uint16_t *y, const uint16_t *ycpu,
                            int kernel)
{
    int bad = 0;
    for (int64_t i = 0; i < c->M * c->N && bad < 5; i++) {
        double got = qb_f16_to_f32(y[i]), cpu = qb_f16_to_f32(ycpu[i]);
        double b = qbt_w4a16_bound(c->ref[i], 2.0 * c->abs_sum[i], c->K, c->g);
        if (!(fabs(got - c->ref[i]) <= b) || !(fabs(got - cpu) <= 2 * b)) {
            fprintf(stderr, "kernel %d M=%lld N=%lld K=%lld g=%lld perm=%d: y[%lld] gpu %.9g cpu "
                            "%.9g ref %.9g bound %.3g\n",
                    kernel, (long long)c->M, (long long)c->N, (long long)c->K, (long long)c->g,
                    c->perm != NULL, (long long)i, got, cpu, c->ref[i], b);
            bad++;
        }
    }
    return bad;
}

static int mma_shape(const qbt_w4a16_case *c)
{
    const int64_t g = c->g < c->K ? c->g : c->K; /* the clamp */
    return c->K % 32 == 0 && g % 32 == 0;
}

/* A refused call enqueues nothing: y (poisoned) and the workspace stay as
 * they were after the device has drained. */
static void check_refused(const qbt_w4a16_case *c, dev_case *d, int kernel, qb_status want)
{
    uint16_t *y = malloc(d->y.bytes);
    ck_assert_ptr_nonnull(y);
    y_poison(d);
    if (d->ws.p)
        CK_CUDA(cudaMemset(d->ws.p, CANARY_BYTE, d->ws.bytes));
    CK_CUDA(cudaDeviceSynchronize());
    ck_assert_int_eq(call(c, d, kernel, NULL), want);
    CK_CUDA(cudaDeviceSynchronize());
    CK_CUDA(cudaMemcpy(y, d->y.p, d->y.bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < d->y.bytes / 2; i++)
        ck_assert_uint_eq(y[i], 0xffff);
    if (d->ws.p)
        ck_assert_msg(dbuf_untouched(&d->ws, 0, d->ws.bytes + CANARY),
                      "a refused call wrote the workspace");
    free(y);
}

/* Every kernel choice on one case: exact or within the bound, split-K
 * deterministic, forced mma refused (and nothing enqueued) when the shape
 * cannot take it. */
static void run_case(const qbt_w4a16_case *c, int exact, size_t x_off, size_t packed_off)
{
    const size_t n = (size_t)(c->M * c->N);
    uint16_t *y = calloc(n, 2), *y2 = calloc(n, 2), *ycpu = calloc(n, 2);
    dev_case d;
    int bad = 0;
    ck_assert(y && y2 && ycpu);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(c->x, ycpu, c->packed, c->scales, c->perm, c->M, c->N, c->K,
                                       c->g, 2, 0), 0);
    upload(c, &d, x_off, packed_off);
    for (int kernel = QB_W4A16_CUDA_AUTO; kernel <= QB_W4A16_CUDA_MMA; kernel++) {
        /* the kernels read the workspace copy of x when there is a perm */
        const int eligible = mma_shape(c) && packed_off % 16 == 0 && (c->perm || x_off % 16 == 0);
        if (kernel == QB_W4A16_CUDA_MMA && !eligible) {
            check_refused(c, &d, kernel, QB_E_UNSUPPORTED);
            continue;
        }
        run_fetch(c, &d, kernel, y);
        bad += exact ? exact_mismatches(c, y, ycpu, kernel) : bound_mismatches(c, y, ycpu, kernel);
        if (kernel != QB_W4A16_CUDA_GEMV) { /* split-K: bit-identical run to run */
            run_fetch(c, &d, kernel, y2);
            ck_assert_msg(memcmp(y, y2, n * 2) == 0, "kernel %d not deterministic", kernel);
        }
    }
    ck_assert_int_eq(bad, 0);
    release(&d);
    free(y);
    free(y2);
    free(ycpu);
}

typedef struct shape {
    int64_t M, N, K, g;
    int perm;
} shape;

static const shape full_shapes[] = {
    {1, 4096, 4096, 128, 0},
    {1, 256, 1024, 128, 0},
    {2, 128, 2048, 64, 0},
    {3, 100, 512, 32, 1},
    {4, 64, 4096, 128, 0},
    {5, 48, 1056, 96, 0},
    {8, 1024, 4096, 128, 1},
    {9, 40, 640, 128, 0},
    {16, 512, 2048, 32, 0},
    {16, 33, 4128, 128, 0},
    {1, 37, 77, 7, 0},
    {3, 19, 255, 16, 1},
    {7, 64, 1000, 1000, 0},
    {12, 80, 2080, 2080, 0},
    {1, 8, 96, 32, 0},
    {2, 4000, 320, 128, 0},
    /* M the old table skipped */
    {6, 24, 512, 64, 0},
    {10, 40, 1024, 128, 1},
    {11, 17, 768, 32, 0},
    {13, 64, 4096, 128, 0},
    {14, 9, 2048, 96, 0},
    {15, 100, 1056, 32, 1},
    /* N < 8 (one partial 16-row tile), narrow: split-K */
    {1, 1, 4096, 128, 0},
    {2, 7, 96, 32, 0},
    {3, 5, 77, 7, 1},
    {9, 3, 8192, 64, 0},
    /* K % 32 == 0 with g not a multiple of 32: the GEMV's generic path */
    {4, 64, 1024, 48, 0},
    {2, 33, 512, 100, 1},
    {1, 16, 4096, 4095, 0},
    /* g >= K: clamped, the mma kernel when K % 32 == 0 */
    {7, 64, 1000, 5000, 0},
    {3, 3, 4096, 2147483647LL, 0},
    {2, 3, 4096, 2147483648LL, 0},
    {1, 3, 4096, 4294967296LL, 0},
    {5, 3, 4096, 4294967328LL, 1},
    {16, 24, 2080, INT64_MAX, 1},
    /* M > 16: row chunks of 16 sharing the workspace */
    {17, 40, 1024, 128, 0},
    {20, 16, 4096, 128, 0},
    {33, 24, 2048, 64, 1},
};

/* For the compute-sanitizer passes: one shape per path, small. */
static const shape reduced_shapes[] = {
    {1, 37, 77, 7, 0},       /* GEMV generic */
    {3, 100, 512, 32, 1},    /* perm, mma */
    {4, 16, 4096, 128, 0},   /* mma split-K */
    {11, 5, 1024, 48, 0},    /* K % 32 == 0, g % 32 != 0 */
    {13, 40, 640, 128, 1},   /* NT = 2 tile */
    {2, 3, 4096, 4294967328LL, 0}, /* g > 2^32, clamped */
    {17, 24, 256, 32, 0},    /* row chunks */
};

static const shape *shapes(int *n)
{
    if (g_reduced) {
        *n = (int)(sizeof(reduced_shapes) / sizeof(reduced_shapes[0]));
        return reduced_shapes;
    }
    *n = (int)(sizeof(full_shapes) / sizeof(full_shapes[0]));
    return full_shapes;
}

START_TEST(test_exact_table)
{
    int n;
    const shape *sh = &shapes(&n)[_i];
    qbt_rng rng = {0xe8ac7 + (uint64_t)_i};
    qbt_w4a16_case c;
    qbt_w4a16_case_make_exact(&c, &rng, sh->M, sh->N, sh->K, sh->g, sh->perm);
    run_case(&c, 1, 0, 0);
    qbt_w4a16_case_free(&c);
}
END_TEST

START_TEST(test_against_reference)
{
    int n;
    const shape *sh = &shapes(&n)[_i];
    qbt_rng rng = {0xc0da + (uint64_t)_i};
    qbt_w4a16_case c;
    qbt_w4a16_case_make(&c, &rng, sh->M, sh->N, sh->K, sh->g, sh->perm, 1);
    run_case(&c, 0, 0, 0);
    qbt_w4a16_case_free(&c);
}
END_TEST

START_TEST(test_misaligned)
{
    /* x 2 bytes and packed 1 or 8 bytes off 16: the GEMV takes them (its
     * generic path), forced mma is refused; with a perm the kernels read
     * the aligned workspace copy, so only packed matters */
    static const size_t offs[][3] = {/* x, packed, perm */
                                     {2, 0, 0}, {0, 1, 0}, {0, 8, 0}, {6, 3, 1}, {2, 0, 1}};
    for (int i = 0; i < 5; i++) {
        qbt_rng rng = {77 + (uint64_t)i};
        qbt_w4a16_case c;
        qbt_w4a16_case_make_exact(&c, &rng, 5, 40, 1024, 128, (int)offs[i][2]);
        run_case(&c, 1, offs[i][0], offs[i][1]);
        qbt_w4a16_case_free(&c);
    }
}
END_TEST

START_TEST(test_issue_example)
{
    /* K = 4096, N = 3, scales 1, 2, -3, row sums -321, 302, 682 with x = +1,
     * -1, 0, 0 repeating: -321, 604, -2046 for every g >= K */
    static const int64_t gs[] = {4096, 8192, 2147483647LL, 2147483648LL, 4294967296LL,
                                 4294967328LL, INT64_MAX};
    enum { K = 4096, N = 3 };
    static const int target[N] = {-321, 302, 682};
    static const float sv[N] = {1.0f, 2.0f, -3.0f}, want[N] = {-321.0f, 604.0f, -2046.0f};
    qbt_rng rng = {19};
    qbt_w4a16_case c;
    uint16_t y[N];
    /* reuse the exact case's buffers with M = 1, one scale per row */
    qbt_w4a16_case_make_exact(&c, &rng, 1, N, K, K, 0);
    for (int k = 0; k < K; k++)
        c.x[k] = qb_f32_to_f16(k % 4 == 0 ? 1.0f : k % 4 == 1 ? -1.0f : 0.0f);
    for (int n = 0; n < N; n++) {
        int8_t *q = c.q + n * K;
        int dot = 0;
        for (int k = 0; k < K; k++)
            dot += q[k] * (k % 4 == 0 ? 1 : k % 4 == 1 ? -1 : 0);
        for (int k = K - 1; k >= 0 && dot != target[n]; k--) {
            int xv = k % 4 == 0 ? 1 : k % 4 == 1 ? -1 : 0, nq;
            if (!xv)
                continue;
            nq = q[k] + (target[n] - dot) * xv;
            nq = nq < -8 ? -8 : nq > 7 ? 7 : nq;
            dot += (nq - q[k]) * xv;
            q[k] = (int8_t)nq;
        }
        ck_assert_int_eq(dot, target[n]);
        c.scales[n] = qb_f32_to_f16(sv[n]);
    }
    qbt_w4a16_pack(c.q, N, K, c.packed);
    for (size_t i = 0; i < sizeof(gs) / sizeof(gs[0]); i++) {
        dev_case d;
        c.g = gs[i];
        upload(&c, &d, 0, 0);
        for (int kernel = QB_W4A16_CUDA_AUTO; kernel <= QB_W4A16_CUDA_MMA; kernel++) {
            run_fetch(&c, &d, kernel, y);
            for (int n = 0; n < N; n++)
                ck_assert_msg(qb_f16_to_f32(y[n]) == want[n], "g = %lld kernel %d: y[%d] = %g, "
                              "want %g", (long long)gs[i], kernel, n, qb_f16_to_f32(y[n]),
                              want[n]);
        }
        release(&d);
    }
    qbt_w4a16_case_free(&c);
}
END_TEST

START_TEST(test_perm_out_of_range)
{
    /* one entry outside 0..K-1 (K, -1, INT32_MAX): every output NaN (the
     * column reaches every row), no out-of-bounds read (memcheck) */
    static const int32_t badv[] = {1024, -1, INT32_MAX};
    for (int i = 0; i < 3; i++) {
        qbt_rng rng = {5 + (uint64_t)i};
        qbt_w4a16_case c;
        dev_case d;
        uint16_t y[3 * 48];
        qbt_w4a16_case_make_exact(&c, &rng, 3, 48, 1024, 128, 1);
        c.perm[100] = badv[i];
        upload(&c, &d, 0, 0);
        for (int kernel = QB_W4A16_CUDA_AUTO; kernel <= QB_W4A16_CUDA_MMA; kernel++) {
            run_fetch(&c, &d, kernel, y);
            for (int j = 0; j < 3 * 48; j++)
                ck_assert_msg(isnan(qb_f16_to_f32(y[j])), "kernel %d perm %d: y[%d] = %g", kernel,
                              badv[i], j, qb_f16_to_f32(y[j]));
        }
        release(&d);
        qbt_w4a16_case_free(&c);
    }
}
END_TEST

START_TEST(test_small_workspace)
{
    /* N = 16, K = 4096: split-K wants partials. With less workspace than
     * asked for the call runs unsplit: same exact result, nothing written
     * past what was passed (the rest of the allocation is canary). */
    for (int with_perm = 0; with_perm <= 1; with_perm++) {
        qbt_rng rng = {31 + (uint64_t)with_perm};
        qbt_w4a16_case c;
        dev_case d;
        uint16_t y[4 * 16], ycpu[4 * 16];
        size_t full, perm_bytes = with_perm ? 4 * 4096 * 2 : 0;
        qbt_w4a16_case_make_exact(&c, &rng, 4, 16, 4096, 128, with_perm);
        ck_assert_int_eq(qb_w4a16_gemm_cpu(c.x, ycpu, c.packed, c.scales, c.perm, 4, 16, 4096, 128,
                                           1, 0), 0);
        upload(&c, &d, 0, 0);
        full = d.ws_bytes;
        ck_assert_uint_gt(full, perm_bytes); /* there are partials to drop */
        for (size_t pass = perm_bytes; pass < full; pass += (full - perm_bytes) / 2) {
            CK_CUDA(cudaMemset(d.ws.p, CANARY_BYTE, full + CANARY));
            d.ws_bytes = pass;
            run_fetch(&c, &d, QB_W4A16_CUDA_MMA, y);
            ck_assert_int_eq(exact_mismatches(&c, y, ycpu, QB_W4A16_CUDA_MMA), 0);
            ck_assert_msg(dbuf_untouched(&d.ws, pass, full - pass + CANARY),
                          "written past the %zu workspace bytes passed", pass);
        }
        if (with_perm) { /* less than the perm needs: refused, nothing enqueued */
            d.ws_bytes = perm_bytes - 16;
            check_refused(&c, &d, QB_W4A16_CUDA_AUTO, QB_E_INVALID);
            ck_assert_ptr_nonnull(strstr(qb_w4a16_cuda_error(), "workspace"));
            d.ws_bytes = 0;
            check_refused(&c, &d, QB_W4A16_CUDA_AUTO, QB_E_INVALID);
        }
        release(&d);
        qbt_w4a16_case_free(&c);
    }
}
END_TEST

START_TEST(test_streams)
{
    /* a non-blocking stream, synchronised on its own; then two streams at
     * once, each with its own workspace (the header's contract) */
    qbt_rng rng = {12};
    qbt_w4a16_case c;
    dev_case d, d2;
    cudaStream_t s1, s2;
    uint16_t *y = calloc(6 * 32, 2), *y2 = calloc(6 * 32, 2), *ycpu = calloc(6 * 32, 2);
    ck_assert(y && y2 && ycpu);
    qbt_w4a16_case_make_exact(&c, &rng, 6, 32, 8192, 128, 1);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(c.x, ycpu, c.packed, c.scales, c.perm, c.M, c.N, c.K, c.g,
                                       1, 0), 0);
    upload(&c, &d, 0, 0);
    upload(&c, &d2, 0, 0);
    CK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    y_poison(&d);
    y_poison(&d2);
    CK_CUDA(cudaDeviceSynchronize());
    ck_assert_int_eq(call(&c, &d, QB_W4A16_CUDA_AUTO, s1), 0);
    CK_CUDA(cudaStreamSynchronize(s1));
    CK_CUDA(cudaMemcpy(y, d.y.p, d.y.bytes, cudaMemcpyDeviceToHost));
    ck_assert_int_eq(exact_mismatches(&c, y, ycpu, QB_W4A16_CUDA_AUTO), 0);
    y_poison(&d);
    CK_CUDA(cudaDeviceSynchronize());
    for (int rep = 0; rep < 4; rep++) {
        ck_assert_int_eq(call(&c, &d, QB_W4A16_CUDA_MMA, s1), 0);
        ck_assert_int_eq(call(&c, &d2, QB_W4A16_CUDA_MMA, s2), 0);
    }
    CK_CUDA(cudaStreamSynchronize(s1));
    CK_CUDA(cudaStreamSynchronize(s2));
    CK_CUDA(cudaMemcpy(y, d.y.p, d.y.bytes, cudaMemcpyDeviceToHost));
    CK_CUDA(cudaMemcpy(y2, d2.y.p, d2.y.bytes, cudaMemcpyDeviceToHost));
    ck_assert_int_eq(exact_mismatches(&c, y, ycpu, QB_W4A16_CUDA_MMA), 0);
    ck_assert_int_eq(memcmp(y, y2, d.y.bytes), 0);
    ck_assert(dbuf_canary_ok(&d.y) && dbuf_canary_ok(&d2.y));
    ck_assert(dbuf_canary_ok(&d.ws) && dbuf_canary_ok(&d2.ws));
    CK_CUDA(cudaStreamDestroy(s1));
    CK_CUDA(cudaStreamDestroy(s2));
    release(&d);
    release(&d2);
    qbt_w4a16_case_free(&c);
    free(y);
    free(y2);
    free(ycpu);
}
END_TEST

START_TEST(test_bad_arguments)
{
    qbt_rng rng = {3};
    qbt_w4a16_case c;
    dev_case d;
    qbt_w4a16_case_make_exact(&c, &rng, 2, 16, 64, 32, 1);
    upload(&c, &d, 0, 0);
    /* each refused before anything is enqueued */
    c.M = 0;
    check_refused(&c, &d, QB_W4A16_CUDA_AUTO, QB_E_INVALID);
    c.M = 2;
    c.g = 0;
    check_refused(&c, &d, QB_W4A16_CUDA_AUTO, QB_E_INVALID);
    c.g = 32;
    check_refused(&c, &d, 9, QB_E_INVALID);
    c.N = 1LL << 40;
    check_refused(&c, &d, QB_W4A16_CUDA_AUTO, QB_E_INVALID);
    c.N = 16;
    {
        void *keep = d.perm.p;
        d.perm.p = (char *)keep + 2;
        check_refused(&c, &d, QB_W4A16_CUDA_AUTO, QB_E_INVALID);
        ck_assert_ptr_nonnull(strstr(qb_w4a16_cuda_error(), "perm"));
        d.perm.p = keep;
    }
    {
        void *keep = d.y.p;
        d.y.p = d.x.p; /* y over x */
        ck_assert_int_eq(call(&c, &d, QB_W4A16_CUDA_AUTO, NULL), QB_E_INVALID);
        ck_assert_ptr_nonnull(strstr(qb_w4a16_cuda_error(), "overlaps"));
        d.y.p = keep;
    }
    ck_assert_int_eq(qb_w4a16_gemm_cuda(NULL, d.y.p, d.packed.p, d.scales.p, NULL, 2, 16, 64, 32,
                                        NULL, 0, 0, NULL),
                     QB_E_INVALID);
    ck_assert_int_eq(qb_w4a16_cuda_workspace_bytes(1, 16, 64, 0, 0, &d.ws_bytes), QB_E_INVALID);
    ck_assert_int_eq(qb_w4a16_cuda_workspace_bytes(1, 16, 64, 32, 0, NULL), QB_E_INVALID);
    release(&d);
    qbt_w4a16_case_free(&c);
}
END_TEST

START_TEST(test_pending_error_not_ours)
{
    /* an earlier non-sticky error (a failed allocation) is reported as
     * such, not cleared, and nothing is enqueued; once its owner clears it
     * the call runs */
    qbt_rng rng = {4};
    qbt_w4a16_case c;
    dev_case d;
    void *huge = NULL;
    size_t ws = 0;
    uint16_t y[2 * 16], ycpu[2 * 16];
    qbt_w4a16_case_make_exact(&c, &rng, 2, 16, 64, 32, 0);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(c.x, ycpu, c.packed, c.scales, NULL, 2, 16, 64, 32, 1, 0), 0);
    upload(&c, &d, 0, 0);
    ck_assert_int_ne(cudaMalloc(&huge, (size_t)1 << 62), cudaSuccess);
    ck_assert_int_ne(cudaPeekAtLastError(), cudaSuccess);
    check_refused(&c, &d, QB_W4A16_CUDA_AUTO, QB_E_INTERNAL);
    ck_assert_ptr_nonnull(strstr(qb_w4a16_cuda_error(), "earlier CUDA error"));
    ck_assert_int_eq(qb_w4a16_cuda_workspace_bytes(2, 16, 64, 32, 0, &ws), QB_E_INTERNAL);
    ck_assert_int_eq(cudaPeekAtLastError(), cudaErrorMemoryAllocation); /* still there */
    ck_assert_int_eq(cudaGetLastError(), cudaErrorMemoryAllocation);    /* the owner clears it */
    run_fetch(&c, &d, QB_W4A16_CUDA_AUTO, y);
    ck_assert_int_eq(exact_mismatches(&c, y, ycpu, QB_W4A16_CUDA_AUTO), 0);
    ck_assert_int_eq(cudaPeekAtLastError(), cudaSuccess);
    release(&d);
    qbt_w4a16_case_free(&c);
}
END_TEST

/* 1 when a CUDA device is present. check forks each test by default, and
 * a process that has initialised CUDA cannot use it in children forked
 * afterwards: unless CK_FORK=no, the probe runs in a child of its own and
 * this process never touches CUDA. */
static int have_device(void)
{
    const char *f = getenv("CK_FORK");
    int n = 0, status = 0;
    pid_t pid;
    if (f && strcmp(f, "no") == 0)
        return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    fflush(NULL);
    pid = fork();
    if (pid == 0)
        _exit(cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 1);
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        printf("cannot fork the device probe\n");
        return 0;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

Suite *qbt_suite(void)
{
    int n_shapes = 0;
    const char *r = getenv("QBT_W4A16_CUDA_REDUCED");
    Suite *s;
    TCase *tc;
    if (!have_device()) {
        printf("no CUDA device: skipped\n");
        return NULL; /* skipped */
    }
    g_reduced = r && *r && strcmp(r, "0") != 0;
    shapes(&n_shapes);
    printf("%s shape set: %d shapes\n", g_reduced ? "reduced" : "full", n_shapes);
    s = suite_create("w4a16_cuda");
    tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_exact_table, 0, n_shapes);
    tcase_add_loop_test(tc, test_against_reference, 0, n_shapes);
    tcase_add_test(tc, test_misaligned);
    tcase_add_test(tc, test_issue_example);
    tcase_add_test(tc, test_perm_out_of_range);
    tcase_add_test(tc, test_small_workspace);
    tcase_add_test(tc, test_streams);
    tcase_add_test(tc, test_bad_arguments);
    if (!g_reduced) /* a deliberate CUDA API error: the sanitizers report it */
        tcase_add_test(tc, test_pending_error_not_ours);
    suite_add_tcase(s, tc);
    return s;
}
