/*
 * quantbridge model library — what the forward pass reads from config.json
 * (through the host's strict JSON parser, qb_json.h).
 * Keys and defaults follow transformers' configuration classes of each
 * family (docs/forward.md, "Architectures").
 */
#include "fwd.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <quantbridge/base/qb_archs.h>

/* One parse: the services, their JSON reader and the model named in
 * messages. */
typedef struct cfgp {
    const qb_host *h;
    const qb_json_api *J;
    const char *what;
} cfgp;

/* Member `key` of obj (NULL when absent or obj is no object). */
static const qb_json *get(const cfgp *p, const qb_json *obj, const char *key)
{
    return p->J->get(obj, key);
}

static int is_null(const cfgp *p, const qb_json *v)
{
    return p->J->type(v) == QB_JSON_NULL;
}

/* 1 for true, 0 for anything else (false, absent, not a boolean). */
static int is_true(const cfgp *p, const qb_json *v)
{
    int32_t b = 0;
    return p->J->get_bool(v, &b) && b;
}

static int is_false(const cfgp *p, const qb_json *v)
{
    int32_t b = 1;
    return p->J->get_bool(v, &b) && !b;
}

/* 1 and *out when v is a number. */
static int num(const cfgp *p, const qb_json *v, double *out)
{
    return p->J->get_number(v, out);
}

/* The families the pass runs: the QB_ARCH_FORWARD rows of the one
 * architecture table (base library, qb_archs.h). */
static int is_supported(const char *t)
{
    const qb_arch_entry *a = qb_arch_find(t);
    return a && (a->flags & QB_ARCH_FORWARD);
}

/* rope_theta when the config has none: each configuration class's
 * default_theta (transformers 5.24). */
static double default_theta(const char *arch)
{
    if (strcmp(arch, "gpt_oss") == 0)
        return 150000.0;
    /* issue 31: smollm3, llama4, gemma4 */
    if (strcmp(arch, "smollm3") == 0)
        return 2000000.0;
    if (strcmp(arch, "llama4_text") == 0)
        return 500000.0;
    if (strcmp(arch, "minimax_m2") == 0)
        return 5000000.0;
    return 10000.0;
}

/* A positive integer key; def < 0: required. */
static qb_status get_int(const cfgp *p, const qb_json *root, const char *key, int64_t def,
                         int64_t *out)
{
    const qb_json *v = get(p, root, key);
    double d;
    if (!v || is_null(p, v)) {
        if (def < 0)
            return p->h->set_error(p->h, QB_E_FORMAT, "forward: %s: \"%s\" is missing", p->what,
                                   key);
        *out = def;
        return QB_OK;
    }
    if (!num(p, v, &d) || d < 1 || d > 1e12 || d != floor(d))
        return p->h->set_error(p->h, QB_E_FORMAT, "forward: %s: \"%s\" is not a positive integer",
                               p->what, key);
    *out = (int64_t)d;
    return QB_OK;
}

static qb_status get_real(const cfgp *p, const qb_json *root, const char *key, double def,
                          double *out)
{
    const qb_json *v = get(p, root, key);
    double d;
    if (!v || is_null(p, v)) {
        *out = def;
        return QB_OK;
    }
    if (!num(p, v, &d) || !isfinite(d) || d <= 0)
        return p->h->set_error(p->h, QB_E_FORMAT, "forward: %s: \"%s\" is not a positive number",
                               p->what, key);
    *out = d;
    return QB_OK;
}

/* A non-negative integer key; absent or null -> def. */
static qb_status get_count(const cfgp *p, const qb_json *root, const char *key, int64_t def,
                           int64_t *out)
{
    const qb_json *v = get(p, root, key);
    double d;
    if (!v || is_null(p, v)) {
        *out = def;
        return QB_OK;
    }
    if (!num(p, v, &d) || d < 0 || d > 1e12 || d != floor(d))
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: \"%s\" is not a non-negative integer", p->what, key);
    *out = (int64_t)d;
    return QB_OK;
}

/* Any finite number; absent or null -> def. */
static qb_status get_num(const cfgp *p, const qb_json *root, const char *key, double def,
                         double *out)
{
    const qb_json *v = get(p, root, key);
    double d;
    if (!v || is_null(p, v)) {
        *out = def;
        return QB_OK;
    }
    if (!num(p, v, &d) || !isfinite(d))
        return p->h->set_error(p->h, QB_E_FORMAT, "forward: %s: \"%s\" is not a number", p->what,
                               key);
    *out = d;
    return QB_OK;
}

/* A string key that must be absent, null or one of ok[0..n) (the first is
 * what absence means); *idx gets its index. QB_E_UNSUPPORTED naming it. */
static qb_status get_choice(const cfgp *p, const char *arch, const qb_json *root, const char *key,
                            const char *const *ok, int n, int *idx)
{
    const qb_json *v = get(p, root, key);
    const char *s = p->J->get_string(v);
    int i;
    *idx = 0;
    if (!v || is_null(p, v))
        return QB_OK;
    for (i = 0; s && i < n; i++)
        if (strcmp(s, ok[i]) == 0) {
            *idx = i;
            return QB_OK;
        }
    return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                           "forward: %s: %s \"%s\" is not supported by the CPU "
                           "forward pass for %s (supported: %s%s%s)",
                           p->what, key, s ? s : "(not a string)", arch, ok[0], n > 1 ? ", " : "",
                           n > 1 ? ok[1] : "");
}

/* yarn's mscale: transformers' get_mscale / yarn_get_mscale. */
static double yarn_mscale(double scale, double m)
{
    return scale <= 1.0 ? 1.0 : 0.1 * m * log(scale) + 1.0;
}

static qb_status parse_dsa(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c);

/* DeepSeek-V2/V3: MLA sizes and routing, with the defaults of
 * DeepseekV2Config / DeepseekV3Config (transformers 5.24); the routing
 * variants transformers' routers do not compute are refused by name. */
