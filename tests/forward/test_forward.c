/*
 * `quantbridge forward` against the tests' own float64 reference
 * (fwd_ref.c) on tiny random hf-dense checkpoints of the llama family
 * (tests/gen), and on their W4A16 conversions by the built program.
 *
 * Ground truth: the source weights are recomputed from the generator's
 * formula (qbt_hfd_fill, rounded to the stored dtype), never read back
 * through a reader; the W4A16 weights are decoded here from the packed
 * nibbles and fp16 scales (docs/w4a16-format.md, "Encoding of a packed
 * linear") with plain loops.
 *
 * Tolerance (docs/forward.md, "Tolerances"): a logit is a dot product
 * sum_c W_vc x_c of the final hidden state; every rounding upstream
 * perturbs x by a relative amount of order u, so |logit - ref| <=
 * kappa * u * sum_c |W_vc| |x_c|, with u the unit roundoff of the values
 * the pass stores between operations (float32: 2^-24; the W4A16 kernel's
 * fp16 inputs and outputs: 2^-11) and kappa the number of roundings on
 * the residual path times their amplification: FWD_KAPPA.
 *
 * Built a second time with QBT_FWD_CUDA as test_forward_cuda: every W4A16
 * fixture also runs with `forward --device cuda`, whose logits must meet
 * the same bound against the reference and lie within it of the CPU run
 * (docs/forward.md, "On a GPU"). Without a CUDA device (or a build without
 * CUDA) it prints "skipped: no CUDA device" and exits 77.
 */
#define _GNU_SOURCE
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <quantbridge/qb_half.h>
#include <quantbridge/qb_w4a16.h>

#include "fwd_ref.h"
#include "gen_hf_dense.h"
#include "qbt_fs.h"
#include "qbt_run.h"
#include "qbt_st_writer.h"

/* Roundings of the stored activations per layer (norm, q/k/v, rope,
 * attention, o, residual, norm, gate/up, silu, down, residual: about 12)
 * times the layers plus the embedding, final norm and head, with a factor
 * 2 for their growth through the normalisations: kappa = 2 * (12 L + 4)
 * (56 at 2 layers; measured worst: 1.5 in float32, 0.8 in fp16). */
#define FWD_KAPPA(L) (2.0 * (12.0 * (double)(L) + 4.0))
#define U_F32 (1.0 / 16777216.0) /* 2^-24 */
#define U_F16 (1.0 / 2048.0)     /* 2^-11 */

#ifdef QBT_FWD_CUDA
#define CUDA_MODE 1
#else
#define CUDA_MODE 0
#endif

static const int64_t TOKENS[] = {1, 17, 5, 99, 42, 3, 64, 120, 7};
#define N_TOK ((int64_t)(sizeof TOKENS / sizeof TOKENS[0]))

/* ---- ground truth of the source ----------------------------------------- */

typedef struct src_ctx {
    qbt_hfd_spec *s;
    qbt_hfd_tensor *t;
    size_t n;
} src_ctx;

static int src_get(void *ctx, const char *name, int64_t n, double *out)
{
    src_ctx *c = ctx;
    size_t i;
    int64_t k;
    for (i = 0; i < c->n; i++)
        if (strcmp(c->t[i].name, name) == 0) {
            float *f = malloc(qbt_hfd_numel(&c->t[i]) * sizeof *f);
            ck_assert_ptr_nonnull(f);
            ck_assert_int_eq((int64_t)qbt_hfd_numel(&c->t[i]), n);
            qbt_hfd_fill(c->s, &c->t[i], f);
            for (k = 0; k < n; k++)
                out[k] = qbt_hfd_round(c->s->dtype, f[k]);
            free(f);
            return 0;
        }
    return -1;
}

/* ---- ground truth of a W4A16 directory ---------------------------------- */

static int w4_f16(qb_w4a16_model *m, const char *file, const char *name, int64_t n, double *out)
{
    qb_w4a16_tensor t;
    int64_t i;
    if (qb_w4a16_tensor_get(m, file, name, &t))
        return -1;
    if (t.dtype == QB_W4A16_DT_F32) { /* DeepSeek-V3's router bias */
        ck_assert_int_eq((int64_t)t.n_bytes, n * 4);
        for (i = 0; i < n; i++) {
            float f;
            memcpy(&f, (const char *)t.data + 4 * i, 4);
            out[i] = f;
        }
        return 0;
    }
    ck_assert_int_eq(t.dtype, QB_W4A16_DT_F16);
    ck_assert_int_eq((int64_t)t.n_bytes, n * 2);
    for (i = 0; i < n; i++)
        out[i] = qb_f16_to_f32(((const uint16_t *)t.data)[i]);
    return 0;
}

static int w4_get(void *ctx, const char *name, int64_t n, double *out)
{
    qb_w4a16_model *m = ctx;
    char file[64], path[160];
    long long L;
    int off = 0;
    size_t len;

    if (strcmp(name, "model.embed_tokens.weight") == 0)
        return w4_f16(m, "embed.safetensors", "embed_tokens.weight", n, out);
    if (strcmp(name, "model.norm.weight") == 0)
        return w4_f16(m, "norm.safetensors", "norm.weight", n, out);
    if (strcmp(name, "lm_head.weight") == 0)
        return w4_f16(m, "lm_head.safetensors", "lm_head.weight", n, out);
    ck_assert_msg(sscanf(name, "model.layers.%lld.%n", &L, &off) == 1 && off > 0, "%s", name);
    ck_assert_int_eq(qb_w4a16_layer_file(m, L, file, sizeof file), 0);
    snprintf(path, sizeof path, "%s", name + off);
    len = strlen(path);
    {
        qb_w4a16_linear q;
        int is_bias = len > 5 && strcmp(path + len - 5, ".bias") == 0;
        int64_t r, c, ng;
        qb_status rc;
        if (!is_bias && !(len > 7 && strcmp(path + len - 7, ".weight") == 0))
            return w4_f16(m, file, path, n, out);
        *strrchr(path, '.') = '\0';
        rc = qb_w4a16_linear_get(m, L, path, 0, &q);
        if (rc == QB_E_NOT_FOUND) { /* a norm, a router: F16 under its own name */
            if (is_bias)
                return -1;
            strcat(path, ".weight");
            return w4_f16(m, file, path, n, out);
        }
        ck_assert_int_eq(rc, 0);
        if (is_bias) {
            if (!q.bias)
                return -1;
            for (r = 0; r < q.n; r++)
                out[r] = qb_f16_to_f32(q.bias[r]);
            return 0;
        }
        ck_assert_int_eq(q.n * q.k, n);
        ng = (q.k + q.group_size - 1) / q.group_size;
        for (r = 0; r < q.n; r++)
            for (c = 0; c < q.k; c++) {
                uint8_t byte = q.packed[r * ((q.k + 1) / 2) + c / 2];
                int code = (c % 2 ? byte >> 4 : byte & 15) - 8;
                float sc = qb_f16_to_f32(q.scales[r * ng + c / q.group_size]);
                out[r * q.k + c] = (float)code * sc; /* decoded in fp32 (the format) */
            }
        return 0;
    }
}

/* ---- running the program ------------------------------------------------ */

/* `forward` on model with --device `device` (NULL: the default). */
static float *run_forward_dev(const char *model, const char *out_dir, const char *device,
                              int64_t *rows, int64_t *cols)
{
    char args[8192], toks[512] = "", *text = NULL, *data, *o;
    size_t len, hl, k;
    cJSON *h, *lg, *sh;
    float *f;
    int rc;

    for (k = 0; k < (size_t)N_TOK; k++)
        snprintf(toks + strlen(toks), sizeof toks - strlen(toks), "%s%lld", k ? "," : "",
                 (long long)TOKENS[k]);
    o = qbt_path(out_dir, "logits.safetensors");
    snprintf(args, sizeof args, "forward --model '%s' --tokens %s --output '%s' --threads 3%s%s",
             model, toks, o, device ? " --device " : "", device ? device : "");
    rc = qbt_run_line(args, &text);
    ck_assert_msg(rc == 0, "%s -> %d\n%s", args, rc, text);
    free(text);
    data = qbt_read_file(o, &len);
    ck_assert_ptr_nonnull(data);
    hl = 0;
    for (k = 0; k < 8; k++)
        hl |= (size_t)(unsigned char)data[k] << (8 * k);
    ck_assert_int_eq((8 + hl) % 8, 0);
    {
        char *js = strndup(data + 8, hl);
        h = cJSON_Parse(js);
        free(js);
    }
    ck_assert_ptr_nonnull(h);
    lg = cJSON_GetObjectItem(h, "logits");
    ck_assert_str_eq(cJSON_GetObjectItem(lg, "dtype")->valuestring, "F32");
    sh = cJSON_GetObjectItem(lg, "shape");
    *rows = (int64_t)cJSON_GetArrayItem(sh, 0)->valuedouble;
    *cols = (int64_t)cJSON_GetArrayItem(sh, 1)->valuedouble;
    ck_assert_int_eq((int64_t)len, (int64_t)(8 + hl) + *rows * *cols * 4);
    f = malloc((size_t)(*rows * *cols) * sizeof *f);
    ck_assert_ptr_nonnull(f);
    memcpy(f, data + 8 + hl, (size_t)(*rows * *cols) * sizeof *f);
    cJSON_Delete(h);
    free(data);
    free(o);
    return f;
}

static float *run_forward(const char *model, const char *out_dir, int64_t *rows, int64_t *cols)
{
    return run_forward_dev(model, out_dir, NULL, rows, cols);
}

/* Reference model from the written config.json (eps, theta, window). */
static void ref_init(fwd_ref_model *m, const qbt_hfd_spec *s, const char *dir)
{
    char *p = qbt_path(dir, "config.json"), *text = qbt_read_file(p, NULL);
    cJSON *c = cJSON_Parse(text), *sw;
    ck_assert_ptr_nonnull(c);
    memset(m, 0, sizeof *m);
    m->hidden = s->hidden;
    m->inter = s->intermediate;
    m->layers = s->layers;
    m->heads = s->heads;
    m->kv_heads = s->kv_heads;
    m->head_dim = s->head_dim;
    m->vocab = s->vocab;
    m->eps = cJSON_GetObjectItem(c, "rms_norm_eps")->valuedouble;
    m->theta = cJSON_GetObjectItem(c, "rope_theta")->valuedouble;
    m->qk_norm = strcmp(s->arch, "qwen3") == 0;
    sw = cJSON_GetObjectItem(c, "sliding_window");
    if (strcmp(s->arch, "mistral") == 0 && cJSON_IsNumber(sw))
        m->window = (int64_t)sw->valuedouble;
    if (strcmp(s->arch, "gemma2") == 0) {
        m->gemma2 = 1;
        m->window = (int64_t)sw->valuedouble;
        m->window_pattern = 2;
        m->qpas = cJSON_GetObjectItem(c, "query_pre_attn_scalar")->valuedouble;
        m->attn_cap = cJSON_GetObjectItem(c, "attn_logit_softcapping")->valuedouble;
        m->final_cap = cJSON_GetObjectItem(c, "final_logit_softcapping")->valuedouble;
    }
    cJSON_Delete(c);
    free(text);
    free(p);
}

