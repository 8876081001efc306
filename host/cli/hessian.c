/*
 * quantbridge host — the Hessian of each linear for qb_stats_api.hessian
 * (GPTQ, docs/fidelity.md "GPTQ: error compensation"): H = X^T X / tokens
 * over the calibration tokens, X the rows the linear multiplies.
 *
 * Collected only when a writer first asks, by running the calibration
 * pass again (the tokens are kept from the importance pass, which already
 * told which linears the pass observes and their column counts n).
 *
 * Memory, stated: during a pass the host holds float32 matrices of at
 * most hs->budget bytes in all (`convert --hessian-budget`, default 1
 * GiB) plus one copy of the last input (256 x n floats). The covered
 * linears are taken in tensor order and cut into passes whose n*n*4 bytes
 * sum to at most the budget; a linear whose own matrix exceeds it gets
 * none (the service refuses it by name, the writer falls back). Linears
 * that multiply the same input (q/k/v, gate/up: seen one after the other
 * with equal rows) share one matrix, so a pass usually holds less. After
 * each pass the matrices go to one temporary file (created in the
 * output's directory, unlinked at once, so it never outlives the process)
 * and are freed: afterwards the host holds none, and each request reads
 * one into the writer's buffer. Disk: n*n*4 bytes per distinct input
 * (Gemma 3 270M: 4 per layer, 0.44 GB).
 *
 * Cost: per token n*n/2 multiply-adds per distinct input, in tiles of
 * 16 rows x 256 columns through the pool.
 */
#include "cli.h"
#include "calibrate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#define TILE_A 16
#define TILE_B 256

typedef struct hpass {
    const qbh_source *s;
    qbh_hess *hs;
    const qbh_actstats *a;
    uint8_t *in_pass;   /* [n_tensors] 1: collected in this pass */
    float **H;          /* [n_tensors] owner's matrix, or NULL */
    int64_t *alias;     /* [n_tensors] owner index, or -1 */
    uint64_t *count;    /* [n_tensors] tokens */
    /* the last input an owner saw in this pass */
    float *last;
    size_t last_cap;
    int64_t last_owner, last_M, last_K;
} hpass;

typedef struct acc_job {
    float *H;
    const float *x;
    int64_t M, K;
} acc_job;

/* Rows [a0, a0 + TILE_A) of H, columns from a0 on: H[a][b] += sum_m
 * x[m][a] x[m][b]. The upper triangle is what is kept (mirrored later). */
static qb_status acc_tile(void *arg, size_t t)
{
    const acc_job *j = arg;
    int64_t a0 = (int64_t)t * TILE_A, a1 = a0 + TILE_A < j->K ? a0 + TILE_A : j->K;
    int64_t b0, m, a, b;
    for (b0 = a0; b0 < j->K; b0 += TILE_B) {
        int64_t b1 = b0 + TILE_B < j->K ? b0 + TILE_B : j->K;
        for (m = 0; m < j->M; m++) {
            const float *xr = j->x + m * j->K;
            for (a = a0; a < a1; a++) {
                float xa = xr[a], *hr = j->H + a * j->K;
                if (xa == 0.0f)
                    continue;
                for (b = b0; b < b1; b++)
                    hr[b] += xa * xr[b];
            }
        }
    }
    return QB_OK;
}

static qb_status observe(void *ctx, const char *as, const qb_tensor_info *t, size_t index,
                         const float *x, int64_t M, int64_t K)
{
    hpass *p = ctx;
    const qb_host *h = qbh_services_named("calibration");
    acc_job j;
    size_t need;
    /* a tied head is the embedding read as lm_head: not a linear of its own */
    if (strcmp(as, t->name) != 0 || index >= p->a->n_tensors || !p->in_pass[index]) {
        p->last_owner = -1;
        return QB_OK;
    }
    if (K != p->a->cols[index])
        return qbh_error_set(QB_E_INTERNAL, "Hessian: %s seen with %lld columns, %lld before",
                             t->name, (long long)K, (long long)p->a->cols[index]);
    if (p->alias[index] < 0 && !p->H[index] && p->last_owner >= 0 && p->last_M == M &&
        p->last_K == K && memcmp(p->last, x, (size_t)(M * K) * sizeof *x) == 0)
        p->alias[index] = p->last_owner; /* first sight: the previous linear's input */
    if (p->alias[index] >= 0) {
        if (p->last_owner != p->alias[index] || p->last_M != M || p->last_K != K ||
            memcmp(p->last, x, (size_t)(M * K) * sizeof *x) != 0)
            return qbh_error_set(QB_E_INTERNAL, "Hessian: %s no longer multiplies the input "
                                 "of %s", t->name, p->s->tensors[p->alias[index]].name);
        return QB_OK;
    }
    if (!p->H[index]) {
        p->H[index] = qbh_calloc((size_t)(K * K), sizeof *p->H[index]);
        if (!p->H[index])
            return qbh_error_set(QB_E_NOMEM, "Hessian: out of memory for %s (%lld x %lld)",
                                 t->name, (long long)K, (long long)K);
    }
    need = (size_t)(M * K);
    if (need > p->last_cap) {
        qbh_free(p->last);
        p->last_cap = 0;
        p->last = qbh_alloc(need * sizeof *p->last);
        if (!p->last)
            return qbh_error_set(QB_E_NOMEM, "Hessian: out of memory");
        p->last_cap = need;
    }
    memcpy(p->last, x, need * sizeof *x);
    p->last_owner = (int64_t)index;
    p->last_M = M;
    p->last_K = K;
    j.H = p->H[index];
    j.x = x;
    j.M = M;
    j.K = K;
    p->count[index] += (uint64_t)M;
    return h->parallel_for(h, (size_t)((K + TILE_A - 1) / TILE_A), acc_tile, &j);
}

