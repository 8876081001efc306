/*
 * Tests of the GPTQ reader (plugins/gptq) on fixtures written from
 * known integer codes (tests/gen/gen_gptq.c): every variant's dense rows
 * equal the ground truth bit for bit, grid views carry the known codes,
 * scales, zeros and group map, the zero convention is decided as documented
 * in gptq_open.h, and each broken checkpoint is refused with a message
 * naming the file and tensor.
 */
#define _GNU_SOURCE
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_gptq.h"
#include "gptq_config.h"
#include "gptq_open.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_json_refusals.h"
#include "qbt_st_writer.h"
#include "qlr_check.h"

static char *tmp;

static void setup(void)
{
    tmp = qbt_tmpdir("gptq");
    ck_assert_ptr_nonnull(tmp);
    qbt_host_clear_error();
}

static void teardown(void)
{
    qbt_rmtree(tmp);
    free(tmp);
}

static qbt_gptq_spec spec(int bits, int64_t gs, int sym, int v2)
{
    qbt_gptq_spec s;
    memset(&s, 0, sizeof(s));
    s.bits = bits;
    s.group_size = gs;
    s.sym = sym;
    s.v2 = v2;
    s.label = 1;
    s.n_shards = 1;
    s.seed = (uint64_t)(bits * 1000 + (gs < 0 ? 1 : gs) + sym * 7 + v2 * 13);
    return s;
}

/* Writes the fixture, opens it with `opt`, checks every tensor against the
 * truth and returns the model (caller frees). */
static qlinear_model *open_and_check(const qbt_gptq_spec *s, int opt, int expect_quant)
{
    qbt_qmodel *truth = NULL;
    qlinear_model *m = NULL;
    qb_status st;
    ck_assert_int_eq(qbt_gptq_write(tmp, s, &truth), 0);
    st = gptq_open_model(qbt_host(), tmp, opt, &m);
    ck_assert_msg(st == QB_OK, "open failed: %d %s", st, qbt_host_last_error());
    ck_assert_int_eq(qlr_check_against_truth(m, truth), expect_quant);
    ck_assert_str_eq(m->source_format, "gptq");
    ck_assert_str_eq(m->architecture, "llama");
    qbt_qmodel_free(truth);
    return m;
}

static const char *enc_of(const qlinear_model *m, const char *name)
{
    int i = qlr_check_find(m, name);
    ck_assert_int_ge(i, 0);
    return m->t[i].encoding;
}

static void expect_fail(const qbt_gptq_spec *s, int opt, qb_status code, const char *needle)
{
    qlinear_model *m = (qlinear_model *)1;
    qb_status st;
    ck_assert_int_eq(qbt_gptq_write(tmp, s, NULL), 0);
    st = gptq_open_model(qbt_host(), tmp, opt, &m);
    ck_assert_msg(st == code, "status %d, want %d (%s)", st, code, qbt_host_last_error());
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(qbt_host_last_error(), needle), "message \"%s\" lacks \"%s\"", qbt_host_last_error(),
                  needle);
}

START_TEST(gptq4_g128_sym_v1)
{
    qbt_gptq_spec s = spec(4, 128, 1, 0);
    qlinear_model *m = open_and_check(&s, GPTQ_OPT_AUTO, 14);
    ck_assert_str_eq(enc_of(m, "model.layers.0.self_attn.q_proj.weight"), "gptq int4 g128 sym v1");
    ck_assert_ptr_nonnull(strstr(m->summary, "GPTQ 4-bit g128 sym v1"));
    qlinear_free(m);
}
END_TEST

START_TEST(gptq4_g128_sym_v2)
{
    qbt_gptq_spec s = spec(4, 128, 1, 1);
    qlinear_model *m = open_and_check(&s, GPTQ_OPT_AUTO, 14);
    ck_assert_str_eq(enc_of(m, "model.layers.1.mlp.down_proj.weight"), "gptq int4 g128 sym v2");
    qlinear_free(m);
}
END_TEST

START_TEST(gptq4_sym_no_label_data_decides)
{
    qbt_gptq_spec s = spec(4, 32, 1, 1);
    qlinear_model *m;
    s.label = 0;
    m = open_and_check(&s, GPTQ_OPT_AUTO, 14);
    ck_assert_ptr_nonnull(strstr(m->summary, "stored zeros all 2^(b-1)"));
    qlinear_free(m);
}
END_TEST