/* Compares got[T][V] with the reference: returns the worst ratio
 * |got - ref| / (u * mag), and checks it against FWD_KAPPA. */
static double compare(const char *what, const float *got, const double *ref, const double *mag,
                      int64_t n, double u, int64_t layers)
{
    double worst = 0, max_abs = 0;
    int64_t i;
    for (i = 0; i < n; i++) {
        double r = fabs((double)got[i] - ref[i]) / (u * mag[i]);
        ck_assert_msg(isfinite(got[i]), "%s: logit %lld not finite", what, (long long)i);
        if (r > worst)
            worst = r;
        if (fabs(ref[i]) > max_abs)
            max_abs = fabs(ref[i]);
    }
    fprintf(stderr, "%s: max |logit| %.4g, worst error / (u * mag) = %.3g (kappa %.0f)\n", what,
            max_abs, worst, FWD_KAPPA(layers));
    ck_assert_msg(max_abs > 0, "%s: all logits are zero", what);
    ck_assert_msg(worst <= FWD_KAPPA(layers), "%s: error %.3g u * mag > kappa %.0f", what, worst,
                  FWD_KAPPA(layers));
    return worst;
}

/* The W4A16 model's logits on the CPU, then (test_forward_cuda) on the GPU:
 * the GPU's against the reference with the same bound, and against the
 * CPU's (the same fp16 contract, another fp32 summation order). */
static void check_w4a16(const char *arch, const char *w4, const char *tmp, const double *ref,
                        const double *mag, int64_t V, int64_t layers)
{
    int64_t rows, cols, i;
    float *got = run_forward(w4, tmp, &rows, &cols), *gpu;
    double *cpu;
    char what[96];
    ck_assert_int_eq(rows, N_TOK);
    ck_assert_int_eq(cols, V);
    snprintf(what, sizeof what, "%s w4a16", arch);
    compare(what, got, ref, mag, rows * cols, U_F16, layers);
    if (!CUDA_MODE) {
        free(got);
        return;
    }
    gpu = run_forward_dev(w4, tmp, "cuda", &rows, &cols);
    ck_assert_int_eq(rows, N_TOK);
    ck_assert_int_eq(cols, V);
    snprintf(what, sizeof what, "%s w4a16 cuda vs reference", arch);
    compare(what, gpu, ref, mag, rows * cols, U_F16, layers);
    cpu = malloc(sizeof(double) * (size_t)(rows * cols));
    ck_assert_ptr_nonnull(cpu);
    for (i = 0; i < rows * cols; i++)
        cpu[i] = got[i];
    snprintf(what, sizeof what, "%s w4a16 cuda vs cpu", arch);
    compare(what, gpu, cpu, mag, rows * cols, U_F16, layers);
    free(cpu);
    free(gpu);
    free(got);
}

static void check_arch(const char *arch, const char *dtype, int tied, int heads, int kv,
                       int head_dim, int window)
{
    qbt_hfd_spec s = {.arch = arch, .dtype = dtype, .layers = 2, .hidden = 64,
                      .intermediate = 96, .vocab = 128, .heads = heads, .kv_heads = kv,
                      .head_dim = head_dim, .tied = tied, .shards = 1, .seed = 7};
    const char *tmp = qbt_scratch("fwd");
    char *src = qbt_path(tmp, "src"), *w4 = qbt_path(tmp, "w4"), args[8192], *text = NULL;
    src_ctx sc;
    fwd_ref_model m;
    qb_w4a16_model *wm = NULL;
    double *ref = malloc(sizeof(double) * N_TOK * 128), *mag = malloc(sizeof(double) * N_TOK * 128);
    char err[512];
    float *got;
    int64_t rows, cols;

    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, src), 0);
    ck_assert_int_eq(qbt_hfd_tensors(&s, &sc.t, &sc.n), 0);
    if (window) {
        /* The generator writes mistral's window as null: set one shorter
         * than the sequence so the mask is exercised. */
        char *p = qbt_path(src, "config.json"), *text = qbt_read_file(p, NULL), *at, *t2;
        ck_assert_ptr_nonnull(text);
        const char *key = strcmp(arch, "gemma2") == 0 ? "\"sliding_window\": 4096"
                                                       : "\"sliding_window\": null";
        at = strstr(text, key);
        ck_assert_ptr_nonnull(at);
        ck_assert_int_ge(asprintf(&t2, "%.*s\"sliding_window\": %d%s", (int)(at - text), text,
                                  window, at + strlen(key)), 0);
        qbt_write_file(p, t2);
        free(t2);
        free(text);
        free(p);
    }
    sc.s = &s;

    /* The source, as stored (bf16/f16/f32 values). */
    ref_init(&m, &s, src);
    m.get = src_get;
    m.ctx = &sc;
    fwd_ref_run(&m, TOKENS, N_TOK, ref, mag);
    if (!CUDA_MODE) { /* test_forward_cuda: the W4A16 runs only */
        got = run_forward(src, tmp, &rows, &cols);
        ck_assert_int_eq(rows, N_TOK);
        ck_assert_int_eq(cols, 128);
        compare(arch, got, ref, mag, rows * cols, U_F32, s.layers);
        free(got);
    }

    /* Its W4A16 conversion (g32), through the kernel. */
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --group-size 32", src, w4);
    ck_assert_msg(qbt_run_line(args, &text) == 0, "%s\n%s", args, text);
    free(text);
    ck_assert_msg(qb_w4a16_open(w4, 0, &wm, err, sizeof err) == 0, "%s", err);
    m.get = w4_get;
    m.ctx = wm;
    fwd_ref_run(&m, TOKENS, N_TOK, ref, mag);
    check_w4a16(arch, w4, tmp, ref, mag, 128, s.layers);
    qb_w4a16_close(wm);
    free(sc.t);
    free(ref);
    free(mag);
    free(src);
    free(w4);
}

START_TEST(llama_bf16_untied) { check_arch("llama", "bf16", 0, 4, 2, 16, 0); }
END_TEST

START_TEST(mistral_f16_window) { check_arch("mistral", "f16", 0, 4, 1, 16, 3); }
END_TEST

START_TEST(qwen2_biases_tied) { check_arch("qwen2", "bf16", 1, 4, 2, 16, 0); }
END_TEST

/* gemma2: (1 + w) norms, embedding scale, gelu-tanh, sandwich norms,
 * query_pre_attn_scalar, both soft-cappings, window 4 on even layers. */
START_TEST(gemma2_sandwich_softcap) { check_arch("gemma2", "bf16", 1, 4, 2, 16, 4); }
END_TEST

START_TEST(qwen3_qk_norm_head_dim) { check_arch("qwen3", "f32", 0, 4, 2, 32, 0); }
END_TEST

/* ---- hand-built fixtures: phi3 and the MoE families ---------------------- */

/* A model built tensor by tensor (the hf-dense generator knows the dense
 * families only): F32 values from splitmix64 normals, written as one
 * model.safetensors, and the getter of its exact values. */
#define FX_MAX 256
typedef struct fx {
    char name[FX_MAX][96];
    int nd[FX_MAX];
    int64_t dims[FX_MAX][3];
    float *data[FX_MAX];
    size_t n;
    qbt_rng rng;
} fx;

static void fx_add(fx *f, const char *name, int64_t rows, int64_t cols, double mean, double sd)
{
    int64_t i, n = rows * (cols ? cols : 1);
    ck_assert_uint_lt(f->n, FX_MAX);
    snprintf(f->name[f->n], sizeof f->name[0], "%s", name);
    f->nd[f->n] = cols ? 2 : 1;
    f->dims[f->n][0] = rows;
    f->dims[f->n][1] = cols;
    f->data[f->n] = malloc((size_t)n * sizeof(float));
    for (i = 0; i < n; i++)
        f->data[f->n][i] = (float)(mean + sd * qbt_rng_normal(&f->rng));
    f->n++;
}

/* A 3-D tensor [a, b, c] (gpt-oss's fused experts). */
static void fx_add3(fx *f, int64_t L, const char *what, int64_t a, int64_t b, int64_t c, double sd)
{
    char name[200];
    snprintf(name, sizeof name, "model.layers.%lld.%s", (long long)L, what);
    fx_add(f, name, a * b, c, 0, sd);
    f->nd[f->n - 1] = 3;
    f->dims[f->n - 1][0] = a;
    f->dims[f->n - 1][1] = b;
    f->dims[f->n - 1][2] = c;
}

static void fx_addf(fx *f, int64_t L, const char *what, int64_t rows, int64_t cols, double mean,
                    double sd)
{
    char name[200];
    snprintf(name, sizeof name, "model.layers.%lld.%s", (long long)L, what);
    fx_add(f, name, rows, cols, mean, sd);
}

static int fx_get(void *ctx, const char *name, int64_t n, double *out)
{
    fx *f = ctx;
    size_t i;
    int64_t k;
    for (i = 0; i < f->n; i++)
        if (strcmp(f->name[i], name) == 0) {
            ck_assert_int_eq(f->dims[i][0] * (f->nd[i] >= 2 ? f->dims[i][1] : 1) *
                                 (f->nd[i] == 3 ? f->dims[i][2] : 1), n);
            for (k = 0; k < n; k++)
                out[k] = f->data[i][k];
            return 0;
        }
    return -1;
}

static void fx_write(fx *f, const char *dir, const char *config)
{
    qbt_st_writer *w = qbt_st_writer_new();
    char *p;
    size_t i;
    qbt_mkdir_p(dir);
    for (i = 0; i < f->n; i++) {
        size_t n = (size_t)(f->dims[i][0] * (f->nd[i] >= 2 ? f->dims[i][1] : 1) *
                            (f->nd[i] == 3 ? f->dims[i][2] : 1));
        ck_assert_int_eq(qbt_st_writer_add(w, f->name[i], "F32", f->nd[i], f->dims[i], f->data[i],
                                           n * sizeof(float)),
                         0);
    }
    p = qbt_path(dir, "model.safetensors");
    ck_assert_int_eq(qbt_st_writer_save(w, p), 0);
    free(p);
    qbt_st_writer_free(w);
    p = qbt_path(dir, "config.json");
    qbt_write_file(p, config);
    free(p);
}

