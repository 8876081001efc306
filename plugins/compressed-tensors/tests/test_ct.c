/*
 * Tests of the compressed-tensors reader plugin
 * (plugins/compressed-tensors), compiled into the test with the
 * fake host: every variant against its ground truth (known signed codes,
 * zero points, g_idx and scales, tests/gen/gen_ct.c), the integer grid
 * view, target/ignore matching, config refusals and the broken
 * checkpoints' errors.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <quantbridge/quantbridge.h>

#include "ct_config.h"
#include "ct_match.h"
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
    ck_assert_str_eq(p->name, "compressed-tensors");
    ck_assert_ptr_nonnull(p->reader->read_grid);
    return p;
}

static void run_good(const char *tag, const qbt_ct_spec *spec, size_t n_grid,
                     const char *enc_name, const char *enc_want)
{
    const qb_plugin *p = plugin();
    char *dir = qbt_tmpdir(tag), path[1024], why[512], enc[128];
    qbt_cq_model *truth = NULL;
    qbt_cq_stats stats;

    snprintf(path, sizeof(path), "%s/model", dir);
    ck_assert_int_eq(qbt_ct_write(path, spec, &truth), 0);
    ck_assert_msg(qbt_cq_check(p, path, truth, &stats, why, sizeof(why)) == 0, "%s: %s (%s)", tag,
                  why, qbt_host_last_error());
    ck_assert_int_eq(stats.n_tensors, 21);
    ck_assert_int_eq(stats.n_grid, n_grid);
    ck_assert_int_eq(qbt_cq_encoding(p, path, enc_name, enc, sizeof(enc)), 0);
    ck_assert_str_eq(enc, enc_want);
    qbt_cq_model_free(truth);
    qbt_rmtree(dir);
    free(dir);
}

#define Q0 "model.layers.0.self_attn.q_proj.weight"
#define D1 "model.layers.1.mlp.down_proj.weight"

START_TEST(test_pack_w4_g32_sym)
{
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 1, .strategy = QBT_CQ_GROUP,
                     .gs = 32, .shards = 1, .seed = 1};
    run_good("ct-w4-sym", &s, 14, Q0, "ct int4 g32 sym");
}
END_TEST

START_TEST(test_pack_w4_g32_asym_packed_zp)
{
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 0, .strategy = QBT_CQ_GROUP,
                     .gs = 32, .shards = 1, .seed = 2};
    run_good("ct-w4-asym", &s, 14, D1, "ct int4 g32 asym");
}
END_TEST

START_TEST(test_pack_w4_g32_asym_i8_zp)
{
    /* compressed-tensors < 0.10 saved zero points unpacked, I8 [N, G] */
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 0, .strategy = QBT_CQ_GROUP,
                     .gs = 32, .zp_i8 = 1, .shards = 1, .seed = 3};
    run_good("ct-w4-asym-i8", &s, 14, D1, "ct int4 g32 asym");
}
END_TEST

START_TEST(test_pack_w4_asym_all_zero_zp_is_symmetric_grid)
{
    /* the check asserts grid symmetric == 1 when every zero point is 0 */
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 0, .strategy = QBT_CQ_GROUP,
                     .gs = 32, .shards = 1, .seed = 4, .zero_zp = 1};
    run_good("ct-w4-asym-zero", &s, 14, Q0, "ct int4 g32 asym");
}
END_TEST

START_TEST(test_pack_w8_channel)
{
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 8, .sym = 1, .strategy = QBT_CQ_CHANNEL,
                     .shards = 1, .seed = 5};
    run_good("ct-w8-ch", &s, 14, Q0, "ct int8 channel sym");
}
END_TEST

START_TEST(test_pack_w4_act_order)
{
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 1, .strategy = QBT_CQ_GROUP,
                     .gs = 32, .act_order = 1, .shards = 1, .seed = 6};
    run_good("ct-w4-actorder", &s, 14, D1, "ct int4 g32 sym act-order");
}
END_TEST

START_TEST(test_pack_w4_tensor_asym)
{
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 0, .strategy = QBT_CQ_TENSOR,
                     .shards = 1, .seed = 7};
    run_good("ct-w4-tensor", &s, 14, Q0, "ct int4 tensor asym");
}
END_TEST

