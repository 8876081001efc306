/* tokenize_*.c: the host's tokenizer encoder against the ids the Hugging
 * Face `tokenizers` library gives for tests/data/tokenizers/corpus.txt
 * (golden-ids.txt, written by gen_golden.py from the publishers'
 * tokenizer.json), every record and the whole file; a hand-worked BPE;
 * and the components it must refuse by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "qbh.h"
#include "qbt_check_main.h"
#include "qbt_host.h"
#include "tokenizer.h"

static char *data_path(const char *name, const char *file)
{
    const char *root = getenv("QB_TEST_SOURCE_DIR");
    ck_assert_ptr_nonnull(root);
    return g_build_filename(root, "tests", "data", "tokenizers", name, file, NULL);
}

/* tokenizer.json of vocabulary `name`, decompressed by xz(1). */
static qbh_tok *load_vocab(const char *name)
{
    char *xz = data_path(name, "tokenizer.json.xz"), *out = NULL, *what;
    char *argv[] = {"xz", "-dc", xz, NULL};
    gsize len;
    int status = -1;
    qbh_tok *t = NULL;
    ck_assert(g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                           NULL, &out, NULL, &status, NULL));
    ck_assert_int_eq(status, 0);
    len = strlen(out);
    what = g_strdup_printf("%s/tokenizer.json", name);
    ck_assert_msg(qbh_tok_load_json(qbt_host(), what, out, len, &t) == QB_OK, "%s", qbh_error_message());
    g_free(what);
    g_free(out);
    g_free(xz);
    return t;
}

/* The records of corpus.txt (split on a line holding a lone form feed,
 * tests/data/tokenizers/README.md) and then the whole file. */
static GPtrArray *corpus(void)
{
    char *p = data_path(".", "corpus.txt"), *text = NULL, **recs, **r;
    GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
    ck_assert(g_file_get_contents(p, &text, NULL, NULL));
    recs = g_strsplit(text, "\n\f\n", -1);
    for (r = recs; *r; r++)
        g_ptr_array_add(a, g_strdup(*r));
    g_ptr_array_add(a, text);
    g_strfreev(recs);
    g_free(p);
    return a;
}

static void check_golden(const char *name)
{
    qbh_tok *t = load_vocab(name);
    GPtrArray *recs = corpus();
    char *gp = data_path(name, "golden-ids.txt"), *golden = NULL, **lines;
    size_t ok = 0, n_ids = 0;
    guint i;

    ck_assert(g_file_get_contents(gp, &golden, NULL, NULL));
    lines = g_strsplit(golden, "\n", -1);
    ck_assert_uint_ge(g_strv_length(lines), recs->len);
    for (i = 0; i < recs->len; i++) {
        const char *rec = recs->pdata[i];
        int64_t *ids = NULL;
        size_t n = 0, k;
        GString *got = g_string_new(NULL);
        ck_assert_msg(qbh_tok_encode(t, rec, strlen(rec), 1, &ids, &n) == QB_OK, "%s",
                      qbh_error_message());
        for (k = 0; k < n; k++)
            g_string_append_printf(got, "%s%lld", k ? "," : "", (long long)ids[k]);
        if (!strcmp(got->str, lines[i]))
            ok++;
        else
            fprintf(stderr, "%s record %u differs:\n  text:   %.60s\n  ours:   %.300s\n  golden: %.300s\n",
                    name, i + 1, rec, got->str, lines[i]);
        n_ids += n;
        g_string_free(got, TRUE);
        qbh_free(ids);
    }
    fprintf(stderr, "%s: %zu of %u records equal the tokenizers library's ids (%zu ids)\n", name,
            ok, recs->len, n_ids);
    ck_assert_uint_eq(ok, recs->len);
    g_strfreev(lines);
    g_free(golden);
    g_free(gp);
    g_ptr_array_free(recs, TRUE);
    qbh_tok_free(t);
}

START_TEST(golden_llama2) { check_golden("llama2"); }
END_TEST
START_TEST(golden_llama3) { check_golden("llama3"); }
END_TEST
START_TEST(golden_qwen3) { check_golden("qwen3"); }
END_TEST