static void fx_free(fx *f)
{
    size_t i;
    for (i = 0; i < f->n; i++)
        free(f->data[i]);
}

/* arch: "phi3", "gemma", "gemma3_text", "mixtral", "qwen2_moe", "qwen3_moe".
 * gemma (1) is tied (its checkpoints have no lm_head). 2 layers, hidden 64,
 * 4 heads of 16 (qwen3_moe: 32), 2 kv heads, vocab 128, 4 experts top-2.
 * Routers get a larger spread so that no two experts tie. */
static void check_fixture(const char *arch)
{
    const int64_t H = 64, I = 96, V = 128, nh = 4, nkv = 2, E = 4, IM = 32, IS = 64;
    int phi3 = strcmp(arch, "phi3") == 0, mix = strcmp(arch, "mixtral") == 0;
    int q2 = strcmp(arch, "qwen2_moe") == 0, q3 = strcmp(arch, "qwen3_moe") == 0;
    int g3 = strcmp(arch, "gemma3_text") == 0, g1 = strcmp(arch, "gemma") == 0;
    int64_t d = q3 ? 32 : 16, L, e;
    const char *tmp = qbt_scratch("fwd-fx");
    char *src = qbt_path(tmp, "src"), *w4 = qbt_path(tmp, "w4"), cfg[2048], args[8192], nm[96];
    char *text = NULL, err[512];
    double *ref = malloc(sizeof(double) * N_TOK * V), *mag = malloc(sizeof(double) * N_TOK * V);
    fx *f = calloc(1, sizeof *f);
    fwd_ref_model m;
    qb_w4a16_model *wm = NULL;
    float *got;
    int64_t rows, cols;

    f->rng.s = 0x5eed + (uint64_t)strlen(arch);
    fx_add(f, "model.embed_tokens.weight", V, H, 0, 0.5);
    for (L = 0; L < 2; L++) {
        /* gemma norms hold w of (1 + w) */
        fx_addf(f, L, "input_layernorm.weight", H, 0, g3 || g1 ? 0 : 1, 0.1);
        if (phi3) {
            fx_addf(f, L, "self_attn.qkv_proj.weight", (nh + 2 * nkv) * d, H, 0, 0.1);
        } else {
            fx_addf(f, L, "self_attn.q_proj.weight", nh * d, H, 0, 0.1);
            fx_addf(f, L, "self_attn.k_proj.weight", nkv * d, H, 0, 0.1);
            fx_addf(f, L, "self_attn.v_proj.weight", nkv * d, H, 0, 0.1);
        }
        if (q2) {
            fx_addf(f, L, "self_attn.q_proj.bias", nh * d, 0, 0, 0.1);
            fx_addf(f, L, "self_attn.k_proj.bias", nkv * d, 0, 0, 0.1);
            fx_addf(f, L, "self_attn.v_proj.bias", nkv * d, 0, 0, 0.1);
        }
        if (q3 || g3) {
            fx_addf(f, L, "self_attn.q_norm.weight", d, 0, g3 ? 0 : 1, 0.1);
            fx_addf(f, L, "self_attn.k_norm.weight", d, 0, g3 ? 0 : 1, 0.1);
        }
        fx_addf(f, L, "self_attn.o_proj.weight", H, nh * d, 0, 0.1);
        fx_addf(f, L, "post_attention_layernorm.weight", H, 0, g3 || g1 ? 0 : 1, 0.1);
        if (g3) {
            fx_addf(f, L, "pre_feedforward_layernorm.weight", H, 0, 0, 0.1);
            fx_addf(f, L, "post_feedforward_layernorm.weight", H, 0, 0, 0.1);
        }
        if (phi3) {
            fx_addf(f, L, "mlp.gate_up_proj.weight", 2 * I, H, 0, 0.1);
            fx_addf(f, L, "mlp.down_proj.weight", H, I, 0, 0.1);
        } else if (mix) {
            fx_addf(f, L, "block_sparse_moe.gate.weight", E, H, 0, 1.0);
            for (e = 0; e < E; e++) {
                snprintf(nm, sizeof nm, "block_sparse_moe.experts.%lld.w1.weight", (long long)e);
                fx_addf(f, L, nm, I, H, 0, 0.1);
                snprintf(nm, sizeof nm, "block_sparse_moe.experts.%lld.w2.weight", (long long)e);
                fx_addf(f, L, nm, H, I, 0, 0.1);
                snprintf(nm, sizeof nm, "block_sparse_moe.experts.%lld.w3.weight", (long long)e);
                fx_addf(f, L, nm, I, H, 0, 0.1);
            }
        } else if ((q2 && L == 1) || g3 || g1) {
            /* mlp_only_layers [1]: a dense MLP of intermediate_size */
            fx_addf(f, L, "mlp.gate_proj.weight", I, H, 0, 0.1);
            fx_addf(f, L, "mlp.up_proj.weight", I, H, 0, 0.1);
            fx_addf(f, L, "mlp.down_proj.weight", H, I, 0, 0.1);
        } else {
            fx_addf(f, L, "mlp.gate.weight", E, H, 0, 1.0);
            for (e = 0; e < E; e++) {
                snprintf(nm, sizeof nm, "mlp.experts.%lld.gate_proj.weight", (long long)e);
                fx_addf(f, L, nm, IM, H, 0, 0.1);
                snprintf(nm, sizeof nm, "mlp.experts.%lld.up_proj.weight", (long long)e);
                fx_addf(f, L, nm, IM, H, 0, 0.1);
                snprintf(nm, sizeof nm, "mlp.experts.%lld.down_proj.weight", (long long)e);
                fx_addf(f, L, nm, H, IM, 0, 0.1);
            }
            if (q2) {
                fx_addf(f, L, "mlp.shared_expert.gate_proj.weight", IS, H, 0, 0.1);
                fx_addf(f, L, "mlp.shared_expert.up_proj.weight", IS, H, 0, 0.1);
                fx_addf(f, L, "mlp.shared_expert.down_proj.weight", H, IS, 0, 0.1);
                fx_addf(f, L, "mlp.shared_expert_gate.weight", 1, H, 0, 1.0);
            }
        }
    }
    fx_add(f, "model.norm.weight", H, 0, g3 || g1 ? 0 : 1, 0.1);
    if (!g1)
        fx_add(f, "lm_head.weight", V, H, 0, 0.1);
    snprintf(cfg, sizeof cfg,
             "{\"architectures\": [\"X\"], \"model_type\": \"%s\", \"hidden_size\": %lld,\n"
             " \"intermediate_size\": %lld, \"num_hidden_layers\": 2, \"num_attention_heads\": %lld,\n"
             " \"num_key_value_heads\": %lld, \"head_dim\": %lld, \"rms_norm_eps\": 1e-6,\n"
             " \"rope_theta\": 10000.0, \"vocab_size\": %lld, \"tie_word_embeddings\": %s,\n"
             " \"max_position_embeddings\": 2048, \"bos_token_id\": 1, \"eos_token_id\": 2,\n"
             " \"hidden_act\": \"%s\", \"torch_dtype\": \"float32\"%s}\n",
             arch, (long long)H, (long long)I, (long long)nh, (long long)nkv, (long long)d,
             (long long)V, g1 ? "true" : "false", g1 ? "gelu_pytorch_tanh" : "silu",
             phi3 ? ", \"partial_rotary_factor\": 0.5, \"sliding_window\": 5, \"rope_scaling\": null"
             : mix ? ", \"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"sliding_window\": null"
             : q2 ? ", \"num_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32,"
                    " \"shared_expert_intermediate_size\": 64, \"norm_topk_prob\": false,"
                    " \"decoder_sparse_step\": 1, \"mlp_only_layers\": [1], \"use_sliding_window\": false"
             : g1 ? ", \"hidden_activation\": \"gelu_pytorch_tanh\""
             : g3 ? ", \"query_pre_attn_scalar\": 24, \"sliding_window\": 4,"
                    " \"sliding_window_pattern\": 2, \"rope_local_base_freq\": 100.0,"
                    " \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2.0},"
                    " \"hidden_activation\": \"gelu_pytorch_tanh\""
                  : ", \"num_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32,"
                    " \"norm_topk_prob\": true, \"decoder_sparse_step\": 1, \"mlp_only_layers\": []");
    fx_write(f, src, cfg);

    memset(&m, 0, sizeof m);
    m.hidden = H;
    m.inter = I;
    m.layers = 2;
    m.heads = nh;
    m.kv_heads = nkv;
    m.head_dim = d;
    m.vocab = V;
    m.eps = 1e-6;
    m.theta = 10000.0;
    m.qk_norm = q3 || g3;
    m.window = phi3 ? 5 : g3 ? 4 : 0;
    if (g3) {
        /* layer 0 slides with the local base, layer 1 is global with
         * the linear scaling; no soft-capping (Gemma3TextConfig) */
        m.gemma2 = 1;
        m.window_pattern = 2;
        m.qpas = 24;
        m.local_theta = 100.0;
        m.global_linear = 2.0;
    }
    m.gemma = g1; /* (1 + w) norms, embedding scale, gelu-tanh; nothing else */
    m.rot_dim = phi3 ? d / 2 : 0;
    m.moe = mix ? 1 : (q2 || q3) ? 2 : 0;
    m.norm_topk = mix || q3;
    m.experts = E;
    m.top_k = 2;
    m.moe_inter = mix ? I : IM;
    m.shared_inter = q2 ? IS : 0;
    m.dense_layer_mask = q2 ? 2u : 0u;
    m.get = fx_get;
    m.ctx = f;
    fwd_ref_run(&m, TOKENS, N_TOK, ref, mag);
    if (!CUDA_MODE) {
        got = run_forward(src, tmp, &rows, &cols);
        ck_assert_int_eq(rows, N_TOK);
        ck_assert_int_eq(cols, V);
        compare(arch, got, ref, mag, rows * cols, U_F32, 2);
        free(got);
    }

    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --group-size 32", src, w4);
    ck_assert_msg(qbt_run_line(args, &text) == 0, "%s\n%s", args, text);
    free(text);
    ck_assert_msg(qb_w4a16_open(w4, 0, &wm, err, sizeof err) == 0, "%s", err);
    m.get = w4_get;
    m.ctx = wm;
    fwd_ref_run(&m, TOKENS, N_TOK, ref, mag);
    check_w4a16(arch, w4, tmp, ref, mag, V, 2);
    qb_w4a16_close(wm);
    fx_free(f);
    free(f);
    free(ref);
    free(mag);
    free(src);
    free(w4);
}

/* ---- DeepSeek-V2/V3 (MLA, DeepSeek routing) ------------------------------ */

