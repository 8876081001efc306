/*
 * sm86-w4a16 — planning the output before any byte is written.
 *
 * Every source tensor is classified by its canonical Hugging Face name
 * (qb_tensor.h) against the architecture's role table (arch.c):
 *   model.embed_tokens.weight          -> embed.safetensors  embed_tokens.weight F16
 *   model.norm.weight                  -> norm.safetensors   norm.weight F16
 *   lm_head.weight                     -> lm_head.safetensors (F16 or packed), or,
 *                                         when tied, checked equal to the embeddings
 *   model.layers.N.<linear>.weight     -> layer_NN.safetensors <linear>.packed/.scales
 *   model.layers.N.<linear>.bias       -> <linear>.bias F16
 *   model.layers.N.<norm>.weight       -> <norm>.weight F16
 *   model.layers.N.<router>.weight     -> <router>.weight F16 (MoE routers)
 *   model.layers.N.mlp.gate.e_score_correction_bias
 *                                      -> the same path F32 (DeepSeek-V3 router bias)
 * Expert roles (block_sparse_moe.experts.E.w1, mlp.experts.E.gate_proj ...)
 * are expanded per layer by layout.c from config.json: every expert of
 * every MoE layer must be present, an expert index at or above the
 * config's count, or a MoE tensor in a dense layer (or the reverse), is an
 * error naming the tensor; MoE tensors' shapes are checked against the
 * config's widths. A fused source tensor the format stores split (phi3's
 * qkv_proj, gate_up_proj: arch.c w4w_fused) becomes one item per part, each
 * a row range of the source sized from config.json; fused and split forms
 * of one projection together are an error. Anything else is an error
 * naming the tensor; so is a missing role. All
 * shapes are checked against each other and against config.json, and each
 * file's tensor list and byte sizes are fixed here, so every safetensors
 * header can be written before its data is streamed.
 */
#include "w4w.h"
#include "w4a16_int4.h"

#include "w4a16_names.h"

#include <quantbridge/base/qb_archs.h>

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qbk_alloc.h"
#include "qbk_json.h"

#define NONE ((size_t)-1)

typedef struct builder {
    const qb_host *h;
    const qb_model_src *src;
    const char *sp; /* source path for messages */
    w4w_plan *p;
    size_t cap_files, cap_outs;
    /* set while planning the parts of a fused expert source (w4w_xfused):
     * add_item copies it into the item, with the part's rows and cols */
    int vset, vtrans;
    int64_t vexp, vstride, voff, vrows, vcols;
} builder;

static const qb_tensor_info *tinfo(const builder *b, size_t i)
{
    const qb_tensor_info *ti = NULL;
    if (b->src->tensor_info(b->src->handle, i, &ti) != QB_OK)
        return NULL;
    return ti;
}

static qb_status add_file(builder *b, const char *name)
{
    w4w_plan *p = b->p;
    if (p->n_files == b->cap_files) {
        size_t cap = b->cap_files ? b->cap_files * 2 : 16;
        w4w_file *nf = qbk_realloc(p->files, cap * sizeof *nf);
        if (!nf)
            return b->h->set_error(b->h, QB_E_NOMEM, "%s: out of memory planning files", b->sp);
        p->files = nf;
        b->cap_files = cap;
    }
    memset(&p->files[p->n_files], 0, sizeof p->files[0]);
    snprintf(p->files[p->n_files].name, sizeof p->files[0].name, "%s", name);
    p->files[p->n_files].first_out = p->n_outs;
    p->n_files++;
    return QB_OK;
}

/* Appends an output tensor to the last file. */
static qb_status add_out(builder *b, const char *name, const char *dtype, uint32_t n_dims,
                         const int64_t *dims, uint64_t elem_bytes)
{
    w4w_plan *p = b->p;
    w4w_st_tensor *t;
    uint64_t n = elem_bytes;
    uint32_t d;
    if (p->n_outs == b->cap_outs) {
        size_t cap = b->cap_outs ? b->cap_outs * 2 : 64;
        w4w_st_tensor *no = qbk_realloc(p->outs, cap * sizeof *no);
        if (!no)
            return b->h->set_error(b->h, QB_E_NOMEM, "%s: out of memory planning tensors", b->sp);
        p->outs = no;
        b->cap_outs = cap;
    }
    t = &p->outs[p->n_outs];
    memset(t, 0, sizeof *t);
    t->name = qbk_strdup(name);
    if (!t->name)
        return b->h->set_error(b->h, QB_E_NOMEM, "%s: out of memory planning tensors", b->sp);
    t->dtype = dtype;
    t->n_dims = n_dims;
    for (d = 0; d < n_dims; d++) {
        t->dims[d] = dims[d];
        n *= (uint64_t)dims[d];
    }
    t->n_bytes = n;
    p->n_outs++;
    p->files[p->n_files - 1].n_out++;
    return QB_OK;
}

static w4w_item *add_item(builder *b, size_t src, w4w_item_kind kind)
{
    w4w_plan *p = b->p;
    const qb_tensor_info *ti = tinfo(b, src);
    w4w_item *it = &p->items[p->n_items++];
    memset(it, 0, sizeof *it);
    it->src = src;
    it->kind = kind;
    it->file = kind == W4W_ITEM_TIED ? -1 : (int32_t)(p->n_files - 1);
    it->out = p->n_outs;
    it->name = ti->name;
    it->source_encoding = ti->source_encoding ? ti->source_encoding : "";
    it->rows = qb_tensor_rows(ti);
    it->cols = qb_tensor_cols(ti);
    if (b->vset) {
        it->view = 1;
        it->vtrans = b->vtrans;
        it->vexp = b->vexp;
        it->vstride = b->vstride;
        it->voff = b->voff;
        it->rows = b->vrows;
        it->cols = b->vcols;
    }
    if (p->item_of_src[src] == NONE) /* a fused source's first part */
        p->item_of_src[src] = p->n_items - 1;
    return it;
}

static qb_status plan_f16(builder *b, size_t src, const char *out_name)
{
    const qb_tensor_info *ti = tinfo(b, src);
    w4w_item *it = add_item(b, src, W4W_ITEM_F16);
    if (it->view) /* a part's bias: one row */
        return add_out(b, out_name, "F16", 1, &it->cols, 2);
    return add_out(b, out_name, "F16", ti->n_dims, ti->dims, 2);
}

static qb_status plan_f32(builder *b, size_t src, const char *out_name)
{
    const qb_tensor_info *ti = tinfo(b, src);
    add_item(b, src, W4W_ITEM_F32);
    return add_out(b, out_name, "F32", ti->n_dims, ti->dims, 4);
}

/* act_order=permute: for a grid whose column-to-group map is not the
 * contiguous c / gs, the stable order of columns by group makes groups
 * contiguous (GPTQ desc_act g_idx, see docs/formats/gptq.md "Act-order and g_idx"); usable when no target
 * group then straddles two source groups. Sets it->perm or leaves it NULL
 * (the tensor is then requantized in source order). */
