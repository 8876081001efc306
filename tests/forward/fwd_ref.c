/*
 * float64 reference decoder (fwd_ref.h). Deliberately naive: whole
 * weight matrices, one loop per formula.
 */
#define _GNU_SOURCE
#include "fwd_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double *xalloc(int64_t n)
{
    double *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    if (!p)
        abort();
    return p;
}

static double *weight(const fwd_ref_model *m, const char *name, int64_t n)
{
    double *w = xalloc(n);
    if (m->get(m->ctx, name, n, w)) {
        free(w);
        return NULL;
    }
    return w;
}

static double *must(const fwd_ref_model *m, const char *name, int64_t n)
{
    double *w = weight(m, name, n);
    if (!w) {
        fprintf(stderr, "fwd_ref: missing %s\n", name);
        abort();
    }
    return w;
}

/* y[T][out] = x[T][in] W^T + b */
static void linear(const fwd_ref_model *m, int64_t L, const char *path, const double *x,
                   int64_t T, int64_t in, int64_t out, double *y)
{
    char n1[160], n2[160];
    double *w, *b;
    int64_t t, o, i;
    snprintf(n1, sizeof n1, "model.layers.%lld.%s.weight", (long long)L, path);
    snprintf(n2, sizeof n2, "model.layers.%lld.%s.bias", (long long)L, path);
    w = must(m, n1, out * in);
    b = weight(m, n2, out);
    for (t = 0; t < T; t++)
        for (o = 0; o < out; o++) {
            double s = b ? b[o] : 0.0;
            for (i = 0; i < in; i++)
                s += w[o * in + i] * x[t * in + i];
            y[t * out + o] = s;
        }
    free(w);
    free(b);
}

static void rmsnorm(const double *x, int64_t rows, int64_t n, const double *w, double eps,
                    double *y, double off)
{
    int64_t r, i;
    for (r = 0; r < rows; r++) {
        double ms = 0;
        for (i = 0; i < n; i++)
            ms += x[r * n + i] * x[r * n + i];
        ms /= (double)n;
        for (i = 0; i < n; i++)
            y[r * n + i] = (off + w[i]) * (x[r * n + i] / sqrt(ms + eps));
    }
}

/* rotate_half: pairs (i, i + d/2), angle t * theta^(-2i/d). */
static void rope(double *x, int64_t T, int64_t heads, int64_t d, double theta)
{
    int64_t t, h, i;
    for (t = 0; t < T; t++)
        for (h = 0; h < heads; h++)
            for (i = 0; i < d / 2; i++) {
                double *v = x + (t * heads + h) * d;
                double ang = (double)t * pow(theta, -2.0 * (double)i / (double)d);
                double a = v[i], b = v[i + d / 2];
                v[i] = a * cos(ang) - b * sin(ang);
                v[i + d / 2] = b * cos(ang) + a * sin(ang);
            }
}

