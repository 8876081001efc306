/*
 * CLI tests of the compressed-tensors writer on NVFP4 sources (issue 29;
 * the e2m1 grids of ABI 1.5) through the built `quantbridge`
 * ($QB_TEST_BIN), with the generator's fixtures (tests/gen/gen_fp4.c) as
 * ground truth:
 *   - compressed-tensors nvfp4-pack-quantized: weight_packed, weight_scale
 *     and weight_global_scale come out byte for byte as generated; every
 *     linear reported exact;
 *   - ModelOpt NVFP4 with a power-of-two weight_scale_2: the same codes and
 *     e4m3 bytes, weight_global_scale = 1 / weight_scale_2 exactly, exact;
 *   - ModelOpt NVFP4 with an arbitrary weight_scale_2: the same codes and
 *     e4m3 bytes, global scale 1 / weight_scale_2 rounded, reported
 *     quantized with an error of a last bit at most (relative RMS < 1e-6),
 *     which verify measures too (qbt_report_matches_verify_with, bounded at
 *     1e-6: verify has no default rule for an nvfp4 output);
 * and a ModelOpt source written with scheme=nvfp4 keeps its codes as well
 * (the scheme names the target, the grid still fits it).
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <quantbridge/qb_half.h>
#include <quantbridge/qb_safetensors.h>

#include "gen_fp4.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_report.h"
#include "qbt_run.h"

static char *tmp;

static void setup(void)
{
    tmp = qbt_tmpdir("ctw-nvfp4");
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

/* Converts src to out with the compressed-tensors writer (and --verify:
 * verify's default rule, when every linear should be exact). */
static void convert(const char *src, const char *out, const char *extra, int verify)
{
    char args[4096], *text = NULL;
    int rc;
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer compressed-tensors "
             "%s %s", src, out, verify ? "--verify" : "", extra);
    rc = qbt_run_line(args, &text);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, text);
    ck_assert_msg(!verify || strstr(text, "verify: PASS") != NULL, "%s", text);
    free(text);
}

static const qb_st_tensor *part(const qb_st_set *set, const char *module, const char *suffix)
{
    char name[256];
    const qb_st_tensor *t;
    snprintf(name, sizeof name, "%s%s", module, suffix);
    t = qbt_host()->safetensors->find(set, name);
    ck_assert_msg(t != NULL, "output has no %s", name);
    return t;
}

/* Every linear of the truth stored in `out` with its codes and e4m3 scale
 * bytes; the global scale as `want_global` says; returns how many global
 * scales were 1 / weight_scale_2 only after rounding. */
static int check_bytes(const qbt_fp4_model *m, const char *out)
{
    const qb_host *h = qbt_host();
    qb_st_set *set = NULL;
    size_t i;
    int rounded = 0;

    ck_assert_int_eq(h->safetensors->open_dir(h, out, &set), QB_OK);
    for (i = 0; i < m->n; i++) {
        const qbt_fp4_lin *l = &m->t[i];
        char module[128];
        const qb_st_tensor *p, *s, *g;
        float got, want;
        snprintf(module, sizeof module, "%.*s", (int)(strlen(l->name) - 7), l->name);
        p = part(set, module, ".weight_packed");
        s = part(set, module, ".weight_scale");
        g = part(set, module, ".weight_global_scale");
        ck_assert_int_eq(p->dtype, QB_DT_U8);
        ck_assert_int_eq(s->dtype, QB_DT_F8_E4M3);
        ck_assert_int_eq(g->dtype, QB_DT_F32);
        ck_assert_uint_eq(p->n_bytes, (uint64_t)(l->N * l->K / 2));
        ck_assert_uint_eq(s->n_bytes, (uint64_t)(l->N * l->K / 16));
        ck_assert_msg(memcmp(p->data, l->packed, (size_t)p->n_bytes) == 0,
                      "%s: codes differ from the source's", l->name);
        ck_assert_msg(memcmp(s->data, l->scale, (size_t)s->n_bytes) == 0,
                      "%s: e4m3 scales differ from the source's", l->name);
        memcpy(&got, g->data, 4);
        if (l->form == QBT_FP4_CT_NVFP4) {
            want = l->second;
        } else {
            /* computed here in double, then rounded: the exact reciprocal */
            want = (float)(1.0 / (double)l->second);
            rounded += (double)want * (double)l->second != 1.0;
        }
        ck_assert_msg(qb_f32_bits(got) == qb_f32_bits(want), "%s: global scale %.9g, want %.9g",
                      l->name, (double)got, (double)want);
    }
    h->safetensors->close(set);
    return rounded;
}

/* The report's actions for the linears of the truth: how many say `exact`
 * (the rest say `quantized`); *worst gets the largest relative RMS error. */
