/* config.c: lookup order, plugins.d merge, value checks with file names,
 * and plugin library resolution (plugin_load.c qbh_plugin_resolve). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qbh.h"
#include "qbt_check_main.h"
#include "qbt_fs.h"
#include "qbt_run.h"

static char *mkdirs(const char *base, const char *sub)
{
    char *p = qbt_path(base, sub);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    return p;
}

START_TEST(locate_order)
{
    char *d = qbt_mkdtemp("cfg-locate"), *out = NULL;
    char *cli = qbt_path(d, "cli.conf"), *env = qbt_path(d, "env.conf");
    char *xdg = mkdirs(d, "xdg"), *xq = mkdirs(xdg, "quantbridge");
    char *xf = qbt_path(xq, "quantbridge.conf");
    qbt_write_file(cli, "[general]\n");
    qbt_write_file(env, "[general]\n");
    qbt_write_file(xf, "[general]\n");

    setenv("QUANTBRIDGE_CONFIG", env, 1);
    setenv("XDG_CONFIG_HOME", xdg, 1);
    ck_assert_int_eq(qbh_config_locate(cli, &out), QB_OK);
    ck_assert_str_eq(out, cli);
    qbh_free(out);
    ck_assert_int_eq(qbh_config_locate(NULL, &out), QB_OK);
    ck_assert_str_eq(out, env);
    qbh_free(out);
    unsetenv("QUANTBRIDGE_CONFIG");
    ck_assert_int_eq(qbh_config_locate(NULL, &out), QB_OK);
    ck_assert_ptr_nonnull(strstr(out, "xdg/quantbridge/quantbridge.conf"));
    qbh_free(out);

    /* An explicitly named file that is missing is an error, not a fallback. */
    ck_assert_int_eq(qbh_config_locate("/nonexistent/x.conf", &out), QB_E_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "/nonexistent/x.conf (from --config)"));
    setenv("QUANTBRIDGE_CONFIG", "/nonexistent/y.conf", 1);
    ck_assert_int_eq(qbh_config_locate(NULL, &out), QB_E_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "$QUANTBRIDGE_CONFIG"));
    free(cli);
    free(env);
    free(xdg);
    free(xq);
    free(xf);
    free(d);
}
END_TEST

START_TEST(merge_dropins_and_main)
{
    char *d = qbt_mkdtemp("cfg-merge"), *pd = mkdirs(d, "plugins.d");
    char *main_f = qbt_path(d, "quantbridge.conf");
    char *a = qbt_path(pd, "a.conf"), *b = qbt_path(pd, "b.conf"), *ign = qbt_path(pd, "x.txt");
    qbh_config cfg;
    const qbh_plugin_conf *pc;

    qbt_write_file(a, "[plugin:alpha]\nlibrary=libqb_alpha.so\npriority=10\n"
                      "option.group_size=64\noption.mode=fast\n");
    /* Later drop-in (sorted) overrides an earlier one. */
    qbt_write_file(b, "[plugin:alpha]\npriority=20\n[plugin:beta]\nlibrary=sub/libqb_beta.so\n"
                      "enabled=false\ntrusted=true\n");
    qbt_write_file(ign, "[plugin:ignored]\nlibrary=nope\n");
    /* The main file overrides drop-ins. */
    qbt_write_file(main_f, "[general]\nmin-probe-score=70\n[plugin:alpha]\noption.group_size=32\n");
    ck_assert_int_eq(qbh_config_load(main_f, &cfg), QB_OK);
    ck_assert_int_eq(cfg.min_probe_score, 70);
    ck_assert_uint_eq(cfg.n_plugins, 2);
    pc = qbh_config_find_plugin(&cfg, "alpha");
    ck_assert_ptr_nonnull(pc);
    ck_assert_int_eq(pc->priority, 20);
    ck_assert_int_eq(pc->enabled, 1);
    ck_assert_str_eq(pc->library, "libqb_alpha.so");
    ck_assert_uint_eq(pc->n_options, 2);
    ck_assert_str_eq(pc->options[0].key, "group_size");
    ck_assert_str_eq(pc->options[0].value, "32");
    ck_assert_str_eq(pc->options[1].value, "fast");
    pc = qbh_config_find_plugin(&cfg, "beta");
    ck_assert_int_eq(pc->enabled, 0);
    ck_assert_int_eq(pc->trusted, 1);
    ck_assert_str_eq(pc->lib_base, pd);
    ck_assert_ptr_null(qbh_config_find_plugin(&cfg, "ignored"));
    qbh_config_free(&cfg);
    free(d);
    free(pd);
    free(main_f);
    free(a);
    free(b);
    free(ign);
}
END_TEST

