/*
 * The gguf writer through the quantbridge program, against ground truth:
 * a GPTQ 4-bit symmetric checkpoint (group 128, and group 32 sharded)
 * becomes Q4_0 whose codes and scales are the GPTQ ones, code for code and
 * scale for scale (read back through the gguf reader's Q4_0 grid, in
 * Hugging Face row order, so the Q/K permutation is checked too), and
 * `convert --dry-run` says so per tensor; an asymmetric GPTQ checkpoint has
 * no exact path and is quantized to Q8_0 (the manifest says so, and the
 * values are within Q8_0's step of the GPTQ values). Byte equality with
 * llama.cpp's quantizer is the interop tier's (tests/interop/test_gguf_writer.py).
 */
#include <check.h>

#include "qbt_check_main.h"
#include "gen_gptq.h"
#include "gguf_reader.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_run.h"

#include <cjson/cJSON.h>
#include <quantbridge/qb_half.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run_line(const char *fmt, const char *a, const char *b, char **out)
{
    char line[4096];
    snprintf(line, sizeof(line), fmt, a, b);
    return qbt_run_line(line, out);
}

/* Converts a GPTQ fixture into a GGUF directory; returns its truth. */
static qbt_qmodel *gptq_to_gguf(const char *tag, const qbt_gptq_spec *sp, char **src, char **out)
{
    qbt_qmodel *truth = NULL;
    char *text = NULL;
    int rc;
    *src = qbt_mkdtemp(tag);
    ck_assert_int_eq(qbt_gptq_write(*src, sp, &truth), 0);
    *out = qbt_path(qbt_scratch(tag), "gguf-out");
    qbt_rmtree(*out);
    rc = run_line("convert --source '%s' --output '%s' --writer gguf", *src, *out, &text);
    ck_assert_msg(rc == 0, "convert failed:\n%s", text);
    free(text);
    return truth;
}

static cJSON *manifest(const char *out)
{
    char *p = qbt_path(out, "gguf-manifest.json");
    char *text = qbt_read_file(p, NULL);
    cJSON *m = cJSON_Parse(text);
    ck_assert_ptr_nonnull(m);
    free(text);
    free(p);
    return m;
}

static const cJSON *manifest_entry(const cJSON *m, const char *name)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(m, "tensors"))
    {
        if (strcmp(cJSON_GetObjectItem(t, "name")->valuestring, name) == 0)
            return t;
    }
    ck_abort_msg("manifest has no tensor %s", name);
    return NULL;
}

/* Every quantized linear of truth read back through the gguf reader's Q4_0
 * grid: codes equal, each 32-column block's scale the GPTQ group's fp16. */