static qb_status parse_deepseek(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    static const char *const v3_score[] = {"sigmoid"}, *const v2_score[] = {"softmax"};
    static const char *const v3_topk[] = {"noaux_tc"};
    static const char *const v2_topk[] = {"greedy", "group_limited_greedy"};
    int v32 = strcmp(c->arch, "deepseek_v32") == 0;
    int v3 = strcmp(c->arch, "deepseek_v3") == 0 || v32, pick;
    const qb_json *v;
    int64_t n_shared, freq;
    qb_status rc;

    c->mla = 1;
    v = get(p, root, "q_lora_rank");
    if (is_null(p, v))
        c->q_lora_rank = 0; /* null: a plain q_proj */
    else if ((rc = get_int(p, root, "q_lora_rank", 1536, &c->q_lora_rank)))
        return rc;
    if ((rc = get_int(p, root, "kv_lora_rank", 512, &c->kv_lora_rank)) ||
        (rc = get_int(p, root, "qk_rope_head_dim", 64, &c->qk_rope)) ||
        (rc = get_int(p, root, "qk_nope_head_dim", 128, &c->qk_nope)) ||
        (rc = get_int(p, root, "v_head_dim", 128, &c->v_head_dim)))
        return rc;
    if (c->qk_rope % 2)
        return p->h->set_error(p->h, QB_E_FORMAT, "forward: %s: qk_rope_head_dim %lld is odd",
                               p->what, (long long)c->qk_rope);
    /* Every head gets its own k and v from kv_b_proj: no grouping. */
    c->n_kv_heads = c->n_heads;
    c->head_dim = c->qk_nope + c->qk_rope;
    c->rot_dim = c->qk_rope;
    /* V2 always rotates neighbour pairs (apply_rotary_emb's complex view);
     * V3 when rope_interleave (default true). */
    v = get(p, root, "rope_interleave");
    c->rope_interleave = v3 && !v32 ? !(v && is_false(p, v)) : 1;
    /* DeepseekV32Attention always rotates neighbour pairs
     * (apply_rotary_pos_emb_interleave) and always has the q LoRA. */
    if (v32 && !c->q_lora_rank)
        return p->h->set_error(p->h, QB_E_FORMAT, "forward: %s: deepseek_v32 needs \"q_lora_rank\"",
                               p->what);

    c->attn_scale = 1.0 / sqrt((double)c->head_dim);
    /* yarn_apply_mscale: any rope scaling with mscale_all_dim scales the
     * scores by mscale(factor, mscale_all_dim)^2. */
    if (c->rope_kind != QBH_ROPE_DEFAULT && c->rope_mscale_all_dim != 0) {
        double m = yarn_mscale(c->rope_factor, c->rope_mscale_all_dim);
        c->attn_scale *= m * m;
    }

    c->moe = QBH_MOE_DEEPSEEK;
    c->sparse_step = 1;
    if ((rc = get_int(p, root, "n_routed_experts", v3 ? 256 : 64, &c->n_experts)) ||
        (rc = get_int(p, root, "num_experts_per_tok", v3 ? 8 : -1, &c->top_k)) ||
        (rc = get_int(p, root, "moe_intermediate_size", v3 ? 2048 : 1407, &c->moe_intermediate)) ||
        (rc = get_count(p, root, "n_shared_experts", v3 ? 1 : 2, &n_shared)) ||
        (rc = get_count(p, root, "first_k_dense_replace", v3 ? 3 : 0, &c->first_dense)) ||
        (rc = get_real(p, root, "routed_scaling_factor", v3 ? 2.5 : 1.0, &c->routed_scale)) ||
        (rc = get_count(p, root, "moe_layer_freq", 1, &freq)))
        return rc;
    c->shared_intermediate = c->moe_intermediate * n_shared;
    v = get(p, root, "norm_topk_prob");
    c->norm_topk = !v || is_null(p, v) ? v3 : is_true(p, v);
    /* DeepSeek's own code skips the experts on layers not a multiple of
     * moe_layer_freq; transformers ignores the key. Every released model
     * has 1. */
    if (freq != 1)
        return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                               "forward: %s: moe_layer_freq %lld is not "
                               "supported by the CPU forward pass (supported: 1)",
                               p->what, (long long)freq);
    if (v3) {
        /* DeepseekV3TopkRouter computes noaux_tc with sigmoid scores only. */
        if ((rc = get_choice(p, c->arch, root, "scoring_func", v3_score, 1, &pick)) ||
            (rc = get_choice(p, c->arch, root, "topk_method", v3_topk, 1, &pick)) ||
            (rc = get_int(p, root, "n_group", 8, &c->n_group)) ||
            (rc = get_int(p, root, "topk_group", 4, &c->topk_group)))
            return rc;
        c->ds_route = QBH_DS_NOAUX_TC;
        /* Null is no default here: DeepseekV3TopkRouter cannot group by None. */
        if (is_null(p, get(p, root, "n_group")) || is_null(p, get(p, root, "topk_group")))
            return p->h->set_error(p->h, QB_E_FORMAT,
                                   "forward: %s: deepseek_v3 needs \"n_group\" and "
                                   "\"topk_group\" (null given)",
                                   p->what);
    } else {
        if ((rc = get_choice(p, c->arch, root, "scoring_func", v2_score, 1, &pick)) ||
            (rc = get_choice(p, c->arch, root, "topk_method", v2_topk, 2, &pick)))
            return rc;
        c->ds_route = pick ? QBH_DS_GROUP_GREEDY : QBH_DS_GREEDY;
        if (c->ds_route == QBH_DS_GROUP_GREEDY &&
            ((rc = get_int(p, root, "n_group", -1, &c->n_group)) ||
             (rc = get_int(p, root, "topk_group", -1, &c->topk_group))))
            return rc;
        /* DeepseekV2TopkRouter never renormalises while DeepSeek's own
         * MoEGate does: the two disagree, so neither is guessed. */
        if (c->norm_topk)
            return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                                   "forward: %s: norm_topk_prob true is not "
                                   "supported for deepseek_v2 (transformers' router ignores it, "
                                   "DeepSeek's renormalises)",
                                   p->what);
    }
    if (c->top_k > c->n_experts)
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: num_experts_per_tok %lld > %lld experts", p->what,
                               (long long)c->top_k, (long long)c->n_experts);
    if (v32 && (rc = parse_dsa(p, root, c)))
        return rc;
    if (c->ds_route != QBH_DS_GREEDY) {
        int64_t per = c->n_experts / c->n_group;
        if (c->n_experts % c->n_group || c->topk_group > c->n_group ||
            c->top_k > c->topk_group * per || (v3 && per < 2))
            return p->h->set_error(p->h, QB_E_FORMAT,
                                   "forward: %s: n_group %lld / topk_group %lld do not "
                                   "fit %lld experts with num_experts_per_tok %lld",
                                   p->what, (long long)c->n_group, (long long)c->topk_group,
                                   (long long)c->n_experts, (long long)c->top_k);
    }
    return QB_OK;
}

/* Mixtral and Qwen2/3-MoE routing settings (their configuration classes'
 * keys and defaults). */
static qb_status parse_moe(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    const qb_json *mo;
    size_t i;
    qb_status rc;
    int mixtral = strcmp(c->arch, "mixtral") == 0;

    c->moe = mixtral ? QBH_MOE_MIXTRAL : QBH_MOE_QWEN;
    if (mixtral) {
        c->norm_topk = 1; /* MixtralSparseMoeBlock always renormalises */
        c->moe_intermediate = c->intermediate;
        c->sparse_step = 1;
        if ((rc = get_int(p, root, "num_local_experts", 8, &c->n_experts)) ||
            (rc = get_int(p, root, "num_experts_per_tok", 2, &c->top_k)))
            return rc;
    } else {
        if ((rc = get_int(p, root, "num_experts", -1, &c->n_experts)) ||
            (rc = get_int(p, root, "num_experts_per_tok", -1, &c->top_k)) ||
            (rc = get_int(p, root, "moe_intermediate_size", -1, &c->moe_intermediate)) ||
            (rc = get_int(p, root, "decoder_sparse_step", 1, &c->sparse_step)))
            return rc;
        c->norm_topk = is_true(p, get(p, root, "norm_topk_prob"));
        if (strcmp(c->arch, "qwen2_moe") == 0 &&
            (rc = get_int(p, root, "shared_expert_intermediate_size", -1, &c->shared_intermediate)))
            return rc;
        mo = get(p, root, "mlp_only_layers");
        for (i = 0; p->J->type(mo) == QB_JSON_ARRAY && i < p->J->count(mo); i++) {
            double d;
            if (!num(p, p->J->at(mo, i, NULL), &d) || d < 0 || d >= 1024)
                return p->h->set_error(p->h, QB_E_FORMAT,
                                       "forward: %s: \"mlp_only_layers\" "
                                       "holds something other than a layer index below 1024",
                                       p->what);
            c->mlp_only[(int)d / 64] |= UINT64_C(1) << ((int)d % 64);
        }
    }
    if (c->top_k > c->n_experts)
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: num_experts_per_tok %lld > %lld experts", p->what,
                               (long long)c->top_k, (long long)c->n_experts);
    return QB_OK;
}

static qb_status parse_layer_types(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c);

/* gpt-oss: GptOssConfig's keys and defaults (transformers 5.24): every
 * layer runs the experts; layer_types, or else alternating sliding /
 * full starting with a sliding layer; sliding_window 128 (null: none). */
static qb_status parse_gptoss(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    const qb_json *sw = get(p, root, "sliding_window");
    int64_t L;
    qb_status rc;

    c->moe = QBH_MOE_GPTOSS;
    c->moe_intermediate = c->intermediate;
    c->sparse_step = 1;
    if ((rc = get_int(p, root, "num_local_experts", 128, &c->n_experts)) ||
        (rc = get_int(p, root, "num_experts_per_tok", 4, &c->top_k)) ||
        (rc = get_real(p, root, "swiglu_alpha", 1.702, &c->glu_alpha)) ||
        (rc = get_real(p, root, "swiglu_limit", 7.0, &c->glu_limit)))
        return rc;
    if (c->top_k > c->n_experts)
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: num_experts_per_tok %lld > %lld experts", p->what,
                               (long long)c->top_k, (long long)c->n_experts);
    if (!is_null(p, sw) && (rc = get_int(p, root, "sliding_window", 128, &c->sliding_window)))
        return rc;
    if (c->n_layers > 1024)
        return p->h->set_error(p->h, QB_E_UNSUPPORTED, "forward: %s: more than 1024 layers",
                               p->what);
    for (L = 0; L < c->n_layers; L += 2)
        c->sliding_map[L / 64] |= UINT64_C(1) << (L % 64);
    c->has_sliding_map = 1;
    return parse_layer_types(p, root, c);
}

