/*
 * config.json / generation_config.json from GGUF metadata (see
 * gguf_hfconfig.h).
 */
#include "gguf_hfconfig.h"

#include "ggml_types.h"
#include "gguf_kv.h"
#include "qbk_alloc.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cfg {
    const qb_host *h;
    const gguf_file *f;
    const gguf_hparams *hp;
    cJSON *root;
    int oom;
} cfg;

static void put_num(cfg *c, cJSON *obj, const char *field, double v)
{
    if (!cJSON_AddNumberToObject(obj, field, v))
        c->oom = 1;
}

/* A float-typed config field, printed with a decimal point or exponent:
 * cJSON prints 30.0 as "30", which transformers 5's strict config classes
 * (huggingface_hub strict dataclasses) refuse for fields typed float, such
 * as Gemma2's final_logit_softcapping; Python's json writes "30.0". */
static void put_float(cfg *c, cJSON *obj, const char *field, double v)
{
    char buf[64];
    cJSON *item;
    if (!isfinite(v)) { /* JSON has no inf/nan: cJSON's null, as before */
        put_num(c, obj, field, v);
        return;
    }
    snprintf(buf, sizeof(buf), "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof(buf), "%.17g", v);
    if (!strpbrk(buf, ".eE"))
        strncat(buf, ".0", sizeof(buf) - strlen(buf) - 1);
    item = cJSON_CreateRaw(buf);
    if (!item || !cJSON_AddItemToObject(obj, field, item)) {
        cJSON_Delete(item);
        c->oom = 1;
    }
}

/* A value that went through a GGUF FLOAT32, printed with the fewest
 * digits that give the same float (0.707f as 0.707, not 0.70700001716). */
static void put_f32(cfg *c, cJSON *obj, const char *field, float v)
{
    char buf[32];
    int p;
    cJSON *item;
    if (!isfinite(v)) {
        put_num(c, obj, field, v);
        return;
    }
    for (p = 6; p < 9; p++) {
        snprintf(buf, sizeof(buf), "%.*g", p, (double)v);
        if ((float)strtod(buf, NULL) == v)
            break;
    }
    if (p == 9)
        snprintf(buf, sizeof(buf), "%.9g", (double)v);
    if (!strpbrk(buf, ".eEn"))
        strncat(buf, ".0", sizeof(buf) - strlen(buf) - 1);
    item = cJSON_CreateRaw(buf);
    if (!item || !cJSON_AddItemToObject(obj, field, item)) {
        cJSON_Delete(item);
        c->oom = 1;
    }
}

/* Copies an {arch}.<suffix> number when present: a GGUF float stays a
 * float (put_float), an integer (original_context_length) an integer. */
static qb_status copy_float(cfg *c, cJSON *obj, const char *suffix, const char *field, double *got)
{
    char key[128];
    double v;
    qb_status st;
    gguf_arch_key(c->hp, suffix, key, sizeof(key));
    st = gguf_kv_float(c->h, c->f, key, &v);
    if (st == QB_E_NOT_FOUND)
        return QB_OK;
    if (st)
        return st;
    if (field) {
        const gguf_kv *kv = gguf_kv_find(c->f, key);
        if (kv->type == GGUF_VT_FLOAT32 || kv->type == GGUF_VT_FLOAT64)
            put_float(c, obj, field, v);
        else
            put_num(c, obj, field, v);
    }
    if (got)
        *got = v;
    return QB_OK;
}

static qb_status copy_token_id(cfg *c, cJSON *a, cJSON *b, const char *key, const char *field)
{
    int64_t v;
    qb_status st = gguf_kv_int(c->h, c->f, key, &v);
    if (st == QB_E_NOT_FOUND)
        return QB_OK;
    if (st)
        return st;
    put_num(c, a, field, (double)v);
    if (b)
        put_num(c, b, field, (double)v);
    return QB_OK;
}

/* generation_config.json eos_token_id: every distinct one of
 * tokenizer.ggml.{eos,eot,eom}_token_id, in that order; llama.cpp stops
 * generation on each of them (all are end-of-generation tokens), and
 * transformers' GenerationConfig takes a list for several. A single id
 * stays a number, as HF writes it. config.json keeps eos alone. */
static qb_status eos_ids(cfg *c, cJSON *gen)
{
    static const char *const keys[] = {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                       "tokenizer.ggml.eom_token_id"};
    int64_t ids[3];
    int n = 0, i, j;
    cJSON *list;
    for (i = 0; i < 3; i++) {
        int64_t v;
        qb_status st = gguf_kv_int(c->h, c->f, keys[i], &v);
        if (st == QB_E_NOT_FOUND)
            continue;
        if (st)
            return st;
        for (j = 0; j < n && ids[j] != v; j++)
            ;
        if (j == n)
            ids[n++] = v;
    }
    if (n == 0)
        return QB_OK;
    if (n == 1) {
        put_num(c, gen, "eos_token_id", (double)ids[0]);
        return QB_OK;
    }
    list = cJSON_AddArrayToObject(gen, "eos_token_id");
    for (i = 0; list && i < n; i++) {
        cJSON *num = cJSON_CreateNumber((double)ids[i]);
        if (!num || !cJSON_AddItemToArray(list, num)) {
            cJSON_Delete(num);
            list = NULL;
        }
    }
    if (!list)
        c->oom = 1;
    return QB_OK;
}

qb_status gguf_hfconfig_vocab_size(const qb_host *h, const gguf_model *m, const gguf_hparams *hp, int64_t *out)
{
    const gguf_file *f = gguf_model_meta(m);
    char key[128];
    uint64_t n;
    const gguf_tinfo *e;
    qb_status st;
    gguf_arch_key(hp, "vocab_size", key, sizeof(key));
    st = gguf_kv_int(h, f, key, out);
    if (st != QB_E_NOT_FOUND)
        return st;
    st = gguf_kv_array_len(h, f, "tokenizer.ggml.tokens", &n);
    if (st == QB_OK) {
        *out = (int64_t)n;
        return QB_OK;
    }
    if (st != QB_E_NOT_FOUND)
        return st;
    e = gguf_model_find(m, "token_embd.weight");
    if (!e)
        return h->set_error(h, QB_E_FORMAT, "%s: no vocab_size, token list or token_embd.weight", f->path);
    *out = e->ne[1];
    return QB_OK;
}

/* Reads a small F32-decodable vector tensor into a JSON array. */
static qb_status vector_json(cfg *c, const gguf_tinfo *t, cJSON **arr, float **vals)
{
    float *v;
    int64_t i;
    if (t->n_dims != 1 || t->ne[0] > 65536)
        return c->h->set_error(c->h, QB_E_FORMAT, "%s: tensor '%s': expected a short vector", t->file->path, t->name);
    v = qbk_malloc((size_t)t->ne[0] * sizeof(float));
    *arr = cJSON_CreateArray();
    if (!v || !*arr) {
        qbk_free(v);
        cJSON_Delete(*arr);
        return c->h->set_error(c->h, QB_E_NOMEM, "%s: out of memory", t->file->path);
    }
    gguf_ggml_dequantize_row(t->type, t->data, v, t->ne[0]);
    for (i = 0; i < t->ne[0]; i++) {
        cJSON *n = cJSON_CreateNumber(v[i]);
        if (!n || !cJSON_AddItemToArray(*arr, n))
            c->oom = 1;
    }
    if (vals)
        *vals = v;
    else
        qbk_free(v);
    return QB_OK;
}

/* llama3 rope scaling is stored only as rope_freqs.weight (docs/formats/gguf.md,
 * "Metadata to config.json"). Its parameters are not stored; rather than guess, recompute the
 * factors of each published Llama 3.x parameter set exactly as
 * LlamaModel.generate_extra_tensors does and accept the one that matches. */
static qb_status llama3_rope(cfg *c, const gguf_tinfo *t, double theta)
{
    static const double sets[][4] = {
        /* factor, low_freq_factor, high_freq_factor, original ctx */
        {8.0, 1.0, 4.0, 8192.0},  /* Llama 3.1 */
        {32.0, 1.0, 4.0, 8192.0}, /* Llama 3.2 1B/3B */
    };
    const int64_t dim = c->hp->rope_dim > 0 ? c->hp->rope_dim : c->hp->head_dim;
    float *v = NULL;
    cJSON *arr = NULL, *rs;
    size_t s;
    int64_t i;
    qb_status st;

    if (t->n_dims != 1 || t->ne[0] * 2 != dim)
        return c->h->set_error(c->h, QB_E_FORMAT, "%s: tensor 'rope_freqs.weight' has %lld factors, expected %lld",
                               t->file->path, (long long)t->ne[0], (long long)dim / 2);
    if ((st = vector_json(c, t, &arr, &v)))
        return st;
    cJSON_Delete(arr);
    for (s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
        const double factor = sets[s][0], lo = sets[s][1], hi = sets[s][2], old = sets[s][3];
        int ok = 1;
        for (i = 0; i < t->ne[0] && ok; i++) {
            double freq = 1.0 / pow(theta, (double)(2 * i) / (double)dim);
            double wavelen = 2.0 * M_PI / freq, want;
            if (wavelen < old / hi)
                want = 1.0;
            else if (wavelen > old / lo)
                want = factor;
            else {
                double smooth = (old / wavelen - lo) / (hi - lo);
                want = 1.0 / ((1.0 - smooth) / factor + smooth);
            }
            ok = fabs((double)v[i] - want) <= 1e-4 * want;
        }
        if (ok) {
            rs = cJSON_AddObjectToObject(c->root, "rope_scaling");
            if (!rs)
                c->oom = 1;
            else {
                if (!cJSON_AddStringToObject(rs, "rope_type", "llama3"))
                    c->oom = 1;
                put_float(c, rs, "factor", factor);
                put_float(c, rs, "low_freq_factor", lo);
                put_float(c, rs, "high_freq_factor", hi);
                put_num(c, rs, "original_max_position_embeddings", old);
            }
            qbk_free(v);
            return QB_OK;
        }
    }
    qbk_free(v);
    return c->h->set_error(c->h, QB_E_UNSUPPORTED,
                           "%s: tensor 'rope_freqs.weight': llama3 rope factors match no known parameter set; refusing to guess rope_scaling",
                           t->file->path);
}

static qb_status rope_scaling(cfg *c, const gguf_special *sp, double theta)
{
    char key[128];
    char *type = NULL;
    qb_status st;
    double factor = -1, orig = -1;
    cJSON *rs;

    if (sp->rope_freqs)
        return llama3_rope(c, sp->rope_freqs, theta);
    gguf_arch_key(c->hp, "rope.scaling.type", key, sizeof(key));
    st = gguf_kv_string(c->h, c->f, key, &type);
    if (st == QB_E_NOT_FOUND && !sp->rope_long && !sp->rope_short)
        return QB_OK;
    if (st && st != QB_E_NOT_FOUND)
        return st;
    if (type && strcmp(type, "none") == 0) {
        qbk_free(type);
        return QB_OK;
    }
    rs = cJSON_AddObjectToObject(c->root, "rope_scaling");
    if (!rs) {
        qbk_free(type);
        return c->h->set_error(c->h, QB_E_NOMEM, "%s: out of memory", c->f->path);
    }
    if ((sp->rope_long || sp->rope_short) && (!type || strcmp(type, "longrope") == 0)) {
        cJSON *arr;
        if (!sp->rope_long || !sp->rope_short) {
            qbk_free(type);
            return c->h->set_error(c->h, QB_E_FORMAT, "%s: only one of rope_factors_long/short is present", c->f->path);
        }
        if (!cJSON_AddStringToObject(rs, "type", "longrope"))
            c->oom = 1;
        if ((st = vector_json(c, sp->rope_long, &arr, NULL)))
            goto out;
        cJSON_AddItemToObject(rs, "long_factor", arr);
        if ((st = vector_json(c, sp->rope_short, &arr, NULL)))
            goto out;
        cJSON_AddItemToObject(rs, "short_factor", arr);
    } else if (type && (strcmp(type, "linear") == 0 || strcmp(type, "yarn") == 0)) {
        if (!cJSON_AddStringToObject(rs, "rope_type", type))
            c->oom = 1;
        if ((st = copy_float(c, rs, "rope.scaling.factor", "factor", &factor)))
            goto out;
        if (factor <= 0) {
            st = c->h->set_error(c->h, QB_E_FORMAT, "%s: rope scaling '%s' without rope.scaling.factor", c->f->path, type);
            goto out;
        }
        if ((st = copy_float(c, rs, "rope.scaling.original_context_length", "original_max_position_embeddings",
                             &orig)) ||
            (st = copy_float(c, rs, "rope.scaling.yarn_beta_fast", "beta_fast", NULL)) ||
            (st = copy_float(c, rs, "rope.scaling.yarn_beta_slow", "beta_slow", NULL)))
            goto out;
        if (c->hp->arch->bit == GGUF_A_DEEPSEEK2 && strcmp(type, "yarn") == 0) {
            /* DeepseekV2Model writes yarn_log_multiplier = 0.1 *
             * mscale_all_dim, and llama.cpp scales attention by it alone,
             * i.e. as transformers does when mscale == mscale_all_dim. */
            double lm = -1;
            if ((st = copy_float(c, rs, "rope.scaling.yarn_log_multiplier", NULL, &lm)))
                goto out;
            if (lm > 0) {
                put_f32(c, rs, "mscale", (float)(lm / 0.1));
                put_f32(c, rs, "mscale_all_dim", (float)(lm / 0.1));
            }
        }
    } else {
        st = c->h->set_error(c->h, QB_E_UNSUPPORTED, "%s: rope scaling type '%s' is not supported", c->f->path,
                             type ? type : "(longrope factors without longrope type)");
        goto out;
    }
    if (sp->rope_long && (st = copy_float(c, c->root, "rope.scaling.original_context_length",
                                          "original_max_position_embeddings", NULL)))
        goto out;
out:
    qbk_free(type);
    return st;
}

/* Gemma3 sliding-window layout. llama.cpp load_hparams (LLM_ARCH_GEMMA3)
 * uses set_swa_pattern(6) and a local rope base of 10000 unless the file
 * says otherwise; newer files store attention.sliding_window_pattern,
 * possibly as a per-layer BOOL array (true = sliding). */
static qb_status gemma3_swa(cfg *c)
{
    char key[128];
    const gguf_kv *kv;
    int64_t pat;
    qb_status st;
    if (!cJSON_GetObjectItem(c->root, "rope_local_base_freq"))
        put_float(c, c->root, "rope_local_base_freq", 10000.0);
    gguf_arch_key(c->hp, "attention.sliding_window_pattern", key, sizeof(key));
    kv = gguf_kv_find(c->f, key);
    if (kv && kv->type == GGUF_VT_ARRAY) {
        cJSON *arr;
        uint64_t i;
        if (kv->arr_type != GGUF_VT_BOOL || kv->arr_n != (uint64_t)c->hp->n_layer)
            return c->h->set_error(c->h, QB_E_FORMAT, "%s: metadata '%s' is not one BOOL per layer", c->f->path, key);
        arr = cJSON_AddArrayToObject(c->root, "layer_types");
        for (i = 0; arr && i < kv->arr_n; i++)
            if (!cJSON_AddItemToArray(arr, cJSON_CreateString(kv->val[i] ? "sliding_attention" : "full_attention")))
                c->oom = 1;
        if (!arr)
            c->oom = 1;
        return QB_OK;
    }
    st = gguf_kv_int(c->h, c->f, key, &pat);
    if (st == QB_E_NOT_FOUND) {
        pat = 6;
        st = QB_OK;
    }
    if (st)
        return st;
    put_num(c, c->root, "sliding_window_pattern", (double)pat);
    return QB_OK;
}

/* deepseek2 → transformers DeepseekV3Config / DeepseekV2Config fields
 * (docs/formats/gguf.md "deepseek2"): MLA widths, routing. */
static qb_status deepseek2_config(cfg *c)
{
    const gguf_hparams *p = c->hp;
    const gguf_mla *a = &p->mla;
    char key[128];
    int norm = 0;
    double scale = 1.0; /* llama.cpp: no expert_weights_scale = no scaling */
    qb_status st;

    if (a->q_lora > 0)
        put_num(c, c->root, "q_lora_rank", (double)a->q_lora);
    else if (!cJSON_AddNullToObject(c->root, "q_lora_rank"))
        c->oom = 1;
    put_num(c, c->root, "kv_lora_rank", (double)a->kv_lora);
    put_num(c, c->root, "qk_nope_head_dim", (double)a->qk_nope);
    put_num(c, c->root, "qk_rope_head_dim", (double)a->qk_rope);
    put_num(c, c->root, "v_head_dim", (double)a->v_head);
    put_num(c, c->root, "n_routed_experts", (double)p->n_expert);
    put_num(c, c->root, "num_experts_per_tok", (double)p->n_expert_used);
    put_num(c, c->root, "moe_intermediate_size", (double)p->n_ff_exp);
    put_num(c, c->root, "n_shared_experts", (double)a->n_shared);
    put_num(c, c->root, "first_k_dense_replace", (double)a->n_dense);
    if ((st = copy_float(c, NULL, "expert_weights_scale", NULL, &scale)))
        return st;
    put_f32(c, c->root, "routed_scaling_factor", (float)scale);
    gguf_arch_key(p, "expert_weights_norm", key, sizeof(key));
    st = gguf_kv_bool(c->h, c->f, key, &norm);
    if (st && st != QB_E_NOT_FOUND)
        return st;
    if (!cJSON_AddBoolToObject(c->root, "norm_topk_prob", norm))
        c->oom = 1;
    /* Group-limited routing: llama.cpp groups only when expert_group_count
     * > 1; transformers' V3 defaults n_group to 8, so 1/1 is written. */
    if (a->n_group > 1 && (a->n_group_used < 1 || a->n_group_used > a->n_group || p->n_expert % a->n_group != 0))
        return c->h->set_error(c->h, QB_E_FORMAT, "%s: expert_group_count %lld / expert_group_used_count %lld do not fit %lld experts",
                               c->f->path, (long long)a->n_group, (long long)a->n_group_used, (long long)p->n_expert);
    put_num(c, c->root, "n_group", a->n_group > 1 ? (double)a->n_group : 1);
    put_num(c, c->root, "topk_group", a->n_group > 1 ? (double)a->n_group_used : 1);
    if (a->gating == 1) {
        if (!cJSON_AddStringToObject(c->root, "topk_method", a->n_group > 1 ? "group_limited_greedy" : "greedy"))
            c->oom = 1;
    } else if (!cJSON_AddBoolToObject(c->root, "rope_interleave", 1)) {
        c->oom = 1;
    }
    if (!cJSON_AddBoolToObject(c->root, "attention_bias", 0))
        c->oom = 1;
    return QB_OK;
}

/* issue 31: smollm3, llama4, gemma4 */
/* llama4 → Llama4TextConfig (docs/formats/gguf.md, "smollm3, llama4
 * (issue 31)"): feed_forward_length is intermediate_size_mlp, the expert
 * width intermediate_size (Llama4Model.__init__ swaps them); what
 * llama_model_llama4::load_arch_hparams fixes without a key is written out:
 * with attention.sliding_window 0 every layer ropes and attends fully,
 * else chunks of 8192 on three of every four layers (the fourth NoPE),
 * temperature tuning floor 8192, scale 0.1; the q/k norm unless 128
 * experts (LLM_TYPE_17B_128E). A per-layer sliding_window_pattern or a
 * separate rope.freq_base_swa has no Llama4TextConfig equivalent: refused. */
static qb_status llama4_config(cfg *c)
{
    const gguf_hparams *p = c->hp;
    char key[128];
    cJSON *arr;
    int64_t l;
    int full = 0;
    {
        int64_t sw = -1;
        gguf_arch_key(p, "attention.sliding_window", key, sizeof(key));
        if (gguf_kv_find(c->f, key) && gguf_kv_int_uniform(c->h, c->f, key, &sw) == QB_OK)
            full = sw == 0;
    }
    gguf_arch_key(p, "attention.sliding_window_pattern", key, sizeof(key));
    if (gguf_kv_find(c->f, key))
        return c->h->set_error(c->h, QB_E_UNSUPPORTED,
                               "%s: %s: a per-layer chunk pattern has no Llama4TextConfig "
                               "equivalent here (layer_types follow no_rope_layers)",
                               c->f->path, key);
    gguf_arch_key(p, "rope.freq_base_swa", key, sizeof(key));
    if (gguf_kv_find(c->f, key))
        return c->h->set_error(c->h, QB_E_UNSUPPORTED,
                               "%s: %s: Llama4TextConfig has one rope_theta for every layer",
                               c->f->path, key);
    put_num(c, c->root, "intermediate_size", (double)p->n_ff_exp);
    put_num(c, c->root, "intermediate_size_mlp", (double)p->n_ff);
    put_num(c, c->root, "num_local_experts", (double)p->n_expert);
    if (p->n_expert_used > 0)
        put_num(c, c->root, "num_experts_per_tok", (double)p->n_expert_used);
    put_num(c, c->root, "interleave_moe_layer_step", (double)p->moe_step);
    if (!cJSON_AddBoolToObject(c->root, "use_qk_norm", p->n_expert != 128) ||
        !cJSON_AddBoolToObject(c->root, "attn_temperature_tuning", !full))
        c->oom = 1;
    put_num(c, c->root, "floor_scale", 8192);
    put_float(c, c->root, "attn_scale", 0.1);
    arr = cJSON_AddArrayToObject(c->root, "no_rope_layers");
    for (l = 0; arr && l < p->n_layer; l++)
        if (!cJSON_AddItemToArray(arr, cJSON_CreateNumber(full || (l + 1) % 4 != 0)))
            c->oom = 1;
    if (full) {
        cJSON *n = cJSON_CreateNull();
        if (!n || !cJSON_AddItemToObject(c->root, "attention_chunk_size", n))
            c->oom = 1;
    } else {
        put_num(c, c->root, "attention_chunk_size", 8192);
    }
    arr = cJSON_AddArrayToObject(c->root, "layer_types");
    for (l = 0; arr && l < p->n_layer; l++)
        if (!cJSON_AddItemToArray(arr, cJSON_CreateString(!full && (l + 1) % 4 != 0
                                                              ? "chunked_attention"
                                                              : "full_attention")))
            c->oom = 1;
    if (!arr)
        c->oom = 1;
    return QB_OK;
}

/* issue 31 (read only): gemma4 → Gemma4TextConfig (docs/formats/gguf.md,
 * "Gemma 4 (issue 31)"). head_dim is the sliding layers' width
 * (key_length_swa), global_head_dim the full layers' (key_length);
 * layer_types from sliding_window_pattern; rope_parameters per layer type:
 * sliding ones default rope with rope.freq_base_swa, full ones proportional
 * rope with rope.freq_base and partial_rotary_factor 2 n / key_length, n
 * being the leading rope_freqs factors equal to 1 (Gemma4Model writes
 * int(key_length x factor / 2) ones, then 1e30 for the unrotated pairs,
 * the count transformers' proportional rope rotates too). */
static qb_status gemma4_config(cfg *c, const gguf_model *m, const gguf_special *sp, double theta)
{
    const gguf_hparams *p = c->hp;
    const gguf_tinfo *t = sp->g4_rope_freqs, *pe = gguf_model_find(m, "per_layer_token_embd.weight");
    cJSON *rp, *e, *arr = NULL;
    float *v = NULL;
    double theta_swa = 10000.0;
    int64_t i, n = 0, half = p->head_dim / 2;
    qb_status st;

    if (!t || t->n_dims != 1 || t->ne[0] != half)
        return c->h->set_error(c->h, QB_E_FORMAT,
                               "%s: gemma4 without rope_freqs.weight of key_length / 2 = %lld factors (the full "
                               "layers' proportional rope)",
                               c->f->path, (long long)half);
    if ((st = vector_json(c, t, &arr, &v)))
        return st;
    cJSON_Delete(arr);
    while (n < half && v[n] == 1.0f)
        n++;
    for (i = n; i < half; i++)
        if (v[i] != 1e30f)
            break;
    qbk_free(v);
    if (i < half || n == 0)
        return c->h->set_error(c->h, QB_E_UNSUPPORTED,
                               "%s: gemma4 rope_freqs.weight is not ones then 1e30 (factor %lld of %lld): not the "
                               "proportional rope Gemma4Model writes",
                               c->f->path, (long long)i, (long long)half);
    {
        char key[128];
        gguf_arch_key(p, "rope.scaling.type", key, sizeof(key));
        if (gguf_kv_find(c->f, key))
            return c->h->set_error(c->h, QB_E_UNSUPPORTED, "%s: %s: gemma4 rope scaling is not read", c->f->path,
                                   key);
    }
    if ((st = copy_float(c, NULL, "rope.freq_base_swa", NULL, &theta_swa)))
        return st;
    put_num(c, c->root, "global_head_dim", (double)p->head_dim);
    put_num(c, c->root, "hidden_size_per_layer_input", (double)p->g4_ple);
    put_num(c, c->root, "vocab_size_per_layer_input",
            pe && pe->n_dims == 2 ? (double)pe->ne[1] : (double)cJSON_GetObjectItem(c->root, "vocab_size")->valuedouble);
    put_num(c, c->root, "num_kv_shared_layers", 0);
    if (!cJSON_AddBoolToObject(c->root, "attention_k_eq_v", 0) ||
        !cJSON_AddBoolToObject(c->root, "enable_moe_block", 0) ||
        !cJSON_AddBoolToObject(c->root, "use_double_wide_mlp", 0))
        c->oom = 1;
    if ((st = copy_float(c, c->root, "final_logit_softcapping", "final_logit_softcapping", NULL)))
        return st;
    arr = cJSON_AddArrayToObject(c->root, "layer_types");
    for (i = 0; arr && i < p->n_layer; i++)
        if (!cJSON_AddItemToArray(arr, cJSON_CreateString(p->g4_swa[i] ? "sliding_attention" : "full_attention")))
            c->oom = 1;
    /* Gemma4TextConfig keeps rope settings per layer type only */
    cJSON_DeleteItemFromObject(c->root, "rope_theta");
    rp = cJSON_AddObjectToObject(c->root, "rope_parameters");
    if (!arr || !rp) {
        c->oom = 1;
        return QB_OK;
    }
    e = cJSON_AddObjectToObject(rp, "sliding_attention");
    if (!e || !cJSON_AddStringToObject(e, "rope_type", "default"))
        c->oom = 1;
    else
        put_float(c, e, "rope_theta", theta_swa);
    e = cJSON_AddObjectToObject(rp, "full_attention");
    if (!e || !cJSON_AddStringToObject(e, "rope_type", "proportional")) {
        c->oom = 1;
    } else {
        put_float(c, e, "partial_rotary_factor", 2.0 * (double)n / (double)p->head_dim);
        put_float(c, e, "rope_theta", theta);
    }
    return QB_OK;
}

/* issue 31 (read only): qwen3next/qwen35/qwen35moe, glm4moe, minimax-m2,
 * deepseek32 (docs/formats/gguf.md, "Qwen3-Next, Qwen3.5, GLM-4.5,
 * MiniMax-M2, DeepSeek-V3.2 (issue 31)"). */

/* An {arch}.<suffix> integer into field, when present. */
static qb_status copy_int(cfg *c, const char *suffix, const char *field)
{
    char key[128];
    int64_t v;
    qb_status st;
    gguf_arch_key(c->hp, suffix, key, sizeof(key));
    st = gguf_kv_int(c->h, c->f, key, &v);
    if (st == QB_E_NOT_FOUND)
        return QB_OK;
    if (!st)
        put_num(c, c->root, field, (double)v);
    return st;
}

/* The rotated fraction of each head: rope.dimension_count / key_length,
 * always written (Qwen3-Next's default is 0.25, GLM's 0.5). */
static void rotary_fraction(cfg *c)
{
    const gguf_hparams *p = c->hp;
    put_float(c, c->root, "partial_rotary_factor",
              p->rope_dim > 0 ? (double)p->rope_dim / (double)p->head_dim : 1.0);
}

/* Qwen3NextConfig / Qwen3_5TextConfig / Qwen3_5MoeTextConfig: the gated
 * delta net's sizes from ssm.*, layer_types from recurrent_layers (or the
 * interval), the MoE block on every layer (the converter maps no dense MLP
 * in a qwen3next file), renormalised top-k (llama.cpp's qwen3next and
 * qwen35moe graphs pass norm_w true). */
static void qwen3next_config(cfg *c)
{
    const gguf_hparams *p = c->hp;
    cJSON *arr;
    int64_t l;
    put_num(c, c->root, "linear_conv_kernel_dim", (double)p->lin_conv);
    put_num(c, c->root, "linear_key_head_dim", (double)p->lin_dk);
    put_num(c, c->root, "linear_value_head_dim", (double)p->lin_dv);
    put_num(c, c->root, "linear_num_key_heads", (double)p->lin_nk);
    put_num(c, c->root, "linear_num_value_heads", (double)p->lin_nv);
    put_num(c, c->root, "full_attention_interval", (double)p->lin_interval);
    arr = cJSON_AddArrayToObject(c->root, "layer_types");
    for (l = 0; arr && l < p->n_layer; l++)
        if (!cJSON_AddItemToArray(arr, cJSON_CreateString(gguf_arch_layer_linear(p, l) ? "linear_attention"
                                                                                         : "full_attention")))
            c->oom = 1;
    if (!arr)
        c->oom = 1;
    rotary_fraction(c);
    if (p->n_expert < 1)
        return;
    put_num(c, c->root, "num_experts", (double)p->n_expert);
    if (p->n_expert_used > 0)
        put_num(c, c->root, "num_experts_per_tok", (double)p->n_expert_used);
    put_num(c, c->root, "moe_intermediate_size", (double)p->n_ff_exp);
    if (p->n_ff_shexp > 0)
        put_num(c, c->root, "shared_expert_intermediate_size", (double)p->n_ff_shexp);
    if (strcmp(p->model_type, "qwen3_next") == 0) {
        cJSON *mo = cJSON_AddArrayToObject(c->root, "mlp_only_layers");
        put_num(c, c->root, "decoder_sparse_step", 1);
        if (!mo || !cJSON_AddBoolToObject(c->root, "norm_topk_prob", 1))
            c->oom = 1;
    }
}

/* Glm4MoeConfig: DeepSeek-V3's router (sigmoid, the only gating
 * Glm4MoeTopkRouter has), routed and shared experts, dense layers below
 * leading_dense_block_count; attention_bias and use_qk_norm from the
 * tensors present. */
static qb_status glm4moe_config(cfg *c, const gguf_model *m)
{
    const gguf_hparams *p = c->hp;
    char key[128];
    int64_t gating = -1, groups = -1, used = -1;
    int norm = 1;
    double scale = 1.0;
    qb_status st;
    gguf_arch_key(p, "expert_gating_func", key, sizeof(key));
    st = gguf_kv_int(c->h, c->f, key, &gating);
    if (st && st != QB_E_NOT_FOUND)
        return st;
    if (gating >= 0 && gating != 2)
        return c->h->set_error(c->h, QB_E_UNSUPPORTED,
                               "%s: %s %lld: transformers' Glm4Moe routes by sigmoid (2) only", c->f->path, key,
                               (long long)gating);
    put_num(c, c->root, "n_routed_experts", (double)p->n_expert);
    if (p->n_expert_used > 0)
        put_num(c, c->root, "num_experts_per_tok", (double)p->n_expert_used);
    put_num(c, c->root, "moe_intermediate_size", (double)p->n_ff_exp);
    if ((st = copy_int(c, "expert_shared_count", "n_shared_experts")) ||
        (st = copy_int(c, "leading_dense_block_count", "first_k_dense_replace")) ||
        (st = copy_float(c, NULL, "expert_weights_scale", NULL, &scale)))
        return st;
    put_f32(c, c->root, "routed_scaling_factor", (float)scale);
    gguf_arch_key(p, "expert_weights_norm", key, sizeof(key));
    st = gguf_kv_bool(c->h, c->f, key, &norm);
    if (st && st != QB_E_NOT_FOUND)
        return st;
    gguf_arch_key(p, "expert_group_count", key, sizeof(key));
    if ((st = gguf_kv_int(c->h, c->f, key, &groups)) && st != QB_E_NOT_FOUND)
        return st;
    gguf_arch_key(p, "expert_group_used_count", key, sizeof(key));
    if ((st = gguf_kv_int(c->h, c->f, key, &used)) && st != QB_E_NOT_FOUND)
        return st;
    put_num(c, c->root, "n_group", groups > 1 ? (double)groups : 1);
    put_num(c, c->root, "topk_group", groups > 1 && used > 0 ? (double)used : 1);
    put_num(c, c->root, "num_nextn_predict_layers", 0); /* the MTP blocks are left out */
    if (!cJSON_AddBoolToObject(c->root, "norm_topk_prob", norm) ||
        !cJSON_AddBoolToObject(c->root, "use_qk_norm", gguf_model_find(m, "blk.0.attn_q_norm.weight") != NULL) ||
        !cJSON_AddBoolToObject(c->root, "attention_bias", gguf_model_find(m, "blk.0.attn_q.bias") != NULL))
        c->oom = 1;
    rotary_fraction(c);
    return QB_OK;
}

/* MiniMaxM2Config: every layer's experts (expert_feed_forward_length is
 * its intermediate_size), rotary_dim, q/k norms over all heads; the
 * router (sigmoid plus e_score_correction_bias) has no key. */
static void minimax_m2_config(cfg *c)
{
    const gguf_hparams *p = c->hp;
    put_num(c, c->root, "num_local_experts", (double)p->n_expert);
    if (p->n_expert_used > 0)
        put_num(c, c->root, "num_experts_per_tok", (double)p->n_expert_used);
    cJSON_DeleteItemFromObject(c->root, "intermediate_size");
    put_num(c, c->root, "intermediate_size", (double)p->n_ff_exp);
    put_num(c, c->root, "rotary_dim", (double)(p->rope_dim > 0 ? p->rope_dim : p->head_dim));
    rotary_fraction(c);
}

/* gpt-oss → transformers GptOssConfig fields (docs/formats/gguf.md
 * "gpt-oss"). */
static void gpt_oss_config(cfg *c)
{
    const gguf_hparams *p = c->hp;
    cJSON *arr;
    int64_t l;
    put_num(c, c->root, "num_local_experts", (double)p->n_expert);
    if (p->n_expert_used > 0)
        put_num(c, c->root, "num_experts_per_tok", (double)p->n_expert_used);
    if (p->n_ff < 0 && p->n_ff_exp > 0) /* GptOssModel writes both from intermediate_size */
        put_num(c, c->root, "intermediate_size", (double)p->n_ff_exp);
    /* llama.cpp load_hparams (LLM_ARCH_OPENAI_MOE): set_swa_pattern(2),
     * layer il slides when il % 2 == 0 -- GptOssConfig's default
     * layer_types; written out so no default is relied on. */
    if (p->sliding_window > 0) {
        arr = cJSON_AddArrayToObject(c->root, "layer_types");
        for (l = 0; arr && l < p->n_layer; l++)
            if (!cJSON_AddItemToArray(arr, cJSON_CreateString(l % 2 == 0 ? "sliding_attention" : "full_attention")))
                c->oom = 1;
        if (!arr)
            c->oom = 1;
    }
    /* No GGUF key: llama.cpp's gpt-oss graph clamps with the fixed 7.0
     * (swiglu_oai limit) and alpha 1.702, GptOssConfig's defaults. */
    put_float(c, c->root, "swiglu_limit", 7.0);
    put_float(c, c->root, "swiglu_alpha", 1.702);
    if (!cJSON_AddBoolToObject(c->root, "attention_bias", 1))
        c->oom = 1;
}

qb_status gguf_hfconfig_build(const qb_host *h, const gguf_model *m, const gguf_hparams *hp, const gguf_special *sp,
                              char **config_json, char **gen_json)
{
    cfg c = {h, gguf_model_meta(m), hp, NULL, 0};
    cJSON *gen = NULL, *arr;
    const gguf_hparams *p = hp;
    unsigned b = hp->arch->bit;
    double theta = 10000.0; /* llama.cpp load_hparams default rope_freq_base */
    int64_t vocab;
    qb_status st = QB_OK;

    *config_json = *gen_json = NULL;
    c.root = cJSON_CreateObject();
    gen = cJSON_CreateObject();
    if (!c.root || !gen) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", c.f->path);
        goto out;
    }
    arr = cJSON_AddArrayToObject(c.root, "architectures");
    if (!arr || !cJSON_AddItemToArray(arr, cJSON_CreateString(p->hf_class)) ||
        !cJSON_AddStringToObject(c.root, "model_type", p->model_type))
        c.oom = 1;
    if ((st = gguf_hfconfig_vocab_size(h, m, hp, &vocab)))
        goto out;
    put_num(&c, c.root, "vocab_size", (double)vocab);
    put_num(&c, c.root, "hidden_size", (double)p->n_embd);
    put_num(&c, c.root, "num_hidden_layers", (double)p->n_layer);
    if (p->n_ff >= 0 && b != GGUF_A_LLAMA4) /* llama4: llama4_config */
        put_num(&c, c.root, "intermediate_size", (double)p->n_ff);
    put_num(&c, c.root, "num_attention_heads", (double)p->n_head);
    put_num(&c, c.root, "num_key_value_heads", (double)p->n_head_kv);
    put_num(&c, c.root, "head_dim", (double)(b == GGUF_A_GEMMA4 ? p->g4_hd_swa : p->head_dim));
    if (p->n_ctx > 0)
        put_num(&c, c.root, "max_position_embeddings", (double)p->n_ctx);
    if ((st = copy_float(&c, c.root, "attention.layer_norm_rms_epsilon", "rms_norm_eps", NULL)) ||
        (st = copy_float(&c, c.root, "rope.freq_base", "rope_theta", &theta)))
        goto out;
    if (!cJSON_GetObjectItem(c.root, "rope_theta"))
        put_float(&c, c.root, "rope_theta", theta);
    if (p->rope_dim > 0 && p->rope_dim != p->head_dim &&
        !(b & (GGUF_A_GEMMA4 | GGUF_A_QWEN3NEXT | GGUF_A_GLM4MOE | GGUF_A_MINIMAXM2))) /* issue 31: rotary_fraction */
        put_float(&c, c.root, "partial_rotary_factor", (double)p->rope_dim / (double)p->head_dim);
    if (!cJSON_AddBoolToObject(c.root, "tie_word_embeddings", sp->tied))
        c.oom = 1;
    if (b & (GGUF_A_GEMMA | GGUF_A_GEMMA2 | GGUF_A_GEMMA3 | GGUF_A_GEMMA4)) {
        /* HF Gemma configs: hidden_activation gelu_pytorch_tanh. */
        if (!cJSON_AddStringToObject(c.root, "hidden_activation", "gelu_pytorch_tanh"))
            c.oom = 1;
    } else if (!cJSON_AddStringToObject(c.root, "hidden_act", "silu")) {
        c.oom = 1;
    }
    if (p->sliding_window > 0)
        put_num(&c, c.root, "sliding_window", (double)p->sliding_window);
    if (b & (GGUF_A_GEMMA2 | GGUF_A_GEMMA3)) {
        /* llama.cpp build_gemma2/3: queries scale by 1/sqrt(n_embd/n_head)
         * for the 27B models (46 resp. 62 blocks), else 1/sqrt(head_dim);
         * GGUF has no key for HF's query_pre_attn_scalar. */
        int big = (b == GGUF_A_GEMMA2 && p->n_layer == 46) || (b == GGUF_A_GEMMA3 && p->n_layer == 62);
        put_num(&c, c.root, "query_pre_attn_scalar", big ? (double)(p->n_embd / p->n_head) : (double)p->head_dim);
        if ((st = copy_float(&c, c.root, "attn_logit_softcapping", "attn_logit_softcapping", NULL)) ||
            (st = copy_float(&c, c.root, "final_logit_softcapping", "final_logit_softcapping", NULL)) ||
            (st = copy_float(&c, c.root, "rope.freq_base_swa", "rope_local_base_freq", NULL)))
            goto out;
    }
    if (b == GGUF_A_GEMMA3 && p->sliding_window > 0 && (st = gemma3_swa(&c)))
        goto out;
    if (b == GGUF_A_DEEPSEEK2) {
        if ((st = deepseek2_config(&c)))
            goto out;
        if (strcmp(p->model_type, "deepseek_v32") == 0 && /* issue 31: DeepseekV32Model's indexer keys */
            ((st = copy_int(&c, "attention.indexer.head_count", "index_n_heads")) ||
             (st = copy_int(&c, "attention.indexer.key_length", "index_head_dim")) ||
             (st = copy_int(&c, "attention.indexer.top_k", "index_topk"))))
            goto out;
    } else if (b == GGUF_A_QWEN3NEXT) { /* issue 31 */
        qwen3next_config(&c);
    } else if (b == GGUF_A_GLM4MOE) {
        if ((st = glm4moe_config(&c, m)))
            goto out;
    } else if (b == GGUF_A_MINIMAXM2) {
        minimax_m2_config(&c);
    } else if (b == GGUF_A_GEMMA4) { /* issue 31 */
        if ((st = gemma4_config(&c, m, sp, theta)))
            goto out;
    } else if (b == GGUF_A_GPTOSS) {
        gpt_oss_config(&c);
    } else if (b == GGUF_A_LLAMA4) { /* issue 31 */
        if ((st = llama4_config(&c)))
            goto out;
    } else if (p->n_expert > 0) {
        put_num(&c, c.root, b == GGUF_A_LLAMA ? "num_local_experts" : "num_experts", (double)p->n_expert);
        if (p->n_expert_used > 0)
            put_num(&c, c.root, "num_experts_per_tok", (double)p->n_expert_used);
        if (p->n_ff_exp > 0) {
            put_num(&c, c.root, "moe_intermediate_size", (double)p->n_ff_exp);
        } else if (b != GGUF_A_LLAMA) {
            /* No expert_feed_forward_length key: the stored expert tensor's
             * shape (ne {n_embd, n_ff_exp, n_expert}) is the fact. */
            const gguf_tinfo *e = gguf_model_find(m, "blk.0.ffn_gate_exps.weight");
            if (e && e->n_dims == 3)
                put_num(&c, c.root, "moe_intermediate_size", (double)e->ne[1]);
        }
        /* llama.cpp build_moe_ffn norm_w: true in llm_build_qwen3moe, false
         * in llm_build_qwen2moe (HF norm_topk_prob). */
        if (b == GGUF_A_QWEN3MOE || b == GGUF_A_QWEN2MOE) {
            if (!cJSON_AddBoolToObject(c.root, "norm_topk_prob", b == GGUF_A_QWEN3MOE))
                c.oom = 1;
        }
        if (p->n_ff_shexp > 0)
            put_num(&c, c.root, "shared_expert_intermediate_size", (double)p->n_ff_shexp);
        if (b != GGUF_A_LLAMA)
            put_num(&c, c.root, "decoder_sparse_step", 1);
    }
    /* issue 31: smollm3, llama4, gemma4 */
    if (strcmp(p->model_type, "smollm3") == 0) {
        /* llama_model_smollm3::load_hparams fixes n_no_rope_layer_step = 4
         * (no GGUF key): layer il ropes unless (il + 1) % 4 == 0, which is
         * SmolLM3Config's no_rope_layer_interval rule. */
        put_num(&c, c.root, "no_rope_layer_interval", 4);
        if (!cJSON_AddBoolToObject(c.root, "use_sliding_window", 0))
            c.oom = 1;
    }
    if ((st = rope_scaling(&c, sp, theta)))
        goto out;
    if ((st = copy_token_id(&c, c.root, gen, "tokenizer.ggml.bos_token_id", "bos_token_id")) ||
        (st = copy_token_id(&c, c.root, NULL, "tokenizer.ggml.eos_token_id", "eos_token_id")) ||
        (st = eos_ids(&c, gen)) ||
        (st = copy_token_id(&c, c.root, gen, "tokenizer.ggml.padding_token_id", "pad_token_id")))
        goto out;
    if (c.oom) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", c.f->path);
        goto out;
    }
    *config_json = cJSON_Print(c.root);
    if (cJSON_GetArraySize(gen) > 0)
        *gen_json = cJSON_Print(gen);
    if (!*config_json || (cJSON_GetArraySize(gen) > 0 && !*gen_json)) {
        cJSON_free(*config_json); /* cJSON_Print memory: cJSON's allocator */
        cJSON_free(*gen_json);
        *config_json = *gen_json = NULL;
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", c.f->path);
    }
out:
    cJSON_Delete(c.root);
    cJSON_Delete(gen);
    return st;
}
