/*
 * sm86-w4a16 — the per-layer layout an architecture takes from config.json:
 * widths of its projections, the expert count, which layers hold a MoE
 * block, and one slot numbering of role instances that the plan (writer)
 * and the reader share, so both sides agree on every tensor of a layer.
 *
 * MoE placement follows the Hugging Face decoder layers: Mixtral has a
 * sparse block in every layer; Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer
 * use one when the layer is not in mlp_only_layers and num_experts > 0
 * and (layer + 1) % decoder_sparse_step == 0 (defaults 1 and [] in
 * configuration_qwen2_moe.py / configuration_qwen3_moe.py), else a dense
 * MLP of intermediate_size. DeepseekV2/V3DecoderLayer use one from layer
 * first_k_dense_replace on (transformers 5.24 reads no moe_layer_freq; the
 * original DeepSeek code also wants layer % moe_layer_freq == 0, so a
 * config with moe_layer_freq other than 1 is refused rather than guessed).
 */
#include "w4w.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qbk_alloc.h"

#define W4W_MAX_EXPERTS 4096

static const char *const width_keys[W4W_N_WIDTHS] = {
    "",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads * head_dim",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "the expert count",
    "1",
    "num_key_value_heads * head_dim",
    "q_lora_rank",
    "kv_lora_rank",
    "num_attention_heads * (qk_nope_head_dim + qk_rope_head_dim)",
    "kv_lora_rank + qk_rope_head_dim",
    "num_attention_heads * (qk_nope_head_dim + v_head_dim)",
    "num_attention_heads * v_head_dim",
    "moe_intermediate_size * n_shared_experts",
    "head_dim (use_qk_norm)",
    "index_n_heads * index_head_dim",
    "index_head_dim",
    "index_n_heads",
    "intermediate_size_mlp",
    "2 * linear_num_key_heads * linear_key_head_dim + 2 * linear_num_value_heads * "
    "linear_value_head_dim",
    "2 * linear_num_value_heads",
    "linear_num_value_heads * linear_value_head_dim",
    "linear_num_value_heads",
    "2 * linear_num_key_heads * linear_key_head_dim + linear_num_value_heads * "
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
    "hidden_size_per_layer_input",
    "num_hidden_layers * hidden_size_per_layer_input",
    "vocab_size_per_layer_input",
};

int64_t w4w_layout_width(const w4w_layout *lo, int64_t l, w4w_in_dim d)
{
    if (d == W4W_IN_HEADS && lo->heads_l && l >= 0 && l < lo->n_layers)
        return lo->heads_l[l];
    return (unsigned)d < W4W_N_WIDTHS ? lo->width[d] : -1;
}

const char *w4w_width_key(w4w_in_dim d)
{
    return (unsigned)d < W4W_N_WIDTHS ? width_keys[d] : "?";
}

/* Positive integer member, -1 when absent or null, -2 when not one. */
static int64_t pos_int(const cJSON *cfg, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!v || cJSON_IsNull(v))
        return -1;
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e12 ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        return -2;
    return (int64_t)v->valuedouble;
}

/* DeepSeek-V3.2's indexer widths (DeepseekV32Indexer: wq_b [index_n_heads *
 * index_head_dim, q_lora_rank], wk [index_head_dim, hidden], weights_proj
 * [index_n_heads, hidden]); -1 when the keys are absent (V2/V3, GLM). And
 * V3.2's mlp_layer_types, when present, must be the first_k_dense_replace
 * pattern the layout places (DeepseekV32Config.__post_init__ writes it so). */
static qb_status idx_widths(const qb_host *h, const char *where, const cJSON *cfg, w4w_layout *out)
{
    int64_t nh = pos_int(cfg, "index_n_heads"), hd = pos_int(cfg, "index_head_dim");
    if (nh == -2 || hd == -2)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: config.json: index_n_heads/index_head_dim is not a positive "
                            "integer",
                            where);
    out->width[W4W_IN_IDX_HEADS] = nh;
    out->width[W4W_IN_IDX_HD] = hd;
    out->width[W4W_IN_IDX_Q] = nh > 0 && hd > 0 ? nh * hd : -1;
    return QB_OK;
}

/* 1 when architecture a has roles held by linear- or full-attention
 * layers only (a hybrid). */
