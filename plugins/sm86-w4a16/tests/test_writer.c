/*
 * sm86-w4a16 unit tests of the whole writer on in-memory models: plan
 * errors, the exact-repack decision, decoded values against the source,
 * file layout, configs and the manifest (sizes and SHA-256 recomputed).
 */
#define _GNU_SOURCE
#include <cJSON.h>
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "w4t_fake.h"
#include <quantbridge/base/qb_archs.h>
#include "w4w.h"

/* Relative error bound for random normal weights at 4 bits, group <= 128:
 * the rounding step is absmax/7 and rounding noise has variance step^2/12;
 * for n <= 128 normal samples absmax stays below 3.6 sigma (probability of
 * exceeding it per group < 0.05 across the test), so
 * rel_rmse <= 3.6 / 7 / sqrt(12) = 0.149. */
#define W4T_REL_BOUND 0.15

static qb_param g_params[8];

/* Params array: pairs of key, value strings (INT for group_size). */
static const qb_param *params(const char *gs, const char *rule, const char *head, const char *act)
{
    int n = 0;
    memset(g_params, 0, sizeof g_params);
    if (gs) {
        g_params[n].struct_size = sizeof(qb_param);
        g_params[n].key = "group_size";
        g_params[n].type = QB_PARAM_INT;
        g_params[n].is_set = 1;
        g_params[n++].v.i = atoll(gs);
    }
#define SP(k, val)                                                                                 \
    if (val) {                                                                                     \
        g_params[n].struct_size = sizeof(qb_param);                                                \
        g_params[n].key = k;                                                                       \
        g_params[n].type = QB_PARAM_STRING;                                                        \
        g_params[n].is_set = 1;                                                                    \
        g_params[n++].v.s = val;                                                                   \
    }
    SP("quant_rule", rule)
    SP("lm_head", head)
    SP("act_order", act)
#undef SP
    g_params[n].type = QB_PARAM_END;
    return g_params;
}

static cJSON *load_json(const qbt_mem_sink *s, const char *name)
{
    const qbt_mem_file *f = qbt_mem_sink_find(s, name);
    char *t;
    cJSON *j;
    ck_assert_msg(f != NULL, "%s missing", name);
    t = strndup((const char *)f->data, f->len);
    j = cJSON_Parse(t);
    free(t);
    ck_assert_msg(j != NULL, "%s is not JSON", name);
    return j;
}

/* Decodes `<base>.packed`/`.scales` of `file` independently of pack.c and
 * returns the rel error against src (rows x cols); asserts the shapes. */
static double check_linear(const qbt_mem_sink *s, const char *file, const char *base,
                           const w4t_tensor *src, int64_t gs, int *bit_exact)
{
    const qbt_mem_file *f = qbt_mem_sink_find(s, file);
    w4t_st_view pv, sv;
    char n[256];
    int64_t rows = src->dims[0], cols = src->dims[1], r, c, ng = (cols + gs - 1) / gs;
    double e2 = 0, r2 = 0;
    ck_assert_msg(f != NULL, "%s missing", file);
    snprintf(n, sizeof n, "%s.packed", base);
    ck_assert_msg(w4t_st_get(f, n, &pv) == 0, "%s:%s missing", file, n);
    snprintf(n, sizeof n, "%s.scales", base);
    ck_assert_msg(w4t_st_get(f, n, &sv) == 0, "%s:%s missing", file, n);
    ck_assert_str_eq(pv.dtype, "U8");
    ck_assert_str_eq(sv.dtype, "F16");
    ck_assert_int_eq(pv.n_dims, 2);
    ck_assert_int_eq(pv.dims[0], rows);
    ck_assert_int_eq(pv.dims[1], (cols + 1) / 2);
    ck_assert_int_eq(sv.dims[0], rows);
    ck_assert_int_eq(sv.dims[1], ng);
    ck_assert_uint_eq(pv.n_bytes, (size_t)(rows * ((cols + 1) / 2)));
    ck_assert_uint_eq(sv.n_bytes, (size_t)(rows * ng * 2));
    *bit_exact = 1;
    for (r = 0; r < rows; r++) {
        const uint8_t *prow = pv.data + r * ((cols + 1) / 2);
        if (cols & 1)
            ck_assert_uint_eq(prow[cols / 2] >> 4, 8);
        for (c = 0; c < cols; c++) {
            unsigned b = prow[c / 2];
            int q = (int)(c % 2 == 0 ? (b & 15u) : (b >> 4)) - 8;
            uint16_t sh;
            float dec, ref = src->data[r * cols + c];
            memcpy(&sh, sv.data + 2 * (r * ng + c / gs), 2);
            dec = (float)q * qb_f16_to_f32(sh);
            if (memcmp(&dec, &ref, 4) != 0)
                *bit_exact = 0;
            e2 += ((double)dec - ref) * ((double)dec - ref);
            r2 += (double)ref * ref;
        }
    }
    return r2 > 0 ? sqrt(e2 / r2) : 0.0;
}

static void check_f16(const qbt_mem_sink *s, const char *file, const char *name, const w4t_tensor *src)
{
    const qbt_mem_file *f = qbt_mem_sink_find(s, file);
    w4t_st_view v;
    int64_t n = src->n_dims == 1 ? src->dims[0] : src->dims[0] * src->dims[1], i;
    ck_assert_msg(f != NULL, "%s missing", file);
    ck_assert_msg(w4t_st_get(f, name, &v) == 0, "%s:%s missing", file, name);
    ck_assert_str_eq(v.dtype, "F16");
    ck_assert_int_eq(v.n_dims, (int)src->n_dims);
    ck_assert_uint_eq(v.n_bytes, (size_t)n * 2);
    for (i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, v.data + 2 * i, 2);
        ck_assert_uint_eq(h, qb_f32_to_f16(src->data[i]));
    }
}

