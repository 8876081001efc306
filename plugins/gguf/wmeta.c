/*
 * GGUF writer — the metadata: general.*, {arch}.* from config.json (key
 * names: gguf-py constants.py class Keys; values as
 * convert_hf_to_gguf.py's TextModel.set_gguf_parameters and the model
 * classes write them) and tokenizer.ggml.* from tokenizer.json and
 * tokenizer_config.json (docs/formats/gguf.md, "Writing GGUF").
 */
#include "gguf_writer.h"

#include "gguf_kv.h"
#include "gguf_tokenizer.h"
#include "qbk_alloc.h"
#include "qbk_hf_sidefiles.h"
#include "qbk_json.h"

#include <quantbridge/qb_half.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- byte buffer ---- */

void ggw_put(ggw_buf *b, const void *data, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        uint8_t *np;
        while (nc < b->n + n)
            nc *= 2;
        np = qbk_realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

void ggw_u32(ggw_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    ggw_put(b, x, 4);
}

void ggw_u64(ggw_buf *b, uint64_t v)
{
    ggw_u32(b, (uint32_t)v);
    ggw_u32(b, (uint32_t)(v >> 32));
}

static void put_strn(ggw_buf *b, const char *s, size_t n)
{
    ggw_u64(b, n);
    ggw_put(b, s, n);
}

void ggw_str(ggw_buf *b, const char *s)
{
    put_strn(b, s, strlen(s));
}

void ggw_buf_free(ggw_buf *b)
{
    qbk_free(b->p);
    memset(b, 0, sizeof(*b));
}

static void kv_head(ggw_kv *kv, const char *key, uint32_t type)
{
    ggw_str(&kv->b, key);
    ggw_u32(&kv->b, type);
    kv->n++;
}

void ggw_kv_u32(ggw_kv *kv, const char *key, uint32_t v)
{
    kv_head(kv, key, GGUF_VT_UINT32);
    ggw_u32(&kv->b, v);
}

void ggw_kv_u16(ggw_kv *kv, const char *key, uint16_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    kv_head(kv, key, GGUF_VT_UINT16);
    ggw_put(&kv->b, x, 2);
}

void ggw_kv_i32(ggw_kv *kv, const char *key, int32_t v)
{
    kv_head(kv, key, GGUF_VT_INT32);
    ggw_u32(&kv->b, (uint32_t)v);
}

void ggw_kv_f32(ggw_kv *kv, const char *key, float v)
{
    kv_head(kv, key, GGUF_VT_FLOAT32);
    ggw_u32(&kv->b, qb_f32_bits(v));
}

void ggw_kv_bool(ggw_kv *kv, const char *key, int v)
{
    uint8_t x = v ? 1 : 0;
    kv_head(kv, key, GGUF_VT_BOOL);
    ggw_put(&kv->b, &x, 1);
}

void ggw_kv_str(ggw_kv *kv, const char *key, const char *v)
{
    kv_head(kv, key, GGUF_VT_STRING);
    ggw_str(&kv->b, v);
}

/* ---- config.json ---- */

typedef struct meta {
    const qb_host *h;
    const qb_model_src *src;
    const cJSON *cfg;
    const ggw_plan *p;
    ggw_kv *kv;
    char key[128];
} meta;

static const char *akey(meta *m, const char *suffix)
{
    snprintf(m->key, sizeof(m->key), "%s.%s", m->p->arch->gguf_name, suffix);
    return m->key;
}

/* A config integer (>= 0), or -1 when absent/null; QB_E_FORMAT for another type. */
static qb_status cfg_int(meta *m, const char *field, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m->cfg, field);
    *out = -1;
    if (!v || cJSON_IsNull(v))
        return QB_OK;
    if (!qbk_json_int(v, out) || *out < 0 || *out > UINT32_MAX)
        return m->h->set_error(m->h, QB_E_FORMAT, "%s: config.json '%s' is not a non-negative 32-bit integer",
                               m->src->source_path, field);
    return QB_OK;
}

static qb_status put_int(meta *m, const char *field, const char *suffix, int required)
{
    int64_t v;
    qb_status st = cfg_int(m, field, &v);
    if (st)
        return st;
    if (v < 0) {
        if (required)
            return m->h->set_error(m->h, QB_E_FORMAT, "%s: config.json has no '%s' (GGUF key %s)",
                                   m->src->source_path, field, akey(m, suffix));
        return QB_OK;
    }
    ggw_kv_u32(m->kv, akey(m, suffix), (uint32_t)v);
    return QB_OK;
}

static qb_status put_float(meta *m, const char *field, const char *suffix)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m->cfg, field);
    if (!v || cJSON_IsNull(v))
        return QB_OK;
    if (!cJSON_IsNumber(v))
        return m->h->set_error(m->h, QB_E_FORMAT, "%s: config.json '%s' is not a number", m->src->source_path,
                               field);
    ggw_kv_f32(m->kv, akey(m, suffix), (float)v->valuedouble);
    return QB_OK;
}

