/*
 * Tokenizer rebuilt from tokenizer.ggml.* (docs/formats/gguf.md
 * "Tokenizer"): the real llama2 (SentencePiece), llama3 and qwen3
 * (byte-level BPE) vocabularies of tests/data/tokenizers are turned into
 * GGUF metadata the way llama.cpp's converter does (gen_gguf_tok.h), put
 * on a tiny model, opened with the reader, and the tokenizer.json it
 * rebuilds is compared with the original structurally. Plus the refusals,
 * a Gemma-shaped SentencePiece vocabulary (tests/data/tokenizers/gemma-mini:
 * user-defined runs of spaces, tabs and newlines, byte and control tokens,
 * add_space_prefix false), the notes on what a GGUF does not store, and the
 * ABI 1.3 tokenizer state.
 */
#include "gen_gguf.h"
#include "gen_gguf_tok.h"
#include "gguf_reader.h"
#include "qbt_fs.h"
#include "qbt_host.h"
#include "qbt_host_log.h"

#include <check.h>

#include "qbt_check_main.h"

#include <cjson/cJSON.h>
#include <quantbridge/qb_reader.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long max_id_plus_one(const cJSON *tj)
{
    const cJSON *e;
    long n = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tj, "model"), "vocab"))
        if ((long)e->valuedouble + 1 > n) n = (long)e->valuedouble + 1;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(tj, "added_tokens"))
    {
        long id = (long)cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble;
        if (id + 1 > n)
            n = id + 1;
    }
    return n;
}

/* A tiny llama whose metadata carries `add` (a callback adding tokenizer
 * keys) saved under dir; returns the path (malloc'd). */
static char *tiny_gguf(const char *dir, int n_vocab, qbt_gguf **gout)
{
    qbt_gguf_spec s;
    qbt_hf_model ref;
    qbt_gguf *g = NULL;
    memset(&s, 0, sizeof(s));
    s.arch = "llama";
    s.n_layer = 1;
    s.n_embd = 32;
    s.n_ff = 64;
    s.n_head = 2;
    s.n_head_kv = 2;
    s.n_vocab = n_vocab;
    s.tied = 1;
    s.wtype = 1;
    s.no_tokenizer = 1;
    s.seed = 7;
    ck_assert_int_eq(qbt_gguf_build_model(&s, &g, &ref), 0);
    qbt_hf_model_free(&ref);
    *gout = g;
    return qbt_path(dir, "m.gguf");
}

static const char *merge_str(const cJSON *m, char *buf, size_t n)
{
    if (cJSON_IsString(m))
        return m->valuestring;
    ck_assert(cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2);
    snprintf(buf, n, "%s %s", cJSON_GetArrayItem(m, 0)->valuestring, cJSON_GetArrayItem(m, 1)->valuestring);
    return buf;
}

/* Text of every id: model.vocab plus added_tokens (array of n, not owned). */
static const char **texts_by_id(const cJSON *tj, long n)
{
    const char **t = calloc((size_t)n, sizeof(*t));
    const cJSON *e;
    ck_assert_ptr_nonnull(t);
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tj, "model"), "vocab"))
    {
        ck_assert((long)e->valuedouble < n);
        t[(long)e->valuedouble] = e->string;
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(tj, "added_tokens"))
    {
        long id = (long)cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble;
        ck_assert(id < n);
        t[id] = cJSON_GetObjectItemCaseSensitive(e, "content")->valuestring;
    }
    return t;
}

static void expect_same(const cJSON *a, const cJSON *b, const char *what, const char *name)
{
    char *x = cJSON_PrintUnformatted(a), *y = cJSON_PrintUnformatted(b);
    ck_assert_msg(cJSON_Compare(a, b, 1), "%s: %s differs:\n original %s\n rebuilt  %s", name, what, x, y);
    cJSON_free(x);
    cJSON_free(y);
}

static int looks_special(const char *s)
{
    size_t n = strlen(s);
    return n >= 4 && !strncmp(s, "<|", 2) && !strcmp(s + n - 2, "|>");
}

