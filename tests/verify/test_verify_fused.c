/*
 * `verify` and `convert --verify` on gpt-oss's fused expert tensors
 * (docs/verify.md, docs/w4a16-format.md "gpt-oss"): the sm86-w4a16 reader
 * serves gate_up_proj / down_proj back as [E, in, out] while the writer
 * grouped each expert part [out, in] along `in`, so the absmax baseline
 * must run down the fused tensor's columns. A tiny MXFP4 checkpoint
 * (qb-gen-mxfp4) and its bf16 form (hf-dense) converted by the built
 * program must pass with the default rule; gate and up swapped in one
 * expert, or two scale rows of one expert's down_proj swapped, must fail
 * naming the fused tensor. The bf16 form's baseline is recomputed here
 * from the source bytes in the parts' geometry (independent ground truth).
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

#include "gen_mxfp4.h"
#include "vt_util.h"

static char *tmp;
static char mx[4096], bf[4096], w4mx[4096], w4bf[4096];

static void run_ok(const char *args)
{
    char *out, *err;
    int rc = vt_run(args, &out, &err);
    ck_assert_msg(rc == 0, "%s -> %d\n%s%s", args, rc, out, err);
    free(out);
    free(err);
}

static void setup(void)
{
    qbt_mx_spec s;
    char args[12288];
    memset(&s, 0, sizeof s);
    qbt_mx_spec_defaults(&s);
    s.seed = 7;
    tmp = vt_tmpdir("fused");
    snprintf(mx, sizeof mx, "%s/mx", tmp);
    snprintf(bf, sizeof bf, "%s/bf", tmp);
    snprintf(w4mx, sizeof w4mx, "%s/w4mx", tmp);
    snprintf(w4bf, sizeof w4bf, "%s/w4bf", tmp);
    ck_assert_int_eq(qbt_mx_write(mx, &s), 0);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --group-size 32", mx, w4mx);
    run_ok(args);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=bf16", mx, bf);
    run_ok(args);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --group-size 32", bf, w4bf);
    run_ok(args);
}

static void teardown(void)
{
    vt_rmtree(tmp);
    free(tmp);
}

static int verify_json(const char *s, const char *c, cJSON **j, char **err)
{
    char args[12288], *out;
    int rc;
    snprintf(args, sizeof args,
             "verify --source '%s' --converted '%s' --json --no-model-check", s, c);
    rc = vt_run(args, &out, err);
    *j = cJSON_Parse(out);
    ck_assert_msg(*j != NULL, "%s: stdout is not JSON: %s", args, out);
    free(out);
    return rc;
}

static cJSON *tensor(cJSON *j, const char *name)
{
    cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "tensors"))
    {
        if (strcmp(cJSON_GetObjectItem(t, "name")->valuestring, name) == 0)
            return t;
    }
    ck_abort_msg("no tensor %s in the report", name);
    return NULL;
}

static double numv(cJSON *t, const char *k)
{
    cJSON *v = cJSON_GetObjectItem(t, k);
    ck_assert_msg(cJSON_IsNumber(v), "%s is not a number", k);
    return v->valuedouble;
}

/* Every fused expert weight is judged by the absmax rule, no group worse. */
static void check_fused_pass(cJSON *j)
{
    static const char *const names[] = {"mlp.experts.gate_up_proj", "mlp.experts.down_proj"};
    char name[128];
    int l, k;
    for (l = 0; l < 2; l++)
        for (k = 0; k < 2; k++) {
            cJSON *t;
            snprintf(name, sizeof name, "model.layers.%d.%s", l, names[k]);
            t = tensor(j, name);
            ck_assert_str_eq(cJSON_GetObjectItem(t, "status")->valuestring, "ok");
            ck_assert_str_eq(cJSON_GetObjectItem(t, "rule")->valuestring, "absmax");
            ck_assert_double_eq(numv(t, "n_worse_than_baseline"), 0.0);
            ck_assert_double_gt(numv(t, "baseline_rel_rmse"), 0.0);
        }
}

