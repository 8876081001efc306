/*
 * CLI-level tests of the three 4-bit float sources through the built
 * `quantbridge` ($QB_TEST_BIN with the in-tree plugins): compressed-tensors
 * nvfp4-pack-quantized and mxfp4-pack-quantized, ModelOpt NVFP4 (side file,
 * config.json, both). Each is claimed by its own reader only (the others
 * probe 0, and modelopt probes 0 on compressed-tensors and fp8 fixtures);
 * `convert --writer hf-dense --option dtype=f32` equals the generator's
 * ground truth bit for bit; the default sm86-w4a16 conversion requantizes
 * every FP4 linear with its rel_rmse recorded in the manifest and `verify`
 * passes (exit 0).
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <quantbridge/quantbridge.h>

#include "gen_fp4.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_run.h"

static char *tmp;

static void setup(void)
{
    tmp = qbt_tmpdir("fp4-cli");
    ck_assert_ptr_nonnull(tmp);
    ck_assert_ptr_nonnull(getenv("QB_TEST_BIN"));
}

static void teardown(void)
{
    qbt_rmtree(tmp);
    free(tmp);
}

static char *sub(const char *name)
{
    static char b[4][1024];
    static int k;
    char *p = b[k++ & 3];
    snprintf(p, 1024, "%s/%s", tmp, name);
    return p;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *s;
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    s = calloc(1, (size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), n);
    fclose(f);
    return s;
}

/* Probe score of reader `name` in `inspect` output ("  name   90 ..."), or -1. */
static int score_of(const char *out, const char *name)
{
    const char *p = out;
    size_t n = strlen(name);
    while ((p = strstr(p, name)) != NULL) {
        if ((p == out || p[-1] == ' ') && p[n] == ' ') {
            int v;
            if (sscanf(p + n, " %d", &v) == 1)
                return v;
        }
        p += n;
    }
    return -1;
}

static void check_claims(const char *src, const char *reader)
{
    static const char *const readers[] = {"compressed-tensors", "modelopt", "fp8", "hf-dense",
                                          NULL};
    char args[2048], *out;
    size_t i;

    snprintf(args, sizeof(args), "inspect '%s'", src);
    ck_assert_int_eq(qbt_run_line(args, &out), 0);
    ck_assert_msg(score_of(out, reader) >= 80, "%s: %s", reader, out);
    for (i = 0; readers[i]; i++)
        if (strcmp(readers[i], reader) != 0)
            ck_assert_msg(score_of(out, readers[i]) < 50, "%s claims %s: %s", readers[i], src,
                          out);
    free(out);
}

static void check_hf_dense(const char *src, const qbt_fp4_model *truth)
{
    const qb_host *h = qbt_host();
    const qb_st_api *api = h->safetensors;
    char args[4096], *out;
    qb_st_set *set = NULL;
    size_t i, n_fp4 = 0;
    int64_t e;

    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --writer hf-dense "
             "--option dtype=f32", src, sub("hf"));
    ck_assert_msg(qbt_run_line(args, &out) == 0, "convert failed: %s", out);
    free(out);
    ck_assert_int_eq(api->open_dir(h, sub("hf"), &set), QB_OK);
    ck_assert_uint_eq(api->count(set), truth->n + truth->dense->n);
    for (i = 0; i < api->count(set); i++) {
        const qb_st_tensor *t = api->tensor(set, i);
        const qbt_fp4_lin *f = qbt_fp4_find(truth, t->name);
        const qbt_cq_lin *d = f ? NULL : qbt_cq_find(truth->dense, t->name);
        int64_t K;
        ck_assert_msg(f || d, "unexpected %s", t->name);
        ck_assert_int_eq(t->dtype, QB_DT_F32);
        K = f ? f->K : d->K;
        for (e = 0; e < (f ? f->N : d->N) * K; e++) {
            float got, want = f ? qbt_fp4_value(f, e / K, e % K) : qbt_cq_value(d, e / K, e % K);
            memcpy(&got, t->data + 4 * e, 4);
            ck_assert_msg(memcmp(&got, &want, 4) == 0, "%s (%lld): %.9g, want %.9g", t->name,
                          (long long)e, (double)got, (double)want);
        }
        n_fp4 += f != NULL;
    }
    ck_assert_uint_eq(n_fp4, truth->n);
    api->close(set);
    qbt_rmtree(sub("hf"));
}