static void roundtrip(const char *name, const char *pre)
{
    char *jpath = qbt_path(QB_TOKENIZER_DATA, name), *tjp = qbt_path(jpath, "tokenizer.json.xz"),
         *cjp = qbt_path(jpath, "tokenizer_config.json");
    char *orig_text = qbt_read_maybe_xz(tjp), *cfg_text = qbt_read_file(cjp, NULL), *path, *rb_text, *rbp, *tdir;
    const char *dir = qbt_scratch("gguf-tok");
    cJSON *orig, *rb, *om, *rm, *a, *b, *e;
    qbt_gguf *g;
    gguf_reader *r = NULL;
    qb_model_info info;
    long n;
    int i, n_added = 0;
    char b1[1024], b2[1024];
    ck_assert_msg(orig_text && cfg_text, "%s: test data missing", jpath);
    orig = cJSON_Parse(orig_text);
    ck_assert_ptr_nonnull(orig);
    n = max_id_plus_one(orig);
    path = tiny_gguf(dir, (int)n, &g);
    ck_assert_int_eq(qbt_gguf_add_hf_tokenizer(g, orig_text, cfg_text, pre), n);
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
    ck_assert_msg(gguf_reader_open(qbt_host(), path, &r) == QB_OK, "%s: %s", name, qbt_host_last_error());
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    ck_assert_int_eq(gguf_reader_vtable()->get_model_info(r, &info), QB_OK);
    ck_assert_ptr_nonnull(info.tokenizer_dir);
    tdir = strdup(info.tokenizer_dir);
    rbp = qbt_path(info.tokenizer_dir, "tokenizer.json");
    rb_text = qbt_read_file(rbp, NULL);
    ck_assert_ptr_nonnull(rb_text);
    rb = cJSON_Parse(rb_text);
    ck_assert_ptr_nonnull(rb);

    /* every id has the same text (n ids each: no duplicates either side
     * since the vocabulary sizes below match) */
    {
        const char **x = texts_by_id(orig, n), **y = texts_by_id(rb, n);
        long k;
        for (k = 0; k < n; k++)
            ck_assert_msg(x[k] && y[k] && !strcmp(x[k], y[k]), "%s: id %ld: original \"%s\", rebuilt \"%s\"", name, k,
                          x[k] ? x[k] : "(none)", y[k] ? y[k] : "(none)");
        free(x);
        free(y);
    }
    om = cJSON_GetObjectItemCaseSensitive(orig, "model");
    rm = cJSON_GetObjectItemCaseSensitive(rb, "model");
    /* the model vocabulary itself (added tokens outside it, as originally) */
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(om, "vocab")),
                     cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rm, "vocab")));
    /* merges: same pairs in the same order */
    a = cJSON_GetObjectItemCaseSensitive(om, "merges");
    b = cJSON_GetObjectItemCaseSensitive(rm, "merges");
    ck_assert_int_eq(cJSON_GetArraySize(a), cJSON_GetArraySize(b));
    for (i = 0, e = a->child, b = b->child; e && b; i++, e = e->next, b = b->next)
        ck_assert_msg(!strcmp(merge_str(e, b1, sizeof(b1)), merge_str(b, b2, sizeof(b2))),
                      "%s: merge %d: original \"%s\", rebuilt \"%s\"", name, i, b1, b2);
    /* model flags */
    {
        static const char *flags[] = {"type", "unk_token", "fuse_unk", "byte_fallback"};
        for (i = 0; i < 4; i++)
            expect_same(cJSON_GetObjectItemCaseSensitive(om, flags[i]), cJSON_GetObjectItemCaseSensitive(rm, flags[i]),
                        flags[i], name);
        ck_assert_int_eq(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(om, "ignore_merges")),
                         cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rm, "ignore_merges")));
    }
    /* added tokens: same ids and texts; special as the converter's token
     * type says (special, or looking special: documented difference) */
    a = cJSON_GetObjectItemCaseSensitive(orig, "added_tokens");
    b = cJSON_GetObjectItemCaseSensitive(rb, "added_tokens");
    ck_assert_int_eq(cJSON_GetArraySize(a), cJSON_GetArraySize(b));
    for (e = a->child, b = b->child; e && b; e = e->next, b = b->next, n_added++) {
        static const char *keys[] = {"id", "content", "single_word", "lstrip", "rstrip", "normalized"};
        const char *c = cJSON_GetObjectItemCaseSensitive(e, "content")->valuestring;
        for (i = 0; i < 6; i++)
            expect_same(cJSON_GetObjectItemCaseSensitive(e, keys[i]), cJSON_GetObjectItemCaseSensitive(b, keys[i]),
                        keys[i], c);
        ck_assert_int_eq(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "special")),
                         cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "special")) || looks_special(c));
    }
    /* normalizer, pre-tokenizer, decoder, post-processor as the original */
    expect_same(cJSON_GetObjectItemCaseSensitive(orig, "normalizer"), cJSON_GetObjectItemCaseSensitive(rb, "normalizer"),
                "normalizer", name);
    expect_same(cJSON_GetObjectItemCaseSensitive(orig, "pre_tokenizer"),
                cJSON_GetObjectItemCaseSensitive(rb, "pre_tokenizer"), "pre_tokenizer", name);
    expect_same(cJSON_GetObjectItemCaseSensitive(orig, "decoder"), cJSON_GetObjectItemCaseSensitive(rb, "decoder"),
                "decoder", name);
    expect_same(cJSON_GetObjectItemCaseSensitive(orig, "post_processor"),
                cJSON_GetObjectItemCaseSensitive(rb, "post_processor"), "post_processor", name);
    /* tokenizer_config.json next to it */
    {
        char *cp = qbt_path(info.tokenizer_dir, "tokenizer_config.json"), *ct = qbt_read_file(cp, NULL);
        cJSON *oc = cJSON_Parse(cfg_text), *rc = ct ? cJSON_Parse(ct) : NULL;
        static const char *keys[] = {"bos_token", "eos_token", "unk_token", "pad_token", "chat_template"};
        ck_assert_ptr_nonnull(rc);
        for (i = 0; i < 5; i++) {
            cJSON *x = cJSON_GetObjectItemCaseSensitive(oc, keys[i]), *y = cJSON_GetObjectItemCaseSensitive(rc, keys[i]);
            if (x && !cJSON_IsNull(x))
                expect_same(x, y, keys[i], name);
        }
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(rc, "model_max_length")));
        cJSON_Delete(oc);
        cJSON_Delete(rc);
        free(cp);
        free(ct);
    }
    gguf_reader_close(r);
    ck_assert_msg(!qbt_exists(tdir), "%s: temporary tokenizer directory left behind", tdir);
    cJSON_Delete(orig);
    cJSON_Delete(rb);
    free(tdir);
    free(rbp);
    free(rb_text);
    free(path);
    free(orig_text);
    free(cfg_text);
    free(jpath);
    free(tjp);
    free(cjp);
}

START_TEST(test_llama2_sentencepiece)
{
    roundtrip("llama2", NULL);
}
END_TEST

START_TEST(test_llama3_bpe)
{
    roundtrip("llama3", "llama-bpe");
}
END_TEST

START_TEST(test_qwen3_bpe)
{
    roundtrip("qwen3", "qwen2");
}
END_TEST

/* A GGUF with tokenizer.ggml.model `model`, pre `pre` (NULL: none). */
static char *odd_tokenizer(const char *model, const char *pre)
{
    const char *dir = qbt_scratch("gguf-tok-bad");
    static const char *toks[] = {"a", "b", "ab", "<s>"};
    static const char *merges[] = {"a b"};
    qbt_gguf *g;
    char *path = tiny_gguf(dir, 4, &g);
    ck_assert_int_eq(qbt_gguf_kv_str(g, "tokenizer.ggml.model", model), 0);
    if (pre)
        ck_assert_int_eq(qbt_gguf_kv_str(g, "tokenizer.ggml.pre", pre), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_str(g, "tokenizer.ggml.tokens", 4, toks), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_str(g, "tokenizer.ggml.merges", 1, merges), 0);
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
    return path;
}

