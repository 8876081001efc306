/*
 * quantbridge model library — the element-wise and attention
 * operations, as transformers' llama-family modules define them
 * (docs/forward.md, "Operations"). Sums run in double; results are
 * stored as float32.
 */
#include "fwd.h"

#include <assert.h>
#include <math.h>
#include <string.h>

void qbh_fwd_rmsnorm(float *x, int64_t M, int64_t n, const float *w, double eps, double offset)
{
    int64_t m, i;
    for (m = 0; m < M; m++) {
        float *r = x + m * n;
        double ss = 0.0, inv;
        for (i = 0; i < n; i++)
            ss += (double)r[i] * (double)r[i];
        inv = 1.0 / sqrt(ss / (double)n + eps);
        for (i = 0; i < n; i++)
            r[i] = (float)((double)r[i] * inv * (w ? offset + (double)w[i] : 1.0));
    }
}

void qbh_fwd_rope(float *x, int64_t T, int64_t n_heads, int64_t head_dim, int64_t rot_dim,
                  const double *inv)
{
    qbh_fwd_rope_ex(x, T, n_heads, head_dim, 0, rot_dim, inv, 0, 1.0);
}

void qbh_fwd_rope_ex(float *x, int64_t T, int64_t n_heads, int64_t stride, int64_t off,
                     int64_t rot_dim, const double *inv, int interleave, double factor)
{
    int64_t t, h, i, half = rot_dim / 2;
    for (t = 0; t < T; t++)
        for (h = 0; h < n_heads; h++) {
            float *v = x + (t * n_heads + h) * stride + off;
            for (i = 0; i < half; i++) {
                /* yarn scales cos and sin themselves (transformers'
                 * rotary embedding multiplies both by attention_scaling). */
                double a = (double)t * inv[i], c = cos(a) * factor, s = sin(a) * factor;
                /* DeepSeek pairs neighbours (V2's complex view of (x[2i],
                 * x[2i+1]); V3's rope_interleave); q and k share the layout,
                 * so where the rotated pair is stored does not change q.k. */
                int64_t i1 = interleave ? 2 * i : i, i2 = interleave ? 2 * i + 1 : i + half;
                double x1 = v[i1], x2 = v[i2];
                v[i1] = (float)(x1 * c - x2 * s);
                v[i2] = (float)(x2 * c + x1 * s);
            }
        }
}

void qbh_fwd_silu_mul(float *g, const float *u, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        double a = g[i];
        g[i] = (float)(a / (1.0 + exp(-a)) * (double)u[i]);
    }
}

void qbh_fwd_gelu_tanh_mul(float *g, const float *u, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        double a = g[i];
        /* gelu_pytorch_tanh: 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))) */
        double t = tanh(sqrt(2.0 / M_PI) * (a + 0.044715 * a * a * a));
        g[i] = (float)(0.5 * a * (1.0 + t) * (double)u[i]);
    }
}

void qbh_fwd_softcap(float *x, size_t n, double cap)
{
    size_t i;
    for (i = 0; i < n; i++)
        x[i] = (float)(cap * tanh((double)x[i] / cap));
}

typedef struct attn_job {
    const qb_host *hs;
    const float *q, *k, *v;
    float *out;
    int64_t T, nh, nkv, hd, window;
    double scale, softcap;
    const float *sinks; /* gpt-oss: [nh] extra logits, or NULL */
    const unsigned char *keep; /* DeepSeek-V3.2: [T][T], 0: key s hidden from query t */
    int64_t chunk;      /* llama4: attend within blocks of chunk positions; 0: none */
} attn_job;

