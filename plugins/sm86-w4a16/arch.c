/*
 * sm86-w4a16 — tensor roles of each supported architecture (data only).
 *
 * Paths and bias presence follow the Hugging Face modeling files
 * (transformers models/<arch>/modeling_<arch>.py): LlamaAttention and
 * LlamaMLP take `attention_bias` / `mlp_bias` (off by default), Qwen2Attention
 * always has q/k/v biases and none on o_proj, Qwen3Attention adds q_norm and
 * k_norm over head_dim, Gemma2DecoderLayer adds pre/post feed-forward norms.
 * GemmaAttention / Gemma3Attention take `attention_bias`; Gemma3Attention
 * has q_norm/k_norm; Phi3Attention and Phi3MLP have no biases and hold
 * fused qkv_proj / gate_up_proj, which readers present split (the format
 * stores the separate projections). MoE blocks: MixtralSparseMoeBlock
 * (`block_sparse_moe.gate`, experts' w1/w2/w3 of intermediate_size),
 * Qwen2MoeSparseMoeBlock (`mlp.gate`, experts of moe_intermediate_size, a
 * shared_expert of shared_expert_intermediate_size and a one-row
 * shared_expert_gate), Qwen3MoeSparseMoeBlock (no shared expert); Qwen MoE
 * layers that are not sparse hold a plain MLP of intermediate_size.
 * tie_default is the default of `tie_word_embeddings` in each
 * configuration_<arch>.py, used only when the config omits the key.
 *
 * Adding an architecture is adding a table.
 */
#include "w4w.h"

#include <stdio.h>
#include <string.h>

/* Input widths: q/k/v/gate/up read the hidden state, o_proj the
 * concatenated heads, down_proj the MLP's intermediate activations. */
#define LIN(p, b, in) { p, W4W_ROLE_LINEAR, b, 0, in, W4W_IN_NONE, W4W_LAYERS_ALL, 0 }
#define NORM(p, hs)                                                                                \
    {                                                                                              \
        p, W4W_ROLE_NORM, W4W_BIAS_NONE, hs, W4W_IN_NONE, W4W_IN_NONE, W4W_LAYERS_ALL, 0           \
    }
/* MoE architectures: roles checked against the config's widths, held by
 * dense (D) or sparse (S) layers only. */
#define DLIN(p, in) { p, W4W_ROLE_LINEAR, W4W_BIAS_NONE, 0, in, W4W_IN_NONE, W4W_LAYERS_DENSE, 0 }
#define SLIN(p, in, out) { p, W4W_ROLE_LINEAR, W4W_BIAS_NONE, 0, in, out, W4W_LAYERS_SPARSE, 0 }
#define ROUTER(p, out)                                                                             \
    { p, W4W_ROLE_ROUTER, W4W_BIAS_NONE, 0, W4W_IN_HIDDEN, out, W4W_LAYERS_SPARSE, 0 }
/* DeepSeek MLA: linears with both widths checked, present when `when`
 * says (w4w_role.when); norms of a LoRA rank (not hidden-sized). */
#define MLA(p, in, out, when) { p, W4W_ROLE_LINEAR, W4W_BIAS_NONE, 0, in, out, W4W_LAYERS_ALL, when }
#define RNORM(p, when)                                                                             \
    { p, W4W_ROLE_NORM, W4W_BIAS_NONE, 0, W4W_IN_NONE, W4W_IN_NONE, W4W_LAYERS_ALL, when }
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const w4w_role llama_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_OPTIONAL, W4W_IN_HEADS),
    LIN("mlp.gate_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("mlp.up_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("mlp.down_proj", W4W_BIAS_OPTIONAL, W4W_IN_INTER),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

/* MistralAttention / MistralMLP have no bias parameters at all. */
static const w4w_role mistral_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_NONE, W4W_IN_HEADS),
    LIN("mlp.gate_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.up_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.down_proj", W4W_BIAS_NONE, W4W_IN_INTER),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

static const w4w_role qwen2_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_REQUIRED, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_REQUIRED, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_REQUIRED, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_NONE, W4W_IN_HEADS),
    LIN("mlp.gate_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.up_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.down_proj", W4W_BIAS_NONE, W4W_IN_INTER),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

static const w4w_role qwen3_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_OPTIONAL, W4W_IN_HEADS),
    NORM("self_attn.q_norm", 0),
    NORM("self_attn.k_norm", 0),
    LIN("mlp.gate_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.up_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.down_proj", W4W_BIAS_NONE, W4W_IN_INTER),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

static const w4w_role gemma2_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_OPTIONAL, W4W_IN_HEADS),
    LIN("mlp.gate_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.up_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.down_proj", W4W_BIAS_NONE, W4W_IN_INTER),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
    NORM("pre_feedforward_layernorm", 1),
    NORM("post_feedforward_layernorm", 1),
};

static const w4w_role gemma_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_OPTIONAL, W4W_IN_HEADS),
    LIN("mlp.gate_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.up_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.down_proj", W4W_BIAS_NONE, W4W_IN_INTER),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

static const w4w_role gemma3_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_OPTIONAL, W4W_IN_HEADS),
    NORM("self_attn.q_norm", 0),
    NORM("self_attn.k_norm", 0),
    LIN("mlp.gate_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.up_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.down_proj", W4W_BIAS_NONE, W4W_IN_INTER),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
    NORM("pre_feedforward_layernorm", 1),
    NORM("post_feedforward_layernorm", 1),
};

