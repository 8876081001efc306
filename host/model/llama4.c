/*
 * quantbridge model library — Llama 4's text decoder layer (issue 31), as
 * transformers 5.24's Llama4TextAttention, Llama4TextMoe and Llama4TextMLP
 * compute it (docs/forward.md, "Llama 4"):
 *
 *   attention: q/k/v; rope layers rotate (2i, 2i + 1) pairs
 *     (apply_rotary_emb's complex view), then, with use_qk_norm, divide q
 *     and k by their RMS per head (Llama4TextL2Norm, no weight, eps
 *     rms_norm_eps); NoPE layers (no_rope_layers 0) do neither and, with
 *     attn_temperature_tuning, scale q at position t by
 *     1 + attn_scale * log1p(floor((t + 1) / floor_scale));
 *     chunked_attention layers attend within blocks of attention_chunk_size
 *     positions; scores scale head_dim^-1/2.
 *   feed_forward: a dense MLP of intermediate_size_mlp, or on moe_layers
 *     router logits r = x . router^T; the top_k experts e (ties: the lower
 *     index) get s_e = sigmoid(r_e), the others 0; out = shared_expert(x) +
 *     sum_e down_e(silu(gate_e(s_e x)) * up_e(s_e x)), each expert's fused
 *     [in, out] weights: gate_up_proj[e] [H, 2I] (gate the first I
 *     columns, up the next I), down_proj[e] [I, H].
 *
 * Source and W4A16 directory both serve the fused expert tensors (the
 * sm86-w4a16 reader recombines its per-expert parts), so expert products
 * read dense rows in both cases.
 */
#include "fwd.h"

#include <math.h>
#include <string.h>

qb_status qbh_fwd_llama4_attention(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b,
                                   int64_t L, int64_t T)
{
    int64_t H = c->hidden, hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads;
    int64_t Q = nh * hd, KV = nkv * hd, t, i;
    int64_t chunk = L < 1024 && (c->chunk_map[L / 64] >> (L % 64) & 1) ? c->attn_chunk : 0;
    qb_status rc;

    if ((rc = qbh_fwd_linear(w, L, "self_attn.q_proj", b->h, T, H, b->q, Q)) ||
        (rc = qbh_fwd_linear(w, L, "self_attn.k_proj", b->h, T, H, b->k, KV)) ||
        (rc = qbh_fwd_linear(w, L, "self_attn.v_proj", b->h, T, H, b->v, KV)))
        return rc;
    if (!qbh_fwd_layer_nope(c, L)) {
        qbh_fwd_rope_ex(b->q, T, nh, hd, 0, c->rot_dim, b->inv, 1, c->rope_attn_factor);
        qbh_fwd_rope_ex(b->k, T, nkv, hd, 0, c->rot_dim, b->inv, 1, c->rope_attn_factor);
        if (c->l2_qk_norm) {
            qbh_fwd_rmsnorm(b->q, T * nh, hd, NULL, c->rms_eps, 0.0);
            qbh_fwd_rmsnorm(b->k, T * nkv, hd, NULL, c->rms_eps, 0.0);
        }
    } else if (c->temp_scale > 0) {
        for (t = 0; t < T; t++) {
            /* transformers computes the factor in float32, then q * it. */
            float s = (float)(log1p(floor(((double)t + 1.0) / c->temp_floor)) * c->temp_scale + 1.0);
            for (i = 0; i < Q; i++)
                b->q[t * Q + i] *= s;
        }
    }
    if ((rc = qbh_fwd_attention_chunked(w->h, b->q, b->k, b->v, T, nh, nkv, hd, chunk,
                                        c->attn_scale, b->a)))
        return rc;
    return qbh_fwd_linear(w, L, "self_attn.o_proj", b->a, T, Q, b->o, H);
}

