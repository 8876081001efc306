/*
 * quantbridge host — what `inspect` says about the source's tokenizer: read
 * back from the Hugging Face files the reader points tokenizer_dir at
 * (tokenizer.json, tokenizer_config.json, chat_template.jinja) and the chat
 * template it carries outside them, so every reader is described the same
 * way and the host stays format-blind. What a GGUF becomes:
 * docs/formats/gguf.md "Tokenizer".
 */
#include "cli.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <glib.h>

/* tokenizer.json of a large vocabulary is tens of MiB; bound it anyway. */
#define TOK_MAX_JSON ((size_t)512 << 20)

/* dir/name read as JSON into *out (NULL when the file is absent), by the
 * strict parser every input file goes through: a text it refuses is an
 * error naming the file (returned, message set). A file that cannot be
 * read, or is JSON but no object, is said in *err (g_malloc'd) instead. */
static qb_status read_json(const char *dir, const char *name, cJSON **out, char **err)
{
    char *path = g_build_filename(dir, name, NULL);
    void *data = NULL;
    size_t len = 0;
    qb_status rc = qbh_read_small_file(path, TOK_MAX_JSON, &data, &len);
    *out = NULL;
    if (rc == QB_E_NOT_FOUND) {
        qbh_error_clear();
        rc = QB_OK;
    } else if (rc) {
        *err = g_strdup(qbh_error_message());
        rc = QB_OK;
    } else if ((rc = qbh_json_parse_cjson(path, data, len, out)) == QB_OK &&
               !cJSON_IsObject(*out)) {
        *err = g_strdup_printf("%s: not a JSON object", path);
        cJSON_Delete(*out);
        *out = NULL;
    }
    qbh_free(data);
    g_free(path);
    return rc;
}

/* "Split x3 + ByteLevel": the types of a (Sequence of) component(s). */
static void describe(const cJSON *c, const char *list_key, GString *s)
{
    const cJSON *e, *type = cJSON_GetObjectItemCaseSensitive(c, "type");
    const char *prev = NULL;
    int run = 0;
    if (!cJSON_IsString(type)) {
        g_string_append(s, "none");
        return;
    }
    if (strcmp(type->valuestring, "Sequence") != 0) {
        g_string_append(s, type->valuestring);
        return;
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(c, list_key))
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "type");
        const char *name = cJSON_IsString(t) ? t->valuestring : "?";
        if (prev && strcmp(prev, name) == 0) {
            run++;
            continue;
        }
        if (prev && run > 1)
            g_string_append_printf(s, " x%d", run);
        g_string_append_printf(s, "%s%s", prev ? " + " : "", name);
        prev = name;
        run = 1;
    }
    if (run > 1)
        g_string_append_printf(s, " x%d", run);
    if (!prev)
        g_string_append(s, "Sequence (empty)");
}

static int has_type(const cJSON *c, const char *list_key, const char *want)
{
    const cJSON *e, *type = cJSON_GetObjectItemCaseSensitive(c, "type");
    if (!cJSON_IsString(type))
        return 0;
    if (strcmp(type->valuestring, want) == 0)
        return 1;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(c, list_key))
        if (has_type(e, list_key, want))
            return 1;
    return 0;
}

/* Ids are model.vocab's values (BPE, WordPiece, WordLevel: an object;
 * Unigram: an array of [piece, score] indexed by id) and added_tokens'. */
static long long vocab_size(const cJSON *tj)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(tj, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab"), *e;
    long long n = 0;
    if (cJSON_IsArray(vocab))
        n = cJSON_GetArraySize(vocab);
    else
        cJSON_ArrayForEach(e, vocab) if (cJSON_IsNumber(e) && (long long)e->valuedouble + 1 > n) n =
            (long long)e->valuedouble + 1;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(tj, "added_tokens"))
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        if (cJSON_IsNumber(id) && (long long)id->valuedouble + 1 > n)
            n = (long long)id->valuedouble + 1;
    }
    return n;
}

/* Id of token text `s` in tokenizer.json, or -1. */
static long long token_id(const cJSON *tj, const char *s)
{
    const cJSON *e, *vocab;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(tj, "added_tokens"))
    {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content"), *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        if (cJSON_IsString(c) && cJSON_IsNumber(id) && strcmp(c->valuestring, s) == 0)
            return (long long)id->valuedouble;
    }
    vocab = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tj, "model"), "vocab");
    if (cJSON_IsObject(vocab)) {
        e = cJSON_GetObjectItemCaseSensitive(vocab, s);
        return cJSON_IsNumber(e) ? (long long)e->valuedouble : -1;
    }
    if (cJSON_IsArray(vocab)) {
        long long i = 0;
        cJSON_ArrayForEach(e, vocab)
        {
            const cJSON *p = cJSON_GetArrayItem(e, 0);
            if (cJSON_IsString(p) && strcmp(p->valuestring, s) == 0)
                return i;
            i++;
        }
    }
    return -1;
}

