/*
 * quantbridge host — forward pass: the llama-family decoder, one layer at
 * a time (docs/forward.md). Only the activations of the token sequence
 * stay in memory; each weight is streamed in row blocks when it is used
 * (forward_weights.c), so memory does not grow with the number of layers.
 */
#include "fwd.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/* Activation buffers of one pass, sized for T tokens. */
typedef struct fwd_bufs {
    float *x, *h, *q, *k, *v, *a, *o, *g, *u, *wn;
    float *f;             /* fused qkv / gate_up output (phi3 sources) */
    float *xs, *ys, *r;   /* MoE: gathered rows, an expert's output, router logits */
    double *inv, *inv_local;
} fwd_bufs;

static void bufs_free(const qbh_fwd_weights *w, fwd_bufs *b)
{
    w->h->free(w->h, b->x);
    w->h->free(w->h, b->h);
    w->h->free(w->h, b->q);
    w->h->free(w->h, b->k);
    w->h->free(w->h, b->v);
    w->h->free(w->h, b->a);
    w->h->free(w->h, b->o);
    w->h->free(w->h, b->g);
    w->h->free(w->h, b->u);
    w->h->free(w->h, b->wn);
    w->h->free(w->h, b->inv);
    w->h->free(w->h, b->inv_local);
    w->h->free(w->h, b->f);
    w->h->free(w->h, b->xs);
    w->h->free(w->h, b->ys);
    w->h->free(w->h, b->r);
}

static qb_status bufs_alloc(const qbh_fwd_weights *w, fwd_bufs *b, const qbh_fwd_cfg *c, size_t T)
{
    size_t H = (size_t)c->hidden, I = (size_t)c->intermediate;
    size_t F, E = c->moe ? (size_t)c->n_experts : 1;
    size_t Q = (size_t)(c->n_heads * c->head_dim), KV = (size_t)(c->n_kv_heads * c->head_dim);
    size_t wn = H > (size_t)c->head_dim ? H : (size_t)c->head_dim;
    if ((size_t)c->n_heads > wn) /* gpt-oss's sinks */
        wn = (size_t)c->n_heads;
    if ((size_t)c->moe_intermediate > I)
        I = (size_t)c->moe_intermediate;
    if ((size_t)c->shared_intermediate > I)
        I = (size_t)c->shared_intermediate;
    F = Q + 2 * KV > 2 * I ? Q + 2 * KV : 2 * I;
    memset(b, 0, sizeof *b);
    b->f = w->h->alloc(w->h, T * F * sizeof(float));
    b->xs = w->h->alloc(w->h, T * H * sizeof(float));
    b->ys = w->h->alloc(w->h, T * H * sizeof(float));
    b->r = w->h->alloc(w->h, T * E * sizeof(float));
    b->x = w->h->alloc(w->h, T * H * sizeof(float));
    b->h = w->h->alloc(w->h, T * H * sizeof(float));
    b->q = w->h->alloc(w->h, T * Q * sizeof(float));
    b->k = w->h->alloc(w->h, T * KV * sizeof(float));
    b->v = w->h->alloc(w->h, T * KV * sizeof(float));
    b->a = w->h->alloc(w->h, T * Q * sizeof(float));
    b->o = w->h->alloc(w->h, T * H * sizeof(float));
    b->g = w->h->alloc(w->h, T * I * sizeof(float));
    b->u = w->h->alloc(w->h, T * I * sizeof(float));
    b->wn = w->h->alloc(w->h, wn * sizeof(float));
    b->inv = w->h->alloc(w->h, (size_t)c->rot_dim / 2 * sizeof(double) + sizeof(double));
    b->inv_local = w->h->alloc(w->h, (size_t)c->rot_dim / 2 * sizeof(double) + sizeof(double));
    if (!b->x || !b->h || !b->q || !b->k || !b->v || !b->a || !b->o || !b->g || !b->u || !b->wn ||
        !b->inv || !b->inv_local || !b->f || !b->xs || !b->ys || !b->r) {
        bufs_free(w, b);
        return w->h->set_error(w->h, QB_E_NOMEM, "forward: out of memory for the activations of %zu "
                             "tokens", T);
    }
    return QB_OK;
}

/* RssAnon of /proc/self/status in kB (0 when unreadable): the memory the
 * pass allocates, without the mapped weight files' page cache. */
static long rss_anon_kb(void)
{
    char line[256];
    long v = 0;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "RssAnon: %ld", &v) == 1)
            break;
    fclose(f);
    return v;
}

