/*
 * quantbridge host — forward pass: the weights of one open model.
 *
 * Dense models are read through their reader's dense float32 rows (the
 * path verify uses), one row block per pool item, so memory stays a block
 * per thread whatever the model size. A directory read by the sm86-w4a16
 * reader runs its packed linears through libquantbridge-w4a16
 * (qb_w4a16_gemm_cpu on the mapped codes and scales), so the format's CPU
 * kernel runs end to end; its norms and embedding still come through the
 * reader (F16 in the format: docs/w4a16-format.md, "Directory"). With
 * `--device cuda` those packed linears run on the GPU instead, through a
 * session of libquantbridge-w4a16-cuda (linked only in a CUDA build).
 */
#include "model.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <quantbridge/qb_half.h>
#include <quantbridge/qb_w4a16.h>
#ifdef QBH_HAVE_CUDA_FWD
/* Pure C99 (the stream is a void *): the host sees no CUDA header. */
#include <quantbridge/qb_w4a16_cuda.h>
#endif

/* Floats of one weight row block (1 MiB). */
#define FWD_BLOCK_ELEMS ((int64_t)1 << 18)

static qbh_fwd_device g_device = QBH_FWD_CPU;

void qbh_fwd_set_device(qbh_fwd_device d)
{
    g_device = d;
}

/* Opens the CUDA session of the W4A16 linears (*out NULL on failure). */
static qb_status cuda_open(struct qb_w4a16_cuda_session **out)
{
    *out = NULL;
#ifdef QBH_HAVE_CUDA_FWD
    {
        char err[512];
        qb_status rc = qb_w4a16_cuda_session_open(0, out, err, sizeof err);
        if (rc)
            return qbh_error_set(rc, "--device cuda: %s", err);
        qbh_log(QB_LOG_INFO, "forward", "W4A16 linears on CUDA device 0 (%s)",
                qb_w4a16_cuda_session_device(*out));
        return QB_OK;
    }
#else
    return qbh_error_set(QB_E_UNSUPPORTED, "--device cuda: this build has no CUDA (configure "
                         "with the CUDA toolkit and -DQB_ENABLE_CUDA=ON)");
#endif
}

static void cuda_close(struct qb_w4a16_cuda_session *c)
{
#ifdef QBH_HAVE_CUDA_FWD
    qb_w4a16_cuda_session_close(c);
#else
    (void)c;
#endif
}

qb_status qbh_fwd_device_check(qbh_fwd_device d)
{
    struct qb_w4a16_cuda_session *c;
    qb_status rc;
    if (d == QBH_FWD_CPU)
        return QB_OK;
    rc = cuda_open(&c);
    cuda_close(c);
    return rc;
}

qb_status qbh_fwd_weights_open_filtered(qbh_source *s, const qbh_fwd_filter *filter,
                                        qbh_fwd_weights *w)
{
    assert(filter && filter->fn);
    memset(w, 0, sizeof *w);
    w->src = s;
    w->filter = filter;
    return QB_OK;
}

qb_status qbh_fwd_weights_open(qbh_source *s, qbh_fwd_weights *w)
{
    char err[1024];
    qb_status rc;

    memset(w, 0, sizeof *w);
    w->src = s;
    if (!s->info.source_format || strcmp(s->info.source_format, "sm86-w4a16") != 0) {
        if (g_device == QBH_FWD_CUDA)
            return qbh_error_set(QB_E_UNSUPPORTED, "--device cuda: %s is not a W4A16 directory "
                                 "(read by %s): only packed W4A16 linears run on the GPU; use "
                                 "--device cpu", s->path,
                                 s->info.source_format ? s->info.source_format : "?");
        return QB_OK;
    }
    rc = qb_w4a16_open(s->path, 0, &w->w4, err, sizeof err);
    if (rc)
        return qbh_error_set(rc, "forward: %s", err);
    if (g_device == QBH_FWD_CUDA && (rc = cuda_open(&w->cuda))) {
        qbh_fwd_weights_close(w);
        return rc;
    }
    return QB_OK;
}

void qbh_fwd_weights_close(qbh_fwd_weights *w)
{
    cuda_close(w->cuda);
    w->cuda = NULL;
    qb_w4a16_close(w->w4);
    w->w4 = NULL;
}

