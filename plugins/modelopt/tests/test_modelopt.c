/*
 * Tests of the modelopt reader plugin (plugins/modelopt), compiled into the
 * test with the real host services: the three configuration layouts of
 * tests/gen/gen_fp4.c against their ground truth bit for bit, the summary's
 * note on activation scales, the probe (ModelOpt directories only, never a
 * compressed-tensors or fp8 config) and the configuration refusals.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quantbridge/quantbridge.h>

#include "gen_fp4.h"
#include "qbt_fp4_check.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_st_writer.h"
#include "qbt_json_refusals.h"

static const qb_plugin *plugin(void)
{
    qb_negotiation neg = {sizeof(qb_negotiation), QB_MAKE_ABI(1, 0), QB_ABI_CURRENT, 0};
    const qb_plugin *p = NULL;
    ck_assert_int_eq(qb_plugin_entry_v1(&neg, qbt_host(), &p), QB_OK);
    ck_assert_str_eq(p->name, "modelopt");
    /* the e2m1 grid (ABI 1.5): qbt_fp4_check holds it to the truth */
    ck_assert_ptr_nonnull(p->reader->read_grid);
    return p;
}

static void run_good(const char *tag, qbt_fp4_spec spec, size_t want_quant)
{
    const qb_plugin *p = plugin();
    char *dir = qbt_tmpdir(tag), path[1024], why[512];
    qbt_fp4_model *truth = NULL;
    size_t nq = 0;

    snprintf(path, sizeof(path), "%s/model", dir);
    ck_assert_int_eq(qbt_fp4_write(path, &spec, &truth), 0);
    ck_assert_msg(qbt_fp4_check(p, path, truth, &nq, why, sizeof(why)) == 0, "%s: %s (%s)", tag,
                  why, qbt_host_last_error());
    ck_assert_uint_eq(nq, want_quant);
    qbt_fp4_model_free(truth);
    qbt_rmtree(dir);
    free(dir);
}

START_TEST(test_hf_quant_config_only)
{
    run_good("mo-side", (qbt_fp4_spec){.form = QBT_FP4_MODELOPT, .mo_config = 0, .shards = 1,
                                       .seed = 41}, 14);
}
END_TEST

START_TEST(test_config_json_only)
{
    run_good("mo-cfg", (qbt_fp4_spec){.form = QBT_FP4_MODELOPT, .mo_config = 1, .shards = 1,
                                      .seed = 42}, 14);
}
END_TEST

START_TEST(test_both_with_wildcard_exclude_sharded)
{
    /* layer 1 down_proj stays BF16, excluded by "model.layers.1.mlp.down*" */
    run_good("mo-both", (qbt_fp4_spec){.form = QBT_FP4_MODELOPT, .mo_config = 2, .exclude = 1,
                                       .shards = 3, .seed = 43}, 13);
}
END_TEST

/* Writes a good fixture and returns its directory (static buffer). */
static const char *fixture(char **tmp, int mo_config)
{
    static char path[1024];
    qbt_fp4_spec s = {.form = QBT_FP4_MODELOPT, .mo_config = mo_config, .shards = 1, .seed = 44};
    *tmp = qbt_tmpdir("mo-bad");
    snprintf(path, sizeof(path), "%s/model", *tmp);
    ck_assert_int_eq(qbt_fp4_write(path, &s, NULL), 0);
    return path;
}

static qb_status open_status(const char *dir)
{
    const qb_plugin *p = plugin();
    qb_reader_handle h = NULL;
    qb_status st = p->reader->open(p->ctx, dir, NULL, &h);
    if (st == QB_OK)
        p->reader->close(h);
    else
        ck_assert_ptr_null(h);
    return st;
}

/* config.json and hf_quant_config.json are read by the one strict parser
 * (sdk/kit/qbk_json.h). mo_config 2: both files. */
START_TEST(test_strict_json_config_and_side_file)
{
    char *tmp;
    const char *dir = fixture(&tmp, 2);
    ck_assert_int_eq(open_status(dir), QB_OK);
    qbt_json_refusals(dir, "config.json", "model_type", NULL, qbt_json_open_reader,
                      (void *)plugin(), NULL);
    qbt_json_refusals(dir, "hf_quant_config.json", "quantization", NULL, qbt_json_open_reader,
                      (void *)plugin(), NULL);
    qbt_rmtree(tmp);
    free(tmp);
}
END_TEST

static void write_side(const char *dir, const char *quantization)
{
    char path[1100], text[1024];
    snprintf(path, sizeof(path), "%s/hf_quant_config.json", dir);
    snprintf(text, sizeof(text), "{\"producer\": {\"name\": \"modelopt\"}, \"quantization\": %s}",
             quantization);
    ck_assert_int_eq(qbt_write_text(path, text), 0);
}

