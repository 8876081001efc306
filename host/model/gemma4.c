/*
 * quantbridge model library — Gemma 4's text decoder (issue 31), as
 * transformers 5.24's Gemma4TextModel computes it for the configurations
 * config.c accepts (docs/forward.md, "Gemma 4"): no KV sharing, no
 * k_eq_v attention, no MoE block, causal.
 *
 *   x = embed(t) * sqrt(H) (the factor rounded to float32, as its
 *       Gemma4TextScaledWordEmbedding buffer holds it);
 *   per-layer inputs (hidden_size_per_layer_input P > 0):
 *       pl[t][L] = (rmsnorm(x . per_layer_model_projection^T * H^-1/2)
 *                   + embed_tokens_per_layer[t] * sqrt(P)) * 2^-1/2;
 *   each layer: a = attn(norm(x)), x += post_attention_norm(a);
 *       m = mlp(pre_feedforward_norm(x)), x += post_feedforward_norm(m);
 *       with P: g = gelu_tanh(x . per_layer_input_gate^T) * pl[L],
 *       x += post_per_layer_input_norm(g . per_layer_projection^T);
 *       x *= layer_scalar;
 *   attention: q, k per head RMS-normed with q_norm / k_norm, v without a
 *       weight; rotate_half rope with the layer type's frequencies
 *       (proportional: the first partial_rotary_factor share of the pairs
 *       rotate, the rest have frequency 0); scores unscaled (scaling 1);
 *       sliding layers see the sliding_window latest positions.
 * Every RMSNorm here is x * rsqrt(mean(x^2) + eps) * w (no 1 + w).
 */
#include "fwd.h"

#include <math.h>
#include <string.h>

/* Norm of x[M][n] with the 1-D tensor `name` (n floats) as weight. */
static qb_status g4_wnorm(qbh_fwd_weights *w, const qbh_fwd_cfg *c, const char *name, float *x,
                          int64_t M, int64_t n, float *wbuf)
{
    qb_status rc = qbh_fwd_vector(w, name, wbuf, n);
    if (rc == QB_OK)
        qbh_fwd_rmsnorm(x, M, n, wbuf, c->rms_eps, 0.0);
    return rc;
}

static qb_status g4_lnorm(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const char *what,
                          float *x, int64_t M, int64_t n, float *wbuf)
{
    char name[160];
    snprintf(name, sizeof name, "model.layers.%lld.%s.weight", (long long)L, what);
    return g4_wnorm(w, c, name, x, M, n, wbuf);
}

/* Inverse frequencies of layer type `full` over head_dim hd (hd / 2 values). */
static void g4_inv_freq(const qbh_fwd_cfg *c, int full, int64_t hd, double *inv)
{
    int64_t i, angles = hd / 2;
    if (c->g4_prop[full])
        /* _compute_proportional_rope_parameters: int(prf * hd // 2) pairs */
        angles = (int64_t)floor(c->g4_prf[full] * (double)hd / 2.0);
    for (i = 0; i < hd / 2; i++)
        inv[i] = i < angles ? pow(c->g4_theta[full], -(double)(2 * i) / (double)hd) /
                                  c->g4_factor[full]
                            : 0.0;
}

/* The scratch of one pass. */
typedef struct g4_bufs {
    float *h, *q, *k, *v, *a, *o, *g, *u, *wn, *pl, *pg;
    double *inv;
} g4_bufs;

static qb_status g4_attention(qbh_fwd_weights *w, const qbh_fwd_cfg *c, g4_bufs *b, int64_t L,
                              int64_t T)
{
    int full = !(qbh_fwd_layer_window(c, L) > 0);
    int64_t H = c->hidden, hd = c->g4_hd[full], nh = c->n_heads, nkv = c->g4_kv[full];
    int64_t Q = nh * hd, KV = nkv * hd;
    qb_status rc;

    if ((rc = qbh_fwd_linear(w, L, "self_attn.q_proj", b->h, T, H, b->q, Q)) ||
        (rc = qbh_fwd_linear(w, L, "self_attn.k_proj", b->h, T, H, b->k, KV)) ||
        (rc = qbh_fwd_linear(w, L, "self_attn.v_proj", b->h, T, H, b->v, KV)) ||
        (rc = g4_lnorm(w, c, L, "self_attn.q_norm", b->q, T * nh, hd, b->wn)) ||
        (rc = g4_lnorm(w, c, L, "self_attn.k_norm", b->k, T * nkv, hd, b->wn)))
        return rc;
    qbh_fwd_rmsnorm(b->v, T * nkv, hd, NULL, c->rms_eps, 0.0); /* v_norm: with_scale False */
    g4_inv_freq(c, full, hd, b->inv);
    qbh_fwd_rope_ex(b->q, T, nh, hd, 0, hd, b->inv, 0, 1.0);
    qbh_fwd_rope_ex(b->k, T, nkv, hd, 0, hd, b->inv, 0, 1.0);
    if ((rc = qbh_fwd_attention(w->h, b->q, b->k, b->v, T, nh, nkv, hd,
                                qbh_fwd_layer_window(c, L), 1.0, 0.0, b->a)) ||
        (rc = qbh_fwd_linear(w, L, "self_attn.o_proj", b->a, T, Q, b->o, H)))
        return rc;
    return g4_lnorm(w, c, L, "post_attention_layernorm", b->o, T, H, b->wn);
}

