/*
 * llama.cpp → Hugging Face tensor mapping (see gguf_names.h).
 */
#include "gguf_names.h"

#include "ggml_types.h"
#include "qbk_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OP_PLAIN,
    OP_Q,       /* attn_q: permuted with n_head when the arch permutes */
    OP_K,       /* attn_k: permuted with n_head_kv */
    OP_QKV,     /* phi3 attn_qkv = [Q; K; V] rows */
    OP_GATE_UP, /* phi3 ffn_up = [gate; up] rows */
    OP_EXPERTS, /* 3-D stacked experts, ne = {K, N, E} */
    OP_EXPERTS_GATE_UP, /* fused 3-D experts, ne = {K, 2N, E}: per expert gate rows then up rows */
    OP_ROW,     /* HF [1, n] from a 1-D (or {n,1}) GGUF tensor */
    OP_LEAF,    /* hf is the whole leaf name (suffix not appended) */
    OP_K_B,     /* deepseek2 attn_k_b: with attn_v_b, one kv_b_proj */
    OP_V_B,     /* deepseek2 attn_v_b: read through its attn_k_b's tensor */
    OP_OSS_EXPS, /* gpt-oss ffn_{gate,up,down}_exps weight/bias: fused HF experts */
    OP_LIN      /* issue 31: Qwen3-Next / Qwen3.5 linear attention (map_linear) */
};

#define ALL 0x1ffu
#define DS2 GGUF_A_DEEPSEEK2
#define OSS GGUF_A_GPTOSS
#define MOE (GGUF_A_QWEN2MOE | GGUF_A_QWEN3MOE | DS2)
#define GEMMA23 (GGUF_A_GEMMA2 | GGUF_A_GEMMA3)
#define L4 GGUF_A_LLAMA4 /* issue 31 */
#define QN GGUF_A_QWEN3NEXT /* issue 31, read only */
#define GLM GGUF_A_GLM4MOE
#define MM2 GGUF_A_MINIMAXM2
#define G4 GGUF_A_GEMMA4 /* issue 31, read only */

/* Per-block names: gguf-py constants.py MODEL_TENSOR names → HF names from
 * tensor_mapping.py block_mappings_cfg for each architecture. An entry
 * applies when the architecture bit is in `archs`. */
