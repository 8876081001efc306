/*
 * float64 reference decoder (fwd_ref.h). Deliberately naive: whole
 * weight matrices, one loop per formula.
 */
#define _GNU_SOURCE
#include "fwd_ref.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#undef I /* complex.h's; the code below names sizes I */

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

/* rotate_half over the first rd dims: pairs (i, i + rd/2), angle
 * t * theta^(-2i/rd); dims rd.. pass through. */
static void rope(double *x, int64_t T, int64_t heads, int64_t d, int64_t rd, double theta,
                 double linear)
{
    int64_t t, h, i;
    for (t = 0; t < T; t++)
        for (h = 0; h < heads; h++)
            for (i = 0; i < rd / 2; i++) {
                double *v = x + (t * heads + h) * d;
                double ang = (double)t * pow(theta, -2.0 * (double)i / (double)rd) / linear;
                double a = v[i], b = v[i + rd / 2];
                v[i] = a * cos(ang) - b * sin(ang);
                v[i + rd / 2] = b * cos(ang) + a * sin(ang);
            }
}

/* y = down(silu(gate x) * up x) for rows x[T][H], names prefix + n[0..2]. */
static void swiglu(const fwd_ref_model *m, int64_t L, const char *prefix, const char *const n[3],
                   const double *x, int64_t T, int64_t I, double *y)
{
    char a[160], b[160], c[160];
    double *g = xalloc(T * I), *u = xalloc(T * I);
    int64_t i;
    snprintf(a, sizeof a, "%s%s", prefix, n[0]);
    snprintf(b, sizeof b, "%s%s", prefix, n[1]);
    snprintf(c, sizeof c, "%s%s", prefix, n[2]);
    linear(m, L, a, x, T, m->hidden, I, g);
    linear(m, L, b, x, T, m->hidden, I, u);
    for (i = 0; i < T * I; i++)
        g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
    linear(m, L, c, g, T, I, m->hidden, y);
    free(g);
    free(u);
}

/* The sparse MoE block (MixtralSparseMoeBlock / Qwen2MoeSparseMoeBlock):
 * softmax router, top-k, optional renormalisation, weighted experts,
 * qwen2's sigmoid-gated shared expert. One token at a time. */
static void moe_block(const fwd_ref_model *m, int64_t L, const double *x, int64_t T, double *y)
{
    static const char *const mix[3] = {"w1", "w3", "w2"};
    static const char *const qw[3] = {"gate_proj", "up_proj", "down_proj"};
    int64_t H = m->hidden, E = m->experts, t, e, k, i;
    double *r = xalloc(T * E), *p = xalloc(E), *ye = xalloc(H);
    char pre[96];
    int *chosen = calloc((size_t)E, sizeof *chosen);
    linear(m, L, m->moe == 1 ? "block_sparse_moe.gate" : "mlp.gate", x, T, H, E, r);
    memset(y, 0, (size_t)(T * H) * sizeof *y);
    for (t = 0; t < T; t++) {
        double z = 0, sel = 0;
        for (e = 0; e < E; e++)
            z += exp(r[t * E + e]);
        for (e = 0; e < E; e++) {
            p[e] = exp(r[t * E + e]) / z;
            chosen[e] = 0;
        }
        for (k = 0; k < m->top_k; k++) {
            int64_t best = -1;
            for (e = 0; e < E; e++)
                if (!chosen[e] && (best < 0 || p[e] > p[best]))
                    best = e;
            chosen[best] = 1;
            sel += p[best];
        }
        for (e = 0; e < E; e++) {
            double wgt;
            if (!chosen[e])
                continue;
            wgt = m->norm_topk ? p[e] / sel : p[e];
            snprintf(pre, sizeof pre, "%s.experts.%lld.", m->moe == 1 ? "block_sparse_moe" : "mlp",
                     (long long)e);
            swiglu(m, L, pre, m->moe == 1 ? mix : qw, x + t * H, 1, m->moe_inter, ye);
            for (i = 0; i < H; i++)
                y[t * H + i] += wgt * ye[i];
        }
        if (m->shared_inter) {
            double gate;
            swiglu(m, L, "mlp.shared_expert.", qw, x + t * H, 1, m->shared_inter, ye);
            linear(m, L, "mlp.shared_expert_gate", x + t * H, 1, H, 1, &gate);
            for (i = 0; i < H; i++)
                y[t * H + i] += ye[i] / (1.0 + exp(-gate));
        }
    }
    free(r);
    free(p);
    free(ye);
    free(chosen);
}

