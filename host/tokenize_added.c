/*
 * quantbridge host — finding added tokens in a text (tokenize.h), before
 * any other step sees it: tokenizers' AddedVocabulary matches them
 * leftmost-longest (one Aho-Corasick automaton per kind: those matched on
 * the raw text, normalized == false, and those matched after the
 * normalizer, normalized == true), then widens a match over whitespace
 * for lstrip / rstrip.
 */
#include "tokenize.h"

#include <assert.h>
#include <string.h>

long qbh_tok_added_find(const qbh_tok *t, int normalized, const char *s, size_t len, size_t from,
                        size_t *start, size_t *end)
{
    size_t pos, k;
    assert(t && s && start && end);
    for (pos = from; pos < len; pos++) {
        long best = -1;
        for (k = 0; k < t->n_added; k++) {
            const qbh_tok_added *a = &t->added[k];
            if (a->normalized != normalized || a->len > len - pos || a->content[0] != s[pos] ||
                memcmp(a->content, s + pos, a->len) != 0)
                continue;
            if (best < 0 || a->len > t->added[best].len)
                best = (long)k;
        }
        if (best >= 0) {
            const qbh_tok_added *a = &t->added[best];
            size_t b = pos, e = pos + a->len;
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
