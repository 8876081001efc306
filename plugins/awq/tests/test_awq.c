/*
 * Tests of the AWQ reader (plugins/awq) on fixtures written from
 * known integer codes by tests/gen/gen_awq.c (AutoAWQ gemm/gemv packing):
 * dense rows equal the ground truth bit for bit, grid views carry the known
 * codes/scales/zeros, zero_point false reads as symmetric, and layouts the
 * reader cannot decode are refused by name.
 */
#define _GNU_SOURCE
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awq_open.h"
#include "gen_gptq.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_json_refusals.h"
#include "qbt_st_writer.h"
#include "qlr_check.h"

static char *tmp;

static void setup(void)
{
    tmp = qbt_tmpdir("awq");
    ck_assert_ptr_nonnull(tmp);
    qbt_host_clear_error();
}

static void teardown(void)
{
    qbt_rmtree(tmp);
    free(tmp);
}

static qbt_awq_spec spec(int gemv, int zp, int64_t gs)
{
    qbt_awq_spec s;
    memset(&s, 0, sizeof(s));
    s.gemv = gemv;
    s.zero_point = zp;
    s.group_size = gs;
    s.n_shards = 1;
    s.seed = (uint64_t)(gemv * 100 + zp * 10 + (gs < 0 ? 7 : gs));
    return s;
}

static qlinear_model *open_and_check_n(const qbt_awq_spec *s, int n_quant)
{
    qbt_qmodel *truth = NULL;
    qlinear_model *m = NULL;
    qb_status st;
    ck_assert_int_eq(qbt_awq_write(tmp, s, &truth), 0);
    st = awq_open_model(qbt_host(), tmp, &m);
    ck_assert_msg(st == QB_OK, "open failed: %d %s", st, qbt_host_last_error());
    ck_assert_int_eq(qlr_check_against_truth(m, truth), n_quant);
    ck_assert_str_eq(m->source_format, "awq");
    qbt_qmodel_free(truth);
    return m;
}

static qlinear_model *open_and_check(const qbt_awq_spec *s)
{
    return open_and_check_n(s, 14);
}

static const char *enc_of(const qlinear_model *m, const char *name)
{
    int i = qlr_check_find(m, name);
    ck_assert_int_ge(i, 0);
    return m->t[i].encoding;
}

static void expect_fail(const qbt_awq_spec *s, qb_status code, const char *needle)
{
    qlinear_model *m = (qlinear_model *)1;
    qb_status st;
    ck_assert_int_eq(qbt_awq_write(tmp, s, NULL), 0);
    st = awq_open_model(qbt_host(), tmp, &m);
    ck_assert_msg(st == code, "status %d, want %d (%s)", st, code, qbt_host_last_error());
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(qbt_host_last_error(), needle), "message \"%s\" lacks \"%s\"", qbt_host_last_error(),
                  needle);
}

START_TEST(gemm_g128_zero_point)
{
    qbt_awq_spec s = spec(0, 1, 128);
    qlinear_model *m = open_and_check(&s);
    ck_assert_str_eq(enc_of(m, "model.layers.0.self_attn.q_proj.weight"), "awq int4 g128 asym gemm");
    ck_assert_ptr_nonnull(strstr(m->summary, "AWQ 4-bit g128"));
    qlinear_free(m);
}
END_TEST

START_TEST(gemm_g32_zero_point_sharded)
{
    qbt_awq_spec s = spec(0, 1, 32);
    s.n_shards = 2;
    qlinear_free(open_and_check(&s));
}
END_TEST

START_TEST(gemm_per_channel)
{
    qbt_awq_spec s = spec(0, 1, -1);
    qlinear_model *m = open_and_check(&s);
    ck_assert_str_eq(enc_of(m, "model.layers.0.mlp.down_proj.weight"), "awq int4 per-channel asym gemm");
    qlinear_free(m);
}
END_TEST

START_TEST(gemm_zero_point_false_with_qzeros)
{
    qbt_awq_spec s = spec(0, 0, 64);
    qlinear_model *m = open_and_check(&s);
    ck_assert_str_eq(enc_of(m, "model.layers.1.mlp.up_proj.weight"), "awq int4 g64 sym gemm");
    qlinear_free(m);
}
END_TEST

START_TEST(gemm_zero_point_false_without_qzeros)
{
    qbt_awq_spec s = spec(0, 0, 128);
    s.omit_qzeros = 1;
    qlinear_free(open_and_check(&s));
}
END_TEST

