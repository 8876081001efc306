/*
 * CLI tests of the mlx writer and reader through the built `quantbridge`
 * ($QB_TEST_BIN): GPTQ and AWQ fixtures (tests/gen) converted with
 * `--writer mlx --verify` (read back by the mlx reader): symmetric codes carry
 * over with the model's scales, asymmetric ones with float32 scales and
 * biases (scale_dtype auto), and are planned as requantized when the biases
 * must round (scale_dtype=model); act-order is quantized anew; config.json's
 * `quantization` says the group size and bits mlx-lm reads.
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
    tmp = qbt_tmpdir("mlx-cli");
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
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer mlx "
             "--verify %s", src, out, extra);
    rc = qbt_run_line(args, &text);
    ck_assert_msg(rc == want_rc, "exit %d (want %d): %s", rc, want_rc, text);
    return text;
}

static void quantization_is(const char *cfg_path, int bits, int gs)
{
    cJSON *cfg = read_json(cfg_path);
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(cfg, "quantization");
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(q, "bits")->valueint, bits);
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(q, "group_size")->valueint, gs);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(q, "mode")->valuestring, "affine");
    ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(cfg, "quantization_config"));
    cJSON_Delete(cfg);
}

START_TEST(gptq_sym_codes_carry_over)
{
    char *out;
    gptq(sub("src"), 1, 0, 0);
    out = convert(sub("src"), sub("m"), "", 0);
    ck_assert_msg(strstr(out, "verify: PASS") && strstr(out, "100.0 % of quantized weights exact"),
                  "%s", out);
    free(out);
    quantization_is(sub("m/config.json"), 4, 128);
}
END_TEST

START_TEST(awq_exact_with_f32_biases_rounded_without)
{
    qbt_awq_spec s = {.gemv = 0, .zero_point = 1, .group_size = 128, .n_shards = 1, .seed = 42};
    char *out, args[2048];
    ck_assert_int_eq(mkdir(sub("awq"), 0755), 0);
    ck_assert_int_eq(qbt_awq_write(sub("awq"), &s, NULL), 0);
    out = convert(sub("awq"), sub("m"), "", 0);
    ck_assert_msg(strstr(out, "verify: PASS") && strstr(out, "100.0 % of quantized weights exact"),
                  "%s", out);
    free(out);
    quantization_is(sub("m/config.json"), 4, 128);
    ck_assert_int_eq(qbt_report_matches_verify(sub("awq"), sub("m"), "mlx"), 0);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer mlx --dry-run "
             "--option scale_dtype=model", sub("awq"), sub("m2"));
    ck_assert_int_eq(qbt_run_line(args, &out), 0);
    ck_assert_msg(qbt_count_lines(out, "bias -zero * scale rounded to float16") == 14, "%s", out);
    free(out);
}
END_TEST

START_TEST(act_order_quantized_anew)
{
    char *out;
    gptq(sub("src"), 1, 1, 0);
    out = convert(sub("src"), sub("m"), "--option group_size=32", 0);
    ck_assert_msg(strstr(out, "verify: PASS") && !strstr(out, "100.0 % of quantized"), "%s", out);
    free(out);
    ck_assert_int_ge(qbt_report_matches_verify(sub("src"), sub("m"), "mlx"), 1);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("mlx_cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, gptq_sym_codes_carry_over);
    tcase_add_test(tc, awq_exact_with_f32_biases_rounded_without);
    tcase_add_test(tc, act_order_quantized_anew);
    suite_add_tcase(s, tc);
    return s;
}
