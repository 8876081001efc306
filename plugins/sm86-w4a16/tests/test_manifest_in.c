/*
 * The sm86-w4a16 reader's manifest check (manifest_in.c over the kit's
 * w4a16_manifest) on hand-built directories: a valid one, and the
 * cases docs/w4a16-format.md "Strict reading" settles (uppercase digest,
 * duplicate key, name starting with '.', zero layers, layer file width
 * above 1,000 layers). Expected names and digests come from the document
 * and the test's own formatting, not from the code under test.
 */
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "w4t_fake.h"
#include "w4w.h"
#include "qbt_json_refusals.h"

static char g_dir[512];

typedef struct variant {
    int num_layers;  /* in the manifest */
    int listed;      /* layer files listed and written: layer_00 .. */
    int upper_sha;   /* config.json's digest in uppercase */
    const char *extra_member; /* top-level JSON text added, or NULL */
    const char *extra_file;   /* a file written and listed, or NULL */
} variant;

static void put(const char *name, const char *text, char *files, size_t cap, int upper)
{
    char path[1024], hex[65];
    uint8_t sha[32];
    size_t l = strlen(files);
    FILE *f;
    int i;
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    w4t_sha256((const uint8_t *)text, strlen(text), sha);
    for (i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, upper ? "%02X" : "%02x", sha[i]);
    snprintf(files + l, cap - l, "%s{\"name\": \"%s\", \"bytes\": %zu, \"sha256\": \"%s\"}",
             l ? ", " : "", name, strlen(text), hex);
}

static qb_status read_variant(const variant *v, w4w_manifest_in *out)
{
    const char *base = getenv("QB_TEST_TMPDIR");
    char tmpl[512], files[8192] = "", man[9000], name[64];
    int i;
    if (!base || !*base)
        base = "/tmp";
    snprintf(tmpl, sizeof tmpl, "%s/w4w-manifest-XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(g_dir, sizeof g_dir, "%s", tmpl);
    put("config.json", "{\"model_type\": \"llama\"}\n", files, sizeof files, v->upper_sha);
    put("embed.safetensors", "e", files, sizeof files, 0);
    put("norm.safetensors", "n", files, sizeof files, 0);
    for (i = 0; i < v->listed; i++) {
        snprintf(name, sizeof name, "layer_%02d.safetensors", i);
        put(name, "l", files, sizeof files, 0);
    }
    if (v->extra_file)
        put(v->extra_file, "x", files, sizeof files, 0);
    snprintf(man, sizeof man,
             "{\"format\": \"sm86-w4a16\", \"format_version\": 1, \"bits\": 4,"
             " \"symmetric\": true, \"code_offset\": 8, \"nibble_order\": \"low-even\","
             " \"group_size\": 32, \"architecture\": \"llama\", \"num_layers\": %d,%s"
             " \"tie_word_embeddings\": true, \"lm_head\": \"f16\", \"features\": [],"
             " \"files\": [%s], \"tensors\": {}}",
             v->num_layers, v->extra_member ? v->extra_member : "", files);
    {
        char path[1024];
        FILE *f;
        snprintf(path, sizeof path, "%s/manifest.json", g_dir);
        f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        fputs(man, f);
        fclose(f);
    }
    qbt_host_reset();
    return w4w_manifest_read(qbt_host(), g_dir, out);
}

START_TEST(test_valid)
{
    variant v = {.num_layers = 2, .listed = 2};
    w4w_manifest_in m;
    ck_assert_int_eq(read_variant(&v, &m), QB_OK);
    ck_assert_int_eq(m.n_layers, 2);
    ck_assert_int_eq(m.group_size, 32);
    ck_assert_int_eq(m.tied, 1);
    ck_assert_str_eq(m.arch->model_type, "llama");
}
END_TEST

START_TEST(test_uppercase_sha)
{
    variant v = {.num_layers = 1, .listed = 1, .upper_sha = 1};
    w4w_manifest_in m;
    ck_assert_int_eq(read_variant(&v, &m), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "config.json"));
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "lowercase"));
}
END_TEST

START_TEST(test_duplicate_key)
{
    variant v = {.num_layers = 1, .listed = 1, .extra_member = " \"num_layers\": 1,"};
    w4w_manifest_in m;
    ck_assert_int_eq(read_variant(&v, &m), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "duplicate key 'num_layers'"));
}
END_TEST

static qb_status manifest_open_cb(const char *path, void *ctx)
{
    w4w_manifest_in m;
    (void)ctx;
    return w4w_manifest_read(qbt_host(), path, &m);
}

/* manifest.json is read by the one strict parser (sdk/kit/qbk_json.h):
 * each refusal names the file and the reason. */
START_TEST(test_strict_json)
{
    variant v = {.num_layers = 1, .listed = 1};
    w4w_manifest_in m;
    ck_assert_int_eq(read_variant(&v, &m), QB_OK);
    qbt_json_refusals(g_dir, "manifest.json", "format", NULL, manifest_open_cb, NULL, NULL);
}
END_TEST

START_TEST(test_dot_name)
{
    variant v = {.num_layers = 1, .listed = 1, .extra_file = ".hidden"};
    w4w_manifest_in m;
    ck_assert_int_eq(read_variant(&v, &m), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "'.'"));
}
END_TEST

START_TEST(test_zero_layers)
{
    variant v = {.num_layers = 0, .listed = 0};
    w4w_manifest_in m;
    ck_assert_int_eq(read_variant(&v, &m), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "num_layers"));
}
END_TEST

/* w4a16-format.md "Directory": 1000 layers are layer_000 .., 1001 layers
 * layer_0000 ..; the first missing file names the width. */
START_TEST(test_layer_name_width)
{
    variant v = {.num_layers = 1000, .listed = 1};
    w4w_manifest_in m;
    ck_assert_int_eq(read_variant(&v, &m), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "layer_000.safetensors is not listed"));
    v.num_layers = 1001;
    ck_assert_int_eq(read_variant(&v, &m), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "layer_0000.safetensors is not listed"));
    v.num_layers = 100;
    ck_assert_int_eq(read_variant(&v, &m), QB_E_FORMAT);
    ck_assert_ptr_nonnull(strstr(qbt_host_last_error(), "layer_01.safetensors is not listed"));
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("sm86-w4a16-manifest-in");
    TCase *tc = tcase_create("strict");
    tcase_add_test(tc, test_valid);
    tcase_add_test(tc, test_uppercase_sha);
    tcase_add_test(tc, test_duplicate_key);
    tcase_add_test(tc, test_dot_name);
    tcase_add_test(tc, test_strict_json);
    tcase_add_test(tc, test_zero_layers);
    tcase_add_test(tc, test_layer_name_width);
    suite_add_tcase(s, tc);
    return s;
}
