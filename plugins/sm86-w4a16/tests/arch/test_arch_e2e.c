/*
 * sm86-w4a16 architectures and MoE end to end through the built program
 * ($QB_TEST_BIN with the in-tree config and plugins).
 *
 * Ground truth is independent of the code under test: the GGUF fixtures
 * (tests/gen/gen_gguf.c) are built from chosen Q4_0 codes and fp16 scales,
 * so every Hugging Face tensor's values, codes and scales are known. For
 * gemma, gemma3, phi3 (fused in the GGUF), mixtral, qwen2moe and qwen3moe:
 *   - `convert --writer sm86-w4a16 --group-size 32` succeeds;
 *   - every expected tensor is in the expected file and nothing else is;
 *   - every linear is `exact: true`; its nibbles equal the Q4_0 codes, its
 *     scales the Q4_0 scales, and q * scale the known values bit for bit;
 *   - routers, norms, embeddings are F16 equal to the values rounded to f16;
 *   - the reader side: the output converted to hf-dense f32 holds the same
 *     values bit for bit (read_rows), and converted again to sm86-w4a16
 *     gives byte-identical layer files, all exact (read_grid).
 * MoE errors (missing / extra expert, MoE tensor in a dense layer, missing
 * expert count) use small Hugging Face checkpoints written here, as does
 * phi3 with HF's fused qkv_proj / gate_up_proj (split exactly, fused back
 * by hf-dense bit for bit; fused plus split, or wrong rows, refused). GPTQ 2-
 * and 3-bit symmetric checkpoints (tests/gen/gen_gptq.c) convert exactly.
 * Conversions of grid sources run with quant_rule=absmax: absmax/7 does
 * not reproduce a group whose largest |q| is not 7 (Q4_0 groups holding
 * -8, every 2/3-bit group), so `exact: true` proves the repack path.
 */
#define _GNU_SOURCE
#include <cJSON.h>
#include <check.h>

#include "qbt_check_main.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <quantbridge/qb_half.h>

#include "gen_gguf.h"
#include "gen_gptq.h"
#include "qbt_st_writer.h"
#include "qbt_args.h"
#include "qbt_fs.h"
#include "qbt_run.h"

static char g_tmp[512];

static void setup(void)
{
    const char *base = getenv("QB_TEST_TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%s/w4w_arch_XXXXXX", base ? base : "/tmp");
    if (base)
        mkdir(base, 0755);
    ck_assert_ptr_nonnull(mkdtemp(g_tmp));
}

static void teardown(void)
{
    qbt_rmtree(g_tmp);
}

/* Runs the tool; returns its exit status, stderr into err (if non-NULL). */
static int run_tool(const char *args, char *err, size_t err_len)
{
    char **av = qbt_args_split(args);
    qbt_result r;
    int st;
    qbt_run(&r, (const char *const *)av);
    qbt_args_free(av);
    if (err)
        snprintf(err, err_len, "%s", r.err);
    st = r.status;
    qbt_result_free(&r);
    return st;
}

/* ---- files ---------------------------------------------------------------- */

typedef struct blob {
    uint8_t *data;
    size_t len;
} blob;

static int load(const char *dir, const char *name, blob *b)
{
    char path[1024];
    FILE *fp;
    long n;
    memset(b, 0, sizeof *b);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    fp = fopen(path, "rb");
    if (!fp)
        return -1;
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    b->data = malloc((size_t)n + 1);
    b->len = fread(b->data, 1, (size_t)n, fp);
    b->data[b->len] = 0;
    fclose(fp);
    return b->len == (size_t)n ? 0 : -1;
}

/* A safetensors file: its header JSON and data section. */
typedef struct stf {
    blob b;
    cJSON *hdr;
    const uint8_t *data;
} stf;

static int st_open(const char *dir, const char *name, stf *f)
{
    uint64_t hl;
    memset(f, 0, sizeof *f);
    if (load(dir, name, &f->b) != 0 || f->b.len < 8)
        return -1;
    memcpy(&hl, f->b.data, 8);
    if (hl > f->b.len - 8)
        return -1;
    f->hdr = cJSON_ParseWithLength((const char *)f->b.data + 8, (size_t)hl);
    f->data = f->b.data + 8 + hl;
    return f->hdr ? 0 : -1;
}

static void st_close(stf *f)
{
    cJSON_Delete(f->hdr);
    free(f->b.data);
    memset(f, 0, sizeof *f);
}

static int st_count(const stf *f)
{
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, f->hdr) n += strcmp(e->string, "__metadata__") != 0;
    return n;
}

/* Tensor `name`: dtype, dims, data. Fails the test when absent. */
static const uint8_t *st_get(const stf *f, const char *name, const char *dtype, int n_dims,
                             int64_t d0, int64_t d1)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(f->hdr, name), *sh, *off;
    ck_assert_msg(t != NULL, "tensor %s missing", name);
    ck_assert_str_eq(cJSON_GetObjectItem(t, "dtype")->valuestring, dtype);
    sh = cJSON_GetObjectItem(t, "shape");
    off = cJSON_GetObjectItem(t, "data_offsets");
    ck_assert_int_eq(cJSON_GetArraySize(sh), n_dims);
    ck_assert_int_eq((int64_t)cJSON_GetArrayItem(sh, 0)->valuedouble, d0);
    if (n_dims == 2)
        ck_assert_int_eq((int64_t)cJSON_GetArrayItem(sh, 1)->valuedouble, d1);
    return f->data + (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
}

static uint16_t rd16(const uint8_t *p, size_t i)
{
    uint16_t v;
    memcpy(&v, p + 2 * i, 2);
    return v;
}

