/*
 * sm86-w4a16 — the reader: the native W4A16 checkpoint read back as
 * canonical Hugging Face tensors (qb_tensor.h), so `inspect` describes it
 * and any writer (hf-dense, sm86-w4a16 itself) can take it as a source.
 *
 * open() checks everything up front: manifest.json (manifest_in.c: format,
 * version, features, every file's size and SHA-256), config.json against
 * the manifest, and every tensor of every file against the layout of
 * w4a16-format.md and the config's widths. Data calls then only decode
 * mapped bytes and may run concurrently (QB_PLUGIN_CONCURRENT_READS).
 *
 * A packed linear `<path>.packed`/`.scales` in layer_NN is served as
 * `model.layers.N.<path>.weight` with dense rows decoded as the format
 * defines and an integer grid (codes q + 8, zero 8, fp16 scales as float)
 * whose promise holds by construction: (float)(code - 8) * scale is the
 * decoder's product.
 */
#include "w4w.h"
#include "w4a16_int4.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <quantbridge/base/qb_stdir.h>

#include "qbk_alloc.h"
#include "qbk_path.h"
#include "qbk_hf_sidefiles.h"
#include "qbk_json.h"

#define W4W_CONFIG_MAX (4u << 20)

typedef struct w4r_tensor {
    char name[192];        /* canonical */
    const qb_st_tensor *a; /* F16 (or, with f32, F32) data, or the packed codes */
    const qb_st_tensor *s; /* scales of a packed linear, else NULL */
    uint32_t n_dims;
    int64_t dims[3];
    int64_t rows, cols, ng;
    int32_t *perm;   /* input_permutation: stored column c is column perm[c]; owned */
    int32_t *colmap; /* with perm: group of each original column; owned */
    /* a fused expert tensor served whole (w4w_xfused, gpt-oss): its
     * per-expert parts are parts[part0 + e * np + q]; xbias: the bias
     * [E, out] rather than the weight [E, in, out] */
    int xf, xbias, np;
    int xconcat;     /* parts one after another along out (w4w_xfused.concat) */
    size_t part0;
    int f32;         /* a is F32 (W4W_ROLE_F32) */
} w4r_tensor;

typedef struct w4r_reader {
    const qb_host *h;
    char *dir;
    int has_tokenizer; /* dir holds tokenizer files (qb_stdir_has_tokenizer) */
    w4w_manifest_in man;
    void *config; /* host->alloc'd texts */
    void *gen;
    char summary[160];
    char encoding[64];
    qb_st_set **sets;
    size_t n_sets;
    w4r_tensor *t;
    size_t n, cap;
    w4r_tensor *parts; /* per-expert tensors behind the fused ones (w4r_tensor.xf) */
    size_t n_parts;
    w4w_meta *meta; /* the metadata view (reader_meta.c) */
    size_t n_meta;
} w4r_reader;

/* ---- probe ---- */

static int has_sibling(const qb_probe_input *in, const char *name)
{
    const char *const *s;
    for (s = in->siblings; s && *s; s++)
        if (strcmp(*s, name) == 0)
            return 1;
    return 0;
}

static int w4r_probe(void *ctx, const qb_probe_input *in)
{
    const qb_host *h = ((const w4w_ctx *)ctx)->host;
    char path[4096];
    void *text = NULL;
    size_t len = 0;
    cJSON *m;
    int score = QB_PROBE_NONE;
    if (!in->is_dir || !has_sibling(in, "manifest.json") || !has_sibling(in, "embed.safetensors"))
        return QB_PROBE_NONE;
    if ((size_t)snprintf(path, sizeof path, "%s/manifest.json", in->path) >= sizeof path)
        return QB_PROBE_NONE;
    if (h->read_small_file(h, path, 1u << 20, &text, &len) != QB_OK)
        return QB_PROBE_WEAK;
    m = qbk_json_parse_quiet(text, len);
    if (!m)
        score = QB_PROBE_WEAK; /* refused: open() names manifest.json and the reason */
    else if (cJSON_IsObject(m) &&
             cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "format")) &&
             strcmp(cJSON_GetObjectItemCaseSensitive(m, "format")->valuestring,
                    W4W_PLUGIN_NAME) == 0)
        score = QB_PROBE_CERTAIN;
    cJSON_Delete(m);
    h->free(h, text);
    return score;
}

/* ---- open ---- */

static w4r_tensor *add_tensor(w4r_reader *r)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        w4r_tensor *nt = qbk_realloc(r->t, cap * sizeof *nt);
        if (!nt)
            return NULL;
        r->t = nt;
        r->cap = cap;
    }
    memset(&r->t[r->n], 0, sizeof r->t[0]);
    return &r->t[r->n++];
}

static int64_t cfg_int(const cJSON *cfg, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    /* Range first: casting a double outside int64 (1e300, inf) is undefined. */
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1 && v->valuedouble <= 1e15) ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        return -1;
    return (int64_t)v->valuedouble;
}

