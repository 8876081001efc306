/*
 * quantbridge model library — the token mixers of the Qwen3-Next hybrid
 * (docs/forward.md, "Qwen3-Next"): the gated DeltaNet of the linear-
 * attention layers (input projections, causal depthwise convolution,
 * the gated delta rule run as its recurrence, the gated RMSNorm, out_proj)
 * and the gated full attention of the others (q/k norms, partial
 * rotation, sigmoid output gate). The MLP and the experts are qwen2_moe's
 * (moe.c, dense.c).
 */
#include "fwd.h"

#include <math.h>
#include <string.h>

static int is_linear_layer(const qbh_fwd_cfg *c, int64_t L)
{
    return L < 1024 && (c->linear_map[L / 64] >> (L % 64) & 1);
}

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* F.softplus (beta 1, threshold 20: the identity above it). */
static double softplus(double x)
{
    return x > 20.0 ? x : log1p(exp(x));
}

/* Qwen3NextAttention.forward: q_proj gives per head [query (hd) | gate
 * (hd)]; q_norm / k_norm per head; the first rot_dim dimensions rotate
 * (rotate_half); attention times sigmoid(gate) before o_proj. */
static qb_status gated_attention(qbh_fwd_weights *w, const qbh_fwd_cfg *c, qbh_fwd_bufs *b,
                                 int64_t L, int64_t T)
{
    int64_t H = c->hidden, hd = c->head_dim, nh = c->n_heads;
    int64_t Q = nh * hd, KV = c->n_kv_heads * hd, t, i;
    float *qg = w->h->alloc(w->h, (size_t)(T * 2 * Q) * sizeof *qg);
    qb_status rc;

    if (!qg)
        return w->h->set_error(w->h, QB_E_NOMEM, "forward: out of memory for layer %lld",
                               (long long)L);
    if ((rc = qbh_fwd_linear(w, L, "self_attn.q_proj", b->h, T, H, qg, 2 * Q)) ||
        (rc = qbh_fwd_linear(w, L, "self_attn.k_proj", b->h, T, H, b->k, KV)) ||
        (rc = qbh_fwd_linear(w, L, "self_attn.v_proj", b->h, T, H, b->v, KV)))
        goto out;
    for (t = 0; t < T; t++)
        for (i = 0; i < nh; i++)
            memcpy(b->q + (t * nh + i) * hd, qg + t * 2 * Q + i * 2 * hd,
                   (size_t)hd * sizeof(float));
    if ((rc = qbh_fwd_lnorm(w, c, L, "self_attn.q_norm", b->q, T * nh, hd, b->wn)) ||
        (rc = qbh_fwd_lnorm(w, c, L, "self_attn.k_norm", b->k, T * c->n_kv_heads, hd, b->wn)))
        goto out;
    qbh_fwd_rope_ex(b->q, T, nh, hd, 0, c->rot_dim, b->inv, 0, c->rope_attn_factor);
    qbh_fwd_rope_ex(b->k, T, c->n_kv_heads, hd, 0, c->rot_dim, b->inv, 0, c->rope_attn_factor);
    if ((rc = qbh_fwd_attention(w->h, b->q, b->k, b->v, T, nh, c->n_kv_heads, hd, 0, c->attn_scale,
                                0.0, b->a)))
        goto out;
    for (t = 0; t < T; t++)
        for (i = 0; i < Q; i++) {
            double g = qg[t * 2 * Q + (i / hd) * 2 * hd + hd + i % hd];
            b->a[t * Q + i] = (float)((double)b->a[t * Q + i] * sigmoid(g));
        }
    rc = qbh_fwd_linear(w, L, "self_attn.o_proj", b->a, T, Q, b->o, H);
out:
    w->h->free(w->h, qg);
    return rc;
}

/* The DeltaNet's weights that are no linear: conv1d [conv_dim, 1, K],
 * A_log and dt_bias [nv], the gated norm [dv]. */
typedef struct gdn_params {
    float *conv, *a_log, *dt_bias, *norm;
} gdn_params;

