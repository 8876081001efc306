/* Allocation fault injection (alloc.c): make the n-th allocation fail for
 * every n along config loading, probe input, parameter building and the
 * sink, and check each path fails cleanly with QB_E_NOMEM or succeeds;
 * the ASan build turns any leak on those paths into a failure. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qbh.h"
#include "qbt_check_main.h"
#include "qbt_fs.h"
#include "qbt_run.h"

START_TEST(config_load_every_failure_point)
{
    char *d = qbt_mkdtemp("fault-cfg"), *pd = qbt_path(d, "plugins.d");
    char *f = qbt_path(d, "quantbridge.conf"), *a = NULL;
    long n;
    int ok = 0;
    ck_assert_int_eq(mkdir(pd, 0755), 0);
    a = qbt_path(pd, "a.conf");
    qbt_write_file(a, "[plugin:a]\nlibrary=libqb_a.so\noption.x=1\noption.y=2\n");
    qbt_write_file(f, "[general]\nmin-probe-score=40\n[plugin:b]\nlibrary=x/libqb_b.so\n");
    for (n = 0; n < 200 && !ok; n++) {
        qbh_config cfg;
        qb_status rc;
        qbh_alloc_fail_after(n);
        rc = qbh_config_load(f, &cfg);
        qbh_alloc_fail_after(-1);
        ck_assert_msg(rc == QB_OK || rc == QB_E_NOMEM, "n=%ld rc=%d", n, rc);
        if (rc == QB_OK) {
            ck_assert_uint_eq(cfg.n_plugins, 2);
            ok = 1;
        }
        qbh_config_free(&cfg);
    }
    ck_assert(ok);
    free(a);
    free(f);
    free(pd);
    free(d);
}
END_TEST

/* The layered open: built-in, user, PATH and --plugin-dir layers with
 * definitions, an override and adjustments. */
START_TEST(config_open_every_failure_point)
{
    const char *d = qbt_scratch("fault-layers");
    char *bi = qbt_path(d, "bi"), *pd = qbt_path(d, "pd"), *pp = qbt_path(d, "pp");
    char *f, *main_f = qbt_path(d, "main.conf"), *dirs[1];
    qbh_config_request req;
    long n;
    int ok = 0;
    qbt_mkdir_p(bi);
    qbt_mkdir_p(pd);
    qbt_mkdir_p(pp);
    f = qbt_path(bi, "a.conf");
    qbt_write_file(f, "[plugin:a]\nlibrary=libqb_a.so\noption.x=1\n");
    free(f);
    f = qbt_path(pp, "b.conf");
    qbt_write_file(f, "[plugin:b]\nlibrary=libqb_b.so\n[plugin:a]\npriority=3\n");
    free(f);
    f = qbt_path(pd, "a.conf");
    qbt_write_file(f, "[plugin:a]\nlibrary=./libqb_a.so\noverride=true\noption.y=2\n");
    free(f);
    qbt_write_file(main_f, "[general]\nmin-probe-score=40\n[plugin:b]\nenabled=false\n");
    setenv("QUANTBRIDGE_PLUGIN_PATH", pp, 1);
    setenv("XDG_CONFIG_HOME", d, 1);
    unsetenv("QUANTBRIDGE_CONFIG");
    memset(&req, 0, sizeof req);
    req.config = main_f;
    req.builtin_dir = bi;
    dirs[0] = pd;
    req.plugin_dirs = dirs;
    req.n_plugin_dirs = 1;
    for (n = 0; n < 400 && !ok; n++) {
        qbh_config cfg;
        qb_status rc;
        qbh_alloc_fail_after(n);
        rc = qbh_config_open(&req, &cfg);
        qbh_alloc_fail_after(-1);
        ck_assert_msg(rc == QB_OK || rc == QB_E_NOMEM, "n=%ld rc=%d %s", n, rc,
                      qbh_error_message());
        if (rc == QB_OK) {
            ck_assert_uint_eq(cfg.n_plugins, 2);
            ck_assert_uint_eq(qbh_config_find_plugin(&cfg, "a")->n_options, 1);
            ok = 1;
        } else {
            ck_assert_uint_eq(cfg.n_plugins, 0);
            ck_assert_uint_eq(cfg.n_layers, 0);
        }
        qbh_config_free(&cfg);
    }
    ck_assert(ok);
    unsetenv("QUANTBRIDGE_PLUGIN_PATH");
    free(main_f);
    free(pp);
    free(pd);
    free(bi);
}
END_TEST

START_TEST(probe_input_every_failure_point)
{
    char *d = qbt_mkdtemp("fault-probe"), *f = qbt_path(d, "m.bin"), *c = qbt_path(d, "config.json");
    long n;
    int ok = 0;
    qbt_write_file(f, "data");
    qbt_write_file(c, "{}");
    for (n = 0; n < 100 && !ok; n++) {
        qbh_probe_in pi;
        qb_status rc;
        qbh_alloc_fail_after(n);
        rc = qbh_probe_in_build(f, &pi);
        qbh_alloc_fail_after(-1);
        ck_assert_msg(rc == QB_OK || rc == QB_E_NOMEM, "n=%ld rc=%d", n, rc);
        ok = rc == QB_OK;
        qbh_probe_in_free(&pi);
    }
    ck_assert(ok);
    free(f);
    free(c);
    free(d);
}
END_TEST