/* Qwen3-Next and the Qwen3.5 text models: Qwen3NextConfig's keys and
 * defaults (transformers 5.24, configuration_qwen3_next.py; Qwen3_5TextConfig
 * and Qwen3_5MoeTextConfig inherit them): layer_types "linear_attention" /
 * "full_attention", else every full_attention_interval-th (4) layer full;
 * partial_rotary_factor 0.25 (in rope_parameters, or top-level in older
 * configs); experts when num_experts > 0, qwen2_moe's block with its
 * shared expert; norm_topk_prob true when absent (docs/forward.md,
 * "Qwen3-Next"). */
static qb_status parse_qwen3next(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    const qb_json *lt = get(p, root, "layer_types"), *rp = get(p, root, "rope_parameters");
    const char *act = p->J->get_string(get(p, root, "hidden_act"));
    int64_t L, interval, n_exp;
    double f;
    int q35 = strcmp(c->arch, "qwen3_5_text") == 0, q35moe = strcmp(c->arch, "qwen3_5_moe_text") == 0;
    qb_status rc;

    c->hybrid = 1;
    c->norm_plus1 = 1;
    c->qk_norm = 1;
    if (act && strcmp(act, "silu") != 0)
        return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                               "forward: %s: hidden_act \"%s\" is not supported for %s "
                               "(supported: silu)",
                               p->what, act, c->arch);
    if ((rc = get_int(p, root, "linear_conv_kernel_dim", 4, &c->lin_conv)) ||
        (rc = get_int(p, root, "linear_key_head_dim", 128, &c->lin_dk)) ||
        (rc = get_int(p, root, "linear_value_head_dim", 128, &c->lin_dv)) ||
        (rc = get_int(p, root, "linear_num_key_heads", 16, &c->lin_nk)) ||
        (rc = get_int(p, root, "linear_num_value_heads", 32, &c->lin_nv)) ||
        (rc = get_int(p, root, "full_attention_interval", 4, &interval)) ||
        (rc = get_count(p, root, "num_experts", q35moe ? 256 : 512, &n_exp)))
        return rc;
    if (c->lin_nv % c->lin_nk)
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: linear_num_value_heads %lld is not a multiple of "
                               "linear_num_key_heads %lld",
                               p->what, (long long)c->lin_nv, (long long)c->lin_nk);
    if (c->n_layers > 1024)
        return p->h->set_error(p->h, QB_E_UNSUPPORTED, "forward: %s: more than 1024 layers",
                               p->what);
    if (!lt || is_null(p, lt)) {
        for (L = 0; L < c->n_layers; L++)
            if ((L + 1) % interval)
                c->linear_map[L / 64] |= UINT64_C(1) << (L % 64);
    } else if (p->J->type(lt) != QB_JSON_ARRAY || (int64_t)p->J->count(lt) != c->n_layers) {
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: \"layer_types\" is not a list of "
                               "num_hidden_layers (%lld) names",
                               p->what, (long long)c->n_layers);
    } else {
        for (L = 0; L < c->n_layers; L++) {
            const char *s = p->J->get_string(p->J->at(lt, (size_t)L, NULL));
            if (!s || (strcmp(s, "linear_attention") != 0 && strcmp(s, "full_attention") != 0))
                return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                                       "forward: %s: layer_types[%lld] is not "
                                       "linear_attention or full_attention",
                                       p->what, (long long)L);
            if (s[0] == 'l')
                c->linear_map[L / 64] |= UINT64_C(1) << (L % 64);
        }
    }
    rc = get_real(p, root, "partial_rotary_factor", 0.25, &f);
    if (!rc && p->J->type(rp) == QB_JSON_OBJECT)
        rc = get_real(p, rp, "partial_rotary_factor", f, &f);
    if (rc)
        return rc;
    /* Qwen3NextRotaryEmbedding: dim = int(head_dim * partial_rotary_factor) */
    c->rot_dim = (int64_t)((double)c->head_dim * f);
    if (c->rot_dim < 2 || c->rot_dim > c->head_dim || c->rot_dim % 2)
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: partial_rotary_factor %g gives %lld rotated "
                               "dimensions of %lld",
                               p->what, f, (long long)c->rot_dim, (long long)c->head_dim);
    c->attn_scale = 1.0 / sqrt((double)c->head_dim);
    /* Qwen3_5TextConfig drops every MoE key (a dense MLP on each layer);
     * Qwen3_5MoeTextConfig drops mlp_only_layers and decoder_sparse_step
     * (experts on each layer) and norm_topk_prob (its router,
     * Qwen3VLMoeTextTopKRouter, always renormalises). */
    if (n_exp == 0 || q35)
        return QB_OK;
    if ((rc = parse_moe(p, root, c)) ||
        (rc = get_int(p, root, "shared_expert_intermediate_size", 512, &c->shared_intermediate)))
        return rc;
    if (!get(p, root, "norm_topk_prob") || q35moe)
        c->norm_topk = 1;
    if (q35moe) {
        c->sparse_step = 1;
        memset(c->mlp_only, 0, sizeof c->mlp_only);
    }
    return QB_OK;
}

/* A number that may be null: absent -> def, null -> 0 (switched off). */
static qb_status get_opt_real(const cfgp *p, const qb_json *root, const char *key, double def,
                              double *out)
{
    const qb_json *v = get(p, root, key);
    if (is_null(p, v)) {
        *out = 0;
        return QB_OK;
    }
    return get_real(p, root, key, def, out);
}

/* "layer_types" (transformers >= 4.53 writes it for the families with
 * sliding layers): "sliding_attention" / "full_attention" per layer. */
static qb_status parse_layer_types(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    const qb_json *lt = get(p, root, "layer_types");
    int64_t L;
    if (!lt || is_null(p, lt))
        return QB_OK;
    if (p->J->type(lt) != QB_JSON_ARRAY || (int64_t)p->J->count(lt) != c->n_layers ||
        c->n_layers > 1024)
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: \"layer_types\" is not a list of "
                               "num_hidden_layers (%lld, at most 1024) names",
                               p->what, (long long)c->n_layers);
    memset(c->sliding_map, 0, sizeof c->sliding_map);
    for (L = 0; L < c->n_layers; L++) {
        const char *s = p->J->get_string(p->J->at(lt, (size_t)L, NULL));
        if (!s || (strcmp(s, "sliding_attention") != 0 && strcmp(s, "full_attention") != 0))
            return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                                   "forward: %s: layer_types[%lld] is "
                                   "not sliding_attention or full_attention",
                                   p->what, (long long)L);
        if (s[0] == 's')
            c->sliding_map[L / 64] |= UINT64_C(1) << (L % 64);
    }
    c->has_sliding_map = 1;
    return QB_OK;
}

/* issue 31: smollm3, llama4, gemma4 ---------------------------------------- */

/* "no_rope_layers" (SmolLM3Config, Llama4TextConfig): one 0/1 per layer at
 * least, 0 a NoPE layer; absent or null (and for llama4 empty, its
 * `if self.no_rope_layers` test) -> every no_rope_layer_interval-th layer
 * (L + 1 a multiple of it) is NoPE. Fills c->nope_map. */
static qb_status parse_nope(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c, int empty_default)
{
    const qb_json *nr = get(p, root, "no_rope_layers");
    int64_t L, interval;
    qb_status rc;

    if (c->n_layers > 1024)
        return p->h->set_error(p->h, QB_E_UNSUPPORTED, "forward: %s: more than 1024 layers",
                               p->what);
    memset(c->nope_map, 0, sizeof c->nope_map);
    if (!nr || is_null(p, nr) ||
        (empty_default && p->J->type(nr) == QB_JSON_ARRAY && p->J->count(nr) == 0)) {
        if ((rc = get_int(p, root, "no_rope_layer_interval", 4, &interval)))
            return rc;
        for (L = 0; L < c->n_layers; L++)
            if ((L + 1) % interval == 0)
                c->nope_map[L / 64] |= UINT64_C(1) << (L % 64);
        return QB_OK;
    }
    if (p->J->type(nr) != QB_JSON_ARRAY || (int64_t)p->J->count(nr) < c->n_layers)
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: \"no_rope_layers\" is not a list of at least "
                               "num_hidden_layers (%lld) values",
                               p->what, (long long)c->n_layers);
    for (L = 0; L < c->n_layers; L++) {
        double d;
        if (!num(p, p->J->at(nr, (size_t)L, NULL), &d) || (d != 0 && d != 1))
            return p->h->set_error(p->h, QB_E_FORMAT,
                                   "forward: %s: no_rope_layers[%lld] is not 0 or 1", p->what,
                                   (long long)L);
        if (d == 0)
            c->nope_map[L / 64] |= UINT64_C(1) << (L % 64);
    }
    return QB_OK;
}

