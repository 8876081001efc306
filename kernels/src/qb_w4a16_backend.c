/*
 * libquantbridge-w4a16 — the W4A16 format's linear backend on the CPU
 * (qb_linear_backend.h): a model whose reader names the format (its
 * source_format is "sm86-w4a16") is opened with the loader
 * (qb_w4a16_open) and its packed linears run through qb_w4a16_gemm_cpu on
 * the mapped codes and scales, one row block per item of the host's
 * thread pool; every other tensor (norms, embedding, an F16 head, a dense
 * router) stays the model source's to serve as dense rows.
 * What it shares with the CUDA backend lives in w4a16_backend.c.
 */
#include <quantbridge/qb_half.h>
#include <quantbridge/qb_w4a16.h>

#include <string.h>

#include "w4a16_backend_internal.h"

/* Weights of one row block (as many as the dense products' blocks). */
#define W4B_BLOCK_ELEMS ((int64_t)1 << 18)

/* ---- the CPU backend ----------------------------------------------------- */

/* One product split in row blocks of W, one block per pool item. */
typedef struct cpu_job {
    const qb_host *h;
    const qb_w4a16_linear *q;
    const uint16_t *xh; /* x in fp16 */
    float *y;
    int64_t M, N, rows; /* rows: per block */
} cpu_job;

static qb_status cpu_block(void *arg, size_t item)
{
    cpu_job *j = arg;
    const qb_host *h = j->h;
    const qb_w4a16_linear *q = j->q;
    int64_t r0 = (int64_t)item * j->rows, n = j->N - r0 < j->rows ? j->N - r0 : j->rows, m, r;
    int64_t pk = (q->k + 1) / 2, ng = (q->k + q->group_size - 1) / q->group_size;
    uint16_t *yh = h->alloc(h, (size_t)j->M * (size_t)n * sizeof *yh);
    qb_status rc;
    if (!yh)
        return h->set_error(h, QB_E_NOMEM, "W4A16 linear: out of memory for an output block");
    /* Rows are independent, so a block of rows is the same product on the
     * sub-matrix; threads = 1: the host pool does the splitting. */
    rc = qb_w4a16_gemm_cpu(j->xh, yh, q->packed + r0 * pk, q->scales + r0 * ng, q->perm, j->M, n,
                           q->k, q->group_size, 1, QB_W4A16_CPU_AUTO);
    if (rc == QB_OK)
        for (m = 0; m < j->M; m++)
            for (r = 0; r < n; r++)
                j->y[m * j->N + r0 + r] = qb_f16_to_f32(yh[m * n + r]);
    else
        rc = h->set_error(h, rc, "W4A16 linear: qb_w4a16_gemm_cpu failed (status %d)", (int)rc);
    h->free(h, yh);
    return rc;
}

/* Rows per block: about W4B_BLOCK_ELEMS weights, and at least four blocks
 * per thread on small matrices so that every thread has work. */
static int64_t cpu_rows(const qb_host *h, int64_t N, int64_t K)
{
    int64_t rows = W4B_BLOCK_ELEMS / K, per = N / ((int64_t)h->thread_count(h) * 4);
    if (rows < 1)
        rows = 1;
    if (per < rows)
        rows = per > 0 ? per : 1;
    return rows > N ? N : rows;
}

static qb_status cpu_linear(qb_linear_backend *pub, int64_t layer, const char *path, const float *x,
                            int64_t M, int64_t K, float *y, int64_t N, uint64_t *bytes)
{
    w4a16_backend_base *b = (w4a16_backend_base *)pub;
    const qb_host *h = b->m.h;
    qb_w4a16_linear q;
    cpu_job j;
    qb_status rc = w4a16_backend_find(&b->m, layer, path, K, N, &q);
    if (rc)
        return rc;
    memset(&j, 0, sizeof j);
    j.h = h;
    j.q = &q;
    j.y = y;
    j.M = M;
    j.N = N;
    j.rows = cpu_rows(h, N, K);
    if (!(j.xh = w4a16_backend_x16(h, x, M, K)))
        return QB_E_NOMEM;
    *bytes = w4a16_backend_bytes(&q);
    rc = h->parallel_for(h, (size_t)((N + j.rows - 1) / j.rows), cpu_block, &j);
    if (rc == QB_OK)
        w4a16_backend_bias(&q, y, M, N);
    h->free(h, (void *)j.xh);
    return rc;
}

static void cpu_close(qb_linear_backend *pub)
{
    w4a16_backend_free((w4a16_backend_base *)pub);
}

qb_status qb_w4a16_backend_open(const qb_host *h, const qb_model_src *src, unsigned flags,
                                qb_linear_backend **out)
{
    w4a16_backend_base *b;
    qb_status rc = w4a16_backend_new(h, src, flags, sizeof *b, &b);
    *out = NULL;
    if (rc || !b)
        return rc;
    b->pub.name = "W4A16 linears (qb_w4a16_gemm_cpu)";
    b->pub.linear = cpu_linear;
    b->pub.close = cpu_close;
    *out = &b->pub;
    return QB_OK;
}
