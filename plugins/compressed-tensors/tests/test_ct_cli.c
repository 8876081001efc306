/*
 * CLI-level tests of the compressed-tensors and fp8 readers through the
 * built `quantbridge` ($QB_TEST_BIN with the in-tree config, plugins and
 * the sm86-w4a16 writer): inspect names format, bits, strategy and group
 * size; convert repacks symmetric int4 exactly when the target group size
 * divides the source group (manifest exact: true, rel_rmse 0) and records
 * rel_rmse where it requantizes (asymmetric, int8, act-order, FP8); broken
 * checkpoints exit 1 with a `quantbridge: error:` line and leave no output.
 */
#define _XOPEN_SOURCE 700
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "qbt_run.h"
#include "gen_ct.h"
#include "qbt_fs.h"
#include "qbt_host.h"

static char *tmp;
static char *paths[64]; /* sources written by a test, freed in teardown */
static size_t n_paths;

static const char *keep(const char *p)
{
    ck_assert_uint_lt(n_paths, 64);
    paths[n_paths] = strdup(p);
    ck_assert_ptr_nonnull(paths[n_paths]);
    return paths[n_paths++];
}

static void setup(void)
{
    tmp = qbt_tmpdir("ct-cli");
    ck_assert_ptr_nonnull(tmp);
    ck_assert_ptr_nonnull(getenv("QB_TEST_BIN"));
}

static void teardown(void)
{
    while (n_paths)
        free(paths[--n_paths]);
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

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *s;
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    s = calloc(1, (size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), n);
    fclose(f);
    return s;
}

typedef struct tally {
    int quant, exact, lossy;
    double max_rmse;
} tally;

/* Converts src with --group-size gs; tallies manifest tensors whose
 * source_encoding starts with prefix. */
static tally convert(const char *src, int gs, const char *prefix)
{
    char args[4096], *out, *text, mpath[1100];
    cJSON *m;
    const cJSON *ts, *t;
    tally r = {0, 0, 0, 0.0};

    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' --group-size %d", src,
             sub("out"), gs);
    ck_assert_msg(qbt_run_line(args, &out) == 0, "convert %s failed: %s", src, out);
    free(out);
    snprintf(mpath, sizeof(mpath), "%s/manifest.json", sub("out"));
    text = slurp(mpath);
    m = cJSON_Parse(text);
    ck_assert_ptr_nonnull(m);
    ts = cJSON_GetObjectItemCaseSensitive(m, "tensors");
    ck_assert_ptr_nonnull(ts);
    cJSON_ArrayForEach(t, ts) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(t, "source_encoding");
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(t, "exact");
        const cJSON *rr = cJSON_GetObjectItemCaseSensitive(t, "rel_rmse");
        if (!cJSON_IsString(e) || strncmp(e->valuestring, prefix, strlen(prefix)) != 0)
            continue;
        r.quant++;
        ck_assert(cJSON_IsNumber(rr));
        if (cJSON_IsTrue(x)) {
            r.exact++;
            ck_assert(rr->valuedouble == 0.0);
        } else {
            r.lossy++;
            ck_assert(rr->valuedouble > 0.0);
            if (rr->valuedouble > r.max_rmse)
                r.max_rmse = rr->valuedouble;
        }
    }
    cJSON_Delete(m);
    free(text);
    qbt_rmtree(sub("out"));
    return r;
}

static const char *write_ct(const char *name, qbt_ct_spec s)
{
    const char *dir = keep(sub(name));
    ck_assert_int_eq(qbt_ct_write(dir, &s, NULL), 0);
    return dir;
}

static const char *write_fp8(const char *name, qbt_fp8_spec s)
{
    const char *dir = keep(sub(name));
    ck_assert_int_eq(qbt_fp8_write(dir, &s, NULL), 0);
    return dir;
}

START_TEST(inspect_names_format_bits_group)
{
    char args[2048], *out;
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 1, .strategy = QBT_CQ_GROUP,
                     .gs = 32, .act_order = 1, .shards = 2, .seed = 1};
    qbt_fp8_spec f = {.strategy = QBT_CQ_BLOCK, .bh = 48, .bw = 40, .shards = 1, .seed = 2};
    const char *src = write_ct("ct", s);

    snprintf(args, sizeof(args), "inspect '%s'", src);
    ck_assert_int_eq(qbt_run_line(args, &out), 0);
    ck_assert_msg(strstr(out, "compressed-tensors") && strstr(out, "int4") &&
                      strstr(out, "group_size 32") && strstr(out, "symmetric") &&
                      strstr(out, "act-order") && strstr(out, "ct int4 g32 sym act-order"),
                  "inspect output: %s", out);
    free(out);
    src = write_fp8("fp8", f);
    snprintf(args, sizeof(args), "inspect '%s'", src);
    ck_assert_int_eq(qbt_run_line(args, &out), 0);
    ck_assert_msg(strstr(out, "fp8") && strstr(out, "block 48x40") &&
                      strstr(out, "fp8 e4m3 block48x40"), "inspect output: %s", out);
    free(out);
}
END_TEST

