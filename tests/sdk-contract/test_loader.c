/*
 * SDK contract: every broken fake plugin variant is reported by
 * `quantbridge plugins --json` with its own load category and a message
 * naming the problem, and the good plugin still loads and works. The
 * listing's shape (one status, choices and roles as arrays, writer
 * capabilities) and `plugins --check`.
 */
#define _GNU_SOURCE
#include <check.h>

#include "qbt_check_main.h"

#include <quantbridge/qb_abi.h>

/* The newest ABI this host speaks, as the host prints it ("1.1"): a plugin
 * built with these headers negotiates it. */
#define QB_STR2_(x) #x
#define QB_STR_(x) QB_STR2_(x)
#define HOST_ABI_TEXT QB_STR_(QB_ABI_MAJOR) "." QB_STR_(QB_ABI_MINOR)
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qbt_fs.h"
#include "qbt_run.h"

static char *cfg_path;
static cJSON *listing;

static const char *fake_dir(void)
{
    const char *d = getenv("QBT_FAKE_DIR");
    ck_assert_msg(d && *d, "QBT_FAKE_DIR not set");
    return d;
}

static void write_config(void)
{
    char *dir = qbt_mkdtemp("contract"), *text = NULL;
    const char *fd = fake_dir();
    cfg_path = qbt_path(dir, "quantbridge.conf");
    ck_assert(asprintf(&text,
                       "[general]\nmin-probe-score=50\n"
                       "[plugin:fake]\nlibrary=%s/libqb_fake.so\n"
                       "[plugin:fake-old-abi]\nlibrary=%s/libqb_fake_old_abi.so\n"
                       "[plugin:fake-needs-newer]\nlibrary=%s/libqb_fake_needs_newer.so\n"
                       "[plugin:fake-future-abi]\nlibrary=%s/libqb_fake_future_abi.so\n"
                       "[plugin:fake-no-entry]\nlibrary=%s/libqb_fake_no_entry.so\n"
                       "[plugin:fake-init-fails]\nlibrary=%s/libqb_fake_init_fails.so\n"
                       "[plugin:fake-abi-refusal]\nlibrary=%s/libqb_fake_abi_refusal.so\n"
                       "[plugin:fake-init-internal]\nlibrary=%s/libqb_fake_init_internal.so\n"
                       "[plugin:fake-init-silent]\nlibrary=%s/libqb_fake_init_silent.so\n"
                       "[plugin:fake-small-struct]\nlibrary=%s/libqb_fake_small_struct.so\n"
                       "[plugin:fake-bad-vtable]\nlibrary=%s/libqb_fake_bad_vtable.so\n"
                       "[plugin:fake-dup]\nlibrary=%s/libqb_fake_dup.so\n"
                       "[plugin:fake-text]\nlibrary=%s/libqb_fake_text.so\n"
                       "[plugin:fake-missing]\nlibrary=%s/libqb_does_not_exist.so\n"
                       "[plugin:fake-off]\nlibrary=%s/libqb_fake.so\nenabled=false\n"
                       "[plugin:fake-same-lib]\nlibrary=%s/libqb_fake.so\n"
                       "[plugin:fake-caps]\nlibrary=%s/libqb_fake_caps.so\npriority=10\n"
                       "[plugin:fake-bad-caps]\nlibrary=%s/libqb_fake_bad_caps.so\n",
                       fd, fd, fd, fd, fd, fd, fd, fd, fd, fd, fd, fd, fd, fd, fd, fd, fd,
                       fd) > 0);
    qbt_write_file(cfg_path, text);
    free(text);
    free(dir);
}

static void load_listing(void)
{
    qbt_result r;
    write_config();
    const char *argv[] = {"--config", cfg_path, "plugins", "--json", NULL};
    qbt_run(&r, argv);
    ck_assert_msg(r.status == 0, "plugins --json exit %d: %s", r.status, r.err);
    listing = cJSON_Parse(r.out);
    ck_assert_msg(listing != NULL, "not JSON: %s", r.out);
    qbt_result_free(&r);
}