/* A number of object o (NULL when absent or not a number). */
static const cJSON *num_of(const cJSON *o, const char *key)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsNumber(v) ? v : NULL;
}

static qb_status put_rope_scaling(meta *m)
{
    const cJSON *rs = ggw_rope_dict(m->cfg);
    const cJSON *ty, *f, *orig, *v;
    const char *t;
    const int phi3 = m->p->arch->bit == GGUF_A_PHI3;
    if (!rs)
        return QB_OK;
    ty = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!cJSON_IsString(ty))
        ty = cJSON_GetObjectItemCaseSensitive(rs, "type");
    t = cJSON_IsString(ty) ? ty->valuestring : "";
    f = num_of(rs, "factor");
    orig = num_of(rs, "original_max_position_embeddings");
    if (!orig)
        orig = num_of(m->cfg, "original_max_position_embeddings");
    if (strcmp(t, "default") == 0 || strcmp(t, "llama3") == 0)
        return QB_OK; /* llama3: the rope_freqs tensor (wplan.c) carries it, no key */
    if ((strcmp(t, "linear") == 0 || strcmp(t, "yarn") == 0) && f && !phi3) {
        /* TextModel.set_gguf_parameters: rope.scaling.type, factor; yarn:
         * original context and the yarn parameters the config states */
        ggw_kv_str(m->kv, akey(m, "rope.scaling.type"), t);
        ggw_kv_f32(m->kv, akey(m, "rope.scaling.factor"), (float)f->valuedouble);
        if (strcmp(t, "linear") == 0)
            return QB_OK;
        if (!orig)
            return m->h->set_error(m->h, QB_E_FORMAT,
                                   "%s: config.json rope_scaling yarn has no original_max_position_embeddings",
                                   m->src->source_path);
        ggw_kv_u32(m->kv, akey(m, "rope.scaling.original_context_length"), (uint32_t)orig->valuedouble);
        if ((v = num_of(rs, "extrapolation_factor")))
            ggw_kv_f32(m->kv, akey(m, "rope.scaling.yarn_ext_factor"), (float)v->valuedouble);
        if ((v = num_of(rs, "attention_factor")) || (v = num_of(rs, "attn_factor")))
            ggw_kv_f32(m->kv, akey(m, "rope.scaling.yarn_attn_factor"), (float)v->valuedouble);
        if ((v = num_of(rs, "beta_fast")))
            ggw_kv_f32(m->kv, akey(m, "rope.scaling.yarn_beta_fast"), (float)v->valuedouble);
        if ((v = num_of(rs, "beta_slow")))
            ggw_kv_f32(m->kv, akey(m, "rope.scaling.yarn_beta_slow"), (float)v->valuedouble);
        return QB_OK;
    }
    if ((strcmp(t, "longrope") == 0 || strcmp(t, "su") == 0) && phi3) {
        /* Phi3MiniModel: the original context and the attention factor
         * sqrt(1 + ln(s) / ln(orig)), s = max_position_embeddings / orig
         * (1 when s <= 1); the factors are tensors (wplan.c) */
        const cJSON *mx = num_of(m->cfg, "max_position_embeddings");
        double scale;
        if (!orig || !mx || orig->valuedouble <= 1)
            return m->h->set_error(m->h, QB_E_FORMAT,
                                   "%s: config.json longrope needs max_position_embeddings and "
                                   "original_max_position_embeddings",
                                   m->src->source_path);
        scale = mx->valuedouble / orig->valuedouble;
        ggw_kv_u32(m->kv, akey(m, "rope.scaling.original_context_length"), (uint32_t)orig->valuedouble);
        ggw_kv_f32(m->kv, akey(m, "rope.scaling.attn_factor"),
                   (float)(scale > 1.0 ? sqrt(1.0 + log(scale) / log(orig->valuedouble)) : 1.0));
        return QB_OK;
    }
    return m->h->set_error(m->h, QB_E_UNSUPPORTED,
                           "%s: config.json rope_scaling type '%s' is not written by the gguf writer for "
                           "architecture '%s' (it writes linear and yarn, llama3 for llama, longrope for phi3)",
                           m->src->source_path, t, m->p->arch->gguf_name);
}

/* deepseek2 (DeepseekV2Model.set_gguf_parameters; docs/formats/gguf.md
 * "deepseek2"): MLA stored as MQA over the latent (head_count_kv 1,
 * key_length kv_lora + rope, value_length kv_lora), the HF widths in the
 * _mla keys, routing and the yarn log multiplier 0.1 * mscale_all_dim. */
