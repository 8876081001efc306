/*
 * CLI-level tests of the gptq and awq readers through the built
 * `quantbridge` ($QB_TEST_BIN with the in-tree config, plugins and the
 * sm86-w4a16 writer): inspect names format, bits, group size, zero
 * convention and act-order; convert repacks exactly where the source grid
 * fits symmetric int4 (manifest exact: true) and records rel_rmse where it
 * requantizes; broken checkpoints exit 1 with one `quantbridge: error:`
 * line and leave no output directory.
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
#include "gen_gptq.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_st_writer.h"

static char *tmp;

static void setup(void)
{
    tmp = qbt_tmpdir("quant-cli");
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

/* Converts `src` with extra args and tallies the manifest's tensors whose
 * source_encoding starts with `enc_prefix`. */
static tally convert_and_tally(const char *src, const char *extra, const char *enc_prefix)
{
    char args[4096], *out, *text, mpath[1100];
    cJSON *m;
    const cJSON *ts, *t;
    tally r = {0, 0, 0, 0.0};
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' %s", src, sub("out"), extra);
    ck_assert_msg(qbt_run_line(args, &out) == 0, "convert failed: %s", out);
    free(out);
    snprintf(mpath, sizeof(mpath), "%s/manifest.json", sub("out"));
    text = slurp(mpath);
    m = cJSON_Parse(text);
    ck_assert_ptr_nonnull(m);
    ts = cJSON_GetObjectItemCaseSensitive(m, "tensors");
    ck_assert_ptr_nonnull(ts);
    cJSON_ArrayForEach(t, ts)
    {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(t, "source_encoding");
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(t, "exact");
        const cJSON *rr = cJSON_GetObjectItemCaseSensitive(t, "rel_rmse");
        if (!cJSON_IsString(e) || strncmp(e->valuestring, enc_prefix, strlen(enc_prefix)) != 0)
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

static qbt_gptq_spec gspec(int bits, int64_t gs, int sym, int v2)
{
    qbt_gptq_spec s;
    memset(&s, 0, sizeof(s));
    s.bits = bits;
    s.group_size = gs;
    s.sym = sym;
    s.v2 = v2;
    s.label = 1;
    s.n_shards = 1;
    s.seed = 4242u + (uint64_t)bits;
    return s;
}

static void write_gptq(const qbt_gptq_spec *s)
{
    ck_assert_int_eq(mkdir(sub("src"), 0777), 0);
    ck_assert_int_eq(qbt_gptq_write(sub("src"), s, NULL), 0);
}

static void expect_clean_failure(const char *extra, const char *needle)
{
    char args[4096], *out;
    struct stat sb;
    snprintf(args, sizeof(args), "convert --source '%s' --output '%s' %s", sub("src"), sub("out"), extra);
    ck_assert_int_eq(qbt_run_line(args, &out), 1);
    ck_assert_msg(strstr(out, "quantbridge: error:") != NULL, "%s", out);
    ck_assert_msg(strstr(out, needle) != NULL, "\"%s\" lacks \"%s\"", out, needle);
    ck_assert_int_ne(stat(sub("out"), &sb), 0);
    free(out);
}

START_TEST(inspect_gptq_names_everything)
{
    qbt_gptq_spec s = gspec(4, 32, 1, 0);
    char args[2048], *out;
    s.act_order = 1;
    write_gptq(&s);
    snprintf(args, sizeof(args), "inspect '%s'", sub("src"));
    ck_assert_int_eq(qbt_run_line(args, &out), 0);
    ck_assert_msg(strstr(out, "gptq") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "GPTQ 4-bit g32 sym v1 act-order") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "zero convention v1") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "gptq int4 g32 sym v1 act-order") != NULL, "%s", out);
    free(out);
}
END_TEST

START_TEST(inspect_warns_on_label_data_disagreement)
{
    /* label gptq_v2, every stored zero 7 (= symmetric v1): data wins, with a
     * warning that names the choice and the reason */
    qbt_gptq_spec s = gspec(4, 128, 1, 0);
    char args[2048], *out;
    s.wrong_label = 1;
    write_gptq(&s);
    snprintf(args, sizeof(args), "inspect '%s'", sub("src"));
    ck_assert_int_eq(qbt_run_line(args, &out), 0);
    ck_assert_msg(strstr(out, "checkpoint_format \"gptq_v2\" says v2") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "using v1") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "gptq int4 g128 sym v1") != NULL, "%s", out);
    free(out);
}
END_TEST