/* ---- expectations ---------------------------------------------------------- */

static int is_router(const char *name)
{
    static const char *const sfx[] = {"block_sparse_moe.gate.weight", ".mlp.gate.weight",
                                      "mlp.shared_expert_gate.weight", NULL};
    size_t i, n = strlen(name);
    for (i = 0; sfx[i]; i++)
        if (n >= strlen(sfx[i]) && strcmp(name + n - strlen(sfx[i]), sfx[i]) == 0)
            return 1;
    return 0;
}

/* Output file and tensor name of a canonical tensor (w4a16-format.md). */
static void out_place(const char *src, char *file, char *name, int *linear)
{
    int l, off = 0;
    *linear = 0;
    if (strcmp(src, "model.embed_tokens.weight") == 0) {
        strcpy(file, "embed.safetensors");
        strcpy(name, "embed_tokens.weight");
    } else if (strcmp(src, "model.norm.weight") == 0) {
        strcpy(file, "norm.safetensors");
        strcpy(name, "norm.weight");
    } else if (strcmp(src, "lm_head.weight") == 0) {
        strcpy(file, "lm_head.safetensors");
        strcpy(name, "lm_head.weight");
    } else {
        ck_assert_int_eq(sscanf(src, "model.layers.%d.%n", &l, &off), 1);
        sprintf(file, "layer_%02d.safetensors", l);
        strcpy(name, src + off);
    }
}

typedef struct arch_case {
    const char *gguf_arch, *model_type;
    int n_expert, n_ff, n_ff_exp, n_ff_shexp, head_dim, tied, sliding_window;
    int n_layer_tensors; /* tensors expected in each layer file */
} arch_case;

/* Tensors per layer file: linears count 2 (packed + scales). */
static const arch_case cases[] = {
    /* 7 linears, 2 norms */
    {"gemma", "gemma", 0, 256, 0, 0, 64, 1, 0, 7 * 2 + 2},
    /* 7 linears, q/k norms, 4 norms */
    {"gemma3", "gemma3_text", 0, 256, 0, 0, 64, 0, 512, 7 * 2 + 6},
    /* fused qkv / gate_up in the GGUF, 7 split linears here */
    {"phi3", "phi3", 0, 256, 0, 0, 0, 0, 0, 7 * 2 + 2},
    /* 4 attention + 4 experts x 3, router, 2 norms */
    {"llama", "mixtral", 4, 64, 0, 0, 0, 0, 0, (4 + 12) * 2 + 1 + 2},
    /* 4 attention (+3 biases) + 12 expert + 3 shared linears, 2 routers, 2 norms */
    {"qwen2moe", "qwen2_moe", 4, 0, 64, 128, 0, 0, 0, (4 + 12 + 3) * 2 + 3 + 2 + 2},
    /* 4 attention + 12 expert linears, q/k norms, router, 2 norms */
    {"qwen3moe", "qwen3_moe", 4, 0, 64, 0, 0, 0, 0, (4 + 12) * 2 + 2 + 1 + 2},
};

static void make_spec(const arch_case *c, qbt_gguf_spec *s)
{
    memset(s, 0, sizeof *s);
    s->arch = c->gguf_arch;
    s->n_layer = 2;
    s->n_embd = 128;
    s->n_ff = c->n_ff;
    s->n_head = 4;
    s->n_head_kv = 2;
    s->head_dim = c->head_dim;
    s->n_vocab = 256;
    s->n_expert = c->n_expert;
    s->n_expert_used = c->n_expert ? 2 : 0;
    s->n_ff_exp = c->n_ff_exp;
    s->n_ff_shexp = c->n_ff_shexp;
    s->tied = c->tied;
    s->sliding_window = c->sliding_window;
    s->wtype = 2; /* Q4_0 */
    s->seed = 1234;
}