/* 1 when layer L skips the rotation (a NoPE layer). Pure. */
int qbh_fwd_layer_nope(const qbh_fwd_cfg *c, int64_t L)
{
    return L >= 0 && L < 1024 && (c->nope_map[L / 64] >> (L % 64) & 1);
}

/* SmolLM3 (SmolLM3Config, transformers 5.24): llama's layer with NoPE
 * layers; layer_types as written, else sliding on the NoPE layers when
 * use_sliding_window and sliding_window are set. Eager attention windows
 * by the layer type's mask alone, so a sliding layer with no
 * sliding_window, or with use_sliding_window false (where the flash path
 * would not window), is refused rather than guessed. */
static qb_status parse_smollm3(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    const qb_json *sw = get(p, root, "sliding_window"), *lt = get(p, root, "layer_types");
    int use = is_true(p, get(p, root, "use_sliding_window"));
    int64_t L;
    qb_status rc;

    /* SmolLM3Config's tie_word_embeddings defaults to true */
    c->tied = !is_false(p, get(p, root, "tie_word_embeddings"));
    if ((rc = parse_nope(p, root, c, 0)))
        return rc;
    if (sw && !is_null(p, sw) && (rc = get_int(p, root, "sliding_window", 1, &c->sliding_window)))
        return rc;
    if (!lt || is_null(p, lt)) {
        if (!use || !c->sliding_window)
            c->sliding_window = 0;
        for (L = 0; c->sliding_window && L < c->n_layers; L++)
            if (qbh_fwd_layer_nope(c, L))
                c->sliding_map[L / 64] |= UINT64_C(1) << (L % 64);
        c->has_sliding_map = 1;
        return QB_OK;
    }
    if ((rc = parse_layer_types(p, root, c)))
        return rc;
    for (L = 0; L < c->n_layers; L++)
        if (c->sliding_map[L / 64] >> (L % 64) & 1 && (!use || !c->sliding_window))
            return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                                   "forward: %s: layer_types[%lld] is sliding_attention but "
                                   "use_sliding_window is not true or sliding_window is null "
                                   "(transformers' eager and flash attention disagree there)",
                                   p->what, (long long)L);
    return QB_OK;
}

/* Llama 4's text model (Llama4TextConfig, transformers 5.24; docs/forward.md,
 * "Llama 4"): NoPE layers (interval 4; an empty list is the default too),
 * moe_layers (else every interleave_moe_layer_step-th layer from step - 1),
 * layer_types chunked_attention / full_attention (else chunked on the rope
 * layers when attention_chunk_size is set), the L2 q/k norm and the
 * temperature tuning of the NoPE layers. */
static qb_status parse_llama4(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    const qb_json *ml = get(p, root, "moe_layers"), *lt = get(p, root, "layer_types");
    const qb_json *ch = get(p, root, "attention_chunk_size");
    const qb_json *tt = get(p, root, "attn_temperature_tuning");
    int64_t L, step;
    size_t i;
    qb_status rc;

    c->moe = QBH_MOE_LLAMA4;
    /* apply_rotary_emb views (2i, 2i + 1) as one complex number. */
    c->rope_interleave = 1;
    c->moe_intermediate = c->intermediate; /* intermediate_size: experts, shared expert */
    c->shared_intermediate = c->intermediate;
    c->sparse_step = 1;
    if ((rc = get_int(p, root, "intermediate_size_mlp", 16384, &c->intermediate)) ||
        (rc = get_int(p, root, "num_local_experts", 16, &c->n_experts)) ||
        (rc = get_int(p, root, "num_experts_per_tok", 1, &c->top_k)) ||
        (rc = get_int(p, root, "interleave_moe_layer_step", 1, &step)) ||
        (rc = parse_nope(p, root, c, 1)))
        return rc;
    if (c->top_k > c->n_experts)
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: num_experts_per_tok %lld > %lld experts", p->what,
                               (long long)c->top_k, (long long)c->n_experts);
    if (!ml || is_null(p, ml)) {
        for (L = step - 1; L < c->n_layers; L += step)
            c->moe_map[L / 64] |= UINT64_C(1) << (L % 64);
    } else {
        if (p->J->type(ml) != QB_JSON_ARRAY)
            return p->h->set_error(p->h, QB_E_FORMAT, "forward: %s: \"moe_layers\" is not a list",
                                   p->what);
        for (i = 0; i < p->J->count(ml); i++) {
            double d;
            if (!num(p, p->J->at(ml, i, NULL), &d) || d < 0 || d != floor(d))
                return p->h->set_error(p->h, QB_E_FORMAT,
                                       "forward: %s: moe_layers[%zu] is not a layer index",
                                       p->what, i);
            /* Llama4TextDecoderLayer tests `layer_idx in moe_layers`: an
             * index past the layers selects nothing. */
            if (d < (double)c->n_layers)
                c->moe_map[(int)d / 64] |= UINT64_C(1) << ((int)d % 64);
        }
    }
    if (ch && !is_null(p, ch) && (rc = get_int(p, root, "attention_chunk_size", 8192, &c->attn_chunk)))
        return rc;
    if (!ch)
        c->attn_chunk = 8192;
    for (L = 0; L < c->n_layers; L++) {
        const char *s = NULL;
        int chunked;
        if (lt && !is_null(p, lt)) {
            if (p->J->type(lt) != QB_JSON_ARRAY || (int64_t)p->J->count(lt) != c->n_layers)
                return p->h->set_error(p->h, QB_E_FORMAT,
                                       "forward: %s: \"layer_types\" is not a list of "
                                       "num_hidden_layers (%lld) names",
                                       p->what, (long long)c->n_layers);
            s = p->J->get_string(p->J->at(lt, (size_t)L, NULL));
            if (!s || (strcmp(s, "chunked_attention") != 0 && strcmp(s, "full_attention") != 0))
                return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                                       "forward: %s: layer_types[%lld] is not chunked_attention "
                                       "or full_attention",
                                       p->what, (long long)L);
            chunked = s[0] == 'c';
        } else {
            chunked = !qbh_fwd_layer_nope(c, L) && c->attn_chunk > 0;
        }
        if (chunked && c->attn_chunk < 1)
            return p->h->set_error(p->h, QB_E_FORMAT,
                                   "forward: %s: layer %lld is chunked_attention but "
                                   "attention_chunk_size is null",
                                   p->what, (long long)L);
        if (chunked)
            c->chunk_map[L / 64] |= UINT64_C(1) << (L % 64);
    }
    c->l2_qk_norm = !is_false(p, get(p, root, "use_qk_norm"));
    if (!(tt && is_false(p, tt)) &&
        ((rc = get_real(p, root, "attn_scale", 0.1, &c->temp_scale)) ||
         (rc = get_real(p, root, "floor_scale", 8192, &c->temp_floor))))
        return rc;
    return QB_OK;
}

/* One layer type's rope_parameters entry of gemma4 (index full). */
static qb_status parse_g4_rope(const cfgp *p, const qb_json *rp, const char *type, int full,
                               qbh_fwd_cfg *c)
{
    const qb_json *e = get(p, rp, type);
    const char *rt;
    qb_status rc;
    if (!e && !rp) { /* Gemma4TextConfig's defaults */
        c->g4_theta[full] = full ? 1000000.0 : 10000.0;
        c->g4_prop[full] = full;
        c->g4_prf[full] = full ? 0.25 : 1.0;
        c->g4_factor[full] = 1.0;
        return QB_OK;
    }
    rt = p->J->get_string(get(p, e, "rope_type"));
    if (p->J->type(e) != QB_JSON_OBJECT || !rt ||
        (strcmp(rt, "default") != 0 && strcmp(rt, "proportional") != 0))
        return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                               "forward: %s: rope_parameters.%s: rope_type %s is not supported for "
                               "gemma4_text (supported: default, proportional)",
                               p->what, type, rt ? rt : "(missing)");
    c->g4_prop[full] = rt[0] == 'p';
    if ((rc = get_real(p, e, "rope_theta", full ? 1000000.0 : 10000.0, &c->g4_theta[full])) ||
        (rc = get_real(p, e, "partial_rotary_factor", 1.0, &c->g4_prf[full])) ||
        (rc = get_real(p, e, "factor", 1.0, &c->g4_factor[full])))
        return rc;
    return QB_OK;
}

