/*
 * quantbridge verify — the engine: both models through their readers,
 * tensors matched by canonical name, each pair streamed in row blocks on
 * the host thread pool, thresholds applied.
 *
 * Memory: per worker two row blocks of at most VERIFY_BLOCK_ELEMS floats
 * and the W·x probe (n_vectors * cols doubles); never a whole tensor.
 */
#include "model.h"
#include "verify.h"

#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define VERIFY_BLOCK_ELEMS ((int64_t)1 << 20) /* 4 MiB of float32 per side */

void qbh_verify_opts_default(qbh_verify_opts *o)
{
    o->max_rel_rmse = NAN;
    o->min_cosine = NAN;
    o->margin = QBH_VERIFY_BASELINE_MARGIN;
    o->n_vectors = QBH_VERIFY_N_VECTORS;
    o->seed = QBH_VERIFY_SEED;
    o->plan = NULL;
}

qb_status qbh_verify_open(const qbh_registry *reg, const char *path, const char *format,
                          qbh_opt *cli, size_t n_cli, qbh_source *s, qbh_params *params,
                          int *usage)
{
    qbh_plugin *reader = NULL;
    qbh_probe_score *scores = NULL;
    size_t n_scores = 0, i;
    qbh_params unused;
    qb_status rc;

    memset(s, 0, sizeof *s);
    memset(params, 0, sizeof *params);
    memset(&unused, 0, sizeof unused);
    rc = qbh_select_reader(reg, path, format, &reader, &scores, &n_scores, usage);
    if (rc) {
        for (i = 0; i < n_scores; i++)
            qbh_log(QB_LOG_INFO, NULL, "probe %s: %s: %d", path, scores[i].plugin->name,
                    scores[i].score);
        goto out;
    }
    rc = qbh_params_route(reader, NULL, cli, n_cli, params, &unused, usage);
    if (rc)
        goto out;
    rc = qbh_source_open(reader, path, params->items, s);
out:
    if (rc)
        qbh_params_free(params);
    qbh_params_free(&unused);
    qbh_free(scores);
    return rc;
}

/* Decoder layer of a canonical name: the N of "...layers.N." (HF module
 * paths, qb_tensor.h), or -1. */
static int layer_of(const char *name)
{
    const char *p = name;
    for (;;) {
        const char *q = strstr(p, "layers.");
        long v;
        char *end;
        if (!q)
            return -1;
        if ((q == name || q[-1] == '.') && isdigit((unsigned char)q[7])) {
            v = strtol(q + 7, &end, 10);
            if (*end == '.' && v >= 0 && v < 1000000)
                return (int)v;
        }
        p = q + 7;
    }
}

/* tie_word_embeddings of a model's config into *tied, 1 only when present
 * and true: an absent key is not taken as tied (Hugging Face defaults
 * differ by architecture), so an untied model missing its head is
 * reported. The config is read by the strict JSON parser, as every input
 * file: a text it refuses is an error naming the model's config.json. */
static qb_status config_tied(const qbh_source *s, int *tied)
{
    const qb_json_api *J = qbh_json_api();
    char what[4200];
    qb_json *c = NULL;
    int32_t b = 0;
    qb_status rc;
    *tied = 0;
    if (!s->info.config_json)
        return QB_OK;
    snprintf(what, sizeof what, "verify: %s: config.json of reader %s", s->path, s->reader->name);
    if ((rc = qbh_json_parse(what, s->info.config_json, strlen(s->info.config_json), &c)))
        return rc;
    *tied = J->get_bool(J->get(c, "tie_word_embeddings"), &b) && b;
    J->free(c);
    return QB_OK;
}

static int find(qbh_source *s, const char *name, size_t *idx)
{
    qb_status rc = s->src.find(s->src.handle, name, idx);
    if (rc)
        qbh_error_clear(); /* absence is a finding here, not an error */
    return rc == QB_OK;
}

typedef struct verify_job {
    size_t si, ci;           /* source / converted tensor index */
    qbh_verify_tensor *t;
    qbh_vb_rule rule;        /* how the pair is judged (set on the main
                                thread: get_grid_info is instance class) */
} verify_job;