START_TEST(inspect_awq_names_everything)
{
    qbt_awq_spec s = {1, 1, 0, 64, NULL, 1, 77, NULL};
    char args[2048], *out;
    ck_assert_int_eq(mkdir(sub("src"), 0777), 0);
    ck_assert_int_eq(qbt_awq_write(sub("src"), &s, NULL), 0);
    snprintf(args, sizeof(args), "inspect '%s'", sub("src"));
    ck_assert_int_eq(qbt_run_line(args, &out), 0);
    ck_assert_msg(strstr(out, "AWQ 4-bit g64 asym (zero_point) gemv") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "awq int4 g64 asym gemv") != NULL, "%s", out);
    free(out);
}
END_TEST

START_TEST(convert_gptq4_sym_v1_v2_exact)
{
    int v2;
    for (v2 = 0; v2 <= 1; v2++) {
        qbt_gptq_spec s = gspec(4, 128, 1, v2);
        tally t;
        write_gptq(&s);
        t = convert_and_tally(sub("src"), "", "gptq");
        ck_assert_int_eq(t.quant, 14);
        ck_assert_int_eq(t.exact, 14);
        /* target group 64 and 32 divide the source group 128: still exact */
        t = convert_and_tally(sub("src"), "--group-size 32", "gptq");
        ck_assert_int_eq(t.exact, 14);
        qbt_rmtree(sub("src"));
    }
}
END_TEST

START_TEST(convert_gptq4_g32_needs_dividing_target)
{
    qbt_gptq_spec s = gspec(4, 32, 1, 0);
    tally t;
    s.n_shards = 2;
    write_gptq(&s);
    t = convert_and_tally(sub("src"), "--group-size 128", "gptq"); /* 128 does not divide 32 */
    ck_assert_int_eq(t.lossy, 14);
    ck_assert(t.max_rmse < 0.15);
    t = convert_and_tally(sub("src"), "--group-size 32", "gptq");
    ck_assert_int_eq(t.exact, 14);
    /* the default (auto) takes the source's 32 */
    t = convert_and_tally(sub("src"), "", "gptq");
    ck_assert_int_eq(t.exact, 14);
}
END_TEST

START_TEST(convert_gptq_asym_requantized)
{
    qbt_gptq_spec s = gspec(4, 128, 0, 0);
    tally t;
    write_gptq(&s);
    t = convert_and_tally(sub("src"), "", "gptq");
    ck_assert_int_eq(t.quant, 14);
    ck_assert_int_eq(t.lossy, 14);
    ck_assert(t.max_rmse < 0.15);
}
END_TEST

START_TEST(convert_gptq_act_order)
{
    /* K = 128 modules at g128 have one group (trivial g_idx): exact; the
     * K = 256 down_proj has a scrambled map: requantized */
    qbt_gptq_spec s = gspec(4, 128, 1, 0);
    tally t;
    s.act_order = 1;
    write_gptq(&s);
    t = convert_and_tally(sub("src"), "", "gptq");
    ck_assert_int_eq(t.exact, 12);
    ck_assert_int_eq(t.lossy, 2);
    ck_assert(t.max_rmse < 0.15);
}
END_TEST

START_TEST(convert_gptq_2_3_8_bit)
{
    /* the writer repacks grids of 4 bits only: 2/3/8-bit sources are
     * requantized from the dense rows (its scale search may land on the
     * source grid itself, so exact is allowed) with rel_rmse recorded */
    qbt_gptq_spec s2 = gspec(2, 32, 1, 0), s3 = gspec(3, 128, 1, 0), s8 = gspec(8, -1, 0, 1);
    tally t;
    write_gptq(&s2);
    t = convert_and_tally(sub("src"), "--group-size 32", "gptq int2");
    ck_assert_int_eq(t.exact + t.lossy, 14);
    ck_assert(t.max_rmse < 0.15);
    qbt_rmtree(sub("src"));
    write_gptq(&s3);
    t = convert_and_tally(sub("src"), "", "gptq int3");
    ck_assert_int_eq(t.exact + t.lossy, 14);
    ck_assert(t.max_rmse < 0.15);
    qbt_rmtree(sub("src"));
    write_gptq(&s8);
    t = convert_and_tally(sub("src"), "", "gptq int8");
    ck_assert_int_eq(t.lossy, 14);
    ck_assert(t.max_rmse < 0.15);
}
END_TEST