static qb_status gdn_params_read(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L,
                                 int64_t conv_dim, gdn_params *p)
{
    char name[160];
    size_t idx;
    const qb_tensor_info *ti;
    qb_status rc;

    snprintf(name, sizeof name, "model.layers.%lld.linear_attn.conv1d.weight", (long long)L);
    if ((rc = qbh_fwd_find(w, name, &idx)))
        return rc;
    ti = qbh_fwd_tensor(w, idx);
    if (ti->n_dims != 3 || ti->dims[0] != conv_dim || ti->dims[1] != 1 ||
        ti->dims[2] != c->lin_conv)
        return w->h->set_error(w->h, QB_E_MISMATCH, "forward: %s: %s is not [%lld, 1, %lld]",
                               w->path, name, (long long)conv_dim, (long long)c->lin_conv);
    if ((rc = qbh_fwd_read_rows(w, NULL, idx, 0, conv_dim, p->conv)))
        return rc;
    snprintf(name, sizeof name, "model.layers.%lld.linear_attn.A_log", (long long)L);
    if ((rc = qbh_fwd_vector(w, name, p->a_log, c->lin_nv)))
        return rc;
    snprintf(name, sizeof name, "model.layers.%lld.linear_attn.dt_bias", (long long)L);
    if ((rc = qbh_fwd_vector(w, name, p->dt_bias, c->lin_nv)))
        return rc;
    snprintf(name, sizeof name, "model.layers.%lld.linear_attn.norm.weight", (long long)L);
    return qbh_fwd_vector(w, name, p->norm, c->lin_dv);
}

/* The projections into mix[T][conv_dim] = [q (nk*dk) | k (nk*dk) | v
 * (nv*dv)], z[T][nv*dv], beta and a [T][nv]. Qwen3-Next fuses them per key
 * head g (fix_query_key_value_ordering): in_proj_qkvz rows [q_g (dk), k_g
 * (dk), v of its r = nv/nk value heads (r*dv), z of them (r*dv)], in_proj_ba
 * rows [b of its r heads, a of them]. Qwen3.5 holds in_proj_qkv (already
 * [q | k | v]), in_proj_z, in_proj_b, in_proj_a. */
static qb_status gdn_project(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L, const float *h,
                             int64_t T, float *mix, float *z, float *bb, float *aa)
{
    int64_t H = c->hidden, nk = c->lin_nk, nv = c->lin_nv, dk = c->lin_dk, dv = c->lin_dv;
    int64_t r = nv / nk, Kd = nk * dk, Vd = nv * dv, CD = 2 * Kd + Vd;
    int64_t per = 2 * dk + 2 * r * dv, t, g;
    char name[160];
    size_t idx;
    float *f = NULL;
    qb_status rc;

    snprintf(name, sizeof name, "model.layers.%lld.linear_attn.in_proj_qkv.weight", (long long)L);
    if (qbh_fwd_has(w, name, &idx)) {
        if ((rc = qbh_fwd_linear(w, L, "linear_attn.in_proj_qkv", h, T, H, mix, CD)) ||
            (rc = qbh_fwd_linear(w, L, "linear_attn.in_proj_z", h, T, H, z, Vd)) ||
            (rc = qbh_fwd_linear(w, L, "linear_attn.in_proj_b", h, T, H, bb, nv)))
            return rc;
        return qbh_fwd_linear(w, L, "linear_attn.in_proj_a", h, T, H, aa, nv);
    }
    f = w->h->alloc(w->h, (size_t)(T * (nk * per > 2 * nv ? nk * per : 2 * nv)) * sizeof *f);
    if (!f)
        return w->h->set_error(w->h, QB_E_NOMEM, "forward: out of memory for layer %lld",
                               (long long)L);
    if ((rc = qbh_fwd_linear(w, L, "linear_attn.in_proj_qkvz", h, T, H, f, nk * per)))
        goto out;
    for (t = 0; t < T; t++)
        for (g = 0; g < nk; g++) {
            const float *s = f + t * nk * per + g * per;
            memcpy(mix + t * CD + g * dk, s, (size_t)dk * sizeof(float));
            memcpy(mix + t * CD + Kd + g * dk, s + dk, (size_t)dk * sizeof(float));
            memcpy(mix + t * CD + 2 * Kd + g * r * dv, s + 2 * dk, (size_t)(r * dv) * sizeof(float));
            memcpy(z + t * Vd + g * r * dv, s + 2 * dk + r * dv, (size_t)(r * dv) * sizeof(float));
        }
    if ((rc = qbh_fwd_linear(w, L, "linear_attn.in_proj_ba", h, T, H, f, 2 * nv)))
        goto out;
    for (t = 0; t < T; t++)
        for (g = 0; g < nk; g++) {
            memcpy(bb + t * nv + g * r, f + t * 2 * nv + g * 2 * r, (size_t)r * sizeof(float));
            memcpy(aa + t * nv + g * r, f + t * 2 * nv + g * 2 * r + r, (size_t)r * sizeof(float));
        }
out:
    w->h->free(w->h, f);
    return rc;
}