START_TEST(gemv_g64_zero_point_sharded)
{
    qbt_awq_spec s = spec(1, 1, 64);
    qlinear_model *m;
    s.n_shards = 2;
    m = open_and_check(&s);
    ck_assert_str_eq(enc_of(m, "model.layers.0.self_attn.v_proj.weight"), "awq int4 g64 asym gemv");
    qlinear_free(m);
}
END_TEST

START_TEST(gemv_g32_and_g128)
{
    qbt_awq_spec s = spec(1, 1, 32);
    qlinear_free(open_and_check(&s));
    qbt_rmtree(tmp);
    free(tmp);
    tmp = qbt_tmpdir("awq");
    s = spec(1, 0, 128);
    qlinear_free(open_and_check(&s));
}
END_TEST

START_TEST(modules_to_not_convert)
{
    qbt_awq_spec s = spec(0, 1, 64);
    qlinear_model *m;
    s.skip = "layers.0.mlp.down_proj";
    m = open_and_check_n(&s, 13);
    ck_assert_str_eq(enc_of(m, "model.layers.0.mlp.down_proj.weight"), "f16");
    qlinear_free(m);
}
END_TEST

START_TEST(quantized_module_listed_as_not_converted)
{
    qbt_awq_spec s = spec(0, 1, 128);
    qlinear_model *m = (qlinear_model *)1;
    ck_assert_int_eq(qbt_awq_write(tmp, &s, NULL), 0);
    ck_assert_int_eq(qbt_write_llama_config(tmp, "{\"quant_method\": \"awq\", \"zero_point\": true, "
                                                 "\"group_size\": 128, \"bits\": 4, \"version\": \"gemm\", "
                                                 "\"modules_to_not_convert\": [\"down_proj\"]}"),
                     0);
    ck_assert_int_eq(awq_open_model(qbt_host(), tmp, &m), QB_E_MISMATCH);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "mlp.down_proj.qweight"));
}
END_TEST

START_TEST(refuses_versions_by_name)
{
    static const char *const names[] = {"exllama", "gemv_fast", "marlin", "ipex", "GEMM2"};
    size_t i;
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        qbt_awq_spec s = spec(0, 1, 128);
        s.version = names[i];
        expect_fail(&s, QB_E_UNSUPPORTED, names[i]);
        ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "config.json"));
    }
}
END_TEST

START_TEST(accepts_uppercase_gemm)
{
    qbt_awq_spec s = spec(0, 1, 128);
    s.version = "GEMM";
    qlinear_free(open_and_check(&s));
}
END_TEST

START_TEST(zero_point_false_but_zeros_not_8)
{
    /* data written with real zero points, config then claims zero_point false */
    qbt_awq_spec s = spec(0, 1, 128);
    qlinear_model *m = (qlinear_model *)1;
    ck_assert_int_eq(qbt_awq_write(tmp, &s, NULL), 0);
    ck_assert_int_eq(qbt_write_llama_config(tmp, "{\"quant_method\": \"awq\", \"zero_point\": false, "
                                                 "\"group_size\": 128, \"bits\": 4, \"version\": \"gemm\"}"),
                     0);
    ck_assert_int_eq(awq_open_model(qbt_host(), tmp, &m), QB_E_MISMATCH);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "model.layers.0.self_attn.q_proj.qzeros"));
}
END_TEST

START_TEST(group_size_disagrees_with_scales)
{
    qbt_awq_spec s = spec(0, 1, 64);
    qlinear_model *m = (qlinear_model *)1;
    ck_assert_int_eq(qbt_awq_write(tmp, &s, NULL), 0);
    ck_assert_int_eq(qbt_write_llama_config(tmp, "{\"quant_method\": \"awq\", \"zero_point\": true, "
                                                 "\"group_size\": 128, \"bits\": 4, \"version\": \"gemm\"}"),
                     0);
    ck_assert_int_eq(awq_open_model(qbt_host(), tmp, &m), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), ".scales: shape"));
    /* gemv data read as gemm: shapes cannot fit either */
    s = spec(1, 1, 128);
    ck_assert_int_eq(qbt_awq_write(tmp, &s, NULL), 0);
    ck_assert_int_eq(qbt_write_llama_config(tmp, "{\"quant_method\": \"awq\", \"zero_point\": true, "
                                                 "\"group_size\": 128, \"bits\": 4, \"version\": \"gemm\"}"),
                     0);
    ck_assert_int_eq(awq_open_model(qbt_host(), tmp, &m), QB_E_FORMAT);
    ck_assert_ptr_null(m);
}
END_TEST