/* ---- DeepSeek-V2/V3 ------------------------------------------------------ */

/* yarn's 0.1 m ln(s) + 1 (1 for s <= 1). */
static double ms_of(double s, double mm)
{
    return s > 1 ? 1.0 + 0.1 * mm * log(s) : 1.0;
}

/* Rotary angle rate of pair i of a d-wide rotary part: theta^(-2i/d),
 * with yarn blending it towards rate / factor over the pairs between the
 * two correction dimensions (paper: "NTK-by-parts"). */
static double ds_rate(const fwd_ref_model *m, int64_t i, int64_t d)
{
    double ext = 1.0 / pow(m->theta, (double)(2 * i) / (double)d), lo, hi, gamma;
    if (m->yarn_factor <= 0)
        return ext;
    /* the dimension at which a wavelength fits `turns` times into orig */
    lo = (double)d * log(m->yarn_orig / (2 * M_PI * m->beta_fast)) / (2 * log(m->theta));
    hi = (double)d * log(m->yarn_orig / (2 * M_PI * m->beta_slow)) / (2 * log(m->theta));
    if (!m->yarn_exact) {
        lo = floor(lo);
        hi = ceil(hi);
    }
    if (lo < 0)
        lo = 0;
    if (hi > (double)(d - 1))
        hi = (double)(d - 1);
    if (hi == lo)
        hi += 0.001;
    gamma = fmin(1.0, fmax(0.0, ((double)i - lo) / (hi - lo)));
    return (1 - gamma) * ext + gamma * ext / m->yarn_factor;
}

/* Rotates the d values at v for position t; amp scales cos and sin. */
static void ds_rotate(const fwd_ref_model *m, double *v, int64_t d, int64_t t, double amp)
{
    int64_t i;
    for (i = 0; i < d / 2; i++) {
        double complex r = amp * cexp(_Complex_I * (double)t * ds_rate(m, i, d)), z;
        if (m->interleave) {
            z = (v[2 * i] + _Complex_I * v[2 * i + 1]) * r;
            v[2 * i] = creal(z);
            v[2 * i + 1] = cimag(z);
        } else {
            z = (v[i] + _Complex_I * v[i + d / 2]) * r;
            v[i] = creal(z);
            v[i + d / 2] = cimag(z);
        }
    }
}