static const char *encode_str(const char *json, const char *text)
{
    static char buf[256];
    qbh_tok *t = NULL;
    int64_t *ids = NULL;
    size_t n = 0, k, at = 0;
    ck_assert_msg(qbh_tok_load_json(qbt_host(), "t.json", json, strlen(json), &t) == QB_OK, "%s",
                  qbh_error_message());
    ck_assert_msg(qbh_tok_encode(t, text, strlen(text), 1, &ids, &n) == QB_OK, "%s",
                  qbh_error_message());
    buf[0] = 0;
    for (k = 0; k < n; k++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%lld", k ? "," : "", (long long)ids[k]);
    qbh_free(ids);
    qbh_tok_free(t);
    return buf;
}

/* Worked by hand: "abab" with merges (a b) rank 0, (ab ab) rank 1 ->
 * ab ab -> abab; "aab": (a b) first at the second a -> a, ab; "c" is not
 * in the vocabulary -> <0x63> by byte fallback; "é" has no byte tokens ->
 * unk, two of them fused. */
START_TEST(hand_worked_bpe)
{
    static const char *json =
        "{\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, \"fuse_unk\": true,"
        " \"unk_token\": \"<unk>\", \"vocab\": {\"<unk>\": 0, \"a\": 1, \"b\": 2, \"ab\": 3,"
        " \"abab\": 4, \"<0x63>\": 5, \"<s>\": 6, \"\\u2581\": 7},"
        " \"merges\": [\"a b\", \"ab ab\"]},"
        " \"added_tokens\": [{\"id\": 6, \"content\": \"<s>\", \"special\": true}],"
        " \"normalizer\": null,"
        " \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\\u2581\","
        "   \"prepend_scheme\": \"first\", \"split\": true},"
        " \"post_processor\": {\"type\": \"TemplateProcessing\","
        "   \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}}, {\"Sequence\": {\"id\": \"A\"}}],"
        "   \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [6], \"tokens\": [\"<s>\"]}}}}";
    /* "abab aab c": prepended (first) -> ▁abab ▁aab ▁c; "▁" is its own
     * token, then the word. After <s> (not at offset 0) nothing is
     * prepended. */
    ck_assert_str_eq(encode_str(json, "abab aab c"), "6,7,4,7,1,3,7,5");
    ck_assert_str_eq(encode_str(json, "<s>ab\xc3\xa9\xc3\xa9"), "6,6,3,0");
}
END_TEST

/* Added tokens, worked by hand (tokenizers' AddedVocabulary): raw-text
 * ones matched leftmost, then longest there ("abce": "ab" at 0, though
 * "bc" is as long -- llama.cpp's longest-first partition may pick "bc");
 * a normalized one matched by its normalized pattern ("xy" under
 * Replace(x -> y) is "yy", as refresh_added_tokens builds it). Vocabulary:
 * a 0, b 1, c 2, d 3, y 4, e 5; added ab 6, abcd 7, bc 8, cd 9, and the
 * normalized xy 10 (tokenizers 0.23 gives these ids too). */
START_TEST(added_tokens_leftmost_longest)
{
    static const char *json =
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"d\": 3, \"y\": 4,"
        " \"e\": 5}, \"merges\": []},"
        " \"added_tokens\": [{\"id\": 6, \"content\": \"ab\", \"normalized\": false},"
        "  {\"id\": 7, \"content\": \"abcd\", \"normalized\": false},"
        "  {\"id\": 8, \"content\": \"bc\", \"normalized\": false},"
        "  {\"id\": 9, \"content\": \"cd\", \"normalized\": false},"
        "  {\"id\": 10, \"content\": \"xy\", \"normalized\": true}],"
        " \"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \"x\"}, \"content\": \"y\"}}";
    ck_assert_str_eq(encode_str(json, "abce"), "6,2,5");
    ck_assert_str_eq(encode_str(json, "abcd"), "7");
    ck_assert_str_eq(encode_str(json, "xbcd"), "4,8,3");
    ck_assert_str_eq(encode_str(json, "eabcdcd"), "5,7,9");
    ck_assert_str_eq(encode_str(json, "xxa"), "10,0");
    ck_assert_str_eq(encode_str(json, "xya"), "10,0");
}
END_TEST

/* One long word (no pre-tokenizer, as SentencePiece vocabularies are
 * rebuilt) merges as tokenizers' queue does, whatever its length: 3000
 * "ab" pairs become 1500 "abab" (merges (a b) rank 0, (ab ab) rank 1,
 * leftmost first), and an odd tail stays "ab". */
START_TEST(long_word_merges)
{
    static const char *json =
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2, \"abab\": 3},"
        " \"merges\": [\"a b\", \"ab ab\"]}}";
    char *text = g_strnfill(6002, 'a');
    qbh_tok *t = NULL;
    int64_t *ids = NULL;
    size_t n = 0, k;
    for (k = 1; k < 6002; k += 2)
        text[k] = 'b';
    ck_assert_int_eq(qbh_tok_load_json(qbt_host(), "t.json", json, strlen(json), &t), QB_OK);
    ck_assert_int_eq(qbh_tok_encode(t, text, strlen(text), 1, &ids, &n), QB_OK);
    ck_assert_uint_eq(n, 1501);
    for (k = 0; k < 1500; k++)
        ck_assert_int_eq(ids[k], 3);
    ck_assert_int_eq(ids[1500], 2);
    qbh_free(ids);
    qbh_tok_free(t);
    g_free(text);
}
END_TEST

static void refused(const char *json, const char *needle)
{
    qbh_tok *t = NULL;
    ck_assert_int_eq(qbh_tok_load_json(qbt_host(), "t.json", json, strlen(json), &t), QB_E_UNSUPPORTED);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(qbh_error_message(), needle) && strstr(qbh_error_message(), "t.json"),
                  "%s", qbh_error_message());
}

