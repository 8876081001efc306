/*
 * quantbridge tokenizer — the BPE model of tok.h: one pre-token to ids.
 * The rules are tokenizers' BPE (models/bpe/model.rs merge_word and
 * word.rs merge_all), docs/forward.md "Text".
 */
#include "tok.h"

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
        return t->h->set_error(t->h, QB_E_UNSUPPORTED,
                               "%s: the character \"%s\" has no token and the "
                               "model has no unk_token (the tokenizers library would drop it)",
                               t->what, buf);
    }
    /* fuse_unk: consecutive unknown characters become one unk. */
    if (!(t->fuse_unk && *prev_unk))
        g_array_append_val(sym, t->unk);
    *prev_unk = 1;
    return QB_OK;
}

/* One symbol of the word being merged (tokenizers' word.rs Symbol). */
typedef struct sym {
    int64_t id;
    int prev, next; /* neighbours, -1 at the ends */
    int alive;      /* 0 once merged into its left neighbour */
} sym;

/* A queued merge (tokenizers' word.rs Merge): the lowest rank first, then
 * the leftmost position. */
typedef struct qmerge {
    int32_t rank, id;
    int pos;
} qmerge;

static int qless(const qmerge *a, const qmerge *b)
{
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void qpush(GArray *q, qmerge m)
{
    guint i;
    g_array_append_val(q, m);
    for (i = q->len - 1; i > 0;) {
        guint up = (i - 1) / 2;
        qmerge *a = &g_array_index(q, qmerge, i), *b = &g_array_index(q, qmerge, up);
        if (!qless(a, b))
            break;
        qmerge x = *a;
        *a = *b;
        *b = x;
        i = up;
    }
}

static qmerge qpop(GArray *q)
{
    qmerge top = g_array_index(q, qmerge, 0);
    guint i = 0, n = q->len - 1;
    g_array_index(q, qmerge, 0) = g_array_index(q, qmerge, n);
    g_array_set_size(q, n);
    for (;;) {
        guint l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && qless(&g_array_index(q, qmerge, l), &g_array_index(q, qmerge, m)))
            m = l;
        if (r < n && qless(&g_array_index(q, qmerge, r), &g_array_index(q, qmerge, m)))
            m = r;
        if (m == i)
            break;
        qmerge x = g_array_index(q, qmerge, i);
        g_array_index(q, qmerge, i) = g_array_index(q, qmerge, m);
        g_array_index(q, qmerge, m) = x;
        i = m;
    }
    return top;
}

/* Queues the merge of the pair starting at symbol `pos`, when there is one. */
static void queue_pair(const qbh_tok *t, const sym *w, int pos, GArray *q)
{
    const qbh_tok_merge *m;
    if (pos < 0 || w[pos].next < 0)
        return;
    if ((m = merge_of(t, w[pos].id, w[w[pos].next].id))) {
        qmerge x = {m->rank, m->id, pos};
        qpush(q, x);
    }
}

qb_status qbh_tok_bpe_word(const qbh_tok *t, const char *word, size_t len, GArray *ids)
{
    GArray *sy, *q;
    sym *w;
    const char *p = word, *end = word + len;
    int prev_unk = 0, i, n;
    qb_status rc = QB_OK;

    assert(t && word && len && ids);
    if (t->ignore_merges) {
        char *ws = g_strndup(word, len);
        int64_t id = qbh_tok_vocab_id(t, ws);
        g_free(ws);
        if (id >= 0) {
            g_array_append_val(ids, id);
            return QB_OK;
        }
    }
    sy = g_array_sized_new(FALSE, FALSE, sizeof(int64_t), (guint)len);
    while (p < end) {
        const char *c = g_utf8_next_char(p);
        if ((rc = add_char(t, p, (size_t)(c - p), sy, &prev_unk))) {
            g_array_free(sy, TRUE);
            return rc;
        }
        p = c;
    }
    n = (int)sy->len;
    w = g_new(sym, n ? n : 1);
    for (i = 0; i < n; i++) {
        w[i].id = g_array_index(sy, int64_t, i);
        w[i].prev = i - 1;
        w[i].next = i + 1 < n ? i + 1 : -1;
        w[i].alive = 1;
    }
    /* tokenizers' merge_all: a queue of every pair's merge ordered by
     * (rank, position); a popped entry whose pair has changed since is
     * skipped unless the pair there now merges into the same token (its
     * check compares the new id, not the rank), and each merge queues the
     * pairs it forms with its neighbours. O(n log n) in the word. */
    q = g_array_sized_new(FALSE, FALSE, sizeof(qmerge), (guint)(n ? n : 1));
    for (i = 0; i + 1 < n; i++)
        queue_pair(t, w, i, q);
    while (q->len) {
        qmerge top = qpop(q);
        const qbh_tok_merge *m;
        int right;
        if (!w[top.pos].alive || (right = w[top.pos].next) < 0)
            continue;
        m = merge_of(t, w[top.pos].id, w[right].id);
        if (!m || m->id != top.id)
            continue;
        w[top.pos].id = top.id;
        w[top.pos].next = w[right].next;
        w[right].alive = 0;
        if (w[right].next >= 0)
            w[w[right].next].prev = top.pos;
        queue_pair(t, w, w[top.pos].prev, q);
        queue_pair(t, w, top.pos, q);
    }
    for (i = 0; i < n; i++)
        if (w[i].alive)
            g_array_append_val(ids, w[i].id);
    g_array_free(q, TRUE);
    g_array_free(sy, TRUE);
    g_free(w);
    return QB_OK;
}