/* Phi3's fused qkv_proj / gate_up_proj stored split (w4a16-format.md). */
static const w4w_role phi3_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_NONE, W4W_IN_HEADS),
    LIN("mlp.gate_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.up_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.down_proj", W4W_BIAS_NONE, W4W_IN_INTER),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

/* Phi3Attention.qkv_proj and Phi3MLP.gate_up_proj, as HF checkpoints
 * (and the readers of their quantized forms) name them. */
static const w4w_fused phi3_fused[] = {
    {"self_attn.qkv_proj",
     {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
     {W4W_IN_HEADS, W4W_IN_KV_HEADS, W4W_IN_KV_HEADS}},
    {"mlp.gate_up_proj", {"mlp.gate_proj", "mlp.up_proj", NULL}, {W4W_IN_INTER, W4W_IN_INTER}},
};

/* MixtralBlockSparseTop2MLP: w1 gate, w3 up, w2 down, ffn_dim =
 * intermediate_size. */
static const w4w_role mixtral_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_NONE, W4W_IN_HEADS),
    ROUTER("block_sparse_moe.gate", W4W_IN_EXPERTS),
    SLIN("block_sparse_moe.experts.%d.w1", W4W_IN_HIDDEN, W4W_IN_INTER),
    SLIN("block_sparse_moe.experts.%d.w2", W4W_IN_INTER, W4W_IN_HIDDEN),
    SLIN("block_sparse_moe.experts.%d.w3", W4W_IN_HIDDEN, W4W_IN_INTER),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

static const w4w_role qwen2_moe_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_REQUIRED, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_REQUIRED, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_REQUIRED, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_NONE, W4W_IN_HEADS),
    DLIN("mlp.gate_proj", W4W_IN_HIDDEN),
    DLIN("mlp.up_proj", W4W_IN_HIDDEN),
    DLIN("mlp.down_proj", W4W_IN_INTER),
    ROUTER("mlp.gate", W4W_IN_EXPERTS),
    SLIN("mlp.experts.%d.gate_proj", W4W_IN_HIDDEN, W4W_IN_MOE_INTER),
    SLIN("mlp.experts.%d.up_proj", W4W_IN_HIDDEN, W4W_IN_MOE_INTER),
    SLIN("mlp.experts.%d.down_proj", W4W_IN_MOE_INTER, W4W_IN_HIDDEN),
    SLIN("mlp.shared_expert.gate_proj", W4W_IN_HIDDEN, W4W_IN_SHARED_INTER),
    SLIN("mlp.shared_expert.up_proj", W4W_IN_HIDDEN, W4W_IN_SHARED_INTER),
    SLIN("mlp.shared_expert.down_proj", W4W_IN_SHARED_INTER, W4W_IN_HIDDEN),
    ROUTER("mlp.shared_expert_gate", W4W_IN_ONE),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

static const w4w_role qwen3_moe_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_OPTIONAL, W4W_IN_HEADS),
    NORM("self_attn.q_norm", 0),
    NORM("self_attn.k_norm", 0),
    DLIN("mlp.gate_proj", W4W_IN_HIDDEN),
    DLIN("mlp.up_proj", W4W_IN_HIDDEN),
    DLIN("mlp.down_proj", W4W_IN_INTER),
    ROUTER("mlp.gate", W4W_IN_EXPERTS),
    SLIN("mlp.experts.%d.gate_proj", W4W_IN_HIDDEN, W4W_IN_MOE_INTER),
    SLIN("mlp.experts.%d.up_proj", W4W_IN_HIDDEN, W4W_IN_MOE_INTER),
    SLIN("mlp.experts.%d.down_proj", W4W_IN_MOE_INTER, W4W_IN_HIDDEN),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

/* gpt-oss (transformers models/gpt_oss/modeling_gpt_oss.py; docs/formats/mxfp4.md
 * and w4a16-format.md "gpt-oss"): GptOssAttention has q/k/v/o biases and
 * `self_attn.sinks` [num_attention_heads] (a bare parameter, kept F16);
 * GptOssTopKRouter `mlp.router` is F.linear with a bias; GptOssExperts holds
 * fused [E, in, out] tensors the format stores per expert (gptoss_xfused). */
#define PARAM(p)                                                                                   \
    { p, W4W_ROLE_PARAM, W4W_BIAS_NONE, 0, W4W_IN_NONE, W4W_IN_NONE, W4W_LAYERS_ALL, 0 }
#define ROUTER_B(p, out)                                                                           \
    { p, W4W_ROLE_ROUTER, W4W_BIAS_REQUIRED, 0, W4W_IN_HIDDEN, out, W4W_LAYERS_SPARSE, 0 }
#define SLIN_B(p, in, out)                                                                         \
    { p, W4W_ROLE_LINEAR, W4W_BIAS_REQUIRED, 0, in, out, W4W_LAYERS_SPARSE, 0 }
