/*
 * quantbridge model library — its private interface (model.h is the
 * public one; nothing outside host/model includes this header).
 *
 *   config.c          config.json -> qbh_fwd_cfg (architecture, sizes,
 *                     rope, sliding window); refuses what it cannot run
 *   weights.c         the weights of one pass: dense rows through the
 *                     model source, the linears a backend holds through it
 *   gemm.c            the dense products (fixed summation order)
 *   ops.c             RMSNorm, rotary embedding, causal attention,
 *                     activations, soft-capping
 *   model.c           the pass: embedding, layers, final norm and head
 *   dense.c           the dense families (llama, mistral, qwen2/3, gemma,
 *                     phi3): attention block and dense MLP
 *   moe.c             the expert block of mixtral, qwen2/3-moe, DeepSeek
 *   deepseek.c        DeepSeek-V2/V3 multi-head latent attention
 *   deepseek_route.c  DeepSeek-V2/V3 expert routing (also GLM-4.5's, MiniMax-M2's)
 *   dsa.c             DeepSeek-V3.2's indexer: the keys its sparse attention keeps
 *   gptoss.c          gpt-oss's expert block (fused experts, clamped SwiGLU)
 *   llama4.c          Llama 4: chunked attention, L2 q/k norm, NoPE temperature,
 *                     sigmoid-scaled experts (issue 31)
 *   gemma4.c          Gemma 4's text decoder: per-layer inputs, per-type heads and
 *                     rope, v norm, layer scalars (issue 31)
 *   qwen3next.c       Qwen3-Next / Qwen3.5: gated DeltaNet and gated attention
 */
#ifndef QBH_FWD_H
#define QBH_FWD_H

#include <stdio.h>
#include <string.h>

#include "model.h"

/* Inverse rotary frequencies of c (rot_dim / 2 doubles into inv[]),
 * after the configured scaling (linear, llama3, yarn); local: those of
 * gemma3's sliding layers (rope_local_theta, unscaled). Pure. */
void qbh_fwd_rope_inv_freq(const qbh_fwd_cfg *c, int local, double *inv);
/* The window layer L attends with: c->sliding_window or 0. Pure. */
int64_t qbh_fwd_layer_window(const qbh_fwd_cfg *c, int64_t L);
/* 1 when layer L is a NoPE layer (c->nope_map): no rotation. Pure. */
int qbh_fwd_layer_nope(const qbh_fwd_cfg *c, int64_t L);
/* 1 when layer L runs the experts (c->moe and not a dense layer). Pure. */
int qbh_fwd_layer_moe(const qbh_fwd_cfg *c, int64_t L);

/* ---- gemm.c ----------------------------------------------------------------- */

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

/* ---- weights.c ------------------------------------------------------------ */

/* The weights of one pass (qbh_fwd_model) and what its products cost. */
typedef struct qbh_fwd_weights {
    const qb_host *h;             /* not owned */
    const qb_model_src *src;      /* not owned */
    const char *path;             /* src->source_path, for messages */
    const qbh_fwd_filter *filter; /* not owned; NULL: the values as read */
    const qbh_fwd_observer *observe; /* not owned; NULL: none */
    qb_linear_backend *lb;        /* not owned; NULL: every linear from dense rows */
    int tied;                     /* the config ties the head to the embedding */
    double lin_seconds;           /* wall time spent in qbh_fwd_linear */
    uint64_t lin_bytes;           /* weight bytes those products read (the
                                     backend's count, float32 rows for dense) */
    uint64_t lin_backend;         /* how many the backend ran */
    double be_seconds;            /* ... and the time and bytes */
    uint64_t be_bytes;            /*     of those alone */
} qbh_fwd_weights;

/* Binds w to m (qbh_fwd_model's preconditions asserted). Cannot fail. */
void qbh_fwd_weights_init(qbh_fwd_weights *w, const qbh_fwd_model *m);

/* The tensor info of index idx (from qbh_fwd_find / qbh_fwd_has). */
const qb_tensor_info *qbh_fwd_tensor(const qbh_fwd_weights *w, size_t idx);
/* Index of `name`: QB_E_NOT_FOUND naming it and the model when absent. */
qb_status qbh_fwd_find(const qbh_fwd_weights *w, const char *name, size_t *idx);
/* 1 when the model has `name` (its index in *idx), else 0. */
int qbh_fwd_has(const qbh_fwd_weights *w, const char *name, size_t *idx);

/* Rows row0 .. row0 + n of tensor idx of w's model into out, through the
 * reader and then w's filter (`as` as qbh_fwd_filter says; NULL: the
 * tensor's own name). The reader's error or the filter's. Thread-safe as
 * the reader and the filter. */
