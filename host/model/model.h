/*
 * quantbridge host — the CPU reference forward pass of a decoder
 * (docs/forward.md): the internal interface of forward_config.c,
 * forward_weights.c, forward_ops.c, forward_model.c, forward_check.c and
 * cmd_forward.c.
 *
 *   forward_config.c   config.json -> qbh_fwd_cfg (architecture, sizes,
 *                      rope, sliding window); refuses what it cannot run
 *   forward_weights.c  the weights of an open model: dense rows through
 *                      its reader, or the packed W4A16 linears through
 *                      libquantbridge-w4a16 (qb_w4a16_gemm_cpu)
 *   forward_ops.c      RMSNorm, rotary embedding, causal attention,
 *                      activations, soft-capping
 *   forward_mla.c      DeepSeek-V2/V3 multi-head latent attention
 *   forward_route.c    DeepSeek-V2/V3 expert routing
 *   forward_gptoss.c   gpt-oss's expert block (fused experts, clamped SwiGLU)
 *   forward_model.c    the decoder, layer by layer (dense or expert MLPs)
 *   forward_check.c    verify's model check: KL, top-1, logits cosine
 *   cmd_forward.c      `quantbridge forward`
 *
 * Numerics: activations are stored as float32 between operations; every
 * sum (dot products of the dense linears, norms, softmax, attention)
 * runs in double. The W4A16 linears run the kernel's own numerics (fp16
 * input and output, fp32 accumulation: qb_w4a16.h).
 */
#ifndef QBH_FORWARD_H
#define QBH_FORWARD_H

#include "qbh.h"

struct qb_w4a16_model;
struct qb_w4a16_cuda_session;

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

/* DeepSeek routing rules (docs/forward.md, "DeepSeek routing"). */
typedef enum qbh_ds_route {
    QBH_DS_GREEDY = 1,       /* V2: softmax, top-k over all experts */
    QBH_DS_GROUP_GREEDY,     /* V2 group_limited_greedy: softmax, groups by their max */
    QBH_DS_NOAUX_TC          /* V3: sigmoid + correction bias, groups by the sum of
                                their top 2, weights from the unbiased scores */
} qbh_ds_route;

/* What the forward pass needs from config.json. */
typedef struct qbh_fwd_cfg {
    char arch[32];            /* model_type (forward_config.c lists those run) */
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
} qbh_fwd_cfg;

/* Parses `config_json` (the model's config.json text; `what` names it in
 * messages) into *c. QB_E_UNSUPPORTED naming the architecture (model_type)
 * or the rope scaling type when the forward pass cannot run it;
 * QB_E_FORMAT naming the key when a needed key is missing or not a
 * positive number, or sizes disagree (heads * head_dim, kv heads dividing
 * heads). Pure; thread-safe. */
qb_status qbh_fwd_cfg_parse(const char *what, const char *config_json, qbh_fwd_cfg *c);

/* Inverse rotary frequencies of c (rot_dim / 2 doubles into inv[]),
 * after the configured scaling (linear, llama3, yarn); local: those of
 * gemma3's sliding layers (rope_local_theta, unscaled). Pure. */
void qbh_fwd_rope_inv_freq(const qbh_fwd_cfg *c, int local, double *inv);
/* The window layer L attends with: c->sliding_window or 0. Pure. */
int64_t qbh_fwd_layer_window(const qbh_fwd_cfg *c, int64_t L);
/* 1 when layer L runs the experts (c->moe and not a dense layer). Pure. */
int qbh_fwd_layer_moe(const qbh_fwd_cfg *c, int64_t L);

/* ---- forward_gemm.c ------------------------------------------------------- */

/* Columns of a widened row: K rounded up to a multiple of 4. Pure. */
int64_t qbh_fwd_gemm_kp(int64_t K);
/* dst[rows][qbh_fwd_gemm_kp(K)] = src[rows][K] as double, the padding
 * columns 0. Pure. */