static const cJSON *manifest_tensor(const cJSON *m, const char *key)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItem(m, "tensors"), key);
    ck_assert_msg(t != NULL, "manifest has no tensor %s", key);
    return t;
}

/* Every file but manifest.json is listed with its real size and SHA-256. */
static void check_manifest_files(const qbt_mem_sink *s, const cJSON *m)
{
    const cJSON *files = cJSON_GetObjectItem(m, "files"), *e;
    size_t listed = 0, i;
    cJSON_ArrayForEach(e, files)
    {
        const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
        const qbt_mem_file *f = qbt_mem_sink_find(s, name);
        uint8_t sha[32];
        char hex[65];
        ck_assert_msg(f != NULL, "manifest lists %s, not written", name);
        ck_assert_msg(f->closed, "%s not closed", name);
        ck_assert_uint_eq((uint64_t)cJSON_GetObjectItem(e, "bytes")->valuedouble, f->len);
        w4t_sha256(f->data, f->len, sha);
        for (i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", sha[i]);
        ck_assert_str_eq(cJSON_GetObjectItem(e, "sha256")->valuestring, hex);
        listed++;
    }
    ck_assert_uint_eq(listed + 1, s->n);
    ck_assert(qbt_mem_sink_find(s, "manifest.json") != NULL);
}

static const char *const k_lin[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                    "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                    "mlp.down_proj"};

/* Converts a dense model and checks every tensor against its source. */
static void run_dense(const char *arch, int L, int64_t hidden, int64_t inter, int tied, int bias,
                      int gnorm, int qk, int64_t gs, const char *rule)
{
    w4t_model *m = calloc(1, sizeof *m);
    qbt_mem_sink s;
    cJSON *man, *cfg, *gen;
    char gsb[16], file[64], n[128];
    int l, k, exact;
    qbt_host_reset();
    w4t_model_dense(m, arch, L, hidden, inter, 40, tied, bias, gnorm, qk);
    qbt_mem_sink_init(&s);
    snprintf(gsb, sizeof gsb, "%lld", (long long)gs);
    ck_assert_msg(w4t_convert(m, &s, params(gsb, rule, NULL, NULL)) == QB_OK, "%s",
                  qbt_host_last_error());
    man = load_json(&s, "manifest.json");
    check_manifest_files(&s, man);
    ck_assert_str_eq(cJSON_GetObjectItem(man, "format")->valuestring, "sm86-w4a16");
    ck_assert_int_eq(cJSON_GetObjectItem(man, "format_version")->valueint, 1);
    ck_assert_int_eq(cJSON_GetObjectItem(man, "group_size")->valueint, (int)gs);
    ck_assert_int_eq(cJSON_GetObjectItem(man, "num_layers")->valueint, L);
    ck_assert_str_eq(cJSON_GetObjectItem(man, "architecture")->valuestring, arch);
    ck_assert_str_eq(cJSON_GetObjectItem(man, "nibble_order")->valuestring, "low-even");
    ck_assert_int_eq(cJSON_GetObjectItem(man, "code_offset")->valueint, 8);
    ck_assert(cJSON_IsBool(cJSON_GetObjectItem(man, "tie_word_embeddings")) &&
              cJSON_IsTrue(cJSON_GetObjectItem(man, "tie_word_embeddings")) == tied);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(man, "source"), "path")->valuestring,
                     "tiny-model");
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(man, "source"), "reader")->valuestring,
                     "fake");
    ck_assert_str_eq(
        cJSON_GetObjectItem(cJSON_GetObjectItem(man, "converter"), "writer")->valuestring,
        "sm86-w4a16");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(man, "tensors")), 7 * L);

    check_f16(&s, "embed.safetensors", "embed_tokens.weight",
              w4t_find(m, "model.embed_tokens.weight"));
    check_f16(&s, "norm.safetensors", "norm.weight", w4t_find(m, "model.norm.weight"));
    if (tied)
        ck_assert(qbt_mem_sink_find(&s, "lm_head.safetensors") == NULL);
    else
        check_f16(&s, "lm_head.safetensors", "lm_head.weight", w4t_find(m, "lm_head.weight"));
    for (l = 0; l < L; l++) {
        int expect = 7 * 2 + 2 + (bias ? 3 : 0) + (gnorm ? 2 : 0) + (qk ? 2 : 0);
        snprintf(file, sizeof file, "layer_%02d.safetensors", l);
        ck_assert_int_eq(w4t_st_count(qbt_mem_sink_find(&s, file)), expect);
        for (k = 0; k < 7; k++) {
            char key[128];
            const cJSON *mt;
            double rel, mrel;
            snprintf(n, sizeof n, "model.layers.%d.%s.weight", l, k_lin[k]);
            rel = check_linear(&s, file, k_lin[k], w4t_find(m, n), gs, &exact);
            ck_assert_msg(rel < W4T_REL_BOUND, "%s rel %g", n, rel);
            ck_assert_msg(rel > 0.0, "%s: random weights cannot be exact", n);
            snprintf(key, sizeof key, "%s:%s", file, k_lin[k]);
            mt = manifest_tensor(man, key);
            mrel = cJSON_GetObjectItem(mt, "rel_rmse")->valuedouble;
            ck_assert_msg(fabs(mrel - rel) <= 1e-9 * rel, "%s manifest %g vs decoded %g", key, mrel,
                          rel);
            ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(mt, "exact")));
            ck_assert_str_eq(cJSON_GetObjectItem(mt, "source_encoding")->valuestring, "f32");
            if (bias && k < 3) {
                snprintf(n, sizeof n, "model.layers.%d.%s.bias", l, k_lin[k]);
                snprintf(key, sizeof key, "%s.bias", k_lin[k]);
                check_f16(&s, file, key, w4t_find(m, n));
            }
        }
        snprintf(n, sizeof n, "model.layers.%d.input_layernorm.weight", l);
        check_f16(&s, file, "input_layernorm.weight", w4t_find(m, n));
        if (gnorm) {
            snprintf(n, sizeof n, "model.layers.%d.pre_feedforward_layernorm.weight", l);
            check_f16(&s, file, "pre_feedforward_layernorm.weight", w4t_find(m, n));
            snprintf(n, sizeof n, "model.layers.%d.post_feedforward_layernorm.weight", l);
            check_f16(&s, file, "post_feedforward_layernorm.weight", w4t_find(m, n));
        }
        if (qk) {
            snprintf(n, sizeof n, "model.layers.%d.self_attn.k_norm.weight", l);
            check_f16(&s, file, "self_attn.k_norm.weight", w4t_find(m, n));
        }
    }
    cfg = load_json(&s, "config.json");
    ck_assert(cJSON_GetObjectItem(cfg, "quantization_config") == NULL);
    ck_assert_str_eq(cJSON_GetObjectItem(cfg, "torch_dtype")->valuestring, "float16");
    ck_assert_str_eq(cJSON_GetObjectItem(cfg, "model_type")->valuestring, arch);
    ck_assert(cJSON_GetObjectItem(cfg, "architectures") != NULL);
    gen = load_json(&s, "generation_config.json");
    ck_assert_int_eq(cJSON_GetObjectItem(gen, "bos_token_id")->valueint, 1);
    ck_assert_int_eq(cJSON_GetObjectItem(gen, "eos_token_id")->valueint, 2);
    cJSON_Delete(man);
    cJSON_Delete(cfg);
    cJSON_Delete(gen);
    qbt_mem_sink_free(&s);
    w4t_model_free(m);
    free(m);
}