START_TEST(convert_awq)
{
    qbt_awq_spec sym = {0, 0, 0, 64, NULL, 1, 78, NULL}, zp = {0, 1, 0, 128, NULL, 2, 79, NULL};
    tally t;
    ck_assert_int_eq(mkdir(sub("src"), 0777), 0);
    ck_assert_int_eq(qbt_awq_write(sub("src"), &sym, NULL), 0);
    t = convert_and_tally(sub("src"), "--group-size 64", "awq");
    ck_assert_int_eq(t.exact, 14);
    qbt_rmtree(sub("src"));
    ck_assert_int_eq(mkdir(sub("src"), 0777), 0);
    ck_assert_int_eq(qbt_awq_write(sub("src"), &zp, NULL), 0);
    t = convert_and_tally(sub("src"), "", "awq");
    ck_assert_int_eq(t.lossy, 14);
    ck_assert(t.max_rmse < 0.15);
}
END_TEST

START_TEST(zero_convention_option_via_cli)
{
    qbt_gptq_spec s = gspec(4, 128, 0, 1);
    tally t;
    s.label = 0;
    write_gptq(&s);
    expect_clean_failure("", "zero_convention");
    t = convert_and_tally(sub("src"), "--option zero_convention=v2", "gptq");
    ck_assert_int_eq(t.quant, 14);
}
END_TEST

START_TEST(broken_variants_fail_cleanly)
{
    static const struct {
        int broken, shards;
        const char *needle;
    } cases[] = {{QBT_BROKEN_DESC_ACT_NO_GIDX, 1, "g_idx"},
                 {QBT_BROKEN_QWEIGHT_BITS, 1, "q_proj.qweight"},
                 {QBT_BROKEN_SCALE_MISSING_SHARD, 2, "model-00003-of-00003.safetensors"},
                 {QBT_BROKEN_MISMATCHED_SHARDS, 2, "q_proj.scales"},
                 {QBT_BROKEN_MISSING_QZEROS, 1, "q_proj.qzeros"}};
    size_t i;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        qbt_gptq_spec s = gspec(4, 128, 1, 0);
        s.broken = cases[i].broken;
        s.n_shards = cases[i].shards;
        write_gptq(&s);
        expect_clean_failure("", cases[i].needle);
        qbt_rmtree(sub("src"));
    }
    {
        qbt_awq_spec a = {0, 1, 0, 128, "exllama", 1, 80, NULL};
        ck_assert_int_eq(mkdir(sub("src"), 0777), 0);
        ck_assert_int_eq(qbt_awq_write(sub("src"), &a, NULL), 0);
        expect_clean_failure("", "exllama");
    }
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("quant-cli");
    TCase *c = tcase_create("cli");
    tcase_set_timeout(c, 300);
    tcase_add_checked_fixture(c, setup, teardown);
    tcase_add_test(c, inspect_gptq_names_everything);
    tcase_add_test(c, inspect_awq_names_everything);
    tcase_add_test(c, inspect_warns_on_label_data_disagreement);
    tcase_add_test(c, convert_gptq4_sym_v1_v2_exact);
    tcase_add_test(c, convert_gptq4_g32_needs_dividing_target);
    tcase_add_test(c, convert_gptq_asym_requantized);
    tcase_add_test(c, convert_gptq_act_order);
    tcase_add_test(c, convert_gptq_2_3_8_bit);
    tcase_add_test(c, convert_awq);
    tcase_add_test(c, zero_convention_option_via_cli);
    tcase_add_test(c, broken_variants_fail_cleanly);
    suite_add_tcase(s, c);
    return s;
}