/* Gemma 4's text model (Gemma4TextConfig, transformers 5.24): what
 * gemma4.c runs, and the features it does not, refused by name. */
static qb_status parse_gemma4(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    static const char *const off[] = {"attention_k_eq_v", "enable_moe_block",
                                      "use_double_wide_mlp"};
    const qb_json *plc = get(p, root, "per_layer_config"), *rp = get(p, root, "rope_parameters");
    const qb_json *v;
    const char *act;
    int64_t shared, L, pattern = 6;
    size_t i;
    qb_status rc;

    c->gemma4 = 1;
    for (i = 0; i < sizeof off / sizeof off[0]; i++)
        if (is_true(p, get(p, root, off[i])))
            return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                                   "forward: %s: gemma4_text with %s true is not supported by the "
                                   "CPU forward pass",
                                   p->what, off[i]);
    v = get(p, root, "use_bidirectional_attention");
    act = p->J->get_string(get(p, root, "hidden_activation"));
    if ((v && !is_null(p, v)) || (act && strcmp(act, "gelu_pytorch_tanh") != 0))
        return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                               "forward: %s: gemma4_text with use_bidirectional_attention or a "
                               "hidden_activation other than gelu_pytorch_tanh is not supported",
                               p->what);
    if ((rc = get_count(p, root, "num_kv_shared_layers", 0, &shared)) ||
        (rc = get_count(p, root, "hidden_size_per_layer_input", 256, &c->g4_ple)) ||
        (rc = get_int(p, root, "sliding_window", 512, &c->sliding_window)) ||
        (rc = get_opt_real(p, root, "final_logit_softcapping", 0, &c->final_softcap)))
        return rc;
    if (shared)
        return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                               "forward: %s: gemma4_text with num_kv_shared_layers %lld is not "
                               "supported by the CPU forward pass (supported: 0)",
                               p->what, (long long)shared);
    if (c->n_layers > 1024)
        return p->h->set_error(p->h, QB_E_UNSUPPORTED, "forward: %s: more than 1024 layers",
                               p->what);
    /* Without layer_types: five sliding layers, then a full one. */
    for (L = 0; L < c->n_layers; L++)
        if ((L + 1) % pattern)
            c->sliding_map[L / 64] |= UINT64_C(1) << (L % 64);
    c->has_sliding_map = 1;
    if ((rc = parse_layer_types(p, root, c)))
        return rc;
    /* Gemma4TextConfig.__post_init__ forces the last layer to full_attention. */
    L = c->n_layers - 1;
    c->sliding_map[L / 64] &= ~(UINT64_C(1) << (L % 64));
    c->g4_hd[0] = c->g4_hd[1] = c->head_dim;
    c->g4_kv[0] = c->g4_kv[1] = c->n_kv_heads;
    if (!plc || is_null(p, plc)) {
        if ((rc = get_int(p, root, "global_head_dim", 512, &c->g4_hd[1])))
            return rc;
    } else {
        int seen = 0;
        if (p->J->type(plc) != QB_JSON_OBJECT)
            return p->h->set_error(p->h, QB_E_FORMAT, "forward: %s: per_layer_config is not an "
                                   "object", p->what);
        for (L = 0; L < c->n_layers; L++) {
            char key[24];
            const qb_json *e;
            int64_t hd, kv;
            snprintf(key, sizeof key, "%lld", (long long)L);
            e = get(p, plc, key);
            if (!e)
                continue;
            if (qbh_fwd_layer_window(c, L) > 0 || p->J->type(e) != QB_JSON_OBJECT ||
                p->J->count(e) != (size_t)(!!get(p, e, "head_dim") +
                                           !!get(p, e, "num_key_value_heads")))
                return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                                       "forward: %s: per_layer_config[%lld]: only head_dim and "
                                       "num_key_value_heads of full_attention layers are supported",
                                       p->what, (long long)L);
            if ((rc = get_int(p, e, "head_dim", c->head_dim, &hd)) ||
                (rc = get_int(p, e, "num_key_value_heads", c->n_kv_heads, &kv)))
                return rc;
            if (seen && (hd != c->g4_hd[1] || kv != c->g4_kv[1]))
                return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                                       "forward: %s: per_layer_config gives full layers different "
                                       "sizes",
                                       p->what);
            c->g4_hd[1] = hd;
            c->g4_kv[1] = kv;
            seen = 1;
        }
    }
    if (c->g4_hd[1] % 2 || c->n_heads % c->g4_kv[1])
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: full layers' head_dim %lld is odd or their kv heads "
                               "%lld do not divide num_attention_heads",
                               p->what, (long long)c->g4_hd[1], (long long)c->g4_kv[1]);
    if (rp && !is_null(p, rp) && p->J->type(rp) != QB_JSON_OBJECT)
        return p->h->set_error(p->h, QB_E_FORMAT, "forward: %s: rope_parameters is not an object",
                               p->what);
    if ((rc = parse_g4_rope(p, rp && !is_null(p, rp) ? rp : NULL, "sliding_attention", 0, c)) ||
        (rc = parse_g4_rope(p, rp && !is_null(p, rp) ? rp : NULL, "full_attention", 1, c)))
        return rc;
    c->tied = !is_false(p, get(p, root, "tie_word_embeddings"));
    return QB_OK;
}

/* Gemma 1/2/3 settings, with their configuration classes' defaults. */
static qb_status parse_gemma(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    int g2 = strcmp(c->arch, "gemma2") == 0, g3 = strcmp(c->arch, "gemma3_text") == 0;
    double qpas, sw;
    int64_t pattern, L;
    qb_status rc;

    c->gemma = 1;
    if (!g2 && !g3)
        return QB_OK;
    c->sandwich = 1;
    c->qk_norm = g3;
    if ((rc = get_real(p, root, "query_pre_attn_scalar", 256, &qpas)) ||
        (rc = get_opt_real(p, root, "attn_logit_softcapping", g2 ? 50.0 : 0, &c->attn_softcap)) ||
        (rc = get_opt_real(p, root, "final_logit_softcapping", g2 ? 30.0 : 0, &c->final_softcap)) ||
        (rc = get_opt_real(p, root, "sliding_window", 4096, &sw)))
        return rc;
    c->attn_scale = 1.0 / sqrt(qpas);
    c->sliding_window = (int64_t)sw;
    if (g3 && (rc = get_real(p, root, "rope_local_base_freq", 10000.0, &c->rope_local_theta)))
        return rc;
    /* Without layer_types: gemma2 alternates (sliding first), gemma3 has
     * one global layer in every sliding_window_pattern (6). */
    if ((rc = get_int(p, root, "sliding_window_pattern", g2 ? 2 : 6, &pattern)))
        return rc;
    if (c->n_layers > 1024)
        return p->h->set_error(p->h, QB_E_UNSUPPORTED, "forward: %s: more than 1024 layers",
                               p->what);
    for (L = 0; L < c->n_layers; L++)
        if ((L + 1) % pattern)
            c->sliding_map[L / 64] |= UINT64_C(1) << (L % 64);
    c->has_sliding_map = 1;
    return QB_OK;
}

/* yarn (transformers' _compute_yarn_parameters): beta_fast / beta_slow
 * (32 / 1 when absent or 0), truncate, the original context length (a
 * top-level original_max_position_embeddings wins over the one in the
 * scaling, as standardize_rope_params sets it; else max_position_embeddings),
 * and attention_factor (explicit, or from mscale and mscale_all_dim). */
