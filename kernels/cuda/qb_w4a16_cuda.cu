/*
 * qb_w4a16_gemm_cuda: argument checks, the perm gather, the choice between
 * the mma kernel and the GEMV, split-K sizing and workspace layout.
 */
#include <quantbridge/qb_w4a16_cuda.h>

#include <stdarg.h>
#include <stdio.h>

#include "w4a16_cuda_internal.cuh"

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

#define CUDA_TRY(call)                                                                          \
    do {                                                                                        \
        cudaError_t e_ = (call);                                                                \
        if (e_ != cudaSuccess)                                                                  \
            return fail(QB_E_INTERNAL, "%s: %s (%s)", #call, cudaGetErrorString(e_),           \
                        cudaGetErrorName(e_));                                                  \
    } while (0)

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

size_t align16(size_t v)
{
    return (v + 15) & ~(size_t)15;
}

bool mma_eligible(const void *x, const void *packed, int64_t K, int64_t g)
{
    return K % 32 == 0 && g % 32 == 0 && ((uintptr_t)x & 15) == 0 &&
           ((uintptr_t)packed & 15) == 0;
}

qb_status check_sizes(int64_t M, int64_t N, int64_t K, int64_t g)
{
    if (M < 1 || N < 1 || K < 1 || g < 1)
        return fail(QB_E_INVALID, "qb_w4a16_gemm_cuda: M, N, K and group_size must be >= 1");
    if (M > QB_W4A16_CUDA_MAX_M)
        return fail(QB_E_UNSUPPORTED, "qb_w4a16_gemm_cuda: M = %lld > %d", (long long)M,
                    QB_W4A16_CUDA_MAX_M);
    /* Kernels index with int: N * K / 2 bytes may exceed it (size_t
     * offsets), but N, K and M * N must not. */
    if (N > INT32_MAX / 16 || K > INT32_MAX / 2 || M * N > INT32_MAX)
        return fail(QB_E_INVALID, "qb_w4a16_gemm_cuda: N = %lld, K = %lld too large",
                    (long long)N, (long long)K);
    return QB_OK;
}

qb_status device_sms(int *sms)
{
    int dev = 0;
    CUDA_TRY(cudaGetDevice(&dev));
    CUDA_TRY(cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev));
    return QB_OK;
}

} // namespace

extern "C" qb_status qb_w4a16_cuda_workspace_bytes(int64_t M, int64_t N, int64_t K,
                                                   int64_t group_size, int has_perm,
                                                   size_t *bytes)
{
    int sms = 0;
    qb_status st;
    g_err[0] = '\0';
    if (!bytes)
        return fail(QB_E_INVALID, "qb_w4a16_cuda_workspace_bytes: bytes is NULL");
    *bytes = 0;
    if ((st = check_sizes(M, N, K, group_size)) != QB_OK || (st = device_sms(&sms)) != QB_OK)
        return st;
    size_t b = has_perm ? align16((size_t)(M * K) * sizeof(__half)) : 0;
    b += (size_t)w4a16_mma_splits((int)N, (int)K, sms) * (size_t)(M * N) * sizeof(float);
    *bytes = b;
    return QB_OK;
}

extern "C" qb_status qb_w4a16_gemm_cuda(const uint16_t *x, uint16_t *y, const uint8_t *packed,
                                        const uint16_t *scales, const int32_t *perm, int64_t M,
                                        int64_t N, int64_t K, int64_t group_size,
                                        void *workspace, size_t workspace_bytes, int kernel,
                                        void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const __half *xin = reinterpret_cast<const __half *>(x);
    char *ws = static_cast<char *>(workspace);
    size_t ws_left = ws ? workspace_bytes : 0;
    qb_status st;
    int sms = 0;

    g_err[0] = '\0';
    if (!x || !y || !packed || !scales)
        return fail(QB_E_INVALID, "qb_w4a16_gemm_cuda: NULL pointer argument");
    if (kernel != QB_W4A16_CUDA_AUTO && kernel != QB_W4A16_CUDA_GEMV && kernel != QB_W4A16_CUDA_MMA)
        return fail(QB_E_INVALID, "qb_w4a16_gemm_cuda: unknown kernel %d", kernel);
    if ((st = check_sizes(M, N, K, group_size)) != QB_OK)
        return st;
    if (ws && ((uintptr_t)ws & 15))
        return fail(QB_E_INVALID, "qb_w4a16_gemm_cuda: workspace not 16-byte aligned");
    if (((uintptr_t)scales & 1) || ((uintptr_t)x & 1) || ((uintptr_t)y & 1))
        return fail(QB_E_INVALID, "qb_w4a16_gemm_cuda: fp16 arrays not 2-byte aligned");

    if (perm) {
        const size_t need = align16((size_t)(M * K) * sizeof(__half));
        if (ws_left < need)
            return fail(QB_E_INVALID,
                        "qb_w4a16_gemm_cuda: a perm needs %zu bytes of workspace, got %zu", need,
                        ws_left);
        __half *xp = reinterpret_cast<__half *>(ws);
        const size_t total = (size_t)(M * K);
        const unsigned blocks = (unsigned)((total + 255) / 256 < 4096 ? (total + 255) / 256 : 4096);
        w4a16_gather<<<blocks, 256, 0, s>>>(xin, perm, xp, (int)M, (int)K);
        CUDA_TRY(cudaGetLastError());
        xin = xp;
        ws += need;
        ws_left -= need;
    }

    const bool eligible = mma_eligible(xin, packed, K, group_size);
    if (kernel == QB_W4A16_CUDA_MMA && !eligible)
        return fail(QB_E_UNSUPPORTED,
                    "qb_w4a16_gemm_cuda: the mma kernel needs K %% 32 == 0 (K = %lld), "
                    "group_size %% 32 == 0 (%lld) and 16-byte aligned x and packed",
                    (long long)K, (long long)group_size);
    if (kernel == QB_W4A16_CUDA_GEMV || !eligible) {
        CUDA_TRY(w4a16_launch_gemv(xin, reinterpret_cast<__half *>(y), packed,
                                   reinterpret_cast<const __half *>(scales), (int)M, (int)N,
                                   (int)K, (int)group_size, s));
        return QB_OK;
    }
    if ((st = device_sms(&sms)) != QB_OK)
        return st;
    int splits = w4a16_mma_splits((int)N, (int)K, sms);
    /* Without room for the partial sums, run unsplit: slower, same result
     * up to fp32 summation order. */
    if (splits > 1 && ws_left < (size_t)splits * (size_t)(M * N) * sizeof(float))
        splits = 1;
    CUDA_TRY(w4a16_launch_mma(xin, reinterpret_cast<__half *>(y), packed,
                              reinterpret_cast<const __half *>(scales), (int)M, (int)N, (int)K,
                              (int)group_size, splits, reinterpret_cast<float *>(ws), s));
    return QB_OK;
}

extern "C" const char *qb_w4a16_cuda_error(void)
{
    return g_err;
}
