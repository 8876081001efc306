/*
 * quantbridge model library — the weights of one model.
 *
 * Every weight comes through the model source (qb_model_src, as a writer
 * sees a model): dense float32 rows from its reader, one row block per
 * item of the host's pool, so memory stays a block per thread whatever
 * the model size. A linear backend the caller opened over the model
 * (qb_linear_backend.h: the W4A16 format's, on the CPU or a GPU) is asked
 * for each linear first and runs those it holds from the model's own
 * stored form; this library names no format and links no kernel library.
 */
#include "fwd.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Floats of one weight row block (1 MiB). */
#define FWD_BLOCK_ELEMS ((int64_t)1 << 18)

void qbh_fwd_weights_init(qbh_fwd_weights *w, const qbh_fwd_model *m)
{
    assert(m && m->host && m->src && !(m->filter && m->linears));
    assert(!m->filter || m->filter->fn);
    memset(w, 0, sizeof *w);
    w->h = m->host;
    w->src = m->src;
    w->path = m->src->source_path;
    w->filter = m->filter;
    w->observe = m->observe;
    w->lb = m->linears;
}

const qb_tensor_info *qbh_fwd_tensor(const qbh_fwd_weights *w, size_t idx)
{
    const qb_tensor_info *ti = NULL;
    /* idx comes from find: in range, so the source answers it */
    if (w->src->tensor_info(w->src->handle, idx, &ti) != QB_OK)
        return NULL;
    return ti;
}

qb_status qbh_fwd_find(const qbh_fwd_weights *w, const char *name, size_t *idx)
{
    if (w->src->find(w->src->handle, name, idx) == QB_OK)
        return QB_OK;
    return w->h->set_error(w->h, QB_E_NOT_FOUND, "forward: %s: tensor %s is missing", w->path,
                           name);
}

int qbh_fwd_has(const qbh_fwd_weights *w, const char *name, size_t *idx)
{
    /* absence is an answer here; the source's message is left for the
     * next call to replace */
    return w->src->find(w->src->handle, name, idx) == QB_OK;
}

qb_status qbh_fwd_read_rows(qbh_fwd_weights *w, const char *as, size_t idx, int64_t row0,
                            int64_t n, float *out)
{
    const qb_tensor_info *ti;
    qb_status rc = w->src->read_rows(w->src->handle, idx, row0, n, out);
    if (rc || !w->filter)
        return rc;
    ti = qbh_fwd_tensor(w, idx);
    return w->filter->fn(w->filter->ctx, as ? as : ti->name, ti, row0, n, out);
}

qb_status qbh_fwd_vector(qbh_fwd_weights *w, const char *name, float *out, int64_t n)
{
    size_t idx;
    const qb_tensor_info *ti;
    qb_status rc = qbh_fwd_find(w, name, &idx);
    if (rc)
        return rc;
    ti = qbh_fwd_tensor(w, idx);
    if (ti->n_dims != 1 || ti->dims[0] != n)
        return w->h->set_error(w->h, QB_E_MISMATCH,
                               "forward: %s: %s has %u dim(s) [%lld...], "
                               "expected [%lld]",
                               w->path, name, ti->n_dims, (long long)ti->dims[0], (long long)n);
    return qbh_fwd_read_rows(w, NULL, idx, 0, 1, out);
}

qb_status qbh_fwd_embed(qbh_fwd_weights *w, const int64_t *tokens, size_t n, int64_t hidden,
                        float *out)
{
    static const char *const name = "model.embed_tokens.weight";
    size_t idx, i;
    const qb_tensor_info *ti;
    qb_status rc = qbh_fwd_find(w, name, &idx);
    if (rc)
        return rc;
    ti = qbh_fwd_tensor(w, idx);
    if (ti->n_dims != 2 || ti->dims[1] != hidden)
        return w->h->set_error(w->h, QB_E_MISMATCH, "forward: %s: %s is not [vocab, %lld]", w->path,
                               name, (long long)hidden);
    for (i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= ti->dims[0])
            return w->h->set_error(w->h, QB_E_RANGE,
                                   "forward: token id %lld outside the "
                                   "vocabulary [0, %lld) of %s",
                                   (long long)tokens[i], (long long)ti->dims[0], w->path);
        rc = qbh_fwd_read_rows(w, NULL, idx, tokens[i], 1, out + i * hidden);
        if (rc)
            return rc;
    }
    return QB_OK;
}

/* One dense linear product split in row blocks of W. */
typedef struct lin_job {
    qbh_fwd_weights *w;
    const char *as;   /* what the weight stands for */
    size_t idx;       /* the weight tensor */
    const double *xd; /* x widened (qbh_fwd_gemm_widen) */
    float *y;
    int64_t M, K, N, rows; /* rows: per block */
} lin_job;