static const w4w_role gpt_oss_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_REQUIRED, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_REQUIRED, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_REQUIRED, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_REQUIRED, W4W_IN_HEADS),
    PARAM("self_attn.sinks"),
    ROUTER_B("mlp.router", W4W_IN_EXPERTS),
    SLIN_B("mlp.experts.%d.gate_proj", W4W_IN_HIDDEN, W4W_IN_INTER),
    SLIN_B("mlp.experts.%d.up_proj", W4W_IN_HIDDEN, W4W_IN_INTER),
    SLIN_B("mlp.experts.%d.down_proj", W4W_IN_INTER, W4W_IN_HIDDEN),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

/* GptOssExperts.gate_up_proj [E, hidden, 2I]: gate = [..., ::2], up =
 * [..., 1::2] (_apply_gate); down_proj [E, I, hidden]. Biases alike. */
static const w4w_xfused gpt_oss_xfused[] = {
    {"mlp.experts.gate_up_proj", {"mlp.experts.%d.gate_proj", "mlp.experts.%d.up_proj"}, 2, 0, 0},
    {"mlp.experts.down_proj", {"mlp.experts.%d.down_proj", NULL}, 1, 0, 0},
};

static const w4w_xfused *llama4_xfused_of(size_t *n);

const w4w_xfused *w4w_arch_xfused(const w4w_arch *a, size_t *n)
{
    *n = 0;
    if (a && strcmp(a->model_type, "gpt_oss") == 0) {
        *n = N_OF(gpt_oss_xfused);
        return gpt_oss_xfused;
    }
    if (a && strcmp(a->model_type, "llama4_text") == 0) /* issue 31 */
        return llama4_xfused_of(n);
    return NULL;
}

/* DeepseekV2Attention / DeepseekV3Attention (MLA): with q_lora_rank,
 * q_a_proj [q_lora_rank, hidden] -> q_a_layernorm -> q_b_proj; without
 * (DeepSeek-V2-Lite: q_lora_rank null), q_proj [heads * qk_head_dim,
 * hidden]; kv_a_proj_with_mqa [kv_lora_rank + qk_rope_head_dim, hidden],
 * kv_a_layernorm [kv_lora_rank], kv_b_proj [heads * (qk_nope_head_dim +
 * v_head_dim), kv_lora_rank], o_proj [hidden, heads * v_head_dim]; no
 * biases (attention_bias false in every released config). Layers below
 * first_k_dense_replace hold DeepseekV3MLP of intermediate_size, the
 * others DeepseekV3MoE: router mlp.gate, experts of moe_intermediate_size,
 * shared_experts of moe_intermediate_size * n_shared_experts. */
#define DS_ATTN                                                                                    \
    MLA("self_attn.q_proj", W4W_IN_HIDDEN, W4W_IN_MLA_Q, -W4W_IN_Q_LORA),                         \
        MLA("self_attn.q_a_proj", W4W_IN_HIDDEN, W4W_IN_Q_LORA, W4W_IN_Q_LORA),                    \
        RNORM("self_attn.q_a_layernorm", W4W_IN_Q_LORA),                                           \
        MLA("self_attn.q_b_proj", W4W_IN_Q_LORA, W4W_IN_MLA_Q, W4W_IN_Q_LORA),                     \
        MLA("self_attn.kv_a_proj_with_mqa", W4W_IN_HIDDEN, W4W_IN_MLA_KV_A, 0),                    \
        RNORM("self_attn.kv_a_layernorm", 0),                                                      \
        MLA("self_attn.kv_b_proj", W4W_IN_KV_LORA, W4W_IN_MLA_KV_B, 0),                            \
        MLA("self_attn.o_proj", W4W_IN_MLA_V, W4W_IN_HIDDEN, 0)
#define DS_MLP                                                                                     \
    DLIN("mlp.gate_proj", W4W_IN_HIDDEN), DLIN("mlp.up_proj", W4W_IN_HIDDEN),                      \
        DLIN("mlp.down_proj", W4W_IN_INTER), ROUTER("mlp.gate", W4W_IN_EXPERTS)
#define DS_EXPERTS                                                                                 \
    SLIN("mlp.experts.%d.gate_proj", W4W_IN_HIDDEN, W4W_IN_MOE_INTER),                             \
        SLIN("mlp.experts.%d.up_proj", W4W_IN_HIDDEN, W4W_IN_MOE_INTER),                           \
        SLIN("mlp.experts.%d.down_proj", W4W_IN_MOE_INTER, W4W_IN_HIDDEN),                         \
        SLIN("mlp.shared_experts.gate_proj", W4W_IN_HIDDEN, W4W_IN_DS_SHARED),                     \
        SLIN("mlp.shared_experts.up_proj", W4W_IN_HIDDEN, W4W_IN_DS_SHARED),                       \
        SLIN("mlp.shared_experts.down_proj", W4W_IN_DS_SHARED, W4W_IN_HIDDEN),                     \
        NORM("input_layernorm", 1), NORM("post_attention_layernorm", 1)

static const w4w_role deepseek_v2_roles[] = {DS_ATTN, DS_MLP, DS_EXPERTS};

/* DeepseekV3TopkRouter adds e_score_correction_bias [n_routed_experts], a
 * float32 buffer (noaux_tc routing; _keep_in_fp32_modules_strict in
 * modeling_deepseek_v3.py), kept F32 so routing sees the trained values. */
