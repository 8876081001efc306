/* One implementation of the tokenizer side files (qbk_hf_sidefiles.h,
 * qbk_hf_write_tokenizer_files): the same GGUF source (the llama3 byte-level
 * BPE vocabulary of tests/data/tokenizers made into tokenizer.ggml.* by
 * qb-gen-gguf-tok) converted by the hf-dense writer, the sm86-w4a16 writer
 * and a third-party writer that leaves the side files to the host
 * (fake-caps, QB_WRITER_SIDE_FILES_HOST) gives byte-identical side files;
 * their content is checked against the original tokenizer files, and the
 * W4A16 manifest lists each with its size and SHA-256 as sha256sum sees
 * the written file. */
#include <check.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "qbt_check_main.h"
#include "qbt_fs.h"
#include "qbt_run.h"

static const char *const writers[] = {"hf-dense", "sm86-w4a16", "fake-caps"};
#define N_WRITERS 3
static const char *const side[] = {"tokenizer.json", "tokenizer_config.json",
                                   "generation_config.json"};
#define N_SIDE 3

static char *data_file(const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/tests/data/tokenizers/llama3/%s", getenv("QB_TEST_SOURCE_DIR"), name);
    return qbt_read_file(p, NULL);
}

/* The written file's sha256 as the coreutils tool computes it. */
static void sha256_of(const char *path, char hex[65])
{
    char cmd[4200], *out = NULL;
    snprintf(cmd, sizeof cmd, "/usr/bin/env sha256sum '%s'", path);
    ck_assert_int_eq(qbt_run_cmd(cmd, &out), 0);
    ck_assert(strlen(out) >= 64);
    memcpy(hex, out, 64);
    hex[64] = '\0';
    free(out);
}

START_TEST(same_side_files_for_every_writer)
{
    const char *bd = getenv("QB_TEST_BUILD_DIR"), *fd = getenv("QBT_FAKE_DIR");
    char *dir = qbt_mkdtemp("side-same"), *src = qbt_path(dir, "src.gguf");
    char *cfg = qbt_path(dir, "quantbridge.conf"), *out[N_WRITERS], *text[N_WRITERS];
    char cmd[8192], conf[4096];
    size_t len[N_WRITERS];
    int w, k;

    ck_assert(bd && fd);
    snprintf(cmd, sizeof cmd, "'%s/tests/bin/qb-gen-gguf-tok' '%s/tests/data/tokenizers/llama3' "
             "llama-bpe '%s'", bd, getenv("QB_TEST_SOURCE_DIR"), src);
    ck_assert_int_eq(qbt_run_cmd(cmd, NULL), 0);
    snprintf(conf, sizeof conf, "[plugin:fake-caps]\nlibrary=%s/libqb_fake_caps.so\npriority=50\n",
             fd);
    qbt_write_file(cfg, conf);
    for (w = 0; w < N_WRITERS; w++) {
        qbt_result r;
        char name[64];
        const char *argv[] = {"convert", "--config", cfg, "--source", src, "--output", NULL,
                              "--writer", writers[w], NULL};
        snprintf(name, sizeof name, "out-%s", writers[w]);
        out[w] = qbt_path(dir, name);
        argv[6] = out[w];
        qbt_run(&r, argv);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", writers[w], r.status, r.err);
        qbt_result_free(&r);
    }
    for (k = 0; k < N_SIDE; k++) {
        for (w = 0; w < N_WRITERS; w++) {
            char *p = qbt_path(out[w], side[k]);
            text[w] = qbt_read_file(p, &len[w]);
            ck_assert_msg(text[w] != NULL, "%s wrote no %s", writers[w], side[k]);
            free(p);
        }
        for (w = 1; w < N_WRITERS; w++) {
            ck_assert_msg(len[w] == len[0] && memcmp(text[w], text[0], len[0]) == 0,
                          "%s differs between %s and %s", side[k], writers[0], writers[w]);
            free(text[w]);
        }
        free(text[0]);
    }
    /* Ground truth: the original tokenizer files. */
    {
        char *p = qbt_path(out[0], "tokenizer_config.json"), *t = qbt_read_file(p, NULL);
        char *o = data_file("tokenizer_config.json");
        cJSON *got = cJSON_Parse(t), *want = cJSON_Parse(o);
        const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(want, "chat_template");
        ck_assert(cJSON_IsString(tmpl));
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(got, "chat_template")->valuestring,
                         tmpl->valuestring);
        cJSON_Delete(got);
        cJSON_Delete(want);
        free(o);
        free(t);
        free(p);
    }
    /* The manifest records each side file as written (the recording sink
     * in front of the kit in sm86-w4a16's config_out.c). */
    {
        char *p = qbt_path(out[1], "manifest.json"), *t = qbt_read_file(p, NULL);
        cJSON *m = cJSON_Parse(t);
        const cJSON *files = cJSON_GetObjectItemCaseSensitive(m, "files"), *e;
        ck_assert(cJSON_IsArray(files));
        for (k = 0; k < N_SIDE; k++) {
            char *fp = qbt_path(out[1], side[k]), hex[65], *body;
            size_t n = 0;
            int found = 0;
            body = qbt_read_file(fp, &n);
            sha256_of(fp, hex);
            cJSON_ArrayForEach(e, files)
            {
                if (strcmp(cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring, side[k]) != 0)
                    continue;
                found++;
                ck_assert_int_eq((long long)cJSON_GetObjectItemCaseSensitive(e, "bytes")->valuedouble,
                                 (long long)n);
                ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "sha256")->valuestring, hex);
            }
            ck_assert_msg(found == 1, "manifest lists %s %d times", side[k], found);
            free(body);
            free(fp);
        }
        cJSON_Delete(m);
        free(t);
        free(p);
    }
    for (w = 0; w < N_WRITERS; w++)
        free(out[w]);
    qbt_rmtree(dir);
    free(dir);
    free(src);
    free(cfg);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("side-files-same");
    TCase *tc = tcase_create("side-files-same");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, same_side_files_for_every_writer);
    suite_add_tcase(s, tc);
    return s;
}
