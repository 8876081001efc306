/*
 * qb_w4a16_cuda_session_*: products whose operands are in host memory (the
 * forward pass's linears, `quantbridge forward --device cuda`) run through
 * qb_w4a16_gemm_cuda. The session owns a stream and one device buffer per
 * operand, grown to the largest product seen and reused, so device memory
 * follows the largest linear, not the model (the forward pass streams its
 * weights layer by layer: docs/forward.md).
 */
#include <quantbridge/qb_w4a16_cuda.h>

#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace {

enum { B_X, B_Y, B_PACKED, B_SCALES, B_PERM, B_WS, B_COUNT };

const char *const k_buf_names[B_COUNT] = {"x", "y", "packed weights", "scales", "perm",
                                          "workspace"};

} // namespace

struct qb_w4a16_cuda_session {
    int device;
    cudaStream_t stream;
    void *buf[B_COUNT];
    size_t cap[B_COUNT];
    char name[320]; /* cudaDeviceProp.name (256) and the sm_ suffix */
    char err[512];
};

namespace {

qb_status sfail(qb_w4a16_cuda_session *s, qb_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
qb_status sfail(qb_w4a16_cuda_session *s, qb_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof(s->err), fmt, ap);
    va_end(ap);
    return code;
}

/* A CUDA error of this session's own call `what`: out of memory is
 * QB_E_NOMEM (the caller may free and retry), the rest QB_E_INTERNAL. The
 * error is consumed when it is not sticky. */
qb_status cuda_fail(qb_w4a16_cuda_session *s, const char *what, cudaError_t e)
{
    (void)cudaGetLastError();
    return sfail(s, e == cudaErrorMemoryAllocation ? QB_E_NOMEM : QB_E_INTERNAL,
                 "CUDA device %d: %s: %s (%s)", s->device, what, cudaGetErrorString(e),
                 cudaGetErrorName(e));
}

/* Makes buffer b hold at least `bytes` (old contents dropped). */
qb_status reserve(qb_w4a16_cuda_session *s, int b, size_t bytes)
{
    cudaError_t e;
    char what[96];
    if (bytes <= s->cap[b])
        return QB_OK;
    if (s->buf[b]) {
        /* the stream is idle here: every call ends synchronised */
        (void)cudaFree(s->buf[b]);
        s->buf[b] = NULL;
        s->cap[b] = 0;
    }
    e = cudaMalloc(&s->buf[b], bytes);
    if (e != cudaSuccess) {
        s->buf[b] = NULL;
        snprintf(what, sizeof(what), "allocating %zu bytes for the %s", bytes, k_buf_names[b]);
        return cuda_fail(s, what, e);
    }
    s->cap[b] = bytes;
    return QB_OK;
}

qb_status upload(qb_w4a16_cuda_session *s, int b, const void *src, size_t bytes)
{
    qb_status st = reserve(s, b, bytes);
    cudaError_t e;
    char what[96];
    if (st != QB_OK)
        return st;
    e = cudaMemcpyAsync(s->buf[b], src, bytes, cudaMemcpyHostToDevice, s->stream);
    if (e != cudaSuccess) {
        snprintf(what, sizeof(what), "copying the %s to the device", k_buf_names[b]);
        return cuda_fail(s, what, e);
    }
    return QB_OK;
}

void copy_err(char *err, size_t err_len, const char *msg)
{
    if (err && err_len > 0)
        snprintf(err, err_len, "%s", msg);
}

} // namespace

