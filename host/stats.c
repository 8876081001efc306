/*
 * quantbridge host — the source statistics service (qb_stats.h, ABI 1.3):
 * the scale granularity a reader declares in its metadata view
 * ("quantbridge.scale_block:NAME", docs/plugin-design.md, "Declarations of
 * the source"), read once per source, and the run's activation statistics
 * (qbh_actstats, filled by the calibration pass or an imatrix file).
 */
#include "qbh.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#define DECL_BLOCK "quantbridge.scale_block:"

qbh_actstats *qbh_actstats_new(size_t n_tensors, const char *origin)
{
    qbh_actstats *a = qbh_calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->n_tensors = n_tensors;
    a->mean = qbh_calloc(n_tensors ? n_tensors : 1, sizeof *a->mean);
    a->cols = qbh_calloc(n_tensors ? n_tensors : 1, sizeof *a->cols);
    a->tokens = qbh_calloc(n_tensors ? n_tensors : 1, sizeof *a->tokens);
    a->origin = qbh_strdup(origin ? origin : "");
    if (!a->mean || !a->cols || !a->tokens || !a->origin) {
        qbh_actstats_free(a);
        return NULL;
    }
    return a;
}

qbh_hess *qbh_hess_new(size_t n_tensors, const int64_t *ids, size_t n_ids, uint64_t budget,
                       const char *spill_dir,
                       qb_status (*pass)(struct qbh_source *s, struct qbh_hess *hs))
{
    size_t n = n_tensors ? n_tensors : 1, i;
    qbh_hess *hs = qbh_calloc(1, sizeof *hs);
    if (!hs)
        return NULL;
    pthread_mutex_init(&hs->lock, NULL);
    hs->fd = -1;
    hs->budget = budget;
    hs->pass = pass;
    hs->n_ids = n_ids;
    hs->ids = qbh_calloc(n_ids ? n_ids : 1, sizeof *hs->ids);
    hs->off = qbh_calloc(n, sizeof *hs->off);
    hs->cols = qbh_calloc(n, sizeof *hs->cols);
    hs->tokens = qbh_calloc(n, sizeof *hs->tokens);
    hs->refused = qbh_calloc(n, sizeof *hs->refused);
    hs->spill_dir = spill_dir ? qbh_strdup(spill_dir) : NULL;
    if (!hs->ids || !hs->off || !hs->cols || !hs->tokens || !hs->refused ||
        (spill_dir && !hs->spill_dir)) {
        qbh_hess_free(hs);
        return NULL;
    }
    if (n_ids)
        memcpy(hs->ids, ids, n_ids * sizeof *ids);
    for (i = 0; i < n; i++)
        hs->off[i] = -1;
    return hs;
}

void qbh_hess_free(qbh_hess *hs)
{
    if (!hs)
        return;
    if (hs->fd >= 0)
        close(hs->fd);
    pthread_mutex_destroy(&hs->lock);
    qbh_free(hs->ids);
    qbh_free(hs->off);
    qbh_free(hs->cols);
    qbh_free(hs->tokens);
    qbh_free(hs->refused);
    qbh_free(hs->spill_dir);
    qbh_free(hs->msg);
    qbh_free(hs);
}

void qbh_actstats_free(qbh_actstats *a)
{
    size_t i;
    if (!a)
        return;
    qbh_hess_free(a->hess);
    for (i = 0; a->mean && i < a->n_tensors; i++)
        qbh_free(a->mean[i]);
    qbh_free(a->mean);
    qbh_free(a->cols);
    qbh_free(a->tokens);
    qbh_free(a->origin);
    qbh_free(a);
}

/* Reads every scale-block declaration of s's reader into s->blocks.
 * Called under s->info_lock. */
static qb_status read_blocks(qbh_source *s)
{
    char buf[64];
    qb_meta_entry e;
    size_t i;
    qb_status rc;

    s->blocks = qbh_calloc(s->info.n_tensors ? s->info.n_tensors : 1, sizeof *s->blocks);
    if (!s->blocks)
        return qbh_error_set(QB_E_NOMEM, "%s: out of memory", s->path);
    if (!qbh_source_has_meta(s))
        return QB_OK;
    for (i = 0; (rc = qbh_source_meta(s, i, &e, buf, sizeof buf)) == QB_OK; i++) {
        const char *name = e.key + sizeof DECL_BLOCK - 1;
        gpointer v;
        char *end = NULL;
        long long cols;
        if (strncmp(e.key, DECL_BLOCK, sizeof DECL_BLOCK - 1) != 0)
            continue;
        cols = strtoll(buf, &end, 10);
        v = g_hash_table_lookup(s->by_name, name);
        if (end == buf || *end != '\0' || cols < 1 || !v)
            return qbh_error_set(QB_E_FORMAT,
                                 "%s: reader %s: %s is '%s' (a positive integer for a tensor "
                                 "of the source is expected)",
                                 s->path, s->reader->name, e.key, buf);
        s->blocks[(size_t)GPOINTER_TO_SIZE(v) - 1] = cols;
    }
    return rc == QB_E_RANGE ? QB_OK : rc;
}

qb_status qbh_source_scale_block(qbh_source *s, size_t i, int64_t *cols)
{
    qb_status rc;
    pthread_mutex_lock(&s->info_lock);
    rc = QB_OK;
    if (!s->blocks_read) {
        /* a failure (its message set on this thread) is not kept: the next
         * call reads again and says why itself */
        rc = read_blocks(s);
        s->blocks_read = rc == QB_OK;
        if (rc != QB_OK) {
            qbh_free(s->blocks);
            s->blocks = NULL;
        }
    }
    pthread_mutex_unlock(&s->info_lock);
    if (rc != QB_OK)
        return rc;
    if (i >= s->info.n_tensors)
        return qbh_error_set(QB_E_RANGE, "%s: tensor index %zu outside [0, %zu)", s->path, i,
                             s->info.n_tensors);
    if (s->blocks[i] < 1)
        return QB_E_NOT_FOUND;
    *cols = s->blocks[i];
    return QB_OK;
}