START_TEST(test_int_quantized_w8a8)
{
    qbt_ct_spec s = {.format = "int-quantized", .bits = 8, .sym = 1, .strategy = QBT_CQ_CHANNEL,
                     .act_quant = 1, .shards = 1, .seed = 8};
    run_good("ct-w8a8", &s, 14, Q0, "ct int8 channel sym int-quantized");
}
END_TEST

START_TEST(test_naive_w4_g32_asym)
{
    qbt_ct_spec s = {.format = "naive-quantized", .bits = 4, .sym = 0, .strategy = QBT_CQ_GROUP,
                     .gs = 32, .shards = 1, .seed = 9};
    run_good("ct-naive-w4", &s, 14, Q0, "ct int4 g32 asym naive-quantized");
}
END_TEST

START_TEST(test_float_quantized_channel)
{
    qbt_ct_spec s = {.format = "float-quantized", .fp8 = 1, .bits = 8, .sym = 1,
                     .strategy = QBT_CQ_CHANNEL, .act_quant = 1, .shards = 1, .seed = 10};
    run_good("ct-fp8-ch", &s, 0, Q0, "ct fp8 channel sym float-quantized");
}
END_TEST

START_TEST(test_float_quantized_block)
{
    qbt_ct_spec s = {.format = "float-quantized", .fp8 = 1, .bits = 8, .sym = 1,
                     .strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .shards = 1, .seed = 11};
    run_good("ct-fp8-block", &s, 0, D1, "ct fp8 block32x32 sym float-quantized");
}
END_TEST

START_TEST(test_mixed_groups_and_ignore)
{
    /* attention int4 g32 by regex, MLP int8 channel by regex, layer 1
     * down_proj ignored by regex (dense BF16) */
    qbt_ct_spec s = {.format = "pack-quantized", .mixed = 1, .shards = 1, .seed = 12};
    run_good("ct-mixed", &s, 13, "model.layers.0.mlp.gate_proj.weight", "ct int8 channel sym");
    run_good("ct-mixed2", &s, 13, Q0, "ct int4 g32 sym");
    run_good("ct-mixed3", &s, 13, D1, "bf16");
}
END_TEST

START_TEST(test_sharded_i32_shape)
{
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 1, .strategy = QBT_CQ_GROUP,
                     .gs = 32, .shape_i32 = 1, .shards = 3, .seed = 13};
    run_good("ct-sharded", &s, 14, Q0, "ct int4 g32 sym");
}
END_TEST

static void run_broken(const char *tag, int broken, int shards, qb_status code, const char *n1,
                       const char *n2)
{
    const qb_plugin *p = plugin();
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 1, .strategy = QBT_CQ_GROUP,
                     .gs = 32, .shards = shards, .broken = broken, .seed = 20};
    char *dir = qbt_tmpdir(tag), path[1024];
    qb_reader_handle h = (qb_reader_handle)1;
    qb_status st;

    snprintf(path, sizeof(path), "%s/model", dir);
    ck_assert_int_eq(qbt_ct_write(path, &s, NULL), 0);
    qbt_host_clear_error();
    st = p->reader->open(p->ctx, path, NULL, &h);
    ck_assert_ptr_null(h);
    if (code)
        ck_assert_msg(st == code, "%s: status %d, want %d (%s)", tag, st, code,
                      qbt_host_last_error());
    else
        ck_assert_int_lt(st, 0);
    ck_assert_msg(strstr(qbt_host_last_error(), n1), "%s: '%s' lacks '%s'", tag,
                  qbt_host_last_error(), n1);
    if (n2)
        ck_assert_msg(strstr(qbt_host_last_error(), n2), "%s: '%s' lacks '%s'", tag,
                      qbt_host_last_error(), n2);
    qbt_rmtree(dir);
    free(dir);
}

START_TEST(test_broken_missing_scale)
{
    run_broken("ct-b-scale", QBT_CT_BROKEN_MISSING_SCALE, 1, QB_E_NOT_FOUND,
               "model.layers.0.self_attn.q_proj.weight_packed", "weight_scale is missing");
}
END_TEST