extern "C" qb_status qb_w4a16_cuda_session_open(int device, qb_w4a16_cuda_session **out,
                                                char *err, size_t err_len)
{
    qb_w4a16_cuda_session *s;
    cudaDeviceProp prop;
    cudaError_t e;
    int n = 0;
    qb_status st;

    if (!out) {
        copy_err(err, err_len, "qb_w4a16_cuda_session_open: out is NULL");
        return QB_E_INVALID;
    }
    *out = NULL;
    s = static_cast<qb_w4a16_cuda_session *>(calloc(1, sizeof(*s)));
    if (!s) {
        copy_err(err, err_len, "qb_w4a16_cuda_session_open: out of memory");
        return QB_E_NOMEM;
    }
    s->device = device;
    e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        /* no GPU, no driver, or a driver older than the runtime: all mean
         * that nothing can run here */
        (void)cudaGetLastError();
        st = sfail(s, QB_E_UNSUPPORTED, "no CUDA device (%s)",
                   e != cudaSuccess ? cudaGetErrorString(e) : "the runtime counts 0 devices");
        goto fail;
    }
    if (device < 0 || device >= n) {
        st = sfail(s, QB_E_INVALID, "CUDA device %d does not exist (%d device%s)", device, n,
                   n == 1 ? "" : "s");
        goto fail;
    }
    if ((e = cudaSetDevice(device)) != cudaSuccess) {
        st = cuda_fail(s, "selecting the device", e);
        goto fail;
    }
    if ((e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) {
        st = cuda_fail(s, "reading the device properties", e);
        goto fail;
    }
    snprintf(s->name, sizeof(s->name), "%s, sm_%d%d", prop.name, prop.major, prop.minor);
    if ((e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        st = cuda_fail(s, "creating a stream", e);
        goto fail;
    }
    *out = s;
    return QB_OK;
fail:
    copy_err(err, err_len, s->err);
    qb_w4a16_cuda_session_close(s);
    return st;
}

extern "C" void qb_w4a16_cuda_session_close(qb_w4a16_cuda_session *s)
{
    int b;
    if (!s)
        return;
    if (s->stream) { /* buffers exist only once the stream does */
        (void)cudaSetDevice(s->device);
        (void)cudaStreamSynchronize(s->stream);
    }
    for (b = 0; b < B_COUNT; b++)
        if (s->buf[b])
            (void)cudaFree(s->buf[b]);
    if (s->stream)
        (void)cudaStreamDestroy(s->stream);
    free(s);
}

extern "C" qb_status qb_w4a16_cuda_session_gemm(qb_w4a16_cuda_session *s, const uint16_t *x,
                                                uint16_t *y, const uint8_t *packed,
                                                const uint16_t *scales, const int32_t *perm,
                                                int64_t M, int64_t N, int64_t K,
                                                int64_t group_size)
{
    size_t ws = 0, n_groups, x_bytes, y_bytes;
    cudaError_t e;
    qb_status st;

    if (!s)
        return QB_E_INVALID;
    s->err[0] = '\0';
    if (!x || !y || !packed || !scales)
        return sfail(s, QB_E_INVALID, "qb_w4a16_cuda_session_gemm: a NULL operand");
    if ((e = cudaSetDevice(s->device)) != cudaSuccess)
        return cuda_fail(s, "selecting the device", e);
    /* Validates M, N, K, group_size (its limits keep the sizes below in
     * size_t) and sizes the workspace. */
    if ((st = qb_w4a16_cuda_workspace_bytes(M, N, K, group_size, perm != NULL, &ws)) != QB_OK)
        return sfail(s, st, "%s", qb_w4a16_cuda_error());
    if (group_size > K)
        group_size = K;
    n_groups = (size_t)((K + group_size - 1) / group_size);
    x_bytes = (size_t)M * (size_t)K * 2;
    y_bytes = (size_t)M * (size_t)N * 2;
    if ((st = upload(s, B_X, x, x_bytes)) != QB_OK ||
        (st = upload(s, B_PACKED, packed, (size_t)N * (size_t)((K + 1) / 2))) != QB_OK ||
        (st = upload(s, B_SCALES, scales, (size_t)N * n_groups * 2)) != QB_OK ||
        (perm && (st = upload(s, B_PERM, perm, (size_t)K * 4)) != QB_OK) ||
        (st = reserve(s, B_Y, y_bytes)) != QB_OK ||
        (ws && (st = reserve(s, B_WS, ws)) != QB_OK))
        goto sync;
    st = qb_w4a16_gemm_cuda(static_cast<const uint16_t *>(s->buf[B_X]),
                            static_cast<uint16_t *>(s->buf[B_Y]),
                            static_cast<const uint8_t *>(s->buf[B_PACKED]),
                            static_cast<const uint16_t *>(s->buf[B_SCALES]),
                            perm ? static_cast<const int32_t *>(s->buf[B_PERM]) : NULL, M, N, K,
                            group_size, ws ? s->buf[B_WS] : NULL, ws, QB_W4A16_CUDA_AUTO,
                            s->stream);
    if (st != QB_OK) {
        sfail(s, st, "%s", qb_w4a16_cuda_error());
        goto sync;
    }
    if ((e = cudaMemcpyAsync(y, s->buf[B_Y], y_bytes, cudaMemcpyDeviceToHost, s->stream)) !=
        cudaSuccess) {
        st = cuda_fail(s, "copying y to the host", e);
        goto sync;
    }
sync:
    /* Always synchronised on return: the host buffers the copies read may
     * be freed by the caller, and the kernels' own errors surface here. */
    e = cudaStreamSynchronize(s->stream);
    if (e != cudaSuccess && st == QB_OK)
        st = cuda_fail(s, "running the product", e);
    return st;
}

extern "C" const char *qb_w4a16_cuda_session_device(const qb_w4a16_cuda_session *s)
{
    return s ? s->name : "";
}

extern "C" const char *qb_w4a16_cuda_session_error(const qb_w4a16_cuda_session *s)
{
    return s ? s->err : "";
}