START_TEST(gptq4_sym_wrong_label_data_wins)
{
    /* label says gptq_v2 but every stored zero is 7: only v1 makes it symmetric */
    qbt_gptq_spec s = spec(4, 128, 1, 0);
    qlinear_model *m;
    s.wrong_label = 1;
    m = open_and_check(&s, GPTQ_OPT_AUTO, 14);
    ck_assert_ptr_nonnull(strstr(enc_of(m, "model.layers.0.mlp.up_proj.weight"), "sym v1"));
    qlinear_free(m);
}
END_TEST

START_TEST(gptq4_asym_v1_label)
{
    qbt_gptq_spec s = spec(4, 128, 0, 0);
    qlinear_model *m = open_and_check(&s, GPTQ_OPT_AUTO, 14);
    ck_assert_str_eq(enc_of(m, "model.layers.0.self_attn.k_proj.weight"), "gptq int4 g128 asym v1");
    qlinear_free(m);
}
END_TEST

START_TEST(gptq4_asym_v2_label)
{
    qbt_gptq_spec s = spec(4, 64, 0, 1);
    qlinear_model *m = open_and_check(&s, GPTQ_OPT_AUTO, 14);
    ck_assert_str_eq(enc_of(m, "model.layers.0.self_attn.k_proj.weight"), "gptq int4 g64 asym v2");
    qlinear_free(m);
}
END_TEST

START_TEST(gptq4_asym_no_label_needs_option)
{
    qbt_gptq_spec s = spec(4, 128, 0, 1);
    qlinear_model *m;
    s.label = 0;
    expect_fail(&s, GPTQ_OPT_AUTO, QB_E_UNSUPPORTED, "zero_convention=v1");
    m = open_and_check(&s, GPTQ_OPT_V2, 14);
    ck_assert_ptr_nonnull(strstr(m->summary, "--option zero_convention"));
    qlinear_free(m);
}
END_TEST

START_TEST(gptq4_asym_v1_zero0_kernel_view)
{
    /* docs/formats/gptq.md "Zero points", v1 trap: a real zero of 0 packed as uint32 -1 corrupts the
     * higher fields of its word; the reader reproduces the kernels
     * ((field + 1) & mask), never "repairs" */
    qbt_gptq_spec s = spec(4, 32, 0, 0);
    s.v1_zero0 = 1;
    qlinear_free(open_and_check(&s, GPTQ_OPT_AUTO, 14));
    qbt_rmtree(tmp);
    free(tmp);
    tmp = qbt_tmpdir("gptq");
    s = spec(2, 64, 0, 0);
    s.v1_zero0 = 1;
    qlinear_free(open_and_check(&s, GPTQ_OPT_AUTO, 14));
}
END_TEST

START_TEST(gptq4_act_order)
{
    qbt_gptq_spec s = spec(4, 32, 1, 0);
    qlinear_model *m;
    s.act_order = 1;
    m = open_and_check(&s, GPTQ_OPT_AUTO, 14);
    ck_assert_str_eq(enc_of(m, "model.layers.0.mlp.down_proj.weight"), "gptq int4 g32 sym v1 act-order");
    ck_assert_ptr_nonnull(strstr(m->summary, "act-order"));
    qlinear_free(m);
}
END_TEST

START_TEST(gptq2_g32_sym_v1)
{
    qbt_gptq_spec s = spec(2, 32, 1, 0);
    qlinear_free(open_and_check(&s, GPTQ_OPT_AUTO, 14));
}
END_TEST

START_TEST(gptq3_g128_sym_v1)
{
    qbt_gptq_spec s = spec(3, 128, 1, 0);
    qlinear_model *m = open_and_check(&s, GPTQ_OPT_AUTO, 14);
    ck_assert_str_eq(enc_of(m, "model.layers.0.mlp.down_proj.weight"), "gptq int3 g128 sym v1");
    qlinear_free(m);
}
END_TEST

START_TEST(gptq3_g32_asym_v1_act_order)
{
    qbt_gptq_spec s = spec(3, 32, 0, 0);
    s.act_order = 1;
    qlinear_free(open_and_check(&s, GPTQ_OPT_AUTO, 14));
}
END_TEST

