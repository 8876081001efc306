/*
 * CLI tests of the compressed-tensors writer's int4 rules (quant_rule
 * search|keep|auto, the kit's qbk_int4_rules.h) through the built
 * `quantbridge` ($QB_TEST_BIN), on a dense Hugging Face fixture (tests/gen,
 * hf-dense, outlier-heavy weights):
 *   - `--writer compressed-tensors --option quant_rule=search --option
 *     dtype=f16` and `--writer sm86-w4a16 --option quant_rule=search` at the
 *     same group size give every linear the same int4 codes and the same
 *     fp16 scales: the CT file's weight_packed (pack_to_int32, uint4b8:
 *     code + 8) and weight_scale against the W4A16 file's packed nibbles
 *     (q + 8, low nibble even) and scales, each read from its safetensors;
 *   - verify passes, the report's figures equal verify's measurement, and
 *     every linear's rel RMSE is at most the absmax rule's on the source;
 *   - the rule is named in the dry-run plan; schemes it does not apply to
 *     are refused naming the rule and the scheme.
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gen_hf_dense.h"
#include "qbt_fs.h"
#include "qbt_report.h"
#include "qbt_run.h"

#define GS 32
#define LAYERS 2

static char *tmp;

static void setup(void)
{
    tmp = qbt_tmpdir("ctw-rule");
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

/* One safetensors file: its bytes and parsed header (the format: an 8-byte
 * little-endian header length, the JSON header, then the data whose
 * data_offsets are relative to the end of the header). */
typedef struct st_file {
    char *bytes;
    size_t len;
    uint64_t hlen;
    cJSON *hdr;
} st_file;

static void st_open(st_file *f, const char *path)
{
    char *js;
    f->bytes = qbt_read_file(path, &f->len);
    ck_assert_uint_ge(f->len, 8);
    memcpy(&f->hlen, f->bytes, 8); /* little-endian host (x86-64, aarch64) */
    ck_assert_uint_le(8 + f->hlen, f->len);
    js = strndup(f->bytes + 8, (size_t)f->hlen);
    f->hdr = cJSON_Parse(js);
    free(js);
    ck_assert_ptr_nonnull(f->hdr);
}

static void st_close(st_file *f)
{
    cJSON_Delete(f->hdr);
    free(f->bytes);
}

/* Tensor `name`: its data, dtype checked, shape into d0/d1 (d1 1 for 1-D). */
static const void *st_get(const st_file *f, const char *name, const char *dtype, int64_t *d0,
                          int64_t *d1)
{
    cJSON *t = cJSON_GetObjectItemCaseSensitive(f->hdr, name), *sh, *off;
    uint64_t a, b;
    ck_assert_msg(t != NULL, "no tensor %s", name);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(t, "dtype")->valuestring, dtype);
    sh = cJSON_GetObjectItemCaseSensitive(t, "shape");
    off = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
    *d0 = (int64_t)cJSON_GetArrayItem(sh, 0)->valuedouble;
    *d1 = cJSON_GetArraySize(sh) > 1 ? (int64_t)cJSON_GetArrayItem(sh, 1)->valuedouble : 1;
    a = (uint64_t)cJSON_GetArrayItem(off, 0)->valuedouble;
    b = (uint64_t)cJSON_GetArrayItem(off, 1)->valuedouble;
    ck_assert_uint_le(8 + f->hlen + b, f->len);
    ck_assert_uint_le(a, b);
    return f->bytes + 8 + f->hlen + a;
}

static qbt_hfd_spec spec(void)
{
    qbt_hfd_spec s = {.arch = "llama", .dtype = "bf16", .layers = LAYERS, .hidden = 64,
                      .intermediate = 96, .vocab = 40, .tied = 0, .shards = 1,
                      .seed = 11 | QBT_HFD_HEAVY};
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    return s;
}

static void run_ok(const char *args)
{
    char *out = NULL;
    int rc = qbt_run_line(args, &out);
    ck_assert_msg(rc == 0, "%s: exit %d\n%s", args, rc, out ? out : "");
    free(out);
}