/* Checks the sm86-w4a16 directory `dir` against the known tensors. */
static void check_output(const char *dir, const arch_case *c, const qbt_hf_model *ref)
{
    blob mb;
    cJSON *man, *tens, *cfg;
    size_t i;
    int l, n_linear = 0;
    blob cb;

    ck_assert_int_eq(load(dir, "manifest.json", &mb), 0);
    man = cJSON_Parse((const char *)mb.data);
    ck_assert_ptr_nonnull(man);
    ck_assert_str_eq(cJSON_GetObjectItem(man, "architecture")->valuestring, c->model_type);
    ck_assert_int_eq((int)cJSON_GetObjectItem(man, "group_size")->valuedouble, 32);
    tens = cJSON_GetObjectItem(man, "tensors");
    ck_assert_int_eq(load(dir, "config.json", &cb), 0);
    cfg = cJSON_Parse((const char *)cb.data);
    ck_assert_str_eq(cJSON_GetObjectItem(cfg, "model_type")->valuestring, c->model_type);
    ck_assert_ptr_null(cJSON_GetObjectItem(cfg, "quantization_config"));
    if (c->sliding_window)
        ck_assert_int_eq((int)cJSON_GetObjectItem(cfg, "sliding_window")->valuedouble,
                         c->sliding_window);
    if (c->n_expert)
        ck_assert_int_eq(
            (int)cJSON_GetObjectItem(cfg, strcmp(c->model_type, "mixtral") == 0
                                              ? "num_local_experts"
                                              : "num_experts")
                ->valuedouble,
            c->n_expert);

    for (i = 0; i < ref->n; i++) {
        const qbt_hf_tensor *t = &ref->t[i];
        char file[64], name[256], key[400], pn[300];
        int linear;
        stf f;
        int64_t rows = t->n_dims == 1 ? 1 : t->dims[0],
                cols = t->n_dims == 1 ? t->dims[0] : t->dims[1];
        int64_t r, k;
        out_place(t->name, file, name, &linear);
        ck_assert_msg(st_open(dir, file, &f) == 0, "%s: cannot open %s", t->name, file);
        linear = t->n_dims == 2 && strcmp(file, "embed.safetensors") != 0 &&
                 strcmp(file, "lm_head.safetensors") != 0 && !is_router(t->name);
        if (linear) {
            const uint8_t *p, *s;
            const cJSON *e;
            size_t nl = strlen(name) - strlen(".weight");
            n_linear++;
            ck_assert_ptr_nonnull(t->codes);
            snprintf(key, sizeof key, "%s:%.*s", file, (int)nl, name);
            e = cJSON_GetObjectItemCaseSensitive(tens, key);
            ck_assert_msg(e != NULL, "%s missing from manifest tensors", key);
            ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(e, "exact")), "%s not exact", key);
            snprintf(pn, sizeof pn, "%.*s.packed", (int)nl, name);
            p = st_get(&f, pn, "U8", 2, rows, cols / 2);
            snprintf(pn, sizeof pn, "%.*s.scales", (int)nl, name);
            s = st_get(&f, pn, "F16", 2, rows, cols / 32);
            for (r = 0; r < rows; r++)
                for (k = 0; k < cols; k++) {
                    unsigned byte = p[r * (cols / 2) + k / 2];
                    unsigned nib = (k & 1) ? byte >> 4 : byte & 15u;
                    float sc = qb_f16_to_f32(rd16(s, (size_t)(r * (cols / 32) + k / 32)));
                    float dec = (float)((int)nib - 8) * sc;
                    ck_assert_uint_eq(nib, t->codes[r * cols + k]);
                    ck_assert(sc == t->scales[(r * cols + k) / 32]);
                    ck_assert_msg(qb_f32_bits(dec) == qb_f32_bits(t->vals[r * cols + k]),
                                  "%s (%lld, %lld): %g != %g", t->name, (long long)r,
                                  (long long)k, dec, t->vals[r * cols + k]);
                }
        } else {
            const uint8_t *d = st_get(&f, name, "F16", t->n_dims, t->dims[0], t->dims[1]);
            for (k = 0; k < rows * cols; k++)
                ck_assert_msg(rd16(d, (size_t)k) == qb_f32_to_f16(t->vals[k]), "%s[%lld]",
                              t->name, (long long)k);
        }
        st_close(&f);
    }
    /* nothing but the expected tensors */
    ck_assert_int_eq(cJSON_GetArraySize(tens), n_linear);
    for (l = 0; l < 2; l++) {
        char file[64];
        stf f;
        sprintf(file, "layer_%02d.safetensors", l);
        ck_assert_int_eq(st_open(dir, file, &f), 0);
        ck_assert_int_eq(st_count(&f), c->n_layer_tensors);
        st_close(&f);
    }
    {
        char head[800];
        snprintf(head, sizeof head, "%s/lm_head.safetensors", dir);
        ck_assert_int_eq(access(head, F_OK) == 0, !c->tied);
    }
    cJSON_Delete(man);
    cJSON_Delete(cfg);
    free(mb.data);
    free(cb.data);
}

/* The reader's dense rows: hf-dense f32 output of `dir` equals the known
 * values (phi3's q/k/v and gate/up come back fused in that row order). */
static void check_dense_roundtrip(const char *hfdir, const qbt_hf_model *ref)
{
    DIR *d = opendir(hfdir);
    struct dirent *de;
    size_t checked = 0;
    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d))) {
        stf f;
        const cJSON *e;
        size_t n = strlen(de->d_name);
        if (n < 12 || strcmp(de->d_name + n - 12, ".safetensors") != 0)
            continue;
        ck_assert_int_eq(st_open(hfdir, de->d_name, &f), 0);
        cJSON_ArrayForEach(e, f.hdr)
        {
            const char *parts[3] = {NULL, NULL, NULL};
            char pn[3][256];
            const uint8_t *data;
            const cJSON *off;
            int64_t k, base = 0;
            int p;
            if (strcmp(e->string, "__metadata__") == 0)
                continue;
            ck_assert_str_eq(cJSON_GetObjectItem(e, "dtype")->valuestring, "F32");
            off = cJSON_GetObjectItem(e, "data_offsets");
            data = f.data + (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
            if (qbt_hf_model_find(ref, e->string)) {
                parts[0] = e->string;
            } else if (strstr(e->string, "self_attn.qkv_proj.weight")) {
                static const char *const q[3] = {"q_proj", "k_proj", "v_proj"};
                for (p = 0; p < 3; p++) {
                    snprintf(pn[p], sizeof pn[p], "%.*s%s.weight",
                             (int)(strstr(e->string, "qkv_proj") - e->string), e->string, q[p]);
                    parts[p] = pn[p];
                }
            } else if (strstr(e->string, "mlp.gate_up_proj.weight")) {
                static const char *const q[2] = {"gate_proj", "up_proj"};
                for (p = 0; p < 2; p++) {
                    snprintf(pn[p], sizeof pn[p], "%.*s%s.weight",
                             (int)(strstr(e->string, "gate_up_proj") - e->string), e->string,
                             q[p]);
                    parts[p] = pn[p];
                }
            }
            ck_assert_msg(parts[0] != NULL, "%s: unexpected tensor in the hf-dense output",
                          e->string);
            for (p = 0; p < 3 && parts[p]; p++) {
                const qbt_hf_tensor *t = qbt_hf_model_find(ref, parts[p]);
                int64_t n_el = t->n_dims == 1 ? t->dims[0] : t->dims[0] * t->dims[1];
                ck_assert_ptr_nonnull(t);
                for (k = 0; k < n_el; k++) {
                    float v;
                    memcpy(&v, data + 4 * (size_t)(base + k), 4);
                    /* linears exact; F16-stored tensors come back as f16 */
                    if (t->codes && !strstr(t->name, "embed_tokens") &&
                        !strstr(t->name, "lm_head") && !is_router(t->name))
                        ck_assert_msg(qb_f32_bits(v) == qb_f32_bits(t->vals[k]), "%s[%lld]",
                                      t->name, (long long)k);
                    else
                        ck_assert_msg(qb_f32_to_f16(v) == qb_f32_to_f16(t->vals[k]) &&
                                          v == qb_f16_to_f32(qb_f32_to_f16(t->vals[k])),
                                      "%s[%lld]", t->name, (long long)k);
                }
                base += n_el;
                checked++;
            }
        }
        st_close(&f);
    }
    closedir(d);
    /* every known tensor came back */
    ck_assert_uint_eq(checked, ref->n);
}