typedef struct verify_ctx {
    qbh_source *src, *conv;
    const qbh_verify_opts *o;
    verify_job *jobs;
    size_t n_jobs;
    atomic_size_t done;
} verify_ctx;

/* The verdict of one compared tensor (verify.h has the rule). NaN
 * never passes a comparison, so the user thresholds test for it apart. */
static void judge(qbh_verify_tensor *t, const qbh_verify_opts *o)
{
    const int user = !isnan(o->max_rel_rmse) || !isnan(o->min_cosine);
    t->state = QBH_VT_FAIL;
    if (t->n_bad_nonfinite) {
        snprintf(t->reason, sizeof t->reason, "%llu non-finite value(s) not preserved",
                 (unsigned long long)t->n_bad_nonfinite);
    } else if (t->rule == QBH_VB_EXACT && !t->exact) {
        snprintf(t->reason, sizeof t->reason,
                 "its writer declares it exact but %llu element(s) differ (max abs %.3g)",
                 (unsigned long long)t->n_diff, t->max_abs);
    } else if (t->rule == QBH_VB_GRID && t->n_worse && t->quant_rule[0]) {
        /* the declared rule trades plain weight error for the activations'
         * by design: the model's output judges it (qbh_verify_settle_output) */
        t->state = QBH_VT_OK;
        t->at_output = 1;
        snprintf(t->reason, sizeof t->reason,
                 "judged at the model's output: its writer's rule '%s' is activation-aware; "
                 "%llu of %llu groups worse than the absmax rule by plain error (worst %.3gx; "
                 "rel_rmse %.4g, absmax rule %.4g)",
                 t->quant_rule, (unsigned long long)t->n_worse, (unsigned long long)t->n_units,
                 t->worst, t->rel_rmse, t->base_rel_rmse);
    } else if (t->rule == QBH_VB_GRID && t->n_worse) {
        snprintf(t->reason, sizeof t->reason,
                 "%llu of %llu groups worse than the absmax rule by more than %g%% "
                 "(worst %.3gx its error; rel_rmse %.4g, absmax rule %.4g)",
                 (unsigned long long)t->n_worse, (unsigned long long)t->n_units,
                 100.0 * o->margin, t->worst, t->rel_rmse, t->base_rel_rmse);
    } else if (t->rule == QBH_VB_ROUND && t->n_worse) {
        snprintf(t->reason, sizeof t->reason,
                 "%llu element(s) farther from the source than nearest rounding (by up to %.3g)",
                 (unsigned long long)t->n_worse, t->worst);
    } else if (t->rule == QBH_VB_NONE && !user && !t->exact) {
        snprintf(t->reason, sizeof t->reason,
                 "%llu element(s) differ and encoding '%s' has no known plain rule; "
                 "judge it with --max-rel-rmse / --min-cosine",
                 (unsigned long long)t->n_diff, t->conv_encoding);
    } else if (!isnan(o->max_rel_rmse) && !(t->rel_rmse <= o->max_rel_rmse)) {
        snprintf(t->reason, sizeof t->reason, "rel_rmse %.4g > %.4g", t->rel_rmse,
                 o->max_rel_rmse);
    } else if (!isnan(o->min_cosine) && !(t->cosine >= o->min_cosine)) {
        snprintf(t->reason, sizeof t->reason, "cosine %.6f < %.6f", t->cosine, o->min_cosine);
    } else if (!isnan(o->min_cosine) && t->has_wx && !(t->wx_cosine >= o->min_cosine)) {
        snprintf(t->reason, sizeof t->reason, "W.x cosine %.6f < %.6f", t->wx_cosine,
                 o->min_cosine);
    } else {
        t->state = QBH_VT_OK;
    }
}