static qb_status ds2_keys(meta *m)
{
    int64_t kv_lora, rope, nope, vd, v;
    const cJSON *rs = ggw_rope_dict(m->cfg), *x;
    qb_status st;
    if ((st = cfg_int(m, "kv_lora_rank", &kv_lora)) || (st = cfg_int(m, "qk_rope_head_dim", &rope)) ||
        (st = cfg_int(m, "qk_nope_head_dim", &nope)) || (st = cfg_int(m, "v_head_dim", &vd)))
        return st;
    if (kv_lora < 1 || rope < 1 || nope < 1 || vd < 1)
        return m->h->set_error(m->h, QB_E_FORMAT,
                               "%s: config.json needs kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim and "
                               "v_head_dim for deepseek2",
                               m->src->source_path);
    ggw_kv_u32(m->kv, akey(m, "attention.head_count_kv"), 1);
    if ((st = cfg_int(m, "first_k_dense_replace", &v)))
        return st;
    ggw_kv_u32(m->kv, akey(m, "leading_dense_block_count"), (uint32_t)(v < 0 ? 0 : v));
    if ((st = put_int(m, "q_lora_rank", "attention.q_lora_rank", 0)))
        return st;
    ggw_kv_u32(m->kv, akey(m, "attention.kv_lora_rank"), (uint32_t)kv_lora);
    ggw_kv_u32(m->kv, akey(m, "attention.key_length"), (uint32_t)(kv_lora + rope));
    ggw_kv_u32(m->kv, akey(m, "attention.value_length"), (uint32_t)kv_lora);
    ggw_kv_u32(m->kv, akey(m, "attention.key_length_mla"), (uint32_t)(nope + rope));
    ggw_kv_u32(m->kv, akey(m, "attention.value_length_mla"), (uint32_t)vd);
    if ((st = cfg_int(m, "n_shared_experts", &v)))
        return st;
    ggw_kv_u32(m->kv, akey(m, "expert_shared_count"), (uint32_t)(v < 0 ? 0 : v));
    if ((st = put_float(m, "routed_scaling_factor", "expert_weights_scale")))
        return st;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m->cfg, "norm_topk_prob")))
        ggw_kv_bool(m->kv, akey(m, "expert_weights_norm"), 1);
    ggw_kv_u32(m->kv, akey(m, "rope.dimension_count"), (uint32_t)rope);
    if ((x = num_of(rs, "mscale_all_dim")))
        /* [TAG_DEEPSEEK2_YARN_LOG_MUL_FIX] in llama.cpp's converter */
        ggw_kv_f32(m->kv, akey(m, "rope.scaling.yarn_log_multiplier"), (float)(0.1 * x->valuedouble));
    return QB_OK;
}

/* Expert routing keys any MoE config may state (TextModel.set_gguf_parameters). */
static qb_status routing_keys(meta *m)
{
    const cJSON *sf = cJSON_GetObjectItemCaseSensitive(m->cfg, "scoring_func");
    qb_status st;
    if ((st = put_int(m, "n_routed_experts", "expert_count", 0)) ||
        (st = put_int(m, "n_group", "expert_group_count", 0)) ||
        (st = put_int(m, "topk_group", "expert_group_used_count", 0)))
        return st;
    if (cJSON_IsString(sf)) {
        /* gguf-py ExpertGatingFuncType: SOFTMAX 1, SIGMOID 2 */
        if (strcmp(sf->valuestring, "softmax") != 0 && strcmp(sf->valuestring, "sigmoid") != 0)
            return m->h->set_error(m->h, QB_E_UNSUPPORTED, "%s: config.json scoring_func '%s': the gguf writer "
                                                           "writes softmax and sigmoid",
                                   m->src->source_path, sf->valuestring);
        ggw_kv_u32(m->kv, akey(m, "expert_gating_func"), strcmp(sf->valuestring, "sigmoid") == 0 ? 2 : 1);
    } else if (m->p->arch->bit & GGUF_A_DEEPSEEK2) {
        /* transformers' configs have no scoring_func: DeepseekV3 routes by
         * sigmoid, DeepseekV2 by softmax. llama.cpp's converter writes no
         * key then, and llama.cpp reads a missing key as softmax, which
         * would be wrong for V3. */
        const char *mt = m->src->info->architecture;
        ggw_kv_u32(m->kv, akey(m, "expert_gating_func"), mt && strcmp(mt, "deepseek_v3") == 0 ? 2 : 1);
    }
    return QB_OK;
}

/* rope.freq_base: rope_theta, or inside transformers 5's rope_parameters. */
static qb_status put_rope_theta(meta *m)
{
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(m->cfg, "rope_parameters");
    const cJSON *v = num_of(rp, "rope_theta");
    if (cJSON_GetObjectItemCaseSensitive(m->cfg, "rope_theta") || !v)
        return put_float(m, "rope_theta", "rope.freq_base");
    ggw_kv_f32(m->kv, akey(m, "rope.freq_base"), (float)v->valuedouble);
    return QB_OK;
}