/* Layer files of two outputs are byte-identical. */
static void check_same_layers(const char *a, const char *b)
{
    int l;
    for (l = 0; l < 2; l++) {
        char file[64];
        blob x, y;
        sprintf(file, "layer_%02d.safetensors", l);
        ck_assert_int_eq(load(a, file, &x), 0);
        ck_assert_int_eq(load(b, file, &y), 0);
        ck_assert_uint_eq(x.len, y.len);
        ck_assert_msg(memcmp(x.data, y.data, x.len) == 0, "%s differs after a round trip", file);
        free(x.data);
        free(y.data);
    }
}

static void all_exact(const char *dir)
{
    blob mb;
    cJSON *man, *e;
    ck_assert_int_eq(load(dir, "manifest.json", &mb), 0);
    man = cJSON_Parse((const char *)mb.data);
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(man, "tensors"))
        ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(e, "exact")), "%s not exact", e->string);
    cJSON_Delete(man);
    free(mb.data);
}

START_TEST(test_arch_gguf_q4_0)
{
    const arch_case *c = &cases[_i];
    qbt_gguf_spec spec;
    qbt_gguf *g = NULL;
    qbt_hf_model ref;
    char src[700], out[700], hf[700], again[700], args[3000], err[4096];

    make_spec(c, &spec);
    ck_assert_int_eq(qbt_gguf_build_model(&spec, &g, &ref), 0);
    snprintf(src, sizeof src, "%s/model.gguf", g_tmp);
    snprintf(out, sizeof out, "%s/out", g_tmp);
    snprintf(hf, sizeof hf, "%s/hf", g_tmp);
    snprintf(again, sizeof again, "%s/again", g_tmp);
    ck_assert_int_eq(qbt_gguf_save(g, NULL, src), 0);
    qbt_gguf_free(g);

    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer sm86-w4a16 --group-size 32 "
             "--option quant_rule=absmax",
             src, out);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s: %s", c->model_type, err);
    check_output(out, c, &ref);

    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f32", out, hf);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s -> hf-dense: %s", c->model_type, err);
    check_dense_roundtrip(hf, &ref);

    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer sm86-w4a16 --group-size 32 "
             "--option quant_rule=absmax",
             out, again);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s -> sm86-w4a16: %s", c->model_type,
                  err);
    all_exact(again);
    check_same_layers(out, again);
    qbt_hf_model_free(&ref);
}
END_TEST

/* ---- MoE errors on small Hugging Face checkpoints ------------------------- */

typedef struct hfw {
    qbt_st_writer *w;
    qbt_rng rng;
} hfw;

static void hf_add(hfw *h, const char *name, int n_dims, int64_t d0, int64_t d1)
{
    int64_t dims[2] = {d0, d1}, n = n_dims == 1 ? d0 : d0 * d1, i;
    float *v = malloc((size_t)n * sizeof *v);
    for (i = 0; i < n; i++)
        v[i] = (float)(qbt_rng_normal(&h->rng) * 0.05);
    ck_assert_int_eq(qbt_st_writer_add(h->w, name, "F32", n_dims, dims, v, (size_t)n * 4), 0);
    free(v);
}

/* A 2-layer MoE checkpoint (hidden 64, 4 heads, experts of width F); skip
 * names one tensor left out, extra adds one. qwen3_moe with dense_layer >= 0
 * puts that layer in mlp_only_layers (dense MLP of intermediate 96). */
