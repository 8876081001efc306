/*
 * DeepSeek-V3-style FP8 checkpoints end to end through the built program
 * ($QB_TEST_BIN): tests/gen/gen_fp8.c qbt_fp8_ds_write (128x128
 * weight_scale_inv with partial edge blocks, BF16 norms / router /
 * embeddings / heads, F32 e_score_correction_bias, the MTP layer
 * model.layers.{num_hidden_layers}.*), and the mtp reader option of the fp8
 * and hf-dense readers (docs/formats/fp8.md, "DeepSeek-V3 MTP layers").
 *
 * Ground truth is computed here from the generator's codes and scales
 * (qbt_fp8_ds_values: (float)e4m3 * scale_inv, one float32 product), not by
 * the reader under test. Checked:
 *   - deepseek_v3 and deepseek_v2 FP8 to hf-dense f32: every tensor
 *     bit-equal; with the default mtp=drop no MTP tensor is written and the
 *     summary counts the dropped ones; with mtp=keep all of them are, exact;
 *   - to sm86-w4a16: every FP8 linear of the decoder layers in the
 *     manifest, nothing else; verify --no-model-check passes (the CPU forward
 *     pass does not run deepseek yet); with mtp=keep the writer refuses,
 *     naming the MTP tensor and the option;
 *   - a bf16 hf-dense deepseek_v3 source with an MTP layer: dropped by
 *     default, kept with mtp=keep, bit-equal either way.
 */
#define _GNU_SOURCE
#include <cJSON.h>
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gen_ct.h"
#include "gen_hf_dense.h"
#include "qbt_args.h"
#include "qbt_fs.h"
#include "qbt_run.h"

static char g_tmp[512];

static void setup(void)
{
    const char *base = getenv("QB_TEST_TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%s/fp8_ds_XXXXXX", base ? base : "/tmp");
    if (base)
        mkdir(base, 0755);
    ck_assert_ptr_nonnull(mkdtemp(g_tmp));
}

static void teardown(void)
{
    qbt_rmtree(g_tmp);
}

/* Runs the tool; exit status; stdout and stderr into out (if non-NULL). */
static int run_tool(const char *args, char *out, size_t out_len)
{
    char **av = qbt_args_split(args);
    qbt_result r;
    int st;
    qbt_run(&r, (const char *const *)av);
    qbt_args_free(av);
    if (out)
        snprintf(out, out_len, "%s\n%s", r.out ? r.out : "", r.err ? r.err : "");
    st = r.status;
    qbt_result_free(&r);
    return st;
}

/* 3 layers (1 dense), 4 experts, MTP layer 3; hidden 160 and the widths
 * derived from it are not multiples of 128: partial edge blocks. */
static qbt_hfd_spec spec_of(int v3)
{
    qbt_hfd_spec s = {.arch = v3 ? "deepseek_v3" : "deepseek_v2", .dtype = "bf16", .layers = 3,
                      .hidden = 160, .intermediate = 200, .vocab = 64, .shards = 1,
                      .seed = v3 ? 3 : 4, .n_routed_experts = 4, .first_k_dense = 1,
                      .mtp_layers = v3 ? 1 : -1};
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    return s;
}

/* Checks DIR/model.safetensors (hf-dense f32 output) against the truth of
 * every generated tensor; MTP ones (layer >= s->layers) only when keep.
 * fp8: truth from qbt_fp8_ds_values, else the bf16 storage rounding. */
static void check_f32(const qbt_hfd_spec *s, const char *dir, int keep, int fp8)
{
    qbt_hfd_tensor *t = NULL;
    size_t n = 0, i, k, len;
    int expected = 0, layer;
    char path[800], *bytes;
    uint64_t hl;
    cJSON *hdr;
    const uint8_t *data;

    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    bytes = qbt_read_file(path, &len);
    ck_assert_ptr_nonnull(bytes);
    memcpy(&hl, bytes, 8);
    hdr = cJSON_ParseWithLength(bytes + 8, (size_t)hl);
    ck_assert_ptr_nonnull(hdr);
    data = (const uint8_t *)bytes + 8 + hl;
    ck_assert_int_eq(qbt_hfd_tensors(s, &t, &n), 0);
    for (i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(hdr, t[i].name);
        int mtp = sscanf(t[i].name, "model.layers.%d.", &layer) == 1 && layer >= s->layers;
        size_t ne = qbt_hfd_numel(&t[i]);
        float *want;
        const uint8_t *got;
        if (mtp && !keep) {
            ck_assert_msg(e == NULL, "%s written with mtp=drop", t[i].name);
            continue;
        }
        ck_assert_msg(e != NULL, "%s missing", t[i].name);
        ck_assert_str_eq(cJSON_GetObjectItem(e, "dtype")->valuestring, "F32");
        expected++;
        want = malloc(ne * sizeof *want);
        if (fp8) {
            ck_assert_int_eq(qbt_fp8_ds_values(s, &t[i], want), 0);
        } else {
            qbt_hfd_fill(s, &t[i], want);
            for (k = 0; k < ne; k++)
                want[k] = qbt_hfd_round(qbt_hfd_storage(s, &t[i]), want[k]);
        }
        got = data + (size_t)cJSON_GetArrayItem(cJSON_GetObjectItem(e, "data_offsets"), 0)
                         ->valuedouble;
        for (k = 0; k < ne; k++) {
            float g;
            memcpy(&g, got + 4 * k, 4);
            ck_assert_msg(memcmp(&g, &want[k], 4) == 0, "%s[%zu]: %g != %g", t[i].name, k,
                          (double)g, (double)want[k]);
        }
        free(want);
    }
    {
        int count = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, hdr) count += strcmp(e->string, "__metadata__") != 0;
        ck_assert_int_eq(count, expected);
    }
    cJSON_Delete(hdr);
    free(bytes);
    free(t);
}