static const struct blk_map {
    const char *gguf;
    const char *hf; /* under "model.layers.N."; %d = expert for OP_EXPERTS; for OP_QKV /
                       OP_GATE_UP the fused HF tensor (the reader gives the parts) */
    int op;
    unsigned archs;
    const char *hf_up; /* OP_EXPERTS_GATE_UP: the up half's name */
} blk_maps[] = {
    {"attn_norm", "input_layernorm", OP_PLAIN, ALL | DS2 | OSS, NULL},
    /* gpt-oss (GptOssModel.modify_tensors; tensor_mapping.py). */
    {"attn_q", "self_attn.q_proj", OP_PLAIN, OSS, NULL},
    {"attn_k", "self_attn.k_proj", OP_PLAIN, OSS, NULL},
    {"attn_v", "self_attn.v_proj", OP_PLAIN, OSS, NULL},
    {"attn_sinks", "self_attn.sinks", OP_LEAF, OSS, NULL},
    {"post_attention_norm", "post_attention_layernorm", OP_PLAIN, OSS, NULL},
    {"ffn_gate_inp", "mlp.router", OP_PLAIN, OSS, NULL},
    {"ffn_gate_exps", "mlp.experts.gate_up_proj", OP_OSS_EXPS, OSS, NULL},
    {"ffn_up_exps", "mlp.experts.gate_up_proj", OP_OSS_EXPS, OSS, NULL},
    {"ffn_down_exps", "mlp.experts.down_proj", OP_OSS_EXPS, OSS, NULL},
    /* deepseek2 MLA (tensor_mapping.py ATTN_Q_A ... ATTN_V_B). */
    {"attn_q", "self_attn.q_proj", OP_PLAIN, DS2, NULL},
    {"attn_q_a", "self_attn.q_a_proj", OP_PLAIN, DS2, NULL},
    {"attn_q_a_norm", "self_attn.q_a_layernorm", OP_PLAIN, DS2, NULL},
    {"attn_q_b", "self_attn.q_b_proj", OP_PLAIN, DS2, NULL},
    {"attn_kv_a_mqa", "self_attn.kv_a_proj_with_mqa", OP_PLAIN, DS2, NULL},
    {"attn_kv_a_norm", "self_attn.kv_a_layernorm", OP_PLAIN, DS2, NULL},
    {"attn_kv_b", "self_attn.kv_b_proj", OP_PLAIN, DS2, NULL},
    {"attn_k_b", "self_attn.kv_b_proj", OP_K_B, DS2, NULL},
    {"attn_v_b", "self_attn.kv_b_proj", OP_V_B, DS2, NULL},
    {"exp_probs_b", "mlp.gate.e_score_correction_bias", OP_LEAF, DS2, NULL},
    {"ffn_gate_shexp", "mlp.shared_experts.gate_proj", OP_PLAIN, DS2, NULL},
    {"ffn_up_shexp", "mlp.shared_experts.up_proj", OP_PLAIN, DS2, NULL},
    {"ffn_down_shexp", "mlp.shared_experts.down_proj", OP_PLAIN, DS2, NULL},
    {"attn_q", "self_attn.q_proj", OP_Q, ALL & ~GGUF_A_PHI3, NULL},
    {"attn_k", "self_attn.k_proj", OP_K, ALL & ~GGUF_A_PHI3, NULL},
    {"attn_v", "self_attn.v_proj", OP_PLAIN, ALL & ~GGUF_A_PHI3, NULL},
    {"attn_qkv", "self_attn.qkv_proj", OP_QKV, GGUF_A_PHI3, NULL},
    {"attn_output", "self_attn.o_proj", OP_PLAIN, ALL | DS2 | OSS, NULL},
    {"attn_q_norm", "self_attn.q_norm", OP_PLAIN, GGUF_A_QWEN3 | GGUF_A_QWEN3MOE | GGUF_A_GEMMA3, NULL},
    {"attn_k_norm", "self_attn.k_norm", OP_PLAIN, GGUF_A_QWEN3 | GGUF_A_QWEN3MOE | GGUF_A_GEMMA3, NULL},
    /* FFN_NORM is post_attention_layernorm except in gemma2/3, where HF's
     * pre_feedforward_layernorm maps to it and post_attention_layernorm
     * maps to ATTN_POST_NORM (tensor_mapping.py). */
    {"ffn_norm", "post_attention_layernorm", OP_PLAIN, (ALL & ~GEMMA23) | DS2, NULL},
    {"ffn_norm", "pre_feedforward_layernorm", OP_PLAIN, GEMMA23, NULL},
    {"post_attention_norm", "post_attention_layernorm", OP_PLAIN, GEMMA23, NULL},
    {"post_ffw_norm", "post_feedforward_layernorm", OP_PLAIN, GEMMA23, NULL},
    {"ffn_gate", "mlp.gate_proj", OP_PLAIN, (ALL & ~GGUF_A_PHI3) | DS2, NULL},
    {"ffn_up", "mlp.up_proj", OP_PLAIN, (ALL & ~GGUF_A_PHI3) | DS2, NULL},
    {"ffn_up", "mlp.gate_up_proj", OP_GATE_UP, GGUF_A_PHI3, NULL},
    {"ffn_down", "mlp.down_proj", OP_PLAIN, ALL | DS2, NULL},
    /* Mixtral (LlamaModel.modify_tensors stacks w1/w2/w3 per layer). */
    {"ffn_gate_inp", "block_sparse_moe.gate", OP_PLAIN, GGUF_A_LLAMA, NULL},
    {"ffn_gate_exps", "block_sparse_moe.experts.%d.w1", OP_EXPERTS, GGUF_A_LLAMA, NULL},
    {"ffn_down_exps", "block_sparse_moe.experts.%d.w2", OP_EXPERTS, GGUF_A_LLAMA, NULL},
    {"ffn_up_exps", "block_sparse_moe.experts.%d.w3", OP_EXPERTS, GGUF_A_LLAMA, NULL},
    /* convert_hf_to_gguf --fuse-gate-up-exps (ModelBase.modify_tensors):
     * cat([gate, up], dim=1), gate rows first within each expert. */
    {"ffn_gate_up_exps", "block_sparse_moe.experts.%d.w1", OP_EXPERTS_GATE_UP, GGUF_A_LLAMA,
     "block_sparse_moe.experts.%d.w3"},
    /* Qwen2/3-MoE (Qwen2MoeModel.modify_tensors). */
    {"ffn_gate_inp", "mlp.gate", OP_PLAIN, MOE, NULL},
    {"ffn_gate_exps", "mlp.experts.%d.gate_proj", OP_EXPERTS, MOE, NULL},
    {"ffn_up_exps", "mlp.experts.%d.up_proj", OP_EXPERTS, MOE, NULL},
    {"ffn_down_exps", "mlp.experts.%d.down_proj", OP_EXPERTS, MOE, NULL},
    {"ffn_gate_up_exps", "mlp.experts.%d.gate_proj", OP_EXPERTS_GATE_UP, MOE, "mlp.experts.%d.up_proj"},
    {"ffn_gate_inp_shexp", "mlp.shared_expert_gate", OP_ROW, GGUF_A_QWEN2MOE, NULL},
    {"ffn_gate_shexp", "mlp.shared_expert.gate_proj", OP_PLAIN, GGUF_A_QWEN2MOE, NULL},
    {"ffn_up_shexp", "mlp.shared_expert.up_proj", OP_PLAIN, GGUF_A_QWEN2MOE, NULL},
    {"ffn_down_shexp", "mlp.shared_expert.down_proj", OP_PLAIN, GGUF_A_QWEN2MOE, NULL},
    /* issue 31: smollm3, llama4, gemma4 */
    /* llama4 (Llama4Model.modify_tensors: gate_up_proj split and transposed
     * into ffn_gate_exps / ffn_up_exps, down_proj transposed; q/k not
     * permuted; tensor_mapping.py's feed_forward.* names). */
    {"attn_norm", "input_layernorm", OP_PLAIN, L4, NULL},
    {"attn_q", "self_attn.q_proj", OP_PLAIN, L4, NULL},
    {"attn_k", "self_attn.k_proj", OP_PLAIN, L4, NULL},
    {"attn_v", "self_attn.v_proj", OP_PLAIN, L4, NULL},
    {"attn_output", "self_attn.o_proj", OP_PLAIN, L4, NULL},
    {"ffn_norm", "post_attention_layernorm", OP_PLAIN, L4, NULL},
    {"ffn_gate", "feed_forward.gate_proj", OP_PLAIN, L4, NULL},
    {"ffn_up", "feed_forward.up_proj", OP_PLAIN, L4, NULL},
    {"ffn_down", "feed_forward.down_proj", OP_PLAIN, L4, NULL},
    {"ffn_gate_inp", "feed_forward.router", OP_PLAIN, L4, NULL},
    {"ffn_gate_exps", "feed_forward.experts.gate_up_proj", OP_OSS_EXPS, L4, NULL},
    {"ffn_up_exps", "feed_forward.experts.gate_up_proj", OP_OSS_EXPS, L4, NULL},
    {"ffn_down_exps", "feed_forward.experts.down_proj", OP_OSS_EXPS, L4, NULL},
    {"ffn_gate_shexp", "feed_forward.shared_expert.gate_proj", OP_PLAIN, L4, NULL},
    {"ffn_up_shexp", "feed_forward.shared_expert.up_proj", OP_PLAIN, L4, NULL},
    {"ffn_down_shexp", "feed_forward.shared_expert.down_proj", OP_PLAIN, L4, NULL},
    /* issue 31, read only: qwen3next / qwen35 / qwen35moe, glm4moe,
     * minimax-m2, deepseek32 (tensor_mapping.py; the converter classes
     * Qwen3NextModel, Qwen3_5TextModel, Qwen3_5MoeTextModel, Glm4MoeModel,
     * MiniMaxM2Model, DeepseekV32Model). Shared by several: */
    {"attn_norm", "input_layernorm", OP_PLAIN, QN | GLM | MM2, NULL},
    {"attn_q", "self_attn.q_proj", OP_PLAIN, QN | GLM | MM2, NULL},
    {"attn_k", "self_attn.k_proj", OP_PLAIN, QN | GLM | MM2, NULL},
    {"attn_v", "self_attn.v_proj", OP_PLAIN, QN | GLM | MM2, NULL},
    {"attn_output", "self_attn.o_proj", OP_PLAIN, QN | GLM | MM2, NULL},
    {"attn_q_norm", "self_attn.q_norm", OP_PLAIN, QN | GLM | MM2, NULL},
    {"attn_k_norm", "self_attn.k_norm", OP_PLAIN, QN | GLM | MM2, NULL},
    {"post_attention_norm", "post_attention_layernorm", OP_PLAIN, QN | GLM, NULL},
    {"ffn_norm", "post_attention_layernorm", OP_PLAIN, MM2, NULL},
    {"ffn_gate", "mlp.gate_proj", OP_PLAIN, QN | GLM, NULL},
    {"ffn_up", "mlp.up_proj", OP_PLAIN, QN | GLM, NULL},
    {"ffn_down", "mlp.down_proj", OP_PLAIN, QN | GLM, NULL},
    {"ffn_gate_inp", "mlp.gate", OP_PLAIN, QN | GLM, NULL},
    {"ffn_gate_exps", "mlp.experts.%d.gate_proj", OP_EXPERTS, QN | GLM, NULL},
    {"ffn_up_exps", "mlp.experts.%d.up_proj", OP_EXPERTS, QN | GLM, NULL},
    {"ffn_down_exps", "mlp.experts.%d.down_proj", OP_EXPERTS, QN | GLM, NULL},
    {"ffn_gate_up_exps", "mlp.experts.%d.gate_proj", OP_EXPERTS_GATE_UP, QN | GLM, "mlp.experts.%d.up_proj"},
    /* Qwen3-Next / Qwen3.5 MoE: qwen2moe's shared expert and its gate. */
    {"ffn_gate_inp_shexp", "mlp.shared_expert_gate", OP_ROW, QN, NULL},
    {"ffn_gate_shexp", "mlp.shared_expert.gate_proj", OP_PLAIN, QN, NULL},
    {"ffn_up_shexp", "mlp.shared_expert.up_proj", OP_PLAIN, QN, NULL},
    {"ffn_down_shexp", "mlp.shared_expert.down_proj", OP_PLAIN, QN, NULL},
    /* Qwen3-Next / Qwen3.5 gated delta net (map_linear). */
    {"attn_qkv", "linear_attn.in_proj_qkv", OP_LIN, QN, NULL},
    {"attn_gate", "linear_attn.in_proj_z", OP_LIN, QN, NULL},
    {"ssm_ba", "linear_attn.in_proj_ba", OP_LIN, QN, NULL},
    {"ssm_beta", "linear_attn.in_proj_b", OP_LIN, QN, NULL},
    {"ssm_alpha", "linear_attn.in_proj_a", OP_LIN, QN, NULL},
    {"ssm_a", "linear_attn.A_log", OP_LIN, QN, NULL},
    {"ssm_dt", "linear_attn.dt_bias", OP_LIN, QN, NULL},
    {"ssm_conv1d", "linear_attn.conv1d", OP_LIN, QN, NULL},
    {"ssm_norm", "linear_attn.norm", OP_LIN, QN, NULL},
    {"ssm_out", "linear_attn.out_proj", OP_LIN, QN, NULL},
    /* GLM-4.5 (DeepSeek-V3's router and shared experts under mlp.). */
    {"exp_probs_b", "mlp.gate.e_score_correction_bias", OP_LEAF, GLM, NULL},
    {"ffn_gate_shexp", "mlp.shared_experts.gate_proj", OP_PLAIN, GLM, NULL},
    {"ffn_up_shexp", "mlp.shared_experts.up_proj", OP_PLAIN, GLM, NULL},
    {"ffn_down_shexp", "mlp.shared_experts.down_proj", OP_PLAIN, GLM, NULL},
    /* MiniMax-M2 (Mixtral's block_sparse_moe names, a router bias). */
    {"ffn_gate_inp", "block_sparse_moe.gate", OP_PLAIN, MM2, NULL},
    {"exp_probs_b", "block_sparse_moe.e_score_correction_bias", OP_LEAF, MM2, NULL},
    {"ffn_gate_exps", "block_sparse_moe.experts.%d.w1", OP_EXPERTS, MM2, NULL},
    {"ffn_down_exps", "block_sparse_moe.experts.%d.w2", OP_EXPERTS, MM2, NULL},
    {"ffn_up_exps", "block_sparse_moe.experts.%d.w3", OP_EXPERTS, MM2, NULL},
    {"ffn_gate_up_exps", "block_sparse_moe.experts.%d.w1", OP_EXPERTS_GATE_UP, MM2,
     "block_sparse_moe.experts.%d.w3"},
    /* DeepSeek-V3.2's indexer (deepseek32 reads as deepseek2 plus these;
     * no deepseek2 file has them). */
    {"indexer.attn_q_b", "self_attn.indexer.wq_b", OP_PLAIN, DS2, NULL},
    {"indexer.attn_k", "self_attn.indexer.wk", OP_PLAIN, DS2, NULL},
    {"indexer.k_norm", "self_attn.indexer.k_norm", OP_PLAIN, DS2, NULL},
    {"indexer.proj", "self_attn.indexer.weights_proj", OP_PLAIN, DS2, NULL},
    /* issue 31, read only: gemma4 (Gemma4Model, tensor_mapping.py: Gemma 3's
     * four norms, Gemma 3n's per-layer input gate, projection and norm,
     * layer_scalar as layer_output_scale.weight of one element). */
    {"attn_norm", "input_layernorm", OP_PLAIN, G4, NULL},
    {"attn_q", "self_attn.q_proj", OP_PLAIN, G4, NULL},
    {"attn_k", "self_attn.k_proj", OP_PLAIN, G4, NULL},
    {"attn_v", "self_attn.v_proj", OP_PLAIN, G4, NULL},
    {"attn_output", "self_attn.o_proj", OP_PLAIN, G4, NULL},
    {"attn_q_norm", "self_attn.q_norm", OP_PLAIN, G4, NULL},
    {"attn_k_norm", "self_attn.k_norm", OP_PLAIN, G4, NULL},
    {"ffn_norm", "pre_feedforward_layernorm", OP_PLAIN, G4, NULL},
    {"post_attention_norm", "post_attention_layernorm", OP_PLAIN, G4, NULL},
    {"post_ffw_norm", "post_feedforward_layernorm", OP_PLAIN, G4, NULL},
    {"ffn_gate", "mlp.gate_proj", OP_PLAIN, G4, NULL},
    {"ffn_up", "mlp.up_proj", OP_PLAIN, G4, NULL},
    {"ffn_down", "mlp.down_proj", OP_PLAIN, G4, NULL},
    {"inp_gate", "per_layer_input_gate", OP_PLAIN, G4, NULL},
    {"proj", "per_layer_projection", OP_PLAIN, G4, NULL},
    {"post_norm", "post_per_layer_input_norm", OP_PLAIN, G4, NULL},
    {"layer_output_scale", "layer_scalar", OP_LEAF, G4, NULL},
};