static qb_status dense_block(void *arg, size_t item)
{
    lin_job *j = arg;
    const qb_host *h = j->w->h;
    int64_t r0 = (int64_t)item * j->rows, n = j->N - r0 < j->rows ? j->N - r0 : j->rows;
    float *wb = h->alloc(h, (size_t)n * (size_t)j->K * sizeof *wb);
    qb_status rc;
    if (!wb)
        return h->set_error(h, QB_E_NOMEM, "forward: out of memory for a weight block of %s",
                            qbh_fwd_tensor(j->w, j->idx)->name);
    rc = qbh_fwd_read_rows(j->w, j->as, j->idx, r0, n, wb);
    if (rc == QB_OK)
        qbh_fwd_gemm(j->xd, j->M, j->K, wb, n, j->y + r0, j->N);
    h->free(h, wb);
    return rc;
}

static int64_t block_rows(const qb_host *h, int64_t N, int64_t K)
{
    int64_t rows = FWD_BLOCK_ELEMS / K, want = (int64_t)h->thread_count(h) * 4;
    if (rows < 1)
        rows = 1;
    /* Enough blocks to keep every thread busy on small matrices. */
    if (want > 1 && N / want < rows)
        rows = N / want > 0 ? N / want : 1;
    return rows > N ? N : rows;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static qb_status linear(qbh_fwd_weights *w, int64_t layer, const char *path, const float *x,
                        int64_t M, int64_t K, float *y, int64_t N);

qb_status qbh_fwd_linear(qbh_fwd_weights *w, int64_t layer, const char *path, const float *x,
                         int64_t M, int64_t K, float *y, int64_t N)
{
    double t0 = now_s(), dt;
    uint64_t n_be = w->lin_backend, b0 = w->lin_bytes;
    qb_status rc = linear(w, layer, path, x, M, K, y, N);
    dt = now_s() - t0;
    w->lin_seconds += dt;
    if (w->lin_backend != n_be) {
        w->be_seconds += dt;
        w->be_bytes += w->lin_bytes - b0;
    }
    return rc;
}

static qb_status linear(qbh_fwd_weights *w, int64_t layer, const char *path, const float *x,
                        int64_t M, int64_t K, float *y, int64_t N)
{
    const qb_host *h = w->h;
    char name[256], bias[256];
    size_t idx, bidx;
    const qb_tensor_info *ti;
    lin_job j;
    float *b = NULL;
    double *xd = NULL;
    int64_t i;
    qb_status rc;

    if (w->lb) {
        uint64_t bytes = 0;
        rc = w->lb->linear(w->lb, layer, path, x, M, K, y, N, &bytes);
        if (rc != QB_E_NOT_FOUND) {
            w->lin_backend++;
            w->lin_bytes += bytes;
            return rc;
        }
    }
    memset(&j, 0, sizeof j);
    j.w = w;
    j.y = y;
    j.M = M;
    j.K = K;
    j.N = N;
    if (layer >= 0) {
        snprintf(name, sizeof name, "model.layers.%lld.%s.weight", (long long)layer, path);
        snprintf(bias, sizeof bias, "model.layers.%lld.%s.bias", (long long)layer, path);
    } else {
        snprintf(name, sizeof name, "%s.weight", path);
        snprintf(bias, sizeof bias, "%s.bias", path);
    }
    /* A tied head is the embedding matrix (the reader serves no lm_head);
     * an untied model without one is an error, never the embedding. */
    if (layer < 0 && strcmp(path, "lm_head") == 0 && !qbh_fwd_has(w, name, &idx)) {
        if (!w->tied)
            return h->set_error(h, QB_E_NOT_FOUND,
                                "forward: %s: tensor lm_head.weight is "
                                "missing and config.json does not say tie_word_embeddings: true",
                                w->path);
        snprintf(name, sizeof name, "model.embed_tokens.weight");
        j.as = "lm_head.weight";
    }
    rc = qbh_fwd_find(w, name, &idx);
    if (rc)
        return rc;
    ti = qbh_fwd_tensor(w, idx);
    if (ti->n_dims != 2 || ti->dims[0] != N || ti->dims[1] != K)
        return h->set_error(h, QB_E_MISMATCH, "forward: %s: %s is not [%lld, %lld]", w->path, name,
                            (long long)N, (long long)K);
    if (w->observe && (rc = w->observe->fn(w->observe->ctx, j.as ? j.as : ti->name, ti, idx, x, M,
                                           K)))
        return rc;
    /* x widened once for every block (gemm.c) */
    xd = h->alloc(h, (size_t)M * (size_t)qbh_fwd_gemm_kp(K) * sizeof *xd);
    if (!xd)
        return h->set_error(h, QB_E_NOMEM, "forward: out of memory for the input of %s", name);
    qbh_fwd_gemm_widen(x, M, K, xd);
    j.xd = xd;
    j.idx = idx;
    j.rows = block_rows(h, N, K);
    w->lin_bytes += (uint64_t)N * (uint64_t)K * sizeof(float);
    rc = h->parallel_for(h, (size_t)((N + j.rows - 1) / j.rows), dense_block, &j);
    h->free(h, xd);
    if (rc || !qbh_fwd_has(w, bias, &bidx))
        return rc;
    b = h->alloc(h, (size_t)N * sizeof *b);
    if (!b)
        return h->set_error(h, QB_E_NOMEM, "forward: out of memory");
    rc = qbh_fwd_vector(w, bias, b, N);
    if (rc == QB_OK)
        for (i = 0; i < M * N; i++)
            y[i] += b[i % N];
    h->free(h, b);
    return rc;
}