static void write_moe(const char *dir, const char *model_type, int n_experts, const char *skip,
                      const char *extra, int dense_layer, int write_count)
{
    hfw h = {qbt_st_writer_new(), {7}};
    char path[800], name[256], cfg[1024], count[64];
    int mix = strcmp(model_type, "mixtral") == 0, l, e, p;
    const int64_t H = 64, F = 32, I = 96, V = 32;
    static const char *const mixp[3] = {"w1", "w2", "w3"};
    static const char *const qwp[3] = {"gate_proj", "down_proj", "up_proj"};

    mkdir(dir, 0755);
    hf_add(&h, "model.embed_tokens.weight", 2, V, H);
    for (l = 0; l < 2; l++) {
        static const char *const at[4] = {"q_proj", "k_proj", "v_proj", "o_proj"};
        for (p = 0; p < 4; p++) {
            snprintf(name, sizeof name, "model.layers.%d.self_attn.%s.weight", l, at[p]);
            hf_add(&h, name, 2, H, H);
        }
        if (!mix) {
            snprintf(name, sizeof name, "model.layers.%d.self_attn.q_norm.weight", l);
            hf_add(&h, name, 1, 16, 0);
            snprintf(name, sizeof name, "model.layers.%d.self_attn.k_norm.weight", l);
            hf_add(&h, name, 1, 16, 0);
        }
        snprintf(name, sizeof name, "model.layers.%d.input_layernorm.weight", l);
        hf_add(&h, name, 1, H, 0);
        snprintf(name, sizeof name, "model.layers.%d.post_attention_layernorm.weight", l);
        hf_add(&h, name, 1, H, 0);
        if (l == dense_layer) {
            for (p = 0; p < 3; p++) {
                snprintf(name, sizeof name, "model.layers.%d.mlp.%s.weight", l, qwp[p]);
                hf_add(&h, name, 2, p == 1 ? H : I, p == 1 ? I : H);
            }
            continue;
        }
        snprintf(name, sizeof name,
                 mix ? "model.layers.%d.block_sparse_moe.gate.weight"
                     : "model.layers.%d.mlp.gate.weight",
                 l);
        hf_add(&h, name, 2, n_experts, H);
        for (e = 0; e < n_experts; e++)
            for (p = 0; p < 3; p++) {
                snprintf(name, sizeof name,
                         mix ? "model.layers.%d.block_sparse_moe.experts.%d.%s.weight"
                             : "model.layers.%d.mlp.experts.%d.%s.weight",
                         l, e, mix ? mixp[p] : qwp[p]);
                if (skip && strcmp(name, skip) == 0)
                    continue;
                hf_add(&h, name, 2, p == 1 ? H : F, p == 1 ? F : H);
            }
    }
    if (extra)
        hf_add(&h, extra, 2, F, H);
    hf_add(&h, "model.norm.weight", 1, H, 0);
    hf_add(&h, "lm_head.weight", 2, V, H);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ck_assert_int_eq(qbt_st_writer_save(h.w, path), 0);
    qbt_st_writer_free(h.w);
    if (write_count)
        snprintf(count, sizeof count, ", \"%s\": %d", mix ? "num_local_experts" : "num_experts",
                 n_experts);
    else
        count[0] = '\0';
    snprintf(cfg, sizeof cfg,
             "{\"model_type\": \"%s\", \"architectures\": [\"%s\"], \"hidden_size\": 64, "
             "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 4, "
             "\"head_dim\": 16, \"vocab_size\": 32, \"tie_word_embeddings\": false, "
             "\"intermediate_size\": %d, \"moe_intermediate_size\": 32%s%s}",
             model_type, mix ? "MixtralForCausalLM" : "Qwen3MoeForCausalLM", mix ? 32 : 96,
             dense_layer >= 0 ? ", \"mlp_only_layers\": [1]" : "", count);
    snprintf(path, sizeof path, "%s/config.json", dir);
    ck_assert_int_eq(qbt_write_text(path, cfg), 0);
}

static int convert_hf(const char *src, char *err, size_t err_len)
{
    char args[2000];
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s/out' --writer sm86-w4a16 --group-size 32", src,
             g_tmp);
    return run_tool(args, err, err_len);
}

START_TEST(test_moe_hf_ok_and_mlp_only_layers)
{
    char src[700], err[4096], args[2000], back[700];
    blob b;
    snprintf(src, sizeof src, "%s/mix", g_tmp);
    write_moe(src, "mixtral", 4, NULL, NULL, -1, 1);
    ck_assert_msg(convert_hf(src, err, sizeof err) == 0, "%s", err);
    /* qwen3_moe with layer 1 in mlp_only_layers: a dense MLP there */
    snprintf(src, sizeof src, "%s/q3", g_tmp);
    write_moe(src, "qwen3_moe", 4, NULL, NULL, 1, 1);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s/q3out' --writer sm86-w4a16 --group-size 32", src,
             g_tmp);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s", err);
    snprintf(back, sizeof back, "%s/q3out", g_tmp);
    ck_assert_int_eq(load(back, "manifest.json", &b), 0);
    ck_assert_ptr_nonnull(strstr((char *)b.data, "layer_01.safetensors:mlp.down_proj"));
    ck_assert_ptr_nonnull(strstr((char *)b.data, "layer_00.safetensors:mlp.experts.3.down_proj"));
    ck_assert_ptr_null(strstr((char *)b.data, "layer_01.safetensors:mlp.experts"));
    free(b.data);
    /* and it reads back (the reader uses the same layout) */
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s/q3again' --writer sm86-w4a16 --group-size 32",
             back, g_tmp);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s", err);
}
END_TEST

START_TEST(test_moe_missing_expert)
{
    char src[700], err[4096];
    snprintf(src, sizeof src, "%s/mix", g_tmp);
    write_moe(src, "mixtral", 4, "model.layers.1.block_sparse_moe.experts.3.w2.weight", NULL, -1,
              1);
    ck_assert_int_ne(convert_hf(src, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "model.layers.1.block_sparse_moe.experts.3.w2.weight") &&
                      strstr(err, "missing"),
                  "%s", err);
}
END_TEST

START_TEST(test_moe_extra_expert)
{
    char src[700], err[4096];
    snprintf(src, sizeof src, "%s/mix", g_tmp);
    write_moe(src, "mixtral", 4, NULL, "model.layers.0.block_sparse_moe.experts.4.w1.weight", -1,
              1);
    ck_assert_int_ne(convert_hf(src, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "model.layers.0.block_sparse_moe.experts.4.w1.weight") &&
                      strstr(err, "num_local_experts"),
                  "%s", err);
}
END_TEST