START_TEST(test_summary_notes_activation_scales)
{
    const qb_plugin *p = plugin();
    char *tmp = NULL;
    const char *dir = fixture(&tmp, 0);
    qb_reader_handle h = NULL;
    qb_model_info mi;

    ck_assert_int_eq(p->reader->open(p->ctx, dir, NULL, &h), QB_OK);
    memset(&mi, 0, sizeof(mi));
    mi.struct_size = sizeof(mi);
    ck_assert_int_eq(p->reader->get_model_info(h, &mi), QB_OK);
    ck_assert_msg(strstr(mi.source_summary, "14 activation scales (input_scale) ignored") &&
                      strstr(mi.source_summary, "hf_quant_config.json") &&
                      strstr(mi.source_summary, "14 quantized + 7 dense"), "summary: %s", mi.source_summary);
    p->reader->close(h);
    qbt_rmtree(tmp);
    free(tmp);
}
END_TEST

START_TEST(test_config_refusals)
{
    char *tmp = NULL;
    const char *dir = fixture(&tmp, 0);

    write_side(dir, "{\"quant_algo\": \"FP8\", \"exclude_modules\": [\"lm_head\"]}");
    ck_assert_int_eq(open_status(dir), QB_E_UNSUPPORTED);
    ck_assert_msg(strstr(qbt_host_last_error(), "hf_quant_config.json") &&
                      strstr(qbt_host_last_error(), "\"FP8\""), "%s", qbt_host_last_error());
    write_side(dir, "{\"quant_algo\": \"NVFP4_AWQ\"}");
    ck_assert_int_eq(open_status(dir), QB_E_UNSUPPORTED);
    ck_assert(strstr(qbt_host_last_error(), "NVFP4_AWQ"));
    write_side(dir, "{\"quant_algo\": \"NVFP4\", \"group_size\": 32}");
    ck_assert_int_eq(open_status(dir), QB_E_UNSUPPORTED);
    ck_assert(strstr(qbt_host_last_error(), "group_size"));
    write_side(dir, "{\"quant_algo\": \"NVFP4\", \"exclude_modules\": \"lm_head\"}");
    ck_assert_int_eq(open_status(dir), QB_E_FORMAT);
    ck_assert(strstr(qbt_host_last_error(), "exclude_modules"));
    /* a quantized module that the exclusions claim is dense */
    write_side(dir, "{\"quant_algo\": \"NVFP4\", \"exclude_modules\": [\"lm_head\", "
                    "\"*.0.self_attn.k_*\"]}");
    ck_assert_int_eq(open_status(dir), QB_E_MISMATCH);
    ck_assert_msg(strstr(qbt_host_last_error(), "model.layers.0.self_attn.k_proj.weight") &&
                      strstr(qbt_host_last_error(), "exclude_modules"), "%s",
                  qbt_host_last_error());
    write_side(dir, "{\"quant_algo\": \"NVFP4\"}");
    ck_assert_int_eq(open_status(dir), QB_OK);
    write_side(dir, "[]");
    ck_assert_int_eq(open_status(dir), QB_E_FORMAT);
    ck_assert(strstr(qbt_host_last_error(), "quantization"));
    qbt_rmtree(tmp);
    free(tmp);
}
END_TEST

START_TEST(test_sources_must_agree)
{
    char *tmp = NULL;
    const char *dir = fixture(&tmp, 2);

    ck_assert_int_eq(open_status(dir), QB_OK);
    write_side(dir, "{\"quant_algo\": \"W4A16_AWQ\"}");
    ck_assert_int_eq(open_status(dir), QB_E_UNSUPPORTED);
    ck_assert(strstr(qbt_host_last_error(), "W4A16_AWQ"));
    qbt_rmtree(tmp);
    free(tmp);
}
END_TEST

START_TEST(test_probe)
{
    const qb_plugin *p = plugin();
    static const char *const with_side[] = {"config.json", "hf_quant_config.json",
                                            "model.safetensors", NULL};
    static const char *const without[] = {"config.json", "model.safetensors", NULL};
    qb_probe_input in;

    memset(&in, 0, sizeof(in));
    in.struct_size = sizeof(in);
    in.is_dir = 1;
    in.siblings = without;
    in.config_json = "{\"quantization_config\": {\"quant_method\": \"modelopt\", "
                     "\"quant_algo\": \"NVFP4\"}}";
    ck_assert_int_ge(p->reader->probe(p->ctx, &in), 80);
    in.config_json = "{\"model_type\": \"llama\"}";
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
    in.siblings = with_side;
    ck_assert_int_ge(p->reader->probe(p->ctx, &in), 50);
    /* another method's quantization_config wins over a stray side file */
    in.config_json = "{\"quantization_config\": {\"quant_method\": \"compressed-tensors\"}}";
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
    in.config_json = "{\"quantization_config\": {\"quant_method\": \"fp8\"}}";
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
    in.config_json = "{not json";
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
    in.config_json = NULL;
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("modelopt");
    TCase *tc = tcase_create("modelopt");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_hf_quant_config_only);
    tcase_add_test(tc, test_config_json_only);
    tcase_add_test(tc, test_both_with_wildcard_exclude_sharded);
    tcase_add_test(tc, test_summary_notes_activation_scales);
    tcase_add_test(tc, test_config_refusals);
    tcase_add_test(tc, test_strict_json_config_and_side_file);
    tcase_add_test(tc, test_sources_must_agree);
    tcase_add_test(tc, test_probe);
    suite_add_tcase(s, tc);
    return s;
}