START_TEST(test_fp8_to_hf_dense_exact)
{
    qbt_hfd_spec s = spec_of(_i == 0);
    char src[700], out[700], args[2000], msg[16384];
    snprintf(src, sizeof src, "%s/src", g_tmp);
    ck_assert_int_eq(qbt_fp8_ds_write(src, &s), 0);
    snprintf(out, sizeof out, "%s/drop", g_tmp);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f32", src, out);
    ck_assert_msg(run_tool(args, msg, sizeof msg) == 0, "%s", msg);
    check_f32(&s, out, 0, 1);
    if (s.mtp_layers > 0) {
        qbt_hfd_tensor *t = NULL;
        size_t n = 0, i, n_mtp = 0;
        char want[96];
        int layer;
        ck_assert_int_eq(qbt_hfd_tensors(&s, &t, &n), 0);
        for (i = 0; i < n; i++)
            if (sscanf(t[i].name, "model.layers.%d.", &layer) == 1 && layer >= s.layers)
                n_mtp++; /* weights with their scales count once, as presented */
        free(t);
        /* the summary names how many were dropped */
        snprintf(args, sizeof args, "inspect '%s'", src);
        ck_assert_msg(run_tool(args, msg, sizeof msg) == 0, "%s", msg);
        snprintf(want, sizeof want, "%zu MTP tensors dropped (mtp=drop)", n_mtp);
        ck_assert_msg(strstr(msg, want) != NULL, "no '%s' in %.2000s", want,
                      strstr(msg, "summary") ? strstr(msg, "summary") : msg);
        snprintf(out, sizeof out, "%s/keep", g_tmp);
        snprintf(args, sizeof args,
                 "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f32 "
                 "--option mtp=keep",
                 src, out);
        ck_assert_msg(run_tool(args, msg, sizeof msg) == 0, "%s", msg);
        check_f32(&s, out, 1, 1);
    }
}
END_TEST

START_TEST(test_fp8_to_w4a16)
{
    qbt_hfd_spec s = spec_of(_i == 0);
    qbt_hfd_tensor *t = NULL;
    size_t n = 0, i;
    int n_lin = 0, layer;
    char src[700], out[700], args[2000], msg[16384], key[300], path[800], *text;
    cJSON *man, *tensors;

    snprintf(src, sizeof src, "%s/src", g_tmp);
    snprintf(out, sizeof out, "%s/w4", g_tmp);
    ck_assert_int_eq(qbt_fp8_ds_write(src, &s), 0);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer sm86-w4a16", src,
             out);
    ck_assert_msg(run_tool(args, msg, sizeof msg) == 0, "%s", msg);
    snprintf(path, sizeof path, "%s/manifest.json", out);
    text = qbt_read_file(path, NULL);
    man = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(man);
    tensors = cJSON_GetObjectItem(man, "tensors");
    ck_assert_int_eq(qbt_hfd_tensors(&s, &t, &n), 0);
    for (i = 0; i < n; i++) {
        int off = 0;
        if (!qbt_fp8_ds_is_fp8(&t[i]) ||
            sscanf(t[i].name, "model.layers.%d.%n", &layer, &off) != 1 || layer >= s.layers)
            continue;
        snprintf(key, sizeof key, "layer_%02d.safetensors:%.*s", layer,
                 (int)(strlen(t[i].name + off) - 7), t[i].name + off);
        ck_assert_msg(cJSON_GetObjectItemCaseSensitive(tensors, key) != NULL, "manifest lacks %s",
                      key);
        n_lin++;
    }
    ck_assert_int_eq(cJSON_GetArraySize(tensors), n_lin);
    cJSON_Delete(man);
    free(t);
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s' --no-model-check", src, out);
    ck_assert_msg(run_tool(args, msg, sizeof msg) == 0, "%s", msg);
    if (s.mtp_layers > 0) {
        snprintf(args, sizeof args,
                 "convert --source '%s' --output '%s/w4keep' --writer sm86-w4a16 --option mtp=keep",
                 src, g_tmp);
        ck_assert_int_eq(run_tool(args, msg, sizeof msg), 1);
        ck_assert_msg(strstr(msg, "model.layers.3.") && strstr(msg, "mtp=drop"), "%s", msg);
    }
}
END_TEST

START_TEST(test_hf_dense_mtp_option)
{
    qbt_hfd_spec s = spec_of(1);
    char src[700], out[700], args[2000], msg[16384];
    snprintf(src, sizeof src, "%s/bf16", g_tmp);
    ck_assert_int_eq(qbt_hfd_write(&s, src), 0);
    snprintf(out, sizeof out, "%s/drop", g_tmp);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f32", src, out);
    ck_assert_msg(run_tool(args, msg, sizeof msg) == 0, "%s", msg);
    check_f32(&s, out, 0, 0);
    snprintf(out, sizeof out, "%s/keep", g_tmp);
    snprintf(args, sizeof args,
             "convert --source '%s' --output '%s' --writer hf-dense --option dtype=f32 --option "
             "mtp=keep",
             src, out);
    ck_assert_msg(run_tool(args, msg, sizeof msg) == 0, "%s", msg);
    check_f32(&s, out, 1, 0);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *su = suite_create("fp8_deepseek");
    TCase *tc = tcase_create("deepseek");
    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_fp8_to_hf_dense_exact, 0, 2);
    tcase_add_loop_test(tc, test_fp8_to_w4a16, 0, 2);
    tcase_add_test(tc, test_hf_dense_mtp_option);
    suite_add_tcase(su, tc);
    return su;
}