START_TEST(mxfp4_and_bf16_pass)
{
    cJSON *j;
    char *err;
    ck_assert_msg(verify_json(mx, w4mx, &j, &err) == 0, "%s", err);
    check_fused_pass(j);
    cJSON_Delete(j);
    free(err);
    ck_assert_msg(verify_json(bf, w4bf, &j, &err) == 0, "%s", err);
    check_fused_pass(j);
    cJSON_Delete(j);
    free(err);
}
END_TEST

/* convert --verify (no thresholds, the model check as it stands) passes. */
START_TEST(convert_verify_passes)
{
    char args[12288], out_dir[4200];
    snprintf(out_dir, sizeof out_dir, "%s/cv", tmp);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --verify", mx, out_dir);
    run_ok(args);
}
END_TEST

/* The absmax baseline of a bf16 fused tensor recomputed from the source
 * bytes: part q of expert e is [out, in] with element [c][k] =
 * fused[e][k][c * np + q], groups of 32 along k (w4a16-format.md). */
static double baseline(const char *file, const char *name, int64_t E, int64_t in, int64_t cols)
{
    size_t off, len, n;
    char *b;
    double se = 0.0, sa = 0.0;
    int64_t e, c, g, k;
    const int64_t gs = 32;
    vt_st_locate(file, name, &off, &len);
    ck_assert_uint_eq(len, (size_t)(E * in * cols * 2));
    b = vt_slurp(file, &n);
    for (e = 0; e < E; e++)
        for (c = 0; c < cols; c++) /* c = part row * np + q: every part row */
            for (g = 0; g < in; g += gs) {
                float x[32], amax = 0.0f, sc;
                int64_t m = in - g < gs ? in - g : gs;
                uint16_t h;
                uint32_t u;
                for (k = 0; k < m; k++) {
                    memcpy(&h, b + off + 2 * (size_t)((e * in + g + k) * cols + c), 2);
                    u = (uint32_t)h << 16;
                    memcpy(&x[k], &u, 4);
                    amax = fabsf(x[k]) > amax ? fabsf(x[k]) : amax;
                }
                sc = qb_f16_to_f32(qb_f32_to_f16(amax / 7.0f)); /* fp16 scales */
                for (k = 0; k < m; k++) {
                    float q = sc != 0.0f ? rintf(x[k] / sc) : 0.0f;
                    double d;
                    q = q > 7.0f ? 7.0f : q < -8.0f ? -8.0f : q;
                    d = (double)(q * sc) - x[k];
                    se += d * d;
                    sa += (double)x[k] * x[k];
                }
            }
    free(b);
    return sqrt(se / sa);
}

START_TEST(bf16_baseline_independent)
{
    cJSON *j, *t, *shape;
    char *err, file[4200];
    int l;
    snprintf(file, sizeof file, "%s/model.safetensors", bf);
    ck_assert_int_eq(verify_json(bf, w4bf, &j, &err), 0);
    for (l = 0; l < 2; l++) {
        char name[128];
        int k;
        for (k = 0; k < 2; k++) {
            snprintf(name, sizeof name, "model.layers.%d.mlp.experts.%s", l,
                     k ? "down_proj" : "gate_up_proj");
            t = tensor(j, name);
            shape = cJSON_GetObjectItem(t, "shape");
            ck_assert_double_eq_tol(
                numv(t, "baseline_rel_rmse"),
                baseline(file, name, (int64_t)cJSON_GetArrayItem(shape, 0)->valuedouble,
                         (int64_t)cJSON_GetArrayItem(shape, 1)->valuedouble,
                         (int64_t)cJSON_GetArrayItem(shape, 2)->valuedouble),
                1e-9);
        }
    }
    cJSON_Delete(j);
    free(err);
}
END_TEST