qb_status qbh_fwd_read_rows(qbh_fwd_weights *w, const char *as, size_t idx, int64_t row0, int64_t n,
                            float *out);

/* y[M][N] = x[M][K] . W^T (+ bias when the model has one) for the linear
 * `path` ("self_attn.q_proj", "mlp.down_proj") of decoder layer `layer`,
 * or the head (layer -1, path "lm_head": lm_head.weight, or the embedding
 * when w->tied and the model has no lm_head.weight). The backend's
 * product when it holds the linear; else W is read in row blocks through
 * the reader (never whole), products in double. QB_E_NOT_FOUND /
 * QB_E_MISMATCH naming the tensor and its shape, a reader's or the
 * backend's error, QB_E_NOMEM. Main thread; uses the pool. */
qb_status qbh_fwd_linear(qbh_fwd_weights *w, int64_t layer, const char *path, const float *x,
                         int64_t M, int64_t K, float *y, int64_t N);

/* The n floats of the 1-D tensor `name` (a norm weight) into out.
 * QB_E_NOT_FOUND / QB_E_MISMATCH naming it. Thread-safe as the reader. */
qb_status qbh_fwd_vector(qbh_fwd_weights *w, const char *name, float *out, int64_t n);

/* Rows tokens[0..n) of model.embed_tokens.weight into out[n][hidden].
 * QB_E_RANGE naming a token id outside [0, vocab). */
qb_status qbh_fwd_embed(qbh_fwd_weights *w, const int64_t *tokens, size_t n, int64_t hidden,
                        float *out);

/* n * size zeroed bytes from h->alloc, or NULL (also when n * size
 * overflows). */
static inline void *qbh_fwd_calloc(const qb_host *h, size_t n, size_t size)
{
    size_t bytes;
    void *p;
    if (size && n > (size_t)-1 / size)
        return NULL;
    bytes = n * size;
    p = h->alloc(h, bytes > 0 ? bytes : 1);
    if (p)
        memset(p, 0, bytes);
    return p;
}

/* ---- ops.c ------------------------------------------------------------------ */

/* x[M][n] = RMSNorm(x) * (offset + w), in place: sums in double; offset
 * 1 for the gemma family's (1 + w), else 0; w NULL: a norm without a
 * weight (scale 1: llama4's L2 q/k norm, gemma4's v norm). */
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
 * pool (h->parallel_for). QB_E_NOMEM through h. */
qb_status qbh_fwd_attention(const qb_host *h, const float *q, const float *k, const float *v,
                            int64_t T, int64_t nh, int64_t nkv, int64_t hd, int64_t window,
                            double scale, double softcap, float *out);
/* qbh_fwd_attention with gpt-oss's per-head sinks[nh] (NULL: none): each
 * head's softmax denominator gains exp(sinks[h]), which weights no value
 * (docs/forward.md, "gpt-oss"). */
qb_status qbh_fwd_attention_sinks(const qb_host *h, const float *q, const float *k, const float *v,
                                  int64_t T, int64_t nh, int64_t nkv, int64_t hd, int64_t window,
                                  double scale, double softcap, const float *sinks, float *out);
/* qbh_fwd_attention (no window, no soft-capping) where query t sees key s
 * <= t only when keep[t * T + s] is non-zero (DeepSeek-V3.2's indexer
 * chose it); at least one key per query must be kept. */
qb_status qbh_fwd_attention_keep(const qb_host *h, const float *q, const float *k, const float *v,
                                 int64_t T, int64_t nh, int64_t nkv, int64_t hd, double scale,
                                 const unsigned char *keep, float *out);
/* qbh_fwd_attention where query t attends only positions s <= t in its own
 * block of `chunk` positions (s / chunk == t / chunk; llama4's
 * chunked_attention); chunk 0: plain causal. */
qb_status qbh_fwd_attention_chunked(const qb_host *h, const float *q, const float *k,
                                    const float *v, int64_t T, int64_t nh, int64_t nkv,
                                    int64_t hd, int64_t chunk, double scale, float *out);
/* g[i] = silu(g[i]) * u[i] for i < n. */
void qbh_fwd_silu_mul(float *g, const float *u, size_t n);
/* g[i] = gelu_tanh(g[i]) * u[i] (gelu_pytorch_tanh). */
void qbh_fwd_gelu_tanh_mul(float *g, const float *u, size_t n);
/* x[i] = cap * tanh(x[i] / cap) for i < n. */
void qbh_fwd_softcap(float *x, size_t n, double cap);