static void expect_refused(const char *model, const char *pre, const char *needle)
{
    char *path = odd_tokenizer(model, pre);
    gguf_reader *r = NULL;
    qb_model_info info;
    ck_assert_int_eq(gguf_reader_open(qbt_host(), path, &r), QB_E_UNSUPPORTED);
    ck_assert_msg(strstr(qbt_host_last_error(), needle) && strstr(qbt_host_last_error(), "tokenizer=skip"),
                  "message: %s", qbt_host_last_error());
    /* tokenizer=skip converts without one */
    ck_assert_int_eq(gguf_reader_open_opts(qbt_host(), path, GGUF_OPEN_SKIP_TOKENIZER, &r), QB_OK);
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    ck_assert_int_eq(gguf_reader_vtable()->get_model_info(r, &info), QB_OK);
    ck_assert_ptr_null(info.tokenizer_dir);
    ck_assert_ptr_nonnull(strstr(info.source_summary, "tokenizer: skipped"));
    gguf_reader_close(r);
    free(path);
}

START_TEST(test_unknown_pre_refused)
{
    /* dbrx: a llama.cpp pre type with no exact HF Split form here;
     * gpt2: no llama.cpp pre type at all (llama.cpp's name is gpt-2). */
    expect_refused("gpt2", "dbrx", "\"dbrx\"");
    expect_refused("gpt2", "gpt2", "\"gpt2\"");
}
END_TEST

static void add_sep(qbt_gguf *g)
{
    ck_assert_int_eq(qbt_gguf_kv_bool(g, "tokenizer.ggml.add_sep_token", 1), 0);
}

/* add_sep_token (llama.cpp appends SEP) has no rebuilt post-processor. */
START_TEST(test_add_sep_refused)
{
    const char *dir = qbt_scratch("gguf-tok-sep");
    static const char *toks[] = {"a", "b", "ab", "<s>"};
    static const char *merges[] = {"a b"};
    qbt_gguf *g;
    gguf_reader *r = NULL;
    char *path = tiny_gguf(dir, 4, &g);
    ck_assert_int_eq(qbt_gguf_kv_str(g, "tokenizer.ggml.model", "gpt2"), 0);
    ck_assert_int_eq(qbt_gguf_kv_str(g, "tokenizer.ggml.pre", "gpt-2"), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_str(g, "tokenizer.ggml.tokens", 4, toks), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_str(g, "tokenizer.ggml.merges", 1, merges), 0);
    add_sep(g);
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
    ck_assert_int_eq(gguf_reader_open(qbt_host(), path, &r), QB_E_UNSUPPORTED);
    ck_assert_msg(strstr(qbt_host_last_error(), "tokenizer.ggml.add_sep_token"), "%s", qbt_host_last_error());
    free(path);
}
END_TEST

START_TEST(test_missing_pre_refused)
{
    expect_refused("gpt2", NULL, "without tokenizer.ggml.pre");
}
END_TEST

START_TEST(test_other_models_refused)
{
    expect_refused("t5", NULL, "\"t5\"");
    expect_refused("bert", NULL, "\"bert\"");
    expect_refused("rwkv", NULL, "\"rwkv\"");
}
END_TEST

/* A gemma4 vocabulary: "a", "b", runs of 1-3 newlines, "<bos>" (control),
 * "\u2581a", with merges `merges`; add_bos_token stated false. */
static char *gemma4_gguf(const char *const *merges, size_t n_merges)
{
    const char *dir = qbt_scratch("gguf-tok-gemma4");
    static const char *toks[] = {"a", "b", "\n", "\n\n", "\n\n\n", "<bos>", "\xe2\x96\x81" "a"};
    static const int32_t types[] = {1, 1, 1, 1, 1, 3, 1};
    qbt_gguf *g;
    char *path = tiny_gguf(dir, 7, &g);
    ck_assert_int_eq(qbt_gguf_kv_str(g, "tokenizer.ggml.model", "gemma4"), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_str(g, "tokenizer.ggml.tokens", 7, toks), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_i32(g, "tokenizer.ggml.token_type", 7, types), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_str(g, "tokenizer.ggml.merges", n_merges, merges), 0);
    ck_assert_int_eq(qbt_gguf_kv_u32(g, "tokenizer.ggml.bos_token_id", 5), 0);
    ck_assert_int_eq(qbt_gguf_kv_bool(g, "tokenizer.ggml.add_bos_token", 0), 0);
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
    return path;
}

/* gemma4 (docs/formats/gguf.md "Tokenizer"): spaces to U+2581 without a
 * prefix, newline runs split off, the stored merges, byte fallback, BOS
 * always (llama.cpp overrides a false add_bos_token for gemma4); and a
 * newline-run token its merges do not make whole is refused by name
 * (llama.cpp takes it whole, a tokenizer.json BPE could not). */
START_TEST(test_gemma4_rebuilt)
{
    static const char *good[] = {"\xe2\x96\x81 a", "\n \n", "\n\n \n"};
    static const char *bad[] = {"\xe2\x96\x81 a", "\n \n"};
    char *path = gemma4_gguf(good, 3), *fp, *text;
    gguf_reader *r = NULL;
    qb_model_info info;
    const cJSON *m, *o;
    cJSON *j;
    ck_assert_msg(gguf_reader_open(qbt_host(), path, &r) == QB_OK, "%s", qbt_host_last_error());
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    ck_assert_int_eq(gguf_reader_vtable()->get_model_info(r, &info), QB_OK);
    fp = qbt_path(info.tokenizer_dir, "tokenizer.json");
    text = qbt_read_file(fp, NULL);
    ck_assert_ptr_nonnull(text);
    j = cJSON_Parse(text);
    ck_assert_ptr_nonnull(j);
    o = cJSON_GetObjectItemCaseSensitive(j, "normalizer");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "type")->valuestring, "Replace");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "content")->valuestring, "\xe2\x96\x81");
    o = cJSON_GetObjectItemCaseSensitive(j, "pre_tokenizer");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "type")->valuestring, "Split");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "pattern"), "Regex")->valuestring,
                     "[^\\n]+|[\\n]+");
    m = cJSON_GetObjectItemCaseSensitive(j, "model");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "byte_fallback")));
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(m, "ignore_merges")));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "merges")), 3);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "vocab")), 7);
    o = cJSON_GetObjectItemCaseSensitive(j, "post_processor");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "type")->valuestring, "TemplateProcessing");
    ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "special_tokens"), "<bos>"));
    cJSON_Delete(j);
    free(text);
    free(fp);
    gguf_reader_close(r);
    free(path);

    path = gemma4_gguf(bad, 2);
    ck_assert_int_eq(gguf_reader_open(qbt_host(), path, &r), QB_E_UNSUPPORTED);
    ck_assert_msg(strstr(qbt_host_last_error(), "token 4 (a run of 3 newlines)"), "%s", qbt_host_last_error());
    free(path);
}
END_TEST