static int arch_hybrid(const w4w_arch *a)
{
    size_t r;
    for (r = 0; r < a->n_roles; r++)
        if (a->roles[r].layers == W4W_LAYERS_LINEAR || a->roles[r].layers == W4W_LAYERS_FULL)
            return 1;
    return 0;
}

/* Qwen3-Next's gated DeltaNet widths (Qwen3NextConfig's defaults: 16 key
 * heads of 128, 32 value heads of 128, kernel 4) and which layers are
 * linear attention: "layer_types", else every full_attention_interval-th
 * (default 4) layer full (Qwen3NextConfig.__post_init__). */
static qb_status layout_hybrid(const qb_host *h, const char *where, const cJSON *cfg,
                               w4w_layout *out)
{
    static const char *const keys[] = {"linear_num_key_heads", "linear_key_head_dim",
                                       "linear_num_value_heads", "linear_value_head_dim",
                                       "linear_conv_kernel_dim", "full_attention_interval"};
    static const int64_t defs[] = {16, 128, 32, 128, 4, 4};
    int64_t v[6], l;
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(cfg, "layer_types");
    size_t i;

    for (i = 0; i < 6; i++) {
        v[i] = pos_int(cfg, keys[i]);
        if (v[i] == -2)
            return h->set_error(h, QB_E_FORMAT, "%s: config.json: %s is not a positive integer",
                                where, keys[i]);
        if (v[i] < 0)
            v[i] = defs[i];
    }
    if (v[2] % v[0])
        return h->set_error(h, QB_E_FORMAT,
                            "%s: config.json: linear_num_value_heads %lld is not a multiple of "
                            "linear_num_key_heads %lld",
                            where, (long long)v[2], (long long)v[0]);
    out->width[W4W_IN_LIN_QKVZ] = 2 * v[0] * v[1] + 2 * v[2] * v[3];
    out->width[W4W_IN_LIN_BA] = 2 * v[2];
    out->width[W4W_IN_LIN_V] = v[2] * v[3];
    out->width[W4W_IN_LIN_NV] = v[2];
    out->width[W4W_IN_LIN_CONV] = 2 * v[0] * v[1] + v[2] * v[3];
    out->width[W4W_IN_LIN_KERNEL] = v[4];
    if (!lt || cJSON_IsNull(lt)) {
        for (l = 0; l < out->n_layers; l++)
            out->linear[l] = (l + 1) % v[5] != 0;
        return QB_OK;
    }
    if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != out->n_layers)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: config.json: layer_types is not a list of num_hidden_layers "
                            "(%lld) names",
                            where, (long long)out->n_layers);
    for (l = 0; l < out->n_layers; l++) {
        const cJSON *e = cJSON_GetArrayItem(lt, (int)l);
        if (!cJSON_IsString(e) || (strcmp(e->valuestring, "linear_attention") != 0 &&
                                   strcmp(e->valuestring, "full_attention") != 0))
            return h->set_error(h, QB_E_UNSUPPORTED,
                                "%s: config.json: layer_types[%lld] is not linear_attention or "
                                "full_attention",
                                where, (long long)l);
        out->linear[l] = e->valuestring[0] == 'l';
    }
    return QB_OK;
}

/* Gemma 4's text model (Gemma4TextConfig, transformers 5.24): the
 * per-layer input widths, and each layer's head_dim: full_attention
 * layers (layer_types; without it every sixth, and the last layer always,
 * Gemma4TextConfig.__post_init__) take per_layer_config's "head_dim" for
 * that layer, else global_head_dim (default 512); sliding layers
 * head_dim. What the layout does not place is refused by name: KV-shared
 * layers (no k/v projections of their own), k_eq_v full layers (no
 * v_proj), the MoE block, the double-wide MLP. */
