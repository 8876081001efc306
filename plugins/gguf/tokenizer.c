/*
 * tokenizer.json and tokenizer_config.json rebuilt from tokenizer.ggml.*
 * (docs/formats/gguf.md "Tokenizer"). Exact or refused: every field is
 * either read from the metadata or fixed by the tokenizer model / pre type
 * table; nothing is guessed from token texts.
 */
#include "gguf_kv.h"
#include "gguf_tokenizer.h"

#include "qbk_alloc.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    TT_NORMAL = GGUF_TT_NORMAL,
    TT_UNKNOWN = GGUF_TT_UNKNOWN,
    TT_CONTROL = GGUF_TT_CONTROL,
    TT_USER = GGUF_TT_USER,
    TT_BYTE = GGUF_TT_BYTE
};

/* How the vocabulary tokenizes (docs/formats/gguf.md "Tokenizer"):
 * tokenizer.ggml.model llama (SentencePiece pieces and scores), gpt2
 * (byte-level BPE with a pre type) or gemma4 (BPE over raw UTF-8 with
 * stored merges, spaces as U+2581: llama.cpp's LLAMA_VOCAB_PRE_TYPE_GEMMA4). */
typedef enum tok_mode { MODE_SPM, MODE_BYTELEVEL, MODE_GEMMA4 } tok_mode;

typedef struct tok_ctx {
    const qb_host *h;
    const gguf_file *f;
    char **s;      /* token texts, NUL-terminated, in one buffer s[0] */
    size_t *len;
    int64_t n;
    int32_t *type;
    float *score;
    int64_t *map;  /* open-addressing hash of texts: id + 1, 0 empty */
    size_t map_mask;
    size_t n_space_merges; /* SentencePiece merges left out: a part holds a space */
} tok_ctx;

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t x = 1469598103934665603ull;
    while (n--)
        x = (x ^ (uint8_t)*p++) * 1099511628211ull;
    return x;
}

/* Id of text [p, p+n), or -1. */
static int64_t lookup(const tok_ctx *t, const char *p, size_t n)
{
    size_t i = (size_t)hash_bytes(p, n) & t->map_mask;
    for (; t->map[i]; i = (i + 1) & t->map_mask) {
        int64_t id = t->map[i] - 1;
        if (t->len[id] == n && memcmp(t->s[id], p, n) == 0)
            return id;
    }
    return -1;
}

