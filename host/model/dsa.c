/*
 * quantbridge model library — DeepSeek-V3.2's indexer (DeepSeek sparse
 * attention), as transformers 5.24's DeepseekV32Indexer computes it
 * (docs/forward.md, "DeepSeek-V3.2 sparse attention"):
 *
 *   q[t, j]  = wq_b(qa[t]) per indexer head j (index_n_heads of
 *              index_head_dim), its first qk_rope_head_dim rotated;
 *   k[s]     = LayerNorm(wk(h[s])) (weight, bias, eps 1e-6), its first
 *              qk_rope_head_dim rotated (rotate_half pairs (i, i + d/2),
 *              not MLA's neighbour pairs; the same cos/sin, yarn's
 *              attention factor included);
 *   score[t, s] = sum_j weights_proj(h[t])[j] * index_n_heads^-1/2
 *                 * relu(q[t, j] . k[s] * index_head_dim^-1/2),  s <= t;
 *   query t keeps the min(index_topk, t + 1) keys of the best score.
 *
 * DeepseekV32Indexer skips the reference code's Hadamard rotation and FP8
 * scoring (an orthogonal rotation keeps dot products); so does this file.
 * Scores are summed in double; ties go to the lower position.
 */
#include "fwd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DSA_NORM_EPS 1e-6 /* DeepseekV32Indexer's nn.LayerNorm(eps=1e-6) */

typedef struct dsa_job {
    const qb_host *h;
    const float *q, *k, *wt; /* [T][nh][D], [T][D], [T][nh] */
    int64_t T, nh, D, topk;
    unsigned char *keep;
} dsa_job;

typedef struct dsa_pick {
    double score;
    int64_t s;
} dsa_pick;

/* Best score first; equal scores: the lower position first. */
static int pick_cmp(const void *a, const void *b)
{
    const dsa_pick *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s;
}

static qb_status dsa_query(void *arg, size_t item)
{
    const dsa_job *j = arg;
    int64_t t = (int64_t)item, s, hh, d, n = t + 1;
    unsigned char *row = j->keep + t * j->T;
    double sc = 1.0 / sqrt((double)j->D), wsc = 1.0 / sqrt((double)j->nh);
    dsa_pick *p;

    memset(row, 0, (size_t)j->T);
    if (n <= j->topk) {
        memset(row, 1, (size_t)n); /* every visible key is among the top k */
        return QB_OK;
    }
    p = j->h->alloc(j->h, (size_t)n * sizeof *p);
    if (!p)
        return j->h->set_error(j->h, QB_E_NOMEM, "forward: out of memory in the indexer");
    for (s = 0; s < n; s++) {
        const float *ks = j->k + s * j->D;
        double score = 0.0;
        for (hh = 0; hh < j->nh; hh++) {
            const float *qt = j->q + (t * j->nh + hh) * j->D;
            double dot = 0.0;
            for (d = 0; d < j->D; d++)
                dot += (double)qt[d] * (double)ks[d];
            dot *= sc;
            if (dot > 0) /* relu */
                score += (double)j->wt[t * j->nh + hh] * wsc * dot;
        }
        p[s].score = score;
        p[s].s = s;
    }
    qsort(p, (size_t)n, sizeof *p, pick_cmp);
    for (s = 0; s < j->topk; s++)
        row[p[s].s] = 1;
    j->h->free(j->h, p);
    return QB_OK;
}

/* LayerNorm of rows x[M][n] with weight g and bias b. */
static void layernorm(float *x, int64_t M, int64_t n, const float *g, const float *b)
{
    int64_t m, i;
    for (m = 0; m < M; m++) {
        float *r = x + m * n;
        double mean = 0.0, var = 0.0, inv;
        for (i = 0; i < n; i++)
            mean += r[i];
        mean /= (double)n;
        for (i = 0; i < n; i++)
            var += ((double)r[i] - mean) * ((double)r[i] - mean);
        inv = 1.0 / sqrt(var / (double)n + DSA_NORM_EPS);
        for (i = 0; i < n; i++)
            r[i] = (float)(((double)r[i] - mean) * inv * (double)g[i] + (double)b[i]);
    }
}

qb_status qbh_fwd_dsa_keep(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const float *h,
                           const float *qa, int64_t T, const double *inv, unsigned char *keep)
{
    int64_t nh = c->index_n_heads, D = c->index_head_dim, H = c->hidden;
    float *q = w->h->alloc(w->h, (size_t)(T * nh * D) * sizeof *q);
    float *k = w->h->alloc(w->h, (size_t)(T * D) * sizeof *k);
    float *wt = w->h->alloc(w->h, (size_t)(T * nh) * sizeof *wt);
    float *g = w->h->alloc(w->h, (size_t)D * sizeof *g), *b = w->h->alloc(w->h, (size_t)D * sizeof *b);
    char name[160];
    qb_status rc;

    if (!q || !k || !wt || !g || !b) {
        rc = w->h->set_error(w->h, QB_E_NOMEM, "forward: out of memory for the indexer");
        goto out;
    }
    if ((rc = qbh_fwd_linear(w, L, "self_attn.indexer.wq_b", qa, T, c->q_lora_rank, q, nh * D)) ||
        (rc = qbh_fwd_linear(w, L, "self_attn.indexer.wk", h, T, H, k, D)) ||
        (rc = qbh_fwd_linear(w, L, "self_attn.indexer.weights_proj", h, T, H, wt, nh)))
        goto out;
    snprintf(name, sizeof name, "model.layers.%lld.self_attn.indexer.k_norm.weight", (long long)L);
    if ((rc = qbh_fwd_vector(w, name, g, D)))
        goto out;
    snprintf(name, sizeof name, "model.layers.%lld.self_attn.indexer.k_norm.bias", (long long)L);
    if ((rc = qbh_fwd_vector(w, name, b, D)))
        goto out;
    layernorm(k, T, D, g, b);
    /* [rope | pass] in each head: the rotated part comes first here. */
    qbh_fwd_rope_ex(q, T, nh, D, 0, c->qk_rope, inv, 0, c->rope_attn_factor);
    qbh_fwd_rope_ex(k, T, 1, D, 0, c->qk_rope, inv, 0, c->rope_attn_factor);
    {
        dsa_job j = {w->h, q, k, wt, T, nh, D, c->index_topk, keep};
        rc = w->h->parallel_for(w->h, (size_t)T, dsa_query, &j);
    }
out:
    w->h->free(w->h, q);
    w->h->free(w->h, k);
    w->h->free(w->h, wt);
    w->h->free(w->h, g);
    w->h->free(w->h, b);
    return rc;
}
