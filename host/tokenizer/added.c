/*
 * quantbridge tokenizer — finding added tokens in a text (tok.h), before
 * any other step sees it: tokenizers' AddedVocabulary matches them
 * leftmost-longest (one Aho-Corasick automaton per kind: those matched on
 * the raw text, normalized == false, and those matched after the
 * normalizer, normalized == true, whose patterns it normalizes too), then
 * widens a match over whitespace for lstrip / rstrip. Here one byte trie
 * per kind: from each position the longest pattern is the deepest
 * terminal node on the walk, so a vocabulary's thousands of added tokens
 * (Gemma: 6414) cost a few steps per position, not one compare each.
 */
#include "tok.h"

#include <assert.h>
#include <string.h>

static size_t slot_of(const qbh_tok_trie *tr, uint64_t key)
{
    uint64_t x = key * UINT64_C(0x9e3779b97f4a7c15);
    size_t i = (size_t)(x >> 29) & tr->mask;
    while (tr->key[i] && tr->key[i] != key)
        i = (i + 1) & tr->mask;
    return i;
}

/* The child of `node` by byte b, or -1. */
static int32_t child_of(const qbh_tok_trie *tr, int32_t node, unsigned char b)
{
    uint64_t key = (uint64_t)(node + 1) << 8 | b;
    size_t i = slot_of(tr, key);
    return tr->key[i] ? tr->child[i] : -1;
}

static void insert(qbh_tok_trie *tr, const char *p, size_t n, int32_t index)
{
    int32_t node = 0;
    size_t k;
    for (k = 0; k < n; k++) {
        uint64_t key = (uint64_t)(node + 1) << 8 | (unsigned char)p[k];
        size_t i = slot_of(tr, key);
        if (!tr->key[i]) {
            tr->key[i] = key;
            tr->child[i] = (int32_t)tr->n_nodes;
            tr->term[tr->n_nodes++] = -1;
        }
        node = tr->child[i];
    }
    if (tr->term[node] < 0) /* a shared pattern: the first token in file order */
        tr->term[node] = index;
}

static void build(qbh_tok *t, int normalized, qbh_tok_trie *tr)
{
    GPtrArray *pat = g_ptr_array_new_with_free_func(g_free);
    size_t k, bytes = 0, cap = 16;
    int32_t *which = g_new(int32_t, t->n_added + 1);

    memset(tr, 0, sizeof *tr);
    for (k = 0; k < t->n_added; k++) {
        GString *s;
        if (t->added[k].normalized != normalized)
            continue;
        s = g_string_new_len(t->added[k].content, (gssize)t->added[k].len);
        if (normalized)
            qbh_tok_normalize(t, s);
        if (!s->len) { /* nothing to match */
            g_string_free(s, TRUE);
            continue;
        }
        bytes += s->len;
        which[pat->len] = (int32_t)k;
        g_ptr_array_add(pat, g_string_free(s, FALSE));
    }
    if (pat->len) {
        while (cap < 2 * bytes)
            cap <<= 1;
        tr->key = g_new0(uint64_t, cap);
        tr->child = g_new(int32_t, cap);
        tr->mask = cap - 1;
        tr->term = g_new(int32_t, bytes + 1);
        tr->term[0] = -1;
        tr->n_nodes = 1;
        for (k = 0; k < pat->len; k++) {
            const char *p = g_ptr_array_index(pat, k);
            insert(tr, p, strlen(p), which[k]);
        }
    }
    g_free(which);
    g_ptr_array_free(pat, TRUE);
}

void qbh_tok_added_index(qbh_tok *t)
{
    assert(t);
    build(t, 0, &t->added_trie[0]);
    build(t, 1, &t->added_trie[1]);
}

void qbh_tok_added_free(qbh_tok *t)
{
    int i;
    for (i = 0; i < 2; i++) {
        g_free(t->added_trie[i].key);
        g_free(t->added_trie[i].child);
        g_free(t->added_trie[i].term);
        memset(&t->added_trie[i], 0, sizeof t->added_trie[i]);
    }
}

long qbh_tok_added_find(const qbh_tok *t, int normalized, const char *s, size_t len, size_t from,
                        size_t *start, size_t *end)
{
    const qbh_tok_trie *tr;
    size_t pos;
    assert(t && s && start && end);
    tr = &t->added_trie[normalized ? 1 : 0];
    if (!tr->n_nodes)
        return -1;
    for (pos = from; pos < len; pos++) {
        long best = -1;
        size_t best_end = pos, i;
        int32_t node = 0;
        for (i = pos; i < len; i++) {
            if ((node = child_of(tr, node, (unsigned char)s[i])) < 0)
                break;
            if (tr->term[node] >= 0) {
                best = tr->term[node];
                best_end = i + 1;
            }
        }
        if (best >= 0) {
            const qbh_tok_added *a = &t->added[best];
            size_t b = pos, e = best_end;
            if (a->lstrip)
                while (b > from) {
                    const char *p = g_utf8_find_prev_char(s + from, s + b);
                    if (!p || !g_unichar_isspace(g_utf8_get_char(p)))
                        break;
                    b = (size_t)(p - s);
                }
            if (a->rstrip)
                while (e < len && g_unichar_isspace(g_utf8_get_char(s + e)))
                    e = (size_t)(g_utf8_next_char(s + e) - s);
            *start = b;
            *end = e;
            return best;
        }
    }
    return -1;
}