/* Swaps the bytes of tensors a and b (same size) of layer file lf. */
static void swap_tensors(const char *lf, const char *a, const char *b)
{
    size_t oa, la, ob, lb, n;
    char *buf = NULL, *t0;
    vt_st_locate(lf, a, &oa, &la);
    vt_st_locate(lf, b, &ob, &lb);
    ck_assert_uint_eq(la, lb);
    buf = vt_slurp(lf, &n);
    t0 = malloc(la);
    ck_assert_ptr_nonnull(t0);
    memcpy(t0, buf + oa, la);
    memcpy(buf + oa, buf + ob, la);
    memcpy(buf + ob, t0, la);
    vt_spit(lf, buf, n);
    free(t0);
    free(buf);
}

static void expect_fail(const char *conv, const char *fused, const char *other_layer_fused)
{
    cJSON *j;
    char *err;
    int rc = verify_json(mx, conv, &j, &err);
    ck_assert_msg(rc == 3, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(err, fused) != NULL, "%s", err);
    ck_assert_msg(strstr(err, "worse than the absmax rule") != NULL, "%s", err);
    ck_assert_str_eq(cJSON_GetObjectItem(tensor(j, fused), "status")->valuestring, "FAIL");
    ck_assert_str_eq(cJSON_GetObjectItem(tensor(j, other_layer_fused), "status")->valuestring,
                     "ok");
    ck_assert_int_eq(cJSON_GetObjectItem(j, "n_failed")->valueint, 1);
    cJSON_Delete(j);
    free(err);
}

START_TEST(gate_up_swapped_fails)
{
    char bad[4200];
    const char *lf;
    snprintf(bad, sizeof bad, "%s/bad", tmp);
    vt_copy_dir(w4mx, bad);
    lf = vt_path(bad, "layer_00.safetensors");
    swap_tensors(lf, "mlp.experts.1.gate_proj.packed", "mlp.experts.1.up_proj.packed");
    swap_tensors(lf, "mlp.experts.1.gate_proj.scales", "mlp.experts.1.up_proj.scales");
    vt_manifest_reseal(bad, "layer_00.safetensors");
    expect_fail(bad, "model.layers.0.mlp.experts.gate_up_proj",
                "model.layers.1.mlp.experts.gate_up_proj");
}
END_TEST

START_TEST(down_scale_rows_swapped_fails)
{
    char bad[4200], *b;
    const char *lf;
    size_t off, len, n, row, j2, rows = 64; /* down_proj [hidden 64, inter 96] */
    snprintf(bad, sizeof bad, "%s/bad", tmp);
    vt_copy_dir(w4mx, bad);
    lf = vt_path(bad, "layer_01.safetensors");
    vt_st_locate(lf, "mlp.experts.2.down_proj.scales", &off, &len);
    row = len / rows;
    b = vt_slurp(lf, &n);
    for (j2 = 1; j2 < rows && memcmp(b + off, b + off + j2 * row, row) == 0; j2++)
        ;
    ck_assert_uint_lt(j2, rows);
    {
        char t0[256];
        ck_assert_uint_le(row, sizeof t0);
        memcpy(t0, b + off, row);
        memcpy(b + off, b + off + j2 * row, row);
        memcpy(b + off + j2 * row, t0, row);
    }
    vt_spit(lf, b, n);
    free(b);
    vt_manifest_reseal(bad, "layer_01.safetensors");
    expect_fail(bad, "model.layers.1.mlp.experts.down_proj",
                "model.layers.0.mlp.experts.down_proj");
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("verify_fused");
    TCase *tc = tcase_create("fused");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, mxfp4_and_bf16_pass);
    tcase_add_test(tc, convert_verify_passes);
    tcase_add_test(tc, bf16_baseline_independent);
    tcase_add_test(tc, gate_up_swapped_fails);
    tcase_add_test(tc, down_scale_rows_swapped_fails);
    suite_add_tcase(s, tc);
    return s;
}