/* Index of `name` in the source, QB_E_NOT_FOUND naming it when absent. */
static qb_status find_tensor(qbh_source *s, const char *name, size_t *idx)
{
    if (s->src.find(s->src.handle, name, idx) == QB_OK)
        return QB_OK;
    return qbh_error_set(QB_E_NOT_FOUND, "forward: %s: tensor %s is missing", s->path, name);
}

static int has_tensor(qbh_source *s, const char *name, size_t *idx)
{
    if (s->src.find(s->src.handle, name, idx) == QB_OK)
        return 1;
    qbh_error_clear();
    return 0;
}

qb_status qbh_fwd_read_rows(qbh_fwd_weights *w, const char *as, size_t idx, int64_t row0,
                            int64_t n, float *out)
{
    const qb_tensor_info *ti = &w->src->tensors[idx];
    qb_status rc = w->src->src.read_rows(w->src->src.handle, idx, row0, n, out);
    if (rc || !w->filter)
        return rc;
    return w->filter->fn(w->filter->ctx, as ? as : ti->name, ti, row0, n, out);
}

qb_status qbh_fwd_vector(qbh_fwd_weights *w, const char *name, float *out, int64_t n)
{
    size_t idx;
    const qb_tensor_info *ti;
    qb_status rc = find_tensor(w->src, name, &idx);
    if (rc)
        return rc;
    ti = &w->src->tensors[idx];
    if (ti->n_dims != 1 || ti->dims[0] != n)
        return qbh_error_set(QB_E_MISMATCH, "forward: %s: %s has %u dim(s) [%lld...], expected [%lld]",
                             w->src->path, name, ti->n_dims, (long long)ti->dims[0],
                             (long long)n);
    return qbh_fwd_read_rows(w, NULL, idx, 0, 1, out);
}

qb_status qbh_fwd_embed(qbh_fwd_weights *w, const int64_t *tokens, size_t n, int64_t hidden,
                        float *out)
{
    static const char *const name = "model.embed_tokens.weight";
    size_t idx, i;
    const qb_tensor_info *ti;
    qb_status rc = find_tensor(w->src, name, &idx);
    if (rc)
        return rc;
    ti = &w->src->tensors[idx];
    if (ti->n_dims != 2 || ti->dims[1] != hidden)
        return qbh_error_set(QB_E_MISMATCH, "forward: %s: %s is not [vocab, %lld]", w->src->path,
                             name, (long long)hidden);
    for (i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= ti->dims[0])
            return qbh_error_set(QB_E_RANGE, "forward: token id %lld outside the vocabulary "
                                 "[0, %lld) of %s", (long long)tokens[i],
                                 (long long)ti->dims[0], w->src->path);
        rc = qbh_fwd_read_rows(w, NULL, idx, tokens[i], 1, out + i * hidden);
        if (rc)
            return rc;
    }
    return QB_OK;
}

/* One linear product split in row blocks of W. */
typedef struct lin_job {
    qbh_fwd_weights *w;
    const char *as;             /* dense: what the weight stands for */
    size_t idx;                 /* dense: the weight tensor */
    const double *xd;           /* dense: x widened (qbh_fwd_gemm_widen) */
    const qb_w4a16_linear *q;   /* W4A16: the packed linear */
    const uint16_t *xh;         /* W4A16: x in fp16 */
    const float *x;
    float *y;
    int64_t M, K, N, rows;      /* rows: per block */
} lin_job;

static qb_status dense_block(void *arg, size_t item)
{
    lin_job *j = arg;
    int64_t r0 = (int64_t)item * j->rows, n = j->N - r0 < j->rows ? j->N - r0 : j->rows;
    float *wb = qbh_alloc((size_t)n * (size_t)j->K * sizeof *wb);
    qb_status rc;
    if (!wb)
        return qbh_error_set(QB_E_NOMEM, "forward: out of memory for a weight block of %s",
                             j->w->src->tensors[j->idx].name);
    rc = qbh_fwd_read_rows(j->w, j->as, j->idx, r0, n, wb);
    if (rc == QB_OK)
        qbh_fwd_gemm(j->xd, j->M, j->K, wb, n, j->y + r0, j->N);
    qbh_free(wb);
    return rc;
}