/* One tiny DeepSeek fixture per variant: 2 layers (layer 0 dense,
 * first_k_dense_replace 1), hidden 64, 4 heads, kv_lora_rank 32, 8 routed
 * experts of 32, vocab 128.
 *   "v3":       q_lora 32, interleaved rope, yarn (factor 4, orig 64,
 *               mscale 1, mscale_all_dim 0.8: both the cos/sin factor and
 *               the score scale differ from 1), sigmoid + correction bias,
 *               4 groups keep 2, top 3, renormalised, x 2.5, 2 shared
 *               experts; rms_norm_eps 0.01, so q_a/kv_a norms' own 1e-6
 *               matters; head sizes nope 16, rope 16, v 24;
 *   "v3_half":  q_proj (q_lora_rank null), rope_interleave false, yarn in
 *               transformers 5's rope_parameters (theta inside, truncate
 *               false), one group (Kimi K2's layout), top 2;
 *   "v2":       q_proj, softmax, group_limited_greedy (4 groups keep 2,
 *               top 2, x 1.5), default rope; nope 8, rope 8, v 24 (wider
 *               than q.k's 16);
 *   "v2_greedy": q_lora 32, greedy top 2, yarn with mscale = mscale_all_dim
 *               0.707 (DeepSeek-V2's own). */
static void build_deepseek(const char *variant, fx *f, fwd_ref_model *m, char *cfg, size_t cap)
{
    const int64_t H = 64, I = 96, V = 128, nh = 4, R = 32, E = 8, IM = 32;
    int v3 = strncmp(variant, "v3", 2) == 0, half = strcmp(variant, "v3_half") == 0;
    int v2g = strcmp(variant, "v2_greedy") == 0;
    int64_t Rq = (strcmp(variant, "v3") == 0 || v2g) ? 32 : 0;
    int64_t dn = v3 ? 16 : 8, dr = v3 ? 16 : 8, dv = 24, n_shared = strcmp(variant, "v3") == 0 ? 2 : 1;
    int64_t L, e;
    char nm[96];

    f->rng.s = 0xd5eed + (uint64_t)strlen(variant) * 131 + (uint64_t)variant[1];
    fx_add(f, "model.embed_tokens.weight", V, H, 0, 0.5);
    for (L = 0; L < 2; L++) {
        fx_addf(f, L, "input_layernorm.weight", H, 0, 1, 0.1);
        if (Rq) {
            fx_addf(f, L, "self_attn.q_a_proj.weight", Rq, H, 0, 0.1);
            fx_addf(f, L, "self_attn.q_a_layernorm.weight", Rq, 0, 1, 0.1);
            fx_addf(f, L, "self_attn.q_b_proj.weight", nh * (dn + dr), Rq, 0, 0.15);
        } else {
            fx_addf(f, L, "self_attn.q_proj.weight", nh * (dn + dr), H, 0, 0.1);
        }
        fx_addf(f, L, "self_attn.kv_a_proj_with_mqa.weight", R + dr, H, 0, 0.1);
        fx_addf(f, L, "self_attn.kv_a_layernorm.weight", R, 0, 1, 0.1);
        fx_addf(f, L, "self_attn.kv_b_proj.weight", nh * (dn + dv), R, 0, 0.15);
        fx_addf(f, L, "self_attn.o_proj.weight", H, nh * dv, 0, 0.1);
        fx_addf(f, L, "post_attention_layernorm.weight", H, 0, 1, 0.1);
        if (L == 0) {
            fx_addf(f, L, "mlp.gate_proj.weight", I, H, 0, 0.1);
            fx_addf(f, L, "mlp.up_proj.weight", I, H, 0, 0.1);
            fx_addf(f, L, "mlp.down_proj.weight", H, I, 0, 0.1);
            continue;
        }
        fx_addf(f, L, "mlp.gate.weight", E, H, 0, 0.15);
        if (v3) /* large enough to change which experts win */
            fx_addf(f, L, "mlp.gate.e_score_correction_bias", E, 0, 0, 0.3);
        for (e = 0; e < E; e++) {
            snprintf(nm, sizeof nm, "mlp.experts.%lld.gate_proj.weight", (long long)e);
            fx_addf(f, L, nm, IM, H, 0, 0.1);
            snprintf(nm, sizeof nm, "mlp.experts.%lld.up_proj.weight", (long long)e);
            fx_addf(f, L, nm, IM, H, 0, 0.1);
            snprintf(nm, sizeof nm, "mlp.experts.%lld.down_proj.weight", (long long)e);
            fx_addf(f, L, nm, H, IM, 0, 0.1);
        }
        fx_addf(f, L, "mlp.shared_experts.gate_proj.weight", IM * n_shared, H, 0, 0.1);
        fx_addf(f, L, "mlp.shared_experts.up_proj.weight", IM * n_shared, H, 0, 0.1);
        fx_addf(f, L, "mlp.shared_experts.down_proj.weight", H, IM * n_shared, 0, 0.1);
    }
    fx_add(f, "model.norm.weight", H, 0, 1, 0.1);
    fx_add(f, "lm_head.weight", V, H, 0, 0.1);

    snprintf(cfg, cap,
             "{\"architectures\": [\"X\"], \"model_type\": \"deepseek_v%d\", \"hidden_size\": 64,\n"
             " \"intermediate_size\": 96, \"moe_intermediate_size\": 32, \"num_hidden_layers\": 2,\n"
             " \"num_attention_heads\": 4, \"num_key_value_heads\": 4, \"n_routed_experts\": 8,\n"
             " \"n_shared_experts\": %lld, \"kv_lora_rank\": 32, \"q_lora_rank\": %s,\n"
             " \"qk_nope_head_dim\": %lld, \"qk_rope_head_dim\": %lld, \"v_head_dim\": 24,\n"
             " \"first_k_dense_replace\": 1, \"vocab_size\": 128, \"tie_word_embeddings\": false,\n"
             " \"max_position_embeddings\": 256, \"bos_token_id\": 0, \"eos_token_id\": 1,\n"
             " \"hidden_act\": \"silu\", \"torch_dtype\": \"float32\", %s}\n",
             v3 ? 3 : 2, (long long)n_shared, Rq ? "32" : "null", (long long)dn, (long long)dr,
             strcmp(variant, "v3") == 0
                 ? "\"rms_norm_eps\": 0.01, \"rope_theta\": 10000.0, \"rope_scaling\": {\"type\": "
                   "\"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 64, "
                   "\"beta_fast\": 32, \"beta_slow\": 1, \"mscale\": 1.0, \"mscale_all_dim\": 0.8},"
                   " \"n_group\": 4, \"topk_group\": 2, \"num_experts_per_tok\": 3,"
                   " \"norm_topk_prob\": true, \"routed_scaling_factor\": 2.5,"
                   " \"topk_method\": \"noaux_tc\", \"scoring_func\": \"sigmoid\""
             : half
                 ? "\"rms_norm_eps\": 1e-6, \"rope_interleave\": false, \"rope_parameters\": "
                   "{\"rope_type\": \"yarn\", \"rope_theta\": 1000.0, \"factor\": 8.0, "
                   "\"original_max_position_embeddings\": 32, \"beta_fast\": 16, \"beta_slow\": 2,"
                   " \"mscale\": 0.9, \"mscale_all_dim\": 1.0, \"truncate\": false},"
                   " \"n_group\": 1, \"topk_group\": 1, \"num_experts_per_tok\": 2,"
                   " \"norm_topk_prob\": true, \"routed_scaling_factor\": 2.5"
             : v2g
                 ? "\"rms_norm_eps\": 1e-6, \"rope_theta\": 10000.0, \"rope_scaling\": {\"type\": "
                   "\"yarn\", \"factor\": 40, \"original_max_position_embeddings\": 64, "
                   "\"beta_fast\": 32, \"beta_slow\": 1, \"mscale\": 0.707, "
                   "\"mscale_all_dim\": 0.707}, \"topk_method\": \"greedy\", \"n_group\": null,"
                   " \"topk_group\": null, \"num_experts_per_tok\": 2, \"norm_topk_prob\": false,"
                   " \"routed_scaling_factor\": 1.0, \"scoring_func\": \"softmax\""
                 : "\"rms_norm_eps\": 1e-6, \"rope_theta\": 10000.0, \"rope_scaling\": null,"
                   " \"topk_method\": \"group_limited_greedy\", \"n_group\": 4, \"topk_group\": 2,"
                   " \"num_experts_per_tok\": 2, \"norm_topk_prob\": false,"
                   " \"routed_scaling_factor\": 1.5");

    /* The reference model, from the same numbers (not from the parser). */
    memset(m, 0, sizeof *m);
    m->hidden = H;
    m->inter = I;
    m->layers = 2;
    m->heads = nh;
    m->kv_heads = nh;
    m->head_dim = dn + dr;
    m->vocab = V;
    m->eps = strcmp(variant, "v3") == 0 ? 0.01 : 1e-6;
    m->theta = half ? 1000.0 : 10000.0;
    m->mla = 1;
    m->interleave = !half;
    m->q_lora = Rq;
    m->kv_lora = R;
    m->nope = dn;
    m->rope_d = dr;
    m->vdim = dv;
    if (strcmp(variant, "v3") == 0) {
        m->yarn_factor = 4.0, m->yarn_orig = 64, m->beta_fast = 32, m->beta_slow = 1;
        m->mscale = 1.0, m->mscale_all_dim = 0.8;
    } else if (half) {
        m->yarn_factor = 8.0, m->yarn_orig = 32, m->beta_fast = 16, m->beta_slow = 2;
        m->mscale = 0.9, m->mscale_all_dim = 1.0, m->yarn_exact = 1;
    } else if (v2g) {
        m->yarn_factor = 40.0, m->yarn_orig = 64, m->beta_fast = 32, m->beta_slow = 1;
        m->mscale = 0.707, m->mscale_all_dim = 0.707;
    }
    m->moe = 0; /* ds_route runs the experts */
    m->experts = E;
    m->moe_inter = IM;
    m->shared_inter = IM * n_shared;
    m->first_dense = 1;
    m->ds_route = v3 ? 3 : v2g ? 1 : 2;
    m->n_group = half ? 1 : 4;
    m->topk_group = half ? 1 : 2;
    m->top_k = strcmp(variant, "v3") == 0 ? 3 : 2;
    m->norm_topk = v3;
    m->routed_scale = v3 ? 2.5 : v2g ? 1.0 : 1.5;
    m->get = fx_get;
    m->ctx = f;
}