static const w4w_role deepseek_v3_roles[] = {
    DS_ATTN,
    DS_MLP,
    {"mlp.gate.e_score_correction_bias", W4W_ROLE_F32, W4W_BIAS_NONE, 0, W4W_IN_NONE,
     W4W_IN_EXPERTS, W4W_LAYERS_SPARSE, 0},
    DS_EXPERTS,
};

/* ---- issue 31: glm4_moe, minimax_m2, deepseek_v32 ---------------------- */

/* Glm4MoeAttention (transformers models/glm4_moe): q/k/v biases when
 * attention_bias (true in GLM-4.5/4.6), none on o_proj; q_norm/k_norm over
 * head_dim when use_qk_norm. Glm4MoeDecoderLayer: a dense Glm4MoeMLP below
 * first_k_dense_replace, else Glm4MoeMoE with DeepseekV3's router (weight
 * and the float32 e_score_correction_bias), routed experts of
 * moe_intermediate_size and shared_experts of moe_intermediate_size *
 * n_shared_experts. MTP layers (model.layers.{num_hidden_layers}) are not
 * layers of the format, as for DeepSeek-V3. */
static const w4w_role glm4_moe_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_NONE, W4W_IN_HEADS),
    RNORM("self_attn.q_norm", W4W_IN_QK_NORM),
    RNORM("self_attn.k_norm", W4W_IN_QK_NORM),
    DS_MLP,
    {"mlp.gate.e_score_correction_bias", W4W_ROLE_F32, W4W_BIAS_NONE, 0, W4W_IN_NONE,
     W4W_IN_EXPERTS, W4W_LAYERS_SPARSE, 0},
    DS_EXPERTS,
};

/* MiniMaxM2Attention: no biases; q_norm over all heads' [num_attention_heads
 * * head_dim] and k_norm over [num_key_value_heads * head_dim] (not per
 * head). MiniMaxM2SparseMoeBlock in every layer, under Mixtral's checkpoint
 * names (block_sparse_moe.gate, experts.E.w1/w2/w3 of intermediate_size)
 * plus the float32 routing bias block_sparse_moe.e_score_correction_bias
 * (kept F32 as DeepSeek-V3's: it picks the experts). */
static const w4w_role minimax_m2_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_NONE, W4W_IN_HEADS),
    NORM("self_attn.q_norm", 0),
    NORM("self_attn.k_norm", 0),
    ROUTER("block_sparse_moe.gate", W4W_IN_EXPERTS),
    {"block_sparse_moe.e_score_correction_bias", W4W_ROLE_F32, W4W_BIAS_NONE, 0, W4W_IN_NONE,
     W4W_IN_EXPERTS, W4W_LAYERS_SPARSE, 0},
    SLIN("block_sparse_moe.experts.%d.w1", W4W_IN_HIDDEN, W4W_IN_INTER),
    SLIN("block_sparse_moe.experts.%d.w2", W4W_IN_INTER, W4W_IN_HIDDEN),
    SLIN("block_sparse_moe.experts.%d.w3", W4W_IN_HIDDEN, W4W_IN_INTER),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

/* Qwen3-Next (transformers models/qwen3_next/modeling_qwen3_next.py;
 * w4a16-format.md "Qwen3-Next layers"): linear-attention layers hold
 * Qwen3NextGatedDeltaNet (in_proj_qkvz, in_proj_ba and out_proj linears;
 * conv1d [channels, 1, kernel] kept F16; A_log and dt_bias [nv] kept F32,
 * the decay exp(-exp(A_log) softplus(a + dt_bias)) compounds over every
 * position; norm [dv], its gated RMSNorm), full-attention layers
 * Qwen3NextAttention (q_proj of 2 * heads * head_dim rows: query and output
 * gate per head; q_norm, k_norm); the MLP is Qwen2MoeSparseMoeBlock's or a
 * dense one, as qwen2_moe places them. */