static qb_status arch_keys(meta *m)
{
    const unsigned bit = m->p->arch->bit;
    const int ds2 = (bit & GGUF_A_DEEPSEEK2) != 0;
    const qb_model_info *mi = m->src->info;
    int64_t heads, hidden, head_dim;
    qb_status st;

    if ((st = put_int(m, "max_position_embeddings", "context_length", 1)) ||
        (st = put_int(m, "hidden_size", "embedding_length", 1)) ||
        (st = put_int(m, "num_hidden_layers", "block_count", 1)) ||
        (st = put_int(m, "intermediate_size", "feed_forward_length", 0)) ||
        (st = put_int(m, "num_attention_heads", "attention.head_count", 1)) ||
        (st = ds2 ? QB_OK : put_int(m, "num_key_value_heads", "attention.head_count_kv", 0)) ||
        (st = put_rope_theta(m)) ||
        (st = put_float(m, "rms_norm_eps", "attention.layer_norm_rms_epsilon")) ||
        (st = put_int(m, "num_experts_per_tok", "expert_used_count", 0)) ||
        (st = put_int(m, "moe_intermediate_size", "expert_feed_forward_length", 0)) ||
        (st = put_int(m, "shared_expert_intermediate_size", "expert_shared_feed_forward_length", 0)) ||
        (st = put_int(m, "vocab_size", "vocab_size", 0)))
        return st;
    if ((st = put_int(m, "num_local_experts", "expert_count", 0)) || (st = put_int(m, "num_experts", "expert_count", 0)) ||
        (st = routing_keys(m)))
        return st;
    if ((st = cfg_int(m, "num_attention_heads", &heads)) || (st = cfg_int(m, "hidden_size", &hidden)) ||
        (st = cfg_int(m, "head_dim", &head_dim)))
        return st;
    if (ds2 && (st = ds2_keys(m)))
        return st;
    if (head_dim > 0 && !ds2) {
        ggw_kv_u32(m->kv, akey(m, "attention.key_length"), (uint32_t)head_dim);
        ggw_kv_u32(m->kv, akey(m, "attention.value_length"), (uint32_t)head_dim);
    }
    if (bit & GGUF_A_LLAMA)
        /* LlamaModel.set_gguf_parameters: rope.dimension_count = head_dim */
        ggw_kv_u32(m->kv, akey(m, "rope.dimension_count"),
                   (uint32_t)(head_dim > 0 ? head_dim : heads > 0 ? hidden / heads : 0));
    if (((bit & GGUF_A_LLAMA) && mi->architecture && strcmp(mi->architecture, "llama") != 0) ||
        (bit & (GGUF_A_GEMMA2 | GGUF_A_GEMMA3)))
        if ((st = put_int(m, "sliding_window", "attention.sliding_window", 0)))
            return st;
    if (bit & GGUF_A_GEMMA2)
        if ((st = put_float(m, "attn_logit_softcapping", "attn_logit_softcapping")) ||
            (st = put_float(m, "final_logit_softcapping", "final_logit_softcapping")))
            return st;
    if (bit & GGUF_A_GEMMA3)
        if ((st = put_float(m, "rope_local_base_freq", "rope.freq_base_swa")))
            return st;
    return put_rope_scaling(m);
}

/* ---- tokenizer.json ---- */

/* tokenizer.json pre_tokenizer matched against the reader's table of pre
 * types (pretok.c): the same Splits, Digits and ByteLevel flags, and NFC
 * exactly when the entry has it. */
static int bl_same(const cJSON *n, const gguf_bytelevel *b)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(n, "add_prefix_space");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(n, "trim_offsets");
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(n, "use_regex");
    return cJSON_IsBool(a) && cJSON_IsTrue(a) == !!b->add_prefix_space && (!t || cJSON_IsTrue(t) == !!b->trim_offsets) &&
           (!u || cJSON_IsTrue(u) == !!b->use_regex);
}

static const char *pre_name(const cJSON *tok)
{
    const cJSON *pt = cJSON_GetObjectItemCaseSensitive(tok, "pre_tokenizer");
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(tok, "normalizer");
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(pt, "type");
    const cJSON *nty = cJSON_GetObjectItemCaseSensitive(nm, "type");
    const cJSON *seq = NULL;
    int nfc = cJSON_IsString(nty) && strcmp(nty->valuestring, "NFC") == 0;
    const char *names = gguf_pretok_names();
    char one[48];

    if (nm && !cJSON_IsNull(nm) && !nfc)
        return NULL;
    if (cJSON_IsString(ty) && strcmp(ty->valuestring, "Sequence") == 0)
        seq = cJSON_GetObjectItemCaseSensitive(pt, "pretokenizers");
    while (names && *names) {
        size_t l = strcspn(names, ",");
        const gguf_pretok *e;
        snprintf(one, sizeof(one), "%.*s", (int)(l < sizeof(one) ? l : sizeof(one) - 1), names);
        names += l;
        while (*names == ',' || *names == ' ')
            names++;
        e = gguf_pretok_find(one);
        if (!e || !!e->nfc != nfc)
            continue;
        if (!seq) {
            /* a lone ByteLevel (GPT-2's regex inside) */
            if (e->regex || e->digits || !cJSON_IsString(ty) || strcmp(ty->valuestring, "ByteLevel") != 0 ||
                !bl_same(pt, &e->pre))
                continue;
            return e->name;
        } else {
            int i = 0, n = cJSON_GetArraySize(seq), ok = 1;
            const cJSON *it;
            size_t r = 0;
            for (i = 0; i < n && ok; i++) {
                const cJSON *x = cJSON_GetArrayItem(seq, i);
                const char *xt = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(x, "type"))
                                     ? cJSON_GetObjectItemCaseSensitive(x, "type")->valuestring
                                     : "";
                if (strcmp(xt, "Split") == 0) {
                    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(x, "pattern");
                    const cJSON *rx = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
                    it = cJSON_GetObjectItemCaseSensitive(x, "behavior");
                    ok = e->regex && e->regex[r] && cJSON_IsString(rx) && strcmp(rx->valuestring, e->regex[r]) == 0 &&
                         cJSON_IsString(it) && strcmp(it->valuestring, "Isolated") == 0;
                    r++;
                } else if (strcmp(xt, "Digits") == 0) {
                    ok = e->digits && i == n - 2;
                } else if (strcmp(xt, "ByteLevel") == 0) {
                    ok = i == n - 1 && bl_same(x, &e->pre);
                } else {
                    ok = 0;
                }
            }
            if (ok && (e->regex ? e->regex[r] == NULL : r == 0) && n >= 1)
                return e->name;
        }
    }
    return NULL;
}