START_TEST(gptq8_per_channel_asym_v2)
{
    qbt_gptq_spec s = spec(8, -1, 0, 1);
    qlinear_model *m = open_and_check(&s, GPTQ_OPT_AUTO, 14);
    ck_assert_str_eq(enc_of(m, "model.layers.0.mlp.gate_proj.weight"), "gptq int8 per-channel asym v2");
    qlinear_free(m);
}
END_TEST

START_TEST(gptq8_g128_sym_v1_act_order)
{
    qbt_gptq_spec s = spec(8, 128, 1, 0);
    s.act_order = 1;
    qlinear_free(open_and_check(&s, GPTQ_OPT_AUTO, 14));
}
END_TEST

START_TEST(gptq_pack_dtype_words)
{
    /* GPTQModel pack_dtype: int16 / int8 / int64 storage words */
    qbt_gptq_spec a = spec(4, 32, 1, 0), b = spec(2, 64, 0, 1), c = spec(8, 128, 1, 1);
    qlinear_model *m;
    a.word_bits = 16;
    m = open_and_check(&a, GPTQ_OPT_AUTO, 14);
    ck_assert_int_eq(m->t[qlr_check_find(m, "model.layers.0.self_attn.q_proj.weight")].qweight->dtype, QB_DT_I16);
    qlinear_free(m);
    b.word_bits = 8;
    qlinear_free(open_and_check(&b, GPTQ_OPT_AUTO, 14));
    c.word_bits = 64;
    qlinear_free(open_and_check(&c, GPTQ_OPT_AUTO, 14));
}
END_TEST

START_TEST(gptq4_sharded_side_file)
{
    /* every .scales in the other shard than its qweight; quantize_config.json too */
    qbt_gptq_spec s = spec(4, 32, 1, 0);
    s.n_shards = 2;
    s.side_file = 1;
    qlinear_free(open_and_check(&s, GPTQ_OPT_AUTO, 14));
}
END_TEST

/* gptq_config_load of config.json text in a directory without side files. */
static qb_status load_cfg(const char *config_json, int *matches, const char *module)
{
    gptq_config cfg;
    gptq_params p;
    qb_status st;
    char *dir = qbt_tmpdir("gptqcfg");
    ck_assert_ptr_nonnull(dir);
    memset(&cfg, 0, sizeof(cfg));
    qbt_host_clear_error();
    st = gptq_config_load(qbt_host(), dir, config_json, &cfg);
    if (st == QB_OK && matches)
        *matches = gptq_config_resolve(&cfg, module, &p) == 0 && p.bits == 8;
    gptq_config_free(&cfg);
    qbt_rmtree(dir);
    free(dir);
    return st;
}

/* Python's re refuses stacked quantifiers ("multiple repeat"); glibc
 * regcomp accepted "a++++..." and needed gigabytes (30 '+': > 16 GB). */
START_TEST(gptq_dynamic_stacked_quantifiers)
{
    static const char *bad[] = {"+:a++++++++++++++++++++++++++++++", "+:a**", "+:a*??",
                                "+:a{2}{3}", "+:a{2}*", "+:a+?+"};
    static const char head[] = "{\"model_type\": \"llama\", \"quantization_config\": "
                               "{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 128, "
                               "\"sym\": true, \"desc_act\": false, \"dynamic\": {\"";
    char json[512];
    int m = 0;
    size_t i;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(json, sizeof(json), "%s%s\": {\"bits\": 8}}}}", head, bad[i]);
        ck_assert_msg(load_cfg(json, NULL, NULL) != QB_OK, "%s accepted", bad[i]);
        ck_assert_msg(strstr(qbt_host_last_error(), bad[i]), "%s", qbt_host_last_error());
    }
    /* one lazy '?' after a quantifier and counted repeats stay accepted */
    snprintf(json, sizeof(json), "%s+:.*?layers\\\\.\\\\d{1,2}\\\\.mlp\\\\..*\": {\"bits\": 8}}}}",
             head);
    ck_assert_int_eq(load_cfg(json, &m, "model.layers.12.mlp.up_proj"), QB_OK);
    ck_assert_int_eq(m, 1);
    ck_assert_int_eq(load_cfg(json, &m, "model.layers.123.mlp.up_proj"), QB_OK);
    ck_assert_int_eq(m, 0);
    snprintf(json, sizeof(json), "%s+:.*[+*]x\": {\"bits\": 8}}}}", head);
    ck_assert_int_eq(load_cfg(json, &m, "a+x"), QB_OK);
    ck_assert_int_eq(m, 1);
}
END_TEST

