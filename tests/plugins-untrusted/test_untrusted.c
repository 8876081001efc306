/*
 * Untrusted plugins through the built binary, with a config of its own:
 * the built-ins (always registered; their libraries lie in the
 * installation's plugin directory, so trusted and in-process) plus the
 * ut-* readers of ut_plugin.c by absolute path (outside it: contained).
 */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qbt_fs.h"
#include "qbt_run.h"

static const char *ut_dir(void)
{
    const char *d = getenv("QBT_UT_DIR");
    ck_assert_msg(d && *d, "QBT_UT_DIR not set");
    return d;
}

static char *make_source(const char *dir)
{
    char gen[4096], *src = qbt_path(dir, "src");
    pid_t pid;
    int st;
    snprintf(gen, sizeof gen, "%s/tests/bin/qb-gen-hf-dense", getenv("QB_TEST_BUILD_DIR"));
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        execl(gen, gen, "--arch", "llama", "--dtype", "bf16", "--layers", "1", "--hidden", "64",
              "--intermediate", "128", "--vocab", "64", "--tied", "0", "--seed", "3", "--out",
              src, (char *)NULL);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return src;
}

/* work/quantbridge.conf with `extra` sections (the built-ins come with
 * every config). */
static char *write_config(const char *work, const char *extra)
{
    char *conf = qbt_path(work, "quantbridge.conf"), *pd = qbt_path(work, "plugins.d"), *text;
    ck_assert_int_eq(mkdir(pd, 0755), 0);
    ck_assert(asprintf(&text, "[general]\nprobe-timeout=1\n%s", extra) > 0);
    qbt_write_file(conf, text);
    free(text);
    free(pd);
    return conf;
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
    size_t n = 0;
    char *data = qbt_read_file(from, &n);
    int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    ck_assert_ptr_nonnull(data);
    ck_assert(fd >= 0);
    ck_assert(write(fd, data, n) == (ssize_t)n);
    close(fd);
    ck_assert_int_eq(chmod(to, mode), 0);
    free(data);
}

static void run_tool(qbt_result *r, const char *conf, const char *cmd, const char *cwd,
                     const char *const *env)
{
    const char *conv[] = {"--config", conf, "convert", "--source", "src", "--output", "out",
                          NULL};
    const char *plug[] = {"--config", conf, "plugins", NULL};
    qbt_run_ex(r, &(qbt_run_opts){.env = env, .cwd = cwd}, strcmp(cmd, "convert") == 0 ? conv : plug);
}

START_TEST(crashing_and_hanging_probes_are_contained)
{
    char *work = qbt_mkdtemp("ut-contain"), *src = make_source(work), *extra, *conf, *out;
    /* ASan would catch the SEGV itself and exit 1; the point here is the
     * host seeing a child killed by a signal. */
    const char *env[] = {"ASAN_OPTIONS=handle_segv=0:detect_leaks=1", NULL};
    struct rlimit nocore = {0, 0};
    qbt_result r;
    setrlimit(RLIMIT_CORE, &nocore);
    ck_assert(asprintf(&extra, "[plugin:ut-segv]\nlibrary=%s/libqb_ut_segv.so\n"
                       "[plugin:ut-hang]\nlibrary=%s/libqb_ut_hang.so\n", ut_dir(),
                       ut_dir()) > 0);
    conf = write_config(work, extra);
    run_tool(&r, conf, "convert", work, env);
    ck_assert_msg(r.status == 0, "exit %d:\n%s", r.status, r.err);
    ck_assert_msg(strstr(r.err, "plugin ut-segv crashed (signal 11, Segmentation fault) in "
                         "probe; skipped for this run"), "%s", r.err);
    ck_assert_msg(strstr(r.err, "plugin ut-hang timed out in probe (no answer within 1 s); "
                         "skipped for this run"), "%s", r.err);
    out = qbt_path(work, "out");
    ck_assert(qbt_exists(out));
    ck_assert_int_eq(qbt_count_entries(work, ".qbtmp-"), 0);
    qbt_result_free(&r);
    free(out);
    free(conf);
    free(extra);
    free(src);
    free(work);
}
END_TEST