static int utf8_valid(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i], k, cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            k = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF)
            k = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4)
            k = 3, cp = c & 0x07;
        else
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if (i + j >= n || (p[i + j] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (p[i + j] & 0x3F);
        }
        if ((k == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        i += k + 1;
    }
    return 1;
}

/* The STRING array `key` as NUL-terminated copies in one buffer. */
static qb_status read_strings(const qb_host *h, const gguf_file *f, const char *key, char ***out, size_t **lens,
                              int64_t *n_out)
{
    const gguf_kv *kv = gguf_kv_find(f, key);
    const uint8_t *p;
    size_t total = 0, i;
    char *buf;
    *out = NULL;
    *lens = NULL;
    *n_out = 0;
    if (!kv)
        return QB_E_NOT_FOUND;
    if (kv->type != GGUF_VT_ARRAY || kv->arr_type != GGUF_VT_STRING)
        return h->set_error(h, QB_E_FORMAT, "%s: %s is not an array of strings", f->path, key);
    for (p = kv->val, i = 0; i < kv->arr_n; i++) {
        uint64_t l;
        memcpy(&l, p, 8); /* bounds checked by gguf_file_parse */
        p += 8 + l;
        total += (size_t)l + 1;
    }
    *out = qbk_calloc(kv->arr_n ? kv->arr_n : 1, sizeof(char *));
    *lens = qbk_calloc(kv->arr_n ? kv->arr_n : 1, sizeof(size_t));
    buf = qbk_malloc(total ? total : 1);
    if (!*out || !*lens || !buf) {
        qbk_free(*out);
        qbk_free(*lens);
        qbk_free(buf);
        *out = NULL;
        *lens = NULL;
        return h->set_error(h, QB_E_NOMEM, "%s: %s: out of memory", f->path, key);
    }
    (*out)[0] = buf; /* free_strings frees s[0], also for an empty array */
    for (p = kv->val, i = 0; i < kv->arr_n; i++) {
        uint64_t l;
        memcpy(&l, p, 8);
        memcpy(buf, p + 8, (size_t)l);
        buf[l] = '\0';
        (*out)[i] = buf;
        (*lens)[i] = (size_t)l;
        buf += l + 1;
        p += 8 + l;
    }
    *n_out = (int64_t)kv->arr_n;
    return QB_OK;
}

static void free_strings(char **s, size_t *lens)
{
    if (s)
        qbk_free(s[0]);
    qbk_free(s);
    qbk_free(lens);
}

/* Token types (optional, all normal when absent) and scores (optional). */
static qb_status read_types_scores(tok_ctx *t)
{
    const gguf_kv *kv = gguf_kv_find(t->f, "tokenizer.ggml.token_type");
    int64_t i;
    t->type = qbk_calloc((size_t)t->n, sizeof(int32_t));
    t->score = qbk_calloc((size_t)t->n, sizeof(float));
    if (!t->type || !t->score)
        return t->h->set_error(t->h, QB_E_NOMEM, "%s: out of memory", t->f->path);
    for (i = 0; i < t->n; i++)
        t->type[i] = TT_NORMAL;
    if (kv) {
        if (kv->type != GGUF_VT_ARRAY || kv->arr_n != (uint64_t)t->n)
            return t->h->set_error(t->h, QB_E_FORMAT, "%s: tokenizer.ggml.token_type is not an array of %lld integers",
                                   t->f->path, (long long)t->n);
        for (i = 0; i < t->n; i++) {
            int ok = 0;
            int64_t v = gguf_kv_int_at(kv->arr_type, kv->val, (uint64_t)i, &ok);
            if (!ok || v < 0 || v > TT_BYTE)
                return t->h->set_error(t->h, QB_E_FORMAT, "%s: tokenizer.ggml.token_type[%lld]: not a token type (0..6)",
                                       t->f->path, (long long)i);
            t->type[i] = (int32_t)v;
        }
    }
    kv = gguf_kv_find(t->f, "tokenizer.ggml.scores");
    if (kv) {
        if (kv->type != GGUF_VT_ARRAY || kv->arr_type != GGUF_VT_FLOAT32 || kv->arr_n != (uint64_t)t->n)
            return t->h->set_error(t->h, QB_E_FORMAT, "%s: tokenizer.ggml.scores is not an array of %lld float32",
                                   t->f->path, (long long)t->n);
        memcpy(t->score, kv->val, (size_t)t->n * sizeof(float));
    }
    return QB_OK;
}

/* Hash of every token text; duplicates and invalid UTF-8 refused (an HF
 * vocabulary is a map from text to id: a duplicate would lose an id). */
static qb_status index_tokens(tok_ctx *t)
{
    size_t cap = 16;
    int64_t i;
    while (cap < (size_t)t->n * 2)
        cap <<= 1;
    t->map = qbk_calloc(cap, sizeof(int64_t));
    if (!t->map)
        return t->h->set_error(t->h, QB_E_NOMEM, "%s: out of memory", t->f->path);
    t->map_mask = cap - 1;
    for (i = 0; i < t->n; i++) {
        int64_t prev = lookup(t, t->s[i], t->len[i]);
        size_t k;
        if (!utf8_valid((const unsigned char *)t->s[i], t->len[i]))
            return t->h->set_error(t->h, QB_E_FORMAT, "%s: tokenizer.ggml.tokens[%lld] is not valid UTF-8", t->f->path,
                                   (long long)i);
        if (prev >= 0)
            return t->h->set_error(t->h, QB_E_FORMAT, "%s: tokenizer.ggml.tokens[%lld] repeats token %lld \"%s\"",
                                   t->f->path, (long long)i, (long long)prev, t->s[i]);
        for (k = (size_t)hash_bytes(t->s[i], t->len[i]) & t->map_mask; t->map[k]; k = (k + 1) & t->map_mask)
            ;
        t->map[k] = i + 1;
    }
    return QB_OK;
}

/* Optional token id key: *out -1 when absent; out of range is an error. */
static qb_status token_id(const tok_ctx *t, const char *key, int32_t *out)
{
    int64_t v;
    qb_status st = gguf_kv_int(t->h, t->f, key, &v);
    *out = -1;
    if (st == QB_E_NOT_FOUND)
        return QB_OK;
    if (st)
        return st;
    if (v < 0 || v >= t->n)
        return t->h->set_error(t->h, QB_E_FORMAT, "%s: %s = %lld is outside the %lld tokens", t->f->path, key,
                               (long long)v, (long long)t->n);
    *out = (int32_t)v;
    return QB_OK;
}

static qb_status opt_bool(const tok_ctx *t, const char *key, int dflt, int *out)
{
    qb_status st = gguf_kv_bool(t->h, t->f, key, out);
    if (st == QB_E_NOT_FOUND) {
        *out = dflt;
        return QB_OK;
    }
    return st;
}

static cJSON *bytelevel(const gguf_bytelevel *b)
{
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "type", "ByteLevel");
        cJSON_AddBoolToObject(o, "add_prefix_space", b->add_prefix_space);
        cJSON_AddBoolToObject(o, "trim_offsets", b->trim_offsets);
        cJSON_AddBoolToObject(o, "use_regex", b->use_regex);
    }
    return o;
}

static cJSON *typed(const char *type)
{
    cJSON *o = cJSON_CreateObject();
    if (o)
        cJSON_AddStringToObject(o, "type", type);
    return o;
}

