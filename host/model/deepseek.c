/*
 * quantbridge model library — DeepSeek-V2/V3/V3.2 multi-head latent
 * attention, as transformers 5.24's DeepseekV2Attention,
 * DeepseekV3Attention and DeepseekV32Attention compute it (docs/forward.md,
 * "MLA"; V3.2 hides from each query the keys its indexer did not keep,
 * dsa.c):
 *
 *   q       = q_b_proj(q_a_layernorm(q_a_proj(h)))   (or q_proj(h) when
 *             q_lora_rank is null), per head [q_nope | q_pe];
 *   [c | k_pe] = kv_a_proj_with_mqa(h), c of kv_lora_rank, k_pe of
 *             qk_rope_head_dim, one for all heads;
 *   per head [k_nope | v] = kv_b_proj(kv_a_layernorm(c));
 *   q_pe, k_pe rotated (neighbour pairs for V2 and V3's rope_interleave),
 *             cos and sin times yarn's attention factor;
 *   k = [k_nope | k_pe], scores q.k * attn_scale, causal softmax, times v;
 *   out = o_proj(the heads' outputs).
 *
 * q_a_layernorm and kv_a_layernorm are built without the config's
 * rms_norm_eps, so they use DeepseekV3RMSNorm's default 1e-6.
 */
#include "fwd.h"

#include <string.h>

#define MLA_NORM_EPS 1e-6

/* RMSNorm of rows x[M][n] with layer L's weight `what`. */
static qb_status mla_norm(qbh_fwd_weights *w, int64_t L, const char *what, float *x, int64_t M,
                          int64_t n)
{
    char name[160];
    float *wb = w->h->alloc(w->h, (size_t)n * sizeof *wb);
    qb_status rc;
    if (!wb)
        return w->h->set_error(w->h, QB_E_NOMEM, "forward: out of memory");
    snprintf(name, sizeof name, "model.layers.%lld.%s.weight", (long long)L, what);
    rc = qbh_fwd_vector(w, name, wb, n);
    if (rc == QB_OK)
        qbh_fwd_rmsnorm(x, M, n, wb, MLA_NORM_EPS, 0.0);
    w->h->free(w->h, wb);
    return rc;
}

