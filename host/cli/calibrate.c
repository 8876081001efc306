/*
 * quantbridge host — `convert --calibration FILE|builtin`: activation
 * statistics of the source, collected by the CPU forward pass (host/model)
 * over calibration text, for writers through qb_stats_api.importance
 * (docs/fidelity.md, "Requantizing lossy sources").
 *
 * The text goes through the model's tokenizer (tokenizer.json, host/
 * tokenizer) with its special tokens (BOS); the ids are cut into
 * sequences of QBH_CALIB_SEQ tokens, each starting with the text's first
 * id (the BOS a template adds), and each sequence is one forward pass
 * without the head (qbh_fwd_model.no_head). The observer adds every dense
 * product's input x[M][K] to its tensor's sum of x_j^2 and token count;
 * the statistics are the means. Memory: the pass's own (activations of one
 * sequence, one row block of one weight per thread: layer by layer, never
 * the whole model) plus one double per input column of every linear
 * observed (for Gemma 3 270M: 126 linears, 1.0 MB).
 */
#include "cli.h"
#include "calibrate.h"

#include "model.h"
#include "tokenizer.h"

#include <stdio.h>
#include <string.h>


typedef struct calib {
    const qbh_source *s;
    double **sum;     /* [n_tensors]: K doubles, or NULL */
    int64_t *cols;
    uint64_t *count;
} calib;

static qb_status observe(void *ctx, const char *as, const qb_tensor_info *t, size_t index,
                         const float *x, int64_t M, int64_t K)
{
    calib *c = ctx;
    double *acc;
    int64_t m, j;
    /* a tied head is the embedding read as lm_head: not a linear of its own */
    if (strcmp(as, t->name) != 0 || index >= c->s->info.n_tensors)
        return QB_OK;
    if (!c->sum[index]) {
        c->sum[index] = qbh_calloc((size_t)K, sizeof *c->sum[index]);
        if (!c->sum[index])
            return qbh_error_set(QB_E_NOMEM, "calibration: out of memory");
        c->cols[index] = K;
    }
    if (c->cols[index] != K)
        return qbh_error_set(QB_E_INTERNAL, "calibration: %s seen with %lld and %lld columns",
                             t->name, (long long)c->cols[index], (long long)K);
    acc = c->sum[index];
    for (m = 0; m < M; m++) {
        const float *r = x + m * K;
        for (j = 0; j < K; j++)
            acc[j] += (double)r[j] * (double)r[j];
    }
    c->count[index] += (uint64_t)M;
    return QB_OK;
}

static void calib_free(calib *c, size_t n)
{
    size_t i;
    for (i = 0; c->sum && i < n; i++)
        qbh_free(c->sum[i]);
    qbh_free(c->sum);
    qbh_free(c->cols);
    qbh_free(c->count);
}

qb_status qbh_calibrate_run(qbh_source *s, const int64_t *ids, size_t n_ids,
                            const qbh_fwd_observer *ob)
{
    const qb_host *h = qbh_services_named("calibration");
    qbh_fwd_model fm;
    int64_t *seq = qbh_calloc(QBH_CALIB_SEQ, sizeof *seq);
    size_t pos;
    qb_status rc = QB_OK;

    if (!seq)
        return qbh_error_set(QB_E_NOMEM, "calibration: out of memory");
    memset(&fm, 0, sizeof fm);
    fm.host = h;
    fm.src = &s->src;
    fm.observe = ob;
    fm.no_head = 1;
    /* ids[0] (the template's BOS) starts every sequence */
    for (pos = 1; pos < n_ids && rc == QB_OK;) {
        size_t k = 1;
        float *logits = NULL;
        int64_t vocab = 0;
        seq[0] = ids[0];
        while (k < QBH_CALIB_SEQ && pos < n_ids)
            seq[k++] = ids[pos++];
        rc = qbh_forward(&fm, seq, k, &logits, &vocab);
        h->free(h, logits);
    }
    qbh_free(seq);
    return rc;
}

qb_status qbh_calibrate_ids(qbh_source *s, const int64_t *ids, size_t n_ids, const char *origin,
                            qbh_actstats **out)
{
    const size_t n = s->info.n_tensors;
    qbh_fwd_observer ob;
    qbh_actstats *a = NULL;
    calib c;
    size_t i;
    qb_status rc = QB_OK;

    *out = NULL;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.sum = qbh_calloc(n ? n : 1, sizeof *c.sum);
    c.cols = qbh_calloc(n ? n : 1, sizeof *c.cols);
    c.count = qbh_calloc(n ? n : 1, sizeof *c.count);
    if (!c.sum || !c.cols || !c.count) {
        rc = qbh_error_set(QB_E_NOMEM, "calibration: out of memory");
        goto done;
    }
    if (n_ids < 2) {
        rc = qbh_error_set(QB_E_INVALID, "%s: the calibration text gives %zu token(s)", origin,
                           n_ids);
        goto done;
    }
    ob.fn = observe;
    ob.ctx = &c;
    if ((rc = qbh_calibrate_run(s, ids, n_ids, &ob)))
        goto done;
    a = qbh_actstats_new(n, origin);
    if (a)
        a->hess = qbh_hess_new(n, ids, n_ids, QBH_HESS_BUDGET_DEFAULT, NULL, qbh_hessian_pass);
    if (!a || !a->hess) {
        rc = qbh_error_set(QB_E_NOMEM, "calibration: out of memory");
        goto done;
    }
    for (i = 0; i < n; i++) {
        int64_t j;
        if (!c.sum[i] || c.count[i] == 0)
            continue;
        a->mean[i] = qbh_calloc((size_t)c.cols[i], sizeof *a->mean[i]);
        if (!a->mean[i]) {
            rc = qbh_error_set(QB_E_NOMEM, "calibration: out of memory");
            goto done;
        }
        for (j = 0; j < c.cols[i]; j++)
            a->mean[i][j] = (float)(c.sum[i][j] / (double)c.count[i]);
        a->cols[i] = c.cols[i];
        a->tokens[i] = c.count[i];
    }
    *out = a;
    a = NULL;
done:
    qbh_actstats_free(a);
    calib_free(&c, n);
    return rc;
}

qb_status qbh_calibrate(qbh_source *s, const char *tokenizer_dir, const char *what,
                        qbh_actstats **out)
{
    const qb_host *h = qbh_services_named("calibration");
    const char *dir = tokenizer_dir ? tokenizer_dir : s->info.tokenizer_dir;
    int builtin = strcmp(what, "builtin") == 0;
    char origin[1200];
    void *data = NULL;
    size_t len = 0, n_ids = 0;
    const char *text;
    int64_t *ids = NULL;
    qbh_tok *tok = NULL;
    qb_status rc;

    *out = NULL;
    if (!dir)
        return qbh_error_set(QB_E_NOT_FOUND, "%s: --calibration needs the model's tokenizer "
                             "(tokenizer.json): the source gives none; give --tokenizer DIR",
                             s->path);
    if (builtin) {
        text = qbh_calib_builtin_text();
        len = strlen(text);
    } else {
        if ((rc = h->read_small_file(h, what, (size_t)64 << 20, &data, &len)))
            return rc;
        text = data;
    }
    snprintf(origin, sizeof origin, "calibration %s", what);
    if ((rc = qbh_tok_load(h, dir, &tok)) ||
        (rc = qbh_tok_encode(tok, text, len, 1, &ids, &n_ids)))
        goto done;
    rc = qbh_calibrate_ids(s, ids, n_ids, origin, out);
done:
    qbh_tok_free(tok);
    h->free(h, ids);
    h->free(h, data);
    return rc;
}
