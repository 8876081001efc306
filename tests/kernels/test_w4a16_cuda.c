/*
 * W4A16 CUDA kernels against the float64 ground truth of known codes and
 * against the CPU reference, on the same inputs: M = 1..16, odd K, K not a
 * multiple of the group, group sizes 32/64/128/96/7/K, negative and zero
 * scales, |x| ~ 1e3 outliers, perms, narrow N (split-K) and N % 16 != 0,
 * both kernels forced and auto. Split-K results must be bit-identical
 * across runs (deterministic reduction).
 *
 * Exits 77 (CTest SKIP_RETURN_CODE) when no CUDA device is present, so a
 * machine without a GPU reports the test skipped, not passed.
 *
 * Bound: the GPU result and the CPU reference both approximate the exact
 * value with fp32 accumulation and one fp16 rounding, so each lies within
 * qbt_w4a16_bound() of the float64 reference; tensor cores accumulate
 * with their own (not IEEE round-to-nearest) fp32 adds, so the fp32 term
 * gets a factor 2 more here.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include <quantbridge/qb_half.h>
#include <quantbridge/qb_w4a16.h>
#include <quantbridge/qb_w4a16_cuda.h>

#include "qbt_w4a16_case.h"

#define CK_CUDA(call) ck_assert_msg((call) == cudaSuccess, "%s failed", #call)

typedef struct dev_case {
    void *x, *y, *packed, *scales, *perm, *ws;
    size_t ws_bytes;
} dev_case;

static void upload(const qbt_w4a16_case *c, dev_case *d)
{
    size_t pb = (size_t)(c->N * ((c->K + 1) / 2)), sb = (size_t)(c->N * ((c->K + c->g - 1) / c->g)) * 2;
    memset(d, 0, sizeof(*d));
    CK_CUDA(cudaMalloc(&d->x, (size_t)(c->M * c->K) * 2));
    CK_CUDA(cudaMalloc(&d->y, (size_t)(c->M * c->N) * 2));
    CK_CUDA(cudaMalloc(&d->packed, pb));
    CK_CUDA(cudaMalloc(&d->scales, sb));
    CK_CUDA(cudaMemcpy(d->x, c->x, (size_t)(c->M * c->K) * 2, cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(d->packed, c->packed, pb, cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(d->scales, c->scales, sb, cudaMemcpyHostToDevice));
    if (c->perm) {
        CK_CUDA(cudaMalloc(&d->perm, (size_t)c->K * 4));
        CK_CUDA(cudaMemcpy(d->perm, c->perm, (size_t)c->K * 4, cudaMemcpyHostToDevice));
    }
    ck_assert_int_eq(qb_w4a16_cuda_workspace_bytes(c->M, c->N, c->K, c->g, c->perm != NULL,
                                                   &d->ws_bytes), 0);
    if (d->ws_bytes)
        CK_CUDA(cudaMalloc(&d->ws, d->ws_bytes));
}

static void release(dev_case *d)
{
    cudaFree(d->x);
    cudaFree(d->y);
    cudaFree(d->packed);
    cudaFree(d->scales);
    cudaFree(d->perm);
    cudaFree(d->ws);
}

/* Runs one kernel choice; returns the number of outputs out of bound. */
static int run_one(const qbt_w4a16_case *c, dev_case *d, int kernel, uint16_t *y,
                   const uint16_t *ycpu)
{
    int bad = 0;
    qb_status st = qb_w4a16_gemm_cuda(d->x, d->y, d->packed, d->scales, d->perm, c->M, c->N,
                                      c->K, c->g, d->ws, d->ws_bytes, kernel, NULL);
    ck_assert_msg(st == 0, "gemm_cuda: %d %s", st, qb_w4a16_cuda_error());
    CK_CUDA(cudaDeviceSynchronize());
    CK_CUDA(cudaMemcpy(y, d->y, (size_t)(c->M * c->N) * 2, cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < c->M * c->N && bad < 5; i++) {
        double got = qb_f16_to_f32(y[i]), cpu = qb_f16_to_f32(ycpu[i]);
        double b = qbt_w4a16_bound(c->ref[i], 2.0 * c->abs_sum[i], c->K, c->g);
        if (!(fabs(got - c->ref[i]) <= b) || !(fabs(got - cpu) <= 2 * b)) {
            fprintf(stderr, "kernel %d M=%lld N=%lld K=%lld g=%lld perm=%d: y[%lld] gpu %.9g cpu %.9g ref %.9g bound %.3g\n",
                    kernel, (long long)c->M, (long long)c->N, (long long)c->K, (long long)c->g,
                    c->perm != NULL, (long long)i, got, cpu, c->ref[i], b);
            bad++;
        }
    }
    return bad;
}

static const int64_t shapes[][5] = {
    /* M, N, K, g, perm */
    {1, 4096, 4096, 128, 0},  {1, 256, 1024, 128, 0}, {2, 128, 2048, 64, 0},
    {3, 100, 512, 32, 1},     {4, 64, 4096, 128, 0},  {5, 48, 1056, 96, 0},
    {8, 1024, 4096, 128, 1},  {9, 40, 640, 128, 0},   {16, 512, 2048, 32, 0},
    {16, 33, 4128, 128, 0},   {1, 37, 77, 7, 0},      {3, 19, 255, 16, 1},
    {7, 64, 1000, 1000, 0},   {12, 80, 2080, 2080, 0}, {1, 8, 96, 32, 0},
    {2, 4000, 320, 128, 0},
};

START_TEST(test_against_reference)
{
    qbt_rng rng = {0xc0da + (uint64_t)_i};
    const int64_t *sh = shapes[_i];
    qbt_w4a16_case c;
    dev_case d;
    uint16_t *y, *ycpu;
    int bad = 0;
    qbt_w4a16_case_make(&c, &rng, sh[0], sh[1], sh[2], sh[3], (int)sh[4], 1);
    y = calloc((size_t)(c.M * c.N), 2);
    ycpu = calloc((size_t)(c.M * c.N), 2);
    ck_assert_int_eq(qb_w4a16_gemm_cpu(c.x, ycpu, c.packed, c.scales, c.perm, c.M, c.N, c.K, c.g,
                                       2, 0), 0);
    upload(&c, &d);
    bad += run_one(&c, &d, QB_W4A16_CUDA_AUTO, y, ycpu);
    bad += run_one(&c, &d, QB_W4A16_CUDA_GEMV, y, ycpu);
    if (c.K % 32 == 0 && c.g % 32 == 0) {
        uint16_t *y2 = calloc((size_t)(c.M * c.N), 2);
        bad += run_one(&c, &d, QB_W4A16_CUDA_MMA, y, ycpu);
        bad += run_one(&c, &d, QB_W4A16_CUDA_MMA, y2, ycpu);
        ck_assert_msg(memcmp(y, y2, (size_t)(c.M * c.N) * 2) == 0, "mma not deterministic");
        free(y2);
    } else {
        ck_assert_int_eq(qb_w4a16_gemm_cuda(d.x, d.y, d.packed, d.scales, d.perm, c.M, c.N, c.K,
                                            c.g, d.ws, d.ws_bytes, QB_W4A16_CUDA_MMA, NULL),
                         QB_E_UNSUPPORTED);
    }
    ck_assert_int_eq(bad, 0);
    release(&d);
    free(y);
    free(ycpu);
    qbt_w4a16_case_free(&c);
}
END_TEST

START_TEST(test_exact_small)
{
    /* integer x and scales +-1: the product is an exact small integer and
     * both kernels must return it bit for bit */
    enum { M = 3, N = 24, K = 128, G = 32, SC = K / G }; /* |y| <= 2048: exact in fp16 */
    static int8_t q[N * K];
    static uint8_t packed[N * K / 2];
    static uint16_t scales[N * SC], x[M * K], y[M * N];
    dev_case d;
    for (int i = 0; i < N * K; i++)
        q[i] = (int8_t)((i * 7 + i / K) % 16 - 8);
    for (int i = 0; i < N * SC; i++)
        scales[i] = qb_f32_to_f16(i % 3 == 0 ? -1.0f : 1.0f);
    for (int i = 0; i < M * K; i++)
        x[i] = qb_f32_to_f16((float)(i % 5 - 2));
    qbt_w4a16_pack(q, N, K, packed);
    memset(&d, 0, sizeof(d));
    CK_CUDA(cudaMalloc(&d.x, sizeof(x)));
    CK_CUDA(cudaMalloc(&d.y, sizeof(y)));
    CK_CUDA(cudaMalloc(&d.packed, sizeof(packed)));
    CK_CUDA(cudaMalloc(&d.scales, sizeof(scales)));
    CK_CUDA(cudaMemcpy(d.x, x, sizeof(x), cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(d.packed, packed, sizeof(packed), cudaMemcpyHostToDevice));
    CK_CUDA(cudaMemcpy(d.scales, scales, sizeof(scales), cudaMemcpyHostToDevice));
    for (int kernel = QB_W4A16_CUDA_GEMV; kernel <= QB_W4A16_CUDA_MMA; kernel++) {
        ck_assert_int_eq(qb_w4a16_gemm_cuda(d.x, d.y, d.packed, d.scales, NULL, M, N, K, G, NULL, 0,
                                            kernel, NULL), 0);
        CK_CUDA(cudaDeviceSynchronize());
        CK_CUDA(cudaMemcpy(y, d.y, sizeof(y), cudaMemcpyDeviceToHost));
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double want = 0;
                for (int k = 0; k < K; k++)
                    want += q[n * K + k] * (double)qb_f16_to_f32(scales[n * SC + k / G]) *
                            qb_f16_to_f32(x[m * K + k]);
                ck_assert_msg(qb_f16_to_f32(y[m * N + n]) == want, "kernel %d y[%d][%d] %g want %g",
                              kernel, m, n, qb_f16_to_f32(y[m * N + n]), want);
            }
    }
    release(&d);
}
END_TEST

START_TEST(test_bad_arguments)
{
    void *p = NULL;
    CK_CUDA(cudaMalloc(&p, 4096));
    ck_assert_int_eq(qb_w4a16_gemm_cuda(p, p, p, p, NULL, 17, 16, 32, 32, NULL, 0, 0, NULL),
                     QB_E_UNSUPPORTED);
    ck_assert_int_eq(qb_w4a16_gemm_cuda(p, p, p, p, NULL, 0, 16, 32, 32, NULL, 0, 0, NULL),
                     QB_E_INVALID);
    ck_assert_int_eq(qb_w4a16_gemm_cuda(p, p, p, p, NULL, 1, 16, 32, 32, NULL, 0, 9, NULL),
                     QB_E_INVALID);
    /* a perm without workspace */
    ck_assert_int_eq(qb_w4a16_gemm_cuda(p, p, p, p, p, 1, 16, 32, 32, NULL, 0, 0, NULL),
                     QB_E_INVALID);
    ck_assert_ptr_nonnull(strstr(qb_w4a16_cuda_error(), "workspace"));
    cudaFree(p);
}
END_TEST

Suite *qbt_suite(void)
{
    int n = 0;
    Suite *s;
    TCase *tc;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        printf("no CUDA device: skipped\n");
        return NULL; /* skipped */
    }
    s = suite_create("w4a16_cuda");
    tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_against_reference, 0, (int)(sizeof(shapes) / sizeof(shapes[0])));
    tcase_add_test(tc, test_exact_small);
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}
