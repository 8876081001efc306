/*
 * sm86-w4a16 — tensor roles of each supported architecture (data only).
 *
 * Paths and bias presence follow the Hugging Face modeling files
 * (transformers models/<arch>/modeling_<arch>.py): LlamaAttention and
 * LlamaMLP take `attention_bias` / `mlp_bias` (off by default), Qwen2Attention
 * always has q/k/v biases and none on o_proj, Qwen3Attention adds q_norm and
 * k_norm over head_dim, Gemma2DecoderLayer adds pre/post feed-forward norms.
 * tie_default is the default of `tie_word_embeddings` in each
 * configuration_<arch>.py, used only when the config omits the key.
 *
 * Adding an architecture (gemma, gemma3, phi3, MoE ...) is adding a table.
 */
#include "w4w.h"

#include <string.h>

/* Input widths: q/k/v/gate/up read the hidden state, o_proj the
 * concatenated heads, down_proj the MLP's intermediate activations. */
#define LIN(p, b, in) { p, W4W_ROLE_LINEAR, b, 0, in }
#define NORM(p, hs) { p, W4W_ROLE_NORM, W4W_BIAS_NONE, hs, W4W_IN_NONE }
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

static const w4w_arch archs[] = {
    {"llama", "LlamaForCausalLM", 0, llama_roles, N_OF(llama_roles)},
    {"mistral", "MistralForCausalLM", 0, mistral_roles, N_OF(mistral_roles)},
    {"qwen2", "Qwen2ForCausalLM", 0, qwen2_roles, N_OF(qwen2_roles)},
    {"qwen3", "Qwen3ForCausalLM", 0, qwen3_roles, N_OF(qwen3_roles)},
    {"gemma2", "Gemma2ForCausalLM", 1, gemma2_roles, N_OF(gemma2_roles)},
};

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