START_TEST(test_broken_leftover_packed)
{
    run_broken("ct-b-left", QBT_CT_BROKEN_LEFTOVER_PACKED, 1, QB_E_MISMATCH,
               "lm_head.weight_packed", "ignore");
}
END_TEST

START_TEST(test_broken_leftover_zero_point)
{
    run_broken("ct-b-zp", QBT_CT_BROKEN_LEFTOVER_ZP, 1, QB_E_MISMATCH,
               "model.layers.1.mlp.down_proj", "leftover");
}
END_TEST

START_TEST(test_broken_unknown_format)
{
    run_broken("ct-b-fmt", QBT_CT_BROKEN_UNKNOWN_FORMAT, 1, QB_E_UNSUPPORTED, "\"marlin-24\"",
               "config.json");
}
END_TEST

START_TEST(test_broken_sparse_format)
{
    run_broken("ct-b-sparse", QBT_CT_BROKEN_SPARSE, 1, QB_E_UNSUPPORTED, "sparse-24-bitmask",
               NULL);
}
END_TEST

START_TEST(test_broken_scale_in_missing_shard)
{
    run_broken("ct-b-shard", QBT_CT_BROKEN_MISSING_SHARD, 3, 0, "-of-00003.safetensors", NULL);
}
END_TEST

START_TEST(test_broken_weight_shape)
{
    run_broken("ct-b-shape", QBT_CT_BROKEN_SHAPE, 1, QB_E_MISMATCH,
               "model.layers.0.self_attn.v_proj.weight_shape", "[32, 72]");
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

/* Writes a good fixture, patches its config, expects open to fail. */
static void run_patched(const char *tag, const char *from, const char *to, qb_status code,
                        const char *needle)
{
    const qb_plugin *p = plugin();
    qbt_ct_spec s = {.format = "pack-quantized", .mixed = 1, .shards = 1, .seed = 40};
    char *dir = qbt_tmpdir(tag), path[1024];
    qb_reader_handle h = (qb_reader_handle)1;
    qb_status st;

    snprintf(path, sizeof(path), "%s/model", dir);
    ck_assert_int_eq(qbt_ct_write(path, &s, NULL), 0);
    patch_config(path, from, to);
    st = p->reader->open(p->ctx, path, NULL, &h);
    ck_assert_ptr_null(h);
    ck_assert_msg(st == code, "%s: status %d, want %d (%s)", tag, st, code, qbt_host_last_error());
    ck_assert_msg(strstr(qbt_host_last_error(), needle), "%s: '%s' lacks '%s'", tag,
                  qbt_host_last_error(), needle);
    qbt_rmtree(dir);
    free(dir);
}

/* config.json is read by the one strict parser (sdk/kit/qbk_json.h). */
START_TEST(test_strict_json_config)
{
    qbt_ct_spec s = {.format = "pack-quantized", .mixed = 1, .shards = 1, .seed = 41};
    char *dir = qbt_tmpdir("ct-json"), *path = qbt_path(dir, "model");
    ck_assert_int_eq(qbt_ct_write(path, &s, NULL), 0);
    qbt_json_refusals(path, "config.json", "model_type", NULL, qbt_json_open_reader,
                      (void *)plugin(), NULL);
    qbt_rmtree(dir);
    free(path);
    free(dir);
}
END_TEST

START_TEST(test_symmetric_with_saved_zero_points)
{
    /* older writers saved (all-zero) zero points for symmetric schemes:
     * accepted, values unchanged, grid symmetric */
    const qb_plugin *p = plugin();
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 0, .strategy = QBT_CQ_GROUP,
                     .gs = 32, .zp_i8 = 1, .zero_zp = 1, .shards = 1, .seed = 41};
    char *dir = qbt_tmpdir("ct-symzp"), path[1024], why[512], enc[128];
    qbt_cq_model *truth = NULL;
    qbt_cq_stats stats;

    snprintf(path, sizeof(path), "%s/model", dir);
    ck_assert_int_eq(qbt_ct_write(path, &s, &truth), 0);
    patch_config(path, "\"symmetric\": false", "\"symmetric\": true");
    ck_assert_msg(qbt_cq_check(p, path, truth, &stats, why, sizeof(why)) == 0, "%s (%s)", why,
                  qbt_host_last_error());
    ck_assert_int_eq(stats.n_grid, 14);
    ck_assert_int_eq(qbt_cq_encoding(p, path, Q0, enc, sizeof(enc)), 0);
    ck_assert_str_eq(enc, "ct int4 g32 sym");
    qbt_cq_model_free(truth);
    qbt_rmtree(dir);
    free(dir);
}
END_TEST

