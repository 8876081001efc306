/* config.c: lookup order, plugins.d merge, value checks with file names,
 * the registration layers (config_layers.c), and plugin library
 * resolution (plugin_load.c qbh_plugin_resolve). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qbh.h"
#include "qbt_check_main.h"
#include "qbt_fs.h"
#include "qbt_host_log.h"
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
    /* a drop-in cannot trust a plugin (docs/plugin-design.md, "Trust"):
     * only the main file named here could */
    ck_assert_int_eq(pc->trusted, -1);
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
    char *lib2 = qbt_path(p2, "libqb_x.so"), *path = NULL, *res, *lib1;
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
    /* "./" is the conf's own directory, shown without it. */
    pc.library = "./p2/libqb_x.so";
    res = qbh_plugin_resolve(&pc);
    ck_assert_ptr_nonnull(strstr(res, "/p2/libqb_x.so"));
    ck_assert_ptr_null(strstr(res, "/./"));
    qbh_free(res);
    /* A conf in a plugin directory (lib_here): a bare name is looked for
     * beside the conf first, before the search path. */
    pc.library = "libqb_x.so";
    pc.lib_base = p2;
    pc.lib_here = 1;
    lib1 = qbt_path(p1, "libqb_x.so");
    qbt_write_file(lib1, "y");
    setenv("QUANTBRIDGE_PLUGIN_PATH", p1, 1);
    res = qbh_plugin_resolve(&pc);
    ck_assert_str_eq(res, lib2);
    qbh_free(res);
    /* without lib_here the search path wins, as before */
    pc.lib_here = 0;
    res = qbh_plugin_resolve(&pc);
    ck_assert_str_eq(res, lib1);
    qbh_free(res);
    unsetenv("QUANTBRIDGE_PLUGIN_PATH");
    free(lib1);
    free(path);
    free(lib2);
    free(p1);
    free(p2);
    free(d);
}
END_TEST

/* ---- registration layers (qbh_config_open) ------------------------------ */

/* base/sub/NAME.conf with `text`; returns base/sub (created). */
static char *conf_in(const char *base, const char *sub, const char *name, const char *text)
{
    char *d = qbt_path(base, sub), *f;
    qbt_mkdir_p(d);
    f = qbt_path(d, name);
    qbt_write_file(f, text);
    free(f);
    return d;
}

/* conf_in when the directory's name is not needed. */
static void conf_put(const char *base, const char *sub, const char *name, const char *text)
{
    free(conf_in(base, sub, name, text));
}

/* No environment but what the test sets; XDG points at `xdg` (may be NULL:
 * an empty one). */
static void layers_env(const char *xdg)
{
    qbt_host_log_install();
    unsetenv("QUANTBRIDGE_CONFIG");
    unsetenv("QUANTBRIDGE_PLUGIN_PATH");
    setenv("XDG_CONFIG_HOME", xdg ? xdg : qbt_scratch("cfg-xdg-empty"), 1);
}

static qb_status open_layers(const char *builtin, const char *config, char *const *dirs,
                             size_t n_dirs, qbh_config *cfg)
{
    qbh_config_request req;
    memset(&req, 0, sizeof req);
    req.builtin_dir = builtin;
    req.config = config;
    req.plugin_dirs = dirs;
    req.n_plugin_dirs = n_dirs;
    return qbh_config_open(&req, cfg);
}

