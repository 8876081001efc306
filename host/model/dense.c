/*
 * quantbridge model library — the dense decoder families (llama, mistral,
 * qwen2/3, gemma 1/2/3, phi3; docs/forward.md, "Architectures",
 * "Operations"): a layer's attention block (q/k/v or phi3's fused qkv,
 * q/k norms, the rotation, causal attention with a window, soft-capping
 * or gpt-oss's sinks, o_proj, gemma's sandwich norm) and its dense MLP
 * (gate/up/down, or phi3's fused gate_up).
 */
#include "fwd.h"

#include <string.h>

/* 1 when layer L has the fused weight `path` ("self_attn.qkv_proj"): a
 * phi3 source; converted models hold the split projections. */
static int has_fused(qbh_fwd_weights *w, int64_t L, const char *path)
{
    char name[160];
    size_t idx;
    snprintf(name, sizeof name, "model.layers.%lld.%s.weight", (long long)L, path);
    return qbh_fwd_has(w, name, &idx);
}

/* Copies columns [c0, c0 + n) of f[T][width] into out[T][n]. */
static void split_cols(const float *f, int64_t T, int64_t width, int64_t c0, int64_t n, float *out)
{
    int64_t t;
    for (t = 0; t < T; t++)
        memcpy(out + t * n, f + t * width + c0, (size_t)n * sizeof(float));
}

qb_status qbh_fwd_mlp(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b, int64_t L,
                      const char *prefix, const char *const names[3], const float *x, int64_t M,
                      int64_t I, float *out)
{
    char gn[160], un[160], dn[160];
    int64_t H = c->hidden;
    qb_status rc;
    snprintf(gn, sizeof gn, "%s%s", prefix, names[0]);
    snprintf(un, sizeof un, "%s%s", prefix, names[1]);
    snprintf(dn, sizeof dn, "%s%s", prefix, names[2]);
    if ((rc = qbh_fwd_linear(w, L, gn, x, M, H, b->g, I)) ||
        (rc = qbh_fwd_linear(w, L, un, x, M, H, b->u, I)))
        return rc;
    if (c->gemma)
        qbh_fwd_gelu_tanh_mul(b->g, b->u, (size_t)(M * I));
    else
        qbh_fwd_silu_mul(b->g, b->u, (size_t)(M * I));
    return qbh_fwd_linear(w, L, dn, b->g, M, I, out, H);
}

qb_status qbh_fwd_attention_block(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b,
                                  int64_t L, int64_t T)
{
    int64_t H = c->hidden, hd = c->head_dim;
    int64_t Q = c->n_heads * hd, KV = c->n_kv_heads * hd;
    int64_t window = qbh_fwd_layer_window(c, L);
    const double *inv = window && c->rope_local_theta > 0 ? b->inv_local : b->inv;
    qb_status rc;

    if (has_fused(w, L, "self_attn.qkv_proj")) {
        /* phi3: one [q; k; v] projection, split by rows of the weight. */
        if ((rc = qbh_fwd_linear(w, L, "self_attn.qkv_proj", b->h, T, H, b->f, Q + 2 * KV)))
            return rc;
        split_cols(b->f, T, Q + 2 * KV, 0, Q, b->q);
        split_cols(b->f, T, Q + 2 * KV, Q, KV, b->k);
        split_cols(b->f, T, Q + 2 * KV, Q + KV, KV, b->v);
    } else if ((rc = qbh_fwd_linear(w, L, "self_attn.q_proj", b->h, T, H, b->q, Q)) ||
               (rc = qbh_fwd_linear(w, L, "self_attn.k_proj", b->h, T, H, b->k, KV)) ||
               (rc = qbh_fwd_linear(w, L, "self_attn.v_proj", b->h, T, H, b->v, KV))) {
        return rc;
    }
    /* Qwen3, Gemma3: RMSNorm over each head's head_dim, before the rotation. */
    if (c->qk_norm &&
        ((rc = qbh_fwd_lnorm(w, c, L, "self_attn.q_norm", b->q, T * c->n_heads, hd, b->wn)) ||
         (rc = qbh_fwd_lnorm(w, c, L, "self_attn.k_norm", b->k, T * c->n_kv_heads, hd, b->wn))))
        return rc;
    /* MiniMax-M2: RMSNorm over all heads of a token at once. */
    if (c->qk_norm_full &&
        ((rc = qbh_fwd_lnorm(w, c, L, "self_attn.q_norm", b->q, T, Q, b->wn)) ||
         (rc = qbh_fwd_lnorm(w, c, L, "self_attn.k_norm", b->k, T, KV, b->wn))))
        return rc;
    /* rotate_half; gpt-oss's yarn multiplies cos and sin by its attention
     * factor (1 for every other rope). */
    if (!qbh_fwd_layer_nope(c, L)) { /* smollm3's NoPE layers skip it */
        qbh_fwd_rope_ex(b->q, T, c->n_heads, hd, 0, c->rot_dim, inv, 0, c->rope_attn_factor);
        qbh_fwd_rope_ex(b->k, T, c->n_kv_heads, hd, 0, c->rot_dim, inv, 0, c->rope_attn_factor);
    }
    if (c->moe == QBH_MOE_GPTOSS) {
        /* GptOssAttention's sinks: a bare [num_attention_heads] parameter. */
        char sn[160];
        snprintf(sn, sizeof sn, "model.layers.%lld.self_attn.sinks", (long long)L);
        rc = qbh_fwd_vector(w, sn, b->wn, c->n_heads);
        if (rc == QB_OK)
            rc = qbh_fwd_attention_sinks(w->h, b->q, b->k, b->v, T, c->n_heads, c->n_kv_heads, hd,
                                         window, c->attn_scale, 0.0, b->wn, b->a);
    } else {
        rc = qbh_fwd_attention(w->h, b->q, b->k, b->v, T, c->n_heads, c->n_kv_heads, hd, window,
                               c->attn_scale, c->attn_softcap, b->a);
    }
    if (rc || (rc = qbh_fwd_linear(w, L, "self_attn.o_proj", b->a, T, Q, b->o, H)))
        return rc;
    /* Gemma2/3 normalise the block's output before the residual add
     * ("sandwich"); there post_attention_layernorm is that output norm and
     * pre_feedforward_layernorm the MLP's input norm. */
    if (c->sandwich && (rc = qbh_fwd_lnorm(w, c, L, "post_attention_layernorm", b->o, T, H, b->wn)))
        return rc;
    return QB_OK;
}

qb_status qbh_fwd_dense_mlp(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b, int64_t L,
                            int64_t T)
{
    int64_t H = c->hidden, I = c->intermediate;
    qb_status rc;

    if (has_fused(w, L, "mlp.gate_up_proj")) {
        /* phi3: [gate; up] in one projection (Phi3MLP chunks it in two). */
        if ((rc = qbh_fwd_linear(w, L, "mlp.gate_up_proj", b->h, T, H, b->f, 2 * I)))
            return rc;
        split_cols(b->f, T, 2 * I, 0, I, b->g);
        split_cols(b->f, T, 2 * I, I, I, b->u);
        qbh_fwd_silu_mul(b->g, b->u, (size_t)(T * I));
        if ((rc = qbh_fwd_linear(w, L, "mlp.down_proj", b->g, T, I, b->o, H)))
            return rc;
    } else {
        static const char *const names[3] = {"gate_proj", "up_proj", "down_proj"};
        if ((rc = qbh_fwd_mlp(w, c, b, L, "mlp.", names, b->h, T, I, b->o)))
            return rc;
    }
    return QB_OK;
}