static qb_status w4_block(void *arg, size_t item)
{
    lin_job *j = arg;
    const qb_w4a16_linear *q = j->q;
    int64_t r0 = (int64_t)item * j->rows, n = j->N - r0 < j->rows ? j->N - r0 : j->rows, m, r;
    int64_t pk = (q->k + 1) / 2, ng = (q->k + q->group_size - 1) / q->group_size;
    uint16_t *yh = qbh_alloc((size_t)j->M * (size_t)n * sizeof *yh);
    qb_status rc;
    if (!yh)
        return qbh_error_set(QB_E_NOMEM, "forward: out of memory for a W4A16 output block");
    /* Rows are independent, so a block of rows is the same product on the
     * sub-matrix; threads = 1: the host pool does the splitting. */
    rc = qb_w4a16_gemm_cpu(j->xh, yh, q->packed + r0 * pk, q->scales + r0 * ng, q->perm, j->M, n,
                           q->k, q->group_size, 1, QB_W4A16_CPU_AUTO);
    if (rc == QB_OK)
        for (m = 0; m < j->M; m++)
            for (r = 0; r < n; r++)
                j->y[m * j->N + r0 + r] = qb_f16_to_f32(yh[m * n + r]);
    else
        rc = qbh_error_set(rc, "forward: qb_w4a16_gemm_cpu failed (%s)", qbh_status_name(rc));
    qbh_free(yh);
    return rc;
}

static int64_t block_rows(int64_t N, int64_t K)
{
    int64_t rows = FWD_BLOCK_ELEMS / K, want = (int64_t)qbh_pool_threads() * 4;
    if (rows < 1)
        rows = 1;
    /* Enough blocks to keep every thread busy on small matrices. */
    if (want > 1 && N / want < rows)
        rows = N / want > 0 ? N / want : 1;
    return rows > N ? N : rows;
}

/* The whole product of j on the GPU: the same contract as w4_block's
 * (fp16 x, fp32 accumulation per group, fp16 y), another summation order
 * (docs/forward.md, "On a GPU"). */
static qb_status cuda_linear(qbh_fwd_weights *w, int64_t layer, const char *path,
                             const lin_job *j)
{
#ifdef QBH_HAVE_CUDA_FWD
    const qb_w4a16_linear *q = j->q;
    uint16_t *yh = qbh_alloc((size_t)j->M * (size_t)j->N * sizeof *yh);
    qb_status rc;
    int64_t i;
    if (!yh)
        return qbh_error_set(QB_E_NOMEM, "forward: out of memory for a W4A16 output");
    rc = qb_w4a16_cuda_session_gemm(w->cuda, j->xh, yh, q->packed, q->scales, q->perm, j->M, q->n,
                                    q->k, q->group_size);
    if (rc == QB_OK)
        for (i = 0; i < j->M * j->N; i++)
            j->y[i] = qb_f16_to_f32(yh[i]);
    else
        rc = qbh_error_set(rc, "forward: %s: layer %lld %s on the GPU: %s", w->src->path,
                           (long long)layer, path, qb_w4a16_cuda_session_error(w->cuda));
    qbh_free(yh);
    return rc;
#else
    (void)w;
    (void)j;
    return qbh_error_set(QB_E_INTERNAL, "forward: layer %lld %s: no CUDA in this build",
                         (long long)layer, path);
#endif
}

static qb_status w4_linear(qbh_fwd_weights *w, int64_t layer, const char *path, lin_job *j,
                           int *handled)
{
    qb_w4a16_linear q;
    uint16_t *xh = NULL;
    int64_t i;
    qb_status rc;

    *handled = 0;
    rc = qb_w4a16_linear_get(w->w4, layer, path, j->K, &q);
    if (rc == QB_E_NOT_FOUND)
        return QB_OK; /* an F16 head or a dense router: served as dense rows */
    *handled = 1;
    if (rc)
        return qbh_error_set(rc, "forward: %s: %s", w->src->path, qb_w4a16_error(w->w4));
    if (q.n != j->N)
        return qbh_error_set(QB_E_MISMATCH, "forward: %s: layer %lld %s has %lld output rows, "
                             "expected %lld", w->src->path, (long long)layer, path,
                             (long long)q.n, (long long)j->N);
    xh = qbh_alloc((size_t)j->M * (size_t)j->K * sizeof *xh);
    if (!xh)
        return qbh_error_set(QB_E_NOMEM, "forward: out of memory");
    for (i = 0; i < j->M * j->K; i++)
        xh[i] = qb_f32_to_f16(j->x[i]);
    j->q = &q;
    j->xh = xh;
    w->lin_w4++;
    w->lin_bytes += (uint64_t)q.n * (uint64_t)((q.k + 1) / 2 +
                    2 * ((q.k + q.group_size - 1) / q.group_size));
    if (w->cuda)
        rc = cuda_linear(w, layer, path, j);
    else {
        j->rows = block_rows(j->N, j->K);
        rc = qbh_parallel_for((size_t)((j->N + j->rows - 1) / j->rows), w4_block, j);
    }
    if (rc == QB_OK && q.bias)
        for (i = 0; i < j->M * j->N; i++)
            j->y[i] += qb_f16_to_f32(q.bias[i % j->N]);
    qbh_free(xh);
    return rc;
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
    uint64_t n_w4 = w->lin_w4, b0 = w->lin_bytes;
    qb_status rc = linear(w, layer, path, x, M, K, y, N);
    dt = now_s() - t0;
    w->lin_seconds += dt;
    if (w->lin_w4 != n_w4) {
        w->w4_seconds += dt;
        w->w4_bytes += w->lin_bytes - b0;
    }
    return rc;
}