START_TEST(gptq_dynamic_overrides)
{
    /* layer 1: 8-bit g32 by a "+:" rule; layer 0 down_proj dense by "-:" */
    qbt_gptq_spec s = spec(4, 128, 1, 0);
    qlinear_model *m;
    s.dynamic = 1;
    m = open_and_check(&s, GPTQ_OPT_AUTO, 13);
    ck_assert_str_eq(enc_of(m, "model.layers.1.self_attn.o_proj.weight"), "gptq int8 g32 sym v1");
    ck_assert_str_eq(enc_of(m, "model.layers.0.self_attn.o_proj.weight"), "gptq int4 g128 sym v1");
    ck_assert_str_eq(enc_of(m, "model.layers.0.mlp.down_proj.weight"), "f16");
    qlinear_free(m);
}
END_TEST

START_TEST(gptq_option_overrides_data_with_warning)
{
    /* forcing v2 on a symmetric v1 checkpoint reads every zero as 7: the
     * option wins (the user asked), values then differ from the truth */
    qbt_gptq_spec s = spec(4, 128, 1, 0);
    qlinear_model *m = NULL;
    float row[128];
    ck_assert_int_eq(qbt_gptq_write(tmp, &s, NULL), 0);
    ck_assert_int_eq(gptq_open_model(qbt_host(), tmp, GPTQ_OPT_V2, &m), QB_OK);
    ck_assert_str_eq(m->t[qlr_check_find(m, "model.layers.0.self_attn.q_proj.weight")].encoding,
                     "gptq int4 g128 asym v2");
    ck_assert_int_eq(qlinear_read_rows(m, (size_t)qlr_check_find(m, "model.layers.0.self_attn.q_proj.weight"), 0, 1, row),
                     QB_OK);
    qlinear_free(m);
}
END_TEST

START_TEST(broken_desc_act_without_g_idx)
{
    qbt_gptq_spec s = spec(4, 128, 1, 0);
    s.broken = QBT_BROKEN_DESC_ACT_NO_GIDX;
    expect_fail(&s, GPTQ_OPT_AUTO, QB_E_FORMAT, "desc_act");
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "model.layers.0.self_attn.q_proj.g_idx"));
}
END_TEST

START_TEST(broken_qweight_shape_vs_bits)
{
    qbt_gptq_spec s = spec(4, 128, 1, 0);
    s.broken = QBT_BROKEN_QWEIGHT_BITS;
    expect_fail(&s, GPTQ_OPT_AUTO, QB_E_FORMAT, "model.layers.0.self_attn.q_proj.qweight");
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "model.safetensors"));
}
END_TEST

START_TEST(broken_scale_in_missing_shard)
{
    qbt_gptq_spec s = spec(4, 128, 1, 0);
    s.n_shards = 2;
    s.broken = QBT_BROKEN_SCALE_MISSING_SHARD;
    ck_assert_int_eq(qbt_gptq_write(tmp, &s, NULL), 0);
    {
        qlinear_model *m = (qlinear_model *)1;
        qb_status st = gptq_open_model(qbt_host(), tmp, GPTQ_OPT_AUTO, &m);
        ck_assert_int_ne(st, QB_OK);
        ck_assert_ptr_null(m);
        ck_assert_msg(strstr(qbt_host_last_error(), "model-00003-of-00003.safetensors") ||
                          strstr(qbt_host_last_error(), "q_proj.scales"),
                      "message: %s", qbt_host_last_error());
    }
}
END_TEST

START_TEST(broken_mismatched_shards)
{
    qbt_gptq_spec s = spec(4, 128, 1, 0);
    s.n_shards = 2;
    s.broken = QBT_BROKEN_MISMATCHED_SHARDS;
    expect_fail(&s, GPTQ_OPT_AUTO, QB_E_MISMATCH, "q_proj.scales");
}
END_TEST

START_TEST(broken_missing_qzeros)
{
    qbt_gptq_spec s = spec(4, 128, 1, 0);
    s.broken = QBT_BROKEN_MISSING_QZEROS;
    expect_fail(&s, GPTQ_OPT_AUTO, QB_E_NOT_FOUND, "model.layers.0.self_attn.q_proj.qzeros");
}
END_TEST