START_TEST(test_moe_expert_in_dense_layer)
{
    char src[700], err[4096];
    snprintf(src, sizeof src, "%s/q3", g_tmp);
    write_moe(src, "qwen3_moe", 4, NULL, "model.layers.1.mlp.experts.0.gate_proj.weight", 1, 1);
    ck_assert_int_ne(convert_hf(src, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "model.layers.1.mlp.experts.0.gate_proj.weight") &&
                      strstr(err, "dense"),
                  "%s", err);
}
END_TEST

START_TEST(test_moe_no_expert_count)
{
    char src[700], err[4096];
    snprintf(src, sizeof src, "%s/mix", g_tmp);
    write_moe(src, "mixtral", 4, NULL, NULL, -1, 0);
    ck_assert_int_ne(convert_hf(src, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "num_local_experts"), "%s", err);
}
END_TEST

START_TEST(test_moe_wrong_expert_width)
{
    char src[700], err[4096];
    snprintf(src, sizeof src, "%s/q3", g_tmp);
    write_moe(src, "qwen3_moe", 4, NULL, NULL, -1, 1);
    {
        char path[800], *text;
        blob b;
        snprintf(path, sizeof path, "%s", src);
        ck_assert_int_eq(load(path, "config.json", &b), 0);
        text = strstr((char *)b.data, "\"moe_intermediate_size\": 32");
        ck_assert_ptr_nonnull(text);
        memcpy(text, "\"moe_intermediate_size\": 48", 27);
        snprintf(path, sizeof path, "%s/config.json", src);
        ck_assert_int_eq(qbt_write_text(path, (char *)b.data), 0);
        free(b.data);
    }
    ck_assert_int_ne(convert_hf(src, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "mlp.experts.0.gate_proj.weight") &&
                      strstr(err, "moe_intermediate_size"),
                  "%s", err);
}
END_TEST

/* ---- phi3 with fused qkv_proj / gate_up_proj (Hugging Face layout) ------ */

/* Weights on an int4 grid: each group of 32 columns is q * 2^-e with q in
 * [-7, 7] and one |q| = 7, so absmax/7 recovers the scale exactly and the
 * conversion is exact without any source grid. */
static void grid_values(float *v, int64_t rows, int64_t cols, qbt_rng *rng)
{
    int64_t r, g, c;
    for (r = 0; r < rows; r++)
        for (g = 0; g < cols / 32; g++) {
            float sc = ldexpf(1.0f, -4 - (int)(qbt_rng_u64(rng) % 4));
            for (c = 0; c < 32; c++)
                v[r * cols + g * 32 + c] = (float)((int)(qbt_rng_u64(rng) % 15) - 7) * sc;
            v[r * cols + g * 32 + (int64_t)(qbt_rng_u64(rng) % 32)] = 7 * sc;
        }
}

static float *phi3_add(qbt_st_writer *w, qbt_rng *rng, const char *name, int n_dims, int64_t d0,
                       int64_t d1)
{
    int64_t dims[2] = {d0, d1}, n = n_dims == 1 ? d0 : d0 * d1, i;
    float *v = malloc((size_t)n * sizeof *v);
    if (n_dims == 2 && d1 % 32 == 0)
        grid_values(v, d0, d1, rng);
    else
        for (i = 0; i < n; i++)
            v[i] = (float)(int)(qbt_rng_u64(rng) % 64) / 64.0f;
    ck_assert_int_eq(qbt_st_writer_add(w, name, "F32", n_dims, dims, v, (size_t)n * 4), 0);
    return v;
}

/* phi3: hidden 64, 4 heads of 16, 2 kv heads (qkv rows 64 + 32 + 32),
 * intermediate 96 (gate_up rows 192). extra: also write the split q_proj
 * of layer 0; qkv_rows: rows of the fused qkv (128 is right). Returns the
 * fused weights of layer 0 (qkv, gate_up) when asked. */
static void write_phi3(const char *dir, int extra, int64_t qkv_rows, float **qkv0, float **gu0)
{
    qbt_st_writer *w = qbt_st_writer_new();
    qbt_rng rng = {99};
    char name[256], path[800];
    int l;
    float *v;
    mkdir(dir, 0755);
    free(phi3_add(w, &rng, "model.embed_tokens.weight", 2, 32, 64));
    for (l = 0; l < 2; l++) {
        snprintf(name, sizeof name, "model.layers.%d.self_attn.qkv_proj.weight", l);
        v = phi3_add(w, &rng, name, 2, qkv_rows, 64);
        if (l == 0 && qkv0)
            *qkv0 = v;
        else
            free(v);
        snprintf(name, sizeof name, "model.layers.%d.self_attn.o_proj.weight", l);
        free(phi3_add(w, &rng, name, 2, 64, 64));
        snprintf(name, sizeof name, "model.layers.%d.mlp.gate_up_proj.weight", l);
        v = phi3_add(w, &rng, name, 2, 192, 64);
        if (l == 0 && gu0)
            *gu0 = v;
        else
            free(v);
        snprintf(name, sizeof name, "model.layers.%d.mlp.down_proj.weight", l);
        free(phi3_add(w, &rng, name, 2, 64, 96));
        snprintf(name, sizeof name, "model.layers.%d.input_layernorm.weight", l);
        free(phi3_add(w, &rng, name, 1, 64, 0));
        snprintf(name, sizeof name, "model.layers.%d.post_attention_layernorm.weight", l);
        free(phi3_add(w, &rng, name, 1, 64, 0));
    }
    if (extra)
        free(phi3_add(w, &rng, "model.layers.0.self_attn.q_proj.weight", 2, 64, 64));
    free(phi3_add(w, &rng, "model.norm.weight", 1, 64, 0));
    free(phi3_add(w, &rng, "lm_head.weight", 2, 32, 64));
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ck_assert_int_eq(qbt_st_writer_save(w, path), 0);
    qbt_st_writer_free(w);
    snprintf(path, sizeof path, "%s/config.json", dir);
    ck_assert_int_eq(
        qbt_write_text(path, "{\"model_type\": \"phi3\", \"architectures\": [\"Phi3ForCausalLM\"], "
                             "\"hidden_size\": 64, \"num_hidden_layers\": 2, "
                             "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                             "\"intermediate_size\": 96, \"vocab_size\": 32, "
                             "\"tie_word_embeddings\": false}"),
        0);
}

