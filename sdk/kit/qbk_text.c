/* A growable text buffer for hand-written JSON. See qbk_text.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_text.h"
#include "qbk_alloc.h"

void qbk_text_put(qbk_text *b, const char *s, size_t len)
{
    if (b->oom)
        return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        char *np;
        while (cap < b->n + len + 1)
            cap *= 2;
        np = qbk_realloc(b->p, cap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
}

void qbk_text_str(qbk_text *b, const char *s)
{
    qbk_text_put(b, s, strlen(s));
}

void qbk_text_json_str(qbk_text *b, const char *s)
{
    qbk_text_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char tmp[8];
        if (c == '"' || c == '\\') {
            tmp[0] = '\\';
            tmp[1] = (char)c;
            qbk_text_put(b, tmp, 2);
        } else if (c < 0x20) {
            snprintf(tmp, sizeof tmp, "\\u%04x", c);
            qbk_text_put(b, tmp, 6);
        } else {
            qbk_text_put(b, (const char *)&c, 1);
        }
    }
    qbk_text_put(b, "\"", 1);
}

void qbk_text_u64(qbk_text *b, uint64_t v)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    qbk_text_str(b, tmp);
}

void qbk_text_free(qbk_text *b)
{
    qbk_free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
    b->oom = 0;
}
