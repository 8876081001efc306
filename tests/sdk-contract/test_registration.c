/*
 * Additive registration through the built binary (host/config_layers.c,
 * conf/quantbridge.conf): the built-ins stay registered whatever main
 * config is used; a plugin dropped into the user's plugins.d, a
 * $QUANTBRIDGE_PLUGIN_PATH directory or a --plugin-dir registers beside
 * them, untrusted; a second definition of a name fails naming both files
 * unless it says override=true; relative entries are refused or resolved
 * as documented. The plugins are copies of the fake variants.
 */
#define _GNU_SOURCE
#include <check.h>

#include "qbt_check_main.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qbt_fs.h"
#include "qbt_run.h"

static const char *fake_dir(void)
{
    const char *d = getenv("QBT_FAKE_DIR");
    ck_assert_msg(d && *d, "QBT_FAKE_DIR not set");
    return d;
}

/* The names of the built-ins: the build tree's plugins.d. */
static char **builtin_names(size_t *n)
{
    char *dir = NULL, **v = calloc(64, sizeof *v);
    DIR *d;
    struct dirent *e;
    ck_assert(asprintf(&dir, "%s/etc/quantbridge/plugins.d", getenv("QB_TEST_BUILD_DIR")) > 0);
    d = opendir(dir);
    ck_assert_msg(d != NULL, "%s", dir);
    *n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".conf") == 0 && *n < 63)
            v[(*n)++] = strndup(e->d_name, len - 5);
    }
    closedir(d);
    free(dir);
    ck_assert_uint_gt(*n, 0);
    return v;
}

static void free_names(char **v)
{
    size_t i;
    for (i = 0; v[i]; i++)
        free(v[i]);
    free(v);
}

static void copy_file(const char *from, const char *to)
{
    size_t n = 0;
    char *data = qbt_read_file(from, &n);
    int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    ck_assert_msg(data != NULL, "%s", from);
    ck_assert(fd >= 0);
    ck_assert(write(fd, data, n) == (ssize_t)n);
    close(fd);
    free(data);
}

/* dir/NAME.conf registering a copy of the fake variant `lib` placed in
 * dir, named in the conf as `libname` (bare or with a '/'), plus `extra`. */
static void drop_plugin(const char *dir, const char *name, const char *lib, const char *libname,
                        const char *extra)
{
    char *from = qbt_path(fake_dir(), lib), *to = qbt_path(dir, lib), *conf, *text, *cname;
    copy_file(from, to);
    ck_assert(asprintf(&cname, "%s.conf", name) > 0);
    conf = qbt_path(dir, cname);
    ck_assert(asprintf(&text, "[plugin:%s]\nlibrary=%s\n%s", name, libname, extra) > 0);
    qbt_write_file(conf, text);
    free(text);
    free(conf);
    free(cname);
    free(to);
    free(from);
}

static char *subdir(const char *base, const char *sub)
{
    char *p = qbt_path(base, sub);
    qbt_mkdir_p(p);
    return p;
}

/* Every run sees only the environment a test gives it: an empty user
 * config directory unless the test names one. */
static void clean_env(void)
{
    unsetenv("QUANTBRIDGE_CONFIG");
    unsetenv("QUANTBRIDGE_PLUGIN_PATH");
    setenv("XDG_CONFIG_HOME", qbt_scratch("reg-xdg-empty"), 1);
}

/* `plugins --json` with argv before the command (NULL-terminated, may be
 * empty) and env additions; the parsed listing (exit 0 asserted). */
static cJSON *listing(const char *const *pre, const char *const *env, const char *cwd)
{
    const char *argv[32];
    size_t n = 0;
    qbt_result r;
    cJSON *j;
    while (pre && pre[n]) {
        argv[n] = pre[n];
        n++;
    }
    argv[n++] = "plugins";
    argv[n++] = "--json";
    argv[n] = NULL;
    qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = cwd}, argv);
    ck_assert_msg(r.status == 0, "plugins exit %d: %s", r.status, r.err);
    j = cJSON_Parse(r.out);
    ck_assert_msg(j != NULL, "not JSON: %s", r.out);
    qbt_result_free(&r);
    return j;
}