START_TEST(sym_int4_exact_when_target_group_divides)
{
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 1, .strategy = QBT_CQ_GROUP,
                     .gs = 32, .shards = 3, .seed = 3};
    const char *src = write_ct("sym", s);
    tally t = convert(src, 32, "ct int4 g32 sym");
    ck_assert_int_eq(t.quant, 14);
    ck_assert_int_eq(t.exact, 14);
    t = convert(src, 16, "ct int4 g32 sym");
    ck_assert_int_eq(t.exact, 14);
    /* 128 does not divide 32: requantized, within 4-bit error */
    t = convert(src, 128, "ct int4 g32 sym");
    ck_assert_int_eq(t.lossy, 14);
    ck_assert(t.max_rmse < 0.1);
}
END_TEST

START_TEST(sym_int4_tensor_and_channel_exact)
{
    qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 1, .strategy = QBT_CQ_TENSOR,
                     .shards = 1, .seed = 4};
    tally t = convert(write_ct("tensor", s), 32, "ct int4 tensor sym");
    ck_assert_int_eq(t.exact, 14);
    s.strategy = QBT_CQ_CHANNEL;
    t = convert(write_ct("channel", s), 32, "ct int4 channel sym");
    ck_assert_int_eq(t.exact, 14);
}
END_TEST

START_TEST(mixed_schemes_exact_and_lossy)
{
    qbt_ct_spec s = {.format = "pack-quantized", .mixed = 1, .shards = 1, .seed = 5};
    const char *src = write_ct("mixed", s);
    tally a = convert(src, 32, "ct int4 g32 sym");
    tally b = convert(src, 32, "ct int8 channel sym");
    ck_assert_int_eq(a.exact, 8);
    ck_assert_int_eq(b.lossy, 5); /* layer 1 down_proj is ignored: dense */
    ck_assert(b.max_rmse < 0.1);
}
END_TEST

static void lossy_ct(const char *tag, qbt_ct_spec s, const char *prefix)
{
    tally t = convert(write_ct(tag, s), 32, prefix);
    ck_assert_msg(t.quant == 14 && t.lossy == 14, "%s: %d quant %d lossy", tag, t.quant, t.lossy);
    ck_assert_msg(t.max_rmse < 0.12, "%s: rel_rmse %g", tag, t.max_rmse);
}

START_TEST(requantized_variants_record_rmse)
{
    lossy_ct("asym", (qbt_ct_spec){.format = "pack-quantized", .bits = 4, .sym = 0,
                                   .strategy = QBT_CQ_GROUP, .gs = 32, .shards = 1, .seed = 6},
             "ct int4 g32 asym");
    lossy_ct("act", (qbt_ct_spec){.format = "pack-quantized", .bits = 4, .sym = 1,
                                  .strategy = QBT_CQ_GROUP, .gs = 32, .act_order = 1, .shards = 1,
                                  .seed = 7},
             "ct int4 g32 sym act-order");
    lossy_ct("w8", (qbt_ct_spec){.format = "pack-quantized", .bits = 8, .sym = 1,
                                 .strategy = QBT_CQ_CHANNEL, .shards = 1, .seed = 8},
             "ct int8 channel sym");
    lossy_ct("w8a8", (qbt_ct_spec){.format = "int-quantized", .bits = 8, .sym = 1,
                                   .strategy = QBT_CQ_CHANNEL, .act_quant = 1, .shards = 1,
                                   .seed = 9},
             "ct int8 channel sym int-quantized");
    lossy_ct("ctfp8", (qbt_ct_spec){.format = "float-quantized", .fp8 = 1, .bits = 8, .sym = 1,
                                    .strategy = QBT_CQ_CHANNEL, .shards = 1, .seed = 10},
             "ct fp8 channel sym float-quantized");
}
END_TEST