static cJSON *pre_tokenizer(const gguf_pretok *p)
{
    cJSON *seq, *arr, *o;
    if (!p->regex && !p->digits)
        return bytelevel(&p->pre);
    seq = typed("Sequence");
    arr = cJSON_AddArrayToObject(seq, "pretokenizers");
    for (const char *const *rx = p->regex; rx && *rx; rx++) {
        o = typed("Split");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "pattern"), "Regex", *rx);
        cJSON_AddStringToObject(o, "behavior", "Isolated");
        cJSON_AddBoolToObject(o, "invert", 0);
        cJSON_AddItemToArray(arr, o);
    }
    if (p->digits) {
        o = typed("Digits");
        cJSON_AddBoolToObject(o, "individual_digits", 1);
        cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddItemToArray(arr, bytelevel(&p->pre));
    return seq;
}

static void add_special(cJSON *sp, const tok_ctx *t, int32_t id)
{
    cJSON *o = cJSON_AddObjectToObject(sp, t->s[id]);
    cJSON_AddStringToObject(o, "id", t->s[id]);
    cJSON_AddItemToObject(o, "ids", cJSON_CreateIntArray(&id, 1));
    cJSON_AddItemToObject(o, "tokens", cJSON_CreateStringArray((const char *const *)&t->s[id], 1));
}

static void add_piece(cJSON *arr, const char *kind, const char *id, int type_id)
{
    cJSON *o = cJSON_CreateObject(), *in = cJSON_AddObjectToObject(o, kind);
    cJSON_AddStringToObject(in, "id", id);
    cJSON_AddNumberToObject(in, "type_id", type_id);
    cJSON_AddItemToArray(arr, o);
}

/* transformers LlamaTokenizerFast.update_post_processor: single =
 * [bos:0] $A:0 [eos:0], pair = single [bos:1] $B:1 [eos:1]. */
static cJSON *template_processing(const tok_ctx *t, int32_t bos, int32_t eos)
{
    cJSON *o = typed("TemplateProcessing"), *single, *pair, *sp;
    int pass;
    single = cJSON_AddArrayToObject(o, "single");
    pair = cJSON_AddArrayToObject(o, "pair");
    for (pass = 0; pass < 3; pass++) {
        cJSON *arr = pass == 0 ? single : pair;
        int ty = pass == 2;
        if (bos >= 0)
            add_piece(arr, "SpecialToken", t->s[bos], ty);
        add_piece(arr, "Sequence", pass == 2 ? "B" : "A", ty);
        if (eos >= 0)
            add_piece(arr, "SpecialToken", t->s[eos], ty);
    }
    sp = cJSON_AddObjectToObject(o, "special_tokens");
    if (bos >= 0)
        add_special(sp, t, bos);
    if (eos >= 0 && eos != bos)
        add_special(sp, t, eos);
    return o;
}

static int is_added(int32_t type)
{
    return type == TT_CONTROL || type == TT_USER || type == TT_UNKNOWN;
}

static cJSON *added_token(const tok_ctx *t, int64_t id, int with_id)
{
    cJSON *o = cJSON_CreateObject();
    if (with_id)
        cJSON_AddNumberToObject(o, "id", (double)id);
    cJSON_AddStringToObject(o, "content", t->s[id]);
    cJSON_AddBoolToObject(o, "single_word", 0);
    cJSON_AddBoolToObject(o, "lstrip", 0);
    cJSON_AddBoolToObject(o, "rstrip", 0);
    cJSON_AddBoolToObject(o, "normalized", 0);
    cJSON_AddBoolToObject(o, "special", t->type[id] != TT_USER);
    return o;
}

typedef struct merge {
    int64_t l, r, seq;
    float score;
} merge;