START_TEST(test_summary_names_tokenizer)
{
    char *path = odd_tokenizer("gpt2", "llama-bpe");
    gguf_reader *r = NULL;
    qb_model_info info;
    ck_assert_msg(gguf_reader_open(qbt_host(), path, &r) == QB_OK, "%s", qbt_host_last_error());
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    ck_assert_int_eq(gguf_reader_vtable()->get_model_info(r, &info), QB_OK);
    ck_assert_msg(strstr(info.source_summary, "tokenizer: gpt2 (pre llama-bpe), 4 tokens"), "%s",
                  info.source_summary);
    gguf_reader_close(r);
    free(path);
}
END_TEST

/* generation_config.json of a tiny llama (bos 1, eos 2 from the fixture)
 * with tokenizer.ggml.eot/eom_token_id as given (< 0: absent). */
static cJSON *gen_config(int eot, int eom)
{
    const char *dir = qbt_scratch("gguf-gen");
    qbt_gguf_spec s;
    qbt_hf_model ref;
    qbt_gguf *g = NULL;
    gguf_reader *r = NULL;
    qb_model_info info;
    char *path = qbt_path(dir, "m.gguf");
    cJSON *j, *c;
    memset(&s, 0, sizeof(s));
    s.arch = "llama";
    s.n_layer = 1;
    s.n_embd = 32;
    s.n_ff = 64;
    s.n_head = 2;
    s.n_head_kv = 2;
    s.n_vocab = 16;
    s.tied = 1;
    s.wtype = 1;
    s.seed = 7;
    ck_assert_int_eq(qbt_gguf_build_model(&s, &g, &ref), 0);
    qbt_hf_model_free(&ref);
    if (eot >= 0)
        ck_assert_int_eq(qbt_gguf_kv_u32(g, "tokenizer.ggml.eot_token_id", (uint32_t)eot), 0);
    if (eom >= 0)
        ck_assert_int_eq(qbt_gguf_kv_u32(g, "tokenizer.ggml.eom_token_id", (uint32_t)eom), 0);
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
    ck_assert_msg(gguf_reader_open(qbt_host(), path, &r) == QB_OK, "%s", qbt_host_last_error());
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    ck_assert_int_eq(gguf_reader_vtable()->get_model_info(r, &info), QB_OK);
    ck_assert_ptr_nonnull(info.generation_config_json);
    j = cJSON_Parse(info.generation_config_json);
    ck_assert_ptr_nonnull(j);
    /* config.json keeps the one eos id */
    c = cJSON_Parse(info.config_json);
    ck_assert_ptr_nonnull(c);
    ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(c, "eos_token_id")));
    ck_assert_int_eq((int)cJSON_GetObjectItemCaseSensitive(c, "eos_token_id")->valuedouble, 2);
    cJSON_Delete(c);
    gguf_reader_close(r);
    free(path);
    return j;
}

static void expect_eos(const cJSON *j, const int *ids, int n)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "eos_token_id");
    int i;
    ck_assert_int_eq((int)cJSON_GetObjectItemCaseSensitive(j, "bos_token_id")->valuedouble, 1);
    if (n == 1) {
        ck_assert(cJSON_IsNumber(e));
        ck_assert_int_eq((int)e->valuedouble, ids[0]);
        return;
    }
    ck_assert(cJSON_IsArray(e));
    ck_assert_int_eq(cJSON_GetArraySize(e), n);
    for (i = 0; i < n; i++)
        ck_assert_int_eq((int)cJSON_GetArrayItem(e, i)->valuedouble, ids[i]);
}

START_TEST(test_generation_config_eos_list)
{
    static const int one[] = {2}, two[] = {2, 9}, three[] = {2, 9, 11};
    cJSON *j;
    expect_eos(j = gen_config(-1, -1), one, 1); /* eos only: a number */
    cJSON_Delete(j);
    expect_eos(j = gen_config(2, -1), one, 1); /* eot == eos: still one */
    cJSON_Delete(j);
    expect_eos(j = gen_config(9, 9), two, 2); /* eot == eom: listed once */
    cJSON_Delete(j);
    expect_eos(j = gen_config(9, 11), three, 3); /* eos, eot, eom in that order */
    cJSON_Delete(j);
}
END_TEST

/* The tokenizer.json a 4-token gpt2 vocabulary with pre `pre` rebuilds to
 * (parsed; caller deletes), `extra` adds keys before saving (may be NULL). */
static cJSON *rebuilt_json(const char *pre, const char *file, void (*extra)(qbt_gguf *))
{
    const char *dir = qbt_scratch("gguf-tok-pre");
    static const char *toks[] = {"a", "b", "ab", "<s>"};
    static const char *merges[] = {"a b"};
    qbt_gguf *g;
    gguf_reader *r = NULL;
    qb_model_info info;
    char *path = tiny_gguf(dir, 4, &g), *fp, *text;
    cJSON *j;
    ck_assert_int_eq(qbt_gguf_kv_str(g, "tokenizer.ggml.model", "gpt2"), 0);
    ck_assert_int_eq(qbt_gguf_kv_str(g, "tokenizer.ggml.pre", pre), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_str(g, "tokenizer.ggml.tokens", 4, toks), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_str(g, "tokenizer.ggml.merges", 1, merges), 0);
    if (extra)
        extra(g);
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
    ck_assert_msg(gguf_reader_open(qbt_host(), path, &r) == QB_OK, "%s: %s", pre, qbt_host_last_error());
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    ck_assert_int_eq(gguf_reader_vtable()->get_model_info(r, &info), QB_OK);
    fp = qbt_path(info.tokenizer_dir, file);
    text = qbt_read_file(fp, NULL);
    ck_assert_msg(text != NULL, "%s: %s missing", pre, fp);
    j = cJSON_Parse(text);
    ck_assert_ptr_nonnull(j);
    gguf_reader_close(r);
    free(text);
    free(fp);
    free(path);
    return j;
}