START_TEST(test_targeted_module_stored_dense)
{
    /* without the ignore entry, layer 1 down_proj is targeted by group_1's
     * regex but stored as a dense BF16 weight */
    run_patched("ct-p-dense", "\"re:.*layers\\\\.1\\\\.mlp\\\\.down_proj$\"", "\"nothing\"",
                QB_E_MISMATCH, "model.layers.1.mlp.down_proj.weight");
}
END_TEST

START_TEST(test_ambiguous_groups)
{
    /* group_1 now also targets the attention projections that group_0 quantizes
     * differently */
    run_patched("ct-p-ambig", "\"re:.*mlp\\\\.\\\\w+_proj\"", "\"re:.*_proj\"", QB_E_UNSUPPORTED,
                "ambiguous");
}
END_TEST

START_TEST(test_ignored_module_quantized)
{
    /* ignoring a module whose weight is packed leaves its tensors over */
    run_patched("ct-p-ignore", "\"lm_head\"", "\"model.layers.0.self_attn.q_proj\"",
                QB_E_MISMATCH, "model.layers.0.self_attn.q_proj.weight_packed");
}
END_TEST

/* ---- patterns and config refusals (no files) ---- */

static int match(const char *pat, const char *name, int linear)
{
    ct_pattern p;
    char why[128];
    int r;
    ck_assert_msg(ct_pattern_init(&p, pat, why, sizeof(why)) == 0, "%s: %s", pat, why);
    r = ct_pattern_match(&p, name, linear);
    ct_pattern_free(&p);
    return r;
}

START_TEST(test_patterns)
{
    ct_pattern p;
    char why[128];

    ck_assert(match("re:.*mlp\\.\\w+_proj", "model.layers.0.mlp.gate_proj", 1));
    ck_assert(!match("re:.*mlp\\.\\w+_proj", "model.layers.0.self_attn.q_proj", 1));
    /* re.match: anchored at the start, not at the end */
    ck_assert(!match("re:mlp", "model.mlp", 1));
    ck_assert(match("re:model", "model.mlp.x", 1));
    ck_assert(!match("re:.*down_proj$", "model.layers.0.mlp.down_proj_x", 1));
    ck_assert(match("re:.*layers\\.\\d+\\.mlp\\.down_proj$", "model.layers.12.mlp.down_proj", 1));
    ck_assert(!match("re:.*layers\\.\\d+\\.mlp", "model.layersX3.mlp", 1));
    ck_assert(match("re:.*(q|k)_proj", "a.k_proj", 1));
    ck_assert(match("lm_head", "lm_head", 0));
    ck_assert(!match("lm_head", "lm_head2", 0));
    ck_assert(match("Linear", "anything", 1));
    ck_assert(!match("Linear", "anything", 0));
    ck_assert_int_ne(ct_pattern_init(&p, "re:(?i)foo", why, sizeof(why)), 0);
    ct_pattern_free(&p);
    ck_assert_int_ne(ct_pattern_init(&p, "re:\\bfoo", why, sizeof(why)), 0);
    ct_pattern_free(&p);
    ck_assert_int_ne(ct_pattern_init(&p, "Embedding", why, sizeof(why)), 0);
    ck_assert(strstr(why, "Embedding"));
    ct_pattern_free(&p);
}
END_TEST

/* Python re refuses stacked quantifiers ("multiple repeat") and a
 * quantifier with nothing before it; glibc regcomp would take minutes and
 * gigabytes for "a??????" or "+++++", so they are refused before it. */
