/*
 * qb_w4a16_gemm_cpu: argument checks, the fp32 copy of x (with perm
 * applied), the choice of row kernel and the split of rows over threads.
 */
#include <quantbridge/qb_half.h>
#include <quantbridge/qb_w4a16.h>

#include <pthread.h>
#include <stdlib.h>

#include "w4a16_cpu_internal.h"

int qb_w4a16_cpu_has_avx2(void)
{
    return w4a16_cpu_avx2_usable();
}

typedef struct worker {
    const w4a16_rows_job *job;
    int64_t n0, n1;
    int avx2;
    qb_status status;
    pthread_t tid;
} worker;

static void *worker_run(void *arg)
{
    worker *w = arg;
    /* +64: the AVX2 decoder writes whole 64-code blocks only inside K, but
     * keep slack so no kernel ever has to reason about the buffer end. */
    float *codes = malloc(((size_t)w->job->K + 64) * sizeof(float));
    if (!codes) {
        w->status = QB_E_NOMEM;
        return NULL;
    }
    if (w->avx2)
        w4a16_rows_avx2(w->job, w->n0, w->n1, codes);
    else
        w4a16_rows_plain(w->job, w->n0, w->n1, codes);
    free(codes);
    w->status = QB_OK;
    return NULL;
}

/* 0 when perm is a permutation of 0..K-1. */
static qb_status check_perm(const int32_t *perm, int64_t K)
{
    unsigned char *seen = calloc((size_t)K, 1);
    qb_status st = QB_OK;
    if (!seen)
        return QB_E_NOMEM;
    for (int64_t i = 0; i < K; i++) {
        if (perm[i] < 0 || perm[i] >= K || seen[perm[i]]) {
            st = QB_E_INVALID;
            break;
        }
        seen[perm[i]] = 1;
    }
    free(seen);
    return st;
}

qb_status qb_w4a16_gemm_cpu(const uint16_t *x, uint16_t *y, const uint8_t *packed,
                            const uint16_t *scales, const int32_t *perm, int64_t M, int64_t N,
                            int64_t K, int64_t group_size, int threads, int path)
{
    w4a16_rows_job job;
    worker *ws = NULL;
    float *xf = NULL;
    int avx2, nthreads, started = 0;
    qb_status st = QB_OK;

    if (!x || !y || !packed || !scales || M < 1 || N < 1 || K < 1 || group_size < 1)
        return QB_E_INVALID;
    if ((uint64_t)M > SIZE_MAX / sizeof(float) / (uint64_t)K)
        return QB_E_INVALID;
    switch (path) {
    case QB_W4A16_CPU_AUTO:
        avx2 = w4a16_cpu_avx2_usable();
        break;
    case QB_W4A16_CPU_PLAIN:
        avx2 = 0;
        break;
    case QB_W4A16_CPU_AVX2:
        if (!w4a16_cpu_avx2_usable())
            return QB_E_UNSUPPORTED;
        avx2 = 1;
        break;
    default:
        return QB_E_INVALID;
    }
    if (perm && (st = check_perm(perm, K)) != QB_OK)
        return st;
    /* group_size >= K is one group per row whatever its value: the same
     * clamp as qb_w4a16_gemm_cuda, and no group bound k0 + g can overflow */
    if (group_size > K)
        group_size = K;

    xf = malloc((size_t)M * (size_t)K * sizeof(float));
    if (!xf)
        return QB_E_NOMEM;
    for (int64_t m = 0; m < M; m++)
        for (int64_t c = 0; c < K; c++)
            xf[m * K + c] = qb_f16_to_f32(x[m * K + (perm ? perm[c] : c)]);

    job = (w4a16_rows_job){.xf = xf, .y = y, .packed = packed, .scales = scales,
                           .M = M, .N = N, .K = K, .g = group_size};
    nthreads = threads < 1 ? 1 : threads;
    if (nthreads > N)
        nthreads = (int)N;
    ws = calloc((size_t)nthreads, sizeof(*ws));
    if (!ws) {
        st = QB_E_NOMEM;
        goto out;
    }
    for (int i = 0; i < nthreads; i++) {
        ws[i] = (worker){.job = &job, .n0 = N * i / nthreads, .n1 = N * (i + 1) / nthreads,
                         .avx2 = avx2, .status = QB_E_INTERNAL};
    }
    /* Worker 0 runs on the caller's thread; the others get their own. */
    for (started = 1; started < nthreads; started++) {
        if (pthread_create(&ws[started].tid, NULL, worker_run, &ws[started]) != 0) {
            st = QB_E_IO;
            break;
        }
    }
    worker_run(&ws[0]);
    for (int i = 1; i < started; i++)
        pthread_join(ws[i].tid, NULL);
    for (int i = 0; i < started && st == QB_OK; i++)
        st = ws[i].status;
out:
    free(ws);
    free(xf);
    return st;
}