/* Decoded rows [0, rows) of <base> in a layer file equal want. */
static void check_part(const char *dir, const char *base, const float *want, int64_t rows)
{
    stf f;
    char pn[256];
    const uint8_t *p, *sc;
    int64_t r, k;
    ck_assert_int_eq(st_open(dir, "layer_00.safetensors", &f), 0);
    snprintf(pn, sizeof pn, "%s.packed", base);
    p = st_get(&f, pn, "U8", 2, rows, 32);
    snprintf(pn, sizeof pn, "%s.scales", base);
    sc = st_get(&f, pn, "F16", 2, rows, 2);
    for (r = 0; r < rows; r++)
        for (k = 0; k < 64; k++) {
            unsigned byte = p[r * 32 + k / 2];
            int q = (int)((k & 1) ? byte >> 4 : byte & 15u) - 8;
            float dec = (float)q * qb_f16_to_f32(rd16(sc, (size_t)(r * 2 + k / 32)));
            ck_assert_msg(qb_f32_bits(dec) == qb_f32_bits(want[r * 64 + k]), "%s (%lld, %lld)",
                          base, (long long)r, (long long)k);
        }
    st_close(&f);
}

START_TEST(test_phi3_fused_split)
{
    char src[700], out[700], hf[700], args[2000], err[4096];
    float *qkv = NULL, *gu = NULL;
    stf f;
    const uint8_t *d;
    int64_t k;
    snprintf(src, sizeof src, "%s/phi3", g_tmp);
    snprintf(out, sizeof out, "%s/out", g_tmp);
    snprintf(hf, sizeof hf, "%s/hf", g_tmp);
    write_phi3(src, 0, 128, &qkv, &gu);
    ck_assert_msg(convert_hf(src, err, sizeof err) == 0, "%s", err);
    all_exact(out);
    /* rows [0, 64) q, [64, 96) k, [96, 128) v; gate then up (chunk(2)) */
    check_part(out, "self_attn.q_proj", qkv, 64);
    check_part(out, "self_attn.k_proj", qkv + 64 * 64, 32);
    check_part(out, "self_attn.v_proj", qkv + 96 * 64, 32);
    check_part(out, "mlp.gate_proj", gu, 96);
    check_part(out, "mlp.up_proj", gu + 96 * 64, 96);
    ck_assert_int_eq(st_open(out, "layer_01.safetensors", &f), 0);
    ck_assert_int_eq(st_count(&f), 7 * 2 + 2);
    st_close(&f);
    /* back to Hugging Face f32: fused again, bit for bit */
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f32", out, hf);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(st_open(hf, "model.safetensors", &f), 0);
    d = st_get(&f, "model.layers.0.self_attn.qkv_proj.weight", "F32", 2, 128, 64);
    for (k = 0; k < 128 * 64; k++) {
        float v;
        memcpy(&v, d + 4 * k, 4);
        ck_assert(qb_f32_bits(v) == qb_f32_bits(qkv[k]));
    }
    d = st_get(&f, "model.layers.0.mlp.gate_up_proj.weight", "F32", 2, 192, 64);
    for (k = 0; k < 192 * 64; k++) {
        float v;
        memcpy(&v, d + 4 * k, 4);
        ck_assert(qb_f32_bits(v) == qb_f32_bits(gu[k]));
    }
    st_close(&f);
    free(qkv);
    free(gu);
}
END_TEST

START_TEST(test_phi3_fused_errors)
{
    char src[700], err[4096];
    snprintf(src, sizeof src, "%s/both", g_tmp);
    write_phi3(src, 1, 128, NULL, NULL);
    ck_assert_int_ne(convert_hf(src, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "model.layers.0.self_attn.qkv_proj.weight") &&
                      strstr(err, "both fused and split"),
                  "%s", err);
    snprintf(src, sizeof src, "%s/rows", g_tmp);
    write_phi3(src, 0, 160, NULL, NULL);
    ck_assert_int_ne(convert_hf(src, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "model.layers.0.self_attn.qkv_proj.weight") &&
                      strstr(err, "160 rows") && strstr(err, "128 rows"),
                  "%s", err);
}
END_TEST

/* ---- GPTQ 2/3-bit symmetric ------------------------------------------------ */