void qbh_fwd_gemm_widen(const float *src, int64_t rows, int64_t K, double *dst);
/* y[m * ldy + r] = sum_c xd[m][c] * w[r][c] for m < M, r < n: xd widened
 * (qbh_fwd_gemm_widen) from K columns, w float rows [n][K]; products exact
 * in double, each output summed in one fixed order (4 lanes over the
 * columns in order, then (l0 + l1) + (l2 + l3)), whatever the tiling,
 * thread count or instruction set; rounded to float once. Pure;
 * thread-safe on disjoint outputs. */
void qbh_fwd_gemm(const double *xd, int64_t M, int64_t K, const float *w, int64_t n, float *y,
                  int64_t ldy);
/* qbh_fwd_gemm on the portable path whatever the CPU (tests compare the
 * two: the same results bit for bit). */
void qbh_fwd_gemm_portable(const double *xd, int64_t M, int64_t K, const float *w, int64_t n,
                           float *y, int64_t ldy);

/* ---- forward_weights.c ---------------------------------------------------- */

/* A hook on every weight a pass reads (verify's baseline model,
 * forward_check.c): fn is called on each block of rows read through the
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

/* The weights of one open model. */
typedef struct qbh_fwd_weights {
    qbh_source *src;              /* not owned */
    const qbh_fwd_filter *filter; /* not owned; NULL: the values as read */
    struct qb_w4a16_model *w4;    /* owned; NULL: every linear from dense rows */
    int tied;                     /* the config ties the head to the embedding */
    double lin_seconds;           /* wall time spent in qbh_fwd_linear */
    uint64_t lin_bytes;           /* weight bytes those products read (packed +
                                     scales for W4A16, float32 rows for dense) */
    uint64_t lin_w4;              /* how many ran through qb_w4a16_gemm_cpu */
    double w4_seconds;            /* ... and the time and packed + scales bytes */
    uint64_t w4_bytes;            /*     of those alone */
    struct qb_w4a16_cuda_session *cuda; /* owned; non-NULL: the W4A16 linears
                                     run on the GPU (qbh_fwd_set_device) */
} qbh_fwd_weights;

/* Where the W4A16 linears run (`forward --device`). */
typedef enum qbh_fwd_device {
    QBH_FWD_CPU = 0,  /* qb_w4a16_gemm_cpu on the host pool */
    QBH_FWD_CUDA      /* qb_w4a16_cuda_session_gemm on CUDA device 0 */
} qbh_fwd_device;

/* Sets the device of the qbh_forward calls that follow (process-wide; the
 * default is QBH_FWD_CPU, which verify's model check keeps). Main thread,
 * never while a pass runs. */
void qbh_fwd_set_device(qbh_fwd_device d);

/* Whether d can run here: QB_OK, or QB_E_UNSUPPORTED with the message
 * "--device cuda: this build has no CUDA" (built without the CUDA kernels)
 * or "--device cuda: no CUDA device (...)" (the CUDA runtime's reason).
 * Opens and closes a CUDA session to find out. Main thread. */
qb_status qbh_fwd_device_check(qbh_fwd_device d);

/* Binds w to the open source s; when s was read by the sm86-w4a16 reader,
 * also opens s->path with libquantbridge-w4a16 so that its linears run on
 * the packed weights. QB_E_* from qb_w4a16_open with its message naming
 * the file. With the device QBH_FWD_CUDA, also opens the CUDA session:
 * the errors of qbh_fwd_device_check, and QB_E_UNSUPPORTED naming the
 * model when it is not a W4A16 directory (only packed linears run on the
 * GPU). Free with qbh_fwd_weights_close. Main thread. */
qb_status qbh_fwd_weights_open(qbh_source *s, qbh_fwd_weights *w);
/* qbh_fwd_weights_open with a filter (not NULL): every weight, the packed
 * linears of a W4A16 directory too, is read as dense rows through it, on
 * the CPU whatever the device. */