/* DeepseekV2Attention / DeepseekV3Attention on hn[T][H] into y[T][H]. */
static void mla_attn(const fwd_ref_model *m, int64_t L, const double *hn, int64_t T, double *y)
{
    int64_t H = m->hidden, nh = m->heads, dn = m->nope, dr = m->rope_d, dv = m->vdim;
    int64_t dq = dn + dr, R = m->kv_lora, t, s, h, i;
    double *q = xalloc(T * nh * dq), *ckv = xalloc(T * (R + dr)), *lat = xalloc(T * R);
    double *kv = xalloc(T * nh * (dn + dv)), *att = xalloc(T * nh * dv), *w, *sc = xalloc(T);
    double amp = 1.0, scale = 1.0 / sqrt((double)dq);
    char name[160];

    if (m->yarn_factor > 0) {
        amp = m->mscale && m->mscale_all_dim
                  ? ms_of(m->yarn_factor, m->mscale) / ms_of(m->yarn_factor, m->mscale_all_dim)
                  : ms_of(m->yarn_factor, 1.0);
        scale *= ms_of(m->yarn_factor, m->mscale_all_dim) * ms_of(m->yarn_factor, m->mscale_all_dim);
    }
    if (m->q_lora) {
        double *qa = xalloc(T * m->q_lora);
        linear(m, L, "self_attn.q_a_proj", hn, T, H, m->q_lora, qa);
        snprintf(name, sizeof name, "model.layers.%lld.self_attn.q_a_layernorm.weight",
                 (long long)L);
        w = must(m, name, m->q_lora);
        rmsnorm(qa, T, m->q_lora, w, 1e-6, qa, 0); /* the module's own eps */
        free(w);
        linear(m, L, "self_attn.q_b_proj", qa, T, m->q_lora, nh * dq, q);
        free(qa);
    } else {
        linear(m, L, "self_attn.q_proj", hn, T, H, nh * dq, q);
    }
    linear(m, L, "self_attn.kv_a_proj_with_mqa", hn, T, H, R + dr, ckv);
    for (t = 0; t < T; t++)
        for (i = 0; i < R; i++)
            lat[t * R + i] = ckv[t * (R + dr) + i];
    snprintf(name, sizeof name, "model.layers.%lld.self_attn.kv_a_layernorm.weight", (long long)L);
    w = must(m, name, R);
    rmsnorm(lat, T, R, w, 1e-6, lat, 0);
    free(w);
    linear(m, L, "self_attn.kv_b_proj", lat, T, R, nh * (dn + dv), kv);
    for (t = 0; t < T; t++) {
        ds_rotate(m, ckv + t * (R + dr) + R, dr, t, amp);
        for (h = 0; h < nh; h++)
            ds_rotate(m, q + (t * nh + h) * dq + dn, dr, t, amp);
    }
    for (h = 0; h < nh; h++)
        for (t = 0; t < T; t++) {
            const double *qh = q + (t * nh + h) * dq;
            double mx = -1e300, z = 0;
            for (s = 0; s <= t; s++) {
                const double *ks = kv + (s * nh + h) * (dn + dv), *pe = ckv + s * (R + dr) + R;
                double dot = 0;
                for (i = 0; i < dn; i++)
                    dot += qh[i] * ks[i];
                for (i = 0; i < dr; i++)
                    dot += qh[dn + i] * pe[i];
                sc[s] = dot * scale;
                mx = sc[s] > mx ? sc[s] : mx;
            }
            for (s = 0; s <= t; s++)
                z += exp(sc[s] - mx);
            for (i = 0; i < dv; i++) {
                double a = 0;
                for (s = 0; s <= t; s++)
                    a += exp(sc[s] - mx) / z * kv[(s * nh + h) * (dn + dv) + dn + i];
                att[(t * nh + h) * dv + i] = a;
            }
        }
    linear(m, L, "self_attn.o_proj", att, T, nh * dv, H, y);
    free(q);
    free(ckv);
    free(lat);
    free(kv);
    free(att);
    free(sc);
}

/* 1 when v[i] is among the k largest of v[0..n) (ties: lower index). */
static int in_top(const double *v, int64_t n, int64_t i, int64_t k)
{
    int64_t j, above = 0;
    for (j = 0; j < n; j++)
        above += v[j] > v[i] || (v[j] == v[i] && j < i);
    return above < k;
}

/* DeepSeek MoE block: routing of the V2/V3 routers, routed experts,
 * ungated shared experts. */