START_TEST(test_llama_untied_g32)
{
    run_dense("llama", 2, 64, 96, 0, 0, 0, 0, 32, NULL);
}
END_TEST

/* Odd in_features (last nibble 8) and a short last group (70 = 64 + 6). */
START_TEST(test_llama_odd_cols_short_group)
{
    run_dense("llama", 1, 70, 35, 0, 0, 0, 0, 64, "absmax");
}
END_TEST

START_TEST(test_mistral_tied_g128)
{
    run_dense("mistral", 2, 128, 256, 1, 0, 0, 0, 128, "search");
}
END_TEST

START_TEST(test_qwen2_biases)
{
    run_dense("qwen2", 2, 64, 128, 0, 1, 0, 0, 32, NULL);
}
END_TEST

START_TEST(test_gemma2_norms_tied)
{
    run_dense("gemma2", 2, 64, 128, 1, 0, 1, 0, 64, NULL);
}
END_TEST

START_TEST(test_qwen3_qk_norm)
{
    run_dense("qwen3", 1, 64, 96, 0, 0, 0, 1, 32, NULL);
}
END_TEST

/* Layer files use three digits from 101 layers on (w4a16-format.md). */
START_TEST(test_layer_file_digits)
{
    w4t_model *m = calloc(1, sizeof *m);
    qbt_mem_sink *s = calloc(1, sizeof *s);
    cJSON *man;
    qbt_host_reset();
    w4t_model_dense(m, "mistral", 101, 8, 8, 8, 1, 0, 0, 0);
    qbt_mem_sink_init(s);
    ck_assert_msg(w4t_convert(m, s, NULL) == QB_OK, "%s", qbt_host_last_error());
    ck_assert(qbt_mem_sink_find(s, "layer_000.safetensors") != NULL);
    ck_assert(qbt_mem_sink_find(s, "layer_100.safetensors") != NULL);
    ck_assert(qbt_mem_sink_find(s, "layer_00.safetensors") == NULL);
    man = load_json(s, "manifest.json");
    (void)manifest_tensor(man, "layer_057.safetensors:mlp.up_proj");
    cJSON_Delete(man);
    qbt_mem_sink_free(s);
    w4t_model_free(m);
    free(m);
    free(s);
}
END_TEST

/* ---- plan errors ---- */

static void expect_begin_error(w4t_model *m, qb_status code, const char *needle)
{
    qbt_mem_sink s;
    qb_status rc;
    qbt_mem_sink_init(&s);
    qbt_host_reset();
    rc = w4t_convert(m, &s, NULL);
    ck_assert_msg(rc == code, "status %d, want %d (%s)", rc, code, qbt_host_last_error());
    ck_assert_msg(strstr(qbt_host_last_error(), needle) != NULL, "message '%s' lacks '%s'",
                  qbt_host_last_error(), needle);
    ck_assert_uint_eq(s.n, 0); /* nothing written */
    qbt_mem_sink_free(&s);
}