static int merge_cmp(const void *a, const void *b)
{
    const merge *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* transformers SentencePieceExtractor.extract(vocab_scores): for each
 * piece in id order, every split into two pieces of the vocabulary, sorted
 * by (left id, right id); then all stably sorted by the piece's score,
 * highest first. */
static qb_status spm_merges(const tok_ctx *t, merge **out, size_t *n_out)
{
    size_t cap = 1024, n = 0;
    merge *m = qbk_malloc(cap * sizeof(*m));
    int64_t id;
    *out = NULL;
    *n_out = 0;
    if (!m)
        return t->h->set_error(t->h, QB_E_NOMEM, "%s: out of memory", t->f->path);
    for (id = 0; id < t->n; id++) {
        size_t k, first = n;
        for (k = 1; k < t->len[id]; k++) {
            int64_t l, r;
            if (((unsigned char)t->s[id][k] & 0xC0) == 0x80)
                continue;
            l = lookup(t, t->s[id], k);
            r = l >= 0 ? lookup(t, t->s[id] + k, t->len[id] - k) : -1;
            if (r < 0)
                continue;
            if (n == cap) {
                merge *g = qbk_realloc(m, (cap *= 2) * sizeof(*m));
                if (!g) {
                    qbk_free(m);
                    return t->h->set_error(t->h, QB_E_NOMEM, "%s: out of memory", t->f->path);
                }
                m = g;
            }
            m[n].l = l;
            m[n].r = r;
            m[n].score = t->score[id];
            n++;
        }
        /* sort the local splits by (l, r): insertion sort, a handful each */
        for (k = first + 1; k < n; k++) {
            merge x = m[k];
            size_t j = k;
            while (j > first && (m[j - 1].l > x.l || (m[j - 1].l == x.l && m[j - 1].r > x.r))) {
                m[j] = m[j - 1];
                j--;
            }
            m[j] = x;
        }
    }
    for (size_t i = 0; i < n; i++)
        m[i].seq = (int64_t)i;
    qsort(m, n, sizeof(*m), merge_cmp);
    *out = m;
    *n_out = n;
    return QB_OK;
}

static int all_newlines(const char *s, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (s[i] != '\n')
            return 0;
    return n > 0;
}

/* gemma4: llama.cpp (llm_tokenizer_bpe_session::tokenize) takes a piece
 * made only of newlines whole when it is a token, and merges every other
 * piece by rank; a tokenizer.json BPE merges them all. The two agree when
 * the merges make every newline-run token out of its own newlines, which
 * this checks by running them (lowest rank first, leftmost among equals,
 * as both engines do; only merges of two newline runs can apply to a run
 * of newlines). A vocabulary where they do not is refused by name. */
static qb_status gemma4_newline_runs(const tok_ctx *t, char **m, const size_t *ml, int64_t nm)
{
    size_t L = 0, a, b;
    int64_t i, *rank = NULL;
    size_t *sym = NULL;
    qb_status st = QB_OK;
    for (i = 0; i < t->n; i++)
        if (all_newlines(t->s[i], t->len[i]) && t->len[i] > L)
            L = t->len[i];
    if (L < 2)
        return QB_OK;
    rank = qbk_malloc((L + 1) * (L + 1) * sizeof(*rank));
    sym = qbk_malloc(L * sizeof(*sym));
    if (!rank || !sym) {
        st = t->h->set_error(t->h, QB_E_NOMEM, "%s: out of memory", t->f->path);
        goto out;
    }
    for (a = 0; a < (L + 1) * (L + 1); a++)
        rank[a] = -1;
    for (i = 0; i < nm; i++) {
        /* llama.cpp splits a merge at its first space after the first byte
         * and keeps the first rank of a repeated pair (bpe_ranks.emplace) */
        const char *sp = ml[i] > 1 ? memchr(m[i] + 1, ' ', ml[i] - 1) : NULL;
        if (!sp)
            continue;
        a = (size_t)(sp - m[i]);
        b = ml[i] - a - 1;
        if (a + b <= L && all_newlines(m[i], a) && all_newlines(sp + 1, b) && rank[a * (L + 1) + b] < 0)
            rank[a * (L + 1) + b] = i;
    }
    for (i = 0; i < t->n && !st; i++) {
        size_t n = t->len[i], k;
        if (n < 2 || !all_newlines(t->s[i], n))
            continue;
        for (k = 0; k < n; k++)
            sym[k] = 1;
        for (;;) {
            size_t best = n;
            int64_t r = -1;
            for (k = 0; k + 1 < n; k++) {
                int64_t x = rank[sym[k] * (L + 1) + sym[k + 1]];
                if (x >= 0 && (r < 0 || x < r)) {
                    r = x;
                    best = k;
                }
            }
            if (best == n)
                break;
            sym[best] += sym[best + 1];
            memmove(sym + best + 1, sym + best + 2, (n - best - 2) * sizeof(*sym));
            n--;
        }
        if (n != 1)
            st = t->h->set_error(t->h, QB_E_UNSUPPORTED,
                                 "%s: tokenizer.ggml.model gemma4: token %lld (a run of %zu newlines) is not what "
                                 "tokenizer.ggml.merges make of those newlines; llama.cpp takes such a run whole, a "
                                 "tokenizer.json BPE would split it, so the vocabulary cannot be rebuilt exactly",
                                 t->f->path, (long long)i, t->len[i]);
    }
out:
    qbk_free(rank);
    qbk_free(sym);
    return st;
}

static qb_status add_merges(tok_ctx *t, cJSON *model, tok_mode mode)
{
    int spm = mode == MODE_SPM;
    cJSON *arr = cJSON_AddArrayToObject(model, "merges");
    qb_status st = QB_OK;
    if (spm) {
        merge *m;
        size_t n, i, bufcap = 0;
        char *buf = NULL;
        if ((st = spm_merges(t, &m, &n)))
            return st;
        for (i = 0; i < n && !st; i++) {
            size_t ll = t->len[m[i].l], rl = t->len[m[i].r];
            /* A piece holding a literal space (user-defined tokens such as
             * Gemma's runs of spaces: llama.cpp's converter writes their
             * U+2581 as a space) never reaches the model: the normalizer
             * build_tokenizer_json writes, Replace(" ", "\u2581"), turns
             * every space of the text into U+2581 first, as llama.cpp's
             * llama_escape_whitespace does before llm_tokenizer_spm. Such a
             * merge can never apply, so leaving it out is exact -- as long
             * as that normalizer is there (docs/formats/gguf.md,
             * "Tokenizer"). The merge string form "left right" could not
             * hold it anyway. */
            if (memchr(t->s[m[i].l], ' ', ll) || memchr(t->s[m[i].r], ' ', rl)) {
                t->n_space_merges++;
                continue;
            }
            if (ll + rl + 2 > bufcap) {
                char *g = qbk_realloc(buf, bufcap = (ll + rl + 2) * 2);
                if (!g) {
                    st = t->h->set_error(t->h, QB_E_NOMEM, "%s: out of memory", t->f->path);
                    break;
                }
                buf = g;
            }
            memcpy(buf, t->s[m[i].l], ll);
            buf[ll] = ' ';
            memcpy(buf + ll + 1, t->s[m[i].r], rl + 1);
            cJSON_AddItemToArray(arr, cJSON_CreateString(buf));
        }
        qbk_free(buf);
        qbk_free(m);
    } else {
        char **s;
        size_t *lens;
        int64_t n, i;
        st = read_strings(t->h, t->f, "tokenizer.ggml.merges", &s, &lens, &n);
        if (st == QB_E_NOT_FOUND)
            return t->h->set_error(t->h, QB_E_FORMAT, "%s: tokenizer.ggml.model %s without tokenizer.ggml.merges",
                                   t->f->path, mode == MODE_GEMMA4 ? "gemma4" : "gpt2");
        if (st)
            return st;
        for (i = 0; i < n; i++) {
            if (!utf8_valid((const unsigned char *)s[i], lens[i]) || !strchr(s[i] + (lens[i] ? 1 : 0), ' ')) {
                st = t->h->set_error(t->h, QB_E_FORMAT, "%s: tokenizer.ggml.merges[%lld] is not \"left right\"",
                                     t->f->path, (long long)i);
                break;
            }
            cJSON_AddItemToArray(arr, cJSON_CreateString(s[i]));
        }
        if (!st && mode == MODE_GEMMA4)
            st = gemma4_newline_runs(t, s, lens, n);
        free_strings(s, lens);
    }
    return st;
}

/* The decoder of the U+2581 vocabularies (llama, gemma4): Replace("\u2581",
 * " "), ByteFallback, Fuse, and Strip(" ", 1, 0) when a prefix space was
 * added. */
static cJSON *metaspace_decoder(int strip)
{
    cJSON *dec = typed("Sequence"), *seq = cJSON_AddArrayToObject(dec, "decoders"), *o;
    o = typed("Replace");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "pattern"), "String", "\xe2\x96\x81");
    cJSON_AddStringToObject(o, "content", " ");
    cJSON_AddItemToArray(seq, o);
    cJSON_AddItemToArray(seq, typed("ByteFallback"));
    cJSON_AddItemToArray(seq, typed("Fuse"));
    if (strip) {
        o = typed("Strip");
        cJSON_AddStringToObject(o, "content", " ");
        cJSON_AddNumberToObject(o, "start", 1);
        cJSON_AddNumberToObject(o, "stop", 0);
        cJSON_AddItemToArray(seq, o);
    }
    return dec;
}