static qb_status parse_yarn(const cfgp *p, const qb_json *root, const qb_json *rs, qbh_fwd_cfg *c)
{
    const qb_json *tr = get(p, rs, "truncate");
    double ms, msa, af;
    int64_t orig, maxpos;
    qb_status rc;

    c->rope_kind = QBH_ROPE_YARN;
    if ((rc = get_num(p, rs, "beta_fast", 0, &c->rope_beta_fast)) ||
        (rc = get_num(p, rs, "beta_slow", 0, &c->rope_beta_slow)) ||
        (rc = get_num(p, rs, "mscale", 0, &ms)) ||
        (rc = get_num(p, rs, "attention_factor", 0, &af)) ||
        (rc = get_int(p, root, "max_position_embeddings",
                      strcmp(c->arch, "deepseek_v3") == 0    ? 4096
                      : strcmp(c->arch, "deepseek_v32") == 0 ? 163840
                      : strcmp(c->arch, "gpt_oss") == 0   ? 131072
                                                          : 2048,
                      &maxpos)) ||
        (rc = get_int(p, rs, "original_max_position_embeddings", maxpos, &orig)) ||
        (rc = get_int(p, root, "original_max_position_embeddings", orig, &orig)))
        return rc;
    msa = c->rope_mscale_all_dim;
    if (c->rope_beta_fast == 0)
        c->rope_beta_fast = 32;
    if (c->rope_beta_slow == 0)
        c->rope_beta_slow = 1;
    c->rope_truncate = !(tr && is_false(p, tr));
    c->rope_orig_max = (double)orig;
    if (af != 0)
        c->rope_attn_factor = af;
    else if (ms != 0 && msa != 0)
        c->rope_attn_factor = yarn_mscale(c->rope_factor, ms) / yarn_mscale(c->rope_factor, msa);
    else
        c->rope_attn_factor = yarn_mscale(c->rope_factor, 1.0);
    return QB_OK;
}

static qb_status parse_rope(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    const qb_json *rs = get(p, root, "rope_scaling");
    const qb_json *t;
    const char *type;
    qb_status rc;
    int ds = strncmp(c->arch, "deepseek_v", 10) == 0, oss = strcmp(c->arch, "gpt_oss") == 0;
    qb_json *def = NULL;

    c->rope_kind = QBH_ROPE_DEFAULT;
    c->rope_attn_factor = 1.0;
    /* transformers 5 writes one flat "rope_parameters" object (with
     * rope_theta inside) where older configs have "rope_scaling"; a dict
     * nested by layer type is left to the families that have one. */
    if (!rs || is_null(p, rs)) {
        const qb_json *rp = get(p, root, "rope_parameters");
        if (p->J->type(rp) == QB_JSON_OBJECT && (get(p, rp, "rope_type") || get(p, rp, "type"))) {
            rs = rp;
            if ((rc = get_real(p, rp, "rope_theta", c->rope_theta, &c->rope_theta)))
                return rc;
        }
    }
    if ((!rs || is_null(p, rs)) && oss) {
        /* GptOssConfig.__post_init__'s rope when the config has none. */
        static const char oss_rope[] =
            "{\"rope_type\": \"yarn\", \"factor\": 32.0, \"beta_fast\": 32.0, "
            "\"beta_slow\": 1.0, \"truncate\": false, "
            "\"original_max_position_embeddings\": 4096}";
        if ((rc = p->J->parse(p->h, "forward: gpt_oss's default rope_scaling", oss_rope,
                              sizeof oss_rope - 1, &def)))
            return rc;
        c->rope_factor = 32.0;
        rc = parse_yarn(p, root, def, c);
        p->J->free(def);
        return rc;
    }
    if (!rs || is_null(p, rs))
        return QB_OK;
    if (p->J->type(rs) != QB_JSON_OBJECT)
        return p->h->set_error(p->h, QB_E_FORMAT, "forward: %s: \"rope_scaling\" is not an object",
                               p->what);
    /* transformers reads "rope_type", and "type" in older configs. */
    t = get(p, rs, "rope_type");
    if (!t)
        t = get(p, rs, "type");
    type = p->J->get_string(t) ? p->J->get_string(t) : "default";
    if (strcmp(type, "default") == 0)
        return QB_OK;
    rc = get_real(p, rs, "factor", 0, &c->rope_factor);
    if (!rc && (ds || oss))
        rc = get_num(p, rs, "mscale_all_dim", 0, &c->rope_mscale_all_dim);
    if (rc)
        return rc;
    if (!(c->rope_factor > 0))
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: rope_scaling \"%s\" needs \"factor\"", p->what, type);
    if (strcmp(type, "linear") == 0) {
        c->rope_kind = QBH_ROPE_LINEAR;
        return QB_OK;
    }
    if (strcmp(type, "llama3") == 0) {
        int64_t orig;
        c->rope_kind = QBH_ROPE_LLAMA3;
        rc = get_real(p, rs, "low_freq_factor", 1.0, &c->rope_low_freq);
        if (!rc)
            rc = get_real(p, rs, "high_freq_factor", 4.0, &c->rope_high_freq);
        if (!rc)
            rc = get_int(p, rs, "original_max_position_embeddings", 8192, &orig);
        if (rc)
            return rc;
        if (!(c->rope_high_freq > c->rope_low_freq))
            return p->h->set_error(p->h, QB_E_FORMAT,
                                   "forward: %s: rope_scaling llama3 needs high_freq_factor > "
                                   "low_freq_factor",
                                   p->what);
        c->rope_orig_max = (double)orig;
        return QB_OK;
    }
    if ((ds || oss) && strcmp(type, "yarn") == 0)
        return parse_yarn(p, root, rs, c);
    return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                           "forward: %s: rope_scaling type \"%s\" is not supported by the CPU "
                           "forward pass (supported: default, linear, llama3; yarn for "
                           "deepseek_v2/v3, gpt_oss)",
                           p->what, type);
}

/* ---- issue 31: glm4_moe, minimax_m2, deepseek_v32 ---------------------- */

/* The fraction of each head that rotates: rope_parameters'
 * partial_rotary_factor (transformers 5 writes it there), else the
 * top-level key (GLM-4.5's released config.json), else MiniMax-M2's
 * rotary_dim / head_dim (MiniMaxM2Config.convert_rope_params_to_dict),
 * else `def` (Glm4MoeConfig.__post_init__: 0.5). */
static qb_status parse_partial_rotary(const cfgp *p, const qb_json *root, double def,
                                      qbh_fwd_cfg *c)
{
    const qb_json *rp = get(p, root, "rope_parameters");
    double f = 0, rd = 0;
    qb_status rc;
    if (p->J->type(rp) == QB_JSON_OBJECT &&
        (rc = get_real(p, rp, "partial_rotary_factor", 0, &f)))
        return rc;
    if (f == 0 && (rc = get_real(p, root, "partial_rotary_factor", 0, &f)))
        return rc;
    if (f == 0 && (rc = get_real(p, root, "rotary_dim", 0, &rd)))
        return rc;
    if (f == 0)
        f = rd > 0 ? rd / (double)c->head_dim : def;
    c->rot_dim = (int64_t)((double)c->head_dim * f);
    if (c->rot_dim < 2 || c->rot_dim > c->head_dim || c->rot_dim % 2)
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: partial_rotary_factor %g gives %lld "
                               "rotated dimensions of %lld",
                               p->what, f, (long long)c->rot_dim, (long long)c->head_dim);
    return QB_OK;
}

/* GLM-4.5/4.6 (Glm4MoeConfig, transformers 5.24): llama attention with
 * optional q/k/v biases and per-head q/k norms (use_qk_norm), half the
 * head rotated by default; DeepSeek-V3's MoE (noaux_tc router, shared
 * experts, dense layers below first_k_dense_replace) with its defaults. */
static qb_status parse_glm4_moe(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    int64_t n_shared;
    qb_status rc;
    const qb_json *v;

    c->qk_norm = is_true(p, get(p, root, "use_qk_norm"));
    if ((rc = parse_partial_rotary(p, root, 0.5, c)))
        return rc;
    c->moe = QBH_MOE_DEEPSEEK;
    c->ds_route = QBH_DS_NOAUX_TC;
    c->sparse_step = 1;
    if ((rc = get_int(p, root, "n_routed_experts", 128, &c->n_experts)) ||
        (rc = get_int(p, root, "num_experts_per_tok", 8, &c->top_k)) ||
        (rc = get_int(p, root, "moe_intermediate_size", 1408, &c->moe_intermediate)) ||
        (rc = get_count(p, root, "n_shared_experts", 1, &n_shared)) ||
        (rc = get_count(p, root, "first_k_dense_replace", 1, &c->first_dense)) ||
        (rc = get_real(p, root, "routed_scaling_factor", 1.0, &c->routed_scale)) ||
        (rc = get_int(p, root, "n_group", 1, &c->n_group)) ||
        (rc = get_int(p, root, "topk_group", 1, &c->topk_group)))
        return rc;
    c->shared_intermediate = c->moe_intermediate * n_shared;
    v = get(p, root, "norm_topk_prob");
    c->norm_topk = !v || is_null(p, v) ? 1 : is_true(p, v);
    if (c->n_experts % c->n_group || c->topk_group > c->n_group ||
        c->top_k > c->topk_group * (c->n_experts / c->n_group) || c->n_experts / c->n_group < 2)
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: n_group %lld / topk_group %lld do not "
                               "fit %lld experts with num_experts_per_tok %lld",
                               p->what, (long long)c->n_group, (long long)c->topk_group,
                               (long long)c->n_experts, (long long)c->top_k);
    return QB_OK;
}