static qb_status layout_gemma4(const qb_host *h, const char *where, const cJSON *cfg,
                               int64_t heads, int64_t head_dim, w4w_layout *out)
{
    static const char *const off[] = {"attention_k_eq_v", "enable_moe_block",
                                      "use_double_wide_mlp"};
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(cfg, "layer_types");
    const cJSON *plc = cJSON_GetObjectItemCaseSensitive(cfg, "per_layer_config");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "num_kv_shared_layers");
    int64_t P = 256, vpl = 262144, ghd = pos_int(cfg, "global_head_dim"), l, n = out->n_layers;
    size_t i;

    for (i = 0; i < sizeof off / sizeof off[0]; i++)
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, off[i])))
            return h->set_error(h, QB_E_UNSUPPORTED,
                                "%s: config.json: gemma4_text with %s true is not laid out by "
                                "%s (nor run by the CPU forward pass)",
                                where, off[i], W4W_PLUGIN_NAME);
    if (v && !cJSON_IsNull(v) && !(cJSON_IsNumber(v) && v->valuedouble == 0))
        return h->set_error(h, QB_E_UNSUPPORTED,
                            "%s: config.json: gemma4_text with num_kv_shared_layers other than 0 "
                            "is not laid out by %s (its shared layers hold no k/v projections; "
                            "the CPU forward pass does not run them either)",
                            where, W4W_PLUGIN_NAME);
    /* Gemma4TextConfig's defaults: 256 and 262144; 0 turns the per-layer
     * inputs off (Gemma4TextModel builds none of their tensors) */
    v = cJSON_GetObjectItemCaseSensitive(cfg, "hidden_size_per_layer_input");
    if (v && !cJSON_IsNull(v))
        P = cJSON_IsNumber(v) && v->valuedouble == 0 ? 0 : pos_int(cfg, "hidden_size_per_layer_input");
    v = cJSON_GetObjectItemCaseSensitive(cfg, "vocab_size_per_layer_input");
    if (v && !cJSON_IsNull(v))
        vpl = pos_int(cfg, "vocab_size_per_layer_input");
    if (P < 0 || vpl < 1 || ghd == -2)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: config.json: hidden_size_per_layer_input, "
                            "vocab_size_per_layer_input or global_head_dim is not a positive "
                            "integer",
                            where);
    out->width[W4W_IN_G4_PLE] = P > 0 ? P : -1;
    out->width[W4W_IN_G4_LP] = P > 0 ? P * n : -1;
    out->width[W4W_IN_G4_VOCAB] = P > 0 ? vpl : -1;
    if (ghd < 0)
        ghd = 512;
    if (heads < 1 || head_dim < 1)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: config.json: num_attention_heads/head_dim missing", where);
    if (lt && !cJSON_IsNull(lt) && (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != n))
        return h->set_error(h, QB_E_FORMAT,
                            "%s: config.json: layer_types is not a list of num_hidden_layers "
                            "(%lld) names",
                            where, (long long)n);
    if (plc && !cJSON_IsNull(plc) && !cJSON_IsObject(plc))
        return h->set_error(h, QB_E_FORMAT, "%s: config.json: per_layer_config is not an object",
                            where);
    if (!(out->heads_l = qbk_calloc((size_t)n, sizeof *out->heads_l)))
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", where);
    for (l = 0; l < n; l++) {
        const cJSON *e = lt && cJSON_IsArray(lt) ? cJSON_GetArrayItem(lt, (int)l) : NULL;
        int full = e ? cJSON_IsString(e) && strcmp(e->valuestring, "full_attention") == 0
                     : (l + 1) % 6 == 0;
        int64_t hd = head_dim;
        char key[24];
        if (e && !(cJSON_IsString(e) && (full || strcmp(e->valuestring, "sliding_attention") == 0)))
            return h->set_error(h, QB_E_UNSUPPORTED,
                                "%s: config.json: layer_types[%lld] is not sliding_attention or "
                                "full_attention",
                                where, (long long)l);
        full = full || l == n - 1;
        snprintf(key, sizeof key, "%lld", (long long)l);
        e = plc && cJSON_IsObject(plc) ? cJSON_GetObjectItemCaseSensitive(plc, key) : NULL;
        if (e) {
            /* per_layer_config[l]: its own head_dim / num_key_value_heads */
            const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "head_dim");
            if (!cJSON_IsObject(e) || (d && (!cJSON_IsNumber(d) || d->valuedouble < 1 ||
                                             d->valuedouble > 1e9 ||
                                             d->valuedouble != (double)(int64_t)d->valuedouble)))
                return h->set_error(h, QB_E_FORMAT,
                                    "%s: config.json: per_layer_config[\"%s\"] is not an object "
                                    "with a positive integer head_dim",
                                    where, key);
            if (d)
                hd = (int64_t)d->valuedouble;
        } else if (full && !(plc && !cJSON_IsNull(plc))) {
            hd = ghd;
        }
        out->heads_l[l] = heads * hd;
    }
    return QB_OK;
}