static const cJSON *plugin(const char *name)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(listing, "plugins"), *p;
    cJSON_ArrayForEach(p, arr)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
            return p;
    }
    ck_abort_msg("plugin %s not listed", name);
    return NULL;
}

static const char *field(const cJSON *p, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Asserts the failure category and that the error contains every needle. */
static void expect_failed(const char *name, const char *state, const char *n1, const char *n2)
{
    const cJSON *p;
    const char *err;
    if (!listing)
        load_listing();
    p = plugin(name);
    ck_assert_str_eq(field(p, "status"), "failed");
    ck_assert_str_eq(field(p, "error_category"), state);
    /* One status field: the old duplicate is gone. */
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(p, "state"));
    err = field(p, "error");
    ck_assert_msg(err != NULL, "%s: no error text", name);
    ck_assert_msg(strstr(err, n1) != NULL, "%s: '%s' lacks '%s'", name, err, n1);
    if (n2)
        ck_assert_msg(strstr(err, n2) != NULL, "%s: '%s' lacks '%s'", name, err, n2);
}

START_TEST(good_plugin_loads)
{
    const cJSON *p, *opts, *o;
    int n = 0, found = 0;
    load_listing();
    p = plugin("fake");
    ck_assert_str_eq(field(p, "status"), "loaded");
    ck_assert_str_eq(field(p, "kind"), "both");
    ck_assert_str_eq(field(p, "abi"), HOST_ABI_TEXT);
    ck_assert_str_eq(field(p, "version"), "1.0.0");
    ck_assert_ptr_nonnull(strstr(field(p, "library"), "libqb_fake.so"));
    opts = cJSON_GetObjectItemCaseSensitive(p, "options");
    cJSON_ArrayForEach(o, opts)
    {
        n++;
        if (strcmp(field(o, "name"), "group_size") == 0) {
            found = 1;
            ck_assert_str_eq(field(o, "type"), "int");
            ck_assert_str_eq(field(o, "default"), "128");
        }
    }
    ck_assert_int_eq(n, 6);
    ck_assert(found);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(p, "error")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(p, "error_category")));
    /* No capabilities declared: no writer_caps object. */
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(p, "writer_caps"));
}
END_TEST

/* Strings of a JSON array, joined by ','. */
static void joined(const cJSON *arr, char *buf, size_t size)
{
    const cJSON *e;
    size_t len = 0;
    ck_assert_msg(cJSON_IsArray(arr), "not an array");
    buf[0] = '\0';
    cJSON_ArrayForEach(e, arr)
    {
        ck_assert(cJSON_IsString(e));
        len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "", e->valuestring);
    }
}

static const cJSON *option_of(const cJSON *p, const char *name)
{
    const cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(p, "options"))
        if (strcmp(field(o, "name"), name) == 0)
            return o;
    ck_abort_msg("option %s not listed", name);
    return NULL;
}

START_TEST(json_choices_roles_and_caps)
{
    const cJSON *p, *caps;
    char buf[256];
    load_listing();
    p = plugin("fake");
    joined(cJSON_GetObjectItemCaseSensitive(option_of(p, "fail_in"), "choices"), buf, sizeof buf);
    ck_assert_str_eq(buf, "none,begin,finish");
    joined(cJSON_GetObjectItemCaseSensitive(option_of(p, "fail_in"), "roles"), buf, sizeof buf);
    ck_assert_str_eq(buf, "writer");
    joined(cJSON_GetObjectItemCaseSensitive(option_of(p, "bias"), "roles"), buf, sizeof buf);
    ck_assert_str_eq(buf, "reader");
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(option_of(p, "bias"), "choices"));

    caps = cJSON_GetObjectItemCaseSensitive(plugin("fake-caps"), "writer_caps");
    ck_assert_ptr_nonnull(caps);
    joined(cJSON_GetObjectItemCaseSensitive(caps, "architectures"), buf, sizeof buf);
    ck_assert_str_eq(buf, "llama,mistral");
    joined(cJSON_GetObjectItemCaseSensitive(caps, "required_facts"), buf, sizeof buf);
    ck_assert_str_eq(buf, "");
    ck_assert_str_eq(field(caps, "side_files"), "host");
    ck_assert_str_eq(field(caps, "verify_reader"), "fake-caps");
}
END_TEST