START_TEST(test_unknown_tensor_named)
{
    w4t_model *m = calloc(1, sizeof *m);
    w4t_model_dense(m, "llama", 2, 16, 16, 8, 0, 0, 0, 0);
    w4t_add(m, "model.layers.1.self_attn.rotary_emb.inv_freq", 1, 8, 1, 1.0f);
    expect_begin_error(m, QB_E_FORMAT, "model.layers.1.self_attn.rotary_emb.inv_freq");
    w4t_model_free(m);
    w4t_model_dense(m, "mistral", 1, 16, 16, 8, 0, 1, 0, 0); /* mistral has no biases */
    expect_begin_error(m, QB_E_FORMAT, "model.layers.0.self_attn.q_proj.bias");
    w4t_model_free(m);
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 0, 0, 1, 0); /* gemma2 norms in llama */
    expect_begin_error(m, QB_E_FORMAT, "pre_feedforward_layernorm");
    w4t_model_free(m);
    w4t_model_dense(m, "llama", 2, 16, 16, 8, 0, 0, 0, 0);
    w4t_add(m, "model.layers.2.mlp.up_proj.weight", 16, 16, 1, 1.0f);
    expect_begin_error(m, QB_E_FORMAT, "model.layers.2.mlp.up_proj.weight");
    w4t_model_free(m);
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 0, 0, 0, 0);
    w4t_add(m, "model.layers.00.mlp.up_proj.weight", 16, 16, 1, 1.0f);
    expect_begin_error(m, QB_E_FORMAT, "model.layers.00.mlp.up_proj.weight");
    w4t_model_free(m);
    free(m);
}
END_TEST

START_TEST(test_missing_projection)
{
    w4t_model *m = calloc(1, sizeof *m);
    w4t_model_dense(m, "llama", 2, 16, 16, 8, 0, 0, 0, 0);
    ck_assert(w4t_remove(m, "model.layers.1.mlp.up_proj.weight"));
    expect_begin_error(m, QB_E_NOT_FOUND, "model.layers.1.mlp.up_proj.weight");
    w4t_model_free(m);
    w4t_model_dense(m, "qwen2", 1, 16, 16, 8, 0, 1, 0, 0);
    ck_assert(w4t_remove(m, "model.layers.0.self_attn.k_proj.bias"));
    expect_begin_error(m, QB_E_NOT_FOUND, "model.layers.0.self_attn.k_proj.bias");
    w4t_model_free(m);
    w4t_model_dense(m, "gemma2", 1, 16, 16, 8, 0, 0, 1, 0);
    ck_assert(w4t_remove(m, "model.layers.0.post_feedforward_layernorm.weight"));
    expect_begin_error(m, QB_E_NOT_FOUND, "post_feedforward_layernorm");
    w4t_model_free(m);
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 0, 0, 0, 0);
    ck_assert(w4t_remove(m, "lm_head.weight"));
    expect_begin_error(m, QB_E_NOT_FOUND, "lm_head.weight");
    w4t_model_free(m);
    free(m);
}
END_TEST

START_TEST(test_shape_and_arch_errors)
{
    w4t_model *m = calloc(1, sizeof *m);
    w4w_ctx ctx = {qbt_host()};
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 0, 0, 0, 0);
    w4t_find(m, "model.norm.weight")->dims[0] = 15;
    expect_begin_error(m, QB_E_MISMATCH, "model.norm.weight");
    w4t_model_free(m);
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 0, 0, 0, 0);
    w4t_find(m, "model.layers.0.mlp.down_proj.weight")->n_dims = 1;
    expect_begin_error(m, QB_E_FORMAT, "model.layers.0.mlp.down_proj.weight");
    w4t_model_free(m);
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 0, 0, 0, 0);
    m->info.architecture = "falcon";
    ck_assert_int_eq(w4w_writer_vtable.supports(&ctx, &m->info), 0);
    expect_begin_error(m, QB_E_UNSUPPORTED, "falcon");
    m->info.architecture = "qwen2";
    ck_assert_int_gt(w4w_writer_vtable.supports(&ctx, &m->info), 0);
    w4t_model_free(m);
    free(m);
}
END_TEST

START_TEST(test_options_refused)
{
    w4t_model *m = calloc(1, sizeof *m);
    qbt_mem_sink s;
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 0, 0, 0, 0);
    qbt_mem_sink_init(&s);
    ck_assert_int_eq(w4t_convert(m, &s, params(NULL, NULL, NULL, "shuffle")), QB_E_INVALID);
    ck_assert(strstr(qbt_host_last_error(), "act_order") != NULL);
    ck_assert_int_eq(w4t_convert(m, &s, params("0", NULL, NULL, NULL)), QB_E_INVALID);
    ck_assert_int_eq(w4t_convert(m, &s, params(NULL, "best", NULL, NULL)), QB_E_INVALID);
    ck_assert_uint_eq(s.n, 0);
    w4t_model_free(m);
    /* lm_head=quantized with tied embeddings has no head to quantize */
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 1, 0, 0, 0);
    ck_assert_int_eq(w4t_convert(m, &s, params(NULL, NULL, "quantized", NULL)), QB_E_INVALID);
    w4t_model_free(m);
    free(m);
    qbt_mem_sink_free(&s);
}
END_TEST

/* ---- tied embeddings ---- */