/* The plugin object of `name`, or NULL. */
static const cJSON *find(const cJSON *root, const char *name)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(root, "plugins"))
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return p;
    }
    return NULL;
}

static const char *str(const cJSON *p, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, key);
    ck_assert_msg(cJSON_IsString(v), "%s is not a string", key);
    return v->valuestring;
}

static int trusted(const cJSON *p)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, "trusted");
    ck_assert(cJSON_IsBool(v));
    return cJSON_IsTrue(v);
}

/* Asserts every built-in is listed, loaded and trusted, except `off`
 * (disabled), from the build tree's plugins.d. */
static void expect_builtins(const cJSON *root, const char *off)
{
    size_t n, i;
    char **names = builtin_names(&n);
    for (i = 0; i < n; i++) {
        const cJSON *p = find(root, names[i]);
        char *conf;
        ck_assert_msg(p != NULL, "built-in %s not listed", names[i]);
        ck_assert_str_eq(str(p, "status"), off && strcmp(off, names[i]) == 0 ? "disabled"
                                                                              : "loaded");
        ck_assert_msg(trusted(p), "built-in %s untrusted", names[i]);
        ck_assert(asprintf(&conf, "/etc/quantbridge/plugins.d/%s.conf", names[i]) > 0);
        ck_assert_msg(strstr(str(p, "defined_in"), conf), "%s", str(p, "defined_in"));
        free(conf);
    }
    free_names(names);
}

START_TEST(builtins_stay_with_every_main_config)
{
    const char *work = qbt_scratch("reg-main"), *xdg = qbt_scratch("reg-xdg");
    size_t n;
    char **names = builtin_names(&n), *conf = qbt_path(work, "mine.conf"), *text, *envv;
    char *xq = subdir(xdg, "quantbridge"), *xconf = qbt_path(xq, "quantbridge.conf");
    cJSON *j;
    clean_env();
    /* The main file disables one built-in by name; the others stay. */
    ck_assert(asprintf(&text, "[general]\nprobe-timeout=2\n[plugin:%s]\nenabled=false\n",
                       names[0]) > 0);
    qbt_write_file(conf, text);
    qbt_write_file(xconf, text);
    {
        const char *pre[] = {"--config", conf, NULL};
        j = listing(pre, NULL, NULL);
        expect_builtins(j, names[0]);
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "config")->valuestring, conf);
        cJSON_Delete(j);
    }
    {
        const char *env[2];
        ck_assert(asprintf(&envv, "QUANTBRIDGE_CONFIG=%s", conf) > 0);
        env[0] = envv;
        env[1] = NULL;
        j = listing(NULL, env, NULL);
        expect_builtins(j, names[0]);
        cJSON_Delete(j);
        free(envv);
    }
    {
        const char *env[2];
        ck_assert(asprintf(&envv, "XDG_CONFIG_HOME=%s", xdg) > 0);
        env[0] = envv;
        env[1] = NULL;
        j = listing(NULL, env, NULL);
        expect_builtins(j, names[0]);
        ck_assert(strstr(cJSON_GetObjectItemCaseSensitive(j, "config")->valuestring,
                         "quantbridge/quantbridge.conf"));
        cJSON_Delete(j);
        free(envv);
    }
    free(text);
    free(xconf);
    free(xq);
    free(conf);
    free_names(names);
}
END_TEST

/* A plugin added by each of the three ways: listed, loaded, untrusted,
 * defined where it was dropped, usable; the header lists the layers. */