START_TEST(both_side_file_bits_refused)
{
    expect_failed("fake-bad-caps", "DESCRIPTOR_INVALID", "libqb_fake_bad_caps.so",
                  "both QB_WRITER_SIDE_FILES_SELF and QB_WRITER_SIDE_FILES_HOST");
}
END_TEST

/* `plugins --check`: the listing, then exit 1 when an enabled plugin failed
 * to load; disabled ones do not count; without --check the exit stays 0. */
START_TEST(check_exit_status)
{
    char *dir = qbt_mkdtemp("contract-check"), *ok_cfg = qbt_path(dir, "ok.conf"), *text = NULL;
    const char *fd = fake_dir();
    qbt_result r;
    write_config();
    {
        const char *argv[] = {"--config", cfg_path, "plugins", "--check", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.out, "ABI_REFUSED"));
        ck_assert_msg(strstr(r.err, "quantbridge: error: plugins --check: ") &&
                          strstr(r.err, "configured plugins failed to load: fake-abi-refusal, "
                                        "fake-bad-caps, fake-bad-vtable, fake-dup"), "%s", r.err);
        qbt_result_free(&r);
    }
    {
        const char *argv[] = {"--config", cfg_path, "plugins", "--json", "--check", NULL};
        qbt_run(&r, argv);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.out, "\"error_category\""));
        qbt_result_free(&r);
    }
    ck_assert(asprintf(&text, "[plugin:fake]\nlibrary=%s/libqb_fake.so\n"
                              "[plugin:fake-init-fails]\nlibrary=%s/libqb_fake_init_fails.so\n"
                              "enabled=false\n", fd, fd) > 0);
    qbt_write_file(ok_cfg, text);
    {
        const char *argv[] = {"--config", ok_cfg, "plugins", "--check", NULL};
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
        ck_assert_ptr_nonnull(strstr(r.out, "disabled"));
        qbt_result_free(&r);
    }
    free(text);
    free(ok_cfg);
    free(dir);
}
END_TEST

START_TEST(old_abi_refused)
{
    /* Names the file, the plugin's ABI and the host's range. */
    expect_failed("fake-old-abi", "ABI_REFUSED", "libqb_fake_old_abi.so",
                  "plugin speaks ABI 0.9, host offers 1.0 to " HOST_ABI_TEXT);
}
END_TEST

START_TEST(needs_newer_refused)
{
    expect_failed("fake-needs-newer", "ABI_REFUSED", "libqb_fake_needs_newer.so",
                  "plugin speaks ABI 1.7, host offers 1.0 to " HOST_ABI_TEXT);
}
END_TEST

START_TEST(future_major_entry_missing)
{
    expect_failed("fake-future-abi", "ENTRY_MISSING", "exports qb_plugin_entry_v2",
                  "ABI major 2");
}
END_TEST

START_TEST(no_entry)
{
    expect_failed("fake-no-entry", "ENTRY_MISSING", "does not export qb_plugin_entry_v1", NULL);
}
END_TEST

START_TEST(init_fails)
{
    /* The plugin's own set_error text reaches the listing. */
    expect_failed("fake-init-fails", "INIT_FAILED", "license file /nonexistent missing",
                  "QB_E_IO");
}
END_TEST

START_TEST(abi_refusal_text_shown)
{
    /* The plugin's own reason, then what the negotiation shows. */
    expect_failed("fake-abi-refusal", "ABI_REFUSED",
                  "plugin fake-abi-refusal: ", "libqb_fake_abi_refusal.so: ABI refused: needs the "
                  "frobnicator 2.0 (plugin names no ABI, host offers 1.0 to " HOST_ABI_TEXT ")");
}
END_TEST