static void ds_moe(const fwd_ref_model *m, int64_t L, const double *x, int64_t T, double *y)
{
    static const char *const qw[3] = {"gate_proj", "up_proj", "down_proj"};
    int64_t H = m->hidden, E = m->experts, G = m->ds_route == 1 ? 1 : m->n_group, per = E / G;
    int64_t t, e, g, i;
    double *r = xalloc(T * E), *p = xalloc(E), *c = xalloc(E), *gs = xalloc(G), *ye = xalloc(H);
    double *bias = NULL;
    char name[160];

    linear(m, L, "mlp.gate", x, T, H, E, r);
    if (m->ds_route == 3) {
        snprintf(name, sizeof name, "model.layers.%lld.mlp.gate.e_score_correction_bias",
                 (long long)L);
        bias = must(m, name, E);
    }
    memset(y, 0, (size_t)(T * H) * sizeof *y);
    for (t = 0; t < T; t++) {
        double z = 0, tot = 0;
        for (e = 0; e < E; e++) {
            if (m->ds_route == 3)
                p[e] = 1 / (1 + exp(-r[t * E + e]));
            else
                z += exp(r[t * E + e]);
        }
        for (e = 0; e < E; e++) {
            if (m->ds_route != 3)
                p[e] = exp(r[t * E + e]) / z;
            c[e] = bias ? p[e] + bias[e] : p[e];
        }
        for (g = 0; g < G && m->ds_route != 1; g++) {
            /* V3: sum of the group's two best choices; V2: its best */
            double a = -1e300, b = -1e300;
            for (i = 0; i < per; i++) {
                double v = c[g * per + i];
                if (v > a) {
                    b = a;
                    a = v;
                } else if (v > b) {
                    b = v;
                }
            }
            gs[g] = m->ds_route == 3 ? a + b : a;
        }
        if (m->ds_route != 1)
            for (e = 0; e < E; e++)
                if (!in_top(gs, G, e / per, m->topk_group)) {
                    c[e] = m->ds_route == 3 ? -1e300 : 0.0;
                    if (m->ds_route == 2)
                        p[e] = 0.0;
                }
        for (e = 0; e < E; e++)
            if (in_top(c, E, e, m->top_k))
                tot += p[e];
        for (e = 0; e < E; e++) {
            double wgt;
            if (!in_top(c, E, e, m->top_k))
                continue;
            wgt = (m->norm_topk ? p[e] / (tot + 1e-20) : p[e]) * m->routed_scale;
            snprintf(name, sizeof name, "mlp.experts.%lld.", (long long)e);
            swiglu(m, L, name, qw, x + t * H, 1, m->moe_inter, ye);
            for (i = 0; i < H; i++)
                y[t * H + i] += wgt * ye[i];
        }
    }
    if (m->shared_inter) {
        double *ys = xalloc(T * H);
        swiglu(m, L, "mlp.shared_experts.", qw, x, T, m->shared_inter, ys);
        for (i = 0; i < T * H; i++)
            y[i] += ys[i];
        free(ys);
    }
    free(r);
    free(p);
    free(c);
    free(gs);
    free(ye);
    free(bias);
}

/* ---- gpt-oss -------------------------------------------------------------- */

/* GptOssAttention on hn[T][H] into y[T][H]: biased projections, yarn
 * rotate_half rotation, grouped heads, the sink as a value-less logit. */
static void oss_attn(const fwd_ref_model *m, int64_t L, const double *hn, int64_t T, double *y)
{
    int64_t H = m->hidden, d = m->head_dim, nh = m->heads, nkv = m->kv_heads, t, s, h, i;
    int64_t win = (m->sliding_mask >> L & 1) ? m->window : 0;
    double *q = xalloc(T * nh * d), *k = xalloc(T * nkv * d), *v = xalloc(T * nkv * d);
    double *att = xalloc(T * nh * d), *sc = xalloc(T), *sinks;
    double amp = m->yarn_factor > 0 ? ms_of(m->yarn_factor, 1.0) : 1.0;
    char name[160];
    linear(m, L, "self_attn.q_proj", hn, T, H, nh * d, q);
    linear(m, L, "self_attn.k_proj", hn, T, H, nkv * d, k);
    linear(m, L, "self_attn.v_proj", hn, T, H, nkv * d, v);
    snprintf(name, sizeof name, "model.layers.%lld.self_attn.sinks", (long long)L);
    sinks = must(m, name, nh);
    for (t = 0; t < T; t++) {
        for (h = 0; h < nh; h++)
            ds_rotate(m, q + (t * nh + h) * d, d, t, amp);
        for (h = 0; h < nkv; h++)
            ds_rotate(m, k + (t * nkv + h) * d, d, t, amp);
    }
    for (h = 0; h < nh; h++)
        for (t = 0; t < T; t++) {
            int64_t kh = h / (nh / nkv), s0 = win && t >= win ? t - win + 1 : 0;
            double mx = sinks[h], z;
            for (s = s0; s <= t; s++) {
                double dot = 0;
                for (i = 0; i < d; i++)
                    dot += q[(t * nh + h) * d + i] * k[(s * nkv + kh) * d + i];
                sc[s] = dot / sqrt((double)d);
                mx = fmax(mx, sc[s]);
            }
            z = exp(sinks[h] - mx);
            for (s = s0; s <= t; s++)
                z += exp(sc[s] - mx);
            for (i = 0; i < d; i++) {
                double a = 0;
                for (s = s0; s <= t; s++)
                    a += exp(sc[s] - mx) / z * v[(s * nkv + kh) * d + i];
                att[(t * nh + h) * d + i] = a;
            }
        }
    linear(m, L, "self_attn.o_proj", att, T, nh * d, H, y);
    free(q);
    free(k);
    free(v);
    free(att);
    free(sc);
    free(sinks);
}

