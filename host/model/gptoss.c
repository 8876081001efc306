/*
 * quantbridge model library — gpt-oss's expert block, as transformers
 * 5.24's GptOssTopKRouter and GptOssExperts compute it (docs/forward.md,
 * "gpt-oss"):
 *
 *   r   = h . router.weight^T + router.bias, per token;
 *   the top_k logits (ties: the lower index), softmax over those only;
 *   per chosen expert e, with its fused [in, out] weights:
 *     gu   = x . gate_up_proj[e] + gate_up_proj_bias[e];
 *     gate = min(gu[2c], limit); up = clamp(gu[2c + 1], -limit, limit);
 *     a    = (up + 1) * gate * sigmoid(alpha * gate);
 *     y    = a . down_proj[e] + down_proj_bias[e];
 *   out = sum over the chosen experts of weight * y.
 *
 * Source and W4A16 directory both serve the fused tensors (the sm86-w4a16
 * reader recombines its per-expert parts: docs/w4a16-format.md,
 * "gpt-oss"), so the expert products read dense rows in both cases, one
 * row block of one expert at a time.
 */
#include "fwd.h"

#include <math.h>
#include <string.h>

/* Floats of one block of an expert's rows (1 MiB). */
#define GPTOSS_BLOCK_ELEMS ((int64_t)1 << 18)

qb_status qbh_fwd_fused_expert(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L,
                               const char *block, const char *what, int with_bias, int64_t e,
                               const float *x, int64_t M, int64_t K, float *y, int64_t N)
{
    char name[160], bname[168];
    size_t idx, bidx;
    const qb_tensor_info *ti;
    int64_t rows = GPTOSS_BLOCK_ELEMS / N, k0, k, m, n, nb;
    double *acc = NULL;
    float *wb = NULL, *b = NULL;
    qb_status rc;

    snprintf(name, sizeof name, "model.layers.%lld.%s.experts.%s", (long long)L, block, what);
    snprintf(bname, sizeof bname, "model.layers.%lld.%s.experts.%s_bias", (long long)L, block,
             what);
    if ((rc = qbh_fwd_find(w, name, &idx)) || (with_bias && (rc = qbh_fwd_find(w, bname, &bidx))))
        return rc;
    ti = qbh_fwd_tensor(w, idx);
    if (ti->n_dims != 3 || ti->dims[0] != c->n_experts || ti->dims[1] != K || ti->dims[2] != N)
        return w->h->set_error(w->h, QB_E_MISMATCH,
                               "forward: %s: %s is not [%lld, %lld, %lld] "
                               "(num_local_experts, in, out)",
                               w->path, name, (long long)c->n_experts, (long long)K, (long long)N);
    ti = with_bias ? qbh_fwd_tensor(w, bidx) : NULL;
    if (ti && (ti->n_dims != 2 || ti->dims[0] != c->n_experts || ti->dims[1] != N))
        return w->h->set_error(w->h, QB_E_MISMATCH, "forward: %s: %s is not [%lld, %lld]", w->path,
                               bname, (long long)c->n_experts, (long long)N);
    if (rows < 1)
        rows = 1;
    if (rows > K)
        rows = K;
    acc = qbh_fwd_calloc(w->h, (size_t)(M * N), sizeof *acc);
    wb = w->h->alloc(w->h, (size_t)(rows * N) * sizeof *wb);
    b = qbh_fwd_calloc(w->h, (size_t)N, sizeof *b);
    if (!acc || !wb || !b) {
        rc = w->h->set_error(w->h, QB_E_NOMEM, "forward: out of memory for %s", name);
        goto out;
    }
    /* The matrix view of [E, K, N] is [E * K, N]: expert e is rows
     * [e * K, (e + 1) * K). */
    for (k0 = 0; k0 < K; k0 += rows) {
        nb = K - k0 < rows ? K - k0 : rows;
        if ((rc = qbh_fwd_read_rows(w, NULL, idx, e * K + k0, nb, wb)))
            goto out;
        for (m = 0; m < M; m++)
            for (k = 0; k < nb; k++) {
                double xv = x[m * K + k0 + k];
                const float *wr = wb + k * N;
                double *am = acc + m * N;
                for (n = 0; n < N; n++)
                    am[n] += xv * (double)wr[n];
            }
    }
    w->lin_bytes += (uint64_t)K * (uint64_t)N * sizeof(float);
    if (with_bias && (rc = qbh_fwd_read_rows(w, NULL, bidx, e, 1, b)))
        goto out;
    for (m = 0; m < M; m++)
        for (n = 0; n < N; n++)
            y[m * N + n] = (float)(acc[m * N + n] + (double)b[n]);
out:
    w->h->free(w->h, acc);
    w->h->free(w->h, wb);
    w->h->free(w->h, b);
    return rc;
}