/* ---- deepseek.c: multi-head latent attention ---------------------------------- */

/* DeepSeek-V2/V3 multi-head latent attention of layer L (c->mla) on the
 * normalised rows h[T][hidden] into out[T][hidden] (after o_proj), with
 * the inverse frequencies inv (qbh_fwd_rope_inv_freq). Allocates its
 * activations per call. Errors: a missing/mis-shaped tensor named,
 * QB_E_NOMEM. Main thread; uses the pool. */
qb_status qbh_fwd_mla(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const float *h,
                      int64_t T, const double *inv, float *out);

/* ---- dsa.c: DeepSeek-V3.2's indexer ------------------------------------------ */

/* The keys each query of layer L attends to under DeepSeek-V3.2's sparse
 * attention (c->index_topk > 0; docs/forward.md, "DeepSeek-V3.2 sparse
 * attention"): from the normalised rows h[T][hidden], the normalised q
 * LoRA latent qa[T][q_lora_rank] and the inverse frequencies inv, sets
 * keep[t * T + s] to 1 for the min(index_topk, t + 1) keys s <= t of the
 * best index score, 0 elsewhere. Errors: a missing/mis-shaped tensor
 * named, QB_E_NOMEM. Main thread; uses the pool. */
qb_status qbh_fwd_dsa_keep(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const float *h,
                           const float *qa, int64_t T, const double *inv, unsigned char *keep);

/* ---- deepseek_route.c: routing ------------------------------------------------- */

/* DeepSeek-V2/V3 routing (c->moe == QBH_MOE_DEEPSEEK): from the router
 * logits r[T][E] (and, for QBH_DS_NOAUX_TC, the correction bias[E]; NULL
 * otherwise) fills wt[T][E] with each token's weight of each expert, 0
 * for the experts not chosen (or chosen with a score of 0). Probabilities
 * in double; ties go to the lower index. QB_E_NOMEM (message set through h).
 * Thread-safe. */
qb_status qbh_fwd_route_deepseek(const qb_host *h, const qbh_fwd_cfg *c, const float *r,
                                 const float *bias, int64_t T, double *wt);

/* ---- gptoss.c --------------------------------------------------------------- */

/* gpt-oss's expert block of layer L (c->moe == QBH_MOE_GPTOSS) on the
 * normalised rows h[T][hidden] into out[T][hidden] (docs/forward.md,
 * "gpt-oss"): router with bias, top_k then softmax over those, each
 * chosen expert's clamped SwiGLU on its fused [in, out] weights, read one
 * row block of that expert at a time. Errors: a missing/mis-shaped tensor
 * named, a reader's error, QB_E_NOMEM. Main thread; uses the pool. */
qb_status qbh_fwd_gptoss_moe(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const float *h,
                             int64_t T, float *out);

/* y[M][N] = x[M][K] . W[e] (+ b[e] when with_bias) for layer L's fused
 * expert tensor `model.layers.L.<block>.experts.<what>` [E, K, N] (input
 * features first: gpt-oss's and llama4's layout) and its bias `<what>_bias`
 * [E, N]; reads expert e's rows one block at a time, sums in double over k
 * in order. Errors: a missing/mis-shaped tensor named, a reader's error,
 * QB_E_NOMEM. Main thread. */
qb_status qbh_fwd_fused_expert(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L,
                               const char *block, const char *what, int with_bias, int64_t e,
                               const float *x, int64_t M, int64_t K, float *y, int64_t N);
/* ---- qwen3next.c: the Qwen3-Next / Qwen3.5 token mixers ------------------------ */

struct qbh_fwd_bufs;
/* The token mixer of layer L of a hybrid (c->hybrid) on the normalised
 * rows b->h[T][hidden] into b->o[T][hidden] (docs/forward.md,
 * "Qwen3-Next"): a gated DeltaNet on the layers of c->linear_map (fused
 * in_proj_qkvz / in_proj_ba, or Qwen3.5's in_proj_qkv / _z / _b / _a),
 * else full attention with (1 + w) q/k norms, partial rotation and the
 * sigmoid output gate. Allocates its activations per call. Errors: a
 * missing/mis-shaped tensor named, a reader's error, QB_E_NOMEM. Main
 * thread; uses the pool. */
qb_status qbh_fwd_hybrid_mixer(qbh_fwd_weights *w, const qbh_fwd_cfg *c, struct qbh_fwd_bufs *b,
                               int64_t L, int64_t T);

/* ---- model.c: the layer's buffers and norms --------------------------------- */