static qb_status compare_one(void *arg, size_t i)
{
    verify_ctx *c = arg;
    verify_job *j = &c->jobs[i];
    qbh_verify_tensor *t = j->t;
    const qb_tensor_info *ti = &c->src->tensors[j->si];
    int64_t rows = qb_tensor_rows(ti), cols = qb_tensor_cols(ti), block, r0, n = 0;
    float *a = NULL, *b = NULL;
    qbh_vm_acc acc;
    qbh_vm_wx wx;
    qbh_vb_stats vb;
    qb_status rc = QB_OK;

    memset(&wx, 0, sizeof wx);
    memset(&vb, 0, sizeof vb);
    qbh_vm_acc_init(&acc);
    block = cols >= VERIFY_BLOCK_ELEMS ? 1 : VERIFY_BLOCK_ELEMS / cols;
    if (j->rule.expert_rows > 0) { /* whole groups of one expert per block */
        int64_t gs = j->rule.group_size;
        block = gs * (gs * cols >= VERIFY_BLOCK_ELEMS ? 1 : VERIFY_BLOCK_ELEMS / (gs * cols));
    }
    if (block > rows)
        block = rows;
    a = qbh_alloc((size_t)block * (size_t)cols * sizeof *a);
    b = qbh_alloc((size_t)block * (size_t)cols * sizeof *b);
    if (!a || !b) {
        rc = qbh_error_set(QB_E_NOMEM, "verify: %s: out of memory for a %lld-row block",
                           t->name, (long long)block);
        goto out;
    }
    t->has_wx = ti->n_dims == 2 && t->layer >= 0;
    if (t->has_wx) {
        rc = qbh_vm_wx_init(&wx, c->o->n_vectors, cols, c->o->seed);
        if (rc)
            goto out;
    }
    for (r0 = 0; r0 < rows; r0 += n) {
        n = rows - r0 < block ? rows - r0 : block;
        if (j->rule.expert_rows > 0 && n > j->rule.expert_rows - r0 % j->rule.expert_rows)
            n = j->rule.expert_rows - r0 % j->rule.expert_rows; /* stop at the expert's end */
        assert(j->rule.expert_rows == 0 || r0 % j->rule.expert_rows % j->rule.group_size == 0);
        if (qbh_cancel_requested()) {
            rc = qbh_error_set(QB_E_CANCELLED, "verify: cancelled at %s", t->name);
            goto out;
        }
        rc = c->src->src.read_rows(c->src->src.handle, j->si, r0, n, a);
        if (rc)
            goto out;
        rc = c->conv->src.read_rows(c->conv->src.handle, j->ci, r0, n, b);
        if (rc)
            goto out;
        qbh_vm_acc_add(&acc, a, b, (size_t)n * (size_t)cols);
        qbh_vb_rows(&j->rule, a, b, n, cols, &vb);
        if (t->has_wx)
            qbh_vm_wx_add_rows(&wx, a, b, n);
    }
    t->n = acc.n;
    t->n_diff = acc.n_diff;
    t->n_bad_nonfinite = acc.n_bad_nonfinite;
    t->exact = acc.n_diff == 0;
    t->max_abs = acc.max_abs;
    t->ss_a = acc.ss_a;
    t->ss_err = acc.ss_err;
    qbh_vm_acc_metrics(&acc, &t->rel_rmse, &t->cosine, &t->snr_db);
    t->wx_cosine = t->has_wx ? qbh_vm_wx_cosine(&wx) : NAN;

    t->rule = j->rule.kind;
    t->n_units = vb.n_units;
    t->n_worse = vb.n_worse;
    t->worst = vb.worst;
    t->base_rel_rmse = (t->rule == QBH_VB_GRID || t->rule == QBH_VB_ROUND) && acc.ss_a > 0.0
                           ? sqrt(vb.ss_base / acc.ss_a)
                           : NAN;
    judge(t, c->o);
    qbh_progress_stage("verify", atomic_fetch_add(&c->done, 1) + 1, c->n_jobs, "tensors");
out:
    qbh_vm_wx_free(&wx);
    qbh_free(a);
    qbh_free(b);
    return rc;
}

static char *dup_or_empty(const char *s)
{
    return qbh_strdup(s ? s : "");
}

/* Fills the identity of entry t from tensor info ti of one side. */
static qb_status tensor_init(qbh_verify_tensor *t, const qb_tensor_info *ti, const char *enc,
                             const char *conv_enc)
{
    memset(t, 0, sizeof *t);
    t->name = qbh_strdup(ti->name);
    t->encoding = dup_or_empty(enc);
    t->conv_encoding = dup_or_empty(conv_enc);
    t->n_dims = ti->n_dims;
    memcpy(t->dims, ti->dims, sizeof t->dims);
    t->layer = layer_of(ti->name);
    t->wx_cosine = NAN;
    t->base_rel_rmse = NAN;
    if (!t->name || !t->encoding || !t->conv_encoding)
        return qbh_error_set(QB_E_NOMEM, "verify: out of memory");
    return QB_OK;
}