START_TEST(refuses_bits_8)
{
    qbt_awq_spec s = spec(0, 1, 128);
    qlinear_model *m = (qlinear_model *)1;
    ck_assert_int_eq(qbt_awq_write(tmp, &s, NULL), 0);
    ck_assert_int_eq(qbt_write_llama_config(tmp, "{\"quant_method\": \"awq\", \"zero_point\": true, "
                                                 "\"group_size\": 128, \"bits\": 8, \"version\": \"gemm\"}"),
                     0);
    ck_assert_int_eq(awq_open_model(qbt_host(), tmp, &m), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "bits 8"));
}
END_TEST

static qb_status awq_open_cb(const char *path, void *ctx)
{
    qlinear_model *m = NULL;
    qb_status st = awq_open_model(qbt_host(), path, &m);
    (void)ctx;
    qlinear_free(m);
    return st;
}

/* config.json and the old quant_config.json (docs/formats/awq.md,
 * "Config") are read by the one strict parser (sdk/kit/qbk_json.h): every
 * refusal names the file and the reason. */
START_TEST(strict_json_in_config_and_quant_config)
{
    qbt_awq_spec s = spec(0, 1, 128);
    char *cfg_path, *text, *q, *side;
    ck_assert_int_eq(qbt_awq_write(tmp, &s, NULL), 0);
    qbt_json_refusals(tmp, "config.json", "model_type", NULL, awq_open_cb, NULL, NULL);
    /* the same checkpoint with its quantization_config moved to quant_config.json */
    cfg_path = qbt_path(tmp, "config.json");
    text = qbt_read_file(cfg_path, NULL);
    ck_assert_ptr_nonnull(text);
    q = strstr(text, ",\n  \"quantization_config\": ");
    ck_assert_ptr_nonnull(q);
    side = strdup(q + strlen(",\n  \"quantization_config\": "));
    *strrchr(side, '}') = '\0'; /* the config's own closing brace */
    strcpy(q, "\n}\n");
    qbt_write_file(cfg_path, text);
    free(text);
    text = qbt_path(tmp, "quant_config.json");
    qbt_write_file(text, side);
    ck_assert_msg(awq_open_cb(tmp, NULL) == QB_OK, "%s", qbt_host_last_error());
    qbt_json_refusals(tmp, "quant_config.json", "version", NULL, awq_open_cb, NULL, NULL);
    free(text);
    free(side);
    free(cfg_path);
}
END_TEST

START_TEST(probe_scores)
{
    ck_assert_int_eq(awq_probe_config("{\"quantization_config\": {\"quant_method\": \"awq\"}}", 0), 90);
    ck_assert_int_eq(awq_probe_config("{\"quantization_config\": {\"quant_method\": \"gptq\"}}", 1), 0);
    ck_assert_int_eq(awq_probe_config("{\"model_type\": \"llama\"}", 1), 40);
    ck_assert_int_eq(awq_probe_config(NULL, 0), 0);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("awq");
    TCase *g = tcase_create("good"), *b = tcase_create("refused");
    tcase_set_timeout(g, 120);
    tcase_add_checked_fixture(g, setup, teardown);
    tcase_add_checked_fixture(b, setup, teardown);
    tcase_add_test(g, gemm_g128_zero_point);
    tcase_add_test(g, gemm_g32_zero_point_sharded);
    tcase_add_test(g, gemm_per_channel);
    tcase_add_test(g, gemm_zero_point_false_with_qzeros);
    tcase_add_test(g, gemm_zero_point_false_without_qzeros);
    tcase_add_test(g, gemv_g64_zero_point_sharded);
    tcase_add_test(g, gemv_g32_and_g128);
    tcase_add_test(g, accepts_uppercase_gemm);
    tcase_add_test(g, modules_to_not_convert);
    tcase_add_test(b, quantized_module_listed_as_not_converted);
    tcase_add_test(b, refuses_versions_by_name);
    tcase_add_test(b, zero_point_false_but_zeros_not_8);
    tcase_add_test(b, group_size_disagrees_with_scales);
    tcase_add_test(b, refuses_bits_8);
    tcase_add_test(b, probe_scores);
    tcase_add_test(b, strict_json_in_config_and_quant_config);
    suite_add_tcase(s, g);
    suite_add_tcase(s, b);
    return s;
}