/* issue 31: gemma4's model-level per-layer input tensors (Gemma 3n's
 * names in tensor_mapping.py); one_d marks the norm. */
static const struct {
    const char *gguf, *hf;
    int one_d;
} g4_top_maps[] = {
    {"per_layer_token_embd.weight", "model.embed_tokens_per_layer.weight", 0},
    {"per_layer_model_proj.weight", "model.per_layer_model_projection.weight", 0},
    {"per_layer_proj_norm.weight", "model.per_layer_projection_norm.weight", 1},
};

static const struct {
    const char *gguf, *hf;
} top_maps[] = {
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
};

int64_t gguf_unpermute_row(int64_t r, int64_t rows, uint32_t heads)
{
    /* HF row h*D + j*(D/2) + i comes from GGUF row h*D + 2i + j. */
    int64_t d = rows / heads, half = d / 2;
    int64_t hh = r / d, rem = r % d;
    int64_t j = rem / half, i = rem % half;
    return hh * d + 2 * i + j;
}

int64_t gguf_permute_row(int64_t g, int64_t rows, uint32_t heads)
{
    /* GGUF row h*D + 2i + j holds HF row h*D + j*(D/2) + i. */
    int64_t d = rows / heads, half = d / 2;
    int64_t hh = g / d, rem = g % d;
    return hh * d + (rem % 2) * half + rem / 2;
}

int64_t gguf_names_vtile(int64_t i, int64_t nk, int64_t r, int64_t hd)
{
    /* _reorder_v_heads: view [nk, r, hd], swap the first two, flatten. */
    int64_t d = i % hd, h = i / hd, k = h / r, j = h % r;
    return (j * nk + k) * hd + d;
}

int64_t gguf_names_stored_row(const gguf_ctensor *c, int64_t r, const gguf_tinfo **t)
{
    *t = c->src;
    if (c->qkvz_z) {
        /* Qwen3NextModel.modify_tensors: in_proj_qkvz rows per key head h
         * [q (dk), k (dk), v (vg), z (vg)] went to attn_qkv as all q, all k,
         * all v, and z to attn_gate. */
        const int64_t dk = c->qkvz_dk, vg = c->qkvz_vg, nk = c->n_rows / (2 * dk + 2 * vg);
        const int64_t h = r / (2 * dk + 2 * vg), o = r % (2 * dk + 2 * vg);
        if (o < dk)
            return c->row0 + h * dk + o;
        if (o < 2 * dk)
            return c->row0 + nk * dk + h * dk + o - dk;
        if (o < 2 * dk + vg)
            return c->row0 + 2 * nk * dk + h * vg + o - 2 * dk;
        *t = c->qkvz_z;
        return h * vg + o - 2 * dk - vg;
    }
    if (c->vt_rhd && r >= c->vt_row0)
        return c->row0 + c->vt_row0 + gguf_names_vtile(r - c->vt_row0, c->vt_nk, c->vt_r, c->vt_rhd);
    return c->row0 + (c->perm_heads ? gguf_unpermute_row(r, c->n_rows, c->perm_heads) : r);
}

/* "%d" patterns of OP_EXPERTS entries: *e the expert when `s` is `pat`
 * with a number in place of %d. */
static int match_expert(const char *pat, const char *s, int *e)
{
    const char *pc = strstr(pat, "%d");
    size_t pre;
    char *end;
    long v;
    if (!pc)
        return 0;
    pre = (size_t)(pc - pat);
    if (strncmp(pat, s, pre) != 0 || s[pre] < '0' || s[pre] > '9')
        return 0;
    v = strtol(s + pre, &end, 10);
    if (strcmp(end, pc + 2) != 0 || v < 0 || v > 1000000)
        return 0;
    *e = (int)v;
    return 1;
}

/* gpt-oss names with no ".weight" suffix in transformers (GptOssModel.
 * filter_tensors / modify_tensors): sinks get one, the fused experts and
 * their biases split into gate and up (map_oss_experts reads them back). */
static int oss_to_gguf(const char *rest, int layer, gguf_wname *out)
{
    static const struct {
        const char *hf, *gguf, *gguf2;
        int kind, index;
    } m[] = {
        {"self_attn.sinks", "attn_sinks.weight", NULL, GGUF_W_PLAIN, 0},
        {"mlp.experts.gate_up_proj", "ffn_gate_exps.weight", "ffn_up_exps.weight", GGUF_W_OSS_EXPS, 2},
        {"mlp.experts.down_proj", "ffn_down_exps.weight", NULL, GGUF_W_OSS_EXPS, 1},
        {"mlp.experts.gate_up_proj_bias", "ffn_gate_exps.bias", "ffn_up_exps.bias", GGUF_W_OSS_BIAS, 2},
        {"mlp.experts.down_proj_bias", "ffn_down_exps.bias", NULL, GGUF_W_PLAIN, 0},
    };
    size_t i;
    for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
        if (strcmp(rest, m[i].hf) == 0) {
            snprintf(out->name, sizeof(out->name), "blk.%d.%s", layer, m[i].gguf);
            if (m[i].gguf2)
                snprintf(out->name2, sizeof(out->name2), "blk.%d.%s", layer, m[i].gguf2);
            out->kind = m[i].kind;
            out->index = m[i].index;
            return 1;
        }
    return 0;
}

