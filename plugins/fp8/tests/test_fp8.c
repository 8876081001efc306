/*
 * Tests of the fp8 reader plugin (plugins/fp8), compiled into the
 * test with the fake host: exact E4M3FN / E5M2 decoding of all 256 codes,
 * every fixture variant against its ground truth (known FP8 bytes and
 * scales, tests/gen/gen_fp8.c), and the broken checkpoints' errors.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quantbridge/quantbridge.h>

#include "qbk_fp8_decode.h"
#include "gen_ct.h"
#include "qbt_cq_check.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_json_refusals.h"

static const qb_plugin *plugin(void)
{
    qb_negotiation neg = {sizeof(qb_negotiation), QB_MAKE_ABI(1, 0), QB_ABI_CURRENT, 0};
    const qb_plugin *p = NULL;
    ck_assert_int_eq(qb_plugin_entry_v1(&neg, qbt_host(), &p), QB_OK);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(p->reader);
    ck_assert_str_eq(p->name, "fp8");
    return p;
}

/* Value from the bit definition alone, written independently of the
 * decoder (integer mantissa and exponent, ldexp). */
static double e4m3_def(unsigned b)
{
    unsigned s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    double v;
    if (e == 15 && m == 7)
        return NAN;
    v = e ? ldexp((double)(8 + m), (int)e - 10) : ldexp((double)m, -9);
    return s ? -v : v;
}

static double e5m2_def(unsigned b)
{
    unsigned s = b >> 7, e = (b >> 2) & 31, m = b & 3;
    double v;
    if (e == 31)
        return m ? NAN : (s ? -INFINITY : INFINITY);
    v = e ? ldexp((double)(4 + m), (int)e - 17) : ldexp((double)m, -16);
    return s ? -v : v;
}

START_TEST(test_e4m3fn_all_codes)
{
    unsigned b;
    for (b = 0; b < 256; b++) {
        double want = e4m3_def(b);
        float got = qbk_fp8_e4m3fn_to_f32((uint8_t)b);
        if (isnan(want)) {
            ck_assert_msg(isnan(got), "code 0x%02x should be NaN", b);
            continue;
        }
        ck_assert_msg((double)got == want && !!signbit(got) == !!signbit(want),
                      "code 0x%02x: %.9g != %.9g", b, (double)got, want);
    }
    /* anchors from the OCP FP8 spec / torch.float8_e4m3fn */
    ck_assert(qbk_fp8_e4m3fn_to_f32(0x7e) == 448.0f);
    ck_assert(qbk_fp8_e4m3fn_to_f32(0xfe) == -448.0f);
    ck_assert(qbk_fp8_e4m3fn_to_f32(0x38) == 1.0f);
    ck_assert(qbk_fp8_e4m3fn_to_f32(0x01) == 0.001953125f);
    ck_assert(qbk_fp8_e4m3fn_to_f32(0x08) == 0.015625f);
    ck_assert(qbk_fp8_e4m3fn_to_f32(0x78) == 256.0f); /* exponent 1111 is finite in FN */
    ck_assert(isnan(qbk_fp8_e4m3fn_to_f32(0x7f)) && isnan(qbk_fp8_e4m3fn_to_f32(0xff)));
    ck_assert(signbit(qbk_fp8_e4m3fn_to_f32(0x80)) && qbk_fp8_e4m3fn_to_f32(0x80) == 0.0f);
}
END_TEST

START_TEST(test_e5m2_all_codes)
{
    unsigned b;
    for (b = 0; b < 256; b++) {
        double want = e5m2_def(b);
        float got = qbk_fp8_e5m2_to_f32((uint8_t)b);
        if (isnan(want)) {
            ck_assert_msg(isnan(got), "code 0x%02x should be NaN", b);
            continue;
        }
        ck_assert_msg((double)got == want && !!signbit(got) == !!signbit(want),
                      "code 0x%02x: %.9g != %.9g", b, (double)got, want);
    }
    ck_assert(qbk_fp8_e5m2_to_f32(0x7b) == 57344.0f);
    ck_assert(isinf(qbk_fp8_e5m2_to_f32(0x7c)) && qbk_fp8_e5m2_to_f32(0x7c) > 0);
    ck_assert(qbk_fp8_e5m2_to_f32(0x3c) == 1.0f);
    ck_assert(qbk_fp8_e5m2_to_f32(0x01) == ldexpf(1.0f, -16));
}
END_TEST

START_TEST(test_probe)
{
    const qb_plugin *p = plugin();
    qb_probe_input in;
    memset(&in, 0, sizeof(in));
    in.struct_size = sizeof(in);
    in.is_dir = 1;
    in.config_json = "{\"quantization_config\": {\"quant_method\": \"fp8\"}}";
    ck_assert_int_ge(p->reader->probe(p->ctx, &in), 80);
    in.config_json = "{\"quantization_config\": {\"quant_method\": \"gptq\"}}";
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
    in.config_json = "{not json";
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
    in.config_json = NULL;
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
}
END_TEST