/* The tokenizer.json object of a llama, gpt2 (pre non-NULL) or gemma4
 * vocabulary. */
static qb_status build_tokenizer_json(tok_ctx *t, tok_mode mode, const gguf_pretok *pre, gguf_tokenizer *out)
{
    int spm = mode == MODE_SPM, blv = mode == MODE_BYTELEVEL;
    cJSON *root = cJSON_CreateObject(), *added, *model, *vocab, *norm = NULL, *dec, *post;
    qb_status st;
    int64_t i;
    int32_t unk = out->unk_id;
    if (!root)
        return t->h->set_error(t->h, QB_E_NOMEM, "%s: out of memory", t->f->path);
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    added = cJSON_AddArrayToObject(root, "added_tokens");
    for (i = 0; i < t->n; i++)
        if (is_added(t->type[i]))
            cJSON_AddItemToArray(added, added_token(t, i, 1));
    if (!blv && unk < 0)
        for (i = 0; i < t->n && unk < 0; i++)
            if (t->type[i] == TT_UNKNOWN)
                unk = (int32_t)i;
    if (spm) {
        int prefix;
        cJSON *seq, *o;
        if ((st = opt_bool(t, "tokenizer.ggml.add_space_prefix", 1, &prefix)))
            goto out;
        /* llama2 tokenizer.json: Prepend("▁") then Replace(" ", "▁");
         * decoder Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0). */
        norm = typed("Sequence");
        seq = cJSON_AddArrayToObject(norm, "normalizers");
        if (prefix) {
            o = typed("Prepend");
            cJSON_AddStringToObject(o, "prepend", "\xe2\x96\x81");
            cJSON_AddItemToArray(seq, o);
        }
        o = typed("Replace");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "pattern"), "String", " ");
        cJSON_AddStringToObject(o, "content", "\xe2\x96\x81");
        cJSON_AddItemToArray(seq, o);
        cJSON_AddItemToObject(root, "normalizer", norm);
        cJSON_AddNullToObject(root, "pre_tokenizer");
        dec = metaspace_decoder(prefix);
    } else if (mode == MODE_GEMMA4) {
        cJSON *o;
        /* llama.cpp for gemma4: escape_whitespaces (every space becomes
         * U+2581, no prefix: add_space_prefix is false for every BPE
         * vocabulary), then regex_exprs "[^\n]+|[\n]+": runs of newlines
         * and the text between them, merged by rank over raw UTF-8
         * (byte_encode false), a symbol without a token written as its
         * <0xXX> byte tokens. */
        o = typed("Replace");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "pattern"), "String", " ");
        cJSON_AddStringToObject(o, "content", "\xe2\x96\x81");
        cJSON_AddItemToObject(root, "normalizer", o);
        o = typed("Split");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "pattern"), "Regex", "[^\\n]+|[\\n]+");
        cJSON_AddStringToObject(o, "behavior", "Isolated");
        cJSON_AddBoolToObject(o, "invert", 0);
        cJSON_AddItemToObject(root, "pre_tokenizer", o);
        dec = metaspace_decoder(0);
    } else {
        if (pre->nfc)
            cJSON_AddItemToObject(root, "normalizer", typed("NFC"));
        else
            cJSON_AddNullToObject(root, "normalizer");
        cJSON_AddItemToObject(root, "pre_tokenizer", pre_tokenizer(pre));
        dec = bytelevel(&pre->dec);
    }
    if (out->add_bos || out->add_eos) {
        cJSON *tp = template_processing(t, out->add_bos ? out->bos_id : -1, out->add_eos ? out->eos_id : -1);
        if (!blv) {
            post = tp;
        } else {
            post = typed("Sequence");
            cJSON_AddItemToArray(cJSON_AddArrayToObject(post, "processors"), bytelevel(&pre->post));
            cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(post, "processors"), tp);
        }
    } else {
        post = !blv ? cJSON_CreateNull() : bytelevel(&pre->post);
    }
    cJSON_AddItemToObject(root, "post_processor", post);
    cJSON_AddItemToObject(root, "decoder", dec);
    model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    /* Byte-level: llama.cpp's BPE session never writes the unknown token,
     * it drops a byte that has no token (llm_tokenizer_bpe_session::
     * tokenize), which is tokenizers' BPE without an unk_token. The GGUF's
     * unknown_token_id (e.g. <|endoftext|> for starcoder, an added token
     * outside model.vocab) stays in tokenizer_config.json only. */
    if (unk >= 0 && !blv)
        cJSON_AddStringToObject(model, "unk_token", t->s[unk]);
    else
        cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddNullToObject(model, "continuing_subword_prefix");
    cJSON_AddNullToObject(model, "end_of_word_suffix");
    cJSON_AddBoolToObject(model, "fuse_unk", !blv);
    cJSON_AddBoolToObject(model, "byte_fallback", !blv);
    cJSON_AddBoolToObject(model, "ignore_merges", blv && pre->ignore_merges);
    vocab = cJSON_AddObjectToObject(model, "vocab");
    /* Byte-level: added tokens live outside the model vocabulary (as in
     * the HF originals); SentencePiece: every piece is in it. [PADn]
     * (unused) entries stay in: they keep ids matching the embedding rows
     * and no pre-token can equal them. */
    for (i = 0; i < t->n; i++)
        if (!blv || !is_added(t->type[i]))
            cJSON_AddNumberToObject(vocab, t->s[i], (double)i);
    if ((st = add_merges(t, model, mode)))
        goto out;
    out->tokenizer_json = cJSON_PrintUnformatted(root);
    if (!out->tokenizer_json)
        st = t->h->set_error(t->h, QB_E_NOMEM, "%s: out of memory printing tokenizer.json", t->f->path);