static qb_status plan_perm(builder *b, w4w_item *it)
{
    const qb_host *h = b->h;
    qb_grid_info gi;
    const qb_tensor_info *ti = tinfo(b, it->src);
    int64_t cols = it->cols, gs = b->p->opt.group_size, c, tg, n, sgs;
    int32_t *perm = NULL;
    size_t *count = NULL, *next = NULL;
    qb_status rc;

    if (!ti->has_grid)
        return QB_OK;
    memset(&gi, 0, sizeof gi);
    gi.struct_size = sizeof gi;
    rc = b->src->get_grid_info(b->src->handle, it->src, &gi);
    if (rc == QB_E_UNSUPPORTED)
        return QB_OK;
    if (rc != QB_OK)
        return rc;
    if (!gi.col_group || gi.n_groups < 1)
        return QB_OK;
    for (sgs = 0; sgs < cols && gi.col_group[sgs] == 0; sgs++)
        ;
    for (c = 0; c < cols && sgs > 0 && gi.col_group[c] == (int32_t)(c / sgs); c++)
        ;
    if (c == cols)
        return QB_OK; /* trivial map: the plain exact repack applies */
    perm = qbk_malloc((size_t)cols * sizeof *perm);
    count = qbk_calloc(gi.n_groups + 1, sizeof *count);
    next = qbk_calloc(gi.n_groups + 1, sizeof *next);
    if (!perm || !count || !next) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", b->sp, it->name);
        goto out;
    }
    for (c = 0; c < cols; c++) {
        int32_t g = gi.col_group[c];
        if (g < 0 || (uint32_t)g >= gi.n_groups) {
            rc = h->set_error(h, QB_E_FORMAT, "%s: %s: column %lld maps to group %d of %u", b->sp,
                              it->name, (long long)c, (int)g, gi.n_groups);
            goto out;
        }
        count[g + 1]++;
    }
    for (n = 1; n <= (int64_t)gi.n_groups; n++)
        count[n] += count[n - 1]; /* count[g] = first sorted position of group g */
    for (c = 0; c < cols; c++) {
        int32_t g = gi.col_group[c];
        perm[count[g] + next[g]++] = (int32_t)c;
    }
    for (tg = 0; tg * gs < cols; tg++) {
        int64_t c0 = tg * gs, c1 = (c0 + gs < cols ? c0 + gs : cols) - 1;
        if (gi.col_group[perm[c0]] != gi.col_group[perm[c1]]) {
            h->log(h, QB_LOG_INFO,
                   "%s: act-order groups do not align with group_size %lld: requantizing", it->name,
                   (long long)gs);
            goto out;
        }
    }
    it->perm = perm;
    perm = NULL;
    b->p->has_perm = 1;
out:
    qbk_free(perm);
    qbk_free(count);
    qbk_free(next);
    return rc;
}

typedef struct imp_col {
    float v;
    int32_t c;
} imp_col;

/* Descending importance, ties in column order: a stable, total order. */
static int imp_desc(const void *x, const void *y)
{
    const imp_col *a = x, *b = y;
    if (a->v != b->v)
        return a->v > b->v ? -1 : 1;
    return a->c < b->c ? -1 : a->c > b->c;
}

/* act_order=permute with quant_rule=gptq: GPTQ's act order (its reference
 * code's act_order / desc_act) for a linear the plan requantizes anyway (an
 * exact one keeps its codes): columns by descending diag(H), which is the
 * importance (mean x^2, qb_stats_api.importance), stored in that order
 * with <base>.perm, so groups gather columns of like importance and the
 * most important are quantized first, while the most columns remain to
 * take their error. Sets it->perm or leaves it NULL (no statistics). */
static qb_status plan_gptq_perm(builder *b, w4w_item *it)
{
    const qb_host *h = b->h;
    uint32_t action = 0;
    char why[512];
    float *imp = NULL;
    imp_col *ic = NULL;
    int32_t *perm = NULL;
    int64_t c;
    qb_status rc;

    if (it->view || !QB_HAS_FIELD(h, qb_host, stats) || !h->stats)
        return QB_OK;
    rc = w4w_linear_action(b->p, b->src, it, &action, why, sizeof why);
    if (rc != QB_OK || action == QB_PLAN_EXACT)
        return rc;
    imp = qbk_malloc((size_t)it->cols * sizeof *imp);
    ic = qbk_malloc((size_t)it->cols * sizeof *ic);
    perm = qbk_malloc((size_t)it->cols * sizeof *perm);
    if (!imp || !ic || !perm) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", b->sp, it->name);
        goto out;
    }
    rc = h->stats->importance(h, b->src, it->src, imp, it->cols, NULL);
    if (rc == QB_E_NOT_FOUND) {
        rc = QB_OK;
        goto out;
    }
    if (rc != QB_OK)
        goto out;
    for (c = 0; c < it->cols; c++) {
        ic[c].v = imp[c];
        ic[c].c = (int32_t)c;
    }
    qsort(ic, (size_t)it->cols, sizeof *ic, imp_desc);
    for (c = 0; c < it->cols; c++)
        perm[c] = ic[c].c;
    it->perm = perm;
    it->perm_gptq = 1;
    perm = NULL;
    b->p->has_perm = 1;
out:
    qbk_free(imp);
    qbk_free(ic);
    qbk_free(perm);
    return rc;
}

/* A linear: <base>.packed U8 [rows, ceil(cols/2)], <base>.scales F16
 * [rows, ceil(cols/group_size)], with act_order=permute possibly
 * <base>.perm I32 [cols]; manifest key "<file>:<base>". With rows >= 0 the
 * linear is source rows [row0, row0 + rows) (a part of a fused tensor). */
static qb_status plan_linear(builder *b, size_t src, const char *base, int64_t row0, int64_t rows)
{
    w4w_plan *p = b->p;
    const w4w_file *f = &p->files[p->n_files - 1];
    w4w_item *it = add_item(b, src, W4W_ITEM_LINEAR);
    char name[512];
    int64_t dims[2];
    qb_status rc;
    size_t kl = strlen(f->name) + strlen(base) + 2;

    if (rows >= 0) {
        it->row0 = row0;
        it->rows = rows;
    }
    it->key = qbk_malloc(kl);
    if (!it->key)
        return b->h->set_error(b->h, QB_E_NOMEM, "%s: out of memory", b->sp);
    snprintf(it->key, kl, "%s:%s", f->name, base);
    dims[0] = it->rows;
    dims[1] = w4a16_int4_packed_bytes(it->cols);
    snprintf(name, sizeof name, "%s.packed", base);
    rc = add_out(b, name, "U8", 2, dims, 1);
    if (rc != QB_OK)
        return rc;
    dims[1] = w4a16_int4_n_groups(it->cols, p->opt.group_size);
    snprintf(name, sizeof name, "%s.scales", base);
    rc = add_out(b, name, "F16", 2, dims, 2);
    if (rc != QB_OK || !p->opt.act_order_permute)
        return rc;
    rc = plan_perm(b, it);
    if (rc == QB_OK && !it->perm && p->opt.rule == W4W_RULE_GPTQ)
        rc = plan_gptq_perm(b, it);
    if (rc != QB_OK || !it->perm)
        return rc;
    snprintf(name, sizeof name, "%s.perm", base);
    return add_out(b, name, "I32", 1, &it->cols, 4);
}