static void run_good(const char *tag, const qbt_fp8_spec *spec, const char *enc_want)
{
    const qb_plugin *p = plugin();
    char *dir = qbt_tmpdir(tag), path[1024], why[512], enc[128];
    qbt_cq_model *truth = NULL;
    qbt_cq_stats stats;

    snprintf(path, sizeof(path), "%s/model", dir);
    ck_assert_int_eq(qbt_fp8_write(path, spec, &truth), 0);
    ck_assert_msg(qbt_cq_check(p, path, truth, &stats, why, sizeof(why)) == 0, "%s: %s (%s)", tag,
                  why, qbt_host_last_error());
    ck_assert_int_eq(stats.n_tensors, 21);
    ck_assert_int_eq(stats.n_quant, 14);
    ck_assert_int_eq(stats.n_grid, 0);
    ck_assert_int_eq(qbt_cq_encoding(p, path, "model.layers.1.mlp.down_proj.weight", enc,
                                     sizeof(enc)), 0);
    ck_assert_str_eq(enc, enc_want);
    qbt_cq_model_free(truth);
    qbt_rmtree(dir);
    free(dir);
}

START_TEST(test_block128)
{
    qbt_fp8_spec s = {.strategy = QBT_CQ_BLOCK, .bh = 128, .bw = 128, .shards = 1, .seed = 5};
    run_good("fp8-block128", &s, "fp8 e4m3 block128x128");
}
END_TEST

START_TEST(test_block_partial_edges_sharded)
{
    /* 48x40 blocks over 64/128-sized matrices: partial blocks on both edges;
     * three shards so every scale lives in another file than its weight */
    qbt_fp8_spec s = {.strategy = QBT_CQ_BLOCK, .bh = 48, .bw = 40, .shards = 3, .seed = 6};
    run_good("fp8-block48x40", &s, "fp8 e4m3 block48x40");
}
END_TEST

START_TEST(test_tensor_scale_static_input)
{
    qbt_fp8_spec s = {.strategy = QBT_CQ_TENSOR, .input_scale = 1, .shards = 1, .seed = 7};
    run_good("fp8-tensor", &s, "fp8 e4m3 tensor");
}
END_TEST

START_TEST(test_channel_scale)
{
    qbt_fp8_spec s = {.strategy = QBT_CQ_CHANNEL, .shards = 2, .seed = 8};
    run_good("fp8-channel", &s, "fp8 e4m3 channel");
}
END_TEST

START_TEST(test_e5m2_block)
{
    qbt_fp8_spec s = {.strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .e5m2 = 1, .shards = 1,
                      .seed = 9};
    run_good("fp8-e5m2", &s, "fp8 e5m2 block32x32");
}
END_TEST

static void run_broken(const char *tag, const qbt_fp8_spec *spec, qb_status code,
                       const char *const *needles)
{
    const qb_plugin *p = plugin();
    char *dir = qbt_tmpdir(tag), path[1024];
    qb_reader_handle h = (qb_reader_handle)1;
    qb_status st;
    size_t i;

    snprintf(path, sizeof(path), "%s/model", dir);
    ck_assert_int_eq(qbt_fp8_write(path, spec, NULL), 0);
    qbt_host_clear_error();
    st = p->reader->open(p->ctx, path, NULL, &h);
    ck_assert_msg(st == code, "%s: status %d, want %d (%s)", tag, st, code, qbt_host_last_error());
    ck_assert_ptr_null(h);
    for (i = 0; needles[i]; i++)
        ck_assert_msg(strstr(qbt_host_last_error(), needles[i]), "%s: message '%s' lacks '%s'",
                      tag, qbt_host_last_error(), needles[i]);
    qbt_rmtree(dir);
    free(dir);
}

START_TEST(test_broken_missing_scale)
{
    static const char *const n[] = {"model.layers.0.self_attn.q_proj.weight",
                                    "weight_scale_inv is missing", NULL};
    qbt_fp8_spec s = {.strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .shards = 1,
                      .broken = QBT_FP8_BROKEN_MISSING_SCALE};
    run_broken("fp8-b-noscale", &s, QB_E_NOT_FOUND, n);
}
END_TEST

START_TEST(test_broken_scale_in_missing_shard)
{
    static const char *const n[] = {"model-0000", NULL};
    qbt_fp8_spec s = {.strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .shards = 3,
                      .broken = QBT_FP8_BROKEN_MISSING_SHARD};
    const qb_plugin *p = plugin();
    char *dir = qbt_tmpdir("fp8-b-shard"), path[1024];
    qb_reader_handle h = NULL;

    snprintf(path, sizeof(path), "%s/model", dir);
    ck_assert_int_eq(qbt_fp8_write(path, &s, NULL), 0);
    ck_assert_int_lt(p->reader->open(p->ctx, path, NULL, &h), 0);
    ck_assert_ptr_null(h);
    ck_assert_msg(strstr(qbt_host_last_error(), n[0]), "message '%s'", qbt_host_last_error());
    qbt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_broken_scale_shape)
{
    static const char *const n[] = {"model.layers.0.mlp.gate_proj.weight_scale_inv",
                                    "block scale shape", NULL};
    qbt_fp8_spec s = {.strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .shards = 1,
                      .broken = QBT_FP8_BROKEN_SCALE_SHAPE};
    run_broken("fp8-b-shape", &s, QB_E_MISMATCH, n);
}
END_TEST