static qb_status add_f16(w4r_reader *r, const char *file, const qb_st_tensor *st, const char *canon,
                         uint32_t want_dims, int64_t d0, int64_t d1)
{
    const qb_host *h = r->h;
    w4r_tensor *t;
    if (st->dtype != QB_DT_F16 || st->n_dims != want_dims || (d0 > 0 && st->dims[0] != d0) ||
        (want_dims == 2 && d1 > 0 && st->dims[1] != d1))
        return h->set_error(h, QB_E_FORMAT, "%s/%s: %s: not F16 of the expected shape", r->dir,
                            file, st->name);
    if (!(t = add_tensor(r)))
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir);
    snprintf(t->name, sizeof t->name, "%s", canon);
    t->a = st;
    t->n_dims = st->n_dims;
    t->dims[0] = st->dims[0];
    t->dims[1] = st->n_dims == 2 ? st->dims[1] : 0;
    t->rows = st->n_dims == 2 ? st->dims[0] : 1;
    t->cols = st->n_dims == 2 ? st->dims[1] : st->dims[0];
    return QB_OK;
}

/* The optional <base>.perm of a linear: I32 [cols], a permutation, only
 * with the input_permutation feature. Copied (mapped data may be unaligned). */
static qb_status add_perm(w4r_reader *r, const char *file, const qb_st_tensor *pt, w4r_tensor *t)
{
    const qb_host *h = r->h;
    uint8_t *seen = NULL;
    qb_status rc = QB_OK;
    int64_t c;
    if (!pt)
        return QB_OK;
    if (!r->man.input_perm)
        return h->set_error(h, QB_E_FORMAT,
                            "%s/%s: %s present but manifest.json does not list input_permutation",
                            r->dir, file, pt->name);
    if (pt->dtype != QB_DT_I32 || pt->n_dims != 1 || pt->dims[0] != t->cols)
        return h->set_error(h, QB_E_FORMAT, "%s/%s: %s is not I32 [%lld]", r->dir, file, pt->name,
                            (long long)t->cols);
    t->perm = qbk_malloc((size_t)t->cols * sizeof *t->perm);
    t->colmap = qbk_malloc((size_t)t->cols * sizeof *t->colmap);
    seen = qbk_calloc((size_t)t->cols, 1);
    if (!t->perm || !t->colmap || !seen) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir);
        goto out;
    }
    memcpy(t->perm, pt->data, (size_t)t->cols * sizeof *t->perm);
    for (c = 0; c < t->cols; c++) {
        int32_t v = t->perm[c];
        if (v < 0 || v >= t->cols || seen[v]) {
            rc = h->set_error(h, QB_E_FORMAT, "%s/%s: %s is not a permutation of 0..%lld", r->dir,
                              file, pt->name, (long long)t->cols - 1);
            goto out;
        }
        seen[v] = 1;
        t->colmap[v] = (int32_t)(c / r->man.group_size);
    }
out:
    qbk_free(seen);
    return rc;
}

static qb_status add_linear(w4r_reader *r, const char *file, const qb_st_set *set, const char *base,
                            const char *canon, int64_t cols, int64_t rows_want)
{
    const qb_host *h = r->h;
    const qb_st_api *api = h->safetensors;
    char n[256];
    const qb_st_tensor *p, *s;
    w4r_tensor *t;
    int64_t ng = w4a16_int4_n_groups(cols, r->man.group_size);
    snprintf(n, sizeof n, "%s.packed", base);
    p = api->find(set, n);
    snprintf(n, sizeof n, "%s.scales", base);
    s = api->find(set, n);
    if (!p || !s)
        return h->set_error(h, QB_E_FORMAT, "%s/%s: %s: needs both .packed and .scales", r->dir,
                            file, base);
    if (p->dtype != QB_DT_U8 || s->dtype != QB_DT_F16 || p->n_dims != 2 || s->n_dims != 2 ||
        p->dims[0] != s->dims[0] || p->dims[1] != w4a16_int4_packed_bytes(cols) || s->dims[1] != ng ||
        (rows_want > 0 && p->dims[0] != rows_want))
        return h->set_error(h, QB_E_FORMAT,
                            "%s/%s: %s: packed/scales are not U8 [out, %lld] / F16 [out, %lld] for "
                            "in_features %lld, group_size %lld",
                            r->dir, file, base, (long long)w4a16_int4_packed_bytes(cols), (long long)ng,
                            (long long)cols, (long long)r->man.group_size);
    if (!(t = add_tensor(r)))
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir);
    snprintf(t->name, sizeof t->name, "%s", canon);
    t->a = p;
    t->s = s;
    t->n_dims = 2;
    t->dims[0] = t->rows = p->dims[0];
    t->dims[1] = t->cols = cols;
    t->ng = ng;
    snprintf(n, sizeof n, "%s.perm", base);
    return add_perm(r, file, api->find(set, n), t);
}