/* A Prepend normalizer, alone or in a Sequence. */
static int has_prepend(const cJSON *nm)
{
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(nm, "type"), *it;
    if (!cJSON_IsString(ty))
        return 0;
    if (strcmp(ty->valuestring, "Prepend") == 0)
        return 1;
    if (strcmp(ty->valuestring, "Sequence") != 0)
        return 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(nm, "normalizers")) if (has_prepend(it)) return 1;
    return 0;
}

/* <|...|> (convert_hf_to_gguf.py does_token_look_special). */
static int looks_special(const char *s)
{
    size_t n = strlen(s);
    return n >= 4 && strncmp(s, "<|", 2) == 0 && strcmp(s + n - 2, "|>") == 0;
}

/* The id of token text `s` among added tokens / vocab, or -1. */
static int64_t token_id(const cJSON *vocab, const cJSON *added, const char *s)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, added)
    {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        if (cJSON_IsString(c) && strcmp(c->valuestring, s) == 0 && cJSON_IsNumber(id))
            return (int64_t)id->valuedouble;
    }
    it = cJSON_GetObjectItemCaseSensitive(vocab, s);
    return cJSON_IsNumber(it) ? (int64_t)it->valuedouble : -1;
}

/* A special token of tokenizer_config.json: a string or {"content": ...}. */
static const char *special_text(const cJSON *tc, const char *field)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(tc, field);
    if (cJSON_IsObject(v))
        v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Token text -> id, open addressing (vocabularies of 100k+ tokens are
 * looked up once per merge). */
typedef struct tokmap {
    const char **key;
    int64_t *id;
    size_t cap;
} tokmap;

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t x = 1469598103934665603ull;
    size_t i;
    for (i = 0; i < n; i++)
        x = (x ^ (uint8_t)s[i]) * 1099511628211ull;
    return x;
}

static int tokmap_init(tokmap *m, const char *const *tokens, int64_t n)
{
    int64_t i;
    m->cap = 16;
    while (m->cap < (size_t)n * 2)
        m->cap *= 2;
    m->key = qbk_calloc(m->cap, sizeof(*m->key));
    m->id = qbk_calloc(m->cap, sizeof(*m->id));
    if (!m->key || !m->id)
        return 0;
    for (i = 0; i < n; i++) {
        size_t k;
        if (!tokens[i])
            continue;
        k = fnv(tokens[i], strlen(tokens[i])) & (m->cap - 1);
        while (m->key[k])
            k = (k + 1) & (m->cap - 1);
        m->key[k] = tokens[i];
        m->id[k] = i;
    }
    return 1;
}

static int64_t tokmap_find(const tokmap *m, const char *s, size_t n)
{
    size_t k = fnv(s, n) & (m->cap - 1);
    while (m->key[k]) {
        if (strlen(m->key[k]) == n && memcmp(m->key[k], s, n) == 0)
            return m->id[k];
        k = (k + 1) & (m->cap - 1);
    }
    return -1;
}

static void tokmap_free(tokmap *m)
{
    qbk_free(m->key);
    qbk_free(m->id);
}

/* A merge as "left right" text into buf; 0 when it is neither form. */
static int merge_text(const cJSON *it, char *buf, size_t cap, size_t *len)
{
    if (cJSON_IsString(it)) {
        *len = strlen(it->valuestring);
        if (*len >= cap)
            return 0;
        memcpy(buf, it->valuestring, *len + 1);
        return 1;
    }
    if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 && cJSON_IsString(cJSON_GetArrayItem(it, 0)) &&
        cJSON_IsString(cJSON_GetArrayItem(it, 1))) {
        int n = snprintf(buf, cap, "%s %s", cJSON_GetArrayItem(it, 0)->valuestring,
                         cJSON_GetArrayItem(it, 1)->valuestring);
        *len = (size_t)n;
        return n > 0 && (size_t)n < cap;
    }
    return 0;
}

