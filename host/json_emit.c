/*
 * quantbridge host — the emitter behind qb_json_api.emit.
 *
 * Its own writer, not cJSON_Print: cJSON indents with tabs, allocates with
 * its global hooks (the result must be host->alloc memory, json_node.h),
 * and prints numbers with "%1.15g" first. Two passes over the tree: the
 * first measures, the second writes into one buffer of exactly that size.
 * Numbers: an integral value within +-2^53 prints as an integer; any other
 * as the shortest of %.15g/%.16g/%.17g that reads back as the same double
 * (%.17g always does), so parse(emit(x)) == x bit for bit.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <glib.h>

#include "json_node.h"

typedef struct jwriter {
    char *buf; /* NULL: measuring */
    size_t len;
    int indent;
} jwriter;

static void put(jwriter *w, const char *s, size_t n)
{
    if (w->buf)
        memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void put_c(jwriter *w, char c)
{
    put(w, &c, 1);
}

static void newline(jwriter *w, unsigned depth)
{
    size_t i, n;
    if (!w->indent)
        return;
    put_c(w, '\n');
    n = (size_t)w->indent * depth;
    for (i = 0; i < n; i++)
        put_c(w, ' ');
}

static qb_status put_string(jwriter *w, const char *str, const char *role)
{
    const unsigned char *s = (const unsigned char *)str;
    put_c(w, '"');
    while (*s) {
        unsigned char c = *s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(w, esc, 2);
            s++;
        } else if (c < 0x20) {
            static const char short_esc[] = "\b\f\n\r\t", letter[] = "bfnrt";
            const char *k = strchr(short_esc, c);
            if (k) {
                esc[0] = '\\';
                esc[1] = letter[k - short_esc];
                put(w, esc, 2);
            } else {
                snprintf(esc, sizeof esc, "\\u%04x", c);
                put(w, esc, 6);
            }
            s++;
        } else {
            size_t k = qbh_json_utf8_seq(s, strnlen((const char *)s, 4));
            if (!k)
                return qbh_error_set(QB_E_INVALID,
                                     "JSON emit: a %s is not valid UTF-8 (byte 0x%02x at offset %zu)",
                                     role, c, (size_t)(s - (const unsigned char *)str));
            put(w, (const char *)s, k);
            s += k;
        }
    }
    put_c(w, '"');
    return QB_OK;
}

static qb_status put_number(jwriter *w, double v)
{
    char b[G_ASCII_DTOSTR_BUF_SIZE];
    static const char *const fmt[] = {"%.15g", "%.16g", "%.17g"};
    size_t i;
    if (!isfinite(v))
        return qbh_error_set(QB_E_INVALID, "JSON emit: a number is not finite");
    if (v >= -QBH_JSON_INT_MAX && v <= QBH_JSON_INT_MAX && v == (double)(int64_t)v) {
        if (v == 0.0 && signbit(v))
            snprintf(b, sizeof b, "-0");
        else
            snprintf(b, sizeof b, "%" PRId64, (int64_t)v);
    } else {
        for (i = 0; i < sizeof fmt / sizeof fmt[0]; i++) {
            g_ascii_formatd(b, sizeof b, fmt[i], v);
            if (g_ascii_strtod(b, NULL) == v)
                break;
        }
    }
    put(w, b, strlen(b));
    return QB_OK;
}

static qb_status put_value(jwriter *w, const cJSON *n, unsigned depth)
{
    const cJSON *c;
    int obj;
    qb_status rc;

    switch (n->type & 0xff) {
    case cJSON_NULL: put(w, "null", 4); return QB_OK;
    case cJSON_True: put(w, "true", 4); return QB_OK;
    case cJSON_False: put(w, "false", 5); return QB_OK;
    case cJSON_Number: return put_number(w, n->valuedouble);
    case cJSON_String: return put_string(w, n->valuestring, "string");
    case cJSON_Array:
    case cJSON_Object: break;
    default: return qbh_error_set(QB_E_INVALID, "JSON emit: node of unknown type %d", n->type);
    }
    if (depth >= QBH_JSON_MAX_DEPTH)
        return qbh_error_set(QB_E_INVALID, "JSON emit: nested deeper than %d levels",
                             QBH_JSON_MAX_DEPTH);
    obj = (n->type & 0xff) == cJSON_Object;
    put_c(w, obj ? '{' : '[');
    for (c = n->child; c; c = c->next) {
        newline(w, depth + 1);
        if (obj) {
            if (!c->string)
                return qbh_error_set(QB_E_INVALID, "JSON emit: an object member has no key");
            rc = put_string(w, c->string, "key");
            if (rc)
                return rc;
            put(w, w->indent ? ": " : ":", w->indent ? 2 : 1);
        }
        rc = put_value(w, c, depth + 1);
        if (rc)
            return rc;
        if (c->next)
            put_c(w, ',');
    }
    if (n->child)
        newline(w, depth);
    put_c(w, obj ? '}' : ']');
    return QB_OK;
}

qb_status qbh_json_emit(const qb_host *h, const qb_json *node, int indent, char **out,
                        size_t *len)
{
    jwriter w;
    qb_status rc;
    char *buf;

    if (len)
        *len = 0;
    if (!out)
        return qbh_error_set(QB_E_INVALID, "JSON emit: no place for the result (out is NULL)");
    *out = NULL;
    if (!h || !node)
        return qbh_error_set(QB_E_INVALID, "JSON emit: %s is NULL", !h ? "the host" : "the node");
    if (indent < 0 || indent > 8)
        return qbh_error_set(QB_E_INVALID, "JSON emit: indent %d outside 0..8", indent);
    memset(&w, 0, sizeof w);
    w.indent = indent;
    rc = put_value(&w, qbh_jcnode(node), 0);
    if (rc)
        return rc;
    if (indent)
        put_c(&w, '\n');
    buf = h->alloc(h, w.len + 1);
    if (!buf)
        return qbh_error_set(QB_E_NOMEM, "JSON emit: out of memory (%zu bytes)", w.len + 1);
    w.buf = buf;
    {
        size_t measured = w.len;
        w.len = 0;
        rc = put_value(&w, qbh_jcnode(node), 0);
        assert(rc == QB_OK); /* the first pass checked every node */
        if (indent)
            put_c(&w, '\n');
        assert(w.len == measured);
        (void)measured;
    }
    buf[w.len] = '\0';
    *out = buf;
    if (len)
        *len = w.len;
    return QB_OK;
}