static qb_status open_set(w4r_reader *r, const char *file, qb_st_set **out)
{
    char *path = qbk_path_join(r->dir, file);
    qb_status rc;
    if (!path)
        return r->h->set_error(r->h, QB_E_NOMEM, "%s/%s: out of memory", r->dir, file);
    rc = r->h->safetensors->open_file(r->h, path, out);
    qbk_free(path);
    if (rc == QB_OK)
        r->sets[r->n_sets++] = *out;
    return rc;
}

/* Serves layer l's per-expert parts of each fused expert tensor
 * (w4w_xfused) as the fused tensor and its bias, the names and shapes the
 * source checkpoint had (w4a16-format.md "gpt-oss"): moves the parts from
 * r->t[first..) to r->parts, keeping the order of the rest, and appends
 * the fused tensors. */
static qb_status fold_xfused(w4r_reader *r, int64_t l, size_t first, const w4w_layout *lo)
{
    const qb_host *h = r->h;
    size_t nx, f, i, j, base[8][2];
    const w4w_xfused *xf = w4w_arch_xfused(r->man.arch, &nx);
    int64_t E = lo->n_experts, e;
    int q, bias;
    char canon[192], path[128];

    /* llama4's dense layers hold no experts (issue 31) */
    if (nx == 0 || !lo->sparse[l])
        return QB_OK;
    if (nx > 8)
        return h->set_error(h, QB_E_INTERNAL, "%s: too many fused expert tensors", r->dir);
    for (f = 0; f < nx; f++) {
        int np = xf[f].n_parts;
        w4r_tensor *grown = qbk_realloc(r->parts, (r->n_parts + (size_t)(2 * E * np)) *
                                                      sizeof *r->parts);
        if (!grown)
            return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir);
        r->parts = grown;
        for (bias = 0; bias < (xf[f].no_bias ? 1 : 2); bias++) {
            base[f][bias] = r->n_parts;
            for (e = 0; e < E; e++)
                for (q = 0; q < np; q++) {
                    w4w_role_path(w4w_arch_role(r->man.arch, xf[f].parts[q]), e, path,
                                  sizeof path);
                    snprintf(canon, sizeof canon, "model.layers.%lld.%s.%s", (long long)l, path,
                             bias ? "bias" : "weight");
                    for (i = first; i < r->n && strcmp(r->t[i].name, canon); i++)
                        ;
                    if (i == r->n || (!bias && r->t[i].perm))
                        return h->set_error(h, QB_E_FORMAT, "%s: %s: %s", r->dir, canon,
                                            i == r->n ? "missing"
                                                      : "has an input permutation, which a "
                                                        "fused expert part cannot have");
                    r->parts[r->n_parts++] = r->t[i];
                    r->t[i].name[0] = '\0'; /* moved */
                    r->t[i].perm = r->t[i].colmap = NULL;
                }
        }
    }
    for (i = j = first; i < r->n; i++)
        if (r->t[i].name[0])
            r->t[j++] = r->t[i];
    r->n = j;
    for (f = 0; f < nx; f++)
        for (bias = 0; bias < (xf[f].no_bias ? 1 : 2); bias++) {
            const w4r_tensor *p0 = &r->parts[base[f][bias]];
            int np = xf[f].n_parts;
            w4r_tensor *t = add_tensor(r);
            if (!t)
                return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir);
            snprintf(t->name, sizeof t->name, "model.layers.%lld.%s%s", (long long)l,
                     xf[f].path, bias ? "_bias" : "");
            t->xf = 1;
            t->xbias = bias;
            t->np = np;
            t->xconcat = xf[f].concat;
            t->part0 = base[f][bias];
            if (bias) {
                t->n_dims = 2;
                t->dims[0] = t->rows = E;
                t->dims[1] = t->cols = p0->cols * np;
            } else {
                t->n_dims = 3;
                t->dims[0] = E;
                t->dims[1] = p0->cols;
                t->dims[2] = p0->rows * np;
                t->rows = E * p0->cols;
                t->cols = p0->rows * np;
            }
        }
    return QB_OK;
}

/* Maps one layer file; every tensor in it must be a role instance of the
 * architecture for this layer (layout.c: experts, MoE or dense layer),
 * every required one present. */
