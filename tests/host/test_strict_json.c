/*
 * One strict JSON reading for every input file (docs/architecture.md,
 * "Reading input JSON"): a config.json or a tokenizer.json holding a
 * duplicate key, or a number beyond a double (1e400), is refused by
 * `forward`, `verify` and `inspect` (exit 1) with an error line naming
 * the file and saying why, never read leniently. The same model without
 * the flaw runs, so the flaw is what each command refuses.
 */
#define _GNU_SOURCE
#include <check.h>

#include "qbt_check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_hf_dense.h"
#include "gen_tokenizer.h"
#include "qbt_fs.h"
#include "qbt_run.h"

static char *tmp, *good;

static void setup(void)
{
    qbt_hfd_spec s = {.arch = "llama", .dtype = "bf16", .layers = 1, .hidden = 64,
                      .intermediate = 96, .vocab = QBT_TOK_VOCAB, .tied = 1, .shards = 1,
                      .seed = 5};
    tmp = qbt_tmpdir("strict-json");
    good = qbt_path(tmp, "good");
    ck_assert_int_eq(qbt_hfd_spec_check(&s), 0);
    ck_assert_int_eq(qbt_hfd_write(&s, good), 0);
    ck_assert_int_eq(qbt_tok_write_bytelevel(good), 0);
}

static void teardown(void)
{
    qbt_rmtree(tmp);
    free(good);
    free(tmp);
}

/* A copy of the good model named `name` whose file `file` gains `member`
 * (",\"k\": v" form, put right after the opening brace). */
static char *flawed(const char *name, const char *file, const char *member)
{
    char *dir = qbt_path(tmp, name), *path = qbt_path(dir, file), *text, *out;
    size_t len;
    qbt_copy_dir(good, dir);
    text = qbt_read_file(path, &len);
    ck_assert_msg(text && text[0] == '{', "%s: not an object", path);
    ck_assert(asprintf(&out, "{%s,%s", member, text + 1) > 0);
    qbt_write_file(path, out);
    free(out);
    free(text);
    free(path);
    return dir;
}

/* The last "quantbridge: error:" line of text names `file` and says the
 * strict parser refused it (`why`). */
static void refused(const char *cmd, const char *text, const char *file, const char *why)
{
    const char *e = NULL, *p = text;
    char line[4096];
    while ((p = strstr(p, "quantbridge: error:"))) {
        e = p;
        p++;
    }
    ck_assert_msg(e != NULL, "%s: no error line:\n%s", cmd, text);
    snprintf(line, sizeof line, "%.*s", (int)strcspn(e, "\n"), e);
    ck_assert_msg(strstr(line, file) && strstr(line, "invalid JSON") && strstr(line, why),
                  "%s: the error does not name %s (%s):\n%s", cmd, file, why, line);
}

/* forward, verify and inspect on model m: each exits 1 naming the file. */
static void all_refuse(const char *m, const char *file, const char *why)
{
    char args[8192], *text = NULL;
    int rc;
    snprintf(args, sizeof args, "forward --model '%s' --text 'the theme' --output '%s/o.st'", m,
             tmp);
    rc = qbt_run_line(args, &text);
    ck_assert_msg(rc == 1, "forward: exit %d\n%s", rc, text);
    refused("forward", text, file, why);
    free(text);
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s'", m, good);
    rc = qbt_run_line(args, &text);
    ck_assert_msg(rc == 1, "verify: exit %d\n%s", rc, text);
    refused("verify", text, file, why);
    free(text);
    snprintf(args, sizeof args, "inspect '%s'", m);
    rc = qbt_run_line(args, &text);
    ck_assert_msg(rc == 1, "inspect: exit %d\n%s", rc, text);
    refused("inspect", text, file, why);
    free(text);
}

START_TEST(good_model_runs)
{
    char args[8192], *text = NULL;
    int rc;
    snprintf(args, sizeof args, "forward --model '%s' --text 'the theme' --output '%s/o.st'",
             good, tmp);
    rc = qbt_run_line(args, &text);
    ck_assert_msg(rc == 0, "forward: exit %d\n%s", rc, text);
    free(text);
    snprintf(args, sizeof args, "verify --source '%s' --converted '%s'", good, good);
    rc = qbt_run_line(args, &text);
    ck_assert_msg(rc == 0, "verify: exit %d\n%s", rc, text);
    ck_assert_msg(strstr(text, "model check (") && strstr(text, "from text"), "%s", text);
    free(text);
    snprintf(args, sizeof args, "inspect '%s'", good);
    rc = qbt_run_line(args, &text);
    ck_assert_msg(rc == 0, "inspect: exit %d\n%s", rc, text);
    free(text);
}
END_TEST

START_TEST(config_duplicate_key)
{
    char *m = flawed("cfg-dup", "config.json", "\"qb_dup\": 1, \"qb_dup\": 2");
    all_refuse(m, "config.json", "duplicate key \"qb_dup\"");
    free(m);
}
END_TEST

START_TEST(config_number_beyond_double)
{
    char *m = flawed("cfg-big", "config.json", "\"qb_big\": 1e400");
    all_refuse(m, "config.json", "out of the range of a double");
    free(m);
}
END_TEST

START_TEST(tokenizer_duplicate_key)
{
    char *m = flawed("tok-dup", "tokenizer.json", "\"qb_dup\": 1, \"qb_dup\": 2");
    all_refuse(m, "tokenizer.json", "duplicate key \"qb_dup\"");
    free(m);
}
END_TEST

START_TEST(tokenizer_number_beyond_double)
{
    char *m = flawed("tok-big", "tokenizer.json", "\"qb_big\": 1e400");
    all_refuse(m, "tokenizer.json", "out of the range of a double");
    free(m);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("strict_json");
    TCase *tc = tcase_create("strict_json");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, good_model_runs);
    tcase_add_test(tc, config_duplicate_key);
    tcase_add_test(tc, config_number_beyond_double);
    tcase_add_test(tc, tokenizer_duplicate_key);
    tcase_add_test(tc, tokenizer_number_beyond_double);
    suite_add_tcase(s, tc);
    return s;
}