START_TEST(test_broken_leftover_scale)
{
    static const char *const n[] = {"lm_head.weight_scale_inv", "leftover", NULL};
    qbt_fp8_spec s = {.strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .shards = 1,
                      .broken = QBT_FP8_BROKEN_LEFTOVER_SCALE};
    run_broken("fp8-b-leftover", &s, QB_E_MISMATCH, n);
}
END_TEST


/* Rewrites dir/config.json replacing the first `from` by `to`. */
static void patch_config(const char *dir, const char *from, const char *to)
{
    char path[1100], *text, *at, *out;
    FILE *f;
    long n;

    snprintf(path, sizeof(path), "%s/config.json", dir);
    f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)n + 1);
    ck_assert_int_eq(fread(text, 1, (size_t)n, f), n);
    fclose(f);
    at = strstr(text, from);
    ck_assert_msg(at != NULL, "config.json lacks '%s'", from);
    out = calloc(1, (size_t)n + strlen(to) + 1);
    memcpy(out, text, (size_t)(at - text));
    strcat(out, to);
    strcat(out, at + strlen(from));
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fwrite(out, 1, strlen(out), f), strlen(out));
    fclose(f);
    free(text);
    free(out);
}

/* config.json is read by the one strict parser (sdk/kit/qbk_json.h). */
START_TEST(test_strict_json_config)
{
    qbt_fp8_spec s = {.strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .shards = 1, .seed = 13};
    char *dir = qbt_tmpdir("fp8-json"), *path = qbt_path(dir, "model");
    ck_assert_int_eq(qbt_fp8_write(path, &s, NULL), 0);
    qbt_json_refusals(path, "config.json", "model_type", NULL, qbt_json_open_reader,
                      (void *)plugin(), NULL);
    qbt_rmtree(dir);
    free(path);
    free(dir);
}
END_TEST

/* Writes a good fixture, patches its config, expects open to fail. */
START_TEST(test_not_converted_module_with_fp8_weight)
{
    const qb_plugin *p = plugin();
    qbt_fp8_spec s = {.strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .shards = 1, .seed = 12};
    char *dir = qbt_tmpdir("fp8-p-ntc"), path[1024];
    qb_reader_handle h = NULL;

    snprintf(path, sizeof(path), "%s/model", dir);
    ck_assert_int_eq(qbt_fp8_write(path, &s, NULL), 0);
    patch_config(path, "\"lm_head\"", "\"mlp.down_proj\"");
    ck_assert_int_eq(p->reader->open(p->ctx, path, NULL, &h), QB_E_MISMATCH);
    ck_assert_ptr_null(h);
    ck_assert(strstr(qbt_host_last_error(), "mlp.down_proj.weight"));
    ck_assert(strstr(qbt_host_last_error(), "not converted"));
    /* e4m3 tensors under fmt e5m2 */
    patch_config(path, "\"mlp.down_proj\"", "\"lm_head\"");
    patch_config(path, "\"e4m3\"", "\"e5m2\"");
    ck_assert_int_eq(p->reader->open(p->ctx, path, NULL, &h), QB_E_MISMATCH);
    ck_assert(strstr(qbt_host_last_error(), "fmt"));
    patch_config(path, "\"e5m2\"", "\"e3m4\"");
    ck_assert_int_eq(p->reader->open(p->ctx, path, NULL, &h), QB_E_UNSUPPORTED);
    /* MiniMax-M2 spells e4m3 as the torch dtype name: read as e4m3 */
    patch_config(path, "\"e3m4\"", "\"float8_e4m3fn\"");
    {
        char enc[128];
        ck_assert_msg(qbt_cq_encoding(p, path, "model.layers.1.mlp.down_proj.weight", enc,
                                      sizeof(enc)) == 0, "%s", qbt_host_last_error());
        ck_assert_str_eq(enc, "fp8 e4m3 block32x32");
    }
    qbt_rmtree(dir);
    free(dir);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("fp8");
    TCase *tc = tcase_create("decode");
    tcase_add_test(tc, test_e4m3fn_all_codes);
    tcase_add_test(tc, test_e5m2_all_codes);
    tcase_add_test(tc, test_probe);
    suite_add_tcase(s, tc);
    tc = tcase_create("read");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_block128);
    tcase_add_test(tc, test_block_partial_edges_sharded);
    tcase_add_test(tc, test_tensor_scale_static_input);
    tcase_add_test(tc, test_channel_scale);
    tcase_add_test(tc, test_e5m2_block);
    suite_add_tcase(s, tc);
    tc = tcase_create("broken");
    tcase_add_test(tc, test_broken_missing_scale);
    tcase_add_test(tc, test_broken_scale_in_missing_shard);
    tcase_add_test(tc, test_broken_scale_shape);
    tcase_add_test(tc, test_broken_leftover_scale);
    tcase_add_test(tc, test_not_converted_module_with_fp8_weight);
    tcase_add_test(tc, test_strict_json_config);
    suite_add_tcase(s, tc);
    return s;
}