static qb_status g4_layer(qbh_fwd_weights *w, const qbh_fwd_cfg *c, g4_bufs *b, float *x, int64_t L,
                          int64_t T)
{
    int64_t H = c->hidden, I = c->intermediate, P = c->g4_ple, i, t;
    char name[160];
    float scalar;
    qb_status rc;

    memcpy(b->h, x, (size_t)(T * H) * sizeof *x);
    if ((rc = g4_lnorm(w, c, L, "input_layernorm", b->h, T, H, b->wn)) ||
        (rc = g4_attention(w, c, b, L, T)))
        return rc;
    for (i = 0; i < T * H; i++)
        x[i] += b->o[i];
    memcpy(b->h, x, (size_t)(T * H) * sizeof *x);
    if ((rc = g4_lnorm(w, c, L, "pre_feedforward_layernorm", b->h, T, H, b->wn)) ||
        (rc = qbh_fwd_linear(w, L, "mlp.gate_proj", b->h, T, H, b->g, I)) ||
        (rc = qbh_fwd_linear(w, L, "mlp.up_proj", b->h, T, H, b->u, I)))
        return rc;
    qbh_fwd_gelu_tanh_mul(b->g, b->u, (size_t)(T * I));
    if ((rc = qbh_fwd_linear(w, L, "mlp.down_proj", b->g, T, I, b->o, H)) ||
        (rc = g4_lnorm(w, c, L, "post_feedforward_layernorm", b->o, T, H, b->wn)))
        return rc;
    for (i = 0; i < T * H; i++)
        x[i] += b->o[i];
    if (P > 0) {
        if ((rc = qbh_fwd_linear(w, L, "per_layer_input_gate", x, T, H, b->pg, P)))
            return rc;
        /* act_fn(gate) * per_layer_input: gelu_tanh times this layer's slice */
        for (t = 0; t < T; t++)
            qbh_fwd_gelu_tanh_mul(b->pg + t * P, b->pl + (t * c->n_layers + L) * P, (size_t)P);
        if ((rc = qbh_fwd_linear(w, L, "per_layer_projection", b->pg, T, P, b->o, H)) ||
            (rc = g4_lnorm(w, c, L, "post_per_layer_input_norm", b->o, T, H, b->wn)))
            return rc;
        for (i = 0; i < T * H; i++)
            x[i] += b->o[i];
    }
    snprintf(name, sizeof name, "model.layers.%lld.layer_scalar", (long long)L);
    if ((rc = qbh_fwd_vector(w, name, &scalar, 1)))
        return rc;
    for (i = 0; i < T * H; i++)
        x[i] *= scalar;
    return QB_OK;
}

/* pl[T][n_layers][P]: the per-layer inputs (file comment). */
static qb_status g4_per_layer_inputs(qbh_fwd_weights *w, const qbh_fwd_cfg *c, g4_bufs *b,
                                     const int64_t *tokens, const float *x, int64_t T)
{
    int64_t P = c->g4_ple, LP = c->n_layers * P, t, i;
    float *tok = NULL;
    size_t idx;
    const qb_tensor_info *ti;
    float es = (float)sqrt((double)P), ps = (float)(1.0 / sqrt((double)c->hidden));
    float is = (float)(1.0 / sqrt(2.0));
    qb_status rc;

    if ((rc = qbh_fwd_linear(w, -1, "model.per_layer_model_projection", x, T, c->hidden, b->pl,
                             LP)))
        return rc;
    for (i = 0; i < T * LP; i++)
        b->pl[i] *= ps;
    if ((rc = g4_wnorm(w, c, "model.per_layer_projection_norm.weight", b->pl, T * c->n_layers, P,
                       b->wn)))
        return rc;
    if ((rc = qbh_fwd_find(w, "model.embed_tokens_per_layer.weight", &idx)))
        return rc;
    ti = qbh_fwd_tensor(w, idx);
    if (ti->n_dims != 2 || ti->dims[1] != LP)
        return w->h->set_error(w->h, QB_E_MISMATCH,
                               "forward: %s: model.embed_tokens_per_layer.weight is not [%s, %lld]",
                               w->path, "vocab_size_per_layer_input", (long long)LP);
    tok = w->h->alloc(w->h, (size_t)LP * sizeof *tok);
    if (!tok)
        return w->h->set_error(w->h, QB_E_NOMEM, "forward: out of memory");
    for (t = 0; t < T && rc == QB_OK; t++) {
        if (tokens[t] < 0 || tokens[t] >= ti->dims[0]) {
            rc = w->h->set_error(w->h, QB_E_RANGE,
                                 "forward: %s: token id %lld outside vocab_size_per_layer_input "
                                 "%lld",
                                 w->path, (long long)tokens[t], (long long)ti->dims[0]);
            break;
        }
        if ((rc = qbh_fwd_read_rows(w, NULL, idx, tokens[t], 1, tok)))
            break;
        for (i = 0; i < LP; i++)
            b->pl[t * LP + i] = (b->pl[t * LP + i] + tok[i] * es) * is;
    }
    w->h->free(w->h, tok);
    return rc;
}