START_TEST(test_pattern_quantifiers)
{
    static const char *bad[] = {"re:a??????", "re:+++++", "re:a**", "re:a*?*", "re:a*??",
                                "re:a{2}{3}", "re:a{2}*", "re:*a", "re:(*a)", "re:x|*",
                                "re:^*", "re:a{300}", "re:a{3,2}"};
    ct_pattern p;
    char why[128];
    char *long_pat;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(ct_pattern_init(&p, bad[i], why, sizeof(why)) != 0, "%s accepted", bad[i]);
        ct_pattern_free(&p);
    }
    ck_assert_int_ne(ct_pattern_init(&p, "re:a+++", why, sizeof(why)), 0);
    ck_assert_msg(strstr(why, "multiple repeat"), "%s", why);
    ct_pattern_free(&p);
    /* a single lazy '?' after a quantifier is Python syntax; counted repeats work */
    ck_assert(match("re:.*?mlp", "x.mlp", 1));
    ck_assert(match("re:a+?b", "aab", 1));
    ck_assert(match("re:a??b", "b", 1));
    ck_assert(match("re:x\\.\\d{2}$", "x.12", 1));
    ck_assert(!match("re:x\\.\\d{2}$", "x.123", 1));
    ck_assert(match("re:x\\d{2,}$", "x123", 1));
    ck_assert(match("re:x\\d{,2}$", "x", 1));
    ck_assert(!match("re:x\\d{,2}$", "x123", 1));
    ck_assert(match("re:(ab)*c", "ababc", 1));
    /* '{' that is no counted repeat is a literal in Python */
    ck_assert(match("re:a{b", "a{b", 1));
    ck_assert(match("re:a{}", "a{}", 1));
    long_pat = malloc(2000);
    ck_assert_ptr_nonnull(long_pat);
    memcpy(long_pat, "re:", 3);
    memset(long_pat + 3, 'a', 1500);
    long_pat[1503] = '\0';
    ck_assert_int_ne(ct_pattern_init(&p, long_pat, why, sizeof(why)), 0);
    ck_assert_msg(strstr(why, "longer"), "%s", why);
    ct_pattern_free(&p);
    free(long_pat);
}
END_TEST

static qb_status parse(const char *json)
{
    cJSON *q = cJSON_Parse(json);
    ct_config cfg;
    qb_status st;
    ck_assert_ptr_nonnull(q);
    memset(&cfg, 0, sizeof(cfg));
    qbt_host_clear_error();
    st = ct_config_parse(qbt_host(), "d", q, &cfg);
    ct_config_free(&cfg);
    cJSON_Delete(q);
    return st;
}

#define QC_HEAD "{\"quant_method\": \"compressed-tensors\", \"format\": \"pack-quantized\", "
#define W4 "\"weights\": {\"num_bits\": 4, \"type\": \"int\", \"symmetric\": true, " \
           "\"strategy\": \"group\", \"group_size\": 128}"