static void check_deepseek(const char *variant)
{
    const char *tmp = qbt_scratch("fwd-ds");
    char *src = qbt_path(tmp, "src"), *w4 = qbt_path(tmp, "w4"), cfg[4096], args[8192];
    char *text = NULL, err[512];
    double *ref = malloc(sizeof(double) * N_TOK * 128), *mag = malloc(sizeof(double) * N_TOK * 128);
    fx *f = calloc(1, sizeof *f);
    fwd_ref_model m;
    qb_w4a16_model *wm = NULL;
    float *got;
    int64_t rows, cols;

    build_deepseek(variant, f, &m, cfg, sizeof cfg);
    fx_write(f, src, cfg);
    fwd_ref_run(&m, TOKENS, N_TOK, ref, mag);
    got = run_forward(src, tmp, &rows, &cols);
    ck_assert_int_eq(rows, N_TOK);
    ck_assert_int_eq(cols, 128);
    compare(variant, got, ref, mag, rows * cols, U_F32, 2);
    free(got);

    /* Its W4A16 conversion (g32): MLA linears, experts and shared experts
     * through the kernel, the router F16, the correction bias F32. */
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --group-size 32", src, w4);
    ck_assert_msg(qbt_run_line(args, &text) == 0, "%s\n%s", args, text);
    free(text);
    ck_assert_msg(qb_w4a16_open(w4, 0, &wm, err, sizeof err) == 0, "%s", err);
    m.get = w4_get;
    m.ctx = wm;
    fwd_ref_run(&m, TOKENS, N_TOK, ref, mag);
    got = run_forward(w4, tmp, &rows, &cols);
    compare("w4a16", got, ref, mag, rows * cols, U_F16, 2);
    free(got);
    qb_w4a16_close(wm);
    free(w4);
    fx_free(f);
    free(f);
    free(ref);
    free(mag);
    free(src);
}

START_TEST(deepseek_v3_mla_yarn_groups) { check_deepseek("v3"); }
END_TEST

START_TEST(deepseek_v3_rotate_half_rope_parameters) { check_deepseek("v3_half"); }
END_TEST

START_TEST(deepseek_v2_group_limited_greedy) { check_deepseek("v2"); }
END_TEST

START_TEST(deepseek_v2_greedy_yarn) { check_deepseek("v2_greedy"); }
END_TEST

/* Routing variants transformers' routers do not compute are refused by
 * name, exit 1, nothing written. */
START_TEST(deepseek_refused)
{
    static const struct {
        const char *variant, *from, *to, *expect;
    } cases[] = {
        {"v3", "\"scoring_func\": \"sigmoid\"", "\"scoring_func\": \"softmax\"",
         "scoring_func \"softmax\" is not supported"},
        {"v3", "\"topk_method\": \"noaux_tc\"", "\"topk_method\": \"greedy\"",
         "topk_method \"greedy\" is not supported"},
        {"v2", "\"topk_method\": \"group_limited_greedy\"", "\"topk_method\": \"noaux_tc\"",
         "topk_method \"noaux_tc\" is not supported"},
        {"v2", "\"norm_topk_prob\": false", "\"norm_topk_prob\": true",
         "norm_topk_prob true is not supported for deepseek_v2"},
        {"v2", "\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2}",
         "rope_scaling type \"dynamic\""},
        {"v3", "\"n_group\": 4", "\"n_group\": null", "deepseek_v3 needs \"n_group\""},
        {"v3", "\"n_group\": 4", "\"n_group\": 3", "n_group 3 / topk_group 2 do not fit 8 experts"},
    };
    const char *tmp = qbt_scratch("fwd-ds-err");
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *dir, cfg[4096], *patched, *at, args[8192], *text = NULL, *o;
        fx *f = calloc(1, sizeof *f);
        fwd_ref_model m;
        ck_assert_int_ge(asprintf(&dir, "%s/m%zu", tmp, i), 0);
        build_deepseek(cases[i].variant, f, &m, cfg, sizeof cfg);
        at = strstr(cfg, cases[i].from);
        ck_assert_msg(at != NULL, "%s", cases[i].from);
        ck_assert_int_ge(asprintf(&patched, "%.*s%s%s", (int)(at - cfg), cfg, cases[i].to,
                                  at + strlen(cases[i].from)), 0);
        fx_write(f, dir, patched);
        o = qbt_path(dir, "o.st");
        snprintf(args, sizeof args, "forward --model '%s' --tokens 1,2 --output '%s'", dir, o);
        ck_assert_int_eq(qbt_run_line(args, &text), 1);
        ck_assert_msg(strstr(text, cases[i].expect), "%s\n%s", cases[i].expect, text);
        ck_assert(!qbt_exists(o));
        free(text);
        free(o);
        free(patched);
        free(dir);
        fx_free(f);
        free(f);
    }
}
END_TEST


/* ---- gpt-oss -------------------------------------------------------------- */

/* A gpt-oss model, 2 layers, hidden 64, 4 heads of 16 over 2 kv heads,
 * vocab 128, 4 experts top 2 of intermediate 32, sliding_window 3 (below
 * the 9 tokens), swiglu_limit 0.6 so that both clamps bite, alpha and
 * rms_norm_eps left to GptOssConfig's defaults (1.702, 1e-5).
 *   "a": legacy rope_scaling yarn (factor 4, original 64, truncate false)
 *        with rope_theta 10000, explicit layer_types full then sliding;
 *   "b": transformers 5's rope_parameters (theta 5000, factor 8, original
 *        32), no layer_types (GptOssConfig: sliding first). */
static void build_gptoss(const char *variant, fx *f, fwd_ref_model *m, char *cfg, size_t cap)
{
    const int64_t H = 64, V = 128, nh = 4, nkv = 2, hd = 16, E = 4, I = 32;
    int b = strcmp(variant, "b") == 0;
    int64_t L;

    f->rng.s = 0x055f00d + (uint64_t)variant[0];
    fx_add(f, "model.embed_tokens.weight", V, H, 0, 0.5);
    for (L = 0; L < 2; L++) {
        fx_addf(f, L, "input_layernorm.weight", H, 0, 1, 0.1);
        fx_addf(f, L, "self_attn.q_proj.weight", nh * hd, H, 0, 0.15);
        fx_addf(f, L, "self_attn.q_proj.bias", nh * hd, 0, 0, 0.1);
        fx_addf(f, L, "self_attn.k_proj.weight", nkv * hd, H, 0, 0.15);
        fx_addf(f, L, "self_attn.k_proj.bias", nkv * hd, 0, 0, 0.1);
        fx_addf(f, L, "self_attn.v_proj.weight", nkv * hd, H, 0, 0.1);
        fx_addf(f, L, "self_attn.v_proj.bias", nkv * hd, 0, 0, 0.1);
        fx_addf(f, L, "self_attn.o_proj.weight", H, nh * hd, 0, 0.1);
        fx_addf(f, L, "self_attn.o_proj.bias", H, 0, 0, 0.1);
        fx_addf(f, L, "self_attn.sinks", nh, 0, 0.5, 1.0);
        fx_addf(f, L, "post_attention_layernorm.weight", H, 0, 1, 0.1);
        fx_addf(f, L, "mlp.router.weight", E, H, 0, 0.3);
        fx_addf(f, L, "mlp.router.bias", E, 0, 0, 0.3);
        fx_add3(f, L, "mlp.experts.gate_up_proj", E, H, 2 * I, 0.1);
        fx_addf(f, L, "mlp.experts.gate_up_proj_bias", E, 2 * I, 0, 0.1);
        fx_add3(f, L, "mlp.experts.down_proj", E, I, H, 0.1);
        fx_addf(f, L, "mlp.experts.down_proj_bias", E, H, 0, 0.1);
    }
    fx_add(f, "model.norm.weight", H, 0, 1, 0.1);
    fx_add(f, "lm_head.weight", V, H, 0, 0.1);
    snprintf(cfg, cap,
             "{\"architectures\": [\"GptOssForCausalLM\"], \"model_type\": \"gpt_oss\",\n"
             " \"hidden_size\": 64, \"intermediate_size\": 32, \"num_hidden_layers\": 2,\n"
             " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16,\n"
             " \"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"experts_per_token\": 2,\n"
             " \"vocab_size\": 128, \"tie_word_embeddings\": false, \"sliding_window\": 3,\n"
             " \"swiglu_limit\": 0.6, \"max_position_embeddings\": 256, \"attention_bias\": true,\n"
             " \"bos_token_id\": 0, \"eos_token_id\": 1, \"torch_dtype\": \"float32\",\n %s}\n",
             b ? "\"rope_parameters\": {\"rope_type\": \"yarn\", \"rope_theta\": 5000.0, "
                 "\"factor\": 8.0, \"beta_fast\": 32.0, \"beta_slow\": 1.0, \"truncate\": false, "
                 "\"original_max_position_embeddings\": 32}"
               : "\"rope_theta\": 10000.0, \"rope_scaling\": {\"rope_type\": \"yarn\", "
                 "\"factor\": 4.0, \"beta_fast\": 32.0, \"beta_slow\": 1.0, \"truncate\": false, "
                 "\"original_max_position_embeddings\": 64},\n"
                 " \"layer_types\": [\"full_attention\", \"sliding_attention\"]");

    /* The reference, from the same numbers (not from the parser). */
    memset(m, 0, sizeof *m);
    m->hidden = H;
    m->inter = I;
    m->layers = 2;
    m->heads = nh;
    m->kv_heads = nkv;
    m->head_dim = hd;
    m->vocab = V;
    m->eps = 1e-5;
    m->theta = b ? 5000.0 : 10000.0;
    m->gptoss = 1;
    m->window = 3;
    m->sliding_mask = b ? 1u : 2u;
    m->yarn_factor = b ? 8.0 : 4.0;
    m->yarn_orig = b ? 32 : 64;
    m->beta_fast = 32;
    m->beta_slow = 1;
    m->yarn_exact = 1;
    m->experts = E;
    m->top_k = 2;
    m->moe_inter = I;
    m->glu_alpha = 1.702;
    m->glu_limit = 0.6;
    m->get = fx_get;
    m->ctx = f;
}

/* The W4A16 directory's values under the source's fused names: the
 * per-expert parts decoded (w4_get) and interleaved back (gate_up[2c] =
 * gate[c], gate_up[2c + 1] = up[c]; down transposed), independently of the
 * sm86-w4a16 reader's own recombination. */