/* One pre type and what llama.cpp's src/llama-vocab.cpp says about it:
 * the regex_exprs of its LLAMA_VOCAB_PRE_TYPE_* (NULL-terminated; where
 * llama.cpp quotes the original tokenizer.json regex and runs an adapted
 * one, the quoted original), and whether it sets ignore_merges. `digits`:
 * regex_exprs begins with "\p{N}" followed by GPT-2's pattern, which HF
 * writes Digits(individual) + ByteLevel(use_regex); `gpt2`: the regex is
 * GPT-2's pattern alone, HF ByteLevel(use_regex). */
typedef struct pre_case {
    const char *name;
    const char *rx[7];
    int digits, gpt2, ignore_merges;
} pre_case;

/* From llama.cpp src/llama-vocab.cpp (llm_tokenizer_bpe), non-ASCII as
 * universal character names taken from the file's bytes (an NFC-normalizing
 * copy changes range ends). */
static const pre_case pre_cases[] = {
    {"gpt-2", {NULL}, 0, 1, 0},
    {"phi-2", {NULL}, 0, 1, 0},
    {"smollm", {NULL}, 1, 0, 0},
    {"command-r", {NULL}, 1, 0, 0},
    {"starcoder", {NULL}, 1, 0, 0},
    {"refact", {NULL}, 1, 0, 0},
    {"deepseek-llm",
     {"[\r\n]",
      "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-\U0001E943]+",
      "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+",
      "\\s+$",
      "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+",
      "\\p{N}+",
      NULL},
     0, 0, 0},
    {"deepseek-coder",
     {"[\r\n]",
      "\\s?\\p{L}+",
      "\\s?\\p{P}+",
      "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+",
      "\\p{N}",
      NULL}, 0, 0, 0},
    {"deepseek-v3",
     {"\\p{N}{1,3}",
      "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, 0},
    {"mpt", {NULL}, 0, 1, 0},
    {"falcon",
     {"[\\p{P}\\$\\+<=>\\^~\\|`]+",
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
      "[0-9][0-9][0-9]",
      NULL},
     0, 0, 0},
    {"qwen35",
     {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+["
      "\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, 0},
    {"tekken",
     {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?["
      "\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/"
      "]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, 1},
    {"gpt-4o",
     {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'"
      "d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'"
      "ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL},
     0, 0, 0},
};

static void expect_bytelevel(const cJSON *o, int use_regex, const char *name)
{
    ck_assert_msg(!strcmp(cJSON_GetObjectItemCaseSensitive(o, "type")->valuestring, "ByteLevel"), "%s", name);
    ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "use_regex")) == use_regex, "%s: use_regex", name);
    ck_assert_msg(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, "add_prefix_space")), "%s: add_prefix_space", name);
}

/* Each table entry's pre_tokenizer is the upstream regex list: one
 * Isolated Split per regex_exprs entry, in order, then ByteLevel without
 * its own regex; or the HF spellings of GPT-2's pattern. */
START_TEST(test_pre_types_are_upstream_regexes)
{
    size_t c;
    for (c = 0; c < sizeof(pre_cases) / sizeof(pre_cases[0]); c++) {
        const pre_case *pc = &pre_cases[c];
        cJSON *j = rebuilt_json(pc->name, "tokenizer.json", NULL);
        const cJSON *pt = cJSON_GetObjectItemCaseSensitive(j, "pre_tokenizer"), *list, *e;
        int i = 0;
        ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "model"),
                                                                    "ignore_merges")) == pc->ignore_merges,
                      "%s: ignore_merges", pc->name);
        if (pc->gpt2) {
            expect_bytelevel(pt, 1, pc->name);
            cJSON_Delete(j);
            continue;
        }
        ck_assert_msg(!strcmp(cJSON_GetObjectItemCaseSensitive(pt, "type")->valuestring, "Sequence"), "%s", pc->name);
        list = cJSON_GetObjectItemCaseSensitive(pt, "pretokenizers");
        if (pc->digits) {
            ck_assert_int_eq(cJSON_GetArraySize(list), 2);
            e = cJSON_GetArrayItem(list, 0);
            ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "type")->valuestring, "Digits");
            ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "individual_digits")));
            expect_bytelevel(cJSON_GetArrayItem(list, 1), 1, pc->name);
            cJSON_Delete(j);
            continue;
        }
        cJSON_ArrayForEach(e, list)
        {
            const cJSON *pat = cJSON_GetObjectItemCaseSensitive(e, "pattern");
            if (!e->next) {
                ck_assert_msg(pc->rx[i] == NULL, "%s: %d Splits, upstream has more", pc->name, i);
                expect_bytelevel(e, 0, pc->name);
                break;
            }
            ck_assert_msg(pc->rx[i] != NULL, "%s: more Splits than upstream's %d regexes", pc->name, i);
            ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "type")->valuestring, "Split");
            ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "behavior")->valuestring, "Isolated");
            ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e, "invert")));
            ck_assert_msg(!strcmp(cJSON_GetObjectItemCaseSensitive(pat, "Regex")->valuestring, pc->rx[i]),
                          "%s: Split %d:\n rebuilt  %s\n upstream %s", pc->name, i,
                          cJSON_GetObjectItemCaseSensitive(pat, "Regex")->valuestring, pc->rx[i]);
            i++;
        }
        cJSON_Delete(j);
    }
}
END_TEST

