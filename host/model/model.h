/*
 * quantbridge model library (host/model, qbh_model) — the CPU reference
 * forward pass of a decoder (docs/forward.md), written against the SDK
 * only, as a writer sees a model: the services come from a qb_host table,
 * the weights from a qb_model_src, and the linears a model's own format
 * can run better from a linear backend (qb_linear_backend.h) that the
 * caller opened over the model. The library names no format and links no
 * kernel library: the commands (host/cli) wire the kernels' backends in.
 * Its files and private interface: fwd.h.
 *
 * Numerics: activations are stored as float32 between operations; every
 * sum (dot products of the dense linears, norms, softmax, attention)
 * runs in double. Linears a backend runs follow its own numerics (the
 * W4A16 backends: fp16 input and output, fp32 accumulation: qb_w4a16.h).
 */
#ifndef QBH_MODEL_H
#define QBH_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <quantbridge/quantbridge.h>
#include <quantbridge/qb_linear_backend.h>

/* Rope scaling kinds read from config.json "rope_scaling". */
typedef enum qbh_rope_kind {
    QBH_ROPE_DEFAULT = 0,
    QBH_ROPE_LINEAR,   /* inv_freq / factor */
    QBH_ROPE_LLAMA3,   /* the llama3 frequency-band rule */
    QBH_ROPE_YARN      /* YaRN ramp between interpolation and extrapolation
                          (DeepSeek-V2/V3, gpt-oss) */
} qbh_rope_kind;

#define QBH_MOE_MIXTRAL 1 /* block_sparse_moe.{gate, experts.E.w1/w2/w3} */
#define QBH_MOE_QWEN 2    /* mlp.{gate, experts.E.*_proj, shared_expert*} */
#define QBH_MOE_DEEPSEEK 3 /* mlp.{gate(+e_score_correction_bias), experts.E.*_proj,
                              shared_experts.*_proj} */
#define QBH_MOE_GPTOSS 4  /* mlp.{router(+bias), experts.{gate_up_proj, down_proj}(+_bias)}
                             fused [E, in, out] */
#define QBH_MOE_MINIMAX 5 /* block_sparse_moe.{gate, e_score_correction_bias, experts.E.w1/w2/w3}
                             routed as noaux_tc with one group (issue 31) */
/* issue 31: smollm3, llama4, gemma4 */
#define QBH_MOE_LLAMA4 6  /* feed_forward.{router, experts.{gate_up_proj, down_proj} fused
                             [E, in, out], shared_expert.*_proj} on moe_map's layers */

/* DeepSeek routing rules (docs/forward.md, "DeepSeek routing"). */
typedef enum qbh_ds_route {
    QBH_DS_GREEDY = 1,       /* V2: softmax, top-k over all experts */
    QBH_DS_GROUP_GREEDY,     /* V2 group_limited_greedy: softmax, groups by their max */
    QBH_DS_NOAUX_TC          /* V3: sigmoid + correction bias, groups by the sum of
                                their top 2, weights from the unbiased scores */
} qbh_ds_route;