START_TEST(test_config_refusals)
{
    ck_assert_int_eq(parse(QC_HEAD "\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], " W4
                                   "}}}"), QB_OK);
    ck_assert_int_eq(parse(QC_HEAD "\"transform_config\": {\"config_groups\": {}}, "
                                   "\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], " W4
                                   "}}}"), QB_E_UNSUPPORTED);
    ck_assert(strstr(qbt_host_last_error(), "transform_config"));
    ck_assert_int_eq(parse(QC_HEAD "\"quantization_status\": \"frozen\", \"config_groups\": "
                                   "{\"g\": {\"targets\": [\"Linear\"], " W4 "}}}"),
                     QB_E_UNSUPPORTED);
    ck_assert_int_eq(parse(QC_HEAD "\"config_groups\": {\"W4A16\": [\"Linear\"]}}"),
                     QB_E_UNSUPPORTED);
    ck_assert(strstr(qbt_host_last_error(), "preset"));
    ck_assert_int_eq(parse(QC_HEAD "\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], "
                                   "\"weights\": {\"num_bits\": 4, \"strategy\": \"tensor_group\","
                                   " \"group_size\": 16}}}}"), QB_E_UNSUPPORTED);
    ck_assert_int_eq(parse(QC_HEAD "\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], "
                                   "\"weights\": {\"num_bits\": 4, \"dynamic\": true}}}}"),
                     QB_E_UNSUPPORTED);
    ck_assert_int_eq(parse(QC_HEAD "\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], "
                                   "\"weights\": {\"num_bits\": 4, \"type\": \"float\"}}}}"),
                     QB_E_UNSUPPORTED);
    ck_assert_int_eq(parse(QC_HEAD "\"config_groups\": {\"g\": {\"targets\": [\"Embedding\"], " W4
                                   "}}}"), QB_E_UNSUPPORTED);
    ck_assert_int_eq(parse("{\"quant_method\": \"compressed-tensors\", \"format\": "
                           "\"mxfp8-pack-quantized\", \"config_groups\": {}}"),
                     QB_E_UNSUPPORTED);
    ck_assert(strstr(qbt_host_last_error(), "mxfp8-pack-quantized"));
    /* strategy inferred from group_size (QuantizationArgs.validate_model_after) */
    ck_assert_int_eq(parse(QC_HEAD "\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], "
                                   "\"weights\": {\"num_bits\": 4, \"group_size\": -1}}}}"),
                     QB_OK);
}
END_TEST

START_TEST(test_probe)
{
    const qb_plugin *p = plugin();
    qb_probe_input in;
    memset(&in, 0, sizeof(in));
    in.struct_size = sizeof(in);
    in.is_dir = 1;
    in.config_json = "{\"quantization_config\": {\"quant_method\": \"compressed-tensors\"}}";
    ck_assert_int_ge(p->reader->probe(p->ctx, &in), 80);
    in.config_json = "{\"quantization_config\": {\"quant_method\": \"fp8\"}}";
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
    in.config_json = "[1,";
    ck_assert_int_eq(p->reader->probe(p->ctx, &in), 0);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("compressed-tensors");
    TCase *tc = tcase_create("read");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_pack_w4_g32_sym);
    tcase_add_test(tc, test_pack_w4_g32_asym_packed_zp);
    tcase_add_test(tc, test_pack_w4_g32_asym_i8_zp);
    tcase_add_test(tc, test_pack_w4_asym_all_zero_zp_is_symmetric_grid);
    tcase_add_test(tc, test_pack_w8_channel);
    tcase_add_test(tc, test_pack_w4_act_order);
    tcase_add_test(tc, test_pack_w4_tensor_asym);
    tcase_add_test(tc, test_int_quantized_w8a8);
    tcase_add_test(tc, test_naive_w4_g32_asym);
    tcase_add_test(tc, test_float_quantized_channel);
    tcase_add_test(tc, test_float_quantized_block);
    tcase_add_test(tc, test_mixed_groups_and_ignore);
    tcase_add_test(tc, test_sharded_i32_shape);
    tcase_add_test(tc, test_symmetric_with_saved_zero_points);
    suite_add_tcase(s, tc);
    tc = tcase_create("broken");
    tcase_add_test(tc, test_broken_missing_scale);
    tcase_add_test(tc, test_broken_leftover_packed);
    tcase_add_test(tc, test_broken_leftover_zero_point);
    tcase_add_test(tc, test_broken_unknown_format);
    tcase_add_test(tc, test_broken_sparse_format);
    tcase_add_test(tc, test_broken_scale_in_missing_shard);
    tcase_add_test(tc, test_broken_weight_shape);
    tcase_add_test(tc, test_targeted_module_stored_dense);
    tcase_add_test(tc, test_ambiguous_groups);
    tcase_add_test(tc, test_ignored_module_quantized);
    suite_add_tcase(s, tc);
    tc = tcase_create("config");
    tcase_add_test(tc, test_patterns);
    tcase_add_test(tc, test_pattern_quantifiers);
    tcase_add_test(tc, test_config_refusals);
    tcase_add_test(tc, test_strict_json_config);
    tcase_add_test(tc, test_probe);
    suite_add_tcase(s, tc);
    return s;
}