START_TEST(test_tied_head_equal_and_different)
{
    w4t_model *m = calloc(1, sizeof *m);
    qbt_mem_sink s;
    w4t_tensor *e, *h;
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 1, 0, 0, 0);
    e = w4t_find(m, "model.embed_tokens.weight");
    h = w4t_add(m, "lm_head.weight", 8, 16, 5, 1.0f);
    e = w4t_find(m, "model.embed_tokens.weight");
    memcpy(h->data, e->data, 8 * 16 * sizeof(float));
    qbt_mem_sink_init(&s);
    ck_assert_msg(w4t_convert(m, &s, NULL) == QB_OK, "%s", qbt_host_last_error());
    ck_assert(qbt_mem_sink_find(&s, "lm_head.safetensors") == NULL);
    qbt_mem_sink_free(&s);
    h = w4t_find(m, "lm_head.weight");
    h->data[7 * 16 + 3] += 1e-3f;
    qbt_mem_sink_init(&s);
    ck_assert_int_eq(w4t_convert(m, &s, NULL), QB_E_MISMATCH);
    ck_assert(strstr(qbt_host_last_error(), "row 7") != NULL);
    qbt_mem_sink_free(&s);
    w4t_model_free(m);
    free(m);
}
END_TEST

/* Missing tie_word_embeddings: the architecture default decides (gemma2
 * ties, llama does not). */
START_TEST(test_tie_default_by_arch)
{
    w4t_model *m = calloc(1, sizeof *m);
    char *p;
    qbt_mem_sink s;
    w4t_model_dense(m, "gemma2", 1, 16, 16, 8, 1, 0, 1, 0);
    p = strstr(m->config, "\"tie_word_embeddings\":true,");
    memmove(p, p + 27, strlen(p + 27) + 1);
    qbt_mem_sink_init(&s);
    ck_assert_msg(w4t_convert(m, &s, NULL) == QB_OK, "%s", qbt_host_last_error());
    ck_assert(qbt_mem_sink_find(&s, "lm_head.safetensors") == NULL);
    qbt_mem_sink_free(&s);
    w4t_model_free(m);
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 1, 0, 0, 0); /* tied, no head */
    p = strstr(m->config, "\"tie_word_embeddings\":true,");
    memmove(p, p + 27, strlen(p + 27) + 1);
    expect_begin_error(m, QB_E_NOT_FOUND, "lm_head.weight");
    w4t_model_free(m);
    free(m);
}
END_TEST

/* ---- exact repack ---- */

/* Grid with groups of 64 written at group_size 32: codes copied, decoded
 * values bit-identical, manifest exact with rel_rmse 0. The codes are known
 * (t->codes), so they are compared directly. */
START_TEST(test_exact_repack)
{
    w4t_model *m = calloc(1, sizeof *m);
    qbt_mem_sink s;
    w4t_tensor *t;
    w4t_st_view pv;
    cJSON *man;
    const cJSON *mt;
    int exact;
    int64_t r, c;
    w4t_model_dense(m, "llama", 1, 128, 64, 8, 0, 0, 0, 0);
    t = w4t_find(m, "model.layers.0.self_attn.q_proj.weight");
    w4t_make_grid(t, 64, 42);
    /* a group whose codes stay within [-3, 3]: requantizing could not
     * reproduce it, only copying can */
    for (c = 0; c < 64; c++) {
        t->codes[c] = (uint8_t)(8 + (c % 7) - 3);
        t->data[c] = (float)((int)t->codes[c] - 8) * t->scales[0];
    }
    qbt_mem_sink_init(&s);
    qbt_host_reset();
    ck_assert_msg(w4t_convert(m, &s, params("32", NULL, NULL, NULL)) == QB_OK, "%s",
                  qbt_host_last_error());
    ck_assert_int_eq(qbt_host_warn_count(), 0);
    ck_assert(check_linear(&s, "layer_00.safetensors", "self_attn.q_proj", t, 32, &exact) == 0.0);
    ck_assert(exact);
    ck_assert(
        w4t_st_get(qbt_mem_sink_find(&s, "layer_00.safetensors"), "self_attn.q_proj.packed", &pv) == 0);
    for (r = 0; r < t->dims[0]; r++)
        for (c = 0; c < t->dims[1]; c++) {
            unsigned b = pv.data[r * (t->dims[1] / 2) + c / 2];
            ck_assert_uint_eq(c % 2 ? b >> 4 : b & 15u, t->codes[r * t->dims[1] + c]);
        }
    man = load_json(&s, "manifest.json");
    mt = manifest_tensor(man, "layer_00.safetensors:self_attn.q_proj");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(mt, "exact")));
    ck_assert(cJSON_GetObjectItem(mt, "rel_rmse")->valuedouble == 0.0);
    ck_assert_str_eq(cJSON_GetObjectItem(mt, "source_encoding")->valuestring, "test int4 grid");
    mt = manifest_tensor(man, "layer_00.safetensors:self_attn.k_proj");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(mt, "exact")));
    cJSON_Delete(man);
    qbt_mem_sink_free(&s);
    w4t_model_free(m);
    free(m);
}
END_TEST