static qb_status map_layer(w4r_reader *r, int64_t l, const char *file, const w4w_layout *lo,
                           w4w_inst *inst)
{
    const qb_host *h = r->h;
    const qb_st_api *api = h->safetensors;
    const w4w_arch *a = r->man.arch;
    qb_st_set *set;
    size_t i, k, cnt, used = 0, n_inst, first = r->n;
    char canon[192], n[256], path[128];
    qb_status rc = open_set(r, file, &set);
    if (rc != QB_OK)
        return rc;
    cnt = api->count(set);
    w4w_layout_order(lo, l, inst, &n_inst);
    for (k = 0; k < n_inst; k++) {
        const w4w_role *role = &a->roles[inst[k].role];
        if (w4w_role_path(role, inst[k].expert, path, sizeof path) != 0)
            return h->set_error(h, QB_E_INTERNAL, "%s/%s: role path too long", r->dir, file);
        snprintf(canon, sizeof canon, "model.layers.%lld.%s.weight", (long long)l, path);
        if (role->kind == W4W_ROLE_LINEAR) {
            int64_t cols = w4w_layout_width(lo, l, role->in);
            int64_t rows_want = role->out != W4W_IN_NONE ? lo->width[role->out] : 0;
            const qb_st_tensor *b;
            int64_t rows;
            if (cols < 1 || rows_want < 0)
                return h->set_error(h, QB_E_FORMAT, "%s/config.json: %s missing, needed for %s",
                                    r->dir, w4w_width_key(cols < 1 ? role->in : role->out),
                                    canon);
            rc = add_linear(r, file, set, path, canon, cols, rows_want);
            if (rc != QB_OK)
                return rc;
            used += 2 + (r->t[r->n - 1].perm != NULL);
            rows = r->t[r->n - 1].rows;
            snprintf(n, sizeof n, "%s.bias", path);
            b = api->find(set, n);
            if (b && role->bias == W4W_BIAS_NONE)
                continue; /* counted as unknown below */
            if (!b && role->bias == W4W_BIAS_REQUIRED)
                return h->set_error(h, QB_E_FORMAT, "%s/%s: %s missing", r->dir, file, n);
            if (b) {
                snprintf(canon, sizeof canon, "model.layers.%lld.%s.bias", (long long)l, path);
                if ((rc = add_f16(r, file, b, canon, 1, rows, 0)) != QB_OK)
                    return rc;
                used++;
            }
        } else if (role->kind == W4W_ROLE_F32) {
            const qb_st_tensor *w = api->find(set, path);
            w4r_tensor *t;
            snprintf(canon, sizeof canon, "model.layers.%lld.%s", (long long)l, path);
            if (!w)
                return h->set_error(h, QB_E_FORMAT, "%s/%s: %s missing", r->dir, file, path);
            if (w->dtype != QB_DT_F32 || w->n_dims != 1 || w->dims[0] != lo->width[role->out])
                return h->set_error(h, QB_E_FORMAT, "%s/%s: %s: not F32 [%lld] (%s)", r->dir,
                                    file, path, (long long)lo->width[role->out],
                                    w4w_width_key(role->out));
            if (!(t = add_tensor(r)))
                return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir);
            snprintf(t->name, sizeof t->name, "%s", canon);
            t->a = w;
            t->f32 = 1;
            t->n_dims = 1;
            t->dims[0] = w->dims[0];
            t->rows = 1;
            t->cols = w->dims[0];
            used++;
        } else if (role->kind == W4W_ROLE_CONV) {
            /* a depthwise convolution [channels, 1, kernel], served with
             * its shape: rows are the channels */
            const qb_st_tensor *w;
            w4r_tensor *t;
            int64_t ch = lo->width[role->out], kn = lo->width[role->in];
            snprintf(n, sizeof n, "%s.weight", path);
            if (!(w = api->find(set, n)))
                return h->set_error(h, QB_E_FORMAT, "%s/%s: %s missing", r->dir, file, n);
            if (w->dtype != QB_DT_F16 || w->n_dims != 3 || w->dims[0] != ch || w->dims[1] != 1 ||
                w->dims[2] != kn)
                return h->set_error(h, QB_E_FORMAT, "%s/%s: %s: not F16 [%lld, 1, %lld] (%s, %s)",
                                    r->dir, file, n, (long long)ch, (long long)kn,
                                    w4w_width_key(role->out), w4w_width_key(role->in));
            if (!(t = add_tensor(r)))
                return h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir);
            snprintf(t->name, sizeof t->name, "%s", canon);
            t->a = w;
            t->n_dims = 3;
            t->dims[0] = ch;
            t->dims[1] = 1;
            t->dims[2] = kn;
            t->rows = ch;
            t->cols = kn;
            used++;
        } else {
            const qb_st_tensor *w, *b;
            int router = role->kind == W4W_ROLE_ROUTER;
            if (role->kind == W4W_ROLE_PARAM) /* a bare parameter keeps its own name */
                snprintf(canon, sizeof canon, "model.layers.%lld.%s", (long long)l, path);
            snprintf(n, sizeof n, role->kind == W4W_ROLE_PARAM ? "%s" : "%s.weight", path);
            w = api->find(set, n);
            if (!w)
                return h->set_error(h, QB_E_FORMAT, "%s/%s: %s missing", r->dir, file, n);
            rc = router ? add_f16(r, file, w, canon, 2, lo->width[role->out],
                                  lo->width[W4W_IN_HIDDEN])
                        : add_f16(r, file, w, canon, 1,
                                  role->hidden_sized ? lo->width[W4W_IN_HIDDEN] : 0, 0);
            if (rc != QB_OK)
                return rc;
            used++;
            snprintf(n, sizeof n, "%s.bias", path);
            if (!router || role->bias == W4W_BIAS_NONE || !(b = api->find(set, n))) {
                if (router && role->bias == W4W_BIAS_REQUIRED)
                    return h->set_error(h, QB_E_FORMAT, "%s/%s: %s missing", r->dir, file, n);
                continue;
            }
            snprintf(canon, sizeof canon, "model.layers.%lld.%s.bias", (long long)l, path);
            if ((rc = add_f16(r, file, b, canon, 1, lo->width[role->out], 0)) != QB_OK)
                return rc;
            used++;
        }
    }
    if (used != cnt) {
        /* name the first tensor that no role claimed */
        for (i = 0; i < cnt; i++) {
            const qb_st_tensor *st = api->tensor(set, i);
            int claimed = 0;
            for (k = first; k < r->n && !claimed; k++)
                claimed = r->t[k].a == st || r->t[k].s == st;
            if (!claimed)
                return h->set_error(h, QB_E_FORMAT,
                                    "%s/%s: %s: unknown tensor for architecture %s%s", r->dir,
                                    file, st->name, a->model_type,
                                    a->moe == W4W_MOE_NONE ? ""
                                    : lo->sparse[l]        ? " (a mixture-of-experts layer)"
                                                           : " (a dense-MLP layer)");
        }
    }
    return fold_xfused(r, l, first, lo);
}

