/*
 * DeepSeek-V2/V3 (MLA attention, dense-then-MoE layers, routed + shared
 * experts, DeepSeek-V3's F32 router bias) end to end through the built
 * program ($QB_TEST_BIN with the in-tree config and plugins).
 *
 * Ground truth: the generator (tests/gen/gen_hf_dense.c) defines every
 * value from (seed, tensor name), so a test recomputes each tensor with
 * qbt_hfd_fill and rounds it to the tensor's storage dtype (qbt_hfd_storage:
 * bf16, or f32 for e_score_correction_bias). Checked here:
 *   - bf16 deepseek_v3 (q LoRA) and deepseek_v2 (V2-Lite: q_proj, no
 *     router bias) to hf-dense f32: every tensor present, bit-equal, nothing
 *     else, the DeepSeek config keys carried through;
 *   - to sm86-w4a16: every MLA linear, dense MLP, routed and shared expert
 *     of each layer in the manifest and nothing else; routers F16 of the
 *     f16-rounded values, the router bias F32 bit-equal; `verify
 *     --no-model-check` passes (the CPU forward pass does not run deepseek
 *     yet, so the model check would only report that) and `inspect` reads
 *     the output; read back to hf-dense f32, the bias and norms are exact and
 *     each linear within the writer's error cap; the W4A16 loader
 *     (libquantbridge-w4a16) serves the bias as QB_W4A16_DT_F32 and every
 *     MLA linear with its input width;
 *   - malformed sources exit 1 naming the tensor: kv_b_proj of the wrong
 *     width, a missing e_score_correction_bias (noaux_tc), an expert past
 *     n_routed_experts.
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

#include <quantbridge/qb_half.h>

#include <quantbridge/qb_w4a16.h>

#include "gen_hf_dense.h"
#include "qbt_args.h"
#include "qbt_fs.h"
#include "qbt_run.h"

static char g_tmp[512];

static void setup(void)
{
    const char *base = getenv("QB_TEST_TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%s/w4w_ds_XXXXXX", base ? base : "/tmp");
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

/* A safetensors file read whole: header JSON and data section. */
typedef struct stf {
    char *bytes;
    size_t len;
    cJSON *hdr;
    const uint8_t *data;
} stf;

static void st_open(const char *dir, const char *name, stf *f)
{
    char path[1024];
    uint64_t hl;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    memset(f, 0, sizeof *f);
    f->bytes = qbt_read_file(path, &f->len);
    ck_assert_msg(f->bytes && f->len >= 8, "%s unreadable", path);
    memcpy(&hl, f->bytes, 8);
    ck_assert(hl <= f->len - 8);
    f->hdr = cJSON_ParseWithLength(f->bytes + 8, (size_t)hl);
    ck_assert_ptr_nonnull(f->hdr);
    f->data = (const uint8_t *)f->bytes + 8 + hl;
}

static void st_close(stf *f)
{
    cJSON_Delete(f->hdr);
    free(f->bytes);
    memset(f, 0, sizeof *f);
}

static int st_count(const stf *f)
{
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, f->hdr) n += strcmp(e->string, "__metadata__") != 0;
    return n;
}

/* Tensor `name` of dtype and dims; fails the test when absent or different. */
static const uint8_t *st_get(const stf *f, const char *name, const char *dtype,
                             const qbt_hfd_tensor *t)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(f->hdr, name), *sh;
    int d;
    ck_assert_msg(e != NULL, "tensor %s missing", name);
    ck_assert_msg(strcmp(cJSON_GetObjectItem(e, "dtype")->valuestring, dtype) == 0, "%s: %s not %s",
                  name, cJSON_GetObjectItem(e, "dtype")->valuestring, dtype);
    sh = cJSON_GetObjectItem(e, "shape");
    ck_assert_int_eq(cJSON_GetArraySize(sh), t->n_dims);
    for (d = 0; d < t->n_dims; d++)
        ck_assert_int_eq((int64_t)cJSON_GetArrayItem(sh, d)->valuedouble, t->dims[d]);
    return f->data + (size_t)cJSON_GetArrayItem(cJSON_GetObjectItem(e, "data_offsets"), 0)
                         ->valuedouble;
}

static float rdf(const uint8_t *p, size_t i)
{
    float v;
    memcpy(&v, p + 4 * i, 4);
    return v;
}