/* Which grids are repacked: (source group, target group, tweak) -> exact? */
static int repack_case(int64_t src_gs, const char *tgs, int tweak, const char *rule)
{
    w4t_model *m = calloc(1, sizeof *m);
    qbt_mem_sink s;
    w4t_tensor *t;
    cJSON *man;
    int exact, bit_exact, c;
    w4t_model_dense(m, "llama", 1, 128, 64, 8, 0, 0, 0, 0);
    t = w4t_find(m, "model.layers.0.mlp.down_proj.weight"); /* [128, 64] */
    w4t_make_grid(t, src_gs, 77);
    switch (tweak) {
    case 1: /* a scale that fp16 cannot hold exactly (row 0, group 0) */
        t->scales[0] = 0.1f;
        for (c = 0; c < src_gs; c++)
            t->data[c] = (float)((int)t->codes[c] - 8) * 0.1f;
        break;
    case 2: /* the reader's dense rows disagree with its grid in one element */
        t->data[5 * 64 + 9] = nextafterf(t->data[5 * 64 + 9], 1.0f);
        break;
    case 3: /* asymmetric */
        t->symmetric = 0;
        break;
    case 4: /* trivial column-to-group map */
    case 5: /* act-order map */
        t->col_group = malloc(64 * sizeof(int32_t));
        for (c = 0; c < 64; c++)
            t->col_group[c] = c / (int)src_gs;
        if (tweak == 5) {
            int32_t tmp = t->col_group[0];
            t->col_group[0] = t->col_group[63];
            t->col_group[63] = tmp;
        }
        break;
    case 6: /* a zero point other than 8 on one group */
        t->zeros[2] = 7;
        break;
    }
    qbt_mem_sink_init(&s);
    qbt_host_reset();
    ck_assert_msg(w4t_convert(m, &s, params(tgs, rule, NULL, NULL)) == QB_OK, "%s",
                  qbt_host_last_error());
    man = load_json(&s, "manifest.json");
    exact = cJSON_IsTrue(
        cJSON_GetObjectItem(manifest_tensor(man, "layer_00.safetensors:mlp.down_proj"), "exact"));
    (void)check_linear(&s, "layer_00.safetensors", "mlp.down_proj", t, atoll(tgs), &bit_exact);
    ck_assert_int_eq(exact, bit_exact); /* the manifest tells the truth */
    if (tweak == 1 || tweak == 2 || tweak == 6)
        ck_assert_int_ge(qbt_host_warn_count(), 1);
    cJSON_Delete(man);
    qbt_mem_sink_free(&s);
    w4t_model_free(m);
    free(m);
    return exact;
}

START_TEST(test_repack_decision)
{
    ck_assert_int_eq(repack_case(32, "32", 0, "absmax"), 1);
    ck_assert_int_eq(repack_case(64, "16", 0, "absmax"), 1); /* multiple */
    ck_assert_int_eq(repack_case(64, "64", 0, "absmax"), 1); /* one group per row */
    ck_assert_int_eq(repack_case(16, "32", 0, "absmax"), 0); /* target wider than source groups */
    ck_assert_int_eq(repack_case(48, "32", 0, "absmax"), 0); /* not a multiple */
    ck_assert_int_eq(repack_case(32, "32", 1, "absmax"),
                     0); /* scale not fp16-exact: WARN, requantized */
    ck_assert_int_eq(repack_case(32, "32", 2, "absmax"), 0); /* dense differs from grid: WARN */
    ck_assert_int_eq(repack_case(32, "32", 3, "absmax"), 0); /* asymmetric */
    ck_assert_int_eq(repack_case(32, "32", 4, "absmax"), 1); /* trivial g_idx */
    ck_assert_int_eq(repack_case(32, "32", 5, "absmax"), 0); /* act-order g_idx */
    ck_assert_int_eq(repack_case(32, "32", 6, "absmax"), 0); /* zero 7 */
}
END_TEST

/* An act-order grid (GPTQ desc_act: group of column c is g_idx[c], not
 * c / gs). Returns the tensor (q_proj, [128 x 128], source groups of 32). */
static w4t_tensor *act_order_model(w4t_model *m)
{
    w4t_tensor *t;
    int32_t order[128];
    int64_t r, c, k;
    uint64_t seed = 3;
    w4t_model_dense(m, "llama", 1, 128, 64, 8, 0, 0, 0, 0);
    t = w4t_find(m, "model.layers.0.self_attn.q_proj.weight");
    w4t_make_grid(t, 32, 19);
    /* a random column order; the k-th column in it belongs to group k / 32 */
    for (c = 0; c < 128; c++)
        order[c] = (int32_t)c;
    for (c = 127; c > 0; c--) {
        int64_t j = (int64_t)(fabs(w4t_normal(&seed)) * 1e6) % (c + 1);
        int32_t tmp = order[c];
        order[c] = order[j];
        order[j] = tmp;
    }
    t->col_group = malloc(128 * sizeof(int32_t));
    for (k = 0; k < 128; k++)
        t->col_group[order[k]] = (int32_t)(k / 32);
    for (r = 0; r < 128; r++)
        for (c = 0; c < 128; c++)
            t->data[r * 128 + c] =
                (float)((int)t->codes[r * 128 + c] - 8) * t->scales[r * 4 + t->col_group[c]];
    return t;
}

/* act_order=permute keeps the codes: columns stored in group order with
 * <path>.perm (stored column c = source column perm[c]) and the feature. */