void fwd_ref_run(const fwd_ref_model *m, const int64_t *tokens, int64_t T, double *logits,
                 double *mag)
{
    int64_t H = m->hidden, I = m->inter, d = m->head_dim, nh = m->heads, nkv = m->kv_heads;
    int64_t V = m->vocab, L, t, s, h, i, c;
    double *x = xalloc(T * H), *hn = xalloc(T * H), *q = xalloc(T * nh * d);
    double *k = xalloc(T * nkv * d), *v = xalloc(T * nkv * d), *att = xalloc(T * nh * d);
    double *o = xalloc(T * H), *g = xalloc(T * I), *u = xalloc(T * I), *tmp;
    double *emb = must(m, "model.embed_tokens.weight", V * H), *head;
    char name[160];
    double off = m->gemma2 ? 1.0 : 0.0;

    for (t = 0; t < T; t++)
        for (i = 0; i < H; i++)
            x[t * H + i] = emb[tokens[t] * H + i] * (m->gemma2 ? sqrt((double)H) : 1.0);
    for (L = 0; L < m->layers; L++) {
        snprintf(name, sizeof name, "model.layers.%lld.input_layernorm.weight", (long long)L);
        tmp = must(m, name, H);
        rmsnorm(x, T, H, tmp, m->eps, hn, off);
        free(tmp);
        linear(m, L, "self_attn.q_proj", hn, T, H, nh * d, q);
        linear(m, L, "self_attn.k_proj", hn, T, H, nkv * d, k);
        linear(m, L, "self_attn.v_proj", hn, T, H, nkv * d, v);
        if (m->qk_norm) {
            snprintf(name, sizeof name, "model.layers.%lld.self_attn.q_norm.weight", (long long)L);
            tmp = must(m, name, d);
            rmsnorm(q, T * nh, d, tmp, m->eps, q, off);
            free(tmp);
            snprintf(name, sizeof name, "model.layers.%lld.self_attn.k_norm.weight", (long long)L);
            tmp = must(m, name, d);
            rmsnorm(k, T * nkv, d, tmp, m->eps, k, off);
            free(tmp);
        }
        rope(q, T, nh, d, m->theta);
        rope(k, T, nkv, d, m->theta);
        for (h = 0; h < nh; h++) {
            int64_t kh = h / (nh / nkv);
            int64_t win = m->window_even_only && L % 2 ? 0 : m->window;
            for (t = 0; t < T; t++) {
                double sc[4096], mx = -1e300, z = 0;
                for (s = 0; s <= t; s++) {
                    double dot = 0;
                    for (i = 0; i < d; i++)
                        dot += q[(t * nh + h) * d + i] * k[(s * nkv + kh) * d + i];
                    sc[s] = dot / sqrt(m->gemma2 ? m->qpas : (double)d);
                    if (m->attn_cap > 0)
                        sc[s] = m->attn_cap * tanh(sc[s] / m->attn_cap);
                    if (win > 0 && t - s >= win)
                        sc[s] = -INFINITY;
                    if (sc[s] > mx)
                        mx = sc[s];
                }
                for (s = 0; s <= t; s++)
                    z += exp(sc[s] - mx);
                for (i = 0; i < d; i++) {
                    double a = 0;
                    for (s = 0; s <= t; s++)
                        a += exp(sc[s] - mx) / z * v[(s * nkv + kh) * d + i];
                    att[(t * nh + h) * d + i] = a;
                }
            }
        }
        linear(m, L, "self_attn.o_proj", att, T, nh * d, H, o);
        if (m->gemma2) {
            snprintf(name, sizeof name, "model.layers.%lld.post_attention_layernorm.weight",
                     (long long)L);
            tmp = must(m, name, H);
            rmsnorm(o, T, H, tmp, m->eps, o, off);
            free(tmp);
        }
        for (i = 0; i < T * H; i++)
            x[i] += o[i];
        snprintf(name, sizeof name, "model.layers.%lld.%s.weight", (long long)L,
                 m->gemma2 ? "pre_feedforward_layernorm" : "post_attention_layernorm");
        tmp = must(m, name, H);
        rmsnorm(x, T, H, tmp, m->eps, hn, off);
        free(tmp);
        linear(m, L, "mlp.gate_proj", hn, T, H, I, g);
        linear(m, L, "mlp.up_proj", hn, T, H, I, u);
        for (i = 0; i < T * I; i++)
            if (m->gemma2)
                g[i] = 0.5 * g[i] *
                       (1.0 + tanh(sqrt(2.0 / M_PI) * (g[i] + 0.044715 * pow(g[i], 3)))) * u[i];
            else
                g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
        linear(m, L, "mlp.down_proj", g, T, I, H, o);
        if (m->gemma2) {
            snprintf(name, sizeof name, "model.layers.%lld.post_feedforward_layernorm.weight",
                     (long long)L);
            tmp = must(m, name, H);
            rmsnorm(o, T, H, tmp, m->eps, o, off);
            free(tmp);
        }
        for (i = 0; i < T * H; i++)
            x[i] += o[i];
    }
    tmp = must(m, "model.norm.weight", H);
    rmsnorm(x, T, H, tmp, m->eps, hn, off);
    free(tmp);
    head = weight(m, "lm_head.weight", V * H);
    if (!head)
        head = emb, emb = NULL; /* tied */
    for (t = 0; t < T; t++)
        for (i = 0; i < V; i++) {
            double s = 0, a = 0;
            for (c = 0; c < H; c++) {
                s += head[i * H + c] * hn[t * H + c];
                a += fabs(head[i * H + c] * hn[t * H + c]);
            }
            logits[t * V + i] = m->final_cap > 0 ? m->final_cap * tanh(s / m->final_cap) : s;
            if (mag)
                mag[t * V + i] = a;
        }
    free(head);
    free(emb);
    free(x);
    free(hn);
    free(q);
    free(k);
    free(v);
    free(att);
    free(o);
    free(g);
    free(u);
}