START_TEST(added_by_each_way)
{
    const char *xdg = qbt_scratch("reg-xdg"), *pathd = qbt_scratch("reg-path");
    const char *pdir = qbt_scratch("reg-pdir"), *work = qbt_scratch("reg-work");
    char *xq = subdir(xdg, "quantbridge"), *xd = subdir(xq, "plugins.d"), *e1, *e2, *model;
    const char *env[3];
    const struct {
        const char *name, *dir, *lib;
    } want[] = {{"fake-weak", xd, "libqb_fake_weak.so"},
                {"fake", pathd, "libqb_fake.so"},
                {"fake-abi10", pdir, "libqb_fake_abi10.so"}};
    const char *pre[] = {"--plugin-dir", pdir, NULL};
    qbt_result r;
    cJSON *j;
    size_t i;
    clean_env();
    /* the user layer is a conf directory: a library beside the conf is
     * named with a '/' (relative to the conf); a plugin directory's conf
     * names it bare */
    drop_plugin(xd, "fake-weak", "libqb_fake_weak.so", "./libqb_fake_weak.so", "");
    drop_plugin(pathd, "fake", "libqb_fake.so", "libqb_fake.so", "");
    /* (it probes FAKEMODEL as 100 too: the lower priority leaves fake the
     * reader of model.fake) */
    drop_plugin(pdir, "fake-abi10", "libqb_fake_abi10.so", "libqb_fake_abi10.so", "priority=10\n");
    ck_assert(asprintf(&e1, "XDG_CONFIG_HOME=%s", xdg) > 0);
    ck_assert(asprintf(&e2, "QUANTBRIDGE_PLUGIN_PATH=%s", pathd) > 0);
    env[0] = e1;
    env[1] = e2;
    env[2] = NULL;
    j = listing(pre, env, work);
    expect_builtins(j, NULL);
    for (i = 0; i < sizeof want / sizeof want[0]; i++) {
        const cJSON *p = find(j, want[i].name);
        char *conf, *lib, *cn;
        ck_assert_msg(p != NULL, "%s not listed", want[i].name);
        ck_assert_msg(strcmp(str(p, "status"), "loaded") == 0, "%s: %s", want[i].name,
                      str(p, "error"));
        ck_assert_msg(!trusted(p), "%s trusted", want[i].name);
        ck_assert(asprintf(&cn, "%s.conf", want[i].name) > 0);
        conf = qbt_path(want[i].dir, cn);
        lib = qbt_path(want[i].dir, want[i].lib);
        ck_assert_str_eq(str(p, "defined_in"), conf);
        ck_assert_str_eq(str(p, "library"), lib);
        free(lib);
        free(conf);
        free(cn);
    }
    cJSON_Delete(j);

    /* The text listing: one line per layer, in reading order, then the
     * origin and trust of each plugin. */
    {
        const char *argv[] = {"--plugin-dir", pdir, "plugins", NULL};
        char *l1, *l2, *l3, *o1;
        const char *a, *b, *c;
        qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = work}, argv);
        ck_assert_int_eq(r.status, 0);
        ck_assert(asprintf(&l1, "\n  user         %s\n", xd) > 0);
        ck_assert(asprintf(&l2, "\n  plugin-path  %s\n", pathd) > 0);
        ck_assert(asprintf(&l3, "\n  plugin-dir   %s\n", pdir) > 0);
        ck_assert(asprintf(&o1, "defined in %s/fake.conf (plugin-path layer); untrusted (probe "
                           "runs in a child)", pathd) > 0);
        a = strstr(r.out, l1);
        b = strstr(r.out, l2);
        c = strstr(r.out, l3);
        ck_assert_msg(strstr(r.out, "\n  built-in     ") && a && b && c && a < b && b < c, "%s",
                      r.out);
        ck_assert_msg(strstr(r.out, o1), "%s", r.out);
        ck_assert_msg(strstr(r.out, "(built-in layer); trusted\n"), "%s", r.out);
        qbt_result_free(&r);
        free(l1);
        free(l2);
        free(l3);
        free(o1);
    }

    /* The added reader is used: inspect picks fake (probe in a child). */
    model = qbt_path(work, "model.fake");
    qbt_write_file(model, "FAKEMODEL\n");
    {
        const char *argv[] = {"inspect", model, "--plugin-dir", pdir, NULL};
        qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = work}, argv);
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_msg(strstr(r.out, "(reader fake "), "%s", r.out);
        qbt_result_free(&r);
    }
    free(model);
    free(e1);
    free(e2);
    free(xd);
    free(xq);
}
END_TEST

