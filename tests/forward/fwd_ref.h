/*
 * The tests' own float64 reference of the llama-family decoder (llama,
 * mistral, qwen2, qwen3, gemma and gemma2's variations), written apart from
 * host/model/ with plain loops, straight from transformers' modeling
 * code: RMSNorm, rotate_half rotary embedding, grouped-query causal
 * attention, SiLU- (gemma: gelu-tanh-) gated MLP.
 * Everything in double. Test code: not thread-safe, aborts on OOM.
 */
#ifndef FWD_REF_H
#define FWD_REF_H

#include <stdint.h>

typedef struct fwd_ref_model {
    int64_t hidden, inter, layers, heads, kv_heads, head_dim, vocab;
    double eps, theta;
    int qk_norm;
    int64_t window; /* sliding window (0: none) */
    int64_t window_pattern; /* > 0: only layers with (L + 1) % pattern != 0
                               slide (gemma2: 2, gemma3: sliding_window_pattern) */
    /* gemma2/3: embedding * sqrt(hidden), (1 + w) norms, gelu-tanh, sandwich
     * norms, score scale query_pre_attn_scalar^-1/2, soft-capping (0: none). */
    int gemma2;
    double qpas, attn_cap, final_cap;
    /* gemma (1): embedding * sqrt(hidden), (1 + w) norms and gelu-tanh as
     * gemma2, none of its other changes (score scale head_dim^-1/2). */
    int gemma;
    /* gemma3: sliding layers rotate with local_theta, unscaled; the others
     * with theta and angles divided by global_linear (linear rope scaling;
     * 0: none). */
    double local_theta, global_linear;
    /* phi3: fused qkv_proj / gate_up_proj when the model has them; rotates
     * the first rot_dim dims of each head (0: all). */
    int64_t rot_dim;
    /* MoE: moe 1 mixtral (block_sparse_moe, w1/w3/w2), 2 qwen (mlp.gate,
     * mlp.experts.E.*_proj, optional shared expert); dense_layer_mask bit
     * L: layer L keeps the dense MLP (qwen mlp_only_layers). */
    int moe, norm_topk;
    int64_t experts, top_k, moe_inter, shared_inter;
    unsigned dense_layer_mask;
    /* DeepSeek-V2/V3: mla 1 runs multi-head latent attention (q_lora 0:
     * q_proj; kv_lora, nope, rope_d, vdim the head sizes; interleave:
     * neighbour pairs rotate); yarn_factor > 0: yarn rope with orig,
     * beta_fast, beta_slow, mscale, mscale_all_dim. ds_route 1 V2 greedy,
     * 2 V2 group_limited_greedy, 3 V3 noaux_tc (n_group, topk_group) on
     * layers >= first_dense, weights times routed_scale, shared experts
     * of shared_inter ungated. */
    int mla, interleave, ds_route, yarn_exact;
    int64_t q_lora, kv_lora, nope, rope_d, vdim, n_group, topk_group, first_dense;
    double yarn_factor, yarn_orig, beta_fast, beta_slow, mscale, mscale_all_dim, routed_scale;
    /* gpt-oss: q/k/v/o biases, per-head sinks (self_attn.sinks) in the
     * softmax denominator, layers with bit L of sliding_mask attend within
     * `window`; yarn (yarn_* above, rotate_half) scales cos and sin by
     * 0.1 ln(factor) + 1; router with bias, top_k then softmax over those;
     * experts fused [E, in, out] (mlp.experts.gate_up_proj / down_proj and
     * their _bias), gate/up interleaved, clamped SwiGLU (glu_alpha,
     * glu_limit) with (up + 1). */
    int gptoss;
    unsigned sliding_mask;
    double glu_alpha, glu_limit;
    /* Fills out[n] with the values of tensor `name` (canonical HF name);
     * returns 0, or -1 when the model has no such tensor (a bias). */
    int (*get)(void *ctx, const char *name, int64_t n, double *out);
    void *ctx;
} fwd_ref_model;

/* logits[T][vocab]; mag[T][vocab] (may be NULL) gets sum_c |W_vc| |x_c| of
 * the head's products, the scale of a logit's rounding error. */
void fwd_ref_run(const fwd_ref_model *m, const int64_t *tokens, int64_t T, double *logits,
                 double *mag);

#endif