static void check_exact(const qbt_qmodel *truth, const char *out)
{
    char *path = qbt_path(out, "model.gguf");
    gguf_reader *r = NULL;
    size_t i, n_checked = 0;
    ck_assert_msg(gguf_reader_open(qbt_host(), path, &r) == QB_OK, "%s", qbt_host_last_error());
    for (i = 0; i < truth->n_lin; i++) {
        const qbt_qlin *l = &truth->lin[i];
        char name[160];
        size_t k, idx = (size_t)-1;
        qb_grid_info gi;
        qb_grid_rows gr;
        int64_t nn, kk;
        if (!l->quantized)
            continue;
        snprintf(name, sizeof(name), "%s.weight", l->name);
        for (k = 0; k < gguf_reader_count(r); k++)
            if (strcmp(gguf_reader_tensor(r, k)->name, name) == 0)
                idx = k;
        ck_assert_msg(idx != (size_t)-1, "%s missing in the GGUF", name);
        memset(&gi, 0, sizeof(gi));
        gi.struct_size = sizeof(gi);
        ck_assert_msg(gguf_reader_get_grid_info(r, idx, &gi) == QB_OK, "%s: no Q4_0 grid: %s", name,
                      qbt_host_last_error());
        ck_assert_int_eq(gi.bits, 4);
        ck_assert_int_eq(gi.group_size, 32);
        gr.struct_size = sizeof(gr);
        gr.codes = malloc((size_t)(l->N * l->K));
        gr.scales = malloc((size_t)(l->N * gi.n_groups) * sizeof(float));
        gr.zeros = malloc((size_t)(l->N * gi.n_groups) * sizeof(int32_t));
        ck_assert_int_eq(gguf_reader_read_grid(r, idx, 0, l->N, &gr), QB_OK);
        for (nn = 0; nn < l->N; nn++)
            for (kk = 0; kk < l->K; kk++) {
                const int64_t g32 = kk / 32, gq = l->g_idx ? l->g_idx[kk] : kk / l->gs;
                ck_assert_msg(gr.codes[nn * l->K + kk] == l->codes[nn * l->K + kk], "%s [%lld, %lld]: code %u, GPTQ %u",
                              name, (long long)nn, (long long)kk, gr.codes[nn * l->K + kk], l->codes[nn * l->K + kk]);
                ck_assert_msg(qb_f32_bits(gr.scales[nn * gi.n_groups + g32]) ==
                                  qb_f32_bits(qb_f16_to_f32(l->scales[nn * l->G + gq])),
                              "%s row %lld block %lld: scale differs", name, (long long)nn, (long long)g32);
                ck_assert_int_eq(gr.zeros[nn * gi.n_groups + g32], 8);
                ck_assert_int_eq(l->zeros[nn * l->G + gq], 8);
            }
        free(gr.codes);
        free(gr.scales);
        free(gr.zeros);
        n_checked++;
    }
    ck_assert_uint_ge(n_checked, 7);
    gguf_reader_close(r);
    free(path);
}

static void exact_case(const char *tag, int64_t gs, int shards)
{
    qbt_gptq_spec sp = {4, gs, 1, 0, 0, 1, 0, shards, 0, 0, 0, 31, 0, 0};
    char *src, *out, *text = NULL;
    qbt_qmodel *truth = gptq_to_gguf(tag, &sp, &src, &out);
    cJSON *m = manifest(out);
    const cJSON *e = manifest_entry(m, "blk.0.attn_q.weight");
    ck_assert_str_eq(cJSON_GetObjectItem(e, "action")->valuestring, "exact");
    ck_assert_str_eq(cJSON_GetObjectItem(e, "type")->valuestring, "Q4_0");
    ck_assert(cJSON_GetObjectItem(e, "exact_blocks")->valuedouble == cJSON_GetObjectItem(e, "blocks")->valuedouble);
    ck_assert(cJSON_GetObjectItem(e, "blocks")->valuedouble > 0);
    check_exact(truth, out);
    /* the dry run says it before anything is written */
    ck_assert_int_eq(run_line("convert --source '%s' --output '%s/dry' --writer gguf --dry-run", src, out, &text), 0);
    ck_assert_msg(strstr(text, "blk.0.attn_q.weight Q4_0") && strstr(text, "exact"), "dry run:\n%s", text);
    free(text);
    cJSON_Delete(m);
    qbt_qmodel_free(truth);
    free(src);
    free(out);
}

START_TEST(gptq_g128_sym_is_q4_0_code_for_code)
{
    exact_case("ggw-g128", 128, 1);
}
END_TEST

START_TEST(gptq_g32_sharded_is_q4_0_code_for_code)
{
    exact_case("ggw-g32", 32, 2);
}
END_TEST

/* The W4A16 format keeps GPTQ's codes and fp16 scales: GPTQ -> W4A16 ->
 * GGUF ends with the GPTQ codes. */
START_TEST(w4a16_is_q4_0_code_for_code)
{
    qbt_gptq_spec sp = {4, 128, 1, 0, 0, 1, 0, 1, 0, 0, 0, 33, 0, 0};
    qbt_qmodel *truth = NULL;
    char *src = qbt_mkdtemp("ggw-w4"), *w4 = qbt_path(qbt_scratch("ggw-w4"), "w4a16");
    char *out = qbt_path(qbt_scratch("ggw-w4"), "gguf-out"), *text = NULL;
    ck_assert_int_eq(qbt_gptq_write(src, &sp, &truth), 0);
    qbt_rmtree(w4);
    qbt_rmtree(out);
    ck_assert_msg(run_line("convert --source '%s' --output '%s' --writer sm86-w4a16", src, w4, &text) == 0, "%s",
                  text);
    free(text);
    ck_assert_msg(run_line("convert --source '%s' --output '%s' --writer gguf", w4, out, &text) == 0, "%s", text);
    free(text);
    check_exact(truth, out);
    qbt_qmodel_free(truth);
    free(src);
    free(w4);
    free(out);
}
END_TEST