START_TEST(layers_add_in_order)
{
    const char *d = qbt_scratch("cfg-layers");
    char *xdg = qbt_path(d, "xdg"), *bi, *ud, *pp, *pd, *main_f, *path, *want;
    char *dirs[1];
    const qbh_plugin_conf *pc;
    qbh_config cfg;
    static const struct {
        qbh_layer_kind kind;
        const char *tail, *skipped;
    } L[] = {{QBH_LAYER_BUILTIN, "/builtin", NULL},
             {QBH_LAYER_USER, "/xdg/quantbridge/plugins.d", NULL},
             {QBH_LAYER_CONFIG_DIR, "/main/plugins.d", "absent"},
             {QBH_LAYER_PATH, "relative/dir", "not absolute: ignored"},
             {QBH_LAYER_PATH, "/path", NULL},
             {QBH_LAYER_PLUGIN_DIR, "/pdir", NULL},
             {QBH_LAYER_MAIN, "/main/quantbridge.conf", NULL}};
    size_t i;

    bi = conf_in(d, "builtin", "alpha.conf", "[plugin:alpha]\nlibrary=libqb_alpha.so\n");
    conf_put(d, "builtin", "beta.conf", "[plugin:beta]\nlibrary=libqb_beta.so\npriority=5\n");
    /* user layer: a definition and an adjustment of a built-in */
    ud = conf_in(d, "xdg/quantbridge/plugins.d", "gamma.conf",
                 "[plugin:gamma]\nlibrary=./libqb_gamma.so\n[plugin:beta]\npriority=9\n"
                 "option.k=user\n");
    pp = conf_in(d, "path", "delta.conf", "[plugin:delta]\nlibrary=libqb_delta.so\n");
    pd = conf_in(d, "pdir", "eps.conf", "[plugin:eps]\nlibrary=libqb_eps.so\n");
    main_f = qbt_path(d, "main/quantbridge.conf");
    conf_put(d, "main", "quantbridge.conf",
             "[general]\nmin-probe-score=60\n[plugin:alpha]\nenabled=false\n"
             "[plugin:beta]\noption.k=main\n");
    layers_env(xdg);
    ck_assert(asprintf(&path, "relative/dir:%s", pp) > 0);
    setenv("QUANTBRIDGE_PLUGIN_PATH", path, 1);
    dirs[0] = pd;
    qbt_host_log_reset();
    ck_assert_msg(open_layers(bi, main_f, dirs, 1, &cfg) == QB_OK, "%s", qbh_error_message());
    ck_assert_int_eq(qbt_host_warn_count(), 1); /* the relative entry */

    ck_assert_uint_eq(cfg.n_layers, sizeof L / sizeof L[0]);
    for (i = 0; i < cfg.n_layers; i++) {
        size_t lp = strlen(cfg.layers[i].path), lt = strlen(L[i].tail);
        ck_assert_int_eq(cfg.layers[i].kind, L[i].kind);
        ck_assert_msg(lp >= lt && strcmp(cfg.layers[i].path + lp - lt, L[i].tail) == 0,
                      "layer %zu: %s", i, cfg.layers[i].path);
        if (L[i].skipped)
            ck_assert_str_eq(cfg.layers[i].skipped, L[i].skipped);
        else
            ck_assert_ptr_null(cfg.layers[i].skipped);
    }
    ck_assert_int_eq(cfg.min_probe_score, 60);
    ck_assert_uint_eq(cfg.n_plugins, 5);
    /* the main file disables a built-in by name, without library= */
    pc = qbh_config_find_plugin(&cfg, "alpha");
    ck_assert_int_eq(pc->enabled, 0);
    ck_assert_int_eq(pc->layer, QBH_LAYER_BUILTIN);
    ck_assert_str_eq(pc->library, "libqb_alpha.so");
    /* adjustments merge key by key, the main file last */
    pc = qbh_config_find_plugin(&cfg, "beta");
    ck_assert_int_eq(pc->priority, 9);
    ck_assert_str_eq(pc->options[0].value, "main");
    want = qbt_path(bi, "beta.conf");
    ck_assert_str_eq(pc->source, want);
    free(want);
    pc = qbh_config_find_plugin(&cfg, "gamma");
    ck_assert_int_eq(pc->layer, QBH_LAYER_USER);
    ck_assert_int_eq(pc->lib_here, 0);
    ck_assert_str_eq(pc->lib_base, ud);
    pc = qbh_config_find_plugin(&cfg, "delta");
    ck_assert_int_eq(pc->layer, QBH_LAYER_PATH);
    ck_assert_int_eq(pc->lib_here, 1);
    ck_assert_str_eq(pc->lib_base, pp);
    pc = qbh_config_find_plugin(&cfg, "eps");
    ck_assert_int_eq(pc->layer, QBH_LAYER_PLUGIN_DIR);
    ck_assert_int_eq(pc->lib_here, 1);
    qbh_config_free(&cfg);
    unsetenv("QUANTBRIDGE_PLUGIN_PATH");

    /* $QUANTBRIDGE_CONFIG or a user quantbridge.conf as the main file:
     * the built-ins are still there. */
    setenv("QUANTBRIDGE_CONFIG", main_f, 1);
    ck_assert_int_eq(open_layers(bi, NULL, NULL, 0, &cfg), QB_OK);
    ck_assert_ptr_nonnull(qbh_config_find_plugin(&cfg, "beta"));
    ck_assert_int_eq(qbh_config_find_plugin(&cfg, "alpha")->enabled, 0);
    qbh_config_free(&cfg);
    unsetenv("QUANTBRIDGE_CONFIG");
    conf_put(d, "xdg/quantbridge", "quantbridge.conf", "[plugin:beta]\nenabled=false\n");
    ck_assert_int_eq(open_layers(bi, NULL, NULL, 0, &cfg), QB_OK);
    ck_assert_uint_eq(cfg.n_plugins, 3); /* alpha, beta, gamma */
    ck_assert_int_eq(qbh_config_find_plugin(&cfg, "beta")->enabled, 0);
    /* implicitly found: its plugins.d is the user layer, not read twice */
    for (i = 0; i < cfg.n_layers; i++)
        ck_assert_int_ne(cfg.layers[i].kind, QBH_LAYER_CONFIG_DIR);
    qbh_config_free(&cfg);
    free(path);
    free(main_f);
    free(pd);
    free(pp);
    free(ud);
    free(bi);
    free(xdg);
}
END_TEST

