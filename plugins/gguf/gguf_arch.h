/*
 * GGUF reader — per-architecture rules: which llama.cpp architectures are
 * known, their Hugging Face model_type, and what llama.cpp's converter did
 * to their tensors (Q/K row permutation, Gemma's +1 on norms, phi3's fused
 * tensors, MoE naming). Also the hyper-parameters the tensor mapping needs.
 *
 * Facts: llama.cpp convert_hf_to_gguf.py (LlamaModel.permute/undo_permute,
 * GemmaModel/Gemma2Model/Gemma3Model norm shift, Phi3MiniModel,
 * Qwen2MoeModel), src/llama-model.cpp llama_model_rope_type; docs
 * docs/formats/gguf.md "Tensor names", "Q/K permutation". Internal to the gguf plugin.
 */
#ifndef GGUF_ARCH_H
#define GGUF_ARCH_H

#include "gguf_split.h"

enum {
    GGUF_A_LLAMA = 1u << 0,
    GGUF_A_QWEN2 = 1u << 1,
    GGUF_A_QWEN3 = 1u << 2,
    GGUF_A_QWEN2MOE = 1u << 3,
    GGUF_A_QWEN3MOE = 1u << 4,
    GGUF_A_GEMMA = 1u << 5,
    GGUF_A_GEMMA2 = 1u << 6,
    GGUF_A_GEMMA3 = 1u << 7,
    GGUF_A_PHI3 = 1u << 8,
    GGUF_A_DEEPSEEK2 = 1u << 9,
    GGUF_A_GPTOSS = 1u << 10,
    /* issue 31: smollm3, llama4, gemma4 */
    GGUF_A_LLAMA4 = 1u << 11,
    /* issue 31 (read only): qwen3next, qwen35, qwen35moe; glm4moe; minimax-m2 */
    GGUF_A_QWEN3NEXT = 1u << 12,
    GGUF_A_GLM4MOE = 1u << 13,
    GGUF_A_MINIMAXM2 = 1u << 14,
    /* issue 31 (read only): gemma4 */
    GGUF_A_GEMMA4 = 1u << 15
};

typedef struct gguf_arch {
    const char *gguf_name;  /* general.architecture */
    unsigned bit;           /* GGUF_A_* */
    int permute_qk;         /* LlamaModel.permute applied to q/k (NORM rope) */
    int norm_plus_one;      /* every HF "*norm.weight" stored as w + 1 */
    const char *hf_types;   /* space-separated HF model_type values written as this
                               architecture (convert_hf_to_gguf.py's registrations) */
} gguf_arch;

/* Hyper-parameters read from metadata ({arch}.* keys). -1 = absent. */
/* deepseek2 multi-head latent attention and routing (DeepseekV2Model
 * set_gguf_parameters; docs/formats/gguf.md "deepseek2"). -1 = absent. */
typedef struct gguf_mla {
    int64_t q_lora, kv_lora;     /* attention.q_lora_rank (-1: q_proj), kv_lora_rank */
    int64_t qk_nope, qk_rope;    /* per-head query/key widths without / with rope */
    int64_t v_head;              /* per-head value width */
    int64_t n_dense;             /* leading_dense_block_count */
    int64_t n_shared;            /* expert_shared_count */
    int64_t gating;              /* expert_gating_func: 1 softmax, 2 sigmoid */
    int64_t n_group, n_group_used; /* expert_group_count / expert_group_used_count */
} gguf_mla;

typedef struct gguf_hparams {
    const gguf_arch *arch;
    const char *model_type;    /* HF model_type after refinement (mistral, mixtral, ...) */
    const char *hf_class;      /* HF architectures[0] */
    int64_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, value_dim;
    int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    int64_t n_ctx, sliding_window, rope_dim;
    gguf_mla mla;              /* deepseek2 only */
    int64_t moe_step;          /* llama4: interleave_moe_layer_step (-1 absent) */
    /* issue 31 (read only). n_layer excludes the nextn_predict_layers
     * blocks appended after the decoder (MTP: glm4moe, deepseek32,
     * qwen3next/qwen35*), which the reader leaves out as transformers
     * does; n_nextn counts them (0 when absent). */
    int64_t n_nextn;
    /* qwen3next/qwen35/qwen35moe gated delta net (ssm.* keys): conv
     * kernel, key head width, key heads, value heads, value head width. */
    int64_t lin_conv, lin_dk, lin_nk, lin_nv, lin_dv;
    const uint8_t *lin_flags;  /* attention.recurrent_layers (a BOOL per block), or NULL */
    int64_t lin_interval;      /* full_attention_interval (4 when absent) */
    /* issue 31 (read only): gemma4. head_dim is the full layers' width
     * (attention.key_length); the sliding layers' is hd_swa
     * (key_length_swa); ple is embedding_length_per_layer_input (0: no
     * per-layer inputs); swa is attention.sliding_window_pattern, one BOOL
     * per block (true: sliding). */
    int64_t g4_hd_swa, g4_ple;
    const uint8_t *g4_swa;
} gguf_hparams;

/* The rules for a general.architecture value, or NULL when unknown. */
const gguf_arch *gguf_arch_find(const char *name);

/* The rules a writer uses for a Hugging Face model_type, or NULL when no
 * architecture lists it. Static data. */
const gguf_arch *gguf_arch_for_model_type(const char *model_type);

/* Reads general.architecture and the hyper-parameters from the metadata
 * shard, refines llama into mistral (attention.sliding_window present) or
 * mixtral (expert_count > 0), and checks what the mapping relies on
 * (heads divide the embedding, ...). deepseek2 becomes deepseek_v3
 * (sigmoid gating) or deepseek_v2 (softmax gating), with hp->mla filled
 * and n_head_kv = n_head, head_dim = qk_rope as transformers' configs
 * have them. Failure: QB_E_UNSUPPORTED for an
 * unknown architecture (named), QB_E_FORMAT for missing/invalid keys; the
 * message names the file and key. Pure; no allocation kept. */
qb_status gguf_arch_hparams(const qb_host *h, const gguf_model *m, gguf_hparams *hp);

/* issue 31: whether decoder layer l of a qwen3next/qwen35/qwen35moe file
 * is a linear-attention (gated delta net) layer: attention.recurrent_layers
 * when present, else every full_attention_interval-th layer is full
 * attention (llama.cpp's loader; Qwen3NextConfig's default). Pure. */
int gguf_arch_layer_linear(const gguf_hparams *hp, int64_t l);

/* Writes "{arch}.<suffix>" into buf (size n). */
void gguf_arch_key(const gguf_hparams *hp, const char *suffix, char *buf, size_t n);

#endif /* GGUF_ARCH_H */
