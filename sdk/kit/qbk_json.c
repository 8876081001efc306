/*
 * quantbridge internal kit — the one strict JSON parser (qbk_json.h): every
 * JSON file the project reads (config.json, quantization configs,
 * tokenizer files, manifests, indexes) goes through it, in the host (its
 * qb_json service is a wrapper over this), in every plugin and in
 * libquantbridge-w4a16. cJSON only holds the tree and builds output.
 *
 * Its own recursive descent building cJSON nodes, not cJSON_Parse*: cJSON
 * accepts what RFC 8259 refuses or the contract of qb_json.h forbids
 * (leading zeros "01", "1.", raw control characters and invalid UTF-8 in
 * strings, duplicate keys, "\u0000" silently ending a string, 1e400 as
 * infinity), cannot tell running out of memory from bad text, and reports
 * errors through one process-wide pointer. Here every refusal has a reason
 * and a byte offset, and every number remembers whether its text is an
 * integer held exactly (QBK_JSON_INT_OK).
 */
#include <assert.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qbk_alloc.h"
#include "qbk_json.h"
#include "qbk_path.h"

/* A key of an open object and where it starts, for the duplicate check. */
typedef struct jkey {
    const char *key;
    size_t off;
} jkey;

typedef struct jparser {
    const unsigned char *s;
    size_t len, pos;
    unsigned depth;
    int (*admit)(void); /* asked before every allocation; NULL: always yes */
    jkey *keys; /* members of every open object, innermost last */
    size_t n_keys, cap_keys;
    const char *member; /* key of the object member being parsed; NULL in an array or at the top */
    /* the first failure */
    qb_status rc;
    size_t err_pos;
    char err[192];
    char dup_key[64], dup_in[64]; /* a duplicate key and the member holding its object */
} jparser;

static qb_status perr(jparser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static qb_status perr(jparser *p, size_t pos, const char *fmt, ...)
{
    va_list ap;
    if (p->rc)
        return p->rc;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof p->err, fmt, ap);
    va_end(ap);
    p->rc = QB_E_FORMAT;
    p->err_pos = pos;
    return p->rc;
}

static qb_status pnomem(jparser *p)
{
    if (!p->rc) {
        p->rc = QB_E_NOMEM;
        p->err_pos = p->pos;
    }
    return p->rc;
}

/* ---- allocation: every point asks p->admit first (the host's fault
 * injection reaches the parser through it) ---------------------------- */

static int admitted(const jparser *p)
{
    return !p->admit || p->admit();
}

cJSON *qbk_json_node_new(int type, int (*admit)(void))
{
    cJSON *n;
    if (admit && !admit())
        return NULL;
    n = cJSON_CreateNull();
    if (n) {
        n->type = type;
        n->valuedouble = 0.0;
    }
    return n;
}

char *qbk_json_buf_new(size_t n, int (*admit)(void))
{
    if (admit && !admit())
        return NULL;
    return cJSON_malloc(n);
}

static cJSON *jnode_new(const jparser *p, int type)
{
    return qbk_json_node_new(type, p->admit);
}

static char *jbuf_new(const jparser *p, size_t n)
{
    return qbk_json_buf_new(n, p->admit);
}

static void *palloc(const jparser *p, size_t n)
{
    if (!admitted(p))
        return NULL;
    return qbk_malloc(n);
}

/* The "C" locale for strtod_l: JSON's decimal point is '.', whatever the
 * process locale says. glibc hands out one static object for "C", so two
 * threads racing here get the same value. */
static locale_t c_locale(void)
{
    static locale_t loc;
    locale_t l = __atomic_load_n(&loc, __ATOMIC_ACQUIRE);
    if (!l) {
        l = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
        if (l)
            __atomic_store_n(&loc, l, __ATOMIC_RELEASE);
    }
    return l;
}