START_TEST(second_definition_and_override)
{
    const char *d = qbt_scratch("cfg-dup");
    char *bi, *p1, *p2, *dirs[1], *a1, *a2;
    const qbh_plugin_conf *pc;
    qbh_config cfg;
    layers_env(NULL);
    bi = conf_in(d, "builtin", "alpha.conf",
                 "[plugin:alpha]\nlibrary=libqb_alpha.so\npriority=3\noption.k=v\n");
    p1 = conf_in(d, "p1", "alpha.conf", "[plugin:alpha]\nlibrary=libqb_alpha.so\n");
    a1 = qbt_path(bi, "alpha.conf");
    a2 = qbt_path(p1, "alpha.conf");
    dirs[0] = p1;
    ck_assert_int_eq(open_layers(bi, NULL, dirs, 1, &cfg), QB_E_INVALID);
    ck_assert_msg(strstr(qbh_error_message(), a1) && strstr(qbh_error_message(), a2) &&
                      strstr(qbh_error_message(), "override=true"),
                  "%s", qbh_error_message());
    ck_assert_uint_eq(cfg.n_plugins, 0);
    ck_assert_uint_eq(cfg.n_layers, 0);

    /* override=true: the later definition replaces the earlier one and
     * everything said about the name before it. */
    conf_put(d, "p1", "alpha.conf", "[plugin:alpha]\nlibrary=libqb_alpha.so\noverride=true\n");
    qbt_host_log_reset();
    ck_assert_int_eq(open_layers(bi, NULL, dirs, 1, &cfg), QB_OK);
    ck_assert_msg(qbt_host_log_count(QB_LOG_INFO) >= 1 &&
                      strstr(qbt_host_log_last(), "replaces the definition in"),
                  "%s", qbt_host_log_last());
    pc = qbh_config_find_plugin(&cfg, "alpha");
    ck_assert_str_eq(pc->source, a2);
    ck_assert_int_eq(pc->priority, 50);
    ck_assert_uint_eq(pc->n_options, 0);
    ck_assert_int_eq(pc->layer, QBH_LAYER_PLUGIN_DIR);
    ck_assert_int_eq(pc->lib_here, 1);
    qbh_config_free(&cfg);

    /* override without library= has nothing to replace with */
    p2 = conf_in(d, "p2", "alpha.conf", "[plugin:alpha]\noverride=true\npriority=1\n");
    dirs[0] = p2;
    ck_assert_int_eq(open_layers(bi, NULL, dirs, 1, &cfg), QB_E_FORMAT);
    ck_assert_msg(strstr(qbh_error_message(), "override=true without library=") &&
                      strstr(qbh_error_message(), "p2/alpha.conf"),
                  "%s", qbh_error_message());
    /* two files of one layer collide too */
    conf_put(d, "p2", "alpha.conf", "[plugin:beta]\nlibrary=libqb_b.so\n");
    conf_put(d, "p2", "b2.conf", "[plugin:beta]\nlibrary=libqb_b2.so\n");
    ck_assert_int_eq(open_layers(bi, NULL, dirs, 1, &cfg), QB_E_INVALID);
    ck_assert_msg(strstr(qbh_error_message(), "p2/b2.conf: [plugin:beta] defines plugin beta, "
                                              "which ") &&
                      strstr(qbh_error_message(), "p2/alpha.conf already defines"),
                  "%s", qbh_error_message());
    free(a1);
    free(a2);
    free(p2);
    free(p1);
    free(bi);
}
END_TEST