qb_status w4w_layout_init(const qb_host *h, const char *where, const w4w_arch *a,
                          const cJSON *cfg, int64_t n_layers, w4w_layout *out)
{
    static const char *const keys[] = {"hidden_size", "intermediate_size",
                                       "moe_intermediate_size",
                                       "shared_expert_intermediate_size",
                                       "intermediate_size_mlp"};
    static const w4w_in_dim dims[] = {W4W_IN_HIDDEN, W4W_IN_INTER, W4W_IN_MOE_INTER,
                                      W4W_IN_SHARED_INTER, W4W_IN_L4_MLP};
    int64_t heads, kv_heads, head_dim, step = 1, l, v;
    const cJSON *only, *e;
    qb_status rc = QB_OK;
    size_t i, r;

    memset(out, 0, sizeof *out);
    out->arch = a;
    out->n_layers = n_layers;
    for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        v = pos_int(cfg, keys[i]);
        if (v == -2)
            return h->set_error(h, QB_E_FORMAT, "%s: config.json: %s is not a positive integer",
                                where, keys[i]);
        out->width[dims[i]] = v;
    }
    heads = pos_int(cfg, "num_attention_heads");
    kv_heads = pos_int(cfg, "num_key_value_heads");
    head_dim = pos_int(cfg, "head_dim");
    if (heads == -2 || head_dim == -2 || kv_heads == -2)
        return h->set_error(h, QB_E_FORMAT,
                            "%s: config.json: num_attention_heads/num_key_value_heads/head_dim "
                            "is not a positive integer",
                            where);
    /* transformers' default num_key_value_heads is num_attention_heads */
    if (kv_heads < 0)
        kv_heads = heads;
    /* transformers' default head_dim is hidden_size // num_attention_heads */
    if (head_dim < 0 && heads > 0 && out->width[W4W_IN_HIDDEN] > 0)
        head_dim = out->width[W4W_IN_HIDDEN] / heads;
    out->width[W4W_IN_HEADS] = heads > 0 && head_dim > 0 ? heads * head_dim : -1;
    out->width[W4W_IN_KV_HEADS] = kv_heads > 0 && head_dim > 0 ? kv_heads * head_dim : -1;
    out->width[W4W_IN_ONE] = 1;
    out->width[W4W_IN_EXPERTS] = -1;
    for (i = W4W_IN_Q_LORA; i <= W4W_IN_DS_SHARED; i++) /* the MLA widths, set below */
        out->width[i] = -1;
    if (a->moe == W4W_MOE_FIRST_K) {
        /* DeepSeek MLA widths (DeepseekV3Attention); -1 where a key is absent */
        int64_t ql = pos_int(cfg, "q_lora_rank"), kvl = pos_int(cfg, "kv_lora_rank");
        int64_t nope = pos_int(cfg, "qk_nope_head_dim"), rope = pos_int(cfg, "qk_rope_head_dim");
        int64_t vd = pos_int(cfg, "v_head_dim"), nsh = pos_int(cfg, "n_shared_experts");
        int64_t mi = out->width[W4W_IN_MOE_INTER];
        if (ql == -2 || kvl == -2 || nope == -2 || rope == -2 || vd == -2 || nsh == -2)
            return h->set_error(h, QB_E_FORMAT,
                                "%s: config.json: q_lora_rank/kv_lora_rank/qk_nope_head_dim/"
                                "qk_rope_head_dim/v_head_dim/n_shared_experts is not a positive "
                                "integer",
                                where);
        out->width[W4W_IN_Q_LORA] = ql;
        out->width[W4W_IN_KV_LORA] = kvl;
        out->width[W4W_IN_MLA_Q] = heads > 0 && nope > 0 && rope > 0 ? heads * (nope + rope) : -1;
        out->width[W4W_IN_MLA_KV_A] = kvl > 0 && rope > 0 ? kvl + rope : -1;
        out->width[W4W_IN_MLA_KV_B] = heads > 0 && nope > 0 && vd > 0 ? heads * (nope + vd) : -1;
        out->width[W4W_IN_MLA_V] = heads > 0 && vd > 0 ? heads * vd : -1;
        out->width[W4W_IN_DS_SHARED] = mi > 0 && nsh > 0 ? mi * nsh : -1;
        rc = idx_widths(h, where, cfg, out);
        if (rc != QB_OK)
            return rc;
    }
    /* Glm4MoeAttention builds q_norm/k_norm over head_dim only when
     * use_qk_norm is true (GLM-4.5 true, GLM-4.5-Air false). */
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "use_qk_norm")))
        out->width[W4W_IN_QK_NORM] = head_dim > 0 ? head_dim : -1;
    if (a->moe != W4W_MOE_NONE) {
        out->n_experts = pos_int(cfg, a->experts_key);
        if (out->n_experts < 1 || out->n_experts > W4W_MAX_EXPERTS)
            return h->set_error(h, QB_E_FORMAT,
                                "%s: config.json: %s missing or not an integer in 1..%d (%s is a "
                                "mixture-of-experts architecture)",
                                where, a->experts_key, W4W_MAX_EXPERTS, a->model_type);
        out->width[W4W_IN_EXPERTS] = out->n_experts;
    }
    out->sparse = qbk_calloc((size_t)n_layers, 1);
    out->linear = qbk_calloc((size_t)n_layers, 1);
    out->role_off = qbk_calloc(a->n_roles, sizeof *out->role_off);
    if (!out->sparse || !out->linear || !out->role_off) {
        rc = h->set_error(h, QB_E_NOMEM, "%s: out of memory", where);
        goto out;
    }
    if (arch_hybrid(a) && (rc = layout_hybrid(h, where, cfg, out)) != QB_OK)
        goto out;
    for (i = W4W_IN_G4_PLE; i <= W4W_IN_G4_VOCAB; i++)
        out->width[i] = -1;
    if (strcmp(a->model_type, "gemma4_text") == 0 && /* issue 31 */
        (rc = layout_gemma4(h, where, cfg, heads, head_dim, out)) != QB_OK)
        goto out;
    for (r = 0; r < a->n_roles; r++) {
        out->role_off[r] = out->per_layer;
        out->per_layer += w4w_role_is_expert(&a->roles[r]) ? (size_t)out->n_experts : 1;
    }
    if (a->moe == W4W_MOE_EVERY)
        memset(out->sparse, 1, (size_t)n_layers);
    if (a->moe == W4W_MOE_FIRST_K) {
        const cJSON *fk = cJSON_GetObjectItemCaseSensitive(cfg, "first_k_dense_replace");
        int64_t freq = pos_int(cfg, "moe_layer_freq"), k = 0;
        if (fk && !cJSON_IsNull(fk)) {
            if (!cJSON_IsNumber(fk) || !(fk->valuedouble >= 0 && fk->valuedouble <= 1e9) ||
                fk->valuedouble != (double)(int64_t)fk->valuedouble) {
                rc = h->set_error(h, QB_E_FORMAT,
                                  "%s: config.json: first_k_dense_replace is not a non-negative "
                                  "integer",
                                  where);
                goto out;
            }
            k = (int64_t)fk->valuedouble;
        }
        if (freq == -2 || freq > 1) {
            rc = h->set_error(h, QB_E_UNSUPPORTED,
                              "%s: config.json: moe_layer_freq other than 1 is not supported "
                              "(transformers' %s places a MoE block in every layer from "
                              "first_k_dense_replace on)",
                              where, a->model_type);
            goto out;
        }
        for (l = 0; l < n_layers; l++)
            out->sparse[l] = l >= k;
        /* DeepseekV32DecoderLayer reads mlp_layer_types ("dense"/"sparse"
         * per layer); any other pattern than the one above is refused. */
        only = cJSON_GetObjectItemCaseSensitive(cfg, "mlp_layer_types");
        if (only && !cJSON_IsNull(only)) {
            int ok = cJSON_IsArray(only) && cJSON_GetArraySize(only) == (int)n_layers;
            l = 0;
            cJSON_ArrayForEach(e, only)
            {
                ok = ok && cJSON_IsString(e) &&
                     strcmp(e->valuestring, out->sparse[l] ? "sparse" : "dense") == 0;
                l++;
            }
            if (!ok) {
                rc = h->set_error(h, QB_E_UNSUPPORTED,
                                  "%s: config.json: mlp_layer_types is not %lld \"dense\" then "
                                  "\"sparse\" entries for num_hidden_layers = %lld (the layout "
                                  "places MoE blocks from first_k_dense_replace on)",
                                  where, (long long)k, (long long)n_layers);
                goto out;
            }
        }
    }
    if (a->moe == W4W_MOE_LIST) { /* issue 31: llama4 */
        const cJSON *ml = cJSON_GetObjectItemCaseSensitive(cfg, "moe_layers");
        step = pos_int(cfg, "interleave_moe_layer_step");
        if (step == -2 || (ml && !cJSON_IsNull(ml) && !cJSON_IsArray(ml))) {
            rc = h->set_error(h, QB_E_FORMAT,
                              "%s: config.json: interleave_moe_layer_step is not a positive "
                              "integer or moe_layers is not an array",
                              where);
            goto out;
        }
        if (step < 0)
            step = 1;
        if (!ml || cJSON_IsNull(ml))
            for (l = step - 1; l < n_layers; l += step)
                out->sparse[l] = 1;
        cJSON_ArrayForEach(e, ml)
        {
            if (!cJSON_IsNumber(e) || e->valuedouble < 0 ||
                e->valuedouble != (double)(int64_t)e->valuedouble) {
                rc = h->set_error(h, QB_E_FORMAT,
                                  "%s: config.json: moe_layers holds something that is not a "
                                  "layer index",
                                  where);
                goto out;
            }
            /* Llama4TextDecoderLayer: `layer_idx in moe_layers` */
            if (e->valuedouble < (double)n_layers)
                out->sparse[(int64_t)e->valuedouble] = 1;
        }
    }
    if (a->moe == W4W_MOE_STEP) {
        step = pos_int(cfg, "decoder_sparse_step");
        if (step == -2) {
            rc = h->set_error(h, QB_E_FORMAT,
                              "%s: config.json: decoder_sparse_step is not a positive integer",
                              where);
            goto out;
        }
        if (step < 0)
            step = 1;
        for (l = 0; l < n_layers; l++)
            out->sparse[l] = (l + 1) % step == 0;
        only = cJSON_GetObjectItemCaseSensitive(cfg, "mlp_only_layers");
        if (only && !cJSON_IsNull(only) && !cJSON_IsArray(only)) {
            rc = h->set_error(h, QB_E_FORMAT, "%s: config.json: mlp_only_layers is not an array",
                              where);
            goto out;
        }
        cJSON_ArrayForEach(e, only)
        {
            if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= (double)n_layers ||
                e->valuedouble != (double)(int64_t)e->valuedouble) {
                rc = h->set_error(h, QB_E_FORMAT,
                                  "%s: config.json: mlp_only_layers holds something that is not a "
                                  "layer index below num_hidden_layers = %lld",
                                  where, (long long)n_layers);
                goto out;
            }
            out->sparse[(int64_t)e->valuedouble] = 0;
        }
    }