static int oss_w4_get(void *ctx, const char *name, int64_t n, double *out)
{
    qb_w4a16_model *m = ctx;
    const int64_t H = 64, E = 4, I = 32;
    long long L;
    int off = 0;
    char nm[200], file[64];
    int64_t e, c, k;
    double *a = malloc(sizeof(double) * (size_t)(H * I)), *b = malloc(sizeof(double) * (size_t)(H * I));
    int rc = 0;

    if (sscanf(name, "model.layers.%lld.%n", &L, &off) != 1)
        off = 0;
    if (!off || strncmp(name + off, "mlp.", 4) != 0) {
        rc = w4_get(ctx, name, n, out);
        goto done;
    }
    if (strcmp(name + off, "mlp.router.bias") == 0) {
        ck_assert_int_eq(qb_w4a16_layer_file(m, L, file, sizeof file), 0);
        rc = w4_f16(m, file, "mlp.router.bias", n, out);
        goto done;
    }
    if (strncmp(name + off, "mlp.experts.gate_up_proj", 24) == 0) {
        int bias = strstr(name, "_bias") != NULL;
        ck_assert_int_eq(n, E * 2 * I * (bias ? 1 : H));
        for (e = 0; e < E; e++) {
            snprintf(nm, sizeof nm, "model.layers.%lld.mlp.experts.%lld.gate_proj.%s", L,
                     (long long)e, bias ? "bias" : "weight");
            ck_assert_int_eq(w4_get(ctx, nm, bias ? I : I * H, a), 0);
            snprintf(nm, sizeof nm, "model.layers.%lld.mlp.experts.%lld.up_proj.%s", L,
                     (long long)e, bias ? "bias" : "weight");
            ck_assert_int_eq(w4_get(ctx, nm, bias ? I : I * H, b), 0);
            for (c = 0; c < I; c++)
                for (k = 0; k < (bias ? 1 : H); k++) {
                    int64_t at = bias ? e * 2 * I + 2 * c : (e * H + k) * 2 * I + 2 * c;
                    out[at] = a[c * (bias ? 1 : H) + k];
                    out[at + 1] = b[c * (bias ? 1 : H) + k];
                }
        }
        goto done;
    }
    if (strncmp(name + off, "mlp.experts.down_proj", 21) == 0) {
        int bias = strstr(name, "_bias") != NULL;
        ck_assert_int_eq(n, E * H * (bias ? 1 : I));
        for (e = 0; e < E; e++) {
            snprintf(nm, sizeof nm, "model.layers.%lld.mlp.experts.%lld.down_proj.%s", L,
                     (long long)e, bias ? "bias" : "weight");
            ck_assert_int_eq(w4_get(ctx, nm, bias ? H : H * I, a), 0);
            for (c = 0; c < H; c++)
                for (k = 0; k < (bias ? 1 : I); k++) {
                    if (bias)
                        out[e * H + c] = a[c];
                    else
                        out[(e * I + k) * H + c] = a[c * I + k]; /* [out, in] -> [in, out] */
                }
        }
        goto done;
    }
    rc = w4_get(ctx, name, n, out);
done:
    free(a);
    free(b);
    return rc;
}

static void check_gptoss(const char *variant)
{
    const char *tmp = qbt_scratch("fwd-oss");
    char *src = qbt_path(tmp, "src"), *w4 = qbt_path(tmp, "w4"), cfg[4096], args[8192];
    char *text = NULL, err[512];
    double *ref = malloc(sizeof(double) * N_TOK * 128), *mag = malloc(sizeof(double) * N_TOK * 128);
    fx *f = calloc(1, sizeof *f);
    fwd_ref_model m;
    qb_w4a16_model *wm = NULL;
    float *got;
    int64_t rows, cols;

    build_gptoss(variant, f, &m, cfg, sizeof cfg);
    fx_write(f, src, cfg);
    fwd_ref_run(&m, TOKENS, N_TOK, ref, mag);
    got = run_forward(src, tmp, &rows, &cols);
    ck_assert_int_eq(rows, N_TOK);
    ck_assert_int_eq(cols, 128);
    compare(variant, got, ref, mag, rows * cols, U_F32, 2);
    free(got);

    /* Its W4A16 conversion (g32): attention through the kernel, the
     * experts served back fused by the reader, router and sinks F16. */
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --group-size 32", src, w4);
    ck_assert_msg(qbt_run_line(args, &text) == 0, "%s\n%s", args, text);
    free(text);
    ck_assert_msg(qb_w4a16_open(w4, 0, &wm, err, sizeof err) == 0, "%s", err);
    m.get = oss_w4_get;
    m.ctx = wm;
    fwd_ref_run(&m, TOKENS, N_TOK, ref, mag);
    got = run_forward(w4, tmp, &rows, &cols);
    compare("gpt_oss w4a16", got, ref, mag, rows * cols, U_F16, 2);
    free(got);
    qb_w4a16_close(wm);
    free(w4);
    fx_free(f);
    free(f);
    free(ref);
    free(mag);
    free(src);
}

START_TEST(gpt_oss_sinks_yarn_layer_types) { check_gptoss("a"); }
END_TEST

START_TEST(gpt_oss_rope_parameters_default_layers) { check_gptoss("b"); }
END_TEST

/* What the pass cannot run, or a broken model, is refused by name, exit
 * 1, nothing written. */
START_TEST(gpt_oss_refused)
{
    static const struct {
        const char *from, *to, *expect;
    } cases[] = {
        {"\"rope_type\": \"yarn\"", "\"rope_type\": \"dynamic\"", "rope_scaling type \"dynamic\""},
        {"\"full_attention\", \"sliding", "\"chunked_attention\", \"sliding",
         "layer_types[0] is not sliding_attention or full_attention"},
        {"\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 5",
         "num_experts_per_tok 5 > 4 experts"},
        {"\"swiglu_limit\": 0.6", "\"swiglu_limit\": -1", "\"swiglu_limit\" is not a positive"},
        /* the sinks of layer 1 renamed away */
        {"", "", "tensor model.layers.1.self_attn.sinks is missing"},
        /* the fused experts of layer 0 given [E * H, 2I] instead of [E, H, 2I] */
        {"", "", "model.layers.0.mlp.experts.gate_up_proj is not [4, 64, 64]"},
    };
    const char *tmp = qbt_scratch("fwd-oss-err");
    size_t i, j;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *dir, cfg[4096], *patched, *at, args[8192], *text = NULL, *o;
        fx *f = calloc(1, sizeof *f);
        fwd_ref_model m;
        ck_assert_int_ge(asprintf(&dir, "%s/m%zu", tmp, i), 0);
        build_gptoss("a", f, &m, cfg, sizeof cfg);
        if (cases[i].from[0]) {
            at = strstr(cfg, cases[i].from);
            ck_assert_msg(at != NULL, "%s", cases[i].from);
            ck_assert_int_ge(asprintf(&patched, "%.*s%s%s", (int)(at - cfg), cfg, cases[i].to,
                                      at + strlen(cases[i].from)), 0);
        } else {
            patched = strdup(cfg);
        }
        for (j = 0; j < f->n; j++) {
            if (strstr(cases[i].expect, "sinks") &&
                strcmp(f->name[j], "model.layers.1.self_attn.sinks") == 0)
                strcat(f->name[j], "_x");
            if (strstr(cases[i].expect, "gate_up_proj") &&
                strcmp(f->name[j], "model.layers.0.mlp.experts.gate_up_proj") == 0) {
                f->nd[j] = 2;
                f->dims[j][0] *= f->dims[j][1];
                f->dims[j][1] = f->dims[j][2];
            }
        }
        fx_write(f, dir, patched);
        o = qbt_path(dir, "o.st");
        snprintf(args, sizeof args, "forward --model '%s' --tokens 1,2 --output '%s'", dir, o);
        ck_assert_int_eq(qbt_run_line(args, &text), 1);
        ck_assert_msg(strstr(text, cases[i].expect), "%s\n%s", cases[i].expect, text);
        ck_assert(!qbt_exists(o));
        free(text);
        free(o);
        free(patched);
        free(dir);
        fx_free(f);
        free(f);
    }
}
END_TEST

/* The reference of a qb-gen-hf-dense DeepSeek checkpoint, from the keys
 * of the config.json it wrote (read here with cJSON, not by the host). */
static void ds_ref_from_config(fwd_ref_model *m, const char *dir)
{
    char *p = qbt_path(dir, "config.json"), *text = qbt_read_file(p, NULL);
    cJSON *c = cJSON_Parse(text), *rs;
    int v3;
#define NUM(k) cJSON_GetObjectItem(c, k)->valuedouble
    ck_assert_ptr_nonnull(c);
    v3 = strcmp(cJSON_GetObjectItem(c, "model_type")->valuestring, "deepseek_v3") == 0;
    memset(m, 0, sizeof *m);
    m->hidden = (int64_t)NUM("hidden_size");
    m->inter = (int64_t)NUM("intermediate_size");
    m->layers = (int64_t)NUM("num_hidden_layers");
    m->heads = m->kv_heads = (int64_t)NUM("num_attention_heads");
    m->vocab = (int64_t)NUM("vocab_size");
    m->eps = NUM("rms_norm_eps");
    m->theta = NUM("rope_theta");
    m->mla = 1;
    m->interleave = 1; /* V2 always; V3's rope_interleave defaults to true */
    m->q_lora = cJSON_IsNull(cJSON_GetObjectItem(c, "q_lora_rank")) ? 0 : (int64_t)NUM("q_lora_rank");
    m->kv_lora = (int64_t)NUM("kv_lora_rank");
    m->nope = (int64_t)NUM("qk_nope_head_dim");
    m->rope_d = (int64_t)NUM("qk_rope_head_dim");
    m->vdim = (int64_t)NUM("v_head_dim");
    m->head_dim = m->nope + m->rope_d;
    rs = cJSON_GetObjectItem(c, "rope_scaling");
    ck_assert_str_eq(cJSON_GetObjectItem(rs, "type")->valuestring, "yarn");
    m->yarn_factor = cJSON_GetObjectItem(rs, "factor")->valuedouble;
    m->yarn_orig = cJSON_GetObjectItem(rs, "original_max_position_embeddings")->valuedouble;
    m->beta_fast = cJSON_GetObjectItem(rs, "beta_fast")->valuedouble;
    m->beta_slow = cJSON_GetObjectItem(rs, "beta_slow")->valuedouble;
    m->mscale = cJSON_GetObjectItem(rs, "mscale")->valuedouble;
    m->mscale_all_dim = cJSON_GetObjectItem(rs, "mscale_all_dim")->valuedouble;
    m->experts = (int64_t)NUM("n_routed_experts");
    m->moe_inter = (int64_t)NUM("moe_intermediate_size");
    m->shared_inter = m->moe_inter * (int64_t)NUM("n_shared_experts");
    m->first_dense = (int64_t)NUM("first_k_dense_replace");
    m->top_k = (int64_t)NUM("num_experts_per_tok");
    m->n_group = (int64_t)NUM("n_group");
    m->topk_group = (int64_t)NUM("topk_group");
    ck_assert_str_eq(cJSON_GetObjectItem(c, "topk_method")->valuestring,
                     v3 ? "noaux_tc" : "greedy");
    m->ds_route = v3 ? 3 : 1;
    m->norm_topk = cJSON_IsTrue(cJSON_GetObjectItem(c, "norm_topk_prob"));
    m->routed_scale = NUM("routed_scaling_factor");
#undef NUM
    cJSON_Delete(c);
    free(text);
    free(p);
}

