/*
 * GGUF writer — the output plan: each canonical tensor's GGUF name through
 * the reader's own table in the other direction (gguf_names_to_gguf), the
 * stacked experts and phi3's fused tensors as row concatenations, the ggml
 * type of each tensor and whether its values are carried over exactly.
 *
 * Type rules (docs/formats/gguf.md, "Writing GGUF"): 1-D tensors (norms,
 * biases) and routers (ffn_gate_inp*) are F32, as llama.cpp's converter
 * and quantizer keep them (convert_hf_to_gguf.py prepare_tensors,
 * llama-quant.cpp); a weight whose row length is not a multiple of the
 * type's block falls back to F16 (convert_hf_to_gguf.py's QuantError
 * fallback); type=auto carries a symmetric 4-bit grid at group sizes that
 * are multiples of 32 to Q4_0 and a symmetric 8-bit one to Q8_0, and
 * quantizes the rest to Q8_0.
 */
#include "gguf_writer.h"

#include "ggml_quant.h"
#include "ggml_types.h"
#include "qbk_alloc.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    uint32_t type;
    uint32_t ftype; /* llama.h enum llama_ftype */
} type_names[] = {
    {"F32", GGUF_GGML_TYPE_F32, 0},   {"F16", GGUF_GGML_TYPE_F16, 1},   {"BF16", GGUF_GGML_TYPE_BF16, 32},
    {"Q8_0", GGUF_GGML_TYPE_Q8_0, 7}, {"Q4_0", GGUF_GGML_TYPE_Q4_0, 2}, {"Q4_1", GGUF_GGML_TYPE_Q4_1, 3},
    {"Q5_0", GGUF_GGML_TYPE_Q5_0, 8}, {"Q5_1", GGUF_GGML_TYPE_Q5_1, 9},
    /* pure K types: the *_S ftypes' main type (llama_ftype 14 Q4_K_S, 16 Q5_K_S, 18 Q6_K) */
    {"Q4_K", GGUF_GGML_TYPE_Q4_K, 14}, {"Q5_K", GGUF_GGML_TYPE_Q5_K, 16}, {"Q6_K", GGUF_GGML_TYPE_Q6_K, 18},
};

static int type_by_name(const char *t, size_t n, uint32_t *out)
{
    size_t i;
    for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
        if (strlen(type_names[i].name) == n && strncmp(t, type_names[i].name, n) == 0) {
            *out = type_names[i].type;
            return 1;
        }
    return 0;
}

void ggw_opts_free(ggw_opts *o)
{
    size_t i;
    for (i = 0; i < o->n_over; i++) {
        regfree(o->over_re[i]);
        qbk_free(o->over_re[i]);
    }
    o->n_over = 0;
}

/* tensor_type=REGEX=TYPE[,REGEX=TYPE...]: POSIX extended regexes searched
 * in the GGUF tensor name, as llama-quantize --tensor-type does with its
 * patterns (llama-quant.cpp tensor_type_patterns: first match wins). */
static qb_status parse_overrides(const qb_host *h, const char *spec, ggw_opts *o)
{
    const char *p = spec;
    while (*p) {
        size_t len = strcspn(p, ",");
        const char *eq = NULL, *q;
        char pat[256];
        regex_t *re;
        for (q = p; q < p + len; q++)
            if (*q == '=')
                eq = q; /* the last '=': the type never holds one */
        if (!eq || eq == p || (size_t)(eq - p) >= sizeof(pat) || o->n_over == GGW_MAX_OVERRIDES ||
            !type_by_name(eq + 1, (size_t)(p + len - eq - 1), &o->over_type[o->n_over]))
            return h->set_error(h, QB_E_INVALID,
                                "tensor_type '%.*s': expected REGEX=TYPE (TYPE one of F32, F16, BF16, Q8_0, Q4_0, "
                                "Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; at most %d, comma-separated)",
                                (int)len, p, GGW_MAX_OVERRIDES);
        memcpy(pat, p, (size_t)(eq - p));
        pat[eq - p] = '\0';
        re = qbk_malloc(sizeof(*re));
        if (!re)
            return h->set_error(h, QB_E_NOMEM, "out of memory");
        if (regcomp(re, pat, REG_EXTENDED | REG_NOSUB) != 0) {
            qbk_free(re);
            return h->set_error(h, QB_E_INVALID, "tensor_type: '%s' is not a valid extended regular expression", pat);
        }
        o->over_re[o->n_over++] = re;
        p += len;
        p += *p == ',';
    }
    return QB_OK;
}