/* The experts of a MoE layer: see the file comment. */
static qb_status llama4_moe(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b, int64_t L,
                            int64_t T)
{
    static const char *const names[3] = {"gate_proj", "up_proj", "down_proj"};
    int64_t H = c->hidden, I = c->moe_intermediate, E = c->n_experts, K = c->top_k;
    int64_t t, e, i, k, n;
    float *r = NULL, *xs = NULL, *gu = NULL, *a = NULL, *ys = NULL;
    double *sc = NULL; /* [T][E]: sigmoid of the chosen logits, 0 elsewhere */
    unsigned char *chosen = NULL;
    int64_t *rows = NULL;
    qb_status rc;

    r = w->h->alloc(w->h, (size_t)(T * E) * sizeof *r);
    sc = qbh_fwd_calloc(w->h, (size_t)(T * E), sizeof *sc);
    chosen = qbh_fwd_calloc(w->h, (size_t)(T * E), 1);
    rows = w->h->alloc(w->h, (size_t)T * sizeof *rows);
    xs = w->h->alloc(w->h, (size_t)(T * H) * sizeof *xs);
    gu = w->h->alloc(w->h, (size_t)(T * 2 * I) * sizeof *gu);
    a = w->h->alloc(w->h, (size_t)(T * I) * sizeof *a);
    ys = w->h->alloc(w->h, (size_t)(T * H) * sizeof *ys);
    if (!r || !sc || !chosen || !rows || !xs || !gu || !a || !ys) {
        rc = w->h->set_error(w->h, QB_E_NOMEM,
                             "forward: out of memory for the experts of layer %lld", (long long)L);
        goto out;
    }
    if ((rc = qbh_fwd_linear(w, L, "feed_forward.router", b->h, T, H, r, E)))
        goto out;
    for (t = 0; t < T; t++) {
        const float *rt = r + t * E;
        unsigned char *ct = chosen + t * E;
        for (k = 0; k < K; k++) {
            int64_t best = -1;
            for (e = 0; e < E; e++)
                if (!ct[e] && (best < 0 || rt[e] > rt[best]))
                    best = e;
            ct[best] = 1;
            /* Llama4Router: sigmoid in float32 of the kept logits. */
            sc[t * E + best] = (float)(1.0 / (1.0 + exp(-(double)rt[best])));
        }
    }
    /* The shared expert first (Llama4TextMoe adds the routed sum to it). */
    if ((rc = qbh_fwd_mlp(w, c, b, L, "feed_forward.shared_expert.", names, b->h, T, I, b->o)))
        goto out;
    for (e = 0; e < E; e++) {
        for (n = 0, t = 0; t < T; t++)
            if (chosen[t * E + e])
                rows[n++] = t;
        if (!n)
            continue;
        /* routed_in = x * score: the expert sees the scaled input. */
        for (i = 0; i < n; i++)
            for (k = 0; k < H; k++)
                xs[i * H + k] = (float)((double)b->h[rows[i] * H + k] * sc[rows[i] * E + e]);
        if ((rc = qbh_fwd_fused_expert(w, c, L, "feed_forward", "gate_up_proj", 0, e, xs, n, H, gu,
                                       2 * I)))
            goto out;
        for (i = 0; i < n; i++)
            for (k = 0; k < I; k++) {
                double g = gu[i * 2 * I + k], u = gu[i * 2 * I + I + k];
                a[i * I + k] = (float)(u * (g / (1.0 + exp(-g))));
            }
        if ((rc = qbh_fwd_fused_expert(w, c, L, "feed_forward", "down_proj", 0, e, a, n, I, ys, H)))
            goto out;
        for (i = 0; i < n; i++)
            for (k = 0; k < H; k++)
                b->o[rows[i] * H + k] += ys[i * H + k];
    }
    rc = QB_OK;
out:
    w->h->free(w->h, r);
    w->h->free(w->h, sc);
    w->h->free(w->h, chosen);
    w->h->free(w->h, rows);
    w->h->free(w->h, xs);
    w->h->free(w->h, gu);
    w->h->free(w->h, a);
    w->h->free(w->h, ys);
    return rc;
}

qb_status qbh_fwd_llama4_ffn(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b, int64_t L,
                             int64_t T)
{
    static const char *const names[3] = {"gate_proj", "up_proj", "down_proj"};
    if (qbh_fwd_layer_moe(c, L))
        return llama4_moe(w, c, b, L, T);
    return qbh_fwd_mlp(w, c, b, L, "feed_forward.", names, b->h, T, c->intermediate, b->o);
}