/* Parses "model.layers.<N>.<rest>" with N decimal without leading zeros.
 * Returns 1 and sets layer and rest on a match, 0 otherwise. */
static int parse_layer_name(const char *name, int64_t *layer, const char **rest)
{
    static const char pre[] = "model.layers.";
    const char *s = name + sizeof pre - 1;
    int64_t v = 0;
    int nd = 0;
    if (strncmp(name, pre, sizeof pre - 1) != 0)
        return 0;
    if (s[0] == '0' && s[1] >= '0' && s[1] <= '9')
        return 0;
    while (*s >= '0' && *s <= '9') {
        if (v > (INT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (*s - '0');
        s++;
        nd++;
    }
    if (nd == 0 || *s != '.')
        return 0;
    *layer = v;
    *rest = s + 1;
    return 1;
}

/* Finds the role whose path is rest minus ".weight"/".bias"; *expert is
 * the expert index of an expert role, else -1. Returns the role index or
 * -1. */
static int match_role(const w4w_arch *a, const char *rest, int *is_bias, int64_t *expert)
{
    size_t len = strlen(rest), i;
    size_t plen;
    /* bare parameters and F32 roles are whole tensor paths without a
     * .weight suffix */
    for (i = 0; i < a->n_roles; i++)
        if ((a->roles[i].kind == W4W_ROLE_PARAM || a->roles[i].kind == W4W_ROLE_F32) &&
            strcmp(rest, a->roles[i].path) == 0) {
            *is_bias = 0;
            *expert = -1;
            return (int)i;
        }
    if (len > 7 && strcmp(rest + len - 7, ".weight") == 0) {
        plen = len - 7;
        *is_bias = 0;
    } else if (len > 5 && strcmp(rest + len - 5, ".bias") == 0) {
        plen = len - 5;
        *is_bias = 1;
    } else {
        return -1;
    }
    for (i = 0; i < a->n_roles; i++) {
        const w4w_role *r = &a->roles[i];
        int64_t e = -1;
        if (r->kind != W4W_ROLE_PARAM && w4w_role_match(r, rest, plen, &e)) {
            if (*is_bias && ((r->kind != W4W_ROLE_LINEAR && r->kind != W4W_ROLE_ROUTER) ||
                             r->bias == W4W_BIAS_NONE))
                return -1;
            *expert = e;
            return (int)i;
        }
    }
    return -1;
}

/* Integer member of the config, or `def` when absent. -2 when present but
 * not a non-negative integer. */
static int64_t cfg_int(const cJSON *cfg, const char *key, int64_t def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!v || cJSON_IsNull(v))
        return def;
    /* Range first: casting a double outside int64 (1e300, inf) is undefined. */
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1e15) ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        return -2;
    return (int64_t)v->valuedouble;
}

/* What planning learns about the source, from one phase to the next. */
typedef struct plan_state {
    builder b;                    /* b.h, b.src, b.sp and the plan being built, b.p */
    const w4w_options *opt;
    const w4w_arch *a;
    cJSON *cfg;                   /* the source's config.json */
    w4w_layout lo;
    int64_t L, hidden, vocab;     /* hidden / vocab -1 until known */
    size_t K, nt, nx;             /* role slots per layer, source tensors, fused expert sources */
    const w4w_xfused *xf;         /* fused expert sources (gpt-oss) */
    w4w_inst *inst;               /* [K] a layer's role instances */
    size_t *slot_w, *slot_b;      /* [layer * K + slot] source tensor, NONE */
    size_t *fslot;                /* [layer * n_fused + f] fused source */
    int64_t *part_r0, *part_rows; /* [layer * K + slot], -1: whole tensor */
    size_t *xslot;                /* [layer * nx + f]: <path>, then <path>_bias */
    int8_t *vq;                   /* [layer * K + slot]: part of a w4w_xfused, -1 */
    size_t embed, fnorm, head;    /* source tensors, NONE */
    const w4w_global *gl;         /* model-level extras (w4w_arch_globals) */
    size_t ngl;
    size_t gslot[4];              /* their source tensors, NONE */
} plan_state;

static void plan_state_free(plan_state *s)
{
    w4w_plan_free(s->b.p);
    qbk_free(s->slot_w);
    qbk_free(s->slot_b);
    qbk_free(s->inst);
    qbk_free(s->fslot);
    qbk_free(s->part_r0);
    qbk_free(s->part_rows);
    qbk_free(s->xslot);
    qbk_free(s->vq);
    w4w_layout_free(&s->lo);
    cJSON_Delete(s->cfg);
}

/* The architecture, the config's sizes and layout, and the plan and slot
 * tables, every slot empty. */