/* rel_rmse of each quantized tensor of out/quantbridge-report.json, looked
 * up by name in `other`'s report; asserts this one's is at most other's and
 * returns how many were strictly smaller (*n: how many compared). */
static int rmse_not_above(const char *out, const char *other, int *n)
{
    char p[1100], q[1100];
    char *a, *b;
    cJSON *ja, *jb, *t;
    int less = 0;
    snprintf(p, sizeof p, "%s/quantbridge-report.json", out);
    snprintf(q, sizeof q, "%s/quantbridge-report.json", other);
    a = qbt_read_file(p, NULL);
    b = qbt_read_file(q, NULL);
    ja = cJSON_Parse(a);
    jb = cJSON_Parse(b);
    ck_assert_ptr_nonnull(ja);
    ck_assert_ptr_nonnull(jb);
    *n = 0;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(ja, "tensors"))
    {
        const char *name = cJSON_GetObjectItemCaseSensitive(t, "name")->valuestring;
        cJSON *u;
        double ra, rb;
        if (strcmp(cJSON_GetObjectItemCaseSensitive(t, "action")->valuestring, "quantized") != 0)
            continue;
        ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItemCaseSensitive(t, "why")->valuestring,
                                     "quant_rule search"));
        cJSON_ArrayForEach(u, cJSON_GetObjectItemCaseSensitive(jb, "tensors"))
            if (strcmp(cJSON_GetObjectItemCaseSensitive(u, "name")->valuestring, name) == 0)
                break;
        ck_assert_msg(u != NULL, "%s missing from %s", name, q);
        ra = cJSON_GetObjectItemCaseSensitive(t, "rel_rmse")->valuedouble;
        rb = cJSON_GetObjectItemCaseSensitive(u, "rel_rmse")->valuedouble;
        ck_assert_msg(ra <= rb, "%s: search rel_rmse %.9g above absmax's %.9g", name, ra, rb);
        less += ra < rb;
        (*n)++;
    }
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    free(a);
    free(b);
    return less;
}