static uint16_t rd16(const uint8_t *p, size_t i)
{
    uint16_t v;
    memcpy(&v, p + 2 * i, 2);
    return v;
}

/* ---- the fixtures ---------------------------------------------------------- */

/* 3 layers (1 dense, 2 MoE), 4 routed experts in 2 groups, q LoRA. */
static qbt_hfd_spec spec_v3(void)
{
    qbt_hfd_spec s = {.arch = "deepseek_v3", .dtype = "bf16", .layers = 3, .hidden = 128,
                      .intermediate = 192, .vocab = 64, .shards = 2, .seed = 21,
                      .n_routed_experts = 4, .first_k_dense = 1};
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    return s;
}

/* DeepSeek-V2-Lite's shape: no q LoRA (q_proj), 2 shared experts. */
static qbt_hfd_spec spec_v2(void)
{
    qbt_hfd_spec s = {.arch = "deepseek_v2", .dtype = "bf16", .layers = 2, .hidden = 128,
                      .intermediate = 160, .vocab = 48, .shards = 1, .seed = 5,
                      .n_routed_experts = 4, .first_k_dense = 1};
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_lt(s.q_lora_rank, 0);
    return s;
}

static qbt_hfd_spec spec_of(int i)
{
    return i == 0 ? spec_v3() : spec_v2();
}

static void gen(const qbt_hfd_spec *s, const char *dir)
{
    ck_assert_int_eq(qbt_hfd_write(s, dir), 0);
}

/* Layer of a generated tensor, -1 outside the decoder layers; *rest is
 * the module path after "model.layers.N.". */
static int layer_of(const char *name, const char **rest)
{
    int l, off = 0;
    if (sscanf(name, "model.layers.%d.%n", &l, &off) != 1 || off == 0)
        return -1;
    *rest = name + off;
    return l;
}

static int is_router(const char *rest)
{
    return strcmp(rest, "mlp.gate.weight") == 0;
}

/* ---- to hf-dense f32 ------------------------------------------------------- */

START_TEST(test_to_hf_dense_f32_exact)
{
    qbt_hfd_spec s = spec_of(_i);
    qbt_hfd_tensor *t = NULL;
    size_t n = 0, i, k;
    char src[700], out[700], args[2000], err[4096], path[800];
    stf f;
    char *cfg;
    cJSON *c;

    snprintf(src, sizeof src, "%s/src", g_tmp);
    snprintf(out, sizeof out, "%s/f32", g_tmp);
    gen(&s, src);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f32", src, out);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(qbt_hfd_tensors(&s, &t, &n), 0);
    st_open(out, "model.safetensors", &f);
    ck_assert_int_eq(st_count(&f), (int)n);
    for (i = 0; i < n; i++) {
        size_t ne = qbt_hfd_numel(&t[i]);
        float *want = malloc(ne * sizeof *want);
        const uint8_t *got = st_get(&f, t[i].name, "F32", &t[i]);
        qbt_hfd_fill(&s, &t[i], want);
        for (k = 0; k < ne; k++) {
            float w = qbt_hfd_round(qbt_hfd_storage(&s, &t[i]), want[k]), g = rdf(got, k);
            ck_assert_msg(memcmp(&w, &g, 4) == 0, "%s[%zu]: %g != %g", t[i].name, k, (double)g,
                          (double)w);
        }
        free(want);
    }
    st_close(&f);
    /* the config passes through with its DeepSeek keys */
    snprintf(path, sizeof path, "%s/config.json", out);
    cfg = qbt_read_file(path, NULL);
    c = cJSON_Parse(cfg);
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(cJSON_GetObjectItem(c, "model_type")->valuestring, s.arch);
    ck_assert_int_eq(cJSON_GetObjectItem(c, "kv_lora_rank")->valueint, s.kv_lora_rank);
    ck_assert_int_eq(cJSON_GetObjectItem(c, "n_routed_experts")->valueint, s.n_routed_experts);
    ck_assert_int_eq(cJSON_GetObjectItem(c, "first_k_dense_replace")->valueint, s.first_k_dense);
    ck_assert_str_eq(cJSON_GetObjectItem(c, "scoring_func")->valuestring,
                     _i == 0 ? "sigmoid" : "softmax");
    ck_assert_ptr_nonnull(
        cJSON_GetObjectItem(cJSON_GetObjectItem(c, "rope_scaling"), "mscale_all_dim"));
    cJSON_Delete(c);
    free(cfg);
    free(t);
}
END_TEST