/* qb-gen-hf-dense's DeepSeek checkpoints (h-ds: bf16, DeepSeek's own
 * config.json with yarn factor 40, an MTP layer after the decoder that
 * the forward pass must leave alone) through forward, and verify's model
 * check between the source and its W4A16 conversion runs, not skipped. */
static void check_generated_deepseek(const char *arch)
{
    qbt_hfd_spec s = {.arch = arch, .dtype = "bf16", .layers = 2, .hidden = 64,
                      .intermediate = 96, .vocab = 128, .heads = 4, .shards = 1, .seed = 23,
                      .mtp_layers = 1};
    const char *tmp = qbt_scratch("fwd-dsgen");
    char *src = qbt_path(tmp, "src"), *w4 = qbt_path(tmp, "w4");
    char args[8192], *text = NULL;
    double *ref = malloc(sizeof(double) * N_TOK * 128), *mag = malloc(sizeof(double) * N_TOK * 128);
    src_ctx sc;
    fwd_ref_model m;
    float *got;
    int64_t rows, cols;
    cJSON *j, *mc;

    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, src), 0);
    ck_assert_int_eq(qbt_hfd_tensors(&s, &sc.t, &sc.n), 0);
    sc.s = &s;
    ds_ref_from_config(&m, src);
    m.get = src_get;
    m.ctx = &sc;
    fwd_ref_run(&m, TOKENS, N_TOK, ref, mag);
    got = run_forward(src, tmp, &rows, &cols);
    ck_assert_int_eq(cols, 128);
    compare(arch, got, ref, mag, rows * cols, U_F32, 2);
    free(got);

    /* The reader drops the MTP layer by default (mtp=drop), so the W4A16
     * directory has none either; forward never reads it on both sides. */
    snprintf(args, sizeof args, "convert --source '%s' --output '%s'", src, w4);
    ck_assert_msg(qbt_run_line(args, &text) == 0, "%s\n%s", args, text);
    free(text);
    {
        qbt_result r;
        const char *argv[] = {"verify", "--source", src, "--converted", w4, "--json", NULL};
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "verify -> %d\n%s", r.status, r.err);
        j = cJSON_Parse(r.out);
        qbt_result_free(&r);
    }
    ck_assert_ptr_nonnull(j);
    mc = cJSON_GetObjectItem(j, "model_check");
    ck_assert_ptr_nonnull(mc);
    ck_assert_msg(!cJSON_GetObjectItem(mc, "skipped"), "%s",
                  cJSON_GetObjectItem(mc, "skipped") ? cJSON_GetObjectItem(mc, "skipped")->valuestring
                                                     : "");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(mc, "token_ids")), 32);
    fprintf(stderr, "%s model check: kl_mean %.3g, top1 %.3f, cosine min %.4f\n", arch,
            cJSON_GetObjectItem(mc, "kl_mean")->valuedouble,
            cJSON_GetObjectItem(mc, "top1_agreement")->valuedouble,
            cJSON_GetObjectItem(mc, "logits_cosine_min")->valuedouble);
    /* A 4-bit conversion moves the logits a little, never to noise. */
    ck_assert(cJSON_GetObjectItem(mc, "kl_max")->valuedouble > 0);
    ck_assert(cJSON_GetObjectItem(mc, "logits_cosine_min")->valuedouble > 0.9);
    cJSON_Delete(j);
    free(sc.t);
    free(ref);
    free(mag);
    free(src);
    free(w4);
}

START_TEST(deepseek_v3_generated_mtp_model_check) { check_generated_deepseek("deepseek_v3"); }
END_TEST

START_TEST(deepseek_v2_generated_model_check) { check_generated_deepseek("deepseek_v2"); }
END_TEST

START_TEST(phi3_fused_partial_rotary) { check_fixture("phi3"); }
END_TEST

START_TEST(gemma3_local_global_rope) { check_fixture("gemma3_text"); }
END_TEST

START_TEST(gemma_tied_gelu) { check_fixture("gemma"); }
END_TEST

START_TEST(mixtral_moe) { check_fixture("mixtral"); }
END_TEST

START_TEST(qwen2_moe_shared_expert) { check_fixture("qwen2_moe"); }
END_TEST

START_TEST(qwen3_moe_norm_topk) { check_fixture("qwen3_moe"); }
END_TEST

/* The architecture it cannot run is named, exit 1; usage errors exit 2. */
START_TEST(errors)
{
    qbt_hfd_spec s = {.arch = "llama", .dtype = "bf16", .layers = 1, .hidden = 64,
                      .intermediate = 96, .vocab = 64, .tied = 1, .shards = 1, .seed = 1};
    const char *tmp = qbt_scratch("fwd-err");
    char *src = qbt_path(tmp, "g"), *ll = qbt_path(tmp, "l"), args[8192], *text = NULL;
    char *cfg, *body, *at, *patched;
    qbt_hfd_spec l = s;
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, src), 0);
    /* An architecture the pass does not run (the readers accept any
     * model_type): named in the error, exit 1, nothing written. */
    cfg = qbt_path(src, "config.json");
    body = qbt_read_file(cfg, NULL);
    at = strstr(body, "\"model_type\": \"llama\"");
    ck_assert_ptr_nonnull(at);
    ck_assert_int_ge(asprintf(&patched, "%.*s\"model_type\": \"falcon\"%s", (int)(at - body),
                              body, at + strlen("\"model_type\": \"llama\"")), 0);
    qbt_write_file(cfg, patched);
    free(patched);
    free(body);
    free(cfg);
    snprintf(args, sizeof args, "forward --model '%s' --tokens 1,2 --output '%s/o.st'", src, tmp);
    ck_assert_int_eq(qbt_run_line(args, &text), 1);
    ck_assert_msg(strstr(text, "architecture 'falcon'"), "%s", text);
    {
        char *o = qbt_path(tmp, "o.st");
        ck_assert(!qbt_exists(o));
        free(o);
    }
    free(text);

    l.arch = "llama";
    ck_assert_int_eq(qbt_hfd_spec_check(&l), 0);
    ck_assert_int_eq(qbt_hfd_write(&l, ll), 0);
    /* An untied config without lm_head.weight: an error, not the embedding. */
    cfg = qbt_path(ll, "config.json");
    body = qbt_read_file(cfg, NULL);
    at = strstr(body, "\"tie_word_embeddings\": true");
    ck_assert_ptr_nonnull(at);
    ck_assert_int_ge(asprintf(&patched, "%.*s\"tie_word_embeddings\": false%s",
                              (int)(at - body), body,
                              at + strlen("\"tie_word_embeddings\": true")), 0);
    qbt_write_file(cfg, patched);
    snprintf(args, sizeof args, "forward --model '%s' --tokens 1,2 --output '%s/o.st'", ll, tmp);
    ck_assert_int_eq(qbt_run_line(args, &text), 1);
    ck_assert_msg(strstr(text, "lm_head.weight is missing"), "%s", text);
    free(text);
    qbt_write_file(cfg, body);
    free(patched);
    free(body);
    free(cfg);
    snprintf(args, sizeof args, "forward --model '%s' --tokens 1,64 --output '%s/o.st'", ll, tmp);
    ck_assert_int_eq(qbt_run_line(args, &text), 1);
    ck_assert_msg(strstr(text, "token id 64 outside"), "%s", text);
    free(text);
    snprintf(args, sizeof args, "forward --model '%s' --tokens 1,x --output '%s/o.st'", ll, tmp);
    ck_assert_int_eq(qbt_run_line(args, &text), 2);
    free(text);
    snprintf(args, sizeof args, "forward --model '%s' --text hi --output '%s/o.st'", ll, tmp);
    /* the fixture has no tokenizer.json: an error naming what is missing */
    ck_assert_int_eq(qbt_run_line(args, &text), 1);
    ck_assert_msg(strstr(text, "tokenizer.json does not exist"), "%s", text);
    free(text);
    snprintf(args, sizeof args, "forward --model '%s' --output '%s/o.st'", ll, tmp);
    ck_assert_int_eq(qbt_run_line(args, &text), 2);
    free(text);
    free(src);
    free(ll);
}
END_TEST

/* KL(softmax(a) || softmax(b)), straight from the definition. */
static double ref_kl(const double *a, const double *b, int64_t n)
{
    double za = 0, zb = 0, kl = 0, ma = a[0], mb = b[0];
    int64_t i;
    for (i = 0; i < n; i++) {
        ma = a[i] > ma ? a[i] : ma;
        mb = b[i] > mb ? b[i] : mb;
    }
    for (i = 0; i < n; i++) {
        za += exp(a[i] - ma);
        zb += exp(b[i] - mb);
    }
    for (i = 0; i < n; i++) {
        double p = exp(a[i] - ma) / za, q = exp(b[i] - mb) / zb;
        kl += p * log(p / q);
    }
    return kl;
}

static int64_t ref_argmax(const double *a, int64_t n)
{
    int64_t i, b = 0;
    for (i = 1; i < n; i++)
        if (a[i] > a[b])
            b = i;
    return b;
}

/* verify's model check: the metrics recomputed here from the two float64
 * references on the token ids verify reports. */