START_TEST(params_every_failure_point)
{
    static const qb_option_decl s1 = {sizeof(qb_option_decl), "rule", QB_PARAM_STRING, "a",
                                      "", "a|b", 0, -1, 0};
    static const qb_option_decl i1 = {sizeof(qb_option_decl), "n", QB_PARAM_INT, "3", "", NULL,
                                      0, 9, 0};
    static const qb_option_decl *const opts[] = {&s1, &i1, NULL};
    qb_plugin d;
    qbh_opt cli[1] = {{"rule", "b", "--option", 0}};
    long n;
    int ok = 0;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.name = "p";
    d.options = opts;
    for (n = 0; n < 50 && !ok; n++) {
        qbh_params ps;
        qb_status rc;
        qbh_alloc_fail_after(n);
        rc = qbh_params_build(&d, QB_OPTION_ROLE_WRITER, NULL, cli, 1, &ps);
        qbh_alloc_fail_after(-1);
        ck_assert_msg(rc == QB_OK || rc == QB_E_NOMEM, "n=%ld rc=%d", n, rc);
        if (rc == QB_OK) {
            ck_assert_str_eq(qb_param_find(ps.items, "rule")->v.s, "b");
            ok = 1;
        }
        qbh_params_free(&ps);
    }
    ck_assert(ok);
}
END_TEST

START_TEST(sink_every_failure_point)
{
    long n;
    int ok = 0;
    for (n = 0; n < 50 && !ok; n++) {
        char *d = qbt_mkdtemp("fault-sink");
        qbh_sink *s = NULL;
        qb_sink_file *f = NULL;
        qb_status rc;
        qbh_alloc_fail_after(n);
        rc = qbh_sink_open(d, &s);
        if (rc == QB_OK) {
            const qb_sink *t = qbh_sink_table(s);
            rc = t->create(t->handle, "a.bin", &f);
            if (rc == QB_OK) {
                rc = t->write(f, "xyz", 3);
                if (rc == QB_OK)
                    rc = t->close(f, NULL, NULL);
                else
                    t->close(f, NULL, NULL);
            }
        }
        qbh_alloc_fail_after(-1);
        ck_assert_msg(rc == QB_OK || rc == QB_E_NOMEM, "n=%ld rc=%d", n, rc);
        ok = rc == QB_OK;
        qbh_sink_free(s);
        free(d);
    }
    ck_assert(ok);
}
END_TEST

/* The counts plugin-check compares around plugin calls: every block the
 * allocator hands out is live until qbh_free, refused ones never are. */
START_TEST(live_and_made_counts)
{
    long live = qbh_alloc_live(), made = qbh_alloc_made();
    void *a = qbh_alloc(10), *b = qbh_calloc(3, 4);
    char *c = qbh_strdup("xyz");
    ck_assert(a && b && c);
    ck_assert_int_eq(qbh_alloc_live() - live, 3);
    ck_assert_int_eq(qbh_alloc_made() - made, 3);
    qbh_free(b);
    qbh_free(NULL); /* not a block */
    ck_assert_int_eq(qbh_alloc_live() - live, 2);
    qbh_alloc_fail_after(0);
    ck_assert_ptr_null(qbh_alloc(1));
    qbh_alloc_fail_after(-1);
    ck_assert_int_eq(qbh_alloc_live() - live, 2);
    ck_assert_int_eq(qbh_alloc_made() - made, 3);
    qbh_free(a);
    qbh_free(c);
    ck_assert_int_eq(qbh_alloc_live(), live);
}
END_TEST

/* The sink's write budget, set in-process as QUANTBRIDGE_TEST_WRITE_LIMIT
 * sets it from the environment: n bytes reach the file, then ENOSPC. */
START_TEST(write_limit_set_in_process)
{
    char *d = qbt_mkdtemp("fault-limit"), *p = qbt_path(d, "a.bin");
    qbh_sink *s = NULL;
    qb_sink_file *f = NULL;
    const qb_sink *t;
    size_t len = 0;
    char *data;
    ck_assert_int_eq(qbh_sink_open(d, &s), QB_OK);
    t = qbh_sink_table(s);
    qbh_testhook_write_limit(5);
    ck_assert_int_eq(t->create(t->handle, "a.bin", &f), QB_OK);
    ck_assert_int_eq(t->write(f, "0123456789", 10), QB_OK); /* buffered */
    ck_assert_int_eq(t->close(f, NULL, NULL), QB_E_NOSPACE);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "No space left on device"));
    qbh_testhook_write_limit(-1);
    ck_assert_int_eq(t->create(t->handle, "b.bin", &f), QB_OK);
    ck_assert_int_eq(t->write(f, "0123456789", 10), QB_OK);
    ck_assert_int_eq(t->close(f, NULL, NULL), QB_OK);
    qbh_sink_free(s);
    data = qbt_read_file(p, &len);
    ck_assert_uint_eq(len, 5);
    ck_assert(memcmp(data, "01234", 5) == 0);
    free(data);
    free(p);
    free(d);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("fault");
    TCase *tc = tcase_create("alloc");
    tcase_add_test(tc, config_load_every_failure_point);
    tcase_add_test(tc, config_open_every_failure_point);
    tcase_add_test(tc, probe_input_every_failure_point);
    tcase_add_test(tc, params_every_failure_point);
    tcase_add_test(tc, sink_every_failure_point);
    tcase_add_test(tc, live_and_made_counts);
    tcase_add_test(tc, write_limit_set_in_process);
    suite_add_tcase(s, tc);
    return s;
}