START_TEST(init_failure_text_shown)
{
    expect_failed("fake-init-internal", "INIT_FAILED",
                  "initialisation failed (QB_E_INTERNAL): self-test of the packer failed", NULL);
    /* silent, with a status no host knows: what the host knows */
    expect_failed("fake-init-silent", "INIT_FAILED",
                  "initialisation failed (status -1000): the plugin gave no reason", NULL);
}
END_TEST

START_TEST(small_descriptor)
{
    expect_failed("fake-small-struct", "DESCRIPTOR_INVALID", "descriptor struct_size",
                  "smaller than the ABI 1.0 size");
}
END_TEST

START_TEST(small_vtable)
{
    expect_failed("fake-bad-vtable", "DESCRIPTOR_INVALID", "reader vtable struct_size", NULL);
}
END_TEST

START_TEST(duplicate_name)
{
    expect_failed("fake-dup", "DUPLICATE_NAME", "declares the name 'fake'", "libqb_fake.so");
}
END_TEST

START_TEST(same_library_twice)
{
    expect_failed("fake-same-lib", "DUPLICATE_NAME", "library already loaded for plugin fake",
                  NULL);
}
END_TEST

START_TEST(not_shared_object)
{
    expect_failed("fake-text", "NOT_SHARED_OBJECT", "libqb_fake_text.so is not a shared object",
                  NULL);
}
END_TEST

START_TEST(missing_file)
{
    expect_failed("fake-missing", "FILE_MISSING", "libqb_does_not_exist.so not found", NULL);
}
END_TEST

START_TEST(disabled_listed)
{
    const cJSON *p;
    load_listing();
    p = plugin("fake-off");
    ck_assert_str_eq(field(p, "status"), "disabled");
}
END_TEST

START_TEST(text_listing_shows_reasons)
{
    qbt_result r;
    write_config();
    const char *argv[] = {"--config", cfg_path, "plugins", NULL};
    qbt_run(&r, argv);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "ABI_REFUSED"));
    ck_assert_ptr_nonnull(strstr(r.out, "DUPLICATE_NAME"));
    ck_assert_ptr_nonnull(strstr(r.out, "option group_size (int, default 128)"));
    ck_assert_ptr_nonnull(strstr(r.out, "ABI_REFUSED: plugin fake-abi-refusal: "));
    ck_assert_ptr_nonnull(strstr(r.out, ": ABI refused: needs the frobnicator 2.0 (plugin names "
                                        "no ABI, host offers 1.0 to " HOST_ABI_TEXT ")"));
    ck_assert_ptr_nonnull(strstr(r.out, "INIT_FAILED: plugin fake-init-internal: "));
    ck_assert_ptr_nonnull(strstr(r.out, "self-test of the packer failed"));
    ck_assert_ptr_nonnull(strstr(r.out, "writer option group_size (int, default 128)"));
    ck_assert_ptr_nonnull(strstr(r.out, "reader option bias (double, default 0)"));
    ck_assert_ptr_nonnull(strstr(r.out, "side files: none"));
    ck_assert_ptr_nonnull(strstr(r.out, "verify reader: none (the output is probed)"));
    ck_assert_ptr_nonnull(strstr(r.out, "writer architectures: llama, mistral"));
    ck_assert_ptr_nonnull(strstr(r.out, "side files: host copies"));
    ck_assert_ptr_nonnull(strstr(r.out, "verify reader: fake-caps"));
    qbt_result_free(&r);
}
END_TEST

START_TEST(good_plugin_still_converts)
{
    /* With every broken variant configured, conversion still works. */
    char *dir = qbt_mkdtemp("contract-conv");
    char *src = qbt_path(dir, "model.fake"), *out = qbt_path(dir, "out");
    qbt_result r;
    write_config();
    const char *argv[] = {"--config", cfg_path, "convert", "--source", src, "--output", out,
                          "--writer", "fake", NULL};
    qbt_write_file(src, "FAKEMODEL\n");
    qbt_run(&r, argv);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert(qbt_exists(out));
    qbt_result_free(&r);
    free(src);
    free(out);
    free(dir);
}
END_TEST