/* causal_conv1d_fn: out[t][ch] = silu(sum_j w[ch][j] * x[t + j - (K - 1)][ch]),
 * positions before 0 being 0 (F.conv1d with K - 1 padding, first T kept). */
static void gdn_conv(const float *x, int64_t T, int64_t CD, const float *wt, int64_t K, float *out)
{
    int64_t t, ch, j;
    for (t = 0; t < T; t++)
        for (ch = 0; ch < CD; ch++) {
            double s = 0;
            for (j = 0; j < K; j++) {
                int64_t src = t + j - (K - 1);
                if (src >= 0)
                    s += (double)wt[ch * K + j] * (double)x[src * CD + ch];
            }
            out[t * CD + ch] = (float)(s / (1.0 + exp(-s)));
        }
}

/* l2norm of the FLA library as transformers writes it: x * rsqrt(sum x^2 +
 * 1e-6), times `scale`, into out (doubles). */
static void l2norm(const float *x, int64_t n, double scale, double *out)
{
    double ss = 0, inv;
    int64_t i;
    for (i = 0; i < n; i++)
        ss += (double)x[i] * (double)x[i];
    inv = scale / sqrt(ss + 1e-6);
    for (i = 0; i < n; i++)
        out[i] = (double)x[i] * inv;
}

/* One value head of the gated delta rule (torch_recurrent_gated_delta_rule;
 * the chunked form transformers runs on a whole sequence computes the same
 * recurrence): state S [dk][dv] from 0; per position S *= exp(g);
 * delta = (v - S^T k) * beta; S += k delta^T; o = S^T q. */
typedef struct gdn_job {
    const qbh_fwd_cfg *c;
    const float *conv, *bb, *aa;
    const gdn_params *p;
    double *scratch; /* per head: dk*dv + 2*dk + dv doubles */
    float *core;     /* [T][nv*dv] */
    int64_t T;
} gdn_job;

static qb_status gdn_head(void *arg, size_t item)
{
    const gdn_job *j = arg;
    const qbh_fwd_cfg *c = j->c;
    int64_t nv = c->lin_nv, dk = c->lin_dk, dv = c->lin_dv, Kd = c->lin_nk * dk;
    int64_t CD = 2 * Kd + nv * dv, hv = (int64_t)item, hk = hv / (nv / c->lin_nk);
    double *S = j->scratch + (size_t)item * (size_t)(dk * dv + 2 * dk + dv);
    double *q = S + dk * dv, *k = q + dk, *dl = k + dk;
    double A = -exp((double)j->p->a_log[hv]);
    int64_t t, a, e;

    memset(S, 0, (size_t)(dk * dv) * sizeof *S);
    for (t = 0; t < j->T; t++) {
        const float *row = j->conv + t * CD;
        const float *v = row + 2 * Kd + hv * dv;
        double beta = sigmoid((double)j->bb[t * nv + hv]);
        double decay = exp(A * softplus((double)j->aa[t * nv + hv] + (double)j->p->dt_bias[hv]));
        l2norm(row + hk * dk, dk, 1.0 / sqrt((double)dk), q);
        l2norm(row + Kd + hk * dk, dk, 1.0, k);
        for (e = 0; e < dk * dv; e++)
            S[e] *= decay;
        for (e = 0; e < dv; e++) {
            double m = 0;
            for (a = 0; a < dk; a++)
                m += S[a * dv + e] * k[a];
            dl[e] = ((double)v[e] - m) * beta;
        }
        for (a = 0; a < dk; a++)
            for (e = 0; e < dv; e++)
                S[a * dv + e] += k[a] * dl[e];
        for (e = 0; e < dv; e++) {
            double o = 0;
            for (a = 0; a < dk; a++)
                o += S[a * dv + e] * q[a];
            j->core[t * nv * dv + hv * dv + e] = (float)o;
        }
    }
    return QB_OK;
}