/* SentencePiece scores from BPE merges (tokenizer.ggml.model llama): the
 * piece a merge of rank r makes scores -r (its first merge), so llama.cpp's
 * llm_tokenizer_spm, which joins the pair whose piece scores highest,
 * applies the merges in tokenizer.json's order; the reader turns these
 * scores back into the same merges (docs/formats/gguf.md, "Writing GGUF").
 * Pieces no merge makes score -1e9 (never preferred). */
static qb_status spm_scores(const qb_host *h, const char *dir, const cJSON *merges, const char *const *tokens,
                            const int32_t *types, int64_t n, float *scores)
{
    tokmap tm;
    const cJSON *it;
    int64_t i, rank = 0;
    char buf[1024];
    if (!tokmap_init(&tm, tokens, n)) {
        tokmap_free(&tm);
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", dir);
    }
    for (i = 0; i < n; i++)
        scores[i] = types[i] == GGUF_TT_USER ? -1000.0f : types[i] == GGUF_TT_NORMAL ? -1e9f : 0.0f;
    cJSON_ArrayForEach(it, merges)
    {
        size_t len, k, o = 0;
        int64_t id;
        if (!merge_text(it, buf, sizeof(buf), &len) || !strchr(buf, ' ')) {
            tokmap_free(&tm);
            return h->set_error(h, QB_E_FORMAT, "%s/tokenizer.json: merge %lld is not a pair", dir, (long long)rank);
        }
        /* the piece is the pair without its separating space */
        o = (size_t)(strchr(buf, ' ') - buf);
        memmove(buf + o, buf + o + 1, len - o);
        len--;
        (void)k;
        id = tokmap_find(&tm, buf, len);
        if (id < 0) {
            tokmap_free(&tm);
            return h->set_error(h, QB_E_FORMAT, "%s/tokenizer.json: merge %lld makes '%s', which is not in the vocabulary",
                                dir, (long long)rank, buf);
        }
        if (types[id] == GGUF_TT_NORMAL && scores[id] == -1e9f)
            scores[id] = -(float)rank;
        rank++;
    }
    tokmap_free(&tm);
    return QB_OK;
}