qb_status qbh_fwd_gptoss_moe(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const float *h,
                             int64_t T, float *out)
{
    int64_t H = c->hidden, I = c->moe_intermediate, E = c->n_experts, K = c->top_k;
    int64_t t, e, i, k, n;
    double lim = c->glu_limit, alpha = c->glu_alpha;
    float *r = NULL, *xs = NULL, *gu = NULL, *a = NULL, *ys = NULL;
    double *wt = NULL;     /* [T][E]: routing weight, 0 when not chosen */
    unsigned char *chosen = NULL;
    int64_t *rows = NULL;
    qb_status rc;

    r = w->h->alloc(w->h, (size_t)(T * E) * sizeof *r);
    wt = qbh_fwd_calloc(w->h, (size_t)(T * E), sizeof *wt);
    chosen = qbh_fwd_calloc(w->h, (size_t)(T * E), 1);
    rows = w->h->alloc(w->h, (size_t)T * sizeof *rows);
    xs = w->h->alloc(w->h, (size_t)(T * H) * sizeof *xs);
    gu = w->h->alloc(w->h, (size_t)(T * 2 * I) * sizeof *gu);
    a = w->h->alloc(w->h, (size_t)(T * I) * sizeof *a);
    ys = w->h->alloc(w->h, (size_t)(T * H) * sizeof *ys);
    if (!r || !wt || !chosen || !rows || !xs || !gu || !a || !ys) {
        rc = w->h->set_error(w->h, QB_E_NOMEM,
                             "forward: out of memory for the experts of layer %lld", (long long)L);
        goto out;
    }
    if ((rc = qbh_fwd_linear(w, L, "mlp.router", h, T, H, r, E)))
        goto out;
    for (t = 0; t < T; t++) {
        const float *rt = r + t * E;
        unsigned char *ct = chosen + t * E;
        double mx = -INFINITY, z = 0;
        /* torch.topk first (repeated maximum, ties to the lower index),
         * then softmax over the chosen logits only. */
        for (k = 0; k < K; k++) {
            int64_t best = -1;
            for (e = 0; e < E; e++)
                if (!ct[e] && (best < 0 || rt[e] > rt[best]))
                    best = e;
            ct[best] = 1;
            mx = (double)rt[best] > mx ? (double)rt[best] : mx;
        }
        for (e = 0; e < E; e++)
            if (ct[e])
                z += (wt[t * E + e] = exp((double)rt[e] - mx));
        for (e = 0; e < E; e++)
            wt[t * E + e] /= z;
    }
    memset(out, 0, (size_t)(T * H) * sizeof *out);
    for (e = 0; e < E; e++) {
        for (n = 0, t = 0; t < T; t++)
            if (chosen[t * E + e])
                rows[n++] = t;
        if (!n)
            continue;
        for (i = 0; i < n; i++)
            memcpy(xs + i * H, h + rows[i] * H, (size_t)H * sizeof *xs);
        if ((rc = qbh_fwd_fused_expert(w, c, L, "mlp", "gate_up_proj", 1, e, xs, n, H, gu, 2 * I)))
            goto out;
        for (i = 0; i < n * I; i++) {
            /* gate and up interleave along the output (gate_up[..., ::2],
             * gate_up[..., 1::2]). */
            double g = gu[2 * i], u = gu[2 * i + 1];
            g = g > lim ? lim : g;
            u = u > lim ? lim : u < -lim ? -lim : u;
            a[i] = (float)((u + 1.0) * (g / (1.0 + exp(-g * alpha))));
        }
        if ((rc = qbh_fwd_fused_expert(w, c, L, "mlp", "down_proj", 1, e, a, n, I, ys, H)))
            goto out;
        for (i = 0; i < n; i++)
            for (k = 0; k < H; k++)
                out[rows[i] * H + k] += (float)(wt[rows[i] * E + e] * (double)ys[i * H + k]);
    }
    rc = QB_OK;
out:
    w->h->free(w->h, r);
    w->h->free(w->h, wt);
    w->h->free(w->h, chosen);
    w->h->free(w->h, rows);
    w->h->free(w->h, xs);
    w->h->free(w->h, gu);
    w->h->free(w->h, a);
    w->h->free(w->h, ys);
    return rc;
}
