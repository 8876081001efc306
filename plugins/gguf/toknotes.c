/*
 * What a GGUF vocabulary cannot tell the rebuilt tokenizer, said instead
 * of guessed (docs/formats/gguf.md "Tokenizer", "What a GGUF does not
 * store"): one sentence per fact that applies to this vocabulary, naming
 * the token ids. The reader logs them in one warning at open and
 * tokenizer.c writes them into tokenizer_config.json.
 */
#include "gguf_kv.h"
#include "gguf_tokenizer.h"

#include "qbk_alloc.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A note is at most this long (ranges are cut short before it). */
#define NOTE_MAX 1024
/* Ranges of ids named in one list before "and N more". */
#define MAX_RANGES 12

typedef struct text_buf {
    char s[NOTE_MAX];
    size_t len;
} text_buf;

static void put(text_buf *b, const char *fmt, ...)
{
    va_list ap;
    int k;
    if (b->len >= sizeof(b->s) - 1)
        return;
    va_start(ap, fmt);
    k = vsnprintf(b->s + b->len, sizeof(b->s) - b->len, fmt, ap);
    va_end(ap);
    if (k > 0)
        b->len += (size_t)k < sizeof(b->s) - b->len ? (size_t)k : sizeof(b->s) - 1 - b->len;
}

typedef int (*id_pick)(const gguf_tok_view *v, int64_t id);

static int is_added(const gguf_tok_view *v, int64_t id)
{
    return v->type[id] == GGUF_TT_CONTROL || v->type[id] == GGUF_TT_USER || v->type[id] == GGUF_TT_UNKNOWN;
}

static int is_special(const gguf_tok_view *v, int64_t id)
{
    return v->type[id] == GGUF_TT_CONTROL || v->type[id] == GGUF_TT_UNKNOWN;
}

static int is_user(const gguf_tok_view *v, int64_t id)
{
    return v->type[id] == GGUF_TT_USER;
}

static int is_user_space(const gguf_tok_view *v, int64_t id)
{
    return v->type[id] == GGUF_TT_USER && memchr(v->s[id], ' ', v->len[id]) != NULL;
}

/* "0-4, 6-106, 256001-262143" of the ids pick() selects; returns how many. */
static int64_t put_ranges(text_buf *b, const gguf_tok_view *v, id_pick pick)
{
    int64_t i = 0, count = 0, more = 0;
    int shown = 0;
    while (i < v->n) {
        int64_t a;
        if (!pick(v, i)) {
            i++;
            continue;
        }
        a = i;
        while (i + 1 < v->n && pick(v, i + 1))
            i++;
        count += i - a + 1;
        if (shown == MAX_RANGES) {
            more++;
        } else if (a == i) {
            put(b, "%s%lld", shown ? ", " : "", (long long)a);
            shown++;
        } else {
            put(b, "%s%lld-%lld", shown ? ", " : "", (long long)a, (long long)i);
            shown++;
        }
        i++;
    }
    if (more)
        put(b, " and %lld more range(s)", (long long)more);
    return count;
}

static qb_status add_note(const qb_host *h, const gguf_file *f, gguf_tokenizer *out, const text_buf *b)
{
    char *s;
    if (out->n_notes == GGUF_TOK_MAX_NOTES)
        return QB_OK; /* cannot happen: fewer kinds of notes exist */
    if (!(s = qbk_malloc(b->len + 1)))
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", f->path);
    memcpy(s, b->s, b->len + 1);
    out->notes[out->n_notes++] = s;
    return QB_OK;
}

/* The character length when s (n bytes) is one UTF-8 character repeated,
 * else 0. */
static size_t run_char(const char *s, size_t n)
{
    size_t c = 1, i;
    if (!n)
        return 0;
    while (c < n && ((unsigned char)s[c] & 0xC0) == 0x80)
        c++;
    if (n % c)
        return 0;
    for (i = c; i < n; i += c)
        if (memcmp(s, s + i, c) != 0)
            return 0;
    return c;
}