static qbh_source *source_of(const qb_model_src *src)
{
    return qbh_source_of(src);
}

static qb_status svc_scale_block(const qb_host *h, const qb_model_src *src, size_t tensor,
                                 int64_t *cols)
{
    qbh_source *s = source_of(src);
    (void)h;
    if (!cols)
        return qbh_error_set(QB_E_INVALID, "stats.scale_block: cols NULL");
    if (!s) /* a model the host did not open (plugin-check's, a test's): nothing declared */
        return QB_E_NOT_FOUND;
    return qbh_source_scale_block(s, tensor, cols);
}

static qb_status svc_importance(const qb_host *h, const qb_model_src *src, size_t tensor,
                                float *out, int64_t n, qb_stats_info *info)
{
    qbh_source *s = source_of(src);
    const qbh_actstats *a;
    (void)h;
    if (!out)
        return qbh_error_set(QB_E_INVALID, "stats.importance: out NULL");
    if (!s) /* a model the host did not open: no statistics */
        return QB_E_NOT_FOUND;
    if (tensor >= s->info.n_tensors)
        return qbh_error_set(QB_E_RANGE, "%s: tensor index %zu outside [0, %zu)", s->path,
                             tensor, s->info.n_tensors);
    a = s->act;
    if (!a || tensor >= a->n_tensors || !a->mean[tensor])
        return QB_E_NOT_FOUND;
    if (n != a->cols[tensor])
        return qbh_error_set(QB_E_MISMATCH, "%s: %s: importance of %lld columns asked, the "
                             "statistics have %lld", s->path, s->tensors[tensor].name,
                             (long long)n, (long long)a->cols[tensor]);
    memcpy(out, a->mean[tensor], (size_t)n * sizeof *out);
    if (info && info->struct_size >= QB_STATS_INFO_SIZE_1_3) {
        info->n_tokens = a->tokens[tensor];
        info->origin = a->origin;
    }
    return QB_OK;
}

static qb_status svc_hessian(const qb_host *h, const qb_model_src *src, size_t tensor,
                             float *out, int64_t n, qb_stats_info *info)
{
    qbh_source *s = source_of(src);
    const qbh_actstats *a;
    qbh_hess *hs;
    size_t want, got = 0;
    qb_status rc;
    (void)h;
    if (!out)
        return qbh_error_set(QB_E_INVALID, "stats.hessian: out NULL");
    if (!s)
        return QB_E_NOT_FOUND;
    if (tensor >= s->info.n_tensors)
        return qbh_error_set(QB_E_RANGE, "%s: tensor index %zu outside [0, %zu)", s->path,
                             tensor, s->info.n_tensors);
    a = s->act;
    /* an imatrix file has only the diagonal: no Hessian */
    if (!a || !a->hess || tensor >= a->n_tensors || !a->mean[tensor])
        return QB_E_NOT_FOUND;
    if (n != a->cols[tensor])
        return qbh_error_set(QB_E_MISMATCH, "%s: %s: Hessian of %lld columns asked, the "
                             "statistics have %lld", s->path, s->tensors[tensor].name,
                             (long long)n, (long long)a->cols[tensor]);
    hs = a->hess;
    pthread_mutex_lock(&hs->lock);
    if (!hs->done) {
        hs->rc = hs->pass(s, hs);
        hs->done = 1;
        if (hs->rc != QB_OK)
            hs->msg = qbh_strdup(qbh_error_message());
    }
    pthread_mutex_unlock(&hs->lock);
    if (hs->rc != QB_OK)
        return qbh_error_set(hs->rc, "%s", hs->msg ? hs->msg : "Hessian pass failed");
    if (hs->refused[tensor])
        return qbh_error_set(QB_E_UNSUPPORTED, "%s: %s: its Hessian (%lld x %lld floats, %.1f "
                             "MiB) exceeds the Hessian budget of %.1f MiB (convert "
                             "--hessian-budget)", s->path, s->tensors[tensor].name,
                             (long long)n, (long long)n,
                             (double)n * (double)n * 4.0 / 1048576.0,
                             (double)hs->budget / 1048576.0);
    if (hs->off[tensor] < 0)
        return QB_E_NOT_FOUND;
    if (hs->cols[tensor] != n)
        return qbh_error_set(QB_E_INTERNAL, "%s: %s: Hessian collected with %lld columns",
                             s->path, s->tensors[tensor].name, (long long)hs->cols[tensor]);
    want = (size_t)n * (size_t)n * sizeof *out;
    while (got < want) {
        ssize_t r = pread(hs->fd, (char *)out + got, want - got, (off_t)hs->off[tensor] + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return qbh_error_set(QB_E_IO, "%s: %s: reading its Hessian from the temporary "
                                 "file: %s", s->path, s->tensors[tensor].name,
                                 r < 0 ? strerror(errno) : "short read");
        got += (size_t)r;
    }
    if (info && info->struct_size >= QB_STATS_INFO_SIZE_1_3) {
        info->n_tokens = hs->tokens[tensor];
        info->origin = a->origin;
    }
    rc = QB_OK;
    return rc;
}

const qb_stats_api *qbh_stats_api(void)
{
    static const qb_stats_api api = {
        .struct_size = sizeof(qb_stats_api),
        .scale_block = svc_scale_block,
        .importance = svc_importance,
        .hessian = svc_hessian,
    };
    return &api;
}
