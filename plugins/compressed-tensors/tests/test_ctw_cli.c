/*
 * CLI tests of the compressed-tensors writer through the built `quantbridge`
 * ($QB_TEST_BIN): GPTQ and AWQ fixtures (tests/gen) converted with
 * `--writer compressed-tensors --verify`: the integer codes carry over
 * (verify holds the declared tensors to bit equality and reports 100 %
 * exact), config.json's quantization_config says what was written, act-order
 * is requantized by default and kept with act_order=g_idx, GPTQ v1's
 * zero 0 carries over, and --dry-run writes nothing.
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "gen_gptq.h"
#include "qbt_fs.h"
#include "qbt_report.h"
#include "qbt_run.h"

static char *tmp;

static void setup(void)
{
    tmp = qbt_tmpdir("ctw-cli");
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

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *s;
    cJSON *j;
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    s = calloc(1, (size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), n);
    fclose(f);
    j = cJSON_Parse(s);
    free(s);
    ck_assert_ptr_nonnull(j);
    return j;
}

static void gptq(const char *dir, int sym, int act_order, int v1_zero0)
{
    qbt_gptq_spec s = {.bits = 4, .group_size = 128, .sym = sym, .act_order = act_order,
                       .label = 1, .n_shards = 1, .seed = 41, .v1_zero0 = v1_zero0};
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    ck_assert_int_eq(qbt_gptq_write(dir, &s, NULL), 0);
}

/* Converts with --verify; returns the output text (free). */
static char *convert(const char *src, const char *out, const char *extra, int want_rc)
{
    char args[4096], *text = NULL;
    int rc;
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer compressed-tensors "
             "--verify %s", src, out, extra);
    rc = qbt_run_line(args, &text);
    ck_assert_msg(rc == want_rc, "exit %d (want %d): %s", rc, want_rc, text);
    return text;
}

static const cJSON *qcfg_of(cJSON *cfg)
{
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(cfg, "quantization_config");
    ck_assert_ptr_nonnull(q);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(q, "quant_method")->valuestring,
                     "compressed-tensors");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(q, "format")->valuestring, "pack-quantized");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(q, "quantization_status")->valuestring,
                     "compressed");
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(q, "ignore"), 0)
                         ->valuestring, "lm_head");
    return q;
}

START_TEST(gptq_sym_codes_carry_over)
{
    char *out;
    cJSON *cfg;
    const cJSON *g0, *w;
    gptq(sub("src"), 1, 0, 0);
    out = convert(sub("src"), sub("ct"), "", 0);
    ck_assert_msg(strstr(out, "verify: PASS") && strstr(out, "100.0 % of quantized weights exact"),
                  "%s", out);
    free(out);
    cfg = read_json(sub("ct/config.json"));
    g0 = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(qcfg_of(cfg), "config_groups"), "group_0");
    ck_assert_ptr_nonnull(g0);
    w = cJSON_GetObjectItemCaseSensitive(g0, "weights");
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(w, "num_bits")->valueint, 4);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(w, "symmetric")));
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(w, "actorder"));
    /* the fixture's source dtype is f16 and its scales f16: the model stays f16 */
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cfg, "torch_dtype")->valuestring, "float16");
    cJSON_Delete(cfg);
}
END_TEST

START_TEST(awq_zero_points_carry_over)
{
    qbt_awq_spec s = {.gemv = 0, .zero_point = 1, .group_size = 128, .n_shards = 1, .seed = 42};
    char *out;
    cJSON *cfg;
    const cJSON *groups, *g;
    ck_assert_int_eq(mkdir(sub("awq"), 0755), 0);
    ck_assert_int_eq(qbt_awq_write(sub("awq"), &s, NULL), 0);
    out = convert(sub("awq"), sub("ct"), "", 0);
    ck_assert_msg(strstr(out, "verify: PASS") && strstr(out, "100.0 % of quantized weights exact"),
                  "%s", out);
    free(out);
    cfg = read_json(sub("ct/config.json"));
    groups = cJSON_GetObjectItemCaseSensitive(qcfg_of(cfg), "config_groups");
    cJSON_ArrayForEach(g, groups)
        ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(g, "weights"), "symmetric")));
    cJSON_Delete(cfg);
}
END_TEST

START_TEST(act_order_requantized_or_kept_with_g_idx)
{
    char *out;
    cJSON *cfg;
    const cJSON *g;
    int seen = 0;
    gptq(sub("src"), 1, 1, 0);
    out = convert(sub("src"), sub("ct"), "", 0);
    ck_assert_msg(strstr(out, "verify: PASS") && !strstr(out, "100.0 % of quantized"), "%s", out);
    free(out);
    ck_assert_int_ge(qbt_report_matches_verify(sub("src"), sub("ct"), "compressed-tensors"), 1);
    out = convert(sub("src"), sub("ct2"), "--option act_order=g_idx", 0);
    ck_assert_msg(strstr(out, "verify: PASS") && strstr(out, "100.0 % of quantized weights exact"),
                  "%s", out);
    free(out);
    cfg = read_json(sub("ct2/config.json"));
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(qcfg_of(cfg), "config_groups")) {
        const cJSON *ao = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(g, "weights"), "actorder");
        seen += cJSON_IsString(ao) && strcmp(ao->valuestring, "group") == 0;
    }
    ck_assert_int_ge(seen, 1);
    ck_assert_int_eq(qbt_report_matches_verify(sub("src"), sub("ct2"), "compressed-tensors"), 0);
    cJSON_Delete(cfg);
}
END_TEST

START_TEST(gptq_v1_zero_0_carries_over)
{
    /* asymmetric v1 with real zeros of 0: the reader gives zero 0 (the
     * reference kernels' (field + 1) & mask), which int4 holds */
    char *out;
    gptq(sub("src"), 0, 0, 1);
    out = convert(sub("src"), sub("ct"), "", 0);
    ck_assert_msg(strstr(out, "verify: PASS") && strstr(out, "100.0 % of quantized weights exact"),
                  "%s", out);
    free(out);
}
END_TEST

START_TEST(dry_run_writes_nothing)
{
    char args[2048], *out = NULL;
    struct stat sb;
    gptq(sub("src"), 1, 0, 0);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer "
             "compressed-tensors --dry-run", sub("src"), sub("ct"));
    ck_assert_int_eq(qbt_run_line(args, &out), 0);
    ck_assert_msg(qbt_count_lines(out, "exact ") >= 14, "%s", out);
    free(out);
    ck_assert_int_ne(stat(sub("ct"), &sb), 0);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("ctw_cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, gptq_sym_codes_carry_over);
    tcase_add_test(tc, awq_zero_points_carry_over);
    tcase_add_test(tc, act_order_requantized_or_kept_with_g_idx);
    tcase_add_test(tc, gptq_v1_zero_0_carries_over);
    tcase_add_test(tc, dry_run_writes_nothing);
    suite_add_tcase(s, tc);
    return s;
}