static qb_status plan_begin(plan_state *s, const qb_host *h, const qb_model_src *src,
                            const w4w_options *opt)
{
    const qb_model_info *mi = src->info;
    const cJSON *tie;
    w4w_plan *p;
    size_t i;
    int64_t L;
    qb_status rc;

    s->b.h = h;
    s->b.src = src;
    s->b.sp = src->source_path ? src->source_path : "source";
    s->opt = opt;
    s->nt = mi->n_tensors;
    s->embed = s->fnorm = s->head = NONE;
    for (i = 0; i < sizeof s->gslot / sizeof s->gslot[0]; i++)
        s->gslot[i] = NONE;
    s->a = w4w_arch_find(mi->architecture);
    if (!s->a)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: architecture '%s' is not supported by %s%s",
                            s->b.sp, mi->architecture ? mi->architecture : "(none)",
                            W4W_PLUGIN_NAME,
                            /* the one architecture table (qb_archs.h) */
                            qb_arch_find(mi->architecture)
                                ? " (a family quantbridge knows; the format has no layout for it)"
                                : " (not a family quantbridge knows)");
    if ((rc = qbk_json_parse_config(h, s->b.sp, mi->config_json, &s->cfg)) != QB_OK)
        return rc;
    L = s->L = cfg_int(s->cfg, "num_hidden_layers", -1);
    if (L < 1 || L > 100000)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: config.json: num_hidden_layers missing or not a positive integer",
                            s->b.sp);
    s->hidden = cfg_int(s->cfg, "hidden_size", -1);
    s->vocab = cfg_int(s->cfg, "vocab_size", -1);
    if (s->hidden == -2 || s->vocab == -2)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: config.json: hidden_size/vocab_size not an integer", s->b.sp);
    tie = cJSON_GetObjectItemCaseSensitive(s->cfg, "tie_word_embeddings");
    if (tie && !cJSON_IsBool(tie))
        return h->set_error(h, QB_E_FORMAT,
                            "%s: config.json: tie_word_embeddings is not a boolean", s->b.sp);
    if ((rc = w4w_layout_init(h, s->b.sp, s->a, s->cfg, L, &s->lo)) != QB_OK)
        return rc;
    s->K = s->lo.per_layer;
    s->xf = w4w_arch_xfused(s->a, &s->nx);
    s->gl = w4w_arch_globals(s->a, &s->ngl);
    if (s->ngl > sizeof s->gslot / sizeof s->gslot[0])
        return h->set_error(h, QB_E_INTERNAL, "%s: too many model-level tensors", s->b.sp);
    p = s->b.p = qbk_calloc(1, sizeof *p);
    if (p)
        p->items = qbk_calloc(s->nt + (size_t)L * 2 * s->a->n_fused + 1 +
                                  (size_t)L * s->nx * 4 * (size_t)s->lo.n_experts,
                              sizeof *p->items);
    if (p)
        p->item_of_src = qbk_malloc((s->nt ? s->nt : 1) * sizeof *p->item_of_src);
    s->slot_w = qbk_malloc((size_t)L * s->K * sizeof *s->slot_w);
    s->slot_b = qbk_malloc((size_t)L * s->K * sizeof *s->slot_b);
    s->inst = qbk_malloc(s->K * sizeof *s->inst);
    s->fslot = qbk_malloc(((size_t)L * s->a->n_fused + 1) * sizeof *s->fslot);
    s->part_r0 = qbk_malloc((size_t)L * s->K * sizeof *s->part_r0);
    s->part_rows = qbk_malloc((size_t)L * s->K * sizeof *s->part_rows);
    s->xslot = qbk_malloc(((size_t)L * s->nx * 2 + 1) * sizeof *s->xslot);
    s->vq = qbk_malloc((size_t)L * s->K + 1);
    if (!p || !p->items || !p->item_of_src || !s->slot_w || !s->slot_b || !s->inst ||
        !s->fslot || !s->part_r0 || !s->part_rows || !s->xslot || !s->vq)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory planning", s->b.sp);
    p->arch = s->a;
    p->n_layers = L;
    p->tied = tie ? cJSON_IsTrue(tie) : s->a->tie_default;
    p->opt = *opt;
    for (i = 0; i < (size_t)L * s->K; i++) {
        s->slot_w[i] = s->slot_b[i] = NONE;
        s->part_r0[i] = s->part_rows[i] = -1;
        s->vq[i] = -1;
    }
    for (i = 0; i < (size_t)L * s->nx * 2; i++)
        s->xslot[i] = NONE;
    for (i = 0; i < (size_t)L * s->a->n_fused; i++)
        s->fslot[i] = NONE;
    for (i = 0; i < s->nt; i++)
        p->item_of_src[i] = NONE;
    return QB_OK;
}

/* Index of the model-level extra named `name`, or -1. */
static int global_of(const plan_state *s, const char *name)
{
    size_t g;
    for (g = 0; g < s->ngl; g++)
        if (strcmp(s->gl[g].name, name) == 0)
            return (int)g;
    return -1;
}

/* 1. Classifies every source tensor by its name into the slot of its role
 * (a layer's role and expert, embeddings, final norm, head, a fused
 * source): an unknown tensor, one outside the config's layers or experts,
 * a MoE tensor in a dense layer (or the reverse), or a tensor twice is an
 * error naming it. */
static qb_status plan_classify(plan_state *s)
{
    builder *b = &s->b;
    const qb_host *h = b->h;
    const w4w_arch *a = s->a;
    const size_t K = s->K;
    const int64_t L = s->L;
    const size_t nt = s->nt;
    const cJSON *cfg = s->cfg;
    const w4w_xfused *xf = s->xf;
    const size_t nx = s->nx;
    size_t *slot_w = s->slot_w;
    size_t *slot_b = s->slot_b;
    size_t *fslot = s->fslot;
    size_t *xslot = s->xslot;
    const w4w_layout *lo = &s->lo;
    size_t i;
    int64_t l;

    for (i = 0; i < nt; i++) {
        const qb_tensor_info *ti = tinfo(b, i);
        const char *rest;
        size_t *slot = NULL;
        int role, is_bias;
        int64_t e = -1;
        if (!ti || !ti->name)
            return h->set_error(h, QB_E_INTERNAL, "%s: tensor %zu has no description", b->sp, i);
        if (strcmp(ti->name, "model.embed_tokens.weight") == 0) {
            slot = &s->embed;
        } else if (strcmp(ti->name, "model.norm.weight") == 0) {
            slot = &s->fnorm;
        } else if (strcmp(ti->name, "lm_head.weight") == 0) {
            slot = &s->head;
        } else if (global_of(s, ti->name) >= 0) {
            size_t g = (size_t)global_of(s, ti->name);
            if (lo->width[s->gl[g].when] < 1)
                return h->set_error(h, QB_E_FORMAT,
                                    "%s: %s: unexpected: config.json does not set %s", b->sp,
                                    ti->name, w4w_width_key(s->gl[g].when));
            slot = &s->gslot[g];
        } else if (parse_layer_name(ti->name, &l, &rest) && l >= L &&
                   cfg_int(cfg, "num_nextn_predict_layers", 0) > 0) {
            /* DeepSeek's MTP module (w4a16-format.md, "DeepSeek-V2 / V3 layers") */
            return h->set_error(h, QB_E_FORMAT,
                                "%s: %s: a multi-token-prediction layer "
                                "(num_nextn_predict_layers), which %s does not store; read the "
                                "source with --option mtp=drop",
                                b->sp, ti->name, W4W_PLUGIN_NAME);
        } else if (parse_layer_name(ti->name, &l, &rest) &&
                   (role = match_role(a, rest, &is_bias, &e)) >= 0) {
            size_t k;
            if (l >= L)
                return h->set_error(h, QB_E_FORMAT,
                                    "%s: %s: layer %lld outside num_hidden_layers = %lld", b->sp,
                                    ti->name, (long long)l, (long long)L);
            if (e >= lo->n_experts)
                return h->set_error(h, QB_E_FORMAT,
                                    "%s: %s: expert %lld outside config.json %s = %lld", b->sp,
                                    ti->name, (long long)e, a->experts_key,
                                    (long long)lo->n_experts);
            {
                /* a role gated by a config width (w4w_role.when): say which */
                int when = a->roles[role].when;
                int64_t wv = when ? lo->width[when > 0 ? when : -when] : 0;
                if ((when > 0 && wv < 1) || (when < 0 && wv >= 1))
                    return h->set_error(h, QB_E_FORMAT,
                                        "%s: %s: unexpected: config.json %s %s", b->sp, ti->name,
                                        when > 0 ? "does not set" : "sets",
                                        w4w_width_key(when > 0 ? when : -when));
            }
            if (!w4w_layout_active(lo, l, (size_t)role))
                return h->set_error(h, QB_E_FORMAT,
                                    "%s: %s: unexpected: config.json makes layer %lld a %s layer",
                                    b->sp, ti->name, (long long)l,
                                    lo->sparse[l] ? "mixture-of-experts" : "dense-MLP");
            k = (size_t)l * K + lo->role_off[role] + (size_t)(e < 0 ? 0 : e);
            slot = is_bias ? &slot_b[k] : &slot_w[k];
        }
        if (!slot && parse_layer_name(ti->name, &l, &rest) && l < L) {
            size_t f;
            for (f = 0; f < a->n_fused && !slot; f++) {
                size_t fl = strlen(a->fused[f].path);
                if (strncmp(rest, a->fused[f].path, fl) == 0 && strcmp(rest + fl, ".weight") == 0)
                    slot = &fslot[(size_t)l * a->n_fused + f];
            }
            for (f = 0; f < nx && !slot; f++) {
                size_t fl = strlen(xf[f].path);
                if (strncmp(rest, xf[f].path, fl) == 0 &&
                    (rest[fl] == '\0' || strcmp(rest + fl, "_bias") == 0))
                    slot = &xslot[((size_t)l * nx + f) * 2 + (rest[fl] != '\0')];
            }
        }
        if (!slot)
            return h->set_error(h, QB_E_FORMAT,
                                "%s: %s: unknown tensor: not an embedding, head, norm, linear or "
                                "bias of architecture %s",
                                b->sp, ti->name, a->model_type);
        if (*slot != NONE)
            return h->set_error(h, QB_E_FORMAT, "%s: %s: tensor appears twice", b->sp, ti->name);
        *slot = i;
    }
    return QB_OK;
}