START_TEST(broken_g_idx_out_of_range)
{
    qbt_gptq_spec s = spec(4, 32, 1, 0);
    s.broken = QBT_BROKEN_BAD_GIDX;
    expect_fail(&s, GPTQ_OPT_AUTO, QB_E_FORMAT, "q_proj.g_idx: not a valid group map");
}
END_TEST

START_TEST(broken_group_size_vs_scales)
{
    /* config group size 33 while scales/g_idx were written for 32 */
    qbt_gptq_spec s = spec(4, 32, 1, 0);
    char path[1024], *cfg;
    FILE *f;
    long n;
    s.act_order = 1;
    ck_assert_int_eq(qbt_gptq_write(tmp, &s, NULL), 0);
    snprintf(path, sizeof(path), "%s/config.json", tmp);
    f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    cfg = calloc(1, (size_t)n + 1);
    ck_assert_int_eq(fread(cfg, 1, (size_t)n, f), n);
    fclose(f);
    {
        char *p = strstr(cfg, "\"group_size\": 32");
        ck_assert_ptr_nonnull(p);
        memcpy(p, "\"group_size\": 33", 16);
    }
    ck_assert_int_eq(qbt_write_text(path, cfg), 0);
    free(cfg);
    {
        qlinear_model *m = (qlinear_model *)1;
        ck_assert_int_eq(gptq_open_model(qbt_host(), tmp, GPTQ_OPT_AUTO, &m), QB_E_FORMAT);
        ck_assert_ptr_null(m);
        ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "model.layers.0.self_attn.q_proj"));
    }
}
END_TEST

START_TEST(broken_g_idx_group_counts)
{
    qbt_gptq_spec s = spec(4, 32, 1, 0);
    s.broken = QBT_BROKEN_GIDX_COUNTS;
    expect_fail(&s, GPTQ_OPT_AUTO, QB_E_FORMAT, "columns, group size 32 implies 32");
}
END_TEST

START_TEST(refuses_marlin_and_planar)
{
    qbt_gptq_spec s = spec(4, 128, 1, 0);
    char path[1024];
    qlinear_model *m = (qlinear_model *)1;
    ck_assert_int_eq(qbt_gptq_write(tmp, &s, NULL), 0);
    ck_assert_int_eq(qbt_write_llama_config(tmp, "{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 128, "
                                                 "\"sym\": true, \"checkpoint_format\": \"marlin\"}"),
                     0);
    ck_assert_int_eq(gptq_open_model(qbt_host(), tmp, GPTQ_OPT_AUTO, &m), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "marlin"));
    ck_assert_int_eq(qbt_write_llama_config(tmp, "{\"quant_method\": \"gptq\", \"bits\": 6, \"group_size\": 128, "
                                                 "\"sym\": true}"),
                     0);
    ck_assert_int_eq(gptq_open_model(qbt_host(), tmp, GPTQ_OPT_AUTO, &m), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "gptq_p"));
    snprintf(path, sizeof(path), "%s/quantize_config.json", tmp);
    ck_assert_int_eq(qbt_write_text(path, "{\"bits\": 8, \"group_size\": 128, \"sym\": true}"), 0);
    ck_assert_int_eq(qbt_write_llama_config(tmp, "{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 128, "
                                                 "\"sym\": true}"),
                     0);
    ck_assert_int_eq(gptq_open_model(qbt_host(), tmp, GPTQ_OPT_AUTO, &m), QB_E_MISMATCH);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "disagree"));
}
END_TEST

START_TEST(tokenizer_dir_when_present)
{
    qbt_gptq_spec s = spec(4, 128, 1, 0);
    qlinear_model *m = NULL;
    char path[1024];
    ck_assert_int_eq(qbt_gptq_write(tmp, &s, NULL), 0);
    ck_assert_int_eq(gptq_open_model(qbt_host(), tmp, GPTQ_OPT_AUTO, &m), QB_OK);
    ck_assert_ptr_null(m->tokenizer_dir);
    ck_assert_ptr_null(m->generation_config_json);
    qlinear_free(m);
    snprintf(path, sizeof(path), "%s/tokenizer_config.json", tmp);
    ck_assert_int_eq(qbt_write_text(path, "{}"), 0);
    snprintf(path, sizeof(path), "%s/generation_config.json", tmp);
    ck_assert_int_eq(qbt_write_text(path, "{\"bos_token_id\": 1}"), 0);
    ck_assert_int_eq(gptq_open_model(qbt_host(), tmp, GPTQ_OPT_AUTO, &m), QB_OK);
    ck_assert_str_eq(m->tokenizer_dir, tmp);
    ck_assert_str_eq(m->generation_config_json, "{\"bos_token_id\": 1}");
    qlinear_free(m);
}
END_TEST