START_TEST(test_act_order_permute)
{
    w4t_model *m = calloc(1, sizeof *m);
    qbt_mem_sink s;
    w4t_tensor *t = act_order_model(m);
    const qbt_mem_file *f;
    w4t_st_view pv, sv, permv;
    cJSON *man;
    const cJSON *mt;
    int32_t perm[128];
    int64_t r, c;
    uint8_t seen[128] = {0};

    qbt_mem_sink_init(&s);
    qbt_host_reset();
    ck_assert_msg(w4t_convert(m, &s, params("32", NULL, NULL, "permute")) == QB_OK, "%s",
                  qbt_host_last_error());
    ck_assert_int_eq(qbt_host_warn_count(), 0);
    f = qbt_mem_sink_find(&s, "layer_00.safetensors");
    ck_assert_int_eq(w4t_st_get(f, "self_attn.q_proj.perm", &permv), 0);
    ck_assert_str_eq(permv.dtype, "I32");
    ck_assert_int_eq(permv.n_dims, 1);
    ck_assert_int_eq(permv.dims[0], 128);
    memcpy(perm, permv.data, sizeof perm);
    for (c = 0; c < 128; c++) {
        ck_assert(perm[c] >= 0 && perm[c] < 128 && !seen[perm[c]]);
        seen[perm[c]] = 1;
        ck_assert_int_eq(t->col_group[perm[c]], c / 32); /* groups now contiguous */
    }
    ck_assert_int_ne(w4t_st_get(f, "self_attn.k_proj.perm", &permv), 0); /* no grid: no perm */
    ck_assert_int_eq(w4t_st_get(f, "self_attn.q_proj.packed", &pv), 0);
    ck_assert_int_eq(w4t_st_get(f, "self_attn.q_proj.scales", &sv), 0);
    for (r = 0; r < 128; r++)
        for (c = 0; c < 128; c++) {
            unsigned b = pv.data[r * 64 + c / 2];
            unsigned code = c % 2 ? b >> 4 : b & 15u;
            uint16_t h;
            float dec;
            memcpy(&h, sv.data + 2 * (r * 4 + c / 32), 2);
            dec = (float)((int)code - 8) * qb_f16_to_f32(h);
            ck_assert_uint_eq(code, t->codes[r * 128 + perm[c]]);
            ck_assert(memcmp(&dec, &t->data[r * 128 + perm[c]], 4) == 0);
        }
    man = load_json(&s, "manifest.json");
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(man, "features"), 0)->valuestring,
                     "input_permutation");
    mt = manifest_tensor(man, "layer_00.safetensors:self_attn.q_proj");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(mt, "exact")));
    cJSON_Delete(man);
    qbt_mem_sink_free(&s);

    /* default act_order=requant: no perm, no feature, not exact */
    qbt_mem_sink_init(&s);
    ck_assert(w4t_convert(m, &s, params("32", NULL, NULL, NULL)) == QB_OK);
    ck_assert_int_ne(
        w4t_st_get(qbt_mem_sink_find(&s, "layer_00.safetensors"), "self_attn.q_proj.perm", &permv), 0);
    man = load_json(&s, "manifest.json");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(man, "features")), 0);
    mt = manifest_tensor(man, "layer_00.safetensors:self_attn.q_proj");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(mt, "exact")));
    cJSON_Delete(man);
    qbt_mem_sink_free(&s);

    /* permute with group_size 64: target groups would straddle source
     * groups, so no perm; requantized in source order */
    qbt_mem_sink_init(&s);
    ck_assert(w4t_convert(m, &s, params("64", NULL, NULL, "permute")) == QB_OK);
    ck_assert_int_ne(
        w4t_st_get(qbt_mem_sink_find(&s, "layer_00.safetensors"), "self_attn.q_proj.perm", &permv), 0);
    man = load_json(&s, "manifest.json");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(man, "features")), 0);
    cJSON_Delete(man);
    qbt_mem_sink_free(&s);
    w4t_model_free(m);
    free(m);
}
END_TEST

/* A lm_head written as int4 when asked. */
START_TEST(test_quantized_head)
{
    w4t_model *m = calloc(1, sizeof *m);
    qbt_mem_sink s;
    cJSON *man;
    int exact;
    double rel;
    w4t_model_dense(m, "llama", 1, 64, 64, 16, 0, 0, 0, 0);
    qbt_mem_sink_init(&s);
    ck_assert_msg(w4t_convert(m, &s, params(NULL, NULL, "quantized", NULL)) == QB_OK, "%s",
                  qbt_host_last_error());
    rel = check_linear(&s, "lm_head.safetensors", "lm_head", w4t_find(m, "lm_head.weight"), 128,
                       &exact);
    ck_assert(rel > 0 && rel < W4T_REL_BOUND);
    man = load_json(&s, "manifest.json");
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(man, "features"), 0)->valuestring,
                     "quantized_lm_head");
    ck_assert_str_eq(cJSON_GetObjectItem(man, "lm_head")->valuestring, "quantized");
    (void)manifest_tensor(man, "lm_head.safetensors:lm_head");
    cJSON_Delete(man);
    qbt_mem_sink_free(&s);
    w4t_model_free(m);
    free(m);
}
END_TEST

/* Non-finite source values are an error naming the tensor and row. */
START_TEST(test_nan_refused)
{
    w4t_model *m = calloc(1, sizeof *m);
    qbt_mem_sink s;
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 0, 0, 0, 0);
    w4t_find(m, "model.layers.0.mlp.gate_proj.weight")->data[3 * 16 + 2] = NAN;
    qbt_mem_sink_init(&s);
    ck_assert_int_eq(w4t_convert(m, &s, NULL), QB_E_FORMAT);
    ck_assert_msg(strstr(qbt_host_last_error(), "model.layers.0.mlp.gate_proj.weight: row 3") != NULL,
                  "%s", qbt_host_last_error());
    qbt_mem_sink_free(&s);
    w4t_model_free(m);
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 0, 0, 0, 0);
    w4t_find(m, "model.norm.weight")->data[1] = 1e6f; /* overflows F16 */
    qbt_mem_sink_init(&s);
    ck_assert_int_eq(w4t_convert(m, &s, NULL), QB_E_RANGE);
    ck_assert(strstr(qbt_host_last_error(), "model.norm.weight") != NULL);
    qbt_mem_sink_free(&s);
    w4t_model_free(m);
    free(m);
}
END_TEST