static void check_gptq(int bits, int64_t gs, int64_t target_gs)
{
    qbt_gptq_spec spec;
    qbt_qmodel *truth = NULL;
    char src[700], out[700], args[2000], err[4096];
    blob mb;
    cJSON *man, *e;
    size_t i;
    int n = 0;

    memset(&spec, 0, sizeof spec);
    spec.bits = bits;
    spec.group_size = gs;
    spec.sym = 1;
    spec.label = 1;
    spec.n_shards = 1;
    spec.seed = 77 + (uint64_t)bits;
    snprintf(src, sizeof src, "%s/gptq", g_tmp);
    snprintf(out, sizeof out, "%s/out", g_tmp);
    mkdir(src, 0755);
    ck_assert_int_eq(qbt_gptq_write(src, &spec, &truth), 0);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer sm86-w4a16 --group-size %lld "
             "--option quant_rule=absmax",
             src, out, (long long)target_gs);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(load(out, "manifest.json", &mb), 0);
    man = cJSON_Parse((const char *)mb.data);
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(man, "tensors"))
    {
        ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(e, "exact")), "%s not exact", e->string);
        n++;
    }
    ck_assert_int_eq(n, (int)truth->n_lin);
    /* codes: nibble = code - 2^(bits-1) + 8; scales: the truth's */
    for (i = 0; i < truth->n_lin; i++) {
        const qbt_qlin *l = &truth->lin[i];
        char file[64], pn[256];
        int layer, off = 0;
        stf f;
        const uint8_t *p, *s;
        int64_t r, k;
        if (!l->quantized)
            continue;
        ck_assert_int_eq(sscanf(l->name, "model.layers.%d.%n", &layer, &off), 1);
        sprintf(file, "layer_%02d.safetensors", layer);
        ck_assert_int_eq(st_open(out, file, &f), 0);
        snprintf(pn, sizeof pn, "%s.packed", l->name + off);
        p = st_get(&f, pn, "U8", 2, l->N, (l->K + 1) / 2);
        snprintf(pn, sizeof pn, "%s.scales", l->name + off);
        s = st_get(&f, pn, "F16", 2, l->N, (l->K + target_gs - 1) / target_gs);
        for (r = 0; r < l->N; r++)
            for (k = 0; k < l->K; k++) {
                unsigned byte = p[r * ((l->K + 1) / 2) + k / 2];
                int nib = (int)((k & 1) ? byte >> 4 : byte & 15u);
                int64_t sg = l->g_idx ? l->g_idx[k] : k / l->gs;
                ck_assert_int_eq(l->zeros[r * l->G + sg], 1 << (bits - 1));
                ck_assert_int_eq(nib - 8, (int)l->codes[r * l->K + k] - (1 << (bits - 1)));
                ck_assert_uint_eq(rd16(s, (size_t)(r * ((l->K + target_gs - 1) / target_gs) +
                                                   k / target_gs)),
                                  l->scales[r * l->G + sg]);
                ck_assert(qb_f32_bits((float)(nib - 8) *
                                      qb_f16_to_f32(l->scales[r * l->G + sg])) ==
                          qb_f32_bits(qbt_qlin_value(l, r, k)));
            }
        st_close(&f);
    }
    cJSON_Delete(man);
    free(mb.data);
    qbt_qmodel_free(truth);
}

START_TEST(test_gptq2_sym_exact)
{
    check_gptq(2, 32, 32);
}
END_TEST

START_TEST(test_gptq3_sym_exact)
{
    check_gptq(3, 128, 32);
    teardown();
    setup();
    check_gptq(3, 128, 128);
}
END_TEST

/* An asymmetric 2-bit grid has zeros anywhere in 0..3: not exact, said so. */
START_TEST(test_gptq2_asym_requantized)
{
    qbt_gptq_spec spec;
    char src[700], out[700], args[2000], err[4096];
    blob mb;
    cJSON *man, *e;
    int inexact = 0;
    memset(&spec, 0, sizeof spec);
    spec.bits = 2;
    spec.group_size = 32;
    spec.sym = 0;
    spec.label = 1;
    spec.n_shards = 1;
    spec.seed = 5;
    snprintf(src, sizeof src, "%s/gptq", g_tmp);
    snprintf(out, sizeof out, "%s/out", g_tmp);
    mkdir(src, 0755);
    ck_assert_int_eq(qbt_gptq_write(src, &spec, NULL), 0);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer sm86-w4a16 --group-size 32 "
             "--option quant_rule=absmax",
             src, out);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(load(out, "manifest.json", &mb), 0);
    man = cJSON_Parse((const char *)mb.data);
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(man, "tensors"))
        inexact += cJSON_IsFalse(cJSON_GetObjectItem(e, "exact"));
    ck_assert_int_gt(inexact, 0);
    cJSON_Delete(man);
    free(mb.data);
}
END_TEST

static int have_tool(void)
{
    const char *bin = getenv("QB_TEST_BIN");
    return bin && access(bin, X_OK) == 0;
}

Suite *qbt_suite(void)
{
    Suite *s = suite_create("sm86-w4a16-arch");
    TCase *tc = tcase_create("e2e");
    if (!have_tool()) {
        fprintf(stderr, "test_w4w_arch: %s not built, skipping\n",
                getenv("QB_TEST_BIN") ? getenv("QB_TEST_BIN") : "QB_TEST_BIN");
        return NULL; /* skipped */
    }
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_arch_gguf_q4_0, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, test_moe_hf_ok_and_mlp_only_layers);
    tcase_add_test(tc, test_moe_missing_expert);
    tcase_add_test(tc, test_moe_extra_expert);
    tcase_add_test(tc, test_moe_expert_in_dense_layer);
    tcase_add_test(tc, test_moe_no_expert_count);
    tcase_add_test(tc, test_moe_wrong_expert_width);
    tcase_add_test(tc, test_phi3_fused_split);
    tcase_add_test(tc, test_phi3_fused_errors);
    tcase_add_test(tc, test_gptq2_sym_exact);
    tcase_add_test(tc, test_gptq3_sym_exact);
    tcase_add_test(tc, test_gptq2_asym_requantized);
    suite_add_tcase(s, tc);
    return s;
}