START_TEST(fp8_variants_record_rmse)
{
    static const struct { const char *tag; qbt_fp8_spec s; const char *prefix; } v[] = {
        {"b128", {.strategy = QBT_CQ_BLOCK, .bh = 128, .bw = 128, .shards = 1, .seed = 1},
         "fp8 e4m3 block128x128"},
        {"b48", {.strategy = QBT_CQ_BLOCK, .bh = 48, .bw = 40, .shards = 2, .seed = 2},
         "fp8 e4m3 block48x40"},
        {"tensor", {.strategy = QBT_CQ_TENSOR, .input_scale = 1, .shards = 1, .seed = 3},
         "fp8 e4m3 tensor"},
        {"channel", {.strategy = QBT_CQ_CHANNEL, .shards = 1, .seed = 4}, "fp8 e4m3 channel"},
        {"e5m2", {.strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .e5m2 = 1, .shards = 1, .seed = 5},
         "fp8 e5m2 block32x32"},
    };
    size_t i;
    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        tally t = convert(write_fp8(v[i].tag, v[i].s), 32, v[i].prefix);
        ck_assert_msg(t.quant == 14 && t.lossy == 14, "%s", v[i].tag);
        ck_assert_msg(t.max_rmse < 0.12, "%s: rel_rmse %g", v[i].tag, t.max_rmse);
    }
}
END_TEST

static void fails_cleanly(const char *src)
{
    char args[2048], *out;
    struct stat sb;
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s'", src, sub("out"));
    ck_assert_int_eq(qbt_run_line(args, &out), 1);
    ck_assert_msg(strstr(out, "quantbridge: error:"), "%s: output: %s", src, out);
    free(out);
    ck_assert_int_ne(stat(sub("out"), &sb), 0);
    snprintf(args, sizeof(args), "inspect '%s'", src);
    ck_assert_int_eq(qbt_run_line(args, &out), 1);
    ck_assert_msg(strstr(out, "quantbridge: error:"), "%s: inspect output: %s", src, out);
    free(out);
}

START_TEST(broken_checkpoints_fail_cleanly)
{
    static const int ct_cases[] = {QBT_CT_BROKEN_MISSING_SCALE, QBT_CT_BROKEN_LEFTOVER_PACKED,
                                   QBT_CT_BROKEN_LEFTOVER_ZP, QBT_CT_BROKEN_UNKNOWN_FORMAT,
                                   QBT_CT_BROKEN_MISSING_SHARD, QBT_CT_BROKEN_SHAPE,
                                   QBT_CT_BROKEN_SPARSE};
    static const int fp8_cases[] = {QBT_FP8_BROKEN_MISSING_SCALE, QBT_FP8_BROKEN_MISSING_SHARD,
                                    QBT_FP8_BROKEN_SCALE_SHAPE, QBT_FP8_BROKEN_LEFTOVER_SCALE};
    char name[64];
    size_t i;
    for (i = 0; i < sizeof(ct_cases) / sizeof(ct_cases[0]); i++) {
        qbt_ct_spec s = {.format = "pack-quantized", .bits = 4, .sym = 1,
                         .strategy = QBT_CQ_GROUP, .gs = 32, .shards = 3,
                         .broken = ct_cases[i], .seed = 30};
        snprintf(name, sizeof(name), "ct-broken-%zu", i);
        fails_cleanly(write_ct(name, s));
    }
    for (i = 0; i < sizeof(fp8_cases) / sizeof(fp8_cases[0]); i++) {
        qbt_fp8_spec s = {.strategy = QBT_CQ_BLOCK, .bh = 32, .bw = 32, .shards = 3,
                          .broken = fp8_cases[i], .seed = 31};
        snprintf(name, sizeof(name), "fp8-broken-%zu", i);
        fails_cleanly(write_fp8(name, s));
    }
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("ct-fp8-cli");
    TCase *c = tcase_create("cli");
    tcase_add_checked_fixture(c, setup, teardown);
    tcase_set_timeout(c, 300);
    tcase_add_test(c, inspect_names_format_bits_group);
    tcase_add_test(c, sym_int4_exact_when_target_group_divides);
    tcase_add_test(c, sym_int4_tensor_and_channel_exact);
    tcase_add_test(c, mixed_schemes_exact_and_lossy);
    tcase_add_test(c, requantized_variants_record_rmse);
    tcase_add_test(c, fp8_variants_record_rmse);
    tcase_add_test(c, broken_checkpoints_fail_cleanly);
    suite_add_tcase(s, c);
    return s;
}