START_TEST(second_definition_names_both_files)
{
    const char *a = qbt_scratch("reg-dup-a"), *b = qbt_scratch("reg-dup-b");
    const char *work = qbt_scratch("reg-dup-w");
    char *envv, *ca = qbt_path(a, "fake.conf"), *cb = qbt_path(b, "fake.conf");
    char *main_f = qbt_path(work, "quantbridge.conf"), *text, *bconf;
    const char *env[2];
    size_t n;
    char **names = builtin_names(&n);
    qbt_result r;
    cJSON *j;
    const cJSON *p;
    clean_env();
    drop_plugin(a, "fake", "libqb_fake.so", "libqb_fake.so", "");
    drop_plugin(b, "fake", "libqb_fake.so", "libqb_fake.so", "");
    ck_assert(asprintf(&envv, "QUANTBRIDGE_PLUGIN_PATH=%s", a) > 0);
    env[0] = envv;
    env[1] = NULL;
    {
        const char *argv[] = {"--plugin-dir", b, "plugins", NULL};
        qbt_run_ex(&r, &(qbt_run_opts){.env = env}, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, cb) && strstr(r.err, ca) &&
                          strstr(r.err, "defines plugin fake, which") &&
                          strstr(r.err, "override=true"),
                      "%s", r.err);
        qbt_result_free(&r);
    }
    /* override=true in the later definition replaces the earlier one. */
    drop_plugin(b, "fake", "libqb_fake.so", "libqb_fake.so", "override=true\npriority=7\n");
    {
        const char *pre[] = {"--plugin-dir", b, NULL};
        char *lib = qbt_path(b, "libqb_fake.so");
        j = listing(pre, env, NULL);
        p = find(j, "fake");
        ck_assert_ptr_nonnull(p);
        ck_assert_str_eq(str(p, "status"), "loaded");
        ck_assert_str_eq(str(p, "defined_in"), cb);
        ck_assert_str_eq(str(p, "library"), lib);
        ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(p, "priority")->valueint, 7);
        cJSON_Delete(j);
        free(lib);
    }
    /* A built-in defined again in the main file: the same error. */
    ck_assert(asprintf(&text, "[plugin:%s]\nlibrary=libqb_x.so\n", names[0]) > 0);
    qbt_write_file(main_f, text);
    ck_assert(asprintf(&bconf, "/etc/quantbridge/plugins.d/%s.conf", names[0]) > 0);
    {
        const char *argv[] = {"--config", main_f, "plugins", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, main_f) && strstr(r.err, bconf), "%s", r.err);
        qbt_result_free(&r);
    }
    free(bconf);
    free(text);
    free(main_f);
    free_names(names);
    free(envv);
    free(ca);
    free(cb);
}
END_TEST

START_TEST(relative_entries)
{
    const char *work = qbt_scratch("reg-rel");
    char *rel = subdir(work, "rel"), *abs_env;
    const char *env[2];
    qbt_result r;
    cJSON *j;
    const cJSON *p;
    clean_env();
    drop_plugin(rel, "fake", "libqb_fake.so", "libqb_fake.so", "");
    /* $QUANTBRIDGE_PLUGIN_PATH: a relative entry is ignored with a
     * warning naming it, even when it exists under the cwd. */
    ck_assert(asprintf(&abs_env, "QUANTBRIDGE_PLUGIN_PATH=rel:%s", qbt_scratch("reg-rel-e")) > 0);
    env[0] = abs_env;
    env[1] = NULL;
    {
        const char *argv[] = {"plugins", NULL};
        qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = work}, argv);
        ck_assert_int_eq(r.status, 0);
        ck_assert_msg(strstr(r.err, "quantbridge: warning: $QUANTBRIDGE_PLUGIN_PATH entry 'rel' "
                                    "ignored: not an absolute path"), "%s", r.err);
        ck_assert_msg(strstr(r.out, "\n  plugin-path  rel (not absolute: ignored)\n"), "%s",
                      r.out);
        ck_assert_msg(!strstr(r.out, "\nfake "), "%s", r.out);
        qbt_result_free(&r);
    }
    /* --plugin-dir: typed for this run, so resolved against the cwd. */
    {
        const char *pre[] = {"--plugin-dir", "rel", NULL};
        char *conf = qbt_path(rel, "fake.conf");
        j = listing(pre, NULL, work);
        p = find(j, "fake");
        ck_assert_ptr_nonnull(p);
        ck_assert_str_eq(str(p, "status"), "loaded");
        ck_assert_str_eq(str(p, "defined_in"), conf);
        cJSON_Delete(j);
        free(conf);
    }
    /* A --plugin-dir that is no directory: usage error naming it, before
     * or after the command name. */
    {
        const char *a1[] = {"--plugin-dir", "nope", "plugins", NULL};
        const char *a2[] = {"plugins", "--plugin-dir", "rel/fake.conf", NULL};
        qbt_run_ex(&r, &(qbt_run_opts){.cwd = work}, a1);
        ck_assert_int_eq(r.status, 2);
        ck_assert_msg(strstr(r.err, "quantbridge: error: --plugin-dir nope: No such file or "
                                    "directory"), "%s", r.err);
        qbt_result_free(&r);
        qbt_run_ex(&r, &(qbt_run_opts){.cwd = work}, a2);
        ck_assert_int_eq(r.status, 2);
        ck_assert_msg(strstr(r.err, "--plugin-dir rel/fake.conf: not a directory"), "%s", r.err);
        qbt_result_free(&r);
    }
    free(abs_env);
    free(rel);
}
END_TEST