START_TEST(unsupported_refused_by_name)
{
#define BPE "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}"
    refused("{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", "Unigram");
    refused("{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}", "WordPiece");
    refused("{" BPE ", \"normalizer\": {\"type\": \"Lowercase\"}}", "Lowercase");
    refused("{" BPE ", \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": "
            "[{\"type\": \"NFC\"}, {\"type\": \"Precompiled\"}]}}", "Precompiled");
    refused("{" BPE ", \"pre_tokenizer\": {\"type\": \"Whitespace\"}}", "Whitespace");
    refused("{" BPE ", \"post_processor\": {\"type\": \"RobertaProcessing\"}}", "RobertaProcessing");
    refused("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [],"
            " \"continuing_subword_prefix\": \"##\"}}", "continuing_subword_prefix");
#undef BPE
}
END_TEST

/* A character with neither a token nor byte tokens nor unk: tokenizers
 * drops it; we refuse, naming it. */
START_TEST(no_unk_refused)
{
    static const char *json = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}";
    qbh_tok *t = NULL;
    int64_t *ids = NULL;
    size_t n = 0;
    ck_assert_int_eq(qbh_tok_load_json(qbt_host(), "t.json", json, strlen(json), &t), QB_OK);
    ck_assert_int_eq(qbh_tok_encode(t, "ab", 2, 1, &ids, &n), QB_E_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(qbh_error_message(), "\"b\""));
    ck_assert_int_eq(qbh_tok_encode(t, "a\xff", 2, 1, &ids, &n), QB_E_INVALID);
    qbh_tok_free(t);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("tokenize");
    TCase *tc = tcase_create("tokenize");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, golden_llama2);
    tcase_add_test(tc, golden_llama3);
    tcase_add_test(tc, golden_qwen3);
    tcase_add_test(tc, hand_worked_bpe);
    tcase_add_test(tc, added_tokens_leftmost_longest);
    tcase_add_test(tc, long_word_merges);
    tcase_add_test(tc, unsupported_refused_by_name);
    tcase_add_test(tc, no_unk_refused);
    suite_add_tcase(s, tc);
    return s;
}