/* Activation buffers of one pass, sized for T tokens. */
typedef struct qbh_fwd_bufs {
    float *x, *h, *q, *k, *v, *a, *o, *g, *u, *wn;
    float *f;           /* fused qkv / gate_up output (phi3 sources) */
    float *xs, *ys, *r; /* MoE: gathered rows, an expert's output, router logits */
    double *inv, *inv_local;
} qbh_fwd_bufs;

/* Layer L's norm `what` ("input_layernorm") applied to x[M][n] (wbuf: n
 * floats of scratch). The tensor's errors (qbh_fwd_vector). */
qb_status qbh_fwd_lnorm(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const char *what,
                        float *x, int64_t M, int64_t n, float *wbuf);

/* ---- dense.c ---------------------------------------------------------------- */

/* The attention block of layer L on the normalised rows b->h[T][hidden]
 * into b->o[T][hidden] (after o_proj and, gemma2/3, the sandwich norm):
 * q/k/v (or phi3's fused qkv_proj), qwen3/gemma3's q/k norms, the rotation
 * (rotate_half, yarn's attention factor), causal attention with the layer's
 * window and soft-capping, or gpt-oss's sinks. Errors: a missing or
 * mis-shaped tensor named, QB_E_NOMEM. Main thread; uses the pool. */
qb_status qbh_fwd_attention_block(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b,
                                  int64_t L, int64_t T);
/* The dense MLP of layer L on b->h into b->o: gate/up/down (gemma:
 * gelu-tanh, else silu), or phi3's fused gate_up_proj. Errors as above. */
qb_status qbh_fwd_dense_mlp(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b, int64_t L,
                            int64_t T);
/* out[M][hidden] = down(act(gate(x)) * up(x)) with the projections
 * `prefix` + names ("mlp." with gate_proj, up_proj, down_proj; mixtral's
 * experts "w1", "w3", "w2"), intermediate size I; b->g and b->u as
 * scratch. Errors as above. */
qb_status qbh_fwd_mlp(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b, int64_t L,
                      const char *prefix, const char *const names[3], const float *x, int64_t M,
                      int64_t I, float *out);

/* ---- moe.c ------------------------------------------------------------------ */

/* The expert block of layer L on h[T][hidden] into out[T][hidden]
 * (docs/forward.md, "Architectures"): router softmax over all experts (in
 * double), the top_k per token (renormalised for mixtral and
 * norm_topk_prob), or DeepSeek's routing (deepseek_route.c), each expert
 * run once on the tokens routed to it; qwen2_moe adds the shared expert
 * gated by sigmoid(shared_expert_gate(h)), DeepSeek its shared experts
 * ungated. Errors: a missing or mis-shaped tensor named, QB_E_NOMEM. Main
 * thread; uses the pool. */
qb_status qbh_fwd_moe(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b, int64_t L,
                      const float *h, int64_t T, float *out);

/* ---- issue 31: llama4.c ----------------------------------------------------- */

/* Llama 4's attention block of layer L on b->h into b->o (docs/forward.md,
 * "Llama 4"): q/k/v, on rope layers the interleaved rotation then the
 * weightless L2 norm of q and k (use_qk_norm), on NoPE layers the
 * temperature tuning of q; causal attention, within attention_chunk_size
 * blocks on chunked layers; o_proj. Errors as qbh_fwd_attention_block. */
qb_status qbh_fwd_llama4_attention(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b,
                                   int64_t L, int64_t T);
/* Llama 4's feed-forward of layer L on b->h into b->o: the dense
 * feed_forward MLP (intermediate_size_mlp), or on moe_map's layers the
 * shared expert plus the top-k experts, each run on its tokens scaled by
 * sigmoid(router logit) (Llama4TextMoe). Errors as qbh_fwd_moe. */
qb_status qbh_fwd_llama4_ffn(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b, int64_t L,
                             int64_t T);

/* ---- issue 31: gemma4.c ------------------------------------------------------ */

/* Gemma 4's whole text decoder (c->gemma4; docs/forward.md, "Gemma 4") on
 * tokens[0..T) into logits[T][vocab] before soft-capping: embedding,
 * per-layer inputs, layers, final norm and head, with its own activations.
 * Errors: a missing/mis-shaped tensor named, a reader's error, QB_E_RANGE
 * for a token outside either embedding, QB_E_NOMEM, QB_E_CANCELLED. Main
 * thread; uses the pool. */
qb_status qbh_fwd_gemma4_pass(qbh_fwd_weights *w, const qbh_fwd_cfg *c, const int64_t *tokens,
                              int64_t T, float *logits);

#endif /* QBH_FWD_H */