static void named_templates(qbt_gguf *g)
{
    ck_assert_int_eq(qbt_gguf_kv_str(g, "tokenizer.chat_template", "{{ default }}"), 0);
    ck_assert_int_eq(qbt_gguf_kv_str(g, "tokenizer.chat_template.tool_use", "{{ tools }}"), 0);
    ck_assert_int_eq(qbt_gguf_kv_str(g, "tokenizer.chat_template.rag", "{{ docs }}"), 0);
}

static void default_template(qbt_gguf *g)
{
    ck_assert_int_eq(qbt_gguf_kv_str(g, "tokenizer.chat_template", "{{ only }}"), 0);
}

/* tokenizer.chat_template.NAME keys (gguf-py Keys.Tokenizer.CHAT_TEMPLATE_N)
 * become transformers' list form [{name, template}], the plain key the
 * entry named "default"; a lone default stays a string. */
START_TEST(test_named_chat_templates)
{
    static const char *names[] = {"default", "tool_use", "rag"}, *tpl[] = {"{{ default }}", "{{ tools }}", "{{ docs }}"};
    cJSON *j = rebuilt_json("gpt-2", "tokenizer_config.json", named_templates), *ct, *e;
    int i, seen[3] = {0, 0, 0};
    ct = cJSON_GetObjectItemCaseSensitive(j, "chat_template");
    ck_assert_msg(cJSON_IsArray(ct) && cJSON_GetArraySize(ct) == 3, "chat_template is not a list of 3");
    cJSON_ArrayForEach(e, ct)
    {
        const char *n = cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring;
        for (i = 0; i < 3; i++)
            if (!strcmp(n, names[i])) {
                ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "template")->valuestring, tpl[i]);
                seen[i]++;
            }
    }
    for (i = 0; i < 3; i++)
        ck_assert_msg(seen[i] == 1, "template %s seen %d times", names[i], seen[i]);
    cJSON_Delete(j);
    j = rebuilt_json("gpt-2", "tokenizer_config.json", default_template);
    ct = cJSON_GetObjectItemCaseSensitive(j, "chat_template");
    ck_assert(cJSON_IsString(ct));
    ck_assert_str_eq(ct->valuestring, "{{ only }}");
    cJSON_Delete(j);
}
END_TEST

/* The rebuilt files of a GGUF made from vocabulary folder `name` (no pre
 * type: SentencePiece), opened strictly; *warnings the warnings logged at
 * open and *last the last line (malloc'd). */
static void rebuild_folder(const char *name, cJSON **tj, cJSON **cfg, int *warnings, char **last)
{
    char *jpath = qbt_path(QB_TOKENIZER_DATA, name), *tjp = qbt_path(jpath, "tokenizer.json"),
         *cjp = qbt_path(jpath, "tokenizer_config.json");
    char *orig_text = qbt_read_file(tjp, NULL), *cfg_text = qbt_read_file(cjp, NULL), *path, *t1, *t2, *p1, *p2;
    const char *dir = qbt_scratch("gguf-tok-mini");
    cJSON *orig;
    qbt_gguf *g;
    gguf_reader *r = NULL;
    qb_model_info info;
    long n;
    ck_assert_msg(orig_text && cfg_text, "%s: test data missing", jpath);
    orig = cJSON_Parse(orig_text);
    ck_assert_ptr_nonnull(orig);
    n = max_id_plus_one(orig);
    path = tiny_gguf(dir, (int)n, &g);
    ck_assert_int_eq(qbt_gguf_add_hf_tokenizer(g, orig_text, cfg_text, NULL), n);
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
    qbt_host_reset();
    ck_assert_msg(gguf_reader_open(qbt_host(), path, &r) == QB_OK, "%s: %s", name, qbt_host_last_error());
    *warnings = qbt_host_warn_count();
    *last = strdup(qbt_host_log_last());
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    ck_assert_int_eq(gguf_reader_vtable()->get_model_info(r, &info), QB_OK);
    ck_assert_int_eq(info.tokenizer_state, QB_TOKENIZER_UNSTATED);
    ck_assert_ptr_null(info.tokenizer_note);
    p1 = qbt_path(info.tokenizer_dir, "tokenizer.json");
    p2 = qbt_path(info.tokenizer_dir, "tokenizer_config.json");
    t1 = qbt_read_file(p1, NULL);
    t2 = qbt_read_file(p2, NULL);
    ck_assert(t1 && t2);
    *tj = cJSON_Parse(t1);
    *cfg = cJSON_Parse(t2);
    ck_assert(*tj && *cfg);
    gguf_reader_close(r);
    cJSON_Delete(orig);
    free(t1);
    free(t2);
    free(p1);
    free(p2);
    free(path);
    free(orig_text);
    free(cfg_text);
    free(jpath);
    free(tjp);
    free(cjp);
}

static int has_merge(const cJSON *merges, const char *want)
{
    const cJSON *e;
    char b[256];
    cJSON_ArrayForEach(e, merges) if (!strcmp(merge_str(e, b, sizeof(b)), want)) return 1;
    return 0;
}

/* gemma-mini (tests/data/tokenizers/README.md): what the converter makes of
 * Gemma's user-defined tokens, rebuilt as llama.cpp tokenizes them. The
 * counts and ranges are worked out by hand from the folder's files. */