/* Fused sources: each part takes its rows, sized from config.json, in the
 * part's slot; fused and split forms of one projection together are an
 * error. */
static qb_status plan_fused(plan_state *s)
{
    builder *b = &s->b;
    const qb_host *h = b->h;
    const w4w_arch *a = s->a;
    const size_t K = s->K;
    const int64_t L = s->L;
    size_t *slot_w = s->slot_w;
    size_t *fslot = s->fslot;
    int64_t *part_r0 = s->part_r0;
    int64_t *part_rows = s->part_rows;
    const w4w_layout *lo = &s->lo;
    int64_t l;

    for (l = 0; l < L; l++) {
        size_t f;
        for (f = 0; f < a->n_fused; f++) {
            const w4w_fused *fu = &a->fused[f];
            size_t fi = fslot[(size_t)l * a->n_fused + f], q;
            const qb_tensor_info *t;
            int64_t r0 = 0;
            if (fi == NONE)
                continue;
            t = tinfo(b, fi);
            for (q = 0; q < 3 && fu->parts[q]; q++) {
                const w4w_role *role = w4w_arch_role(a, fu->parts[q]);
                size_t si = (size_t)l * K + lo->role_off[role - a->roles];
                int64_t rows = lo->width[fu->rows[q]];
                if (slot_w[si] != NONE)
                    return h->set_error(
                        h, QB_E_FORMAT,
                        "%s: %s: present both fused and split (model.layers.%lld.%s.weight)",
                        b->sp, t->name, (long long)l, fu->parts[q]);
                if (rows < 1)
                    return h->set_error(h, QB_E_FORMAT,
                                        "%s: config.json: %s missing, needed to split %s", b->sp,
                                        w4w_width_key(fu->rows[q]), t->name);
                slot_w[si] = fi;
                part_r0[si] = r0;
                part_rows[si] = rows;
                r0 += rows;
            }
            if (t->n_dims != 2 || t->dims[0] != r0)
                return h->set_error(h, QB_E_MISMATCH,
                                    "%s: %s: %u-D with %lld rows, but its parts from config.json "
                                    "add up to %lld rows", b->sp, t->name, t->n_dims,
                                    (long long)t->dims[0], (long long)r0);
        }
    }
    return QB_OK;
}

/* Fused expert sources (gpt-oss, w4w_xfused): each expert's parts view the
 * source [experts, in, out], with its bias. */
static qb_status plan_fused_experts(plan_state *s)
{
    builder *b = &s->b;
    const qb_host *h = b->h;
    const w4w_arch *a = s->a;
    const size_t K = s->K;
    const int64_t L = s->L;
    const w4w_xfused *xf = s->xf;
    const size_t nx = s->nx;
    size_t *slot_w = s->slot_w;
    size_t *slot_b = s->slot_b;
    size_t *xslot = s->xslot;
    int8_t *vq = s->vq;
    const w4w_layout *lo = &s->lo;
    int64_t l;

    for (l = 0; l < L; l++) {
        size_t f;
        for (f = 0; f < nx; f++) {
            size_t wi = xslot[((size_t)l * nx + f) * 2], bi = xslot[((size_t)l * nx + f) * 2 + 1];
            const qb_tensor_info *t, *bt;
            int q;
            if (wi == NONE && bi == NONE)
                continue;
            if (wi == NONE)
                return h->set_error(h, QB_E_NOT_FOUND, "%s: model.layers.%lld.%s: required tensor "
                                    "missing (its bias is present)", b->sp, (long long)l,
                                    xf[f].path);
            t = tinfo(b, wi);
            if (t->n_dims != 3 || t->dims[0] != lo->n_experts || t->dims[2] % xf[f].n_parts)
                return h->set_error(h, QB_E_MISMATCH, "%s: %s: not [%s = %lld, in, out] with out "
                                    "divisible by %d", b->sp, t->name, a->experts_key,
                                    (long long)lo->n_experts, xf[f].n_parts);
            if (bi == NONE && !xf[f].no_bias)
                return h->set_error(h, QB_E_NOT_FOUND, "%s: %s_bias: required tensor missing",
                                    b->sp, t->name);
            if (bi != NONE && xf[f].no_bias)
                return h->set_error(h, QB_E_FORMAT, "%s: %s_bias: unexpected: %s has no "
                                    "expert biases", b->sp, t->name, a->model_type);
            bt = bi == NONE ? NULL : tinfo(b, bi);
            if (bt && (bt->n_dims != 2 || bt->dims[0] != t->dims[0] || bt->dims[1] != t->dims[2]))
                return h->set_error(h, QB_E_MISMATCH, "%s: %s: shape is not [%lld, %lld]", b->sp,
                                    bt->name, (long long)t->dims[0], (long long)t->dims[2]);
            for (q = 0; q < xf[f].n_parts; q++) {
                const w4w_role *role = w4w_arch_role(a, xf[f].parts[q]);
                int64_t e;
                for (e = 0; e < lo->n_experts; e++) {
                    size_t si = (size_t)l * K + lo->role_off[role - a->roles] + (size_t)e;
                    if (slot_w[si] != NONE || slot_b[si] != NONE)
                        return h->set_error(h, QB_E_FORMAT, "%s: %s: present both fused and per "
                                            "expert (expert %lld)", b->sp, t->name, (long long)e);
                    slot_w[si] = wi;
                    slot_b[si] = bi;
                    vq[si] = (int8_t)q;
                }
            }
        }
    }
    return QB_OK;
}