/* trusted=true in an added plugin's own section is ignored (a drop-in
 * cannot vouch for itself); set by name in the main file named with
 * --config, it makes the plugin trusted; the section name must match the
 * plugin. */
START_TEST(trust_and_section_name)
{
    const char *pdir = qbt_scratch("reg-trust"), *work = qbt_scratch("reg-trust-w");
    const char *other = qbt_scratch("reg-trust-o");
    char *main_f = qbt_path(work, "quantbridge.conf"), *conf;
    cJSON *j;
    const cJSON *p;
    clean_env();
    drop_plugin(pdir, "fake", "libqb_fake.so", "libqb_fake.so", "trusted=true\n");
    drop_plugin(pdir, "fake-weak", "libqb_fake_weak.so", "libqb_fake_weak.so", "");
    qbt_write_file(main_f, "[plugin:fake-weak]\ntrusted=true\n");
    {
        const char *pre[] = {"--plugin-dir", pdir, NULL};
        j = listing(pre, NULL, NULL);
        ck_assert(!trusted(find(j, "fake")));
        ck_assert(!trusted(find(j, "fake-weak")));
        cJSON_Delete(j);
    }
    {
        const char *pre[] = {"--plugin-dir", pdir, "--config", main_f, NULL};
        j = listing(pre, NULL, NULL);
        ck_assert(trusted(find(j, "fake-weak")));
        cJSON_Delete(j);
    }
    {
        /* the same main file through the environment is no flag the user
         * typed for this run: it cannot trust */
        const char *pre[] = {"--plugin-dir", pdir, NULL};
        char *env_main;
        ck_assert(asprintf(&env_main, "QUANTBRIDGE_CONFIG=%s", main_f) > 0);
        j = listing(pre, (const char *const[]){env_main, NULL}, NULL);
        ck_assert(!trusted(find(j, "fake-weak")));
        cJSON_Delete(j);
        free(env_main);
    }
    /* A conf whose section is not the plugin's own name. */
    drop_plugin(other, "renamed", "libqb_fake.so", "libqb_fake.so", "");
    conf = qbt_path(other, "renamed.conf");
    {
        const char *pre[] = {"--plugin-dir", other, NULL};
        j = listing(pre, NULL, NULL);
        p = find(j, "renamed");
        ck_assert_ptr_nonnull(p);
        ck_assert_str_eq(str(p, "status"), "failed");
        ck_assert_str_eq(str(p, "error_category"), "DESCRIPTOR_INVALID");
        ck_assert_msg(strstr(str(p, "error"), conf) &&
                          strstr(str(p, "error"), "plugin calls itself 'fake' but is configured "
                                                  "as [plugin:renamed] (a conf section must be "
                                                  "named after the plugin it loads: "
                                                  "[plugin:fake])"),
                      "%s", str(p, "error"));
        cJSON_Delete(j);
    }
    free(conf);
    free(main_f);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("sdk-contract-registration");
    TCase *tc = tcase_create("layers");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, builtins_stay_with_every_main_config);
    tcase_add_test(tc, added_by_each_way);
    tcase_add_test(tc, second_definition_names_both_files);
    tcase_add_test(tc, relative_entries);
    tcase_add_test(tc, trust_and_section_name);
    suite_add_tcase(s, tc);
    return s;
}