static void expect_bad(const char *text, qb_status code, const char *needle)
{
    char *d = qbt_mkdtemp("cfg-bad"), *f = qbt_path(d, "quantbridge.conf");
    qbh_config cfg;
    qbt_write_file(f, text);
    ck_assert_int_eq(qbh_config_load(f, &cfg), code);
    ck_assert_msg(strstr(qbh_error_message(), needle) && strstr(qbh_error_message(), f),
                  "'%s' lacks '%s' or the file name", qbh_error_message(), needle);
    ck_assert_uint_eq(cfg.n_plugins, 0);
    free(f);
    free(d);
}

START_TEST(bad_values_name_file_and_key)
{
    expect_bad("[general]\nmin-probe-score=high\n", QB_E_FORMAT, "min-probe-score: expected an integer");
    expect_bad("[general]\nmin-probe-score=150\n", QB_E_FORMAT, "150 outside [0, 100]");
    expect_bad("[plugin:Bad_Name]\nlibrary=x\n", QB_E_FORMAT, "plugin names are [a-z0-9-]+");
    expect_bad("[plugin:ok]\nenabled=perhaps\n", QB_E_FORMAT, "enabled: expected true or false");
    expect_bad("[plugin:ok]\npriority=1x\n", QB_E_FORMAT, "priority: expected an integer");
    expect_bad("[plugin:ok]\noption.=3\n", QB_E_FORMAT, "empty option name");
    expect_bad("not an ini file\n", QB_E_FORMAT, "quantbridge.conf");
}
END_TEST

START_TEST(no_config_is_empty)
{
    qbh_config cfg;
    ck_assert_int_eq(qbh_config_load(NULL, &cfg), QB_OK);
    ck_assert_uint_eq(cfg.n_plugins, 0);
    ck_assert_int_eq(cfg.min_probe_score, 50);
    qbh_config_free(&cfg);
}
END_TEST

START_TEST(library_resolution)
{
    char *d = qbt_mkdtemp("cfg-lib"), *p1 = mkdirs(d, "p1"), *p2 = mkdirs(d, "p2");
    char *lib2 = qbt_path(p2, "libqb_x.so"), *path = NULL, *res;
    qbh_plugin_conf pc;
    qbt_write_file(lib2, "x");
    memset(&pc, 0, sizeof pc);
    pc.name = "x";
    pc.library = "libqb_x.so";
    pc.lib_base = d;
    /* Bare name: first existing entry of $QUANTBRIDGE_PLUGIN_PATH;
     * relative entries (the cwd) are never searched. */
    ck_assert(asprintf(&path, ".:%s:%s", p1, p2) > 0);
    setenv("QUANTBRIDGE_PLUGIN_PATH", path, 1);
    res = qbh_plugin_resolve(&pc);
    ck_assert_str_eq(res, lib2);
    qbh_free(res);
    /* Not on the path: falls back to <exe>/../lib/quantbridge/plugins. */
    unsetenv("QUANTBRIDGE_PLUGIN_PATH");
    res = qbh_plugin_resolve(&pc);
    ck_assert_ptr_nonnull(strstr(res, "/lib/quantbridge/plugins/libqb_x.so"));
    qbh_free(res);
    /* With '/': relative to the config file's directory. */
    pc.library = "p2/libqb_x.so";
    res = qbh_plugin_resolve(&pc);
    ck_assert_ptr_nonnull(strstr(res, d));
    ck_assert_ptr_nonnull(strstr(res, "/p2/libqb_x.so"));
    qbh_free(res);
    pc.library = "/abs/libqb_x.so";
    res = qbh_plugin_resolve(&pc);
    ck_assert_str_eq(res, "/abs/libqb_x.so");
    qbh_free(res);
    free(path);
    free(lib2);
    free(p1);
    free(p2);
    free(d);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, locate_order);
    tcase_add_test(tc, merge_dropins_and_main);
    tcase_add_test(tc, bad_values_name_file_and_key);
    tcase_add_test(tc, no_config_is_empty);
    tcase_add_test(tc, library_resolution);
    suite_add_tcase(s, tc);
    return s;
}