START_TEST(layers_read_once)
{
    const char *d = qbt_scratch("cfg-once");
    char *bi, *pd, *dirs[2], *main_f;
    qbh_config cfg;
    layers_env(NULL);
    bi = conf_in(d, "builtin", "alpha.conf", "[plugin:alpha]\nlibrary=libqb_alpha.so\n");
    /* the main file lies in the plugin directory and defines a plugin */
    pd = conf_in(d, "pdir", "quantbridge.conf",
                 "[general]\nprobe-timeout=9\n[plugin:beta]\nlibrary=libqb_b.so\n");
    main_f = qbt_path(pd, "quantbridge.conf");
    setenv("QUANTBRIDGE_PLUGIN_PATH", pd, 1);
    dirs[0] = pd;
    dirs[1] = bi;
    ck_assert_msg(open_layers(bi, main_f, dirs, 2, &cfg) == QB_OK, "%s", qbh_error_message());
    ck_assert_int_eq(cfg.probe_timeout_s, 9);
    ck_assert_uint_eq(cfg.n_plugins, 2);
    /* builtin, user, config-dir (absent), path, plugin-dir x2, main */
    ck_assert_uint_eq(cfg.n_layers, 7);
    ck_assert_ptr_null(cfg.layers[3].skipped);
    ck_assert_str_eq(cfg.layers[4].skipped, "already read");
    ck_assert_str_eq(cfg.layers[5].skipped, "already read");
    ck_assert_int_eq(qbh_config_find_plugin(&cfg, "beta")->layer, QBH_LAYER_MAIN);
    qbh_config_free(&cfg);
    unsetenv("QUANTBRIDGE_PLUGIN_PATH");
    free(main_f);
    free(pd);
    free(bi);
}
END_TEST

START_TEST(world_writable_refused)
{
    const char *d = qbt_scratch("cfg-ww");
    char *bi, *ww, *pd, *dirs[2], *f;
    qbh_config cfg;
    layers_env(NULL);
    bi = conf_in(d, "builtin", "alpha.conf", "[plugin:alpha]\nlibrary=libqb_alpha.so\n");
    ww = conf_in(d, "ww", "beta.conf", "[plugin:beta]\nlibrary=libqb_b.so\n");
    ck_assert_int_eq(chmod(ww, 0777), 0);
    pd = conf_in(d, "pd", "gamma.conf", "[plugin:gamma]\nlibrary=libqb_g.so\n");
    f = qbt_path(pd, "delta.conf");
    qbt_write_file(f, "[plugin:delta]\nlibrary=libqb_d.so\n");
    ck_assert_int_eq(chmod(f, 0666), 0);
    dirs[0] = ww;
    dirs[1] = pd;
    qbt_host_log_reset();
    ck_assert_int_eq(open_layers(bi, NULL, dirs, 2, &cfg), QB_OK);
    ck_assert_int_eq(qbt_host_warn_count(), 2);
    ck_assert_ptr_null(qbh_config_find_plugin(&cfg, "beta"));
    ck_assert_ptr_null(qbh_config_find_plugin(&cfg, "delta"));
    ck_assert_ptr_nonnull(qbh_config_find_plugin(&cfg, "gamma"));
    ck_assert_str_eq(cfg.layers[2].skipped, "world-writable: refused");
    qbh_config_free(&cfg);
    free(f);
    free(pd);
    free(ww);
    free(bi);
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
    tcase_add_test(tc, layers_add_in_order);
    tcase_add_test(tc, second_definition_and_override);
    tcase_add_test(tc, layers_read_once);
    tcase_add_test(tc, world_writable_refused);
    suite_add_tcase(s, tc);
    return s;
}