static int same_shape(const qb_tensor_info *a, const qb_tensor_info *b)
{
    uint32_t d;
    if (a->n_dims != b->n_dims)
        return 0;
    for (d = 0; d < a->n_dims; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

static void shape_str(const qb_tensor_info *t, char *out, size_t n)
{
    size_t len = 0;
    uint32_t d;
    out[0] = '\0';
    for (d = 0; d < t->n_dims && len < n; d++)
        len += (size_t)snprintf(out + len, n - len, "%s%lld", d ? "x" : "", (long long)t->dims[d]);
}

/* The rule converted tensor ci is judged by: exact when its writer
 * declares it so, the absmax rule in the parts' own grouping for a fused
 * expert tensor it declares a grid of, the grid's absmax rule for an
 * integer grid the reader serves, nearest rounding for a float dtype, else
 * none. Main thread. */
static qb_status pick_rule(qbh_source *conv, size_t ci, const qbh_verify_decl *d,
                           const qbh_verify_opts *o, qbh_vb_rule *rl)
{
    const qb_tensor_info *ti = &conv->tensors[ci];
    const qbh_vb_rule *xr;
    memset(rl, 0, sizeof *rl);
    rl->margin = o->margin;
    if (g_hash_table_contains(d->exact, ti->name)) {
        rl->kind = QBH_VB_EXACT;
        return QB_OK;
    }
    xr = g_hash_table_lookup(d->expert, ti->name);
    if (xr && ti->n_dims == 3 && ti->source_dtype == QB_DT_QUANTIZED && ti->dims[1] > 0) {
        /* [E, in, out]: each expert's column is one linear row quantized
         * in groups of group_size inputs down the rows */
        rl->kind = QBH_VB_GRID;
        rl->bits = xr->bits;
        rl->scale_dtype = xr->scale_dtype;
        rl->group_size = xr->group_size;
        rl->expert_rows = ti->dims[1];
        rl->n_groups = (ti->dims[1] + xr->group_size - 1) / xr->group_size;
        return QB_OK;
    }
    if (ti->has_grid && conv->src.get_grid_info) {
        qb_grid_info gi;
        memset(&gi, 0, sizeof gi);
        gi.struct_size = sizeof gi;
        if (conv->src.get_grid_info(conv->src.handle, ci, &gi) != QB_OK) {
            qbh_error_clear(); /* no usable grid: no baseline, judged exact */
            return QB_OK;
        }
        return qbh_vb_rule_grid(rl, &gi, qb_tensor_cols(ti));
    }
    if (ti->source_dtype == QB_DT_F16 || ti->source_dtype == QB_DT_BF16 ||
        ti->source_dtype == QB_DT_F32) {
        rl->kind = QBH_VB_ROUND;
        rl->round_dtype = ti->source_dtype;
    }
    return QB_OK;
}

#define EMBED_S "model.embed_tokens.weight"
static const char *const HEAD = "lm_head.weight";
static const char *const EMBED = EMBED_S;

/* The result's counts and pass from its tensors' states. */
static void recount(qbh_verify_result *r)
{
    size_t i;
    r->pass = 1;
    r->n_compared = r->n_failed = r->n_missing = r->n_extra = r->n_shape = 0;
    r->n_exact = r->n_at_output = 0;
    for (i = 0; i < r->n; i++) {
        const qbh_verify_tensor *t = &r->t[i];
        switch (t->state) {
        case QBH_VT_OK: r->n_compared++; break;
        case QBH_VT_FAIL: r->n_compared++; r->n_failed++; break;
        case QBH_VT_MISSING: r->n_missing++; break;
        case QBH_VT_EXTRA: r->n_extra++; break;
        case QBH_VT_SHAPE: r->n_shape++; break;
        }
        if ((t->state == QBH_VT_OK || t->state == QBH_VT_FAIL) && t->exact)
            r->n_exact++;
        if (t->state == QBH_VT_OK && t->at_output)
            r->n_at_output++;
        if (t->state != QBH_VT_OK)
            r->pass = 0;
    }
}

void qbh_verify_settle_output(qbh_verify_result *r, int judged, const char *why_not)
{
    size_t i;
    if (judged)
        return;
    for (i = 0; i < r->n; i++) {
        qbh_verify_tensor *t = &r->t[i];
        if (t->state != QBH_VT_OK || !t->at_output)
            continue;
        t->state = QBH_VT_FAIL;
        t->at_output = 0;
        snprintf(t->reason, sizeof t->reason,
                 "its writer's rule '%s' is judged at the model's output, %s (%llu of %llu "
                 "groups worse than the absmax rule by plain error)",
                 t->quant_rule, why_not, (unsigned long long)t->n_worse,
                 (unsigned long long)t->n_units);
    }
    recount(r);
}

qb_status qbh_verify_sources(qbh_source *src, qbh_source *conv, const qbh_verify_opts *o,
                             qbh_verify_result **out)
{
    size_t ns = src->info.n_tensors, nc = conv->info.n_tensors, i, k;
    qbh_verify_result *r = NULL;
    unsigned char *used = NULL;
    verify_ctx ctx;
    qbh_verify_decl decl;
    qb_status rc;
    int conv_tied = 0, src_tied = 0;

    memset(&ctx, 0, sizeof ctx);
    *out = NULL;
    if ((rc = config_tied(src, &src_tied)) || (rc = config_tied(conv, &conv_tied)))
        return rc;
    r = qbh_calloc(1, sizeof *r);
    used = qbh_calloc(nc ? nc : 1, 1);
    if (r)
        r->t = qbh_calloc(ns + nc + 1, sizeof *r->t);
    ctx.jobs = qbh_calloc(ns + nc + 1, sizeof *ctx.jobs);
    if (!r || !used || !r->t || !ctx.jobs) {
        rc = qbh_error_set(QB_E_NOMEM, "verify: out of memory");
        goto out;
    }
    r->opts = *o;
    r->source_path = qbh_strdup(src->path);
    r->converted_path = qbh_strdup(conv->path);
    r->source_format = qbh_strdup(src->info.source_format);
    r->converted_format = qbh_strdup(conv->info.source_format);
    r->source_reader = qbh_strdup(src->reader->name);
    r->converted_reader = qbh_strdup(conv->reader->name);
    r->source_summary = dup_or_empty(src->info.source_summary);
    r->source_reader_version = src->reader->desc && src->reader->desc->version
                                   ? src->reader->desc->version : "";
    r->converted_reader_version = conv->reader->desc && conv->reader->desc->version
                                      ? conv->reader->desc->version : "";
    if (!r->source_path || !r->converted_path || !r->source_format || !r->converted_format ||
        !r->source_reader || !r->converted_reader || !r->source_summary) {
        rc = qbh_error_set(QB_E_NOMEM, "verify: out of memory");
        goto out;
    }

    /* Source side: every tensor must have its converted counterpart. */
    for (i = 0; i < ns; i++) {
        const qb_tensor_info *si = &src->tensors[i];
        qbh_verify_tensor *t = &r->t[r->n];
        const char *cname = si->name;
        if (!find(conv, cname, &k) && strcmp(si->name, HEAD) == 0 && conv_tied &&
            find(conv, EMBED, &k))
            cname = EMBED; /* a tied model serves the head from the embeddings */
        if (!find(conv, cname, &k)) {
            rc = tensor_init(t, si, si->source_encoding, NULL);
            r->n++;
            if (rc)
                goto out;
            t->state = QBH_VT_MISSING;
            snprintf(t->reason, sizeof t->reason, "not in the converted model%s",
                     strcmp(si->name, HEAD) == 0 && !conv_tied
                         ? " (and its config does not say tie_word_embeddings: true)"
                         : "");
            continue;
        }
        used[k] = 1;
        rc = tensor_init(t, si, si->source_encoding, conv->tensors[k].source_encoding);
        r->n++;
        if (rc)
            goto out;
        t->conv_quantized = conv->tensors[k].source_dtype == QB_DT_QUANTIZED;
        if (cname != si->name &&
            !(t->compared_with = qbh_strdup("converted " EMBED_S " (tied head)"))) {
            rc = qbh_error_set(QB_E_NOMEM, "verify: out of memory");
            goto out;
        }
        if (!same_shape(si, &conv->tensors[k])) {
            char a[64], b[64];
            shape_str(si, a, sizeof a);
            shape_str(&conv->tensors[k], b, sizeof b);
            t->state = QBH_VT_SHAPE;
            snprintf(t->reason, sizeof t->reason, "shape %s in the source, %s converted", a, b);
            continue;
        }
        ctx.jobs[ctx.n_jobs].si = i;
        ctx.jobs[ctx.n_jobs].ci = k;
        ctx.jobs[ctx.n_jobs].t = t;
        ctx.n_jobs++;
    }
    /* Converted side: anything not matched is extra, except a head the
     * converted model keeps while the (tied) source serves it from its
     * embeddings: that one is compared with the source embeddings. */
    for (k = 0; k < nc; k++) {
        const qb_tensor_info *ci = &conv->tensors[k];
        qbh_verify_tensor *t = &r->t[r->n];
        size_t si_idx;
        if (used[k])
            continue;
        if (strcmp(ci->name, HEAD) == 0 && src_tied && !find(src, HEAD, &si_idx) &&
            find(src, EMBED, &si_idx) && same_shape(ci, &src->tensors[si_idx])) {
            rc = tensor_init(t, ci, src->tensors[si_idx].source_encoding, ci->source_encoding);
            r->n++;
            if (rc)
                goto out;
            t->conv_quantized = ci->source_dtype == QB_DT_QUANTIZED;
            if (!(t->compared_with = qbh_strdup("source " EMBED_S " (tied head)"))) {
                rc = qbh_error_set(QB_E_NOMEM, "verify: out of memory");
                goto out;
            }
            ctx.jobs[ctx.n_jobs].si = si_idx;
            ctx.jobs[ctx.n_jobs].ci = k;
            ctx.jobs[ctx.n_jobs].t = t;
            ctx.n_jobs++;
            continue;
        }
        rc = tensor_init(t, ci, NULL, ci->source_encoding);
        r->n++;
        if (rc)
            goto out;
        t->conv_quantized = ci->source_dtype == QB_DT_QUANTIZED;
        t->state = QBH_VT_EXTRA;
        snprintf(t->reason, sizeof t->reason, "in the converted model only");
    }

    rc = qbh_verify_declared(conv, src, o->plan, &decl);
    if (rc)
        goto out;
    for (i = 0; i < ctx.n_jobs && rc == QB_OK; i++) {
        const char *aware = g_hash_table_lookup(decl.aware, conv->tensors[ctx.jobs[i].ci].name);
        rc = pick_rule(conv, ctx.jobs[i].ci, &decl, o, &ctx.jobs[i].rule);
        if (aware)
            snprintf(ctx.jobs[i].t->quant_rule, sizeof ctx.jobs[i].t->quant_rule, "%s", aware);
    }
    qbh_verify_decl_free(&decl);
    if (rc)
        goto out;
    ctx.src = src;
    ctx.conv = conv;
    ctx.o = o;
    atomic_init(&ctx.done, 0);
    rc = qbh_parallel_for(ctx.n_jobs, compare_one, &ctx);
    qbh_progress_done();
    if (rc)
        goto out;

    recount(r);
    *out = r;
    r = NULL;
out:
    qbh_verify_result_free(r);
    qbh_free(used);
    for (i = 0; ctx.jobs && i < ns + nc + 1; i++)
        qbh_vb_rule_free(&ctx.jobs[i].rule);
    qbh_free(ctx.jobs);
    return rc;
}

void qbh_verify_result_free(qbh_verify_result *r)
{
    size_t i;
    if (!r)
        return;
    for (i = 0; r->t && i < r->n; i++) {
        qbh_free(r->t[i].name);
        qbh_free(r->t[i].compared_with);
        qbh_free(r->t[i].encoding);
        qbh_free(r->t[i].conv_encoding);
    }
    qbh_free(r->t);
    qbh_free(r->source_path);
    qbh_free(r->converted_path);
    qbh_free(r->source_format);
    qbh_free(r->converted_format);
    qbh_free(r->source_reader);
    qbh_free(r->converted_reader);
    qbh_free(r->source_summary);
    qbh_free(r);
}

int qbh_verify_exact_codes(const qbh_verify_result *r)
{
    size_t i, n = 0;
    for (i = 0; i < r->n; i++) {
        const qbh_verify_tensor *t = &r->t[i];
        if (!t->conv_quantized)
            continue;
        if (t->rule != QBH_VB_EXACT || t->state != QBH_VT_OK)
            return 0;
        n++;
    }
    return n > 0;
}

const char *qbh_verify_reader_for(const qbh_registry *reg, const char *name)
{
    const qbh_plugin *p = name ? qbh_registry_find(reg, name) : NULL;
    const qb_writer_caps *c;
    if (!p || p->state != QBH_LOAD_OK || p->desc->reader)
        return name;
    c = qbh_writer_caps(p->desc);
    return c && c->verify_reader ? c->verify_reader : name;
}

qb_status qbh_verify_after_convert(const qbh_registry *reg, qbh_source *src, const char *output,
                                   const qbh_plugin *writer, const qbh_plan *plan,
                                   qb_linear_backend_open_fn linears, int *failed)
{
    const qb_writer_caps *caps = qbh_writer_caps(writer->desc);
    const char *format = NULL;
    qbh_source conv;
    qbh_params params;
    qbh_verify_opts o;
    qbh_verify_result *r = NULL;
    qb_status rc;
    int usage = 0;

    *failed = 0;
    qbh_verify_opts_default(&o);
    o.plan = plan;
    if (caps && caps->verify_reader) {
        const qbh_plugin *vr = qbh_registry_find(reg, caps->verify_reader);
        if (vr && vr->state == QBH_LOAD_OK && vr->desc->reader)
            format = caps->verify_reader;
        else
            qbh_log(QB_LOG_WARN, NULL, "--verify: writer %s names %s as the reader of its "
                    "output, which is not a loaded reader; probing %s instead", writer->name,
                    caps->verify_reader, output);
    }
    rc = qbh_verify_open(reg, output, format, NULL, 0, &conv, &params, &usage);
    if (rc) {
        char keep[1536];
        snprintf(keep, sizeof keep, "%s", qbh_error_message());
        return qbh_error_set(rc, "--verify: cannot read back %s (the output was kept): %s",
                             output, keep);
    }
    printf("quantbridge: verifying %s against %s\n", output, src->path);
    rc = qbh_verify_sources(src, &conv, &o, &r);
    if (rc == QB_OK) {
        int mc_pass = 1, judged = 0;
        char why_not[256] = "";
        qbh_verify_print_summary(stdout, r);
        rc = qbh_model_check_report(stdout, src, &conv, qbh_verify_exact_codes(r), linears,
                                    &mc_pass, &judged, why_not, sizeof why_not);
        fflush(stdout);
        if (rc == QB_OK && r->n_at_output) {
            /* printed before the check ran: say the outcome of those */
            qbh_verify_settle_output(r, judged, why_not);
            if (judged)
                printf("quantbridge: %zu tensor(s) of activation-aware rules judged at the "
                       "model's output (model verdict above)\n", r->n_at_output);
        }
        if (rc == QB_OK && r->pass && !mc_pass) {
            char why[1024];
            snprintf(why, sizeof why, "%s", qbh_error_message());
            *failed = 1;
            rc = qbh_error_set(QB_E_MISMATCH, "--verify: %s does not match %s: %s; the output "
                               "was kept for inspection", output, src->path, why);
        } else if (rc == QB_OK && !r->pass) {
            size_t w;
            const char *what = "";
            const char *why = "";
            for (w = 0; w < r->n; w++)
                if (r->t[w].state != QBH_VT_OK) {
                    what = r->t[w].name;
                    why = r->t[w].reason;
                    break;
                }
            *failed = 1;
            rc = qbh_error_set(QB_E_MISMATCH,
                               "--verify: %s does not match %s (%zu failed, %zu missing, %zu "
                               "extra, %zu of another shape; first: %s: %s); the output was "
                               "kept for inspection",
                               output, src->path, r->n_failed, r->n_missing, r->n_extra,
                               r->n_shape, what, why);
        }
    }
    qbh_verify_result_free(r);
    qbh_source_close(&conv);
    qbh_params_free(&params);
    return rc;
}