static void skip_ws(jparser *p)
{
    while (p->pos < p->len) {
        unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

/* What the byte at pos is, for messages. */
static void describe(const jparser *p, size_t pos, char *out, size_t n)
{
    unsigned char c;
    if (pos >= p->len) {
        snprintf(out, n, "the end of the text");
        return;
    }
    c = p->s[pos];
    if (c >= 0x20 && c < 0x7f)
        snprintf(out, n, "'%c'", c);
    else
        snprintf(out, n, "byte 0x%02x", c);
}

static qb_status unexpected(jparser *p, const char *wanted)
{
    char what[32];
    unsigned char c = p->pos < p->len ? p->s[p->pos] : 0;
    if (p->pos < p->len && c == '/')
        return perr(p, p->pos, "comments are not JSON");
    describe(p, p->pos, what, sizeof what);
    return perr(p, p->pos, "expected %s, found %s", wanted, what);
}

/* ---- strings ------------------------------------------------------------- */

static int hex4(const unsigned char *s, unsigned *out)
{
    unsigned v = 0;
    int i;
    for (i = 0; i < 4; i++) {
        unsigned char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return 0;
    }
    *out = v;
    return 1;
}

size_t qbk_json_utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    unsigned char lo = 0x80, hi = 0xbf;
    size_t k, need;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        need = 1;
    else if (c >= 0xe0 && c <= 0xef) {
        need = 2;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (n < need + 1)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (k = 2; k <= need; k++)
        if (s[k] < 0x80 || s[k] > 0xbf)
            return 0;
    return need + 1;
}

static size_t put_utf8(char *d, unsigned cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xc0 | (cp >> 6));
        d[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xe0 | (cp >> 12));
        d[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        d[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    d[0] = (char)(0xf0 | (cp >> 18));
    d[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    d[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* One \uXXXX escape (a surrogate pair takes two) at p->pos (on the 'u');
 * appends its UTF-8 to d. */
static qb_status unicode_escape(jparser *p, size_t esc, char *d, size_t *dn)
{
    unsigned cp, lo;
    if (p->len - p->pos < 5 || !hex4(p->s + p->pos + 1, &cp))
        return perr(p, esc, "\\u must be followed by four hex digits");
    p->pos += 5;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return perr(p, esc, "unpaired low surrogate \\u%04x", cp);
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (p->len - p->pos < 6 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u' ||
            !hex4(p->s + p->pos + 2, &lo) || lo < 0xdc00 || lo > 0xdfff)
            return perr(p, esc, "unpaired high surrogate \\u%04x", cp);
        p->pos += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    if (cp == 0)
        return perr(p, esc, "string holds U+0000 (\\u0000), which a C string cannot carry");
    *dn += put_utf8(d + *dn, cp);
    return QB_OK;
}

/* The string starting at p->pos (on its opening quote), decoded into a new
 * cJSON buffer in *out; p->pos ends after the closing quote. */
static qb_status parse_string(jparser *p, char **out)
{
    size_t start = p->pos, end, dn = 0;
    char *d;
    *out = NULL;
    /* Find the closing quote first: the decoded text is never longer than
     * the raw one, so one buffer of that size holds it. */
    for (end = start + 1; end < p->len && p->s[end] != '"'; end++)
        if (p->s[end] == '\\')
            end++;
    if (end >= p->len)
        return perr(p, start, "unterminated string");
    d = jbuf_new(p, end - start);
    if (!d)
        return pnomem(p);
    p->pos = start + 1;
    while (p->pos < end) {
        unsigned char c = p->s[p->pos];
        if (c == '\\') {
            size_t esc = p->pos;
            unsigned char e = p->s[p->pos + 1];
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *k = e ? strchr(from, e) : NULL;
            if (e == 'u') {
                p->pos++;
                if (unicode_escape(p, esc, d, &dn))
                    goto fail;
                continue;
            }
            if (!k) {
                char what[32];
                describe(p, p->pos + 1, what, sizeof what);
                perr(p, esc, "invalid escape \\ followed by %s", what);
                goto fail;
            }
            d[dn++] = to[k - from];
            p->pos += 2;
        } else if (c < 0x20) {
            perr(p, p->pos, "control character 0x%02x inside a string (must be escaped)", c);
            goto fail;
        } else {
            size_t k = qbk_json_utf8_seq(p->s + p->pos, end - p->pos);
            if (!k) {
                perr(p, p->pos, "invalid UTF-8 in a string");
                goto fail;
            }
            memcpy(d + dn, p->s + p->pos, k);
            dn += k;
            p->pos += k;
        }
    }
    d[dn] = '\0';
    p->pos = end + 1;
    *out = d;
    return QB_OK;
fail:
    cJSON_free(d);
    return p->rc;
}

/* ---- numbers ------------------------------------------------------------- */

/* Whether the number text [s, s+n) (already checked against the grammar)
 * is an integer of magnitude <= 2^53: then the double equals it exactly.
 * Decided on the digits, so "9007199254740993" (which rounds to 2^53) and
 * "4503599627370496.5" (which rounds to an even integer) are not. */
static int text_is_exact_int(const unsigned char *s, size_t n)
{
    const unsigned char *q = s, *e = s + n;
    char dig[24];
    size_t nd = 0, nz = 0, k;
    long exp10 = 0, ex = 0;
    int started = 0, ex_neg = 0, frac = 0;
    uint64_t u = 0;

    if (q < e && *q == '-')
        q++;
    /* The significand's digits without leading zeros; zeros are held back
     * (nz) until a nonzero digit follows, so trailing ones become a power
     * of ten. exp10 counts fraction digits down. */
    for (; q < e && ((*q >= '0' && *q <= '9') || (*q == '.' && !frac)); q++) {
        if (*q == '.') {
            frac = 1;
            continue;
        }
        if (frac)
            exp10--;
        if (!started && *q == '0')
            continue;
        started = 1;
        if (*q == '0') {
            nz++;
            continue;
        }
        if (nd + nz + 1 > 17)
            return 0; /* more than 17 significant digits: beyond 2^53 or inexact */
        for (; nz; nz--)
            dig[nd++] = '0';
        dig[nd++] = (char)*q;
    }
    exp10 += (long)nz;
    if (q < e && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < e && (*q == '+' || *q == '-'))
            ex_neg = *q++ == '-';
        for (; q < e; q++)
            if (ex < 100000)
                ex = ex * 10 + (*q - '0');
    }
    if (nd == 0)
        return 1; /* zero, whatever the exponent */
    exp10 += ex_neg ? -ex : ex;
    if (exp10 < 0 || (long)nd + exp10 > 16)
        return 0; /* not integral, or >= 10^16 > 2^53 */
    for (k = 0; k < nd; k++)
        u = u * 10 + (uint64_t)(dig[k] - '0');
    for (; exp10 > 0; exp10--)
        u *= 10;
    return u <= (uint64_t)1 << 53;
}

static qb_status parse_number(jparser *p, cJSON **out)
{
    size_t start = p->pos;
    const unsigned char *s = p->s;
    char small[64], *buf = small;
    double v = 0.0;
    locale_t loc;
    cJSON *n;

    *out = NULL;
    if (p->pos < p->len && s[p->pos] == '-')
        p->pos++;
    if (p->pos >= p->len || s[p->pos] < '0' || s[p->pos] > '9')
        return unexpected(p, "a digit");
    if (s[p->pos] == '0') {
        p->pos++;
        if (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9')
            return perr(p, start, "number with a leading zero");
    } else {
        while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9')
            p->pos++;
    }
    if (p->pos < p->len && s[p->pos] == '.') {
        p->pos++;
        if (p->pos >= p->len || s[p->pos] < '0' || s[p->pos] > '9')
            return unexpected(p, "a digit after the decimal point");
        while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9')
            p->pos++;
    }
    if (p->pos < p->len && (s[p->pos] == 'e' || s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->len && (s[p->pos] == '+' || s[p->pos] == '-'))
            p->pos++;
        if (p->pos >= p->len || s[p->pos] < '0' || s[p->pos] > '9')
            return unexpected(p, "a digit in the exponent");
        while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9')
            p->pos++;
    }
    /* The text is not NUL-terminated: convert a copy, in the "C" locale
     * (the process locale's decimal point may not be '.'). */
    if (p->pos - start >= sizeof small) {
        buf = palloc(p, p->pos - start + 1);
        if (!buf)
            return pnomem(p);
    }
    memcpy(buf, s + start, p->pos - start);
    buf[p->pos - start] = '\0';
    loc = c_locale();
    if (loc)
        v = strtod_l(buf, NULL, loc);
    if (buf != small)
        qbk_free(buf);
    if (!loc)
        return pnomem(p);
    if (isinf(v))
        return perr(p, start, "number out of the range of a double");
    n = jnode_new(p, cJSON_Number);
    if (!n)
        return pnomem(p);
    n->valuedouble = v;
    /* what cJSON's own parser stores (saturated), for code reading valueint */
    n->valueint = v >= (double)INT32_MAX ? INT32_MAX : v <= (double)INT32_MIN ? INT32_MIN : (int)v;
    if (text_is_exact_int(s + start, p->pos - start))
        n->type |= QBK_JSON_INT_OK;
    *out = n;
    return QB_OK;
}

/* ---- values -------------------------------------------------------------- */

static qb_status parse_value(jparser *p, cJSON **out);

static qb_status literal(jparser *p, const char *word, int type, cJSON **out)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return unexpected(p, "a JSON value");
    *out = jnode_new(p, type);
    if (!*out)
        return pnomem(p);
    p->pos += n;
    return QB_OK;
}

static int key_cmp(const void *a, const void *b)
{
    const jkey *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Refuses a key that occurs twice among keys[base..n_keys): the first
 * repetition in document order is named. */
static qb_status check_duplicates(jparser *p, size_t base, const char *self)
{
    jkey *k = p->keys + base;
    size_t n = p->n_keys - base, i, best = SIZE_MAX, which = 0;
    char shown[64];
    if (n < 2)
        return QB_OK;
    qsort(k, n, sizeof *k, key_cmp);
    for (i = 1; i < n; i++)
        if (strcmp(k[i - 1].key, k[i].key) == 0 && k[i].off < best) {
            best = k[i].off;
            which = i;
        }
    if (best == SIZE_MAX)
        return QB_OK;
    /* show the key printable and short */
    for (i = 0; k[which].key[i] && i + 4 < sizeof shown; i++) {
        unsigned char c = (unsigned char)k[which].key[i];
        shown[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    shown[i] = '\0';
    if (k[which].key[i])
        strcpy(shown + i, "...");
    perr(p, best, "duplicate key \"%s\" (a key may appear once per object)", shown);
    snprintf(p->dup_key, sizeof p->dup_key, "%s", k[which].key);
    snprintf(p->dup_in, sizeof p->dup_in, "%s", self ? self : "");
    return p->rc;
}

static qb_status push_key(jparser *p, const char *key, size_t off)
{
    if (p->n_keys == p->cap_keys) {
        size_t nc = p->cap_keys ? p->cap_keys * 2 : 32;
        jkey *g = palloc(p, nc * sizeof *g);
        if (!g)
            return pnomem(p);
        if (p->n_keys)
            memcpy(g, p->keys, p->n_keys * sizeof *g);
        qbk_free(p->keys);
        p->keys = g;
        p->cap_keys = nc;
    }
    p->keys[p->n_keys].key = key;
    p->keys[p->n_keys].off = off;
    p->n_keys++;
    return QB_OK;
}

static qb_status parse_object(jparser *p, cJSON **out)
{
    size_t base = p->n_keys, n = 0;
    cJSON *obj = jnode_new(p, cJSON_Object), *child = NULL;
    char *key = NULL;
    const char *self = p->member; /* its own key in the parent object, for messages */

    *out = NULL;
    if (!obj)
        return pnomem(p);
    p->pos++; /* '{' */
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == '}') {
        p->pos++;
        *out = obj;
        return QB_OK;
    }
    for (;;) {
        size_t key_off;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == '}' && n > 0) {
            perr(p, p->pos, "trailing comma before '}'");
            goto fail;
        }
        if (p->pos >= p->len || p->s[p->pos] != '"') {
            unexpected(p, "a string key");
            goto fail;
        }
        key_off = p->pos;
        if (parse_string(p, &key))
            goto fail;
        skip_ws(p);
        if (p->pos >= p->len || p->s[p->pos] != ':') {
            unexpected(p, "':' after an object key");
            goto fail;
        }
        p->pos++;
        skip_ws(p);
        p->member = key;
        if (parse_value(p, &child))
            goto fail;
        child->string = key;
        key = NULL;
        cJSON_AddItemToArray(obj, child); /* links only: cannot fail */
        n++;
        if (push_key(p, child->string, key_off))
            goto fail;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == '}') {
            p->pos++;
            break;
        }
        unexpected(p, "',' or '}' after an object member");
        goto fail;
    }
    if (check_duplicates(p, base, self))
        goto fail;
    p->n_keys = base;
    obj->valuedouble = (double)n;
    *out = obj;
    return QB_OK;
fail:
    p->n_keys = base;
    cJSON_free(key);
    cJSON_Delete(obj);
    return p->rc;
}

static qb_status parse_array(jparser *p, cJSON **out)
{
    size_t n = 0;
    cJSON *arr = jnode_new(p, cJSON_Array), *child = NULL;

    *out = NULL;
    if (!arr)
        return pnomem(p);
    p->pos++; /* '[' */
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ']') {
        p->pos++;
        *out = arr;
        return QB_OK;
    }
    for (;;) {
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ']' && n > 0) {
            perr(p, p->pos, "trailing comma before ']'");
            goto fail;
        }
        p->member = NULL;
        if (parse_value(p, &child))
            goto fail;
        cJSON_AddItemToArray(arr, child);
        n++;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == ']') {
            p->pos++;
            break;
        }
        unexpected(p, "',' or ']' after an array element");
        goto fail;
    }
    arr->valuedouble = (double)n;
    *out = arr;
    return QB_OK;
fail:
    cJSON_Delete(arr);
    return p->rc;
}

static qb_status parse_value(jparser *p, cJSON **out)
{
    qb_status rc;
    char *str = NULL;
    *out = NULL;
    if (p->pos >= p->len)
        return unexpected(p, "a JSON value");
    switch (p->s[p->pos]) {
    case '{':
    case '[':
        if (p->depth >= QBK_JSON_MAX_DEPTH)
            return perr(p, p->pos, "nested deeper than %d levels", QBK_JSON_MAX_DEPTH);
        p->depth++;
        rc = p->s[p->pos] == '{' ? parse_object(p, out) : parse_array(p, out);
        p->depth--;
        return rc;
    case '"':
        if (parse_string(p, &str))
            return p->rc;
        *out = jnode_new(p, cJSON_String);
        if (!*out) {
            cJSON_free(str);
            return pnomem(p);
        }
        (*out)->valuestring = str;
        return QB_OK;
    case 't': return literal(p, "true", cJSON_True, out);
    case 'f': return literal(p, "false", cJSON_False, out);
    case 'n': return literal(p, "null", cJSON_NULL, out);
    default:
        if (p->s[p->pos] == '-' || (p->s[p->pos] >= '0' && p->s[p->pos] <= '9'))
            return parse_number(p, out);
        return unexpected(p, "a JSON value");
    }
}

qb_status qbk_json_parse_text(const char *text, size_t len, int (*admit)(void), cJSON **out,
                              qbk_json_fail *fail)
{
    jparser p;
    cJSON *root = NULL;

    assert(text && out && fail);
    *out = NULL;
    memset(fail, 0, sizeof *fail);
    memset(&p, 0, sizeof p);
    p.s = (const unsigned char *)text;
    p.len = len;
    p.admit = admit;
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        perr(&p, 0, "starts with a UTF-8 byte order mark (RFC 8259 forbids one)");
    else {
        skip_ws(&p);
        if (p.pos >= p.len)
            perr(&p, p.pos, "no JSON value (the text is empty or only whitespace)");
        else if (parse_value(&p, &root) == QB_OK) {
            skip_ws(&p);
            if (p.pos < p.len)
                perr(&p, p.pos, "more data after the JSON value");
        }
    }
    qbk_free(p.keys);
    if (p.rc) {
        fail->rc = p.rc;
        fail->offset = p.err_pos;
        if (p.rc == QB_E_FORMAT)
            memcpy(fail->reason, p.err, sizeof fail->reason);
        else
            snprintf(fail->reason, sizeof fail->reason, "out of memory");
        memcpy(fail->dup_key, p.dup_key, sizeof fail->dup_key);
        memcpy(fail->dup_in, p.dup_in, sizeof fail->dup_in);
        cJSON_Delete(root);
        return p.rc;
    }
    *out = root;
    return QB_OK;
}

void qbk_json_fail_text(const qbk_json_fail *f, const char *what, char *buf, size_t n)
{
    if (!what)
        what = "JSON text";
    if (f->rc == QB_E_NOMEM)
        snprintf(buf, n, "%s: out of memory parsing JSON (at byte %zu)", what, f->offset);
    else
        snprintf(buf, n, "%s: invalid JSON at byte %zu: %s", what, f->offset, f->reason);
}

qb_status qbk_json_parse(const qb_host *h, const char *what, const char *text, size_t len,
                         cJSON **out)
{
    qbk_json_fail f;
    char msg[1024 + sizeof f.reason];
    qb_status rc;

    assert(h && out);
    *out = NULL;
    if (!text)
        return h->set_error(h, QB_E_INVALID, "%s: no text to parse (NULL)", what ? what : "JSON text");
    rc = qbk_json_parse_text(text, len, NULL, out, &f);
    if (rc == QB_OK)
        return QB_OK;
    qbk_json_fail_text(&f, what, msg, sizeof msg);
    return h->set_error(h, rc, "%s", msg);
}

qb_status qbk_json_parse_file(const qb_host *h, const char *dir, const char *name,
                              const char *text, size_t len, cJSON **out)
{
    char *what = qbk_path_join(dir, name);
    qb_status rc;
    *out = NULL;
    if (!what)
        return h->set_error(h, QB_E_NOMEM, "%s/%s: out of memory", dir, name);
    rc = qbk_json_parse(h, what, text, len, out);
    qbk_free(what);
    return rc;
}

qb_status qbk_json_parse_object(const qb_host *h, const char *what, const char *text, size_t len,
                                cJSON **out)
{
    qb_status rc = qbk_json_parse(h, what, text, len, out);
    if (rc == QB_OK && !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        rc = h->set_error(h, QB_E_FORMAT, "%s: not a JSON object", what ? what : "JSON text");
    }
    return rc;
}

qb_status qbk_json_parse_config(const qb_host *h, const char *source, const char *config_json,
                                cJSON **out)
{
    char what[1100];
    snprintf(what, sizeof what, "%s: config.json", source ? source : "the source model");
    *out = NULL;
    if (!config_json)
        return h->set_error(h, QB_E_FORMAT, "%s: missing (the source reader gives no model config)",
                            what);
    return qbk_json_parse_object(h, what, config_json, strlen(config_json), out);
}

cJSON *qbk_json_parse_quiet(const char *text, size_t len)
{
    qbk_json_fail f;
    cJSON *out = NULL;
    if (!text || qbk_json_parse_text(text, len, NULL, &out, &f) != QB_OK)
        return NULL;
    return out;
}

int qbk_json_int(const cJSON *n, int64_t *out)
{
    if (!cJSON_IsNumber(n) || !(n->type & QBK_JSON_INT_OK))
        return 0;
    if (out)
        *out = (int64_t)n->valuedouble;
    return 1;
}
