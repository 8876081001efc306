/*
 * qb_w4a16_gemm_cuda: the device side of a call. Every argument check and
 * every decision is made first, in w4a16_cuda_plan.c (plain C, tested
 * without a GPU); then an earlier pending CUDA error refuses the call;
 * only then are the perm gather and the kernels enqueued, in row chunks of
 * at most QB_W4A16_CUDA_MAX_M, each launch checked with
 * cudaPeekAtLastError.
 */
#include <quantbridge/qb_w4a16_cuda.h>

#include <stdarg.h>
#include <stdio.h>

#include "w4a16_cuda_internal.cuh"
#include "w4a16_cuda_plan.h"

namespace {

thread_local char g_err[512];

qb_status fail(qb_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
qb_status fail(qb_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof(g_err), fmt, ap);
    va_end(ap);
    return code;
}

/* A CUDA error pending before this call is someone else's: report it as
 * such and leave it for its owner (not cleared), enqueueing nothing. */
qb_status refuse_if_pending(const char *fn)
{
    const cudaError_t e = cudaPeekAtLastError();
    if (e == cudaSuccess)
        return QB_OK;
    return fail(QB_E_INTERNAL,
                "%s: an earlier CUDA error is pending (%s: %s), not from this call; left "
                "uncleared, nothing enqueued",
                fn, cudaGetErrorName(e), cudaGetErrorString(e));
}

/* Reports error `e` of this call's own CUDA call `what`. The state was
 * clean before (refuse_if_pending), so a non-sticky error is this call's:
 * it is consumed, leaving the error state as the caller had it. A sticky
 * error (the context is unusable) cannot be cleared, and may have been
 * raised by earlier asynchronous work that surfaced during this call. */
qb_status own_error(const char *fn, const char *what, cudaError_t e)
{
    (void)cudaGetLastError();
    const bool sticky = cudaPeekAtLastError() != cudaSuccess;
    return fail(QB_E_INTERNAL, "%s: %s: %s (%s)%s", fn, what, cudaGetErrorString(e),
                cudaGetErrorName(e),
                sticky ? "; sticky: the CUDA context is unusable (the cause may be earlier "
                         "asynchronous work)"
                       : "");
}

qb_status device_sms(const char *fn, int *sms)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess)
        return own_error(fn, "querying the current device", e);
    return QB_OK;
}

/* xp[m][k] = x[m][perm[k]]; an out-of-range entry gives NaN (visible in
 * the output) instead of an out-of-bounds read. */
__global__ void w4a16_gather(const __half *__restrict__ x, const int32_t *__restrict__ perm,
                             __half *__restrict__ xp, int M, int K)
{
    const size_t total = (size_t)M * K;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t m = i / K;
        const int32_t p = perm[i % K];
        xp[i] = p >= 0 && p < K ? x[m * K + p] : __ushort_as_half(0x7e00);
    }
}

} // namespace

extern "C" qb_status qb_w4a16_cuda_workspace_bytes(int64_t M, int64_t N, int64_t K,
                                                   int64_t group_size, int has_perm,
                                                   size_t *bytes)
{
    static const char fn[] = "qb_w4a16_cuda_workspace_bytes";
    w4a16_cuda_plan p;
    int sms = 0;
    qb_status st;
    g_err[0] = '\0';
    if (!bytes)
        return fail(QB_E_INVALID, "%s: bytes is NULL", fn);
    *bytes = 0;
    if ((st = w4a16_cuda_plan_sizes(fn, M, N, K, group_size, &p, g_err, sizeof(g_err))) != QB_OK ||
        (st = refuse_if_pending(fn)) != QB_OK || (st = device_sms(fn, &sms)) != QB_OK)
        return st;
    *bytes = w4a16_cuda_workspace_need(&p, has_perm, sms);
    return QB_OK;
}

extern "C" qb_status qb_w4a16_gemm_cuda(const uint16_t *x, uint16_t *y, const uint8_t *packed,
                                        const uint16_t *scales, const int32_t *perm, int64_t M,
                                        int64_t N, int64_t K, int64_t group_size,
                                        void *workspace, size_t workspace_bytes, int kernel,
                                        void *stream)
{
    static const char fn[] = "qb_w4a16_gemm_cuda";
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    const w4a16_cuda_args args = {
        (uintptr_t)x, (uintptr_t)y, (uintptr_t)packed, (uintptr_t)scales, (uintptr_t)perm,
        (uintptr_t)workspace, workspace_bytes, M, N, K, group_size, kernel};
    w4a16_cuda_plan p;
    const __half *xin = reinterpret_cast<const __half *>(x);
    __half *yh = reinterpret_cast<__half *>(y);
    const __half *sc = reinterpret_cast<const __half *>(scales);
    char *ws = static_cast<char *>(workspace);
    int sms = 0;
    qb_status st;
    cudaError_t e;

    g_err[0] = '\0';
    /* Everything that can refuse the call comes before the first launch. */
    if ((st = w4a16_cuda_plan_call(&args, &p, g_err, sizeof(g_err))) != QB_OK ||
        (st = refuse_if_pending(fn)) != QB_OK)
        return st;
    if (p.use_mma) {
        if ((st = device_sms(fn, &sms)) != QB_OK)
            return st;
        w4a16_cuda_plan_splits(&p, sms, workspace ? workspace_bytes - p.perm_bytes : 0);
    }

    if (perm) {
        __half *xp = reinterpret_cast<__half *>(ws);
        const size_t total = (size_t)p.M * (size_t)p.K;
        const size_t want = (total + 255) / 256;
        const unsigned blocks = (unsigned)(want < 4096 ? want : 4096);
        w4a16_gather<<<blocks, 256, 0, s>>>(xin, perm, xp, (int)p.M, p.K);
        if ((e = cudaPeekAtLastError()) != cudaSuccess)
            return own_error(fn, "launching the perm gather", e);
        xin = xp;
    }
    /* Row chunks: the kernels take at most QB_W4A16_CUDA_MAX_M rows (the
     * mma kernel's shared-memory pieces and token tiles are sized for it).
     * Chunks run in stream order, so they share the split-K partials. */
    for (int64_t m0 = 0; m0 < p.M; m0 += QB_W4A16_CUDA_MAX_M) {
        const int mc = (int)(p.M - m0 < QB_W4A16_CUDA_MAX_M ? p.M - m0 : QB_W4A16_CUDA_MAX_M);
        const __half *xc = xin + (size_t)m0 * (size_t)p.K;
        __half *yc = yh + (size_t)m0 * (size_t)p.N;
        if (p.use_mma)
            e = w4a16_launch_mma(xc, yc, packed, sc, mc, p.N, p.K, p.g, p.scols, p.splits,
                                 reinterpret_cast<float *>(ws + p.perm_bytes), s);
        else
            e = w4a16_launch_gemv(xc, yc, packed, sc, mc, p.N, p.K, p.g, p.scols, s);
        if (e != cudaSuccess)
            return own_error(fn, p.use_mma ? "launching the mma kernel" : "launching the GEMV", e);
    }
    return QB_OK;
}

extern "C" const char *qb_w4a16_cuda_error(void)
{
    return g_err;
}