static qb_status map_single(w4r_reader *r, const char *file, const char *tname, const char *canon,
                            uint32_t nd, int64_t d0, int64_t d1)
{
    qb_st_set *set;
    const qb_st_tensor *st;
    qb_status rc = open_set(r, file, &set);
    if (rc != QB_OK)
        return rc;
    if (r->h->safetensors->count(set) != 1 || !(st = r->h->safetensors->find(set, tname)))
        return r->h->set_error(r->h, QB_E_FORMAT, "%s/%s: must hold exactly %s", r->dir, file,
                               tname);
    return add_f16(r, file, st, canon, nd, d0, d1);
}

/* embed.safetensors: embed_tokens.weight, and the architecture's
 * model-level extras its config sets (w4w_arch_globals: gemma4's
 * per-layer inputs), nothing else. */
static qb_status map_embed(w4r_reader *r, const w4w_layout *lo, int64_t vocab)
{
    static const char file[] = "embed.safetensors";
    const qb_st_api *api = r->h->safetensors;
    size_t ng, g, want = 1;
    const w4w_global *gl = w4w_arch_globals(r->man.arch, &ng);
    const qb_st_tensor *st;
    qb_st_set *set;
    qb_status rc = open_set(r, file, &set);
    if (rc != QB_OK)
        return rc;
    if (!(st = api->find(set, "embed_tokens.weight")))
        return r->h->set_error(r->h, QB_E_FORMAT, "%s/%s: embed_tokens.weight missing", r->dir,
                               file);
    if ((rc = add_f16(r, file, st, "model.embed_tokens.weight", 2, vocab,
                      lo->width[W4W_IN_HIDDEN])) != QB_OK)
        return rc;
    for (g = 0; g < ng; g++) {
        int64_t d0 = lo->width[gl[g].d0], d1 = gl[g].n_dims == 2 ? lo->width[gl[g].d1] : 0;
        if (lo->width[gl[g].when] < 1)
            continue;
        if (!(st = api->find(set, gl[g].out)))
            return r->h->set_error(r->h, QB_E_FORMAT, "%s/%s: %s missing (config.json sets %s)",
                                   r->dir, file, gl[g].out, w4w_width_key(gl[g].when));
        if ((rc = add_f16(r, file, st, gl[g].name, gl[g].n_dims, d0, d1)) != QB_OK)
            return rc;
        want++;
    }
    if (api->count(set) != want)
        return r->h->set_error(r->h, QB_E_FORMAT,
                               "%s/%s: holds %zu tensors, architecture %s has %zu there", r->dir,
                               file, api->count(set), r->man.arch->model_type, want);
    return QB_OK;
}

static void reader_free(w4r_reader *r)
{
    size_t i;
    if (!r)
        return;
    for (i = 0; i < r->n_sets; i++)
        r->h->safetensors->close(r->sets[i]);
    qbk_free(r->sets);
    for (i = 0; i < r->n; i++) {
        qbk_free(r->t[i].perm);
        qbk_free(r->t[i].colmap);
    }
    qbk_free(r->t);
    qbk_free(r->parts); /* fused expert parts hold no perm (fold_xfused) */
    w4w_meta_free(r->meta, r->n_meta);
    r->h->free(r->h, r->config);
    r->h->free(r->h, r->gen);
    qbk_free(r->dir);
    qbk_free(r);
}

/* The metadata view: what the writer declared of the packed linears and
 * the fused expert tensors served. */