/* MiniMax-M2 (MiniMaxM2Config): q_norm/k_norm over all heads at once,
 * partial rotation (rotary_dim), and in every layer experts of
 * intermediate_size routed by MiniMaxM2TopKRouter: sigmoid scores plus
 * e_score_correction_bias choose the top_k, their unbiased scores divided
 * by their sum weigh them. That is DeepSeek-V3's noaux_tc with one group,
 * renormalised, unscaled (its denominator's +1e-20 is below a double's
 * resolution of any sum of top_k sigmoids), so deepseek_route.c runs it. */
static qb_status parse_minimax_m2(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    qb_status rc;

    c->qk_norm_full = 1;
    if ((rc = parse_partial_rotary(p, root, 1.0, c)))
        return rc;
    c->moe = QBH_MOE_MINIMAX;
    c->ds_route = QBH_DS_NOAUX_TC;
    c->n_group = 1;
    c->topk_group = 1;
    c->norm_topk = 1;
    c->routed_scale = 1.0;
    c->sparse_step = 1;
    c->moe_intermediate = c->intermediate;
    if ((rc = get_int(p, root, "num_local_experts", 256, &c->n_experts)) ||
        (rc = get_int(p, root, "num_experts_per_tok", 8, &c->top_k)))
        return rc;
    if (c->top_k > c->n_experts || c->n_experts < 2)
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: num_experts_per_tok %lld of %lld experts", p->what,
                               (long long)c->top_k, (long long)c->n_experts);
    return QB_OK;
}

/* DeepSeek-V3.2's sparse attention (DeepseekV32Config): the indexer's
 * sizes and index_topk; every layer "indexed_attention", the MLP layout
 * of mlp_layer_types only as first_k_dense_replace places it. */
static qb_status parse_dsa(const cfgp *p, const qb_json *root, qbh_fwd_cfg *c)
{
    const qb_json *lt;
    int64_t L;
    qb_status rc;
    int k;

    if ((rc = get_int(p, root, "index_topk", 2048, &c->index_topk)) ||
        (rc = get_int(p, root, "index_head_dim", 128, &c->index_head_dim)) ||
        (rc = get_int(p, root, "index_n_heads", 64, &c->index_n_heads)))
        return rc;
    if (c->index_head_dim < c->qk_rope)
        return p->h->set_error(p->h, QB_E_FORMAT,
                               "forward: %s: index_head_dim %lld < qk_rope_head_dim %lld", p->what,
                               (long long)c->index_head_dim, (long long)c->qk_rope);
    for (k = 0; k < 2; k++) {
        const char *key = k ? "mlp_layer_types" : "layer_types";
        lt = get(p, root, key);
        if (!lt || is_null(p, lt))
            continue;
        if (p->J->type(lt) != QB_JSON_ARRAY || (int64_t)p->J->count(lt) != c->n_layers)
            return p->h->set_error(p->h, QB_E_FORMAT,
                                   "forward: %s: \"%s\" is not a list of num_hidden_layers names",
                                   p->what, key);
        for (L = 0; L < c->n_layers; L++) {
            const char *s = p->J->get_string(p->J->at(lt, (size_t)L, NULL));
            const char *want = k ? (L < c->first_dense ? "dense" : "sparse") : "indexed_attention";
            if (!s || strcmp(s, want) != 0)
                return p->h->set_error(p->h, QB_E_UNSUPPORTED,
                                       "forward: %s: %s[%lld] is \"%s\", not \"%s\" (the CPU "
                                       "forward pass runs indexed attention in every layer and "
                                       "experts from first_k_dense_replace on)",
                                       p->what, key, (long long)L, s ? s : "(not a string)", want);
        }
    }
    return QB_OK;
}

