/* probe.c: arbitration (highest wins, priority breaks ties, a remaining
 * tie and a low winner are errors) and the probe input (padded head,
 * sorted siblings, config.json). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qbh.h"
#include "qbt_check_main.h"
#include "qbt_fs.h"
#include "qbt_run.h"

static qbh_plugin_conf confs[4];
static qbh_plugin plugs[4];

static void mk(int i, const char *name, int prio)
{
    memset(&confs[i], 0, sizeof confs[i]);
    memset(&plugs[i], 0, sizeof plugs[i]);
    confs[i].name = (char *)name;
    confs[i].priority = prio;
    plugs[i].name = (char *)name;
    plugs[i].conf = &confs[i];
}

START_TEST(highest_wins)
{
    qbh_probe_score s[3];
    qbh_plugin *w;
    mk(0, "a", 50);
    mk(1, "b", 50);
    mk(2, "c", 50);
    s[0] = (qbh_probe_score){&plugs[0], 25};
    s[1] = (qbh_probe_score){&plugs[1], 80};
    s[2] = (qbh_probe_score){&plugs[2], 0};
    ck_assert_int_eq(qbh_probe_choose(s, 3, 50, "m", &w), QB_OK);
    ck_assert_ptr_eq(w, &plugs[1]);
}
END_TEST

START_TEST(tie_is_error_listing_candidates)
{
    qbh_probe_score s[3];
    qbh_plugin *w = (qbh_plugin *)1;
    mk(0, "gptq", 50);
    mk(1, "awq", 50);
    mk(2, "hf-dense", 50);
    s[0] = (qbh_probe_score){&plugs[0], 80};
    s[1] = (qbh_probe_score){&plugs[1], 80};
    s[2] = (qbh_probe_score){&plugs[2], 30};
    ck_assert_int_eq(qbh_probe_choose(s, 3, 50, "/m", &w), QB_E_MISMATCH);
    ck_assert_ptr_null(w);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "2 readers claim this input with score 80"));
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "(gptq, awq)"));
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "--format"));
}
END_TEST

START_TEST(priority_breaks_tie)
{
    qbh_probe_score s[2];
    qbh_plugin *w;
    mk(0, "gptq", 50);
    mk(1, "awq", 90);
    s[0] = (qbh_probe_score){&plugs[0], 80};
    s[1] = (qbh_probe_score){&plugs[1], 80};
    ck_assert_int_eq(qbh_probe_choose(s, 2, 50, "/m", &w), QB_OK);
    ck_assert_ptr_eq(w, &plugs[1]);
    /* A lower score never wins on priority. */
    s[1].score = 79;
    ck_assert_int_eq(qbh_probe_choose(s, 2, 50, "/m", &w), QB_OK);
    ck_assert_ptr_eq(w, &plugs[0]);
}
END_TEST

START_TEST(threshold_and_nothing)
{
    qbh_probe_score s[1];
    qbh_plugin *w;
    mk(0, "gguf", 50);
    s[0] = (qbh_probe_score){&plugs[0], 49};
    ck_assert_int_eq(qbh_probe_choose(s, 1, 50, "/m", &w), QB_E_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "score 49, below min-probe-score 50"));
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "--format gguf"));
    s[0].score = 50;
    ck_assert_int_eq(qbh_probe_choose(s, 1, 50, "/m", &w), QB_OK);
    s[0].score = 0;
    ck_assert_int_eq(qbh_probe_choose(s, 1, 0, "/m", &w), QB_E_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "no reader recognises"));
    ck_assert_int_eq(qbh_probe_choose(s, 0, 50, "/m", &w), QB_E_NOT_FOUND);
}
END_TEST

START_TEST(input_for_file_and_dir)
{
    char *d = qbt_mkdtemp("probe"), *f = qbt_path(d, "w.bin"), *c = qbt_path(d, "config.json");
    char *z = qbt_path(d, "a.txt");
    qbh_probe_in pi;
    size_t i;
    qbt_write_file(f, "GGUFxyz");
    qbt_write_file(c, "{\"model_type\":\"llama\"}");
    qbt_write_file(z, "");
    ck_assert_int_eq(qbh_probe_in_build(f, &pi), QB_OK);
    ck_assert_int_eq(pi.in.is_dir, 0);
    ck_assert_str_eq(pi.in.main_file, f);
    ck_assert_uint_eq(pi.in.head_len, 7);
    ck_assert_int_eq(memcmp(pi.in.head, "GGUFxyz", 7), 0);
    for (i = 0; i < QB_PROBE_PADDING; i++)
        ck_assert_int_eq(pi.in.head[7 + i], 0);
    ck_assert_str_eq(pi.in.siblings[0], "a.txt");
    ck_assert_str_eq(pi.in.siblings[1], "config.json");
    ck_assert_str_eq(pi.in.siblings[2], "w.bin");
    ck_assert_ptr_null(pi.in.siblings[3]);
    ck_assert_str_eq(pi.in.config_json, "{\"model_type\":\"llama\"}");
    qbh_probe_in_free(&pi);

    ck_assert_int_eq(qbh_probe_in_build(d, &pi), QB_OK);
    ck_assert_int_eq(pi.in.is_dir, 1);
    ck_assert_ptr_null(pi.in.head);
    ck_assert_ptr_null(pi.in.main_file);
    ck_assert_ptr_nonnull(pi.in.config_json);
    qbh_probe_in_free(&pi);

    ck_assert_int_eq(qbh_probe_in_build("/nonexistent/model", &pi), QB_E_NOT_FOUND);
    free(d);
    free(f);
    free(c);
    free(z);
}
END_TEST

START_TEST(big_head_truncated)
{
    char *d = qbt_mkdtemp("probe-big"), *f = qbt_path(d, "big.bin");
    char *big = malloc(100000);
    qbh_probe_in pi;
    memset(big, 'x', 99999);
    big[99999] = '\0';
    qbt_write_file(f, big);
    ck_assert_int_eq(qbh_probe_in_build(f, &pi), QB_OK);
    ck_assert_uint_eq(pi.in.head_len, 65536);
    ck_assert_int_eq(pi.in.head[65536], 0);
    qbh_probe_in_free(&pi);
    free(big);
    free(f);
    free(d);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("probe");
    TCase *tc = tcase_create("probe");
    tcase_add_test(tc, highest_wins);
    tcase_add_test(tc, tie_is_error_listing_candidates);
    tcase_add_test(tc, priority_breaks_tie);
    tcase_add_test(tc, threshold_and_nothing);
    tcase_add_test(tc, input_for_file_and_dir);
    tcase_add_test(tc, big_head_truncated);
    suite_add_tcase(s, tc);
    return s;
}