/* Runs convert with ut-ok configured with `trusted_line` and returns 1 when
 * its probe ran in a child of the tool, 0 when in the tool itself. */
static int probe_in_child(const char *trusted_line)
{
    char *work = qbt_mkdtemp("ut-where"), *src = make_source(work), *extra, *conf, *pidf;
    char *envv, *text;
    const char *env[2];
    long pid = 0, ppid = 0;
    qbt_result r;
    int child;
    pidf = qbt_path(work, "probe.pid");
    ck_assert(asprintf(&envv, "UT_PID_FILE=%s", pidf) > 0);
    env[0] = envv;
    env[1] = NULL;
    ck_assert(asprintf(&extra, "[plugin:ut-ok]\nlibrary=%s/libqb_ut_ok.so\n%s", ut_dir(),
                       trusted_line) > 0);
    conf = write_config(work, extra);
    run_tool(&r, conf, "convert", work, env);
    ck_assert_msg(r.status == 0, "%s", r.err);
    text = qbt_read_file(pidf, NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(sscanf(text, "%ld %ld", &pid, &ppid), 2);
    ck_assert(pid == (long)r.pid || ppid == (long)r.pid);
    child = pid != (long)r.pid;
    qbt_result_free(&r);
    free(text);
    free(envv);
    free(pidf);
    free(conf);
    free(extra);
    free(src);
    free(work);
    return child;
}

START_TEST(untrusted_by_default_outside_install_dir)
{
    ck_assert_int_eq(probe_in_child(""), 1);
    ck_assert_int_eq(probe_in_child("trusted=false\n"), 1);
    ck_assert_int_eq(probe_in_child("trusted=true\n"), 0);
}
END_TEST

/* ut-ok dropped into a --plugin-dir (its conf and a copy of the library,
 * the conf saying `trusted_line`); 1 when its probe ran in a child. */
static int dropped_probe_in_child(const char *trusted_line)
{
    char *work = qbt_mkdtemp("ut-drop"), *src = make_source(work), *pdir, *pidf, *from, *to;
    char *conf, *text, *envv;
    const char *env[2];
    long pid = 0, ppid = 0;
    qbt_result r;
    int child;
    pdir = qbt_path(work, "plugins");
    ck_assert_int_eq(mkdir(pdir, 0755), 0);
    from = qbt_path(ut_dir(), "libqb_ut_ok.so");
    to = qbt_path(pdir, "libqb_ut_ok.so");
    copy_file(from, to, 0755);
    conf = qbt_path(pdir, "ut-ok.conf");
    ck_assert(asprintf(&text, "[plugin:ut-ok]\nlibrary=libqb_ut_ok.so\n%s", trusted_line) > 0);
    qbt_write_file(conf, text);
    pidf = qbt_path(work, "probe.pid");
    ck_assert(asprintf(&envv, "UT_PID_FILE=%s", pidf) > 0);
    env[0] = envv;
    env[1] = NULL;
    {
        const char *argv[] = {"--plugin-dir", "plugins", "inspect", "src", NULL};
        qbt_run_ex(&r, &(qbt_run_opts){.env = env, .cwd = work}, argv);
    }
    ck_assert_msg(r.status == 0, "%s", r.err);
    free(text);
    text = qbt_read_file(pidf, NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(sscanf(text, "%ld %ld", &pid, &ppid), 2);
    ck_assert(pid == (long)r.pid || ppid == (long)r.pid);
    child = pid != (long)r.pid;
    qbt_result_free(&r);
    free(text);
    free(envv);
    free(pidf);
    free(conf);
    free(to);
    free(from);
    free(pdir);
    free(src);
    free(work);
    return child;
}

START_TEST(dropped_in_plugin_dir_is_untrusted)
{
    ck_assert_int_eq(dropped_probe_in_child(""), 1);
    /* its own conf cannot vouch for it: the sandbox stays */
    ck_assert_int_eq(dropped_probe_in_child("trusted=true\n"), 1);
}
END_TEST

START_TEST(world_writable_refused)
{
    char *work = qbt_mkdtemp("ut-perms"), *src = make_source(work), *lib, *from, *extra;
    char *conf, *wdir = qbt_path(work, "plugins-ww"), *lib2, *out;
    qbt_result r;
    from = qbt_path(ut_dir(), "libqb_ut_ok.so");
    lib = qbt_path(work, "libqb_ut_ok.so");
    copy_file(from, lib, 0757);
    ck_assert_int_eq(mkdir(wdir, 0755), 0);
    ck_assert_int_eq(chmod(wdir, 0777), 0); /* umask-proof */
    lib2 = qbt_path(wdir, "libqb_ut_ok.so");
    copy_file(from, lib2, 0755);
    ck_assert(asprintf(&extra, "[plugin:ut-ok]\nlibrary=%s\n[plugin:ut-ok2]\nlibrary=%s\n", lib,
                       lib2) > 0);
    conf = write_config(work, extra);
    run_tool(&r, conf, "plugins", work, NULL);
    ck_assert_msg(strstr(r.out, "UNSAFE_PERMISSIONS: plugin ut-ok: refused: ") &&
                  strstr(r.out, "libqb_ut_ok.so is world-writable"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "UNSAFE_PERMISSIONS: plugin ut-ok2: refused: its directory ") &&
                  strstr(r.out, "plugins-ww is world-writable"), "%s", r.out);
    qbt_result_free(&r);
    /* the rest still converts */
    run_tool(&r, conf, "convert", work, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    out = qbt_path(work, "out");
    ck_assert(qbt_exists(out));
    qbt_result_free(&r);
    free(out);
    free(lib2);
    free(wdir);
    free(conf);
    free(extra);
    free(lib);
    free(from);
    free(src);
    free(work);
}
END_TEST

START_TEST(never_from_cwd_or_model_dir)
{
    char *work = qbt_mkdtemp("ut-cwd"), *src = make_source(work), *from, *conf, *in_src;
    char *in_cwd, *envv;
    const char *rel_env[] = {"QUANTBRIDGE_PLUGIN_PATH=.", NULL};
    const char *abs_env[2];
    qbt_result r;
    from = qbt_path(ut_dir(), "libqb_ut_ok.so");
    in_src = qbt_path(src, "libqb_ut_ok.so");
    in_cwd = qbt_path(work, "libqb_ut_ok.so");
    copy_file(from, in_src, 0755);
    copy_file(from, in_cwd, 0755);
    conf = write_config(work, "[plugin:ut-ok]\nlibrary=libqb_ut_ok.so\n");
    /* a bare name with the library in the cwd and in the model dir, and a
     * relative search path entry: not found */
    run_tool(&r, conf, "plugins", work, rel_env);
    ck_assert_msg(strstr(r.out, "FILE_MISSING: plugin ut-ok: library "), "%s", r.out);
    qbt_result_free(&r);
    run_tool(&r, conf, "convert", work, rel_env);
    ck_assert_msg(r.status == 0, "%s", r.err);
    qbt_result_free(&r);
    /* an absolute search path naming that directory is explicit: loaded */
    ck_assert(asprintf(&envv, "QUANTBRIDGE_PLUGIN_PATH=%s", work) > 0);
    abs_env[0] = envv;
    abs_env[1] = NULL;
    run_tool(&r, conf, "plugins", work, abs_env);
    ck_assert_msg(!strstr(r.out, "FILE_MISSING") && strstr(r.out, "ut-ok"), "%s", r.out);
    qbt_result_free(&r);
    free(envv);
    free(conf);
    free(in_cwd);
    free(in_src);
    free(from);
    free(src);
    free(work);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("plugins-untrusted");
    TCase *tc = tcase_create("untrusted");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, crashing_and_hanging_probes_are_contained);
    tcase_add_test(tc, untrusted_by_default_outside_install_dir);
    tcase_add_test(tc, dropped_in_plugin_dir_is_untrusted);
    tcase_add_test(tc, world_writable_refused);
    tcase_add_test(tc, never_from_cwd_or_model_dir);
    suite_add_tcase(s, tc);
    return s;
}

#include "qbt_check_main.h"