static qb_status meta_build(w4r_reader *r)
{
    const char **lin = qbk_calloc(r->n + 1, sizeof *lin), **xf = qbk_calloc(r->n + 1, sizeof *xf);
    size_t i, nl = 0, nx = 0;
    qb_status rc;
    if (!lin || !xf) {
        rc = r->h->set_error(r->h, QB_E_NOMEM, "%s: out of memory", r->dir);
        goto out;
    }
    for (i = 0; i < r->n; i++) {
        if (r->t[i].s && !r->t[i].xf)
            lin[nl++] = r->t[i].name;
        else if (r->t[i].xf && !r->t[i].xbias)
            xf[nx++] = r->t[i].name;
    }
    rc = w4w_meta_build(r->h, r->dir, r->man.group_size, lin, nl, xf, nx, &r->meta, &r->n_meta);
out:
    qbk_free(lin);
    qbk_free(xf);
    return rc;
}

static qb_status w4r_open(void *ctx, const char *path, const qb_param *params,
                          qb_reader_handle *out)
{
    const qb_host *h = ((const w4w_ctx *)ctx)->host;
    w4r_reader *r = NULL;
    cJSON *cfg = NULL;
    const cJSON *tie, *mt;
    char file[64], p[4096];
    size_t len;
    w4w_layout lo;
    w4w_inst *inst = NULL;
    int64_t l, m, vocab;
    int digits;
    qb_status rc = QB_OK;

    (void)params;
    *out = NULL;
    memset(&lo, 0, sizeof lo);
    r = qbk_calloc(1, sizeof *r);
    if (!r || !(r->dir = qbk_strdup(path))) {
        qbk_free(r);
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", path);
    }
    r->h = h;
    len = strlen(r->dir);
    while (len > 1 && r->dir[len - 1] == '/')
        r->dir[--len] = '\0';
    if ((rc = w4w_manifest_read(h, r->dir, &r->man)) != QB_OK)
        goto out;
    snprintf(p, sizeof p, "%s/config.json", r->dir);
    if ((rc = h->read_small_file(h, p, W4W_CONFIG_MAX, &r->config, &len)) != QB_OK)
        goto out;
    if ((rc = qbk_json_parse_object(h, p, r->config, len, &cfg)) != QB_OK)
        goto out;
    snprintf(p, sizeof p, "%s/generation_config.json", r->dir);
    rc = h->read_small_file(h, p, W4W_CONFIG_MAX, &r->gen, &len);
    if (rc == QB_E_NOT_FOUND)
        rc = QB_OK;
    if (rc != QB_OK)
        goto out;
    mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    tie = cJSON_GetObjectItemCaseSensitive(cfg, "tie_word_embeddings");
    vocab = cfg_int(cfg, "vocab_size");
    if (!cJSON_IsObject(cfg) || !cJSON_IsString(mt) ||
        strcmp(mt->valuestring, r->man.arch->model_type) ||
        cfg_int(cfg, "num_hidden_layers") != r->man.n_layers || (tie && !cJSON_IsBool(tie)) ||
        (tie && cJSON_IsTrue(tie) != r->man.tied) || vocab < 1) {
        rc = h->set_error(h, QB_E_MISMATCH,
                          "%s/config.json: model_type, num_hidden_layers, tie_word_embeddings "
                          "or vocab_size missing or disagree with manifest.json",
                          r->dir);
        goto out;
    }
    snprintf(p, sizeof p, "%s/config.json", r->dir);
    if ((rc = w4w_layout_init(h, p, r->man.arch, cfg, r->man.n_layers, &lo)) != QB_OK)
        goto out;
    if (lo.width[W4W_IN_HIDDEN] < 1 || lo.width[W4W_IN_HEADS] < 1) {
        rc = h->set_error(h, QB_E_MISMATCH,
                          "%s/config.json: hidden_size or num_attention_heads missing", r->dir);
        goto out;
    }
    inst = qbk_malloc((lo.per_layer ? lo.per_layer : 1) * sizeof *inst);
    if (!inst) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir);
        goto out;
    }
    r->sets = qbk_calloc((size_t)r->man.n_layers + 3, sizeof *r->sets);
    if (!r->sets) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory", r->dir);
        goto out;
    }
    if ((rc = map_embed(r, &lo, vocab)) != QB_OK)
        goto out;
    digits = 2;
    for (m = 100; r->man.n_layers - 1 >= m; m *= 10)
        digits++;
    for (l = 0; l < r->man.n_layers; l++) {
        snprintf(file, sizeof file, "layer_%0*d.safetensors", digits & 7, (int)l);
        if ((rc = map_layer(r, l, file, &lo, inst)) != QB_OK)
            goto out;
    }
    if ((rc = map_single(r, "norm.safetensors", "norm.weight", "model.norm.weight", 1,
                         lo.width[W4W_IN_HIDDEN], 0)) != QB_OK)
        goto out;
    if (!r->man.tied && !r->man.quantized_head) {
        rc = map_single(r, "lm_head.safetensors", "lm_head.weight", "lm_head.weight", 2, vocab,
                        lo.width[W4W_IN_HIDDEN]);
    } else if (!r->man.tied) {
        qb_st_set *set;
        if ((rc = open_set(r, "lm_head.safetensors", &set)) == QB_OK) {
            rc = add_linear(r, "lm_head.safetensors", set, "lm_head", "lm_head.weight",
                            lo.width[W4W_IN_HIDDEN], vocab);
            if (rc == QB_OK && h->safetensors->count(set) != 2u + (r->t[r->n - 1].perm != NULL))
                rc = h->set_error(h, QB_E_FORMAT,
                                  "%s/lm_head.safetensors: must hold exactly "
                                  "lm_head.packed, lm_head.scales (and lm_head.perm)",
                                  r->dir);
        }
    }
    if (rc != QB_OK)
        goto out;
    /* the output of a source without a tokenizer has none: claim none */
    if ((rc = qb_stdir_has_tokenizer(h, r->dir, &r->has_tokenizer)) != QB_OK)
        goto out;
    if ((rc = meta_build(r)) != QB_OK)
        goto out;
    snprintf(r->encoding, sizeof r->encoding, "sm86-w4a16 int4 g%lld sym",
             (long long)r->man.group_size);
    snprintf(r->summary, sizeof r->summary, "sm86-w4a16 v1, int4 g%lld, %lld layers%s%s",
             (long long)r->man.group_size, (long long)r->man.n_layers, r->man.tied ? ", tied" : "",
             r->man.quantized_head ? ", quantized lm_head" : "");
    *out = r;
    r = NULL;
