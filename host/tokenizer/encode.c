/*
 * quantbridge tokenizer — text to token ids (tok.h), in the order of
 * tokenizers' Tokenizer::encode: added tokens on the raw text split it
 * first; each stretch between them is normalized, split again on the
 * added tokens matched after normalization, pre-tokenized and
 * BPE-encoded; the post-processor's template tokens go around the whole.
 */
#include "tok.h"

#include <assert.h>
#include <string.h>

/* A stretch after normalization: pre-tokenized, then BPE. */
static qb_status encode_piece(const qbh_tok *t, const char *s, size_t len, int at_origin,
                              GArray *out)
{
    GArray *pieces = g_array_new(FALSE, FALSE, sizeof(qbh_tok_piece));
    qbh_tok_piece p;
    qb_status rc = QB_OK;
    guint i;

    p.s = g_string_new_len(s, (gssize)len);
    p.at_origin = at_origin;
    g_array_append_val(pieces, p);
    qbh_tok_pretokenize(t, &pieces);
    for (i = 0; i < pieces->len; i++) {
        qbh_tok_piece *x = &g_array_index(pieces, qbh_tok_piece, i);
        if (!rc)
            rc = qbh_tok_bpe_word(t, x->s->str, x->s->len, out);
        g_string_free(x->s, TRUE);
    }
    g_array_free(pieces, TRUE);
    return rc;
}

/* A stretch of the raw text between added tokens. */
static qb_status encode_segment(const qbh_tok *t, const char *s, size_t len, int at_origin,
                                GArray *out)
{
    GString *n;
    size_t pos = 0;
    qb_status rc = QB_OK;

    if (!len)
        return QB_OK;
    n = g_string_new_len(s, (gssize)len);
    qbh_tok_normalize(t, n);
    for (;;) {
        size_t a, b;
        long k = qbh_tok_added_find(t, 1, n->str, n->len, pos, &a, &b);
        size_t stop = k >= 0 ? a : n->len;
        if (stop > pos && (rc = encode_piece(t, n->str + pos, stop - pos, at_origin && pos == 0,
                                             out)))
            break;
        if (k < 0)
            break;
        g_array_append_val(out, t->added[k].id);
        pos = b;
    }
    g_string_free(n, TRUE);
    return rc;
}

qb_status qbh_tok_encode(const qbh_tok *t, const char *text, size_t len, int add_special,
                         int64_t **ids, size_t *n)
{
    GArray *out;
    size_t pos = 0;
    qb_status rc = QB_OK;

    assert(t && (text || !len) && ids && n);
    *ids = NULL;
    *n = 0;
    if (len && !g_utf8_validate_len(text, len, NULL))
        return t->h->set_error(t->h, QB_E_INVALID,
                               "the text to tokenize is not valid UTF-8 (or holds a "
                               "NUL byte)");
    out = g_array_new(FALSE, FALSE, sizeof(int64_t));
    if (add_special)
        g_array_append_vals(out, t->before->data, t->before->len);
    for (;;) {
        size_t a, b;
        long k = qbh_tok_added_find(t, 0, text, len, pos, &a, &b);
        size_t stop = k >= 0 ? a : len;
        if ((rc = encode_segment(t, text + pos, stop - pos, pos == 0, out)))
            goto out;
        if (k < 0)
            break;
        g_array_append_val(out, t->added[k].id);
        pos = b;
    }
    if (add_special)
        g_array_append_vals(out, t->after->data, t->after->len);
    if (out->len) {
        *ids = t->h->alloc(t->h, out->len * sizeof **ids);
        if (!*ids) {
            rc = t->h->set_error(t->h, QB_E_NOMEM, "out of memory");
            goto out;
        }
        memcpy(*ids, out->data, out->len * sizeof **ids);
        *n = out->len;
    }
out:
    g_array_free(out, TRUE);
    return rc;
}

qb_status qbh_tok_encode_text(const qb_host *h, const char *dir, const char *text, int64_t **ids,
                              size_t *n)
{
    qbh_tok *t = NULL;
    qb_status rc;

    assert(dir && text && ids && n);
    *ids = NULL;
    *n = 0;
    if ((rc = qbh_tok_load(h, dir, &t)))
        return rc;
    rc = qbh_tok_encode(t, text, strlen(text), 1, ids, n);
    qbh_tok_free(t);
    return rc;
}