START_TEST(test_gemma_mini_user_defined_spaces)
{
    cJSON *tj, *cfg, *e;
    const cJSON *added, *merges, *vocab, *norm, *notes;
    char *last, b[256];
    int warnings, id;
    rebuild_folder("gemma-mini", &tj, &cfg, &warnings, &last);
    /* one warning at open, naming the file, the key and the notes */
    ck_assert_int_eq(warnings, 1);
    ck_assert_msg(strstr(last, "m.gguf") && strstr(last, "quantbridge_rebuild_notes") && strstr(last, "14-16"),
                  "warning: %s", last);
    /* added tokens: 26, texts as llama.cpp's converter wrote them (U+2581
     * of a user-defined token as a space), matched on the raw text */
    added = cJSON_GetObjectItemCaseSensitive(tj, "added_tokens");
    ck_assert_int_eq(cJSON_GetArraySize(added), 26);
    id = 0;
    cJSON_ArrayForEach(e, added)
    {
        const char *c = cJSON_GetObjectItemCaseSensitive(e, "content")->valuestring;
        int special = id <= 4 || (id >= 6 && id <= 10);
        ck_assert_int_eq((int)cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble, id);
        ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "special")) == special, "id %d special", id);
        ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e, "normalized")));
        ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e, "lstrip")));
        ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e, "rstrip")));
        if (id == 14)
            ck_assert_str_eq(c, "  ");
        if (id == 16)
            ck_assert_str_eq(c, "    ");
        if (id == 18)
            ck_assert_str_eq(c, "\t\t");
        id++;
    }
    vocab = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tj, "model"), "vocab");
    ck_assert_int_eq(cJSON_GetArraySize(vocab), 342);
    ck_assert_int_eq((int)cJSON_GetObjectItemCaseSensitive(vocab, "   ")->valuedouble, 15);
    /* merges: the folder's 17, plus "\n \n", "\n \n\n", "\n\n \n" and
     * "\t \t" from the user-defined pieces; "  " + "  " -> "    " left out
     * (no merge part holds a space) */
    merges = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tj, "model"), "merges");
    ck_assert_int_eq(cJSON_GetArraySize(merges), 21);
    ck_assert(has_merge(merges, "\n \n") && has_merge(merges, "\n \n\n") && has_merge(merges, "\n\n \n"));
    ck_assert(has_merge(merges, "\t \t") && has_merge(merges, "\xe2\x96\x81 hello"));
    cJSON_ArrayForEach(e, merges)
    {
        const char *m = merge_str(e, b, sizeof(b)), *sp = strchr(m, ' ');
        ck_assert_msg(sp && !strchr(sp + 1, ' ') && sp != m, "merge \"%s\" has a part holding a space", m);
    }
    /* add_space_prefix false: Replace(" ", U+2581) alone, no Strip */
    norm = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tj, "normalizer"), "normalizers");
    ck_assert_int_eq(cJSON_GetArraySize(norm), 1);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(norm->child, "type")->valuestring, "Replace");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(tj, "decoder"), "decoders")),
                     3);
    /* the notes, in tokenizer_config.json */
    notes = cJSON_GetObjectItemCaseSensitive(cfg, "quantbridge_rebuild_notes");
    ck_assert_int_eq(cJSON_GetArraySize(notes), 2);
    ck_assert_msg(strstr(notes->child->valuestring, "control/unknown 0-4, 6-10; user-defined 5, 11-25") &&
                      strstr(notes->child->valuestring, "lstrip, rstrip, single_word and normalized false"),
                  "%s", notes->child->valuestring);
    ck_assert_msg(strstr(notes->child->next->valuestring, "user-defined tokens 14-16 hold literal spaces") &&
                      strstr(notes->child->next->valuestring, "1 merge of pieces holding a space is left out"),
                  "%s", notes->child->next->valuestring);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cfg, "bos_token")->valuestring, "<bos>");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token")));
    free(last);
    cJSON_Delete(tj);
    cJSON_Delete(cfg);
}
END_TEST

/* A SentencePiece vocabulary with user-defined tokens `user` (n of them)
 * beside a few normal ones, general.name `name` (NULL: the generator's);
 * returns the notes of its rebuild. */
static cJSON *notes_named(const char *const *user, int n_user, const char *name)
{
    const char *dir = qbt_scratch("gguf-tok-notes");
    const char *toks[16] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81", "a", "b", "c", "x"};
    int32_t types[16] = {2, 3, 3, 1, 1, 1, 1, 1};
    int n = 8, i;
    qbt_gguf *g;
    gguf_reader *r = NULL;
    qb_model_info info;
    char *path, *fp, *text;
    cJSON *cfg, *notes;
    for (i = 0; i < n_user; i++, n++) {
        toks[n] = user[i];
        types[n] = 4;
    }
    path = tiny_gguf(dir, n, &g);
    ck_assert_int_eq(qbt_gguf_kv_str(g, "tokenizer.ggml.model", "llama"), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_str(g, "tokenizer.ggml.tokens", (size_t)n, toks), 0);
    ck_assert_int_eq(qbt_gguf_kv_arr_i32(g, "tokenizer.ggml.token_type", (size_t)n, types), 0);
    ck_assert_int_eq(qbt_gguf_kv_u32(g, "tokenizer.ggml.bos_token_id", 1), 0);
    if (name) {
        qbt_gguf_kv_remove(g, "general.name");
        ck_assert_int_eq(qbt_gguf_kv_str(g, "general.name", name), 0);
    }
    ck_assert_int_eq(qbt_gguf_save(g, NULL, path), 0);
    qbt_gguf_free(g);
    ck_assert_msg(gguf_reader_open(qbt_host(), path, &r) == QB_OK, "%s", qbt_host_last_error());
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    ck_assert_int_eq(gguf_reader_vtable()->get_model_info(r, &info), QB_OK);
    fp = qbt_path(info.tokenizer_dir, "tokenizer_config.json");
    text = qbt_read_file(fp, NULL);
    ck_assert_ptr_nonnull(text);
    cfg = cJSON_Parse(text);
    notes = cJSON_DetachItemFromObjectCaseSensitive(cfg, "quantbridge_rebuild_notes");
    ck_assert(cJSON_IsArray(notes));
    gguf_reader_close(r);
    cJSON_Delete(cfg);
    free(text);
    free(fp);
    free(path);
    return notes;
}

static cJSON *notes_of(const char *const *user, int n_user)
{
    return notes_named(user, n_user, NULL);
}

/* llama.cpp strips whitespace after the special tokens of a model whose
 * general.name holds "phi-3" or "phi3" (any case; llama_vocab::impl::load):
 * said for such a name only. */
START_TEST(test_phi3_name_noted)
{
    static const char *const user[] = {"<|end|>"};
    static const char *const names[] = {"Phi-3 mini 4k instruct", "PHI3.5", "phi 3", "Llama 3"};
    int k;
    for (k = 0; k < 4; k++) {
        cJSON *notes = notes_named(user, 1, names[k]), *e;
        int found = 0;
        cJSON_ArrayForEach(e, notes) found += strstr(e->valuestring, "phi-3 model") != NULL;
        ck_assert_msg(found == (k < 2), "%s: %d phi-3 notes", names[k], found);
        cJSON_Delete(notes);
    }
}
END_TEST