out:
    if (rc != QB_OK)
        w4w_layout_free(out);
    return rc;
}

void w4w_layout_free(w4w_layout *lo)
{
    if (!lo)
        return;
    qbk_free(lo->sparse);
    qbk_free(lo->linear);
    qbk_free(lo->role_off);
    qbk_free(lo->heads_l);
    lo->heads_l = NULL;
    lo->sparse = NULL;
    lo->linear = NULL;
    lo->role_off = NULL;
}

int w4w_layout_active(const w4w_layout *lo, int64_t l, size_t r)
{
    w4w_layers where = lo->arch->roles[r].layers;
    int when = lo->arch->roles[r].when;
    if ((when > 0 && lo->width[when] < 1) || (when < 0 && lo->width[-when] >= 1))
        return 0;
    if (where == W4W_LAYERS_ALL)
        return 1;
    if (where == W4W_LAYERS_LINEAR || where == W4W_LAYERS_FULL)
        return (where == W4W_LAYERS_LINEAR) == (lo->linear && lo->linear[l]);
    return (where == W4W_LAYERS_SPARSE) == (lo->sparse[l] != 0);
}

void w4w_layout_order(const w4w_layout *lo, int64_t l, w4w_inst *out, size_t *n)
{
    const w4w_arch *a = lo->arch;
    size_t r = 0, k = 0, r1, q;
    int64_t e;
    while (r < a->n_roles) {
        if (!w4w_role_is_expert(&a->roles[r])) {
            if (w4w_layout_active(lo, l, r)) {
                out[k].role = r;
                out[k++].expert = -1;
            }
            r++;
            continue;
        }
        /* a run of expert roles: expert 0's projections, then expert 1's */
        for (r1 = r; r1 < a->n_roles && w4w_role_is_expert(&a->roles[r1]); r1++)
            ;
        for (e = 0; e < lo->n_experts; e++)
            for (q = r; q < r1; q++)
                if (w4w_layout_active(lo, l, q)) {
                    out[k].role = q;
                    out[k++].expert = e;
                }
        r = r1;
    }
    *n = k;
}