START_TEST(verify_model_check)
{
    qbt_hfd_spec s = {.arch = "llama", .dtype = "bf16", .layers = 2, .hidden = 64,
                      .intermediate = 96, .vocab = 128, .heads = 4, .kv_heads = 2,
                      .head_dim = 16, .tied = 0, .shards = 1, .seed = 11};
    const char *tmp = qbt_scratch("fwd-mc");
    char *src = qbt_path(tmp, "src"), *w4 = qbt_path(tmp, "w4"), args[8192], *text = NULL;
    char err[512];
    src_ctx sc;
    fwd_ref_model m;
    qb_w4a16_model *wm = NULL;
    cJSON *j, *mc, *ids;
    int64_t tok[64], T, t, agree = 0;
    double *ra, *rb, kl_max = 0, kl_mean = 0, top1;

    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, src), 0);
    ck_assert_int_eq(qbt_hfd_tensors(&s, &sc.t, &sc.n), 0);
    sc.s = &s;
    snprintf(args, sizeof args, "convert --source '%s' --output '%s'", src, w4);
    ck_assert_msg(qbt_run_line(args, &text) == 0, "%s\n%s", args, text);
    free(text);

    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --json", src, w4);
    {
        qbt_result r;
        const char *argv[] = {"verify", "--source", src, "--converted", w4, "--json", NULL};
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "%s -> %d\n%s", args, r.status, r.err);
        j = cJSON_Parse(r.out);
        qbt_result_free(&r);
    }
    ck_assert_ptr_nonnull(j);
    mc = cJSON_GetObjectItem(j, "model_check");
    ck_assert_ptr_nonnull(mc);
    ids = cJSON_GetObjectItem(mc, "token_ids");
    T = cJSON_GetArraySize(ids);
    ck_assert_int_eq(T, 32);
    for (t = 0; t < T; t++) {
        tok[t] = (int64_t)cJSON_GetArrayItem(ids, t)->valuedouble;
        ck_assert(tok[t] >= 0 && tok[t] < s.vocab);
    }
    ck_assert_int_eq(tok[0], 1); /* llama's bos_token_id first */

    ra = malloc(sizeof(double) * (size_t)(T * s.vocab));
    rb = malloc(sizeof(double) * (size_t)(T * s.vocab));
    ref_init(&m, &s, src);
    m.get = src_get;
    m.ctx = &sc;
    fwd_ref_run(&m, tok, T, ra, NULL);
    ck_assert_msg(qb_w4a16_open(w4, 0, &wm, err, sizeof err) == 0, "%s", err);
    m.get = w4_get;
    m.ctx = wm;
    fwd_ref_run(&m, tok, T, rb, NULL);
    for (t = 0; t < T; t++) {
        double k = ref_kl(ra + t * s.vocab, rb + t * s.vocab, s.vocab);
        kl_mean += k / (double)T;
        kl_max = k > kl_max ? k : kl_max;
        agree += ref_argmax(ra + t * s.vocab, s.vocab) == ref_argmax(rb + t * s.vocab, s.vocab);
    }
    top1 = (double)agree / (double)T;
    fprintf(stderr, "model check: kl_mean %.4g (ref %.4g), kl_max %.4g (ref %.4g), top1 %.3f "
            "(ref %.3f)\n", cJSON_GetObjectItem(mc, "kl_mean")->valuedouble, kl_mean,
            cJSON_GetObjectItem(mc, "kl_max")->valuedouble, kl_max,
            cJSON_GetObjectItem(mc, "top1_agreement")->valuedouble, top1);
    /* The converted side runs in fp16 (rel. 2^-11 per linear): KL agrees
     * to a few percent; a near tie may flip one position's argmax. */
    ck_assert(kl_max > 0);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(mc, "kl_mean")->valuedouble, kl_mean,
                            0.05 * kl_mean);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(mc, "kl_max")->valuedouble, kl_max, 0.05 * kl_max);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(mc, "top1_agreement")->valuedouble, top1,
                            1.0 / (double)T + 1e-9);
    ck_assert(cJSON_GetObjectItem(mc, "logits_cosine_min")->valuedouble > 0.9);
    ck_assert(cJSON_GetObjectItem(mc, "kl_p99")->valuedouble <= kl_max * 1.05);
    cJSON_Delete(j);

    /* A limit below what the conversion gives fails the verification,
     * naming the model check; --no-model-check leaves no "model_check". */
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --max-kl %g", src, w4,
             kl_max / 10);
    ck_assert_int_ne(qbt_run_line(args, &text), 0);
    ck_assert_msg(strstr(text, "model check: KL max"), "%s", text);
    free(text);
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --max-kl %g --min-top1 0",
             src, w4, kl_max * 10);
    ck_assert_int_eq(qbt_run_line(args, &text), 0);
    free(text);
    {
        qbt_result r;
        const char *argv[] = {"verify", "--source", src, "--converted", w4, "--json",
                              "--no-model-check", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 0);
        j = cJSON_Parse(r.out);
        ck_assert_ptr_nonnull(j);
        ck_assert_ptr_null(cJSON_GetObjectItem(j, "model_check"));
        cJSON_Delete(j);
        qbt_result_free(&r);
    }
    {
        qbt_result r;
        const char *argv[] = {"verify", "--source", src, "--converted", w4, "--json",
                              "--tokens", "5,6,7", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 0);
        j = cJSON_Parse(r.out);
        ids = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "model_check"), "token_ids");
        ck_assert_int_eq(cJSON_GetArraySize(ids), 3);
        ck_assert_int_eq((int)cJSON_GetArrayItem(ids, 2)->valuedouble, 7);
        cJSON_Delete(j);
        qbt_result_free(&r);
    }
    /* The HTML report plots the check per position. */
    {
        char *rep = qbt_path(tmp, "r.html"), *html;
        snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --report '%s'", src, w4,
                 rep);
        ck_assert_int_eq(qbt_run_line(args, &text), 0);
        free(text);
        html = qbt_read_file(rep, NULL);
        ck_assert_ptr_nonnull(html);
        ck_assert(strstr(html, "<h2>Model check</h2>"));
        ck_assert_int_eq(qbt_count_lines(html, "<title>position "), 2 * 32);
        free(html);
        free(rep);
    }
    /* convert --verify prints the check too. */
    snprintf(args, sizeof args, "convert --source '%s' --output '%s/w4b' --verify", src, tmp);
    ck_assert_int_eq(qbt_run_line(args, &text), 0);
    ck_assert_msg(strstr(text, "model check (32 tokens): KL mean"), "%s", text);
    free(text);
    qb_w4a16_close(wm);
    free(ra);
    free(rb);
    free(sc.t);
    free(src);
    free(w4);
}
END_TEST

/* `--device`: a value other than cpu|cuda is a usage error (2); cuda where
 * it cannot run (this build, this machine) is exit 1 naming the reason
 * before any model is read, and on a source that is not W4A16 (with a
 * device) exit 1 naming the model. */
START_TEST(device_option)
{
    qbt_hfd_spec s = {.arch = "llama", .dtype = "bf16", .layers = 1, .hidden = 64,
                      .intermediate = 96, .vocab = 64, .tied = 1, .shards = 1, .seed = 1};
    const char *tmp = qbt_scratch("fwd-dev");
    char *src = qbt_path(tmp, "m"), args[8192], *text = NULL;
    int rc;
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, src), 0);
    snprintf(args, sizeof args, "forward --model '%s' --tokens 1,2 --output '%s/o.st' --device gpu",
             src, tmp);
    ck_assert_int_eq(qbt_run_line(args, &text), 2);
    ck_assert_msg(strstr(text, "--device gpu: expected cpu or cuda"), "%s", text);
    free(text);
    snprintf(args, sizeof args, "forward --model '%s' --tokens 1,2 --output '%s/o.st' --device cpu",
             src, tmp);
    ck_assert_int_eq(qbt_run_line(args, &text), 0);
    free(text);
    snprintf(args, sizeof args, "forward --model '%s' --tokens 1,2 --output '%s/o2.st' --device "
             "cuda", src, tmp);
    rc = qbt_run_line(args, &text);
    ck_assert_msg(rc == 1, "%d: %s", rc, text);
    ck_assert_msg(strstr(text, "--device cuda: this build has no CUDA") ||
                  strstr(text, "--device cuda: no CUDA device") ||
                  strstr(text, "is not a W4A16 directory (read by hf-dense)"), "%s", text);
    {
        char *o = qbt_path(tmp, "o2.st");
        ck_assert(!qbt_exists(o));
        free(o);
    }
    free(text);
    free(src);
}
END_TEST

#ifdef QBT_FWD_CUDA
/* Whether the program can run `--device cuda` here: it checks the device
 * before it reads the model, so a model that does not exist tells the two
 * apart. NULL when it can, else the program's reason (static). Runs
 * before the suite, outside any check test: plain popen, no ck_ calls. */
static const char *cuda_unavailable(void)
{
    static char why[512];
    char cmd[4096], line[512];
    const char *bin = getenv("QB_TEST_BIN");
    FILE *p;
    int found = 0;
    if (!bin || strchr(bin, '\''))
        return "QB_TEST_BIN is not set (or holds a quote)";
    snprintf(cmd, sizeof cmd, "'%s' forward --model /nonexistent-qb-probe/m --tokens 1 "
             "--output /nonexistent-qb-probe/o.st --device cuda 2>&1", bin);
    p = popen(cmd, "r");
    if (!p)
        return "cannot run QB_TEST_BIN";
    while (fgets(line, sizeof line, p)) {
        const char *at = strstr(line, "--device cuda: ");
        if (!found && at && (strstr(at, "no CUDA device") || strstr(at, "this build has no CUDA"))) {
            snprintf(why, sizeof why, "%.*s", (int)strcspn(at, "\n"), at);
            found = 1;
        }
    }
    pclose(p);
    return found ? why : NULL;
}
#endif

Suite *qbt_suite(void)
{
    Suite *s;
    TCase *tc;
#ifdef QBT_FWD_CUDA
    const char *why = cuda_unavailable();
    if (why) {
        printf("skipped: no CUDA device (%s)\n", why);
        return NULL;
    }
#endif
    s = suite_create(CUDA_MODE ? "forward_cuda" : "forward");
    tc = tcase_create("forward");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, llama_bf16_untied);
    tcase_add_test(tc, mistral_f16_window);
    tcase_add_test(tc, qwen2_biases_tied);
    tcase_add_test(tc, qwen3_qk_norm_head_dim);
    tcase_add_test(tc, gemma2_sandwich_softcap);
    tcase_add_test(tc, phi3_fused_partial_rotary);
    tcase_add_test(tc, gemma3_local_global_rope);
    tcase_add_test(tc, gemma_tied_gelu);
    tcase_add_test(tc, mixtral_moe);
    tcase_add_test(tc, qwen2_moe_shared_expert);
    tcase_add_test(tc, qwen3_moe_norm_topk);
    if (!CUDA_MODE) {
        /* DeepSeek's fixtures run their own source and W4A16 passes on the
         * CPU; test_forward_cuda does not cover them yet. */
        tcase_add_test(tc, deepseek_v3_mla_yarn_groups);
        tcase_add_test(tc, deepseek_v3_rotate_half_rope_parameters);
        tcase_add_test(tc, deepseek_v2_group_limited_greedy);
        tcase_add_test(tc, deepseek_v2_greedy_yarn);
        tcase_add_test(tc, deepseek_refused);
        tcase_add_test(tc, deepseek_v3_generated_mtp_model_check);
        tcase_add_test(tc, deepseek_v2_generated_model_check);
        tcase_add_test(tc, gpt_oss_sinks_yarn_layer_types);
        tcase_add_test(tc, gpt_oss_rope_parameters_default_layers);
        tcase_add_test(tc, gpt_oss_refused);
        tcase_add_test(tc, errors);
        tcase_add_test(tc, device_option);
        tcase_add_test(tc, verify_model_check);
    }
    suite_add_tcase(s, tc);
    return s;
}
