/*
 * Test fixtures: a tiny Hugging Face checkpoint (llama, mistral, qwen2,
 * qwen3, gemma2, and the MLA + MoE deepseek_v2 / deepseek_v3) from known
 * deterministic weights.
 *
 * Every tensor's values depend only on (seed, tensor name), never on the
 * order of writing or on sharding, so a test can recompute exactly what a
 * reader must return: qbt_hfd_fill() then qbt_hfd_round() for the tensor's
 * storage dtype (qbt_hfd_storage: the spec's dtype, except a DeepSeek
 * router's e_score_correction_bias, always F32).
 * Not thread-safe per spec object; the functions keep no global state.
 */
#ifndef GEN_HF_DENSE_H
#define GEN_HF_DENSE_H

#include <stddef.h>
#include <stdint.h>

typedef struct qbt_hfd_spec {
    const char *arch;  /* "llama", "mistral", "qwen2", "qwen3", "gemma2" */
    const char *dtype; /* "bf16", "f16", "f32" */
    int layers, hidden, intermediate, vocab;
    int heads, kv_heads, head_dim; /* 0: derived from hidden */
    int tied;                      /* tie_word_embeddings: no lm_head.weight */
    int shards;                    /* 1: model.safetensors; N > 1: index + N files */
    uint64_t seed;   /* with QBT_HFD_HEAVY set: outlier-heavy weights */
    /* deepseek_v2 / deepseek_v3 only (ignored by the other architectures;
     * appended so positional initialisers stay valid). 0 picks the default
     * qbt_hfd_spec_check derives: q_lora_rank = hidden (v3; v2: none),
     * kv_lora_rank = hidden / 2, qk_rope_head_dim 16, qk_nope_head_dim 32,
     * v_head_dim 32, 8 routed experts, 1 shared (v2: 2), moe_intermediate =
     * hidden / 2, first_k_dense = 1 (0 with one layer), 2 experts per token,
     * n_group 2 / topk_group 1 (v2: 1 / 1), no MTP layer. */
    int q_lora_rank;          /* -1: no q LoRA, q_proj instead (DeepSeek-V2-Lite) */
    int kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    int n_routed_experts, n_shared_experts, moe_intermediate; /* shared -1: none */
    int first_k_dense;        /* -1: 0 dense layers */
    int experts_per_tok, n_group, topk_group;
    int mtp_layers;           /* num_nextn_predict_layers: model.layers.{layers + i}.*; -1: 0 */
    /* Malformed variants for tests (NULL: none): "kv_b_shape" (kv_b_proj
     * reads kv_lora_rank + 8 columns), "no_router_bias" (the first MoE
     * layer lacks e_score_correction_bias), "extra_expert" (the first MoE
     * layer holds n_routed_experts + 1 experts; config.json says
     * n_routed_experts). */
    const char *defect;
} qbt_hfd_spec;

/* Seed flag: linears and embeddings become outlier-heavy (qbt_hfd_fill).
 * A flag bit rather than a field so positional spec initialisers stay
 * valid. */
#define QBT_HFD_HEAVY (UINT64_C(1) << 63)

typedef enum qbt_hfd_kind {
    QBT_HFD_LINEAR = 0, /* [out, in] projection: normal * 0.02, outlier columns x5;
                           QBT_HFD_HEAVY: Student-t (3 dof) * 0.02, 1 column in 128 x16 */
    QBT_HFD_EMBED = 1,  /* [vocab, hidden]: normal * 0.02, outlier columns x5 */
    QBT_HFD_NORM = 2,   /* [n]: 1 + 0.1 * normal (gemma2: 0.1 * normal, used as 1 + w) */
    QBT_HFD_BIAS = 3,   /* [n]: 0.02 * normal */
    QBT_HFD_F32 = 4     /* [n]: 0.02 * normal, stored F32 whatever the dtype
                           (DeepSeek-V3's mlp.gate.e_score_correction_bias) */
} qbt_hfd_kind;

typedef struct qbt_hfd_tensor {
    char name[96];
    int n_dims; /* 1 or 2 */
    int64_t dims[2];
    qbt_hfd_kind kind;
} qbt_hfd_tensor;

/* Fills in derived fields (heads, kv_heads, head_dim) and checks the spec.
 * Returns 0, or -1 with a message on stderr. */
int qbt_hfd_spec_check(qbt_hfd_spec *s);

/* The tensor list of the checkpoint in writing order (embedding, layers,
 * final norm, head). *out is malloc'd. Returns 0 or -1. */
int qbt_hfd_tensors(const qbt_hfd_spec *s, qbt_hfd_tensor **out, size_t *n);

/* Number of elements of t. */
size_t qbt_hfd_numel(const qbt_hfd_tensor *t);

/* The exact float32 values (before storage rounding) of t, qbt_hfd_numel
 * of them, row-major. Deterministic in (s->seed, t->name, s->arch). */
void qbt_hfd_fill(const qbt_hfd_spec *s, const qbt_hfd_tensor *t, float *out);

/* The value a reader returns for v stored as dtype ("bf16", "f16",
 * "f32"): round to nearest even, then back to float32. */
float qbt_hfd_round(const char *dtype, float v);

/* The dtype t is stored as ("bf16", "f16", "f32"): s->dtype, or "f32"
 * for QBT_HFD_F32 tensors. Never NULL. */
const char *qbt_hfd_storage(const qbt_hfd_spec *s, const qbt_hfd_tensor *t);

/* Writes the checkpoint into dir (created if missing): config.json,
 * generation_config.json, tokenizer_config.json, safetensors file(s) and,
 * when sharded, model.safetensors.index.json. Returns 0 or -1. */
int qbt_hfd_write(const qbt_hfd_spec *s, const char *dir);

#endif /* GEN_HF_DENSE_H */