out:
    cJSON_Delete(root);
    return st;
}

static void add_token_str(cJSON *o, const char *name, const tok_ctx *t, int32_t id)
{
    if (id >= 0)
        cJSON_AddStringToObject(o, name, t->s[id]);
    else
        cJSON_AddNullToObject(o, name);
}

/* Default template plus tokenizer.chat_template.NAME ones: a string, or
 * transformers' list of {"name", "template"} when named ones exist. */
static qb_status add_templates(const tok_ctx *t, cJSON *cfg, int *count)
{
    static const char pfx[] = "tokenizer.chat_template.";
    cJSON *list = cJSON_CreateArray();
    char *def = NULL;
    qb_status st;
    uint64_t i;
    *count = 0;
    st = gguf_kv_string(t->h, t->f, "tokenizer.chat_template", &def);
    if (st && st != QB_E_NOT_FOUND)
        goto out;
    st = QB_OK;
    if (def) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", "default");
        cJSON_AddStringToObject(o, "template", def);
        cJSON_AddItemToArray(list, o);
        ++*count;
    }
    for (i = 0; i < t->f->n_kv; i++) {
        const char *k = t->f->kv[i].key;
        char *v = NULL;
        cJSON *o;
        if (strncmp(k, pfx, sizeof(pfx) - 1) != 0 || !k[sizeof(pfx) - 1])
            continue;
        if ((st = gguf_kv_string(t->h, t->f, k, &v)))
            goto out;
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", k + sizeof(pfx) - 1);
        cJSON_AddStringToObject(o, "template", v);
        cJSON_AddItemToArray(list, o);
        qbk_free(v);
        ++*count;
    }
    if (*count == 1 && def)
        cJSON_AddStringToObject(cfg, "chat_template", def);
    else if (*count > 0) {
        cJSON_AddItemToObject(cfg, "chat_template", list);
        list = NULL;
    }
