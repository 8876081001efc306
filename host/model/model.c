/*
 * quantbridge model library — the pass (docs/forward.md): the embedding,
 * each decoder layer in turn (its attention: dense.c, or DeepSeek's MLA:
 * deepseek.c; its MLP: dense.c, the experts of moe.c, or gpt-oss's:
 * gptoss.c), the final norm and the head. Only the activations of the
 * token sequence stay in memory; each weight is streamed in row blocks
 * when it is used (weights.c), so memory does not grow with the number of
 * layers.
 */
#include "fwd.h"

#include <assert.h>
#include <math.h>
#include <string.h>

static void bufs_free(const qbh_fwd_weights *w, qbh_fwd_bufs *b)
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

static qb_status bufs_alloc(const qbh_fwd_weights *w, qbh_fwd_bufs *b, const qbh_fwd_cfg *c,
                            size_t T)
{
    size_t H = (size_t)c->hidden, I = (size_t)c->intermediate;
    size_t F, E = c->moe ? (size_t)c->n_experts : 1;
    size_t Q = (size_t)(c->n_heads * c->head_dim), KV = (size_t)(c->n_kv_heads * c->head_dim);
    size_t wn = H > (size_t)c->head_dim ? H : (size_t)c->head_dim;
    if ((size_t)c->n_heads > wn) /* gpt-oss's sinks */
        wn = (size_t)c->n_heads;
    if (c->qk_norm_full && Q > wn) /* minimax_m2's q_norm over all heads */
        wn = Q;
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
        return w->h->set_error(w->h, QB_E_NOMEM,
                               "forward: out of memory for the activations of %zu "
                               "tokens",
                               T);
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
        qbh_fwd_rmsnorm(x, M, n, wbuf, c->rms_eps, c->gemma || c->norm_plus1 ? 1.0 : 0.0);
    return rc;
}

qb_status qbh_fwd_lnorm(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const char *what,
                        float *x, int64_t M, int64_t n, float *wbuf)
{
    char name[160];
    snprintf(name, sizeof name, "model.layers.%lld.%s.weight", (long long)L, what);
    return norm(w, c, name, x, M, n, wbuf);
}

static qb_status layer(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b, int64_t L,
                       int64_t T)
{
    int64_t H = c->hidden, i;
    qb_status rc;

    memcpy(b->h, b->x, (size_t)(T * H) * sizeof(float));
    if ((rc = qbh_fwd_lnorm(w, c, L, "input_layernorm", b->h, T, H, b->wn)))
        return rc;
    rc = c->mla                      ? qbh_fwd_mla(w, c, L, b->h, T, b->inv, b->o)
         : c->hybrid                 ? qbh_fwd_hybrid_mixer(w, c, b, L, T)
         : c->moe == QBH_MOE_LLAMA4 ? qbh_fwd_llama4_attention(w, c, b, L, T) /* issue 31 */
                                    : qbh_fwd_attention_block(w, c, b, L, T);
    if (rc)
        return rc;
    for (i = 0; i < T * H; i++)
        b->x[i] += b->o[i];

    memcpy(b->h, b->x, (size_t)(T * H) * sizeof(float));
    if ((rc = qbh_fwd_lnorm(w, c, L,
                            c->sandwich ? "pre_feedforward_layernorm" : "post_attention_layernorm",
                            b->h, T, H, b->wn)))
        return rc;
    if (c->moe == QBH_MOE_GPTOSS)
        rc = qbh_fwd_gptoss_moe(w, c, L, b->h, T, b->o);
    else if (c->moe == QBH_MOE_LLAMA4) /* issue 31 */
        rc = qbh_fwd_llama4_ffn(w, c, b, L, T);
    else if (qbh_fwd_layer_moe(c, L))
        rc = qbh_fwd_moe(w, c, b, L, b->h, T, b->o);
    else
        rc = qbh_fwd_dense_mlp(w, c, b, L, T);
    if (rc)
        return rc;
    if (c->sandwich &&
        (rc = qbh_fwd_lnorm(w, c, L, "post_feedforward_layernorm", b->o, T, H, b->wn)))
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
    qbh_fwd_bufs b;
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
    out = m->no_head ? NULL : hs->alloc(hs, n * (size_t)c.vocab * sizeof *out);
    if (!out && !m->no_head) {
        rc = hs->set_error(hs, QB_E_NOMEM, "forward: out of memory for %zu x %lld logits", n,
                           (long long)c.vocab);
        goto out;
    }
    if (c.gemma4) { /* issue 31: its own pass (gemma4.c) */
        if ((rc = qbh_fwd_gemma4_pass(&w, &c, tokens, T, out)))
            goto out;
        goto head_done;
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
            rc =
                hs->set_error(hs, QB_E_CANCELLED, "forward: cancelled at layer %lld", (long long)L);
            goto out;
        }
        if ((rc = layer(&w, &c, &b, L, T)))
            goto out;
        anon = rss_anon_kb();
        peak_anon = anon > peak_anon ? anon : peak_anon;
        hs->progress(hs, (uint64_t)L + 1, (uint64_t)c.n_layers, "layers");
    }
    if (m->no_head) {
        *vocab = 0;
        goto out;
    }
    if ((rc = norm(&w, &c, "model.norm.weight", b.x, T, c.hidden, b.wn)) ||
        (rc = qbh_fwd_linear(&w, -1, "lm_head", b.x, T, c.hidden, out, c.vocab)))
        goto out;
head_done:
    if (c.final_softcap > 0)
        qbh_fwd_softcap(out, n * (size_t)c.vocab, c.final_softcap);
    /* bench/forward reads this line: the products' share of the time and
     * their weight throughput, to compare with the standalone kernel. */
    if (w.lb)
        hs->log(hs, QB_LOG_INFO,
                "%s: %zu tokens; linears %.3f s, %.3f GB of weights, %.2f GB/s; "
                "%s %llu, %.3f s, %.3f GB %s, %.2f GB/s; peak anonymous RSS %.1f MB",
                w.path, n, w.lin_seconds, 1e-9 * (double)w.lin_bytes,
                w.lin_seconds > 0 ? 1e-9 * (double)w.lin_bytes / w.lin_seconds : 0.0, w.lb->name,
                (unsigned long long)w.lin_backend, w.be_seconds, 1e-9 * (double)w.be_bytes,
                w.lb->bytes_what, w.be_seconds > 0 ? 1e-9 * (double)w.be_bytes / w.be_seconds : 0.0,
                (double)peak_anon / 1024.0);
    else
        hs->log(hs, QB_LOG_INFO,
                "%s: %zu tokens; linears %.3f s, %.3f GB of weights, %.2f GB/s; "
                "no linear backend; peak anonymous RSS %.1f MB",
                w.path, n, w.lin_seconds, 1e-9 * (double)w.lin_bytes,
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