qb_status gguf_names_to_gguf(const gguf_arch *arch, const char *hf, gguf_wname *out)
{
    size_t i, nl = strlen(hf);
    int layer, used = 0;
    const char *rest, *dot;
    char base[200];

    memset(out, 0, sizeof(*out));
    out->layer = -1;
    out->plus_one = arch->norm_plus_one && nl >= 11 && strcmp(hf + nl - 11, "norm.weight") == 0;
    for (i = 0; i < sizeof(top_maps) / sizeof(top_maps[0]); i++)
        if (strcmp(hf, top_maps[i].hf) == 0) {
            snprintf(out->name, sizeof(out->name), "%s", top_maps[i].gguf);
            return QB_OK;
        }
    if (sscanf(hf, "model.layers.%d.%n", &layer, &used) != 1 || used == 0 || layer < 0)
        return QB_E_NOT_FOUND;
    out->layer = layer;
    rest = hf + used;
    if ((arch->bit & GGUF_A_GPTOSS) && oss_to_gguf(rest, layer, out))
        return QB_OK;
    dot = strrchr(rest, '.');
    for (i = 0; i < sizeof(blk_maps) / sizeof(blk_maps[0]); i++) {
        const struct blk_map *mp = &blk_maps[i];
        const char *suffix = NULL;
        int e = 0;
        if (!(mp->archs & arch->bit))
            continue;
        if (mp->op == OP_LEAF) {
            if (strcmp(rest, mp->hf) != 0)
                continue;
            if (!(arch->bit & DS2))
                return QB_E_UNSUPPORTED; /* gpt-oss leaves: not written yet */
            /* DeepseekV2Model renames e_score_correction_bias to
             * e_score_correction.bias: GGUF blk.N.exp_probs_b.bias */
            snprintf(out->name, sizeof(out->name), "blk.%d.%s.bias", layer, mp->gguf);
            return QB_OK;
        }
        if (!dot || (strcmp(dot, ".weight") != 0 && strcmp(dot, ".bias") != 0) ||
            (size_t)(dot - rest) >= sizeof(base))
            continue;
        memcpy(base, rest, (size_t)(dot - rest));
        base[dot - rest] = '\0';
        suffix = dot + 1;
        switch (mp->op) {
        case OP_PLAIN:
        case OP_Q:
        case OP_K:
        case OP_ROW:
            if (strcmp(base, mp->hf) != 0)
                continue;
            if (strcmp(mp->gguf, "attn_kv_b") == 0)
                continue; /* read from older files; written split (OP_K_B) as llama.cpp now does */
            out->perm = !arch->permute_qk ? 0 : mp->op == OP_Q ? 1 : mp->op == OP_K ? 2 : 0;
            break;
        case OP_EXPERTS:
            if (!match_expert(mp->hf, base, &e))
                continue;
            out->kind = GGUF_W_EXPERT;
            out->index = e;
            break;
        case OP_QKV:
        case OP_GATE_UP: {
            static const char *const qkv[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"};
            static const char *const gu[] = {"mlp.gate_proj", "mlp.up_proj"};
            const char *const *parts = mp->op == OP_QKV ? qkv : gu;
            int np = mp->op == OP_QKV ? 3 : 2, k;
            if (strcmp(base, mp->hf) == 0)
                break; /* Hugging Face's own fused tensor: the whole GGUF tensor */
            for (k = 0; k < np && strcmp(base, parts[k]) != 0; k++)
                ;
            if (k == np)
                continue;
            out->kind = GGUF_W_FUSED;
            out->index = k;
            break;
        }
        case OP_EXPERTS_GATE_UP:
            /* the reader accepts --fuse-gate-up-exps files; the writer stores
             * gate and up apart, through their OP_EXPERTS entries */
            continue;
        case OP_K_B:
            /* kv_b_proj -> attn_k_b + attn_v_b (DeepseekV2Model.modify_tensors) */
            if (strcmp(base, mp->hf) != 0)
                continue;
            if (strcmp(suffix, "weight") != 0)
                return QB_E_UNSUPPORTED;
            out->kind = GGUF_W_KV_B;
            break;
        default: /* OP_V_B, OP_OSS_EXPS */
            if (strcmp(base, mp->hf) != 0 && strcmp(rest, mp->hf) != 0)
                continue;
            return QB_E_UNSUPPORTED;
        }
        snprintf(out->name, sizeof(out->name), "blk.%d.%s.%s", layer, mp->gguf, suffix);
        return QB_OK;
    }
    return QB_E_NOT_FOUND;
}

void gguf_names_free(gguf_ctensor *t, size_t n)
{
    size_t i;
    if (!t)
        return;
    for (i = 0; i < n; i++) {
        qbk_free(t[i].name);
        qbk_free(t[i].block_key);
    }
    qbk_free(t);
}

typedef struct builder {
    const qb_host *h;
    const gguf_model *m;
    const gguf_hparams *hp;
    gguf_ctensor *t;
    size_t n, cap;
} builder;

/* Appends one canonical tensor: rows [row0, row0 + n_rows) of src. */
static qb_status add(builder *b, const gguf_tinfo *src, const char *name, int64_t row0, int64_t n_rows,
                     int one_d, uint32_t perm_heads)
{
    gguf_ctensor *c;
    size_t nl = strlen(name);
    if (b->n == b->cap) {
        size_t nc = b->cap ? 2 * b->cap : 64;
        gguf_ctensor *nt = qbk_realloc(b->t, nc * sizeof(*nt));
        if (!nt)
            return b->h->set_error(b->h, QB_E_NOMEM, "%s: out of memory", src->file->path);
        b->t = nt;
        b->cap = nc;
    }
    c = &b->t[b->n];
    memset(c, 0, sizeof(*c));
    if (!(c->name = qbk_malloc(nl + 1)))
        return b->h->set_error(b->h, QB_E_NOMEM, "%s: out of memory", src->file->path);
    memcpy(c->name, name, nl + 1);
    b->n++;
    c->src = src;
    c->row0 = row0;
    c->n_rows = n_rows;
    c->cols = src->ne[0];
    c->perm_heads = perm_heads;
    if (one_d) {
        c->n_dims = 1;
        c->dims[0] = src->ne[0];
    } else {
        c->n_dims = 2;
        c->dims[0] = n_rows;
        c->dims[1] = src->ne[0];
    }
    /* GemmaModel / Gemma2Model modify_tensors, Gemma3Model.norm_shift: every
     * HF tensor whose name ends in "norm.weight" was stored as w + 1. */
    c->minus_one = b->hp->arch->norm_plus_one && nl >= 11 && strcmp(name + nl - 11, "norm.weight") == 0;
    /* Qwen3NextModel.modify_tensors leaves linear_attn.norm.weight alone
     * (Qwen3NextRMSNormGated multiplies by the weight itself). */
    if (b->hp->arch->bit == GGUF_A_QWEN3NEXT && nl >= 23 && strcmp(name + nl - 23, "linear_attn.norm.weight") == 0)
        c->minus_one = 0;
    snprintf(c->encoding, sizeof(c->encoding), "gguf %s", gguf_ggml_type_name(src->type));
    c->has_grid = (src->type == GGUF_GGML_TYPE_Q4_0 || src->type == GGUF_GGML_TYPE_Q8_0) &&
                  !c->minus_one && !(one_d && perm_heads);
    return QB_OK;
}

static qb_status bad_shape(builder *b, const gguf_tinfo *t, const char *why)
{
    return b->h->set_error(b->h, QB_E_FORMAT, "%s: tensor '%s' [ne %lld, %lld, %lld]: %s", t->file->path, t->name,
                           (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], why);
}

/* deepseek2's split kv_b (DeepseekV2Model.modify_tensors since llama.cpp's
 * MLA change): kv_b_proj [H*(nope+v), rank] viewed as [H, nope+v, rank],
 * k_b = its first nope rows per head transposed to [H, rank, nope], v_b =
 * the other v rows [H, v, rank]. Both become one kv_b_proj, registered at
 * attn_k_b; attn_v_b only has to have its partner. When a file also keeps
 * attn_kv_b, that one is kv_b_proj and the derived copies are skipped. */
static qb_status map_kv_b(builder *b, const gguf_tinfo *t, int layer, int is_k, int is_bias)
{
    const gguf_mla *a = &b->hp->mla;
    const gguf_tinfo *k, *v;
    char name[256];
    qb_status st;
    if (is_bias || t->n_dims != 3)
        return bad_shape(b, t, "expected a 3-D per-head weight");
    snprintf(name, sizeof(name), "blk.%d.attn_kv_b.weight", layer);
    if (gguf_model_find(b->m, name))
        return QB_OK;
    snprintf(name, sizeof(name), "blk.%d.attn_%s_b.weight", layer, is_k ? "v" : "k");
    if (!gguf_model_find(b->m, name))
        return b->h->set_error(b->h, QB_E_FORMAT, "%s: tensor '%s' without its partner '%s' (kv_b_proj needs both)",
                               t->file->path, t->name, name);
    if (!is_k)
        return QB_OK;
    k = t;
    v = gguf_model_find(b->m, name);
    if (k->ne[0] != a->qk_nope || k->ne[1] != a->kv_lora || k->ne[2] != b->hp->n_head)
        return bad_shape(b, k, "expected ne {qk_nope, kv_lora_rank, head_count}");
    if (v->n_dims != 3 || v->ne[0] != a->kv_lora || v->ne[1] != a->v_head || v->ne[2] != b->hp->n_head)
        return bad_shape(b, v, "expected ne {kv_lora_rank, value_length_mla, head_count}");
    snprintf(name, sizeof(name), "model.layers.%d.self_attn.kv_b_proj.weight", layer);
    if ((st = add(b, k, name, 0, b->hp->n_head * (a->qk_nope + a->v_head), 0, 0)))
        return st;
    {
        gguf_ctensor *c = &b->t[b->n - 1];
        c->cols = a->kv_lora;
        c->dims[1] = a->kv_lora;
        c->kv_v = v;
        c->kv_nope = a->qk_nope;
        c->kv_vdim = a->v_head;
        c->has_grid = 0;
        snprintf(c->encoding, sizeof(c->encoding), "gguf %s+%s", gguf_ggml_type_name(k->type),
                 gguf_ggml_type_name(v->type));
    }
    return QB_OK;
}

/* gpt-oss experts. transformers' GptOssExperts holds gate_up_proj
 * [E, H, 2I] (gate at even output columns, up at odd), gate_up_proj_bias
 * [E, 2I], down_proj [E, I, H], down_proj_bias [E, H]: [E, in, out].
 * GptOssModel (float path; its MXFP4 repack gives the same layout)
 * transposes each expert to [out, in] and splits the interleave:
 * ffn_gate_exps / ffn_up_exps ne {H, I, E}, their biases ne {I, E},
 * ffn_down_exps ne {I, H, E}, its bias ne {H, E}. The gate tensor
 * registers the fused gate_up; the up tensor only needs its partner. */
static qb_status map_oss_experts(builder *b, const gguf_tinfo *t, int layer, const char *base, int is_bias)
{
    const gguf_hparams *hp = b->hp;
    const int64_t E = hp->n_expert, H = hp->n_embd;
    const int is_down = strcmp(base, "ffn_down_exps") == 0, is_up = strcmp(base, "ffn_up_exps") == 0;
    /* llama4 (issue 31): Llama4TextExperts under feed_forward, gate and up
     * one after the other, no biases */
    const int l4 = hp->arch->bit == GGUF_A_LLAMA4;
    const gguf_tinfo *up = NULL;
    gguf_ctensor *c;
    char name[256];
    qb_status st;
    int64_t N;
    if (is_bias ? (t->n_dims != 2 || t->ne[1] != E) : (t->n_dims != 3 || t->ne[2] != E))
        return bad_shape(b, t, is_bias ? "expected a [E, N] expert bias" : "expected a 3-D expert weight over expert_count");
    N = is_bias ? t->ne[0] : t->ne[1];
    if (!is_bias && t->ne[is_down ? 1 : 0] != H)
        return bad_shape(b, t, "expert width differs from embedding_length");
    if (is_bias && is_down && N != H)
        return bad_shape(b, t, "down bias width differs from embedding_length");
    if (!is_down) {
        snprintf(name, sizeof(name), "blk.%d.%s.%s", layer, is_up ? "ffn_gate_exps" : "ffn_up_exps",
                 is_bias ? "bias" : "weight");
        if (!(up = gguf_model_find(b->m, name)))
            return b->h->set_error(b->h, QB_E_FORMAT, "%s: tensor '%s' without its partner '%s' (gate_up_proj needs both)",
                                   t->file->path, t->name, name);
        if (is_up)
            return QB_OK;
        if (up->n_dims != t->n_dims || up->ne[0] != t->ne[0] || up->ne[1] != t->ne[1] || up->ne[2] != t->ne[2])
            return bad_shape(b, up, "gate and up expert shapes differ");
    }
    if (l4 && is_bias)
        return bad_shape(b, t, "llama4 experts have no biases");
    snprintf(name, sizeof(name), "model.layers.%d.%s.experts.%s%s", layer, l4 ? "feed_forward" : "mlp",
             is_down ? "down_proj" : "gate_up_proj", is_bias ? "_bias" : "");
    if (is_bias && is_down)
        return add(b, t, name, 0, E, 0, 0); /* [E, H] rows as stored */
    if ((st = add(b, t, name, 0, is_bias ? E : E * t->ne[0], 0, 0)))
        return st;
    c = &b->t[b->n - 1];
    c->oss_up = up;
    c->oss_n = N;
    c->oss_concat = l4;
    c->has_grid = 0;
    if (is_bias) {
        c->oss = GGUF_OSS_ROWS;
        c->cols = c->dims[1] = 2 * N;
    } else {
        c->oss = GGUF_OSS_COLUMNS;
        c->n_dims = 3;
        c->dims[0] = E;
        c->dims[1] = t->ne[0];
        c->dims[2] = c->cols = up ? 2 * N : N;
    }
    return QB_OK;
}

/* The scale granularity each 2-D canonical tensor keeps from its ggml type
 * (gguf_ggml_type_info.scale_cols: one scale per that many consecutive
 * elements of a stored row), declared as "quantbridge.scale_block:NAME"
 * (docs/plugin-design.md, "Declarations of the source"). Only where the HF
 * columns are the stored row's elements in order: a row-permuted tensor
 * keeps its columns; kv_b_proj (transposed blocks) and the gpt-oss experts
 * (re-fused, transposed) declare nothing. */
static qb_status declare_blocks(builder *b)
{
    static const char pre[] = "quantbridge.scale_block:";
    size_t i;
    for (i = 0; i < b->n; i++) {
        gguf_ctensor *c = &b->t[i];
        const gguf_ggml_type_info *ty = gguf_ggml_type_get(c->src->type);
        size_t nl;
        if (c->n_dims != 2 || c->kv_v || c->oss || c->vt_chd || (c->qkvz_z && c->qkvz_z->type != c->src->type) ||
            !ty || ty->scale_cols == 0 ||
            c->cols % ty->scale_cols != 0)
            continue;
        nl = strlen(c->name);
        if (!(c->block_key = qbk_malloc(sizeof pre + nl)))
            return b->h->set_error(b->h, QB_E_NOMEM, "%s: out of memory", c->src->file->path);
        memcpy(c->block_key, pre, sizeof pre - 1);
        memcpy(c->block_key + sizeof pre - 1, c->name, nl + 1);
        c->block_cols = ty->scale_cols;
    }
    return QB_OK;
}

/* issue 31: the gated delta net of Qwen3-Next (Qwen3NextModel) and Qwen3.5
 * (Qwen3_5TextModel / Qwen3_5MoeTextModel, which first move value heads to
 * tiled order: _LinearAttentionVReorderBase.modify_tensors, whenever
 * linear_num_key_heads != linear_num_value_heads). What the converter did,
 * undone per tensor (docs/formats/gguf.md, "Qwen3-Next and Qwen3.5"):
 * A_log stored as -exp(A_log) (ssm_a, no suffix), dt_bias as ssm_dt.bias,
 * conv1d [C, 1, K] squeezed to ne {K, C}; Qwen3-Next's in_proj_qkvz split
 * into attn_qkv + attn_gate. */
static qb_status map_linear(builder *b, const gguf_tinfo *t, int layer, const char *base, const char *hf,
                            const char *suffix)
{
    const gguf_hparams *hp = b->hp;
    const int next = strcmp(hp->model_type, "qwen3_next") == 0;
    const int64_t nk = hp->lin_nk, r = hp->lin_nv / hp->lin_nk, dk = hp->lin_dk, dv = hp->lin_dv;
    const int64_t E = hp->n_embd, qk = 2 * nk * dk, vdim = hp->lin_nv * dv;
    const int one_d = t->n_dims == 1;
    gguf_ctensor *c;
    char name[256];
    qb_status st;

    if (strcmp(base, "ssm_a") == 0 || (strcmp(base, "ssm_dt") == 0 && strcmp(suffix, "bias") == 0)) {
        if (!one_d || t->ne[0] != hp->lin_nv)
            return bad_shape(b, t, "expected a vector of ssm.time_step_rank elements");
        snprintf(name, sizeof(name), "model.layers.%d.%s", layer, hf);
        if ((st = add(b, t, name, 0, 1, 1, 0)))
            return st;
        c = &b->t[b->n - 1];
        c->neg_log = base[4] == 'a';
        if (!next) {
            c->vt_nk = nk;
            c->vt_r = r;
            c->vt_chd = 1;
        }
        c->has_grid = 0;
        return QB_OK;
    }
    if (strcmp(suffix, "weight") != 0)
        return b->h->set_error(b->h, QB_E_UNSUPPORTED, "%s: tensor '%s' has no Hugging Face mapping for architecture '%s'",
                               t->file->path, t->name, hp->arch->gguf_name);
    if (strcmp(base, "ssm_norm") == 0) {
        if (!one_d || t->ne[0] != dv)
            return bad_shape(b, t, "expected a vector of the value head width");
        snprintf(name, sizeof(name), "model.layers.%d.%s.weight", layer, hf);
        return add(b, t, name, 0, 1, 1, 0);
    }
    if (one_d)
        return bad_shape(b, t, "expected a matrix");
    if (strcmp(base, "ssm_conv1d") == 0) {
        if (t->ne[1] != qk + vdim || t->ne[0] != hp->lin_conv)
            return bad_shape(b, t, "expected ne {ssm.conv_kernel, 2 x key dims + value dims}");
        snprintf(name, sizeof(name), "model.layers.%d.%s.weight", layer, hf);
        if ((st = add(b, t, name, 0, t->ne[1], 0, 0)))
            return st;
        c = &b->t[b->n - 1];
        c->n_dims = 3; /* HF Conv1d weight [C, 1, K] */
        c->dims[0] = t->ne[1];
        c->dims[1] = 1;
        c->dims[2] = t->ne[0];
        if (!next) {
            c->vt_nk = nk, c->vt_r = r, c->vt_row0 = qk, c->vt_rhd = dv;
        }
        return QB_OK;
    }
    if (strcmp(base, "attn_gate") == 0 && next) {
        /* read through attn_qkv's in_proj_qkvz; only the partner is checked */
        snprintf(name, sizeof(name), "blk.%d.attn_qkv.weight", layer);
        if (!gguf_model_find(b->m, name))
            return b->h->set_error(b->h, QB_E_FORMAT, "%s: tensor '%s' without its partner '%s' (in_proj_qkvz needs both)",
                                   t->file->path, t->name, name);
        return QB_OK;
    }
    if (strcmp(base, "attn_qkv") == 0 && next) {
        const gguf_tinfo *z;
        snprintf(name, sizeof(name), "blk.%d.attn_gate.weight", layer);
        if (!(z = gguf_model_find(b->m, name)))
            return b->h->set_error(b->h, QB_E_FORMAT, "%s: tensor '%s' without its partner '%s' (in_proj_qkvz needs both)",
                                   t->file->path, t->name, name);
        if (t->ne[1] != qk + vdim || t->ne[0] != E)
            return bad_shape(b, t, "expected ne {embedding_length, 2 x key dims + value dims}");
        if (z->n_dims != 2 || z->ne[1] != vdim || z->ne[0] != E)
            return bad_shape(b, z, "expected ne {embedding_length, ssm.inner_size}");
        snprintf(name, sizeof(name), "model.layers.%d.linear_attn.in_proj_qkvz.weight", layer);
        if ((st = add(b, t, name, 0, qk + 2 * vdim, 0, 0)))
            return st;
        c = &b->t[b->n - 1];
        c->qkvz_z = z;
        c->qkvz_dk = dk;
        c->qkvz_vg = r * dv;
        c->has_grid = c->has_grid && z->type == t->type;
        snprintf(c->encoding, sizeof(c->encoding), "gguf %s+%s", gguf_ggml_type_name(t->type),
                 gguf_ggml_type_name(z->type));
        return QB_OK;
    }
    if (strcmp(base, "ssm_ba") == 0 && !next)
        return bad_shape(b, t, "ssm_ba is Qwen3-Next's; a qwen35 file has ssm_beta and ssm_alpha");
    if ((strcmp(base, "ssm_beta") == 0 || strcmp(base, "ssm_alpha") == 0) && next)
        return bad_shape(b, t, "ssm_beta/ssm_alpha are Qwen3.5's; a qwen3next file has ssm_ba");
    {
        /* rows and width of each stored matrix, and the tiling undone */
        int64_t rows = 0, cols = E, row0 = 0, rhd = 0, chd = 0;
        if (strcmp(base, "attn_qkv") == 0)
            rows = qk + vdim, row0 = qk, rhd = dv;
        else if (strcmp(base, "attn_gate") == 0)
            rows = vdim, rhd = dv;
        else if (strcmp(base, "ssm_ba") == 0)
            rows = 2 * hp->lin_nv;
        else if (strcmp(base, "ssm_beta") == 0 || strcmp(base, "ssm_alpha") == 0)
            rows = hp->lin_nv, rhd = 1;
        else /* ssm_out */
            rows = E, cols = vdim, chd = next ? 0 : dv;
        if (t->ne[1] != rows || t->ne[0] != cols)
            return bad_shape(b, t, "shape does not fit the ssm.* sizes");
        snprintf(name, sizeof(name), "model.layers.%d.%s.weight", layer, hf);
        if ((st = add(b, t, name, 0, rows, 0, 0)))
            return st;
        c = &b->t[b->n - 1];
        if (!next && (rhd || chd)) {
            c->vt_nk = nk, c->vt_r = r, c->vt_row0 = row0, c->vt_rhd = rhd, c->vt_chd = chd;
            if (chd)
                c->has_grid = 0;
        }
        return QB_OK;
    }
}

static qb_status map_block(builder *b, const gguf_tinfo *t, int layer, const char *base, const char *suffix)
{
    const gguf_hparams *hp = b->hp;
    const struct blk_map *mp = NULL;
    char name[256], part[160];
    size_t i;
    int is_bias = strcmp(suffix, "bias") == 0;
    int one_d = t->n_dims == 1;
    qb_status st;

    {
        /* Early Mixtral GGUFs (llama.cpp before the 3-D expert tensors,
         * gguf-py MODEL_TENSOR.FFN_*_EXP "blk.{bid}.ffn_gate.{xid}") store
         * one 2-D tensor per expert. */
        static const char *const legacy[3][2] = {{"ffn_gate.%d%n", "w1"}, {"ffn_down.%d%n", "w2"}, {"ffn_up.%d%n", "w3"}};
        int e, used = 0;
        for (i = 0; i < 3 && (hp->arch->bit & GGUF_A_LLAMA) && hp->n_expert > 0; i++)
            if (sscanf(base, legacy[i][0], &e, &used) == 1 && base[used] == '\0' && e >= 0 && e < hp->n_expert) {
                if (t->n_dims != 2 || is_bias)
                    return bad_shape(b, t, "expected a 2-D per-expert weight");
                snprintf(name, sizeof(name), "model.layers.%d.block_sparse_moe.experts.%d.%s.weight", layer, e,
                         legacy[i][1]);
                return add(b, t, name, 0, t->ne[1], 0, 0);
            }
    }
    for (i = 0; i < sizeof(blk_maps) / sizeof(blk_maps[0]); i++)
        if ((blk_maps[i].archs & hp->arch->bit) && strcmp(blk_maps[i].gguf, base) == 0) {
            mp = &blk_maps[i];
            break;
        }
    if (!mp)
        return b->h->set_error(b->h, QB_E_UNSUPPORTED, "%s: tensor '%s' has no Hugging Face mapping for architecture '%s'",
                               t->file->path, t->name, hp->arch->gguf_name);
    if (t->n_dims > 2 && mp->op != OP_EXPERTS && mp->op != OP_EXPERTS_GATE_UP && mp->op != OP_K_B &&
        mp->op != OP_V_B && mp->op != OP_OSS_EXPS)
        return bad_shape(b, t, "unexpected 3-D tensor");
    switch (mp->op) {
    case OP_LEAF:
        if (!one_d)
            return bad_shape(b, t, "expected a vector");
        snprintf(name, sizeof(name), "model.layers.%d.%s", layer, mp->hf);
        return add(b, t, name, 0, 1, 1, 0);
    case OP_K_B:
    case OP_V_B:
        return map_kv_b(b, t, layer, mp->op == OP_K_B, is_bias);
    case OP_OSS_EXPS:
        return map_oss_experts(b, t, layer, base, is_bias);
    case OP_LIN: /* issue 31 */
        return map_linear(b, t, layer, base, mp->hf, suffix);
    case OP_PLAIN:
    case OP_Q:
    case OP_K: {
        uint32_t heads = 0;
        if (mp->op != OP_PLAIN && hp->arch->permute_qk) {
            int64_t rows = one_d ? t->ne[0] : t->ne[1];
            heads = (uint32_t)(mp->op == OP_Q ? hp->n_head : hp->n_head_kv);
            if (rows % (2 * (int64_t)heads) != 0)
                return bad_shape(b, t, "rows are not a multiple of 2 x heads, cannot undo the rope permutation");
        }
        snprintf(name, sizeof(name), "model.layers.%d.%s.%s", layer, mp->hf, suffix);
        return add(b, t, name, 0, one_d ? 1 : t->ne[1], one_d, heads);
    }
    case OP_ROW:
        if (!(t->n_dims == 1 || (t->n_dims == 2 && t->ne[1] == 1)))
            return bad_shape(b, t, "expected a vector");
        snprintf(name, sizeof(name), "model.layers.%d.%s.%s", layer, mp->hf, suffix);
        return add(b, t, name, 0, 1, 0, 0);
    case OP_QKV: {
        /* Phi3Attention: rows [0, Hq*d) = Q, then Hkv*d K, then Hkv*d V. */
        int64_t q = hp->n_head * hp->head_dim, kv = hp->n_head_kv * hp->head_dim;
        static const char *const nm[3] = {"q_proj", "k_proj", "v_proj"};
        int64_t r0[3] = {0, q, q + kv}, nr[3] = {q, kv, kv};
        if (one_d || t->ne[1] != q + 2 * kv)
            return bad_shape(b, t, "fused qkv rows do not equal (head_count + 2 x head_count_kv) x head_dim");
        for (i = 0; i < 3; i++) {
            snprintf(name, sizeof(name), "model.layers.%d.self_attn.%s.%s", layer, nm[i], suffix);
            if ((st = add(b, t, name, r0[i], nr[i], 0, 0)))
                return st;
        }
        return QB_OK;
    }
    case OP_GATE_UP:
        /* Phi3MLP: gate_up_proj.chunk(2) — gate rows first. */
        if (one_d || hp->n_ff < 1 || t->ne[1] != 2 * hp->n_ff)
            return bad_shape(b, t, "fused gate/up rows do not equal 2 x feed_forward_length");
        snprintf(name, sizeof(name), "model.layers.%d.mlp.gate_proj.%s", layer, suffix);
        if ((st = add(b, t, name, 0, hp->n_ff, 0, 0)))
            return st;
        snprintf(name, sizeof(name), "model.layers.%d.mlp.up_proj.%s", layer, suffix);
        return add(b, t, name, hp->n_ff, hp->n_ff, 0, 0);
    case OP_EXPERTS_GATE_UP: {
        int64_t e, n;
        if (t->n_dims != 3 || is_bias || t->ne[1] % 2 != 0)
            return bad_shape(b, t, "expected a 3-D fused gate/up expert weight with an even row count");
        if (hp->n_expert > 0 && t->ne[2] != hp->n_expert)
            return bad_shape(b, t, "expert dimension differs from expert_count");
        n = t->ne[1] / 2;
        for (e = 0; e < t->ne[2]; e++) {
            snprintf(part, sizeof(part), mp->hf, (int)e);
            snprintf(name, sizeof(name), "model.layers.%d.%s.%s", layer, part, suffix);
            if ((st = add(b, t, name, e * t->ne[1], n, 0, 0)))
                return st;
            snprintf(part, sizeof(part), mp->hf_up, (int)e);
            snprintf(name, sizeof(name), "model.layers.%d.%s.%s", layer, part, suffix);
            if ((st = add(b, t, name, e * t->ne[1] + n, n, 0, 0)))
                return st;
        }
        return QB_OK;
    }
    default: { /* OP_EXPERTS: HF [E, N, K] stored as ne {K, N, E}. */
        int64_t e;
        if (t->n_dims != 3 || is_bias)
            return bad_shape(b, t, "expected a 3-D stacked expert weight");
        if (hp->n_expert > 0 && t->ne[2] != hp->n_expert)
            return bad_shape(b, t, "expert dimension differs from expert_count");
        for (e = 0; e < t->ne[2]; e++) {
            snprintf(part, sizeof(part), mp->hf, (int)e);
            snprintf(name, sizeof(name), "model.layers.%d.%s.%s", layer, part, suffix);
            if ((st = add(b, t, name, e * t->ne[1], t->ne[1], 0, 0)))
                return st;
        }
        return QB_OK;
    }
    }
}

static qb_status map_one(builder *b, const gguf_tinfo *t, gguf_special *sp)
{
    const gguf_hparams *hp = b->hp;
    size_t i;
    int layer, used = 0;
    char base[GGUF_MAX_NAME], suffix[8];
    const char *dot;

    if (!gguf_ggml_type_supported(t->type))
        return b->h->set_error(b->h, QB_E_UNSUPPORTED, "%s: tensor '%s': ggml type %s (id %u) has no decoder",
                               t->file->path, t->name, gguf_ggml_type_name(t->type), t->type);
    for (i = 0; i < sizeof(top_maps) / sizeof(top_maps[0]); i++)
        if (strcmp(t->name, top_maps[i].gguf) == 0) {
            if (t->n_dims != (i == 1 ? 1u : 2u))
                return bad_shape(b, t, "unexpected number of dimensions");
            return add(b, t, top_maps[i].hf, 0, i == 1 ? 1 : t->ne[1], i == 1, 0);
        }
    for (i = 0; hp->arch->bit == GGUF_A_GEMMA4 && i < sizeof(g4_top_maps) / sizeof(g4_top_maps[0]); i++)
        if (strcmp(t->name, g4_top_maps[i].gguf) == 0) {
            if (t->n_dims != (g4_top_maps[i].one_d ? 1u : 2u))
                return bad_shape(b, t, "unexpected number of dimensions");
            return add(b, t, g4_top_maps[i].hf, 0, g4_top_maps[i].one_d ? 1 : t->ne[1], g4_top_maps[i].one_d, 0);
        }
    /* gemma4: the full layers' rope frequency factors (1 on rotated pairs,
     * 1e30 on the others) are config (hfconfig.c), not a weight. */
    if (hp->arch->bit == GGUF_A_GEMMA4 && strcmp(t->name, "rope_freqs.weight") == 0) {
        sp->g4_rope_freqs = t;
        return QB_OK;
    }
    /* Rope factor tensors are config, not weights (docs/formats/gguf.md, "Metadata to config.json"). */
    if ((hp->arch->bit & GGUF_A_LLAMA) && strcmp(t->name, "rope_freqs.weight") == 0) {
        sp->rope_freqs = t;
        return QB_OK;
    }
    if ((hp->arch->bit & GGUF_A_PHI3) && strcmp(t->name, "rope_factors_long.weight") == 0) {
        sp->rope_long = t;
        return QB_OK;
    }
    if ((hp->arch->bit & GGUF_A_PHI3) && strcmp(t->name, "rope_factors_short.weight") == 0) {
        sp->rope_short = t;
        return QB_OK;
    }
    dot = strrchr(t->name, '.');
    /* issue 31: the nextn_predict_layers (MTP) blocks after the decoder are
     * left out, as transformers leaves them out on load (docs/formats/gguf.md,
     * "Qwen3-Next and Qwen3.5"). */
    if (hp->n_nextn > 0 && sscanf(t->name, "blk.%d.%n", &layer, &used) == 1 && used > 0 &&
        layer >= hp->n_layer && layer < hp->n_layer + hp->n_nextn)
        return QB_OK;
    /* ssm_a has no .weight (gguf-py MODEL_TENSOR.SSM_A "blk.{bid}.ssm_a") */
    if (hp->arch->bit == GGUF_A_QWEN3NEXT && sscanf(t->name, "blk.%d.%n", &layer, &used) == 1 && used > 0 &&
        layer >= 0 && layer < hp->n_layer && strcmp(t->name + used, "ssm_a") == 0)
        return map_block(b, t, layer, "ssm_a", "");
    if (sscanf(t->name, "blk.%d.%n", &layer, &used) == 1 && used > 0 && dot && dot > t->name + used &&
        layer >= 0 && layer < hp->n_layer && (strcmp(dot, ".weight") == 0 || strcmp(dot, ".bias") == 0)) {
        size_t bl = (size_t)(dot - (t->name + used));
        memcpy(base, t->name + used, bl);
        base[bl] = '\0';
        snprintf(suffix, sizeof(suffix), "%s", dot + 1);
        return map_block(b, t, layer, base, suffix);
    }
    return b->h->set_error(b->h, QB_E_UNSUPPORTED, "%s: tensor '%s' has no Hugging Face mapping for architecture '%s'",
                           t->file->path, t->name, hp->arch->gguf_name);
}

static const gguf_ctensor *find_mapped(const builder *b, const char *name)
{
    size_t i;
    for (i = 0; i < b->n; i++)
        if (strcmp(b->t[i].name, name) == 0)
            return &b->t[i];
    return NULL;
}

/* Requires canonical `name` with HF shape [rows, cols] (cols < 0: a
 * vector of rows elements), named in the error when absent or different. */
static qb_status need(builder *b, const gguf_model *m, const char *name, int64_t rows, int64_t cols)
{
    const gguf_ctensor *c = find_mapped(b, name);
    if (!c)
        return b->h->set_error(b->h, QB_E_FORMAT, "%s: no GGUF tensor gives %s (block_count %lld)",
                               gguf_model_meta(m)->path, name, (long long)b->hp->n_layer);
    if (cols < 0 ? (c->n_dims != 1 || c->dims[0] != rows)
                 : (c->n_dims != 2 || c->dims[0] != rows || c->dims[1] != cols))
        return b->h->set_error(b->h, QB_E_FORMAT, "%s: tensor '%s' (%s) has shape [%lld, %lld], metadata implies [%lld, %lld]",
                               c->src->file->path, c->src->name, name, (long long)c->dims[0],
                               (long long)(c->n_dims == 2 ? c->dims[1] : 0), (long long)rows,
                               (long long)(cols < 0 ? 0 : cols));
    return QB_OK;
}

/* deepseek2: every layer's MLA linears with the widths of hp->mla, a dense
 * MLP below leading_dense_block_count, else the router (with its bias when
 * routing is sigmoid, as transformers' DeepseekV3 always has one and
 * DeepseekV2 never) and the shared experts. */
static qb_status check_layers_ds2(builder *b, const gguf_model *m)
{
    const gguf_hparams *hp = b->hp;
    const gguf_mla *a = &hp->mla;
    const int64_t E = hp->n_embd, H = hp->n_head, qk = a->qk_nope + a->qk_rope;
    int64_t l;
    char n[256];
    qb_status st = QB_OK;
#define NEED(fmt, rows, cols) (snprintf(n, sizeof(n), "model.layers.%d." fmt, (int)l), need(b, m, n, rows, cols))
    for (l = 0; l < hp->n_layer && !st; l++) {
        if ((st = NEED("input_layernorm.weight", E, -1)) || (st = NEED("post_attention_layernorm.weight", E, -1)))
            break;
        if (a->q_lora > 0) {
            if ((st = NEED("self_attn.q_a_proj.weight", a->q_lora, E)) ||
                (st = NEED("self_attn.q_a_layernorm.weight", a->q_lora, -1)) ||
                (st = NEED("self_attn.q_b_proj.weight", H * qk, a->q_lora)))
                break;
        } else if ((st = NEED("self_attn.q_proj.weight", H * qk, E))) {
            break;
        }
        if ((st = NEED("self_attn.kv_a_proj_with_mqa.weight", a->kv_lora + a->qk_rope, E)) ||
            (st = NEED("self_attn.kv_a_layernorm.weight", a->kv_lora, -1)) ||
            (st = NEED("self_attn.kv_b_proj.weight", H * (a->qk_nope + a->v_head), a->kv_lora)) ||
            (st = NEED("self_attn.o_proj.weight", E, H * a->v_head)))
            break;
        if (l < a->n_dense) {
            st = NEED("mlp.gate_proj.weight", hp->n_ff, E);
            if (!st && (st = NEED("mlp.up_proj.weight", hp->n_ff, E)) == QB_OK)
                st = NEED("mlp.down_proj.weight", E, hp->n_ff);
            continue;
        }
        if ((st = NEED("mlp.gate.weight", hp->n_expert, E)) ||
            (st = NEED("mlp.experts.0.down_proj.weight", E, hp->n_ff_exp)))
            break;
        snprintf(n, sizeof(n), "model.layers.%d.mlp.gate.e_score_correction_bias", (int)l);
        if (a->gating == 2 && (st = NEED("mlp.gate.e_score_correction_bias", hp->n_expert, -1)))
            break;
        if (a->gating != 2 && find_mapped(b, n)) {
            st = b->h->set_error(b->h, QB_E_UNSUPPORTED,
                                 "%s: layer %d has exp_probs_b but routing is softmax: transformers' DeepseekV2 has no router bias",
                                 gguf_model_meta(m)->path, (int)l);
            break;
        }
        if (a->n_shared > 0)
            st = NEED("mlp.shared_experts.down_proj.weight", E, a->n_shared * hp->n_ff_exp);
    }
#undef NEED
    return st;
}

/* Every layer must have its attention and MLP (or router) weights with the
 * shapes the hyper-parameters give; a missing one is reported by name
 * instead of surfacing later in a writer. */
static qb_status check_layers(builder *b, const gguf_model *m)
{
    const gguf_hparams *hp = b->hp;
    const int64_t q = hp->n_head * hp->head_dim, kv = hp->n_head_kv * hp->head_dim;
    unsigned moe = hp->n_expert > 0;
    struct {
        const char *fmt;
        int64_t rows, cols; /* -1: not checked */
    } req[] = {
        {"model.layers.%d.input_layernorm.weight", -1, -1},
        {"model.layers.%d.self_attn.q_proj.weight", q, hp->n_embd},
        {"model.layers.%d.self_attn.k_proj.weight", kv, hp->n_embd},
        {"model.layers.%d.self_attn.v_proj.weight", kv, hp->n_embd},
        {"model.layers.%d.self_attn.o_proj.weight", hp->n_embd, q},
        {!moe ? "model.layers.%d.mlp.down_proj.weight"
              : (hp->arch->bit & GGUF_A_LLAMA)  ? "model.layers.%d.block_sparse_moe.gate.weight"
              : (hp->arch->bit & GGUF_A_GPTOSS) ? "model.layers.%d.mlp.router.weight"
                                                : "model.layers.%d.mlp.gate.weight",
         moe ? hp->n_expert : hp->n_embd, moe ? hp->n_embd : hp->n_ff},
    };
    int64_t l;
    size_t i;
    char name[256];
    for (l = 0; l < hp->n_layer; l++)
        for (i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
            const gguf_ctensor *c;
            if (hp->arch->bit == GGUF_A_LLAMA4 && i == 5) {
                /* llama_model_llama4: experts on (il + 1) % step == 0 (issue 31) */
                int sparse = (l + 1) % hp->moe_step == 0;
                req[i].fmt = sparse ? "model.layers.%d.feed_forward.router.weight"
                                    : "model.layers.%d.feed_forward.down_proj.weight";
                req[i].rows = sparse ? hp->n_expert : hp->n_embd;
                req[i].cols = sparse ? hp->n_embd : hp->n_ff;
            }
            snprintf(name, sizeof(name), req[i].fmt, (int)l);
            c = find_mapped(b, name);
            if (!c)
                return b->h->set_error(b->h, QB_E_FORMAT, "%s: no GGUF tensor gives %s (block_count %lld)",
                                       gguf_model_meta(m)->path, name, (long long)hp->n_layer);
            if (req[i].rows >= 0 && (c->n_dims != 2 || c->dims[0] != req[i].rows || c->dims[1] != req[i].cols))
                return b->h->set_error(b->h, QB_E_FORMAT,
                                       "%s: tensor '%s' (%s) has shape [%lld, %lld], metadata implies [%lld, %lld]",
                                       c->src->file->path, c->src->name, name, (long long)c->dims[0],
                                       (long long)(c->n_dims == 2 ? c->dims[1] : 0), (long long)req[i].rows,
                                       (long long)req[i].cols);
        }
    return QB_OK;
}

/* issue 31: qwen3next/qwen35/qwen35moe, glm4moe, minimax-m2. Every layer
 * has its norm, its attention (Qwen: the gated delta net where
 * gguf_arch_layer_linear says so, else attention whose q_proj carries the
 * output gate, 2 x heads x head_dim rows) and its MLP or router, with the
 * shapes the metadata gives. */
static qb_status check_layers_31(builder *b, const gguf_model *m)
{
    const gguf_hparams *hp = b->hp;
    const int64_t E = hp->n_embd, q = hp->n_head * hp->head_dim, kv = hp->n_head_kv * hp->head_dim;
    const unsigned bit = hp->arch->bit;
    int64_t l;
    char n[256];
    qb_status st = QB_OK;
#define NEED(fmt, rows, cols) (snprintf(n, sizeof(n), "model.layers.%d." fmt, (int)l), need(b, m, n, rows, cols))
#define HAS(fmt) (snprintf(n, sizeof(n), "model.layers.%d." fmt, (int)l), find_mapped(b, n) != NULL)
    for (l = 0; l < hp->n_layer && !st; l++) {
        if ((st = NEED("input_layernorm.weight", E, -1)) || (st = NEED("post_attention_layernorm.weight", E, -1)))
            break;
        if (bit == GGUF_A_QWEN3NEXT && gguf_arch_layer_linear(hp, l)) {
            if ((st = NEED("linear_attn.out_proj.weight", E, hp->lin_nv * hp->lin_dv)))
                break;
            if (!HAS("linear_attn.in_proj_qkvz.weight") && !HAS("linear_attn.in_proj_qkv.weight")) {
                st = b->h->set_error(b->h, QB_E_FORMAT, "%s: layer %d is a linear-attention layer without attn_qkv",
                                     gguf_model_meta(m)->path, (int)l);
                break;
            }
        } else if ((st = NEED("self_attn.q_proj.weight", bit == GGUF_A_QWEN3NEXT ? 2 * q : q, E)) ||
                   (st = NEED("self_attn.k_proj.weight", kv, E)) || (st = NEED("self_attn.v_proj.weight", kv, E)) ||
                   (st = NEED("self_attn.o_proj.weight", E, q))) {
            break;
        } else if (bit == GGUF_A_QWEN3NEXT && HAS("linear_attn.out_proj.weight")) {
            st = b->h->set_error(b->h, QB_E_FORMAT, "%s: layer %d has both attention and a gated delta net",
                                 gguf_model_meta(m)->path, (int)l);
            break;
        }
        if (bit == GGUF_A_MINIMAXM2)
            st = NEED("block_sparse_moe.gate.weight", hp->n_expert, E);
        else if (hp->n_expert > 0 && (bit != GGUF_A_GLM4MOE || !HAS("mlp.down_proj.weight")))
            st = NEED("mlp.gate.weight", hp->n_expert, E);
        else
            st = NEED("mlp.down_proj.weight", E, hp->n_ff);
    }
#undef HAS
#undef NEED
    return st;
}

/* issue 31: gemma4. Every layer has its norms, its attention with the
 * sliding or full head width of its type, its MLP, its layer_scalar and,
 * with per-layer inputs, their gate and projection; the model-level
 * per-layer tensors too. A full layer without v_proj (attention_k_eq_v)
 * is refused by name. */
static qb_status check_layers_g4(builder *b, const gguf_model *m)
{
    const gguf_hparams *hp = b->hp;
    const int64_t E = hp->n_embd, P = hp->g4_ple;
    int64_t l;
    char n[256];
    qb_status st = QB_OK;
#define NEED(fmt, rows, cols) (snprintf(n, sizeof(n), "model.layers.%d." fmt, (int)l), need(b, m, n, rows, cols))
    for (l = 0; l < hp->n_layer && !st; l++) {
        const int64_t hd = hp->g4_swa[l] ? hp->g4_hd_swa : hp->head_dim;
        const int64_t q = hp->n_head * hd, kv = hp->n_head_kv * hd;
        snprintf(n, sizeof(n), "model.layers.%d.self_attn.v_proj.weight", (int)l);
        if (!find_mapped(b, n))
            return b->h->set_error(b->h, QB_E_UNSUPPORTED,
                                   "%s: gemma4 layer %d has no attn_v (attention_k_eq_v): not read",
                                   gguf_model_meta(m)->path, (int)l);
        if ((st = NEED("input_layernorm.weight", E, -1)) || (st = NEED("post_attention_layernorm.weight", E, -1)) ||
            (st = NEED("pre_feedforward_layernorm.weight", E, -1)) ||
            (st = NEED("post_feedforward_layernorm.weight", E, -1)) ||
            (st = NEED("self_attn.q_proj.weight", q, E)) || (st = NEED("self_attn.k_proj.weight", kv, E)) ||
            (st = NEED("self_attn.v_proj.weight", kv, E)) || (st = NEED("self_attn.o_proj.weight", E, q)) ||
            (st = NEED("self_attn.q_norm.weight", hd, -1)) || (st = NEED("self_attn.k_norm.weight", hd, -1)) ||
            (st = NEED("mlp.down_proj.weight", E, hp->n_ff)) || (st = NEED("layer_scalar", 1, -1)))
            break;
        if (P > 0 && ((st = NEED("per_layer_input_gate.weight", P, E)) || (st = NEED("per_layer_projection.weight", E, P)) ||
                      (st = NEED("post_per_layer_input_norm.weight", E, -1))))
            break;
    }
#undef NEED
    if (!st && P > 0) {
        const gguf_ctensor *c = find_mapped(b, "model.embed_tokens_per_layer.weight");
        if (!c || c->dims[1] != hp->n_layer * P)
            return b->h->set_error(b->h, QB_E_FORMAT,
                                   "%s: gemma4 per_layer_token_embd missing or not block_count x %lld wide",
                                   gguf_model_meta(m)->path, (long long)P);
        if ((st = need(b, m, "model.per_layer_model_projection.weight", hp->n_layer * P, E)) ||
            (st = need(b, m, "model.per_layer_projection_norm.weight", P, -1)))
            return st;
    }
    return st;
}

qb_status gguf_names_map(const qb_host *h, const gguf_model *m, const gguf_hparams *hp, gguf_ctensor **out,
                         size_t *n_out, gguf_special *sp)
{
    builder b = {h, m, hp, NULL, 0, 0};
    size_t fi;
    uint64_t ti;
    qb_status st = QB_OK;

    *out = NULL;
    *n_out = 0;
    memset(sp, 0, sizeof(*sp));
    /* Source order (shard by shard) keeps the output deterministic. */
    for (fi = 0; fi < m->n_files && !st; fi++)
        for (ti = 0; ti < m->files[fi]->n_tensors && !st; ti++)
            st = map_one(&b, &m->files[fi]->t[ti], sp);
    if (!st && !gguf_model_find(m, "token_embd.weight"))
        st = h->set_error(h, QB_E_FORMAT, "%s: tensor 'token_embd.weight' is missing", gguf_model_meta(m)->path);
    if (!st)
        st = hp->arch->bit == GGUF_A_DEEPSEEK2 ? check_layers_ds2(&b, m)
             : hp->arch->bit == GGUF_A_GEMMA4  ? check_layers_g4(&b, m)
             : hp->arch->bit & (GGUF_A_QWEN3NEXT | GGUF_A_GLM4MOE | GGUF_A_MINIMAXM2) ? check_layers_31(&b, m)
                                                                                   : check_layers(&b, m);
    if (st) {
        gguf_names_free(b.t, b.n);
        return st;
    }
    if (!st)
        st = declare_blocks(&b);
    if (st) {
        gguf_names_free(b.t, b.n);
        return st;
    }
    sp->tied = gguf_model_find(m, "output.weight") == NULL;
    *out = b.t;
    *n_out = b.n;
    return QB_OK;
}