static void check_w4a16(const char *src, const char *enc_prefix, size_t want)
{
    char args[4096], *out, *text, mpath[1100];
    cJSON *m;
    const cJSON *t;
    size_t n = 0;

    snprintf(args, sizeof(args), "convert --source '%s' --output '%s'", src, sub("w4"));
    ck_assert_msg(qbt_run_line(args, &out) == 0, "convert failed: %s", out);
    free(out);
    snprintf(mpath, sizeof(mpath), "%s/manifest.json", sub("w4"));
    text = slurp(mpath);
    m = cJSON_Parse(text);
    ck_assert_ptr_nonnull(m);
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(m, "tensors")) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(t, "source_encoding");
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(t, "exact");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(t, "rel_rmse");
        if (!cJSON_IsString(e) || strncmp(e->valuestring, enc_prefix, strlen(enc_prefix)))
            continue;
        n++;
        /* E2M1 under E4M3/E8M0 group scales is no int4 grid: requantized, error reported */
        ck_assert(cJSON_IsFalse(x));
        ck_assert_msg(cJSON_IsNumber(r) && r->valuedouble > 0.0 && r->valuedouble < 0.2,
                      "%s rel_rmse", t->string);
    }
    ck_assert_uint_eq(n, want);
    cJSON_Delete(m);
    free(text);
    snprintf(args, sizeof(args), "verify --source '%s' --converted '%s'", src, sub("w4"));
    ck_assert_msg(qbt_run_line(args, &out) == 0, "verify failed: %s", out);
    free(out);
    qbt_rmtree(sub("w4"));
}

static void run_form(const char *name, qbt_fp4_spec s, const char *reader, const char *enc)
{
    qbt_fp4_model *truth = NULL;
    const char *src = sub(name);
    char keep[1024];
    snprintf(keep, sizeof(keep), "%s", src);
    ck_assert_int_eq(qbt_fp4_write(keep, &s, &truth), 0);
    check_claims(keep, reader);
    check_hf_dense(keep, truth);
    check_w4a16(keep, enc, truth->n);
    qbt_fp4_model_free(truth);
}

START_TEST(ct_nvfp4)
{
    run_form("ct-nv", (qbt_fp4_spec){.form = QBT_FP4_CT_NVFP4, .exclude = 1, .shards = 2,
                                     .seed = 51}, "compressed-tensors", "ct nvfp4");
}
END_TEST

START_TEST(ct_mxfp4)
{
    run_form("ct-mx", (qbt_fp4_spec){.form = QBT_FP4_CT_MXFP4, .shards = 1, .seed = 52},
             "compressed-tensors", "ct mxfp4");
}
END_TEST

START_TEST(modelopt_side_file)
{
    run_form("mo-side", (qbt_fp4_spec){.form = QBT_FP4_MODELOPT, .mo_config = 0, .shards = 1,
                                       .seed = 53}, "modelopt", "modelopt nvfp4");
}
END_TEST

START_TEST(modelopt_config_and_exclude)
{
    run_form("mo-both", (qbt_fp4_spec){.form = QBT_FP4_MODELOPT, .mo_config = 2, .exclude = 1,
                                       .shards = 2, .seed = 54}, "modelopt", "modelopt nvfp4");
}
END_TEST

START_TEST(modelopt_leaves_other_formats_alone)
{
    qbt_ct_spec c = {.format = "pack-quantized", .bits = 4, .sym = 1, .strategy = QBT_CQ_GROUP,
                     .gs = 32, .shards = 1, .seed = 55};
    qbt_fp8_spec f = {.strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .shards = 1, .seed = 56};
    char a[1024], b[1024];
    snprintf(a, sizeof(a), "%s", sub("ct-int4"));
    snprintf(b, sizeof(b), "%s", sub("fp8"));
    ck_assert_int_eq(qbt_ct_write(a, &c, NULL), 0);
    ck_assert_int_eq(qbt_fp8_write(b, &f, NULL), 0);
    check_claims(a, "compressed-tensors");
    check_claims(b, "fp8");
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("fp4-cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, ct_nvfp4);
    tcase_add_test(tc, ct_mxfp4);
    tcase_add_test(tc, modelopt_side_file);
    tcase_add_test(tc, modelopt_config_and_exclude);
    tcase_add_test(tc, modelopt_leaves_other_formats_alone);
    suite_add_tcase(s, tc);
    return s;
}
