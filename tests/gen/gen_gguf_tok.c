/*
 * GGUF tokenizer metadata from an HF tokenizer (gen_gguf_tok.h).
 * Follows llama.cpp convert_hf_to_gguf.py (get_vocab_base,
 * does_token_look_special, _create_vocab_sentencepiece) and gguf-py
 * SpecialVocab; see docs/formats/gguf.md "Tokenizer".
 */
#include "gen_gguf_tok.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *qbt_read_maybe_xz(const char *path)
{
    size_t n = strlen(path), cap = 1 << 20, len = 0, got;
    int xz = n > 3 && strcmp(path + n - 3, ".xz") == 0;
    FILE *fp;
    char *buf = malloc(cap), cmd[4200];
    if (!buf)
        return NULL;
    if (xz) {
        snprintf(cmd, sizeof(cmd), "xz -dc '%s'", path);
        fp = popen(cmd, "r");
    } else {
        fp = fopen(path, "rb");
    }
    if (!fp) {
        free(buf);
        return NULL;
    }
    while ((got = fread(buf + len, 1, cap - len - 1, fp)) > 0) {
        len += got;
        if (cap - len < 2) {
            char *g = realloc(buf, cap *= 2);
            if (!g) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = g;
        }
    }
    if ((xz ? pclose(fp) : fclose(fp)) != 0 && buf) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(buf);
        return NULL;
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

static int looks_special(const char *s)
{
    size_t n = strlen(s);
    if (!strcmp(s, "<pad>") || !strcmp(s, "<mask>") || !strcmp(s, "<2mass>") || !strcmp(s, "[@BOS@]"))
        return 1;
    if (n >= 4 && !strncmp(s, "<|", 2) && !strcmp(s + n - 2, "|>"))
        return 1;
    /* "<｜" ... "｜>" (U+FF5C, DeepSeek) */
    if (n >= 8 && !strncmp(s, "<\xef\xbd\x9c", 4) && !strcmp(s + n - 4, "\xef\xbd\x9c>"))
        return 1;
    return 0;
}

/* A tokenizer_config.json special token: a string or {"content": ...}. */
static const char *cfg_token(const cJSON *cfg, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, name);
    if (cJSON_IsObject(v))
        v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A normalizer that is, or holds in its Sequence, a Prepend. */
static int has_prepend(const cJSON *n)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(n, "type"), *e;
    if (cJSON_IsString(t) && !strcmp(t->valuestring, "Prepend"))
        return 1;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(n, "normalizers")) if (has_prepend(e)) return 1;
    return 0;
}

/* Merge i as "left right" (string or [left, right]) into buf. */
static const char *merge_text(const cJSON *m, char *buf, size_t n)
{
    if (cJSON_IsString(m))
        return m->valuestring;
    if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2) {
        snprintf(buf, n, "%s %s", cJSON_GetArrayItem(m, 0)->valuestring, cJSON_GetArrayItem(m, 1)->valuestring);
        return buf;
    }
    return NULL;
}

