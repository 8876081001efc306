/*
 * libquantbridge-w4a16 / libquantbridge-w4a16-cuda — what both W4A16 linear
 * backends (qb_linear_backend.h) do alike: recognise a model of the format
 * (its reader's source_format), open it with the loader, find one packed
 * linear, its fp16 input, its bias and its byte count
 * (w4a16_backend_internal.h). Linked into both libraries, hidden.
 */
#include <quantbridge/qb_half.h>

#include <stdlib.h>
#include <string.h>

#include "w4a16_backend_internal.h"

int w4a16_backend_is_mine(const qb_model_src *src)
{
    const char *f = src->info ? src->info->source_format : NULL;
    return f && strcmp(f, W4A16_BACKEND_FORMAT) == 0;
}

qb_status w4a16_backend_model(w4a16_backend *b, const qb_host *h, const qb_model_src *src,
                              unsigned flags, int *mine)
{
    char err[1024];
    qb_status rc;

    memset(b, 0, sizeof *b);
    b->h = h;
    b->path = src->source_path;
    *mine = w4a16_backend_is_mine(src);
    if (!*mine) {
        if (flags & QB_LINEAR_BACKEND_REQUIRED)
            return h->set_error(h, QB_E_UNSUPPORTED,
                                "%s is not a W4A16 directory (read by %s): "
                                "only packed W4A16 linears run on the GPU",
                                src->source_path,
                                src->info && src->info->source_format ? src->info->source_format
                                                                      : "?");
        return QB_OK;
    }
    rc = qb_w4a16_open(src->source_path, 0, &b->model, err, sizeof err);
    if (rc)
        return h->set_error(h, rc, "%s", err);
    return QB_OK;
}

qb_status w4a16_backend_find(w4a16_backend *b, int64_t layer, const char *path, int64_t K,
                             int64_t N, qb_w4a16_linear *q)
{
    const qb_host *h = b->h;
    qb_status rc = qb_w4a16_linear_get(b->model, layer, path, K, q);
    if (rc == QB_E_NOT_FOUND)
        return rc; /* an F16 head or a dense router: served as dense rows */
    if (rc)
        return h->set_error(h, rc, "%s: %s", b->path, qb_w4a16_error(b->model));
    if (q->n != N)
        return h->set_error(h, QB_E_MISMATCH,
                            "%s: layer %lld %s has %lld output rows, expected "
                            "%lld",
                            b->path, (long long)layer, path, (long long)q->n, (long long)N);
    return QB_OK;
}

uint64_t w4a16_backend_bytes(const qb_w4a16_linear *q)
{
    return (uint64_t)q->n *
           (uint64_t)((q->k + 1) / 2 + 2 * ((q->k + q->group_size - 1) / q->group_size));
}

uint16_t *w4a16_backend_x16(const qb_host *h, const float *x, int64_t M, int64_t K)
{
    uint16_t *xh = h->alloc(h, (size_t)M * (size_t)K * sizeof *xh);
    int64_t i;
    if (!xh) {
        h->set_error(h, QB_E_NOMEM, "W4A16 linear: out of memory for its fp16 input");
        return NULL;
    }
    for (i = 0; i < M * K; i++)
        xh[i] = qb_f32_to_f16(x[i]);
    return xh;
}

void w4a16_backend_bias(const qb_w4a16_linear *q, float *y, int64_t M, int64_t N)
{
    int64_t i;
    if (q->bias)
        for (i = 0; i < M * N; i++)
            y[i] += qb_f16_to_f32(q->bias[i % N]);
}

qb_status w4a16_backend_new(const qb_host *h, const qb_model_src *src, unsigned flags, size_t size,
                            w4a16_backend_base **out)
{
    w4a16_backend_base *b;
    qb_status rc;
    int mine;

    *out = NULL;
    b = calloc(1, size);
    if (!b)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
    rc = w4a16_backend_model(&b->m, h, src, flags, &mine);
    if (rc || !mine) {
        free(b);
        return rc;
    }
    b->pub.struct_size = sizeof b->pub;
    b->pub.bytes_what = "packed + scales";
    *out = b;
    return QB_OK;
}

void w4a16_backend_free(w4a16_backend_base *b)
{
    if (!b)
        return;
    qb_w4a16_close(b->m.model);
    free(b);
}