/* split_max_size=N[K|M|G] (gguf-split --split-max-size: M and G are 10^6
 * and 10^9 bytes; K 10^3 here too) and split_max_tensors=N. */
static qb_status parse_split(const qb_host *h, const qb_param *params, ggw_opts *o)
{
    const qb_param *ps = qb_param_find(params, "split_max_size");
    const qb_param *pn = qb_param_find(params, "split_max_tensors");
    if (ps && ps->is_set && ps->v.s) {
        char *end = NULL;
        unsigned long long v = strtoull(ps->v.s, &end, 10);
        uint64_t mul = 1;
        if (end && (*end == 'K' || *end == 'k'))
            mul = 1000, end++;
        else if (end && (*end == 'M' || *end == 'm'))
            mul = 1000 * 1000, end++;
        else if (end && (*end == 'G' || *end == 'g'))
            mul = 1000 * 1000 * 1000, end++;
        if (end == ps->v.s || !end || *end || v == 0 || v > UINT64_MAX / mul || ps->v.s[0] == '-')
            return h->set_error(h, QB_E_INVALID, "split_max_size '%s': expected a positive byte count, "
                                                 "optionally with K, M or G (10^3, 10^6, 10^9 bytes)",
                                ps->v.s);
        o->split_max_size = (uint64_t)v * mul;
    }
    if (pn && pn->is_set && pn->v.s) {
        char *end = NULL;
        unsigned long long v = strtoull(pn->v.s, &end, 10);
        if (end == pn->v.s || !end || *end || v == 0 || pn->v.s[0] == '-')
            return h->set_error(h, QB_E_INVALID, "split_max_tensors '%s': expected a positive tensor count",
                                pn->v.s);
        o->split_max_tensors = (uint64_t)v;
    }
    if (o->split_max_size && o->split_max_tensors)
        return h->set_error(h, QB_E_INVALID, "split_max_size and split_max_tensors exclude each other (as in "
                                             "gguf-split, one split mode at a time)");
    return QB_OK;
}

qb_status ggw_opts_parse(const qb_host *h, const qb_param *params, ggw_opts *o)
{
    const qb_param *pt = qb_param_find(params, "type");
    const qb_param *po = qb_param_find(params, "tensor_type");
    const char *t = pt && pt->is_set && pt->v.s ? pt->v.s : "auto";
    qb_status st;
    memset(o, 0, sizeof(*o));
    if (po && po->is_set && po->v.s && (st = parse_overrides(h, po->v.s, o)))
        return st;
    if ((st = parse_split(h, params, o)))
        return st;
    if (strcmp(t, "auto") == 0) {
        o->auto_type = 1;
        o->type = GGUF_GGML_TYPE_Q8_0;
        return QB_OK;
    }
    if (strcmp(t, "Q4_K_M") == 0 || strcmp(t, "Q5_K_M") == 0) {
        o->preset = t[1] == '4' ? GGW_PRESET_Q4_K_M : GGW_PRESET_Q5_K_M;
        o->type = t[1] == '4' ? GGUF_GGML_TYPE_Q4_K : GGUF_GGML_TYPE_Q5_K;
        return QB_OK;
    }
    if (type_by_name(t, strlen(t), &o->type))
        return QB_OK;
    return h->set_error(h, QB_E_INVALID, "type '%s': the gguf writer writes auto, F32, F16, BF16, Q8_0, Q4_0, "
                                         "Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q4_K_M or Q5_K_M",
                        t);
}

/* llama.cpp's per-tensor choices for the Q4_K_M / Q5_K_M file types
 * (llama-quant.cpp llama_tensor_get_type; docs/formats/gguf.md "Presets"):
 * counters run over the tensors in file order as llama.cpp's do. */
typedef struct preset_state {
    int64_t n_layer, n_expert;
    int has_output;
    int n_attn_v, i_attn_v, i_ffn_down;
} preset_state;