static qb_status norm(qbh_fwd_weights *w, const qbh_fwd_cfg *c, const char *name, float *x,
                      int64_t M, int64_t n, float *wbuf)
{
    qb_status rc = qbh_fwd_vector(w, name, wbuf, n);
    if (rc == QB_OK)
        qbh_fwd_rmsnorm(x, M, n, wbuf, c->rms_eps, c->gemma ? 1.0 : 0.0);
    return rc;
}

/* Layer L's norm `what` ("input_layernorm") applied to x. */
static qb_status lnorm(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const char *what,
                       float *x, int64_t M, int64_t n, float *wbuf)
{
    char name[160];
    snprintf(name, sizeof name, "model.layers.%lld.%s.weight", (long long)L, what);
    return norm(w, c, name, x, M, n, wbuf);
}

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

/* out[M][H] = down(act(gate(x)) * up(x)) with the projections `prefix`
 * + gate/up/down names (e.g. "mlp." with "gate_proj"...; mixtral experts
 * "w1", "w3", "w2"), intermediate size I. */
static qb_status mlp(qbh_fwd_weights *w, const qbh_fwd_cfg *c, fwd_bufs *b, int64_t L,
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

/* The expert block of layer L on h[T][H] into out[T][H] (docs/forward.md,
 * "Architectures"): router softmax over all experts (in double), the
 * top_k per token (renormalised for mixtral and norm_topk_prob), or
 * DeepSeek's routing (forward_route.c), each expert run once on the
 * tokens routed to it; qwen2_moe adds the shared expert gated by
 * sigmoid(shared_expert_gate(h)), DeepSeek its shared experts ungated. */
static qb_status moe(qbh_fwd_weights *w, const qbh_fwd_cfg *c, fwd_bufs *b, int64_t L,
                     const float *h, int64_t T, float *out)
{
    static const char *const mix[3] = {"w1", "w3", "w2"};
    static const char *const qwen[3] = {"gate_proj", "up_proj", "down_proj"};
    int mixtral = c->moe == QBH_MOE_MIXTRAL;
    int64_t H = c->hidden, E = c->n_experts, K = c->top_k, t, e, i, k, n;
    char prefix[96];
    double *wt = NULL;     /* [T][E] routing weight, 0 when not chosen */
    float *bias = NULL;    /* deepseek_v3: e_score_correction_bias */
    int64_t *rows = NULL;  /* tokens routed to the current expert */
    qb_status rc;

    wt = qbh_fwd_calloc(w->h, (size_t)(T * E), sizeof *wt);
    rows = w->h->alloc(w->h, (size_t)T * sizeof *rows);
    if (!wt || !rows) {
        rc = w->h->set_error(w->h, QB_E_NOMEM, "forward: out of memory for the routing of layer %lld",
                           (long long)L);
        goto out;
    }
    if ((rc = qbh_fwd_linear(w, L, mixtral ? "block_sparse_moe.gate" : "mlp.gate", h, T, H, b->r,
                             E)))
        goto out;
    if (c->moe == QBH_MOE_DEEPSEEK) {
        if (c->ds_route == QBH_DS_NOAUX_TC) {
            /* V3's router bias, a buffer of the gate (kept in float32). */
            char bn[160];
            bias = w->h->alloc(w->h, (size_t)E * sizeof *bias);
            if (!bias) {
                rc = w->h->set_error(w->h, QB_E_NOMEM, "forward: out of memory");
                goto out;
            }
            snprintf(bn, sizeof bn, "model.layers.%lld.mlp.gate.e_score_correction_bias",
                     (long long)L);
            if ((rc = qbh_fwd_vector(w, bn, bias, E)))
                goto out;
        }
        if ((rc = qbh_fwd_route_deepseek(w->h, c, b->r, bias, T, wt)))
            goto out;
    }
    for (t = 0; t < T && c->moe != QBH_MOE_DEEPSEEK; t++) {
        const float *r = b->r + t * E;
        double mx = r[0], z = 0, sum = 0;
        for (e = 1; e < E; e++)
            mx = r[e] > mx ? r[e] : mx;
        for (e = 0; e < E; e++)
            z += exp((double)r[e] - mx);
        /* Top-k by repeated maximum; ties go to the lower index, as
         * torch.topk on CPU returns them. */
        for (k = 0; k < K; k++) {
            int64_t best = -1;
            for (e = 0; e < E; e++)
                if (wt[t * E + e] == 0 && (best < 0 || r[e] > r[best]))
                    best = e;
            wt[t * E + best] = exp((double)r[best] - mx) / z;
            sum += wt[t * E + best];
        }
        if (c->norm_topk)
            for (e = 0; e < E; e++)
                wt[t * E + e] /= sum;
    }
    memset(out, 0, (size_t)(T * H) * sizeof *out);
    for (e = 0; e < E; e++) {
        for (n = 0, t = 0; t < T; t++)
            if (wt[t * E + e] > 0)
                rows[n++] = t;
        if (!n)
            continue;
        for (i = 0; i < n; i++)
            memcpy(b->xs + i * H, h + rows[i] * H, (size_t)H * sizeof(float));
        snprintf(prefix, sizeof prefix, "%s.experts.%lld.", mixtral ? "block_sparse_moe" : "mlp",
                 (long long)e);
        if ((rc = mlp(w, c, b, L, prefix, mixtral ? mix : qwen, b->xs, n, c->moe_intermediate,
                      b->ys)))
            goto out;
        for (i = 0; i < n; i++)
            for (k = 0; k < H; k++)
                out[rows[i] * H + k] += (float)(wt[rows[i] * E + e] * (double)b->ys[i * H + k]);
    }
    if (c->shared_intermediate && c->moe == QBH_MOE_DEEPSEEK) {
        /* DeepseekV3MoE adds the shared experts ungated. */
        if ((rc = mlp(w, c, b, L, "mlp.shared_experts.", qwen, h, T, c->shared_intermediate,
                      b->ys)))
            goto out;
        for (k = 0; k < T * H; k++)
            out[k] += b->ys[k];
    } else if (c->shared_intermediate) {
        float gate[1];
        if ((rc = mlp(w, c, b, L, "mlp.shared_expert.", qwen, h, T, c->shared_intermediate,
                      b->ys)))
            goto out;
        for (t = 0; t < T; t++) {
            if ((rc = qbh_fwd_linear(w, L, "mlp.shared_expert_gate", h + t * H, 1, H, gate, 1)))
                goto out;
            for (k = 0; k < H; k++)
                out[t * H + k] += (float)((double)b->ys[t * H + k] / (1.0 + exp(-(double)gate[0])));
        }
    }
    rc = QB_OK;
out:
    w->h->free(w->h, wt);
    w->h->free(w->h, rows);
    w->h->free(w->h, bias);
    return rc;
}

static qb_status layer(qbh_fwd_weights *w, const qbh_fwd_cfg *c, fwd_bufs *b, int64_t L,
                       int64_t T)
{
    int64_t H = c->hidden, I = c->intermediate, hd = c->head_dim;
    int64_t Q = c->n_heads * hd, KV = c->n_kv_heads * hd, i;
    int64_t window = qbh_fwd_layer_window(c, L);
    const double *inv = window && c->rope_local_theta > 0 ? b->inv_local : b->inv;
    qb_status rc;

    memcpy(b->h, b->x, (size_t)(T * H) * sizeof(float));
    if ((rc = lnorm(w, c, L, "input_layernorm", b->h, T, H, b->wn)))
        return rc;
    if (c->mla) {
        if ((rc = qbh_fwd_mla(w, c, L, b->h, T, b->inv, b->o)))
            return rc;
        goto residual;
    }
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
    if (c->qk_norm && ((rc = lnorm(w, c, L, "self_attn.q_norm", b->q, T * c->n_heads, hd, b->wn)) ||
                       (rc = lnorm(w, c, L, "self_attn.k_norm", b->k, T * c->n_kv_heads, hd,
                                   b->wn))))
        return rc;
    /* rotate_half; gpt-oss's yarn multiplies cos and sin by its attention
     * factor (1 for every other rope). */
    qbh_fwd_rope_ex(b->q, T, c->n_heads, hd, 0, c->rot_dim, inv, 0, c->rope_attn_factor);
    qbh_fwd_rope_ex(b->k, T, c->n_kv_heads, hd, 0, c->rot_dim, inv, 0, c->rope_attn_factor);
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
    if (c->sandwich && (rc = lnorm(w, c, L, "post_attention_layernorm", b->o, T, H, b->wn)))
        return rc;
residual:
    for (i = 0; i < T * H; i++)
        b->x[i] += b->o[i];

    memcpy(b->h, b->x, (size_t)(T * H) * sizeof(float));
    if ((rc = lnorm(w, c, L, c->sandwich ? "pre_feedforward_layernorm" : "post_attention_layernorm",
                    b->h, T, H, b->wn)))
        return rc;
    if (c->moe == QBH_MOE_GPTOSS) {
        if ((rc = qbh_fwd_gptoss_moe(w, c, L, b->h, T, b->o)))
            return rc;
    } else if (qbh_fwd_layer_moe(c, L)) {
        if ((rc = moe(w, c, b, L, b->h, T, b->o)))
            return rc;
    } else if (has_fused(w, L, "mlp.gate_up_proj")) {
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
        if ((rc = mlp(w, c, b, L, "mlp.", names, b->h, T, I, b->o)))
            return rc;
    }
    if (c->sandwich && (rc = lnorm(w, c, L, "post_feedforward_layernorm", b->o, T, H, b->wn)))
        return rc;
    for (i = 0; i < T * H; i++)
        b->x[i] += b->o[i];
    return QB_OK;
}

qb_status qbh_forward(const qbh_fwd_model *m, const int64_t *tokens, size_t n, float **logits,
                      int64_t *vocab)
{
    const qb_host *hs = m->host;
    qbh_fwd_cfg c;
    qbh_fwd_weights w;
    fwd_bufs b;
    float *out = NULL;
    int64_t L, T = (int64_t)n;
    qb_status rc;
    int have_bufs = 0;
    long anon, peak_anon = 0;

    assert(tokens && n > 0 && logits && vocab);
    *logits = NULL;
    qbh_fwd_weights_init(&w, m);
    rc = qbh_fwd_cfg_parse(hs, w.path, m->src->info->config_json, &c);
    if (rc)
        return rc;
    w.tied = c.tied;
    if ((rc = bufs_alloc(&w, &b, &c, n)))
        goto out;
    have_bufs = 1;
    qbh_fwd_rope_inv_freq(&c, 0, b.inv);
    qbh_fwd_rope_inv_freq(&c, 1, b.inv_local);
    out = hs->alloc(hs, n * (size_t)c.vocab * sizeof *out);
    if (!out) {
        rc = hs->set_error(hs, QB_E_NOMEM, "forward: out of memory for %zu x %lld logits", n,
                           (long long)c.vocab);
        goto out;
    }
    if ((rc = qbh_fwd_embed(&w, tokens, n, c.hidden, b.x)))
        goto out;
    if (c.gemma) {
        /* Gemma scales the embedding by sqrt(hidden_size). transformers
         * casts the factor to the model dtype first (48 stays 48 in bf16,
         * sqrt(3072) becomes 55.5); llama.cpp uses the exact value, as here. */
        double sc = sqrt((double)c.hidden);
        size_t i;
        for (i = 0; i < n * (size_t)c.hidden; i++)
            b.x[i] = (float)((double)b.x[i] * sc);
    }
    for (L = 0; L < c.n_layers; L++) {
        if (hs->cancelled(hs)) {
            rc = hs->set_error(hs, QB_E_CANCELLED, "forward: cancelled at layer %lld",
                               (long long)L);
            goto out;
        }
        if ((rc = layer(&w, &c, &b, L, T)))
            goto out;
        anon = rss_anon_kb();
        peak_anon = anon > peak_anon ? anon : peak_anon;
        hs->progress(hs, (uint64_t)L + 1, (uint64_t)c.n_layers, "layers");
    }
    if ((rc = norm(&w, &c, "model.norm.weight", b.x, T, c.hidden, b.wn)) ||
        (rc = qbh_fwd_linear(&w, -1, "lm_head", b.x, T, c.hidden, out, c.vocab)))
        goto out;
    if (c.final_softcap > 0)
        qbh_fwd_softcap(out, n * (size_t)c.vocab, c.final_softcap);
    /* bench/forward reads this line: the products' share of the time and
     * their weight throughput, to compare with the standalone kernel. */
    if (w.lb)
        hs->log(hs, QB_LOG_INFO, "%s: %zu tokens; linears %.3f s, %.3f GB of weights, %.2f GB/s; "
                "%s %llu, %.3f s, %.3f GB %s, %.2f GB/s; peak anonymous RSS %.1f MB", w.path, n,
                w.lin_seconds, 1e-9 * (double)w.lin_bytes,
                w.lin_seconds > 0 ? 1e-9 * (double)w.lin_bytes / w.lin_seconds : 0.0,
                w.lb->name, (unsigned long long)w.lin_backend, w.be_seconds,
                1e-9 * (double)w.be_bytes, w.lb->bytes_what,
                w.be_seconds > 0 ? 1e-9 * (double)w.be_bytes / w.be_seconds : 0.0,
                (double)peak_anon / 1024.0);
    else
        hs->log(hs, QB_LOG_INFO, "%s: %zu tokens; linears %.3f s, %.3f GB of weights, %.2f GB/s; "
                "no linear backend; peak anonymous RSS %.1f MB", w.path, n, w.lin_seconds,
                1e-9 * (double)w.lin_bytes,
                w.lin_seconds > 0 ? 1e-9 * (double)w.lin_bytes / w.lin_seconds : 0.0,
                (double)peak_anon / 1024.0);
    *logits = out;
    *vocab = c.vocab;
    out = NULL;
out:
    hs->free(hs, out);
    if (have_bufs)
        bufs_free(&w, &b);
    return rc;
}
