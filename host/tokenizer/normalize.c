/*
 * quantbridge tokenizer — tokenizer.json normalizers (tok.h): Prepend,
 * Replace and the Unicode normalization forms, applied in order to the
 * text between added tokens, as tokenizers' normalizers do.
 */
#include "tok.h"

#include <assert.h>
#include <string.h>

void qbh_tok_normalize(const qbh_tok *t, GString *s)
{
    guint i;
    assert(t && s);
    for (i = 0; i < t->norms->len; i++) {
        const qbh_tok_norm *n = &g_array_index(t->norms, qbh_tok_norm, i);
        char *r = NULL;
        switch (n->kind) {
        case QBH_TOK_N_PREPEND:
            /* tokenizers' Prepend leaves an empty string empty. */
            if (s->len)
                g_string_prepend(s, n->a);
            break;
        case QBH_TOK_N_REPLACE:
            r = g_regex_replace_literal(n->rx, s->str, (gssize)s->len, 0, n->a, 0, NULL);
            break;
        case QBH_TOK_N_UNICODE:
            r = g_utf8_normalize(s->str, (gssize)s->len, n->mode);
            break;
        }
        if (r) {
            g_string_assign(s, r);
            g_free(r);
        }
    }
}