static int more_bits(int i, int n)
{
    /* use_more_bits: the first and last eighth and every third layer between */
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static uint32_t preset_type(const ggw_opts *o, preset_state *ps, const ggw_tensor *t, const char **rule)
{
    const int q4 = o->preset == GGW_PRESET_Q4_K_M;
    uint32_t ty = o->type;
    *rule = NULL;
    if (strcmp(t->name, "output.weight") == 0 || (!ps->has_output && strcmp(t->name, "token_embd.weight") == 0)) {
        *rule = "output (or tied embedding): Q6_K, Q8_0 when the row is not a multiple of 256";
        return t->ne[0] % 256 ? GGUF_GGML_TYPE_Q8_0 : GGUF_GGML_TYPE_Q6_K;
    }
    if (strstr(t->name, "attn_v.weight")) {
        if (more_bits(ps->i_attn_v, ps->n_attn_v)) {
            ty = GGUF_GGML_TYPE_Q6_K;
            *rule = "attn_v of a layer use_more_bits picks: Q6_K";
        }
        if (ps->n_expert == 8) {
            ty = GGUF_GGML_TYPE_Q8_0;
            *rule = "attn_v of an 8-expert model: Q8_0";
        }
        ps->i_attn_v++;
        return ty;
    }
    if (strstr(t->name, "attn_k.weight") && ps->n_expert == 8) {
        *rule = "attn_k of an 8-expert model: Q8_0";
        return GGUF_GGML_TYPE_Q8_0;
    }
    if (strstr(t->name, "ffn_down")) {
        int layer = ps->i_ffn_down;
        if (ps->n_expert > 1 && sscanf(t->name, "blk.%d.", &layer) != 1)
            layer = ps->i_ffn_down;
        if (more_bits(layer, (int)ps->n_layer)) {
            ty = GGUF_GGML_TYPE_Q6_K;
            *rule = "ffn_down of a layer use_more_bits picks: Q6_K";
        }
        ps->i_ffn_down++;
        return ty;
    }
    if (strstr(t->name, "attn_output.weight") && ps->n_expert == 8 && q4) {
        *rule = "attn_output of an 8-expert model: Q5_K";
        return GGUF_GGML_TYPE_Q5_K;
    }
    if (strstr(t->name, "attn_qkv.weight")) {
        *rule = q4 ? "fused attn_qkv: Q5_K" : "fused attn_qkv: Q6_K";
        return q4 ? GGUF_GGML_TYPE_Q5_K : GGUF_GGML_TYPE_Q6_K;
    }
    return ty;
}

static uint32_t ftype_of(uint32_t type)
{
    size_t i;
    for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
        if (type_names[i].type == type)
            return type_names[i].ftype;
    return 0;
}

void ggw_plan_free(ggw_plan *p)
{
    size_t i;
    if (!p)
        return;
    for (i = 0; i < p->n; i++) {
        qbk_free(p->t[i].part);
        qbk_free(p->t[i].gen);
    }
    qbk_free(p->t);
    qbk_free(p->out_of);
    memset(p, 0, sizeof(*p));
}

/* A 4/8-bit symmetric grid with contiguous groups a multiple of 32 wide:
 * each 32-column block lies in one group, so one scale per block. */
static int grid_fits(const qb_model_src *src, size_t i, const qb_tensor_info *ti, uint32_t bits,
                     qb_grid_info *gi)
{
    memset(gi, 0, sizeof(*gi));
    gi->struct_size = sizeof(*gi);
    if (!ti->has_grid || !src->get_grid_info || src->get_grid_info(src->handle, i, gi) != QB_OK)
        return 0;
    return gi->bits == bits && gi->symmetric && !gi->col_group && gi->group_size > 0 &&
           gi->group_size % 32 == 0 && qb_tensor_cols(ti) % 32 == 0;
}

static int64_t cfg_int(const cJSON *cfg, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

/* Decides type, how and action of output tensor t from its first part. */
static void choose(const qb_model_src *src, const ggw_opts *o, ggw_tensor *t, const qb_tensor_info *ti, uint32_t q,
                   const char *rule)
{
    const gguf_ggml_type_info *qi = gguf_ggml_type_get(q);
    qb_grid_info gi;
    int one_d = t->n_dims == 1 || (t->n_dims == 2 && t->ne[1] == 1);

    t->how = GGW_FLOAT;
    if (o->auto_type && !one_d) {
        size_t k;
        int ok4 = 1, ok8 = 1;
        for (k = 0; k < t->n_parts; k++) {
            const qb_tensor_info *pi;
            if (src->tensor_info(src->handle, t->part[k], &pi) != QB_OK) {
                ok4 = ok8 = 0;
                break;
            }
            ok4 = ok4 && grid_fits(src, t->part[k], pi, 4, &gi);
            ok8 = ok8 && grid_fits(src, t->part[k], pi, 8, &gi);
        }
        if (ok4 || ok8) {
            t->type = ok4 ? GGUF_GGML_TYPE_Q4_0 : GGUF_GGML_TYPE_Q8_0;
            t->how = ok4 ? GGW_GRID_Q4_0 : GGW_GRID_Q8_0;
            t->action = QB_PLAN_EXACT;
            snprintf(t->why, sizeof(t->why),
                     "symmetric %d-bit grid, group %lld (a multiple of 32): codes carried over into %s blocks "
                     "(exact where each scale is an fp16 value; checked per block while writing)",
                     ok4 ? 4 : 8, (long long)gi.group_size, ok4 ? "Q4_0" : "Q8_0");
            return;
        }
    }
    if (one_d || strstr(t->name, "ffn_gate_inp")) {
        t->type = GGUF_GGML_TYPE_F32;
        /* a wider type changes no value, but only F32 keeps the stored type */
        t->action = ti->source_dtype == QB_DT_F32 && !t->plus_one ? QB_PLAN_COPY : QB_PLAN_CONVERT;
        snprintf(t->why, sizeof(t->why), "%s kept in F32 (llama.cpp keeps vectors and routers in F32)%s",
                 one_d ? "vector" : "router", t->plus_one ? ", stored as w + 1 (Gemma norm)" : "");
        return;
    }
    if (t->ne[0] % (int64_t)qi->blck != 0) {
        /* llama-quant.cpp tensor_type_fallback for the K types; F16 for the
         * others (convert_hf_to_gguf.py's QuantError fallback) */
        uint32_t fb = q == GGUF_GGML_TYPE_Q4_K   ? GGUF_GGML_TYPE_Q5_0
                      : q == GGUF_GGML_TYPE_Q5_K ? GGUF_GGML_TYPE_Q5_1
                      : q == GGUF_GGML_TYPE_Q6_K ? GGUF_GGML_TYPE_Q8_0
                                                 : GGUF_GGML_TYPE_F16;
        if (t->ne[0] % (int64_t)gguf_ggml_type_get(fb)->blck != 0)
            fb = GGUF_GGML_TYPE_F16;
        t->type = fb;
        t->action = fb == GGUF_GGML_TYPE_F16 ? QB_PLAN_CONVERT : QB_PLAN_REQUANT;
        snprintf(t->why, sizeof(t->why), "row length %lld is not a multiple of %s's block %u: %s instead",
                 (long long)t->ne[0], qi->name, qi->blck, gguf_ggml_type_get(fb)->name);
        return;
    }
    t->type = q;
    if (q == GGUF_GGML_TYPE_F32 || q == GGUF_GGML_TYPE_F16 || q == GGUF_GGML_TYPE_BF16) {
        int same = (q == GGUF_GGML_TYPE_F32 && ti->source_dtype == QB_DT_F32) ||
                   (q == GGUF_GGML_TYPE_F16 && ti->source_dtype == QB_DT_F16) ||
                   (q == GGUF_GGML_TYPE_BF16 && ti->source_dtype == QB_DT_BF16);
        t->action = same ? QB_PLAN_COPY : QB_PLAN_CONVERT;
        snprintf(t->why, sizeof(t->why), "%s from the source's %s%s", qi->name, ti->source_encoding,
                 same ? " (same values)" : " (rounded to nearest even)");
        return;
    }
    t->action = QB_PLAN_REQUANT;
    snprintf(t->why, sizeof(t->why), "%s quantized from %s (llama.cpp's quantize_row_%s_ref arithmetic)%s%s", qi->name,
             ti->source_encoding, qi->name, o->auto_type ? "; no exact path for this source" : "",
             rule ? rule : "");
    /* quantize_row_<type>_ref names are lower case in llama.cpp */
    for (char *c = strstr(t->why, "quantize_row_"); c && *c && *c != '('; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
}

/* The type of output tensor t (shape set) from the preset, the overrides
 * and choose(). */
static void pick_type(const qb_model_src *src, const ggw_opts *o, preset_state *ps, ggw_tensor *t,
                      const qb_tensor_info *t0)
{
    uint32_t want = o->type;
    const char *rule = NULL;
    char rbuf[160];
    size_t r;
    int one = t->n_dims == 1 || (t->n_dims == 2 && t->ne[1] == 1);
    if (o->preset && !one && !strstr(t->name, "ffn_gate_inp")) {
        want = preset_type(o, ps, t, &rule);
        if (rule) {
            snprintf(rbuf, sizeof(rbuf), "; %s rule: %s", o->preset == GGW_PRESET_Q4_K_M ? "Q4_K_M" : "Q5_K_M",
                     rule);
            rule = rbuf;
        }
    }
    for (r = 0; r < o->n_over && !one; r++)
        if (regexec(o->over_re[r], t->name, 0, NULL, 0) == 0) {
            want = o->over_type[r];
            snprintf(rbuf, sizeof(rbuf), "; tensor_type override %zu", r + 1);
            rule = rbuf;
            break;
        }
    choose(src, o, t, t0, want, rule);
}

typedef struct build {
    const qb_host *h;
    const qb_model_src *src;
    ggw_plan *p;
    size_t cap;
    gguf_wname *wn; /* [n_src] */
} build;

static ggw_tensor *find_out(ggw_plan *p, const char *name)
{
    size_t i;
    for (i = 0; i < p->n; i++)
        if (strcmp(p->t[i].name, name) == 0)
            return &p->t[i];
    return NULL;
}

/* Appends a zeroed output tensor named `name` (pointers into p->t are
 * invalidated); NULL when out of memory. */
static ggw_tensor *new_out(build *b, const char *name)
{
    ggw_plan *p = b->p;
    ggw_tensor *t;
    if (p->n == b->cap) {
        size_t nc = b->cap ? 2 * b->cap : 64;
        ggw_tensor *nt = qbk_realloc(p->t, nc * sizeof(*nt));
        if (!nt)
            return NULL;
        p->t = nt;
        b->cap = nc;
    }
    t = &p->t[p->n++];
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", name);
    return t;
}

/* An F32 vector made from config.json (rope factors), placed before the
 * weights as llama.cpp's converter yields generate_extra_tensors first. */
static qb_status add_gen(build *b, const char *name, const float *v, int64_t n, const char *why)
{
    ggw_tensor *t = new_out(b, name);
    if (!t || !(t->gen = qbk_malloc((size_t)n * sizeof(float))))
        return b->h->set_error(b->h, QB_E_NOMEM, "%s: out of memory", b->src->source_path);
    memcpy(t->gen, v, (size_t)n * sizeof(float));
    t->n_dims = 1;
    t->ne[0] = n;
    t->type = GGUF_GGML_TYPE_F32;
    t->how = GGW_GEN;
    t->action = QB_PLAN_CONVERT;
    t->nbytes = (uint64_t)n * 4;
    snprintf(t->why, sizeof(t->why), "%s", why);
    return QB_OK;
}

/* The rope factor tensors config.json asks for (wrope.c). */
static qb_status plan_rope_factors(build *b, const cJSON *cfg)
{
    ggw_rope_factors f;
    size_t i;
    qb_status st = ggw_rope_factors_make(b->h, b->src->source_path, cfg, b->p->arch, &f);
    for (i = 0; i < f.n && !st; i++)
        st = add_gen(b, f.name[i], f.v[i], f.len, f.why);
    ggw_rope_factors_free(&f);
    return st;
}

/* deepseek2 kv_b_proj [H * (nope + v), R] (docs/formats/gguf.md
 * "deepseek2"): attn_k_b ne {nope, R, H} (each head's first nope rows,
 * transposed) and attn_v_b ne {R, v, H} (its last v rows). Neither keeps a
 * grid: k_b is transposed, and both are quantized from the float values. */
static qb_status plan_kv_b(build *b, const cJSON *cfg, const ggw_opts *o, preset_state *ps, size_t k)
{
    ggw_plan *p = b->p;
    ggw_tensor *tk = &p->t[k], *tv = &p->t[tk->kv_other];
    const int64_t H = cfg_int(cfg, "num_attention_heads"), nope = cfg_int(cfg, "qk_nope_head_dim"),
                  vd = cfg_int(cfg, "v_head_dim");
    const qb_tensor_info *ti;
    ggw_opts flt = *o;
    uint64_t rk = 0, rv = 0;
    int64_t R;
    qb_status st;
    if ((st = b->src->tensor_info(b->src->handle, tk->part[0], &ti)))
        return st;
    R = qb_tensor_cols(ti);
    if (H < 1 || nope < 1 || vd < 1 || ti->n_dims != 2 || qb_tensor_rows(ti) != H * (nope + vd))
        return b->h->set_error(b->h, QB_E_FORMAT,
                               "%s: tensor '%s': %lld rows, config.json implies num_attention_heads %lld x "
                               "(qk_nope_head_dim %lld + v_head_dim %lld): cannot split kv_b as llama.cpp does",
                               b->src->source_path, ti->name, (long long)qb_tensor_rows(ti), (long long)H,
                               (long long)nope, (long long)vd);
    tk->kv_heads = tv->kv_heads = H;
    tk->kv_nope = tv->kv_nope = nope;
    tk->kv_vdim = tv->kv_vdim = vd;
    tk->n_dims = tv->n_dims = 3;
    tk->ne[0] = nope, tk->ne[1] = R, tk->ne[2] = H;
    tv->ne[0] = R, tv->ne[1] = vd, tv->ne[2] = H;
    flt.auto_type = 0;
    pick_type(b->src, &flt, ps, tk, ti);
    pick_type(b->src, &flt, ps, tv, ti);
    if (gguf_ggml_row_bytes(tk->type, nope, &rk) || gguf_ggml_row_bytes(tv->type, R, &rv))
        return b->h->set_error(b->h, QB_E_INTERNAL, "gguf writer: no row size for %s", tk->name);
    tk->nbytes = rk * (uint64_t)(R * H);
    tv->nbytes = rv * (uint64_t)(vd * H);
    return QB_OK;
}

qb_status ggw_plan_build(const qb_host *h, const qb_model_src *src, const cJSON *cfg, const ggw_opts *o,
                         size_t *order, ggw_plan *p)
{
    const qb_model_info *mi = src->info;
    build b = {h, src, p, 0, NULL};
    preset_state ps;
    size_t i, n = mi->n_tensors, k, pos = 0;
    qb_status st = QB_OK;

    memset(p, 0, sizeof(*p));
    memset(&ps, 0, sizeof(ps));
    p->arch = gguf_arch_for_model_type(mi->architecture);
    if (!p->arch)
        return h->set_error(h, QB_E_UNSUPPORTED, "%s: model_type '%s' has no GGUF architecture in the gguf writer",
                            src->source_path, mi->architecture ? mi->architecture : "(none)");
    if (p->arch->bit & GGUF_A_GPTOSS)
        return h->set_error(h, QB_E_UNSUPPORTED,
                            "%s: the gguf writer does not write architecture '%s' yet (gpt-oss experts)",
                            src->source_path, p->arch->gguf_name);
    p->n_head = cfg_int(cfg, "num_attention_heads");
    p->n_head_kv = cfg_int(cfg, "num_key_value_heads");
    if (p->n_head_kv < 0)
        p->n_head_kv = p->n_head;
    p->n_src = n;
    p->out_of = qbk_calloc(n ? n : 1, sizeof(*p->out_of));
    b.wn = qbk_calloc(n ? n : 1, sizeof(*b.wn));
    if (!p->out_of || !b.wn) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
        goto out;
    }
    if ((st = plan_rope_factors(&b, cfg)))
        goto out;
    /* Pass 1: names, output tensors in the order of their first part. */
    for (i = 0; i < n && !st; i++) {
        const qb_tensor_info *ti;
        gguf_wname *w = &b.wn[i];
        ggw_tensor *t;
        if ((st = src->tensor_info(src->handle, i, &ti)) != QB_OK)
            break;
        st = gguf_names_to_gguf(p->arch, ti->name, w);
        if (st == QB_E_NOT_FOUND) {
            st = h->set_error(h, QB_E_UNSUPPORTED, "%s: tensor '%s' has no GGUF name for architecture '%s'",
                              src->source_path, ti->name, p->arch->gguf_name);
            break;
        }
        if (st) {
            st = h->set_error(h, QB_E_UNSUPPORTED, "%s: tensor '%s': its GGUF layout is not written by the gguf writer yet",
                              src->source_path, ti->name);
            break;
        }
        if (ti->n_dims > 2) {
            st = h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': %u dimensions, expected 1 or 2", src->source_path,
                              ti->name, ti->n_dims);
            break;
        }
        t = find_out(p, w->name);
        if (!t && w->kind == GGUF_W_KV_B) {
            /* attn_k_b, then its attn_v_b right after (DeepseekV2Model yields k_b then v_b) */
            char vname[GGUF_MAX_NAME];
            const char *kb = strstr(w->name, "attn_k_b");
            size_t ik;
            snprintf(vname, sizeof(vname), "%.*sattn_v_b%s", (int)(kb - w->name), w->name, kb + 8);
            if (!new_out(&b, w->name) || !new_out(&b, vname)) {
                st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
                break;
            }
            ik = p->n - 2;
            p->t[ik].kv = GGW_KV_K;
            p->t[ik].kv_other = ik + 1;
            p->t[ik + 1].kv = GGW_KV_V;
            p->out_of[i] = ik;
            continue;
        }
        if (!t) {
            if (!(t = new_out(&b, w->name))) {
                st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
                break;
            }
            t->plus_one = w->plus_one;
            if (w->perm) {
                int64_t heads = w->perm == 1 ? p->n_head : p->n_head_kv;
                int64_t rows = ti->n_dims == 1 ? ti->dims[0] : ti->dims[0];
                if (heads < 1 || rows % (2 * heads) != 0) {
                    st = h->set_error(h, QB_E_FORMAT,
                                      "%s: tensor '%s': %lld rows are not a multiple of 2 x %lld heads "
                                      "(config.json num_attention_heads / num_key_value_heads): cannot apply "
                                      "llama.cpp's rope permutation",
                                      src->source_path, ti->name, (long long)rows, (long long)heads);
                    break;
                }
                t->perm_heads = (uint32_t)heads;
            }
        }
        p->out_of[i] = (size_t)(t - p->t);
    }
    /* Pass 2: parts in row order (experts by index, fused parts by part). */
    for (i = 0; i < n && !st; i++) {
        ggw_tensor *t = &p->t[p->out_of[i]];
        size_t want = (size_t)b.wn[i].index + 1;
        if (want > t->n_parts) {
            size_t *np = qbk_realloc(t->part, want * sizeof(*np));
            if (!np) {
                st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", src->source_path);
                break;
            }
            for (k = t->n_parts; k < want; k++)
                np[k] = (size_t)-1;
            t->part = np;
            t->n_parts = want;
        }
        if (t->kv == GGW_KV_K && want != 1) {
            st = h->set_error(h, QB_E_FORMAT, "%s: two tensors give GGUF tensor '%s'", src->source_path, t->name);
            break;
        }
        if (t->part[want - 1] != (size_t)-1) {
            st = h->set_error(h, QB_E_FORMAT, "%s: two tensors give part %d of GGUF tensor '%s'", src->source_path,
                              b.wn[i].index, t->name);
            break;
        }
        t->part[want - 1] = i;
    }
    ps.n_layer = cfg_int(cfg, "num_hidden_layers");
    ps.n_expert = cfg_int(cfg, "num_local_experts") > 0 ? cfg_int(cfg, "num_local_experts") : cfg_int(cfg, "num_experts");
    ps.has_output = find_out(p, "output.weight") != NULL;
    for (k = 0; k < p->n; k++)
        if (strstr(p->t[k].name, "attn_v.weight") || strstr(p->t[k].name, "attn_qkv.weight"))
            ps.n_attn_v++;
    for (k = 0; k < p->n && !st; k++) {
        ggw_tensor *t = &p->t[k];
        int64_t rows = 0, cols = -1;
        int one_d = 0;
        size_t j;
        if (t->how == GGW_GEN || t->kv == GGW_KV_V)
            continue; /* made above / planned with its attn_k_b */
        if (t->kv == GGW_KV_K) {
            if ((st = plan_kv_b(&b, cfg, o, &ps, k)))
                break;
            continue;
        }
        for (j = 0; j < t->n_parts; j++)
            if (t->part[j] == (size_t)-1) {
                st = h->set_error(h, QB_E_FORMAT, "%s: GGUF tensor '%s' misses part/expert %zu of %zu",
                                  src->source_path, t->name, j, t->n_parts);
                break;
            }
        if (st)
            break;
        for (j = 0; j < t->n_parts && !st; j++) {
            const qb_tensor_info *ti;
            if ((st = src->tensor_info(src->handle, t->part[j], &ti)) != QB_OK)
                break;
            if (cols >= 0 && (qb_tensor_cols(ti) != cols || (ti->n_dims == 1) != one_d)) {
                st = h->set_error(h, QB_E_FORMAT, "%s: tensor '%s': shape differs from the other parts of '%s'",
                                  src->source_path, ti->name, t->name);
                break;
            }
            cols = qb_tensor_cols(ti);
            one_d = ti->n_dims == 1;
            rows += qb_tensor_rows(ti);
        }
        if (st)
            break;
        {
            int expert = b.wn[t->part[0]].kind == GGUF_W_EXPERT;
            const qb_tensor_info *t0;
            uint64_t rb = 0;
            if ((st = src->tensor_info(src->handle, t->part[0], &t0)) != QB_OK)
                break;
            if (one_d) {
                t->n_dims = 1;
                t->ne[0] = cols;
            } else if (expert) {
                t->n_dims = 3;
                t->ne[0] = cols;
                t->ne[1] = qb_tensor_rows(t0);
                t->ne[2] = (int64_t)t->n_parts;
            } else {
                t->n_dims = 2;
                t->ne[0] = cols;
                t->ne[1] = rows;
            }
            pick_type(src, o, &ps, t, t0);
            if (gguf_ggml_row_bytes(t->type, t->ne[0], &rb) != 0) {
                st = h->set_error(h, QB_E_INTERNAL, "gguf writer: no row size for %s", t->name);
                break;
            }
            t->nbytes = rb * (uint64_t)(one_d ? 1 : rows);
            if (one_d && t->n_parts > 1) {
                st = h->set_error(h, QB_E_FORMAT, "%s: vector '%s' made of %zu parts", src->source_path, t->name,
                                  t->n_parts);
                break;
            }
        }
    }
    if (!st) {
        /* Shards as gguf-split makes them (split_strategy): by size, a new
         * file when this tensor's padded bytes would take the file's tensor
         * data past the limit (a tensor larger than the limit gets a file of
         * its own rather than gguf-split's error); by count, every
         * split_max_tensors tensors. Offsets are per file. */
        uint64_t off = 0, shard = 0, in_shard = 0;
        for (k = 0; k < p->n; k++) {
            uint64_t padded = (p->t[k].nbytes + GGW_ALIGN - 1) / GGW_ALIGN * GGW_ALIGN;
            if (in_shard > 0 && ((o->split_max_size && off + padded > o->split_max_size) ||
                                 (o->split_max_tensors && in_shard == o->split_max_tensors))) {
                shard++;
                off = 0;
                in_shard = 0;
            }
            in_shard++;
            p->t[k].shard = (uint32_t)shard;
            p->t[k].offset = off;
            off += padded;
            for (i = 0; i < p->t[k].n_parts; i++)
                order[pos++] = p->t[k].part[i];
        }
        /* llama_ftype 15 Q4_K_M, 17 Q5_K_M */
        p->ftype = o->preset == GGW_PRESET_Q4_K_M ? 15 : o->preset == GGW_PRESET_Q5_K_M ? 17 : ftype_of(o->type);
        p->n_shards = (uint32_t)shard + 1;
        p->split = o->split_max_size || o->split_max_tensors;
        if (shard + 1 > 65535) /* split.count is a UINT16 */
            st = h->set_error(h, QB_E_INVALID, "%s: the split limit gives %llu files, more than split.count holds "
                                               "(65535)",
                              src->source_path, (unsigned long long)(shard + 1));
    }
out:
    qbk_free(b.wn);
    if (st)
        ggw_plan_free(p);
    return st;
}
