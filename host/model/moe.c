/*
 * quantbridge model library — the mixture-of-experts block of mixtral,
 * qwen2/3-moe and DeepSeek-V2/V3 (docs/forward.md, "Architectures"; the
 * DeepSeek router is deepseek_route.c): routing, each expert once on the
 * tokens routed to it, the shared experts.
 */
#include "fwd.h"

#include <math.h>
#include <string.h>

qb_status qbh_fwd_moe(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b, int64_t L,
                      const float *h, int64_t T, float *out)
{
    static const char *const mix[3] = {"w1", "w3", "w2"};
    static const char *const qwen[3] = {"gate_proj", "up_proj", "down_proj"};
    /* MiniMax-M2 keeps Mixtral's names and routes as DeepSeek-V3 does. */
    int mixtral = c->moe == QBH_MOE_MIXTRAL || c->moe == QBH_MOE_MINIMAX;
    int ds = c->moe == QBH_MOE_DEEPSEEK || c->moe == QBH_MOE_MINIMAX;
    int64_t H = c->hidden, E = c->n_experts, K = c->top_k, t, e, i, k, n;
    char prefix[96];
    double *wt = NULL;    /* [T][E] routing weight, 0 when not chosen */
    float *bias = NULL;   /* deepseek_v3: e_score_correction_bias */
    int64_t *rows = NULL; /* tokens routed to the current expert */
    qb_status rc;

    wt = qbh_fwd_calloc(w->h, (size_t)(T * E), sizeof *wt);
    rows = w->h->alloc(w->h, (size_t)T * sizeof *rows);
    if (!wt || !rows) {
        rc = w->h->set_error(w->h, QB_E_NOMEM,
                             "forward: out of memory for the routing of layer %lld", (long long)L);
        goto out;
    }
    if ((rc = qbh_fwd_linear(w, L, mixtral ? "block_sparse_moe.gate" : "mlp.gate", h, T, H, b->r,
                             E)))
        goto out;
    if (ds) {
        if (c->ds_route == QBH_DS_NOAUX_TC) {
            /* V3's router bias, a buffer of the gate (kept in float32). */
            char bn[160];
            bias = w->h->alloc(w->h, (size_t)E * sizeof *bias);
            if (!bias) {
                rc = w->h->set_error(w->h, QB_E_NOMEM, "forward: out of memory");
                goto out;
            }
            snprintf(bn, sizeof bn, "model.layers.%lld.%s.e_score_correction_bias", (long long)L,
                     mixtral ? "block_sparse_moe" : "mlp.gate");
            if ((rc = qbh_fwd_vector(w, bn, bias, E)))
                goto out;
        }
        if ((rc = qbh_fwd_route_deepseek(w->h, c, b->r, bias, T, wt)))
            goto out;
    }
    for (t = 0; t < T && !ds; t++) {
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
        if ((rc = qbh_fwd_mlp(w, c, b, L, prefix, mixtral ? mix : qwen, b->xs, n,
                              c->moe_intermediate, b->ys)))
            goto out;
        for (i = 0; i < n; i++)
            for (k = 0; k < H; k++)
                out[rows[i] * H + k] += (float)(wt[rows[i] * E + e] * (double)b->ys[i * H + k]);
    }
    if (c->shared_intermediate && c->moe == QBH_MOE_DEEPSEEK) {
        /* DeepseekV3MoE adds the shared experts ungated. */
        if ((rc = qbh_fwd_mlp(w, c, b, L, "mlp.shared_experts.", qwen, h, T, c->shared_intermediate,
                              b->ys)))
            goto out;
        for (k = 0; k < T * H; k++)
            out[k] += b->ys[k];
    } else if (c->shared_intermediate) {
        float gate[1];
        if ((rc = qbh_fwd_mlp(w, c, b, L, "mlp.shared_expert.", qwen, h, T, c->shared_intermediate,
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