START_TEST(test_search_matches_w4a16)
{
    qbt_hfd_spec s = spec();
    char args[4096];
    st_file ct, w4;
    int layer, linears = 0, negative = 0, n = 0, less;

    ck_assert_int_eq(qbt_hfd_write(&s, sub("src")), 0);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer compressed-tensors "
             "--option quant_rule=search --option dtype=f16 --option group_size=%d --verify -q",
             sub("src"), sub("ct"), GS);
    run_ok(args);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer compressed-tensors "
             "--option quant_rule=absmax --option dtype=f16 --option group_size=%d -q",
             sub("src"), sub("ct-absmax"), GS);
    run_ok(args);
    snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer sm86-w4a16 "
             "--option quant_rule=search --group-size %d -q", sub("src"), sub("w4"), GS);
    run_ok(args);

    st_open(&ct, sub("ct/model.safetensors"));
    for (layer = 0; layer < LAYERS; layer++) {
        char path[1100];
        cJSON *t;
        snprintf(path, sizeof path, "%s/layer_%02d.safetensors", sub("w4"), layer);
        st_open(&w4, path);
        cJSON_ArrayForEach(t, w4.hdr)
        {
            char base[256], nm[400];
            const char *dot = strstr(t->string, ".packed");
            const uint8_t *wp;
            const int32_t *cp;
            const uint16_t *ws, *cs;
            int64_t r0, c0, r1, c1, r2, g2, r3, g3, r, c;
            if (!dot || dot[7] != '\0')
                continue;
            snprintf(base, sizeof base, "%.*s", (int)(dot - t->string), t->string);
            wp = st_get(&w4, t->string, "U8", &r0, &c0);
            snprintf(nm, sizeof nm, "%s.scales", base);
            ws = st_get(&w4, nm, "F16", &r2, &g2);
            snprintf(nm, sizeof nm, "model.layers.%d.%s.weight_packed", layer, base);
            cp = st_get(&ct, nm, "I32", &r1, &c1);
            snprintf(nm, sizeof nm, "model.layers.%d.%s.weight_scale", layer, base);
            cs = st_get(&ct, nm, "F16", &r3, &g3);
            ck_assert_int_eq(r0, r1);
            ck_assert_int_eq(c0 * 2, c1 * 8); /* both: cols a multiple of 8 here */
            ck_assert_int_eq(r2, r0);
            ck_assert_int_eq(r3, r0);
            ck_assert_int_eq(g2, g3);
            ck_assert_int_eq(g2, c0 * 2 / GS);
            for (r = 0; r < r0; r++)
                for (c = 0; c < c0 * 2; c++) {
                    unsigned a = (wp[r * c0 + c / 2] >> (4 * (c & 1))) & 15u;
                    unsigned b = ((uint32_t)cp[r * c1 + c / 8] >> (4 * (c % 8))) & 15u;
                    ck_assert_msg(a == b, "%s [%lld, %lld]: W4A16 nibble %u, CT %u", base,
                                  (long long)r, (long long)c, a, b);
                }
            ck_assert_mem_eq(ws, cs, (size_t)(r2 * g2) * 2);
            for (r = 0; r < r2 * g2; r++)
                negative += (ws[r] & 0x8000u) != 0;
            linears++;
        }
        st_close(&w4);
    }
    st_close(&ct);
    /* 7 linears per llama layer; the search put some extremes on code -8
     * (a negative scale), so that path of both writers was compared too */
    ck_assert_int_eq(linears, 7 * LAYERS);
    ck_assert_int_gt(negative, 0);

    ck_assert_int_eq(qbt_report_matches_verify(sub("src"), sub("ct"), "compressed-tensors"),
                     7 * LAYERS);
    ck_assert_int_eq(qbt_report_matches_verify(sub("src"), sub("ct-absmax"), "compressed-tensors"),
                     7 * LAYERS);
    less = rmse_not_above(sub("ct"), sub("ct-absmax"), &n);
    ck_assert_int_eq(n, 7 * LAYERS);
    ck_assert_int_gt(less, 0);
}
END_TEST

START_TEST(test_rule_in_plan_and_refusals)
{
    static const char *const rules[] = {"search", "keep", "auto"};
    static const char *const schemes[] = {"w8a16", "w4a16_asym", "fp8", "nvfp4"};
    qbt_hfd_spec s = spec();
    char args[2048], *out = NULL, want[64];
    size_t i, j;

    ck_assert_int_eq(qbt_hfd_write(&s, sub("src")), 0);
    for (i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "convert --source '%s' --writer compressed-tensors --option "
                 "quant_rule=%s --option dtype=bf16 --option group_size=%d --dry-run", sub("src"),
                 rules[i], GS);
        ck_assert_int_eq(qbt_run_line(args, &out), 0);
        snprintf(want, sizeof want, "(quant_rule %s, bfloat16 scale)", rules[i]);
        ck_assert_int_eq(qbt_count_lines(out, want), 7 * LAYERS);
        free(out);
        for (j = 0; j < 4; j++) {
            snprintf(args, sizeof args, "convert --source '%s' --output '%s' --writer "
                     "compressed-tensors --option quant_rule=%s --option scheme=%s", sub("src"),
                     sub("refused"), rules[i], schemes[j]);
            ck_assert_int_eq(qbt_run_line(args, &out), 1);
            snprintf(want, sizeof want, "quant_rule %s does not apply to scheme %s", rules[i],
                     schemes[j]);
            ck_assert_msg(strstr(out, want) != NULL, "%s\n%s", args, out);
            ck_assert(!qbt_exists(sub("refused")));
            free(out);
        }
    }
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("ctw_rule_cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_search_matches_w4a16);
    tcase_add_test(tc, test_rule_in_plan_and_refusals);
    suite_add_tcase(s, tc);
    return s;
}