/* compressed-tensors int4 (group 32, and per channel) and int8 (per
 * channel) symmetric: every linear exact, every block carried over. */
START_TEST(compressed_tensors_sym_are_exact)
{
    static const struct {
        const char *variant, *type;
    } cases[] = {{"ct-w4a16-g32-sym", "Q4_0"}, {"ct-w4a16-channel-sym", "Q4_0"}, {"ct-w8a16-channel", "Q8_0"}};
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    char *dir = qbt_mkdtemp("ggw-ct"), cmd[4096], *text = NULL;
    size_t i;
    ck_assert_ptr_nonnull(bd);
    snprintf(cmd, sizeof(cmd), "'%s/tests/bin/qb-gen-ct' '%s'", bd, dir);
    ck_assert_int_eq(qbt_run_cmd(cmd, &text), 0);
    free(text);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *src = qbt_path(dir, cases[i].variant), *out = qbt_path(dir, "out");
        const cJSON *t;
        cJSON *m;
        int n_exact = 0;
        qbt_rmtree(out);
        ck_assert_msg(run_line("convert --source '%s' --output '%s' --writer gguf", src, out, &text) == 0, "%s", text);
        free(text);
        m = manifest(out);
        cJSON_ArrayForEach(t, cJSON_GetObjectItem(m, "tensors"))
        {
            const char *name = cJSON_GetObjectItem(t, "name")->valuestring;
            if (!strstr(name, "blk.") || !strstr(name, ".weight") || strstr(name, "norm"))
                continue;
            ck_assert_msg(strcmp(cJSON_GetObjectItem(t, "action")->valuestring, "exact") == 0, "%s: %s %s",
                          cases[i].variant, name, cJSON_GetObjectItem(t, "action")->valuestring);
            ck_assert_str_eq(cJSON_GetObjectItem(t, "type")->valuestring, cases[i].type);
            ck_assert(cJSON_GetObjectItem(t, "exact_blocks")->valuedouble ==
                      cJSON_GetObjectItem(t, "blocks")->valuedouble);
            n_exact++;
        }
        ck_assert_int_ge(n_exact, 7);
        cJSON_Delete(m);
        free(src);
        free(out);
    }
    free(dir);
}
END_TEST

START_TEST(gptq_asym_is_quantized)
{
    qbt_gptq_spec sp = {4, 128, 0, 0, 0, 1, 0, 1, 0, 0, 0, 32, 0, 0};
    char *src, *out;
    qbt_qmodel *truth = gptq_to_gguf("ggw-asym", &sp, &src, &out);
    cJSON *m = manifest(out);
    const cJSON *e = manifest_entry(m, "blk.0.ffn_down.weight");
    ck_assert_str_eq(cJSON_GetObjectItem(e, "action")->valuestring, "quantized");
    ck_assert_str_eq(cJSON_GetObjectItem(e, "type")->valuestring, "Q8_0");
    /* Q8_0's step is amax/127 per 32 values: the relative RMS error stays
     * well under 1% for any non-degenerate block */
    ck_assert(cJSON_GetObjectItem(e, "rel_rmse")->valuedouble > 0);
    ck_assert(cJSON_GetObjectItem(e, "rel_rmse")->valuedouble < 0.01);
    cJSON_Delete(m);
    qbt_qmodel_free(truth);
    free(src);
    free(out);
}
END_TEST

/* Sets config.json field `key` of dir to the JSON value `json`. */
static void set_config(const char *dir, const char *key, const char *json)
{
    char *p = qbt_path(dir, "config.json"), *text = qbt_read_file(p, NULL), *outp;
    cJSON *c = cJSON_Parse(text), *v = cJSON_Parse(json);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_nonnull(v);
    cJSON_DeleteItemFromObject(c, key);
    cJSON_AddItemToObject(c, key, v);
    outp = cJSON_Print(c);
    qbt_write_file(p, outp);
    cJSON_free(outp);
    cJSON_Delete(c);
    free(text);
    free(p);
}