qb_status qbh_fwd_cfg_parse(const qb_host *h, const char *what, const char *config_json,
                            qbh_fwd_cfg *c)
{
    qb_json *root = NULL;
    const qb_json *v;
    const char *mt;
    char file[1100];
    cfgp pc, *p = &pc;
    qb_status rc;
    int64_t def_hd;
    double sw;
    int oss, l4;

    assert(h && QB_HAS_FIELD(h, qb_host, json) && h->json);
    pc.h = h;
    pc.J = h->json;
    pc.what = what;
    memset(c, 0, sizeof *c);
    c->bos = -1;
    /* The strict reading every input JSON file gets (qb_json.h): a file
     * the parser refuses is refused here, naming it. */
    snprintf(file, sizeof file, "forward: %s: config.json", what);
    if (config_json && (rc = p->J->parse(h, file, config_json, strlen(config_json), &root)))
        return rc;
    if (!config_json || p->J->type(root) != QB_JSON_OBJECT) {
        rc = h->set_error(h, QB_E_FORMAT, "forward: %s: no config.json object to read", what);
        goto out;
    }
    mt = p->J->get_string(get(p, root, "model_type"));
    if (!mt) {
        rc = h->set_error(h, QB_E_FORMAT, "forward: %s: \"model_type\" is missing", what);
        goto out;
    }
    if (!is_supported(mt)) {
        char list[1024];
        qb_arch_list(QB_ARCH_FORWARD, list, sizeof list);
        rc = h->set_error(h, QB_E_UNSUPPORTED,
                          "forward: %s: architecture '%s' is not supported by the CPU forward "
                          "pass (supported: %s)",
                          what, mt, list);
        goto out;
    }
    snprintf(c->arch, sizeof c->arch, "%s", mt);
    oss = strcmp(c->arch, "gpt_oss") == 0;
    l4 = strcmp(c->arch, "llama4_text") == 0; /* issue 31 */
    if ((rc = get_int(p, root, "hidden_size", -1, &c->hidden)) ||
        /* Qwen3_5MoeTextConfig has no intermediate_size (no dense MLP) */
        (rc = get_int(p, root, "intermediate_size",
                      strcmp(c->arch, "qwen3_5_moe_text") == 0 ? 1 : -1, &c->intermediate)) ||
        (rc = get_int(p, root, "num_hidden_layers", -1, &c->n_layers)) ||
        (rc = get_int(p, root, "num_attention_heads", -1, &c->n_heads)) ||
        /* GptOssConfig's field defaults: 8 kv heads, head_dim 64. */
        /* ... and Llama4TextConfig's (issue 31): 8 kv heads, head_dim 128. */
        (rc = get_int(p, root, "num_key_value_heads", oss || l4 ? 8 : c->n_heads, &c->n_kv_heads)) ||
        (rc = get_int(p, root, "vocab_size", -1, &c->vocab)))
        goto out;
    /* head_dim: explicit (qwen3, some mistral) or hidden / heads. */
    def_hd = oss ? 64 : l4 ? 128 : c->hidden / c->n_heads;
    if ((rc = get_int(p, root, "head_dim", def_hd ? def_hd : 1, &c->head_dim)))
        goto out;
    /* MLA: head sizes come from parse_deepseek (its head_dim key is
     * qk_rope_head_dim, its kv heads are not grouped). */
    if (strncmp(c->arch, "deepseek_v", 10) == 0) {
        c->n_kv_heads = c->n_heads;
        c->head_dim = 2;
    }
    if (c->n_heads % c->n_kv_heads || c->head_dim % 2) {
        rc = p->h->set_error(p->h, QB_E_FORMAT,
                             "forward: %s: num_attention_heads %lld is not a multiple of "
                             "num_key_value_heads %lld, or head_dim %lld is odd",
                             p->what, (long long)c->n_heads, (long long)c->n_kv_heads,
                             (long long)c->head_dim);
        goto out;
    }
    if ((rc = get_real(p, root, "rms_norm_eps",
                       oss || l4 || strcmp(c->arch, "glm4_moe") == 0 ? 1e-5 : 1e-6,
                       &c->rms_eps)) ||
        (rc = get_real(p, root, "rope_theta", default_theta(c->arch), &c->rope_theta)) ||
        (rc = parse_rope(p, root, c)))
        goto out;
    c->tied = is_true(p, get(p, root, "tie_word_embeddings"));
    {
        double d;
        if (num(p, get(p, root, "bos_token_id"), &d) && d >= 0 && d < (double)c->vocab)
            c->bos = (int64_t)d;
    }
    c->qk_norm = strcmp(c->arch, "qwen3") == 0 || strcmp(c->arch, "qwen3_moe") == 0;
    c->rot_dim = c->head_dim;
    if (strncmp(c->arch, "deepseek_v", 10) == 0) {
        rc = parse_deepseek(p, root, c);
        goto out;
    }
    /* issue 31 (attn_scale: head_dim^-1/2, as the dense families) */
    c->attn_scale = 1.0 / sqrt((double)c->head_dim);
    if (strcmp(c->arch, "glm4_moe") == 0) {
        rc = parse_glm4_moe(p, root, c);
        goto out;
    }
    if (strcmp(c->arch, "minimax_m2") == 0) {
        rc = parse_minimax_m2(p, root, c);
        goto out;
    }
    if (strcmp(c->arch, "qwen3_next") == 0 || strncmp(c->arch, "qwen3_5_", 8) == 0) {
        rc = parse_qwen3next(p, root, c);
        goto out;
    }
    if (strcmp(c->arch, "mixtral") == 0 || strstr(c->arch, "_moe")) {
        if ((rc = parse_moe(p, root, c)))
            goto out;
    }
    if (strcmp(c->arch, "phi3") == 0) {
        /* Phi-3/Phi-4-mini rotate only partial_rotary_factor of each head. */
        double f;
        if ((rc = get_real(p, root, "partial_rotary_factor", 1.0, &f)))
            goto out;
        c->rot_dim = (int64_t)((double)c->head_dim * f);
        if (c->rot_dim < 2 || c->rot_dim > c->head_dim || c->rot_dim % 2) {
            rc = p->h->set_error(p->h, QB_E_FORMAT,
                                 "forward: %s: partial_rotary_factor %g gives %lld "
                                 "rotated dimensions of %lld",
                                 p->what, f, (long long)c->rot_dim, (long long)c->head_dim);
            goto out;
        }
    }
    c->attn_scale = 1.0 / sqrt((double)c->head_dim);
    if (oss) {
        rc = parse_gptoss(p, root, c);
        goto out;
    }
    /* issue 31: smollm3, llama4, gemma4 */
    if (strcmp(c->arch, "smollm3") == 0) {
        rc = parse_smollm3(p, root, c);
        goto out;
    }
    if (l4) {
        rc = parse_llama4(p, root, c);
        goto out;
    }
    if (strcmp(c->arch, "gemma4_text") == 0) {
        rc = parse_gemma4(p, root, c);
        goto out;
    }
    if (strncmp(c->arch, "gemma", 5) == 0) {
        if ((rc = parse_gemma(p, root, c)) || (rc = parse_layer_types(p, root, c)))
            goto out;
        rc = QB_OK;
        goto out;
    }
    /* Sliding window: mistral applies "sliding_window" (when not null) to
     * every layer; qwen2/qwen3 only with use_sliding_window true, and only
     * from layer max_window_layers on (transformers' layer_types rule). */
    v = get(p, root, "sliding_window");
    if (num(p, v, &sw) && sw >= 1) {
        /* mistral, mixtral and phi3 apply the window on every layer. */
        if (strcmp(c->arch, "mistral") == 0 || strcmp(c->arch, "mixtral") == 0 ||
            strcmp(c->arch, "phi3") == 0) {
            c->sliding_window = (int64_t)sw;
        } else if (strcmp(c->arch, "llama") != 0 &&
                   is_true(p, get(p, root, "use_sliding_window"))) {
            c->sliding_window = (int64_t)sw;
            if ((rc = get_int(p, root, "max_window_layers", c->n_layers, &c->sliding_from)))
                goto out;
        }
    }
    if (c->sliding_window && (rc = parse_layer_types(p, root, c)))
        goto out;
    rc = QB_OK;
out:
    p->J->free(root);
    return rc;
}

int64_t qbh_fwd_layer_window(const qbh_fwd_cfg *c, int64_t L)
{
    if (c->sliding_window <= 0)
        return 0;
    if (c->has_sliding_map)
        return L < 1024 && (c->sliding_map[L / 64] >> (L % 64) & 1) ? c->sliding_window : 0;
    return L >= c->sliding_from ? c->sliding_window : 0;
}

int qbh_fwd_layer_moe(const qbh_fwd_cfg *c, int64_t L)
{
    if (!c->moe)
        return 0;
    if (c->moe == QBH_MOE_LLAMA4) /* issue 31: moe_layers */
        return L >= 0 && L < 1024 && (c->moe_map[L / 64] >> (L % 64) & 1);
    if (c->moe == QBH_MOE_MIXTRAL || c->moe == QBH_MOE_MINIMAX)
        return 1;
    if (c->moe == QBH_MOE_DEEPSEEK) /* DeepseekV3DecoderLayer: dense below it */
        return L >= c->first_dense;
    /* Qwen2/3-MoE: experts unless listed in mlp_only_layers, on every
     * decoder_sparse_step-th layer. */
    if (L < 1024 && (c->mlp_only[L / 64] >> (L % 64) & 1))
        return 0;
    return (L + 1) % c->sparse_step == 0;
}

/* yarn's correction range [lo, hi] of dimension-pair indices:
 * find_correction_range of transformers' _compute_yarn_parameters (the
 * pair index whose wavelength makes `rot` turns over the original
 * context), floored/ceiled when truncating, clamped to [0, dim - 1]. */
static void yarn_range(const qbh_fwd_cfg *c, double *lo, double *hi)
{
    double dim = (double)c->rot_dim, lb = 2.0 * log(c->rope_theta);
    double l = dim * log(c->rope_orig_max / (c->rope_beta_fast * 2.0 * M_PI)) / lb;
    double h = dim * log(c->rope_orig_max / (c->rope_beta_slow * 2.0 * M_PI)) / lb;
    if (c->rope_truncate) {
        l = floor(l);
        h = ceil(h);
    }
    *lo = l > 0 ? l : 0;
    *hi = h < dim - 1 ? h : dim - 1;
    if (*lo == *hi)
        *hi += 0.001; /* linear_ramp_factor's guard against a zero width */
}

void qbh_fwd_rope_inv_freq(const qbh_fwd_cfg *c, int local, double *inv)
{
    int64_t i, half = c->rot_dim / 2;
    double theta = local && c->rope_local_theta > 0 ? c->rope_local_theta : c->rope_theta;
    double lo = 0, hi = 1;
    if (c->rope_kind == QBH_ROPE_YARN)
        yarn_range(c, &lo, &hi);
    for (i = 0; i < half; i++) {
        double f = pow(theta, -(double)(2 * i) / (double)c->rot_dim);
        if (local && c->rope_local_theta > 0) {
            /* gemma3's sliding layers: their own base, never scaled. */
        } else if (c->rope_kind == QBH_ROPE_LINEAR) {
            f /= c->rope_factor;
        } else if (c->rope_kind == QBH_ROPE_YARN) {
            /* Pairs below lo keep their frequency (extrapolation), above
             * hi are divided by factor (interpolation), linear between. */
            double ramp = ((double)i - lo) / (hi - lo);
            ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
            f = f / c->rope_factor * ramp + f * (1.0 - ramp);
        } else if (c->rope_kind == QBH_ROPE_LLAMA3) {
            /* Llama 3.1: wavelengths shorter than orig/high_freq kept,
             * longer than orig/low_freq divided by factor, smooth between. */
            double wavelen = 2.0 * M_PI / f;
            double low_wl = c->rope_orig_max / c->rope_low_freq;
            double high_wl = c->rope_orig_max / c->rope_high_freq;
            if (wavelen > low_wl) {
                f /= c->rope_factor;
            } else if (wavelen >= high_wl) {
                double s = (c->rope_orig_max / wavelen - c->rope_low_freq) /
                           (c->rope_high_freq - c->rope_low_freq);
                f = (1.0 - s) * f / c->rope_factor + s * f;
            }
        }
        inv[i] = f;
    }
}