qb_status qbh_fwd_weights_open_filtered(qbh_source *s, const qbh_fwd_filter *filter,
                                        qbh_fwd_weights *w);
void qbh_fwd_weights_close(qbh_fwd_weights *w);

/* Rows row0 .. row0 + n of tensor idx of w's model into out, through the
 * reader and then w's filter (`as` as qbh_fwd_filter says; NULL: the
 * tensor's own name). The reader's error or the filter's. Thread-safe as
 * the reader and the filter. */
qb_status qbh_fwd_read_rows(qbh_fwd_weights *w, const char *as, size_t idx, int64_t row0,
                            int64_t n, float *out);

/* y[M][N] = x[M][K] . W^T (+ bias when the model has one) for the linear
 * `path` ("self_attn.q_proj", "mlp.down_proj") of decoder layer `layer`,
 * or the head (layer -1, path "lm_head": lm_head.weight, or the embedding
 * when w->tied and the model has no lm_head.weight). Dense: W is read in row blocks through the
 * reader (never whole), products in double. W4A16: qb_w4a16_gemm_cpu on
 * the packed rows, one row block per pool item, or with w->cuda the whole
 * product through qb_w4a16_cuda_session_gemm (QB_E_INTERNAL naming the
 * linear on a CUDA error). QB_E_NOT_FOUND /
 * QB_E_MISMATCH naming the tensor and its shape, a reader's error,
 * QB_E_NOMEM. Main thread; uses the pool. */
qb_status qbh_fwd_linear(qbh_fwd_weights *w, int64_t layer, const char *path, const float *x,
                         int64_t M, int64_t K, float *y, int64_t N);

/* The n floats of the 1-D tensor `name` (a norm weight) into out.
 * QB_E_NOT_FOUND / QB_E_MISMATCH naming it. Thread-safe as the reader. */
qb_status qbh_fwd_vector(qbh_fwd_weights *w, const char *name, float *out, int64_t n);

/* Rows tokens[0..n) of model.embed_tokens.weight into out[n][hidden].
 * QB_E_RANGE naming a token id outside [0, vocab). */
qb_status qbh_fwd_embed(qbh_fwd_weights *w, const int64_t *tokens, size_t n, int64_t hidden,
                        float *out);

/* ---- forward_ops.c -------------------------------------------------------- */

/* x[M][n] = RMSNorm(x) * (offset + w), in place: sums in double; offset
 * 1 for the gemma family's (1 + w), else 0. */
void qbh_fwd_rmsnorm(float *x, int64_t M, int64_t n, const float *w, double eps, double offset);
/* Rotates q/k heads in place: x[T][n_heads * head_dim], position t = row:
 * the first rot_dim dimensions of each head, their halves paired (the
 * Hugging Face rotate_half layout); the others pass unchanged. */
void qbh_fwd_rope(float *x, int64_t T, int64_t n_heads, int64_t head_dim, int64_t rot_dim,
                  const double *inv);
/* Rotates rot_dim dimensions starting at `off` in each of the T * n_heads
 * vectors x + (t * n_heads + h) * stride, position t = row: interleave
 * rotates the pairs (2i, 2i+1) in place (DeepSeek's layout), else the
 * halves (i, i + rot_dim/2); cos and sin are multiplied by `factor`
 * (yarn's attention factor, 1 otherwise). */
void qbh_fwd_rope_ex(float *x, int64_t T, int64_t n_heads, int64_t stride, int64_t off,
                     int64_t rot_dim, const double *inv, int interleave, double factor);
/* out[T][nh * hd] = causal softmax(softcap(scale * q k^T)) v per head, kv
 * head h / (nh / nkv); softcap 0: none; window > 0 limits each query to
 * the `window` latest positions (itself included). Heads run on the
 * pool. QB_E_NOMEM. */
qb_status qbh_fwd_attention(const float *q, const float *k, const float *v, int64_t T,
                            int64_t nh, int64_t nkv, int64_t hd, int64_t window, double scale,
                            double softcap, float *out);