/* write_tensor outside the planned order is refused. */
START_TEST(test_order_enforced)
{
    w4t_model *m = calloc(1, sizeof *m);
    qbt_mem_sink s;
    w4w_ctx ctx = {qbt_host()};
    qb_writer_handle w = NULL;
    size_t order[64];
    qb_param none[1];
    memset(none, 0, sizeof none);
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 0, 0, 0, 0);
    qbt_mem_sink_init(&s);
    ck_assert_int_eq(w4w_writer_vtable.begin(&ctx, &s.sink, &m->src, none, order, &w), QB_OK);
    ck_assert_int_eq(w4w_writer_vtable.write_tensor(w, order[1]), QB_E_INVALID);
    ck_assert_int_eq(w4w_writer_vtable.write_tensor(w, order[0]), QB_OK);
    ck_assert_int_eq(w4w_writer_vtable.finish(w), QB_E_INVALID); /* incomplete */
    qbt_mem_sink_free(&s);
    w4t_model_free(m);
    free(m);
}
END_TEST

/* Tokenizer files copied; chat_template put into tokenizer_config.json. */
START_TEST(test_tokenizer_and_template)
{
    w4t_model *m = calloc(1, sizeof *m);
    qbt_mem_sink s;
    char dir[] = "/tmp/w4t_tokXXXXXX", path[256];
    cJSON *tc;
    FILE *f;
    ck_assert(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    f = fopen(path, "w");
    fputs("{\"model\":{}}", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    f = fopen(path, "w");
    fputs("{\"bos_token\":\"<s>\",\"chat_template\":\"old\"}", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/model.safetensors", dir); /* not a tokenizer file */
    f = fopen(path, "w");
    fputs("x", f);
    fclose(f);
    w4t_model_dense(m, "llama", 1, 16, 16, 8, 0, 0, 0, 0);
    m->info.tokenizer_dir = dir;
    m->info.chat_template = "{{ messages }}";
    m->info.generation_config_json = "{\"bos_token_id\": 5}";
    qbt_mem_sink_init(&s);
    ck_assert_msg(w4t_convert(m, &s, NULL) == QB_OK, "%s", qbt_host_last_error());
    ck_assert_uint_eq(qbt_mem_sink_find(&s, "tokenizer.json")->len, 12);
    ck_assert(qbt_mem_sink_find(&s, "model.safetensors") == NULL);
    tc = load_json(&s, "tokenizer_config.json");
    ck_assert_str_eq(cJSON_GetObjectItem(tc, "chat_template")->valuestring, "{{ messages }}");
    ck_assert_str_eq(cJSON_GetObjectItem(tc, "bos_token")->valuestring, "<s>");
    cJSON_Delete(tc);
    ck_assert_mem_eq(qbt_mem_sink_find(&s, "generation_config.json")->data, "{\"bos_token_id\": 5}",
                     19);
    {
        cJSON *man = load_json(&s, "manifest.json");
        check_manifest_files(&s, man);
        cJSON_Delete(man);
    }
    qbt_mem_sink_free(&s);
    unlink(path);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    unlink(path);
    rmdir(dir);
    w4t_model_free(m);
    free(m);
}
END_TEST

/* The architectures the writer declares to the host are exactly those
 * its table knows: a missing one would be refused before supports(). */
START_TEST(test_declared_architectures)
{
    size_t n = 0;
    for (n = 0; w4w_arch_names[n]; n++) {
        const w4w_arch *a = w4w_arch_find(w4w_arch_names[n]);
        ck_assert_msg(a != NULL, "%s declared but not in the table", w4w_arch_names[n]);
        ck_assert_str_eq(a->model_type, w4w_arch_names[n]);
    }
    ck_assert_uint_eq(n, w4w_arch_count());
    {
        /* the one architecture table (qb_archs.h): its QB_ARCH_W4A16 rows
         * are exactly this writer's layouts, with the same class names */
        size_t k, nt, rows = 0;
        const qb_arch_entry *t = qb_arch_table(&nt);
        for (k = 0; k < nt; k++) {
            const w4w_arch *a = w4w_arch_find(t[k].model_type);
            ck_assert_msg(!a == !(t[k].flags & QB_ARCH_W4A16), "%s: qb_archs.h says %s",
                          t[k].model_type, a ? "no W4A16 layout" : "W4A16");
            if (a)
                ck_assert_str_eq(a->hf_class, t[k].hf_class);
            rows += a != NULL;
        }
        ck_assert_uint_eq(rows, w4w_arch_count());
    }
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("sm86-w4a16-writer");
    TCase *tc = tcase_create("writer");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_llama_untied_g32);
    tcase_add_test(tc, test_declared_architectures);
    tcase_add_test(tc, test_llama_odd_cols_short_group);
    tcase_add_test(tc, test_mistral_tied_g128);
    tcase_add_test(tc, test_qwen2_biases);
    tcase_add_test(tc, test_gemma2_norms_tied);
    tcase_add_test(tc, test_qwen3_qk_norm);
    tcase_add_test(tc, test_layer_file_digits);
    tcase_add_test(tc, test_unknown_tensor_named);
    tcase_add_test(tc, test_missing_projection);
    tcase_add_test(tc, test_shape_and_arch_errors);
    tcase_add_test(tc, test_options_refused);
    tcase_add_test(tc, test_tied_head_equal_and_different);
    tcase_add_test(tc, test_tie_default_by_arch);
    tcase_add_test(tc, test_exact_repack);
    tcase_add_test(tc, test_repack_decision);
    tcase_add_test(tc, test_quantized_head);
    tcase_add_test(tc, test_act_order_permute);
    tcase_add_test(tc, test_nan_refused);
    tcase_add_test(tc, test_order_enforced);
    tcase_add_test(tc, test_tokenizer_and_template);
    suite_add_tcase(s, tc);
    return s;
}