out:
    qbk_free(inst);
    w4w_layout_free(&lo);
    cJSON_Delete(cfg);
    reader_free(r);
    return rc;
}

static void w4r_close(qb_reader_handle hr)
{
    reader_free(hr);
}

static qb_status w4r_model_info(qb_reader_handle hr, qb_model_info *out)
{
    w4r_reader *r = hr;
    out->architecture = r->man.arch->model_type;
    out->config_json = r->config;
    out->generation_config_json = r->gen;
    out->n_tensors = r->n;
    out->source_format = W4W_PLUGIN_NAME;
    out->source_summary = r->summary;
    out->tokenizer_dir = r->has_tokenizer ? r->dir : NULL;
    out->chat_template = NULL;
    return QB_OK;
}

static qb_status w4r_tensor_info(qb_reader_handle hr, size_t i, qb_tensor_info *out)
{
    w4r_reader *r = hr;
    const w4r_tensor *t;
    if (i >= r->n)
        return r->h->set_error(r->h, QB_E_RANGE, "%s: tensor index %zu of %zu", r->dir, i, r->n);
    t = &r->t[i];
    out->name = t->name;
    out->n_dims = t->n_dims;
    memset(out->dims, 0, sizeof out->dims);
    out->dims[0] = t->dims[0];
    out->dims[1] = t->dims[1];
    out->dims[2] = t->dims[2];
    if (t->xf) { /* a fused expert tensor: decoded from its parts, no one grid */
        out->source_dtype = t->xbias ? QB_DT_F16 : QB_DT_QUANTIZED;
        out->source_encoding = t->xbias ? "f16" : r->encoding;
        out->has_grid = 0;
        return QB_OK;
    }
    out->source_dtype = t->s ? QB_DT_QUANTIZED : t->f32 ? QB_DT_F32 : QB_DT_F16;
    out->source_encoding = t->s ? r->encoding : t->f32 ? "f32" : "f16";
    out->has_grid = t->s != NULL;
    return QB_OK;
}

static qb_status check_range(const w4r_reader *r, size_t i, int64_t row0, int64_t n)
{
    if (i >= r->n || row0 < 0 || n < 0 || row0 > r->t[i].rows - n)
        return r->h->set_error(r->h, QB_E_RANGE, "%s: %s: rows [%lld, +%lld) outside the tensor",
                               r->dir, i < r->n ? r->t[i].name : "?", (long long)row0,
                               (long long)n);
    return QB_OK;
}

/* Rows of a fused expert tensor from its parts: weight row (e, k) is
 * column k of every part row, part q's row c landing in column c * np + q
 * (w4w_xfused), or q * rows + c when the parts are concatenated (llama4);
 * bias row e places the parts' biases the same way. */
static void read_xfused(const w4r_reader *r, const w4r_tensor *t, int64_t row0, int64_t n,
                        float *dst)
{
    int64_t rr, c, np = t->np, gs = r->man.group_size;
    int q;
    for (rr = row0; rr < row0 + n; rr++) {
        float *d = dst + (rr - row0) * t->cols;
        int64_t e = t->xbias ? rr : rr / t->dims[1], k = t->xbias ? 0 : rr % t->dims[1];
        for (q = 0; q < np; q++) {
            const w4r_tensor *p = &r->parts[t->part0 + (size_t)(e * np + q)];
            for (c = 0; c < (t->xbias ? p->cols : p->rows); c++) {
                uint16_t v;
                int64_t col = t->xconcat ? q * (t->xbias ? p->cols : p->rows) + c : c * np + q;
                if (t->xbias) {
                    memcpy(&v, p->a->data + 2 * c, 2); /* mapped data may be unaligned */
                    d[col] = qb_f16_to_f32(v);
                } else {
                    const uint8_t *row =
                        p->a->data + (size_t)(c * w4a16_int4_packed_bytes(p->cols));
                    memcpy(&v, p->s->data + (size_t)(c * p->ng + k / gs) * 2, 2);
                    d[col] = (float)w4a16_int4_code(row, k) * qb_f16_to_f32(v);
                }
            }
        }
    }
}