out:
    qbk_free(def);
    cJSON_Delete(list);
    return st;
}

static qb_status build_config_json(tok_ctx *t, int64_t ctx_len, gguf_tokenizer *out)
{
    cJSON *cfg = cJSON_CreateObject(), *dec;
    qb_status st = QB_OK;
    int64_t i;
    if (!cfg)
        return t->h->set_error(t->h, QB_E_NOMEM, "%s: out of memory", t->f->path);
    if (t->n > 0) {
        cJSON_AddBoolToObject(cfg, "add_bos_token", out->add_bos);
        cJSON_AddBoolToObject(cfg, "add_eos_token", out->add_eos);
        dec = cJSON_AddObjectToObject(cfg, "added_tokens_decoder");
        for (i = 0; i < t->n; i++)
            if (is_added(t->type[i])) {
                char id[24];
                snprintf(id, sizeof(id), "%lld", (long long)i);
                cJSON_AddItemToObject(dec, id, added_token(t, i, 0));
            }
        add_token_str(cfg, "bos_token", t, out->bos_id);
        add_token_str(cfg, "eos_token", t, out->eos_id);
        add_token_str(cfg, "unk_token", t, out->unk_id);
        add_token_str(cfg, "pad_token", t, out->pad_id);
        if (out->n_notes > 0)
            cJSON_AddItemToObject(cfg, "quantbridge_rebuild_notes",
                                  cJSON_CreateStringArray((const char *const *)out->notes, out->n_notes));
        cJSON_AddBoolToObject(cfg, "clean_up_tokenization_spaces", 0);
        if (ctx_len > 0)
            cJSON_AddNumberToObject(cfg, "model_max_length", (double)ctx_len);
        cJSON_AddStringToObject(cfg, "tokenizer_class", "PreTrainedTokenizerFast");
    }
    if ((st = add_templates(t, cfg, &out->n_templates)))
        goto out;
    if (t->n > 0 || out->n_templates > 0) {
        out->tokenizer_config_json = cJSON_Print(cfg);
        if (!out->tokenizer_config_json)
            st = t->h->set_error(t->h, QB_E_NOMEM, "%s: out of memory", t->f->path);
    }
out:
    cJSON_Delete(cfg);
    return st;
}