/* Issue 28: what the writer cannot write as llama.cpp expects is refused
 * by name (exit 1, nothing at the destination): bad split options, rope
 * scaling with factor tensors on an architecture whose converter class
 * makes none, longrope factors of the wrong length. A split request
 * gives gguf-split's file names. */
START_TEST(refusals_and_split_names)
{
    static const struct {
        const char *opts, *config_key, *config_value, *needle;
    } cases[] = {
        {"--option split_max_size=12Q", NULL, NULL, "split_max_size"},
        {"--option split_max_size=1M --option split_max_tensors=3", NULL, NULL, "exclude each other"},
        {"", "rope_scaling", "{\"rope_type\": \"longrope\", \"long_factor\": [1], \"short_factor\": [1]}",
         "longrope"},
        {"", "rope_scaling", "{\"rope_type\": \"dynamic\", \"factor\": 2.0}", "dynamic"},
    };
    qbt_gptq_spec sp = {4, 128, 1, 0, 0, 1, 0, 1, 0, 0, 0, 33, 0, 0};
    qbt_qmodel *truth = NULL;
    char *src = qbt_mkdtemp("ggw-refuse"), *out = qbt_path(qbt_scratch("ggw-refuse"), "out"), *text = NULL;
    char line[4096];
    size_t i;
    ck_assert_int_eq(qbt_gptq_write(src, &sp, &truth), 0);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc;
        qbt_rmtree(out);
        if (cases[i].config_key)
            set_config(src, cases[i].config_key, cases[i].config_value);
        snprintf(line, sizeof(line), "convert --source '%s' --output '%s' --writer gguf %s", src, out, cases[i].opts);
        rc = qbt_run_line(line, &text);
        ck_assert_msg(rc == 1 && strstr(text, cases[i].needle), "case %zu: exit %d:\n%s", i, rc, text);
        ck_assert_msg(!qbt_exists(out), "case %zu: a refused conversion left %s", i, out);
        free(text);
        text = NULL;
    }
    set_config(src, "rope_scaling", "null");
    qbt_rmtree(out);
    snprintf(line, sizeof(line), "convert --source '%s' --output '%s' --writer gguf --option split_max_tensors=7", src,
             out);
    ck_assert_msg(qbt_run_line(line, &text) == 0, "%s", text);
    free(text);
    {
        /* ceil(tensors / 7) files named as llama_split_path names them */
        cJSON *m = manifest(out);
        int n = cJSON_GetArraySize(cJSON_GetObjectItem(m, "tensors")), files = (n + 6) / 7, k;
        char *one = qbt_path(out, "model.gguf"), name[64];
        ck_assert_int_gt(files, 1);
        snprintf(name, sizeof(name), "-of-%05d.gguf", files);
        ck_assert_int_eq(qbt_count_entries(out, name), files);
        for (k = 1; k <= files; k++) {
            char *f;
            snprintf(name, sizeof(name), "model-%05d-of-%05d.gguf", k, files);
            f = qbt_path(out, name);
            ck_assert_msg(qbt_exists(f), "%s missing", name);
            free(f);
        }
        ck_assert(!qbt_exists(one));
        free(one);
        cJSON_Delete(m);
    }
    qbt_qmodel_free(truth);
    free(src);
    free(out);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("gguf_writer");
    TCase *tc = tcase_create("gptq");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, gptq_g128_sym_is_q4_0_code_for_code);
    tcase_add_test(tc, gptq_g32_sharded_is_q4_0_code_for_code);
    tcase_add_test(tc, w4a16_is_q4_0_code_for_code);
    tcase_add_test(tc, compressed_tensors_sym_are_exact);
    tcase_add_test(tc, gptq_asym_is_quantized);
    tcase_add_test(tc, refusals_and_split_names);
    suite_add_tcase(s, tc);
    return s;
}