static qb_status attn_head(void *arg, size_t item)
{
    const attn_job *j = arg;
    const qb_host *hs = j->hs;
    int64_t h = (int64_t)item, kh = h / (j->nh / j->nkv), t, s, d;
    double scale = j->scale;
    double *p = hs->alloc(hs, (size_t)j->T * sizeof *p);
    double *acc = hs->alloc(hs, (size_t)j->hd * sizeof *acc);
    if (!p || !acc) {
        hs->free(hs, p);
        hs->free(hs, acc);
        return hs->set_error(hs, QB_E_NOMEM, "forward: out of memory in attention");
    }
    for (t = 0; t < j->T; t++) {
        const float *qt = j->q + (t * j->nh + h) * j->hd;
        int64_t s0 = j->window > 0 && t - j->window + 1 > 0 ? t - j->window + 1 : 0;
        if (j->chunk > 0) /* create_chunked_causal_mask's chunked_overlay */
            s0 = t / j->chunk * j->chunk;
        double mx = j->sinks ? (double)j->sinks[h] : -INFINITY, sum = 0.0;
        for (s = s0; s <= t; s++) {
            const float *ks = j->k + (s * j->nkv + kh) * j->hd;
            double dot = 0.0;
            if (j->keep && !j->keep[t * j->T + s])
                continue;
            for (d = 0; d < j->hd; d++)
                dot += (double)qt[d] * (double)ks[d];
            p[s] = dot * scale;
            if (j->softcap > 0) /* gemma2: before the mask and the softmax */
                p[s] = j->softcap * tanh(p[s] / j->softcap);
            if (p[s] > mx)
                mx = p[s];
        }
        for (s = s0; s <= t; s++) {
            /* a hidden key weighs exactly 0, as exp(finfo.min - max) does */
            p[s] = j->keep && !j->keep[t * j->T + s] ? 0.0 : exp(p[s] - mx);
            sum += p[s];
        }
        /* gpt-oss's sink: one more logit in the denominator, with no value
         * (eager_attention_forward drops its probability). */
        if (j->sinks)
            sum += exp((double)j->sinks[h] - mx);
        memset(acc, 0, (size_t)j->hd * sizeof *acc);
        for (s = s0; s <= t; s++) {
            const float *vs = j->v + (s * j->nkv + kh) * j->hd;
            double wgt = p[s] / sum;
            for (d = 0; d < j->hd; d++)
                acc[d] += wgt * (double)vs[d];
        }
        for (d = 0; d < j->hd; d++)
            j->out[(t * j->nh + h) * j->hd + d] = (float)acc[d];
    }
    hs->free(hs, p);
    hs->free(hs, acc);
    return QB_OK;
}

qb_status qbh_fwd_attention(const qb_host *h, const float *q, const float *k, const float *v,
                            int64_t T, int64_t nh, int64_t nkv, int64_t hd, int64_t window,
                            double scale, double softcap, float *out)
{
    return qbh_fwd_attention_sinks(h, q, k, v, T, nh, nkv, hd, window, scale, softcap, NULL, out);
}

qb_status qbh_fwd_attention_sinks(const qb_host *h, const float *q, const float *k, const float *v,
                                  int64_t T, int64_t nh, int64_t nkv, int64_t hd, int64_t window,
                                  double scale, double softcap, const float *sinks, float *out)
{
    attn_job j = {h, q, k, v, out, T, nh, nkv, hd, window, scale, softcap, sinks, NULL, 0};
    assert(nh % nkv == 0);
    return h->parallel_for(h, (size_t)nh, attn_head, &j);
}

qb_status qbh_fwd_attention_keep(const qb_host *h, const float *q, const float *k, const float *v,
                                 int64_t T, int64_t nh, int64_t nkv, int64_t hd, double scale,
                                 const unsigned char *keep, float *out)
{
    attn_job j = {h, q, k, v, out, T, nh, nkv, hd, 0, scale, 0.0, NULL, keep, 0};
    assert(nh % nkv == 0 && keep);
    return h->parallel_for(h, (size_t)nh, attn_head, &j);
}

qb_status qbh_fwd_attention_chunked(const qb_host *h, const float *q, const float *k,
                                    const float *v, int64_t T, int64_t nh, int64_t nkv,
                                    int64_t hd, int64_t chunk, double scale, float *out)
{
    attn_job j = {h, q, k, v, out, T, nh, nkv, hd, 0, scale, 0.0, NULL, NULL, chunk};
    assert(nh % nkv == 0 && chunk >= 0);
    return h->parallel_for(h, (size_t)nh, attn_head, &j);
}