static qb_status linear(qbh_fwd_weights *w, int64_t layer, const char *path, const float *x,
                        int64_t M, int64_t K, float *y, int64_t N)
{
    char name[256], bias[256];
    size_t idx, bidx;
    const qb_tensor_info *ti;
    lin_job j;
    float *b = NULL;
    double *xd = NULL;
    int64_t i;
    qb_status rc;

    memset(&j, 0, sizeof j);
    j.w = w;
    j.x = x;
    j.y = y;
    j.M = M;
    j.K = K;
    j.N = N;
    if (w->w4) {
        int handled;
        rc = w4_linear(w, layer, path, &j, &handled);
        if (rc || handled)
            return rc;
    }
    if (layer >= 0) {
        snprintf(name, sizeof name, "model.layers.%lld.%s.weight", (long long)layer, path);
        snprintf(bias, sizeof bias, "model.layers.%lld.%s.bias", (long long)layer, path);
    } else {
        snprintf(name, sizeof name, "%s.weight", path);
        snprintf(bias, sizeof bias, "%s.bias", path);
    }
    /* A tied head is the embedding matrix (the reader serves no lm_head);
     * an untied model without one is an error, never the embedding. */
    if (layer < 0 && strcmp(path, "lm_head") == 0 && !has_tensor(w->src, name, &idx)) {
        if (!w->tied)
            return qbh_error_set(QB_E_NOT_FOUND, "forward: %s: tensor lm_head.weight is missing "
                                 "and config.json does not say tie_word_embeddings: true",
                                 w->src->path);
        snprintf(name, sizeof name, "model.embed_tokens.weight");
        j.as = "lm_head.weight";
    }
    rc = find_tensor(w->src, name, &idx);
    if (rc)
        return rc;
    ti = &w->src->tensors[idx];
    if (ti->n_dims != 2 || ti->dims[0] != N || ti->dims[1] != K)
        return qbh_error_set(QB_E_MISMATCH, "forward: %s: %s is not [%lld, %lld]", w->src->path,
                             name, (long long)N, (long long)K);
    /* x widened once for every block (forward_gemm.c) */
    xd = qbh_alloc((size_t)M * (size_t)qbh_fwd_gemm_kp(K) * sizeof *xd);
    if (!xd)
        return qbh_error_set(QB_E_NOMEM, "forward: out of memory for the input of %s", name);
    qbh_fwd_gemm_widen(x, M, K, xd);
    j.xd = xd;
    j.idx = idx;
    j.rows = block_rows(N, K);
    w->lin_bytes += (uint64_t)N * (uint64_t)K * sizeof(float);
    rc = qbh_parallel_for((size_t)((N + j.rows - 1) / j.rows), dense_block, &j);
    qbh_free(xd);
    if (rc || !has_tensor(w->src, bias, &bidx))
        return rc;
    b = qbh_alloc((size_t)N * sizeof *b);
    if (!b)
        return qbh_error_set(QB_E_NOMEM, "forward: out of memory");
    rc = qbh_fwd_vector(w, bias, b, N);
    if (rc == QB_OK)
        for (i = 0; i < M * N; i++)
            y[i] += b[i % N];
    qbh_free(b);
    return rc;
}
