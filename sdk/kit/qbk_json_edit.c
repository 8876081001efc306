/*
 * Editing the top level of a JSON object while keeping
 * every other member's text byte for byte.
 *
 * Why not parse and print: a JSON library keeps numbers as doubles, so
 * "rope_theta": 500000.0 would come back as 500000 and a tokenizer's
 * "model_max_length": 1000000000000000019884624838656 as 1e+30 — the
 * types transformers' config validation looks at (it warns when
 * rope_scaling.factor is not a float) and integers beyond 2^53 would
 * change. The input is parsed strictly first (qbk_json.h), so the scanner
 * below only has to find member boundaries in text known to be valid JSON.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "qbk_json.h"
#include "qbk_json_edit.h"
#include "qbk_text.h"

static const char *qbk_je_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* p at '"': returns the position after the closing quote. */
static const char *qbk_je_skip_string(const char *p)
{
    for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1])
            p++;
    return *p ? p + 1 : p;
}

/* p at a value: returns the position after it. */
static const char *qbk_je_skip_value(const char *p)
{
    int depth = 0;
    if (*p == '"')
        return qbk_je_skip_string(p);
    if (*p != '{' && *p != '[') {
        while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' &&
               *p != '\n' && *p != '\r')
            p++;
        return p;
    }
    do {
        if (*p == '"') {
            p = qbk_je_skip_string(p);
            continue;
        }
        if (*p == '{' || *p == '[')
            depth++;
        else if (*p == '}' || *p == ']')
            depth--;
        p++;
    } while (*p && depth > 0);
    return p;
}

/* Index of the key text [k, k+len) (between quotes, raw) in names, or -1. */
static int qbk_je_key_in(const char *k, size_t len, const char *const *names)
{
    int i;
    for (i = 0; names && names[i]; i++)
        if (strlen(names[i]) == len && memcmp(names[i], k, len) == 0)
            return i;
    return -1;
}

/* 1 when `text` is an object holding every member of `orig` not dropped
 * or set, equal to the original, and every key set; 0 when it is not; -1
 * when parsing it ran out of memory. */
static int qbk_je_edit_ok(const cJSON *orig, const char *text, const char *const *drop,
                            const char *const *keys)
{
    cJSON *again = NULL;
    qbk_json_fail f;
    const cJSON *m;
    int ok, i;

    if (qbk_json_parse_text(text, strlen(text), NULL, &again, &f) != QB_OK)
        return f.rc == QB_E_NOMEM ? -1 : 0;
    ok = cJSON_IsObject(again);
    cJSON_ArrayForEach(m, orig)
    {
        size_t len = strlen(m->string);
        if (!ok)
            break;
        if (qbk_je_key_in(m->string, len, drop) >= 0)
            ok = !cJSON_GetObjectItemCaseSensitive(again, m->string);
        else if (qbk_je_key_in(m->string, len, keys) < 0)
            ok = cJSON_Compare(m, cJSON_GetObjectItemCaseSensitive(again, m->string), 1);
    }
    for (i = 0; ok && keys && keys[i]; i++)
        ok = cJSON_GetObjectItemCaseSensitive(again, keys[i]) != NULL;
    cJSON_Delete(again);
    return ok;
}

qb_status qbk_json_edit(const qb_host *h, const char *what, const char *text,
                        const char *const *drop, const char *const *keys,
                        const char *const *values, char **out)
{
    cJSON *check = NULL;
    qbk_text b = {0};
    const char *p;
    unsigned char done[16] = {0};
    int i, first = 1;
    qb_status st = QB_OK;

    *out = NULL;
    st = qbk_json_parse_object(h, what, text, strlen(text), &check);
    if (st != QB_OK)
        goto out;
    for (i = 0; keys && keys[i]; i++)
        if (i >= (int)sizeof(done)) {
            st = h->set_error(h, QB_E_INTERNAL, "%s: too many keys to set", what);
            goto out;
        }
    qbk_text_str(&b, "{");
    p = qbk_je_ws(text) + 1; /* past '{' (checked above) */
    for (;;) {
        const char *k, *v, *ve;
        int d, s;
        p = qbk_je_ws(p);
        if (*p != '"')
            break; /* '}' */
        k = p + 1;
        p = qbk_je_skip_string(p);
        d = qbk_je_key_in(k, (size_t)(p - 1 - k), drop);
        s = qbk_je_key_in(k, (size_t)(p - 1 - k), keys);
        p = qbk_je_ws(p);
        p = qbk_je_ws(p + 1); /* past ':' */
        v = p;
        ve = qbk_je_skip_value(p);
        p = qbk_je_ws(ve);
        if (*p == ',')
            p++;
        if (d >= 0)
            continue;
        qbk_text_str(&b, first ? "\n  " : ",\n  ");
        first = 0;
        qbk_text_put(&b, k - 1, (size_t)(v - (k - 1)));
        if (s >= 0) {
            qbk_text_str(&b, values[s]);
            done[s] = 1;
        } else {
            qbk_text_put(&b, v, (size_t)(ve - v));
        }
    }
    for (i = 0; keys && keys[i]; i++) {
        if (done[i])
            continue;
        qbk_text_str(&b, first ? "\n  " : ",\n  ");
        first = 0;
        qbk_text_json_str(&b, keys[i]);
        qbk_text_str(&b, ": ");
        qbk_text_str(&b, values[i]);
    }
    qbk_text_str(&b, "\n}");
    if (b.oom) {
        st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", what);
        goto out;
    }
    /* The result must parse to what was intended; a scanner bug must not
     * write a broken or different config. */
    switch (qbk_je_edit_ok(check, b.p, drop, keys)) {
    case 1: break;
    case -1: st = h->set_error(h, QB_E_NOMEM, "%s: out of memory", what); goto out;
    default:
        st = h->set_error(h, QB_E_INTERNAL, "%s: the rewritten JSON does not match its source", what);
        goto out;
    }
    *out = b.p;
    b.p = NULL;
out:
    qbk_text_free(&b);
    cJSON_Delete(check);
    return st;
}