long qbt_gguf_add_hf_tokenizer(qbt_gguf *g, const char *tokenizer_json, const char *tokenizer_config_json,
                               const char *pre)
{
    cJSON *tj = cJSON_Parse(tokenizer_json), *cfg = cJSON_Parse(tokenizer_config_json);
    const cJSON *model, *vocab, *merges, *added, *e, *bf;
    long n = 0, i, rc = -1;
    char **tok = NULL, **merge_s = NULL, **owned = NULL, buf[1024];
    int32_t *type = NULL;
    float *score = NULL;
    unsigned char *is_added = NULL, *is_special = NULL;
    long n_merges = 0;
    int spm;
    const char *names[4] = {"bos_token", "eos_token", "unk_token", "pad_token"};
    const char *keys[4] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                           "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"};
    if (!tj || !cfg) {
        fprintf(stderr, "gen_gguf_tok: tokenizer JSON does not parse\n");
        goto out;
    }
    model = cJSON_GetObjectItemCaseSensitive(tj, "model");
    vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    added = cJSON_GetObjectItemCaseSensitive(tj, "added_tokens");
    bf = cJSON_GetObjectItemCaseSensitive(model, "byte_fallback");
    spm = cJSON_IsTrue(bf);
    cJSON_ArrayForEach(e, vocab) if ((long)e->valuedouble + 1 > n) n = (long)e->valuedouble + 1;
    cJSON_ArrayForEach(e, added)
    {
        long id = (long)cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble;
        if (id + 1 > n)
            n = id + 1;
    }
    tok = calloc((size_t)n, sizeof(*tok));
    type = calloc((size_t)n, sizeof(*type));
    score = calloc((size_t)n, sizeof(*score));
    is_added = calloc((size_t)n, 1);
    is_special = calloc((size_t)n, 1);
    n_merges = cJSON_GetArraySize(merges);
    merge_s = calloc((size_t)n_merges + 1, sizeof(*merge_s));
    if (!tok || !type || !score || !is_added || !is_special || !merge_s)
        goto out;
    cJSON_ArrayForEach(e, vocab) tok[(long)e->valuedouble] = e->string;
    cJSON_ArrayForEach(e, added)
    {
        long id = (long)cJSON_GetObjectItemCaseSensitive(e, "id")->valuedouble;
        tok[id] = cJSON_GetObjectItemCaseSensitive(e, "content")->valuestring;
        is_added[id] = 1;
        is_special[id] = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "special"));
    }
    for (i = 0; i < n; i++) {
        if (!tok[i]) {
            snprintf(buf, sizeof(buf), "[PAD%ld]", i);
            tok[i] = strdup(buf); /* leaked into a tiny test: freed below by the PAD check */
            type[i] = 5;
        } else if (spm) {
            const char *unk = cfg_token(cfg, "unk_token");
            if (unk && !strcmp(tok[i], unk))
                type[i] = 2;
            else if (is_added[i])
                type[i] = is_special[i] ? 3 : 4;
            else if (strlen(tok[i]) == 6 && !strncmp(tok[i], "<0x", 3) && tok[i][5] == '>')
                type[i] = 6;
            else
                type[i] = 1;
        } else {
            type[i] = is_added[i] ? (is_special[i] || looks_special(tok[i]) ? 3 : 4) : 1;
        }
    }
    if (spm) {
        /* _create_vocab_sentencepiece: a non-special added token becomes
         * USER_DEFINED with U+2581 written as a space ("pre-normalize
         * user-defined spaces", Gemma) and the score -1000 (below). */
        owned = calloc((size_t)n, sizeof(*owned));
        if (!owned)
            goto out;
        for (i = 0; i < n; i++)
            if (type[i] == 4 && strstr(tok[i], "\xe2\x96\x81")) {
                const char *p = tok[i];
                char *q = owned[i] = malloc(strlen(p) + 1);
                if (!q)
                    goto out;
                while (*p)
                    if (!strncmp(p, "\xe2\x96\x81", 3)) {
                        *q++ = ' ';
                        p += 3;
                    } else {
                        *q++ = *p++;
                    }
                *q = '\0';
                tok[i] = owned[i];
            }
    }
    e = merges ? merges->child : NULL;
    for (i = 0; i < n_merges; i++, e = e->next) {
        const char *m = merge_text(e, buf, sizeof(buf)); /* walked: GetArrayItem is O(i) */
        if (!m || !(merge_s[i] = strdup(m)))
            goto out;
    }
    if (spm) {
        /* score: -(first merge producing the piece); pieces no merge makes
         * rank below every merge. */
        for (i = 0; i < n; i++)
            score[i] = (type[i] == 1) ? -(float)(n_merges + i) : 0.0f;
        for (i = n_merges - 1; i >= 0; i--) {
            char *sp = strchr(merge_s[i], ' ');
            cJSON *id;
            *sp = '\0';
            snprintf(buf, sizeof(buf), "%s%s", merge_s[i], sp + 1);
            *sp = ' ';
            id = cJSON_GetObjectItemCaseSensitive(vocab, buf);
            if (id)
                score[(long)id->valuedouble] = -(float)i;
        }
        for (i = 0; i < n; i++)
            if (type[i] == 4)
                score[i] = -1000.0f;
    }
    rc = qbt_gguf_kv_str(g, "tokenizer.ggml.model", spm ? "llama" : "gpt2");
    /* Gemma's converter states add_space_prefix false; a llama-style one
     * (a Prepend normalizer) leaves llama.cpp's default, true. */
    if (spm && !has_prepend(cJSON_GetObjectItemCaseSensitive(tj, "normalizer")))
        rc |= qbt_gguf_kv_bool(g, "tokenizer.ggml.add_space_prefix", 0);
    if (!spm)
        rc |= qbt_gguf_kv_str(g, "tokenizer.ggml.pre", pre);
    rc |= qbt_gguf_kv_arr_str(g, "tokenizer.ggml.tokens", (size_t)n, (const char *const *)tok);
    rc |= qbt_gguf_kv_arr_i32(g, "tokenizer.ggml.token_type", (size_t)n, type);
    if (spm) {
        size_t bytes = 12 + 4 * (size_t)n;
        unsigned char *raw = malloc(bytes);
        uint32_t et = 6;
        uint64_t cnt = (uint64_t)n;
        if (!raw)
            goto out;
        memcpy(raw, &et, 4);
        memcpy(raw + 4, &cnt, 8);
        memcpy(raw + 12, score, 4 * (size_t)n);
        rc |= qbt_gguf_kv_raw(g, "tokenizer.ggml.scores", 9, raw, bytes);
        free(raw);
    } else {
        rc |= qbt_gguf_kv_arr_str(g, "tokenizer.ggml.merges", (size_t)n_merges, (const char *const *)merge_s);
    }
    for (int k = 0; k < 4; k++) {
        const char *t = cfg_token(cfg, names[k]);
        for (i = 0; t && i < n; i++)
            if (!strcmp(tok[i], t)) {
                rc |= qbt_gguf_kv_u32(g, keys[k], (uint32_t)i);
                break;
            }
    }
    if (cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token")))
        rc |= qbt_gguf_kv_bool(g, "tokenizer.ggml.add_bos_token",
                               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token")));
    if (cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(cfg, "add_eos_token")))
        rc |= qbt_gguf_kv_bool(g, "tokenizer.ggml.add_eos_token",
                               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "add_eos_token")));
    e = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
    if (cJSON_IsString(e))
        rc |= qbt_gguf_kv_str(g, "tokenizer.chat_template", e->valuestring);
    rc = rc ? -1 : n;
out:
    for (i = 0; tok && i < n; i++)
        if (type && type[i] == 5)
            free(tok[i]);
    for (i = 0; owned && i < n; i++)
        free(owned[i]);
    free(owned);
    for (i = 0; merge_s && i < n_merges; i++)
        free(merge_s[i]);
    free(merge_s);
    free(tok);
    free(type);
    free(score);
    free(is_added);
    free(is_special);
    cJSON_Delete(tj);
    cJSON_Delete(cfg);
    return rc;
}
