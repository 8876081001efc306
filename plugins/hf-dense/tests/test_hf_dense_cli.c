/*
 * CLI-level tests of the hf-dense reader through the built `quantbridge`
 * ($QB_TEST_BIN, in-tree config and plugins): inspect on generated
 * checkpoints, and clear failures (exit 1, one `quantbridge: error:` line
 * naming the file, no output left) for malformed or quantized sources.
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "qbt_run.h"
#include "gen_hf_dense.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_st_writer.h"

static char *tmp;

static void setup(void)
{
    tmp = qbt_tmpdir("hfd-cli");
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

START_TEST(inspect_generated_sharded)
{
    qbt_hfd_spec s = {.arch = "qwen3", .dtype = "f16", .layers = 2, .hidden = 64,
                      .intermediate = 96, .vocab = 40, .shards = 3, .seed = 5};
    char args[2048], *out;
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, sub("m")), 0);
    snprintf(args, sizeof(args), "inspect '%s'", sub("m"));
    ck_assert_int_eq(qbt_run_line(args, &out), 0);
    ck_assert_msg(strstr(out, "hf-dense") != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "qwen3"));
    ck_assert_ptr_nonnull(strstr(out, "model.layers.1.self_attn.k_norm.weight"));
    ck_assert_ptr_nonnull(strstr(out, "lm_head.weight"));
    ck_assert_ptr_nonnull(strstr(out, "f16"));
    free(out);
}
END_TEST

START_TEST(convert_malformed_fails_cleanly)
{
    static const unsigned char bad[24] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    char args[4096], *out;
    struct stat sb;
    FILE *f;
    ck_assert_int_eq(mkdir(sub("src"), 0777), 0);
    ck_assert_int_eq(qbt_write_text(sub("src/config.json"), "{\"model_type\": \"llama\"}"), 0);
    f = fopen(sub("src/model.safetensors"), "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bad, 1, sizeof(bad), f), sizeof(bad));
    fclose(f);
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s'", sub("src"), sub("out"));
    ck_assert_int_eq(qbt_run_line(args, &out), 1);
    ck_assert_msg(strstr(out, "quantbridge: error:") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "model.safetensors") != NULL, "%s", out);
    ck_assert_int_ne(stat(sub("out"), &sb), 0);
    free(out);
}
END_TEST

START_TEST(inspect_malformed_fails_cleanly)
{
    static const unsigned char bad[16] = {8, 0, 0, 0, 0, 0, 0, 0, '[', ']', ' ', ' ', ' ', ' ', ' ', ' '};
    char args[4096], *out;
    FILE *f;
    ck_assert_int_eq(mkdir(sub("src"), 0777), 0);
    ck_assert_int_eq(qbt_write_text(sub("src/config.json"), "{\"model_type\": \"llama\"}"), 0);
    f = fopen(sub("src/model.safetensors"), "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bad, 1, sizeof(bad), f), sizeof(bad));
    fclose(f);
    snprintf(args, sizeof(args), "inspect '%s'", sub("src"));
    ck_assert_int_eq(qbt_run_line(args, &out), 1);
    ck_assert_msg(strstr(out, "quantbridge: error:") != NULL, "%s", out);
    ck_assert_msg(strstr(out, sub("src/model.safetensors")) != NULL, "%s", out);
    ck_assert_msg(strstr(out, "not a JSON object") != NULL, "%s", out);
    free(out);
}
END_TEST

START_TEST(quantized_config_refused_by_name)
{
    qbt_hfd_spec s = {.arch = "llama", .dtype = "bf16", .layers = 1, .hidden = 64,
                      .intermediate = 96, .vocab = 40, .shards = 1, .seed = 5};
    char args[4096], *out;
    struct stat sb;
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, sub("q")), 0);
    ck_assert_int_eq(qbt_write_text(sub("q/config.json"),
                                    "{\"model_type\": \"llama\", \"quantization_config\": "
                                    "{\"quant_method\": \"bitsandbytes\"}}"),
                     0);
    snprintf(args, sizeof(args), "convert --format hf-dense --source '%s' --output '%s'", sub("q"),
             sub("out"));
    ck_assert_int_eq(qbt_run_line(args, &out), 1);
    ck_assert_msg(strstr(out, "quantbridge: error:") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "bitsandbytes") != NULL, "%s", out);
    ck_assert_int_ne(stat(sub("out"), &sb), 0);
    free(out);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("hf-dense-cli");
    TCase *c = tcase_create("cli");
    tcase_add_checked_fixture(c, setup, teardown);
    tcase_add_test(c, inspect_generated_sharded);
    tcase_add_test(c, convert_malformed_fails_cleanly);
    tcase_add_test(c, inspect_malformed_fails_cleanly);
    tcase_add_test(c, quantized_config_refused_by_name);
    suite_add_tcase(s, c);
    return s;
}