/* Qwen3NextGatedDeltaNet.forward on h[T][hidden] into out[T][hidden]. */
static qb_status gated_deltanet(qbh_fwd_weights *w, const qbh_fwd_cfg *c, int64_t L,
                                const float *h, int64_t T, float *out)
{
    int64_t nv = c->lin_nv, dk = c->lin_dk, dv = c->lin_dv, Kd = c->lin_nk * dk, Vd = nv * dv;
    int64_t CD = 2 * Kd + Vd, t, i, e;
    float *mix = NULL, *conv = NULL, *z = NULL, *bb = NULL, *aa = NULL, *core = NULL;
    double *scratch = NULL;
    gdn_params p = {0};
    gdn_job j;
    qb_status rc;

    mix = qbh_fwd_calloc(w->h, (size_t)(T * CD), sizeof *mix);
    conv = qbh_fwd_calloc(w->h, (size_t)(T * CD), sizeof *conv);
    z = qbh_fwd_calloc(w->h, (size_t)(T * Vd), sizeof *z);
    core = qbh_fwd_calloc(w->h, (size_t)(T * Vd), sizeof *core);
    bb = qbh_fwd_calloc(w->h, (size_t)(T * nv), sizeof *bb);
    aa = qbh_fwd_calloc(w->h, (size_t)(T * nv), sizeof *aa);
    p.conv = qbh_fwd_calloc(w->h, (size_t)(CD * c->lin_conv), sizeof *p.conv);
    p.a_log = qbh_fwd_calloc(w->h, (size_t)nv, sizeof(float));
    p.dt_bias = qbh_fwd_calloc(w->h, (size_t)nv, sizeof(float));
    p.norm = qbh_fwd_calloc(w->h, (size_t)dv, sizeof(float));
    scratch = qbh_fwd_calloc(w->h, (size_t)(nv * (dk * dv + 2 * dk + dv)), sizeof *scratch);
    if (!mix || !conv || !z || !core || !bb || !aa || !p.conv || !p.a_log || !p.dt_bias ||
        !p.norm || !scratch) {
        rc = w->h->set_error(w->h, QB_E_NOMEM, "forward: out of memory for layer %lld",
                             (long long)L);
        goto out;
    }
    if ((rc = gdn_params_read(w, c, L, CD, &p)) ||
        (rc = gdn_project(w, c, L, h, T, mix, z, bb, aa)))
        goto out;
    gdn_conv(mix, T, CD, p.conv, c->lin_conv, conv);
    j.c = c;
    j.conv = conv;
    j.bb = bb;
    j.aa = aa;
    j.p = &p;
    j.scratch = scratch;
    j.core = core;
    j.T = T;
    if ((rc = w->h->parallel_for(w->h, (size_t)nv, gdn_head, &j)))
        goto out;
    /* Qwen3NextRMSNormGated per value head: RMSNorm (plain weight, the
     * layer's rms_norm_eps) times silu(z). */
    for (t = 0; t < T; t++)
        for (i = 0; i < nv; i++) {
            float *x = core + t * Vd + i * dv;
            const float *zz = z + t * Vd + i * dv;
            double ss = 0, inv;
            for (e = 0; e < dv; e++)
                ss += (double)x[e] * (double)x[e];
            inv = 1.0 / sqrt(ss / (double)dv + c->rms_eps);
            for (e = 0; e < dv; e++) {
                double g = (double)zz[e];
                x[e] = (float)((double)(float)((double)x[e] * inv) * (double)p.norm[e] * g *
                               sigmoid(g));
            }
        }
    rc = qbh_fwd_linear(w, L, "linear_attn.out_proj", core, T, Vd, out, c->hidden);
out:
    w->h->free(w->h, mix);
    w->h->free(w->h, conv);
    w->h->free(w->h, z);
    w->h->free(w->h, core);
    w->h->free(w->h, bb);
    w->h->free(w->h, aa);
    w->h->free(w->h, p.conv);
    w->h->free(w->h, p.a_log);
    w->h->free(w->h, p.dt_bias);
    w->h->free(w->h, p.norm);
    w->h->free(w->h, scratch);
    return rc;
}

qb_status qbh_fwd_hybrid_mixer(qbh_fwd_weights *w, const qbh_fwd_cfg *c, struct qbh_fwd_bufs *b,
                               int64_t L, int64_t T)
{
    if (is_linear_layer(c, L))
        return gated_deltanet(w, c, L, b->h, T, b->o);
    return gated_attention(w, c, b, L, T);
}