qb_status qbh_fwd_gemma4_pass(qbh_fwd_weights *w, const qbh_fwd_cfg *c, const int64_t *tokens,
                              int64_t T, float *logits)
{
    const qb_host *hs = w->h;
    int64_t H = c->hidden, I = c->intermediate, P = c->g4_ple, L, i;
    int64_t hd = c->g4_hd[0] > c->g4_hd[1] ? c->g4_hd[0] : c->g4_hd[1];
    int64_t kv = c->g4_kv[0] > c->g4_kv[1] ? c->g4_kv[0] : c->g4_kv[1];
    int64_t wn = H > hd ? H : hd;
    float *x = NULL, es = (float)sqrt((double)H);
    g4_bufs b;
    qb_status rc;

    memset(&b, 0, sizeof b);
    if (P > wn)
        wn = P;
    x = hs->alloc(hs, (size_t)(T * H) * sizeof *x);
    b.h = hs->alloc(hs, (size_t)(T * H) * sizeof *b.h);
    b.q = hs->alloc(hs, (size_t)(T * c->n_heads * hd) * sizeof *b.q);
    b.k = hs->alloc(hs, (size_t)(T * kv * hd) * sizeof *b.k);
    b.v = hs->alloc(hs, (size_t)(T * kv * hd) * sizeof *b.v);
    b.a = hs->alloc(hs, (size_t)(T * c->n_heads * hd) * sizeof *b.a);
    b.o = hs->alloc(hs, (size_t)(T * H) * sizeof *b.o);
    b.g = hs->alloc(hs, (size_t)(T * I) * sizeof *b.g);
    b.u = hs->alloc(hs, (size_t)(T * I) * sizeof *b.u);
    b.wn = hs->alloc(hs, (size_t)wn * sizeof *b.wn);
    b.pl = hs->alloc(hs, (size_t)(T * c->n_layers * (P > 0 ? P : 1)) * sizeof *b.pl);
    b.pg = hs->alloc(hs, (size_t)(T * (P > 0 ? P : 1)) * sizeof *b.pg);
    b.inv = hs->alloc(hs, (size_t)(hd / 2 + 1) * sizeof *b.inv);
    if (!x || !b.h || !b.q || !b.k || !b.v || !b.a || !b.o || !b.g || !b.u || !b.wn || !b.pl ||
        !b.pg || !b.inv) {
        rc = hs->set_error(hs, QB_E_NOMEM, "forward: out of memory for the activations of %lld "
                           "tokens", (long long)T);
        goto out;
    }
    if ((rc = qbh_fwd_embed(w, tokens, (size_t)T, H, x)))
        goto out;
    for (i = 0; i < T * H; i++)
        x[i] *= es;
    if (P > 0 && (rc = g4_per_layer_inputs(w, c, &b, tokens, x, T)))
        goto out;
    for (L = 0; L < c->n_layers; L++) {
        if (hs->cancelled(hs)) {
            rc = hs->set_error(hs, QB_E_CANCELLED, "forward: cancelled at layer %lld", (long long)L);
            goto out;
        }
        if ((rc = g4_layer(w, c, &b, x, L, T)))
            goto out;
        hs->progress(hs, (uint64_t)L + 1, (uint64_t)c->n_layers, "layers");
    }
    if ((rc = g4_wnorm(w, c, "model.norm.weight", x, T, H, b.wn)) ||
        (rc = qbh_fwd_linear(w, -1, "lm_head", x, T, H, logits, c->vocab)))
        goto out;
out:
    hs->free(hs, x);
    hs->free(hs, b.h);
    hs->free(hs, b.q);
    hs->free(hs, b.k);
    hs->free(hs, b.v);
    hs->free(hs, b.a);
    hs->free(hs, b.o);
    hs->free(hs, b.g);
    hs->free(hs, b.u);
    hs->free(hs, b.wn);
    hs->free(hs, b.pl);
    hs->free(hs, b.pg);
    hs->free(hs, b.inv);
    return rc;
}
