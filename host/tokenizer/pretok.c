/*
 * quantbridge tokenizer — tokenizer.json pre-tokenizers (tok.h): Split
 * (by regex or string, tokenizers' five SplitDelimiterBehaviors),
 * ByteLevel (GPT-2's byte -> character map, optionally its regex) and
 * Metaspace; Digits is loaded as a Split. docs/forward.md, "Text".
 */
#include "tok.h"

#include <assert.h>
#include <string.h>

typedef struct part {
    size_t a, b;
    int match;
} part;

void qbh_tok_split(const GRegex *rx, qbh_tok_behavior behavior, const char *s, size_t len,
                   GPtrArray *out)
{
    GArray *parts = g_array_new(FALSE, FALSE, sizeof(part)), *merged;
    GMatchInfo *mi = NULL;
    size_t prev = 0;
    guint i;
    int prev_match = 0;

    assert(rx && s && out);
    g_regex_match_full(rx, s, (gssize)len, 0, 0, &mi, NULL);
    while (g_match_info_matches(mi)) {
        int a, b;
        g_match_info_fetch_pos(mi, 0, &a, &b);
        if (b > a) { /* tokenizers keeps no empty piece */
            part p = {prev, (size_t)a, 0}, m = {(size_t)a, (size_t)b, 1};
            if ((size_t)a > prev)
                g_array_append_val(parts, p);
            g_array_append_val(parts, m);
            prev = (size_t)b;
        }
        g_match_info_next(mi, NULL);
    }
    g_match_info_free(mi);
    if (prev < len) {
        part p = {prev, len, 0};
        g_array_append_val(parts, p);
    }
    /* The folds of tokenizers' NormalizedString::split. */
    merged = g_array_new(FALSE, FALSE, sizeof(part));
    if (behavior == QBH_TOK_S_MERGED_NEXT) {
        for (i = parts->len; i-- > 0;) {
            part p = g_array_index(parts, part, i);
            if (p.match && !prev_match && merged->len)
                g_array_index(merged, part, merged->len - 1).a = p.a;
            else
                g_array_append_val(merged, p);
            prev_match = p.match;
        }
        for (i = 0; i < merged->len / 2; i++) {
            part x = g_array_index(merged, part, i);
            g_array_index(merged, part, i) = g_array_index(merged, part, merged->len - 1 - i);
            g_array_index(merged, part, merged->len - 1 - i) = x;
        }
    } else {
        for (i = 0; i < parts->len; i++) {
            part p = g_array_index(parts, part, i);
            part *last = merged->len ? &g_array_index(merged, part, merged->len - 1) : NULL;
            if (behavior == QBH_TOK_S_REMOVED && p.match)
                ;
            else if (behavior == QBH_TOK_S_MERGED_PREV && p.match && !prev_match && last)
                last->b = p.b;
            else if (behavior == QBH_TOK_S_CONTIGUOUS && i > 0 && p.match == prev_match && last)
                last->b = p.b;
            else
                g_array_append_val(merged, p);
            prev_match = p.match;
        }
    }
    for (i = 0; i < merged->len; i++) {
        part p = g_array_index(merged, part, i);
        if (p.b > p.a)
            g_ptr_array_add(out, g_string_new_len(s + p.a, (gssize)(p.b - p.a)));
    }
    g_array_free(merged, TRUE);
    g_array_free(parts, TRUE);
}

static gsize byte_chars_once;
static char byte_chars[256][3];

const char *qbh_tok_byte_char(unsigned b)
{
    assert(b < 256);
    if (g_once_init_enter(&byte_chars_once)) {
        /* GPT-2's bytes_to_unicode: the printable bytes '!'..'~',
         * 0xA1..0xAC and 0xAE..0xFF stand for themselves; the others, in
         * order, for U+0100, U+0101, ... */
        unsigned n = 0, c;
        for (c = 0; c < 256; c++) {
            unsigned cp = (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE
                              ? c : 256 + n++;
            g_unichar_to_utf8((gunichar)cp, byte_chars[c]);
        }
        g_once_init_leave(&byte_chars_once, 1);
    }
    return byte_chars[b];
}

static void push(GArray *to, GString *s, int at_origin)
{
    qbh_tok_piece p;
    if (!s->len) {
        g_string_free(s, TRUE);
        return;
    }
    p.s = s;
    p.at_origin = at_origin;
    g_array_append_val(to, p);
}

/* One pre-tokenizer over one piece, appending what it becomes to `to`. */
static void step(const qbh_tok_pre *x, qbh_tok_piece in, GArray *to)
{
    GPtrArray *parts = g_ptr_array_new();
    GString *s = in.s;
    guint i;

    switch (x->kind) {
    case QBH_TOK_P_SPLIT:
        qbh_tok_split(x->rx, x->behavior, s->str, s->len, parts);
        g_string_free(s, TRUE);
        break;
    case QBH_TOK_P_BYTELEVEL:
        /* tokenizers' ByteLevel prefixes every piece not starting with a
         * space, not only the first. */
        if (x->add_prefix_space && s->str[0] != ' ')
            g_string_prepend_c(s, ' ');
        if (x->rx) {
            qbh_tok_split(x->rx, QBH_TOK_S_ISOLATED, s->str, s->len, parts);
            g_string_free(s, TRUE);
        } else {
            g_ptr_array_add(parts, s);
        }
        for (i = 0; i < parts->len; i++) {
            GString *p = parts->pdata[i], *m = g_string_sized_new(p->len * 2);
            size_t k;
            for (k = 0; k < p->len; k++)
                g_string_append(m, qbh_tok_byte_char((unsigned char)p->str[k]));
            g_string_free(p, TRUE);
            parts->pdata[i] = m;
        }
        break;
    case QBH_TOK_P_METASPACE: {
        gchar **sp = g_strsplit(s->str, " ", -1);
        char *r = g_strjoinv(x->replacement, sp);
        g_strfreev(sp);
        g_string_assign(s, r);
        g_free(r);
        if ((x->prepend == 1 || (x->prepend == 2 && in.at_origin)) &&
            strncmp(s->str, x->replacement, strlen(x->replacement)) != 0)
            g_string_prepend(s, x->replacement);
        if (x->split) {
            qbh_tok_split(x->rx, QBH_TOK_S_MERGED_NEXT, s->str, s->len, parts);
            g_string_free(s, TRUE);
        } else {
            g_ptr_array_add(parts, s);
        }
        break;
    }
    }
    for (i = 0; i < parts->len; i++)
        push(to, parts->pdata[i], in.at_origin && i == 0);
    g_ptr_array_free(parts, TRUE);
}

void qbh_tok_pretokenize(const qbh_tok *t, GArray **pieces)
{
    guint i, k;
    assert(t && pieces && *pieces);
    for (i = 0; i < t->pres->len; i++) {
        const qbh_tok_pre *x = &g_array_index(t->pres, qbh_tok_pre, i);
        GArray *next = g_array_new(FALSE, FALSE, sizeof(qbh_tok_piece));
        for (k = 0; k < (*pieces)->len; k++)
            step(x, g_array_index(*pieces, qbh_tok_piece, k), next);
        g_array_free(*pieces, TRUE);
        *pieces = next;
    }
}