static size_t report_actions(const qbt_fp4_model *m, const char *out, double *worst)
{
    char path[1024], *text = NULL;
    cJSON *j, *ts, *e;
    size_t i, found = 0, exact = 0;
    snprintf(path, sizeof path, "%s/quantbridge-report.json", out);
    text = qbt_read_file(path, NULL);
    ck_assert_ptr_nonnull(text);
    j = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(j);
    ts = cJSON_GetObjectItemCaseSensitive(j, "tensors");
    ck_assert_ptr_nonnull(ts);
    *worst = 0.0;
    cJSON_ArrayForEach(e, ts) {
        const char *name = cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring;
        const char *action = cJSON_GetObjectItemCaseSensitive(e, "action")->valuestring;
        const cJSON *rel = cJSON_GetObjectItemCaseSensitive(e, "rel_rmse");
        for (i = 0; i < m->n; i++)
            if (strcmp(m->t[i].name, name) == 0)
                break;
        if (i == m->n)
            continue;
        found++;
        ck_assert_msg(strcmp(action, "exact") == 0 || strcmp(action, "quantized") == 0,
                      "%s: %s", name, action);
        exact += strcmp(action, "exact") == 0;
        if (cJSON_IsNumber(rel) && rel->valuedouble > *worst)
            *worst = rel->valuedouble;
    }
    ck_assert_uint_eq(found, m->n);
    cJSON_Delete(j);
    return exact;
}

START_TEST(ct_nvfp4_carries_over_byte_for_byte)
{
    qbt_fp4_spec s = {.form = QBT_FP4_CT_NVFP4, .shards = 1, .seed = 51};
    qbt_fp4_model *m = NULL;
    double worst;
    ck_assert_int_eq(qbt_fp4_write(sub("src"), &s, &m), 0);
    convert(sub("src"), sub("ct"), "", 1);
    ck_assert_int_eq(check_bytes(m, sub("ct")), 0);
    ck_assert_uint_eq(report_actions(m, sub("ct"), &worst), m->n);
    ck_assert(worst == 0.0);
    ck_assert_int_eq(qbt_report_matches_verify(sub("src"), sub("ct"), "compressed-tensors"), 0);
    qbt_fp4_model_free(m);
}
END_TEST

START_TEST(modelopt_power_of_two_scale_2_is_exact)
{
    qbt_fp4_spec s = {.form = QBT_FP4_MODELOPT, .shards = 1, .seed = 52, .pow2_second = 1};
    qbt_fp4_model *m = NULL;
    double worst;
    ck_assert_int_eq(qbt_fp4_write(sub("src"), &s, &m), 0);
    convert(sub("src"), sub("ct"), "", 1);
    ck_assert_int_eq(check_bytes(m, sub("ct")), 0);
    ck_assert_uint_eq(report_actions(m, sub("ct"), &worst), m->n);
    ck_assert(worst == 0.0);
    ck_assert_int_eq(qbt_report_matches_verify(sub("src"), sub("ct"), "compressed-tensors"), 0);
    qbt_fp4_model_free(m);
}
END_TEST

START_TEST(modelopt_arbitrary_scale_2_carried_and_measured)
{
    qbt_fp4_spec s = {.form = QBT_FP4_MODELOPT, .shards = 1, .seed = 53};
    qbt_fp4_model *m = NULL;
    double worst;
    size_t n_exact;
    int n_req;
    ck_assert_int_eq(qbt_fp4_write(sub("src"), &s, &m), 0);
    convert(sub("src"), sub("ct"), "--option scheme=nvfp4", 0);
    /* the generator's amax / 2688 has no exact reciprocal in float32 */
    ck_assert_int_gt(check_bytes(m, sub("ct")), 0);
    /* exact only where every e4m3 value divides by the rounded reciprocal as it
     * multiplies by weight_scale_2 (verify holds each exact claim below) */
    n_exact = report_actions(m, sub("ct"), &worst);
    ck_assert_msg(n_exact < m->n, "every linear exact: the fixture lost its point");
    ck_assert_msg(worst > 0.0 && worst < 1e-6, "relative RMS error %g: not the last bit", worst);
    /* an nvfp4 output has no default rule in verify: bound it at the last bit */
    n_req = qbt_report_matches_verify_with(sub("src"), sub("ct"), "compressed-tensors",
                                           "--max-rel-rmse 1e-6");
    ck_assert_int_eq(n_req, (int)(m->n - n_exact));
    qbt_fp4_model_free(m);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("ctw_nvfp4_cli");
    TCase *tc = tcase_create("nvfp4 sources");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, ct_nvfp4_carries_over_byte_for_byte);
    tcase_add_test(tc, modelopt_power_of_two_scale_2_is_exact);
    tcase_add_test(tc, modelopt_arbitrary_scale_2_carried_and_measured);
    suite_add_tcase(s, tc);
    return s;
}