/* GptOssMLP on x[T][H] into y[T][H], one token at a time. */
static void oss_moe(const fwd_ref_model *m, int64_t L, const double *x, int64_t T, double *y)
{
    int64_t H = m->hidden, I = m->moe_inter, E = m->experts, t, e, j, c;
    double *r = xalloc(T * E), *gu = xalloc(2 * I), *a = xalloc(I), *gw, *gb, *dw, *db;
    char name[160];
    linear(m, L, "mlp.router", x, T, H, E, r);
    snprintf(name, sizeof name, "model.layers.%lld.mlp.experts.gate_up_proj", (long long)L);
    gw = must(m, name, E * H * 2 * I);
    strcat(name, "_bias");
    gb = must(m, name, E * 2 * I);
    snprintf(name, sizeof name, "model.layers.%lld.mlp.experts.down_proj", (long long)L);
    dw = must(m, name, E * I * H);
    strcat(name, "_bias");
    db = must(m, name, E * H);
    memset(y, 0, (size_t)(T * H) * sizeof *y);
    for (t = 0; t < T; t++) {
        const double *rt = r + t * E, *xt = x + t * H;
        double z = 0, mx = -1e300;
        for (e = 0; e < E; e++)
            if (in_top(rt, E, e, m->top_k))
                mx = fmax(mx, rt[e]);
        for (e = 0; e < E; e++)
            if (in_top(rt, E, e, m->top_k))
                z += exp(rt[e] - mx);
        for (e = 0; e < E; e++) {
            double wgt;
            if (!in_top(rt, E, e, m->top_k))
                continue;
            wgt = exp(rt[e] - mx) / z;
            for (j = 0; j < 2 * I; j++) {
                double s = gb[e * 2 * I + j];
                for (c = 0; c < H; c++)
                    s += xt[c] * gw[(e * H + c) * 2 * I + j];
                gu[j] = s;
            }
            for (j = 0; j < I; j++) {
                double gt = fmin(gu[2 * j], m->glu_limit);
                double up = fmax(-m->glu_limit, fmin(gu[2 * j + 1], m->glu_limit));
                a[j] = (up + 1) * gt / (1 + exp(-m->glu_alpha * gt));
            }
            for (c = 0; c < H; c++) {
                double s = db[e * H + c];
                for (j = 0; j < I; j++)
                    s += a[j] * dw[(e * I + j) * H + c];
                y[t * H + c] += wgt * s;
            }
        }
    }
    free(r);
    free(gu);
    free(a);
    free(gw);
    free(gb);
    free(dw);
    free(db);
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
    int gem = m->gemma || m->gemma2; /* the gemma family's common changes */
    double off = gem ? 1.0 : 0.0;

    for (t = 0; t < T; t++)
        for (i = 0; i < H; i++)
            x[t * H + i] = emb[tokens[t] * H + i] * (gem ? sqrt((double)H) : 1.0);
    for (L = 0; L < m->layers; L++) {
        snprintf(name, sizeof name, "model.layers.%lld.input_layernorm.weight", (long long)L);
        tmp = must(m, name, H);
        rmsnorm(x, T, H, tmp, m->eps, hn, off);
        free(tmp);
        if (m->mla) {
            mla_attn(m, L, hn, T, o);
            goto attn_residual;
        }
        if (m->gptoss) {
            oss_attn(m, L, hn, T, o);
            goto attn_residual;
        }
        snprintf(name, sizeof name, "model.layers.%lld.self_attn.qkv_proj.weight", (long long)L);
        tmp = weight(m, name, (nh + 2 * nkv) * d * H);
        if (tmp) {
            /* phi3: rows [q; k; v] of one weight */
            int64_t W = (nh + 2 * nkv) * d;
            double *f = xalloc(T * W);
            free(tmp);
            linear(m, L, "self_attn.qkv_proj", hn, T, H, W, f);
            for (t = 0; t < T; t++)
                for (i = 0; i < W; i++) {
                    double val = f[t * W + i];
                    if (i < nh * d)
                        q[t * nh * d + i] = val;
                    else if (i < (nh + nkv) * d)
                        k[t * nkv * d + i - nh * d] = val;
                    else
                        v[t * nkv * d + i - (nh + nkv) * d] = val;
                }
            free(f);
        } else {
            linear(m, L, "self_attn.q_proj", hn, T, H, nh * d, q);
            linear(m, L, "self_attn.k_proj", hn, T, H, nkv * d, k);
            linear(m, L, "self_attn.v_proj", hn, T, H, nkv * d, v);
        }
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
        {
            int sliding = m->window > 0 &&
                          !(m->window_pattern > 0 && (L + 1) % m->window_pattern == 0);
            double th = sliding && m->local_theta > 0 ? m->local_theta : m->theta;
            double sc = !sliding && m->global_linear > 0 ? m->global_linear : 1.0;
            rope(q, T, nh, d, m->rot_dim ? m->rot_dim : d, th, sc);
            rope(k, T, nkv, d, m->rot_dim ? m->rot_dim : d, th, sc);
        }
        for (h = 0; h < nh; h++) {
            int64_t kh = h / (nh / nkv);
            int64_t win = m->window_pattern > 0 && (L + 1) % m->window_pattern == 0 ? 0 : m->window;
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
    attn_residual:
        for (i = 0; i < T * H; i++)
            x[i] += o[i];
        snprintf(name, sizeof name, "model.layers.%lld.%s.weight", (long long)L,
                 m->gemma2 ? "pre_feedforward_layernorm" : "post_attention_layernorm");
        tmp = must(m, name, H);
        rmsnorm(x, T, H, tmp, m->eps, hn, off);
        free(tmp);
        if (m->gptoss) {
            oss_moe(m, L, hn, T, o);
            goto residual;
        }
        if (m->ds_route && L >= m->first_dense) {
            ds_moe(m, L, hn, T, o);
            goto residual;
        }
        if (m->moe && !(m->dense_layer_mask >> L & 1)) {
            moe_block(m, L, hn, T, o);
            goto residual;
        }
        snprintf(name, sizeof name, "model.layers.%lld.mlp.gate_up_proj.weight", (long long)L);
        tmp = weight(m, name, 2 * I * H);
        if (tmp) {
            /* phi3: rows [gate; up] of one weight */
            double *f = xalloc(T * 2 * I);
            free(tmp);
            linear(m, L, "mlp.gate_up_proj", hn, T, H, 2 * I, f);
            for (t = 0; t < T; t++)
                for (i = 0; i < I; i++) {
                    g[t * I + i] = f[t * 2 * I + i];
                    u[t * I + i] = f[t * 2 * I + I + i];
                }
            free(f);
        } else {
            linear(m, L, "mlp.gate_proj", hn, T, H, I, g);
            linear(m, L, "mlp.up_proj", hn, T, H, I, u);
        }
        for (i = 0; i < T * I; i++)
            if (gem)
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
    residual:
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