/* ---- to sm86-w4a16 and back ------------------------------------------------ */

START_TEST(test_to_w4a16)
{
    qbt_hfd_spec s = spec_of(_i);
    qbt_hfd_tensor *t = NULL;
    size_t n = 0, i, k;
    char src[700], out[700], back[700], args[2000], err[4096], path[800], key[300], file[64];
    int n_linear = 0, saw_bias = 0, saw_q_a = 0, saw_q = 0, saw_shared = 0, saw_expert = 0;
    cJSON *man, *tensors;
    char *text;
    stf f;

    snprintf(src, sizeof src, "%s/src", g_tmp);
    snprintf(out, sizeof out, "%s/w4", g_tmp);
    snprintf(back, sizeof back, "%s/back", g_tmp);
    gen(&s, src);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer sm86-w4a16", src,
             out);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/manifest.json", out);
    text = qbt_read_file(path, NULL);
    man = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(man);
    ck_assert_str_eq(cJSON_GetObjectItem(man, "architecture")->valuestring, s.arch);
    tensors = cJSON_GetObjectItem(man, "tensors");
    ck_assert_int_eq(qbt_hfd_tensors(&s, &t, &n), 0);
    for (i = 0; i < n; i++) {
        const char *rest;
        int l = layer_of(t[i].name, &rest);
        size_t ne = qbt_hfd_numel(&t[i]);
        float *want;
        if (l < 0)
            continue;
        snprintf(file, sizeof file, "layer_%02d.safetensors", l);
        want = malloc(ne * sizeof *want);
        qbt_hfd_fill(&s, &t[i], want);
        if (t[i].kind == QBT_HFD_LINEAR && !is_router(rest)) {
            /* every linear of the layer is a packed W4A16 linear */
            snprintf(key, sizeof key, "%s:%.*s", file, (int)(strlen(rest) - 7), rest);
            ck_assert_msg(cJSON_GetObjectItemCaseSensitive(tensors, key) != NULL,
                          "manifest lacks %s", key);
            n_linear++;
            saw_q_a |= strstr(rest, "q_a_proj") != NULL;
            saw_q |= strcmp(rest, "self_attn.q_proj.weight") == 0;
            saw_shared |= strstr(rest, "shared_experts.") != NULL;
            saw_expert |= strstr(rest, "experts.3.down_proj") != NULL;
        } else {
            st_open(out, file, &f);
            if (t[i].kind == QBT_HFD_F32) {
                /* the router bias: F32, the source's bits */
                const uint8_t *got = st_get(&f, rest, "F32", &t[i]);
                for (k = 0; k < ne; k++)
                    ck_assert_float_eq(rdf(got, k), want[k]);
                saw_bias++;
            } else {
                /* routers and norms: F16 of the bf16 values */
                const uint8_t *got = st_get(&f, rest, "F16", &t[i]);
                for (k = 0; k < ne; k++)
                    ck_assert_uint_eq(rd16(got, k),
                                      qb_f32_to_f16(qbt_hfd_round(s.dtype, want[k])));
            }
            st_close(&f);
        }
        free(want);
    }
    /* nothing in the manifest beyond the generated linears */
    ck_assert_int_eq(cJSON_GetArraySize(tensors), n_linear);
    ck_assert_int_eq(saw_bias, _i == 0 ? s.layers - s.first_k_dense : 0);
    ck_assert_int_eq(saw_q_a, _i == 0);
    ck_assert_int_eq(saw_q, _i == 1);
    ck_assert(saw_shared && saw_expert);
    cJSON_Delete(man);

    {
        /* the runtime loader: the F32 bias and the MLA linears' widths */
        qb_w4a16_model *m = NULL;
        qb_w4a16_tensor lt;
        qb_w4a16_linear lin;
        char lerr[512];
        int64_t mla_v = (int64_t)s.heads * s.v_head_dim;
        ck_assert_msg(qb_w4a16_open(out, QB_W4A16_OPEN_VERIFY_SHA256, &m, lerr, sizeof lerr) == 0,
                      "%s", lerr);
        ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "self_attn.kv_b_proj", s.kv_lora_rank, &lin), 0);
        ck_assert_int_eq(lin.n, (int64_t)s.heads * (s.qk_nope_head_dim + s.v_head_dim));
        ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "self_attn.o_proj", mla_v, &lin), 0);
        ck_assert_int_eq(lin.n, s.hidden);
        if (_i == 0) {
            qbt_hfd_tensor bt = {.n_dims = 1, .dims = {s.n_routed_experts, 0},
                                 .kind = QBT_HFD_F32};
            float *want = malloc((size_t)s.n_routed_experts * sizeof *want);
            snprintf(bt.name, sizeof bt.name, "model.layers.1.mlp.gate.e_score_correction_bias");
            qbt_hfd_fill(&s, &bt, want);
            ck_assert_int_eq(qb_w4a16_linear_get(m, 0, "self_attn.q_b_proj", s.q_lora_rank, &lin),
                             0);
            ck_assert_int_eq(qb_w4a16_tensor_get(m, "layer_01.safetensors",
                                                 "mlp.gate.e_score_correction_bias", &lt),
                             0);
            ck_assert_int_eq(lt.dtype, QB_W4A16_DT_F32);
            ck_assert_int_eq(lt.dims[0], s.n_routed_experts);
            ck_assert_mem_eq(lt.data, want, (size_t)s.n_routed_experts * sizeof *want);
            free(want);
        }
        qb_w4a16_close(m);
    }
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --no-model-check", src, out);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s", err);
    snprintf(args, sizeof args, "inspect '%s'", out);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s", err);

    /* read back through the sm86-w4a16 reader */
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f32", out, back);
    ck_assert_msg(run_tool(args, err, sizeof err) == 0, "%s", err);
    st_open(back, "model.safetensors", &f);
    ck_assert_int_eq(st_count(&f), (int)n);
    for (i = 0; i < n; i++) {
        size_t ne = qbt_hfd_numel(&t[i]);
        float *want = malloc(ne * sizeof *want);
        const uint8_t *got = st_get(&f, t[i].name, "F32", &t[i]);
        double e2 = 0.0, r2 = 0.0;
        qbt_hfd_fill(&s, &t[i], want);
        for (k = 0; k < ne; k++) {
            float w = qbt_hfd_round(qbt_hfd_storage(&s, &t[i]), want[k]);
            if (t[i].kind == QBT_HFD_F32)
                ck_assert_float_eq(rdf(got, k), w);
            else if (t[i].kind == QBT_HFD_NORM)
                ck_assert_float_eq(rdf(got, k), qb_f16_to_f32(qb_f32_to_f16(w)));
            e2 += ((double)rdf(got, k) - w) * ((double)rdf(got, k) - w);
            r2 += (double)w * w;
        }
        /* the writer's sanity cap on 4-bit linears (plugins/sm86-w4a16/tests/test_e2e.c) */
        ck_assert_msg(sqrt(e2 / r2) < 0.35, "%s: rel rmse %g", t[i].name, sqrt(e2 / r2));
        free(want);
    }
    st_close(&f);
    free(t);
}
END_TEST