#define LA(p, in, out) { p, W4W_ROLE_LINEAR, W4W_BIAS_NONE, 0, in, out, W4W_LAYERS_LINEAR, 0 }
#define FA(p, b, in) { p, W4W_ROLE_LINEAR, b, 0, in, W4W_IN_NONE, W4W_LAYERS_FULL, 0 }
#define FNORM(p) { p, W4W_ROLE_NORM, W4W_BIAS_NONE, 0, W4W_IN_NONE, W4W_IN_NONE, W4W_LAYERS_FULL, 0 }
static const w4w_role qwen3_next_roles[] = {
    LA("linear_attn.in_proj_qkvz", W4W_IN_HIDDEN, W4W_IN_LIN_QKVZ),
    LA("linear_attn.in_proj_ba", W4W_IN_HIDDEN, W4W_IN_LIN_BA),
    {"linear_attn.conv1d", W4W_ROLE_CONV, W4W_BIAS_NONE, 0, W4W_IN_LIN_KERNEL, W4W_IN_LIN_CONV,
     W4W_LAYERS_LINEAR, 0},
    {"linear_attn.A_log", W4W_ROLE_F32, W4W_BIAS_NONE, 0, W4W_IN_NONE, W4W_IN_LIN_NV,
     W4W_LAYERS_LINEAR, 0},
    {"linear_attn.dt_bias", W4W_ROLE_F32, W4W_BIAS_NONE, 0, W4W_IN_NONE, W4W_IN_LIN_NV,
     W4W_LAYERS_LINEAR, 0},
    {"linear_attn.norm", W4W_ROLE_NORM, W4W_BIAS_NONE, 0, W4W_IN_NONE, W4W_IN_NONE,
     W4W_LAYERS_LINEAR, 0},
    LA("linear_attn.out_proj", W4W_IN_LIN_V, W4W_IN_HIDDEN),
    FA("self_attn.q_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    FA("self_attn.k_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    FA("self_attn.v_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    FA("self_attn.o_proj", W4W_BIAS_OPTIONAL, W4W_IN_HEADS),
    FNORM("self_attn.q_norm"),
    FNORM("self_attn.k_norm"),
    DLIN("mlp.gate_proj", W4W_IN_HIDDEN),
    DLIN("mlp.up_proj", W4W_IN_HIDDEN),
    DLIN("mlp.down_proj", W4W_IN_INTER),
    ROUTER("mlp.gate", W4W_IN_EXPERTS),
    SLIN("mlp.experts.%d.gate_proj", W4W_IN_HIDDEN, W4W_IN_MOE_INTER),
    SLIN("mlp.experts.%d.up_proj", W4W_IN_HIDDEN, W4W_IN_MOE_INTER),
    SLIN("mlp.experts.%d.down_proj", W4W_IN_MOE_INTER, W4W_IN_HIDDEN),
    SLIN("mlp.shared_expert.gate_proj", W4W_IN_HIDDEN, W4W_IN_SHARED_INTER),
    SLIN("mlp.shared_expert.up_proj", W4W_IN_HIDDEN, W4W_IN_SHARED_INTER),
    SLIN("mlp.shared_expert.down_proj", W4W_IN_SHARED_INTER, W4W_IN_HIDDEN),
    ROUTER("mlp.shared_expert_gate", W4W_IN_ONE),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

/* issue 31: smollm3, llama4, gemma4 ------------------------------------------ */

/* SmolLM3Attention / SmolLM3MLP are LlamaAttention / LlamaMLP (modular_smollm3.py):
 * `attention_bias` / `mlp_bias`; its NoPE layers hold the same tensors. */
#define smollm3_roles llama_roles

/* Llama4TextDecoderLayer (modeling_llama4.py): Llama4TextAttention's
 * q/k/v/o (`attention_bias`; its L2 q/k norm has no weight); dense layers a
 * Llama4TextMLP `feed_forward` of intermediate_size_mlp, MoE layers
 * (moe_layers) Llama4TextMoe: `feed_forward.router` [experts, hidden], the
 * shared_expert of intermediate_size and Llama4TextExperts, fused
 * gate_up_proj [E, hidden, 2 * intermediate_size] (gate the first half of
 * the output, gate_up.chunk(2)) and down_proj [E, intermediate_size,
 * hidden], no biases; stored per expert (llama4_xfused). */
static const w4w_role llama4_text_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_OPTIONAL, W4W_IN_HEADS),
    DLIN("feed_forward.gate_proj", W4W_IN_HIDDEN),
    DLIN("feed_forward.up_proj", W4W_IN_HIDDEN),
    DLIN("feed_forward.down_proj", W4W_IN_L4_MLP),
    ROUTER("feed_forward.router", W4W_IN_EXPERTS),
    SLIN("feed_forward.experts.%d.gate_proj", W4W_IN_HIDDEN, W4W_IN_INTER),
    SLIN("feed_forward.experts.%d.up_proj", W4W_IN_HIDDEN, W4W_IN_INTER),
    SLIN("feed_forward.experts.%d.down_proj", W4W_IN_INTER, W4W_IN_HIDDEN),
    SLIN("feed_forward.shared_expert.gate_proj", W4W_IN_HIDDEN, W4W_IN_INTER),
    SLIN("feed_forward.shared_expert.up_proj", W4W_IN_HIDDEN, W4W_IN_INTER),
    SLIN("feed_forward.shared_expert.down_proj", W4W_IN_INTER, W4W_IN_HIDDEN),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

/* Qwen3.5 text models (transformers models/qwen3_5, qwen3_5_moe): the
 * Qwen3-Next layers with Qwen3_5GatedDeltaNet's unfused projections
 * (in_proj_qkv rows [q | k | v], in_proj_z, in_proj_b, in_proj_a); a dense
 * MLP on every layer (Qwen3_5DecoderLayer) or the experts with their shared
 * expert on every layer (Qwen3_5MoeDecoderLayer). */
#define Q35_MIXER                                                                                  \
    LA("linear_attn.in_proj_qkv", W4W_IN_HIDDEN, W4W_IN_LIN_CONV),                                 \
        LA("linear_attn.in_proj_z", W4W_IN_HIDDEN, W4W_IN_LIN_V),                                  \
        LA("linear_attn.in_proj_b", W4W_IN_HIDDEN, W4W_IN_LIN_NV),                                 \
        LA("linear_attn.in_proj_a", W4W_IN_HIDDEN, W4W_IN_LIN_NV),                                 \
        {"linear_attn.conv1d", W4W_ROLE_CONV, W4W_BIAS_NONE, 0, W4W_IN_LIN_KERNEL,                \
         W4W_IN_LIN_CONV, W4W_LAYERS_LINEAR, 0},                                                   \
        {"linear_attn.A_log", W4W_ROLE_F32, W4W_BIAS_NONE, 0, W4W_IN_NONE, W4W_IN_LIN_NV,          \
         W4W_LAYERS_LINEAR, 0},                                                                    \
        {"linear_attn.dt_bias", W4W_ROLE_F32, W4W_BIAS_NONE, 0, W4W_IN_NONE, W4W_IN_LIN_NV,        \
         W4W_LAYERS_LINEAR, 0},                                                                    \
        {"linear_attn.norm", W4W_ROLE_NORM, W4W_BIAS_NONE, 0, W4W_IN_NONE, W4W_IN_NONE,            \
         W4W_LAYERS_LINEAR, 0},                                                                    \
        LA("linear_attn.out_proj", W4W_IN_LIN_V, W4W_IN_HIDDEN),                                   \
        FA("self_attn.q_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),                                  \
        FA("self_attn.k_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),                                  \
        FA("self_attn.v_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),                                  \
        FA("self_attn.o_proj", W4W_BIAS_OPTIONAL, W4W_IN_HEADS), FNORM("self_attn.q_norm"),        \
        FNORM("self_attn.k_norm")
static const w4w_role qwen3_5_roles[] = {
    Q35_MIXER,
    LIN("mlp.gate_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.up_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.down_proj", W4W_BIAS_NONE, W4W_IN_INTER),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};
static const w4w_role qwen3_5_moe_roles[] = {
    Q35_MIXER,
    ROUTER("mlp.gate", W4W_IN_EXPERTS),
    SLIN("mlp.experts.%d.gate_proj", W4W_IN_HIDDEN, W4W_IN_MOE_INTER),
    SLIN("mlp.experts.%d.up_proj", W4W_IN_HIDDEN, W4W_IN_MOE_INTER),
    SLIN("mlp.experts.%d.down_proj", W4W_IN_MOE_INTER, W4W_IN_HIDDEN),
    SLIN("mlp.shared_expert.gate_proj", W4W_IN_HIDDEN, W4W_IN_SHARED_INTER),
    SLIN("mlp.shared_expert.up_proj", W4W_IN_HIDDEN, W4W_IN_SHARED_INTER),
    SLIN("mlp.shared_expert.down_proj", W4W_IN_SHARED_INTER, W4W_IN_HIDDEN),
    ROUTER("mlp.shared_expert_gate", W4W_IN_ONE),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
};

/* DeepseekV32Attention: DeepSeek-V3's MLA (q LoRA always) plus the DSA
 * indexer DeepseekV32Indexer in every layer: wq_b [index_n_heads *
 * index_head_dim, q_lora_rank] and wk [index_head_dim, hidden] are plain
 * linears (packed); weights_proj [index_n_heads, hidden] stays dense F16 as
 * the routers do (it weighs the heads' scores that pick the attended
 * tokens; transformers keeps it in float32); k_norm is a LayerNorm with a
 * weight and a bias of index_head_dim, both F16. */
static const w4w_role deepseek_v32_roles[] = {
    DS_ATTN,
    MLA("self_attn.indexer.wq_b", W4W_IN_Q_LORA, W4W_IN_IDX_Q, 0),
    MLA("self_attn.indexer.wk", W4W_IN_HIDDEN, W4W_IN_IDX_HD, 0),
    RNORM("self_attn.indexer.k_norm", 0),
    PARAM("self_attn.indexer.k_norm.bias"),
    {"self_attn.indexer.weights_proj", W4W_ROLE_ROUTER, W4W_BIAS_NONE, 0, W4W_IN_HIDDEN,
     W4W_IN_IDX_HEADS, W4W_LAYERS_ALL, 0},
    DS_MLP,
    {"mlp.gate.e_score_correction_bias", W4W_ROLE_F32, W4W_BIAS_NONE, 0, W4W_IN_NONE,
     W4W_IN_EXPERTS, W4W_LAYERS_SPARSE, 0},
    DS_EXPERTS,
};

/* Gemma4TextDecoderLayer (transformers 5.24 modeling_gemma4.py; the
 * configurations the plan takes: no KV sharing, no k_eq_v attention, no
 * MoE block, layout.c): Gemma4TextAttention's q/k/v/o (`attention_bias`;
 * o_proj's input is num_attention_heads times the layer's own head_dim,
 * per_layer_config, w4w_layout_width), q_norm/k_norm over that head_dim
 * (v_norm has no weight); Gemma4TextMLP; the four Gemma 2 norms; with
 * per-layer inputs (hidden_size_per_layer_input > 0) per_layer_input_gate
 * [P, H] and per_layer_projection [H, P] (linears) and
 * post_per_layer_input_norm [H]; `layer_scalar` [1], a buffer that
 * multiplies the layer's whole output, kept F32 (its checkpoint value,
 * not a rounding of it). */
static const w4w_role gemma4_text_roles[] = {
    LIN("self_attn.q_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.k_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.v_proj", W4W_BIAS_OPTIONAL, W4W_IN_HIDDEN),
    LIN("self_attn.o_proj", W4W_BIAS_OPTIONAL, W4W_IN_HEADS),
    NORM("self_attn.q_norm", 0),
    NORM("self_attn.k_norm", 0),
    LIN("mlp.gate_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.up_proj", W4W_BIAS_NONE, W4W_IN_HIDDEN),
    LIN("mlp.down_proj", W4W_BIAS_NONE, W4W_IN_INTER),
    NORM("input_layernorm", 1),
    NORM("post_attention_layernorm", 1),
    NORM("pre_feedforward_layernorm", 1),
    NORM("post_feedforward_layernorm", 1),
    {"per_layer_input_gate", W4W_ROLE_LINEAR, W4W_BIAS_NONE, 0, W4W_IN_HIDDEN, W4W_IN_G4_PLE,
     W4W_LAYERS_ALL, W4W_IN_G4_PLE},
    {"per_layer_projection", W4W_ROLE_LINEAR, W4W_BIAS_NONE, 0, W4W_IN_G4_PLE, W4W_IN_HIDDEN,
     W4W_LAYERS_ALL, W4W_IN_G4_PLE},
    {"post_per_layer_input_norm", W4W_ROLE_NORM, W4W_BIAS_NONE, 1, W4W_IN_NONE, W4W_IN_NONE,
     W4W_LAYERS_ALL, W4W_IN_G4_PLE},
    {"layer_scalar", W4W_ROLE_F32, W4W_BIAS_NONE, 0, W4W_IN_NONE, W4W_IN_ONE, W4W_LAYERS_ALL, 0},
};

/* Gemma4TextModel's per-layer inputs: embed_tokens_per_layer
 * [vocab_size_per_layer_input, L * P] is an embedding table (rows looked
 * up by token, as embed_tokens); per_layer_model_projection [L * P, H] a
 * model-level linear the format's layer files and head cannot hold;
 * per_layer_projection_norm [P]. All three F16 in embed.safetensors. */
static const w4w_global gemma4_text_globals[] = {
    {"model.embed_tokens_per_layer.weight", "embed_tokens_per_layer.weight", 2, W4W_IN_G4_VOCAB,
     W4W_IN_G4_LP, W4W_IN_G4_PLE},
    {"model.per_layer_model_projection.weight", "per_layer_model_projection.weight", 2,
     W4W_IN_G4_LP, W4W_IN_HIDDEN, W4W_IN_G4_PLE},
    {"model.per_layer_projection_norm.weight", "per_layer_projection_norm.weight", 1,
     W4W_IN_G4_PLE, W4W_IN_NONE, W4W_IN_G4_PLE},
};

const w4w_global *w4w_arch_globals(const w4w_arch *a, size_t *n)
{
    *n = 0;
    if (a && strcmp(a->model_type, "gemma4_text") == 0) {
        *n = N_OF(gemma4_text_globals);
        return gemma4_text_globals;
    }
    return NULL;
}

static const w4w_xfused llama4_xfused[] = {
    {"feed_forward.experts.gate_up_proj",
     {"feed_forward.experts.%d.gate_proj", "feed_forward.experts.%d.up_proj"},
     2,
     1,
     1},
    {"feed_forward.experts.down_proj", {"feed_forward.experts.%d.down_proj", NULL}, 1, 1, 1},
};

static const w4w_xfused *llama4_xfused_of(size_t *n)
{
    *n = N_OF(llama4_xfused);
    return llama4_xfused;
}

static const w4w_arch archs[] = {
    {"llama", "LlamaForCausalLM", 0, llama_roles, N_OF(llama_roles), W4W_MOE_NONE, NULL, NULL, 0},
    {"mistral", "MistralForCausalLM", 0, mistral_roles, N_OF(mistral_roles), W4W_MOE_NONE, NULL,
     NULL, 0},
    {"qwen2", "Qwen2ForCausalLM", 0, qwen2_roles, N_OF(qwen2_roles), W4W_MOE_NONE, NULL, NULL, 0},
    {"qwen3", "Qwen3ForCausalLM", 0, qwen3_roles, N_OF(qwen3_roles), W4W_MOE_NONE, NULL, NULL, 0},
    {"gemma", "GemmaForCausalLM", 1, gemma_roles, N_OF(gemma_roles), W4W_MOE_NONE, NULL, NULL, 0},
    {"gemma2", "Gemma2ForCausalLM", 1, gemma2_roles, N_OF(gemma2_roles), W4W_MOE_NONE, NULL, NULL,
     0},
    /* the text-only model; "gemma3" is the multimodal wrapper whose
     * config nests text_config */
    {"gemma3_text", "Gemma3ForCausalLM", 1, gemma3_roles, N_OF(gemma3_roles), W4W_MOE_NONE, NULL,
     NULL, 0},
    {"phi3", "Phi3ForCausalLM", 0, phi3_roles, N_OF(phi3_roles), W4W_MOE_NONE, NULL, phi3_fused,
     N_OF(phi3_fused)},
    {"mixtral", "MixtralForCausalLM", 0, mixtral_roles, N_OF(mixtral_roles), W4W_MOE_EVERY,
     "num_local_experts", NULL, 0},
    {"qwen2_moe", "Qwen2MoeForCausalLM", 0, qwen2_moe_roles, N_OF(qwen2_moe_roles), W4W_MOE_STEP,
     "num_experts", NULL, 0},
    {"qwen3_moe", "Qwen3MoeForCausalLM", 0, qwen3_moe_roles, N_OF(qwen3_moe_roles), W4W_MOE_STEP,
     "num_experts", NULL, 0},
    {"gpt_oss", "GptOssForCausalLM", 0, gpt_oss_roles, N_OF(gpt_oss_roles), W4W_MOE_EVERY,
     "num_local_experts", NULL, 0},
    {"deepseek_v2", "DeepseekV2ForCausalLM", 0, deepseek_v2_roles, N_OF(deepseek_v2_roles),
     W4W_MOE_FIRST_K, "n_routed_experts", NULL, 0},
    {"deepseek_v3", "DeepseekV3ForCausalLM", 0, deepseek_v3_roles, N_OF(deepseek_v3_roles),
     W4W_MOE_FIRST_K, "n_routed_experts", NULL, 0},
    /* issue 31 */
    {"glm4_moe", "Glm4MoeForCausalLM", 0, glm4_moe_roles, N_OF(glm4_moe_roles), W4W_MOE_FIRST_K,
     "n_routed_experts", NULL, 0},
    {"minimax_m2", "MiniMaxM2ForCausalLM", 0, minimax_m2_roles, N_OF(minimax_m2_roles),
     W4W_MOE_EVERY, "num_local_experts", NULL, 0},
    {"deepseek_v32", "DeepseekV32ForCausalLM", 0, deepseek_v32_roles, N_OF(deepseek_v32_roles),
     W4W_MOE_FIRST_K, "n_routed_experts", NULL, 0},
    /* issue 31: smollm3, llama4, gemma4 */
    {"smollm3", "SmolLM3ForCausalLM", 1, smollm3_roles, N_OF(smollm3_roles), W4W_MOE_NONE, NULL,
     NULL, 0},
    {"llama4_text", "Llama4ForCausalLM", 0, llama4_text_roles, N_OF(llama4_text_roles),
     W4W_MOE_LIST, "num_local_experts", NULL, 0},
    {"qwen3_next", "Qwen3NextForCausalLM", 0, qwen3_next_roles, N_OF(qwen3_next_roles),
     W4W_MOE_STEP, "num_experts", NULL, 0},
    {"qwen3_5_text", "Qwen3_5ForCausalLM", 0, qwen3_5_roles, N_OF(qwen3_5_roles), W4W_MOE_NONE,
     NULL, NULL, 0},
    {"qwen3_5_moe_text", "Qwen3_5MoeForCausalLM", 0, qwen3_5_moe_roles, N_OF(qwen3_5_moe_roles),
     W4W_MOE_EVERY, "num_experts", NULL, 0},
    {"gemma4_text", "Gemma4ForCausalLM", 1, gemma4_text_roles, N_OF(gemma4_text_roles),
     W4W_MOE_NONE, NULL, NULL, 0},
};

/* Kept equal to the table above (tests/test_writer.c checks it). */
const char *const w4w_arch_names[] = {
    "llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3",
    "mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss", "deepseek_v2", "deepseek_v3",
    /* issue 31 */
    "glm4_moe", "minimax_m2", "deepseek_v32",
    /* issue 31: smollm3, llama4, gemma4 */
    "smollm3", "llama4_text",
    "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "gemma4_text", NULL,
};

size_t w4w_arch_count(void)
{
    return N_OF(archs);
}

const w4w_arch *w4w_arch_find(const char *model_type)
{
    size_t i;
    if (!model_type)
        return NULL;
    for (i = 0; i < N_OF(archs); i++)
        if (strcmp(archs[i].model_type, model_type) == 0)
            return &archs[i];
    return NULL;
}

const w4w_role *w4w_arch_role(const w4w_arch *a, const char *path)
{
    size_t i;
    for (i = 0; a && path && i < a->n_roles; i++)
        if (strcmp(a->roles[i].path, path) == 0)
            return &a->roles[i];
    return NULL;
}

int w4w_role_is_expert(const w4w_role *r)
{
    return strstr(r->path, "%d") != NULL;
}

int w4w_role_path(const w4w_role *r, int64_t e, char *buf, size_t len)
{
    const char *m = strstr(r->path, "%d");
    int n = m ? snprintf(buf, len, "%.*s%lld%s", (int)(m - r->path), r->path, (long long)e, m + 2)
              : snprintf(buf, len, "%s", r->path);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int w4w_role_match(const w4w_role *r, const char *path, size_t plen, int64_t *e)
{
    const char *m = strstr(r->path, "%d"), *s;
    size_t pre, suf;
    int64_t v = 0;
    if (!m)
        return strlen(r->path) == plen && strncmp(r->path, path, plen) == 0;
    pre = (size_t)(m - r->path);
    suf = strlen(m + 2);
    if (plen < pre + suf + 1 || strncmp(path, r->path, pre) != 0 ||
        strncmp(path + plen - suf, m + 2, suf) != 0)
        return 0;
    /* decimal without leading zeros, as PyTorch's ModuleList names them */
    for (s = path + pre; s < path + plen - suf; s++) {
        if (*s < '0' || *s > '9' || (s == path + pre && *s == '0' && s + 1 < path + plen - suf) ||
            v > 100000000)
            return 0;
        v = v * 10 + (*s - '0');
    }
    *e = v;
    return 1;
}