/* One proper prefix of some added token: its text is v->s[id1][0, len). */
typedef struct prefix {
    int64_t id1, id2; /* two different tokens beginning with it (id2 -1: one) */
    int64_t not_run;  /* a token beginning with it that is not one character repeated, or -1 */
    size_t len;
} prefix;

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t x = 1469598103934665603ull;
    while (n--)
        x = (x ^ (uint8_t)*p++) * 1099511628211ull;
    return x;
}

static prefix *prefix_slot(const gguf_tok_view *v, prefix *tab, size_t mask, const char *p, size_t n)
{
    size_t i = (size_t)hash_bytes(p, n) & mask;
    for (; tab[i].id1 >= 0; i = (i + 1) & mask)
        if (tab[i].len == n && memcmp(v->s[tab[i].id1], p, n) == 0)
            break;
    return &tab[i];
}

/* The first pair of added tokens a, b where a proper suffix of a is a
 * proper prefix of b, leaving out two runs of the same character (*a -1:
 * none); *count the number of such (a, suffix) places. Whenever no such
 * pair exists, the leftmost-longest matching of tokenizers'
 * AddedVocabulary and llama.cpp's tokenizer_st_partition (longest token
 * first, each at its leftmost occurrences) cut every text the same way:
 * occurrences of different tokens then either nest or are runs of one
 * character, where both take the longest run from the left. */
static qb_status find_overlap(const qb_host *h, const gguf_file *f, const gguf_tok_view *v, int64_t *a, int64_t *b,
                              size_t *count)
{
    size_t cap = 16, total = 0, mask, k;
    prefix *tab;
    int64_t id;
    *a = *b = -1;
    *count = 0;
    for (id = 0; id < v->n; id++)
        if (is_added(v, id))
            total += v->len[id];
    while (cap < total * 2)
        cap <<= 1;
    if (!(tab = qbk_malloc(cap * sizeof(*tab))))
        return h->set_error(h, QB_E_NOMEM, "%s: out of memory", f->path);
    for (k = 0; k < cap; k++)
        tab[k].id1 = -1;
    mask = cap - 1;
    for (id = 0; id < v->n; id++) {
        int run;
        if (!is_added(v, id))
            continue;
        run = run_char(v->s[id], v->len[id]) != 0;
        for (k = 1; k < v->len[id]; k++) {
            prefix *e;
            if (((unsigned char)v->s[id][k] & 0xC0) == 0x80)
                continue; /* a suffix of valid UTF-8 starts on a character */
            e = prefix_slot(v, tab, mask, v->s[id], k);
            if (e->id1 < 0) {
                e->id1 = id;
                e->id2 = -1;
                e->not_run = -1;
                e->len = k;
            } else if (e->id2 < 0) {
                e->id2 = id;
            }
            if (!run && e->not_run < 0)
                e->not_run = id;
        }
    }
    for (id = 0; id < v->n; id++) {
        size_t c;
        if (!is_added(v, id))
            continue;
        c = run_char(v->s[id], v->len[id]);
        for (k = 1; k < v->len[id]; k++) {
            const prefix *e;
            int64_t other;
            if (((unsigned char)v->s[id][k] & 0xC0) == 0x80)
                continue;
            e = prefix_slot(v, tab, mask, v->s[id] + k, v->len[id] - k);
            if (e->id1 < 0)
                continue;
            /* a run of one character overlaps another run of it harmlessly */
            other = c ? e->not_run : (e->id1 != id ? e->id1 : e->id2);
            if (other < 0)
                continue;
            if (*a < 0) {
                *a = id;
                *b = other;
            }
            ++*count;
        }
    }
    qbk_free(tab);
    return QB_OK;
}

/* The text of token id for a message: quoted, control characters escaped,
 * cut at 40 bytes. */
static void put_token(text_buf *b, const gguf_tok_view *v, int64_t id)
{
    size_t i, n = v->len[id] < 40 ? v->len[id] : 40;
    put(b, "%lld \"", (long long)id);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v->s[id][i];
        if (c == '\n')
            put(b, "\\n");
        else if (c == '\t')
            put(b, "\\t");
        else if (c < 0x20 || c == '"' || c == '\\')
            put(b, "\\x%02x", c);
        else
            put(b, "%c", c);
    }
    put(b, "%s\"", n < v->len[id] ? "..." : "");
}