qb_status gguf_tokenizer_build(const qb_host *h, const gguf_file *f, int64_t ctx_len, gguf_tokenizer *out)
{
    tok_ctx t;
    char *model = NULL, *pre_name = NULL;
    const gguf_pretok *pre = NULL;
    tok_mode mode = MODE_SPM;
    qb_status st;
    memset(&t, 0, sizeof(t));
    memset(out, 0, sizeof(*out));
    out->bos_id = out->eos_id = out->unk_id = out->pad_id = -1;
    t.h = h;
    t.f = f;
    st = gguf_kv_string(h, f, "tokenizer.ggml.model", &model);
    if (st == QB_E_NOT_FOUND) {
        st = build_config_json(&t, ctx_len, out); /* chat templates only */
        goto out;
    }
    if (st)
        goto out;
    snprintf(out->kind, sizeof(out->kind), "%s", model);
    if (strcmp(model, "gpt2") == 0) {
        mode = MODE_BYTELEVEL;
        st = gguf_kv_string(h, f, "tokenizer.ggml.pre", &pre_name);
        if (st == QB_E_NOT_FOUND) {
            /* docs/formats/gguf.md "A gpt2 vocabulary without a pre type":
             * written before llama.cpp stored pre types; llama.cpp itself
             * then splits with its "default" regexes and warns that the
             * model's own split is unknown. */
            st = h->set_error(h, QB_E_UNSUPPORTED,
                              "%s: tokenizer.ggml.model gpt2 without tokenizer.ggml.pre: the file does not say how its "
                              "text was split before the merges (llama.cpp falls back on a guess of its own); remake "
                              "the GGUF with a current convert_hf_to_gguf.py, which writes the pre type (handled: %s)",
                              f->path, gguf_pretok_names());
            goto out;
        }
        if (st)
            goto out;
        snprintf(out->pre, sizeof(out->pre), "%s", pre_name);
        if (!(pre = gguf_pretok_find(pre_name))) {
            st = h->set_error(h, QB_E_UNSUPPORTED,
                              "%s: tokenizer.ggml.pre \"%s\" is not a pre-tokenizer this reader rebuilds (handled: "
                              "%s)",
                              f->path, pre_name, gguf_pretok_names());
            goto out;
        }
    } else if (strcmp(model, "gemma4") == 0) {
        mode = MODE_GEMMA4;
    } else if (strcmp(model, "llama") != 0) {
        st = h->set_error(h, QB_E_UNSUPPORTED,
                          "%s: tokenizer.ggml.model \"%s\" cannot be rebuilt as a Hugging Face tokenizer (handled: "
                          "gpt2, llama, gemma4)",
                          f->path, model);
        goto out;
    }
    st = read_strings(h, f, "tokenizer.ggml.tokens", &t.s, &t.len, &t.n);
    if (st == QB_E_NOT_FOUND || (!st && t.n == 0)) {
        st = h->set_error(h, QB_E_FORMAT, "%s: tokenizer.ggml.model %s without tokenizer.ggml.tokens", f->path, model);
        goto out;
    }
    if (st || (st = read_types_scores(&t)) || (st = index_tokens(&t)))
        goto out;
    out->n_vocab = t.n;
    if ((st = token_id(&t, "tokenizer.ggml.bos_token_id", &out->bos_id)) ||
        (st = token_id(&t, "tokenizer.ggml.eos_token_id", &out->eos_id)) ||
        (st = token_id(&t, "tokenizer.ggml.unknown_token_id", &out->unk_id)) ||
        (st = token_id(&t, "tokenizer.ggml.padding_token_id", &out->pad_id)))
        goto out;
    {
        const int32_t ids[4] = {out->bos_id, out->eos_id, out->unk_id, out->pad_id};
        for (int k = 0; k < 4; k++)
            if (ids[k] >= 0)
                snprintf(out->text[k], sizeof(out->text[k]), "%s", t.s[ids[k]]);
    }
    /* llama.cpp llama_vocab::impl::load defaults: SentencePiece adds BOS;
     * gemma4 always does (it overrides a stated false). */
    if ((st = opt_bool(&t, "tokenizer.ggml.add_bos_token", mode == MODE_SPM, &out->add_bos)) ||
        (st = opt_bool(&t, "tokenizer.ggml.add_eos_token", 0, &out->add_eos)))
        goto out;
    if (mode == MODE_GEMMA4)
        out->add_bos = 1;
    {
        /* llama.cpp appends a SEP token when add_sep_token is set (BERT-style
         * embedding vocabularies); the TemplateProcessing written here adds
         * BOS/EOS only, so such a vocabulary would encode without it. */
        int add_sep = 0;
        if ((st = opt_bool(&t, "tokenizer.ggml.add_sep_token", 0, &add_sep)))
            goto out;
        if (add_sep) {
            st = h->set_error(h, QB_E_UNSUPPORTED,
                              "%s: tokenizer.ggml.add_sep_token is true: a SEP-appending post-processor is not "
                              "rebuilt",
                              f->path);
            goto out;
        }
    }
    if ((out->add_bos && out->bos_id < 0) || (out->add_eos && out->eos_id < 0)) {
        st = h->set_error(h, QB_E_FORMAT, "%s: tokenizer.ggml.add_%s_token without tokenizer.ggml.%s_token_id", f->path,
                          out->add_bos && out->bos_id < 0 ? "bos" : "eos",
                          out->add_bos && out->bos_id < 0 ? "bos" : "eos");
        goto out;
    }
    if ((st = build_tokenizer_json(&t, mode, pre, out)))
        goto out;
    {
        gguf_tok_view v;
        v.s = (const char *const *)t.s;
        v.len = t.len;
        v.type = t.type;
        v.n = t.n;
        v.spm = mode == MODE_SPM;
        v.n_space_merges = t.n_space_merges;
        if ((st = gguf_tokenizer_notes(h, f, &v, out)))
            goto out;
    }
    if ((st = build_config_json(&t, ctx_len, out)))
        goto out;
out:
    free_strings(t.s, t.len);
    qbk_free(t.type);
    qbk_free(t.score);
    qbk_free(t.map);
    qbk_free(model);
    qbk_free(pre_name);
    if (st)
        gguf_tokenizer_free(out);
    return st;
}

void gguf_tokenizer_free(gguf_tokenizer *t)
{
    if (!t)
        return;
    cJSON_free(t->tokenizer_json);
    cJSON_free(t->tokenizer_config_json);
    t->tokenizer_json = t->tokenizer_config_json = NULL;
    for (int i = 0; i < t->n_notes; i++)
        qbk_free(t->notes[i]);
    t->n_notes = 0;
}
