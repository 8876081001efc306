/*
 * libquantbridge-w4a16-cuda — the W4A16 format's linear backend on a GPU
 * (qb_linear_backend.h, qb_w4a16_cuda.h): the packed linears of a model of
 * the format run whole through a session on CUDA device 0
 * (qb_w4a16_cuda_session_gemm: fp16 x, fp32 accumulation per group, fp16
 * y, the CPU GEMM's contract in another summation order: docs/forward.md,
 * "On a GPU"). Plain C: the session API hides every CUDA type.
 */
#include <quantbridge/qb_half.h>
#include <quantbridge/qb_w4a16_cuda.h>

#include <string.h>

#include "w4a16_backend_internal.h"

typedef struct cuda_backend {
    w4a16_backend_base base; /* first: the interface and the model */
    qb_w4a16_cuda_session *s;
} cuda_backend;

static qb_status cuda_linear(qb_linear_backend *pub, int64_t layer, const char *path,
                             const float *x, int64_t M, int64_t K, float *y, int64_t N,
                             uint64_t *bytes)
{
    cuda_backend *b = (cuda_backend *)pub;
    const qb_host *h = b->base.m.h;
    qb_w4a16_linear q;
    uint16_t *xh = NULL, *yh = NULL;
    int64_t i;
    qb_status rc = w4a16_backend_find(&b->base.m, layer, path, K, N, &q);
    if (rc)
        return rc;
    xh = w4a16_backend_x16(h, x, M, K);
    yh = h->alloc(h, (size_t)M * (size_t)N * sizeof *yh);
    if (!xh || !yh) {
        rc = h->set_error(h, QB_E_NOMEM, "W4A16 linear: out of memory for its output");
        goto out;
    }
    *bytes = w4a16_backend_bytes(&q);
    rc = qb_w4a16_cuda_session_gemm(b->s, xh, yh, q.packed, q.scales, q.perm, M, q.n, q.k,
                                    q.group_size);
    if (rc) {
        rc = h->set_error(h, rc, "%s: layer %lld %s on the GPU: %s", b->base.m.path,
                          (long long)layer, path, qb_w4a16_cuda_session_error(b->s));
        goto out;
    }
    for (i = 0; i < M * N; i++)
        y[i] = qb_f16_to_f32(yh[i]);
    w4a16_backend_bias(&q, y, M, N);
out:
    h->free(h, xh);
    h->free(h, yh);
    return rc;
}

static void cuda_close(qb_linear_backend *pub)
{
    cuda_backend *b = (cuda_backend *)pub;
    if (!b)
        return;
    qb_w4a16_cuda_session_close(b->s);
    w4a16_backend_free(&b->base);
}

qb_status qb_w4a16_cuda_backend_open(const qb_host *h, const qb_model_src *src, unsigned flags,
                                     qb_linear_backend **out)
{
    w4a16_backend_base *base;
    cuda_backend *b;
    char err[512];
    qb_status rc = w4a16_backend_new(h, src, flags, sizeof *b, &base);

    *out = NULL;
    if (rc || !base)
        return rc;
    b = (cuda_backend *)base;
    rc = qb_w4a16_cuda_session_open(0, &b->s, err, sizeof err);
    if (rc) {
        rc = h->set_error(h, rc, "%s", err);
        cuda_close(&base->pub);
        return rc;
    }
    h->log(h, QB_LOG_INFO, "W4A16 linears on CUDA device 0 (%s)",
           qb_w4a16_cuda_session_device(b->s));
    base->pub.name = "W4A16 linears (qb_w4a16_cuda_session_gemm)";
    base->pub.linear = cuda_linear;
    base->pub.close = cuda_close;
    *out = &base->pub;
    return QB_OK;
}