/* A special token of tokenizer_config.json: a string, or transformers'
 * AddedToken form {"content": ...}. */
static const char *special_text(const cJSON *cfg, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsObject(v))
        v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void add_bool_or_null(cJSON *o, const char *name, const cJSON *v)
{
    if (cJSON_IsBool(v))
        cJSON_AddBoolToObject(o, name, cJSON_IsTrue(v));
    else
        cJSON_AddNullToObject(o, name);
}

qb_status qbh_inspect_tokenizer_json(const qb_model_info *mi, cJSON **out)
{
    static const char *const specials[] = {"bos", "eos", "unk", "pad"};
    cJSON *o, *tj = NULL, *cfg = NULL, *sp, *names;
    const cJSON *ct;
    char *err = NULL;
    int present = 0;
    size_t i;
    qb_status rc;

    assert(mi != NULL);
    *out = NULL;
    if (!mi->tokenizer_dir && !mi->chat_template)
        return QB_OK;
    o = cJSON_CreateObject();
    if (!o)
        return qbh_error_set(QB_E_NOMEM, "out of memory");
    if (mi->tokenizer_dir) {
        cJSON_AddStringToObject(o, "dir", mi->tokenizer_dir);
        rc = read_json(mi->tokenizer_dir, "tokenizer.json", &tj, &err);
        if (rc == QB_OK && !err)
            rc = read_json(mi->tokenizer_dir, "tokenizer_config.json", &cfg, &err);
        if (rc) {
            cJSON_Delete(tj);
            cJSON_Delete(o);
            g_free(err);
            return rc;
        }
    } else {
        cJSON_AddNullToObject(o, "dir");
    }
    if (err)
        cJSON_AddStringToObject(o, "error", err);
    if (tj) {
        const cJSON *model = cJSON_GetObjectItemCaseSensitive(tj, "model");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
        GString *d = g_string_new(NULL);
        cJSON_AddStringToObject(o, "kind", cJSON_IsString(type) ? type->valuestring : "unknown");
        cJSON_AddBoolToObject(o, "byte_level",
                              has_type(cJSON_GetObjectItemCaseSensitive(tj, "pre_tokenizer"), "pretokenizers",
                                       "ByteLevel") ||
                                  has_type(cJSON_GetObjectItemCaseSensitive(tj, "decoder"), "decoders", "ByteLevel"));
        cJSON_AddBoolToObject(o, "byte_fallback",
                              cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "byte_fallback")));
        describe(cJSON_GetObjectItemCaseSensitive(tj, "pre_tokenizer"), "pretokenizers", d);
        cJSON_AddStringToObject(o, "pre_tokenizer", d->str);
        g_string_truncate(d, 0);
        describe(cJSON_GetObjectItemCaseSensitive(tj, "normalizer"), "normalizers", d);
        cJSON_AddStringToObject(o, "normalizer", d->str);
        g_string_free(d, TRUE);
        cJSON_AddNumberToObject(o, "vocab_size", (double)vocab_size(tj));
    } else {
        cJSON_AddNullToObject(o, "kind");
    }
    sp = cJSON_AddObjectToObject(o, "special_tokens");
    for (i = 0; i < sizeof specials / sizeof specials[0]; i++) {
        char key[16];
        const char *text;
        snprintf(key, sizeof key, "%s_token", specials[i]);
        text = special_text(cfg, key);
        if (text) {
            cJSON *t = cJSON_AddObjectToObject(sp, specials[i]);
            long long id = tj ? token_id(tj, text) : -1;
            cJSON_AddStringToObject(t, "token", text);
            if (id >= 0)
                cJSON_AddNumberToObject(t, "id", (double)id);
            else
                cJSON_AddNullToObject(t, "id");
        } else {
            cJSON_AddNullToObject(sp, specials[i]);
        }
    }
    add_bool_or_null(o, "add_bos_token", cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token"));
    add_bool_or_null(o, "add_eos_token", cJSON_GetObjectItemCaseSensitive(cfg, "add_eos_token"));
    /* transformers: chat_template a string, or a list of {name, template}
     * (named templates, "default" the plain one); chat_template.jinja
     * beside the config; a GGUF's template outside the files. */
    names = cJSON_CreateArray();
    ct = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
    if (cJSON_IsString(ct)) {
        present = 1;
    } else if (cJSON_IsArray(ct)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, ct)
        {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
            present = 1;
            if (cJSON_IsString(n))
                cJSON_AddItemToArray(names, cJSON_CreateString(n->valuestring));
        }
    }
    if (!present && mi->tokenizer_dir) {
        char *jinja = g_build_filename(mi->tokenizer_dir, "chat_template.jinja", NULL);
        present = g_file_test(jinja, G_FILE_TEST_IS_REGULAR);
        g_free(jinja);
    }
    if (!present && mi->chat_template)
        present = 1;
    cJSON_AddBoolToObject(o, "chat_template", present);
    cJSON_AddItemToObject(o, "chat_templates", names);
    {
        /* what a rebuilt tokenizer could not recover (docs/formats/gguf.md,
         * "What a GGUF does not store") */
        const cJSON *notes = cJSON_GetObjectItemCaseSensitive(cfg, "quantbridge_rebuild_notes"), *e;
        cJSON *arr = cJSON_AddArrayToObject(o, "rebuild_notes");
        cJSON_ArrayForEach(e, notes) if (cJSON_IsString(e))
            cJSON_AddItemToArray(arr, cJSON_CreateString(e->valuestring));
    }
    cJSON_Delete(tj);
    cJSON_Delete(cfg);
    g_free(err);
    *out = o;
    return QB_OK;
}