static qb_status tokenizer_keys(meta *m)
{
    const qb_host *h = m->h;
    const qb_model_info *mi = m->src->info;
    char *text = NULL, *tctext = NULL;
    cJSON *tok = NULL, *tc = NULL;
    const cJSON *model, *vocab, *merges, *added, *it;
    const char **tokens = NULL, *pre, *unk = NULL;
    int32_t *types = NULL;
    float *scores = NULL;
    int spm;
    int64_t n_vocab = 0, cfg_vocab = -1, i;
    char pad[32];
    qb_status st = QB_OK;

    if (!mi->tokenizer_dir)
        return QB_OK;
    if ((st = qbk_read_side_text(h, mi->tokenizer_dir, "tokenizer.json", (size_t)1 << 30, NULL, 1, &text)) ||
        !text)
        return st;
    if ((st = qbk_json_parse_file(h, mi->tokenizer_dir, "tokenizer.json", text, strlen(text), &tok)))
        goto out;
    if ((st = qbk_read_side_text(h, mi->tokenizer_dir, "tokenizer_config.json", (size_t)64 << 20, NULL, 1,
                                 &tctext)))
        goto out;
    if (tctext && (st = qbk_json_parse_file(h, mi->tokenizer_dir, "tokenizer_config.json", tctext, strlen(tctext),
                                            &tc)))
        goto out;
    model = cJSON_GetObjectItemCaseSensitive(tok, "model");
    vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    added = cJSON_GetObjectItemCaseSensitive(tok, "added_tokens");
    it = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (!cJSON_IsString(it) || strcmp(it->valuestring, "BPE") != 0 || !cJSON_IsObject(vocab) ||
        !cJSON_IsArray(merges)) {
        st = h->set_error(h, QB_E_UNSUPPORTED, "%s/tokenizer.json: model type %s: the gguf writer writes byte-level "
                                               "BPE vocabularies (tokenizer.ggml.model gpt2) only so far",
                          mi->tokenizer_dir, cJSON_IsString(it) ? it->valuestring : "(none)");
        goto out;
    }
    /* byte_fallback: a SentencePiece vocabulary as BPE (LlamaHfVocab's test) */
    spm = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "byte_fallback"));
    pre = spm ? "default" : pre_name(tok);
    if (!pre) {
        st = h->set_error(h, QB_E_UNSUPPORTED,
                          "%s/tokenizer.json: its pre-tokenizer matches none of llama.cpp's pre types the gguf "
                          "plugin knows (%s)",
                          mi->tokenizer_dir, gguf_pretok_names());
        goto out;
    }
    cJSON_ArrayForEach(it, vocab) if (cJSON_IsNumber(it) && it->valuedouble + 1 > (double)n_vocab) n_vocab =
        (int64_t)it->valuedouble + 1;
    cJSON_ArrayForEach(it, added)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        if (cJSON_IsNumber(id) && id->valuedouble + 1 > (double)n_vocab)
            n_vocab = (int64_t)id->valuedouble + 1;
    }
    if ((st = cfg_int(m, "vocab_size", &cfg_vocab)))
        goto out;
    /* get_vocab_base: the vocabulary runs to config vocab_size, gaps filled with [PADn] (UNUSED) */
    if (cfg_vocab > n_vocab)
        n_vocab = cfg_vocab;
    if (n_vocab < 1 || n_vocab > 16 * 1024 * 1024) {
        st = h->set_error(h, QB_E_FORMAT, "%s/tokenizer.json: vocabulary of %lld tokens", mi->tokenizer_dir,
                          (long long)n_vocab);
        goto out;
    }
    tokens = qbk_calloc((size_t)n_vocab, sizeof(*tokens));
    types = qbk_calloc((size_t)n_vocab, sizeof(*types));
    scores = qbk_calloc((size_t)n_vocab, sizeof(*scores));
    if (!tokens || !types || !scores) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", mi->tokenizer_dir);
        goto out;
    }
    cJSON_ArrayForEach(it, vocab) if (cJSON_IsNumber(it) && it->valuedouble >= 0)
    {
        unsigned byte;
        char tail;
        tokens[(int64_t)it->valuedouble] = it->string;
        /* LlamaHfVocab.get_token_type: <0xNN> pieces are BYTE */
        types[(int64_t)it->valuedouble] =
            spm && strlen(it->string) == 6 && sscanf(it->string, "<0x%2X%c", &byte, &tail) == 2 && tail == '>'
                ? GGUF_TT_BYTE
                : GGUF_TT_NORMAL;
    }
    it = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    unk = cJSON_IsString(it) ? it->valuestring : NULL;
    cJSON_ArrayForEach(it, added)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(it, "special");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || !cJSON_IsString(c))
            continue;
        tokens[(int64_t)id->valuedouble] = c->valuestring;
        types[(int64_t)id->valuedouble] = unk && strcmp(unk, c->valuestring) == 0 ? GGUF_TT_UNKNOWN
                                          : cJSON_IsTrue(sp) || looks_special(c->valuestring) ? GGUF_TT_CONTROL
                                                                                             : GGUF_TT_USER;
    }
    for (i = 0; i < n_vocab; i++)
        if (!tokens[i]) {
            types[i] = GGUF_TT_UNUSED;
        }
    ggw_kv_str(m->kv, "tokenizer.ggml.model", spm ? "llama" : "gpt2");
    ggw_kv_str(m->kv, "tokenizer.ggml.pre", pre);
    /* tokens */
    kv_head(m->kv, "tokenizer.ggml.tokens", GGUF_VT_ARRAY);
    ggw_u32(&m->kv->b, GGUF_VT_STRING);
    ggw_u64(&m->kv->b, (uint64_t)n_vocab);
    for (i = 0; i < n_vocab; i++) {
        if (!tokens[i]) {
            snprintf(pad, sizeof(pad), "[PAD%lld]", (long long)i);
            ggw_str(&m->kv->b, pad);
            types[i] = GGUF_TT_UNUSED;
        } else {
            ggw_str(&m->kv->b, tokens[i]);
        }
    }
    kv_head(m->kv, "tokenizer.ggml.token_type", GGUF_VT_ARRAY);
    ggw_u32(&m->kv->b, GGUF_VT_INT32);
    ggw_u64(&m->kv->b, (uint64_t)n_vocab);
    for (i = 0; i < n_vocab; i++)
        ggw_u32(&m->kv->b, (uint32_t)types[i]);
    if (spm) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(tok, "normalizer");
        if ((st = spm_scores(h, mi->tokenizer_dir, merges, tokens, types, n_vocab, scores)))
            goto out;
        kv_head(m->kv, "tokenizer.ggml.scores", GGUF_VT_ARRAY);
        ggw_u32(&m->kv->b, GGUF_VT_FLOAT32);
        ggw_u64(&m->kv->b, (uint64_t)n_vocab);
        for (i = 0; i < n_vocab; i++)
            ggw_u32(&m->kv->b, qb_f32_bits(scores[i]));
        /* the reader writes Prepend("\u2581") unless add_space_prefix is false */
        if (!has_prepend(nm))
            ggw_kv_bool(m->kv, "tokenizer.ggml.add_space_prefix", 0);
        goto specials;
    }
    kv_head(m->kv, "tokenizer.ggml.merges", GGUF_VT_ARRAY);
    ggw_u32(&m->kv->b, GGUF_VT_STRING);
    ggw_u64(&m->kv->b, (uint64_t)cJSON_GetArraySize(merges));
    cJSON_ArrayForEach(it, merges)
    {
        if (cJSON_IsString(it)) {
            ggw_str(&m->kv->b, it->valuestring);
        } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 && cJSON_IsString(cJSON_GetArrayItem(it, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(it, 1))) {
            /* tokenizers >= 0.20 writes [left, right]: gguf holds "left right" */
            const char *a = cJSON_GetArrayItem(it, 0)->valuestring, *b = cJSON_GetArrayItem(it, 1)->valuestring;
            size_t la = strlen(a), lb = strlen(b);
            if (strchr(a, ' ') || strchr(b, ' ')) {
                st = h->set_error(h, QB_E_UNSUPPORTED,
                                  "%s/tokenizer.json: merge ['%s', '%s'] holds a space, which tokenizer.ggml.merges "
                                  "cannot hold",
                                  mi->tokenizer_dir, a, b);
                goto out;
            }
            ggw_u64(&m->kv->b, la + 1 + lb);
            ggw_put(&m->kv->b, a, la);
            ggw_put(&m->kv->b, " ", 1);
            ggw_put(&m->kv->b, b, lb);
        } else {
            st = h->set_error(h, QB_E_FORMAT, "%s/tokenizer.json: a merge is neither a string nor a pair",
                              mi->tokenizer_dir);
            goto out;
        }
    }