/* What the forward pass needs from config.json. */
typedef struct qbh_fwd_cfg {
    char arch[32]; /* model_type (config.c lists those run) */
    int64_t hidden, intermediate, n_layers, n_heads, n_kv_heads, head_dim, vocab;
    double rms_eps, rope_theta;
    qbh_rope_kind rope_kind;
    double rope_factor, rope_low_freq, rope_high_freq, rope_orig_max;
    int64_t sliding_window;   /* 0: full causal attention */
    int64_t sliding_from;     /* first layer the window applies to (qwen2/3
                                 max_window_layers; 0 for mistral) */
    int qk_norm;              /* qwen3, gemma3: RMSNorm of q and k per head */
    /* The gemma family (docs/forward.md, "Architectures"). */
    int gemma;                /* embedding * sqrt(hidden), norms scale by (1 + w),
                                 gelu-tanh MLP */
    int sandwich;             /* gemma2/3: post-attention, pre/post-feedforward norms */
    double attn_scale;        /* score scale: head_dim^-1/2, or gemma2/3's
                                 query_pre_attn_scalar^-1/2 */
    double attn_softcap, final_softcap; /* cap * tanh(x / cap); 0: none */
    double rope_local_theta;  /* gemma3: rope base of the sliding layers (no
                                 scaling there); 0: same as the others */
    uint64_t sliding_map[16]; /* bit L: layer L uses the window (layers < 1024) */
    int has_sliding_map;      /* 1: sliding_map decides, not sliding_from */
    int64_t rot_dim;          /* dimensions rotated per head (phi3's
                                 partial_rotary_factor; else head_dim) */
    /* Mixture of experts (docs/forward.md, "Architectures"). */
    int moe;                  /* 0 dense, or QBH_MOE_* */
    int64_t n_experts, top_k, moe_intermediate, shared_intermediate;
    int norm_topk;            /* renormalise the top-k routing weights */
    int64_t sparse_step;      /* qwen: MoE on layers with (L + 1) % step == 0 */
    uint64_t mlp_only[16];    /* qwen: bit L: layer L keeps the dense MLP */
    int tied;                 /* tie_word_embeddings */
    int64_t bos;              /* bos_token_id, -1 when absent */
    /* YaRN (rope_kind QBH_ROPE_YARN): transformers' _compute_yarn_parameters. */
    double rope_beta_fast, rope_beta_slow;
    int rope_truncate;        /* floor/ceil the correction range (default 1) */
    double rope_attn_factor;  /* multiplies cos and sin; 1 unless yarn */
    double rope_mscale_all_dim; /* rope_scaling's mscale_all_dim (0: none): DeepSeek's
                                   softmax scale gains mscale(factor, it)^2 */
    /* DeepSeek-V2/V3 multi-head latent attention (docs/forward.md, "MLA");
     * then head_dim = qk_nope + qk_rope, n_kv_heads = n_heads and rot_dim =
     * qk_rope. attn_scale includes yarn's mscale(mscale_all_dim)^2. */
    int mla;
    int64_t q_lora_rank;      /* 0: q_proj, else q_a_proj / q_a_layernorm / q_b_proj */
    int64_t kv_lora_rank, qk_nope, qk_rope, v_head_dim;
    int rope_interleave;      /* pairs (2i, 2i+1) rotate together, not (i, i + d/2) */
    /* DeepSeek MoE (moe QBH_MOE_DEEPSEEK): layers >= first_dense run the
     * experts; shared_intermediate = moe_intermediate * n_shared_experts. */
    qbh_ds_route ds_route;
    int64_t first_dense, n_group, topk_group;
    double routed_scale;      /* routed_scaling_factor */
    /* gpt-oss (moe QBH_MOE_GPTOSS): the clamped SwiGLU's swiglu_alpha and
     * swiglu_limit; attention has per-head sinks. */
    double glu_alpha, glu_limit;
    /* issue 31. MiniMax-M2: q_norm / k_norm over all heads' [n * head_dim]
     * at once (not per head). DeepSeek-V3.2: the indexer of its sparse
     * attention (docs/forward.md, "DeepSeek-V3.2 sparse attention"); 0: none. */
    int qk_norm_full;
    int64_t index_topk, index_head_dim, index_n_heads;
    /* NoPE layers (smollm3's and llama4's no_rope_layers: 0 = no rotation). */
    uint64_t nope_map[16];    /* bit L: layer L skips the rotation (layers < 1024) */
    /* llama4_text (moe QBH_MOE_LLAMA4; docs/forward.md, "Llama 4"): intermediate is
     * intermediate_size_mlp (dense layers), moe_intermediate intermediate_size
     * (experts and the shared expert). */
    uint64_t moe_map[16];     /* bit L: layer L runs the experts */
    uint64_t chunk_map[16];   /* bit L: layer L attends within attn_chunk blocks */
    int64_t attn_chunk;       /* attention_chunk_size */
    int l2_qk_norm;           /* use_qk_norm: weightless RMS norm of q, k on rope layers */
    double temp_scale, temp_floor; /* attn_temperature_tuning on NoPE layers: q *=
                                      1 + temp_scale * log1p(floor((t + 1) / temp_floor));
                                      temp_scale 0: off */
    /* gemma4_text (docs/forward.md, "Gemma 4"): index 0 the sliding layers,
     * 1 the full ones (their per_layer_config). */
    int gemma4;
    int64_t g4_ple;           /* hidden_size_per_layer_input; 0: none */
    int64_t g4_hd[2], g4_kv[2];
    double g4_theta[2], g4_prf[2], g4_factor[2];
    int g4_prop[2];           /* rope_type proportional (else default) */
    /* Qwen3-Next / Qwen3.5 hybrids (docs/forward.md, "Qwen3-Next"): layers
     * in linear_map run a gated DeltaNet (conv kernel lin_conv, lin_nk key
     * heads of lin_dk, lin_nv value heads of lin_dv), the others gated full
     * attention (q_proj holds each head's query then its output gate);
     * every RMSNorm but the DeltaNet's gated one scales by (1 + w). */
    int hybrid;
    uint64_t linear_map[16]; /* bit L: layer L is a linear-attention layer */
    int64_t lin_conv, lin_nk, lin_nv, lin_dk, lin_dv;
    int norm_plus1;          /* (1 + w) norms without the rest of gemma */
} qbh_fwd_cfg;