static const char *str_or(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

static const char *yes_no(const cJSON *v)
{
    return cJSON_IsBool(v) ? (cJSON_IsTrue(v) ? "yes" : "no") : "unset";
}

void qbh_inspect_tokenizer_text(FILE *f, const cJSON *o)
{
    static const char *const specials[] = {"bos", "eos", "unk", "pad"};
    const cJSON *sp, *names, *e;
    size_t i;
    assert(f != NULL);
    if (!o) {
        fprintf(f, "tokenizer: none\n");
        return;
    }
    if (cJSON_GetObjectItemCaseSensitive(o, "error"))
        fprintf(f, "tokenizer error: %s\n", str_or(o, "error", ""));
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "kind"))) {
        const char *bl = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "byte_level")) ? ", byte-level" : "";
        const char *bf = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "byte_fallback")) ? ", byte fallback" : "";
        fprintf(f, "tokenizer kind: %s%s%s, pre-tokenizer %s, normalizer %s, vocab %lld\n", str_or(o, "kind", "?"), bl,
                bf, str_or(o, "pre_tokenizer", "none"), str_or(o, "normalizer", "none"),
                (long long)cJSON_GetObjectItemCaseSensitive(o, "vocab_size")->valuedouble);
    } else {
        fprintf(f, "tokenizer kind: no tokenizer.json\n");
    }
    sp = cJSON_GetObjectItemCaseSensitive(o, "special_tokens");
    fprintf(f, "tokenizer special:");
    for (i = 0; i < sizeof specials / sizeof specials[0]; i++) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(sp, specials[i]);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(t, "id");
        if (!cJSON_IsObject(t))
            fprintf(f, "%s %s none", i ? "," : "", specials[i]);
        else if (cJSON_IsNumber(id))
            fprintf(f, "%s %s %s (%lld)", i ? "," : "", specials[i], str_or(t, "token", "?"),
                    (long long)id->valuedouble);
        else
            fprintf(f, "%s %s %s (not in the vocabulary)", i ? "," : "", specials[i], str_or(t, "token", "?"));
    }
    fprintf(f, "; add_bos %s, add_eos %s\n", yes_no(cJSON_GetObjectItemCaseSensitive(o, "add_bos_token")),
            yes_no(cJSON_GetObjectItemCaseSensitive(o, "add_eos_token")));
    names = cJSON_GetObjectItemCaseSensitive(o, "chat_templates");
    fprintf(f, "chat template: %s", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "chat_template")) ? "yes" : "no");
    if (cJSON_GetArraySize(names) > 0) {
        fprintf(f, " (named:");
        cJSON_ArrayForEach(e, names) fprintf(f, " %s", e->valuestring);
        fprintf(f, ")");
    }
    fprintf(f, "\n");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "rebuild_notes"))
        fprintf(f, "tokenizer note: %s\n", e->valuestring);
}