static qb_status open_spill(const qbh_source *s, qbh_hess *hs)
{
    const char *dir = hs->spill_dir ? hs->spill_dir : g_get_tmp_dir();
    char *path = g_build_filename(dir, ".quantbridge-hessian-XXXXXX", NULL);
    if (!path)
        return qbh_error_set(QB_E_NOMEM, "Hessian: out of memory");
    hs->fd = mkstemp(path);
    if (hs->fd < 0) {
        qb_status rc = qbh_error_set(QB_E_IO, "%s: Hessian: cannot create a temporary file in "
                                     "%s: %s", s->path, dir, strerror(errno));
        g_free(path);
        return rc;
    }
    /* unlinked at once: the data lives while the descriptor does */
    unlink(path);
    g_free(path);
    return QB_OK;
}

/* Mirrors owner i's upper triangle, divides by its tokens and appends it. */
static qb_status spill(hpass *p, size_t i)
{
    qbh_hess *hs = p->hs;
    float *H = p->H[i];
    int64_t K = p->a->cols[i], a, b;
    size_t want = (size_t)(K * K) * sizeof *H, done = 0;
    float inv = p->count[i] ? 1.0f / (float)p->count[i] : 0.0f;
    for (a = 0; a < K; a++) {
        H[a * K + a] *= inv;
        for (b = a + 1; b < K; b++) {
            H[a * K + b] *= inv;
            H[b * K + a] = H[a * K + b];
        }
    }
    while (done < want) {
        ssize_t r = pwrite(hs->fd, (const char *)H + done, want - done,
                           (off_t)hs->bytes + (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return qbh_error_set(r < 0 && errno == ENOSPC ? QB_E_NOSPACE : QB_E_IO,
                                 "%s: Hessian: writing the temporary file: %s", p->s->path,
                                 r < 0 ? strerror(errno) : "short write");
        done += (size_t)r;
    }
    hs->off[i] = (int64_t)hs->bytes;
    hs->cols[i] = K;
    hs->tokens[i] = p->count[i];
    hs->bytes += want;
    return QB_OK;
}

qb_status qbh_hessian_pass(qbh_source *s, qbh_hess *hs)
{
    const size_t n = s->info.n_tensors;
    const qbh_actstats *a = s->act;
    qbh_fwd_observer ob;
    hpass p;
    size_t i, first = 0;
    qb_status rc = QB_OK;

    memset(&p, 0, sizeof p);
    p.s = s;
    p.hs = hs;
    p.a = a;
    p.in_pass = qbh_calloc(n ? n : 1, 1);
    p.H = qbh_calloc(n ? n : 1, sizeof *p.H);
    p.alias = qbh_calloc(n ? n : 1, sizeof *p.alias);
    p.count = qbh_calloc(n ? n : 1, sizeof *p.count);
    if (!p.in_pass || !p.H || !p.alias || !p.count) {
        rc = qbh_error_set(QB_E_NOMEM, "Hessian: out of memory");
        goto done;
    }
    if ((rc = open_spill(s, hs)))
        goto done;
    ob.fn = observe;
    ob.ctx = &p;
    while (rc == QB_OK) {
        uint64_t used = 0;
        size_t k, taken = 0;
        /* the next pass: covered linears in tensor order while they fit */
        memset(p.in_pass, 0, n ? n : 1);
        for (i = first; i < n; i++) {
            uint64_t b;
            if (!a->mean[i] || a->cols[i] < 1)
                continue;
            b = (uint64_t)a->cols[i] * (uint64_t)a->cols[i] * sizeof(float);
            if (b > hs->budget) {
                hs->refused[i] = 1;
                continue;
            }
            if (used + b > hs->budget)
                break;
            used += b;
            p.in_pass[i] = 1;
            p.alias[i] = -1;
            taken++;
        }
        first = i;
        if (!taken)
            break;
        p.last_owner = -1;
        hs->passes++;
        rc = qbh_calibrate_run(s, hs->ids, hs->n_ids, &ob);
        for (k = 0; k < n && rc == QB_OK; k++)
            if (p.in_pass[k] && p.H[k] && p.alias[k] < 0)
                rc = spill(&p, k);
        for (k = 0; k < n && rc == QB_OK; k++)
            if (p.in_pass[k] && p.alias[k] >= 0) {
                size_t o = (size_t)p.alias[k];
                hs->off[k] = hs->off[o];
                hs->cols[k] = hs->cols[o];
                hs->tokens[k] = hs->tokens[o];
            }
        for (k = 0; k < n; k++) {
            qbh_free(p.H[k]);
            p.H[k] = NULL;
        }
        if (first >= n)
            break;
    }
done:
    for (i = 0; p.H && i < n; i++)
        qbh_free(p.H[i]);
    qbh_free(p.H);
    qbh_free(p.in_pass);
    qbh_free(p.alias);
    qbh_free(p.count);
    qbh_free(p.last);
    return rc;
}