specials : {
        /* SpecialVocab: tokenizer_config.json's token texts, else config.json's ids */
        static const struct {
            const char *field, *cfg_field, *key;
        } sp[] = {{"bos_token", "bos_token_id", "tokenizer.ggml.bos_token_id"},
                  {"eos_token", "eos_token_id", "tokenizer.ggml.eos_token_id"},
                  {"unk_token", NULL, "tokenizer.ggml.unknown_token_id"},
                  {"pad_token", "pad_token_id", "tokenizer.ggml.padding_token_id"}};
        size_t k;
        for (k = 0; k < sizeof(sp) / sizeof(sp[0]); k++) {
            const char *s = tc ? special_text(tc, sp[k].field) : NULL;
            int64_t id = s ? token_id(vocab, added, s) : -1;
            if (id < 0 && sp[k].cfg_field) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(m->cfg, sp[k].cfg_field);
                if (cJSON_IsArray(v))
                    v = cJSON_GetArrayItem(v, 0);
                if (cJSON_IsNumber(v))
                    id = (int64_t)v->valuedouble;
            }
            if (id >= 0 && id < n_vocab)
                ggw_kv_u32(m->kv, sp[k].key, (uint32_t)id);
        }
        it = tc ? cJSON_GetObjectItemCaseSensitive(tc, "add_bos_token") : NULL;
        if (cJSON_IsBool(it))
            ggw_kv_bool(m->kv, "tokenizer.ggml.add_bos_token", cJSON_IsTrue(it));
        it = tc ? cJSON_GetObjectItemCaseSensitive(tc, "add_eos_token") : NULL;
        if (cJSON_IsBool(it))
            ggw_kv_bool(m->kv, "tokenizer.ggml.add_eos_token", cJSON_IsTrue(it));
        it = tc ? cJSON_GetObjectItemCaseSensitive(tc, "chat_template") : NULL;
        if (cJSON_IsString(it))
            ggw_kv_str(m->kv, "tokenizer.chat_template", it->valuestring);
        else if (QB_HAS_FIELD(mi, qb_model_info, chat_template) && mi->chat_template)
            ggw_kv_str(m->kv, "tokenizer.chat_template", mi->chat_template);
    }
out:
    qbk_free(tokens);
    qbk_free(types);
    qbk_free(scores);
    cJSON_Delete(tok);
    cJSON_Delete(tc);
    if (text)
        h->free(h, text);
    if (tctext)
        h->free(h, tctext);
    return st;
}

qb_status ggw_meta_build(const qb_host *h, const qb_model_src *src, const cJSON *cfg, const ggw_plan *p, ggw_kv *kv)
{
    meta m = {h, src, cfg, p, kv, {0}};
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(cfg, "_name_or_path");
    const char *name = cJSON_IsString(nm) && nm->valuestring[0] ? nm->valuestring : src->source_path;
    const char *slash = strrchr(name, '/');
    qb_status st;

    ggw_kv_str(kv, "general.architecture", p->arch->gguf_name);
    ggw_kv_str(kv, "general.type", "model"); /* gguf-py Metadata.set_gguf_meta_model: GGUFType.MODEL */
    ggw_kv_str(kv, "general.name", slash && slash[1] ? slash + 1 : name);
    if ((st = arch_keys(&m)))
        return st;
    ggw_kv_u32(kv, "general.file_type", p->ftype);
    ggw_kv_u32(kv, "general.quantization_version", 2); /* GGML_QNT_VERSION */
    if ((st = tokenizer_keys(&m)))
        return st;
    if (kv->b.oom)
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory building GGUF metadata", src->source_path);
    return QB_OK;
}