/* 2. The model-level extras (gemma4's per-layer inputs): present exactly
 * when their config width is set, of the config's widths. */
static qb_status plan_check_globals(plan_state *s)
{
    builder *b = &s->b;
    const qb_host *h = b->h;
    size_t g;
    for (g = 0; g < s->ngl; g++) {
        const w4w_global *gl = &s->gl[g];
        int64_t d0 = gl->d0 == W4W_IN_HIDDEN ? s->hidden : s->lo.width[gl->d0];
        int64_t d1 = gl->d1 == W4W_IN_HIDDEN ? s->hidden : s->lo.width[gl->d1];
        const qb_tensor_info *t;
        if (s->lo.width[gl->when] < 1)
            continue;
        if (s->gslot[g] == NONE)
            return h->set_error(h, QB_E_NOT_FOUND,
                                "%s: %s: required tensor missing (config.json sets %s)", b->sp,
                                gl->name, w4w_width_key(gl->when));
        t = tinfo(b, s->gslot[g]);
        if (gl->n_dims == 2 && (t->n_dims != 2 || t->dims[0] != d0 || t->dims[1] != d1))
            return h->set_error(h, QB_E_MISMATCH, "%s: %s: shape is not [%s, %s] = [%lld, %lld]",
                                b->sp, t->name, w4w_width_key(gl->d0), w4w_width_key(gl->d1),
                                (long long)d0, (long long)d1);
        if (gl->n_dims == 1 && (t->n_dims != 1 || t->dims[0] != d0))
            return h->set_error(h, QB_E_MISMATCH, "%s: %s: shape is not [%s] = [%lld]", b->sp,
                                t->name, w4w_width_key(gl->d0), (long long)d0);
    }
    return QB_OK;
}

/* 2. Presence and shapes of the model's ends: embeddings and final norm
 * (their shapes fix hidden and vocab), the head unless tied. */
static qb_status plan_check_ends(plan_state *s)
{
    builder *b = &s->b;
    const qb_host *h = b->h;
    const w4w_options *opt = s->opt;
    w4w_plan *p = b->p;

    if (s->embed == NONE || s->fnorm == NONE)
        return h->set_error(h, QB_E_NOT_FOUND, "%s: %s: required tensor missing", b->sp,
                            s->embed == NONE ? "model.embed_tokens.weight" : "model.norm.weight");
    {
        const qb_tensor_info *e = tinfo(b, s->embed);
        if (e->n_dims != 2)
            return h->set_error(h, QB_E_FORMAT, "%s: %s: expected 2 dimensions, got %u", b->sp,
                                e->name, e->n_dims);
        if ((s->hidden >= 0 && e->dims[1] != s->hidden) ||
            (s->vocab >= 0 && e->dims[0] != s->vocab))
            return h->set_error(h, QB_E_MISMATCH,
                                "%s: %s: shape [%lld, %lld] disagrees with config vocab_size %lld, "
                                "hidden_size %lld",
                                b->sp, e->name, (long long)e->dims[0], (long long)e->dims[1],
                                (long long)s->vocab, (long long)s->hidden);
        s->hidden = e->dims[1];
        s->vocab = e->dims[0];
    }
    if (s->head == NONE && !p->tied)
        return h->set_error(h, QB_E_NOT_FOUND,
                            "%s: lm_head.weight: missing while tie_word_embeddings is false",
                            b->sp);
    if (s->head != NONE) {
        const qb_tensor_info *t = tinfo(b, s->head);
        if (t->n_dims != 2 || t->dims[0] != s->vocab || t->dims[1] != s->hidden)
            return h->set_error(h, QB_E_MISMATCH,
                                "%s: %s: shape is not [%lld, %lld] (vocab, hidden)", b->sp,
                                t->name, (long long)s->vocab, (long long)s->hidden);
    }
    if (p->tied && opt->quantized_head)
        return h->set_error(h, QB_E_INVALID,
                            "%s: lm_head=quantized needs an untied head, but "
                            "tie_word_embeddings is true",
                            b->sp);
    {
        const qb_tensor_info *t = tinfo(b, s->fnorm);
        if (t->n_dims != 1 || t->dims[0] != s->hidden)
            return h->set_error(h, QB_E_MISMATCH, "%s: %s: shape is not [%lld] (hidden)", b->sp,
                                t->name, (long long)s->hidden);
    }
    return plan_check_globals(s);
}

/* 2. Presence and shapes of role instance `in` of layer l: its weight (and
 * a required bias), 2-D linears and routers, 1-D norms, MoE tensors of the
 * config's widths, the parts of a fused expert source. */