static qb_status gptq_open_cb(const char *path, void *ctx)
{
    qlinear_model *m = NULL;
    qb_status st = gptq_open_model(qbt_host(), path, GPTQ_OPT_AUTO, &m);
    (void)ctx;
    qlinear_free(m);
    return st;
}

/* config.json and quantize_config.json are read by the one strict parser
 * (sdk/kit/qbk_json.h): every refusal names the file and the reason. */
START_TEST(strict_json_in_config_and_side_file)
{
    qbt_gptq_spec s = spec(4, 32, 1, 0);
    s.side_file = 1;
    ck_assert_int_eq(qbt_gptq_write(tmp, &s, NULL), 0);
    ck_assert_int_eq(gptq_open_cb(tmp, NULL), QB_OK);
    qbt_json_refusals(tmp, "config.json", "model_type", NULL, gptq_open_cb, NULL, NULL);
    qbt_json_refusals(tmp, "quantize_config.json", "bits", NULL, gptq_open_cb, NULL, NULL);
}
END_TEST

START_TEST(probe_scores)
{
    ck_assert_int_eq(gptq_config_probe("{\"quantization_config\": {\"quant_method\": \"gptq\"}}", 0), 90);
    ck_assert_int_eq(gptq_config_probe("{\"quantization_config\": {\"quant_method\": \"awq\"}}", 1), 0);
    ck_assert_int_eq(gptq_config_probe("{\"model_type\": \"llama\"}", 1), 50);
    ck_assert_int_eq(gptq_config_probe("{\"model_type\": \"llama\"}", 0), 0);
    ck_assert_int_eq(gptq_config_probe("{not json", 0), 0);
    ck_assert_int_eq(gptq_config_probe(NULL, 0), 0);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("gptq");
    TCase *g = tcase_create("good"), *b = tcase_create("broken");
    tcase_set_timeout(g, 120);
    tcase_add_checked_fixture(g, setup, teardown);
    tcase_add_checked_fixture(b, setup, teardown);
    tcase_add_test(g, gptq4_g128_sym_v1);
    tcase_add_test(g, gptq4_g128_sym_v2);
    tcase_add_test(g, gptq4_sym_no_label_data_decides);
    tcase_add_test(g, gptq4_sym_wrong_label_data_wins);
    tcase_add_test(g, gptq4_asym_v1_label);
    tcase_add_test(g, gptq4_asym_v2_label);
    tcase_add_test(g, gptq4_asym_no_label_needs_option);
    tcase_add_test(g, gptq4_act_order);
    tcase_add_test(g, gptq4_asym_v1_zero0_kernel_view);
    tcase_add_test(g, gptq2_g32_sym_v1);
    tcase_add_test(g, gptq3_g128_sym_v1);
    tcase_add_test(g, gptq3_g32_asym_v1_act_order);
    tcase_add_test(g, gptq8_per_channel_asym_v2);
    tcase_add_test(g, gptq8_g128_sym_v1_act_order);
    tcase_add_test(g, gptq4_sharded_side_file);
    tcase_add_test(g, gptq_pack_dtype_words);
    tcase_add_test(g, gptq_dynamic_overrides);
    tcase_add_test(g, gptq_dynamic_stacked_quantifiers);
    tcase_add_test(g, gptq_option_overrides_data_with_warning);
    tcase_add_test(b, broken_desc_act_without_g_idx);
    tcase_add_test(b, broken_qweight_shape_vs_bits);
    tcase_add_test(b, broken_scale_in_missing_shard);
    tcase_add_test(b, broken_mismatched_shards);
    tcase_add_test(b, broken_missing_qzeros);
    tcase_add_test(b, broken_g_idx_out_of_range);
    tcase_add_test(b, broken_group_size_vs_scales);
    tcase_add_test(b, broken_g_idx_group_counts);
    tcase_add_test(b, refuses_marlin_and_planar);
    tcase_add_test(b, probe_scores);
    tcase_add_test(b, strict_json_in_config_and_side_file);
    tcase_add_test(g, tokenizer_dir_when_present);
    suite_add_tcase(s, g);
    suite_add_tcase(s, b);
    return s;
}