/* ---- malformed sources ------------------------------------------------------ */

static void expect_refused(const char *defect, const char *needle1, const char *needle2)
{
    qbt_hfd_spec s = spec_v3();
    char src[700], args[2000], err[4096];
    s.defect = defect;
    snprintf(src, sizeof src, "%s/bad", g_tmp);
    gen(&s, src);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s/out' --writer sm86-w4a16", src,
             g_tmp);
    ck_assert_int_eq(run_tool(args, err, sizeof err), 1);
    ck_assert_msg(strstr(err, needle1) && strstr(err, needle2), "%s", err);
}

START_TEST(test_kv_b_wrong_shape)
{
    expect_refused("kv_b_shape", "model.layers.0.self_attn.kv_b_proj.weight", "kv_lora_rank");
}
END_TEST

START_TEST(test_missing_router_bias)
{
    expect_refused("no_router_bias", "model.layers.1.mlp.gate.e_score_correction_bias",
                   "missing");
}
END_TEST

START_TEST(test_expert_past_config)
{
    expect_refused("extra_expert", "model.layers.1.mlp.experts.4.", "n_routed_experts");
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *su = suite_create("w4w_deepseek");
    TCase *tc = tcase_create("deepseek");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_to_hf_dense_f32_exact, 0, 2);
    tcase_add_loop_test(tc, test_to_w4a16, 0, 2);
    tcase_add_test(tc, test_kv_b_wrong_shape);
    tcase_add_test(tc, test_missing_router_bias);
    tcase_add_test(tc, test_expert_past_config);
    suite_add_tcase(su, tc);
    return su;
}