qb_status qbh_fwd_mla(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const float *h,
                      int64_t T, const double *inv, float *out)
{
    int64_t H = c->hidden, nh = c->n_heads, dn = c->qk_nope, dr = c->qk_rope, dv = c->v_head_dim;
    int64_t dqk = dn + dr, R = c->kv_lora_rank, Rq = c->q_lora_rank, t, hh;
    /* Heads padded with zeros to one width: zeros add nothing to q.k and
     * the extra output columns are dropped, so qbh_fwd_attention runs as is. */
    int64_t hd = dqk > dv ? dqk : dv;
    float *qa = NULL, *q = NULL, *ckv = NULL, *kv = NULL, *Q = NULL, *K = NULL, *V = NULL;
    float *A = NULL, *o = NULL, *lat = NULL;
    unsigned char *keep = NULL; /* DeepSeek-V3.2: the keys the indexer keeps */
    qb_status rc;

    q = w->h->alloc(w->h, (size_t)(T * nh * dqk) * sizeof *q);
    ckv = w->h->alloc(w->h, (size_t)(T * (R + dr)) * sizeof *ckv);
    kv = w->h->alloc(w->h, (size_t)(T * nh * (dn + dv)) * sizeof *kv);
    Q = qbh_fwd_calloc(w->h, (size_t)(T * nh * hd), sizeof *Q);
    K = qbh_fwd_calloc(w->h, (size_t)(T * nh * hd), sizeof *K);
    V = qbh_fwd_calloc(w->h, (size_t)(T * nh * hd), sizeof *V);
    A = w->h->alloc(w->h, (size_t)(T * nh * hd) * sizeof *A);
    o = w->h->alloc(w->h, (size_t)(T * nh * dv) * sizeof *o);
    lat = w->h->alloc(w->h, (size_t)(T * R) * sizeof *lat);
    if (Rq)
        qa = w->h->alloc(w->h, (size_t)(T * Rq) * sizeof *qa);
    if (c->index_topk)
        keep = w->h->alloc(w->h, (size_t)(T * T));
    if (!q || !ckv || !kv || !Q || !K || !V || !A || !o || !lat || (Rq && !qa) ||
        (c->index_topk && !keep)) {
        rc = w->h->set_error(w->h, QB_E_NOMEM,
                             "forward: out of memory for the attention of %lld tokens",
                             (long long)T);
        goto out;
    }
    if (Rq) {
        if ((rc = qbh_fwd_linear(w, L, "self_attn.q_a_proj", h, T, H, qa, Rq)) ||
            (rc = mla_norm(w, L, "self_attn.q_a_layernorm", qa, T, Rq)) ||
            (rc = qbh_fwd_linear(w, L, "self_attn.q_b_proj", qa, T, Rq, q, nh * dqk)))
            goto out;
    } else if ((rc = qbh_fwd_linear(w, L, "self_attn.q_proj", h, T, H, q, nh * dqk))) {
        goto out;
    }
    if ((rc = qbh_fwd_linear(w, L, "self_attn.kv_a_proj_with_mqa", h, T, H, ckv, R + dr)))
        goto out;
    /* The latent: the first kv_lora_rank columns of each row. */
    for (t = 0; t < T; t++)
        memcpy(lat + t * R, ckv + t * (R + dr), (size_t)R * sizeof *lat);
    if ((rc = mla_norm(w, L, "self_attn.kv_a_layernorm", lat, T, R)))
        goto out;
    if ((rc = qbh_fwd_linear(w, L, "self_attn.kv_b_proj", lat, T, R, kv, nh * (dn + dv))))
        goto out;
    /* Rotary part: q_pe of every head, and the one shared k_pe. */
    qbh_fwd_rope_ex(q, T, nh, dqk, dn, dr, inv, c->rope_interleave, c->rope_attn_factor);
    qbh_fwd_rope_ex(ckv, T, 1, R + dr, R, dr, inv, c->rope_interleave, c->rope_attn_factor);
    for (t = 0; t < T; t++)
        for (hh = 0; hh < nh; hh++) {
            float *Qh = Q + (t * nh + hh) * hd, *Kh = K + (t * nh + hh) * hd;
            const float *kvh = kv + (t * nh + hh) * (dn + dv);
            memcpy(Qh, q + (t * nh + hh) * dqk, (size_t)dqk * sizeof *Qh);
            memcpy(Kh, kvh, (size_t)dn * sizeof *Kh);
            memcpy(Kh + dn, ckv + t * (R + dr) + R, (size_t)dr * sizeof *Kh);
            memcpy(V + (t * nh + hh) * hd, kvh + dn, (size_t)dv * sizeof *V);
        }
    /* DeepSeek-V3.2: its indexer reads the normalised q latent (q_resid). */
    if (c->index_topk && (rc = qbh_fwd_dsa_keep(w, c, L, h, qa, T, inv, keep)))
        goto out;
    rc = keep ? qbh_fwd_attention_keep(w->h, Q, K, V, T, nh, nh, hd, c->attn_scale, keep, A)
              : qbh_fwd_attention(w->h, Q, K, V, T, nh, nh, hd, 0, c->attn_scale, 0.0, A);
    if (rc)
        goto out;
    for (t = 0; t < T * nh; t++)
        memcpy(o + t * dv, A + t * hd, (size_t)dv * sizeof *o);
    rc = qbh_fwd_linear(w, L, "self_attn.o_proj", o, T, nh * dv, out, H);
out:
    w->h->free(w->h, qa);
    w->h->free(w->h, q);
    w->h->free(w->h, ckv);
    w->h->free(w->h, kv);
    w->h->free(w->h, Q);
    w->h->free(w->h, K);
    w->h->free(w->h, V);
    w->h->free(w->h, A);
    w->h->free(w->h, o);
    w->h->free(w->h, lat);
    w->h->free(w->h, keep);
    return rc;
}