/* Added tokens that overlap (a proper suffix of one a proper prefix of
 * another) are named: tokenizers' leftmost-longest and llama.cpp's
 * longest-first partition may then cut a text differently. Runs of one
 * repeated character are not (both take the longest run from the left),
 * nor are nested ones. */
START_TEST(test_overlapping_added_tokens_noted)
{
    static const char *const overlap[] = {"ab", "bc", "xx", "xxx"}, *runs[] = {"xx", "xxx", "abc", "bc"};
    cJSON *notes = notes_of(overlap, 4), *e;
    int found = 0;
    cJSON_ArrayForEach(e, notes) if (strstr(e->valuestring, "overlap"))
    {
        found++;
        ck_assert_msg(strstr(e->valuestring, "8 \"ab\" and 9 \"bc\"") && !strstr(e->valuestring, "more such"),
                      "%s", e->valuestring);
    }
    ck_assert_int_eq(found, 1);
    cJSON_Delete(notes);
    notes = notes_of(runs, 4);
    cJSON_ArrayForEach(e, notes) ck_assert_msg(!strstr(e->valuestring, "overlap"), "%s", e->valuestring);
    /* no space in any user-defined token: no note about spaces either */
    ck_assert_int_eq(cJSON_GetArraySize(notes), 1);
    cJSON_Delete(notes);
}
END_TEST

/* ABI 1.3: with GGUF_OPEN_TOKENIZER_STATE a tokenizer that cannot be
 * rebuilt opens the model and is stated REFUSED with the reason and the
 * reader option; a host struct without the 1.3 fields gets the refusal as
 * an error; tokenizer=skip is stated SKIPPED, the host then warns (the
 * reader does not), while a 1.2 host gets the reader's own warning. */
START_TEST(test_refused_and_skipped_states)
{
    char *path = odd_tokenizer("t5", NULL);
    gguf_reader *r = NULL;
    qb_model_info info;
    const char *note;
    qbt_host_reset();
    ck_assert_msg(gguf_reader_open_opts(qbt_host(), path, GGUF_OPEN_TOKENIZER_STATE, &r) == QB_OK, "%s",
                  qbt_host_last_error());
    ck_assert_int_eq(qbt_host_warn_count(), 0);
    ck_assert_int_eq(gguf_reader_tokenizer_state(r, &note), QB_TOKENIZER_REFUSED);
    memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    ck_assert_int_eq(gguf_reader_vtable()->get_model_info(r, &info), QB_OK);
    ck_assert_int_eq(info.tokenizer_state, QB_TOKENIZER_REFUSED);
    ck_assert_ptr_null(info.tokenizer_dir);
    ck_assert_ptr_eq(info.tokenizer_note, note);
    ck_assert_msg(strstr(note, "m.gguf") && strstr(note, "\"t5\"") && strstr(note, "option tokenizer=skip"), "%s",
                  note);
    ck_assert_msg(strstr(info.source_summary, "tokenizer: t5, not rebuilt (refused)"), "%s", info.source_summary);
    /* a struct of ABI 1.1 size cannot carry the state: the refusal is an error */
    memset(&info, 0, sizeof(info));
    info.struct_size = QB_MODEL_INFO_SIZE_1_1;
    ck_assert_int_eq(gguf_reader_vtable()->get_model_info(r, &info), QB_E_UNSUPPORTED);
    ck_assert_msg(strstr(qbt_host_last_error(), "\"t5\""), "%s", qbt_host_last_error());
    gguf_reader_close(r);

    qbt_host_reset();
    ck_assert_int_eq(
        gguf_reader_open_opts(qbt_host(), path, GGUF_OPEN_TOKENIZER_STATE | GGUF_OPEN_SKIP_TOKENIZER, &r), QB_OK);
    ck_assert_int_eq(qbt_host_warn_count(), 0);
    ck_assert_int_eq(gguf_reader_tokenizer_state(r, &note), QB_TOKENIZER_SKIPPED);
    ck_assert_msg(strstr(note, "option tokenizer=skip"), "%s", note);
    gguf_reader_close(r);

    qbt_host_reset();
    ck_assert_int_eq(gguf_reader_open_opts(qbt_host(), path, GGUF_OPEN_SKIP_TOKENIZER, &r), QB_OK);
    ck_assert_int_eq(qbt_host_warn_count(), 1);
    ck_assert_msg(strstr(qbt_host_log_last(), "the output gets no tokenizer.json"), "%s", qbt_host_log_last());
    ck_assert_int_eq(gguf_reader_tokenizer_state(r, &note), QB_TOKENIZER_UNSTATED);
    ck_assert_ptr_null(note);
    gguf_reader_close(r);
    free(path);
}
END_TEST

Suite *qbt_suite(void)
{
    Suite *s = suite_create("gguf_tokenizer");
    TCase *tc = tcase_create("tokenizer");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_llama2_sentencepiece);
    tcase_add_test(tc, test_llama3_bpe);
    tcase_add_test(tc, test_qwen3_bpe);
    tcase_add_test(tc, test_unknown_pre_refused);
    tcase_add_test(tc, test_missing_pre_refused);
    tcase_add_test(tc, test_add_sep_refused);
    tcase_add_test(tc, test_other_models_refused);
    tcase_add_test(tc, test_gemma4_rebuilt);
    tcase_add_test(tc, test_summary_names_tokenizer);
    tcase_add_test(tc, test_generation_config_eos_list);
    tcase_add_test(tc, test_pre_types_are_upstream_regexes);
    tcase_add_test(tc, test_named_chat_templates);
    tcase_add_test(tc, test_gemma_mini_user_defined_spaces);
    tcase_add_test(tc, test_overlapping_added_tokens_noted);
    tcase_add_test(tc, test_phi3_name_noted);
    tcase_add_test(tc, test_refused_and_skipped_states);
    suite_add_tcase(s, tc);
    return s;
}