/* Parses `config_json` (the model's config.json text; `what` names the
 * model in messages) into *c, through h's strict JSON parser (qb_json.h:
 * a duplicate key, a number beyond a double, trailing commas... are
 * QB_E_FORMAT naming "what: config.json" and the byte). QB_E_UNSUPPORTED
 * naming the architecture (model_type) or the rope scaling type when the
 * forward pass cannot run it; QB_E_FORMAT naming the key when a needed key
 * is missing or not a positive number, or sizes disagree (heads *
 * head_dim, kv heads dividing heads). Errors through h. Thread-safe. */
qb_status qbh_fwd_cfg_parse(const qb_host *h, const char *what, const char *config_json,
                            qbh_fwd_cfg *c);

/* A hook on every weight a pass reads (verify's baseline model,
 * verify/baseline_model.c): fn is called on each block of rows read through the
 * reader, after the read, and may rewrite rows[n_rows][cols] in place.
 * `as` is the tensor the values stand for in the model's structure (the
 * head is "lm_head.weight" even when a tied model serves it from the
 * embedding), `t` the tensor read, rows row0 .. row0 + n_rows of its
 * [rows, cols] matrix view (qb_tensor_rows / qb_tensor_cols). Returns
 * QB_OK, or an error with the message set, which stops the pass. Called
 * from pool threads at once: fn must be thread-safe. */
typedef struct qbh_fwd_filter {
    qb_status (*fn)(void *ctx, const char *as, const qb_tensor_info *t, int64_t row0,
                    int64_t n_rows, float *rows);
    void *ctx;
} qbh_fwd_filter;

/* An observer of every linear's input (convert --calibration): fn is
 * called once per product computed from dense rows, before it, with the
 * tensor it multiplies (`t`, its index `index` in the model source; `as`
 * as qbh_fwd_filter says) and the input x[M][K] (K = the tensor's
 * columns). Products a linear backend runs are not observed. Returns QB_OK
 * or an error with the message set, which stops the pass. Called on the
 * pass's main thread, one call at a time. */
typedef struct qbh_fwd_observer {
    qb_status (*fn)(void *ctx, const char *as, const qb_tensor_info *t, size_t index,
                    const float *x, int64_t M, int64_t K);
    void *ctx;
} qbh_fwd_observer;

/* What one pass runs on. */
typedef struct qbh_fwd_model {
    const qb_host *host;          /* memory, errors, the thread pool, log
                                     lines and progress ("forward"), the
                                     cancel flag */
    const qb_model_src *src;      /* the model: config.json (info), tensors */
    qb_linear_backend *linears;   /* runs the linears it holds (not owned),
                                     or NULL: every linear from dense rows */
    const qbh_fwd_filter *filter; /* every weight read through it (then
                                     linears must be NULL), or NULL */
    const qbh_fwd_observer *observe; /* every dense product's input shown
                                     to it, or NULL */
    int no_head;                  /* 1: stop after the last layer (the
                                     observer has seen every decoder
                                     linear): no final norm, no head, and
                                     qbh_forward returns *logits NULL,
                                     *vocab 0 */
} qbh_fwd_model;

/* Runs the decoder of m on tokens[0..n) and returns *logits [n][vocab]
 * (m->host->alloc'd, the caller's) and *vocab (NULL and 0 with
 * m->no_head). Memory: the activations of
 * n tokens and one row block of one weight per thread, whatever the
 * number of layers. Errors (through m->host): those of qbh_fwd_cfg_parse
 * (the architecture named), a missing/mis-shaped tensor named
 * (QB_E_NOT_FOUND, QB_E_MISMATCH), a reader's, a backend's or the
 * filter's error, QB_E_CANCELLED. Main thread; uses the pool. */
qb_status qbh_forward(const qbh_fwd_model *m, const int64_t *tokens, size_t n, float **logits,
                      int64_t *vocab);

#endif /* QBH_MODEL_H */
