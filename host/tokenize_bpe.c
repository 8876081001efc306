/*
 * quantbridge host — the BPE model of tokenize.h: one pre-token to ids.
 * The rules are tokenizers' BPE (models/bpe/model.rs merge_word and
 * word.rs merge_all), docs/forward.md "Text".
 */
#include "tokenize.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

int64_t qbh_tok_vocab_id(const qbh_tok *t, const char *s)
{
    gpointer v = g_hash_table_lookup(t->vocab, s);
    return v ? (int64_t)GPOINTER_TO_INT(v) - 1 : -1;
}

static const qbh_tok_merge *merge_of(const qbh_tok *t, int64_t a, int64_t b)
{
    gint64 key = (gint64)((uint64_t)a << 32 | (uint64_t)b);
    return g_hash_table_lookup(t->merge_index, &key);
}

/* The character c (n bytes) as symbols: its token, its bytes' <0xNN>
 * tokens (byte_fallback, only when all exist), or unk. */
static qb_status add_char(const qbh_tok *t, const char *c, size_t n, GArray *sym, int *prev_unk)
{
    char buf[8];
    int64_t id;
    size_t i;

    assert(n < sizeof buf);
    memcpy(buf, c, n);
    buf[n] = 0;
    if ((id = qbh_tok_vocab_id(t, buf)) >= 0) {
        g_array_append_val(sym, id);
        *prev_unk = 0;
        return QB_OK;
    }
    if (t->byte_fallback) {
        int64_t b[4];
        for (i = 0; i < n; i++) {
            snprintf(buf, sizeof buf, "<0x%02X>", (unsigned char)c[i]);
            if ((b[i] = qbh_tok_vocab_id(t, buf)) < 0)
                break;
        }
        if (i == n) {
            g_array_append_vals(sym, b, (guint)n);
            *prev_unk = 0;
            return QB_OK;
        }
    }
    if (t->unk < 0) {
        memcpy(buf, c, n);
        buf[n] = 0;
        return qbh_error_set(QB_E_UNSUPPORTED, "%s: the character \"%s\" has no token and the "
                             "model has no unk_token (the tokenizers library would drop it)",
                             t->what, buf);
    }
    /* fuse_unk: consecutive unknown characters become one unk. */
    if (!(t->fuse_unk && *prev_unk))
        g_array_append_val(sym, t->unk);
    *prev_unk = 1;
    return QB_OK;
}

qb_status qbh_tok_bpe_word(const qbh_tok *t, const char *word, size_t len, GArray *ids)
{
    GArray *sym;
    const char *p = word, *end = word + len;
    int prev_unk = 0;
    qb_status rc = QB_OK;

    assert(t && word && len && ids);
    if (t->ignore_merges) {
        char *w = g_strndup(word, len);
        int64_t id = qbh_tok_vocab_id(t, w);
        g_free(w);
        if (id >= 0) {
            g_array_append_val(ids, id);
            return QB_OK;
        }
    }
    sym = g_array_sized_new(FALSE, FALSE, sizeof(int64_t), (guint)len);
    while (p < end) {
        const char *q = g_utf8_next_char(p);
        if ((rc = add_char(t, p, (size_t)(q - p), sym, &prev_unk)))
            goto out;
        p = q;
    }
    /* Repeatedly the pair of lowest rank, the leftmost of equals: what
     * merge_all's queue ordered by (rank, position) pops. */
    for (;;) {
        const qbh_tok_merge *best = NULL;
        guint i, at = 0;
        for (i = 0; i + 1 < sym->len; i++) {
            const qbh_tok_merge *m = merge_of(t, g_array_index(sym, int64_t, i),
                                              g_array_index(sym, int64_t, i + 1));
            if (m && (!best || m->rank < best->rank)) {
                best = m;
                at = i;
            }
        }
        if (!best)
            break;
        g_array_index(sym, int64_t, at) = best->id;
        g_array_remove_index(sym, at + 1);
    }
    g_array_append_vals(ids, sym->data, sym->len);
out:
    g_array_free(sym, TRUE);
    return rc;
}