START_TEST(unrecognised_input_mentions_failed_plugins)
{
    char *dir = qbt_mkdtemp("contract-unrec"), *src = qbt_path(dir, "model.bin");
    qbt_result r;
    write_config();
    qbt_write_file(src, "not a model\n");
    const char *argv[] = {"--config", cfg_path, "inspect", src, NULL};
    qbt_run(&r, argv);
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "no reader recognises this input"));
    ck_assert_ptr_nonnull(strstr(r.err, "configured plugins failed to load: "
                                        "fake-abi-refusal, fake-bad-caps, fake-bad-vtable"));
    qbt_result_free(&r);
    free(src);
    free(dir);
}
END_TEST

START_TEST(build_tree_default_config)
{
    /* No --config, no variables, another cwd: the build tree's own
     * etc/quantbridge/quantbridge.conf (found from the executable). */
    char *home = qbt_mkdtemp("contract-home"), *want = NULL, *canon_want, *canon_got;
    const char *bd = getenv("QB_TEST_BUILD_DIR");
    const char *argv[] = {"plugins", "--json", NULL};
    const cJSON *cfg;
    cJSON *root;
    qbt_result r;
    ck_assert_ptr_nonnull(bd);
    unsetenv("QUANTBRIDGE_CONFIG");
    unsetenv("QUANTBRIDGE_PLUGIN_PATH");
    setenv("XDG_CONFIG_HOME", home, 1); /* empty: no user config */
    ck_assert_int_eq(chdir(home), 0);
    qbt_run(&r, argv);
    ck_assert_msg(r.status == 0, "%s", r.err);
    root = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(root);
    cfg = cJSON_GetObjectItemCaseSensitive(root, "config");
    ck_assert(cJSON_IsString(cfg));
    ck_assert(asprintf(&want, "%s/etc/quantbridge/quantbridge.conf", bd) > 0);
    canon_want = realpath(want, NULL);
    canon_got = realpath(cfg->valuestring, NULL);
    ck_assert_ptr_nonnull(canon_want);
    ck_assert_ptr_nonnull(canon_got);
    ck_assert_str_eq(canon_got, canon_want);
    free(canon_want);
    free(canon_got);
    free(want);
    cJSON_Delete(root);
    qbt_result_free(&r);
    free(home);
}
END_TEST

START_TEST(missing_config_is_error)
{
    const char *argv[] = {"--config", "/nonexistent/quantbridge.conf", "plugins", NULL};
    qbt_result r;
    qbt_run(&r, argv);
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "quantbridge: error: config file "
                                        "/nonexistent/quantbridge.conf (from --config): not found"));
    qbt_result_free(&r);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("sdk-contract-loader");
    TCase *tc = tcase_create("variants");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, good_plugin_loads);
    tcase_add_test(tc, json_choices_roles_and_caps);
    tcase_add_test(tc, both_side_file_bits_refused);
    tcase_add_test(tc, check_exit_status);
    tcase_add_test(tc, old_abi_refused);
    tcase_add_test(tc, needs_newer_refused);
    tcase_add_test(tc, future_major_entry_missing);
    tcase_add_test(tc, no_entry);
    tcase_add_test(tc, init_fails);
    tcase_add_test(tc, abi_refusal_text_shown);
    tcase_add_test(tc, init_failure_text_shown);
    tcase_add_test(tc, small_descriptor);
    tcase_add_test(tc, small_vtable);
    tcase_add_test(tc, duplicate_name);
    tcase_add_test(tc, same_library_twice);
    tcase_add_test(tc, not_shared_object);
    tcase_add_test(tc, missing_file);
    tcase_add_test(tc, disabled_listed);
    tcase_add_test(tc, text_listing_shows_reasons);
    tcase_add_test(tc, good_plugin_still_converts);
    tcase_add_test(tc, unrecognised_input_mentions_failed_plugins);
    tcase_add_test(tc, build_tree_default_config);
    tcase_add_test(tc, missing_config_is_error);
    suite_add_tcase(s, tc);
    return s;
}