static qb_status w4r_read_rows(qb_reader_handle hr, size_t i, int64_t row0, int64_t n, float *dst)
{
    w4r_reader *r = hr;
    const w4r_tensor *t;
    int64_t k;
    qb_status rc = check_range(r, i, row0, n);
    if (rc != QB_OK)
        return rc;
    t = &r->t[i];
    if (t->xf) {
        read_xfused(r, t, row0, n, dst);
        return QB_OK;
    }
    if (t->f32) {
        /* mapped data may be unaligned */
        memcpy(dst, t->a->data + (size_t)(row0 * t->cols) * 4, (size_t)(n * t->cols) * 4);
        return QB_OK;
    }
    if (!t->s) {
        const uint8_t *src = t->a->data + (size_t)(row0 * t->cols) * 2;
        for (k = 0; k < n * t->cols; k++) {
            uint16_t v;
            memcpy(&v, src + 2 * k, 2); /* mapped data may be unaligned */
            dst[k] = qb_f16_to_f32(v);
        }
        return QB_OK;
    }
    for (k = 0; k < n; k++)
        w4a16_int4_decode_row(t->a->data + (size_t)((row0 + k) * w4a16_int4_packed_bytes(t->cols)),
                            t->s->data + (size_t)((row0 + k) * t->ng) * 2, t->cols,
                            r->man.group_size, t->perm, dst + k * t->cols);
    return QB_OK;
}

static qb_status w4r_grid_info(qb_reader_handle hr, size_t i, qb_grid_info *out)
{
    w4r_reader *r = hr;
    if (i >= r->n)
        return r->h->set_error(r->h, QB_E_RANGE, "%s: tensor index %zu", r->dir, i);
    if (!r->t[i].s || r->t[i].xf)
        return QB_E_UNSUPPORTED;
    out->bits = 4;
    out->n_groups = (uint32_t)r->t[i].ng;
    /* with a perm, original column perm[c] sits in stored group c / gs */
    out->group_size = r->t[i].perm ? 0 : r->man.group_size;
    out->col_group = r->t[i].colmap;
    out->symmetric = 1;
    out->scale_dtype = QB_DT_F16;
    return QB_OK;
}

static qb_status w4r_read_grid(qb_reader_handle hr, size_t i, int64_t row0, int64_t n,
                               qb_grid_rows *out)
{
    w4r_reader *r = hr;
    const w4r_tensor *t;
    int64_t k, c, g;
    qb_status rc = check_range(r, i, row0, n);
    if (rc != QB_OK)
        return rc;
    t = &r->t[i];
    if (!t->s || t->xf)
        return r->h->set_error(r->h, QB_E_UNSUPPORTED, "%s: %s has no integer grid", r->dir,
                               t->name);
    for (k = 0; k < n; k++) {
        const uint8_t *p = t->a->data + (size_t)((row0 + k) * w4a16_int4_packed_bytes(t->cols));
        const uint8_t *s = t->s->data + (size_t)((row0 + k) * t->ng) * 2;
        /* the stored nibbles are the grid's codes, its zero the nibble bias */
        for (c = 0; c < t->cols; c++)
            out->codes[k * t->cols + (t->perm ? t->perm[c] : c)] =
                (uint8_t)w4a16_int4_nibble(p, c);
        for (g = 0; g < t->ng; g++) {
            uint16_t sv;
            memcpy(&sv, s + 2 * g, 2);
            out->scales[k * t->ng + g] = qb_f16_to_f32(sv);
            out->zeros[k * t->ng + g] = W4A16_INT4_BIAS;
        }
    }
    return QB_OK;
}

static qb_status w4r_metadata(qb_reader_handle hr, size_t index, qb_meta_entry *out)
{
    const w4r_reader *r = hr;
    return w4w_meta_entry(r->meta, r->n_meta, index, out);
}

const qb_reader_vtable w4w_reader_vtable = {
    .struct_size = sizeof(qb_reader_vtable),
    .probe = w4r_probe,
    .open = w4r_open,
    .close = w4r_close,
    .get_model_info = w4r_model_info,
    .get_tensor_info = w4r_tensor_info,
    .read_rows = w4r_read_rows,
    .get_grid_info = w4r_grid_info,
    .read_grid = w4r_read_grid,
    .get_metadata = w4r_metadata,
};