/* qbh_fwd_attention with gpt-oss's per-head sinks[nh] (NULL: none): each
 * head's softmax denominator gains exp(sinks[h]), which weights no value
 * (docs/forward.md, "gpt-oss"). */
qb_status qbh_fwd_attention_sinks(const float *q, const float *k, const float *v, int64_t T,
                                  int64_t nh, int64_t nkv, int64_t hd, int64_t window,
                                  double scale, double softcap, const float *sinks, float *out);
/* g[i] = silu(g[i]) * u[i] for i < n. */
void qbh_fwd_silu_mul(float *g, const float *u, size_t n);
/* g[i] = gelu_tanh(g[i]) * u[i] (gelu_pytorch_tanh). */
void qbh_fwd_gelu_tanh_mul(float *g, const float *u, size_t n);
/* x[i] = cap * tanh(x[i] / cap) for i < n. */
void qbh_fwd_softcap(float *x, size_t n, double cap);

/* ---- forward_mla.c -------------------------------------------------------- */

/* DeepSeek-V2/V3 multi-head latent attention of layer L (c->mla) on the
 * normalised rows h[T][hidden] into out[T][hidden] (after o_proj), with
 * the inverse frequencies inv (qbh_fwd_rope_inv_freq). Allocates its
 * activations per call. Errors: a missing/mis-shaped tensor named,
 * QB_E_NOMEM. Main thread; uses the pool. */
qb_status qbh_fwd_mla(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const float *h,
                      int64_t T, const double *inv, float *out);

/* ---- forward_route.c ------------------------------------------------------ */

/* DeepSeek-V2/V3 routing (c->moe == QBH_MOE_DEEPSEEK): from the router
 * logits r[T][E] (and, for QBH_DS_NOAUX_TC, the correction bias[E]; NULL
 * otherwise) fills wt[T][E] with each token's weight of each expert, 0
 * for the experts not chosen (or chosen with a score of 0). Probabilities
 * in double; ties go to the lower index. QB_E_NOMEM (message set).
 * Thread-safe. */
qb_status qbh_fwd_route_deepseek(const qbh_fwd_cfg *c, const float *r, const float *bias,
                                 int64_t T, double *wt);

/* ---- forward_gptoss.c ----------------------------------------------------- */

/* gpt-oss's expert block of layer L (c->moe == QBH_MOE_GPTOSS) on the
 * normalised rows h[T][hidden] into out[T][hidden] (docs/forward.md,
 * "gpt-oss"): router with bias, top_k then softmax over those, each
 * chosen expert's clamped SwiGLU on its fused [in, out] weights, read one
 * row block of that expert at a time. Errors: a missing/mis-shaped tensor
 * named, a reader's error, QB_E_NOMEM. Main thread; uses the pool. */
qb_status qbh_fwd_gptoss_moe(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const float *h,
                             int64_t T, float *out);

/* ---- forward_model.c ------------------------------------------------------ */

/* Runs the decoder of the open model on tokens[0..n) and returns
 * *logits [n][cfg.vocab] (qbh_free) and *vocab. Memory: the activations
 * of n tokens and one row block of one weight per thread, whatever the
 * number of layers. Errors: those of qbh_fwd_cfg_parse (the architecture
 * named), a missing/mis-shaped tensor named, QB_E_CANCELLED. Main
 * thread; uses the pool. */
qb_status qbh_forward(qbh_source *s, const int64_t *tokens, size_t n, float **logits,
                      int64_t *vocab);
/* qbh_forward with every weight read through `filter` (not NULL;
 * qbh_fwd_weights_open_filtered): the same structure, other values. Its
 * errors as well. */
qb_status qbh_forward_filtered(qbh_source *s, const qbh_fwd_filter *filter,
                               const int64_t *tokens, size_t n, float **logits, int64_t *vocab);

#endif /* QBH_FORWARD_H */
