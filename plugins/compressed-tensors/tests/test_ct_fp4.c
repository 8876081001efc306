/*
 * Tests of the compressed-tensors reader on its 4-bit float formats
 * (nvfp4-pack-quantized, mxfp4-pack-quantized): tests/gen/gen_fp4.c
 * fixtures against their ground truth bit for bit (shared checker of
 * plugins/modelopt/tests), the encodings inspect shows, and the config
 * refusals (format and weights that disagree, an unread MX format).
 */
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <quantbridge/quantbridge.h>

#include "ct_config.h"
#include "gen_fp4.h"
#include "qbt_fp4_check.h"
#include "qbt_fs.h"
#include "qbt_host.h"

static const qb_plugin *plugin(void)
{
    qb_negotiation neg = {sizeof(qb_negotiation), QB_MAKE_ABI(1, 0), QB_ABI_CURRENT, 0};
    const qb_plugin *p = NULL;
    ck_assert_int_eq(qb_plugin_entry_v1(&neg, qbt_host(), &p), QB_OK);
    ck_assert_str_eq(p->name, "compressed-tensors");
    return p;
}

static void run_good(const char *tag, qbt_fp4_spec spec, size_t want_quant, const char *enc_want)
{
    const qb_plugin *p = plugin();
    char *dir = qbt_tmpdir(tag), path[1024], why[512];
    qbt_fp4_model *truth = NULL;
    qb_reader_handle h = NULL;
    qb_tensor_info ti;
    qb_model_info mi;
    size_t nq = 0, i;

    snprintf(path, sizeof(path), "%s/model", dir);
    ck_assert_int_eq(qbt_fp4_write(path, &spec, &truth), 0);
    ck_assert_msg(qbt_fp4_check(p, path, truth, &nq, why, sizeof(why)) == 0, "%s: %s (%s)", tag,
                  why, qbt_host_last_error());
    ck_assert_uint_eq(nq, want_quant);
    ck_assert_int_eq(p->reader->open(p->ctx, path, NULL, &h), QB_OK);
    memset(&mi, 0, sizeof(mi));
    mi.struct_size = sizeof(mi);
    ck_assert_int_eq(p->reader->get_model_info(h, &mi), QB_OK);
    for (i = 0; i < mi.n_tensors; i++) {
        memset(&ti, 0, sizeof(ti));
        ti.struct_size = sizeof(ti);
        ck_assert_int_eq(p->reader->get_tensor_info(h, i, &ti), QB_OK);
        if (!strcmp(ti.name, "model.layers.0.self_attn.q_proj.weight"))
            ck_assert_str_eq(ti.source_encoding, enc_want);
    }
    p->reader->close(h);
    qbt_fp4_model_free(truth);
    qbt_rmtree(dir);
    free(dir);
}

START_TEST(test_nvfp4)
{
    run_good("ct-nvfp4", (qbt_fp4_spec){.form = QBT_FP4_CT_NVFP4, .shards = 1, .seed = 61}, 14,
             "ct nvfp4 e2m1 g16+global");
}
END_TEST

START_TEST(test_nvfp4_ignore_sharded)
{
    run_good("ct-nvfp4-x", (qbt_fp4_spec){.form = QBT_FP4_CT_NVFP4, .exclude = 1, .shards = 3,
                                          .seed = 62}, 13, "ct nvfp4 e2m1 g16+global");
}
END_TEST

START_TEST(test_mxfp4)
{
    run_good("ct-mxfp4", (qbt_fp4_spec){.form = QBT_FP4_CT_MXFP4, .shards = 2, .seed = 63}, 14,
             "ct mxfp4 e2m1 g32");
}
END_TEST

static qb_status parse(const char *json)
{
    cJSON *q = cJSON_Parse(json);
    ct_config cfg;
    qb_status st;
    ck_assert_ptr_nonnull(q);
    memset(&cfg, 0, sizeof(cfg));
    st = ct_config_parse(qbt_host(), "d", q, &cfg);
    ct_config_free(&cfg);
    cJSON_Delete(q);
    return st;
}

#define HEAD(fmt) "{\"quant_method\": \"compressed-tensors\", \"format\": \"" fmt "\", " \
                  "\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], \"weights\": "
#define FP4(strategy, gs) "{\"num_bits\": 4, \"type\": \"float\", \"strategy\": \"" strategy \
                          "\", \"group_size\": " #gs ", \"symmetric\": true}}}}"

START_TEST(test_config)
{
    ck_assert_int_eq(parse(HEAD("nvfp4-pack-quantized") FP4("tensor_group", 16)), QB_OK);
    ck_assert_int_eq(parse(HEAD("mxfp4-pack-quantized") FP4("group", 32)), QB_OK);
    /* the compressors' can_compress: NVFP4 is group 16, MXFP4 group 32 */
    ck_assert_int_eq(parse(HEAD("nvfp4-pack-quantized") FP4("tensor_group", 32)),
                     QB_E_UNSUPPORTED);
    ck_assert(strstr(qbt_host_last_error(), "group_size 16"));
    ck_assert_int_eq(parse(HEAD("mxfp4-pack-quantized") FP4("tensor_group", 32)),
                     QB_E_UNSUPPORTED);
    ck_assert_int_eq(parse(HEAD("nvfp4-pack-quantized") "{\"num_bits\": 4, \"type\": \"int\", "
                           "\"strategy\": \"tensor_group\", \"group_size\": 16}}}}"),
                     QB_E_UNSUPPORTED);
    /* 4-bit floats in a format without an FP4 decompressor */
    ck_assert_int_eq(parse(HEAD("pack-quantized") FP4("tensor_group", 16)), QB_E_UNSUPPORTED);
    ck_assert(strstr(qbt_host_last_error(), "nvfp4-pack-quantized or mxfp4-pack-quantized"));
    ck_assert_int_eq(parse(HEAD("naive-quantized") FP4("group", 32)), QB_E_UNSUPPORTED);
    /* MX formats other than MXFP4 are refused by name */
    ck_assert_int_eq(parse(HEAD("mxfp6-pack-quantized") FP4("group", 32)), QB_E_UNSUPPORTED);
    ck_assert(strstr(qbt_host_last_error(), "\"mxfp6-pack-quantized\""));
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("compressed-tensors-fp4");
    TCase *tc = tcase_create("fp4");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_nvfp4);
    tcase_add_test(tc, test_nvfp4_ignore_sharded);
    tcase_add_test(tc, test_mxfp4);
    tcase_add_test(tc, test_config);
    suite_add_tcase(s, tc);
    return s;
}