/* *hit: general.name picks llama.cpp's name-based token attributes for
 * phi-3 (llama_vocab::impl::load: the lower-cased name contains "phi-3"
 * or "phi3"). */
static qb_status phi3_named(const qb_host *h, const gguf_file *f, int *hit)
{
    const gguf_kv *kv = gguf_kv_find(f, "general.name");
    char *name = NULL;
    qb_status st;
    *hit = 0;
    if (!kv || kv->type != GGUF_VT_STRING)
        return QB_OK; /* llama.cpp reads an absent name as "" */
    if ((st = gguf_kv_string(h, f, "general.name", &name)))
        return st;
    for (char *p = name; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    *hit = strstr(name, "phi-3") || strstr(name, "phi3");
    qbk_free(name);
    return QB_OK;
}

qb_status gguf_tokenizer_notes(const qb_host *h, const gguf_file *f, const gguf_tok_view *v, gguf_tokenizer *out)
{
    text_buf b;
    int64_t n_added = 0, id, oa, ob;
    size_t n_overlap;
    int phi3;
    qb_status st;

    for (id = 0; id < v->n; id++)
        n_added += is_added(v, id);
    if (n_added == 0)
        return QB_OK;
    memset(&b, 0, sizeof(b));
    put(&b, "added tokens (control/unknown ");
    if (!put_ranges(&b, v, is_special))
        put(&b, "none");
    put(&b, "; user-defined ");
    if (!put_ranges(&b, v, is_user))
        put(&b, "none");
    put(&b, "): a GGUF stores their token type, not Hugging Face's added-token flags, so they are written "
             "special true for control/unknown and false for user-defined, and lstrip, rstrip, single_word "
             "and normalized false: matched on the raw text, as llama.cpp's tokenizer matches them");
    if ((st = add_note(h, f, out, &b)))
        return st;

    memset(&b, 0, sizeof(b));
    put(&b, "user-defined tokens ");
    if (put_ranges(&b, v, is_user_space)) {
        put(&b, " hold literal spaces: llama.cpp's converter writes the U+2581 of a user-defined token as a space, "
                 "so their original form is not in the GGUF; they are matched as added tokens on the raw text, as "
                 "llama.cpp does");
        if (v->spm && v->n_space_merges)
            put(&b, ", and the %zu merge%s of pieces holding a space %s left out (the normalizer's "
                     "Replace(\" \", \"\xe2\x96\x81\") leaves no space for them to apply to)",
                v->n_space_merges, v->n_space_merges == 1 ? "" : "s", v->n_space_merges == 1 ? "is" : "are");
        if ((st = add_note(h, f, out, &b)))
            return st;
    }

    if ((st = find_overlap(h, f, v, &oa, &ob, &n_overlap)))
        return st;
    if (oa >= 0) {
        memset(&b, 0, sizeof(b));
        put(&b, "added tokens ");
        put_token(&b, v, oa);
        put(&b, " and ");
        put_token(&b, v, ob);
        if (n_overlap > 1)
            put(&b, " (and %zu more such places)", n_overlap - 1);
        put(&b, " overlap: the rebuilt tokenizer matches added tokens leftmost-longest (tokenizers' "
                 "AddedVocabulary), llama.cpp tries the longer token first (tokenizer_st_partition), so a text "
                 "where both match across each other encodes differently");
        if ((st = add_note(h, f, out, &b)))
            return st;
    }

    if ((st = phi3_named(h, f, &phi3)))
        return st;
    if (phi3) {
        memset(&b, 0, sizeof(b));
        put(&b, "general.name names a phi-3 model: llama.cpp strips the whitespace after its control and "
                 "user-defined tokens (except <unk>, <s>, <|endoftext|>) by that name, which a GGUF does not "
                 "store as data; the rebuild writes rstrip false, so whitespace after such a token encodes "
                 "differently from llama.cpp");
        if ((st = add_note(h, f, out, &b)))
            return st;
    }
    return QB_OK;
}