static qb_status plan_check_role(plan_state *s, int64_t l, const w4w_inst *in)
{
    builder *b = &s->b;
    const qb_host *h = b->h;
    const w4w_arch *a = s->a;
    const size_t K = s->K;
    const w4w_xfused *xf = s->xf;
    const size_t nx = s->nx;
    size_t *slot_w = s->slot_w;
    size_t *slot_b = s->slot_b;
    int8_t *vq = s->vq;
    const w4w_layout *lo = &s->lo;
    const w4w_role *role = &a->roles[in->role];
    size_t si = (size_t)l * K + lo->role_off[in->role] + (size_t)(in->expert < 0 ? 0 : in->expert);
    size_t wi = slot_w[si], bi = slot_b[si];
    const qb_tensor_info *t;
    char path[256];

    if (w4w_role_path(role, in->expert, path, sizeof path) != 0)
        return h->set_error(h, QB_E_INTERNAL, "%s: role path too long", b->sp);
    if (wi == NONE)
        return h->set_error(h, QB_E_NOT_FOUND,
                            "%s: model.layers.%lld.%s%s: required tensor missing%s", b->sp,
                            (long long)l, path, role->kind == W4W_ROLE_F32 ? "" : ".weight",
                            strstr(path, "e_score_correction_bias")
                                ? " (the router bias of noaux_tc routing)"
                                : "");
    t = tinfo(b, wi);
    if (vq[si] >= 0) {
        /* a part of a fused expert source: [E, in, out] viewed as
         * expert e's [out / n_parts, in] */
        const w4w_xfused *fu = NULL;
        int64_t want_r = role->out == W4W_IN_HIDDEN ? s->hidden : lo->width[role->out];
        int64_t want_c = role->in == W4W_IN_HIDDEN ? s->hidden : lo->width[role->in];
        size_t f;
        for (f = 0; f < nx && !fu; f++)
            if (strlen(t->name) > strlen(xf[f].path) &&
                strcmp(t->name + strlen(t->name) - strlen(xf[f].path), xf[f].path) == 0)
                fu = &xf[f];
        if (!fu || want_r < 1 || want_c < 1 || t->dims[2] / fu->n_parts != want_r ||
            t->dims[1] != want_c)
            return h->set_error(h, QB_E_MISMATCH,
                                "%s: %s: shape [%lld, %lld, %lld] is not [%s, %s, %s x %d] "
                                "= [%lld, %lld, %lld]", b->sp, t->name,
                                (long long)t->dims[0], (long long)t->dims[1],
                                (long long)t->dims[2], a->experts_key,
                                w4w_width_key(role->in), w4w_width_key(role->out),
                                fu ? fu->n_parts : 1, (long long)lo->n_experts,
                                (long long)want_c,
                                (long long)(want_r * (fu ? fu->n_parts : 1)));
        return QB_OK;
    }
    if (role->kind == W4W_ROLE_F32) {
        if (t->n_dims != 1 || t->dims[0] != lo->width[role->out])
            return h->set_error(h, QB_E_MISMATCH, "%s: %s: shape is not [%lld] (%s)", b->sp,
                                t->name, (long long)lo->width[role->out],
                                w4w_width_key(role->out));
    } else if (role->kind == W4W_ROLE_CONV) {
        /* a depthwise convolution: [channels, 1, kernel] */
        if (t->n_dims != 3 || t->dims[0] != lo->width[role->out] || t->dims[1] != 1 ||
            t->dims[2] != lo->width[role->in])
            return h->set_error(h, QB_E_MISMATCH,
                                "%s: %s: shape is not [%s, 1, %s] = [%lld, 1, %lld]", b->sp,
                                t->name, w4w_width_key(role->out), w4w_width_key(role->in),
                                (long long)lo->width[role->out], (long long)lo->width[role->in]);
    } else if (role->kind != W4W_ROLE_NORM && role->kind != W4W_ROLE_PARAM) {
        if (t->n_dims != 2 || t->dims[0] < 1 || t->dims[1] < 1)
            return h->set_error(h, QB_E_FORMAT, "%s: %s: a %s weight must be 2-D", b->sp,
                                t->name, role->kind == W4W_ROLE_ROUTER ? "router" : "linear");
        if (lo->heads_l && role->in == W4W_IN_HEADS &&
            t->dims[1] != w4w_layout_width(lo, l, W4W_IN_HEADS))
            /* gemma4: the layer's own head_dim (per_layer_config) */
            return h->set_error(h, QB_E_MISMATCH,
                                "%s: %s: %lld input columns, but config.json gives layer %lld "
                                "num_attention_heads * head_dim = %lld (per_layer_config)",
                                b->sp, t->name, (long long)t->dims[1], (long long)l,
                                (long long)w4w_layout_width(lo, l, W4W_IN_HEADS));
        if (role->out != W4W_IN_NONE) {
            /* MoE tensors: every expert of the config's width */
            int64_t want_r = lo->width[role->out], want_c = lo->width[role->in];
            if (role->in == W4W_IN_HIDDEN)
                want_c = s->hidden;
            if (role->out == W4W_IN_HIDDEN)
                want_r = s->hidden;
            if (want_r < 1 || want_c < 1)
                return h->set_error(
                    h, QB_E_FORMAT, "%s: config.json: %s missing, needed for %s", b->sp,
                    w4w_width_key(want_r < 1 ? role->out : role->in), t->name);
            if (t->dims[0] != want_r || t->dims[1] != want_c)
                return h->set_error(
                    h, QB_E_MISMATCH,
                    "%s: %s: shape [%lld, %lld] is not [%s, %s] = [%lld, %lld]", b->sp,
                    t->name, (long long)t->dims[0], (long long)t->dims[1],
                    w4w_width_key(role->out), w4w_width_key(role->in), (long long)want_r,
                    (long long)want_c);
        }
    }
    if (role->kind == W4W_ROLE_LINEAR || role->kind == W4W_ROLE_ROUTER) {
        if (bi == NONE && role->bias == W4W_BIAS_REQUIRED)
            return h->set_error(h, QB_E_NOT_FOUND,
                                "%s: model.layers.%lld.%s.bias: required tensor missing",
                                b->sp, (long long)l, path);
        if (bi != NONE) {
            const qb_tensor_info *bt = tinfo(b, bi);
            if (bt->n_dims != 1 || bt->dims[0] != t->dims[0])
                return h->set_error(h, QB_E_MISMATCH, "%s: %s: shape is not [%lld]", b->sp,
                                    bt->name, (long long)t->dims[0]);
        }
    } else if ((role->kind == W4W_ROLE_NORM || role->kind == W4W_ROLE_PARAM) &&
               (t->n_dims != 1 || (role->hidden_sized && t->dims[0] != s->hidden))) {
        return h->set_error(h, QB_E_MISMATCH, "%s: %s: a norm weight must be 1-D%s", b->sp,
                            t->name, role->hidden_sized ? " of hidden_size" : "");
    }
    return QB_OK;
}

/* 2. Presence and shapes, layer by layer. */
static qb_status plan_check_layers(plan_state *s)
{
    int64_t l;
    size_t k, n_inst;
    qb_status rc;

    for (l = 0; l < s->L; l++) {
        w4w_layout_order(&s->lo, l, s->inst, &n_inst);
        for (k = 0; k < n_inst; k++)
            if ((rc = plan_check_role(s, l, &s->inst[k])) != QB_OK)
                return rc;
    }
    return QB_OK;
}

/* 3. Layer l's file, its output tensors and write order: the role
 * instances in layout order, then the fused expert sources, one source
 * after the other (the writer takes a source's items in one write_tensor
 * call): every expert's parts, then their biases. */
static qb_status plan_layer_outputs(plan_state *s, int64_t l)
{
    builder *b = &s->b;
    const qb_host *h = b->h;
    const w4w_arch *a = s->a;
    const size_t K = s->K;
    const int64_t L = s->L;
    const w4w_xfused *xf = s->xf;
    const size_t nx = s->nx;
    size_t *slot_w = s->slot_w;
    size_t *slot_b = s->slot_b;
    int64_t *part_r0 = s->part_r0;
    int64_t *part_rows = s->part_rows;
    size_t *xslot = s->xslot;
    int8_t *vq = s->vq;
    w4w_inst *inst = s->inst;
    const w4w_layout *lo = &s->lo;
    char name[512];
    size_t n_inst, k;
    qb_status rc = QB_OK;

    /* the format library names layer files for the writer and both readers */
    if (w4a16_layer_file(l, L, name, sizeof name) != 0)
        return h->set_error(h, QB_E_FORMAT, "%lld layers: more than the format allows (%d)",
                            (long long)L, W4A16_MAX_LAYERS);
    if ((rc = add_file(b, name)) != QB_OK)
        return rc;
    w4w_layout_order(lo, l, inst, &n_inst);
    for (k = 0; k < n_inst; k++) {
        const w4w_role *role = &a->roles[inst[k].role];
        size_t si = (size_t)l * K + lo->role_off[inst[k].role] +
                    (size_t)(inst[k].expert < 0 ? 0 : inst[k].expert);
        size_t wi = slot_w[si], bi = slot_b[si];
        char path[256];
        w4w_role_path(role, inst[k].expert, path, sizeof path); /* fits: checked above */
        if (vq[si] >= 0)
            continue; /* a fused expert source's part: planned below */
        if (role->kind == W4W_ROLE_LINEAR) {
            rc = plan_linear(b, wi, path, part_r0[si], part_rows[si]);
        } else if (role->kind == W4W_ROLE_F32) {
            rc = plan_f32(b, wi, path);
        } else {
            snprintf(name, sizeof name, role->kind == W4W_ROLE_PARAM ? "%s" : "%s.weight", path);
            rc = plan_f16(b, wi, name);
        }
        if (rc == QB_OK && bi != NONE) {
            snprintf(name, sizeof name, "%s.bias", path);
            rc = plan_f16(b, bi, name);
        }
        if (rc != QB_OK)
            return rc;
    }
    for (k = 0; k < nx && rc == QB_OK; k++) {
        size_t wi = xslot[((size_t)l * nx + k) * 2], bi = xslot[((size_t)l * nx + k) * 2 + 1];
        const qb_tensor_info *t;
        int64_t e;
        int q, pass;
        if (wi == NONE)
            continue;
        t = tinfo(b, wi);
        for (pass = 0; pass < (xf[k].no_bias ? 1 : 2) && rc == QB_OK; pass++)
            for (e = 0; e < lo->n_experts && rc == QB_OK; e++)
                for (q = 0; q < xf[k].n_parts && rc == QB_OK; q++) {
                    char path[256];
                    w4w_role_path(w4w_arch_role(a, xf[k].parts[q]), e, path, sizeof path);
                    b->vset = 1;
                    b->vtrans = pass == 0;
                    b->vexp = e;
                    /* interleaved: column c * n_parts + q; concatenated
                     * (llama4): column q * out_part + c */
                    b->vstride = xf[k].concat ? 1 : xf[k].n_parts;
                    b->voff = xf[k].concat ? q * (t->dims[2] / xf[k].n_parts) : q;
                    b->vrows = pass == 0 ? t->dims[2] / xf[k].n_parts : 1;
                    b->vcols = pass == 0 ? t->dims[1] : t->dims[2] / xf[k].n_parts;
                    if (pass == 0) {
                        rc = plan_linear(b, wi, path, -1, -1);
                    } else {
                        snprintf(name, sizeof name, "%s.bias", path);
                        rc = plan_f16(b, bi, name);
                    }
                    b->vset = 0;
                }
    }
    return rc;
}

/* 3. Files, output tensors and write order: embeddings, the layers, the
 * final norm, the head (a tied head only checked against the embeddings);
 * every source planned, the items of one source consecutive. */
static qb_status plan_outputs(plan_state *s)
{
    builder *b = &s->b;
    const qb_host *h = b->h;
    const int64_t L = s->L;
    const size_t nt = s->nt;
    const w4w_options *opt = s->opt;
    w4w_plan *p = b->p;
    size_t i;
    int64_t l;
    qb_status rc;

    if ((rc = add_file(b, "embed.safetensors")) != QB_OK ||
        (rc = plan_f16(b, s->embed, "embed_tokens.weight")) != QB_OK)
        return rc;
    for (i = 0; i < s->ngl; i++)
        if (s->gslot[i] != NONE && (rc = plan_f16(b, s->gslot[i], s->gl[i].out)) != QB_OK)
            return rc;
    for (l = 0; l < L; l++)
        if ((rc = plan_layer_outputs(s, l)) != QB_OK)
            return rc;
    if ((rc = add_file(b, "norm.safetensors")) != QB_OK ||
        (rc = plan_f16(b, s->fnorm, "norm.weight")) != QB_OK)
        return rc;
    if (s->head != NONE && !p->tied) {
        if ((rc = add_file(b, "lm_head.safetensors")) != QB_OK)
            return rc;
        rc = opt->quantized_head ? plan_linear(b, s->head, "lm_head", 0, -1)
                                 : plan_f16(b, s->head, "lm_head.weight");
        if (rc != QB_OK)
            return rc;
    } else if (s->head != NONE) {
        w4w_item *it = add_item(b, s->head, W4W_ITEM_TIED);
        it->peer = s->embed;
    }
    for (i = 0; i < nt; i++)
        if (p->item_of_src[i] == NONE)
            return h->set_error(h, QB_E_INTERNAL, "%s: tensor %zu not planned", b->sp, i);
    /* the writer takes one source tensor's items in one write_tensor call */
    for (i = 1; i < p->n_items; i++)
        if (p->items[i].src != p->items[i - 1].src && p->item_of_src[p->items[i].src] != i)
            return h->set_error(h, QB_E_INTERNAL, "%s: parts of %s are not consecutive", b->sp,
                                p->items[i].name);
    return QB_OK;
}

qb_status w4w_plan_build(const qb_host *h, const qb_model_src *src, const w4w_options *opt,
                         w4w_plan **out)
{
    plan_state s;
    qb_status rc;

    *out = NULL;
    memset(&s, 0, sizeof s);
    rc = plan_begin(&s, h, src, opt);
    /* 1. classify */
    if (rc == QB_OK)
        rc = plan_classify(&s);
    if (rc == QB_OK)
        rc = plan_fused(&s);
    if (rc == QB_OK)
        rc = plan_fused_experts(&s);
    /* 2. presence and shapes */
    if (rc == QB_OK)
        rc = plan_check_ends(&s);
    if (rc == QB_OK)
        rc = plan_check_layers(&s);
    /* 3. files, output tensors and write order */
    if (rc == QB_OK)
        rc = plan_outputs(&s);
    if (rc == QB_OK) {
        *out = s.b.p;
        s.b.p = NULL;
    }
    plan_state_free(&s);
    return rc;
}

void w4w_plan_free(w4w_plan *p)
{
    size_t i;
    if (!p)
        return;
    for (i = 0; i < p->n_outs; i++)
        qbk_free(p->outs[i].name);
    for (i = 0; i < p->n_items; i++) {
        qbk_free(p->items[i].key);
        qbk_free(p->items[i].perm);
    }
    qbk_free(p->outs);
    qbk_free(p->files);
    qbk_free(p->items);
    qbk_free(p->item_of_src);
    qbk_free(p);
}
